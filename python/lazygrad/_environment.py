"""What `import lazygrad` does with tinygrad's environment variables: CPU=1, CL=1 (GPU=1, its old
name), CUDA=1 (CLANG=1: CPU) choose the default device as in tinygrad, or raise at import when that
device is missing; tinygrad devices lazygrad lacks (METAL=1, AMD=1, ...) raise; VIZ=1 (tinygrad's
graph viewer, which lazygrad lacks) says so once on stderr. DEVICE=name is read by the C++ runtime."""
import os
import sys

from lazygrad import _C
from lazygrad._C import LazygradValueError

_DEVICES = {"CPU": "CPU", "CLANG": "CPU", "CL": "CL", "GPU": "CL", "CUDA": "CUDA"}
_MISSING = ("METAL", "AMD", "NV", "HIP", "QCOM", "WEBGPU", "LLVM", "DSP", "REMOTE")


def _on(name):
    v = os.environ.get(name, "")
    return v not in ("", "0")


def apply():
    if _on("VIZ"):
        print("lazygrad: VIZ is not supported (tinygrad's graph viewer has no lazygrad counterpart); "
              "DEBUG=2..5 prints kernels, schedules and source instead", file=sys.stderr)
    missing = [n for n in _MISSING if _on(n)]
    if missing:
        raise LazygradValueError(f"{missing[0]}=1: lazygrad has no {missing[0]} device (it has CPU, CL, CUDA; "
                                 "docs/devices.md)")
    chosen = [n for n in _DEVICES if _on(n)]
    if not chosen:
        return
    targets = {_DEVICES[n] for n in chosen}
    if os.environ.get("DEVICE"):
        targets.add(_C.canonical_device(os.environ["DEVICE"]).split(":")[0])
    if len(targets) > 1:
        raise LazygradValueError(f"{', '.join(n + '=' + os.environ[n] for n in chosen)}"
                                 f"{' and DEVICE=' + os.environ['DEVICE'] if os.environ.get('DEVICE') else ''} "
                                 f"choose different default devices ({', '.join(sorted(targets))})")
    if not os.environ.get("DEVICE"):
        try:
            _C.set_default_device(_DEVICES[chosen[0]])
        except _C.LazygradError as e:
            raise type(e)(f"{chosen[0]}={os.environ[chosen[0]]} chooses the {_DEVICES[chosen[0]]} device, which "
                          f"cannot be used here: {e}") from e
