// CPU random draws and dropout, element i keyed by Philox(seed, stream, i)
// exactly as the CUDA kernels (base/philox.h holds the shared formulas).
#include <type_traits>

#include "base/philox.h"
#include "tensor/cpu/common.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ordo::cpu {

namespace {

// The words of philox::draw(seed, stream, g0 + l) for l = 0..7: words[l][k]
// is word k of draw g0 + l. With AVX2 the eight draws run side by side in
// vector lanes (_mm256_mul_epu32 forms four 32x32->64-bit products at a time,
// once for the even lanes and once for the odd); the integer arithmetic is
// the same as the scalar version's, so the words are bit-identical.
void philox_x8(uint64_t g0, uint64_t seed, uint64_t stream, uint32_t words[8][4]) {
#if defined(__AVX2__)
  alignas(32) uint32_t lo[8], hi[8], out[4][8];
  for (int l = 0; l < 8; ++l) {
    lo[l] = static_cast<uint32_t>(g0 + l);
    hi[l] = static_cast<uint32_t>((g0 + l) >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53u), m1 = _mm256_set1_epi64x(0xCD9E8D57u);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    // hi/lo halves of M0 * c0 and M1 * c2 in every 32-bit lane
    __m256i e0 = _mm256_mul_epu32(c0, m0), o0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    __m256i e1 = _mm256_mul_epu32(c2, m1), o1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
    __m256i lo0 = _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), 0xAA);
    __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
    __m256i lo1 = _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), 0xAA);
    __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
  }
  _mm256_store_si256(reinterpret_cast<__m256i*>(out[0]), c0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(out[1]), c1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(out[2]), c2);
  _mm256_store_si256(reinterpret_cast<__m256i*>(out[3]), c3);
  for (int l = 0; l < 8; ++l)
    for (int k = 0; k < 4; ++k) words[l][k] = out[k][l];
#else
  for (int l = 0; l < 8; ++l) {
    philox::Words w = philox::draw(seed, stream, g0 + l);
    for (int k = 0; k < 4; ++k) words[l][k] = w.x[k];
  }
#endif
}

#if defined(__AVX512F__) && defined(__BMI2__)
// _mm512_mul_epu32 and the 64-bit shifts in their all-lanes masked forms:
// the same instructions, without the undefined pass-through operand that
// GCC 12 flags as maybe-uninitialized.
__m512i mul_epu32(__m512i a, __m512i b) { return _mm512_maskz_mul_epu32(0xFF, a, b); }
__m512i srli_32(__m512i a) { return _mm512_maskz_srli_epi64(0xFF, a, 32); }
__m512i slli_32(__m512i a) { return _mm512_maskz_slli_epi64(0xFF, a, 32); }

// philox_x8 with sixteen draws side by side (g0 + l, l = 0..15), the words
// left as out[k][l] = word k of draw g0 + l: the same integer arithmetic.
void philox_x16(uint64_t g0, uint64_t seed, uint64_t stream, __m512i out[4]) {
  const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i lo_half = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(g0)), lanes);
  const __m512i hi_half = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(g0 + 8)), lanes);
  // counters g0 + l as 64-bit lanes; c0 holds their low words, c1 their high ones (l in order)
  const __m512i take_low = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i take_high = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512i c0 = _mm512_permutex2var_epi32(lo_half, take_low, hi_half);
  __m512i c1 = _mm512_permutex2var_epi32(lo_half, take_high, hi_half);
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53u), m1 = _mm512_set1_epi64(0xCD9E8D57u);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    __m512i e0 = mul_epu32(c0, m0), o0 = mul_epu32(srli_32(c0), m0);
    __m512i e1 = mul_epu32(c2, m1), o1 = mul_epu32(srli_32(c2), m1);
    __m512i hi0 = _mm512_mask_blend_epi32(0xAAAA, srli_32(e0), o0);
    __m512i lo0 = _mm512_mask_blend_epi32(0xAAAA, e0, slli_32(o0));
    __m512i hi1 = _mm512_mask_blend_epi32(0xAAAA, srli_32(e1), o1);
    __m512i lo1 = _mm512_mask_blend_epi32(0xAAAA, e1, slli_32(o1));
    __m512i n0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    __m512i n2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

// Dropout of 64 f32 elements (draws g0 .. g0 + 15) with AVX-512: element
// 4 l + k keeps where word k of draw g0 + l is >= threshold (0 < threshold <
// 2^32), as philox::dropout_keep; the four 16-lane keep masks are
// interleaved into one 64-bit mask (pdep), which selects x * scale or +0.
void dropout_64(float* o, const float* x, uint64_t g0, uint64_t seed, uint64_t stream, uint32_t threshold,
                float scale) {
  __m512i words[4];
  philox_x16(g0, seed, stream, words);
  const __m512i t = _mm512_set1_epi32(static_cast<int>(threshold));
  uint64_t keep = 0;
  for (int k = 0; k < 4; ++k)
    keep |= _pdep_u64(_mm512_cmpge_epu32_mask(words[k], t), 0x1111111111111111ull << k);
  const __m512 s = _mm512_set1_ps(scale);
  for (int q = 0; q < 4; ++q)
    _mm512_storeu_ps(o + 16 * q, _mm512_maskz_mul_ps(static_cast<__mmask16>(keep >> (16 * q)),
                                                     _mm512_loadu_ps(x + 16 * q), s));
}
#endif

}  // namespace

void random(const Tensor& out, RandomDist dist, double a, double b, uint64_t seed, uint64_t stream) {
  dispatch_float(out.dtype(), "random", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    parallel_for(out.numel(), kElementwiseGrain / 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double z;
        if (dist == RandomDist::trunc_normal) {
          z = philox::truncated_normal(seed, stream, static_cast<uint64_t>(i));
        } else {
          philox::Words w = philox::draw(seed, stream, static_cast<uint64_t>(i));
          if (dist == RandomDist::uniform) {
            double u = sizeof(T) == 4 ? philox::uniform_f32(w.x[0]) : philox::uniform_f64(w.x[0], w.x[1]);
            o[i] = static_cast<T>(philox::shift_scale(a, b - a, u));
            continue;
          }
          z = philox::normal_from(w.x[0], w.x[1]);
        }
        o[i] = static_cast<T>(philox::shift_scale(a, b, z));
      }
    });
  });
}

namespace {

// Dropout's elements [first, first + count) into o[0 .. count), x[0 ..) the
// matching inputs; first a multiple of 64. Element i keeps where
// philox::dropout_keep(seed, stream, i) does, however the range is cut.
template <class T>
void dropout_range(T* o, const T* x, int64_t first, int64_t count, uint64_t seed, uint64_t stream,
                   uint64_t threshold, T scale) {
  int64_t done = 0;
#if defined(__AVX512F__) && defined(__BMI2__)
  // Whole blocks of 64 on sixteen draws at once (8% of a mini pretraining
  // step was this kernel and its Philox draws); the tail element by element.
  if constexpr (std::is_same<T, float>::value) {
    if (threshold > 0 && threshold < (1ull << 32)) {
      for (; done + 64 <= count; done += 64)
        dropout_64(o + done, x + done, static_cast<uint64_t>((first + done) / 4), seed, stream,
                   static_cast<uint32_t>(threshold), scale);
      for (; done < count; ++done)
        o[done] = philox::dropout_keep(seed, stream, static_cast<uint64_t>(first + done), threshold) ? x[done] * scale
                                                                                                    : T(0);
      return;
    }
  }
#endif
  // Element i takes word i % 4 of draw i / 4 (philox::dropout_keep); blocks
  // of 32 elements are the words of eight consecutive draws.
  uint32_t words[8][4];
  for (; done < count; done += 32) {
    philox_x8(static_cast<uint64_t>((first + done) / 4), seed, stream, words);
    const uint32_t* w = &words[0][0];
    const int64_t block = std::min<int64_t>(32, count - done);
    for (int64_t j = 0; j < block; ++j) o[done + j] = w[j] >= threshold ? x[done + j] * scale : T(0);
  }
}

}  // namespace

// A bf16 out (a product's operand) is each chunk's f32 values rounded while
// the chunk is in cache.
void dropout(const Tensor& out, const Tensor& x, double p, const PhiloxStream& philox_stream) {
  const uint64_t threshold = philox::dropout_threshold(p);
  const uint64_t seed = philox_stream.seed;
  const uint64_t stream =
      philox_stream.offset + (philox_stream.base.defined() ? static_cast<uint64_t>(philox_stream.base.item()) : 0);
  constexpr int64_t kChunk = 2048;  // elements a task writes at once (a multiple of 64)
  const int64_t n = out.numel(), chunks = (n + kChunk - 1) / kChunk;
  uint16_t* rounded = out.dtype() == DType::bf16 ? static_cast<uint16_t*>(out.raw_data()) : nullptr;
  dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    const T* xs = x.data<T>();
    T* o = rounded ? nullptr : out.data<T>();
    parallel_for(chunks, std::max<int64_t>(1, kElementwiseGrain / kChunk), [&](int64_t begin, int64_t end) {
      T chunk_values[kChunk];
      for (int64_t c = begin; c < end; ++c) {
        const int64_t first = c * kChunk, count = std::min(kChunk, n - first);
        dropout_range(rounded ? chunk_values : o + first, xs + first, first, count, seed, stream, threshold, scale);
        if constexpr (std::is_same<T, float>::value)
          if (rounded)
            round_into_bf16(rounded + first, chunk_values, count);
      }
    });
  });
}

}  // namespace ordo::cpu
