#include "tensor/kernel_calls.h"

#include <cstring>
#include <mutex>

#include "base/error.h"
#include "tensor/backend.h"

namespace ordo {

namespace {

struct Recorder {
  std::mutex mutex;
  std::vector<KernelCall> calls;
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

}  // namespace

namespace detail {

std::atomic<bool> kernel_calls_recorded{false};

void record_kernel_call(KernelCall call) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.calls.push_back(std::move(call));
}

void describe_argument(KernelCall& call, const MatrixBatch& m) { describe_argument(call, m.t); }

void describe_argument(KernelCall& call, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) describe_argument(call, t);
}

void describe_argument(KernelCall& call, const AdamWTensors& t) {
  for (const std::vector<Tensor>* list : {&t.params, &t.grads, &t.m, &t.v}) describe_argument(call, *list);
  for (const Tensor& r : t.rounded) call.bytes += distinct_bytes(r);  // not shapes: the roofline counts params by them
}

void describe_argument(KernelCall& call, const AttentionTerms& t) {
  for (const Tensor* x : {&t.gate, &t.product, &t.query_vectors, &t.key_vectors, &t.table, &t.value_vectors,
                          &t.pos_query, &t.pos_key, &t.segments, &t.segment_table, &t.key_bias, &t.dense_bias,
                          &t.positions, &t.row_of, &t.rotary})
    call.bytes += distinct_bytes(*x);
  // Multiply-adds per (query, key) pair beyond q . k and P v: a d-wide dot
  // product per relative vector term, e for E . F, d more for the product's
  // third factor, one for a gate.
  const int64_t d = t.query_vectors.defined() ? t.query_vectors.size(-1)
                    : t.value_vectors.defined() ? t.value_vectors.size(-1)
                    : t.key_vectors.defined()   ? t.key_vectors.size(-1)
                    : t.product.defined()       ? t.product.size(-1)
                                                : 0;
  int64_t extra = d * (t.query_vectors.defined() + t.key_vectors.defined() + t.value_vectors.defined() +
                       t.product.defined());
  if (t.pos_query.defined()) extra += t.pos_query.size(-1);
  if (t.gate.defined()) extra += 1;
  call.integers.push_back(extra);
  call.integers.push_back(t.causal ? 1 : 0);
  // Whether a CUDA device runs it on tensor-core tiles (1), and the tables'
  // gradients with them (2): q's width from its shape (forward: out,
  // out_operand, lse, q, ...; backward: gout, q, ...).
  const size_t q = std::strcmp(call.kernel, "attention_forward") == 0 ? 3 : 1;
  const int64_t width = call.shapes.size() > q && call.shapes[q].size() == 4 ? call.shapes[q][3] : 0;
  const bool tables = t.table.defined() || t.gate.defined() || t.query_vectors.defined() || t.value_vectors.defined();
  call.integers.push_back(!attention_runs_on_tiles(t, width) ? 0 : tables && attention_table_grads_on_tiles(t) ? 2 : 1);
}

void describe_argument(KernelCall& call, const AttentionGrads& g) {
  for (const Tensor* x : {&g.q, &g.k, &g.v, &g.gate, &g.product, &g.query_vectors, &g.key_vectors, &g.table,
                          &g.value_vectors, &g.pos_query, &g.pos_key, &g.segment_rows})
    call.bytes += distinct_bytes(*x);
  // Whether the tables' pass over the sorted pairs runs.
  const bool tables = g.gate.defined() || g.product.defined() || g.query_vectors.defined() ||
                      g.key_vectors.defined() || g.table.defined() || g.value_vectors.defined();
  call.integers.push_back(tables ? 1 : 0);
}

}  // namespace detail

double distinct_bytes(const Tensor& t) {
  if (!t.defined()) return 0;
  double elements = 1;
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.strides()[d] != 0) elements *= static_cast<double>(t.shape()[d]);
  return elements * static_cast<double>(dtype_size(t.dtype()));
}

KernelCallRecording::KernelCallRecording() {
  ORDO_CHECK(!detail::kernel_calls_recorded.exchange(true),
             "kernel calls are already being recorded (one KernelCallRecording at a time)");
  std::lock_guard<std::mutex> lock(recorder().mutex);
  recorder().calls.clear();
}

KernelCallRecording::~KernelCallRecording() {
  detail::kernel_calls_recorded.store(false);
  std::lock_guard<std::mutex> lock(recorder().mutex);
  recorder().calls.clear();
}

std::vector<KernelCall> KernelCallRecording::calls() const {
  std::lock_guard<std::mutex> lock(recorder().mutex);
  return recorder().calls;
}

}  // namespace ordo
