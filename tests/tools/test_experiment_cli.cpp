// `ordo experiment` (report/experiment.h) on a folder of two of Table 2's
// configs with a tiny model: every run pretrained, probed and reported beside
// the paper's rows; the same command again skips finished runs and resumes a
// stopped one to the very weights an uninterrupted run ends with; another plan
// in the same --out is refused with nothing written.
#include <filesystem>
#include <fstream>
#include <regex>

#include "base/file_io.h"
#include "base/json.h"
#include "tests/helpers.h"
#include "tests/tools/disk_state.h"

using namespace ordo;
using namespace ordo::test;
using Catch::Matchers::Contains;

namespace {

const char* kConfigs[] = {"01_none", "02_ape_learned"};

// DIR/cfg: the two configs (extending the repository's tiny.json) and the
// paper table's source lines, header and their two rows.
std::string make_folder(const TempDir& dir) {
  const std::string source = std::string(ORDO_SOURCE_DIR) + "/configs/papers/wang2021_table2/";
  const std::string cfg = dir / "cfg";
  std::filesystem::create_directories(cfg);
  for (const char* name : kConfigs) {
    std::string text = read_file(source + name + ".json");
    text = std::regex_replace(text, std::regex("\"\\.\\./\\.\\./tiny\\.json\""),
                              "\"" + std::string(ORDO_SOURCE_DIR) + "/configs/tiny.json\"");
    write_file_atomic(cfg + "/" + name + ".json", text);
  }
  std::ifstream in(source + "paper_table2.tsv");
  std::string table;
  for (std::string line; std::getline(in, line);)
    if (line[0] == '#' || line.rfind("config\t", 0) == 0 || line.rfind("01_none\t", 0) == 0 ||
        line.rfind("02_ape_learned\t", 0) == 0)
      table += line + "\n";
  write_file_atomic(cfg + "/paper_table2.tsv", table);
  return cfg;
}

const std::string kSmall =
    " --set model.hidden_size=32 --set model.intermediate_size=64 --set train.max_seq_length=32"
    " --set model.max_position_embeddings=32 --set data.synthetic_sentences=400 --set train.steps=6"
    " --set train.checkpoint_every=3 --set train.eval_every=3 --set train.threads=1"
    " --probe-length 16 --probe-words 20 --quiet";

}  // namespace

TEST_CASE("ordo experiment: runs, probes and reports beside the paper; reruns skip and resume exactly",
          "[cli][experiment]") {
  TempDir dir("experiment");
  const std::string cfg = make_folder(dir), out = dir / "out";
  const std::string command = "experiment " + cfg + " --out " + out + kSmall;
  CommandResult r = run_ordo(command);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("2 run(s) pretrained, 0 resumed, 0 already trained"));
  for (const char* name : kConfigs) {
    CHECK(file_exists(out + "/runs/" + name + "/checkpoints/step_000000006/model.safetensors"));
    const json::Value probe = json::parse(read_file(out + "/runs/" + name + "/probe/probe.json"));
    CHECK(probe["length"].as_number() == 16);
    CHECK(probe["words"].as_number() == 20);
  }
  // The report: the table in the configs' order, the paper's rows beside ordo's, a reading.
  const std::string md = read_file(out + "/report/paper.md");
  CHECK_THAT(md, Contains("| 01_none | BERT without PE |") && Contains("| 02_ape_learned | BERT-style APE |"));
  CHECK_THAT(md, Contains("/ 0.0143 |"));  // the paper's AIV w/o [CLS] of BERT-style APE, read from the table
  CHECK_THAT(md, Contains("**Reading**") && Contains("families, best first: paper"));
  CHECK_THAT(read_file(out + "/report/index.html"), Contains("Against the paper"));
  const json::Value table = json::parse(read_file(out + "/report/table.json"));
  REQUIRE(table["rows"].size() == 2);
  CHECK(table["rows"][0]["variant"].as_string() == "none");
  CHECK(table["rows"][1]["variant"].as_string() == "ape_learned");

  // Again: nothing trained, the runs untouched.
  const auto runs_before = snapshot(out + "/runs");
  r = run_ordo(command);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("0 run(s) pretrained, 0 resumed, 2 already trained"));
  CHECK(snapshot(out + "/runs") == runs_before);

  // A run stopped after its step-3 checkpoint resumes from it to the same weights;
  // one stopped before its first checkpoint starts again.
  const std::string last = out + "/runs/02_ape_learned/checkpoints/step_000000006";
  const std::string weights = read_file(last + "/model.safetensors");
  std::filesystem::remove_all(last);
  std::filesystem::remove_all(out + "/runs/01_none/checkpoints");
  r = run_ordo(command);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("02_ape_learned: resuming at step 3 of 6"));
  CHECK_THAT(r.output, Contains("1 run(s) pretrained, 1 resumed, 0 already trained"));
  CHECK(read_file(last + "/model.safetensors") == weights);
}

TEST_CASE("ordo experiment: another plan in the same --out, or a bad folder, is refused with nothing written",
          "[cli][experiment]") {
  TempDir dir("experiment-refused");
  const std::string cfg = make_folder(dir), out = dir / "out";
  // Probe-only failures first, on an empty --out: nothing is created.
  write_file_atomic(dir / "stray.txt", "x");
  CommandResult r = run_ordo("experiment " + cfg + " --out " + (dir / "stray.txt") + kSmall);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("holds no experiment"));
  r = run_ordo("experiment " + (dir / "nowhere") + " --out " + out + kSmall);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("is not a folder of run configs"));
  CHECK_FALSE(std::filesystem::exists(out));

  REQUIRE(run_ordo("experiment " + cfg + " --out " + out + " --set train.steps=3" + kSmall).exit_code == 0);
  const auto before = snapshot(out);
  r = run_ordo("experiment " + cfg + " --out " + out + kSmall);  // train.steps=6 now
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("holds another experiment") && Contains("differs at 'overrides'"));
  r = run_ordo("experiment " + cfg + " --out " + out + " --set train.steps=3" + kSmall + " --probe-layer all");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("differs at 'probe.layers'"));
  // An edited config file: the plan names the config and the key.
  std::string text = read_file(cfg + "/02_ape_learned.json");
  text.insert(text.rfind('}'), ", \"train\": {\"lr\": 0.5}");
  write_file_atomic(cfg + "/02_ape_learned.json", text);
  r = run_ordo("experiment " + cfg + " --out " + out + " --set train.steps=3" + kSmall);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("differs at 'configs.02_ape_learned.train.lr'"));
  // A paper row naming no config.
  std::filesystem::remove(cfg + "/02_ape_learned.json");
  r = run_ordo("experiment " + cfg + " --out " + (dir / "other") + kSmall);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("row '02_ape_learned' names no config"));
  CHECK(snapshot(out) == before);
  CHECK_FALSE(std::filesystem::exists(dir / "other"));
}
