#include "tensor/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace ordo {

RooflineMachine h100_sxm() {
  RooflineMachine m;
  m.name = "NVIDIA H100 SXM5 80GB";
  m.bytes_per_second = 3.35e12;
  m.fp32_flops = 67e12;
  m.tf32_flops = 494.7e12;
  m.bf16_flops = 989.4e12;
  m.launch_seconds = 3e-6;
  m.source =
      "NVIDIA H100 Tensor Core GPU datasheet (SXM5: HBM3 3.35 TB/s, FP32 67 TFLOPS, TF32 tensor core 989 TFLOPS "
      "and bf16 1979 TFLOPS with sparsity = 494.7 and 989.4 dense); launch overhead 3 us per kernel is an "
      "assumption (the usual gap between back-to-back small kernels without CUDA graphs), not a measurement";
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
      {"copy", 0},           {"fill", 0},           {"pad_slice", 0},      {"index_select", 0},   {"gather", 0},
      {"relative_gather", 0}, {"binary", 1},        {"where", 1},          {"reduce", 1},
      {"argmax", 1},         {"index_add", 1},      {"scatter_add", 1},    {"relative_scatter", 1},
      {"embedding_sum_backward", 1},
      {"sum_squares", 2},    {"unary", 4},          {"unary_backward", 6}, {"softmax_backward", 3},
      {"softmax", 5},        {"cross_entropy", 4},  {"cross_entropy_backward", 4},
      {"layernorm", 8},      {"layernorm_backward", 12},  {"adamw", 12},
      {"dropout", 15},       {"random", 15},  // Philox4x32-10: ~60 integer ops per 4 numbers
      {"residual_layernorm", 25}, {"residual_layernorm_backward", 30},  // layernorm's and dropout's
      {"bias_activation", 20},    {"bias_activation_backward", 24},     // erf's polynomial, and its derivative
      {"bias_activation_layernorm", 28}, {"bias_activation_layernorm_backward", 36},  // the two above summed
  };
  auto it = table.find(kernel);
  return it == table.end() ? 1 : it->second;
}

// The shape of a fused attention call's arithmetic: its (query, key) pairs
// (a causal mask halves them), the FLOPs of a pair's score (2 (d + extra):
// extra the multiply-adds of the position terms per pair, kernel_calls.cpp)
// and of its share of P v (2 d), and whether it runs on tensor-core tiles
// (and the tables' gradients with them). Integers: forward [extra, causal,
// tiles]; backward [tables, extra, causal, tiles: 0, 1, or 2 with the
// tables]; vectors: the d-wide terms per pair among the extra (Shaw's A
// and V; a gate adds 1). pairs = 0 when the call is not described so.
struct AttentionWork {
  bool forward = false, tables = false, tiles = false, tables_on_tiles = false;
  double pairs = 0, scores = 0, product = 0, d = 0, extra = 0, vectors = 0;
};
AttentionWork attention_work(const KernelCall& call) {
  AttentionWork w;
  w.forward = std::strcmp(call.kernel, "attention_forward") == 0;
  // forward: out, out_operand, lse, q, k, v; backward: gout, q, k, v, out, lse
  const size_t q = w.forward ? 3 : 1, k = q + 1;
  const size_t first = w.forward ? 0 : 1;
  if (call.shapes.size() <= k || call.shapes[q].size() != 4 || call.integers.size() < first + 2) return w;
  const Shape& qs = call.shapes[q];
  w.d = static_cast<double>(qs[3]), w.extra = static_cast<double>(call.integers[first]);
  w.pairs = static_cast<double>(qs[0]) * static_cast<double>(qs[1]) * static_cast<double>(qs[2]) *
            static_cast<double>(call.shapes[k][2]);
  if (call.integers[first + 1] != 0) w.pairs = w.pairs / 2;
  w.scores = 2 * (w.d + w.extra), w.product = 2 * w.d;
  w.vectors = w.d > 0 ? std::floor(w.extra / w.d) : 0;
  w.tables = !w.forward && call.integers[0] != 0;
  w.tiles = call.integers.size() > first + 2 && call.integers[first + 2] != 0;
  w.tables_on_tiles = w.tables && w.tiles && call.integers[first + 2] == 2;
  return w;
}

// The fused attention's arithmetic (tensor/cuda/attention.cu), recomputation
// included: per pair, the score and P v forward; the backward recomputes the
// scores and dP in each of its two passes (by query rows, by key rows), then
// forms dq, dk and dv, and when tables are learned a third pass over the
// pairs recomputes them again and forms the tables' terms — or, on the
// tiles, the backward by query rows adds each pair's dS and scale c dS to
// their rows' bins (4 FLOPs a pair), and Shaw's relative vectors' pass by
// distance forms S and dP over 3 keys a pair (the skew, 12 d) and per table
// (A or V) a dot product and a gradient's product (4 d).
double attention_flops(const KernelCall& call) {
  const AttentionWork w = attention_work(call);
  if (w.forward) return w.pairs * (w.scores + w.product);
  const double on_tiles = w.vectors > 0 ? (12 + 4 * w.vectors) * w.d : 4;
  const double tables = !w.tables ? 0 : w.tables_on_tiles ? on_tiles : w.scores + w.product + 2 * (w.d + w.extra);
  return w.pairs * (2 * (w.scores + w.product) + 3 * w.product + tables);
}

// Seconds of arithmetic at peak: on tensor-core tiles (attention_tiles.cu)
// the products — q . k and P v forward; S and dP in each of the backward's
// two passes, and dq, dk and dv: 7 of 2 d FLOPs a pair — at the bf16 peak,
// the rest (the position terms, the tables' FP32 pass) at FP32's. Shaw's
// relative vectors on the tiles (extra = d a table: a d-wide dot product a
// pair) are products over a window of 48 distances a step of 32 keys, 1.5
// of a product each, each table counted as A's: G forward, G by query and
// by key rows and dS_w A backward (V's: P~_w V_w forward, G twice
// backward), which stand for the pairs' dot products (once a score) and dS
// A (2 d each); their gradients by distance add 6 + 2 per table products of
// 2 d a pair.
double attention_seconds(const KernelCall& call, const RooflineMachine& machine) {
  const AttentionWork w = attention_work(call);
  const double all = attention_flops(call);
  if (!w.tiles) return all / machine.fp32_flops;
  const double v = w.vectors, by_distance = w.tables_on_tiles && v > 0 ? 6 + 2 * v : 0;
  const double products = w.pairs * 2 * w.d * (w.forward ? 2 + 1.5 * v : 7 + 4.5 * v + by_distance);
  const double covered = w.pairs * 2 * w.d * (w.forward ? 2 + v : 7 + 3 * v + by_distance);
  return products / machine.bf16_flops + std::max(0.0, all - covered) / machine.fp32_flops;
}

// The same attention's work as a model FLOP count takes it (what the unfused
// attention's products count): the scores and P v forward, twice that
// backward, no recomputation.
double attention_model_flops(const KernelCall& call) {
  const AttentionWork w = attention_work(call);
  return w.pairs * (w.scores + w.product) * (w.forward ? 1 : 2);
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
  // The multi-tensor step's elements are all its tensors', not its largest
  // one's: global_norm_and_clip (out, partials, the n gradients, the table)
  // and adamw_multi (the n params, grads, m and v, then two small tensors).
  if (name == "global_norm_and_clip" && call.shapes.size() >= 3) {
    double elements = 0;
    for (size_t i = 2; i + 1 < call.shapes.size(); ++i) elements += numel(call.shapes[i]);
    return 2.0 * elements;
  }
  if (name == "adamw_multi" && call.shapes.size() >= 6) {
    const size_t n = (call.shapes.size() - 2) / 4;
    double elements = 0;
    for (size_t i = 0; i < n; ++i) elements += numel(call.shapes[i]);
    return per_element_flops("adamw") * elements;
  }
  if (name == "attention_forward" || name == "attention_backward") return attention_flops(call);
  return per_element_flops(call.kernel) * largest_tensor(call);
}

int64_t kernel_launches(const KernelCall& call) {
  return call.launches + (std::strcmp(call.kernel, "gemm") == 0 ? 1 : 0);
}

double kernel_peak(const KernelCall& call, const RooflineMachine& machine) {
  if (std::strcmp(call.kernel, "gemm") != 0) return machine.fp32_flops;
  switch (call.precision) {
    case MatmulPrecision::tf32: return machine.tf32_flops;
    case MatmulPrecision::bf16: return machine.bf16_flops;
    case MatmulPrecision::fp32: break;
  }
  return machine.fp32_flops;
}

double kernel_compute_seconds(const KernelCall& call, const RooflineMachine& machine) {
  const bool attention =
      std::strcmp(call.kernel, "attention_forward") == 0 || std::strcmp(call.kernel, "attention_backward") == 0;
  return attention ? attention_seconds(call, machine) : kernel_flops(call) / kernel_peak(call, machine);
}

double product_flops(const std::vector<KernelCall>& calls) {
  double flops = 0;
  for (const KernelCall& call : calls)
    if (std::strcmp(call.kernel, "gemm") == 0 || std::strncmp(call.kernel, "relative_product", 16) == 0)
      flops += kernel_flops(call);
    else if (std::strncmp(call.kernel, "attention_", 10) == 0)
      flops += attention_model_flops(call);
  return flops;
}

Roofline roofline(const std::vector<KernelCall>& calls, const RooflineMachine& machine) {
  std::map<std::string, RooflineRow> by_kernel;
  Roofline result;
  result.total.kernel = "total";
  for (const KernelCall& call : calls) {
    const double flops = kernel_flops(call);
    const double memory = call.bytes / machine.bytes_per_second;
    const double compute = kernel_compute_seconds(call, machine);
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
