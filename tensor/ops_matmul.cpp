// Op layer: batched matrix product with broadcasting batch axes.
//
// The kernels (BLAS / cuBLAS style) take each operand as `batch` row-major
// matrices with a leading dimension and one batch stride, optionally
// transposed. Most views produced by transpose/permute/expand already have
// that form and are passed without a copy; anything else is made contiguous.
#include <algorithm>

#include "tensor/ops.h"
#include "tensor/product_onto.h"

namespace ordo {

namespace {

// Tries to describe the matrices of `t` (batch axes already expanded) as a
// MatrixBatch. Returns false when the layout needs a copy first.
bool as_matrix_batch(const Tensor& t, MatrixBatch& out) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t rs = t.stride(-2), cs = t.stride(-1);
  // The batch axes collapse into one when, walking outward, each axis's
  // stride is the inner axis's stride times its size (size-1 axes ignored;
  // broadcast axes, stride 0, collapse with each other).
  int64_t batch_stride = 0, run = -1;  // run: stride the next outer axis must have
  for (int d = t.dim() - 3; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (run < 0) {
      batch_stride = t.stride(d);
    } else if (t.stride(d) != run) {
      return false;
    }
    run = t.stride(d) * t.size(d);
  }
  out.t = t;
  out.batch_stride = batch_stride;
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols)) {  // row-major
    out.trans = false;
    out.ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    return true;
  }
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows)) {  // column-major = transposed row-major
    out.trans = true;
    out.ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    return true;
  }
  return false;
}

}  // namespace

namespace {

// f64, or f32 and bf16 operands (a bf16 one only from a product that rounds
// to bf16, which the other operand may not have been yet).
void check_operand(const Tensor& t, const char* arg) {
  check_defined(t, "matmul", arg);
  ORDO_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64 || t.dtype() == DType::bf16, "matmul: ", arg,
             " has dtype ", dtype_name(t.dtype()), " (f32, f64 or bf16 expected)");
}

// The operand as the product takes it: rounded to bf16 under bf16 (once per
// product; a caller that reuses an operand rounds it itself, as_operand),
// widened to f32 (exact) under fp32 and tf32.
Tensor operand_for(const Tensor& t, MatmulPrecision precision) {
  if (t.dtype() == DType::f64) return t;
  const DType wanted = precision == MatmulPrecision::bf16 ? DType::bf16 : DType::f32;
  if (t.dtype() == wanted) return t;
  if (wanted == DType::bf16) {
    const Tensor rounded = OperandRoundingScope::lookup(t);
    if (rounded.defined()) return rounded;
  }
  return t.to(wanted);
}

thread_local OperandRoundingScope* t_operand_rounding = nullptr;

// c = alpha op(a) op(b), written into `out` when it is defined (a contiguous
// tensor of the product's shape), and added onto it (beta = 1) when
// `accumulate`. c is f32 for f32 and bf16 operands (`precision` says how
// they multiply), f64 for f64 ones; bf16 when `to_bf16` (bf16 precision, a
// new tensor).
Tensor product(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b, double alpha, const Tensor& out,
               bool accumulate, MatmulPrecision precision, bool to_bf16 = false) {
  check_operand(a_in, "a");
  check_operand(b_in, "b");
  ORDO_CHECK((a_in.dtype() == DType::f64) == (b_in.dtype() == DType::f64), "matmul: dtypes ",
             dtype_name(a_in.dtype()), " and ", dtype_name(b_in.dtype()), " do not mix (f64 goes with f64)");
  check_same_device(a_in, b_in, "matmul");
  const Tensor a = operand_for(a_in, precision), b = operand_for(b_in, precision);
  ORDO_CHECK(!to_bf16 || (precision == MatmulPrecision::bf16 && a.dtype() == DType::bf16 && !out.defined()),
             "matmul_to_bf16: needs bf16 products (precision ", precision_name(precision), ", operands ",
             dtype_name(a_in.dtype()), ")");
  const DType out_dtype = a.dtype() == DType::f64 ? DType::f64 : to_bf16 ? DType::bf16 : DType::f32;
  ORDO_CHECK(a.dim() >= 2 && b.dim() >= 2, "matmul: operands need at least 2 dims, got ",
             shape_str(a.shape()), " and ", shape_str(b.shape()));
  Tensor la = trans_a ? a.transpose(-1, -2) : a;  // logical [.., m, k]
  Tensor lb = trans_b ? b.transpose(-1, -2) : b;  // logical [.., k, n]
  const int64_t m = la.size(-2), k = la.size(-1), n = lb.size(-1);
  ORDO_CHECK(lb.size(-2) == k, "matmul: inner sizes differ: ", shape_str(a.shape()),
             trans_a ? "^T" : "", " @ ", shape_str(b.shape()), trans_b ? "^T" : "", " (", k,
             " vs ", lb.size(-2), ")");

  Shape batch_a(la.shape().begin(), la.shape().end() - 2);
  Shape batch_b(lb.shape().begin(), lb.shape().end() - 2);
  Shape batch_shape = broadcast_shapes(batch_a, batch_b, "matmul (batch axes)");
  const int64_t batch = shape_numel(batch_shape);
  auto expanded = [&](const Tensor& t, int64_t r, int64_t c) {
    Shape s = batch_shape;
    s.push_back(r);
    s.push_back(c);
    return t.expand(s);
  };
  Tensor ea = expanded(la, m, k), eb = expanded(lb, k, n);
  MatrixBatch ma, mb;
  if (!as_matrix_batch(ea, ma)) ORDO_ASSERT(as_matrix_batch(ea = ea.contiguous(), ma));
  if (!as_matrix_batch(eb, mb)) ORDO_ASSERT(as_matrix_batch(eb = eb.contiguous(), mb));

  Shape out_shape = batch_shape;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor c = out.defined() ? out : Tensor::empty(out_shape, out_dtype, a.device());
  ORDO_CHECK(c.shape() == out_shape && c.is_contiguous() && c.dtype() == out_dtype && c.device() == a.device(),
             "matmul: the tensor ", accumulate ? "added onto" : "written into", " is ", shape_str(c.shape()), " ",
             dtype_name(c.dtype()),
             c.is_contiguous() ? "" : " (strided)", "; the product is ", shape_str(out_shape), " ",
             dtype_name(out_dtype), " on the operands' device, contiguous");
  const double beta = accumulate ? 1.0 : 0.0;
  if (batch == 0 || m == 0 || n == 0) return c;
  // A weight shared by every batch (Linear on [B, L, D]): one tall product.
  if (batch > 1 && mb.batch_stride == 0 && !ma.trans && ma.batch_stride == m * ma.ld) {
    ORDO_BACKEND(a.device(), gemm)(c, ma, mb, int64_t{1}, batch * m, n, k, alpha, beta, precision);
  } else {
    ORDO_BACKEND(a.device(), gemm)(c, ma, mb, batch, m, n, k, alpha, beta, precision);
  }
  return c;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, double alpha, MatmulPrecision precision) {
  return product(a, b, trans_a, trans_b, alpha, Tensor(), false, precision);
}

Tensor matmul_to_bf16(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  return product(a, b, trans_a, trans_b, 1.0, Tensor(), false, MatmulPrecision::bf16, /*to_bf16=*/true);
}

Tensor matmul_onto(const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, double alpha,
                   MatmulPrecision precision) {
  check_defined(c, "matmul_onto", "c");
  return product(a, b, trans_a, trans_b, alpha, c, true, precision);
}

Tensor matmul_into(const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, double alpha,
                   MatmulPrecision precision) {
  check_defined(c, "matmul_into", "c");
  return product(a, b, trans_a, trans_b, alpha, c, false, precision);
}

Tensor as_operand(const Tensor& t, MatmulPrecision precision) { return operand_for(t, precision); }

OperandColumnSums operand_column_sums(const Tensor& x) {
  check_defined(x, "operand_column_sums", "x");
  check_dtype(x, DType::f32, "operand_column_sums", "x");
  check_dim(x, 2, "operand_column_sums", "x");
  const Tensor xc = x.contiguous();
  OperandColumnSums r{Tensor::empty(xc.shape(), DType::bf16, xc.device()),
                      Tensor::empty({xc.size(1)}, DType::f32, xc.device())};
  ORDO_BACKEND(xc.device(), operand_column_sums)(r.operand, r.sums, xc);
  return r;
}

OperandRoundingScope::OperandRoundingScope(const Tensor& block, MatmulPrecision precision, const RoundedWeights& kept)
    : outer_(t_operand_rounding) {
  if (!block.defined() || block.dtype() != DType::f32 || precision != MatmulPrecision::bf16) return;
  if (outer_ && outer_->source_.defined() && outer_->source_.shares_storage_with(block)) return;
  source_ = block.whole_storage();
  if (kept.weights.defined() && kept.weights.shares_storage_with(block)) {
    ORDO_CHECK(kept.rounding.dtype() == DType::bf16 && kept.rounding.shape() == source_.shape() &&
                   kept.rounding.is_contiguous() && kept.rounding.offset() == 0 &&
                   kept.rounding.device() == source_.device(),
               "OperandRoundingScope: the kept rounding of ", shape_str(source_.shape()), " weights is ",
               dtype_name(kept.rounding.dtype()), " ", shape_str(kept.rounding.shape()), " on ",
               kept.rounding.device().str(), " (bf16 of their shape on their device expected)");
    rounded_ = kept.rounding;
  } else {
    rounded_ = source_.to(DType::bf16);
  }
  t_operand_rounding = this;
}

OperandRoundingScope::~OperandRoundingScope() {
  if (t_operand_rounding == this) t_operand_rounding = outer_;
}

Tensor OperandRoundingScope::lookup(const Tensor& t) {
  if (t.dtype() != DType::f32) return Tensor();
  for (OperandRoundingScope* s = t_operand_rounding; s; s = s->outer_) {
    if (s->source_.defined() && t.shares_storage_with(s->source_)) return t.same_view_on(s->rounded_);
    for (auto it = s->activations_.begin(); it != s->activations_.end(); ++it) {
      if (it->first.lock() != t.storage()) continue;
      const Tensor rounded = t.same_view_on(it->second);
      s->activations_.erase(it);
      return rounded;
    }
  }
  return Tensor();
}

bool OperandRoundingScope::collecting() { return t_operand_rounding != nullptr; }

void OperandRoundingScope::add_rounding(const Tensor& value, const Tensor& rounded) {
  OperandRoundingScope* s = t_operand_rounding;
  if (s == nullptr || !value.defined() || !rounded.defined()) return;
  ORDO_CHECK(value.dtype() == DType::f32 && rounded.dtype() == DType::bf16 && value.shape() == rounded.shape() &&
                 value.is_contiguous() && rounded.is_contiguous() && value.offset() == 0 && rounded.offset() == 0,
             "OperandRoundingScope::add_rounding: a contiguous f32 value and its bf16 rounding of one shape");
  // Drop the roundings whose values are gone (their storage could be reused).
  auto gone = [](const auto& entry) { return entry.first.expired(); };
  s->activations_.erase(std::remove_if(s->activations_.begin(), s->activations_.end(), gone), s->activations_.end());
  s->activations_.emplace_back(value.storage(), rounded);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, MatmulPrecision precision) {
  return linear_stacked(x, weight, bias.defined() ? std::vector<Tensor>{bias} : std::vector<Tensor>{}, precision);
}

Tensor linear_stacked(const Tensor& x, const Tensor& weight, const std::vector<Tensor>& biases,
                      MatmulPrecision precision) {
  check_operand(x, "x");
  check_dim(weight, 2, "linear", "weight");
  ORDO_CHECK(x.dim() >= 2, "linear: x needs at least 2 dims ([rows, in]), got ", shape_str(x.shape()));
  ORDO_CHECK(x.size(-1) == weight.size(1), "linear: x has ", x.size(-1), " features, weight ",
             shape_str(weight.shape()), " expects ", weight.size(1));
  Tensor init;
  if (!biases.empty()) {
    const DType out_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
    int64_t outputs = 0;
    for (const Tensor& b : biases) {
      check_dim(b, 1, "linear", "bias");
      check_dtype(b, out_dtype, "linear", "bias");
      outputs += b.size(0);
    }
    ORDO_CHECK(outputs == weight.size(0), "linear: the biases have ", outputs, " outputs, weight ",
               shape_str(weight.shape()), " has ", weight.size(0));
    Shape shape = x.shape();
    shape.back() = weight.size(0);
    // Each bias broadcast into its columns of the output; the product is added
    // onto them (beta = 1), one pass instead of a product and a separate add.
    init = Tensor::empty(shape, out_dtype, x.device());
    const Tensor joined = Tensor::joined_rows(biases);
    if (joined.defined()) {
      init.copy_from(joined);  // one bias, or several lying together: one broadcast
    } else {
      int64_t at = 0;
      for (const Tensor& b : biases) {
        init.slice(-1, at, at + b.size(0)).copy_from(b);
        at += b.size(0);
      }
    }
  }
  return product(x, weight, false, true, 1.0, init, init.defined(), precision);
}

}  // namespace ordo
