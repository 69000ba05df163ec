#include "tools/config_help.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/config.h"
#include "base/error.h"
#include "pe/registry.h"
#include "train/finetune.h"
#include "train/pretrain.h"

namespace ordo::tools {

namespace {

constexpr const char* kWhere = "config";

// "config: train.phases[0]" -> "train.phases[i]"; "config" -> "(top level)".
std::string section_of(const std::string& where) {
  if (where == kWhere) return "(top level)";
  std::string s = where.substr(std::string(kWhere).size() + 2);
  const size_t bracket = s.find("[0]");
  if (bracket != std::string::npos) s.replace(bracket, 3, "[i]");
  return s;
}

std::string describe(ConfigKey k) {
  // A run's model.vocab_size follows its vocabulary unless given (train/pretrain.h).
  if (k.key == "vocab_size" && k.where == std::string(kWhere) + ": model") k.fallback = "(the vocabulary's size)";
  std::string line = "  " + k.key;
  line.resize(std::max<size_t>(line.size() + 1, 34), ' ');
  line += k.type;
  // A fallback outside the range (clip's -1) is the key's absence: the feature is off.
  const size_t dots = k.range.find("..");
  const bool off = k.type == "integer" && dots != std::string::npos && k.fallback[0] == '-' &&
                   std::stoll(k.fallback) < std::stoll(k.range.substr(0, dots));
  if (off) line += "  default: absent (off)";
  else if (!k.fallback.empty()) line += "  default " + k.fallback;
  if (!k.range.empty()) line += "  " + k.range;
  if (k.type == "ignored") line += "  (accepted for HF compatibility, not used)";
  return line + "\n";
}

// The keys of every reader, in the order first read, without repeats.
std::vector<ConfigKey> distinct(const std::vector<ConfigKey>& keys) {
  std::vector<ConfigKey> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const ConfigKey& k : keys)
    if (seen.insert({k.where, k.key}).second) out.push_back(k);
  return out;
}

// The model every variant is built on for the listing: BERT-base's shape
// (512 positions, 12 heads of 64) on one layer. Defaults that follow the
// model (max_distance, max_position, rank) are shown for that shape.
nn::BertConfig dry_model(const std::string& pe) {
  nn::BertConfig c;
  c.vocab_size = 64;
  c.num_hidden_layers = 1;
  c.pe = pe;
  return c;
}

// The keys under a heading per section, sections in name order.
std::string by_section(const std::vector<ConfigKey>& read) {
  std::string out, section;
  std::vector<ConfigKey> keys = distinct(read);
  std::stable_sort(keys.begin(), keys.end(),
                   [](const ConfigKey& a, const ConfigKey& b) { return section_of(a.where) < section_of(b.where); });
  for (ConfigKey& k : keys) {
    if (k.key == "pe_options") k.range = "(see model.pe_options and model.pe below)";
    if (section_of(k.where) != section) {
      section = section_of(k.where);
      out += "\n" + section + (section == "train.phases[i]"
                                   ? " (a list of phases instead of train's steps/max_seq_length/batch_size)"
                                   : "") + "\n";
    }
    out += describe(k);
  }
  return out;
}

}  // namespace

std::string finetune_config_help() {
  ConfigKeyLog log;
  train::parse_finetune_config(json::Value::object(), {}, kWhere);
  return "ordo finetune config (--config FILE.json [--set key=value]; \"extends\" as in a run config): every key,\n"
         "its type, default and range, as the validator reads them. train.lr and train.learning_rates exclude each\n"
         "other (--lr A,B sets the grid). model.* (with --from-scratch only): the fresh model's config, the\n"
         "checkpoint's with these keys replaced; its keys are a run config's model keys (ordo help config).\n" +
         by_section(log.keys());
}

std::string config_help() {
  std::string out =
      "ordo run config (ordo pretrain --config FILE.json [--set key=value]): every key, its type, default and\n"
      "range, as the validators read them. An unknown key anywhere is an error; --set a.b=v sets one.\n"
      "\"extends\": \"other.json\" at the top lays this file over another (objects merge key by key).\n";
  // The run config: model, data, train, and a list of phases.
  std::vector<ConfigKey> run_keys;
  for (const char* text : {R"({"model": {}})", R"({"model": {}, "train": {"phases": [{}]}})"}) {
    ConfigKeyLog log;
    train::parse_run_config(json::parse(text), {}, kWhere);
    run_keys.insert(run_keys.end(), log.keys().begin(), log.keys().end());
  }
  out += by_section(run_keys);

  // The PE variants: each one's options, read from an empty model.pe_options
  // on a dry model, then again with each boolean option flipped, since some
  // options are read only when another is on (attenuated's share, when learned).
  std::map<std::string, std::vector<ConfigKey>> options;
  std::map<std::string, std::string> unbuildable;
  for (const std::string& name : pe::variant_names()) {
    std::vector<ConfigKey> read;
    std::set<std::string> unconditional;
    auto build = [&](const json::Value& pe_options) {
      nn::BertConfig model = dry_model(name);
      model.pe_options = pe_options;
      ConfigKeyLog log;
      try {
        pe::make_position_encoding(model, Device::cpu());
      } catch (const Error& e) {
        if (pe_options.size() == 0) unbuildable[name] = e.what();
      }
      read.insert(read.end(), log.keys().begin(), log.keys().end());
    };
    build(json::Value::object());
    for (const ConfigKey& k : read) unconditional.insert(k.key);
    for (const ConfigKey& k : distinct(read)) {
      if (k.type != "boolean") continue;
      json::Value flipped = json::Value::object();
      flipped[k.key] = k.fallback != "true";
      const size_t before = read.size();
      build(flipped);
      for (size_t i = before; i < read.size(); ++i)
        if (!unconditional.count(read[i].key))
          read[i].range += std::string(read[i].range.empty() ? "" : "  ") + "(only with " + k.key + ": " +
                           json::dump(flipped[k.key]) + ")";
    }
    options[name] = distinct(read);
  }
  std::map<std::string, int> readers;  // key -> how many variants read it
  for (const auto& [name, keys] : options)
    for (const ConfigKey& k : keys) ++readers[k.key];
  const int variants = static_cast<int>(options.size());
  out += "\nmodel.pe_options: read by every variant\n";
  std::set<std::string> shared;
  for (const ConfigKey& k : options.begin()->second)
    if (readers[k.key] == variants && shared.insert(k.key).second) out += describe(k);
  out += "\nmodel.pe: one of the variants below, each with model.pe_options of its own (\"INPUT+ATTENTION\" combines an "
         "input-level and an attention-level variant, each reading its own); defaults that follow the model are shown "
         "for BERT-base's shape (max_position_embeddings 512, head size 64)\n";
  for (const std::string& name : pe::variant_names()) {
    std::string own;
    for (const ConfigKey& k : options[name])
      if (!shared.count(k.key)) own += describe(k);
    out += "  " + name + (own.empty() ? " (no options of its own)" : "") + "\n";
    if (unbuildable.count(name)) out += "    (not built on the dry model: " + unbuildable[name] + ")\n";
    for (size_t start = 0; start < own.size();) {  // indented one level under the variant
      const size_t end = own.find('\n', start);
      out += "  " + own.substr(start, end - start + 1);
      start = end + 1;
    }
  }
  return out;
}

}  // namespace ordo::tools
