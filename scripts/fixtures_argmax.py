#!/usr/bin/python3
"""Writes tests/fixtures/argmax_products.txt: argmax and argmin of a matrix product, and the
accuracy line of a classifier, ((X @ W).argmax(1) == Y).float().mean(), from PyTorch; the test in
tests/test_reductions.cpp computes each both fused (one realize of the whole expression) and with
the product realized first.

    /usr/bin/python3 scripts/fixtures_argmax.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

These once gave wrong answers when fused: the row maximum was kept as a float while the comparison
read the product's double accumulator, so no element matched (issue 13). Shapes: the issue's
64x16 @ 16x4, odd and prime sizes, one row, one column; small integers for exact ties (the first
index wins); float64 and float16 (products summed in float32 and rounded, as PyTorch does on a GPU).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(1313)

G = "argmax_products"
SHAPES = [(64, 16, 4), (7, 5, 3), (33, 17, 13), (1, 8, 5), (9, 3, 1), (128, 32, 10)]


def product(i):
    x, w = i[0], i[1]
    if x.dtype == torch.float16:  # PyTorch 1.13 has no float16 matmul on the CPU: float32, rounded
        return (x.float() @ w.float()).half()
    return x @ w


def arg(a, i, largest):
    p = product(i)
    return (p.argmax if largest else p.argmin)(a["dim"], keepdim=a.get("keepdim", False))


def accuracy(a, i):
    return (product(i).argmax(1) == i[2]).float().mean()


def main():
    for dt in ("float32", "float64", "float16"):
        for m, k, n in SHAPES:
            if dt != "float32" and (m, k, n) not in ((64, 16, 4), (33, 17, 13)):
                continue
            for form in ("fused", "split"):
                for op, largest in (("argmax_matmul", True), ("argmin_matmul", False)):
                    for dim in (0, 1):
                        name = f"{op}_{dt}_{m}x{k}x{n}_dim{dim}_{form}"
                        args = {"dim": dim, "keepdim": dim == 0, "form": form}
                        add_case(G, name, op, args, [inp(dt, [m, k]), inp(dt, [k, n])],
                                 fn=lambda a, i, largest=largest: arg(a, i, largest), half_in_float32=False)
                labels = In("int64", [m], [int(v) for v in rng.integers(0, n, m)])
                add_case(G, f"accuracy_{dt}_{m}x{k}x{n}_{form}", "accuracy_matmul", {"form": form},
                         [inp(dt, [m, k]), inp(dt, [k, n]), labels], fn=accuracy, half_in_float32=False)
    # Exact ties: small integers give equal products, and the first index must win, fused or not.
    for form in ("fused", "split"):
        x = In("float32", [12, 6], [float(v) for v in rng.integers(-1, 2, 72)])
        w = In("float32", [6, 5], [float(v) for v in rng.integers(0, 2, 30)])
        for op, largest in (("argmax_matmul", True), ("argmin_matmul", False)):
            add_case(G, f"{op}_ties_{form}", op, {"dim": 1, "form": form}, [x, w],
                     fn=lambda a, i, largest=largest: arg(a, i, largest), half_in_float32=False)
    write_and_report(sys.argv[1] if len(sys.argv) > 1 else None, generator="scripts/fixtures_argmax.py")


if __name__ == "__main__":
    main()
