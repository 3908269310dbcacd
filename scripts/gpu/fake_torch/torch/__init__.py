# SPDX-License-Identifier: Apache-2.0
"""A tiny stand-in for the part of PyTorch that scripts/gpu/torch_allreduce.py uses.

Only for rehearsing the driver where no PyTorch is installed (scripts/gpu-check.sh
--no-gpu): plain Python lists, float32/float16/bfloat16 rounding done exactly
(struct), and torch.distributed collectives through files in FAKE_TORCH_DIR.
It is slow and small on purpose: a few kilobytes per tensor.
"""
import math
import random
import struct

__version__ = "0.0-fake"


class _Version:
    cuda = None


version = _Version()


class dtype:
    def __init__(self, name, is_float):
        self.name, self.is_float = name, is_float

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", True)
float16 = dtype("float16", True)
bfloat16 = dtype("bfloat16", True)
float64 = dtype("float64", True)
int64 = dtype("int64", False)
bool_ = dtype("bool", False)


def _round(v, dt):
    if dt is float64:
        return float(v)
    if dt is float32:
        return struct.unpack("f", struct.pack("f", v))[0]
    if dt is float16:
        try:
            return struct.unpack("e", struct.pack("e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if dt is bfloat16:
        b = struct.unpack("I", struct.pack("f", v))[0]
        b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000  # round to nearest even
        return struct.unpack("f", struct.pack("I", b))[0]
    if dt is int64:
        return int(v)
    return bool(v)


class device:
    def __init__(self, spec):
        self.type = str(spec).split(":")[0]

    def __repr__(self):
        return "device(%r)" % self.type


class Tensor:
    def __init__(self, data, dt):
        self.dtype = dt
        self.data = [_round(v, dt) for v in data]

    def _bin(self, other, f, dt=None):
        o = other.data if isinstance(other, Tensor) else [other] * len(self.data)
        odt = other.dtype if isinstance(other, Tensor) else self.dtype
        rdt = dt or (float64 if float64 in (self.dtype, odt) else self.dtype)
        if rdt is int64 and isinstance(other, float):
            rdt = float64
        return Tensor([f(a, b) for a, b in zip(self.data, o)], rdt)

    def __add__(self, o):
        return self._bin(o, lambda a, b: a + b)

    __radd__ = __add__

    def __iadd__(self, o):
        self.data = (self + o).to(self.dtype).data
        return self

    def __sub__(self, o):
        return self._bin(o, lambda a, b: a - b)

    def __mul__(self, o):
        return self._bin(o, lambda a, b: a * b)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._bin(o, lambda a, b: a / b, float64)

    def __mod__(self, o):
        return self._bin(o, lambda a, b: a % b)

    def __ne__(self, o):
        return self._bin(o, lambda a, b: a != b, bool_)

    def __gt__(self, o):
        return self._bin(o, lambda a, b: a > b, bool_)

    def __getitem__(self, i):
        return Tensor([self.data[i]], self.dtype)

    def __len__(self):
        return len(self.data)

    def to(self, dt):
        return Tensor(self.data, dt)

    def double(self):
        return self.to(float64)

    def abs(self):
        return Tensor([abs(v) for v in self.data], self.dtype)

    def clone(self):
        return Tensor(self.data, self.dtype)

    def sum(self, dim=None):
        return Tensor([sum(self.data)], int64 if self.dtype is bool_ else self.dtype)

    def max(self):
        return Tensor([max(self.data)], self.dtype)

    def item(self):
        return self.data[0]


class _Stack:
    def __init__(self, ts):
        self.ts = ts

    def sum(self, dim):
        assert dim == 0
        return Tensor([sum(vs) for vs in zip(*(t.data for t in self.ts))], self.ts[0].dtype)


def stack(ts):
    return _Stack(ts)


def arange(n, device=None, dtype=int64):
    return Tensor(range(n), dtype)


def zeros(n, device=None, dtype=float32):
    return Tensor([0] * n, dtype)


def tensor(values, device=None, dtype=float32):
    return Tensor(values, dtype)


class Generator:
    def __init__(self, device=None):
        self.rng = random.Random(0)

    def manual_seed(self, seed):
        self.rng.seed(seed)
        return self


def randn(n, generator=None, device=None, dtype=float32):
    g = generator.rng if generator else random
    return Tensor([g.gauss(0.0, 1.0) for _ in range(n)], dtype)


class _Cuda:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def synchronize():
        pass

    class nccl:
        @staticmethod
        def version():
            raise RuntimeError("fake torch has no NCCL")


cuda = _Cuda()
