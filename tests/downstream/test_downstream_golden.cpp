// ordo's metrics against tests/data/downstream/golden.json, written by
// tests/twin/downstream_twin.py: scikit-learn and SciPy (GLUE, as HuggingFace's
// glue_compute_metrics calls them) and a transcription of the official SQuAD
// evaluation scripts, on the hand-written files of tests/data/downstream/.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "base/file_io.h"
#include "base/json.h"
#include "downstream/metrics.h"
#include "downstream/score.h"
#include "downstream/squad_eval.h"

using namespace ordo;
using namespace ordo::downstream;

namespace {

const std::string kDir = std::string(ORDO_SOURCE_DIR) + "/tests/data/downstream/";

const json::Value& golden() {
  static const json::Value g = json::parse(read_file(kDir + "golden.json"));
  return g;
}

// The same keys in the same order, numbers within 1e-12 relative (the twin's
// summation order and numpy's reductions differ from ordo's in the last bits),
// counts exactly, null for null.
void check_metrics(const json::Value& got, const json::Value& want) {
  REQUIRE(got.is_object());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.items().size(); ++i) {
    const auto& [key, value] = want.items()[i];
    INFO("key " << key);
    CHECK(got.items()[i].first == key);
    const json::Value& g = got.items()[i].second;
    if (value.is_null()) {
      CHECK(g.is_null());
    } else {
      REQUIRE(g.is_number());
      CHECK(g.as_number() == Approx(value.as_number()).epsilon(1e-12).margin(1e-15));
    }
  }
}

std::vector<double> doubles(const json::Value& a) {
  std::vector<double> out;
  for (const auto& v : a.as_array()) out.push_back(v.as_number());
  return out;
}
std::vector<int> ints(const json::Value& a) {
  std::vector<int> out;
  for (const auto& v : a.as_array()) out.push_back(static_cast<int>(v.as_int()));
  return out;
}

}  // namespace

TEST_CASE("GLUE metrics match scikit-learn and SciPy on every task's files", "[downstream][golden]") {
  const auto& cases = golden()["glue"].as_array();
  REQUIRE(cases.size() == 10);
  for (const auto& c : cases) {
    INFO(c["task"].as_string() << " " << c["data"].as_string());
    ScoreRequest r;
    r.task = c["task"].as_string();
    r.data = kDir + c["data"].as_string();
    r.predictions = kDir + c["predictions"].as_string();
    check_metrics(score(r), c["metrics"]);
  }
}

TEST_CASE("SQuAD v1.1 and v2.0 scores match the official evaluation logic", "[downstream][golden]") {
  const auto& cases = golden()["squad"].as_array();
  REQUIRE(cases.size() == 5);
  for (const auto& c : cases) {
    INFO(c["task"].as_string() << " " << c["predictions"].as_string()
                               << (c.contains("na_probs") ? " " + c["na_probs"].as_string() : ""));
    ScoreRequest r;
    r.task = c["task"].as_string();
    r.data = kDir + c["data"].as_string();
    r.predictions = kDir + c["predictions"].as_string();
    if (c.contains("na_probs")) r.na_probs = kDir + c["na_probs"].as_string();
    if (c.contains("na_prob_thresh")) r.na_prob_thresh = c["na_prob_thresh"].as_number();
    check_metrics(score(r), c["metrics"]);
  }
}

TEST_CASE("SQuAD answer normalisation and token F1 match the official functions", "[downstream][golden]") {
  for (const auto& c : golden()["normalize"].as_array()) {
    INFO("text '" << c["text"].as_string() << "'");
    CHECK(normalize_answer(c["text"].as_string()) == c["normalized"].as_string());
  }
  for (const auto& c : golden()["f1"].as_array()) {
    const std::string& p = c["prediction"].as_string();
    const std::string& g = c["gold"].as_string();
    INFO("prediction '" << p << "' gold '" << g << "'");
    CHECK(squad_exact(p, g) == (c["exact"].as_int() == 1));
    CHECK(squad_f1_v1(p, g) == Approx(c["f1_v1"].as_number()).epsilon(1e-15));
    CHECK(squad_f1_v2(p, g) == Approx(c["f1_v2"].as_number()).epsilon(1e-15));
  }
}

TEST_CASE("ranks, classification and correlation cases match SciPy and scikit-learn", "[downstream][golden]") {
  for (const auto& c : golden()["ranks"].as_array()) CHECK(average_ranks(doubles(c["x"])) == doubles(c["ranks"]));
  for (const auto& c : golden()["classification"].as_array()) {
    const std::vector<int> g = ints(c["gold"]), p = ints(c["predicted"]);
    CHECK(accuracy(g, p) == Approx(c["accuracy"].as_number()).epsilon(1e-15));
    CHECK(matthews(g, p) == Approx(c["mcc"].as_number()).epsilon(1e-14).margin(1e-300));
    if (!c["f1"].is_null()) CHECK(binary_f1(g, p) == Approx(c["f1"].as_number()).epsilon(1e-15));
  }
  for (const auto& c : golden()["correlation"].as_array()) {
    const std::vector<double> x = doubles(c["x"]), y = doubles(c["y"]);
    for (const char* key : {"pearson", "spearman"}) {
      INFO(key);
      const double got = std::string(key) == "pearson" ? pearson(x, y) : spearman(x, y);
      if (c[key].is_null()) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == Approx(c[key].as_number()).epsilon(1e-14));
      }
    }
  }
}
