#!/usr/bin/python3
"""Writes tests/fixtures/grad_smoke.txt: a few forward + gradient cases (add, mul, exp, sum, permute,
and inputs seen through views) that tests/test_grad_smoke.cpp checks lazygrad's autograd against.
It is also the smallest example of a fixture script built on scripts/fixtures_lib.py.

    /usr/bin/python3 scripts/fixtures_grad_smoke.py [OUTDIR]      # OUTDIR defaults to tests/fixtures
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(31)  # a seed of its own: other scripts' cases never shift this file's values

G = "grad_smoke"


def t_sum(a, i):
    if "axes" not in a:
        return torch.sum(i[0])
    return torch.sum(i[0], dim=a["axes"], keepdim=a.get("keepdim", False))


# The reference functions, under the keys the C++ op table uses ("<op>.<form>" when there is a form).
register_ops({
    "add.tt": lambda a, i: i[0] + i[1],
    "mul.tt": lambda a, i: i[0] * i[1],
    "mul.ts": lambda a, i: i[0] * a["scalar"],
    "exp": lambda a, i: torch.exp(i[0]),
    "sum": t_sum,
    "permute": lambda a, i: i[0].permute(a["order"]),
}, non_compute=["permute"])


def main():
    tt = {"form": "tt"}
    add_case(G, "add_f32_bcast", "add", tt, [inp("float32", [3, 4]), inp("float32", [4])], grad=True)
    add_case(G, "add_f32_only_lhs", "add", tt, [inp("float32", [2, 3]), inp("float32", [2, 3])], grad=[0])
    add_case(G, "add_f32_expanded_rhs", "add", tt, [inp("float32", [3, 7]), nc_expand("float32")], grad=True)
    add_case(G, "mul_f32", "mul", tt, [inp("float32", [2, 3]), inp("float32", [2, 3])], grad=True)
    add_case(G, "mul_f64_permuted_lhs", "mul", tt, [nc_permute("float64"), inp("float64", [4])], grad=True)
    add_case(G, "mul_f32_int32_rhs", "mul", tt, [inp("float32", [5]), inp("int32", [5], "small")], grad=True)
    add_case(G, "mul_f32_scalar", "mul", {"form": "ts", "scalar": 2.5}, [inp("float32", [3, 4])], grad=True)
    add_case(G, "exp_f32", "exp", {}, [inp("float32", [7], "exp")], grad=True)
    add_case(G, "exp_f32_sliced", "exp", {}, [nc_slice("float32", "exp")], grad=True)
    add_case(G, "exp_f32_padded", "exp", {}, [nc_pad("float32", "exp")], grad=True)
    add_case(G, "exp_f32_scalar", "exp", {}, [inp("float32", [], "exp")], grad=True)
    add_case(G, "exp_f16", "exp", {}, [inp("float16", [2, 5], "exp")], grad=True)
    add_case(G, "sum_f32_all", "sum", {}, [inp("float32", [3, 4])], grad=True)
    add_case(G, "sum_f32_axis1_keepdim", "sum", {"axes": 1, "keepdim": True}, [inp("float32", [3, 4])], grad=True)
    add_case(G, "sum_f64_axes02_of_flipped", "sum", {"axes": [0, 2]}, [inp("float64", [2, 3, 4]).v("flip", 1)], grad=True)
    add_case(G, "permute_f32", "permute", {"order": [2, 0, 1]}, [inp("float32", [2, 3, 4])], grad=True)
    add_case(G, "permute_f32_of_transposed", "permute", {"order": [1, 0]}, [nc_transpose_t("float32")], grad=True)
    write_and_report()


if __name__ == "__main__":
    main()
