// bf16 products on the CPU's matrix tiles (Intel AMX: Sapphire Rapids and
// later Xeons), for MatmulPrecision::bf16: bf16 A and B, FP32 sums, an f32 C.
//
// cpu::gemm sends a product here when both operands are bf16 and the CPU has
// AMX-BF16 that the kernel lets a process use (and ORDO_AMX is not "off");
// elsewhere bf16 operands are widened and multiplied in FP32, as before. The
// two give the FP32 sums of the same exact products in different orders:
// each within k u sum |a b| of the exact sum (tests/tensor/test_gemm_amx.cpp).
//
// One kernel, two tile units: the hardware's (TDPBF16PS) and an emulated one
// that runs the same packing, blocking and epilogue with a plain FP32 sum
// over k in order, so the kernel's layout logic is tested on every machine,
// bit for bit against a naive loop, and the hardware's arithmetic where it
// exists.
#pragma once

#include <cstdint>
#include <string>

#include "tensor/backend.h"

namespace ordo::cpu {

// Whether this CPU and kernel give the process AMX-BF16 (checked once:
// CPUID, then the kernel's permission for the tile data, which Linux asks a
// process to request). Independent of ORDO_AMX.
bool amx_available();
// amx_available() and not switched off (ORDO_AMX=off, ORDO_CPU=avx2 or the
// deterministic mode: tensor/cpu/cpu_paths.h): cpu::gemm's test.
bool amx_enabled();
// "AMX-BF16 tiles", or why not ("no AMX-BF16 on this CPU", "off (ORDO_AMX=off)", ...).
std::string amx_description();

enum class TileUnit { hardware, emulated };
// How the operands are packed: with AVX-512 blocks where the CPU has them
// (automatic), or element by element (scalar, for the tests to compare).
enum class Packing { automatic, scalar };

// C (dense [batch, m, n], f32) = alpha op(A) op(B) + beta C, with A and B
// bf16 matrices as MatrixBatch describes them (A m x k stored, k x m when
// transposed; B k x n, n x k when transposed). beta = 0 never reads C.
// Each element of C is summed by one thread in one order, whatever the
// thread count. TileUnit::hardware requires amx_available().
void gemm_amx(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch, int64_t m, int64_t n,
              int64_t k, double alpha, double beta, TileUnit unit = TileUnit::hardware,
              Packing packing = Packing::automatic);

}  // namespace ordo::cpu
