#pragma once
// Which kernels OpenBLAS runs, and a correction where it took the CPU for an
// older one.
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: as it loads (before main) it
// picks its kernels by the CPU's model number, and a model it does not know
// gets its generic Prescott kernels: SSE3, no FMA. Debian 12's 0.3.21 does
// that on a 5th-generation Xeon (family 6, model 207), a CPU that runs
// AVX-512: measured there (`ordo bench ops`, 2 threads, [4096x768]@[768x768]^T)
// 34 GFLOP/s with Prescott, 183 with its SkylakeX kernels and 126 with ordo's
// own kernel — a 5x slower product in every CPU run. OpenBLAS reads
// OPENBLAS_CORETYPE once, as it loads, so the only remedy inside the process
// is to start it again with the variable set: restart_with_blas_core does,
// first thing in main.
#include <string>

namespace ordo::cpu {

// What the CPU and its operating system run (the OS's saved vector state
// included, as the compiler's cpu-supports checks test it).
struct VectorSupport {
  bool avx2_fma = false;  // AVX2 and FMA
  bool avx512 = false;    // AVX-512 F, BW, DQ and VL (OpenBLAS's SkylakeX kernels)
};
VectorSupport host_vector_support();

// The OpenBLAS core to ask for instead of `chosen`, or "" where the choice
// stands. Only a choice OpenBLAS cannot have meant is corrected: a core
// without FMA (SSE or AVX alone: Prescott, Nehalem, Sandybridge, ...) on a
// CPU that runs AVX2 and FMA; it becomes SkylakeX where the CPU runs AVX-512,
// Haswell otherwise. A core with FMA stays, even on a CPU that could run
// wider (OpenBLAS chooses Haswell's kernels on some AVX-512 CPUs on purpose).
std::string corrected_blas_core(const std::string& chosen, const VectorSupport& cpu);

// The core OpenBLAS runs ("SkylakeX"), or "" in a build without OpenBLAS.
std::string blas_core();

// First thing in main: where corrected_blas_core names a core and the user
// has not set OPENBLAS_CORETYPE, sets it (and ORDO_BLAS_CORE_CORRECTED to the
// core OpenBLAS took) and execs this program again with the same arguments;
// returns only where nothing is to be done or the exec failed. A user's own
// OPENBLAS_CORETYPE (any value, Prescott included) is kept as it is.
void restart_with_blas_core(char** argv);

// "" or, after a restart, what was corrected, for blas_description (`ordo
// info`, the benchmarks' headers): "OpenBLAS took this CPU for Prescott,
// without FMA; ordo set OPENBLAS_CORETYPE=SkylakeX and restarted: ...".
std::string blas_core_note();

}  // namespace ordo::cpu
