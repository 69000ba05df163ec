// Child processes of this program: the same executable started again with
// other arguments, and waited for. Started with posix_spawn, never fork()
// alone: a forked copy of a process whose OpenMP thread pool has run inherits
// the pool without its threads, and its next parallel loop waits for them for ever.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ordo {

// The cores this process may run on (its CPU affinity mask; the machine's
// count where that cannot be read).
int64_t available_cores();

// Starts this program (/proc/self/exe) with `args` (argv[1...]), its standard
// streams and environment this process's; an error naming the program when it
// cannot be started.
pid_t spawn_self(const std::vector<std::string>& args);

// How a child ended: its exit status, or 128 + the signal that ended it (as a shell says).
struct ChildExit {
  pid_t pid = 0;
  int code = 0;
};

// The next child of this process to end, waiting up to `seconds` for one;
// nothing when none ended in that time (or none is running).
std::optional<ChildExit> wait_for_child(double seconds);

}  // namespace ordo
