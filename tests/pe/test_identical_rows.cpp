// Terms of the positions alone (t5_bias, rel_scalar, abs_scalar, alibi,
// attenuated, TUPE's positional term, the distance gates of Huang et al.'s
// methods 1 and 2) are computed once for a batch whose
// rows of positions are all the same (pe/common.h, distinct_position_rows):
// [1, ...] broadcast over the batch, the tables' gradients summed over the
// batch first. Checked against the same term made row by row (the forward's
// facts saying the rows differ): the same values, and the same gradients up
// to the order of the sums.
#include "autograd/ops.h"
#include "nn/bert.h"
#include "tensor/kernel_calls.h"
#include "tests/pe/score_term_helpers.h"

using namespace ordo;
using namespace ordo::pe_test;

namespace {

// Positions first, first + 1, ..., first + L - 1 in each of B rows.
std::vector<int64_t> counting_rows(int64_t B, int64_t L, int64_t first) {
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) rows.push_back(first + i);
  return rows;
}

// Table rows read by the recorded calls' lookups (index_select, embedding_sum).
int64_t rows_looked_up(const KernelCallRecording& recording) {
  int64_t rows = 0;
  for (const KernelCall& call : recording.calls()) {
    const std::string kernel = call.kernel;
    if (kernel == "index_select") rows += shape_numel(call.shapes.back());
    // embedding_sum: out, the tables, their ids; embedding_layernorm: y, s,
    // mean, rstd, the tables, their ids, gamma, beta, y16 (kernels.inc).
    const size_t before = kernel == "embedding_sum" ? 1 : kernel == "embedding_layernorm" ? 4 : 0;
    if (before == 0) continue;
    const size_t tables = (call.shapes.size() - before - (before == 4 ? 3 : 0)) / 2;
    for (size_t t = 0; t < tables; ++t) rows += shape_numel(call.shapes[before + tables + t]);
  }
  return rows;
}

// Every parameter's gradient, zeros where none flowed.
std::vector<Tensor> gradients(nn::Module& module) {
  std::vector<Tensor> grads;
  for (auto& [name, p] : module.named_parameters())
    grads.push_back(p->var.grad().defined() ? p->var.grad() : Tensor::zeros(p->var.shape(), DType::f64));
  return grads;
}

// The same up to the order of the sums (f64).
void require_same_gradients(const std::vector<Tensor>& once, const std::vector<Tensor>& each) {
  REQUIRE(once.size() == each.size());
  for (size_t n = 0; n < once.size(); ++n) ordo::test::require_close(once[n], each[n], 1e-12, 1e-14);
}

// The term (expanded to [B, H, L, L]) and the gradient of sum(w * term) for
// every parameter, with the facts saying the rows are identical or not. With
// q and k: the variant's own contextual term (q_i . k_j gated by distance).
struct Made {
  Tensor term;  // or a whole forward's hidden states
  std::vector<Tensor> grads;
  int64_t looked_up = 0;  // table rows the forward's lookups (index_select) read
};

Made make_term(nn::PositionEncoding& pe, const nn::BertConfig& c, const Tensor& positions, bool identical,
               const Tensor& w, const Tensor& q = Tensor(), const Tensor& k = Tensor()) {
  nn::Context ctx = nn::Context::eval();
  nn::InputFacts facts = nn::input_facts(positions.to_vector<int64_t>().data(), nullptr, positions.size(0),
                                         positions.size(1));
  REQUIRE(facts.rows_identical);  // the batch is identical: the flag below decides
  facts.rows_identical = identical;
  ctx.facts = facts;
  const nn::AttentionState s = state(c, 1, positions, nullptr, ctx);
  const int64_t B = positions.size(0), L = positions.size(1), H = c.num_attention_heads;
  const Var zero(Tensor::zeros({B, H, L, c.head_dim()}, DType::f64));
  for (auto& [name, p] : pe.named_parameters()) p->var.zero_grad();
  KernelCallRecording recording;
  Var term = q.defined() ? pe.contextual_scores(s, Var(q), Var(k)) : pe.score_bias(s, zero, zero);
  REQUIRE(term.defined());
  const int64_t looked_up = rows_looked_up(recording);
  if (!q.defined()) CHECK(term.size(0) == (identical ? 1 : B));
  term = expand(term, {B, H, L, L});
  if (term.requires_grad()) sum(mul(term, Var(w))).backward();  // a fixed term has no parameters
  return Made{term.value().contiguous(), gradients(pe), looked_up};
}

}  // namespace

TEST_CASE("a term of the positions alone is made once for a batch of identical rows, as row by row", "[pe]") {
  const int64_t B = 3, L = 6;
  const Tensor positions = Tensor::from_vector(counting_rows(B, L, 2), {B, L});  // every row 2, 3, ..., 7
  for (const char* text : {R"({"pe": "t5_bias", "o": {"num_buckets": 8, "max_distance": 6}})",
                           R"({"pe": "rel_scalar", "o": {}})", R"({"pe": "abs_scalar", "o": {"rank": 3}})",
                           R"({"pe": "alibi", "o": {"learned": true}})", R"({"pe": "attenuated", "o": {}})",
                           R"({"pe": "attenuated", "o": {"learned": true, "learn": "kernel"}})",
                           R"({"pe": "attenuated", "o": {"learned": true, "learn": "matrix"}})", R"({"pe": "tupe", "o": {}})"}) {
    INFO(text);
    const json::Value v = json::parse(text);
    const nn::BertConfig c = tiny_config(v["pe"].as_string(), v["o"]);
    std::unique_ptr<nn::PositionEncoding> pe = make(c);
    randomize(*pe, 31);
    const Tensor w = ordo::test::random_tensor({B, c.num_attention_heads, L, L}, 37);
    const Made once = make_term(*pe, c, positions, true, w), each = make_term(*pe, c, positions, false, w);
    CHECK(ordo::test::bit_identical(once.term, each.term));
    require_same_gradients(once.grads, each.grads);
  }
}

TEST_CASE("Huang et al.'s distance gates (methods 1, 2) are made once for a batch of identical rows, as row by row",
          "[pe]") {
  const int64_t B = 3, L = 6;
  const Tensor positions = Tensor::from_vector(counting_rows(B, L, 2), {B, L});
  for (const char* name : {"huang_m1", "huang_m2"}) {
    INFO(name);
    const nn::BertConfig c = tiny_config(name);
    std::unique_ptr<nn::PositionEncoding> pe = make(c);
    randomize(*pe, 41);
    const int64_t H = c.num_attention_heads, d = c.head_dim();
    const Tensor w = ordo::test::random_tensor({B, H, L, L}, 43);
    const Tensor q = ordo::test::random_tensor({B, H, L, d}, 44), k = ordo::test::random_tensor({B, H, L, d}, 45);
    const Made once = make_term(*pe, c, positions, true, w, q, k), each = make_term(*pe, c, positions, false, w, q, k);
    CHECK(once.looked_up == L * L);  // one row's pairs, broadcast over the batch
    CHECK(each.looked_up == B * L * L);
    CHECK(ordo::test::bit_identical(once.term, each.term));
    require_same_gradients(once.grads, each.grads);
  }
}

TEST_CASE("an encoding at the input takes its position vectors once for a batch of identical rows, as row by row",
          "[pe]") {
  const int64_t B = 3, L = 5;
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{1, 4, 7, 2, 9, 3, 3, 11, 5, 0, 12, 6, 8, 10, 2}, {B, L});
  in.segment_ids = Tensor::from_vector(std::vector<int64_t>{0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1}, {B, L});
  const std::vector<int64_t> rows = counting_rows(B, L, 0);
  const std::vector<int64_t> segments = in.segment_ids.to_vector<int64_t>();
  for (const char* name : {"ape_learned", "ape_sin", "ape_sin_learnable"}) {
    INFO(name);
    const nn::BertConfig c = tiny_config(name);
    nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/false);
    nn::initialize(model, 51);
    model.to_dtype(DType::f64);
    const Tensor w = ordo::test::random_tensor({B, L, c.hidden_size}, 53);
    auto run = [&](bool identical) {  // the hidden states as Made's term
      nn::BertInputs given = in;
      given.facts = nn::input_facts(rows.data(), segments.data(), B, L);
      REQUIRE(given.facts->rows_identical);  // the batch is identical: the flag below decides
      given.facts->rows_identical = identical;
      for (auto& [n, p] : model.named_parameters()) p->var.zero_grad();
      nn::Context ctx = nn::Context::eval();
      KernelCallRecording recording;
      Var hidden = model.forward(given, ctx);
      const int64_t looked_up = rows_looked_up(recording);
      sum(mul(hidden, Var(w))).backward();
      return Made{hidden.value().contiguous(), gradients(model), looked_up};
    };
    const Made once = run(true), each = run(false);
    CHECK(ordo::test::bit_identical(once.term, each.term));
    // The words and segments are looked up for every token either way; a
    // learned position table for one row instead of B.
    CHECK(each.looked_up - once.looked_up == (std::string(name) == "ape_learned" ? (B - 1) * L : 0));
    require_same_gradients(once.grads, each.grads);
  }
}

TEST_CASE("the contextual ablation without a segment embedding keeps the batch's shape with position vectors once",
          "[pe]") {
  // Only the positions reach the input (the tokens dropped, no segment
  // table): the once-made [1, L, D] is spread over the batch.
  nn::BertConfig c = tiny_config("ape_learned");
  c.type_vocab_size = 0;
  nn::BertModel model(c, pe::make_position_encoding(c, Device::cpu()), Device::cpu(), /*with_pooler=*/false);
  nn::initialize(model, 57);
  nn::BertInputs in;
  in.input_ids = Tensor::from_vector(std::vector<int64_t>{1, 4, 7, 2, 9, 3}, {2, 3});
  nn::Context ctx = nn::Context::eval();
  ctx.ablate = nn::Ablation::contextual;
  const Tensor hidden = model.forward(in, ctx).value();
  REQUIRE(hidden.shape() == Shape{2, 3, c.hidden_size});
  // Both rows hold the same positions and no tokens: the same hidden states.
  CHECK(ordo::test::bit_identical(hidden.slice(0, 0, 1).contiguous(), hidden.slice(0, 1, 2).contiguous()));
}
