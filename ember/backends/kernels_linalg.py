"""Kernels of the linear-algebra primitives (cholesky, triangular_solve, lu, qr, inv, solve).

cholesky, qr, inv and solve call LAPACK through the array module's ``linalg``
(NumPy: its gufuncs directly, which fill a failed matrix with NaN instead of
raising LinAlgError for the whole stack). NumPy has no LU and no triangular
solve, so they are written here, batched over the leading axes:

- triangular solve: the diagonal blocks (of `_BLOCK` rows) are inverted all at
  once by recursive doubling (inv [[A, 0], [C, D]] = [[A^-1, 0], [-D^-1 C A^-1,
  D^-1]], log2(block) matrix products), then a blocked substitution runs one
  step per block row, each a pair of matrix products: O(m^2 n) work, as LAPACK's
  trsm, in few NumPy calls. A zero on the diagonal gives inf/NaN, never an error.
- LU: recursive (Toledo's: factor the left half of the columns, update the
  right half with one triangular solve and one matrix product, factor it),
  with partial pivoting as LAPACK's getrf (the first row of largest |re| + |im|
  in the column, so pivots agree with LAPACK's). Pivot choice is sequential,
  so every column costs a few NumPy steps; the work is in matrix products. A
  zero column leaves its multipliers at zero (as getrf does).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

_BLOCK = 32  # rows per diagonal block of the triangular solve
_LU_LEAF = 8  # columns the recursive LU factors one by one


def linalg_kernels(xp: ModuleType) -> dict[str, Any]:
    """The linear-algebra kernels for array module `xp`."""
    lapack = _NumPyLapack() if xp.__name__ == "numpy" else _ModuleLapack(xp)

    def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
        return triangular_solve_kernel(xp, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                       conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)  # fmt: skip

    def qr(a, *, full_matrices):
        return list(lapack.qr(a, full_matrices))

    return {
        "cholesky": lapack.cholesky,
        "triangular_solve": triangular_solve,
        "lu": lambda a: list(lu_kernel(xp, a)),
        "lu_pivots_to_permutation": lambda p, *, permutation_size: pivots_to_permutation(xp, p, permutation_size),
        "qr": qr,
        "inv": lapack.inv,
        "solve": lapack.solve,
    }


# --- LAPACK through NumPy -----------------------------------------------------------------------


class _NumPyLapack:
    """NumPy's LAPACK gufuncs, called directly: a matrix that fails (singular, not positive definite)
    comes back as NaN, the others are computed, and nothing raises (np.linalg raises for the whole stack)."""

    def __init__(self) -> None:
        from numpy.linalg import _umath_linalg  # in every NumPy 2 (ember needs numpy>=2)

        self._g = _umath_linalg

    @staticmethod
    def _sig(a, n_in: int) -> str:
        c = a.dtype.char
        return f"{c * n_in}->{c}"

    def cholesky(self, a, *, symmetrize_input):
        if a.size == 0:
            return np.zeros_like(a)
        if symmetrize_input:
            a = _symmetrized(np, a)
        with np.errstate(all="ignore"):
            return self._g.cholesky_lo(a, signature=self._sig(a, 1))

    def inv(self, a):
        if a.size == 0:
            return np.zeros_like(a)
        with np.errstate(all="ignore"):
            return self._g.inv(a, signature=self._sig(a, 1))

    def solve(self, a, b):
        if b.size == 0 or a.size == 0:
            return np.zeros(b.shape, b.dtype)
        with np.errstate(all="ignore"):
            return self._g.solve(a, b, signature=self._sig(a, 2))

    @staticmethod
    def qr(a, full_matrices: bool):
        return _qr(np, a, full_matrices)


class _ModuleLapack:
    """Another array module's ``linalg`` (CuPy's), which computes NaN for failures itself."""

    def __init__(self, xp: ModuleType) -> None:
        self.xp = xp

    def cholesky(self, a, *, symmetrize_input):
        if not a.size:
            return self.xp.zeros_like(a)
        return self.xp.linalg.cholesky(_symmetrized(self.xp, a) if symmetrize_input else a)

    def inv(self, a):
        return self.xp.linalg.inv(a) if a.size else self.xp.zeros_like(a)

    def solve(self, a, b):
        return self.xp.linalg.solve(a, b) if a.size and b.size else self.xp.zeros(b.shape, b.dtype)

    def qr(self, a, full_matrices: bool):
        return _qr(self.xp, a, full_matrices)


def _symmetrized(xp, a):
    """(a + a^H) / 2: `a` itself when it is exactly Hermitian (the same bits: a + a = 2a and the halving
    are exact), which the comparison finds without writing a new matrix (a fresh one costs its page faults)."""
    h = xp.swapaxes(a, -1, -2)
    h = xp.conj(h) if a.dtype.kind == "c" else h
    if bool(xp.all(a == h)):
        return a
    out = xp.add(a, h)
    out *= 0.5
    return out


def _qr(xp, a, full_matrices: bool):
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    if a.size == 0:  # LAPACK needs at least one row and column
        q = xp.broadcast_to(xp.eye(m, k, dtype=a.dtype), (*a.shape[:-2], m, k)).copy()
        return q, xp.zeros((*a.shape[:-2], k, n), a.dtype)
    q, r = xp.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


# --- triangular solve ------------------------------------------------------------------------------


def triangular_solve_kernel(xp, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """x with op(a) x = b (left_side) or x op(a) = b, reading a's `lower` (or upper) triangle."""
    if b.size == 0:
        return xp.zeros(b.shape, b.dtype)
    t = _triangle(xp, a, lower, unit_diagonal)
    if conjugate_a and t.dtype.kind == "c":
        t = xp.conj(t)
    if transpose_a:
        t, lower = xp.swapaxes(t, -1, -2), not lower
    if left_side:
        return _substitute(xp, t, b, lower)
    # x T = b  <=>  T^T x^T = b^T, solved into the transposed view of a C-contiguous result
    out = xp.empty(b.shape, np.result_type(t, b))
    _substitute(xp, xp.swapaxes(t, -1, -2), xp.swapaxes(b, -1, -2), not lower, xp.swapaxes(out, -1, -2))
    return out


def _triangle(xp, a, lower: bool, unit: bool):
    m = a.shape[-1]
    keep = xp.tri(m, m, 0 if lower else -1, dtype=bool)
    keep = keep if lower else ~keep
    t = xp.where(keep, a, xp.zeros((), a.dtype))
    if unit:
        idx = xp.arange(m)
        t[..., idx, idx] = 1
    return t


def _substitute(xp, t, b, lower: bool, out=None):
    """x with t x = b, t lower (else upper) triangular (..., m, m), b (..., m, n) of the same batch axes:
    blocked forward (else backward) substitution, into `out` when given. Transposed views keep positive
    strides, which matmul hands to BLAS as they are (reversed views, [::-1], it would copy at every product)."""
    m = t.shape[-1]
    x = xp.empty(b.shape, np.result_type(t, b)) if out is None else out
    with np.errstate(all="ignore"):
        if lower:
            inv = _diagonal_block_inverses(xp, t)
        else:  # an upper block's inverse is the transposed inverse of its (lower) transpose
            inv = [xp.swapaxes(v, -1, -2) for v in _diagonal_block_inverses(xp, xp.swapaxes(t, -1, -2))]
        blocks = list(enumerate(range(0, m, _BLOCK)))
        for i, start in blocks if lower else blocks[::-1]:
            stop = min(start + _BLOCK, m)
            solved = slice(0, start) if lower else slice(stop, m)
            rhs = b[..., start:stop, :]
            if solved.start < solved.stop:
                rhs = rhs - t[..., start:stop, solved] @ x[..., solved, :]
            x[..., start:stop, :] = inv[i] @ rhs
    return x


def _diagonal_block_inverses(xp, t):
    """The inverses of t's diagonal blocks of `_BLOCK` rows (the last one may be smaller), as a list."""
    m = t.shape[-1]
    full = m // _BLOCK * _BLOCK
    out = []
    if full:
        nb = full // _BLOCK
        blocks = t[..., :full, :full].reshape(*t.shape[:-2], nb, _BLOCK, nb, _BLOCK)
        diag = xp.moveaxis(xp.diagonal(blocks, axis1=-4, axis2=-2), -1, -3)  # (..., nb, B, B)
        inv = _lower_inverse(xp, diag)
        out = [inv[..., i, :, :] for i in range(nb)]
    if full < m:
        out.append(_lower_inverse(xp, t[..., full:, full:]))
    return out


def _lower_inverse(xp, t):
    """The inverse of each lower-triangular matrix of a stack, by recursive doubling over a size padded
    to a power of two (block-diagonal with the identity, whose inverse is the block's and the identity)."""
    m = t.shape[-1]
    size = 1 << max(m - 1, 0).bit_length()
    if size != m:
        padded = xp.zeros((*t.shape[:-2], size, size), t.dtype)
        padded[..., :m, :m] = t
        idx = xp.arange(m, size)
        padded[..., idx, idx] = 1
        t = padded
    batch = t.shape[:-2]
    idx = xp.arange(size)
    # inverses of the diagonal blocks of size s, as (..., size // s, s, s)
    inv = (1 / t[..., idx, idx]).reshape(*batch, size, 1, 1)
    s = 1
    while s < size:
        pairs = inv.reshape(*batch, size // (2 * s), 2, s, s)
        top, bottom = pairs[..., 0, :, :], pairs[..., 1, :, :]
        blocks = t.reshape(*batch, size // (2 * s), 2 * s, size // (2 * s), 2 * s)
        diag = xp.moveaxis(xp.diagonal(blocks, axis1=-4, axis2=-2), -1, -3)  # (..., size // 2s, 2s, 2s)
        corner = diag[..., s:, :s]
        new = xp.zeros((*batch, size // (2 * s), 2 * s, 2 * s), t.dtype)
        new[..., :s, :s] = top
        new[..., s:, s:] = bottom
        new[..., s:, :s] = -(bottom @ corner @ top)
        inv, s = new, 2 * s
    out = inv.reshape(*batch, size, size)
    return out[..., :m, :m] if size != m else out


# --- LU ---------------------------------------------------------------------------------------------


def lu_kernel(xp, a):
    """(lu, pivots, permutation) of each matrix of a stack, as LAPACK's getrf (0-based pivots)."""
    *batch, m, n = a.shape
    k = min(m, n)
    work = a.reshape(math.prod(batch), m, n).copy()
    count = work.shape[0]
    perm = xp.broadcast_to(xp.arange(m, dtype=np.int32), (count, m)).copy()
    pivots = xp.zeros((count, k), np.int32)
    if work.size and k:
        with np.errstate(all="ignore"):
            _lu_in_place(xp, work, perm, pivots)
    return work.reshape(a.shape), pivots.reshape(*batch, k), perm.reshape(*batch, m)


def _lu_in_place(xp, a, perm, pivots):
    count, m, n = a.shape
    k = min(m, n)
    rows = xp.arange(count)
    zero = xp.zeros((), a.dtype)

    def column(j: int) -> None:  # pivot, swap whole rows, scale the multipliers
        col = a[:, j:, j]
        size = xp.abs(col.real) + xp.abs(col.imag) if a.dtype.kind == "c" else xp.abs(col)
        p = xp.argmax(size, axis=1)
        p += j
        pivots[:, j] = p
        old = a[rows, j]
        a[rows, j] = a[rows, p]
        a[rows, p] = old
        old = perm[rows, j]
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = old
        if j + 1 < m:
            pivot = a[:, j, j]
            pivot = xp.where(pivot == 0, xp.ones((), a.dtype), pivot)  # a zero column stays zero
            a[:, j + 1 :, j] /= pivot[:, None]

    def unit_lower(c0: int, c1: int):
        t = xp.where(xp.tri(c1 - c0, dtype=bool), a[:, c0:c1, c0:c1], zero)
        idx = xp.arange(c1 - c0)
        t[:, idx, idx] = 1
        return t

    def factor(c0: int, c1: int) -> None:
        # Columns c0:c1 (rows c0:) hold the Schur complement of the columns before c0.
        if c1 - c0 <= _LU_LEAF:
            for j in range(c0, c1):
                column(j)
                if j + 1 < c1:
                    a[:, j + 1 :, j + 1 : c1] -= a[:, j + 1 :, j, None] * a[:, j, None, j + 1 : c1]
            return
        h = (c0 + c1) // 2
        factor(c0, h)
        a[:, c0:h, h:c1] = _substitute(xp, unit_lower(c0, h), a[:, c0:h, h:c1], lower=True)
        if h < m:
            a[:, h:, h:c1] -= a[:, h:, c0:h] @ a[:, c0:h, h:c1]
        factor(h, c1)

    factor(0, k)
    if n > k:
        a[:, :k, k:] = _substitute(xp, unit_lower(0, k), a[:, :k, k:], lower=True)


def pivots_to_permutation(xp, pivots, permutation_size: int):
    """The permutation of range(permutation_size) made by swapping i and pivots[..., i] in order."""
    *batch, k = pivots.shape
    flat = pivots.reshape(math.prod(batch), k)
    count = flat.shape[0]
    perm = xp.broadcast_to(xp.arange(permutation_size, dtype=np.int32), (count, permutation_size)).copy()
    rows = xp.arange(count)
    for i in range(k):
        p = flat[:, i]
        perm[rows, i], perm[rows, p] = perm[rows, p], perm[rows, i].copy()
    return perm.reshape(*batch, permutation_size)
