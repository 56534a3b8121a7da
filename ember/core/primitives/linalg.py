"""Linear-algebra primitives: cholesky, triangular_solve, lu, lu_pivots_to_permutation, qr, inv, solve.

Every primitive works on the last two axes and maps over the leading ones
("batch" axes), as JAX's ``lax.linalg``. They accept float32, float64,
complex64 and complex128 (what LAPACK computes in); other dtypes raise a
DTypeError that says to convert. `inv` and `solve` are primitives (not
composites of lu and triangular_solve) so that their kernels can call LAPACK
through NumPy: a LU written in NumPy is several times slower than LAPACK's.

Singular input is not an error: as in JAX, the results hold NaN/inf (NumPy's
``linalg`` raises LinAlgError instead). `lu` of a singular matrix is finite,
with zeros on U's diagonal.
"""

from __future__ import annotations

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import DTypes, check_bools, check_dtype, check_same_dtypes
from ember.errors import InvalidArgumentError, ShapeError, TransformError

LAPACK = DTypes("float32, float64, complex64 or complex128 (the dtypes LAPACK computes in)",
                (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128))  # fmt: skip


def _matrices(op: str, x: ShapedArray, what: str = "operand", square: bool = False) -> tuple[int, int]:
    check_dtype(op, x, LAPACK, what)
    if x.ndim < 2:
        raise ShapeError(f"{op}: {what} {describe(x)} must have at least 2 dimensions (a matrix, or a stack of them)")
    m, n = x.shape[-2:]
    if square and m != n:
        raise ShapeError(f"{op}: {what} {describe(x)} must be square in its last two axes, got {m}x{n}")
    return m, n


def _same_batch(op: str, a: ShapedArray, b: ShapedArray) -> None:
    if a.shape[:-2] != b.shape[:-2]:
        raise ShapeError(f"{op}: the batch dimensions of a {describe(a)} and b {describe(b)} differ "
                         f"({a.shape[:-2]} vs {b.shape[:-2]}); broadcast them first (ember.numpy does)")  # fmt: skip


# --- cholesky ----------------------------------------------------------------------------------

# cholesky(a, symmetrize_input): the lower-triangular L with a = L L^H (NaN where a is not positive
# definite), of (a + a^H) / 2 when symmetrize_input (as JAX's wrapper: derivatives then see a symmetric
# input; the kernel does it in one pass), else of a's lower triangle.
cholesky_p = Primitive("cholesky")


def _cholesky_rule(a: ShapedArray, *, symmetrize_input) -> ShapedArray:
    check_bools("cholesky", symmetrize_input=symmetrize_input)
    _matrices("cholesky", a, square=True)
    return a


cholesky_p.abstract_eval = _cholesky_rule

# --- triangular_solve ----------------------------------------------------------------------------

# triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal): x with
# op(a) x = b (left_side) or x op(a) = b, where op(a) is a (its `lower` triangle only, with ones on
# the diagonal when unit_diagonal), conjugated and/or transposed. a and b share their batch axes.
triangular_solve_p = Primitive("triangular_solve")


def _triangular_solve_rule(a: ShapedArray, b: ShapedArray, *, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal) -> ShapedArray:  # fmt: skip
    op = "triangular_solve"
    check_bools(op, left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                unit_diagonal=unit_diagonal)  # fmt: skip
    m, _ = _matrices(op, a, "a", square=True)
    _matrices(op, b, "b")
    check_same_dtypes(op, (a, b))
    _same_batch(op, a, b)
    size = b.shape[-2] if left_side else b.shape[-1]
    if size != m:
        side = "rows" if left_side else "columns"
        raise ShapeError(f"{op}: a {describe(a)} is {m}x{m} but b {describe(b)} has {size} {side} "
                         f"(left_side={left_side}: b's {side} must match a)")  # fmt: skip
    return ShapedArray(b.shape, b.dtype, a.weak_type and b.weak_type)


triangular_solve_p.abstract_eval = _triangular_solve_rule

# --- lu ------------------------------------------------------------------------------------------

# lu(a) -> [lu, pivots, permutation]: a[..., permutation, :] = L U with L unit lower (m x k) and U
# upper (k x n), k = min(m, n), packed in lu; pivots[i] is the row swapped with row i at step i
# (LAPACK's getrf, 0-based); permutation is what the swaps do to range(m). Partial pivoting.
lu_p = Primitive("lu", multiple_results=True)


def _lu_rule(a: ShapedArray) -> list[ShapedArray]:
    m, n = _matrices("lu", a)
    batch = a.shape[:-2]
    # As JAX: the integer pivots and permutation are weak when the operand is (its standard rule).
    return [a, ShapedArray((*batch, min(m, n)), dtypes.int32, a.weak_type),
            ShapedArray((*batch, m), dtypes.int32, a.weak_type)]


lu_p.abstract_eval = _lu_rule

# lu_pivots_to_permutation(pivots, permutation_size): the permutation of range(permutation_size)
# that applying the swaps i <-> pivots[i] in order makes.
lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


def _pivots_rule(pivots: ShapedArray, *, permutation_size) -> ShapedArray:
    op = "lu_pivots_to_permutation"
    if pivots.dtype != dtypes.int32:
        raise InvalidArgumentError(f"{op}: pivots {describe(pivots)} must be int32 (as lu returns them)")
    if pivots.ndim < 1:
        raise ShapeError(f"{op}: pivots {describe(pivots)} must have at least 1 dimension")
    if not isinstance(permutation_size, int) or permutation_size < pivots.shape[-1]:
        raise InvalidArgumentError(f"{op}: permutation_size must be an int of at least the number of pivots "
                                   f"({pivots.shape[-1]}), got {permutation_size!r}")  # fmt: skip
    return ShapedArray((*pivots.shape[:-1], permutation_size), dtypes.int32, pivots.weak_type)


lu_pivots_to_permutation_p.abstract_eval = _pivots_rule

# --- qr --------------------------------------------------------------------------------------------

# qr(a, full_matrices) -> [q, r]: a = q r, q with orthonormal columns (m x m when full_matrices, else
# m x k), r upper triangular (m x n, or k x n), k = min(m, n); LAPACK's signs (Householder).
qr_p = Primitive("qr", multiple_results=True)


def _qr_rule(a: ShapedArray, *, full_matrices) -> list[ShapedArray]:
    check_bools("qr", full_matrices=full_matrices)
    m, n = _matrices("qr", a)
    k = m if full_matrices else min(m, n)
    batch = a.shape[:-2]
    return [ShapedArray((*batch, m, k), a.dtype, a.weak_type), ShapedArray((*batch, k, n), a.dtype, a.weak_type)]


qr_p.abstract_eval = _qr_rule

# --- inv, solve ----------------------------------------------------------------------------------

# inv(a): the inverse of each square matrix (NaN for a singular one).
inv_p = Primitive("inv")


def _inv_rule(a: ShapedArray) -> ShapedArray:
    _matrices("inv", a, square=True)
    return a


inv_p.abstract_eval = _inv_rule

# solve(a, b): x with a x = b, a (..., n, n), b (..., n, k) of the same batch axes.
solve_p = Primitive("solve")


def _solve_rule(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    n, _ = _matrices("solve", a, "a", square=True)
    _matrices("solve", b, "b")
    check_same_dtypes("solve", (a, b))
    _same_batch("solve", a, b)
    if b.shape[-2] != n:
        raise ShapeError(f"solve: a {describe(a)} is {n}x{n} but b {describe(b)} has {b.shape[-2]} rows; they must match")
    return ShapedArray(b.shape, b.dtype, a.weak_type and b.weak_type)


solve_p.abstract_eval = _solve_rule

__all__ = [n for n in dir() if n.endswith("_p")]

# --- helpers for the rules ---------------------------------------------------------------------------
# Written with primitives only (bind), so that the rules compose with every transform.

import numpy as np

from ember.core.ad import Zero, add_tangents, defnondiff, is_undefined
from ember.core.array import wrap
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import structural as _st
from ember.core.primitives._matrix import batch_leading
from ember.core.primitives._matrix import conj as _conj
from ember.core.primitives._matrix import hermitian_from_triangle
from ember.core.primitives._matrix import matmul as _matmul
from ember.core.primitives._matrix import mH as _H
from ember.core.primitives._matrix import mT as _mT


def _constant(value: np.ndarray, dtype, shape):
    """A constant array of `shape` from `value` (the trailing axes), broadcast over the leading ones."""
    x = wrap(np.asarray(value, dtype=dtype), False)
    if x.shape == tuple(shape):
        return x
    lead = len(shape) - x.ndim
    return _st.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=tuple(range(lead, len(shape))))


def _tri_mask(like, k: int, lower: bool):
    m, n = like.shape[-2:]
    mask = np.tril(np.ones((m, n), bool), k) if lower else np.triu(np.ones((m, n), bool), k)
    return _constant(mask, np.bool_, like.shape)


def _tril(x, k: int = 0):
    return _ew.select_n_p.bind(_tri_mask(x, k, True), _zeros(x), x)


def _triu(x, k: int = 0):
    return _ew.select_n_p.bind(_tri_mask(x, k, False), _zeros(x), x)


def _zeros(x):
    return _constant(np.zeros((), x.dtype), x.dtype, x.shape)


def _eye_like(x):
    return _constant(np.eye(x.shape[-2], x.shape[-1]), x.dtype, x.shape)


def _slice(x, starts, limits):
    """x[..., r0:r1, c0:c1] for starts (r0, c0) and limits (r1, c1)."""
    lead = x.ndim - 2
    return _st.slice_p.bind(x, start_indices=(0,) * lead + tuple(starts), limit_indices=x.shape[:lead] + tuple(limits),
                            strides=None)  # fmt: skip


def _pad(x, rows: tuple[int, int], cols: tuple[int, int]):
    if rows == (0, 0) and cols == (0, 0):
        return x
    config = ((0, 0, 0),) * (x.ndim - 2) + ((*rows, 0), (*cols, 0))
    return _st.pad_p.bind(x, wrap(np.zeros((), x.dtype), False), padding_config=config)


def _tsolve(a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False):
    return triangular_solve_p.bind(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                   conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)  # fmt: skip


# --- differentiation rules -----------------------------------------------------------------------------


def _cholesky_jvp(primals, tangents, *, symmetrize_input):
    # L' = L phi(L^-1 A' L^-H), phi = the lower triangle with its diagonal halved (Murray 2016,
    # arXiv:1602.07527), for the Hermitian A' of the matrix the kernel factors: the symmetrized input,
    # or the one LAPACK reads from the lower triangle (JAX uses the raw tangent there, whose upper
    # triangle then moves L, though L never reads it).
    (a,), (t,) = primals, tangents
    L = cholesky_p.bind(a, symmetrize_input=symmetrize_input)
    if type(t) is Zero:
        return L, Zero(L.aval)
    if symmetrize_input:
        t = _ew.mul_p.bind(_ew.add_p.bind(t, _H(t)), wrap(np.asarray(0.5, t.dtype), False))
    else:
        t = hermitian_from_triangle(t, lower=True)
    inner = _tsolve(L, _tsolve(L, t, lower=True, transpose_a=True, conjugate_a=True), left_side=True, lower=True)
    n = a.shape[-1]
    phi = _ew.mul_p.bind(inner, _constant(np.tril(np.ones((n, n))) - 0.5 * np.eye(n), a.dtype, a.shape))
    return L, _matmul(L, phi)


cholesky_p.jvp = _cholesky_jvp


def _triangular_solve_jvp(primals, tangents, **params):
    (a, b), (ta, tb) = primals, tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out = None
    if type(tb) is not Zero:
        out = triangular_solve_p.bind(a, tb, **params)
    if type(ta) is not Zero:
        out = add_tangents(out, _triangular_solve_jvp_a(ta, ans, a, **params))
    return ans, Zero(ans.aval) if out is None else out


def _triangular_solve_jvp_a(ta, ans, a, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    # X = op(A)^-1 B: X' = -op(A)^-1 op(A') X (left side) or -X op(A') op(A)^-1, with A' restricted to
    # the triangle the solve reads; the cheaper order of the product and the solve, as JAX's.
    k = 1 if unit_diagonal else 0
    g = _ew.neg_p.bind(_tril(ta, -k) if lower else _triu(ta, k))
    g = _mT(g) if transpose_a else g
    g = _conj(g) if conjugate_a else g
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                  unit_diagonal=unit_diagonal)  # fmt: skip
    m, n = ans.shape[-2:]
    if left_side:
        if m > n:
            return triangular_solve_p.bind(a, _matmul(g, ans), **params)
        return _matmul(triangular_solve_p.bind(a, g, **params), ans)
    if m < n:
        return triangular_solve_p.bind(a, _matmul(ans, g), **params)
    return _matmul(ans, triangular_solve_p.bind(a, g, **params))


def _triangular_solve_transpose(ct, a, b, *, transpose_a, **params):
    # Linear in b: the transpose of b -> op(A)^-1 b is ct -> op(A)^-T ct.
    if is_undefined(a):
        raise InvalidArgumentError("triangular_solve: not linear in a; only b can be transposed")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    return [None, triangular_solve_p.bind(a, ct, transpose_a=not transpose_a, **params)]


triangular_solve_p.jvp = _triangular_solve_jvp
triangular_solve_p.transpose = _triangular_solve_transpose


def _permutation_matrix(permutation, dtype):
    """P with P[..., i, j] = (permutation[..., i] == j): P @ x gathers x's rows (linear in x)."""
    m = permutation.shape[-1]
    shape = (*permutation.shape, m)
    rows = _st.broadcast_in_dim_p.bind(permutation, shape=shape, broadcast_dimensions=tuple(range(permutation.ndim)))
    cols = _st.iota_p.bind(dtype=dtypes.int32, shape=shape, dimension=len(shape) - 1)
    return _ew.convert_element_type_p.bind(_bw.eq_p.bind(rows, cols), new_dtype=dtype, weak_type=False)


def _lu_jvp(primals, tangents):
    # L'U + LU' = P A'  =>  L^-1 P A' U^-1 = L^-1 L' + U' U^-1 (strictly lower + upper), so
    # L' = L tril(F, -1), U' = triu(F) U with F = L^-1 P A' U^-1 (De Hoog, Anderssen and Lukas);
    # a rectangular A pads L and U to square with the identity, as JAX's rule.
    (a,), (t,) = primals, tangents
    lu, pivots, permutation = lu_p.bind(a)
    zeros = [Zero(pivots.aval), Zero(permutation.aval)]
    if type(t) is Zero:
        return [lu, pivots, permutation], [Zero(lu.aval), *zeros]
    m, n = a.shape[-2:]
    k = min(m, n)
    x = _matmul(_permutation_matrix(permutation, a.dtype), t)
    lower = _pad(_tril(_slice(lu, (0, 0), (m, k)), -1), (0, 0), (0, m - k))
    lower = _ew.add_p.bind(lower, _eye_like(lower))
    upper = _pad(_triu(_slice(lu, (0, 0), (k, n))), (0, n - k), (0, 0))
    upper = _ew.add_p.bind(upper, _constant(np.diag(np.arange(n) >= k).astype(a.dtype), a.dtype, upper.shape))
    f = _tsolve(upper, _tsolve(lower, x, left_side=True, lower=True, unit_diagonal=True), lower=False)
    lu_dot = _ew.add_p.bind(_matmul(lower, _tril(f, -1)), _matmul(_triu(f), upper))
    return [lu, pivots, permutation], [lu_dot, *zeros]


lu_p.jvp = _lu_jvp
defnondiff(lu_pivots_to_permutation_p)


def _qr_jvp(primals, tangents, *, full_matrices):
    # Square or tall A = QR (reduced): with C = Q^H A' R^-1, Q^H Q' = S skew-Hermitian equal to C's
    # strictly-lower part minus its conjugate transpose (plus C's imaginary diagonal, complex only), and
    # R' = (C - S) R, Q' = Q (S - C) + A' R^-1 (J. Townsend, "Differentiating the QR decomposition").
    # Wide A = Q [R1 R2]: the square rule on the first m columns, and R2' = Q^H (A2' - Q' R2).
    (a,), (t,) = primals, tangents
    m, n = a.shape[-2:]
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    if type(t) is Zero:
        return [q, r], [Zero(q.aval), Zero(r.aval)]
    if full_matrices and m > n:
        raise TransformError(
            f"qr: the derivative of the complete QR (full_matrices=True) of a tall {m}x{n} matrix is not unique "
            "(the extra columns of Q are arbitrary); differentiate the reduced QR (full_matrices=False, mode='reduced')"
        )
    if m >= n:
        dq, dr = _qr_square_jvp(q, r, t)
        return [q, r], [dq, dr]
    r1, r2 = _slice(r, (0, 0), (m, m)), _slice(r, (0, m), (m, n))
    dq, dr1 = _qr_square_jvp(q, r1, _slice(t, (0, 0), (m, m)))
    dr2 = _matmul(_H(q), _ew.sub_p.bind(_slice(t, (0, m), (m, n)), _matmul(dq, r2)))
    return [q, r], [dq, _st.concatenate_p.bind(dr1, dr2, dimension=a.ndim - 1)]


def _qr_square_jvp(q, r, t):
    dx_rinv = _tsolve(r, t, lower=False)
    c = _matmul(_H(q), dx_rinv)
    c_low = _tril(c, -1)
    s = _ew.sub_p.bind(c_low, _H(c_low))
    if dtypes.is_complex(c.dtype):
        imag_diag = _ew.sub_p.bind(c, _ew.convert_element_type_p.bind(_ew.real_p.bind(c), new_dtype=c.dtype, weak_type=False))
        s = _ew.add_p.bind(s, _ew.mul_p.bind(_eye_like(c), imag_diag))
    dq = _ew.add_p.bind(_matmul(q, _ew.sub_p.bind(s, c)), dx_rinv)
    dr = _matmul(_ew.sub_p.bind(c, s), r)
    return dq, dr


qr_p.jvp = _qr_jvp


def _inv_jvp(primals, tangents):
    # (A^-1)' = -A^-1 A' A^-1
    (a,), (t,) = primals, tangents
    x = inv_p.bind(a)
    if type(t) is Zero:
        return x, Zero(x.aval)
    return x, _ew.neg_p.bind(_matmul(_matmul(x, t), x))


inv_p.jvp = _inv_jvp


def _solve_jvp(primals, tangents):
    # x = A^-1 b: x' = A^-1 (b' - A' x), one solve for both tangents.
    (a, b), (ta, tb) = primals, tangents
    x = solve_p.bind(a, b)
    rhs = None if type(tb) is Zero else tb
    if type(ta) is not Zero:
        minus = _ew.neg_p.bind(_matmul(ta, x))
        rhs = minus if rhs is None else _ew.add_p.bind(rhs, minus)
    if rhs is None:
        return x, Zero(x.aval)
    return x, solve_p.bind(a, rhs)


def _solve_transpose(ct, a, b):
    # Linear in b: the transpose of b -> A^-1 b is ct -> A^-T ct.
    if is_undefined(a):
        raise InvalidArgumentError("solve: not linear in a; only b can be transposed")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    return [None, solve_p.bind(_mT(a), ct)]


solve_p.jvp = _solve_jvp
solve_p.transpose = _solve_transpose

# --- batching rules ------------------------------------------------------------------------------------
# The primitives map over leading axes, so the batch axis moves to the front. A solve against one
# shared matrix folds the examples into the right-hand side's columns instead: one factorisation.

from ember.core.batching import bdim_to_front, move_axis, not_mapped

for _prim in (cholesky_p, lu_p, lu_pivots_to_permutation_p, qr_p, inv_p):
    batch_leading(_prim)


def _fold_into_columns(b, d):
    """b (with batch axis d) as (..., rows, size * cols): the examples side by side."""
    b = move_axis(b, d, b.ndim - 2)  # (..., rows, size, cols)
    *lead, rows, size, cols = b.shape
    return _st.reshape_p.bind(b, new_sizes=(*lead, rows, size * cols), dimensions=None), size


def _unfold_columns(x, size: int):
    *lead, rows, total = x.shape
    x = _st.reshape_p.bind(x, new_sizes=(*lead, rows, size, total // size), dimensions=None)
    return move_axis(x, x.ndim - 2, 0)


def _triangular_solve_batch(size, args, dims, *, left_side, **params):
    (a, b), (da, db) = args, dims
    if da is not_mapped and left_side:  # op(a) x = b: the examples side by side as columns
        x, _ = _fold_into_columns(b, db)
        return _unfold_columns(triangular_solve_p.bind(a, x, left_side=True, **params), size), 0
    if da is not_mapped:  # x op(a) = b: the examples stacked as rows
        x = move_axis(b, db, b.ndim - 3)
        *lead, _, rows, cols = x.shape
        x = _st.reshape_p.bind(x, new_sizes=(*lead, size * rows, cols), dimensions=None)
        out = triangular_solve_p.bind(a, x, left_side=False, **params)
        out = _st.reshape_p.bind(out, new_sizes=(*lead, size, rows, cols), dimensions=None)
        return move_axis(out, out.ndim - 3, 0), 0
    a, b = bdim_to_front(a, da, size), bdim_to_front(b, db, size)
    return triangular_solve_p.bind(a, b, left_side=left_side, **params), 0


def _solve_batch(size, args, dims):
    (a, b), (da, db) = args, dims
    if da is not_mapped:
        x, _ = _fold_into_columns(b, db)
        return _unfold_columns(solve_p.bind(a, x), size), 0
    a, b = bdim_to_front(a, da, size), bdim_to_front(b, db, size)
    return solve_p.bind(a, b), 0


triangular_solve_p.batch = _triangular_solve_batch
solve_p.batch = _solve_batch
