#!/usr/bin/python3
"""Writes the GPT-2 parity fixture for tests/test_gpt2.cpp:

    /usr/bin/python3 scripts/make_gpt2_fixture.py [OUTDIR]      # OUTDIR: tests/fixtures

  gpt2_tiny.safetensors   a tiny GPT-2 (n_layer 2, n_head 4, n_embd 16, vocab 101, n_positions 16)
                          with seeded random weights, under Hugging Face's names and layouts
                          (GPT2Model's state dict: wte.weight, wpe.weight, h.{i}.ln_1.weight, ...,
                          Conv1D weights as [in, out], and the h.{i}.attn.bias causal-mask buffer that
                          HF's files carry), float32.
  gpt2_tiny_logits.txt    the logits of a fixed token batch, as text:
                              config <n_layer> <n_head> <n_embd> <vocab_size> <n_positions> <eps>
                              tokens <B> <T> <B*T ints>
                              logits <B> <T> <vocab> <B*T*vocab floats>
  gpt2_tiny_generate.txt  the reference's greedy continuation of a fixed prompt (each step the argmax,
                          the first on a tie, of the last position's logits of a full forward),
                          until the sequence fills n_positions:
                              prompt <P> <P ints>
                              greedy <N> <N ints>
                              penalized <penalty> <N> <N ints>
                          the second: greedy after HF's RepetitionPenaltyLogitsProcessor (the logits of
                          the tokens so far, prompt included, divided by the penalty where positive,
                          multiplied where negative).

The reference forward below is HF's GPT2LMHeadModel (transformers 4.x, modeling_gpt2.py) written out
in plain torch, so that the transformers package is not needed: Conv1D is torch.addmm(b, x, W) with
W [in, out]; attention scores are scaled by 1/sqrt(head_dim) and the masked ones replaced by the
dtype's minimum before the softmax; the MLP's activation is "gelu_new" (the tanh approximation);
blocks are pre-LayerNorm; the LM head is tied to wte. The safetensors file is written with a few
lines of struct/json (scripts/safetensors_lib.py; Debian ships no `safetensors` package). Seeded: a
rerun writes identical files.
"""

import math
import os
import sys

import torch

from safetensors_lib import safetensors_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "fixtures")

N_LAYER, N_HEAD, N_EMBD, VOCAB, N_POSITIONS, EPS = 2, 4, 16, 101, 16, 1e-5
B, T = 2, 7
GEN_PROMPT, GEN_PENALTY = [3, 14, 15, 92, 65], 1.5


def make_weights(gen):
    # Larger than HF's init (std 0.02) so that every part of the model moves the logits.
    def randn(*shape, std=0.2):
        return torch.randn(*shape, generator=gen) * std

    w = {"wte.weight": randn(VOCAB, N_EMBD, std=0.5), "wpe.weight": randn(N_POSITIONS, N_EMBD, std=0.3)}
    for i in range(N_LAYER):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = 1.0 + randn(N_EMBD, std=0.1)
            w[p + ln + ".bias"] = randn(N_EMBD, std=0.1)
        # HF's causal-mask buffer (persistent in the files on the hub); the model ignores it.
        mask = torch.tril(torch.ones(N_POSITIONS, N_POSITIONS))
        w[p + "attn.bias"] = mask.view(1, 1, N_POSITIONS, N_POSITIONS)
        for name, nx, nf in (("attn.c_attn", N_EMBD, 3 * N_EMBD), ("attn.c_proj", N_EMBD, N_EMBD),
                             ("mlp.c_fc", N_EMBD, 4 * N_EMBD), ("mlp.c_proj", 4 * N_EMBD, N_EMBD)):
            w[p + name + ".weight"] = randn(nx, nf)  # Conv1D: [in, out]
            w[p + name + ".bias"] = randn(nf, std=0.1)
    w["ln_f.weight"] = 1.0 + randn(N_EMBD, std=0.1)
    w["ln_f.bias"] = randn(N_EMBD, std=0.1)
    return w


def conv1d(x, weight, bias):  # HF's Conv1D.forward
    size_out = x.size()[:-1] + (weight.size(-1),)
    return torch.addmm(bias, x.view(-1, x.size(-1)), weight).view(size_out)


def gelu_new(x):  # HF's NewGELUActivation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def attention(w, p, x):  # HF's GPT2Attention.forward (eager _attn), no cache, no dropout
    bsz, seq, embd = x.shape
    head_dim = embd // N_HEAD
    q, k, v = conv1d(x, w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"]).split(embd, dim=2)

    def split_heads(t):
        return t.view(bsz, seq, N_HEAD, head_dim).permute(0, 2, 1, 3)

    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    scores = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, dtype=q.dtype)
    causal = w[p + "attn.bias"][:, :, :seq, :seq].bool()
    scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(bsz, seq, embd)
    return conv1d(out, w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"])


def gpt2_logits(w, tokens):
    seq = tokens.shape[1]
    x = w["wte.weight"][tokens] + w["wpe.weight"][torch.arange(seq)][None]
    for i in range(N_LAYER):
        p = f"h.{i}."
        h = torch.nn.functional.layer_norm(x, (N_EMBD,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], EPS)
        x = x + attention(w, p, h)
        h = torch.nn.functional.layer_norm(x, (N_EMBD,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], EPS)
        h = gelu_new(conv1d(h, w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]))
        x = x + conv1d(h, w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"])
    x = torch.nn.functional.layer_norm(x, (N_EMBD,), w["ln_f.weight"], w["ln_f.bias"], EPS)
    return x @ w["wte.weight"].t()  # lm_head, tied to wte


def write_safetensors(path, tensors):
    with open(path, "wb") as f:
        f.write(safetensors_bytes(tensors))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    gen = torch.Generator().manual_seed(20240607)
    w = make_weights(gen)
    tokens = torch.randint(0, VOCAB, (B, T), generator=gen)
    with torch.no_grad():
        logits = gpt2_logits(w, tokens)
    write_safetensors(os.path.join(out, "gpt2_tiny.safetensors"), w)
    with open(os.path.join(out, "gpt2_tiny_logits.txt"), "w") as f:
        f.write(f"config {N_LAYER} {N_HEAD} {N_EMBD} {VOCAB} {N_POSITIONS} {EPS!r}\n")
        f.write(f"tokens {B} {T} " + " ".join(str(int(t)) for t in tokens.flatten()) + "\n")
        f.write(f"logits {B} {T} {VOCAB} " + " ".join(f"{v:.9g}" for v in logits.flatten().tolist()) + "\n")
    def greedy_continuation(penalty):
        seq, margin = list(GEN_PROMPT), math.inf
        with torch.no_grad():
            while len(seq) < N_POSITIONS:
                last = gpt2_logits(w, torch.tensor([seq]))[0, -1]
                seen = torch.tensor(sorted(set(seq)))
                score = last[seen]
                last[seen] = torch.where(score < 0, score * penalty, score / penalty)
                top2 = last.topk(2).values
                margin = min(margin, float(top2[0] - top2[1]))
                seq.append(int(last.argmax()))
        print(f"penalty {penalty}: smallest top-2 logit margin {margin:.4f}")
        return seq[len(GEN_PROMPT):]

    greedy, penalized = greedy_continuation(1.0), greedy_continuation(GEN_PENALTY)
    with open(os.path.join(out, "gpt2_tiny_generate.txt"), "w") as f:
        f.write(f"prompt {len(GEN_PROMPT)} " + " ".join(map(str, GEN_PROMPT)) + "\n")
        f.write(f"greedy {len(greedy)} " + " ".join(map(str, greedy)) + "\n")
        f.write(f"penalized {GEN_PENALTY!r} {len(penalized)} " + " ".join(map(str, penalized)) + "\n")
    print(f"max |logit| {logits.abs().max().item():.4f}")


if __name__ == "__main__":
    main()
