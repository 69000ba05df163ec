// Op layer: softmax, LayerNorm, cross-entropy, dropout — the fused ops of a
// transformer, each with its backward beside it.
#include "tensor/ops.h"

namespace ordo {

// ---- softmax ---------------------------------------------------------------------

namespace {
// y, and out = dropout(y, p, stream) in out_dtype when `out` is asked for
// (softmax only); y rounded to bf16 with keep_rounded (a bf16 out).
Tensor softmax_forward(const Tensor& x, const Tensor& mask, bool log, Tensor* out = nullptr, double p = 0,
                       const PhiloxStream& stream = {}, DType out_dtype = DType::f32, bool keep_rounded = false) {
  const char* name = log ? "log_softmax" : out ? "softmax_dropout" : "softmax";
  check_float(x, name, "x");
  ORDO_CHECK(x.dim() >= 1, name, ": x must have at least one axis");
  Tensor m;
  if (mask.defined()) {
    check_same_dtype(x, mask, name);
    check_same_device(x, mask, name);
    std::string what = std::string(name) + ": mask of shape " + shape_str(mask.shape()) +
                       " against x of shape " + shape_str(x.shape());
    ORDO_CHECK(broadcast_shapes(mask.shape(), x.shape(), what.c_str()) == x.shape(), what,
               ": the mask must broadcast to x");
    m = mask.expand(x.shape());
  }
  if (out != nullptr) {
    ORDO_CHECK(p >= 0 && p < 1, name, ": dropout's p must be in [0, 1), got ", p);
    check_philox_stream(stream, x.device(), name);
    check_output_dtype(x.dtype(), out_dtype, name, "out");
  }
  ORDO_CHECK(!keep_rounded || (out != nullptr && out_dtype == DType::bf16 && x.dtype() == DType::f32), name,
             ": the probabilities are kept as bf16 only beside a bf16 output of f32 scores");
  Tensor y = Tensor::empty(x.shape(), keep_rounded ? DType::bf16 : x.dtype(), x.device());
  // out is y itself where dropout changes nothing and the dtype is y's.
  const bool written = out != nullptr && (p > 0 || out_dtype != y.dtype());
  if (written) *out = Tensor::empty(x.shape(), out_dtype, x.device());
  ORDO_BACKEND(x.device(), softmax)(y, x.contiguous(), m, log, written ? *out : Tensor(), p, stream);
  if (out != nullptr && !written) *out = y;
  return y;
}

Tensor softmax_grad(const Tensor& y, const Tensor& gy, bool log, DType gx_dtype, double p,
                    const PhiloxStream& stream) {
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  check_float(gy, name, "gy");
  check_shape(gy, y.shape(), name, "gy");
  // y may be kept as bf16 (softmax_dropout's keep_rounded) for f32 gradients.
  ORDO_CHECK(y.dtype() == gy.dtype() || (!log && y.dtype() == DType::bf16 && gy.dtype() == DType::f32), name,
             ": y is ", dtype_name(y.dtype()), " and gy ", dtype_name(gy.dtype()),
             " (the same, or a softmax's bf16 y with f32 gy)");
  check_same_device(y, gy, name);
  check_output_dtype(gy.dtype(), gx_dtype, name, "gx");
  ORDO_CHECK(p >= 0 && p < 1, name, ": dropout's p must be in [0, 1), got ", p);
  check_philox_stream(stream, y.device(), name);
  Tensor gx = Tensor::empty(y.shape(), gx_dtype, y.device());
  ORDO_BACKEND(y.device(), softmax_backward)(gx, y.contiguous(), gy.contiguous(), log, p, stream);
  return gx;
}
}  // namespace

Tensor softmax(const Tensor& x, const Tensor& mask) { return softmax_forward(x, mask, false); }
SoftmaxDropoutResult softmax_dropout(const Tensor& x, const Tensor& mask, double p, const PhiloxStream& stream,
                                     DType out_dtype, bool keep_rounded) {
  SoftmaxDropoutResult r;
  r.y = softmax_forward(x, mask, false, &r.out, p, stream, out_dtype, keep_rounded);
  return r;
}
Tensor log_softmax(const Tensor& x, const Tensor& mask) { return softmax_forward(x, mask, true); }
Tensor softmax_backward(const Tensor& y, const Tensor& gy, DType gx_dtype, double p, const PhiloxStream& stream) {
  return softmax_grad(y, gy, false, gx_dtype, p, stream);
}
Tensor log_softmax_backward(const Tensor& y, const Tensor& gy) {
  return softmax_grad(y, gy, true, y.dtype(), 0, PhiloxStream{});
}

// ---- LayerNorm ---------------------------------------------------------------------

LayerNormResult layernorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, bool with_operand) {
  check_float(x, "layernorm", "x");
  ORDO_CHECK(x.dim() >= 1, "layernorm: x must have at least one axis");
  const int64_t n = x.size(-1);
  check_shape(gamma, {n}, "layernorm", "gamma");
  check_shape(beta, {n}, "layernorm", "beta");
  check_same_dtype(x, gamma, "layernorm");
  check_same_dtype(x, beta, "layernorm");
  check_same_device(x, gamma, "layernorm");
  check_same_device(x, beta, "layernorm");
  ORDO_CHECK(eps > 0, "layernorm: eps must be positive, got ", eps);
  Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  LayerNormResult r{Tensor::empty(x.shape(), x.dtype(), x.device()),
                    Tensor::empty(row_shape, x.dtype(), x.device()),
                    Tensor::empty(row_shape, x.dtype(), x.device()),
                    with_operand && x.dtype() == DType::f32 ? Tensor::empty(x.shape(), DType::bf16, x.device())
                                                            : Tensor()};
  ORDO_BACKEND(x.device(), layernorm)(r.y, r.mean, r.rstd, x.contiguous(), gamma.contiguous(),
                                      beta.contiguous(), eps, r.y_operand);
  return r;
}

LayerNormGrads layernorm_backward(const Tensor& gy, const Tensor& x, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& gamma) {
  check_float(x, "layernorm_backward", "x");
  check_shape(gy, x.shape(), "layernorm_backward", "gy");
  Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  check_shape(mean, row_shape, "layernorm_backward", "mean");
  check_shape(rstd, row_shape, "layernorm_backward", "rstd");
  check_shape(gamma, {x.size(-1)}, "layernorm_backward", "gamma");
  LayerNormGrads g{Tensor::empty(x.shape(), x.dtype(), x.device()),
                   Tensor::empty(gamma.shape(), x.dtype(), x.device()),
                   Tensor::empty(gamma.shape(), x.dtype(), x.device())};
  ORDO_BACKEND(x.device(), layernorm_backward)(g.gx, g.ggamma, g.gbeta, gy.contiguous(),
                                               x.contiguous(), mean.contiguous(),
                                               rstd.contiguous(), gamma.contiguous());
  return g;
}

// ---- cross-entropy -----------------------------------------------------------------

namespace {
// A bias the logits' classes take (undefined: none), checked against them.
Tensor class_bias(const Tensor& bias, const Tensor& logits, const char* op) {
  if (!bias.defined()) return bias;
  check_shape(bias, {logits.size(-1)}, op, "bias");
  check_same_dtype(bias, logits, op);
  check_same_device(bias, logits, op);
  return bias.contiguous();
}
}  // namespace

CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                                 const Tensor& bias) {
  check_float(logits, "cross_entropy", "logits");
  check_dtype(targets, DType::i64, "cross_entropy", "targets");
  check_same_device(logits, targets, "cross_entropy");
  ORDO_CHECK(logits.dim() >= 1, "cross_entropy: logits must have a class axis");
  Shape row_shape(logits.shape().begin(), logits.shape().end() - 1);
  check_shape(targets, row_shape, "cross_entropy", "targets");
  const int64_t c = logits.size(-1), rows = shape_numel(row_shape);
  ORDO_CHECK(c > 0, "cross_entropy: logits have no classes");
  const Tensor b = class_bias(bias, logits, "cross_entropy");
  Tensor z = logits.contiguous().reshape({rows, c});
  Tensor loss = Tensor::empty({rows}, logits.dtype(), logits.device());
  Tensor valid = Tensor::empty({rows}, logits.dtype(), logits.device());
  CrossEntropyResult r;
  r.lse = Tensor::empty({rows}, logits.dtype(), logits.device());
  // Mean over the rows that counted; max(count, 1) makes "all ignored" a 0 loss.
  Tensor mean_and_count = Tensor::empty({2}, logits.dtype(), logits.device());
  ORDO_BACKEND(logits.device(), cross_entropy)(loss, valid, r.lse, mean_and_count, z, b,
                                               targets.contiguous().reshape({rows}), ignore_index);
  r.loss = mean_and_count.slice(0, 0, 1).reshape({});
  r.count = mean_and_count.slice(0, 1, 2).reshape({});
  return r;
}

namespace {

// The logits' gradient [rows, c] in glogits_dtype and, with a bias (the
// logits are logits + bias), its column sums beside it (kernels.inc's
// cross_entropy_backward).
CrossEntropyGrads cross_entropy_grads(const char* op, const Tensor& gy, const Tensor& logits, const Tensor& bias,
                                      const CrossEntropyResult& saved, const Tensor& targets, int64_t ignore_index,
                                      DType glogits_dtype) {
  check_float(logits, op, "logits");
  ORDO_CHECK(gy.defined() && gy.numel() == 1, op, ": gy must have one element");
  check_same_dtype(gy, logits, op);
  check_same_device(gy, logits, op);
  check_output_dtype(logits.dtype(), glogits_dtype, op, "glogits");
  const int64_t c = logits.size(-1), rows = logits.numel() / c;
  ORDO_CHECK(targets.numel() == rows, op, ": ", targets.numel(), " targets for ", rows, " rows of logits");
  const Tensor b = class_bias(bias, logits, op);
  CrossEntropyGrads g{Tensor::empty({rows, c}, glogits_dtype, logits.device()),
                      b.defined() ? Tensor::empty({c}, logits.dtype(), logits.device()) : Tensor()};
  ORDO_BACKEND(logits.device(), cross_entropy_backward)(g.glogits, g.gbias, logits.contiguous().reshape({rows, c}),
                                                        b, saved.lse, targets.contiguous().reshape({rows}),
                                                        gy.contiguous(), saved.count.contiguous(), ignore_index);
  return g;
}

}  // namespace

Tensor cross_entropy_backward(const Tensor& gy, const Tensor& logits, const CrossEntropyResult& saved,
                              const Tensor& targets, int64_t ignore_index) {
  return cross_entropy_grads("cross_entropy_backward", gy, logits, Tensor(), saved, targets, ignore_index,
                             logits.dtype())
      .glogits.reshape(logits.shape());
}

CrossEntropyGrads cross_entropy_backward_with_bias(const Tensor& gy, const Tensor& z, const Tensor& bias,
                                                   const CrossEntropyResult& saved, const Tensor& targets,
                                                   int64_t ignore_index, DType glogits_dtype) {
  const char* op = "cross_entropy_backward_with_bias";
  check_dim(z, 2, op, "z");
  check_defined(bias, op, "bias");
  return cross_entropy_grads(op, gy, z, bias, saved, targets, ignore_index, glogits_dtype);
}

// ---- dropout -----------------------------------------------------------------------

Tensor dropout(const Tensor& x, double p, const PhiloxStream& stream, DType out_dtype) {
  check_float(x, "dropout", "x");
  ORDO_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  check_philox_stream(stream, x.device(), "dropout");
  check_output_dtype(x.dtype(), out_dtype, "dropout", "out");
  Tensor out = Tensor::empty(x.shape(), out_dtype, x.device());
  ORDO_BACKEND(x.device(), dropout)(out, x.contiguous(), p, stream);
  return out;
}

void check_philox_stream(const PhiloxStream& stream, Device device, const char* op) {
  if (!stream.base.defined()) return;
  check_dtype(stream.base, DType::i64, op, "stream base");
  check_shape(stream.base, {1}, op, "stream base");
  ORDO_CHECK(stream.base.device() == device, op, ": the stream base is on ", stream.base.device().str(), ", the tensors on ", device.str());
}

}  // namespace ordo
