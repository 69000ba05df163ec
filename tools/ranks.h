// A command that may run as one rank of a data-parallel job (mpirun -np N):
// `body` gets the job's communicator (nullptr for one process). A rank that
// fails ends the whole job — the others would wait for it forever — saying
// which rank and why.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "base/error.h"
#include "parallel/communicator.h"

namespace ordo::tools {

inline int run_on_every_rank(const std::string& command, const std::function<int(parallel::Communicator*)>& body) {
  std::unique_ptr<parallel::Communicator> comm = parallel::make_communicator();
  if (comm->size() == 1) return body(nullptr);
  try {
    return body(comm.get());
  } catch (const std::exception& e) {
    comm->abort(detail::cat(command, ": rank ", comm->rank(), " of ", comm->size(), ": error: ", e.what(),
                            "\n(the whole job is stopped)"));
  }
  return 1;  // not reached: abort() ends the process
}

}  // namespace ordo::tools
