#!/usr/bin/env bash
# Compile cost of the CPU device's kernels on the C path (LAZYGRAD_CPU_COMPILER=cc) with gcc and with
# clang: runs the demo on a cold kernel cache with each compiler and sums the compiler time that
# DEBUG=1 reports. Kernel speed with each: LAZYGRAD_CPU_COMPILER=cc CC=clang make bench. (The
# in-process compiler, the default where the build has it: bench_llvm_compile.)
set -euo pipefail
cd "$(dirname "$0")/.."
demo=./build/example_demo
[[ -x $demo ]] || { echo "build first: make build" >&2; exit 1; }
for cc in gcc clang; do
  command -v "$cc" >/dev/null || { echo "$cc: not installed"; continue; }
  cache=$(mktemp -d)
    LAZYGRAD_CPU_COMPILER=cc CC=$cc LAZYGRAD_CACHE=$cache DEBUG=1 "$demo" 2>&1 >/dev/null | grep '^realize:' |
    sed -E 's/.*, ([0-9]+) compiled in ([0-9.]+) ms.*/\1 \2/' |
    awk -v cc="$cc" '{n += $1; t += $2} END {printf "%-6s %3d kernels  %7.1f ms compiling  %6.1f ms per kernel\n", cc, n, t, t / n}'
  rm -rf "$cache"
done
