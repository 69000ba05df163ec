// The test runner: Catch2's session, plus one flag of ordo's own.
//
// --require-gpu: run the given tests only where a CUDA device is present; on a
// machine without one print why and exit 77, which ctest reports as "Skipped"
// (never as passed). CMakeLists.txt runs the [cuda] tests this way.
// --require-gpus N: the same with N devices (the 2-rank NCCL tests). The
// emulated GPU counts as one device per process, so there N processes have N.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tensor/cpu/blas_core.h"
#include "tensor/device_runtime.h"

int main(int argc, char** argv) {
  ordo::cpu::restart_with_blas_core(argv);  // OpenBLAS's kernels, as the ordo command does
  // A CUDA device runs the unfused attention by default (nn/bert.h: the
  // faster today); the tests, and the ordo processes they start, run the
  // fused kernels wherever a test does not choose, since those are what the
  // [cuda] and [cuda][step] comparisons check. A value given outside stays.
  setenv("ORDO_FUSED_ATTENTION", "1", /*overwrite=*/0);
  std::vector<char*> args;
  int required_gpus = 0;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-gpu") == 0) {
      required_gpus = 1;
    } else if (std::strcmp(argv[i], "--require-gpus") == 0 && i + 1 < argc) {
      required_gpus = std::atoi(argv[++i]);
    } else {
      args.push_back(argv[i]);
    }
  }
  if (required_gpus > 0 && !ordo::cuda_available()) {
    std::printf("SKIPPED: the [cuda] tests need a CUDA device; %s\n",
                ordo::cuda_device_description(0).c_str());
    return 77;
  }
#ifndef ORDO_CUDA_EMULATED
  if (ordo::cuda_device_count() < required_gpus) {
    std::printf("SKIPPED: these tests need %d CUDA devices, this machine has %d\n", required_gpus,
                ordo::cuda_device_count());
    return 77;
  }
#endif
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
