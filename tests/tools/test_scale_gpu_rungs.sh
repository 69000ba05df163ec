#!/usr/bin/env bash
# tools/scale_gpu_rungs.sh without a GPU: --dry-run names the command and the
# 12 runs of the GPU rungs; a real run is refused (exit 2, nothing written);
# --merge copies the run folders the study lacks, keeps the ones it has and
# writes the report, whose scale section then reads them.
# usage: test_scale_gpu_rungs.sh ORDO_SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?usage: test_scale_gpu_rungs.sh ORDO_SOURCE_DIR BUILD_DIR} build=${2:?BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
script=$src/tools/scale_gpu_rungs.sh
failures=0
fail() { echo "test_scale_gpu_rungs: $1"; failures=$((failures + 1)); }

text=$(OUT=$tmp/out "$script" --build "$build" --dry-run 2>&1) || fail "--dry-run: exit $?"
grep -q -- "would run, for at most 540 s: .*experiment configs/scale_study --out $tmp/out/scale_study --rungs gpu" <<<"$text" ||
  fail "--dry-run: no command line in: $text"
[[ $(grep -c "(GPU rung)" <<<"$text") == 12 ]] || fail "--dry-run: not 12 GPU-rung runs in: $text"
grep -q '02_ape_learned=base_4k.seed3 (GPU rung)' <<<"$text" || fail "--dry-run: no base_4k replicate"
[[ ! -e $tmp/out ]] || fail "--dry-run wrote $tmp/out"

if ! nvidia-smi -L >/dev/null 2>&1; then
  OUT=$tmp/out "$script" --build "$build" >/dev/null 2>&1
  status=$?
  [[ $status == 2 ]] || fail "without a GPU: exit $status, not 2"
  [[ ! -e $tmp/out ]] || fail "without a GPU: $tmp/out written"
fi

# The merge: two runs from the GPU's folder, one of which the study already has.
mkdir -p "$tmp/gpu/runs/05_rpe_learned=small_16k" "$tmp/gpu/runs/02_ape_learned=base_4k"
echo gpu > "$tmp/gpu/runs/05_rpe_learned=small_16k/marker"
echo gpu > "$tmp/gpu/runs/02_ape_learned=base_4k/marker"
(cd "$src" && "$build/ordo" experiment configs/scale_study --out "$tmp/study" --report --quiet >/dev/null 2>&1) ||
  fail "the study's folder could not be made"
mkdir -p "$tmp/study/runs/02_ape_learned=base_4k"
echo cpu > "$tmp/study/runs/02_ape_learned=base_4k/marker"
text=$("$script" --build "$build" --merge "$tmp/gpu" --into "$tmp/study" 2>&1) || fail "--merge: exit $? in: $text"
grep -q "1 run(s) copied from $tmp/gpu, 1 already in $tmp/study" <<<"$text" || fail "--merge: counts in: $text"
[[ $(cat "$tmp/study/runs/05_rpe_learned=small_16k/marker" 2>/dev/null) == gpu ]] || fail "--merge: the missing run not copied"
[[ $(cat "$tmp/study/runs/02_ape_learned=base_4k/marker") == cpu ]] || fail "--merge: a run the study had was replaced"
[[ -f $tmp/study/report/scale/scale.json ]] || fail "--merge: no report (scale/scale.json)"
"$script" --build "$build" --merge "$tmp/nothing" --into "$tmp/study" >/dev/null 2>&1
[[ $? == 2 ]] || fail "--merge of a folder without runs/: not exit 2"

[[ $failures == 0 ]] || exit 1
echo "test_scale_gpu_rungs: ok"
