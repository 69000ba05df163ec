// CUDA elementwise kernels: unary (and its derivative), binary with
// broadcasting, where. The formulas are tensor/elementwise_math.h's, the same
// functions the CPU kernels call.
//
// One "map" kernel does all of them: out[i] = fn(in_0, ..., in_{K-1}) with a
// contiguous output and K inputs of the output's dtype. Two layouts:
//  - every input contiguous: a grid-stride loop over 16-byte packs (float4)
//    when every pointer is 16-byte aligned, element by element otherwise;
//  - any input strided or broadcast: a grid-stride loop over output elements,
//    each input's offset from an Indexer (axes collapsed where possible).
// Each output element depends on its inputs only, so the order of threads
// never matters. The output may be the first input itself (in-place binary_):
// each element (or pack) is read and written by the same thread.
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

namespace {

template <class T, int K>
struct Inputs {
  const T* p[K];
};

template <class Fn, class T>
__device__ __forceinline__ T apply(const Fn& fn, const T (&a)[1]) { return fn(a[0]); }
template <class Fn, class T>
__device__ __forceinline__ T apply(const Fn& fn, const T (&a)[2]) { return fn(a[0], a[1]); }
template <class Fn, class T>
__device__ __forceinline__ T apply(const Fn& fn, const T (&a)[3]) { return fn(a[0], a[1], a[2]); }

// Contiguous inputs. kPacked: all pointers 16-byte aligned; each thread maps
// whole packs, then the n % Pack::kSize tail is mapped element by element.
template <bool kPacked, class T, int K, class Fn>
__global__ void map_contiguous_kernel(int64_t n, Fn fn, T* out, Inputs<T, K> in) {
  int64_t begin = 0;
  if constexpr (kPacked) {
    constexpr int P = Pack<T>::kSize;
    const int64_t packs = n / P;
    for (int64_t v = global_thread_index(); v < packs; v += grid_thread_count()) {
      Pack<T> args[K];
#pragma unroll
      for (int k = 0; k < K; ++k) args[k] = Pack<T>::load(in.p[k] + v * P);
      Pack<T> result;
#pragma unroll
      for (int e = 0; e < P; ++e) {
        T scalars[K];
#pragma unroll
        for (int k = 0; k < K; ++k) scalars[k] = args[k].v[e];
        result.v[e] = apply(fn, scalars);
      }
      result.store(out + v * P);
    }
    begin = packs * P;
  }
  for (int64_t i = begin + global_thread_index(); i < n; i += grid_thread_count()) {
    T scalars[K];
#pragma unroll
    for (int k = 0; k < K; ++k) scalars[k] = in.p[k][i];
    out[i] = apply(fn, scalars);
  }
}

// Strided or broadcast inputs: element i of the (contiguous) output reads
// input k at ix.offsets(i)[k] (kNarrow: computed with 32-bit division).
template <bool kNarrow, class T, int K, class Fn>
__global__ void map_strided_kernel(int64_t n, Fn fn, T* out, Inputs<T, K> in, Indexer<K> ix) {
  for (int64_t i = global_thread_index(); i < n; i += grid_thread_count()) {
    int64_t offsets[K];
    if constexpr (kNarrow) {
      offsets_u32(ix, static_cast<uint32_t>(i), offsets);
    } else {
      ix.offsets(i, offsets);
    }
    T scalars[K];
#pragma unroll
    for (int k = 0; k < K; ++k) scalars[k] = in.p[k][offsets[k]];
    out[i] = apply(fn, scalars);
  }
}

// out = fn(inputs...) for a contiguous out and inputs viewing out's shape.
template <class T, int K, class Fn>
void launch_map(const Tensor& out, const std::array<const Tensor*, K>& inputs, Fn fn) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceContext& ctx = context(out);
  T* o = static_cast<T*>(out.raw_data());
  Inputs<T, K> in;
  bool contiguous = true, aligned = aligned16(o);
  for (int k = 0; k < K; ++k) {
    in.p[k] = static_cast<const T*>(inputs[k]->raw_data());
    contiguous = contiguous && inputs[k]->is_contiguous();
    aligned = aligned && aligned16(in.p[k]);
  }
  if (contiguous && aligned) {
    ORDO_LAUNCH(map_contiguous_kernel<true>, grid_for(n / Pack<T>::kSize + 1, kThreads, ctx), kThreads, 0,
                ctx.stream, n, fn, o, in);
  } else if (contiguous) {
    ORDO_LAUNCH(map_contiguous_kernel<false>, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream, n, fn, o,
                in);
  } else {
    std::array<const Shape*, K> strides;
    for (int k = 0; k < K; ++k) strides[k] = &inputs[k]->strides();
    Indexer<K> ix = make_indexer<K>(out.shape(), strides);
    if (n <= kNarrowIndexLimit) {
      ORDO_LAUNCH(map_strided_kernel<true>, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream, n, fn, o, in,
                  ix);
    } else {
      ORDO_LAUNCH(map_strided_kernel<false>, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream, n, fn, o, in,
                  ix);
    }
  }
  ORDO_CUDA_CHECK_LAUNCH();
}

// ---- the functors ----------------------------------------------------------------------

template <class Op>
struct UnaryFn {
  UnaryParams params;
  __device__ __forceinline__ float operator()(float x) const { return Op::f(x, params); }
};

// gx = gy * op'(x), the CPU's expression and order.
template <class Op>
struct UnaryGradFn {
  UnaryParams params;
  __device__ __forceinline__ float operator()(float x, float y, float gy) const {
    return gy * Op::df(x, y, params);
  }
};

template <class Op>
struct BinaryFn {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return Op::f(a, b); }
};

struct WhereFn {
  template <class T>
  __device__ __forceinline__ T operator()(T cond, T a, T b) const { return cond != T(0) ? a : b; }
};

// affine_to: one thread per element, the cast as copy.cu's (through double).
__global__ void affine_to_kernel(float* out, const int64_t* x, int64_t n, UnaryParams params) {
  for (int64_t i = global_thread_index(); i < n; i += grid_thread_count())
    out[i] = math::Affine::f(math::cast_from_double<float>(static_cast<double>(x[i])), params);
}

}  // namespace

void affine_to(const Tensor& out, const Tensor& x, UnaryParams params) {
  require_f32(out.dtype(), "affine_to");
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceContext& ctx = context(out);
  ORDO_LAUNCH(affine_to_kernel, grid_for(n, kThreads, ctx), kThreads, 0, ctx.stream, out.data<float>(),
              x.data<int64_t>(), n, params);
  ORDO_CUDA_CHECK_LAUNCH();
}

void unary(UnaryOp op, UnaryParams params, const Tensor& out, const Tensor& x) {
  dispatch_f32(out.dtype(), "unary", [&](auto) {
    visit_unary(op, [&](auto f) {
      launch_map<float, 1>(out, {&x}, UnaryFn<decltype(f)>{params});
    });
  });
}

void unary_backward(UnaryOp op, UnaryParams params, const Tensor& gx, const Tensor& x,
                    const Tensor& y, const Tensor& gy) {
  dispatch_f32(gx.dtype(), "unary_backward", [&](auto) {
    visit_unary(op, [&](auto f) {
      launch_map<float, 3>(gx, {&x, &y, &gy}, UnaryGradFn<decltype(f)>{params});
    });
  });
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_f32_i64(out.dtype(), "binary", [&](auto tag) {
    using T = decltype(tag);
    visit_binary(op, [&](auto f) { launch_map<T, 2>(out, {&a, &b}, BinaryFn<decltype(f)>{}); });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  dispatch_f32_i64(out.dtype(), "where", [&](auto tag) {
    using T = decltype(tag);
    launch_map<T, 3>(out, {&cond, &a, &b}, WhereFn{});
  });
}

}  // namespace ordo::cuda
