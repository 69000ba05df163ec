#include "parallel/communicator.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"

namespace ordo::parallel {

// Defined by mpi_communicator.cpp in a build with MPI, and below without.
std::unique_ptr<Communicator> make_mpi_communicator();

void SingleProcess::abort(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::exit(1);
}

int launched_processes() {
  // Open MPI's mpirun, MPICH's and Intel MPI's hydra (PMI), Slurm's srun (a
  // job step's tasks; SLURM_NTASKS alone is the allocation, not a launch).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    if (const char* value = std::getenv(name)) {
      char* end = nullptr;
      const long n = std::strtol(value, &end, 10);
      ORDO_CHECK(end != value && *end == '\0' && n >= 1, "the launcher's ", name, "='", value,
                 "' is not a process count");
      return static_cast<int>(n);
    }
  }
  return 1;
}

std::unique_ptr<Communicator> make_communicator() {
  const int processes = launched_processes();
  if (processes == 1) return std::make_unique<SingleProcess>();
  ORDO_CHECK(has_mpi(), "launched as ", processes,
             " processes (mpirun/srun), but this build of ordo has no MPI: install Open MPI (Debian: "
             "libopenmpi-dev openmpi-bin; `make deps` does) and rebuild, or run one process");
  return make_mpi_communicator();
}

#ifndef ORDO_HAS_MPI
bool has_mpi() { return false; }
std::unique_ptr<Communicator> make_mpi_communicator() { return nullptr; }
#endif

}  // namespace ordo::parallel
