// The MPI backend (compiled where CMake found MPI: ORDO_HAS_MPI). MPI is
// initialised with MPI_THREAD_SERIALIZED — one thread at a time calls MPI,
// which is how the gradient reducer's communication thread and the training
// loop take turns — and errors return codes (MPI_ERRORS_RETURN) that become
// ordo::Error with MPI's own message, instead of aborting inside MPI. CUDA
// tensors go through NCCL where the build has it (ORDO_HAS_NCCL), through a
// host copy otherwise.
#ifdef ORDO_HAS_MPI

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "base/error.h"
#include "parallel/communicator.h"
#include "parallel/nccl_group.h"

namespace ordo::parallel {

bool has_mpi() { return true; }

namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(detail::cat(call, " failed: ", std::string(text, static_cast<size_t>(length))));
}

MPI_Datatype mpi_type(const Tensor& t) {
  switch (t.dtype()) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    default: throw Error(detail::cat("MPI collectives take f32 or f64 tensors, got ", dtype_name(t.dtype())));
  }
}

// Finalises MPI when the process ends normally (after main returns).
struct Finalizer {
  ~Finalizer() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      static Finalizer finalizer;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &thread_level_), "MPI_Init_thread");
    } else {
      MPI_Query_thread(&thread_level_);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank");
    MPI_Comm_free(&node);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend(Device device) const override {
    if (device.is_cpu()) return "mpi";
#ifdef ORDO_HAS_NCCL
    return "nccl";
#else
    return "mpi through host copies";
#endif
  }
  bool collectives_from_any_thread() const override { return thread_level_ >= MPI_THREAD_SERIALIZED; }

  void all_reduce_sum(const Tensor& t) override {
    if (NcclGroup* group = nccl(t)) return group->all_reduce_sum(t);
    on_host(t, [&](const Tensor& h) {
      for_chunks(h, [&](void* data, int count) {
        check(MPI_Allreduce(MPI_IN_PLACE, data, count, mpi_type(h), MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
      });
    });
  }

  void wait_for_collectives(Device device) override {
#ifdef ORDO_HAS_NCCL
    if (nccl_ && nccl_->device() == device) nccl_->wait();
#else
    (void)device;
#endif
  }

  void broadcast(const Tensor& t, int root) override {
    if (NcclGroup* group = nccl(t)) {
      group->broadcast(t, root);
      return group->wait();
    }
    on_host(t, [&](const Tensor& h) {
      for_chunks(h, [&](void* data, int count) {
        check(MPI_Bcast(data, count, mpi_type(h), root, MPI_COMM_WORLD), "MPI_Bcast");
      });
    });
  }

  void broadcast(std::string& text, int root) override {
    long long length = static_cast<long long>(text.size());
    check(MPI_Bcast(&length, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
    text.resize(static_cast<size_t>(length));
    ORDO_CHECK(length <= INT_MAX, "a broadcast string of ", length, " bytes is beyond MPI's count");
    if (length > 0) check(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  bool any(bool flag) override {
    int value = flag ? 1 : 0;
    check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce");
    return value != 0;
  }

  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this is for the compiler
  }

 private:
  // A CUDA tensor goes through a host copy (MPI here is not CUDA-aware).
  template <class F>
  static void on_host(const Tensor& t, F&& f) {
    ORDO_CHECK(t.is_contiguous(), "MPI collectives take contiguous tensors");
    if (t.device().is_cpu()) return f(t);
    Tensor host = t.to(Device::cpu());
    f(host);
    t.copy_from(host);
  }

  // MPI counts are int: a larger tensor goes in pieces.
  template <class F>
  static void for_chunks(const Tensor& t, F&& f) {
    char* data = static_cast<char*>(t.raw_data());
    const size_t element = dtype_size(t.dtype());
    for (int64_t done = 0; done < t.numel();) {
      const int count = static_cast<int>(std::min<int64_t>(t.numel() - done, INT_MAX / 2));
      f(data + static_cast<size_t>(done) * element, count);
      done += count;
    }
  }

  // The NCCL group of t's GPU, made (collectively: every rank reaches its
  // first CUDA collective at the same point) on first use; nullptr for a CPU
  // tensor or in a build without NCCL. One GPU per process.
  NcclGroup* nccl(const Tensor& t) {
#ifdef ORDO_HAS_NCCL
    if (!t.device().is_cuda()) return nullptr;
    if (!nccl_) {
      nccl_ = std::make_unique<NcclGroup>(t.device(), rank_, size_, [](void* bytes, size_t n) {
        check(MPI_Bcast(bytes, static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
      });
    }
    ORDO_CHECK(nccl_->device() == t.device(), "one GPU per process: this rank's collectives run on ",
               nccl_->device().str(), ", not ", t.device().str());
    return nccl_.get();
#else
    (void)t;
    return nullptr;
#endif
  }

#ifdef ORDO_HAS_NCCL
  std::unique_ptr<NcclGroup> nccl_;
#endif
  int thread_level_ = MPI_THREAD_SINGLE;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace ordo::parallel

#endif  // ORDO_HAS_MPI
