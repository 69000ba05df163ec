// Walking N views of one shape with their own strides (the strided and
// broadcast inputs of elementwise kernels), on the host and in CUDA kernels.
//
// make_indexer drops size-1 axes and merges neighbouring axes that are
// contiguous in every operand, so a dense tensor becomes one axis, a row
// broadcast two, and a transposed matrix two; at most kMaxDims remain.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/elementwise_math.h"  // ORDO_HD
#include "tensor/tensor.h"

namespace ordo {

constexpr int kMaxDims = 8;

template <int N>
struct Indexer {
  int ndim = 0;                        // after collapsing; 0 means a single element
  int64_t size[kMaxDims] = {};         // outermost first
  int64_t stride[N][kMaxDims] = {};    // per operand, in elements
  int64_t numel = 1;

  // Element offsets of the linear (row-major) index in each operand.
  ORDO_HD void offsets(int64_t linear, int64_t (&out)[N]) const {
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t i = linear % size[d];
      linear /= size[d];
      for (int k = 0; k < N; ++k) out[k] += i * stride[k][d];
    }
  }
  // Length of the innermost axis and each operand's stride along it.
  ORDO_HD int64_t inner_size() const { return ndim ? size[ndim - 1] : 1; }
  ORDO_HD int64_t inner_stride(int k) const { return ndim ? stride[k][ndim - 1] : 0; }
};

// Builds the indexer for `shape` with one stride vector per operand (each the
// same length as shape). Throws when more than kMaxDims axes remain.
template <int N>
Indexer<N> make_indexer(const Shape& shape, const std::array<const Shape*, N>& strides) {
  Indexer<N> ix;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = ix.ndim > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = ix.stride[k][ix.ndim - 1] == (*strides[k])[d] * shape[d];
    if (merge) {
      ix.size[ix.ndim - 1] *= shape[d];
      for (int k = 0; k < N; ++k) ix.stride[k][ix.ndim - 1] = (*strides[k])[d];
      continue;
    }
    ORDO_CHECK(ix.ndim < kMaxDims, "tensor with shape ", shape_str(shape),
               " has more than ", kMaxDims, " non-mergeable axes; make it contiguous first");
    ix.size[ix.ndim] = shape[d];
    for (int k = 0; k < N; ++k) ix.stride[k][ix.ndim] = (*strides[k])[d];
    ++ix.ndim;
  }
  ix.numel = shape_numel(shape);
  return ix;
}

}  // namespace ordo
