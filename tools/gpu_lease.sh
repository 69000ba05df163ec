#!/usr/bin/env bash
# tools/gpu_lease.sh — one short GPU lease in one call, with binaries built
# elsewhere (--build DIR: ordo and ordo_tests for this GPU), in at most about
# 9 minutes of device time; every check has its own limit (seconds, below):
#
#   tests      the [cuda] kernel tests and the CPU-vs-GPU steps        150
#   step       ordo bench step, the default attention: base 32 x 128 with
#              --parts --kernel-times, base 8 x 512 and tiny 32 x 64 with
#              --parts --kernel-times / --parts                        150
#   tiles      the same three with ORDO_FUSED_ATTENTION=1 (the fused
#              attention on tensor-core tiles), --kernel-times at base
#              32 x 128                                                 90
#   modeled    the MODELED kernel classes of the same commit on the CPU
#              (1 and 2 layers, extrapolated: scripts/extrapolate_modeled_layers.py) 60
#   refit      ordo bench calibrate on the step's logs: $OUT/calibration.txt
#              and the PREDICTED / MEASURED table                       10
#   torch      scripts/bench_torch_gpu.py at the three shapes           60
#   paper      ordo experiment configs/papers/wang2021 --quick --runs-at-once auto, timed:
#              what a GPU user waits for make wang2021 PAPER_FLAGS=--quick  120
#
# and ends with a table: each check's result and seconds, then the step's
# figures MEASURED (device, commit, date), PREDICTED by the repository's
# calibration for the same commit, and MODELED, never in one column.
#
# Usage: tools/gpu_lease.sh [--emulate] [--build DIR]
#   --emulate  no GPU: every measured figure reads "not measured", the checks
#              that need one are skipped (said so), the CPU's parts (modeled at
#              tiny, the prediction) run; chosen by itself where no GPU answers
#              nvidia-smi. make test runs it so (tests/tools/test_gpu_lease.sh).
# Logs go to $OUT when set (the GPU-lending tool collects it), else gpu_lease_logs/.
# Exit status 1 if a check that ran failed.
set -uo pipefail
cd "$(dirname "$0")/.."

emulate=0 build=build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --emulate) emulate=1 ;;
    --build) build=${2:?--build needs a folder}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_lease: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ $emulate == 0 ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_lease: no GPU answers nvidia-smi: --emulate (nothing is measured)"
  emulate=1
fi
ordo=$build/ordo tests=$build/ordo_tests
export ordo tests emulate
[[ -x $ordo ]] || { echo "gpu_lease: no $ordo (build it first, or give --build DIR)" >&2; exit 2; }
logs=${OUT:-gpu_lease_logs}
mkdir -p "$logs"
export logs
results=() failed=0
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}

# check NAME LIMIT LOG COMMAND...: runs it within LIMIT seconds, its output into LOG.
check() {
  local name=$1 limit=$2 log=$logs/$3 start=$SECONDS status result=ok
  shift 3
  echo "gpu_lease: $name"
  if declare -F "$1" >/dev/null; then  # a function of this script: in a shell that timeout can stop
    timeout "$limit" bash -c "$(declare -f "$1"); $(printf '%q ' "$@")" >"$log" 2>&1
  else
    timeout "$limit" "$@" >"$log" 2>&1
  fi
  status=$?
  if [[ $status != 0 ]]; then result="FAILED (exit $status)"; failed=1; tail -n 5 "$log"; fi
  results+=("$name|$result|$((SECONDS - start))")
}
skip() { results+=("$1|skipped: $2|0"); }
gpu_only() { if [[ $emulate == 1 ]]; then skip "$1" "no GPU: not measured"; return 1; fi; }

step_runs() {  # the three shapes: $1 = extra flags at base 32 x 128
  local b128=$1
  "$ordo" bench step --config base --batch 32 --length 128 --steps 10 --warmup 3 --device cuda --no-model --parts $b128 &&
    "$ordo" bench step --config base --batch 8 --length 512 --steps 10 --warmup 3 --device cuda --no-model --parts \
      --kernel-times &&
    "$ordo" bench step --config tiny --batch 32 --length 64 --steps 10 --warmup 3 --device cuda --no-model --parts
}

if gpu_only "tests"; then
  check "tests" 150 tests.log bash -c "'$tests' --require-gpu '[cuda]~[mpi]~[bf16]' | tail -3"
fi
if gpu_only "step"; then check "step" 150 step.log step_runs --kernel-times; fi
if gpu_only "tiles"; then
  check "tiles" 90 tiles.log env ORDO_FUSED_ATTENTION=1 bash -c "$(declare -f step_runs); step_runs --kernel-times"
fi

# The modeled classes: base at 1 and 2 layers extrapolated to 12 (tiny whole);
# with --emulate tiny only (base's recordings are a minute of 16 cores).
modeled() {
  local shapes=("tiny 32 64 2") d=$logs/modeled
  [[ $emulate == 0 ]] && shapes+=("base 32 128 12" "base 8 512 12")
  mkdir -p "$d"
  for shape in "${shapes[@]}"; do
    read -r config batch length layers <<<"$shape"
    local name=${config}_${batch}x${length}
    for l in 1 2; do
      "$ordo" bench step --config "$config" --batch "$batch" --length "$length" --steps 1 --warmup 0 --device cpu \
        --model-only --classes --set model.num_hidden_layers=$l >"$d/${name}_L$l.txt" || return 1
    done
    python3 scripts/extrapolate_modeled_layers.py --layers "$layers" --one "$d/${name}_L1.txt" --two "$d/${name}_L2.txt" \
      >"$d/$name.txt" || return 1
  done
}
check "modeled" 60 modeled.log modeled

if [[ $emulate == 1 ]]; then
  skip "refit" "no GPU: not measured"
else
  check "refit" 10 refit.log "$ordo" bench calibrate --measured "$logs/step.log" --modeled "$logs/modeled/tiny_32x64.txt" \
    --modeled "$logs/modeled/base_32x128.txt" --modeled "$logs/modeled/base_8x512.txt" \
    --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $(date -u +%F), commit $commit" \
    --out "$logs/calibration.txt"
fi
if gpu_only "torch"; then
  if python3 -c 'import torch, transformers; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    check "torch" 60 torch.log bash -c "for s in tiny:32:64 base:32:128 base:8:512; do IFS=: read -r n b l <<<\"\$s\";
      python3 scripts/bench_torch_gpu.py --config configs/\$n.json --name \$n --batch \$b --length \$l || exit 1; done"
  else
    skip "torch" "python3 has no CUDA torch or no transformers"
  fi
fi
if gpu_only "paper"; then
  check "paper" 120 paper.log "$ordo" experiment configs/papers/wang2021 --out "$logs/wang2021_quick" --quick --runs-at-once auto
fi

# The step's figures: MEASURED from step.log / tiles.log, PREDICTED by the
# repository's calibration (the modeled classes above), MODELED: never mixed.
measured_ms() {  # LOG CONFIG BATCH LENGTH -> after's step ms, or "not measured"
  local v=""
  [[ -f $1 ]] && v=$(awk -v c="$2" -v b="$3" -v l="$4" '$1 == c && $2 == b && $4 == l && $(NF-1) == "->" { v = $NF } END { print v }' "$1")
  echo "${v:-not measured}"
}
predicted_ms() {  # CONFIG BATCH LENGTH -> after's PREDICTED ms (one graph launch), or "-"
  local f=$logs/modeled/${1}_${2}x${3}.txt v=""
  [[ -f $f ]] && v=$("$ordo" bench calibrate --predict "$f" 2>/dev/null |
    awk -v c="$1" -v b="$2" -v l="$3" '$1 == c && $2 == b && $4 == l && $5 == "after" { print $6 }')
  echo "${v:--}"
}
echo
echo "gpu_lease on $([[ $emulate == 1 ]] && echo "no GPU (--emulate)" || nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), commit $commit, $(date -u +%F) — logs in $logs/"
printf '%-10s %-42s %8s\n' check result seconds
for row in "${results[@]}"; do IFS='|' read -r name result seconds <<<"$row"; printf '%-10s %-42s %8s\n' "$name" "$result" "$seconds"; done
echo
echo "after's step ms, one graph launch: MEASURED here (default attention; tiles) | PREDICTED for this commit"
echo "(its MODELED classes x docs/gpu_runs/calibration_h200.txt, the repository's calibration; the refit is above)"
printf '%-16s %-14s %-14s %s\n' step measured "measured, tiles" predicted
for shape in "tiny 32 64" "base 32 128" "base 8 512"; do
  read -r c b l <<<"$shape"
  printf '%-16s %-14s %-14s %s\n' "$c $b x $l" "$(measured_ms "$logs/step.log" "$c" "$b" "$l")" \
    "$(measured_ms "$logs/tiles.log" "$c" "$b" "$l")" "$(predicted_ms "$c" "$b" "$l")"
done
[[ -f $logs/refit.log ]] && { echo; cat "$logs/refit.log"; }
exit $failed
