#!/usr/bin/python3
"""Writes tests/fixtures/functional.txt: losses, normalization and attention (forward values and
gradients) that tests/test_functional.cpp checks lazygrad against. Dropout is random, so its tests
are in the C++ file (moments, determinism, edge cases), not here.

    /usr/bin/python3 scripts/fixtures_functional.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

torch 1.13 has neither F.rms_norm nor F.scaled_dot_product_attention (2.x): their references are
the formulas x / sqrt(mean(x^2) + eps) * weight and softmax(q @ k^T * scale + mask) @ v, in torch.

Arguments: optional tensors come after the op's required inputs, in PyTorch's argument order, and
an `arg <name> bool 1` says which are present (weight, bias, pos_weight, mask, running: the running
statistics of batch_norm). Each op has a handful of shapes (every new shape compiles new kernels):
broadcasting, non-contiguous inputs and edge values are mixed into them.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(7103)  # a seed of its own: other scripts' cases never shift this file's values

G = "functional"


# ---------------------------------------------------------------- torch references

def optional_inputs(a, ins, first, names):
    """The optional tensors named in `names` (in order), each present when its arg flag is set."""
    out, k = {}, first
    for n in names:
        if a.get(n):
            out[n] = ins[k]
            k += 1
        else:
            out[n] = None
    return out


def t_cross_entropy(a, i):
    o = optional_inputs(a, i, 2, ["weight"])
    return F.cross_entropy(i[0], i[1], o["weight"], ignore_index=a.get("ignore_index", -100),
                           reduction=a.get("reduction", "mean"), label_smoothing=a.get("label_smoothing", 0.0))


def t_nll_loss(a, i):
    o = optional_inputs(a, i, 2, ["weight"])
    return F.nll_loss(i[0], i[1], o["weight"], ignore_index=a.get("ignore_index", -100),
                      reduction=a.get("reduction", "mean"))


def t_bce(a, i):
    o = optional_inputs(a, i, 2, ["weight"])
    return F.binary_cross_entropy(i[0], i[1], o["weight"], reduction=a.get("reduction", "mean"))


def t_bce_logits(a, i):
    o = optional_inputs(a, i, 2, ["weight", "pos_weight"])
    return F.binary_cross_entropy_with_logits(i[0], i[1], o["weight"], reduction=a.get("reduction", "mean"),
                                              pos_weight=o["pos_weight"])


def t_layer_norm(a, i):
    o = optional_inputs(a, i, 1, ["weight", "bias"])
    return F.layer_norm(i[0], a["normalized_shape"], o["weight"], o["bias"], a.get("eps", 1e-5))


def t_group_norm(a, i):
    o = optional_inputs(a, i, 1, ["weight", "bias"])
    return F.group_norm(i[0], a["num_groups"], o["weight"], o["bias"], a.get("eps", 1e-5))


def t_rms_norm(a, i):
    """torch 2.4's F.rms_norm, written out: eps None is the dtype's machine epsilon."""
    o = optional_inputs(a, i, 1, ["weight"])
    x = i[0]
    eps = a.get("eps")
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    dims = tuple(range(x.dim() - len(a["normalized_shape"]), x.dim()))
    y = x / torch.sqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y if o["weight"] is None else y * o["weight"]


def batch_norm_call(a, i):
    """F.batch_norm on (x, [running_mean, running_var], [weight], [bias]); returns (out, rm, rv)."""
    flags = dict(a, running_mean=a.get("running"), running_var=a.get("running"))
    o = optional_inputs(flags, i, 1, ["running_mean", "running_var", "weight", "bias"])
    out = F.batch_norm(i[0], o["running_mean"], o["running_var"], o["weight"], o["bias"],
                       training=a.get("training", False), momentum=a.get("momentum", 0.1), eps=a.get("eps", 1e-5))
    return out, o["running_mean"], o["running_var"]


def t_sdpa(a, i):
    """F.scaled_dot_product_attention of torch 2.x (its documented reference), written out."""
    q, k, v = i[0], i[1], i[2]
    mask = i[3] if a.get("mask") else None
    L, S = q.size(-2), k.size(-2)
    scale = a.get("scale")
    if scale is None:
        scale = 1 / math.sqrt(q.size(-1))
    scores = q @ k.transpose(-2, -1) * scale
    if a.get("is_causal"):
        keep = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    elif mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, dim=-1) @ v


register_ops({
    "cross_entropy": t_cross_entropy,
    "nll_loss": t_nll_loss,
    "binary_cross_entropy": t_bce,
    "binary_cross_entropy_with_logits": t_bce_logits,
    "mse_loss": lambda a, i: F.mse_loss(i[0], i[1], reduction=a.get("reduction", "mean")),
    "l1_loss": lambda a, i: F.l1_loss(i[0], i[1], reduction=a.get("reduction", "mean")),
    "smooth_l1_loss": lambda a, i: F.smooth_l1_loss(i[0], i[1], reduction=a.get("reduction", "mean"),
                                                    beta=a.get("beta", 1.0)),
    "kl_div": lambda a, i: F.kl_div(i[0], i[1], reduction=a.get("reduction", "mean"),
                                    log_target=a.get("log_target", False)),
    "layer_norm": t_layer_norm,
    "group_norm": t_group_norm,
    "rms_norm": t_rms_norm,
    "batch_norm": lambda a, i: batch_norm_call(a, i)[0],
    # The running statistics after one call (the op's in-place effect), not its output.
    "batch_norm.running_mean": lambda a, i: batch_norm_call(a, i)[1],
    "batch_norm.running_var": lambda a, i: batch_norm_call(a, i)[2],
    "scaled_dot_product_attention": t_sdpa,
})


# ---------------------------------------------------------------- inputs

def rounded(dt, values):
    return round_to(dt, np.round(np.asarray(values, dtype=np.float64), 4))


def floats(dt, shape, lo, hi):
    return In(dt, shape, rounded(dt, rng.uniform(lo, hi, numel(shape))))


def probs(dt, shape, lo=0.02, hi=0.98):
    """Values strictly inside (0, 1), for binary_cross_entropy's input and targets."""
    return floats(dt, shape, lo, hi)


def distribution(dt, shape, dim, zeros=0):
    """Nonnegative rows that sum to 1 along dim (up to the 4-decimal rounding), with `zeros` entries
    set to exactly 0: class-probability targets and kl_div targets."""
    p = rng.uniform(0.1, 1.0, shape)
    flat = p.reshape(-1)
    if zeros:
        flat[rng.choice(flat.size, zeros, replace=False)] = 0.0
    p = flat.reshape(shape)
    p = p / p.sum(axis=dim, keepdims=True)
    return In(dt, shape, rounded(dt, p.reshape(-1)))


def log_distribution(dt, shape, dim):
    """log-probabilities along dim (nll_loss's and kl_div's input)."""
    x = torch.tensor(rng.normal(0, 2, shape))
    return In(dt, shape, rounded(dt, torch.log_softmax(x, dim).reshape(-1).tolist()))


def classes(shape, n_classes, ignore=(), ignore_index=-100):
    """Class-index targets (int64) in [0, n_classes); the flat positions in `ignore` get ignore_index."""
    values = [int(c) for c in rng.integers(0, n_classes, numel(shape))]
    for k in ignore:
        values[k] = ignore_index
    return In("int64", shape, values)


def exact(dt, shape, values):
    return In(dt, shape, round_to(dt, values))


# ---------------------------------------------------------------- cases

def losses():
    # cross_entropy, class indices: [N, C], [N, C, d] (permuted from channels-last), [C]
    add_case(G, "ce_idx_f32_mean", "cross_entropy", {}, [inp("float32", [5, 7]), classes([5], 7)], grad=[0])
    add_case(G, "ce_idx_f32_sum_weight", "cross_entropy", {"reduction": "sum", "weight": True},
             [inp("float32", [5, 7]), classes([5], 7), floats("float32", [7], 0.2, 2)], grad=[0])
    add_case(G, "ce_idx_f64_none_ignored", "cross_entropy", {"reduction": "none"},
             [inp("float64", [6, 4]), classes([6], 4, ignore=[1, 4])], grad=[0])
    add_case(G, "ce_idx_f32_nd_permuted_weight_smooth_ignore1", "cross_entropy",
             {"ignore_index": 1, "label_smoothing": 0.1, "weight": True},
             [inp("float32", [2, 3, 5]).v("permute", 0, 2, 1), classes([2, 3], 5),
              floats("float32", [5], 0.2, 2)], grad=[0])
    add_case(G, "ce_idx_f32_smooth_none_ignored", "cross_entropy", {"reduction": "none", "label_smoothing": 0.25},
             [inp("float32", [4, 6]), classes([4], 6, ignore=[2])], grad=[0])
    add_case(G, "ce_idx_f32_unbatched", "cross_entropy", {}, [inp("float32", [7]), In("int64", [], [3])], grad=[0])
    # large logits and a -inf logit on a class that is not the target: finite loss, no NaN gradient
    add_case(G, "ce_idx_f32_edge_logits", "cross_entropy", {"reduction": "none"},
             [exact("float32", [3, 4], [1000, -1000, 0, 5, -math.inf, 2, 1, 0, 1e4, 1e4, -1e4, 3]),
              In("int64", [3], [0, 1, 3])], grad=[0])

    # cross_entropy, class probabilities (target shaped like the input)
    add_case(G, "ce_prob_f32_mean", "cross_entropy", {}, [inp("float32", [4, 5]), distribution("float32", [4, 5], 1)],
             grad=True)
    add_case(G, "ce_prob_f64_nd_sum_weight_smooth", "cross_entropy",
             {"reduction": "sum", "label_smoothing": 0.2, "weight": True},
             [inp("float64", [2, 3, 4]), distribution("float64", [2, 3, 4], 1, zeros=3),
              floats("float64", [3], 0.2, 2)], grad=[0, 1])
    add_case(G, "ce_prob_f32_unbatched_none", "cross_entropy", {"reduction": "none"},
             [inp("float32", [6]), distribution("float32", [6], 0)])

    # nll_loss
    add_case(G, "nll_f32_mean", "nll_loss", {}, [log_distribution("float32", [5, 4], 1), classes([5], 4)], grad=[0])
    add_case(G, "nll_f64_nd_sum_weight_ignore2", "nll_loss", {"reduction": "sum", "ignore_index": 2, "weight": True},
             [log_distribution("float64", [2, 4, 3], 1), classes([2, 3], 4), floats("float64", [4], 0.2, 2)],
             grad=[0])
    add_case(G, "nll_f32_weighted_mean_ignored", "nll_loss", {"weight": True},
             [log_distribution("float32", [6, 3], 1), classes([6], 3, ignore=[0, 5]), floats("float32", [3], 0.2, 2)],
             grad=[0])
    add_case(G, "nll_f32_unbatched_none", "nll_loss", {"reduction": "none"},
             [log_distribution("float32", [5], 0), In("int64", [], [4])], grad=[0])
    add_case(G, "nll_f32_all_ignored_nan", "nll_loss", {},
             [log_distribution("float32", [2, 3], 1), In("int64", [2], [-100, -100])], grad=[0])

    # binary_cross_entropy (the input holds probabilities)
    add_case(G, "bce_f32_mean", "binary_cross_entropy", {}, [probs("float32", [3, 5]), probs("float32", [3, 5], 0, 1)],
             grad=True)
    add_case(G, "bce_f64_none_weight_bcast", "binary_cross_entropy", {"reduction": "none", "weight": True},
             [probs("float64", [3, 5]), probs("float64", [3, 5], 0, 1), floats("float64", [5], 0.5, 2)], grad=[0, 1])
    add_case(G, "bce_f32_sum_transposed", "binary_cross_entropy", {"reduction": "sum"},
             [probs("float32", [5, 4]).v("transpose", 0, 1), probs("float32", [4, 5], 0, 1)], grad=True)
    # log clamped at -100: p = 0 or 1 against the opposite target gives 100; 1e-30 gives log's value
    add_case(G, "bce_f32_edge_clamp", "binary_cross_entropy", {"reduction": "none"},
             [exact("float32", [6], [0, 1, 1e-30, 0.5, 0, 1]), exact("float32", [6], [1, 0, 1, 0.3, 0, 1])])

    # binary_cross_entropy_with_logits
    add_case(G, "bcel_f32_mean", "binary_cross_entropy_with_logits", {},
             [inp("float32", [4, 5]), probs("float32", [4, 5], 0, 1)], grad=True)
    add_case(G, "bcel_f32_sum_weight_pos_weight", "binary_cross_entropy_with_logits",
             {"reduction": "sum", "weight": True, "pos_weight": True},
             [inp("float32", [4, 5]), probs("float32", [4, 5], 0, 1), floats("float32", [4, 1], 0.5, 2),
              floats("float32", [5], 0.5, 3)], grad=[0, 1])
    # logits far beyond exp's range stay finite (the stable form), also in the gradient
    add_case(G, "bcel_f32_edge_logits", "binary_cross_entropy_with_logits", {"reduction": "none"},
             [exact("float32", [7], [-1000, -50, 0, 50, 1000, 88.5, -88.5]),
              exact("float32", [7], [0, 1, 0.5, 1, 0, 0.25, 1])], grad=True)
    add_case(G, "bcel_f64_none_pos_weight_permuted", "binary_cross_entropy_with_logits",
             {"reduction": "none", "pos_weight": True},
             [nc_permute("float64"), probs("float64", [5, 3, 4], 0, 1), floats("float64", [4], 0.5, 3)], grad=[0, 1])

    # mse, l1, smooth_l1 (the target broadcasts, as in PyTorch)
    add_case(G, "mse_f32_mean", "mse_loss", {}, [inp("float32", [3, 4]), inp("float32", [3, 4])], grad=True)
    add_case(G, "mse_f32_sum_bcast", "mse_loss", {"reduction": "sum"}, [inp("float32", [3, 4]), inp("float32", [4])],
             grad=True)
    add_case(G, "mse_f64_none_permuted", "mse_loss", {"reduction": "none"},
             [nc_permute("float64"), inp("float64", [5, 3, 4])], grad=True)
    # grid values: many exact ties, where l1's gradient is 0 (PyTorch's sign(0))
    add_case(G, "l1_f32_mean_ties", "l1_loss", {}, [inp("float32", [4, 5], "cmp"), inp("float32", [4, 5], "cmp")],
             grad=True)
    add_case(G, "l1_f64_none_bcast", "l1_loss", {"reduction": "none"}, [inp("float64", [3, 4]), inp("float64", [3, 1])],
             grad=True)
    # |d| on both sides of beta, equal to beta, and 0
    add_case(G, "smooth_l1_f32_mean_beta1", "smooth_l1_loss", {},
             [inp("float32", [4, 5], "cmp"), inp("float32", [4, 5], "cmp")], grad=True)
    add_case(G, "smooth_l1_f64_none_beta05", "smooth_l1_loss", {"reduction": "none", "beta": 0.5},
             [inp("float64", [3, 4], "grid"), inp("float64", [3, 4], "grid")], grad=True)
    add_case(G, "smooth_l1_f32_sum_beta0", "smooth_l1_loss", {"reduction": "sum", "beta": 0.0},
             [inp("float32", [3, 4]), inp("float32", [4])], grad=True)

    # kl_div: input log-probabilities; targets with exact zeros (xlogy(0, 0) = 0, gradient 0 there)
    add_case(G, "kl_f32_mean_zeros", "kl_div", {}, [log_distribution("float32", [4, 5], 1),
                                                    distribution("float32", [4, 5], 1, zeros=4)], grad=True)
    add_case(G, "kl_f64_batchmean", "kl_div", {"reduction": "batchmean"},
             [log_distribution("float64", [3, 6], 1), distribution("float64", [3, 6], 1)], grad=True)
    add_case(G, "kl_f32_sum_log_target", "kl_div", {"reduction": "sum", "log_target": True},
             [log_distribution("float32", [4, 5], 1), log_distribution("float32", [4, 5], 1)], grad=True)
    # -inf log-probability: NaN against a 0 target (0 * -inf, as PyTorch), inf against a positive one
    add_case(G, "kl_f32_none_edge", "kl_div", {"reduction": "none"},
             [exact("float32", [5], [-math.inf, -math.inf, -1, 0, -2]), exact("float32", [5], [0, 0.5, 0, 0.25, 1])])


def normalization():
    add_case(G, "layer_norm_f32_affine", "layer_norm", {"normalized_shape": [6], "weight": True, "bias": True},
             [inp("float32", [4, 6]), inp("float32", [6]), inp("float32", [6])], grad=True)
    add_case(G, "layer_norm_f64_2d_shape", "layer_norm", {"normalized_shape": [3, 4]}, [inp("float64", [2, 3, 4])],
             grad=True)
    add_case(G, "layer_norm_f32_permuted_weight_eps", "layer_norm",
             {"normalized_shape": [4], "weight": True, "eps": 0.1}, [nc_permute("float32"), inp("float32", [4])],
             grad=True)
    # a large mean (1000 + N(0, 1)): the two-pass variance keeps what E[x^2] - E[x]^2 would cancel
    add_case(G, "layer_norm_f32_large_mean", "layer_norm", {"normalized_shape": [33]},
             [In("float32", [2, 33], rounded("float32", 1000 + rng.normal(0, 1, 66)))], tol=(1e-4, 1e-4))
    add_case(G, "layer_norm_f16", "layer_norm", {"normalized_shape": [7]}, [inp("float16", [3, 7])])

    add_case(G, "group_norm_f32_affine", "group_norm", {"num_groups": 3, "weight": True, "bias": True},
             [inp("float32", [2, 6, 5]), inp("float32", [6]), inp("float32", [6])], grad=True)
    add_case(G, "group_norm_f64_no_spatial", "group_norm", {"num_groups": 2}, [inp("float64", [3, 4])], grad=True)
    add_case(G, "group_norm_f32_one_group_permuted", "group_norm", {"num_groups": 1, "eps": 0.01},
             [nc_permute("float32")], grad=True)

    add_case(G, "rms_norm_f32_weight", "rms_norm", {"normalized_shape": [8], "weight": True, "eps": 1e-6},
             [inp("float32", [3, 8]), inp("float32", [8])], grad=True)
    add_case(G, "rms_norm_f64_default_eps", "rms_norm", {"normalized_shape": [3, 4], "eps": None},
             [inp("float64", [2, 3, 4])], grad=True)
    add_case(G, "rms_norm_f32_transposed_default_eps", "rms_norm", {"normalized_shape": [5], "eps": None},
             [nc_transpose_t("float32")], grad=True)

    running = lambda dt, c: [floats(dt, [c], -1, 1), floats(dt, [c], 0.5, 2)]  # noqa: E731
    add_case(G, "batch_norm_f32_train_affine", "batch_norm",
             {"running": True, "weight": True, "bias": True, "training": True},
             [inp("float32", [4, 3]), *running("float32", 3), inp("float32", [3]), inp("float32", [3])],
             grad=[0, 3, 4])
    add_case(G, "batch_norm_f64_train_nd_no_stats", "batch_norm", {"training": True, "eps": 0.001},
             [inp("float64", [2, 3, 5])], grad=True)
    add_case(G, "batch_norm_f32_eval_affine", "batch_norm", {"running": True, "weight": True, "bias": True},
             [inp("float32", [2, 3, 4]), *running("float32", 3), inp("float32", [3]), inp("float32", [3])],
             grad=[0, 3, 4])
    add_case(G, "batch_norm_f32_train_permuted", "batch_norm", {"running": True, "training": True, "momentum": 0.3},
             [nc_permute("float32"), *running("float32", 3)], grad=[0])
    # the running statistics after one training call: momentum blend, unbiased variance
    for which in ("running_mean", "running_var"):
        add_case(G, f"batch_norm_f32_train_updates_{which}", "batch_norm",
                 {"form": which, "running": True, "training": True, "momentum": 0.2},
                 [inp("float32", [2, 3, 5]), *running("float32", 3)])


def attention():
    sdpa = "scaled_dot_product_attention"

    def u(dt, shape):
        # values in [-1, 1]: with N(0, 3) inputs the softmax saturates, and float32 gradients lose
        # digits to cancellation in both libraries
        return inp(dt, shape, "unit")

    # the key seen through a transpose (non-contiguous)
    add_case(G, "sdpa_f32_cross_transposed_key", sdpa, {},
             [u("float32", [2, 3, 4]), u("float32", [2, 4, 5]).v("transpose", 1, 2), u("float32", [2, 5, 6])],
             grad=True)
    add_case(G, "sdpa_f32_causal_L3_S5", sdpa, {"is_causal": True},
             [u("float32", [3, 4]), u("float32", [5, 4]), u("float32", [5, 2])], grad=True)
    bool_mask = [bool(b) for b in rng.integers(0, 2, 15)]
    for r in range(3):  # every query keeps at least one key
        bool_mask[r * 5] = True
    add_case(G, "sdpa_f32_bool_mask_bcast", sdpa, {"mask": True},
             [u("float32", [2, 3, 4]), u("float32", [2, 5, 4]), u("float32", [2, 5, 4]), In("bool", [3, 5], bool_mask)],
             grad=[0, 1, 2])
    add_case(G, "sdpa_f64_float_mask_scale_bcast_batch", sdpa, {"mask": True, "scale": 0.3},
             [u("float64", [2, 2, 3, 4]), u("float64", [2, 1, 5, 4]), u("float64", [2, 1, 5, 3]),
              inp("float64", [2, 1, 3, 5])], grad=True)
    # a query whose keys are all masked out: NaN row, as in PyTorch's math reference
    add_case(G, "sdpa_f32_fully_masked_row", sdpa, {"mask": True},
             [u("float32", [2, 4]), u("float32", [3, 4]), u("float32", [3, 4]),
              In("bool", [2, 3], [True, False, True, False, False, False])])


def main():
    losses()
    normalization()
    attention()
    write_and_report()


if __name__ == "__main__":
    main()
