// The kernel-call record (tensor/kernel_calls.h) and the roofline arithmetic
// (tensor/roofline.h). Expected values are worked by hand from the shapes:
// a product of [5, 7] by [7, 3] touches (35 + 21 + 15) f32 and needs 2·5·3·7 FLOPs.
#include <algorithm>


#include "tensor/ops.h"
#include "tensor/roofline.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::WithinRel;


TEST_CASE("kernel calls: a matrix product is recorded with its shapes, sizes and bytes", "[roofline]") {
  Tensor a = Tensor::ones({5, 7});
  Tensor b = Tensor::ones({7, 3});
  KernelCallRecording recording;
  Tensor c = matmul(a, b);
  std::vector<KernelCall> calls = recording.calls();
  auto gemm = std::find_if(calls.begin(), calls.end(), [](const KernelCall& k) { return std::string(k.kernel) == "gemm"; });
  REQUIRE(gemm != calls.end());
  CHECK(gemm->shapes == std::vector<Shape>{{5, 3}, {5, 7}, {7, 3}});
  CHECK(gemm->integers == std::vector<int64_t>{1, 5, 3, 7});
  CHECK(gemm->bytes == 4.0 * (15 + 35 + 21));
  CHECK(kernel_flops(*gemm) == 2.0 * 5 * 3 * 7);
  CHECK(gemm->launches == 0);        // the CPU launches nothing
  CHECK(kernel_launches(*gemm) == 1);  // cuBLAS's one launch, on a GPU
}

TEST_CASE("kernel calls: a Linear's one tall product counts its rows' FLOPs", "[roofline]") {
  Tensor x = Tensor::ones({4, 6, 7}), w = Tensor::ones({3, 7});
  KernelCallRecording recording;
  Tensor y = linear(x, w, Tensor());
  std::vector<KernelCall> calls = recording.calls();
  auto gemm = std::find_if(calls.begin(), calls.end(), [](const KernelCall& k) { return std::string(k.kernel) == "gemm"; });
  REQUIRE(gemm != calls.end());
  CHECK(gemm->integers == std::vector<int64_t>{1, 24, 3, 7});  // [4, 6] rows as one product
  CHECK(kernel_flops(*gemm) == 2.0 * 24 * 3 * 7);
}

TEST_CASE("kernel calls: nothing is recorded without a recording, and one recording at a time", "[roofline]") {
  Tensor a = Tensor::ones({4});
  (void)binary(BinaryOp::add, a, a);  // before any recording
  KernelCallRecording recording;
  CHECK(recording.calls().empty());
  CHECK_THROWS_WITH(KernelCallRecording(), Catch::Contains("one KernelCallRecording at a time"));
  (void)binary(BinaryOp::add, a, a);
  REQUIRE(recording.calls().size() == 1);
  CHECK(std::string(recording.calls()[0].kernel) == "binary");
}

TEST_CASE("kernel calls: a broadcast dimension's bytes count once", "[roofline]") {
  Tensor row = Tensor::ones({3});
  CHECK(distinct_bytes(row.expand({4, 3})) == 12.0);
  CHECK(distinct_bytes(Tensor::ones({4, 3}, DType::f64)) == 96.0);
  CHECK(distinct_bytes(Tensor()) == 0.0);
  KernelCallRecording recording;
  (void)binary(BinaryOp::add, Tensor::ones({4, 3}), row);  // out 48 B, a 48 B, b broadcast: 12 B
  REQUIRE(recording.calls().size() >= 1);
  CHECK(recording.calls().back().bytes == 48.0 + 48.0 + 12.0);
}

TEST_CASE("kernel flops: the relative product counts 3 FLOPs per (score, feature), its gradient 9", "[roofline]") {
  KernelCall forward;
  forward.kernel = "relative_product";
  forward.shapes = {{2, 3, 5, 5}, {2, 3, 5, 8}, {2, 3, 5, 8}, {3, 9, 8}, {2, 5, 5}};
  CHECK(kernel_flops(forward) == 3.0 * (2 * 3 * 5 * 5) * 8);
  KernelCall backward;
  backward.kernel = "relative_product_backward";
  backward.shapes = {{2, 3, 5, 8}, {2, 3, 5, 8}, {3, 9, 8}, {2, 3, 5, 5}, {2, 3, 5, 8}, {2, 3, 5, 8}, {3, 9, 8},
                     {2, 5, 5}};
  CHECK(kernel_flops(backward) == 9.0 * (2 * 3 * 5 * 5) * 8);
  KernelCall softmax;  // a memory-bound kernel: a per-element constant of its largest tensor
  softmax.kernel = "softmax";
  softmax.shapes = {{6, 10}, {6, 10}, {}};
  CHECK(kernel_flops(softmax) == 5.0 * 60);
}

TEST_CASE("roofline: each call is max(bytes / bandwidth, FLOPs / peak) plus its launches' overhead", "[roofline]") {
  RooflineMachine m;
  m.bytes_per_second = 1e9;
  m.fp32_flops = 1e9;
  m.tf32_flops = 4e9;
  m.launch_seconds = 1e-6;
  KernelCall product;  // 1 ms of bytes, 2 ms of FLOPs (2·1·100·100·100): compute-bound
  product.kernel = "gemm";
  product.integers = {1, 100, 100, 100};
  product.bytes = 1e6;
  KernelCall add;  // 4 ms of bytes, two launches
  add.kernel = "binary";
  add.shapes = {{1000}};
  add.bytes = 4e6;
  add.launches = 2;
  Roofline fp32 = roofline({product, add, add}, m);
  REQUIRE(fp32.rows.size() == 2);
  CHECK(fp32.rows[0].kernel == "binary");  // slowest first
  CHECK(fp32.rows[0].calls == 2);
  CHECK(fp32.rows[0].launches == 4);
  CHECK_THAT(fp32.rows[0].seconds, WithinRel(2 * 4e-3 + 4e-6, 1e-12));
  CHECK_THAT(fp32.rows[1].seconds, WithinRel(2e-3 + 1e-6, 1e-12));
  CHECK_THAT(fp32.rows[1].compute_seconds, WithinRel(2e-3, 1e-12));
  CHECK(fp32.rows[1].memory_seconds == 0);
  CHECK(fp32.total.launches == 5);
  CHECK_THAT(fp32.total.seconds, WithinRel(8e-3 + 2e-3 + 5e-6, 1e-12));
  // TF32: the product's FLOPs take 0.5 ms, so its 1 ms of bytes binds.
  product.precision = MatmulPrecision::tf32;
  Roofline tf32 = roofline({product}, m);
  CHECK_THAT(tf32.total.memory_seconds, WithinRel(1e-3, 1e-12));
  CHECK(tf32.total.compute_seconds == 0);
  // bf16 at 8e9: 0.25 ms of FLOPs; the add stays on the FP32 units.
  m.bf16_flops = 8e9;
  product.precision = MatmulPrecision::bf16;
  CHECK(kernel_peak(product, m) == 8e9);
  CHECK(kernel_peak(add, m) == 1e9);
  CHECK(product_flops({product, add}) == 2e6);
}

TEST_CASE("kernel flops: the multi-tensor AdamW counts every tensor's elements", "[roofline]") {
  KernelCall sums;  // out [2], partials [3], gradients [4, 5] and [7], the chunk table
  sums.kernel = "global_norm_and_clip";
  sums.shapes = {{2}, {3}, {4, 5}, {7}, {3, 3}};
  CHECK(kernel_flops(sums) == 2.0 * (20 + 7));
  KernelCall update;  // params, grads, m, v of [4, 5] and [7], then the norm and clip factor and the schedule
  update.kernel = "adamw_multi";
  update.shapes = {{4, 5}, {7}, {4, 5}, {7}, {4, 5}, {7}, {4, 5}, {7}, {2}, {3}};
  CHECK(kernel_flops(update) == 12.0 * (20 + 7));
}

#ifdef ORDO_HAS_CUDA
TEST_CASE("cuda: kernel calls on the device count the launches they made", "[cuda][roofline]") {
  Tensor a = Tensor::ones({4, 3}, DType::f32, Device::cuda(0));
  KernelCallRecording recording;
  (void)binary(BinaryOp::add, a, a);
  Tensor total = sum(a);
  std::vector<KernelCall> calls = recording.calls();
  REQUIRE(calls.size() >= 2);
  CHECK(std::string(calls[0].kernel) == "binary");
  CHECK(calls[0].launches == 1);
  CHECK(calls[0].device == Device::cuda(0));
  for (const KernelCall& call : calls) CHECK(call.launches >= 1);
}
#endif

TEST_CASE("kernel calls: the fused attention is recorded with its terms' bytes and its pairs' FLOPs", "[roofline]") {
  // B = 1, H = 2, L = J = 4, d = 8: 32 (query, key) pairs. Forward: 2 d for
  // the score and 2 d for P v per pair; with Shaw's query vectors (a d-wide
  // dot product more per pair) the score takes 2 (d + d).
  Tensor q = Tensor::ones({1, 2, 4, 8});
  AttentionTerms t;
  t.positions = Tensor::zeros({1, 4}, DType::i64);
  t.row_of = Tensor::zeros({1}, DType::i64);
  t.query_vectors = Tensor::ones({1, 3, 8});
  KernelCallRecording recording;
  (void)attention_forward(q, q, q, t);
  std::vector<KernelCall> calls = recording.calls();
  REQUIRE(calls.size() == 1);
  const KernelCall& call = calls[0];
  CHECK(std::string(call.kernel) == "attention_forward");
  // 8 multiply-adds beyond q . k and P v; not causal; not on tensor-core tiles (FP32 products, a vector term)
  CHECK(call.integers == std::vector<int64_t>{8, 0, 0});
  // out, no out_operand, lse, q, k, v; then the terms: the table [1, 3, 8], positions [1, 4] i64, row_of [1] i64.
  CHECK(call.bytes == 4.0 * (64 + 8 + 3 * 64) + 4.0 * 24 + 8.0 * 4 + 8.0);
  CHECK(kernel_flops(call) == 32.0 * (2 * (8 + 8) + 2 * 8));
}

TEST_CASE("kernel calls: the fused attention on tensor-core tiles is recorded as such", "[roofline]") {
  // Under bf16 products, scalar terms and heads 16 wide: the last integer.
  AttentionTerms tiled;
  tiled.bf16_products = true;
  const Tensor q16 = Tensor::ones({1, 2, 4, 16});
  KernelCallRecording recording;
  (void)attention_forward(q16, q16, q16, tiled);
  const std::vector<KernelCall> calls = recording.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].integers == std::vector<int64_t>{0, 0, 1});
}

namespace {

// Relative terms on B = 1, H = 2, L = J = 4 (distances -3..3, a row each)
// under bf16 products: 32 (query, key) pairs of heads 16 wide.
AttentionTerms relative_terms() {
  AttentionTerms t;
  t.bf16_products = true;
  t.positions = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3}, {1, 4});
  t.row_of = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}, {7});
  t.first_distance = -3;
  return t;
}

// The one recorded call of attention_backward with terms t on q = k = v =
// dO = ones [1, 2, 4, 16], the gradients `needs` asks for.
KernelCall backward_call(const AttentionTerms& t, const AttentionNeeds& needs) {
  const Tensor q = Tensor::ones({1, 2, 4, 16});
  const AttentionOutput f = attention_forward(q, q, q, t);
  KernelCallRecording recording;
  (void)attention_backward(q, q, q, q, f, t, needs);
  const std::vector<KernelCall> calls = recording.calls();
  REQUIRE(calls.size() == 1);
  return calls[0];
}

}  // namespace

TEST_CASE("kernel calls: the tables' gradients binned by the tiles cost 4 FLOPs a pair, the FP32 pass its recomputation",
          "[roofline]") {
  // 32 (query, key) pairs, d = 16. The backward per pair: S and dP in each
  // of two passes (2 (2 d + 2 d)) and dq, dk, dv (3 x 2 d) = 224; the
  // table's gradient binned by the tiles 4 more, or the FP32 pass's
  // recomputation of the score, P v and the table's terms (2 d + 2 d + 2 d)
  // = 96 more.
  for (const int64_t rows : {int64_t{9}, kTileTableBins + 1}) {
    AttentionTerms t = relative_terms();
    t.table = Tensor::zeros({2, rows});
    INFO(rows << " table rows");
    AttentionNeeds needs;
    needs.q = needs.table = true;
    const KernelCall call = backward_call(t, needs);
    const bool binned = rows <= kTileTableBins;
    CHECK(call.integers == std::vector<int64_t>{1, 0, 0, binned ? 2 : 1});
    CHECK(kernel_flops(call) == 32.0 * (224 + (binned ? 4 : 96)));
  }
}

TEST_CASE("kernel calls: Shaw's relative vectors' gradients by distance on the tiles, at consecutive positions",
          "[roofline]") {
  // As above, with query vectors A [1, 7, 16] (extra = d = 16: a score is
  // 2 (d + d) = 64, P v 32): the backward per pair 2 (64 + 32) + 3 x 32 =
  // 288; A's gradient by distance 16 d = 256 more (S and dP over 3 keys a
  // pair: 12 d; q . A and dS q: 4 d), or the FP32 pass 64 + 32 + 2 (d + d) =
  // 160 more. With value vectors V too (extra = 2 d = 32: a score 96): 2 (96
  // + 32) + 96 = 352; by distance 12 d + 2 x 4 d = 320, or the FP32 pass 96 +
  // 32 + 2 (d + 2 d) = 224.
  for (const bool values : {false, true})
    for (const bool consecutive : {true, false}) {
      AttentionTerms t = relative_terms();
      t.consecutive_positions = consecutive;
      t.query_vectors = Tensor::zeros({1, 7, 16});
      if (values) t.value_vectors = Tensor::zeros({1, 7, 16});
      INFO((consecutive ? "consecutive" : "not known to be consecutive") << (values ? ", values" : ""));
      AttentionNeeds needs;
      needs.q = needs.query_vectors = true;
      needs.value_vectors = values;
      const KernelCall call = backward_call(t, needs);
      CHECK(call.integers == std::vector<int64_t>{1, values ? 32 : 16, 0, consecutive ? 2 : 1});
      const double base = values ? 352 : 288, by_distance = values ? 320 : 256, pass = values ? 224 : 160;
      CHECK(kernel_flops(call) == 32.0 * (base + (consecutive ? by_distance : pass)));
    }
}
