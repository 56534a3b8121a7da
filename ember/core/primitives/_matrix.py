"""Matrix helpers shared by the linalg and eigen families' rules, written with primitives only (bind).

Both families work on the last two axes and map over the leading ones; their jvp rules need the
same few matrix operations, and their single-operand primitives the same batching rule.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes
from ember.core.array import wrap
from ember.core.batching import move_axis
from ember.core.primitive import Primitive
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import structural as _st
from ember.core.primitives.contraction import dot_general_p


def matmul(a, b):
    """a @ b over the last two axes; a and b share their leading (batch) axes."""
    batch = tuple(range(a.ndim - 2))
    numbers = (((a.ndim - 1,), (b.ndim - 2,)), (batch, batch))
    return dot_general_p.bind(a, b, dimension_numbers=numbers, precision=None, preferred_element_type=None)


def mT(x):
    """The last two axes swapped."""
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return _st.transpose_p.bind(x, permutation=perm)


def conj(x):
    """The complex conjugate; real input as it is (no conj primitive in the graph)."""
    return _ew.conj_p.bind(x) if dtypes.is_complex(x.dtype) else x


def mH(x):
    """The conjugate transpose over the last two axes."""
    return conj(mT(x))


def hermitian_from_triangle(t, lower: bool):
    """The Hermitian matrix LAPACK sees when it reads one triangle of `t`: that triangle, its conjugate
    transpose across the diagonal, and the diagonal's real part (the tangent of what cholesky and eigh
    factor when they do not symmetrize)."""
    n = t.shape[-1]
    rows = _st.iota_p.bind(dtype=dtypes.int32, shape=(n, n), dimension=0)
    cols = _st.iota_p.bind(dtype=dtypes.int32, shape=(n, n), dimension=1)
    zeros = _st.broadcast_in_dim_p.bind(wrap(np.zeros((), t.dtype), False), shape=t.shape, broadcast_dimensions=())

    def where(mask):  # t where the (n, n) mask holds, over every batch matrix; else 0
        mask = _st.broadcast_in_dim_p.bind(mask, shape=t.shape, broadcast_dimensions=(t.ndim - 2, t.ndim - 1))
        return _ew.select_n_p.bind(mask, zeros, t)

    strict = where((_bw.gt_p if lower else _bw.lt_p).bind(rows, cols))
    diag = where(_bw.eq_p.bind(rows, cols))
    if dtypes.is_complex(t.dtype):
        diag = _ew.convert_element_type_p.bind(_ew.real_p.bind(diag), new_dtype=t.dtype, weak_type=False)
    return _ew.add_p.bind(_ew.add_p.bind(strict, mH(strict)), diag)


def batch_leading(prim: Primitive) -> None:
    """The batching rule of a one-operand primitive that already maps over leading axes: the vmap axis
    goes in front, and stays there."""

    def batch(size, args, dims, **params):
        (x,), (d,) = args, dims
        out = prim.bind(move_axis(x, d, 0), **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    prim.batch = batch
