#!/usr/bin/env bash
# Installs the Debian packages ordo's build and tests use, where they are missing.
#
# Required: a C++ compiler, make, CMake. Optional (the build reports each as found
# or not): Catch2 for the tests, OpenBLAS for CPU matrix products, WordNet and
# fortunes as real English text for the corpus tests (`ordo data english`), zlib
# for the PNG tests (an independent inflate; ordo itself has its own),
# clang for the fuzzers (ORDO_DEPS_FUZZ=1), Boost.Context for the emulated GPU
# (`make test-emulated`, ORDO_CUDA=emulate), Open MPI for data-parallel runs
# (`mpirun -np N ordo pretrain`, the data_parallel test), ccache (the emulated
# GPU's build takes the layers above the tensor library from the normal build's
# compiles). The CUDA toolkit is not a Debian package here: install NVIDIA's.
# Without root or sudo, prints what is missing and what to run, and fails only
# when a required package is missing.
set -euo pipefail

required=(g++ make cmake)
optional=(ccache catch2 libopenblas-openmp-dev wordnet-base fortunes-min zlib1g-dev libboost-context-dev libopenmpi-dev openmpi-bin)
[[ "${ORDO_DEPS_FUZZ:-0}" == 1 ]] && optional+=(clang)

missing() {
  local out=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || out+=("$pkg")
  done
  echo "${out[@]:-}"
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps: not a Debian system; install a C++17 compiler, CMake, Catch2 v2 and OpenBLAS yourself"
  exit 0
fi

need_required=$(missing "${required[@]}")
need_optional=$(missing "${optional[@]}")
todo="$need_required $need_optional"
if [[ -z "${todo// /}" ]]; then
  echo "deps: all present (${required[*]} ${optional[*]})"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "deps: missing:$todo — run: sudo apt-get install -y$todo"
  [[ -z "${need_required// /}" ]] && exit 0 || exit 1
fi

echo "deps: installing$todo"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# shellcheck disable=SC2086
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends $todo; then
  [[ -n "${need_required// /}" ]] && { echo "deps: could not install$need_required"; exit 1; }
  echo "deps: optional packages could not be installed; building without them"
fi
