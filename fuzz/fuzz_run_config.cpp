// libFuzzer target for the run config (train::parse_run_config) with --set
// overrides: the input is a config's JSON, then optionally a NUL byte and
// newline-separated assignments (key=value), as `ordo pretrain --config FILE
// --set ...` hands them over. A config that validates and describes a small
// model also has its position encoding built, so each variant's options are
// read and checked too.
#include <string>
#include <vector>

#include "base/json.h"
#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "pe/registry.h"
#include "train/pretrain.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  const std::string input = fuzz::text(data, size);
  const size_t nul = input.find('\0');
  std::vector<std::string> overrides;
  if (nul != std::string::npos) {
    size_t start = nul + 1;
    while (start <= input.size()) {
      size_t end = input.find('\n', start);
      if (end == std::string::npos) end = input.size();
      if (end > start) overrides.push_back(input.substr(start, end - start));
      start = end + 1;
    }
  }
  try {
    train::RunConfig c = train::parse_run_config(json::parse(input.substr(0, nul)), overrides, "fuzz");
    nn::BertConfig& m = c.model;
    // Only shapes that build in microseconds: the fuzzer is after the validation, not big tables.
    if (m.hidden_size <= 64 && m.num_hidden_layers <= 2 && m.max_position_embeddings <= 256 &&
        m.intermediate_size <= 256 && m.type_vocab_size <= 16) {
      m.vocab_size = 40;
      pe::make_position_encoding(m, Device::cpu());
    }
  } catch (const Error&) {
  }
  return 0;
}
