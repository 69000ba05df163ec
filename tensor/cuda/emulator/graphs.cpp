// The emulator's stream capture and CUDA graphs (the stand-in cuda_runtime.h):
// cudaStreamBeginCapture makes a stream record what is queued on it —
// kernels (emulator.h's launch), cuBLAS products, cub sorts, device copies
// and sets, each kept as the work to do with its arguments — instead of
// running it; cudaStreamEndCapture hands the records over as a graph, and
// cudaGraphLaunch runs them in order, as a GPU runs a graph's nodes on a
// stream that has nothing else queued.
//
// What the driver forbids during a capture in cudaStreamCaptureModeGlobal
// (the mode ordo captures in; the emulator takes no other) is refused the
// same way: a synchronisation (cudaStreamSynchronize, cudaDeviceSynchronize,
// cudaMemcpy, cudaMemset), cudaMalloc and cudaFree get
// cudaErrorStreamCaptureUnsupported, from any thread, and invalidate the
// capture: its cudaStreamEndCapture then returns
// cudaErrorStreamCaptureInvalidated and no graph. take_error_detail() names
// the refused call.
//
// Where it is stricter than the driver: a copy to or from pageable host
// memory is refused here too, where CUDA 13.0 on an H200 captured it as a
// node that replays from that address; ordo refuses such copies itself
// before CUDA sees them (runtime.cu's refuse_while_capturing), so its
// programs meet the same rule on both.
//
// What it cannot show: a graph's nodes run here in the order they were
// captured, one after another (a GPU may overlap nodes the capture left
// independent; ordo captures one stream, whose order is total), and the
// time a graph launch saves.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/cuda/emulator/emulator.h"

namespace emu = ::ordo::cuda::emulator;

struct CUgraph_st {
  struct Node {
    std::string what;
    std::function<void()> run;
  };
  std::vector<Node> nodes;
};

struct CUgraphExec_st {
  std::vector<CUgraph_st::Node> nodes;
};

namespace ordo::cuda::emulator {

namespace {

struct Capture {
  cudaGraph_t graph = nullptr;
  bool invalidated = false;
};

struct Captures {
  std::mutex mutex;
  std::map<const void*, Capture> by_stream;
};

Captures& captures() {
  static Captures c;
  return c;
}

}  // namespace

bool capturing(const void* stream) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.by_stream.count(stream) > 0;
}

void record(const void* stream, const char* what, std::function<void()> run) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.by_stream.find(stream);
  if (it == c.by_stream.end() || it->second.invalidated) return;  // an invalidated capture records nothing more
  it->second.graph->nodes.push_back({what, std::move(run)});
}

int refuse_during_capture(const char* call) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.by_stream.empty()) return cudaSuccess;
  for (auto& [stream, capture] : c.by_stream) capture.invalidated = true;
  set_launch_error(cudaErrorStreamCaptureUnsupported,
                   std::string(call) + " is not permitted while a stream is being captured into a graph "
                                       "(cudaStreamCaptureModeGlobal); the capture is invalidated");
  return cudaErrorStreamCaptureUnsupported;
}

}  // namespace ordo::cuda::emulator

namespace {

cudaError_t fail(cudaError_t error, const std::string& detail) {
  emu::set_launch_error(error, detail);
  return error;
}

}  // namespace

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (stream == nullptr)
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture: the legacy default stream cannot be captured");
  if (mode != cudaStreamCaptureModeGlobal)
    return fail(cudaErrorInvalidValue, "cudaStreamBeginCapture: the emulator captures in cudaStreamCaptureModeGlobal only");
  emu::Captures& c = emu::captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.by_stream.count(stream))
    return fail(cudaErrorIllegalState, "cudaStreamBeginCapture: the stream is already being captured");
  c.by_stream[stream].graph = new CUgraph_st;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  emu::Captures& c = emu::captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  *graph = nullptr;
  auto it = c.by_stream.find(stream);
  if (it == c.by_stream.end())
    return fail(cudaErrorIllegalState, "cudaStreamEndCapture: the stream is not being captured");
  const emu::Capture capture = it->second;
  c.by_stream.erase(it);
  if (capture.invalidated) {
    delete capture.graph;
    return fail(cudaErrorStreamCaptureInvalidated,
                "cudaStreamEndCapture: the capture was invalidated by a call stream capture does not permit");
  }
  *graph = capture.graph;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  emu::Captures& c = emu::captures();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.by_stream.find(stream);
  *status = it == c.by_stream.end()   ? cudaStreamCaptureStatusNone
            : it->second.invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (graph == nullptr) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate: a null graph");
  if (flags != 0) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate: flags the emulator does not know");
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}

// The nodes in capture order. A graph launched into a stream that is itself
// being captured becomes one node of that capture.
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaGraphLaunch: a null graph");
  auto run = [exec] {
    for (const CUgraph_st::Node& node : exec->nodes) node.run();
  };
  if (emu::capturing(stream)) {
    emu::record(stream, "cudaGraphLaunch", run);
  } else {
    run();
  }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
