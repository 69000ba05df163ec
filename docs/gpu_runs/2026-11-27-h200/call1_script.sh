#!/usr/bin/env bash
# Device call 6 (2026-11-27): the current binaries (Q/K/V joined, padded eager
# MLM rows) — every [cuda] test, the graphs-vs-eager checkpoint, the step
# table, the PE table on the GPU, then compute-sanitizer's four tools.
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
run tests 90 bash -c "$B/ordo_tests --require-gpu '[cuda]~[step]~[mpi]~[bf16]' 2>&1 | tail -5; echo '== [cuda][step]'; $B/ordo_tests --require-gpu '[cuda][step]' 2>&1 | tail -40; echo '== [bf16]'; $B/ordo_tests --require-gpu '[cuda][bf16]' -s 2>&1 | tail -25"
run bench_step 120 bash -c "$B/ordo bench step --config base --batch 32 --length 128 --steps 10 --warmup 3 --device cuda --no-model --parts --kernel-times; $B/ordo bench step --config tiny --batch 32 --length 64 --steps 10 --warmup 3 --device cuda --no-model --parts; $B/ordo bench step --config base --batch 8 --length 512 --steps 10 --warmup 3 --device cuda --no-model --parts"
run bench_pe 90 $B/ordo bench pe --config base --batch 32 --length 128 --steps 5 --warmup 2 --rounds 1 --device cuda
for tool in memcheck racecheck initcheck synccheck; do
  run "san_$tool" 70 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 1 $B/ordo_tests --require-gpu "[cuda]~[step]~[mpi]~[bf16]"
done
cat "$o/summary.txt"
