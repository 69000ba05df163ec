// The attention's context under bf16 products, nn::merge_heads of
// matmul_to_operand: P v writes the context in bf16 and the output
// projection writes the context's gradient in bf16, so the heads' layout
// copies both ways read 2 bytes an element instead of 4. The rounding
// points are the ones the f32 context has (its f32 sums rounded once to
// nearest even on the way to the projection's operand, and the gradient's
// f32 sums rounded once on the way back to P v's two products), so the output
// and every gradient keep the f32 context's bits, on the CPU and on CUDA
// (the emulated GPU in CI, under both schedules); and the recorded kernel
// calls touch 4 x 2 bytes an element of the context fewer: the product's
// output and the copy's input forward, the projection's gradient and the
// copy's input backward.
#include "autograd/ops.h"
#include "nn/bert.h"
#include "tensor/kernel_calls.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {

constexpr int64_t kB = 2, kH = 3, kL = 40, kD = 16, kOut = 24;

struct Tail {
  std::vector<Tensor> values;  // out, gp, gv, gw on the CPU
  DType context = DType::f32;
  double bytes = 0;            // the recorded calls' bytes, forward and backward
};

// out = merge_heads(p v) W^T, and out's backward of a fixed gy.
Tail attention_tail(Device device, bool to_operand) {
  const MatmulPrecision bf16 = MatmulPrecision::bf16;
  Var p(test::random_tensor({kB, kH, kL, kL}, 11, DType::f32, 0, 1).to(device), true);
  Var v(test::random_tensor({kB, kH, kL, kD}, 12, DType::f32).to(device), true);
  Var w(test::random_tensor({kOut, kH * kD}, 13, DType::f32, -0.5, 0.5).to(device), true);
  const Tensor gy = test::random_tensor({kB, kL, kOut}, 14, DType::f32).to(device);
  Tail t;
  {
    KernelCallRecording recording;
    const Var context = to_operand ? matmul_to_operand(p, v, bf16) : matmul(p, v, false, false, 1.0, bf16);
    t.context = context.dtype();
    const Var out = linear(nn::merge_heads(context, bf16, to_operand), w, Var(), false, bf16);
    out.backward(gy);
    for (const KernelCall& call : recording.calls()) t.bytes += call.bytes;
    t.values = {out.value(), p.grad(), v.grad(), w.grad()};
  }
  for (Tensor& x : t.values) x = x.to(Device::cpu());
  return t;
}

void check_against_f32_context(Device device) {
  const Tail got = attention_tail(device, true), want = attention_tail(device, false);
  CHECK(got.context == DType::bf16);
  CHECK(want.context == DType::f32);
  const char* names[] = {"out", "gp", "gv", "gw"};
  for (size_t i = 0; i < got.values.size(); ++i) {
    INFO(names[i]);
    CHECK(got.values[i].dtype() == DType::f32);
    CHECK(test::bit_identical(got.values[i], want.values[i]));
  }
  const double context_elements = static_cast<double>(kB * kH * kL * kD);
  CHECK(want.bytes - got.bytes == 4 * 2 * context_elements);
}

}  // namespace

TEST_CASE("merge_heads of matmul_to_operand: the f32 context's bits, the layout copies in bf16", "[autograd]") {
  check_against_f32_context(Device::cpu());
}

#ifdef ORDO_HAS_CUDA
TEST_CASE("cuda: merge_heads of matmul_to_operand: the f32 context's bits, the layout copies in bf16", "[cuda]") {
  check_against_f32_context(Device::cuda(0));
}
#endif
