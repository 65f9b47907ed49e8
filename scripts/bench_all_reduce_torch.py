#!/usr/bin/python3
"""PyTorch's side of bench/mpi_all_reduce.cpp: torch.distributed all_reduce (gloo) between processes.

bench_mpi_all_reduce runs this with Debian's /usr/bin/python3 (python3-torch), with OMP_NUM_THREADS
and the BLAS pools at its thread count (each process's).

    bench_all_reduce_torch.py --threads N --ranks K --repeats R BYTES...

Starts K processes on this machine (torch.multiprocessing, a TCP store on 127.0.0.1), each with a
float32 tensor of BYTES / 4 random values per size, and times dist.all_reduce (a sum) on it: two
calls to warm up, then the best of R, each after a barrier (as the lazygrad side times its own).
Prints, for bench_mpi_all_reduce to parse:

    torch VERSION backend gloo ranks K threads N
    size BYTES us BEST

A failed `import torch` or a missing gloo prints `skip REASON` and exits 0.
"""

import argparse
import os
import socket
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, ranks, port, threads, repeats, sizes):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    for size in sizes:
        t = torch.randn(size // 4)
        for _ in range(2):
            dist.all_reduce(t)
        best = float("inf")
        for _ in range(repeats):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            best = min(best, time.perf_counter() - t0)
        if rank == 0:
            print(f"size {size} us {best * 1e6:.1f}", flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("sizes", type=int, nargs="+")
    args = parser.parse_args()
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except Exception as e:  # noqa: BLE001 - any failure means no peer, not a failed benchmark
        print(f"skip import torch failed: {type(e).__name__}: {e}".replace("\n", " "))
        return 0
    if not dist.is_available() or not dist.is_gloo_available():
        print("skip this PyTorch has no torch.distributed with gloo")
        return 0
    print(f"torch {torch.__version__} backend gloo ranks {args.ranks} threads {args.threads}", flush=True)
    mp.spawn(worker, args=(args.ranks, free_port(), args.threads, args.repeats, args.sizes),
             nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
