// The fine-tuning heads (nn/task_heads.h): HF's parameter names and shapes,
// the losses against naive loops over the logits written from HF's
// definitions (cross-entropy; MSE for regression; the span loss with
// positions past the window ignored), and every parameter through the f64
// gradient check.
#include <algorithm>
#include <cmath>

#include "base/file_io.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "nn/heads.h"
#include "nn/task_heads.h"
#include "tensor/cpu/cpu_paths.h"
#include "tensor/kernel_calls.h"
#include "tensor/safetensors.h"
#include "pe/registry.h"
#include "tests/helpers.h"
#include "tests/nn/gradcheck_model.h"

using namespace ordo;
using ordo::test::check_model;

namespace {

nn::BertConfig small_config() {
  return ordo::test::tiny_bert_config(/*vocab_size=*/13, /*hidden_size=*/8, /*layers=*/1, /*heads=*/2,
                                      /*intermediate_size=*/12, /*max_position_embeddings=*/9);
}

nn::BertInputs batch() {
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{2, 7, 4, 9, 3, 2, 11, 3, 0, 0, 2, 5, 6, 3, 0}, {3, 5});
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0}, {3, 5});
  in.attention_mask = Tensor::from_vector(std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0}, {3, 5});
  return in;
}

// -log softmax(row)[target], in long double from the logits' values.
double naive_cross_entropy(const std::vector<double>& row, int64_t target) {
  long double most = row[0], total = 0;
  for (double x : row) most = std::max<long double>(most, x);
  for (double x : row) total += std::exp(static_cast<long double>(x) - most);
  return static_cast<double>(most + std::log(total) - row[static_cast<size_t>(target)]);
}

std::vector<double> row_of(const std::vector<double>& flat, int64_t row, int64_t width) {
  return std::vector<double>(flat.begin() + row * width, flat.begin() + (row + 1) * width);
}

template <class Model>
std::unique_ptr<Model> make(const nn::BertConfig& c, int labels = 0) {
  std::unique_ptr<Model> model;
  if constexpr (std::is_same_v<Model, nn::SequenceClassifier>)
    model = std::make_unique<Model>(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), labels);
  else
    model = std::make_unique<Model>(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu());
  nn::initialize(*model, 7);
  model->to_dtype(DType::f64);
  return model;
}

}  // namespace

TEST_CASE("task heads carry HF's names: classifier on the pooler, qa_outputs without one", "[nn][finetune]") {
  auto classifier = make<nn::SequenceClassifier>(small_config(), 3);
  std::map<std::string, Shape> shapes;
  for (auto& [name, p] : classifier->named_parameters()) shapes[name] = p->var.shape();
  CHECK(shapes.at("classifier.weight") == Shape{3, 8});
  CHECK(shapes.at("classifier.bias") == Shape{3});
  CHECK(shapes.count("bert.pooler.dense.weight") == 1);
  auto span = make<nn::SpanExtractor>(small_config());
  shapes.clear();
  for (auto& [name, p] : span->named_parameters()) shapes[name] = p->var.shape();
  CHECK(shapes.at("qa_outputs.weight") == Shape{2, 8});
  CHECK(shapes.at("qa_outputs.bias") == Shape{2});
  for (const auto& [name, shape] : shapes) CHECK(name.rfind("bert.pooler", 0) != 0);
  CHECK_THROWS_WITH(nn::SequenceClassifier(small_config(), pe::make_position_encoding(small_config(), Device::cpu()),
                                           Device::cpu(), 0),
                    Catch::Contains("at least 1 label"));
}

TEST_CASE("classification loss is the mean cross-entropy of the logits, regression the mean squared error",
          "[nn][finetune]") {
  nn::Context ctx = nn::Context::eval();
  auto classifier = make<nn::SequenceClassifier>(small_config(), 3);
  Var logits = classifier->forward(batch(), ctx);
  REQUIRE(logits.shape() == Shape{3, 3});
  const std::vector<int64_t> labels{2, 0, 1};
  const std::vector<double> z = logits.value().to_doubles();
  double expected = 0;
  for (int64_t i = 0; i < 3; ++i) expected += naive_cross_entropy(row_of(z, i, 3), labels[i]) / 3;
  CHECK(classifier->loss(logits, Tensor::from_vector(labels, {3})).value().item() == Approx(expected).epsilon(1e-12));

  auto regressor = make<nn::SequenceClassifier>(small_config(), 1);
  Var scores = regressor->forward(batch(), ctx);
  REQUIRE(scores.shape() == Shape{3, 1});
  const std::vector<double> gold{0.5, 4.25, 2.0}, y = scores.value().to_doubles();
  double mse = 0;
  for (int64_t i = 0; i < 3; ++i) mse += (y[i] - gold[i]) * (y[i] - gold[i]) / 3;
  CHECK(regressor->loss(scores, Tensor::from_vector(gold, {3})).value().item() == Approx(mse).epsilon(1e-12));
  CHECK_THROWS_WITH(classifier->loss(logits, Tensor::from_vector(std::vector<int64_t>{1, 2}, {2})),
                    Catch::Contains("labels"));
}

TEST_CASE("span loss: the mean of the start and end cross-entropies, positions past the window ignored",
          "[nn][finetune]") {
  nn::Context ctx = nn::Context::eval();
  auto span = make<nn::SpanExtractor>(small_config());
  nn::SpanLogits logits = span->forward(batch(), ctx);
  REQUIRE(logits.start.shape() == Shape{3, 5});
  REQUIRE(logits.end.shape() == Shape{3, 5});
  // Row 1's start is past the window (HF clamps it to L = 5 and ignores it); row 2's end is negative (clamped to 0).
  const std::vector<int64_t> starts{1, 17, 0}, ends{3, 2, -4};
  const std::vector<double> s = logits.start.value().to_doubles(), e = logits.end.value().to_doubles();
  const double start_loss = (naive_cross_entropy(row_of(s, 0, 5), 1) + naive_cross_entropy(row_of(s, 2, 5), 0)) / 2;
  const double end_loss = (naive_cross_entropy(row_of(e, 0, 5), 3) + naive_cross_entropy(row_of(e, 1, 5), 2) +
                           naive_cross_entropy(row_of(e, 2, 5), 0)) / 3;
  Var loss = span->loss(logits, Tensor::from_vector(starts, {3}), Tensor::from_vector(ends, {3}));
  CHECK(loss.value().item() == Approx((start_loss + end_loss) / 2).epsilon(1e-12));
}

TEST_CASE("task heads pass the f64 gradient check, every parameter", "[gradcheck][nn][finetune]") {
  nn::BertConfig c = small_config();
  c.hidden_dropout_prob = 0;  // the check needs one function; dropout's own check is elsewhere
  c.attention_probs_dropout_prob = 0;
  nn::Context ctx = nn::Context::eval();
  for (int labels : {3, 1}) {
    auto model = make<nn::SequenceClassifier>(c, labels);
    const Tensor gold = labels == 1 ? Tensor::from_vector(std::vector<double>{0.5, -1.0, 2.0}, {3})
                                    : Tensor::from_vector(std::vector<int64_t>{2, 0, 1}, {3});
    GradcheckResult r = check_model(*model, [&] { return model->loss(model->forward(batch(), ctx), gold); });
    INFO((labels == 1 ? "regression: " : "classification: ") << r.worst);
    CHECK(r.ok);
  }
  nn::BertConfig decoder = c;
  decoder.decoder = true;  // the classifier on the last real token, without a pooler
  auto last_token = make<nn::SequenceClassifier>(decoder, 3);
  GradcheckResult decoded = check_model(*last_token, [&] {
    return last_token->loss(last_token->forward(batch(), ctx),
                            Tensor::from_vector(std::vector<int64_t>{2, 0, 1}, {3}));
  });
  INFO("decoder classification: " << decoded.worst);
  CHECK(decoded.ok);
  // The span logits of padding positions enter the softmax (as in HF), so the
  // [PAD] embedding moves the loss while padding_idx keeps its gradient at 0
  // (PyTorch's rule): here the padded places hold another id.
  nn::BertInputs in = batch();
  std::vector<int64_t> ids = in.input_ids.to_vector<int64_t>();
  for (int64_t& id : ids) id = id == 0 ? 1 : id;
  in.input_ids = Tensor::from_vector(ids, {3, 5});
  auto span = make<nn::SpanExtractor>(c);
  GradcheckResult r = check_model(*span, [&] {
    return span->loss(span->forward(in, ctx), Tensor::from_vector(std::vector<int64_t>{1, 17, 0}, {3}),
                      Tensor::from_vector(std::vector<int64_t>{3, 2, 4}, {3}));
  });
  INFO("span: " << r.worst);
  CHECK(r.ok);
}

// ---- loading checkpoints into the task models (model::load_classifier, load_span_extractor) ----

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Every parameter of `model` under "bert." equals the tensor of that name in `source`.
void check_encoder_copied(nn::Module& model, nn::Module& source) {
  int compared = 0;
  for (auto& [name, p] : model.named_parameters()) {
    if (name.rfind("bert.", 0) != 0 || name.rfind("bert.pooler.", 0) == 0) continue;
    nn::Parameter* original = source.find_parameter(name);
    REQUIRE(original != nullptr);
    INFO(name);
    CHECK(p->var.value().to_doubles() == original->var.value().to_doubles());
    ++compared;
  }
  CHECK(compared > 10);
}

}  // namespace

TEST_CASE("task models load an MLM+NSP checkpoint: encoder and pooler copied, pretraining heads left out",
          "[nn][finetune][checkpoint]") {
  ordo::test::TempDir dir("task-load");
  nn::BertConfig c = small_config();
  auto pretrained = model::build_model(c, Device::cpu(), /*nsp=*/true, 3);
  nn::save_model(dir.path, *pretrained);

  nn::LoadReport report;
  auto classifier = model::load_classifier(dir.path, 2, Device::cpu(), 9, &report);
  check_encoder_copied(*classifier, *pretrained);
  CHECK(classifier->bert.pooler->dense.weight.var.value().to_doubles() ==
        pretrained->bert.pooler->dense.weight.var.value().to_doubles());
  CHECK(report.missing == std::vector<std::string>{"classifier.weight", "classifier.bias"});
  CHECK(contains(report.unused, "cls.seq_relationship.weight"));
  CHECK(contains(report.unused, "cls.predictions.bias"));

  auto span = model::load_span_extractor(dir.path, Device::cpu(), 9, &report);
  check_encoder_copied(*span, *pretrained);
  CHECK(report.missing == std::vector<std::string>{"qa_outputs.weight", "qa_outputs.bias"});
  CHECK(contains(report.unused, "bert.pooler.dense.weight"));
}

TEST_CASE("a bare BertModel checkpoint (no bert. prefix, no pooler) loads, the pooler starts fresh and is reported",
          "[nn][finetune][checkpoint]") {
  ordo::test::TempDir dir("task-bare");
  nn::BertConfig c = small_config();
  auto source = model::build_model(c, Device::cpu(), /*nsp=*/false, 4);
  nn::save_model(dir.path, *source);
  // What AutoModel.save_pretrained writes for a BertModel: the encoder's tensors without "bert.", no heads.
  nn::NamedTensors bare;
  for (auto& [name, t] : safetensors::load(dir.path + "/model.safetensors"))
    if (name.rfind("bert.", 0) == 0) bare.emplace_back(name.substr(5), t);
  safetensors::save(dir.path + "/model.safetensors", bare, {{"format", "pt"}});

  nn::LoadReport report;
  auto classifier = model::load_classifier(dir.path, 3, Device::cpu(), 9, &report);
  check_encoder_copied(*classifier, *source);
  CHECK(contains(report.missing, "bert.pooler.dense.weight"));
  CHECK(contains(report.missing, "classifier.weight"));
  CHECK(report.unused.empty());
}

TEST_CASE("a causal decoder fine-tunes: the classifier reads each row's last real token, the spans keep the mask",
          "[nn][finetune][checkpoint]") {
  ordo::test::TempDir dir("task-decoder");
  nn::BertConfig c = small_config();
  c.decoder = true;
  auto pretrained = model::build_model(c, Device::cpu(), false, 1);
  nn::save_model(dir.path, *pretrained);

  nn::LoadReport report;
  auto classifier = model::load_classifier(dir.path, 3, Device::cpu(), 9, &report);
  check_encoder_copied(*classifier, *pretrained);
  CHECK(classifier->bert.pooler == nullptr);
  CHECK(report.missing == std::vector<std::string>{"classifier.weight", "classifier.bias"});
  nn::Context ctx = nn::Context::eval();
  const nn::BertInputs padded = batch();
  const std::vector<double> logits = classifier->forward(padded, ctx).value().to_doubles();
  // Independently, each row alone without its padding: W h_last + b from the
  // encoder's last hidden state, in a loop.
  const std::vector<int64_t> ids = padded.input_ids.to_vector<int64_t>(),
                             segments = padded.segment_ids.to_vector<int64_t>();
  const std::vector<double> w = classifier->classifier.weight.var.value().to_doubles(),
                            bias = classifier->classifier.bias->var.value().to_doubles();
  const int64_t lengths[] = {5, 3, 4}, hidden = 8;
  for (int64_t row = 0; row < 3; ++row) {
    const int64_t n = lengths[row];
    nn::BertInputs alone;
    alone.input_ids = Tensor::from_vector(std::vector<int64_t>(ids.begin() + row * 5, ids.begin() + row * 5 + n), {1, n});
    alone.segment_ids =
        Tensor::from_vector(std::vector<int64_t>(segments.begin() + row * 5, segments.begin() + row * 5 + n), {1, n});
    const std::vector<double> h = classifier->bert.forward(alone, ctx).value().to_doubles();
    for (int64_t label = 0; label < 3; ++label) {
      double expected = bias[static_cast<size_t>(label)];
      for (int64_t k = 0; k < hidden; ++k)
        expected += w[static_cast<size_t>(label * hidden + k)] * h[static_cast<size_t>((n - 1) * hidden + k)];
      INFO("row " << row << " label " << label);
      CHECK(logits[static_cast<size_t>(row * 3 + label)] == Approx(expected).margin(1e-5));
    }
  }
  nn::BertInputs empty_row = batch();
  empty_row.attention_mask = Tensor::from_vector(std::vector<int64_t>(15, 0), {3, 5});
  CHECK_THROWS_WITH(classifier->forward(empty_row, ctx), Catch::Contains("row 0 of the batch has no real token"));

  // A token's span logits see only the tokens before it: changing the last
  // token of row 0 moves its own logits and none before.
  auto span = model::load_span_extractor(dir.path, Device::cpu(), 9, &report);
  check_encoder_copied(*span, *pretrained);
  CHECK(report.missing == std::vector<std::string>{"qa_outputs.weight", "qa_outputs.bias"});
  nn::BertInputs changed = batch();
  std::vector<int64_t> changed_ids = ids;
  changed_ids[4] = 8;
  changed.input_ids = Tensor::from_vector(changed_ids, {3, 5});
  const std::vector<double> before = span->forward(batch(), ctx).start.value().to_doubles(),
                            after = span->forward(changed, ctx).start.value().to_doubles();
  for (size_t t = 0; t < 4; ++t) CHECK(after[t] == before[t]);
  CHECK(after[4] != before[4]);
}

TEST_CASE("task models refuse a checkpoint whose shapes differ from its config", "[nn][finetune][checkpoint][errors]") {
  ordo::test::TempDir other("task-shapes");
  nn::BertConfig wide = small_config();
  nn::save_model(other.path, *model::build_model(wide, Device::cpu(), false, 1));
  wide.hidden_size = 12;  // the config now disagrees with the tensors
  json::Value config = nn::config_to_json(wide);
  write_file_atomic(other.path + "/config.json", json::dump(config));
  CHECK_THROWS_WITH(model::load_span_extractor(other.path, Device::cpu(), 1), Catch::Contains("has shape"));
}

TEST_CASE("every PE variant fine-tunes: both heads train a step with finite loss and gradients", "[nn][finetune][pe]") {
  for (const std::string& pe : pe::variant_names()) {
    INFO("pe " << pe);
    nn::BertConfig c = ordo::test::tiny_bert_config(13, 8, 1, 2, 12, /*max_position_embeddings=*/9);
    c.pe = pe;
    nn::BertConfig built = c;
    try {
      pe::make_position_encoding(built, Device::cpu());
    } catch (const Error& e) {
      // A variant that needs more of the model than this shape has says so; it is not skipped silently.
      FAIL_CHECK("variant " << pe << " could not be built on the small model: " << e.what());
      continue;
    }
    auto classifier = make<nn::SequenceClassifier>(c, 3);
    nn::Context ctx = nn::Context::train(1, 0);
    Var loss = classifier->loss(classifier->forward(batch(), ctx), Tensor::from_vector(std::vector<int64_t>{0, 2, 1}, {3}));
    loss.backward();
    CHECK(std::isfinite(loss.value().item()));
    for (const auto& [name, p] : classifier->named_parameters()) {
      INFO(name);
      if (p->var.grad().defined()) CHECK(std::isfinite(global_norm({p->var.grad()})));
    }
    auto span = make<nn::SpanExtractor>(c);
    Var span_loss = span->loss(span->forward(batch(), ctx), Tensor::from_vector(std::vector<int64_t>{1, 2, 0}, {3}),
                               Tensor::from_vector(std::vector<int64_t>{3, 2, 0}, {3}));
    span_loss.backward();
    CHECK(std::isfinite(span_loss.value().item()));
  }
}

// The classifier reads [CLS] alone, so in inference the last layer computes
// that row alone (BertModel::forward_first_row). Its logits against the head
// over the whole last hidden state: within the products' rounding at another
// shape in f32, 1e-12 in f64; the whole forward wherever the shortcut does not
// apply (an encoding in the attention, training, a recorded gradient).
TEST_CASE("in inference a classifier's last layer computes the CLS row alone, with the whole forward's logits",
          "[nn]") {
  const nn::BertInputs in = batch();
  for (const char* pe : {"ape_learned", "ape_sin", "none", "rpe_shaw", "rope"})
    for (const bool pre_ln : {false, true})
      for (const DType dtype : {DType::f32, DType::f64}) {
        INFO(pe << (pre_ln ? " pre-LN " : " post-LN ") << dtype_name(dtype));
        nn::BertConfig c = ordo::test::tiny_bert_config(13, 8, 2, 2, 12, 9);
        c.pe = pe;
        c.pre_layer_norm = pre_ln;
        nn::SequenceClassifier model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), 3);
        nn::initialize(model, 5);
        if (dtype == DType::f64) model.to_dtype(dtype);
        const bool shortcut = std::string(pe) != "rpe_shaw" && std::string(pe) != "rope";
        const double bound = dtype == DType::f64 ? 1e-12 : 1e-5;
        nn::Context ctx = nn::Context::eval();
        // The unfused attention, and (as a GPU runs it) the fused kernels, which
        // take every query row: the shortcut keeps row 0 of their output.
        for (const bool fused_kernels : {false, true}) {
          ctx.fused_attention_on_cpu = fused_kernels;
          Tensor logits, whole;
          {
            NoGradGuard no_grad;
            CHECK(model.bert.forward_first_row(in, ctx).size(1) == (shortcut ? 1 : 5));
            logits = model.forward(in, ctx).value();
            whole = model.classifier.forward(model.bert.pooler->forward(model.bert.forward(in, ctx), ctx), ctx).value();
          }
          const std::vector<double> got = logits.to_doubles(), want = whole.to_doubles();
          REQUIRE(got.size() == 9);
          for (size_t i = 0; i < got.size(); ++i)
            CHECK(std::fabs(got[i] - want[i]) <= bound * std::max(1.0, std::fabs(want[i])));
        }
        ctx.fused_attention_on_cpu = false;
        // Training, or a forward that records a gradient, keeps every row.
        CHECK(model.bert.forward_first_row(in, ctx).size(1) == 5);
        nn::Context train = nn::Context::train(1, 0);
        NoGradGuard no_grad;
        CHECK(model.bert.forward_first_row(in, train).size(1) == 5);
      }
}

// The MLM head's predicted rows, padded for a fixed shape: with rows nothing
// predicts, in row order (then select_rows' scatter is the gather's
// backward), or with row 0 repeated where the padding outnumbers the rows.
// Worked by hand from the labels; the padded rows change neither the loss nor
// any gradient, bit for bit (f32: their targets are ignored, their gradient
// rows 0).
TEST_CASE("mlm_rows pads with rows nothing predicts, in row order, and the step is the unpadded one",
          "[nn][determinism]") {
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{-100, 7, -100, -100, 4, -100}, {2, 3});
  const nn::MlmRows plain = nn::mlm_rows(labels, Device::cpu());
  CHECK(plain.ascending);
  CHECK(plain.rows.to_vector<int64_t>() == std::vector<int64_t>{1, 4});
  const nn::MlmRows padded = nn::mlm_rows(labels, Device::cpu(), 4);
  CHECK(padded.ascending);
  CHECK(padded.rows.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 4});
  CHECK(padded.targets.to_vector<int64_t>() == std::vector<int64_t>{-100, 7, -100, 4});
  const nn::MlmRows all = nn::mlm_rows(labels, Device::cpu(), 6);
  CHECK(all.rows.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  const nn::MlmRows repeated = nn::mlm_rows(labels, Device::cpu(), 8);  // more than the 6 rows
  CHECK_FALSE(repeated.ascending);
  CHECK(repeated.rows.to_vector<int64_t>() == std::vector<int64_t>{1, 4, 0, 0, 0, 0, 0, 0});
  CHECK_THROWS_WITH(nn::mlm_rows(labels, Device::cpu(), 1), Catch::Contains("more than the 1"));

  // The step on padded rows is the unpadded step bit for bit by construction
  // in the deterministic mode: the padded rows' gradients are exact zeros, and
  // every sum over the rows (the products' FMA chains, the biases' and the
  // LayerNorm's column sums) adds them in row order, where a zero changes no
  // bit. OpenBLAS's kernels may group a product's sum by its length (its
  // Haswell/Zen kernels do: 52 gradients differ there), so with them it holds
  // only where their sums happen not to move (docs/determinism.md).
  const cpu::DeterministicScope deterministic;
  const nn::BertConfig c = small_config();
  nn::BertInputs in = batch();
  in.input_ids = in.input_ids.slice(0, 0, 2).slice(1, 0, 3).contiguous();
  in.segment_ids = in.segment_ids.slice(0, 0, 2).slice(1, 0, 3).contiguous();
  in.attention_mask = in.attention_mask.slice(0, 0, 2).slice(1, 0, 3).contiguous();
  std::vector<std::vector<Tensor>> results;
  for (const nn::MlmRows* rows : {&plain, &padded, &repeated}) {
    nn::PretrainingModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), false);
    nn::initialize(model, 7);
    nn::Context ctx = nn::Context::train(1, 0);
    nn::PretrainingOutput out = model.forward(in, *rows, Tensor(), ctx);
    out.loss.backward();
    std::vector<Tensor> r = {out.loss.value()};
    for (const auto& [name, p] : model.named_parameters()) r.push_back(p->var.grad());
    results.push_back(r);
  }
  for (size_t k = 1; k < results.size(); ++k)
    for (size_t i = 0; i < results[0].size(); ++i) {
      INFO((k == 1 ? "padded in row order" : "row 0 repeated") << ", value " << i << " (0: the loss)");
      CHECK(ordo::test::bit_identical(results[k][i], results[0][i]));
    }
}

// A padding bias the training loop makes on the host with the batch is the
// bias the forward makes from attention_mask: the loss and every gradient
// bit for bit, and the forward makes no kernel for it. A bias of another
// shape, dtype or device is refused by name.
TEST_CASE("a padding bias made on the host gives the forward's loss and gradients, and spares its kernel", "[nn]") {
  const nn::BertConfig c = small_config();
  const Tensor labels = Tensor::from_vector(std::vector<int64_t>{-100, 7, -100, -100, 4, -100, 3, -100, -100, -100,
                                                                 -100, -100, 9, -100, -100},
                                            {3, 5});
  std::vector<std::vector<Tensor>> results;
  std::vector<int64_t> affine_calls;
  for (const bool given : {false, true}) {
    nn::BertInputs in = batch();
    if (given) in.padding_bias = nn::attention_bias(in.attention_mask, 3, 5, false, DType::f32, Device::cpu());
    nn::PretrainingModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), false);
    nn::initialize(model, 7);
    nn::Context ctx = nn::Context::train(1, 0);
    KernelCallRecording recording;
    nn::PretrainingOutput out = model.forward(in, labels, Tensor(), ctx);
    const std::vector<KernelCall> calls = recording.calls();
    affine_calls.push_back(static_cast<int64_t>(std::count_if(
        calls.begin(), calls.end(), [](const KernelCall& k) { return std::string(k.kernel) == "affine_to"; })));
    out.loss.backward();
    std::vector<Tensor> r = {out.loss.value()};
    for (const auto& [name, p] : model.named_parameters()) r.push_back(p->var.grad());
    results.push_back(r);
  }
  CHECK(affine_calls == std::vector<int64_t>{1, 0});
  for (size_t i = 0; i < results[0].size(); ++i) {
    INFO("value " << i << " (0: the loss)");
    CHECK(ordo::test::bit_identical(results[1][i], results[0][i]));
  }
  nn::PretrainingModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), false);
  nn::BertInputs in = batch();
  nn::Context ctx;
  in.padding_bias = Tensor::zeros({3, 5}, DType::f32);
  CHECK_THROWS_WITH(model.forward(in, labels, Tensor(), ctx), Catch::Contains("padding_bias has shape [3, 5], expected [3, 1, 1, 5]"));
  in.padding_bias = Tensor::zeros({3, 1, 1, 5}, DType::f64);
  CHECK_THROWS_WITH(model.forward(in, labels, Tensor(), ctx), Catch::Contains("padding_bias has dtype f64, expected f32"));
}
