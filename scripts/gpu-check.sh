#!/usr/bin/env bash
# The CUDA check on a machine with an NVIDIA GPU, in one run of under 10 minutes: build, the suites
# with DEVICE=CUDA, the benchmarks, and one table (docs/devices.md, "CUDA"; docs/benchmarks.md).
#
#   scripts/gpu-check.sh --prepare   on a machine with the packages (this project's CI image): copies
#                                    GoogleTest's sources and Fashion-MNIST into .gpu-carry/ (ignored
#                                    by git, about 34 MB), and the check's programs if build-gpu holds
#                                    them (7 MB), to travel with the tree to a GPU machine that reaches
#                                    no package registry
#   scripts/gpu-check.sh [OUT_DIR]   on the GPU machine: OUT_DIR defaults to $OUT, else gpu-check-out
#
# For a shorter rerun: GPU_CHECK_TESTS (a ctest regex; default ^cuda_test_) and GPU_CHECK_FUZZ_S
# (the fuzzer's seconds of new seeds; 0 skips the fuzzer).
#
# Each section writes its file into OUT_DIR as soon as it ends (info.txt, build.txt, suite.txt,
# bench_cuda.txt, bench_train.txt, bench_gpt2.txt, bench_sd.txt, fuzz.txt, table.md), and each has a
# time limit (configure 30 s, build 180 s, suites 150 s, the benches 25, 60, 35 and 150 s (Stable
# Diffusion), the fuzzer 40 and 70 s), so a run cut short still reports what it reached. Nothing is installed:
# CMake is configured directly (no apt-get), GPT-2 124M gets random weights (bench_gpt2), and
# PyTorch's figures appear only where the machine's python3 has a PyTorch with CUDA (cuBLAS is
# opened directly by bench_cuda). Where the machine cannot configure or build, the programs
# --prepare built here (build-gpu) run instead, and the table says so.
set -uo pipefail
cd "$(dirname "$0")/.."
carry=.gpu-carry
suites="test_autograd test_core_grads test_nn test_optim test_jit test_training_step test_grad_smoke test_ops_torch
        test_math test_api_math test_reductions test_indexing test_api_index test_linalg test_functional test_gpt2
        test_tensor_cores"
programs="lazygrad bench_cuda bench_gpt2 bench_train_epoch bench_stable_diffusion_step fuzz_compiler $suites"

if [ "${1:-}" = "--prepare" ]; then
  rm -rf "$carry" && mkdir -p "$carry"
  cp -r /usr/src/googletest "$carry/googletest" || { echo "no /usr/src/googletest (apt-get install googletest)"; exit 1; }
  cp -r /usr/share/datasets/fashion-mnist "$carry/fashion-mnist" ||
    { echo "no Fashion-MNIST (apt-get install dataset-fashion-mnist)"; exit 1; }
  # The same programs built here, for a machine whose toolchain cannot configure or build them
  # (no zlib headers, say): the run then uses these and says so.
  if [ -x "${GPU_CHECK_BUILD:-build-gpu}/lazygrad" ]; then
    (cd "${GPU_CHECK_BUILD:-build-gpu}" && tar cJf "../$carry/prebuilt.tar.xz" $programs) ||
      { echo "build the check's programs first: cmake --build build-gpu --target $programs"; exit 1; }
  fi
  du -sh "$carry"/*
  exit 0
fi

out=${1:-${OUT:-gpu-check-out}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
start=$SECONDS
jobs=$(nproc)
build=${GPU_CHECK_BUILD:-build-gpu}  # another build folder: to try the script where one is built
export LAZYGRAD_CACHE=$PWD/$build/kernel-cache  # cold: every kernel is compiled by NVRTC here
note() { echo "== $* ($((SECONDS - start)) s)" | tee -a "$out/summary.txt"; }

# ---- the machine ----
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 ||
    echo "nvidia-smi: not found"
  grep -m1 'model name' /proc/cpuinfo
  echo "cores: $jobs"
} >"$out/info.txt" 2>&1
note "info"

# ---- build ----
gtest=()
[ -d "$carry/googletest" ] && gtest=(-DLAZYGRAD_GTEST_SOURCE_DIR="$PWD/$carry/googletest")
if timeout 30 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYGRAD_PYTHON=OFF "${gtest[@]}" \
  >"$out/build.txt" 2>&1 &&
  timeout 180 cmake --build "$build" -j "$jobs" --target gpu_check_programs >>"$out/build.txt" 2>&1; then
  note "build: done"
  prebuilt=
elif [ -f "$carry/prebuilt.tar.xz" ]; then
  tail -30 "$out/build.txt"
  mkdir -p "$build" && tar xJf "$carry/prebuilt.tar.xz" -C "$build"
  prebuilt=1
  note "build: FAILED (build.txt); running the programs built by --prepare"
else
  tail -30 "$out/build.txt"
  note "build: FAILED (build.txt)"
  exit 1
fi
"$build/lazygrad" info >>"$out/info.txt" 2>&1
grep -E '^  CUDA' "$out/info.txt"

# PyTorch's figures need a Python that has it with CUDA: Debian's, else the first python3 on the PATH.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null && python3 -c 'import torch' 2>/dev/null; then
  LAZYGRAD_TORCH_PYTHON=$(command -v python3)
  export LAZYGRAD_TORCH_PYTHON
fi
echo "PyTorch from: ${LAZYGRAD_TORCH_PYTHON:-/usr/bin/python3}" >>"$out/info.txt"

# ---- the suites on CUDA ----
if [ -z "$prebuilt" ]; then
  timeout 150 ctest --test-dir "$build" -R "${GPU_CHECK_TESTS:-^cuda_test_}" -j "$jobs" --output-on-failure \
    >"$out/suite.txt" 2>&1
else  # no CTest files: each suite whole, in parallel, its output kept where it fails
  for s in $suites; do
    (DEVICE=CUDA FTZ=0 LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures timeout 150 "$build/$s" >"$out/$s.log" 2>&1 &&
      echo "PASSED $s" || { echo "FAILED $s"; tail -60 "$out/$s.log"; }) &
  done >"$out/suite.txt" 2>&1
  wait
  echo "$(grep -c '^PASSED' "$out/suite.txt") suites passed, $(grep -c '^FAILED' "$out/suite.txt") failed" >>"$out/suite.txt"
fi
suite=$(grep -E 'tests passed|tests failed|suites passed' "$out/suite.txt" | tail -1)
[ -n "$suite" ] && suite="$suite ($(grep -c '(Skipped)' "$out/suite.txt") of them skipped)"
note "suite: ${suite:-cut short (suite.txt)}"

# ---- benchmarks ----
DEVICE=CUDA timeout 25 "$build/bench_cuda" --n 4096 >"$out/bench_cuda.txt" 2>&1
note "bench_cuda: exit $?"
DEVICE=CUDA timeout 60 "$build/bench_train_epoch" --model both --steps 20 --data "$carry/fashion-mnist" \
  >"$out/bench_train.txt" 2>&1
note "bench_train_epoch: exit $?"
DEVICE=CUDA timeout 35 "$build/bench_gpt2" --prompt 32 --decode 32 --reps 2 >"$out/bench_gpt2.txt" 2>&1
note "bench_gpt2: exit $?"

# ---- Stable Diffusion v1.x: one sampler step (the UNet on a batch of 2) at 256 and 512 pixels, against
# PyTorch on CUDA (the reference network, the same weights); its own cap of 150 s: the 3.4 GB of
# random weights are made and written once (into the build folder), then each size compiles and runs.
DEVICE=CUDA timeout 150 "$build/bench_stable_diffusion_step" --sizes 256,512 --reps 2 \
  --weights "$build/sd_unet_bench.safetensors" >"$out/bench_sd.txt" 2>&1
note "bench_stable_diffusion_step: exit $?"

# ---- the compiler's differential fuzzer on CUDA: the seeds found on the CPU, then new ones ----
found=$(grep 'set(fuzz_found_seeds' CMakeLists.txt | grep -oE '[0-9]+(,[0-9]+)+')
fuzz_s=${GPU_CHECK_FUZZ_S:-50}
if [ "$fuzz_s" -gt 0 ]; then
  DEVICE=CUDA FTZ=0 timeout 40 "$build/fuzz_compiler" --device CUDA --seeds "$found" --no-minimize \
    >"$out/fuzz.txt" 2>&1
  note "fuzz, found seeds: exit $?"
  DEVICE=CUDA FTZ=0 timeout $((fuzz_s + 20)) "$build/fuzz_compiler" --device CUDA --seconds "$fuzz_s" --start 0 \
    --no-minimize >>"$out/fuzz.txt" 2>&1
  note "fuzz, $fuzz_s s from seed 0: exit $?"
fi

# ---- one table ----
{
  echo "GPU: $(sed -n 2p "$out/info.txt")"
  echo
  echo "| check | result |"
  echo "|---|---|"
  echo "| suites, DEVICE=CUDA | ${suite:-cut short}${prebuilt:+ (programs built by --prepare)} |"
  grep -sE '^(fuzz|[0-9]+ programs|seeds|FAIL)' "$out/fuzz.txt" | head -8 | sed 's/^/| fuzz_compiler | /; s/$/ |/'
  grep -E '^matmul|^bandwidth' "$out/bench_cuda.txt" | sed 's/^/| bench_cuda | /; s/$/ |/'
  grep -E '^(mlp|cnn) ' "$out/bench_train.txt" | sed 's/^/| train step (ms, lazygrad vs PyTorch) | /; s/$/ |/'
  grep -E '^(lazygrad|PyTorch|ratio) |^decode vs bound|^read bandwidth' "$out/bench_gpt2.txt" |
    sed 's/^/| GPT-2 124M batch 1 | /; s/$/ |/'
  grep -E '^ +(256|512) ' "$out/bench_sd.txt" |
    sed 's/^ */| Stable Diffusion step (size, lazygrad first and best s, PyTorch first and best s, ratio, diff) | /; s/$/ |/'
  grep -h '^skip:' "$out"/bench_*.txt | sed 's/^/| a bench skipped | /; s/$/ |/'
  echo
  echo "columns: bench_cuda: lazygrad, cuBLAS, ratio (lazygrad's speed over cuBLAS's), max err;"
  echo "bench_train_epoch: its table's columns (bench/train_epoch.cpp); bench_gpt2: prompt, prefill, decode tok/s"
  echo "whole run: $((SECONDS - start)) s"
} >"$out/table.md"
cat "$out/table.md"
