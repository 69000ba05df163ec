// Op layer: random initialisers, the AdamW update and the global gradient norm.
#include <cmath>
#include <cstring>

#include "tensor/ops.h"

namespace ordo {

namespace {
void fill_random(const Tensor& out, RandomDist dist, double a, double b, uint64_t seed,
                 uint64_t stream, const char* name) {
  check_float(out, name, "out");
  ORDO_CHECK(out.is_contiguous(), name, ": the tensor to fill must be contiguous");
  ORDO_BACKEND(out.device(), random)(out, dist, a, b, seed, stream);
}
}  // namespace

void uniform_(const Tensor& out, double low, double high, uint64_t seed, uint64_t stream) {
  ORDO_CHECK(low <= high, "uniform_: low ", low, " is above high ", high);
  fill_random(out, RandomDist::uniform, low, high, seed, stream, "uniform_");
}

void normal_(const Tensor& out, double mean, double std, uint64_t seed, uint64_t stream) {
  ORDO_CHECK(std >= 0, "normal_: std must be >= 0, got ", std);
  fill_random(out, RandomDist::normal, mean, std, seed, stream, "normal_");
}

void trunc_normal_(const Tensor& out, double mean, double std, uint64_t seed, uint64_t stream) {
  ORDO_CHECK(std >= 0, "trunc_normal_: std must be >= 0, got ", std);
  fill_random(out, RandomDist::trunc_normal, mean, std, seed, stream, "trunc_normal_");
}

void adamw_(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
            const AdamWStep& step) {
  check_float(param, "adamw_", "param");
  for (const Tensor* t : {&grad, &m, &v}) {
    check_shape(*t, param.shape(), "adamw_", "grad/m/v");
    check_same_dtype(param, *t, "adamw_");
    check_same_device(param, *t, "adamw_");
  }
  for (const Tensor* t : {&param, &grad, &m, &v})
    ORDO_CHECK(t->is_contiguous(), "adamw_: param, grad and moments must be contiguous");
  ORDO_CHECK(step.step >= 1, "adamw_: step counts from 1, got ", step.step);
  ORDO_CHECK(step.beta1 >= 0 && step.beta1 < 1 && step.beta2 >= 0 && step.beta2 < 1,
             "adamw_: betas must be in [0, 1), got ", step.beta1, " and ", step.beta2);
  ORDO_CHECK(step.eps > 0 && step.lr >= 0 && step.weight_decay >= 0,
             "adamw_: need eps > 0, lr >= 0, weight_decay >= 0");
  ORDO_BACKEND(param.device(), adamw)(param, grad, m, v, step);
}

Tensor sums_of_squares(const std::vector<Tensor>& tensors) {
  ORDO_CHECK(!tensors.empty(), "sums_of_squares: no tensors");
  const Tensor& first = tensors.front();
  Tensor sums = Tensor::empty({static_cast<int64_t>(tensors.size())}, first.dtype(), first.device());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_float(t, "sums_of_squares", "tensor");
    check_same_dtype(first, t, "sums_of_squares");
    check_same_device(first, t, "sums_of_squares");
    ORDO_BACKEND(t.device(), sum_squares)(sums.select(0, static_cast<int64_t>(i)), t.contiguous());
  }
  return sums;
}

double global_norm(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return 0;
  // One read of all the partial sums (one host sync on a device).
  return norm_of_sums(sums_of_squares(tensors).to_doubles());
}

double norm_of_sums(const std::vector<double>& partial_sums) {
  // Added in f64 in the tensors' order: the same total as adding them one by one.
  double total = 0;
  for (double partial : partial_sums) total += partial;
  return std::sqrt(total);
}

Tensor clip_by_global_norm_(const std::vector<Tensor>& tensors, double max_norm) {
  ORDO_CHECK(max_norm > 0, "clip_by_global_norm_: max_norm must be > 0, got ", max_norm);
  const Tensor& first = tensors.front();
  Tensor norm = sqrt(sum(sums_of_squares(tensors)));
  Tensor limit = Tensor::scalar(max_norm, first.dtype(), first.device());
  // torch.nn.utils.clip_grad_norm_'s factor, applied only above the limit.
  Tensor scale = where(gt(norm, limit), div(limit, affine(norm, 1.0, 1e-6)),
                       Tensor::scalar(1.0, first.dtype(), first.device()));
  for (const Tensor& t : tensors) binary_(BinaryOp::mul, t, scale);
  return norm;
}

namespace {

void check_same_kind(const Tensor& first, const Tensor& t, const char* what) {
  check_defined(t, "adamw_tensors", what);
  check_same_dtype(first, t, "adamw_tensors");
  check_same_device(first, t, "adamw_tensors");
  ORDO_CHECK(t.is_contiguous(), "adamw_tensors: every ", what, " must be contiguous");
}

int64_t address_of(const Tensor& t) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.raw_data())); }

}  // namespace

AdamWTensors adamw_tensors(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> m,
                           std::vector<Tensor> v, const std::vector<bool>& decay, std::vector<Tensor> rounded) {
  ORDO_CHECK(!params.empty(), "adamw_tensors: no parameters");
  const size_t n = params.size();
  if (rounded.empty()) rounded.resize(n);
  ORDO_CHECK(grads.size() == n && m.size() == n && v.size() == n && decay.size() == n && rounded.size() == n,
             "adamw_tensors: ", n, " parameters but ", grads.size(), " gradients, ", m.size(), " and ", v.size(),
             " moments, ", decay.size(), " decay flags, ", rounded.size(), " roundings");
  const Tensor& first = params.front();
  check_float(first, "adamw_tensors", "param");
  std::vector<int64_t> layout, chunks;
  for (size_t i = 0; i < n; ++i) {
    for (const Tensor* t : {&params[i], &grads[i], &m[i], &v[i]}) {
      check_same_kind(first, *t, "tensor");
      check_shape(*t, params[i].shape(), "adamw_tensors", "grad/m/v");
    }
    if (rounded[i].defined()) {
      check_dtype(rounded[i], DType::bf16, "adamw_tensors", "rounded");
      check_dtype(params[i], DType::f32, "adamw_tensors", "param (with a bf16 rounding)");
      check_same_device(first, rounded[i], "adamw_tensors");
      check_shape(rounded[i], params[i].shape(), "adamw_tensors", "rounded");
      ORDO_CHECK(rounded[i].is_contiguous(), "adamw_tensors: rounded[", i, "] is not contiguous");
    }
    layout.insert(layout.end(), {address_of(params[i]), address_of(m[i]), address_of(v[i]), decay[i] ? 1 : 0,
                                 rounded[i].defined() ? address_of(rounded[i]) : 0});
    for (int64_t start = 0; start < params[i].numel(); start += kMultiTensorChunk)
      chunks.insert(chunks.end(), {static_cast<int64_t>(i), start, std::min(kMultiTensorChunk, params[i].numel() - start)});
  }
  AdamWTensors t{std::move(params), std::move(grads), std::move(m), std::move(v), std::move(rounded), Tensor(), Tensor()};
  const Device device = first.device();
  t.layout = Tensor::from_vector(layout, {static_cast<int64_t>(n), kAdamWLayoutColumns}, device);
  t.chunks = Tensor::from_vector(chunks, {static_cast<int64_t>(chunks.size() / 3), 3}, device);
  return t;
}

Tensor global_norm_and_clip(const AdamWTensors& t, double max_norm) {
  const Tensor& first = t.grads.front();
  Tensor partials = Tensor::empty({t.chunks.size(0)}, DType::f64, first.device());
  Tensor out = Tensor::empty({2}, first.dtype(), first.device());
  ORDO_BACKEND(first.device(), global_norm_and_clip)(out, partials, t.grads, t.chunks, max_norm);
  return out;
}

void write_adamw_schedule(const Tensor& schedule, double lr, double beta1, double beta2, int64_t step) {
  check_shape(schedule, {3}, "write_adamw_schedule", "schedule");
  check_dtype(schedule, DType::f64, "write_adamw_schedule", "schedule");
  ORDO_CHECK(step >= 1, "write_adamw_schedule: step counts from 1, got ", step);
  const double bias1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  schedule.copy_from(Tensor::from_vector(std::vector<double>{lr, 1.0 / bias1, 1.0 / std::sqrt(bias2)}));
}

void adamw_multi_(const AdamWTensors& t, const Tensor& norm_and_clip, const Tensor& schedule, const AdamWConstants& c) {
  const Tensor& first = t.params.front();
  check_shape(norm_and_clip, {2}, "adamw_multi_", "norm_and_clip");
  check_same_dtype(first, norm_and_clip, "adamw_multi_");
  check_same_device(first, norm_and_clip, "adamw_multi_");
  check_same_device(first, schedule, "adamw_multi_");
  ORDO_CHECK(c.beta1 >= 0 && c.beta1 < 1 && c.beta2 >= 0 && c.beta2 < 1, "adamw_multi_: betas must be in [0, 1), got ",
             c.beta1, " and ", c.beta2);
  ORDO_CHECK(c.eps > 0 && c.weight_decay >= 0, "adamw_multi_: need eps > 0, weight_decay >= 0");
  ORDO_BACKEND(first.device(), adamw_multi)(t, norm_and_clip, schedule, c);
}

}  // namespace ordo
