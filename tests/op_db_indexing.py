"""op_db entries for the indexing primitives: gather, scatter*, dynamic slices (ember.lax)."""

from __future__ import annotations

import numpy as np
from op_db import ALL, NO_COMPLEX, REAL, OpInfo, Sample, make_array, register

from ember import lax

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers

# (operand shape, indices, dimension numbers, slice sizes)
_GATHERS = [
    ((5,), [[3], [0], [4]], GDN((), (0,), (0,)), (1,)),
    ((3, 4), [[2], [0]], GDN((1,), (0,), (0,)), (1, 4)),
    ((3, 4), [[1, 2], [0, 3]], GDN((), (0, 1), (0, 1)), (1, 1)),
    ((6,), [[4], [1]], GDN((1,), (), (0,)), (3,)),  # the first window runs off the end: clamped
    ((2, 3, 4), [[[1], [0]]], GDN((2, 3), (0,), (0,)), (1, 2, 4)),
    ((4, 3), np.zeros((0, 1), int), GDN((1,), (0,), (0,)), (1, 3)),
    ((3, 4), [[1], [2], [3]], GDN((), (1,), (1,), (0,), (0,)), (1, 1)),  # operand dim 0 batched with the indices
]


def _gather_ref(operand, indices, dn, slice_sizes):
    """One slice per index vector, by explicit loops (clamping starts as CLIP does)."""
    indices = np.asarray(indices)
    batch_shape = indices.shape[:-1]
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    blocks = {}
    for b in np.ndindex(*batch_shape):
        starts = [0] * operand.ndim
        for k, d in enumerate(dn.start_index_map):
            starts[d] = int(np.clip(indices[b][k], 0, operand.shape[d] - slice_sizes[d]))
        for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            starts[od] = b[idd]
        block = operand[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]
        blocks[b] = block.reshape([n for d, n in enumerate(slice_sizes) if d not in dropped])
    offset_shape = [n for d, n in enumerate(slice_sizes) if d not in dropped]
    rank = len(batch_shape) + len(offset_shape)
    out_shape = []
    offsets, batches = iter(offset_shape), iter(batch_shape)
    for i in range(rank):
        out_shape.append(next(offsets) if i in dn.offset_dims else next(batches))
    out = np.zeros(out_shape, operand.dtype)
    batch_positions = [i for i in range(rank) if i not in dn.offset_dims]
    for b, block in blocks.items():
        for o in np.ndindex(*offset_shape):
            position = [0] * rank
            for axis, value in zip(batch_positions, b):
                position[axis] = value
            for axis, value in zip(dn.offset_dims, o):
                position[axis] = value
            out[tuple(position)] = block[o]
    return out


def _gather_samples(rng, dtype):
    return [Sample((make_array(rng, shape, dtype), np.asarray(idx, np.int32), dn, sizes)) for shape, idx, dn, sizes in _GATHERS]


# (operand shape, indices, updates shape, dimension numbers)
_SCATTERS = [
    ((5,), [[1], [3], [1]], (3,), SDN((), (0,), (0,))),
    ((3, 4), [[2], [0], [2]], (3, 4), SDN((1,), (0,), (0,))),
    ((3, 4), [[1, 2], [0, 3]], (2,), SDN((), (0, 1), (0, 1))),
    ((6,), [[1], [4]], (2, 3), SDN((1,), (), (0,))),  # the second window does not fit: dropped
    ((4,), np.zeros((0, 1), int), (0,), SDN((), (0,), (0,))),
]


def _scatter_ref(combine):
    def ref(operand, indices, updates, dn):
        out = operand.copy()
        indices = np.asarray(indices)
        batch_shape = indices.shape[:-1]
        window_axes = list(dn.update_window_dims)
        scatter_axes = [i for i in range(updates.ndim) if i not in window_axes]
        moved = np.transpose(updates, scatter_axes + window_axes)
        window_dims = [d for d in range(operand.ndim) if d not in dn.inserted_window_dims]
        window_shape = moved.shape[len(batch_shape):]
        for b in np.ndindex(*batch_shape):
            starts = [0] * operand.ndim
            for k, d in enumerate(dn.scatter_dims_to_operand_dims):
                starts[d] = int(indices[b][k])
            fits = all(0 <= starts[d] and starts[d] + (window_shape[window_dims.index(d)] if d in window_dims else 1)
                       <= operand.shape[d] for d in range(operand.ndim))  # fmt: skip
            if not fits:
                continue  # out-of-bounds windows are dropped
            for w in np.ndindex(*window_shape):
                target = list(starts)
                for axis, value in zip(window_dims, w):
                    target[axis] += value
                out[tuple(target)] = combine(out[tuple(target)], moved[b + w])
        return out

    return ref


def _scatter_samples(rng, dtype):
    return [Sample((make_array(rng, shape, dtype), np.asarray(idx, np.int32), make_array(rng, ushape, dtype), dn))
            for shape, idx, ushape, dn in _SCATTERS]  # fmt: skip


def _distinct_scatter_samples(rng, dtype):
    """_SCATTERS with all operand and update values distinct and 0.25 apart (exact in every float
    dtype): scatter_min/max have no ties, where they are not differentiable, nor near-ties that a
    finite-difference step could cross."""
    samples = []
    for shape, idx, ushape, dn in _SCATTERS:
        n, m = int(np.prod(shape)), int(np.prod(ushape))
        values = (rng.permutation(n + m) - (n + m) // 2) * 0.25
        samples.append(Sample((values[:n].reshape(shape).astype(dtype), np.asarray(idx, np.int32),
                               values[n:].reshape(ushape).astype(dtype), dn)))  # fmt: skip
    return samples


def _mul(a, b):
    return np.logical_and(a, b) if np.asarray(a).dtype == np.bool_ else a * b


def _add(a, b):
    return np.logical_or(a, b) if np.asarray(a).dtype == np.bool_ else a + b


register(
    OpInfo("lax.gather", lambda x, i, dn, s: lax.gather(x, i, dn, s, mode="clip"), _gather_ref, ALL, _gather_samples, "",
           primitives=("gather",), ref_in_dtype=True),
    OpInfo("lax.scatter", lambda x, i, u, dn: lax.scatter(x, i, u, dn), _scatter_ref(lambda old, new: new), ALL,
           lambda rng, d: [s for s in _scatter_samples(rng, d) if s.args[1].shape[0] == len({tuple(r) for r in s.args[1]})],
           "", primitives=("scatter",), ref_in_dtype=True,
           ad_samples=_scatter_samples),  # duplicates too: the derivative follows the update the backend wrote
    OpInfo("lax.scatter_add", lambda x, i, u, dn: lax.scatter_add(x, i, u, dn), _scatter_ref(_add), ALL, _scatter_samples, "",
           primitives=("scatter_add",), ref_in_dtype=True, tol={np.dtype(np.float16): (2e-3, 2e-3)}),
    OpInfo("lax.scatter_mul", lambda x, i, u, dn: lax.scatter_mul(x, i, u, dn), _scatter_ref(_mul), ALL, _scatter_samples, "",
           primitives=("scatter_mul",), ref_in_dtype=True),
    OpInfo("lax.scatter_min", lambda x, i, u, dn: lax.scatter_min(x, i, u, dn), _scatter_ref(np.minimum), REAL,
           _scatter_samples, NO_COMPLEX, primitives=("scatter_min",), ref_in_dtype=True,
           ad_samples=_distinct_scatter_samples),
    OpInfo("lax.scatter_max", lambda x, i, u, dn: lax.scatter_max(x, i, u, dn), _scatter_ref(np.maximum), REAL,
           _scatter_samples, NO_COMPLEX, primitives=("scatter_max",), ref_in_dtype=True,
           ad_samples=_distinct_scatter_samples),
)  # fmt: skip


def _clamp(start, n, size):
    return min(max(int(start), 0), n - size)


def _dynamic_slice_ref(x, starts, sizes):
    return x[tuple(slice(_clamp(s, n, k), _clamp(s, n, k) + k) for s, n, k in zip(starts, x.shape, sizes))]


def _dynamic_update_ref(x, update, starts):
    out = x.copy()
    out[tuple(slice(_clamp(s, n, k), _clamp(s, n, k) + k) for s, n, k in zip(starts, x.shape, update.shape))] = update
    return out


def _starts(*values):
    return tuple(np.int32(v) for v in values)


register(
    OpInfo("lax.dynamic_slice", lambda x, s, k: lax.dynamic_slice(x, s, k), _dynamic_slice_ref, ALL,
           lambda rng, d: [Sample((make_array(rng, (6, 4), d), _starts(a, b), (3, 2))) for a, b in ((1, 2), (5, -3), (-9, 9))]
           + [Sample((make_array(rng, (), d), (), ())), Sample((make_array(rng, (3,), d), _starts(1), (0,)))],
           "", primitives=("dynamic_slice",), ref_in_dtype=True),
    OpInfo("lax.dynamic_update_slice", lambda x, u, s: lax.dynamic_update_slice(x, u, s), _dynamic_update_ref, ALL,
           lambda rng, d: [Sample((make_array(rng, (6, 4), d), make_array(rng, (2, 3), d), _starts(a, b)))
                           for a, b in ((1, 0), (5, 3), (-2, -2))] + [Sample((make_array(rng, (), d), make_array(rng, (), d), ()))],
           "", primitives=("dynamic_update_slice",), ref_in_dtype=True),
    OpInfo("lax.dynamic_slice_in_dim", lambda x, s, k, a: lax.dynamic_slice_in_dim(x, s, k, a),
           lambda x, s, k, a: _dynamic_slice_ref(x, [s if i == a % x.ndim else 0 for i in range(x.ndim)],
                                                 [k if i == a % x.ndim else n for i, n in enumerate(x.shape)]),
           ALL, lambda rng, d: [Sample((make_array(rng, (5, 3), d), np.int32(s), 2, a)) for s, a in ((1, 0), (4, 0), (2, -1))],
           "", primitives=("dynamic_slice",), ref_in_dtype=True),
    OpInfo("lax.dynamic_index_in_dim", lambda x, s, a, k: lax.dynamic_index_in_dim(x, s, a, k),
           lambda x, s, a, k: np.take(x, [_clamp(s, x.shape[a], 1)], axis=a) if k else np.take(x, _clamp(s, x.shape[a], 1), axis=a),
           ALL, lambda rng, d: [Sample((make_array(rng, (4, 3), d), np.int32(s), a, k)) for s, a, k in ((1, 0, True), (9, 1, False))],
           "", primitives=("dynamic_slice", "squeeze"), ref_in_dtype=True),
    OpInfo("lax.dynamic_update_slice_in_dim", lambda x, u, s, a: lax.dynamic_update_slice_in_dim(x, u, s, a),
           lambda x, u, s, a: _dynamic_update_ref(x, u, [s if i == a else 0 for i in range(x.ndim)]), ALL,
           lambda rng, d: [Sample((make_array(rng, (5, 3), d), make_array(rng, (2, 3), d), np.int32(s), 0)) for s in (0, 4)],
           "", primitives=("dynamic_update_slice",), ref_in_dtype=True),
    OpInfo("lax.dynamic_update_index_in_dim", lambda x, u, s, a: lax.dynamic_update_index_in_dim(x, u, s, a),
           lambda x, u, s, a: _dynamic_update_ref(x, np.expand_dims(u, a), [s if i == a else 0 for i in range(x.ndim)]), ALL,
           lambda rng, d: [Sample((make_array(rng, (4, 3), d), make_array(rng, (3,), d), np.int32(s), 0)) for s in (1, 7)],
           "", primitives=("dynamic_update_slice",), ref_in_dtype=True),
    OpInfo("lax.index_in_dim", lambda x, i, a, k: lax.index_in_dim(x, i, a, k),
           lambda x, i, a, k: np.take(x, [i], axis=a) if k else np.take(x, i, axis=a), ALL,
           lambda rng, d: [Sample((make_array(rng, (4, 3), d), i, a, k)) for i, a, k in ((1, 0, True), (-1, 1, False))],
           "", primitives=("slice", "squeeze"), ref_in_dtype=True),
)  # fmt: skip
