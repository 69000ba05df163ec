// Op layer: random initialisers, the AdamW update and the global gradient norm.
#include <cmath>

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

double global_norm(const std::vector<Tensor>& tensors) {
  double total = 0;
  for (const Tensor& t : tensors) {
    check_float(t, "global_norm", "tensor");
    Tensor out = Tensor::empty({}, t.dtype(), t.device());
    ORDO_BACKEND(t.device(), sum_squares)(out, t.contiguous());
    total += out.item();
  }
  return std::sqrt(total);
}

}  // namespace ordo
