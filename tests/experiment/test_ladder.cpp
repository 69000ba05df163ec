// experiment/ladder.h: the compute ladder of configs/scale_study resolves
// every rung (steps, width, depth, compute), lays out one run per rung in the
// plan, and a rung that moves more than it says is refused.
#include <string>

#include "base/file_io.h"
#include "experiment/ladder.h"
#include "experiment/plan.h"
#include "train/loop.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::Contains;

namespace {

const std::string kStudy = std::string(ORDO_SOURCE_DIR) + "/configs/scale_study";

experiment::Plan plan_of(const std::string& folder, bool quick = false, std::vector<std::string> overrides = {}) {
  experiment::PlanRequest request;
  request.folder = folder;
  request.out = "/nonexistent/out";
  request.quick = quick;
  request.overrides = std::move(overrides);
  return experiment::make_plan(request);
}

// A folder with one run config (the tiny model of configs/tiny.json) and a
// ladder of the given rungs (JSON).
void write_ladder(const test::TempDir& dir, const std::string& rungs) {
  write_file_atomic(dir / "a.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  write_file_atomic(dir / "experiment.json", R"({"stages": ["pretrain"], "ladder": {"rungs": )" + rungs + "}}");
}

}  // namespace

// Kaplan et al.'s count, by hand. tiny (2 x 128, d_ff 512): N = 2 (4 128^2 +
// 2 128 512) = 393,216; forward per token 2 N + 2 x 2 layers x 64 x 128 =
// 819,200; 4,000 steps x 32 x 64 = 8,192,000 tokens; training 3 x 819,200 x
// 8,192,000. deep (4 x 128): N = 786,432, forward 1,572,864 + 65,536 =
// 1,638,400. mini (4 x 256, d_ff 1024): N = 4 (4 256^2 + 2 256 1024) =
// 3,145,728, forward 6,291,456 + 131,072 = 6,422,528. The GPU rungs: small
// (4 x 512, d_ff 2048): N = 4 (4 512^2 + 2 512 2048) = 12,582,912, forward
// 25,165,824 + 2 x 4 x 64 x 512 = 25,427,968; base (12 x 768, d_ff 3072):
// N = 12 (4 768^2 + 2 768 3072) = 84,934,656, forward 169,869,312 + 2 x 12 x
// 64 x 768 = 171,048,960.
TEST_CASE("the scale study's ladder: every rung's steps, width, depth and compute", "[experiment][ladder]") {
  const experiment::Ladder ladder =
      experiment::read_ladder(json::parse_file(kStudy + "/experiment.json")["ladder"], "experiment.json: ladder");
  REQUIRE(ladder.rungs.size() == 7);
  for (const std::string run : {"01_none", "02_ape_learned", "05_rpe_learned", "08_ape_learned+rpe_learned"}) {
    INFO(run);
    const auto shapes = experiment::resolve_rungs(ladder, kStudy + "/" + run + ".json", {}, "ladder");
    REQUIRE(shapes.size() == 7);
    struct Want {
      int64_t steps, width, depth;
      double parameters, forward_per_token;
    };
    const Want want[] = {{4000, 128, 2, 393216, 819200},
                         {16000, 128, 2, 393216, 819200},
                         {16000, 128, 4, 786432, 1638400},
                         {16000, 256, 4, 3145728, 6422528},
                         {16000, 512, 4, 12582912, 25427968},
                         {4000, 768, 12, 84934656, 171048960}};
    for (size_t i = 0; i < 6; ++i) {
      INFO(ladder.rungs[i].name);
      CHECK(shapes[i].steps == want[i].steps);
      CHECK(shapes[i].width == want[i].width);
      CHECK(shapes[i].depth == want[i].depth);
      CHECK(shapes[i].tokens == want[i].steps * 32 * 64);
      CHECK(shapes[i].parameters == want[i].parameters);
      CHECK(shapes[i].flops == Approx(3 * want[i].forward_per_token * want[i].steps * 32 * 64).epsilon(1e-15));
    }
    // The CPU rungs reach 31.36x today's compute, the GPU rungs 208.8x.
    CHECK(shapes[3].flops / shapes.front().flops == Approx(6422528.0 * 4 / 819200).epsilon(1e-15));
    CHECK(shapes[5].flops / shapes.front().flops == Approx(171048960.0 / 819200).epsilon(1e-15));
    // The bf16 check repeats tiny_4k's shape.
    CHECK(shapes[6].flops == shapes[0].flops);
  }
  CHECK(ladder.rungs[1].moves == std::vector<std::string>{"steps"});
  CHECK(ladder.rungs[2].moves == std::vector<std::string>{"depth"});
  CHECK(ladder.rungs[3].moves == std::vector<std::string>{"width"});
  CHECK(ladder.rungs[4].moves == std::vector<std::string>{"width"});
  CHECK(ladder.rungs[5].moves == (std::vector<std::string>{"steps", "width", "depth"}));
  for (size_t i = 0; i < 6; ++i) CHECK(ladder.rungs[i].gpu == (i >= 4));
  for (size_t i = 0; i < 6; ++i) CHECK_FALSE(ladder.rungs[i].is_check());
  CHECK(ladder.rungs[6].checks == "tiny_4k");
  CHECK(ladder.rungs[6].moves.empty());
}

// Two phases and gradient accumulation, by hand: tiny (N = 393,216),
// 3 micro-batches per step; phase 1 10 steps x 4 x 32 x 3 = 3,840 tokens at
// 2 N + 2 x 2 x 32 x 128 = 802,816 forward FLOPs each, phase 2 5 x 2 x 64 x 3
// = 1,920 tokens at 2 N + 2 x 2 x 64 x 128 = 819,200; training 3 x
// (802,816 x 3,840 + 819,200 x 1,920) = 13,967,032,320.
TEST_CASE("a rung's compute sums its phases, accumulation included", "[experiment][ladder]") {
  const json::Value config = json::parse(R"({
      "model": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512,
                "max_position_embeddings": 64},
      "train": {"grad_accum": 3, "phases": [{"steps": 10, "max_seq_length": 32, "batch_size": 4},
                                            {"steps": 5, "max_seq_length": 64, "batch_size": 2}]}})");
  const experiment::RungShape s = experiment::rung_shape(train::parse_run_config(config, {}, "phases"));
  CHECK(s.steps == 15);
  CHECK(s.tokens == 5760);
  CHECK(s.parameters == 393216);
  CHECK(s.flops == 13967032320.0);
}

TEST_CASE("the scale study's plan: one run per rung and replicate, the cheapest rung first", "[experiment][ladder]") {
  const experiment::Plan plan = plan_of(kStudy);
  // The first rung: 4 run configs + 4 x 2 replicates; the 5 rungs above it: the 2 run configs the
  // disagreements rest on + 2 x 2 replicates; then the bf16 check of tiny_4k: the 4 run configs once.
  REQUIRE(plan.names.size() == 12 + 5 * 6 + 4);
  CHECK(plan.names[42] == "01_none=tiny_4k_bf16");
  CHECK(plan.names[0] == "01_none=tiny_4k");
  CHECK(plan.names[3] == "08_ape_learned+rpe_learned=tiny_4k");
  CHECK(plan.names[4] == "01_none=tiny_4k.seed2");
  CHECK(plan.names[12] == "02_ape_learned=tiny_16k");
  CHECK(plan.names[13] == "05_rpe_learned=tiny_16k");
  CHECK(plan.names[29] == "05_rpe_learned=mini_16k.seed3");
  for (size_t i = 0; i < plan.names.size(); ++i) {
    INFO(plan.names[i]);
    std::string rung;
    for (const char* r : {"tiny_4k", "tiny_16k", "deep_16k", "mini_16k", "small_16k", "base_4k", "tiny_4k_bf16"})
      if (plan.names[i].find(std::string("=") + r) != std::string::npos) rung = r;
    // bf16 on the CPU rungs above tiny_4k (its check, tiny_4k_bf16, lets it carry them) and in the check;
    // the first rung as the paper plans run it, the GPU rungs as a GPU does by default.
    const bool bf16 = rung == "tiny_4k_bf16" || rung == "tiny_16k" || rung == "deep_16k" || rung == "mini_16k";
    CHECK(train::precision_setting_name(plan.configs[i].train.precision) == (bf16 ? "bf16" : "auto"));
    if (rung != "tiny_4k" && rung != "tiny_4k_bf16")
      CHECK((plan.row_of[i].rfind("02_ape_learned=", 0) == 0 || plan.row_of[i].rfind("05_rpe_learned=", 0) == 0));
    if (rung == "tiny_4k_bf16") rung = "tiny_4k";  // its shape
    else CHECK(experiment::rung_of(plan, i)->name == rung);
    REQUIRE(experiment::rung_of(plan, i) != nullptr);
    const train::RunConfig& c = plan.configs[i];
    CHECK(c.train.total_steps() == (rung == "tiny_4k" || rung == "base_4k" ? 4000 : 16000));
    CHECK(c.model.num_hidden_layers == (rung == "tiny_4k" || rung == "tiny_16k" ? 2 : rung == "base_4k" ? 12 : 4));
    CHECK(c.model.hidden_size ==
          (rung == "mini_16k" ? 256 : rung == "small_16k" ? 512 : rung == "base_4k" ? 768 : 128));
    CHECK(c.model.num_attention_heads ==
          (rung == "mini_16k" ? 4 : rung == "small_16k" ? 8 : rung == "base_4k" ? 12 : 2));
    const bool replicate = plan.names[i].find(".seed") != std::string::npos;
    CHECK(plan.is_replicate(i) == replicate);
    CHECK(plan.row_of[i] == plan.names[i].substr(0, plan.names[i].find(".seed")));
    const uint64_t seed = replicate ? std::stoull(plan.names[i].substr(plan.names[i].find(".seed") + 5)) : 1;
    CHECK(c.train.seed == seed);
    CHECK(c.data.seed == (replicate ? seed : 12345u));
  }
  CHECK(plan.configs[2].model.pe == "rpe_shaw");  // 05_rpe_learned: Shaw et al.'s keys and values
  // The first rung and its check fine-tune on the four stand-ins; the rungs above on the two the
  // disagreements read.
  REQUIRE(plan.finetune.size() == 4);
  for (size_t i = 0; i < plan.names.size(); ++i)
    for (const experiment::FinetuneTask& t : plan.finetune) {
      INFO(plan.names[i] << " " << t.name);
      const bool first = plan.names[i].find("=tiny_4k") != std::string::npos;  // tiny_4k and tiny_4k_bf16
      CHECK(plan.fine_tunes(i, t) == (first || t.name == "sst2" || t.name == "squad"));
    }
  CHECK(plan.is_row("05_rpe_learned=deep_16k"));

  // --quick and --set lie over the rungs' sets; the widths and depths stay the rungs'.
  const experiment::Plan quick = plan_of(kStudy, true, {"train.batch_size=8"});
  REQUIRE(quick.names.size() == 32);  // --quick keeps one replicate seed: (4 + 4), 5 rungs x (2 + 2), the check's 4
  for (const train::RunConfig& c : quick.configs) {
    CHECK(c.train.total_steps() == 120);
    CHECK(c.train.phases[0].batch_size == 8);
  }
  CHECK(quick.names[24] == "02_ape_learned=base_4k");
  CHECK(quick.configs[24].model.hidden_size == 768);
}

TEST_CASE("a rung that changes two of steps, width and depth where it says one is refused", "[experiment][ladder]") {
  const test::TempDir dir("ladder_two");
  write_ladder(dir, R"([{"name": "small"},
                        {"name": "big", "moves": "steps", "set": ["train.steps=8000", "model.hidden_size=256"]}])");
  CHECK_THROWS_WITH(plan_of(dir.path),
                    Contains(dir / "experiment.json: ladder: rung 'big' against rung 'small', for " + dir / "a.json") &&
                        Contains("it moves steps but changes width too (128 -> 256)"));
  // Named, both may move.
  write_ladder(dir, R"([{"name": "small"},
                        {"name": "big", "moves": ["steps", "width"],
                         "set": ["train.steps=8000", "model.hidden_size=256"]}])");
  CHECK(plan_of(dir.path).names == std::vector<std::string>{"a=small", "a=big"});
  // A dimension named that does not move.
  write_ladder(dir, R"([{"name": "small"}, {"name": "big", "moves": "depth", "set": ["train.steps=8000"]}])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains("rung 'big' against rung 'small'") &&
                                           Contains("it moves depth but changes steps too (4000 -> 8000)"));
  write_ladder(dir, R"([{"name": "small"}, {"name": "big", "moves": "depth", "set": []}])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains("it says it moves depth, but depth stays 2"));
  // A rung's set that the run config refuses names the rung as well as the file.
  write_ladder(dir, R"([{"name": "small"}, {"name": "big", "moves": "steps", "set": ["train.stepz=8000"]}])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(dir / "experiment.json: ladder: rung 'big' (its \"set\", then --set): " +
                                                dir / "a.json: ") &&
                                           Contains("'stepz'"));
  // A ladder climbs.
  write_ladder(dir, R"([{"name": "small"}, {"name": "smaller", "moves": "steps", "set": ["train.steps=1000"]}])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains("rung 'smaller' against rung 'small'") &&
                                           Contains("is not above the rung before's") && Contains("a ladder climbs"));
}

TEST_CASE("a ladder's rungs are checked as they are read", "[experiment][ladder][errors]") {
  const test::TempDir dir("ladder_read");
  const std::string at = dir / "experiment.json: ladder";
  const std::pair<const char*, const char*> cases[] = {
      {R"([{"name": "a"}])", ": give at least two rungs"},
      {R"([{"name": "a", "moves": "steps"}, {"name": "b", "moves": "steps"}])",
       ": rungs[0] ('a'): the first rung moves nothing"},
      {R"([{"name": "a"}, {"name": "b", "set": ["train.steps=8000"]}])",
       ": rungs[1] ('b'): say what it moves from rung 'a'"},
      {R"([{"name": "a"}, {"name": "b", "moves": "heads"}])", ": rungs[1] ('b'): moves names 'heads'; a rung moves "
                                                              "steps, width or depth"},
      {R"([{"name": "a"}, {"name": "a", "moves": "steps"}])", ": rungs[1]: rung 'a' is named twice"},
      {R"([{"name": "a/b"}, {"name": "c", "moves": "steps"}])", ": rungs[0]: name"},
      {R"([{"name": "a"}, {"name": "b=c", "moves": "steps"}])", ": rungs[1]: name 'b=c' holds '='"},
      {R"([{"name": "a"}, {"name": "b", "moves": "steps", "sets": []}])", "sets"},
      {R"([{"name": "a"}, {"name": "b", "moves": 3}])", ": moves must be \"steps\", \"width\", \"depth\" or a list"},
      {R"([{"name": "a"}, {"name": "gpu", "moves": "steps"}])", ": rungs[1]: 'gpu' is no rung's name"},
      {R"([{"name": "a"}, {"name": "b", "moves": "steps", "device": "tpu"}])",
       ": rungs[1]: device 'tpu' is \"gpu\" (a rung for a GPU) or left out"},
  };
  for (const auto& [rungs, message] : cases) {
    INFO(rungs);
    write_ladder(dir, rungs);
    CHECK_THROWS_WITH(plan_of(dir.path), Contains(at) && Contains(message));
  }
}

// A run's name is <run>=<rung>; a run config with '=' in its name would make
// "a=b=c" both run a=b on rung c and run a on rung b=c.
TEST_CASE("a ladder refuses a run config whose name holds '='", "[experiment][ladder][errors]") {
  const test::TempDir dir("ladder_eq");
  write_ladder(dir, R"([{"name": "a"}, {"name": "b", "moves": "steps", "set": ["train.steps=8000"]}])");
  std::filesystem::rename(dir / "a.json", dir / "x=y.json");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains("x=y.json holds '=' in its name"));
}

TEST_CASE("a check rung repeats a step's shape with its own setting, one draw per run config",
          "[experiment][ladder]") {
  const test::TempDir dir("ladder_check");
  write_file_atomic(dir / "b.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  write_ladder(dir, R"([{"name": "small"}, {"name": "small_bf16", "checks": "small", "set": ["train.precision=bf16"]},
                        {"name": "big", "moves": "steps", "set": ["train.steps=8000"]}])");
  write_file_atomic(dir / "experiment.json",
                    R"({"stages": ["pretrain"], "replicates": {"runs": ["a"], "seeds": [2]}, "ladder": {"rungs": [
                         {"name": "small"}, {"name": "small_bf16", "checks": "small", "set": ["train.precision=bf16"]},
                         {"name": "big", "moves": "steps", "set": ["train.steps=8000"]}]}})");
  const experiment::Plan plan = plan_of(dir.path);
  // The step after the check is measured from the step before it ("big" against "small"); the check
  // pretrains a and b once, a's replicate left out.
  CHECK(plan.names == std::vector<std::string>{"a=small", "b=small", "a=small.seed2", "a=small_bf16",
                                               "b=small_bf16", "a=big", "b=big", "a=big.seed2"});
  CHECK(experiment::rung_of(plan, 3)->checks == "small");
  CHECK(train::precision_setting_name(plan.configs[3].train.precision) == "bf16");

  // A check that changes the shape it checks, says what it moves, or checks no earlier step: refused.
  const std::string at = dir / "experiment.json: ladder";
  const std::pair<const char*, const char*> cases[] = {
      {R"([{"name": "a"}, {"name": "c", "checks": "a", "set": ["model.num_hidden_layers=4"]}])",
       "rung 'c' checks rung 'a' but changes its depth (2 -> 4)"},
      {R"([{"name": "a"}, {"name": "c", "checks": "a", "moves": "steps", "set": ["train.steps=8000"]}])",
       ": rungs[1] ('c'): a check of rung 'a' repeats its shape and moves nothing"},
      {R"([{"name": "c", "checks": "a"}, {"name": "a"}])", ": rungs[0] ('c'): checks 'a', which is no step"},
      {R"([{"name": "a"}, {"name": "c", "checks": "a"}, {"name": "d", "checks": "c"}])",
       ": rungs[2] ('d'): checks 'c', which is no step"},
  };
  for (const auto& [rungs, message] : cases) {
    INFO(rungs);
    write_ladder(dir, rungs);
    CHECK_THROWS_WITH(plan_of(dir.path), Contains(at) && Contains(message));
  }
}

TEST_CASE("a rung may pretrain some of the run configs, with their replicates", "[experiment][ladder]") {
  const test::TempDir dir("ladder_runs");
  write_file_atomic(dir / "a.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  write_file_atomic(dir / "b.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  auto write = [&](const std::string& big_runs) {
    write_file_atomic(dir / "experiment.json",
                      R"({"stages": ["pretrain"], "replicates": {"runs": ["a", "b"], "seeds": [2]}, "ladder": {"rungs": [
                           {"name": "small"}, {"name": "big", "moves": "steps", "set": ["train.steps=8000"], "runs": )" +
                          big_runs + "}]}}");
  };
  write(R"(["b"])");
  const experiment::Plan plan = plan_of(dir.path);
  CHECK(plan.names == std::vector<std::string>{"a=small", "b=small", "a=small.seed2", "b=small.seed2", "b=big",
                                               "b=big.seed2"});
  CHECK(plan.configs[4].train.total_steps() == 8000);
  CHECK(plan.configs[5].train.seed == 2);

  const std::string at = dir / "experiment.json: ladder";
  write(R"(["c"])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": rung 'big' runs 'c', which is no run config of " + dir.path +
                                                " (a, b)"));
  write(R"([])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": rungs[1]: runs is an empty list"));
  write(R"(["b", "b"])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": rungs[1]: runs names 'b' twice"));
  write(R"("b")");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": rungs[1]") && Contains("runs"));
  // A rung named as a replicate of another: b at rung "small.seed2" is the folder of b's replicate at "small".
  write_file_atomic(dir / "experiment.json",
                    R"({"stages": ["pretrain"], "replicates": {"runs": ["a", "b"], "seeds": [2]}, "ladder": {"rungs": [
                         {"name": "small"}, {"name": "small.seed2", "moves": "steps", "set": ["train.steps=8000"]}]}})");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": the run of a at rung small.seed2 and the run of a.seed2 at "
                                                     "rung small would both be the run a=small.seed2, one folder: "
                                                     "rename rung 'small.seed2'"));
}

TEST_CASE("a rung may fine-tune on some of the plan's tasks", "[experiment][ladder]") {
  const test::TempDir dir("ladder_tasks");
  write_file_atomic(dir / "a.json", R"({"extends": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/tiny.json"})");
  auto write = [&](const std::string& big_tasks, const std::string& stages = R"(["pretrain", "tasks", "finetune"])") {
    write_file_atomic(dir / "experiment.json", R"({"stages": )" + stages + R"(,
        "finetune": {"config": ")" + std::string(ORDO_SOURCE_DIR) + R"(/configs/finetune/tiny.json",
                     "tasks": [{"name": "sst2", "task": "sst2", "stand_in": "sentiment"},
                               {"name": "rte", "task": "rte", "stand_in": "roles"}]},
        "replicates": {"runs": ["a"], "seeds": [2]}, "ladder": {"rungs": [
        {"name": "small"}, {"name": "big", "moves": "steps", "set": ["train.steps=8000"], "tasks": )" +
                                                   big_tasks + "}]}}");
  };
  write(R"(["rte"])");
  const experiment::Plan plan = plan_of(dir.path);
  REQUIRE(plan.names == std::vector<std::string>{"a=small", "a=small.seed2", "a=big", "a=big.seed2"});
  const experiment::FinetuneTask &sst2 = *plan.task("sst2"), &rte = *plan.task("rte");
  for (size_t i = 0; i < 4; ++i) {
    INFO(plan.names[i]);
    CHECK(plan.fine_tunes(i, sst2) == (i < 2));  // left out at rung big, replicates too
    CHECK(plan.fine_tunes(i, rte));
  }

  const std::string at = dir / "experiment.json";
  write(R"(["mrpc"])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": ladder: rung 'big' tasks names 'mrpc', no task of "
                                                     "finetune.tasks"));
  write(R"([])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": ladder: rungs[1]: tasks is an empty list"));
  write(R"(["rte", "rte"])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": ladder: rungs[1]: tasks names 'rte' twice"));
  write(R"(["rte"])", R"(["pretrain"])");
  CHECK_THROWS_WITH(plan_of(dir.path), Contains(at + ": ladder: rung 'big' names fine-tuning tasks, and the plan "
                                                     "has no finetune stage"));
}
