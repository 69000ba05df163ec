// CPU elementwise kernels: unary (and its derivative), binary with
// broadcasting, where. The formulas live in tensor/elementwise_math.h.
#include "tensor/cpu/common.h"
#include "tensor/cpu/gelu.h"

namespace ordo::cpu {

namespace {

// out[i] = GELU(x[i * stride]) for i < n (out dense); a strided x is gathered
// a chunk at a time.
void gelu_strided(float* out, const float* x, int64_t stride, int64_t n) {
  if (stride == 1) return gelu_row(out, x, nullptr, n);
  constexpr int64_t kChunk = 256;
  float dense[kChunk];
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t width = std::min(kChunk, n - i0);
    for (int64_t i = 0; i < width; ++i) dense[i] = x[(i0 + i) * stride];
    gelu_row(out + i0, dense, nullptr, width);
  }
}

}  // namespace

void affine_to(const Tensor& out, const Tensor& x, UnaryParams params) {
  const int64_t* xs = x.data<int64_t>();
  dispatch_float(out.dtype(), "affine_to", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        o[i] = math::Affine::f(math::cast_from_double<T>(static_cast<double>(xs[i])), params);
    });
  });
}

void unary(UnaryOp op, UnaryParams params, const Tensor& out, const Tensor& x) {
  auto ix = make_indexer<2>(out.shape(), {&out.strides(), &x.strides()});
  dispatch_float(out.dtype(), "unary", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* xs = x.data<T>();
    visit_unary(op, [&](auto f) {
      using F = decltype(f);
      parallel_for(ix.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for_each_run(ix, begin, end, [&](const int64_t* off, int64_t n, const int64_t* st) {
          T* op_ = o + off[0];
          const T* xp = xs + off[1];
          if constexpr (uses_gelu_row<F, T>) {
            gelu_strided(op_, xp, st[1], n);
          } else if (st[1] == 1) {  // dense: a loop the compiler can vectorise
            for (int64_t i = 0; i < n; ++i) op_[i] = F::f(xp[i], params);
          } else {
            for (int64_t i = 0; i < n; ++i) op_[i] = F::f(xp[i * st[1]], params);
          }
        });
      });
    });
  });
}

void unary_backward(UnaryOp op, UnaryParams params, const Tensor& gx, const Tensor& x,
                    const Tensor& y, const Tensor& gy) {
  dispatch_float(gx.dtype(), "unary_backward", [&](auto tag) {
    using T = decltype(tag);
    T* g = gx.data<T>();
    const T* xs = x.data<T>();
    const T* ys = y.data<T>();
    const T* gys = gy.data<T>();
    visit_unary(op, [&](auto f) {
      using F = decltype(f);
      parallel_for(gx.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
        if constexpr (uses_gelu_row<F, T>) {
          gelu_backward_row(g + begin, gys + begin, xs + begin, nullptr, end - begin);
        } else {
          for (int64_t i = begin; i < end; ++i) g[i] = gys[i] * F::df(xs[i], ys[i], params);
        }
      });
    });
  });
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  auto ix = make_indexer<3>(out.shape(), {&out.strides(), &a.strides(), &b.strides()});
  dispatch_numeric(out.dtype(), "binary", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* as = a.data<T>();
    const T* bs = b.data<T>();
    visit_binary(op, [&](auto f) {
      using F = decltype(f);
      parallel_for(ix.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for_each_run(ix, begin, end, [&](const int64_t* off, int64_t n, const int64_t* st) {
          T* op_ = o + off[0];
          const T* ap = as + off[1];
          const T* bp = bs + off[2];
          // The three common layouts get loops the compiler vectorises.
          if (st[1] == 1 && st[2] == 1) {
            for (int64_t i = 0; i < n; ++i) op_[i] = F::f(ap[i], bp[i]);
          } else if (st[1] == 1 && st[2] == 0) {
            const T bv = *bp;
            for (int64_t i = 0; i < n; ++i) op_[i] = F::f(ap[i], bv);
          } else if (st[1] == 0 && st[2] == 1) {
            const T av = *ap;
            for (int64_t i = 0; i < n; ++i) op_[i] = F::f(av, bp[i]);
          } else {
            for (int64_t i = 0; i < n; ++i) op_[i] = F::f(ap[i * st[1]], bp[i * st[2]]);
          }
        });
      });
    });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  auto ix = make_indexer<4>(out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()});
  dispatch_numeric(out.dtype(), "where", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* cs = cond.data<T>();
    const T* as = a.data<T>();
    const T* bs = b.data<T>();
    parallel_for(ix.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for_each_run(ix, begin, end, [&](const int64_t* off, int64_t n, const int64_t* st) {
        for (int64_t i = 0; i < n; ++i) {
          o[off[0] + i] = cs[off[1] + i * st[1]] != T(0) ? as[off[2] + i * st[2]] : bs[off[3] + i * st[3]];
        }
      });
    });
  });
}

}  // namespace ordo::cpu
