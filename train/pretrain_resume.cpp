// Resuming a pretraining run (ordo pretrain --resume): the latest
// checkpoint's trainer state checked against the run's config before anything
// is changed, and --set train.steps=N to train a finished run on.
#include <algorithm>
#include <cstdio>
#include <set>

#include "base/file_io.h"
#include "train/pretrain_parts.h"

namespace ordo::train {

using namespace pretraining;

namespace {

// The stored config of a run trained on to `steps` (PretrainOptions::extend_to):
// train.steps = steps, the warm-up fixed at the steps it had.
RunConfig extended_config(const RunConfig& c, int64_t steps, int64_t done, const std::string& where) {
  ORDO_CHECK(c.train.phases.size() == 1, "--set train.steps=", steps, ": the run has ", c.train.phases.size(),
             " phases; only a single-phase run can be extended this way");
  ORDO_CHECK(steps > done, "--set train.steps=", steps, ": a run is extended beyond the ", done,
             " steps it has done; give more steps");
  json::Value source = c.source;
  json::Value train = json::Value::object();
  for (const auto& [key, value] : source["train"].items())
    if (key != "warmup_ratio") train[key] = value;
  train["steps"] = steps;
  train["warmup_steps"] = c.train.adam.warmup_steps;  // a ratio would move it with the new end
  source["train"] = train;
  return parse_run_config(source, {}, where);
}

// Every key under which `a` and `b` differ ("train.lr", "model.pe"), objects compared key by key.
void differing_keys(const json::Value& a, const json::Value& b, const std::string& at, std::vector<std::string>& out) {
  if (!a.is_object() || !b.is_object()) {
    if (!(a == b)) out.push_back(at.empty() ? "(the whole config)" : at);
    return;
  }
  std::set<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.insert(key);
  for (const auto& [key, value] : b.items()) keys.insert(key);
  const json::Value none;
  for (const std::string& key : keys) {
    const json::Value* x = a.find(key);
    const json::Value* y = b.find(key);
    differing_keys(x ? *x : none, y ? *y : none, at.empty() ? key : at + "." + key, out);
  }
}

// The run's config.json against the one the checkpoint was trained with:
// only the schedule's end may differ (--resume --set train.steps=N writes a
// new train.steps, and the warm-up as a number of steps), the warm-up itself not.
void check_config_unchanged(const json::Value& trained, const RunConfig& c, const std::string& state_path,
                            const std::string& config_path) {
  if (trained.is_null()) return;  // a checkpoint from before the config was kept with it
  std::vector<std::string> keys;
  differing_keys(trained, c.source, "", keys);
  std::string named;
  for (const std::string& key : keys)
    if (key != "train.steps" && key != "train.warmup_steps" && key != "train.warmup_ratio")
      named += (named.empty() ? "" : ", ") + key;
  if (named.empty() && !keys.empty()) {
    const RunConfig before = parse_run_config(trained, {}, state_path + ": run_config");
    if (before.train.adam.warmup_steps != c.train.adam.warmup_steps) named = "train.warmup_steps (as resolved)";
  }
  ORDO_CHECK(named.empty(), config_path, " differs from the config its latest checkpoint was trained with (",
             state_path, ": run_config) at ", named, ": a resumed run must go on as it began. Restore the config, ",
             "or start a new run with the new one; nothing was changed");
}

// What the latest checkpoint's trainer state says against the run's config:
// a phase and a step the schedule has, the step inside its phase, and the
// config it was trained with. (Its data cursor is checked against the data
// when the run is set up: PretrainRun.)
void check_state_fits_run(const TrainerState& s, const RunConfig& c, const std::string& state_path,
                          const std::string& config_path) {
  const std::vector<Phase>& phases = c.train.phases;
  ORDO_CHECK(s.phase < static_cast<int64_t>(phases.size()), state_path, " says phase ", s.phase, " (counted from 0), but ",
             config_path, " has ", phases.size(), " phase(s): the trainer state was edited or belongs to another run; "
             "nothing was changed");
  ORDO_CHECK(s.step <= c.train.total_steps(), state_path, " says step ", s.step, ", beyond the ", c.train.total_steps(),
             " steps of ", config_path, "; nothing was changed");
  ORDO_CHECK(s.phase == phase_of_step(s.step, phases), state_path, " says phase ", s.phase, " at step ", s.step,
             ", which the schedule of ", config_path, " trains in phase ", phase_of_step(s.step, phases),
             " (counted from 0): the trainer state was edited or belongs to another run; nothing was changed");
  check_config_unchanged(s.run_config, c, state_path, config_path);
}

}  // namespace

RunSummary resume_pretrain(const PretrainOptions& o, const MetricsObserver& observer) {
  parallel::SingleProcess single;
  parallel::Communicator& comm = o.comm ? *o.comm : single;
  ORDO_CHECK(directory_exists(o.out), "--resume: '", o.out, "' is not a directory");
  const std::string config_path = o.out + "/config.json";
  ORDO_CHECK(file_exists(config_path), "--resume: '", o.out, "' holds no run (no config.json)");
  RunConfig c = read_run_config(config_path, {});
  const std::unique_ptr<OutputLock> lock = lock_output(o, comm);
  const int64_t done = std::max<int64_t>(latest_checkpoint(o.out), 0);
  // The checkpoint to resume from vouches for itself before anything is changed.
  if (latest_checkpoint(o.out) >= 0) {
    const std::string dir = checkpoint_dir(o.out, done);
    check_state_fits_run(load_trainer_state(dir), c, dir + "/trainer_state.json", config_path);
  }
  comm.barrier();  // every rank has read the stored config before rank 0 updates it
  if (o.extend_to >= 0) {
    c = extended_config(c, o.extend_to, done, config_path);
    if (comm.rank() == 0)
      write_file_atomic(config_path, json::dump(c.source, 2) + "\n");  // validated above: the run's new plan
  } else if (done >= c.train.total_steps()) {
    if (comm.rank() == 0)
      std::fprintf(stderr,
                 "ordo pretrain: '%s' is complete (step %lld of %lld); nothing to do. To train it further: "
                 "ordo pretrain --resume %s --set train.steps=N (N > %lld)\n",
                 o.out.c_str(), static_cast<long long>(done), static_cast<long long>(c.train.total_steps()),
                 o.out.c_str(), static_cast<long long>(done));
    RunSummary complete;
    complete.step = complete.total_steps = done;
    return complete;
  }
  check_same_config(comm, c.source, o.out);
  return run_loop(c, o, observer, RunDirectory::in_place(o.out), true, comm);
}

}  // namespace ordo::train
