#!/usr/bin/python3
"""Writes tests/fixtures/core_grads.txt: PyTorch autograd gradients (and forward values) of the ops
that existed before autograd: add/sub/mul/div (tensor-tensor with broadcasting, tensor-scalar,
scalar-tensor), neg, reciprocal, exp2, log2, sin, cos, where, the reductions sum/mean/prod/max/min,
softmax/log_softmax, the movement ops (reshape ... clone, cat, stack) and to(dtype).
tests/test_core_grads.cpp runs them.

    /usr/bin/python3 scripts/fixtures_core_grads.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Every case differentiates its floating-point inputs (all of them but in cat_f32_some_grads), each
through the base tensor of its view, so the movement ops that build the view are differentiated too. Each op gets float32
cases with broadcasting and non-contiguous inputs (views), one float64 case through a view, and edge
values where PyTorch defines the gradient (inf, NaN, zeros). Few shapes are used ([3, 4], [4], [3, 1],
[2, 3, 4], and the [5, 3, 4] permuted float64 view): each distinct shape, dtype and view is a kernel
to compile. Some ops also have gradient cases in other files (exp2, log2, sin, cos, reciprocal in
math.txt; sum and permute in grad_smoke.txt); these add broadcasting, other views and other edges.

max/min follow torch.amax/amin (the reference of every max/min case): tied maxima share the gradient
equally (torch 1.13's x.max() over all elements does too, while x.max(dim) gives it all to one
index), and a NaN in a reduced slice makes the whole slice's gradient NaN (x.max() would give it to
the NaN alone).

Values are chosen around two deliberate differences: subnormal results, which lazygrad's kernels
flush to zero by default (FTZ=1), and float32 overflow inside a sum (lazygrad accumulates float32
in float64, PyTorch in float32).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(3100)  # a seed of its own: other scripts' cases never shift this file's values

G = "core_grads"
NAN, INF = float("nan"), float("inf")


# ---------------------------------------------------------------- torch references

def dims(a, t):
    """The case's axes as a tuple for torch: all dims when absent."""
    if "axes" not in a:
        return tuple(range(t.dim()))
    return (a["axes"],) if isinstance(a["axes"], int) else tuple(a["axes"])


def t_prod(a, i):
    # torch.prod takes one dim at a time: reduce from the last, keeping dims until the end
    x, keep = i[0], a.get("keepdim", False)
    if "axes" not in a and not keep:
        return torch.prod(x)
    ax = sorted({d % x.dim() for d in dims(a, x)}, reverse=True)
    out = x
    for d in ax:
        out = torch.prod(out, d, keepdim=True)
    return out if keep else out.reshape([s for k, s in enumerate(x.shape) if k not in ax])


def t_where(form):
    def run(a, i):
        s = a.get("scalar")
        return {"method": lambda: torch.where(i[0], i[1], i[2]),
                "free": lambda: torch.where(i[0], i[1], i[2]),
                "free_sx": lambda: torch.where(i[0], s, i[1]),
                "free_xs": lambda: torch.where(i[0], i[1], s)}[form]()
    return run


def binary_table(name, f):
    return {f"{name}.tt": lambda a, i: f(i[0], i[1]),
            f"{name}.ts": lambda a, i: f(i[0], a["scalar"]),
            f"{name}.st": lambda a, i: f(a["scalar"], i[0])}


def t_slice_op(a, i):
    idx = [slice(None)] * i[0].dim()
    idx[a["dim"]] = slice(a["start"], a["end"], a.get("step", 1))
    return i[0][tuple(idx)]


MOVEMENT = {
    "reshape": lambda a, i: i[0].reshape(a["shape"]),
    "permute": lambda a, i: i[0].permute(a["order"]),
    "transpose": lambda a, i: i[0].transpose(a["dim0"], a["dim1"]),
    "expand": lambda a, i: i[0].expand(a["shape"]),
    "flatten": lambda a, i: i[0].flatten(a.get("start_dim", 0), a.get("end_dim", -1)),
    "squeeze": lambda a, i: i[0].squeeze(a["dim"]) if "dim" in a else i[0].squeeze(),
    "unsqueeze": lambda a, i: i[0].unsqueeze(a["dim"]),
    "pad": lambda a, i: F.pad(i[0], a["pads"], value=a.get("value", 0.0)),
    "slice": t_slice_op,
    "narrow": lambda a, i: i[0].narrow(a["dim"], a["start"], a["length"]),
    "select": lambda a, i: i[0].select(a["dim"], a["index"]),
    "flip": lambda a, i: i[0].flip(a["dims"]),
    "cat": lambda a, i: torch.cat(i, a["dim"]),
    "stack": lambda a, i: torch.stack(i, a["dim"]),
    "contiguous": lambda a, i: i[0].contiguous(),
    "clone": lambda a, i: i[0].clone(),
    "to": lambda a, i: i[0].to(TORCH_DT[a["dtype"].name]),
}

register_ops({
    **binary_table("add", lambda x, y: x + y),
    **binary_table("sub", lambda x, y: x - y),
    **binary_table("mul", lambda x, y: x * y),
    **binary_table("div", lambda x, y: x / y),
    "neg": lambda a, i: torch.neg(i[0]),
    "reciprocal": lambda a, i: torch.reciprocal(i[0]),
    "exp2": lambda a, i: torch.exp2(i[0]),
    "log2": lambda a, i: torch.log2(i[0]),
    "sin": lambda a, i: torch.sin(i[0]),
    "cos": lambda a, i: torch.cos(i[0]),
    **{f"where.{f}": t_where(f) for f in ("method", "free", "free_sx", "free_xs")},
    "sum": lambda a, i: torch.sum(i[0], dims(a, i[0]), keepdim=a.get("keepdim", False)),
    "mean": lambda a, i: torch.mean(i[0], dims(a, i[0]), keepdim=a.get("keepdim", False)),
    "prod": t_prod,
    "max": lambda a, i: torch.amax(i[0], dims(a, i[0]), keepdim=a.get("keepdim", False)),
    "min": lambda a, i: torch.amin(i[0], dims(a, i[0]), keepdim=a.get("keepdim", False)),
    "softmax": lambda a, i: torch.softmax(i[0], a["axis"]),
    "log_softmax": lambda a, i: torch.log_softmax(i[0], a["axis"]),
    **MOVEMENT,
}, non_compute=list(MOVEMENT))


# ---------------------------------------------------------------- inputs

def x34(dt="float32", kind="any"):
    return inp(dt, [3, 4], kind)


def t34(dt="float32", kind="any"):  # a transposed [4, 3] base: [3, 4], non-contiguous
    return inp(dt, [4, 3], kind).v("transpose", 0, 1)


def x234(dt="float32", kind="any"):
    return inp(dt, [2, 3, 4], kind)


def p534(kind="any"):  # float64 [3, 4, 5] permuted to [5, 3, 4]
    return nc_permute("float64", kind)


def edge(dt, values, shape=None):
    return In(dt, shape or [len(values)], round_to(dt, values))


def distinct(dt, shape, views=()):
    """Values without ties (a shuffled grid of quarters), so max/min have one arg-extremum per slice."""
    n = numel(shape)
    v = (rng.permutation(n) - n // 2) / 4.0
    x = In(dt, shape, round_to(dt, list(v)))
    for view in views:
        x.v(*view)
    return x


def bools(shape):
    return inp("bool", shape)


# ---------------------------------------------------------------- cases

def arithmetic():
    tt = {"form": "tt"}
    # denominators away from 0; numerators anything
    den = {"add": "any", "sub": "any", "mul": "any", "div": "near1"}
    edges = {
        # inf + -inf is NaN, but the gradient of a sum is still the upstream one
        "add": ([INF, -INF, INF, NAN, 0.0, -0.0, 1e38, 3e38], [1.0, INF, -INF, 1.0, -0.0, -0.0, -1e38, 3e38]),
        "sub": ([INF, -INF, INF, NAN, 0.0, -0.0, 1e38, -3e38], [1.0, INF, INF, 1.0, -0.0, 0.0, -1e38, 3e38]),
        # 0 * inf is NaN; the gradients are upstream * the other operand (inf, NaN, 0 included)
        "mul": ([0.0, 0.0, INF, -INF, NAN, 1e20, -0.0, 2.0], [INF, -0.0, 0.0, 2.0, 1.0, 1e20, 3.0, NAN]),
        # x / 0, 0 / 0, x / inf, inf / x, huge quotients: PyTorch's grads are g / b and -g * a / b / b
        # (3e38 / 3e38: 1 / b is subnormal, which lazygrad's kernels flush to 0)
        "div": ([1.0, -1.0, 0.0, 0.0, INF, 1.0, NAN, 1e30, 1e-30, 6.0, 1e20, 1e-20, 3e38, 1e38],
                [0.0, 0.0, 0.0, -0.0, 2.0, INF, 1.0, 1e-10, 1e30, -3.0, 1e-20, 1e-20, 3e38, 2e38]),
    }
    for op in ("add", "sub", "mul", "div"):
        d = den[op]
        add_case(G, f"{op}_f32_bcast_row", op, tt, [x34(), inp("float32", [4], d)], grad=True)
        # the left side broadcast against a transposed right side; then both sides broadcast
        add_case(G, f"{op}_f32_bcast_col_transposed", op, tt, [inp("float32", [3, 1]), t34("float32", d)], grad=True)
        add_case(G, f"{op}_f32_outer", op, tt, [inp("float32", [3, 1]), inp("float32", [4], d)], grad=True)
        add_case(G, f"{op}_f64_view_bcast", op, tt, [p534(), inp("float64", [3, 1], d)], grad=True)
        add_case(G, f"{op}_f32_scalar_rhs", op, {"form": "ts", "scalar": 2.5}, [x34()], grad=True)
        # an int scalar on the left: 3 - x, 3 / x (the result stays float32)
        add_case(G, f"{op}_f32_int_scalar_lhs", op, {"form": "st", "scalar": 3}, [t34("float32", d)], grad=True)
        a, b = edges[op]
        add_case(G, f"{op}_f32_edge", op, tt, [edge("float32", a), edge("float32", b)], grad=True)
    add_case(G, "div_f64_scalar_rhs_view", "div", {"form": "ts", "scalar": -0.75}, [p534()], grad=True)
    add_case(G, "div_f32_scalar_lhs_zero_den", "div", {"form": "st", "scalar": 2.0},
             [edge("float32", [0.0, -0.0, INF, -INF, NAN, 0.5, -4.0])], grad=True)
    # type promotion: a float32 operand of a float64 result gets its gradient cast back to float32
    add_case(G, "add_f32_f64_promotes", "add", tt, [x34(), inp("float64", [4])], grad=True)
    add_case(G, "sub_f64_f32_promotes", "sub", tt, [inp("float64", [3, 1]), x34()], grad=True)
    add_case(G, "mul_f32_f64_promotes", "mul", tt, [x34(), inp("float64", [4])], grad=True)
    add_case(G, "div_f32_f64_promotes", "div", tt, [x34(), inp("float64", [4], "near1")], grad=True)
    # an integer operand gets no gradient; the float one does
    add_case(G, "div_int32_by_f32", "div", tt, [inp("int32", [3, 4], "small"), inp("float32", [4], "near1")],
             grad=True)
    add_case(G, "sub_f32_minus_int64", "sub", tt, [x34(), inp("int64", [4], "small")], grad=True)


def unary():
    kinds = {"neg": "any", "reciprocal": "nonzero", "exp2": "exp", "log2": "pos", "sin": "any", "cos": "any"}
    edges = {
        "neg": [0.0, -0.0, INF, -INF, NAN, 3e38, -1e-30],
        # 1/0 = inf, and its gradient -g/x^2 = -g * inf; 1/1e-30 squared overflows to inf as well
        "reciprocal": [0.0, -0.0, INF, -INF, NAN, 1e-30, -1e30, 2.0],
        # exp2 overflows at 128 (float32), underflows to 0 below -149: gradient g * out * ln 2
        "exp2": [-INF, -200.0, -1.0, 0.0, 0.5, 10.0, 127.0, 128.0, INF, NAN],
        # gradient g / (x ln 2): inf at 0, negative zero gives -inf, NaN below 0
        "log2": [0.0, -0.0, -1.0, 1e-30, 1.0, 8.0, 1e30, INF, NAN],
        "sin": [0.0, -0.0, 1.5707964, 3.1415927, 100.0, -1e4, INF, -INF, NAN],
        "cos": [0.0, -0.0, 1.5707964, 3.1415927, 100.0, -1e4, INF, -INF, NAN],
    }
    for op, kind in kinds.items():
        add_case(G, f"{op}_f32_transposed", op, {}, [t34("float32", kind)], grad=True)
        if op == "neg":  # the others have contiguous float32 cases in math.txt
            add_case(G, f"{op}_f32_234", op, {}, [x234("float32", kind)], grad=True)
        add_case(G, f"{op}_f64_flipped", op, {}, [x234("float64", kind).v("flip", 0, 2)], grad=True)
        add_case(G, f"{op}_f32_edge", op, {}, [edge("float32", edges[op])], grad=True)
    add_case(G, "neg_f32_scalar", "neg", {}, [inp("float32", [])], grad=True)
    add_case(G, "neg_f64_edge", "neg", {}, [edge("float64", [0.0, -0.0, INF, -INF, NAN, 1e300])], grad=True)
    # float64 edges of the ops whose float64 rules differ from float32's
    add_case(G, "exp2_f64_edge", "exp2", {}, [edge("float64", [-INF, -1100.0, -1.0, 0.0, 1023.0, 1024.0, INF, NAN])],
             grad=True)
    add_case(G, "log2_f64_edge", "log2", {}, [edge("float64", [0.0, -0.0, -1.0, 1e-300, 1.0, 1e300, INF, NAN])],
             grad=True)
    # moderate float64 arguments (|x| <= 1e3); see known_bugs() for large ones
    add_case(G, "sin_f64_wide", "sin", {}, [inp("float64", [12], "wide")], grad=True)
    add_case(G, "cos_f64_wide", "cos", {}, [inp("float64", [12], "wide")], grad=True)


def where_ops():
    add_case(G, "where_free_f32_bcast_y", "where", {"form": "free"}, [bools([3, 4]), x34(), inp("float32", [4])],
             grad=True)
    add_case(G, "where_free_f32_bcast_cond_transposed", "where", {"form": "free"},
             [bools([3, 1]), t34(), inp("float32", [3, 4])], grad=True)
    # x and y both broadcast against the condition
    add_case(G, "where_free_f32_bcast_xy", "where", {"form": "free"},
             [bools([3, 4]), inp("float32", [3, 1]), inp("float32", [4])], grad=True)
    add_case(G, "where_free_f64_view", "where", {"form": "free"}, [bools([3, 4]), p534(), inp("float64", [4])],
             grad=True)
    add_case(G, "where_method_f32", "where", {"form": "method"}, [bools([3, 4]), t34(), x34()], grad=True)
    add_case(G, "where_free_sx_f32", "where", {"form": "free_sx", "scalar": 1.5}, [bools([3, 4]), t34()], grad=True)
    add_case(G, "where_free_xs_f32", "where", {"form": "free_xs", "scalar": -2.0}, [bools([3, 4]), x34()], grad=True)
    # inf and NaN in the branch not taken: no gradient leaks (0, not NaN)
    add_case(G, "where_free_f32_edge", "where", {"form": "free"},
             [In("bool", [6], [True, False, True, False, True, False]),
              edge("float32", [1.0, NAN, INF, -INF, NAN, 2.0]), edge("float32", [NAN, 3.0, -INF, INF, 0.0, NAN])],
             grad=True)


def sum_tol(x_in, axes=None, mean=False):
    """Absolute tolerance from the magnitude of the reduced terms (summation order may differ)."""
    tx = to_torch(x_in).double().abs().nan_to_num(0, 0, 0)
    ax = tuple(range(tx.dim())) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
    s = float(torch.sum(tx, dim=ax).max())
    if mean:
        s /= numel([tx.shape[d] for d in ax])
    eps, base = (2.3e-16, (1e-12, 1e-12)) if x_in.dtype == "float64" else (1.2e-7, (1e-5, 1e-6))
    return (base[0], max(base[1], 16 * eps * s))


def reductions():
    for op in ("sum", "mean"):
        m = op == "mean"
        x = x234()
        add_case(G, f"{op}_f32_axes02", op, {"axes": [0, 2]}, [x], grad=True, tol=sum_tol(x, [0, 2], m))
        x = x234()
        add_case(G, f"{op}_f32_axis1_keepdim", op, {"axes": 1, "keepdim": True}, [x], grad=True, tol=sum_tol(x, 1, m))
        x = t34()
        add_case(G, f"{op}_f32_all_transposed", op, {}, [x], grad=True, tol=sum_tol(x, None, m))
        x = x234()
        add_case(G, f"{op}_f32_all_keepdim", op, {"keepdim": True}, [x], grad=True, tol=sum_tol(x, None, m))
        x = p534()
        add_case(G, f"{op}_f64_view_axes_neg1_0_keepdim", op, {"axes": [-1, 0], "keepdim": True}, [x], grad=True,
                 tol=sum_tol(x, [2, 0], m))
        # a sum with inf or NaN in it still passes the upstream gradient to every element. (No float32
        # overflow inside a sum: lazygrad accumulates float32 in float64, PyTorch in float32.)
        add_case(G, f"{op}_f32_edge", op, {"axes": 1},
                 [edge("float32", [INF, 1.0, 2.0, -INF, INF, 0.0, NAN, 1.0, -1.0, 1e38, 1e38, 1.0], [4, 3])],
                 grad=True)

    # prod: factors near +-1 keep the products in range
    add_case(G, "prod_f32_axis1", "prod", {"axes": 1}, [x234("float32", "near1")], grad=True)
    add_case(G, "prod_f32_axes02_keepdim", "prod", {"axes": [0, 2], "keepdim": True}, [x234("float32", "near1")],
             grad=True)
    add_case(G, "prod_f32_all_transposed", "prod", {}, [t34("float32", "near1")], grad=True)
    add_case(G, "prod_f64_view_axis_neg1", "prod", {"axes": -1}, [p534("near1")], grad=True)
    # zeros: a slice without zeros (out / x), with one (the product of the others), with two or more (0)
    rows = [2.0, 0.5, -3.0, 1.5, 0.0, 2.0, 0.0, 4.0, 0.0, 0.0, -0.0, 0.0, -1.5, -0.0, 0.25]
    add_case(G, "prod_f32_zeros_axis1", "prod", {"axes": 1}, [edge("float32", rows, [5, 3])], grad=True)
    # the same along axis 0 of a transposed view
    add_case(G, "prod_f32_zeros_axis0_transposed", "prod", {"axes": 0},
             [edge("float32", rows, [5, 3]).v("transpose", 0, 1)], grad=True)
    one_zero = [1.5, -0.5, 2.0, 0.75, -1.25, 0.0, 1.5, 0.5, -2.0, 1.25, 0.8, -1.0]
    add_case(G, "prod_f32_all_one_zero", "prod", {}, [edge("float32", one_zero, [3, 4])], grad=True)
    two_zeros = [1.5, -0.5, 2.0, 0.75, -1.25, 0.0, 1.5, 0.5, -2.0, 0.0, 0.8, -1.0]
    add_case(G, "prod_f32_all_two_zeros", "prod", {}, [edge("float32", two_zeros, [3, 4])], grad=True)
    z = vals("float64", 24, "near1")
    for k in (1, 5, 6, 13, 20):  # slices of axes [0, 2] (index j of axis 1): zeros at 0, 1, 1, 0, 2 of them
        z[k] = 0.0
    add_case(G, "prod_f64_zeros_axes02", "prod", {"axes": [0, 2]}, [In("float64", [2, 3, 4], z)], grad=True)

    for op in ("max", "min"):
        add_case(G, f"{op}_f32_axis1", op, {"axes": 1}, [distinct("float32", [2, 3, 4])], grad=True)
        add_case(G, f"{op}_f32_axes02_keepdim", op, {"axes": [0, 2], "keepdim": True},
                 [distinct("float32", [2, 3, 4])], grad=True)
        add_case(G, f"{op}_f32_all_transposed", op, {}, [distinct("float32", [4, 3], [("transpose", 0, 1)])],
                 grad=True)
        add_case(G, f"{op}_f32_all_keepdim", op, {"keepdim": True}, [distinct("float32", [2, 3, 4])], grad=True)
        add_case(G, f"{op}_f64_view_axis_neg1", op, {"axes": -1}, [distinct("float64", [3, 4, 5], [("permute", 2, 0, 1)])],
                 grad=True)
        # ties share the gradient equally, as in torch.amax/amin (and torch 1.13's all-element x.max())
        add_case(G, f"{op}_f32_ties_axis1", op, {"axes": 1}, [x34("float32", "cmp")], grad=True)
        add_case(G, f"{op}_f32_ties_all", op, {},
                 [edge("float32", [1.0, 3.0, -2.0, 3.0, 0.5, -2.0, 3.0, -2.0, 0.0, 1.0, -1.0, 2.0], [3, 4])], grad=True)
        add_case(G, f"{op}_f64_ties_axes01_keepdim", op, {"axes": [0, 1], "keepdim": True},
                 [x234("float64", "cmp")], grad=True)
        # infinities are ordinary extremes; a NaN makes the slice's max NaN and (amax) its gradient NaN
        add_case(G, f"{op}_f32_edge_inf", op, {"axes": 1},
                 [edge("float32", [INF, 1.0, 2.0, -INF, -INF, -5.0, INF, INF, -INF, 3e38, -3e38, 0.0], [4, 3])],
                 grad=True)
        add_case(G, f"{op}_f32_edge_nan_rows", op, {"axes": 1},
                 [edge("float32", [NAN, 1.0, 2.0, 0.5, -4.0, 3.0, 1.0, NAN, NAN], [3, 3])], grad=True)

    for op in ("softmax", "log_softmax"):
        add_case(G, f"{op}_f32_axis1", op, {"axis": 1}, [x34()], grad=True)
        add_case(G, f"{op}_f32_234_axis0", op, {"axis": 0}, [x234()], grad=True)
        add_case(G, f"{op}_f32_234_axis1", op, {"axis": 1}, [x234()], grad=True)
        add_case(G, f"{op}_f32_transposed_axis_neg1", op, {"axis": -1}, [t34()], grad=True)
        add_case(G, f"{op}_f64_view_axis1", op, {"axis": 1}, [p534()], grad=True)
        # large values: N(0, 1000) and rows offset by +-1000 (exp overflows without the max shift)
        big = x34("float32", "wide")
        big.values = round_to("float32", [v * 10 for v in big.values])
        tol = None if op == "softmax" else (1e-5, 8 * 1.2e-7 * max(abs(v) for v in big.values))
        add_case(G, f"{op}_f32_large", op, {"axis": -1}, [big], grad=True, tol=tol)
        off = edge("float32", [1000.0, 1001.0, 999.5, 1000.25, -1000.0, -999.0, -1001.5, -1000.5,
                               88.0, 89.0, 90.0, 87.5], [3, 4])
        tol = None if op == "softmax" else (1e-5, 8 * 1.2e-7 * 1001.5)
        add_case(G, f"{op}_f32_offset_rows", op, {"axis": 1}, [off], grad=True, tol=tol)
        # -inf entries: probability 0; softmax's gradient there is 0, log_softmax's is the upstream
        ninf = edge("float32", [-INF, 1.0, 2.0, 0.5, 3.0, -INF, -INF, 1.0, 0.0, -1.0, -2.0, 5.0], [3, 4])
        add_case(G, f"{op}_f32_neginf", op, {"axis": 1}, [ninf], grad=True)
        big64 = inp("float64", [3, 4], "wide")
        big64.values = [v * 10 for v in big64.values]
        tol = None if op == "softmax" else (1e-12, 8 * 2.3e-16 * max(abs(v) for v in big64.values))
        add_case(G, f"{op}_f64_large_axis0", op, {"axis": 0}, [big64], grad=True, tol=tol)


def movement():
    f64 = "float64"
    add_case(G, "reshape_f32", "reshape", {"shape": [6, -1]}, [x234()], grad=True)
    add_case(G, "reshape_f32_transposed", "reshape", {"shape": [12]}, [t34()], grad=True)
    add_case(G, "reshape_f64_view", "reshape", {"shape": [15, 4]}, [p534()], grad=True)
    add_case(G, "permute_f32", "permute", {"order": [1, 2, 0]}, [x234()], grad=True)
    add_case(G, "permute_f64_view", "permute", {"order": [2, 0, 1]}, [p534()], grad=True)
    add_case(G, "transpose_f32", "transpose", {"dim0": 0, "dim1": -1}, [x234()], grad=True)
    add_case(G, "transpose_f64_view", "transpose", {"dim0": 1, "dim1": 0}, [inp(f64, [4, 3]).v("transpose", 0, 1)],
             grad=True)
    # expand sums the gradient over the expanded dims (new leading dims included)
    add_case(G, "expand_f32_new_dim", "expand", {"shape": [2, 3, 4]}, [inp("float32", [3, 1])], grad=True)
    add_case(G, "expand_f32_keep", "expand", {"shape": [3, -1]}, [inp("float32", [1, 4])], grad=True)
    add_case(G, "expand_f32_of_transposed", "expand", {"shape": [2, 3, 4]},
             [inp("float32", [4, 1]).v("transpose", 0, 1)], grad=True)
    add_case(G, "expand_f64", "expand", {"shape": [5, 3, 4]}, [inp(f64, [3, 1])], grad=True)
    add_case(G, "flatten_f32_all", "flatten", {}, [x234()], grad=True)
    add_case(G, "flatten_f32_from1", "flatten", {"start_dim": 1}, [x234()], grad=True)
    add_case(G, "flatten_f64_view_01", "flatten", {"start_dim": 0, "end_dim": 1}, [p534()], grad=True)
    add_case(G, "squeeze_f32_all", "squeeze", {}, [inp("float32", [3, 1, 4])], grad=True)
    add_case(G, "squeeze_f32_dim", "squeeze", {"dim": 1}, [inp("float32", [3, 1, 4])], grad=True)
    add_case(G, "squeeze_f32_dim_not_1", "squeeze", {"dim": 0}, [x34()], grad=True)
    add_case(G, "squeeze_f64_view", "squeeze", {"dim": -1}, [inp(f64, [1, 3]).v("transpose", 0, 1)], grad=True)
    add_case(G, "unsqueeze_f32_front", "unsqueeze", {"dim": 0}, [x34()], grad=True)
    add_case(G, "unsqueeze_f32_neg", "unsqueeze", {"dim": -1}, [t34()], grad=True)
    add_case(G, "unsqueeze_f64_view", "unsqueeze", {"dim": 2}, [p534()], grad=True)
    # pad with a nonzero value: the padding gets no gradient; negative pads crop
    add_case(G, "pad_f32_value", "pad", {"pads": [1, 2, 0, 1], "value": 1.5}, [x34()], grad=True)
    add_case(G, "pad_f32_3d", "pad", {"pads": [0, 1, 2, 0, 1, 1], "value": -2.0}, [x234()], grad=True)
    add_case(G, "pad_f32_negative_crop", "pad", {"pads": [-1, 2, 1, -1], "value": 0.5}, [t34()], grad=True)
    add_case(G, "pad_f64_view", "pad", {"pads": [2, 1], "value": -0.25}, [p534()], grad=True)
    sl = lambda d, s, e, st: {"dim": d, "start": s, "end": e, "step": st}  # noqa: E731
    add_case(G, "slice_f32_step2", "slice", sl(1, 1, None, 2), [x34()], grad=True)
    add_case(G, "slice_f32_step3_last_dim", "slice", sl(-1, 0, 4, 3), [x234()], grad=True)
    add_case(G, "slice_f32_negative_start", "slice", sl(0, -2, None, 1), [t34()], grad=True)
    add_case(G, "slice_f64_view_step2", "slice", sl(0, None, -1, 2), [p534()], grad=True)
    add_case(G, "narrow_f32", "narrow", {"dim": 2, "start": 1, "length": 2}, [x234()], grad=True)
    add_case(G, "narrow_f64_view", "narrow", {"dim": 0, "start": 2, "length": 3}, [p534()], grad=True)
    add_case(G, "select_f32_neg_index", "select", {"dim": 1, "index": -1}, [x234()], grad=True)
    add_case(G, "select_f32_transposed", "select", {"dim": 0, "index": 1}, [t34()], grad=True)
    add_case(G, "select_f64_view", "select", {"dim": 2, "index": 3}, [p534()], grad=True)
    add_case(G, "flip_f32_02", "flip", {"dims": [0, 2]}, [x234()], grad=True)
    add_case(G, "flip_f32_neg1_transposed", "flip", {"dims": [-1]}, [t34()], grad=True)
    add_case(G, "flip_f64_view_all", "flip", {"dims": [0, 1, 2]}, [p534()], grad=True)
    add_case(G, "cat_f32_dim1", "cat", {"dim": 1},
             [inp("float32", [3, 1]), x34(), t34()], grad=True)
    add_case(G, "cat_f32_dim0", "cat", {"dim": 0}, [x34(), inp("float32", [1, 4])], grad=True)
    add_case(G, "cat_f32_some_grads", "cat", {"dim": -1}, [x34(), inp("float32", [3, 1]), t34()], grad=[0, 2])
    add_case(G, "cat_f64_view", "cat", {"dim": 0}, [p534(), inp(f64, [2, 3, 4])], grad=True)
    add_case(G, "stack_f32_dim0", "stack", {"dim": 0}, [x34(), x34(), t34()], grad=True)
    add_case(G, "stack_f32_dim_neg1", "stack", {"dim": -1}, [x34(), t34()], grad=True)
    add_case(G, "stack_f64_view_dim1", "stack", {"dim": 1}, [p534(), inp(f64, [5, 3, 4])], grad=True)
    add_case(G, "contiguous_f32_transposed", "contiguous", {}, [t34()], grad=True)
    add_case(G, "contiguous_f32_already", "contiguous", {}, [x34()], grad=True)
    add_case(G, "contiguous_f64_view", "contiguous", {}, [p534()], grad=True)
    add_case(G, "clone_f32", "clone", {}, [x34()], grad=True)
    add_case(G, "clone_f64_view", "clone", {}, [p534()], grad=True)
    # to(dtype): the gradient is cast back to the input's dtype
    add_case(G, "to_f32_f64", "to", {"dtype": D(f64)}, [x34()], grad=True)
    add_case(G, "to_f64_f32_view", "to", {"dtype": D("float32")}, [p534()], grad=True)
    add_case(G, "to_f32_same", "to", {"dtype": D("float32")}, [t34()], grad=True)
    # float64 values past float32's range become inf; the gradient is still the upstream one
    add_case(G, "to_f64_f32_edge", "to", {"dtype": D("float32")},
             [edge(f64, [1e300, -1e300, 1e-300, 0.1, INF, NAN, 3.4028235e38, 3.5e38])], grad=True)
    # a chain: gradient through several movement ops in a row (expand, pad, flip, slice of a view)
    add_case(G, "flip_f32_of_expand_pad_slice", "flip", {"dims": [1]},
             [inp("float32", [3, 1]).v("expand", 3, 4).v("pad", "float", 2.0, 1, 1).v("slice", 1, 1, None, 2)],
             grad=True)


# cos and sin at large arguments: a regression check. cos is sin(pi/2 - x), which computed as written
# rounds away pi/2's low bits once |x| is large (off from |x| ~ 1e5 in float64); the renderer now
# emits libm's cos for it, and sin's gradient (a cos) and cos's gradient (-sin x) are exact too.
def large_arguments():
    big = [1e6, -3e7, 1e10, 123456.789, 1e15]
    add_case(G, "cos_f64_large", "cos", {}, [edge("float64", big)], grad=True)
    add_case(G, "sin_f64_large_grad", "sin", {}, [edge("float64", big)], grad=True)
    add_case(G, "cos_f32_large", "cos", {}, [edge("float32", [1e10, 1e15, -1e20, 3e38])], grad=True)
    add_case(G, "sin_f32_large_grad", "sin", {}, [edge("float32", [1e10, 1e15, -1e20, 3e38])], grad=True)


def main():
    arithmetic()
    unary()
    where_ops()
    reductions()
    movement()
    large_arguments()
    if SKIPPED:
        raise SystemExit("PyTorch rejected cases:\n  " + "\n  ".join(SKIPPED))
    write_and_report()


if __name__ == "__main__":
    main()
