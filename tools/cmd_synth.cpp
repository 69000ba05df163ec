// `ordo data synth`: writes a corpus of the synthetic language with its
// annotations (synth/synth.h).
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "base/error.h"
#include "synth/synth.h"
#include "tools/cli.h"

namespace {

int run(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {"sentences", "seed", "out", "set"}, {"overwrite"});
  ORDO_USAGE_CHECK(args.has("sentences"), "missing required flag --sentences");
  int64_t sentences = args.integer("sentences", 0, 1, int64_t{1} << 40);
  int64_t seed = args.integer("seed", 0, 0, INT64_MAX);
  std::string out = args.required("out");
  ORDO_USAGE_CHECK(!out.empty(), "flag --out needs a directory");
  ordo::synth::Config config;
  for (const std::string& setting : args.all("set")) {
    size_t eq = setting.find('=');
    ORDO_USAGE_CHECK(eq != std::string::npos, "flag --set expects name=value, got '", setting, "'");
    ordo::synth::set_field(config, setting.substr(0, eq), setting.substr(eq + 1));
  }

  auto start = std::chrono::steady_clock::now();
  ordo::synth::Counts counts =
      ordo::synth::write_synthetic(out, sentences, static_cast<uint64_t>(seed), config, args.has("overwrite"));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %lld sentences (%lld documents, %lld words) to %s in %.2f s\n",
              static_cast<long long>(counts.sentences), static_cast<long long>(counts.documents),
              static_cast<long long>(counts.words), out.c_str(), seconds);
  return 0;
}

ordo::cli::Register command(
    {"data synth", "write a corpus of the synthetic language with its annotations",
     "--sentences N --out DIR [--seed S (0)] [--set name=value ...] [--overwrite]\n"
     "  an existing DIR is refused unless --overwrite, which replaces it whole\n"
     "  writes DIR/corpus.txt (a sentence a line, a blank line between documents),\n"
     "  DIR/annotations.jsonl (one JSON object per sentence: tree, arcs, clauses) and\n"
     "  DIR/meta.json; --set changes a grammar probability (see meta.json's \"config\")",
     run});

}  // namespace
