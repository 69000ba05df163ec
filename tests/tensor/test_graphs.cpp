// CUDA graphs: the emulator's stream capture and graph launch against the
// CUDA programming guide's rules (what a capturing stream records, what it
// refuses, what a launch runs), and ordo's CudaGraph on top of them — a
// captured sequence of ops replayed with one launch, its inputs changed
// between replays, its memory kept from everything else, and the refusals
// as ordo errors that leave the device usable.
#include <cmath>

#ifdef ORDO_CUDA_EMULATED
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "tensor/cuda/cuda_common.cuh"
#endif

#include "tensor/device_runtime.h"
#include "tensor/ops.h"
#include "tests/helpers.h"

using Catch::Matchers::Contains;
using namespace ordo;

#ifdef ORDO_CUDA_EMULATED

namespace {

namespace emu = ordo::cuda::emulator;

__global__ void add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

// A fresh stream, begun capturing.
cudaStream_t capturing_stream() {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  return stream;
}

std::vector<float> read(const float* device, size_t n) {
  std::vector<float> host(n);
  REQUIRE(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

}  // namespace

TEST_CASE("emulator: a capturing stream records kernels, products, copies and sets, a graph launch runs them",
          "[emulator]") {
  float *x = nullptr, *y = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), 4 * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&y), 4 * sizeof(float)) == cudaSuccess);
  const std::vector<float> start = {1, 2, 3, 4};
  REQUIRE(cudaMemcpy(x, start.data(), sizeof(float) * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  cublasHandle_t handle;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  cudaStream_t stream = capturing_stream();
  cublasSetStream(handle, stream);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(stream, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  // x += 1; y = x; y *= 2 (a 4 x 1 product with alpha 2); x = 0.
  ORDO_LAUNCH(add_one, 1, 32, 0, stream, x, 4);
  REQUIRE(cudaMemcpyAsync(y, x, 4 * sizeof(float), cudaMemcpyDeviceToDevice, stream) == cudaSuccess);
  const float two = 2.0f, zero = 0.0f, one = 1.0f;
  float* one_device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&one_device), sizeof(float)) == cudaErrorStreamCaptureUnsupported);
  // (that refusal invalidated the capture: begin again on a new stream)
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(stream, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK(graph == nullptr);
  CHECK(read(x, 4) == start);  // nothing ran
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&one_device), sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(one_device, &one, sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);

  stream = capturing_stream();
  cublasSetStream(handle, stream);
  ORDO_LAUNCH(add_one, 1, 32, 0, stream, x, 4);
  REQUIRE(cudaMemcpyAsync(y, x, 4 * sizeof(float), cudaMemcpyDeviceToDevice, stream) == cudaSuccess);
  REQUIRE(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 1, 1, &two, y, CUDA_R_32F, 4, 0,
                                     one_device, CUDA_R_32F, 1, 0, &zero, y, CUDA_R_32F, 4, 0, 1, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaMemsetAsync(x, 0, 4 * sizeof(float), stream) == cudaSuccess);
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  CHECK(read(x, 4) == start);  // capturing ran nothing
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  CHECK(read(y, 4) == std::vector<float>{4, 6, 8, 10});  // 2 (start + 1), in the order captured
  CHECK(read(x, 4) == std::vector<float>(4, 0.0f));
  REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);  // again, from x = 0
  CHECK(read(y, 4) == std::vector<float>(4, 2.0f));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cublasDestroy(handle);
  cudaFree(x);
  cudaFree(y);
  cudaFree(one_device);
}

TEST_CASE("emulator: stream capture refuses synchronisation, allocation and host copies, as the driver does",
          "[emulator]") {
  float* x = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), sizeof(float)) == cudaSuccess);
  float host = 1.0f;
  const std::pair<const char*, std::function<cudaError_t(cudaStream_t)>> refused[] = {
      {"cudaStreamSynchronize", [](cudaStream_t s) { return cudaStreamSynchronize(s); }},
      {"cudaDeviceSynchronize", [](cudaStream_t) { return cudaDeviceSynchronize(); }},
      {"cudaMalloc", [](cudaStream_t) { void* p; return cudaMalloc(&p, 16); }},
      {"cudaFree", [x](cudaStream_t) { return cudaFree(x); }},
      {"cudaMemcpyAsync from pageable host memory",
       [x, &host](cudaStream_t s) { return cudaMemcpyAsync(x, &host, 4, cudaMemcpyHostToDevice, s); }},
      {"cudaMemcpyAsync to pageable host memory",
       [x, &host](cudaStream_t s) { return cudaMemcpyAsync(&host, x, 4, cudaMemcpyDeviceToHost, s); }},
      {"cudaMemcpy", [x](cudaStream_t) { return cudaMemcpy(x, x, 4, cudaMemcpyDeviceToDevice); }},
  };
  for (const auto& [call, refuse] : refused) {
    INFO(call);
    cudaStream_t stream = capturing_stream();
    CHECK(refuse(stream) == cudaErrorStreamCaptureUnsupported);
    CHECK_THAT(emu::take_error_detail(), Contains(call) && Contains("not permitted while a stream is being captured"));
    cudaStreamCaptureStatus status;
    cudaStreamIsCapturing(stream, &status);
    CHECK(status == cudaStreamCaptureStatusInvalidated);
    cudaGraph_t graph = nullptr;
    CHECK(cudaStreamEndCapture(stream, &graph) == cudaErrorStreamCaptureInvalidated);
    cudaGetLastError();
  }
  // Outside a capture the same calls are fine again.
  CHECK(cudaMemcpy(x, &host, 4, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaFree(x) == cudaSuccess);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(stream, &graph) == cudaErrorIllegalState);  // never begun
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) == cudaErrorInvalidValue);
  cudaGetLastError();
}

#endif  // ORDO_CUDA_EMULATED

#ifdef ORDO_HAS_CUDA

namespace {

const Device kGpu = Device::cuda(0);

Tensor rand_gpu(const Shape& shape, uint64_t seed) {
  return test::random_tensor(shape, seed, DType::f32).to(kGpu);
}

}  // namespace

TEST_CASE("cuda: a captured chain of ops replays with one launch and follows its inputs", "[cuda][graphs]") {
  const Tensor a = rand_gpu({6, 9}, 1), b = rand_gpu({9, 5}, 2), c = rand_gpu({6, 5}, 3);
  auto chain = [&] { return softmax(add(matmul(a, b), c)); };
  const Tensor eager = chain();
  chain();  // the allocator's cache now holds every block the chain needs
  synchronize(kGpu);
  Tensor out;
  reset_device_counters();
  const CudaGraph graph = CudaGraph::capture(kGpu, [&] { out = chain(); });
  CHECK(device_counters().kernel_launches == 0);  // capturing runs nothing
  reset_device_counters();
  graph.replay();
  const DeviceCounters replay = device_counters();
  CHECK(replay.graph_launches == 1);
  CHECK(replay.kernel_launches == 0);
  CHECK(replay.device_mallocs == 0);
  CHECK(test::bit_identical(out, eager));
  // New inputs copied into the captured tensors: the next replay computes with them.
  c.copy_from(test::random_tensor({6, 5}, 4, DType::f32));
  graph.replay();
  CHECK(test::bit_identical(out, chain()));
}

TEST_CASE("cuda: memory a graph captured with is not given to anything else while it lives", "[cuda][graphs]") {
  const Tensor a = rand_gpu({40, 40}, 5);
  Tensor kept;
  const void* freed_inside = nullptr;
  {
    Tensor warm = mul(a, a), warm_too = add(warm, a);  // two blocks of that size cached before the capture
  }
  const CudaGraph graph = CudaGraph::capture(kGpu, [&] {
    Tensor temporary = mul(a, a);
    freed_inside = temporary.raw_data();
    kept = add(temporary, a);
  });
  // A tensor made now gets neither the captured temporary's block (the
  // graph's replay writes it) nor the kept one's.
  const Tensor after = Tensor::empty({40, 40}, DType::f32, kGpu);
  CHECK(after.raw_data() != freed_inside);
  CHECK(after.raw_data() != kept.raw_data());
  graph.replay();
  CHECK(test::bit_identical(kept, add(mul(a, a), a)));
}

TEST_CASE("cuda: a capture takes the smallest block that fits from its pool and the cache, as the step as it is does",
          "[cuda][graphs]") {
  // Two blocks cached, the larger within a quarter of the smaller (below 1
  // MiB: sizes rounded to 512 bytes), nothing else. The body frees a large
  // tensor, then makes a small one and a large one. Run as it is, the small
  // one takes the small block and the large one the large block; a capture
  // that took its pool's block first would give the small tensor the large
  // block and leave the large one to a cudaMalloc, which a capture refuses.
  const int64_t small = 200192, large = 250112;  // f32 elements: 800,768 and 1,000,448 bytes
  empty_cache(kGpu);
  {
    Tensor s = Tensor::empty({small}, DType::f32, kGpu), l = Tensor::empty({large}, DType::f32, kGpu);
  }
  Tensor q, r;
  reset_device_counters();
  const CudaGraph graph = CudaGraph::capture(kGpu, [&] {
    { Tensor p = Tensor::empty({large}, DType::f32, kGpu); }
    q = Tensor::empty({small}, DType::f32, kGpu);
    r = Tensor::empty({large}, DType::f32, kGpu);
  });
  CHECK(graph.defined());
  CHECK(device_counters().device_mallocs == 0);
}

TEST_CASE("cuda: a capture that synchronises, reads to the host, copies from it or allocates fails with its reason",
          "[cuda][graphs]") {
  const Tensor a = rand_gpu({3, 3}, 6);
  mul(a, a);  // cached
  // The host round trips ordo refuses itself (CUDA would capture the copies:
  // seen on an H200), the allocation CUDA refuses.
  const std::pair<std::vector<const char*>, std::function<void()>> bodies[] = {
      {{"the host waiting for the device"}, [&] { synchronize(kGpu); }},
      {{"the host waiting for the device"}, [&] { (void)sum(mul(a, a)).item(); }},
      {{"a copy from host memory"}, [&] { (void)Tensor::from_vector(std::vector<float>{1, 2}, {2}, kGpu); }},
      {{"cudaErrorStreamCaptureUnsupported", "cudaMalloc"},
       [&] { (void)Tensor::empty({1 << 22}, DType::f32, kGpu); }},  // a size never cached
  };
  for (const auto& [reasons, body] : bodies) {
    INFO(reasons.front());
    try {
      CudaGraph::capture(kGpu, body);
      FAIL("the capture was not refused");
    } catch (const Error& e) {
      CHECK_THAT(std::string(e.what()), Contains("capturing a CUDA graph on cuda:0 failed"));
      for (const char* reason : reasons) CHECK_THAT(std::string(e.what()), Contains(reason));
    }
    // The device works as before.
    CHECK(sum(mul(a, a)).item() == Approx(sum(mul(a.to(Device::cpu()), a.to(Device::cpu()))).item()).epsilon(1e-6));
  }
}

#endif  // ORDO_HAS_CUDA
