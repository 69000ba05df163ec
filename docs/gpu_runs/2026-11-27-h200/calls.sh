#!/usr/bin/env bash
# The seven device calls of the 2026-11-27 H200 lease, as they ran: `calls.sh N`
# in the checkout's root on the device machine, with the binaries built on
# the dev box and carried gzipped in .device/ (ordo.gz, ordo_tests.gz; not in
# the tree). Each check's output goes to $OUT/<name>.txt, its exit status and
# seconds to $OUT/summary.txt.
set -u
call=${1:?usage: calls.sh N (1-7)}
cd "$(dirname "$0")/../../.."
mkdir -p /work && ln -sfn "$PWD" /work/main  # the tests' source path (ORDO_SOURCE_DIR)
B=build-gpu; mkdir -p $B
gzip -dc .device/ordo.gz > $B/ordo; chmod +x $B/ordo
[[ -f .device/ordo_tests.gz ]] && { gzip -dc .device/ordo_tests.gz > $B/ordo_tests; chmod +x $B/ordo_tests; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export OMP_NUM_THREADS=8
o=${OUT:-/tmp/out}; mkdir -p "$o"
run() { local name=$1 limit=$2; shift 2; local t=$SECONDS
  timeout "$limit" "$@" > "$o/$name.txt" 2>&1; echo "$name: exit $? in $((SECONDS - t)) s" | tee -a "$o/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$o/summary.txt" 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
kernel_cases="[cuda]~[step]~[mpi]~[bf16]"
tests() {  # every [cuda] kernel case, the CPU-vs-GPU steps, the 200-step bf16 run
  run tests "$1" bash -c "$B/ordo_tests --require-gpu '$kernel_cases' 2>&1 | tail -4;
    $B/ordo_tests --require-gpu '[cuda][step]' 2>&1 | tail -3; $B/ordo_tests --require-gpu '[cuda][bf16]' 2>&1 | tail -3"
}
step() {  # ordo bench step at base 32 x 128, base 8 x 512 and tiny 32 x 64; $1: flags for 8 x 512 beyond --parts
  run bench_step 120 bash -c "$B/ordo bench step --config base --batch 32 --length 128 --steps 10 --warmup 3 --device cuda --no-model --parts --kernel-times;
    $B/ordo bench step --config base --batch 8 --length 512 --steps 10 --warmup 3 --device cuda --no-model --parts $1;
    $B/ordo bench step --config tiny --batch 32 --length 64 --steps 10 --warmup 3 --device cuda --no-model --parts"
}
sanitizer() { run "san_$1" "$2" compute-sanitizer --tool "$1" --report-api-errors no --error-exitcode 1 $B/ordo_tests --require-gpu "${3:-$kernel_cases}"; }
ncu_step() {  # Nsight Compute on the first $2 launches whose names match $1, sections $3...
  local match=$1 count=$2; shift 2
  run ncu 150 $NCU --clock-control none -k "regex:$match" --launch-count "$count" "$@" \
    $B/ordo bench step --config base --batch 32 --length 128 --steps 1 --warmup 0 --device cuda --no-model
}
case $call in
  1) tests 90; step ""
     run bench_pe 90 $B/ordo bench pe --config base --batch 32 --length 128 --steps 5 --warmup 2 --rounds 1 --device cuda
     for tool in memcheck racecheck initcheck synccheck; do sanitizer $tool 70; done ;;
  2) tests 60; step ""
     ncu_step 'column_partials|column_finish|residual_layernorm' 8 --section SpeedOfLight --section Occupancy \
       --section LaunchStats --section MemoryWorkloadAnalysis ;;
  3) tests 60; step ""
     ncu_step 'column_partials|column_finish|residual_layernorm|softmax_warp|add_row_runs' 12 --section SpeedOfLight \
       --section LaunchStats ;;
  4) tests 60; step ""
     sanitizer memcheck 40; sanitizer initcheck 40
     sanitizer racecheck 150 "cuda: copies of contiguous*,cuda: softmax*,cuda: reductions*,cuda: KernelTiming*,cuda: edge values*,cuda: fused*,cuda: a captured*,cuda: memory a graph*,cuda: a capture*,cuda: bf16*,cuda: kernel calls*,cuda: ordo forward*,fine-tuning heads on CUDA*,cuda: a logged*" ;;
  5|6) tests 60; step --kernel-times; sanitizer memcheck 40 ;;
  7) ncu_step 'column_partials|column_finish|residual_layernorm_backward|adamw_multi' 10 --section SpeedOfLight \
       --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
       --section MemoryWorkloadAnalysis ;;
  *) echo "calls.sh: no call $call (1-7)" >&2; exit 2 ;;
esac
cat "$o/summary.txt"
