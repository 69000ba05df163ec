// OpenBLAS's kernel choice and its correction (blas_core.h says why).
#include "tensor/cpu/blas_core.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

#ifdef ORDO_HAS_BLAS
#include <cblas.h>
#endif

namespace ordo::cpu {

namespace {

// OpenBLAS's x86 cores without FMA (its names, as openblas_get_corename
// prints them, lower case): the generic fallbacks and the SSE and AVX
// generations. A name not listed (Haswell, Zen, SkylakeX, Cooperlake, an ARM
// core, a future one) is never corrected.
bool lacks_fma(std::string_view core) {
  static constexpr std::string_view kCores[] = {
      "prescott", "katmai",  "coppermine", "northwood", "core2",      "penryn",    "dunnington",
      "nehalem",  "atom",    "banias",     "opteron",   "opteron_sse3", "barcelona", "bobcat",
      "nano",     "sandybridge", "bulldozer", "piledriver", "steamroller", "excavator", "generic"};
  std::string lower(core);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (std::string_view name : kCores)
    if (lower == name) return true;
  return false;
}

constexpr const char* kCorrectedVariable = "ORDO_BLAS_CORE_CORRECTED";

}  // namespace

VectorSupport host_vector_support() {
  VectorSupport v;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  v.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  v.avx512 = v.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
  return v;
}

std::string corrected_blas_core(const std::string& chosen, const VectorSupport& cpu) {
  if (!cpu.avx2_fma || !lacks_fma(chosen)) return "";
  return cpu.avx512 ? "SkylakeX" : "Haswell";
}

std::string blas_core() {
#ifdef ORDO_HAS_BLAS
  const char* name = openblas_get_corename();
  return name ? name : "";
#else
  return "";
#endif
}

void restart_with_blas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's, or set by the restart already
  const std::string chosen = blas_core();
  const std::string wanted = corrected_blas_core(chosen, host_vector_support());
  if (wanted.empty()) return;
  setenv("OPENBLAS_CORETYPE", wanted.c_str(), /*overwrite=*/1);
  setenv(kCorrectedVariable, chosen.c_str(), /*overwrite=*/1);
  execv("/proc/self/exe", argv);
  // The exec failed (no /proc): go on with OpenBLAS's choice, and say nothing
  // was corrected; the variable stays set for any process this one starts,
  // where it takes effect.
  unsetenv(kCorrectedVariable);
}

std::string blas_core_note() {
  const char* chosen = std::getenv(kCorrectedVariable);
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  if (chosen == nullptr || set == nullptr) return "";
  return std::string("OpenBLAS took this CPU for ") + chosen + ", without FMA; ordo set OPENBLAS_CORETYPE=" + set +
         " and restarted: set it yourself to choose";
}

}  // namespace ordo::cpu
