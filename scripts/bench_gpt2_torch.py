#!/usr/bin/python3
"""PyTorch's side of bench/gpt2.cpp: GPT-2 inference speed, prompt and decode, batch 1, float32.

bench_gpt2 runs this with Debian's /usr/bin/python3 (python3-torch), with OPENBLAS_CORETYPE,
OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS / OPENBLAS_NUM_THREADS set to its thread count.

    bench_gpt2_torch.py --threads N --layers L --heads H --embd C --vocab V --positions P
                        --prompt T --decode K --reps R

The model is Hugging Face's GPT2LMHeadModel written out in torch (this machine has no
`transformers`): HF's Conv1D as addmm, gelu_new, eager attention with the causal mask, and HF's
KV cache, which grows by torch.cat at every step. Weights are random (speed does not depend on
them). Under torch.inference_mode. Prints, for bench_gpt2 to parse:

    torch VERSION threads N
    prompt_ms BEST            the best of R forwards of a T-token prompt (filling the cache), with
                              every position's logits (HF's forward)
    prefill_ms BEST           the same with the last position's logits only (HF's generate:
                              logits_to_keep=1)
    decode_ms MEAN            the mean time of one decode step over K steps after the prompt,
                              each taking the argmax of the last logits (the best of R such runs)

A failed `import torch` prints `skip REASON` and exits 0.
"""

import argparse
import math
import time


def main():
    p = argparse.ArgumentParser()
    for name in ("threads", "layers", "heads", "embd", "vocab", "positions", "prompt", "decode", "reps"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--device", default="cpu", help="cpu, or cuda (lazygrad's DEVICE=CUDA runs)")
    a = p.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any failure means no peer, not a failed benchmark
        print(f"skip import torch failed: {type(e).__name__}: {e}".replace("\n", " "))
        return 0
    if a.device == "cuda" and not torch.cuda.is_available():
        print("skip this PyTorch has no CUDA")
        return 0
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    C, H, D = a.embd, a.heads, a.embd // a.heads

    def randn(*shape):
        return torch.randn(*shape) * 0.02

    w = {"wte": randn(a.vocab, C), "wpe": randn(a.positions, C), "ln_f.w": torch.ones(C), "ln_f.b": torch.zeros(C)}
    for i in range(a.layers):
        for ln in ("ln_1", "ln_2"):
            w[f"{i}.{ln}.w"], w[f"{i}.{ln}.b"] = torch.ones(C), torch.zeros(C)
        for name, nx, nf in (("c_attn", C, 3 * C), ("attn.c_proj", C, C), ("c_fc", C, 4 * C), ("mlp.c_proj", 4 * C, C)):
            w[f"{i}.{name}.w"], w[f"{i}.{name}.b"] = randn(nx, nf), torch.zeros(nf)
    w = {k: v.to(dev) for k, v in w.items()}

    def now():  # a GPU's queue drained first: its time is the kernels'
        if dev.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter()

    def conv1d(x, i, name):  # HF's Conv1D.forward
        out = torch.addmm(w[f"{i}.{name}.b"], x.view(-1, x.size(-1)), w[f"{i}.{name}.w"])
        return out.view(x.size()[:-1] + (out.size(-1),))

    def gelu_new(x):  # HF's NewGELUActivation
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def forward(tokens, past, logits_to_keep=0):  # HF's GPT2LMHeadModel.forward with past_key_values
        T, start = tokens.shape[1], (past[0][0].shape[2] if past else 0)
        x = w["wte"][tokens] + w["wpe"][torch.arange(start, start + T, device=dev)][None]
        new_past = []
        for i in range(a.layers):
            h = F.layer_norm(x, (C,), w[f"{i}.ln_1.w"], w[f"{i}.ln_1.b"], 1e-5)
            q, k, v = conv1d(h, i, "c_attn").split(C, dim=2)
            q, k, v = (t.view(1, T, H, D).permute(0, 2, 1, 3) for t in (q, k, v))
            if past:
                k, v = torch.cat((past[i][0], k), dim=-2), torch.cat((past[i][1], v), dim=-2)
            new_past.append((k, v))
            S = k.shape[2]
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
            causal = torch.ones(S, S, dtype=torch.bool, device=dev).tril()[S - T:S]
            scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min, device=dev))
            out = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(1, T, C)
            x = x + conv1d(out, i, "attn.c_proj")
            h = F.layer_norm(x, (C,), w[f"{i}.ln_2.w"], w[f"{i}.ln_2.b"], 1e-5)
            x = x + conv1d(gelu_new(conv1d(h, i, "c_fc")), i, "mlp.c_proj")
        if logits_to_keep:
            x = x[:, -logits_to_keep:]
        x = F.layer_norm(x, (C,), w["ln_f.w"], w["ln_f.b"], 1e-5)
        return x @ w["wte"].t(), new_past

    print(f"torch {torch.__version__} threads {torch.get_num_threads()} device {a.device}")
    prompt = torch.randint(0, a.vocab, (1, a.prompt)).to(dev)
    best_prompt, best_prefill, best_decode = float("inf"), float("inf"), float("inf")
    with torch.inference_mode():
        forward(prompt, None)  # warm-up
        for _ in range(a.reps):
            t0 = now()
            forward(prompt, None)
            best_prompt = min(best_prompt, now() - t0)
            t0 = now()
            logits, past = forward(prompt, None, logits_to_keep=1)
            best_prefill = min(best_prefill, now() - t0)
            t0 = now()
            for _ in range(a.decode):
                logits, past = forward(logits[:, -1].argmax(-1, keepdim=True), past)
            best_decode = min(best_decode, (now() - t0) / a.decode)
    print(f"prompt_ms {best_prompt * 1e3:.3f}")
    print(f"prefill_ms {best_prefill * 1e3:.3f}")
    print(f"decode_ms {best_decode * 1e3:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
