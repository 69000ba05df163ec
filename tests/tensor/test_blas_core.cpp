// OpenBLAS's kernel choice corrected where it took an AVX2 CPU for an older
// one (tensor/cpu/blas_core.h): the rule on hand-written cases, and the ordo
// process against what OpenBLAS itself says it chose (OPENBLAS_VERBOSE=2
// prints "Core: NAME" as it loads), on whatever CPU runs the test.
#include <catch2/catch.hpp>

#include <string>

#include "tensor/cpu/blas_core.h"
#include "tensor/cpu/gemm_own.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

TEST_CASE("blas core: only a core without FMA on an AVX2 CPU is corrected", "[gemm]") {
  const cpu::VectorSupport sse_only{}, avx2{true, false}, avx512{true, true};
  // OpenBLAS's fallback for a CPU model it does not know, and the SSE/AVX generations.
  CHECK(cpu::corrected_blas_core("Prescott", avx512) == "SkylakeX");
  CHECK(cpu::corrected_blas_core("Prescott", avx2) == "Haswell");
  CHECK(cpu::corrected_blas_core("Nehalem", avx2) == "Haswell");
  CHECK(cpu::corrected_blas_core("SANDYBRIDGE", avx512) == "SkylakeX");
  CHECK(cpu::corrected_blas_core("Core2", avx512) == "SkylakeX");
  // A CPU without AVX2 and FMA: the old kernels are right for it.
  CHECK(cpu::corrected_blas_core("Prescott", sse_only).empty());
  // A core with FMA stays, even below what the CPU runs; unknown names stay.
  for (const char* core : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "NeoverseN1", "", "SomethingNew"})
    CHECK(cpu::corrected_blas_core(core, avx512).empty());
}

TEST_CASE("blas core: ordo runs the corrected core where OpenBLAS chose one without FMA, and keeps a user's choice",
          "[gemm][cli]") {
  if (!cpu::blas_compiled()) {
    // Without OpenBLAS there is nothing to correct: the description says so.
    CHECK(cpu::blas_description() == "none");
    return;
  }
  // What OpenBLAS picks on this CPU on its own, in a process where nothing is set.
  const std::string clean = "env -u OPENBLAS_CORETYPE -u ORDO_BLAS_CORE_CORRECTED ";
  const test::CommandResult own = test::run_command(clean + "OPENBLAS_VERBOSE=2 " + ORDO_BINARY + " info");
  REQUIRE(own.exit_code == 0);
  const size_t at = own.output.find("Core: ");
  REQUIRE(at != std::string::npos);
  const std::string chosen = own.output.substr(at + 6, own.output.find('\n', at) - at - 6);
  const std::string wanted = cpu::corrected_blas_core(chosen, cpu::host_vector_support());
  INFO("OpenBLAS chose " << chosen << "; corrected: '" << wanted << "'\n" << own.output);
  if (wanted.empty()) {
    CHECK_THAT(own.output, Contains(" " + chosen + " MAX_THREADS"));
    CHECK_THAT(own.output, !Contains("ordo set OPENBLAS_CORETYPE"));
  } else {
    // The restarted process loaded OpenBLAS again, with the corrected core, and says why.
    CHECK_THAT(own.output, Contains("Core: " + wanted));
    CHECK_THAT(own.output, Contains(" " + wanted + " MAX_THREADS"));
    CHECK_THAT(own.output, Contains("OpenBLAS took this CPU for " + chosen + ", without FMA; ordo set "
                                    "OPENBLAS_CORETYPE=" + wanted));
  }
  // A user's own setting is never overridden, even to the slowest core.
  const test::CommandResult user =
      test::run_command(clean + "OPENBLAS_CORETYPE=Prescott " + std::string(ORDO_BINARY) + " info");
  REQUIRE(user.exit_code == 0);
  CHECK_THAT(user.output, Contains(" Prescott MAX_THREADS"));
  CHECK_THAT(user.output, !Contains("ordo set OPENBLAS_CORETYPE"));
}
