#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz (the loaders of outside files) for a fixed number of
# mutated inputs from a fixed seed, over the committed seeds (tests/fixtures) and the ones
# scripts/make_fuzz_seeds.py writes. CI runs this on the sanitizer build (`make sanitize`), so a
# loader change that crashes, reads out of bounds or hangs on some input fails the run. Prints each
# target's inputs and seconds; a failure keeps its input in BUILD_DIR/fuzz-artifacts and prints the
# fuzzer's report.
#
#   scripts/run-fuzzers.sh BUILD_DIR [RUNS]     (RUNS: inputs per target, default $FUZZ_RUNS or 10000)
set -euo pipefail

build=$(cd "$1" && pwd)
runs=${2:-${FUZZ_RUNS:-10000}}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

/usr/bin/python3 "$root/scripts/make_fuzz_seeds.py" "$work/seeds"
declare -A seeds=(
  [safetensors]="$root/tests/fixtures/safetensors"
  [gguf]="$root/tests/fixtures/gguf"
  [gpt2_tokenizer]="$work/seeds/gpt2_tokenizer"
  [hf_tokenizer]="$work/seeds/hf_tokenizer"
  [gguf_tokenizer]="$work/seeds/gguf_tokenizer"
  [llama_config]="$work/seeds/llama_config $root/tests/fixtures/gguf"
  [safetensors_folder]="$work/seeds/safetensors_folder"
)

failed=()
total=$SECONDS
for target in safetensors gguf gpt2_tokenizer hf_tokenizer gguf_tokenizer llama_config safetensors_folder; do
  exe="$build/fuzz_$target"
  if [[ ! -x $exe ]]; then
    echo "run-fuzzers: $exe is missing (configure with -DLAZYGRAD_BUILD_FUZZERS=ON and clang)" >&2
    exit 1
  fi
  mkdir -p "$work/corpus-$target"
  start=$SECONDS
  # -timeout: one input taking 30 s is a hang; -rss_limit_mb: a loader must not allocate without bound.
  # shellcheck disable=SC2086  # the seed folders are a list
  if "$exe" -runs="$runs" -seed=1 -max_len=8192 -timeout=30 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$target-" "$work/corpus-$target" ${seeds[$target]} >"$work/$target.log" 2>&1; then
    printf '  fuzz_%-20s %6d inputs %5ds  ok\n' "$target" "$runs" $((SECONDS - start))
  else
    printf '  fuzz_%-20s %6d inputs %5ds  FAILED\n' "$target" "$runs" $((SECONDS - start))
    tail -n 60 "$work/$target.log"
    failed+=("$target")
  fi
done
echo "run-fuzzers: ${#failed[@]} of 7 targets failed, $((SECONDS - total)) s in all (inputs kept in $artifacts)"
[[ ${#failed[@]} -eq 0 ]]
