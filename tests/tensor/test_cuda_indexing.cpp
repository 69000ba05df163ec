// The indexing kernels on CUDA against the CPU's, bit for bit: embedding,
// index_select, gather and their backwards, the embeddings' one-pass sum and
// its backward, affine_to, select_rows_backward, pad_slice, the counted cub
// sorts, and an out-of-range index reported at synchronize and never used.
// Runs only where a GPU is (or the emulated one); a build without CUDA
// compiles this file to nothing.
#ifdef ORDO_HAS_CUDA

#include <limits>
#include <string>
#include <vector>

#include "tests/tensor/cuda_vs_cpu.h"

using namespace ordo;
using namespace cuda_vs_cpu;

// ---- indexing --------------------------------------------------------------------------------

TEST_CASE("cuda: embedding, index_select, gather and their backwards match the CPU bit for bit", "[cuda]") {
  // Forwards move values: identical. The backwards add each destination's
  // contributions in index-list order on both devices (the CUDA side sorts
  // stably by destination instead of using atomics): identical too.
  uint64_t seed = 1200;
  for (int64_t d : {1, 3, 4, 768}) {  // 4 and 768 floats: rows of 16-byte words; 1, 3: narrower words
    const std::string what = detail::cat("embedding d=", d);
    Tensor table = rand_f32({50, d}, ++seed);
    // Heavy repeats (token 7 a hundred times) and every other id once or more.
    std::vector<int64_t> ids = random_ints(300, ++seed, 0, 49);
    for (size_t i = 0; i < 100; ++i) ids[i * 3] = 7;
    Tensor idx = i64_tensor(ids, {3, 100});
    check_identical(embedding(gpu(table), gpu(idx)), embedding(table, idx), what);
    Tensor gout = rand_f32({3, 100, d}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(idx), 50), embedding_backward(gout, idx, 50),
                    what + " backward");
    // The padding row is the repeated token: written 0 by the same kernel.
    check_identical(embedding_backward(gpu(gout), gpu(idx), 50, 7), embedding_backward(gout, idx, 50, 7),
                    what + " backward, padding row 7");
    // Onto a gathered gradient (tied word embeddings), a row no id names and a -0 among it.
    Tensor base = rand_f32({50, d}, ++seed);
    base.slice(0, 49, 50).fill_(-0.0);
    std::vector<int64_t> some(ids.begin(), ids.end());
    for (int64_t& id : some) id = id == 49 ? 48 : id;
    Tensor some_idx = i64_tensor(some, {3, 100});
    check_identical(embedding_backward(gpu(gout), gpu(some_idx), 50, 7, gpu(base)),
                    embedding_backward(gout, some_idx, 50, 7, base.clone()), what + " backward onto a gradient");
  }
  {  // Onto, with no ids: the gradient as it was.
    const Tensor none = i64_tensor({}, {0}), gout = rand_f32({0, 4}, ++seed), base = rand_f32({6, 4}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(none), 6, -1, gpu(base)), base, "onto, no ids");
  }
  {  // No ids at all: the table's every row 0, with no sort.
    const Tensor none = i64_tensor({}, {0}), gout = rand_f32({0, 4}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(none), 6), embedding_backward(gout, none, 6),
                    "embedding backward, no ids");
  }
  // Runs of hundreds to a thousand entries, cut into pieces (tensor/backend.h,
  // kIndexAddPiece), as T5's buckets and the token types gather: two thirds
  // of the list one row, the rest spread over 12 rows.
  for (int64_t d : {12, 40}) {
    std::vector<int64_t> ids = random_ints(1800, ++seed, 0, 11);
    for (size_t i = 0; i < ids.size(); ++i)
      if (i % 3 != 0) ids[i] = 5;
    Tensor idx = i64_tensor(ids, {1800}), gout = rand_f32({1800, d}, ++seed);
    check_identical(embedding_backward(gpu(gout), gpu(idx), 12), embedding_backward(gout, idx, 12),
                    detail::cat("embedding backward, long runs, d=", d));
  }
  {  // The same along a middle axis: each of 3 outer slices cuts its runs at the same sorted positions.
    std::vector<int64_t> ids = random_ints(700, ++seed, 0, 16);
    for (size_t i = 0; i < ids.size(); i += 2) ids[i] = 9;
    Tensor idx = i64_tensor(ids, {700}), g = rand_f32({3, 700, 5}, ++seed);
    check_identical(index_select_backward(gpu(g), 1, gpu(idx), {3, 17, 5}), index_select_backward(g, 1, idx, {3, 17, 5}),
                    "index_select backward, long runs, 3 outer slices");
  }
  // index_select along a middle axis, other dtypes (moved as raw words).
  Tensor x = rand_f32({3, 17, 5}, ++seed);
  Tensor sel = i64_tensor({16, 0, 3, 3, 9, 16, 16}, {7});
  check_identical(index_select(gpu(x), 1, gpu(sel)), index_select(x, 1, sel), "index_select axis 1");
  Tensor xi = i64_tensor(random_ints(3 * 17 * 5, ++seed, -1000000, 1000000), {3, 17, 5});
  Tensor xb = i64_tensor(random_ints(3 * 17 * 5, ++seed, 0, 255), {3, 17, 5}).to(DType::u8);
  check_identical(index_select(gpu(xb), 1, gpu(sel)), index_select(xb, 1, sel), "index_select u8");
  check_identical(index_select(gpu(xi), 2, gpu(i64_tensor({4, 1}, {2}))),
                  index_select(xi, 2, i64_tensor({4, 1}, {2})), "index_select i64, last axis");
  Tensor gsel = rand_f32({3, 7, 5}, ++seed);
  check_identical(index_select_backward(gpu(gsel), 1, gpu(sel), {3, 17, 5}),
                  index_select_backward(gsel, 1, sel, {3, 17, 5}), "index_select backward");
  // gather along each axis, with repeats.
  for (int axis = 0; axis < 3; ++axis) {
    Shape idx_shape = {3, 17, 5};
    idx_shape[axis] = 11;
    Tensor gidx = i64_tensor(random_ints(shape_numel(idx_shape), ++seed, 0, x.size(axis) - 1), idx_shape);
    const std::string what = detail::cat("gather axis ", axis);
    check_identical(gather(gpu(x), axis, gpu(gidx)), gather(x, axis, gidx), what);
    check_identical(gather(gpu(xi), axis, gpu(gidx)), gather(xi, axis, gidx), what + " i64");
    Tensor g = rand_f32(idx_shape, ++seed);
    check_identical(gather_backward(gpu(g), axis, gpu(gidx), {3, 17, 5}), gather_backward(g, axis, gidx, {3, 17, 5}),
                    what + " backward");
  }
}

// The input embeddings' one-pass sum: the same bits as the CPU's (f32 adds in
// the tables' order), in one launch, ids shared by the batch or not; an
// out-of-range id flagged as index_select's are.
TEST_CASE("cuda: embedding_sum matches the CPU bit for bit in one launch", "[cuda]") {
  uint64_t seed = 1250;
  for (int64_t d : {1, 7, 768}) {
    const std::string what = detail::cat("embedding_sum d=", d);
    const Tensor words = rand_f32({50, d}, ++seed), types = rand_f32({2, d}, ++seed);
    const Tensor positions = rand_f32({9, d}, ++seed);
    const Tensor ids = i64_tensor(random_ints(3 * 9, ++seed, 0, 49), {3, 9});
    const Tensor type_ids = i64_tensor(random_ints(3 * 9, ++seed, 0, 1), {3, 9});
    const Tensor shared = i64_tensor({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 9});
    const Tensor own = i64_tensor(random_ints(3 * 9, ++seed, 0, 8), {3, 9});
    for (const Tensor* position_ids : {&shared, &own}) {
      synchronize(kGpu);
      reset_device_counters();
      const Tensor on_gpu =
          embedding_sum({gpu(words), gpu(types), gpu(positions)}, {gpu(ids), gpu(type_ids), gpu(*position_ids)});
      CHECK(device_counters().kernel_launches == 1);
      check_identical(on_gpu, embedding_sum({words, types, positions}, {ids, type_ids, *position_ids}),
                      what + (position_ids == &shared ? ", positions shared" : ", positions per row"));
    }
    check_identical(embedding_sum({gpu(words)}, {gpu(ids)}), embedding(words, ids), what + ", one table: its lookup");
  }
  const Tensor table = rand_f32({10, 6}, ++seed);
  const Tensor out =
      embedding_sum({gpu(table), gpu(table)}, {gpu(i64_tensor({3, 1}, {1, 2})), gpu(i64_tensor({2, 10}, {1, 2}))});
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("embedding_sum"));
  const std::vector<float> rows = out.to_vector<float>(), t = table.to_vector<float>();
  for (int64_t j = 0; j < 6; ++j) {
    CHECK(rows[j] == t[3 * 6 + j] + t[2 * 6 + j]);
    CHECK(rows[6 + j] == 0.0f);  // the row with the bad id: never read, written 0
  }
}

// An attention mask's bias in one launch (a cast and a map before): the
// CPU's bits for a mask and for other integers (exact products: p = 0.5).
TEST_CASE("cuda: affine_to matches the CPU bit for bit in one launch", "[cuda]") {
  const double lowest = std::numeric_limits<float>::lowest();
  const Tensor mask = i64_tensor({1, 1, 0, 1, 0, 0, 1}, {7});
  const Tensor ints = i64_tensor(random_ints(1000, 1310, -100000, 100000), {10, 100});
  synchronize(kGpu);
  reset_device_counters();
  const Tensor bias = affine_to(gpu(mask), -lowest, lowest, DType::f32);
  CHECK(device_counters().kernel_launches == 1);
  check_identical(bias, affine_to(mask, -lowest, lowest, DType::f32), "a mask's bias");
  check_identical(affine_to(gpu(ints), 0.5, -3, DType::f32), affine_to(ints, 0.5, -3, DType::f32), "integers");
}

// The input embeddings' backward, the three tables in one sort and two
// kernels: the CPU's bits (index_add's pieces, counted per table) with a word
// id repeated past a piece (256), the padding row skipped and the decoder's
// term added onto; the position ids shared by the batch or not. An
// out-of-range type id is flagged and drops only its own entry.
TEST_CASE("cuda: embedding_sum_backward matches the CPU bit for bit, every table in one sort", "[cuda]") {
  uint64_t seed = 1270;
  const int64_t B = 6, L = 60;
  for (int64_t d : {1, 7, 40}) {
    const std::string what = detail::cat("embedding_sum_backward d=", d);
    const Tensor gout = rand_f32({B, L, d}, ++seed), onto = rand_f32({50, d}, ++seed);
    std::vector<int64_t> words = random_ints(B * L, ++seed, 0, 49);
    for (int64_t e = 0; e < B * L; ++e)
      if (e % 4 != 3) words[e] = 3;  // 270 entries of row 3: two pieces
    const Tensor ids = i64_tensor(words, {B, L}), type_ids = i64_tensor(random_ints(B * L, ++seed, 0, 1), {B, L});
    std::vector<int64_t> order(L);
    for (int64_t l = 0; l < L; ++l) order[l] = l;
    const Tensor shared = i64_tensor(order, {1, L}), own = i64_tensor(random_ints(B * L, ++seed, 0, L + 3), {B, L});
    for (const Tensor* position_ids : {&shared, &own}) {
      const std::string where = what + (position_ids == &shared ? ", positions shared" : ", positions per row");
      const std::vector<int64_t> rows = {50, 2, L + 4}, padding = {0, -1, -1};
      synchronize(kGpu);
      reset_device_counters();
      const std::vector<Tensor> on_gpu =
          embedding_sum_backward(gpu(gout), {gpu(ids), gpu(type_ids), gpu(*position_ids)}, rows, padding,
                                 {gpu(onto), Tensor(), Tensor()}, {true, true, true});
      CHECK(device_counters().kernel_launches == 3);
      CHECK(device_counters().sorts == 1);
      const std::vector<Tensor> on_cpu = embedding_sum_backward(gout, {ids, type_ids, *position_ids}, rows, padding,
                                                                {onto.clone(), Tensor(), Tensor()}, {true, true, true});
      for (size_t t = 0; t < 3; ++t) check_identical(on_gpu[t], on_cpu[t], detail::cat(where, ", table ", t));
    }
  }
  const Tensor gout = rand_f32({2, 3, 4}, ++seed), ids = i64_tensor({0, 1, 2, 2, 1, 0}, {2, 3});
  const Tensor positions = i64_tensor({0, 1, 2}, {1, 3});
  const std::vector<Tensor> got = embedding_sum_backward(
      gpu(gout), {gpu(ids), gpu(i64_tensor({0, 1, 7, 1, 1, 0}, {2, 3})), gpu(positions)}, {3, 2, 3}, {-1, -1, -1},
      std::vector<Tensor>(3), {true, true, true});
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("embedding_sum"));
  const std::vector<Tensor> valid = embedding_sum_backward(gout, {ids, i64_tensor({0, 1, 0, 1, 1, 0}, {2, 3}), positions},
                                                           {3, 2, 3}, {-1, -1, -1}, std::vector<Tensor>(3),
                                                           {true, true, true});
  check_identical(got[0], valid[0], "the word table, beside a bad type id");
  check_identical(got[2], valid[2], "the position table, beside a bad type id");
  const std::vector<float> types = got[1].to_vector<float>(), g = gout.to_vector<float>();
  for (int64_t j = 0; j < 4; ++j) {  // type 0: entries (0, 0), (1, 2); the bad entry (0, 2) dropped
    CHECK(types[j] == g[j] + g[20 + j]);
  }
}

// select_rows' backward (the MLM head's gather of its predicted rows): the
// CPU's bits in one launch and no sort; a list out of order is flagged and
// the rows the search cannot find are written 0, never read out of bounds.
TEST_CASE("cuda: select_rows_backward matches the CPU bit for bit in one launch, and flags rows out of order", "[cuda]") {
  uint64_t seed = 1290;
  for (int64_t d : {1, 33}) {
    const Tensor g = rand_f32({5, d}, ++seed), rows = i64_tensor({0, 3, 4, 8, 9}, {5});
    synchronize(kGpu);
    reset_device_counters();
    const Tensor on_gpu = select_rows_backward(gpu(g), gpu(rows), 10);
    CHECK(device_counters().kernel_launches == 1);
    CHECK(device_counters().sorts == 0);
    check_identical(on_gpu, select_rows_backward(g, rows, 10), detail::cat("select_rows_backward d=", d));
  }
  const Tensor g = rand_f32({3, 2}, ++seed);
  const Tensor out = select_rows_backward(gpu(g), gpu(i64_tensor({2, 1, 3}, {3})), 4);
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("not ascending and distinct"));
  const std::vector<float> got = out.to_vector<float>(), want = g.to_vector<float>();
  CHECK(got[3 * 2] == want[2 * 2]);  // row 3, found: the last entry
  CHECK(got[0] == 0.0f);              // row 0, named by none
}

// cub's radix sorts are launches ordo does not make itself: counted apart, a
// sort each (the device's counts of a step add them as one launch each).
TEST_CASE("cuda: the index gradients' cub sorts are counted, one a sort", "[cuda]") {
  const Tensor gout = gpu(rand_f32({6, 4}, 1280)), ids = gpu(i64_tensor({3, 1, 3, 0, 5, 3}, {6}));
  synchronize(kGpu);
  reset_device_counters();
  (void)embedding_backward(gout, ids, 8);
  CHECK(device_counters().sorts == 1);
  reset_device_counters();
  (void)embedding_backward(gpu(rand_f32({0, 4}, 1281)), gpu(i64_tensor({}, {0})), 8);  // no ids: no sort
  CHECK(device_counters().sorts == 0);
}

TEST_CASE("cuda: an out-of-range index is reported at synchronize and never used", "[cuda]") {
  Tensor table = rand_f32({10, 6}, 1300);
  Tensor table_gpu = gpu(table);
  synchronize(kGpu);
  // Lookup with ids 10 and -1: the kernel skips those rows (zeros) and flags.
  Tensor out = embedding(table_gpu, gpu(i64_tensor({3, 10, 1, -1}, {4})));
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index out of range") && Catch::Contains("index_select"));
  CHECK_NOTHROW(synchronize(kGpu));  // reported once, then cleared
  std::vector<float> rows = out.to_vector<float>(), t = table.to_vector<float>();
  for (int64_t j = 0; j < 6; ++j) {
    CHECK(rows[0 * 6 + j] == t[3 * 6 + j]);
    CHECK(rows[1 * 6 + j] == 0.0f);
    CHECK(rows[2 * 6 + j] == t[1 * 6 + j]);
    CHECK(rows[3 * 6 + j] == 0.0f);
  }
  // The device-to-host copy reports it as well.
  Tensor x = gpu(rand_f32({4, 5}, 1301));
  Tensor picked = gather(x, 1, gpu(i64_tensor({0, 5, 1, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {4, 5})));
  CHECK_THROWS_WITH(picked.to(kCpu), Catch::Contains("gather"));
  // Backwards: the valid contributions land, the invalid one is dropped, nothing else is touched.
  Tensor g = rand_f32({4, 6}, 1302);
  Tensor grad = embedding_backward(gpu(g), gpu(i64_tensor({2, 12, 2, 0}, {4})), 10);
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("index_add"));
  Tensor expected = embedding_backward(g.slice(0, 0, 1), i64_tensor({2}, {1}), 10);
  add_(expected, embedding_backward(g.slice(0, 2, 4), i64_tensor({2, 0}, {2}), 10));
  check_identical(grad, expected, "index_add without the out-of-range row");
  gather_backward(gpu(rand_f32({2, 3}, 1303)), 1, gpu(i64_tensor({0, 1, 7, 2, 2, -3}, {2, 3})), {2, 4});
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("scatter_add"));
  cross_entropy(gpu(rand_f32({3, 5}, 1304)), gpu(i64_tensor({1, 5, -100}, {3})));
  CHECK_THROWS_WITH(synchronize(kGpu), Catch::Contains("cross_entropy"));
  CHECK_NOTHROW(synchronize(kGpu));
}

// autograd's slice backward: one launch, the CPU's bits, for every element size the step slices.
TEST_CASE("cuda: pad_slice writes a slice's gradient and the zeros around it in one launch, the CPU's bits",
          "[cuda]") {
  const Shape whole{3, 37, 5};
  for (const DType dtype : {DType::f32, DType::bf16, DType::f64, DType::i64}) {
    INFO(dtype_name(dtype));
    for (const int64_t step : {int64_t{1}, int64_t{3}}) {
      const Tensor g = (dtype == DType::i64 ? Tensor::arange(3 * 11 * 5).reshape({3, 11, 5})
                                            : rand_f32({3, 11, 5}, 21))
                           .to(dtype);
      const Tensor want = pad_slice(g, whole, 1, 4, step);
      synchronize(kGpu);
      reset_device_counters();
      const Tensor got = pad_slice(gpu(g), whole, 1, 4, step);
      CHECK(device_counters().kernel_launches == 1);
      check_identical(got, want, "pad_slice");
    }
  }
}

#endif  // ORDO_HAS_CUDA
