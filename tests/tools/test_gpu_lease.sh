#!/usr/bin/env bash
# tools/gpu_lease.sh --emulate (no GPU): it must end with its table, every
# measured figure "not measured" and every GPU check "skipped", the CPU's
# modeled classes recorded and tiny's step PREDICTED, exit status 0.
# usage: test_gpu_lease.sh ORDO_SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?usage: test_gpu_lease.sh ORDO_SOURCE_DIR BUILD_DIR} build=${2:?BUILD_DIR}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
text=$(OUT=$out OMP_NUM_THREADS=1 "$src/tools/gpu_lease.sh" --emulate --build "$build" 2>&1)
status=$?
failures=0
expect() {  # expect PATTERN WHAT
  if ! grep -qE "$1" <<<"$text"; then echo "test_gpu_lease: missing $2 (/$1/)"; failures=$((failures + 1)); fi
}
[[ $status == 0 ]] || { echo "test_gpu_lease: exit $status"; failures=$((failures + 1)); }
expect '^tests +skipped: no GPU: not measured' "the tests skipped"
expect '^step +skipped: no GPU: not measured' "the step skipped"
expect '^refit +skipped: no GPU: not measured' "the refit skipped"
expect '^modeled +ok' "the modeled classes"
expect '^tiny 32 x 64 +not measured +not measured +[0-9]+\.[0-9]+$' "tiny: not measured, and PREDICTED"
expect '^base 32 x 128 +not measured +not measured +-$' "base: not measured"
[[ -s $out/modeled/tiny_32x64.txt ]] || { echo "test_gpu_lease: no $out/modeled/tiny_32x64.txt"; failures=$((failures + 1)); }
[[ $failures == 0 ]] || { echo "$text"; exit 1; }
echo "test_gpu_lease: ok"
