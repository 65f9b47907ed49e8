# Thin wrapper over CMake. Targets: deps build demo charlm test lines bench sanitize format fixtures clean
# viz-screenshot webgpu-screenshots.
# `make test` works from a clean clone: it installs missing Debian packages (deps), configures,
# builds and runs CTest. Extra CMake options: make build CMAKE_ARGS="-DLAZYGRAD_BUILD_BENCH=OFF".

BUILD    ?= build
ASAN     ?= build-asan
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# The runtime's kernel cache (same rule as lazygrad::settings().cache_dir), for the summary line.
CACHE_DIR = $(or $(LAZYGRAD_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/lazygrad)
FORMAT_DIRS = include src apps tests bench examples

.PHONY: all deps build demo charlm test test-deps test-cl lines bench sanitize format clean fixtures fuzz-compiler viz-screenshot webgpu-screenshots

all: build

deps:
	@bash scripts/install-deps.sh

# Configuring every time is cheap and applies changed CMAKE_ARGS; cmake --build only rebuilds what changed.
build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# A first look (DEBUG=2: each kernel as it runs), then the LeNet-style CNN trained on Fashion-MNIST
# for one epoch, with its test accuracy, a checkpoint and a plot in $(BUILD)/demo/.
demo: build
	@bash scripts/install-deps.sh dataset-fashion-mnist
	DEBUG=2 ./$(BUILD)/example_demo
	mkdir -p $(BUILD)/demo
	./$(BUILD)/lazygrad train fashion-mnist --model cnn --epochs 1 --out $(BUILD)/demo

# A small character-level GPT trained on Debian's fortunes (the `fortunes` package, 2.5 MB of text)
# for 15 minutes: progress, the held-out loss, a checkpoint in $(BUILD)/charlm/ and a sample
# (docs/charlm.md).
charlm: build
	@bash scripts/install-deps.sh fortunes
	./$(BUILD)/lazygrad train charlm --text /usr/share/games/fortunes --out $(BUILD)/charlm

# After the tests: how many kernels this run compiled and the compiler's time (the budget to watch),
# from the log the runtime appends to in the cache folder.
# The training tests read Fashion-MNIST (Debian's dataset-fashion-mnist, 30 MB) and the Python
# tests compare with PyTorch (python3-torch); the `cl` suites run on PoCL (OpenCL on the CPU):
# installed here so that CI runs them instead of skipping them.
# The transformer milestone's test reads Debian's fortunes; VIZ's test loads its page in Debian's
# chromium (headless).
# `make viz-screenshot` copies that test's screenshot into docs/ (docs/viz.md shows it).
# The MPI tests (label mpi) run `lazygrad train --ddp` under OpenMPI's mpirun (openmpi-bin; lazygrad
# opens libmpi itself, without linking it: docs/multi.md).
# The suites run with the CPU's in-process compiler (clang's and LLVM's libraries, which `deps`
# installs before CMake configures) and again, label cc, with `cc` processes.
TEST_PACKAGES = dataset-fashion-mnist python3-torch pocl-opencl-icd ocl-icd-opencl-dev clinfo fortunes chromium \
                openmpi-bin libopenmpi-dev
test-deps:
	@bash scripts/install-deps.sh $(TEST_PACKAGES)
test: test-deps build
	@if [ -f '$(CACHE_DIR)/compile-log.tsv' ]; then wc -l < '$(CACHE_DIR)/compile-log.tsv'; else echo 0; fi > $(BUILD)/.compile-log-start
	ctest --test-dir $(BUILD) --output-on-failure -j 2
	@tail -n +$$(( $$(cat $(BUILD)/.compile-log-start) + 1 )) '$(CACHE_DIR)/compile-log.tsv' 2>/dev/null | \
	  awk -F'\t' '{n++; s+=$$2} END {printf "kernel compiles: %d kernels compiled in %.1f s of compiler time (cache %s)\n", n, s, "$(CACHE_DIR)"}'

viz-screenshot: test-deps build
	./$(BUILD)/test_viz --gtest_filter='Viz.ThePageRendersInHeadlessChromium'
	cp $(BUILD)/viz-screenshot.png docs/viz-screenshot.png

# The two pages `lazygrad export --webgpu` makes, as test_webgpu_export's headless Chromium shows
# them, copied into docs/images/ (docs/webgpu.md shows them).
webgpu-screenshots: test-deps build
	./$(BUILD)/test_webgpu_export --gtest_filter='*FashionMnistPage*:*Gpt2Page*'
	cp $(BUILD)/webgpu-fashion-mnist-page.png $(BUILD)/webgpu-gpt2-page.png docs/images/

# Every device-agnostic suite on OpenCL (DEVICE=CL), the parity suites whole. PoCL compiles each of
# their thousands of kernels with its own LLVM, so `make test` runs a chosen part (label cl) and this
# runs the rest (docs/devices.md, "What runs where").
CL_SUITES = test_autograd test_core_grads test_nn test_optim test_jit test_training_step test_grad_smoke \
            test_reductions test_math test_functional test_indexing test_linalg test_variable test_random \
            test_ops_torch
test-cl: build
	@bash scripts/install-deps.sh $(TEST_PACKAGES)
	@set -e; for t in $(CL_SUITES); do echo "== DEVICE=CL $$t"; \
	  DEVICE=CL FTZ=0 LAZYGRAD_TEST_FIXTURES=$(CURDIR)/tests/fixtures ./$(BUILD)/$$t --gtest_brief=1; done

# Regenerates tests/fixtures/ from PyTorch (Debian's python3-torch, run by Debian's own python3) and
# SentencePiece (python3-sentencepiece: tests/fixtures/spm_tokenizer.json).
fixtures:
	@bash scripts/install-deps.sh python3-torch python3-numpy python3-sentencepiece
	/usr/bin/python3 scripts/make_fixtures.py
	/usr/bin/python3 scripts/make_spm_fixtures.py > tests/fixtures/spm_tokenizer.json

# The compiler's differential fuzzer for FUZZ_SECONDS (default 900), from seed FUZZ_START (default: one
# past the range `make test` runs). Any failure prints the smallest failing program as C++.
FUZZ_SECONDS ?= $(if $(SECONDS),$(SECONDS),900)
FUZZ_START ?= 1000
fuzz-compiler: build
	./$(BUILD)/fuzz_compiler --seconds $(FUZZ_SECONDS) --start $(FUZZ_START)

lines:
	@bash scripts/lines.sh

# The peers of the benchmarks: OpenBLAS for bench_sgemm (linked when CMake finds it) and PyTorch,
# which bench_conv runs with Debian's python3. Installed before configuring, so CMake finds OpenBLAS.
# bench_mpi_all_reduce runs under OpenMPI's mpirun.
BENCH_PACKAGES = libopenblas-dev python3-torch openmpi-bin

bench:
	@bash scripts/install-deps.sh $(BENCH_PACKAGES)
	@$(MAKE) --no-print-directory build
	@set -e; found=0; for b in $(BUILD)/bench_*; do \
	  if [ -f "$$b" ] && [ -x "$$b" ]; then found=1; echo "== $$b"; "$$b"; fi; \
	done; [ $$found = 1 ] || echo "no bench programs (bench/*.cpp)"
	@if [ -d $(BUILD)/python/lazygrad ]; then echo "== bench/python_step.py"; \
	  PYTHONPATH=$(BUILD)/python /usr/bin/python3 bench/python_step.py --build $(BUILD); fi

# ASan + UBSan at -O1 with asserts on, built by clang in its own build dir so it never mixes with the
# Release build (which g++ builds: both compilers see the code). The fixture parity suites (numerics,
# run by `make test`) are left out to keep CI's time. The same library makes the libFuzzer targets of
# the file loaders (tests/fuzz), which then run FUZZ_RUNS inputs each from a fixed seed.
FUZZ_RUNS ?= 10000
sanitize:
	@bash scripts/install-deps.sh clang libclang-rt-14-dev
	cmake -S . -B $(ASAN) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
	  -DLAZYGRAD_SANITIZE=ON -DLAZYGRAD_BUILD_FUZZERS=ON -DLAZYGRAD_FIXTURE_SUITES=OFF -DLAZYGRAD_BUILD_BENCH=OFF \
	  $(CMAKE_ARGS)
	cmake --build $(ASAN) -j $(JOBS)
	UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(ASAN) --output-on-failure -j 2
	bash scripts/run-fuzzers.sh $(ASAN) $(FUZZ_RUNS)

format:
	find $(FORMAT_DIRS) -path tests/fixtures -prune -o -type f \( -name '*.h' -o -name '*.cpp' \) -print \
	  | xargs -r clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN)
