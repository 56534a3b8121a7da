"""ember.scipy.linalg: SciPy's linear-algebra names over ember arrays (as jax.scipy.linalg).

Matrices are the last two axes; leading axes are a batch (as in JAX). Integer
input computes in the default float dtype. SciPy's ``overwrite_*`` and
``check_finite`` arguments are accepted and ignored (arrays are immutable, and
nothing is checked for NaN: singular or non-finite input gives NaN/inf, never
an error, as JAX).
"""

from __future__ import annotations

import math

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitive import Tracer
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.lax import linalg as _lax_linalg
from ember.numpy import linalg as _enp_linalg
from ember.numpy._core import ArrayLike
from ember.numpy._core import promote_args as _promote_args
from ember.numpy._core import promote_inexact as _promote_inexact
from ember.numpy.linalg._factor import _describe, _mH
from ember.numpy.linalg._spectral import scipy_eigh as eigh

__all__: list[str] = ["block_diag", "cho_factor", "cho_solve", "eigh", "expm", "lu_factor", "lu_solve",
                      "solve_triangular"]  # fmt: skip

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False), 2: (True, True), "C": (True, True)}


def _square(op: str, a: Array) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{op}: needs square matrices in the last two axes, shape (..., n, n); got {_describe(a)}")


def _trans(op: str, trans) -> tuple[bool, bool]:
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"{op}: trans must be 0/'N', 1/'T' or 2/'C', got {trans!r}") from None


def _factors(op: str, pair, names: str, factor: str) -> tuple:
    """The two parts of a factorisation as `factor` returns it (a *_solve function's first argument)."""
    try:
        first, second = pair
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{op}: the first argument must be the pair {names} that {factor} returns") from None
    return first, second


def _solve_against(op: str, a: Array, b: Array, solve) -> Array:
    """`solve(a, b)` for (..., n, n) `a` and b of shape (..., n) (one axis fewer than a: vectors) or
    (..., n, k), with the batch axes broadcast."""
    from ember.numpy._shape import broadcast_to

    vector = b.ndim == a.ndim - 1 and b.ndim >= 1
    if vector:
        b = lax.expand_dims(b, (b.ndim,))
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"{op}: a {_describe(a)} is {a.shape[-1]}x{a.shape[-1]} but b {_describe(b)} does not have "
                         f"{a.shape[-1]} rows; b is (..., n) or (..., n, k)")  # fmt: skip
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ShapeError(f"{op}: the batch axes of a {_describe(a)} and b {_describe(b)} do not broadcast") from None
    x = solve(broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:]))
    return lax.squeeze(x, (x.ndim - 1,)) if vector else x


def solve_triangular(a: ArrayLike, b: ArrayLike, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug=None,
                     check_finite: bool = True) -> Array:  # fmt: skip
    """x with op(a) x = b for triangular a, op per `trans` (SciPy's solve_triangular).

    Args:
      a: (..., n, n) triangular matrices; only the `lower` (or upper) triangle is read.
      b: (..., n) or (..., n, k); batch axes broadcast with a's.
      trans: 0/'N' (a), 1/'T' (a^T) or 2/'C' (a^H).
      lower: use a's lower triangle (else the upper).
      unit_diagonal: take a's diagonal as ones.
      overwrite_b, debug, check_finite: ignored.

    Returns:
      x shaped like b (inf/NaN for a zero on a's diagonal; SciPy raises).

    >>> ember.scipy.linalg.solve_triangular(enp.asarray([[2.0, 0.0], [1.0, 1.0]]), enp.asarray([2.0, 3.0]), lower=True).tolist()
    [1.0, 2.0]
    """
    transpose_a, conjugate_a = _trans("solve_triangular", trans)
    a, b = _promote_inexact("solve_triangular", a, b)
    _square("solve_triangular", a)

    def solve(a, b):
        return _lax_linalg.triangular_solve(a, b, left_side=True, lower=bool(lower), transpose_a=transpose_a,
                                            conjugate_a=conjugate_a, unit_diagonal=bool(unit_diagonal))  # fmt: skip

    return _solve_against("solve_triangular", a, b, solve)


def cho_factor(a: ArrayLike, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Array, bool]:  # fmt: skip
    """The Cholesky factor of each Hermitian positive-definite matrix, for `cho_solve` (SciPy's).

    Reads a's lower (or upper) triangle only. Unlike SciPy, the other triangle of the factor is zero
    (as JAX).

    Args:
      a: (..., n, n) matrices.
      lower: return L (a = L L^H) instead of U (a = U^H U).
      overwrite_a, check_finite: ignored.

    Returns:
      (c, lower); c holds NaN for a matrix that is not positive definite (SciPy raises).

    >>> c, low = ember.scipy.linalg.cho_factor(enp.asarray([[4.0, 2.0], [2.0, 5.0]]))
    >>> c.tolist(), low
    ([[2.0, 1.0], [0.0, 2.0]], False)
    """
    (x,) = _promote_inexact("cho_factor", a)
    _square("cho_factor", x)
    lower = bool(lower)
    if lower:
        return _lax_linalg.cholesky(x, symmetrize_input=False), lower
    factor = _lax_linalg.cholesky(_mH(x), symmetrize_input=False)
    return _mH(factor), lower


def cho_solve(c_and_lower: tuple[ArrayLike, bool], b: ArrayLike, overwrite_b: bool = False,
              check_finite: bool = True) -> Array:  # fmt: skip
    """x with a x = b, from a's Cholesky factor as `cho_factor` returns it (SciPy's cho_solve).

    Args:
      c_and_lower: (c, lower) from cho_factor.
      b: (..., n) or (..., n, k).
      overwrite_b, check_finite: ignored.

    Returns:
      x shaped like b.

    >>> factor = ember.scipy.linalg.cho_factor(enp.asarray([[4.0, 2.0], [2.0, 5.0]]))
    >>> ember.scipy.linalg.cho_solve(factor, enp.asarray([6.0, 7.0])).tolist()
    [1.0, 1.0]
    """
    c, lower = _factors("cho_solve", c_and_lower, "(c, lower)", "cho_factor")
    c, b = _promote_inexact("cho_solve", c, b)
    _square("cho_solve", c)
    lower = bool(lower)

    def solve(c, b):
        # a = L L^H: solve L y = b, then L^H x = y (with U = L^H when not lower).
        y = _lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower, conjugate_a=not lower)
        return _lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower, conjugate_a=lower)

    return _solve_against("cho_solve", c, b, solve)


def lu_factor(a: ArrayLike, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Array, Array]:
    """LU decomposition with partial pivoting, packed for `lu_solve` (SciPy's lu_factor).

    Args:
      a: (..., m, n) matrices.
      overwrite_a, check_finite: ignored.

    Returns:
      (lu, piv): L (unit lower, below the diagonal) and U packed in lu; piv (..., min(m, n)) int32, row i
      was swapped with row piv[i] (0-based, LAPACK's order).

    >>> lu, piv = ember.scipy.linalg.lu_factor(enp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist()
    [1, 1]
    """
    (x,) = _promote_inexact("lu_factor", a)
    lu, pivots, _ = _lax_linalg.lu(x)
    return lu, pivots


def lu_solve(lu_and_piv: tuple[ArrayLike, ArrayLike], b: ArrayLike, trans: int | str = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Array:  # fmt: skip
    """x with op(a) x = b, from a's LU decomposition as `lu_factor` returns it (SciPy's lu_solve).

    Args:
      lu_and_piv: (lu, piv) from lu_factor, of square matrices.
      b: (..., n) or (..., n, k).
      trans: 0/'N' (a x = b), 1/'T' (a^T x = b) or 2/'C' (a^H x = b).
      overwrite_b, check_finite: ignored.

    Returns:
      x shaped like b.

    >>> factors = ember.scipy.linalg.lu_factor(enp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    >>> ember.scipy.linalg.lu_solve(factors, enp.asarray([5.0, 11.0])).tolist()
    [1.0, 2.0]
    """
    from ember.numpy._shape import broadcast_to
    from ember.numpy._sorting import argsort
    from ember.numpy._take import take_along_axis

    lu, piv = _factors("lu_solve", lu_and_piv, "(lu, piv)", "lu_factor")
    transpose_a, conjugate_a = _trans("lu_solve", trans)
    lu, b = _promote_inexact("lu_solve", lu, b)
    _square("lu_solve", lu)
    perm = _lax_linalg.lu_pivots_to_permutation(lax.convert_element_type(piv, "int32"), lu.shape[-1])

    def rows(x, order):
        return take_along_axis(x, broadcast_to(lax.expand_dims(order, (order.ndim,)), x.shape), axis=-2)

    def solve(lu, b):
        order = broadcast_to(perm, lu.shape[:-1])
        if not transpose_a:  # a = P^T L U: x = U^-1 L^-1 P b
            y = _lax_linalg.triangular_solve(lu, rows(b, order), left_side=True, lower=True, unit_diagonal=True)
            return _lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)
        # op(a) = op(U) op(L) P: x = P^T op(L)^-1 op(U)^-1 b
        y = _lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conjugate_a)
        y = _lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
                                         conjugate_a=conjugate_a)  # fmt: skip
        return rows(y, argsort(order, axis=-1).astype("int32"))

    return _solve_against("lu_solve", lu, b, solve)


# --- expm ------------------------------------------------------------------------------------------
# Scaling and squaring with a Pade approximant (Higham 2005, as SciPy and JAX): degree 13 for 64-bit
# types, 7 for 32-bit; A is scaled by 2^-s so that its 1-norm is at most theta, and the result squared
# s times. s is computed per matrix and carries no derivative.

_PADE = {
    13: (5.371920351148152, (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                             129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
                             40840800.0, 960960.0, 16380.0, 182.0, 1.0)),
    7: (3.925724783138660, (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0)),
}  # fmt: skip


def expm(A: ArrayLike, *, upper_triangular: bool = False, max_squarings: int = 16) -> Array:
    """The matrix exponential of each square matrix, by scaling and squaring with a Pade approximant.

    Args:
      A: (..., n, n) matrices.
      upper_triangular: A is upper triangular (the Pade quotient is then a triangular solve).
      max_squarings: a matrix whose norm needs more squarings than this gives NaN (as JAX).

    Returns:
      (..., n, n) exponentials.

    >>> [round(v, 5) for v in ember.scipy.linalg.expm(enp.asarray([[0.0, 1.0], [0.0, 0.0]])).ravel().tolist()]
    [1.0, 1.0, 0.0, 1.0]
    """
    from ember.numpy import _ufuncs as uf
    from ember.numpy._creation import eye
    from ember.numpy._math import exp2, log2
    from ember.numpy._reductions import max as _max
    from ember.numpy._reductions import sum as _sum
    from ember.numpy._rounding import ceil

    (a,) = _promote_inexact("expm", A)
    _square("expm", a)
    if a.dtype not in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128):
        raise DTypeError(f"expm: A {_describe(a)} has dtype {a.dtype}, but expm computes in float32, float64, "
                         "complex64 or complex128 (LAPACK's types); convert it with A.astype('float32')")  # fmt: skip
    if a.size == 0:
        return a
    degree = 13 if a.dtype in (dtypes.float64, dtypes.complex128) else 7
    theta, b = _PADE[degree]
    real = dtypes.real_dtype(a.dtype)
    norm = lax.stop_gradient(_max(_sum(uf.abs(a), axis=-2), axis=-1))
    with np.errstate(divide="ignore"):
        s = uf.maximum(ceil(log2(uf.where(norm == 0, 1, norm) / theta)), 0)  # (...,), real
    a = a * lax.expand_dims(exp2(-s), (s.ndim, s.ndim + 1)).astype(a.dtype)
    ident = eye(a.shape[-1], dtype=a.dtype)
    mm = _enp_linalg.matmul
    a2 = mm(a, a)
    a4 = mm(a2, a2)
    a6 = mm(a4, a2)
    if degree == 13:
        u = mm(a, mm(a6, b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = mm(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    else:
        u = mm(a, b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    if upper_triangular:
        r = solve_triangular(v - u, v + u, lower=False)
    else:
        r = _enp_linalg.solve(v - u, v + u)
    # Squarings: per matrix, as many as its s; a concrete s bounds the loop, a traced one (or a NaN, from NaN
    # input, whose max hides the other matrices' s) loops to the cap.
    top = max_squarings if isinstance(s, Tracer) else (float(_max(s)) if s.size else 0.0)
    steps = int(top) if top <= max_squarings else max_squarings
    for k in range(steps):
        keep = lax.expand_dims(s > k, (s.ndim, s.ndim + 1))
        r = uf.where(keep, mm(r, r), r)
    too_many = lax.expand_dims(s > max_squarings, (s.ndim, s.ndim + 1))
    return uf.where(too_many, np.array(math.nan, real), r).astype(r.dtype)


def block_diag(*arrs: ArrayLike) -> Array:
    """The block-diagonal matrix of the given blocks (scalars and vectors count as 1 x n rows).

    Args:
      *arrs: arrays of at most 2 dimensions.

    Returns:
      A 2-d array of the promoted dtype, of shape (sum of rows, sum of columns).

    >>> ember.scipy.linalg.block_diag(enp.asarray([[1, 2]]), enp.asarray(3)).tolist()
    [[1, 2, 0], [0, 0, 3]]
    """
    from ember.numpy._shape import atleast_2d, concatenate, pad

    if not arrs:
        from ember.numpy._creation import zeros

        return zeros((1, 0))
    xs = _promote_args("block_diag", *arrs)
    bad = [f"{i}: {_describe(x)}" for i, x in enumerate(xs) if x.ndim > 2]
    if bad:
        raise ShapeError(f"block_diag: blocks must have at most 2 dimensions; got {', '.join(bad)}")
    blocks = [atleast_2d(x) for x in xs]
    total = sum(x.shape[1] for x in blocks)
    rows, left = [], 0
    for x in blocks:
        rows.append(pad(x, ((0, 0), (left, total - left - x.shape[1]))))
        left += x.shape[1]
    return concatenate(rows, axis=0)

