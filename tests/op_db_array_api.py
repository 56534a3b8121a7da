"""op_db entries for the array API functions of ember.numpy and NumPy's ndarray-method functions.

`astype cumulative_sum cumulative_prod count_nonzero unique_all unique_counts
unique_inverse unique_values unstack from_dlpack choose compress ptp`, each
against NumPy (np.astype, np.cumulative_sum, np.unique with equal_nan=False as
np.unique_all uses, np.unstack, np.choose, np.compress, np.ptp). Entries whose
outputs have different dtypes (the unique functions' values and index arrays)
are split in two, since a row of the database has one result dtype.
"""

from __future__ import annotations

import numpy as np
from op_db import (
    ALL,
    BF16,
    COMPLEX,
    SUM_TOLERANCES,
    OpInfo,
    Sample,
    canonical,
    default_int,
    is_inexact_dtype,
    make_array,
    register,
    spread,
    sum_dtype,
)

import ember.numpy as enp

NOT_ORDERED = "complex numbers have no order (as NumPy's ptp and JAX's)"


def _with_repeats(rng, shape, d) -> np.ndarray:
    """Few distinct values (so that uniqueness matters); floats get -0.0 next to 0.0 and two NaNs."""
    x = make_array(rng, shape, d, -2, 3)
    if np.dtype(d).kind == "c":
        return (np.round(x.real) + 1j * np.round(x.imag)).astype(d)
    if is_inexact_dtype(d):
        x = np.round(x.astype(np.float64)).astype(d)
        flat = x.reshape(-1)
        if flat.size > 4:
            flat[0], flat[1], flat[2], flat[3] = 0.0, -0.0, np.nan, np.nan
    return x


# --- astype -----------------------------------------------------------------------------------------------


def _astype_samples(rng, d):
    x = make_array(rng, (2, 3), d)
    out = [Sample((x, np.dtype(np.float32))), Sample((x, np.dtype(np.int8))), Sample((x, np.dtype(np.bool_))),
           Sample((x, d), {"copy": False}), Sample((make_array(rng, (), d), d)), Sample((make_array(rng, (0, 2), d), np.dtype(np.int32))),
           Sample((x, np.dtype(np.complex64)))]  # fmt: skip
    return out


def _astype_ad_samples(rng, d):
    x = make_array(rng, (2, 3), d)
    return [Sample((x, d)), Sample((x, np.dtype(np.complex64 if np.dtype(d).kind == "c" else np.float32)))]


def _astype_ref(x, dtype, copy=True):
    if x.dtype.kind == "c" and np.dtype(dtype).kind not in "cb":
        x = x.real  # NumPy's rule (with a ComplexWarning): the real part; to bool, x != 0 (either part)
    return x.astype(dtype)


register(
    OpInfo("enp.astype", lambda x, t, **k: enp.astype(x, t, **k), _astype_ref, ALL, _astype_samples, "",
           primitives=("convert_element_type", "copy"), out_dtype_of=lambda d, s: canonical(s.args[1], d), ref_in_dtype=True,
           ad_samples=_astype_ad_samples),
)  # fmt: skip


# --- cumulative_sum, cumulative_prod, count_nonzero ---------------------------------------------------------


def _cumulative_samples(low=None, high=None):
    def make(rng, d):
        return [Sample((make_array(rng, (5,), d, low, high),)), Sample((make_array(rng, (4,), d, low, high),), {"include_initial": True}),
                Sample((make_array(rng, (2, 3), d, low, high),), {"axis": 1, "include_initial": True}),
                Sample((make_array(rng, (2, 3), d, low, high),), {"axis": 0}), Sample((make_array(rng, (2, 3, 2), d, low, high),), {"axis": -1}),
                Sample((make_array(rng, (0,), d),), {"include_initial": True}), Sample((make_array(rng, (0, 3), d),), {"axis": 0})]  # fmt: skip

    return make


def _np_cumulative(name):
    def ref(x, **k):
        if x.dtype == np.bool_:
            x = x.astype(np.int64)
        return getattr(np, name)(x, **k)

    return ref


for _name, _prim, _low, _high in [("cumulative_sum", "cumsum", None, None), ("cumulative_prod", "cumprod", -2, 3)]:
    register(OpInfo(f"enp.{_name}", lambda x, _n=_name, **k: getattr(enp, _n)(x, **k), _np_cumulative(_name), ALL,
                    _cumulative_samples(_low, _high), "", primitives=(_prim, "concatenate"), out_dtype=sum_dtype,
                    tol=SUM_TOLERANCES))  # fmt: skip


def _count_samples(rng, d):
    x = make_array(rng, (3, 4), d, -1, 2)  # integers: many zeros
    if is_inexact_dtype(d):
        x = np.round(x.astype(np.complex128 if np.dtype(d).kind == "c" else np.float64)).astype(d)
    return [Sample((x,)), Sample((x,), {"axis": 1}), Sample((x,), {"axis": (0, 1), "keepdims": True}),
            Sample((make_array(rng, (), d),)), Sample((make_array(rng, (0, 2), d),), {"axis": 0})]  # fmt: skip


register(
    OpInfo("enp.count_nonzero", lambda x, **k: enp.count_nonzero(x, **k), lambda x, **k: np.asarray(np.count_nonzero(x, **k)),
           ALL, _count_samples, "", primitives=("ne", "reduce_sum"), out_dtype=default_int,
           transforms=frozenset({"vmap", "jit"}), nondiff="an integer count"),
)  # fmt: skip


# --- unique_* -----------------------------------------------------------------------------------------------


def _unique_samples(rng, d):
    return [Sample((_with_repeats(rng, (9,), d),)), Sample((_with_repeats(rng, (3, 4), d),)), Sample((make_array(rng, (), d),)),
            Sample((make_array(rng, (0,), d),)), Sample((_with_repeats(rng, (8,), d),), {"size": 12}),
            Sample((_with_repeats(rng, (8,), d),), {"size": 2}),
            Sample((_with_repeats(rng, (6,), d),), {"size": 9, "fill_value": 1})]  # fmt: skip


def _unique_ad_samples(rng, d):
    return [Sample((spread(rng, (9,), d),)), Sample((spread(rng, (3, 4), d),)), Sample((spread(rng, (8,), d),), {"size": 12}),
            Sample((spread(rng, (8,), d),), {"size": 2})]  # fmt: skip


def _unique_np(x, size=None, fill_value=None):
    """(values, indices, inverse_indices, counts) as np.unique_all computes them (NaNs distinct, sorted), cut or
    padded to `size` as jnp.unique_all does: padding takes `fill_value` (default the smallest value), the
    smallest value's index and a count of 0."""
    if x.dtype == BF16:  # NumPy sorts ml_dtypes' bfloat16 without putting NaN last; float64 holds it exactly
        values, index, inverse, counts = _unique_np(x.astype(np.float64), size, fill_value)
        return values.astype(BF16), index, inverse, counts
    values, index, inverse, counts = np.unique(x.ravel(), return_index=True, return_inverse=True, return_counts=True,
                                               equal_nan=False)  # fmt: skip
    inverse = inverse.reshape(x.shape)
    if size is None:
        return values, index, inverse, counts
    m = values.shape[0]
    if m >= size:
        return values[:size], index[:size], inverse, counts[:size]
    fill = fill_value if fill_value is not None else (values[0] if m else 0)
    values = np.concatenate([values, np.full(size - m, fill, values.dtype)])
    index = np.concatenate([index, np.full(size - m, index[0] if m else 0, index.dtype)])
    counts = np.concatenate([counts, np.zeros(size - m, counts.dtype)])
    return values, index, inverse, counts


_CONCRETE = "the input without size=: the number of distinct values sets the result's length"
# (name, which of _unique_np's outputs the function returns)
_UNIQUE = {"unique_all": (0, 1, 2, 3), "unique_counts": (0, 3), "unique_inverse": (0, 2), "unique_values": (0,)}


def _unique_op(name, picks):
    def op(x, **k):
        out = getattr(enp, name)(x, **k)
        out = out if isinstance(out, tuple) else (out,)
        return tuple(out[i] for i in picks)

    return op


def _unique_ref(picks):
    return lambda x, **k: tuple(_unique_np(x, **k)[i] for i in picks)


for _name, _outputs in _UNIQUE.items():
    _values, _indices = (0,), tuple(range(1, len(_outputs)))
    register(OpInfo(f"enp.{_name}" if not _indices else f"enp.{_name}[values]", _unique_op(_name, _values), _unique_ref(_values),
                    ALL, _unique_samples, "", primitives=("sort",), ad_samples=_unique_ad_samples, needs_concrete=_CONCRETE,
                    ref_in_dtype=True))  # fmt: skip
    if _indices:
        register(OpInfo(f"enp.{_name}", _unique_op(_name, _indices), _unique_ref(_outputs[1:]), ALL, _unique_samples, "",
                        primitives=("sort", "cumsum"), out_dtype=default_int, ad_samples=_unique_ad_samples,
                        needs_concrete=_CONCRETE, ref_in_dtype=True))  # fmt: skip


# --- unstack, from_dlpack ---------------------------------------------------------------------------------------


def _unstack_samples(rng, d):
    return [Sample((make_array(rng, (3,), d),)), Sample((make_array(rng, (2, 3), d),), {"axis": 1}),
            Sample((make_array(rng, (2, 3, 2), d),), {"axis": -1}), Sample((make_array(rng, (1, 0), d),))]  # fmt: skip


def _dlpack_samples(rng, d):
    return [Sample((make_array(rng, (2, 3), d),)), Sample((make_array(rng, (), d),)), Sample((make_array(rng, (0, 4), d),)),
            Sample((make_array(rng, (3,), d),), {"copy": True})]  # fmt: skip


register(
    OpInfo("enp.unstack", lambda x, **k: enp.unstack(x, **k), lambda x, **k: np.unstack(x, **k), ALL, _unstack_samples, "",
           primitives=("slice",)),
    OpInfo("enp.from_dlpack", lambda x, **k: enp.from_dlpack(x, **k), lambda x, **k: x, [d for d in ALL if d != BF16],
           _dlpack_samples, "bfloat16 has no DLPack type code NumPy reads (ml_dtypes' bfloat16 cannot be exported)",
           out_dtype=lambda d: d, transforms=frozenset(),
           nondiff="DLPack hands over a concrete buffer; a traced value has none (as jax.numpy.from_dlpack)"),
)  # fmt: skip


# --- ptp, choose, compress ----------------------------------------------------------------------------------------


def _ptp_samples(rng, d):
    return [Sample((make_array(rng, (5,), d),)), Sample((make_array(rng, (3, 4), d),), {"axis": 1}),
            Sample((make_array(rng, (3, 4), d),), {"axis": (0, 1), "keepdims": True}), Sample((make_array(rng, (), d),)),
            Sample((make_array(rng, (0, 3), d),), {"axis": 1})]  # fmt: skip


def _ptp_ref(x, **k):
    if x.dtype == np.bool_:
        return np.logical_xor(np.max(x, **k), np.min(x, **k))
    return np.ptp(x, **k)


def _choose_samples(rng, d):
    a, b, c = (make_array(rng, (2, 3), d) for _ in range(3))
    index = rng.integers(0, 3, size=(2, 3)).astype(np.int32)
    wild = rng.integers(-4, 6, size=(2, 3)).astype(np.int32)
    return [Sample((index, [a, b, c])), Sample((wild, [a, b, c]), {"mode": "clip"}), Sample((wild, [a, b]), {"mode": "wrap"}),
            Sample((index[0], [a, b, make_array(rng, (3,), d)])), Sample((np.zeros((0,), np.int32), [make_array(rng, (0,), d)]))]  # fmt: skip


def _compress_samples(rng, d):
    x = make_array(rng, (3, 4), d)
    keep = np.array([True, False, True])
    return [Sample((keep, x), {"axis": 0}), Sample((np.array([False, True, True, False]), x), {"axis": 1}),
            Sample((np.array([True, False, False, True, True]), x)), Sample((np.array([True]), x), {"axis": 0}),
            Sample((keep, x), {"axis": 0, "size": 3, "fill_value": 0}), Sample((np.array([True, True]), x), {"axis": 1, "size": 1})]  # fmt: skip


def _compress_ref(condition, a, axis=None, size=None, fill_value=0):
    out = np.compress(condition, a, axis=axis)
    if size is None:
        return out
    axis = 0 if axis is None else axis
    out = np.moveaxis(out, axis, 0)[:size]
    pad = np.full((size - out.shape[0], *out.shape[1:]), fill_value, out.dtype)
    return np.moveaxis(np.concatenate([out, pad]), 0, axis)


register(
    OpInfo("enp.ptp", lambda x, **k: enp.ptp(x, **k), _ptp_ref, [d for d in ALL if d not in COMPLEX], _ptp_samples, NOT_ORDERED,
           primitives=("reduce_max", "reduce_min", "sub")),
    OpInfo("enp.choose", lambda a, c, **k: enp.choose(a, c, **k), lambda a, c, **k: np.choose(a, c, **k), ALL, _choose_samples, "",
           primitives=("gather",), ref_in_dtype=True, needs_concrete="the indices with mode='raise': checking them needs their values"),
    OpInfo("enp.compress", lambda c, x, **k: enp.compress(c, x, **k), _compress_ref, ALL, _compress_samples, "",
           primitives=("gather",), ref_in_dtype=True, needs_concrete="condition without size=: it sets the result's length"),
)  # fmt: skip
