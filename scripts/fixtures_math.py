#!/usr/bin/python3
"""Writes tests/fixtures/math.txt: forward values and gradients of the elementwise math ops and the
activations (src/tensor/math.cpp), and gradients of the elementwise ops that existed before autograd
(exp, log, sqrt, pow, ...: their gradients come from autograd's primitive rules, which this checks).
tests/test_math.cpp runs them.

    /usr/bin/python3 scripts/fixtures_math.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Each op gets a handful of cases, not dozens (each distinct shape and dtype is a kernel to compile):
a float32 case with gradients, a float64 case through a non-contiguous view, edge values (0, -0,
tiny, huge, +-inf, NaN) in one small tensor, and where the op accepts them a half and an integer or
bool input. Cases whose name ends in _edge hold the values where a gradient rule is easiest to get
wrong.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import *  # noqa: E402,F401,F403

seed(3003)  # a seed of its own: other scripts' cases never shift this file's values

G = "math"
NAN, INF = float("nan"), float("inf")

# Edge values shared by most unary cases: signed zeros, tiny and huge magnitudes, both infinities, NaN.
EDGE = [0.0, -0.0, 1e-8, -1e-8, 0.5, -0.5, 3.0, -3.0, 20.0, -20.0, 100.0, -100.0, INF, -INF, NAN]


def edge(dt, values=EDGE):
    return In(dt, [len(values)], round_to(dt, values))


def clamp_s(a, i):
    return torch.clamp(i[0], a.get("min"), a.get("max"))


def clamp_t(a, i):
    k = 1
    lo = hi = None
    if a["bounds"] in ("both", "min"):
        lo, k = i[k], k + 1
    if a["bounds"] in ("both", "max"):
        hi = i[k]
    return torch.clamp(i[0], lo, hi)


def nan_to_num(a, i):
    return torch.nan_to_num(i[0], nan=a.get("nan", 0.0), posinf=a.get("posinf"), neginf=a.get("neginf"))


register_ops({
    # existing ops: their gradients come from autograd's primitive rules
    "exp": lambda a, i: torch.exp(i[0]),
    "log": lambda a, i: torch.log(i[0]),
    "exp2": lambda a, i: torch.exp2(i[0]),
    "log2": lambda a, i: torch.log2(i[0]),
    "sqrt": lambda a, i: torch.sqrt(i[0]),
    "sin": lambda a, i: torch.sin(i[0]),
    "cos": lambda a, i: torch.cos(i[0]),
    "abs": lambda a, i: torch.abs(i[0]),
    "reciprocal": lambda a, i: torch.reciprocal(i[0]),
    "relu": lambda a, i: F.relu(i[0]),
    "floor": lambda a, i: torch.floor(i[0]),
    "ceil": lambda a, i: torch.ceil(i[0]),
    "trunc": lambda a, i: torch.trunc(i[0]),
    "maximum": lambda a, i: torch.maximum(i[0], i[1]),
    "minimum": lambda a, i: torch.minimum(i[0], i[1]),
    "pow.tt": lambda a, i: torch.pow(i[0], i[1]),
    "pow.ts": lambda a, i: torch.pow(i[0], a["exponent"]),
    # math
    "rsqrt": lambda a, i: torch.rsqrt(i[0]),
    "tan": lambda a, i: torch.tan(i[0]),
    "tanh": lambda a, i: torch.tanh(i[0]),
    "sigmoid": lambda a, i: torch.sigmoid(i[0]),
    "expm1": lambda a, i: torch.expm1(i[0]),
    "log1p": lambda a, i: torch.log1p(i[0]),
    "erf": lambda a, i: torch.erf(i[0]),
    "erfc": lambda a, i: torch.erfc(i[0]),
    "sign": lambda a, i: torch.sign(i[0]),
    "square": lambda a, i: torch.square(i[0]),
    "round": lambda a, i: torch.round(i[0]),
    "clamp.s": clamp_s,
    "clamp.t": clamp_t,
    "lerp.s": lambda a, i: torch.lerp(i[0], i[1], a["weight"]),
    "lerp.t": lambda a, i: torch.lerp(i[0], i[1], i[2]),
    "isnan": lambda a, i: torch.isnan(i[0]),
    "isinf": lambda a, i: torch.isinf(i[0]),
    "nan_to_num": nan_to_num,
    # activations
    "relu6": lambda a, i: F.relu6(i[0]),
    "hardtanh": lambda a, i: F.hardtanh(i[0], a.get("min_val", -1.0), a.get("max_val", 1.0)),
    "leaky_relu": lambda a, i: F.leaky_relu(i[0], a.get("negative_slope", 0.01)),
    "elu": lambda a, i: F.elu(i[0], a.get("alpha", 1.0)),
    "selu": lambda a, i: F.selu(i[0]),
    "gelu": lambda a, i: F.gelu(i[0], approximate=a.get("approximate", "none")),
    "silu": lambda a, i: F.silu(i[0]),
    "mish": lambda a, i: F.mish(i[0]),
    "softplus": lambda a, i: F.softplus(i[0], a.get("beta", 1.0), a.get("threshold", 20.0)),
    "softsign": lambda a, i: F.softsign(i[0]),
    "hardswish": lambda a, i: F.hardswish(i[0]),
    "hardsigmoid": lambda a, i: F.hardsigmoid(i[0]),
})


def unary(op, kind="any", args=None, edge_values=EDGE, half=False, ints=(), f64_view=nc_permute, edge_grad=True,
          f64_gradtol=None):
    """The standard set of a unary op: float32 [3, 4] and float64 through a view, with gradients;
    the edge values with gradients (edge_grad="finite": values only, and gradients at the finite
    ones); optionally a float16 input (a few ops suffice to check half handling); integer/bool inputs."""
    args = args or {}
    tag = "_".join(f"{k}{v}" for k, v in args.items() if k != "form")
    name = op + ("_" + tag if tag else "")
    add_case(G, f"{name}_f32", op, args, [inp("float32", [3, 4], kind)], grad=True)
    add_case(G, f"{name}_f64_view", op, args, [f64_view("float64", kind)], grad=True, gradtol=f64_gradtol)
    if edge_values and edge_grad == "finite":
        add_case(G, f"{name}_f32_edge", op, args, [edge("float32", edge_values)])
        finite = [v for v in edge_values if math.isfinite(v)]
        add_case(G, f"{name}_f32_edge_finite", op, args, [edge("float32", finite)], grad=True)
    elif edge_values:
        add_case(G, f"{name}_f32_edge", op, args, [edge("float32", edge_values)], grad=edge_grad)
    if half:
        add_case(G, f"{name}_f16", op, args, [inp("float16", [7], kind)], grad=True)
    for dt in ints:
        add_case(G, f"{name}_{dt}", op, args, [inp(dt, [7], "small" if dt != "bool" else "any")])


def existing_ops():
    unary("exp", "exp", edge_values=[-INF, -100.0, -1.0, 0.0, 1.0, 88.0, 89.0, INF, NAN])
    unary("log", "pos", edge_values=[0.0, -0.0, -1.0, 1e-30, 1.0, 1e30, INF, -INF, NAN])
    unary("exp2", "exp", edge_values=None)
    unary("log2", "pos", edge_values=None)
    unary("sqrt", "pos", edge_values=[0.0, -0.0, -1.0, 1e-30, 4.0, 1e30, INF, NAN])
    unary("sin", "any", edge_values=[0.0, 1e4, -1e4, INF, NAN])
    unary("cos", "any", edge_values=[0.0, 1e4, -1e4, INF, NAN])
    unary("abs", "grid", edge_values=[0.0, -0.0, -2.0, 2.0, INF, -INF, NAN])
    unary("reciprocal", "nonzero", edge_values=[0.0, -0.0, 1e-30, -4.0, INF, -INF, NAN])
    unary("relu", "grid", edge_values=[0.0, -0.0, -1.0, 1.0, INF, -INF, NAN])
    for op in ("floor", "ceil", "trunc"):
        unary(op, "any", edge_values=None)
        # past 2^23 every float32 is an integer: PyTorch's gradient is still 0 there
        add_case(G, f"{op}_f32_edge", op, {}, [edge("float32", [-2.5, 0.5, 1e10, -1e10, INF, NAN])], grad=True)
    for op in ("maximum", "minimum"):
        # halves in [-2, 2]: many ties, where PyTorch splits the gradient in two
        add_case(G, f"{op}_f32_ties", op, {}, [inp("float32", [3, 4], "cmp"), inp("float32", [3, 4], "cmp")], grad=True)
        add_case(G, f"{op}_f64_bcast_view", op, {}, [nc_slice("float64", "cmp"), inp("float64", [4], "cmp")], grad=True)
        add_case(G, f"{op}_f32_edge", op, {},
                 [edge("float32", [NAN, 1.0, INF, -INF, 0.0]), edge("float32", [1.0, NAN, INF, 2.0, -0.0])], grad=True)
    tt = {"form": "tt"}
    add_case(G, "pow_f32_pos_base", "pow", tt, [inp("float32", [3, 4], "pos"), inp("float32", [3, 4], "exp")], grad=True)
    add_case(G, "pow_f64_bcast_view", "pow", tt, [nc_permute("float64", "pos"), inp("float64", [4], "exp")], grad=True)
    # negative bases with integer exponents, zero bases, x ** 0, 1 ** y: values only, since the
    # gradients at x = 0 and of y at a negative base differ (docs/ops_semantics.md)
    add_case(G, "pow_f32_edge", "pow", tt,
             [edge("float32", [-2.0, -2.0, 0.0, 0.0, 0.0, 3.0, -1.5, 1.0, 1.0]),
              edge("float32", [3.0, 2.0, 2.0, 0.5, 0.0, 0.0, 2.0, NAN, 2.5])])
    # x ** 0 and 1 ** y at regular points: PyTorch's gradients (g * log x for y, y * g for x)
    add_case(G, "pow_f32_zero_exp_unit_base", "pow", tt,
             [edge("float32", [3.0, 0.5, 1.0, 1.0, 2.0]), edge("float32", [0.0, 0.0, 2.5, -1.0, 1.0])], grad=True)
    for e in (2, 3, 0.5, -1, 2.5):
        add_case(G, f"pow_f32_scalar_{e}", "pow", {"form": "ts", "exponent": e}, [inp("float32", [3, 4], "pos")], grad=True)
    add_case(G, "pow_f32_scalar_2_edge", "pow", {"form": "ts", "exponent": 2},
             [edge("float32", [0.0, -0.0, -3.0, 1e30, INF, NAN])], grad=True)
    add_case(G, "pow_f32_scalar_2_5_edge", "pow", {"form": "ts", "exponent": 2.5},
             [edge("float32", [0.0, -1.0, 4.0, INF, NAN])])


def math_ops():
    unary("rsqrt", "pos", edge_values=[0.0, -0.0, -1.0, 1e-30, 4.0, 1e30, INF, NAN], ints=("int32",))
    unary("tan", "exp", edge_values=[0.0, -0.0, 1.5707963, -1.5707963, 1e4, 1e8, INF, NAN])
    unary("tanh", "any", half=True, ints=("int32",))
    unary("sigmoid", "any", half=True, ints=("bool",))
    unary("expm1", "any", edge_values=EDGE + [1e-30, 88.0, 89.0, -40.0, -41.0])
    unary("log1p", "pos", edge_values=[0.0, -0.0, 1e-8, -1e-8, -0.5, -1.0, -2.0, 1e30, INF, NAN])
    add_case(G, "log1p_f32_near0", "log1p", {}, [inp("float32", [12], "unit")], grad=True)
    unary("erf", "any", edge_values=EDGE + [1.0, -1.0, 8.0, -8.0, 0.9999999], half=True, ints=("int64",))
    unary("erfc", "any", edge_values=EDGE + [1.0, -1.0, 8.0, -8.0, 9.0, 0.9999999])
    add_case(G, "erf_f64_wide", "erf", {}, [inp("float64", [33], "wide")], grad=True)
    add_case(G, "erfc_f64_tail", "erfc", {}, [In("float64", [12], [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.9, 8.0, 10.0, 15.0, 26.0, 27.5])],
             grad=True)
    unary("sign", "grid", ints=("int8", "uint8", "bool"))
    unary("square", "any", edge_values=[0.0, -0.0, 1e30, INF, -INF, NAN], ints=("int16", "uint8", "bool"))
    # halves in the grid input are ties: round half to even
    unary("round", "grid",
          edge_values=[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.3, 8388609.0, 1e30, INF, -INF, NAN],
          ints=("int32",))
    add_case(G, "round_f64_edge", "round", {},
             [edge("float64", [0.5, 2.5, -2.5, 0.49999999999999994, 4503599627370497.0, 1e300, -0.3, NAN])], grad=True)
    for dt in ("float32", "int64", "bool"):
        add_case(G, f"isnan_{dt}", "isnan", {}, [edge(dt, EDGE) if dt == "float32" else inp(dt, [7])])
        add_case(G, f"isinf_{dt}", "isinf", {}, [edge(dt, EDGE) if dt == "float32" else inp(dt, [7])])
    add_case(G, "isnan_f16", "isnan", {}, [edge("float16", [0.0, INF, NAN, 70000.0])])
    add_case(G, "isinf_f16", "isinf", {}, [edge("float16", [0.0, INF, NAN, 70000.0])])
    ntn_edge = [0.0, 1.5, -2.0, INF, -INF, NAN, 1e30]
    # the default replacements are the input dtype's own largest values, so halves run as halves
    for dt in ("float32", "float64", "float16", "bfloat16"):
        add_case(G, f"nan_to_num_{dt}_edge", "nan_to_num", {}, [edge(dt, ntn_edge)], grad=True, half_in_float32=False)
    add_case(G, "nan_to_num_f32_values_edge", "nan_to_num", {"nan": 1.5, "posinf": 7.0, "neginf": -8.0},
             [edge("float32", ntn_edge)], grad=True)
    add_case(G, "nan_to_num_f16_posinf_overflow", "nan_to_num", {"posinf": 1e10}, [edge("float16", ntn_edge)],
             half_in_float32=False)
    add_case(G, "nan_to_num_int32", "nan_to_num", {}, [inp("int32", [7])])
    clamp_ops()
    lerp_ops()


def clamp_ops():
    s = {"form": "s"}
    # grid values (multiples of 1/4) land on the bounds, where PyTorch's gradient is 1
    add_case(G, "clamp_f32_both", "clamp", {**s, "min": -1.0, "max": 1.5}, [inp("float32", [3, 4], "grid")], grad=True)
    add_case(G, "clamp_f32_min", "clamp", {**s, "min": -0.5}, [inp("float32", [3, 4], "grid")], grad=True)
    add_case(G, "clamp_f64_max_view", "clamp", {**s, "max": 0.25}, [nc_permute("float64", "grid")], grad=True)
    add_case(G, "clamp_f32_min_above_max", "clamp", {**s, "min": 2.0, "max": 1.0}, [edge("float32", [-5.0, 1.5, 5.0, NAN])],
             grad=True)
    add_case(G, "clamp_f32_edge", "clamp", {**s, "min": -1.0, "max": 1.0}, [edge("float32")], grad=True)
    add_case(G, "clamp_f16", "clamp", {**s, "min": -1.0, "max": 1.5}, [inp("float16", [7], "grid")], grad=True)
    add_case(G, "clamp_int32", "clamp", {**s, "min": -3, "max": 4}, [inp("int32", [7], "small")])
    add_case(G, "clamp_int64_float_bound", "clamp", {**s, "min": 1.5}, [inp("int64", [7], "small")])
    add_case(G, "clamp_bool", "clamp", {**s, "min": 0, "max": 1}, [inp("bool", [7])])
    t = {"form": "t"}
    # tensor bounds: broadcast, with gradients for the input and both bounds
    add_case(G, "clamp_f32_tensor_both_bcast", "clamp", {**t, "bounds": "both"},
             [inp("float32", [3, 4], "grid"), inp("float32", [4], "grid"), inp("float32", [3, 1], "grid")], grad=True)
    add_case(G, "clamp_f64_tensor_min_view", "clamp", {**t, "bounds": "min"},
             [nc_slice("float64", "grid"), inp("float64", [7, 1], "grid")], grad=True)
    # NaN in the input or in a bound gives NaN and no gradient; lo == hi above x gives nobody one
    add_case(G, "clamp_f32_tensor_edge", "clamp", {**t, "bounds": "both"},
             [edge("float32", [NAN, 0.5, 0.5, 2.0, -3.0, 1.0, 5.0, 0.0]),
              edge("float32", [0.0, NAN, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0]),
              edge("float32", [1.0, 1.0, NAN, 1.0, 1.0, 1.0, 1.0, 1.0])], grad=True)
    add_case(G, "clamp_int8_tensor_int64_bound", "clamp", {**t, "bounds": "min"},
             [inp("int8", [7], "small"), inp("int64", [7], "small")])


def lerp_ops():
    for w in (0.3, 0.7):  # both of PyTorch's formulas
        add_case(G, f"lerp_f32_scalar_{w}", "lerp", {"form": "s", "weight": w},
                 [inp("float32", [3, 4]), inp("float32", [3, 4])], grad=True)
    add_case(G, "lerp_f64_scalar_bcast_view", "lerp", {"form": "s", "weight": -0.25},
             [nc_permute("float64"), inp("float64", [4])], grad=True)
    add_case(G, "lerp_f32_tensor_weight_bcast", "lerp", {"form": "t"},
             [inp("float32", [3, 4]), inp("float32", [4]), In("float32", [3, 1], [-0.5, 0.25, 1.5])], grad=True)
    add_case(G, "lerp_f16_scalar", "lerp", {"form": "s", "weight": 0.6}, [inp("float16", [7]), inp("float16", [7])], grad=True)
    add_case(G, "lerp_f32_edge", "lerp", {"form": "t"},
             [edge("float32", [0.0, INF, 1.0, NAN, 1e30]), edge("float32", [1.0, 1.0, INF, 2.0, -1e30]),
              edge("float32", [0.5, 0.0, 0.0, 0.5, 0.5])], grad=True)


def activations():
    grid_edge = [0.0, -0.0, -1.0, 1.0, 6.0, -3.0, 3.0, 7.0, INF, -INF, NAN]
    unary("relu6", "grid", edge_values=grid_edge, ints=("int32", "uint8"))
    add_case(G, "relu6_f32_wide", "relu6", {}, [inp("float32", [3, 4], "wide")], grad=True)
    unary("hardtanh", "grid", edge_values=grid_edge, ints=("int64",))
    add_case(G, "hardtanh_f32_limits", "hardtanh", {"min_val": -2.0, "max_val": 3.5}, [inp("float32", [3, 4], "grid")], grad=True)
    add_case(G, "hardtanh_f32_min_above_max", "hardtanh", {"min_val": 2.0, "max_val": 1.0},
             [edge("float32", [-5.0, 1.5, 5.0, NAN])], grad=True)
    add_case(G, "hardtanh_uint8_limits", "hardtanh", {"min_val": 2.0, "max_val": 7.0}, [inp("uint8", [7], "small")])
    unary("leaky_relu", "grid", edge_values=grid_edge)
    add_case(G, "leaky_relu_f32_slope", "leaky_relu", {"negative_slope": 0.2}, [inp("float32", [3, 4], "grid")], grad=True)
    unary("elu", "any")
    add_case(G, "elu_f32_alpha", "elu", {"alpha": 0.5}, [inp("float32", [3, 4], "grid")], grad=True)
    unary("selu", "any")
    add_case(G, "selu_f32_grid", "selu", {}, [inp("float32", [3, 4], "grid")], grad=True)
    # at +-inf PyTorch's gelu and mish gradients are NaN (inf * 0 in its formula); lazygrad's are
    # the limits 1 and 0, so the infinities are checked for values only
    unary("gelu", "any", edge_grad="finite", half=True)
    unary("gelu", "any", args={"approximate": "tanh"}, edge_grad="finite")
    unary("silu", "any")
    unary("mish", "any", edge_grad="finite")
    unary("softplus", "any")
    add_case(G, "softplus_f32_beta_threshold", "softplus", {"beta": 2.0, "threshold": 5.0}, [inp("float32", [3, 4], "wide")],
             grad=True)
    unary("softsign", "any", ints=("int32",))
    unary("hardswish", "grid", edge_values=grid_edge)
    # PyTorch's float64 hardsigmoid gradient is 1.0f / 6.0f, a float32 constant: 3e-8 relative off
    unary("hardsigmoid", "grid", edge_values=grid_edge, f64_gradtol=(1e-7, 1e-12))


def main():
    existing_ops()
    math_ops()
    activations()
    write_and_report()


if __name__ == "__main__":
    main()
