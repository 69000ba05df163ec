// Which of ordo's own CPU code paths run, and the deterministic mode
// (docs/determinism.md).
//
// The build compiles for its machine (-march=native), and where that machine
// has AVX-512 ordo's hand-vectorised kernels (the own matrix product's tile,
// GELU's rows) and the bf16 products on AMX tiles run their AVX-512 or AMX
// code. ORDO_CPU=avx2 switches those to the code an AVX2 machine runs, so
// that one AVX-512 machine can test what an AVX2-only one computes (with
// OPENBLAS_CORETYPE=Haswell for OpenBLAS's side).
//
// The deterministic mode (ORDO_DETERMINISTIC=1) runs every CPU product on
// ordo's own kernel, whose sum for an element of C is one chain of FMAs over
// k in order: the same bits whatever the vector width, the thread count, the
// blocking or rows of zeros added to k. It leaves OpenBLAS and the AMX tiles
// out and runs GELU's rows by the portable code, so that a run gives the
// same bits on every x86-64 CPU with AVX2 and FMA, at any thread count.
#pragma once

#include <string>

namespace ordo::cpu {

enum class VectorPath { avx2, avx512 };

// The path ordo's own kernels run: ORDO_CPU (avx2, avx512, or auto/unset:
// the widest this build and CPU run), read once; or set_vector_path's.
// An unknown value, or avx512 where the build or the CPU lacks AVX-512,
// throws ordo::Error naming the variable.
VectorPath vector_path();
// For tests: the path from now on (avx512 needs avx512_path_available()).
void set_vector_path(VectorPath path);
// False where ORDO_CPU=avx2 (or set_vector_path(avx2)) asked for the AVX2
// code: the AMX tiles, which need AVX-512 machines, are then left out too,
// whatever the build compiled.
bool wider_code_allowed();
// Whether this build compiled the AVX-512 code (-march with AVX-512F) and
// the CPU runs it (F, BW, DQ, VL).
bool avx512_path_available();

// Whether the deterministic mode is on: ORDO_DETERMINISTIC (1 or 0, unset
// 0), read once; or set_deterministic's. Another value throws ordo::Error.
bool deterministic();
void set_deterministic(bool on);

// The deterministic mode for a scope (tests), restoring the previous setting.
class DeterministicScope {
 public:
  explicit DeterministicScope(bool on = true) : previous_(deterministic()) { set_deterministic(on); }
  ~DeterministicScope() { set_deterministic(previous_); }
  DeterministicScope(const DeterministicScope&) = delete;
  DeterministicScope& operator=(const DeterministicScope&) = delete;

 private:
  bool previous_;
};

// For `ordo info`: "avx512 (ORDO_CPU=avx2 runs the AVX2 code)", and the mode.
std::string vector_path_description();
std::string deterministic_description();

}  // namespace ordo::cpu
