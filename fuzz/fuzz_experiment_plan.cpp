// libFuzzer target for an experiment's plan as `ordo experiment FOLDER`
// reads it (experiment/plan.h): the input is FOLDER/experiment.json, then
// optionally the line "#ordo-file#" and a paper table (FOLDER/paper_x.tsv,
// experiment/paper_table.h). The folder also holds two small run configs,
// a_none.json and b_ape.json, so that every stage's settings are checked
// against real configs (probe layers and lengths, fine-tuning tasks, stand-ins,
// lengths against the position table, the paper table's rows).
#include <filesystem>
#include <string>

#include "base/error.h"
#include "base/file_io.h"
#include "experiment/plan.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  static const std::string folder = "/tmp/ordo-fuzz-" + std::to_string(::getpid()) + "-plan";
  static const bool made = [] {
    std::filesystem::create_directories(folder);
    const char* config = R"({"model": {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 32, "pe": "PE"},
      "data": {"synthetic_sentences": 50, "vocab_size": 60}, "train": {"steps": 2, "max_seq_length": 32}})";
    for (const char* pe : {"none", "ape_learned"}) {
      std::string text = config;
      text.replace(text.find("PE"), 2, pe);
      write_file_atomic(folder + (pe[0] == 'n' ? "/a_none.json" : "/b_ape.json"), text);
    }
    return true;
  }();
  (void)made;
  const std::string input = fuzz::text(data, size), separator = "\n#ordo-file#\n";
  const size_t split = input.find(separator);
  write_file_atomic(folder + "/experiment.json", input.substr(0, split));
  std::filesystem::remove(folder + "/paper_x.tsv");
  if (split != std::string::npos) write_file_atomic(folder + "/paper_x.tsv", input.substr(split + separator.size()));
  try {
    experiment::PlanRequest request;
    request.folder = folder;
    request.out = folder + "-out";
    experiment::make_plan(request);
  } catch (const Error&) {
  }
  return 0;
}
