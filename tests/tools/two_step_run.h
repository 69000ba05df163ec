// The smallest run config the command-line tests pretrain: one layer 16
// wide, 300 synthetic sentences, two steps on the CPU (a second or so).
#pragma once

namespace ordo::test {

inline const char* const kTwoStepRunConfig =
    R"({"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,)"
    R"( "max_position_embeddings": 64},)"
    R"( "data": {"synthetic_sentences": 300, "vocab_size": 200, "held_out_fraction": 0.1},)"
    R"( "train": {"steps": 2, "batch_size": 4, "max_seq_length": 32, "eval_every": 0, "device": "cpu"}})";

}  // namespace ordo::test
