#include "parallel/gradient_reducer.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "tensor/ops.h"

namespace ordo::parallel {

void broadcast_parameters(Communicator& comm, const std::vector<nn::NamedParameter>& params) {
  if (comm.size() == 1) return;
  for (const auto& [name, p] : params) comm.broadcast(p->var.value(), 0);
}

GradientReducer::GradientReducer(Communicator& comm, const std::vector<nn::NamedParameter>& params,
                                 int64_t bucket_bytes)
    : comm_(comm), params_(params) {
  ORDO_CHECK(bucket_bytes >= 1, "the gradient bucket size must be at least 1 byte, got ", bucket_bytes);
  // Reverse registration order; a bucket holds one dtype on one device.
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& value = params_[k].second->var.value();
    const int64_t bytes = value.numel() * static_cast<int64_t>(dtype_size(value.dtype()));
    const bool fits = !buckets_.empty() && [&] {
      const Bucket& last = buckets_.back();
      const Tensor& first = params_[last.params.front()].second->var.value();
      return first.dtype() == value.dtype() && first.device() == value.device() &&
             (last.elements * static_cast<int64_t>(dtype_size(value.dtype())) + bytes <= bucket_bytes);
    }();
    if (!fits) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.params.push_back(k);
    b.offsets.push_back(b.elements);
    b.elements += value.numel();
    bucket_of_[params_[k].second->var.state().get()] = buckets_.size() - 1;
  }
  for (Bucket& b : buckets_) {
    const Tensor& first = params_[b.params.front()].second->var.value();
    b.buffer = Tensor::zeros({b.elements + static_cast<int64_t>(b.params.size())}, first.dtype(), first.device());
  }
  // A CUDA bucket goes through the host inside the collective (MPI here is
  // not CUDA-aware), which stays on the thread that owns the device work.
  const bool on_cpu = std::all_of(buckets_.begin(), buckets_.end(),
                                  [](const Bucket& b) { return b.buffer.device().is_cpu(); });
  if (comm_.size() > 1 && on_cpu && comm_.collectives_from_any_thread())
    thread_ = std::thread([this] { communicate(); });
}

GradientReducer::~GradientReducer() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int64_t GradientReducer::bucket_bytes(int64_t i) const {
  const Tensor& buffer = buckets_.at(static_cast<size_t>(i)).buffer;
  return buffer.numel() * static_cast<int64_t>(dtype_size(buffer.dtype()));
}

int64_t GradientReducer::bytes_per_step() const {
  int64_t bytes = 0;
  for (int64_t i = 0; i < buckets(); ++i) bytes += bucket_bytes(i);
  return bytes;
}

std::vector<std::string> GradientReducer::bucket_names(int64_t i) const {
  std::vector<std::string> names;
  for (size_t k : buckets_.at(static_cast<size_t>(i)).params) names.push_back(params_[k].first);
  return names;
}

std::function<void(VarState&)> GradientReducer::hook() {
  for (Bucket& b : buckets_) b.done = 0;
  next_to_start_ = 0;
  started_during_backward_ = 0;
  in_backward_ = true;
  return [this](VarState& leaf) { on_leaf_done(leaf); };
}

void GradientReducer::on_leaf_done(VarState& leaf) {
  auto it = bucket_of_.find(&leaf);
  if (it == bucket_of_.end()) return;  // a leaf that is not a parameter of the model
  ++buckets_[it->second].done;
  start_ready_buckets();
}

void GradientReducer::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].done == buckets_[next_to_start_].params.size()) {
    start(buckets_[next_to_start_++]);
    if (in_backward_) ++started_during_backward_;
  }
}

// Packs the bucket's gradients (zeros where a parameter has none) and their
// presence counts, and hands the buffer to the communication thread.
void GradientReducer::start(Bucket& b) {
  std::vector<double> present(b.params.size(), 0.0);
  for (size_t j = 0; j < b.params.size(); ++j) {
    const Var& var = params_[b.params[j]].second->var;
    Tensor slot = b.buffer.slice(0, b.offsets[j], b.offsets[j] + var.numel());
    if (var.grad().defined()) {
      slot.copy_from(var.grad().reshape({-1}));
      present[j] = 1;
    } else {
      slot.fill_(0);
    }
  }
  b.buffer.slice(0, b.elements, b.buffer.numel())
      .copy_from(Tensor::from_vector(present).to(b.buffer.dtype()).to(b.buffer.device()));
  if (!thread_.joinable()) {
    comm_.all_reduce_sum(b.buffer);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(b.buffer);
  }
  wake_.notify_one();
}

void GradientReducer::communicate() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Tensor buffer = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool failed = failure_ != nullptr;
    lock.unlock();
    std::exception_ptr error;
    if (!failed) {  // after a failure the rank is going down: nothing more is sent
      try {
        comm_.all_reduce_sum(buffer);
      } catch (...) {
        error = std::current_exception();
      }
    }
    lock.lock();
    if (error) failure_ = error;
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

void GradientReducer::wait_idle() {
  if (!thread_.joinable()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (failure_) std::rethrow_exception(failure_);
}

void GradientReducer::finish() {
  in_backward_ = false;
  for (; next_to_start_ < buckets_.size(); ++next_to_start_) start(buckets_[next_to_start_]);
  wait_idle();
  for (Bucket& b : buckets_) comm_.wait_for_collectives(b.buffer.device());
  for (Bucket& b : buckets_) {
    const std::vector<double> present = b.buffer.slice(0, b.elements, b.buffer.numel()).to_doubles();
    for (size_t j = 0; j < b.params.size(); ++j) {
      if (present[j] == 0) continue;  // no rank had a gradient
      const Var& var = params_[b.params[j]].second->var;
      Tensor sum = b.buffer.slice(0, b.offsets[j], b.offsets[j] + var.numel()).reshape(var.shape());
      if (var.grad().defined()) {
        var.grad().copy_from(sum);
      } else {
        var.set_grad(sum.clone());
      }
    }
  }
}

}  // namespace ordo::parallel
