// CUDA fused softmax + cross-entropy per row, forward and backward.
//
// forward:  lse = log sum_j exp(z_j),  loss = lse - z_t   (t the target)
// backward: dz_j = scale * (exp(z_j - lse) - [j == t])
// z_j is the logit plus the bias's column j when a bias is given (the
// decoder's: the product then writes no broadcast of it).
// Rows whose target is ignore_index contribute nothing (loss 0, valid 0,
// gradient 0). A target outside [0, c) is never used as an address: the
// kernel records it in the device's index-error flag (synchronize() then
// throws, as the CPU kernel throws at once) and writes NaN for that row's loss.
//
// Rows are shared out as in rows.cuh; the forward's log-sum-exp is the online
// (max, sum) reduction of softmax, in a fixed order, and its last block takes
// the mean over the rows that count (the loss, in the same launch). A
// backward that also sums the gradient's columns (the decoder's bias: linear_cross_entropy), or
// writes it as bf16, is column_sums.cuh's task of one element at a time.
#include "tensor/cuda/column_sums.cuh"
#include "tensor/cuda/rows.cuh"

namespace ordo::cuda {

namespace {

// Each row's lse, loss and valid; then the mean over the rows that count:
// the last block to finish (every block's rows written) sums loss and valid
// in f64, per thread in a strided order and then block_reduce's fixed tree.
// The logit (row, j) with the bias's column j added (bias null: none).
__device__ __forceinline__ float biased_logit(const float* zr, const float* bias, int64_t j) {
  return bias ? zr[j] + bias[j] : zr[j];
}

template <bool kWarpPerRow>
__global__ void cross_entropy_kernel(float* loss, float* valid, float* lse, float* mean_and_count,
                                     unsigned* counters, const float* logits, const float* bias,
                                     const int64_t* targets, int64_t rows, int64_t c, int64_t ignore_index,
                                     int* index_error) {
  using Threads = RowThreads<kWarpPerRow>;
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* zr = logits + row * c;
    MaxSum stats = max_sum_identity();
    for (int64_t j = Threads::lane(); j < c; j += Threads::width())
      stats = max_sum_add(stats, biased_logit(zr, bias, j));
    stats = Threads::reduce(stats, MaxSumCombine{}, max_sum_identity());
    if (Threads::lane() == 0) {
      const float l = stats.max + logf(stats.sum);
      const int64_t t = targets[row];
      lse[row] = l;
      if (t == ignore_index) {
        loss[row] = 0.0f;
        valid[row] = 0.0f;
      } else if (t < 0 || t >= c) {
        report_index_error(index_error, IndexErrorSite::cross_entropy);
        loss[row] = NAN;
        valid[row] = 0.0f;
      } else {
        loss[row] = l - biased_logit(zr, bias, t);
        valid[row] = 1.0f;
      }
    }
  }
  __syncthreads();  // this block's rows written by its other warps (last_of_group syncs only with more blocks)
  if (!last_of_group(counters, 0, gridDim.x)) return;
  double sum = 0.0, count = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    sum += loss[r];
    count += valid[r];
  }
  sum = block_reduce(sum, SumCombine{}, 0.0);
  count = block_reduce(count, SumCombine{}, 0.0);
  if (threadIdx.x != 0) return;
  mean_and_count[0] = static_cast<float>(sum / (count > 1.0 ? count : 1.0));
  mean_and_count[1] = static_cast<float>(count);
}

// The row's target and scale are read once per row; every element is written.
template <bool kWarpPerRow>
__global__ void cross_entropy_backward_kernel(float* glogits, const float* logits, const float* bias,
                                              const float* lse, const int64_t* targets, const float* gy,
                                              const float* count, int64_t rows, int64_t c, int64_t ignore_index) {
  using Threads = RowThreads<kWarpPerRow>;
  const float s = *gy / fmaxf(*count, 1.0f);
  for (int64_t row = Threads::first_row(); row < rows; row += Threads::row_stride()) {
    const float* zr = logits + row * c;
    float* gr = glogits + row * c;
    const int64_t t = targets[row];
    if (t == ignore_index) {
      for (int64_t j = Threads::lane(); j < c; j += Threads::width()) gr[j] = 0.0f;
      continue;
    }
    // An out-of-range target was reported by the forward; here it just never matches j.
    const float l = lse[row];
    for (int64_t j = Threads::lane(); j < c; j += Threads::width()) {
      const float p = s * expf(biased_logit(zr, bias, j) - l);
      gr[j] = j == t ? p - s : p;
    }
  }
}

// The gradient's element (row, j) as the row kernel computes it, written as
// f32 or bf16 (a product's operand); sums[0] takes the f32 value (the bias's
// column sum). The scale is read once per element from device memory (gy,
// count: no host sync), the row's target and lse per element (cached).
struct CrossEntropyElement {
  static constexpr int kSums = 1;
  float* g;
  uint16_t* g16;
  const float *logits, *bias, *lse, *gy, *count;
  const int64_t* targets;
  int64_t c, ignore_index;
  __device__ __forceinline__ void operator()(int64_t row, int64_t j, double (&sums)[1]) const {
    const float s = *gy / fmaxf(*count, 1.0f);
    const int64_t t = targets[row], i = row * c + j;
    float value = 0.0f;
    if (t != ignore_index) {
      const float p = s * expf(biased_logit(logits + row * c, bias, j) - lse[row]);
      value = j == t ? p - s : p;
    }
    if (g16) {
      g16[i] = bf16_bits(value);
    } else {
      g[i] = value;
    }
    sums[0] += value;
  }
};

}  // namespace

void cross_entropy(const Tensor& loss, const Tensor& valid, const Tensor& lse, const Tensor& mean_and_count,
                   const Tensor& logits, const Tensor& bias, const Tensor& targets, int64_t ignore_index) {
  require_f32(logits.dtype(), "cross_entropy");
  const int64_t rows = logits.size(0), c = logits.size(1);
  DeviceContext& ctx = context(logits);
  float* ls = loss.data<float>();
  float* vs = valid.data<float>();
  float* lses = lse.data<float>();
  float* mean = mean_and_count.data<float>();
  const float* z = logits.data<float>();
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  const int64_t* t = targets.data<int64_t>();
  auto launch = [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(cross_entropy_kernel<true>, grid, threads, 0, ctx.stream, ls, vs, lses, mean, ctx.group_counters,
                  z, b, t, rows, c, ignore_index, ctx.index_error);
    } else {
      ORDO_LAUNCH(cross_entropy_kernel<false>, grid, threads, 0, ctx.stream, ls, vs, lses, mean, ctx.group_counters,
                  z, b, t, rows, c, ignore_index, ctx.index_error);
    }
  };
  if (rows == 0) {  // no rows: one block still writes the mean of nothing, 0
    launch(true, 1, 32 * kRowsPerWarpBlock);
    ORDO_CUDA_CHECK_LAUNCH();
    return;
  }
  launch_rows(rows, c, ctx, launch);
}

void cross_entropy_backward(const Tensor& glogits, const Tensor& gbias, const Tensor& logits, const Tensor& bias,
                            const Tensor& lse, const Tensor& targets, const Tensor& gy, const Tensor& count,
                            int64_t ignore_index) {
  require_f32(logits.dtype(), "cross_entropy_backward");
  const int64_t rows = logits.size(0), c = logits.size(1);
  DeviceContext& ctx = context(logits);
  const bool bf16 = glogits.dtype() == DType::bf16;
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  if (gbias.defined() || bf16) {
    if (c == 0) return;
    const CrossEntropyElement element{bf16 ? nullptr : glogits.data<float>(),
                                      bf16 ? static_cast<uint16_t*>(glogits.raw_data()) : nullptr,
                                      logits.data<float>(), b, lse.data<float>(), gy.data<float>(), count.data<float>(),
                                      targets.data<int64_t>(), c, ignore_index};
    column_sums(logits.device(), ctx, rows, c,
                ColumnOutputs{{gbias.defined() ? gbias.data<float>() : nullptr, nullptr, nullptr}}, element);
    return;
  }
  float* g = glogits.data<float>();
  const float* z = logits.data<float>();
  const float* lses = lse.data<float>();
  const int64_t* t = targets.data<int64_t>();
  const float* gys = gy.data<float>();
  const float* n = count.data<float>();
  launch_rows(rows, c, ctx, [&](bool warp_per_row, unsigned grid, int threads) {
    if (warp_per_row) {
      ORDO_LAUNCH(cross_entropy_backward_kernel<true>, grid, threads, 0, ctx.stream, g, z, b, lses, t, gys, n, rows,
                  c, ignore_index);
    } else {
      ORDO_LAUNCH(cross_entropy_backward_kernel<false>, grid, threads, 0, ctx.stream, g, z, b, lses, t, gys, n,
                  rows, c, ignore_index);
    }
  });
}

}  // namespace ordo::cuda
