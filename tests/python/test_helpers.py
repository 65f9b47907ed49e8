"""lazygrad.helpers: getenv typed by its default, Context setting and restoring the runtime
settings (and refusing names lazygrad lacks), tqdm/trange, Timing, colored and the list helpers."""
import io
import contextlib

import pytest

import lazygrad
from lazygrad import Tensor
from lazygrad.helpers import (BEAM, DEBUG, NOOPT, Context, Timing, all_int, all_same, colored, dedup, flatten,
                              getenv, prod, tqdm, trange)


def test_getenv_is_typed_by_its_default(monkeypatch):
    monkeypatch.setenv("LG_TEST_STEPS", "12")
    monkeypatch.setenv("LG_TEST_LR", "0.5")
    monkeypatch.setenv("LG_TEST_NAME", "abc")
    assert getenv("LG_TEST_STEPS", 70) == 12 and isinstance(getenv("LG_TEST_STEPS", 70), int)
    assert getenv("LG_TEST_LR", 1e-3) == 0.5
    assert getenv("LG_TEST_NAME", "") == "abc"
    assert getenv("LG_TEST_UNSET_VARIABLE") == 0
    assert getenv("LG_TEST_UNSET_VARIABLE", 70) == 70
    assert getenv("LG_TEST_UNSET_VARIABLE", 2.5) == 2.5
    monkeypatch.setenv("LG_TEST_BAD", "x")
    with pytest.raises(ValueError):
        getenv("LG_TEST_BAD", 1)


def test_context_sets_and_restores_the_runtime_settings():
    before = (DEBUG.value, BEAM.value, NOOPT.value)
    with Context(DEBUG=0, BEAM=3, NOOPT=1):
        assert (DEBUG.value, BEAM.value, NOOPT.value) == (0, 3, 1)
        assert BEAM >= 3 and BEAM == 3 and int(NOOPT) == 1
        assert (Tensor([1.0, 2.0]) * 3).tolist() == [3.0, 6.0]  # kernels still run with them
    assert (DEBUG.value, BEAM.value, NOOPT.value) == before

    @Context(NOOPT=1)
    def f():
        return NOOPT.value
    assert f() == 1 and NOOPT.value == before[2]


def test_context_restores_after_an_exception():
    before = BEAM.value
    with pytest.raises(RuntimeError):
        with Context(BEAM=2):
            raise RuntimeError("inside")
    assert BEAM.value == before


def test_context_refuses_settings_lazygrad_lacks():
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="GRAPH") as e:
        Context(GRAPH=1)
    assert isinstance(e.value, NotImplementedError) and "DEBUG" in str(e.value)
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="CC is read once when lazygrad starts"):
        Context(CC="clang")
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="Device.DEFAULT"):
        Context(DEVICE="CL")
    before = BEAM.value
    with pytest.raises(lazygrad.LazygradError, match="set_threads"):
        with Context(BEAM=5, THREADS=0):
            pass
    assert BEAM.value == before  # the setting made before the refused one is undone


def test_trange_iterates_and_draws_on_stderr():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        seen = []
        for i in (t := trange(5)):
            seen.append(i)
            t.set_description(f"loss {i}")
    assert seen == [0, 1, 2, 3, 4]
    out = err.getvalue()
    assert "5/5" in out and "loss 4" in out and out.endswith("\n")


def test_tqdm_by_hand_and_disabled():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with tqdm(total=10, desc="x") as bar:
            bar.update(4)
            bar.update(6)
        assert list(tqdm([1, 2, 3], disable=True)) == [1, 2, 3]
    assert "10/10" in err.getvalue() and err.getvalue().count("\n") == 1


def test_timing_prints_milliseconds():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        with Timing("step ", on_exit=lambda ns: f" ({ns} ns)"):
            pass
    assert out.getvalue().startswith("step ") and " ms (" in out.getvalue()


def test_colored_and_list_helpers():
    assert colored("x", "red") == "\u001b[31mx\u001b[0m"
    assert colored("x", "GREEN") == "\u001b[92mx\u001b[0m"
    assert colored("x", None) == "x"
    assert prod([2, 3, 4]) == 24 and prod([]) == 1
    assert flatten([[1, 2], [3], []]) == [1, 2, 3]
    assert dedup([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert all_same([1, 1, 1]) and not all_same([1, 2])
    assert all_int((1, 2)) and not all_int((1, 2.0))
