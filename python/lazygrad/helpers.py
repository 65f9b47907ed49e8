"""lazygrad.helpers: the small utilities tinygrad's scripts import from tinygrad.helpers.

getenv (typed by its default), tqdm/trange (a progress bar on stderr, no dependency), Context (sets
and restores the runtime settings lazygrad has: DEBUG, BEAM, NOOPT, THREADS, FTZ), Timing,
colored, and the list helpers prod, flatten, dedup, all_same, all_int.
"""
import contextlib
import functools
import math
import os
import sys
import time

from lazygrad import _C
from lazygrad._C import LazygradNotImplementedError


# ---- environment ----
@functools.lru_cache(maxsize=None)
def getenv(key, default=0):
    """The environment variable `key` as the type of `default` (int by default): getenv("STEPS", 70)
    is an int, getenv("LR", 1e-3) a float, getenv("NAME", "") a string. Read once, as tinygrad's."""
    return type(default)(os.getenv(key, default))


# ---- runtime settings ----
# The settings the C++ runtime reads from the environment once and can change at run time.
_SETTERS = {"DEBUG": _C.set_debug, "BEAM": _C.set_beam, "NOOPT": lambda v: _C.set_noopt(bool(v)),
            "THREADS": _C.set_threads, "FTZ": lambda v: _C.set_flush_denormals(bool(v))}


# Read from the environment once, at start up: Context refuses them, saying so.
_FIXED = {"CC": "set CC before starting", "LAZYGRAD_CFLAGS": "set LAZYGRAD_CFLAGS before starting",
          "LAZYGRAD_CACHE": "set LAZYGRAD_CACHE before starting",
          "DEVICE": "assign lazygrad.Device.DEFAULT to change the default device"}


class _Setting:
    """A runtime setting read live from C++ (tinygrad's ContextVar): DEBUG.value, DEBUG >= 2."""

    def __init__(self, key):
        self.key = key

    @property
    def value(self):
        return _C.get_setting(self.key)

    def __bool__(self):
        return bool(self.value)

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value

    def __repr__(self):
        return f"{self.key}={self.value}"

    def __eq__(self, x):
        return self.value == x

    def __hash__(self):
        return hash(self.key)

    def __ge__(self, x):
        return self.value >= x

    def __gt__(self, x):
        return self.value > x

    def __le__(self, x):
        return self.value <= x

    def __lt__(self, x):
        return self.value < x


DEBUG, BEAM, NOOPT, THREADS, FTZ = (_Setting(k) for k in ("DEBUG", "BEAM", "NOOPT", "THREADS", "FTZ"))


class Context(contextlib.ContextDecorator):
    """`with Context(DEBUG=2, BEAM=4):` sets runtime settings and restores them on exit (also a
    decorator). Only settings lazygrad has can be set: any other name (tinygrad's GRAPH, JIT, ...)
    is a LazygradNotImplementedError, never silently ignored."""

    def __init__(self, **kwargs):
        fixed = sorted(set(kwargs) & set(_FIXED))
        if fixed:
            raise LazygradNotImplementedError(
                f"Context: {', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} read once when lazygrad starts and "
                f"cannot change while it runs ({'; '.join(_FIXED[k] for k in fixed)}); Context can set "
                f"{', '.join(_SETTERS)}")
        unknown = sorted(set(kwargs) - set(_SETTERS))
        if unknown:
            raise LazygradNotImplementedError(
                f"Context: lazygrad has no run-time setting {', '.join(unknown)} (it has {', '.join(_SETTERS)})")
        self.kwargs = kwargs

    def __enter__(self):
        self.old = {k: _C.get_setting(k) for k in self.kwargs}
        try:
            for k, v in self.kwargs.items():
                _SETTERS[k](int(v))
        except BaseException:
            self.__exit__()  # a value the runtime refused: undo the ones already set
            raise
        return self

    def __exit__(self, *exc):
        for k, v in self.old.items():
            _SETTERS[k](v)
        return False


# ---- timing and output ----
class Timing(contextlib.ContextDecorator):
    """`with Timing("step "):` prints "step  12.34 ms" (and on_exit(elapsed_ns) after it) on exit."""

    def __init__(self, prefix="", on_exit=None, enabled=True):
        self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled

    def __enter__(self):
        self.st = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        self.et = time.perf_counter_ns() - self.st
        if self.enabled:
            print(f"{self.prefix}{self.et * 1e-6:6.2f} ms" + (self.on_exit(self.et) if self.on_exit else ""))
        return False


_COLORS = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]


def colored(st, color=None, background=False):
    """st in an ANSI color ("red", "GREEN" for the bright one); None leaves it as it is."""
    if color is None:
        return st
    code = 10 * background + 60 * (color.upper() == color) + 30 + _COLORS.index(color.lower())
    return f"\u001b[{code}m{st}\u001b[0m"


class tqdm:
    """A small progress bar on stderr (tinygrad's own, without the tqdm package): iterate over it,
    or update(n) by hand; set_description(desc) changes the text before the bar."""

    def __init__(self, iterable=None, desc="", disable=False, unit="it", unit_scale=False, total=None, rate=100):
        self.iterable, self.desc, self.disable, self.unit, self.unit_scale = iterable, desc, disable, unit, unit_scale
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.rate = total, rate
        self.st, self.n, self.last_print = time.perf_counter(), 0, 0.0
        self.update(0)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.update(close=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.update(close=True)
        return False

    def set_description(self, desc):
        self.desc = desc

    def close(self):
        self.update(close=True)

    def update(self, n=0, close=False):
        self.n += n
        now = time.perf_counter()
        # redraw at most `rate` times a second (and always on close)
        if self.disable or (not close and self.n and now - self.last_print < 1 / self.rate):
            return
        self.last_print, elapsed = now, now - self.st
        speed = self.n / elapsed if elapsed > 0 else 0.0
        prefix = f"{self.desc}: " if self.desc else ""
        if self.total:
            frac = min(self.n / self.total, 1.0)
            bar = "█" * int(20 * frac) + " " * (20 - int(20 * frac))
            line = f"{prefix}{100 * frac:3.0f}%|{bar}| {self.n}/{self.total} [{elapsed:.2f}s, {speed:.2f}{self.unit}/s]"
        else:
            line = f"{prefix}{self.n}{self.unit} [{elapsed:.2f}s, {speed:.2f}{self.unit}/s]"
        print("\r" + line + ("\n" if close else ""), end="", file=sys.stderr, flush=True)


class trange(tqdm):
    """tqdm(range(n)): `for i in (t := trange(steps)): ...; t.set_description(...)`."""

    def __init__(self, n, **kwargs):
        super().__init__(range(n), total=n, **kwargs)


# ---- list helpers ----
def prod(x):
    """The product of an iterable (1 when empty), ints staying ints."""
    return math.prod(x)


def flatten(ll):
    """One level: [[1, 2], [3]] -> [1, 2, 3]."""
    return [item for sublist in ll for item in sublist]


def dedup(x):
    """The items in their first order, each once (hashable items)."""
    return list(dict.fromkeys(x))


def all_same(items):
    return all(x == items[0] for x in items)


def all_int(t):
    return all(isinstance(s, int) for s in t)


def argfix(*x):
    """f(1, 2) and f((1, 2)) alike: one tuple or list argument is unpacked (tinygrad's argfix)."""
    if x and x[0].__class__ in (tuple, list):
        if len(x) != 1:
            raise ValueError(f"bad arg {x}")
        return tuple(x[0])
    return x


def round_up(num, amt):
    """num rounded up to a multiple of amt."""
    return (num + amt - 1) // amt * amt


ContextVar = _Setting  # tinygrad's name for the class of DEBUG, BEAM, ...


__all__ = ["BEAM", "Context", "ContextVar", "DEBUG", "FTZ", "NOOPT", "THREADS", "Timing", "all_int", "all_same",
           "argfix", "colored", "dedup", "flatten", "getenv", "prod", "round_up", "tqdm", "trange"]
