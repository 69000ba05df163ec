// `ordo finetune` end to end on a small model: a GLUE-layout task and SQuAD
// v2.0 from the synthetic tasks, a bare BertModel checkpoint (no MLM head, no
// "bert." prefix, no pooler), a causal decoder, the official scorer agreeing
// with the run's own evaluation, and bad inputs refused before anything is
// written.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file_io.h"
#include "base/json.h"
#include "base/subprocess.h"
#include "downstream/glue.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"
#include "tests/tools/disk_state.h"

using ordo::test::run_ordo;
using ordo::test::TempDir;
namespace json = ordo::json;
using Catch::Matchers::Contains;

namespace {

const char* kRunConfig =
    R"({"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,)"
    R"( "max_position_embeddings": 64},)"
    R"( "data": {"synthetic_sentences": 300, "vocab_size": 200, "held_out_fraction": 0.1},)"
    R"( "train": {"steps": 2, "batch_size": 4, "max_seq_length": 32, "eval_every": 0, "device": "cpu"}})";

const char* kFast = " --quiet --set train.epochs=2 --set train.batch_size=8 --set train.max_seq_length=48 "
                    "--set train.lr=1e-3 --set train.device=cpu";

// A pretrained run and the synthetic tasks of its corpus, made once.
struct Fixture {
  TempDir dir{"finetune"};
  std::string run = dir / "run";
  std::string tasks = dir / "tasks";
  Fixture() {
    std::ofstream(dir / "run.json") << kRunConfig;
    REQUIRE(run_ordo("pretrain --quiet --config " + (dir / "run.json") + " --out " + run).exit_code == 0);
    REQUIRE(run_ordo("data tasks --from " + run + " --out " + tasks).exit_code == 0);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

ordo::test::CommandResult finetune(const std::string& args) { return run_ordo("finetune" + std::string(kFast) + " " + args); }

}  // namespace

TEST_CASE("finetune: subject_number's role swap, the answers it changes counted pair by pair", "[cli][finetune]") {
  Fixture& f = fixture();
  const std::string out = f.dir / "subject_number";
  auto r = finetune("--checkpoint " + f.run + " --task sst2 --data " + f.tasks + "/subject_number --out " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json::Value run = json::parse(ordo::read_file(out + "/results.json"))["learning_rates"][0]["runs"][0];
  const std::string dir = out + "/runs/" + run["run"].as_string();
  const auto& sst2 = ordo::downstream::glue_task("sst2");
  const auto original = ordo::downstream::read_glue(sst2, f.tasks + "/subject_number/dev_roles_original.tsv");
  const auto swapped = ordo::downstream::read_glue(sst2, f.tasks + "/subject_number/dev_roles_swapped.tsv");
  const auto before = ordo::downstream::read_glue_submission(dir + "/dev_roles_original_predictions.tsv", original).labels;
  const auto after = ordo::downstream::read_glue_submission(dir + "/dev_roles_swapped_predictions.tsv", swapped).labels;
  REQUIRE(before.size() == after.size());
  REQUIRE(!before.empty());
  int changed = 0;
  for (size_t i = 0; i < before.size(); ++i) changed += before[i] != after[i];
  CHECK(run["best"]["dev_roles_swapped"]["answers_changed"].as_number() ==
        Approx(static_cast<double>(changed) / static_cast<double>(before.size())).epsilon(1e-12));
  CHECK_FALSE(run["best"]["dev_roles_original"].contains("answers_changed"));
}

TEST_CASE("finetune: a GLUE-layout task end to end, ordo score agrees with the run's dev metrics", "[cli][finetune]") {
  Fixture& f = fixture();
  const std::string out = f.dir / "roles";
  auto r = finetune("--checkpoint " + f.run + " --task rte --data " + f.tasks + "/roles --out " + out + " --seeds 2");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value results = json::parse(ordo::read_file(out + "/results.json"));
  const json::Value& lr = results["learning_rates"][0];
  REQUIRE(lr["runs"].size() == 2);
  CHECK(lr["summary"]["score"]["runs"].as_int() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const json::Value& run = lr["runs"][k];
    const std::string dir = out + "/runs/" + run["run"].as_string();
    // The scorer reads the submission file and the dev TSV on its own.
    auto scored = run_ordo("score --task rte --data " + f.tasks + "/roles/dev.tsv --predictions " + dir +
                           "/dev_predictions.tsv");
    REQUIRE(scored.exit_code == 0);
    CHECK(json::parse(scored.output)["accuracy"].as_number() == run["best"]["dev"]["accuracy"].as_number());
    // The probes are evaluated and predicted beside dev.
    CHECK(run["best"].contains("dev_shuffle_sr"));
    CHECK(ordo::file_exists(dir + "/dev_shuffle_sr_predictions.tsv"));
    // The fraction of answers the swap changes, recounted from the two prediction files pair by pair.
    const auto& rte = downstream::glue_task("rte");
    const auto original = downstream::read_glue(rte, f.tasks + "/roles/dev_sr_original.tsv");
    const auto swapped = downstream::read_glue(rte, f.tasks + "/roles/dev_shuffle_sr.tsv");
    const auto before = downstream::read_glue_submission(dir + "/dev_sr_original_predictions.tsv", original).labels;
    const auto after = downstream::read_glue_submission(dir + "/dev_shuffle_sr_predictions.tsv", swapped).labels;
    REQUIRE(before.size() == after.size());
    int changed = 0;
    for (size_t i = 0; i < before.size(); ++i) changed += before[i] != after[i];
    CHECK(run["best"]["dev_shuffle_sr"]["answers_changed"].as_number() ==
          Approx(static_cast<double>(changed) / static_cast<double>(before.size())).epsilon(1e-12));
    CHECK(ordo::file_exists(dir + "/test/RTE.tsv"));
    json::Value saved = json::parse(ordo::read_file(dir + "/best/config.json"));
    CHECK(saved["architectures"][0].as_string() == "BertForSequenceClassification");
    CHECK(saved["id2label"]["1"].as_string() == "not_entailment");
    // The best checkpoint fine-tunes again (its classifier is loaded, not made new).
    if (k == 0) {
      auto again = run_ordo("finetune --checkpoint " + dir + "/best --task rte --data " + f.tasks + "/roles --out " +
                            (f.dir / "again") + " --set train.epochs=1 --set train.max_seq_length=48");
      INFO(again.output);
      CHECK(again.exit_code == 0);
      CHECK_THAT(again.output, !Contains("new (not in the checkpoint"));
    }
  }
  // Seeds differ in what they draw: two runs, two different trainings.
  CHECK(ordo::read_file(out + "/runs/" + lr["runs"][0]["run"].as_string() + "/metrics.jsonl") !=
        ordo::read_file(out + "/runs/" + lr["runs"][1]["run"].as_string() + "/metrics.jsonl"));
}

TEST_CASE("finetune: SQuAD v2.0 from the synthetic tasks writes the official files and scores", "[cli][finetune]") {
  Fixture& f = fixture();
  const std::string out = f.dir / "squad2";
  auto r = finetune("--checkpoint " + f.run + " --task squad2 --data " + f.tasks + "/squad2 --out " + out +
                    " --set squad.doc_stride=16 --set squad.max_query_length=16");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value results = json::parse(ordo::read_file(out + "/results.json"));
  const json::Value& run = results["learning_rates"][0]["runs"][0];
  const std::string dir = out + "/runs/" + run["run"].as_string();
  auto scored = run_ordo("score --task squad2 --data " + f.tasks + "/squad2/dev-v2.0.json --predictions " + dir +
                         "/predictions.json --na-probs " + dir + "/null_odds.json");
  INFO(scored.output);
  REQUIRE(scored.exit_code == 0);
  json::Value official = json::parse(scored.output);
  CHECK(official["f1"].as_number() == run["best"]["dev"]["f1"].as_number());
  CHECK(official["HasAns_total"].as_int() > 0);
  CHECK(official["NoAns_total"].as_int() > 0);
  CHECK(ordo::file_exists(dir + "/nbest_predictions.json"));
}

TEST_CASE("finetune: a bare BertModel checkpoint (no heads, no prefix, no pooler) fine-tunes and says what is new",
          "[cli][finetune]") {
  Fixture& f = fixture();
  const std::string bare = f.dir / "bare";
  ordo::make_directories(bare);
  const std::string checkpoint = f.run + "/checkpoints/step_000000002";
  auto tensors = ordo::safetensors::load(checkpoint + "/model.safetensors");
  std::vector<std::pair<std::string, ordo::Tensor>> kept;
  for (auto& [name, t] : tensors) {
    if (name.rfind("bert.", 0) != 0 || name.rfind("bert.pooler.", 0) == 0) continue;
    kept.emplace_back(name.substr(5), t);  // AutoModel.save_pretrained's names
  }
  ordo::safetensors::save(bare + "/model.safetensors", kept);
  ordo::write_file_atomic(bare + "/config.json", ordo::read_file(checkpoint + "/config.json"));
  ordo::write_file_atomic(bare + "/vocab.txt", ordo::read_file(f.run + "/vocab.txt"));
  auto r = run_ordo("finetune --checkpoint " + bare + " --task sst2 --data " + f.tasks + "/tense --out " +
                    (f.dir / "bare_out") + " --set train.epochs=1 --set train.max_seq_length=48");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("new (not in the checkpoint, initialised): bert.pooler.dense.weight"));
  CHECK_THAT(r.output, Contains("new (not in the checkpoint, initialised): classifier.weight"));
}

TEST_CASE("finetune: a SentEval probing file, its own classes, va choosing and te evaluated beside",
          "[cli][finetune][senteval]") {
  Fixture& f = fixture();
  const std::string out = f.dir / "length";
  auto r = finetune("--checkpoint " + f.run + " --task senteval --data " + f.tasks + "/sentence_length --out " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json::Value results = json::parse(ordo::read_file(out + "/results.json"));
  const json::Value& run = results["learning_rates"][0]["runs"][0];
  const std::string dir = out + "/runs/" + run["run"].as_string();
  json::Value saved = json::parse(ordo::read_file(dir + "/best/config.json"));
  CHECK(saved["id2label"]["5"].as_string() == "5");
  CHECK(saved["finetuning_task"].as_string() == "senteval");
  // The test partition's accuracy, counted here from the file and the predictions written.
  std::vector<std::string> gold;
  std::istringstream file(ordo::read_file(f.tasks + "/sentence_length/sentence_length.txt"));
  for (std::string line; std::getline(file, line);)
    if (line.rfind("te\t", 0) == 0) gold.push_back(line.substr(3, line.find('\t', 3) - 3));
  std::istringstream predicted(ordo::read_file(dir + "/test_predictions.tsv"));
  std::string line;
  std::getline(predicted, line);
  CHECK(line == "index\tprediction");
  size_t n = 0, right = 0;
  for (; std::getline(predicted, line); ++n) {
    REQUIRE(n < gold.size());
    CHECK(line.substr(0, line.find('\t')) == std::to_string(n));
    right += line.substr(line.find('\t') + 1) == gold[n];
  }
  REQUIRE(n == gold.size());
  CHECK(run["best"]["test"]["accuracy"].as_number() == Approx(static_cast<double>(right) / n).epsilon(1e-12));
  CHECK(ordo::file_exists(dir + "/dev_predictions.tsv"));

  // The file itself works as --data; a folder with two .txt files is refused.
  auto direct = finetune("--checkpoint " + f.run + " --task senteval --data " + f.tasks +
                         "/tree_depth/tree_depth.txt --out " + (f.dir / "depth") + " --set train.epochs=1");
  INFO(direct.output);
  CHECK(direct.exit_code == 0);
  const std::string two = f.dir / "two_files";
  ordo::make_directories(two);
  ordo::write_file_atomic(two + "/a.txt", "tr\t0\ta .\nva\t1\tb .\ntr\t1\tc .\n");
  ordo::write_file_atomic(two + "/b.txt", "tr\t0\ta .\n");
  auto refused = finetune("--checkpoint " + f.run + " --task senteval --data " + two + " --out " + (f.dir / "none"));
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.output, Contains("reads one SentEval .txt file; the folder has 2"));
  CHECK_FALSE(ordo::file_exists(f.dir / "none"));
}

TEST_CASE("finetune: a causal decoder run fine-tunes both heads, its classifier on the last real token",
          "[cli][finetune]") {
  Fixture& f = fixture();
  const std::string decoder = f.dir / "decoder_run";
  auto pretrained = run_ordo("pretrain --quiet --config " + (f.dir / "run.json") + " --out " + decoder +
                             " --set data.objective=causal --set model.decoder=true");
  INFO(pretrained.output);
  REQUIRE(pretrained.exit_code == 0);
  auto classified = finetune("--checkpoint " + decoder + " --task sst2 --data " + f.tasks + "/tense --out " +
                             (f.dir / "decoder_tense") + " --set train.epochs=1");
  INFO(classified.output);
  REQUIRE(classified.exit_code == 0);
  // The kept model is a decoder with a classifier and no pooler.
  json::Value results = json::parse(ordo::read_file(f.dir / "decoder_tense/results.json"));
  const std::string best =
      f.dir / ("decoder_tense/runs/" + results["learning_rates"][0]["runs"][0]["run"].as_string() + "/best");
  CHECK(json::parse(ordo::read_file(best + "/config.json"))["is_decoder"].as_bool());
  size_t classifier = 0, pooler = 0;
  for (auto& [name, t] : ordo::safetensors::load(best + "/model.safetensors")) {
    classifier += name.rfind("classifier.", 0) == 0;
    pooler += name.rfind("bert.pooler.", 0) == 0;
  }
  CHECK(classifier == 2);
  CHECK(pooler == 0);
  auto spans = finetune("--checkpoint " + decoder + " --task squad --data " + f.tasks + "/squad --out " +
                        (f.dir / "decoder_squad") + " --set train.epochs=1 --set squad.doc_stride=16 "
                        "--set squad.max_query_length=16");
  INFO(spans.output);
  CHECK(spans.exit_code == 0);
}

TEST_CASE("finetune: from scratch with the run's position table copied in, and the dev accuracy by length",
          "[cli][finetune][position_init]") {
  Fixture& f = fixture();
  const std::string out = f.dir / "table3";
  std::string loud = kFast;
  loud.erase(loud.find(" --quiet"), 8);  // the header says what was copied from where
  auto r = run_ordo("finetune" + loud + " --checkpoint " + f.run + " --task sst2 --data " + f.tasks + "/tense --out " +
                    out + " --from-scratch --init-positions-from " + f.run + " --set model.num_attention_heads=4");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("random weights in the config of " + f.run) &&
                           Contains("with model {\"num_attention_heads\":4}; rows 0..63 of the position table of " +
                                    f.run + "/checkpoints/step_000000002 (ape_learned), trained with the rest"));
  json::Value config = json::parse(ordo::read_file(out + "/config.json"));
  CHECK(config["model"]["num_attention_heads"].as_int() == 4);
  CHECK_THAT(config["init_positions_from"].as_string(), Contains("step_000000002"));
  const json::Value results = json::parse(ordo::read_file(out + "/results.json"));
  const json::Value& run = results["learning_rates"][0]["runs"][0];
  // The saved model has the fresh shape; its table was trained from the copy.
  CHECK(json::parse(ordo::read_file(out + "/runs/" + run["run"].as_string() + "/best/config.json"))["num_attention_heads"]
            .as_int() == 4);
  // The bins partition the dev set, and their correct predictions add up to its accuracy.
  const json::Value& by_length = run["best_by_length"]["dev"];
  CHECK(by_length["unit"].as_string() == "words");
  int64_t n = 0, correct = 0;
  for (const json::Value& bin : by_length["bins"].as_array()) n += bin["n"].as_int(), correct += bin["correct"].as_int();
  const std::string dev = ordo::read_file(f.tasks + "/tense/dev.tsv");
  CHECK(n == static_cast<int64_t>(std::count(dev.begin(), dev.end(), '\n')) - 1);  // less the header
  CHECK(static_cast<double>(correct) / static_cast<double>(n) == Approx(run["best"]["dev"]["accuracy"].as_number()));
}

TEST_CASE("finetune: bad inputs are refused before anything is written", "[cli][finetune][errors]") {
  Fixture& f = fixture();
  TempDir scratch("finetune_bad");
  // A task folder with a row that has the wrong number of columns.
  const std::string bad = scratch / "bad";
  ordo::make_directories(bad);
  ordo::write_file_atomic(bad + "/train.tsv", "sentence\tlabel\nthe dog ran .\t1\nthe cat\tsat\t0\n");
  ordo::write_file_atomic(bad + "/dev.tsv", "sentence\tlabel\nthe dog ran .\t1\n");
  // An existing output with something in it, which must survive every refusal.
  const std::string out = scratch / "out";
  ordo::make_directories(out);
  ordo::write_file_atomic(out + "/keep.txt", "mine");
  const std::string base = "finetune --checkpoint " + f.run + " ";
  const std::string twin = std::string(ORDO_SOURCE_DIR) + "/tests/data/twin/";
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--task sst2 --data " + bad + " --out " + out + " --overwrite", "train.tsv:3"},
      {"--task sst3 --data " + bad + " --out " + out, "unknown task 'sst3'"},
      {"--task rte --data " + scratch / "nowhere" + " --out " + out, "not a directory"},
      {"--task sst2 --data " + f.tasks + "/tense --out " + out, "--overwrite"},
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --set train.lr=-1", "'lr'"},
      {"--task sst2 --data " + f.tasks + "/roles --out " + out + " --overwrite", "roles/train.tsv"},
      {"--task squad --data " + f.tasks + "/squad2 --out " + out + " --overwrite", "train-v1.1.json"},
      // A fresh model's shape and its copied position table (Wang & Chen 2020, Table 3).
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --set model.num_hidden_layers=1",
       "model.num_hidden_layers: the model config's keys shape a fresh model (--from-scratch)"},
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --init-positions-from " + f.run,
       "give --from-scratch too"},
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --from-scratch --init-positions-from " +
           twin + "relative_key",
       "its position encoding 'rpe_shaw' adds nothing at the input: there is no absolute position table to copy"},
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --from-scratch --init-positions-from " +
           twin + "bert",
       "its position table is 32 wide, the fresh model's hidden_size is 16 (set model.hidden_size=32"},
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --from-scratch --init-positions-from " +
           twin + "gpt2_tied --set model.hidden_size=24 --set train.max_seq_length=48",
       "its position table has 19 rows, fewer than train.max_seq_length 48"},
      // Runs at once that would share the cores.
      {"--task sst2 --data " + f.tasks + "/tense --out " + out + " --overwrite --set train.parallel_runs=2" +
           " --set train.threads=" + std::to_string(ordo::available_cores()),
       "runs that share a core only slow each other"},
  };
  const auto before = ordo::test::snapshot(scratch.path);
  for (const Case& c : cases) {
    auto r = run_ordo(base + c.args);
    INFO("ordo " << base << c.args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains(c.message));
  }
  CHECK(ordo::test::snapshot(scratch.path) == before);
  CHECK(ordo::read_file(out + "/keep.txt") == "mine");
}

TEST_CASE("finetune: a SQuAD training answer not at its offset is skipped, counted and said", "[cli][finetune][errors]") {
  Fixture& f = fixture();
  TempDir scratch("finetune_squad");
  const std::string context = "the dog chased the cat .";
  auto file = [&](bool bad) {
    return std::string(R"({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": ")") + context +
           R"(", "qas": [{"id": "q1", "question": "who chased the cat ?", "answers": [{"text": "the dog", "answer_start": 0}]},)"
           R"( {"id": "q2", "question": "the dog chased whom ?", "answers": [{"text": "the cat", "answer_start": )" +
           (bad ? "2" : "15") + "}]}]}]}]}";
  };
  scratch.write("train-v1.1.json", file(/*bad=*/true));
  scratch.write("dev-v1.1.json", file(/*bad=*/false));
  auto r = run_ordo("finetune --quiet --checkpoint " + f.run + " --task squad --data " + scratch.path + " --out " +
                    (scratch / "out") + " --set train.epochs=1 --set train.max_seq_length=32");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("skipped 1 training question") && Contains("q2"));
}

TEST_CASE("finetune: every GLUE layout and SQuAD v1.1/v2.0 as shipped, scored with the task's official keys",
          "[cli][finetune]") {
  Fixture& f = fixture();
  namespace fs = std::filesystem;
  const std::string data = std::string(ORDO_SOURCE_DIR) + "/tests/data/downstream";
  struct Case {
    std::string folder, task;
    std::vector<std::string> keys;  // of results' best dev metrics
    std::vector<std::string> dev_sets, submissions;
  } cases[] = {
      {"CoLA", "cola", {"mcc"}, {"dev"}, {"CoLA.tsv"}},
      {"SST-2", "sst2", {"accuracy"}, {"dev"}, {"SST-2.tsv"}},
      {"MRPC", "mrpc", {"accuracy", "f1"}, {"dev"}, {"MRPC.tsv"}},
      {"STS-B", "stsb", {"pearson", "spearman"}, {"dev"}, {"STS-B.tsv"}},
      {"QQP", "qqp", {"accuracy", "f1"}, {"dev"}, {"QQP.tsv"}},
      {"MNLI", "mnli", {"accuracy"}, {"dev_matched", "dev_mismatched"}, {"MNLI-m.tsv"}},
      {"QNLI", "qnli", {"accuracy"}, {"dev"}, {}},
      {"RTE", "rte", {"accuracy"}, {"dev"}, {"RTE.tsv"}},
      {"WNLI", "wnli", {"accuracy"}, {"dev"}, {}},
      {"squad", "squad", {"exact_match", "f1"}, {"dev"}, {}},
      {"squad", "squad2", {"exact", "f1", "HasAns_total", "NoAns_total", "best_f1"}, {"dev"}, {}},
  };
  for (const Case& c : cases) {
    INFO(c.task);
    // The shipped files, the dev set doubling as the training set where the folder has none.
    TempDir folder("glue_" + c.task);
    for (const auto& entry : fs::directory_iterator(data + "/" + c.folder)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("pred", 0) == 0 || name.rfind("na_probs", 0) == 0) continue;
      if (c.task == "squad" && name.find("v2.0") != std::string::npos) continue;
      if (c.task == "squad2" && name.find("v1.1") != std::string::npos) continue;
      fs::copy_file(entry.path(), folder / name);
    }
    const bool squad = c.task == "squad" || c.task == "squad2";
    const std::string dev = squad ? (c.task == "squad" ? "dev-v1.1.json" : "dev-v2.0.json")
                                  : c.task == "mnli" ? "dev_matched.tsv" : "dev.tsv";
    const std::string train = squad ? "train" + dev.substr(3) : "train.tsv";
    if (!ordo::file_exists(folder / train)) fs::copy_file(folder / dev, folder / train);
    const std::string out = folder / "out";
    auto r = run_ordo("finetune --quiet --checkpoint " + f.run + " --task " + c.task + " --data " + folder.path +
                      " --out " + out + " --set train.epochs=1 --set train.batch_size=4 --set train.max_seq_length=48" +
                      " --set squad.doc_stride=16 --set squad.max_query_length=16");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const json::Value results = json::parse(ordo::read_file(out + "/results.json"));
    const json::Value& run = results["learning_rates"][0]["runs"][0];
    for (const std::string& set : c.dev_sets)
      for (const std::string& key : c.keys) {
        INFO(set << " " << key);
        CHECK(run["best"][set].contains(key));
      }
    const std::string dir = out + "/runs/" + run["run"].as_string();
    for (const std::string& submission : c.submissions) CHECK(ordo::file_exists(dir + "/test/" + submission));
  }
}

namespace {

// A run's logged lines without the throughput (a measurement, not a result).
std::string without_throughput(const std::string& metrics) {
  std::string out;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    json::Value v = json::parse(line);
    v.erase("tokens_per_s");
    out += json::dump(v) + "\n";
  }
  return out;
}

// The folders a parallel grid's workers write in, left beside `out`.
std::vector<std::string> worker_folders(const std::string& out) {
  std::vector<std::string> found;
  const std::filesystem::path o(out);
  for (const auto& e : std::filesystem::directory_iterator(o.parent_path()))
    if (e.path().filename().string().rfind("." + o.filename().string() + ".ordo-worker-", 0) == 0) found.push_back(e.path());
  return found;
}

}  // namespace

TEST_CASE("finetune: train.parallel_runs runs the grid as processes at once, each run as it is alone",
          "[cli][finetune][determinism]") {
  Fixture& f = fixture();
  TempDir scratch("finetune_parallel");
  // Three runs: on two cores the first runs alone on both, then two at once on one each (no thread count
  // given: ordo shares the cores); one after another, each has every core.
  const std::string grid = "--checkpoint " + f.run + " --task rte --data " + f.tasks +
                           "/roles --lr 1e-3,3e-4,1e-4 --set train.log_every=1 --set train.max_train_examples=60 ";
  // Two threads alone, one in a worker: the same bits by construction in the
  // deterministic mode (every sum in an order no thread count changes). With
  // OpenBLAS it holds only where its kernels' sums do not depend on the
  // thread count (its SkylakeX kernels here; not its Haswell/Zen ones).
  const std::string deterministic = "ORDO_DETERMINISTIC=1 ";
  const std::string alone = scratch / "alone", together = scratch / "together";
  auto one_by_one = run_ordo("finetune" + std::string(kFast) + " " + grid + "--out " + alone, deterministic);
  INFO(one_by_one.output);
  REQUIRE(one_by_one.exit_code == 0);
  std::string loud = kFast;  // the run lines say what went at once
  loud.erase(loud.find(" --quiet"), 8);
  auto at_once = run_ordo("finetune" + loud + " " + grid + "--set train.parallel_runs=2 --out " + together + "/",
                          deterministic);
  INFO(at_once.output);
  REQUIRE(at_once.exit_code == 0);
  CHECK_THAT(at_once.output, Contains("up to 2 runs at once"));
  CHECK_THAT(at_once.output, Contains("run lr_0.0001_seed_42: finished"));
  CHECK_THAT(at_once.output, Contains("run lr_0.001_seed_42: started"));
  // The same results, run by run: the losses of every step, the dev scores, the saved models' bytes.
  json::Value a = json::parse(ordo::read_file(alone + "/results.json"));
  json::Value b = json::parse(ordo::read_file(together + "/results.json"));
  CHECK(json::dump(a) == json::dump(b));
  REQUIRE(b["learning_rates"].size() == 3);
  for (const json::Value& entry : b["learning_rates"].as_array())
    for (const json::Value& run : entry["runs"].as_array()) {
      const std::string name = "/runs/" + run["run"].as_string();
      INFO(name);
      CHECK(run["finished"].as_bool());
      CHECK(without_throughput(ordo::read_file(alone + name + "/metrics.jsonl")) ==
            without_throughput(ordo::read_file(together + name + "/metrics.jsonl")));
      CHECK(ordo::read_file(alone + name + "/best/model.safetensors") ==
            ordo::read_file(together + name + "/best/model.safetensors"));
      CHECK(ordo::read_file(alone + name + "/dev_predictions.tsv") ==
            ordo::read_file(together + name + "/dev_predictions.tsv"));
    }
  CHECK(worker_folders(together).empty());
  // How many go at once is not the grid's identity: the same grid continues under another count.
  auto again = finetune(grid + "--set train.parallel_runs=0 --out " + together);
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Contains("3 run(s) finished"));
  CHECK_THAT(again.output, Contains("3 of 3 run(s) finished before"));
}

TEST_CASE("finetune: a signal to a parallel grid stops its workers, keeps what ran and the grid continues",
          "[cli][finetune]") {
  Fixture& f = fixture();
  TempDir scratch("finetune_parallel_stop");
  const std::string out = scratch / "grid";
  // SIGTERM to the grid's process alone (as Slurm or a scheduler sends it), once its folder is in place.
  const std::string grid = "--checkpoint " + f.run + " --task rte --data " + f.tasks +
                           "/roles --seeds 3 --set train.threads=1 --set train.parallel_runs=2 --out " + out;
  auto r = run_ordo("finetune --quiet --set train.device=cpu --set train.max_seq_length=48 --set train.epochs=100000 " +
                    grid + " 2>&1 & pid=$!; for i in $(seq 1200); do test -f " + out +
                    "/config.json && break; sleep 0.05; done; kill -TERM $pid; wait $pid; echo \"exit status $?\"");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("exit status 130"));
  CHECK_THAT(r.output, Contains("stopped by SIGTERM (the same command continues the grid)"));
  CHECK(worker_folders(out).empty());
  // The runs that had begun (one or both of the two at once) are listed as unfinished, each with its
  // folder; the third never started.
  json::Value results = json::parse(ordo::read_file(out + "/results.json"));
  REQUIRE(results["learning_rates"].size() == 1);
  const json::Value& runs = results["learning_rates"][0]["runs"];
  CHECK((runs.size() == 1 || runs.size() == 2));
  for (const json::Value& run : runs.as_array()) {
    CHECK_FALSE(run["finished"].as_bool());
    CHECK(run["seed"].as_int() != 44);
    CHECK(ordo::file_exists(out + "/runs/" + run["run"].as_string() + "/metrics.jsonl"));
  }
}

TEST_CASE("finetune: a killed parallel grid's workers stop, and the next call removes the folders they left",
          "[cli][finetune]") {
  Fixture& f = fixture();
  TempDir scratch("finetune_parallel_kill");
  const std::string out = scratch / "grid";
  const std::string grid = "finetune --quiet --set train.device=cpu --set train.max_seq_length=48 --checkpoint " +
                           f.run + " --task rte --data " + f.tasks +
                           "/roles --seeds 2 --set train.threads=1 --set train.parallel_runs=2 --out " + out;
  // SIGKILL: the grid's process cannot clean up; its workers get SIGTERM from the kernel (PR_SET_PDEATHSIG).
  // The workers are found by their --out (the pattern "[.]" so that it does not match this shell's own line).
  const std::string workers = "pgrep -f -- '" + out + "[.]worker-' > /dev/null";
  auto r = run_ordo(grid + " --set train.epochs=100000 2>&1 & pid=$!; for i in $(seq 1200); do test -f " + out +
                    "/config.json && break; sleep 0.05; done; kill -KILL $pid; wait $pid; echo \"exit status $?\"; " +
                    "for i in $(seq 1200); do " + workers + " || break; sleep 0.05; done; " + workers +
                    " && echo 'workers alive' || echo 'workers gone'");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("exit status 137"));
  CHECK_THAT(r.output, Contains("workers gone"));
  CHECK(worker_folders(out).size() == 2);
  auto again = run_ordo(grid + " --overwrite --set train.epochs=1");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Contains("removed 2 folder(s) that the workers of a killed grid left beside"));
  CHECK(worker_folders(out).empty());
}
