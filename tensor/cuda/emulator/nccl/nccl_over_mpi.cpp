// The stand-in NCCL of the emulated GPU (tensor/cuda/emulator/include/nccl.h
// says what it checks): a communicator is an MPI communicator over the world's
// processes (NCCL rank r is MPI rank r, which is how ordo creates them: one
// process per GPU), and a collective copies the device buffer to the host,
// runs the MPI collective, and copies the result back — through the emulated
// runtime's copies, so a buffer outside device memory fails as it would on a
// GPU. Streams run everything at once in the emulator, so the collective is
// complete when the call returns, which is one of the orders a real stream
// allows. Compiled into ordo_parallel (which links MPI) in an emulated build.
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "tensor/cuda/emulator/emulator.h"

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, nranks = 1;
  int device = 0;  // the CUDA device current when it was created
};

namespace {

thread_local std::string last_error;

ncclResult_t fail(ncclResult_t result, const std::string& detail) {
  last_error = detail;
  return result;
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

size_t element_bytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
  }
  return 0;
}

// The MPI type of an NCCL type this stand-in reduces (NCCL also reduces
// halves and bfloat16, which ordo never sends): MPI_DATATYPE_NULL otherwise.
MPI_Datatype mpi_type(ncclDataType_t type) {
  switch (type) {
    case ncclInt32: return MPI_INT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

// What every collective checks before touching memory.
ncclResult_t check_call(const char* call, ncclComm_t comm, const void* buffer, size_t count, ncclDataType_t type) {
  if (comm == nullptr) return fail(ncclInvalidArgument, std::string(call) + ": a null communicator");
  if (mpi_type(type) == MPI_DATATYPE_NULL)
    return fail(ncclInvalidArgument, std::string(call) + ": a data type the stand-in does not reduce");
  int device = -1;
  cudaGetDevice(&device);
  if (device != comm->device)
    return fail(ncclInvalidUsage, std::string(call) + ": the current device is cuda:" + std::to_string(device) +
                                      ", the communicator's is cuda:" + std::to_string(comm->device));
  if (count > 0 && buffer == nullptr) return fail(ncclInvalidArgument, std::string(call) + ": a null buffer");
  return ncclSuccess;
}

// MPI counts are int: a larger buffer goes in pieces.
template <class F>
int for_chunks(char* data, size_t count, size_t element, F&& f) {
  for (size_t done = 0; done < count;) {
    const size_t n = std::min<size_t>(count - done, 1u << 30);
    const int code = f(data + done * element, static_cast<int>(n));
    if (code != MPI_SUCCESS) return code;
    done += n;
  }
  return MPI_SUCCESS;
}

// The emulated runtime's account of a copy that failed (the call's error is
// taken, so that it does not surface at ordo's next launch check).
std::string copy_error() {
  const cudaError_t error = cudaGetLastError();
  return std::string(cudaGetErrorName(error)) + ": " + ordo::cuda::emulator::take_error_detail();
}

ncclResult_t to_host(const char* call, std::vector<char>& host, const void* device, size_t bytes) {
  host.resize(bytes);
  if (bytes && cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    return fail(ncclUnhandledCudaError, std::string(call) + ": reading the send buffer: " +
                                            copy_error());
  return ncclSuccess;
}

ncclResult_t to_device(const char* call, void* device, const std::vector<char>& host) {
  if (!host.empty() && cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice) != cudaSuccess)
    return fail(ncclUnhandledCudaError, std::string(call) + ": writing the receive buffer: " +
                                            copy_error());
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: a null id");
  static int made = 0;
  std::memset(unique_id->internal, 0, NCCL_UNIQUE_ID_BYTES);
  std::snprintf(unique_id->internal, NCCL_UNIQUE_ID_BYTES, "ordo emulated nccl: pid %d id %d",
                static_cast<int>(getpid()), made++);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommInitRank: a null communicator pointer");
  *comm = nullptr;
  if (!mpi_running()) return fail(ncclInvalidUsage, "ncclCommInitRank: the stand-in runs over MPI, which is not initialised");
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (nranks != world_size || rank != world_rank)
    return fail(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                                      " is not this process's MPI rank " + std::to_string(world_rank) + " of " +
                                      std::to_string(world_size) + " (the stand-in maps one to the other)");
  // Real NCCL would wait forever for ranks that were given another id.
  ncclUniqueId root = comm_id;
  MPI_Bcast(root.internal, NCCL_UNIQUE_ID_BYTES, MPI_CHAR, 0, MPI_COMM_WORLD);
  int differs = std::memcmp(root.internal, comm_id.internal, NCCL_UNIQUE_ID_BYTES) != 0;
  MPI_Allreduce(MPI_IN_PLACE, &differs, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (differs) return fail(ncclInvalidUsage, "ncclCommInitRank: the ranks were given different unique ids");
  auto* c = new ncclComm;
  MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi);
  c->rank = rank;
  c->nranks = nranks;
  cudaGetDevice(&c->device);
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommDestroy: a null communicator");
  if (mpi_running()) MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  if (ncclResult_t r = check_call("ncclAllReduce", comm, recvbuff, count, datatype)) return r;
  if (op != ncclSum) return fail(ncclInvalidArgument, "ncclAllReduce: the stand-in reduces with ncclSum only");
  std::vector<char> host;
  const size_t element = element_bytes(datatype);
  if (ncclResult_t r = to_host("ncclAllReduce", host, sendbuff, count * element)) return r;
  const int code = for_chunks(host.data(), count, element, [&](char* data, int n) {
    return MPI_Allreduce(MPI_IN_PLACE, data, n, mpi_type(datatype), MPI_SUM, comm->mpi);
  });
  if (code != MPI_SUCCESS) return fail(ncclSystemError, "ncclAllReduce: MPI_Allreduce failed");
  return to_device("ncclAllReduce", recvbuff, host);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t) {
  if (ncclResult_t r = check_call("ncclBroadcast", comm, recvbuff, count, datatype)) return r;
  if (root < 0 || root >= comm->nranks) return fail(ncclInvalidArgument, "ncclBroadcast: root out of range");
  std::vector<char> host(count * element_bytes(datatype));
  // Only the root's send buffer is read (NCCL ignores the others').
  if (comm->rank == root)
    if (ncclResult_t r = to_host("ncclBroadcast", host, sendbuff, host.size())) return r;
  const int code = for_chunks(host.data(), count, element_bytes(datatype), [&](char* data, int n) {
    return MPI_Bcast(data, n, mpi_type(datatype), root, comm->mpi);
  });
  if (code != MPI_SUCCESS) return fail(ncclSystemError, "ncclBroadcast: MPI_Bcast failed");
  return to_device("ncclBroadcast", recvbuff, host);
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
  }
  return "unknown result code";
}

const char* ncclGetLastError(ncclComm_t) { return last_error.c_str(); }
