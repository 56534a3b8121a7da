"""enp.linalg on the factorisations: solves, inverses, determinants, and the array API's linalg names.

NumPy's semantics: matrices are the last two axes, leading axes are a batch
(broadcast between operands where NumPy broadcasts), integer and bool input
computes in the default float dtype. float16/bfloat16 raise a DTypeError (LAPACK
has no such type; convert to float32).

Singular matrices are not an error, as in JAX: `inv` and `solve` give NaN for
them (NumPy raises LinAlgError), `det` gives 0 and `slogdet` (0, -inf), as
NumPy; `cholesky` of a matrix that is not positive definite gives NaN (NumPy
raises).

`inv` and `solve` are primitives whose kernels call LAPACK through NumPy (a
LU written in NumPy is several times slower); `det` and `slogdet` use the `lu`
primitive, `cholesky` and `qr` their own.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import NamedTuple

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import linalg as _la
from ember.core.primitives._rules import broadcast_shapes
from ember.core.transfer import follow
from ember.errors import InvalidArgumentError, ShapeError
from ember.lax import linalg as lax
from ember.numpy._contract import matmul, tensordot, vecdot
from ember.numpy._contract import outer as _outer
from ember.numpy._core import ArrayLike, asarray, promote_inexact
from ember.numpy._shape import broadcast_to, matrix_transpose, moveaxis, reshape, stack
from ember.numpy._take import diagonal as _diagonal
from ember.numpy._take import trace as _trace
from ember.transforms.custom import custom_jvp

__all__ = ["cholesky", "cross", "det", "diagonal", "inv", "matmul", "matrix_power", "matrix_transpose", "multi_dot",
           "outer", "qr", "slogdet", "solve", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot"]  # fmt: skip


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


def _describe(x: Array) -> str:
    return f"{x.dtype}{tuple(x.shape)}"


def _square(op: str, a: ArrayLike) -> Array:
    """`a` as an inexact array of (..., n, n) matrices, or a ShapeError naming `op`."""
    (x,) = promote_inexact(op, a)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        got = "a scalar" if x.ndim == 0 else f"{_describe(x)}"
        raise ShapeError(f"{op}: needs square matrices in the last two axes, shape (..., n, n); got {got}")
    return x


def _mH(x: Array) -> Array:
    xt = matrix_transpose(x)
    return xt.conj() if dtypes.is_complex(x.dtype) else xt


def inv(a: ArrayLike) -> Array:
    """The inverse of each square matrix (NaN for a singular one; NumPy raises).

    Args:
      a: (..., n, n) matrices.

    Returns:
      (..., n, n) inverses.

    >>> enp.linalg.inv(enp.asarray([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return _la.inv_p.bind(_square("inv", a))


def solve(a: ArrayLike, b: ArrayLike) -> Array:
    """x with a @ x = b, for square a (NaN for a singular one; NumPy raises).

    As NumPy 2: b of shape (n,) is one vector; otherwise b is (..., n, k) matrices, whose batch axes
    broadcast with a's.

    Args:
      a: (..., n, n) matrices.
      b: (n,) or (..., n, k).

    Returns:
      x shaped like b (with the broadcast batch axes).

    >>> enp.linalg.solve(enp.asarray([[2.0, 0.0], [0.0, 4.0]]), enp.asarray([1.0, 1.0])).tolist()
    [0.5, 0.25]
    """
    a, b = promote_inexact("solve", a, b)
    a = _square("solve", a)
    if b.ndim == 0:
        raise ShapeError(f"solve: b must be a vector (n,) or matrices (..., n, k), got a scalar {_describe(b)}")
    vector = b.ndim == 1
    rows = b.shape[0] if vector else b.shape[-2]
    if rows != a.shape[-1]:
        what = "b (a vector)" if vector else "b's rows (axis -2)"
        raise ShapeError(f"solve: a {_describe(a)} is {a.shape[-1]}x{a.shape[-1]} but {what} has size {rows} in "
                         f"{_describe(b)}; as NumPy 2, b is (n,) or (..., n, k)")  # fmt: skip
    if vector:
        b = reshape(b, (rows, 1))
    try:
        batch = broadcast_shapes("solve", a.shape[:-2], b.shape[:-2])
    except ShapeError:
        raise ShapeError(f"solve: the batch axes of a {_describe(a)} and b {_describe(b)} do not broadcast "
                         f"({a.shape[:-2]} vs {b.shape[:-2]})") from None  # fmt: skip
    a, b = broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:])
    x = _la.solve_p.bind(a, b)
    return reshape(x, batch + (rows,)) if vector else x


def _lu_diagonal(x: Array, factors=None):
    """(the diagonal of U, the permutation's sign as x's dtype) of each matrix's LU (given or computed)."""
    from ember.numpy import _ufuncs as uf
    from ember.numpy._creation import arange
    from ember.numpy._reductions import sum as _sum

    lu, pivots = factors if factors is not None else _la.lu_p.bind(x)[:2]
    swaps = _sum(uf.not_equal(pivots, arange(x.shape[-1], dtype="int32")), axis=-1)
    parity = uf.remainder(swaps, 2).astype(x.dtype)
    return _diagonal(lu, 0, -2, -1), 1 - 2 * parity


def det(a: ArrayLike) -> Array:
    """The determinant of each square matrix, from its LU decomposition (0 for a singular one).

    Its derivative is the adjugate, d det = trace(adj(a) da), computed from the LU decomposition so that it
    is finite for singular matrices too (as JAX): the cofactors for rank n - 1, zero below.

    Args:
      a: (..., n, n) matrices.

    Returns:
      (...) determinants.

    >>> round(float(enp.linalg.det(enp.asarray([[1.0, 2.0], [3.0, 4.0]]))), 5)
    -2.0
    """
    return _det(_square("det", a))


def _det_of_square(x: Array) -> Array:
    from ember.numpy._reductions import prod

    diag, sign = _lu_diagonal(x)
    return sign * prod(diag, axis=-1)


_det = custom_jvp(_det_of_square)


@_det.defjvp
def _det_jvp(primals, tangents):
    from ember.numpy._take import trace as _trace_of

    (x,), (t,) = primals, tangents
    value, adjugate_t = _cofactor_solve(x, t)
    return value, _trace_of(adjugate_t, 0, -2, -1)


def _cofactor_solve(a: Array, b: Array) -> tuple[Array, Array]:
    """(det(a), adj(a) @ b), finite for singular a (JAX's construction).

    With a = P^T L U: adj(a) b = det(a) U^-1 L^-1 P b. U's last diagonal entry is replaced by
    1 / (det(a) / u_nn) (the product of the others, with the permutation's sign), so that the last row of
    the solve gives x_n prod_{i<n} u_ii without dividing by u_nn, and the other rows are scaled by det(a)
    itself (zero when the rank is n - 1). Below rank n - 1 the adjugate is zero: matrices whose modified U
    is still singular give zeros.
    """
    from ember.numpy import _ufuncs as uf
    from ember.numpy._creation import ones_like
    from ember.numpy._reductions import any as _any
    from ember.numpy._shape import concatenate
    from ember.numpy._sorting import cumprod
    from ember.numpy._take import take_along_axis

    n = a.shape[-1]
    if n <= 1:  # adj of a 1x1 matrix is 1; of a 0x0 one, empty
        return (a[..., 0, 0] if n else _det_of_square(a)), b
    lu, pivots, perm = _la.lu_p.bind(a)
    diag, sign = _lu_diagonal(a, (lu, pivots))
    partial = cumprod(diag, axis=-1) * sign[..., None]
    before = partial[..., -2]
    zero = before == 0  # rank below n - 1: an infinite corner, caught below (without NumPy's warning)
    lu = lu.at[..., -1, -1].set(uf.where(zero, math.inf, 1 / uf.where(zero, 1, before)).astype(lu.dtype))
    unit = lax.triangular_solve(lu, ones_like(a[..., :1, :]), left_side=False, lower=False)
    bad = _any(~uf.isfinite(unit), axis=(-2, -1))[..., None, None]
    x = uf.where(bad, 0, b)
    x = take_along_axis(x, broadcast_to(perm[..., :, None], x.shape), axis=-2)
    x = lax.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = concatenate([x[..., :-1, :] * partial[..., -1, None, None], x[..., -1:, :]], axis=-2)
    x = lax.triangular_solve(lu, x, left_side=True, lower=False)
    return partial[..., -1], uf.where(bad, 0, x)


def slogdet(a: ArrayLike) -> SlogdetResult:
    """The sign (a unit complex number for complex input) and log |det| of each square matrix.

    A singular matrix gives sign 0 and logabsdet -inf, as NumPy.

    Args:
      a: (..., n, n) matrices.

    Returns:
      SlogdetResult(sign, logabsdet); logabsdet is real.

    >>> sign, logabsdet = enp.linalg.slogdet(enp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    >>> float(sign), round(float(logabsdet), 6)
    (-1.0, 0.693147)
    """
    from ember.numpy import _ufuncs as uf
    from ember.numpy._math import sign as _sign
    from ember.numpy._reductions import prod
    from ember.numpy._reductions import sum as _sum

    diag, sign = _lu_diagonal(_square("slogdet", a))
    size = uf.abs(diag)
    zero = size == 0  # a singular matrix: sign 0 and log 0 = -inf (without NumPy's divide-by-zero warning)
    if dtypes.is_complex(diag.dtype):
        unit = uf.where(zero, 0, diag / uf.where(zero, 1, size).astype(diag.dtype))
    else:
        unit = _sign(diag)
    logs = uf.where(zero, -math.inf, uf.log(uf.where(zero, 1, size)))
    return SlogdetResult(sign * prod(unit, axis=-1), _sum(logs, axis=-1))


def cholesky(a: ArrayLike, *, upper: bool = False, symmetrize_input: bool = True) -> Array:
    """The Cholesky factor of each Hermitian positive-definite matrix: a = L L^H (or U^H U when upper).

    Args:
      a: (..., n, n) matrices.
      upper: return the upper factor U = L^H (NumPy 2's `upper`).
      symmetrize_input: factor (a + a^H) / 2, as JAX (derivatives then see a symmetric input); else
        only a's lower triangle is read, as NumPy.

    Returns:
      (..., n, n) triangular factors; NaN for a matrix that is not positive definite (NumPy raises).

    >>> enp.linalg.cholesky(enp.asarray([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    x = _square("cholesky", a)
    lower = _la.cholesky_p.bind(x, symmetrize_input=bool(symmetrize_input))
    return _mH(lower) if upper else lower


def qr(a: ArrayLike, mode: str = "reduced") -> QRResult | Array:
    """QR decomposition of each matrix: a = Q R (Householder reflections; LAPACK's signs).

    Args:
      a: (..., m, n) matrices.
      mode: "reduced" (Q (..., m, k), R (..., k, n), k = min(m, n)), "complete" (Q (..., m, m),
        R (..., m, n)) or "r" (R alone, reduced). "raw" (Householder reflectors) is not supported.

    Returns:
      QRResult(Q, R), or R for mode "r".

    >>> q, r = enp.linalg.qr(enp.asarray([[3.0, 0.0], [4.0, 1.0]]))
    >>> [round(v, 4) for v in r.ravel().tolist()]
    [-5.0, -0.8, 0.0, 0.6]
    """
    if mode not in ("reduced", "complete", "r"):
        raise InvalidArgumentError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r} ('raw' is not supported)")
    (x,) = promote_inexact("qr", a)
    if x.ndim < 2:
        raise ShapeError(f"qr: needs matrices, shape (..., m, n); got {_describe(x)}")
    q, r = _la.qr_p.bind(x, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def matrix_power(a: ArrayLike, n: int) -> Array:
    """a raised to the integer power n by repeated squaring (n < 0: of the inverse; n = 0: the identity).

    Args:
      a: (..., m, m) matrices.
      n: the exponent.

    Returns:
      (..., m, m) matrices.

    >>> enp.linalg.matrix_power(enp.asarray([[1, 1], [0, 1]]), 3).tolist()
    [[1, 3], [0, 1]]
    """
    from ember.numpy._creation import eye

    try:
        n = operator.index(n)
    except TypeError:
        raise InvalidArgumentError(f"matrix_power: the exponent must be an integer, got {n!r}") from None
    x = asarray(a)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power: needs square matrices in the last two axes, shape (..., m, m); got {_describe(x)}")
    if n == 0:
        return broadcast_to(follow("matrix_power", eye(x.shape[-1], dtype=x.dtype), x), x.shape)
    if n < 0:
        x, n = inv(x), -n
    result = None
    while n:
        if n & 1:
            result = x if result is None else matmul(result, x)
        n >>= 1
        if n:
            x = matmul(x, x)
    return result


def cross(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1) -> Array:
    """The cross product of 3-vectors along `axis`, broadcasting the other axes (NumPy 2's linalg.cross).

    Args:
      x1, x2: arrays whose `axis` has size 3.
      axis: the axis holding the vectors.

    Returns:
      The cross products, with the vectors along `axis`.

    >>> enp.linalg.cross(enp.asarray([1.0, 0.0, 0.0]), enp.asarray([0.0, 1.0, 0.0])).tolist()
    [0.0, 0.0, 1.0]
    """
    from ember.numpy._core import promote_args

    a, b = promote_args("cross", x1, x2)
    for x in (a, b):
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim or x.shape[axis] != 3:
            raise ShapeError(f"cross: both operands need 3-vectors along axis {axis}; got {_describe(a)} and {_describe(b)}")
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(out, -1, axis)


def outer(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The outer product of two vectors (the array API's linalg.outer: 1-d operands only).

    Args:
      x1: (m,), x2: (n,).

    Returns:
      (m, n).

    >>> enp.linalg.outer(enp.asarray([1, 2]), enp.asarray([1, 10])).tolist()
    [[1, 10], [2, 20]]
    """
    a, b = asarray(x1), asarray(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: needs two vectors (1-d), got {_describe(a)} and {_describe(b)}; enp.outer flattens")
    return _outer(a, b)


def multi_dot(arrays: Sequence[ArrayLike], *, precision=None) -> Array:
    """The product of a chain of matrices, multiplied in the cheapest order (NumPy's dynamic programme).

    The first array may be a vector (a row) and the last a vector (a column); the others are 2-d.

    Args:
      arrays: two or more arrays.
      precision: passed to each product.

    Returns:
      The product (2-d, 1-d or 0-d as NumPy).

    >>> enp.linalg.multi_dot([enp.ones(3), enp.ones((3, 4)), enp.ones(4)]).tolist()
    12.0
    """
    xs = [asarray(x) for x in arrays]
    if len(xs) < 2:
        raise InvalidArgumentError(f"multi_dot: needs at least two arrays, got {len(xs)}")
    first_vector, last_vector = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_vector:
        xs[0] = reshape(xs[0], (1, -1))
    if last_vector:
        xs[-1] = reshape(xs[-1], (-1, 1))
    for i, x in enumerate(xs):
        if x.ndim != 2:
            raise ShapeError(f"multi_dot: array {i} is {_describe(x)}; the first and last may be 1-d, the others must be 2-d")
    for i in range(len(xs) - 1):
        if xs[i].shape[1] != xs[i + 1].shape[0]:
            raise ShapeError(f"multi_dot: arrays {i} {_describe(xs[i])} and {i + 1} {_describe(xs[i + 1])} do not chain")
    dims = [xs[0].shape[0]] + [x.shape[1] for x in xs]
    order = _chain_order(dims)

    def product(i: int, j: int) -> Array:
        if i == j:
            return xs[i]
        k = order[i][j]
        from ember.numpy._contract import dot

        return dot(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, len(xs) - 1)
    if first_vector and last_vector:
        return reshape(out, ())
    if first_vector:
        return reshape(out, (out.shape[1],))
    if last_vector:
        return reshape(out, (out.shape[0],))
    return out


def _chain_order(dims: list[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits (the matrix-chain programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def trace(x: ArrayLike, /, *, offset: int = 0, dtype=None) -> Array:
    """The sum of the `offset` diagonal of each matrix (the last two axes; the array API's linalg.trace).

    Args:
      x: (..., m, n) matrices.
      offset: which diagonal (positive: above the main one).
      dtype: the accumulation and result dtype.

    Returns:
      (...) sums.

    >>> enp.linalg.trace(enp.ones((2, 3, 3))).tolist()
    [3.0, 3.0]
    """
    return _trace(x, offset, -2, -1, dtype=dtype)


def diagonal(x: ArrayLike, /, *, offset: int = 0) -> Array:
    """The `offset` diagonal of each matrix (the last two axes; the array API's linalg.diagonal).

    Args:
      x: (..., m, n) matrices.
      offset: which diagonal (positive: above the main one).

    Returns:
      (..., k) diagonals.

    >>> enp.linalg.diagonal(enp.asarray([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    return _diagonal(x, offset, -2, -1)


def tensorinv(a: ArrayLike, ind: int = 2) -> Array:
    """The inverse of `a` seen as a linear map from its first `ind` axes' space to the others' (NumPy's).

    Args:
      a: an array with prod(a.shape[:ind]) == prod(a.shape[ind:]).
      ind: how many leading axes are the map's outputs.

    Returns:
      The inverse, of shape a.shape[ind:] + a.shape[:ind].

    >>> enp.linalg.tensorinv(enp.eye(4).reshape(4, 2, 2) * 2, ind=1).shape
    (2, 2, 4)
    """
    x = asarray(a)
    if not isinstance(ind, int) or ind <= 0:
        raise InvalidArgumentError(f"tensorinv: ind must be a positive int, got {ind!r}")
    rows, cols = math.prod(x.shape[:ind]), math.prod(x.shape[ind:])
    if rows != cols:
        raise ShapeError(f"tensorinv: a {_describe(x)} with ind={ind} maps {cols} values to {rows}; they must be equal")
    return reshape(inv(reshape(x, (rows, cols))), x.shape[ind:] + x.shape[:ind])


def tensorsolve(a: ArrayLike, b: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """x with tensordot(a, x, x.ndim) = b (NumPy's tensorsolve).

    Args:
      a: an array whose leading axes match b's shape and whose trailing axes are x's.
      b: the right-hand side.
      axes: axes of a moved to the end first.

    Returns:
      x, of shape a.shape[b.ndim:] (after moving `axes`).

    >>> enp.linalg.tensorsolve(enp.eye(6).reshape(6, 2, 3) * 2, enp.ones(6)).shape
    (2, 3)
    """
    x, y = promote_inexact("tensorsolve", a, b)
    if axes is not None:
        axes = [ax % x.ndim if -x.ndim <= ax < x.ndim else ax for ax in axes]
        if any(not 0 <= ax < x.ndim for ax in axes):
            raise InvalidArgumentError(f"tensorsolve: axes {axes} out of range for a {_describe(x)}")
        keep = [i for i in range(x.ndim) if i not in axes]
        x = moveaxis(x, tuple(axes), tuple(range(len(keep), x.ndim)))
    unknown = x.shape[y.ndim :]
    if x.shape[: y.ndim] != y.shape or math.prod(unknown) != y.size:
        raise ShapeError(f"tensorsolve: a {_describe(x)} does not map arrays of shape {unknown} to b {_describe(y)} "
                         "(a's leading axes must be b's shape, and its trailing axes hold as many values)")  # fmt: skip
    return reshape(solve(reshape(x, (y.size, y.size)), reshape(y, (y.size,))), unknown)
