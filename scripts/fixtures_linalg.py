#!/usr/bin/python3
"""Writes tests/fixtures/linalg.txt: forward values and gradients of the linear algebra, convolution,
pooling and resampling ops (matmul, dot, outer, linear, tril/triu, einsum, conv1d/2d/3d,
conv_transpose1d/2d, max/avg pooling, adaptive_avg_pool2d, interpolate) against PyTorch, checked by
tests/test_linalg.cpp.

    /usr/bin/python3 scripts/fixtures_linalg.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Shapes are a handful per op (every distinct shape is a compiled kernel in the test), chosen to
reach each code path: broadcasting, 1-D operands, non-contiguous inputs, overlapping and disjoint
pooling windows, dilation, groups, "same" padding with an even kernel, ceil_mode, zero-stuffed
transposed convolutions, and the strided-view and one-hot gathers of interpolate. Pooling inputs
hold distinct values, so that no window has a tied maximum (PyTorch routes a tie's gradient to
one element, lazygrad shares it).

Nearest resampling follows PyTorch's nearest_idx, which its 2-D CPU kernels and its backward use.
Its 1-D CPU forward differs (the index in the input's dtype, no shortcut for an
unchanged size) and disagrees with its own backward, so the 1-D nearest cases avoid those inputs.

Argument conventions (read by tests/test_linalg.cpp): optional tensors (bias) follow the required
inputs and are flagged by `arg bias bool 1`; int-or-tuple arguments are `int` or `ints`; conv's
padding may also be `str same|valid`; interpolate's scale_factor is `arg scale_factor ints` of
values times 1000 (the format has no float lists).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(9317)  # a seed of its own: other scripts' cases never shift this file's values

G = "linalg"

# float32 sums of products: torch accumulates in float32, lazygrad in double.
TOL32 = (1e-5, 1e-5)


def opt(a, i, k):
    return i[k] if a.get("bias") else None


def padding_arg(a, key="padding", default=0):
    v = a.get(key, default)
    return tuple(v) if isinstance(v, list) else v


def tup(v):
    return tuple(v) if isinstance(v, list) else v


def t_conv(fn):
    return lambda a, i: fn(i[0], i[1], opt(a, i, 2), tup(a.get("stride", 1)), padding_arg(a),
                           tup(a.get("dilation", 1)), a.get("groups", 1))


def t_conv_transpose(fn):
    return lambda a, i: fn(i[0], i[1], opt(a, i, 2), tup(a.get("stride", 1)), tup(a.get("padding", 0)),
                           tup(a.get("output_padding", 0)), a.get("groups", 1), tup(a.get("dilation", 1)))


def t_max_pool(fn):
    return lambda a, i: fn(i[0], tup(a["kernel_size"]), tup(a.get("stride")), tup(a.get("padding", 0)),
                           tup(a.get("dilation", 1)), a.get("ceil_mode", False))


def t_avg_pool1d(a, i):
    return F.avg_pool1d(i[0], tup(a["kernel_size"]), tup(a.get("stride")), tup(a.get("padding", 0)),
                        a.get("ceil_mode", False), a.get("count_include_pad", True))


def t_avg_pool2d(a, i):
    return F.avg_pool2d(i[0], tup(a["kernel_size"]), tup(a.get("stride")), tup(a.get("padding", 0)),
                        a.get("ceil_mode", False), a.get("count_include_pad", True), a.get("divisor_override"))


def t_interpolate(a, i):
    sf = a.get("scale_factor")
    sf = tuple(x / 1000 for x in sf) if sf is not None else None
    if sf is not None and len(sf) == 1:
        sf = sf[0]
    return F.interpolate(i[0], size=tup(a.get("size")), scale_factor=sf, mode=a.get("mode", "nearest"),
                         align_corners=a.get("align_corners"))


register_ops({
    "matmul": lambda a, i: torch.matmul(i[0], i[1]),
    "dot": lambda a, i: torch.dot(i[0], i[1]),
    "outer": lambda a, i: torch.outer(i[0], i[1]),
    "linear": lambda a, i: F.linear(i[0], i[1], opt(a, i, 2)),
    "tril": lambda a, i: torch.tril(i[0], a.get("diagonal", 0)),
    "triu": lambda a, i: torch.triu(i[0], a.get("diagonal", 0)),
    "einsum": lambda a, i: torch.einsum(a["equation"], *i),
    "conv1d": t_conv(F.conv1d),
    "conv2d": t_conv(F.conv2d),
    "conv3d": t_conv(F.conv3d),
    "conv_transpose1d": t_conv_transpose(F.conv_transpose1d),
    "conv_transpose2d": t_conv_transpose(F.conv_transpose2d),
    "max_pool1d": t_max_pool(F.max_pool1d),
    "max_pool2d": t_max_pool(F.max_pool2d),
    "avg_pool1d": t_avg_pool1d,
    "avg_pool2d": t_avg_pool2d,
    "adaptive_avg_pool2d": lambda a, i: F.adaptive_avg_pool2d(i[0], tup(a["output_size"])),
    "interpolate": t_interpolate,
}, non_compute=["tril", "triu"])


def u(dt, shape):
    """Uniform in [-1, 1]: sums of products stay near 1, so float32 rounding stays near 1e-7."""
    return inp(dt, shape, "unit")


def distinct(dt, shape):
    """Distinct multiples of 1/4, shuffled: no pooling window has a tied maximum."""
    n = numel(shape)
    return In(dt, shape, [float(x) for x in (rng.permutation(n) - n // 2) / 4])


def with_values(i, at, values):
    """Input i with some flat positions overwritten (edge values: nan, inf, large)."""
    for k, v in zip(at, values):
        i.values[k] = v
    return i


def case(name, op, args, ins, grad=True, tol=TOL32, **kw):
    float32 = all(i.dtype == "float32" for i in ins if i.dtype in FLOATS)
    add_case(G, name, op, args, ins, tol=tol if float32 else None, grad=grad, **kw)


def matmul_cases():
    case("matmul_2d", "matmul", {}, [u("float32", [3, 4]), u("float32", [4, 5])])
    case("matmul_1d_1d", "matmul", {}, [u("float32", [4]), u("float32", [4])])
    case("matmul_1d_2d", "matmul", {}, [u("float32", [4]), u("float32", [4, 5])])
    case("matmul_2d_1d", "matmul", {}, [u("float32", [3, 4]), u("float32", [4])])
    case("matmul_batch_broadcast", "matmul", {}, [u("float32", [2, 1, 3, 4]), u("float32", [3, 4, 2])])
    case("matmul_1d_3d", "matmul", {}, [u("float32", [4]), u("float32", [2, 4, 3])])
    case("matmul_3d_1d", "matmul", {}, [u("float32", [2, 3, 4]), u("float32", [4])])
    # non-contiguous: a transposed [33, 5] times a sliced [5, 4] (a view of [5, 9])
    case("matmul_transposed_sliced", "matmul", {}, [nc_transpose_t("float32", "unit"), u("float32", [5, 9]).v("slice", 1, 1, None, 2)])
    case("matmul_expanded", "matmul", {}, [nc_expand("float32", "unit"), u("float32", [7, 2])])
    case("matmul_f64", "matmul", {}, [u("float64", [3, 4]), u("float64", [4, 5])])
    case("matmul_int32", "matmul", {}, [inp("int32", [3, 4], "small"), inp("int32", [4, 2], "small")], grad=False)
    case("matmul_bf16", "matmul", {}, [u("bfloat16", [3, 4]), u("bfloat16", [4, 5])], grad=False)
    case("matmul_empty_k", "matmul", {}, [u("float32", [3, 0]), u("float32", [0, 2])])
    case("matmul_empty_batch", "matmul", {}, [u("float32", [0, 3]), u("float32", [3, 2])])
    case("matmul_nan_inf_large", "matmul", {},
         [with_values(u("float32", [3, 4]), [1, 6], [math.nan, math.inf]), with_values(u("float32", [4, 5]), [3, 7], [1e30, -1e30])],
         grad=False)
    case("dot_f32", "dot", {}, [u("float32", [7]), u("float32", [7])])
    case("dot_int64", "dot", {}, [inp("int64", [5], "small"), inp("int64", [5], "small")], grad=False)
    case("outer_f32", "outer", {}, [u("float32", [3]), u("float32", [4])])
    case("outer_int32_f32", "outer", {}, [inp("int32", [3], "small"), u("float32", [4])])
    case("linear_bias", "linear", {"bias": True}, [u("float32", [2, 3, 4]), u("float32", [5, 4]), u("float32", [5])])
    case("linear_no_bias", "linear", {}, [u("float32", [3, 4]), u("float32", [2, 4])])


def triangle_cases():
    case("tril_f32", "tril", {}, [u("float32", [4, 5])])
    case("tril_diag_neg1", "tril", {"diagonal": -1}, [u("float32", [4, 5])])
    case("triu_diag2_batched", "triu", {"diagonal": 2}, [u("float32", [2, 3, 5])])
    case("triu_f32", "triu", {}, [nc_permute("float32")])
    case("tril_nan", "tril", {}, [with_values(u("float32", [3, 3]), [1, 3], [math.nan, math.inf])], grad=False)
    case("tril_int64", "tril", {"diagonal": 1}, [inp("int64", [3, 4])], grad=False)
    case("triu_bool", "triu", {"diagonal": -1}, [inp("bool", [4, 3])], grad=False)


def einsum_cases():
    E = lambda eq: {"equation": eq}  # noqa: E731
    case("einsum_matmul", "einsum", E("ij,jk->ik"), [u("float32", [3, 4]), u("float32", [4, 5])])
    case("einsum_batched_broadcast", "einsum", E("bij,bjk->bik"), [u("float32", [2, 3, 4]), u("float32", [1, 4, 5])])
    case("einsum_trace", "einsum", E("ii->"), [u("float32", [4, 4])])
    case("einsum_trace_implicit", "einsum", E("ii"), [u("float32", [4, 4])])
    case("einsum_diagonal", "einsum", E("ii->i"), [u("float32", [4, 4])])
    case("einsum_transpose", "einsum", E("ij->ji"), [u("float32", [3, 4])])
    case("einsum_output_permutation", "einsum", E("bij,jk->kbi"), [u("float32", [2, 3, 4]), u("float32", [4, 5])])
    case("einsum_ellipsis_implicit", "einsum", E("...ij,...jk"), [u("float32", [2, 3, 4]), u("float32", [1, 4, 2])])
    case("einsum_ellipsis_summed", "einsum", E("...ij->j"), [u("float32", [2, 3, 4])])
    case("einsum_outer", "einsum", E("i,j->ij"), [u("float32", [3]), u("float32", [4])])
    case("einsum_dot_implicit", "einsum", E("ij,ij"), [u("float32", [3, 4]), u("float32", [3, 4])])
    case("einsum_three_operands", "einsum", E("ij,jk,kl->il"), [u("float32", [2, 3]), u("float32", [3, 4]), u("float32", [4, 2])])
    case("einsum_diagonal_of_3d", "einsum", E("iji->j"), [u("float32", [3, 4, 3])])
    case("einsum_uppercase_implicit", "einsum", E("bA,Ab"), [u("float32", [2, 3]), u("float32", [3, 2])])
    case("einsum_noncontiguous", "einsum", E("ij,kj->ik"), [nc_transpose_t("float32", "unit"), u("float32", [2, 5])])


def conv_cases():
    b = {"bias": True}
    case("conv1d_stride_pad", "conv1d", {**b, "stride": 2, "padding": 1},
         [u("float32", [2, 3, 10]), u("float32", [4, 3, 3]), u("float32", [4])])
    case("conv1d_dilation_groups", "conv1d", {"dilation": 2, "groups": 3},
         [u("float32", [1, 6, 9]), u("float32", [3, 2, 3])])
    case("conv1d_same_even_kernel", "conv1d", {"padding": "same"}, [u("float32", [2, 2, 7]), u("float32", [3, 2, 4])])
    case("conv2d_bias", "conv2d", b, [u("float32", [2, 3, 7, 6]), u("float32", [4, 3, 3, 3]), u("float32", [4])])
    case("conv2d_stride2_pad1", "conv2d", {**b, "stride": 2, "padding": 1},
         [u("float32", [2, 3, 7, 6]), u("float32", [4, 3, 3, 3]), u("float32", [4])])
    case("conv2d_dilation_asym", "conv2d", {"stride": [1, 2], "padding": [1, 2], "dilation": [2, 1]},
         [u("float32", [1, 2, 7, 8]), u("float32", [3, 2, 3, 2])])
    case("conv2d_groups", "conv2d", {"groups": 2, "padding": [0, 1]}, [u("float32", [1, 4, 6, 6]), u("float32", [6, 2, 3, 2])])
    case("conv2d_same_even_kernel_dilated", "conv2d", {"padding": "same", "dilation": [1, 2]},
         [u("float32", [1, 2, 6, 7]), u("float32", [3, 2, 2, 4])])
    case("conv2d_valid", "conv2d", {"padding": "valid"}, [u("float32", [1, 2, 5, 5]), u("float32", [2, 2, 2, 2])])
    case("conv2d_unbatched", "conv2d", {"padding": 1}, [u("float32", [3, 5, 4]), u("float32", [2, 3, 3, 3])])
    case("conv2d_noncontiguous", "conv2d", {}, [u("float32", [2, 6, 6, 3]).v("permute", 0, 3, 1, 2), u("float32", [4, 3, 3, 3])])
    case("conv2d_1x1_stride2", "conv2d", {"stride": 2}, [u("float32", [2, 3, 7, 6]), u("float32", [4, 3, 1, 1])])
    case("conv2d_patchify", "conv2d", {**b, "stride": 4},
         [u("float32", [1, 3, 8, 8]), u("float32", [5, 3, 4, 4]), u("float32", [5])])
    case("conv2d_f64", "conv2d", {"stride": 2, "padding": 1}, [u("float64", [2, 3, 7, 6]), u("float64", [4, 3, 3, 3])])
    case("conv2d_bf16", "conv2d", {}, [u("bfloat16", [1, 3, 7, 6]), u("bfloat16", [4, 3, 3, 3])], grad=False)
    case("conv2d_nan_inf", "conv2d", {}, [with_values(u("float32", [1, 2, 5, 5]), [6, 40], [math.nan, math.inf]),
                                           u("float32", [2, 2, 2, 2])], grad=False)
    case("conv2d_empty_batch", "conv2d", {}, [u("float32", [0, 3, 7, 6]), u("float32", [4, 3, 3, 3])])
    case("conv3d_stride_pad", "conv3d", {"stride": [1, 2, 1], "padding": [1, 0, 1]},
         [u("float32", [1, 2, 4, 5, 4]), u("float32", [3, 2, 2, 3, 2])])
    case("conv_transpose1d", "conv_transpose1d", {**b, "stride": 2, "padding": 1, "output_padding": 1},
         [u("float32", [2, 3, 5]), u("float32", [3, 2, 3]), u("float32", [2])])
    case("conv_transpose2d_stride2", "conv_transpose2d", {**b, "stride": 2, "padding": 1, "output_padding": 1},
         [u("float32", [2, 3, 4, 4]), u("float32", [3, 2, 3, 3]), u("float32", [2])])
    case("conv_transpose2d_groups_dilation", "conv_transpose2d",
         {"stride": [2, 3], "padding": [0, 1], "output_padding": [1, 0], "groups": 2, "dilation": [2, 1]},
         [u("float32", [1, 4, 3, 3]), u("float32", [4, 3, 2, 3])])
    case("conv_transpose2d_crop", "conv_transpose2d", {"padding": 3}, [u("float32", [1, 1, 6, 6]), u("float32", [1, 2, 3, 3])])
    case("conv_transpose2d_unbatched", "conv_transpose2d", {}, [u("float32", [2, 3, 4]), u("float32", [2, 3, 2, 2])])


def pool_cases():
    case("max_pool1d", "max_pool1d", {"kernel_size": 3, "stride": 2, "padding": 1}, [distinct("float32", [2, 3, 11])])
    case("max_pool1d_ceil_dilation", "max_pool1d", {"kernel_size": 2, "stride": 3, "dilation": 2, "ceil_mode": True},
         [distinct("float32", [1, 2, 12])])
    case("max_pool2d_disjoint", "max_pool2d", {"kernel_size": 2}, [distinct("float32", [2, 3, 8, 7])])
    case("max_pool2d_overlap_pad", "max_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, [distinct("float32", [2, 3, 8, 7])])
    case("max_pool2d_dilation", "max_pool2d", {"kernel_size": [2, 3], "stride": 1, "dilation": 2}, [distinct("float32", [1, 2, 7, 8])])
    case("max_pool2d_ceil", "max_pool2d", {"kernel_size": 3, "stride": 2, "ceil_mode": True}, [distinct("float32", [1, 2, 8, 7])])
    case("max_pool2d_unbatched", "max_pool2d", {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0]},
         [distinct("float32", [3, 7, 7])])
    case("max_pool2d_noncontiguous", "max_pool2d", {"kernel_size": 2}, [distinct("float32", [2, 8, 7, 3]).v("permute", 0, 3, 1, 2)])
    case("max_pool2d_nan_inf", "max_pool2d", {"kernel_size": 2},
         [with_values(distinct("float32", [1, 1, 4, 4]), [0, 6, 10], [math.nan, -math.inf, math.inf])], grad=False)
    case("avg_pool1d", "avg_pool1d", {"kernel_size": 3, "stride": 2, "padding": 1}, [u("float32", [2, 3, 11])])
    case("avg_pool1d_ceil_exclude_pad", "avg_pool1d",
         {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True, "count_include_pad": False}, [u("float32", [1, 2, 12])])
    case("avg_pool2d_disjoint", "avg_pool2d", {"kernel_size": 2}, [u("float32", [2, 3, 8, 7])])
    case("avg_pool2d_overlap_pad", "avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, [u("float32", [2, 3, 8, 7])])
    case("avg_pool2d_exclude_pad", "avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
         [u("float32", [2, 3, 8, 7])])
    case("avg_pool2d_ceil", "avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
         [u("float32", [1, 2, 8, 7])])
    case("avg_pool2d_divisor_override", "avg_pool2d", {"kernel_size": [2, 3], "stride": [2, 1], "divisor_override": 5},
         [u("float32", [3, 7, 7])])
    case("avg_pool2d_f64", "avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
         [u("float64", [2, 3, 8, 7])])
    case("adaptive_avg_pool2d_divisible", "adaptive_avg_pool2d", {"output_size": [4, 3]}, [u("float32", [2, 3, 8, 6])])
    case("adaptive_avg_pool2d_uneven", "adaptive_avg_pool2d", {"output_size": [3, 4]}, [u("float32", [1, 2, 7, 5])])
    case("adaptive_avg_pool2d_global", "adaptive_avg_pool2d", {"output_size": 1}, [u("float32", [2, 3, 8, 6])])
    case("adaptive_avg_pool2d_unbatched_upsample", "adaptive_avg_pool2d", {"output_size": [5, 3]}, [u("float32", [2, 3, 2])])


def interpolate_cases():
    case("nearest_size", "interpolate", {"size": [8, 4]}, [u("float32", [1, 2, 5, 7])])
    case("nearest_scale2", "interpolate", {"scale_factor": [2000]}, [u("float32", [1, 2, 3, 4])])
    case("nearest_scale_mixed", "interpolate", {"scale_factor": [1500, 700]}, [u("float32", [1, 2, 5, 7])])
    case("nearest_1d_size", "interpolate", {"size": 11}, [u("float32", [2, 3, 4])])
    # torch's float index floor(d * 4/164) differs from the exact rational: the one-hot gather path
    case("nearest_1d_float_index", "interpolate", {"size": 164}, [u("float32", [1, 1, 4])])
    case("nearest_uint8", "interpolate", {"size": [4, 9]}, [inp("uint8", [1, 1, 3, 5])], grad=False)
    # nearest_idx's shortcut: a scale_factor that keeps the size copies (2-D; see the docstring)
    case("nearest_scale_same_size", "interpolate", {"scale_factor": [1200, 1100]}, [u("float32", [1, 1, 3, 5])])
    # float64 uses the float index too: floor(11 * float(26 / 22)) = 12, where the exact ratio gives 13
    case("nearest_f64_float_index", "interpolate", {"size": [2, 22]}, [u("float64", [1, 1, 2, 26])])
    case("linear_1d", "interpolate", {"size": 9, "mode": "linear"}, [u("float32", [2, 3, 4])])
    case("linear_1d_align_corners", "interpolate", {"size": 9, "mode": "linear", "align_corners": True}, [u("float32", [2, 3, 4])])
    case("bilinear_size", "interpolate", {"size": [9, 5], "mode": "bilinear"}, [u("float32", [1, 2, 4, 7])])
    case("bilinear_align_corners", "interpolate", {"size": [9, 5], "mode": "bilinear", "align_corners": True},
         [u("float32", [1, 2, 4, 7])])
    case("bilinear_scale", "interpolate", {"scale_factor": [1700, 600], "mode": "bilinear"}, [u("float32", [1, 2, 4, 7])])
    case("bilinear_downsample", "interpolate", {"size": [3, 2], "mode": "bilinear"}, [u("float32", [2, 1, 7, 5])])
    case("bilinear_f64", "interpolate", {"size": [9, 5], "mode": "bilinear"}, [u("float64", [1, 2, 4, 7])])


def main():
    matmul_cases()
    triangle_cases()
    einsum_cases()
    conv_cases()
    pool_cases()
    interpolate_cases()
    write_and_report()


if __name__ == "__main__":
    main()
