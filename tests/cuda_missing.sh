#!/usr/bin/env bash
# A machine without CUDA, forced with LAZYGRAD_CUDA_DRIVER: a driver that is not there, and the
# toolkit's stub library (which answers CUDA_ERROR_STUB_LIBRARY) where the toolkit has one. Both
# count as absent: `lazygrad info` lists CUDA as unavailable with the reason, and a suite run with
# DEVICE=CUDA skips every case, saying why, and passes. Usage: cuda_missing.sh LAZYGRAD_CLI TEST_PROGRAM
set -u
cli=$1 suite=$2

check_absent() {  # driver, what the reason must say
  local driver=$1 reason=$2
  info=$(LAZYGRAD_CUDA_DRIVER=$driver "$cli" info) || { echo "lazygrad info failed"; exit 1; }
  line=$(grep -E '^  CUDA ' <<<"$info")
  echo "LAZYGRAD_CUDA_DRIVER=$driver lazygrad info: $line"
  grep -q 'unavailable' <<<"$line" || { echo "CUDA is not listed as unavailable"; exit 1; }
  grep -q "$reason" <<<"$line" || { echo "the line does not say '$reason'"; exit 1; }

  out=$(LAZYGRAD_CUDA_DRIVER=$driver DEVICE=CUDA "$suite" 2>&1); rc=$?
  [ $rc -eq 0 ] || { echo "$out" | tail -20; echo "DEVICE=CUDA $suite failed ($rc) without CUDA"; exit 1; }
  grep -q "DEVICE=CUDA is not here: .*$reason" <<<"$out" || { echo "$out" | tail -20; echo "no skip reason"; exit 1; }
  ! grep -q '^\[ RUN' <<<"$out" || { echo "$out" | grep '^\[ RUN' | head -3; echo "some test ran"; exit 1; }
  echo "DEVICE=CUDA $(basename "$suite"): every case skipped, saying why"
}

check_absent /nonexistent/libcuda.so.1 'no CUDA driver'
stub=${CUDA_PATH:-/usr/local/cuda}/lib64/stubs/libcuda.so
if [ -f "$stub" ]; then
  check_absent "$stub" 'stub library'
else
  echo "no stub driver at $stub: that half not checked"
fi
