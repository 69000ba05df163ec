// Input-level (absolute) position encodings.
//
// none         no position information (Wang et al. 2021, Table 2, first row).
// ape_learned  a learned table P in R^{Lmax x D}; the encoding of position p_i
//              is its row, added to the token and segment embeddings:
//                  x_i = w_i + s_i + P[p_i]
//              (Wang et al. 2021, Eq. 5 "APE"; Huang et al. 2020, Eq. 6).
//              With position_offset o (RoBERTa's 2) the row is P[p_i + o]:
//              positions still count from 0, and p = -1 (a padding token,
//              nn::positions_skipping_padding) reads RoBERTa's padding row o - 1.
#pragma once

#include "nn/bert_config.h"
#include "nn/position.h"

namespace ordo::pe {

class NoPosition : public nn::PositionEncoding {
 public:
  std::string name() const override { return "none"; }
};

class LearnedAbsolute : public nn::PositionEncoding {
 public:
  LearnedAbsolute(const nn::BertConfig& config, Device device);
  std::string name() const override { return "ape_learned"; }
  // HF's name for the table: "embeddings.position_embeddings.weight".
  std::string module_path() const override { return "embeddings.position_embeddings"; }
  // x_i += P[p_i + offset]; a position whose row is outside the table is an error.
  Var input_embedding(const Tensor& positions, nn::Context& ctx) override;
  InputLookup input_lookup(const Tensor& positions, nn::Context& ctx) override;
  int64_t max_position() const override { return table_.var.size(0) - 1 - offset_; }

 private:
  nn::Parameter& table_;  // "weight" [max_position_embeddings, hidden]
  int64_t offset_;
};

}  // namespace ordo::pe
