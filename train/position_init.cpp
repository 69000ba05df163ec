// A fresh model's position table copied from another model (train/position_init.h).
#include "train/position_init.h"

#include <algorithm>
#include <limits>

#include "base/error.h"
#include "model/model.h"
#include "nn/bert.h"
#include "nn/checkpoint.h"
#include "pe/registry.h"

namespace ordo::train {

namespace {

const char* kTable = "bert.embeddings.position_embeddings.weight";

bool has_learned_table(const nn::BertConfig& c) {
  for (size_t start = 0;;) {
    const size_t plus = c.pe.find('+', start);
    if (c.pe.substr(start, plus == std::string::npos ? std::string::npos : plus - start) == "ape_learned") return true;
    if (plus == std::string::npos) return false;
    start = plus + 1;
  }
}

// The rows a source's table has for positions 0, 1, ... (a function of the
// position has as many as asked); -1 when it adds nothing at the input.
int64_t source_rows(nn::PositionEncoding& pe) {
  nn::Context ctx = nn::Context::eval();
  if (!pe.input_embedding(nn::default_positions(1, 1, Device::cpu()), ctx).defined()) return -1;
  return pe.max_position() < 0 ? std::numeric_limits<int64_t>::max() : pe.max_position() + 1;
}

// What a source's table is, for the header: "ape_learned", "ape_sin, as computed", "roberta's ape_learned from row 2".
std::string kind_of(const nn::BertConfig& c) {
  std::string kind = (c.model_type != "bert" ? c.model_type + "'s " : "") + c.pe;
  if (c.pe.find("ape_sin") != std::string::npos) kind += ", as computed";
  if (c.position_offset > 0) kind += " from row " + std::to_string(c.position_offset);
  return kind;
}

}  // namespace

void check_position_copy(const nn::BertConfig& source, const nn::BertConfig& fresh, int64_t max_seq_length,
                         const std::string& where) {
  ORDO_CHECK(has_learned_table(fresh), where, ": the fresh model's model.pe '", fresh.pe,
             "' has no learned absolute table to copy into (set model.pe=ape_learned)");
  const int64_t rows = source_rows(*pe::make_position_encoding(source, Device::cpu()));
  ORDO_CHECK(rows >= 0, where, ": its position encoding '", source.pe,
             "' adds nothing at the input: there is no absolute position table to copy (ape_learned, ape_sin, "
             "ape_sin_learnable and HF's BERT, RoBERTa and GPT-2 checkpoints have one)");
  ORDO_CHECK(source.hidden_size == fresh.hidden_size, where, ": its position table is ", source.hidden_size,
             " wide, the fresh model's hidden_size is ", fresh.hidden_size, " (set model.hidden_size=",
             source.hidden_size, ", or fine-tune a checkpoint of that width)");
  ORDO_CHECK(rows >= max_seq_length, where, ": its position table has ", rows, " rows, fewer than train.max_seq_length ",
             max_seq_length, " (lower train.max_seq_length, or copy from a longer table)");
}

PositionTable read_position_table(const std::string& checkpoint, const nn::BertConfig& fresh, int64_t max_seq_length) {
  const std::string where = "--init-positions-from " + checkpoint;
  const nn::BertConfig config = nn::load_config(checkpoint);
  check_position_copy(config, fresh, max_seq_length, where);
  nn::LoadReport report;  // a bare encoder reads too: only its input table is wanted
  const std::unique_ptr<nn::PretrainingModel> model = model::load_model(checkpoint, Device::cpu(), &report);
  nn::PositionEncoding& pe = model->bert.position_encoding();
  const int64_t rows = std::min(fresh.max_position_embeddings - fresh.position_offset, source_rows(pe));
  NoGradGuard no_grad;
  nn::Context ctx = nn::Context::eval();
  const Tensor e = pe.input_embedding(nn::default_positions(1, rows, Device::cpu()), ctx).value();
  PositionTable t;
  t.source = checkpoint;
  t.rows = e.reshape({rows, e.size(-1)}).to(DType::f32).contiguous();
  t.description = "rows 0.." + std::to_string(rows - 1) + " of the position table of " + checkpoint + " (" +
                  kind_of(config) + ")";
  const int64_t fresh_rows = fresh.max_position_embeddings - fresh.position_offset;
  if (rows < fresh_rows)
    t.description += "; the fresh table's rows for positions " + std::to_string(rows) + ".." +
                     std::to_string(fresh_rows - 1) + " keep their random start";
  return t;
}

void copy_position_table(nn::Module& model, const nn::BertConfig& config, const PositionTable& table) {
  nn::Parameter* p = model.find_parameter(kTable);
  ORDO_CHECK(p != nullptr, "the fresh model (pe '", config.pe, "') has no ", kTable, " to copy the position table into");
  const Tensor dest = p->var.value();
  const int64_t rows = table.rows.size(0), width = table.rows.size(1), offset = config.position_offset;
  ORDO_CHECK(dest.dim() == 2 && dest.size(1) == width && offset + rows <= dest.size(0), kTable, " of shape ",
             shape_str(dest.shape()), " cannot take ", rows, " rows of ", width, " from row ", offset);
  std::vector<float> values = dest.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>();
  const std::vector<float> copied = table.rows.to_vector<float>();
  std::copy(copied.begin(), copied.end(), values.begin() + offset * width);
  dest.copy_from(Tensor::from_vector(values, dest.shape(), dest.device()).to(dest.dtype()));
}

}  // namespace ordo::train
