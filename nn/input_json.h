// The model inputs `ordo forward` reads: a JSON object
//   {"input_ids": [[...], ...], optional "segment_ids", "positions", "attention_mask"}
// of [batch][length] integer arrays of one shape, each value checked against
// its range (the vocabulary, type_vocab_size, the learned position table,
// 0/1). Errors name the file, the key, the row and the column.
#pragma once

#include <string>
#include <string_view>

#include "nn/bert_config.h"
#include "tensor/tensor.h"

namespace ordo::nn {

struct InputBatch {
  int64_t rows = 0, cols = 0;
  Tensor input_ids, segment_ids, positions, attention_mask;  // [rows, cols] i64 on the CPU
};

// max_position: the largest position the encoding has a learned row for, or
// -1 when any non-negative position is fine. Absent keys get their defaults:
// positions 0..cols-1 (RoBERTa: counting only non-padding tokens, a padding
// token -1, as HF does), segment 0, every token attended to.
InputBatch parse_input_batch(std::string_view text, const std::string& file, const BertConfig& config,
                             int64_t max_position);
InputBatch read_input_batch(const std::string& file, const BertConfig& config, int64_t max_position);

}  // namespace ordo::nn
