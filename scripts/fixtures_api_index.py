#!/usr/bin/python3
"""Writes tests/fixtures/api_index.txt: forward values and gradients of the indexing, pooling,
interpolation and padding ops of issue 16 (masked_select, nonzero, scatter with reduce,
scatter_reduce, max_pool with indices, max_unpool, the 3-D pools, interpolate's 5-D and
nearest-exact/area/bicubic modes, pad's reflect/replicate/circular modes) against PyTorch, for
tests/test_api_index.cpp. The format and helpers are those of scripts/fixtures_lib.py.

    /usr/bin/python3 scripts/fixtures_api_index.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Ops with two results (max_pool with indices) take `part` naming the one to compare. Spatial
arguments are always lists (one value per spatial dimension).
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

warnings.filterwarnings("ignore", message="scatter_reduce")
seed(1616)  # a seed of its own: other scripts' cases never shift this file's values

G = "api_index"
NAN, INF = float("nan"), float("inf")


def idx(shape, hi, lo=0):
    """int64 indices uniform in [lo, hi)."""
    return In("int64", shape, ints_in(lo, hi - 1, numel(shape)))


def mask(shape, p_true=0.5):
    return In("bool", shape, [bool(x) for x in rng.random(numel(shape)) < p_true])


def distinct(dt, shape, scale=0.25):
    """Values without ties (a shuffled grid), so a maximum's position is unique."""
    n = numel(shape)
    perm = rng.permutation(n)
    return In(dt, shape, round_to(dt, [(int(p) - n // 2) * scale for p in perm]))


def src_corner(src, index):
    """src cut to index's shape (PyTorch 1.13's scatter backward rejects a larger src)."""
    return src[tuple(slice(0, n) for n in index.shape)]


def t_pool_indices(a, i):
    f = [F.max_pool1d, F.max_pool2d, F.max_pool3d][a["nd"] - 1]
    v, ix = f(i[0], a["kernel"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"], return_indices=True)
    return v if a["part"] == "values" else ix


def t_unpool(a, i):
    f = [F.max_unpool1d, F.max_unpool2d, F.max_unpool3d][a["nd"] - 1]
    return f(i[0], i[1], a["kernel"], a["stride"], a["padding"], a.get("output_size"))


def t_interpolate(a, i):
    kw = {}
    if "align_corners" in a:
        kw["align_corners"] = a["align_corners"]
    if "size" in a:
        return F.interpolate(i[0], size=a["size"], mode=a["mode"], **kw)
    return F.interpolate(i[0], scale_factor=a["scale"], mode=a["mode"], **kw)


def t_pad(a, i):
    x = i[0]
    # PyTorch 1.13 pads non-constant modes only for a batched (or unbatched) 2-D to 5-D input over
    # its last 1-3 dimensions: the reference adds the dimensions it needs, lazygrad does not.
    extra = 0
    while x.dim() < len(a["padding"]) // 2 + 2:
        x = x.unsqueeze(0)
        extra += 1
    r = F.pad(x, a["padding"], mode=a["mode"])
    for _ in range(extra):
        r = r.squeeze(0)
    return r


register_ops({
    # contiguous(): PyTorch 1.13's masked_select backward misplaces the gradient of a
    # non-contiguous input (its values are right)
    "masked_select": lambda a, i: torch.masked_select(i[0].contiguous(), i[1]),
    "nonzero": lambda a, i: torch.nonzero(i[0]),
    "scatter.reduce_tensor": lambda a, i: i[0].scatter(a["dim"], i[1], src_corner(i[2], i[1]), reduce=a["reduce"]),
    "scatter.reduce_scalar": lambda a, i: i[0].scatter(a["dim"], i[1], a["value"], reduce=a["reduce"]),
    "scatter_reduce": lambda a, i: i[0].scatter_reduce(a["dim"], i[1], src_corner(i[2], i[1]), a["reduce"],
                                                       include_self=a["include_self"]),
    "max_pool_indices": t_pool_indices,
    "max_unpool": t_unpool,
    "max_pool3d": lambda a, i: F.max_pool3d(i[0], a["kernel"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"]),
    "avg_pool3d": lambda a, i: F.avg_pool3d(i[0], a["kernel"], a["stride"], a["padding"], a["ceil_mode"],
                                            a["count_include_pad"]),
    "interpolate": t_interpolate,
    "pad": t_pad,
}, non_compute=["masked_select", "nonzero", "scatter", "max_unpool", "pad", "max_pool_indices", "max_pool3d"])


def data_dependent():
    add_case(G, "masked_select_f32", "masked_select", {}, [inp("float32", [3, 5]), mask([3, 5])], grad=[0])
    add_case(G, "masked_select_f32_bcast_mask", "masked_select", {}, [nc_permute("float32"), mask([3, 4])], grad=[0])
    add_case(G, "masked_select_f64_mask_bcasts_self", "masked_select", {}, [inp("float64", [4]), mask([3, 4])],
             grad=[0])
    add_case(G, "masked_select_i32_none_true", "masked_select", {}, [inp("int32", [2, 3]), mask([2, 3], 0.0)])
    add_case(G, "masked_select_bool_empty", "masked_select", {}, [inp("bool", [0, 3]), mask([0, 3])])
    add_case(G, "masked_select_f16", "masked_select", {}, [inp("float16", [7]), mask([7])])

    add_case(G, "nonzero_f32_nan_negzero", "nonzero", {},
             [In("float32", [2, 4], [0.0, NAN, -0.0, 1.5, 0.0, -INF, 0.0, 2.0])])
    add_case(G, "nonzero_bool_3d", "nonzero", {}, [mask([2, 3, 4])])
    add_case(G, "nonzero_i64_flipped", "nonzero", {}, [nc_flip("int64", "small")])
    add_case(G, "nonzero_i32_scalar", "nonzero", {}, [In("int32", [], [3])])
    add_case(G, "nonzero_f32_empty", "nonzero", {}, [inp("float32", [3, 0])])
    add_case(G, "nonzero_u8_all_zero", "nonzero", {}, [In("uint8", [5], [0] * 5)])


def scatter_reductions():
    # scatter(reduce=): PyTorch 1.13 has no gradient for it, so forward only
    add_case(G, "scatter_add_reduce_f32_dups", "scatter", {"form": "reduce_tensor", "dim": 1, "reduce": "add"},
             [inp("float32", [3, 5]), idx([3, 6], 5), inp("float32", [3, 6])])
    add_case(G, "scatter_multiply_f64_dups", "scatter", {"form": "reduce_tensor", "dim": 0, "reduce": "multiply"},
             [inp("float64", [4, 3]), idx([5, 2], 4), inp("float64", [6, 3])])
    add_case(G, "scatter_multiply_i64", "scatter", {"form": "reduce_tensor", "dim": -1, "reduce": "multiply"},
             [inp("int64", [2, 4], "small"), idx([2, 5], 4), inp("int64", [2, 5], "small")])
    add_case(G, "scatter_multiply_scalar_f32", "scatter",
             {"form": "reduce_scalar", "dim": 1, "reduce": "multiply", "value": -1.5},
             [nc_flip("float32"), idx([4, 7], 6)])
    add_case(G, "scatter_add_scalar_i32", "scatter", {"form": "reduce_scalar", "dim": 0, "reduce": "add", "value": 3},
             [inp("int32", [5]), idx([6], 5)])

    for reduce in ["sum", "prod", "mean", "amax", "amin"]:
        for include_self in [True, False]:
            tag = f"{reduce}_{'self' if include_self else 'noself'}"
            kind = "nonzero" if reduce == "prod" else "grid"  # grid values tie, as amax/amin must share
            add_case(G, f"scatter_reduce_{tag}_f32", "scatter_reduce",
                     {"dim": 1, "reduce": reduce, "include_self": include_self},
                     [inp("float32", [3, 5], kind), idx([3, 6], 5), inp("float32", [3, 7], kind)], grad=[0, 2])
        add_case(G, f"scatter_reduce_{reduce}_f64_dim0_flipped", "scatter_reduce",
                 {"dim": 0, "reduce": reduce, "include_self": True},
                 [nc_flip("float64", "nonzero"), idx([4, 6], 5), inp("float64", [4, 6], "nonzero")], grad=[0, 2])
        add_case(G, f"scatter_reduce_{reduce}_i32", "scatter_reduce",
                 {"dim": -1, "reduce": reduce, "include_self": reduce != "mean"},
                 [inp("int32", [2, 3, 4], "small"), idx([2, 3, 5], 4), inp("int32", [2, 3, 5], "small")])
    add_case(G, "scatter_reduce_mean_i64_negative_floor", "scatter_reduce",
             {"dim": 0, "reduce": "mean", "include_self": True},
             [In("int64", [3], [-7, 3, 5]), In("int64", [4], [0, 0, 1, 0]), In("int64", [4], [2, 3, 4, -1])])
    add_case(G, "scatter_reduce_amax_f32_inf_nan", "scatter_reduce", {"dim": 0, "reduce": "amax", "include_self": False},
             [In("float32", [4], [1.0, 2.0, 3.0, 4.0]), In("int64", [4], [0, 0, 1, 2]),
              In("float32", [4], [-INF, 5.0, NAN, -1.0])])
    add_case(G, "scatter_reduce_sum_f32_empty_index", "scatter_reduce", {"dim": 1, "reduce": "sum", "include_self": True},
             [inp("float32", [3, 4]), idx([3, 0], 4), inp("float32", [3, 2])], grad=[0])
    add_case(G, "scatter_reduce_amin_f16", "scatter_reduce", {"dim": 1, "reduce": "amin", "include_self": True},
             [inp("float16", [2, 5]), idx([2, 4], 5), inp("float16", [2, 4])])


def pools():
    def pool(nd, kernel, stride, padding=0, dilation=1, ceil_mode=False):
        return {"nd": nd, "kernel": [kernel] * nd if isinstance(kernel, int) else kernel,
                "stride": [stride] * nd if isinstance(stride, int) else stride,
                "padding": [padding] * nd if isinstance(padding, int) else padding,
                "dilation": [dilation] * nd if isinstance(dilation, int) else dilation, "ceil_mode": ceil_mode}

    for name, args, x in [
        ("mp2d_k2", pool(2, 2, 2), distinct("float32", [2, 3, 5, 6])),
        ("mp2d_k3_s2_p1_ceil", pool(2, 3, 2, 1, 1, True), distinct("float32", [1, 2, 7, 5])),
        ("mp2d_dilated_unbatched", pool(2, [2, 3], [1, 2], 0, [2, 1]), distinct("float64", [2, 7, 8])),
        ("mp2d_ties_first", pool(2, 2, 1), In("float32", [1, 1, 3, 3], [1, 1, 0, 1, 1, 0, 2, 2, 2])),
        ("mp2d_nan", pool(2, 2, 2), In("float32", [1, 1, 2, 4], [1, NAN, 3, 0, 2, 0, NAN, 5])),
        ("mp2d_permuted", pool(2, 2, 2), nc_permute("float32")),
        ("mp1d_k3_s2_p1", pool(1, 3, 2, 1), distinct("float32", [2, 3, 9])),
        ("mp3d_k2", pool(3, 2, 2), distinct("float32", [1, 2, 4, 5, 4])),
        ("mp3d_k3_s2_p1_unbatched", pool(3, 3, 2, 1), distinct("float32", [2, 5, 4, 5])),
    ]:
        grad_values = [0] if "nan" not in name and "ties" not in name else None
        add_case(G, f"{name}_values", "max_pool_indices", dict(args, part="values"), [x], grad=grad_values)
        add_case(G, f"{name}_indices", "max_pool_indices", dict(args, part="indices"), [x])

    # empty batches, and the half types (PyTorch's reference runs them in float32)
    add_case(G, "mp2d_empty_batch_indices", "max_pool_indices", dict(pool(2, 2, 2), part="indices"),
             [inp("float32", [0, 2, 4, 4])])
    add_case(G, "mp2d_f16_values", "max_pool_indices", dict(pool(2, 3, 2, 1), part="values"),
             [distinct("float16", [1, 2, 5, 5])], half_in_float32=True)
    add_case(G, "mp2d_bf16_indices", "max_pool_indices", dict(pool(2, 2, 2), part="indices"),
             [distinct("bfloat16", [1, 1, 4, 6])], half_in_float32=True)
    add_case(G, "mu2d_empty_batch", "max_unpool", {"nd": 2, "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]},
             [inp("float32", [0, 2, 2, 2]), In("int64", [0, 2, 2, 2], [])])

    # max_unpool: its inputs are a max_pool's values and indices, computed here
    # Overlapping windows can pick one element twice: PyTorch's gradient goes to every copy,
    # lazygrad's to the last (its scatter's), so that case checks the forward only.
    for name, args, shape, output_size, grad in [
        ("mu2d_k2", pool(2, 2, 2), [2, 3, 4, 6], None, [0]),
        ("mu2d_k2_output_size", pool(2, 2, 2), [1, 2, 5, 7], [5, 7], [0]),
        ("mu2d_k3_s2_p1_full_output_size_overlapping", pool(2, 3, 2, 1), [1, 1, 6, 5], [1, 1, 6, 5], None),
        ("mu1d_k2", pool(1, 2, 2), [2, 2, 7], None, [0]),
        ("mu3d_k2", pool(3, 2, 2), [1, 2, 4, 4, 6], None, [0]),
        ("mu2d_unbatched", pool(2, 2, 2), [3, 4, 4], None, [0]),
    ]:
        x = torch.tensor(distinct("float32", shape).values, dtype=torch.float32).reshape(shape)
        f = [F.max_pool1d, F.max_pool2d, F.max_pool3d][args["nd"] - 1]
        v, ix = f(x, args["kernel"], args["stride"], args["padding"], return_indices=True)
        a = dict(args)
        del a["dilation"], a["ceil_mode"]
        if output_size is not None:
            a["output_size"] = output_size
        add_case(G, name, "max_unpool", a,
                 [In("float32", list(v.shape), v.reshape(-1).tolist()), In("int64", list(ix.shape), ix.reshape(-1).tolist())],
                 grad=grad)

    add_case(G, "max_pool3d_k2_s1_dilated", "max_pool3d", pool(3, 2, 1, 0, [1, 2, 1]), [distinct("float32", [1, 2, 3, 5, 4])],
             grad=True)
    add_case(G, "max_pool3d_ceil_f64", "max_pool3d", pool(3, 2, 2, 1, 1, True), [distinct("float64", [2, 3, 3, 5])],
             grad=True)
    for name, args, x in [
        ("avg_pool3d_k2", dict(pool(3, 2, 2), count_include_pad=True), inp("float32", [1, 2, 4, 5, 6])),
        ("avg_pool3d_k3_s2_p1_exclude_pad", dict(pool(3, 3, 2, 1), count_include_pad=False), inp("float32", [2, 5, 4, 6])),
        ("avg_pool3d_ceil_include_pad_f64", dict(pool(3, [2, 3, 2], [2, 2, 1], [1, 1, 0], 1, True), count_include_pad=True),
         inp("float64", [1, 1, 5, 5, 3])),
    ]:
        del args["dilation"]
        add_case(G, name, "avg_pool3d", args, [x], grad=True)


def interpolation():
    for name, args, x in [
        ("trilinear_size", {"size": [3, 5, 4], "mode": "trilinear", "align_corners": False}, inp("float32", [1, 2, 2, 3, 5])),
        ("trilinear_align_corners", {"size": [4, 3, 7], "mode": "trilinear", "align_corners": True},
         inp("float32", [2, 1, 3, 4, 3])),
        ("trilinear_scale_f64", {"scale": [2.0, 1.5, 0.5], "mode": "trilinear", "align_corners": False},
         inp("float64", [1, 1, 2, 4, 6])),
        ("nearest_5d_size", {"size": [4, 3, 5], "mode": "nearest"}, inp("float32", [1, 2, 2, 5, 3])),
        ("nearest_5d_scale", {"scale": [2.0, 1.0, 3.0], "mode": "nearest"}, inp("float32", [1, 1, 2, 3, 2])),
        ("nearest_exact_3d", {"size": [7], "mode": "nearest-exact"}, inp("float32", [2, 3, 5])),
        ("nearest_exact_4d_down", {"size": [3, 2], "mode": "nearest-exact"}, inp("float32", [1, 2, 7, 5])),
        ("nearest_exact_4d_scale", {"scale": [1.5, 2.5], "mode": "nearest-exact"}, nc_permute("float32").v("unsqueeze", 0)),
        ("nearest_exact_5d", {"size": [3, 4, 2], "mode": "nearest-exact"}, inp("float64", [1, 1, 4, 3, 5])),
        ("area_4d", {"size": [2, 3], "mode": "area"}, inp("float32", [1, 2, 5, 7])),
        ("area_5d", {"size": [1, 2, 3], "mode": "area"}, inp("float32", [1, 1, 3, 4, 6])),
        ("bicubic_up", {"size": [7, 9], "mode": "bicubic", "align_corners": False}, inp("float32", [1, 2, 3, 4])),
        ("bicubic_down_align_corners", {"size": [3, 2], "mode": "bicubic", "align_corners": True},
         inp("float32", [2, 1, 6, 5])),
        ("bicubic_scale_f64", {"scale": [1.5, 0.75], "mode": "bicubic", "align_corners": False},
         inp("float64", [1, 1, 4, 8])),
    ]:
        # bicubic sums the 4 x 4 taps in another order than PyTorch (one axis, then the other)
        tol = (1e-5, 1e-5) if args["mode"] == "bicubic" else None
        add_case(G, f"interpolate_{name}", "interpolate", args, [x], grad=True, tol=tol)
    add_case(G, "interpolate_trilinear_empty_batch", "interpolate",
             {"size": [3, 3, 3], "mode": "trilinear", "align_corners": False}, [inp("float32", [0, 1, 2, 2, 2])])
    add_case(G, "interpolate_trilinear_f16", "interpolate", {"size": [3, 4, 3], "mode": "trilinear", "align_corners": False},
             [inp("float16", [1, 1, 2, 3, 2])])
    add_case(G, "interpolate_nearest_exact_bf16", "interpolate", {"size": [5, 3], "mode": "nearest-exact"},
             [inp("bfloat16", [1, 2, 3, 4])])
    # PyTorch's CPU has no integer kernel: the reference runs in float64 (exact for these values)
    add_case(G, "interpolate_nearest_exact_i64", "interpolate", {"size": [5], "mode": "nearest-exact"},
             [inp("int64", [1, 2, 3])], fn=lambda a, i: t_interpolate(a, [i[0].double()]).long())


def padding():
    for mode in ["reflect", "replicate", "circular"]:
        add_case(G, f"pad_{mode}_1d", "pad", {"padding": [2, 1], "mode": mode}, [inp("float32", [2, 3, 5])], grad=True)
        add_case(G, f"pad_{mode}_2d_permuted", "pad", {"padding": [1, 2, 2, 0], "mode": mode}, [nc_permute("float32")],
                 grad=True)
        add_case(G, f"pad_{mode}_3d_f64", "pad", {"padding": [1, 1, 0, 2, 2, 1], "mode": mode},
                 [inp("float64", [1, 2, 3, 4, 3])], grad=True)
        # PyTorch's CPU lacks integer kernels for two of the modes: the reference pads in float64
        add_case(G, f"pad_{mode}_i32", "pad", {"padding": [1, 2], "mode": mode}, [inp("int32", [2, 4])],
                 fn=lambda a, i: t_pad(a, [i[0].double()]).int())
        # any dimension: PyTorch 1.13 refuses a 1-D input or the 4th-from-last dimension; the
        # reference pads unsqueezed inputs (see t_pad)
        add_case(G, f"pad_{mode}_1d_input", "pad", {"padding": [3, 2], "mode": mode}, [inp("float32", [4])], grad=True)
    add_case(G, "pad_circular_negative_crops", "pad", {"padding": [-1, 2], "mode": "circular"},
             [inp("float32", [1, 2, 5])], grad=True)
    add_case(G, "pad_circular_bf16", "pad", {"padding": [2, 2], "mode": "circular"}, [inp("bfloat16", [2, 3])],
             half_in_float32=True)
    add_case(G, "avg_pool3d_empty_batch", "avg_pool3d",
             {"nd": 3, "kernel": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0], "ceil_mode": False,
              "count_include_pad": True}, [inp("float32", [0, 1, 2, 2, 2])])
    add_case(G, "pad_reflect_empty_batch", "pad", {"padding": [1, 1], "mode": "reflect"}, [inp("float32", [0, 2, 3])])
    add_case(G, "pad_replicate_f16", "pad", {"padding": [0, 3, 1, 0], "mode": "replicate"}, [inp("float16", [1, 2, 3])],
             half_in_float32=True)


def main():
    data_dependent()
    scatter_reductions()
    pools()
    interpolation()
    padding()
    write_and_report()


if __name__ == "__main__":
    main()
