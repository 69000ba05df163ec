// CUDA AdamW updates, fused: one pass reads param, grad, m and v and writes
// param, m and v, for one tensor (adamw) or for every parameter at once (the
// multi-tensor step: global_norm_and_clip, adamw_multi — two launches for a
// model of up to kMaxTensors tensors, no host read). The formula and its
// constants are the CPU's (tensor/cpu/optim.cpp): bias corrections in
// double, rounded to f32 once, the per-element arithmetic in f32. (nvcc fuses
// some multiply-adds the CPU rounds twice, so the two backends agree to a few
// f32 ulps.)
#include <cmath>

#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

// The constants rounded to f32 once, 1 - beta too (tensor/cpu/optim.cpp).
struct AdamWFloats {
  float lr, beta1, beta2, eps, weight_decay, grad_scale, inv_bias1, inv_sqrt_bias2, one_minus_beta1, one_minus_beta2;
};

AdamWFloats adamw_floats(double lr, double beta1, double beta2, double eps, double weight_decay, double grad_scale,
                         double inv_bias1, double inv_sqrt_bias2) {
  return {static_cast<float>(lr),        static_cast<float>(beta1),        static_cast<float>(beta2),
          static_cast<float>(eps),       static_cast<float>(weight_decay), static_cast<float>(grad_scale),
          static_cast<float>(inv_bias1), static_cast<float>(inv_sqrt_bias2), static_cast<float>(1.0 - beta1),
          static_cast<float>(1.0 - beta2)};
}

__device__ __forceinline__ void adamw_element(float& p, float g, float& m, float& v,
                                              const AdamWFloats& c) {
  const float gi = g * c.grad_scale;
  m = c.beta1 * m + c.one_minus_beta1 * gi;
  v = c.beta2 * v + c.one_minus_beta2 * gi * gi;
  const float update = (m * c.inv_bias1) / (sqrtf(v) * c.inv_sqrt_bias2 + c.eps);
  p -= c.lr * (c.weight_decay * p + update);
}

// Elementwise over n contiguous elements, grid-stride. kPacked: all four
// arrays 16-byte aligned, four elements per load/store, then the tail.
template <bool kPacked>
__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, int64_t n,
                             AdamWFloats c) {
  int64_t begin = 0;
  if constexpr (kPacked) {
    constexpr int P = Pack<float>::kSize;
    const int64_t packs = n / P;
    for (int64_t i = global_thread_index(); i < packs; i += grid_thread_count()) {
      Pack<float> p = Pack<float>::load(param + i * P), g = Pack<float>::load(grad + i * P),
                  mp = Pack<float>::load(m + i * P), vp = Pack<float>::load(v + i * P);
#pragma unroll
      for (int e = 0; e < P; ++e) adamw_element(p.v[e], g.v[e], mp.v[e], vp.v[e], c);
      p.store(param + i * P);
      mp.store(m + i * P);
      vp.store(v + i * P);
    }
    begin = packs * P;
  }
  for (int64_t i = begin + global_thread_index(); i < n; i += grid_thread_count())
    adamw_element(param[i], grad[i], m[i], v[i], c);
}

// ---- the multi-tensor step ----
//
// Each kernel gives a block to a chunk of AdamWTensors::chunks. The
// parameters' and moments' addresses are in the device table `layout`
// (built once); the gradients', which change from step to step, travel as a
// kernel argument: kMaxTensors pointers, 8 KiB of the 32,764 bytes a
// kernel's parameters may take since CUDA 12.1 (Volta and later; 4 KiB
// before) — enough for BERT-base with a per-head table a layer and head
// (~350 tensors) in one launch. A model with more parameter tensors than
// that takes one launch per kMaxTensors of them in each pass.
constexpr int kMaxTensors = 1024;
constexpr int kChunkThreads = 256;
struct Pointers {
  const float* at[kMaxTensors];
};
// The pointers and the largest kernel's other arguments (global_norm_kernel's, 8 x 8 bytes).
static_assert(sizeof(Pointers) + 8 * sizeof(int64_t) <= 32764, "the kernels' parameters exceed CUDA's 32,764 bytes");

// partials[first_chunk + c] = sum of x^2 over chunk c of this launch, for the
// chunks of tensors [first_tensor, first_tensor + kMaxTensors): per thread in
// f64 in a strided order, then block_reduce's fixed tree. In the last launch
// (out given) the last block to finish adds every launch's partials the same
// way and writes out = (sqrt of the sum, the clip factor): no launch of its own.
__global__ void global_norm_kernel(double* partials, int64_t first_chunk, int64_t total_chunks,
                                   const int64_t* chunks, Pointers x, int64_t first_tensor, float* out,
                                   unsigned* counters, double max_norm) {
  const int64_t c = blockIdx.x;
  const float* data = x.at[chunks[3 * c] - first_tensor] + chunks[3 * c + 1];
  const int64_t n = chunks[3 * c + 2];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(data[i]) * data[i];
  sum = block_reduce(sum, SumCombine{}, 0.0);
  if (threadIdx.x == 0) partials[first_chunk + c] = sum;
  if (out == nullptr) return;
  __syncthreads();  // thread 0's partial before this block reads them all (a one-block grid has no other sync)
  if (!last_of_group(counters, 0, gridDim.x)) return;
  double total = 0;
  for (int64_t i = threadIdx.x; i < total_chunks; i += blockDim.x) total += partials[i];
  total = block_reduce(total, SumCombine{}, 0.0);
  if (threadIdx.x != 0) return;
  const double norm = sqrt(total);
  out[0] = static_cast<float>(norm);
  out[1] = static_cast<float>(max_norm > 0 && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0);
}

// The update of chunk c, skipped when the norm is not finite.
__global__ void adamw_multi_kernel(const int64_t* layout, const int64_t* chunks, Pointers grads, int64_t first_tensor,
                                   const float* norm_and_clip, const double* schedule, AdamWFloats c) {
  if (!isfinite(norm_and_clip[0])) return;
  const int64_t k = blockIdx.x, tensor = chunks[3 * k], first = chunks[3 * k + 1], n = chunks[3 * k + 2];
  const int64_t* row = layout + kAdamWLayoutColumns * tensor;
  float* p = reinterpret_cast<float*>(row[0]) + first;
  float* m = reinterpret_cast<float*>(row[1]) + first;
  float* v = reinterpret_cast<float*>(row[2]) + first;
  const float* g = grads.at[tensor - first_tensor] + first;
  c.grad_scale = norm_and_clip[1];
  c.lr = static_cast<float>(schedule[0]);
  c.inv_bias1 = static_cast<float>(schedule[1]);
  c.inv_sqrt_bias2 = static_cast<float>(schedule[2]);
  if (row[3] == 0) c.weight_decay = 0.0f;
  uint16_t* rounded = row[4] != 0 ? reinterpret_cast<uint16_t*>(row[4]) + first : nullptr;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    adamw_element(p[i], g[i], m[i], v[i], c);
    if (rounded != nullptr) rounded[i] = bf16_bits(p[i]);
  }
}

// Calls launch(first_tensor, pointers, first_chunk, chunk_count) once per
// kMaxTensors tensors; a tensor of n elements has ceil(n / chunk) chunks,
// so the host knows the table's ranges without reading it.
template <class Launch>
void for_each_tensor_group(const std::vector<Tensor>& tensors, Launch launch) {
  int64_t chunk = 0;
  for (size_t first = 0; first < tensors.size(); first += kMaxTensors) {
    Pointers pointers{};
    int64_t chunks = 0;
    for (size_t t = first; t < std::min(tensors.size(), first + kMaxTensors); ++t) {
      pointers.at[t - first] = tensors[t].data<float>();
      chunks += (tensors[t].numel() + kMultiTensorChunk - 1) / kMultiTensorChunk;
    }
    if (chunks > 0) launch(static_cast<int64_t>(first), pointers, chunk, chunks);
    chunk += chunks;
  }
}

}  // namespace

void global_norm_and_clip(const Tensor& out, const Tensor& partials, const std::vector<Tensor>& tensors,
                          const Tensor& chunks, double max_norm) {
  require_f32(tensors.front().dtype(), "global_norm_and_clip");
  DeviceContext& ctx = context(partials);
  const int64_t total = chunks.size(0);
  for_each_tensor_group(tensors, [&](int64_t first, const Pointers& x, int64_t chunk, int64_t count) {
    const bool last = chunk + count == total;  // its last block takes the norm
    ORDO_LAUNCH(global_norm_kernel, static_cast<unsigned>(count), kChunkThreads, 0, ctx.stream,
                partials.data<double>(), chunk, total, chunks.data<int64_t>() + 3 * chunk, x, first,
                last ? out.data<float>() : nullptr, ctx.group_counters, max_norm);
    ORDO_CUDA_CHECK_LAUNCH();
  });
}

void adamw_multi(const AdamWTensors& t, const Tensor& norm_and_clip, const Tensor& schedule,
                 const AdamWConstants& c) {
  require_f32(t.params.front().dtype(), "adamw_multi");
  DeviceContext& ctx = context(norm_and_clip);
  // lr, the clip factor and the bias corrections are read on the device.
  const AdamWFloats constants = adamw_floats(0, c.beta1, c.beta2, c.eps, c.weight_decay, 1, 1, 1);
  for_each_tensor_group(t.grads, [&](int64_t first, const Pointers& g, int64_t chunk, int64_t count) {
    ORDO_LAUNCH(adamw_multi_kernel, static_cast<unsigned>(count), kChunkThreads, 0, ctx.stream,
                t.layout.data<int64_t>(), t.chunks.data<int64_t>() + 3 * chunk, g, first,
                norm_and_clip.data<float>(), schedule.data<double>(), constants);
    ORDO_CUDA_CHECK_LAUNCH();
  });
}

void adamw(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
           const AdamWStep& s) {
  require_f32(param.dtype(), "adamw");
  const int64_t n = param.numel();
  if (n == 0) return;
  DeviceContext& ctx = context(param);
  const double bias1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bias2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  const AdamWFloats c = adamw_floats(s.lr, s.beta1, s.beta2, s.eps, s.weight_decay, s.grad_scale, 1.0 / bias1,
                                     1.0 / std::sqrt(bias2));
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  float* ms = m.data<float>();
  float* vs = v.data<float>();
  if (aligned16(p) && aligned16(g) && aligned16(ms) && aligned16(vs)) {
    ORDO_LAUNCH(adamw_kernel<true>, grid_for(n / Pack<float>::kSize + 1, kThreads, ctx), kThreads, 0,
                ctx.stream, p, g, ms, vs, n, c);
  } else {
    ORDO_LAUNCH(adamw_kernel<false>, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream, p, g, ms, vs, n, c);
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

}  // namespace ordo::cuda
