#!/usr/bin/python3
"""Writes the LLaMA parity fixtures for tests/test_llama.cpp:

    /usr/bin/python3 scripts/make_llama_fixture.py [OUTDIR]      # OUTDIR: tests/fixtures

Three tiny models with seeded random weights, one folder each, laid out as a Hugging Face model
folder is (config.json and safetensors under HF's tensor names and layouts, float32):

  llama_tiny_llama3/   LLaMA-3 style: grouped-query attention (4 query heads, 2 key/value heads),
                       rope_theta 500000 with "llama3" rope scaling (factor 8, low/high_freq_factor
                       1/4, original_max_position_embeddings 256: with head_dim 8 its four frequencies
                       fall in all three of the scaling's bands), an untied lm_head, eos_token_id a
                       list (as LLaMA 3.1's). Sharded: model-00001-of-00002.safetensors,
                       model-00002-of-00002.safetensors and model.safetensors.index.json.
  llama_tiny_llama2/   LLaMA-2 / TinyLlama style: multi-head attention, rope_theta 10000 with
                       "linear" rope scaling (factor 2, the older {"type": ...} spelling), the
                       lm_head tied to embed_tokens (no lm_head.weight in the file). model.safetensors.
  llama_tiny_mistral/  Mistral style: model_type "mistral", one key/value head, head_dim 16 given
                       explicitly (not hidden_size / heads, as Mistral-Nemo's), sliding_window 4 (a
                       query sees only itself and the 3 positions before it: it matters in a
                       12-token sequence). model.safetensors.

and in each folder:

  logits.txt           the logits of a fixed [2, 12] token batch, as text:
                           tokens <B> <T> <B*T ints>
                           full <B> <T> <vocab> <B*T*vocab floats>      one forward of all positions
                           cached <N> <N chunk lengths> <B> <T> <vocab> <B*T*vocab floats>
                                    (llama3 and mistral only) the same positions run through the KV
                                    cache (HF's DynamicCache) in N forwards of those lengths: a
                                    prompt, a chunk after it, then one position at a time
  generate.txt         (llama_tiny_llama3 only) the greedy continuation (argmax of the last position's logits of a full
                       forward, the first on a tie) of a fixed prompt:
                           prompt <P> <P ints>
                           greedy <N> <N ints>

The reference below is Hugging Face's LlamaForCausalLM / MistralForCausalLM forward (transformers
4.45 and later: modeling_llama.py, modeling_mistral.py, modeling_rope_utils.py, and the causal and
sliding-window masks of masking_utils.py) written out in plain torch, so that the transformers package is not needed; each function names the HF function
it mirrors. The safetensors files are written with a few lines of struct/json (Debian ships no
`safetensors` package). Seeded: a rerun writes identical files.
"""

import json
import math
import os
import sys

import torch

from safetensors_lib import safetensors_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "fixtures")

B, T = 2, 12
CACHED_CHUNKS, CACHED_MODELS = [5, 3, 1, 1, 1, 1], ("llama3", "mistral")
GEN_PROMPT, GEN_TOKENS, GEN_MODELS = [3, 14, 15, 92, 65], 6, ("llama3",)

# config.json as HF writes it (fields this reference does not use, like initializer_range, are there
# because real files have them).
CONFIGS = {
    "llama3": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 2048, "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 256},
        "vocab_size": 128, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": [2, 3],
        "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False, "initializer_range": 0.02,
        "pretraining_tp": 1, "torch_dtype": "float32", "use_cache": True,
    },
    "llama2": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "max_position_embeddings": 64, "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
        "vocab_size": 96, "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
        "pad_token_id": None, "initializer_range": 0.02, "torch_dtype": "float32", "use_cache": True,
    },
    "mistral": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_act": "silu",
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 4, "vocab_size": 96, "tie_word_embeddings": False,
        "bos_token_id": 1, "eos_token_id": 2, "initializer_range": 0.02, "torch_dtype": "float32",
    },
}


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def make_weights(c, gen):
    # Larger than HF's init (std 0.02) so that every part of the model moves the logits.
    def randn(*shape, std=0.2):
        return torch.randn(*shape, generator=gen) * std

    hidden, inter, d = c["hidden_size"], c["intermediate_size"], head_dim(c)
    heads, kv_heads = c["num_attention_heads"], c["num_key_value_heads"]
    w = {"model.embed_tokens.weight": randn(c["vocab_size"], hidden, std=0.5)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1.0 + randn(hidden, std=0.1)
        # nn.Linear layout: [out_features, in_features].
        w[p + "self_attn.q_proj.weight"] = randn(heads * d, hidden, std=0.3)
        w[p + "self_attn.k_proj.weight"] = randn(kv_heads * d, hidden, std=0.3)
        w[p + "self_attn.v_proj.weight"] = randn(kv_heads * d, hidden)
        w[p + "self_attn.o_proj.weight"] = randn(hidden, heads * d)
        w[p + "post_attention_layernorm.weight"] = 1.0 + randn(hidden, std=0.1)
        w[p + "mlp.gate_proj.weight"] = randn(inter, hidden)
        w[p + "mlp.up_proj.weight"] = randn(inter, hidden)
        w[p + "mlp.down_proj.weight"] = randn(hidden, inter)
    w["model.norm.weight"] = 1.0 + randn(hidden, std=0.1)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = randn(c["vocab_size"], hidden)
    return w


# ---- rotary embeddings: modeling_rope_utils.py ----

def rope_inv_freq(c):  # ROPE_INIT_FUNCTIONS[rope_type](config)
    dim, base = head_dim(c), c["rope_theta"]
    # _compute_default_rope_parameters
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    scaling = c.get("rope_scaling")
    kind = None if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return inv_freq
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / scaling["factor"]
    if kind == "llama3":  # _compute_llama3_parameters
        factor = scaling["factor"]
        low_freq_factor, high_freq_factor = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_context_len = scaling["original_max_position_embeddings"]
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    raise ValueError(kind)


def rotary_cos_sin(inv_freq, position_ids):  # LlamaRotaryEmbedding.forward (attention_scaling 1)
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):  # modeling_llama.rotate_half
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):  # modeling_llama.apply_rotary_pos_emb (unsqueeze_dim 1)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


# ---- the layers: modeling_llama.py ----

def rms_norm(x, weight, eps):  # LlamaRMSNorm.forward
    input_dtype = x.dtype
    x = x.to(torch.float32)
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x.to(input_dtype)


def linear(x, weight):  # nn.Linear(bias=False)
    return torch.nn.functional.linear(x, weight)


def repeat_kv(hidden_states, n_rep):  # modeling_llama.repeat_kv
    batch, num_key_value_heads, slen, hd = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, hd)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, hd)


def attention_mask(c, query_pos, key_len):
    # masking_utils.causal_mask_function / sliding_window_causal_mask_function as an additive mask
    # (the dtype's minimum where masked), as eager attention receives it.
    q = query_pos[:, None]
    k = torch.arange(key_len)[None, :]
    allowed = k <= q
    if c.get("sliding_window") is not None:
        allowed &= k > q - c["sliding_window"]
    zero = torch.zeros((), dtype=torch.float32)
    return torch.where(allowed, zero, torch.tensor(torch.finfo(torch.float32).min))[None, None]


def self_attention(c, w, p, x, cos, sin, mask, cache):  # LlamaAttention.forward + eager_attention_forward
    bsz, seq, _ = x.shape
    d, heads, kv_heads = head_dim(c), c["num_attention_heads"], c["num_key_value_heads"]
    q = linear(x, w[p + "self_attn.q_proj.weight"]).view(bsz, seq, heads, d).transpose(1, 2)
    k = linear(x, w[p + "self_attn.k_proj.weight"]).view(bsz, seq, kv_heads, d).transpose(1, 2)
    v = linear(x, w[p + "self_attn.v_proj.weight"]).view(bsz, seq, kv_heads, d).transpose(1, 2)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    if cache is not None:  # DynamicCache.update: concatenate along the sequence
        if p in cache:
            k = torch.cat([cache[p][0], k], dim=-2)
            v = torch.cat([cache[p][1], v], dim=-2)
        cache[p] = (k, v)
    k, v = repeat_kv(k, heads // kv_heads), repeat_kv(v, heads // kv_heads)
    scores = torch.matmul(q, k.transpose(2, 3)) * d ** -0.5 + mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(bsz, seq, heads * d)
    return linear(out, w[p + "self_attn.o_proj.weight"])


def mlp(w, p, x):  # LlamaMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)), act "silu"
    gate = torch.nn.functional.silu(linear(x, w[p + "mlp.gate_proj.weight"]))
    return linear(gate * linear(x, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])


def llama_logits(c, w, tokens, start_pos=0, cache=None):  # LlamaForCausalLM.forward / LlamaModel.forward
    bsz, seq = tokens.shape
    eps = c["rms_norm_eps"]
    positions = torch.arange(start_pos, start_pos + seq)
    cos, sin = rotary_cos_sin(rope_inv_freq(c), positions[None].expand(bsz, -1))
    mask = attention_mask(c, positions, start_pos + seq)
    x = w["model.embed_tokens.weight"][tokens]
    for i in range(c["num_hidden_layers"]):  # LlamaDecoderLayer.forward
        p = f"model.layers.{i}."
        x = x + self_attention(c, w, p, rms_norm(x, w[p + "input_layernorm.weight"], eps), cos, sin, mask, cache)
        x = x + mlp(w, p, rms_norm(x, w[p + "post_attention_layernorm.weight"], eps))
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    return linear(x, head)


# ---- files ----

def write_checkpoint(folder, w, shards):
    if shards == 1:
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(w))
        return
    # As PreTrainedModel.save_pretrained shards: consecutive tensors per file, and an index naming
    # each tensor's file; metadata.total_size is the tensors' bytes.
    names = sorted(w)
    per_shard = -(-len(names) // shards)
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: w[n] for n in names[s * per_shard:(s + 1) * per_shard]}
        with open(os.path.join(folder, file), "wb") as f:
            f.write(safetensors_bytes(part))
        weight_map.update({n: file for n in part})
    total = sum(t.numel() * 4 for t in w.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")


def floats(t):
    return " ".join(f"{v:.9g}" for v in t.flatten().tolist())


def make(out, name, c, seed):
    folder = os.path.join(out, f"llama_tiny_{name}")
    os.makedirs(folder, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    w = make_weights(c, gen)
    vocab = c["vocab_size"]
    tokens = torch.randint(0, vocab, (B, T), generator=gen)
    with torch.no_grad():
        full = llama_logits(c, w, tokens)
        cache, steps, start = {}, [], 0
        for n in CACHED_CHUNKS:
            steps.append(llama_logits(c, w, tokens[:, start:start + n], start, cache))
            start += n
        cached = torch.cat(steps, dim=1)
        # How much each feature moves the logits, so the fixture is seen to test it.
        plain = dict(c, rope_scaling=None, sliding_window=None)
        moved = (llama_logits(plain, w, tokens) - full).abs().max() / full.abs().max()

    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    write_checkpoint(folder, w, 2 if name == "llama3" else 1)
    with open(os.path.join(folder, "logits.txt"), "w") as f:
        f.write(f"tokens {B} {T} " + " ".join(str(int(t)) for t in tokens.flatten()) + "\n")
        f.write(f"full {B} {T} {vocab} {floats(full)}\n")
        if name in CACHED_MODELS:
            chunks = " ".join(map(str, CACHED_CHUNKS))
            f.write(f"cached {len(CACHED_CHUNKS)} {chunks} {B} {T} {vocab} {floats(cached)}\n")

    print(f"{name}: max |logit| {full.abs().max().item():.4f}, cached vs full "
          f"{((cached - full).abs().max() / full.abs().max()).item():.2g}, without rope scaling / sliding "
          f"window the logits move by {moved.item():.3g} of max |logit|")
    if name not in GEN_MODELS:
        return
    seq, margin = list(GEN_PROMPT), math.inf
    with torch.no_grad():
        for _ in range(GEN_TOKENS):
            last = llama_logits(c, w, torch.tensor([seq]))[0, -1]
            top2 = last.topk(2).values
            margin = min(margin, float(top2[0] - top2[1]))
            seq.append(int(last.argmax()))
    greedy = seq[len(GEN_PROMPT):]
    with open(os.path.join(folder, "generate.txt"), "w") as f:
        f.write(f"prompt {len(GEN_PROMPT)} " + " ".join(map(str, GEN_PROMPT)) + "\n")
        f.write(f"greedy {len(greedy)} " + " ".join(map(str, greedy)) + "\n")
    print(f"{name}: greedy continuation {greedy}, smallest top-2 logit margin {margin:.4f}")


def main():
    assert sum(CACHED_CHUNKS) == T
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    for seed, (name, c) in enumerate(CONFIGS.items()):
        make(out, name, c, 20240701 + seed)


if __name__ == "__main__":
    main()
