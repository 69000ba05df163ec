// A compute ladder, read, checked and laid into a plan (experiment/ladder.h).
#include "experiment/ladder.h"

#include <algorithm>
#include <set>

#include "base/config.h"
#include "base/error.h"
#include "base/output.h"
#include "base/strings.h"
#include "experiment/plan.h"

namespace ordo::experiment {

namespace {

const std::vector<std::string>& dimensions() {
  static const std::vector<std::string> names = {"steps", "width", "depth"};
  return names;
}

int64_t dimension(const RungShape& s, const std::string& name) {
  return name == "steps" ? s.steps : name == "width" ? s.width : s.depth;
}

std::vector<std::string> string_list(const json::Value& list, const std::string& where) {
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    ORDO_CHECK(list[i].is_string(), where, "[", i, "] must be a string");
    out.push_back(list[i].as_string());
  }
  return out;
}

// "moves": one dimension or a list of them.
std::vector<std::string> read_moves(const json::Value& rung, const std::string& where) {
  const json::Value* moves = rung.find("moves");
  if (!moves) return {};
  ORDO_CHECK(moves->is_string() || moves->is_array(), where, ": moves must be \"steps\", \"width\", \"depth\" or a "
             "list of them");
  std::vector<std::string> out = moves->is_string() ? std::vector<std::string>{moves->as_string()}
                                                    : string_list(*moves, where + ": moves");
  ORDO_CHECK(!out.empty(), where, ": moves is an empty list");
  for (const std::string& m : out) {
    ORDO_CHECK(std::count(dimensions().begin(), dimensions().end(), m) == 1, where, ": moves names '", m,
               "'; a rung moves steps, width or depth");
    ORDO_CHECK(std::count(out.begin(), out.end(), m) == 1, where, ": moves names ", m, " twice");
  }
  return out;
}

// The last rung that is a step of the ladder (not a check), or nullptr.
const Rung* last_step(const Ladder& ladder) {
  for (auto it = ladder.rungs.rbegin(); it != ladder.rungs.rend(); ++it)
    if (!it->is_check()) return &*it;
  return nullptr;
}

}  // namespace

Ladder read_ladder(const json::Value& spec, const std::string& where) {
  ORDO_CHECK(spec.is_object(), where, " must be an object {\"rungs\": [...]}");
  FieldReader top(spec, where);
  const json::Value* rungs = top.array("rungs");
  top.finish();
  ORDO_CHECK(rungs && rungs->size() >= 2, where, ": give at least two rungs (\"rungs\": [...])");
  Ladder ladder;
  std::set<std::string> names;
  for (size_t i = 0; i < rungs->size(); ++i) {
    const std::string at = where + ": rungs[" + std::to_string(i) + "]";
    ORDO_CHECK((*rungs)[i].is_object(), at, " must be an object {\"name\", \"moves\", \"set\"}");
    FieldReader r((*rungs)[i], at);
    Rung rung;
    rung.name = r.string("name", "");
    r.ignore({"moves"});  // a string or a list: read below
    if (const json::Value* set = r.array("set")) {
      rung.set = string_list(*set, at + ": set");
      check_assignments(rung.set, at + ": set");
    }
    const std::string device = r.string("device", "any");
    ORDO_CHECK(device == "any" || device == "gpu", at, ": device '", device, "' is \"gpu\" (a rung for a GPU) or "
               "left out");
    rung.gpu = device == "gpu";
    rung.checks = r.string("checks", "");
    // "runs" and "tasks": lists of names, each once; left out, every one.
    for (auto [field, list] : {std::pair{"runs", &rung.runs}, std::pair{"tasks", &rung.tasks}})
      if (const json::Value* names_given = r.array(field)) {
        *list = string_list(*names_given, at + ": " + field);
        ORDO_CHECK(!list->empty(), at, ": ", field, " is an empty list; leave it out for every one");
        for (const std::string& name : *list)
          ORDO_CHECK(std::count(list->begin(), list->end(), name) == 1, at, ": ", field, " names '", name, "' twice");
      }
    r.finish();
    ORDO_CHECK(!rung.name.empty(), at, ": no name");
    check_path_name(rung.name, at + ": name");  // a part of every run's name, hence of its folder
    ORDO_CHECK(rung.name.find('=') == std::string::npos, at, ": name '", rung.name,
               "' holds '=', which joins a run config's name to its rung's (<run>=<rung>)");
    ORDO_CHECK(rung.name != "gpu", at, ": 'gpu' is no rung's name (--rungs gpu means every rung marked for a GPU)");
    ORDO_CHECK(names.insert(rung.name).second, at, ": rung '", rung.name, "' is named twice");
    rung.moves = read_moves((*rungs)[i], at + " ('" + rung.name + "')");
    const Rung* step_before = last_step(ladder);
    if (rung.is_check()) {
      const auto checked = std::find_if(ladder.rungs.begin(), ladder.rungs.end(),
                                        [&](const Rung& g) { return g.name == rung.checks && !g.is_check(); });
      ORDO_CHECK(checked != ladder.rungs.end(), at, " ('", rung.name, "'): checks '", rung.checks,
                 "', which is no step of the ladder before it");
      ORDO_CHECK(rung.moves.empty(), at, " ('", rung.name, "'): a check of rung '", rung.checks,
                 "' repeats its shape and moves nothing; leave out \"moves\"");
    } else {
      ORDO_CHECK(step_before || rung.moves.empty(), at, " ('", rung.name, "'): the first rung moves nothing (it has "
                 "no rung before it); leave out \"moves\"");
      ORDO_CHECK(!step_before || !rung.moves.empty(), at, " ('", rung.name, "'): say what it moves from rung '",
                 step_before->name, "' (\"moves\": \"steps\", \"width\" or \"depth\")");
    }
    ladder.rungs.push_back(rung);
  }
  return ladder;
}

RungShape rung_shape(const train::RunConfig& config) {
  const nn::BertConfig& m = config.model;
  RungShape s;
  s.steps = config.train.total_steps();
  s.width = m.hidden_size;
  s.depth = m.num_hidden_layers;
  const double d = static_cast<double>(m.hidden_size), d_ff = static_cast<double>(m.intermediate_size);
  s.parameters = static_cast<double>(m.num_hidden_layers) * (4 * d * d + 2 * d * d_ff);
  for (const train::Phase& p : config.train.phases) {
    const int64_t tokens = p.steps * p.batch_size * p.max_seq_length * config.train.grad_accum;
    s.tokens += tokens;
    const double forward_per_token =
        2 * s.parameters + 2 * static_cast<double>(m.num_hidden_layers) * static_cast<double>(p.max_seq_length) * d;
    s.flops += 3 * forward_per_token * static_cast<double>(tokens);
  }
  return s;
}

std::vector<RungShape> resolve_rungs(const Ladder& ladder, const std::string& config_file,
                                     const std::vector<std::string>& overrides, const std::string& where) {
  std::vector<RungShape> shapes;
  size_t step_before = ladder.rungs.size();  // none yet
  auto index_of = [&](const std::string& name) {
    size_t k = 0;
    while (ladder.rungs[k].name != name) ++k;
    return k;
  };
  for (size_t i = 0; i < ladder.rungs.size(); ++i) {
    const Rung& rung = ladder.rungs[i];
    std::vector<std::string> sets = rung.set;
    sets.insert(sets.end(), overrides.begin(), overrides.end());
    try {
      shapes.push_back(rung_shape(train::read_run_config(config_file, sets)));
    } catch (const Error& e) {  // the mistake may be the rung's own "set": name the rung before the file's words
      throw Error(detail::cat(where, ": rung '", rung.name, "' (its \"set\", then --set): ", e.what()));
    }
    if (rung.is_check()) {
      const RungShape &now = shapes[i], &checked = shapes[index_of(rung.checks)];
      for (const std::string& d : dimensions())
        ORDO_CHECK(dimension(now, d) == dimension(checked, d), where, ": rung '", rung.name, "' checks rung '",
                   rung.checks, "' but changes its ", d, " (", dimension(checked, d), " -> ", dimension(now, d),
                   "), for ", config_file, "; a check repeats the rung's shape");
      continue;
    }
    const size_t was_at = step_before;
    step_before = i;
    if (was_at == ladder.rungs.size()) continue;
    const Rung& before = ladder.rungs[was_at];
    const RungShape &now = shapes[i], &was = shapes[was_at];
    const std::string at = where + ": rung '" + rung.name + "' against rung '" + before.name + "', for " + config_file;
    for (const std::string& d : dimensions()) {
      const bool named = std::count(rung.moves.begin(), rung.moves.end(), d) == 1;
      const bool changed = dimension(now, d) != dimension(was, d);
      ORDO_CHECK(!changed || named, at, ": it moves ", joined(rung.moves), " but changes ", d, " too (",
                 dimension(was, d), " -> ", dimension(now, d), "); move one of steps, width and depth per rung, or "
                 "name every one it moves (\"moves\": [...])");
      ORDO_CHECK(changed || !named, at, ": it says it moves ", d, ", but ", d, " stays ", dimension(now, d));
    }
    ORDO_CHECK(now.flops > was.flops, at, ": its compute (", now.flops, " FLOPs) is not above the rung before's (",
               was.flops, " FLOPs); a ladder climbs");
  }
  return shapes;
}

bool Rung::fine_tunes_on(const std::string& task) const {
  return tasks.empty() || std::count(tasks.begin(), tasks.end(), task) == 1;
}

std::string ladder_run_name(const std::string& run, const std::string& rung) { return run + "=" + rung; }

const Rung* rung_of(const Plan& plan, size_t i) {
  const std::string& row = plan.row_of[i];
  for (const Rung& rung : plan.ladder.rungs) {
    const std::string tail = "=" + rung.name;
    if (row.size() > tail.size() && row.compare(row.size() - tail.size(), tail.size(), tail) == 0) return &rung;
  }
  return nullptr;
}

void expand_ladder(const json::Value& spec, const std::string& where, Plan& plan) {
  const Ladder ladder = read_ladder(spec, where);
  std::vector<std::string> run_configs;
  for (size_t i = 0; i < plan.names.size(); ++i)
    if (!plan.is_replicate(i)) {
      ORDO_CHECK(plan.names[i].find('=') == std::string::npos, where, ": run config ", plan.names[i],
                 ".json holds '=' in its name, which joins a run config's name to its rung's in a ladder "
                 "(<run>=<rung>): rename the file");
      resolve_rungs(ladder, plan.folder + "/" + plan.names[i] + ".json", {}, where);
      run_configs.push_back(plan.names[i]);
    }
  for (const Rung& rung : ladder.rungs)
    for (const std::string& run : rung.runs)
      ORDO_CHECK(std::count(run_configs.begin(), run_configs.end(), run) == 1, where, ": rung '", rung.name,
                 "' runs '", run, "', which is no run config of ", plan.folder, " (", joined(run_configs, ", "), ")");
  std::vector<std::string> names, row_of, made_of;  // made_of: "the run of X at rung R", for messages
  std::vector<train::RunConfig> configs;
  for (const Rung& rung : ladder.rungs)
    for (size_t i = 0; i < plan.names.size(); ++i) {
      if (rung.is_check() && plan.is_replicate(i)) continue;  // a check is one draw per run config
      const std::string& row = plan.row_of[i];
      if (!rung.runs.empty() && std::count(rung.runs.begin(), rung.runs.end(), row) == 0) continue;
      std::vector<std::string> sets = rung.set;
      sets.insert(sets.end(), plan.overrides.begin(), plan.overrides.end());
      if (plan.is_replicate(i)) {  // the replicate's own draws, as read_replicates sets them
        sets.push_back("train.seed=" + std::to_string(plan.configs[i].train.seed));
        sets.push_back("data.seed=" + std::to_string(plan.configs[i].data.seed));
      }
      configs.push_back(train::read_run_config(plan.folder + "/" + row + ".json", sets));
      row_of.push_back(ladder_run_name(row, rung.name));
      names.push_back(row_of.back() + plan.names[i].substr(row.size()));  // a replicate keeps its ".seed<k>"
      made_of.push_back("the run of " + plan.names[i] + " at rung " + rung.name);
      check_path_name(names.back(), where + ": " + made_of.back());
      // A rung named like a replicate ("tiny_4k.seed2") gives a run another's name, and both one folder.
      const size_t other = static_cast<size_t>(std::find(names.begin(), names.end(), names.back()) - names.begin());
      ORDO_CHECK(other + 1 == names.size(), where, ": ", made_of.back(), " and ", made_of[other],
                 " would both be the run ", names.back(), ", one folder: rename rung '", rung.name, "'");
    }
  plan.names = std::move(names);
  plan.row_of = std::move(row_of);
  plan.configs = std::move(configs);
  plan.ladder = ladder;
}

}  // namespace ordo::experiment
