"""tinygrad's environment variables at import: VIZ=1 says once that it is unsupported, DEVICE=,
CPU=1/CL=1/CUDA=1 choose the default device (or fail at import, naming why), tinygrad devices
lazygrad lacks are refused."""
import os
import subprocess
import sys

import pytest

import lazygrad


def run(env, code="import lazygrad; print(lazygrad.Device.DEFAULT, lazygrad.Tensor([1.0]).device)"):
    full = {k: v for k, v in os.environ.items() if k not in ("DEVICE", "VIZ", "CPU", "CL", "CUDA", "GPU", "METAL")}
    return subprocess.run([sys.executable, "-c", code], env={**full, **env}, capture_output=True, text=True)


def test_viz_is_reported_once_on_stderr():
    r = run({"VIZ": "1"}, "import lazygrad, lazygrad.nn; import importlib; print(lazygrad.Tensor([2]).item())")
    assert r.returncode == 0 and r.stdout.strip() == "2"
    assert r.stderr.count("VIZ is not supported") == 1
    assert "VIZ" not in run({"VIZ": "0"}).stderr


def test_device_and_cpu_choose_the_default():
    assert run({"DEVICE": "cpu"}).stdout.split() == ["CPU", "CPU"]
    assert run({"CPU": "1"}).stdout.split() == ["CPU", "CPU"]
    assert run({"CPU": "1", "DEVICE": "CPU"}).stdout.split() == ["CPU", "CPU"]


def test_an_unknown_device_fails_at_import():
    r = run({"DEVICE": "TPU"})
    assert r.returncode != 0 and "TPU" in r.stderr


@pytest.mark.parametrize("name", ["CL", "CUDA"])
def test_cl_and_cuda_select_or_say_why_not(name):
    r = run({name: "1"})
    if name in lazygrad.Device.available():
        assert r.returncode == 0 and r.stdout.split() == [name, name]
    else:
        assert r.returncode != 0 and f"{name}=1 chooses the {name} device" in r.stderr, r.stderr


def test_tinygrad_devices_lazygrad_lacks_are_refused():
    r = run({"METAL": "1"})
    assert r.returncode != 0 and "no METAL device" in r.stderr


def test_two_different_choices_are_refused():
    r = run({"CPU": "1", "CL": "1"})
    assert r.returncode != 0 and "different default devices" in r.stderr
