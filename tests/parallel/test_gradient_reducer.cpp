// The gradient reducer against sums worked out directly: ranks are threads of
// this process joined by a loopback communicator (a test double with MPI's
// semantics: every rank calls each collective in the same order, sums are
// taken in rank order), so the bucketing, the overlap with the backward pass
// and the presence counts are tested without MPI. The same reducer under
// mpirun is tested end to end in tests/tools/test_data_parallel_cli.cpp.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "autograd/ops.h"
#include "parallel/gradient_reducer.h"
#include "tests/train/device_step.h"

using namespace ordo;

namespace {

// A reusable barrier for `count` threads (C++17 has none).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
    } else {
      released_.wait(lock, [&] { return generation_ != generation; });
    }
  }

 private:
  int count_, arrived_ = 0;
  int64_t generation_ = 0;
  std::mutex mutex_;
  std::condition_variable released_;
};

// What the ranks of one group share.
class LoopbackGroup {
 public:
  explicit LoopbackGroup(int size) : size_(size), slots_(static_cast<size_t>(size)), sync_(size) {}
  int size() const { return size_; }

  // Every rank deposits its tensor; each then reads all of them.
  void all_reduce_sum(int rank, const Tensor& t) {
    slots_[static_cast<size_t>(rank)] = t;
    sync_.arrive_and_wait();
    Tensor sum = slots_[0].clone();
    for (int r = 1; r < size_; ++r) add_(sum, slots_[static_cast<size_t>(r)]);
    sync_.arrive_and_wait();  // everyone has read before anyone writes
    t.copy_from(sum);
    sync_.arrive_and_wait();
  }
  void broadcast(int rank, const Tensor& t, int root) {
    slots_[static_cast<size_t>(rank)] = t;
    sync_.arrive_and_wait();
    Tensor copy = slots_[static_cast<size_t>(root)].clone();
    sync_.arrive_and_wait();
    t.copy_from(copy);
    sync_.arrive_and_wait();
  }
  void barrier() { sync_.arrive_and_wait(); }

 private:
  int size_;
  std::vector<Tensor> slots_;
  Barrier sync_;
};

class Loopback final : public parallel::Communicator {
 public:
  Loopback(LoopbackGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  int local_rank() const override { return rank_; }
  std::string backend(Device) const override { return "loopback"; }
  void all_reduce_sum(const Tensor& t) override { group_.all_reduce_sum(rank_, t); }
  void broadcast(const Tensor& t, int root) override { group_.broadcast(rank_, t, root); }
  void broadcast(std::string&, int) override { FAIL("not used"); }
  void barrier() override { group_.barrier(); }
  bool any(bool) override {
    FAIL("not used");
    return false;
  }
  [[noreturn]] void abort(const std::string& message) override { throw Error(message); }

 private:
  LoopbackGroup& group_;
  int rank_;
};

// Runs body(rank, communicator) on `size` threads and rethrows the first failure.
void run_ranks(int size, const std::function<void(int, parallel::Communicator&)>& body) {
  LoopbackGroup group(size);
  std::vector<std::thread> threads;
  std::mutex failure_mutex;
  std::exception_ptr failure;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      Loopback comm(group, r);
      try {
        body(r, comm);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

// A rank's weighted MLM loss on the shared batch with its own dropout stream
// (micro-batch r of 2): the ranks' gradients differ.
Var rank_loss(nn::PretrainingModel& model, const ordo::test::StepBatch& b, int rank) {
  nn::Context ctx = nn::Context::train(9, 1, rank, 2);
  return affine(model.forward(b.inputs, b.labels, b.nsp_labels, ctx).loss, 0.5);
}

}  // namespace

TEST_CASE("gradient reducer: two ranks end with the sum of their gradients, bit for bit", "[parallel]") {
  const nn::BertConfig c = ordo::test::step_config("ape_learned");
  const ordo::test::StepBatch batch = ordo::test::step_batch(c, false);
  // The expected sums: each rank's gradient computed alone, then added (a + b
  // is b + a in floating point: two ranks are exact whatever the order).
  std::vector<std::vector<Tensor>> alone(2);
  for (int r = 0; r < 2; ++r) {
    auto model = model::build_model(c, Device::cpu(), false, 5);
    rank_loss(*model, batch, r).backward();
    for (auto& [name, p] : model->named_parameters()) alone[static_cast<size_t>(r)].push_back(p->var.grad());
  }
  for (const int64_t cap : {int64_t{1} << 30, int64_t{20000}}) {
    INFO("bucket cap " << cap << " bytes");
    std::vector<std::vector<Tensor>> reduced(2);
    std::vector<int64_t> buckets(2), during(2);
    run_ranks(2, [&](int r, parallel::Communicator& comm) {
      auto model = model::build_model(c, Device::cpu(), false, 5);
      parallel::GradientReducer reducer(comm, model->named_parameters(), cap);
      rank_loss(*model, batch, r).backward(Tensor(), false, reducer.hook());
      reducer.finish();
      for (auto& [name, p] : model->named_parameters()) reduced[static_cast<size_t>(r)].push_back(p->var.grad());
      buckets[static_cast<size_t>(r)] = reducer.buckets();
      during[static_cast<size_t>(r)] = reducer.started_during_backward();
    });
    for (size_t k = 0; k < alone[0].size(); ++k) {
      INFO("parameter " << k);
      REQUIRE(alone[0][k].defined() == alone[1][k].defined());
      if (!alone[0][k].defined()) {
        CHECK(!reduced[0][k].defined());
        continue;
      }
      const Tensor expected = add(alone[0][k], alone[1][k]);
      for (int r = 0; r < 2; ++r) CHECK(ordo::test::max_abs(sub(reduced[static_cast<size_t>(r)][k], expected)) == 0);
    }
    if (cap == 20000) {
      CHECK(buckets[0] > 3);
      // Every parameter of the MLM model gets a gradient, so each bucket is
      // complete, and started, before the backward pass ends.
      CHECK(during[0] == buckets[0]);
    } else {
      CHECK(buckets[0] == 1);
    }
  }
}

TEST_CASE("gradient reducer: buckets cover every parameter once, in reverse order, within the cap", "[parallel]") {
  const nn::BertConfig c = ordo::test::step_config("rpe_shaw");
  auto model = model::build_model(c, Device::cpu(), false, 5);
  const auto params = model->named_parameters();
  parallel::SingleProcess single;
  const int64_t cap = 30000;
  parallel::GradientReducer reducer(single, params, cap);
  std::vector<std::string> order;
  int64_t bytes = 0;
  for (int64_t i = 0; i < reducer.buckets(); ++i) {
    int64_t bucket_bytes = 0;
    for (const std::string& name : reducer.bucket_names(i)) {
      order.push_back(name);
      for (const auto& [n, p] : params)
        if (n == name) bucket_bytes += p->var.numel() * 4;
    }
    // Over the cap only when one parameter alone is larger.
    CHECK((bucket_bytes <= cap || reducer.bucket_names(i).size() == 1));
    bytes += bucket_bytes + static_cast<int64_t>(reducer.bucket_names(i).size()) * 4;
  }
  REQUIRE(order.size() == params.size());
  for (size_t k = 0; k < params.size(); ++k) CHECK(order[k] == params[params.size() - 1 - k].first);
  CHECK(reducer.bytes_per_step() == bytes);
}

TEST_CASE("gradient reducer: a parameter without a gradient on some rank counts as zero there, on none, stays without",
          "[parallel]") {
  std::vector<Tensor> a_grad(2), b_grad(2), c_grad(2);
  run_ranks(2, [&](int r, parallel::Communicator& comm) {
    nn::Parameter a, b, unused;
    a.var = Var(Tensor::from_vector(std::vector<float>{1, 2, 3}), true, "a");
    b.var = Var(Tensor::from_vector(std::vector<float>{4, 5}), true, "b");
    unused.var = Var(Tensor::from_vector(std::vector<float>{6}), true, "unused");
    std::vector<nn::NamedParameter> params{{"a", &a}, {"b", &b}, {"unused", &unused}};
    parallel::GradientReducer reducer(comm, params, 8);  // a bucket per parameter
    // Rank 0: loss = sum(a * (r + 1)) + sum(b * b); rank 1 leaves b out.
    Var loss = sum(mul(a.var, Var(Tensor::full({3}, r + 1.0))));
    if (r == 0) loss = add(loss, sum(mul(b.var, b.var)));
    loss.backward(Tensor(), false, reducer.hook());
    reducer.finish();
    a_grad[static_cast<size_t>(r)] = a.var.grad();
    b_grad[static_cast<size_t>(r)] = b.var.grad();
    c_grad[static_cast<size_t>(r)] = unused.var.grad();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    CHECK(a_grad[static_cast<size_t>(r)].to_doubles() == std::vector<double>{3, 3, 3});  // 1 + 2
    REQUIRE(b_grad[static_cast<size_t>(r)].defined());
    CHECK(b_grad[static_cast<size_t>(r)].to_doubles() == std::vector<double>{8, 10});  // 2b from rank 0 alone
    CHECK(!c_grad[static_cast<size_t>(r)].defined());
  }
}
