// Op layer of the fused attention (tensor/attention_terms.h, tensor/kernels.inc):
// every term's shape, dtype and device checked, the operands laid out as the
// kernels take them, and the gradients of broadcast inputs summed back to their shapes.
// Then attention_inference: the unfused ops, a batch element a thread.
#include <exception>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "tensor/device_runtime.h"
#include "tensor/ops.h"

namespace ordo {

namespace {

constexpr const char* kOp = "attention";

struct Dims {
  int64_t B, H, L, J, d;
};

// [Ht, R] or [Ht, R, d] with Ht = H or 1; `rank` 2 or 3.
void check_table(const Tensor& t, int rank, const Dims& n, const Tensor& q, const char* arg) {
  if (!t.defined()) return;
  check_dim(t, rank, kOp, arg);
  check_same_dtype(t, q, kOp);
  check_same_device(t, q, kOp);
  ORDO_CHECK(t.size(0) == n.H || t.size(0) == 1, kOp, ": ", arg, " has ", t.size(0), " tables, expected ", n.H,
             " (one per head) or 1 (shared)");
  ORDO_CHECK(rank == 2 || t.size(2) == n.d, kOp, ": ", arg, " has vectors of width ", t.size(2), ", the heads ", n.d);
}

// [B or 1, H or 1, ...rest].
void check_broadcast(const Tensor& t, const Dims& n, const Shape& rest, bool heads_may_broadcast, const Tensor& q,
                     const char* arg) {
  if (!t.defined()) return;
  check_same_dtype(t, q, kOp);
  check_same_device(t, q, kOp);
  check_dim(t, static_cast<int>(2 + rest.size()), kOp, arg);
  bool ok = (t.size(0) == n.B || t.size(0) == 1) && (t.size(1) == n.H || (heads_may_broadcast && t.size(1) == 1));
  for (size_t a = 0; a < rest.size(); ++a) ok = ok && (rest[a] < 0 || t.size(static_cast<int>(a) + 2) == rest[a]);
  ORDO_CHECK(ok, kOp, ": ", arg, " has shape ", shape_str(t.shape()), ", expected [", n.B, " or 1, ", n.H,
             heads_may_broadcast ? " or 1" : "", rest.empty() ? "" : ", ", shape_str(rest), "]");
}

void check_ids(const Tensor& t, const Dims& n, const Tensor& q, const char* arg) {
  check_defined(t, kOp, arg);
  check_dtype(t, DType::i64, kOp, arg);
  check_same_device(t, q, kOp);
  check_shape(t, {n.B, n.L}, kOp, arg);
}

Dims check(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& t) {
  for (const auto& [x, name] : {std::pair{&q, "q"}, {&k, "k"}, {&v, "v"}}) {
    check_defined(*x, kOp, name);
    check_float(*x, kOp, name);
    check_dim(*x, 4, kOp, name);
    check_same_dtype(*x, q, kOp);
    check_same_device(*x, q, kOp);
  }
  const Dims n{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  check_shape(k, {n.B, n.H, n.J, n.d}, kOp, "k");
  check_shape(v, {n.B, n.H, n.J, n.d}, kOp, "v");
  ORDO_CHECK(!(t.gate.defined() && t.product.defined()), kOp, ": a gate and a product are two contextual terms; give one");
  check_table(t.gate, 2, n, q, "gate");
  check_table(t.table, 2, n, q, "table");
  check_table(t.segment_table, 2, n, q, "segment_table");
  for (const auto& [x, name] : {std::pair{&t.product, "product"}, {&t.query_vectors, "query_vectors"},
                                {&t.key_vectors, "key_vectors"}, {&t.value_vectors, "value_vectors"}})
    check_table(*x, 3, n, q, name);
  if (t.has_rows() || t.cls_row >= 0 || t.segments.defined() || t.causal)
    ORDO_CHECK(n.J == n.L, kOp, ": positions, segments and the causal mask are self-attention's: ", n.L,
               " queries but ", n.J, " keys");
  if (t.rotary.defined()) {
    check_ids(t.positions, n, q, "positions");
    check_dim(t.rotary, 1, kOp, "rotary");
    check_same_dtype(t.rotary, q, kOp);
    check_same_device(t.rotary, q, kOp);
    ORDO_CHECK(n.d % 2 == 0 && t.rotary.size(0) == n.d / 2, kOp, ": rotary has ", t.rotary.size(0),
               " frequencies for heads ", n.d, " wide (one per pair of dimensions)");
    ORDO_CHECK(!t.has_rows() && !t.pos_query.defined(), kOp,
               ": the rotation is RoPE's alone (no relative tables or positional products beside it)");
  }
  if (t.has_rows()) {
    check_ids(t.positions, n, q, "positions");
    check_defined(t.row_of, kOp, "row_of");
    check_dtype(t.row_of, DType::i64, kOp, "row_of");
    check_dim(t.row_of, 1, kOp, "row_of");
    check_same_device(t.row_of, q, kOp);
  }
  if (t.cls_row >= 0)
    ORDO_CHECK(t.table.defined() && t.cls_row + 2 <= t.table.size(1), kOp, ": the [CLS] reset reads table rows ",
               t.cls_row, " and ", t.cls_row + 1, ", which the table does not have");
  if (t.cls_row >= 0)
    ORDO_CHECK(!t.gate.defined() && !t.product.defined() && !t.query_vectors.defined() && !t.key_vectors.defined() &&
                   !t.value_vectors.defined(),
               kOp, ": the [CLS] reset replaces the scalar and positional terms only (TUPE has no relative vectors)");
  const bool pos = t.pos_query.defined() || t.pos_key.defined();
  if (pos) {
    ORDO_CHECK(t.pos_query.defined() && t.pos_key.defined(), kOp, ": pos_query and pos_key come together");
    check_broadcast(t.pos_query, n, {n.L, -1}, false, q, "pos_query");
    check_broadcast(t.pos_key, n, {n.J, t.pos_query.size(3)}, false, q, "pos_key");
  }
  if (t.segment_table.defined()) {
    check_ids(t.segments, n, q, "segments");
    ORDO_CHECK(t.segment_types >= 1 && t.segment_table.size(1) == t.segment_types * t.segment_types, kOp,
               ": segment_table has ", t.segment_table.size(1), " entries, expected segment_types^2 = ",
               t.segment_types * t.segment_types);
  }
  check_broadcast(t.key_bias, n, {n.J}, true, q, "key_bias");
  check_broadcast(t.dense_bias, n, {n.L, n.J}, true, q, "dense_bias");
  ORDO_CHECK(t.dropout >= 0 && t.dropout < 1, kOp, ": dropout must be in [0, 1), got ", t.dropout);
  check_philox_stream(PhiloxStream{t.seed, t.stream, t.stream_base}, q.device(), kOp);
  return n;
}

Tensor dense(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

// Whether q, k and v [B, H, L, d] are the three parts of one [B, L, 3, H, d]
// block viewed per head, as SelfAttention's stacked projection gives them.
bool stacked_heads(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t H = q.size(1), L = q.size(2), d = q.size(3), part = H * d;
  for (const Tensor* t : {&q, &k, &v})
    if (!t->shares_storage_with(q) || t->shape() != q.shape() || t->stride(0) != L * 3 * part ||
        t->stride(1) != d || t->stride(2) != 3 * part || t->stride(3) != 1)
      return false;
  return k.offset() == q.offset() + part && v.offset() == k.offset() + part;
}

// gout (or out) as the backend takes it, on both devices: any view whose
// last axis is contiguous (merge_heads' gradient is its heads-merged block).
Tensor heads_view(const Tensor& t) { return t.size(3) <= 1 || t.stride(3) == 1 ? t : t.contiguous(); }

// q, k or v as the backend takes it (kernels.inc): both devices' kernels
// read any view whose rows are contiguous where it lies (the stacked Q/K/V
// product's columns, per head), no copy.
Tensor head_rows(const Tensor& t) { return heads_view(t); }

// The terms with every tensor contiguous.
AttentionTerms contiguous(AttentionTerms t) {
  for (Tensor* x : {&t.gate, &t.product, &t.query_vectors, &t.key_vectors, &t.table, &t.value_vectors, &t.pos_query,
                    &t.pos_key, &t.segments, &t.segment_table, &t.key_bias, &t.dense_bias, &t.positions, &t.row_of,
                    &t.rotary})
    *x = dense(*x);
  return t;
}

Tensor empty_like_if(bool wanted, const Tensor& like) {
  return wanted && like.defined() ? Tensor::empty(like.shape(), like.dtype(), like.device()) : Tensor();
}

// g [B, H, ...] summed over the axes `like` broadcasts (size 1 there).
Tensor sum_to(const Tensor& g, const Tensor& like) {
  std::vector<int> axes;
  for (int a = 0; a < 2; ++a)
    if (like.size(a) == 1 && g.size(a) != 1) axes.push_back(a);
  return axes.empty() ? g : sum(g, axes, /*keepdim=*/true);
}

// dU[h, a * n + c] = sum over (b, i) with segments[b, i] = a of rows[b, h, i, c];
// rows [B, H, L, n] -> [Ht, n^2].
Tensor segment_table_grad(const Tensor& rows, const Tensor& segments, int64_t n, int64_t tables) {
  const int64_t B = rows.size(0), H = rows.size(1), L = rows.size(2);
  Tensor ids = Tensor::arange(n, DType::i64, segments.device());
  Tensor one_hot = eq(segments.reshape({B * L, 1}), ids.reshape({1, n})).to(rows.dtype());  // [B L, n]
  Tensor per_head = rows.permute({1, 0, 2, 3}).reshape({H, B * L, n});                    // [H, B L, n]
  // A sum over rows, not a model's product: exact in FP32 (matmul's default)
  // under any precision (bf16 would round each row's gradient first).
  Tensor g = matmul(one_hot.unsqueeze(0).expand({H, B * L, n}), per_head, /*ta=*/true, false);  // [H, n, n]
  g = g.reshape({H, n * n});
  return tables == 1 ? sum(g, {0}, /*keepdim=*/true) : g;
}

}  // namespace

AttentionOutput attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                                  bool with_operand) {
  const Dims n = check(q, k, v, terms);
  // [B, L, H, d] blocks seen as [B, H, L, d]: the heads merged where they lie.
  auto heads_merged = [&](DType dtype) {
    return Tensor::empty({n.B, n.L, n.H, n.d}, dtype, q.device()).permute({0, 2, 1, 3});
  };
  AttentionOutput r{heads_merged(q.dtype()), Tensor::empty({n.B, n.H, n.L}, q.dtype(), q.device()),
                    with_operand && q.dtype() == DType::f32 ? heads_merged(DType::bf16) : Tensor()};
  if (r.out.numel() == 0) return r;
  ORDO_BACKEND(q.device(), attention_forward)(r.out, r.out_operand, r.lse, head_rows(q), head_rows(k), head_rows(v),
                                             contiguous(terms));
  return r;
}

AttentionGrads attention_backward(const Tensor& gout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOutput& forward, const AttentionTerms& terms,
                                  const AttentionNeeds& needs) {
  const Dims n = check(q, k, v, terms);
  check_shape(gout, forward.out.shape(), "attention_backward", "gout");
  check_same_dtype(gout, q, "attention_backward");
  AttentionGrads g;
  if (needs.q && needs.k && needs.v && stacked_heads(q, k, v)) {
    // Written where the stacked product's backward reads them: one [B, L, 3,
    // H, d] block that the autograd takes whole (its parts lie in place).
    const Tensor block = Tensor::empty({n.B, n.L, 3, n.H, n.d}, q.dtype(), q.device());
    g.q = block.select(2, 0).permute({0, 2, 1, 3});
    g.k = block.select(2, 1).permute({0, 2, 1, 3});
    g.v = block.select(2, 2).permute({0, 2, 1, 3});
  } else {
    g.q = empty_like_if(needs.q, q);
    g.k = empty_like_if(needs.k, k);
    g.v = empty_like_if(needs.v, v);
  }
  g.gate = empty_like_if(needs.gate, terms.gate);
  g.product = empty_like_if(needs.product, terms.product);
  g.query_vectors = empty_like_if(needs.query_vectors, terms.query_vectors);
  g.key_vectors = empty_like_if(needs.key_vectors, terms.key_vectors);
  g.table = empty_like_if(needs.table, terms.table);
  g.value_vectors = empty_like_if(needs.value_vectors, terms.value_vectors);
  const Device dev = q.device();
  const DType dt = q.dtype();
  if (needs.pos_query && terms.pos_query.defined())
    g.pos_query = Tensor::empty({n.B, n.H, n.L, terms.pos_query.size(3)}, dt, dev);
  if (needs.pos_key && terms.pos_key.defined()) g.pos_key = Tensor::empty({n.B, n.H, n.J, terms.pos_key.size(3)}, dt, dev);
  if (needs.segment_table && terms.segment_table.defined())
    g.segment_rows = Tensor::empty({n.B, n.H, n.L, terms.segment_types}, dt, dev);
  if (forward.out.numel() > 0) {
    ORDO_BACKEND(dev, attention_backward)(g, heads_view(gout), head_rows(q), head_rows(k), head_rows(v),
                                          forward.out, forward.lse, contiguous(terms));
  } else {
    for (Tensor* x : {&g.q, &g.k, &g.v, &g.gate, &g.product, &g.query_vectors, &g.key_vectors, &g.table,
                      &g.value_vectors, &g.pos_query, &g.pos_key, &g.segment_rows})
      if (x->defined()) *x = Tensor::zeros(x->shape(), dt, dev);
  }
  // Back to the inputs' shapes where they broadcast.
  if (g.pos_query.defined()) g.pos_query = sum_to(g.pos_query, terms.pos_query);
  if (g.pos_key.defined()) g.pos_key = sum_to(g.pos_key, terms.pos_key);
  if (g.segment_rows.defined())
    g.segment_table = segment_table_grad(g.segment_rows, terms.segments, terms.segment_types, terms.segment_table.size(0));
  return g;
}

// The ops inside run on the thread that calls them (a parallel loop inside
// one is a team of one), so a batch element's products, softmax and copy are
// one thread's, and the threads share nothing but the output's disjoint rows.
// The unfused ops instead copy q, k and v into the heads' layout, start a
// parallel loop per op over all B H rows, write [B, H, L, J] scores to memory
// and read them back, and copy the heads back together (measured slower:
// ordo bench finetune).
Tensor attention_inference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                           const Tensor& bias, DType out_dtype, MatmulPrecision precision) {
  constexpr const char* op = "attention_inference";
  check_dim(q, 4, op, "q");
  check_dim(k, 4, op, "k");
  check_dim(v, 4, op, "v");
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), J = k.size(2), e = v.size(3);
  ORDO_CHECK(out_dtype == DType::f32 || out_dtype == DType::bf16, op, ": out_dtype ", dtype_name(out_dtype),
             " (f32, or bf16 for a product to take)");
  ORDO_CHECK(q.device().is_cpu(), op, ": a CPU op (a GPU runs the fused attention), got ", q.device().str());
  check_shape(k, {B, H, J, q.size(3)}, op, "k");
  check_shape(v, {B, H, J, e}, op, "v");
  check_same_device(q, k, op);
  check_same_device(q, v, op);
  if (mask.defined()) {
    check_dim(mask, 4, op, "mask");
    ORDO_CHECK((mask.size(0) == B || mask.size(0) == 1) && mask.size(1) == 1 &&
                   (mask.size(2) == L || mask.size(2) == 1) && mask.size(3) == J,
               op, ": mask of shape ", shape_str(mask.shape()), " for ", B, " x ", L, " queries and ", J,
               " keys (expected [B or 1, 1, L or 1, J])");
  }
  Tensor bias4 = bias;  // [.., L, J] as [B or 1, H or 1, L, J]
  if (bias.defined()) {
    while (bias4.dim() < 4) bias4 = bias4.unsqueeze(0);
    ORDO_CHECK(bias4.dim() == 4 && (bias4.size(0) == B || bias4.size(0) == 1) &&
                   (bias4.size(1) == H || bias4.size(1) == 1) && (bias4.size(2) == L || bias4.size(2) == 1) &&
                   bias4.size(3) == J,
               op, ": bias of shape ", shape_str(bias.shape()), " for ", B, " x ", H, " heads x ", L, " queries and ",
               J, " keys (expected [B or 1, H or 1, L or 1, J])");
  }
  // k^T as the batched product over all B H heads lays it out: a copy when
  // k's batch and head axes do not collapse into one (k a view of the q/k/v
  // projection), the transposed view otherwise (k made by a rotation). The
  // two reach different BLAS kernels (B as given or transposed), whose sums
  // round differently; the other operands' copies change only their strides.
  // Under bf16, q, k and v rounded once here (unless given as bf16), as the
  // batched products round them (elementwise: the same operands), rather
  // than a head at a time; the softmax writes P's rounding for P.V beside it.
  const bool bf16 = precision == MatmulPrecision::bf16 && q.dtype() != DType::f64;
  const Tensor qs = bf16 ? as_operand(q, precision) : q, ks = bf16 ? as_operand(k, precision) : k,
               vs = bf16 ? as_operand(v, precision) : v;
  const bool copy_keys = B > 1 && H > 1 && ks.stride(0) != ks.stride(1) * H;
  Tensor out = Tensor::empty({B, L, H * e}, v.dtype() == DType::f64 ? DType::f64 : out_dtype);
  std::exception_ptr failure;
  std::mutex failure_mutex;
  // A head at a time: its [L, J] scores (590 KB at L = J = 384) stay in the
  // core's L2 cache from the product through the softmax to P.V, where a
  // batch element's [H, L, J] would not. The product of each head is the
  // batched product's matrix for that head (one BLAS call per matrix either
  // way), so the bits are the same.
  auto one = [&](int64_t b) {
    try {
      const Tensor bias_b = bias4.defined() ? bias4.select(0, bias4.size(0) == 1 ? 0 : b) : Tensor();
      const Tensor mask_b = mask.defined() ? mask.select(0, mask.size(0) == 1 ? 0 : b).select(0, 0) : Tensor();
      const Tensor out_b = out.select(0, b);  // [L, H e]
      for (int64_t h = 0; h < H; ++h) {
        const Tensor keys = ks.select(0, b).select(0, h).transpose(-1, -2);  // [d, J]
        Tensor scores =
            matmul(qs.select(0, b).select(0, h), copy_keys ? keys.contiguous() : keys, false, false, scale, precision);
        if (bias_b.defined()) scores = add(scores, bias_b.select(0, bias_b.size(0) == 1 ? 0 : h));
        const Tensor probs = bf16 ? softmax_dropout(scores, mask_b, 0.0, PhiloxStream{}, DType::bf16).out
                                  : (mask_b.defined() ? softmax(scores, mask_b) : softmax(scores));
        out_b.slice(1, h * e, (h + 1) * e)
            .copy_from(matmul(probs, vs.select(0, b).select(0, h), false, false, 1.0, precision));  // [L, e]
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
#ifdef _OPENMP
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), B)));
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t b = 0; b < B; ++b) one(b);
#else
  for (int64_t b = 0; b < B; ++b) one(b);
#endif
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace ordo
