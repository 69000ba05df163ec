// `mpirun -np 2 ordo pretrain` against one process: the same run, the same
// numbers, and the failures a job of several processes can have. Built where
// CMake found MPI and mpirun (ORDO_TEST_MPIEXEC); ctest runs these as the one
// entry `data_parallel` ([mpi]), reported as skipped, with the reason, where
// MPI is absent. The expected values are one process's own run of the same
// global batch — an independent path through the code (no communicator, no
// reducer, the micro-batches accumulated in one backward each).
#ifdef ORDO_TEST_MPIEXEC

#include <cmath>
#include <fstream>
#include <sstream>

#include "base/file_io.h"
#include "base/json.h"
#include "tensor/safetensors.h"
#include "tests/helpers.h"

using ordo::test::CommandResult;
using ordo::test::run_command;
using ordo::test::run_ordo;
using ordo::test::TempDir;

namespace {

// Two processes on a machine of any size; as root (CI containers); and with
// Open MPI's shared-memory transport copying through its own buffers (the
// single-copy mechanism needs ptrace rights containers do not grant). In the
// sanitized build LeakSanitizer ignores the allocations Open MPI keeps until
// exit (tests/tools/lsan_open_mpi.supp says why and how narrowly); the other
// builds ignore these variables.
const std::string kOpenMpiEnv = std::string(
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
    "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mca_base_component_disable_dlclose=1 "
    "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0 "
    "LSAN_OPTIONS=suppressions=") + ORDO_SOURCE_DIR + "/tests/tools/lsan_open_mpi.supp ";
const std::string kMpirun = kOpenMpiEnv + ORDO_TEST_MPIEXEC + " --bind-to none ";

std::string tiny_run(const std::string& extra) {
  return std::string("pretrain --quiet --config ") + ORDO_SOURCE_DIR + "/configs/tiny.json"
         " --set data.synthetic_sentences=300 --set data.vocab_size=200 --set model.hidden_size=32"
         " --set model.intermediate_size=64 --set train.steps=4 --set train.batch_size=4 --set train.max_seq_length=32"
         " --set train.threads=1 --set train.log_every=1 --set train.eval_every=0 --set train.warmup_ratio=0"
         // Dropout on (tiny.json has none): the ranks must draw each micro-batch's masks as one process does.
         " --set model.hidden_dropout_prob=0.1 --set model.attention_probs_dropout_prob=0.1 " + extra;
}

CommandResult mpirun(int processes, const std::string& ordo_args) {
  return run_command(kMpirun + "-np " + std::to_string(processes) + " " + ORDO_BINARY + " " + ordo_args);
}

std::vector<ordo::json::Value> step_lines(const std::string& run) {
  std::vector<ordo::json::Value> lines;
  std::ifstream in(run + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    ordo::json::Value v = ordo::json::parse(line);
    if (v.contains("loss")) lines.push_back(v);
  }
  return lines;
}

std::string checkpoint(const std::string& run, int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%09d", step);
  return run + "/checkpoints/" + name;
}

}  // namespace

TEST_CASE("mpirun -np 2: the same run as one process with the global batch, bit for bit", "[mpi]") {
  TempDir dir("dp");
  // One process: grad_accum 2 is the global batch of two ranks of grad_accum 1
  // (same micro-batches, same dropout streams); a + b = b + a, so exact.
  REQUIRE(run_ordo(tiny_run("--set train.grad_accum=2 --out " + (dir / "one"))).exit_code == 0);
  for (const char* buckets : {"25", "0.02"}) {  // one bucket; a bucket per few tensors, reduced during the backward
    INFO("bucket_cap_mb " << buckets);
    const std::string out = dir / (std::string("two_") + buckets);
    const CommandResult r = mpirun(2, tiny_run(std::string("--set train.bucket_cap_mb=") + buckets + " --out " + out));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    for (const char* file : {"model.safetensors", "optimizer.safetensors"})
      CHECK(ordo::read_file(checkpoint(dir / "one", 4) + "/" + file) == ordo::read_file(checkpoint(out, 4) + "/" + file));
    const auto one = step_lines(dir / "one"), two = step_lines(out);
    REQUIRE(one.size() == 4);
    REQUIRE(two.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
      CHECK(two[i]["loss"].as_number() == one[i]["loss"].as_number());
      CHECK(two[i]["grad_norm"].as_number() == one[i]["grad_norm"].as_number());
    }
    const ordo::json::Value state = ordo::json::parse(ordo::read_file(checkpoint(out, 4) + "/trainer_state.json"));
    CHECK(state["ranks"].as_int() == 2);
  }
}

// The GPU path: each rank on its GPU, the gradient buckets all-reduced by NCCL
// on a stream of its own (in the emulated build, the stand-in NCCL over MPI on
// emulated device memory). Several buckets, so that they are reduced while the
// backward still runs. On a real machine this needs two GPUs (NCCL refuses two
// ranks on one); ctest's data_parallel_cuda entry says so and skips.
TEST_CASE("mpirun -np 2 on CUDA: NCCL's run is one process's with the global batch, bit for bit", "[mpi][cuda]") {
  TempDir dir("dp-cuda");
  const std::string cuda = "--set train.device=cuda --set train.bucket_cap_mb=0.02 ";
  REQUIRE(run_ordo(tiny_run(cuda + "--set train.grad_accum=2 --out " + (dir / "one"))).exit_code == 0);
  std::string args = tiny_run(cuda + "--out " + (dir / "two"));
  args.erase(args.find("--quiet "), 8);  // the header says which transport carried the gradients
  const CommandResult r = mpirun(2, args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
#ifdef ORDO_TEST_NCCL
  CHECK(r.output.find("data parallel: 2 processes (nccl)") != std::string::npos);
#endif
  for (const char* file : {"model.safetensors", "optimizer.safetensors"})
    CHECK(ordo::read_file(checkpoint(dir / "one", 4) + "/" + file) == ordo::read_file(checkpoint(dir / "two", 4) + "/" + file));
  const auto one = step_lines(dir / "one"), two = step_lines(dir / "two");
  REQUIRE(one.size() == 4);
  REQUIRE(two.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(two[i]["loss"].as_number() == one[i]["loss"].as_number());
    CHECK(two[i]["grad_norm"].as_number() == one[i]["grad_norm"].as_number());
  }
}

TEST_CASE("mpirun -np 2 with accumulation: one process's run of the same batches, within rounding", "[mpi]") {
  TempDir dir("dp-accum");
  REQUIRE(run_ordo(tiny_run("--set train.grad_accum=4 --out " + (dir / "one"))).exit_code == 0);
  const CommandResult r = mpirun(2, tiny_run("--set train.grad_accum=2 --set train.bucket_cap_mb=0.02 --out " + (dir / "two")));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Each rank sums its two micro-batches first ((g0 + g1) + (g2 + g3) against
  // one process's ((g0 + g1) + g2) + g3): the gradients differ by a few f32
  // ulps, and so the losses after an update and the norms. 1e-5 relative is
  // ~100 ulps; a wrong share of the batch moves the loss by ~1e-2.
  const auto one = step_lines(dir / "one"), two = step_lines(dir / "two");
  REQUIRE(one.size() == 4);
  REQUIRE(two.size() == 4);
  CHECK(two[0]["loss"].as_number() == one[0]["loss"].as_number());  // before any update: the same forwards
  for (size_t i = 0; i < 4; ++i) {
    INFO("step " << i + 1);
    CHECK(std::fabs(two[i]["loss"].as_number() - one[i]["loss"].as_number()) <= 1e-5 * one[i]["loss"].as_number());
    CHECK(std::fabs(two[i]["grad_norm"].as_number() - one[i]["grad_norm"].as_number()) <=
          1e-5 * one[i]["grad_norm"].as_number());
  }
}

TEST_CASE("mpirun -np 2: --resume continues exactly with two ranks and is refused with another count", "[mpi]") {
  TempDir dir("dp-resume");
  REQUIRE(run_ordo(tiny_run("--set train.grad_accum=2 --out " + (dir / "one"))).exit_code == 0);
  const std::string run = dir / "two";
  REQUIRE(mpirun(2, tiny_run("--stop-after 2 --out " + run)).exit_code == 0);
  const CommandResult single = run_ordo("pretrain --quiet --resume " + run);
  CHECK(single.exit_code == 1);
  CHECK(single.output.find("trained by 2 process(es) and this is 1") != std::string::npos);
  CHECK(!ordo::file_exists(checkpoint(run, 4)));
  const CommandResult resumed = mpirun(2, "pretrain --quiet --resume " + run);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(ordo::read_file(checkpoint(dir / "one", 4) + "/model.safetensors") ==
        ordo::read_file(checkpoint(run, 4) + "/model.safetensors"));
}

TEST_CASE("mpirun: ranks given different configs are refused, naming the rank and the key, before writing", "[mpi]") {
  TempDir dir("dp-config");
  const std::string out = dir / "run";
  // Open MPI's MPMD form: rank 0 and rank 1 run different command lines.
  const CommandResult r = run_command(kMpirun + "-np 1 " + ORDO_BINARY + " " + tiny_run("--out " + out) + " : -np 1 " +
                                      ORDO_BINARY + " " + tiny_run("--set train.lr=0.0005 --out " + out));
  CHECK(r.exit_code != 0);
  // Every rank fails with the differing rank's message; the first to fail ends the job and prints it.
  CHECK(r.output.find(": error: rank 1's run config differs from rank 0's at 'train.lr'") != std::string::npos);
  CHECK(dir.names().empty());  // no run folder, no staging folder
}

TEST_CASE("mpirun: a rank that dies mid-run ends the whole job, never a hang", "[mpi]") {
  TempDir dir("dp-crash");
  const std::string out = dir / "run";
  // Rank 1 is killed (SIGKILL: no chance to say anything) after its first
  // steps; rank 0 would wait for it in the next all-reduce forever.
  const std::string steps = "--set train.steps=1000000 ";
  const std::string rank1 = "sh -c '" + std::string(ORDO_BINARY) + " " + tiny_run(steps + "--out " + out) +
                            " & pid=$!; sleep 3; kill -9 $pid; wait $pid'";
  const CommandResult r = run_command("timeout 120 env " + kMpirun + "-np 1 " + ORDO_BINARY + " " +
                                      tiny_run(steps + "--out " + out) + " : -np 1 " + rank1);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != 124);  // timeout's: the job hung
}

TEST_CASE("mpirun: Ctrl-C stops every rank after the same step, with a checkpoint to resume from", "[mpi]") {
  TempDir dir("dp-interrupt");
  const std::string run = dir / "run";
  // Open MPI's mpirun answers Ctrl-C with SIGTERM to every rank after
  // odls_base_sigkill_timeout seconds and SIGKILL as many seconds later: the
  // ranks have that long to finish the step and write the checkpoint.
  const std::string launch = kMpirun + "--mca odls_base_sigkill_timeout 5 -np 2 " + ORDO_BINARY + " " +
                             tiny_run("--set train.steps=1000000 --out " + run);
  const CommandResult r = run_command("(" + launch + " > " + (dir / "log") + " 2>&1 & pid=$!; "
                                      "while [ ! -s " + run + "/metrics.jsonl ]; do sleep 0.2; done; sleep 1; "
                                      "kill -INT $pid; wait $pid; echo exit $?)");
  INFO(r.output << ordo::read_file(dir / "log"));
  const std::vector<ordo::json::Value> lines = step_lines(run);
  REQUIRE(!lines.empty());
  const int last = static_cast<int>(lines.back()["step"].as_int());
  CHECK(last < 1000000);
  REQUIRE(ordo::file_exists(checkpoint(run, last) + "/trainer_state.json"));
  // mpirun passes Ctrl-C to its ranks as SIGTERM, and rank 0 says which signal stopped it.
  CHECK(ordo::read_file(dir / "log").find("interrupted by SIGTERM at step " + std::to_string(last)) != std::string::npos);
}

// Fine-tuning: each rank a contiguous share of every batch, its loss weighted
// by its share of the examples. Expected: one process's run of the same
// batches, within the rounding of the different order of the sums (dropout
// off: its masks are drawn per share). The batch size is odd, so the two
// shares of a full batch differ in size and only their weights make the mean
// right; where it leaves a last batch of one example, one rank's share is
// empty (one example at weight 0).
TEST_CASE("mpirun -np 2 ordo finetune: one process's run within rounding, rank 0 alone writes", "[mpi]") {
  TempDir dir("dp-finetune");
  REQUIRE(run_ordo(tiny_run("--set model.hidden_dropout_prob=0 --set model.attention_probs_dropout_prob=0 --out " +
                            (dir / "pretrained"))).exit_code == 0);
  REQUIRE(run_ordo("data tasks --from " + (dir / "pretrained") + " --out " + (dir / "tasks")).exit_code == 0);
  std::ifstream train(dir / "tasks/roles/train.tsv");
  int64_t examples = -1;  // the header
  for (std::string line; std::getline(train, line);) ++examples;
  REQUIRE(examples > 8);
  const std::string finetune = "finetune --quiet --checkpoint " + (dir / "pretrained") + " --task rte --data " +
                               (dir / "tasks/roles") + " --set train.epochs=2 --set train.log_every=1"
                               " --set train.max_seq_length=32 --set train.lr=1e-3 --set train.threads=1"
                               " --set train.batch_size=" + std::to_string(examples % 2 == 0 ? examples - 1 : examples - 2) +
                               " --set train.bucket_cap_mb=0.02 --out ";
  REQUIRE(run_ordo(finetune + (dir / "one")).exit_code == 0);
  const CommandResult r = mpirun(2, finetune + (dir / "two"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string run = "/runs/lr_0.001_seed_42";
  const auto one = step_lines(dir / ("one" + run)), two = step_lines(dir / ("two" + run));
  REQUIRE(one.size() == 4);  // two batches an epoch
  REQUIRE(two.size() == 4);
  CHECK(two[0]["loss"].as_number() == Approx(one[0]["loss"].as_number()).epsilon(1e-6));  // the same forward
  for (size_t i = 0; i < 4; ++i) {
    INFO("step " << i + 1);
    CHECK(std::fabs(two[i]["loss"].as_number() - one[i]["loss"].as_number()) <= 1e-5 * one[i]["loss"].as_number());
    CHECK(std::fabs(two[i]["grad_norm"].as_number() - one[i]["grad_norm"].as_number()) <=
          1e-5 * one[i]["grad_norm"].as_number());
  }
  const ordo::json::Value a = ordo::json::parse(ordo::read_file(dir / "one/results.json"));
  const ordo::json::Value b = ordo::json::parse(ordo::read_file(dir / "two/results.json"));
  CHECK(b["learning_rates"][0]["runs"][0]["best"] == a["learning_rates"][0]["runs"][0]["best"]);
  // The same files, written once.
  for (const char* file : {"config.json", "runs/lr_0.001_seed_42/dev_predictions.tsv",
                           "runs/lr_0.001_seed_42/best/model.safetensors"})
    CHECK(ordo::file_exists(dir / "two/" + std::string(file)));
  // Ranks given different configs: refused on every rank before rank 0 writes anything (no staging folder).
  const auto names = dir.names();
  const CommandResult mismatch = run_command(kMpirun + "-np 1 " + ORDO_BINARY + " " + finetune + (dir / "three") +
                                             " : -np 1 " + ORDO_BINARY + " " + finetune + (dir / "three") +
                                             " --set train.epochs=3");
  INFO(mismatch.output);
  CHECK(mismatch.exit_code != 0);
  CHECK(mismatch.output.find("rank 1's run config differs from rank 0's at 'train.epochs'") != std::string::npos);
  CHECK(dir.names() == names);
}

TEST_CASE("ordo bench dp: the bytes all-reduced are the parameters', the 2-process step is measured", "[mpi][bench]") {
  const CommandResult r = run_ordo("bench dp --config tiny --cpu-config tiny --cpu-batch 1 --steps 1"
                                   " --set train.batch_size=2 --set train.max_seq_length=8",
                                   kOpenMpiEnv);  // the command starts mpirun itself
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The measured table's tiny row: name, parameters, MB all-reduced, calls, 1 process ms, 2 processes ms, efficiency.
  const size_t row = r.output.find("\ntiny ");
  REQUIRE(row != std::string::npos);
  std::istringstream cells(r.output.substr(row + 1));
  std::string name, calls, efficiency;
  double parameters = 0, megabytes = 0, one = 0, two = 0;
  REQUIRE(cells >> name >> parameters >> megabytes >> calls >> one >> two >> efficiency);
  // f32 gradients plus one presence count per tensor (a few hundred bytes):
  // within the table's 0.01 MB rounding of 4 bytes per parameter.
  CHECK(std::fabs(megabytes - 4 * parameters / 1e6) <= 0.01);
  CHECK(one > 0);
  CHECK(two > 0);
  CHECK(r.output.find("MODEL of one step on 8 x NVIDIA H100") != std::string::npos);
}

#endif  // ORDO_TEST_MPIEXEC
