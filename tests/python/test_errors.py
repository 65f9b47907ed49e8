"""C++ errors become Python exceptions with the C++ message; bad Python arguments are TypeErrors,
bad values the Python layer checks are ValueErrors; nothing crashes the interpreter."""
import subprocess
import sys

import numpy as np
import pytest

from lazygrad import Device, GlobalCounters, LazygradError, Tensor, dtypes, nn


def test_hierarchy():
    assert issubclass(LazygradError, RuntimeError)


@pytest.mark.parametrize(
    "fn,match",
    [
        (lambda: Tensor.ones(2, 3) + Tensor.ones(4, 5), "add"),
        (lambda: Tensor.ones(2, 3) @ Tensor.ones(2, 3), "matmul"),
        (lambda: Tensor.ones(2, 3).reshape(4, 2), "reshape"),
        (lambda: Tensor.ones(2, 3).permute(0, 0), "permute"),
        (lambda: Tensor.ones(2, 3).sum(5), "sum"),
        (lambda: Tensor.ones(2, 3).item(), "item"),
        (lambda: Tensor([1, 2]).requires_grad_(), "requires_grad"),
        (lambda: Tensor.ones(2, 3).conv2d(Tensor.ones(4, 5, 3, 3)), "conv"),
        (lambda: Tensor.ones(2, 2).cat(Tensor.ones(3, 3)), "cat"),
        (lambda: Tensor.ones(3).backward(), "backward"),
    ],
)
def test_lazygrad_error(fn, match):
    with pytest.raises(LazygradError, match=match):
        fn()


@pytest.mark.parametrize(
    "fn",
    [
        lambda: Tensor("abc"),
        lambda: Tensor(object()),
        lambda: Tensor([1, 2], dtype="complex"),
        lambda: Tensor([1, 2], dtype=3.5),
        lambda: Tensor(np.array([1 + 2j])),
        lambda: Tensor(np.array(["a"])),
        lambda: Tensor.zeros("a"),
        lambda: Tensor.zeros(2.5),
        lambda: Tensor.ones(2) + "x",
        lambda: Tensor.ones(2).sum(axis="x"),
        lambda: Tensor.ones(2).reshape("x"),
        lambda: Tensor.full((2,), "x"),
        lambda: Tensor.ones(2).clip(min_="a"),
        lambda: bool(Tensor([1.0])),
        lambda: Tensor.ones(2).sum(axis=0, dim=0),
        lambda: Tensor.ones(2).gather("a", Tensor([0])),
    ],
)
def test_type_error(fn):
    with pytest.raises(TypeError):
        fn()


@pytest.mark.parametrize(
    "fn",
    [
        lambda: Tensor([1.0], device="GPU"),
        lambda: Tensor.zeros(2, device="tpu"),
        lambda: Tensor([1.0]).to("METAL"),
        lambda: Tensor.ones(2).pad(((1, 1), (1, 1)), mode="reflect"),  # two pairs for one dimension
        lambda: Tensor.ones(1, 1, 4, 4).avg_pool2d(dilation=2),
        lambda: Tensor(2**64),
        lambda: Tensor([[1, 2], [3]]),  # ragged
        lambda: Tensor.ones(2, 2).shrink(((0, 1),)),
    ],
)
def test_value_error(fn):
    with pytest.raises(ValueError):
        fn()


def test_a_known_device_that_is_not_here_says_why():
    # CUDA is a device lazygrad knows; without a GPU (or its driver) using it is an error naming why.
    if "CUDA" in Device.available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(LazygradError, match="CUDA: no "):
        Tensor.zeros(2, device="cuda").realize()


def test_errors_leave_the_interpreter_usable():
    t = Tensor.ones(2, 3)
    for _ in range(3):
        with pytest.raises(LazygradError):
            (t + Tensor.ones(3, 2)).realize()
    assert (t + 1).sum().item() == 12
    assert Tensor([1.0], dtype=dtypes.float32).item() == 1.0


def test_no_crash_on_exit_and_undefined_use():
    # A child interpreter that makes tensors, errors and numpy views and exits: no crash at teardown.
    code = (
        "import lazygrad, numpy as np\n"
        "from lazygrad import Tensor\n"
        "a = (Tensor.ones(3) * 2).numpy()\n"
        "try:\n    Tensor.ones(2) + Tensor.ones(3)\nexcept lazygrad.LazygradError as e:\n    print('caught', e)\n"
        "print(a.sum())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "caught" in r.stdout and "6.0" in r.stdout


# ---- sizes past 64 bits (issue 13): an element count times the item size that wrapped around once
# sized a 64-byte buffer for a kernel that wrote far past it (SIGSEGV). A shape whose elements or
# bytes do not fit in int64 is refused where it is made, with nothing allocated: a lazygrad.SizeError,
# which is a LazygradError (PyTorch raises RuntimeError) and a ValueError (numpy's "array is too big").
TWO31, TWO62 = 1 << 31, 1 << 62


@pytest.mark.parametrize(
    "fn,match",
    [
        (lambda: Tensor.eye(TWO31).realize(), "eye"),
        (lambda: Tensor.arange(TWO62).realize(), "arange"),
        (lambda: (Tensor.empty(TWO62) + 1).realize(), "empty"),
        (lambda: Tensor.ones(TWO31, TWO31).contiguous().realize(), "ones"),
        (lambda: Tensor.empty(1 << 32, 1 << 32).numel(), "empty"),
        (lambda: Tensor.ones(3, TWO62).numel(), "ones"),
        (lambda: Tensor.ones(3, 1, dtype=dtypes.bool).expand(3, TWO62), "expand"),
        (lambda: Tensor.empty(0).reshape(4, TWO62), "reshape"),
        (lambda: Tensor.ones(2, dtype=dtypes.bool).repeat(TWO62), "repeat"),
        (lambda: Tensor.empty(-1), "empty"),
    ],
)
def test_size_past_64_bits(fn, match):
    mem = GlobalCounters.mem_used
    with pytest.raises(LazygradError, match=match) as e:
        fn()
    assert isinstance(e.value, ValueError)
    assert GlobalCounters.mem_used == mem


@pytest.mark.parametrize(
    "fn",
    [
        lambda: Tensor.empty(1 << 63),
        lambda: Tensor.zeros((2, 1 << 63)),
        lambda: Tensor.eye(1 << 63),
        lambda: Tensor.linspace(0, 1, 1 << 64),
        lambda: Tensor.ones(2).reshape(1 << 63),
        lambda: Tensor.ones(2).repeat_interleave(1 << 63),
    ],
)
def test_size_past_int64_is_value_error(fn):
    # A pybind11 conversion error (TypeError) before; numpy raises ValueError for it too.
    with pytest.raises(ValueError, match="64 bits"):
        fn()


def test_memory_the_machine_will_not_give(tmp_path):
    # 2^60 bytes fit in int64 but in no address space: an error naming the bytes, MemoryError too.
    mem = GlobalCounters.mem_used
    for fn in [
        lambda: (Tensor.empty(1 << 60, dtype=dtypes.uint8) + 1).realize(),
        lambda: Tensor.empty(1 << 60, dtype=dtypes.uint8).numpy(),
    ]:
        with pytest.raises(LazygradError, match="1152921504606846976 bytes") as e:
            fn()
        assert isinstance(e.value, MemoryError)
    path = tmp_path / "x.safetensors"
    with pytest.raises(MemoryError, match="1152921504606846976 bytes"):
        nn.state.safe_save({"x": Tensor.ones(1 << 60, dtype=dtypes.uint8)}, path)
    assert not path.exists() and list(tmp_path.iterdir()) == []
    assert GlobalCounters.mem_used == mem
    assert (Tensor.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]


def test_shrink_refuses_out_of_range_bounds():
    t = Tensor.ones(2, 3)
    message = r"shrink: bounds \(\(0, 5\), \(0, 3\)\) are out of range for shape \{2, 3\}"
    with pytest.raises(LazygradError, match=message):
        t.shrink(((0, 5), (0, 3)))
    with pytest.raises(LazygradError, match="shrink"):
        t.shrink((None, (2, 1)))
    with pytest.raises(LazygradError, match="shrink"):
        t.shrink(((-1, 1), None))
    assert t.shrink((None, (1, 3))).shape == (2, 2)
    # Python slicing keeps clamping, as Python's lists and torch do: torch.ones(2, 3)[0:10] is 2x3.
    assert t[0:10].shape == (2, 3)


# ---- Ctrl-C (issue 13): lazygrad holds SIGINT while it computes, so Python's handler would not see
# it until the computation ended (hours, for the sum below). A long kernel reads lazygrad's flag in
# its loops and stops; the computation raises KeyboardInterrupt, and Python's handler is back after.
# In a child process: a stray KeyboardInterrupt must not end this pytest session.
def test_ctrl_c_stops_a_long_computation_with_keyboard_interrupt():
    code = """
import os, signal, threading
from lazygrad import Tensor
threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    Tensor.ones(1 << 40).sum().item()
    print("finished")
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, Tensor.ones(1000).sum().item())
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "KeyboardInterrupt: interrupted (Ctrl-C, SIGINT)" in r.stdout, r.stdout
    assert "True 1000.0" in r.stdout, r.stdout


# ---- the class of each mistake (issue 16): lazygrad raises a class that is both LazygradError and the
# builtin PyTorch 1.13 raises for the same mistake. One row per error kind and op family: the lazygrad
# call, the same call in torch, and the builtin both must raise.
X34 = np.arange(12, dtype=np.float32).reshape(3, 4)


def _lg(a=X34):
    return Tensor(a)


def _th(a=X34):
    return torch.tensor(a)


torch = pytest.importorskip("torch")
F = torch.nn.functional
LONG1 = np.zeros(1, dtype=np.int64)
KIND_ROWS = [
    # IndexError: a dimension or an index out of range
    ("index past the end", lambda: _lg()[10], lambda: _th()[10], IndexError),
    ("index of a float", lambda: _lg()[1.5], lambda: _th()[1.5], IndexError),
    ("index of a str", lambda: _lg()["a"], lambda: _th()["a"], TypeError),
    ("index of a dict", lambda: _lg()[{}], lambda: _th()[{}], IndexError),
    ("too many indices", lambda: _lg()[0, 0, 0], lambda: _th()[0, 0, 0], IndexError),
    ("sum dim", lambda: _lg().sum(5), lambda: _th().sum(5), IndexError),
    ("softmax dim", lambda: _lg().softmax(-3), lambda: _th().softmax(-3), IndexError),
    ("transpose dim", lambda: _lg().transpose(0, 2), lambda: _th().transpose(0, 2), IndexError),
    ("select index", lambda: _lg().select(0, 3), lambda: _th().select(0, 3), IndexError),
    ("select 0-d", lambda: Tensor(1.0).select(0, 0), lambda: torch.tensor(1.0).select(0, 0), IndexError),
    ("slice 0-d", lambda: Tensor(1.0)[0:1], lambda: torch.tensor(1.0)[0:1], IndexError),
    ("narrow start", lambda: _lg().narrow(0, 5, 1), lambda: _th().narrow(0, 5, 1), IndexError),
    ("size of 0-d", lambda: Tensor(1.0).size(0), lambda: torch.tensor(1.0).size(0), IndexError),
    ("unbind 0-d", lambda: Tensor(1.0).unbind(0), lambda: torch.tensor(1.0).unbind(0), IndexError),
    ("roll 0-d", lambda: Tensor(1.0).roll(1, 0), lambda: torch.tensor(1.0).roll(1, 0), IndexError),
    ("index_select 2-d index", lambda: _lg().index_select(0, Tensor(np.zeros((2, 2), np.int64))),
     lambda: _th().index_select(0, torch.zeros(2, 2, dtype=torch.long)), IndexError),
    ("max of an empty dim", lambda: Tensor.ones(0, 3).max(0), lambda: torch.ones(0, 3).amax(0), IndexError),
    ("argmax of an empty dim", lambda: Tensor.ones(0, 3).argmax(0), lambda: torch.ones(0, 3).argmax(0),
     IndexError),
    ("group_norm of 1-d", lambda: Tensor.ones(3).group_norm(1), lambda: F.group_norm(torch.ones(3), 1),
     IndexError),
    ("unflatten dim", lambda: _lg().unflatten(5, (2, 2)), lambda: _th().unflatten(5, (2, 2)), IndexError),
    # ValueError: an argument whose value is wrong
    ("slice step 0", lambda: _lg()[::0], lambda: _th()[::0], ValueError),
    ("reduction string", lambda: _lg().mse_loss(_lg(), reduction="foo"),
     lambda: F.mse_loss(_th(), _th(), reduction="foo"), ValueError),
    ("cross_entropy batch", lambda: _lg().cross_entropy(Tensor(np.zeros(2, np.int64))),
     lambda: F.cross_entropy(_th(), torch.zeros(2, dtype=torch.long)), ValueError),
    ("bce shapes", lambda: Tensor.rand(3).binary_cross_entropy(Tensor.rand(2)),
     lambda: F.binary_cross_entropy(torch.rand(3), torch.rand(2)), ValueError),
    ("dropout p", lambda: _lg().dropout(1.5, training=True), lambda: F.dropout(_th(), 1.5), ValueError),
    ("batch_norm of one value", lambda: Tensor.ones(1, 3).batch_norm(None, None, training=True),
     lambda: F.batch_norm(torch.ones(1, 3), None, None, training=True), ValueError),
    ("item of many", lambda: _lg().item(), lambda: _th().item(), ValueError),
    ("einsum no operand", lambda: Tensor.einsum("ij"), lambda: torch.einsum("ij"), ValueError),
    ("interpolate both", lambda: Tensor.ones(1, 1, 4).interpolate(size=2, scale_factor=2.0),
     lambda: F.interpolate(torch.ones(1, 1, 4), size=2, scale_factor=2.0), ValueError),
    ("interpolate align_corners", lambda: Tensor.ones(1, 1, 4).interpolate(size=2, mode="nearest", align_corners=True),
     lambda: F.interpolate(torch.ones(1, 1, 4), size=2, mode="nearest", align_corners=True), ValueError),
    ("Conv2d groups", lambda: nn.Conv2d(3, 4, 3, groups=2), lambda: torch.nn.Conv2d(3, 4, 3, groups=2), ValueError),
    ("GroupNorm groups", lambda: nn.GroupNorm(2, 3), lambda: torch.nn.GroupNorm(2, 3), ValueError),
    ("SGD learning rate", lambda: nn.optim.SGD([Tensor.ones(2, requires_grad=True)], lr=-1),
     lambda: torch.optim.SGD([torch.ones(2, requires_grad=True)], lr=-1), ValueError),
    ("Adam beta", lambda: nn.optim.Adam([Tensor.ones(2, requires_grad=True)], b1=1.5),
     lambda: torch.optim.Adam([torch.ones(2, requires_grad=True)], betas=(1.5, 0.9)), ValueError),
    # TypeError: an argument of the wrong type
    ("len of 0-d", lambda: len(Tensor(1.0)), lambda: len(torch.tensor(1.0)), TypeError),
    # NotImplementedError: a valid request not implemented (PyTorch: for this input rank or mode)
    ("interpolate 2-d", lambda: Tensor.ones(1, 4).interpolate(size=2), lambda: F.interpolate(torch.ones(1, 4), size=2),
     NotImplementedError),
    ("interpolate mode", lambda: Tensor.ones(1, 1, 4).interpolate(size=2, mode="foo"),
     lambda: F.interpolate(torch.ones(1, 1, 4), size=2, mode="foo"), NotImplementedError),
    ("interpolate bilinear of 3-d", lambda: Tensor.ones(1, 1, 4).interpolate(size=2, mode="bilinear"),
     lambda: F.interpolate(torch.ones(1, 1, 4), size=2, mode="bilinear"), NotImplementedError),
    # RuntimeError: shapes that do not match, dtypes an op does not take, most else
    ("broadcast", lambda: _lg() + Tensor.ones(5), lambda: _th() + torch.ones(5), RuntimeError),
    ("reshape", lambda: _lg().reshape(5), lambda: _th().reshape(5), RuntimeError),
    ("narrow length", lambda: _lg().narrow(0, 1, 5), lambda: _th().narrow(0, 1, 5), RuntimeError),
    ("gather float index", lambda: _lg().gather(0, Tensor(np.zeros((1, 1), np.float32))),
     lambda: _th().gather(0, torch.zeros(1, 1)), RuntimeError),
    ("clip without bounds", lambda: _lg().clip(), lambda: torch.clip(_th()), RuntimeError),
    ("div rounding_mode", lambda: _lg().div(_lg(), rounding_mode="round"),
     lambda: torch.div(_th(), _th(), rounding_mode="round"), RuntimeError),
    ("gelu approximate", lambda: _lg().gelu(approximate="foo"), lambda: F.gelu(_th(), approximate="foo"),
     RuntimeError),
    ("amax of all of an empty tensor", lambda: Tensor.ones(0, 3).max(), lambda: torch.ones(0, 3).amax(),
     RuntimeError),
    ("requires_grad of ints", lambda: Tensor([1, 2]).requires_grad_(), lambda: torch.tensor([1, 2]).requires_grad_(),
     RuntimeError),
    ("randint bounds", lambda: Tensor.randint(3, low=5, high=2), lambda: torch.randint(5, 2, (3,)), RuntimeError),
    ("meshgrid indexing", lambda: Tensor.meshgrid(Tensor.ones(2), indexing="foo"),
     lambda: torch.meshgrid(torch.ones(2), indexing="foo"), RuntimeError),
]


@pytest.mark.parametrize("lg_call,torch_call,builtin", [r[1:] for r in KIND_ROWS], ids=[r[0] for r in KIND_ROWS])
def test_error_class_matches_torch(lg_call, torch_call, builtin):
    with pytest.raises(builtin) as theirs:
        torch_call()
    assert type(theirs.value) is builtin  # torch raises exactly the builtin; the row is right
    with pytest.raises(LazygradError) as ours:
        lg_call()
    assert isinstance(ours.value, builtin), type(ours.value).__mro__
    if builtin is RuntimeError:  # every LazygradError is one: it must not be a narrower kind either
        assert not isinstance(ours.value, (IndexError, ValueError, TypeError, NotImplementedError))
