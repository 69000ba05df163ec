// Attention's Q, K and V parameters in one block of memory (nn::join_parameters):
// nothing a user sees changes (names, initial values, checkpoints), the
// stacked projection reads them as one view, and on the GPU that saves the
// launches that copied them together each forward.
#include <algorithm>

#include "autograd/ops.h"
#include "nn/bert.h"
#include "nn/heads.h"
#include "pe/common.h"
#include "pe/registry.h"
#include "tensor/device_runtime.h"
#include "tensor/kernel_calls.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

Tensor rand_f32(const Shape& shape, uint64_t seed) { return test::random_tensor(shape, seed, DType::f32, -1, 1); }

// Three [4, 6] weights and [4] biases: `joined` in one block each (as
// SelfAttention keeps them), else three separate tensors holding the same values.
struct Projections {
  std::vector<Var> weights, biases;
};
Projections projections(bool joined, Device device) {
  const Tensor w = rand_f32({12, 6}, 1).to(device), b = rand_f32({12}, 2).to(device);
  Projections p;
  for (int64_t i = 0; i < 3; ++i) {
    Tensor wi = w.slice(0, 4 * i, 4 * i + 4), bi = b.slice(0, 4 * i, 4 * i + 4);
    p.weights.emplace_back(joined ? wi : wi.clone(), true);
    p.biases.emplace_back(joined ? bi : bi.clone(), true);
  }
  return p;
}

struct Result {
  Tensor y, gx;
  std::vector<Tensor> gw, gb;
};
Result stacked_product(const Projections& p, const Tensor& x, const Tensor& gy,
                       MatmulPrecision precision = MatmulPrecision::fp32) {
  Var xv(x, true);
  Var y = linear_stacked(xv, p.weights, p.biases, precision);
  y.backward(gy);
  Result r{y.value(), xv.grad(), {}, {}};
  for (size_t i = 0; i < 3; ++i) {
    r.gw.push_back(p.weights[i].grad());
    r.gb.push_back(p.biases[i].grad());
  }
  return r;
}

void check_equal(const Result& a, const Result& b) {
  CHECK(a.y.to_doubles() == b.y.to_doubles());
  CHECK(a.gx.to_doubles() == b.gx.to_doubles());
  for (size_t i = 0; i < 3; ++i) {
    CHECK(a.gw[i].to_doubles() == b.gw[i].to_doubles());
    CHECK(a.gb[i].to_doubles() == b.gb[i].to_doubles());
  }
}

}  // namespace

TEST_CASE("SelfAttention keeps Q, K and V in one block, with the names and initial values of three", "[nn]") {
  const nn::BertConfig c = test::tiny_bert_config(13, 8, 2, 2, 12, 9);
  nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/false);
  nn::initialize(model, 7);
  for (const nn::EncoderLayer* layer : model.encoder.layers) {
    const nn::SelfAttention& self = layer->attention.self;
    const Tensor joined_w = Tensor::joined_rows(
        {self.query.weight.var.value(), self.key.weight.var.value(), self.value.weight.var.value()});
    const Tensor joined_b =
        Tensor::joined_rows({self.query.bias->var.value(), self.key.bias->var.value(), self.value.bias->var.value()});
    CHECK(joined_w.shape() == Shape{24, 8});
    CHECK(joined_b.shape() == Shape{24});
  }
  // Each drawn from its own name's stream, as before they were joined.
  for (const auto& [name, p] : model.named_parameters()) {
    if (name.find(".attention.self.") == std::string::npos || name.find("weight") == std::string::npos) continue;
    INFO(name);
    Tensor alone = Tensor::zeros(p->var.shape());
    normal_(alone, 0, c.initializer_range, 7, nn::init_stream(name));
    CHECK(p->var.value().to_doubles() == alone.to_doubles());
    CHECK(p->var.name() == "weight");
  }
  // Module::to_dtype gives each parameter a tensor of its own: no longer joined.
  const nn::SelfAttention& self = model.encoder.layers[0]->attention.self;
  model.to_dtype(DType::f64);
  CHECK(!Tensor::joined_rows({self.query.weight.var.value(), self.key.weight.var.value()}).defined());
}

TEST_CASE("the stacked Q/K/V product gives the same values and gradients from joined and separate parameters",
          "[nn]") {
  const Tensor x = rand_f32({2, 5, 6}, 3), gy = rand_f32({2, 5, 12}, 4);
  check_equal(stacked_product(projections(true, Device::cpu()), x, gy),
              stacked_product(projections(false, Device::cpu()), x, gy));
}

// Under bf16 the forward writes x's bf16 rounding, the stacked bf16 weight
// and the biases broadcast into the output: 3 launches from joined
// parameters, 7 (three weight casts, three bias copies) from separate ones.
TEST_CASE("cuda: the stacked Q/K/V product from joined parameters takes 3 launches instead of 7, same bits",
          "[cuda]") {
  const Device gpu = Device::cuda(0);
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const Tensor x = rand_f32({2, 5, 6}, 3).to(gpu), gy = rand_f32({2, 5, 12}, 4).to(gpu);
  Result r[2];
  int64_t launches[2];
  for (const bool joined : {true, false}) {
    const Projections p = projections(joined, gpu);
    synchronize(gpu);
    reset_device_counters();
    linear_stacked(Var(x), p.weights, p.biases, bf16);
    launches[joined] = device_counters().kernel_launches;
    r[joined] = stacked_product(p, x, gy, bf16);
  }
  CHECK(launches[true] == 3);
  CHECK(launches[false] == 7);
  check_equal(r[true], r[false]);
}

// ---- every product weight of the encoder in one block (nn::pack_product_weights) ----

namespace {

// Hidden 6, intermediate 7: weights of 36 and 42 elements, so most start
// after a gap that aligns them to 8 elements; Q, K and V stay joined.
nn::BertConfig odd_sized_config() { return test::tiny_bert_config(13, 6, 2, 2, 7, 9); }

// Gives each of the encoder's product weights a tensor of its own again (Q, K
// and V joined among themselves, as SelfAttention keeps them): the model as
// it was before pack_product_weights.
void unpack(nn::BertModel& model) {
  for (auto& [name, p] : model.encoder.named_parameters())
    if (p->product_weight) p->var = Var(p->var.value().clone(), true, p->var.name());
  for (nn::EncoderLayer* layer : model.encoder.layers) {
    nn::SelfAttention& self = layer->attention.self;
    nn::join_parameters({&self.query.weight, &self.key.weight, &self.value.weight});
  }
}

nn::BertInputs odd_batch(Device device) {
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 2, 11, 3, 0, 0}, {2, 5}).to(device);
  in.attention_mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 5}).to(device);
  return in;
}

}  // namespace

TEST_CASE("the encoder's Linear weights lie in one block, Q, K and V still joined, values and names unchanged",
          "[nn]") {
  const nn::BertConfig c = odd_sized_config();
  nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/true);
  nn::initialize(model, 7);
  const Tensor& first = model.encoder.layers[0]->attention.self.query.weight.var.value();
  int64_t weights = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    INFO(name);
    const bool in_encoder = name.rfind("encoder.", 0) == 0;
    CHECK(p->product_weight == (name.size() > 7 && name.substr(name.size() - 7) == ".weight" && p->var.dim() == 2 &&
                                name.find("embeddings") == std::string::npos));
    CHECK(p->var.value().shares_storage_with(first) == (in_encoder && p->product_weight));
    if (p->var.value().shares_storage_with(first)) {
      ++weights;
      CHECK(p->var.value().is_contiguous());
      const bool continues_a_join = name.find(".self.key.") != std::string::npos || name.find(".self.value.") != std::string::npos;
      if (!continues_a_join) CHECK(p->var.value().offset() % 8 == 0);  // aligned unless it continues Q/K/V's join
      Tensor alone = Tensor::zeros(p->var.shape());
      normal_(alone, 0, c.initializer_range, 7, nn::init_stream(name));
      CHECK(p->var.value().to_doubles() == alone.to_doubles());
    }
  }
  CHECK(weights == 6 * c.num_hidden_layers);  // query, key, value, attention output, intermediate, output
  for (const nn::EncoderLayer* layer : model.encoder.layers) {
    const nn::SelfAttention& self = layer->attention.self;
    CHECK(Tensor::joined_rows({self.query.weight.var.value(), self.key.weight.var.value(),
                               self.value.weight.var.value()})
              .shape() == Shape{18, 6});
  }
}

TEST_CASE("inside a OperandRoundingScope a view of the block is the same view of one bf16 rounding of it",
          "[tensor]") {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const Tensor block = rand_f32({50}, 5);
  const Tensor a = block.slice(0, 3, 15).view({3, 4}), b = block.slice(0, 20, 50).view({5, 6}).transpose(0, 1);
  const Tensor elsewhere = rand_f32({3, 4}, 6);
  {
    OperandRoundingScope scope(a, bf16);
    const Tensor ra = as_operand(a, bf16), rb = as_operand(b, bf16);
    CHECK(ra.dtype() == DType::bf16);
    CHECK(ra.shares_storage_with(rb));  // one rounding for both
    CHECK(rb.strides() == b.strides());
    CHECK(ra.to_doubles() == a.to(DType::bf16).to_doubles());
    CHECK(rb.to_doubles() == b.to(DType::bf16).to_doubles());
    CHECK(!as_operand(elsewhere, bf16).shares_storage_with(ra));
    OperandRoundingScope nested(b, bf16);  // the same block: nothing new
    CHECK(as_operand(a, bf16).shares_storage_with(ra));
  }
  CHECK(!as_operand(a, bf16).shares_storage_with(as_operand(b, bf16)));  // outside: a cast each
  {
    const MatmulPrecision fp32 = MatmulPrecision::fp32;
    OperandRoundingScope scope(a, fp32);  // nothing to round under fp32
    CHECK(as_operand(a, fp32).shares_storage_with(block));
  }
}

TEST_CASE("an activation's rounding given to the scope is its product's operand, handed out once", "[tensor]") {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const Tensor weights = rand_f32({4, 6}, 9);
  const Tensor y = rand_f32({2, 3, 6}, 10), y16 = y.to(DType::bf16);
  CHECK(!OperandRoundingScope::collecting());
  OperandRoundingScope::add_rounding(y, y16);  // no scope: nothing kept
  CHECK(!as_operand(y, bf16).shares_storage_with(y16));
  {
    OperandRoundingScope scope(weights, bf16);
    CHECK(OperandRoundingScope::collecting());
    OperandRoundingScope::add_rounding(y, y16);
    const Tensor taken = as_operand(y.reshape({6, 6}), bf16);  // a view of the value finds it
    CHECK(taken.shares_storage_with(y16));
    CHECK(taken.shape() == Shape{6, 6});
    CHECK(!as_operand(y, bf16).shares_storage_with(y16));  // handed out once: a cast again
    Tensor gone = rand_f32({2, 3, 6}, 11);
    OperandRoundingScope::add_rounding(gone, gone.to(DType::bf16));
    gone = Tensor();  // its storage freed: the entry is dropped at the next add, never matched
    OperandRoundingScope::add_rounding(y, y16);
    CHECK(as_operand(y, bf16).shares_storage_with(y16));
  }
  CHECK_THROWS_WITH(
      [&] {
        OperandRoundingScope scope(weights, bf16);
        OperandRoundingScope::add_rounding(y, y);
      }(),
      Catch::Contains("a contiguous f32 value and its bf16 rounding of one shape"));
}

// The bits of a bf16 forward and its gradients do not depend on where the
// weights lie; the CPU's bf16 products round as the GPU's do.
// A LayerNorm whose output a product takes (the embeddings' without dropout,
// the MLM head's transform) writes its bf16 rounding beside it under the
// forward's scope, and the product takes that instead of casting: no copy of
// the output, the same bits. Where a dropout comes between (to_product false)
// nothing is written and the product casts as before.
TEST_CASE("a LayerNorm feeding a bf16 product writes the operand itself: no cast, same bits", "[nn]") {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  const Tensor w = rand_f32({5, 8}, 11);
  const OperandRoundingScope scope(w, bf16);  // as a forward's, over the product's weight
  nn::LayerNorm norm(8, 1e-5, Device::cpu());
  const Var x(rand_f32({3, 8}, 12), true);
  std::vector<Tensor> outputs;
  for (const bool to_product : {true, false}) {
    int64_t casts = 0;
    bool rounding_written = false;
    KernelCallRecording recording;
    outputs.push_back(linear(norm.forward(x, to_product), Var(w), Var(), false, bf16).value());
    for (const KernelCall& call : recording.calls()) {
      casts += std::string(call.kernel) == "copy" && call.shapes[0] == Shape{3, 8};
      if (std::string(call.kernel) == "layernorm") rounding_written = call.shapes.back() == Shape{3, 8};  // y16
    }
    CHECK(casts == (to_product ? 0 : 1));
    CHECK(rounding_written == to_product);
  }
  CHECK(test::bit_identical(outputs[0], outputs[1]));
}

TEST_CASE("a bf16 forward and backward give the same bits from packed and separate weights", "[nn]") {
  const nn::BertConfig c = odd_sized_config();
  std::vector<Tensor> outputs, grads;
  for (const bool packed : {true, false}) {
    nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/false);
    if (!packed) unpack(model);
    nn::initialize(model, 3);
    nn::Context ctx = nn::Context::eval(MatmulPrecision::bf16);
    Var y = model.forward(odd_batch(Device::cpu()), ctx);
    y.backward(rand_f32(y.shape(), 8));
    outputs.push_back(y.value());
    grads.push_back(model.encoder.layers[1]->intermediate.dense.weight.var.grad());
  }
  CHECK(outputs[0].to_doubles() == outputs[1].to_doubles());
  CHECK(grads[0].to_doubles() == grads[1].to_doubles());
}

// Separate weights take one cast each a forward under bf16: Q/K/V's joined
// block, the attention's output, the intermediate and the output dense, 4
// a layer; packed, one for all of them.
TEST_CASE("cuda: a bf16 forward rounds the packed encoder weights in one launch instead of 4 a layer, same bits",
          "[cuda]") {
  const Device gpu = Device::cuda(0);
  const nn::BertConfig c = odd_sized_config();
  int64_t launches[2];
  Tensor outputs[2];
  for (const bool packed : {true, false}) {
    nn::BertModel model(c, pe::make_position_encoding(c, gpu), gpu, /*with_pooler=*/false);
    if (!packed) unpack(model);
    nn::initialize(model, 3);
    const nn::BertInputs in = odd_batch(gpu);
    nn::Context ctx = nn::Context::eval(MatmulPrecision::bf16);
    NoGradGuard no_grad;
    synchronize(gpu);
    reset_device_counters();
    outputs[packed] = model.forward(in, ctx).value();
    launches[packed] = device_counters().kernel_launches;
  }
  CHECK(launches[false] - launches[true] == 4 * c.num_hidden_layers - 1);
  CHECK(outputs[true].to_doubles() == outputs[false].to_doubles());
}

// Under bf16 products a variant whose attention terms are of the positions
// alone (PositionEncoding::reads_query_key false) has q, k and v made as the
// products' bf16 operands in one pass, as an input-level encoding has: no
// cast of a head's view in the training forward. A variant that reads q
// (Shaw's q . a) keeps them f32, and each product casts its view.
TEST_CASE("under bf16 a variant of the positions alone has q, k and v made as bf16 operands, no head cast",
          "[nn]") {
  for (const char* pe : {"none", "t5_bias", "rel_scalar", "abs_scalar", "alibi", "attenuated", "tupe", "rpe_shaw"}) {
    INFO(pe);
    nn::BertConfig c = odd_sized_config();
    c.pe = pe;
    nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/false);
    nn::initialize(model, 3);
    const nn::BertInputs in = odd_batch(Device::cpu());
    const Shape heads{in.input_ids.size(0), c.num_attention_heads, in.input_ids.size(1), c.head_dim()};
    nn::Context ctx = nn::Context::train(1, 0);  // the batch's ops (inference has its own attention)
    ctx.precision = MatmulPrecision::bf16;
    int64_t head_casts = 0;
    {
      KernelCallRecording recording;
      model.forward(in, ctx);
      for (const KernelCall& call : recording.calls())
        head_casts += std::string(call.kernel) == "copy" && call.shapes[0] == heads;
    }
    if (std::string(pe) == "rpe_shaw") {
      CHECK(head_casts >= 3 * c.num_hidden_layers);  // q, k and v, each layer
    } else {
      CHECK(head_casts == 0);
    }
  }
}

// A pretraining model packs its heads' weights (the pooler, NSP, the MLM
// transform) and the decoder's table (the tied word embeddings) with the
// encoder's: a bf16 forward rounds the whole block once, where the model
// with its weights apart casts each of them, and the loss is the same bits.
TEST_CASE("a pretraining model rounds every product weight and the decoder's table with one cast, same loss",
          "[nn]") {
  const nn::BertConfig c = odd_sized_config();
  const nn::BertInputs in = odd_batch(Device::cpu());
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{-100, 4, -100, 9, -100, 3, -100, -100, -100, -100},
                                            {2, 5});
  const Tensor nsp_labels = Tensor::from_vector(std::vector<int64_t>{0, 1}, {2});
  double losses[2];
  for (const bool packed : {true, false}) {
    INFO((packed ? "packed" : "apart"));
    nn::PretrainingModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*nsp=*/true);
    nn::initialize_bert(model, 3);
    const Tensor words = model.bert.embeddings.word_embeddings.weight.var.value();
    const int64_t block = words.whole_storage().numel();
    std::vector<Shape> weight_shapes;
    size_t weights = 0;
    for (auto& [name, p] : model.named_parameters()) {
      if (!p->product_weight) continue;
      if (p->var.size(0) != 2) weight_shapes.push_back(p->var.shape());  // not NSP's [2, 6]: the [CLS] rows' shape
      ++weights;
      CHECK(p->var.value().shares_storage_with(words));
      if (!packed) p->var = Var(p->var.value().clone(), true, p->var.name());
    }
    CHECK(weights == 6 * static_cast<size_t>(c.num_hidden_layers) + 4);  // pooler, NSP, transform, words
    int64_t block_casts = 0, weight_casts = 0;
    {
      KernelCallRecording recording;
      nn::Context ctx = nn::Context::train(1, 0);
      ctx.precision = MatmulPrecision::bf16;
      losses[packed] = model.forward(in, labels, nsp_labels, ctx).loss.value().item();
      for (const KernelCall& call : recording.calls()) {
        if (std::string(call.kernel) != "copy") continue;
        block_casts += call.shapes[0] == Shape{block};
        weight_casts += std::count(weight_shapes.begin(), weight_shapes.end(), call.shapes[0]) > 0;
      }
    }
    CHECK(block_casts == (packed ? 1 : 0));
    if (packed) CHECK(weight_casts == 0);
    else CHECK(weight_casts >= 3);  // at least the pooler's, the transform's and the words' own casts
  }
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("a per-head table set keeps a layer's heads in one block: for_layer joins them as a view, no copy",
          "[nn][pe]") {
  // 2 layers x 3 heads of [5] tables (share none), and 3 of [4, 2] shared by the layers.
  for (const pe::Share share : {pe::Share::none, pe::Share::layers}) {
    INFO(pe::share_name(share));
    nn::Module owner;
    const Shape shape = share == pe::Share::none ? Shape{5} : Shape{4, 2};
    pe::TableSet set(owner, share, 2, 3, shape, nn::Init::normal(1.0), Device::cpu(),
                     [](int64_t t) { return "table_" + std::to_string(t); });
    nn::initialize(owner, 7);
    Var tables;
    {
      KernelCallRecording recording;
      tables = set.for_layer(1);
      CHECK(recording.calls().empty());  // views only
    }
    const int64_t first = share == pe::Share::none ? 3 : 0;  // layer 1's first table
    for (int64_t h = 0; h < 3; ++h)
      CHECK(tables.value().slice(0, h, h + 1).reshape(shape).to_doubles() == set.table(first + h).var.value().to_doubles());
    // The gradient of sum(tables * w) reaches each head's table as its row of w.
    const Tensor w = rand_f32(tables.shape(), 3);
    sum(mul(tables, Var(w))).backward();
    for (int64_t h = 0; h < 3; ++h)
      CHECK(set.table(first + h).var.grad().to_doubles() == w.slice(0, h, h + 1).reshape(shape).to_doubles());
  }
}

TEST_CASE("tables the layers share are one node a forward: the layers' gradients sum before the heads split",
          "[nn][pe]") {
  // 3 layers x 4 heads sharing 4 tables of [5]; loss = sum over layers of sum(tables * w_layer).
  const int64_t layers = 3, heads = 4;
  const Shape shape{5};
  nn::Module owner;
  pe::TableSet set(owner, pe::Share::layers, layers, heads, shape, nn::Init::normal(1.0), Device::cpu(),
                   [](int64_t t) { return "table_" + std::to_string(t); });
  nn::initialize(owner, 7);
  nn::Context ctx = nn::Context::train(1, 0);
  CHECK(set.for_layer(0, &ctx).state() != set.for_layer(1, &ctx).state());  // outside a forward: a node a call
  ctx.facts = nn::InputFacts{};                                            // inside one (BertModel::forward's scope)
  std::vector<Tensor> w;
  Var loss;
  for (int64_t l = 0; l < layers; ++l) {
    const Var tables = set.for_layer(static_cast<int>(l), &ctx);
    CHECK(tables.state() == set.for_layer(0, &ctx).state());
    w.push_back(rand_f32({heads, 5}, 10 + static_cast<uint64_t>(l)));
    const Var term = sum(mul(tables, Var(w.back())));
    loss = l == 0 ? term : add(loss, term);
  }
  std::vector<KernelCall> calls;
  {
    KernelCallRecording recording;
    loss.backward();
    calls = recording.calls();
  }
  // No call on one head's table alone: the layers' sums are added over the
  // joined block, which the heads then take as views (a head's add a layer before).
  for (const KernelCall& call : calls)
    for (const Shape& s : call.shapes) CHECK(s != shape);
  // Head h's gradient: the sum over layers of w_layer's row h, by hand.
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<double> expected(5, 0.0);
    for (int64_t l = 0; l < layers; ++l) {
      const std::vector<double> row = w[l].slice(0, h, h + 1).to_doubles();
      for (int64_t i = 0; i < 5; ++i) expected[i] += row[i];
    }
    const std::vector<double> got = set.table(h).var.grad().to_doubles();
    for (int64_t i = 0; i < 5; ++i) CHECK(got[i] == Approx(expected[i]).epsilon(1e-6));
  }
}
