#!/usr/bin/env bash
# tools/scale_gpu_rungs.sh — the scale study's GPU rungs (the rungs of
# configs/scale_study/experiment.json marked "device": "gpu": small_16k and
# base_4k now, 12 runs) on a lent GPU within a device-time budget, and their merge
# into the study's report on the machine that holds the CPU rungs.
#
# On the GPU, with binaries built elsewhere and carried (--build DIR):
#   tools/scale_gpu_rungs.sh [--build DIR] [--budget SECONDS] [--dry-run]
#     runs `ordo experiment configs/scale_study --rungs gpu --runs-at-once
#     auto` into $OUT/scale_study (the lending tool brings $OUT back; without
#     $OUT, runs/scale_study_gpu), stopped after --budget seconds (default
#     540: 9 minutes) as Ctrl-C stops it: what finished is kept, and the same
#     command on the next lease, with the folder carried back, continues.
#   --dry-run  prints the command and the runs it would take; runs nothing.
# Back on the machine with the CPU rungs:
#   tools/scale_gpu_rungs.sh --merge FROM [--into DIR] [--build DIR]
#     copies each run folder of FROM/runs that DIR/runs lacks (default DIR:
#     runs/scale_study; a run already there is kept as it is) and writes the
#     report again: DIR/report's scale section then has the GPU rungs.
# Exit status 0 when the runs (or the merge) ended or stopped at the budget,
# 1 when ordo failed, 2 on a usage error.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build budget=540 dry=0 merge="" into=runs/scale_study
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a folder}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    --dry-run) dry=1 ;;
    --merge) merge=${2:?--merge needs the GPU run\'s folder}; shift ;;
    --into) into=${2:?--into needs the study\'s folder}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale_gpu_rungs: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $budget =~ ^[1-9][0-9]*$ ]] || { echo "scale_gpu_rungs: --budget '$budget' is no whole number of seconds" >&2; exit 2; }
ordo=$build/ordo
[[ -x $ordo ]] || { echo "scale_gpu_rungs: no $ordo (build it first, or give --build DIR)" >&2; exit 2; }
study=configs/scale_study

if [[ -n $merge ]]; then
  [[ -d $merge/runs ]] || { echo "scale_gpu_rungs: $merge holds no runs/ (give the GPU run's folder)" >&2; exit 2; }
  if [[ ! -f $into/experiment.json ]]; then
    "$ordo" experiment "$study" --out "$into" --report --quiet || exit 1  # the study's folder, empty
  fi
  # Every folder to merge must be a run of the study's plan: a stranger in DIR/runs would make
  # the study's folder refused by every later command. Checked before anything is copied.
  planned=$("$ordo" experiment "$study" --out "$into" --list | awk 'NR > 1 {print $2}') || exit 1
  for run in "$merge"/runs/*/; do
    name=$(basename "$run")
    [[ $name == .* || ! -d $run ]] && continue  # ordo's bookkeeping, or no run at all
    grep -qxF -- "$name" <<< "$planned" ||
      { echo "scale_gpu_rungs: $merge/runs/$name is no run of $study's plan; nothing merged" >&2; exit 2; }
  done
  copied=0 kept=0
  for run in "$merge"/runs/*/; do
    name=$(basename "$run")
    [[ $name == .* || ! -d $run ]] && continue
    if [[ -e $into/runs/$name ]]; then
      kept=$((kept + 1))
      continue
    fi
    mkdir -p "$into/runs"
    # Copied under a fresh hidden name, then renamed: an interrupted merge leaves no half run.
    partial=$(mktemp -d "$into/runs/.$name.merging.XXXXXX") && chmod --reference="$run" "$partial" || exit 1
    cp -r "$run/." "$partial/" && mv "$partial" "$into/runs/$name" || exit 1
    copied=$((copied + 1))
  done
  echo "scale_gpu_rungs: $copied run(s) copied from $merge, $kept already in $into (kept as they were)"
  exec "$ordo" experiment "$study" --out "$into" --report
fi

out=${OUT:-runs}/scale_study_gpu
[[ -n ${OUT:-} ]] && out=$OUT/scale_study
command=("$ordo" experiment "$study" --out "$out" --rungs gpu --runs-at-once auto --quiet)
if [[ $dry == 1 ]]; then
  echo "scale_gpu_rungs: would run, for at most $budget s: ${command[*]}"
  "$ordo" experiment "$study" --out "$out" --list | grep -F '(GPU rung)' || true
  exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "scale_gpu_rungs: no GPU answers nvidia-smi; the GPU rungs would take days of CPU (use --dry-run to see them)" >&2
  exit 2
fi
start=$(date +%s)
timeout --signal=INT --kill-after=60 "$budget" "${command[@]}"
status=$?
echo "scale_gpu_rungs: $(( $(date +%s) - start )) s of device time; runs in $out"
"$ordo" experiment "$study" --out "$out" --list | grep -F '(GPU rung)'
[[ $status == 0 || $status == 124 || $status == 130 ]] || exit 1
exit 0
