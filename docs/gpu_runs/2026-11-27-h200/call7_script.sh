#!/usr/bin/env bash
# Device call 12 (2026-11-27): Nsight Compute on the column sums (bias and
# LayerNorm gradients), the fused LayerNorm backward and AdamW — why they run
# below the bandwidth (warp stall reasons, occupancy), for the next change.
set -u
cd "$(dirname "$0")/.."
mkdir -p /work && ln -sfn "$PWD" /work/main
B=build-gpu; mkdir -p $B
gzip -dc .device/ordo.gz > $B/ordo; chmod +x $B/ordo
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export OMP_NUM_THREADS=8
o=${OUT:-/tmp/out}; mkdir -p "$o"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 150 $NCU --clock-control none -k regex:'column_partials|column_finish|residual_layernorm_backward|adamw_multi' --launch-count 10 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  $B/ordo bench step --config base --batch 32 --length 128 --steps 1 --warmup 0 --device cuda --no-model > $o/ncu.txt 2>&1
echo "ncu rc $?"
