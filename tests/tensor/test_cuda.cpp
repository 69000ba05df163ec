// The CUDA backend against the CPU backend: every kernel on fresh random
// inputs (never zeros) at odd sizes, with broadcast and strided operands; and
// what only the GPU side has: the caching allocator, device-side index
// errors, TF32, and run-to-run determinism of the reductions.
//
// These run only where a GPU is: `ordo_tests --require-gpu "[cuda]"` exits 77
// (ctest: skipped) on a machine without one. A build without CUDA compiles
// this file to nothing.
//
// Tolerances. u = 2^-24 is the unit roundoff of f32. Each check states its
// bound and why next to it. Where a result is a sum of n terms, the bound
// uses Higham & Mary's probabilistic analysis ("A new approach to
// probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019):
// with independent rounding errors, |computed - exact| <= lambda sqrt(n) u
// sum|terms| except with probability about 2n exp(-lambda^2 / 2); lambda = 8
// makes a failure from rounding alone below 1e-10 per element, while a
// missing, doubled or misplaced term (of relative size ~1/n) still fails it.
#ifdef ORDO_HAS_CUDA

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/backend.h"
#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::test::bit_identical;
using ordo::test::random_tensor;
using ordo::test::require_close;

namespace {

const Device kGpu = Device::cuda(0);
const Device kCpu = Device::cpu();
constexpr double kU = 0x1p-24;  // unit roundoff of f32

// The probabilistic bound on a sum of n terms, relative to sum|terms| (lambda = 8).
double sum_bound(int64_t n) { return 8 * std::sqrt(static_cast<double>(std::max<int64_t>(n, 1))) * kU; }
// Two f32 computations of one sum (CPU and CUDA, in different orders), each
// within sum_bound(n) of the exact sum, are within twice that of each other.
double pair_bound(int64_t n) { return 2 * sum_bound(n); }

Tensor rand_f32(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return random_tensor(shape, seed, DType::f32, low, high);
}

Tensor gpu(const Tensor& t) { return t.to(kGpu); }

Tensor i64_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

// n integers uniform in [low, high] from a seeded std::mt19937_64.
std::vector<int64_t> random_ints(int64_t n, uint64_t seed, int64_t low, int64_t high) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> dist(low, high);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// A CUDA result against the CPU's, every element within atol + rtol |cpu|.
void check_close(const Tensor& on_gpu, const Tensor& on_cpu, double rtol, double atol,
                 const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_cpu.device().is_cpu());
  require_close(on_gpu, on_cpu, rtol, atol, what);
}

// The same with a bound per element (tolerance[i] for element i, row-major).
void check_within(const Tensor& on_gpu, const Tensor& expected, const std::vector<double>& tolerance,
                  const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_gpu.shape() == expected.shape());
  std::vector<double> got = on_gpu.to_doubles(), want = expected.to_doubles();
  REQUIRE(tolerance.size() == want.size());
  int violations = 0;
  std::ostringstream bad;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool ok = std::fabs(got[i] - want[i]) <= tolerance[i] || (std::isinf(want[i]) && got[i] == want[i]);
    if (!ok && violations++ < 5)
      bad << "  [" << i << "] got " << got[i] << ", expected " << want[i] << " +- " << tolerance[i] << "\n";
  }
  INFO("violations: " << violations << "\n" << bad.str());
  REQUIRE(violations == 0);
}

// Bit-for-bit equality of a CUDA result with the CPU's.
void check_identical(const Tensor& on_gpu, const Tensor& on_cpu, const std::string& what) {
  INFO(what);
  REQUIRE(on_gpu.device().is_cuda());
  REQUIRE(on_gpu.shape() == on_cpu.shape());
  REQUIRE(bit_identical(on_gpu, on_cpu));
}

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

// ---- matrix products --------------------------------------------------------------------

namespace {

// |A| |B| in f64 on the CPU: the magnitudes a product's rounding error scales with.
Tensor magnitudes(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  return matmul(ordo::abs(a.to(kCpu).to(DType::f64)), ordo::abs(b.to(kCpu).to(DType::f64)), ta, tb);
}

// FP32 products: lambda = 8 in the probabilistic bound over k terms, plus a
// few roundings outside the sum: (8 sqrt(k) + 4) u |A||B| per element,
// against the product computed in f64 (exact to ~1e-16 relative).
void check_product(const Tensor& on_gpu, const Tensor& a, const Tensor& b, bool ta, bool tb,
                   const std::string& what) {
  const int64_t k = ta ? a.size(-2) : a.size(-1);
  Tensor exact = matmul(a.to(kCpu).to(DType::f64), b.to(kCpu).to(DType::f64), ta, tb);
  std::vector<double> tol = magnitudes(a, b, ta, tb).to_doubles();
  const double scale = (8 * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) + 4) * kU;
  for (double& t : tol) t = scale * t + 1e-30;
  check_within(on_gpu, exact, tol, what);
}

}  // namespace

TEST_CASE("cuda: matmul for every transpose, odd sizes and batches (FP32)", "[cuda]") {
  // matmul's default precision: fp32.
  struct Size {
    int64_t m, k, n;
  };
  const Size sizes[] = {{1, 1, 1}, {3, 17, 5}, {17, 1, 33}, {64, 1000, 33}, {257, 129, 65}, {5, 4097, 3}};
  uint64_t seed = 500;
  for (const Size& s : sizes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Tensor a = rand_f32(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, ++seed);
        Tensor b = rand_f32(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, ++seed);
        check_product(matmul(gpu(a), gpu(b), ta, tb), a, b, ta, tb,
                      detail::cat("m=", s.m, " k=", s.k, " n=", s.n, " ta=", ta, " tb=", tb));
      }
    }
  }
  // A weight shared by a batch (one tall product), a shared left operand
  // (batch stride 0), broadcast batch axes, and views passed without a copy.
  Tensor x = rand_f32({4, 7, 33}, ++seed), w = rand_f32({33, 19}, ++seed);
  check_product(matmul(gpu(x), gpu(w)), x, w, false, false, "[4, 7, 33] @ [33, 19]");
  Tensor left = rand_f32({7, 33}, ++seed), right = rand_f32({3, 33, 19}, ++seed);
  check_product(matmul(gpu(left), gpu(right)), left.expand({3, 7, 33}), right, false, false,
                "[7, 33] @ [3, 33, 19] (left operand shared)");
  Tensor p = rand_f32({2, 3, 9, 16}, ++seed), q = rand_f32({1, 3, 16, 11}, ++seed);
  check_product(matmul(gpu(p), gpu(q)), p, q.expand({2, 3, 16, 11}), false, false, "broadcast batch axes");
  Tensor base = rand_f32({2, 16, 9}, ++seed);  // [2, 9, 16] seen through a transpose: column-major
  Tensor r = rand_f32({16, 11}, ++seed);
  check_product(matmul(gpu(base).transpose(1, 2), gpu(r)), base.transpose(1, 2), r.expand({2, 16, 11}),
                false, false, "column-major left view");
  Tensor strided = rand_f32({16, 22}, ++seed);  // every other column: copied by the op layer first
  check_product(matmul(gpu(p), gpu(strided).slice(1, 0, 22, 2)), p, strided.slice(1, 0, 22, 2).expand({2, 3, 16, 11}),
                false, false, "strided right operand");
}

TEST_CASE("cuda: gemm honours alpha, beta, batch stride 0 and k = 0", "[cuda]") {
  const MatmulPrecision fp32 = MatmulPrecision::fp32;
  const int64_t batch = 3, m = 17, n = 9, k = 40;
  Tensor a = rand_f32({batch, m, k}, 600), b = rand_f32({k, n}, 601), c0 = rand_f32({batch, m, n}, 602);
  const double alpha = 0.75, beta = -1.5;
  Tensor c = gpu(c0).clone();
  Tensor ag = gpu(a), bg = gpu(b);
  cuda::gemm(c, MatrixBatch{ag, false, k, m * k}, MatrixBatch{bg, false, n, 0}, batch, m, n, k, alpha, beta, fp32);
  // exact: alpha A B + beta C0 in f64; bound: the FP32 product bound on
  // alpha |A||B| plus two roundings of |beta C0|.
  Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64), c64 = c0.to(DType::f64);
  Tensor exact = add(affine(matmul(a64, b64), alpha), affine(c64, beta));
  std::vector<double> ab = matmul(ordo::abs(a64), ordo::abs(b64)).to_doubles(), c_abs = ordo::abs(c64).to_doubles();
  std::vector<double> tol(ab.size());
  for (size_t i = 0; i < tol.size(); ++i)
    tol[i] = (8 * std::sqrt(double(k)) + 4) * kU * std::fabs(alpha) * ab[i] + 2 * kU * std::fabs(beta) * c_abs[i];
  check_within(c, exact, tol, "alpha 0.75, beta -1.5, B shared across the batch");

  // k = 0: C = beta C, exactly (one multiplication).
  Tensor d = gpu(c0).clone();
  Tensor empty_a = Tensor::empty({m, 0}, DType::f32, kGpu), empty_b = Tensor::empty({0, n}, DType::f32, kGpu);
  cuda::gemm(d, MatrixBatch{empty_a, false, 1, 0}, MatrixBatch{empty_b, false, n, 0}, batch, m, n, 0, 1.0, 2.0, fp32);
  check_identical(d, affine(c0, 2.0), "k = 0 scales C by beta");
  // beta = 0 ignores NaN in C.
  Tensor nan_c = Tensor::full({1, m, n}, std::nan(""), DType::f32, kGpu);
  cuda::gemm(nan_c, MatrixBatch{ag, false, k, 0}, MatrixBatch{bg, false, n, 0}, 1, m, n, k, 1.0, 0.0, fp32);
  check_product(nan_c.squeeze(0), a.select(0, 0), b, false, false, "beta = 0 over a NaN C");
  // A broadcast row (ld 0), which cuBLAS cannot take as it is: A is [m, k]
  // with every row the same stored row.
  Tensor row = rand_f32({k}, 603), out = Tensor::empty({1, m, n}, DType::f32, kGpu);
  cuda::gemm(out, MatrixBatch{gpu(row), false, 0, 0}, MatrixBatch{bg, false, n, 0}, 1, m, n, k, 1.0, 0.0, fp32);
  check_product(out.squeeze(0), row.unsqueeze(0).expand({m, k}), b, false, false, "A a broadcast row (ld 0)");
  // alpha = 0: A and B are not read (their NaNs do not matter), C = beta C.
  Tensor nan_a = Tensor::full({m, k}, std::nan(""), DType::f32, kGpu);
  Tensor nan_b = Tensor::full({k, n}, std::nan(""), DType::f32, kGpu);
  Tensor c1 = rand_f32({1, m, n}, 604), e = gpu(c1);
  cuda::gemm(e, MatrixBatch{nan_a, false, k, 0}, MatrixBatch{nan_b, false, n, 0}, 1, m, n, k, 0.0, -1.0, fp32);
  check_identical(e, affine(c1, -1.0), "alpha = 0 ignores NaN in A and B");
  // matmul with an empty inner axis gives zeros.
  check_identical(matmul(empty_a, empty_b), Tensor::zeros({m, n}), "[m, 0] @ [0, n]");
}

TEST_CASE("cuda: gemm reads operands whose leading dimension exceeds their width (strided views)", "[cuda]") {
  // A: a window of columns [3, 3 + width) of a [batch, rows, 11] tensor (ld 11,
  // batch stride rows * 11); B: columns [2, 2 + width) of a [rows, 9] tensor
  // shared by the batch (ld 9, batch stride 0). Expected: the product of the
  // windows by a naive loop in double over the host storage (FP32 products).
  const int64_t batch = 2, m = 5, n = 4, k = 6, lda = 11, ldb = 9, a_first = 3, b_first = 2;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const int64_t a_rows = ta ? k : m, b_rows = tb ? n : k;
      Tensor a = rand_f32({batch, a_rows, lda}, 610 + 2 * ta + tb), b = rand_f32({b_rows, ldb}, 620 + 2 * ta + tb);
      const std::vector<double> ah = a.to_doubles(), bh = b.to_doubles();
      auto a_at = [&](int64_t p, int64_t i, int64_t l) {  // op(A)(i, l) of batch p
        return ah[static_cast<size_t>(p * a_rows * lda + (ta ? l * lda + i : i * lda + l) + a_first)];
      };
      auto b_at = [&](int64_t l, int64_t j) {  // op(B)(l, j)
        return bh[static_cast<size_t>((tb ? j * ldb + l : l * ldb + j) + b_first)];
      };
      std::vector<double> want, tol;
      for (int64_t p = 0; p < batch; ++p)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0, magnitude = 0;
            for (int64_t l = 0; l < k; ++l) {
              sum += a_at(p, i, l) * b_at(l, j);
              magnitude += std::fabs(a_at(p, i, l) * b_at(l, j));
            }
            want.push_back(sum);
            tol.push_back((8 * std::sqrt(double(k)) + 4) * kU * magnitude);
          }
      Tensor c = Tensor::empty({batch, m, n}, DType::f32, kGpu);
      const Tensor a_window = gpu(a).slice(-1, a_first, a_first + (ta ? m : k));
      const Tensor b_window = gpu(b).slice(-1, b_first, b_first + (tb ? k : n));
      cuda::gemm(c, MatrixBatch{a_window, ta, lda, a_rows * lda}, MatrixBatch{b_window, tb, ldb, 0}, batch, m, n, k,
                 1.0, 0.0, MatmulPrecision::fp32);
      check_within(c, Tensor::from_vector(want, {batch, m, n}), tol, detail::cat("ta=", ta, " tb=", tb));
    }
  }
}

TEST_CASE("cuda: TF32 products are within the TF32 bound and actually use TF32", "[cuda]") {
  // TF32 rounds each input to 10 mantissa bits: relative error at most 2^-11
  // (round to nearest) or 2^-10 (truncation), so each product is off by at
  // most 2^-9 of |a||b| and the sum by 2^-9 sum|a||b| in the worst case, plus
  // the FP32 accumulation bound. A missing term (~1/k of sum|a||b| = 1/256)
  // is still twice that bound.
  const int64_t m = 64, k = 256, n = 48;
  Tensor a = rand_f32({m, k}, 700), b = rand_f32({k, n}, 701);
  const Tensor fp32 = matmul(gpu(a), gpu(b), false, false, 1.0, MatmulPrecision::fp32);
  const Tensor tf32 = matmul(gpu(a), gpu(b), false, false, 1.0, MatmulPrecision::tf32);
  Tensor exact = matmul(a.to(DType::f64), b.to(DType::f64));
  std::vector<double> tol = magnitudes(a, b, false, false).to_doubles();
  for (double& t : tol) t *= 0x1p-9 + (8 * std::sqrt(double(k)) + 4) * kU;
  check_within(tf32, exact, tol, "TF32 product");
  // Inputs with full 24-bit mantissas: rounding them to TF32 must show.
  CHECK_FALSE(bit_identical(tf32, fp32));
  check_product(matmul(gpu(a), gpu(b)), a, b, false, false, "the default (FP32) after a TF32 product");
}

// ---- softmax -------------------------------------------------------------------------------

TEST_CASE("cuda: softmax and log-softmax, with and without a mask, match the CPU", "[cuda]") {
  // v - max is computed identically on both devices. Per row of n, the sum
  // of exponentials is within sum_bound(n) (relative) on each device, so
  // within pair_bound(n) of each other, plus
  // the CUDA side's roundings (expf, 2 ulp = 4u; for rows longer than a
  // warp's 1024, the online rescaling's multiply per level of the 10-level
  // reduction tree and per running-max update): softmax rtol pair_bound(n) + 64u.
  // log-softmax = (v - max) - log(sum): absolute error the sum's relative
  // error, plus logf's ulp of log(sum) <= 11 and the final rounding of |y| <= 27:
  // atol pair_bound(n) + 128u, rtol 1e-6.
  const double log_margin = 128 * kU;
  // (A warp's row in 4, 8, 16 or 32 registers a lane: n <= 128, 256, 512, 1024; a block beyond.)
  const Shape shapes[] = {{1, 1},   {3, 17},  {5, 1000},  {2, 3, 128}, {3, 129},
                          {4, 512}, {7, 1025}, {2, 4097}, {4, 30000}};
  uint64_t seed = 800;
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back();
    Tensor x = rand_f32(shape, ++seed, -8, 8), xg = gpu(x);
    const std::string what = "softmax " + shape_str(shape);
    check_close(softmax(xg), softmax(x), pair_bound(n) + 64 * kU, 0, what);
    check_close(log_softmax(xg), log_softmax(x), 1e-6, pair_bound(n) + log_margin, "log-" + what);
  }
  // A padding mask [B, 1, 1, L] broadcast over heads and queries, -inf where
  // forbidden, including a batch whose every key is masked (rows of 0, or -inf).
  const int64_t B = 3, H = 2, L = 37;
  Tensor scores = rand_f32({B, H, L, L}, ++seed, -4, 4);
  std::vector<float> mask_values(B * L, 0.0f);
  for (int64_t j = 30; j < L; ++j) mask_values[0 * L + j] = -INFINITY;   // batch 0: last 7 keys padded
  for (int64_t j = 0; j < L; ++j) mask_values[2 * L + j] = -INFINITY;    // batch 2: everything masked
  for (int64_t j = 0; j < L; j += 5) mask_values[1 * L + j] = -10000.0f;  // batch 1: a large negative
  Tensor mask = Tensor::from_vector(mask_values, {B, 1, 1, L});
  check_close(softmax(gpu(scores), gpu(mask)), softmax(scores, mask), pair_bound(L) + 64 * kU, 0, "masked softmax");
  check_close(log_softmax(gpu(scores), gpu(mask)), log_softmax(scores, mask), 1e-6, pair_bound(L) + log_margin,
              "masked log-softmax");
  // A mask that is a strided view of its own storage (every other column).
  Tensor wide = rand_f32({5, 2 * 1000}, ++seed, -2, 0);
  Tensor x = rand_f32({5, 1000}, ++seed);
  check_close(softmax(gpu(x), gpu(wide).slice(1, 0, 2000, 2)), softmax(x, wide.slice(1, 0, 2000, 2)),
              pair_bound(1000) + 64 * kU, 0, "strided mask");
}

TEST_CASE("cuda: softmax and log-softmax backward match the CPU", "[cuda]") {
  // softmax:     gx = y (gy - dot), dot = sum gy y: the two devices' dots
  //              differ by at most pair_bound(n) sum|gy y|, so gx by y times
  //              that, plus a few roundings: 4u (|gx| + |gy| + y |dot|).
  // log-softmax: gx = gy - exp(y) s, s = sum gy: exp(y) pair_bound(n) sum|gy|
  //              plus 4u (|gx| + |gy| + exp(y) |s|).
  // (A warp's row in 4, 8, 16 or 32 registers a lane; a block beyond 1024.)
  const Shape shapes[] = {{1, 1}, {3, 17}, {4, 200}, {3, 300}, {5, 1000}, {7, 1025}, {2, 4097}};
  uint64_t seed = 900;
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back(), rows = shape_numel(shape) / n;
    Tensor x = rand_f32(shape, ++seed, -3, 3), gy = rand_f32(shape, ++seed);
    for (bool log : {false, true}) {
      Tensor y = log ? log_softmax(x) : softmax(x);
      Tensor expected = log ? log_softmax_backward(y, gy) : softmax_backward(y, gy);
      Tensor got = log ? log_softmax_backward(gpu(y), gpu(gy)) : softmax_backward(gpu(y), gpu(gy));
      std::vector<double> yv = y.to_doubles(), gv = gy.to_doubles(), ev = expected.to_doubles();
      std::vector<double> tol(yv.size());
      for (int64_t r = 0; r < rows; ++r) {
        double magnitude = 0, s = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double term = log ? gv[r * n + j] : gv[r * n + j] * yv[r * n + j];
          magnitude += std::fabs(term);
          s += term;
        }
        for (int64_t j = 0; j < n; ++j) {
          const size_t i = static_cast<size_t>(r * n + j);
          const double p = log ? std::exp(yv[i]) : yv[i];
          tol[i] = p * pair_bound(n) * magnitude + 4 * kU * (std::fabs(ev[i]) + std::fabs(gv[i]) + p * std::fabs(s)) + 1e-30;
        }
      }
      check_within(got, expected, tol, (log ? "log-softmax backward " : "softmax backward ") + shape_str(shape));
    }
  }
}

// ---- layernorm -------------------------------------------------------------------------------

TEST_CASE("cuda: layernorm forward and backward match the CPU", "[cuda]") {
  // Both devices compute mean and variance in double and round once: mean and
  // rstd within one f32 rounding (rtol 2u, atol 1e-9 for a mean near 0).
  // y = (x - mean) rstd gamma + beta: a few roundings of terms of size
  // |xhat gamma| + |beta| <= 6 here (x in [1, 3]), plus one-ulp differences
  // of mean (2u * 3, times rstd gamma <= 5) and of rstd (2u |xhat gamma|):
  // atol 128u, rtol 8u.
  // gx = rstd (gy gamma - a - xhat c) with a, c row means in double: terms of
  // size <= rstd (|gy gamma| + |a| + |xhat c|) <= 8 here: atol 128u, rtol 8u.
  // ggamma, gbeta: sums over rows in double of f32 products that are the same
  // on both devices: rtol 2u, atol 1e-9.
  const Shape shapes[] = {{1, 1}, {3, 17}, {33, 768}, {2, 3, 100}, {5, 1025}, {2, 4097}, {1000, 64}};
  uint64_t seed = 1000;
  for (const Shape& shape : shapes) {
    const int64_t n = shape.back();
    const std::string what = "layernorm " + shape_str(shape);
    Tensor x = rand_f32(shape, ++seed, 1, 3), gamma = rand_f32({n}, ++seed, 0.5, 1.5),
           beta = rand_f32({n}, ++seed, -1, 1), gy = rand_f32(shape, ++seed);
    LayerNormResult c = layernorm(x, gamma, beta, 1e-5);
    LayerNormResult g = layernorm(gpu(x), gpu(gamma), gpu(beta), 1e-5);
    check_close(g.mean, c.mean, 2 * kU, 1e-9, what + " mean");
    check_close(g.rstd, c.rstd, 2 * kU, 1e-9, what + " rstd");
    check_close(g.y, c.y, 8 * kU, 128 * kU, what + " y");
    // The backward from the same (CPU) statistics on both devices.
    LayerNormGrads cg = layernorm_backward(gy, x, c.mean, c.rstd, gamma);
    LayerNormGrads gg = layernorm_backward(gpu(gy), gpu(x), gpu(c.mean), gpu(c.rstd), gpu(gamma));
    check_close(gg.gx, cg.gx, 8 * kU, 128 * kU, what + " gx");
    check_close(gg.ggamma, cg.ggamma, 2 * kU, 1e-9, what + " ggamma");
    check_close(gg.gbeta, cg.gbeta, 2 * kU, 1e-9, what + " gbeta");
  }
}

// ---- cross-entropy ---------------------------------------------------------------------------

TEST_CASE("cuda: cross-entropy forward and backward match the CPU", "[cuda]") {
  // lse = max + log(sum of c exponentials): the two devices' lse differ by
  // the sums' relative difference (pair_bound(c) plus the online rescaling's
  // 64u, as for softmax) plus logf's and the final addition's ulps of
  // |lse| <= 17: pair_bound(c) + 128u.
  // The loss (lse - z_t, averaged) inherits it. The gradient s exp(z - lse)
  // is then within (that + 8u) relative, and the target's entry (p - s)
  // within that times s absolute.
  struct Case {
    int64_t rows, c;
  };
  const Case cases[] = {{1, 3}, {17, 1000}, {300, 3}, {64, 4097}, {8, 30522}};
  uint64_t seed = 1100;
  for (const Case& cs : cases) {
    const std::string what = detail::cat("cross-entropy rows=", cs.rows, " classes=", cs.c);
    Tensor logits = rand_f32({cs.rows, cs.c}, ++seed, -6, 6);
    std::vector<int64_t> t = random_ints(cs.rows, ++seed, 0, cs.c - 1);
    for (size_t i = 1; i < t.size(); i += 5) t[i] = -100;  // some rows ignored
    Tensor targets = i64_tensor(t, {cs.rows});
    CrossEntropyResult c = cross_entropy(logits, targets);
    CrossEntropyResult g = cross_entropy(gpu(logits), gpu(targets));
    const double lse_tol = pair_bound(cs.c) + 128 * kU;
    check_close(g.lse, c.lse, 0, lse_tol, what + " lse");
    check_identical(g.count, c.count, what + " count");
    check_close(g.loss, c.loss, 4 * kU, lse_tol, what + " loss");
    Tensor gy = Tensor::scalar(0.75);
    Tensor gc = cross_entropy_backward(gy, logits, c, targets);
    Tensor gg = cross_entropy_backward(gpu(gy), gpu(logits), g, gpu(targets));
    const double s = 0.75 / std::max(1.0, c.count.item());
    check_close(gg, gc, lse_tol + 8 * kU, (lse_tol + 8 * kU) * s, what + " gradient");
  }
  // Logits of more than two axes and every target ignored.
  Tensor logits = rand_f32({2, 3, 11}, ++seed);
  Tensor ignored = i64_tensor(std::vector<int64_t>(6, -100), {2, 3});
  CrossEntropyResult g = cross_entropy(gpu(logits), gpu(ignored));
  CHECK(g.loss.item() == 0);
  CHECK(g.count.item() == 0);
  check_identical(cross_entropy_backward(gpu(Tensor::scalar(1.0)), gpu(logits), g, gpu(ignored)),
                  Tensor::zeros({2, 3, 11}), "every row ignored: zero gradient");
  // The mean in the rows' launch (its last block), also with no rows at all.
  synchronize(kGpu);
  reset_device_counters();
  const CrossEntropyResult counted = cross_entropy(gpu(logits), gpu(i64_tensor({1, -100, 10, 0, 3, 3}, {2, 3})));
  CHECK(device_counters().kernel_launches == 1);
  CHECK(counted.count.item() == 5);
  const CrossEntropyResult none = cross_entropy(gpu(rand_f32({0, 7}, ++seed)), gpu(i64_tensor({}, {0})));
  CHECK(none.loss.item() == 0);
  CHECK(none.count.item() == 0);
}

// ---- indexing --------------------------------------------------------------------------------

TEST_CASE("cuda: embedding, index_select, gather and their backwards match the CPU bit for bit", "[cuda]") {
  // Forwards move values: identical. The backwards add each destination's
  // contributions in index-list order on both devices (the CUDA side sorts
  // stably by destination instead of using atomics): identical too.
  uint64_t seed = 1200;
  for (int64_t d : {1, 3, 4, 768}) {  // 4 and 768 floats: rows of 16-byte words; 1, 3: narrower words
    const std::string what = detail::cat("embedding d=", d);
    Tensor table = rand_f32({50, d}, ++seed);
    // Heavy repeats (token 7 a hundred times) and every other id once or more.
    std::vector<int64_t> ids = random_ints(300, ++seed, 0, 49);
    for (size_t i = 0; i < 100; ++i) ids[i * 3] = 7;
    Tensor idx = i64_tensor(ids, {3, 100});
    check_identical(embedding(gpu(table), gpu(idx)), embedding(table, idx), what);
    Tensor gout = rand_f32({3, 100, d}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(idx), 50), embedding_backward(gout, idx, 50),
                    what + " backward");
    // The padding row is the repeated token: written 0 by the same kernel.
    check_identical(embedding_backward(gpu(gout), gpu(idx), 50, 7), embedding_backward(gout, idx, 50, 7),
                    what + " backward, padding row 7");
    // Onto a gathered gradient (tied word embeddings), a row no id names and a -0 among it.
    Tensor base = rand_f32({50, d}, ++seed);
    base.slice(0, 49, 50).fill_(-0.0);
    std::vector<int64_t> some(ids.begin(), ids.end());
    for (int64_t& id : some) id = id == 49 ? 48 : id;
    Tensor some_idx = i64_tensor(some, {3, 100});
    check_identical(embedding_backward(gpu(gout), gpu(some_idx), 50, 7, gpu(base)),
                    embedding_backward(gout, some_idx, 50, 7, base.clone()), what + " backward onto a gradient");
  }
  {  // Onto, with no ids: the gradient as it was.
    const Tensor none = i64_tensor({}, {0}), gout = rand_f32({0, 4}, ++seed), base = rand_f32({6, 4}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(none), 6, -1, gpu(base)), base, "onto, no ids");
  }
  {  // No ids at all: the table's every row 0, with no sort.
    const Tensor none = i64_tensor({}, {0}), gout = rand_f32({0, 4}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(none), 6), embedding_backward(gout, none, 6),
                    "embedding backward, no ids");
  }
  // Runs of hundreds to a thousand entries, cut into pieces (tensor/backend.h,
  // kIndexAddPiece), as T5's buckets and the token types gather: two thirds
  // of the list one row, the rest spread over 12 rows.
  for (int64_t d : {12, 40}) {
    std::vector<int64_t> ids = random_ints(1800, ++seed, 0, 11);
    for (size_t i = 0; i < ids.size(); ++i)
      if (i % 3 != 0) ids[i] = 5;
    Tensor idx = i64_tensor(ids, {1800}), gout = rand_f32({1800, d}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(idx), 12), embedding_backward(gout, idx, 12),
                    detail::cat("embedding backward, long runs, d=", d));
  }
  {  // The same along a middle axis: each of 3 outer slices cuts its runs at the same sorted positions.
    std::vector<int64_t> ids = random_ints(700, ++seed, 0, 16);
    for (size_t i = 0; i < ids.size(); i += 2) ids[i] = 9;
    Tensor idx = i64_tensor(ids, {700}), g = rand_f32({3, 700, 5}, ++seed);
    check_identical(index_select_backward(gpu(g), 1, gpu(idx), {3, 17, 5}), index_select_backward(g, 1, idx, {3, 17, 5}),
                    "index_select backward, long runs, 3 outer slices");
  }
  // index_select along a middle axis, other dtypes (moved as raw words).
  Tensor x = rand_f32({3, 17, 5}, ++seed);
  Tensor sel = i64_tensor({16, 0, 3, 3, 9, 16, 16}, {7});
  check_identical(index_select(gpu(x), 1, gpu(sel)), index_select(x, 1, sel), "index_select axis 1");
  Tensor xi = i64_tensor(random_ints(3 * 17 * 5, ++seed, -1000000, 1000000), {3, 17, 5});
  Tensor xb = i64_tensor(random_ints(3 * 17 * 5, ++seed, 0, 255), {3, 17, 5}).to(DType::u8);
  check_identical(index_select(gpu(xb), 1, gpu(sel)), index_select(xb, 1, sel), "index_select u8");
  check_identical(index_select(gpu(xi), 2, gpu(i64_tensor({4, 1}, {2}))),
                  index_select(xi, 2, i64_tensor({4, 1}, {2})), "index_select i64, last axis");
  Tensor gsel = rand_f32({3, 7, 5}, ++seed);
  check_identical(index_select_backward(gpu(gsel), 1, gpu(sel), {3, 17, 5}),
                  index_select_backward(gsel, 1, sel, {3, 17, 5}), "index_select backward");
  // gather along each axis, with repeats.
  for (int axis = 0; axis < 3; ++axis) {
    Shape idx_shape = {3, 17, 5};
    idx_shape[axis] = 11;
    Tensor gidx = i64_tensor(random_ints(shape_numel(idx_shape), ++seed, 0, x.size(axis) - 1), idx_shape);
    const std::string what = detail::cat("gather axis ", axis);
    check_identical(gather(gpu(x), axis, gpu(gidx)), gather(x, axis, gidx), what);
    check_identical(gather(gpu(xi), axis, gpu(gidx)), gather(xi, axis, gidx), what + " i64");
    Tensor g = rand_f32(idx_shape, ++seed);
    check_identical(gather_backward(gpu(g), axis, gpu(gidx), {3, 17, 5}), gather_backward(g, axis, gidx, {3, 17, 5}),
                    what + " backward");
  }
}

// The input embeddings' one-pass sum: the same bits as the CPU's (f32 adds in
// the tables' order), in one launch, ids shared by the batch or not; an
// out-of-range id flagged as index_select's are.
TEST_CASE("cuda: embedding_sum matches the CPU bit for bit in one launch", "[cuda]") {
  uint64_t seed = 1250;
  for (int64_t d : {1, 7, 768}) {
    const std::string what = detail::cat("embedding_sum d=", d);
    const Tensor words = rand_f32({50, d}, ++seed), types = rand_f32({2, d}, ++seed);
    const Tensor positions = rand_f32({9, d}, ++seed);
    const Tensor ids = i64_tensor(random_ints(3 * 9, ++seed, 0, 49), {3, 9});
    const Tensor type_ids = i64_tensor(random_ints(3 * 9, ++seed, 0, 1), {3, 9});
    const Tensor shared = i64_tensor({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 9});
    const Tensor own = i64_tensor(random_ints(3 * 9, ++seed, 0, 8), {3, 9});
    for (const Tensor* position_ids : {&shared, &own}) {
      synchronize(kGpu);
      reset_device_counters();
      const Tensor on_gpu =
          embedding_sum({gpu(words), gpu(types), gpu(positions)}, {gpu(ids), gpu(type_ids), gpu(*position_ids)});
      CHECK(device_counters().kernel_launches == 1);
      check_identical(on_gpu, embedding_sum({words, types, positions}, {ids, type_ids, *position_ids}),
                      what + (position_ids == &shared ? ", positions shared" : ", positions per row"));
    }
    check_identical(embedding_sum({gpu(words)}, {gpu(ids)}), embedding(words, ids), what + ", one table: its lookup");
  }
  const Tensor table = rand_f32({10, 6}, ++seed);
  const Tensor out =
      embedding_sum({gpu(table), gpu(table)}, {gpu(i64_tensor({3, 1}, {1, 2})), gpu(i64_tensor({2, 10}, {1, 2}))});
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("embedding_sum"));
  const std::vector<float> rows = out.to_vector<float>(), t = table.to_vector<float>();
  for (int64_t j = 0; j < 6; ++j) {
    CHECK(rows[j] == t[3 * 6 + j] + t[2 * 6 + j]);
    CHECK(rows[6 + j] == 0.0f);  // the row with the bad id: never read, written 0
  }
}

// An attention mask's bias in one launch (a cast and a map before): the
// CPU's bits for a mask and for other integers (exact products: p = 0.5).
TEST_CASE("cuda: affine_to matches the CPU bit for bit in one launch", "[cuda]") {
  const double lowest = std::numeric_limits<float>::lowest();
  const Tensor mask = i64_tensor({1, 1, 0, 1, 0, 0, 1}, {7});
  const Tensor ints = i64_tensor(random_ints(1000, 1310, -100000, 100000), {10, 100});
  synchronize(kGpu);
  reset_device_counters();
  const Tensor bias = affine_to(gpu(mask), -lowest, lowest, DType::f32);
  CHECK(device_counters().kernel_launches == 1);
  check_identical(bias, affine_to(mask, -lowest, lowest, DType::f32), "a mask's bias");
  check_identical(affine_to(gpu(ints), 0.5, -3, DType::f32), affine_to(ints, 0.5, -3, DType::f32), "integers");
}

// The input embeddings' backward, the three tables in one sort and two
// kernels: the CPU's bits (index_add's pieces, counted per table) with a word
// id repeated past a piece (256), the padding row skipped and the decoder's
// term added onto; the position ids shared by the batch or not. An
// out-of-range type id is flagged and drops only its own entry.
TEST_CASE("cuda: embedding_sum_backward matches the CPU bit for bit, every table in one sort", "[cuda]") {
  uint64_t seed = 1270;
  const int64_t B = 6, L = 60;
  for (int64_t d : {1, 7, 40}) {
    const std::string what = detail::cat("embedding_sum_backward d=", d);
    const Tensor gout = rand_f32({B, L, d}, ++seed), onto = rand_f32({50, d}, ++seed);
    std::vector<int64_t> words = random_ints(B * L, ++seed, 0, 49);
    for (int64_t e = 0; e < B * L; ++e)
      if (e % 4 != 3) words[e] = 3;  // 270 entries of row 3: two pieces
    const Tensor ids = i64_tensor(words, {B, L}), type_ids = i64_tensor(random_ints(B * L, ++seed, 0, 1), {B, L});
    std::vector<int64_t> order(L);
    for (int64_t l = 0; l < L; ++l) order[l] = l;
    const Tensor shared = i64_tensor(order, {1, L}), own = i64_tensor(random_ints(B * L, ++seed, 0, L + 3), {B, L});
    for (const Tensor* position_ids : {&shared, &own}) {
      const std::string where = what + (position_ids == &shared ? ", positions shared" : ", positions per row");
      const std::vector<int64_t> rows = {50, 2, L + 4}, padding = {0, -1, -1};
      synchronize(kGpu);
      reset_device_counters();
      const std::vector<Tensor> on_gpu =
          embedding_sum_backward(gpu(gout), {gpu(ids), gpu(type_ids), gpu(*position_ids)}, rows, padding,
                                 {gpu(onto), Tensor(), Tensor()}, {true, true, true});
      CHECK(device_counters().kernel_launches == 3);
      CHECK(device_counters().sorts == 1);
      const std::vector<Tensor> on_cpu = embedding_sum_backward(gout, {ids, type_ids, *position_ids}, rows, padding,
                                                                {onto.clone(), Tensor(), Tensor()}, {true, true, true});
      for (size_t t = 0; t < 3; ++t) check_identical(on_gpu[t], on_cpu[t], detail::cat(where, ", table ", t));
    }
  }
  const Tensor gout = rand_f32({2, 3, 4}, ++seed), ids = i64_tensor({0, 1, 2, 2, 1, 0}, {2, 3});
  const Tensor positions = i64_tensor({0, 1, 2}, {1, 3});
  const std::vector<Tensor> got = embedding_sum_backward(
      gpu(gout), {gpu(ids), gpu(i64_tensor({0, 1, 7, 1, 1, 0}, {2, 3})), gpu(positions)}, {3, 2, 3}, {-1, -1, -1},
      std::vector<Tensor>(3), {true, true, true});
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("embedding_sum"));
  const std::vector<Tensor> valid = embedding_sum_backward(gout, {ids, i64_tensor({0, 1, 0, 1, 1, 0}, {2, 3}), positions},
                                                           {3, 2, 3}, {-1, -1, -1}, std::vector<Tensor>(3),
                                                           {true, true, true});
  check_identical(got[0], valid[0], "the word table, beside a bad type id");
  check_identical(got[2], valid[2], "the position table, beside a bad type id");
  const std::vector<float> types = got[1].to_vector<float>(), g = gout.to_vector<float>();
  for (int64_t j = 0; j < 4; ++j) {  // type 0: entries (0, 0), (1, 2); the bad entry (0, 2) dropped
    CHECK(types[j] == g[j] + g[20 + j]);
  }
}

// select_rows' backward (the MLM head's gather of its predicted rows): the
// CPU's bits in one launch and no sort; a list out of order is flagged and
// the rows the search cannot find are written 0, never read out of bounds.
TEST_CASE("cuda: select_rows_backward matches the CPU bit for bit in one launch, and flags rows out of order", "[cuda]") {
  uint64_t seed = 1290;
  for (int64_t d : {1, 33}) {
    const Tensor g = rand_f32({5, d}, ++seed), rows = i64_tensor({0, 3, 4, 8, 9}, {5});
    synchronize(kGpu);
    reset_device_counters();
    const Tensor on_gpu = select_rows_backward(gpu(g), gpu(rows), 10);
    CHECK(device_counters().kernel_launches == 1);
    CHECK(device_counters().sorts == 0);
    check_identical(on_gpu, select_rows_backward(g, rows, 10), detail::cat("select_rows_backward d=", d));
  }
  const Tensor g = rand_f32({3, 2}, ++seed);
  const Tensor out = select_rows_backward(gpu(g), gpu(i64_tensor({2, 1, 3}, {3})), 4);
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("not ascending and distinct"));
  const std::vector<float> got = out.to_vector<float>(), want = g.to_vector<float>();
  CHECK(got[3 * 2] == want[2 * 2]);  // row 3, found: the last entry
  CHECK(got[0] == 0.0f);              // row 0, named by none
}

// cub's radix sorts are launches ordo does not make itself: counted apart, a
// sort each (the device's counts of a step add them as one launch each).
TEST_CASE("cuda: the index gradients' cub sorts are counted, one a sort", "[cuda]") {
  const Tensor gout = gpu(rand_f32({6, 4}, 1280)), ids = gpu(i64_tensor({3, 1, 3, 0, 5, 3}, {6}));
  synchronize(kGpu);
  reset_device_counters();
  (void)embedding_backward(gout, ids, 8);
  CHECK(device_counters().sorts == 1);
  reset_device_counters();
  (void)embedding_backward(gpu(rand_f32({0, 4}, 1281)), gpu(i64_tensor({}, {0})), 8);  // no ids: no sort
  CHECK(device_counters().sorts == 0);
}

TEST_CASE("cuda: an out-of-range index is reported at synchronize and never used", "[cuda]") {
  Tensor table = rand_f32({10, 6}, 1300);
  Tensor table_gpu = gpu(table);
  synchronize(kGpu);
  // Lookup with ids 10 and -1: the kernel skips those rows (zeros) and flags.
  Tensor out = embedding(table_gpu, gpu(i64_tensor({3, 10, 1, -1}, {4})));
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("index_select"));
  CHECK_NOTHROW(synchronize(kGpu));  // reported once, then cleared
  std::vector<float> rows = out.to_vector<float>(), t = table.to_vector<float>();
  for (int64_t j = 0; j < 6; ++j) {
    CHECK(rows[0 * 6 + j] == t[3 * 6 + j]);
    CHECK(rows[1 * 6 + j] == 0.0f);
    CHECK(rows[2 * 6 + j] == t[1 * 6 + j]);
    CHECK(rows[3 * 6 + j] == 0.0f);
  }
  // The device-to-host copy reports it as well.
  Tensor x = gpu(rand_f32({4, 5}, 1301));
  Tensor picked = gather(x, 1, gpu(i64_tensor({0, 5, 1, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {4, 5})));
  CHECK_THROWS_WITH(picked.to(kCpu), Catch::Contains("gather"));
  // Backwards: the valid contributions land, the invalid one is dropped, nothing else is touched.
  Tensor g = rand_f32({4, 6}, 1302);
  Tensor grad = embedding_backward(gpu(g), gpu(i64_tensor({2, 12, 2, 0}, {4})), 10);
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index_add"));
  Tensor expected = embedding_backward(g.slice(0, 0, 1), i64_tensor({2}, {1}), 10);
  add_(expected, embedding_backward(g.slice(0, 2, 4), i64_tensor({2, 0}, {2}), 10));
  check_identical(grad, expected, "index_add without the out-of-range row");
  gather_backward(gpu(rand_f32({2, 3}, 1303)), 1, gpu(i64_tensor({0, 1, 7, 2, 2, -3}, {2, 3})), {2, 4});
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("scatter_add"));
  cross_entropy(gpu(rand_f32({3, 5}, 1304)), gpu(i64_tensor({1, 5, -100}, {3})));
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("cross_entropy"));
  CHECK_NOTHROW(synchronize(kGpu));
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

// autograd's slice backward: one launch, the CPU's bits, for every element size the step slices.
TEST_CASE("cuda: pad_slice writes a slice's gradient and the zeros around it in one launch, the CPU's bits",
          "[cuda]") {
  const Shape whole{3, 37, 5};
  for (const DType dtype : {DType::f32, DType::bf16, DType::f64, DType::i64}) {
    INFO(dtype_name(dtype));
    for (const int64_t step : {int64_t{1}, int64_t{3}}) {
      const Tensor g = (dtype == DType::i64 ? Tensor::arange(3 * 11 * 5).reshape({3, 11, 5})
                                            : rand_f32({3, 11, 5}, 21))
                           .to(dtype);
      const Tensor want = pad_slice(g, whole, 1, 4, step);
      synchronize(kGpu);
      reset_device_counters();
      const Tensor got = pad_slice(gpu(g), whole, 1, 4, step);
      CHECK(device_counters().kernel_launches == 1);
      check_identical(got, want, "pad_slice");
    }
  }
}

#endif  // ORDO_HAS_CUDA
