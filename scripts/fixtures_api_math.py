#!/usr/bin/python3
"""Writes tests/fixtures/api_math.txt: forward values and gradients of issue 16's math group (inverse
trigonometric and hyperbolic functions, log10, atan2, fmod, copysign, logaddexp/logaddexp2, isclose,
softmin, normalize: src/tensor/math_inverse.cpp and math_binary.cpp), the diagonals and windows
(diag, diagonal, unfold: src/tensor/diagonal.cpp) and the running extremes (cummax, cummin,
logcumsumexp: src/tensor/scan_more.cpp). tests/test_api_math.cpp runs them.

    /usr/bin/python3 scripts/fixtures_api_math.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

As scripts/fixtures_math.py: per op a float32 case with gradients, a float64 case through a
non-contiguous view, edge values, and where the op accepts them a half and an integer input, odd
sizes and an empty tensor.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(1616)  # a seed of its own: other scripts' cases never shift this file's values

G = "api_math"
NAN, INF = float("nan"), float("inf")


def edge(dt, values):
    return In(dt, [len(values)], round_to(dt, values))


def running(name):
    def f(a, i):
        r = getattr(torch, name)(i[0], dim=a["dim"])
        return r.values if a["part"] == "values" else r.indices
    return f


register_ops({
    "asin": lambda a, i: torch.asin(i[0]),
    "acos": lambda a, i: torch.acos(i[0]),
    "atan": lambda a, i: torch.atan(i[0]),
    "sinh": lambda a, i: torch.sinh(i[0]),
    "cosh": lambda a, i: torch.cosh(i[0]),
    "asinh": lambda a, i: torch.asinh(i[0]),
    "acosh": lambda a, i: torch.acosh(i[0]),
    "atanh": lambda a, i: torch.atanh(i[0]),
    "log10": lambda a, i: torch.log10(i[0]),
    "atan2": lambda a, i: torch.atan2(i[0], i[1]),
    "fmod.tt": lambda a, i: torch.fmod(i[0], i[1]),
    "fmod.ts": lambda a, i: torch.fmod(i[0], a["other"]),
    "copysign.tt": lambda a, i: torch.copysign(i[0], i[1]),
    "copysign.ts": lambda a, i: torch.copysign(i[0], a["other"]),
    "logaddexp": lambda a, i: torch.logaddexp(i[0], i[1]),
    "logaddexp2": lambda a, i: torch.logaddexp2(i[0], i[1]),
    "isclose": lambda a, i: torch.isclose(i[0], i[1], a.get("rtol", 1e-05), a.get("atol", 1e-08),
                                          bool(a.get("equal_nan", False))),
    "softmin": lambda a, i: F.softmin(i[0], dim=a["dim"]),
    "normalize": lambda a, i: F.normalize(i[0], p=a.get("p", 2.0), dim=a.get("dim", 1), eps=a.get("eps", 1e-12)),
    "diag": lambda a, i: torch.diag(i[0], a.get("diagonal", 0)),
    "diagonal": lambda a, i: torch.diagonal(i[0], a.get("offset", 0), a.get("dim1", 0), a.get("dim2", 1)),
    "unfold": lambda a, i: i[0].unfold(a["dimension"], a["size"], a["step"]),
    "im2col": lambda a, i: F.unfold(i[0], a["kernel_size"], a.get("dilation", 1), a.get("padding", 0), a.get("stride", 1)),
    "cummax": running("cummax"),
    "cummin": running("cummin"),
    "logcumsumexp": lambda a, i: torch.logcumsumexp(i[0], dim=a["dim"]),
}, non_compute=("diag", "diagonal", "unfold", "im2col"))


def unary(op, kind, edge_values, grad_values=None, half=False, ints=(), f64_view=nc_permute, extra=()):
    """float32 [3, 5] and float64 through a view, with gradients; the edge values (values only) and
    grad_values (finite points inside the domain) with gradients; optionally half and integer inputs."""
    add_case(G, f"{op}_f32", op, {}, [inp("float32", [3, 5], kind)], grad=True)
    add_case(G, f"{op}_f64_view", op, {}, [f64_view("float64", kind)], grad=True)
    add_case(G, f"{op}_f32_edge", op, {}, [edge("float32", edge_values)])
    if grad_values:
        add_case(G, f"{op}_f32_edge_grad", op, {}, [edge("float32", grad_values)], grad=True)
    add_case(G, f"{op}_f32_empty", op, {}, [In("float32", [0, 3], [])], grad=True)
    if half:
        add_case(G, f"{op}_f16", op, {}, [inp("float16", [7], kind)], grad=True)
    for dt in ints:
        add_case(G, f"{op}_{dt}", op, {}, [inp(dt, [7], "small")])
    for name, values in extra:
        add_case(G, f"{op}_f32_{name}", op, {}, [edge("float32", values)], grad=True)


def inverse_and_hyperbolic():
    dense = [x / 16 for x in range(-15, 16)]  # a sweep of (-1, 1), both signs, near the ends
    unary("asin", "unit", [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 1e-8, 0.99999994, INF, -INF, NAN],
          grad_values=[0.0, -0.0, 1e-8, 0.5, -0.7, 0.999, -0.999], half=True, ints=("int32",),
          extra=[("sweep", dense)])
    unary("acos", "unit", [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 1e-8, 0.99999994, -0.99999994, INF, NAN],
          grad_values=[0.0, 1e-8, 0.5, -0.7, 0.999, -0.999], half=True, ints=("int32",),
          extra=[("sweep", dense)])
    unary("atan", "wide", [0.0, -0.0, 1e-8, -1e-8, 0.41421356, 0.66, 0.67, 2.4142137, 1.0, -1.0, 1e10, -1e30,
                           INF, -INF, NAN],
          grad_values=[0.0, -0.0, 1e-8, 0.41421356, 0.66, 0.67, 2.4142137, 1.0, -1.0, 1e3, -1e10],
          half=True, ints=("int64",), extra=[("sweep", [x / 4 for x in range(-20, 21)])])
    # past 88.72 float32's e^x overflows, and PyTorch's sinh and cosh with it, while lazygrad's (e^(x - ln 2))
    # stay finite up to the largest float32 sinh (89.4): those inputs are left out
    big = [0.0, -0.0, 1e-8, -1e-8, 0.5, 19.9, 20.0, 20.1, -30.0, 88.0, -88.5, 100.0, INF, -INF, NAN]
    unary("sinh", "any", big, grad_values=[0.0, -0.0, 1e-8, 0.5, -3.0, 19.9, 20.0, 20.1, -30.0, 80.0],
          half=True, ints=("int32",))
    unary("cosh", "any", big, grad_values=[0.0, -0.0, 1e-8, 0.5, -3.0, 20.0, -30.0, 80.0], ints=("int32",))
    unary("asinh", "wide", [0.0, -0.0, 1e-8, -1e-8, 0.5, -2.0, 1e4, 3e8, -1e30, 3e38, INF, -INF, NAN],
          grad_values=[0.0, -0.0, 1e-8, 0.5, -2.0, 1e4, -1e6], ints=("int32",))
    acosh_in = [1.0 + x for x in (0.0, 1e-4, 0.001, 0.5, 1.0, 9.0, 99.0, 1e6)]
    # near 1 PyTorch's float32 gradient 1 / sqrt(x^2 - 1) keeps few digits of x^2 - 1 (2.4e-5 relative
    # off at 1.0001); lazygrad's agrees with the float64 value to float32's precision
    add_case(G, "acosh_f32", "acosh", {}, [In("float32", [8], round_to("float32", acosh_in[1:] + [3.5]))], grad=True,
             gradtol=(1e-4, 1e-6))
    add_case(G, "acosh_f64_view", "acosh", {}, [In("float64", [3, 4], [1 + abs(v) for v in vals("float64", 12)])
                                                .v("transpose", 0, 1)], grad=True)
    add_case(G, "acosh_f32_edge", "acosh", {},
             [edge("float32", [1.0, 0.999, 0.0, -1.0, 1.0000001, 3e8, 3e38, INF, -INF, NAN])])
    add_case(G, "acosh_f32_empty", "acosh", {}, [In("float32", [0], [])], grad=True)
    add_case(G, "acosh_int32", "acosh", {}, [inp("int32", [7], "pos")])
    unary("atanh", "unit", [0.0, -0.0, 1e-8, -1e-8, 0.5, 1.0, -1.0, 1.5, 0.99999994, INF, NAN],
          grad_values=[0.0, -0.0, 1e-8, 0.5, -0.9, 0.999], ints=("int32",))
    unary("log10", "pos", [0.0, -0.0, -1.0, 1e-30, 1.0, 10.0, 1000.0, 1e30, INF, -INF, NAN],
          grad_values=[1e-30, 1.0, 10.0, 1000.0, 1e30], half=True, ints=("int32", "uint8"))


def binary(op, kind="any", form=None, f64_kinds=None, edges=None, half=True, ints=(), grad_f32=True):
    args = {"form": form} if form else {}
    add_case(G, f"{op}_f32", op, args, [inp("float32", [3, 5], kind), inp("float32", [3, 5], kind)], grad=grad_f32)
    add_case(G, f"{op}_f64_bcast_view", op, args, [nc_slice("float64", kind), inp("float64", [4], kind)], grad=grad_f32)
    add_case(G, f"{op}_f32_empty", op, args, [In("float32", [0, 3], []), inp("float32", [3], kind)], grad=grad_f32)
    if half:
        add_case(G, f"{op}_f16", op, args, [inp("float16", [7], kind), inp("float16", [7], kind)], grad=grad_f32)
    for dt in ints:
        add_case(G, f"{op}_{dt}", op, args, [inp(dt, [7], "small"), inp(dt, [7], "nonzero")])
    if edges:
        a, b = edges
        add_case(G, f"{op}_f32_edge", op, args, [edge("float32", a), edge("float32", b)])


def binary_ops():
    z, nz = [0.0, -0.0], [INF, -INF, NAN]
    # every pair of signed zero, +-1, +-inf and NaN: the quadrants and C's special cases
    specials = z + [1.0, -1.0] + nz
    ya = [y for y in specials for _ in specials]
    xa = [x for _ in specials for x in specials]
    binary("atan2", edges=(ya, xa), ints=("int32",))
    add_case(G, "atan2_f32_octants", "atan2", {},
             [edge("float32", [1.0, 2.0, 2.0, 1.0, -1.0, -2.0, -2.0, -1.0, 1e-30, 3.0, 1e30]),
              edge("float32", [2.0, 1.0, -1.0, -2.0, -2.0, -1.0, 1.0, 2.0, 1.0, 1e-30, 1e30])], grad=True)
    add_case(G, "atan2_f32_zero_grad", "atan2", {},
             [edge("float32", [0.0, 0.0, 2.0, -2.0]), edge("float32", [3.0, -3.0, 0.0, 0.0])], grad=True)

    tt, ts = {"form": "tt"}, {"form": "ts"}
    binary("fmod", "grid", "tt", edges=([5.5, -5.5, 5.5, -5.5, 0.3, 7.0, INF, 3.0, NAN, 3.0, -0.0, 1e30],
                                        [2.0, 2.0, -2.0, -2.0, 0.1, 0.0, 2.0, INF, 2.0, NAN, 2.0, 3.0]),
           ints=("int32", "int64", "int8", "uint8"))
    add_case(G, "fmod_f32_nonzero", "fmod", tt, [inp("float32", [3, 5], "any"), inp("float32", [3, 5], "nonzero")],
             grad=True)
    add_case(G, "fmod_int64_signs", "fmod", tt, [In("int64", [4], [-7, 7, -7, 7]), In("int64", [4], [3, 3, -3, -3])])
    for other in (2.5, -3, 3):
        add_case(G, f"fmod_f32_scalar_{other}", "fmod", {**ts, "other": other}, [inp("float32", [3, 5], "any")], grad=True)
    add_case(G, "fmod_int32_scalar", "fmod", {**ts, "other": -4}, [inp("int32", [9], "any")])
    add_case(G, "fmod_int32_float_scalar", "fmod", {**ts, "other": 2.5}, [inp("int32", [9], "any")])

    binary("copysign", "grid", "tt", edges=([1.0, 1.0, -2.0, 0.0, -0.0, INF, NAN, 3.0, 3.0, -3.0],
                                            [-0.0, 0.0, 0.0, -1.0, 1.0, -1.0, -1.0, -INF, NAN, INF]),
           ints=("int32", "int64"))
    add_case(G, "copysign_f32_scalar", "copysign", {**ts, "other": -1.5}, [inp("float32", [3, 5], "grid")], grad=True)
    add_case(G, "copysign_int32_scalar", "copysign", {**ts, "other": -2}, [inp("int32", [7], "any")])

    le = ([-INF, -INF, INF, INF, -INF, 1.0, NAN, 1.0, 0.0, 1e30, -1e30, 100.0],
          [-INF, 1.0, INF, -INF, INF, NAN, 1.0, 1.0, 0.0, 1e30, 1e30, -100.0])
    binary("logaddexp", "any", edges=le)
    binary("logaddexp2", "any", edges=le)
    add_case(G, "logaddexp_f32_ties_and_far", "logaddexp", {},
             [edge("float32", [1.0, -3.0, 50.0, -200.0, 0.0]), edge("float32", [1.0, -3.0, -50.0, 1.0, -1e-8])], grad=True)
    add_case(G, "logaddexp2_f32_ties_and_far", "logaddexp2", {},
             [edge("float32", [1.0, -3.0, 50.0, -200.0, 0.0]), edge("float32", [1.0, -3.0, -50.0, 1.0, -1e-8])], grad=True)

    # isclose: values equal, a hair apart, just inside and outside the tolerance, and the specials
    a = [1.0, 1.0, 1.0, 100.0, 0.0, 0.0, INF, INF, -INF, NAN, NAN, 1.0]
    b = [1.0, 1.0000001, 1.0001, 100.0009, 1e-9, 1e-7, INF, -INF, -INF, NAN, 1.0, INF]
    add_case(G, "isclose_f32", "isclose", {}, [edge("float32", a), edge("float32", b)])
    add_case(G, "isclose_f32_equal_nan", "isclose", {"equal_nan": True}, [edge("float32", a), edge("float32", b)])
    add_case(G, "isclose_f64_tol_bcast_view", "isclose", {"rtol": 0.1, "atol": 0.5},
             [nc_slice("float64", "grid"), inp("float64", [4], "grid")])
    add_case(G, "isclose_f32_zero_tol", "isclose", {"rtol": 0.0, "atol": 0.0}, [edge("float32", a), edge("float32", b)])
    add_case(G, "isclose_int64", "isclose", {"rtol": 0.0, "atol": 1.0}, [inp("int64", [9], "small"), inp("int64", [9], "small")])
    add_case(G, "isclose_f16", "isclose", {"rtol": 1e-3}, [edge("float16", a), edge("float16", b)], half_in_float32=False)
    add_case(G, "isclose_bool", "isclose", {}, [inp("bool", [7]), inp("bool", [7])])
    add_case(G, "isclose_f32_empty", "isclose", {}, [In("float32", [0], []), In("float32", [0], [])])


def functionals():
    for dim in (1, -1, 0):
        add_case(G, f"softmin_f32_dim{dim}", "softmin", {"dim": dim}, [inp("float32", [3, 5])], grad=True)
    add_case(G, "softmin_f64_view", "softmin", {"dim": 1}, [nc_permute("float64")], grad=True)
    add_case(G, "softmin_f32_edge", "softmin", {"dim": 0}, [edge("float32", [INF, 1.0, -1e30, 1e30])])
    add_case(G, "softmin_f32_empty", "softmin", {"dim": 1}, [In("float32", [0, 3], [])], grad=True)
    add_case(G, "normalize_f32", "normalize", {}, [inp("float32", [3, 5])], grad=True)
    add_case(G, "normalize_f32_p1_dim0", "normalize", {"p": 1.0, "dim": 0}, [inp("float32", [3, 5])], grad=True)
    add_case(G, "normalize_f32_p3_dimlast", "normalize", {"p": 3.0, "dim": -1}, [inp("float32", [2, 3, 5])], grad=True)
    add_case(G, "normalize_f64_view", "normalize", {"dim": 2}, [nc_permute("float64")], grad=True)
    # a zero row: the norm is below eps, the result 0 and the gradient 1 / eps
    add_case(G, "normalize_f32_zero_row_eps", "normalize", {"eps": 1e-3},
             [In("float32", [2, 3], [0.0, 0.0, 0.0, 1.0, -2.0, 2.0])], grad=True)
    add_case(G, "normalize_f32_empty", "normalize", {}, [In("float32", [0, 3], [])], grad=True)
    add_case(G, "normalize_f16", "normalize", {"dim": 0}, [inp("float16", [7])], grad=True)


def diagonals():
    for k in (0, 2, -1):
        add_case(G, f"diag_f32_vector_{k}", "diag", {"diagonal": k}, [inp("float32", [5])], grad=True)
    for k in (0, 1, -2, 6):
        add_case(G, f"diag_f32_matrix_{k}", "diag", {"diagonal": k}, [inp("float32", [4, 6])], grad=True)
    add_case(G, "diag_f64_matrix_view", "diag", {"diagonal": -1}, [nc_slice("float64")], grad=True)
    add_case(G, "diag_f32_empty", "diag", {}, [In("float32", [0], [])], grad=True)
    add_case(G, "diag_f32_empty_offset", "diag", {"diagonal": 2}, [In("float32", [0], [])], grad=True)
    add_case(G, "diag_int64_vector", "diag", {"diagonal": 1}, [inp("int64", [3])])
    add_case(G, "diag_bool_matrix", "diag", {}, [inp("bool", [3, 3])])
    for off, d1, d2 in ((0, 0, 1), (1, 0, 2), (-1, 2, 1), (0, -1, 0), (2, 1, 2), (-9, 0, 1)):
        add_case(G, f"diagonal_f32_{off}_{d1}_{d2}", "diagonal", {"offset": off, "dim1": d1, "dim2": d2},
                 [inp("float32", [3, 4, 5])], grad=True)
    add_case(G, "diagonal_f64_view", "diagonal", {"offset": 1}, [nc_compose("float64")], grad=True)
    add_case(G, "diagonal_f32_empty", "diagonal", {}, [In("float32", [0, 3], [])], grad=True)
    add_case(G, "diagonal_int32", "diagonal", {"offset": -1}, [inp("int32", [4, 3])])
    for dim, size, step in ((0, 3, 2), (0, 7, 1), (0, 1, 1), (0, 2, 5), (0, 0, 3)):
        add_case(G, f"unfold_f32_1d_{size}_{step}", "unfold", {"dimension": dim, "size": size, "step": step},
                 [inp("float32", [7])], grad=True)
    add_case(G, "unfold_f32_2d_last", "unfold", {"dimension": -1, "size": 3, "step": 1}, [inp("float32", [3, 8])], grad=True)
    add_case(G, "unfold_f32_3d_mid", "unfold", {"dimension": 1, "size": 2, "step": 2}, [inp("float32", [2, 5, 3])],
             grad=True)
    add_case(G, "unfold_f64_view", "unfold", {"dimension": 0, "size": 2, "step": 3}, [nc_compose("float64")], grad=True)
    add_case(G, "unfold_f32_0d", "unfold", {"dimension": 0, "size": 1, "step": 1}, [In("float32", [], [2.5])], grad=True)
    add_case(G, "unfold_f32_empty", "unfold", {"dimension": 1, "size": 0, "step": 1}, [In("float32", [2, 0], [])])
    add_case(G, "unfold_int64", "unfold", {"dimension": 0, "size": 4, "step": 3}, [inp("int64", [11])])
    add_case(G, "unfold_bool", "unfold", {"dimension": 0, "size": 2, "step": 1}, [inp("bool", [4])])


def im2col():
    """F.unfold: kernel, dilation, padding and stride as ints or pairs, batched and not."""
    add_case(G, "im2col_f32", "im2col", {"kernel_size": [2, 2]}, [inp("float32", [2, 3, 5, 6])], grad=True)
    add_case(G, "im2col_f32_all_args", "im2col", {"kernel_size": [2, 3], "dilation": [2, 1], "padding": [1, 2],
                                                  "stride": [2, 3]}, [inp("float32", [1, 2, 7, 5])], grad=True)
    add_case(G, "im2col_f32_unbatched", "im2col", {"kernel_size": [3, 1], "stride": [1, 2]}, [inp("float32", [2, 4, 5])],
             grad=True)
    add_case(G, "im2col_f64_view", "im2col", {"kernel_size": [2, 2], "padding": [1, 1]},
             [inp("float64", [3, 4, 2, 5]).v("permute", 2, 0, 3, 1)], grad=True)
    add_case(G, "im2col_f32_whole_image", "im2col", {"kernel_size": [3, 4]}, [inp("float32", [1, 1, 3, 4])], grad=True)
    add_case(G, "im2col_f32_empty_batch", "im2col", {"kernel_size": [2, 2]}, [In("float32", [0, 3, 4, 4], [])])


def running_ops():
    for op in ("cummax", "cummin"):
        for part in ("values", "indices"):
            p = {"part": part}
            # "cmp" values: halves in [-2, 2], many ties (the index is the last one's)
            add_case(G, f"{op}_f32_ties_{part}", op, {**p, "dim": 1}, [inp("float32", [3, 9], "cmp")],
                     grad=part == "values")
            add_case(G, f"{op}_f64_view_{part}", op, {**p, "dim": 0}, [nc_permute("float64", "cmp")],
                     grad=part == "values")
            add_case(G, f"{op}_f32_nan_{part}", op, {**p, "dim": 0},
                     [edge("float32", [1.0, 3.0, 3.0, -INF, NAN, 5.0, NAN, 1.0, INF])], grad=part == "values")
            add_case(G, f"{op}_int64_{part}", op, {**p, "dim": -1}, [inp("int64", [2, 7], "small")])
            add_case(G, f"{op}_bool_{part}", op, {**p, "dim": 0}, [inp("bool", [6])])
            add_case(G, f"{op}_f32_0d_{part}", op, {**p, "dim": 0}, [In("float32", [], [1.5])], grad=part == "values")
            add_case(G, f"{op}_f32_empty_{part}", op, {**p, "dim": 1}, [In("float32", [2, 0], [])])
    # rows longer than twice the scan block (256): scanned in blocks, then combined
    long_nan = [float(v) for v in vals("float32", 600, "cmp")]
    long_nan[300] = NAN
    long_nan[550] = NAN
    for op in ("cummax", "cummin"):
        for part in ("values", "indices"):
            p = {"part": part}
            add_case(G, f"{op}_f32_long_{part}", op, {**p, "dim": 1}, [inp("float32", [1, 600], "cmp")],
                     grad=part == "values")
            add_case(G, f"{op}_f32_long_nan_{part}", op, {**p, "dim": 0}, [In("float32", [600], long_nan)])
            add_case(G, f"{op}_int32_long_{part}", op, {**p, "dim": 0}, [inp("int32", [530, 1], "small")])
    add_case(G, "logcumsumexp_f32_long", "logcumsumexp", {"dim": 1}, [inp("float32", [1, 700], "any")], grad=True)
    add_case(G, "logcumsumexp_f64_long_view", "logcumsumexp", {"dim": 0}, [inp("float64", [2, 520]).v("transpose", 0, 1)],
             grad=True)
    add_case(G, "logcumsumexp_f32", "logcumsumexp", {"dim": 1}, [inp("float32", [3, 9])], grad=True)
    add_case(G, "logcumsumexp_f64_view", "logcumsumexp", {"dim": 0}, [nc_permute("float64", "wide")], grad=True)
    add_case(G, "logcumsumexp_f32_big", "logcumsumexp", {"dim": 0},
             [edge("float32", [1000.0, -1000.0, 1001.0, 80.0, 100.0])], grad=True,
             # outputs near 1000 are good to float32's ulp there (6e-5 absolute), and so the gradient
             gradtol=(1e-5, 1e-4))
    add_case(G, "logcumsumexp_f32_edge", "logcumsumexp", {"dim": 0},
             [edge("float32", [-INF, -INF, 1.0, -INF, INF, 2.0, NAN, 3.0])])
    add_case(G, "logcumsumexp_f32_0d", "logcumsumexp", {"dim": 0}, [In("float32", [], [1.5])], grad=True)
    add_case(G, "logcumsumexp_f32_empty", "logcumsumexp", {"dim": 0}, [In("float32", [0, 2], [])])


def main():
    inverse_and_hyperbolic()
    binary_ops()
    functionals()
    diagonals()
    im2col()
    running_ops()
    write_and_report()


if __name__ == "__main__":
    main()
