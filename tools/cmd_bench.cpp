// `ordo bench`: runs every benchmark command ("bench ops", "bench data", ...).
// `ordo bench ops`: throughput of the primitive kernels against what the
// machine can do at best.
//
//   CPU  matrix products in GFLOP/s, OpenBLAS (when built) and ordo's own
//        kernel, against the best BLAS rate seen and a measured FMA peak;
//        memory-bound kernels (add, GELU, softmax, LayerNorm) in GB/s against
//        a measured memcpy.
//   GPU  (when one is present) cuBLAS matrix products in TFLOP/s, fp32 and
//        TF32; memory-bound kernels and cross-entropy in GB/s against a
//        measured device-to-device copy.
//
// Kernels are called through the backend interface (tensor/kernels.inc) on
// preallocated outputs, so the figures are the kernels' own, without the op
// layer's allocations. GB/s counts the bytes a kernel must read plus write.
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "tensor/backend.h"
#include "tensor/cpu/gemm_amx.h"
#include "tensor/cpu/gemm_own.h"
#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tools/bench.h"
#include "tools/cli.h"

namespace ordo {
namespace {

using bench::Table;
using bench::TimingPlan;
using bench::fixed;

struct Options {
  bool quick = false;
  TimingPlan plan;
};

Tensor random_tensor(const Shape& shape, DType dtype, Device device, uint64_t stream) {
  Tensor t = Tensor::empty(shape, dtype, device);
  uniform_(t, -1, 1, /*seed=*/1234, stream);
  return t;
}

// "[4096x768]"
std::string dims(std::initializer_list<int64_t> sizes) {
  std::string s = "[";
  for (int64_t v : sizes) s += (s.size() > 1 ? "x" : "") + std::to_string(v);
  return s + "]";
}

// ---- matrix products ---------------------------------------------------------------

struct GemmCase {
  std::string name;
  int64_t batch, m, n, k;
  bool ta = false, tb = false;
  DType dtype = DType::f32;

  double flops() const { return 2.0 * batch * m * n * k; }
  std::string shape() const {
    std::string a = ta ? dims({k, m}) + "^T" : dims({m, k});
    std::string b = tb ? dims({n, k}) + "^T" : dims({k, n});
    return (batch > 1 ? std::to_string(batch) + " x " : "") + a + "@" + b;
  }
};

// cpu::gemm_own behind gemm's signature (it has FP32 arithmetic only).
void gemm_own_kernel(const Tensor& c, const MatrixBatch& a, const MatrixBatch& b, int64_t batch, int64_t m, int64_t n,
                     int64_t k, double alpha, double beta, MatmulPrecision) {
  cpu::gemm_own(c, a, b, batch, m, n, k, alpha, beta);
}

// FLOP/s of c = op(a) op(b) (beta 0) for one case.
// Kernel: gemm's signature, or what ORDO_BACKEND(device, gemm) gives.
// The rate of the product itself: under bf16 the operands are made bf16
// beforehand, as a training step's are (rounded once, outside the product).
template <class Kernel>
double gemm_rate(const GemmCase& g, Device device, const Kernel& kernel, const TimingPlan& plan,
                 MatmulPrecision precision = MatmulPrecision::fp32) {
  const DType operands = precision == MatmulPrecision::bf16 ? DType::bf16 : g.dtype;
  Tensor a = random_tensor({g.batch, g.ta ? g.k : g.m, g.ta ? g.m : g.k}, g.dtype, device, 1).to(operands);
  Tensor b = random_tensor({g.batch, g.tb ? g.n : g.k, g.tb ? g.k : g.n}, g.dtype, device, 2).to(operands);
  Tensor c = Tensor::empty({g.batch, g.m, g.n}, g.dtype, device);
  MatrixBatch ma{a, g.ta, a.size(2), a.size(1) * a.size(2)};
  MatrixBatch mb{b, g.tb, b.size(2), b.size(1) * b.size(2)};
  auto run = [&] { kernel(c, ma, mb, g.batch, g.m, g.n, g.k, 1.0, 0.0, precision); };
  return g.flops() / bench::measure(run, device, plan).seconds;
}

// BERT-base shapes: a batch of 32 sequences of 128 tokens (4096 rows), hidden
// 768, feed-forward 3072, 12 heads of 64. Linear weights are stored
// [out, in] and used transposed, as nn/ does.
std::vector<GemmCase> transformer_cases(bool quick) {
  if (quick) return {{"linear 64->256", 1, 256, 256, 64, false, true}};
  return {
      {"linear 768->768 (q, k, v, out)", 1, 4096, 768, 768, false, true},
      {"linear 768->3072 (FF up)", 1, 4096, 3072, 768, false, true},
      {"linear 3072->768 (FF down)", 1, 4096, 768, 3072, false, true},
      {"weight grad 768->3072", 1, 3072, 768, 4096, true, false},
      {"attention scores q k^T", 384, 128, 128, 64, false, true},
      {"attention probs @ v", 384, 128, 64, 128, false, false},
  };
}

std::vector<GemmCase> square_cases(DType dtype, const std::vector<int64_t>& sizes) {
  std::vector<GemmCase> out;
  for (int64_t s : sizes) {
    GemmCase g{std::to_string(s) + "^3", 1, s, s, s};
    g.dtype = dtype;
    if (dtype != DType::f32) g.name += std::string(" ") + dtype_name(dtype);
    out.push_back(g);
  }
  return out;
}

json::Value gemm_json(const GemmCase& g) {
  json::Value v = json::Value::object();
  v["name"] = g.name;
  v["dtype"] = dtype_name(g.dtype);
  v["batch"] = g.batch;
  v["m"] = g.m;
  v["n"] = g.n;
  v["k"] = g.k;
  v["trans_a"] = g.ta;
  v["trans_b"] = g.tb;
  return v;
}

json::Value cpu_matmul(const Options& opt) {
  std::vector<GemmCase> cases = square_cases(
      DType::f32, opt.quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{128, 256, 512, 1024, 2048});
  for (const auto& g : transformer_cases(opt.quick)) cases.push_back(g);
  for (const auto& g : square_cases(DType::f64, {opt.quick ? 64 : 1024})) cases.push_back(g);

  std::printf("measuring the FMA peak and %zu matrix products...\n", cases.size());
  std::fflush(stdout);
  double peak32 = bench::measure_fma_peak(false, opt.plan), peak64 = bench::measure_fma_peak(true, opt.plan);
  bool blas = cpu::blas_compiled();
  if (blas) cpu::set_use_blas(true);  // cpu::gemm is then the BLAS path
  std::vector<double> blas_rate(cases.size(), 0), own_rate(cases.size(), 0), bf16_rate(cases.size(), 0);
  double best32 = 0, best64 = 0;  // the best BLAS rate seen (own kernel's without a BLAS)
  for (size_t i = 0; i < cases.size(); ++i) {
    if (blas) blas_rate[i] = gemm_rate(cases[i], Device::cpu(), cpu::gemm, opt.plan);
    own_rate[i] = gemm_rate(cases[i], Device::cpu(), gemm_own_kernel, opt.plan);
    if (cases[i].dtype == DType::f32)  // cpu::gemm with bf16 operands: AMX tiles or widened to FP32
      bf16_rate[i] = gemm_rate(cases[i], Device::cpu(), cpu::gemm, opt.plan, MatmulPrecision::bf16);
    double& best = cases[i].dtype == DType::f64 ? best64 : best32;
    best = std::max(best, blas ? blas_rate[i] : own_rate[i]);
  }

  std::printf("\nCPU matrix products, GFLOP/s (%%best: of the best %s rate seen in this table, "
              "per dtype; %%peak: of the measured FMA peak)\n",
              blas ? "OpenBLAS" : "own-kernel");
  Table table({"product", "shape", "OpenBLAS", "%best", "%peak", "own", "%best", "%peak", "own/BLAS", "bf16",
               "bf16/fp32"});
  json::Value rows = json::Value::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    const GemmCase& g = cases[i];
    bool f64 = g.dtype == DType::f64;
    double best = f64 ? best64 : best32, peak = f64 ? peak64 : peak32;
    auto cells = [&](double r) -> std::vector<std::string> {
      return {fixed(r / 1e9, 1), fixed(100 * r / best, 0), fixed(100 * r / peak, 0)};
    };
    std::vector<std::string> row{g.name, g.shape()};
    for (const auto& s : blas ? cells(blas_rate[i]) : std::vector<std::string>{"-", "-", "-"}) row.push_back(s);
    for (const auto& s : cells(own_rate[i])) row.push_back(s);
    row.push_back(blas ? fixed(own_rate[i] / blas_rate[i], 2) : "-");
    const double fp32 = blas ? blas_rate[i] : own_rate[i];
    row.push_back(bf16_rate[i] > 0 ? fixed(bf16_rate[i] / 1e9, 1) : "-");
    row.push_back(bf16_rate[i] > 0 ? fixed(bf16_rate[i] / fp32, 2) : "-");
    table.add(row);

    json::Value v = gemm_json(g);
    v["blas_gflops"] = blas ? json::Value(blas_rate[i] / 1e9) : json::Value();
    v["own_gflops"] = own_rate[i] / 1e9;
    v["bf16_gflops"] = bf16_rate[i] > 0 ? json::Value(bf16_rate[i] / 1e9) : json::Value();
    rows.push_back(v);
  }
  table.print();
  std::printf("FMA peak (%d threads, %d-bit vectors): f32 %.1f GFLOP/s, f64 %.1f GFLOP/s\n", bench::cpu_threads(),
              8 * cpu::kGemmOwnVectorBytes, peak32 / 1e9, peak64 / 1e9);
  std::printf("bf16: cpu::gemm with bf16 operands (FP32 sums), %s\n",
              cpu::amx_enabled() ? "on AMX-BF16 tiles" : ("widened to FP32: " + cpu::amx_description()).c_str());

  json::Value out = json::Value::object();
  out["fma_peak_gflops_f32"] = peak32 / 1e9;
  out["fma_peak_gflops_f64"] = peak64 / 1e9;
  out["fma_vector_bits"] = 8 * cpu::kGemmOwnVectorBytes;
  out["matmul"] = rows;
  return out;
}

// ---- memory-bound kernels ---------------------------------------------------------------

struct MemCase {
  std::string op, shape;
  double bytes;  // read + written per call
  std::function<void()> run;
};

// The memory-bound kernels on `device`, f32, with about `n` elements each.
// The tensors live in the returned closures.
std::vector<MemCase> memory_cases(Device device, int64_t n, bool with_cross_entropy) {
  const double f = 4;  // bytes per f32
  std::vector<MemCase> out;
  {
    Tensor a = random_tensor({n}, DType::f32, device, 3), b = random_tensor({n}, DType::f32, device, 4);
    Tensor y = Tensor::empty({n}, DType::f32, device);
    out.push_back({"add", dims({n}), 3 * f * n,
                   [=] { ORDO_BACKEND(device, binary)(BinaryOp::add, y, a, b); }});
    out.push_back({"gelu (erf)", dims({n}), 2 * f * n,
                   [=] { ORDO_BACKEND(device, unary)(UnaryOp::gelu, UnaryParams{}, y, a); }});
  }
  for (int64_t cols : {int64_t(128), int64_t(512)}) {
    int64_t rows = n / cols;
    Tensor x = random_tensor({rows, cols}, DType::f32, device, 5);
    Tensor y = Tensor::empty({rows, cols}, DType::f32, device);
    out.push_back({"softmax", dims({rows, cols}), 2 * f * rows * cols,
                   [=] { ORDO_BACKEND(device, softmax)(y, x, Tensor(), false, Tensor(), 0.0, PhiloxStream{}); }});
  }
  {
    int64_t cols = 768, rows = n / cols;
    Tensor x = random_tensor({rows, cols}, DType::f32, device, 6);
    Tensor gamma = random_tensor({cols}, DType::f32, device, 7), beta = random_tensor({cols}, DType::f32, device, 8);
    Tensor y = Tensor::empty({rows, cols}, DType::f32, device);
    Tensor mean = Tensor::empty({rows}, DType::f32, device), rstd = Tensor::empty({rows}, DType::f32, device);
    out.push_back({"layernorm", dims({rows, cols}), f * (2.0 * rows * cols + 2.0 * rows + 2.0 * cols),
                   [=] { ORDO_BACKEND(device, layernorm)(y, mean, rstd, x, gamma, beta, 1e-5, Tensor()); }});
  }
  if (with_cross_entropy) {  // BERT's MLM head: a vocabulary of 30522
    int64_t cols = 30522, rows = std::max<int64_t>(1, n / cols);
    Tensor logits = random_tensor({rows, cols}, DType::f32, device, 9);
    std::vector<int64_t> t(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) t[static_cast<size_t>(i)] = (i * 7919) % cols;
    Tensor targets = Tensor::from_vector(t).to(device);
    Tensor loss = Tensor::empty({rows}, DType::f32, device), valid = Tensor::empty({rows}, DType::f32, device);
    Tensor lse = Tensor::empty({rows}, DType::f32, device), mean = Tensor::empty({2}, DType::f32, device);
    out.push_back({"cross-entropy", dims({rows, cols}), f * rows * cols + (8.0 + 3 * f) * rows,
                   [=] { ORDO_BACKEND(device, cross_entropy)(loss, valid, lse, mean, logits, Tensor(), targets, -100); }});
  }
  return out;
}

// Measures the cases and prints them against `copy_rate` (bytes/s).
json::Value memory_table(const char* title, const char* copy_name, double copy_rate,
                         std::vector<MemCase> cases, Device device, const TimingPlan& plan) {
  std::vector<double> rates;
  for (const auto& c : cases) rates.push_back(c.bytes / bench::measure(c.run, device, plan).seconds);
  std::printf("\n%s, GB/s (bytes read + written; %%copy: of %s at %.1f GB/s)\n", title, copy_name,
              copy_rate / 1e9);
  Table table({"kernel", "shape", "MB/call", "GB/s", "%copy"});
  json::Value rows = json::Value::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    table.add({cases[i].op, cases[i].shape, fixed(cases[i].bytes / 1e6, 1), fixed(rates[i] / 1e9, 1),
               fixed(100 * rates[i] / copy_rate, 0)});
    json::Value v = json::Value::object();
    v["kernel"] = cases[i].op;
    v["shape"] = cases[i].shape;
    v["bytes"] = cases[i].bytes;
    v["gbps"] = rates[i] / 1e9;
    rows.push_back(v);
  }
  table.print();
  return rows;
}

json::Value cpu_memory(const Options& opt) {
  // 16M f32 (64 MB per tensor): well past the last-level cache, so these are DRAM rates.
  int64_t n = opt.quick ? (int64_t(1) << 18) : (int64_t(1) << 24);
  double copy_rate = bench::measure_memcpy_bandwidth(static_cast<size_t>(n) * 4, opt.plan);
  json::Value out = json::Value::object();
  out["memcpy_gbps"] = copy_rate / 1e9;
  out["kernels"] = memory_table("CPU memory-bound kernels, f32", "memcpy", copy_rate,
                                memory_cases(Device::cpu(), n, false), Device::cpu(), opt.plan);
  return out;
}

// ---- GPU ----------------------------------------------------------------------------------

json::Value gpu_all(const Options& opt) {
  Device device = Device::cuda(0);
  std::vector<GemmCase> cases = square_cases(
      DType::f32, opt.quick ? std::vector<int64_t>{1024} : std::vector<int64_t>{1024, 2048, 4096, 8192});
  for (const auto& g : transformer_cases(opt.quick)) cases.push_back(g);
  auto kernel = ORDO_BACKEND(device, gemm);
  std::vector<double> fp32(cases.size()), tf32(cases.size()), bf16(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    fp32[i] = gemm_rate(cases[i], device, kernel, opt.plan, MatmulPrecision::fp32);
    tf32[i] = gemm_rate(cases[i], device, kernel, opt.plan, MatmulPrecision::tf32);
    bf16[i] = gemm_rate(cases[i], device, kernel, opt.plan, MatmulPrecision::bf16);
  }
  std::printf("\nGPU matrix products (cuBLAS), TFLOP/s\n");
  Table table({"product", "shape", "fp32", "TF32", "bf16"});
  json::Value rows = json::Value::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    table.add({cases[i].name, cases[i].shape(), fixed(fp32[i] / 1e12, 1), fixed(tf32[i] / 1e12, 1),
               fixed(bf16[i] / 1e12, 1)});
    json::Value v = gemm_json(cases[i]);
    v["fp32_tflops"] = fp32[i] / 1e12;
    v["tf32_tflops"] = tf32[i] / 1e12;
    v["bf16_tflops"] = bf16[i] / 1e12;
    rows.push_back(v);
  }
  table.print();

  // 64M f32 (256 MB per tensor), far past the GPU's L2.
  int64_t n = opt.quick ? (int64_t(1) << 20) : (int64_t(1) << 26);
  Tensor src = random_tensor({n}, DType::f32, device, 10), dst = Tensor::empty({n}, DType::f32, device);
  double copy_rate = 2.0 * 4 * n / bench::measure([&] { ORDO_BACKEND(device, copy)(dst, src); }, device, opt.plan).seconds;
  json::Value out = json::Value::object();
  out["matmul"] = rows;
  out["copy_gbps"] = copy_rate / 1e9;
  out["kernels"] = memory_table("GPU memory-bound kernels, f32", "the device-to-device copy kernel",
                                copy_rate, memory_cases(device, n, true), device, opt.plan);
  return out;
}

// ---- the commands ---------------------------------------------------------------------------

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  return in >> one ? one : "unknown";
}

int bench_ops(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"json"}, {"quick"});
  Options opt;
  opt.quick = args.has("quick");
  if (opt.quick) opt.plan = TimingPlan{0.005, 3};
  std::string json_path = args.str("json", "");

  std::string gpu = cuda_available() ? cuda_device_description(0) : "none (" + cuda_device_description(0) + ")";
  std::printf("ordo bench ops%s\n", opt.quick ? " --quick (small sizes, short timings: a smoke test)" : "");
  std::printf("CPU: %s, %d threads\nBLAS: %s\nGPU: %s\n", bench::cpu_model().c_str(),
              bench::cpu_threads(), cpu::blas_description().c_str(), gpu.c_str());
  std::printf("timing: median of %d samples of >= %.0f ms each, after warm-up; load average at start: %s\n\n",
              opt.plan.samples, opt.plan.sample_seconds * 1e3, load_average().c_str());
  std::fflush(stdout);

  json::Value report = json::Value::object();
  json::Value machine = json::Value::object();
  machine["cpu"] = bench::cpu_model();
  machine["threads"] = bench::cpu_threads();
  machine["blas"] = cpu::blas_description();
  machine["gpu"] = cuda_available() ? json::Value(cuda_device_description(0)) : json::Value();
  machine["load_average"] = load_average();
  report["machine"] = machine;
  report["quick"] = opt.quick;
  report["samples"] = opt.plan.samples;

  json::Value cpu = cpu_matmul(opt);
  json::Value memory = cpu_memory(opt);
  for (const auto& member : memory.items()) cpu[member.first] = member.second;
  report["cpu"] = cpu;

  if (cuda_available()) {
    report["gpu"] = gpu_all(opt);
  } else {
    std::printf("\nGPU: no GPU, nothing measured\n");
    report["gpu"] = json::Value();
  }
  if (!json_path.empty()) {
    write_file_atomic(json_path, json::dump(report, 2) + "\n");
    std::printf("\nwrote %s\n", json_path.c_str());
  }
  return 0;
}

// Every registered "bench <what>" command, one after another.
int bench_all(const std::vector<std::string>& argv) {
  cli::Args args(argv, {});
  int failed = 0;
  for (const auto& command : cli::commands()) {
    if (command.name.compare(0, 6, "bench ") != 0) continue;
    std::printf("==== ordo %s ====\n", command.name.c_str());
    std::fflush(stdout);
    int rc = 1;
    try {
      rc = command.run({});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ordo %s: error: %s\n", command.name.c_str(), e.what());
    }
    if (rc != 0) {
      std::printf("ordo %s failed (exit %d)\n", command.name.c_str(), rc);
      ++failed;
    }
    std::printf("\n");
  }
  return failed == 0 ? 0 : 1;
}

cli::Register ops_command({"bench ops", "kernel throughput: matrix products, memory-bound kernels (CPU, GPU)",
                           "[--quick] [--json FILE]\n"
                           "  --quick      small sizes and short timings (a smoke test, not a measurement)\n"
                           "  --json FILE  also write the results as JSON",
                           bench_ops});
cli::Register all_command({"bench", "run every benchmark (each `ordo bench ...` command)", "(no flags)",
                           bench_all});

}  // namespace
}  // namespace ordo
