#!/usr/bin/python3
"""GPT-2's LM head as a decode step runs it, x [1, 768] @ W.T with W [rows, 768], for 50257 rows
(padded to 50260 for the optimizer's 4-row tile), 50256 (no padding) and 50260, against PyTorch's
matmul of the same sizes in the same run. A 154 MB matrix fits the L3 of some machines (480 MiB on
the Xeon of docs/benchmarks.md): the figure is then the L3's, which is what shows a padded row's
cost in the kernel's loop (docs/optimizer.md, Padding).

    PYTHONPATH=build/python /usr/bin/python3 bench/lm_head.py [--reps R] [--threads T]
"""
import argparse
import os
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--reps", type=int, default=12, help="timed calls after 3 warm-up calls; the best counts")
parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads, ours and PyTorch's")
args = parser.parse_args()
os.environ.setdefault("THREADS", str(args.threads))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_CORETYPE", "SKYLAKEX")

import torch  # noqa: E402  (after the environment above)
from lazygrad import Tensor, TinyJit  # noqa: E402

torch.set_num_threads(args.threads)


def best_of(fn):
    best = float("inf")
    for i in range(args.reps + 3):
        t0 = time.perf_counter()
        fn()
        if i >= 3:
            best = min(best, time.perf_counter() - t0)
    return best


model = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
print(f"cpu: {model}; {args.threads} threads; best of {args.reps}")
for rows in (50257, 50256, 50260):
    w, x = Tensor.randn(rows, 768).realize(), Tensor.randn(1, 768).realize()
    step = TinyJit(lambda x: (x @ w.T).realize())
    ours = best_of(lambda: step(x))
    tw, tx = torch.randn(rows, 768), torch.randn(1, 768)
    peer = best_of(lambda: tx @ tw.T)
    gb = rows * 768 * 4 / 1e9
    print(f"rows {rows}: lazygrad {ours * 1e3:.2f} ms ({gb / ours:.1f} GB/s), PyTorch {peer * 1e3:.2f} ms "
          f"({gb / peer:.1f} GB/s); PyTorch / lazygrad time {peer / ours:.2f}")
