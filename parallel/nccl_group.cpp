#ifdef ORDO_HAS_NCCL

#include "parallel/nccl_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "base/error.h"
#include "tensor/device_runtime.h"

namespace ordo::parallel {

namespace {

void check_nccl(ncclResult_t result, const char* call, ncclComm_t comm = nullptr) {
  if (result == ncclSuccess) return;
  std::string detail = ncclGetLastError(comm);
  throw Error(detail::cat(call, " failed: ", ncclGetErrorString(result), detail.empty() ? "" : ": ", detail));
}

void check_cuda(cudaError_t error, const char* call) {
  if (error != cudaSuccess) throw Error(detail::cat(call, " failed: ", cudaGetErrorString(error)));
}

ncclDataType_t nccl_type(const Tensor& t) {
  switch (t.dtype()) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    default: throw Error(detail::cat("NCCL collectives take f32 or f64 tensors, got ", dtype_name(t.dtype())));
  }
}

}  // namespace

struct NcclGroup::Handles {
  ncclComm_t comm = nullptr;
  cudaStream_t ordo_stream = nullptr;  // ordo's, not owned
  cudaStream_t stream = nullptr;       // the collectives'
  cudaEvent_t ordo_done = nullptr;     // ordo's work up to a collective
  cudaEvent_t collectives_done = nullptr;
};

NcclGroup::NcclGroup(Device device, int rank, int size, const std::function<void(void*, size_t)>& share_from_rank0)
    : device_(device), handles_(std::make_unique<Handles>()) {
  ORDO_CHECK(device.is_cuda(), "an NCCL group needs a CUDA device, got ", device.str());
  Handles& h = *handles_;
  h.ordo_stream = static_cast<cudaStream_t>(cuda_stream(device));  // also makes the device current
  ncclUniqueId id{};
  if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  share_from_rank0(&id, sizeof id);
  check_nccl(ncclCommInitRank(&h.comm, size, id, rank), "ncclCommInitRank");
  check_cuda(cudaStreamCreateWithFlags(&h.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&h.ordo_done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&h.collectives_done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}

NcclGroup::~NcclGroup() {
  Handles& h = *handles_;
  // Nothing may still run on the stream that is about to go.
  if (h.stream) cudaStreamSynchronize(h.stream);
  if (h.comm) ncclCommDestroy(h.comm);
  if (h.ordo_done) cudaEventDestroy(h.ordo_done);
  if (h.collectives_done) cudaEventDestroy(h.collectives_done);
  if (h.stream) cudaStreamDestroy(h.stream);
}

// The collective on `t` queued next starts after everything ordo queued so far.
void NcclGroup::after_ordo_work(const Tensor& t, const char* collective) {
  ORDO_CHECK(t.device() == device_ && t.is_contiguous(), "an NCCL ", collective, " takes a contiguous tensor on ",
             device_.str(), ", got one on ", t.device().str());
  Handles& h = *handles_;
  cuda_stream(device_);  // makes the device current
  check_cuda(cudaEventRecord(h.ordo_done, h.ordo_stream), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(h.stream, h.ordo_done, 0), "cudaStreamWaitEvent");
  pending_ = true;
}

void NcclGroup::all_reduce_sum(const Tensor& t) {
  after_ordo_work(t, "all-reduce");
  check_nccl(ncclAllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), nccl_type(t), ncclSum,
                           handles_->comm, handles_->stream),
             "ncclAllReduce", handles_->comm);
}

void NcclGroup::broadcast(const Tensor& t, int root) {
  after_ordo_work(t, "broadcast");
  check_nccl(ncclBroadcast(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()), nccl_type(t), root,
                           handles_->comm, handles_->stream),
             "ncclBroadcast", handles_->comm);
}

void NcclGroup::wait() {
  if (!pending_) return;
  Handles& h = *handles_;
  check_cuda(cudaEventRecord(h.collectives_done, h.stream), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(h.ordo_stream, h.collectives_done, 0), "cudaStreamWaitEvent");
  pending_ = false;
}

}  // namespace ordo::parallel

#endif  // ORDO_HAS_NCCL
