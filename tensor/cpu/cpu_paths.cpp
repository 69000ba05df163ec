// ORDO_CPU and ORDO_DETERMINISTIC (tensor/cpu/cpu_paths.h).
#include "tensor/cpu/cpu_paths.h"

#include <atomic>
#include <cstdlib>

#include "base/error.h"
#include "tensor/cpu/blas_core.h"

namespace ordo::cpu {

namespace {

// The variable's value, or "" where it is unset.
std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

#if defined(__AVX512F__)
constexpr const char* kNoAvx512 = "this CPU does not run AVX-512 (F, BW, DQ and VL)";
#else
constexpr const char* kNoAvx512 = "this build was compiled without AVX-512 (ORDO_NATIVE=ON on a CPU that has it)";
#endif

// Whether ORDO_CPU=avx2 or set_vector_path(avx2) asked for the AVX2 code.
std::atomic<bool>& avx2_asked_setting() {
  static std::atomic<bool> asked{variable("ORDO_CPU") == "avx2"};
  return asked;
}

std::atomic<int>& path_setting() {
  static std::atomic<int> path{[] {
    const std::string v = variable("ORDO_CPU");
    ORDO_CHECK(v.empty() || v == "auto" || v == "avx2" || v == "avx512", "ORDO_CPU: expected avx2, avx512 or auto, got '",
               v, "'");
    if (v == "avx2") return static_cast<int>(VectorPath::avx2);
    ORDO_CHECK(v != "avx512" || avx512_path_available(), "ORDO_CPU=avx512: ", kNoAvx512);
    return static_cast<int>(avx512_path_available() ? VectorPath::avx512 : VectorPath::avx2);
  }()};
  return path;
}

std::atomic<bool>& deterministic_setting() {
  static std::atomic<bool> on{[] {
    const std::string v = variable("ORDO_DETERMINISTIC");
    ORDO_CHECK(v.empty() || v == "0" || v == "1", "ORDO_DETERMINISTIC: expected 1 or 0, got '", v, "'");
    return v == "1";
  }()};
  return on;
}

}  // namespace

bool avx512_path_available() {
#if defined(__AVX512F__)
  return host_vector_support().avx512;
#else
  return false;
#endif
}

VectorPath vector_path() { return static_cast<VectorPath>(path_setting().load()); }

bool wider_code_allowed() { return !avx2_asked_setting(); }

void set_vector_path(VectorPath path) {
  ORDO_CHECK(path == VectorPath::avx2 || avx512_path_available(),
             "set_vector_path(avx512): this build or CPU has no AVX-512 path");
  path_setting() = static_cast<int>(path);
  avx2_asked_setting() = path == VectorPath::avx2;
}

bool deterministic() { return deterministic_setting(); }
void set_deterministic(bool on) { deterministic_setting() = on; }

std::string vector_path_description() {
  if (vector_path() == VectorPath::avx512) return "avx512 (ORDO_CPU=avx2 runs the AVX2 code)";
  return avx512_path_available() ? "avx2 (ORDO_CPU=avx2)" : "avx2";
}

std::string deterministic_description() {
  return deterministic() ? "on (ORDO_DETERMINISTIC=1): ordo's own products in a fixed order, no BLAS, no AMX"
                         : "off (ORDO_DETERMINISTIC=1 for the same bits on every x86-64 CPU)";
}

}  // namespace ordo::cpu
