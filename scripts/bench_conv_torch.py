#!/usr/bin/python3
"""PyTorch's side of bench/conv.cpp: conv2d forward and backward times, one line per case.

bench_conv runs this with Debian's /usr/bin/python3 (python3-torch) and sets OPENBLAS_CORETYPE,
OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS / OPENBLAS_NUM_THREADS to its thread count.

    bench_conv_torch.py --threads N --reps K CASE...     CASE = name:batch:cin:cout:kernel:size:pad

Prints, for bench_conv to parse (space-separated, one record per line):

    torch VERSION threads N mkldnn 0|1 blas LIBRARY
    path CASE OP,OP,...          the aten convolution ops one step ran (which implementation)
    case CASE fwd_ms BEST bwd_ms BEST first_ms WARMUP

fwd is F.conv2d(x, w, padding=pad) (no bias) with x and w requiring grad; bwd is
out.backward(g) with g an upstream gradient from torch.rand, made before timing (as bench_conv does),
which computes x.grad and w.grad. Both are the
best of K, after a warm-up step and one profiled step. A failed `import torch` prints `skip REASON`
and exits 0.
"""

import argparse
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--reps", type=int, required=True)
    parser.add_argument("cases", nargs="+")
    args = parser.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any failure means no peer, not a failed benchmark
        print(f"skip import torch failed: {type(e).__name__}: {e}".replace("\n", " "))
        return 0

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    blas = "?"
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "blas" in line:
                blas = line.split()[-1]
                break
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} "
          f"mkldnn {int(torch.backends.mkldnn.is_available())} blas {blas}", flush=True)

    for spec in args.cases:
        name, batch, cin, cout, k, size, pad = spec.split(":")
        batch, cin, cout, k, size, pad = map(int, (batch, cin, cout, k, size, pad))
        x = torch.rand(batch, cin, size, size, requires_grad=True)
        w = torch.rand(cout, cin, k, k, requires_grad=True)
        o = size + 2 * pad - k + 1
        g = torch.rand(batch, cout, o, o)

        def step():
            t0 = time.perf_counter()
            out = F.conv2d(x, w, padding=pad)
            t1 = time.perf_counter()
            out.backward(g)
            t2 = time.perf_counter()
            x.grad = None
            w.grad = None
            return t1 - t0, t2 - t1

        t0 = time.perf_counter()
        step()  # warm-up
        first = time.perf_counter() - t0
        with torch.autograd.profiler.profile() as prof:  # one more step, untimed, to name the ops
            step()
        ops = sorted({e.name for e in prof.function_events if "conv" in e.name or "mkldnn" in e.name})
        print(f"path {name} {','.join(ops) or '?'}", flush=True)
        times = [step() for _ in range(args.reps)]
        fwd = min(t[0] for t in times)
        bwd = min(t[1] for t in times)
        print(f"case {name} fwd_ms {fwd * 1e3:.3f} bwd_ms {bwd * 1e3:.3f} first_ms {first * 1e3:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
