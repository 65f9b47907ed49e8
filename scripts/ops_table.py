#!/usr/bin/python3
"""Writes docs/ops.md: one row per name of the Tensor API, with what tinygrad, PyTorch and lazygrad
each have and the differences. It reads the names rather than trusting a hand-kept list:

- tinygrad's names: docs/api/tinygrad.tsv (tinygrad's Tensor methods with their signatures, read
  from tinygrad/tensor.py at the commits its header names; nn, nn.state, nn.datasets and helpers).
- PyTorch's names in scope: docs/api/pytorch.txt (what docs/ops.md has ever claimed and what issue 16
  named); whether each is `torch.Tensor.x`, `torch.x` or `F.x` is read from the installed PyTorch.
- lazygrad's: the Python bindings themselves (`lazygrad.Tensor`, the `lazygrad` module,
  `lazygrad.nn.functional`, `lazygrad.nn`, ...), imported from the build tree, and the C++
  declarations in include/lazygrad/tensor.h.
- The differences: docs/api/notes.tsv (`name<TAB>text`). A name lazygrad lacks must have a note
  `missing: <reason>` there; any other missing name fails --check. So must a tinygrad argument
  name lazygrad's method does not take (read from the bound signature): the note then says why,
  with `keywords:` in it.

    PYTHONPATH=build/python /usr/bin/python3 scripts/ops_table.py           # writes docs/ops.md
    PYTHONPATH=build/python /usr/bin/python3 scripts/ops_table.py --check   # CTest: ops_table

--check fails when docs/ops.md is not what the script writes now (run it without --check and
commit the result), or when a name tinygrad or PyTorch has is missing from lazygrad without a
reason. docs/ops_semantics.md holds the prose: how each group of ops is built and tested.
"""

import argparse
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "docs", "api")

# Python operators and the C++ operator each maps to.
CPP_OPERATORS = {
    "__add__": "+", "__radd__": "+", "__iadd__": "+=", "__sub__": "-", "__rsub__": "-", "__isub__": "-=",
    "__mul__": "*", "__rmul__": "*", "__imul__": "*=", "__truediv__": "/", "__rtruediv__": "/",
    "__itruediv__": "/=", "__neg__": "unary -", "__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=",
    "__gt__": ">", "__ge__": ">=", "__xor__": "^", "__rxor__": "^", "__ixor__": "^=", "__and__": "&",
    "__or__": "|", "__invert__": "~", "__lshift__": "<<", "__rshift__": ">>", "__mod__": "%",
    "__floordiv__": "floor_divide", "__pow__": "pow", "__rpow__": "pow", "__matmul__": "matmul",
    "__rmatmul__": "matmul", "__getitem__": "index/slice", "__repr__": "operator<<",
}


def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            rows.append(line.split("\t"))
    return rows


def tinygrad_names():
    """{group: {name: signature}} from docs/api/tinygrad.tsv, and its header lines (the commits)."""
    groups, header = {}, []
    with open(os.path.join(API, "tinygrad.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("# source") or line.startswith("# tinygrad"):
                header.append(line[2:].strip())
    for row in read_tsv(os.path.join(API, "tinygrad.tsv")):
        name, kind = row[0], row[1]
        sig = row[2] if len(row) > 2 else ""
        if kind in ("method", "property", "staticmethod", "classmethod", "dunder"):
            group = "Tensor"
        elif kind.startswith("nn"):
            group = kind if kind != "nn-class" else "nn"
        elif kind == "helpers":
            group = "helpers"
        else:
            continue
        groups.setdefault(group, {})[name] = sig
    return groups, header


def pytorch_names():
    names = []
    for row in read_tsv(os.path.join(API, "pytorch.txt")):
        names.append(row[0].strip())
    return names


def notes():
    out = {}
    for row in read_tsv(os.path.join(API, "notes.tsv")):
        out[row[0]] = row[1] if len(row) > 1 else ""
    return out


def cpp_names():
    """Identifiers declared as functions in include/lazygrad/tensor.h (methods and free functions)."""
    text = open(os.path.join(ROOT, "include", "lazygrad", "tensor.h"), encoding="utf-8").read()
    text = re.sub(r"//[^\n]*", "", text)
    return set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(", text))


def signature_params(sig):
    """[(name, has_default, starred)] of a signature string "(self, axis=None, *lst, **kw)"."""
    sig = sig.strip()
    if not sig.startswith("("):
        return None
    inner, parts, depth, cur = sig[1:sig.rfind(")")], [], 0, ""
    for ch in inner:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for part in (p.strip() for p in parts):
        if part and part not in ("self", "*", "/"):
            out.append((part.split("=")[0].strip().lstrip("*"), "=" in part, part.startswith("*")))
    return out


def bound_params(fn):
    """The keyword names a lazygrad callable takes, and whether it takes *args / **kwargs: from
    inspect for Python functions, from the docstring pybind11 writes for bound ones."""
    try:
        sig = inspect.signature(fn)
        kinds = [p.kind for p in sig.parameters.values()]
        names = {p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        return names, inspect.Parameter.VAR_POSITIONAL in kinds, inspect.Parameter.VAR_KEYWORD in kinds
    except (ValueError, TypeError):
        pass
    names, varargs, varkw = set(), False, False
    for line in (getattr(fn, "__doc__", "") or "").splitlines():
        m = re.match(r"\s*(?:\d+\. )?\w+\((.*)\)\s*->", line)
        if not m:
            continue
        for part in re.split(r",\s*(?![^\[]*\])", m.group(1)):
            part = part.strip()
            varargs |= part.startswith("*args")
            varkw |= part.startswith("**")
            if not part.startswith("*"):
                names.add(part.split(":")[0].strip())
    return names - {"self"}, varargs, varkw


def missing_keywords(name, tinygrad_sig):
    """tinygrad's argument names that lazygrad's Tensor.<name> does not take."""
    import lazygrad
    params = signature_params(tinygrad_sig or "")
    if not params or name.startswith("__") or not hasattr(lazygrad.Tensor, name):  # operators: positional
        return []
    names, varargs, varkw = bound_params(getattr(lazygrad.Tensor, name))
    if varkw:
        return []
    # A required positional tinygrad passes by position is matched by *args too.
    return [p for p, has_default, star in params
            if not star and not p.startswith("_") and p not in names and (has_default or not varargs)]


def torch_spelling(name):
    import torch
    import torch.nn.functional as F
    spelled = []
    if name.startswith("__"):
        return f"`Tensor.{name}`" if hasattr(torch.Tensor, name) else ""
    if hasattr(torch.Tensor, name):
        spelled.append(f"`Tensor.{name}`")
    if hasattr(torch, name) and not inspect.ismodule(getattr(torch, name)):
        spelled.append(f"`torch.{name}`")
    if hasattr(F, name):
        spelled.append(f"`F.{name}`")
    return ", ".join(spelled)


def lazygrad_spelling(name, cpp):
    import importlib
    import lazygrad
    try:
        F = importlib.import_module("lazygrad.nn.functional")
    except ImportError:
        F = None
    py = []
    if hasattr(lazygrad.Tensor, name):
        py.append(f"`Tensor.{name}`")
    if not name.startswith("__") and hasattr(lazygrad, name) and not inspect.ismodule(getattr(lazygrad, name)):
        py.append(f"`lazygrad.{name}`")
    if F is not None and not name.startswith("__") and hasattr(F, name):
        py.append(f"`F.{name}`")
    c = ""
    if name in CPP_OPERATORS and py:
        c = f"`{CPP_OPERATORS[name]}`"
    elif name in cpp:
        c = f"`{name}`"
    return ", ".join(py), c


def module_has(dotted, name):
    import importlib
    try:
        mod = importlib.import_module(dotted)
    except ImportError:
        return False
    return hasattr(mod, name)


def render():
    tg, tg_header = tinygrad_names()
    torch_list = pytorch_names()
    note = notes()
    cpp = cpp_names()
    import lazygrad
    import torch

    tensor_names = set(tg.get("Tensor", {})) | set(torch_list)
    tensor_names |= {n for n in dir(lazygrad.Tensor) if not n.startswith("_")}
    lines, missing = [], []
    lines.append("| name | tinygrad | PyTorch | lazygrad (Python) | lazygrad (C++) | differences |")
    lines.append("|---|---|---|---|---|---|")

    def cell(text):
        return text.replace("|", "\\|").replace("\n", " ")

    for name in sorted(tensor_names, key=lambda n: (n.startswith("__"), n.lower(), n)):
        tsig = tg.get("Tensor", {}).get(name)
        tcol = f"`{tsig}`" if tsig else ("yes" if tsig == "" else "")
        pcol = torch_spelling(name)
        py, c = lazygrad_spelling(name, cpp)
        n = note.get(name, "")
        lacks = missing_keywords(name, tsig) if py else []
        if lacks:
            if "keywords:" not in n:
                missing.append(f"{name}({', '.join(lacks)}=)")
            n = (n + " " if n else "") + "Lacks tinygrad's " + ", ".join(f"`{k}=`" for k in lacks) + "."
        if not py and not c:
            if not n.startswith("missing:"):
                missing.append(name)
            py = "**missing**"
        if not (tcol or pcol or py):
            continue
        lines.append(f"| `{name}` | {cell(tcol)} | {pcol} | {py} | {c} | {cell(n)} |")

    around = []
    around.append("| module | name | tinygrad | lazygrad | differences |")
    around.append("|---|---|---|---|---|")
    where = {"nn": "lazygrad.nn", "nn.state": "lazygrad.nn.state", "nn.datasets": "lazygrad.nn.datasets",
             "helpers": "lazygrad.helpers"}
    for group in ("nn", "nn.state", "nn.datasets", "helpers"):
        for name in sorted(tg.get(group, {})):
            has = module_has(where[group], name)
            key = f"{group}.{name}"
            n = note.get(key, "")
            if not has and not n.startswith("missing:"):
                missing.append(key)
            around.append(f"| `{where[group]}` | `{name}` | `{cell(tg[group][name])}` | "
                          f"{'yes' if has else '**missing**'} | {cell(n)} |")

    head = open(os.path.join(API, "ops_header.md"), encoding="utf-8").read().rstrip() + "\n"
    sources = "\n".join(f"- {h}" for h in tg_header)
    out = (head.replace("{{TINYGRAD_SOURCES}}", sources).replace("{{TORCH_VERSION}}", torch.__version__.split("+")[0])
           + "\n## The Tensor API\n\n" + "\n".join(lines) + "\n\n## Around the Tensor\n\n" + "\n".join(around) + "\n")
    return out, missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if docs/ops.md is stale or a name is missing")
    args = ap.parse_args()
    text, missing = render()
    path = os.path.join(ROOT, "docs", "ops.md")
    if args.check:
        ok = True
        if missing:
            print("ops_table: missing from lazygrad with no 'missing: <reason>' in docs/api/notes.tsv: "
                  + ", ".join(missing), file=sys.stderr)
            ok = False
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if current != text:
            print("ops_table: docs/ops.md is stale; run PYTHONPATH=build/python /usr/bin/python3 "
                  "scripts/ops_table.py and commit docs/ops.md", file=sys.stderr)
            ok = False
        return 0 if ok else 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    if missing:
        print("ops_table: missing without a reason: " + ", ".join(missing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
