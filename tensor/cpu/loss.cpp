// CPU fused softmax + cross-entropy per row, forward and backward.
//
// forward:  lse = log sum_j exp(z_j),  loss = lse - z_t   (t the target)
// backward: dz_j = scale * (exp(z_j - lse) - [j == t])
// Rows whose target is ignore_index contribute nothing (loss 0, valid 0, gradient 0).
#include <cmath>
#include <limits>
#include <vector>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

namespace {
void check_targets(const int64_t* t, int64_t rows, int64_t c, int64_t ignore_index) {
  for (int64_t r = 0; r < rows; ++r) {
    ORDO_CHECK(t[r] == ignore_index || (t[r] >= 0 && t[r] < c), "cross_entropy: target ", t[r],
               " in row ", r, " is out of range for ", c, " classes (and is not the ignore index ",
               ignore_index, ")");
  }
}
}  // namespace

void cross_entropy(const Tensor& loss, const Tensor& valid, const Tensor& lse, const Tensor& mean_and_count,
                   const Tensor& logits, const Tensor& bias, const Tensor& targets, int64_t ignore_index) {
  const int64_t rows = logits.size(0), c = logits.size(1);
  const int64_t* t = targets.data<int64_t>();
  check_targets(t, rows, c, ignore_index);
  dispatch_float(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* z = logits.data<T>();
    const T* bs = bias.defined() ? bias.data<T>() : nullptr;
    T* ls = loss.data<T>();
    T* vs = valid.data<T>();
    T* lses = lse.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
      std::vector<T> biased(bs ? c : 0);  // a row of logits + bias, while it is in cache
      for (int64_t r = b; r < e; ++r) {
        const T* zr = z + r * c;
        if (bs) {
          for (int64_t j = 0; j < c; ++j) biased[j] = zr[j] + bs[j];
          zr = biased.data();
        }
        const T max_value = row_max(zr, c);
        // A row entirely -inf has lse = log 0 = -inf (tensor/kernels.inc,
        // "Edge values"), not the NaN that -inf - -inf would give.
        const T l = max_value == -std::numeric_limits<T>::infinity()
                        ? max_value
                        : max_value + std::log(lane_sum<T>(c, [zr, max_value](int64_t j) {
                            return math::exp(zr[j] - max_value);
                          }));
        lses[r] = l;
        bool counted = t[r] != ignore_index;
        ls[r] = counted ? l - zr[t[r]] : T(0);
        vs[r] = counted ? T(1) : T(0);
      }
    });
    double sum = 0, count = 0;
    for (int64_t r = 0; r < rows; ++r) {
      sum += ls[r];
      count += vs[r];
    }
    mean_and_count.data<T>()[0] = static_cast<T>(sum / std::max(count, 1.0));
    mean_and_count.data<T>()[1] = static_cast<T>(count);
  });
}

void cross_entropy_backward(const Tensor& glogits, const Tensor& gbias, const Tensor& logits, const Tensor& bias,
                            const Tensor& lse, const Tensor& targets, const Tensor& gy, const Tensor& count,
                            int64_t ignore_index) {
  const int64_t rows = logits.size(0), c = logits.size(1);
  const int64_t* t = targets.data<int64_t>();
  const Tensor target = f32_target(glogits);
  dispatch_float(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* z = logits.data<T>();
    const T* bs = bias.defined() ? bias.data<T>() : nullptr;
    const T* lses = lse.data<T>();
    const T s = *gy.data<T>() / std::max(*count.data<T>(), T(1));
    T* g = target.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        T* gr = g + r * c;
        if (t[r] == ignore_index) {
          std::fill(gr, gr + c, T(0));
          continue;
        }
        const T* zr = z + r * c;
        if (bs) {
          for (int64_t j = 0; j < c; ++j) gr[j] = s * math::exp((zr[j] + bs[j]) - lses[r]);
        } else {
          for (int64_t j = 0; j < c; ++j) gr[j] = s * math::exp(zr[j] - lses[r]);
        }
        gr[t[r]] -= s;
      }
    });
    if (!gbias.defined()) return finish_rounded(glogits, target);
    uint16_t* rounded = glogits.dtype() == DType::bf16 ? static_cast<uint16_t*>(glogits.raw_data()) : nullptr;
    column_sums(gbias.data<T>(), g, rows, c, rounded);  // the rounding written as the sums read the rows
  });
}

}  // namespace ordo::cpu
