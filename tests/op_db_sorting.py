"""op_db entries for sorting and scans: the lax functions, their primitives and the ember.numpy functions.

References are NumPy's (np.sort, np.argsort(kind="stable"), np.cumsum,
np.searchsorted, np.unique) or short loops written here (prefix maxima,
SciPy's logsumexp of each prefix, a lexicographic complex order). Functions
with more than one right answer (partition) are checked by their guarantees.
Entries whose outputs have different dtypes (top_k, unique's extras) are
split in two, since a row of the database has one result dtype.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc
from op_db import (
    ALL,
    FLOATING,
    NO_BOOL,
    NO_COMPLEX,
    NUMERIC,
    REAL,
    SUM_TOLERANCES,
    OpInfo,
    Sample,
    default_int,
    is_float,
    make_array,
    register,
    spread,
    sum_dtype,
)

import ember.numpy as enp
from ember import lax

INT32 = np.dtype(np.int32)
FLOAT_ONLY_LSE = "log-sum-exp of real floating inputs only (lax does not promote; complex is not supported)"


def _with_ties(rng, shape, d) -> np.ndarray:
    """Few distinct values, so that stability matters; floats get -0.0 next to 0.0."""
    x = make_array(rng, shape, d, -2, 3)
    if is_float(d):
        x = np.round(x.astype(np.float64)).astype(d)
        if x.size > 2:
            flat = x.reshape(-1)
            flat[0], flat[1] = 0.0, -0.0
    elif np.dtype(d).kind == "c":
        x = (np.round(x.real) + 1j * np.round(x.imag)).astype(d)
    return x


def _distinct(rng, n: int, d) -> np.ndarray:
    """n distinct values (at most 2 for bool) in random order: every sort order is then unique."""
    n = 2 if np.dtype(d) == np.bool_ else n
    return rng.permutation(np.arange(n)).astype(d)


def _with_nans(rng, shape, d) -> np.ndarray:
    x = _with_ties(rng, shape, d)
    if is_float(d) and x.size:
        flat = x.reshape(-1)
        picks = rng.choice(flat.size, size=max(1, flat.size // 4), replace=False)
        flat[picks] = np.array([np.nan, np.inf, -np.inf, np.nan])[np.arange(picks.size) % 4].astype(d)
    return x


# --- references -----------------------------------------------------------------------------------


def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """np.lexsort keys (least significant first) for JAX's total order: complex by (real, imag)."""
    if x.dtype.kind == "c":
        return [x.imag, x.real]
    return [x.astype(np.float64) if is_float(x.dtype) else x]


def _lex_perm(keys, axis: int) -> np.ndarray:
    parts = []
    for k in reversed(keys):  # np.lexsort: the last key is the primary one
        parts += _sort_keys(np.asarray(k))
    return np.lexsort(parts, axis=axis)


def _sort_ref(operand, dimension=-1, is_stable=True, num_keys=1):
    if isinstance(operand, (tuple, list)):
        perm = _lex_perm(operand[:num_keys], dimension)
        return tuple(np.take_along_axis(np.asarray(x), perm, dimension) for x in operand)
    return np.take_along_axis(operand, _lex_perm([operand], dimension), dimension)


def _top_k_ref(x, k):
    # Stable descending with NaN largest: ascending argsort of the reversed axis, read backwards.
    n = x.shape[-1]
    order = np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)
    index = (n - 1 - order)[..., :k]
    return np.take_along_axis(x, index, -1), index.astype(np.int32)


def _reverse_wrap(fn):
    def ref(x, axis=0, reverse=False):
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis), axis)
        return fn(x, axis)

    return ref


def _prefix(reduce):
    """out[..., i, ...] = reduce(x[..., :i + 1, ...]) along axis: a loop, independent of any scan."""

    def fn(x, axis):
        x = np.moveaxis(x, axis, -1)
        out = np.empty_like(x)
        for i in range(x.shape[-1]):
            out[..., i] = reduce(x[..., : i + 1])
        return np.moveaxis(out, -1, axis)

    return fn


def _lex_max(x):
    """max along the last axis with NaN propagating; complex by (real, imag) (NumPy's complex max)."""
    return np.max(x, axis=-1)


_SCAN_SHAPES = [((5,), 0), ((2, 3), 1), ((2, 3), 0), ((3, 4), -1), ((0,), 0), ((2, 0), 1), ((0, 3), 1)]


def _scan_samples(low=None, high=None, specials=False):
    def make(rng, d):
        out = [Sample((make_array(rng, s, d, low, high),), {"axis": ax, "reverse": rev})
               for (s, ax), rev in zip(_SCAN_SHAPES, [False, True] * 4)]  # fmt: skip
        out.append(Sample((make_array(rng, (4,), d, low, high),)))
        if specials and is_float(d):
            x = np.array([[1.0, np.nan, 2.0, 0.5], [-np.inf, -np.inf, 1000.0, -1000.0], [np.inf, 1.0, -np.inf, 3.0]])
            out += [Sample((x.astype(d),), {"axis": 1, "reverse": r}) for r in (False, True)]
        return out

    return make


def _lax_scan(name, ref, dtypes, unsupported, samples, tol=None, ref_in_dtype=False):
    op = getattr(lax, name)
    register(OpInfo(f"lax.{name}", lambda x, **k: op(x, **k), _reverse_wrap(ref), dtypes, samples, unsupported,
                    primitives=(name,), tol=tol or SUM_TOLERANCES, ref_in_dtype=ref_in_dtype))  # fmt: skip


_lax_scan("cumsum", lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype), NUMERIC, NO_BOOL, _scan_samples())
_lax_scan("cumprod", lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype), NUMERIC, NO_BOOL, _scan_samples(-2, 3))
_lax_scan("cummax", _prefix(_lex_max), NUMERIC, NO_BOOL, _scan_samples(specials=True))
_lax_scan("cummin", _prefix(lambda x: np.min(x, axis=-1)), NUMERIC, NO_BOOL, _scan_samples(specials=True))
_lax_scan("cumlogsumexp", _prefix(lambda x: sc.logsumexp(x, axis=-1)), FLOATING, FLOAT_ONLY_LSE,
          _scan_samples(specials=True))


def _sort_samples(rng, d):
    out = []
    for shape, dim in [((6,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((0,), 0), ((2, 0), 1), ((1,), 0)]:
        out.append(Sample((_with_nans(rng, shape, d),), {"dimension": dim}))
    out.append(Sample((make_array(rng, (7,), d),)))
    out.append(Sample((_with_ties(rng, (9,), d),), {"is_stable": False}))
    # Several operands: ties in the keys make the payload order depend on stability.
    keys, values = _with_ties(rng, (3, 6), d), make_array(rng, (3, 6), d)
    out.append(Sample(((keys, values),), {"dimension": 1}))
    out.append(Sample(((keys, _with_ties(rng, (3, 6), d), values),), {"dimension": 1, "num_keys": 2}))
    out.append(Sample(((_with_nans(rng, (8,), d), make_array(rng, (8,), d)),), {"dimension": 0}))
    out.append(Sample(((make_array(rng, (0, 2), d), make_array(rng, (0, 2), d)),), {"dimension": 0, "num_keys": 2}))
    return out


def _sort_ad_samples(rng, d):
    # _sort_samples without ties in the keys (the payloads may tie) and without NaN.
    out = [Sample((spread(rng, shape, d),), {"dimension": dim})
           for shape, dim in [((6,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((0,), 0), ((2, 0), 1), ((1,), 0)]]
    out.append(Sample((spread(rng, (9,), d),), {"is_stable": False}))
    return out  # several operands: lax.sort[operands], whose arrays the autodiff columns can reach


def _sort_operands_samples(rng, d):
    keys, values = _with_ties(rng, (3, 6), d), make_array(rng, (3, 6), d)
    return [Sample((keys, values), {"dimension": 1}),
            Sample((keys, _with_ties(rng, (3, 6), d), values), {"dimension": 1, "num_keys": 2}),
            Sample((_with_ties(rng, (2, 5), d), _with_ties(rng, (2, 5), d), values[:2, :5]), {"dimension": 0, "num_keys": 3}),
            Sample((_with_nans(rng, (8,), d), make_array(rng, (8,), d)), {"dimension": 0}),
            Sample((make_array(rng, (0, 2), d), make_array(rng, (0, 2), d)), {"dimension": 0, "num_keys": 2})]  # fmt: skip


def _sort_operands_ad_samples(rng, d):
    # The first key without ties (a tie there would let a perturbation reorder); the others may tie.
    values = make_array(rng, (3, 6), d)
    return [Sample((spread(rng, (3, 6), d), values), {"dimension": 1}),
            Sample((spread(rng, (3, 6), d), _with_ties(rng, (3, 6), d), values), {"dimension": 1, "num_keys": 2}),
            Sample((spread(rng, (2, 5), d), _with_ties(rng, (2, 5), d), values[:2, :5]), {"dimension": 0, "num_keys": 3}),
            Sample((spread(rng, (3, 6), d), values), {"dimension": 0}),
            Sample((make_array(rng, (0, 2), d), make_array(rng, (0, 2), d)), {"dimension": 0, "num_keys": 2})]  # fmt: skip


register(
    OpInfo("lax.sort", lambda operand, **k: lax.sort(operand, **k), _sort_ref, ALL, _sort_samples, "",
           primitives=("sort",), ref_in_dtype=True, ad_samples=_sort_ad_samples),
    # lax.sort of several operands, each an argument of its own (so that every column can reach it).
    OpInfo("lax.sort[operands]", lambda *xs, **k: lax.sort(xs, **k), lambda *xs, **k: _sort_ref(xs, **k), ALL,
           _sort_operands_samples, "", primitives=("sort",), ref_in_dtype=True, ad_samples=_sort_operands_ad_samples),
    OpInfo("lax.sort_key_val", lambda k, v, **kw: lax.sort_key_val(k, v, **kw),
           lambda k, v, dimension=-1: _sort_ref((k, v), dimension), ALL,
           lambda rng, d: [Sample((_with_ties(rng, (8,), d), make_array(rng, (8,), d))),
                           Sample((_with_nans(rng, (2, 5), d), make_array(rng, (2, 5), d)), {"dimension": 0}),
                           Sample((make_array(rng, (0,), d), make_array(rng, (0,), d)))],
           "", primitives=("sort",), ref_in_dtype=True,
           ad_samples=lambda rng, d: [Sample((spread(rng, (8,), d), _with_ties(rng, (8,), d))),
                                      Sample((spread(rng, (2, 5), d), make_array(rng, (2, 5), d)), {"dimension": 0})]),
    OpInfo("lax.top_k", lambda x, k: lax.top_k(x, k)[0], lambda x, k: _top_k_ref(x, k)[0], REAL,
           lambda rng, d: [Sample((_with_nans(rng, (7,), d), 3)), Sample((_with_ties(rng, (3, 5), d), 5)),
                           Sample((make_array(rng, (2, 4), d), 0)), Sample((make_array(rng, (0, 3), d), 2))],
           NO_COMPLEX, primitives=("top_k",),
           ad_samples=lambda rng, d: [Sample((spread(rng, (7,), d), 3)), Sample((spread(rng, (3, 5), d), 5)),
                                      Sample((spread(rng, (2, 3, 4), d), 1)), Sample((spread(rng, (2, 4), d), 0))]),
    OpInfo("lax.top_k[indices]", lambda x, k: lax.top_k(x, k)[1], lambda x, k: _top_k_ref(x, k)[1], REAL,
           lambda rng, d: [Sample((_with_nans(rng, (7,), d), 3)), Sample((_with_ties(rng, (3, 5), d), 5)),
                           Sample((_with_ties(rng, (9,), d), 9))],
           NO_COMPLEX, primitives=("top_k",), out_dtype=lambda d: INT32),
)  # fmt: skip

# --- ember.numpy: sort, argsort, partition -----------------------------------------------------------


def _np_sort_samples(rng, d):
    out = [Sample((_with_nans(rng, (7,), d),)), Sample((_with_ties(rng, (3, 4), d),), {"axis": 0}),
           Sample((_with_nans(rng, (2, 3, 4), d),), {"axis": None}), Sample((make_array(rng, (), d),), {"axis": None}),
           Sample((make_array(rng, (0, 3), d),)), Sample((_with_ties(rng, (2, 6), d),), {"descending": True}),
           Sample((_distinct(rng, 9, d),), {"descending": True, "stable": False}),
           Sample((_with_ties(rng, (4, 3), d),), {"axis": -2, "kind": "stable"})]  # fmt: skip
    return out


def _np_sort_ad_samples(rng, d):
    return [Sample((spread(rng, (7,), d),)), Sample((spread(rng, (3, 4), d),), {"axis": 0}),
            Sample((spread(rng, (2, 3, 4), d),), {"axis": None}), Sample((spread(rng, (), d),), {"axis": None}),
            Sample((make_array(rng, (0, 3), d),)), Sample((spread(rng, (2, 6), d),), {"descending": True}),
            Sample((spread(rng, (9,), d),), {"descending": True, "stable": False}),
            Sample((spread(rng, (4, 3), d),), {"axis": -2, "kind": "stable"})]  # fmt: skip


def _np_sort_ref(x, axis=-1, descending=False, stable=True, kind=None):
    if axis is None:
        x, axis = x.reshape(-1), 0
    out = _sort_ref(x, axis)
    return np.flip(out, axis) if descending else out


def _np_argsort_ref(x, axis=-1, descending=False, stable=True, kind=None):
    if axis is None:
        x, axis = x.reshape(-1), 0
    if not descending:
        return _lex_perm([x], axis)
    # Descending and stable: equal elements keep their original (ascending index) order.
    n = x.shape[axis]
    return n - 1 - np.flip(_lex_perm([np.flip(x, axis)], axis), axis)


def _check_partition(x: np.ndarray, p: np.ndarray, kth, axis) -> None:
    """NumPy's guarantees: p[kth] is what a full sort puts there; before it <=, after it >= (NaN largest)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    if is_float(x.dtype):
        x, p = x.astype(np.float64), p.astype(np.float64)
    x, p = np.moveaxis(x, axis, -1), np.moveaxis(p, axis, -1)
    want = np.sort(x, axis=-1)
    np.testing.assert_array_equal(np.sort(p, axis=-1), want)  # the same elements
    for k in np.atleast_1d(kth) % x.shape[-1]:
        pivot = p[..., k : k + 1]
        np.testing.assert_array_equal(pivot[..., 0], want[..., k])
        before, after = p[..., :k], p[..., k + 1 :]
        nan = np.isnan if x.dtype.kind in "fc" else np.zeros_like
        assert np.all((before <= pivot) | nan(pivot).astype(bool)), f"partition: an element before kth={k} is larger"
        assert np.all((after >= pivot) | nan(after).astype(bool)), f"partition: an element after kth={k} is smaller"


def _partition_op(x, kth, axis=-1):
    p = enp.partition(x, kth, axis)
    _check_partition(np.asarray(x).astype(np.asarray(p).dtype), np.asarray(p), kth, axis)
    return p


def _argpartition_op(x, kth, axis=-1):
    idx = enp.argpartition(x, kth, axis)
    host, i = np.asarray(x), np.asarray(idx)
    flat_axis = 0 if axis is None else axis
    base = host.reshape(-1) if axis is None else host
    np.testing.assert_array_equal(np.sort(i, axis=flat_axis), _arange_ref(base, kth, flat_axis))  # a permutation
    _check_partition(base, np.take_along_axis(base, i, flat_axis), kth, flat_axis)
    return idx


def _partition_samples(rng, d):
    # Real dtypes get NaNs; complex guarantees are checked without (NaN complex order differs in NumPy).
    make = _with_nans if d.kind != "c" else _with_ties
    return [Sample((make(rng, (7,), d), 3)), Sample((make(rng, (3, 5), d), 0), {"axis": 0}),
            Sample((make(rng, (2, 6), d), -1)), Sample((make(rng, (2, 3), d), 4), {"axis": None}),
            Sample((make(rng, (4, 5), d), [1, 3]))]  # fmt: skip


def _partition_ad_samples(rng, d):
    return [Sample((spread(rng, (7,), d), 3)), Sample((spread(rng, (3, 5), d), 0), {"axis": 0}),
            Sample((spread(rng, (2, 6), d), -1)), Sample((spread(rng, (2, 3), d), 4), {"axis": None}),
            Sample((spread(rng, (4, 5), d), [1, 3]))]  # fmt: skip


def _sorted_ref(x, kth, axis=-1):
    if axis is None:
        return np.sort(x.reshape(-1))
    return np.sort(x, axis=axis)


def _arange_ref(x, kth, axis=-1):
    if axis is None:
        return np.arange(x.size)
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = n
    return np.broadcast_to(np.arange(n).reshape(shape), x.shape)


register(
    OpInfo("enp.sort", lambda x, **k: enp.sort(x, **k), _np_sort_ref, ALL, _np_sort_samples, "", primitives=("sort",),
           ref_in_dtype=True, ad_samples=_np_sort_ad_samples),
    OpInfo("enp.argsort", lambda x, **k: enp.argsort(x, **k), _np_argsort_ref, ALL, _np_sort_samples, "",
           primitives=("sort", "iota"), out_dtype=default_int, ref_in_dtype=True),
    # partition returns one of many valid answers: the op checks NumPy's guarantees on it and the
    # comparison sees it sorted (the same multiset as the reference's full sort).
    OpInfo("enp.partition", lambda x, kth, **k: enp.sort(_partition_op(x, kth, **k), axis=k.get("axis", -1)),
           _sorted_ref, ALL, _partition_samples, "", primitives=("sort",), ad_samples=_partition_ad_samples,
           needs_concrete="kth must be a concrete int (as in NumPy and JAX), and this entry checks the partition guarantee on concrete values"),
    OpInfo("enp.argpartition", lambda x, kth, **k: enp.sort(_argpartition_op(x, kth, **k), axis=k.get("axis", -1)),
           _arange_ref, ALL, _partition_samples, "", primitives=("sort",), out_dtype=default_int,
           ad_samples=_partition_ad_samples, needs_concrete="kth must be a concrete int (as in NumPy and JAX), and this entry checks the partition guarantee on concrete values"),
)  # fmt: skip

# --- ember.numpy: running sums and products, diff --------------------------------------------------


def _cum_samples(nan=False, low=None, high=None):
    def make(rng, d):
        maker = _with_nans if nan else (lambda r, s, t: make_array(r, s, t, low, high))
        out = [Sample((maker(rng, (5,), d),)), Sample((maker(rng, (2, 3), d),), {"axis": 1}),
               Sample((maker(rng, (2, 3), d),), {"axis": 0}), Sample((maker(rng, (2, 3, 2), d),), {"axis": -1}),
               Sample((maker(rng, (), d),)), Sample((maker(rng, (0, 3), d),), {"axis": 0}),
               Sample((maker(rng, (0,), d),)), Sample((maker(rng, (2, 2), d),), {"axis": 0, "dtype": np.float32})]  # fmt: skip
        if d.kind in "biu":
            out.append(Sample((maker(rng, (4,), d),), {"dtype": np.int8}))
        return out

    return make


def _cum_ad_samples(nan=False, low=None, high=None):
    """_cum_samples without infinities; the nan* functions keep a NaN or two (they skip them, so the
    result is differentiable in the other entries)."""

    def maker(rng, shape, d):
        x = make_array(rng, shape, d, low, high)
        if nan and x.size and d.kind in "fcV":
            flat = x.reshape(-1)
            flat[rng.choice(flat.size, size=max(1, flat.size // 4), replace=False)] = np.nan
        return x

    def make(rng, d):
        return [Sample((maker(rng, (5,), d),)), Sample((maker(rng, (2, 3), d),), {"axis": 1}),
                Sample((maker(rng, (2, 3), d),), {"axis": 0}), Sample((maker(rng, (2, 3, 2), d),), {"axis": -1}),
                Sample((maker(rng, (), d),)), Sample((maker(rng, (0, 3), d),), {"axis": 0}),
                Sample((maker(rng, (2, 2), d),), {"axis": 0, "dtype": np.float32})]  # fmt: skip

    return make


def _kwarg_dtype_or(default):
    def rule(d, s):
        given = s.kwargs.get("dtype")
        if given is None:
            return default(d)
        return np.dtype(given)

    return rule


def _np_cum(fn, nan_as=None):
    def ref(x, axis=None, dtype=None):
        if nan_as is not None and x.dtype.kind in "fc":
            x = np.where(np.isnan(x), nan_as, x)
        if dtype is not None:
            t = np.dtype(dtype)
            if x.dtype.kind == "c" and t.kind != "c":
                x = x.real  # as a cast to a real dtype does in JAX
            if t.kind in "iu":
                return fn(x.astype(t), axis=axis, dtype=t)  # wraps like the integer accumulation
            x = x.astype(np.float64)
        return fn(x, axis=axis)

    return ref


for _name, _fn, _nan, _low, _high in [("cumsum", np.cumsum, None, None, None), ("cumprod", np.cumprod, None, -2, 3),
                                      ("nancumsum", np.cumsum, 0, None, None), ("nancumprod", np.cumprod, 1, -2, 3)]:  # fmt: skip
    register(OpInfo(f"enp.{_name}", lambda x, _n=_name, **k: getattr(enp, _n)(x, **k), _np_cum(_fn, _nan), ALL,
                    _cum_samples(nan=_nan is not None, low=_low, high=_high), "", primitives=(_name.replace("nan", ""),),
                    out_dtype_of=_kwarg_dtype_or(sum_dtype), tol=SUM_TOLERANCES,
                    ad_samples=_cum_ad_samples(nan=_nan is not None, low=_low, high=_high)))  # fmt: skip


def _diff_samples(rng, d):
    out = [Sample((make_array(rng, (6,), d),)), Sample((make_array(rng, (3, 4), d),), {"axis": 0}),
           Sample((make_array(rng, (3, 5), d),), {"n": 2}), Sample((make_array(rng, (4,), d),), {"n": 0}),
           Sample((make_array(rng, (3,), d),), {"n": 5}), Sample((make_array(rng, (0, 2), d),), {"axis": 0}),
           Sample((make_array(rng, (2, 3), d),), {"prepend": np.asarray(make_array(rng, (), d))}),
           Sample((make_array(rng, (2, 3), d),), {"axis": 0, "append": make_array(rng, (2, 3), d),
                                                  "prepend": make_array(rng, (1, 3), d)})]  # fmt: skip
    return out


register(
    OpInfo("enp.diff", lambda x, **k: enp.diff(x, **k), lambda x, **k: np.diff(x, **k), ALL, _diff_samples, "",
           primitives=("slice", "sub"), tol=SUM_TOLERANCES, ref_in_dtype=True),
)  # fmt: skip

# --- ember.numpy: searchsorted, unique ---------------------------------------------------------------


def _order(x: np.ndarray) -> np.ndarray:
    # np.argsort of bfloat16 (ml_dtypes) does not put NaN last; float64 holds every value exactly.
    return np.argsort(x.astype(np.float64) if is_float(x.dtype) else x, kind="stable")


def _searchsorted_samples(rng, d):
    make = _with_nans if d.kind != "c" else _with_ties
    a = make(rng, (9,), d)
    a = a[_order(a)]
    v = np.concatenate([a[::2], make(rng, (5,), d)])
    unsorted = make(rng, (6,), d)
    out = [Sample((a, v)), Sample((a, v), {"side": "right"}), Sample((a, v.reshape(2, -1)), {"side": "left"}),
           Sample((a, np.asarray(v[0]))), Sample((a[:0], v)), Sample((a, v[:0])), Sample((a[:1], v), {"side": "right"}),
           Sample((unsorted, v), {"sorter": _order(unsorted)}),
           Sample((np.sort(_with_ties(rng, (40,), d)), make(rng, (3, 4), d)), {"side": "right"})]  # fmt: skip
    return out


def _searchsorted_ad_samples(rng, d):
    # Integer results (float0 tangents); values apart from the sorted ones, so that none sits on an edge.
    a = np.sort(spread(rng, (9,), d))
    return [Sample((a, spread(rng, (5,), d) + 0.125)), Sample((a, spread(rng, (2, 3), d) + 0.125), {"side": "right"})]


def _searchsorted_ref(a, v, side="left", sorter=None):
    return np.searchsorted(a, v, side=side, sorter=sorter).astype(np.int32)


def _unique_samples(rng, d):
    make = _with_nans if d.kind != "c" else _with_ties
    rows = _with_ties(rng, (5, 2), d)
    rows[3] = rows[0]
    return [Sample((make(rng, (9,), d),)), Sample((make(rng, (3, 4), d),)), Sample((make_array(rng, (), d),)),
            Sample((make_array(rng, (0,), d),)), Sample((make(rng, (8,), d),), {"size": 12}),
            Sample((make(rng, (8,), d),), {"size": 2}), Sample((make(rng, (6,), d),), {"size": 9, "fill_value": 1}),
            Sample((rows,), {"axis": 0}), Sample((rows.T.copy(),), {"axis": 1}),
            Sample((rows,), {"axis": 0, "size": 6}), Sample((make(rng, (0,), d),), {"size": 3, "fill_value": 0})]  # fmt: skip


def _unique_ad_samples(rng, d):
    # Distinct values (rows with distinct first entries): where two are equal, a perturbation
    # splits them and changes what unique returns.
    return [Sample((spread(rng, (9,), d),)), Sample((spread(rng, (3, 4), d),)), Sample((spread(rng, (), d),)),
            Sample((make_array(rng, (0,), d),)), Sample((spread(rng, (8,), d),), {"size": 12}),
            Sample((spread(rng, (8,), d),), {"size": 2}), Sample((spread(rng, (6,), d),), {"size": 9, "fill_value": 1}),
            Sample((spread(rng, (5, 2), d),), {"axis": 0}), Sample((spread(rng, (2, 5), d),), {"axis": 1}),
            Sample((spread(rng, (5, 2), d),), {"axis": 0, "size": 6})]  # fmt: skip


def _unique_np(x, axis=None, size=None, fill_value=None):
    """np.unique with all extras, cut or padded to `size` as jnp.unique does."""
    vals, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    if size is None:
        return vals, index, inverse, counts
    m = vals.shape[0 if axis is None else axis]
    vals = np.moveaxis(vals, 0 if axis is None else axis, 0)
    if m >= size:
        vals, index, counts = vals[:size], index[:size], counts[:size]
    else:
        if fill_value is not None:
            pad = np.full((size - m, *vals.shape[1:]), fill_value, dtype=vals.dtype)
        elif m:
            pad = np.repeat(vals[:1], size - m, axis=0)
        else:
            pad = np.zeros((size, *vals.shape[1:]), vals.dtype)
        vals = np.concatenate([vals, pad])
        index = np.concatenate([index, np.full(size - m, index[0] if m else 0, index.dtype)])  # the smallest's index
        counts = np.concatenate([counts, np.zeros(size - m, counts.dtype)])
    return np.moveaxis(vals, 0, 0 if axis is None else axis), index, inverse, counts


def _unique_extras(x, **k):
    return tuple(enp.unique(x, return_index=True, return_inverse=True, return_counts=True, **k)[1:])


register(
    OpInfo("enp.searchsorted", lambda a, v, **k: enp.searchsorted(a, v, **k), _searchsorted_ref, ALL,
           _searchsorted_samples, "", primitives=("sort", "cumsum"), out_dtype=lambda d: INT32,
           ad_samples=_searchsorted_ad_samples),
    OpInfo("enp.unique", lambda x, **k: enp.unique(x, **k), lambda x, **k: _unique_np(x, **k)[0], ALL, _unique_samples,
           "", primitives=("sort",), ad_samples=_unique_ad_samples, needs_concrete="the input without size=: the number of distinct values sets the result's length"),
    OpInfo("enp.unique[extras]", _unique_extras, lambda x, **k: _unique_np(x, **k)[1:], ALL, _unique_samples, "",
           primitives=("sort", "cumsum"), out_dtype=default_int, ad_samples=_unique_ad_samples, needs_concrete="the input without size=: the number of distinct values sets the result's length"),
)  # fmt: skip

