// What the position-encoding variants share: relative distances, sharing of
// learned tables across heads and layers, sinusoids, and reading options.
//
// Notation (EQUATIONS.md): positions p_i are an explicit [batch, L] integer
// tensor; the relative distance is r_ij = p_j - p_i (key minus query)
// everywhere in ordo. A paper that writes i - j is followed by flipping the
// sign once, at the variant, with a comment.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/config.h"
#include "nn/bert_config.h"
#include "nn/position.h"

namespace ordo::pe {

// ---- relative distances ------------------------------------------------------------

// r_ij = p_j - p_i: [batch, L, L] i64 from positions [batch, L].
Tensor relative_distances(const Tensor& positions);
// r clipped to [-k, k] (Shaw et al. 2018; Huang et al. 2020, Eq. 8).
Tensor clip_distances(const Tensor& r, int64_t k);

// The smallest and the largest entry of an i64 tensor (positions, distances,
// ids) for bounds checks, read on the host: exact for any integer, on either
// device (CUDA has no f64, and reductions there are f32 only).
std::pair<int64_t, int64_t> integer_range(const Tensor& t);
// The smallest and largest position / segment id of a forward: from its
// InputFacts (no device read) when ctx is BertModel::forward's, else read
// from the tensor with integer_range.
std::pair<int64_t, int64_t> position_range(const Tensor& positions, const nn::Context* ctx);
std::pair<int64_t, int64_t> segment_range(const Tensor& segments, const nn::Context* ctx);
// positions [batch, L] as a term of the positions alone needs them: the
// first row, [1, L], when every row equals it (the forward's InputFacts say
// so — pretraining, fine-tuning and evaluation batches count 0, 1, ... in
// every row — else read on the host), so that the term is computed once and
// broadcast over the batch, and its gradient summed over the batch before it
// reaches a table; every row otherwise.
Tensor distinct_position_rows(const Tensor& positions, const nn::Context* ctx);

// ---- sharing of learned tables (Chen et al., section 4.4.1) -------------------------

// none: a table per layer and head; heads: one per layer shared by its heads;
// layers: one per head shared by the layers (T5); all: one table.
enum class Share { none, heads, layers, all };
Share parse_share(const std::string& name, const std::string& where);
const char* share_name(Share s);

// A set of learned tables laid out by a sharing mode. Each table is one
// parameter of shape `table_shape`, registered on `owner` under name_of(t)
// for t = 0 .. count()-1 (so a variant controls its checkpoint names).
class TableSet {
 public:
  TableSet(nn::Module& owner, Share share, int64_t layers, int64_t heads, const Shape& table_shape, nn::Init init,
           Device device, const std::function<std::string(int64_t table)>& name_of);
  // The tables layer `layer` uses, one per head: [heads, table_shape...].
  // Shared tables appear as broadcast views, so gradients sum over sharers.
  // Tables the layers share are one Var a forward when `ctx` is inside one
  // (Context::layer_shared): their gradients then sum before the heads split.
  Var for_layer(int layer, nn::Context* ctx = nullptr) const;
  int64_t count() const { return static_cast<int64_t>(tables_.size()); }
  Share share() const { return share_; }
  const nn::Parameter& table(int64_t t) const { return *tables_[static_cast<size_t>(t)]; }

 private:
  Share share_;
  int64_t layers_, heads_;
  Shape table_shape_;
  std::vector<nn::Parameter*> tables_;
};

// ---- sinusoids (Vaswani et al. 2017; Wang et al. 2021, Table 1) ----------------------

// The fixed frequencies w_i = 10000^(-2i/D), i = 0 .. D/2 - 1.
Tensor sinusoid_frequencies(int64_t dim, DType dtype, Device device);
std::vector<double> sinusoid_frequency_values(int64_t dim);
// The same as a constant of `pe` (nn::PositionEncoding::constant): what a forward pass uses.
Tensor sinusoid_frequencies(const nn::PositionEncoding& pe, int64_t dim, DType dtype, Device device);
// [..., D] with P[x, 2i] = sin(w_i x), P[x, 2i+1] = cos(w_i x), for real
// positions x of any shape (float tensor); differentiable in the frequencies
// (learnable sinusoids, Wang et al. 2021 section 3.1).
Var sinusoid(const Tensor& x, const Var& frequencies);

}  // namespace ordo::pe
