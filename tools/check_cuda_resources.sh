#!/usr/bin/env bash
# Checks the nvcc build's kernels against the SM they are built for (sm_90):
#   - no kernel or device function spills registers to local memory;
#   - every launch configuration the [cuda] tests make fits the register file:
#     registers (allocated per thread in multiples of 8) x threads (in whole
#     warps) <= 65536, for the largest block each kernel is launched with;
#   - every kernel compiled is launched by some [cuda] test (a kernel without
#     one is unfinished);
#   - no kernel keeps more than 256 bytes a thread in local memory (ptxas's
#     stack frame: an array indexed at run time), except the fused
#     attention's build for any head width (D = 0, attention.cu): on an H200
#     those arrays made the fused step slower than the unfused one.
# The registers come from ptxas (-Xptxas=-v, kept by tools/nvcc_resources.sh
# as BUILD/**/*.ptxas.txt); the launch configurations from the emulated GPU's
# log of the [cuda] tests (ORDO_EMULATOR_LAUNCH_LOG, written by
# make test-emulated). A kernel is matched by its name without namespaces or
# template arguments, taking the most registers of its instantiations.
#
#   tools/check_cuda_resources.sh BUILD_DIR LAUNCH_LOG
set -euo pipefail

build=${1:?usage: tools/check_cuda_resources.sh BUILD_DIR LAUNCH_LOG}
launches=${2:?usage: tools/check_cuda_resources.sh BUILD_DIR LAUNCH_LOG}
readonly register_file=65536

mapfile -t reports < <(find "$build" -name '*.ptxas.txt' | sort)
if [[ ${#reports[@]} -eq 0 ]]; then
  echo "cuda resources: NOT CHECKED: $build holds no ptxas reports (it is not an nvcc build)"
  exit 0
fi
[[ -s "$launches" ]] || { echo "cuda resources: no launch log at $launches (run make test-emulated)" >&2; exit 1; }

# mangled-name registers spill-stores spill-loads stack-bytes is-kernel, one line per function.
functions=$(cat "${reports[@]}" | awk '
  /Function properties for/ { name = $NF; next }
  /bytes stack frame/ { stack[name] = $1; stores[name] = $5; loads[name] = $9; seen[name] = 1; next }
  /Compiling entry function/ { gsub(/\x27/, "", $7); entry = $7; kernel[entry] = 1; next }
  /Used [0-9]+ registers/ { for (i = 1; i <= NF; ++i) if ($i == "Used") regs[entry] = $(i + 1); seen[entry] = 1 }
  END { for (n in seen) print n, (n in regs ? regs[n] : 0), stores[n] + 0, loads[n] + 0, stack[n] + 0, (n in kernel) }')

# The demangled names reduced to the kernel's bare name, and whether it is
# ordo's (cub's kernels are its own business: the emulator stands in for cub).
bare_names=$(cut -d' ' -f1 <<<"$functions" | c++filt | sed 's/(anonymous namespace)/anon/g' | awk '{
  ours = index($0, "ordo::") > 0; out = ""; depth = 0
  for (i = 1; i <= length($0); ++i) {
    c = substr($0, i, 1)
    if (c == "<") depth++
    else if (c == ">") depth--
    else if (depth == 0) out = out c
  }
  sub(/\(.*/, "", out); n = split(out, parts, "::"); name = parts[n]; sub(/.* /, "", name); print name, ours }')

# Local memory: the demangled name (spaces as '_') and its stack frame.
local_memory=$(paste -d' ' <(cut -d' ' -f1 <<<"$functions" | c++filt | tr ' ' '_') <(cut -d' ' -f5 <<<"$functions") |
  awk '$1 ~ /ordo::/ && $1 !~ /attention_[a-z_]*kernel<0>/ && $2 > 256 {
    printf "LOCAL  %s: %d bytes of stack a thread (an array indexed at run time?)\n", $1, $2 }')
[[ -n $local_memory ]] && echo "$local_memory"

status=0
paste -d' ' <(echo "$bare_names") <(echo "$functions") | awk -v file="$launches" -v limit="$register_file" '
  BEGIN {
    while ((getline line < file) > 0) {
      split(line, f, "\t"); name = f[1]; sub(/<.*/, "", name)
      if (f[2] + 0 > threads[name] + 0) threads[name] = f[2] + 0
    }
  }
  {
    bare = $1; regs = $4 + 0
    if (regs > most[bare] + 0) most[bare] = regs
    if ($5 + $6 > 0) { printf "SPILL  %s (%s): %d bytes spill stores, %d bytes spill loads\n", bare, $3, $5, $6; bad++ }
    if ($7 + 0 > 0) stack[bare] = $7
    compiled[bare] = 1
    if ($8 == 1 && $2 == 1) kernels[bare] = 1
  }
  END {
    printf "%-34s %6s %8s %16s %8s\n", "kernel", "regs", "threads", "regs x threads", "stack B"
    for (name in threads) {
      if (!(name in compiled)) { printf "MISSING  %s is launched but ptxas reported no such kernel\n", name; bad++; continue }
      allocated = int((most[name] + 7) / 8) * 8
      warps = int((threads[name] + 31) / 32)
      used = allocated * warps * 32
      printf "%-34s %6d %8d %16d %8d%s\n", name, most[name], threads[name], used, stack[name] + 0, (used > limit ? "  OVER" : "")
      if (used > limit) bad++
      checked++
    }
    for (name in kernels)
      if (!(name in threads)) { printf "UNTESTED  %s is compiled but no [cuda] test launched it\n", name; bad++ }
    printf "cuda resources: %d launched kernels checked against a %d-register file, %d problems\n", checked, limit, bad + 0
    exit bad > 0
  }' || status=1
if [[ -n $local_memory ]]; then
  echo "cuda resources: $(wc -l <<<"$local_memory") kernels keep more than 256 bytes a thread in local memory"
  status=1
fi
exit $status
