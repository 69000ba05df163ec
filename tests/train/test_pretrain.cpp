// The pretraining loop: it learns, it resumes exactly, it refuses bad runs.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/file_io.h"
#include "base/sha256.h"
#include "nn/checkpoint.h"
#include "tensor/safetensors.h"
#include "tensor/cpu/gemm_amx.h"
#include "tests/helpers.h"
#include "tests/train/learning_curve.h"
#include "train/pretrain.h"

using namespace ordo;
using Catch::Contains;

namespace {

// A fresh run directory, inside one folder per test process that is removed
// with everything in it when the process exits (ctest runs each case alone).
std::string temp_dir(const std::string& name) {
  static const test::TempDir root("pretrain");
  std::string dir = root / name;
  std::filesystem::remove_all(dir);
  return dir;
}

// A small model on a small synthetic corpus: seconds per run.
json::Value small_config() {
  return json::parse(R"({
    "model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 64},
    "data": {"corpus": "synthetic", "synthetic_sentences": 600, "vocab_size": 300, "held_out_fraction": 0.1,
             "max_predictions_per_seq": 8},
    "train": {"steps": 12, "batch_size": 4, "max_seq_length": 32, "lr": 1e-3, "warmup_steps": 2,
              "log_every": 1, "eval_every": 6, "eval_batches": 2, "device": "cpu"}
  })");
}

std::vector<json::Value> metrics(const std::string& run) {
  std::vector<json::Value> lines;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    json::Value v = json::parse(line);
    if (json::Value* t = v.find("tokens_per_s")) *t = 0.0;  // a timing, not a result
    lines.push_back(v);
  }
  return lines;
}

train::PretrainOptions options(const std::string& out) {
  train::PretrainOptions o;
  o.out = out;
  o.quiet = true;
  return o;
}

// A run of `config` stopped after two steps, with NaN written into row `row`
// of `weight` in the checkpoint a resume starts from; returns its directory.
std::string stopped_run_with_nan(const train::RunConfig& config, const std::string& name, const std::string& weight,
                                 int64_t row) {
  std::string dir = temp_dir(name);
  train::PretrainOptions first = options(dir);
  first.stop_after = 2;
  train::pretrain(config, first);
  std::string path = dir + "/checkpoints/step_000000002/model.safetensors";
  auto tensors = safetensors::load(path);
  for (auto& [tensor_name, t] : tensors)
    if (tensor_name == weight) t.select(0, row).fill_(NAN);
  safetensors::save(path, tensors);
  // The checkpoint vouches for the planted weights (as if they had been saved so), so that resuming
  // reaches the step that meets them rather than refusing a changed file.
  const std::string state_path = dir + "/checkpoints/step_000000002/trainer_state.json";
  json::Value state = json::parse_file(state_path);
  state["sha256"]["model.safetensors"] = sha256_file(path);
  write_file_atomic(state_path, json::dump(state, 2));
  return dir;
}

}  // namespace

TEST_CASE("a resumed run continues bit for bit like an uninterrupted one", "[pretrain][determinism]") {
  train::RunConfig config = train::parse_run_config(small_config(), {}, "test");
  std::string whole = temp_dir("whole"), split = temp_dir("split");
  CHECK(train::pretrain(config, options(whole)).steps == 12);
  train::PretrainOptions first = options(split);
  first.stop_after = 5;
  CHECK(train::pretrain(config, first).steps == 5);
  CHECK(file_exists(split + "/checkpoints/step_000000005/trainer_state.json"));
  CHECK(train::resume_pretrain(options(split)).steps == 7);
  std::vector<json::Value> a = metrics(whole), b = metrics(split);
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() == 14);  // 12 step lines and 2 evaluations
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("line " << i << ": " << json::dump(a[i]) << " vs " << json::dump(b[i]));
    CHECK(a[i] == b[i]);  // exact: every double compared by value
  }
  // The final checkpoints hold identical weights.
  auto wa = safetensors::load(whole + "/checkpoints/step_000000012/model.safetensors");
  auto wb = safetensors::load(split + "/checkpoints/step_000000012/model.safetensors");
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) CHECK(ordo::test::bit_identical(wa[i].second, wb[i].second));
}

TEST_CASE("train.checkpoint_initial writes step 0, the weights as initialised: resumed from it, the run is the same",
          "[pretrain][determinism]") {
  json::Value c = small_config();
  c["train"]["steps"] = 4;
  c["train"]["eval_every"] = 0;
  c["train"]["checkpoint_initial"] = true;
  train::RunConfig config = train::parse_run_config(c, {}, "test");
  std::string whole = temp_dir("initial"), again = temp_dir("from_initial");
  CHECK(train::pretrain(config, options(whole)).steps == 4);
  REQUIRE(file_exists(whole + "/checkpoints/step_000000000/model.safetensors"));
  // Only step 0 kept: a resume must train all four steps from it and end where the whole run ended,
  // which it does only if step 0 holds the initial weights, optimizer and data order.
  std::filesystem::copy(whole, again, std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(again + "/checkpoints/step_000000004");
  CHECK(train::resume_pretrain(options(again)).steps == 4);
  auto wa = safetensors::load(whole + "/checkpoints/step_000000004/model.safetensors");
  auto wb = safetensors::load(again + "/checkpoints/step_000000004/model.safetensors");
  auto w0 = safetensors::load(whole + "/checkpoints/step_000000000/model.safetensors");
  REQUIRE(wa.size() == wb.size());
  bool trained = false;
  for (size_t i = 0; i < wa.size(); ++i) {
    CHECK(ordo::test::bit_identical(wa[i].second, wb[i].second));
    trained = trained || !ordo::test::bit_identical(wa[i].second, w0[i].second);
  }
  CHECK(trained);
}

// Wang et al. 2021 continue BERT-base with each PE in place of its table: the
// run's step 0 must hold the source's every other weight, and the new PE's
// own parameters exactly as a run without the warm start initialises them.
TEST_CASE("train.init_from starts from another run's weights but its own position encoding's, refusals name the key",
          "[pretrain]") {
  json::Value c = small_config();
  c["train"]["steps"] = 2;
  c["train"]["eval_every"] = 0;
  const std::string source = temp_dir("init_source");
  train::pretrain(train::parse_run_config(c, {}, "test"), options(source));
  // A run's checkpoint of `step`, tensor by name.
  auto tensors = [](const std::string& run, const std::string& step = "000000000") {
    std::map<std::string, Tensor> by_name;
    for (auto& [name, t] : safetensors::load(run + "/checkpoints/step_" + step + "/model.safetensors")) by_name[name] = t;
    return by_name;
  };
  const std::map<std::string, Tensor> trained = tensors(source, "000000002");
  const std::string table = "bert.embeddings.position_embeddings.weight";
  REQUIRE(trained.count(table));

  c["train"]["checkpoint_initial"] = true;
  c["train"]["steps"] = 1;
  c["train"]["warmup_steps"] = 0;
  c["model"]["pe"] = "t5_bias";  // its own bucket table; no absolute one
  const train::RunConfig fresh = train::parse_run_config(c, {}, "test");
  c["train"]["init_from"] = source;
  c["data"]["vocab"] = source + "/vocab.txt";
  const train::RunConfig warm = train::parse_run_config(c, {}, "test");
  const std::string fresh_run = temp_dir("init_fresh"), warm_run = temp_dir("init_warm");
  train::pretrain(fresh, options(fresh_run));
  train::pretrain(warm, options(warm_run));
  const auto f = tensors(fresh_run), w = tensors(warm_run);
  REQUIRE(f.size() == w.size());
  int from_source = 0, own = 0;
  for (const auto& [name, t] : w) {
    INFO(name);
    CHECK_FALSE(name == table);  // the source's table is left out
    auto it = trained.find(name);
    if (it != trained.end()) {
      CHECK(ordo::test::bit_identical(t, it->second));
      ++from_source;
    } else {
      CHECK(ordo::test::bit_identical(t, f.at(name)));  // the PE's, as initialised without a warm start
      ++own;
    }
  }
  CHECK(from_source == static_cast<int>(trained.size()) - 1);
  CHECK(own >= 1);
  // The same PE keeps the source's table.
  c["model"]["pe"] = "ape_learned";
  const std::string same_run = temp_dir("init_same");
  train::pretrain(train::parse_run_config(c, {}, "test"), options(same_run));
  CHECK(ordo::test::bit_identical(tensors(same_run).at(table), trained.at(table)));

  // Refused before anything is written, naming what differs.
  auto refused = [&](const std::vector<std::string>& sets) {
    const std::string out = temp_dir("init_refused");
    try {
      train::pretrain(train::parse_run_config(c, sets, "test"), options(out));
    } catch (const Error& e) {
      CHECK_FALSE(std::filesystem::exists(out));
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  CHECK_THAT(refused({"model.num_hidden_layers=3"}),
             Contains("its model has num_hidden_layers = 2, this config 3 (model.num_hidden_layers)"));
  CHECK_THAT(refused({"data.vocab=\"\""}), Contains("needs data.vocab: the checkpoint's vocabulary"));
  CHECK_THAT(refused({"train.init_from=\"" + source + "/nowhere\""}), Contains("train.init_from " + source + "/nowhere: not a directory"));
  CHECK_THAT(refused({"model.max_position_embeddings=48"}),
             Contains("tensor 'bert.embeddings.position_embeddings.weight' has shape [64, 32], the model expects [48, 32]"));
}

TEST_CASE("a tiny model overfits a handful of sentences", "[pretrain]") {
  std::string dir = temp_dir("overfit");
  ::mkdir(dir.c_str(), 0777);
  std::ofstream(dir + "/corpus.txt") << "the dog chased the cat .\nthe cat saw a bird near the house .\n"
                                        "a small boy ran to the old man .\nthe old man gave the boy a red ball .\n";
  json::Value c = small_config();
  c["data"] = json::parse(R"({"corpus": "", "held_out_fraction": 0, "vocab_size": 120, "vocab_min_frequency": 1,
                              "max_predictions_per_seq": 6})");
  c["data"]["corpus"] = dir + "/corpus.txt";
  c["model"]["hidden_size"] = 64;
  c["model"]["intermediate_size"] = 256;
  c["model"]["hidden_dropout_prob"] = 0.0;
  c["model"]["attention_probs_dropout_prob"] = 0.0;
  c["train"] = json::parse(R"({"steps": 800, "batch_size": 8, "max_seq_length": 48, "lr": 3e-3, "warmup_steps": 40,
                               "weight_decay": 0, "log_every": 50, "eval_every": 0, "device": "cpu"})");
  train::RunConfig config = train::parse_run_config(c, {}, "test");
  std::vector<double> losses;
  train::pretrain(config, options(dir + "/run"), [&](const json::Value& line) {
    if (line.contains("loss")) losses.push_back(line["loss"].as_number());
  });
  REQUIRE(losses.size() >= 2);
  // From about ln(vocabulary) to near zero: masked words of memorised sentences.
  INFO("first " << losses.front() << ", last " << losses.back());
  CHECK(losses.front() > 3.5);
  CHECK(losses.back() < 0.3);
}

TEST_CASE("objectives: NSP adds its loss, a causal decoder learns the next token, phases switch length", "[pretrain]") {
  json::Value c = small_config();
  c["data"]["objective"] = "mlm+nsp";
  std::vector<json::Value> lines;
  train::pretrain(train::parse_run_config(c, {}, "test"), options(temp_dir("nsp")),
                  [&](const json::Value& l) { lines.push_back(l); });
  CHECK(lines.front().contains("nsp_loss"));
  CHECK(lines.back().contains("eval_nsp_accuracy"));

  json::Value d = small_config();
  d["model"]["decoder"] = true;
  d["data"]["objective"] = "causal";
  std::vector<double> losses;
  train::pretrain(train::parse_run_config(d, {"train.steps=150", "train.lr=5e-3", "train.warmup_steps=10", "train.batch_size=8"}, "test"), options(temp_dir("causal")),
                  [&](const json::Value& l) {
                    if (l.contains("loss")) losses.push_back(l["loss"].as_number());
                  });
  INFO("causal loss " << losses.front() << " -> " << losses.back());
  CHECK(losses.back() < losses.front() - 1.0);
}

TEST_CASE("a two-phase length schedule trains each phase at its length", "[pretrain]") {
  json::Value c = small_config();
  c["train"] = json::parse(R"({"phases": [{"steps": 4, "max_seq_length": 16, "batch_size": 4},
                                          {"steps": 3, "max_seq_length": 48, "batch_size": 2}],
                               "lr": 1e-3, "log_every": 1, "eval_every": 0, "device": "cpu"})");
  std::vector<int64_t> phases;
  train::pretrain(train::parse_run_config(c, {}, "test"), options(temp_dir("phases")), [&](const json::Value& l) {
    if (l.contains("phase")) phases.push_back(l["phase"].as_int());
  });
  CHECK(phases == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1});

  // --set KEY=null unsets a key, so a one-phase config takes phases from the command line.
  const std::string two = R"(train.phases=[{"steps": 4, "max_seq_length": 16, "batch_size": 4},
                                           {"steps": 3, "max_seq_length": 48, "batch_size": 2}])";
  CHECK_THROWS_WITH(train::parse_run_config(small_config(), {two}, "run.json"),
                    Contains("give either 'phases' or steps/max_seq_length/batch_size, not both"));
  const train::RunConfig unset = train::parse_run_config(
      small_config(), {"train.steps=null", "train.max_seq_length=null", "train.batch_size=null", two}, "run.json");
  REQUIRE(unset.train.phases.size() == 2);
  CHECK(unset.train.phases[1].max_seq_length == 48);
  CHECK_FALSE(unset.source["train"].contains("steps"));
}

TEST_CASE("bad run configs are refused with the key named", "[pretrain][errors]") {
  auto bad = [](const std::string& override_text) {
    return train::parse_run_config(small_config(), {override_text}, "run.json");
  };
  CHECK_THROWS_WITH(bad("model.hiden_size=32"), Contains("unknown key 'hiden_size'"));
  CHECK_THROWS_WITH(bad("train.stepz=3"), Contains("unknown key 'stepz'"));
  CHECK_THROWS_WITH(bad("model.hidden_size=\"wide\""), Contains("'hidden_size' must be a number"));
  CHECK_THROWS_WITH(bad("model.num_attention_heads=3"), Contains("num_attention_heads 3 does not divide hidden_size 32"));
  CHECK_THROWS_WITH(bad("train.max_seq_length=100"), Contains("max_seq_length 100 is beyond max_position_embeddings 64"));
  CHECK_THROWS_WITH(bad("model.hidden_act=swish"), Contains("'hidden_act' is 'swish'"));
  CHECK_THROWS_WITH(bad("data.objective=causal"), Contains("needs model.decoder = true"));
  // Before any step, not as an index out of range in the embeddings' lookup at the first.
  CHECK_THROWS_WITH(train::parse_run_config(small_config(), {"data.objective=mlm+nsp", "model.type_vocab_size=1"},
                                            "run.json"),
                    Contains("run.json") && Contains("segment (token type) 1") && Contains("type_vocab_size is 1"));
  CHECK_THROWS_WITH(bad("train.lr=-1"), Contains("'lr' must be between 0 and 10"));
  CHECK_THROWS_WITH(train::parse_run_config(json::parse("{}"), {}, "run.json"), Contains("missing the 'model' object"));
  train::RunConfig unknown_pe = bad("model.pe=sinusoidal_typo");
  CHECK_THROWS_WITH(train::pretrain(unknown_pe, options(temp_dir("pe"))), Contains("unknown position encoding 'sinusoidal_typo'"));
}

TEST_CASE("an output directory that holds a run is refused and left as it was", "[pretrain][errors]") {
  train::RunConfig config = train::parse_run_config(small_config(), {"train.steps=2", "train.eval_every=0"}, "test");
  std::string dir = temp_dir("existing");
  train::pretrain(config, options(dir));
  std::string before = read_file(dir + "/metrics.jsonl");
  CHECK_THROWS_WITH(train::pretrain(config, options(dir)), Contains("already holds a run"));
  CHECK(read_file(dir + "/metrics.jsonl") == before);
  train::PretrainOptions overwrite = options(dir);
  overwrite.overwrite = true;
  CHECK(train::pretrain(config, overwrite).steps == 2);
  CHECK_THROWS_WITH(train::resume_pretrain(options(temp_dir("nothing"))), Contains("is not a directory"));
}

TEST_CASE("a non-finite loss stops the run naming the step and the tensor", "[pretrain][errors]") {
  train::RunConfig config = train::parse_run_config(small_config(), {"train.steps=4", "train.eval_every=0"}, "test");
  std::string dir = stopped_run_with_nan(config, "nan", "bert.encoder.layer.1.intermediate.dense.weight", 3);
  CHECK_THROWS_WITH(train::resume_pretrain(options(dir)),
                    Contains("step 3") && Contains("bert.encoder.layer.1.intermediate.dense.weight"));
}

TEST_CASE("a non-finite loss on a step that is not logged still stops the run naming the step and the tensor",
          "[pretrain][errors]") {
  // Steps 1, 5 and 6 log, step 3 does not: its loss is read only when something goes wrong.
  train::RunConfig config =
      train::parse_run_config(small_config(), {"train.steps=6", "train.eval_every=0", "train.log_every=5"}, "test");
  std::string dir = stopped_run_with_nan(config, "nan_unlogged", "bert.encoder.layer.0.output.dense.weight", 5);
  CHECK_THROWS_WITH(train::resume_pretrain(options(dir)),
                    Contains("step 3") && Contains("bert.encoder.layer.0.output.dense.weight"));
}

namespace {

// The entries beside `run` in its folder whose names start with run's own or
// with a dot and run's own (a half-built .RUN.ordo-new-... or a set-aside
// .RUN.ordo-previous-... would be one).
std::vector<std::string> entries_beside(const std::string& run) {
  std::filesystem::path path(run);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path())) {
    std::string name = e.path().filename().string();
    const std::string own = path.filename().string();
    if (name != own && (name.rfind(own, 0) == 0 || name.rfind("." + own, 0) == 0)) names.push_back(name);
  }
  return names;
}

}  // namespace

TEST_CASE("overwriting keeps the old run when the new one fails or is interrupted in its first step",
          "[pretrain][errors]") {
  train::RunConfig config = train::parse_run_config(small_config(), {"train.steps=2", "train.eval_every=0"}, "test");
  std::string dir = temp_dir("first_step");
  train::pretrain(config, options(dir));
  const std::string metrics_before = read_file(dir + "/metrics.jsonl");
  const std::string model_before = read_file(dir + "/checkpoints/step_000000002/model.safetensors");
  train::RunConfig other = train::parse_run_config(small_config(), {"train.steps=3", "train.seed=9"}, "test");
  train::PretrainOptions overwrite = options(dir);
  overwrite.overwrite = true;
  auto check_old_run_kept = [&] {
    CHECK(read_file(dir + "/metrics.jsonl") == metrics_before);
    CHECK(read_file(dir + "/checkpoints/step_000000002/model.safetensors") == model_before);
    CHECK_FALSE(file_exists(dir + "/checkpoints/step_000000003/trainer_state.json"));
    CHECK(entries_beside(dir).empty());
  };
  SECTION("a first step that fails") {
    auto fail_at_step_1 = [](const json::Value& line) {
      if (line["step"].as_int() == 1) throw Error("the first step failed");
    };
    CHECK_THROWS_WITH(train::pretrain(other, overwrite, fail_at_step_1), Contains("the first step failed"));
    check_old_run_kept();
  }
  SECTION("Ctrl-C during the first step") {
    auto interrupt_at_step_1 = [](const json::Value& line) {
      if (line["step"].as_int() == 1) std::raise(SIGINT);
    };
    CHECK_THROWS_WITH(train::pretrain(other, overwrite, interrupt_at_step_1), Contains("interrupted"));
    check_old_run_kept();
  }
  SECTION("a run that gets past its first step replaces the old one") {
    CHECK(train::pretrain(other, overwrite).steps == 3);
    CHECK(file_exists(dir + "/checkpoints/step_000000003/trainer_state.json"));
    CHECK_FALSE(file_exists(dir + "/checkpoints/step_000000002/trainer_state.json"));
    CHECK(entries_beside(dir).empty());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("the perplexity of a diverged loss is inf, not a number clamped to e^700", "[pretrain]") {
  CHECK(train::perplexity(std::log(274.37)) == Approx(274.37).epsilon(1e-12));
  CHECK(train::perplexity(0) == 1);
  CHECK(std::isinf(train::perplexity(800)));  // e^800 overflows a double (its largest is about e^709.78)
}

TEST_CASE("a run trained on past its end keeps its warm-up and re-aims the linear decay", "[pretrain]") {
  // 6 steps, warm-up 3 (a ratio of 0.5), then on to 9. By hand: the decay of a
  // 9-step plan, lr (9 - s) / (9 - 3): steps 7, 8, 9 at 2/6, 1/6 and 0 of lr.
  json::Value c = small_config();
  c["train"] = json::parse(R"({"steps": 6, "batch_size": 4, "max_seq_length": 32, "lr": 1e-3, "warmup_ratio": 0.5,
                               "log_every": 1, "eval_every": 0, "eval_batches": 2, "device": "cpu"})");
  std::string dir = temp_dir("extend");
  REQUIRE(train::pretrain(train::parse_run_config(c, {}, "test"), options(dir)).steps == 6);
  train::PretrainOptions more = options(dir);
  more.resume = true;
  more.extend_to = 9;
  std::map<int64_t, double> lr;
  train::RunSummary s = train::resume_pretrain(more, [&](const json::Value& l) {
    if (l.contains("lr")) lr[l["step"].as_int()] = l["lr"].as_number();
  });
  CHECK(s.steps == 3);
  CHECK(s.step == 9);
  CHECK(lr.size() == 3);
  CHECK(lr[7] == Approx(1e-3 * 2 / 6).epsilon(1e-12));
  CHECK(lr[8] == Approx(1e-3 * 1 / 6).epsilon(1e-12));
  CHECK(lr[9] == 0);
  json::Value stored = json::parse(read_file(dir + "/config.json"));
  CHECK(stored["train"]["steps"].as_int() == 9);
  CHECK(stored["train"]["warmup_steps"].as_int() == 3);
  CHECK_FALSE(stored["train"].contains("warmup_ratio"));

  // Finished again: a plain resume does nothing; an extension that is not one is refused.
  more.extend_to = -1;
  CHECK(train::resume_pretrain(more).steps == 0);
  more.extend_to = 9;
  CHECK_THROWS_WITH(train::resume_pretrain(more), Contains("beyond the 9 steps it has done"));
}

TEST_CASE("Ctrl-C during a run stops it after the step with a checkpoint, and the summary says so", "[pretrain]") {
  std::string dir = temp_dir("interrupt");
  train::RunConfig config = train::parse_run_config(small_config(), {"train.eval_every=0"}, "test");
  train::RunSummary s = train::pretrain(config, options(dir), [](const json::Value& l) {
    if (l.contains("loss") && l["step"].as_int() == 3) std::raise(SIGINT);
  });
  CHECK(s.interrupted);
  CHECK(s.steps == 3);
  CHECK(s.step == 3);
  CHECK(file_exists(dir + "/checkpoints/step_000000003/trainer_state.json"));
}

// The CPU's bf16 products (AMX-BF16 tiles where the CPU has them, FP32
// products of the rounded operands elsewhere) against FP32 over 200 steps of
// one run: the bf16 learning curve must track the FP32 one's within the
// resolution of the FP32 curve's own noise (the bound's derivation:
// test::check_tracks_learning_curve).
TEST_CASE("200 steps with bf16 products on the CPU track the FP32 run's learning curve", "[train]") {
  test::TempDir dir("bf16_cpu");
  test::write_tracking_corpus(dir);
  const int64_t steps = 200;
  INFO("bf16 products: " << (cpu::amx_enabled() ? "AMX tiles" : cpu::amx_description()));
  test::check_tracks_learning_curve(test::pretrain_losses(dir, "cpu", "fp32", steps),
                                    test::pretrain_losses(dir, "cpu", "bf16", steps), 20);
}
