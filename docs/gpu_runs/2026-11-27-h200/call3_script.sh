#!/usr/bin/env bash
# Device call 8 (2026-11-27): row kernels with the row in registers (softmax,
# residual+LayerNorm forward and backward), column sums unrolled, bias +
# activation with a 32-bit column, embedding-gradient runs read 32 at a time.
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
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
run ncu 90 $NCU --clock-control none -k regex:'column_partials|column_finish|residual_layernorm|softmax_warp|add_row_runs' --launch-count 12 --section SpeedOfLight --section LaunchStats $B/ordo bench step --config base --batch 32 --length 128 --steps 1 --warmup 0 --device cuda --no-model
cat "$o/summary.txt"
