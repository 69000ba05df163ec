#include "nn/input_json.h"

#include <algorithm>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json.h"
#include "nn/bert.h"

namespace ordo::nn {

namespace {

// A [batch][length] integer array read from one key of the input, each
// value checked against [low, high). Errors name the key, the row and the column.
struct IdMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> values;
};

// "a string", "an array", ... for messages.
std::string a_type(const json::Value& v) {
  std::string t = json::type_name(v.type());
  return (t == "array" || t == "object" ? "an " : "a ") + t;
}

IdMatrix read_matrix(const json::Value& v, const std::string& key, const std::string& file, int64_t low,
                     int64_t high, const std::string& range_note) {
  const std::string where = file + ": \"" + key + "\"";
  ORDO_CHECK(v.is_array(), where, " must be an array of rows (arrays of integers), got ", a_type(v));
  ORDO_CHECK(v.size() > 0, where, " is empty: give at least one row");
  IdMatrix m;
  m.rows = static_cast<int64_t>(v.size());
  for (int64_t r = 0; r < m.rows; ++r) {
    const json::Value& row = v[static_cast<size_t>(r)];
    ORDO_CHECK(row.is_array(), where, " row ", r, " must be an array of integers, got ", a_type(row));
    const int64_t n = static_cast<int64_t>(row.size());
    if (r == 0) {
      ORDO_CHECK(n > 0, where, " row 0 is empty");
      m.cols = n;
    }
    ORDO_CHECK(n == m.cols, where, " row ", r, " has ", n, " entries, row 0 has ", m.cols,
               " (rows must all have one length; pad them and say so in attention_mask)");
    for (int64_t c = 0; c < n; ++c) {
      const json::Value& x = row[static_cast<size_t>(c)];
      int64_t id = 0;
      try {
        id = x.as_int();
      } catch (const Error&) {
        throw Error(detail::cat(where, " row ", r, " column ", c, ": expected an integer, got ",
                                x.is_number() ? json::dump(x) : a_type(x)));
      }
      ORDO_CHECK(id >= low && id < high, where, " row ", r, " column ", c, ": ", id, " is outside [", low, ", ",
                 high, ")", range_note);
      m.values.push_back(id);
    }
  }
  return m;
}

}  // namespace

InputBatch parse_input_batch(std::string_view text, const std::string& file, const BertConfig& config,
                             int64_t max_position) {
  json::Value input;
  try {
    input = json::parse(text);
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
  ORDO_CHECK(input.is_object(), file, ": expected a JSON object with \"input_ids\", got ", a_type(input));
  for (const auto& [key, value] : input.items()) {
    (void)value;
    ORDO_CHECK(key == "input_ids" || key == "segment_ids" || key == "positions" || key == "attention_mask", file,
               ": unknown key \"", key, "\" (expected input_ids, segment_ids, positions, attention_mask)");
  }
  const json::Value* ids = input.find("input_ids");
  ORDO_CHECK(ids != nullptr, file, ": no \"input_ids\"");

  InputBatch b;
  IdMatrix m = read_matrix(*ids, "input_ids", file, 0, config.vocab_size,
                           " (the vocabulary has " + std::to_string(config.vocab_size) + " ids)");
  b.rows = m.rows;
  b.cols = m.cols;
  const Shape shape{b.rows, b.cols};
  b.input_ids = Tensor::from_vector(m.values, shape);

  // Each optional key: the same shape as input_ids, its own range.
  auto optional = [&](const std::string& key, int64_t low, int64_t high, const std::string& note) -> Tensor {
    const json::Value* v = input.find(key);
    if (!v) return Tensor();
    IdMatrix x = read_matrix(*v, key, file, low, high, note);
    ORDO_CHECK(x.rows == b.rows, file, ": \"", key, "\" has ", x.rows, " rows, input_ids has ", b.rows);
    ORDO_CHECK(x.cols == b.cols, file, ": \"", key, "\" rows have ", x.cols, " entries, input_ids rows have ", b.cols);
    return Tensor::from_vector(x.values, shape);
  };
  // A model without segment embeddings (GPT-2, type_vocab_size 0) takes segment 0 only.
  b.segment_ids = optional("segment_ids", 0, std::max<int64_t>(config.type_vocab_size, 1),
                           " (type_vocab_size is " + std::to_string(config.type_vocab_size) + ")");
  // An absolute table has max_position + 1 rows; other encodings take any
  // non-negative position.
  const int64_t position_limit = max_position >= 0 ? max_position + 1 : INT64_MAX;
  b.positions = optional("positions", 0, position_limit,
                         max_position >= 0 ? " (the learned position table of " + config.pe + " has " +
                                                 std::to_string(position_limit) + " rows: max_position_embeddings)"
                                           : "");
  b.attention_mask = optional("attention_mask", 0, 2, " (1: a real token, 0: padding)");

  if (!b.positions.defined()) {
    ORDO_CHECK(b.cols <= position_limit, file, ": rows of ", b.cols, " tokens need positions 0..", b.cols - 1,
               ", beyond the learned position table of ", position_limit,
               " rows (max_position_embeddings); shorten the rows or give \"positions\"");
    // RoBERTa's positions skip padding tokens, as HF counts them.
    b.positions = config.position_offset > 0 ? positions_skipping_padding(b.input_ids, config.pad_token_id)
                                             : default_positions(b.rows, b.cols, Device::cpu());
  }
  if (!b.segment_ids.defined()) b.segment_ids = Tensor::zeros(shape, DType::i64);
  if (b.attention_mask.defined()) {
    std::vector<int64_t> mask = b.attention_mask.to_vector<int64_t>();
    for (int64_t r = 0; r < b.rows; ++r) {
      bool any = false;
      for (int64_t c = 0; c < b.cols; ++c) any |= mask[r * b.cols + c] != 0;
      ORDO_CHECK(any, file, ": \"attention_mask\" row ", r, " is all 0: the row has no token to attend to");
    }
  } else {
    b.attention_mask = Tensor::ones(shape, DType::i64);
  }
  return b;
}


InputBatch read_input_batch(const std::string& file, const BertConfig& config, int64_t max_position) {
  return parse_input_batch(read_file(file), file, config, max_position);
}

}  // namespace ordo::nn
