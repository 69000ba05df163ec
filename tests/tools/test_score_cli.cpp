// `ordo score` end to end on the hand-written files of tests/data/downstream/:
// the JSON it prints (against the twin's golden values), and its errors.
#include <catch2/catch.hpp>

#include <string>

#include "base/file_io.h"
#include "base/json.h"
#include "tests/helpers.h"

using ordo::test::run_ordo;

namespace {

const std::string kDownstreamData = std::string(ORDO_SOURCE_DIR) + "/tests/data/downstream/";

// The JSON object in the command's output (which also holds stderr).
ordo::json::Value json_of(const std::string& output) {
  const size_t open = output.find('{'), close = output.rfind('}');
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  return ordo::json::parse(output.substr(open, close - open + 1));
}

}  // namespace

TEST_CASE("ordo score prints the official metrics of GLUE and SQuAD files", "[cli][score]") {
  const ordo::json::Value golden = ordo::json::parse(ordo::read_file(kDownstreamData + "golden.json"));
  for (const char* group : {"glue", "squad"}) {
    for (const auto& c : golden[group].as_array()) {
      std::string args = "score --task " + c["task"].as_string() + " --data " + kDownstreamData + c["data"].as_string() +
                         " --predictions " + kDownstreamData + c["predictions"].as_string();
      if (c.contains("na_probs")) args += " --na-probs " + kDownstreamData + c["na_probs"].as_string();
      if (c.contains("na_prob_thresh")) args += " --na-prob-thresh " + ordo::json::dump(c["na_prob_thresh"]);
      const ordo::test::CommandResult r = run_ordo(args);
      INFO("ordo " << args << "\n" << r.output);
      REQUIRE(r.exit_code == 0);
      const ordo::json::Value got = json_of(r.output);
      const ordo::json::Value& want = c["metrics"];
      REQUIRE(got.size() == want.size());
      for (const auto& [key, value] : want.items()) {
        INFO(key);
        REQUIRE(got.contains(key));
        CHECK(got[key].as_number() == Approx(value.as_number()).epsilon(1e-12).margin(1e-15));
      }
    }
  }
}

TEST_CASE("ordo score refuses mismatched files with the file and line", "[cli][score][errors]") {
  ordo::test::TempDir dir("score-cli");
  const std::string rte = kDownstreamData + "RTE/dev.tsv";
  const std::string missing_row = dir.write("RTE.tsv", "index\tprediction\n0\tentailment\n1\tentailment\n");
  ordo::test::CommandResult r = run_ordo("score --task rte --data " + rte + " --predictions " + missing_row);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("2 predictions for the 3 examples of " + rte) != std::string::npos);
  CHECK(r.output.find("\"accuracy\"") == std::string::npos);  // no metrics printed

  const std::string bad_label = dir.write("RTE2.tsv", "index\tprediction\n0\tentailment\n1\tyes\n2\tentailment\n");
  r = run_ordo("score --task rte --data " + rte + " --predictions " + bad_label);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("RTE2.tsv:3: prediction 'yes' is not one of RTE's labels") != std::string::npos);

  r = run_ordo("score --task sts-b --data " + rte + " --predictions " + bad_label);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("unknown task 'sts-b' (the tasks: cola sst2 mrpc stsb qqp mnli qnli rte wnli squad squad2)") !=
        std::string::npos);

  // A test file has no labels to score against.
  r = run_ordo("score --task rte --data " + kDownstreamData + "RTE/test.tsv --predictions " + bad_label);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("has no labels") != std::string::npos);

  const std::string squad = kDownstreamData + "squad/dev-v2.0.json";
  const std::string partial = dir.write("pred.json", "{\"n1\": \"France\"}");
  r = run_ordo("score --task squad2 --data " + squad + " --predictions " + partial);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("the predictions lack 6 of the 7 questions") != std::string::npos);

  r = run_ordo("score --task squad --data " + squad + " --predictions " + kDownstreamData + "squad/pred-v2.0.json");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("has no gold answer; SQuAD v1.1 scores answerable questions only") != std::string::npos);

  r = run_ordo("score --task rte --data " + rte + " --predictions " + bad_label + " --na-probs x.json");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("belong to SQuAD v2.0") != std::string::npos);

  r = run_ordo("score --task rte --data " + rte);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("--predictions") != std::string::npos);
}
