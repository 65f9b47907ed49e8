#!/usr/bin/env bash
# A machine without OpenCL, as the ICD loader sees it when no vendor is registered: `lazygrad info`
# lists CL as unavailable with the reason, and a suite run with DEVICE=CL skips every case, saying
# why, and passes. Usage: cl_missing.sh LAZYGRAD_CLI TEST_PROGRAM
set -u
cli=$1 suite=$2
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
export OCL_ICD_VENDORS=$empty OPENCL_VENDOR_PATH=$empty

info=$("$cli" info) || { echo "lazygrad info failed"; exit 1; }
line=$(grep -E '^  CL ' <<<"$info")
echo "lazygrad info: $line"
grep -q 'unavailable' <<<"$line" || { echo "CL is not listed as unavailable"; exit 1; }
grep -q 'no OpenCL' <<<"$line" || { echo "the line does not say why"; exit 1; }

out=$(DEVICE=CL "$suite" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "$out" | tail -20; echo "DEVICE=CL $suite failed ($rc) where CL is missing"; exit 1; }
grep -q 'DEVICE=CL is not here: .*no OpenCL' <<<"$out" || { echo "$out" | tail -20; echo "no skip reason"; exit 1; }
# gtest counts the cases of a run its environment skipped as passed; none of them may have started.
! grep -q '^\[ RUN' <<<"$out" || { echo "$out" | grep '^\[ RUN' | head -3; echo "some test ran"; exit 1; }
echo "DEVICE=CL $(basename "$suite"): every case skipped, saying why"
