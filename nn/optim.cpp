#include "nn/optim.h"

#include <cmath>

namespace ordo::nn {

double scheduled_lr(const AdamWConfig& c, int64_t step) {
  if (c.warmup_steps > 0 && step <= c.warmup_steps)
    return c.lr * static_cast<double>(step) / static_cast<double>(c.warmup_steps);
  if (c.total_steps <= 0) return c.lr;
  double left = static_cast<double>(c.total_steps - step) / static_cast<double>(std::max<int64_t>(1, c.total_steps - c.warmup_steps));
  return c.lr * std::max(0.0, left);
}

AdamW::AdamW(std::vector<NamedParameter> params, AdamWConfig config) : params_(std::move(params)), config_(config) {
  for (const auto& [name, p] : params_) {
    const Tensor& value = p->var.value();
    m_.push_back(Tensor::zeros(value.shape(), value.dtype(), value.device()));
    v_.push_back(Tensor::zeros(value.shape(), value.dtype(), value.device()));
  }
}

void AdamW::check_finite(double grad_norm) const {
  if (std::isfinite(grad_norm)) return;
  for (const auto& [name, p] : params_) {
    const Tensor& g = p->var.grad();
    if (g.defined() && !std::isfinite(global_norm({g})))
      throw Error(detail::cat("step ", step_ + 1, ": the gradient of '", name,
                              "' is not finite (NaN or Inf); no parameter was updated"));
  }
}

std::vector<Tensor> AdamW::gradients() const {
  std::vector<Tensor> grads;
  for (const auto& [name, p] : params_)
    if (p->var.grad().defined()) grads.push_back(p->var.grad());
  return grads;
}

Tensor AdamW::gradient_sums_of_squares() const {
  std::vector<Tensor> grads = gradients();
  return grads.empty() ? Tensor() : sums_of_squares(grads);
}

AdamW::StepInfo AdamW::step(bool read_norm) {
  std::vector<Tensor> grads = gradients();
  const bool on_host = grads.empty() || grads.front().device().is_cpu();
  if (on_host || read_norm) return step_with_norm(global_norm(grads));
  // On the device without reading anything back: the gradients are clipped
  // in place there (AdamW then scales by 1), and what was not read is NaN.
  StepInfo info;
  info.grad_norm = info.clip_scale = std::nan("");
  if (config_.max_grad_norm > 0) clip_by_global_norm_(grads, config_.max_grad_norm);
  update(info, 1.0);
  return info;
}

AdamW::StepInfo AdamW::step_with_norm(double grad_norm) {
  StepInfo info;
  info.grad_norm = grad_norm;
  check_finite(grad_norm);
  // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when above.
  if (config_.max_grad_norm > 0 && grad_norm > config_.max_grad_norm)
    info.clip_scale = config_.max_grad_norm / (grad_norm + 1e-6);
  update(info, info.clip_scale);
  return info;
}

void AdamW::update(StepInfo& info, double grad_scale) {
  ++step_;
  info.lr = scheduled_lr(config_, step_);
  AdamWStep s;
  s.lr = info.lr;
  s.beta1 = config_.beta1;
  s.beta2 = config_.beta2;
  s.eps = config_.eps;
  s.step = step_;
  s.grad_scale = grad_scale;
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter* p = params_[i].second;
    if (!p->var.grad().defined()) continue;
    s.weight_decay = p->decay ? config_.weight_decay : 0.0;
    adamw_(p->var.value(), p->var.grad(), m_[i], v_[i], s);
    p->var.zero_grad();
  }
}

std::vector<std::pair<std::string, Tensor>> AdamW::state_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back(params_[i].first + ".exp_avg", m_[i]);
    out.emplace_back(params_[i].first + ".exp_avg_sq", v_[i]);
  }
  return out;
}

void AdamW::load_state(int64_t steps_taken, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  ORDO_CHECK(steps_taken >= 0, "optimizer state: negative step count ", steps_taken);
  auto find = [&](const std::string& name) -> const Tensor& {
    for (const auto& [n, t] : tensors)
      if (n == name) return t;
    throw Error("optimizer state: no tensor '" + name + "'");
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    for (auto [suffix, slot] : {std::pair<const char*, Tensor*>{".exp_avg", &m_[i]}, {".exp_avg_sq", &v_[i]}}) {
      const Tensor& t = find(name + suffix);
      check_shape(t, slot->shape(), "optimizer state", (name + suffix).c_str());
      slot->copy_from(t);
    }
  }
  ORDO_CHECK(tensors.size() == 2 * params_.size(), "optimizer state: ", tensors.size(),
             " tensors for ", params_.size(), " parameters (expected two each)");
  step_ = steps_taken;
}

}  // namespace ordo::nn
