// SQuAD windows and postprocessing on hand-worked cases: the doc-stride
// windows, max-context flags, answer char span -> token span per window (out of
// the window: [CLS]), skipped answers counted, the n-best search, answer text
// mapped back to the context's own characters, v2.0's null score and threshold,
// and the official files. Token positions are counted in the comments.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "text/tokenizer.h"
#include "downstream/squad_features.h"
#include "downstream/squad_predict.h"
#include "tests/downstream/squad_helpers.h"
#include "tests/helpers.h"

using namespace ordo;
using namespace ordo::downstream;
using ordo::test::one_paragraph;
using Catch::Matchers::Contains;

namespace {

text::Tokenizer small_tokenizer() {
  return text::Tokenizer(text::Vocab::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "dog", "chased", "who",
       "what", "did", "?", ",", "!", "frederic", "chopin", "pianist"}));
}

// "The cat sat on the mat. The dog chased the cat." Tokens (chars):
//  0 the [0,3)  1 cat [4,7)  2 sat [8,11)  3 on [12,14)  4 the [15,18)  5 mat [19,22)  6 . [22,23)
//  7 the [24,27)  8 dog [28,31)  9 chased [32,38)  10 the [39,42)  11 cat [43,46)  12 . [46,47)
const char* kCats = "The cat sat on the mat. The dog chased the cat.";

}  // namespace

TEST_CASE("SQuAD windows: doc stride, CLS question SEP window SEP, max context", "[downstream][squad]") {
  const text::Tokenizer tok = small_tokenizer();
  const SquadDataset d = one_paragraph(kCats, {{"q", "who sat?", {{"cat", 4}}, false, 0}});
  // Query who sat ? = 3 tokens; max_seq_length 10 leaves 10 - 3 - 3 = 4 per window;
  // stride 2: windows start at 0, 2, 4, 6, 8, 10 (the last: tokens 10..12, reaching the end).
  const std::vector<SquadFeature> f = make_squad_features(d, tok, {10, 2, 64}, false);
  REQUIRE(f.size() == 6);
  const std::vector<int> starts{0, 2, 4, 6, 8, 10}, lengths{4, 4, 4, 4, 4, 3};
  const auto& v = tok.vocab();
  for (size_t w = 0; w < f.size(); ++w) {
    CHECK(f[w].window == static_cast<int>(w));
    CHECK(f[w].context_start == starts[w]);
    CHECK(f[w].context_length() == lengths[w]);
    CHECK(f[w].context_offset == 5);  // [CLS] who sat ? [SEP]
  }
  CHECK(f[0].input_ids == std::vector<int32_t>{v.id("[CLS]"), v.id("who"), v.id("sat"), v.id("?"), v.id("[SEP]"),
                                               v.id("the"), v.id("cat"), v.id("sat"), v.id("on"), v.id("[SEP]")});
  CHECK(f[0].token_type_ids == std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  CHECK(f[5].input_ids.size() == 9);  // three context tokens in the last window
  CHECK((f[1].context_spans[3] == text::CharSpan{19, 22}));  // token 5 "mat"
  // Max context, score min(left, right) + 0.01 * length:
  //   token 3 in w0 (left 3, right 0: 0.04) and w1 (1, 2: 1.04) -> w1;
  //   token 5 in w1 (3, 0: 0.04) and w2 (1, 2: 1.04) -> w2;
  //   token 11 in w4 (3, 0: 0.04) and w5 (1, 1: 1.03) -> w5; token 12 only in w5.
  CHECK(f[0].max_context == std::vector<uint8_t>{1, 1, 1, 0});
  CHECK(f[1].max_context == std::vector<uint8_t>{0, 1, 1, 0});  // tokens 2 3 4 5: 2 in w0 (1.04 vs 0.04)
  CHECK(f[2].max_context == std::vector<uint8_t>{0, 1, 1, 0});  // 4 5 6 7
  CHECK(f[5].max_context == std::vector<uint8_t>{0, 1, 1});     // 10 11 12: 10 is w4's (left 2, right 1)
  for (const SquadFeature& x : f) CHECK((x.start_position == 0 && x.end_position == 0));  // not training
}

TEST_CASE("SQuAD windows with stride 1: a tie in max context goes to the first window", "[downstream][squad]") {
  const text::Tokenizer tok = small_tokenizer();
  const SquadDataset d = one_paragraph(kCats, {{"q", "who sat?", {}, true, 0}});
  const std::vector<SquadFeature> f = make_squad_features(d, tok, {10, 1, 64}, false);
  REQUIRE(f.size() == 10);  // starts 0..9, the last [9, 12]
  // Token 2: w0 (left 2, right 1: 1.04), w1 (1, 2: 1.04), w2 (0, 3: 0.04): w0 and w1 tie, w0 wins.
  CHECK(f[0].max_context[2] == 1);
  CHECK(f[1].max_context[1] == 0);
}

TEST_CASE("SQuAD windows over a 40,000-word context: each token flagged in exactly one window",
          "[downstream][squad]") {
  // 40,000 tokens in windows of 12 (max_seq_length 16 - 1 query token - 3)
  // every 4: about 10,000 windows. (Flagging each token's max-context window
  // by asking every window, as run_squad's loop does, is quadratic in the
  // context; the walk over each window's tokens is linear. The speed is a
  // benchmark's to measure; this checks the flags the walk sets.)
  std::string context;
  for (int i = 0; i < 8000; ++i) context += "the cat sat on mat ";
  const text::Tokenizer tok = small_tokenizer();
  const SquadDataset d = one_paragraph(context, {{"q", "who", {{"cat", 4}}, false, 0}});
  const std::vector<SquadFeature> f = make_squad_features(d, tok, {16, 4, 64}, true);
  REQUIRE(f.size() == 9998);  // starts 0, 4, ..., 39,988: the last window [39988, 40000) reaches the end
  CHECK(f.back().context_start == 39988);
  // Each token is flagged in exactly one window. Away from the text's ends a
  // token lies in three windows, at offsets k, k + 4 and k + 8 of them for
  // some k in 0..3; min(left, right) over offsets 0..11 is 0 1 2 3 4 5 5 4 3 2
  // 1 0, so the window holding it at offset 4..7 wins: those four offsets are
  // the ones a window flags.
  std::vector<int> flagged(40000, 0);
  for (const SquadFeature& x : f)
    for (int k = 0; k < x.context_length(); ++k) flagged[static_cast<size_t>(x.context_start + k)] += x.max_context[k];
  CHECK(std::count(flagged.begin(), flagged.end(), 1) == 40000);
  CHECK(f[5000].max_context == std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0});
  CHECK(f[0].start_position == 4);  // [CLS] who [SEP] the cat: "cat" (characters 4..7) is context token 1
}

TEST_CASE("SQuAD training targets: the answer's tokens in its windows, CLS elsewhere, bad answers skipped",
          "[downstream][squad]") {
  const text::Tokenizer tok = small_tokenizer();
  const SquadDataset d = one_paragraph(kCats, {
      {"a", "who sat?", {{"cat", 4}}, false, 0},                  // tokens 1..1
      {"b", "what did the dog chased?", {{"the cat", 39}}, false, 0},  // tokens 10..11
      {"c", "who sat?", {{"mat", 20}}, false, 0},                 // off by one, corrected to [19, 22): token 5
      {"d", "who sat?", {{"dog", 4}}, false, 0},                  // the words at 4 are "cat": skipped
      {"e", "who chased?", {}, true, 0},                          // unanswerable: [CLS] everywhere
  });
  SquadFeatureStats stats;
  const std::vector<SquadFeature> f = make_squad_features(d, tok, {10, 2, 4}, true, &stats);
  CHECK(stats.skipped == std::vector<std::string>{"d"});
  CHECK(stats.skipped_report() ==
        "skipped 1 training question whose answer text is not at its answer_start (run_squad's 'Could not find "
        "answer'): d");
  CHECK(stats.questions == 4);
  // a: query 3 tokens, windows of 4 from 0, 2, ..., 10; token 1 only in window 0, at 1 + 5.
  std::vector<const SquadFeature*> of_a, of_b, of_c, of_e;
  for (const auto& x : f) {
    const std::string& id = d.questions[static_cast<size_t>(x.question)].id;
    (id == "a" ? of_a : id == "b" ? of_b : id == "c" ? of_c : of_e).push_back(&x);
  }
  REQUIRE(of_a.size() == 6);
  CHECK((of_a[0]->start_position == 6 && of_a[0]->end_position == 6));
  for (size_t w = 1; w < of_a.size(); ++w) CHECK((of_a[w]->start_position == 0 && of_a[w]->end_position == 0));
  // b: the query is cut to 4 tokens (what did the dog), windows of 10 - 4 - 3 = 3 from 0, 2, .., 10;
  // tokens 10..11 wholly inside only the last window [10, 12], at 0 + 6 and 1 + 6.
  REQUIRE(of_b.size() == 6);
  CHECK(of_b[0]->context_offset == 6);
  CHECK((of_b[5]->start_position == 6 && of_b[5]->end_position == 7));
  CHECK((of_b[4]->start_position == 0 && of_b[4]->end_position == 0));  // [8, 10] holds 10 but not 11
  // c: token 5 in windows [2, 5] and [4, 7]: positions 3 + 5 and 1 + 5.
  REQUIRE(of_c.size() == 6);
  CHECK((of_c[1]->start_position == 8 && of_c[1]->end_position == 8));
  CHECK((of_c[2]->start_position == 6 && of_c[2]->end_position == 6));
  for (const SquadFeature* x : of_e) CHECK((x->start_position == 0 && x->end_position == 0));
  // Answers outside a window: a 5, b 5, c 4 (e is unanswerable, not counted).
  CHECK(stats.out_of_window == 14);
  CHECK(stats.features == static_cast<int>(f.size()));
}

TEST_CASE("SQuAD window options that leave no room are refused", "[downstream][squad][errors]") {
  const text::Tokenizer tok = small_tokenizer();
  // "what did the dog chased the cat?" is 8 tokens: 8 + 3 leaves nothing of 11, one token of 12.
  const SquadDataset d = one_paragraph(kCats, {{"q", "what did the dog chased the cat?", {}, true, 0}});
  CHECK_THROWS_WITH(make_squad_features(d, tok, {11, 128, 64}, false),
                    Contains("max_seq_length 11 leaves no room for the context of question 'q' after its 8 query "
                             "tokens"));
  CHECK(make_squad_features(d, tok, {12, 1, 64}, false).size() == 13);  // one context token per window
  CHECK(make_squad_features(d, tok, {11, 1, 7}, false).size() == 13);   // the query cut to 7
  CHECK_THROWS_WITH(make_squad_features(d, tok, {384, 0, 64}, false), Contains("doc_stride must be >= 1"));
}

TEST_CASE("SQuAD: a doc_stride beyond the window is refused, not cut to it", "[downstream][squad][errors]") {
  const text::Tokenizer tok = small_tokenizer();
  // The 8-token query leaves 16 - 8 - 3 = 5 context tokens a window; the context is 13 tokens.
  const SquadDataset d = one_paragraph(kCats, {{"q", "what did the dog chased the cat?", {}, true, 0}});
  CHECK_THROWS_WITH(make_squad_features(d, tok, {16, 6, 64}, false),
                    Contains("doc_stride 6 is larger than the window of question 'q'") &&
                        Contains("16 - 8 query tokens - 3 = 5 context tokens a window") &&
                        Contains("Give doc_stride <= 5"));
  // At the window's width the windows start at 0, 5, 10: three, none overlapping.
  CHECK(make_squad_features(d, tok, {16, 5, 64}, false).size() == 3);
  // A context that fits one window takes any stride.
  CHECK(make_squad_features(d, tok, {384, 1000, 64}, false).size() == 1);
}

namespace {

// "Frédéric Chopin, the pianist!" Tokens: frederic [0,8) chopin [9,15) , [15,16) the [17,20)
// pianist [21,28) ! [28,29). Input: 0 [CLS] 1 who 2 ? 3 [SEP] 4 frederic 5 chopin 6 , 7 the
// 8 pianist 9 ! 10 [SEP].
struct Chopin {
  text::Tokenizer tok = small_tokenizer();
  SquadDataset d = one_paragraph("Frédéric Chopin, the pianist!", {{"q", "who?", {}, false, 0}});
  std::vector<SquadFeature> f = make_squad_features(d, tok, {384, 128, 64}, false);
  std::vector<std::vector<float>> start{std::vector<float>(11, 0.0f)}, end{std::vector<float>(11, 0.0f)};
  Chopin() {
    start[0][4] = 3.0f;  // frederic
    start[0][7] = 2.0f;  // the
    start[0][0] = 1.0f;  // [CLS]
    end[0][5] = 2.5f;    // chopin
    end[0][8] = 2.0f;    // pianist
    end[0][0] = 0.5f;    // [CLS]
  }
};

}  // namespace

TEST_CASE("SQuAD n-best: best spans by summed logits, text from the context's own characters",
          "[downstream][squad]") {
  Chopin c;
  REQUIRE(c.f.size() == 1);
  REQUIRE(c.f[0].input_ids.size() == 11);
  // Spans (start, end) inside the context, end >= start: (4,5) 5.5 > (4,8) 5.0 > (7,8) 4.0 > ...
  SquadPostOptions o;
  o.n_best_size = 3;
  const std::vector<SquadPrediction> p = predict_squad(c.d, c.f, c.start, c.end, o);
  REQUIRE(p.size() == 1);
  CHECK(p[0].id == "q");
  CHECK(p[0].text == "Frédéric Chopin");  // accents and case as in the context, not "frederic chopin"
  REQUIRE(p[0].nbest.size() == 3);
  CHECK(p[0].nbest[1].text == "Frédéric Chopin, the pianist");
  CHECK(p[0].nbest[2].text == "the pianist");
  // Probabilities: softmax of 5.5, 5.0, 4.0 = 1, e^-0.5, e^-1.5 over their sum.
  const double sum = 1 + std::exp(-0.5) + std::exp(-1.5);
  CHECK(p[0].nbest[0].probability == Approx(1 / sum).epsilon(1e-12));
  CHECK(p[0].nbest[2].probability == Approx(std::exp(-1.5) / sum).epsilon(1e-12));
  CHECK(p[0].nbest[0].start_logit == 3.0);
  // max_answer_length 1 with the 3 best starts (4 7 0) and ends (5 8 0): no one-token pair is
  // left, and v1.1 answers run_squad's nonce "empty".
  o.max_answer_length = 1;
  CHECK(predict_squad(c.d, c.f, c.start, c.end, o)[0].text == "empty");
  // With every index searched: (4,4) 3.0, (5,5) 2.5, then (7,7) and (8,8) at 2.0 in the order
  // they were found (start 7 before start 8 among the sorted starts).
  o.n_best_size = 20;
  const std::vector<SquadPrediction> one = predict_squad(c.d, c.f, c.start, c.end, o);
  REQUIRE(one[0].nbest.size() >= 3);
  CHECK(one[0].nbest[0].text == "Frédéric");
  CHECK(one[0].nbest[1].text == "Chopin");
  CHECK(one[0].nbest[2].text == "the");
}

TEST_CASE("SQuAD v2.0: the null score against the best span, and the threshold", "[downstream][squad]") {
  Chopin c;
  SquadPostOptions o;
  o.version_2 = true;
  // Null score start[0] + end[0] = 1.5; best non-null 5.5: score_diff = 1.5 - 3 - 2.5 = -4 <= 0.
  std::vector<SquadPrediction> p = predict_squad(c.d, c.f, c.start, c.end, o);
  CHECK(p[0].text == "Frédéric Chopin");
  CHECK(p[0].score_diff == Approx(-4.0));
  bool has_null = false;
  for (const auto& x : p[0].nbest) has_null = has_null || x.text.empty();
  CHECK(has_null);  // the null answer is in the n-best (at 1.5)
  o.null_score_diff_threshold = -5.0;  // -4 > -5: answered "no answer"
  CHECK(predict_squad(c.d, c.f, c.start, c.end, o)[0].text.empty());
  // A strong [CLS]: null score 10.5 - 5.5 = 5 > 0: "", the null first in the n-best.
  o.null_score_diff_threshold = 0;
  c.start[0][0] = 10.0f;
  p = predict_squad(c.d, c.f, c.start, c.end, o);
  CHECK(p[0].text.empty());
  CHECK(p[0].score_diff == Approx(5.0));
  CHECK(p[0].nbest[0].text.empty());
  CHECK(p[0].nbest[1].text == "Frédéric Chopin");
  // v1.1 never answers "": the null pair is not a candidate there.
  o.version_2 = false;
  CHECK(predict_squad(c.d, c.f, c.start, c.end, o)[0].text == "Frédéric Chopin");
}

TEST_CASE("SQuAD n-best across windows: max context only, one entry per text", "[downstream][squad]") {
  const text::Tokenizer tok = small_tokenizer();
  const SquadDataset d = one_paragraph(kCats, {{"q", "who sat?", {}, false, 0}});
  const std::vector<SquadFeature> f = make_squad_features(d, tok, {10, 2, 64}, false);
  REQUIRE(f.size() == 6);
  std::vector<std::vector<float>> start(6, std::vector<float>(10, 0.0f)), end = start;
  // Window 2 (tokens 4..7, offset 5): token 4 "the" is not its max-context window -> filtered
  // however high; token 7 "The" (w3's, filtered here too) likewise.
  start[2][5] = 9.0f;
  end[2][5] = 9.0f;
  // Window 0: token 0 "The" (max context w0) at position 5: score 2 + 2.
  start[0][5] = 2.0f;
  end[0][5] = 2.0f;
  // Window 3 (tokens 6..9): token 7 "The" at position 6, its max-context window: score 1.5 + 1.5.
  start[3][6] = 1.5f;
  end[3][6] = 1.5f;
  SquadPostOptions o;
  o.n_best_size = 5;
  const std::vector<SquadPrediction> p = predict_squad(d, f, start, end, o);
  CHECK(p[0].text == "The");  // token 0's, window 0
  int the = 0;
  for (const auto& x : p[0].nbest) the += x.text == "The";
  CHECK(the == 1);  // token 7's "The" is the same text: kept once
  for (const auto& x : p[0].nbest) CHECK(x.start_logit < 9.0);
}

TEST_CASE("SQuAD prediction files in the official format", "[downstream][squad]") {
  Chopin c;
  SquadPostOptions o;
  o.version_2 = true;
  const std::vector<SquadPrediction> p = predict_squad(c.d, c.f, c.start, c.end, o);
  test::TempDir dir("squad-files");
  write_squad_predictions(dir / "predictions.json", p);
  write_squad_null_odds(dir / "null_odds.json", p);
  write_squad_nbest(dir / "nbest_predictions.json", p);
  const json::Value preds = json::parse(read_file(dir / "predictions.json"));
  CHECK(preds.size() == 1);
  CHECK(preds["q"].as_string() == "Frédéric Chopin");
  CHECK(json::parse(read_file(dir / "null_odds.json"))["q"].as_number() == Approx(-4.0));
  const json::Value nbest = json::parse(read_file(dir / "nbest_predictions.json"));
  CHECK(nbest["q"][0]["text"].as_string() == "Frédéric Chopin");
  CHECK(nbest["q"][0].contains("probability"));
  CHECK_THROWS_WITH(predict_squad(c.d, c.f, {}, {}, o), Contains("1 features but 0 start and 0 end logit rows"));
}
