// Every position encoding through one attention sublayer on CUDA, with the
// fused attention (autograd/ops.h: attention; one kernel per direction) and
// with the unfused ops (the reference), and on the CPU: the output and the
// gradients of the input and of every parameter agree. Tiny shapes (3 heads
// of width 4, L = 11: two of the kernels' key tiles), positions with gaps and
// repeats, a padded key, and one training call with dropout. The variants
// that cannot be fused fall back, and say why. The [cuda] cases run only
// where a GPU is (`ordo_tests --require-gpu "[cuda]"`); one case runs the
// fused op on the CPU (nn::Context::fused_attention_on_cpu, which ordo bench
// step's recording uses) against the CPU's unfused ops.
#include <algorithm>
#include <cmath>

#include "nn/fused_attention_scope.h"
#include "tensor/device_runtime.h"
#include "tensor/kernel_calls.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

constexpr int64_t kBatch = 2, kLength = 11;

struct Run {
  std::vector<Tensor> results;  // the output, x's gradient, then every parameter's
  bool fused = false;           // whether an attention_forward kernel call was made
  bool tiles = false;           // whether it runs on tensor-core tiles (the call's last integer)
  std::vector<std::string> kernels;  // every kernel call, forward and backward
};

// One attention sublayer (layer 1) with the variant on `device`: parameters
// drawn by nn::initialize (Philox: the same on both devices) and moved off
// their starting values; the output and the gradients of sum(w * out), the
// products at `precision`.
Run attention_run(const nn::BertConfig& c, Device device, bool training, bool fused_on_cpu = false,
                  bool project = false, MatmulPrecision precision = MatmulPrecision::fp32) {
  nn::SelfAttention attention(c, device);
  auto pe = pe::make_position_encoding(c, device);
  nn::initialize(attention, 3);
  nn::initialize(*pe, 4);
  uint64_t seed = 50;
  for (nn::Module* m : {static_cast<nn::Module*>(&attention), static_cast<nn::Module*>(pe.get())})
    for (auto& [name, p] : m->named_parameters())
      p->var = Var(add(p->var.value(), ordo::test::random_tensor(p->var.shape(), seed++, DType::f32, -0.2, 0.2).to(device)),
                   true, name);
  std::vector<int64_t> keep(static_cast<size_t>(kBatch * kLength), 1);
  keep.back() = 0;
  Tensor mask = nn::attention_bias(Tensor::from_vector(keep, {kBatch, kLength}).to(device), kBatch, kLength, c.decoder,
                                   DType::f32, device);
  Tensor positions = random_positions(kBatch, kLength, 11, 0, 15).to(device);
  Tensor segments = random_positions(kBatch, kLength, 12, 0, 2).to(device);
  Var x(ordo::test::random_tensor({kBatch, kLength, c.hidden_size}, 7, DType::f32).to(device), true);
  nn::Context ctx = training ? nn::Context::train(5, 3) : nn::Context::eval();
  ctx.precision = precision;
  ctx.fused_attention_on_cpu = fused_on_cpu;
  Run r;
  KernelCallRecording recording;
  Var out = attention.forward(x, Var(mask), *pe, 1, positions, segments, ctx, nullptr);
  for (const KernelCall& call : recording.calls())
    if (std::string(call.kernel) == "attention_forward") {
      r.fused = true;
      r.tiles = !call.integers.empty() && call.integers.back() != 0;  // 1, or 2 with the tables binned
    }
  // Under bf16 products the sublayer's output is the output projection's
  // bf16 operand: taken through a product, as the model takes it (`project`:
  // an FP32 run too, to be compared with such a run).
  if (project || out.dtype() == DType::bf16)
    out = linear(out, Var(ordo::test::random_tensor({c.hidden_size, c.hidden_size}, 9, DType::f32).to(device)), Var(),
                 false, precision);
  sum(mul(out, Var(ordo::test::random_tensor(out.shape(), 8, DType::f32).to(device)))).backward();
  for (const KernelCall& call : recording.calls()) r.kernels.push_back(call.kernel);
  r.results = {out.value().to(Device::cpu()), x.grad().to(Device::cpu())};
  for (nn::Module* m : {static_cast<nn::Module*>(&attention), static_cast<nn::Module*>(pe.get())})
    for (auto& [name, p] : m->named_parameters())
      r.results.push_back(p->var.grad().defined() ? p->var.grad().to(Device::cpu()) : Tensor());
  return r;
}

void compare(const Run& got, const Run& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.results.size() == want.results.size());
  for (size_t i = 0; i < want.results.size(); ++i) {
    INFO("result " << i << " (0: output, 1: x's gradient, then the parameters' gradients)");
    REQUIRE(got.results[i].defined() == want.results[i].defined());
    // f32 on both sides, the sums in other orders: a few 1e-6 of the values;
    // a lost or misplaced term is off by its own size (1e-2 and up).
    if (want.results[i].defined()) ordo::test::require_close(got.results[i], want.results[i], 1e-4, 1e-5);
  }
}

nn::BertConfig config_of(const std::string& text) {
  json::Value v = json::parse(text);
  nn::BertConfig c = tiny_config(v["pe"].as_string(), v.contains("o") ? v["o"] : json::Value::object());
  if (v.contains("segment")) c.segment = v["segment"].as_string();
  if (v.contains("decoder")) c.decoder = v["decoder"].as_bool();
  c.attention_probs_dropout_prob = 0.25;  // used by the training calls
  return c;
}

}  // namespace

TEST_CASE("fused attention on the CPU, when asked, runs the reference kernels and agrees with the unfused ops",
          "[pe][attention]") {
  // A relative variant with value vectors (every pass of the backward, the
  // tables' included) in training with dropout; the unfused ops are the
  // independent side. The switch on, whatever ORDO_FUSED_ATTENTION says.
  nn::FusedAttentionScope on(nn::FusedAttention::on);
  const nn::BertConfig c = config_of(R"({"pe": "rpe_shaw", "o": {"value": true}})");
  const Run fused = attention_run(c, Device::cpu(), true, /*fused_on_cpu=*/true);
  const Run unfused = attention_run(c, Device::cpu(), true);
  CHECK(fused.fused);
  CHECK_FALSE(unfused.fused);
  compare(fused, unfused, "the fused op's CPU kernels against the unfused ops, both on the CPU");
}

// Shaw's tables go to the fused attention whole (nothing trimmed to the
// rows the batch reaches), so their gradients come from its backward whole:
// no pad of a trimmed gradient back to the table (a launch a layer on CUDA).
// The values are the unfused ops' (the case above).
TEST_CASE("fused attention: Shaw's tables' gradients come whole from its backward, no pad", "[pe][attention]") {
  nn::FusedAttentionScope on(nn::FusedAttention::on);
  nn::BertConfig c = config_of(R"({"pe": "rpe_shaw", "o": {"value": true}})");
  c.max_position_embeddings = 40;  // tables of 79 rows, of which the batch reaches 31
  const Run fused = attention_run(c, Device::cpu(), true, /*fused_on_cpu=*/true);
  CHECK(fused.fused);
  CHECK(std::count(fused.kernels.begin(), fused.kernels.end(), "pad_slice") == 0);
  // The tables reach distances up to max_position_embeddings - 1; the batch
  // (positions 0 .. 15) fewer: rows beyond its reach have zero gradients.
  const Tensor& table_grad = fused.results.back();
  REQUIRE(table_grad.defined());
  const int64_t rows = table_grad.size(-2), reach = c.max_position_embeddings - 1;
  REQUIRE(rows == 2 * reach + 1);
  const std::vector<double> g = table_grad.to_doubles();
  const int64_t width = table_grad.size(-1);
  int64_t reached = 0, beyond = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t distance = reach - r;  // the signed table's row reach - c holds distance c
    double largest = 0;
    for (int64_t x = 0; x < width; ++x) largest = std::max(largest, std::fabs(g[static_cast<size_t>(r * width + x)]));
    if (std::abs(distance) > 15) beyond += largest != 0;
    else reached += largest != 0;
  }
  CHECK(beyond == 0);
  CHECK(reached > 0);
}

#ifdef ORDO_HAS_CUDA

namespace {

// attention_run (inference) with the fused attention switched off: the unfused ops.
Run unfused_run(const nn::BertConfig& c, Device device, MatmulPrecision precision = MatmulPrecision::fp32) {
  nn::FusedAttentionScope off(nn::FusedAttention::off);
  return attention_run(c, device, false, false, false, precision);
}

const Device kGpu = Device::cuda(0);
}  // namespace

TEST_CASE("fused attention: every position encoding agrees with the unfused ops on CUDA and with the CPU",
          "[cuda][pe][attention]") {
  const char* variants[] = {
      R"({"pe": "none"})",
      R"({"pe": "ape_learned"})",
      R"({"pe": "rope"})",
      R"({"pe": "rpe_shaw", "o": {"value": true, "share": "none"}})",
      R"({"pe": "rpe_shaw", "o": {"clip": 3}})",
      R"({"pe": "rpe_sin"})",
      R"({"pe": "rpe_sin_learnable", "o": {"share": "heads"}})",
      R"({"pe": "xlnet"})",
      R"({"pe": "xlnet", "o": {"biases": false, "clip": 4}})",
      R"({"pe": "huang_m1"})",
      R"({"pe": "huang_m2", "o": {"share": "none"}})",
      R"({"pe": "huang_m3"})",
      R"({"pe": "huang_m4", "o": {"share": "none"}})",
      R"({"pe": "t5_bias", "o": {"num_buckets": 8, "max_distance": 6}})",
      R"({"pe": "rel_scalar"})",
      R"({"pe": "abs_scalar", "o": {"rank": 3}})",
      R"({"pe": "alibi", "o": {"learned": true}})",
      R"({"pe": "attenuated"})",
      R"({"pe": "tupe", "o": {"num_buckets": 8, "max_distance": 6}})",
      R"({"pe": "tupe", "o": {"relative": false}})",
      R"({"pe": "ape_learned+rpe_shaw", "segment": "per_head"})",
      R"({"pe": "rel_scalar", "segment": "per_head"})",
      R"({"pe": "t5_bias", "decoder": true})",
  };
  nn::FusedAttentionScope on(nn::FusedAttention::on);
  for (const char* text : variants) {
    const nn::BertConfig c = config_of(text);
    INFO(text);
    {
      auto pe = pe::make_position_encoding(c, kGpu);
      REQUIRE(nn::unfused_attention_reason(*pe, c, kGpu) == "");
    }
    const Run cpu = attention_run(c, Device::cpu(), false);
    const Run fused = attention_run(c, kGpu, false);
    CHECK(fused.fused);
    const Run unfused = unfused_run(c, kGpu);
    CHECK_FALSE(unfused.fused);
    compare(fused, unfused, "fused against unfused, both on CUDA");
    compare(fused, cpu, "fused on CUDA against the CPU");
  }
}

// Under bf16 products, with heads 16 wide, every variant whose terms are
// scalars per pair, and Shaw's relative keys and values (learned or
// sinusoids), runs on the tensor-core tiles. The unfused ops round the
// same operands (q, k, v and the probabilities into their products, the
// scores' gradient into its), at other points (P~ after its normalisation, dS
// before the scale), so the two differ by bf16 roundings that cancel
// unevenly (a key bias's gradient is 0 in exact arithmetic and rounding noise
// on either path). So both are measured against the FP32 CPU (the
// independent reference): the tiles' largest error in each result at most 4
// times the unfused bf16 ops' (measured here: 0.53-2.1x) plus 2^-20 of its
// largest value — 8 times with Shaw's values, whose P~ the tiles round once
// more (moved to the distances, before its product with V's rows; measured
// 0.53-3.7x). A lost term, a misplaced mask or a wrong row is off by its own
// size, far beyond bf16's rounding.
TEST_CASE("fused attention: under bf16 products the scalar-term variants and Shaw's vectors run on tensor-core tiles",
          "[cuda][pe][attention][bf16]") {
  nn::FusedAttentionScope on(nn::FusedAttention::on);
  struct Variant {
    const char* text;
    double factor;  // the tiles' error at most this many times the unfused ops'
  };
  for (const Variant& variant :
       {Variant{R"({"pe": "none"})", 4}, Variant{R"({"pe": "rope"})", 4}, Variant{R"({"pe": "huang_m1"})", 4},
        Variant{R"({"pe": "huang_m2", "o": {"share": "none"}})", 4}, Variant{R"({"pe": "rel_scalar"})", 4},
        Variant{R"({"pe": "alibi", "o": {"learned": true}})", 4}, Variant{R"({"pe": "attenuated"})", 4},
        Variant{R"({"pe": "t5_bias", "decoder": true})", 4}, Variant{R"({"pe": "rpe_shaw"})", 4},
        Variant{R"({"pe": "rpe_shaw", "o": {"clip": 3, "share": "none", "value": true}})", 8},
        Variant{R"({"pe": "rpe_sin"})", 8}, Variant{R"({"pe": "rpe_sin_learnable", "o": {"value": false}})", 4}}) {
    const char* text = variant.text;
    nn::BertConfig c = config_of(text);
    c.hidden_size = 48;  // 3 heads 16 wide: a width the tiles are built for
    c.intermediate_size = 64;
    INFO(text);
    const Run cpu = attention_run(c, Device::cpu(), false, false, /*project=*/true);  // FP32
    const MatmulPrecision bf16 = MatmulPrecision::bf16;
    const Run fused = attention_run(c, kGpu, false, false, false, bf16);
    CHECK(fused.tiles);
    const Run unfused = unfused_run(c, kGpu, bf16);
    CHECK_FALSE(unfused.fused);
    REQUIRE(fused.results.size() == cpu.results.size());
    REQUIRE(unfused.results.size() == cpu.results.size());
    for (size_t i = 0; i < cpu.results.size(); ++i) {
      INFO("result " << i << " (0: output, 1: x's gradient, then the parameters' gradients)");
      REQUIRE(fused.results[i].defined() == cpu.results[i].defined());
      if (!cpu.results[i].defined()) continue;
      const std::vector<double> t = fused.results[i].to_doubles(), u = unfused.results[i].to_doubles(),
                                e = cpu.results[i].to_doubles();
      double largest = 0, tiles = 0, ops = 0;
      for (size_t n = 0; n < e.size(); ++n) {
        largest = std::max(largest, std::fabs(e[n]));
        tiles = std::max(tiles, std::fabs(t[n] - e[n]));
        ops = std::max(ops, std::fabs(u[n] - e[n]));
      }
      INFO("error against the FP32 CPU: tiles " << tiles << ", unfused bf16 ops " << ops << " (largest value "
                                                << largest << ")");
      CHECK(tiles <= variant.factor * ops + 0x1p-20 * largest);
    }
  }
}

TEST_CASE("fused attention: dropout on the probabilities draws the unfused dropout's mask", "[cuda][pe][attention]") {
  nn::FusedAttentionScope on(nn::FusedAttention::on);
  for (const char* text : {R"({"pe": "rpe_shaw", "o": {"value": true}})", R"({"pe": "alibi", "decoder": true})"}) {
    const nn::BertConfig c = config_of(text);
    INFO(text);
    const Run cpu = attention_run(c, Device::cpu(), true);
    const Run fused = attention_run(c, kGpu, true);
    CHECK(fused.fused);
    compare(fused, cpu, "fused on CUDA against the CPU, training with dropout 0.25");
  }
}

TEST_CASE("fused attention: what cannot be fused falls back to the unfused ops and says why", "[cuda][pe][attention]") {
  nn::FusedAttentionScope on(nn::FusedAttention::on);
  struct Fallback {
    const char* config;
    const char* reason;
  };
  for (const Fallback& f : {Fallback{R"({"pe": "attenuated", "o": {"learned": true, "learn": "kernel"}})", "learned w and s"},
                            Fallback{R"({"pe": "attenuated", "o": {"learned": true}})", "learned delta matrix"},
                            Fallback{R"({"pe": "alibi", "o": {"combine": "sequence"}})", "combine = sequence"},
                            Fallback{R"({"pe": "t5_bias", "o": {"ablate": "positional"}})", "positional ablation"}}) {
    const nn::BertConfig c = config_of(f.config);
    INFO(f.config);
    auto pe = pe::make_position_encoding(c, kGpu);
    CHECK_THAT(nn::unfused_attention_reason(*pe, c, kGpu), Catch::Contains(f.reason));
    CHECK_THAT(nn::attention_kernels(*pe, c, kGpu), Catch::Contains("unfused ops"));
    const Run gpu = attention_run(c, kGpu, false);
    CHECK_FALSE(gpu.fused);
    compare(gpu, attention_run(c, Device::cpu(), false), "the fallback on CUDA against the CPU");
  }
  // By default (auto) a CUDA device runs the unfused ops, the faster there
  // today, and says how to run the fused kernels.
  const nn::BertConfig c = config_of(R"({"pe": "rpe_shaw"})");
  {
    nn::FusedAttentionScope automatic(nn::FusedAttention::automatic);
    auto pe = pe::make_position_encoding(c, kGpu);
    CHECK_THAT(nn::attention_kernels(*pe, c, kGpu),
               Catch::Contains("unfused ops") && Catch::Contains("ORDO_FUSED_ATTENTION=1"));
    const Run gpu = attention_run(c, kGpu, false);
    CHECK_FALSE(gpu.fused);
    compare(gpu, attention_run(c, Device::cpu(), false), "the default on CUDA against the CPU");
  }
  // On the CPU the unfused ops are the path, whatever the variant.
  auto pe = pe::make_position_encoding(c, Device::cpu());
  CHECK_THAT(nn::attention_kernels(*pe, c, Device::cpu()), Catch::Contains("on the CPU"));
}

#endif  // ORDO_HAS_CUDA
