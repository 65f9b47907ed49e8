"""tinygrad's Tensor methods that lazygrad composes in Python from its own ops (the C++ Tensor has
the ops they are made of). docs/ops.md's rows say where one differs from tinygrad or PyTorch."""
import ctypes
import math
import re

import numpy as np

from lazygrad import _C
from lazygrad._C import Tensor
from lazygrad.dtype import dtypes


def _leakyrelu(self, neg_slope=0.01):
    """tinygrad's older spelling of leaky_relu."""
    return self.leaky_relu(neg_slope)


def _pad2d(self, padding, value=0):
    """tinygrad's older pad2d: (left, right, top, bottom, ...) from the last dimension, as F.pad."""
    return self.pad(tuple(padding), value=value)


def _data(self):
    """The values as a memoryview of the tensor's shape, row-major (tinygrad's Tensor.data); a copy
    on the host. bfloat16, which numpy lacks, comes back as float32 (as numpy() does)."""
    return memoryview(np.ascontiguousarray(self.numpy()))


def _replace(self, x, allow_shape_mismatch=False):
    """tinygrad's replace: this tensor now holds x's values. lazygrad writes them into this tensor's
    buffer (assign), so views of it see them too; the shapes must match unless allowed, and the dtypes
    always."""
    if not isinstance(x, Tensor):
        raise TypeError(f"replace: expected a Tensor, got {type(x).__name__}")
    if x.dtype != self.dtype:
        raise _C.LazygradTypeError(f"replace: dtype {x.dtype.name} differs from this tensor's {self.dtype.name}")
    if tuple(x.shape) != tuple(self.shape):
        if not allow_shape_mismatch:
            raise _C.LazygradError(f"replace: shape {tuple(x.shape)} differs from this tensor's {tuple(self.shape)}")
        return x
    return self.assign(x)


def _contiguous_backward(self):
    """tinygrad's hint that the gradient flowing back here be made contiguous. lazygrad's scheduler
    realizes gradients contiguous wherever a kernel needs them, so this is the tensor itself."""
    return self


def _from_blob(ptr, shape, dtype=None, device=None, **kwargs):
    """A tensor with the values at a raw address (tinygrad's Tensor.from_blob): `ptr` is an int address
    of shape's elements of dtype (default float32), row-major. lazygrad copies them (tinygrad's
    tensor aliases the memory): the memory may be freed after the call."""
    if kwargs:
        raise TypeError(f"from_blob: unexpected keyword arguments {sorted(kwargs)}")
    dt = dtypes.float32 if dtype is None else dtype
    if not isinstance(ptr, int) or ptr == 0:
        raise _C.LazygradValueError(f"from_blob: expected a non-null int address, got {ptr!r}")
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if any(s < 0 for s in shape):
        raise _C.LazygradValueError(f"from_blob: negative size in shape {shape}")
    # bfloat16, which numpy lacks, is read as its bits (uint16) and reinterpreted.
    np_dtype = np.dtype("uint16") if dt == dtypes.bfloat16 else np.dtype(dt.name)
    nbytes = math.prod(shape) * np_dtype.itemsize
    values = (np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_uint8)), (nbytes,)) if nbytes
              else np.zeros(0, np.uint8))
    t = Tensor(values.view(np_dtype).reshape(shape).copy(), device=device)
    return t.bitcast(dt) if dt == dtypes.bfloat16 else t


def _multinomial(self, num_samples=1, replacement=False):
    """torch.multinomial: int64 indices drawn with probability proportional to the (1-D or 2-D, rows
    of) nonnegative weights. With replacement: inverse transform of uniform draws against the
    cumulative sum. Without: the Gumbel top-k trick (the num_samples largest of log w + Gumbel noise),
    which is sampling without replacement. From Tensor.rand, so manual_seed makes it repeatable (not
    PyTorch's numbers)."""
    if self.ndim not in (1, 2):
        raise _C.LazygradError(f"multinomial: expected a 1-D or 2-D weight tensor, got shape {tuple(self.shape)}")
    if not dtypes.is_float(self.dtype):
        raise _C.LazygradError(f"multinomial: expected floating-point weights, got {self.dtype.name}")
    if num_samples <= 0:
        raise _C.LazygradValueError(f"multinomial: num_samples must be positive, got {num_samples}")
    w = self if self.ndim == 2 else self.unsqueeze(0)
    rows, n = w.shape
    if not replacement and num_samples > n:
        raise _C.LazygradError(f"multinomial: cannot take {num_samples} samples from {n} categories "
                               "without replacement")
    w = w.float()
    if replacement:
        cdf = w.cumsum(1) / w.sum(1, keepdim=True)
        u = Tensor.rand(rows, num_samples, 1, device=self.device)
        out = (u >= cdf.unsqueeze(1)).sum(2).clip(0, n - 1)
    else:
        gumbel = -(-Tensor.rand(rows, n, device=self.device).clip(1e-20, 1).log()).log()
        keys = (w > 0).where(w.log() + gumbel, float("-inf"))
        out = keys.topk(num_samples, dim=1)[1]
    out = out.cast(dtypes.int64)
    return out if self.ndim == 2 else out.squeeze(0)


def _randperm(n, device=None, dtype=None, **kwargs):
    """torch.randperm: a random permutation of 0..n-1 (int64 by default; tinygrad's default is int32),
    the argsort of n uniform draws."""
    if kwargs.pop("requires_grad", False):
        raise _C.LazygradError("randperm: an integer tensor cannot require grad")
    if kwargs:
        raise TypeError(f"randperm: unexpected keyword arguments {sorted(kwargs)}")
    if n < 0:
        raise _C.LazygradValueError(f"randperm: n must be non-negative, got {n}")
    out = Tensor.rand(n, device=device).argsort()
    return out if dtype is None else out.cast(dtype)


def _newton_schulz(self, steps, params, eps=1.0e-7):
    """Orthogonalizes the last two dimensions by `steps` Newton-Schulz iterations with the odd
    polynomial a X + b (X X^T) X + c (X X^T)^2 X, params = (a, b, c) (Muon's orthogonalization;
    tinygrad's Tensor.newton_schulz). X is first scaled to unit Frobenius norm (+ eps)."""
    if self.ndim < 2:
        raise _C.LazygradError(f"newton_schulz: expected at least 2 dimensions, got shape {tuple(self.shape)}")
    a, b, c = params
    tall = self.shape[-2] > self.shape[-1]
    x = self.transpose(-2, -1) if tall else self
    x = x / (x.square().sum(axis=(-2, -1), keepdim=True).sqrt() + eps)
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.transpose(-2, -1) if tall else x


# ---- decompositions, on the host ----
def _host_matrices(self, op):
    if self.ndim < 2:
        raise _C.LazygradError(f"{op}: expected at least 2 dimensions, got shape {tuple(self.shape)}")
    if not dtypes.is_float(self.dtype):
        raise _C.LazygradError(f"{op}: expected a floating-point tensor, got {self.dtype.name}")
    a = self.numpy()
    return a.astype(np.float64) if a.dtype != np.float64 else a


def _back(self, a):
    return Tensor(np.ascontiguousarray(a), device=self.device).cast(self.dtype)


def _qr(self):
    """(Q, R) of the last two dimensions, reduced (torch.linalg.qr's default, tinygrad's qr): Q has
    orthonormal columns, R is upper triangular with Q R = self. Computed on the host in float64 by
    LAPACK (numpy), so it realizes self and has no gradient; results in self's dtype and device.
    Signs may differ from PyTorch's by a column of Q and the matching row of R."""
    q, r = np.linalg.qr(_host_matrices(self, "qr"))
    return _back(self, q), _back(self, r)


def _svd(self, full_matrices=True):
    """(U, S, Vh) of the last two dimensions with U diag(S) Vh = self, S descending (torch.linalg.svd;
    tinygrad's svd). On the host in float64 by LAPACK (numpy), as qr: realizes self, no gradient.
    Singular vectors are unique only up to sign (and rotation within repeated singular values)."""
    u, s, vh = np.linalg.svd(_host_matrices(self, "svd"), full_matrices=full_matrices)
    return _back(self, u), _back(self, s), _back(self, vh)


# ---- SHA-3 (Keccak) over the last dimension ----
# cfg: (rate in bytes, domain-separation byte, output bytes), FIPS 202.
_KECCAK_CFG = {"sha3_224": (144, 0x06, 28), "sha3_256": (136, 0x06, 32), "sha3_384": (104, 0x06, 48),
               "sha3_512": (72, 0x06, 64), "shake_128": (168, 0x1F, 16), "shake_256": (136, 0x1F, 32)}


def _keccak_round_constants():
    """The 24 iota constants, from FIPS 202's LFSR rc(t) (x^8 + x^6 + x^5 + x^4 + 1)."""
    def rc(t):
        r = 1
        for _ in range(t % 255):
            r <<= 1
            if r & 0x100:
                r ^= 0x171
        return r & 1
    return [sum(rc(j + 7 * i) << (2**j - 1) for j in range(7)) for i in range(24)]


def _keccak_rotations():
    """rho's offsets r[x + 5y]: ((t + 1)(t + 2) / 2) mod 64 along the walk (x, y) -> (y, 2x + 3y)."""
    r, (x, y) = [0] * 25, (1, 0)
    for t in range(24):
        r[x + 5 * y] = ((t + 1) * (t + 2) // 2) % 64
        x, y = y, (2 * x + 3 * y) % 5
    return r


def _u64(value, device):
    return Tensor(np.array(value, dtype=np.uint64), device=device)


def _rotl(lane, n):
    return lane if n == 0 else (lane << n) | (lane >> (64 - n))


def _keccak_f(lanes):
    """The Keccak-f[1600] permutation of 25 uint64 lanes (lane x + 5y), each a tensor of the batch
    shape; each round is realized as one [..., 25] tensor so no kernel grows past one round."""
    rot = _keccak_rotations()
    for rc in _keccak_round_constants():
        c = [lanes[x] ^ lanes[x + 5] ^ lanes[x + 10] ^ lanes[x + 15] ^ lanes[x + 20] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rotl(c[(x + 1) % 5], 1) for x in range(5)]
        a = [lanes[i] ^ d[i % 5] for i in range(25)]
        b = [None] * 25
        for x in range(5):
            for y in range(5):
                b[y + 5 * ((2 * x + 3 * y) % 5)] = _rotl(a[x + 5 * y], rot[x + 5 * y])
        a = [b[i] ^ (~b[(i % 5 + 1) % 5 + 5 * (i // 5)] & b[(i % 5 + 2) % 5 + 5 * (i // 5)]) for i in range(25)]
        a[0] = a[0] ^ rc  # a Python int up to 2^64 - 1 is a uint64 constant
        state = a[0].stack(*a[1:], dim=-1).realize()
        lanes = [state[..., i] for i in range(25)]
    return lanes


def _as_bytes(self):
    """The tensor's bytes along a last dimension (little-endian, as in memory)."""
    if self.dtype in (dtypes.uint8, dtypes.int8, dtypes.bool):
        return self.cast(dtypes.uint8) if self.dtype != dtypes.int8 else self.bitcast(dtypes.uint8)
    size = self.dtype.itemsize
    u = self.bitcast({2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[size]).cast(dtypes.uint64)
    shifts = _u64([8 * k for k in range(size)], self.device)
    b = ((u.unsqueeze(-1) >> shifts) & 0xFF).cast(dtypes.uint8)
    return b.reshape(*self.shape[:-1], self.shape[-1] * size)


def _keccak(self, cfg="sha3_256"):
    """SHA-3 (or SHAKE) of the bytes along the last dimension (tinygrad's Tensor.keccak): uint8
    [..., digest bytes], one digest per row; cfg is "sha3_224", "sha3_256", "sha3_384", "sha3_512",
    "shake_128" (16 bytes) or "shake_256" (32 bytes). Equal to hashlib's digest of each row's bytes."""
    if cfg not in _KECCAK_CFG:
        raise _C.LazygradValueError(f"keccak: unknown cfg {cfg!r}, expected one of {sorted(_KECCAK_CFG)}")
    if self.ndim == 0:
        raise _C.LazygradError("keccak: expected at least one dimension (the bytes to hash), got a 0-d tensor")
    rate, ds, out_bytes = _KECCAK_CFG[cfg]
    data = _as_bytes(self)
    lead, n = tuple(data.shape[:-1]), data.shape[-1]
    pad = np.zeros(rate - n % rate, dtype=np.uint8)
    pad[0] ^= ds
    pad[-1] ^= 0x80
    data = Tensor.cat(data, Tensor(pad, device=self.device).expand(*lead, len(pad)), dim=-1)
    blocks = data.shape[-1] // rate
    shifts = _u64([8 * k for k in range(8)], self.device)
    words = (data.reshape(*lead, blocks, rate // 8, 8).cast(dtypes.uint64) << shifts).sum(-1).cast(dtypes.uint64)
    zero = Tensor.zeros(*lead, dtype=dtypes.uint64, device=self.device)
    lanes = [zero] * 25
    for blk in range(blocks):
        lanes = [lane ^ words[..., blk, i] if i < rate // 8 else lane for i, lane in enumerate(lanes)]
        lanes = _keccak_f(lanes)
    out_lanes = lanes[0].stack(*lanes[1:(out_bytes + 7) // 8], dim=-1)
    digest = ((out_lanes.unsqueeze(-1) >> shifts) & 0xFF).cast(dtypes.uint8)
    return digest.reshape(*lead, -1)[..., :out_bytes]


def _hash_1mb(rows):
    """[n, 2^20] bytes -> [n, 16]: shake_128 of each 4096-byte block, then of the row's block digests."""
    blocks = rows.reshape(-1, 4096).keccak("shake_128").reshape(rows.shape[0], -1)
    return blocks.keccak("shake_128")


def _pad_bytes_to(data, n):
    return data if data.shape[0] == n else data.pad((0, n - data.shape[0]))


def _hash(self):
    """A 16-byte digest of the tensor's bytes (tinygrad's Tensor.hash, its tree definition of 2025):
    the bytes in 1 MiB chunks (zero-padded), each chunk to 16 bytes by shake_128 over 4096-byte
    blocks and again over those digests, repeated over the chunk digests until one chunk is left."""
    data = _as_bytes(self.flatten())
    chunks = max(1, -(-data.shape[0] // 2**20))
    while chunks > 1:
        data = _hash_1mb(_pad_bytes_to(data, chunks * 2**20).reshape(chunks, 2**20)).flatten()
        chunks = -(-chunks // 65536)
    return _hash_1mb(_pad_bytes_to(data, 2**20).unsqueeze(0)).flatten()[:16]


# ---- einops-style rearrange ----
_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+")


def _parse_side(side, what):
    groups, cur = [], None
    for tok in _TOKEN.findall(side):
        if tok == "(":
            if cur is not None:
                raise _C.LazygradValueError(f"rearrange: nested parentheses in the {what} side {side!r}")
            cur = []
        elif tok == ")":
            if cur is None:
                raise _C.LazygradValueError(f"rearrange: unbalanced ')' in the {what} side {side!r}")
            groups.append(cur)
            cur = None
        elif cur is not None:
            cur.append(tok)
        else:
            groups.append([tok])
    if cur is not None:
        raise _C.LazygradValueError(f"rearrange: unbalanced '(' in the {what} side {side!r}")
    if re.sub(r"[\s()]|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+", "", side):
        raise _C.LazygradValueError(f"rearrange: unexpected characters in {side!r}")
    return groups


def _ellipsis_names(n):
    """Names for the dimensions a `...` stands for."""
    return [f"...{i}" for i in range(n)]


def _names_of(groups, n_ell):
    """The axis names of one side, flat, with `...` expanded."""
    return [n for g in groups for n in (_ellipsis_names(n_ell) if g == ["..."] else g)]


def _rearrange(self, formula, **sizes):
    """einops' rearrange (tinygrad's Tensor.rearrange): "b c (h w) -> b (c h) w" splits, permutes and
    merges axes, all as views. Names on the left in parentheses are split (all sizes but one given
    as keywords); `...` stands for the dimensions not named; `1` is a unit axis on either side."""
    if "->" not in formula or formula.count("->") != 1:
        raise _C.LazygradValueError(f"rearrange: expected 'left -> right', got {formula!r}")
    lhs, rhs = (_parse_side(s, w) for s, w in zip(formula.split("->"), ("left", "right")))
    names_l = [n for g in lhs for n in g if not n.isdigit()]
    names_r = [n for g in rhs for n in g if not n.isdigit()]
    if len(set(names_l)) != len(names_l) or sorted(names_l) != sorted(names_r):
        raise _C.LazygradValueError(f"rearrange: each name must appear once on each side: {formula!r}")
    ell = sum(1 for g in lhs if g == ["..."])
    n_ell = self.ndim - (len(lhs) - ell)
    if n_ell < 0 or ell > 1 or (ell == 0 and len(lhs) != self.ndim):
        raise _C.LazygradError(f"rearrange: {formula!r} names {len(lhs)} dimensions, the tensor has shape "
                               f"{tuple(self.shape)}")
    size, split_shape, dim = dict(sizes), [], 0
    for g in lhs:
        if g == ["..."]:
            ell_names = _ellipsis_names(n_ell)
            for i, nm in enumerate(ell_names):
                size[nm] = self.shape[dim + i]
            split_shape += [size[nm] for nm in ell_names]
            dim += n_ell
            continue
        total = self.shape[dim]
        known = math.prod(int(n) if n.isdigit() else size.get(n, 1) for n in g)
        unknown = [n for n in g if not n.isdigit() and n not in size]
        if len(unknown) > 1:
            raise _C.LazygradValueError(f"rearrange: give the sizes of all but one of {g} as keywords")
        if unknown:
            if known == 0 or total % known:
                raise _C.LazygradError(f"rearrange: dimension {dim} of size {total} does not split into {g}")
            size[unknown[0]] = total // known
        elif known != total:
            raise _C.LazygradError(f"rearrange: dimension {dim} has size {total}, {g} gives {known}")
        split_shape += [int(n) if n.isdigit() else size[n] for n in g]
        dim += 1
    flat_l = _names_of(lhs, n_ell)
    x = self.reshape(tuple(split_shape))
    keep = [i for i, n in enumerate(flat_l) if not n.isdigit()]
    x = x.reshape(tuple(split_shape[i] for i in keep))
    named = [flat_l[i] for i in keep]
    flat_r = _names_of(rhs, n_ell)
    order = [named.index(n) for n in flat_r if not n.isdigit()]
    x = x.permute(tuple(order))
    out_shape = []
    for g in rhs:
        parts = _ellipsis_names(n_ell) if g == ["..."] else g
        if g == ["..."]:
            out_shape += [size[n] for n in parts]
        else:
            out_shape.append(math.prod(int(n) if n.isdigit() else size[n] for n in parts))
    return x.reshape(tuple(out_shape))


Tensor.leakyrelu = _leakyrelu
Tensor.pad2d = _pad2d
Tensor.data = _data
Tensor.replace = _replace
Tensor.contiguous_backward = _contiguous_backward
Tensor.from_blob = staticmethod(_from_blob)
Tensor.multinomial = _multinomial
Tensor.randperm = staticmethod(_randperm)
Tensor.newton_schulz = _newton_schulz
Tensor.rearrange = _rearrange
Tensor.keccak = _keccak
Tensor.hash = _hash
Tensor.qr = _qr
Tensor.svd = _svd
Tensor.amax = lambda self, axis=None, keepdim=False, dim=None: self.max(axis if dim is None else dim, keepdim)
Tensor.amin = lambda self, axis=None, keepdim=False, dim=None: self.min(axis if dim is None else dim, keepdim)


# ---- tinygrad's keyword arguments on bound methods ----
# tinygrad's products and softmaxes take dtype=: the inputs are cast to it first, so the work
# accumulates and returns in that dtype (PyTorch's softmax(dtype=) casts the input too).
def _cast_to(t, dtype):
    return t if dtype is None or t.dtype == dtype else t.cast(dtype)


_bound = {name: getattr(Tensor, name) for name in (
    "assign", "dot", "matmul", "linear", "conv2d", "softmax", "log_softmax", "gradient", "hardsigmoid", "selu",
    "realize", "scaled_dot_product_attention")}
_bound_einsum, _bound_rand = Tensor.einsum, Tensor.rand


def _assign(self, x):
    """Writes x's values into this tensor (seen by every handle and view of it); tinygrad's name."""
    return _bound["assign"](self, x)


def _dot(self, w, dtype=None):
    """self @ w; with dtype, both are cast to it first (tinygrad's accumulation dtype)."""
    return _bound["dot"](_cast_to(self, dtype), _cast_to(w, dtype) if isinstance(w, Tensor) else w)


def _matmul(self, x, reverse=False, dtype=None):
    """self @ x (x @ self with reverse); with dtype, both are cast to it first."""
    return _bound["matmul"](_cast_to(self, dtype), _cast_to(x, dtype) if isinstance(x, Tensor) else x, reverse)


def _linear(self, weight, bias=None, dtype=None):
    """tinygrad's linear: self @ weight + bias (weight [in, out]); with dtype, cast first."""
    return _bound["linear"](_cast_to(self, dtype), _cast_to(weight, dtype),
                            None if bias is None else _cast_to(bias, dtype))


def _conv2d(self, weight, bias=None, groups=1, stride=1, dilation=1, padding=0, dtype=None):
    """tinygrad's conv2d (any number of spatial dimensions); with dtype, the operands are cast first."""
    return _bound["conv2d"](_cast_to(self, dtype), _cast_to(weight, dtype),
                            None if bias is None else _cast_to(bias, dtype), groups, stride, dilation, padding)


def _softmax(self, axis=None, dtype=None, *, dim=None):
    """softmax along axis (default -1); with dtype, the input is cast first (PyTorch's and tinygrad's dtype=)."""
    return _bound["softmax"](_cast_to(self, dtype), axis, dim=dim)


def _log_softmax(self, axis=None, dtype=None, *, dim=None):
    """log_softmax along axis (default -1); with dtype, the input is cast first."""
    return _bound["log_softmax"](_cast_to(self, dtype), axis, dim=dim)


def _einsum(formula, *operands, dtype=None):
    """torch.einsum / tinygrad's Tensor.einsum; with dtype, the operands are cast first."""
    if dtype is not None:
        flat = [o for op in operands for o in (op if isinstance(op, (list, tuple)) else [op])]
        operands = tuple(_cast_to(o if isinstance(o, Tensor) else Tensor(o), dtype) for o in flat)
    return _bound_einsum(formula, *operands)


def _gradient(self, *targets, gradient=None, materialize_grads=False):
    """d(self)/d(targets) (tinygrad's Tensor.gradient). A target self does not depend on gets zeros
    of its shape, with or without materialize_grads (tinygrad raises without it)."""
    grads = _bound["gradient"](self, *targets, gradient=gradient)
    if materialize_grads:
        grads = [g if g is not None else Tensor.zeros(*t.shape, dtype=t.dtype, device=t.device)
                 for g, t in zip(grads, targets)]
    return grads


_HARDSIGMOID, _SELU = (1 / 6, 0.5), (1.6732632423543772, 1.0507009873554805)


def _hardsigmoid(self, alpha=1 / 6, beta=0.5):
    """max(0, min(1, alpha x + beta)); the defaults are PyTorch's F.hardsigmoid (and its gradient at the kinks)."""
    if (alpha, beta) == _HARDSIGMOID:
        return _bound["hardsigmoid"](self)
    return (self * alpha + beta).clip(0, 1)


def _selu(self, alpha=1.6732632423543772, gamma=1.0507009873554805):
    """gamma * elu(x, alpha); the defaults are SELU's constants (F.selu)."""
    if (alpha, gamma) == _SELU:
        return _bound["selu"](self)
    return self.elu(alpha) * gamma


def _realize(self, *lst, do_update_stats=True):
    """Realizes self and lst in one schedule. GlobalCounters are always updated (do_update_stats is
    accepted for tinygrad's callers and has no effect)."""
    return _bound["realize"](self, *lst)


def _rand(*shape, device=None, dtype=None, contiguous=True, **kwargs):
    """U[0, 1) (tinygrad's Tensor.rand). contiguous is accepted and has no effect: lazygrad's random
    numbers are computed inside the consuming kernel either way, with the same values."""
    return _bound_rand(*shape, device=device, dtype=dtype, **kwargs)


def _sdpa(self, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """F.scaled_dot_product_attention with self as the query. enable_gqa (grouped-query attention):
    key and value may have fewer heads (dimension -3) than the query, a divisor of its count; each
    is repeated for its group of query heads, as PyTorch 2.5 and tinygrad do."""
    if enable_gqa and key.ndim >= 3 and self.ndim >= 3 and key.shape[-3] != self.shape[-3]:
        heads, kv_heads = self.shape[-3], key.shape[-3]
        if kv_heads == 0 or heads % kv_heads:
            raise _C.LazygradError(f"scaled_dot_product_attention: {heads} query heads are not a multiple of "
                                   f"{kv_heads} key/value heads (enable_gqa)")
        key = key.repeat_interleave(heads // kv_heads, -3)
        value = value.repeat_interleave(heads // kv_heads, -3)
    return _bound["scaled_dot_product_attention"](self, key, value, attn_mask, dropout_p, is_causal, scale)


_bound_view = Tensor.view


def _view(self, *shape, dtype=None):
    """PyTorch's view: a shape (as reshape), or a dtype (view(torch.int32): bitcast, a copy here)."""
    from lazygrad._C import DType
    target = dtype if dtype is not None else (shape[0] if len(shape) == 1 and isinstance(shape[0], DType) else None)
    return self.bitcast(target) if target is not None else _bound_view(self, *shape)


Tensor.view = _view
Tensor.assign = _assign
Tensor.dot = _dot
Tensor.matmul = _matmul
Tensor.linear = _linear
Tensor.conv2d = _conv2d
Tensor.softmax = _softmax
Tensor.log_softmax = _log_softmax
Tensor.einsum = staticmethod(_einsum)
Tensor.gradient = _gradient
Tensor.hardsigmoid = _hardsigmoid
Tensor.selu = _selu
Tensor.realize = _realize
Tensor.rand = staticmethod(_rand)
Tensor.scaled_dot_product_attention = _sdpa
