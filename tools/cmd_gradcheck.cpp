// `ordo gradcheck [OP ...]`: runs the f64 finite-difference gradient check of
// every differentiable op (or of the cases whose graph contains a named op)
// and prints one line per case plus the op coverage.
#include <cstdio>

#include "autograd/gradcheck_suite.h"
#include "tools/cli.h"

namespace {

int run(const std::vector<std::string>& argv) {
  ordo::cli::Args args(argv, {}, {}, ordo::cli::Args::Positional::taken);
  const std::vector<std::string>& ops = args.positional();
  std::vector<ordo::GradcheckOutcome> outcomes = ordo::run_gradcheck_suite(ops);
  int failed = 0;
  std::printf("%-50s %-6s %12s %12s\n", "case", "result", "max abs err", "max rel err");
  for (const auto& o : outcomes) {
    failed += !o.result.ok;
    std::printf("%-50s %-6s %12.3g %12.3g\n", o.name.c_str(), o.result.ok ? "ok" : "FAIL",
                o.result.max_abs_error, o.result.max_rel_error);
    if (!o.result.ok) std::printf("    worst: %s\n", o.result.worst.c_str());
  }
  std::vector<std::string> missing = ordo::uncovered_ops(outcomes, ops);
  const std::vector<std::string> checked = ops.empty() ? ordo::differentiable_ops() : ops;
  std::printf("\ncovered: %zu of %zu %s:", checked.size() - missing.size(), checked.size(),
              ops.empty() ? "differentiable ops" : "named ops");
  for (const auto& op : checked) std::printf(" %s", op.c_str());
  std::printf("\n");
  for (const auto& op : missing) std::printf("NOT COVERED: %s\n", op.c_str());
  std::printf("%d of %zu cases failed\n", failed, outcomes.size());
  return failed || !missing.empty() ? 1 : 0;
}

ordo::cli::Register command({"gradcheck", "f64 finite-difference check of every differentiable op",
                             "[OP ...]  only the cases whose graph contains a named op (default: every case)", run});

}  // namespace
