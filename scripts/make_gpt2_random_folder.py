#!/usr/bin/python3
"""Writes a GPT-2 folder with random weights, as `lazygrad generate --model DIR` reads one, to time
the path users take (docs/benchmarks.md, "GPT-2 through the CLI") without downloading a checkpoint:

    /usr/bin/python3 scripts/make_gpt2_random_folder.py DIR TOKENIZER_DIR [--size gpt2|medium]

  DIR/config.json          model_type gpt2 and the size's n_layer, n_head, n_embd (vocab 50257,
                           1024 positions)
  DIR/model.safetensors    float32 weights under Hugging Face's names (Conv1D weights as [in, out]),
                           normal with HF's std 0.02, seeded
  DIR/vocab.json, DIR/merges.txt   GPT-2's tokenizer: encoder.json and vocab.bpe from TOKENIZER_DIR
                           (scripts/fetch_gpt2_tokenizer.sh prints where it put them)
"""
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_lib import safetensors_bytes  # noqa: E402

SIZES = {"gpt2": (12, 12, 768), "medium": (24, 16, 1024)}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    size = sys.argv[sys.argv.index("--size") + 1] if "--size" in sys.argv else "gpt2"
    if len(args) < 2 or size not in SIZES:
        sys.exit(__doc__)
    out, tok = args[0], args[1]
    n_layer, n_head, n_embd = SIZES[size]
    vocab, positions = 50257, 1024
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, std=0.02):
        return torch.randn(*shape, generator=gen) * std

    w = {"wte.weight": randn(vocab, n_embd), "wpe.weight": randn(positions, n_embd, std=0.01)}
    for i in range(n_layer):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = torch.ones(n_embd)
            w[p + ln + ".bias"] = torch.zeros(n_embd)
        for name, nx, nf in (("attn.c_attn", n_embd, 3 * n_embd), ("attn.c_proj", n_embd, n_embd),
                             ("mlp.c_fc", n_embd, 4 * n_embd), ("mlp.c_proj", 4 * n_embd, n_embd)):
            w[p + name + ".weight"] = randn(nx, nf)
            w[p + name + ".bias"] = torch.zeros(nf)
    w["ln_f.weight"] = torch.ones(n_embd)
    w["ln_f.bias"] = torch.zeros(n_embd)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(w))
    config = {"model_type": "gpt2", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd,
              "vocab_size": vocab, "n_positions": positions, "n_ctx": positions, "layer_norm_epsilon": 1e-5}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copyfile(os.path.join(tok, "encoder.json"), os.path.join(out, "vocab.json"))
    shutil.copyfile(os.path.join(tok, "vocab.bpe"), os.path.join(out, "merges.txt"))
    print(out)


if __name__ == "__main__":
    main()
