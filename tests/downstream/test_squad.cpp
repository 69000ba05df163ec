// SQuAD files and the official evaluation on hand-worked cases: the reader
// (several gold answers, unanswerable questions), run_squad's answer check,
// the answer normalisation and the v1.1 / v2.0 scores with their arithmetic
// in the comments, and bad input.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "downstream/squad.h"
#include "downstream/squad_eval.h"
#include "tests/downstream/squad_helpers.h"
#include "tests/helpers.h"

using namespace ordo;
using namespace ordo::downstream;
using ordo::test::one_paragraph;
using Catch::Matchers::Contains;

namespace {

const std::string kSquadData = std::string(ORDO_SOURCE_DIR) + "/tests/data/downstream/squad/";

}  // namespace

TEST_CASE("SQuAD reader: several gold answers, unanswerable questions, code-point offsets", "[downstream][squad]") {
  const SquadDataset v1 = read_squad(kSquadData + "dev-v1.1.json");
  CHECK(v1.version == "1.1");
  REQUIRE(v1.paragraphs.size() == 2);
  REQUIRE(v1.questions.size() == 8);
  const SquadQuestion& c1 = v1.questions[0];
  CHECK(c1.id == "c1");
  CHECK(c1.question == "What was Frédéric's nationality?");
  REQUIRE(c1.answers.size() == 3);
  CHECK(c1.answers[1].text == "a Polish composer");
  // "Frédéric François Chopin (1 March 1810 – 17 October 1849) was a Polish": counted in
  // code points, "Polish" starts at 64 (the two é, the ç and the – are one each; in bytes,
  // with é and ç two and – three, it would be 69).
  CHECK(c1.answers[0].start == 64);
  CHECK(v1.paragraphs[0].code_points.substr(64, 6) == U"Polish");
  CHECK(v1.paragraphs[0].title == "Frédéric_Chopin");
  CHECK_FALSE(c1.is_impossible);
  CHECK(v1.questions[4].paragraph == 1);

  const SquadDataset v2 = read_squad(kSquadData + "dev-v2.0.json");
  CHECK(v2.version == "v2.0");
  REQUIRE(v2.questions.size() == 7);
  CHECK(v2.questions[2].id == "n3");
  CHECK(v2.questions[2].is_impossible);
  CHECK(v2.questions[2].answers.empty());  // plausible_answers are not gold
  CHECK_FALSE(v2.questions[0].is_impossible);
}

TEST_CASE("run_squad's answer check: exact, corrected inside its words, or skipped", "[downstream][squad]") {
  // T0 h1 e2 _3 c4 a5 t6 _7 s8 a9 t10 _11 o12 n13 _14 t15 h16 e17 _18 m19 a20 t21 .22
  SquadParagraph p;
  p.code_points = U"The cat sat on the mat.";
  int64_t b = -1, e = -1;
  CHECK(squad_answer_span(p, {"cat", 4}, b, e));
  CHECK((b == 4 && e == 7));
  // Off by one but inside the word "mat.": the check passes and the span is where "mat" is.
  CHECK(squad_answer_span(p, {"mat", 20}, b, e));
  CHECK((b == 19 && e == 22));
  // Whitespace inside the answer is collapsed before the comparison.
  CHECK(squad_answer_span(p, {"sat  on", 8}, b, e));  // context[8, 15) = "sat on " != text: the words hold "sat on"
  CHECK((b == 8 && e == 14));
  b = e = -1;
  CHECK_FALSE(squad_answer_span(p, {"dog", 4}, b, e));  // the words at 4..6 are "cat"
  CHECK_FALSE(squad_answer_span(p, {"mat.", 21}, b, e));  // runs past the context
  CHECK_FALSE(squad_answer_span(p, {"", 4}, b, e));
  CHECK((b == -1 && e == -1));
}

TEST_CASE("SQuAD normalisation: case, punctuation, articles as whole words, whitespace", "[downstream][squad]") {
  CHECK(normalize_answer("The  Cat!") == "cat");
  CHECK(normalize_answer("cat") == "cat");
  CHECK(normalize_answer("  A\tan\nTHE  ") == "");
  CHECK(normalize_answer("theatre and anthem") == "theatre and anthem");  // not whole words
  CHECK(normalize_answer("the_cat") == "thecat");  // '_' is punctuation, removed first
  CHECK(normalize_answer("l'été") == "lété");      // accents stay; the apostrophe goes
  CHECK(normalize_answer("\u00BFQu\u00E9?") == "\u00BFqu\u00E9");  // ¿ is not in string.punctuation
  CHECK(normalize_answer("the\u2014the") == "\u2014");  // an em dash is neither punctuation nor a word
  CHECK(squad_exact("The  Cat!", "cat"));
  CHECK_FALSE(squad_exact("Frederic", "Frédéric"));
}

TEST_CASE("SQuAD token F1: Counter overlap, v1.1 and v2.0 on empty answers", "[downstream][squad]") {
  // "cat cat dog" vs "cat dog dog": common = min(2,1) cat + min(1,2) dog = 2; P = R = 2/3 -> F1 2/3.
  CHECK(squad_f1_v1("cat cat dog", "cat dog dog") == Approx(2.0 / 3).epsilon(1e-15));
  // "Romantic era of music" vs "the Romantic era": tokens romantic era of music / romantic era:
  // common 2, P = 2/4, R = 2/2 -> F1 = 2 * .5 * 1 / 1.5 = 2/3.
  CHECK(squad_f1_v1("Romantic era of music", "the Romantic era") == Approx(2.0 / 3).epsilon(1e-15));
  // Both empty after normalisation: v1.1 has common 0 -> 0; v2.0 says they agree -> 1.
  CHECK(squad_f1_v1("", "") == 0.0);
  CHECK(squad_f1_v2("", "") == 1.0);
  CHECK(squad_f1_v2("the", "") == 1.0);  // "the" normalises to nothing
  CHECK(squad_f1_v2("cat", "") == 0.0);
  CHECK(squad_f1_v2("", "cat") == 0.0);
}

TEST_CASE("SQuAD v1.1 score by hand: max over gold answers, percent of all questions", "[downstream][squad]") {
  SquadQuestion q1{"q1", "?", {{"the cat", 0}, {"a black cat", 0}}, false, 0};
  SquadQuestion q2{"q2", "?", {{"on the mat", 0}}, false, 0};
  const SquadDataset d = one_paragraph("the black cat sat on the mat", {q1, q2});
  // q1 "black cat": exact vs "black cat" (second gold) = 1, F1 1.
  // q2 "mat": exact 0; F1 vs "on mat": P 1/1, R 1/2 -> 2/3. EM = 50, F1 = (1 + 2/3) / 2 = 83.33..
  const json::Value r = evaluate_squad_v1(d, {{"q1", "black cat"}, {"q2", "mat"}});
  CHECK(r["exact_match"].as_number() == Approx(50.0));
  CHECK(r["f1"].as_number() == Approx(100.0 * (1 + 2.0 / 3) / 2).epsilon(1e-15));
  CHECK(r.size() == 2);
}

TEST_CASE("SQuAD v2.0 score by hand: HasAns/NoAns, the threshold, best thresholds", "[downstream][squad]") {
  SquadQuestion a{"a", "?", {{"cat", 0}}, false, 0};
  SquadQuestion b{"b", "?", {}, true, 0};
  SquadQuestion c{"c", "?", {{"the", 0}}, false, 0};  // normalises to nothing: scored against ""
  const SquadDataset d = one_paragraph("the cat", {a, b, c});
  const SquadPredictionMap preds{{"a", "cat"}, {"b", "cat"}, {"c", ""}};
  // exact: a 1, b 0 ("cat" vs ""), c 1 ("" vs [""]) -> 200/3; c has an answer (HasAns 2 of 2).
  const json::Value r = evaluate_squad_v2(d, preds);
  CHECK(r["exact"].as_number() == Approx(200.0 / 3));
  CHECK(r["total"].as_int() == 3);
  CHECK(r["HasAns_exact"].as_number() == Approx(100.0));
  CHECK(r["HasAns_total"].as_int() == 2);
  CHECK(r["NoAns_exact"].as_number() == Approx(0.0));
  CHECK(r["NoAns_total"].as_int() == 1);
  CHECK_FALSE(r.contains("best_exact"));
  // With probabilities b 0.9, a 0.2, c 0.5 (sorted a, c, b): start at 1 (one NoAns question);
  // a +1 -> 2 (best, 0.2); c +1 -> 3 (best, 0.5); b: its prediction is not "" -> -1 -> 2.
  // best_exact = 300/3 = 100 at 0.5.
  const SquadNaProbs probs{{"b", 0.9}, {"a", 0.2}, {"c", 0.5}};
  const json::Value t = evaluate_squad_v2(d, preds, &probs);
  CHECK(t["best_exact"].as_number() == Approx(100.0));
  CHECK(t["best_exact_thresh"].as_number() == 0.5);
  CHECK(t["exact"].as_number() == Approx(200.0 / 3));  // the default threshold 1.0 changes nothing
  // Threshold 0.8: b (0.9) counts as answered "no answer" -> 1: exact 100.
  CHECK(evaluate_squad_v2(d, preds, &probs, 0.8)["exact"].as_number() == Approx(100.0));
  // Threshold 0.1: a (0.2) and c (0.5) are taken as "no answer" though both have one -> 0 each.
  CHECK(evaluate_squad_v2(d, preds, &probs, 0.1)["HasAns_exact"].as_number() == 0.0);
  CHECK(evaluate_squad_v2(d, preds, &probs, 0.3)["HasAns_exact"].as_number() == Approx(50.0));  // c only
  const std::vector<std::string> order = {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                                          "NoAns_exact", "NoAns_f1", "NoAns_total", "best_exact",
                                          "best_exact_thresh", "best_f1", "best_f1_thresh"};
  REQUIRE(t.items().size() == order.size());
  for (size_t i = 0; i < order.size(); ++i) CHECK(t.items()[i].first == order[i]);
}

TEST_CASE("SQuAD bad input: missing and unknown ids, v1.1 without answers, malformed files",
          "[downstream][squad][errors]") {
  SquadQuestion a{"a", "?", {{"cat", 0}}, false, 0};
  SquadQuestion b{"b", "?", {}, true, 0};
  const SquadDataset d = one_paragraph("the cat", {a, b});
  CHECK_THROWS_WITH(evaluate_squad_v2(d, {{"a", "cat"}}), Contains("the predictions lack 1 of the 2 questions of inline: 'b'"));
  CHECK_THROWS_WITH(evaluate_squad_v2(d, {{"a", "cat"}, {"b", ""}, {"zz", ""}}),
                    Contains("the predictions hold 1 id that inline does not have: 'zz'"));
  const SquadNaProbs probs{{"a", 0.1}};
  CHECK_THROWS_WITH(evaluate_squad_v2(d, {{"a", "cat"}, {"b", ""}}, &probs),
                    Contains("the no-answer probabilities lack 1 of the 2 questions"));
  CHECK_THROWS_WITH(evaluate_squad_v1(d, {{"a", "cat"}, {"b", ""}}),
                    Contains("question 'b' has no gold answer; SQuAD v1.1 scores answerable questions only"));

  test::TempDir dir("squad-bad");
  CHECK_THROWS_WITH(read_squad(dir.write("a.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"x\"}]}]}")),
                    Contains("a.json: data[0].paragraphs[0]: 'qas' is missing"));
  CHECK_THROWS_WITH(
      read_squad(dir.write("b.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": [{\"id\": \"q\", "
                                     "\"question\": \"?\", \"answers\": [{\"text\": \"x\", \"answer_start\": 0.5}]}]}]}]}")),
      Contains("b.json: data[0].paragraphs[0].qas[0] (id 'q').answers[0]: answer_start 0.5 is not a whole number"));
  CHECK_THROWS_WITH(
      read_squad(dir.write("c.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": ["
                                     "{\"id\": \"q\", \"question\": \"?\", \"answers\": []},"
                                     "{\"id\": \"q\", \"question\": \"?\", \"answers\": []}]}]}]}")),
      Contains("qas[1] (id 'q'): the id is also that of"));
  CHECK_THROWS_WITH(read_squad(dir.write("d.json", "[1, 2]")), Contains("a SQuAD file is a JSON object"));
  CHECK_THROWS_WITH(read_squad_predictions(dir.write("p.json", "{\"a\": 3}")),
                    Contains("the prediction for 'a' is number, expected a string"));
  CHECK_THROWS_WITH(read_squad_na_probs(dir.write("n.json", "{\"a\": \"0.5\"}")),
                    Contains("the no-answer probability of 'a' is string, expected a number"));
  CHECK_THROWS_WITH(read_squad(dir.write("e.json", "{\"data\": [")), Contains("json: line 1"));
}
