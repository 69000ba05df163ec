// Dropout's mask applied inside another kernel (fused.cu's residual branch,
// softmax.cu's backward): element i kept and scaled, or 0, exactly as
// random.cu's dropout_kernel draws it (philox::dropout_keep).
#pragma once

#include "base/philox.h"
#include "tensor/cuda/cuda_common.cuh"

namespace ordo::cuda {

struct DropoutMask {
  uint64_t seed, stream_offset, threshold;
  const int64_t* stream_base;
  float scale;
  bool on;

  // v kept and scaled, or 0, for element i of the stream `stream()` gives.
  __device__ __forceinline__ float apply(float v, int64_t i, uint64_t stream) const {
    if (!on) return v;
    return philox::dropout_keep(seed, stream, static_cast<uint64_t>(i), threshold) ? v * scale : 0.0f;
  }
  // The stream, read on the device (a CUDA graph's replays move its base).
  __device__ __forceinline__ uint64_t stream() const {
    return stream_offset + (stream_base ? static_cast<uint64_t>(*stream_base) : 0);
  }
};

// Off when p = 0.
inline DropoutMask dropout_mask(double p, const PhiloxStream& s) {
  return DropoutMask{s.seed, s.offset, philox::dropout_threshold(p), stream_base(s),
                     static_cast<float>(1.0 / (1.0 - p)), p > 0};
}

}  // namespace ordo::cuda
