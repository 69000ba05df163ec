// Determinism on the CPU: results do not depend on the thread count, and
// repeated runs are bit-identical.
#include <omp.h>

#include "autograd/ops.h"
#include "tests/helpers.h"

using namespace ordo;

namespace {
// A forward and backward through the ops whose kernels reduce or accumulate.
std::vector<Tensor> step(uint64_t seed) {
  Tensor xv = ordo::test::random_tensor({64, 300}, seed, DType::f32);
  Var x(xv, true), g(Tensor::ones({300}, DType::f32), true), b(Tensor::zeros({300}, DType::f32), true);
  Var table(ordo::test::random_tensor({50, 300}, seed + 1, DType::f32), true);
  Tensor ids = Tensor::from_vector(std::vector<int64_t>(64, 7), {64});  // every row hits one entry
  Var h = add(layernorm(x, g, b, 1e-12), embedding(table, ids));
  Var loss = add(sum(mul(h, h)), mean(var(dropout(h, 0.1, seed, 1), {0})));
  loss.backward();
  return {loss.value(), x.grad(), g.grad(), b.grad(), table.grad(),
          sum(ordo::test::random_tensor({100000}, seed, DType::f32))};
}
}  // namespace

TEST_CASE("CPU results are bit-identical across runs and thread counts", "[determinism]") {
  const int threads = omp_get_max_threads();
  std::vector<Tensor> first = step(3), second = step(3);
  omp_set_num_threads(1);
  std::vector<Tensor> single = step(3);
  omp_set_num_threads(std::max(threads, 2) + 1);  // more threads than cores changes the splits
  std::vector<Tensor> many = step(3);
  omp_set_num_threads(threads);
  for (size_t i = 0; i < first.size(); ++i) {
    INFO("result " << i);
    CHECK(ordo::test::bit_identical(first[i], second[i]));
    CHECK(ordo::test::bit_identical(first[i], single[i]));
    CHECK(ordo::test::bit_identical(first[i], many[i]));
  }
}
