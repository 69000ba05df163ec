// Shared test helpers: random inputs that do not come from the code under
// test, and element-by-element comparison with a stated tolerance.
#pragma once

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "nn/bert_config.h"
#include "tensor/safetensors.h"
#include "tensor/tensor.h"

namespace ordo::test {

// Values uniform in [low, high) from std::mt19937_64 (whose output sequence
// the C++ standard fixes), independent of ordo's own Philox generator.
inline std::vector<double> random_values(int64_t n, uint64_t seed, double low = -1, double high = 1) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = low + (high - low) * (static_cast<double>(gen() >> 11) * 0x1p-53);
  return v;
}

inline Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype = DType::f64,
                            double low = -1, double high = 1) {
  return Tensor::from_vector(random_values(shape_numel(shape), seed, low, high), shape).to(dtype);
}

inline Tensor f64(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

inline Tensor i64(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

// Every element within atol + rtol * |expected|; the first violations are reported.
inline void require_close(const Tensor& actual, const std::vector<double>& expected, double rtol,
                          double atol, const std::string& what = "") {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  std::vector<double> got = actual.to_doubles();
  std::ostringstream bad;
  int violations = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::fabs(got[i] - expected[i]) <= atol + rtol * std::fabs(expected[i]) ||
              (std::isinf(expected[i]) && got[i] == expected[i]);
    if (!ok && violations++ < 5) bad << "  [" << i << "] got " << got[i] << ", expected " << expected[i] << "\n";
  }
  INFO("violations: " << violations << "\n" << bad.str());
  REQUIRE(violations == 0);
}

inline void require_close(const Tensor& actual, const Tensor& expected, double rtol, double atol,
                          const std::string& what = "") {
  REQUIRE(actual.shape() == expected.shape());
  require_close(actual, expected.to_doubles(), rtol, atol, what);
}

// Exact equality of every element's bits (determinism checks).
inline bool bit_identical(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.to(Device::cpu()).contiguous(), cb = b.to(Device::cpu()).contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

// max |actual - expected| / max |expected| over the tensor: the per-tensor
// error the golden-file tests bound (expected all zero: the plain max |diff|).
inline double relative_error(const Tensor& actual, const Tensor& expected) {
  std::vector<double> a = actual.to_doubles(), b = expected.to_doubles();
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// max |element| of a tensor (0 for an empty one).
inline double max_abs(const Tensor& t) {
  double m = 0;
  for (double x : t.to_doubles()) m = std::max(m, std::fabs(x));
  return m;
}

// Every tensor of a safetensors file by name.
inline std::map<std::string, Tensor> load_tensors(const std::string& path) {
  std::map<std::string, Tensor> m;
  for (auto& [name, t] : safetensors::load(path)) m.emplace(name, t);
  return m;
}

// A BERT small enough for loops in the tests, of the sizes given; without
// dropout (training-mode passes are then functions of their inputs) unless
// `dropout` keeps BertConfig's default rates. Every other field is
// BertConfig's default.
inline nn::BertConfig tiny_bert_config(int64_t vocab_size, int64_t hidden_size, int64_t layers, int64_t heads,
                                       int64_t intermediate_size, int64_t max_position_embeddings,
                                       bool dropout = false) {
  nn::BertConfig c;
  c.vocab_size = vocab_size;
  c.hidden_size = hidden_size;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.intermediate_size = intermediate_size;
  c.max_position_embeddings = max_position_embeddings;
  if (!dropout) c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;
  return c;
}

// A fresh directory under the system's temporary directory, removed with
// everything in it when the object goes out of scope.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("ordo-" + tag + "-XXXXXX")).string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string operator/(const std::string& name) const { return file(name); }
  // Writes a file inside (atomically not needed here) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = file(name);
    std::FILE* f = std::fopen(p.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(text.data(), 1, text.size(), f) == text.size());
    std::fclose(f);
    return p;
  }
  // The names of the entries directly inside.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(path)) out.push_back(entry.path().filename());
    return out;
  }
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line and collects its output (stdout and stderr).
inline CommandResult run_command(const std::string& command_line) {
  std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  CommandResult r;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs the ordo binary of this build with `args` (shell words) and collects
// its output; `shell_prefix` runs first in the same shell (e.g. "cd DIR && ").
inline CommandResult run_ordo(const std::string& args, const std::string& shell_prefix = "") {
  return run_command(shell_prefix + std::string(ORDO_BINARY) + " " + args);
}

}  // namespace ordo::test
