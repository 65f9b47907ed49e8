#!/usr/bin/python3
"""Writes the Stable Diffusion parity fixture for tests/test_stable_diffusion.cpp:

    /usr/bin/python3 scripts/make_sd_fixture.py [OUTDIR]      # OUTDIR: tests/fixtures/sd_tiny

  model.safetensors       a tiny Stable Diffusion v1 with seeded random weights under the original
                          single-file checkpoint's names (model.diffusion_model.*, first_stage_model.*,
                          cond_stage_model.transformer.text_model.*), float32, with some of the
                          tensors a released file also holds and the model does not use (the VAE's
                          encoder and quant_conv, CLIP's int64 position_ids, alphas_cumprod, an EMA
                          entry).
  model_fp16.safetensors  the same weights as float16 (every weight is rounded to a float16 value
                          first, so both files hold the same numbers and share the expected outputs).
  expected.txt            inputs and the reference's outputs, one tensor a line:
                              <name> <dtype> <ndim> <dims...> <values...>
                          text_tokens -> text_out          the text encoder's last hidden state
                          unet_x, unet_t, unet_context -> unet_out   one noise prediction
                          vae_latents -> vae_out           the decoder's image (latents / scale first)
                          ddim_noise, ddim_tokens, ddim_empty_tokens -> ddim_latents, ddim_image
                                                           3 DDIM steps with guidance 7.5, then decoded;
                                                           the tokens of DDIM_PROMPT and of "" by the
                                                           reference tokenizer
  vocab.json, merges.txt  a small CLIP vocabulary in Hugging Face's CLIPTokenizer files: the 256 byte
                          tokens, the same with "</w>", 300 merges learnt here from a short text, and
                          <|startoftext|>, <|endoftext|>, in the order OpenAI's tokenizer gives ids
  bpe_simple_vocab.txt.gz the same merges as OpenAI's single BPE file (a header line, then the merges)
  tokenizer_encodings.json  [{"prompt": ..., "ids": [77 ids]}, ...] as the reference tokenizer below
                          encodes them (lower-cased, CLIP's pre-tokenizer, BPE with "</w>", start and
                          end tokens, truncated to 77, padded with the end token)

The sizes (what each shape says; the loader infers them): text encoder vocab 695 (the small
vocabulary's, so that `lazygrad generate-image` runs on the fixture with it), width 16, 2 layers, MLP
64, 77 positions; UNet model_channels 8, channel_mult (1, 2), 1 ResBlock per level, attention at level 0
and in the middle, time embedding 32, context 16; VAE decoder ch 8, ch_mult (1, 2), 1 ResBlock (+1) per
level. What shapes do not say, the test gives: 2 heads in the text encoder and the UNet, GroupNorm with
4 groups (v1.x: 12 and 8 heads, 32 groups).

The reference below is written from the papers' architecture (CLIP's text transformer, the LDM
repository's UNet with spatial transformers, the KL autoencoder's decoder, DDIM with classifier-free
guidance) in plain torch; nothing is imported from diffusers or transformers. Seeded: a rerun writes
identical files.
"""

import gzip
import json
import math
import os
import struct
import sys
import unicodedata

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "fixtures", "sd_tiny")

TEXT = dict(vocab=None, width=16, layers=2, heads=2, mlp=64, positions=77)
UNET = dict(in_ch=4, mc=8, mult=(1, 2), res=1, attn=(True, False), heads=2, depth=1, ctx=16, temb=32, out_ch=4)
VAE = dict(ch=8, mult=(1, 2), res=1, z=4, embed=4, out_ch=3)
GROUPS = 4
SCALE_FACTOR = 0.18215
LATENT = 8  # latents 8x8, images 16x16
DDIM_STEPS, GUIDANCE = 3, 7.5
DDIM_PROMPT = "a photograph of an astronaut riding a horse"


# ------------------------------------------------------------------------------------ weights

class Weights:
    def __init__(self, gen):
        self.gen, self.w = gen, {}

    def randn(self, name, *shape, std):
        # float16-representable, so that the float16 file holds the same numbers.
        self.w[name] = (torch.randn(*shape, generator=self.gen) * std).half().float()

    def linear(self, name, n_in, n_out, bias=True):
        self.randn(name + ".weight", n_out, n_in, std=1.0 / math.sqrt(n_in))
        if bias:
            self.randn(name + ".bias", n_out, std=0.1)

    def conv(self, name, c_in, c_out, k):
        self.randn(name + ".weight", c_out, c_in, k, k, std=1.0 / math.sqrt(c_in * k * k))
        self.randn(name + ".bias", c_out, std=0.1)

    def norm(self, name, n):
        self.w[name + ".weight"] = (1.0 + torch.randn(n, generator=self.gen) * 0.1).half().float()
        self.randn(name + ".bias", n, std=0.1)


def text_weights(W):
    p, c = "cond_stage_model.transformer.text_model.", TEXT
    W.randn(p + "embeddings.token_embedding.weight", c["vocab"], c["width"], std=0.5)
    W.randn(p + "embeddings.position_embedding.weight", c["positions"], c["width"], std=0.3)
    for i in range(c["layers"]):
        q = f"{p}encoder.layers.{i}."
        W.norm(q + "layer_norm1", c["width"])
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            W.linear(q + "self_attn." + proj, c["width"], c["width"])
        W.norm(q + "layer_norm2", c["width"])
        W.linear(q + "mlp.fc1", c["width"], c["mlp"])
        W.linear(q + "mlp.fc2", c["mlp"], c["width"])
    W.norm(p + "final_layer_norm", c["width"])


def resblock_weights(W, p, c_in, c_out, temb):
    W.norm(p + "in_layers.0", c_in)
    W.conv(p + "in_layers.2", c_in, c_out, 3)
    W.linear(p + "emb_layers.1", temb, c_out)
    W.norm(p + "out_layers.0", c_out)
    W.conv(p + "out_layers.3", c_out, c_out, 3)
    if c_in != c_out:
        W.conv(p + "skip_connection", c_in, c_out, 1)


def transformer_weights(W, p, ch, ctx, depth):
    W.norm(p + "norm", ch)
    W.conv(p + "proj_in", ch, ch, 1)
    for d in range(depth):
        b = f"{p}transformer_blocks.{d}."
        for attn, kv_dim in (("attn1", ch), ("attn2", ctx)):
            W.linear(b + attn + ".to_q", ch, ch, bias=False)
            W.linear(b + attn + ".to_k", kv_dim, ch, bias=False)
            W.linear(b + attn + ".to_v", kv_dim, ch, bias=False)
            W.linear(b + attn + ".to_out.0", ch, ch)
        W.linear(b + "ff.net.0.proj", ch, 8 * ch)
        W.linear(b + "ff.net.2", 4 * ch, ch)
        for n in ("norm1", "norm2", "norm3"):
            W.norm(b + n, ch)
    W.conv(p + "proj_out", ch, ch, 1)


def unet_layout():
    """The blocks of the UNet as lists of (kind, args), with the names they take: the LDM
    repository's construction of input_blocks, middle_block and output_blocks."""
    c = UNET
    inputs, chans, ch = [[("conv_in", c["in_ch"], c["mc"])]], [c["mc"]], c["mc"]
    for level, mult in enumerate(c["mult"]):
        for _ in range(c["res"]):
            block = [("res", ch, c["mc"] * mult)]
            ch = c["mc"] * mult
            if c["attn"][level]:
                block.append(("attn", ch))
            inputs.append(block)
            chans.append(ch)
        if level != len(c["mult"]) - 1:
            inputs.append([("down", ch)])
            chans.append(ch)
    middle = [("res", ch, ch), ("attn", ch), ("res", ch, ch)]
    outputs = []
    for level, mult in list(enumerate(c["mult"]))[::-1]:
        for i in range(c["res"] + 1):
            block = [("res", ch + chans.pop(), c["mc"] * mult)]
            ch = c["mc"] * mult
            if c["attn"][level]:
                block.append(("attn", ch))
            if level and i == c["res"]:
                block.append(("up", ch))
            outputs.append(block)
    return inputs, middle, outputs, ch


def unet_layer_weights(W, p, layer):
    kind = layer[0]
    if kind == "conv_in":
        W.conv(p, layer[1], layer[2], 3)
    elif kind == "res":
        resblock_weights(W, p + ".", layer[1], layer[2], UNET["temb"])
    elif kind == "attn":
        transformer_weights(W, p + ".", layer[1], UNET["ctx"], UNET["depth"])
    elif kind == "down":
        W.conv(p + ".op", layer[1], layer[1], 3)
    elif kind == "up":
        W.conv(p + ".conv", layer[1], layer[1], 3)


def unet_weights(W):
    p, c = "model.diffusion_model.", UNET
    W.linear(p + "time_embed.0", c["mc"], c["temb"])
    W.linear(p + "time_embed.2", c["temb"], c["temb"])
    inputs, middle, outputs, ch = unet_layout()
    for k, block in enumerate(inputs):
        for j, layer in enumerate(block):
            unet_layer_weights(W, f"{p}input_blocks.{k}.{j}", layer)
    for j, layer in enumerate(middle):
        unet_layer_weights(W, f"{p}middle_block.{j}", layer)
    for k, block in enumerate(outputs):
        for j, layer in enumerate(block):
            unet_layer_weights(W, f"{p}output_blocks.{k}.{j}", layer)
    W.norm(p + "out.0", ch)
    W.conv(p + "out.2", ch, c["out_ch"], 3)


def vae_resnet_weights(W, p, c_in, c_out):
    W.norm(p + "norm1", c_in)
    W.conv(p + "conv1", c_in, c_out, 3)
    W.norm(p + "norm2", c_out)
    W.conv(p + "conv2", c_out, c_out, 3)
    if c_in != c_out:
        W.conv(p + "nin_shortcut", c_in, c_out, 1)


def vae_weights(W):
    p, c = "first_stage_model.", VAE
    W.conv(p + "post_quant_conv", c["embed"], c["z"], 1)
    d = p + "decoder."
    ch = c["ch"] * c["mult"][-1]
    W.conv(d + "conv_in", c["z"], ch, 3)
    vae_resnet_weights(W, d + "mid.block_1.", ch, ch)
    W.norm(d + "mid.attn_1.norm", ch)
    for n in ("q", "k", "v", "proj_out"):
        W.conv(d + "mid.attn_1." + n, ch, ch, 1)
    vae_resnet_weights(W, d + "mid.block_2.", ch, ch)
    for level in reversed(range(len(c["mult"]))):
        out = c["ch"] * c["mult"][level]
        for j in range(c["res"] + 1):
            vae_resnet_weights(W, f"{d}up.{level}.block.{j}.", ch, out)
            ch = out
        if level:
            W.conv(f"{d}up.{level}.upsample.conv", ch, ch, 3)
    W.norm(d + "norm_out", ch)
    W.conv(d + "conv_out", ch, c["out_ch"], 3)


def unused_weights(W):
    # What released files hold beside the model's tensors: the loader must pass over them.
    W.conv("first_stage_model.encoder.conv_in", 3, VAE["ch"], 3)
    W.conv("first_stage_model.quant_conv", 2 * VAE["z"], 2 * VAE["embed"], 1)
    W.w["model_ema.decay"] = torch.tensor(0.9999)
    W.w["alphas_cumprod"] = alphas_cumprod().float()
    W.w["cond_stage_model.transformer.text_model.embeddings.position_ids"] = torch.arange(77).reshape(1, 77)


# ------------------------------------------------------------------------------------ the reference

def text_encoder(w, tokens):
    """CLIP's text transformer: token + position embeddings, pre-LayerNorm blocks with causal
    multi-head self-attention and a quick-GELU MLP, a final LayerNorm."""
    p, c = "cond_stage_model.transformer.text_model.", TEXT
    B, T = tokens.shape
    x = w[p + "embeddings.token_embedding.weight"][tokens] + w[p + "embeddings.position_embedding.weight"][:T]
    causal = torch.full((T, T), float("-inf")).triu(1)
    heads, d = c["heads"], c["width"] // c["heads"]

    def lin(name, h):
        return h @ w[name + ".weight"].t() + w[name + ".bias"]

    for i in range(c["layers"]):
        q = f"{p}encoder.layers.{i}."
        h = F.layer_norm(x, (c["width"],), w[q + "layer_norm1.weight"], w[q + "layer_norm1.bias"], 1e-5)
        qs, ks, vs = (lin(q + "self_attn." + n, h).view(B, T, heads, d).transpose(1, 2)
                      for n in ("q_proj", "k_proj", "v_proj"))
        att = torch.softmax(qs @ ks.transpose(-1, -2) / math.sqrt(d) + causal, dim=-1) @ vs
        x = x + lin(q + "self_attn.out_proj", att.transpose(1, 2).reshape(B, T, c["width"]))
        h = F.layer_norm(x, (c["width"],), w[q + "layer_norm2.weight"], w[q + "layer_norm2.bias"], 1e-5)
        h = lin(q + "mlp.fc1", h)
        x = x + lin(q + "mlp.fc2", h * torch.sigmoid(1.702 * h))
    return F.layer_norm(x, (c["width"],), w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"], 1e-5)


def group_norm(w, name, x, eps):
    return F.group_norm(x, GROUPS, w[name + ".weight"], w[name + ".bias"], eps)


def conv(w, name, x, stride=1):
    k = w[name + ".weight"].shape[-1]
    return F.conv2d(x, w[name + ".weight"], w[name + ".bias"], stride=stride, padding=k // 2)


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def resblock(w, p, x, emb):
    h = conv(w, p + "in_layers.2", F.silu(group_norm(w, p + "in_layers.0", x, 1e-5)))
    h = h + (F.silu(emb) @ w[p + "emb_layers.1.weight"].t() + w[p + "emb_layers.1.bias"])[:, :, None, None]
    h = conv(w, p + "out_layers.3", F.silu(group_norm(w, p + "out_layers.0", h, 1e-5)))
    skip = conv(w, p + "skip_connection", x) if p + "skip_connection.weight" in w else x
    return skip + h


def attention(w, p, x, context):
    B, N, C = x.shape
    heads = UNET["heads"]
    d = C // heads
    q = (x @ w[p + "to_q.weight"].t()).view(B, N, heads, d).transpose(1, 2)
    k = (context @ w[p + "to_k.weight"].t()).view(B, -1, heads, d).transpose(1, 2)
    v = (context @ w[p + "to_v.weight"].t()).view(B, -1, heads, d).transpose(1, 2)
    att = torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5, dim=-1) @ v
    return att.transpose(1, 2).reshape(B, N, C) @ w[p + "to_out.0.weight"].t() + w[p + "to_out.0.bias"]


def spatial_transformer(w, p, x, context):
    B, C, H, W_ = x.shape
    h = conv(w, p + "proj_in", group_norm(w, p + "norm", x, 1e-6))
    h = h.reshape(B, C, H * W_).transpose(1, 2)

    def ln(name, t):
        return F.layer_norm(t, (C,), w[name + ".weight"], w[name + ".bias"], 1e-5)

    for d in range(UNET["depth"]):
        b = f"{p}transformer_blocks.{d}."
        n1 = ln(b + "norm1", h)
        h = h + attention(w, b + "attn1.", n1, n1)
        h = h + attention(w, b + "attn2.", ln(b + "norm2", h), context)
        proj = ln(b + "norm3", h) @ w[b + "ff.net.0.proj.weight"].t() + w[b + "ff.net.0.proj.bias"]
        a, gate = proj.chunk(2, dim=-1)
        h = h + (a * F.gelu(gate)) @ w[b + "ff.net.2.weight"].t() + w[b + "ff.net.2.bias"]
    return x + conv(w, p + "proj_out", h.transpose(1, 2).reshape(B, C, H, W_))


def unet_layer(w, p, layer, h, emb, context):
    kind = layer[0]
    if kind == "conv_in":
        return conv(w, p, h)
    if kind == "res":
        return resblock(w, p + ".", h, emb)
    if kind == "attn":
        return spatial_transformer(w, p + ".", h, context)
    if kind == "down":
        return conv(w, p + ".op", h, stride=2)
    return conv(w, p + ".conv", F.interpolate(h, scale_factor=2.0, mode="nearest"))


def unet(w, x, t, context):
    p = "model.diffusion_model."
    emb = timestep_embedding(t.expand(x.shape[0]), UNET["mc"])
    emb = F.silu(emb @ w[p + "time_embed.0.weight"].t() + w[p + "time_embed.0.bias"])
    emb = emb @ w[p + "time_embed.2.weight"].t() + w[p + "time_embed.2.bias"]
    inputs, middle, outputs, _ = unet_layout()
    h, skips = x, []
    for k, block in enumerate(inputs):
        for j, layer in enumerate(block):
            h = unet_layer(w, f"{p}input_blocks.{k}.{j}", layer, h, emb, context)
        skips.append(h)
    for j, layer in enumerate(middle):
        h = unet_layer(w, f"{p}middle_block.{j}", layer, h, emb, context)
    for k, block in enumerate(outputs):
        h = torch.cat([h, skips.pop()], dim=1)
        for j, layer in enumerate(block):
            h = unet_layer(w, f"{p}output_blocks.{k}.{j}", layer, h, emb, context)
    return conv(w, p + "out.2", F.silu(group_norm(w, p + "out.0", h, 1e-5)))


def vae_resnet(w, p, x):
    h = conv(w, p + "conv1", F.silu(group_norm(w, p + "norm1", x, 1e-6)))
    h = conv(w, p + "conv2", F.silu(group_norm(w, p + "norm2", h, 1e-6)))
    skip = conv(w, p + "nin_shortcut", x) if p + "nin_shortcut.weight" in w else x
    return skip + h


def vae_attention(w, p, x):
    B, C, H, W_ = x.shape
    h = group_norm(w, p + "norm", x, 1e-6)
    q, k, v = (conv(w, p + n, h).reshape(B, C, H * W_) for n in ("q", "k", "v"))
    att = torch.softmax(q.transpose(1, 2) @ k * C ** -0.5, dim=-1)  # [B, HW (query), HW (key)]
    out = (v @ att.transpose(1, 2)).reshape(B, C, H, W_)
    return x + conv(w, p + "proj_out", out)


def vae_decode(w, z):
    p = "first_stage_model."
    d = p + "decoder."
    h = conv(w, d + "conv_in", conv(w, p + "post_quant_conv", z / SCALE_FACTOR))
    h = vae_resnet(w, d + "mid.block_2.", vae_attention(w, d + "mid.attn_1.", vae_resnet(w, d + "mid.block_1.", h)))
    for level in reversed(range(len(VAE["mult"]))):
        for j in range(VAE["res"] + 1):
            h = vae_resnet(w, f"{d}up.{level}.block.{j}.", h)
        if level:
            h = conv(w, f"{d}up.{level}.upsample.conv", F.interpolate(h, scale_factor=2.0, mode="nearest"))
    return conv(w, d + "conv_out", F.silu(group_norm(w, d + "norm_out", h, 1e-6)))


def alphas_cumprod():
    betas = torch.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000, dtype=torch.float64) ** 2
    return torch.cumprod(1.0 - betas, dim=0)


def ddim_sample(w, noise, cond, uncond, steps, scale):
    """DDIM, eta 0, over steps evenly spaced timesteps i * (1000 // steps) + 1, with
    classifier-free guidance from one UNet call on the batch [uncond, cond]."""
    abar = alphas_cumprod().tolist()
    ts = [i * (1000 // steps) + 1 for i in range(steps)]
    x = noise
    for i in reversed(range(steps)):
        a_t, a_prev = abar[ts[i]], abar[ts[i - 1]] if i > 0 else abar[0]
        e_u, e_c = unet(w, torch.cat([x, x]), torch.tensor([float(ts[i])]), torch.cat([uncond, cond])).chunk(2)
        e = e_u + (e_c - e_u) * scale
        x0 = (x - e * math.sqrt(1 - a_t)) * (1 / math.sqrt(a_t))
        x = x0 * math.sqrt(a_prev) + e * math.sqrt(1 - a_prev)
    return x


# ------------------------------------------------------------------------------------ the tokenizer

def bytes_to_unicode():
    """GPT-2's and CLIP's table: printable bytes stand for themselves, the others for U+0100 on."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


SPECIALS = ("<|startoftext|>", "<|endoftext|>")
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def is_letter(ch):
    return unicodedata.category(ch).startswith("L")


def is_number(ch):
    return unicodedata.category(ch).startswith("N")


def clip_words(text):
    """CLIP's pre-tokenizer regex, by hand:
    <|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+
    (the first alternative that matches at each position; whitespace between matches is dropped)."""
    words, i = [], 0
    while i < len(text):
        for fixed in SPECIALS + CONTRACTIONS:
            if text.startswith(fixed, i):
                words.append(fixed)
                i += len(fixed)
                break
        else:
            ch, j = text[i], i + 1
            if is_letter(ch):
                while j < len(text) and is_letter(text[j]):
                    j += 1
            elif is_number(ch):
                pass
            elif ch.isspace():
                i += 1
                continue
            else:
                while j < len(text) and not (text[j].isspace() or is_letter(text[j]) or is_number(text[j])):
                    j += 1
            words.append(text[i:j])
            i = j
    return words


def word_symbols(word, b2u):
    chars = [b2u[b] for b in word.encode("utf-8")]
    return chars[:-1] + [chars[-1] + "</w>"]


def bpe(symbols, ranks):
    while len(symbols) > 1:
        pairs = [(ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(symbols, symbols[1:]))]
        best = min(pairs)
        if best[0] == math.inf:
            break
        a, b = symbols[best[1]], symbols[best[1] + 1]
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                merged.append(a + b)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols


def encode(text, vocab, ranks, b2u, length=77):
    text = " ".join(text.split()).lower()  # whitespace collapsed and stripped, then lower-cased
    ids = []
    for word in clip_words(text):
        if word in SPECIALS:
            ids.append(vocab[word])
        else:
            ids.extend(vocab[s] for s in bpe(word_symbols(word, b2u), ranks))
    ids = [vocab["<|startoftext|>"]] + ids[:length - 2] + [vocab["<|endoftext|>"]]
    return ids + [vocab["<|endoftext|>"]] * (length - len(ids))


CORPUS = """a photograph of an astronaut riding a horse on the moon, high resolution, detailed
an oil painting of a cat sitting in a garden with flowers, by a famous painter
the quick brown fox jumps over the lazy dog while the rain falls on the city at night
a beautiful landscape with mountains and a lake at sunset, trending on artstation
portrait of a woman wearing a red dress, studio lighting, sharp focus, photorealistic"""

PROMPTS = [
    "a photograph of an astronaut riding a horse",
    "An OIL Painting of a Cat, by a famous painter!!",
    "",
    "   spaces\tand\nnew lines   ",
    "it's the dog's toy; they'll say we've I'm you'd THEY'RE",
    "numbers 2024 and 3.14159 and x2",
    "café naïve Ünïcödé straße ΑΒΓ κόσμος привет",
    "emoji 🐈 and symbols ©®™ --> <<>> ...",
    "<|startoftext|>inside<|endoftext|> text!<|endoftext|>",
    "mountains " * 50,
    "trending on artstation, highly detailed, sharp focus, 8k",
]


def learn_merges(corpus, count, b2u):
    """A few BPE merges learnt the usual way (the most frequent adjacent pair of symbols, over the
    words with "</w>" on their last symbol), only to have a vocabulary in the real format."""
    words = {}
    for word in clip_words(" ".join(corpus.split()).lower()):
        key = tuple(word_symbols(word, b2u))
        words[key] = words.get(key, 0) + 1
    merges = []
    for _ in range(count):
        pairs = {}
        for symbols, n in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] = pairs.get(pair, 0) + n
        if not pairs:
            break
        best = max(sorted(pairs), key=lambda p: pairs[p])
        merges.append(best)
        words = {tuple(bpe(list(s), {best: 0})): n for s, n in words.items()}
    return merges


def write_tokenizer(out):
    """Writes the vocabulary files and the encodings; returns encode(text) for that vocabulary."""
    b2u = bytes_to_unicode()
    merges = learn_merges(CORPUS, 300, b2u)
    tokens = list(b2u.values())
    tokens += [t + "</w>" for t in tokens]
    tokens += ["".join(m) for m in merges] + list(SPECIALS)
    vocab = {t: i for i, t in enumerate(tokens)}
    ranks = {m: i for i, m in enumerate(merges)}
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    lines = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write(lines)
    with open(os.path.join(out, "bpe_simple_vocab.txt.gz"), "wb") as f:
        f.write(gzip.compress(lines.encode("utf-8"), mtime=0))
    encodings = [{"prompt": p, "ids": encode(p, vocab, ranks, b2u)} for p in PROMPTS]
    with open(os.path.join(out, "tokenizer_encodings.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in encodings) + "\n]\n")
    print(f"tokenizer: {len(tokens)} tokens, {len(merges)} merges")
    return len(tokens), lambda text: encode(text, vocab, ranks, b2u)


# ------------------------------------------------------------------------------------ files

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64"}


def safetensors_bytes(tensors, dtype):
    """The file: float tensors as `dtype`, int64 ones as int64, in name order, the header padded to 8 bytes."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        t = t if t.dtype == torch.int64 else t.to(dtype)
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def tensor_line(name, t):
    t = t.detach()
    kind = "i64" if t.dtype == torch.int64 else "f32"
    values = " ".join(str(int(v)) for v in t.flatten().tolist()) if kind == "i64" else \
        " ".join(f"{v:.9g}" for v in t.float().flatten().tolist())
    return f"{name} {kind} {t.dim()} " + " ".join(map(str, t.shape)) + " " + values + "\n"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    os.makedirs(out, exist_ok=True)
    TEXT["vocab"], tokenize = write_tokenizer(out)
    gen = torch.Generator().manual_seed(20250101)
    W = Weights(gen)
    text_weights(W)
    unet_weights(W)
    vae_weights(W)
    model_names = set(W.w)
    unused_weights(W)
    w = W.w

    text_tokens = torch.randint(0, TEXT["vocab"], (2, 77), generator=gen)
    unet_x = torch.randn(2, 4, LATENT, LATENT, generator=gen)
    unet_t = torch.tensor([981.0, 1.0])
    vae_latents = torch.randn(1, 4, LATENT, LATENT, generator=gen) * SCALE_FACTOR * 5
    ddim_noise = torch.randn(1, 4, LATENT, LATENT, generator=gen)
    ddim_tokens = torch.tensor([tokenize(DDIM_PROMPT)])
    ddim_empty = torch.tensor([tokenize("")])
    with torch.no_grad():
        text_out = text_encoder(w, text_tokens)
        unet_context = text_out
        unet_out = torch.cat([unet(w, unet_x[i:i + 1], unet_t[i:i + 1], unet_context[i:i + 1]) for i in range(2)])
        vae_out = vae_decode(w, vae_latents)
        cond, uncond = text_encoder(w, ddim_tokens), text_encoder(w, ddim_empty)
        ddim_latents = ddim_sample(w, ddim_noise, cond, uncond, DDIM_STEPS, GUIDANCE)
        ddim_image = vae_decode(w, ddim_latents)

    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(w, torch.float32))
    with open(os.path.join(out, "model_fp16.safetensors"), "wb") as f:
        f.write(safetensors_bytes(w, torch.float16))
    with open(os.path.join(out, "expected.txt"), "w") as f:
        for name, t in (("text_tokens", text_tokens), ("text_out", text_out), ("unet_x", unet_x), ("unet_t", unet_t),
                        ("unet_context", unet_context), ("unet_out", unet_out), ("vae_latents", vae_latents),
                        ("vae_out", vae_out), ("ddim_noise", ddim_noise), ("ddim_tokens", ddim_tokens),
                        ("ddim_empty_tokens", ddim_empty), ("ddim_latents", ddim_latents), ("ddim_image", ddim_image)):
            f.write(tensor_line(name, t))
    params = sum(w[n].numel() for n in model_names)
    print(f"model: {params} parameters; max |ref|: text {text_out.abs().max():.3f}, unet {unet_out.abs().max():.3f}, "
          f"vae {vae_out.abs().max():.3f}, ddim latents {ddim_latents.abs().max():.3f}, image {ddim_image.abs().max():.3f}")


if __name__ == "__main__":
    main()
