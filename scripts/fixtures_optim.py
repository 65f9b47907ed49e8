#!/usr/bin/python3
"""Writes tests/fixtures/optim.txt: PyTorch's optimizers, learning-rate schedulers and gradient
clipping, which tests/test_optim.cpp checks lazygrad::optim against.

Run it with Debian's interpreter (PyTorch 1.13 and numpy):

    /usr/bin/python3 scripts/fixtures_optim.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Seeded, so a rerun writes a byte-identical file.

Format (its own, simpler than fixtures_lib's op cases; one record per line, tokens separated by
single spaces, '#' lines and blank lines ignored; values written by fixtures_lib.fmt):

    case <kind> <name>          kind: optimizer | scheduler | clip
    arg <key> <value>           a hyperparameter: a number (Python's repr), inf, or a word
    tensor <role> <dtype> [<shape>] <values...>
                                optimizer: param<i>, a<i>, c<i> (the loss is
                                sum_i sum(a_i * p_i * p_i + c_i * p_i)) and step<s>_param<i>, the
                                parameter after optimizer step s (1-based);
                                clip: param<i> and grad<i> (the loss sum_i sum(p_i * grad_i) gives
                                these gradients), total (the returned norm), clipped<i>
    values <role> <v...>        scheduler: lr (get_last_lr() after construction and after each of
                                the steps), momentum (SGD's momentum or Adam's beta1, likewise)
    end

Optimizer cases: every step is opt.zero_grad(); loss.backward(); opt.step() (then sched.step() where
a scheduler arg is given: cosine_T_max for CosineAnnealingLR, onecycle_max_lr with
onecycle_total_steps for OneCycleLR). PyTorch's single-tensor code paths (foreach=False). LAMB has
no PyTorch implementation: it is written below in torch ops, as tinygrad writes it (Adam's
bias-corrected moments, trust ratio ||p|| / ||update||, 1 where either norm is 0).
"""

import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures_lib import fmt, seed, rng, default_outdir  # noqa: E402

seed(4242)
LINES = []
COUNT = 0
STEPS = 5          # optimizer steps per case
SCHED_STEPS = 30   # scheduler steps per case


def shape_str(s):
    return "[" + ",".join(str(d) for d in s) + "]"


def tensor_line(role, t):
    dt = {torch.float32: "float32", torch.float64: "float64"}[t.dtype]
    vals = t.detach().reshape(-1).tolist()
    return f"tensor {role} {dt} {shape_str(list(t.shape))}" + "".join(" " + fmt(dt, v) for v in vals)


def arg_value(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return "inf" if v == math.inf else repr(v)
    return str(v)


def begin(kind, name, args):
    global COUNT
    COUNT += 1
    LINES.append(f"case {kind} {name}")
    LINES.extend(f"arg {k} {arg_value(v)}" for k, v in args.items())


def end():
    LINES.append("end")
    LINES.append("")


def draw(shape, dtype, kind):
    """Seeded values with 4 decimals, so the file stays small (results keep full precision)."""
    n = int(np.prod(shape)) if shape else 1
    if kind == "zeros":
        v = np.zeros(n)
    elif kind == "pos":
        v = np.round(rng.uniform(0.2, 1.5, n), 4)
    else:
        v = np.round(rng.normal(0, 1, n), 4)
    return torch.tensor(v, dtype=dtype).reshape(shape)


# ---------------------------------------------------------------- LAMB, written in torch

class LAMB:
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        self.params, self.lr, self.betas, self.eps, self.wd = list(params), lr, betas, eps, weight_decay
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        self.t += 1
        b1, b2 = self.betas
        for i, p in enumerate(self.params):
            g = p.grad
            self.m[i] = self.m[i] * b1 + g * (1 - b1)
            self.v[i] = self.v[i] * b2 + g * g * (1 - b2)
            m_hat = self.m[i] / (1 - b1 ** self.t)
            v_hat = self.v[i] / (1 - b2 ** self.t)
            up = m_hat / (v_hat.sqrt() + self.eps)
            if self.wd != 0:
                up = up + p * self.wd
            r1 = p.square().sum().sqrt()
            r2 = up.square().sum().sqrt()
            r = torch.where(r1 > 0, torch.where(r2 > 0, r1 / r2, torch.ones_like(r1)), torch.ones_like(r1))
            p.sub_(self.lr * r * up)


def make_optimizer(algo, params, hyper):
    if algo == "SGD":
        return torch.optim.SGD(params, foreach=False, **hyper)
    if algo == "Adam":
        return torch.optim.Adam(params, foreach=False, **hyper)
    if algo == "AdamW":
        return torch.optim.AdamW(params, foreach=False, **hyper)
    if algo == "LAMB":
        return LAMB(params, **hyper)
    raise ValueError(algo)


# ---------------------------------------------------------------- optimizer cases

def optimizer_case(name, algo, hyper, shapes=([2, 3], [2, 3]), dtype=torch.float32, zero_param=None, sched=None):
    """hyper: the optimizer's keyword arguments (betas as a pair). sched: extra args naming a scheduler.
    Most cases give both parameters one shape, so their kernels are shared (each distinct kernel is
    a compile in the tests); adam and lamb also have a parameter of another shape."""
    params = [draw(s, dtype, "zeros" if i == zero_param else "normal") for i, s in enumerate(shapes)]
    a = [draw(s, dtype, "pos") for s in shapes]
    c = [draw(s, dtype, "normal") for s in shapes]
    args = {"algo": algo}
    for k, v in hyper.items():
        if k == "betas":
            args["beta1"], args["beta2"] = v
        else:
            args[k] = v
    args.update(sched or {})
    begin("optimizer", name, args)
    for i in range(len(shapes)):
        LINES.append(tensor_line(f"param{i}", params[i]))
        LINES.append(tensor_line(f"a{i}", a[i]))
        LINES.append(tensor_line(f"c{i}", c[i]))
    ps = [p.clone().requires_grad_() for p in params]
    opt = make_optimizer(algo, ps, hyper)
    scheduler = None
    if sched and "cosine_T_max" in sched:
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, sched["cosine_T_max"])
    if sched and "onecycle_max_lr" in sched:
        scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, sched["onecycle_max_lr"], sched["onecycle_total_steps"])
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss = sum((ai * p * p + ci * p).sum() for ai, ci, p in zip(a, c, ps))
        loss.backward()
        opt.step()
        if scheduler is not None:
            scheduler.step()
        for i, p in enumerate(ps):
            LINES.append(tensor_line(f"step{step}_param{i}", p))
    end()


optimizer_case("sgd", "SGD", {"lr": 0.1})
optimizer_case("sgd_momentum", "SGD", {"lr": 0.05, "momentum": 0.9})
optimizer_case("sgd_dampening_weight_decay", "SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.1})
optimizer_case("sgd_nesterov", "SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01, "nesterov": True})
optimizer_case("sgd_maximize", "SGD", {"lr": 0.01, "momentum": 0.5, "maximize": True})
optimizer_case("sgd_onecycle", "SGD", {"lr": 0.1, "momentum": 0.9},
               sched={"onecycle_max_lr": 0.5, "onecycle_total_steps": 5})
optimizer_case("adam", "Adam", {"lr": 0.1}, shapes=([2, 3], [3]))
optimizer_case("adam_weight_decay_amsgrad", "Adam", {"lr": 0.1, "weight_decay": 0.1, "amsgrad": True})
optimizer_case("adam_betas_eps_maximize", "Adam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3, "maximize": True})
optimizer_case("adam_cosine", "Adam", {"lr": 0.1}, sched={"cosine_T_max": 4})
optimizer_case("adam_float64", "Adam", {"lr": 0.1, "weight_decay": 0.05}, shapes=([2, 3],), dtype=torch.float64)
optimizer_case("adamw", "AdamW", {"lr": 0.1})
optimizer_case("adamw_weight_decay_amsgrad", "AdamW", {"lr": 0.1, "weight_decay": 0.2, "amsgrad": True})
optimizer_case("lamb", "LAMB", {"lr": 0.1}, shapes=([2, 3], [3]))
optimizer_case("lamb_weight_decay_zero_param", "LAMB", {"lr": 0.1, "betas": (0.8, 0.95), "weight_decay": 0.1},
               zero_param=1)


# ---------------------------------------------------------------- scheduler cases

def scheduler_case(name, kind, sched_args, algo="SGD", hyper=None, chain=None):
    """chain: a second scheduler (kind, args) made after the first on the same optimizer; both step."""
    hyper = hyper or {"lr": 0.1, "momentum": 0.9}
    args = {"kind": kind, "algo": algo}
    args.update({k: v for k, v in hyper.items() if k != "betas"})
    args.update(sched_args)
    if chain:
        args["chain"] = chain[0]
        args.update({"chain_" + k: v for k, v in chain[1].items()})
    begin("scheduler", name, args)
    opt = make_optimizer(algo, [torch.zeros(1, requires_grad=True)], hyper)
    S = torch.optim.lr_scheduler
    make = {
        "StepLR": lambda a: S.StepLR(opt, a["step_size"], a["gamma"]),
        "MultiStepLR": lambda a: S.MultiStepLR(opt, [int(m) for m in a["milestones"].split(",")], a["gamma"]),
        "ExponentialLR": lambda a: S.ExponentialLR(opt, a["gamma"]),
        "LinearLR": lambda a: S.LinearLR(opt, a["start_factor"], a["end_factor"], a["total_iters"]),
        "CosineAnnealingLR": lambda a: S.CosineAnnealingLR(opt, a["T_max"], a["eta_min"]),
        "OneCycleLR": lambda a: S.OneCycleLR(opt, a["max_lr"], a["total_steps"], pct_start=a["pct_start"],
                                             anneal_strategy=a["anneal_strategy"],
                                             cycle_momentum=a["cycle_momentum"], div_factor=a["div_factor"],
                                             final_div_factor=a["final_div_factor"],
                                             three_phase=a["three_phase"]),
    }
    scheds = [make[kind](sched_args)]
    if chain:
        scheds.append(make[chain[0]](chain[1]))
    group = opt.param_groups[0]
    momentum = (lambda: group["betas"][0]) if "betas" in group else (lambda: group["momentum"])
    lrs, moms = [group["lr"]], [momentum()]
    for _ in range(SCHED_STEPS):
        opt.step()
        for s in scheds:
            s.step()
        lrs.append(group["lr"])
        moms.append(momentum())
    LINES.append("values lr " + " ".join(fmt("float64", v) for v in lrs))
    LINES.append("values momentum " + " ".join(fmt("float64", v) for v in moms))
    end()


scheduler_case("step_lr", "StepLR", {"step_size": 4, "gamma": 0.5})
scheduler_case("multi_step_lr", "MultiStepLR", {"milestones": "3,7,7,20", "gamma": 0.3})
scheduler_case("exponential_lr", "ExponentialLR", {"gamma": 0.9})
scheduler_case("linear_lr", "LinearLR", {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 8})
scheduler_case("linear_lr_decay", "LinearLR", {"start_factor": 1.0, "end_factor": 0.1, "total_iters": 20})
scheduler_case("cosine_annealing_lr", "CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001})
scheduler_case("cosine_annealing_lr_short", "CosineAnnealingLR", {"T_max": 7, "eta_min": 0.0})
onecycle = {"max_lr": 0.5, "total_steps": 30, "pct_start": 0.3, "anneal_strategy": "cos", "cycle_momentum": True,
            "div_factor": 25.0, "final_div_factor": 1e4, "three_phase": False}
scheduler_case("one_cycle_lr", "OneCycleLR", onecycle)
scheduler_case("one_cycle_lr_linear_three_phase_adam", "OneCycleLR",
               dict(onecycle, pct_start=0.25, anneal_strategy="linear", div_factor=10.0, final_div_factor=100.0,
                    three_phase=True),
               algo="Adam", hyper={"lr": 0.1, "betas": (0.9, 0.999)})
scheduler_case("one_cycle_lr_no_momentum", "OneCycleLR", dict(onecycle, total_steps=40, cycle_momentum=False))
scheduler_case("linear_warmup_then_cosine", "LinearLR", {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 5},
               chain=("CosineAnnealingLR", {"T_max": 30, "eta_min": 0.0}))


# ---------------------------------------------------------------- clip_grad_norm_, clip_grad_value_

def clip_case(name, args, shapes=([2, 3], [2, 3])):
    params = [draw(s, torch.float32, "normal") for s in shapes]
    grads = [draw(s, torch.float32, "normal") for s in shapes]
    begin("clip", name, args)
    ps = [p.clone().requires_grad_() for p in params]
    loss = sum((p * g).sum() for p, g in zip(ps, grads))
    loss.backward()
    if "clip_value" in args:
        torch.nn.utils.clip_grad_value_(ps, args["clip_value"])
    else:
        total = torch.nn.utils.clip_grad_norm_(ps, args["max_norm"], args["norm_type"])
        LINES.append(tensor_line("total", total))
    for i, (p, g) in enumerate(zip(params, grads)):
        LINES.append(tensor_line(f"param{i}", p))
        LINES.append(tensor_line(f"grad{i}", g))
        LINES.append(tensor_line(f"clipped{i}", ps[i].grad))
    end()


clip_case("clip_norm2", {"max_norm": 1.0, "norm_type": 2.0})
clip_case("clip_norm2_not_reached", {"max_norm": 100.0, "norm_type": 2.0})
clip_case("clip_norm_inf", {"max_norm": 0.5, "norm_type": math.inf})
clip_case("clip_norm1", {"max_norm": 2.0, "norm_type": 1.0})
clip_case("clip_value", {"clip_value": 0.5})


# ---------------------------------------------------------------- write

os.makedirs(default_outdir(), exist_ok=True)
out = os.path.join(default_outdir(), "optim.txt")
header = [f"# lazygrad optim fixtures: {COUNT} cases.",
          f"# Generated by scripts/fixtures_optim.py (seed 4242, torch {torch.__version__}, "
          f"numpy {np.__version__}); do not edit. The format is described there.", ""]
with open(out, "w") as fh:
    fh.write("\n".join(header + LINES) + "\n")
print(f"optim: {COUNT} cases in {os.path.normpath(out)}")
