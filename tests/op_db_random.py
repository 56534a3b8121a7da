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

import ml_dtypes
import numpy as np
import scipy.special as sc
from op_db import BF16, COMPLEX, FLOAT_ONLY, FLOATING, INTEGER, SIGNED, UNSIGNED, OpInfo, Sample, make_array, register

import ember.lax as lax
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


# --- the distributions built on uniform and normal draws (ember/random/_continuous, _gamma, _discrete,
# _multivariate). The references follow JAX's published algorithms step by step on the reference bits
# above, in the sample dtype's arithmetic (NumPy scalars of that dtype), so rejection samplers take the
# same accept/reject decisions; a few ulps of erf_inv may differ, hence the tolerances.

_LOW = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(ml_dtypes.bfloat16): (6e-2, 6e-2),
        np.dtype(np.float32): (2e-5, 2e-5), np.dtype(np.float64): (1e-12, 1e-12)}  # fmt: skip
FLOAT_SAMPLER = "draws floating-point numbers (dtype must be floating)"
INT_SAMPLER = "draws counts (dtype must be an integer dtype)"


def _f(dtype, x):
    return np.asarray(x, dtype=np.float64).astype(dtype)


def ref_exponential(key, shape, dtype):
    u = ref_uniform(key, shape, dtype)
    return -np.log1p(-u.astype(np.float64))


def ref_laplace(key, shape, dtype):
    u = ref_uniform(key, shape, dtype, -1.0 + float(np.finfo(np.dtype(dtype)).epsneg) if np.dtype(dtype) != BF16
                    else -1.0 + 2.0**-8, 1.0).astype(np.float64)  # fmt: skip
    return np.sign(u) * np.log1p(-np.abs(u))


def ref_logistic(key, shape, dtype):
    u = ref_uniform(key, shape, dtype, float(ml_dtypes.finfo(dtype).tiny), 1.0).astype(np.float64)
    return np.log(u) - np.log1p(-u)


def ref_cauchy(key, shape, dtype):
    u = ref_uniform(key, shape, dtype, float(ml_dtypes.finfo(dtype).eps), 1.0).astype(np.float64)
    return np.tan(np.pi * (u - 0.5))


def _normal_in(key, shape, dtype):
    return ref_normal(key, shape, dtype).astype(dtype)


def ref_gamma_one(key, alpha, dtype, log_space=False):
    """Marsaglia and Tsang (2000) for one element, as JAX's _gamma_one, in `dtype` arithmetic."""
    t = np.dtype(dtype).type
    alpha = t(alpha)
    one, third = t(1.0), t(1.0 / 3.0)
    boost = alpha >= one
    a = alpha if boost else t(alpha + one)
    d = t(a - third)
    c = t(third / t(np.sqrt(d)))
    key, subkey = ref_split(key, 2)
    x2, v, u = t(0.0), t(1.0), t(2.0)
    with np.errstate(all="ignore"):
        while (u >= t(one - t(t(0.0331) * t(x2 * x2)))) and (t(np.log(u)) >= t(t(x2 * t(0.5)) + t(d * t(t(one - v) + t(np.log(v)))))):
            key, x_key, u_key = ref_split(key, 3)
            x, vv = t(0.0), t(-1.0)
            while vv <= 0:
                x_key, sub = ref_split(x_key, 2)
                x = _normal_in(sub, (), dtype)[()]
                vv = t(one + t(x * c))
            x2, v = t(x * x), t(t(vv * vv) * vv)
            u = ref_uniform(u_key, (), dtype)[()]
        if log_space:
            log_u = -t(ref_exponential(subkey, (), dtype)[()])
            log_boost = t(0.0) if boost or log_u == 0 else t(log_u / alpha)
            return t(t(t(np.log(d)) + t(np.log(v))) + log_boost)
        s = t(one - ref_uniform(subkey, (), dtype)[()])
        factor = one if boost else t(s ** t(one / alpha))
        return t(t(d * v) * factor)


def ref_gamma(key, a, shape=None, dtype=np.float32, log_space=False):
    a = np.asarray(a)
    shape = a.shape if shape is None else tuple(shape)
    alphas = np.broadcast_to(a.astype(dtype), shape).ravel()
    if alphas.size == 0:
        return np.zeros(shape, dtype)
    keys = ref_split(key, alphas.size)
    out = [ref_gamma_one(k, al, dtype, log_space) for k, al in zip(keys, alphas)]
    return np.array(out, dtype=dtype).reshape(shape)


def ref_loggamma(key, a, shape=None, dtype=np.float32):
    return ref_gamma(key, a, shape, dtype, log_space=True)


def _shape_of(shape, *params):
    return np.broadcast_shapes(*(np.shape(p) for p in params)) if shape is None else tuple(shape)


def ref_beta(key, a, b, shape=None, dtype=np.float32):
    shape = _shape_of(shape, a, b)
    ka, kb = ref_split(key, 2)
    la, lb = ref_loggamma(ka, np.broadcast_to(a, shape), shape, dtype), ref_loggamma(kb, np.broadcast_to(b, shape), shape, dtype)
    top = np.maximum(la, lb)
    ga, gb = np.exp((la - top).astype(np.float64)), np.exp((lb - top).astype(np.float64))
    return ga / (ga + gb)


def ref_dirichlet(key, alpha, shape=None, dtype=np.float32):
    alpha = np.asarray(alpha)
    batch = alpha.shape[:-1] if shape is None else tuple(shape)
    logs = ref_loggamma(key, np.broadcast_to(alpha, (*batch, alpha.shape[-1])), (*batch, alpha.shape[-1]), dtype)
    e = np.exp(logs.astype(np.float64) - logs.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def ref_chisquare(key, df, shape=None, dtype=np.float32):
    shape = _shape_of(shape, df)
    half = (np.asarray(df).astype(dtype) / np.asarray(2, dtype)).astype(dtype)
    return 2.0 * np.exp(ref_loggamma(key, np.broadcast_to(half, shape), shape, dtype).astype(np.float64))


def ref_t(key, df, shape=None, dtype=np.float32):
    shape = _shape_of(shape, df)
    kn, kg = ref_split(key, 2)
    n = _normal_in(kn, shape, dtype).astype(np.float64)
    half = np.broadcast_to((np.asarray(df).astype(dtype) / np.asarray(2, dtype)).astype(dtype), shape)
    return n * np.sqrt(half.astype(np.float64) / ref_gamma(kg, half, shape, dtype).astype(np.float64))


def _ref_transformed_rejection(key, shape, dtype, v_r, propose):
    """Hormann's rejection rounds (PTRS, BTRS) until every element has accepted once: the quick test
    |u| <= 0.43 and v <= v_r, or propose's exact test; the last accepted candidate stays (as JAX)."""
    t = np.dtype(dtype).type
    k_out, accepted, rng = np.full(shape, -1, dtype), np.zeros(shape, bool), key
    while not accepted.all():
        rng, k0, k1 = ref_split(rng, 3)
        u = ref_uniform(k0, shape, dtype) - t(0.5)
        v = ref_uniform(k1, shape, dtype)
        us = t(0.5) - np.abs(u)
        k, exact = propose(u, v, us)
        accept = ((us >= 0.07) & (v <= v_r)) | exact
        k_out, accepted = np.where(accept, k, k_out), accepted | accept
    return k_out


def ref_poisson(key, lam, shape=None, dtype=np.int32):
    """Knuth's method below 10 and Hormann's PTRS above, in float32 (as JAX)."""
    f32 = np.float32
    shape = _shape_of(shape, lam)
    lam = np.broadcast_to(np.asarray(lam).astype(f32), shape)
    if lam.size == 0:
        return np.zeros(shape, dtype)
    knuth = np.isnan(lam) | (lam < 10)
    with np.errstate(all="ignore"):
        lam_k = np.where(knuth, lam, f32(0))
        k, rng, log_prod = np.zeros(shape, np.int64), key, np.zeros(shape, f32)
        while (log_prod > -lam_k).any():
            rng, sub = ref_split(rng, 2)
            k = np.where(log_prod > -lam_k, k + 1, k)
            log_prod = (log_prod + np.log(ref_uniform(sub, shape, f32))).astype(f32)
        knuth_out = k - 1
        lam_r = np.where(knuth, f32(1e5), lam).astype(f32)
        log_lam = np.log(lam_r)
        b = (f32(0.931) + f32(2.53) * np.sqrt(lam_r)).astype(f32)
        a = (f32(-0.059) + f32(0.02483) * b).astype(f32)
        inv_alpha = (f32(1.1239) + f32(1.1328) / (b - f32(3.4))).astype(f32)
        v_r = (f32(0.9277) - f32(3.6224) / (b - f32(2))).astype(f32)

        def propose(u, v, us):
            kk = np.floor((f32(2) * a / us + b) * u + lam_r + f32(0.43)).astype(f32)
            s = np.log(v * inv_alpha / (a / (us * us) + b)).astype(f32)
            t = (-lam_r + kk * log_lam - sc.gammaln(kk.astype(np.float64) + 1).astype(f32)).astype(f32)
            return kk, ~((kk < 0) | ((us < f32(0.013)) & (v > us))) & (s <= t)

        k_out = _ref_transformed_rejection(key, shape, f32, v_r, propose)
        out = np.where(knuth, knuth_out, k_out.astype(np.int64))
    info = np.iinfo(dtype)  # float -> int conversion saturates in ember (as XLA)
    return np.clip(np.where(lam == 0, 0, out), info.min, info.max).astype(dtype)


def ref_geometric(key, p, shape=None, dtype=np.int32):
    shape = _shape_of(shape, p)
    p = np.asarray(p)
    u = ref_uniform(key, shape, p.dtype).astype(np.float64)
    u = np.where(u == 0, 1.0, u)
    g = np.floor(np.log(u) / np.log1p(-p.astype(np.float64))) + 1
    return np.clip(g, np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype)


def ref_multivariate_normal(key, mean, cov, shape=None, dtype=np.float32, method="cholesky"):
    mean, cov = np.asarray(mean, np.float64), np.asarray(cov, np.float64)
    batch = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2]) if shape is None else tuple(shape)
    n = mean.shape[-1]
    z = _normal_in(key, (*batch, n), dtype).astype(np.float64)
    if method == "cholesky":
        factor = np.linalg.cholesky(cov)
    else:
        w, v = np.linalg.eigh(cov)
        factor = v * np.sqrt(w)[..., None, :]
    return mean + np.einsum("...ij,...j->...i", factor, z)


def ref_orthogonal(key, n, shape=(), dtype=np.float32, m=None):
    m = n if m is None else m
    z = ref_normal(key, (*shape, max(n, m), min(n, m)), dtype).astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    q, r = np.linalg.qr(z)
    d = np.diagonal(r, 0, -2, -1)
    q = q * (d / np.abs(d))[..., None, :]
    return q if n >= m else np.swapaxes(q, -1, -2)


def _rademacher_ref(key, shape, dtype, bits_dtype):
    # bernoulli(key, 0.5) draws uniforms of the default float: float64 under x64 (the 64-bit samples).
    return np.where(ref_uniform(key, shape, bits_dtype) < 0.5, 1, -1).astype(dtype)


def ref_ball(key, d, p=2, shape=(), dtype=np.float32):
    k1, k2 = ref_split(key, 2)
    kg, ks = ref_split(k1, 2)
    g = ref_gamma(kg, np.asarray(1.0 / p, dtype), (*shape, d), dtype).astype(np.float64)
    default = np.float64 if np.dtype(dtype).itemsize == 8 else np.float32
    x = _rademacher_ref(ks, (*shape, d), np.float64, default) * g ** (1.0 / p)
    e = ref_exponential(k2, shape, dtype)
    return x / ((np.abs(x) ** p).sum(-1) + e)[..., None] ** (1.0 / p)


_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
                  0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287])


def _stirling_tail_ref(k):
    """log k! - Stirling's formula: tabulated for k <= 9, 1/12m - 1/360m^3 + 1/1260m^5 (m = k + 1) above."""
    m = k + 1.0
    return np.where(k <= 9, _TAIL[np.clip(k, 0, 9).astype(int)], (1 / 12 - (1 / 360 - 1 / 1260 / m**2) / m**2) / m)


def ref_binomial(key, n, p, shape=None, dtype=np.float32):
    """JAX's binomial (inversion where n min(p, 1-p) <= 10, Hormann's BTRS above) in `dtype` arithmetic."""
    t = np.dtype(dtype).type
    shape = _shape_of(shape, n, p)
    count = np.broadcast_to(np.asarray(n).astype(dtype), shape)
    prob = np.broadcast_to(np.asarray(p).astype(dtype), shape)
    if count.size == 0:
        return np.zeros(shape, dtype)
    with np.errstate(all="ignore"):
        lt_half = prob < 0.5
        q = np.where(lt_half, prob, t(1) - prob).astype(dtype)
        bad_n, inf_n = np.isnan(count) | (count < 0), np.isinf(count)
        q_nan, q_neg = np.isnan(q), q < 0
        q = np.where(q_nan | q_neg, t(0.01), q).astype(dtype)
        inversion = bad_n | (count * q <= 10)
        count = np.floor(count)
        n_inv = np.where(inversion & ~bad_n, count, t(0)).astype(dtype)
        n_btrs = np.where(inversion | inf_n, t(1e4), count).astype(dtype)
        q_btrs = np.where(inversion, t(0.5), q).astype(dtype)
        # inversion: count geometric waiting times until they pass n
        log1mp = np.log1p(-q).astype(dtype)
        num, total, rng = np.zeros(shape, dtype), np.zeros(shape, dtype), key
        while (total <= n_inv).any():
            sub, rng = ref_split(rng, 2)
            num = np.where(total <= n_inv, num + t(1), num).astype(dtype)
            u = ref_uniform(sub, shape, dtype)
            total = (total + np.ceil(np.log(u) / log1mp)).astype(dtype)
        inv = num - t(1)
        # BTRS
        nn, pp = n_btrs, q_btrs
        sd = np.sqrt(nn * pp * (t(1) - pp)).astype(dtype)
        b = (t(1.15) + t(2.53) * sd).astype(dtype)
        a = (t(-0.0873) + t(0.0248) * b + t(0.01) * pp).astype(dtype)
        c = (nn * pp + t(0.5)).astype(dtype)
        v_r = (t(0.92) - t(4.2) / b).astype(dtype)
        r = (pp / (t(1) - pp)).astype(dtype)
        alpha = ((t(2.83) + t(5.1) / b) * sd).astype(dtype)
        m = np.floor((nn + t(1)) * pp).astype(dtype)

        def propose(u, v, us):
            k = np.floor((t(2) * a / us + b) * u + c).astype(dtype)
            reject = (k < 0) | (k > nn)
            lv = np.log(v * alpha / (a / (us * us) + b)).astype(dtype)
            kk = np.clip(k, 0, nn)
            bound = ((m + 0.5) * np.log((m + 1) / (r * (nn - m + 1))) + (nn + 1) * np.log((nn - m + 1) / (nn - kk + 1))
                     + (kk + 0.5) * np.log(r * (nn - kk + 1) / (kk + 1)))
            tails = (_stirling_tail_ref(m) + _stirling_tail_ref(nn - m)) - (_stirling_tail_ref(kk) + _stirling_tail_ref(nn - kk))
            return k, ~reject & (lv <= (bound + tails).astype(dtype))

        k_out = _ref_transformed_rejection(key, shape, dtype, v_r, propose)
        out = np.where(inversion, inv, k_out).astype(np.float64)
        invalid = q_neg | q_nan | bad_n
        out = np.where(invalid, np.nan, np.where(inf_n, np.inf, out))
        return np.where(lt_half | invalid | inf_n, out, count - out)


def ref_pareto(key, b, shape=None, dtype=np.float32):
    return np.exp(ref_exponential(key, _shape_of(shape, b), dtype) / np.asarray(b, np.float64))


def ref_lognormal(key, sigma=1.0, shape=None, dtype=np.float32):
    return np.exp(_normal_in(key, _shape_of(shape, sigma), dtype).astype(np.float64) * np.asarray(sigma, np.float64))


def ref_weibull_min(key, scale, concentration, shape=(), dtype=np.float32):
    e = ref_exponential(key, tuple(shape), dtype)
    return e ** (1.0 / np.asarray(concentration, np.float64)) * np.asarray(scale, np.float64)


def ref_rayleigh(key, scale, shape=None, dtype=np.float32):
    u = ref_uniform(key, _shape_of(shape, scale), dtype).astype(np.float64)
    return np.asarray(scale, np.float64) * np.sqrt(-2 * np.log(u))


def ref_wald(key, mean, shape=None, dtype=np.float32):
    """Michael, Schucany and Haas (1976)."""
    shape = _shape_of(shape, mean)
    k1, k2 = ref_split(key, 2)
    mu = np.broadcast_to(np.asarray(mean, np.float64), shape)
    y = _normal_in(k1, shape, dtype).astype(np.float64) ** 2
    z = ref_uniform(k2, shape, dtype).astype(np.float64)
    t = mu * y  # the method's root mu + mu^2 y/2 - (mu/2) sqrt(4 mu y + mu^2 y^2), without cancellation:
    x = mu / (1 + t / 2 + np.sqrt(t + t * t / 4))
    return np.where(z <= mu / (mu + x), x, mu**2 / x)


def ref_triangular(key, left, mode, right, shape=None, dtype=np.float32):
    shape = _shape_of(shape, left, mode, right)
    lo, md, hi = (np.broadcast_to(np.asarray(v, np.float64), shape) for v in (left, mode, right))
    u = ref_uniform(key, shape, dtype).astype(np.float64)
    return np.where(u < (md - lo) / (hi - lo), lo + np.sqrt(u * (hi - lo) * (md - lo)), hi - np.sqrt((1 - u) * (hi - lo) * (hi - md)))


def ref_rademacher(key, shape=(), dtype=np.int32):
    default = np.float64 if np.dtype(dtype).itemsize == 8 else np.float32
    return _rademacher_ref(key, tuple(shape), dtype, default)


def ref_maxwell(key, shape=(), dtype=np.float32):
    n = _normal_in(key, (*shape, 3), dtype).astype(np.float64)
    return np.sqrt((n**2).sum(-1))


def ref_double_sided_maxwell(key, loc, scale, shape=(), dtype=np.float32):
    shape = tuple(shape) + np.broadcast_shapes(np.shape(loc), np.shape(scale))
    km, ks = ref_split(key, 2)
    default = np.float64 if np.dtype(dtype).itemsize == 8 else np.float32
    sign = _rademacher_ref(ks, shape, np.float64, default)
    return sign * ref_maxwell(km, shape, dtype) * np.asarray(scale, np.float64) + np.asarray(loc, np.float64)


def ref_f(key, dfnum, dfden, shape=None, dtype=np.float32):
    shape = _shape_of(shape, dfnum, dfden)
    k_den, k_num = ref_split(key, 2)
    x = ref_chisquare(k_num, np.broadcast_to(dfnum, shape), shape, dtype) / np.asarray(dfnum, np.float64)
    y = ref_chisquare(k_den, np.broadcast_to(dfden, shape), shape, dtype) / np.asarray(dfden, np.float64)
    return x / y


def ref_generalized_normal(key, p, shape=(), dtype=np.float32):
    kg, ks = ref_split(key, 2)
    default = np.float64 if np.dtype(dtype).itemsize == 8 else np.float32
    g = ref_gamma(kg, np.asarray(1.0 / p, dtype), tuple(shape), dtype).astype(np.float64)
    return _rademacher_ref(ks, tuple(shape), np.float64, default) * g ** (1.0 / p)


def ref_random_gamma_grad(a, x):
    """-(dP/da) / (dP/dx), dP/da by Richardson-extrapolated central differences of SciPy's regularized
    incomplete gamma (of Q = 1 - P above the mean, where P rounds to 1), in float64."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    upper = x > a
    f = lambda s: np.where(upper, -sc.gammaincc(s, x), sc.gammainc(s, x))  # noqa: E731
    h = 1e-3 * a

    def central(h):
        return (f(a + h) - f(a - h)) / (2 * h)

    dp_da = (4 * central(h / 2) - central(h)) / 3
    pdf = np.exp((a - 1) * np.log(x) - x - sc.gammaln(a))
    return -dp_da / pdf


# --- samples ---------------------------------------------------------------------------------------------


def _positive(rng, shape, dtype, low=0.3, high=4.0):
    d = dtype if np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16 else np.float32
    return make_array(rng, shape, d, low, high)


def _no_param_samples(rng, dtype):
    return [Sample((_key(rng), s, dtype)) for s in ((), (0,), (5,), (2, 3))]


def _one_param_samples(low=0.3, high=4.0):
    def make(rng, dtype):
        return [Sample((_key(rng), _positive(rng, (), dtype, low, high), (4,), dtype)),
                Sample((_key(rng), _positive(rng, (3,), dtype, low, high), None, dtype)),
                Sample((_key(rng), _positive(rng, (3,), dtype, low, high), (2, 3), dtype)),
                Sample((_key(rng), _positive(rng, (), dtype, low, high), (0,), dtype))]  # fmt: skip
    return make


def _beta_samples(rng, dtype):
    return [Sample((_key(rng), _positive(rng, (3,), dtype), _positive(rng, (2, 1), dtype), None, dtype)),
            Sample((_key(rng), _positive(rng, (), dtype, 0.05, 0.5), _positive(rng, (), dtype), (4,), dtype))]


def _dirichlet_samples(rng, dtype):
    return [Sample((_key(rng), _positive(rng, (3,), dtype), (2,), dtype)),
            Sample((_key(rng), _positive(rng, (2, 4), dtype, 0.1, 2.0), None, dtype))]


def _poisson_samples(rng, dtype):
    lam = np.array([0.0, 0.7, 3.0, 9.5, 12.0, 150.0], np.float32)
    return [Sample((_key(rng), lam, None, dtype)), Sample((_key(rng), np.float32(4.0), (2, 3), dtype)),
            Sample((_key(rng), np.float32(40.0), (0,), dtype))]


def _geometric_samples(rng, dtype):
    return [Sample((_key(rng), np.array([0.05, 0.3, 0.9, 1.0], np.float32), None, dtype)),
            Sample((_key(rng), np.float32(0.5), (2, 3), dtype))]


def _mvn_samples(rng, dtype):
    d = dtype if np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16 else np.float32
    a = rng.normal(size=(3, 3))
    cov = (a @ a.T + 3 * np.eye(3)).astype(d)
    return [Sample((_key(rng), make_array(rng, (3,), d), cov, (4,), dtype)),
            Sample((_key(rng), make_array(rng, (2, 3), d), cov, None, dtype)),
            Sample((_key(rng), make_array(rng, (3,), d), cov, None, dtype, "eigh"))]


def _orthogonal_samples(rng, dtype):
    return [Sample((_key(rng), 3, (), dtype)), Sample((_key(rng), 2, (2,), dtype)),
            Sample((_key(rng), 4, (), dtype, 2)), Sample((_key(rng), 2, (), dtype, 3))]


def _ball_samples(rng, dtype):
    return [Sample((_key(rng), 3, 2, (4,), dtype)), Sample((_key(rng), 2, 1.5, (), dtype))]


def _gamma_grad_samples(rng, dtype):
    return [Sample((make_array(rng, (5,), dtype, 0.2, 6.0), make_array(rng, (5,), dtype, 0.05, 9.0))),
            Sample((make_array(rng, (2, 1), dtype, 0.5, 30.0), make_array(rng, (3,), dtype, 0.5, 40.0))),
            Sample((make_array(rng, (), dtype, 1.0, 3.0), make_array(rng, (0,), dtype, 1.0, 2.0)))]


def _binomial_samples(rng, dtype):
    n = np.array([0.0, 5.0, 30.0, 200.0, 7.5, 1000.0], np.float32)
    p = np.array([0.4, 0.9, 0.2, 0.6, 0.5, 0.97], np.float32)
    return [Sample((_key(rng), n, p, None, dtype)), Sample((_key(rng), np.float32(12.0), np.float32(0.3), (2, 3), dtype)),
            Sample((_key(rng), np.array([-1.0, np.inf, 4.0], np.float32), np.array([0.5, 0.5, 1.5], np.float32), None, dtype))]


def _weibull_samples(rng, dtype):
    return [Sample((_key(rng), _positive(rng, (3,), dtype), _positive(rng, (), dtype, 0.5, 3.0), (2, 3), dtype)),
            Sample((_key(rng), 1.0, 2.0, (), dtype))]


def _triangular_samples(rng, dtype):
    lo = _positive(rng, (3,), dtype, -2.0, -1.0)
    return [Sample((_key(rng), lo, _positive(rng, (), dtype, -0.5, 0.5), _positive(rng, (2, 1), dtype, 1.0, 3.0), None, dtype))]


def _dsm_samples(rng, dtype):
    return [Sample((_key(rng), _positive(rng, (3,), dtype, -1.0, 1.0), _positive(rng, (), dtype), (2,), dtype)),
            Sample((_key(rng), 0.0, 1.0, (4,), dtype))]


def _two_param_samples(rng, dtype):
    return [Sample((_key(rng), _positive(rng, (3,), dtype, 1.0, 6.0), _positive(rng, (2, 1), dtype, 2.0, 8.0), None, dtype))]


def _gn_samples(rng, dtype):
    return [Sample((_key(rng), p, s, dtype)) for p, s in ((2.0, (4,)), (0.7, (2, 3)), (1.0, ()))]


def _float_out(i):
    return lambda dtype, sample: np.dtype(sample.args[i])


def _sampler(name, op, ref, samples, dtypes=FLOATING, unsupported=FLOAT_SAMPLER, out=3, tol=None):
    return OpInfo(f"random.{name}", op, ref, dtypes, samples, unsupported, primitives=("threefry2x32",),
                  out_dtype_of=_float_out(out), ref_in_dtype=True, tol=tol or _LOW, transforms=NOT_RANDOM_TRANSFORMS,
                  nondiff=RANDOM_NONDIFF if name not in _REPARAMETERISED else _IMPLICIT)  # fmt: skip


_REPARAMETERISED = {"gamma", "loggamma", "beta", "dirichlet", "chisquare", "t"}
_IMPLICIT = ("the reparameterised gradient in the shape parameter is the implicit one (-dF/da / pdf), not the "
             "derivative of the fixed-key sampler that finite differences measure; test_random_distributions.py "
             "checks it against SciPy")  # fmt: skip

register(
    _sampler("exponential", er.exponential, ref_exponential, _no_param_samples, out=2),
    _sampler("laplace", er.laplace, ref_laplace, _no_param_samples, out=2),
    _sampler("logistic", er.logistic, ref_logistic, _no_param_samples, out=2),
    _sampler("cauchy", er.cauchy, ref_cauchy, _no_param_samples, out=2, tol={**_LOW, np.dtype(np.float32): (1e-4, 1e-5)}),
    _sampler("gamma", er.gamma, ref_gamma, _one_param_samples()),
    _sampler("loggamma", er.loggamma, ref_loggamma, _one_param_samples(0.01, 3.0)),
    _sampler("beta", er.beta, ref_beta, _beta_samples, out=4),
    _sampler("dirichlet", er.dirichlet, ref_dirichlet, _dirichlet_samples),
    _sampler("chisquare", er.chisquare, ref_chisquare, _one_param_samples(0.5, 6.0)),
    _sampler("t", er.t, ref_t, _one_param_samples(1.0, 8.0)),
    _sampler("poisson", er.poisson, ref_poisson, _poisson_samples, INTEGER, INT_SAMPLER),
    _sampler("geometric", er.geometric, ref_geometric, _geometric_samples, INTEGER, INT_SAMPLER),
    _sampler("multivariate_normal", er.multivariate_normal, ref_multivariate_normal, _mvn_samples, (np.float32, np.float64),
             "the covariance is factored by LAPACK (float32/float64); draws floating-point numbers", out=4),
    _sampler("orthogonal", er.orthogonal, ref_orthogonal, _orthogonal_samples, (np.float32, np.float64) + COMPLEX,
             "QR by LAPACK: float32/float64/complex64/complex128", out=3,
             tol={np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.complex64): (1e-4, 1e-5)}),
    _sampler("ball", er.ball, ref_ball, _ball_samples, out=4),
    _sampler("binomial", er.binomial, ref_binomial, _binomial_samples, out=4),
    _sampler("pareto", er.pareto, ref_pareto, _one_param_samples(1.0, 4.0)),
    _sampler("lognormal", er.lognormal, ref_lognormal, _one_param_samples(0.2, 1.5)),
    _sampler("weibull_min", er.weibull_min, ref_weibull_min, _weibull_samples, out=4),
    _sampler("rayleigh", er.rayleigh, ref_rayleigh, _one_param_samples()),
    _sampler("wald", er.wald, ref_wald, _one_param_samples(0.5, 3.0)),
    _sampler("triangular", er.triangular, ref_triangular, _triangular_samples, out=5),
    _sampler("maxwell", er.maxwell, ref_maxwell, _no_param_samples, out=2),
    _sampler("double_sided_maxwell", er.double_sided_maxwell, ref_double_sided_maxwell, _dsm_samples, out=4),
    _sampler("f", er.f, ref_f, _two_param_samples, out=4),
    _sampler("generalized_normal", er.generalized_normal, ref_generalized_normal, _gn_samples, out=3),
    _sampler("rademacher", er.rademacher, ref_rademacher, _no_param_samples, SIGNED + FLOATING,
             "random signs: signed integer or floating dtypes", out=2),
    OpInfo("lax.random_gamma_grad", lax.random_gamma_grad, ref_random_gamma_grad, FLOATING, _gamma_grad_samples,
           FLOAT_ONLY, primitives=("random_gamma_grad",), tol={np.dtype(np.float64): (1e-7, 1e-9), BF16: (3e-2, 3e-2)},
           transforms=frozenset({"vmap", "jit"}),
           nondiff="random_gamma_grad has no derivative (as in JAX); its jvp rules raise an EmberError"),
)  # fmt: skip
