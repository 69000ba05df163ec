// The CUDA kernels whose launches cap their grids, at sizes beyond the cap,
// against the CPU at every element. tensor/cuda/cuda_common.cuh's grid_for
// gives a grid-stride loop at most 32 blocks of 256 threads an SM, and
// rows.cuh's launch_rows gives the row kernels at most 16 blocks an SM (4
// rows a block for rows of up to 1,024 elements, a warp each; else a block a
// row): past that, each thread (warp, block) loops over further elements. A
// kernel without its loop, or with a wrong stride, leaves the elements past
// the cap unwritten — which no smaller test sees. Here every capped launch
// has more elements than its grid's threads take at once (four times as
// many, for the kernels that move four elements a thread), and every
// element is compared with the CPU's: bit for bit where the CUDA kernel
// computes the CPU's bits (tests/tensor/test_cuda*.cpp say which), else
// within a bound of a few roundings of values of order 1 — an element never
// written reads as NaN on the emulated GPU (fresh memory is poisoned) and
// as whatever the memory held on a real one. Not here: launches whose
// counts a model's sizes keep far below the cap (the attention tiles'
// tables' and vectors' gradients: heads x width threads), and those only
// the backend reaches (gemm's scale and densify).
//
// The sizes follow the device's SM count (cuda_multiprocessor_count): 1.1
// to 4.3 million elements on the emulated H100's 132 SMs.
#ifdef ORDO_HAS_CUDA

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tensor/backend.h"
#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace beyond_grid_cap {

const Device kGpu = Device::cuda(0);
constexpr double kU = 0x1p-24;  // f32's unit roundoff

// The threads of a grid-stride launch at its cap.
int64_t capped_threads() { return int64_t{cuda_multiprocessor_count(0)} * 32 * 256; }
// Elements enough for a grid-stride kernel that takes `per_thread` of them
// a thread (4: a float4 path) to loop past its cap, and an odd tail.
int64_t elements(int64_t per_thread) { return per_thread * capped_threads() + 1001; }
// The row kernels' grids at their cap: blocks of 4 warp rows, or of a row.
int64_t capped_warp_rows() { return int64_t{cuda_multiprocessor_count(0)} * 16 * 4; }
int64_t capped_block_rows() { return int64_t{cuda_multiprocessor_count(0)} * 16; }

// Returns the case's large blocks to the driver when it ends: the caching
// allocator would keep them (each case's sizes differ, so the next could
// not reuse them), and the emulated GPU's memory with them.
struct ReleaseCachedBlocks {
  ~ReleaseCachedBlocks() { empty_cache(kGpu); }
};

Tensor values(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return ordo::test::random_tensor(shape, seed, DType::f32, low, high);
}

// i64 values in [0, n) from a seeded generator.
Tensor indices(const Shape& shape, uint64_t seed, int64_t n) {
  std::vector<int64_t> v;
  for (double x : ordo::test::random_values(shape_numel(shape), seed, 0, 1))
    v.push_back(std::min<int64_t>(n - 1, static_cast<int64_t>(x * static_cast<double>(n))));
  return Tensor::from_vector(v, shape);
}

// Every element of a CUDA result has the CPU's bits; the first that differ are named.
void require_bits(const Tensor& on_gpu, const Tensor& on_cpu, const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_gpu.shape() == on_cpu.shape());
  REQUIRE(on_gpu.dtype() == on_cpu.dtype());
  const Tensor a = on_gpu.to(Device::cpu()).contiguous(), b = on_cpu.contiguous();
  const size_t size = dtype_size(a.dtype());
  const auto* pa = static_cast<const unsigned char*>(a.raw_data());
  const auto* pb = static_cast<const unsigned char*>(b.raw_data());
  int64_t differing = 0, first = -1;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i * size, pb + i * size, size) != 0 && differing++ == 0) first = i;
  INFO(differing << " of " << a.numel() << " elements differ, the first at [" << first << "]");
  REQUIRE(differing == 0);
}

// Every element within atol + rtol |cpu|.
void require_near(const Tensor& on_gpu, const Tensor& on_cpu, double rtol, double atol, const std::string& what) {
  REQUIRE(on_gpu.device().is_cuda());
  ordo::test::require_close(on_gpu.to(Device::cpu()), on_cpu, rtol, atol, what);
}

// Two f32 sums of at most n terms in different orders (CPU and CUDA), each
// within Higham and Mary's probabilistic bound lambda sqrt(n) u sum|terms|
// of the exact sum (lambda = 8: a failure from rounding alone below 1e-10
// an element), are within twice that of each other (cuda_vs_cpu.h's).
double pair_bound(int64_t n) { return 2 * 8 * std::sqrt(static_cast<double>(std::max<int64_t>(n, 1))) * kU; }

Tensor absolute(const Tensor& x) { return unary(UnaryOp::abs, x); }

// Each element a sum of at most n terms whose absolute values sum to
// magnitude's element (the op on the inputs' absolute values), then scaled
// once: within pair_bound(n) magnitude + 2u |cpu|.
void require_sums(const Tensor& on_gpu, const Tensor& on_cpu, const Tensor& magnitude, int64_t n,
                  const std::string& what) {
  REQUIRE(on_gpu.device().is_cuda());
  const std::vector<double> m = magnitude.to_doubles(), e = on_cpu.to_doubles();
  std::vector<double> tolerance(e.size());
  for (size_t i = 0; i < e.size(); ++i) tolerance[i] = pair_bound(n) * m[i] + 2 * kU * std::fabs(e[i]) + 1e-30;
  const std::vector<double> got = on_gpu.to(Device::cpu()).to_doubles();
  REQUIRE(got.size() == e.size());
  int64_t violations = 0, first = -1;
  for (size_t i = 0; i < e.size(); ++i)
    if (!(std::fabs(got[i] - e[i]) <= tolerance[i]) && violations++ == 0) first = static_cast<int64_t>(i);
  INFO(what << ": " << violations << " of " << e.size() << " elements beyond the bound, the first at [" << first
            << "]" << (first >= 0 ? detail::cat(": cuda ", got[static_cast<size_t>(first)], ", cpu ",
                                                e[static_cast<size_t>(first)]) : std::string()));
  REQUIRE(violations == 0);
}

// softmax's (or log-softmax's) gradient on CUDA against the CPU's, from
// the CPU's y and gy [rows, n]: the sum s = sum gy y (sum gy) within
// pair_bound(n) of its magnitude on each device, then a few roundings: 4u
// (|gx| + |gy| + p |s|), p = y (exp(y)).
void require_softmax_gradient(const Tensor& on_gpu, const Tensor& on_cpu, const Tensor& y, const Tensor& gy,
                              bool log) {
  const int64_t n = y.size(-1), rows = y.numel() / n;
  const std::vector<double> yv = y.to_doubles(), gv = gy.to_doubles(), ev = on_cpu.to_doubles(),
                            got = on_gpu.to(Device::cpu()).to_doubles();
  int64_t violations = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double magnitude = 0, sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      const double term = log ? gv[i] : gv[i] * yv[i];
      magnitude += std::fabs(term);
      sum += term;
    }
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      const double p = log ? std::exp(yv[i]) : yv[i];
      const double tolerance =
          p * pair_bound(n) * magnitude + 4 * kU * (std::fabs(ev[i]) + std::fabs(gv[i]) + p * std::fabs(sum)) + 1e-30;
      violations += !(std::fabs(got[i] - ev[i]) <= tolerance);
    }
  }
  INFO((log ? "log-softmax's gradient: " : "softmax's gradient: ") << violations << " elements beyond the bound");
  REQUIRE(violations == 0);
}

}  // namespace beyond_grid_cap

using namespace beyond_grid_cap;

TEST_CASE("beyond the grid cap: the random draws and dropout write every element, the CPU's values",
          "[cuda][grid]") {
  const ReleaseCachedBlocks release;
  REQUIRE(capped_threads() > 0);
  // The draws an element a thread; dropout four (16-byte aligned) or one.
  const int64_t draws = elements(1), n = elements(4);
  // uniform: the CPU's bits; normal and truncated normal within one f32 ulp
  // (Box-Muller in double with CUDA's log and cos: test_cuda.cpp's bound).
  Tensor c = Tensor::empty({draws}, DType::f32), g = Tensor::empty({draws}, DType::f32, kGpu);
  uniform_(c, -0.3, 1.7, 11, 5);
  uniform_(g, -0.3, 1.7, 11, 5);
  require_bits(g, c, "uniform");
  normal_(c, 0.5, 0.02, 11, 6);
  normal_(g, 0.5, 0.02, 11, 6);
  require_near(g, c, 0x1p-23, 0, "normal");
  trunc_normal_(c, 0, 1, 11, 7);
  trunc_normal_(g, 0, 1, 11, 7);
  require_near(g, c, 0x1p-23, 1e-30, "truncated normal");
  // Dropout: four elements a thread (16-byte aligned), one (misaligned), and
  // into bf16: the CPU's mask and bits.
  const Tensor base = values({n + 1}, 12), on_gpu = base.to(kGpu);
  for (int64_t offset : {0, 1}) {
    const Tensor x = base.slice(0, offset, offset + n), xg = on_gpu.slice(0, offset, offset + n);
    require_bits(dropout(xg, 0.3, 42, 3), dropout(x, 0.3, 42, 3), detail::cat("dropout, offset ", offset));
  }
  PhiloxStream stream;
  stream.seed = 42;
  stream.offset = 4;
  require_bits(dropout(on_gpu.slice(0, 0, n), 0.3, stream, DType::bf16),
               dropout(base.slice(0, 0, n), 0.3, stream, DType::bf16), "dropout into bf16");
}

TEST_CASE("beyond the grid cap: elementwise maps, affine_to, fill, copies and pad_slice write every element",
          "[cuda][grid]") {
  const ReleaseCachedBlocks release;
  const int64_t n = elements(4), one = elements(1);  // the float4 and chunk paths, and an element a thread
  const Tensor a = values({n + 1}, 21), b = values({n + 1}, 22);
  const Tensor ag = a.to(kGpu), bg = b.to(kGpu);
  // A map over aligned operands (four elements a thread), misaligned ones,
  // and strided views (an index a thread): add's bits.
  require_bits(add(ag.slice(0, 0, n), bg.slice(0, 0, n)), add(a.slice(0, 0, n), b.slice(0, 0, n)), "add, aligned");
  require_bits(add(ag.slice(0, 1, n + 1), bg.slice(0, 0, n)), add(a.slice(0, 1, n + 1), b.slice(0, 0, n)),
               "add, misaligned");
  const int64_t rows = 1001, cols = n / rows;
  auto transposed = [&](const Tensor& t) { return t.slice(0, 0, rows * cols).view({rows, cols}).transpose(0, 1); };
  require_bits(add(transposed(ag), transposed(bg)), add(transposed(a), transposed(b)), "add, strided");
  const Tensor ids = indices({one}, 23, 1 << 20);
  require_bits(affine_to(ids.to(kGpu), 0.5, -3, DType::f32), affine_to(ids, 0.5, -3, DType::f32), "affine_to");
  {
    Tensor filled = Tensor::empty({one}, DType::f32, kGpu);
    filled.fill_(0.625);
    require_bits(filled, Tensor::full({one}, 0.625, DType::f32), "fill");
  }
  // Copies: of rows (a column slice made contiguous, a chunk a thread), a
  // cast (f32 to bf16, strided), and a transpose (an element a thread).
  const Tensor wide = a.slice(0, 0, rows * cols).view({rows, cols});
  const Tensor wide_gpu = ag.slice(0, 0, rows * cols).view({rows, cols});
  require_bits(wide_gpu.slice(1, 1, cols).contiguous(), wide.slice(1, 1, cols).contiguous(), "copy of rows");
  require_bits(wide_gpu.transpose(0, 1).to(DType::bf16), wide.transpose(0, 1).to(DType::bf16), "cast, transposed");
  require_bits(wide_gpu.transpose(0, 1).contiguous(), wide.transpose(0, 1).contiguous(), "copy, transposed");
  // A slice's gradient placed in the whole: every other column of 2 cols.
  const Tensor g = values({rows, cols}, 24);
  require_bits(pad_slice(g.to(kGpu), {rows, 2 * cols}, 1, 0, 2), pad_slice(g, {rows, 2 * cols}, 1, 0, 2), "pad_slice");
}

TEST_CASE("beyond the grid cap: AdamW, rotary, split_heads and bias_activation write every element", "[cuda][grid]") {
  const ReleaseCachedBlocks release;
  const int64_t n = elements(4);
  {
    // Aligned (four a thread) and misaligned: a few f32 operations an
    // element, CUDA fusing multiply-adds the CPU rounds twice (test_cuda.cpp's
    // bounds: rtol 16u; atol 1e-8 for the parameter, 1e-7 for m, 1e-12 for v).
    for (int64_t offset : {0, 1}) {
      auto part = [&](const Tensor& t) { return t.slice(0, offset, offset + n); };
      const Tensor p = values({n + 1}, 31), m = values({n + 1}, 32, -0.1, 0.1), v = values({n + 1}, 33, 0.001, 0.01),
                   grad = values({n + 1}, 34);
      const Tensor pg = p.to(kGpu), mg = m.to(kGpu), vg = v.to(kGpu);
      AdamWStep s;
      s.lr = 1e-3;
      s.weight_decay = 0.01;
      s.step = 2;
      adamw_(part(p), part(grad), part(m), part(v), s);
      adamw_(part(pg), part(grad.to(kGpu)), part(mg), part(vg), s);
      const std::string what = detail::cat("adamw, offset ", offset);
      require_near(pg, p, 16 * kU, 1e-8, what + ": param");
      require_near(mg, m, 16 * kU, 1e-7, what + ": m");
      require_near(vg, v, 16 * kU, 1e-12, what + ": v");
    }
  }
  {
    // RoPE over [B, H, L, d] (a thread a pair): a c - b s and a s + b c of
    // values in [-1, 1], three roundings on the CPU (each at most u of a
    // value below 2), one fewer where CUDA fuses a multiply-add: within 8u.
    const int64_t B = 2, H = 4, d = 64, L = elements(2) / (B * H * d) + 1;
    const Tensor x = values({B, H, L, d}, 35), cosines = values({B, L, d / 2}, 36), sines = values({B, L, d / 2}, 37);
    require_near(rotary(x.to(kGpu), cosines.to(kGpu), sines.to(kGpu), false), rotary(x, cosines, sines, false), 0,
                 8 * kU, "rotary");
  }
  {
    // q | k | v and their bias into heads [3, B, H, L, d], and the bias and
    // GELU over [rows, c]: an element a thread, one sum (split_heads: the
    // CPU's bits) or the activation of one sum (bias_activation: CUDA's erff
    // within 2 ulp of glibc's, test_cuda.cpp's bound for GELU).
    const int64_t B = 2, heads = 4, d = 16, L = elements(1) / (B * 3 * heads * d) + 1;
    const Tensor x = values({B, L, 3 * heads * d}, 38), bias = values({3 * heads * d}, 39);
    require_bits(split_heads(x.to(kGpu), bias.to(kGpu), 3, heads, DType::f32),
                 split_heads(x, bias, 3, heads, DType::f32), "split_heads");
    const int64_t c = 768, rows = elements(1) / c + 1;
    const Tensor h = values({rows, c}, 40), hb = values({c}, 41);
    require_near(bias_activation(h.to(kGpu), hb.to(kGpu), UnaryOp::gelu, DType::f32),
                 bias_activation(h, hb, UnaryOp::gelu, DType::f32), 4e-6, 1e-6, "bias_activation (gelu)");
  }
}

TEST_CASE("beyond the grid cap: index_select, gather, embedding_sum, select_rows and their gradients",
          "[cuda][grid]") {
  const ReleaseCachedBlocks release;
  // The lookups move the CPU's bits; the gradients add a row's terms in the
  // CPU's order (tensor/backend.h), so they are its bits too. index_select
  // moves a row of 4 in one 16-byte word (a thread a lookup), and its
  // gradient takes a thread a lookup (the rows' keys) and an element of the
  // gradient (the rows' sums): both past the cap.
  {
    const int64_t d = 4, k = elements(1), rows = elements(1) / d + 1;
    const Tensor table = values({rows, d}, 51), ids = indices({k}, 52, rows), g = values({k, d}, 53);
    require_bits(index_select(table.to(kGpu), 0, ids.to(kGpu)), index_select(table, 0, ids), "index_select");
    require_bits(index_select_backward(g.to(kGpu), 0, ids.to(kGpu), {rows, d}),
                 index_select_backward(g, 0, ids, {rows, d}), "index_select's gradient");
  }
  // The others an element a thread.
  const int64_t d = 64, rows = 5000, k1 = elements(1) / d + 1;
  const Tensor table = values({rows, d}, 50), table_gpu = table.to(kGpu);
  const Tensor at = indices({k1, d}, 54, rows), g1 = values({k1, d}, 59);
  require_bits(gather(table_gpu, 0, at.to(kGpu)), gather(table, 0, at), "gather");
  require_bits(gather_backward(g1.to(kGpu), 0, at.to(kGpu), {rows, d}), gather_backward(g1, 0, at, {rows, d}),
               "gather's gradient");
  const Tensor ids2 = indices({1, k1}, 55, rows), positions = indices({1, k1}, 56, 512), small = values({512, d}, 57);
  require_bits(embedding_sum({table_gpu, small.to(kGpu)}, {ids2.to(kGpu), positions.to(kGpu)}),
               embedding_sum({table, small}, {ids2, positions}), "embedding_sum");
  // Every other row of a [2k, d] table, ascending: select_rows and its gradient.
  std::vector<int64_t> chosen;
  for (int64_t r = 0; r < k1; ++r) chosen.push_back(2 * r + 1);
  const Tensor picked = Tensor::from_vector(chosen, {k1}), whole = values({2 * k1, d}, 58);
  require_bits(select_rows(whole.to(kGpu), picked.to(kGpu), false).y, select_rows(whole, picked, false).y,
               "select_rows");
  require_bits(select_rows_backward(g1.to(kGpu), picked.to(kGpu), 2 * k1), select_rows_backward(g1, picked, 2 * k1),
               "select_rows' gradient");
}

TEST_CASE("beyond the grid cap: the relative and band kernels write every element", "[cuda][grid]") {
  const ReleaseCachedBlocks release;
  // Each op's shape just past the cap of each of its capped launches, with
  // short sums (the emulator runs every multiply-add).
  const int64_t cap = capped_threads();
  {
    // A thread an element of [B, H, L, J] (gather); a warp a row of B H L,
    // looping over the row's J keys (scatter, product: D products a key).
    const int64_t B = 2, H = 1, rows = cap / (32 * B * H) + 7, R = 9, D = 8;
    for (const int64_t J : {int64_t{33}, int64_t{2}}) {
      const Tensor x = values({B, H, rows, R}, 61), idx = indices({B, rows, J}, 62, R), g = values({B, H, rows, J}, 63);
      if (J == 33) {  // B H L J past the cap (and with 2 keys not)
        require_bits(relative_gather(x.to(kGpu), idx.to(kGpu)), relative_gather(x, idx), "relative_gather");
        continue;
      }
      require_sums(relative_scatter(g.to(kGpu), idx.to(kGpu), R), relative_scatter(g, idx, R),
                   relative_scatter(absolute(g), idx, R), J, "relative_scatter");
      const Tensor q = values({B, H, rows, D}, 64), k = values({B, H, J, D}, 65), a = values({H, R, D}, 66);
      require_sums(relative_product(q.to(kGpu), k.to(kGpu), a.to(kGpu), idx.to(kGpu), 0.5),
                   relative_product(q, k, a, idx, 0.5),
                   relative_product(absolute(q), absolute(k), absolute(a), idx, 0.5), D, "relative_product");
    }
  }
  {
    // The product's gradients: sums over the keys (gq), the queries (gk) and
    // a row's pairs (ga), after the pairs' keys (a thread a pair of [B, L,
    // J]); ga by pieces (a thread each of B H R D), then the batch's pieces
    // added (a thread each of H R D): L J and R D past the cap.
    const int64_t B = 2, H = 1, L = static_cast<int64_t>(std::sqrt(static_cast<double>(cap) / B)) + 7, J = L, D = 2,
                  R = cap / (H * D) + 1001;
    const Tensor q = values({B, H, L, D}, 67), k = values({B, H, J, D}, 68), a = values({H, R, D}, 69),
                 idx = indices({B, L, J}, 70, R), g = values({B, H, L, J}, 71);
    const RelativeProductGrads cpu = relative_product_backward(g, q, k, a, idx, 0.5, true, true, true);
    const RelativeProductGrads gpu = relative_product_backward(g.to(kGpu), q.to(kGpu), k.to(kGpu), a.to(kGpu),
                                                               idx.to(kGpu), 0.5, true, true, true);
    const RelativeProductGrads sizes = relative_product_backward(absolute(g), absolute(q), absolute(k), absolute(a),
                                                                 idx, 0.5, true, true, true);
    require_sums(gpu.gq, cpu.gq, sizes.gq, J, "relative_product's gq");
    require_sums(gpu.gk, cpu.gk, sizes.gk, L, "relative_product's gk");
    require_sums(gpu.ga, cpu.ga, sizes.ga, B * L * J, "relative_product's ga");
  }
  {
    // Banded terms: a thread an element of [B, H, L, L] (scores, D = 4
    // products each) and of [B, H, L, D] (apply, L each).
    const int64_t L = 32, D = 4, H = cap / (L * L) + 7;
    const Tensor x = values({1, H, L, D}, 71), table = values({1, 2 * L - 1, D}, 72);
    require_sums(band_scores(x.to(kGpu), table.to(kGpu)), band_scores(x, table),
                 band_scores(absolute(x), absolute(table)), D, "band_scores");
    const int64_t L2 = 8, D2 = 64, H2 = cap / (L2 * D2) + 7;
    const Tensor p = values({1, H2, L2, L2}, 73, 0, 1), table2 = values({1, 2 * L2 - 1, D2}, 74);
    require_sums(band_apply(p.to(kGpu), table2.to(kGpu)), band_apply(p, table2), band_apply(p, absolute(table2)), L2,
                 "band_apply");
    // The table's gradient [H, 2 L - 1, D]: a thread a piece (b, h, t, x), the
    // L - |distance| pairs of its distance, then the batch's pieces added.
    const int64_t B3 = 2, H3 = 256, L3 = 4, D3 = cap / (H3 * (2 * L3 - 1)) + 7;
    const Tensor gp = values({B3, H3, L3, L3}, 75), y = values({B3, H3, L3, D3}, 76);
    require_sums(band_table_grad(gp.to(kGpu), y.to(kGpu), H3), band_table_grad(gp, y, H3),
                 band_table_grad(absolute(gp), absolute(y), H3), B3 * L3, "band_table_grad");
  }
}

TEST_CASE("beyond the row kernels' grid cap: softmax, layernorm, cross-entropy and their fusions write every row",
          "[cuda][grid]") {
  const ReleaseCachedBlocks release;
  // Rows of 40 (a warp a row) past the cap's blocks of 4 rows, and rows of
  // 1,025 (a block a row) past its blocks; test_cuda_layers.cpp's bounds, per op.
  struct Rows {
    int64_t count, n;
  };
  for (const Rows shape : {Rows{capped_warp_rows() + 37, 40}, Rows{capped_block_rows() + 37, 1025}}) {
    const int64_t n = shape.n;
    INFO(shape.count << " rows of " << n);
    const Tensor x = values({shape.count, n}, 81, -3, 3), gy = values({shape.count, n}, 82);
    const Tensor xg = x.to(kGpu), gyg = gy.to(kGpu);
    // softmax: the sum of exponentials within pair_bound(n) plus expf's and
    // the online rescaling's roundings (64u); log-softmax: that absolute,
    // plus logf's and the last rounding's.
    const Tensor y = softmax(x), yg = softmax(xg);
    require_near(yg, y, pair_bound(n) + 64 * kU, 0, "softmax");
    require_near(log_softmax(xg), log_softmax(x), 1e-6, pair_bound(n) + 128 * kU, "log_softmax");
    // The gradients of softmax, y (gy - sum gy y), and of log-softmax,
    // gy - exp(y) sum gy: test_cuda_layers.cpp's bounds (the sums within
    // pair_bound(n) of their magnitudes, then a few roundings).
    require_softmax_gradient(softmax_backward(yg, gyg), softmax_backward(y, gy), y, gy, false);
    const Tensor ly = log_softmax(x);
    require_softmax_gradient(log_softmax_backward(ly.to(kGpu), gyg), log_softmax_backward(ly, gy), ly, gy, true);
    // softmax then dropout in one pass: y as softmax's, the dropped values
    // its mask's (the CPU's bits) times y.
    PhiloxStream stream;
    stream.seed = 9;
    stream.offset = 2;
    const SoftmaxDropoutResult both = softmax_dropout(x, Tensor(), 0.1, stream, DType::f32),
                               both_gpu = softmax_dropout(xg, Tensor(), 0.1, stream, DType::f32);
    require_near(both_gpu.y, both.y, pair_bound(n) + 64 * kU, 0, "softmax_dropout's y");
    require_near(both_gpu.out, both.out, pair_bound(n) + 66 * kU, 0, "softmax_dropout's output");
    // LayerNorm (x in [1, 3]): mean and rstd in double, rounded once; y and
    // the gradient a few roundings of terms below 8 (the backward from the
    // CPU's statistics on both devices).
    const Tensor shifted = values({shape.count, n}, 83, 1, 3), gamma = values({n}, 84, 0.5, 1.5),
                 beta = values({n}, 85);
    const LayerNormResult ln = layernorm(shifted, gamma, beta, 1e-5),
                          lng = layernorm(shifted.to(kGpu), gamma.to(kGpu), beta.to(kGpu), 1e-5);
    require_near(lng.mean, ln.mean, 2 * kU, 1e-9, "layernorm's mean");
    require_near(lng.rstd, ln.rstd, 2 * kU, 1e-9, "layernorm's rstd");
    require_near(lng.y, ln.y, 8 * kU, 128 * kU, "layernorm");
    require_near(layernorm_backward(gyg, shifted.to(kGpu), ln.mean.to(kGpu), ln.rstd.to(kGpu), gamma.to(kGpu)).gx,
                 layernorm_backward(gy, shifted, ln.mean, ln.rstd, gamma).gx, 8 * kU, 128 * kU, "layernorm's gx");
    // Cross-entropy: lse within pair_bound(n) + 128u; the gradient s exp(z -
    // lse) within that + 8u relative (s = 1 / rows).
    const Tensor targets = indices({shape.count}, 86, n);
    const CrossEntropyResult ce = cross_entropy(x, targets), ceg = cross_entropy(xg, targets.to(kGpu));
    const double lse_tol = pair_bound(n) + 128 * kU, s = 1.0 / static_cast<double>(shape.count);
    require_near(ceg.lse, ce.lse, 0, lse_tol, "cross-entropy's logsumexp");
    require_near(cross_entropy_backward(Tensor::scalar(1.0).to(kGpu), xg, ceg, targets.to(kGpu)),
                 cross_entropy_backward(Tensor::scalar(1.0), x, ce, targets), lse_tol + 8 * kU, (lse_tol + 8 * kU) * s,
                 "cross-entropy's gradient");
    // The same gradient with a bias added to the logits in the pass.
    const Tensor bias = values({n}, 87);
    const CrossEntropyResult biased = cross_entropy(x, targets, -100, bias),
                             biased_gpu = cross_entropy(xg, targets.to(kGpu), -100, bias.to(kGpu));
    require_near(cross_entropy_backward_with_bias(Tensor::scalar(1.0).to(kGpu), xg, bias.to(kGpu), biased_gpu,
                                                  targets.to(kGpu), -100, DType::f32).glogits,
                 cross_entropy_backward_with_bias(Tensor::scalar(1.0), x, bias, biased, targets, -100, DType::f32).glogits,
                 lse_tol + 8 * kU, (lse_tol + 8 * kU) * s, "cross-entropy's gradient with a bias");
    // LayerNorm of residual + dropout(h + bias) (p = 0.1, the CPU's mask): its
    // input within an ulp (CUDA may fuse the scale and the sum), so y and the
    // gradients within LayerNorm's bounds (terms below 8 here too).
    const Tensor h = values({shape.count, n}, 88), residual = values({shape.count, n}, 89);
    const ResidualLayerNormResult rl = residual_layernorm(h, bias, residual, gamma, beta, 1e-5, 0.1, stream),
                                  rlg = residual_layernorm(h.to(kGpu), bias.to(kGpu), residual.to(kGpu),
                                                           gamma.to(kGpu), beta.to(kGpu), 1e-5, 0.1, stream);
    require_near(rlg.y, rl.y, 8 * kU, 128 * kU, "residual_layernorm");
    const ResidualLayerNormGrads rg = residual_layernorm_backward(gy, rl, gamma, true, 0.1, stream, DType::f32),
                                 rgg = residual_layernorm_backward(gyg, rlg, gamma.to(kGpu), true, 0.1, stream,
                                                                   DType::f32);
    require_near(rgg.gresidual, rg.gresidual, 8 * kU, 128 * kU, "residual_layernorm's gradient of the residual");
    require_near(rgg.gh, rg.gh, 8 * kU, 160 * kU, "residual_layernorm's gradient of h");
  }
}

#endif  // ORDO_HAS_CUDA
