// The fused attention op (tensor/attention_terms.h): its CPU kernel against
// an independent composition of unfused ops, and its CUDA kernels against
// the CPU kernel, forward and every gradient, for each family of terms on
// tiny shapes (a few heads, L <= 16, d = 8, and for the CUDA kernels also
// d = 64: both widths they are built for) whose keys span several of the
// kernels' tiles (8 keys), so the online softmax crosses tile boundaries.
// The gradients of the CPU kernel are checked against finite differences in
// the gradient-check suite (autograd/gradcheck_suite.cpp, "attention: ...").
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "tensor/kernel_calls.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

constexpr int64_t B = 2, H = 3, L = 13, d = 8;
constexpr double kLowest = std::numeric_limits<float>::lowest();

Tensor rnd(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return ordo::test::random_tensor(shape, seed, DType::f32, low, high);
}

// Positions with gaps and repeats, distances -15..15 mapped to 9 rows
// (clipped at 4, signed: row 4 - clip(r), as HF's layout).
Tensor positions() {
  std::vector<int64_t> p;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) p.push_back(b == 0 ? i : (i * 7) % 11 + (i > 6 ? 4 : 0));
  return Tensor::from_vector(p, {B, L});
}
Tensor row_of() {
  std::vector<int64_t> rows;
  for (int64_t r = -15; r <= 15; ++r) rows.push_back(4 - std::max<int64_t>(-4, std::min<int64_t>(4, r)));
  return Tensor::from_vector(rows, {31});
}
Tensor padding() {  // the last two keys of the second sequence are padding
  std::vector<float> m(static_cast<size_t>(B * L), 0.0f);
  m[B * L - 1] = m[B * L - 2] = static_cast<float>(kLowest);
  return Tensor::from_vector(m, {B, 1, L});
}

}  // namespace

TEST_CASE("attention: the CPU kernel is softmax(s) v of the unfused ops, with the padding and causal masks",
          "[attention]") {
  // The contextual term, a relative table, the padding mask and causal, and
  // value vectors: s = scale q k^T + T[row] + mask, o = softmax(s) (v + V[row]).
  const Tensor q = rnd({B, H, L, d}, 31), k = rnd({B, H, L, d}, 32), v = rnd({B, H, L, d}, 33);
  const Tensor table = rnd({H, 9}, 34), vectors = rnd({H, 9, d}, 35);
  AttentionTerms t;
  t.positions = positions(), t.row_of = row_of(), t.first_distance = -15, t.key_bias = padding();
  t.scale = 0.5, t.table = table, t.value_vectors = vectors, t.causal = true;
  const Tensor fused = attention_forward(q, k, v, t).out;
  // The same from unfused ops: idx[b, i, j] the row of each pair.
  std::vector<int64_t> idx;
  const std::vector<int64_t> p = positions().to_vector<int64_t>(), lut = row_of().to_vector<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) idx.push_back(lut[static_cast<size_t>(p[b * L + j] - p[b * L + i] + 15)]);
  const Tensor rows = Tensor::from_vector(idx, {B, L, L});
  Tensor bias = index_select(table, 1, rows.flatten()).reshape({H, B, L, L}).permute({1, 0, 2, 3});
  std::vector<float> future(static_cast<size_t>(L * L), 0.0f);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = i + 1; j < L; ++j) future[i * L + j] = static_cast<float>(kLowest);
  const Tensor mask = minimum(padding().reshape({B, 1, 1, L}), Tensor::from_vector(future, {1, 1, L, L}));
  const Tensor probs = softmax(add(affine(matmul(q, k, false, true), 0.5), bias), mask);
  const Tensor mass = relative_scatter(probs, rows, 9);  // sum_j p_ij over the keys of each row
  const Tensor expected = add(matmul(probs, v), matmul(mass, vectors));
  ordo::test::require_close(fused, expected, 1e-5, 1e-6, "fused against unfused");
}

namespace {

// The output, written as a view of its heads-merged [B, L, H, d] block, with
// its bf16 rounding beside it under a forward's OperandRoundingScope: the
// output projection (merge_heads' views, then a product) takes that rounding
// instead of casting — the same bits as the cast, one copy fewer.
void check_output_operand(Device device) {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  AttentionTerms t;
  t.key_bias = padding().to(device), t.scale = 0.35;
  const Tensor q = rnd({B, H, L, d}, 41).to(device), k = rnd({B, H, L, d}, 42).to(device),
               v = rnd({B, H, L, d}, 43).to(device), w = rnd({H * d, 5}, 44).to(device);
  const AttentionOutput direct = attention_forward(q, k, v, t, /*with_operand=*/true);
  CHECK(direct.out.permute({0, 2, 1, 3}).is_contiguous());
  CHECK(ordo::test::bit_identical(direct.out_operand, direct.out.to(DType::bf16)));
  CHECK_FALSE(attention_forward(q, k, v, t).out_operand.defined());
  struct Run {
    Tensor projected, gq;
    int64_t copies = 0;
  };
  auto run = [&](bool in_scope) {
    Var qv(q, true);
    const OperandRoundingScope scope(in_scope ? w : Tensor(), bf16);  // as BertModel's over its packed weights
    KernelCallRecording recording;
    const Var out = attention(qv, Var(k), Var(v), {}, t);
    const Var merged = reshape(operand(permute(out, {0, 2, 1, 3}), bf16), {B, L, H * d});  // nn/bert.cpp's merge_heads
    const Var projected = matmul(merged, Var(w), false, false, 1.0, bf16);
    Run r;
    for (const KernelCall& call : recording.calls()) r.copies += std::string(call.kernel) == "copy";
    sum(mul(projected, Var(rnd(projected.shape(), 45).to(device)))).backward();
    r.projected = projected.value().to(Device::cpu()), r.gq = qv.grad().to(Device::cpu());
    return r;
  };
  const Run cast = run(false), rounded = run(true);
  CHECK(cast.copies == 2);     // the output cast to bf16, the weight cast
  CHECK(rounded.copies == 0);  // both taken from the scope
  CHECK(ordo::test::bit_identical(rounded.projected, cast.projected));
  CHECK(ordo::test::bit_identical(rounded.gq, cast.gq));  // gout read through the merged block's strides
}

}  // namespace

TEST_CASE("attention: the output's bf16 rounding is written beside it for the output projection: a cast's bits",
          "[attention]") {
  check_output_operand(Device::cpu());
}

#ifdef ORDO_HAS_CUDA
TEST_CASE("attention: the CUDA forward writes the output's bf16 rounding beside it: a cast's bits",
          "[cuda][attention]") {
  check_output_operand(Device::cuda(0));
}

namespace {

// One configuration: q, k, v and the learned terms (as Vars), the fixed terms.
struct Case {
  std::string name;
  std::vector<Tensor> inputs;  // q, k, v, then the learned terms in AttentionVars' order of those set
  std::function<Var(const std::vector<Var>&, AttentionTerms)> run;
  AttentionTerms fixed;
};

// Heads `width` wide: 8 (the kernels built for it) or 64 (every shipped
// config's, built too); any other takes the kernels for any width.
std::vector<Case> cases(int64_t width = d) {
  const int64_t d = width;
  AttentionTerms rows;
  rows.positions = positions(), rows.row_of = row_of(), rows.first_distance = -15;
  rows.key_bias = padding();
  std::vector<Case> c;
  {
    AttentionTerms t = rows;
    t.scale = 0.35, t.query_scale = 0.35, t.key_scale = 0.35, t.dropout = 0.2, t.seed = 3, t.stream = 9;
    c.push_back({"gate, query and key vectors, table, value vectors, dropout",
                 {rnd({B, H, L, d}, 1), rnd({B, H, L, d}, 2), rnd({B, H, L, d}, 3), rnd({H, 9}, 4, 0.5, 1.5),
                  rnd({1, 9, d}, 5), rnd({H, 9, d}, 6), rnd({1, 9}, 7), rnd({H, 9, d}, 8)},
                 [](const std::vector<Var>& v, AttentionTerms t) {
                   AttentionVars a;
                   a.gate = v[3], a.query_vectors = v[4], a.key_vectors = v[5], a.table = v[6], a.value_vectors = v[7];
                   return attention(v[0], v[1], v[2], a, t);
                 },
                 t});
  }
  {
    AttentionTerms t = rows;
    t.scale = 0.35, t.pos_scale = 0.25, t.causal = true;
    t.segments = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                          0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1},
                                     {B, L});
    t.segment_types = 2;
    c.push_back({"product, E.F, per-head segments, causal",
                 {rnd({B, H, L, d}, 11), rnd({B, H, L, d}, 12), rnd({B, H, L, d}, 13), rnd({H, 9, d}, 14, 0.5, 1.5),
                  rnd({1, H, L, 5}, 15), rnd({B, H, L, 5}, 16), rnd({H, 4}, 17)},
                 [](const std::vector<Var>& v, AttentionTerms t) {
                   AttentionVars a;
                   a.product = v[3], a.pos_query = v[4], a.pos_key = v[5], a.segment_table = v[6];
                   return attention(v[0], v[1], v[2], a, t);
                 },
                 t});
  }
  {
    AttentionTerms t;
    t.positions = positions(), t.key_bias = padding();
    const float angles[] = {1.0f, 0.5f, 0.1f, 0.02f};
    std::vector<float> rotary;
    for (int64_t m = 0; m < d / 2; ++m) rotary.push_back(angles[m % 4] / static_cast<float>(1 + m / 4));
    t.rotary = Tensor::from_vector(rotary, {d / 2});
    t.scale = 0.35, t.dropout = 0.3, t.seed = 8, t.stream = 2;
    c.push_back({"RoPE's rotation (interleaved pairs), dropout",
                 {rnd({B, H, L, d}, 31), rnd({B, H, L, d}, 32), rnd({B, H, L, d}, 33)},
                 [](const std::vector<Var>& v, AttentionTerms t) { return attention(v[0], v[1], v[2], {}, t); },
                 t});
  }
  {
    AttentionTerms t = rows;
    t.scale = 0.25, t.pos_scale = 0.25, t.cls_row = 9, t.dense_bias = rnd({1, H, L, L}, 26);
    c.push_back({"TUPE's [CLS] reset with a relative table, E.F, a fixed dense term",
                 {rnd({B, H, L, d}, 21), rnd({B, H, L, d}, 22), rnd({B, H, L, d}, 23), rnd({H, 11}, 24),
                  rnd({1, H, L, d}, 25), rnd({1, H, L, d}, 27)},
                 [](const std::vector<Var>& v, AttentionTerms t) {
                   AttentionVars a;
                   a.table = v[3], a.pos_query = v[4], a.pos_key = v[5];
                   return attention(v[0], v[1], v[2], a, t);
                 },
                 t});
  }
  return c;
}

// c run on `vars` with its fixed terms on `device`, and sum(w * out) back-propagated.
Var run_and_backward(const Case& c, const std::vector<Var>& vars, Device device) {
  AttentionTerms t = c.fixed;
  for (Tensor* x : {&t.positions, &t.row_of, &t.key_bias, &t.segments, &t.dense_bias, &t.rotary})
    if (x->defined()) *x = x->to(device);
  Var out = c.run(vars, t);
  sum(mul(out, Var(rnd(out.shape(), 99).to(device)))).backward();
  return out;
}

// The output and the gradient of sum(w * out) for every input, on `device`.
std::vector<Tensor> run(const Case& c, Device device) {
  std::vector<Var> vars;
  for (const Tensor& x : c.inputs) vars.push_back(Var(x.to(device), true));
  std::vector<Tensor> r{run_and_backward(c, vars, device).value().to(Device::cpu())};
  for (const Var& v : vars) r.push_back(v.grad().to(Device::cpu()));
  return r;
}

// As run(), with q, k and v views of one [B, L, 3, H, d] tensor (as the
// stacked Q/K/V product lays them out), their gradients read back from it.
std::vector<Tensor> run_stacked(const Case& c, Device device) {
  const Tensor& q = c.inputs[0];
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), d = q.size(3);
  Tensor stacked = Tensor::empty({B, L, 3, H, d}, DType::f32, device);
  for (int64_t n = 0; n < 3; ++n) stacked.select(2, n).permute({0, 2, 1, 3}).copy_from(c.inputs[n].to(device));
  const Var qkv(stacked, true);
  std::vector<Var> vars;
  for (int64_t n = 0; n < 3; ++n) vars.push_back(permute(select(qkv, 2, n), {0, 2, 1, 3}));
  for (size_t n = 3; n < c.inputs.size(); ++n) vars.push_back(Var(c.inputs[n].to(device), true));
  std::vector<Tensor> r{run_and_backward(c, vars, device).value().to(Device::cpu())};
  for (int64_t n = 0; n < 3; ++n) r.push_back(qkv.grad().select(2, n).permute({0, 2, 1, 3}).to(Device::cpu()));
  for (size_t n = 3; n < vars.size(); ++n) r.push_back(vars[n].grad().to(Device::cpu()));
  return r;
}

}  // namespace

// The kernels address q, k and v row by row through their strides: the same
// arithmetic in the same order as on contiguous copies, so the same bits.
TEST_CASE("attention: the CUDA kernels read q, k and v where the stacked projection wrote them, the same bits",
          "[cuda][attention]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    const std::vector<Tensor> dense = run(c, Device::cuda(0)), stacked = run_stacked(c, Device::cuda(0));
    REQUIRE(dense.size() == stacked.size());
    for (size_t n = 0; n < dense.size(); ++n) {
      INFO("result " << n);
      CHECK(ordo::test::bit_identical(stacked[n], dense[n]));
    }
  }
}

// The CPU's reference loops read them there too, and write their gradients
// into the stacked block: the same bits, and no copy of q, k, v or their
// gradients (the recording behind ordo bench step's model sees what a GPU does).
TEST_CASE("attention: the CPU kernels read q, k and v where the stacked projection wrote them, the same bits",
          "[attention]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    auto copies_in = [](const std::vector<KernelCall>& calls) {
      int64_t n = 0;
      for (const KernelCall& k : calls) n += std::string(k.kernel) == "copy";
      return n;
    };
    std::vector<Tensor> dense, stacked;
    int64_t dense_copies = 0, stacked_copies = 0;
    {
      KernelCallRecording recording;
      dense = run(c, Device::cpu());
      dense_copies = copies_in(recording.calls());
    }
    {
      KernelCallRecording recording;
      stacked = run_stacked(c, Device::cpu());
      stacked_copies = copies_in(recording.calls());
    }
    REQUIRE(dense.size() == stacked.size());
    for (size_t n = 0; n < dense.size(); ++n) {
      INFO("result " << n);
      CHECK(ordo::test::bit_identical(stacked[n], dense[n]));
    }
    // run_stacked's own three (q, k and v into the block) and nothing more.
    CHECK(stacked_copies == dense_copies + 3);
  }
}

namespace {

// Each case on CUDA against the CPU: the output and every gradient.
void require_cuda_agrees(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<Tensor> cpu = run(c, Device::cpu()), gpu = run(c, Device::cuda(0));
    REQUIRE(cpu.size() == gpu.size());
    for (size_t n = 0; n < cpu.size(); ++n) {
      INFO("result " << n << " (0: the output, then the gradients of q, k, v and the terms)");
      // Sums of at most L * d (832) products of values of order 1 in f32
      // against the CPU's double: within a few 1e-6 of their magnitude; a
      // lost or misplaced term is off by the size of a term (1e-2 and up).
      ordo::test::require_close(gpu[n], cpu[n], 1e-4, 2e-5);
    }
  }
}

}  // namespace

TEST_CASE("attention: the CUDA kernels agree with the CPU's, forward and every gradient", "[cuda][attention]") {
  require_cuda_agrees(cases(8));
}

// The kernels built for heads 64 wide (every shipped config's), whose
// loops over a row's columns and shared tiles the width-8 build cannot show.
TEST_CASE("attention: the CUDA kernels agree with the CPU's at heads 64 wide, forward and every gradient",
          "[cuda][attention][wide]") {
  require_cuda_agrees(cases(64));
}
#endif

// attention_inference (the evaluation forward on the CPU) against the unfused
// ops over the whole batch — the same products and softmax, so the same
// values bit for bit — and against a naive loop in double, on q, k and v laid
// out as the q/k/v projection leaves them ([B, L, 3, H, d] viewed as [B, H, L, d]).
TEST_CASE("attention_inference equals the unfused ops bit for bit and a naive loop, padding and causal masks",
          "[ops][attention]") {
  const int64_t e = d;
  const Tensor qkv = rnd({B, L, 3, H, d}, 71, -2, 2);
  auto part = [&](int64_t i) { return qkv.select(2, i).permute({0, 2, 1, 3}); };
  const Tensor q = part(0), k = part(1), v = part(2);
  const std::vector<float> qs = q.contiguous().to_vector<float>(), ks = k.contiguous().to_vector<float>(),
                           vs = v.contiguous().to_vector<float>();
  auto at = [&](const std::vector<float>& t, int64_t b, int64_t h, int64_t i, int64_t x) {
    return static_cast<double>(t[((b * H + h) * L + i) * d + x]);
  };
  const double scale = 1 / std::sqrt(static_cast<double>(d));
  // The largest distance of `got` [B, L, H e] from softmax_j(scale q_i . k_j + bias_ij + mask_ij) v_j in
  // double, bias and mask given expanded ([B, H, L, L] and [B, 1, L, L]; empty: 0).
  auto naive_distance = [&](const Tensor& got, const std::vector<float>& bias, const std::vector<float>& mask) {
    const std::vector<float> g = got.to_vector<float>();
    double worst = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i) {
          std::vector<double> s(L);
          double top = -INFINITY, sum = 0;
          for (int64_t j = 0; j < L; ++j) {
            double dot = 0;
            for (int64_t x = 0; x < d; ++x) dot += at(qs, b, h, i, x) * at(ks, b, h, j, x);
            s[j] = dot * scale + (bias.empty() ? 0.0 : bias[((b * H + h) * L + i) * L + j]) +
                   (mask.empty() ? 0.0 : mask[(b * L + i) * L + j]);
            top = std::max(top, s[j]);
          }
          for (int64_t j = 0; j < L; ++j) sum += s[j] = std::exp(s[j] - top);
          for (int64_t x = 0; x < d; ++x) {
            double o = 0;
            for (int64_t j = 0; j < L; ++j) o += s[j] / sum * at(vs, b, h, j, x);
            worst = std::max(worst, std::fabs(o - g[(b * L + i) * H * d + h * d + x]));
          }
        }
    return worst;
  };
  // Batch 1 pads its last 4 keys; the causal mask hides the keys after each query too.
  std::vector<double> pad_mask(B * L, 0.0), causal(B * L * L, 0.0);
  for (int64_t j = L - 4; j < L; ++j) pad_mask[L + j] = kLowest;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) causal[(b * L + i) * L + j] = j > i || pad_mask[b * L + j] != 0 ? kLowest : 0;
  const Tensor masks[] = {Tensor(), Tensor::from_vector(pad_mask, {B, 1, 1, L}).to(DType::f32),
                          Tensor::from_vector(causal, {B, 1, L, L}).to(DType::f32)};
  for (const Tensor& mask : masks) {
    INFO("mask " << (mask.defined() ? shape_str(mask.shape()) : "none"));
    const Tensor got = attention_inference(q, k, v, mask, scale);
    REQUIRE(got.shape() == (Shape{B, L, H * e}));
    const Tensor probs = mask.defined() ? softmax(matmul(q, k, false, true, scale), mask)
                                        : softmax(matmul(q, k, false, true, scale));
    const Tensor unfused = matmul(probs, v).permute({0, 2, 1, 3}).contiguous().reshape({B, L, H * e});
    CHECK(got.to_vector<float>() == unfused.to_vector<float>());

    CHECK(naive_distance(got, {}, mask.defined() ? mask.expand({B, 1, L, L}).contiguous().to_vector<float>()
                                                 : std::vector<float>()) < 1e-5);
  }
  // bf16 products (q, k, v and P rounded): the unfused ops under bf16, bit for bit.
  {
    const MatmulPrecision bf16 = MatmulPrecision::bf16;
    const Tensor mask = masks[1];
    const Tensor got = attention_inference(q, k, v, mask, scale, Tensor(), DType::f32, bf16);
    const Tensor probs = softmax(matmul(q, k, false, true, scale, bf16), mask);
    const Tensor unfused =
        matmul(probs, v, false, false, 1.0, bf16).permute({0, 2, 1, 3}).contiguous().reshape({B, L, H * e});
    CHECK(got.to_vector<float>() == unfused.to_vector<float>());
    CHECK(naive_distance(got, {}, mask.expand({B, 1, L, L}).contiguous().to_vector<float>()) < 0.05);
    // Written for the output projection's product: the f32 output's rounding, bit for bit.
    const Tensor rounded = attention_inference(q, k, v, mask, scale, Tensor(), DType::bf16, bf16);
    REQUIRE(rounded.dtype() == DType::bf16);
    CHECK(ordo::test::bit_identical(rounded, unfused.to(DType::bf16)));
  }
  CHECK_THROWS_WITH(attention_inference(q, k, v, Tensor(), scale, Tensor(), DType::i64),
                    "attention_inference: out_dtype i64 (f32, or bf16 for a product to take)");
  // A mask of another shape is named.
  CHECK_THROWS_WITH(attention_inference(q, k, v, Tensor::zeros({B, 2, 1, L}), scale),
                    Catch::Contains("attention_inference: mask of shape [2, 2, 1, 13]"));

  // A variant's score terms as the bias, per batch element and head, shared by the batch, or by every head:
  // added before the mask as the unfused attention adds them.
  const Tensor mask = masks[1];
  for (const Shape& shape : {Shape{B, H, L, L}, Shape{1, H, L, L}, Shape{L, L}}) {
    INFO("bias " << shape_str(shape));
    const Tensor bias = rnd(shape, 73, -3, 3);
    const Tensor got = attention_inference(q, k, v, mask, scale, bias);
    const Tensor probs = softmax(add(matmul(q, k, false, true, scale), bias), mask);
    CHECK(got.to_vector<float>() == matmul(probs, v).permute({0, 2, 1, 3}).contiguous().reshape({B, L, H * e})
                                        .to_vector<float>());
    CHECK(naive_distance(got, bias.expand({B, H, L, L}).contiguous().to_vector<float>(),
                         mask.expand({B, 1, L, L}).contiguous().to_vector<float>()) < 1e-5);
  }
  CHECK_THROWS_WITH(attention_inference(q, k, v, mask, scale, Tensor::zeros({B, 2, L, L})),
                    Catch::Contains("attention_inference: bias of shape [2, 2, 13, 13]"));
}
