// `ordo forward`: one batch through a checkpoint in evaluation mode, every
// intermediate written out — what a person auditing numerics compares against
// another implementation (scripts/hf_check.py does so against transformers).
//
//   ordo forward --checkpoint DIR --input FILE.json --out FILE.safetensors [--device cpu|cuda[:N]]
//                [--ablate contextual|positional]
//
// DIR: a checkpoint (MLM, MLM+NSP or causal: the heads it holds are run; HF
// BERT, RoBERTa or GPT-2; a bare encoder without an LM head, whose logits are
// then absent and said so), or a run directory, meaning its latest checkpoint.
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
//                           (absent when the checkpoint has no LM head)
//   nsp_logits              the NSP head's logits, when the checkpoint has one [batch, 2]
//   input_ids, segment_ids, positions, attention_mask   the inputs as used (defaults filled in)
// The names are HF's output_hidden_states / output_attentions order, so
// hidden_states.l is transformers' hidden_states[l]. (In a pre-LN model the
// last hidden state is taken after the final LayerNorm, as GPT-2's.) The file is written
// atomically: on any error nothing is written and an existing file stays. An
// existing file is refused unless --overwrite (base/output.h).
#include <cstdio>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "base/output.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/input_json.h"
#include "probe/probe.h"
#include "tensor/safetensors.h"
#include "tools/cli.h"
#include "train/checkpoint_paths.h"
#include "train/loop.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"checkpoint", "input", "out", "device", "ablate", "precision"}, {"overwrite"});
  const std::string out_file = args.required("out");
  const std::string dir = train::resolve_checkpoint(args.required("checkpoint"));
  const std::string input_file = args.required("input");
  check_output(out_file, OutputKind::file, args.has("overwrite"),
               {{input_file, "--input"}, {dir + "/model.safetensors", "--checkpoint"}, {dir + "/config.json", "--checkpoint"}});
  const nn::Ablation ablate = nn::parse_ablation(args.str("ablate", "none"), "--ablate");
  const Device device = args.device("device", "cpu");
  const MatmulPrecision precision = train::resolve_precision(args.str("precision", "auto"), device, "--precision");

  // The model as the checkpoint holds it: the NSP head only when the
  // checkpoint has one, so no logit comes from a freshly initialised head.
  nn::LoadReport loaded;
  auto model = model::load_model(dir, device, &loaded);
  const nn::BertConfig& config = model->bert.config();
  const bool has_lm_head = loaded.missing.empty();  // a bare encoder has none: no logits, said below
  const bool nsp = model->seq_relationship != nullptr;

  // Inputs are validated in full before anything runs.
  nn::InputBatch batch = nn::read_input_batch(input_file, config, model->bert.position_encoding().max_position());
  nn::BertInputs in;
  in.input_ids = batch.input_ids.to(device);
  in.segment_ids = batch.segment_ids.to(device);
  in.positions = batch.positions.to(device);
  in.attention_mask = batch.attention_mask.to(device);

  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval(precision);
  ctx.ablate = ablate;
  nn::ForwardTrace trace;
  trace.keep_hidden_states = trace.keep_attentions = true;
  Var sequence = model->bert.forward(in, ctx, &trace);

  nn::NamedTensors out;
  for (size_t l = 0; l < trace.hidden_states.size(); ++l)
    out.emplace_back("hidden_states." + std::to_string(l), trace.hidden_states[l]);
  for (size_t l = 0; l < trace.attentions.size(); ++l)
    out.emplace_back("attentions." + std::to_string(l + 1), trace.attentions[l]);
  if (has_lm_head)
    out.emplace_back(
        "logits", model->predictions.forward(sequence, model->bert.embeddings.word_embeddings.weight.var, ctx).value());
  if (nsp)
    out.emplace_back("nsp_logits",
                     model->seq_relationship->forward(model->bert.pooler->forward(sequence, ctx), ctx).value());
  out.emplace_back("input_ids", batch.input_ids);
  out.emplace_back("segment_ids", batch.segment_ids);
  out.emplace_back("positions", batch.positions);
  out.emplace_back("attention_mask", batch.attention_mask);
  safetensors::save(out_file, out, {{"format", "pt"}, {"checkpoint", dir}, {"written_by", "ordo forward"},
                                     {"ablate", nn::ablation_name(ablate)}});

  std::printf("ordo forward: %lld x %lld tokens through %lld layers (%s, pe %s%s%s) on %s, %s products -> %s\n",
              static_cast<long long>(batch.rows), static_cast<long long>(batch.cols),
              static_cast<long long>(config.num_hidden_layers), config.decoder ? "decoder" : "encoder",
              config.pe.c_str(), ablate == nn::Ablation::none ? "" : ", ablated: ",
              ablate == nn::Ablation::none ? "" : nn::ablation_name(ablate), device.str().c_str(),
              precision_name(precision), out_file.c_str());
  if (!has_lm_head)
    std::printf("ordo forward: no logits: the checkpoint holds no LM head (a bare encoder; %zu parameters absent: "
                "%s ...); hidden states and attentions are written\n",
                loaded.missing.size(), loaded.missing.front().c_str());
  return 0;
}

cli::Register command({"forward",
                       "run a batch through a checkpoint and write every hidden state, attention and the logits",
                       "--checkpoint DIR --input FILE.json --out FILE.safetensors [--device cpu|cuda[:N]]"
                       " [--precision auto|fp32|tf32|bf16]"
                       " [--ablate contextual|positional] [--overwrite]\n"
                       "  --overwrite  replace FILE.safetensors if it exists\n"
                       "  FILE.json: {\"input_ids\": [[...], ...], optional \"segment_ids\", \"positions\","
                       " \"attention_mask\" of the same shape}",
                       run});

}  // namespace
