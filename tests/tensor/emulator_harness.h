// What the emulated GPU's own tests share (test_emulator.cpp,
// test_emulator_checks.cpp, test_emulator_libraries.cpp): running code that
// faults in a forked child, device arrays to and from the host, the
// schedule and the checks set for a scope, and the last launch's error.
#pragma once

#include <cuda_runtime.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "tensor/cuda/cuda_common.cuh"

namespace emulator_test {

namespace emu = ordo::cuda::emulator;

// ---- helpers ---------------------------------------------------------------------

struct ChildResult {
  bool killed_by_segv = false, killed_by_abort = false;
  std::string stderr_text;
};

// Runs `body` in a forked child with its stderr captured.
inline ChildResult run_in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    body();
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) r.stderr_text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.killed_by_segv = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
  r.killed_by_abort = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return r;
}

template <class T>
T* device_array(const std::vector<T>& host) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, host.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return static_cast<T*>(p);
}

template <class T>
std::vector<T> host_array(const T* device, size_t n) {
  std::vector<T> host(n);
  REQUIRE(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return host;
}

// The schedule for one test, back to forward after it.
struct ScheduleGuard {
  explicit ScheduleGuard(const std::string& s) { REQUIRE(emu::set_schedule(s)); }
  ~ScheduleGuard() { emu::set_schedule("forward"); }
};

// The checks for one test, back to what they were after it.
struct ChecksGuard {
  explicit ChecksGuard(unsigned bits) : saved(emu::checks()) { emu::set_checks(bits); }
  ~ChecksGuard() { emu::set_checks(saved); }
  unsigned saved;
};

// The error a launch left, as ORDO_CUDA_CHECK_LAUNCH reports it ("" when none).
inline std::string launch_error() {
  try {
    ORDO_CUDA_CHECK_LAUNCH();
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace emulator_test
