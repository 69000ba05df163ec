// What the `ordo bench ...` commands share: timing, the machine, peaks to
// compare against, and aligned tables.
//
// Benchmarks measure and print; they never assert a speed (tests do not time).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace ordo::bench {

// How long to measure: `samples` timed samples of about `sample_seconds`
// each, after warm-up calls that last about one sample.
struct TimingPlan {
  double sample_seconds = 0.05;
  int samples = 7;
};

struct Timing {
  double seconds = 0;        // per call: the median sample
  int calls_per_sample = 0;  // calls timed together in each sample
  int samples = 0;
};

// Times fn. On a CUDA device, device work is waited for (ordo::synchronize)
// before and after each sample, so queued kernels are counted in full.
Timing measure(const std::function<void()>& fn, Device device, const TimingPlan& plan);

// "AMD EPYC 7B13" from /proc/cpuinfo ("unknown CPU" where there is none).
std::string cpu_model();
// Threads ordo's CPU kernels run on (OpenMP's maximum; 1 without OpenMP).
int cpu_threads();

// Peak f32 (or f64) multiply-add rate of all cores together in FLOP/s
// (an FMA counts two), measured by a register-resident loop of independent
// vector FMAs on every thread (cpu::kGemmOwnVectorBytes wide, as the own
// matrix product): the ceiling no matrix product can pass.
double measure_fma_peak(bool f64, const TimingPlan& plan);

// Host memory bandwidth in bytes/s of std::memcpy over `bytes`, split among
// the threads, counting bytes read plus bytes written.
double measure_memcpy_bandwidth(size_t bytes, const TimingPlan& plan);

// What a phase adds to this process's peak resident memory (Linux): built
// with the host's cached blocks and malloc's free memory returned to the
// system, the resident set then as the base and its high-water mark reset
// (/proc/self/clear_refs); mib() is the high-water mark since, less the base.
// Libraries and what earlier phases freed are left out, as in
// scripts/bench_torch*.py's figure for PyTorch, so the two compare.
class ResidentPeak {
 public:
  ResidentPeak();
  double mib() const;  // -1 where /proc cannot say

 private:
  long base_kib_ = -1;
};

// Runs a shell command (a twin script) and reads the lines of its standard
// output that are a key and numbers ("tokens_per_s 123.4 56.7"); empty where
// it could not run.
std::map<std::string, std::vector<double>> command_figures(const std::string& command);

// A text table: the first column left-aligned, the others right-aligned,
// each as wide as its widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add(std::vector<std::string> row);  // as many cells as headers
  void print(std::FILE* out = stdout) const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0]: the headers
};

// value with `decimals` digits after the point ("12.3").
std::string fixed(double value, int decimals);

}  // namespace ordo::bench
