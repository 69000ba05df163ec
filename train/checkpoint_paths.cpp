#include "train/checkpoint_paths.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/bpe.h"
#include "train/pretrain.h"

namespace ordo::train {

std::string resolve_checkpoint(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  ORDO_CHECK(directory_exists(path), flag, " ", path, ": not a directory");
  if (file_exists(path + "/config.json") && file_exists(path + "/model.safetensors")) return path;
  // A run directory: the step_N with the highest N (the names are zero-padded,
  // but the number is compared, not the text, so unpadded names work too).
  const std::string dir = path + "/checkpoints";
  ORDO_CHECK(directory_exists(dir), flag, " ", path,
             ": neither a checkpoint (config.json + model.safetensors) nor a run directory (no checkpoints/)");
  std::string best;
  long long best_step = -1;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.size() == 5 || name.size() > 5 + 18) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    const long long step = std::stoll(name.substr(5));
    const std::string candidate = dir + "/" + name;
    if (step > best_step && file_exists(candidate + "/config.json") && file_exists(candidate + "/model.safetensors"))
      best_step = step, best = candidate;
  }
  ORDO_CHECK(!best.empty(), flag, " ", path, ": the run has no complete checkpoint (no ", dir,
             "/step_N holding config.json and model.safetensors)");
  return best;
}

namespace {

// The tokenizer file in a folder: vocab.txt, vocab.json (with merges.txt) or
// tokenizer.json, in that order; "" when none.
std::string tokenizer_file_in(const std::string& dir) {
  for (const char* name : {"/vocab.txt", "/vocab.json", "/tokenizer.json"})
    if (file_exists(dir + name)) return dir + name;
  return "";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string run_of_checkpoint(const std::string& checkpoint_dir) {
  std::filesystem::path step = std::filesystem::path(checkpoint_dir).lexically_normal();
  if (!step.has_filename()) step = step.parent_path();  // "step_N/"
  const std::filesystem::path checkpoints = step.parent_path();
  if (step.filename().string().rfind("step_", 0) != 0 || checkpoints.filename() != "checkpoints") return "";
  return checkpoints.has_parent_path() ? checkpoints.parent_path().string() : ".";
}

CheckpointTokenizer load_tokenizer(const std::string& checkpoint_dir, const std::string& given,
                                   const text::TokenizerOptions& wordpiece, int64_t model_vocab_size,
                                   const std::string& config_path) {
  std::string path;
  if (!given.empty()) {
    path = directory_exists(given) ? tokenizer_file_in(given) : given;
    ORDO_CHECK(!path.empty(), "--vocab ", given, ": the folder holds no vocab.txt, vocab.json or tokenizer.json");
    ORDO_CHECK(file_exists(path), "--vocab ", given, ": no such file");
  } else {
    path = tokenizer_file_in(checkpoint_dir);
    const std::string run = run_of_checkpoint(checkpoint_dir);
    if (path.empty() && !run.empty()) path = tokenizer_file_in(run);
    ORDO_CHECK(!path.empty(), "no tokenizer in ", checkpoint_dir, run.empty() ? "" : " nor in its run " + run,
               ": looked for vocab.txt (BERT's WordPiece), vocab.json + merges.txt and tokenizer.json (byte-level "
               "BPE); give one with --vocab FILE (one of those files, or a folder holding one)");
  }
  CheckpointTokenizer out;
  out.path = path;
  if (ends_with(path, "tokenizer.json")) {
    out.tokenizer = std::make_unique<text::BpeTokenizer>(text::BpeTokenizer::load_tokenizer_json(path));
  } else if (ends_with(path, ".json")) {
    const std::string merges = path.substr(0, path.find_last_of('/') + 1) + "merges.txt";
    ORDO_CHECK(file_exists(merges), path, ": a byte-level BPE vocabulary needs its merges.txt beside it (", merges,
               " is missing)");
    out.tokenizer = std::make_unique<text::BpeTokenizer>(text::BpeTokenizer::load(path, merges));
  } else {
    out.tokenizer = std::make_unique<text::Tokenizer>(text::Vocab::load(path), wordpiece);
  }
  const int64_t ids = out.tokenizer->id_bound();
  ORDO_CHECK(ids <= model_vocab_size, "the tokenizer ", path, " has ", ids, " tokens (ids 0..", ids - 1,
             ") but the model's word embeddings have ", model_vocab_size, " rows (vocab_size in ", config_path,
             "): ids from ", model_vocab_size, " on would index past them. Is it the vocabulary of another "
             "model? Give the checkpoint's own with --vocab FILE");
  return out;
}

void check_pair_segments(const CheckpointTokenizer& tokenizer, int64_t type_vocab_size, const std::string& config_path) {
  const int32_t segment = tokenizer.tokenizer->layout().second_segment;
  // type_vocab_size 0 (GPT-2): no segment embedding, nothing indexed.
  ORDO_CHECK(type_vocab_size == 0 || segment < type_vocab_size, "the tokenizer ", tokenizer.path, " (",
             tokenizer.tokenizer->kind(), ") puts the second text of a pair in segment (token type) ", segment,
             ", but the model's type_vocab_size is ", type_vocab_size, " (segment ids 0..", type_vocab_size - 1, ", ",
             config_path, "). Is it the tokenizer of another model? A RoBERTa takes its own byte-level BPE "
             "(vocab.json + merges.txt, or tokenizer.json): give it with --vocab FILE");
}

namespace {

// The boolean at object.key1.key2... of a JSON file; nullopt when the file or
// any key is absent (an unreadable file is an error: it is there but broken).
std::optional<bool> flag_in(const std::string& path, const std::vector<std::string>& keys) {
  if (!file_exists(path)) return std::nullopt;
  json::Value v;
  v = json::parse_file(path);
  const json::Value* at = &v;
  for (const std::string& key : keys) {
    at = at->is_object() ? at->find(key) : nullptr;
    if (!at) return std::nullopt;
  }
  ORDO_CHECK(at->is_bool(), path, ": '", keys.back(), "' must be true or false");
  return at->as_bool();
}

}  // namespace

std::optional<bool> checkpoint_lower_case(const std::string& checkpoint_dir) {
  if (auto hf = flag_in(checkpoint_dir + "/tokenizer_config.json", {"do_lower_case"})) return hf;
  const std::string run = run_of_checkpoint(checkpoint_dir);
  return run.empty() ? std::nullopt : flag_in(run + "/config.json", {"data", "lower_case"});
}

std::optional<int64_t> checkpoint_trained_length(const std::string& checkpoint_dir) {
  const std::string run = run_of_checkpoint(checkpoint_dir);
  const std::string run_config = run + "/config.json";
  if (run.empty() || !file_exists(run_config) || !file_exists(run + "/metrics.jsonl")) return std::nullopt;
  int64_t longest = 0;
  for (const Phase& p : read_run_config(run_config, {}).train.phases) longest = std::max(longest, p.max_seq_length);
  return longest;
}

}  // namespace ordo::train
