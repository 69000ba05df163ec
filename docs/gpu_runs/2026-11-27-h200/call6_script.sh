#!/usr/bin/env bash
# Device call 11 (2026-11-27): the final binaries — softmax forward and backward with the row in
# registers (32-bit lane offsets), the fused residual + LayerNorm as before.
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
run bench_step 120 bash -c "$B/ordo bench step --config base --batch 32 --length 128 --steps 10 --warmup 3 --device cuda --no-model --parts --kernel-times; $B/ordo bench step --config base --batch 8 --length 512 --steps 10 --warmup 3 --device cuda --no-model --parts --kernel-times; $B/ordo bench step --config tiny --batch 32 --length 64 --steps 10 --warmup 3 --device cuda --no-model --parts"
run san_memcheck 40 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 $B/ordo_tests --require-gpu "[cuda]~[step]~[mpi]~[bf16]"
cat "$o/summary.txt"
