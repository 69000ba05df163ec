// Layer-level gradient checks in f64: the model's modules composed as the
// model composes them, every parameter checked against finite differences.
#include "autograd/gradcheck.h"
#include "model/model.h"
#include "nn/heads.h"
#include "pe/registry.h"
#include "tests/helpers.h"
#include "tests/nn/gradcheck_model.h"

using namespace ordo;
using ordo::test::check_model;

namespace {

nn::BertConfig tiny_config() {
  return ordo::test::tiny_bert_config(/*vocab_size=*/13, /*hidden_size=*/8, /*layers=*/2, /*heads=*/2,
                                      /*intermediate_size=*/12, /*max_position_embeddings=*/9);
}

// A batch of 2 sequences of length 5, the second with 2 padding positions.
nn::BertInputs tiny_batch(Tensor& labels) {
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 2, 11, 3, 0, 0}, {2, 5});
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, {2, 5});
  in.attention_mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {2, 5});
  labels = Tensor::from_vector(std::vector<int64_t>{-100, 5, -100, 8, -100, -100, 6, -100, -100, -100}, {2, 5});
  return in;
}

// The gradient check of a language model of config c (no NSP) on tiny_batch's loss.
GradcheckResult language_model_check(const nn::BertConfig& c, uint64_t seed) {
  auto model = model::build_model(c, Device::cpu(), /*nsp=*/false, seed);
  Tensor labels;
  nn::BertInputs in = tiny_batch(labels);
  nn::Context ctx = nn::Context::eval();
  return check_model(*model, [&] { return model->forward(in, labels, Tensor(), ctx).loss; });
}

}  // namespace

TEST_CASE("self-attention with a padding mask passes the f64 gradient check", "[gradcheck][nn]") {
  nn::BertConfig c = tiny_config();
  nn::SelfAttention attention(c, Device::cpu());
  auto pe = pe::make_position_encoding(c, Device::cpu());
  Tensor x = ordo::test::random_tensor({2, 5, 8}, 3);
  Tensor bias = nn::attention_bias(Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, {2, 5}),
                                   2, 5, false, DType::f64, Device::cpu());
  Tensor positions = nn::default_positions(2, 5, Device::cpu());
  nn::Context ctx = nn::Context::eval();
  GradcheckResult r = check_model(attention, [&] {
    return attention.forward(Var(x), Var(bias), *pe, 0, positions, Tensor(), ctx, nullptr);
  });
  INFO(r.worst);
  CHECK(r.ok);
}

TEST_CASE("encoder layers, post-LN and pre-LN, pass the f64 gradient check", "[gradcheck][nn]") {
  for (bool pre_ln : {false, true}) {
    nn::BertConfig c = tiny_config();
    c.pre_layer_norm = pre_ln;
    nn::EncoderLayer layer(c, Device::cpu());
    auto pe = pe::make_position_encoding(c, Device::cpu());
    Tensor x = ordo::test::random_tensor({2, 5, 8}, 4);
    Tensor bias = nn::attention_bias(Tensor(), 2, 5, /*causal=*/true, DType::f64, Device::cpu());
    Tensor positions = nn::default_positions(2, 5, Device::cpu());
    nn::Context ctx = nn::Context::eval();
    GradcheckResult r = check_model(layer, [&] { return layer.forward(Var(x), Var(bias), *pe, 0, positions, Tensor(), ctx, nullptr); });
    INFO((pre_ln ? "pre-LN: " : "post-LN: ") << r.worst);
    CHECK(r.ok);
  }
}

TEST_CASE("the MLM head with its tied decoder passes the f64 gradient check", "[gradcheck][nn]") {
  nn::BertConfig c = tiny_config();
  nn::MlmHead head(c, Device::cpu());
  // The word embeddings are checked through the tie as a second input.
  nn::Embedding words(c.vocab_size, c.hidden_size, 0.02, Device::cpu());
  Tensor hidden = ordo::test::random_tensor({4, 8}, 5);
  Tensor targets = Tensor::from_vector(std::vector<int64_t>{3, 12, 0, 7}, {4});
  head.to_dtype(DType::f64);
  words.to_dtype(DType::f64);
  std::vector<nn::NamedParameter> params = head.named_parameters();
  params.emplace_back("words", &words.weight);
  std::vector<Tensor> values;
  for (size_t i = 0; i < params.size(); ++i) values.push_back(ordo::test::random_tensor(params[i].second->var.shape(), 50 + i, DType::f64, -0.5, 0.5));
  GradcheckResult r = gradcheck(
      [&](const std::vector<Var>& in) {
        for (size_t i = 0; i < params.size(); ++i) params[i].second->var = in[i];
        return cross_entropy(head.forward(Var(hidden), words.weight.var, nn::Context::eval()), targets);
      },
      values);
  INFO(r.worst);
  CHECK(r.ok);
}

TEST_CASE("the whole tiny BERT with MLM and NSP heads passes the f64 gradient check", "[gradcheck][nn]") {
  nn::BertConfig c = tiny_config();
  auto model = model::build_model(c, Device::cpu(), /*nsp=*/true, 1);
  Tensor labels;
  nn::BertInputs in = tiny_batch(labels);
  Tensor nsp = Tensor::from_vector(std::vector<int64_t>{1, 0}, {2});
  nn::Context ctx = nn::Context::eval();
  // The padding positions hold [PAD] (id 0), whose row gets no gradient by
  // design; finite differences agree only if padding influences nothing.
  GradcheckResult r = check_model(*model, [&] { return model->forward(in, labels, nsp, ctx).loss; });
  INFO(r.worst);
  CHECK(r.ok);
  std::vector<std::string> ops = r.ops;
  for (const char* op : {"embedding_layernorm", "residual_layernorm", "bias_activation_layernorm"}) {
    INFO(op);
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());  // every LayerNorm's fused form checked
  }
}

TEST_CASE("the causal decoder passes the f64 gradient check", "[gradcheck][nn]") {
  nn::BertConfig c = tiny_config();
  c.decoder = true;
  GradcheckResult r = language_model_check(c, 2);
  INFO(r.worst);
  CHECK(r.ok);
}

// Position terms every layer shares are one node a forward
// (nn::Context::layer_shared): the layers' gradients sum there before
// reaching the parameters. T5's bucket tables (shared by the layers), and
// rpe_sin_learnable's frequencies shared by all or by the layers.
TEST_CASE("position terms the layers share pass the f64 gradient check through the whole model", "[gradcheck][nn][pe]") {
  for (const auto& [pe, share] : std::vector<std::pair<std::string, std::string>>{
           {"t5_bias", "layers"}, {"rpe_sin_learnable", "all"}, {"rpe_sin_learnable", "layers"}}) {
    INFO(pe << " share " << share);
    nn::BertConfig c = tiny_config();
    c.pe = pe;
    c.pe_options["share"] = share;
    GradcheckResult r = language_model_check(c, 1);
    INFO(r.worst);
    CHECK(r.ok);
  }
}
