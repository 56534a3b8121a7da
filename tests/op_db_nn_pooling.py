"""Op-database entries for ember.nn's pooling and resampling: the functions and the layers.

The references are loops over windows in NumPy, written from PyTorch's definitions (its output size rule
with ceil_mode, its average divisors, its adaptive windows, its source-index formulas for interpolation).
Max pools' eager samples hold few distinct values, so ties decide the indices (the first maximum wins);
their autodiff samples hold distinct values (``spread``), where the choice does not change under a step.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from op_db import ALL, FLOATING, SUM_TOLERANCES, OpInfo, Sample, make_array, register, spread

from ember import nn
from ember.nn import functional as F

FLOAT_POOLS = "ember's pools take floating inputs (averages; the max pools' gradients)"
NEAREST_ANY = "nearest interpolation copies elements, so it takes every dtype"


# --- references ------------------------------------------------------------------------------------------


def _batch(x, n):
    x = np.asarray(x)
    return (x[None], True) if x.ndim == n + 1 else (x, False)


def _tup(v, n):
    return tuple(v) * (n if len(tuple(v)) == 1 else 1) if isinstance(v, (list, tuple)) else (v,) * n


def _out_len(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def max_pool_ref(n):
    def ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        x, unbatched = _batch(x, n)
        k = _tup(kernel_size, n)
        s = k if stride is None else _tup(stride, n)
        p, d = _tup(padding, n), _tup(dilation, n)
        sizes = x.shape[2:]
        outs = [_out_len(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
        vals = np.zeros((*x.shape[:2], *outs), dtype=x.dtype)
        idx = np.zeros((*x.shape[:2], *outs), dtype=np.int64)
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            plane = x[b, c]
            for o in itertools.product(*map(range, outs)):
                best, where = -np.inf, None
                for off in itertools.product(*map(range, k)):
                    pos = tuple(o[i] * s[i] - p[i] + off[i] * d[i] for i in range(n))
                    if not all(0 <= pos[i] < sizes[i] for i in range(n)):
                        continue
                    if where is None:
                        where = pos
                    if plane[pos] > best:  # strict: the first maximum wins
                        best, where = plane[pos], pos
                vals[(b, c, *o)] = best
                idx[(b, c, *o)] = np.ravel_multi_index(where, sizes)
        if unbatched:
            vals, idx = vals[0], idx[0]
        return (vals, idx) if return_indices else vals

    return ref


def avg_pool_ref(n):
    def ref(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        x, unbatched = _batch(x, n)
        k = _tup(kernel_size, n)
        s = k if stride is None else _tup(stride, n)
        p = _tup(padding, n)
        sizes = x.shape[2:]
        outs = [_out_len(sizes[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(n)]
        out = np.zeros((*x.shape[:2], *outs), dtype=x.dtype)
        for o in itertools.product(*map(range, outs)):
            start = [o[i] * s[i] - p[i] for i in range(n)]
            end = [min(start[i] + k[i], sizes[i] + p[i]) for i in range(n)]
            pool = math.prod(end[i] - start[i] for i in range(n))
            lo = [max(v, 0) for v in start]
            hi = [min(end[i], sizes[i]) for i in range(n)]
            window = x[(slice(None), slice(None), *(slice(lo[i], hi[i]) for i in range(n)))]
            count = math.prod(hi[i] - lo[i] for i in range(n))
            divisor = divisor_override or (pool if count_include_pad else count)
            out[(slice(None), slice(None), *o)] = window.sum(axis=tuple(range(2, 2 + n))) / divisor
        return out[0] if unbatched else out

    return ref


def lp_pool_ref(n):
    def ref(x, norm_type, kernel_size, stride=None, ceil_mode=False):
        if norm_type == np.inf:
            return max_pool_ref(n)(np.abs(x), kernel_size, stride, 0, 1, ceil_mode)
        k = _tup(kernel_size, n)
        # PyTorch: avg_pool(x ** p) * prod(kernel), its divisor counting only the window inside the input.
        mean = avg_pool_ref(n)(np.asarray(x) ** norm_type, k, stride, 0, ceil_mode)
        return (np.sign(mean) * np.abs(mean) * math.prod(k)) ** (1.0 / norm_type)

    return ref


def _adaptive_windows(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def adaptive_ref(n, kind):
    def ref(x, output_size, return_indices=False):
        x, unbatched = _batch(x, n)
        sizes = x.shape[2:]
        o = _tup(output_size, n)
        outs = [sizes[i] if o[i] is None else o[i] for i in range(n)]
        vals = np.zeros((*x.shape[:2], *outs), dtype=x.dtype)
        idx = np.zeros((*x.shape[:2], *outs), dtype=np.int64)
        wins = [_adaptive_windows(sizes[i], outs[i]) for i in range(n)]
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            for pos in itertools.product(*map(range, outs)):
                ranges = [range(*wins[i][pos[i]]) for i in range(n)]
                cells = list(itertools.product(*ranges))
                values = np.array([x[(b, c, *cell)] for cell in cells])
                if kind == "avg":
                    vals[(b, c, *pos)] = values.mean()
                else:
                    j = int(np.argmax(values))  # the first maximum in row-major order
                    vals[(b, c, *pos)] = values[j]
                    idx[(b, c, *pos)] = np.ravel_multi_index(cells[j], sizes)
        if unbatched:
            vals, idx = vals[0], idx[0]
        return (vals, idx) if return_indices else vals

    return ref


def _opmath(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def interpolate_ref(x, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
    """PyTorch's upsample kernels, one output element at a time (the source index in its opmath type)."""
    x = np.asarray(x)
    n = x.ndim - 2
    f = _opmath(x.dtype) if mode not in ("nearest", "nearest-exact") else np.float32
    sizes = x.shape[2:]
    if size is not None:
        outs, scales = list(_tup(size, n)), [None] * n
    else:
        scales = list(_tup(scale_factor, n))
        outs = [int(math.floor(sizes[i] * float(scales[i]))) for i in range(n)]
        if recompute_scale_factor:
            scales = [None] * n

    def scale_of(i):
        return f(1.0 / scales[i]) if scales[i] else f(sizes[i]) / f(outs[i])

    def sources(i, j):
        """[(source index, weight)] of output position j along spatial dimension i."""
        if mode in ("nearest", "nearest-exact"):
            if mode == "nearest" and outs[i] == sizes[i]:
                return [(j, 1.0)]
            if mode == "nearest" and outs[i] == 2 * sizes[i]:
                return [(j // 2, 1.0)]
            shift = f(0.5) if mode == "nearest-exact" else f(0)
            return [(min(int(np.floor((f(j) + shift) * scale_of(i))), sizes[i] - 1), 1.0)]
        if align_corners:
            src = f(j) * (f(sizes[i] - 1) / f(outs[i] - 1) if outs[i] > 1 else f(0))
        else:
            src = max(scale_of(i) * (f(j) + f(0.5)) - f(0.5), f(0))
        lo = int(src)
        lam = min(max(float(src) - lo, 0.0), 1.0)
        return [(lo, 1.0 - lam), (lo + (1 if lo < sizes[i] - 1 else 0), lam)]

    wide = x.astype(np.float64) if x.dtype.kind in "fV" else x
    out = np.zeros((*x.shape[:2], *outs), dtype=wide.dtype)
    for pos in itertools.product(*map(range, outs)):
        total = 0
        for combo in itertools.product(*(sources(i, pos[i]) for i in range(n))):
            weight = math.prod(w for _, w in combo)
            total = total + weight * wide[(slice(None), slice(None), *(c for c, _ in combo))]
        out[(slice(None), slice(None), *pos)] = total
    return out


def max_unpool_ref(n):
    def ref(x, indices, kernel_size, stride=None, padding=0, output_size=None):
        x, unbatched = _batch(x, n)
        indices = np.asarray(indices)[None] if unbatched else np.asarray(indices)
        k = _tup(kernel_size, n)
        s = k if stride is None else _tup(stride, n)
        p = _tup(padding, n)
        sizes = [(x.shape[2 + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(n)]
        if output_size is not None:
            sizes = list(output_size)[-n:]
        out = np.zeros((*x.shape[:2], math.prod(sizes)), dtype=x.dtype)
        for b, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            for pos in itertools.product(*(range(m) for m in x.shape[2:])):
                out[b, c, indices[(b, c, *pos)]] = x[(b, c, *pos)]
        out = out.reshape(*x.shape[:2], *sizes)
        return out[0] if unbatched else out

    return ref


def pixel_shuffle_ref(x, upscale_factor):
    r = upscale_factor
    *batch, c, h, w = x.shape
    out = np.zeros((*batch, c // (r * r), h * r, w * r), dtype=x.dtype)
    for ch, i, j in itertools.product(range(c // (r * r)), range(r), range(r)):
        out[..., ch, i::r, j::r] = x[..., ch * r * r + i * r + j, :, :]
    return out


def pixel_unshuffle_ref(x, downscale_factor):
    r = downscale_factor
    *batch, c, h, w = x.shape
    out = np.zeros((*batch, c * r * r, h // r, w // r), dtype=x.dtype)
    for ch, i, j in itertools.product(range(c), range(r), range(r)):
        out[..., ch * r * r + i * r + j, :, :] = x[..., ch, i::r, j::r]
    return out


# --- samples -----------------------------------------------------------------------------------------------


def _ties(rng, shape, dtype):
    return make_array(rng, shape, dtype, 0, 3).round().astype(dtype)  # few values: ties pick the first maximum


def _samples(cases, values):
    def make(rng, dtype):
        return [Sample((values(rng, shape, dtype), *args), dict(kw)) for shape, args, kw in cases]

    return make


def _uniform(rng, shape, dtype):
    return make_array(rng, shape, dtype, -2, 3)


def _positive(rng, shape, dtype):
    return make_array(rng, shape, dtype, 0.5, 2)


# (input shape, positional args, keyword args); with return_indices the wrapper returns the indices too.
MAX_CASES = {
    1: [((2, 3, 9), (3,), {}), ((2, 3, 9), (3, 2, 1), {"ceil_mode": True, "return_indices": True}),
        ((3, 8), (2,), {"dilation": 2, "return_indices": True}), ((0, 2, 5), (2,), {})],
    2: [((2, 3, 7, 6), (3,), {}), ((2, 2, 7, 6), ((3, 2), (2, 1), (1, 1), (1, 2), True, True), {}),
        ((3, 7, 6), (2, 2, 1), {"ceil_mode": True, "return_indices": True}), ((0, 2, 5, 5), (2,), {}),
        ((1, 2, 5, 4), (3, 2, 1, 2), {"return_indices": True})],
    3: [((1, 2, 5, 4, 5), ((2, 3, 2), (1, 2, 2), (1, 1, 0), (1, 1, 2), True, True), {}),
        ((2, 4, 4, 3), (2,), {"return_indices": True})],
}
AVG_CASES = {
    1: [((2, 3, 9), (3,), {}), ((2, 3, 9), (3, 2, 1, True, False), {}), ((3, 8), (4, 3, 2), {"ceil_mode": True}),
        ((0, 2, 5), (2,), {})],
    2: [((2, 3, 7, 6), (3,), {}), ((2, 2, 7, 6), ((3, 2), (2, 1), (1, 1), True, False), {}),
        ((3, 7, 6), (3, 2, 1), {"ceil_mode": True, "divisor_override": 5}), ((0, 2, 5, 5), (2,), {}),
        ((1, 2, 5, 4), (2, 3, 1), {"ceil_mode": True})],
    3: [((1, 2, 5, 4, 5), ((2, 3, 2), (1, 2, 2), (1, 1, 0), True, False), {}),
        ((2, 4, 4, 3), (2,), {"divisor_override": 3}), ((1, 1, 5, 5, 4), (3, 2, 1), {"ceil_mode": True})],
}
LP_CASES = {
    1: [((2, 3, 9), (2, 3), {}), ((2, 3, 9), (3.0, 3, 2), {"ceil_mode": True}), ((3, 8), (1.5, 2), {}),
        ((2, 7), (np.inf, 3, 2), {})],
    2: [((2, 3, 7, 6), (2, 3), {}), ((2, 2, 7, 6), (1.5, (3, 2), (2, 1), True), {}), ((3, 5, 6), (np.inf, 2), {})],
    3: [((1, 2, 5, 4, 5), (2, (2, 3, 2), (1, 2, 2), True), {}), ((2, 4, 4, 3), (3, 2), {})],
}
ADAPTIVE_CASES = {
    1: [((2, 3, 9), (4,), {}), ((2, 3, 7), (7,), {}), ((3, 5), (3,), {}), ((0, 2, 6), (4,), {}), ((2, 3, 5), (8,), {})],
    2: [((2, 3, 7, 6), ((3, 4),), {}), ((2, 2, 7, 6), ((None, 4),), {}), ((3, 5, 6), (1,), {}),
        ((1, 2, 5, 4), ((2, 7),), {}), ((0, 2, 5, 5), (2,), {})],
    3: [((1, 2, 5, 4, 5), ((2, 3, None),), {}), ((2, 4, 4, 3), (3,), {})],
}


def _with_indices(cases):
    """The adaptive max pools' cases again, with return_indices."""
    return cases + [(shape, args, {**kw, "return_indices": True}) for shape, args, kw in cases]


# --- wrappers ------------------------------------------------------------------------------------------------


def _values_and_indices(out):
    """(values, indices) with the indices in the values' dtype, so that one dtype rule covers both outputs
    (the indices are small integers, exact in every float dtype; test_nn_pooling checks their int dtype)."""
    if isinstance(out, tuple):
        return out[0], out[1].astype(out[0].dtype)
    return out


def _returning(fn):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        return _values_and_indices(fn(*args, **kwargs))

    return op


@functools.lru_cache(maxsize=None)
def _layer(cls, args, kwargs):
    return cls(*args, **dict(kwargs))


def _layer_op(cls):
    """The layer as a pure function of its input: built once per configuration, called by functional_call."""

    def op(x, *args, **kwargs):
        layer = _layer(cls, args, tuple(sorted(kwargs.items())))
        return _values_and_indices(nn.functional_call(layer, {}, x))

    op.__name__ = cls.__name__
    return op


_MAX_NAMES = ("stride", "padding", "dilation", "ceil_mode", "return_indices")
_AVG_NAMES = ("stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")


def _by_name(cases, names):
    """The functional cases for a layer: the kernel size positional, the rest by PyTorch's names (MaxPool's
    constructor takes return_indices before ceil_mode, F.max_pool's the other way round)."""
    return [(shape, args[:1], dict(zip(names, args[1:]), **kw)) for shape, args, kw in cases]


def _positive_spread(rng, shape, dtype):
    x = spread(rng, shape, np.float64)
    return (x - x.min() + 0.5).astype(dtype) if x.size else x.astype(dtype)


def _register_pools():
    for n in (1, 2, 3):
        max_ref, max_cases, layer_cases = max_pool_ref(n), MAX_CASES[n], _by_name(MAX_CASES[n], _MAX_NAMES)
        register(OpInfo(f"nn.functional.max_pool{n}d", _returning(getattr(F, f"max_pool{n}d")), max_ref, FLOATING,
                        _samples(max_cases, _ties), FLOAT_POOLS, ad_samples=_samples(max_cases, spread)),
                 OpInfo(f"nn.MaxPool{n}d", _layer_op(getattr(nn, f"MaxPool{n}d")), max_ref, FLOATING,
                        _samples(layer_cases, _ties), FLOAT_POOLS, ad_samples=_samples(layer_cases, spread)))  # fmt: skip
        avg_ref, avg_cases, layer_cases = avg_pool_ref(n), AVG_CASES[n], _by_name(AVG_CASES[n], _AVG_NAMES)
        register(OpInfo(f"nn.functional.avg_pool{n}d", getattr(F, f"avg_pool{n}d"), avg_ref, FLOATING,
                        _samples(avg_cases, _uniform), FLOAT_POOLS, tol=SUM_TOLERANCES),
                 OpInfo(f"nn.AvgPool{n}d", _layer_op(getattr(nn, f"AvgPool{n}d")), avg_ref, FLOATING,
                        _samples(layer_cases, _uniform), FLOAT_POOLS, tol=SUM_TOLERANCES))  # fmt: skip
        lp_ref, lp_cases = lp_pool_ref(n), LP_CASES[n]
        for name, op in ((f"nn.functional.lp_pool{n}d", getattr(F, f"lp_pool{n}d")),
                         (f"nn.LPPool{n}d", _layer_op(getattr(nn, f"LPPool{n}d")))):
            register(OpInfo(name, op, lp_ref, FLOATING, _samples(lp_cases, _positive), FLOAT_POOLS, tol=SUM_TOLERANCES,
                            ad_samples=_samples(lp_cases, _positive_spread)))  # fmt: skip
        avg_ref = adaptive_ref(n, "avg")
        register(OpInfo(f"nn.functional.adaptive_avg_pool{n}d", getattr(F, f"adaptive_avg_pool{n}d"), avg_ref, FLOATING,
                        _samples(ADAPTIVE_CASES[n], _uniform), FLOAT_POOLS, tol=SUM_TOLERANCES),
                 OpInfo(f"nn.AdaptiveAvgPool{n}d", _layer_op(getattr(nn, f"AdaptiveAvgPool{n}d")), avg_ref, FLOATING,
                        _samples(ADAPTIVE_CASES[n], _uniform), FLOAT_POOLS, tol=SUM_TOLERANCES))  # fmt: skip
        max_cases = _with_indices(ADAPTIVE_CASES[n])
        for name, op in ((f"nn.functional.adaptive_max_pool{n}d", _returning(getattr(F, f"adaptive_max_pool{n}d"))),
                         (f"nn.AdaptiveMaxPool{n}d", _layer_op(getattr(nn, f"AdaptiveMaxPool{n}d")))):
            register(OpInfo(name, op, adaptive_ref(n, "max"), FLOATING, _samples(max_cases, _ties), FLOAT_POOLS,
                            ad_samples=_samples(max_cases, spread)))  # fmt: skip


_register_pools()


# --- interpolation and pixel shuffles --------------------------------------------------------------------------

LINEAR_CASES = [
    ((2, 3, 7), {"size": 11, "mode": "linear"}), ((2, 3, 7), {"scale_factor": 1.7, "mode": "linear", "align_corners": True}),
    ((2, 3, 7), {"scale_factor": 0.6, "mode": "linear"}), ((1, 2, 5, 6), {"scale_factor": 2, "mode": "bilinear"}),
    ((1, 2, 5, 6), {"size": (3, 9), "mode": "bilinear", "align_corners": True}),
    ((1, 2, 5, 6), {"scale_factor": (2.5, 0.5), "mode": "bilinear", "recompute_scale_factor": True}),
    ((1, 2, 3, 4, 5), {"size": (4, 2, 7), "mode": "trilinear"}), ((0, 2, 3), {"size": 5, "mode": "linear"}),
    ((1, 1, 4), {"size": 1, "mode": "linear", "align_corners": True}),
]
NEAREST_CASES = [
    ((2, 3, 7), {"size": 11}), ((2, 3, 7), {"scale_factor": 2}), ((2, 3, 7), {"scale_factor": 0.6}),
    ((1, 2, 5, 6), {"size": (3, 9), "mode": "nearest-exact"}), ((1, 2, 5, 6), {"scale_factor": 1.7}),
    ((1, 2, 3, 4, 5), {"scale_factor": (2, 1, 0.5)}), ((1, 2, 3, 4, 5), {"size": 4, "mode": "nearest-exact"}),
]


def _kw_samples(cases, values):
    def make(rng, dtype):
        return [Sample((values(rng, shape, dtype),), dict(kw)) for shape, kw in cases]

    return make


def _upsample_op(x, **kwargs):
    return nn.functional_call(_layer(nn.Upsample, (), tuple(sorted(kwargs.items()))), {}, x)


def _upsampling_op(cls):
    def op(x, **kwargs):
        return nn.functional_call(_layer(cls, (), tuple(sorted(kwargs.items()))), {}, x)

    return op


register(
    OpInfo("nn.functional.interpolate", F.interpolate, interpolate_ref, FLOATING, _kw_samples(LINEAR_CASES, _uniform),
           "linear interpolation of floating inputs (nearest takes every dtype: its entry below)", tol=SUM_TOLERANCES,
           ref_in_dtype=True),
    OpInfo("nn.functional.interpolate(nearest)", F.interpolate, interpolate_ref, ALL, _kw_samples(NEAREST_CASES, make_array),
           ref_in_dtype=True),
    OpInfo("nn.functional.upsample", F.upsample, interpolate_ref, FLOATING,
           _kw_samples([c for c in LINEAR_CASES if "recompute_scale_factor" not in c[1]], _uniform),
           "linear interpolation of floating inputs", tol=SUM_TOLERANCES, ref_in_dtype=True),
    OpInfo("nn.Upsample", _upsample_op, interpolate_ref, FLOATING, _kw_samples(LINEAR_CASES, _uniform),
           "linear interpolation of floating inputs", tol=SUM_TOLERANCES, ref_in_dtype=True),
    OpInfo("nn.UpsamplingNearest2d", _upsampling_op(nn.UpsamplingNearest2d),
           lambda x, **kw: interpolate_ref(x, mode="nearest", **kw), ALL,
           _kw_samples([((1, 2, 5, 6), {"scale_factor": 2}), ((2, 1, 3, 4), {"size": (5, 3)})], make_array),
           ref_in_dtype=True),
    OpInfo("nn.UpsamplingBilinear2d", _upsampling_op(nn.UpsamplingBilinear2d),
           lambda x, **kw: interpolate_ref(x, mode="bilinear", align_corners=True, **kw), FLOATING,
           _kw_samples([((1, 2, 5, 6), {"scale_factor": 2}), ((2, 1, 3, 4), {"size": (5, 3)})], _uniform),
           "linear interpolation of floating inputs", tol=SUM_TOLERANCES, ref_in_dtype=True),
)  # fmt: skip

SHUFFLE_CASES = [((2, 8, 3, 4), (2,)), ((9, 2, 2), (3,)), ((2, 1, 4, 1, 1), (1,)), ((0, 4, 2, 2), (2,))]
UNSHUFFLE_CASES = [((2, 2, 6, 4), (2,)), ((1, 3, 3), (3,)), ((2, 1, 1, 2, 2), (2,)), ((0, 1, 2, 2), (2,))]


def _arg_samples(cases):
    def make(rng, dtype):
        return [Sample((make_array(rng, shape, dtype), *args)) for shape, args in cases]

    return make


register(
    OpInfo("nn.functional.pixel_shuffle", F.pixel_shuffle, pixel_shuffle_ref, ALL, _arg_samples(SHUFFLE_CASES),
           ref_in_dtype=True),
    OpInfo("nn.functional.pixel_unshuffle", F.pixel_unshuffle, pixel_unshuffle_ref, ALL, _arg_samples(UNSHUFFLE_CASES),
           ref_in_dtype=True),
    OpInfo("nn.PixelShuffle", _layer_op(nn.PixelShuffle), pixel_shuffle_ref, ALL, _arg_samples(SHUFFLE_CASES),
           ref_in_dtype=True),
    OpInfo("nn.PixelUnshuffle", _layer_op(nn.PixelUnshuffle), pixel_unshuffle_ref, ALL, _arg_samples(UNSHUFFLE_CASES),
           ref_in_dtype=True),
)  # fmt: skip


# --- max unpooling -----------------------------------------------------------------------------------------

# (pooled input shape, kernel_size, stride, padding, output_size): windows that do not overlap, so every
# index is distinct (PyTorch leaves repeated indices' order unspecified).
UNPOOL_CASES = {
    1: [((2, 3, 9), 2, None, 0, None), ((3, 9), 3, 3, 1, [9]), ((0, 2, 6), 2, None, 0, None)],
    2: [((2, 3, 7, 6), 2, None, 0, (7, 6)), ((3, 8, 6), (3, 2), (3, 2), (1, 0), (8, 6))],
    3: [((1, 2, 5, 6, 4), 2, None, 0, (1, 2, 5, 6, 4)), ((2, 4, 4, 3), (2, 2, 1), None, 0, None)],
}


def _unpool_samples(n, values):
    def make(rng, dtype):
        out = []
        for shape, k, s, p, size in UNPOOL_CASES[n]:
            # Where a max pool of `shape` puts its maxima: the indices max_unpool gets in practice.
            _, indices = max_pool_ref(n)(spread(rng, shape, np.float64), k, s, p, 1, False, True)
            x = values(rng, indices.shape, dtype)
            out.append(Sample((x, indices.astype(np.int32), k), {"stride": s, "padding": p, "output_size": size}))
        return out

    return make


def _unpool_layer_op(cls):
    def op(x, indices, *args, output_size=None, **kwargs):
        layer = _layer(cls, args, tuple(sorted(kwargs.items())))
        return nn.functional_call(layer, {}, x, indices, output_size)

    op.__name__ = cls.__name__
    return op


for _n in (1, 2, 3):
    register(
        OpInfo(f"nn.functional.max_unpool{_n}d", getattr(F, f"max_unpool{_n}d"), max_unpool_ref(_n), ALL,
               _unpool_samples(_n, make_array), ref_in_dtype=True),
        OpInfo(f"nn.MaxUnpool{_n}d", _unpool_layer_op(getattr(nn, f"MaxUnpool{_n}d")), max_unpool_ref(_n), ALL,
               _unpool_samples(_n, make_array), ref_in_dtype=True),
    )  # fmt: skip
