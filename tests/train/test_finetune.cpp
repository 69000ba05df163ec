// Fine-tuning's pieces (train/finetune.h): the spread over runs against values
// worked by hand, the config's strictness, and where a task's files are found.
#include <cmath>

#include "base/error.h"
#include "train/finetune.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

TEST_CASE("spread: mean, sample standard deviation and median, worked by hand", "[finetune]") {
  // 1, 2, 3, 4: mean 2.5; squares 2.25 + 0.25 + 0.25 + 2.25 = 5, / 3 -> sqrt(5/3); median (2 + 3) / 2.
  train::Spread s = train::spread({4, 1, 3, 2});
  CHECK(s.mean == 2.5);
  CHECK(std::abs(s.std - std::sqrt(5.0 / 3.0)) < 1e-15);
  CHECK(s.median == 2.5);
  CHECK(s.n == 4);
  // Odd count: the middle value; one run: no spread.
  CHECK(train::spread({0.9, 0.1, 0.5}).median == 0.5);
  CHECK(train::spread({0.7}).std == 0);
  CHECK(train::spread({}).n == 0);
}

TEST_CASE("finetune config: BERT's defaults, overrides, and every bad value named", "[finetune][config]") {
  train::FinetuneConfig c = train::parse_finetune_config(json::Value::object(), {}, "defaults");
  CHECK(c.learning_rates == std::vector<double>{3e-5});
  CHECK(c.batch_size == 32);
  CHECK(c.epochs == 3);
  CHECK(c.warmup_ratio == 0.1);
  c = train::parse_finetune_config(json::Value::object(),
                                   {"train.learning_rates=[2e-5,3e-5,5e-5]", "train.seeds=5", "squad.doc_stride=64"},
                                   "x");
  CHECK(c.learning_rates.size() == 3);
  CHECK(c.seeds == 5);
  CHECK(c.doc_stride == 64);
  CHECK_THROWS_WITH(train::parse_finetune_config(json::Value::object(), {"train.epoch=3"}, "cfg.json"),
                    Contains("cfg.json: train") && Contains("'epoch'"));
  CHECK_THROWS_WITH(train::parse_finetune_config(json::Value::object(), {"train.lr=1e-4", "train.learning_rates=[1e-4]"}, "c"),
                    Contains("not both"));
  CHECK_THROWS_WITH(train::parse_finetune_config(json::Value::object(), {"train.learning_rates=[1e-4,-1]"}, "c"),
                    Contains("learning_rates[1]"));
  CHECK_THROWS_WITH(train::parse_finetune_config(json::Value::object(), {"train.batch_size=0"}, "c"),
                    Contains("batch_size"));
  CHECK_THROWS_WITH(train::parse_finetune_config(json::Value::object(), {"tokenizer.lower_case=maybe"}, "c"),
                    Contains("lower_case"));
}

TEST_CASE("finetune files: GLUE's, MNLI's two dev sets, probes beside dev, SQuAD's names", "[finetune]") {
  test::TempDir dir("files");
  CHECK_THROWS_WITH(train::find_task_files("sst3", dir.path), Contains("unknown task 'sst3'"));
  CHECK_THROWS_WITH(train::find_task_files("sst2", dir.path), Contains("train.tsv"));
  dir.write("train.tsv", "");
  CHECK_THROWS_WITH(train::find_task_files("sst2", dir.path), Contains("the dev file is missing"));
  dir.write("dev.tsv", "");
  dir.write("dev_shuffle_b.tsv", "");
  dir.write("dev_shuffle_a.tsv", "");
  dir.write("test.tsv", "");
  train::TaskFiles f = train::find_task_files("rte", dir.path);
  CHECK(f.dev == std::vector<std::string>{dir / "dev.tsv", dir / "dev_shuffle_a.tsv", dir / "dev_shuffle_b.tsv"});
  CHECK(f.test == std::vector<std::string>{dir / "test.tsv"});

  test::TempDir mnli("mnli");
  mnli.write("train.tsv", "");
  mnli.write("dev_mismatched.tsv", "");
  CHECK_THROWS_WITH(train::find_task_files("mnli", mnli.path), Contains("dev_matched.tsv"));
  mnli.write("dev_matched.tsv", "");
  mnli.write("test_matched.tsv", "");
  f = train::find_task_files("mnli", mnli.path);
  CHECK(f.dev == std::vector<std::string>{mnli / "dev_matched.tsv", mnli / "dev_mismatched.tsv"});
  CHECK(f.test == std::vector<std::string>{mnli / "test_matched.tsv"});

  test::TempDir squad("squad");
  squad.write("train-v2.0.json", "");
  squad.write("dev-v2.0.json", "");
  CHECK_THROWS(train::find_task_files("squad", squad.path));  // v1.1's names are not v2.0's
  f = train::find_task_files("squad2", squad.path);
  CHECK(f.train == squad / "train-v2.0.json");
  CHECK(f.dev == std::vector<std::string>{squad / "dev-v2.0.json"});
}
