// SentEval's probing files (downstream/senteval.h) read as SentEval's
// PROBINGEval reads them: partition, label, sentence (the last field), the
// classes the training labels sorted as strings; every bad line named with
// its file and line. Expected values are read off the hand-written files.
#include <catch2/catch.hpp>

#include <string>

#include "base/file_io.h"
#include "downstream/metrics.h"
#include "downstream/senteval.h"
#include "tests/helpers.h"

using namespace ordo::downstream;
using Catch::Matchers::Contains;

namespace {

struct File {
  ordo::test::TempDir dir{"senteval"};
  std::string path = dir / "tree_depth.txt";
  explicit File(const std::string& text) { ordo::write_file_atomic(path, text); }
};

}  // namespace

TEST_CASE("SentEval: partitions, the last field as the sentence, classes sorted as strings", "[downstream][senteval]") {
  File f("tr\t9\tthe dog ran .\n"
         "tr\t10\textra\tfields\tthe cat that the dog saw slept .  \n"
         "va\t10\ta bird sang .\n"
         "tr\tOTHER\tdogs bark .\n"
         "te\t9\tthe man left .\n"
         "va\t9\tsome cats slept .\r\n");
  const SentEvalData d = read_senteval(f.path);
  // np.unique sorts strings: "10" < "9" < "OTHER".
  REQUIRE(d.task->labels == std::vector<std::string>{"10", "9", "OTHER"});
  CHECK(d.task->name == "senteval");
  CHECK(d.task->display == "tree_depth");
  CHECK(d.task->metrics == std::vector<GlueMetric>{GlueMetric::accuracy});
  CHECK_FALSE(d.task->pair);
  REQUIRE(d.train.examples.size() == 3);
  CHECK(d.train.examples[0].text_a == "the dog ran .");
  CHECK(d.train.examples[0].label == 1);
  CHECK(d.train.examples[1].text_a == "the cat that the dog saw slept .");  // trailing spaces stripped
  CHECK(d.train.examples[1].label == 0);
  CHECK(d.train.examples[2].label == 2);
  CHECK(d.train.examples[2].id == "2");
  CHECK(d.train.examples[2].line == 4);
  REQUIRE(d.dev.examples.size() == 2);
  CHECK(d.dev.examples[0].label == 0);
  CHECK(d.dev.examples[1].text_a == "some cats slept .");
  CHECK(d.dev.examples[1].line == 6);
  REQUIRE(d.test.examples.size() == 1);
  CHECK(d.test.examples[0].label == 1);
  for (const GlueSet* set : {&d.train, &d.dev, &d.test}) {
    CHECK(set->task == d.task.get());
    CHECK(set->labelled);
  }
  // The GLUE metrics apply: accuracy over the dev partition.
  GluePredictions p;
  p.labels = {0, 2};
  CHECK(glue_metrics(d.dev, p)["accuracy"].as_number() == 0.5);
}

TEST_CASE("SentEval: every bad line is named with its file and line", "[downstream][senteval][errors]") {
  auto error_of = [](const std::string& text) {
    File f(text);
    try {
      read_senteval(f.path);
    } catch (const ordo::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of("tr\t1\ta .\nva\t1 b .\n"), Contains("tree_depth.txt:2: a SentEval line has 3 tab-separated"));
  CHECK_THAT(error_of("tr\t1\ta .\ndev\t1\tb .\n"), Contains(":2: partition 'dev' is none of tr, va, te"));
  CHECK_THAT(error_of("tr\t\ta .\n"), Contains(":1: empty label"));
  CHECK_THAT(error_of("tr\t1\t   \n"), Contains(":1: empty sentence"));
  CHECK_THAT(error_of("tr\t1\ta .\ntr\t2\tb .\nva\t3\tc .\n"),
             Contains(":3: label '3' is not one of the training partition's (1, 2)"));
  CHECK_THAT(error_of("tr\t1\ta .\ntr\t2\tb .\n"), Contains("no validation example (partition va)"));
  CHECK_THAT(error_of("va\t1\ta .\n"), Contains("no training example (partition tr)"));
  CHECK_THAT(error_of("tr\t1\ta .\nva\t1\tb .\n"), Contains("has 1 class; a classification needs 2 or more"));
  CHECK_THAT(error_of(""), Contains("no training example"));
}
