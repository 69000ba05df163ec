#include "base/subprocess.h"

#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/error.h"

extern char** environ;

namespace ordo {

int64_t available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

pid_t spawn_self(const std::vector<std::string>& args) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ORDO_CHECK(n > 0, "cannot find this program's own file (/proc/self/exe): ", std::strerror(errno));
  self[n] = '\0';
  std::vector<char*> argv{self};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ);
  ORDO_CHECK(error == 0, "cannot start ", self, ": ", std::strerror(error));
  return pid;
}

std::optional<ChildExit> wait_for_child(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) return ChildExit{pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
    if (pid < 0 && errno != EINTR) return std::nullopt;  // no child at all
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace ordo
