#include "train/loop.h"

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "autograd/ops.h"
#include "base/config.h"
#include "base/file_io.h"
#include "base/sha256.h"
#include "tensor/cpu/blas_core.h"
#include "tensor/cpu/gemm_amx.h"
#include "tensor/cpu/gemm_own.h"
#include "tensor/device_runtime.h"
#include "tensor/safetensors.h"

namespace ordo::train {

// ---- setup ------------------------------------------------------------------------------

Device resolve_device(const std::string& name, int local_rank) {
  // A GPU per process of the node: "auto" and "cuda" take the local rank's.
  if (name == "auto") return cuda_available() ? Device::cuda(local_rank % cuda_device_count()) : Device::cpu();
  if (name == "cuda" && cuda_available()) return Device::cuda(local_rank % cuda_device_count());
  Device d = Device::parse(name);
  ORDO_CHECK(d.is_cpu() || d.index < cuda_device_count(), "train.device '", name, "' is not available: ",
             cuda_device_description(d.index));
  return d;
}

void set_threads(int64_t threads) {
  if (threads <= 0) return;
#ifdef _OPENMP
  omp_set_num_threads(static_cast<int>(threads));
#endif
}

std::optional<MatmulPrecision> parse_precision(const std::string& name, const std::string& where) {
  if (name == "auto") return std::nullopt;
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    if (name == precision_name(p)) return p;
  throw Error(detail::cat(where, ": unknown precision '", name, "' (auto, fp32, tf32 or bf16)"));
}

std::string precision_setting_name(const std::optional<MatmulPrecision>& setting) {
  return setting ? precision_name(*setting) : "auto";
}

MatmulPrecision resolve_precision(const std::optional<MatmulPrecision>& setting, Device device) {
  if (setting) return *setting;
  return device.is_cuda() ? MatmulPrecision::bf16 : MatmulPrecision::fp32;
}

MatmulPrecision resolve_precision(const std::string& name, Device device, const std::string& where) {
  return resolve_precision(parse_precision(name, where), device);
}

std::string precision_description(MatmulPrecision precision, Device device) {
  std::string text = std::string(precision_name(precision)) + " products";
  if (precision != MatmulPrecision::fp32) {
    text += " (FP32 sums, weights, optimizer state and statistics)";
    if (device.is_cpu())
      text += precision == MatmulPrecision::bf16 && cpu::amx_enabled() ? ", on the CPU's AMX-BF16 tiles"
                                                                       : ", emulated on the CPU";
  }
  return text;
}

std::string device_description(Device device) {
  if (!device.is_cpu()) return device.str();
  if (!cpu::use_blas()) return device.str() + " (ordo's own product kernel)";
  return device.str() + " (OpenBLAS's " + cpu::blas_core() + " kernels)";
}

namespace {

std::vector<std::string> list_directory(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string checkpoint_dir(const std::string& run, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%09lld", static_cast<long long>(step));
  return run + "/checkpoints/" + name;
}

// The step of the newest complete checkpoint (trainer_state.json is written
// last), or -1.
int64_t latest_checkpoint(const std::string& run) {
  int64_t best = -1;
  for (const std::string& n : list_directory(run + "/checkpoints")) {
    if (n.rfind("step_", 0) != 0) continue;
    if (!file_exists(run + "/checkpoints/" + n + "/trainer_state.json")) continue;
    best = std::max<int64_t>(best, std::atoll(n.c_str() + 5));
  }
  return best;
}

namespace {

// The files of a checkpoint whose content its trainer_state.json vouches for.
constexpr const char* kHashedFiles[] = {"config.json", "model.safetensors", "optimizer.safetensors"};

// What a checkpoint's trainer_state.json says of itself, against where it
// is: the step of its folder's name, and the files' SHA-256 at save time.
// Every checkpoint ordo saves records all three digests: a trainer state
// without them (removed, emptied) cannot vouch for its files, and is refused.
void check_checkpoint_identity(const std::string& checkpoint, const json::Value& state, const std::string& path) {
  ORDO_CHECK(state.is_object(), path, ": a trainer state is a JSON object");
  const std::string folder = std::filesystem::path(checkpoint).lexically_normal().filename().string();
  char* end = nullptr;
  const long long folder_step = folder.rfind("step_", 0) == 0 ? std::strtoll(folder.c_str() + 5, &end, 10) : -1;
  const json::Value* step = state.find("step");
  if (folder_step >= 0 && end && *end == '\0' && step && step->is_number())
    ORDO_CHECK(step->as_number() == static_cast<double>(folder_step), path, " says step ", json::dump(*step),
               " but lies in the checkpoint of step ", folder_step, " (", folder,
               "): the checkpoint was moved or its trainer state replaced; nothing was changed");
  const json::Value* hashes = state.find("sha256");
  ORDO_CHECK(hashes, path, " has no 'sha256' (the digests of the checkpoint's files, which ordo records at every ",
             "save): its files cannot be verified, so it is not resumed. Restore its trainer_state.json, or resume ",
             "from another checkpoint (move this one's folder away); nothing was changed");
  ORDO_CHECK(hashes->is_object(), path, ": 'sha256' must be an object {file: digest}");
  for (const char* file : kHashedFiles)
    ORDO_CHECK(hashes->contains(file), path, ": 'sha256' has no digest of ", file, " (ordo records one at every save): ",
               "the checkpoint's files cannot be verified, so it is not resumed. Restore its trainer_state.json, or ",
               "resume from another checkpoint (move this one's folder away); nothing was changed");
  for (const auto& [name, digest] : hashes->items()) {
    bool known = false;
    for (const char* file : kHashedFiles) known |= name == file;
    ORDO_CHECK(known, path, ": 'sha256' names '", name, "', which is not a file of a checkpoint");
    ORDO_CHECK(digest.is_string(), path, ": sha256.", name, " must be a string");
    const std::string file = checkpoint + "/" + name;
    ORDO_CHECK(file_exists(file), file, " is missing, though ", path, " recorded it; nothing was changed");
    const std::string actual = sha256_file(file);
    ORDO_CHECK(actual == digest.as_string(), file, " is not the file this checkpoint saved (its SHA-256 is ", actual,
               ", ", path, " recorded ", digest.as_string(),
               "): it was changed or damaged after the save; nothing was changed");
  }
}

}  // namespace

void save_training_state(const std::string& run, const nn::AdamW& opt, const TrainerState& s) {
  std::string dir = checkpoint_dir(run, s.step);
  safetensors::save(dir + "/optimizer.safetensors", opt.state_tensors());
  write_file_atomic(dir + "/vocab.txt", read_file(run + "/vocab.txt"));
  json::Value state = json::Value::object();
  state["step"] = s.step;
  state["phase"] = s.phase;
  state["epoch"] = s.cursor.epoch;
  state["example"] = s.cursor.example;
  state["optimizer_steps"] = opt.steps_taken();
  state["elapsed_seconds"] = s.elapsed_seconds;
  state["ranks"] = s.ranks;
  json::Value hashes = json::Value::object();
  for (const char* name : kHashedFiles) hashes[name] = sha256_file(dir + "/" + name);
  state["sha256"] = hashes;
  // The run's config as it trained up to here: a resume compares the run's config.json against it.
  state["run_config"] = json::parse_file(run + "/config.json");
  write_file_atomic(dir + "/trainer_state.json", json::dump(state, 2) + "\n");  // last: marks the checkpoint complete
}

TrainerState load_trainer_state(const std::string& checkpoint) {
  std::string path = checkpoint + "/trainer_state.json";
  json::Value v = json::parse_file(path);
  check_checkpoint_identity(checkpoint, v, path);
  FieldReader r(v, path);
  r.ignore({"sha256", "run_config"});
  TrainerState s;
  if (const json::Value* config = v.find("run_config")) s.run_config = *config;
  s.step = r.integer("step", 0, 0, INT64_MAX);
  s.phase = r.integer("phase", 0, 0, INT64_MAX);
  s.cursor.epoch = r.integer("epoch", 0, 0, INT64_MAX);
  s.cursor.example = r.integer("example", 0, 0, INT64_MAX);
  // One optimizer step per training step at most (the fuzzed trainer states reach here).
  r.integer("optimizer_steps", 0, 0, s.step);
  s.elapsed_seconds = r.number("elapsed_seconds", 0, 0, 1e300);
  s.ranks = r.integer("ranks", 1, 1, INT32_MAX);
  r.finish();
  return s;
}

void restore_optimizer(const std::string& checkpoint, nn::AdamW& opt, int64_t step, Device device) {
  auto moments = safetensors::load(checkpoint + "/optimizer.safetensors");
  for (auto& [name, t] : moments) t = t.to(device);
  opt.load_state(step, moments);
}

// ---- one optimizer step -----------------------------------------------------------------

namespace {

// The scalars of every micro-batch of a step, kept on the device until read.
class StepScalars {
 public:
  void add(const std::vector<std::pair<std::string, Tensor>>& scalars) {
    if (names_.empty())
      for (const auto& [name, value] : scalars) names_.push_back(name);
    ORDO_CHECK(scalars.size() == names_.size(), "a micro-batch logged ", scalars.size(), " scalars, the first ",
               names_.size());
    for (const auto& [name, value] : scalars) values_.push_back(value.reshape({1}));
  }

  // Every value with one host copy, micro-batch after micro-batch, followed
  // by the elements of `also` (1-d, the values' dtype and device; undefined:
  // nothing) in the same copy.
  std::vector<double> read(const Tensor& also = Tensor()) const {
    std::vector<Tensor> parts = values_;
    if (also.defined()) parts.push_back(also);
    return concat(parts, 0).to_doubles();
  }

  // The first micro-batch whose loss (its first scalar) is not finite, or -1.
  int64_t first_non_finite(const std::vector<double>& values) const {
    for (size_t i = 0; i < values.size(); i += names_.size())
      if (!std::isfinite(values[i])) return static_cast<int64_t>(i / names_.size());
    return -1;
  }

  // Each scalar's mean over the micro-batches, summed in their order.
  std::vector<std::pair<std::string, double>> means(const std::vector<double>& values) const {
    const size_t batches = values.size() / names_.size();
    std::vector<std::pair<std::string, double>> out;
    for (size_t j = 0; j < names_.size(); ++j) {
      double sum = 0;
      for (size_t m = 0; m < batches; ++m) sum += values[m * names_.size() + j];
      out.emplace_back(names_[j], sum / static_cast<double>(batches));
    }
    return out;
  }

 private:
  std::vector<std::string> names_;
  std::vector<Tensor> values_;
};

// A non-finite loss among the step's scalars goes to `report`, which throws.
void check_losses(const StepScalars& scalars, const std::vector<double>& values, int64_t step,
                  const NonFiniteReport& report) {
  int64_t m = scalars.first_non_finite(values);
  if (m < 0) return;
  report(m);
  throw Error(detail::cat("step ", step, ": the loss of micro-batch ", m, " is not finite"));
}

// Each rank's means become the global batch's: the mean of the ranks' means
// (their micro-batches are equally many).
void average_over_ranks(std::vector<std::pair<std::string, double>>& means, parallel::Communicator& comm) {
  std::vector<double> values;
  for (const auto& [name, value] : means) values.push_back(value);
  Tensor sums = Tensor::from_vector(values);
  comm.all_reduce_sum(sums);
  const std::vector<double> summed = sums.to_doubles();
  for (size_t i = 0; i < means.size(); ++i) means[i].second = summed[i] / static_cast<double>(comm.size());
}

// A logged step: the scalars and the gradients' norm in one host copy (the
// step's single synchronisation), the losses checked, then AdamW given the
// norm. The numbers are those of reading each separately.
StepResult logged_update(nn::AdamW& opt, const StepScalars& scalars, int64_t step, const NonFiniteReport& report,
                         const DataParallel& dp) {
  const Tensor norm_and_clip = opt.begin_step();  // the losses' dtype: a model computes in one
  std::vector<double> values = scalars.read(norm_and_clip);
  const double norm = norm_and_clip.defined() ? values[values.size() - 2] : 0.0;
  values.resize(values.size() - (norm_and_clip.defined() ? 2 : 0));
  check_losses(scalars, values, step, report);
  StepResult result;
  result.means = scalars.means(values);
  if (dp.ranks() > 1) average_over_ranks(result.means, *dp.comm);
  result.optimizer = opt.check_norm(&norm);
  result.optimizer.lr = opt.schedule();
  opt.apply(norm_and_clip, result.optimizer);
  return result;
}

}  // namespace

// Steps run as they are before the capture: the first allocates the
// optimizer's tables and fills the cache, the second meets the cache as a
// steady step does (the previous step's outputs still held).
constexpr int64_t kStepsAsTheyAre = 2, kMostStepsAsTheyAre = 8;

GraphedStep::GraphedStep(nn::AdamW& opt, Device device)
    : opt_(opt), device_(device), stream_base_(Tensor::zeros({1}, DType::i64, device)) {
  ORDO_CHECK(device.is_cuda(), "CUDA graphs need a CUDA device, not ", device.str());
  ORDO_CHECK(opt.config().fused, "CUDA graphs need the fused AdamW (train.cuda_graphs with AdamWConfig::fused)");
}

StepResult GraphedStep::run(int64_t step, bool read_scalars, const std::function<void()>& stage,
                            const MicroBatchForward& forward, const NonFiniteReport& report, const std::string& key) {
  stage();
  stream_base_.copy_from(Tensor::from_vector(
      std::vector<int64_t>{static_cast<int64_t>(nn::Context::first_stream(step))}, {1}));
  auto body = [&] {
    outputs_ = forward(0);
    outputs_.loss.backward();
    norm_and_clip_ = opt_.begin_step();
    opt_.apply(norm_and_clip_, nn::AdamW::StepInfo{});
  };
  double lr = 0;
  const bool captured = graph_.defined() && key == key_;
  // A capture may not call cudaMalloc: it is made once a step run as it is
  // found every block it needed in the cache (or after kMostStepsAsTheyAre
  // such steps, when it may fail and the caller goes on without graphs).
  const bool settled = key == warmed_key_ && (warm_step_found_all_ || warm_steps_ >= kMostStepsAsTheyAre);
  if (steps_ < kStepsAsTheyAre || (!captured && !settled)) {
    if (key != warmed_key_) warm_steps_ = 0;
    warmed_key_ = key;
    // Another key's graph would be captured anew (one is kept): its pool goes
    // back to the cache now, for these steps and that capture to take from.
    if (graph_.defined() && key != key_) graph_ = CudaGraph();
    lr = opt_.schedule();
    const int64_t mallocs = allocator_stats(device_).device_mallocs;
    body();  // as it is: fills the allocator's cache with every block the step needs
    warm_step_found_all_ = allocator_stats(device_).device_mallocs == mallocs;
    ++warm_steps_;
  } else {
    if (!captured) {
      graph_ = CudaGraph();  // its pool goes back to the cache before the new capture takes one
      outputs_ = MicroBatch();  // the last step's outputs: the captured step makes its own
      norm_and_clip_ = Tensor();
      try {
        graph_ = CudaGraph::capture(device_, body);
      } catch (const Error& e) {
        opt_.clear_gradients();  // made by the capture's backward, never computed
        throw CaptureRefused(e.what());
      }
      key_ = key;
      ++captures_;
    }
    lr = opt_.schedule();  // read by the replay's update
    graph_.replay();
  }
  ++steps_;
  StepScalars scalars;
  scalars.add(outputs_.scalars);
  StepResult result;
  result.tokens = outputs_.tokens;
  if (read_scalars) {
    std::vector<double> values = scalars.read(norm_and_clip_);
    const double norm = values[values.size() - 2];
    values.resize(values.size() - 2);
    check_losses(scalars, values, step, report);
    result.means = scalars.means(values);
    result.optimizer = opt_.check_norm(&norm);
  } else {
    result.optimizer = opt_.check_norm(nullptr);
  }
  result.optimizer.lr = lr;
  return result;
}

StepResult optimizer_step(nn::AdamW& opt, int64_t step, int64_t micro_batches, bool read_scalars,
                          const MicroBatchForward& forward, const NonFiniteReport& report, const DataParallel& dp) {
  StepScalars scalars;
  int64_t tokens = 0;
  const int64_t shares = micro_batches * dp.ranks();
  for (int64_t m = 0; m < micro_batches; ++m) {
    MicroBatch b = forward(m);
    Var share = shares > 1 ? affine(b.loss, 1.0 / static_cast<double>(shares)) : b.loss;
    if (dp.reducer && m == micro_batches - 1) {
      share.backward(Tensor(), false, dp.reducer->hook());
      dp.reducer->finish();
    } else {
      share.backward();
    }
    scalars.add(b.scalars);
    tokens += b.tokens;
  }
  StepResult result;
  if (read_scalars) {
    result = logged_update(opt, scalars, step, report, dp);
  } else {
    try {
      result.optimizer = opt.step(/*read_norm=*/false);  // a step that logs nothing reads nothing back
    } catch (const Error&) {
      // AdamW refused non-finite gradients (on the CPU, where it always
      // checks). The losses are read only now: a non-finite one is the
      // likelier cause and the more useful message.
      check_losses(scalars, scalars.read(), step, report);
      throw;
    }
  }
  if (dp.uneven_shares && dp.ranks() > 1) {
    Tensor count = Tensor::from_vector(std::vector<double>{static_cast<double>(tokens)});
    dp.comm->all_reduce_sum(count);
    result.tokens = static_cast<int64_t>(count.to_doubles()[0]);
  } else {
    result.tokens = tokens * dp.ranks();  // every rank's micro-batches have the same shape
  }
  return result;
}

// ---- logging ------------------------------------------------------------------------------

MetricsLog::MetricsLog(const std::string& path, MetricsObserver observer)
    : file_(std::fopen(path.c_str(), "a")), observer_(std::move(observer)) {
  ORDO_CHECK(file_, "cannot open ", path, ": ", std::strerror(errno));
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

void MetricsLog::write(const json::Value& line) {
  std::fprintf(file_, "%s\n", json::dump(line).c_str());
  std::fflush(file_);
  if (observer_) observer_(line);
}

void truncate_metrics(const std::string& path, int64_t step) {
  if (!file_exists(path)) return;
  std::string text = read_file(path), kept;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    try {
      if (json::parse(line)["step"].as_int() <= step) kept += line + "\n";
    } catch (const Error&) {
      // A torn last line from a crash: dropped.
    }
  }
  write_file_atomic(path, kept);
}

json::Value step_line(json::Value line, const StepResult& result, double tokens_per_s) {
  for (const auto& [name, mean] : result.means) line[name] = mean;
  line["lr"] = result.optimizer.lr;
  line["grad_norm"] = result.optimizer.grad_norm;
  line["tokens_per_s"] = tokens_per_s;
  return line;
}

double Throughput::per_second_and_restart() {
  auto now = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(now - start_).count();
  double rate = seconds > 0 ? tokens_ / seconds : 0;
  tokens_ = 0;
  start_ = now;
  return rate;
}

double RunClock::elapsed() const {
  return before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

double RunClock::seconds_left(int64_t steps_done_this_call, int64_t steps_left) const {
  double rate = steps_done_this_call / std::max(1e-9, elapsed() - before_);
  return steps_left / std::max(rate, 1e-9);
}

std::string format_duration(double seconds) {
  char buf[32];
  long s = static_cast<long>(seconds);
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  return buf;
}

// ---- stopping on Ctrl-C ---------------------------------------------------------------------

namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
extern "C" void on_interrupt(int signal) {
  g_signal = signal;
  g_interrupted = true;
}

}  // namespace

// SIGTERM too: it is what mpirun sends every rank on Ctrl-C (and Slurm at a
// job's time limit), a grace period before SIGKILL.
InterruptScope::InterruptScope()
    : previous_(std::signal(SIGINT, on_interrupt)), previous_term_(std::signal(SIGTERM, on_interrupt)) {
  g_interrupted = false;
  g_signal = 0;
}
InterruptScope::~InterruptScope() {
  std::signal(SIGINT, previous_);
  std::signal(SIGTERM, previous_term_);
}
bool InterruptScope::interrupted() { return g_interrupted; }
const char* InterruptScope::signal_name() {
  switch (g_signal.load()) {
    case SIGINT: return "Ctrl-C (SIGINT)";
    case SIGTERM: return "SIGTERM";
    case 0: return "";
    default: return "a signal";
  }
}

// ---- the ranks of a data-parallel run ---------------------------------------------------------

// Every rank must train the same run: a rank whose resolved config (or
// output) differs from rank 0's is refused, naming the first differing key.
// Every rank learns whether any differs, so that rank 0 too stops before
// writing anything (it would otherwise have staged its output by the time
// the failing rank's abort reaches it). Every rank then throws the first
// differing rank's message: the first rank to fail ends the job
// (tools/ranks.h), and whichever it is, the message names the difference.
void check_same_config(parallel::Communicator& comm, const json::Value& config, const std::string& out) {
  if (comm.size() == 1) return;
  std::string mine = json::dump(config) + "\n" + out, lead = mine;
  comm.broadcast(lead, 0);
  const bool differs = lead != mine;
  if (!comm.any(differs)) return;
  std::string message;
  if (differs) {
    const size_t split = lead.rfind('\n');
    const std::string lead_out = lead.substr(split + 1);
    if (lead_out != out) {
      message = detail::cat("rank ", comm.rank(), " writes to '", out, "', rank 0 to '", lead_out,
                            "': every rank of a data-parallel run must be given the same --out");
    } else {
      const std::string key = json::first_difference(json::parse(lead.substr(0, split)), config);
      message = detail::cat("rank ", comm.rank(), "'s run config differs from rank 0's at '", key,
                            "': every rank of a data-parallel run must resolve the same config (same files, same --set)");
    }
  }
  int first = 1;  // the lowest differing rank (rank 0 never differs from itself)
  while (!comm.any(comm.rank() == first && differs)) ++first;
  comm.broadcast(message, first);
  throw Error(message + "; nothing was written");
}

}  // namespace ordo::train
