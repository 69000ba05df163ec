// CPU reductions over the middle axis of [outer, r, inner]: sum, mean, max,
// min, var, argmax, and the sum of squares used by gradient clipping.
//
// Determinism: every output is accumulated in a fixed order that depends on
// the shape only — long rows are cut into fixed blocks of kBlock elements
// whose partial sums are added in block order — so the thread count never
// changes a result. Sums accumulate in double.
#include <cmath>
#include <limits>
#include <vector>

#include "tensor/cpu/common.h"

namespace ordo::cpu {

namespace {

constexpr int64_t kBlock = 4096;    // elements per partial sum of a long row
constexpr int64_t kColumns = 256;   // inner elements per task of a column reduction

template <class T>
double block_sum(const T* x, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]);
  return acc;
}

template <class T>
double block_sq_dev(const T* x, int64_t n, double mean) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i]) - mean;
    acc += d * d;
  }
  return acc;
}

template <class T, bool kMax>
T extreme(const T* x, int64_t n) {
  T best = x[0];
  for (int64_t i = 1; i < n; ++i) {
    T v = x[i];
    if (v != v) return v;  // NaN propagates
    if (kMax ? v > best : v < best) best = v;
  }
  return best;
}

// Row-wise blocked sum of f(block) over `rows` rows of length r: the partial
// results of all (row, block) pairs are computed in parallel, then added in order.
template <class BlockFn>
std::vector<double> blocked_row_sums(int64_t rows, int64_t r, BlockFn block_fn) {
  int64_t blocks = (r + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(rows * blocks));
  parallel_for(rows * blocks, std::max<int64_t>(1, kElementwiseGrain / kBlock), [&](int64_t b0, int64_t b1) {
    for (int64_t t = b0; t < b1; ++t) {
      int64_t row = t / blocks, blk = t % blocks;
      int64_t start = blk * kBlock;
      partial[t] = block_fn(row, start, std::min(kBlock, r - start));
    }
  });
  std::vector<double> sums(static_cast<size_t>(rows), 0.0);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t blk = 0; blk < blocks; ++blk) sums[row] += partial[row * blocks + blk];
  return sums;
}

// inner == 1: each output reduces one contiguous row of length r.
template <class T>
void reduce_rows(ReduceOp op, T* out, const T* x, int64_t rows, int64_t r, int64_t correction) {
  if (op == ReduceOp::max || op == ReduceOp::min) {
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(r, 1)), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row)
        out[row] = op == ReduceOp::max ? extreme<T, true>(x + row * r, r) : extreme<T, false>(x + row * r, r);
    });
    return;
  }
  std::vector<double> sums = blocked_row_sums(rows, r, [&](int64_t row, int64_t start, int64_t n) {
    return block_sum(x + row * r + start, n);
  });
  if (op == ReduceOp::sum) {
    for (int64_t row = 0; row < rows; ++row) out[row] = static_cast<T>(sums[row]);
    return;
  }
  if (op == ReduceOp::mean) {
    for (int64_t row = 0; row < rows; ++row) out[row] = static_cast<T>(sums[row] / r);
    return;
  }
  // var: a second pass around the mean (numerically safer than E[x^2] - E[x]^2).
  std::vector<double> sq = blocked_row_sums(rows, r, [&](int64_t row, int64_t start, int64_t n) {
    return block_sq_dev(x + row * r + start, n, sums[row] / r);
  });
  for (int64_t row = 0; row < rows; ++row) out[row] = static_cast<T>(sq[row] / static_cast<double>(r - correction));
}

// inner > 1: out[o, i] accumulates x[o, j, i] over j in order, a strip of
// kColumns consecutive i at a time so the loads stay contiguous.
template <class T>
void reduce_columns(ReduceOp op, T* out, const T* x, int64_t outer, int64_t r, int64_t inner,
                    int64_t correction) {
  int64_t strips = (inner + kColumns - 1) / kColumns;
  parallel_for(outer * strips, 1, [&](int64_t t0, int64_t t1) {
    std::vector<double> acc(kColumns), mean(kColumns);
    for (int64_t t = t0; t < t1; ++t) {
      int64_t o = t / strips, i0 = (t % strips) * kColumns, w = std::min(kColumns, inner - i0);
      const T* base = x + o * r * inner + i0;
      T* dst = out + o * inner + i0;
      if (op == ReduceOp::max || op == ReduceOp::min) {
        for (int64_t i = 0; i < w; ++i) dst[i] = base[i];
        for (int64_t j = 1; j < r; ++j) {
          const T* row = base + j * inner;
          for (int64_t i = 0; i < w; ++i) {
            T v = row[i];
            if (v != v || (op == ReduceOp::max ? v > dst[i] : v < dst[i])) {
              if (dst[i] == dst[i]) dst[i] = v;  // keep a NaN once seen
            }
          }
        }
        continue;
      }
      std::fill(acc.begin(), acc.begin() + w, 0.0);
      for (int64_t j = 0; j < r; ++j) {
        const T* row = base + j * inner;
        for (int64_t i = 0; i < w; ++i) acc[i] += static_cast<double>(row[i]);
      }
      if (op == ReduceOp::sum) {
        for (int64_t i = 0; i < w; ++i) dst[i] = static_cast<T>(acc[i]);
        continue;
      }
      for (int64_t i = 0; i < w; ++i) mean[i] = acc[i] / r;
      if (op == ReduceOp::mean) {
        for (int64_t i = 0; i < w; ++i) dst[i] = static_cast<T>(mean[i]);
        continue;
      }
      std::fill(acc.begin(), acc.begin() + w, 0.0);
      for (int64_t j = 0; j < r; ++j) {
        const T* row = base + j * inner;
        for (int64_t i = 0; i < w; ++i) {
          double d = static_cast<double>(row[i]) - mean[i];
          acc[i] += d * d;
        }
      }
      for (int64_t i = 0; i < w; ++i) dst[i] = static_cast<T>(acc[i] / static_cast<double>(r - correction));
    }
  });
}

}  // namespace

void reduce(ReduceOp op, const Tensor& out, const Tensor& x, int64_t outer, int64_t r,
            int64_t inner, int64_t correction) {
  dispatch_float(x.dtype(), "reduce", [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1) {
      reduce_rows(op, out.data<T>(), x.data<T>(), outer, r, correction);
    } else {
      reduce_columns(op, out.data<T>(), x.data<T>(), outer, r, inner, correction);
    }
  });
}

void argmax(const Tensor& out, const Tensor& x, int64_t outer, int64_t r, int64_t inner) {
  dispatch_float(x.dtype(), "argmax", [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    int64_t* o = out.data<int64_t>();
    parallel_for(outer * inner, kRowGrain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const T* base = xs + (t / inner) * r * inner + t % inner;
        int64_t best = 0;
        T best_value = base[0];
        for (int64_t j = 1; j < r && best_value == best_value; ++j) {
          T v = base[j * inner];
          if (v > best_value || v != v) {  // a NaN counts as the maximum, as in PyTorch
            best = j;
            best_value = v;
          }
        }
        o[t] = best;
      }
    });
  });
}

void sum_squares(const Tensor& out, const Tensor& x) {
  dispatch_float(x.dtype(), "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    std::vector<double> total = blocked_row_sums(1, x.numel(), [&](int64_t, int64_t start, int64_t n) {
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(xs[start + i]) * xs[start + i];
      return acc;
    });
    *out.data<T>() = static_cast<T>(total[0]);
  });
}

}  // namespace ordo::cpu
