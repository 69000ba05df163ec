// The test runner: Catch2's session, plus one flag of ordo's own.
//
// --require-gpu: run the given tests only where a CUDA device is present; on a
// machine without one print why and exit 77, which ctest reports as "Skipped"
// (never as passed). CMakeLists.txt runs the [cuda] tests this way.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

#include "tensor/device_runtime.h"

int main(int argc, char** argv) {
  std::vector<char*> args;
  bool require_gpu = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-gpu") == 0) {
      require_gpu = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (require_gpu && !ordo::cuda_available()) {
    std::printf("SKIPPED: the [cuda] tests need a CUDA device; %s\n",
                ordo::cuda_device_description(0).c_str());
    return 77;
  }
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
