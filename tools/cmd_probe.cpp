// `ordo probe`: identical word probing of a checkpoint (Wang et al. 2021,
// §4.2, Eq. 8; the pipeline is probe/probe.h).
//
//   ordo probe --checkpoint DIR --out DIR2 [--words N] [--length L] [--layer K|all]
//              [--seed S] [--vocab FILE] [--device cpu|cuda[:N]]
//
// The tokenizer (--vocab, else the checkpoint's own files) is WordPiece or
// byte-level BPE; its specials frame the repeated word.
//
// DIR: a checkpoint (config.json + model.safetensors), or a run directory,
// meaning its latest checkpoint (the highest RUN/checkpoints/step_N).
// Writes into DIR2 the files of probe/probe_folder.h (per probed layer K the
// attention and score matrices as CSV and heatmaps; indicators.json, probe.json).
// Every flag and the checkpoint are checked and the probe computed before the
// first file is written. DIR2 follows the output policy (base/output.h): an
// existing one is refused unless --overwrite, and the new one is built beside
// it and swapped in whole, so an error leaves an existing DIR2 as it was.
#include <cstdio>
#include <string>
#include <vector>

#include "base/output.h"
#include "probe/probe_folder.h"
#include "tools/cli.h"
#include "train/loop.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"checkpoint", "out", "words", "length", "layer", "seed", "vocab", "device", "precision"},
                 {"overwrite"});
  probe::ProbeRequest request;
  request.checkpoint = args.required("checkpoint");
  const std::string out = args.required("out");
  request.options.words = args.integer("words", 300, 1, 1 << 20);
  request.options.length = args.integer("length", 0, 3, 1 << 16);  // 0 (absent): the default length
  request.options.seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  request.layers = args.str("layer", "1");
  request.device = args.device("device", "cpu");
  request.options.precision = train::resolve_precision(args.str("precision", "auto"), request.device, "--precision");
  if (args.has("vocab")) request.vocab = args.required("vocab");
  // The checkpoint a run directory names, and the vocabulary found beside it, are inside it.
  check_output(out, OutputKind::folder, args.has("overwrite"),
               {{request.checkpoint, "--checkpoint"}, {request.vocab, "--vocab"}});

  const probe::ProbeFolder probed = probe::probe_folder(request);  // everything rendered before a file is touched
  write_folder(out, probed.files);

  std::printf("ordo probe: %lld words x length %lld through %s (pe %s), layer%s",
              static_cast<long long>(request.options.words), static_cast<long long>(probed.result.length),
              probed.checkpoint.c_str(), probed.variant.c_str(), probed.result.layers.size() > 1 ? "s" : "");
  for (const auto& p : probed.result.layers) std::printf(" %d", p.layer);
  std::printf(" -> %s\n", out.c_str());
  return 0;
}

cli::Register command({"probe", "identical word probing of a checkpoint: attention maps, heatmaps and indicators",
                       "--checkpoint DIR --out DIR2 [--words N] [--length L] [--layer K|all] [--seed S]"
                       " [--vocab FILE] [--device cpu|cuda[:N]] [--precision auto|fp32|tf32|bf16] [--overwrite]\n"
                       "  DIR: a checkpoint (config.json + model.safetensors: ordo's, or HF's BERT, RoBERTa, GPT-2,\n"
                       "       a bare encoder) or a run directory (its latest checkpoint: the highest\n"
                       "       RUN/checkpoints/step_N)\n"
                       "  --words N     random words, neither special nor word pieces (default 300); between the\n"
                       "                model's specials ([CLS] ... [SEP], <s> ... </s>; none for GPT-2)\n"
                       "  --length L    tokens per sequence, [CLS] and [SEP] included (default: the length the\n"
                       "                run pretrained at, for a checkpoint of an ordo run; else 128; at most the\n"
                       "                position table's size)\n"
                       "  --layer K     the layer probed, 1-based (default 1); 'all': every layer\n"
                       "  --seed S      the word draw (default 1)\n"
                       "  --vocab FILE  the tokenizer: vocab.txt (WordPiece), vocab.json with merges.txt beside it or\n"
                       "                tokenizer.json (byte-level BPE: GPT-2, RoBERTa), or a folder holding one;\n"
                       "                default: DIR's own, else its run's\n"
                       "  --precision   of the products: auto (bf16 on a GPU, fp32 on the CPU), fp32, tf32, bf16\n"
                       "  --overwrite   replace DIR2 if it exists (whole: no file of the previous probe stays)\n"
                       "  writes DIR2/attention_layerK.{csv,svg}, scores_layerK.{csv,svg}, attention_heads_layerK.svg,\n"
                       "  indicators.json, probe.json",
                       run});

}  // namespace
