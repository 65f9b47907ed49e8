#!/usr/bin/python3
"""Shared writer of lazygrad's PyTorch-parity fixtures (tests/fixtures/*.txt) and their helpers.

Every fixture generator script imports it (run them with Debian's /usr/bin/python3, which has
PyTorch 1.13 and numpy); the C++ side that reads the files is tests/fixture_harness.h.

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from fixtures_lib import *          # also brings math, np, torch, F

    seed(4321)                           # optional: each script may pick its own seed
    add_case("mygroup", "exp_f32", "exp", {}, [inp("float32", [3, 4])],
             fn=lambda a, i: torch.exp(i[0]), grad=True)
    write_and_report()                   # writes tests/fixtures/mygroup.txt (or argv[1]/mygroup.txt)

Fixture format (one file per group, <outdir>/<group>.txt; plain text, one record per line, tokens
separated by single spaces; lines starting with '#' and blank lines are ignored):

    case <name>                      starts a case; name is [A-Za-z0-9_], unique in the files one
                                     test binary loads (it becomes the gtest name)
    op <op>                          the lazygrad op; the test file's op table maps it to a call
    arg <key> <kind> <tokens...>     an argument of the op; kind is one of
                                       int <i> | float <f> | bool <0|1>  (a Scalar keeps this kind)
                                       ints <i...> (zero or more) | none | dtype <name> | str <word>
                                     (`arg form str <f>` picks the call form: tt = tensor OP tensor,
                                     ts = tensor OP scalar, st = scalar OP tensor, op = the C++
                                     operator, method / method_s = a.method(tensor / scalar); where
                                     also free / free_sx / free_xs = where(c, x, y / s, y / x, s));
                                     the op table is looked up by "<op>.<form>" when a form is given
    in <dtype> [<d0>,<d1>,...] <values...>
                                     an input tensor, made with Tensor::from_vector (from_bytes for
                                     float16/bfloat16) from row-major values; [] is a 0-d tensor
    view <kind> <tokens...>          a view applied to the latest input before the op, in order:
                                       permute <i...> | transpose <a> <b> | slice <dim> <start|none>
                                       <end|none> <step> | flip <i...> | expand <i...> | narrow
                                       <dim> <start> <len> | select <dim> <i> | unsqueeze <d> |
                                       squeeze <d> | reshape <i...> | pad <int|float|bool> <value>
                                       <p...> (torch F.pad order)
    requires_grad <k>                input k (0-based, in 'in' order; floating point) is a leaf whose
                                     gradient is checked. The leaf is the BASE tensor of input k, as
                                     its 'in' line builds it; its 'view' lines are applied after
                                     requires_grad and so are part of the differentiated graph.
    out <dtype> [<shape>] <values...> the expected result (dtype and shape are checked exactly)
    upstream <dtype> [<shape>] <values...>
                                     the upstream gradient g (seeded random; dtype and shape of out);
                                     present when some input requires grad
    grad <k> <dtype> [<shape>] <values...>
                                     d(sum(out * g)) / d(base of input k) from PyTorch autograd; one per
                                     requires_grad line; dtype and shape are those of the 'in' line.
                                     An input that PyTorch finds unused (grad None) gets zeros.
    tol <rtol> <atol>                optional; replaces the per-dtype float tolerance of 'out'
    gradtol <rtol> <atol>            optional; the tolerance of the 'grad' lines (without it: 'tol'
                                     if given, else the per-dtype default of the grad's dtype)
    end                              ends the case

The writer emits a case's lines in the order above (requires_grad after all 'in'/'view' lines,
then out, upstream, grads, tol, gradtol).

Values: bool as 0/1; integers in decimal; float64/float16/bfloat16 as Python's repr of the float64
value (round-trips exactly); float32 as the shortest decimal that round-trips through float32
(parse it with strtof); nan, inf and -inf spelled so.

Half types: torch 1.13's CPU lacks most float16/bfloat16 kernels, so compute ops on them are run
in float32 and rounded to the half type at the end (like lazygrad and PyTorch's CUDA kernels); the
result dtype still comes from PyTorch (a run on the meta device). Gradients of half inputs are
computed the same way: the whole graph in float32, each gradient rounded to its input's dtype.

API (everything below is exported by `from fixtures_lib import *`):
  seed(n)                         reseeds the shared generators (in place: imported `rng` stays valid)
  rng                             the shared numpy Generator every input generator draws from
  In(dtype, shape, values).v(kind, *args)   an input and its views;  D(name)  a dtype-valued arg
  inp(dtype, shape, kind="any")   a seeded-random input; kinds: see vals()
  vals(dtype, n, kind), ints_in(lo, hi, n), round_to(dtype, values), numel(shape)
  nc_permute / nc_slice / nc_flip / nc_expand / nc_pad / nc_compose / nc_narrow_select /
  nc_transpose_t (dtype, kind)    non-contiguous inputs (views of a bigger base); NC_VIEWS lists them
  dtype names: TORCH_DT, DT_NAME, NP_DT, FLOATS, HALVES, SINTS, INTS, UINTS_NP, ALL_T, BITS, SIGNED
  SHAPES, BIG                     the standard shape lists
  base_tensor(i), apply_views(t, views), to_torch(i)   torch tensors of an In
  torch_reference(fn, args, tins, half_in_float32=True)   the forward value (half rule above)
  torch_grads(fn, args, ins, which, upstream, half_in_float32=True)  {k: (dtype, shape, values)}
  register_ops(table, non_compute=())  the default torch functions, looked up by "<op>[.<form>]"
  add_case(group, name, op, args, ins, tol=None, expected=None, fn=None, grad=None,
           gradtol=None, half_in_float32=None, upstream=None, grads=None)
                                  computes out (and the grads) and records the Case in group;
                                  grad=True: every float input, or a list of input indices
  make_case(name, op, ...)        the same Case, not recorded (raises where add_case skips)
  Case                            the recorded case; Case.lines() renders it
  CASES, SKIPPED                  group -> [Case], and the calls PyTorch rejected
  write_groups(outdir=None, generator=None, format_ref=None), write_and_report(outdir=None)
  value/line writers: fmt, shape_str, arg_line, view_line, tensor_line, tol_line
  names: sanitize, unique_name, shape_tag
"""

import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")

SEED = 1234
rng = np.random.default_rng(SEED)
torch.manual_seed(SEED)
_seed = SEED  # the seed in effect, written into the file headers


def seed(n):
    """Reseeds the shared generators. In place, so a `rng` imported by name keeps working."""
    global _seed
    _seed = n
    rng.bit_generator.state = np.random.default_rng(n).bit_generator.state
    torch.manual_seed(n)


TORCH_DT = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}
DT_NAME = {v: k for k, v in TORCH_DT.items()}
NP_DT = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16,
         "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
         "uint64": np.uint64, "float16": np.float16, "float32": np.float32, "float64": np.float64}
FLOATS = ["float32", "float64", "float16", "bfloat16"]
HALVES = ["float16", "bfloat16"]
SINTS = ["int8", "int16", "int32", "int64"]
INTS = ["uint8"] + SINTS
UINTS_NP = ["uint16", "uint32", "uint64"]
ALL_T = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
BITS = {"bool": 1, "uint8": 8, "int8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
        "int64": 64, "uint64": 64}
SIGNED = {"int8", "int16", "int32", "int64"}

# The fixed shape list: scalars, odd sizes 1, 7, 33, 1023, empty tensors, 2-4 dims.
SHAPES = [[7], [33], [3, 4], [2, 3, 5], [1], [], [0], [4, 1, 7], [3, 0, 2], [2, 33]]
BIG = [1023]


class D:
    """A dtype-valued argument."""

    def __init__(self, name):
        self.name = name


class In:
    """An input: a contiguous base tensor (dtype, shape, flat values) and views applied on it."""

    def __init__(self, dtype, shape, values, views=()):
        self.dtype, self.shape, self.values, self.views = dtype, list(shape), list(values), list(views)

    def v(self, *view):
        self.views.append(view)
        return self


# ---------------------------------------------------------------- values

def round_to(dt, vals):
    """Rounds float64 values to what dtype dt holds; returns Python numbers."""
    if dt in TORCH_DT and dt in FLOATS:
        t = torch.tensor(np.asarray(vals, dtype=np.float64)).to(TORCH_DT[dt])
        return [float(x) for x in t.double().tolist()]
    return list(vals)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


INT_RANGE = {  # kind -> bits -> (lo, hi) for signed, hi for unsigned (lo 0)
    "any": {8: 60, 16: 8000, 32: 200_000_000, 64: 10**15},
    "mul": {8: 11, 16: 150, 32: 40000, 64: 2_000_000_000},
    "small": {8: 9, 16: 9, 32: 9, 64: 9},
    "cmp": {8: 3, 16: 3, 32: 3, 64: 3},
    "pos": {8: 50, 16: 50, 32: 50, 64: 50},
}
UINT_RANGE = {"any": {8: 255, 16: 65535, 32: 2**32 - 1, 64: 2**64 - 1},
              "mul": {8: 255, 16: 255, 32: 2**32 - 1, 64: 2**64 - 1},
              "small": {8: 15, 16: 15, 32: 15, 64: 15},
              "cmp": {8: 5, 16: 5, 32: 5, 64: 5},
              "pos": {8: 50, 16: 50, 32: 50, 64: 50}}


def ints_in(lo, hi, n):
    """n Python ints uniform in [lo, hi] (works for the whole uint64 range)."""
    if hi - lo < 2**62:
        return [int(x) + lo for x in rng.integers(0, hi - lo + 1, n, dtype=np.int64)]
    out = []
    for _ in range(n):
        x = int(rng.integers(0, 2**32, dtype=np.int64)) << 32 | int(rng.integers(0, 2**32, dtype=np.int64))
        out.append(lo + x % (hi - lo + 1))
    return out


def vals(dt, n, kind="any"):
    """n values of dtype dt of the given kind (what the op needs: domain, no UB overflow, ...).

    Float kinds: any N(0,3) | pos U(0.05,10) | grid multiples of 1/4 in [-8,8] | nonzero grid without 0 |
    cmp halves in [-2,2] (many ties) | near1 +-U(0.5,1.5) | wide N(0,100) | unit U(-1,1) |
    small U(0.1,3) | exp U(-2,2) | mul N(0,3).  Integer kinds: any | mul | small | cmp | pos | bits
    (the whole range) | nonzero | shl_val / shl_amt / shr_amt | exp | prod."""
    if dt == "bool":
        return [bool(x) for x in rng.integers(0, 2, n)]
    if dt in FLOATS:
        gen = {
            "any": lambda: rng.normal(0, 3, n),
            "pos": lambda: rng.uniform(0.05, 10, n),
            "grid": lambda: rng.integers(-32, 33, n) / 4,
            "nonzero": lambda: np.where((g := rng.integers(-32, 32, n)) >= 0, g + 1, g) / 4,
            "cmp": lambda: rng.integers(-4, 5, n) / 2,
            "near1": lambda: rng.uniform(0.5, 1.5, n) * rng.choice([-1, 1], n),
            "wide": lambda: rng.normal(0, 100, n),
            "unit": lambda: rng.uniform(-1, 1, n),
            "small": lambda: rng.uniform(0.1, 3, n),
            "exp": lambda: rng.uniform(-2, 2, n),
            "mul": lambda: rng.normal(0, 3, n),
        }[kind]
        # 4 decimals keep the fixture files small; the results are still full precision
        return round_to(dt, np.round(gen(), 4))
    bits = BITS[dt]
    signed = dt in SIGNED
    if kind == "bits":
        return ints_in(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, n) if signed else ints_in(0, 2**bits - 1, n)
    if kind == "shl_val":  # values that a shift by <= bits//2 keeps in range
        m = 2 ** (bits - 1 - bits // 2) - 1 if signed else 2 ** (bits - bits // 2) - 1
        return ints_in(-m if signed else 0, m, n)
    if kind == "shl_amt":
        return ints_in(0, bits // 2, n)
    if kind == "shr_amt":
        return ints_in(0, bits - 1, n)
    if kind == "nonzero":
        xs = ints_in(-9 if signed else 1, 9, n)
        return [x if x != 0 else 3 for x in xs]
    if kind == "exp":  # integer exponents for pow (9**2 fits int8, 9**4 int16)
        return ints_in(0, 2 if bits == 8 else 4, n)
    if kind == "prod":  # mostly +-1, a few 2s and 0s: products stay far inside int64
        return [int(x) for x in rng.choice([-1, 1, 1, -1, 1, 2, -1, 0] if signed else [1, 1, 1, 2, 1, 0, 1, 3], n)]
    if kind in ("grid", "near1", "unit", "wide"):
        kind = "small"
    if signed:
        m = INT_RANGE[kind][bits]
        lo, hi = (1, m) if kind == "pos" else (-m, m)
    else:
        lo, hi = (1 if kind == "pos" else 0), UINT_RANGE[kind][bits]
    return ints_in(lo, hi, n)


def inp(dt, shape, kind="any"):
    """A seeded-random contiguous input of dtype dt and the given shape; kinds: see vals()."""
    return In(dt, shape, vals(dt, numel(shape), kind))


def pad_value_for(dt, kind):
    if dt == "bool":
        return True
    if dt in FLOATS:
        return 1.5 if kind in ("pos", "small", "nonzero") else 0.5
    return 3 if kind in ("pos", "nonzero") else 2


# Non-contiguous inputs: each builds a view of a bigger base tensor; the final shape is given.
def nc_permute(dt, kind="any"):  # -> [5, 3, 4]
    return inp(dt, [3, 4, 5], kind).v("permute", 2, 0, 1)


def nc_slice(dt, kind="any"):  # -> [7, 4]
    return inp(dt, [7, 9], kind).v("slice", 1, 1, -1, 2)


def nc_flip(dt, kind="any"):  # -> [5, 6]
    return inp(dt, [5, 6], kind).v("flip", 0, 1)


def nc_expand(dt, kind="any"):  # -> [3, 7]
    return inp(dt, [3, 1], kind).v("expand", 3, 7)


def nc_pad(dt, kind="any"):  # -> [4, 7]
    return inp(dt, [3, 4], kind).v("pad", *scalar_tokens(pad_value_for(dt, kind)), 1, 2, 0, 1)


def nc_compose(dt, kind="any"):  # -> [5, 2, 6]: permute, slice, transpose
    return inp(dt, [4, 5, 6], kind).v("permute", 2, 0, 1).v("slice", 1, 1, None, 2).v("transpose", 0, 2)


def nc_narrow_select(dt, kind="any"):  # -> [7]
    return inp(dt, [4, 33], kind).v("narrow", 1, 3, 7).v("select", 0, -1)


def nc_transpose_t(dt, kind="any"):  # -> [33, 5]
    return inp(dt, [5, 33], kind).v("transpose", 0, 1)


NC_VIEWS = [nc_permute, nc_slice, nc_flip, nc_expand, nc_pad, nc_compose, nc_narrow_select, nc_transpose_t]


def scalar_tokens(v):
    if isinstance(v, bool):
        return ("bool", 1 if v else 0)
    if isinstance(v, int):
        return ("int", v)
    return ("float", v)


def tok_scalar(kind, tok):
    return {"bool": lambda t: bool(int(t)), "int": int, "float": float}[kind](tok)


# ---------------------------------------------------------------- torch side

def t_slice(t, d, s, e, st):
    idx = [slice(None)] * t.dim()
    idx[d] = slice(s, e, st)
    return t[tuple(idx)]


VIEWS_T = {
    "permute": lambda t, *p: t.permute(*p),
    "transpose": lambda t, a, b: t.transpose(a, b),
    "slice": t_slice,
    "flip": lambda t, *d: t.flip(d),
    "expand": lambda t, *s: t.expand(*s),
    "narrow": lambda t, d, s, n: t.narrow(d, s, n),
    "select": lambda t, d, i: t.select(d, i),
    "unsqueeze": lambda t, d: t.unsqueeze(d),
    "squeeze": lambda t, d: t.squeeze(d),
    "reshape": lambda t, *s: t.reshape(s),
    "pad": lambda t, k, v, *p: F.pad(t, p, value=tok_scalar(k, v)),
}


def base_tensor(i):
    """The contiguous base tensor of input i (before its views), exactly the 'in' line's values."""
    dt = TORCH_DT[i.dtype]
    if i.dtype in HALVES:  # via float64, so each value is rounded once (the values already fit)
        t = torch.tensor(i.values, dtype=torch.float64).to(dt)
    else:
        t = torch.tensor(i.values, dtype=dt)
    return t.reshape(i.shape)


def apply_views(t, views):
    for v in views:
        t = VIEWS_T[v[0]](t, *v[1:])
    return t


def to_torch(i):
    """Input i as the op sees it: the base tensor with its views applied."""
    return apply_views(base_tensor(i), i.views)


def flat_values(t):
    t = t.detach().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.double().reshape(-1).tolist()
    return t.reshape(-1).tolist()


def torch_reference(fn, args, ins, half_in_float32=True):
    """fn(args, ins) with the half rule: with half_in_float32 and any float16/bfloat16 input, the op
    runs on float32 copies and its result is rounded to the dtype PyTorch would give (from a meta
    run). Pass half_in_float32=False for ops that only move or select data (exact in any dtype)."""
    if half_in_float32 and any(t.dtype in (torch.float16, torch.bfloat16) for t in ins):
        out_dtype = fn(args, [t.to("meta") for t in ins]).dtype
        up = [t.float() if t.dtype in (torch.float16, torch.bfloat16) else t for t in ins]
        return fn(args, up).to(out_dtype)
    return fn(args, ins)


def torch_grads(fn, args, ins, which, upstream, half_in_float32=True):
    """PyTorch autograd's d(sum(out * upstream)) / d(base of ins[k]) for each k in `which`.

    `ins` are In objects; each leaf is the base tensor (before the input's views), so the views are
    differentiated like the op. `upstream` is (dtype, shape, values) of the upstream gradient.
    Half inputs run in float32 (see the module docstring) and each grad is rounded to the input's
    dtype. Returns {k: (dtype, shape, flat values)}; an input the output does not use gets zeros."""
    bases, tins = [], []
    for k, i in enumerate(ins):
        t = base_tensor(i)
        if half_in_float32 and i.dtype in HALVES:
            t = t.float()
        if k in which:
            t = t.detach().requires_grad_()  # a leaf even when .float() made a copy
        bases.append(t)
        tins.append(apply_views(t, i.views))
    out = fn(args, tins)
    if not out.requires_grad:
        raise ValueError("the output does not depend differentiably on the inputs that require grad")
    up_dt, up_shape, up_vals = upstream
    g = torch.tensor(up_vals, dtype=torch.float64).reshape(up_shape).to(out.dtype)
    grads = torch.autograd.grad(out, [bases[k] for k in which], g, allow_unused=True)
    result = {}
    for k, gr in zip(which, grads):
        dt = TORCH_DT[ins[k].dtype]
        gr = torch.zeros(ins[k].shape, dtype=dt) if gr is None else gr.to(dt)
        result[k] = (ins[k].dtype, list(ins[k].shape), flat_values(gr))
    return result


# ---------------------------------------------------------------- cases

CASES = {}  # group -> [Case]
SKIPPED = []  # "group/name: why" of the calls PyTorch rejected
NAMES = set()
OPS = {}  # "<op>[.<form>]" -> torch function (args, inputs) -> tensor, see register_ops
NON_COMPUTE = set()  # op names (before the '.') whose half inputs are not upcast


def register_ops(table, non_compute=()):
    """Default torch functions for add_case: table maps "<op>[.<form>]" to fn(args, inputs);
    non_compute names the ops that only move data (their half inputs are not run in float32)."""
    OPS.update(table)
    NON_COMPUTE.update(non_compute)


def sanitize(s):
    out = "".join(c if c.isalnum() else "_" for c in s)
    while "__" in out:
        out = out.replace("__", "_")
    return out.strip("_")


def unique_name(name):
    name = sanitize(name)
    if name not in NAMES:
        NAMES.add(name)
        return name
    k = 2
    while f"{name}_{k}" in NAMES:
        k += 1
    NAMES.add(f"{name}_{k}")
    return f"{name}_{k}"


def shape_tag(shape):
    return "s" + ("x".join(str(d) for d in shape) if shape else "scalar")


class Case:
    """One fixture case. out, upstream and each grad are (dtype, shape, flat values); grads maps an
    input index to its gradient; tol and gradtol are (rtol, atol) or None."""

    def __init__(self, name, op, args, ins, out, tol=None, upstream=None, grads=None, gradtol=None):
        self.name, self.op, self.args, self.ins, self.out = name, op, dict(args), list(ins), out
        self.tol, self.upstream, self.grads, self.gradtol = tol, upstream, dict(grads or {}), gradtol

    def lines(self):
        lines = [f"case {self.name}", f"op {self.op}"]
        lines += [arg_line(k, v) for k, v in self.args.items()]
        for i in self.ins:
            lines.append(tensor_line("in", i.dtype, i.shape, i.values))
            lines += [view_line(v) for v in i.views]
        lines += [f"requires_grad {k}" for k in sorted(self.grads)]
        lines.append(tensor_line("out", *self.out))
        if self.grads:
            lines.append(tensor_line("upstream", *self.upstream))
            lines += [tensor_line(f"grad {k}", *self.grads[k]) for k in sorted(self.grads)]
        if self.tol is not None:
            lines.append(tol_line("tol", self.tol))
        if self.gradtol is not None:
            lines.append(tol_line("gradtol", self.gradtol))
        lines.append("end")
        return lines


def grad_inputs(ins, grad):
    """The input indices that require grad: grad=True means every floating-point input."""
    if grad is None or grad is False:
        return []
    which = [k for k, i in enumerate(ins) if i.dtype in FLOATS] if grad is True else sorted(set(grad))
    for k in which:
        if ins[k].dtype not in FLOATS:
            raise ValueError(f"input {k} is {ins[k].dtype}: only floating-point inputs can require grad")
    return which


def make_case(name, op, args=None, ins=(), tol=None, expected=None, fn=None, grad=None, gradtol=None,
              half_in_float32=None, upstream=None, grads=None):
    """Builds a Case without recording it; raises whatever PyTorch raises for a call it rejects.

    The expected output comes from fn(args, torch inputs) (default: the function register_ops gave
    for "<op>[.<form>]"), or is given as expected = (dtype, shape, values). grad=True (every float
    input) or a list of input indices adds requires_grad/upstream/grad lines: the upstream is drawn
    from the shared rng (uniform in [-1, 1], in out's dtype and shape) and the grads come from
    torch_grads; hand-made ones can be given instead as upstream=(dtype, shape, values) and
    grads={k: (dtype, shape, values)}. half_in_float32 defaults to True except for the
    non_compute ops of register_ops."""
    args = dict(args or {})
    key = op + ("." + args["form"] if "form" in args else "")
    if half_in_float32 is None:
        half_in_float32 = fn is not None or key.split(".")[0] not in NON_COMPUTE
    which = grad_inputs(ins, grad)
    if expected is None or (which and grads is None):
        fn = fn or OPS[key]
    if expected is None:
        out = torch_reference(fn, args, [to_torch(i) for i in ins], half_in_float32)
        expected = (DT_NAME[out.dtype], list(out.shape), flat_values(out))
    if which and grads is None:
        if upstream is None:
            dt, shape, _ = expected
            upstream = (dt, list(shape), vals(dt, numel(shape), "unit"))
        grads = torch_grads(fn, args, ins, which, upstream, half_in_float32)
    return Case(sanitize(name), op, args, ins, expected, tol, upstream, grads, gradtol)


def add_case(group, name, op, args=None, ins=(), tol=None, expected=None, **kw):
    """make_case, recorded in `group` under a unique name; returns the Case, or None when PyTorch
    rejects the call (then it is listed in SKIPPED: such calls belong in tests/test_errors.cpp).
    Keyword arguments: those of make_case (fn, grad, gradtol, half_in_float32, upstream, grads)."""
    try:
        case = make_case(name, op, args, ins, tol, expected, **kw)
    except Exception as e:  # torch rejects it: not a parity case
        SKIPPED.append(f"{group}/{name}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
        return None
    case.name = unique_name(name)
    CASES.setdefault(group, []).append(case)
    return case


# ---------------------------------------------------------------- writing

def fmt(dt, v):
    """One value as the format spells it (see the module docstring)."""
    if dt == "bool":
        return "1" if v else "0"
    if dt not in FLOATS:
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dt == "float32":
        return str(np.float32(v))  # numpy prints the shortest string that round-trips float32
    return repr(v)


def shape_str(s):
    return "[" + ",".join(str(d) for d in s) + "]"


def arg_line(k, v):
    if isinstance(v, D):
        return f"arg {k} dtype {v.name}"
    if v is None:
        return f"arg {k} none"
    if isinstance(v, bool):
        return f"arg {k} bool {int(v)}"
    if isinstance(v, int):
        return f"arg {k} int {v}"
    if isinstance(v, float):
        return f"arg {k} float {fmt('float64', v)}"
    if isinstance(v, (list, tuple)):
        return f"arg {k} ints" + "".join(f" {x}" for x in v)
    if isinstance(v, str):
        return f"arg {k} str {v}"
    raise TypeError((k, v))


def view_line(v):
    return "view " + " ".join("none" if x is None else str(int(x) if isinstance(x, bool) else x) for x in v)


def tensor_line(tag, dt, shape, values):
    """'in', 'out', 'upstream' or 'grad <k>': <tag> <dtype> [<shape>] <values...>"""
    return f"{tag} {dt} {shape_str(shape)}" + "".join(" " + fmt(dt, x) for x in values)


def tol_line(tag, tol):
    return f"{tag} {tol[0]:.3g} {tol[1]:.3g}"


def default_outdir():
    """argv[1] if given, else tests/fixtures next to this scripts/ directory."""
    if len(sys.argv) > 1:
        return sys.argv[1]
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def write_groups(outdir=None, generator=None, format_ref=None):
    """Writes <outdir>/<group>.txt for every group recorded so far and returns the number of cases.
    Only those files are (over)written: other scripts' fixtures share the directory."""
    outdir = outdir or default_outdir()
    generator = generator or "scripts/" + os.path.basename(sys.argv[0])
    format_ref = format_ref or "scripts/fixtures_lib.py"
    os.makedirs(outdir, exist_ok=True)
    total = 0
    for group, cases in CASES.items():
        lines = [f"# lazygrad PyTorch-parity fixtures, group '{group}': {len(cases)} cases.",
                 f"# Generated by {generator} (seed {_seed}, torch {torch.__version__}, "
                 f"numpy {np.__version__}); do not edit. The format is described in {format_ref}.", ""]
        for c in cases:
            lines += c.lines()
            lines.append("")
        with open(os.path.join(outdir, f"{group}.txt"), "w") as fh:
            fh.write("\n".join(lines))
        total += len(cases)
    return total


def write_and_report(outdir=None, **kw):
    """write_groups, then a summary on stdout: cases per group and the calls PyTorch rejected."""
    outdir = outdir or default_outdir()
    total = write_groups(outdir, **kw)
    for group, cases in CASES.items():
        print(f"{group:10s} {len(cases):5d} cases ({sum(1 for c in cases if c.grads)} with gradients)")
    print(f"total      {total:5d} cases in {os.path.normpath(outdir)}")
    if SKIPPED:
        print(f"{len(SKIPPED)} cases skipped because PyTorch rejects them:")
        for s in SKIPPED:
            print("  " + s)
    return total
