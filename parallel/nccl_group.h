// NCCL for the CUDA tensors of a data-parallel run (compiled where the build
// has NCCL: ORDO_HAS_NCCL — the toolkit's libnccl, or the emulated GPU's
// stand-in over MPI). One group per process and GPU, created collectively by
// the MPI communicator the first time a CUDA tensor is reduced
// (parallel/mpi_communicator.cpp), after ordo has made that GPU current.
//
// The collectives run on a stream of their own, so that a bucket's
// all-reduce overlaps the rest of the backward pass on ordo's stream (PyTorch
// DDP's arrangement): each one first waits (an event, on the GPU, not the
// host) for the work ordo queued before it — the gradients it sums — and
// wait() makes ordo's stream wait for every collective queued so far. The
// host never waits for either.
#pragma once

#include <functional>
#include <memory>

#include "tensor/tensor.h"

namespace ordo::parallel {

class NcclGroup {
 public:
  // Collective over the `size` ranks: rank 0 makes NCCL's unique id and
  // `share_from_rank0(bytes, n)` copies its n bytes to every rank.
  NcclGroup(Device device, int rank, int size, const std::function<void(void*, size_t)>& share_from_rank0);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  Device device() const { return device_; }
  // Queued: in place, sum over the ranks (f32 or f64, contiguous, on device()).
  void all_reduce_sum(const Tensor& t);
  // Queued: root's `t` into every rank's.
  void broadcast(const Tensor& t, int root);
  // ordo's stream waits (on the GPU) for the collectives queued so far.
  void wait();

 private:
  void after_ordo_work(const Tensor& t, const char* collective);

  struct Handles;
  Device device_;
  std::unique_ptr<Handles> handles_;
  bool pending_ = false;
};

}  // namespace ordo::parallel
