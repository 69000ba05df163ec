// bf16 products on AMX tiles (tensor/cpu/gemm_amx.h).
//
// The tile instruction TDPBF16PS adds to a 16 x 16 f32 tile C the products of
// a 16 x 32 bf16 tile A and a 32 x 16 bf16 tile B, B stored in pairs along k
// ("VNNI" layout: a 64-byte tile row holds k = 2r and 2r + 1 of 16 columns).
// The kernel packs B once per matrix into panels of 16 columns in that
// layout, and A a task of 128 rows at a time in tile order (or reads it in
// place, see rows_task); k is padded with zeros to a multiple of 32 and rows
// to 32. Each 32 x 32 block of C is four C tiles summed over k (in chunks of
// 768 when k is longer), stored straight into C or through a scratch block
// with alpha and beta. Zero padding adds exact zeros to the sums, so the
// edges need no other case.
#include "tensor/cpu/gemm_amx.h"

#include <cstdlib>
#include <cstring>

#include "tensor/cpu/common.h"
#include "tensor/cpu/cpu_paths.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define ORDO_AMX_COMPILED 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ordo::cpu {

namespace {

constexpr int64_t kBlock = 32;         // C is computed in 32 x 32 blocks (2 x 2 tiles)
constexpr int64_t kPanel = 16;         // columns of B per packed panel (a tile's width)
constexpr int64_t kTileK = 32;         // bf16 values of k per tile row
constexpr int64_t kRowsPerTask = 128;  // rows of A packed together (a task)
constexpr int64_t kChunkWords = 384;   // k (in words: 768 values) summed for a block before the next B panels
constexpr double kSerialWork = 64.0 * 64 * 64;  // multiply-adds below which one thread works alone

// Why AMX is not used, or "" when it can be.
std::string amx_absence() {
#ifdef ORDO_AMX_COMPILED
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return "no AMX-BF16 on this CPU";
  const bool tile = edx & (1u << 24), bf16 = edx & (1u << 22);
  if (!tile || !bf16) return "no AMX-BF16 on this CPU";
  // The OS must save the tile state (XCR0 bits 17, 18) ...
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return "no XSAVE support from the OS";
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return "the OS does not enable the AMX tile state";
  // ... and Linux gives it to a process that asks (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA).
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) != 0) return "the kernel refused the AMX tile state";
  return "";
#else
  return "this build has no AMX kernel (needs GCC 11+ on x86-64)";
#endif
}

const std::string& absence_once() {
  static const std::string why = amx_absence();
  return why;
}

// ORDO_AMX: unset, "on" or "auto" use the tiles where they exist; "off" does not.
bool switched_off() {
  static const bool off = [] {
    const char* v = std::getenv("ORDO_AMX");
    if (v == nullptr || *v == '\0') return false;
    const std::string s = v;
    ORDO_CHECK(s == "on" || s == "off" || s == "auto", "ORDO_AMX: expected on, off or auto, got '", s, "'");
    return s == "off";
  }();
  return off;
}

// One matrix of a MatrixBatch as bf16 elements: (row, col) of op(X).
struct Operand {
  const uint16_t* p;
  bool trans;
  int64_t ld;
  uint16_t at(int64_t row, int64_t col) const { return trans ? p[col * ld + row] : p[row * ld + col]; }
};

Operand operand_of(const MatrixBatch& mb, int64_t index) {
  return {static_cast<const uint16_t*>(mb.t.raw_data()) + index * mb.batch_stride, mb.trans, mb.ld};
}

// Packed operands are 32-bit words, each two bf16 values of consecutive k
// (the even k in the low half), which is how both tiles read k: A's rows
// word by word, B's panels a word per column.
uint32_t word(uint16_t low, uint16_t high) { return static_cast<uint32_t>(low) | static_cast<uint32_t>(high) << 16; }

// op(X)'s element (row, col), 0 outside rows x cols.
uint16_t element_or_zero(const Operand& x, int64_t row, int64_t col, int64_t rows, int64_t cols) {
  return row < rows && col < cols ? x.at(row, col) : 0;
}

#ifdef ORDO_AMX_COMPILED
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as their unused
// merge source and then warn, where they are inlined, that it is
// uninitialised (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Sixteen 32-bit words from 16 bf16 values at x and 16 at y: word i holds
// x[i] low and y[i] high.
__attribute__((target("avx512f"))) __m512i interleave16(const uint16_t* x, const uint16_t* y) {
  const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y)));
  return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// The 16 x 16 words in r transposed in place: r[i] word j becomes r[j] word i.
// Unpacks pair rows within 128-bit lanes (two stages), then 128-bit lanes move across rows.
__attribute__((target("avx512f"))) void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4g + c], 128-bit lane l: rows 4g .. 4g + 3 of column 4l + c.
  for (int g = 0; g < 16; g += 4) {
    u[g + 0] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88),
                  v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    r[c + 8] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
    r[c + 4] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    r[c + 12] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
  }
}

// A stored k x m: the tile of rows r0 .. r0 + 15 by words p0 .. p0 + 15,
// all inside the matrix (16 words a row, tile order).
__attribute__((target("avx512f"))) void pack_a_trans_block(uint32_t* dst, const Operand& a, int64_t r0, int64_t p0) {
  __m512i r[16];
  for (int i = 0; i < 16; ++i) {
    const uint16_t* even = a.p + 2 * (p0 + i) * a.ld + r0;
    r[i] = interleave16(even, even + a.ld);  // word p0 + i of rows r0 .. r0 + 15
  }
  transpose16(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(dst + i * 16, r[i]);
}

// B stored n x k: words p0 .. p0 + 15 of the panel (16 words each) from
// columns c0 .. c0 + 15, all inside the matrix.
__attribute__((target("avx512f"))) void pack_b_trans_block(uint32_t* dst, const Operand& b, int64_t c0, int64_t p0) {
  __m512i r[16];
  for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_si512(b.p + (c0 + j) * b.ld + 2 * p0);  // column j's words
  transpose16(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(dst + i * kPanel, r[i]);
}

// B stored k x n: panel words p0 .. p0 + 15 of columns c0 .. c0 + 15.
__attribute__((target("avx512f"))) void pack_b_rows_block(uint32_t* dst, const Operand& b, int64_t c0, int64_t p0) {
  for (int i = 0; i < 16; ++i) {
    const uint16_t* even = b.p + 2 * (p0 + i) * b.ld + c0;
    _mm512_storeu_si512(dst + i * kPanel, interleave16(even, even + b.ld));
  }
}

bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}
#endif

// Whether the packers may use their AVX-512 blocks (full 16 x 16 word blocks).
bool vector_packing(Packing packing) {
#ifdef ORDO_AMX_COMPILED
  return packing == Packing::automatic && cpu_has_avx512f();
#else
  (void)packing;
  return false;
#endif
}

// Panel `panel` of B (columns 16 panel ...): kw words, each the pair
// (2p, 2p + 1) of k of the panel's 16 columns; zeros past k and n.
void pack_b_panel(uint32_t* dst, const Operand& b, int64_t panel, int64_t n, int64_t k, int64_t kw, bool vector) {
  const int64_t c0 = panel * kPanel;
  int64_t p_full = 0;  // words [0, p_full) written by the vector blocks
  if (vector && c0 + kPanel <= n) {
    p_full = (k / 2) / 16 * 16;
#ifdef ORDO_AMX_COMPILED
    for (int64_t p0 = 0; p0 < p_full; p0 += 16)
      b.trans ? pack_b_trans_block(dst + p0 * kPanel, b, c0, p0) : pack_b_rows_block(dst + p0 * kPanel, b, c0, p0);
#endif
  }
  for (int64_t p = p_full; p < kw; ++p)
    for (int64_t j = 0; j < kPanel; ++j)
      dst[p * kPanel + j] = word(element_or_zero(b, 2 * p, c0 + j, k, n), element_or_zero(b, 2 * p + 1, c0 + j, k, n));
}

// Packed A is in tile order: each tile's 16 rows x 16 words are 1 KB in a
// row (a tile load reads one contiguous run), the tiles of 16 rows one
// after another along k. Word p of row r:
int64_t a_word(int64_t r, int64_t p, int64_t kw) {
  return (r / 16) * 16 * kw + (p / 16) * 256 + (r % 16) * 16 + p % 16;
}

// Rows [r0, r0 + rows) of A, rows up to a multiple of 32 and k up to 2 kw
// filled with zeros.
void pack_a_rows(uint32_t* dst, const Operand& a, int64_t r0, int64_t rows, int64_t k, int64_t kw, bool vector) {
  const int64_t padded = round_up(rows, kBlock);
  if (!a.trans) {  // rows of storage are rows of A: a tile row's 16 words (32 values) at a time
    std::memset(dst + (rows / 16) * 16 * kw, 0, static_cast<size_t>((padded - rows / 16 * 16) * kw) * 4);
    const int64_t whole = k / 32;  // tile rows inside k
    for (int64_t r = 0; r < rows; ++r) {
      const uint16_t* row = a.p + (r0 + r) * a.ld;
      for (int64_t t = 0; t < whole; ++t) std::memcpy(dst + a_word(r, 16 * t, kw), row + 32 * t, 64);
      if (whole * 32 < k) {
        uint32_t* tail = dst + a_word(r, 16 * whole, kw);
        std::memset(tail, 0, 64);
        std::memcpy(tail, row + 32 * whole, static_cast<size_t>(k - 32 * whole) * 2);
      }
    }
    return;
  }
  // Stored k x m: word p of row r holds column r of storage rows 2p and 2p + 1.
  int64_t r_full = 0, p_full = 0;  // the block [0, r_full) x [0, p_full) written by the vector blocks
  if (vector) {
    r_full = rows / 16 * 16;
    p_full = (k / 2) / 16 * 16;
#ifdef ORDO_AMX_COMPILED
    for (int64_t r = 0; r < r_full; r += 16)
      for (int64_t p0 = 0; p0 < p_full; p0 += 16) pack_a_trans_block(dst + a_word(r, p0, kw), a, r0 + r, p0);
#endif
  }
  for (int64_t r = 0; r < padded; ++r)
    for (int64_t p = r < r_full ? p_full : 0; p < kw; ++p) {
      const uint16_t even = element_or_zero(a, r0 + r, 2 * p, r0 + rows, k);
      const uint16_t odd = element_or_zero(a, r0 + r, 2 * p + 1, r0 + rows, k);
      dst[a_word(r, p, kw)] = word(even, odd);
    }
}

#ifdef ORDO_AMX_COMPILED
#pragma GCC diagnostic pop
#endif

// Where a 32-row block of A is for the tiles: a tile (16 rows x 32 values
// of k) at base + (r / 16) half + (r % 16) row + (e / 32) step bytes. Packed
// in tile order (a_word) or, for a dense row-major bf16 A whose k is whole
// tiles, A itself: no copy.
struct ABlock {
  const uint8_t* base;
  int64_t row, step, half;  // bytes
  static ABlock packed(const uint32_t* apack, int64_t rb, int64_t kw) {
    return {reinterpret_cast<const uint8_t*>(apack + a_word(rb, 0, kw)), 64, 1024, 64 * kw};
  }
  static ABlock in_place(const uint16_t* first_row, int64_t ld) {
    return {reinterpret_cast<const uint8_t*>(first_row), 2 * ld, 64, 32 * ld};
  }
  ABlock from_word(int64_t w) const { return {base + (w / 16) * step, row, step, half}; }  // k from 2 w on
  uint16_t at(int64_t r, int64_t e) const {  // bf16 value (r, e)
    uint16_t v;
    std::memcpy(&v, base + (r / 16) * half + (r % 16) * row + (e / 32) * step + (e % 32) * 2, 2);
    return v;
  }
};

// The 32 x 32 block of sums over kw words of k: A's block, B panels b0 and
// b1, written to out with ldo floats from one row to the next; with
// `onward`, the sums continue from what out holds (a block of k after
// another: the same additions in the same order as one pass over both).
using BlockKernel = void (*)(const ABlock& a, const uint32_t* b0, const uint32_t* b1, int64_t kw, float* out,
                             int64_t ldo, bool onward);

uint16_t half(uint32_t w, int64_t e) { return static_cast<uint16_t>(e % 2 ? w >> 16 : w); }

// The emulated tile unit: each element an FP32 sum over k in order (the
// products of two bf16 values are exact in f32).
void block_emulated(const ABlock& a, const uint32_t* b0, const uint32_t* b1, int64_t kw, float* out, int64_t ldo,
                    bool onward) {
  for (int64_t r = 0; r < kBlock; ++r)
    for (int64_t c = 0; c < kBlock; ++c) {
      const uint32_t* panel = c < kPanel ? b0 : b1;
      const int64_t j = c % kPanel;
      float sum = onward ? out[r * ldo + c] : 0.0f;
      for (int64_t e = 0; e < 2 * kw; ++e) sum += bf16_to_f32(a.at(r, e)) * bf16_to_f32(half(panel[(e / 2) * kPanel + j], e));
      out[r * ldo + c] = sum;
    }
}

#ifdef ORDO_AMX_COMPILED
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3: C (2 x 2 of 16 x 16 f32); 4, 5: A's two row halves; 6, 7: the B panels.
__attribute__((target("amx-tile"))) void load_tile_config() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.colsb[t] = 64;
  }
  _tile_loadconfig(&config);
}

__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

__attribute__((target("amx-tile,amx-bf16"))) void block_hardware(const ABlock& a, const uint32_t* b0,
                                                                   const uint32_t* b1, int64_t kw, float* out,
                                                                   int64_t ldo, bool onward) {
  const int64_t row_bytes = ldo * 4;
  if (onward) {
    _tile_loadd(0, out, row_bytes);
    _tile_loadd(1, out + 16, row_bytes);
    _tile_loadd(2, out + 16 * ldo, row_bytes);
    _tile_loadd(3, out + 16 * ldo + 16, row_bytes);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const uint8_t* a_tile = a.base;
  for (int64_t w = 0; w < kw; w += kTileK / 2, a_tile += a.step) {  // a tile's 16 words of k: A's two tiles, B's rows
    _tile_loadd(4, a_tile, a.row);
    _tile_loadd(5, a_tile + a.half, a.row);
    _tile_loadd(6, b0 + w * kPanel, 64);
    _tile_loadd(7, b1 + w * kPanel, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, row_bytes);
  _tile_stored(1, out + 16, row_bytes);
  _tile_stored(2, out + 16 * ldo, row_bytes);
  _tile_stored(3, out + 16 * ldo + 16, row_bytes);
}
#endif

// Each thread's tile state: configured on entry (the configuration is a
// thread's own), released on exit so the OS need not save it.
struct TileScope {
  bool hardware;
  explicit TileScope(bool hw) : hardware(hw) {
#ifdef ORDO_AMX_COMPILED
    if (hardware) load_tile_config();
#endif
  }
  ~TileScope() {
#ifdef ORDO_AMX_COMPILED
    if (hardware) release_tiles();
#endif
  }
};

struct Problem {
  float* c;
  int64_t m, n, k, kw;  // kw: words of k per packed row, k padded to a tile's 32
  float alpha, beta;
  BlockKernel block;
  bool vector_packing;
};

// C's rows from a row of sums (ld_sums floats apart): alpha sum + beta C.
void finish_rows(const Problem& p, float* c_rows, const float* sums, int64_t ld_sums, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* out = c_rows + r * p.n;
    const float* sum = sums + r * ld_sums;
    if (p.beta == 0.0f) {
      for (int64_t j = 0; j < cols; ++j) out[j] = p.alpha * sum[j];
    } else {
      for (int64_t j = 0; j < cols; ++j) out[j] = p.alpha * sum[j] + p.beta * out[j];
    }
  }
}

// Rows [r0, r0 + rows) of matrix `c` (dense m x n), B packed in bpack.
// With k longer than a chunk, `sums` (32 rows of n rounded up to 32) holds a
// row block's sums from chunk to chunk.
void rows_task(const Problem& p, float* c, const Operand& a, const uint32_t* bpack, uint32_t* apack, int64_t r0,
               int64_t rows, float* sums) {
  // A row-major A whose k is whole tiles is read in place, but for a last
  // block of fewer than 32 rows (the tiles would read past it): packed.
  const int64_t in_place = !a.trans && p.k % kTileK == 0 ? rows / kBlock * kBlock : 0;
  if (in_place < rows) pack_a_rows(apack, a, r0 + in_place, rows - in_place, p.k, p.kw, p.vector_packing);
  alignas(64) float block[kBlock * kBlock];
  const int64_t n_pad = round_up(p.n, kBlock);
  for (int64_t rb = 0; rb < rows; rb += kBlock) {
    const int64_t valid = std::min(kBlock, rows - rb);
    float* c_rows = c + (r0 + rb) * p.n;
    const ABlock a_block = rb < in_place ? ABlock::in_place(a.p + (r0 + rb) * a.ld, a.ld)
                                         : ABlock::packed(apack, rb - in_place, p.kw);
    if (p.kw > kChunkWords) {
      // A chunk of k of the A block stays in the L1 cache while the same
      // chunk of every B panel streams past it; the sums continue from chunk
      // to chunk (the same additions in the same order as one pass).
      for (int64_t w0 = 0; w0 < p.kw; w0 += kChunkWords) {
        const ABlock chunk = a_block.from_word(w0);
        for (int64_t c0 = 0; c0 < p.n; c0 += kBlock) {
          const uint32_t* b0 = bpack + (c0 / kPanel) * p.kw * kPanel + w0 * kPanel;
          p.block(chunk, b0, b0 + p.kw * kPanel, std::min(kChunkWords, p.kw - w0), sums + c0, n_pad, w0 > 0);
        }
      }
      finish_rows(p, c_rows, sums, n_pad, valid, p.n);
      continue;
    }
    // The A block stays in the L1 cache while the B panels stream past it.
    for (int64_t c0 = 0; c0 < p.n; c0 += kBlock) {
      const uint32_t* b0 = bpack + (c0 / kPanel) * p.kw * kPanel;
      const uint32_t* b1 = b0 + p.kw * kPanel;
      const int64_t cols = std::min(kBlock, p.n - c0);
      if (valid == kBlock && cols == kBlock && p.alpha == 1.0f && p.beta == 0.0f) {  // the sums are C: in place
        p.block(a_block, b0, b1, p.kw, c_rows + c0, p.n, false);
        continue;
      }
      p.block(a_block, b0, b1, p.kw, block, kBlock, false);
      finish_rows(p, c_rows + c0, block, kBlock, valid, cols);
    }
  }
}

int thread_id() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace

bool amx_available() { return absence_once().empty(); }

bool amx_enabled() {
  return !switched_off() && !deterministic() && wider_code_allowed() && amx_available();
}

std::string amx_description() {
  if (!amx_available()) return absence_once();
  if (switched_off()) return "off (ORDO_AMX=off)";
  if (deterministic()) return "off (ORDO_DETERMINISTIC=1)";
  if (!wider_code_allowed()) return "off (ORDO_CPU=avx2)";
  return "AMX-BF16 tiles";
}

void gemm_amx(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch, int64_t m, int64_t n,
              int64_t k, double alpha, double beta, TileUnit unit, Packing packing) {
  ORDO_CHECK(c.dtype() == DType::f32 && a.t.dtype() == DType::bf16 && b.t.dtype() == DType::bf16,
             "gemm (AMX): needs bf16 A and B and an f32 C");
  ORDO_CHECK(k > 0, "gemm (AMX): k must be positive");
  ORDO_CHECK(unit == TileUnit::emulated || amx_available(), "gemm (AMX): ", absence_once());
  if (batch <= 0 || m <= 0 || n <= 0) return;
  const bool hardware = unit == TileUnit::hardware;
  Problem p{c.data<float>(), m, n, k, round_up(k, kTileK) / 2, static_cast<float>(alpha), static_cast<float>(beta),
            block_emulated, vector_packing(packing)};
#ifdef ORDO_AMX_COMPILED
  if (hardware) p.block = block_hardware;
#endif
  const int64_t panels = round_up(n, kBlock) / kPanel, b_size = panels * p.kw * kPanel;
  const int64_t tasks = ceil_div(m, kRowsPerTask), a_size = round_up(std::min(m, kRowsPerTask), kBlock) * p.kw;
  const double work = static_cast<double>(batch) * m * n * k;
  const int threads = work < kSerialWork ? 1 : max_threads();
  // Matrices with their own B and at least one per thread: each thread packs
  // and computes whole matrices; otherwise the threads share each packed B.
  const bool by_matrix = threads > 1 && b.batch_stride != 0 && batch >= threads;
  const int64_t b_buffers = by_matrix ? threads : 1;
  // A row block's sums across chunks of k: 32 rows of n (rounded up to 32) a thread, when k has several.
  const int64_t sums_size = p.kw > kChunkWords ? kBlock * round_up(n, kBlock) : 0;
  // Allocated here: nothing throws inside the parallel region.
  Buffer<uint32_t> apacks(a_size * threads), bpacks(b_size * b_buffers);
  Buffer<float> sums(sums_size * threads);
  const int64_t mn = m * n;

#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    TileScope tiles(hardware);
    const int id = thread_id();
    uint32_t* apack = apacks.get() + id * a_size;
    float* thread_sums = sums.get() + id * sums_size;
    if (by_matrix) {
      uint32_t* bpack = bpacks.get() + id * b_size;
#pragma omp for schedule(dynamic)
      for (int64_t i = 0; i < batch; ++i) {
        const Operand bi = operand_of(b, i), ai = operand_of(a, i);
        for (int64_t panel = 0; panel < panels; ++panel)
          pack_b_panel(bpack + panel * p.kw * kPanel, bi, panel, n, k, p.kw, p.vector_packing);
        for (int64_t t = 0; t < tasks; ++t)
          rows_task(p, p.c + i * mn, ai, bpack, apack, t * kRowsPerTask, std::min(kRowsPerTask, m - t * kRowsPerTask),
                    thread_sums);
      }
    } else {
      for (int64_t i = 0; i < batch; ++i) {
        if (i == 0 || b.batch_stride != 0) {  // a shared B (stride 0) is packed once
          const Operand bi = operand_of(b, i);
#pragma omp for schedule(static)
          for (int64_t panel = 0; panel < panels; ++panel)
            pack_b_panel(bpacks.get() + panel * p.kw * kPanel, bi, panel, n, k, p.kw, p.vector_packing);
        }
        const Operand ai = operand_of(a, i);
#pragma omp for schedule(dynamic)
        for (int64_t t = 0; t < tasks; ++t)
          rows_task(p, p.c + i * mn, ai, bpacks.get(), apack, t * kRowsPerTask,
                    std::min(kRowsPerTask, m - t * kRowsPerTask), thread_sums);
      }
    }
  }
}

}  // namespace ordo::cpu
