// Sinusoidal absolute position encodings, added at the input.
//
// ape_sin (Vaswani et al. 2017; Wang et al. 2021, Table 1; Huang et al.
// 2020, Eq. 1-2): for a position x (any real value: no table, no longest
// position) and model width D,
//     P_{x,2i} = sin(w_i x),   P_{x,2i+1} = cos(w_i x),   w_i = 10000^(-2i/D),  i = 0 .. D/2-1,
// and the embedding layer adds P_{p_i} to the token and segment embeddings:
//     x_i = w_i + s_i + A P_{p_i},
// with amplitude A = 1 (Vaswani et al.'s; option "amplitude"). Against BERT's
// token embeddings (per dimension ~initializer_range = 0.02 at the start)
// A = 1 gives the position 35 times the token's scale before the embedding
// LayerNorm, at any width: a small model's layer 1 then sees position alone
// for thousands of steps (docs/wang2021_report measures it). A = sqrt(2) x
// initializer_range starts the sinusoid at the per-dimension scale BERT
// gives its learned table.
// Its position-position dot product P_x . P_y = sum_i cos(w_i (x - y))
// depends on x - y only and is even in it (Wang et al. 2021, section 3.1).
//
// ape_sin_learnable (Wang et al. 2021, section 3.1): the same with the D/2
// frequencies w_i learned, initialised to the fixed ones. They are kept as
// w_i = w_i^fixed + d_i with learned offsets d (parameter
// "frequency_offsets", initialised to 0 and exempt from weight decay): the
// gradient and every AdamW update of d are those of w itself, and the
// offsets need no per-element initialiser. frequencies() gives w.
#pragma once

#include "nn/bert_config.h"
#include "nn/position.h"

namespace ordo::pe {

class SinusoidalAbsolute : public nn::PositionEncoding {
 public:
  SinusoidalAbsolute(const nn::BertConfig& config, bool learnable, double amplitude, Device device);
  std::string name() const override { return learnable_ ? "ape_sin_learnable" : "ape_sin"; }
  // P_{p_i} for every position, [batch, L, D]. The fixed encoding is
  // computed in f64 on the CPU (f32 elsewhere) and takes the model's dtype
  // where it is added; the learnable one has its parameter's dtype.
  Var input_embedding(const Tensor& positions, nn::Context& ctx) override;
  // The frequencies w_i in use, [D/2].
  Var frequencies() const;
  // ape_sin_learnable only: w_fixed and w_fixed + d, both in f64 on the CPU.
  LearnedFrequencies learned_frequencies(int layer) const override;

 private:
  bool learnable_;
  double amplitude_;
  int64_t dim_;
  Device device_;
  nn::Parameter* offsets_ = nullptr;  // "frequency_offsets" [D/2], learnable only
};

}  // namespace ordo::pe
