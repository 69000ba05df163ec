#include "tensor/roofline.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace ordo {

RooflineMachine h100_sxm() {
  RooflineMachine m;
  m.name = "NVIDIA H100 SXM5 80GB";
  m.bytes_per_second = 3.35e12;
  m.fp32_flops = 67e12;
  m.tf32_flops = 494.7e12;
  m.launch_seconds = 3e-6;
  m.source =
      "NVIDIA H100 Tensor Core GPU datasheet (SXM5: HBM3 3.35 TB/s, FP32 67 TFLOPS, TF32 tensor core 989 TFLOPS "
      "with sparsity = 494.7 dense); launch overhead 3 us per kernel is an assumption (the usual gap between "
      "back-to-back small kernels without CUDA graphs), not a measurement";
  return m;
}

namespace {

double numel(const Shape& s) { return static_cast<double>(shape_numel(s)); }

double largest_tensor(const KernelCall& call) {
  double most = 0;
  for (const Shape& s : call.shapes) most = std::max(most, numel(s));
  return most;
}

// FLOPs per element of the largest tensor for the memory-bound kernels.
double per_element_flops(const char* kernel) {
  static const std::map<std::string, double> table = {
      {"copy", 0},           {"fill", 0},           {"index_select", 0},   {"gather", 0},
      {"relative_gather", 0}, {"binary", 1},        {"where", 1},          {"reduce", 1},
      {"argmax", 1},         {"index_add", 1},      {"scatter_add", 1},    {"relative_scatter", 1},
      {"sum_squares", 2},    {"unary", 4},          {"unary_backward", 6}, {"softmax_backward", 3},
      {"softmax", 5},        {"cross_entropy", 4},  {"cross_entropy_backward", 4},
      {"layernorm", 8},      {"layernorm_backward", 12},  {"adamw", 12},
      {"dropout", 15},       {"random", 15},  // Philox4x32-10: ~60 integer ops per 4 numbers
  };
  auto it = table.find(kernel);
  return it == table.end() ? 1 : it->second;
}

}  // namespace

namespace {

// The fused attention's arithmetic (tensor/cuda/attention.cu), recomputation
// included: per (query, key) pair, 2 (d + extra) FLOPs for the scores and 2 d
// for P v forward; the backward recomputes the scores and dP in each of its
// two passes (by query rows, by key rows), then forms dq, dk and dv, and when
// tables are learned a third pass over the pairs recomputes them again and
// forms the tables' terms. extra: the multiply-adds of the position terms per
// pair (kernel_calls.cpp); a causal mask halves the pairs.
// Integers: forward [extra, causal]; backward [tables, extra, causal].
double attention_flops(const KernelCall& call) {
  const bool forward = std::strcmp(call.kernel, "attention_forward") == 0;
  const size_t q = forward ? 2 : 1, k = q + 1;  // forward: out, lse, q, k, v; backward: gout, q, k, v, out, lse
  const size_t first = forward ? 0 : 1;
  if (call.shapes.size() <= k || call.shapes[q].size() != 4 || call.integers.size() < first + 2) return 0;
  const Shape& qs = call.shapes[q];
  const double d = static_cast<double>(qs[3]), extra = static_cast<double>(call.integers[first]);
  double pairs = static_cast<double>(qs[0]) * static_cast<double>(qs[1]) * static_cast<double>(qs[2]) *
                 static_cast<double>(call.shapes[k][2]);
  if (call.integers[first + 1] != 0) pairs = pairs / 2;
  const double scores = 2 * (d + extra), product = 2 * d;
  if (forward) return pairs * (scores + product);
  const bool tables = call.integers[0] != 0;
  return pairs * (2 * (scores + product) + 3 * product + (tables ? scores + product + 2 * (d + extra) : 0));
}

}  // namespace

double kernel_flops(const KernelCall& call) {
  const std::string name = call.kernel;
  if (name == "gemm" && call.integers.size() >= 4)
    return 2.0 * static_cast<double>(call.integers[0]) * static_cast<double>(call.integers[1]) *
           static_cast<double>(call.integers[2]) * static_cast<double>(call.integers[3]);
  // s [B, H, L, J] from q [B, H, L, D]: a multiply-add and a multiply per (i, j, d).
  if (name == "relative_product" && call.shapes.size() >= 2 && !call.shapes[1].empty())
    return 3.0 * numel(call.shapes[0]) * static_cast<double>(call.shapes[1].back());
  // Three such sums (gq, gk, ga) from gs [B, H, L, J] and q (the fifth tensor).
  if (name == "relative_product_backward" && call.shapes.size() >= 5 && !call.shapes[4].empty())
    return 9.0 * numel(call.shapes[3]) * static_cast<double>(call.shapes[4].back());
  if (name == "attention_forward" || name == "attention_backward") return attention_flops(call);
  return per_element_flops(call.kernel) * largest_tensor(call);
}

int64_t kernel_launches(const KernelCall& call) {
  return call.launches + (std::strcmp(call.kernel, "gemm") == 0 ? 1 : 0);
}

Roofline roofline(const std::vector<KernelCall>& calls, const RooflineMachine& machine, bool tf32) {
  std::map<std::string, RooflineRow> by_kernel;
  Roofline result;
  result.total.kernel = "total";
  for (const KernelCall& call : calls) {
    const bool tensor_cores = tf32 && std::strcmp(call.kernel, "gemm") == 0;
    const double flops = kernel_flops(call);
    const double memory = call.bytes / machine.bytes_per_second;
    const double compute = flops / (tensor_cores ? machine.tf32_flops : machine.fp32_flops);
    const int64_t launches = kernel_launches(call);
    for (RooflineRow* row : {&by_kernel[call.kernel], &result.total}) {
      row->calls += 1;
      row->launches += launches;
      row->bytes += call.bytes;
      row->flops += flops;
      (compute > memory ? row->compute_seconds : row->memory_seconds) += std::max(memory, compute);
      row->launch_seconds += static_cast<double>(launches) * machine.launch_seconds;
    }
  }
  auto add_up = [](RooflineRow& row) { row.seconds = row.memory_seconds + row.compute_seconds + row.launch_seconds; };
  for (auto& [name, row] : by_kernel) {
    row.kernel = name;
    add_up(row);
    result.rows.push_back(row);
  }
  add_up(result.total);
  std::sort(result.rows.begin(), result.rows.end(),
            [](const RooflineRow& a, const RooflineRow& b) { return a.seconds > b.seconds; });
  return result;
}

}  // namespace ordo
