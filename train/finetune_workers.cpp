// A fine-tuning grid's runs several at once on the CPU (train.parallel_runs):
// how many runs with how many threads, each run an `ordo finetune --worker`
// process writing in a folder of its own beside the output, and what such a
// worker does.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file_io.h"
#include "base/output.h"
#include "base/subprocess.h"
#include "train/finetune_parts.h"
#include "train/loop.h"

namespace ordo::train {

using namespace finetuning;

namespace {

// A worker process of a parallel grid (its pid the key): its run, the folder it writes in, its threads.
struct Worker {
  GridRun* run = nullptr;
  std::shared_ptr<BookkeepingFolder> made;  // removes the folder with the last copy
  std::string folder;
  int64_t threads = 0;
};

}  // namespace

Parallelism finetuning::parallelism(const FinetuneConfig& c, Device device, int ranks) {
  if (c.parallel_runs == 1) return {1, c.threads};
  if (device.is_cuda() || ranks > 1) {
    ORDO_CHECK(c.parallel_runs == 0, "train.parallel_runs ", c.parallel_runs, ": runs at once are processes on the CPU; ",
               device.is_cuda() ? "on a GPU" : "under mpirun", " the runs go one after another (give 1)");
    return {1, c.threads};
  }
  const int64_t cores = available_cores();
  const int64_t threads = c.threads > 0 ? c.threads : c.parallel_runs == 0 ? 1 : std::max<int64_t>(1, cores / c.parallel_runs);
  const int64_t runs = c.parallel_runs == 0 ? std::max<int64_t>(1, cores / threads) : c.parallel_runs;
  ORDO_CHECK(runs == 1 || runs * threads <= cores, "train.parallel_runs ", runs, " x train.threads ", threads, " = ",
             runs * threads, " threads on ", cores, " cores: runs that share a core only slow each other (each ",
             "parallel loop waits for its descheduled threads); lower one of them, or give train.parallel_runs 0 ",
             "(as many runs as the cores hold)");
  return {runs, threads, c.threads > 0};
}

int64_t finetuning::remove_stale_worker_folders(const std::string& out) { return remove_stale_bookkeeping(out, "worker"); }

void finetuning::run_in_workers(std::vector<GridRun>& grid, const Parallelism& p, const json::Value& config,
                                const std::vector<std::string>& worker_args, const std::string& out,
                                const std::function<std::string()>& root, const std::function<void()>& started,
                                const std::function<void(const GridRun&)>& ended, bool quiet, bool* stopped,
                                std::string* failed) {
  std::map<pid_t, Worker> running;
  // Whatever ends this call (an error here too), no worker outlives it and no folder is left beside `out`.
  struct Reaper {
    std::map<pid_t, Worker>& running;
    ~Reaper() {
      std::error_code ignored;
      for (const auto& [pid, w] : running) {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
        std::filesystem::remove_all(w.folder, ignored);
      }
    }
  } reaper{running};
  std::vector<GridRun*> todo;
  for (GridRun& run : grid)
    if (!run.result) todo.push_back(&run);
  const std::vector<int64_t> threads = p.plan(static_cast<int64_t>(todo.size()));
  int64_t busy = 0;  // the running workers' threads
  size_t next = 0;
  bool signalled = false;
  // Every worker stops at its next step, as on a Ctrl-C it sees itself (and writes what it has).
  auto stop_all = [&] {
    if (signalled) return;
    signalled = true;
    for (const auto& [pid, w] : running) ::kill(pid, SIGINT);
  };
  auto may_start = [&] { return next < todo.size() && !*stopped && failed->empty(); };
  while (!running.empty() || may_start()) {
    while (may_start() && busy + threads[next] <= p.cores()) {
      GridRun& run = *todo[next];
      const int64_t run_threads = threads[next++];
      auto made = std::make_shared<BookkeepingFolder>(out, "worker-" + run.name);
      const std::string folder = made->path();
      write_file_atomic(folder + "/grid.json", json::dump(config, 2) + "\n");
      std::vector<std::string> args{"finetune", "--worker",  run.name, "--out", folder, "--config", folder + "/grid.json",
                                    "--set",    "train.threads=" + std::to_string(run_threads)};
      args.insert(args.end(), worker_args.begin(), worker_args.end());
      std::error_code ignored;
      std::filesystem::remove_all(root() + "/runs/" + run.name, ignored);  // what a stopped call left of it
      const pid_t pid = spawn_self(args);
      running[pid] = {&run, made, folder, run_threads};
      busy += run_threads;
      if (!quiet)
        std::fprintf(stderr, "run %s: started (process %d, %lld thread(s))\n", run.name.c_str(), static_cast<int>(pid),
                     static_cast<long long>(run_threads));
    }
    const std::optional<ChildExit> exit = wait_for_child(0.2);
    if (!exit) {
      for (const auto& [pid, w] : running)
        if (file_exists(w.folder + "/started")) started();
      if (InterruptScope::interrupted()) {
        *stopped = true;
        stop_all();
      }
      continue;
    }
    const auto it = running.find(exit->pid);
    if (it == running.end()) continue;
    const Worker w = it->second;
    running.erase(it);
    busy -= w.threads;
    const std::string result = w.folder + "/result.json";
    const bool began = file_exists(w.folder + "/started");  // its first step taken
    const bool ran = began || file_exists(result);
    const RunResult r = file_exists(result) ? run_from_line(json::parse_file(result)) : RunResult{};
    if (exit->code != 0 && exit->code != 130 && failed->empty()) {
      *failed = detail::cat("run ", w.run->name, " ended with exit status ", exit->code, " (its error is above)");
      stop_all();  // as one after another, where the error ends the grid
    }
    if (began) {
      started();
      make_directories(root() + "/runs");
      std::filesystem::rename(w.folder + "/run", root() + "/runs/" + w.run->name);
    }
    std::error_code ignored;
    std::filesystem::remove_all(w.folder, ignored);
    if (!ran) continue;  // stopped before it began: as if it had not started
    *stopped = *stopped || !r.finished;
    w.run->result = r;
    if (!quiet)
      std::fprintf(stderr, "run %s: %s\n", w.run->name.c_str(),
                   r.finished ? detail::cat("finished, best epoch ", r.best.epoch, " score ", r.best.score).c_str()
                              : "stopped");
    ended(*w.run);
  }
}

FinetuneSummary finetuning::run_worker(Task& task, const FinetuneConfig& c, const FinetuneOptions& o, const Scratch* scratch,
                                       Device device, MatmulPrecision precision) {
  const std::vector<GridRun> grid = grid_runs(c);
  const auto run = std::find_if(grid.begin(), grid.end(), [&](const GridRun& r) { return r.name == o.worker_run; });
  ORDO_CHECK(run != grid.end(), "--worker ", o.worker_run, ": the grid has no such run");
  parallel::SingleProcess single;
  InterruptScope interrupt;
  // A worker outlives no parent: SIGTERM when it dies (stop at the next step, as on a signal); a parent
  // that died before this line left it to init (ppid 1).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ORDO_CHECK(::getppid() != 1, "--worker ", o.worker_run, ": the grid that started this worker has ended");
  const RunResult r = run_one(task, c, o, scratch, run->lr, run->seed, o.out, "run", device, precision, single,
                              [&] { write_file_atomic(o.out + "/started", ""); });
  write_file_atomic(o.out + "/result.json", json::dump(run_line(run->name, run->seed, r), 2) + "\n");
  FinetuneSummary summary;
  summary.runs_finished = r.finished;
  summary.interrupted = !r.finished;
  return summary;
}

std::vector<std::string> finetuning::worker_flags(const FinetuneOptions& o) {
  std::vector<std::string> flags{"--checkpoint", o.checkpoint, "--task", o.task, "--data", o.data, "--quiet",
                                 "--set", "train.parallel_runs=1"};
  if (!o.vocab.empty()) flags.insert(flags.end(), {"--vocab", o.vocab});
  if (o.from_scratch) flags.push_back("--from-scratch");
  if (!o.init_positions_from.empty()) flags.insert(flags.end(), {"--init-positions-from", o.init_positions_from});
  if (o.new_head) flags.push_back("--new-head");
  return flags;
}

}  // namespace ordo::train
