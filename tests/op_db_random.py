"""op_db entries for `ember.random`: the threefry2x32 primitive and the bit-exact samplers.

The references are written here from the specification, independently of
ember's kernel: Threefry-2x32-20 on Python ints one counter at a time, in the
textbook form (Salmon et al. 2011, Random123's ``threefry2x32_20``: a round
is ``x0 += x1; x1 = rotl(x1, R[r % 8]) ^ x0``, with a key injection after
every fourth round), and JAX's documented bit layouts on top of it (element i
of a bits array hashes the counter (i >> 32, i & 0xFFFFFFFF)).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc
from op_db import COMPLEX, FLOATING, INTEGER, UNSIGNED, OpInfo, Sample, make_array, register

import ember.numpy as enp
import ember.random as er
from ember.core.primitives.random import threefry2x32_p

M32 = 0xFFFFFFFF
_R = (13, 15, 26, 6, 17, 29, 16, 24)
_U32 = np.dtype(np.uint32)
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
NOT_THREEFRY = "Threefry hashes uint32 words: keys and counters must be uint32"
NOT_RANDOM_TRANSFORMS = frozenset({"vmap", "jit"})
RANDOM_NONDIFF = "the array inputs are keys and counters (uint32 bits): nothing to differentiate"


# --- the reference hash --------------------------------------------------------------------------------


def threefry_words(k0: int, k1: int, c0: int, c1: int) -> tuple[int, int]:
    """Threefry-2x32 with 20 rounds of counter (c0, c1) under key (k0, k1), on Python ints."""
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = (c0 + k0) & M32, (c1 + k1) & M32
    for r in range(20):
        x0 = (x0 + x1) & M32
        x1 = ((x1 << _R[r % 8]) | (x1 >> (32 - _R[r % 8]))) & M32
        x1 ^= x0
        if r % 4 == 3:
            s = r // 4 + 1
            x0 = (x0 + ks[s % 3]) & M32
            x1 = (x1 + ks[(s + 1) % 3] + s) & M32
    return x0, x1


def threefry_ref(k0, k1, c0, c1) -> tuple[np.ndarray, np.ndarray]:
    """The hash of broadcast arrays of words."""
    k0, k1, c0, c1 = np.broadcast_arrays(*(np.asarray(a, dtype=np.uint32) for a in (k0, k1, c0, c1)))
    pairs = [threefry_words(*map(int, t)) for t in zip(k0.ravel(), k1.ravel(), c0.ravel(), c1.ravel())]
    y0 = np.array([p[0] for p in pairs], dtype=np.uint32).reshape(k0.shape)
    y1 = np.array([p[1] for p in pairs], dtype=np.uint32).reshape(k0.shape)
    return y0, y1


def _key_words(key) -> tuple[int, int]:
    key = np.asarray(key)
    return int(key[0]), int(key[1])


def ref_threefry2x32(key, count) -> np.ndarray:
    """JAX's threefry_2x32(key, count): pad the flat counts to even length, hash (first half, second half)."""
    flat = [int(c) for c in np.asarray(count).ravel()]
    padded = flat + [0] * (len(flat) % 2)
    half = len(padded) // 2
    k0, k1 = _key_words(key)
    pairs = [threefry_words(k0, k1, padded[i], padded[half + i]) for i in range(half)]
    out = [p[0] for p in pairs] + [p[1] for p in pairs]
    return np.array(out[: len(flat)], dtype=np.uint32).reshape(np.shape(count))


def ref_split(key, n: int) -> np.ndarray:
    k0, k1 = _key_words(key)
    return np.array([threefry_words(k0, k1, 0, i) for i in range(n)], dtype=np.uint32).reshape(n, 2)


def ref_bits(key, shape, dtype) -> np.ndarray:
    width = 8 * np.dtype(dtype).itemsize
    k0, k1 = _key_words(key)
    out = []
    for i in range(math.prod(shape)):
        hi, lo = threefry_words(k0, k1, i >> 32, i & M32)
        out.append((hi << 32) | lo if width == 64 else (hi ^ lo) & ((1 << width) - 1))
    return np.array(out, dtype=np.uint64).astype(dtype).reshape(shape)


def ref_uniform(key, shape, dtype, minval=0.0, maxval=1.0) -> np.ndarray:
    """m / 2**nmant for the top nmant random bits m (bfloat16: of a random byte), scaled in `dtype`."""
    dtype = np.dtype(dtype)
    nmant = {2: 10, 4: 23, 8: 52}[dtype.itemsize] if dtype.name != "bfloat16" else 7
    nbits = 8 * dtype.itemsize
    width = 8 if nmant < 8 else nbits
    m = ref_bits(key, shape, _UINT[width]).astype(np.uint64) >> np.uint64(width - nmant)
    f = (m.astype(np.float64) * 2.0**-nmant).astype(dtype)
    lo, hi = np.asarray(minval).astype(dtype), np.asarray(maxval).astype(dtype)
    return np.maximum(lo, f * (hi - lo) + lo)


def ref_normal(key, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        real = np.float32 if dtype == np.complex64 else np.float64
        k_re, k_im = ref_split(key, 2)
        return (ref_normal(k_re, shape, real) + 1j * ref_normal(k_im, shape, real)) / np.sqrt(2)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = ref_uniform(key, shape, dtype, lo, 1.0)
    return np.sqrt(2) * sc.erfinv(u.astype(np.float64))


def ref_randint(key, shape, minval, maxval, dtype) -> np.ndarray:
    """randint on Python ints: the 2n-bit number of two words reduced to the span, added to minval with wrapping."""
    dtype = np.dtype(dtype)
    info, n = np.iinfo(dtype), 8 * dtype.itemsize
    size = 1 << n
    k_hi, k_lo = ref_split(key, 2)
    higher = ref_bits(k_hi, shape, _UINT[n]).ravel().tolist()
    lower = ref_bits(k_lo, shape, _UINT[n]).ravel().tolist()
    los = np.broadcast_to(np.asarray(minval, dtype=object), shape).ravel().tolist()
    his = np.broadcast_to(np.asarray(maxval, dtype=object), shape).ravel().tolist()
    out = []
    for h, l, a, b in zip(higher, lower, los, his):
        a_c, b_c = min(max(int(a), info.min), info.max), min(max(int(b), info.min), info.max)
        span = (b_c - a_c) % size if b_c > a_c else 1
        if int(b) > info.max and b_c > a_c:
            span = (span + 1) % size
        # span 0 stands for 2**n; spans up to 2**(n/2) reduce modulo (as JAX), wider ones scale.
        x = int(h) * size + int(l)
        if span == 0:
            offset = int(l)
        elif span <= 1 << (n // 2):
            offset = x % span
        else:
            offset = (x * span) >> (2 * n)
        value = (a_c + offset) % size
        out.append(value - size if info.min < 0 and value > info.max else value)
    return np.array(out, dtype=object).astype(dtype).reshape(shape)


# --- samples -------------------------------------------------------------------------------------------------


def _words(rng, shape, dtype) -> np.ndarray:
    """Full-range uint32 words, or ordinary values of another dtype (which must be rejected)."""
    if np.dtype(dtype) == _U32:
        return rng.integers(0, 2**32, size=shape, dtype=np.uint32)
    return make_array(rng, shape, dtype)


def _key(rng) -> np.ndarray:
    return rng.integers(0, 2**32, size=2, dtype=np.uint32)


def _threefry_samples(rng, dtype):
    return [Sample((_words(rng, (2,), dtype), _words(rng, s, dtype))) for s in ((), (1,), (0,), (4,), (5,), (2, 3))]


def _primitive_samples(rng, dtype):
    shapes = [((), (), (), ()), ((), (), (5,), (5,)), ((3, 1), (), (1, 4), (3, 4)), ((2,), (2,), (2,), (2,)), ((), (), (0,), (0,))]
    return [Sample(tuple(_words(rng, s, dtype) for s in group)) for group in shapes]


_SHAPES = ((), (0,), (5,), (2, 3))


def _bits_samples(rng, dtype):
    return [Sample((_key(rng), s, dtype)) for s in _SHAPES]


def _uniform_samples(rng, dtype):
    out = [Sample((_key(rng), s, dtype)) for s in _SHAPES]
    out.append(Sample((_key(rng), (4,), dtype, -2.0, 3.0)))
    out.append(Sample((_key(rng), (2, 3), dtype, make_array(rng, (3,), dtype, -2, 0), make_array(rng, (2, 1), dtype, 1, 4))))
    return out


def _randint_samples(rng, dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.iinfo(np.int8)
    out = [Sample((_key(rng), (6,), 0, 10, dtype)), Sample((_key(rng), (), -3, 3, dtype)), Sample((_key(rng), (0,), 0, 5, dtype)),
           Sample((_key(rng), (4,), 7, 3, dtype)),
           Sample((_key(rng), (2, 3), np.array([0, 5, 20], dtype=info.dtype), np.array([[50], [90]], dtype=info.dtype), dtype)),
           Sample((_key(rng), (5,), np.array(info.max - 5, dtype=info.dtype), np.array(info.max, dtype=info.dtype), dtype))]  # fmt: skip
    if info.bits <= 16:  # maxval one past the top: the whole range
        out.append(Sample((_key(rng), (8,), int(info.min), int(info.max) + 1, dtype)))
    # Spans wider than 2**(bits/2) (clipped to the range for narrow dtypes).
    out.append(Sample((_key(rng), (6,), -(2**30), 2**30, dtype)))
    if info.bits == 64:
        out.append(Sample((_key(rng), (6,), np.array(-(2**40) if info.min else 2**20, info.dtype), np.array(2**62, info.dtype), dtype)))
    return out


def _out_dtype_arg(i):
    return lambda dtype, sample: np.dtype(sample.args[i])


def _bind(*words):
    return threefry2x32_p.bind(*(enp.asarray(w) for w in words))


register(
    OpInfo("random.threefry2x32", er.threefry2x32, ref_threefry2x32, (_U32,), _threefry_samples, NOT_THREEFRY,
           primitives=("threefry2x32",), ref_in_dtype=True, transforms=NOT_RANDOM_TRANSFORMS, nondiff=RANDOM_NONDIFF),
    OpInfo("random.threefry2x32_p", _bind, threefry_ref, (_U32,), _primitive_samples, NOT_THREEFRY,
           primitives=("threefry2x32",), ref_in_dtype=True, transforms=NOT_RANDOM_TRANSFORMS, nondiff=RANDOM_NONDIFF),
    OpInfo("random.bits", er.bits, ref_bits, UNSIGNED, _bits_samples,
           "random bits are unsigned integers (ember.random.randint draws signed ones)", primitives=("threefry2x32",),
           out_dtype_of=_out_dtype_arg(2), ref_in_dtype=True, transforms=NOT_RANDOM_TRANSFORMS, nondiff=RANDOM_NONDIFF),
    OpInfo("random.uniform", er.uniform, ref_uniform, FLOATING, _uniform_samples,
           "uniform draws floats (ember.random.randint draws integers)", primitives=("threefry2x32",),
           out_dtype_of=_out_dtype_arg(2), ref_in_dtype=True, transforms=NOT_RANDOM_TRANSFORMS, nondiff=RANDOM_NONDIFF),
    OpInfo("random.normal", er.normal, ref_normal, FLOATING + COMPLEX, lambda rng, d: [Sample((_key(rng), s, d)) for s in _SHAPES],
           "normal draws floating or complex numbers", primitives=("threefry2x32",), out_dtype_of=_out_dtype_arg(2),
           ref_in_dtype=True, tol={np.dtype(np.float32): (1e-5, 1e-5), np.dtype(np.complex64): (1e-5, 1e-5)},
           transforms=NOT_RANDOM_TRANSFORMS, nondiff=RANDOM_NONDIFF),
    OpInfo("random.randint", er.randint, ref_randint, INTEGER, _randint_samples,
           "randint draws integers (ember.random.uniform draws floats)", primitives=("threefry2x32",),
           out_dtype_of=_out_dtype_arg(4), ref_in_dtype=True, transforms=NOT_RANDOM_TRANSFORMS, nondiff=RANDOM_NONDIFF),
)  # fmt: skip
