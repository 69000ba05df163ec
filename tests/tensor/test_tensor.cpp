// The Tensor handle: creation, views without copies, copies, dtype casts, printing.
#include "tensor/device_runtime.h"
#include "tests/helpers.h"

using namespace ordo;
using ordo::test::f64;
using ordo::test::i64;

TEST_CASE("from_vector and to_vector round-trip in row-major order", "[tensor]") {
  Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.strides() == Shape{3, 1});
  CHECK(t.dtype() == DType::f32);
  CHECK(t.device().is_cpu());
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(Tensor::scalar(2.5).item() == 2.5);
  CHECK(Tensor::arange(4).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(Tensor::full({2}, 7, DType::i64).to_vector<int64_t>() == std::vector<int64_t>{7, 7});
}

TEST_CASE("transpose and permute are views with swapped strides", "[tensor]") {
  Tensor t = f64({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor tt = t.transpose(0, 1);
  CHECK(tt.shape() == Shape{3, 2});
  CHECK(tt.strides() == Shape{1, 3});
  CHECK(tt.shares_storage_with(t));
  CHECK_FALSE(tt.is_contiguous());
  // [[0,1,2],[3,4,5]]^T = [[0,3],[1,4],[2,5]]
  CHECK(tt.to_doubles() == std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor c = tt.contiguous();
  CHECK(c.is_contiguous());
  CHECK_FALSE(c.shares_storage_with(t));

  Tensor cube = f64(ordo::test::random_values(24, 1), {2, 3, 4});
  Tensor p = cube.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  std::vector<double> v = cube.to_doubles(), pv = p.to_doubles();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c2 = 0; c2 < 3; ++c2) CHECK(pv[a * 6 + b * 3 + c2] == v[b * 12 + c2 * 4 + a]);
}

TEST_CASE("slice and select view a sub-range", "[tensor]") {
  Tensor t = f64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor s = t.slice(1, 1, 4, 2);  // columns 1 and 3
  CHECK(s.shape() == Shape{3, 2});
  CHECK(s.offset() == 1);
  CHECK(s.to_doubles() == std::vector<double>{1, 3, 5, 7, 9, 11});
  CHECK(t.slice(0, -2, 3).to_doubles() == std::vector<double>{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(t.select(0, 1).to_doubles() == std::vector<double>{4, 5, 6, 7});
  CHECK(t.select(1, -1).to_doubles() == std::vector<double>{3, 7, 11});
  CHECK(t.slice(0, 1, 1).numel() == 0);
}

TEST_CASE("joined_rows views parts that lie one after another as one tensor, and nothing else", "[tensor]") {
  Tensor t = f64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {6, 2});
  const Tensor a = t.slice(0, 0, 1), b = t.slice(0, 1, 4), c = t.slice(0, 4, 6);
  const Tensor joined = Tensor::joined_rows({a, b, c});
  REQUIRE(joined.defined());
  CHECK(joined.shape() == Shape{6, 2});
  CHECK(joined.shares_storage_with(t));
  CHECK(joined.to_doubles() == t.to_doubles());
  const Tensor tail = Tensor::joined_rows({b, c});  // starts at its first part's offset
  CHECK(tail.offset() == 2);
  CHECK(tail.to_doubles() == std::vector<double>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(Tensor::joined_rows({b}).to_doubles() == b.to_doubles());
  // Each way of not lying together gives an undefined tensor.
  CHECK(!Tensor::joined_rows({a, c}).defined());                    // a gap
  CHECK(!Tensor::joined_rows({b, a}).defined());                    // out of order
  CHECK(!Tensor::joined_rows({a, b.clone()}).defined());            // another storage
  CHECK(!Tensor::joined_rows({t.slice(1, 0, 1), t.slice(1, 1, 2)}).defined());  // strided columns
  CHECK(!Tensor::joined_rows({a, t.slice(0, 1, 3).reshape({4})}).defined());    // another rank
  CHECK(!Tensor::joined_rows({Tensor::scalar(1.0)}).defined());     // no rows
  CHECK(!Tensor::joined_rows({}).defined());
  const Tensor flat = f64({1, 2, 3, 4, 5}, {5});  // 1-D parts (biases)
  CHECK(Tensor::joined_rows({flat.slice(0, 0, 2), flat.slice(0, 2, 5)}).to_doubles() == flat.to_doubles());
}

TEST_CASE("expand broadcasts with stride 0", "[tensor]") {
  Tensor row = f64({1, 2, 3}, {3});
  Tensor e = row.expand({2, 3});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(e.to_doubles() == std::vector<double>{1, 2, 3, 1, 2, 3});
  Tensor col = f64({1, 2}, {2, 1});
  CHECK(col.expand({2, 3}).to_doubles() == std::vector<double>{1, 1, 1, 2, 2, 2});
  CHECK(col.unsqueeze(0).shape() == Shape{1, 2, 1});
  CHECK(col.squeeze(1).shape() == Shape{2});
}

TEST_CASE("reshape views when strides allow and copies otherwise", "[tensor]") {
  Tensor t = f64(ordo::test::random_values(24, 2), {2, 3, 4});
  Tensor r = t.reshape({6, -1});
  CHECK(r.shape() == Shape{6, 4});
  CHECK(r.shares_storage_with(t));
  CHECK(t.reshape({4, 6}).to_doubles() == t.to_doubles());
  // A transposed tensor cannot be flattened without a copy.
  Tensor tt = t.transpose(1, 2);  // [2, 4, 3]
  CHECK_THROWS_AS(tt.view({24}), Error);
  Tensor flat = tt.reshape({24});
  CHECK_FALSE(flat.shares_storage_with(t));
  CHECK(flat.to_doubles() == tt.contiguous().to_doubles());
  // Merging the leading axes of a sliced view is still a view (strides [12, 4]
  // of sizes [2, 3] are one run of stride 4), but merging the last two is not.
  Tensor narrow = t.slice(2, 0, 2);  // [2, 3, 2], strides [12, 4, 1]
  Tensor merged = narrow.view({6, 2});
  CHECK(merged.shares_storage_with(t));
  CHECK(merged.strides() == Shape{4, 1});
  CHECK(merged.to_doubles() == narrow.contiguous().to_doubles());
  CHECK_THROWS_AS(narrow.view({2, 6}), Error);
  // Splitting an axis of a sliced view is a view.
  Tensor sliced = t.slice(2, 0, 4).reshape({2, 3, 2, 2});
  CHECK(sliced.shares_storage_with(t));
  CHECK(sliced.to_doubles() == t.to_doubles());
}

TEST_CASE("copy_from writes through a non-contiguous view", "[tensor]") {
  Tensor t = Tensor::zeros({3, 3}, DType::f64);
  t.transpose(0, 1).select(0, 2).copy_from(f64({7, 8, 9}, {3}));  // column 2
  CHECK(t.to_doubles() == std::vector<double>{0, 0, 7, 0, 0, 8, 0, 0, 9});
  t.slice(0, 0, 1).fill_(1);
  CHECK(t.to_doubles() == std::vector<double>{1, 1, 1, 0, 0, 8, 0, 0, 9});
  t.transpose(0, 1).slice(0, 1, 2).fill_(5);  // column 1 through a strided view
  CHECK(t.to_doubles() == std::vector<double>{1, 5, 1, 0, 5, 8, 0, 5, 9});
}

TEST_CASE("dtype casts, including bf16 and f16 rounding", "[tensor]") {
  Tensor t = f64({1.5, -2.25, 3.0, 1e-3}, {4});
  CHECK(t.to(DType::f32).to_vector<float>() == std::vector<float>{1.5f, -2.25f, 3.0f, 1e-3f});
  CHECK(f64({1.7, -2.2}, {2}).to(DType::i64).to_vector<int64_t>() == std::vector<int64_t>{1, -2});
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie and rounds to even (1.0);
  // 1 + 3*2^-8 rounds up to 1 + 2^-6.
  Tensor b = f64({1.0 + 1.0 / 256, 1.0 + 3.0 / 256, 65504, -0.0}, {4}).to(DType::bf16);
  CHECK(b.to_doubles() == std::vector<double>{1.0, 1.0 + 1.0 / 64, 65536, 0.0});
  // f16: 10 mantissa bits; 65504 is the largest finite value, 65520 rounds to inf;
  // 2^-24 is the smallest subnormal, 2^-25 ties to 0.
  Tensor h = f64({1.0 + 1.0 / 2048, 65504, 65520, std::ldexp(1.0, -24), std::ldexp(1.0, -25), -3.0},
                 {6}).to(DType::f16);
  std::vector<double> hv = h.to_doubles();
  CHECK(hv[0] == 1.0);
  CHECK(hv[1] == 65504);
  CHECK(std::isinf(hv[2]));
  CHECK(hv[3] == std::ldexp(1.0, -24));
  CHECK(hv[4] == 0.0);
  CHECK(hv[5] == -3.0);
}

TEST_CASE("printout shows shape, dtype, device and values", "[tensor]") {
  std::string s = f64({1, 2, 3, 4}, {2, 2}).str();
  CHECK(s.find("shape=[2, 2]") != std::string::npos);
  CHECK(s.find("dtype=f64") != std::string::npos);
  CHECK(s.find("device=cpu") != std::string::npos);
  CHECK(s.find("[[1, 2],") != std::string::npos);
  std::string big = Tensor::arange(100).str();
  CHECK(big.find("...") != std::string::npos);
  CHECK(big.find("99") != std::string::npos);
  CHECK(Tensor().str() == "Tensor(undefined)");
}

TEST_CASE("mistakes in views give ordo::Error with the values involved", "[tensor][errors]") {
  Tensor t = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THROWS_WITH(t.reshape({4, 2}), Catch::Contains("[2, 3]") && Catch::Contains("[4, 2]"));
  CHECK_THROWS_WITH(t.reshape({-1, -1}), Catch::Contains("more than one -1"));
  CHECK_THROWS_WITH(t.transpose(0, 2), Catch::Contains("axis 2 is out of range"));
  CHECK_THROWS_WITH(t.slice(1, 2, 5), Catch::Contains("[2, 5)") && Catch::Contains("size 3"));
  CHECK_THROWS_WITH(t.select(0, 2), Catch::Contains("index 2"));
  CHECK_THROWS_WITH(t.expand({2, 4}), Catch::Contains("cannot expand [2, 3] to [2, 4]"));
  CHECK_THROWS_WITH(t.permute({0, 0}), Catch::Contains("appears twice"));
  CHECK_THROWS_WITH(t.to_vector<float>(), Catch::Contains("dtype f64") && Catch::Contains("f32"));
  CHECK_THROWS_WITH(Tensor::from_vector(std::vector<double>{1, 2}, {3}), Catch::Contains("2 values"));
  CHECK_THROWS_WITH(t.item(), Catch::Contains("one-element"));
  CHECK_THROWS_WITH(Tensor::empty({2, -1}), Catch::Contains("negative"));
  CHECK_THROWS_WITH(Device::parse("gpu"), Catch::Contains("unknown device 'gpu'"));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
}

TEST_CASE("to(cuda) round-trips where a GPU exists and is a clear error elsewhere", "[tensor][errors]") {
  Tensor t = f64({1, 2}, {2});
  if (ordo::cuda_available()) {
    CHECK(t.to(Device::cuda()).to(Device::cpu()).to_doubles() == t.to_doubles());
  } else {
    CHECK_THROWS_AS(t.to(Device::cuda()), Error);
  }
}

// The rule of tensor.cpp's HostCache, worked by hand: a block of 1 MiB or more
// is rounded up to 64 KiB, kept when freed, and reused by a request of that rounded size only.
TEST_CASE("a freed large host block is kept and reused by a request of its rounded size", "[tensor][memory]") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  constexpr int64_t kMiB = (1 << 20) / 4, k64KiB = (1 << 16) / 4;  // in floats
  const float* block;
  {
    Tensor a = Tensor::zeros({kMiB + 7});  // 1 MiB + 28 bytes: rounded to 1 MiB + 64 KiB
    block = a.data<float>();
    CHECK(allocator_stats(cpu).bytes_cached == 0);
  }
  CHECK(allocator_stats(cpu).bytes_cached == (1u << 20) + (1u << 16));
  {
    Tensor smaller = Tensor::zeros({kMiB});  // exactly 1 MiB: another rounded size
    CHECK(smaller.data<float>() != block);
    Tensor same = Tensor::zeros({kMiB + k64KiB});  // exactly 1 MiB + 64 KiB
    CHECK(same.data<float>() == block);
    CHECK(allocator_stats(cpu).bytes_cached == 0);
    Tensor small = Tensor::zeros({kMiB - 16});  // 1 MiB - 64 bytes: malloc's, never cached
  }
  CHECK(allocator_stats(cpu).bytes_cached == (2u << 20) + (1u << 16));
  empty_cache(cpu);
  CHECK(allocator_stats(cpu).bytes_cached == 0);
}
