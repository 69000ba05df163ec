// The processes of a data-parallel run and what they say to each other: one
// small interface (rank, size, all-reduce sum in place, broadcast, barrier)
// with a backend per transport —
//   single   one process: every collective is the identity;
//   mpi      the processes mpirun/srun started (Open MPI, MPICH), for CPU
//            tensors; CUDA tensors go through NCCL where the build has it
//            (parallel/nccl_group.h: its own stream, overlapping ordo's work),
//            and through a host copy otherwise.
// The launcher starts the processes and connects them; ordo never starts a
// process of its own. make_communicator() reads the launcher's environment:
// launched by mpirun with N > 1 processes, it is MPI (and an error where the
// build has no MPI); otherwise single.
//
// Every collective is called by every rank in the same order with tensors of
// the same shape and dtype: the callers (GradientReducer, the training loops)
// keep that order, and a rank that cannot (it failed) aborts the whole job
// (abort(): the others are stopped by the launcher within seconds, never left
// waiting).
#pragma once

#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace ordo::parallel {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The rank among the processes of this node (a GPU per local rank).
  virtual int local_rank() const = 0;
  // What carries the collectives of tensors on `device`: "mpi", "nccl", ...
  virtual std::string backend(Device device) const = 0;

  // Sums `t` (contiguous, f32 or f64) over the ranks, in place: every rank
  // ends with the same values. On a CUDA tensor the sum may be queued on the
  // GPU rather than done when this returns (NCCL): ordo's work on t's device
  // sees it after wait_for_collectives(device), and t must live until then.
  virtual void all_reduce_sum(const Tensor& t) = 0;
  // Makes the work queued on `device` from now on wait for the collectives
  // queued on it so far (on the GPU: the host does not wait). A no-op where
  // collectives finish before they return.
  virtual void wait_for_collectives(Device) {}
  // Copies root's `t` into every rank's `t` (same shape and dtype
  // everywhere), in order with ordo's work on t's device.
  virtual void broadcast(const Tensor& t, int root) = 0;
  // Copies root's string to every rank.
  virtual void broadcast(std::string& text, int root) = 0;
  virtual void barrier() = 0;
  // True on every rank when `flag` is true on any (a stop request, a refusal).
  virtual bool any(bool flag) = 0;
  // Ends every process of the job, this one with `message` on stderr.
  [[noreturn]] virtual void abort(const std::string& message) = 0;
  // Whether a collective may be called from a thread other than the one that
  // made the communicator (one at a time): the gradient reducer's
  // communication thread needs it to overlap the backward pass.
  virtual bool collectives_from_any_thread() const { return true; }
};

// One process alone.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string backend(Device) const override { return "single"; }
  void all_reduce_sum(const Tensor&) override {}
  void broadcast(const Tensor&, int) override {}
  void broadcast(std::string&, int) override {}
  void barrier() override {}
  bool any(bool flag) override { return flag; }
  [[noreturn]] void abort(const std::string& message) override;
};

// The process count a launcher (mpirun, srun) says it started, 1 without one.
int launched_processes();
// Whether this build can speak MPI.
bool has_mpi();
// The communicator of this process, from the launcher's environment (above).
// MPI is initialised on the first call and finalised at exit.
std::unique_ptr<Communicator> make_communicator();

}  // namespace ordo::parallel
