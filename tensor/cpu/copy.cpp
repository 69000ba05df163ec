// CPU copy (strided, with dtype casts) and fill.
#include <cstring>
#include <type_traits>

#include "tensor/cpu/common.h"
#include "tensor/dispatch.h"
#include "tensor/elementwise_math.h"

namespace ordo::cpu {

namespace {

// Casts go through double, which holds every value of every ordo dtype
// exactly, except i64 beyond 2^53.
template <class T> double load(const T* p) { return static_cast<double>(*p); }
template <> double load<BF16>(const BF16* p) { return bf16_to_f32(p->bits); }
template <> double load<F16>(const F16* p) { return f16_to_f32(p->bits); }
template <class T> void store(T* p, double v) { *p = math::cast_from_double<T>(v); }
template <> void store<BF16>(BF16* p, double v) { p->bits = f32_to_bf16(static_cast<float>(v)); }
template <> void store<F16>(F16* p, double v) { p->bits = f32_to_f16(static_cast<float>(v)); }

// Same dtype: move raw elements of `bytes` size (no conversion, bit exact).
template <class Word>
void copy_words(const Tensor& dst, const Tensor& src) {
  auto ix = make_indexer<2>(dst.shape(), {&dst.strides(), &src.strides()});
  Word* d = static_cast<Word*>(dst.raw_data());
  const Word* s = static_cast<const Word*>(src.raw_data());
  parallel_for(ix.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for_each_run(ix, begin, end, [&](const int64_t* off, int64_t n, const int64_t* st) {
      Word* dp = d + off[0];
      const Word* sp = s + off[1];
      if (st[0] == 1 && st[1] == 1) {
        std::memcpy(dp, sp, static_cast<size_t>(n) * sizeof(Word));
      } else {
        for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = sp[i * st[1]];
      }
    });
  });
}

template <class D, class S>
void copy_cast(const Tensor& dst, const Tensor& src) {
  auto ix = make_indexer<2>(dst.shape(), {&dst.strides(), &src.strides()});
  D* d = static_cast<D*>(dst.raw_data());
  const S* s = static_cast<const S*>(src.raw_data());
  parallel_for(ix.numel, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for_each_run(ix, begin, end, [&](const int64_t* off, int64_t n, const int64_t* st) {
      D* dp = d + off[0];
      const S* sp = s + off[1];
      // The products' operand casts, dense runs: f32 <-> bf16 directly (the
      // same bits as through double), so that the loops vectorise.
      if constexpr (std::is_same_v<D, BF16> && std::is_same_v<S, float>) {
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) dp[i].bits = f32_to_bf16(sp[i]);
          return;
        }
      }
      if constexpr (std::is_same_v<D, float> && std::is_same_v<S, BF16>) {
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) dp[i] = bf16_to_f32(sp[i].bits);
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i) store(dp + i * st[0], load(sp + i * st[1]));
    });
  });
}

// out's element (o, i, r) of [outer, n, inner]: g's (o, (i - start) / step, r)
// on the slice's indices, else zero bits.
template <class Word>
void pad_slice_words(const Tensor& out, const Tensor& g, int64_t outer, int64_t n, int64_t inner, int64_t start,
                     int64_t step) {
  Word* o = static_cast<Word*>(out.raw_data());
  const Word* src = static_cast<const Word*>(g.raw_data());
  const int64_t count = inner == 0 ? 0 : g.numel() / (outer * inner);
  parallel_for(outer * n, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, inner)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t row = begin; row < end; ++row) {
                   const int64_t b = row / n, i = row % n, from = i - start;
                   Word* dst = o + row * inner;
                   if (from >= 0 && from % step == 0 && from / step < count) {
                     std::memcpy(dst, src + (b * count + from / step) * inner, static_cast<size_t>(inner) * sizeof(Word));
                   } else {
                     std::fill(dst, dst + inner, Word{0});
                   }
                 }
               });
}

}  // namespace

void pad_slice(const Tensor& out, const Tensor& g, int64_t outer, int64_t n, int64_t inner, int64_t start,
               int64_t step) {
  switch (dtype_size(out.dtype())) {
    case 1: return pad_slice_words<uint8_t>(out, g, outer, n, inner, start, step);
    case 2: return pad_slice_words<uint16_t>(out, g, outer, n, inner, start, step);
    case 4: return pad_slice_words<uint32_t>(out, g, outer, n, inner, start, step);
    case 8: return pad_slice_words<uint64_t>(out, g, outer, n, inner, start, step);
  }
}

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype()) {
    switch (dtype_size(dst.dtype())) {
      case 1: return copy_words<uint8_t>(dst, src);
      case 2: return copy_words<uint16_t>(dst, src);
      case 4: return copy_words<uint32_t>(dst, src);
      case 8: return copy_words<uint64_t>(dst, src);
    }
  }
  dispatch_any(dst.dtype(), [&](auto d) {
    dispatch_any(src.dtype(), [&](auto s) { copy_cast<decltype(d), decltype(s)>(dst, src); });
  });
}

void fill(const Tensor& out, double value) {
  dispatch_any(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    store(&v, value);
    T* p = static_cast<T*>(out.raw_data());
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      std::fill(p + begin, p + end, v);
    });
  });
}

}  // namespace ordo::cpu
