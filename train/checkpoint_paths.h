// Where a command finds what a path names: the checkpoint of a run, and the
// vocabulary beside a checkpoint and how it tokenizes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "text/tokenizer.h"

namespace ordo::train {

// The checkpoint a path names: a checkpoint directory itself (it holds
// config.json and model.safetensors), or a run directory (`ordo pretrain
// --out RUN`), meaning its latest checkpoint: the RUN/checkpoints/step_N
// with the highest N. Errors name the path (as `flag` gave it) and what was
// looked for.
std::string resolve_checkpoint(const std::string& path, const std::string& flag = "--checkpoint");
// The ordo run a checkpoint belongs to: RUN when the checkpoint is
// RUN/checkpoints/step_N (ordo pretrain's layout); "" for any other folder
// (an HF checkpoint, a step_N copied elsewhere), whose surroundings say
// nothing about it.
std::string run_of_checkpoint(const std::string& checkpoint_dir);
// The tokenizer of a checkpoint and where it was read from. Its files:
// `given` (a command's --vocab: a vocab.txt, a vocab.json with merges.txt
// beside it, a tokenizer.json, or a folder holding one of them), else the
// checkpoint's own, else its run's (run_of_checkpoint). vocab.txt is BERT's
// WordPiece (with `wordpiece`'s options), the others byte-level BPE (GPT-2,
// RoBERTa). Errors: no tokenizer anywhere (naming the places and the flag),
// and a tokenizer whose ids do not fit the model's word embeddings
// (`model_vocab_size`, from `config_path`), naming both numbers and files —
// caught at load, not as an out-of-range index in the middle of training.
struct CheckpointTokenizer {
  std::unique_ptr<text::SubwordTokenizer> tokenizer;
  std::string path;  // the file read (vocab.txt, vocab.json, tokenizer.json)
};
CheckpointTokenizer load_tokenizer(const std::string& checkpoint_dir, const std::string& given,
                                   const text::TokenizerOptions& wordpiece, int64_t model_vocab_size,
                                   const std::string& config_path);
// A pair of texts (GLUE's pair tasks, SQuAD) puts its second text in the
// segment the tokenizer's layout says (WordPiece: 1; RoBERTa's BPE: 0). An
// error naming the tokenizer file and config_path's type_vocab_size when the
// model's segment embedding has no row for it (a RoBERTa given BERT's
// vocab.txt) — before any training, not as an index out of range in it.
void check_pair_segments(const CheckpointTokenizer& tokenizer, int64_t type_vocab_size, const std::string& config_path);
// Whether the checkpoint's vocabulary was made for lower-cased text: an HF
// tokenizer_config.json's do_lower_case inside it, else the data.lower_case of
// the ordo run it belongs to (run_of_checkpoint: RUN/config.json); nullopt
// when neither says.
std::optional<bool> checkpoint_lower_case(const std::string& checkpoint_dir);
// The longest sequence the checkpoint's model was pretrained on, when it is
// a checkpoint of an ordo run (run_of_checkpoint, with the run's
// metrics.jsonl beside checkpoints/); nullopt otherwise.
std::optional<int64_t> checkpoint_trained_length(const std::string& checkpoint_dir);

}  // namespace ordo::train
