"""enp.linalg on the spectral decompositions: norms, svd, eigh, pinv, lstsq.

Everything here stands on three primitives (`lax.linalg.svd`, `eigh`, `eig`)
and works on the last two axes, any leading axes being a batch (as NumPy's
stacked linalg). Integer and bool input is promoted to the default float
dtype; float16/bfloat16 raise (NumPy's linalg rejects half precision too),
except in the norms, which compute in float32 and round back.

Where ember differs from NumPy, it follows JAX:
- `eigh` and `eigvalsh` use the Hermitian part ``(a + a^H) / 2`` by default
  (``symmetrize_input=True``), so gradients are symmetric; NumPy reads only
  the `UPLO` triangle, which ``symmetrize_input=False`` does here too.
- `eig` and `eigvals` always return complex arrays (NumPy returns real ones
  when every eigenvalue of a real matrix happens to be real). Not differentiable.
- `lstsq` always returns the residuals ``|b - a x|^2`` per column
  (``numpy_resid=True``: NumPy's empty array when rank < N or M <= N).
- `matrix_rank` returns an array of the default integer dtype.

Derivatives at repeated eigenvalues / singular values: values-only functions
(`eigvalsh`, `svdvals`, the norms) never divide by eigenvalue gaps, so their
gradients stay finite; `pinv` (and `lstsq`) differentiate the pseudo-inverse
directly (Golub and Pereyra), exact at any fixed rank.
"""

from __future__ import annotations

import math
import numbers
from functools import partial
from typing import NamedTuple

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import eigen as eg
from ember.errors import ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError
from ember.lax import _eigen as lax_eigen
from ember.lax import linalg as _lax_linalg  # noqa: F401  (makes ember.lax.linalg an attribute of ember.lax)
from ember.lax._convert import convert
from ember.numpy._contract import matmul
from ember.numpy._core import ArrayLike, asarray, check_arraylike, full_for, promote_inexact
from ember.numpy._creation import zeros
from ember.numpy._reductions import any as _any
from ember.numpy._reductions import max as _max
from ember.numpy._reductions import min as _min
from ember.numpy._reductions import sum as _sum
from ember.numpy._shape import broadcast_to, expand_dims, moveaxis, reshape
from ember.numpy._ufuncs import abs as _abs
from ember.numpy._ufuncs import conj, isnan, logical_and, logical_not, not_equal, real, sqrt, where
from ember.numpy.linalg._factor import _mH as _H
from ember.transforms.custom import custom_jvp

__all__ = ["cond", "eig", "eigh", "eigvals", "eigvalsh", "lstsq", "matrix_norm", "matrix_rank", "norm", "pinv", "svd",
           "svdvals", "vector_norm"]  # fmt: skip

_HALF = (dtypes.float16, dtypes.bfloat16)


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class LstsqResult(NamedTuple):
    x: Array
    residuals: Array
    rank: Array
    s: Array


# --- helpers --------------------------------------------------------------------------------


def _inexact(op: str, a: ArrayLike) -> Array:
    check_arraylike(op, a)
    return promote_inexact(op, asarray(a))[0]


def _lapack_operand(op: str, a: ArrayLike) -> Array:
    x = _inexact(op, a)
    if x.dtype in _HALF:
        raise DTypeError(f"{op}: operand {x.dtype}{x.shape} has a half-precision dtype, which LAPACK (and NumPy's "
                         "linalg) has no routines for; convert it with x.astype(enp.float32)")  # fmt: skip
    return x


def _matrix(op: str, a: ArrayLike, square: bool = False) -> Array:
    """`a` as a (stack of) float32/64 or complex matrices, checked for `op`."""
    x = _lapack_operand(op, a)
    eg._check_matrix(op, x.aval, square)
    return x


def _uplo(op: str, UPLO) -> bool:
    if UPLO not in (None, "L", "U"):
        raise InvalidArgumentError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO != "U"


def _eye_like(n: int, x: Array) -> Array:
    return convert(eg._eye(n, x.dtype), x.dtype)


# --- decompositions -------------------------------------------------------------------------


def svd(
    a: ArrayLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> SVDResult | Array:
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of the last two axes.

    Args:
      a: array of shape (..., M, N).
      full_matrices: U is (..., M, M) and Vh (..., N, N); else (..., M, K), (..., K, N), K = min(M, N).
      compute_uv: return (U, S, Vh); else only S.
      hermitian: `a` is Hermitian (real symmetric): computed from its eigendecomposition.

    Returns:
      ``SVDResult(U, S, Vh)``, or S alone without `compute_uv`; S is real and descending. The
      derivative of U and Vh needs full_matrices=False when M != N (they are not unique otherwise).

    >>> enp.linalg.svd(enp.asarray([[0.0, 2.0], [1.0, 0.0]]), compute_uv=False).tolist()
    [2.0, 1.0]
    """
    x = _matrix("svd", a, square=hermitian)
    if not hermitian:
        if not compute_uv:
            return lax_eigen.svd(x, compute_uv=False)
        u, s, vh = lax_eigen.svd(x, full_matrices=full_matrices)
        return SVDResult(u, s, vh)
    if not compute_uv:
        w = eg.eigh_p.bind(x, lower=True, eigvals_only=True)[0]
        return -lax.sort(-_abs(w), dimension=w.ndim - 1)
    v, w = eg.eigh_p.bind(x, lower=True, eigvals_only=False)
    # Singular values are |w|, descending; the columns of v follow that order, and the signs of w
    # move into Vh.
    s, sign = _descending(_abs(w), (where(w < 0, -1, 1).astype(w.dtype),))
    keys = broadcast_to(-_abs(w)[..., None, :], v.shape)
    u = lax.sort((keys, v), dimension=v.ndim - 1, num_keys=1)[1]
    return SVDResult(u, s, _H(u * sign.astype(x.dtype)[..., None, :]))


def _descending(keys: Array, payloads: tuple) -> list[Array]:
    """keys sorted descending along the last axis, and `payloads` (same shape) permuted alike."""
    out = lax.sort((-keys, *payloads), dimension=keys.ndim - 1, num_keys=1)
    return [-out[0], *out[1:]]


def svdvals(x: ArrayLike, /) -> Array:
    """The singular values of the last two axes, descending (the array API's svdvals).

    Its gradient is finite where singular values repeat (it never divides by their gaps).

    Args:
      x: array of shape (..., M, N).

    Returns:
      Real array of shape (..., min(M, N)).

    >>> enp.linalg.svdvals(enp.asarray([[3.0, 0.0], [0.0, 4.0]])).tolist()
    [4.0, 3.0]
    """
    return lax_eigen.svd(_matrix("svdvals", x), compute_uv=False)


def eigh(a: ArrayLike, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues and eigenvectors of Hermitian (real symmetric) matrices.

    Args:
      a: array of shape (..., N, N).
      UPLO: 'L' (default) or 'U': the triangle read when `symmetrize_input` is off.
      symmetrize_input: use (a + a^H) / 2, as JAX (NumPy reads only the UPLO triangle).

    Returns:
      ``EighResult(eigenvalues, eigenvectors)`` (NumPy's order): eigenvalues real and
      ascending, (..., N); eigenvectors the columns of (..., N, N).

    >>> w, v = enp.linalg.eigh(enp.asarray([[2.0, 1.0], [1.0, 2.0]]))
    >>> [round(e, 4) for e in w.tolist()]
    [1.0, 3.0]
    """
    x = _matrix("eigh", a, square=True)
    v, w = lax_eigen.eigh(x, lower=_uplo("eigh", UPLO), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: ArrayLike, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Array:
    """Eigenvalues of Hermitian (real symmetric) matrices, ascending.

    Its gradient is finite where eigenvalues repeat (it never divides by their gaps).

    Args:
      a: array of shape (..., N, N).
      UPLO: 'L' or 'U': the triangle read when `symmetrize_input` is off.
      symmetrize_input: use (a + a^H) / 2, as JAX (NumPy reads only the UPLO triangle).

    Returns:
      Real array of shape (..., N).

    >>> [round(e, 4) for e in enp.linalg.eigvalsh(enp.asarray([[2.0, 1.0], [1.0, 2.0]])).tolist()]
    [1.0, 3.0]
    """
    x = _matrix("eigvalsh", a, square=True)
    lower = _uplo("eigvalsh", UPLO)
    if symmetrize_input:
        x = lax_eigen.symmetrize(x)
    return eg.eigh_p.bind(x, lower=lower, eigvals_only=True)[0]


def eig(a: ArrayLike) -> EigResult:
    """Eigenvalues and right eigenvectors of general square matrices. Forward only.

    Differentiating it raises TransformError; for Hermitian input use `eigh`.

    Args:
      a: array of shape (..., N, N).

    Returns:
      ``EigResult(eigenvalues, eigenvectors)``, always complex (unlike NumPy, which returns real
      arrays when all eigenvalues are real), in LAPACK's order; ``a @ v = v * w[..., None, :]``.

    >>> w, v = enp.linalg.eig(enp.asarray([[2.0, 0.0], [0.0, 3.0]]))
    >>> w.tolist()
    [(2+0j), (3+0j)]
    """
    w, v = lax_eigen.eig(_matrix("eig", a, square=True), compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a: ArrayLike) -> Array:
    """Eigenvalues of general square matrices, complex, in LAPACK's order. Forward only.

    Args:
      a: array of shape (..., N, N).

    Returns:
      Complex array of shape (..., N).

    >>> enp.linalg.eigvals(enp.asarray([[0.0, -1.0], [1.0, 0.0]])).tolist()
    [1j, -1j]
    """
    x = _matrix("eigvals", a, square=True)
    return lax_eigen.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


# --- norms ------------------------------------------------------------------------------------


def _sq_abs(x: Array) -> Array:
    return real(x * conj(x)) if dtypes.is_complex(x.dtype) else x * x


def _is_str(ord) -> bool:
    return isinstance(ord, str)


def _check_ord(op: str, ord) -> None:
    if ord is None or _is_str(ord):
        return
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real):
        raise InvalidArgumentError(f"{op}: ord must be None, a real number, inf/-inf, 'fro' or 'nuc', got {ord!r}")


def _vector_norm(op: str, x: Array, axes: tuple[int, ...], ord, keepdims: bool) -> Array:
    if _is_str(ord):
        raise InvalidArgumentError(f"{op}: invalid norm order {ord!r} for vectors (axis={axes}); "
                                   "'fro' and 'nuc' are matrix norms: pass a 2-tuple axis, or a number")  # fmt: skip
    _check_ord(op, ord)
    if ord is None or ord == 2:
        return sqrt(_sum(_sq_abs(x), axis=axes, keepdims=keepdims))
    if ord == math.inf:  # initial=0 (a norm is >= 0): an empty vector's norm is 0, as NumPy's
        return _max(_abs(x), axis=axes, keepdims=keepdims, initial=0)
    if ord == -math.inf:
        return _min(_abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        real_dtype = dtypes.real_dtype(x.dtype)
        return _sum(not_equal(x, 0).astype(real_dtype), axis=axes, keepdims=keepdims)
    if ord == 1:
        return _sum(_abs(x), axis=axes, keepdims=keepdims)
    return _sum(_abs(x) ** ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


def _spectral_values(op: str, x: Array, row: int, col: int) -> Array:
    """The singular values of `x` as matrices over (row, col), on the last axis."""
    y = moveaxis(x, (row, col), (-2, -1))
    if y.dtype in _HALF:  # LAPACK has no half precision: compute in float32, round back
        return convert(svdvals(convert(y, dtypes.float32)), y.dtype)
    return svdvals(y)


def _matrix_norm(op: str, x: Array, row: int, col: int, ord, keepdims: bool) -> Array:
    if row == col:
        raise InvalidArgumentError(f"{op}: duplicate axes ({row}, {col}) for a matrix norm of {x.dtype}{x.shape}")
    _check_ord(op, ord)
    # initial=0 in the max-type orders (a norm is >= 0): an empty matrix's norm is 0, as NumPy's; the min-type raise.
    if ord in (None, "fro", "f"):
        out = sqrt(_sum(_sq_abs(x), axis=(row, col)))
    elif ord == "nuc":
        out = _sum(_spectral_values(op, x, row, col), axis=-1)
    elif _is_str(ord):
        raise InvalidArgumentError(f"{op}: invalid norm order {ord!r} for matrices; use None, 'fro', 'nuc', "
                                   "inf, -inf, 1, -1, 2 or -2")  # fmt: skip
    elif ord in (2, -2):
        values = _spectral_values(op, x, row, col)
        out = _max(values, axis=-1, initial=0) if ord == 2 else _min(values, axis=-1)
    elif ord in (1, -1):
        sums, axis = _sum(_abs(x), axis=row), col - (col > row)
        out = _max(sums, axis=axis, initial=0) if ord == 1 else _min(sums, axis=axis)
    elif ord in (math.inf, -math.inf):
        sums, axis = _sum(_abs(x), axis=col), row - (row > col)
        out = _max(sums, axis=axis, initial=0) if ord == math.inf else _min(sums, axis=axis)
    else:
        raise InvalidArgumentError(f"{op}: invalid norm order {ord!r} for matrices; use None, 'fro', 'nuc', "
                                   "inf, -inf, 1, -1, 2 or -2")  # fmt: skip
    if keepdims:
        out = expand_dims(out, tuple(sorted((row, col))))
    return out


def _axes(op: str, axis, ndim: int) -> tuple[int, ...]:
    from ember.core.primitives._rules import normalize_axis

    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (axis,)
    if not isinstance(axis, tuple) or not all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis
    ):
        raise ArgumentTypeError(f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}")
    return tuple(normalize_axis(op, int(a), ndim) for a in axis)


def norm(x: ArrayLike, ord: float | str | None = None, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Array:  # fmt: skip
    """Matrix or vector norm, as NumPy's (every `ord` it accepts).

    Vectors (an int `axis`, or a 1-d `x`): ord None or 2 (Euclidean), inf/-inf (max/min of |x|), 0
    (count of non-zeros), and any other p: ``sum(|x|^p)^(1/p)``. Matrices (a 2-tuple `axis`, or a
    2-d `x`): None/'fro' (Frobenius), 'nuc' (sum of singular values), 2/-2 (largest/smallest
    singular value), 1/-1 (max/min column sum of |x|), inf/-inf (max/min row sum). With axis None
    and ord None, the 2-norm of the flattened array of any rank.

    Args:
      x: the array; integers and bool become the default float dtype.
      ord: the order of the norm.
      axis: None, an int (vector norms) or a tuple of one or two ints.
      keepdims: keep the reduced axes with size 1.

    Returns:
      The norm(s), real (x's real dtype).

    >>> enp.linalg.norm(enp.asarray([3.0, 4.0])).item()
    5.0
    >>> enp.linalg.norm(enp.asarray([[1.0, -2.0], [3.0, 4.0]]), ord=1).item()
    6.0
    """
    op = "norm"
    v = _inexact(op, x)
    nd = v.ndim
    if axis is None:
        if ord is None:
            out = sqrt(_sum(_sq_abs(v)))
            return reshape(out, (1,) * nd) if keepdims else out
        axes = tuple(range(nd))
    else:
        axes = _axes(op, axis, nd)
    if len(axes) == 1:
        return _vector_norm(op, v, axes, ord, keepdims)
    if len(axes) == 2:
        return _matrix_norm(op, v, axes[0], axes[1], ord, keepdims)
    raise InvalidArgumentError(
        f"norm: improper number of axes {axes} for {v.dtype}{v.shape} (ord={ord!r}): a norm "
        "is over one axis (vector) or two (matrix); for the 2-norm of everything pass ord=None"
    )


def vector_norm(x: ArrayLike, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: float = 2) -> Array:  # fmt: skip
    """Vector norm over `axis` (all axes by default, flattened), as the array API's vector_norm.

    Args:
      x: the array.
      axis: None (every element), an int, or a tuple of ints taken together as one vector.
      keepdims: keep the reduced axes with size 1.
      ord: inf, -inf, 0, or any other p (2 by default); not 'fro' or 'nuc'.

    Returns:
      The norm(s), real.

    >>> enp.linalg.vector_norm(enp.asarray([[3.0], [4.0]])).item()
    5.0
    """
    op = "vector_norm"
    v = _inexact(op, x)
    axes = tuple(range(v.ndim)) if axis is None else _axes(op, axis, v.ndim)
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"{op}: repeated axis in {axis!r}")
    return _vector_norm(op, v, axes, ord, keepdims)


def matrix_norm(x: ArrayLike, /, *, keepdims: bool = False, ord: float | str | None = "fro") -> Array:
    """Matrix norm over the last two axes, as the array API's matrix_norm (ords as `norm`'s for matrices).

    Args:
      x: array of rank >= 2.
      keepdims: keep the last two axes with size 1.
      ord: 'fro' (default), 'nuc', inf, -inf, 1, -1, 2 or -2.

    Returns:
      The norm(s), real, of shape (...).

    >>> enp.linalg.matrix_norm(enp.asarray([[3.0, 0.0], [0.0, 4.0]]), ord=2).item()
    4.0
    """
    v = _inexact("matrix_norm", x)
    if v.ndim < 2:
        raise ShapeError(f"matrix_norm: needs an array of rank >= 2, got {v.dtype}{v.shape}")
    return _matrix_norm("matrix_norm", v, v.ndim - 2, v.ndim - 1, ord, keepdims)


# --- pseudo-inverse, rank, least squares, condition number ------------------------------------

_NO_VALUE = object()


def _pinv_value(x: Array, rcond: Array, hermitian: bool) -> Array:
    m, n = x.shape[-2:]
    if m == 0 or n == 0:
        return full_for("pinv", (*x.shape[:-2], n, m), 0, x.dtype, x)
    u, s, vh = svd(x, full_matrices=False, hermitian=hermitian)
    cutoff = rcond[..., None] * _max(s, axis=-1, keepdims=True)
    large = s > cutoff
    s_inv = where(large, 1 / where(large, s, 1), 0).astype(s.dtype)
    return matmul(_H(vh) * s_inv.astype(x.dtype)[..., None, :], _H(u))


@partial(custom_jvp, nondiff_argnums=(0,))
def _pinv_custom(hermitian: bool, x: Array, rcond: Array) -> Array:
    return _pinv_value(x, rcond, hermitian)


@_pinv_custom.defjvp
def _pinv_jvp_rule(hermitian, primals, tangents):
    # Golub and Pereyra: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P; exact where the
    # rank is constant, and it never divides by singular-value gaps.
    x, rcond = primals
    t = tangents[0]
    p = _pinv_core(x, rcond, hermitian)
    m, n = x.shape[-2:]
    th, ph = _H(t), _H(p)
    dp = -matmul(matmul(p, t), p)
    dp = dp + matmul(matmul(p, ph), matmul(th, _eye_like(m, x) - matmul(x, p)))
    dp = dp + matmul(_eye_like(n, x) - matmul(p, x), matmul(th, matmul(ph, p)))
    return p, dp


def _pinv_core(x: Array, rcond: Array, hermitian: bool) -> Array:
    return _pinv_custom(hermitian, x, rcond)


def _rcond_array(op: str, rcond, x: Array) -> Array:
    r = asarray(rcond)
    if r.dtype.kind not in "biuf" and r.dtype != dtypes.bfloat16:
        raise DTypeError(f"{op}: rcond/rtol must be real, got {r.dtype}{r.shape}")
    return convert(r, dtypes.real_dtype(x.dtype))


def pinv(a: ArrayLike, rcond=None, hermitian: bool = False, *, rtol=_NO_VALUE) -> Array:
    """Moore-Penrose pseudo-inverse of the last two axes, from the SVD (NumPy's semantics).

    Singular values at most ``rcond * max(s)`` count as zero. Its derivative is the pseudo-inverse's
    own (Golub and Pereyra), finite where singular values repeat.

    Args:
      a: array of shape (..., M, N).
      rcond: the relative cutoff (default 1e-15, as NumPy's); a scalar or one per matrix.
      hermitian: `a` is Hermitian (real symmetric): use its eigendecomposition.
      rtol: the array API's name for rcond; None means max(M, N) * eps. Not both.

    Returns:
      Array of shape (..., N, M).

    >>> enp.linalg.pinv(enp.asarray([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    x = _matrix("pinv", a, square=hermitian)
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(x.shape[-2:]) * float(np.finfo(dtypes.real_dtype(x.dtype)).eps)
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise InvalidArgumentError("pinv: pass rcond or rtol, not both")
    if hermitian:  # LAPACK reads the lower triangle: the derivative rule must see that matrix too
        x = eg._hermitian_from_triangle(x, lower=True)
    return _pinv_core(x, _rcond_array("pinv", rcond, x), bool(hermitian))


def matrix_rank(A: ArrayLike, tol=None, hermitian: bool = False, *, rtol=None) -> Array:
    """The number of singular values above a tolerance, per matrix (NumPy's semantics).

    Args:
      A: array of shape (..., M, N); a 0-d or 1-d array has rank 1 unless it is all zeros.
      tol: absolute threshold (scalar or one per matrix).
      hermitian: `A` is Hermitian: use its eigenvalues.
      rtol: relative threshold (times the largest singular value); default max(M, N) * eps.

    Returns:
      Array of the default integer dtype, of shape (...).

    >>> enp.linalg.matrix_rank(enp.asarray([[1.0, 2.0], [2.0, 4.0]])).item()
    1
    """
    if rtol is not None and tol is not None:
        raise InvalidArgumentError("matrix_rank: pass tol or rtol, not both")
    x = _lapack_operand("matrix_rank", A)
    if x.ndim < 2:
        return _any(not_equal(x, 0)).astype(dtypes.default_int())
    x = _matrix("matrix_rank", x, square=hermitian)
    s = svd(x, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(x.shape[-2:]) * float(np.finfo(s.dtype).eps)
        top = _max(s, axis=-1, keepdims=True) if s.shape[-1] else zeros((*s.shape[:-1], 1), s.dtype)
        threshold = top * _rcond_array("matrix_rank", rtol, s)[..., None]
    else:
        threshold = _rcond_array("matrix_rank", tol, s)[..., None]
    return _sum((s > threshold).astype(dtypes.default_int()), axis=-1)


def lstsq(a: ArrayLike, b: ArrayLike, rcond=None, *, numpy_resid: bool = False) -> LstsqResult:
    """Least-squares solution of ``a @ x = b`` (NumPy's four results).

    Singular values at most ``rcond * s[0]`` count as zero (default: eps * max(M, N)). x is
    ``pinv(a, rcond) @ b``, differentiable in `a` and `b`.

    Args:
      a: array of shape (M, N).
      b: array of shape (M,) or (M, K).
      rcond: the relative cutoff for small singular values; a negative one means machine precision (NumPy's -1).
      numpy_resid: residuals as NumPy's (empty when rank < N or M <= N; needs a concrete rank);
        by default, as JAX, they are always computed.

    Returns:
      ``(x, residuals, rank, s)``: x of shape (N,) or (N, K); residuals, the squared 2-norm of
      each column of b - a @ x, shape (1,) or (K,); rank, a default-int scalar; s, the singular
      values of a.

    >>> x, res, rank, s = enp.linalg.lstsq(enp.asarray([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), enp.asarray([1.0, 2.0, 3.0]))
    >>> x.tolist(), res.tolist(), rank.item()
    ([1.0, 2.0], [9.0], 2)
    """
    check_arraylike("lstsq", a, b)
    x, y = promote_inexact("lstsq", asarray(a), asarray(b))
    if x.ndim != 2 or y.ndim not in (1, 2):
        raise ShapeError(
            f"lstsq: needs a of rank 2 and b of rank 1 or 2, got a {x.dtype}{x.shape} and b {y.dtype}{y.shape}"
        )
    if x.shape[0] != y.shape[0]:
        raise ShapeError(f"lstsq: a {x.dtype}{x.shape} and b {y.dtype}{y.shape} differ in their number of rows (M)")
    x = _matrix("lstsq", x)
    m, n = x.shape
    vector = y.ndim == 1
    y2 = y[:, None] if vector else y
    eps = float(np.finfo(dtypes.real_dtype(x.dtype)).eps)
    rcond = _rcond_array("lstsq", eps * max(m, n) if rcond is None else rcond, x)
    rcond = where(rcond < 0, eps, rcond).astype(rcond.dtype)  # as LAPACK's gelsd (NumPy, JAX): machine precision
    s = svdvals(x)
    p = _pinv_core(x, rcond, False)
    sol = matmul(p, y2)
    if s.shape[-1]:
        rank = _sum((s > s[0] * rcond).astype(dtypes.default_int()))
    else:
        rank = zeros((), dtypes.default_int())
    resid = _sum(_sq_abs(y2 - matmul(x, sol)), axis=0)
    if numpy_resid and (int(rank) < n or m <= n):
        resid = zeros((0,), resid.dtype)
    return LstsqResult(sol[:, 0] if vector else sol, resid, rank, s)


def cond(x: ArrayLike, p=None) -> Array:
    """Condition number of the last two axes in the norm `p` (NumPy's semantics).

    p None, 2, -2: the ratio of the largest and smallest singular values (any shape); other
    orders ('fro', 'nuc', 1, -1, inf, -inf): ``norm(x, p) * norm(inv(x), p)`` (square only).
    A singular matrix gives inf (NaN input gives NaN).

    Args:
      x: array of shape (..., M, N), not empty.
      p: the norm's order.

    Returns:
      Real array of shape (...).

    >>> enp.linalg.cond(enp.asarray([[1.0, 0.0], [0.0, 4.0]])).item()
    4.0
    """
    v = _matrix("cond", x, square=p not in (None, 2, -2))
    if v.shape[-1] == 0 or v.shape[-2] == 0:
        raise ShapeError(f"cond: not defined for an empty matrix ({v.dtype}{v.shape})")
    if p in (None, 2, -2):
        s = svdvals(v)
        big, small = s[..., 0], s[..., -1]
        num, den = (small, big) if p == -2 else (big, small)
        zero = den == 0  # a singular (or zero) matrix: inf, without dividing by zero
        r = where(zero, math.inf, num / where(zero, 1, den))
    else:
        from ember.numpy.linalg._factor import inv

        r = norm(v, p, axis=(-2, -1)) * norm(inv(v), p, axis=(-2, -1))
    # NaN from a singular matrix (inf * 0, 0 / 0) means an infinite condition number, as in NumPy.
    input_nan = _any(isnan(v), axis=(-2, -1))
    return where(logical_and(isnan(r), logical_not(input_nan)), math.inf, r).astype(r.dtype)


def scipy_eigh(a: ArrayLike, b: ArrayLike | None = None, lower: bool = True, eigvals_only: bool = False,
               overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
               check_finite: bool = True, subset_by_index=None) -> Array | tuple[Array, Array]:  # fmt: skip
    """SciPy's eigh of Hermitian (real symmetric) matrices (as jax.scipy.linalg.eigh): ``(w, v)`` or w.

    As JAX's, it uses the Hermitian part (a + a^H) / 2 (SciPy reads only the `lower` triangle), and
    only the standard problem (b=None, type=1) without subsets. ember.scipy.linalg.eigh is this function.

    Args:
      a: array of shape (..., N, N).
      b: must be None (the generalized problem is not supported).
      lower: the triangle LAPACK reads (of the symmetrized matrix: both agree).
      eigvals_only: return only the eigenvalues (their gradient never divides by gaps).
      overwrite_a, overwrite_b, turbo, check_finite: accepted and ignored (ember arrays are immutable).
      eigvals, type, subset_by_index: must keep their defaults.

    Returns:
      ``(w, v)``: eigenvalues ascending, (..., N), and eigenvectors as columns; or w alone.

    >>> import ember.scipy.linalg as esl
    >>> [round(e, 4) for e in esl.eigh(enp.asarray([[2.0, 1.0], [1.0, 2.0]]), eigvals_only=True).tolist()]
    [1.0, 3.0]
    """
    op = "scipy.linalg.eigh"
    if b is not None:
        raise InvalidArgumentError(f"{op}: only the standard problem (b=None) is supported, not the generalized one; "
                                   "for b = L L^H, solve with cholesky(b) and triangular solves first")  # fmt: skip
    if type != 1 or eigvals is not None or subset_by_index is not None:
        raise InvalidArgumentError(f"{op}: type={type!r}, eigvals={eigvals!r}, subset_by_index={subset_by_index!r} "
                                   "are not supported; keep type=1 and the others None")  # fmt: skip
    x = _matrix(op, a, square=True)
    if eigvals_only:
        return eg.eigh_p.bind(lax_eigen.symmetrize(x), lower=bool(lower), eigvals_only=True)[0]
    v, w = lax_eigen.eigh(x, lower=bool(lower))
    return w, v
