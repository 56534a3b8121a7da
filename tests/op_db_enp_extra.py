"""op_db entries for the NumPy functions issue 14 added: order statistics, averages and covariances,
histograms, signals and polynomials, index helpers, selection and whole-array comparisons.

References are NumPy's functions on the same (upcast) inputs. Samples keep values where the answer
is unambiguous in every dtype: histogram data on a grid that no bin edge comes near, digitize's
queries including the edges themselves (compared exactly in any dtype), quantile autodiff samples
with distinct values and virtual indices away from whole numbers (where lower/higher/nearest jump).
Result dtypes follow JAX: quantiles, averages, covariances and gradients of integers are in the
default float; index results are the default integer (NumPy's intp).
"""

from __future__ import annotations

import warnings

import numpy as np
from op_db import (
    ALL,
    BF16,
    BOOL,
    INTEGER,
    NO_COMPLEX,
    NUMERIC,
    REAL,
    SUM_TOLERANCES,
    OpInfo,
    Sample,
    default_float,
    default_int,
    is_float,
    make_array,
    register,
    to_float,
)

import ember.numpy as enp

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
INTEGER_OUT = "integer output (indices or counts): nothing to differentiate"
BOOL_OUT = "bool output: nothing to differentiate"
INDICES_ONLY = "integers only: the arguments are indices"
NO_BOOL_SUB = "NumPy's subtract rejects bool (use enp.diff for !=)"


def _wide(x):
    """A reference's view of an operand: bool and bfloat16 as float64 (NumPy has no arithmetic for them)."""
    if isinstance(x, np.ndarray) and (x.dtype == np.bool_ or x.dtype == BF16):
        return x.astype(np.float64)
    return x


def _quiet(fn):
    """The reference without NumPy's warnings (empty slices, all-NaN slices: NaN, as ember gives)."""

    def ref(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)

    return ref


def _entry(name, op, ref, dtypes, samples, unsupported="", **kw):
    register(OpInfo(f"enp.{name}", op, ref, dtypes, samples, unsupported, **kw))


def _spread(rng, shape, d, gap=0.25) -> np.ndarray:
    """Distinct values (at least `gap` apart) in random order: sorts and extrema are differentiable there."""
    n = int(np.prod(shape, dtype=np.int64))
    x = ((rng.permutation(n) - n // 2) * gap + rng.uniform(0, 0.05, n)).reshape(shape)
    if np.dtype(d).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(d)


# --- quantile, percentile, median and their nan- forms --------------------------------------------------


def _q(rng, d, values):
    """q as an array of the tested dtype for floats (so that it promotes to nothing wider), as a list for
    the others (the default float)."""
    return np.asarray(values, dtype=d) if is_float(d) else list(values)


def _with_nan(x: np.ndarray) -> np.ndarray:
    if is_float(x.dtype) and x.size > 2:
        x = x.copy()
        x.reshape(-1)[[0, 3]] = np.nan
    return x


def _quantile_samples(scale, nan):
    def make(rng, d):
        m = (lambda r, s: _with_nan(make_array(r, s, d))) if nan else (lambda r, s: make_array(r, s, d))
        return [Sample((m(rng, (7,)), _q(rng, d, [0.3 * scale]))),
                Sample((m(rng, (3, 5)), _q(rng, d, [0.0, 0.25 * scale, scale])), {"axis": 1, "method": "lower"}),
                Sample((m(rng, (2, 3, 4)), _q(rng, d, [0.42 * scale, 0.9 * scale])), {"axis": (0, 2), "keepdims": True,
                                                                                      "method": "midpoint"}),
                Sample((m(rng, (4, 3)), 0.6 * scale), {"axis": 0, "method": "nearest"}),
                Sample((m(rng, (6,)), _q(rng, d, [0.1 * scale, 0.7 * scale])), {"method": "higher"}),
                Sample((m(rng, (5, 2)), _q(rng, d, [0.35 * scale])), {"method": "hazen", "axis": -2}),
                Sample((m(rng, (8,)), _q(rng, d, [0.5 * scale, 0.95 * scale])), {"method": "inverted_cdf"}),
                Sample((make_array(rng, (), d), 0.5 * scale)), Sample((make_array(rng, (0,), d), 0.5 * scale)),
                Sample((_with_nan(make_array(rng, (2, 5), d)), 0.5 * scale), {"axis": 1})]  # fmt: skip

    return make


def _quantile_ad_samples(scale, nan):
    # Distinct values; q*(n-1) at least 0.3 from whole numbers, so no method jumps within a finite-difference step.
    def make(rng, d):
        def m(shape):
            x = _spread(rng, shape, d)
            return _with_nan(x) if nan else x

        return [Sample((m((7,)), np.asarray([0.4 * scale], d))),
                Sample((m((3, 5)), np.asarray([0.1 * scale, 0.6 * scale], d)), {"axis": 1, "method": "lower"}),
                Sample((m((2, 3, 4)), np.asarray([0.35 * scale], d)), {"axis": (0, 2), "method": "midpoint"}),
                Sample((m((4, 3)), np.asarray(0.55 * scale, d)), {"axis": 0, "method": "nearest", "keepdims": True}),
                Sample((m((6,)), np.asarray([0.3 * scale, 0.9 * scale], d)), {"method": "weibull"})]  # fmt: skip

    return make


def _quantile_ref(np_fn):
    def ref(a, q, **k):
        q = np.asarray(q, dtype=np.float64)
        if a.size == 0:  # NumPy raises IndexError; ember (as JAX) gives NaN
            return np.full(q.shape, np.nan)
        return np.asarray(np_fn(_wide(a), q, **k))

    return _quiet(ref)


def _quantile_dtype(d, sample):
    return np.dtype(d) if is_float(d) else default_float(d)


for _name, _np, _scale, _nan in [("quantile", np.quantile, 1.0, False), ("percentile", np.percentile, 100.0, False),
                                 ("nanquantile", np.nanquantile, 1.0, True), ("nanpercentile", np.nanpercentile, 100.0, True)]:  # fmt: skip
    _entry(
        _name,
        lambda a, q, _n=_name, **k: getattr(enp, _n)(a, q, **k),
        _quantile_ref(_np),
        REAL,
        _quantile_samples(_scale, _nan),
        NO_COMPLEX,
        out_dtype_of=_quantile_dtype,
        tol=SUM_TOLERANCES,
        primitives=("sort", "gather"),
        ad_samples=_quantile_ad_samples(_scale, _nan),
    )


def _median_samples(nan):
    def make(rng, d):
        m = (lambda s: _with_nan(make_array(rng, s, d))) if nan else (lambda s: make_array(rng, s, d))
        return [Sample((m((7,)),)), Sample((m((4, 6)),), {"axis": 1}), Sample((m((2, 3, 4)),), {"axis": (0, 2), "keepdims": True}),
                Sample((make_array(rng, (), d),)), Sample((make_array(rng, (0, 3), d),), {"axis": 0}),
                Sample((_with_nan(make_array(rng, (3, 4), d)),), {"axis": -1})]  # fmt: skip

    return make


def _median_ad_samples(nan):
    def make(rng, d):
        m = (lambda s: _with_nan(_spread(rng, s, d))) if nan else (lambda s: _spread(rng, s, d))
        return [
            Sample((m((7,)),)),
            Sample((m((4, 6)),), {"axis": 1}),
            Sample((m((2, 3, 4)),), {"axis": (0, 2), "keepdims": True}),
        ]

    return make


for _name, _np, _nan in [("median", np.median, False), ("nanmedian", np.nanmedian, True)]:
    _entry(_name, lambda a, _n=_name, **k: getattr(enp, _n)(a, **k), _quiet(lambda a, _f=_np, **k: np.asarray(_f(_wide(a), **k))),
           REAL, _median_samples(_nan), NO_COMPLEX, out_dtype=to_float, tol=SUM_TOLERANCES, primitives=("sort",),
           ad_samples=_median_ad_samples(_nan))  # fmt: skip

# --- average, cov, corrcoef ------------------------------------------------------------------------------


def _weights(rng, shape, d):
    if d == np.bool_:
        return np.ones(shape, bool)
    if np.dtype(d).kind in "iu":
        return make_array(rng, shape, d, 1, 5)
    return make_array(rng, shape, d, 0.5, 2)


def _average_samples(rng, d):
    return [Sample((make_array(rng, (5,), d),)), Sample((make_array(rng, (3, 4), d),), {"axis": 1, "weights": _weights(rng, (4,), d)}),
            Sample((make_array(rng, (2, 3), d),), {"weights": _weights(rng, (2, 3), d)}),
            Sample((make_array(rng, (2, 3, 4), d),), {"axis": (2, 0), "weights": _weights(rng, (4, 2), d), "keepdims": True}),
            Sample((make_array(rng, (3, 2), d),), {"axis": 0, "weights": _weights(rng, (3,), d), "returned": True}),
            Sample((make_array(rng, (), d),),), Sample((make_array(rng, (2, 0), d),), {"axis": 1})]  # fmt: skip


_entry("average", lambda a, **k: enp.average(a, **k),
       _quiet(lambda a, **k: np.average(_wide(a), **{n: _wide(v) for n, v in k.items()})), ALL, _average_samples,
       out_dtype=to_float, tol=SUM_TOLERANCES, primitives=("reduce_sum",))  # fmt: skip


def _cov_samples(rng, d):
    def fw():
        return np.array([1, 2, 0, 3, 1], np.int32)

    return [Sample((make_array(rng, (3, 5), d),)), Sample((make_array(rng, (3, 5), d), make_array(rng, (2, 5), d))),
            Sample((make_array(rng, (5,), d),)), Sample((make_array(rng, (5, 3), d),), {"rowvar": False}),
            Sample((make_array(rng, (2, 5), d),), {"bias": True}), Sample((make_array(rng, (2, 5), d),), {"ddof": 2}),
            Sample((make_array(rng, (2, 5), d),), {"fweights": fw()}),
            Sample((make_array(rng, (2, 5), d),), {"aweights": make_array(rng, (5,), F32, 0.5, 2), "fweights": fw()}),
            Sample((make_array(rng, (1, 4), d),), {"rowvar": False})]  # fmt: skip


def _cov_ref(np_fn):
    return lambda m, y=None, **k: np.asarray(np_fn(_wide(m), None if y is None else _wide(y),
                                                   **{n: _wide(v) for n, v in k.items()}))  # fmt: skip


_entry(
    "cov",
    lambda m, *a, **k: enp.cov(m, *a, **k),
    _cov_ref(np.cov),
    ALL,
    _cov_samples,
    out_dtype=to_float,
    tol=SUM_TOLERANCES,
    primitives=("dot_general",),
)
_entry("corrcoef", lambda m, *a, **k: enp.corrcoef(m, *a, **k), _cov_ref(np.corrcoef), ALL,
       lambda rng, d: [s for s in _cov_samples(rng, d) if not {"fweights", "aweights", "bias", "ddof"} & set(s.kwargs)],
       out_dtype=to_float, tol=SUM_TOLERANCES, primitives=("dot_general",))  # fmt: skip

# --- histograms, bincount, digitize -------------------------------------------------------------------------


def _grid(rng, n, d) -> np.ndarray:
    """Data no bin edge of the samples below comes near (in any dtype): halves +-0.5..4.5 for floats, integers
    +-1..9 (1..9 but 5 unsigned), with the extremes present so that the automatic range is fixed."""
    d = np.dtype(d)
    if d == np.bool_:
        return np.concatenate([[False, True], rng.random(n - 2) < 0.5])
    if d.kind == "u":
        pool = np.array([1, 2, 3, 4, 6, 7, 8, 9])
    else:
        pool = np.concatenate([np.arange(-9, 0), np.arange(1, 10)])
        pool = pool / 2 if is_float(d) else pool
    return rng.permutation(np.concatenate([[pool[0], pool[-1]], rng.choice(pool, n - 2)])).astype(d)


_EDGES_AWAY = [-3.75, -1.25, 0.25, 2.75, 6.25]  # never on the grid


def _histogram_samples(rng, d):
    return [Sample((_grid(rng, 12, d),)), Sample((_grid(rng, 12, d), 5)), Sample((_grid(rng, 3, d).reshape(3, 1), 3, (-2.2, 3.3))),
            Sample((_grid(rng, 10, d), _EDGES_AWAY)), Sample((_grid(rng, 8, d), np.asarray(_EDGES_AWAY, F32))),
            Sample((make_array(rng, (0,), d), 4)), Sample((np.full((4,), 1, d), 3))]  # fmt: skip


def _histogram_ref(a, bins=10, range=None, **k):
    return np.histogram(_wide(a).astype(np.float64), np.asarray(bins) if not np.isscalar(bins) else bins, range, **k)


_entry("histogram", lambda a, *args, **k: enp.histogram(a, *args, **k)[0], lambda *a, **k: _histogram_ref(*a, **k)[0],
       REAL, _histogram_samples, NO_COMPLEX, out_dtype=default_int, nondiff=INTEGER_OUT,
       transforms=frozenset({"vmap", "jit"}), primitives=("scatter_add", "sort"))  # fmt: skip


def _edges_ad_samples(rng, d):
    return [
        Sample((_spread(rng, (9,), d),)),
        Sample((_spread(rng, (6,), d), 4)),
        Sample((_spread(rng, (5,), d), np.asarray([-1.0, 0.5, 2.0], d))),
    ]


_entry("histogram_bin_edges", lambda a, *args, **k: enp.histogram_bin_edges(a, *args, **k),
       lambda *a, **k: _histogram_ref(*a, **k)[1], REAL,
       lambda rng, d: [s for s in _histogram_samples(rng, d) if not isinstance(s.args[-1], (list, np.ndarray))],
       NO_COMPLEX, out_dtype=to_float, ad_samples=_edges_ad_samples,
       tol={F16: (2e-3, 4e-3), BF16: (1.6e-2, 3e-2)})  # fmt: skip


def _weighted_samples(rng, d):
    def w(n):
        return _grid(rng, n, d) if d == np.bool_ else make_array(rng, (n,), d, 0, 3)

    a = lambda n: _grid(rng, n, np.int32)
    return [
        Sample((a(10),), {"weights": w(10)}),
        Sample((a(10), 5), {"weights": w(10), "density": True}),
        Sample((a(8), _EDGES_AWAY), {"weights": w(8)}),
        Sample((a(6), 3, (-2.2, 3.3)), {"weights": w(6), "density": True}),
    ]


def _weighted_dtype(d, sample):
    if sample.kwargs.get("density"):
        return np.dtype(d) if np.dtype(d).kind == "c" else default_float(d)
    return default_int(d) if d == np.bool_ else np.dtype(d)


def _weighted_ref(a, *args, weights, **k):
    w = weights.astype(
        np.int64 if weights.dtype == np.bool_ else np.complex128 if weights.dtype.kind == "c" else np.float64
    )
    return _histogram_ref(a, *args, weights=w, **k)[0]


_entry("histogram[weights]", lambda a, *args, **k: enp.histogram(a, *args, **k)[0], _weighted_ref, ALL, _weighted_samples,
       out_dtype_of=_weighted_dtype, tol=SUM_TOLERANCES, ref_in_dtype=True, primitives=("scatter_add",))  # fmt: skip


def _bincount_samples(rng, d):
    x = lambda n: make_array(rng, (n,), d, 0, 6)
    return [Sample((x(9),)), Sample((x(7),), {"minlength": 10}), Sample((x(9),), {"length": 4}),
            Sample((x(0),),), Sample((x(6),), {"length": 7, "minlength": 2})]  # fmt: skip


def _bincount_ref(x, weights=None, minlength=0, length=None):
    x = x.astype(np.int64)
    if length is None:
        length = max(minlength, int(x.max()) + 1 if x.size else 0)
    keep = x < length
    out = np.zeros(length, np.int64 if weights is None else weights.dtype)
    np.add.at(out, x[keep], 1 if weights is None else weights[keep])
    return out


_entry("bincount", lambda x, **k: enp.bincount(x, **k), _bincount_ref, BOOL + INTEGER, _bincount_samples,
       "x must hold integers (as NumPy's bincount)", out_dtype=default_int, nondiff=INTEGER_OUT,
       transforms=frozenset({"vmap", "jit"}), primitives=("scatter_add",),
       needs_concrete="x without length=: the number of bins is x.max() + 1")  # fmt: skip


def _bincount_weights_samples(rng, d):
    x = lambda n: make_array(rng, (n,), np.int32, 0, 6)
    w = lambda n: make_array(rng, (n,), d, 0, 3)
    return [
        Sample((x(8),), {"weights": w(8), "length": 6}),
        Sample((x(5),), {"weights": w(5), "length": 3}),
        Sample((x(0),), {"weights": w(0), "length": 2}),
        Sample((x(6),), {"weights": w(6)}),
    ]


_entry("bincount[weights]", lambda x, **k: enp.bincount(x, **k),
       lambda x, weights, **k: _bincount_ref(x, weights.astype(np.int64) if weights.dtype == np.bool_ else _wide(weights), **k),
       ALL, _bincount_weights_samples, out_dtype=lambda d: default_int(d) if d == np.bool_ else d, tol=SUM_TOLERANCES,
       ref_in_dtype=True, primitives=("scatter_add",),
       needs_concrete="x without length=: the number of bins is x.max() + 1")  # fmt: skip


def _digitize_samples(rng, d):
    if d == np.bool_:
        x, bins = rng.random(6) < 0.5, np.array([False, True])
    else:
        bins = np.sort(
            rng.choice(np.arange(-8, 9) if np.dtype(d).kind != "u" else np.arange(0, 17), 5, replace=False)
        ).astype(d)
        x = np.concatenate([bins, make_array(rng, (5,), d)]).astype(d)
    return [Sample((x, bins)), Sample((x, bins), {"right": True}), Sample((x.reshape(2, -1), bins[::-1].copy())),
            Sample((x, bins[::-1].copy(), True)), Sample((x[:3], bins[:2].copy())), Sample((x, bins[:0])),
            Sample((x, bins.tolist()))]  # fmt: skip


_entry("digitize", lambda x, b, *a, **k: enp.digitize(x, b, *a, **k),
       lambda x, b, *a, **k: np.digitize(_wide(x), _wide(np.asarray(b)), *a, **k), REAL, _digitize_samples, NO_COMPLEX,
       out_dtype=default_int, nondiff=INTEGER_OUT, transforms=frozenset({"vmap", "jit"}), primitives=("sort", "cumsum"))  # fmt: skip

# --- convolve, correlate, polyval, interp, gradient, ediff1d ---------------------------------------------------


def _small(rng, shape, d):
    return make_array(rng, shape, d, -2, 3) if np.dtype(d).kind != "u" else make_array(rng, shape, d, 0, 3)


def _conv_samples(default_mode):
    def make(rng, d):
        return [Sample((_small(rng, (5,), d), _small(rng, (3,), d))),
                Sample((_small(rng, (3,), d), _small(rng, (5,), d)), {"mode": "same"}),
                Sample((_small(rng, (6,), d), _small(rng, (3,), d)), {"mode": "valid"}),
                Sample((_small(rng, (2,), d), _small(rng, (4,), d)), {"mode": "valid"}),
                Sample((_small(rng, (4,), d), _small(rng, (4,), d)), {"mode": "full"}),
                Sample((_small(rng, (), d), _small(rng, (3,), d)), {"mode": "same"})]  # fmt: skip

    return make


for _name in ("convolve", "correlate"):
    _entry(_name, lambda a, v, _n=_name, **k: getattr(enp, _n)(a, v, **k),
           lambda a, v, _n=_name, **k: getattr(np, _n)(np.atleast_1d(a), np.atleast_1d(v), **k), ALL,
           _conv_samples("full"), tol=SUM_TOLERANCES, primitives=("conv_general_dilated",))  # fmt: skip


def _polyval_samples(rng, d):
    return [
        Sample((_small(rng, (4,), d), _small(rng, (2, 3), d))),
        Sample((_small(rng, (1,), d), _small(rng, (), d))),
        Sample((_small(rng, (0,), d), _small(rng, (3,), d))),
        Sample((_small(rng, (3,), d), _small(rng, (0,), d))),
    ]


_entry("polyval", lambda p, x: enp.polyval(p, x), lambda p, x: np.asarray(np.polyval(p, x)).astype(np.result_type(p, x)),
       ALL, _polyval_samples, tol=SUM_TOLERANCES, primitives=("mul", "add"))  # fmt: skip


def _interp_samples(rng, d):
    if d == np.bool_:
        return [Sample((np.array([True, False, True]), np.array([False, True]), np.array([True, False])))]
    lo = 0 if np.dtype(d).kind == "u" else -6
    xp = np.sort(rng.choice(np.arange(lo, lo + 13), 5, replace=False)).astype(d)
    fp = make_array(rng, (5,), d)
    x = np.concatenate([xp, make_array(rng, (5,), d, lo - 2, lo + 15)]).astype(d)
    return [Sample((x, xp, fp)), Sample((x.reshape(2, 5), xp, fp), {"left": -1.5, "right": 2.5}),
            Sample((x[:4], xp[:1], fp[:1])), Sample((x, xp, fp), {"period": 13.0}), Sample((x[:0], xp, fp))]  # fmt: skip


def _interp_ad_samples(rng, d):
    xp = np.asarray([-2.0, -1.0, 0.5, 1.5, 3.0], d)
    x = np.asarray([-2.5, -1.6, 0.1, 1.0, 2.2, 3.5], d)
    return [Sample((x, xp, make_array(rng, (5,), d))), Sample((x[1:5], xp, make_array(rng, (5,), d)), {"period": 7.0})]


_entry("interp", lambda x, xp, fp, **k: enp.interp(x, xp, fp, **k),
       lambda x, xp, fp, **k: np.interp(_wide(x), _wide(xp), _wide(fp), **k), REAL, _interp_samples, NO_COMPLEX,
       out_dtype=to_float, tol=SUM_TOLERANCES, ad_samples=_interp_ad_samples, primitives=("sort", "gather"))  # fmt: skip


def _gradient_samples(rng, d):
    coords = lambda n: np.cumsum(make_array(rng, (n,), d, 1, 3)).astype(d)
    out = [Sample((make_array(rng, (5,), d),)), Sample((make_array(rng, (4, 3), d),)),
           Sample((make_array(rng, (4, 3), d), 2.0), {"edge_order": 2}), Sample((make_array(rng, (2, 3, 4), d),), {"axis": (2, 0)}),
           Sample((make_array(rng, (3, 4), d), 0.5), {"axis": -1})]  # fmt: skip
    if d != np.bool_:
        out += [
            Sample((make_array(rng, (5, 3), d), coords(5), coords(3))),
            Sample((make_array(rng, (6,), d), coords(6)), {"edge_order": 2}),
        ]
    return out


def _gradient_ref(f, *varargs, **k):
    return np.gradient(_wide(f), *[_wide(v) if isinstance(v, np.ndarray) else v for v in varargs], **k)


_entry("gradient", lambda f, *a, **k: enp.gradient(f, *a, **k), _gradient_ref, ALL, _gradient_samples,
       out_dtype=to_float, tol={**SUM_TOLERANCES, F32: (2e-5, 2e-5)}, primitives=("slice", "concatenate"))  # fmt: skip


def _ediff1d_samples(rng, d):
    return [Sample((make_array(rng, (2, 3), d),)), Sample((make_array(rng, (5,), d),), {"to_begin": np.asarray(7, d)}),
            Sample((make_array(rng, (4,), d),), {"to_end": make_array(rng, (2,), d), "to_begin": make_array(rng, (), d)}),
            Sample((make_array(rng, (0,), d),),), Sample((make_array(rng, (1,), d),), {"to_end": make_array(rng, (1, 2), d)})]  # fmt: skip


_entry("ediff1d", lambda a, **k: enp.ediff1d(a, **k), lambda a, **k: np.ediff1d(a, **k), NUMERIC, _ediff1d_samples,
       NO_BOOL_SUB, ref_in_dtype=True, tol=SUM_TOLERANCES, primitives=("sub",))  # fmt: skip

# --- diagonals and index helpers ----------------------------------------------------------------------------------

_entry("diag", lambda v, k=0: enp.diag(v, k), np.diag, ALL,
       lambda rng, d: [Sample((make_array(rng, (3,), d),)), Sample((make_array(rng, (3,), d), 2)),
                       Sample((make_array(rng, (2,), d), -1)), Sample((make_array(rng, (3, 4), d), 1)),
                       Sample((make_array(rng, (4, 3), d), -2)), Sample((make_array(rng, (0,), d),))],
       ref_in_dtype=True, primitives=("scatter", "gather"))  # fmt: skip
_entry("diagflat", lambda v, k=0: enp.diagflat(v, k), np.diagflat, ALL,
       lambda rng, d: [Sample((make_array(rng, (2, 2), d),)), Sample((make_array(rng, (3,), d), 1)),
                       Sample((make_array(rng, (), d), -2))],
       ref_in_dtype=True)  # fmt: skip


# Index results: the default integer, nothing to differentiate.
_INDEX_RESULT = {
    "out_dtype": default_int,
    "nondiff": INTEGER_OUT,
    "transforms": frozenset({"vmap", "jit"}),
    "ref_in_dtype": True,
}


_entry(
    "diag_indices",
    lambda *a: enp.diag_indices(*a),
    np.diag_indices,
    ALL,
    lambda rng, d: [Sample((3,)), Sample((2, 3)), Sample((0,))],
    **_INDEX_RESULT,
)
_entry("diag_indices_from", enp.diag_indices_from, np.diag_indices_from, ALL,
       lambda rng, d: [Sample((make_array(rng, (3, 3), d),)), Sample((make_array(rng, (2, 2, 2), d),))],
       **_INDEX_RESULT)  # fmt: skip
for _name in ("tril_indices", "triu_indices"):
    _entry(
        _name,
        lambda *a, _n=_name: getattr(enp, _n)(*a),
        getattr(np, _name),
        ALL,
        lambda rng, d: [Sample((3,)), Sample((3, 1)), Sample((4, -1, 5)), Sample((0,))],
        **_INDEX_RESULT,
    )
    _entry(f"{_name}_from", lambda a, *k, _n=_name: getattr(enp, f"{_n}_from")(a, *k), getattr(np, f"{_name}_from"), ALL,
           lambda rng, d: [Sample((make_array(rng, (3, 3), d),)), Sample((make_array(rng, (2, 4), d), 1)),
                           Sample((make_array(rng, (4, 2), d), -1))], **_INDEX_RESULT)  # fmt: skip


def _unravel_samples(rng, d):
    return [
        Sample((make_array(rng, (2, 3), d, 0, 24), (2, 3, 4))),
        Sample((make_array(rng, (5,), d, 0, 12), (4, 3), "F")),
        Sample((make_array(rng, (), d, 0, 6), 6)),
        Sample((make_array(rng, (0,), d, 0, 6), (2, 3))),
    ]


_entry("unravel_index", lambda i, s, *o: enp.unravel_index(i, s, *o), np.unravel_index, INTEGER, _unravel_samples,
       INDICES_ONLY, **_INDEX_RESULT)  # fmt: skip


def _ravel_samples(rng, d):
    signed = np.dtype(d).kind == "i"
    wild = lambda n, hi: make_array(rng, (n,), d, -7 if signed else 0, hi + 7)
    return [Sample(((make_array(rng, (4,), d, 0, 3), make_array(rng, (4,), d, 0, 5)), (3, 5))),
            Sample(((make_array(rng, (3, 1), d, 0, 2), make_array(rng, (1, 4), d, 0, 4)), (2, 4)), {"order": "F"}),
            Sample(((wild(5, 3), wild(5, 4)), (3, 4)), {"mode": "wrap"}),
            Sample(((wild(5, 3), wild(5, 4)), (3, 4)), {"mode": "clip", "order": "F"}),
            Sample(((wild(5, 3), make_array(rng, (5,), d, 0, 4)), (3, 4)), {"mode": ("wrap", "raise")})]  # fmt: skip


_entry("ravel_multi_index", lambda m, dims, **k: enp.ravel_multi_index(m, dims, **k),
       lambda m, dims, **k: np.ravel_multi_index(tuple(i.astype(np.int64) for i in m), dims, **k), INTEGER, _ravel_samples,
       INDICES_ONLY, **_INDEX_RESULT,
       needs_concrete="coordinates with mode='raise' (the default): checking their range needs their values, so under jit "
                      "and vmap pass mode='wrap' or 'clip' (as JAX)")  # fmt: skip


def _lex_keys(rng, shape, d):
    x = make_array(rng, shape, d, -2, 3)
    return (
        np.round(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)).astype(d)
        if is_float(d) or x.dtype.kind == "c"
        else x
    )


def _lexsort_ref(keys, axis=-1):
    parts = []
    for k in keys:  # a sequence of keys, or an array whose rows are the keys
        k = _wide(np.asarray(k))
        parts += [k.imag, k.real] if k.dtype.kind == "c" else [k]  # complex keys by (real, imag), as ember sorts them
    return np.lexsort(parts, axis=axis)


_entry("lexsort", lambda keys, **k: enp.lexsort(keys, **k), _lexsort_ref, ALL,
       lambda rng, d: [Sample(((_lex_keys(rng, (8,), d), _lex_keys(rng, (8,), d)),)),
                       Sample(((_lex_keys(rng, (3, 4), d), _lex_keys(rng, (3, 4), d), _lex_keys(rng, (3, 4), d)),), {"axis": 0}),
                       Sample((_lex_keys(rng, (2, 6), d),)), Sample(((_lex_keys(rng, (0,), d),),))],
       **_INDEX_RESULT, primitives=("sort",))  # fmt: skip

# --- selection and comparisons -----------------------------------------------------------------------------------------


def _select_samples(rng, d):
    c = lambda s: rng.random(s) < 0.4
    out = [Sample(([c((3, 4)), c((3, 4))], [make_array(rng, (3, 4), d), make_array(rng, (3, 4), d)], make_array(rng, (), d))),
           Sample(([c((3, 1)), c((4,))], [make_array(rng, (4,), d), make_array(rng, (3, 4), d)], make_array(rng, (3, 4), d))),
           Sample(([c((5,))], [make_array(rng, (5,), d)], make_array(rng, (5,), d)))]  # fmt: skip
    if d != np.bool_:
        out.append(Sample(([c((2, 3)), c(())], [make_array(rng, (2, 3), d), make_array(rng, (), d)])))
    return out


_entry("select", lambda cs, vs, *a: enp.select(cs, vs, *a), lambda cs, vs, *a: np.select(cs, vs, *a).astype(vs[0].dtype),
       ALL, _select_samples, ref_in_dtype=True, primitives=("select_n",))  # fmt: skip


def _isin_samples(rng, d):
    e = _lex_keys(rng, (3, 4), d)
    t = np.concatenate([e.reshape(-1)[:2], _lex_keys(rng, (3,), d)]).astype(d)
    if is_float(d):
        e.reshape(-1)[5] = np.nan
        t[-1] = np.nan
    return [Sample((e, t)), Sample((e, t), {"invert": True}), Sample((e, t), {"kind": "sort"}),
            Sample((np.asarray(e[0, 0]), t)), Sample((e, t[:0])), Sample((e, t.reshape(1, -1)), {"kind": "compare_all"})]  # fmt: skip


_entry("isin", lambda e, t, **k: enp.isin(e, t, **k),
       lambda e, t, kind=None, **k: np.isin(_wide(e), _wide(t), **k), ALL, _isin_samples,
       out_dtype=lambda d: np.dtype(bool), nondiff=BOOL_OUT, transforms=frozenset({"vmap", "jit"}),
       primitives=("sort", "eq"))  # fmt: skip


def _close_samples(rng, d):
    a = make_array(rng, (3, 4), d)
    near = a.copy()
    if is_float(d) or a.dtype.kind == "c":
        near = (a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) * (1 + 1e-9)).astype(d)
    far = a.copy()
    far.reshape(-1)[5] = ~far.reshape(-1)[5] if d == np.bool_ else far.reshape(-1)[5] + 3
    out = [Sample((a, near)), Sample((a, far)), Sample((a, a[0])), Sample((a[:0], a[:0]))]
    if is_float(d):
        n = a.copy()
        n.reshape(-1)[1] = np.nan
        out += [Sample((n, n)), Sample((n, n), {"equal_nan": True}), Sample((a, far), {"atol": 4.0})]
    return out


_entry("allclose", lambda a, b, **k: enp.allclose(a, b, **k), lambda a, b, **k: np.asarray(np.allclose(_wide(a), _wide(b), **k)),
       ALL, _close_samples, out_dtype=lambda d: np.dtype(bool), nondiff=BOOL_OUT, transforms=frozenset({"vmap", "jit"}))  # fmt: skip


def _equal_samples(rng, d):
    out = _close_samples(rng, d)
    a = make_array(rng, (2, 3), d)
    return out + [Sample((a, a[:, :2])), Sample((a, np.broadcast_to(a, (2, 2, 3)).copy()))]


_entry("array_equal", lambda a, b, **k: enp.array_equal(a, b, **k),
       lambda a, b, atol=None, **k: np.asarray(np.array_equal(_wide(a), _wide(b), **k)), ALL,
       lambda rng, d: [s for s in _equal_samples(rng, d) if "atol" not in s.kwargs], out_dtype=lambda d: np.dtype(bool),
       nondiff=BOOL_OUT, transforms=frozenset({"vmap", "jit"}))  # fmt: skip
_entry("array_equiv", lambda a, b: enp.array_equiv(a, b), lambda a, b: np.asarray(np.array_equiv(_wide(a), _wide(b))), ALL,
       lambda rng, d: [s for s in _equal_samples(rng, d) if not s.kwargs], out_dtype=lambda d: np.dtype(bool),
       nondiff=BOOL_OUT, transforms=frozenset({"vmap", "jit"}))  # fmt: skip


# --- argwhere with a static size (nonzero's size= is in op_db_take) ----------------------------------------------------


def _argwhere_ref(x, size, fill_value=None):
    found = np.argwhere(x)
    fill = np.zeros((max(size - found.shape[0], 0), x.ndim), found.dtype) + (0 if fill_value is None else fill_value)
    return np.concatenate([found[:size], fill])


def _sparse(rng, shape, d):
    x = make_array(rng, shape, d)
    return np.where(rng.random(shape) < 0.5, np.zeros_like(x), x)


_entry("argwhere[size]", lambda a, **k: enp.argwhere(a, **k), _argwhere_ref, ALL,
       lambda rng, d: [Sample((_sparse(rng, (3, 4), d),), {"size": 8}), Sample((_sparse(rng, (6,), d),), {"size": 2}),
                       Sample((_sparse(rng, (2, 3), d),), {"size": 7, "fill_value": -1}),
                       Sample((_sparse(rng, (0, 2), d),), {"size": 3})],
       **_INDEX_RESULT)  # fmt: skip


# --- weighted quantiles (NumPy 2's weights=, method="inverted_cdf" only) -------------------------------------------


def _weighted_quantile_samples(rng, d):
    # Integer weights, some zero (the first kept positive). Each q is either exact in binary (0, 0.5, 1: a
    # cumulative share equal to it is equal in every precision) or no share k/n of these totals: the reference
    # sees q in float64, ember in q's dtype, and a share equal to q in one precision may not be in the other.
    def w(shape):
        out = make_array(rng, shape, np.int32, 0, 4)
        out.reshape(-1)[0] = 1
        return out

    x = lambda s: make_array(rng, s, d)
    return [Sample((x((7,)), _q(rng, d, [0.0, 0.37, 1.0])), {"weights": w((7,))}),
            Sample((x((3, 5)), 0.5), {"axis": 1, "weights": np.maximum(w((3, 5)), 1), "keepdims": True}),
            Sample((x((4, 3)), _q(rng, d, [0.25, 0.8])), {"axis": 0, "weights": make_array(rng, (4,), F32, 0.5, 2)}),
            Sample((_with_nan(x((2, 5))), 0.43), {"axis": 1, "weights": np.maximum(w((2, 5)), 1)})]  # fmt: skip


def _full_weights_only(rng, d):
    # np.nanquantile fails (IndexError) on 1-d weights along an axis of a 2-d array; ember's are checked by quantile[weights].
    return [s for s in _weighted_quantile_samples(rng, d) if s.kwargs["weights"].shape == s.args[0].shape]


def _weighted_quantile_ref(nan):
    def ref(a, q, weights, **k):
        fn = np.nanquantile if nan else np.quantile
        return np.asarray(
            fn(_wide(a), np.asarray(q, np.float64), weights=weights.astype(np.float64), method="inverted_cdf", **k)
        )

    return _quiet(ref)


for _name, _nan in [("quantile", False), ("nanquantile", True)]:
    _entry(f"{_name}[weights]", lambda a, q, _n=_name, **k: getattr(enp, _n)(a, q, method="inverted_cdf", **k),
           _weighted_quantile_ref(_nan), REAL, _weighted_quantile_samples if not _nan else _full_weights_only,
           NO_COMPLEX, out_dtype_of=_quantile_dtype,
           ref_in_dtype=True, primitives=("sort", "cumsum"),
           ad_samples=lambda rng, d: [Sample((_spread(rng, (6,), d), np.asarray([0.37, 0.81], d)),
                                             {"weights": np.array([1, 2, 0, 1, 3, 1], np.int32)})])  # fmt: skip
