// Where a command finds what a path names: the checkpoint of a run, and the
// vocabulary beside a checkpoint and how it tokenizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ordo::train {

// The checkpoint a path names: a checkpoint directory itself (it holds
// config.json and model.safetensors), or a run directory (`ordo pretrain
// --out RUN`), meaning its latest checkpoint: the RUN/checkpoints/step_N
// with the highest N. Errors name the path and what was looked for.
std::string resolve_checkpoint(const std::string& path);
// The vocab.txt of a checkpoint: the one inside it, else its run's
// (CHECKPOINT/../../vocab.txt for RUN/checkpoints/step_N); an error naming
// both places when neither exists.
std::string find_vocab(const std::string& checkpoint_dir);
// Whether the checkpoint's vocabulary was made for lower-cased text: an HF
// tokenizer_config.json's do_lower_case inside it, else the data.lower_case of
// the ordo run it belongs to (CHECKPOINT/../../config.json); nullopt when
// neither says.
std::optional<bool> checkpoint_lower_case(const std::string& checkpoint_dir);
// The longest sequence the checkpoint's model was pretrained on, when it is
// a checkpoint of an ordo run (RUN/checkpoints/step_N: the run's config.json
// and metrics.jsonl beside checkpoints/); nullopt otherwise.
std::optional<int64_t> checkpoint_trained_length(const std::string& checkpoint_dir);

}  // namespace ordo::train
