// libFuzzer target for a checkpoint folder as --resume, ordo probe and ordo
// finetune read it: config.json, trainer_state.json and model.safetensors
// together. The input is the three files' bytes in that order, separated by
// the line "#ordo-file#" (fuzz/checkpoint.dict has it), written into a
// folder named like a checkpoint (checkpoints/step_000000001/) so that the
// trainer state's claims about its step and its files' digests are checked
// against a real place. A config that describes a small model also has the
// model built and the weights loaded into it (every name, shape and dtype checked).
#include <filesystem>
#include <string>

#include "base/error.h"
#include "base/file_io.h"
#include "fuzz/fuzz_common.h"
#include "model/model.h"
#include "nn/checkpoint.h"
#include "train/loop.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  static const std::string dir =
      "/tmp/ordo-fuzz-" + std::to_string(::getpid()) + "-checkpoint/checkpoints/step_000000001";
  static const bool made = (std::filesystem::create_directories(dir), true);
  (void)made;
  const char* names[] = {"config.json", "trainer_state.json", "model.safetensors"};
  const std::vector<std::string> files = fuzz::parts(data, size, 3);
  for (int i = 0; i < 3; ++i) write_file_atomic(dir + "/" + names[i], files[i]);
  try {
    train::load_trainer_state(dir);
  } catch (const Error&) {
  }
  try {
    const nn::BertConfig c = nn::load_config(dir);
    // Only models that build in microseconds: the fuzzer is after the checks, not big tables.
    if (c.hidden_size <= 64 && c.num_hidden_layers <= 2 && c.max_position_embeddings <= 256 &&
        c.intermediate_size <= 256 && c.type_vocab_size <= 16 && c.vocab_size <= 512)
      model::load_model(dir, Device::cpu());
  } catch (const Error&) {
  }
  return 0;
}
