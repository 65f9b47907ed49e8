#!/usr/bin/env bash
# Installs the Debian packages needed to build and test lazygrad. When all are present it only
# checks (fast), so `make build` and `make test` run it every time.
set -euo pipefail

# The build and the tests need these; the fixtures the tests read are committed. Extra packages
# can be named on the command line (`make fixtures` adds python3-torch and python3-numpy, `make bench`
# libopenblas-dev and python3-torch).
packages=(build-essential cmake libgtest-dev zlib1g-dev "$@")
# The CPU's in-process compiler, the default where the build finds it (clang's and LLVM 19's
# libraries: docs/devices.md); without them kernels are compiled by `cc` processes.
packages+=(llvm-19-dev libclang-cpp19-dev)
# The Python module and its tests (make test): pybind11, Debian's Python headers, numpy, pytest,
# and venv for `pip install .` (docs/python.md).
packages+=(pybind11-dev python3-dev python3-numpy python3-pytest python3-venv)

if ! command -v dpkg >/dev/null; then
  echo "install-deps: not a Debian system; make sure these are installed: ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  # dpkg -s also succeeds for removed packages that left config files, so check the status line.
  dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
