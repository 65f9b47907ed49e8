#!/usr/bin/env bash
# A device that flushes subnormal floats to zero (CL with CL_NO_DENORM=1: -cl-denorms-are-zero) skips
# the parity cases whose values include subnormals, saying so, and still runs the others.
# Usage: cl_flush_subnormals.sh TEST_MATH. Exit 77 (skipped) where there is no OpenCL device.
set -u
suite=$1
# exp_f32_edge expects exp(-100) = 3.8e-44, a subnormal float32; exp_f32 has none.
out=$(DEVICE=CL CL_NO_DENORM=1 FTZ=0 "$suite" --gtest_filter='*/exp_f32_edge:*/exp_f32' 2>&1); rc=$?
if grep -q 'DEVICE=CL is not here' <<<"$out"; then echo "no OpenCL device: skipped"; exit 77; fi
[ $rc -eq 0 ] || { echo "$out" | tail -20; echo "the suite failed ($rc)"; exit 1; }
grep -q 'flushes subnormal floats to zero' <<<"$out" || { echo "$out" | tail -20; echo "no skip reason"; exit 1; }
grep -q '^\[  SKIPPED \] .*exp_f32_edge' <<<"$out" || { echo "$out" | tail -20; echo "exp_f32_edge did not skip"; exit 1; }
grep -q '^\[       OK \] .*exp_f32 (' <<<"$out" || { echo "$out" | tail -20; echo "exp_f32 did not run"; exit 1; }
echo "CL_NO_DENORM=1: exp_f32_edge skipped (subnormal values), exp_f32 passed"
