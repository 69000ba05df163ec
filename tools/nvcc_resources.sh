#!/usr/bin/env bash
# The CUDA compiler launcher of the nvcc build (CMakeLists.txt): runs the
# compile it is given (which asks ptxas for -v), keeps ptxas's report of each
# kernel's registers, stack frame and spills in OBJECT.ptxas.txt beside the
# object, and passes every other line through, so the build log stays quiet.
# tools/check_cuda_resources.sh reads those reports.
set -uo pipefail

object=""
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  [[ "${args[i]}" == "-o" ]] && object="${args[i + 1]:-}"
done

report=$(mktemp)
"$@" 2> >(tee "$report" | grep -v -E '^ptxas info|bytes stack frame' >&2)
status=$?
wait  # the process substitution's tee
if [[ -n "$object" && $status -eq 0 ]]; then
  grep -E '^ptxas info|bytes stack frame' "$report" > "$object.ptxas.txt.tmp" || true
  mv "$object.ptxas.txt.tmp" "$object.ptxas.txt"
fi
rm -f "$report"
exit $status
