"""ember.lax.linalg's factorisations: cholesky, triangular_solve, lu, lu_pivots_to_permutation, qr (as ``jax.lax.linalg``).

They work on the last two axes and map over the leading ones; operands must be
float32, float64, complex64 or complex128 (no promotion at this level; use
`ember.numpy.linalg`). Singular input gives NaN/inf, never an error.
"""

from __future__ import annotations

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import linalg as _la
from ember.core.primitives import structural as _st
from ember.core.primitives._rules import check_bools
from ember.errors import InvalidArgumentError, ShapeError
from ember.lax._convert import operands

__all__ = ["cholesky", "lu", "lu_pivots_to_permutation", "qr", "triangular_solve"]

ArrayLike = Array | float | int | complex


def cholesky(x: ArrayLike, *, symmetrize_input: bool = True) -> Array:
    """The lower Cholesky factor L of each Hermitian positive-definite matrix: x = L L^H.

    Args:
      x: (..., n, n) matrices.
      symmetrize_input: use (x + x^H) / 2, so that derivatives see a symmetric input (as JAX);
        otherwise only the lower triangle of x is read.

    Returns:
      L (..., n, n), zero above the diagonal; NaN for a matrix that is not positive definite.

    >>> lax.linalg.cholesky(enp.asarray([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    (x,) = operands("cholesky", (x,))
    check_bools("cholesky", symmetrize_input=symmetrize_input)
    return _la.cholesky_p.bind(x, symmetrize_input=symmetrize_input)


def triangular_solve(a: ArrayLike, b: ArrayLike, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False, unit_diagonal: bool = False) -> Array:  # fmt: skip
    """Solve op(a) x = b (left_side) or x op(a) = b for x, with a triangular.

    Args:
      a: (..., m, m) triangular matrices; only the `lower` (or upper) triangle is read.
      b: (..., m, n) when left_side, else (..., n, m), with a's batch axes; or one axis fewer than a (a
        vector, as JAX allows).
      left_side: whether a multiplies x from the left.
      lower: use a's lower triangle (else the upper).
      transpose_a, conjugate_a: op(a) transposes and/or conjugates a.
      unit_diagonal: take a's diagonal as ones (its stored diagonal is not read).

    Returns:
      x, shaped like b (inf/NaN where a has a zero on its diagonal).

    >>> a = enp.asarray([[2.0, 0.0], [1.0, 1.0]])
    >>> lax.linalg.triangular_solve(a, enp.asarray([[2.0], [3.0]]), left_side=True, lower=True).tolist()
    [[1.0], [2.0]]
    """
    a, b = operands("triangular_solve", (a, b))
    flags = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                 unit_diagonal=unit_diagonal)  # fmt: skip
    check_bools("triangular_solve", **flags)
    flags["conjugate_a"] = flags["conjugate_a"] and dtypes.is_complex(a.dtype)
    vector = a.ndim >= 2 and b.ndim == a.ndim - 1
    if vector:
        b = _st.expand_dims_p.bind(b, dimensions=(b.ndim if left_side else b.ndim - 1,))
    x = _la.triangular_solve_p.bind(a, b, **flags)
    return _st.squeeze_p.bind(x, dimensions=(x.ndim - 1 if left_side else x.ndim - 2,)) if vector else x


def lu(x: ArrayLike) -> tuple[Array, Array, Array]:
    """LU decomposition with partial pivoting: x[..., permutation, :] = L U.

    Args:
      x: (..., m, n) matrices.

    Returns:
      (lu, pivots, permutation): lu packs L (unit lower, below the diagonal) and U (upper);
      pivots (..., min(m, n)) int32 are LAPACK's row swaps (0-based); permutation (..., m) int32.

    >>> lu, pivots, perm = lax.linalg.lu(enp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    >>> lu.tolist(), pivots.tolist(), perm.tolist()
    ([[3.0, 4.0], [0.333..., 0.666...]], [1, 1], [1, 0])
    """
    (x,) = operands("lu", (x,))
    return tuple(_la.lu_p.bind(x))


def lu_pivots_to_permutation(pivots: ArrayLike, permutation_size: int) -> Array:
    """The permutation that LAPACK-style row swaps (row i with row pivots[i], in order) make of range(size).

    Args:
      pivots: (..., k) int32 pivots, as `lu` returns them.
      permutation_size: the number of rows m >= k.

    Returns:
      (..., m) int32 permutation.

    >>> lax.linalg.lu_pivots_to_permutation(enp.asarray([2, 2, 2], dtype="int32"), 4).tolist()
    [2, 0, 1, 3]
    """
    (pivots,) = operands("lu_pivots_to_permutation", (pivots,))
    if isinstance(permutation_size, bool) or not hasattr(permutation_size, "__index__"):
        raise InvalidArgumentError(f"lu_pivots_to_permutation: permutation_size must be an int, got {permutation_size!r}")
    return _la.lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def qr(x: ArrayLike, *, pivoting: bool = False, full_matrices: bool = True) -> tuple[Array, Array]:
    """QR decomposition x = q r (Householder; LAPACK's signs).

    Args:
      x: (..., m, n) matrices.
      pivoting: column pivoting is not supported (raises).
      full_matrices: q is (..., m, m) and r (..., m, n); else q (..., m, k) and r (..., k, n), k = min(m, n).

    Returns:
      (q, r).

    >>> q, r = lax.linalg.qr(enp.asarray([[3.0, 0.0], [4.0, 1.0]]))
    >>> [round(v, 4) for v in r.ravel().tolist()]
    [-5.0, -0.8, 0.0, 0.6]
    """
    if pivoting:
        raise InvalidArgumentError("qr: pivoting=True (column-pivoted QR) is not supported; use pivoting=False")
    (x,) = operands("qr", (x,))
    if x.ndim < 2:
        raise ShapeError(f"qr: needs (..., m, n) matrices, got {x.dtype}{x.shape}")
    check_bools("qr", full_matrices=full_matrices)
    return tuple(_la.qr_p.bind(x, full_matrices=full_matrices))
