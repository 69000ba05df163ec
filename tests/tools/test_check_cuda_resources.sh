#!/usr/bin/env bash
# tools/check_cuda_resources.sh on hand-written ptxas reports and launch logs:
# it must pass a kernel that fits and fail a spill, a launch shape over the
# register file (57 registers round up to 64; 64 x 1024 = 65536 fits, 64 x 1056
# does not), a launched kernel ptxas never compiled and a kernel no test launched.
set -uo pipefail
check=${1:?usage: test_check_cuda_resources.sh ORDO_SOURCE_DIR}/tools/check_cuda_resources.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

report() {  # report NAME MANGLED REGISTERS SPILL_STORES
  cat >> "$dir/build/$1.o.ptxas.txt" <<REPORT
ptxas info    : Compiling entry function '$2' for 'sm_90'
ptxas info    : Function properties for $2
    0 bytes stack frame, $4 bytes spill stores, $4 bytes spill loads
ptxas info    : Used $3 registers, used 1 barriers
REPORT
}
expect() {  # expect RC PATTERN LAUNCH-LINES...
  local rc=$1 pattern=$2
  shift 2
  printf '%s\n' "$@" > "$dir/launches.tsv"
  out=$("$check" "$dir/build" "$dir/launches.tsv" 2>&1)
  got=$?
  if [[ $got -ne $rc ]] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAILED: expected exit $rc and '$pattern' for launches $*; got exit $got:"
    echo "$out"
    failures=$((failures + 1))
  fi
}

mkdir -p "$dir/build"
# ordo::cuda::(anonymous namespace)::row_kernel<true>(float*, long)
report rows _ZN4ordo4cuda12_GLOBAL__N_110row_kernelILb1EEEvPfl 57 0
expect 0 "0 problems" $'row_kernel<true>\t1024\t0'
expect 1 "OVER" $'row_kernel<true>\t1056\t0'
expect 1 "MISSING  other_kernel" $'row_kernel<true>\t32\t0' $'other_kernel\t32\t0'
report spills _ZN4ordo4cuda12_GLOBAL__N_112spill_kernelEPf 255 16
expect 1 "SPILL  spill_kernel" $'row_kernel<true>\t32\t0'
expect 1 "UNTESTED  spill_kernel" $'row_kernel<true>\t32\t0'
rm -rf "$dir/build"/*
expect 0 "NOT CHECKED" $'row_kernel<true>\t32\t0'

[[ $failures -eq 0 ]] && echo "check_cuda_resources: 6 cases passed"
exit $((failures > 0))
