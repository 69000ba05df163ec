// The CUDA backend against the CPU backend: every kernel on fresh random
// inputs (never zeros) at odd sizes, with broadcast and strided operands. This
// file: the runtime, copies and fills, elementwise ops, reductions, Philox and
// dropout, AdamW, the caching allocator, run-to-run determinism and
// KernelTiming; the layers' kernels (products, softmax, layernorm,
// cross-entropy) are test_cuda_layers.cpp's, the indexing kernels
// test_cuda_indexing.cpp's; the shared checks and their bounds cuda_vs_cpu.h.
//
// These run only where a GPU is: `ordo_tests --require-gpu "[cuda]"` exits 77
// (ctest: skipped) on a machine without one. A build without CUDA compiles
// this file to nothing.
#ifdef ORDO_HAS_CUDA

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/tensor/cuda_vs_cpu.h"

using namespace ordo;
using namespace cuda_vs_cpu;

namespace {

// A view the kernel sees, made the same way from the same data on both devices.
struct Layout {
  std::string name;
  Shape base;                                 // shape of the random tensor
  std::function<Tensor(const Tensor&)> view;  // the operand made from it
};

// Elementwise kernels are checked on: dense vectors of odd lengths (the
// packed float4 path and its tail), a dense view one element off 16-byte
// alignment (the element-wise contiguous path), and strided 2-D views (the
// indexer path).
std::vector<Layout> elementwise_layouts() {
  std::vector<Layout> out;
  for (int64_t n : {1, 3, 17, 1000, 4097})
    out.push_back({"dense [" + std::to_string(n) + "]", {n}, [](const Tensor& t) { return t; }});
  out.push_back({"misaligned dense [17, 33]", {17 * 33 + 1},
                 [](const Tensor& t) { return t.slice(0, 1, 17 * 33 + 1).view({17, 33}); }});
  out.push_back({"transposed [17, 33]", {33, 17}, [](const Tensor& t) { return t.transpose(0, 1); }});
  out.push_back({"every other column [17, 33]", {17, 66}, [](const Tensor& t) { return t.slice(1, 0, 66, 2); }});
  return out;
}

// The values of an f32 tensor rounded to multiples of 0.5 (ties between elements).
Tensor on_half_grid(const Tensor& t) {
  std::vector<float> v = t.to_vector<float>();
  for (float& e : v) e = std::round(e * 2) / 2;
  return Tensor::from_vector(v, t.shape());
}

}  // namespace

// ---- runtime ----------------------------------------------------------------------------

TEST_CASE("cuda: the device is described and host/device copies are exact", "[cuda]") {
  REQUIRE(cuda_compiled());
  REQUIRE(cuda_device_count() >= 1);
  CHECK_THAT(cuda_device_description(0), Catch::Contains("sm_"));
  for (DType dt : {DType::f32, DType::f64, DType::i64, DType::i32, DType::u8}) {
    Tensor host = random_tensor({1000, 3}, 1, DType::f64, 0, 250).to(dt);
    Tensor there = gpu(host);
    CHECK(there.device() == kGpu);
    CHECK(bit_identical(there.to(kCpu), host));
    Tensor again = there.to(kGpu);  // same device: the same handle
    CHECK(again.shares_storage_with(there));
  }
  CHECK_THROWS_WITH(Tensor::empty({2}, DType::f32, Device::cuda(cuda_device_count())),
                    Catch::Contains("does not exist"));
}

// ---- copy and fill -------------------------------------------------------------------------

TEST_CASE("cuda: copy casts between every pair of dtypes exactly as the CPU", "[cuda]") {
  // Values in [0, 200) with fractions: representable in every dtype's range
  // (u8 included), so every cast is defined. Casts round once, identically on
  // both devices: bit-identical results are required.
  const DType all[] = {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i64, DType::i32, DType::u8};
  Tensor base = random_tensor({37, 29}, 2, DType::f64, 0, 200);
  for (DType from : all) {
    Tensor src = base.to(from);
    Tensor src_gpu = gpu(src);
    for (DType to : all) {
      std::string what = std::string(dtype_name(from)) + " -> " + dtype_name(to);
      check_identical(src_gpu.to(to), src.to(to), what + " (dense)");
      check_identical(src_gpu.transpose(0, 1).to(to), src.transpose(0, 1).to(to), what + " (transposed)");
    }
  }
}

TEST_CASE("cuda: copy into strided destinations and from broadcast sources", "[cuda]") {
  Tensor big = rand_f32({20, 30}, 3), big_gpu = gpu(big);
  Tensor row = rand_f32({1, 15}, 4);
  // Destination: every other column of rows 2..12; source: one row broadcast.
  big.slice(0, 2, 12).slice(1, 0, 30, 2).copy_from(row);
  big_gpu.slice(0, 2, 12).slice(1, 0, 30, 2).copy_from(gpu(row));
  check_identical(big_gpu, big, "strided destination, broadcast source");
  // Transposed destination with a cast.
  Tensor dst = Tensor::zeros({30, 20}, DType::f64), dst_gpu = gpu(dst);
  dst.transpose(0, 1).copy_from(big);
  dst_gpu.transpose(0, 1).copy_from(big_gpu);
  check_identical(dst_gpu, dst, "transposed f64 destination from f32");
  // concat / split are copies into slices.
  Tensor a = rand_f32({3, 5, 7}, 5), b = rand_f32({3, 2, 7}, 6);
  check_identical(concat({gpu(a), gpu(b)}, 1), concat({a, b}, 1), "concat along axis 1");
}

namespace {

// The kernels one GPU copy launched, by name (a device-to-device memcpy launches none).
std::vector<std::string> kernels_of(const std::function<void()>& work) {
  KernelTiming timing;
  work();
  std::vector<std::string> names;
  for (const KernelTime& k : timing.stop()) names.push_back(k.kernel);
  return names;
}

}  // namespace

// A copy between two dense tensors of one dtype is a cudaMemcpyAsync, which
// launches no kernel of ordo's but is a stream operation all the same:
// `ordo bench step` counts it with the launches (DeviceCounters::device_copies).
TEST_CASE("cuda: a dense device-to-device copy is counted as a device copy, a strided one as a launch", "[cuda]") {
  const Tensor host = rand_f32({6, 5}, 9);
  const Tensor src = gpu(host);
  const Tensor dense = Tensor::empty({6, 5}, DType::f32, kGpu), strided = Tensor::empty({5, 6}, DType::f32, kGpu);
  synchronize(kGpu);
  reset_device_counters();
  dense.copy_from(src);
  CHECK(device_counters().device_copies == 1);
  CHECK(device_counters().kernel_launches == 0);
  strided.copy_from(src.transpose(0, 1));
  CHECK(device_counters().device_copies == 1);
  CHECK(device_counters().kernel_launches == 1);
  check_identical(dense, host, "dense copy");
  check_identical(strided, host.transpose(0, 1).contiguous(), "strided copy");
}

// Copies whose innermost axis is contiguous on both sides (a cast to bf16, q,
// k and v taken out of the stacked product, heads split and merged) move a
// 16-byte chunk of the narrower side per thread: 16-byte loads and stores
// where every row starts 16-byte aligned on both sides, element by element
// otherwise and in a row's last, partial chunk (aligned rows, where there
// are several, are whole chunks: only a single row ends in a partial one).
// Each layout below is made to take one of the two kernels (checked by
// name), and every pair of dtypes the step uses gives the CPU's bits.
TEST_CASE("cuda: copies of contiguous rows move whole chunks, aligned or not, with the CPU's bits", "[cuda]") {
  struct RowLayout {
    std::string name;
    Shape base;
    std::function<Tensor(const Tensor&)> view;
    std::string kernel;  // the copy kernel this layout takes
  };
  auto split_heads = [](int64_t d) {  // [B, L, 3, H, d] -> k of [B, H, L, d]
    return [d](const Tensor& t) { return t.view({2, 5, 3, 4, d}).select(2, 1).transpose(1, 2); };
  };
  const std::vector<RowLayout> layouts = {
      {"heads split, d = 32 (whole chunks)", {2 * 5 * 3 * 4 * 32}, split_heads(32), "copy_rows_kernel<true>"},
      {"heads split, d = 21 (row starts off 16 bytes, a partial chunk a row)", {2 * 5 * 3 * 4 * 21}, split_heads(21),
       "copy_rows_kernel<false>"},
      {"dense [4099] (one row, a partial chunk)", {4099}, [](const Tensor& t) { return t; }, "copy_rows_kernel<true>"},
      {"rows of 33 of 34 (row starts off 16 bytes)", {40, 34}, [](const Tensor& t) { return t.slice(1, 0, 33); },
       "copy_rows_kernel<false>"},
      {"dense, one element off alignment", {1 + 24 * 32},
       [](const Tensor& t) { return t.slice(0, 1, 1 + 24 * 32).view({24, 32}); }, "copy_rows_kernel<false>"},
  };
  const std::pair<DType, DType> casts[] = {{DType::f32, DType::bf16}, {DType::bf16, DType::f32},
                                           {DType::f64, DType::f32},  {DType::f32, DType::f64},
                                           {DType::f32, DType::f16},  {DType::u8, DType::f32}};
  for (const RowLayout& layout : layouts) {
    const Tensor base = random_tensor(layout.base, 11, DType::f64, 0, 200);
    for (auto [from, to] : casts) {
      const std::string what = layout.name + ", " + dtype_name(from) + " -> " + dtype_name(to);
      const Tensor src = layout.view(base.to(from)), src_gpu = layout.view(gpu(base.to(from)));
      Tensor out_gpu;
      const std::vector<std::string> kernels = kernels_of([&] { out_gpu = src_gpu.to(to); });
      INFO(what);
      CHECK(kernels == std::vector<std::string>{layout.kernel});
      check_identical(out_gpu, src.to(to), what);
    }
    // The same dtype: bits moved as words (a plain memcpy where both are contiguous).
    const Tensor src = layout.view(base.to(DType::bf16)), src_gpu = layout.view(gpu(base.to(DType::bf16)));
    check_identical(src_gpu.contiguous(), src.contiguous(), layout.name + ", bf16 words");
  }
  // A destination whose rows are a slice of wider rows.
  Tensor wide = Tensor::zeros({6, 40}, DType::bf16), wide_gpu = gpu(wide);
  const Tensor rows = rand_f32({6, 24}, 12);
  wide.slice(1, 8, 32).copy_from(rows);
  const std::vector<std::string> kernels = kernels_of([&] { wide_gpu.slice(1, 8, 32).copy_from(gpu(rows)); });
  CHECK(kernels == std::vector<std::string>{"copy_rows_kernel<true>"});  // bf16 rows 80 bytes apart, from byte 16
  check_identical(wide_gpu, wide, "into a slice of wider rows");
}

TEST_CASE("cuda: fill writes the CPU's bits for every dtype", "[cuda]") {
  const DType all[] = {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i64, DType::i32, DType::u8};
  for (DType dt : all) {
    for (double v : {0.0, 1.5, 100.25, 0.1}) {
      for (int64_t n : {1, 3, 4097}) {
        check_identical(Tensor::full({n}, v, dt, kGpu), Tensor::full({n}, v, dt, kCpu),
                        detail::cat(dtype_name(dt), " fill ", v, " n=", n));
      }
    }
    if (dt != DType::u8)
      check_identical(Tensor::full({17}, -3.25, dt, kGpu), Tensor::full({17}, -3.25, dt, kCpu),
                      detail::cat(dtype_name(dt), " fill -3.25"));
  }
  // A non-contiguous fill goes through copy.
  Tensor t = rand_f32({8, 9}, 7), tg = gpu(t);
  t.slice(1, 1, 9, 3).fill_(2.5);
  tg.slice(1, 1, 9, 3).fill_(2.5);
  check_identical(tg, t, "strided fill");
}

// ---- elementwise -------------------------------------------------------------------------

TEST_CASE("cuda: unary ops and their derivatives match the CPU", "[cuda]") {
  // f32, every layout. The CPU calls glibc's f32 functions, CUDA its own;
  // each is within a few ulp (CUDA Math API accuracy tables: expf 2, logf 1,
  // tanhf 2, erff 2, powf 4 ulp), and a formula chains at most three of them
  // with a few roundings in between: rtol 4e-6 (about 64 u). Near the zeros of
  // 1 + erf and 1 + tanh (GELU at x ~ -3) the relative error grows while the
  // absolute error stays a few ulp of 1 times |x| <= 3: atol 1e-6.
  struct Case {
    UnaryOp op;
    UnaryParams params;
    double low, high;
  };
  const Case cases[] = {
      {UnaryOp::neg, {}, -3, 3},        {UnaryOp::exp, {}, -3, 3},      {UnaryOp::log, {}, 0.1, 4},
      {UnaryOp::sqrt, {}, 0.1, 4},      {UnaryOp::rsqrt, {}, 0.1, 4},   {UnaryOp::tanh, {}, -3, 3},
      {UnaryOp::erf, {}, -3, 3},        {UnaryOp::relu, {}, -3, 3},     {UnaryOp::gelu, {}, -3, 3},
      {UnaryOp::gelu_tanh, {}, -3, 3},  {UnaryOp::sigmoid, {}, -3, 3},  {UnaryOp::abs, {}, -3, 3},
      {UnaryOp::pow, {3, 0}, 0.1, 4},   {UnaryOp::pow, {-1.5, 0}, 0.1, 4},
      {UnaryOp::affine, {1.5, -0.25}, -3, 3},
  };
  const double rtol = 4e-6, atol = 1e-6;
  uint64_t seed = 100;
  for (const Case& c : cases) {
    for (const Layout& layout : elementwise_layouts()) {
      const std::string what = detail::cat(unary_name(c.op), "(p=", c.params.p, ") on ", layout.name);
      Tensor base = rand_f32(layout.base, ++seed, c.low, c.high);
      Tensor x = layout.view(base), x_gpu = layout.view(gpu(base));
      Tensor y = unary(c.op, x, c.params);
      check_close(unary(c.op, x_gpu, c.params), y, rtol, atol, what);
      // The derivative, from the same x, y (the CPU's) and a random gy on both devices.
      Tensor gy = rand_f32(x.shape(), ++seed);
      check_close(unary_backward(c.op, gpu(x.contiguous()), gpu(y), gpu(gy), c.params),
                  unary_backward(c.op, x.contiguous(), y, gy, c.params), rtol, atol, what + " backward");
    }
  }
}

TEST_CASE("cuda: binary ops broadcast and match the CPU bit for bit", "[cuda]") {
  // +, -, *, / are correctly rounded IEEE operations on both devices, max/min
  // and the comparisons are exact: results must be bit-identical.
  struct Case {
    std::string name;
    Shape a_base, b;
    bool transpose_a;
  };
  const Case cases[] = {
      {"[4097] op [4097]", {4097}, {4097}, false},
      {"[17, 33] op [33]", {17, 33}, {33}, false},
      {"[1] op [1000]", {1}, {1000}, false},
      {"[3, 1, 5] op [1, 4, 1]", {3, 1, 5}, {1, 4, 1}, false},
      {"[17, 33] transposed op [17, 1]", {33, 17}, {17, 1}, true},
      {"[1000] op scalar", {1000}, {}, false},
  };
  const BinaryOp ops[] = {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div,
                          BinaryOp::maximum, BinaryOp::minimum, BinaryOp::eq, BinaryOp::ne,
                          BinaryOp::lt, BinaryOp::le, BinaryOp::gt, BinaryOp::ge};
  uint64_t seed = 200;
  for (const Case& c : cases) {
    // f32 on a grid of halves, so that eq, le and ge also meet equal pairs;
    // b >= 0.5 (a divisor). b op a divides by a zero now and then: +-inf on both.
    Tensor a_base = on_half_grid(rand_f32(c.a_base, ++seed, -4, 4));
    Tensor b = on_half_grid(rand_f32(c.b, ++seed, 0.5, 4));
    Tensor a = c.transpose_a ? a_base.transpose(0, 1) : a_base;
    Tensor a_gpu = c.transpose_a ? gpu(a_base).transpose(0, 1) : gpu(a_base);
    // i64: integers in [-1000, 1000], divisors nonzero.
    Tensor ia_base = i64_tensor(random_ints(shape_numel(c.a_base), ++seed, -1000, 1000), c.a_base);
    std::vector<int64_t> ib_values = random_ints(shape_numel(c.b), ++seed, 1, 50);
    for (size_t i = 0; i < ib_values.size(); i += 2) ib_values[i] = -ib_values[i];
    Tensor ib = i64_tensor(ib_values, c.b);
    Tensor ia = c.transpose_a ? ia_base.transpose(0, 1) : ia_base;
    Tensor ia_gpu = c.transpose_a ? gpu(ia_base).transpose(0, 1) : gpu(ia_base);
    for (BinaryOp op : ops) {
      check_identical(binary(op, a_gpu, gpu(b)), binary(op, a, b), c.name + " f32 " + binary_name(op));
      check_identical(binary(op, gpu(b), a_gpu), binary(op, b, a), c.name + " f32 swapped " + binary_name(op));
      check_identical(binary(op, ia_gpu, gpu(ib)), binary(op, ia, ib), c.name + " i64 " + binary_name(op));
    }
  }
  // Equal elements do occur (the comparisons above are not all one-sided).
  Tensor a = i64_tensor({1, 2, 3, 4}, {4}), b = i64_tensor({1, 5, 3, 0}, {4});
  check_identical(eq(gpu(a), gpu(b)), eq(a, b), "eq with ties");
}

TEST_CASE("cuda: in-place add and where match the CPU bit for bit", "[cuda]") {
  for (int64_t n : {1, 17, 4097}) {
    Tensor acc = rand_f32({3, n}, 300 + n), row = rand_f32({n}, 301 + n);
    Tensor acc_gpu = gpu(acc);
    add_(acc, row);
    add_(acc_gpu, gpu(row));
    check_identical(acc_gpu, acc, detail::cat("add_ of a broadcast row, n=", n));
    add_(acc, acc);  // aliasing: a += a
    add_(acc_gpu, acc_gpu);
    check_identical(acc_gpu, acc, detail::cat("add_ of itself, n=", n));
  }
  Tensor x = rand_f32({17, 33}, 310), a = rand_f32({33}, 311), b = rand_f32({17, 1}, 312);
  Tensor cond = gt(x, Tensor::scalar(0.0));
  check_identical(where(gpu(cond), gpu(a), gpu(b)), where(cond, a, b), "where f32 broadcast");
  Tensor ci = i64_tensor(random_ints(17 * 33, 313, 0, 1), {17, 33});
  Tensor ia = i64_tensor(random_ints(33, 314, -9, 9), {33}), ib = i64_tensor(random_ints(17, 315, -9, 9), {17, 1});
  check_identical(where(gpu(ci), gpu(ia), gpu(ib)), where(ci, ia, ib), "where i64 broadcast");
}

// ---- reductions ------------------------------------------------------------------------------

TEST_CASE("cuda: reductions over chosen axes match the CPU", "[cuda]") {
  // sum, mean, var: both devices accumulate in double and round to f32 once;
  // the double sums differ only in order (relative ~1e-16 of sum|x|), so the
  // f32 results are at most one rounding apart: rtol 2 u, and atol 1e-9 for
  // results near zero where the double-level difference can cross a rounding
  // boundary. max, min, argmax pick an element: bit-identical.
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  const Case cases[] = {
      {{4097}, {}},            {{17, 1000}, {0}},        {{17, 1000}, {1}},
      {{3, 17, 33}, {0, 2}},   {{5, 4097, 3}, {1}},      {{1, 1}, {}},
      {{2, 300001}, {1}},      {{300001, 3}, {0}},       {{64, 3}, {1}},
      {{7, 5, 6}, {1}},
  };
  uint64_t seed = 400;
  for (const Case& c : cases) {
    Tensor x = rand_f32(c.shape, ++seed, -1, 2);
    Tensor xg = gpu(x);
    const std::string what = detail::cat(shape_str(c.shape), " over ", c.axes.size(), " axes");
    check_close(ordo::sum(xg, c.axes), ordo::sum(x, c.axes), 2 * kU, 1e-9, "sum " + what);
    check_close(ordo::mean(xg, c.axes), ordo::mean(x, c.axes), 2 * kU, 1e-9, "mean " + what);
    check_close(ordo::var(xg, c.axes), ordo::var(x, c.axes), 2 * kU, 1e-9, "var " + what);
    int64_t reduced = 1;
    for (size_t d = 0; d < c.shape.size(); ++d)
      if (c.axes.empty() || std::count(c.axes.begin(), c.axes.end(), static_cast<int>(d))) reduced *= c.shape[d];
    if (reduced > 1)
      check_close(ordo::var(xg, c.axes, true, 1), ordo::var(x, c.axes, true, 1), 2 * kU, 1e-9,
                  "var (correction 1, keepdim) " + what);
    check_identical(ordo::max(xg, c.axes), ordo::max(x, c.axes), "max " + what);
    check_identical(ordo::min(xg, c.axes), ordo::min(x, c.axes), "min " + what);
    if (c.axes.size() == 1) {
      // Few distinct values, so the first of several maxima must be found.
      Tensor ties = on_half_grid(x);
      check_identical(ordo::argmax(gpu(ties), c.axes[0]), ordo::argmax(ties, c.axes[0]), "argmax (ties) " + what);
      check_identical(ordo::argmax(xg, c.axes[0]), ordo::argmax(x, c.axes[0]), "argmax " + what);
    }
  }
  // An empty reduced axis sums to 0.
  check_identical(ordo::sum(gpu(Tensor::empty({3, 0}, DType::f32)), {1}), ordo::sum(Tensor::empty({3, 0}, DType::f32), {1}),
                  "sum over an empty axis");
}

TEST_CASE("cuda: max, min and argmax propagate NaN as the CPU", "[cuda]") {
  Tensor x = rand_f32({6, 50}, 450);
  std::vector<float> v = x.to_vector<float>();
  v[3 * 50 + 17] = std::numeric_limits<float>::quiet_NaN();
  v[3 * 50 + 30] = std::numeric_limits<float>::quiet_NaN();
  v[5 * 50 + 0] = std::numeric_limits<float>::quiet_NaN();
  Tensor xn = Tensor::from_vector(v, {6, 50});
  check_identical(ordo::max(gpu(xn), {1}), ordo::max(xn, {1}), "max with NaN rows");
  check_identical(ordo::min(gpu(xn), {1}), ordo::min(xn, {1}), "min with NaN rows");
  check_identical(ordo::argmax(gpu(xn), 1), ordo::argmax(xn, 1), "argmax: the first NaN");
  check_identical(ordo::max(gpu(xn), {0}), ordo::max(xn, {0}), "max over columns with NaN");
}

TEST_CASE("cuda: the sum of squares (global norm) matches the CPU", "[cuda]") {
  // Both accumulate x^2 in double and round once: rtol 2 u on the sum of
  // squares, so about u on its square root.
  std::vector<Tensor> cpu_tensors = {rand_f32({1}, 460), rand_f32({17, 33}, 461), rand_f32({3000017}, 462),
                                     rand_f32({4097}, 463, -50, 50)};
  std::vector<Tensor> gpu_tensors;
  for (const Tensor& t : cpu_tensors) gpu_tensors.push_back(gpu(t));
  const double cpu_norm = global_norm(cpu_tensors), gpu_norm = global_norm(gpu_tensors);
  CHECK(std::fabs(gpu_norm - cpu_norm) <= 2 * kU * cpu_norm);
  for (size_t i = 0; i < cpu_tensors.size(); ++i) {
    const double c = global_norm({cpu_tensors[i]}), g = global_norm({gpu_tensors[i]});
    CHECK(std::fabs(g - c) <= 2 * kU * c);
  }
}

// ---- randomness ----------------------------------------------------------------------------

TEST_CASE("cuda: Philox draws and dropout masks equal the CPU's", "[cuda]") {
  // uniform: the same integer words and exact conversions, the affine map
  // rounded the CPU's way: bit-identical. normal / truncated normal: Box-Muller
  // in double with CUDA's log and cos (within 1-2 ulp of double of the host's),
  // so after rounding to f32 within one f32 ulp: rtol 2^-23.
  for (int64_t n : {1, 17, 4097, 1000003}) {
    for (uint64_t seed : {uint64_t(1), uint64_t(0x123456789abcdefULL)}) {
      const std::string what = detail::cat("n=", n, " seed=", seed);
      Tensor c = Tensor::empty({n}, DType::f32), g = Tensor::empty({n}, DType::f32, kGpu);
      uniform_(c, -0.3, 1.7, seed, 5);
      uniform_(g, -0.3, 1.7, seed, 5);
      check_identical(g, c, "uniform " + what);
      normal_(c, 0.5, 0.02, seed, 6);
      normal_(g, 0.5, 0.02, seed, 6);
      check_close(g, c, 0x1p-23, 0, "normal " + what);
      trunc_normal_(c, 0, 1, seed, 7);
      trunc_normal_(g, 0, 1, seed, 7);
      check_close(g, c, 0x1p-23, 1e-30, "truncated normal " + what);
    }
  }
  // Dropout: mask and scale bit-identical, aligned and misaligned inputs.
  for (double p : {0.0, 0.1, 0.5, 0.9}) {
    for (int64_t n : {1, 17, 4097, 100003}) {
      Tensor base = rand_f32({n + 1}, 1400 + n);
      for (int64_t offset : {0, 1}) {
        Tensor x = base.slice(0, offset, offset + n);
        Tensor xg = gpu(base).slice(0, offset, offset + n);
        check_identical(dropout(xg, p, 42, 3), dropout(x, p, 42, 3),
                        detail::cat("dropout p=", p, " n=", n, " offset=", offset));
      }
    }
  }
}

// ---- AdamW -------------------------------------------------------------------------------------

TEST_CASE("cuda: AdamW steps match the CPU", "[cuda]") {
  // Each step is a few f32 operations per element on both devices; CUDA may
  // fuse multiply-adds the CPU rounds twice (one rounding fewer). Over three
  // steps: m = 0.9 m + 0.1 g can cancel, so its error is a few roundings of
  // terms <= 0.2: atol 1e-7, rtol 16u. v sums positive terms: rtol 16u.
  // param changes by lr (<= 3e-3) times an update of size ~1 whose error is a
  // few u, plus one rounding of |param| per step: rtol 16u, atol 1e-8.
  for (int64_t n : {1, 17, 4097, 100001}) {
    Tensor p = rand_f32({n}, 1500 + n), m = rand_f32({n}, 1501 + n, -0.1, 0.1),
           v = rand_f32({n}, 1502 + n, 0.001, 0.01);
    Tensor pg = gpu(p), mg = gpu(m), vg = gpu(v);
    for (int64_t step = 1; step <= 3; ++step) {
      Tensor grad = rand_f32({n}, 1503 + n + step);
      AdamWStep s;
      s.lr = 1e-3 * step;
      s.weight_decay = 0.01;
      s.step = step;
      s.grad_scale = 0.8;
      adamw_(p, grad, m, v, s);
      adamw_(pg, gpu(grad), mg, vg, s);
    }
    const std::string what = detail::cat("adamw n=", n);
    check_close(pg, p, 16 * kU, 1e-8, what + " param");
    check_close(mg, m, 16 * kU, 1e-7, what + " m");
    check_close(vg, v, 16 * kU, 1e-12, what + " v");
  }
}

// ---- the caching allocator ---------------------------------------------------------------------

TEST_CASE("cuda: a steady-state training step makes no cudaMalloc", "[cuda]") {
  // The ops of a small transformer step, the same shapes every iteration.
  const int64_t B = 4, L = 33, D = 64, V = 101;
  Tensor w = gpu(rand_f32({D, D}, 1600)), gamma = gpu(rand_f32({D}, 1601, 0.5, 1.5)),
         beta = gpu(rand_f32({D}, 1602)), table = gpu(rand_f32({V, D}, 1603)),
         head = gpu(rand_f32({D, V}, 1604));
  Tensor m = Tensor::zeros({D, D}, DType::f32, kGpu), v = Tensor::zeros({D, D}, DType::f32, kGpu);
  Tensor ids = gpu(i64_tensor(random_ints(B * L, 1605, 0, V - 1), {B, L}));
  Tensor targets = gpu(i64_tensor(random_ints(B * L, 1606, 0, V - 1), {B * L}));
  Tensor mask = gpu(rand_f32({B, 1, 1, L}, 1607, -1, 0));
  int64_t step_number = 0;
  auto step = [&]() {
    ++step_number;
    Tensor h = embedding(table, ids);                                  // [B, L, D]
    LayerNormResult ln = layernorm(h, gamma, beta, 1e-5);
    Tensor scores = matmul(ln.y, ln.y, false, true);                   // [B, L, L]
    Tensor probs = softmax(scores.unsqueeze(1), mask);                 // [B, 1, L, L]
    Tensor mixed = matmul(probs.squeeze(1), ln.y);                     // [B, L, D]
    Tensor act = gelu(matmul(dropout(mixed, 0.1, 9, step_number), w));
    Tensor logits = matmul(act, head).reshape({B * L, V});
    CrossEntropyResult ce = cross_entropy(logits, targets);
    Tensor glogits = cross_entropy_backward(Tensor::scalar(1.0, DType::f32, kGpu), logits, ce, targets);
    Tensor gact = matmul(glogits.reshape({B, L, V}), head, false, true);
    Tensor gw = sum(matmul(mixed, gact, true, false), {0});
    LayerNormGrads lg = layernorm_backward(gact, h, ln.mean, ln.rstd, gamma);
    Tensor gtable = embedding_backward(lg.gx, ids, V);
    AdamWStep s;
    s.step = step_number;
    adamw_(w, gw, m, v, s);
    return ce.loss.item() + global_norm({gtable, lg.ggamma});  // reads back: a sync per step
  };
  for (int i = 0; i < 5; ++i) step();  // warm-up fills the cache
  const AllocatorStats before = allocator_stats(kGpu);
  for (int i = 0; i < 20; ++i) step();
  synchronize(kGpu);
  const AllocatorStats after = allocator_stats(kGpu);
  CHECK(after.device_mallocs == before.device_mallocs);
  CHECK(after.allocations > before.allocations + 20 * 10);  // the loop did allocate, from the cache
  CHECK(after.bytes_in_use == before.bytes_in_use);          // and gave everything back
  CHECK(after.peak_bytes_in_use >= after.bytes_in_use);
  // Releasing the cache empties it; the next allocation must come from the driver.
  empty_cache(kGpu);
  CHECK(allocator_stats(kGpu).bytes_cached == 0);
  Tensor fresh = Tensor::empty({12345}, DType::f32, kGpu);
  CHECK(allocator_stats(kGpu).device_mallocs == after.device_mallocs + 1);
  reset_peak_memory(kGpu);
  CHECK(allocator_stats(kGpu).peak_bytes_in_use == allocator_stats(kGpu).bytes_in_use);
}

// ---- determinism -------------------------------------------------------------------------------

TEST_CASE("cuda: reductions, layernorm backward and index_add are bit-identical across runs", "[cuda]") {
  auto run = [](uint64_t seed) {
    Tensor x = gpu(rand_f32({3000017}, seed)), rows = gpu(rand_f32({4096, 768}, seed + 1));
    Tensor gamma = gpu(rand_f32({768}, seed + 2)), beta = gpu(rand_f32({768}, seed + 3));
    Tensor gy = gpu(rand_f32({4096, 768}, seed + 4));
    LayerNormResult ln = layernorm(rows, gamma, beta, 1e-5);
    LayerNormGrads lg = layernorm_backward(gy, rows, ln.mean, ln.rstd, gamma);
    std::vector<int64_t> ids = random_ints(4096, seed + 5, 0, 99);
    for (size_t i = 0; i < ids.size(); i += 2) ids[i] = 3;  // half the rows hit one entry
    Tensor id_tensor = gpu(i64_tensor(ids, {4096}));
    Tensor gidx = gpu(i64_tensor(random_ints(4096 * 8, seed + 6, 0, 3), {4096, 8}));
    return std::vector<Tensor>{sum(x),
                               sum(rows, {0}),
                               var(rows, {1}),
                               softmax(rows),
                               ln.y,
                               lg.gx,
                               lg.ggamma,
                               lg.gbeta,
                               embedding_backward(gy, id_tensor, 100),
                               gather_backward(gpu(rand_f32({4096, 8}, seed + 7)), 1, gidx, {4096, 4}),
                               cross_entropy(rows, id_tensor).loss,
                               Tensor::scalar(global_norm({rows}), DType::f64)};
  };
  std::vector<Tensor> first = run(17), second = run(17);
  REQUIRE(first.size() == second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    INFO("result " << i);
    CHECK(first[i].device().is_cuda() == (i + 1 < first.size()));
    CHECK(bit_identical(first[i], second[i]));
  }
}

// KernelTiming's spans against what the device counted on its own: each of
// ordo's launches once under its kernel's name, each product once under
// cuBLAS's, nothing while a graph replays; one timing at a time.
TEST_CASE("cuda: KernelTiming names every launch and product of the work it brackets", "[cuda]") {
  const Tensor a = gpu(rand_f32({6, 9}, 1)), b = gpu(rand_f32({9, 5}, 2));
  auto work = [&] { return softmax(matmul(a, b)); };
  work();
  synchronize(kGpu);
  reset_device_counters();
  KernelTiming timing;
  CHECK_THROWS_WITH(KernelTiming(), Catch::Contains("another timing is open"));
  for (int i = 0; i < 3; ++i) work();
  const int64_t launched = device_counters().kernel_launches;
  const CudaGraph graph = CudaGraph::capture(kGpu, [&] { work(); });
  graph.replay();
  const std::vector<KernelTime> times = timing.stop();
  int64_t kernels = 0, products = 0, softmaxes = 0;
  for (size_t i = 0; i < times.size(); ++i) {
    CHECK(times[i].seconds >= 0);
    if (i > 0) CHECK(times[i - 1].seconds >= times[i].seconds);  // the longest first
    if (times[i].kernel == "cublas gemm (fp32)") products += times[i].calls;
    else kernels += times[i].calls;
    if (times[i].kernel.rfind("softmax_", 0) == 0) softmaxes += times[i].calls;  // a warp or a block a row
  }
  CHECK(products == 3);
  CHECK(softmaxes == 3);
  CHECK(kernels == launched);
  CHECK(timing.stop().empty());  // stopped once
  KernelTiming next;             // and the next may open
  work();
  const std::vector<KernelTime> again = next.stop();
  CHECK(!again.empty());
}

#endif  // ORDO_HAS_CUDA
