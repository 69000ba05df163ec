// `ordo metrics`: the property indicators of one attention matrix.
//
//   ordo metrics --attention FILE [--first-k K] [--offset-range L]
//
// FILE: an L x L matrix, CSV (one row per line) or .npy (float32/float64).
// Prints one JSON object: translation_invariance, translation_invariance_no_special,
// monotonicity, monotonicity_first_k, symmetry_sd, direction_balance, locality,
// symmetry (probe/indicators.h gives each equation); +inf is the string "inf".
#include <cstdio>

#include "probe/indicators.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"attention", "first-k", "offset-range"});
  const std::string file = args.required("attention");
  const int64_t first_k = args.integer("first-k", 20, 1, int64_t{1} << 30);
  const int64_t offset_range = args.integer("offset-range", 20, 1, int64_t{1} << 30);
  Matrix a = probe::read_matrix_file(file);
  probe::check_attention_matrix(a, file);
  probe::Indicators ind = probe::compute_indicators(a, first_k, offset_range);
  std::printf("%s\n", json::dump(probe::indicators_json(ind)).c_str());
  return 0;
}

cli::Register command({"metrics", "the property indicators (AIV, OPR, SD, DB, locality, symmetry) of an attention matrix",
                       "--attention FILE [--first-k K] [--offset-range L]\n"
                       "  FILE: an L x L matrix of attention values >= 0, as CSV (one row per line, comma-separated)\n"
                       "        or .npy (float32 or float64)\n"
                       "  --first-k K        offsets 0..K for monotonicity_first_k (default 20)\n"
                       "  --offset-range L   offsets 1..L for direction_balance (default 20)\n"
                       "  prints one JSON object: translation_invariance, translation_invariance_no_special,\n"
                       "  monotonicity, monotonicity_first_k, symmetry_sd, direction_balance, locality, symmetry\n"
                       "  (+inf as the string \"inf\"); the equations are in probe/indicators.h",
                       run});

}  // namespace
