#include "nn/optim.h"

#include <algorithm>
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

Tensor AdamW::begin_step() {
  std::vector<Tensor> grads;
  for (const auto& [name, p] : params_)
    if (p->var.grad().defined()) grads.push_back(p->var.grad());
  if (grads.empty()) return Tensor();
  if (config_.fused) return global_norm_and_clip(fused_tensors(), config_.max_grad_norm);
  // The reference path: a sum of squares per gradient, then as clip_by_global_norm_.
  const Tensor& first = grads.front();
  Tensor norm = sqrt(sum(sums_of_squares(grads))).reshape({1});
  Tensor limit = Tensor::scalar(config_.max_grad_norm, first.dtype(), first.device());
  Tensor scale = config_.max_grad_norm > 0
                     ? where(gt(norm, limit), div(limit, affine(norm, 1.0, 1e-6)), Tensor::ones({1}, first.dtype(), first.device()))
                     : Tensor::ones({1}, first.dtype(), first.device());
  return concat({norm, scale}, 0);
}

AdamW::StepInfo AdamW::check_norm(const double* norm_read) const {
  StepInfo info;
  if (norm_read == nullptr) {
    info.grad_norm = info.clip_scale = std::nan("");
    return info;
  }
  info.grad_norm = *norm_read;
  check_finite(info.grad_norm);
  // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when above.
  if (config_.max_grad_norm > 0 && info.grad_norm > config_.max_grad_norm)
    info.clip_scale = config_.max_grad_norm / (info.grad_norm + 1e-6);
  return info;
}

double AdamW::schedule() {
  ++step_;
  lr_ = scheduled_lr(config_, step_);
  if (config_.fused && !params_.empty()) {
    const Tensor& first = params_.front().second->var.value();
    if (!schedule_.defined()) schedule_ = Tensor::empty({3}, DType::f64, first.device());
    write_adamw_schedule(schedule_, lr_, config_.beta1, config_.beta2, step_);
  }
  return lr_;
}

AdamWTensors& AdamW::fused_tensors() {
  std::vector<bool> with_grad;
  std::vector<Tensor> params, grads, m, v, rounded;
  std::vector<bool> decay;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Parameter& p = *params_[i].second;
    with_grad.push_back(p.var.grad().defined());
    if (!with_grad.back()) continue;
    params.push_back(p.var.value());
    grads.push_back(p.var.grad());
    m.push_back(m_[i]);
    v.push_back(v_[i]);
    decay.push_back(p.decay);
    const bool in_block = rounded_.weights.defined() && p.var.value().shares_storage_with(rounded_.weights);
    rounded.push_back(in_block ? p.var.value().same_view_on(rounded_.rounding) : Tensor());
  }
  // Rebuilt when another set of parameters has gradients, or a parameter's
  // storage moved (its address is in the device table).
  bool same = with_grad == with_grad_ && params.size() == fused_.params.size();
  for (size_t i = 0; same && i < params.size(); ++i) same = params[i].raw_data() == fused_.params[i].raw_data();
  if (same) {
    fused_.grads = std::move(grads);
  } else {
    fused_ = adamw_tensors(std::move(params), std::move(grads), std::move(m), std::move(v), decay, std::move(rounded));
    with_grad_ = std::move(with_grad);
  }
  return fused_;
}

void AdamW::apply(const Tensor& norm_and_clip, const StepInfo& info) {
  if (norm_and_clip.defined()) {
    if (config_.fused) {
      AdamWConstants c;
      c.beta1 = config_.beta1;
      c.beta2 = config_.beta2;
      c.eps = config_.eps;
      c.weight_decay = config_.weight_decay;
      adamw_multi_(fused_, norm_and_clip, schedule_, c);
    } else {
      apply_per_tensor(norm_and_clip, info);
      if (rounded_.weights.defined()) rounded_.rounding.copy_from(rounded_.weights);
    }
  }
  clear_gradients();
}

bool AdamW::keep_weights_rounding() {
  const auto packed = std::find_if(params_.begin(), params_.end(), [](const NamedParameter& p) {
    return p.second->product_weight && p.second->var.value().dtype() == DType::f32;
  });
  if (packed == params_.end()) return false;
  rounded_.weights = packed->second->var.value().whole_storage();
  rounded_.rounding = rounded_.weights.to(DType::bf16);
  with_grad_.clear();  // the multi-tensor tables are rebuilt with the roundings' addresses
  return true;
}

void AdamW::apply_per_tensor(const Tensor& norm_and_clip, const StepInfo& info) {
  AdamWStep s;
  s.lr = lr_;
  s.beta1 = config_.beta1;
  s.beta2 = config_.beta2;
  s.eps = config_.eps;
  s.step = step_;
  // The factor the host read, or (nothing read) the device's, applied to the
  // gradients in place there as clip_by_global_norm_ does.
  const bool read = !std::isnan(info.clip_scale);
  s.grad_scale = read ? info.clip_scale : 1.0;
  const Tensor device_scale = norm_and_clip.slice(0, 1, 2);
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter* p = params_[i].second;
    if (!p->var.grad().defined()) continue;
    if (!read && config_.max_grad_norm > 0) binary_(BinaryOp::mul, p->var.grad(), device_scale);
    s.weight_decay = p->decay ? config_.weight_decay : 0.0;
    adamw_(p->var.value(), p->var.grad(), m_[i], v_[i], s);
  }
}

void AdamW::clear_gradients() {
  for (const auto& [name, p] : params_) p->var.zero_grad();
  fused_.grads.clear();  // the step's gradients are freed with the parameters'
}

AdamW::StepInfo AdamW::step(bool read_norm) {
  const Tensor norm_and_clip = begin_step();
  StepInfo info;
  if (norm_and_clip.defined() && (read_norm || norm_and_clip.device().is_cpu())) {
    const double norm = norm_and_clip.to_doubles()[0];
    info = check_norm(&norm);
  } else {
    info = check_norm(nullptr);
  }
  info.lr = schedule();
  apply(norm_and_clip, info);
  return info;
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
