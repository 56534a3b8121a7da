"""Spectral primitives: svd, eigh, eig, each with all its rules.

Each works on the last two axes of its operand; any leading axes are a batch
(LAPACK runs once per matrix), so batching moves the vmap axis to the front
and binds the same primitive. Operands are float32, float64, complex64 or
complex128 (LAPACK's types; `ember.numpy.linalg` promotes integers first).

- ``svd(x, full_matrices, compute_uv)``: ``[s, u, vh]`` (``[s]`` without
  `compute_uv`), singular values descending, real.
- ``eigh(x, lower, eigvals_only)``: ``[v, w]`` (``[w]`` with `eigvals_only`), as
  JAX's eigh_p: eigenvectors first (the columns of `v`), then the eigenvalues,
  real and ascending. Only the `lower` (else upper) triangle of `x` is read.
- ``eig(x, compute_left_eigenvectors, compute_right_eigenvectors)``: ``[w, vl,
  vr]`` (the ones asked for, in that order), always complex. Forward only.

Derivatives at repeated eigenvalues / singular values (exactly equal ones):
- the values' derivatives (``eigvals_only``, ``compute_uv=False``) never divide
  by gaps, so gradients of eigvalsh, svdvals and the spectral and nuclear norms
  are finite there, as JAX's. Each value's derivative is the diagonal of
  ``V^H dA V`` in the basis LAPACK picked; sums over a repeated group (traces,
  norms, any symmetric function's first derivative) are exact.
- the vectors are not unique inside a repeated eigenspace, and their
  derivatives drop the terms whose gap is exactly zero (JAX's svd does the
  same; JAX's eigh gives inf/NaN). Exact for losses that do not use the vectors
  of a repeated group; for a function of the whole group (``v f(w) v^H``) and
  for second derivatives of eigenvalues, the dropped terms (divided
  differences of f) are missing: finite numbers where the derivative through
  eigh does not exist (JAX: NaN). `ember.numpy.linalg.pinv` has its own rule.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import DTypes, check_bools, check_dtype
from ember.errors import ShapeError, TransformError

LAPACK = DTypes(
    "float32, float64, complex64 or complex128 (LAPACK has no integer or half-precision routines; "
    "ember.numpy.linalg promotes integers and bool, lax.linalg does not)",
    (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128),
)


def _check_matrix(op: str, x: ShapedArray, square: bool) -> None:
    check_dtype(op, x, LAPACK)
    if x.ndim < 2:
        raise ShapeError(f"{op}: needs a matrix (or a stack of them) of rank >= 2, got {describe(x)}; "
                         "reshape a vector to (n, 1) or (1, n)")  # fmt: skip
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"{op}: needs square matrices in the last two axes, got {describe(x)} "
                         f"({x.shape[-2]} x {x.shape[-1]}); use svd for non-square matrices")  # fmt: skip


# --- svd -------------------------------------------------------------------------------------

svd_p = Primitive("svd", multiple_results=True)


def _svd_rule(x: ShapedArray, *, full_matrices: bool, compute_uv: bool) -> list[ShapedArray]:
    _check_matrix("svd", x, square=False)
    check_bools("svd", full_matrices=full_matrices, compute_uv=compute_uv)
    *batch, m, n = x.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), dtypes.real_dtype(x.dtype), False)
    if not compute_uv:
        return [s]
    cols, rows = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray((*batch, m, cols), x.dtype, False), ShapedArray((*batch, rows, n), x.dtype, False)]


svd_p.abstract_eval = _svd_rule

# --- eigh ------------------------------------------------------------------------------------

eigh_p = Primitive("eigh", multiple_results=True)


def _eigh_rule(x: ShapedArray, *, lower: bool, eigvals_only: bool) -> list[ShapedArray]:
    _check_matrix("eigh", x, square=True)
    check_bools("eigh", lower=lower, eigvals_only=eigvals_only)
    w = ShapedArray(x.shape[:-1], dtypes.real_dtype(x.dtype), False)
    return [w] if eigvals_only else [ShapedArray(x.shape, x.dtype, False), w]


eigh_p.abstract_eval = _eigh_rule

# --- eig -------------------------------------------------------------------------------------

eig_p = Primitive("eig", multiple_results=True)


def _eig_rule(
    x: ShapedArray, *, compute_left_eigenvectors: bool, compute_right_eigenvectors: bool
) -> list[ShapedArray]:
    _check_matrix("eig", x, square=True)
    check_bools("eig", compute_left_eigenvectors=compute_left_eigenvectors,
                compute_right_eigenvectors=compute_right_eigenvectors)  # fmt: skip
    cdtype = dtypes.complex_dtype(dtypes.real_dtype(x.dtype))
    out = [ShapedArray(x.shape[:-1], cdtype, x.weak_type)]  # JAX: weak eigenvalues, strong eigenvectors
    out += [ShapedArray(x.shape, cdtype, False)] * (compute_left_eigenvectors + compute_right_eigenvectors)
    return out


eig_p.abstract_eval = _eig_rule

# --- helpers for the rules (primitives only) ---------------------------------------------------

from ember.core.ad import Zero
from ember.core.array import wrap
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives import reduction as _rd
from ember.core.primitives import structural as _st
from ember.core.primitives._matrix import batch_leading
from ember.core.primitives._matrix import conj as _conj
from ember.core.primitives._matrix import hermitian_from_triangle as _hermitian_from_triangle
from ember.core.primitives._matrix import matmul as _matmul
from ember.core.primitives._matrix import mH as _H
from ember.core.primitives._matrix import mT as _T


def _is_complex(x) -> bool:
    return dtypes.is_complex(x.dtype)


def _scalar(value, dtype):
    return wrap(np.asarray(value, dtype=dtype), False)


def _to(x, dtype):
    if x.dtype == dtype:
        return x
    return _ew.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


def _real(x):
    return _ew.real_p.bind(x) if _is_complex(x) else x


def _mul(a, b):
    return _ew.mul_p.bind(a, b)


def _add(a, b):
    return _ew.add_p.bind(a, b)


def _sub(a, b):
    return _ew.sub_p.bind(a, b)


def _row(v):
    """(..., k) -> (..., 1, k)."""
    return _st.expand_dims_p.bind(v, dimensions=(v.ndim - 1,))


def _col(v):
    """(..., k) -> (..., k, 1)."""
    return _st.expand_dims_p.bind(v, dimensions=(v.ndim,))


def _index_grid(n: int):
    rows = _st.iota_p.bind(dtype=dtypes.int32, shape=(n, n), dimension=0)
    cols = _st.iota_p.bind(dtype=dtypes.int32, shape=(n, n), dimension=1)
    return rows, cols


def _eye(n: int, dtype):
    rows, cols = _index_grid(n)
    return _to(_bw.eq_p.bind(rows, cols), dtype)


def _select(pred, on_false, on_true):
    return _ew.select_n_p.bind(pred, on_false, on_true)


def _broadcast(x, shape):
    if x.shape == tuple(shape):
        return x
    lead = len(shape) - x.ndim
    return _st.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=tuple(range(lead, len(shape))))


def _safe_reciprocal(x):
    """1/x, and 0 where x is exactly 0 (without a 1/0 anywhere, so its derivatives are finite too)."""
    zero = _bw.eq_p.bind(x, _broadcast(_scalar(0, x.dtype), x.shape))
    one = _broadcast(_scalar(1, x.dtype), x.shape)
    inv = _ew.div_p.bind(one, _select(zero, x, one))
    return _select(zero, inv, _broadcast(_scalar(0, x.dtype), x.shape))


def _diag_of_product(a, b):
    """real(diag(a^H b)) for (..., m, k) operands, without forming the k x k product."""
    return _rd.reduce_sum_p.bind(_real(_mul(_conj(a), b)), axes=(a.ndim - 2,))


# --- differentiation rules -------------------------------------------------------------------
# eigh: A = V diag(w) V^H gives dw = real(diag(V^H dA V)) and dV = V (F o V^H dA V) with
# F[i, j] = 1 / (w[j] - w[i]) off the diagonal (0 on it and where the gap is exactly 0).


def _eigh_jvp(primals, tangents, *, lower, eigvals_only):
    (x,), (t,) = primals, tangents
    v, w = eigh_p.bind(x, lower=lower, eigvals_only=False)
    ans = [w] if eigvals_only else [v, w]
    if type(t) is Zero:
        return ans, [Zero(a.aval) for a in ans]
    t = _hermitian_from_triangle(t, lower)
    if eigvals_only:
        return ans, [_diag_of_product(v, _matmul(t, v))]
    vt = _matmul(_H(v), _matmul(t, v))
    dw = _real(_rd.reduce_sum_p.bind(_mul(vt, _eye(x.shape[-1], x.dtype)), axes=(vt.ndim - 1,)))
    gaps = _sub(_row(w), _col(w))
    dv = _matmul(v, _mul(_to(_safe_reciprocal(gaps), x.dtype), vt))
    return ans, [dv, dw]


eigh_p.jvp = _eigh_jvp

# svd (JAX's rule): with dS = U^H dA V, ds = real(diag(dS)); the vectors' derivatives divide by
# s[j]^2 - s[i]^2 (dropped where it is exactly 0) and, for the part of dA outside the column/row
# spaces of a non-square matrix, by s (dropped where s is exactly 0: a rank-deficient matrix).


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (x,), (t,) = primals, tangents
    *_, m, n = x.shape
    if type(t) is Zero:
        ans = svd_p.bind(x, full_matrices=full_matrices, compute_uv=compute_uv)
        return ans, [Zero(a.aval) for a in ans]
    if compute_uv and full_matrices and m != n:
        raise TransformError(
            f"svd: the derivative of the full U and Vh of a non-square matrix ({describe(x.aval)}) is not unique "
            "(the extra columns are any basis of a complement); differentiate svd(..., full_matrices=False) instead"
        )
    # (full_matrices of a square matrix: the reduced factors are the full ones)
    s, u, vh = svd_p.bind(x, full_matrices=False, compute_uv=True)
    v = _H(vh)
    if not compute_uv:
        return [s], [_diag_of_product(u, _matmul(t, v))]
    dS = _matmul(_H(u), _matmul(t, v))
    k = s.shape[-1]
    ds = _real(_rd.reduce_sum_p.bind(_mul(dS, _eye(k, x.dtype)), axes=(dS.ndim - 1,)))
    srow = _row(s)
    F = _to(_safe_reciprocal(_mul(_add(srow, _T(srow)), _sub(srow, _T(srow)))), x.dtype)
    srow_c, s_inv = _to(srow, x.dtype), _to(_safe_reciprocal(s), x.dtype)
    dSS, SdS = _mul(srow_c, dS), _mul(_T(srow_c), dS)
    diag_part = _mul(_mul(_scalar(0.5, x.dtype), _sub(dS, _H(dS))), _mul(_row(s_inv), _eye(k, x.dtype)))
    du = _matmul(u, _add(_mul(F, _add(dSS, _H(dSS))), diag_part))
    dv = _matmul(v, _mul(F, _add(SdS, _H(SdS))))
    if m > n:
        du = _add(du, _mul(_sub(_matmul(t, v), _matmul(u, dS)), _row(s_inv)))
    if n > m:
        du_h = _matmul(_H(t), u)
        dv = _add(dv, _mul(_sub(du_h, _matmul(v, _H(dS))), _row(s_inv)))
    return [s, u, vh], [ds, du, _H(dv)]


svd_p.jvp = _svd_jvp


def _eig_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    ans = eig_p.bind(x, **params)
    if type(t) is Zero:
        return ans, [Zero(a.aval) for a in ans]
    raise TransformError(
        f"eig: ember does not differentiate the eigendecomposition of a general matrix ({describe(x.aval)}): "
        "it is forward only. For Hermitian or real symmetric input use ember.numpy.linalg.eigh or eigvalsh "
        "(lax.linalg.eigh), which are differentiable"
    )


eig_p.jvp = _eig_jvp

# --- batching rules ----------------------------------------------------------------------------
# The primitives already map over leading axes: the vmap axis goes in front, and stays there.

for _prim in (svd_p, eigh_p, eig_p):
    batch_leading(_prim)

__all__ = ["eig_p", "eigh_p", "svd_p"]
