// experiment/plan.h: the shipped papers' plans resolve, every stage checked
// against every config, before anything runs.
#include <filesystem>

#include "base/file_io.h"
#include "experiment/plan.h"
#include "tests/helpers.h"

using namespace ordo;

TEST_CASE("every shipped experiment.json resolves to a plan (with --quick too)", "[experiment][plan]") {
  int plans = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(ORDO_SOURCE_DIR) + "/configs")) {
    if (e.path().filename() != "experiment.json") continue;
    INFO(e.path().string());
    for (bool quick : {false, true}) {
      experiment::PlanRequest request;
      request.folder = e.path().parent_path().string();
      request.out = "/nonexistent/out";
      request.quick = quick;
      const experiment::Plan plan = experiment::make_plan(request);
      CHECK(plan.has_stage("pretrain"));
      CHECK(plan.quick == quick);
      for (const experiment::FinetuneTask& t : plan.finetune)
        if (!t.runnable()) CHECK(t.source() == "no data (give --data " + t.name + "=DIR)");
    }
    ++plans;
  }
  CHECK(plans >= 1);
}

TEST_CASE("runs on a real corpus have no synthetic stand-ins: the tasks stage is left out, a mixed plan refused",
          "[experiment][plan]") {
  experiment::PlanRequest request;
  request.folder = std::string(ORDO_SOURCE_DIR) + "/configs/papers/wang2021";
  request.out = "/nonexistent/out";
  request.overrides = {"data.corpus=books.txt"};
  const experiment::Plan plan = experiment::make_plan(request);
  CHECK_FALSE(plan.has_stage("tasks"));
  CHECK(plan.has_stage("finetune"));
  for (const experiment::FinetuneTask& t : plan.finetune) {
    INFO(t.name);
    CHECK_FALSE(t.runnable());
    CHECK(t.source() == "no data (give --data " + t.name + "=DIR)");
  }

  const test::TempDir dir("mixed_corpus");
  const std::string tiny = std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json";
  write_file_atomic(dir / "a.json", R"({"extends": ")" + tiny + R"("})");
  write_file_atomic(dir / "b.json", R"({"extends": ")" + tiny + R"(", "data": {"corpus": "books.txt"}})");
  request.folder = dir.path;
  request.overrides = {};
  CHECK_THROWS_WITH(experiment::make_plan(request),
                    Catch::Contains("a pretrains on the synthetic language and b on data.corpus 'books.txt'"));
}
