"""Devices from Python (docs/devices.md): placing tensors, .to(), .device, numpy() of a CL tensor."""
import numpy as np
import pytest

import lazygrad
from lazygrad import Device, Tensor
from lazygrad import _C

CL_MISSING = next((detail for name, ok, detail in _C.devices() if name == "CL" and not ok), None)
needs_cl = pytest.mark.skipif(CL_MISSING is not None, reason=f"no OpenCL device: {CL_MISSING}")


def test_names_and_the_default():
    assert Device.canonicalize("cl:0") == "CL" and Device.canonicalize("cpu:2") == "CPU:2"
    assert Device.DEFAULT == "CPU" and "CPU" in Device.available()
    with pytest.raises(ValueError, match="unknown"):
        Tensor([1.0], device="tpu")


def test_virtual_cpu_devices_and_ops_across_devices():
    a = Tensor([1.0, 2.0], device="CPU:1")
    assert a.device == "CPU:1" and (a * 2).device == "CPU:1"
    with pytest.raises(lazygrad.LazygradError, match="CPU and CPU:1|CPU:1 and CPU"):
        (Tensor([1.0, 2.0]) + a).realize()
    np.testing.assert_array_equal((a.to("CPU") + Tensor([1.0, 1.0])).numpy(), [2.0, 3.0])


@needs_cl
def test_rand_on_cl_reads_back():
    t = Tensor.rand(4, 4, device="CL")
    assert t.device == "CL"
    v = t.numpy()
    assert v.shape == (4, 4) and ((v >= 0) & (v < 1)).all()


@needs_cl
def test_to_cl_and_back_keeps_values():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    t = Tensor(x, device="CL")
    assert t.device == "CL"
    np.testing.assert_allclose((t.relu() * 2).sum(1).numpy(), (np.maximum(x, 0) * 2).sum(1), rtol=1e-6)
    back = t.T.to("CPU")
    assert back.device == "CPU"
    np.testing.assert_array_equal(back.numpy(), x.T)
    w = Tensor(x)
    w.to_("CL")
    assert w.device == "CL" and (w + t).device == "CL"


def test_sharded_tensors_have_a_device_tuple():
    # tinygrad's multi-device API: shard splits along an axis, the device is a tuple, numpy gathers.
    x = np.arange(21, dtype=np.float32).reshape(7, 3)
    devices = ("CPU", "CPU:1", "CPU:2")
    s = Tensor(x).shard(devices, axis=0)
    assert s.device == devices and s.shape == (7, 3)
    np.testing.assert_array_equal(s.numpy(), x)
    np.testing.assert_allclose((s * 2).sum(axis=0).numpy(), (x * 2).sum(axis=0))
    np.testing.assert_array_equal(s.to("CPU:1").numpy(), x)
    w = Tensor(np.ones((3, 2), dtype=np.float32))
    w.shard_(devices)
    assert w.device == devices
    np.testing.assert_allclose((s @ w).numpy(), x @ np.ones((3, 2), dtype=np.float32))
    with pytest.raises(lazygrad.LazygradError, match="fewer than the 3 devices"):
        Tensor([[1.0, 2.0]]).shard(devices, axis=0)
