"""op_db entries for ember.numpy's index-driven functions (take, nonzero, diagonal, roll, repeat, ...)."""

from __future__ import annotations

import numpy as np
from op_db import ALL, OpInfo, Sample, make_array, register

import ember.numpy as enp


def _int(dtype_default=np.int32):
    return lambda d: np.dtype(np.int64 if d in (np.int64, np.uint64, np.float64, np.complex128) else dtype_default)


def _entry(name, op, ref, samples, **kw):
    register(OpInfo(f"enp.{name}", op, ref, ALL, samples, "", ref_in_dtype=True, **kw))


def _nonzero_ref(x, size=None, fill_value=None):
    found = np.nonzero(x)
    if size is None:
        return found
    fill = 0 if fill_value is None else fill_value
    return tuple(np.concatenate([f[:size], np.full(max(size - f.size, 0), fill)]) for f in found)


def _sparse(rng, shape, d):
    x = make_array(rng, shape, d)
    return np.where(rng.random(shape) < 0.5, np.zeros_like(x), x)


_entry("take", lambda a, i, axis=None, mode=None: enp.take(a, i, axis=axis, mode=mode),
       lambda a, i, axis=None, mode=None: np.take(a, i, axis=axis, mode="clip" if mode == "clip" else "raise"),
       lambda rng, d: [Sample((make_array(rng, (3, 4), d), np.array([2, 0, -1]), 1)),
                       Sample((make_array(rng, (3, 4), d), np.array([[5, 0]]))),
                       Sample((make_array(rng, (5,), d), np.array([7, -9]), 0, "clip")),
                       Sample((make_array(rng, (0, 2), d), np.zeros((0,), int), 0))],
       primitives=("gather",))
_entry("take_along_axis", lambda a, i, axis: enp.take_along_axis(a, i, axis), np.take_along_axis,
       lambda rng, d: [Sample((make_array(rng, (3, 4), d), np.array([[0], [3], [1]]), 1)),
                       Sample((make_array(rng, (3, 4), d), np.array([[2, 0, 1, 1]]), 0)),
                       Sample((make_array(rng, (5,), d), np.array([4, 0, 0]), None))])


def _put_ref(a, i, v, axis):
    out = a.copy()
    np.put_along_axis(out, i, v, axis)
    return out


_entry("put_along_axis", lambda a, i, v, axis: enp.put_along_axis(a, i, v, axis, inplace=False), _put_ref,
       lambda rng, d: [Sample((make_array(rng, (3, 4), d), np.array([[0], [3], [1]]), make_array(rng, (3, 1), d), 1)),
                       Sample((make_array(rng, (5,), d), np.array([4, 1]), make_array(rng, (2,), d), 0))],
       primitives=("scatter",))
_entry("nonzero", lambda a, size=None, fill_value=None: enp.nonzero(a, size=size, fill_value=fill_value), _nonzero_ref,
       lambda rng, d: [Sample((_sparse(rng, (6,), d),)), Sample((_sparse(rng, (3, 4), d),)), Sample((_sparse(rng, (0, 2), d),)),
                       Sample((_sparse(rng, (6,), d), 4)), Sample((_sparse(rng, (2, 3), d), 8, -1))],
       out_dtype=_int(),
       needs_concrete="the input when size= is not given: the number of nonzeros sets the result's length")
_entry("where.indices", lambda a, size=None, fill_value=None: enp.where(a, size=size, fill_value=fill_value),
       _nonzero_ref,
       lambda rng, d: [Sample((_sparse(rng, (3, 4), d),)), Sample((_sparse(rng, (6,), d), 2)),
                       Sample((_sparse(rng, (2, 3), d), 8, 7))],
       out_dtype=_int(),
       needs_concrete="the input when size= is not given: the number of nonzeros sets the result's length")
_entry("flatnonzero", lambda a: enp.flatnonzero(a), np.flatnonzero,
       lambda rng, d: [Sample((_sparse(rng, (3, 4), d),)), Sample((_sparse(rng, (0,), d),))], out_dtype=_int(),
       needs_concrete="the input: the number of nonzeros sets the result's length")
_entry("argwhere", lambda a: enp.argwhere(a), np.argwhere,
       lambda rng, d: [Sample((_sparse(rng, (3, 4), d),)), Sample((_sparse(rng, (5,), d),)), Sample((make_array(rng, (), d),))],
       out_dtype=_int(),
       needs_concrete="the input: the number of nonzeros sets the result's length")
_entry("diagonal", lambda a, *args: enp.diagonal(a, *args), np.diagonal,
       lambda rng, d: [Sample((make_array(rng, (3, 4), d),)), Sample((make_array(rng, (3, 4), d), 1)),
                       Sample((make_array(rng, (3, 4), d), -2)), Sample((make_array(rng, (2, 3, 4), d), 0, 2, 0)),
                       Sample((make_array(rng, (3, 4), d), 5))])
_entry("trace", lambda a, *args: enp.trace(a, *args), np.trace,
       lambda rng, d: [Sample((make_array(rng, (3, 4), d),)), Sample((make_array(rng, (3, 4), d), 1)),
                       Sample((make_array(rng, (2, 3, 3), d), 0, 1, 2))],
       out_dtype=lambda d: np.dtype(np.int32) if d.kind in "b" or d.kind == "i" and d.itemsize < 4
       else np.dtype(np.uint32) if d.kind == "u" and d.itemsize < 4 else d)
_entry("flip", lambda a, axis=None: enp.flip(a, axis), np.flip,
       lambda rng, d: [Sample((make_array(rng, (3, 4), d),)), Sample((make_array(rng, (3, 4), d), 1)),
                       Sample((make_array(rng, (2, 3, 4), d), (0, 2))), Sample((make_array(rng, (), d),))],
       primitives=("rev",))
_entry("fliplr", enp.fliplr, np.fliplr, lambda rng, d: [Sample((make_array(rng, (3, 4), d),))])
_entry("flipud", enp.flipud, np.flipud, lambda rng, d: [Sample((make_array(rng, (3, 4), d),)), Sample((make_array(rng, (0,), d),))])
_entry("roll", lambda a, s, axis=None: enp.roll(a, s, axis), np.roll,
       lambda rng, d: [Sample((make_array(rng, (5,), d), 2)), Sample((make_array(rng, (3, 4), d), -1, 1)),
                       Sample((make_array(rng, (3, 4), d), 7)), Sample((make_array(rng, (3, 4), d), (1, 2), (0, 1))),
                       Sample((make_array(rng, (0,), d), 3, 0))],
       primitives=("dynamic_slice", "concatenate"))
_entry("repeat", lambda a, r, axis=None: enp.repeat(a, r, axis), np.repeat,
       lambda rng, d: [Sample((make_array(rng, (3,), d), 2)), Sample((make_array(rng, (2, 3), d), np.array([1, 0, 2]), 1)),
                       Sample((make_array(rng, (2, 3), d), 0, 0)), Sample((make_array(rng, (), d), 3))],
       needs_concrete="an array of repeats (without total_repeat_length=): its values set the result's length")
_entry("tile", enp.tile, np.tile,
       lambda rng, d: [Sample((make_array(rng, (3,), d), 2)), Sample((make_array(rng, (2, 3), d), (2, 1))),
                       Sample((make_array(rng, (2,), d), (2, 1, 2))), Sample((make_array(rng, (2,), d), 0))])
