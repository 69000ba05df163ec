// `ordo forward`: one batch through a checkpoint in evaluation mode, every
// intermediate written out — what a person auditing numerics compares against
// another implementation (scripts/hf_check.py does so against transformers).
//
//   ordo forward --checkpoint DIR --input FILE.json --out FILE.safetensors [--device cpu|cuda[:N]]
//                [--ablate contextual|positional]
//
// DIR: a checkpoint (MLM, MLM+NSP or causal: the heads it holds are run), or
// a run directory, meaning its latest checkpoint.
//
// --ablate drops a term of the attention scores (the locality/symmetry
// paper, section 4.1): contextual keeps the positional term alone (BERT-p,
// TUPE-p), positional keeps the contextual term alone (BERT-c, TUPE-c). What
// the terms are for each kind of encoding: nn/bert.cpp and EQUATIONS.md.
//
// Input: {"input_ids": [[...], ...], "segment_ids": ..., "positions": ...,
// "attention_mask": ...}; every key but input_ids is optional, each a
// [batch][length] array of integers (segment ids default to 0, positions to
// 0..length-1, the mask to all 1).
//
// Output (safetensors, f32 for the values, i64 for the inputs):
//   hidden_states.0         the embeddings after their LayerNorm   [batch, L, hidden]
//   hidden_states.l         the output of layer l (1..layers)      [batch, L, hidden]
//   attentions.l            layer l's softmax probabilities        [batch, heads, L, L]
//   logits                  the MLM (or causal LM) head's logits   [batch, L, vocab]
//   nsp_logits              the NSP head's logits, when the checkpoint has one [batch, 2]
//   input_ids, segment_ids, positions, attention_mask   the inputs as used (defaults filled in)
// The names are HF's output_hidden_states / output_attentions order, so
// hidden_states.l is transformers' hidden_states[l]. (In a pre-LN model the
// last hidden state is taken before the final LayerNorm, which the logits
// include; HF BERT has no pre-LN form.) The file is written
// atomically: on any error nothing is written and an existing file stays. An
// existing file is refused unless --overwrite (base/output.h).
#include <cstdio>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "base/output.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"
#include "probe/probe.h"
#include "tensor/safetensors.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

// A [batch][length] integer array read from one key of the input, each
// value checked against [low, high). Errors name the key, the row and the column.
struct IdMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> values;
};

// "a string", "an array", ... for messages.
std::string a_type(const json::Value& v) {
  std::string t = json::type_name(v.type());
  return (t == "array" || t == "object" ? "an " : "a ") + t;
}

IdMatrix read_matrix(const json::Value& v, const std::string& key, const std::string& file, int64_t low,
                     int64_t high, const std::string& range_note) {
  const std::string where = file + ": \"" + key + "\"";
  ORDO_CHECK(v.is_array(), where, " must be an array of rows (arrays of integers), got ", a_type(v));
  ORDO_CHECK(v.size() > 0, where, " is empty: give at least one row");
  IdMatrix m;
  m.rows = static_cast<int64_t>(v.size());
  for (int64_t r = 0; r < m.rows; ++r) {
    const json::Value& row = v[static_cast<size_t>(r)];
    ORDO_CHECK(row.is_array(), where, " row ", r, " must be an array of integers, got ", a_type(row));
    const int64_t n = static_cast<int64_t>(row.size());
    if (r == 0) {
      ORDO_CHECK(n > 0, where, " row 0 is empty");
      m.cols = n;
    }
    ORDO_CHECK(n == m.cols, where, " row ", r, " has ", n, " entries, row 0 has ", m.cols,
               " (rows must all have one length; pad them and say so in attention_mask)");
    for (int64_t c = 0; c < n; ++c) {
      const json::Value& x = row[static_cast<size_t>(c)];
      int64_t id = 0;
      try {
        id = x.as_int();
      } catch (const Error&) {
        throw Error(detail::cat(where, " row ", r, " column ", c, ": expected an integer, got ",
                                x.is_number() ? json::dump(x) : a_type(x)));
      }
      ORDO_CHECK(id >= low && id < high, where, " row ", r, " column ", c, ": ", id, " is outside [", low, ", ",
                 high, ")", range_note);
      m.values.push_back(id);
    }
  }
  return m;
}

struct Batch {
  int64_t rows = 0, cols = 0;
  Tensor input_ids, segment_ids, positions, attention_mask;  // [rows, cols] i64 on the CPU
};

Batch read_batch(const std::string& file, const nn::BertConfig& config, int64_t max_position) {
  json::Value input;
  try {
    input = json::parse(read_file(file));
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
  ORDO_CHECK(input.is_object(), file, ": expected a JSON object with \"input_ids\", got ", a_type(input));
  for (const auto& [key, value] : input.items()) {
    (void)value;
    ORDO_CHECK(key == "input_ids" || key == "segment_ids" || key == "positions" || key == "attention_mask", file,
               ": unknown key \"", key, "\" (expected input_ids, segment_ids, positions, attention_mask)");
  }
  const json::Value* ids = input.find("input_ids");
  ORDO_CHECK(ids != nullptr, file, ": no \"input_ids\"");

  Batch b;
  IdMatrix m = read_matrix(*ids, "input_ids", file, 0, config.vocab_size,
                           " (the vocabulary has " + std::to_string(config.vocab_size) + " ids)");
  b.rows = m.rows;
  b.cols = m.cols;
  const Shape shape{b.rows, b.cols};
  b.input_ids = Tensor::from_vector(m.values, shape);

  // Each optional key: the same shape as input_ids, its own range.
  auto optional = [&](const std::string& key, int64_t low, int64_t high, const std::string& note) -> Tensor {
    const json::Value* v = input.find(key);
    if (!v) return Tensor();
    IdMatrix x = read_matrix(*v, key, file, low, high, note);
    ORDO_CHECK(x.rows == b.rows, file, ": \"", key, "\" has ", x.rows, " rows, input_ids has ", b.rows);
    ORDO_CHECK(x.cols == b.cols, file, ": \"", key, "\" rows have ", x.cols, " entries, input_ids rows have ", b.cols);
    return Tensor::from_vector(x.values, shape);
  };
  b.segment_ids = optional("segment_ids", 0, config.type_vocab_size,
                           " (type_vocab_size is " + std::to_string(config.type_vocab_size) + ")");
  // An absolute table has max_position + 1 rows; other encodings take any
  // non-negative position.
  const int64_t position_limit = max_position >= 0 ? max_position + 1 : INT64_MAX;
  b.positions = optional("positions", 0, position_limit,
                         max_position >= 0 ? " (the learned position table of " + config.pe + " has " +
                                                 std::to_string(position_limit) + " rows: max_position_embeddings)"
                                           : "");
  b.attention_mask = optional("attention_mask", 0, 2, " (1: a real token, 0: padding)");

  if (!b.positions.defined()) {
    ORDO_CHECK(b.cols <= position_limit, file, ": rows of ", b.cols, " tokens need positions 0..", b.cols - 1,
               ", beyond the learned position table of ", position_limit,
               " rows (max_position_embeddings); shorten the rows or give \"positions\"");
    b.positions = nn::default_positions(b.rows, b.cols, Device::cpu());
  }
  if (!b.segment_ids.defined()) b.segment_ids = Tensor::zeros(shape, DType::i64);
  if (b.attention_mask.defined()) {
    std::vector<int64_t> mask = b.attention_mask.to_vector<int64_t>();
    for (int64_t r = 0; r < b.rows; ++r) {
      bool any = false;
      for (int64_t c = 0; c < b.cols; ++c) any |= mask[r * b.cols + c] != 0;
      ORDO_CHECK(any, file, ": \"attention_mask\" row ", r, " is all 0: the row has no token to attend to");
    }
  } else {
    b.attention_mask = Tensor::ones(shape, DType::i64);
  }
  return b;
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"checkpoint", "input", "out", "device", "ablate"}, {"overwrite"});
  const std::string out_file = args.required("out");
  check_output(out_file, OutputKind::file, args.has("overwrite"));
  const std::string dir = probe::resolve_checkpoint(args.required("checkpoint"));
  const std::string input_file = args.required("input");
  check_output_spares(out_file, input_file, "--input");
  for (const char* name : {"/model.safetensors", "/config.json"}) check_output_spares(out_file, dir + name, "--checkpoint");
  const nn::Ablation ablate = nn::parse_ablation(args.str("ablate", "none"), "--ablate");
  const Device device = args.device("device", "cpu");

  // The model as the checkpoint holds it: the NSP head only when the
  // checkpoint has one, so no logit comes from a freshly initialised head.
  auto model = pe::load_model(dir, device);
  const nn::BertConfig& config = model->bert.config();
  const bool nsp = model->seq_relationship != nullptr;

  // Inputs are validated in full before anything runs.
  Batch batch = read_batch(input_file, config, model->bert.position_encoding().max_position());
  nn::BertInputs in;
  in.input_ids = batch.input_ids.to(device);
  in.segment_ids = batch.segment_ids.to(device);
  in.positions = batch.positions.to(device);
  in.attention_mask = batch.attention_mask.to(device);

  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval();
  ctx.ablate = ablate;
  nn::ForwardTrace trace;
  trace.keep_hidden_states = trace.keep_attentions = true;
  Var sequence = model->bert.forward(in, ctx, &trace);
  Var logits = model->predictions.forward(sequence, model->bert.embeddings.word_embeddings.weight.var);

  nn::NamedTensors out;
  for (size_t l = 0; l < trace.hidden_states.size(); ++l)
    out.emplace_back("hidden_states." + std::to_string(l), trace.hidden_states[l]);
  for (size_t l = 0; l < trace.attentions.size(); ++l)
    out.emplace_back("attentions." + std::to_string(l + 1), trace.attentions[l]);
  out.emplace_back("logits", logits.value());
  if (nsp) out.emplace_back("nsp_logits", model->seq_relationship->forward(model->bert.pooler->forward(sequence)).value());
  out.emplace_back("input_ids", batch.input_ids);
  out.emplace_back("segment_ids", batch.segment_ids);
  out.emplace_back("positions", batch.positions);
  out.emplace_back("attention_mask", batch.attention_mask);
  safetensors::save(out_file, out, {{"format", "pt"}, {"checkpoint", dir}, {"written_by", "ordo forward"},
                                     {"ablate", nn::ablation_name(ablate)}});

  std::printf("ordo forward: %lld x %lld tokens through %lld layers (%s, pe %s%s%s) on %s -> %s\n",
              static_cast<long long>(batch.rows), static_cast<long long>(batch.cols),
              static_cast<long long>(config.num_hidden_layers), config.decoder ? "decoder" : "encoder",
              config.pe.c_str(), ablate == nn::Ablation::none ? "" : ", ablated: ",
              ablate == nn::Ablation::none ? "" : nn::ablation_name(ablate), device.str().c_str(), out_file.c_str());
  return 0;
}

cli::Register command({"forward",
                       "run a batch through a checkpoint and write every hidden state, attention and the logits",
                       "--checkpoint DIR --input FILE.json --out FILE.safetensors [--device cpu|cuda[:N]]"
                       " [--ablate contextual|positional] [--overwrite]\n"
                       "  --overwrite  replace FILE.safetensors if it exists\n"
                       "  FILE.json: {\"input_ids\": [[...], ...], optional \"segment_ids\", \"positions\","
                       " \"attention_mask\" of the same shape}",
                       run});

}  // namespace
