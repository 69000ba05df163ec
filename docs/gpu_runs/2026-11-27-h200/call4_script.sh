#!/usr/bin/env bash
# Device call 9 (2026-11-27): the final binaries (copy in chunks, softmax's
# row in registers, bias + activation's 32-bit column) — every [cuda] test,
# memcheck and initcheck again, racecheck on the cases call 6 did not reach
# (and the new kernels), the step table.
set -u
cd "$(dirname "$0")/.."
mkdir -p /work && ln -sfn "$PWD" /work/main
B=build-gpu; mkdir -p $B
gzip -dc .device/ordo.gz > $B/ordo; gzip -dc .device/ordo_tests.gz > $B/ordo_tests; chmod +x $B/ordo $B/ordo_tests
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export OMP_NUM_THREADS=8
o=${OUT:-/tmp/out}; mkdir -p "$o"
run() { local name=$1 limit=$2; shift 2; local t=$SECONDS
  timeout "$limit" "$@" > "$o/$name.txt" 2>&1; echo "$name: exit $? in $((SECONDS - t)) s" | tee -a "$o/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$o/summary.txt" 2>&1
run tests 60 bash -c "$B/ordo_tests --require-gpu '[cuda]~[step]~[mpi]~[bf16]' 2>&1 | tail -4; $B/ordo_tests --require-gpu '[cuda][step]' 2>&1 | tail -3; $B/ordo_tests --require-gpu '[cuda][bf16]' 2>&1 | tail -3"
run bench_step 120 bash -c "$B/ordo bench step --config base --batch 32 --length 128 --steps 10 --warmup 3 --device cuda --no-model --parts --kernel-times; $B/ordo bench step --config base --batch 8 --length 512 --steps 10 --warmup 3 --device cuda --no-model --parts; $B/ordo bench step --config tiny --batch 32 --length 64 --steps 10 --warmup 3 --device cuda --no-model --parts"
for tool in memcheck initcheck; do
  run "san_$tool" 40 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 1 $B/ordo_tests --require-gpu "[cuda]~[step]~[mpi]~[bf16]"
done
run san_racecheck 150 compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 1 $B/ordo_tests --require-gpu \
  "cuda: copies of contiguous*,cuda: softmax*,cuda: reductions*,cuda: KernelTiming*,cuda: edge values*,cuda: fused*,cuda: a captured*,cuda: memory a graph*,cuda: a capture*,cuda: bf16*,cuda: kernel calls*,cuda: ordo forward*,fine-tuning heads on CUDA*,cuda: a logged*"
cat "$o/summary.txt"
