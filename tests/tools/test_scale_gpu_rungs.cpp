// tools/scale_gpu_rungs.sh --merge: the GPU rungs' run folders brought into
// the scale study's folder beside the CPU rungs. A folder the study does not
// plan is refused before anything is copied (it would make the study's folder
// refused by every later command), a run already there is kept as it is, and
// a copy lands under its name only once whole.
#include <filesystem>

#include "base/file_io.h"
#include "tests/helpers.h"

using namespace ordo;
using namespace ordo::test;
using Catch::Matchers::Contains;

namespace {

CommandResult merge(const std::string& from, const std::string& into) {
  const std::string build = std::filesystem::path(ORDO_BINARY).parent_path().string();
  return run_command("cd " + std::string(ORDO_SOURCE_DIR) + " && tools/scale_gpu_rungs.sh --build " + build +
                     " --merge " + from + " --into " + into + " 2>&1");
}

}  // namespace

TEST_CASE("scale_gpu_rungs.sh --merge copies the study's runs only, keeping those already there",
          "[experiment][ladder][errors]") {
  TempDir dir("gpu_merge");
  const std::string gpu = dir / "gpu", into = dir / "study";
  std::filesystem::create_directories(gpu + "/runs/02_ape_learned=small_16k");
  write_file_atomic(gpu + "/runs/02_ape_learned=small_16k/stages.json", "{\"from\": \"the GPU\"}");
  std::filesystem::create_directories(gpu + "/runs/.ordo-bookkeeping");
  std::filesystem::create_directories(gpu + "/runs/someone_elses_run");

  CommandResult r = merge(gpu, into);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains(gpu + "/runs/someone_elses_run is no run of configs/scale_study's plan; nothing "
                                      "merged"));
  CHECK_FALSE(std::filesystem::exists(into + "/runs/02_ape_learned=small_16k"));

  std::filesystem::remove(gpu + "/runs/someone_elses_run");
  std::filesystem::create_directories(gpu + "/runs/05_rpe_learned=small_16k");
  std::filesystem::create_directories(into + "/runs/05_rpe_learned=small_16k");
  write_file_atomic(into + "/runs/05_rpe_learned=small_16k/stages.json", "{\"from\": \"here\"}");
  r = merge(gpu, into);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("1 run(s) copied from " + gpu + ", 1 already in " + into));
  CHECK(read_file(into + "/runs/02_ape_learned=small_16k/stages.json") == "{\"from\": \"the GPU\"}");
  CHECK(read_file(into + "/runs/05_rpe_learned=small_16k/stages.json") == "{\"from\": \"here\"}");
  for (const auto& e : std::filesystem::directory_iterator(into + "/runs"))
    CHECK(e.path().filename().string().find(".merging") == std::string::npos);
  CHECK(std::filesystem::exists(into + "/report/paper.md"));
}
