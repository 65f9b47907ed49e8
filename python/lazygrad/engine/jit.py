"""TinyJit: tinygrad's decorator over lazygrad's C++ Jit. The first call runs the function, the
second records the kernels it launches, and later calls replay them on the new inputs' buffers:
no Python, no scheduling, no compiler. As in tinygrad, the Tensor arguments may change from call to
call (same shapes and dtypes); everything else the function uses is baked in, and the non-Tensor
arguments must stay the same. The function returns a Tensor or a tuple/list of Tensors; the
returned tensors are overwritten by the next call (copy what you keep).

    @TinyJit
    def step(x, y):
        opt.zero_grad()
        loss = model(x).sparse_categorical_crossentropy(y).backward()
        opt.step()
        return loss
"""
import functools
import weakref

from lazygrad._C import Tensor
from lazygrad._C import nn as _C_nn


class TinyJit:
    def __init__(self, fxn):
        self.fxn = fxn
        self.reset()
        functools.update_wrapper(self, fxn)

    def reset(self):
        self._jit, self._others, self._structure = None, None, None

    @property
    def captured_kernels(self):
        return self._jit.captured_kernels if self._jit is not None else 0

    def __get__(self, obj, objtype=None):  # as a method: bind self
        return functools.partial(self.__call__, obj) if obj is not None else self

    def __call__(self, *args, **kwargs):
        names = sorted(kwargs)
        flat = list(args) + [kwargs[k] for k in names]
        slots = [i for i, a in enumerate(flat) if isinstance(a, Tensor)]
        others = [(i, a) for i, a in enumerate(flat) if not isinstance(a, Tensor)]
        if self._jit is None:
            self._others = others
            self._jit = _C_nn.Jit(self._run(len(args), names))
        elif [i for i, _ in others] != [i for i, _ in self._others] or any(
                a is not b and a != b for (_, a), (_, b) in zip(others, self._others)):
            raise ValueError("TinyJit: the non-Tensor arguments changed between calls")
        self._flat = flat
        try:
            outs = self._jit([flat[i] for i in slots])
        finally:
            self._flat = None  # do not keep this call's inputs alive
        return outs[0] if self._structure == "one" else type(self._structure)(outs)

    def _run(self, n_args, names):
        # The C++ Jit holds this function and self holds the Jit: a reference back to self would be
        # a cycle through C++, which Python's collector cannot see (the Jit's kernels and buffers
        # would never be freed). A weak one is enough: the Jit only calls it from self.__call__.
        ref = weakref.ref(self)

        def run(inputs):
            self = ref()
            flat = list(self._flat)
            slots = [i for i, a in enumerate(flat) if isinstance(a, Tensor)]
            for i, t in zip(slots, inputs):
                flat[i] = t
            out = self.fxn(*flat[:n_args], **dict(zip(names, flat[n_args:])))
            if isinstance(out, Tensor):
                self._structure = "one"
                return [out]
            if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
                self._structure = type(out)()
                return list(out)
            raise TypeError("TinyJit: the function must return a Tensor or a tuple or list of Tensors")
        return run


__all__ = ["TinyJit"]
