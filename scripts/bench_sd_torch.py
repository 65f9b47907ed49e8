#!/usr/bin/python3
"""PyTorch's side of bench/stable_diffusion_step.cpp: one Stable Diffusion v1.x sampler step (the UNet
on a batch of two, guidance, the DDIM update), float32, with the weights lazygrad wrote.

bench_stable_diffusion_step runs this with Debian's /usr/bin/python3 (python3-torch), with
OPENBLAS_CORETYPE, OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS / OPENBLAS_NUM_THREADS set to its
thread count.

    bench_sd_torch.py --threads N --reps K --size S --weights FILE --io FILE [--device cpu|cuda]

The network is the reference of the parity fixture (scripts/make_sd_fixture.py: unet(), written from
the LDM repository's architecture) at v1.x's sizes: model_channels 320, channel_mult 1, 2, 4, 4, 2
ResBlocks a level, attention at the first three levels, 8 heads, context 768, GroupNorm of 32. The
weights are the safetensors file's (mapped, torch.frombuffer); the io file holds lazygrad's inputs
(x, context, t) and its guided noise prediction e. Under torch.inference_mode. Prints, for the
bench to parse:

    torch VERSION threads N device D
    result first_s FIRST best_s BEST rel_diff DIFF     the first step's time, the best of K after it,
                                                       and max |e - lazygrad's e| / max |lazygrad's e|

A failed `import torch` prints `skip REASON` and exits 0.
"""

import argparse
import json
import mmap
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {"F32": "float32", "F16": "float16", "I64": "int64"}


def load_safetensors(path, torch):
    """Every tensor of the file, as views of its mapping (no copy)."""
    f = open(path, "rb")
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    n = struct.unpack("<Q", mm[:8])[0]
    header = json.loads(mm[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = getattr(torch, DTYPES[info["dtype"]])
        count = (end - begin) // torch.tensor([], dtype=dtype).element_size()
        t = torch.frombuffer(mm, dtype=dtype, count=count, offset=8 + n + begin) if count else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(info["shape"])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--reps", type=int, required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--weights", required=True)
    p.add_argument("--io", required=True)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    try:
        import warnings
        warnings.filterwarnings("ignore")  # frombuffer on a read-only mapping warns; nothing writes to it
        import torch
    except Exception as e:  # noqa: BLE001 - any failure means no peer, not a failed benchmark
        print(f"skip import torch failed: {type(e).__name__}: {e}".replace("\n", " "))
        return 0
    if a.device == "cuda" and not torch.cuda.is_available():
        print("skip this PyTorch has no CUDA")
        return 0
    sys.path.insert(0, HERE)
    import make_sd_fixture as fx

    fx.UNET = dict(in_ch=4, mc=320, mult=(1, 2, 4, 4), res=2, attn=(True, True, True, False), heads=8, depth=1,
                   ctx=768, temb=1280, out_ch=4)
    fx.GROUPS = 32
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    w = load_safetensors(a.weights, torch)
    w = {k: v.to(dev) for k, v in w.items()}
    io = {k: v.to(dev) for k, v in load_safetensors(a.io, torch).items()}
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} device {a.device}", flush=True)
    abar = fx.alphas_cumprod().tolist()
    t = int(io["t"].item())
    uncond, cond = io["context"].chunk(2)

    def step():
        start = time.perf_counter()
        x = io["x"]
        e_u, e_c = fx.unet(w, torch.cat([x, x]), io["t"], torch.cat([uncond, cond])).chunk(2)
        e = e_u + (e_c - e_u) * 7.5
        x0 = (x - e * (1 - abar[t]) ** 0.5) * (1 / abar[t] ** 0.5)
        _ = x0 * abar[t - 25] ** 0.5 + e * (1 - abar[t - 25]) ** 0.5
        if a.device == "cuda":
            torch.cuda.synchronize()
        return e, time.perf_counter() - start

    with torch.inference_mode():
        e, first = step()
        best = min(step()[1] for _ in range(a.reps))
    diff = float((e - io["e"]).abs().max() / io["e"].abs().max())
    print(f"result first_s {first:.3f} best_s {best:.3f} rel_diff {diff:.3e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
