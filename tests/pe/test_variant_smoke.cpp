// `ordo pretrain` with every registered variant (pe::variant_names(), so a
// variant registered later is covered without touching this file), the
// combinations and the options of the shared seam (INPUT+ATTENTION,
// combine = sequence, ablations, TUPE-A, per-head segments): a few steps on
// a corpus of four sentences, the loss finite at every step and lower at the
// end than at the start.
#include <cmath>
#include <fstream>

#include "pe/registry.h"
#include "tests/helpers.h"
#include "train/pretrain.h"

using namespace ordo;

namespace {

struct Smoke {
  std::string pe;
  json::Value options = json::Value::object();
  std::string segment = "input";
  std::string label() const { return pe + " " + json::dump(options) + (segment == "input" ? "" : " segment " + segment); }
};

std::vector<double> pretrain_losses(const test::TempDir& dir, const Smoke& s, int index) {
  json::Value c = json::parse(R"({
    "model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 64, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0},
    "data": {"corpus": "", "held_out_fraction": 0, "vocab_size": 120, "vocab_min_frequency": 1,
             "max_predictions_per_seq": 6},
    "train": {"steps": 6, "batch_size": 8, "max_seq_length": 32, "lr": 5e-3, "warmup_steps": 0,
              "weight_decay": 0, "log_every": 1, "eval_every": 0, "device": "cpu", "threads": 1}
  })");
  c["data"]["corpus"] = dir / "corpus.txt";
  c["model"]["pe"] = s.pe;
  c["model"]["pe_options"] = s.options;
  if (s.segment != "input") c["model"]["segment"] = s.segment;
  train::RunConfig config = train::parse_run_config(c, {}, "smoke " + s.label());
  train::PretrainOptions o;
  o.out = dir / ("run" + std::to_string(index));
  o.quiet = true;
  std::vector<double> losses;
  train::pretrain(config, o, [&](const json::Value& line) {
    if (line.contains("loss")) losses.push_back(line["loss"].as_number());
  });
  return losses;
}

}  // namespace

TEST_CASE("smoke: ordo pretrain runs a few steps with every variant, combination and seam option, the loss falling",
          "[pe][smoke][pretrain]") {
  test::TempDir dir("smoke");
  std::ofstream(dir / "corpus.txt") << "the dog chased the cat .\nthe cat saw a bird near the house .\n"
                                       "a small boy ran to the old man .\nthe old man gave the boy a red ball .\n";
  std::vector<Smoke> runs;
  for (const std::string& name : pe::variant_names()) runs.push_back({name});
  const auto& names = pe::variant_names();
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  auto option = [](const std::string& key, json::Value v) {
    json::Value o = json::Value::object();
    o[key] = v;
    return o;
  };
  // An input-level and an attention-level variant together.
  if (has("rpe_shaw")) runs.push_back({"ape_learned+rpe_shaw"});
  if (has("ape_sin_learnable") && has("rpe_sin_learnable")) runs.push_back({"ape_sin_learnable+rpe_sin_learnable"});
  // TUPE-A, and TUPE without the [CLS] reset.
  runs.push_back({"tupe", option("relative", false)});
  runs.push_back({"tupe", option("cls_reset", false)});
  // The sequence combination.
  for (const std::string n : {"attenuated", "alibi"})
    if (has(n)) runs.push_back({n, option("combine", "sequence")});
  // Training-time ablations: only-p / only-c, input level and attention level.
  runs.push_back({"ape_learned", option("ablate", "contextual")});
  runs.push_back({"ape_learned", option("ablate", "positional")});
  runs.push_back({"tupe", option("ablate", "contextual")});
  runs.push_back({"tupe", option("ablate", "positional")});
  // Per-head segments (Chen et al. 2021, Eq. 9-11).
  if (has("rel_scalar")) runs.push_back({"rel_scalar", json::Value::object(), "per_head"});

  int index = 0;
  for (const Smoke& s : runs) {
    INFO(s.label());
    std::vector<double> losses = pretrain_losses(dir, s, index++);
    REQUIRE(losses.size() == 6);
    for (double l : losses) CHECK(std::isfinite(l));
    INFO("first " << losses.front() << ", last " << losses.back());
    CHECK(losses.back() < losses.front());
  }
}
