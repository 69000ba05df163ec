// Frozen per-layer probing (probe/layer_probing.h; the locality/symmetry
// paper's Table 9 and Figure 4): the multinomial logistic regression checked
// by its optimality condition (the penalised loss's gradient, written here
// from the loss, vanishes at the fit), the tasks' splits as the header says
// they are cut, and the batched, padded mean pooling against each sentence
// run alone through the model's forward pass.
#include <cmath>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "model/model.h"
#include "nn/bert.h"
#include "nn/position.h"
#include "probe/layer_probing.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

// Three Gaussian blobs in 3 dimensions, labelled 0..2, with a fourth, noisy feature.
void blobs(int64_t n, uint64_t seed, Matrix& x, std::vector<int>& y) {
  const std::vector<double> u = test::random_values(n * 4, seed, -1, 1);
  x = Matrix(n, 4);
  y.assign(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    y[static_cast<size_t>(i)] = c;
    for (int64_t f = 0; f < 3; ++f) x(i, f) = (f == c ? 2.0 : 0.0) + u[static_cast<size_t>(i * 4 + f)];
    x(i, 3) = 5 * u[static_cast<size_t>(i * 4 + 3)];
  }
}

}  // namespace

TEST_CASE("softmax regression: the penalised loss's gradient vanishes at the fit, separable blobs classified",
          "[probe][layers]") {
  Matrix x;
  std::vector<int> y;
  blobs(90, 3, x, y);
  const double l2 = 0.05;
  const probe::SoftmaxModel m = probe::fit_softmax(x, y, 3, l2, 3000);
  // The gradient of mean_i -log softmax(W^T z_i + b)_{y_i} + l2/2 |W|^2 in the standardised coordinates.
  const int64_t n = x.rows, d = x.cols, k = 3;
  Matrix grad_w(d, k);
  std::vector<double> grad_b(k, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> z(d), s(m.b);
    for (int64_t f = 0; f < d; ++f) z[f] = (x(i, f) - m.mean[f]) / m.scale[f];
    for (int64_t c = 0; c < k; ++c)
      for (int64_t f = 0; f < d; ++f) s[c] += z[f] * m.w(f, c);
    double top = std::max({s[0], s[1], s[2]}), sum = 0;
    for (double& e : s) sum += (e = std::exp(e - top));
    for (int64_t c = 0; c < k; ++c) {
      const double r = (s[c] / sum - (c == y[i] ? 1 : 0)) / static_cast<double>(n);
      grad_b[c] += r;
      for (int64_t f = 0; f < d; ++f) grad_w(f, c) += r * z[f];
    }
  }
  double norm = 0;
  for (int64_t f = 0; f < d; ++f)
    for (int64_t c = 0; c < k; ++c) norm += std::pow(grad_w(f, c) + l2 * m.w(f, c), 2);
  for (double g : grad_b) norm += g * g;
  CHECK(std::sqrt(norm) < 1e-6);
  // The standardisation: each feature's training mean and population standard deviation.
  double mean0 = 0;
  for (int64_t i = 0; i < n; ++i) mean0 += x(i, 0) / static_cast<double>(n);
  CHECK(m.mean[0] == Approx(mean0).epsilon(1e-12));
  // Blobs 2 apart with noise within +-1 on each side: every training and fresh point is classified.
  CHECK(m.accuracy(x, y) == 1.0);
  Matrix fresh;
  std::vector<int> fresh_y;
  blobs(30, 11, fresh, fresh_y);
  CHECK(m.accuracy(fresh, fresh_y) == 1.0);
  CHECK_THROWS_WITH(probe::fit_softmax(x, {0, 1}, 3, l2), Contains("90 feature rows, 2 labels"));
  CHECK_THROWS_WITH(probe::fit_softmax(x, std::vector<int>(90, 3), 3, l2), Contains("label 3 outside 0..2"));
}

TEST_CASE("probing tasks: SentEval's tr/va/te, SST-2's train with its last tenth selecting and dev reporting",
          "[probe][layers]") {
  test::TempDir dir("layer-tasks");
  make_directories(dir / "tree_depth");
  write_file_atomic(dir / "tree_depth/tree_depth.txt",
                    "tr\t3\ta b c\ntr\t4\ta b\ntr\t5\tc\nva\t4\tb\nte\t5\ta\nte\t3\tc c\n");
  probe::ProbeTask t = probe::read_probe_task(dir.path, "tree_depth", 2);
  CHECK(t.classes == 3);
  CHECK(t.fit.sentences == std::vector<std::string>{"a b c", "a b"});  // max_fit 2: the first two
  CHECK(t.fit.labels == std::vector<int>{0, 1});                       // classes "3", "4", "5" in string order
  CHECK(t.select.labels == std::vector<int>{1});
  CHECK(t.report.sentences == std::vector<std::string>{"a", "c c"});
  make_directories(dir / "tense");
  std::string train = "sentence\tlabel\n";
  for (int i = 0; i < 20; ++i) train += "s" + std::to_string(i) + "\t" + std::to_string(i % 2) + "\n";
  write_file_atomic(dir / "tense/train.tsv", train);
  write_file_atomic(dir / "tense/dev.tsv", "sentence\tlabel\nd0\t1\nd1\t0\n");
  t = probe::read_probe_task(dir.path, "tense", 100);
  CHECK(t.classes == 2);
  CHECK(t.fit.sentences.size() == 18);  // 20 - 20 / 10
  CHECK(t.select.sentences == std::vector<std::string>{"s18", "s19"});
  CHECK(t.report.labels == std::vector<int>{1, 0});
  CHECK_THROWS_WITH(probe::read_probe_task(dir.path, "subject_number", 100), Contains("has neither"));
  CHECK_THROWS_WITH(probe::read_probe_task(dir.path, "somo", 100), Contains("not one of the synthetic probing tasks"));
}

TEST_CASE("layer features: the batch's padded mean pooling equals each sentence alone, every layer, both ablations",
          "[probe][layers]") {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "cat", "ran", "saw", "."};
  const text::Tokenizer tokenizer(text::Vocab::from_tokens(tokens));
  for (const std::string pe : {"ape_learned", "tupe"}) {
    nn::BertConfig c = test::tiny_bert_config(static_cast<int64_t>(tokens.size()), 16, 2, 2, 32, 16);
    c.pe = pe;
    auto model = model::build_model(c, Device::cpu(), false, 5);
    // 66 sentences: two batches (of at most 64), side by side on the threads (nn/evaluate_batches.h).
    std::vector<std::string> sentences;
    for (int k = 0; k < 22; ++k)
      for (const char* sentence : {"the dog ran .", "the cat saw the dog .", "dog"}) sentences.push_back(sentence);
    for (nn::Ablation ablation : {nn::Ablation::none, nn::Ablation::contextual}) {
      INFO(pe << " " << nn::ablation_name(ablation));
      const std::vector<Matrix> batched = probe::layer_features(*model, tokenizer, sentences, ablation, 16);
      REQUIRE(batched.size() == 3);  // embeddings and two layers
      for (size_t s = 0; s < sentences.size(); ++s) {
        std::vector<int64_t> ids = {2};
        for (int32_t t : tokenizer.encode(sentences[s])) ids.push_back(t);
        ids.push_back(3);
        const int64_t L = static_cast<int64_t>(ids.size());
        nn::BertInputs in;
        in.input_ids = Tensor::from_vector(ids, Shape{1, L});
        nn::Context ctx = nn::Context::eval();
        ctx.ablate = ablation;
        nn::ForwardTrace trace;
        trace.keep_hidden_states = true;
        NoGradGuard no_grad;
        model->bert.forward(in, ctx, &trace);
        for (size_t l = 0; l < 3; ++l) {
          const std::vector<double> h = trace.hidden_states[l].contiguous().to_doubles();
          for (int64_t f = 0; f < 16; ++f) {
            double mean = 0;
            for (int64_t t = 0; t < L; ++t) mean += h[static_cast<size_t>(t * 16 + f)] / static_cast<double>(L);
            CHECK(batched[l](static_cast<int64_t>(s), f) == Approx(mean).margin(1e-5));
          }
        }
      }
    }
  }
}
