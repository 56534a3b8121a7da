"""op_db entries for the collectives (`lax.psum pmean pmax pmin all_gather axis_index psum_scatter ppermute
pshuffle all_to_all`).

A collective only means something inside ``vmap(..., axis_name=...)``, so each entry's `op`
wraps the call in ``ember.vmap(..., axis_name="i")`` over the first axis of its operand, and
the reference computes the same thing with NumPy over that axis (the result, the same in every
example, broadcast back over it). The transform columns then check the collectives under jvp,
vjp (the whole vmapped function: psum's transpose there is a reduction's) and an outer vmap of
another name. Derivatives taken inside the vmap (psum's transpose rule, all_gather's psum_scatter,
pmax's mask) are checked against hand-derived values in tests/test_collectives.py.
"""

from __future__ import annotations

import numpy as np
from op_db import ALL, NO_BOOL, NO_COMPLEX, NUMERIC, REAL, OpInfo, Sample, make_array, register

import ember
from ember import lax

NAME = "i"
# The first axis is the one the entry maps over (the examples); the rest is each example's shape.
SHAPES = [(3,), (1, 4), (4, 2), (2, 0), (2, 2, 3)]


def _samples(**kwargs):
    def make(rng, dtype):
        return [Sample((make_array(rng, s, dtype),), dict(kwargs)) for s in SHAPES]

    return make


def _over_axis(collective, **params):
    def op(x, **kwargs):
        return ember.vmap(lambda v: collective(v, NAME, **params, **kwargs), axis_name=NAME)(x)

    return op


def _same_everywhere(value, x):
    """The reference's per-example result, repeated for every example of `x`'s first axis."""
    return np.broadcast_to(np.asarray(value)[None], (x.shape[0], *np.shape(value)))


def ref_psum(x):
    return _same_everywhere(np.sum(x, axis=0, dtype=x.dtype), x)


def ref_pmean(x):
    n = x.shape[0]
    if x.dtype.kind in "iu":  # the wrapped sum, divided with truncation toward zero (lax.div)
        s = np.sum(x, axis=0, dtype=x.dtype).astype(np.int64)
        return _same_everywhere((np.sign(s) * (np.abs(s) // n)).astype(x.dtype), x)
    return _same_everywhere(np.mean(x, axis=0), x)


def ref_pmax(x):
    return _same_everywhere(np.max(x, axis=0), x)


def ref_pmin(x):
    return _same_everywhere(np.min(x, axis=0), x)


def ref_all_gather(x, axis=0, tiled=False):
    pieces = list(x)
    if tiled:
        gathered = np.concatenate(pieces, axis=axis)
    else:
        gathered = np.stack(pieces, axis=axis % (x.ndim))
    return _same_everywhere(gathered, x)


def ref_axis_index(x):
    return np.arange(x.shape[0], dtype=np.int32)


def _all_gather_samples(rng, dtype):
    out = []
    for kwargs in ({}, {"axis": 1}, {"axis": -1}, {"axis": 0, "tiled": True}):
        for s in SHAPES:
            rank = len(s) - (1 if kwargs.get("tiled") else 0)  # per-example rank, plus the gathered axis
            if not -rank <= kwargs.get("axis", 0) < rank or (kwargs.get("tiled") and len(s) < 2):
                continue
            out.append(Sample((make_array(rng, s, dtype),), dict(kwargs)))
    return out


# --- the collectives that exchange pieces: each reference loops over the receiving examples ---------------


def ref_psum_scatter(x, scatter_dimension=0, tiled=False):
    n, d = x.shape[0], scatter_dimension % (x.ndim - 1)
    total = np.sum(x, axis=0, dtype=x.dtype)  # integers wrap, as psum's sums do
    if tiled:
        size = total.shape[d] // n
        return np.stack([np.take(total, range(i * size, (i + 1) * size), axis=d) for i in range(n)])
    return np.stack([np.take(total, i, axis=d) for i in range(n)])


def _psum_scatter_samples(rng, dtype):
    cases = [((3, 3), {}), ((4, 4, 2), {}), ((2, 3, 2), {"scatter_dimension": 1}), ((2, 2, 0), {}),
             ((3, 2, 3), {"scatter_dimension": -1}), ((2, 4), {"tiled": True}),
             ((3, 2, 6), {"scatter_dimension": 1, "tiled": True}), ((1, 3), {"tiled": True})]  # fmt: skip
    return [Sample((make_array(rng, s, dtype),), kw) for s, kw in cases]


def ref_ppermute(x, perm):
    out = np.zeros_like(x)
    for src, dst in perm:
        out[dst] = x[src]
    return out


def _ppermute_samples(rng, dtype):
    cases = [((3,), ((0, 1), (1, 2), (2, 0))), ((4, 2), ((3, 0), (0, 3), (1, 2))), ((2, 0), ((0, 1),)),
             ((2, 2, 3), ((1, 0),)), ((3, 2), ()), ((1,), ((0, 0),))]  # fmt: skip
    return [Sample((make_array(rng, s, dtype), perm)) for s, perm in cases]


def ref_pshuffle(x, perm):
    return x[list(perm)]


def _pshuffle_samples(rng, dtype):
    return [Sample((make_array(rng, s, dtype), perm)) for s, perm in (((3,), (2, 0, 1)), ((4, 2), (1, 0, 3, 2)), ((1, 0), (0,)))]


def ref_all_to_all(x, split_axis, concat_axis, tiled=False):
    n, a, c = x.shape[0], split_axis % (x.ndim - 1), concat_axis % (x.ndim - 1)
    received = []
    for i in range(n):
        if tiled:
            size = x.shape[1 + a] // n
            pieces = [np.take(x[j], range(i * size, (i + 1) * size), axis=a) for j in range(n)]
            received.append(np.concatenate(pieces, axis=c))
        else:
            received.append(np.stack([np.take(x[j], i, axis=a) for j in range(n)], axis=c))
    return np.stack(received)


def _all_to_all_samples(rng, dtype):
    cases = [((3, 3), (0, 0), {}), ((2, 2, 3), (0, 1), {}), ((3, 2, 3), (1, 0), {}), ((2, 2, 0), (0, 1), {}),
             ((2, 2, 2), (-1, -1), {}), ((2, 4, 3), (0, 1), {"tiled": True}), ((3, 2, 3, 6), (2, 0), {"tiled": True}),
             ((2, 2, 2), (1, 1), {"tiled": True})]  # fmt: skip
    return [Sample((make_array(rng, s, dtype), *axes), kw) for s, axes, kw in cases]


register(
    OpInfo("lax.psum_scatter", _over_axis(lax.psum_scatter), ref_psum_scatter, NUMERIC, _psum_scatter_samples,
           unsupported=NO_BOOL, primitives=("reduce_scatter",), aliases=("reduce_scatter",)),
    OpInfo("lax.ppermute", lambda x, perm: ember.vmap(lambda v: lax.ppermute(v, NAME, perm), axis_name=NAME)(x),
           ref_ppermute, ALL, _ppermute_samples, primitives=("ppermute",)),
    OpInfo("lax.pshuffle", lambda x, perm: ember.vmap(lambda v: lax.pshuffle(v, NAME, perm), axis_name=NAME)(x),
           ref_pshuffle, ALL, _pshuffle_samples, primitives=("ppermute",)),
    OpInfo("lax.all_to_all", lambda x, a, c, **kw: ember.vmap(lambda v: lax.all_to_all(v, NAME, a, c, **kw), axis_name=NAME)(x),
           ref_all_to_all, ALL, _all_to_all_samples, primitives=("all_to_all",)),
)

register(
    OpInfo("lax.psum", _over_axis(lax.psum), ref_psum, NUMERIC, _samples(), unsupported=NO_BOOL, primitives=("psum",)),
    OpInfo("lax.pmean", _over_axis(lax.pmean), ref_pmean, NUMERIC, _samples(), unsupported=NO_BOOL, primitives=("pmean",)),
    OpInfo("lax.pmax", _over_axis(lax.pmax), ref_pmax, REAL, _samples(), unsupported=NO_COMPLEX, primitives=("pmax",)),
    OpInfo("lax.pmin", _over_axis(lax.pmin), ref_pmin, REAL, _samples(), unsupported=NO_COMPLEX, primitives=("pmin",)),
    OpInfo("lax.all_gather", _over_axis(lax.all_gather), ref_all_gather, ALL, _all_gather_samples,
           primitives=("all_gather",)),
    OpInfo("lax.axis_index", lambda x: ember.vmap(lambda v: lax.axis_index(NAME), axis_name=NAME)(x), ref_axis_index,
           ALL, _samples(), primitives=("axis_index",), out_dtype=lambda d: np.dtype(np.int32),
           transforms=frozenset({"vmap", "jit"}),
           nondiff="an int32 position along the axis: no tangent space (its tangent is float0 zeros)"),
)
