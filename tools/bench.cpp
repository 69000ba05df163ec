#include "tools/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <malloc.h>

#include "base/error.h"
#include "tensor/cpu/gemm_own.h"
#include "tensor/device_runtime.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace ordo::bench {

namespace {

double now() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Seconds taken by `calls` calls of fn, device work included.
double time_calls(const std::function<void()>& fn, Device device, int calls) {
  synchronize(device);
  double start = now();
  for (int i = 0; i < calls; ++i) fn();
  synchronize(device);
  return now() - start;
}

}  // namespace

Timing measure(const std::function<void()>& fn, Device device, const TimingPlan& plan) {
  // The first call pays for first touches and allocator growth; then calls
  // repeat for about one sample's time (caches, clocks and the GPU's
  // allocator settle), which also tells how many calls fill a sample.
  double first = time_calls(fn, device, 1);
  int calls = 1;
  double warm = first;
  while (warm < plan.sample_seconds && calls < (1 << 20)) {
    calls *= 2;
    warm = time_calls(fn, device, calls);
  }
  double per_call = warm / calls;
  int per_sample = static_cast<int>(std::clamp(plan.sample_seconds / std::max(per_call, 1e-9), 1.0, 1e6));
  std::vector<double> samples;
  for (int s = 0; s < plan.samples; ++s) samples.push_back(time_calls(fn, device, per_sample) / per_sample);
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return Timing{samples[samples.size() / 2], per_sample, plan.samples};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 10, "model name") == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "unknown CPU" : line.substr(start);
      }
    }
  }
  return "unknown CPU";
}

int cpu_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace {

// Keeps the FMA loops' results alive (the compiler may not drop them).
volatile double g_sink = 0;

// The vectors the own matrix-product kernel uses.
constexpr int kFmaVectorBytes = cpu::kGemmOwnVectorBytes;
typedef float FloatLanes __attribute__((vector_size(kFmaVectorBytes)));
typedef double DoubleLanes __attribute__((vector_size(kFmaVectorBytes)));

// `iterations` rounds of 12 independent FMA chains: FMA latency (4 cycles on
// Zen 3 and Skylake) x 2 FMA pipes needs at least 8 chains in flight.
template <class V, class T>
T fma_chains(int64_t iterations, T seed) {
  constexpr int kChains = 12;
  constexpr int kLanes = sizeof(V) / sizeof(T);
  V acc[kChains], x, y;
  for (int l = 0; l < kLanes; ++l) {
    x[l] = T(1) - seed;  // acc -> y / (1 - x): stays finite and normal
    y[l] = seed;
    for (int c = 0; c < kChains; ++c) acc[c][l] = T(c + l);
  }
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * x + y;
  T sum = 0;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < kLanes; ++l) sum += acc[c][l];
  return sum;
}

}  // namespace

double measure_fma_peak(bool f64, const TimingPlan& plan) {
  constexpr int64_t kIterations = 1 << 18;
  int threads = cpu_threads();
  double seed = 1e-7 + g_sink * 0;  // read at run time: no constant folding
  auto run = [&] {
    double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += f64 ? fma_chains<DoubleLanes>(kIterations, seed)
                 : fma_chains<FloatLanes>(kIterations, static_cast<float>(seed));
    g_sink = g_sink + total;
  };
  Timing t = measure(run, Device::cpu(), plan);
  double lanes = kFmaVectorBytes / (f64 ? 8 : 4);
  return threads * static_cast<double>(kIterations) * 12 * lanes * 2 / t.seconds;
}

double measure_memcpy_bandwidth(size_t bytes, const TimingPlan& plan) {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  size_t rounded = (bytes + 63) / 64 * 64;
  std::unique_ptr<char, Free> src(static_cast<char*>(std::aligned_alloc(64, rounded)));
  std::unique_ptr<char, Free> dst(static_cast<char*>(std::aligned_alloc(64, rounded)));
  ORDO_CHECK(src && dst, "bench: out of memory for two buffers of ", bytes, " bytes");
  int threads = cpu_threads();
  // Each thread copies the same contiguous share every time (and touched it
  // first), as the ordo kernels' static schedules do.
  auto copy = [&](bool first_touch) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int t = 0; t < threads; ++t) {
      size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
      if (first_touch) std::memset(src.get() + begin, t + 1, end - begin);
      std::memcpy(dst.get() + begin, src.get() + begin, end - begin);
    }
  };
  copy(true);
  Timing t = measure([&] { copy(false); }, Device::cpu(), plan);
  return 2.0 * static_cast<double>(bytes) / t.seconds;
}

Table::Table(std::vector<std::string> headers) { rows_.push_back(std::move(headers)); }

void Table::add(std::vector<std::string> row) {
  ORDO_ASSERT(row.size() == rows_[0].size());
  rows_.push_back(std::move(row));
}

void Table::print(std::FILE* out) const {
  std::vector<size_t> width(rows_[0].size(), 0);
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string pad(width[i] - row[i].size(), ' ');
      line += i == 0 ? row[i] + pad : "  " + pad + row[i];
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

namespace {

// A "Name:   N kB" field of /proc/self/status in KiB; -1 where absent.
long status_kib(const std::string& name) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(name + ":", 0) == 0) {
      std::istringstream fields(line.substr(name.size() + 1));
      long kib = -1;
      fields >> kib;
      return kib;
    }
  return -1;
}

}  // namespace

ResidentPeak::ResidentPeak() {
  empty_cache(Device::cpu());
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // resets VmHWM to the resident set now (Linux 4.0+)
  clear.close();
  if (clear) base_kib_ = status_kib("VmRSS");
}

double ResidentPeak::mib() const {
  const long peak = status_kib("VmHWM");
  return base_kib_ < 0 || peak < 0 ? -1 : static_cast<double>(peak - base_kib_) / 1024.0;
}

std::map<std::string, std::vector<double>> command_figures(const std::string& command) {
  std::map<std::string, std::vector<double>> figures;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return figures;
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  pclose(pipe);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    std::vector<double> values;
    for (double v; fields >> v;) values.push_back(v);
    if (!key.empty() && !values.empty() && fields.eof()) figures[key] = values;
  }
  return figures;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace ordo::bench
