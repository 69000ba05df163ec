#!/usr/bin/env bash
# tools/gpu_check.sh — everything a person with an NVIDIA GPU runs to check
# ordo's CUDA backend, in one go, ending with a table:
#
#   1. build for the GPU present (its compute capability from nvidia-smi);
#   2. the [cuda] kernel tests;
#   3. the same under compute-sanitizer: memcheck, racecheck, synccheck, initcheck;
#   4. the CPU-vs-GPU training step of every PE variant and option family,
#      MLM+NSP, the causal decoder and a 20-step run ([cuda][step]);
#   5. with two GPUs or more, mpirun -np 2 ordo pretrain on two of them (NCCL)
#      against one process with the global batch ([mpi][cuda]);
#   6. the step benchmark (`ordo bench step`: the reference path and the
#      default one, launches, host syncs and device allocations per step; on a GPU
#      the step's measured time, after with each part changed (--parts) and
#      one step's device time kernel by kernel (--kernel-times); on the
#      emulated GPU its bytes, FLOPs, time and MFU MODELED on an H100) — with
#      a real GPU at tiny 32 x 64, base 32 x 128 and 8 x 512, beside
#   7. PyTorch on the same GPU (scripts/bench_torch_gpu.py: HF BERT in bf16
#      autocast with SDPA attention and fused AdamW, eager and torch.compile)
#      at the same shapes, where python3 has torch and transformers.
#
# Usage: tools/gpu_check.sh [--emulate] [--build DIR] [--prebuilt] [--jobs N]
#   --emulate   the emulated GPU (ORDO_CUDA=emulate: the .cu kernels on the CPU
#               with CUDA's execution model); chosen by itself, and said so, where
#               no GPU answers nvidia-smi. compute-sanitizer needs a real GPU: its
#               four checks are reported "skipped", never "ok"; the emulator's own
#               race, conflict, initcheck, bounds and poison checks run with every
#               test instead (ORDO_EMULATOR_CHECKS). CI runs this mode.
#   --build DIR the build folder (default build-gpu, or build-emulate)
#   --prebuilt  use the ordo and ordo_tests already in --build DIR (built
#               elsewhere for this GPU, say on a node with the -dev packages
#               that a bare GPU node lacks) instead of building
# ORDO_GPU_CHECK_TIMEOUT=SECONDS stops each check at that limit (reported as
# "FAILED (exit 124)"), so a lease of fixed length still ends with the table.
# Logs go to $OUT when it is set (the project's GPU-lending tool collects it),
# else to gpu_check_logs/. Exit status 1 if any check failed.
# The emulator's schedule comes from ORDO_EMULATOR_SCHEDULE, as for the tests.
set -uo pipefail
cd "$(dirname "$0")/.."

emulate=0 prebuilt=0 build="" jobs=$(nproc 2>/dev/null || echo 2)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --emulate) emulate=1 ;;
    --build) build=${2:?--build needs a folder}; shift ;;
    --prebuilt) prebuilt=1 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [[ $emulate == 0 ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no GPU answers nvidia-smi: checking the emulated GPU instead (--emulate)"
  emulate=1
fi

logs=${OUT:-gpu_check_logs}
mkdir -p "$logs"
results=()
failed=0

# check NAME LOG COMMAND...: runs it, its output into LOG, and records the result.
check() {
  local name=$1 log=$logs/$2 start=$SECONDS status
  shift 2
  echo "gpu_check: $name"
  if [[ ${ORDO_GPU_CHECK_TIMEOUT:-0} -gt 0 ]]; then
    timeout "$ORDO_GPU_CHECK_TIMEOUT" "$@" >"$log" 2>&1
  else
    "$@" >"$log" 2>&1
  fi
  status=$?
  local result=ok
  if [[ $status != 0 ]]; then result="FAILED (exit $status)"; failed=1; tail -n 20 "$log"; fi
  results+=("$name|$result|$((SECONDS - start))|$log")
}
skip() { results+=("$1|skipped: $2|0|-"); }

if [[ $emulate == 1 ]]; then
  build=${build:-build-emulate}
  device="emulated GPU on the CPU (schedule ${ORDO_EMULATOR_SCHEDULE:-forward}, checks ${ORDO_EMULATOR_CHECKS:-all})"
  build_command="cmake -S . -B '$build' -DORDO_CUDA=emulate && cmake --build '$build' -j $jobs"
  # Small sizes: the emulator runs each CUDA thread as a fiber.
  bench=(--config tiny --device cuda --batch 2 --length 16 --steps 1 --warmup 1)
else
  build=${build:-build-gpu}
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
  device="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1) (sm_$cap)"
  build_command="cmake -S . -B '$build' -DORDO_CUDA=on '-DORDO_CUDA_ARCHITECTURES=$cap-real' && cmake --build '$build' -j $jobs"
  # Measured only: the MODELED table's CPU recording of base is minutes of a
  # GPU lease (any machine prints it: ordo bench step --device cpu).
  bench=(--device cuda --no-model --parts --kernel-times)
fi
if [[ $prebuilt == 1 ]]; then
  skip "build" "--prebuilt: $build/ordo and $build/ordo_tests as given"
else
  check "build" build.log bash -c "$build_command"
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
tests=$build/ordo_tests

if [[ -x $tests ]]; then
  # The 200-step bf16 run ([bf16]) is long on the emulated GPU, and so are
  # the launches past the grid caps ([grid]: a million threads and more
  # each, about 40 s of the CPU; the emulator's race checks go by barriers,
  # not by the order the threads ran in): make test-emulated's [cuda] pass
  # has run them once already.
  kernel_tests="[cuda]~[step]~[mpi]"
  [[ $emulate == 1 ]] && kernel_tests+="~[bf16]~[grid]"
  check "[cuda] kernel tests" cuda_tests.log "$tests" --require-gpu "$kernel_tests"
  for tool in memcheck racecheck synccheck initcheck; do
    if [[ $emulate == 1 ]]; then
      skip "compute-sanitizer $tool" "no GPU (emulator's checks ran)"
    elif ! command -v compute-sanitizer >/dev/null 2>&1; then
      skip "compute-sanitizer $tool" "compute-sanitizer not found (CUDA toolkit's bin/)"
    else
      # API errors are not the tools' findings here: the [graphs] tests provoke
      # them on purpose (a capture refused) and check them; every other CUDA
      # call's status is checked by ordo itself.
      check "compute-sanitizer $tool" "sanitizer_$tool.log" \
        compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 1 "$tests" --require-gpu \
        "[cuda]~[step]~[mpi]~[bf16]"
    fi
  done
  check "CPU vs GPU training step, every variant" step_compare.log "$tests" --require-gpu "[cuda][step]"
  if [[ $emulate == 1 ]]; then
    skip "mpirun -np 2 on 2 GPUs (NCCL)" "run by make test-emulated's [cuda] tests"
  elif [[ $(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l) -lt 2 ]]; then
    skip "mpirun -np 2 on 2 GPUs (NCCL)" "one GPU: NCCL needs a GPU per rank"
  else
    check "mpirun -np 2 on 2 GPUs (NCCL)" data_parallel_cuda.log "$tests" --require-gpus 2 "[mpi][cuda]"
  fi
  check "ordo bench step" bench_step.log "$build/ordo" bench step "${bench[@]}"
  if [[ $emulate == 1 ]]; then
    skip "PyTorch's step beside it" "no GPU"
  elif ! python3 -c 'import torch, transformers; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    skip "PyTorch's step beside it" "python3 has no CUDA torch or no transformers"
  else
    check "PyTorch's step beside it" torch_step.log bash -c \
      "for shape in tiny:32:64 base:32:128 base:8:512; do IFS=: read -r name batch length <<<\"\$shape\";
         python3 scripts/bench_torch_gpu.py --config configs/\$name.json --name \$name --batch \$batch \
           --length \$length || exit 1; done"
  fi
else
  skip "every test" "the build failed"
fi

echo
echo "gpu_check on $device — logs in $logs/"
printf '%-42s %-34s %8s  %s\n' check result seconds log
for row in "${results[@]}"; do
  IFS='|' read -r name result seconds log <<<"$row"
  printf '%-42s %-34s %8s  %s\n' "$name" "$result" "$seconds" "$log"
done
[[ -f $logs/bench_step.log ]] && { echo; cat "$logs/bench_step.log"; }
[[ -f $logs/torch_step.log ]] && { echo; echo "PyTorch on the same GPU (ms per step, measured):"; cat "$logs/torch_step.log"; }
exit $failed
