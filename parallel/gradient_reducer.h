// Data parallelism's gradient exchange, as PyTorch's DistributedDataParallel
// does it: the parameters are grouped into buckets of about `bucket_bytes`,
// in reverse order of registration (roughly the order the backward pass
// finishes their gradients: the heads first, the embeddings last); when the
// last gradient of a bucket is done, the bucket is packed and its all-reduce
// starts on a communication thread while the backward goes on with the rest
// of the graph. Buckets start strictly in index order on every rank, so the
// ranks' collectives always pair up, whatever order a rank's gradients finish in.
//
// Sums, not means: each rank's loss already carries the weight
// 1 / (ranks x micro-batches) (train/loop.cpp), so the sum over the ranks is
// the gradient of the global batch's loss. A parameter no rank computed a
// gradient for keeps none (AdamW then leaves it alone, as in one process): a
// bucket carries one presence count per parameter beside the gradients.
//
// Only the backward of a step's last micro-batch is hooked (hook()):
// accumulation micro-steps add up locally and communicate nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "autograd/var.h"
#include "nn/module.h"
#include "parallel/communicator.h"

namespace ordo::parallel {

// PyTorch DDP's default bucket_cap_mb.
constexpr int64_t kDefaultBucketBytes = 25 << 20;

// Copies rank 0's parameter values to every rank (one broadcast per tensor, at start).
void broadcast_parameters(Communicator& comm, const std::vector<nn::NamedParameter>& params);

class GradientReducer {
 public:
  GradientReducer(Communicator& comm, const std::vector<nn::NamedParameter>& params, int64_t bucket_bytes);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // For Var::backward's on_leaf_done, on the last micro-batch of a step.
  std::function<void(VarState&)> hook();
  // After that backward: starts the buckets still waiting (a parameter
  // without a gradient counts as zero), waits for every all-reduce and
  // writes the sums back into the parameters' .grad.
  void finish();

  int64_t buckets() const { return static_cast<int64_t>(buckets_.size()); }
  // Bytes each rank all-reduces per step (gradients and presence counts).
  int64_t bytes_per_step() const;
  // Buckets of the last step whose all-reduce started before the backward ended.
  int64_t started_during_backward() const { return started_during_backward_; }
  // Bytes bucket i all-reduces (its gradients and presence counts).
  int64_t bucket_bytes(int64_t i) const;
  // The parameter names of bucket i, in packing order.
  std::vector<std::string> bucket_names(int64_t i) const;

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_, packing order
    std::vector<int64_t> offsets;
    int64_t elements = 0;        // gradients; the presence counts follow
    Tensor buffer;
    size_t done = 0;             // gradients finished in this backward
  };

  void on_leaf_done(VarState& leaf);
  void start(Bucket& b);
  void start_ready_buckets();
  void communicate();  // the communication thread
  void wait_idle();

  Communicator& comm_;
  std::vector<nn::NamedParameter> params_;
  std::unordered_map<const VarState*, size_t> bucket_of_;  // leaf -> bucket index
  std::vector<Bucket> buckets_;
  size_t next_to_start_ = 0;
  bool in_backward_ = false;
  int64_t started_during_backward_ = 0;

  // The communication thread (none for one process, for CUDA buckets, or
  // when the communicator forbids it: then each bucket is reduced where it starts).
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Tensor> queue_;
  bool busy_ = false, stopping_ = false;
  std::exception_ptr failure_;
};

}  // namespace ordo::parallel
