#!/usr/bin/python3
"""Writes tests/fixtures/indexing.txt: forward values and gradients of the indexing ops (gather,
take_along_dim, index_select, index, scatter, scatter_add, masked_fill, one_hot, repeat,
repeat_interleave, roll, split/chunk/unbind, meshgrid, sort, argsort, topk) against PyTorch, for
tests/test_indexing.cpp. The format and helpers are those of scripts/fixtures_lib.py.

    /usr/bin/python3 scripts/fixtures_indexing.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Each case compiles kernels when the test runs, so the shapes are few and chosen: a plain case, a
broadcast or odd-sized one, a non-contiguous input, an integer/bool dtype, and edge values.
Ops with several results (split, sort, ...) take an argument naming the one to compare (`piece`,
`part`); `pieces` records how many PyTorch returns, which the test checks too.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(3303)  # a seed of its own: other scripts' cases never shift this file's values

G = "indexing"
NAN, INF = float("nan"), float("inf")


# ---------------------------------------------------------------- inputs

def idx(shape, hi, lo=0):
    """int64 indices uniform in [lo, hi)."""
    return In("int64", shape, ints_in(lo, hi - 1, numel(shape)))


def distinct_idx(shape, n, dim):
    """int64 indices in [0, n), distinct along dim (each 1-d slice along dim is part of a
    permutation), so scatters write each target at most once."""
    full = list(shape)
    full[dim] = n
    order = np.argsort(rng.random(full), axis=dim, kind="stable")
    taken = np.take(order, range(shape[dim]), axis=dim)
    return In("int64", shape, [int(v) for v in taken.reshape(-1)])


def distinct(dt, shape, scale=0.25):
    """Values without ties (a shuffled grid), so sort and topk orders are unique."""
    n = numel(shape)
    perm = rng.permutation(n)
    return In(dt, shape, round_to(dt, [(int(p) - n // 2) * scale for p in perm]))


def mask(shape, p_true=0.5):
    return In("bool", shape, [bool(x) for x in rng.random(numel(shape)) < p_true])


# ---------------------------------------------------------------- the reference functions

def src_corner(src, index):
    """src cut to index's shape: the same scatter, but PyTorch 1.13's backward fails when src is
    larger than index ("returned an invalid gradient"), so its reference differentiates this."""
    return src[tuple(slice(0, n) for n in index.shape)]


def t_index(a, i):
    return i[0][(slice(None),) * (a["dim"] % i[0].dim()) + (i[1],)]


def t_roll(a, i):
    return torch.roll(i[0], a["shifts"], a["dims"]) if "dims" in a else torch.roll(i[0], a["shifts"])


def t_split(a, i):
    return torch.split(i[0], a["size"], dim=a["dim"])[a["piece"]]


def t_sort(a, i):
    r = torch.sort(i[0], dim=a["dim"], descending=a["descending"], stable=True)
    return r.values if a["part"] == "values" else r.indices


def t_topk(a, i):
    r = torch.topk(i[0], a["k"], dim=a["dim"], largest=a["largest"], sorted=True)
    return r.values if a["part"] == "values" else r.indices


register_ops({
    "gather": lambda a, i: torch.gather(i[0], a["dim"], i[1]),
    "take_along_dim": lambda a, i: torch.take_along_dim(i[0], i[1], a.get("dim")),
    "index_select": lambda a, i: torch.index_select(i[0], a["dim"], i[1]),
    "index": t_index,
    "scatter.tensor": lambda a, i: i[0].scatter(a["dim"], i[1], i[2]),
    "scatter.scalar": lambda a, i: i[0].scatter(a["dim"], i[1], a["value"]),
    "scatter_add": lambda a, i: i[0].scatter_add(a["dim"], i[1], i[2]),
    "masked_fill.scalar": lambda a, i: i[0].masked_fill(i[1], a["value"]),
    "masked_fill.tensor": lambda a, i: i[0].masked_fill(i[1], i[2]),
    "one_hot": lambda a, i: F.one_hot(i[0], a["num_classes"]),
    "repeat": lambda a, i: i[0].repeat(a["repeats"]),
    "repeat_interleave": lambda a, i: torch.repeat_interleave(i[0], a["repeats"], dim=a["dim"]),
    "roll": t_roll,
    "split": t_split,
    "chunk": lambda a, i: torch.chunk(i[0], a["chunks"], dim=a["dim"])[a["piece"]],
    "unbind": lambda a, i: torch.unbind(i[0], dim=a["dim"])[a["piece"]],
    "meshgrid": lambda a, i: torch.meshgrid(*i, indexing=a["indexing"])[a["piece"]],
    "sort": t_sort,
    "argsort": lambda a, i: torch.argsort(i[0], dim=a["dim"], descending=a["descending"]),
    "topk": t_topk,
}, non_compute=["gather", "take_along_dim", "index_select", "index", "scatter", "masked_fill", "one_hot",
                "repeat", "repeat_interleave", "roll", "split", "chunk", "unbind", "meshgrid", "sort",
                "argsort", "topk"])


def add_pieces(name, op, args, ins, count_fn, **kw):
    """A case of an op with several results: `pieces` is how many PyTorch returns."""
    args = dict(args)
    args["pieces"] = len(count_fn([to_torch(i) for i in ins]))
    return add_case(G, name, op, args, ins, **kw)


def add_both_parts(name, op, args, ins, grad_values=True):
    """sort / topk: one case for the values (with gradients) and one for the indices."""
    add_case(G, name + "_values", op, dict(args, part="values"), ins, grad=grad_values)
    add_case(G, name + "_indices", op, dict(args, part="indices"), ins)


# ---------------------------------------------------------------- cases

def gathers():
    add_case(G, "gather_f32_dim1", "gather", {"dim": 1}, [inp("float32", [3, 5]), idx([3, 4], 5)], grad=[0])
    # index smaller than self outside dim; self rows past the index get no gradient
    add_case(G, "gather_f64_dim0_index_smaller", "gather", {"dim": 0}, [inp("float64", [4, 5]), idx([2, 3], 4)], grad=[0])
    add_case(G, "gather_f32_dim_neg1_longer_index", "gather", {"dim": -1},
             [inp("float32", [2, 3, 4]), idx([2, 2, 6], 4)], grad=[0])
    add_case(G, "gather_f32_permuted_self", "gather", {"dim": 1}, [nc_permute("float32"), idx([5, 3, 2], 3)], grad=[0])
    add_case(G, "gather_f32_nan_inf", "gather", {"dim": 1},
             [In("float32", [2, 4], [NAN, 1.5, INF, -0.0, -INF, 2.0, NAN, 3.0]), In("int64", [2, 3], [1, 2, 0, 3, 0, 1])],
             grad=[0])
    add_case(G, "gather_i32", "gather", {"dim": 1}, [inp("int32", [4, 6]), idx([4, 3], 6)])
    add_case(G, "gather_bool", "gather", {"dim": 0}, [inp("bool", [3, 4]), idx([5, 4], 3)])
    add_case(G, "gather_f16", "gather", {"dim": 1}, [inp("float16", [3, 5]), idx([3, 4], 5)])
    add_case(G, "gather_f32_scalar", "gather", {"dim": 0}, [inp("float32", []), In("int64", [], [0])], grad=[0])
    add_case(G, "gather_f32_scalar_index_1d", "gather", {"dim": -1}, [inp("float32", []), In("int64", [3], [0, 0, 0])],
             grad=[0])
    add_case(G, "gather_f32_empty_index", "gather", {"dim": 1}, [inp("float32", [3, 5]), idx([3, 0], 5)], grad=[0])

    add_case(G, "take_along_dim_f32_bcast_index", "take_along_dim", {"dim": 1},
             [inp("float32", [3, 4]), idx([1, 2], 4)], grad=[0])
    add_case(G, "take_along_dim_f32_bcast_self", "take_along_dim", {"dim": -1},
             [inp("float32", [1, 5]), idx([3, 2], 5)], grad=[0])
    add_case(G, "take_along_dim_f64_flat", "take_along_dim", {"dim": None}, [inp("float64", [3, 4]), idx([5], 12)], grad=[0])
    add_case(G, "take_along_dim_i64_3d", "take_along_dim", {"dim": 0}, [inp("int64", [4, 1, 3]), idx([2, 3, 1], 4)])

    add_case(G, "index_select_f32_dim0_repeats", "index_select", {"dim": 0},
             [inp("float32", [4, 5]), In("int64", [6], [3, 0, 3, 1, 3, 2])], grad=[0])
    add_case(G, "index_select_f32_dim1_sliced", "index_select", {"dim": 1}, [nc_slice("float32"), idx([3], 4)], grad=[0])
    add_case(G, "index_select_i64_int32_index", "index_select", {"dim": -1},
             [inp("int64", [2, 3, 5]), In("int32", [4], [4, 0, 2, 2])])
    add_case(G, "index_select_f32_scalar_index", "index_select", {"dim": 0}, [inp("float32", [7]), In("int64", [], [5])],
             grad=[0])

    add_case(G, "index_f32_dim0_2d_negative", "index", {"dim": 0},
             [inp("float32", [5, 3]), In("int64", [2, 3], [-1, 0, 4, -5, 2, -1])], grad=[0])
    add_case(G, "index_f64_dim1_negative", "index", {"dim": 1},
             [inp("float64", [2, 4, 3]), In("int64", [5], [-4, 3, -1, 0, -2])], grad=[0])
    add_case(G, "index_f32_scalar_index", "index", {"dim": -1}, [inp("float32", [3, 4]), In("int64", [], [-2])], grad=[0])
    add_case(G, "index_bool_dim0", "index", {"dim": 0}, [inp("bool", [4, 3]), In("int64", [3], [3, -4, 1])])


def scatters():
    add_case(G, "scatter_f32_dim1_src_larger", "scatter", {"form": "tensor", "dim": 1},
             [inp("float32", [3, 5]), distinct_idx([2, 3], 5, 1), inp("float32", [3, 4])], grad=[0, 2],
             fn=lambda a, i: i[0].scatter(a["dim"], i[1], src_corner(i[2], i[1])))
    add_case(G, "scatter_f32_flipped_self", "scatter", {"form": "tensor", "dim": -1},
             [nc_flip("float32"), distinct_idx([5, 4], 6, 1), inp("float32", [5, 4])], grad=[0, 2])
    # duplicate targets: the last write wins, as PyTorch's CPU loop does it
    add_case(G, "scatter_i64_duplicates", "scatter", {"form": "tensor", "dim": 1},
             [inp("int64", [2, 4]), In("int64", [2, 5], [1, 3, 1, 1, 0, 2, 2, 0, 3, 2]), inp("int64", [2, 5])])
    add_case(G, "scatter_f32_scalar_value", "scatter", {"form": "scalar", "dim": 1, "value": 2.5},
             [inp("float32", [3, 4]), idx([3, 3], 4)], grad=[0])
    add_case(G, "scatter_i32_scalar_value_truncates", "scatter", {"form": "scalar", "dim": 0, "value": -2.75},
             [inp("int32", [4, 3]), idx([2, 2], 4)])
    add_case(G, "scatter_bool_scalar_value", "scatter", {"form": "scalar", "dim": 0, "value": True},
             [inp("bool", [5]), idx([3], 5)])

    add_case(G, "scatter_add_f32_dim1_duplicates", "scatter_add", {"dim": 1},
             [inp("float32", [3, 5]), idx([3, 6], 5), inp("float32", [3, 6])], grad=[0, 2])
    add_case(G, "scatter_add_f64_dim0_flipped_self", "scatter_add", {"dim": 0},
             [nc_flip("float64"), idx([4, 6], 5), inp("float64", [4, 7])], grad=[0, 2],
             fn=lambda a, i: i[0].scatter_add(a["dim"], i[1], src_corner(i[2], i[1])))
    add_case(G, "scatter_add_i32", "scatter_add", {"dim": -1}, [inp("int32", [2, 3, 4]), idx([2, 3, 5], 4),
                                                               inp("int32", [2, 3, 5])])
    add_case(G, "scatter_add_f32_inf_nan", "scatter_add", {"dim": 0},
             [In("float32", [4], [1.0, INF, NAN, -2.0]), In("int64", [3], [0, 0, 3]), In("float32", [3], [-INF, 1.0, 2.0])],
             grad=[0, 2])

    add_case(G, "masked_fill_f32", "masked_fill", {"form": "scalar", "value": 0.5}, [inp("float32", [3, 4]), mask([3, 4])],
             grad=[0])
    add_case(G, "masked_fill_f32_bcast_mask_neg_inf", "masked_fill", {"form": "scalar", "value": -INF},
             [nc_permute("float32"), mask([4])], grad=[0])
    add_case(G, "masked_fill_f32_mask_broadcasts_self", "masked_fill", {"form": "scalar", "value": NAN},
             [inp("float32", [4]), mask([3, 4])], grad=[0])
    add_case(G, "masked_fill_i64_float_value", "masked_fill", {"form": "scalar", "value": 2.7},
             [inp("int64", [2, 5]), mask([2, 5])])
    add_case(G, "masked_fill_f64_tensor_value", "masked_fill", {"form": "tensor"},
             [inp("float64", [2, 3, 4]), mask([3, 1]), inp("float64", [])], grad=[0, 2])

    add_case(G, "one_hot_infer", "one_hot", {"num_classes": -1}, [In("int64", [6], [2, 0, 5, 2, 1, 0])])
    add_case(G, "one_hot_given_2d", "one_hot", {"num_classes": 4}, [idx([2, 3], 4)])
    add_case(G, "one_hot_scalar", "one_hot", {"num_classes": 3}, [In("int64", [], [2])])


def views():
    add_case(G, "repeat_f32_new_dim", "repeat", {"repeats": [2, 1, 3]}, [inp("float32", [2, 3])], grad=True)
    add_case(G, "repeat_f64_permuted", "repeat", {"repeats": [1, 2, 2]}, [nc_permute("float64")], grad=True)
    add_case(G, "repeat_bool", "repeat", {"repeats": [2, 2]}, [inp("bool", [3])])
    add_case(G, "repeat_f32_scalar", "repeat", {"repeats": [3]}, [inp("float32", [])], grad=True)
    add_case(G, "repeat_f32_zero", "repeat", {"repeats": [0, 2]}, [inp("float32", [2, 3])], grad=True)

    add_case(G, "repeat_interleave_f32_dim1", "repeat_interleave", {"repeats": 2, "dim": 1}, [inp("float32", [2, 3])],
             grad=True)
    add_case(G, "repeat_interleave_i32_flat", "repeat_interleave", {"repeats": 3, "dim": None}, [inp("int32", [2, 3])])
    add_case(G, "repeat_interleave_f32_sliced_dim_neg2", "repeat_interleave", {"repeats": 3, "dim": -2},
             [nc_slice("float32")], grad=True)

    add_case(G, "roll_f32_flat", "roll", {"shifts": 3}, [inp("float32", [7])], grad=True)
    add_case(G, "roll_f32_two_dims", "roll", {"shifts": [1, -5], "dims": [0, 1]}, [inp("float32", [3, 4])], grad=True)
    add_case(G, "roll_f64_3d_flattened", "roll", {"shifts": [-11]}, [inp("float64", [2, 3, 5])], grad=True)
    add_case(G, "roll_f32_flipped_full_turn", "roll", {"shifts": [12, 2], "dims": [1, 0]}, [nc_flip("float32")],
             grad=True)
    add_case(G, "roll_i64_one_dim", "roll", {"shifts": 2, "dims": -1}, [inp("int64", [2, 3, 5])])

    split_count = lambda a: (lambda t: torch.split(t[0], a["size"], dim=a["dim"]))
    for name, args, ins, grad in [
        ("split_f32_size3_last_short", {"size": 3, "dim": 0, "piece": 2}, [inp("float32", [7, 4])], True),
        ("split_f32_sizes_dim1", {"size": [1, 3], "dim": 1, "piece": 1}, [inp("float32", [2, 4])], True),
        ("split_i32_sizes_with_empty", {"size": [2, 0, 3], "dim": -1, "piece": 1}, [inp("int32", [2, 5])], False),
        ("split_f64_transposed", {"size": 2, "dim": 1, "piece": 2}, [nc_transpose_t("float64")], True),
    ]:
        add_pieces(name, "split", args, ins, split_count(args), grad=grad)

    for name, args, ins in [
        ("chunk_f32_3_of_5", {"chunks": 3, "dim": 0, "piece": 1}, [inp("float32", [5, 3])]),
        ("chunk_f32_fewer_pieces", {"chunks": 4, "dim": 1, "piece": 2}, [inp("float32", [2, 5])]),
    ]:
        add_pieces(name, "chunk", args, ins, lambda t, a=args: torch.chunk(t[0], a["chunks"], dim=a["dim"]), grad=True)
    add_pieces("chunk_f32_empty_dim", "chunk", {"chunks": 3, "dim": 1, "piece": 2}, [inp("float32", [3, 0, 2])],
               lambda t: torch.chunk(t[0], 3, dim=1))
    add_pieces("unbind_f32_dim1", "unbind", {"dim": 1, "piece": 2}, [inp("float32", [3, 4])],
               lambda t: torch.unbind(t[0], dim=1), grad=True)
    add_pieces("unbind_bool_dim0", "unbind", {"dim": -3, "piece": 0}, [inp("bool", [2, 3, 5])],
               lambda t: torch.unbind(t[0], dim=-3))

    for name, args, ins, grad in [
        ("meshgrid_ij_second", {"indexing": "ij", "piece": 1}, [inp("float32", [3]), inp("float32", [4])], True),
        ("meshgrid_xy_first", {"indexing": "xy", "piece": 0}, [inp("float32", [3]), inp("float32", [4])], True),
        ("meshgrid_xy_three_scalar", {"indexing": "xy", "piece": 2},
         [inp("float64", [2]), inp("float64", []), inp("float64", [3])], True),
        ("meshgrid_ij_int", {"indexing": "ij", "piece": 0}, [inp("int64", [2]), inp("int64", [5])], False),
    ]:
        add_pieces(name, "meshgrid", args, ins, lambda t, a=args: torch.meshgrid(*t, indexing=a["indexing"]), grad=grad)


def sorting():
    add_both_parts("sort_f32_rows", "sort", {"dim": -1, "descending": False}, [distinct("float32", [5, 7])])
    add_both_parts("sort_f64_desc_dim0", "sort", {"dim": 0, "descending": True}, [distinct("float64", [6, 3])])
    add_both_parts("sort_f32_compose_view", "sort", {"dim": 1, "descending": False}, [nc_compose("float32")])
    # ties keep their index order (PyTorch's stable sort), NaN is the largest, -0.0 ties with 0.0
    edge = In("float32", [10], [2.0, NAN, -0.0, INF, 0.0, -INF, 2.0, NAN, -1.0, 0.0])
    add_both_parts("sort_f32_edges", "sort", {"dim": 0, "descending": False}, [edge])
    add_both_parts("sort_f32_edges_desc", "sort", {"dim": 0, "descending": True}, [edge])
    add_both_parts("sort_f32_ties", "sort", {"dim": 1, "descending": True}, [inp("float32", [3, 8], "cmp")])
    add_both_parts("sort_i32", "sort", {"dim": -1, "descending": False}, [inp("int32", [4, 6], "cmp")], grad_values=False)
    add_both_parts("sort_bool", "sort", {"dim": 0, "descending": False}, [inp("bool", [7])], grad_values=False)
    add_both_parts("sort_f32_scalar", "sort", {"dim": 0, "descending": False}, [inp("float32", [])])
    add_both_parts("sort_f32_empty", "sort", {"dim": 1, "descending": False}, [inp("float32", [3, 0])])
    add_both_parts("sort_f32_1023", "sort", {"dim": 0, "descending": False}, [distinct("float32", [1023], 0.125)])

    add_case(G, "argsort_f32_desc", "argsort", {"dim": 1, "descending": True}, [distinct("float32", [4, 6])])
    add_case(G, "argsort_i64_dim0", "argsort", {"dim": 0, "descending": False}, [distinct("int64", [5, 2], 1)])

    add_both_parts("topk_f32_largest", "topk", {"k": 3, "dim": -1, "largest": True}, [distinct("float32", [4, 9])])
    add_both_parts("topk_f64_smallest_dim0", "topk", {"k": 4, "dim": 0, "largest": False}, [distinct("float64", [6, 5])])
    add_both_parts("topk_f32_nan_inf", "topk", {"k": 3, "dim": 0, "largest": True},
                   [In("float32", [6], [1.0, NAN, -INF, 3.0, INF, -2.0])])
    add_both_parts("topk_f32_k0", "topk", {"k": 0, "dim": 1, "largest": True}, [distinct("float32", [2, 4])])
    add_both_parts("topk_i64_permuted", "topk", {"k": 2, "dim": 1, "largest": True},
                   [distinct("int64", [3, 4, 5], 1).v("permute", 2, 0, 1)], grad_values=False)


def main():
    gathers()
    scatters()
    views()
    sorting()
    write_and_report()


if __name__ == "__main__":
    main()
