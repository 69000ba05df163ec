// libFuzzer target for `ordo forward`'s input JSON (nn::parse_input_batch),
// against a small model: a vocabulary of 100, 2 segment types, and either a
// learned position table of 64 rows (first byte even) or none (odd). Every
// batch accepted must hold in-range ids of one shape.
#include <cstdlib>

#include "base/error.h"
#include "fuzz/fuzz_common.h"
#include "nn/input_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ordo;
  if (size == 0) return 0;
  nn::BertConfig config;
  config.vocab_size = 100;
  config.type_vocab_size = 2;
  const int64_t max_position = data[0] % 2 == 0 ? 63 : -1;
  try {
    nn::InputBatch b = nn::parse_input_batch(fuzz::text(data + 1, size - 1), "fuzz.json", config, max_position);
    for (const Tensor* t : {&b.input_ids, &b.segment_ids, &b.positions, &b.attention_mask})
      if (t->shape() != Shape{b.rows, b.cols}) std::abort();
    for (int64_t id : b.input_ids.to_vector<int64_t>())
      if (id < 0 || id >= config.vocab_size) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
