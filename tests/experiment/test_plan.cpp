// experiment/plan.h: the shipped papers' plans resolve, every stage checked
// against every config, before anything runs.
#include <filesystem>

#include "base/file_io.h"
#include "experiment/plan.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

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

TEST_CASE("Wang & Chen 2020's plan: Table 3's classifiers from each run's table and a random one", "[experiment][plan]") {
  test::TempDir dir("plan_wc");
  std::filesystem::create_directories(dir / "mr");
  dir.write("mr/mr.txt", "tr\t0\ta b\n");
  experiment::PlanRequest request;
  request.folder = std::string(ORDO_SOURCE_DIR) + "/configs/papers/wang_chen2020";
  request.out = "/nonexistent/out";
  request.data["mr"] = dir / "mr";  // a column: both its tasks read it
  const experiment::Plan plan = experiment::make_plan(request);
  const experiment::FinetuneTask* mr = plan.task("mr");
  const experiment::FinetuneTask* random = plan.task("mr_random");
  REQUIRE((mr && random));
  CHECK(mr->init_positions == "run");
  CHECK((random->init_positions == "none" && random->column == "mr"));
  CHECK((mr->data == dir / "mr" && random->data == dir / "mr"));
  CHECK(mr->finetune_task() == "senteval");
  // Without --data, a SentEval column's stand-in is read in its own (SST-2) layout.
  const experiment::FinetuneTask* cr = plan.task("cr");
  CHECK(cr->finetune_task() == "sst2");
  CHECK(cr->source() == "stand-in: the run's synthetic tense (sst2 layout)");
  CHECK((random->for_run("bert_mlm_nsp") && !random->for_run("gpt2_causal")));
  CHECK(plan.settings("finetune:mr", 0)["init_positions"].as_string() == "run");
  CHECK(plan.length_figure == std::vector<std::string>{"subj", "sst2", "cr"});
}

TEST_CASE("a plan's fresh classifiers are checked against every run before anything runs", "[experiment][plan][errors]") {
  test::TempDir dir("plan_fresh");
  dir.write("a.json", std::string(R"({"extends": ")") + ORDO_SOURCE_DIR + R"(/configs/tiny.json"})");
  auto refused = [&](const std::string& finetune, const std::string& report = "{}") {
    dir.write("experiment.json", R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": )" + finetune +
                                     R"(, "report": )" + report + "}");
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = dir / "out";
    return [request] { experiment::make_plan(request); };
  };
  const std::string task = R"({"name": "t", "task": "sst2", "stand_in": "tense")";
  CHECK_THROWS_WITH(refused(R"({"set": ["model.hidden_size=64", "train.max_seq_length=64"], "tasks": [)" + task + R"(, "init_positions": "run"}]})")(),
                    Contains("a.json: fine-tuning task t: init_positions run: its position table is 128 wide, the "
                             "fresh model's hidden_size is 64"));
  CHECK_THROWS_WITH(refused(R"({"set": ["model.num_hidden_layers=1"], "tasks": [)" + task + "}]}")(),
                    Contains("give the task init_positions"));
  CHECK_THROWS_WITH(refused(R"({"tasks": [)" + task + R"(, "column": "x"}]})")(), Contains("'column' names a Table 3 column"));
  CHECK_THROWS_WITH(refused(R"({"set": ["train.max_seq_length=64"], "tasks": [)" + task + R"(, "init_positions": "none"}]})",
                            R"({"length_figure": ["q"]})")(),
                    Contains("report.length_figure names 'q'"));
  CHECK_THROWS_WITH(refused(R"({"tasks": [)" + task + "}]}", R"({"dependency_heads": "tupe"})")(),
                    Contains("report.dependency_heads 'tupe' names no run config"));
  CHECK_THROWS_WITH(refused(R"({"tasks": [)" + task + R"(, "init_positions": "all"}]})")(), Contains("init_positions"));
}

TEST_CASE("a plan's layers stage: its runs and tasks checked, the tasks stage required, a quick run's sizes cut",
          "[experiment][plan][layers]") {
  test::TempDir dir("plan_layers");
  dir.write("a.json", std::string(R"({"extends": ")") + ORDO_SOURCE_DIR + R"(/configs/tiny.json"})");
  auto plan_of = [&](const std::string& stages, const std::string& layers, bool quick = false) {
    dir.write("experiment.json", R"({"stages": )" + stages + R"(, "layers": )" + layers + "}");
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = dir / "out";
    request.quick = quick;
    return experiment::make_plan(request);
  };
  const std::string with_tasks = R"(["pretrain", "tasks", "layers"])";
  const experiment::Plan plan = plan_of(with_tasks, R"({"runs": ["a"], "tasks": ["tense"], "max_fit": 300})");
  CHECK(plan.has_stage("layers"));
  CHECK(plan.layers.for_run("a"));
  CHECK(plan.settings("layers", 0)["max_fit"].as_int() == 300);
  CHECK(plan.settings("layers", 0)["tasks"].size() == 1);
  CHECK(plan_of(with_tasks, "{}", /*quick=*/true).layers.max_fit == 200);
  CHECK_THROWS_WITH(plan_of(with_tasks, R"({"runs": ["b"]})"), Contains("layers.runs names 'b', no run config"));
  CHECK_THROWS_WITH(plan_of(with_tasks, R"({"tasks": ["somo"]})"), Contains("layers.tasks names 'somo'"));
  CHECK_THROWS_WITH(plan_of(R"(["pretrain", "layers"])", "{}"), Contains("which the tasks stage writes"));
  CHECK_THROWS_WITH(plan_of(with_tasks, R"({"max_fit": 1})"), Contains("max_fit"));
}

TEST_CASE("a plan's pretraining replicates: runs of their own after the run configs, each the config with its seeds",
          "[experiment][plan]") {
  const test::TempDir dir("plan_replicates");
  const std::string tiny = std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json";
  write_file_atomic(dir / "a.json", R"({"extends": ")" + tiny + R"("})");
  write_file_atomic(dir / "b.json", R"({"extends": ")" + tiny + R"(", "model": {"pe": "none"}})");
  auto plan_with = [&](const std::string& replicates, bool quick = false) {
    write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain", "probe", "report"], "replicates": )" +
                                                   replicates + "}");
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = "/nonexistent/out";
    request.quick = quick;
    return experiment::make_plan(request);
  };
  const experiment::Plan plan = plan_with(R"({"runs": ["b"], "seeds": [3, 2]})");
  CHECK(plan.names == std::vector<std::string>{"a", "b", "b.seed2", "b.seed3"});
  CHECK(plan.row_of == std::vector<std::string>{"a", "b", "b", "b"});
  CHECK(plan.is_replicate(2));
  CHECK_FALSE(plan.is_replicate(1));
  CHECK(plan.is_row("b"));
  CHECK_FALSE(plan.is_row("b.seed2"));
  // tiny.json's own seeds: train.seed 1, data.seed 12345; a replicate draws both anew, on the same corpus.
  CHECK(plan.configs[1].train.seed == 1);
  CHECK(plan.configs[1].data.seed == 12345);
  CHECK(plan.configs[3].train.seed == 3);
  CHECK(plan.configs[3].data.seed == 3);
  CHECK(plan.configs[3].model.pe == "none");
  CHECK(plan.configs[3].data.synthetic_seed == plan.configs[1].data.synthetic_seed);
  CHECK(plan.to_json()["replicates"]["runs"]["b.seed3"].as_string() == "b");
  CHECK(plan_with(R"({"runs": ["b"], "seeds": [3, 2]})", true).names.size() == 3);  // --quick: the first seed

  CHECK_THROWS_WITH(plan_with(R"({"runs": ["c"], "seeds": [2]})"), Contains("runs names 'c', which is no run config"));
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seeds": [1]})"),
                    Contains("seed 1 is a's own train.seed: that replicate would be the run itself"));
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seeds": [2, 2]})"), Contains("seed 2 is given twice"));
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seeds": [2.5]})"), Contains("seeds[0] must be a whole number"));
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seeds": []})"), Contains("neither empty"));
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seed": [2]})"), Contains("seed"));
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seeds": [2], "tasks": ["s"]})"),
                    Contains("replicates.tasks names fine-tuning tasks, and the plan has no finetune stage"));
  write_file_atomic(dir / "a.seed2.json", R"({"extends": ")" + tiny + R"("})");
  CHECK_THROWS_WITH(plan_with(R"({"runs": ["a"], "seeds": [2]})"), Contains("has the name of a run config"));
}

TEST_CASE("a plan's replicates fine-tune on replicates.tasks only, their row on every task", "[experiment][plan]") {
  const test::TempDir dir("plan_replicate_tasks");
  write_file_atomic(dir / "a.json", std::string(R"({"extends": ")") + ORDO_SOURCE_DIR + R"(/configs/tiny.json"})");
  auto plan_with = [&](const std::string& tasks, std::vector<std::string> stages = {}) {
    write_file_atomic(dir / "experiment.json",
                      R"({"stages": ["pretrain", "tasks", "finetune"], )"
                      R"("finetune": {"set": ["train.max_seq_length=64"], "tasks": [)"
                      R"({"name": "s", "task": "sst2", "stand_in": "sentiment"}, {"name": "r", "task": "rte", )"
                      R"("stand_in": "roles"}]}, "replicates": {"runs": ["a"], "seeds": [2])" + tasks + "}}");
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = dir / "out";
    request.stages = std::move(stages);
    return experiment::make_plan(request);
  };
  const experiment::Plan every = plan_with("");
  REQUIRE(every.names == std::vector<std::string>{"a", "a.seed2"});
  for (size_t i : {0, 1})
    for (const char* t : {"s", "r"}) CHECK(every.fine_tunes(i, *every.task(t)));
  const experiment::Plan some = plan_with(R"(, "tasks": ["s"])");
  CHECK(some.fine_tunes(0, *some.task("r")));  // the row itself: every task
  CHECK(some.fine_tunes(1, *some.task("s")));
  CHECK_FALSE(some.fine_tunes(1, *some.task("r")));
  CHECK(some.to_json()["replicates"]["tasks"][0].as_string() == "s");
  CHECK_THROWS_WITH(plan_with(R"(, "tasks": ["q"])"),
                    Contains("replicates.tasks names 'q', no task of finetune.tasks"));
  // --stages may leave the folder's finetune stage out (every pretraining first, say): its tasks wait for it.
  const experiment::Plan pretraining = plan_with(R"(, "tasks": ["s"])", {"pretrain", "tasks"});
  CHECK(pretraining.names == std::vector<std::string>{"a", "a.seed2"});
  CHECK_FALSE(pretraining.has_stage("finetune"));
}

TEST_CASE("a plan's stages and --set lists are checked where they are written, its smoke test without --quick",
          "[experiment][plan][errors]") {
  test::TempDir dir("plan_lists");
  dir.write("a.json", std::string(R"({"extends": ")") + ORDO_SOURCE_DIR + R"(/configs/tiny.json"})");
  const std::string spec = dir / "experiment.json";
  auto message = [&](const std::string& json) -> std::string {
    dir.write("experiment.json", json);
    experiment::PlanRequest request;
    request.folder = dir.path;
    request.out = dir / "out";
    try {
      experiment::make_plan(request);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  CHECK(message(R"({"stages": ["pretrain", "probes"]})") ==
        spec + ": stages[1]: unknown stage 'probes': the stages are pretrain, probe, analyze, tasks, layers, "
               "finetune, report");
  const std::string task = R"({"name": "t", "task": "sst2", "stand_in": "tense")";
  CHECK(message(R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": {"set": ["train.seeds=1", "epochs"], )"
                R"("tasks": [)" + task + "}]}}") ==
        spec + ": finetune: set[1] 'epochs': expected key=value");
  CHECK(message(R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": {"tasks": [)" + task +
                R"(, "set": ["train..seeds=1"]}]}})") ==
        spec + ": finetune.tasks[0]: set[0] 'train..seeds=1': empty key in 'train..seeds'");
  CHECK(message(R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": {"tasks": [)" + task +
                R"(, "runs": ["a", "a"]}]}})") == spec + ": finetune.tasks[0]: runs names 'a' twice");
  CHECK(message(R"({"stages": ["pretrain", "probe"], "probe": {"layer": "first"}})") ==
        spec + ": probe: layer expects a layer number (from 1) or 'all', got 'first'");
  CHECK(message(R"({"stages": ["pretrain", "tasks", "finetune"], "finetune": {"config": "ft.json", "tasks": [)" +
                task + "}]}}") ==
        spec + ": finetune: config 'ft.json' is no file (a path from " + dir.path + ")");
  // The smoke test's settings are checked by every plan, not first by `--quick`.
  CHECK(message(R"({"quick": {"set": ["=3"]}})") == spec + ": quick: set[0] '=3': expected key=value");
  CHECK(message(R"({"quick": {"set": ["train.stepz=3"]}})") ==
        spec + ": quick (as --quick reads it): " + (dir / "a.json") + ": train: unknown key 'stepz'");
  CHECK(message(R"({"quick": {"set": ["train.steps=3"]}})") == "(accepted)");
}
