// `ordo help config` against what the validators accept, from both sides:
// every key of every shipped config appears in it under its section (the
// configs were written for the papers, not from the listing), and every key
// it lists is accepted with the default it prints, while a key it does not
// list is refused. Also the help flags' exit codes.
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "base/json.h"
#include "pe/registry.h"
#include "tests/helpers.h"
#include "train/finetune.h"
#include "train/pretrain.h"

using ordo::test::run_ordo;
using Catch::Contains;
namespace fs = std::filesystem;
namespace json = ordo::json;

namespace {

// One listed key: its section ("data", "train.phases[i]", the variant name
// for a PE option, "pe_options" for the shared ones), type and printed default.
struct Listed {
  std::string section, key, type, fallback;
  std::string condition;  // "learned: true" for "(only with learned: true)"
};

std::vector<Listed> parse_listing(const std::string& text) {
  std::vector<Listed> out;
  std::istringstream lines(text);
  std::string line, section;
  bool in_pe = false, shared = false;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const size_t indent = line.find_first_not_of(' ');
    std::istringstream words(line);
    std::string first, type;
    words >> first >> type;
    if (indent == 0) {
      section = first;
      shared = section == "model.pe_options:";
      in_pe = shared || section == "model.pe:";
      if (shared) section = "pe_options";
      continue;
    }
    if (in_pe && !shared && indent == 2) {  // a variant's line
      section = first;
      continue;
    }
    if (in_pe && !shared && indent != 4) continue;
    if (!in_pe && indent != 2) continue;
    std::string fallback;
    const size_t at = line.find("  default ");
    if (at != std::string::npos) {
      std::istringstream rest(line.substr(at + 10));
      rest >> fallback;
    }
    std::string condition;
    const size_t only = line.find("(only with ");
    if (only != std::string::npos) condition = line.substr(only + 11, line.find(')', only) - only - 11);
    out.push_back({section, first, type, fallback, condition});
  }
  return out;
}

// section -> keys, from a shipped config's JSON.
void collect_keys(const json::Value& config, std::map<std::string, std::set<std::string>>& keys) {
  for (const auto& [key, value] : config.items()) {
    if (key == "extends") continue;
    keys["(top"].insert(key);
    if (!value.is_object()) continue;
    for (const auto& [inner, inner_value] : value.items()) {
      keys[key].insert(inner);
      if (key == "model" && inner == "pe_options")
        for (const auto& [option, _] : inner_value.items()) keys["pe_options:" + (value.contains("pe") ? value["pe"].as_string() : "ape_learned")].insert(option);
      if (key == "train" && inner == "phases")
        for (size_t i = 0; i < inner_value.size(); ++i)
          for (const auto& [phase_key, _] : inner_value[i].items()) keys["train.phases[i]"].insert(phase_key);
    }
  }
}

const std::string& listing() {
  static const std::string text = [] {
    auto r = run_ordo("help config");
    REQUIRE(r.exit_code == 0);
    // The run config's part; the fine-tuning config's follows (checked below on its own).
    const size_t finetune = r.output.find("\nordo finetune config");
    REQUIRE(finetune != std::string::npos);
    return r.output.substr(0, finetune);
  }();
  return text;
}

}  // namespace

TEST_CASE("help config: every key of every shipped config is listed under its section", "[cli][help]") {
  std::vector<Listed> listed = parse_listing(listing());
  REQUIRE(listed.size() > 60);
  auto is_listed = [&](const std::string& section, const std::string& key) {
    for (const Listed& l : listed)
      if (l.section == section && l.key == key) return true;
    return false;
  };
  std::map<std::string, std::set<std::string>> keys;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(std::string(ORDO_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".json" || entry.path().filename() == "experiment.json") continue;
    if (entry.path().parent_path().filename() == "finetune") {  // fine-tuning configs: their own reader
      CHECK_NOTHROW(ordo::train::parse_finetune_config(json::parse(ordo::read_file(entry.path().string())), {}, "f"));
      continue;
    }
    collect_keys(json::parse(ordo::read_file(entry.path().string())), keys);
    ++files;
  }
  REQUIRE(files >= 20);
  for (const auto& [section, names] : keys) {
    for (const std::string& key : names) {
      INFO(section << " " << key);
      if (section.rfind("pe_options:", 0) == 0) {
        // An option of the variant named (each half of INPUT+ATTENTION), or one every variant reads.
        const std::string pe = section.substr(11);
        const size_t plus = pe.find('+');
        const bool found = is_listed("pe_options", key) || is_listed(pe.substr(0, plus), key) ||
                           (plus != std::string::npos && is_listed(pe.substr(plus + 1), key));
        CHECK(found);
      } else if (section == "(top") {
        CHECK(is_listed("(top", key));  // "(top level)" is read as "(top"
      } else {
        CHECK(is_listed(section, key));
      }
    }
  }
}

TEST_CASE("help config: every listed key is accepted with its printed default, an unlisted one is refused",
          "[cli][help]") {
  const std::vector<Listed> listed = parse_listing(listing());
  std::set<std::string> variants(ordo::pe::variant_names().begin(), ordo::pe::variant_names().end());
  int run_keys = 0, pe_options = 0;
  for (const Listed& l : listed) {
    INFO(l.section << " " << l.key << " " << l.type << " default " << l.fallback);
    if (l.fallback.empty() || l.fallback[0] == '(' || l.fallback == "absent") continue;  // objects, arrays, computed
    const json::Value value = json::parse(l.fallback);
    json::Value config = json::parse(R"({"model": {"hidden_size": 96, "num_attention_heads": 4,
                                          "intermediate_size": 64, "num_hidden_layers": 1}})");
    if (l.section == "data" || l.section == "train" || l.section == "model") {
      config[l.section][l.key] = value;
      if (l.section == "model" && l.key == "segment_share") config["model"]["segment"] = "per_head";
      CHECK_NOTHROW(ordo::train::parse_run_config(config, {}, "test"));
      ++run_keys;
    } else if (l.section == "train.phases[i]") {
      config["train"]["phases"] = json::Value::array();
      json::Value phase = json::Value::object();
      phase[l.key] = value;
      config["train"]["phases"].push_back(phase);
      CHECK_NOTHROW(ordo::train::parse_run_config(config, {}, "test"));
      ++run_keys;
    } else if (variants.count(l.section) || l.section == "pe_options") {
      config["model"]["pe"] = l.section == "pe_options" ? "rpe_shaw" : l.section;
      config["model"]["pe_options"][l.key] = value;
      if (!l.condition.empty()) {  // "learned: true"
        const size_t colon = l.condition.find(": ");
        config["model"]["pe_options"][l.condition.substr(0, colon)] = json::parse(l.condition.substr(colon + 2));
      }
      ordo::nn::BertConfig model = ordo::train::parse_run_config(config, {}, "test").model;
      model.vocab_size = 50;
      CHECK_NOTHROW(ordo::pe::make_position_encoding(model, ordo::Device::cpu()));
      ++pe_options;
    }
  }
  CHECK(run_keys > 50);
  CHECK(pe_options > 30);
  for (const char* section : {"model", "data", "train"}) {
    json::Value config = json::parse(R"({"model": {}})");
    config[section]["not_a_listed_key"] = 1;
    CHECK_THROWS_WITH(ordo::train::parse_run_config(config, {}, "test"), Contains("unknown key 'not_a_listed_key'"));
  }
}

TEST_CASE("help: help config, a command's --help and -h exit 0, an unknown command is an error", "[cli][help]") {
  CHECK_THAT(listing(), Contains("model.pe_options") && Contains("warmup_ratio") && Contains("rpe_shaw"));
  auto help = run_ordo("pretrain --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Contains("usage: ordo pretrain") && Contains("max_seq_length"));
  CHECK(run_ordo("probe -h").exit_code == 0);
  auto unknown = run_ordo("help nosuch");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Contains("unknown command 'nosuch'"));
}

TEST_CASE("help: the fine-tuning config's keys are listed, and each listed key is accepted", "[cli][help][finetune]") {
  auto help = run_ordo("finetune --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Contains("doc_stride") && Contains("learning_rates") && Contains("lower_case"));
  // Every key of the listing's sections, set to its own default, passes the validator.
  for (const char* set : {"train.epochs=3", "train.warmup_ratio=0.1", "squad.n_best_size=20", "tokenizer.lower_case=auto",
                          "train.save_best=true"})
    CHECK_NOTHROW(ordo::train::parse_finetune_config(json::Value::object(), {set}, "test"));
  CHECK_THROWS_WITH(ordo::train::parse_finetune_config(json::Value::object(), {"squad.not_a_listed_key=1"}, "test"),
                    Contains("unknown key 'not_a_listed_key'"));
}
