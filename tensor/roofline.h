// A roofline estimate of recorded kernel calls (tensor/kernel_calls.h) on a
// GPU that is not here: each call takes
//   max(bytes / bandwidth, FLOPs / peak) + launches * launch overhead,
// with the bytes of the tensors it touches, the FLOPs its arithmetic needs
// and the peak of the units that run it (a product's by its precision:
// FP32, TF32 or bf16 tensor cores). It is an estimate from the model's
// shapes, not a measurement: it assumes every kernel streams its tensors
// once at full bandwidth and every product reaches the datasheet peak, so it
// is a lower bound that tells the next piece of work where the time goes.
#pragma once

#include <string>
#include <vector>

#include "tensor/kernel_calls.h"

namespace ordo {

struct RooflineMachine {
  std::string name;
  double bytes_per_second = 0;   // device memory bandwidth
  double fp32_flops = 0;         // CUDA cores, FP32 (every kernel but a TF32 or bf16 matrix product)
  double tf32_flops = 0;         // tensor cores, TF32 dense (gemm under MatmulPrecision::tf32)
  double bf16_flops = 0;         // tensor cores, bf16 dense with FP32 accumulation (gemm under bf16)
  double launch_seconds = 0;     // per kernel launch (or graph launch), added to each
  std::string source;            // where the figures come from
};

// NVIDIA H100 SXM5 80 GB.
RooflineMachine h100_sxm();

// The FLOPs a kernel call needs. Exact for gemm (2·batch·m·n·k) and the
// relative product; every other kernel is memory-bound by far on any current
// GPU (H100: 67e12 / 3.35e12 = 20 FLOP per byte of traffic before compute
// binds), so it is counted as a small per-element constant of its largest tensor.
double kernel_flops(const KernelCall& call);

// Launches the call makes on a GPU: ordo's own (counted) plus one for a
// cuBLAS product. cub's radix sort passes (index_add, relative_scatter) are not seen.
int64_t kernel_launches(const KernelCall& call);

struct RooflineRow {
  std::string kernel;
  int64_t calls = 0;
  int64_t launches = 0;
  double bytes = 0;
  double flops = 0;
  double seconds = 0;           // the estimate: the three below, added
  double memory_seconds = 0;    // calls whose bytes bind
  double compute_seconds = 0;   // calls whose FLOPs bind
  double launch_seconds = 0;
};

// The peak FLOP/s the call's arithmetic runs at: a product's precision's
// tensor cores (or FP32 CUDA cores), FP32 CUDA cores for every other kernel.
double kernel_peak(const KernelCall& call, const RooflineMachine& machine);

// The seconds the call's arithmetic takes at peak: kernel_flops at
// kernel_peak, but the fused attention on tensor-core tiles, whose products
// run at the bf16 peak and the rest at FP32's (roofline.cpp). Every model of
// a call's time takes this one.
double kernel_compute_seconds(const KernelCall& call, const RooflineMachine& machine);

// The FLOPs of the matrix products among the calls (gemm, the relative
// products, and the fused attention's scores and P v without its
// recomputation): the work a model FLOP utilisation counts.
double product_flops(const std::vector<KernelCall>& calls);

// One row per kernel name, slowest first, and their total (kernel "total").
struct Roofline {
  std::vector<RooflineRow> rows;
  RooflineRow total;
};
Roofline roofline(const std::vector<KernelCall>& calls, const RooflineMachine& machine);

}  // namespace ordo
