// `ordo experiment` (experiment/runner.h) end to end on a folder of two tiny
// configs with every stage: pretrained, probed, their synthetic tasks made,
// fine-tuned on one of them over two seeds and reported beside a paper table
// with a task column; then what a rerun does (nothing), a stopped stage
// continued, a changed setting refused and --redo, two processes sharing the
// folder, --shard and --list. The paper tables here are written by the test
// with made-up values: never the papers'.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "base/file_io.h"
#include "base/json.h"
#include "base/json_numbers.h"
#include "tests/helpers.h"
#include "tests/tools/disk_state.h"

using namespace ordo;
using namespace ordo::test;
using Catch::Matchers::Contains;

namespace {

const char* kConfig = R"({"extends": "TINY", "model": {"pe": "PE"}, "data": {"objective": "mlm+nsp"}})";

const char* kPlan = R"({
  "stages": ["pretrain", "probe", "tasks", "finetune", "report"],
  "probe": {"words": 20, "length": 16},
  "finetune": {"set": ["train.seeds=2", "train.epochs=1", "train.batch_size=16", "train.max_seq_length=32",
                       "train.lr=1e-3", "train.threads=1", "train.log_every=1"],
               "tasks": [{"name": "rte", "task": "rte", "stand_in": "roles"},
                         {"name": "cola", "task": "cola"}]},
  "report": {"baseline": "b_ape"}
})";

// Made-up values in the paper tables' two shapes.
const char* kRows = "# a made-up table\nconfig\tpaper_row\tfamily\tkind\trte.accuracy\ttranslation_invariance_no_special\n"
                    "a_none\tno PE\tnone\t-\t50.0 \u00b1 1.0\t0.9\nb_ape\tAPE\tAPE\tlearned\t60.0 \u00b1 1.0\t0.1\n";
const char* kCorrelations = "indicator\tpaper_row\trte.accuracy\ndirection_balance\tDB\t0.3\n";

const std::string kSmall =
    " --set model.hidden_size=32 --set model.intermediate_size=64 --set train.max_seq_length=32"
    " --set model.max_position_embeddings=32 --set data.synthetic_sentences=400 --set train.steps=6"
    " --set train.checkpoint_every=3 --set train.eval_every=3 --set train.threads=1 --quiet";

// DIR/cfg with configs named `names` (a_none, b_ape, c_..., the PE after the first '_').
std::string make_folder(const TempDir& dir, const std::vector<std::string>& names = {"a_none", "b_ape"}) {
  const std::string cfg = dir / "cfg";
  std::filesystem::create_directories(cfg);
  for (const std::string& name : names) {
    const std::string pe = name.substr(2) == "ape" ? "ape_learned" : name.substr(2);
    std::string text = std::regex_replace(kConfig, std::regex("TINY"), std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json");
    write_file_atomic(cfg + "/" + name + ".json", std::regex_replace(text, std::regex("PE"), pe));
  }
  write_file_atomic(cfg + "/experiment.json", kPlan);
  write_file_atomic(cfg + "/paper_rows.tsv", kRows);
  write_file_atomic(cfg + "/paper_corr.tsv", kCorrelations);
  return cfg;
}

json::Value stages_of(const std::string& run) { return json::parse_file(run + "/stages.json"); }

}  // namespace

TEST_CASE("ordo experiment: every stage end to end, a rerun does nothing, a stopped grid continues",
          "[cli][experiment]") {
  TempDir dir("experiment");
  const std::string cfg = make_folder(dir), out = dir / "out";
  const std::string command = "experiment " + cfg + " --out " + out + kSmall;
  CommandResult r = run_ordo(command);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("2 run(s) worked on, 2 complete"));
  for (const char* name : {"a_none", "b_ape"}) {
    const std::string run = out + "/runs/" + name;
    const json::Value stages = stages_of(run);
    for (const char* unit : {"pretrain", "probe", "tasks", "finetune:rte"}) CHECK(stages.contains(unit));
    CHECK_FALSE(stages.contains("finetune:cola"));  // no data for it: not run
    CHECK(json::parse_file(run + "/finetune/rte/results.json")["learning_rates"][0]["runs"].size() == 2);
  }
  // The report: both paper tables beside ordo's, the data's source said, the task's mean ± std over 2 seeds.
  const std::string md = read_file(out + "/report/paper.md");
  CHECK_THAT(md, Contains("| a_none | no PE |") && Contains("/ 60.00 ± 1.00 |"));
  CHECK_THAT(md, Contains("stand-in: the run's synthetic roles (rte layout)"));
  CHECK_THAT(md, Contains("## corr") && Contains("| direction balance | DB |"));
  // (A model pretrained 6 steps answers the roles stand-in at chance, and the cell says so.)
  CHECK(std::regex_search(md, std::regex(R"(\| b_ape \| APE \| [0-9.]+ ± [0-9.]+( \(at chance\))? / 60\.00)")));
  const std::string figures = read_file(out + "/report/figures.md");
  CHECK_THAT(figures, Contains("cola: no data (give --data cola=DIR)"));
  const json::Value plan = json::parse_file(out + "/experiment.json");
  CHECK(plan["finetune"][0]["name"].as_string() == "rte");

  // Again: every stage finished with these settings, nothing runs.
  const auto before = snapshot(out + "/runs");
  r = run_ordo(command);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("0 run(s) worked on, 2 complete"));
  CHECK(snapshot(out + "/runs") == before);
  // A stage record whose time is damaged: --list names the file and the stage.
  const std::string record = out + "/runs/b_ape/stages.json";
  const std::string intact = read_file(record);
  json::Value damaged = stages_of(out + "/runs/b_ape");
  damaged["pretrain"]["seconds"] = "long";
  write_file_atomic(record, json::dump(damaged));
  r = run_ordo(command + " --list");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains(record + ": stage 'pretrain': its \"seconds\" is missing or no number"));
  write_file_atomic(record, intact);

  // What a kill during the second seed of b_ape's grid leaves (results.json is written after every
  // run: the first seed's line only; the stage unrecorded): the same command continues the grid.
  const std::string grid = out + "/runs/b_ape/finetune/rte";
  json::Value stages = stages_of(out + "/runs/b_ape");
  json::Value kept = json::Value::object();
  for (const auto& [k, v] : stages.items())
    if (k != "finetune:rte") kept[k] = v;
  write_file_atomic(out + "/runs/b_ape/stages.json", json::dump(kept));
  json::Value results = json::parse_file(grid + "/results.json");
  json::Value first_only = json::Value::array();
  first_only.push_back(results["learning_rates"][0]["runs"][0]);
  results["learning_rates"][0]["runs"] = first_only;
  write_file_atomic(grid + "/results.json", json::dump(results));
  std::filesystem::remove_all(grid + "/runs/lr_0.001_seed_43");
  const std::string first_seed = grid + "/runs/lr_0.001_seed_42";
  const auto finished = snapshot(first_seed);
  r = run_ordo(command);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("1 of 2 run(s) finished before"));
  CHECK(snapshot(first_seed) == finished);
  CHECK(stages_of(out + "/runs/b_ape").contains("finetune:rte"));
}

TEST_CASE("ordo experiment: a changed stage setting is refused by name, --redo reruns that stage and after",
          "[cli][experiment]") {
  TempDir dir("experiment-redo");
  const std::string cfg = make_folder(dir), out = dir / "out";
  const std::string command = "experiment " + cfg + " --out " + out + kSmall;
  REQUIRE(run_ordo(command).exit_code == 0);
  const std::string weights = out + "/runs/b_ape/checkpoints/step_000000006/model.safetensors";
  const std::string pretrained = read_file(weights);
  const auto before = snapshot(out);
  // The probe's words changed: refused, naming the run, the stage and the key.
  CommandResult r = run_ordo(command + " --probe-words 10");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("a_none: its probe stage was run with other settings") &&
                           Contains("differs from the plan at 'words'") && Contains("--redo probe"));
  // The fine-tuning's epochs changed in the plan: refused, naming the task's unit.
  write_file_atomic(cfg + "/experiment.json", std::regex_replace(kPlan, std::regex("train.epochs=1"), "train.epochs=2"));
  r = run_ordo(command);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("its finetune:rte stage") && Contains("'config.train.epochs'"));
  CHECK(snapshot(out) == before);
  // --redo finetune: the grids run again with 2 epochs; the pretraining and probe are untouched.
  r = run_ordo(command + " --redo finetune");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(read_file(weights) == pretrained);
  const json::Value results = json::parse_file(out + "/runs/b_ape/finetune/rte/results.json");
  CHECK(results["learning_rates"][0]["runs"][0]["last_epoch"].as_int() == 2);
  // A config's description is words, not a setting: rewording it redoes nothing.
  std::string text = read_file(cfg + "/b_ape.json");
  const auto finished = snapshot(out + "/runs");
  write_file_atomic(cfg + "/b_ape.json", text.substr(0, text.rfind('}')) + ", \"description\": \"reworded\"}");
  r = run_ordo(command);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("0 run(s) worked on"));
  CHECK(snapshot(out + "/runs") == finished);  // the runs untouched (the report is written again)
  // An edited run config is the pretrain stage's setting.
  text.insert(text.rfind('}'), ", \"train\": {\"lr\": 0.5}");
  write_file_atomic(cfg + "/b_ape.json", text);
  r = run_ordo(command);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("b_ape: its pretrain stage") && Contains("'train.lr'"));
}

TEST_CASE("ordo experiment: two processes on one folder run each run once, --shard and --list", "[cli][experiment]") {
  TempDir dir("experiment-shared");
  const std::string cfg = make_folder(dir, {"a_none", "b_ape", "c_rope", "d_alibi"}), out = dir / "out";
  write_file_atomic(cfg + "/experiment.json",
                    R"({"stages": ["pretrain", "probe", "report"], "probe": {"words": 20, "length": 16}})");
  std::filesystem::remove(cfg + "/paper_rows.tsv");
  std::filesystem::remove(cfg + "/paper_corr.tsv");
  const std::string command = std::string(ORDO_BINARY) + " experiment " + cfg + " --out " + out + kSmall;
  const CommandResult both = run_command("(" + command + " > " + (dir / "one.log") + " 2>&1 & " + command + " > " +
                                         (dir / "two.log") + " 2>&1 & wait)");
  const std::string one = read_file(dir / "one.log"), two = read_file(dir / "two.log");
  INFO(one << "\n----\n" << two);
  for (const char* name : {"a_none", "b_ape", "c_rope", "d_alibi"}) {
    const std::string line = std::string(name) + ": pretrain\n";
    const int count = (one.find(line) != std::string::npos) + (two.find(line) != std::string::npos);
    CHECK(count == 1);  // pretrained by exactly one of the two
    CHECK(stages_of(out + "/runs/" + name).contains("probe"));
  }
  CHECK(file_exists(out + "/report/index.html"));
  CHECK_FALSE(std::filesystem::exists(out + "/runs/.a_none.ordo-lock"));

  // --list: numbered runs and their finished stages; --shard I/N selects every N-th.
  CommandResult r = run_ordo("experiment " + cfg + " --out " + out + kSmall + " --list");
  CHECK_THAT(r.output, Contains("  1  a_none | pretrain done") && Contains("  4  d_alibi | pretrain done"));
  // --only, --rungs and --shard narrow the list and are checked as a run checks them.
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall + " --list --only 3,a_none");
  CHECK_THAT(r.output, Contains("4 run(s), 2 selected") && Contains("  1  a_none |") && Contains("  3  c_rope |"));
  CHECK(r.output.find("b_ape") == std::string::npos);
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall + " --list --only 9");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("--only 9: no run of that number or name"));
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall + " --list --rungs tiny_16k");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("--rungs tiny_16k: ") && Contains(" has no ladder"));
  TempDir dir2("experiment-shard");
  const std::string out2 = dir2 / "out";
  r = run_ordo("experiment " + cfg + " --out " + out2 + kSmall + " --shard 2/2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(file_exists(out2 + "/runs/b_ape/stages.json"));
  CHECK(file_exists(out2 + "/runs/d_alibi/stages.json"));
  CHECK_FALSE(std::filesystem::exists(out2 + "/runs/a_none"));
  CHECK_THAT(r.output, Contains("2 of 4 run(s) complete; the report waits"));
  r = run_ordo("experiment " + cfg + " --out " + out2 + kSmall + " --report");
  CHECK(r.exit_code == 0);
  CHECK(file_exists(out2 + "/report/index.html"));
  // A report of what is finished says that it is partial, and how far; one of every run does not.
  const std::string partial = "**Partial:** 2 of 4 runs are complete.";
  CHECK_THAT(read_file(out2 + "/report/paper.md"), Contains("beside the paper\n\n" + partial));
  CHECK_THAT(read_file(out2 + "/report/index.html"), Contains("<strong>Partial:</strong> 2 of 4 runs are complete."));
  CHECK_FALSE(read_file(out + "/report/paper.md").find("Partial") != std::string::npos);
}

TEST_CASE("ordo experiment: a bad plan is refused before anything is written", "[cli][experiment][errors]") {
  TempDir dir("experiment-refused");
  const std::string cfg = make_folder(dir), out = dir / "out";
  write_file_atomic(dir / "stray.txt", "x");
  struct Case {
    std::string args, message;
  } cases[] = {
      {"experiment " + cfg + " --out " + (dir / "stray.txt"), "holds no experiment"},
      {"experiment " + (dir / "nowhere") + " --out " + out, "is not a folder of run configs"},
      {"experiment " + cfg + " --out " + out + " --data mnli=" + (dir / "nowhere"), "no fine-tuning task 'mnli'"},
      {"experiment " + cfg + " --out " + out + " --data cola=" + (dir / "nowhere"), "not a directory"},
      {"experiment " + cfg + " --out " + out + " --stages probe,report", "the stages must include pretrain"},
      {"experiment " + cfg + " --out " + out + " --stages pretrain,finetune", "which the tasks stage writes"},
      {"experiment " + cfg + " --out " + out + " --redo report", "the report is written again"},
      {"experiment " + cfg + " --out " + out + " --shard 3/2", "flag --shard expects I/N"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_ordo(c.args + kSmall);
    INFO(c.args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(c.message));
  }
  // A stand-in ordo data tasks does not write, and a paper row naming no config.
  write_file_atomic(cfg + "/experiment.json", std::regex_replace(kPlan, std::regex("\"roles\""), "\"riddles\""));
  CommandResult r = run_ordo("experiment " + cfg + " --out " + out + kSmall);
  CHECK_THAT(r.output, Contains("stand_in 'riddles' is not a task ordo data tasks writes"));
  write_file_atomic(cfg + "/experiment.json", kPlan);
  write_file_atomic(cfg + "/paper_rows.tsv", std::string(kRows) + "z_gone\tZ\tAPE\tl\t1\t1\n");
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall);
  CHECK_THAT(r.output, Contains("row 'z_gone' names no config"));
  write_file_atomic(cfg + "/paper_rows.tsv", kRows);
  // A task for some runs only ("runs"): the others have no unit for it; a name that is no config is refused.
  auto rte_for = [](const std::string& runs) {
    std::string plan = kPlan;
    const std::string rte = R"("stand_in": "roles"})";
    return plan.replace(plan.find(rte), rte.size(), R"("stand_in": "roles", "runs": [)" + runs + "]}");
  };
  write_file_atomic(cfg + "/experiment.json", rte_for(R"("zz")"));
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall);
  CHECK_THAT(r.output, Contains("runs names 'zz', which is no run config"));
  write_file_atomic(cfg + "/experiment.json", rte_for(R"("b_ape")"));
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall + " --list");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("a_none | pretrain - | probe - | tasks -\n"));
  CHECK_THAT(r.output, Contains("b_ape | pretrain - | probe - | tasks - | finetune:rte -\n"));
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("ordo experiment --report with nothing finished names the files it wrote, no index.html",
          "[cli][experiment]") {
  TempDir dir("experiment-report-early");
  const std::string cfg = make_folder(dir), out = dir / "out";
  const CommandResult r = run_ordo("experiment " + cfg + " --out " + out + " --report" + kSmall);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(file_exists(out + "/report/index.html"));
  CHECK_THAT(r.output, !Contains("index.html\n") && Contains("(no index.html: no run is probed yet"));
  // Every file the line names is there.
  const std::string names = r.output.substr(r.output.find(out + "/report: ") + out.size() + 9);
  for (const char* file : {"paper.md", "paper.json"}) {
    CHECK_THAT(names, Contains(file));
    CHECK(file_exists(out + "/report/" + file));
  }
}

TEST_CASE("ordo experiment: a run folder the plan does not have is refused by name, and kept",
          "[cli][experiment][errors]") {
  TempDir dir("experiment-foreign-run");
  const std::string cfg = make_folder(dir), out = dir / "out";
  REQUIRE(run_ordo("experiment " + cfg + " --out " + out + " --report" + kSmall).exit_code == 0);
  // A run the plan dropped (or another experiment's): its folder and a file in it.
  std::filesystem::create_directories(out + "/runs/c_dropped");
  write_file_atomic(out + "/runs/c_dropped/marker", "kept");
  const CommandResult r = run_ordo("experiment " + cfg + " --out " + out + " --report" + kSmall);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("'" + out + "' holds the run c_dropped, which " + cfg + " does not plan") &&
                           Contains("move it out of " + out + "/runs to keep it"));
  CHECK(read_file(out + "/runs/c_dropped/marker") == "kept");
}

TEST_CASE("ordo experiment: pretraining replicates run as runs of their own and are reported as their row's",
          "[cli][experiment]") {
  TempDir dir("experiment_replicates");
  const std::string cfg = make_folder(dir), out = dir / "out";
  write_file_atomic(cfg + "/experiment.json", R"({"stages": ["pretrain", "probe", "report"],
    "probe": {"words": 20, "length": 16}, "replicates": {"runs": ["b_ape"], "seeds": [7]},
    "report": {"baseline": "b_ape"}})");
  std::filesystem::remove(cfg + "/paper_corr.tsv");
  CommandResult r = run_ordo("experiment " + cfg + " --out " + out + " --list");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("  3  b_ape.seed7 |"));
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("3 run(s) worked on, 3 complete"));
  const json::Value config = json::parse_file(out + "/runs/b_ape.seed7/config.json");
  CHECK(config["train"]["seed"].as_int() == 7);
  CHECK(config["data"]["seed"].as_int() == 7);
  // Another draw: other initial weights, so another probed indicator than the row's own run.
  const json::Value paper = json::parse_file(out + "/report/paper.json");
  const json::Value& b = paper["tables"][0]["rows"][1]["ordo"]["translation_invariance_no_special"];
  REQUIRE(b.contains("pretraining"));
  const json::Value& means = b["pretraining"]["means"];
  REQUIRE(means.size() == 2);
  CHECK(means[0].as_number() == Approx(b["mean"].as_number()));
  CHECK(means[1].as_number() != means[0].as_number());
  const std::string md = read_file(out + "/report/paper.md");
  CHECK_THAT(md, Contains("| b_ape (2 pretraining runs) | APE |"));
  CHECK_THAT(md, Contains("| a_none (one pretraining run) | no PE |"));
  CHECK(paper["runs"].size() == 2);  // the replicate is its row's, not a row
}

TEST_CASE("ordo experiment: a folder's claims judged in its report, gathered by --findings", "[cli][experiment]") {
  TempDir dir("experiment_findings");
  const std::string cfg = make_folder(dir), out = dir / "out";
  write_file_atomic(cfg + "/experiment.json", R"({"stages": ["pretrain", "probe", "report"],
    "probe": {"words": 20, "length": 16}, "report": {"baseline": "b_ape"}})");
  std::filesystem::remove(cfg + "/paper_corr.tsv");
  // A claim naming a column the paper table lacks is refused before anything runs.
  write_file_atomic(cfg + "/claims.tsv", "# A made-up paper\nti\tTable 2\tAIV order\trank rows symmetry\t-\n");
  CommandResult r = run_ordo("experiment " + cfg + " --out " + out + kSmall);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("claims.tsv:2 (ti): ") && Contains("has no column 'symmetry'"));
  CHECK_FALSE(std::filesystem::exists(out));
  write_file_atomic(cfg + "/claims.tsv", "# A made-up paper\n"
                                         "ti\tTable 2\tAIV order\trank rows translation_invariance_no_special\t-\n"
                                         "mt\tTable 6\ttranslation\tuntested needs WMT\t-\n");
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json::Value findings = json::parse_file(out + "/report/findings.json");
  CHECK(findings["paper"].as_string() == "A made-up paper");
  REQUIRE(findings["findings"].size() == 2);
  // Two rows, one tau_b: with n = 2 its exact p is 1, never significant.
  const std::string first = findings["findings"][0]["verdict"].as_string();
  CHECK((first == "consistent, not significant" || first == "inconclusive" || first == "not testable here"));
  CHECK(findings["findings"][1]["reason"].as_string() == "needs WMT");
  CHECK_THAT(read_file(out + "/report/paper.md"), Contains("## Findings"));
  CHECK_THAT(read_file(out + "/report/findings.md"), Contains("| translation | Table 6 | — | — | **not testable here: needs WMT** |"));

  const std::string doc = dir / "FINDINGS.md";
  r = run_ordo("experiment --findings " + out + "/report --out " + doc);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(read_file(doc), Contains("| A made-up paper | "));
  // Again: the document exists, replaced only with --overwrite; a folder without findings is named.
  r = run_ordo("experiment --findings " + out + "/report --out " + doc);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("--overwrite"));
  CHECK(run_ordo("experiment --findings " + out + "/report --out " + doc + " --overwrite").exit_code == 0);
  r = run_ordo("experiment --findings " + out + " --out " + doc + " --overwrite");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("holds no findings.json"));
  r = run_ordo("experiment --findings " + out + "/report --out " + doc + " --overwrite --quick");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("--quick is for running an experiment, not for --findings"));
}

namespace {

// Every file of each run that a run's weights and figures decide: its checkpoints, probe and
// fine-tuning results (not stages.json, metrics.jsonl or logs, which hold wall times).
std::map<std::string, std::string> results_of(const std::string& out) {
  std::map<std::string, std::string> kept;
  for (const auto& [path, bytes] : snapshot(out + "/runs"))
    if (path.find("model.safetensors") != std::string::npos || path.find("indicators.json") != std::string::npos ||
        path.find("/predictions") != std::string::npos)
      kept[path] = bytes;
  return kept;
}

void check_runs_at_once(const std::string& device_flags, const std::string& plan) {
  TempDir dir("experiment_at_once");
  const std::string cfg = make_folder(dir, {"a_none", "b_ape", "c_rpe_shaw"});
  write_file_atomic(cfg + "/experiment.json", plan);
  const std::string flags = kSmall + device_flags;
  CommandResult alone = run_ordo("experiment " + cfg + " --out " + (dir / "alone") + flags);
  INFO(alone.output);
  REQUIRE(alone.exit_code == 0);
  CommandResult both = run_ordo("experiment " + cfg + " --out " + (dir / "both") + flags + " --runs-at-once 2");
  INFO(both.output);
  REQUIRE(both.exit_code == 0);
  CHECK_THAT(both.output, Contains("2 process(es) side by side; 3 run(s) complete -> "));
  // Each run was taken by one process and ran whole there, as alone.
  for (const char* run : {"a_none", "b_ape", "c_rpe_shaw"}) {
    const std::string line = "] " + std::string(run) + ": pretrain done";
    CHECK(both.output.find(line) != std::string::npos);
    CHECK(both.output.find(line) == both.output.rfind(line));
  }
  const auto a = results_of(dir / "alone"), b = results_of(dir / "both");
  CHECK(a.size() >= 6);
  CHECK(a == b);
}

}  // namespace

// The scale study's report on a ladder of three rungs (4, 8 and 12 steps) of
// two configs with a replicate each: every point of scale/scale.json is the
// probed indicator its run wrote (read here from the run's own file), a gap
// between two configs pairs their runs by pretraining seed, and each
// disagreement has its figure and a verdict.
TEST_CASE("ordo experiment: the disagreements followed up a ladder, each point its run's", "[cli][experiment][scale]") {
  TempDir dir("experiment_ladder");
  const std::string cfg = make_folder(dir), out = dir / "out";
  write_file_atomic(cfg + "/experiment.json", R"({"stages": ["pretrain", "probe", "report"],
    "probe": {"words": 20, "length": 16}, "replicates": {"runs": ["a_none", "b_ape"], "seeds": [7]},
    "ladder": {"rungs": [{"name": "r4", "set": ["train.steps=4"]},
                         {"name": "r8", "moves": "steps", "set": ["train.steps=8"]},
                         {"name": "r12", "moves": "steps", "device": "gpu", "set": ["train.steps=12"]}]}})");
  std::filesystem::remove(cfg + "/paper_corr.tsv");
  // The paper's values from a table outside the folder's own (a ladder's runs are no rows of it).
  std::filesystem::rename(cfg + "/paper_rows.tsv", dir / "reference.tsv");
  const std::string key = "translation_invariance_no_special";
  write_file_atomic(cfg + "/disagreements.tsv", "# made up\nid\tfigure\trow\tminus\tpaper\tpaper_flops\tdisagreement\n"
                    "ti\t" + key + "\tb_ape\t-\t../reference.tsv\t1e18\tmade up\n"
                    "ti_gap\t" + key + "\tb_ape\ta_none\t../reference.tsv\t-\tmade up too\n");
  const std::string small =
      " --set model.hidden_size=32 --set model.intermediate_size=64 --set train.max_seq_length=32"
      " --set model.max_position_embeddings=32 --set data.synthetic_sentences=400 --set train.checkpoint_every=0"
      " --set train.eval_every=0 --set train.threads=1 --quiet";
  // On the CPU the GPU rung is left out, said so, and named in the report with the commands that run it.
  CommandResult r = run_ordo("experiment " + cfg + " --out " + out + small);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("the GPU rung(s) r12 left out on the CPU") && Contains("8 run(s) worked on"));
  CHECK_FALSE(std::filesystem::exists(out + "/runs/b_ape=r12"));
  CHECK_THAT(read_file(out + "/report/paper.md"), Contains("Rungs with no finished run yet: marked for a GPU, r12 "
                                                               "(tools/scale_gpu_rungs.sh on a lent GPU") &&
                                                      Contains("--rungs r12` runs them on this machine instead)."));
  // A rung that is not there, or no GPU rung, is refused.
  r = run_ordo("experiment " + cfg + " --out " + out + " --rungs r16" + small);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("--rungs r16: ") && Contains("has no rung of that name"));
  // Asked for (as every rung marked for a GPU), it runs here.
  r = run_ordo("experiment " + cfg + " --out " + out + " --rungs gpu" + small);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("4 run(s) worked on"));
  auto indicator = [&](const std::string& run) {
    const json::Value probed = json::parse_file(out + "/runs/" + run + "/probe/indicators.json");
    return json::to_number(probed["layer_1"]["with_special"][key]);
  };
  const json::Value scale = json::parse_file(out + "/report/scale/scale.json");
  REQUIRE(scale["disagreements"].size() == 2);
  const json::Value& ti = scale["disagreements"][0];
  const json::Value& gap = scale["disagreements"][1];
  CHECK(ti["paper"].as_number() == 0.1);
  CHECK(gap["paper"].as_number() == Approx(0.1 - 0.9).margin(1e-12));
  const char* rungs[] = {"r4", "r8", "r12"};
  for (size_t k = 0; k < 3; ++k) {
    INFO(rungs[k]);
    const std::string b = std::string("b_ape=") + rungs[k], a = std::string("a_none=") + rungs[k];
    const json::Value& values = ti["rungs"][k]["values"];
    REQUIRE(values.size() == 2);  // seeds 1 and 7, in seed order
    CHECK(values[0].as_number() == indicator(b));
    CHECK(values[1].as_number() == indicator(b + ".seed7"));
    const json::Value& gaps = gap["rungs"][k]["values"];
    REQUIRE(gaps.size() == 2);
    CHECK(gaps[0].as_number() == Approx(indicator(b) - indicator(a)).margin(1e-15));
    CHECK(gaps[1].as_number() == Approx(indicator(b + ".seed7") - indicator(a + ".seed7")).margin(1e-15));
  }
  // Compute grows with the steps: 4 : 8 : 12.
  CHECK(ti["rungs"][1]["flops"].as_number() == Approx(2 * ti["rungs"][0]["flops"].as_number()));
  CHECK(ti["rungs"][2]["flops"].as_number() == Approx(3 * ti["rungs"][0]["flops"].as_number()));
  CHECK(ti["trend"]["n"].as_int() == 6);
  CHECK(ti["moves"].size() == 2);
  CHECK_FALSE(ti["verdict"].as_string().empty());
  for (const char* id : {"ti", "ti_gap"}) CHECK(file_exists(out + "/report/scale/" + std::string(id) + ".svg"));
  const std::string md = read_file(out + "/report/paper.md");
  CHECK_THAT(md, Contains("## Is it scale? The disagreements against compute"));
  CHECK_THAT(md, Contains("ti (made up): " + ti["verdict"].as_string()));
  CHECK_THAT(read_file(out + "/report/index.html"), Contains("<img src=\"scale/ti.svg\""));

  // report.english: the same configs, pretrained elsewhere (here 6 steps instead of 4), set beside the first rung.
  std::string plan_text = read_file(cfg + "/experiment.json");
  plan_text.insert(plan_text.rfind('}'), R"(, "report": {"english": "../english_out"})");
  write_file_atomic(cfg + "/experiment.json", plan_text);
  r = run_ordo("experiment " + cfg + " --out " + out + " --report" + small);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(read_file(out + "/report/paper.md"), Contains("The real-English runs have not been made"));
  const std::string english = dir / "english";
  std::filesystem::create_directories(english);
  for (const char* config : {"a_none.json", "b_ape.json"})
    std::filesystem::copy_file(cfg + "/" + config, english + "/" + config);
  write_file_atomic(english + "/experiment.json", R"({"stages": ["pretrain", "probe", "report"],
    "probe": {"words": 20, "length": 16}, "replicates": {"runs": ["a_none", "b_ape"], "seeds": [7]}})");
  r = run_ordo("experiment " + english + " --out " + dir / "english_out" + " --set train.steps=6" + small);
  REQUIRE(r.exit_code == 0);
  r = run_ordo("experiment " + cfg + " --out " + out + " --report" + small);
  REQUIRE(r.exit_code == 0);
  auto english_indicator = [&](const std::string& run) {
    const json::Value probed = json::parse_file(dir / "english_out/runs/" + run + "/probe/indicators.json");
    return json::to_number(probed["layer_1"]["with_special"][key]);
  };
  const json::Value with_english = json::parse_file(out + "/report/scale/scale.json")["disagreements"][0];
  REQUIRE(with_english.contains("english"));
  const json::Value& values = with_english["english"]["values"];
  REQUIRE(values.size() == 2);
  CHECK(values[0].as_number() == english_indicator("b_ape"));
  CHECK(values[1].as_number() == english_indicator("b_ape.seed7"));
  const double first_rung = (indicator("b_ape=r4") + indicator("b_ape=r4.seed7")) / 2;
  CHECK(with_english["english"]["change"].as_number() ==
        Approx((english_indicator("b_ape") + english_indicator("b_ape.seed7")) / 2 - first_rung).margin(1e-12));
  CHECK_THAT(read_file(out + "/report/paper.md"),
             Contains("| real English (r4) |") &&
                 Contains("Real English instead of the synthetic language, at r4: corpus (r4 → real English)"));
}

TEST_CASE("ordo experiment --runs-at-once: runs side by side, each the same bits as alone", "[cli][experiment]") {
  check_runs_at_once("", kPlan);
  CHECK_THAT(run_ordo("experiment x --out y --runs-at-once 0").output, Contains("--runs-at-once"));
}

TEST_CASE("ordo experiment --runs-at-once on the GPU: runs side by side, each the same bits as alone",
          "[cli][experiment][cuda]") {
  check_runs_at_once(" --set train.device=cuda", R"({"stages": ["pretrain", "probe", "report"],
    "probe": {"words": 20, "length": 16}, "report": {"baseline": "b_ape"}})");
}
