// experiment/plan.h: the shipped papers' plans resolve, every stage checked
// against every config, before anything runs.
#include <filesystem>

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
