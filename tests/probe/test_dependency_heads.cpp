// Attention heads as dependency parsers (probe/dependency_heads.h; Clark et
// al. 2019 as the locality/symmetry paper's Table 8 uses it): the word-level
// map and the scoring worked by hand, and, on a trained ALiBi run, what the
// positional attention alone must give — softmax_j(-m |i - j|) peaks at the
// word itself, so the root's self-reflexive arc is always right and every
// other relation never. The run's vocabulary holds every word whole
// (vocab_min_frequency 1): Clark et al.'s sum over a split word's pieces
// would let a neighbour of many pieces outweigh the word itself.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "probe/dependency_heads.h"
#include "tests/helpers.h"

namespace probe = ordo::probe;
namespace json = ordo::json;

TEST_CASE("word-level attention: to a split word summed, from it averaged (Clark et al. 2019), by hand",
          "[probe][dependency]") {
  // Tokens 0 | 1 2 | 3: three units, the middle one a word of two pieces.
  const std::vector<double> tokens = {0.1, 0.2, 0.3, 0.4,    //
                                      0.4, 0.3, 0.2, 0.1,    //
                                      0.25, 0.25, 0.25, 0.25,  //
                                      0.0, 0.5, 0.0, 0.5};
  const ordo::Matrix w = probe::word_level_attention(tokens.data(), 4, {{0, 1}, {1, 3}, {3, 4}});
  const std::vector<double> expected = {0.1,   0.5, 0.4,    // row 0: 0.2 + 0.3 to the split word
                                        0.325, 0.5, 0.175,  // rows 1-2 averaged: (0.4 + 0.25) / 2, ...
                                        0.0,   0.5, 0.5};
  REQUIRE(w.rows == 3);
  REQUIRE(w.cols == 3);
  for (size_t k = 0; k < expected.size(); ++k) CHECK(w.data[k] == Approx(expected[k]).margin(1e-12));
  // Row 2 ties units 1 and 2: the first wins.
  CHECK(probe::row_argmax(w) == std::vector<int64_t>{1, 1, 1});
  CHECK_THROWS_WITH(probe::word_level_attention(tokens.data(), 4, {{0, 1}, {1, 5}}),
                    Catch::Contains("[1, 5) is not a non-empty range of the 4 tokens"));
}

TEST_CASE("dependency heads: per relation the best head and direction, the root self-reflexive, by hand",
          "[probe][dependency]") {
  probe::DependencyHeadScores s(1, 2);  // one layer, heads A and B
  // "the dog ran .": det, nsubj, root, punct.
  s.add({1, 2, -1, 2}, {"det", "nsubj", "root", "punct"}, {{{1, 2, 2, 0}, {-1, 0, 3, 2}}});
  // "dogs ran .": nsubj, root, punct.
  s.add({1, -1, 1}, {"nsubj", "root", "punct"}, {{{1, 0, 0}, {2, 2, 1}}});
  // Six words headed by the first: four "x" at distances 1..4 and one "far" at 5.
  s.add({-1, 0, 0, 0, 0, 0}, {"root", "x", "x", "x", "x", "far"}, {{{0, 0, 0, 0, 0, 0}, {5, 5, 5, 5, 5, 0}}});
  CHECK(s.sentences() == 3);
  const std::vector<probe::DependencyHeadScores::Relation> r = s.relations();
  REQUIRE(r.size() == 6);
  // By count, ties by name: x 4, root 3, nsubj 2, punct 2, det 1, far 1.
  const char* order[] = {"x", "root", "nsubj", "punct", "det", "far"};
  for (size_t i = 0; i < r.size(); ++i) CHECK(r[i].name == order[i]);
  // x: head A from the dependent, 4 of 4; mean length (1 + 2 + 3 + 4) / 4.
  CHECK(r[0].accuracy == 1.0);
  CHECK(r[0].distance == 2.5);
  // root: A's row of the root peaks at itself in sentences 1 and 3, not 2.
  CHECK(r[1].accuracy == Approx(2.0 / 3));
  CHECK(r[1].distance == 0);
  CHECK(r[1].head == 0);
  // nsubj: A from the dependent, 2 of 2 (A from the head gets 1).
  CHECK(r[2].accuracy == 1.0);
  CHECK(r[2].head == 0);
  CHECK(r[2].direction == "dependent→head");
  // punct: only B, both directions 2 of 2: the first direction is named.
  CHECK(r[3].accuracy == 1.0);
  CHECK(r[3].head == 1);
  CHECK(r[3].direction == "dependent→head");
  CHECK(r[3].distance == 1);
  // det: A from the dependent (1 of 1) ties B from the head: A is first.
  CHECK(r[4].head == 0);
  CHECK(r[5].distance == 5);
  const probe::DependencySummary sum = probe::summarize(r);
  CHECK(sum.short_relations == 5);
  CHECK(sum.long_relations == 1);
  CHECK(sum.short_mean == Approx((4 + 2.0 / 3) / 5));
  CHECK(sum.long_mean == 1.0);
  CHECK(sum.macro == Approx(17.0 / 18));

  // One head's relation seen from the head: B's row of "ran" peaks at "." in sentence 1.
  probe::DependencyHeadScores t(1, 1);
  t.add({1, -1, 1}, {"nsubj", "root", "punct"}, {{{-1, 2, -1}}});
  const auto tr = t.relations();
  CHECK(tr[1].name == "punct");
  CHECK(tr[1].accuracy == 1.0);
  CHECK(tr[1].direction == "head→dependent");
  CHECK(tr[0].accuracy == 0.0);  // nsubj: neither way

  CHECK_THROWS_WITH(s.add({1, -1}, {"det", "root"}, {{{1, 1}}}), Catch::Contains("predictions for 1 heads, expected 2"));
  CHECK_THROWS_WITH(s.add({1, -1}, {"det", "root"}, {{{1, 1, 0}, {1, 1, 0}}}),
                    Catch::Contains("3 predictions for 2 words"));
}

TEST_CASE("ordo analyze reads every head as a dependency parser: ALiBi's positional attention gets the root and "
          "nothing else", "[analysis][cli][dependency]") {
  ordo::test::TempDir dir("analyze-dependency");
  std::ofstream(dir / "alibi.json")
      << R"({"model": {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,)"
         R"( "max_position_embeddings": 40, "pe": "alibi"}, "data": {"synthetic_sentences": 300, "vocab_size": 3000,)"
         R"( "vocab_min_frequency": 1,)"
         R"( "held_out_fraction": 0.2}, "train": {"steps": 2, "batch_size": 2, "max_seq_length": 32, "eval_every": 0,)"
         R"( "device": "cpu"}})";
  auto r = ordo::test::run_ordo("pretrain --config " + (dir / "alibi.json") + " --out " + (dir / "run") + " --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  r = ordo::test::run_ordo("analyze --run " + (dir / "run") + " --out " + (dir / "a") + " --eval-sequences 2 --quiet");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json::Value j = json::parse(ordo::read_file(dir / "a/dependency_heads.json"));
  CHECK(j["sentences"].as_int() > 10);
  CHECK(j["not_defined"].items().empty());
  const json::Value& positional = j["attentions"]["positional"]["relations"];
  REQUIRE(positional.size() > 5);
  bool root = false;
  for (size_t i = 0; i < positional.size(); ++i) {
    INFO(json::dump(positional[i]));
    root = root || positional[i]["relation"].as_string() == "root";
    CHECK(positional[i]["accuracy"].as_number() == (positional[i]["relation"].as_string() == "root" ? 1.0 : 0.0));
    if (i > 0) CHECK(positional[i]["arcs"].as_int() <= positional[i - 1]["arcs"].as_int());
    // The three attentions score the same arcs.
    CHECK(j["attentions"]["both"]["relations"][i]["arcs"].as_int() == positional[i]["arcs"].as_int());
    CHECK(j["attentions"]["contextual"]["relations"][i]["relation"].as_string() == positional[i]["relation"].as_string());
  }
  CHECK(root);
  // The table: a header and a row per relation.
  const std::string csv = ordo::read_file(dir / "a/dependency_heads.csv");
  CHECK(csv.rfind("relation,arcs,distance,contextual,positional,both\n", 0) == 0);
  CHECK(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) == 1 + positional.size());
}
