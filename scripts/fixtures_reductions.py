#!/usr/bin/python3
"""Writes tests/fixtures/reductions.txt: forward values and gradients of var, std, logsumexp, argmax,
argmin, any, all, cumsum, cumprod and norm (src/tensor/reduce_more.cpp); tests/test_reductions.cpp
runs them.

    /usr/bin/python3 scripts/fixtures_reductions.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

A handful of cases per op (each distinct shape and dtype is a kernel to compile): float32 with
gradients over one axis and over all, float64 through a non-contiguous view with several axes and
keepdim, and the values that matter for the op (ties and NaN for argmax, -inf rows for logsumexp,
zeros for cumprod and norm, constant rows for std, empty dimensions).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(3004)  # a seed of its own: other scripts' cases never shift this file's values

G = "reductions"
NAN, INF = float("nan"), float("inf")


def dims(a, t):
    """The case's axes as torch wants them: a tuple, all dims when absent."""
    if "axes" not in a:
        return tuple(range(t.dim()))
    return (a["axes"],) if isinstance(a["axes"], int) else tuple(a["axes"])


def var(a, i):
    return torch.var(i[0], dims(a, i[0]), correction=a.get("correction", 1), keepdim=a.get("keepdim", False))


def std(a, i):
    return torch.std(i[0], dims(a, i[0]), correction=a.get("correction", 1), keepdim=a.get("keepdim", False))


def any_all(f):
    def run(a, i):
        x, keep = i[0], a.get("keepdim", False)
        if "axes" not in a and not keep:
            return f(x)
        # torch 1.13 takes one dim at a time: reduce the axes from the last, keeping dims until the end
        out = x
        for d in sorted(dims(a, x), reverse=True):
            out = f(out, d, keepdim=True)
        return out if keep else out.reshape([s for k, s in enumerate(x.shape) if k not in dims(a, x)])
    return run


register_ops({
    "var": var,
    "std": std,
    "logsumexp": lambda a, i: torch.logsumexp(i[0], dims(a, i[0]), a.get("keepdim", False)),
    "argmax": lambda a, i: torch.argmax(i[0], a.get("axis"), a.get("keepdim", False)),
    "argmin": lambda a, i: torch.argmin(i[0], a.get("axis"), a.get("keepdim", False)),
    "any": any_all(torch.any),
    "all": any_all(torch.all),
    "cumsum": lambda a, i: torch.cumsum(i[0], a["dim"], dtype=TORCH_DT[a["dtype"].name] if "dtype" in a else None),
    "cumprod": lambda a, i: torch.cumprod(i[0], a["dim"], dtype=TORCH_DT[a["dtype"].name] if "dtype" in a else None),
    "norm": lambda a, i: torch.linalg.vector_norm(i[0], a.get("p", 2.0), dims(a, i[0]) if "axes" in a else None,
                                                  a.get("keepdim", False)),
})


def statistics():
    for op in ("var", "std"):
        add_case(G, f"{op}_f32_axis1", op, {"axes": 1}, [inp("float32", [3, 4])], grad=True)
        add_case(G, f"{op}_f64_axes02_keepdim_view", op, {"axes": [0, 2], "keepdim": True}, [nc_compose("float64")],
                 grad=True)
        # a constant row (std 0: PyTorch's gradient is 0 there, not inf)
        add_case(G, f"{op}_f32_edge", op, {"axes": 1}, [In("float32", [2, 3], [2.0, 2.0, 2.0, 1.0, -1.0, 0.5])], grad=True)
        add_case(G, f"{op}_f16", op, {"axes": 1}, [inp("float16", [3, 4])], grad=True)
    # std is var's square root: the other arguments once, on var
    add_case(G, "var_f32_all", "var", {}, [inp("float32", [2, 3, 5])], grad=True)
    add_case(G, "var_f32_correction0", "var", {"axes": 0, "correction": 0}, [inp("float32", [3, 4])], grad=True)
    add_case(G, "var_f32_correction2", "var", {"axes": -1, "correction": 2}, [inp("float32", [3, 4])], grad=True)
    # infinities and NaN: values only (the gradients are NaN or inf by different routes)
    add_case(G, "var_f32_inf", "var", {"axes": 1}, [In("float32", [2, 3], [1.0, INF, 0.0, -INF, 1.0, NAN])])
    # one element over correction 1: 0 / 0
    add_case(G, "var_f32_single", "var", {"axes": 0}, [inp("float32", [1, 3])], grad=True)
    add_case(G, "std_f32_empty", "std", {}, [In("float32", [0], [])])
    add_case(G, "logsumexp_f32_axis1", "logsumexp", {"axes": 1}, [inp("float32", [3, 4], "wide")], grad=True)
    add_case(G, "logsumexp_f32_all", "logsumexp", {}, [inp("float32", [2, 3, 5])], grad=True)
    add_case(G, "logsumexp_f64_axes02_keepdim_view", "logsumexp", {"axes": [0, 2], "keepdim": True},
             [nc_compose("float64", "wide")], grad=True)
    # rows: all -inf, a +inf, a NaN, large values that would overflow exp, one -inf among finite values
    add_case(G, "logsumexp_f32_edge", "logsumexp", {"axes": 1},
             [In("float32", [5, 3], [-INF, -INF, -INF, 1.0, INF, 0.0, 1.0, NAN, 2.0, 1000.0, 1000.5, 999.0,
                                     -INF, 0.5, -2.0])], grad=True)
    add_case(G, "logsumexp_f32_empty_dim", "logsumexp", {"axes": 1}, [In("float32", [2, 0], [])])
    add_case(G, "logsumexp_int64", "logsumexp", {"axes": 0}, [inp("int64", [4, 3], "small")])
    add_case(G, "logsumexp_f16", "logsumexp", {"axes": 1}, [inp("float16", [3, 4])], grad=True)


def arg_reductions():
    for op in ("argmax", "argmin"):
        # halves in [-2, 2]: ties, where the first index wins
        add_case(G, f"{op}_f32_ties_axis1", op, {"axis": 1}, [inp("float32", [4, 7], "cmp")])
        add_case(G, f"{op}_f32_axis0_keepdim", op, {"axis": 0, "keepdim": True}, [inp("float32", [4, 7], "cmp")])
        add_case(G, f"{op}_f32_all_keepdim", op, {"keepdim": True}, [inp("float32", [3, 4], "cmp")])
        add_case(G, f"{op}_f64_view_axis2", op, {"axis": 2}, [nc_compose("float64", "cmp")])
        # NaN counts as the extreme (its first occurrence); +-inf otherwise
        add_case(G, f"{op}_f32_edge", op, {"axis": 1},
                 [In("float32", [4, 4], [1.0, NAN, 3.0, NAN, INF, 1.0, INF, -INF, -INF, -INF, 0.0, -0.0,
                                         0.0, -0.0, 2.0, 2.0])])
        add_case(G, f"{op}_int32", op, {"axis": 0}, [inp("int32", [5, 3], "cmp")])
        add_case(G, f"{op}_uint8", op, {}, [inp("uint8", [7], "cmp")])
        add_case(G, f"{op}_scalar", op, {"axis": 0}, [inp("float32", [])])
        add_case(G, f"{op}_empty_rows", op, {"axis": 1}, [In("float32", [0, 3], [])])


def logical_reductions():
    for op in ("any", "all"):
        add_case(G, f"{op}_bool_all", op, {}, [inp("bool", [3, 4])])
        add_case(G, f"{op}_bool_axis1", op, {"axes": 1}, [inp("bool", [3, 4])])
        add_case(G, f"{op}_bool_axes02_keepdim", op, {"axes": [0, 2], "keepdim": True}, [inp("bool", [2, 3, 2])])
        add_case(G, f"{op}_f32_edge", op, {"axes": 1},
                 [In("float32", [3, 3], [0.0, -0.0, NAN, 0.0, 0.0, 0.0, 1.0, INF, -2.0])])
        add_case(G, f"{op}_int32_view", op, {"axes": 0}, [nc_permute("int32", "cmp")])
        add_case(G, f"{op}_uint8", op, {"axes": 0}, [inp("uint8", [4, 3], "cmp")])
        add_case(G, f"{op}_empty_dim", op, {"axes": 1}, [In("float32", [2, 0], [])])
        add_case(G, f"{op}_empty_all", op, {}, [In("bool", [0, 3], [])])


def scans():
    for op, kind in (("cumsum", "any"), ("cumprod", "near1")):
        # dim 0 (moved last through a transpose) and the last dim of a view
        add_case(G, f"{op}_f32_dim0", op, {"dim": 0}, [inp("float32", [5, 3], kind)], grad=True)
        add_case(G, f"{op}_f64_view_dim_last", op, {"dim": -1}, [nc_compose("float64", kind)], grad=True)
        add_case(G, f"{op}_int32", op, {"dim": 0}, [inp("int32", [4, 3], "small" if op == "cumsum" else "prod")])
        add_case(G, f"{op}_bool", op, {"dim": 1}, [inp("bool", [2, 5])])
        add_case(G, f"{op}_int16_to_f64", op, {"dim": 0, "dtype": D("float64")}, [inp("int16", [6], "small")])
        add_case(G, f"{op}_scalar", op, {"dim": 0}, [inp("float32", [], kind)], grad=True)
        add_case(G, f"{op}_f16", op, {"dim": 0}, [inp("float16", [7], kind)], grad=True)
        add_case(G, f"{op}_empty", op, {"dim": 1}, [In("float32", [2, 0], [])])
    # longer than two blocks of 256: the blocked scan, in float64 so that sums of 1023 terms compare tightly
    add_case(G, "cumsum_f64_long", "cumsum", {"dim": 0}, [inp("float64", BIG)], grad=True)
    long_factors = round_to("float64", np.round(1 + rng.normal(0, 0.02, BIG[0]), 4))
    long_factors[300] = 0.0  # a zero in the second block: everything after it is exactly 0
    add_case(G, "cumprod_f64_long_zero", "cumprod", {"dim": 0}, [In("float64", BIG, long_factors)], grad=True)
    add_case(G, "cumsum_f32_edge", "cumsum", {"dim": 1},
             [In("float32", [2, 4], [1.0, INF, -INF, 2.0, NAN, 1.0, 2.0, 3.0])], grad=True)
    # zeros: one per row, two in a row, a leading zero; PyTorch's gradient is exact there
    add_case(G, "cumprod_f32_zeros", "cumprod", {"dim": 1},
             [In("float32", [4, 5], [2.0, 0.0, 3.0, -1.5, 0.5, 1.5, 0.0, 2.0, 0.0, 3.0, 0.0, 2.0, 3.0, 4.0, 0.5,
                                     1.0, 2.0, -3.0, 0.5, 0.0])], grad=True)
    add_case(G, "cumprod_f64_zeros_dim0", "cumprod", {"dim": 0},
             [In("float64", [3, 3], [0.0, 2.0, 1.5, 3.0, 0.0, -2.0, -1.0, 4.0, 0.0])], grad=True)


def norms():
    for p in (2.0, 1.0, INF, -INF, 0.0, 3.0, 0.5, 1.5):
        tag = {2.0: "2", 1.0: "1", INF: "inf", -INF: "neginf", 0.0: "0", 3.0: "3", 0.5: "0_5", 1.5: "1_5"}[p]
        add_case(G, f"norm_p{tag}_f32_all", "norm", {"p": p}, [inp("float32", [3, 4])], grad=True)
        if p in (2.0, 1.0, 3.0, 0.5):
            add_case(G, f"norm_p{tag}_f64_axes02_keepdim_view", "norm", {"p": p, "axes": [0, 2], "keepdim": True},
                     [nc_compose("float64")], grad=True)
        # a row of zeros (PyTorch's gradient is 0 there) and a row with one zero and ties in |x|
        add_case(G, f"norm_p{tag}_f32_zeros", "norm", {"p": p, "axes": 1},
                 [In("float32", [2, 4], [0.0, 0.0, -0.0, 0.0, 0.0, -2.0, 2.0, 1.0])], grad=True)
    add_case(G, "norm_p2_f16", "norm", {"axes": 0}, [inp("float16", [4, 3])], grad=True)
    add_case(G, "norm_p_neg1_f64", "norm", {"p": -1.0, "axes": 1}, [inp("float64", [3, 4], "nonzero")], grad=True)
    add_case(G, "norm_p2_f32_empty", "norm", {}, [In("float32", [0, 3], [])])


def main():
    statistics()
    arg_reductions()
    logical_reductions()
    scans()
    norms()
    write_and_report()


if __name__ == "__main__":
    main()
