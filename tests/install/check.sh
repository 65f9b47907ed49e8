#!/usr/bin/env bash
# Installs lazygrad into a temporary prefix, then builds and runs tests/install (a separate CMake
# project using find_package(lazygrad)) against it. It must print 8.
#   tests/install/check.sh            configure, build and install a fresh Release build first
#   tests/install/check.sh BUILD_DIR  install an existing, already built build dir (what CTest does)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)

if [[ $# -ge 1 ]]; then
  cmake --install "$1" --prefix "$tmp/prefix" >/dev/null
else
  cmake -S "$root" -B "$tmp/lazygrad-build" -DCMAKE_BUILD_TYPE=Release \
    -DLAZYGRAD_BUILD_TESTS=OFF -DLAZYGRAD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$tmp/lazygrad-build" -j "$jobs" >/dev/null
  cmake --install "$tmp/lazygrad-build" --prefix "$tmp/prefix" >/dev/null
fi

cmake -S "$here" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" -j "$jobs" >/dev/null
out=$("$tmp/consumer/consumer")
if [[ "$out" != "8" ]]; then
  echo "install check: expected 8, got '$out'" >&2
  exit 1
fi
echo "install check: find_package(lazygrad) consumer printed 8"
