// The fused attention's switch (nn/bert.h: set_fused_attention) set for one
// scope and put back after: for a benchmark's modes and the tests that run
// the fused kernels or the default on purpose, whatever ORDO_FUSED_ATTENTION says.
#pragma once

#include <optional>

#include "nn/bert.h"

namespace ordo::nn {

class FusedAttentionScope {
 public:
  // `mode` empty: the switch as it is (still put back after).
  explicit FusedAttentionScope(std::optional<FusedAttention> mode) : previous_(fused_attention()) {
    if (mode) set_fused_attention(*mode);
  }
  ~FusedAttentionScope() { set_fused_attention(previous_); }
  FusedAttentionScope(const FusedAttentionScope&) = delete;
  FusedAttentionScope& operator=(const FusedAttentionScope&) = delete;

 private:
  FusedAttention previous_;
};

}  // namespace ordo::nn
