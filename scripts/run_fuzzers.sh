#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS and reports executions and crashes.
#
#   scripts/run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]
#
# BUILD_DIR holds the targets (cmake -DORDO_FUZZ=ON with clang; `make fuzz`
# does it all); without TARGETs, every fuzz/fuzz_*.cpp. Each target starts from its committed seeds in
# fuzz/seeds/<target>/ plus the corpus it grew in earlier runs, kept under
# CORPUS_DIR/<target>/ (FUZZ_CORPUS_DIR, default BUILD_DIR/fuzz-corpus; `make
# fuzz-long` keeps it in fuzz/corpus/, outside any build) so the committed seeds stay small. A crash,
# sanitizer report, uncaught exception, timeout or out-of-memory leaves the
# input under BUILD_DIR/fuzz-artifacts/<target>/ and makes the exit status 1.
set -uo pipefail

if [[ $# -lt 2 || ! $2 =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/run_fuzzers.sh BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
fi
build=$1
seconds=$2
shift 2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for src in "$root"/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi

# UBSan reports are only printed by default; make them fatal so they count.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

status=0
for target in "${targets[@]}"; do
  binary=$build/$target
  if [[ ! -x $binary ]]; then
    echo "$target: not built ($binary missing)"
    status=1
    continue
  fi
  corpus=${FUZZ_CORPUS_DIR:-$build/fuzz-corpus}/$target
  artifacts=$build/fuzz-artifacts/$target
  log=$build/$target.log
  mkdir -p "$corpus" "$artifacts"
  rm -f "$artifacts"/*
  dict=$root/fuzz/${target#fuzz_}.dict
  dict_flag=()
  [[ -f $dict ]] && dict_flag=(-dict="$dict")
  mkdir -p "$root/fuzz/seeds/$target"

  # -timeout: one input running 10 s is a hang. -rss_limit_mb: a bounded
  # parser has no business using more.
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict_flag[@]}" -artifact_prefix="$artifacts/" "$corpus" "$root/fuzz/seeds/$target" >"$log" 2>&1
  rc=$?

  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  inputs=$(find "$corpus" -type f | wc -l)
  # Coverage as libFuzzer counts it on its last status line: edges (cov) and features (ft).
  coverage=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/cov \1, ft \2/p')
  found=$(find "$artifacts" -type f | wc -l)
  if [[ $rc -ne 0 || $found -ne 0 ]]; then
    echo "$target: CRASH (exit $rc) after ${executions:-?} executions; input(s) in $artifacts/, log $log:"
    grep -E -m 20 'ERROR|SUMMARY|runtime error|fuzz_[a-z_]+:|terminate|what\(\)' "$log" | sed 's/^/  /'
    status=1
  else
    echo "$target: ${executions:-?} executions in ${seconds} s (${per_second:-?}/s), ${coverage:-cov ?}, corpus of $inputs inputs, no crash"
  fi
done
exit $status
