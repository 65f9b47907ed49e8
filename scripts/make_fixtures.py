#!/usr/bin/python3
"""Writes the PyTorch-parity fixtures that tests/test_ops_torch.cpp checks lazygrad against.

Run it with Debian's interpreter (the one that has PyTorch 1.13 and numpy):

    /usr/bin/python3 scripts/make_fixtures.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

It writes the groups binary, cast, compare, creation, movement, reduce, unary and unsigned
(<OUTDIR>/<group>.txt) and leaves the other files there alone (other scripts write those).
The fixture format, the value generators and the writer live in scripts/fixtures_lib.py, whose
docstring documents the format (these files use none of its gradient lines).

Everything is seeded (the lib's seed 1234) and the shapes come from fixed lists, so a rerun with
the same PyTorch/numpy writes byte-identical files.  Reference values come from PyTorch; the few
dtypes that torch 1.13 lacks (uint16, uint32, uint64) are computed with numpy following PyTorch's
documented semantics (type promotion of torch.promote_types, integer results wrap modulo 2^bits,
floor division and remainder round like Python, integer sums accumulate in int64).
float16/bfloat16 compute ops (math, arithmetic, reductions, softmax) are evaluated in float32 and
rounded to the half type at the end, like PyTorch's CUDA kernels and like lazygrad (torch 1.13's
CPU lacks most Half kernels); the result dtype still comes from PyTorch (a run on the meta device).

Ops and forms (the `op` line, `arg form`): the keys of T_OPS below, which tests/test_ops_torch.cpp's
op table mirrors. `where` takes its inputs as (condition, x[, y]).

What is left out on purpose: calls PyTorch rejects (the script prints the ones it skipped: they
belong in tests/test_errors.cpp, not here), and inputs whose C result is undefined (NaN or
out-of-range float->int casts, signed integer overflow, shifts by >= the bit width, integer
division by zero), so that a case fails only where lazygrad and PyTorch really disagree.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403  (the format writer, dtype tables, generators)

# ---------------------------------------------------------------- torch side


def all_dims(t):
    return tuple(range(t.dim()))


def axes_of(a, t):
    ax = a.get("axes")
    if ax is None:
        return all_dims(t)
    return (ax,) if isinstance(ax, int) else tuple(ax)


def t_reduce(f):
    def run(a, i):
        x = i[0]
        kw = {}
        if "dtype" in a:
            kw["dtype"] = TORCH_DT[a["dtype"].name]
        return f(x, axes_of(a, x), a.get("keepdim", False), kw)
    return run


def t_prod(x, axes, keepdim, kw):
    if x.dim() == 0:
        return torch.prod(x, **kw)
    axes = sorted({d % x.dim() for d in axes}, reverse=True)
    out = x
    first = True
    for d in axes:
        out = torch.prod(out, d, keepdim=True, **(kw if first else {}))
        first = False
    if not keepdim:
        for d in axes:
            out = out.squeeze(d)
    return out


def t_mean(x, axes, keepdim, kw):
    return torch.mean(x, dim=axes, keepdim=keepdim, **kw) if x.dim() else torch.mean(x)


def t_where(a, i, form):
    s = a.get("scalar")
    return {"method": lambda: torch.where(i[0], i[1], i[2]),
            "method_s": lambda: torch.where(i[0], i[1], s),
            "free": lambda: torch.where(i[0], i[1], i[2]),
            "free_sx": lambda: torch.where(i[0], s, i[1]),
            "free_xs": lambda: torch.where(i[0], i[1], s)}[form]()


def binary_forms(name, f, forms=("tt", "ts", "st", "method", "method_s")):
    table = {}
    for form in forms:
        table[f"{name}.{form}"] = {
            "tt": lambda a, i: f(i[0], i[1]),
            "method": lambda a, i: f(i[0], i[1]),
            "ts": lambda a, i: f(i[0], a["scalar"]),
            "method_s": lambda a, i: f(i[0], a["scalar"]),
            "st": lambda a, i: f(a["scalar"], i[0]),
        }[form]
    return table


def t_dtype(a, default=None):
    return {"dtype": TORCH_DT[a["dtype"].name]} if "dtype" in a else ({} if default is None else default)


T_OPS = {
    # creation
    "zeros": lambda a, i: torch.zeros(a["shape"], **t_dtype(a)),
    "ones": lambda a, i: torch.ones(a["shape"], **t_dtype(a)),
    "full": lambda a, i: torch.full(a["shape"], a["value"], **t_dtype(a)),
    "arange": lambda a, i: torch.arange(a["end"], **t_dtype(a)),
    "arange3": lambda a, i: torch.arange(a["start"], a["end"], a.get("step", 1), **t_dtype(a)),
    "linspace": lambda a, i: torch.linspace(a["start"], a["end"], a["steps"], **t_dtype(a)),
    # torch 1.13 has no bfloat16 eye on the CPU; it is exact in float32
    "eye": lambda a, i: (torch.eye(a["n"], a.get("m", a["n"]), **t_dtype(a)) if a.get("dtype", D("")).name != "bfloat16"
                         else torch.eye(a["n"], a.get("m", a["n"])).to(torch.bfloat16)),
    "zeros_like": lambda a, i: torch.zeros_like(i[0]),
    "ones_like": lambda a, i: torch.ones_like(i[0]),
    "full_like": lambda a, i: torch.full_like(i[0], a["value"]),
    "identity": lambda a, i: i[0],
    # unary
    "neg.op": lambda a, i: -i[0],
    "neg.method": lambda a, i: torch.neg(i[0]),
    "exp": lambda a, i: torch.exp(i[0]),
    "log": lambda a, i: torch.log(i[0]),
    "exp2": lambda a, i: torch.exp2(i[0]),
    "log2": lambda a, i: torch.log2(i[0]),
    "sqrt": lambda a, i: torch.sqrt(i[0]),
    "sin": lambda a, i: torch.sin(i[0]),
    "cos": lambda a, i: torch.cos(i[0]),
    "reciprocal": lambda a, i: torch.reciprocal(i[0]),
    "relu": lambda a, i: torch.relu(i[0]),
    "abs": lambda a, i: torch.abs(i[0]),
    "floor": lambda a, i: torch.floor(i[0]),
    "ceil": lambda a, i: torch.ceil(i[0]),
    "trunc": lambda a, i: torch.trunc(i[0]),
    "logical_not.op": lambda a, i: torch.logical_not(i[0]),
    "logical_not.method": lambda a, i: torch.logical_not(i[0]),
    "bitwise_not.op": lambda a, i: ~i[0],
    "bitwise_not.method": lambda a, i: torch.bitwise_not(i[0]),
    "to": lambda a, i: i[0].to(TORCH_DT[a["dtype"].name]),
    # binary
    **binary_forms("add", lambda x, y: x + y),
    **binary_forms("sub", lambda x, y: x - y),
    **binary_forms("mul", lambda x, y: x * y),
    **binary_forms("div", lambda x, y: x / y),
    **binary_forms("remainder", lambda x, y: x % y),
    **binary_forms("floor_divide", torch.floor_divide, ("method", "method_s")),
    **binary_forms("pow", torch.pow, ("method", "method_s")),
    **binary_forms("maximum", torch.maximum, ("method",)),
    **binary_forms("minimum", torch.minimum, ("method",)),
    **binary_forms("logical_and", torch.logical_and, ("method",)),
    **binary_forms("logical_or", torch.logical_or, ("method",)),
    **binary_forms("lt", lambda x, y: x < y),
    **binary_forms("le", lambda x, y: x <= y),
    **binary_forms("gt", lambda x, y: x > y),
    **binary_forms("ge", lambda x, y: x >= y),
    **binary_forms("eq", lambda x, y: x == y),
    **binary_forms("ne", lambda x, y: x != y),
    **binary_forms("bitwise_and", lambda x, y: x & y),
    **binary_forms("bitwise_or", lambda x, y: x | y),
    **binary_forms("bitwise_xor", lambda x, y: x ^ y),
    **binary_forms("lshift", lambda x, y: x << y),
    **binary_forms("rshift", lambda x, y: x >> y),
    **{f"where.{f}": (lambda f: lambda a, i: t_where(a, i, f))(f)
       for f in ("method", "method_s", "free", "free_sx", "free_xs")},
    # reductions
    "sum": t_reduce(lambda x, ax, k, kw: torch.sum(x, dim=ax, keepdim=k, **kw) if x.dim() else torch.sum(x, **kw)),
    "prod": t_reduce(t_prod),
    "max": t_reduce(lambda x, ax, k, kw: torch.amax(x, dim=ax, keepdim=k)),
    "min": t_reduce(lambda x, ax, k, kw: torch.amin(x, dim=ax, keepdim=k)),
    "mean": t_reduce(t_mean),
    "softmax": lambda a, i: torch.softmax(i[0], a["axis"]),
    "log_softmax": lambda a, i: torch.log_softmax(i[0], a["axis"]),
    # movement
    "reshape": lambda a, i: i[0].reshape(a["shape"]),
    "view": lambda a, i: i[0].reshape(a["shape"]),
    "permute": lambda a, i: i[0].permute(a["order"]),
    "transpose": lambda a, i: i[0].transpose(a["dim0"], a["dim1"]),
    "t": lambda a, i: i[0].t(),
    "expand": lambda a, i: i[0].expand(a["shape"]),
    "flatten": lambda a, i: i[0].flatten(a.get("start_dim", 0), a.get("end_dim", -1)),
    "squeeze": lambda a, i: i[0].squeeze(a["dim"]) if "dim" in a else i[0].squeeze(),
    "unsqueeze": lambda a, i: i[0].unsqueeze(a["dim"]),
    "pad": lambda a, i: F.pad(i[0], a["pads"], value=a.get("value", 0)),
    "slice": lambda a, i: t_slice(i[0], a["dim"], a["start"], a["end"], a.get("step", 1)),
    "narrow": lambda a, i: i[0].narrow(a["dim"], a["start"], a["length"]),
    "select": lambda a, i: i[0].select(a["dim"], a["index"]),
    "flip": lambda a, i: i[0].flip([a["dims"]] if isinstance(a["dims"], int) else a["dims"]),
    "contiguous": lambda a, i: i[0].contiguous(),
    "cat": lambda a, i: torch.cat(i, a.get("dim", 0)),
    "stack": lambda a, i: torch.stack(i, a.get("dim", 0)),
}

NON_COMPUTE = {"zeros", "ones", "full", "arange", "arange3", "linspace", "eye", "zeros_like", "ones_like",
               "full_like", "identity", "to", "reshape", "view", "permute", "transpose", "t", "expand",
               "flatten", "squeeze", "unsqueeze", "pad", "slice", "narrow", "select", "flip", "contiguous",
               "cat", "stack", "where"}


# The default reference functions of add_case (the lib looks them up by "<op>[.<form>]").
register_ops(T_OPS, NON_COMPUTE)


# ---------------------------------------------------------------- numpy side (uint16/32/64)

def np_input(i):
    a = np.array(i.values, dtype=NP_DT[i.dtype]).reshape(i.shape)
    for v in i.views:
        k = v[0]
        if k == "permute":
            a = a.transpose(v[1:])
        elif k == "transpose":
            a = np.swapaxes(a, v[1], v[2])
        elif k == "slice":
            idx = [slice(None)] * a.ndim
            idx[v[1]] = slice(v[2], v[3], v[4])
            a = a[tuple(idx)]
        elif k == "flip":
            a = np.flip(a, v[1:])
        elif k == "expand":
            a = np.broadcast_to(a, v[1:])
        else:
            raise ValueError(k)
    return a


def wrap(x, dt):
    """Python int -> value of integer dtype dt (modulo 2^bits, two's complement for signed)."""
    if dt == "bool":
        return bool(x)
    b = BITS[dt]
    x %= 2**b
    if dt in SIGNED and x >= 2 ** (b - 1):
        x -= 2**b
    return x


def np_promote(a, b):
    """torch.promote_types, including the unsigned types torch 1.13 lacks."""
    if a == b:
        return a
    fa, fb = a in FLOATS, b in FLOATS
    if fa and fb:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return max(a, b, key=["float16", "bfloat16", "float32", "float64"].index)
    if fa or fb:
        return a if fa else b
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    ua, ub = a in UINTS_NP or a == "uint8", b in UINTS_NP or b == "uint8"
    if ua and ub:
        return a if BITS[a] >= BITS[b] else b
    if not ua and not ub:
        return a if BITS[a] >= BITS[b] else b
    u, s = (a, b) if ua else (b, a)
    if BITS[s] > BITS[u]:
        return s
    if BITS[u] == 64:
        raise ValueError("no common type")
    return {8: "int16", 16: "int32", 32: "int64"}[BITS[u]]


MANT = {"float16": 11, "float32": 24, "float64": 53}


def cast_py(v, dt):
    """One value converted to dtype dt the way a C static_cast does (ints wrap, floats round to nearest even)."""
    if dt == "bool":
        return bool(v)
    if dt not in FLOATS:
        return wrap(int(v), dt)  # int(float) truncates toward zero
    if isinstance(v, (bool, int)):
        x = int(v)
        mag, sign = abs(x), (-1 if x < 0 else 1)
        shift = mag.bit_length() - MANT[dt]
        if shift > 0:
            q, r = divmod(mag, 1 << shift)
            half = 1 << (shift - 1)
            if r > half or (r == half and q & 1):
                q += 1
            mag = q << shift
        v = float(sign * mag)  # exact: at most MANT+1 significant bits
    return float(NP_DT[dt](v))  # double -> float32/float16 rounds once, to nearest even


def np_binary(op, form, ins, scalar):
    """(dtype, shape, values) of a binary op with PyTorch semantics: both operands are converted to
    the promoted dtype first, then the op runs in it (integers wrap; floats round once)."""
    arrs = [np_input(i) for i in ins]
    dts = [i.dtype for i in ins]
    if form in ("tt", "method"):
        cdt = np_promote(*dts)
        xa, ya = np.broadcast_arrays(*arrs)
    else:
        x = arrs[0]
        cdt = dts[0] if dts[0] in FLOATS or not isinstance(scalar, float) else "float32"
        xa, ya = x, np.full(x.shape, scalar, dtype=object)
        if form == "st":
            xa, ya = ya, xa
    shape = list(xa.shape)
    conv = lambda arr: [cast_py(v.item() if hasattr(v, "item") else v, cdt) for v in np.asarray(arr).reshape(-1)]  # noqa: E731
    xs, ys = conv(xa), conv(ya)
    cmp_ops = {"lt": lambda p, q: p < q, "le": lambda p, q: p <= q, "gt": lambda p, q: p > q,
               "ge": lambda p, q: p >= q, "eq": lambda p, q: p == q, "ne": lambda p, q: p != q}
    if op in cmp_ops:
        return "bool", shape, [cmp_ops[op](p, q) for p, q in zip(xs, ys)]
    if op == "div" and cdt not in FLOATS:
        cdt = "float32"
        xs, ys = [cast_py(v, cdt) for v in xs], [cast_py(v, cdt) for v in ys]
    if cdt in FLOATS:
        f = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
             "div": lambda p, q: p / q, "maximum": max, "minimum": min}[op]
        return cdt, shape, [cast_py(f(p, q), cdt) for p, q in zip(xs, ys)]
    f = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
         "floor_divide": lambda p, q: p // q, "remainder": lambda p, q: p % q,
         "maximum": max, "minimum": min,
         "bitwise_and": lambda p, q: p & q, "bitwise_or": lambda p, q: p | q,
         "bitwise_xor": lambda p, q: p ^ q, "lshift": lambda p, q: p << q,
         "rshift": lambda p, q: p >> q}[op]
    return cdt, shape, [wrap(f(p, q), cdt) for p, q in zip(xs, ys)]


# ---------------------------------------------------------------- groups

def gen_creation():
    g = "creation"
    for k, dt in enumerate(ALL_T):
        for op in ("zeros", "ones"):
            shape = SHAPES[(k + (op == "ones")) % len(SHAPES)]
            add_case(g, f"{op}_{dt}_{shape_tag(shape)}", op, {"shape": shape, "dtype": D(dt)})
    for op in ("zeros", "ones"):
        for shape in ([2, 3], [], [0, 4], BIG):
            add_case(g, f"{op}_default_{shape_tag(shape)}", op, {"shape": shape})
    fulls = [(7, None, [2, 3]), (2.5, None, [7]), (True, None, [3]), (-3, "int8", [33]), (2.5, "float16", [2, 2]),
             (-1.25, "bfloat16", [5]), (0.1, "float64", [3]), (1e30, "float32", [2]), (math.nan, None, [2]),
             (-math.inf, "float64", [1]), (1, "bool", [2]), (0, "bool", [1]), (200, "uint8", [4]),
             (-40000, "int32", [3]), (2**40, "int64", []), (3, "float32", [0]), (3, "int16", [4, 1, 7]),
             (4.0, None, BIG)]
    for v, dt, shape in fulls:
        args = {"shape": shape, "value": v}
        if dt:
            args["dtype"] = D(dt)
        add_case(g, f"full_{sanitize(repr(v))}_{dt or 'default'}_{shape_tag(shape)}", "full", args)
    for end, dt in [(5, None), (5.0, None), (0, None), (1023, None), (7, "int8"), (6, "float16"), (10, "bfloat16"),
                    (4, "float64"), (3.5, None), (33, "int32"), (5, "uint8")]:
        args = {"end": end}
        if dt:
            args["dtype"] = D(dt)
        add_case(g, f"arange_{sanitize(repr(end))}_{dt or 'default'}", "arange", args)
    for start, end, step, dt in [(0, 10, 3, None), (10, 0, -3, None), (-5, 5, None, None), (0.0, 1.0, 0.1, None),
                                 (1.0, -1.0, -0.25, None), (5, 5, 1, None), (0, 10, 3, "int8"),
                                 (0.5, 3.0, 0.5, "float64"), (-3, 4, 2, "float32"), (0, 2, 0.25, "float16"),
                                 (-1, -33, -1, "int16"), (100, -100, -7, "int64"), (0, 1023, 1, None),
                                 (2.0, 7.0, 1.5, "bfloat16"), (-2.5, 2.5, 0.5, None), (0, 5, 2.5, None)]:
        args = {"start": start, "end": end}
        if step is not None:
            args["step"] = step
        if dt:
            args["dtype"] = D(dt)
        add_case(g, f"arange3_{sanitize(repr(start))}_{sanitize(repr(end))}_{sanitize(repr(step))}_{dt or 'default'}",
                 "arange3", args)
    for start, end, steps, dt in [(0, 1, 5, None), (-1, 1, 7, None), (0, 1, 1, None), (0, 1, 0, None),
                                  (2, -3, 33, None), (0, 1000, 1023, "float64"), (0, 1, 5, "float16"),
                                  (-2, 2, 9, "bfloat16"), (3, 3, 4, "float32"), (1e-3, 1e3, 7, "float64")]:
        args = {"start": float(start), "end": float(end), "steps": steps}
        if dt:
            args["dtype"] = D(dt)
        add_case(g, f"linspace_{sanitize(repr(start))}_{sanitize(repr(end))}_{steps}_{dt or 'default'}",
                 "linspace", args)
    for n, m, dt in [(3, None, None), (2, 4, None), (4, 2, None), (1, None, None), (0, None, None), (3, None, "int32"),
                     (5, None, "bool"), (3, 5, "float16"), (33, None, None), (4, 4, "float64"), (2, 3, "uint8"),
                     (3, 0, None), (7, 1, "bfloat16"), (2, None, "int64")]:
        args = {"n": n}
        if m is not None:
            args["m"] = m
        if dt:
            args["dtype"] = D(dt)
        add_case(g, f"eye_{n}_{m}_{dt or 'default'}", "eye", args)
    for k, dt in enumerate(ALL_T):
        shape = SHAPES[k % len(SHAPES)]
        add_case(g, f"zeros_like_{dt}", "zeros_like", {}, [inp(dt, shape)])
        add_case(g, f"ones_like_{dt}", "ones_like", {}, [nc_permute(dt)])
        v = True if dt == "bool" else (2.5 if dt in FLOATS else 3)
        add_case(g, f"full_like_{dt}", "full_like", {"value": v}, [inp(dt, [2, 3])])
    # from_vector: exactly what went in comes back, for every dtype, odd sizes, empty and 0-d
    for k, dt in enumerate(ALL_T):
        shapes = [[], [0], [1], [7], [33], [2, 3, 5], [0, 3]] + ([BIG] if dt in ("float32", "int32", "uint8") else [])
        for shape in shapes:
            kind = "bits" if dt in INTS else "wide"
            add_case(g, f"from_vector_{dt}_{shape_tag(shape)}", "identity", {}, [inp(dt, shape, kind)])
    for dt in ("float32", "float64", "float16", "bfloat16"):
        vs = round_to(dt, [0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, 1e-3, 65504.0, 3.5e38 if dt != "float16" else 6e4])
        add_case(g, f"from_vector_{dt}_specials", "identity", {}, [In(dt, [len(vs)], vs)])
    for dt in SINTS:
        b = BITS[dt]
        vs = [-(2 ** (b - 1)), 2 ** (b - 1) - 1, 0, -1, 1]
        add_case(g, f"from_vector_{dt}_limits", "identity", {}, [In(dt, [5], vs)])
    add_case(g, "from_vector_uint8_limits", "identity", {}, [In("uint8", [3], [0, 255, 128])])


UNARY_FLOAT = ["exp", "log", "exp2", "log2", "sqrt", "sin", "cos", "reciprocal"]
UNARY_KIND = {"exp": "any", "log": "pos", "exp2": "any", "log2": "pos", "sqrt": "pos", "sin": "wide", "cos": "wide",
              "reciprocal": "nonzero", "relu": "any", "abs": "any", "neg": "any", "floor": "grid", "ceil": "grid",
              "trunc": "grid"}
EDGE = {  # values where PyTorch defines the result: NaN and inf in, NaN and inf out
    "exp": [0.0, -0.0, 1.0, -1.0, 10.0, -10.0, 80.0, -80.0, 100.0, -100.0, math.inf, -math.inf, math.nan],
    "log": [1.0, 0.0, -0.0, -1.0, 1e-30, 1e30, 0.5, math.inf, -math.inf, math.nan, 2.0, 1e-3],
    "exp2": [0.0, 1.0, -1.0, 10.0, -10.0, 127.0, 200.0, -200.0, math.inf, -math.inf, math.nan, 0.5],
    "log2": [1.0, 2.0, 0.0, -1.0, 1024.0, 0.125, math.inf, -math.inf, math.nan, 1e30],
    "sqrt": [0.0, -0.0, 1.0, 4.0, -1.0, 2.0, 1e30, 1e-30, math.inf, -math.inf, math.nan],
    "sin": [0.0, -0.0, 1.0, -1.0, math.pi / 2, 3.0, 10.0, math.inf, -math.inf, math.nan],
    "cos": [0.0, -0.0, 1.0, -1.0, math.pi, 3.0, 10.0, math.inf, -math.inf, math.nan],
    "reciprocal": [1.0, -1.0, 2.0, 0.0, -0.0, 0.5, 1e-30, 1e30, math.inf, -math.inf, math.nan, 3.0],
    "relu": [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e30, -1e30],
    "abs": [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, -1e30, 1e30],
    "neg": [0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e30],
    "floor": [0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 1e30, math.inf, -math.inf, math.nan, 0.0],
    "ceil": [0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 1e30, math.inf, -math.inf, math.nan, 0.0],
    "trunc": [0.5, -0.5, 1.0, -1.0, 2.7, -2.7, 1e30, math.inf, -math.inf, math.nan, 0.0],
}


def half_safe(dt, vs):
    """Drops finite values the half type cannot hold (they would become inf on the way in)."""
    lim = 65504.0 if dt == "float16" else 3.3e38
    return [v for v in vs if not (math.isfinite(v) and abs(v) > lim)] if dt in HALVES or dt == "float32" else vs


def gen_unary():
    g = "unary"
    ops = UNARY_FLOAT + ["relu", "abs", "floor", "ceil", "trunc"]
    for oi, op in enumerate(ops + ["neg"]):
        kind = UNARY_KIND[op]
        key_op, form_args = (op, {}) if op != "neg" else ("neg", {"form": "op"})
        for di, dt in enumerate(ALL_T):
            shape = SHAPES[(oi + di) % len(SHAPES)]
            add_case(g, f"{op}_{dt}_{shape_tag(shape)}", key_op, form_args, [inp(dt, shape, kind)])
        if op in ("exp", "log", "sin", "sqrt", "neg"):
            add_case(g, f"{op}_float32_big", key_op, form_args, [inp("float32", BIG, kind)])
        for dt in ("float32", "float16", "bfloat16", "int32"):
            nc = NC_VIEWS[(oi + len(dt)) % len(NC_VIEWS)]
            add_case(g, f"{op}_{dt}_{nc.__name__}", key_op, form_args, [nc(dt, kind)])
        for dt in FLOATS:
            vs = round_to(dt, half_safe(dt, EDGE[op]))
            add_case(g, f"{op}_{dt}_edge", key_op, form_args, [In(dt, [len(vs)], vs)])
    # sin/cos/exp of large arguments (range reduction) separately, so failures name the cause
    for op in ("sin", "cos"):
        for dt in ("float32", "float64"):
            vs = [100.0, -100.0, 1000.5, 12345.678, -31415.9, 1e5]
            add_case(g, f"{op}_{dt}_large_args", op, {}, [In(dt, [6], round_to(dt, vs))], tol=(1e-4, 1e-5))
    add_case(g, "neg_method_float32", "neg", {"form": "method"}, [inp("float32", [3, 4])])
    add_case(g, "neg_method_int64", "neg", {"form": "method"}, [inp("int64", [7])])
    add_case(g, "neg_op_uint8_wraps", "neg", {"form": "op"}, [In("uint8", [4], [0, 1, 128, 255])])
    for dt in SINTS:
        add_case(g, f"neg_{dt}_edge", "neg", {"form": "op"}, [In(dt, [5], [0, 1, -1, 2 ** (BITS[dt] - 1) - 1, -5])])
        add_case(g, f"abs_{dt}_edge", "abs", {}, [In(dt, [5], [0, 1, -1, 2 ** (BITS[dt] - 1) - 1, -(2 ** (BITS[dt] - 1)) + 1])])
        add_case(g, f"relu_{dt}_edge", "relu", {}, [In(dt, [4], [0, 1, -1, -(2 ** (BITS[dt] - 1))])])


BINARY_ARITH = ["add", "sub", "mul", "div", "remainder", "floor_divide", "maximum", "minimum", "pow"]
KIND_A = {"add": "any", "sub": "any", "mul": "mul", "div": "any", "remainder": "grid", "floor_divide": "grid",
          "maximum": "cmp", "minimum": "cmp", "pow": "small"}
KIND_B = {"add": "any", "sub": "any", "mul": "mul", "div": "nonzero", "remainder": "nonzero",
          "floor_divide": "nonzero", "maximum": "cmp", "minimum": "cmp", "pow": "exp"}
OPERATOR = {"add", "sub", "mul", "div", "remainder"}
BROADCAST = [([3, 1], [1, 4]), ([2, 3, 5], [5]), ([4, 1, 7], [1, 6, 1]), ([], [3, 4]), ([7], []), ([0, 3], [1, 3]),
             ([1], [33]), ([33, 1], [1, 7]), ([2, 1, 3, 1], [5, 1, 4])]
MIXED = [("uint8", "int8"), ("int32", "float16"), ("bool", "bool"), ("bool", "int32"), ("int8", "int64"),
         ("float16", "bfloat16"), ("float32", "float64"), ("bool", "float16"), ("uint8", "bfloat16"),
         ("int64", "float32"), ("int16", "uint8"), ("int8", "float64"), ("uint8", "int32"), ("bool", "uint8")]


NC_FINAL = {nc_permute: [5, 3, 4], nc_slice: [7, 4], nc_flip: [5, 6], nc_expand: [3, 7], nc_pad: [4, 7],
            nc_compose: [5, 2, 6], nc_narrow_select: [7], nc_transpose_t: [33, 5]}
NC_BINARY = [("float32", nc_permute), ("float16", nc_pad), ("int32", nc_compose), ("float64", nc_flip),
             ("bfloat16", nc_transpose_t), ("int64", nc_expand), ("int8", nc_slice), ("uint8", nc_narrow_select)]


def scalars_for(op, dt):
    """Scalars (on the right) that are safe for op on dtype dt: in range, non-zero divisors."""
    if op in ("div", "remainder", "floor_divide"):
        ss = [3, -2, 2.5, -0.75] if dt not in ("uint8", "bool") else [3, 2.5]
    elif op == "pow":
        ss = [2, 3, 0.5, -1.5, 0, -2] if dt in FLOATS else ([2, 0.5, 2.0, 0] if BITS[dt] <= 8 else [2, 3, 0.5, 2.0, 0])
    elif op == "mul":
        ss = [2, -3, 2.5, True] if dt not in ("uint8", "bool") else [2, 2.5, True]
    else:
        ss = [2, -3, 2.5, -0.5, True] if dt not in ("uint8", "bool") else [2, 2.5, True]
    return ss


def lscalars_for(op, dt):
    """Scalars on the left (scalar OP tensor)."""
    if op in ("div", "remainder"):
        return [7, -7, 2.5] if dt not in ("uint8", "bool") else [7, 2.5]
    return [3, -2, 1.5] if dt not in ("uint8",) else [3, 1.5]


def gen_binary():
    g = "binary"
    for oi, op in enumerate(BINARY_ARITH):
        form = "tt" if op in OPERATOR else "method"
        for di, dt in enumerate(ALL_T):
            shape = SHAPES[(oi + di) % len(SHAPES)]
            kb = KIND_B[op]
            b_in = inp(dt, shape, kb)
            add_case(g, f"{op}_{form}_{dt}_{shape_tag(shape)}", op, {"form": form}, [inp(dt, shape, KIND_A[op]), b_in])
            # broadcasting
            sa, sb = BROADCAST[(oi + di) % len(BROADCAST)]
            add_case(g, f"{op}_{form}_{dt}_bcast_{shape_tag(sa)}_{shape_tag(sb)}", op, {"form": form},
                     [inp(dt, sa, KIND_A[op]), inp(dt, sb, kb)])
            # tensor op scalar, scalar op tensor
            sform = "ts" if op in OPERATOR else "method_s"
            for s in (scalars_for(op, dt) if op not in ("maximum", "minimum") else []):
                if op == "pow" and dt not in FLOATS and isinstance(s, int) and s < 0:
                    continue
                add_case(g, f"{op}_{sform}_{dt}_{sanitize(repr(s))}", op, {"form": sform, "scalar": s},
                         [inp(dt, SHAPES[(oi + di + 1) % 4], KIND_A[op])])
            if op in OPERATOR:
                for s in lscalars_for(op, dt):
                    add_case(g, f"{op}_st_{dt}_{sanitize(repr(s))}", op, {"form": "st", "scalar": s},
                             [inp(dt, SHAPES[(oi + di + 2) % 4], kb)])
        # both operator and method forms for the operator ops
        if op in OPERATOR:
            add_case(g, f"{op}_method_float32", op, {"form": "method"}, [inp("float32", [3, 4], KIND_A[op]), inp("float32", [4], KIND_B[op])])
            add_case(g, f"{op}_method_s_int32", op, {"form": "method_s", "scalar": 3}, [inp("int32", [7], KIND_A[op])])
        # non-contiguous and padded inputs, on either side
        form = "tt" if op in OPERATOR else "method"
        for dt, nca in NC_BINARY:
            final = NC_FINAL[nca]
            add_case(g, f"{op}_{form}_{dt}_{nca.__name__}_lhs", op, {"form": form},
                     [nca(dt, KIND_A[op]), inp(dt, [final[-1]], KIND_B[op])])
            add_case(g, f"{op}_{form}_{dt}_{nca.__name__}_rhs", op, {"form": form},
                     [inp(dt, [1] + final[1:], KIND_A[op]), nca(dt, KIND_B[op])])
        add_case(g, f"{op}_{form}_float32_pad_and_expand", op, {"form": form},
                 [nc_pad("float32", KIND_A[op]), inp("float32", [4, 1], KIND_B[op]).v("expand", 4, 7)])
        add_case(g, f"{op}_{form}_int32_two_slices", op, {"form": form},
                 [nc_slice("int32", KIND_A[op]), nc_slice("int32", KIND_B[op])])
        if op in ("add", "div", "remainder", "maximum"):
            add_case(g, f"{op}_{form}_float32_big", op, {"form": form}, [inp("float32", BIG, KIND_A[op]), inp("float32", BIG, KIND_B[op])])
        # mixed dtypes: type promotion
        for da, db in MIXED:
            if op == "sub" and "bool" in (da, db):
                continue
            add_case(g, f"{op}_{form}_{da}_{db}", op, {"form": form}, [inp(da, [2, 3], KIND_A[op]), inp(db, [3], KIND_B[op])])
    # edge values
    nan, inf = math.nan, math.inf
    fa = [0.0, 1.0, -1.0, 5.0, -5.0, 3.0, inf, -inf, nan, 0.0, 1e30, -2.0]
    fb = [0.0, 0.0, 0.0, -2.0, 2.0, nan, 2.0, 3.0, 1.0, -1.0, 1e-30, -inf]
    for dt in FLOATS:
        a = round_to(dt, [x if not (dt == "float16" and abs(x) == 1e30) else 6e4 for x in fa])
        bb = round_to(dt, [x if not (dt == "float16" and abs(x) == 1e-30) else 1e-4 for x in fb])
        for op in ("add", "sub", "mul", "div", "maximum", "minimum"):
            form = "tt" if op in OPERATOR else "method"
            add_case(g, f"{op}_{dt}_edge", op, {"form": form}, [In(dt, [12], a), In(dt, [12], bb)])
        # remainder / floor_divide: negative operands, zero divisors (nan/inf), no inf divisor
        ra = round_to(dt, [5.0, -5.0, 5.0, -5.0, 7.5, -7.5, 0.0, 1.0, -1.0, 0.0, 6.0, -6.0])
        rb = round_to(dt, [2.0, 2.0, -2.0, -2.0, 2.0, -0.5, 3.0, 0.0, 0.0, 0.0, 3.0, 3.0])
        add_case(g, f"remainder_{dt}_edge", "remainder", {"form": "tt"}, [In(dt, [12], ra), In(dt, [12], rb)])
        add_case(g, f"floor_divide_{dt}_edge", "floor_divide", {"form": "method"}, [In(dt, [12], ra), In(dt, [12], rb)])
        pa = round_to(dt, [-2.0, -2.0, -8.0, 0.0, 0.0, 0.0, 2.0, 4.0, -1.0, 1.0, nan, 1.0])
        pb = round_to(dt, [3.0, 2.0, 1 / 3, 0.0, -1.0, 2.0, 0.5, -0.5, 0.5, nan, 0.0, inf])
        add_case(g, f"pow_{dt}_edge", "pow", {"form": "method"}, [In(dt, [12], pa), In(dt, [12], pb)])
    for dt in SINTS + ["uint8"]:
        signed = dt in SINTS
        a = [7, -7, 7, -7, 0, 1, -1, 6, -6, 9] if signed else [7, 0, 1, 6, 9, 255, 200, 3, 4, 5]
        b = [2, 2, -2, -2, 3, -3, 3, 3, -4, 10] if signed else [2, 3, 3, 4, 10, 16, 7, 9, 2, 1]
        for op in ("remainder", "floor_divide"):
            form = "tt" if op == "remainder" else "method"
            add_case(g, f"{op}_{dt}_negative_operands", op, {"form": form}, [In(dt, [10], a), In(dt, [10], b)])
            if signed:
                add_case(g, f"{op}_{dt}_scalar_neg", op, {"form": "ts" if op == "remainder" else "method_s", "scalar": -3},
                         [In(dt, [10], a)])
        add_case(g, f"div_{dt}_ints_true_division", "div", {"form": "tt"}, [In(dt, [10], a), In(dt, [10], b)])
    add_case(g, "uint8_add_wraps", "add", {"form": "tt"}, [In("uint8", [4], [250, 255, 1, 128]), In("uint8", [4], [10, 1, 255, 128])])
    add_case(g, "uint8_sub_wraps", "sub", {"form": "tt"}, [In("uint8", [4], [0, 1, 5, 128]), In("uint8", [4], [1, 2, 10, 200])])
    add_case(g, "uint8_mul_wraps", "mul", {"form": "tt"}, [In("uint8", [4], [16, 255, 2, 100]), In("uint8", [4], [16, 255, 200, 3])])
    add_case(g, "int_pow_tensor_exponent", "pow", {"form": "method"}, [In("int32", [6], [2, -3, 0, 5, -1, 7]), In("int32", [6], [10, 3, 0, 2, 5, 1])])
    add_case(g, "int_pow_float_tensor", "pow", {"form": "method"}, [In("int64", [4], [2, 3, 4, 9]), In("float32", [4], [2.0, 0.5, -1.0, 0.5])])
    # scalar promotion examples named in the issue
    add_case(g, "promote_int32_mul_2_5", "mul", {"form": "ts", "scalar": 2.5}, [inp("int32", [7], "mul")])
    add_case(g, "promote_int8_add_float_scalar_left", "add", {"form": "st", "scalar": 1.5}, [inp("int8", [7])])
    add_case(g, "promote_uint8_plus_int8", "add", {"form": "tt"}, [inp("uint8", [7]), inp("int8", [7])])
    add_case(g, "promote_int32_plus_float16", "add", {"form": "tt"}, [inp("int32", [7], "small"), inp("float16", [7])])
    add_case(g, "promote_bool_plus_bool", "add", {"form": "tt"}, [inp("bool", [7]), inp("bool", [7])])
    add_case(g, "promote_bool_plus_int_scalar", "add", {"form": "ts", "scalar": 1}, [inp("bool", [7])])
    add_case(g, "promote_bool_plus_bool_scalar", "add", {"form": "ts", "scalar": True}, [inp("bool", [7])])
    add_case(g, "promote_float16_times_int_scalar", "mul", {"form": "ts", "scalar": 3}, [inp("float16", [7])])
    add_case(g, "promote_int16_div_int_scalar", "div", {"form": "ts", "scalar": 4}, [inp("int16", [7])])
    add_case(g, "promote_float16_tensor_plus_float32_0d", "add", {"form": "tt"}, [inp("float16", [7]), inp("float32", [])])
    add_case(g, "promote_int8_tensor_plus_int64_0d", "add", {"form": "tt"}, [inp("int8", [7], "small"), inp("int64", [], "small")])
    add_case(g, "promote_int32_tensor_plus_float64_0d", "add", {"form": "tt"}, [inp("int32", [7]), inp("float64", [])])
    add_case(g, "promote_float32_0d_plus_float64_0d", "add", {"form": "tt"}, [inp("float32", []), inp("float64", [])])


CMP = ["lt", "le", "gt", "ge", "eq", "ne"]
BITW = ["bitwise_and", "bitwise_or", "bitwise_xor"]


def gen_compare_bitwise():
    g = "compare"
    for oi, op in enumerate(CMP):
        for di, dt in enumerate(ALL_T):
            shape = SHAPES[(oi + di) % len(SHAPES)]
            add_case(g, f"{op}_tt_{dt}_{shape_tag(shape)}", op, {"form": "tt"}, [inp(dt, shape, "cmp"), inp(dt, shape, "cmp")])
            sa, sb = BROADCAST[(oi + di) % len(BROADCAST)]
            add_case(g, f"{op}_tt_{dt}_bcast", op, {"form": "tt"}, [inp(dt, sa, "cmp"), inp(dt, sb, "cmp")])
            for s in [1, 0.5] + ([True] if op in ("eq", "ne") else []) + ([-1] if op == "lt" and dt not in ("uint8", "bool") else []):
                add_case(g, f"{op}_ts_{dt}_{sanitize(repr(s))}", op, {"form": "ts", "scalar": s}, [inp(dt, [7], "cmp")])
            add_case(g, f"{op}_st_{dt}", op, {"form": "st", "scalar": 1}, [inp(dt, [7], "cmp")])
        add_case(g, f"{op}_method_float32", op, {"form": "method"}, [inp("float32", [3, 4], "cmp"), inp("float32", [4], "cmp")])
        add_case(g, f"{op}_method_s_int64", op, {"form": "method_s", "scalar": 2}, [inp("int64", [7], "cmp")])
        for da, db in MIXED:
            add_case(g, f"{op}_tt_{da}_{db}", op, {"form": "tt"}, [inp(da, [2, 3], "cmp"), inp(db, [3], "cmp")])
        add_case(g, f"{op}_float32_nc", op, {"form": "tt"}, [nc_compose("float32", "cmp"), inp("float32", [6], "cmp")])
        add_case(g, f"{op}_int8_padded", op, {"form": "tt"}, [nc_pad("int8", "cmp"), nc_pad("int8", "cmp")])
        nan, inf = math.nan, math.inf
        for dt in FLOATS:
            a = round_to(dt, [nan, nan, 1.0, inf, -inf, inf, 0.0, -0.0, 1.0])
            b = round_to(dt, [nan, 1.0, nan, inf, inf, 1e4, -0.0, 0.0, 1.0])
            add_case(g, f"{op}_{dt}_nan_inf", op, {"form": "tt"}, [In(dt, [9], a), In(dt, [9], b)])
        add_case(g, f"{op}_int32_vs_2_5", op, {"form": "ts", "scalar": 2.5}, [In("int32", [5], [1, 2, 3, -3, 0])])
        add_case(g, f"{op}_int8_vs_uint8", op, {"form": "tt"}, [In("int8", [4], [-1, -128, 127, 5]), In("uint8", [4], [255, 128, 127, 5])])
    # bitwise
    for oi, op in enumerate(BITW):
        for di, dt in enumerate(["bool"] + INTS):
            shape = SHAPES[(oi + di) % len(SHAPES)]
            add_case(g, f"{op}_tt_{dt}_{shape_tag(shape)}", op, {"form": "tt"}, [inp(dt, shape, "bits"), inp(dt, shape, "bits")])
            sa, sb = BROADCAST[(oi + di) % len(BROADCAST)]
            add_case(g, f"{op}_tt_{dt}_bcast", op, {"form": "tt"}, [inp(dt, sa, "bits"), inp(dt, sb, "bits")])
            s = True if dt == "bool" else (0x5A if dt == "uint8" else -0x35)
            add_case(g, f"{op}_ts_{dt}", op, {"form": "ts", "scalar": s}, [inp(dt, [7], "bits")])
            add_case(g, f"{op}_st_{dt}", op, {"form": "st", "scalar": s}, [inp(dt, [7], "bits")])
            add_case(g, f"{op}_method_{dt}", op, {"form": "method"}, [inp(dt, [5], "bits"), nc_flip(dt, "bits").v("slice", 1, 0, 1, 1).v("squeeze", 1)])
        if op == "bitwise_and":
            add_case(g, f"{op}_tt_int32_big", op, {"form": "tt"}, [inp("int32", BIG, "bits"), inp("int32", BIG, "bits")])
        add_case(g, f"{op}_uint8_int8_promote", op, {"form": "tt"}, [inp("uint8", [7], "bits"), inp("int8", [7], "bits")])
        add_case(g, f"{op}_bool_int32_promote", op, {"form": "tt"}, [inp("bool", [7], "bits"), inp("int32", [7], "bits")])
        add_case(g, f"{op}_int16_permuted", op, {"form": "tt"}, [nc_permute("int16", "bits"), nc_permute("int16", "bits")])
    for di, dt in enumerate(["bool"] + INTS):
        shape = SHAPES[di % len(SHAPES)]
        add_case(g, f"bitwise_not_op_{dt}_{shape_tag(shape)}", "bitwise_not", {"form": "op"}, [inp(dt, shape, "bits")])
        add_case(g, f"bitwise_not_method_{dt}", "bitwise_not", {"form": "method"}, [nc_compose(dt, "bits")])
    for op in ("lshift", "rshift"):
        for di, dt in enumerate(INTS):
            shape = SHAPES[di % len(SHAPES)]
            va = "shl_val" if op == "lshift" else "bits"
            amt = "shl_amt" if op == "lshift" else "shr_amt"
            add_case(g, f"{op}_tt_{dt}_{shape_tag(shape)}", op, {"form": "tt"}, [inp(dt, shape, va), inp(dt, shape, amt)])
            add_case(g, f"{op}_ts_{dt}", op, {"form": "ts", "scalar": 3}, [inp(dt, [7], va)])
            add_case(g, f"{op}_st_{dt}", op, {"form": "st", "scalar": 5 if dt != "uint8" else 3}, [inp(dt, [7], "shl_amt")])
            add_case(g, f"{op}_method_{dt}", op, {"form": "method"}, [nc_slice(dt, va), inp(dt, [4], amt)])
            add_case(g, f"{op}_tt_{dt}_bcast", op, {"form": "tt"}, [inp(dt, [3, 1], va), inp(dt, [1, 5], amt)])
        add_case(g, f"{op}_int8_negative_values", op, {"form": "tt"}, [In("int8", [6], [-1, -7, -128 if op == "rshift" else -8, 5, -3, 64 if op == "rshift" else 7]),
                                                                       In("int8", [6], [1, 2, 3 if op == "rshift" else 4, 0, 1, 6 if op == "rshift" else 4])])
        add_case(g, f"{op}_int64_large", op, {"form": "tt"}, [In("int64", [4], [1, -1, 2**40, -(2**40)] if op == "lshift" else [2**62, -(2**62), -1, 12345]),
                                                              In("int64", [4], [62, 20, 20, 20] if op == "lshift" else [60, 61, 63, 3])])
        add_case(g, f"{op}_uint8_int32_promote", op, {"form": "tt"}, [inp("uint8", [5], "shl_val"), inp("int32", [5], "shl_amt")])
    # logical
    for op in ("logical_and", "logical_or"):
        for da, db in [("bool", "bool"), ("int32", "float32"), ("float16", "uint8"), ("int8", "bool")]:
            add_case(g, f"{op}_{da}_{db}", op, {"form": "method"}, [inp(da, [3, 4], "cmp"), inp(db, [4], "cmp")])
    for dt in ("bool", "int32", "float32", "float64", "float16"):
        add_case(g, f"logical_not_op_{dt}", "logical_not", {"form": "op"}, [inp(dt, [7], "cmp")])
    add_case(g, "logical_not_method_float32_nan", "logical_not", {"form": "method"}, [In("float32", [4], [math.nan, 0.0, -0.0, math.inf])])
    # where
    for di, dt in enumerate(ALL_T):
        shape = SHAPES[di % len(SHAPES)]
        add_case(g, f"where_free_{dt}_{shape_tag(shape)}", "where", {"form": "free"},
                 [inp("bool", shape), inp(dt, shape), inp(dt, shape)])
        add_case(g, f"where_method_{dt}_bcast", "where", {"form": "method"},
                 [inp("bool", [3, 1]), inp(dt, [1, 4]), inp(dt, [4])])
        s = True if dt == "bool" else (2 if dt in INTS else -1.5)
        add_case(g, f"where_method_s_{dt}", "where", {"form": "method_s", "scalar": s}, [inp("bool", [7]), inp(dt, [7])])
        add_case(g, f"where_free_sx_{dt}", "where", {"form": "free_sx", "scalar": s}, [inp("bool", [2, 7]), inp(dt, [7])])
        add_case(g, f"where_free_xs_{dt}", "where", {"form": "free_xs", "scalar": s}, [inp("bool", [7]), inp(dt, [2, 7])])
    for da, db in [("int32", "float16"), ("uint8", "int8"), ("bool", "float32"), ("float32", "float64"), ("int64", "bfloat16")]:
        add_case(g, f"where_free_{da}_{db}_promote", "where", {"form": "free"}, [inp("bool", [5]), inp(da, [5]), inp(db, [5])])
    add_case(g, "where_int32_float_scalar", "where", {"form": "free_xs", "scalar": 2.5}, [inp("bool", [5]), inp("int32", [5])])
    add_case(g, "where_float_scalar_int32", "where", {"form": "free_sx", "scalar": 2.5}, [inp("bool", [5]), inp("int32", [5])])
    add_case(g, "where_nc_views", "where", {"form": "free"}, [inp("bool", [4, 7]).v("flip", 0, 1), nc_pad("float32"), nc_permute("float32").v("select", 0, 1).v("slice", 1, 0, 1, 1).v("squeeze", 1).v("narrow", 0, 2, 1)])
    add_case(g, "where_big", "where", {"form": "free"}, [inp("bool", BIG), inp("float32", BIG), inp("float32", [1])])
    add_case(g, "where_nan", "where", {"form": "free"}, [In("bool", [3], [True, False, True]), In("float32", [3], [math.nan, 1.0, math.inf]), In("float32", [3], [0.0, math.nan, 2.0])])


def cast_values(src, dst, n=12):
    """Values of src whose conversion to dst is defined in C (no NaN/out-of-range float->int)."""
    if src == "bool":
        return vals("bool", n)
    if src in FLOATS:
        if dst in FLOATS or dst == "bool":
            base = [0.0, -0.0, 1.0, -1.5, 2.5, 0.1, -3.75, 1e-3, 1000.3, -65504.0, 1e5, 3.14159, math.nan, math.inf, -math.inf, 1e-6]
            if dst == "bool":
                base += [1e-30]
            vs = round_to(src, [x for x in base if src != "float16" or not math.isfinite(x) or abs(x) <= 65504])
            if src == "float64":
                vs += [1e300, -1e300, 1.0000000001, 123456789.123456789]
            if src == "float32":
                vs += round_to(src, [3e38, 1.00001, 16777217.0])
            return vs
        # float -> int: finite, inside the target's range, truncation toward zero
        if dst == "uint8":
            lo, hi = 0.0, 250.0
        else:
            b = BITS[dst]
            lo, hi = -(2.0 ** (b - 1)) * 0.99, 2.0 ** (b - 1) * 0.99
        if src == "float16":
            lo, hi = max(lo, -65000.0), min(hi, 65000.0)
        if src == "bfloat16":
            lo, hi = max(lo, -1e30), min(hi, 1e30)
        xs = list(rng.uniform(lo, hi, n - 6)) + [0.0, -0.0, 0.5, 0.99, min(hi, 100.7), max(lo, -0.7) if lo < 0 else 3.3]
        return round_to(src, xs)
    # int sources: everything, including values that wrap in a narrower int
    return vals(src, n, "bits")


def gen_cast():
    g = "cast"
    for si, src in enumerate(ALL_T):
        for di, dst in enumerate(ALL_T):
            v = cast_values(src, dst)
            add_case(g, f"to_{src}_to_{dst}", "to", {"dtype": D(dst)}, [In(src, [len(v)], v)], tol=(0, 0))
        add_case(g, f"to_{src}_to_float32_nc", "to", {"dtype": D("float32")}, [nc_compose(src, "small" if src not in FLOATS else "any")], tol=(0, 0))
        add_case(g, f"to_{src}_to_int32_padded", "to", {"dtype": D("int32")}, [nc_pad(src, "small" if src not in FLOATS else "grid")], tol=(0, 0))
        add_case(g, f"to_{src}_empty", "to", {"dtype": D("float64")}, [In(src, [0, 3], [])], tol=(0, 0))
    add_case(g, "to_float32_to_float16_rounding", "to", {"dtype": D("float16")},
             [In("float32", [8], [1.0009765625 / 2 + 0.5, 1.00048828125, 1.00146484375, 65519.0, 65520.0, 6e-8, 3e-8, 1e-9])], tol=(0, 0))
    add_case(g, "to_float32_to_bfloat16_rounding", "to", {"dtype": D("bfloat16")},
             [In("float32", [6], round_to("float32", [1.00390625, 1.01171875, 1.005859375, 3.0e38, 3.4e38, 1e-39]))], tol=(0, 0))
    add_case(g, "to_int64_to_float32_rounding", "to", {"dtype": D("float32")}, [In("int64", [4], [2**24 + 1, 2**24 + 3, 2**53 + 1, -(2**63)])], tol=(0, 0))
    add_case(g, "to_int32_to_float16_overflow", "to", {"dtype": D("float16")}, [In("int32", [4], [65504, 65519, 65520, -100000])], tol=(0, 0))


def tol_for_sum(x, axes, keepdim, dt_out, mean=False):
    """Absolute tolerance from the magnitude of the reduced terms (summation order differs)."""
    if dt_out not in FLOATS or x.numel() == 0:
        return None
    eps = {"float32": 1.2e-7, "float64": 2.3e-16, "float16": 1.2e-7, "bfloat16": 1.2e-7}[dt_out]
    ax = axes if axes else tuple(range(x.dim()))
    xa = x.double().abs().nan_to_num(0, 0, 0)
    s = float(torch.sum(xa, dim=ax).max()) if x.dim() else float(xa)
    n = max(1, numel([x.shape[d] for d in ax]) if x.dim() else 1)
    if mean:
        s /= n
    base = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "float16": (1e-2, 1e-3), "bfloat16": (1e-2, 1e-3)}[dt_out]
    return (base[0], max(base[1], 16 * eps * s))


def gen_reduce():
    g = "reduce"
    red_shapes = [([4, 7, 3], None), ([4, 7, 3], 1), ([4, 7, 3], -1), ([4, 7, 3], [0, 2]), ([4, 7, 3], [-1, 0]),
                  ([2, 3, 2, 7], [1, 3]), ([33], 0), (BIG, None), ([5, 33], -1), ([0, 3], 0), ([0, 3], 1),
                  ([3, 0, 2], [0, 1]), ([], None), ([1], 0), ([7, 1], [0, 1]), ([3, 4], [1, 0])]
    for op in ("sum", "max", "min", "mean", "prod"):
        dts = ALL_T if op != "mean" else FLOATS
        for di, dt in enumerate(dts):
            for ri, (shape, axes) in enumerate(red_shapes):
                if (ri + di) % 3 and not (dt == "float32" and ri < 9):
                    continue  # a rotating subset per dtype; float32 gets most
                if op in ("max", "min") and 0 in shape and (axes is None or (shape.index(0) in ([axes] if isinstance(axes, int) else axes))):
                    continue  # torch: max over an empty dim is an error
                if shape == BIG and op == "prod":
                    continue
                kind = "near1" if op == "prod" else ("cmp" if op in ("max", "min") and dt in INTS else "any")
                if op == "prod" and dt in INTS + ["bool"]:
                    kind = "prod"
                for keepdim in ((False, True) if ri % 2 == 0 else (False,)):
                    x = inp(dt, shape, kind)
                    args = {}
                    if axes is not None:
                        args["axes"] = axes
                    if keepdim:
                        args["keepdim"] = True
                    tol = None
                    if op in ("sum", "mean"):
                        tx = to_torch(x)
                        dt_out = dt if dt in FLOATS else "int64"
                        ax = (axes,) if isinstance(axes, int) else (tuple(axes) if axes is not None else None)
                        tol = tol_for_sum(tx, ax, keepdim, dt_out, mean=(op == "mean"))
                    if op == "prod" and dt in FLOATS:
                        n = numel(shape)
                        tol = (max(1e-5 if dt == "float32" else (1e-12 if dt == "float64" else 1e-2), 4 * n * 1.2e-7 if dt != "float64" else 4 * n * 2.3e-16), 1e-6 if dt != "float64" else 1e-12)
                    add_case(g, f"{op}_{dt}_{shape_tag(shape)}_ax{sanitize(repr(axes))}_{'keep' if keepdim else 'drop'}", op, args, [x], tol=tol)
        # non-contiguous inputs, and the compositions named in the issue
        for dt in ("float32", "int32", "float16") if op != "mean" else ("float32", "float16"):
            kind = "near1" if op == "prod" else ("cmp" if dt in INTS and op != "sum" else "any")
            if op == "prod" and dt in INTS:
                kind = "prod"
            for nc, axes in ((nc_permute, [0, 2]), (nc_pad, -1), (nc_compose, None), (nc_flip, 0), (nc_expand, 1), (nc_expand, 0)):
                x = nc(dt, kind)
                args = {} if axes is None else {"axes": axes}
                tol = tol_for_sum(to_torch(x), None if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes)), False, dt) if op in ("sum", "mean") else None
                if op == "prod" and dt in FLOATS:
                    tol = (1e-2 if dt == "float16" else 5e-5, 1e-6)
                add_case(g, f"{op}_{dt}_{nc.__name__}_ax{sanitize(repr(axes))}", op, args, [x], tol=tol)
    # expand then sum: the reduction over a broadcast dim
    add_case(g, "sum_expand_then_sum", "sum", {"axes": 0}, [inp("float32", [1, 33]).v("expand", 1023, 33)],
             tol=(1e-5, 1e-3))
    add_case(g, "sum_expand_then_sum_int", "sum", {"axes": [0, 1]}, [inp("int32", [4, 1]).v("expand", 4, 1023)])
    # dtype argument, int accumulation
    add_case(g, "sum_int32_gives_int64", "sum", {}, [inp("int32", [33])])
    add_case(g, "sum_bool_gives_int64", "sum", {"axes": 0}, [inp("bool", [7, 3])])
    add_case(g, "sum_uint8_no_wrap", "sum", {}, [In("uint8", [4], [255, 255, 255, 255])])
    add_case(g, "sum_int8_dtype_int32", "sum", {"axes": 0, "keepdim": False, "dtype": D("int32")}, [inp("int8", [7, 2], "bits")])
    add_case(g, "sum_float16_dtype_float32", "sum", {"axes": -1, "keepdim": True, "dtype": D("float32")}, [inp("float16", [3, 33])], tol=(1e-5, 1e-4))
    add_case(g, "sum_int32_dtype_float64", "sum", {"axes": [0, 1], "keepdim": False, "dtype": D("float64")}, [inp("int32", [4, 7])])
    add_case(g, "prod_int8_dtype_int64", "prod", {"axes": 0, "keepdim": True, "dtype": D("int64")}, [inp("int8", [5, 3], "small")])
    add_case(g, "prod_int32_gives_int64", "prod", {}, [In("int32", [4], [100000, 100000, 3, -1])])
    add_case(g, "mean_empty_dim_nan", "mean", {"axes": 0}, [In("float32", [0, 3], [])])
    add_case(g, "mean_all_empty_nan", "mean", {}, [In("float32", [0], [])])
    add_case(g, "sum_empty_all", "sum", {}, [In("float32", [0, 3], [])])
    add_case(g, "prod_empty_all", "prod", {}, [In("float64", [2, 0], [])])
    nan, inf = math.nan, math.inf
    for op in ("max", "min", "sum", "mean", "prod"):
        for dt in ("float32", "float16", "float64", "bfloat16"):
            xs = round_to(dt, [1.0, nan, -2.0, 3.0, -inf, 2.0, inf, 0.5, 1.0, 4.0, -1.0, 0.0])
            add_case(g, f"{op}_{dt}_nan_inf_rows", op, {"axes": 1}, [In(dt, [4, 3], xs)])
    # softmax / log_softmax
    for op in ("softmax", "log_softmax"):
        for di, dt in enumerate(FLOATS):
            for si, (shape, axis) in enumerate((([4, 7, 3], -1), ([33], 0), ([1], 0), ([0, 4], 1), ([4, 7, 3], 0),
                                                ([4, 7, 3], 1), ([2, 3, 5, 7], 2), ([3, 1], 1), ([5, 0], 1))):
                if si >= 4 and dt != "float32" and (si + di) % 2:
                    continue
                x = inp(dt, shape)
                add_case(g, f"{op}_{dt}_{shape_tag(shape)}_ax{axis}", op, {"axis": axis}, [x], tol=sm_tol(op, dt, x))
            big = inp(dt, [3, 7], "wide")
            big.values = [v * (10 if dt != "float16" else 1) for v in big.values]
            big.values = round_to(dt, big.values)
            add_case(g, f"{op}_{dt}_large_values", op, {"axis": 1}, [big], tol=sm_tol(op, dt, big))
            xs = round_to(dt, [1000.0, 1000.0, -inf, 0.0, -1000.0, 1000.0, -inf, 3.0, -inf, -inf, 5.0, 1.0,
                               -inf, -inf, -inf, -inf])
            if dt == "float16":
                xs = [x if not math.isfinite(x) or abs(x) < 1000 else math.copysign(1000.0, x) for x in xs]
            x = In(dt, [4, 4], xs[:12] + [7.0, -inf, 1.0, 2.0])
            add_case(g, f"{op}_{dt}_1000_and_neginf", op, {"axis": -1}, [x], tol=sm_tol(op, dt, x))
            add_case(g, f"{op}_{dt}_all_neginf_row_is_nan", op, {"axis": 1}, [In(dt, [2, 3], [-inf, -inf, -inf, 1.0, 2.0, 3.0])])
            x = nc_compose(dt)
            add_case(g, f"{op}_{dt}_nc", op, {"axis": 0}, [x], tol=sm_tol(op, dt, x))
            x = nc_pad(dt)
            add_case(g, f"{op}_{dt}_padded", op, {"axis": -1}, [x], tol=sm_tol(op, dt, x))
        add_case(g, f"{op}_float32_big", op, {"axis": 0}, [inp("float32", BIG)], tol=(1e-5, 1e-6))
        add_case(g, f"{op}_float32_expanded", op, {"axis": 1}, [inp("float32", [3, 1]).v("expand", 3, 33)])


def sm_tol(op, dt, x):
    """softmax outputs lie in [0, 1]: the dtype's tolerance. log_softmax outputs are x - max - log(sum):
    their absolute error grows with |x| (x - max is rounded in float32, or float64)."""
    base = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "float16": (1e-2, 1e-3), "bfloat16": (1e-2, 1e-3)}[dt]
    if op == "softmax":
        return None
    finite = [abs(v) for v in x.values if math.isfinite(v)]
    m = max(finite) if finite else 0.0
    eps = 2.3e-16 if dt == "float64" else 1.2e-7
    return (base[0], max(base[1], 8 * eps * m))


def gen_movement():
    g = "movement"
    for di, dt in enumerate(ALL_T):
        k = "any"
        x = lambda shape: inp(dt, shape, k)  # noqa: E731
        add_case(g, f"reshape_{dt}", "reshape", {"shape": [3, -1]}, [x([2, 3, 5])])
        add_case(g, f"view_{dt}", "view", {"shape": [5, 1, 6]}, [x([2, 3, 5])])
        add_case(g, f"permute_{dt}", "permute", {"order": [1, 2, 0]}, [x([2, 3, 5])])
        add_case(g, f"transpose_{dt}", "transpose", {"dim0": 0, "dim1": -1}, [x([4, 1, 7])])
        add_case(g, f"expand_{dt}", "expand", {"shape": [2, 3, 7]}, [x([3, 1])])
        add_case(g, f"pad_{dt}", "pad", {"pads": [1, 2, 0, 1], "value": pad_value_for(dt, k)}, [x([3, 4])])
        add_case(g, f"slice_{dt}", "slice", {"dim": 1, "start": 1, "end": -1, "step": 2}, [x([3, 33])])
        add_case(g, f"flip_{dt}", "flip", {"dims": [0, 2]}, [x([2, 3, 5])])
        add_case(g, f"cat_{dt}", "cat", {"dim": 1}, [x([2, 3]), x([2, 1]), x([2, 0]), x([2, 4])])
        add_case(g, f"stack_{dt}", "stack", {"dim": 1}, [x([3, 4]), x([3, 4]), nc_slice(dt).v("slice", 0, 0, 3, 1)])
        add_case(g, f"contiguous_{dt}", "contiguous", {}, [nc_compose(dt)])
        add_case(g, f"select_{dt}", "select", {"dim": 1, "index": -2}, [x([4, 7, 3])])
        add_case(g, f"narrow_{dt}", "narrow", {"dim": 0, "start": 1, "length": 2}, [x([4, 7])])
        add_case(g, f"identity_nc_{dt}", "identity", {}, [NC_VIEWS[di % len(NC_VIEWS)](dt)])
    f = lambda shape: inp("float32", shape)  # noqa: E731
    i = lambda shape: inp("int64", shape)  # noqa: E731
    # reshape / view
    for src, dst in [([2, 3, 5], [30]), ([2, 3, 5], [-1]), ([2, 3, 5], [5, -1]), ([30], [2, 3, 5]), ([7], [7, 1]),
                     ([1], []), ([], [1, 1]), ([0, 3], [3, 0]), ([0, 3], [-1, 3]), ([1023], [3, 11, 31]),
                     ([4, 1, 7], [28]), ([1, 1], [-1]), ([6, 0], [0, 2, 3])]:
        add_case(g, f"reshape_{shape_tag(src)}_to_{shape_tag(dst)}", "reshape", {"shape": dst}, [f(src)])
    add_case(g, "view_int64_2x15", "view", {"shape": [2, 15]}, [i([3, 10])])
    # permute / transpose / t
    for src, order in [([2, 3, 5], [2, 0, 1]), ([2, 3, 5], [0, 1, 2]), ([2, 3, 5, 7], [3, 1, 0, 2]), ([5], [0]),
                       ([0, 3], [1, 0]), ([2, 3], [-1, 0]), ([33, 7], [1, 0])]:
        add_case(g, f"permute_{shape_tag(src)}_{sanitize(repr(order))}", "permute", {"order": order}, [f(src)])
    for src, a, b in [([2, 3, 5], 0, 2), ([2, 3, 5], -1, -2), ([7], 0, 0), ([2, 3, 5, 7], 1, 3)]:
        add_case(g, f"transpose_{shape_tag(src)}_{a}_{b}", "transpose", {"dim0": a, "dim1": b}, [f(src)])
    add_case(g, "t_2d", "t", {}, [f([3, 7])])
    add_case(g, "t_1d", "t", {}, [f([7])])
    add_case(g, "t_of_sliced", "t", {}, [nc_slice("float32")])
    # expand
    for src, dst in [([3, 1], [3, 4]), ([1], [7]), ([], [2, 3]), ([3, 1], [-1, 5]), ([1, 1, 7], [2, 3, 7]),
                     ([7], [33, 7]), ([2, 1], [3, 2, 33]), ([1, 0], [3, 0]), ([3], [0, 3])]:
        add_case(g, f"expand_{shape_tag(src)}_to_{sanitize(repr(dst))}", "expand", {"shape": dst}, [f(src)])
    add_case(g, "expand_of_permuted", "expand", {"shape": [2, 5, 3, 4]}, [nc_permute("float32")])
    # flatten
    for src, s, e in [([2, 3, 5], None, None), ([2, 3, 5], 1, None), ([2, 3, 5], 0, 1), ([2, 3, 5, 7], 1, 2), ([], None, None),
                      ([7], None, None), ([0, 3], None, None), ([2, 3, 5], -2, -1)]:
        args = {}
        if s is not None:
            args["start_dim"] = s
        if e is not None:
            args["end_dim"] = e
        add_case(g, f"flatten_{shape_tag(src)}_{s}_{e}", "flatten", args, [f(src)])
    add_case(g, "flatten_of_permuted", "flatten", {}, [nc_permute("float32")])
    # squeeze / unsqueeze
    for src, d in [([1, 3, 1, 5], None), ([1, 3, 1, 5], 0), ([1, 3, 1, 5], 2), ([1, 3, 1, 5], -2), ([1, 3, 1, 5], 1),
                   ([1], None), ([1], 0), ([], None), ([0, 1], 1), ([7], 0)]:
        add_case(g, f"squeeze_{shape_tag(src)}_{d}", "squeeze", {} if d is None else {"dim": d}, [f(src)])
    for src, d in [([3, 5], 0), ([3, 5], 1), ([3, 5], 2), ([3, 5], -1), ([3, 5], -3), ([], 0), ([0], 1)]:
        add_case(g, f"unsqueeze_{shape_tag(src)}_{d}", "unsqueeze", {"dim": d}, [f(src)])
    # pad
    for src, pads, v in [([3, 4], [1, 1], 0), ([3, 4], [1, 2, 3, 4], 1.5), ([7], [0, 3], -2), ([2, 3, 5], [1, 0, 0, 0, 2, 1], 0.25),
                         ([3, 4], [0, 0, 2, 0], math.nan), ([3, 4], [-1, 1], 9.0), ([3, 4], [1, -2, -1, 0], 7.0),
                         ([0, 3], [1, 1], 5.0), ([0, 3], [0, 0, 1, 1], 5.0), ([33], [1023 - 33, 0], 0.5)]:
        args = {"pads": pads, "value": v}
        add_case(g, f"pad_{shape_tag(src)}_{sanitize(repr(pads))}", "pad", args, [f(src)])
    add_case(g, "pad_default_value", "pad", {"pads": [2, 1]}, [f([3, 4])])
    add_case(g, "pad_int32_int_value", "pad", {"pads": [1, 1, 1, 1], "value": -7}, [inp("int32", [2, 3])])
    add_case(g, "pad_uint8", "pad", {"pads": [0, 2], "value": 200}, [inp("uint8", [2, 3])])
    add_case(g, "pad_bool_true", "pad", {"pads": [1, 0], "value": True}, [inp("bool", [2, 3])])
    add_case(g, "pad_float16_value", "pad", {"pads": [1, 1], "value": 2.5}, [inp("float16", [3])])
    add_case(g, "pad_of_permuted", "pad", {"pads": [1, 0, 0, 2, 1, 1], "value": -1.0}, [nc_permute("float32")])
    add_case(g, "pad_of_sliced_flipped", "pad", {"pads": [2, 2], "value": 3.0}, [nc_slice("float32").v("flip", 1)])
    add_case(g, "pad_of_padded", "pad", {"pads": [1, 1, 1, 1], "value": 2.0}, [nc_pad("float32")])
    # slice
    for src, d, s, e, st in [([10], 0, 2, 7, 1), ([10], 0, None, None, 3), ([10], 0, -3, None, 1), ([10], 0, None, -3, 2),
                             ([10], 0, -100, 100, 1), ([10], 0, 7, 2, 1), ([10], 0, 5, 5, 1), ([3, 33], 1, 1, None, 4),
                             ([3, 33], -1, -7, -1, 2), ([4, 7, 3], 0, 1, 3, 1), ([4, 7, 3], 2, None, None, 2), ([0, 3], 1, 1, 2, 1),
                             ([1023], 0, 1, 1022, 7), ([10], 0, 12, 20, 1)]:
        add_case(g, f"slice_{shape_tag(src)}_{d}_{s}_{e}_{st}", "slice", {"dim": d, "start": s, "end": e, "step": st}, [f(src)])
    add_case(g, "slice_default_step", "slice", {"dim": 0, "start": 1, "end": 3}, [f([5, 2])])
    # narrow / select
    for src, d, s, n in [([10], 0, 0, 10), ([10], 0, 3, 4), ([10], 0, -4, 2), ([4, 7], 1, 6, 1), ([4, 7], -1, 2, 0), ([0, 3], 1, 1, 2)]:
        add_case(g, f"narrow_{shape_tag(src)}_{d}_{s}_{n}", "narrow", {"dim": d, "start": s, "length": n}, [f(src)])
    for src, d, idx in [([10], 0, 0), ([10], 0, -1), ([4, 7, 3], 1, 6), ([4, 7, 3], -1, 0), ([4, 7, 3], 0, -4), ([3, 0], 0, 1)]:
        add_case(g, f"select_{shape_tag(src)}_{d}_{idx}", "select", {"dim": d, "index": idx}, [f(src)])
    # flip
    for src, dims in [([10], 0), ([10], [0]), ([3, 4], [1]), ([3, 4], [0, 1]), ([2, 3, 5], -1), ([2, 3, 5], [2, 0]), ([0, 3], 1), ([], [])]:
        add_case(g, f"flip_{shape_tag(src)}_{sanitize(repr(dims))}", "flip", {"dims": dims}, [f(src)])
    # cat / stack
    add_case(g, "cat_dim0", "cat", {"dim": 0}, [f([2, 3]), f([1, 3]), f([4, 3])])
    add_case(g, "cat_default_dim", "cat", {}, [f([2, 3]), f([1, 3])])
    add_case(g, "cat_neg_dim", "cat", {"dim": -1}, [f([2, 3, 1]), f([2, 3, 4]), f([2, 3, 2])])
    add_case(g, "cat_one_tensor", "cat", {"dim": 0}, [f([3, 4])])
    add_case(g, "cat_with_empty", "cat", {"dim": 0}, [f([0, 3]), f([2, 3]), f([0, 3])])
    add_case(g, "cat_promotes_int32_float16", "cat", {"dim": 0}, [inp("int32", [2]), inp("float16", [3])])
    add_case(g, "cat_promotes_uint8_int8", "cat", {"dim": 0}, [inp("uint8", [2]), inp("int8", [3])])
    add_case(g, "cat_promotes_bool_int64", "cat", {"dim": 0}, [inp("bool", [2]), inp("int64", [3])])
    add_case(g, "cat_views", "cat", {"dim": 2}, [nc_permute("float32"), inp("float32", [5, 3, 1]).v("expand", 5, 3, 3), nc_pad("float32").v("slice", 0, 0, 3, 1).v("unsqueeze", 0).v("expand", 5, 3, 7).v("transpose", 1, 2).v("slice", 1, 0, 4, 2).v("transpose", 1, 2)])
    add_case(g, "cat_big", "cat", {"dim": 0}, [f([1000]), f([23])])
    add_case(g, "stack_dim0", "stack", {"dim": 0}, [f([3, 4]), f([3, 4]), f([3, 4])])
    add_case(g, "stack_default_dim", "stack", {}, [i([7]), i([7])])
    add_case(g, "stack_last_dim", "stack", {"dim": 2}, [f([3, 4]), f([3, 4])])
    add_case(g, "stack_neg_dim", "stack", {"dim": -1}, [f([2, 3]), f([2, 3])])
    add_case(g, "stack_scalars", "stack", {"dim": 0}, [f([]), f([]), f([])])
    add_case(g, "stack_empty", "stack", {"dim": 1}, [f([0, 3]), f([0, 3])])
    add_case(g, "stack_views", "stack", {"dim": 1}, [nc_flip("float32"), nc_slice("float32").v("slice", 0, 0, 5, 1).v("pad", "float", 0.0, 1, 1)])
    # compositions named in the issue
    add_case(g, "compose_permute_slice_reshape", "reshape", {"shape": [-1, 5]}, [inp("float32", [4, 5, 6]).v("permute", 2, 0, 1).v("slice", 1, 1, None, 2)])
    add_case(g, "compose_pad_of_permuted_then_flip", "flip", {"dims": [0, 1]}, [nc_permute("int32").v("pad", "int", 9, 1, 1, 2, 0)])
    add_case(g, "compose_expand_reshape", "reshape", {"shape": [6, -1]}, [inp("float32", [3, 1, 4]).v("expand", 3, 2, 4)])
    add_case(g, "compose_flip_transpose_contiguous", "contiguous", {}, [inp("float32", [3, 33]).v("flip", 1).v("transpose", 0, 1).v("slice", 0, 3, 30, 3)])
    add_case(g, "compose_select_unsqueeze_expand", "expand", {"shape": [3, 4, 7]}, [inp("float32", [5, 7]).v("select", 0, 2).v("unsqueeze", 0).v("unsqueeze", 0)])
    add_case(g, "compose_narrow_flatten", "flatten", {}, [inp("float32", [4, 7, 3]).v("narrow", 1, 2, 3).v("permute", 2, 1, 0)])
    add_case(g, "compose_squeeze_of_sliced", "squeeze", {}, [inp("float32", [3, 4]).v("slice", 0, 1, 2, 1).v("unsqueeze", 2)])
    add_case(g, "compose_reshape_of_transposed", "reshape", {"shape": [2, 3, 5, 7]}, [inp("int64", [30, 7]).v("transpose", 0, 1).v("reshape", 7, 30).v("transpose", 0, 1)])
    add_case(g, "compose_double_pad_slice", "slice", {"dim": 0, "start": 1, "end": None, "step": 2}, [inp("float64", [5, 5]).v("pad", "float", -1.0, 2, 2, 2, 2).v("transpose", 0, 1)])
    add_case(g, "compose_flip_flip", "flip", {"dims": [1]}, [inp("float32", [4, 7]).v("flip", 1).v("slice", 1, 1, 6, 1)])


def gen_unsigned():
    """uint16/uint32/uint64 (absent from torch 1.13): numpy, with PyTorch's semantics."""
    g = "unsigned"

    def add_np(name, op, args, ins, expected, tol=None):
        add_case(g, name, op, args, ins, expected=expected, tol=tol)

    for dt in UINTS_NP:
        for shape in ([], [0], [7], [33], [2, 3, 5]):
            x = inp(dt, shape, "bits")
            add_np(f"from_vector_{dt}_{shape_tag(shape)}", "identity", {}, [x], (dt, shape, x.values))
        lim = In(dt, [3], [0, 2 ** BITS[dt] - 1, 2 ** (BITS[dt] - 1)])
        add_np(f"from_vector_{dt}_limits", "identity", {}, [lim], (dt, [3], lim.values))
        x = inp(dt, [3, 4, 5], "bits").v("permute", 2, 0, 1)
        a = np_input(x)
        add_np(f"identity_{dt}_permuted", "identity", {}, [x], (dt, list(a.shape), [int(v) for v in a.reshape(-1)]))
        # arithmetic that wraps, floor division, comparisons, bitwise, shifts, min/max
        for op, ka, kb in [("add", "any", "any"), ("sub", "any", "any"), ("mul", "mul", "mul"), ("floor_divide", "any", "nonzero"),
                           ("remainder", "any", "nonzero"), ("maximum", "any", "any"), ("minimum", "any", "any"),
                           ("bitwise_and", "bits", "bits"), ("bitwise_or", "bits", "bits"), ("bitwise_xor", "bits", "bits"),
                           ("lshift", "bits", "shr_amt"), ("rshift", "bits", "shr_amt"), ("lt", "cmp", "cmp"), ("eq", "cmp", "cmp"),
                           ("ge", "cmp", "cmp"), ("ne", "cmp", "cmp"), ("div", "any", "nonzero")]:
            form = "tt" if op in OPERATOR | set(CMP) | set(BITW) | {"lshift", "rshift"} else "method"
            ins = [inp(dt, [7], ka), inp(dt, [7], kb)]
            add_np(f"{op}_{form}_{dt}", op, {"form": form}, ins, np_binary(op, "tt", ins, None))
            ins = [inp(dt, [3, 1], ka), inp(dt, [4], kb)]
            add_np(f"{op}_{form}_{dt}_bcast", op, {"form": form}, ins, np_binary(op, "tt", ins, None))
        for op, s in [("add", 7), ("mul", 3), ("add", 2.5), ("lt", 100), ("remainder", 7), ("rshift", 2), ("bitwise_and", 0xFF)]:
            form = "ts"
            ins = [inp(dt, [7], "any")]
            add_np(f"{op}_ts_{dt}_{sanitize(repr(s))}", op, {"form": form, "scalar": s}, ins, np_binary(op, "ts", ins, s))
        for op, s in [("sub", 5), ("floor_divide", 1000)]:
            form = "st" if op in OPERATOR else "method_s"
            if form == "method_s":
                ins = [inp(dt, [7], "any")]
                add_np(f"{op}_{form}_{dt}", op, {"form": form, "scalar": s}, ins, np_binary(op, "ts", ins, s))
            else:
                ins = [inp(dt, [7], "small")]
                add_np(f"{op}_st_{dt}", op, {"form": "st", "scalar": s}, ins, np_binary(op, "st", ins, s))
        x = inp(dt, [7], "bits")
        add_np(f"bitwise_not_{dt}", "bitwise_not", {"form": "op"}, [x], (dt, [7], [wrap(~v, dt) for v in x.values]))
        # reductions: max/min keep the dtype; sum accumulates in int64 (torch.sum's rule for integers)
        x = inp(dt, [4, 7], "bits")
        a = np.array(x.values, dtype=object).reshape(4, 7)
        add_np(f"max_{dt}_ax1", "max", {"axes": 1}, [x], (dt, [4], [max(r) for r in a.tolist()]))
        add_np(f"min_{dt}_all", "min", {}, [x], (dt, [], [min(x.values)]))
        if dt != "uint64":
            add_np(f"sum_{dt}_ax0_gives_int64", "sum", {"axes": 0}, [x], ("int64", [7], [wrap(sum(c), "int64") for c in zip(*a.tolist())]))
        # where
        c, y = inp("bool", [7]), inp(dt, [7], "bits")
        x = inp(dt, [7], "bits")
        add_np(f"where_{dt}", "where", {"form": "free"}, [c, x, y], (dt, [7], [p if cc else q for cc, p, q in zip(c.values, x.values, y.values)]))
        # flip / slice / pad views of unsigned data
        x = inp(dt, [4, 5], "bits")
        a = np.array(x.values, dtype=object).reshape(4, 5)
        add_np(f"flip_{dt}", "flip", {"dims": [0, 1]}, [x], (dt, [4, 5], [int(v) for v in a[::-1, ::-1].reshape(-1)]))
        add_np(f"pad_{dt}", "pad", {"pads": [1, 1], "value": 9}, [x], (dt, [4, 7], [int(v) for v in np.pad(a, ((0, 0), (1, 1)), constant_values=9).reshape(-1)]))
        add_np(f"cat_{dt}", "cat", {"dim": 0}, [x, In(dt, [1, 5], [1, 2, 3, 4, 5])], (dt, [5, 5], x.values + [1, 2, 3, 4, 5]))
    # promotion with the unsigned types
    for da, db in [("uint16", "int16"), ("uint16", "int8"), ("uint16", "uint8"), ("uint32", "int32"), ("uint32", "int8"),
                   ("uint16", "float16"), ("uint32", "float32"), ("uint64", "uint8"), ("uint64", "bool"), ("uint64", "float64"),
                   ("uint16", "uint32"), ("uint32", "int64"), ("int32", "uint16")]:
        for op in ("add", "mul", "lt"):
            ka = "small" if op == "mul" else "any"
            ins = [inp(da, [2, 3], ka), inp(db, [3], "small" if op == "mul" else ("cmp" if op == "lt" else "any"))]
            add_np(f"{op}_tt_{da}_{db}", op, {"form": "tt"}, ins, np_binary(op, "tt", ins, None))
    # casts to and from the unsigned types
    others = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"] + UINTS_NP
    for src in UINTS_NP:
        for dst in others:
            if dst == src:
                continue
            v = vals(src, 8, "bits") if dst != "float16" else ints_in(0, 2048, 4) + ints_in(60000, min(2 ** BITS[src] - 1, 70000), 4)
            ex = [cast_py(x, dst) for x in v]
            add_np(f"to_{src}_to_{dst}", "to", {"dtype": D(dst)}, [In(src, [8], v)], (dst, [8], ex), tol=(0, 0))
    for src in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]:
        for dst in UINTS_NP:
            if src in FLOATS:
                hi = min(2.0 ** BITS[dst] * 0.99, 65000.0 if src == "float16" else 2.0**53)
                v = round_to(src, list(rng.uniform(0, hi, 6)) + [0.0, 0.75])
            else:
                v = vals(src, 8, "bits")
            ex = [cast_py(x, dst) for x in v]
            add_np(f"to_{src}_to_{dst}", "to", {"dtype": D(dst)}, [In(src, [8], v)], (dst, [8], ex), tol=(0, 0))


def main():
    outdir = default_outdir()
    gen_creation()
    gen_unary()
    gen_binary()
    gen_compare_bitwise()
    gen_cast()
    gen_reduce()
    gen_movement()
    gen_unsigned()
    # "that script": the headers of the existing files say so; keeping it keeps them byte-identical
    # (this script's docstring points on to scripts/fixtures_lib.py).
    total = write_groups(outdir, generator="scripts/make_fixtures.py", format_ref="that script")
    size = sum(os.path.getsize(os.path.join(outdir, f"{g}.txt")) for g in CASES)
    for group, cases in CASES.items():
        print(f"{group:10s} {len(cases):5d} cases")
    print(f"total      {total:5d} cases, {size / 1e6:.2f} MB in {os.path.normpath(outdir)}")
    if SKIPPED:
        print(f"{len(SKIPPED)} combinations skipped because PyTorch rejects them (not parity cases):")
        for s in SKIPPED:
            print("  " + s)


if __name__ == "__main__":
    main()
