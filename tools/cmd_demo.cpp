// `ordo demo`: the smallest end-to-end use of ordo. A two-layer network
// learns to tell apart the three arms of a noisy spiral, trained with AdamW
// on whatever device is present, and prints its loss falling.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "autograd/ops.h"
#include "tensor/device_runtime.h"
#include "tools/cli.h"

namespace {

using namespace ordo;

// Three spiral arms in the plane: point j of arm c at radius r = j / n and
// angle 4 r + 2 pi c / 3, with Gaussian noise on the angle (Philox streams 0, 1).
void make_spiral(int64_t per_class, uint64_t seed, Tensor& points, Tensor& labels) {
  const int64_t n = 3 * per_class;
  Tensor noise = Tensor::empty({n}, DType::f64);
  normal_(noise, 0, 0.2, seed, 0);
  std::vector<double> eps = noise.to_doubles(), xy;
  std::vector<int64_t> y;
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t j = 0; j < per_class; ++j) {
      double r = static_cast<double>(j) / per_class;
      double angle = 4 * r + 2 * M_PI * c / 3 + eps[c * per_class + j];
      xy.push_back(r * std::sin(angle));
      xy.push_back(r * std::cos(angle));
      y.push_back(c);
    }
  }
  points = Tensor::from_vector(xy, {n, 2}).to(DType::f32);
  labels = Tensor::from_vector(y, {n});
}

struct Parameter {
  Var var;
  Tensor m, v;  // AdamW moments
};

Parameter make_parameter(const Shape& shape, double std, uint64_t seed, uint64_t stream, Device device) {
  Tensor value = Tensor::zeros(shape, DType::f32, device);
  if (std > 0) normal_(value, 0, std, seed, stream);
  return {Var(value, true), Tensor::zeros(shape, DType::f32, device), Tensor::zeros(shape, DType::f32, device)};
}

int run(const std::vector<std::string>& argv) {
  cli::Args args(argv, {"steps", "hidden", "lr", "seed", "device"});
  const int64_t steps = args.integer("steps", 400, 1, 1000000);
  const int64_t hidden = args.integer("hidden", 64, 1, 65536);
  const double lr = args.number("lr", 0.01, 0, 10);
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 1, 0, INT64_MAX));
  Device device = args.device("device", cuda_available() ? "cuda" : "cpu");
  ORDO_CHECK(device.is_cpu() || device.index < cuda_device_count(), "device ", device.str(),
             " is not available (", cuda_device_description(0), ")");

  Tensor points, labels;
  make_spiral(500, seed, points, labels);
  points = points.to(device);
  labels = labels.to(device);
  std::printf("ordo demo: a 2-%lld-3 network learns a 3-arm spiral (%lld points) on %s\n",
              static_cast<long long>(hidden), static_cast<long long>(labels.numel()), device.str().c_str());

  // He-style initial scales so GELU units start in their useful range.
  Parameter w1 = make_parameter({2, hidden}, std::sqrt(2.0 / 2), seed, 10, device);
  Parameter b1 = make_parameter({hidden}, 0, seed, 11, device);
  Parameter w2 = make_parameter({hidden, 3}, std::sqrt(1.0 / hidden), seed, 12, device);
  Parameter b2 = make_parameter({3}, 0, seed, 13, device);
  std::vector<Parameter*> params = {&w1, &b1, &w2, &b2};

  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    Var x(points);
    Var h = gelu(add(matmul(x, w1.var), b1.var));
    Var logits = add(matmul(h, w2.var), b2.var);
    Var loss = cross_entropy(logits, labels);
    loss.backward();
    AdamWStep update;
    update.lr = lr;
    update.step = step;
    for (Parameter* p : params) {
      adamw_(p->var.value(), p->var.grad(), p->m, p->v, update);
      p->var.zero_grad();
    }
    if (step == 1 || step % 50 == 0 || step == steps) {
      Tensor predicted = argmax(logits.value(), 1);
      double accuracy = mean(eq(predicted.to(DType::f32), labels.to(DType::f32))).item();
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %5lld  loss %.4f  accuracy %5.1f%%  %.2fs\n", static_cast<long long>(step),
                  loss.value().item(), 100 * accuracy, seconds);
    }
  }
  return 0;
}

cli::Register command({"demo", "train a two-layer network on a generated spiral and print its loss",
                       "[--steps N] [--hidden H] [--lr X] [--seed S] [--device cpu|cuda[:N]]", run});

}  // namespace
