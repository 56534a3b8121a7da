"""op_db entries for the spectral family: lax.linalg.svd/eigh/eig, enp.linalg's norms and
decompositions, and ember.scipy.linalg.eigh.

References are NumPy's linalg (np.linalg.svd, eigh, eigvalsh, norm, pinv, lstsq, matrix_rank, cond).
Eigenvectors and singular vectors are unique only up to a sign (a phase, for complex), so the
entries compare them after fixing it the same way on both sides: each column scaled so that its
first entry is real and positive (U and V together, for the SVD). General eigenvectors (eig) are
checked by what defines them: the residual |a v - v w| and unit norms, with the eigenvalues sorted.

A row of the database has one result dtype, so the entries cast real outputs (eigenvalues, singular
values) to the input's dtype; tests/test_linalg_spectral.py checks their own dtypes. Samples are
matrices with well-separated eigenvalues / singular values (random unitary factors around a spread
spectrum), where every derivative exists; degenerate points are tested in test_linalg_spectral.py.
"""

from __future__ import annotations

import math

import numpy as np
from op_db import ALL, BOOL, INTEGER, SIXTY_FOUR_BIT, OpInfo, Sample, make_array, register

import ember.numpy as enp
import ember.scipy.linalg as esl
from ember.lax import linalg as lax_linalg

F32, F64, C64, C128 = (np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
LAPACK = (F32, F64, C64, C128)
LAX_UNSUPPORTED = ("LAPACK's types only: lax.linalg does not promote (ember.numpy.linalg promotes integers), "
                   "and LAPACK has no half-precision routines")  # fmt: skip
ENP_LAPACK = BOOL + INTEGER + LAPACK
HALF_UNSUPPORTED = "half precision: LAPACK (and NumPy's linalg) has no float16/bfloat16 routines"
NONDIFF_EIG = "eig is forward only (differentiating it raises TransformError; eigh is differentiable)"
# float32 LAPACK against a float64 reference: errors grow with the condition of the problem.
TOL = {F32: (5e-5, 5e-5), C64: (5e-5, 5e-5), F64: (1e-11, 1e-11), C128: (1e-11, 1e-11)}


def _lapack_dtype(d) -> np.dtype:
    """enp.linalg's working dtype: integers and bool become the default float."""
    d = np.dtype(d)
    if d.kind in "biu":
        return F64 if d in SIXTY_FOUR_BIT else F32
    return d


def _real_of(d) -> np.dtype:
    return {C64: F32, C128: F64}.get(_lapack_dtype(d), _lapack_dtype(d))


def _complex_of(d) -> np.dtype:
    return C128 if _real_of(d) == F64 else C64


def _norm_dtype(d) -> np.dtype:
    d = np.dtype(d)
    return _real_of(d) if d.kind in "biuc" else d


# --- samples ------------------------------------------------------------------------------------


def _unitary(rng, n: int, complex_: bool) -> np.ndarray:
    z = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0)
    q, r = np.linalg.qr(z)
    return q * (np.diag(r) / np.abs(np.diag(r)))


def _spread(rng, k: int, low: float, high: float) -> np.ndarray:
    """k values in [low, high], at least (high - low) / (2k) apart."""
    grid = np.linspace(low, high, k) if k > 1 else np.array([(low + high) / 2])
    return grid + rng.uniform(-0.25, 0.25, k) * (high - low) / max(k, 2)


def _integer_matrix(rng, shape, d) -> np.ndarray:
    m, n = shape[-2:]
    k = min(m, n)
    out = make_array(rng, shape, d, 0, 2).astype(np.int64)
    out[..., range(k), range(k)] += 4 * np.arange(1, k + 1)  # diagonally dominant, spread spectrum
    return out.astype(d)


def _mat(rng, shape, d) -> np.ndarray:
    """A (stack of) matrices of `shape` with singular values spread over [1, 3] (integers: a
    diagonally dominant matrix; bool: a fixed upper triangle of ones)."""
    d = np.dtype(d)
    *batch, m, n = shape
    if d == np.bool_:  # all ones on and above the diagonal: distinct singular values
        return np.broadcast_to(np.triu(np.ones((m, n), bool)), shape).copy()
    if d.kind in "iu":
        return _integer_matrix(rng, shape, d)
    k = min(m, n)
    out = np.empty(shape, np.complex128 if d.kind == "c" else np.float64)
    for idx in np.ndindex(*batch):
        u, v = _unitary(rng, m, d.kind == "c"), _unitary(rng, n, d.kind == "c")
        out[idx] = (u[:, :k] * _spread(rng, k, 1.0, 3.0)) @ v[:k, :]
    return out.astype(d)


def _herm(rng, shape, d) -> np.ndarray:
    """Hermitian (real symmetric) matrices with eigenvalues spread over [-3, 3] (bool: a path graph's
    adjacency with a loop at its first node, whose eigenvalues differ, also in absolute value)."""
    d = np.dtype(d)
    *batch, n, _ = shape
    if d == np.bool_:
        path = np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
        path[:1, :1] = True
        return np.broadcast_to(path, shape).copy()
    if d.kind in "iu":
        upper = np.triu(make_array(rng, shape, d, 0, 2).astype(np.int64), 1)
        return (upper + np.swapaxes(upper, -1, -2) + np.eye(n, dtype=np.int64) * 4 * np.arange(n)).astype(d)
    out = np.empty(shape, np.complex128 if d.kind == "c" else np.float64)
    for idx in np.ndindex(*batch):
        q = _unitary(rng, n, d.kind == "c")
        out[idx] = (q * _spread(rng, n, -3.0, 3.0)) @ q.conj().T
    return out.astype(d)


def _nonsymmetric(rng, shape, d) -> np.ndarray:
    """A Hermitian matrix with noise above the diagonal: only its lower triangle is Hermitian data."""
    x = _herm(rng, shape, d)
    if np.dtype(d).kind in "fc":
        x = x + np.triu(make_array(rng, shape, d), 1)
    return x


# --- gauge fixing: every column scaled so that its projection on a fixed generic vector is real and
# positive (NumPy and ember alike); unlike a column's first entry, that projection is not zero for the
# sparse integer and bool samples.


def _probe(n: int) -> np.ndarray:
    return 1.0 / (np.arange(n) + 1.618)


def _phase_np(v):
    dot = np.einsum("k,...ki->...i", _probe(v.shape[-2]), v)[..., None, :]
    return dot / np.abs(dot)


def _fix_np(v):
    return v * np.conj(_phase_np(v))


def _fix_svd_np(u, vh):
    p = _phase_np(u)
    return u * np.conj(p), vh * np.swapaxes(p, -1, -2)


def _phase(v):
    dot = enp.sum(v * enp.asarray(_probe(v.shape[-2])).astype(v.dtype)[:, None], axis=-2, keepdims=True)
    return dot / enp.abs(dot).astype(dot.dtype)


def _fix(v):
    return v * enp.conj(_phase(v))


def _fix_svd(u, vh):
    p = _phase(u)
    return u * enp.conj(p), vh * enp.swapaxes(p, -1, -2)


# --- lax.linalg: the primitives ----------------------------------------------------------------------


def _lax_svd(x, **kw):
    if not kw.get("compute_uv", True):
        return [lax_linalg.svd(x, **kw).astype(x.dtype)]
    u, s, vh = lax_linalg.svd(x, **kw)
    u, vh = _fix_svd(u, vh)
    return [s.astype(x.dtype), u, vh]


def _np_svd(x, full_matrices=True, compute_uv=True):
    if not compute_uv:
        return [np.linalg.svd(x, compute_uv=False)]
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    u, vh = _fix_svd_np(u, vh)
    return [s, u, vh]


def _svd_samples(rng, d):
    return [Sample((_mat(rng, (3, 3), d),)),
            Sample((_mat(rng, (4, 2), d),), {"full_matrices": False}),
            Sample((_mat(rng, (2, 2, 4), d),), {"full_matrices": False}),
            Sample((_mat(rng, (2, 3, 5), d),), {"compute_uv": False}),
            Sample((make_array(rng, (0, 3), d),), {"compute_uv": False})]  # fmt: skip


def _lax_eigh(x, **kw):
    v, w = lax_linalg.eigh(x, **kw)
    return [_fix(v), w.astype(x.dtype)]


def _np_eigh(x, lower=True, symmetrize_input=True):
    if symmetrize_input:
        x = (x + np.conj(np.swapaxes(x, -1, -2))) / 2
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return [_fix_np(v), w]


def _eigh_samples(rng, d):
    return [Sample((_herm(rng, (3, 3), d),)),
            Sample((_herm(rng, (2, 4, 4), d),), {"lower": False}),
            Sample((_nonsymmetric(rng, (3, 3), d),), {"symmetrize_input": False}),
            Sample((np.swapaxes(_nonsymmetric(rng, (3, 3), d), -1, -2).conj(),), {"symmetrize_input": False, "lower": False}),
            Sample((make_array(rng, (0, 0), d),)),
            Sample((make_array(rng, (1, 1), d),))]  # fmt: skip


def _eig_checks(x, w, vl, vr):
    """Sorted eigenvalues, the residuals |x vr - vr w| and |vl^H x - w vl^H| (largest), and the columns' norms."""
    order = enp.argsort(w, axis=-1)  # complex: by (real, imag), as np.sort_complex
    xc = enp.asarray(x).astype(w.dtype)
    residual = enp.max(enp.abs(xc @ vr - vr * w[..., None, :]), axis=(-2, -1))
    norms = [enp.linalg.norm(vr, axis=-2)]
    if vl is not None:
        vl_h = enp.conj(enp.swapaxes(vl, -1, -2))
        residual = residual + enp.max(enp.abs(vl_h @ xc - w[..., :, None] * vl_h), axis=(-2, -1))
        norms.append(enp.linalg.norm(vl, axis=-2))
    return [enp.take_along_axis(w, order, axis=-1), residual[..., None].astype(w.dtype),
            enp.concatenate(norms, axis=-1).astype(w.dtype)]  # fmt: skip


def _np_eig_checks(x, left=True):
    w = np.linalg.eigvals(x)
    return [np.sort_complex(w), np.zeros((*x.shape[:-2], 1)), np.ones((*x.shape[:-2], (1 + left) * x.shape[-1]))]


def _eig_samples(rng, d):
    return [
        Sample((_mat(rng, (3, 3), d),)),
        Sample((_mat(rng, (2, 4, 4), d),)),
        Sample((make_array(rng, (2, 2), d, 0.5, 3),)),
    ]


register(
    OpInfo("lax.linalg.symmetrize", lax_linalg.symmetrize, lambda x: (x + np.conj(np.swapaxes(x, -1, -2))) / 2, LAPACK,
           lambda rng, d: [Sample((make_array(rng, (3, 3), d),)), Sample((make_array(rng, (2, 4, 4), d),)),
                           Sample((make_array(rng, (0, 0), d),))],
           LAX_UNSUPPORTED, primitives=("add", "mul", "transpose")),
    OpInfo("lax.linalg.svd", _lax_svd, _np_svd, LAPACK, _svd_samples, LAX_UNSUPPORTED, primitives=("svd",), tol=TOL),
    OpInfo("lax.linalg.eigh", _lax_eigh, _np_eigh, LAPACK, _eigh_samples, LAX_UNSUPPORTED, primitives=("eigh",),
           tol=TOL),
    OpInfo("lax.linalg.eig", lambda x: _eig_checks(x, *lax_linalg.eig(x)), _np_eig_checks, LAPACK, _eig_samples,
           LAX_UNSUPPORTED, primitives=("eig",), out_dtype=_complex_of, tol=TOL, transforms=frozenset({"vmap", "jit"}),
           nondiff=NONDIFF_EIG),
)  # fmt: skip

# --- enp.linalg: decompositions -------------------------------------------------------------------------


def _enp_svd(x, **kw):
    out = enp.linalg.svd(x, **kw)
    if not kw.get("compute_uv", True):
        return [out.astype(_lapack_dtype(x.dtype))]
    u, s, vh = out
    u, vh = _fix_svd(u, vh)
    return [s.astype(u.dtype), u, vh]


def _np_svd_full(x, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return [np.linalg.svd(x, compute_uv=False, hermitian=hermitian)]
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices, hermitian=hermitian)
    u, vh = _fix_svd_np(u, vh)
    return [s, u, vh]


def _enp_svd_samples(rng, d):
    return [Sample((_mat(rng, (3, 3), d),)),
            Sample((_mat(rng, (2, 4, 3), d),), {"full_matrices": False}),
            Sample((_mat(rng, (3, 5), d),), {"compute_uv": False}),
            Sample((_herm(rng, (3, 3), d),), {"hermitian": True}),
            Sample((_herm(rng, (2, 3, 3), d),), {"hermitian": True, "compute_uv": False})]  # fmt: skip


def _enp_eigh(x, **kw):
    w, v = enp.linalg.eigh(x, **kw)
    return [w.astype(v.dtype), _fix(v)]


def _np_eigh_full(x, UPLO="L", symmetrize_input=True):
    w_v = _np_eigh(x, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return [w_v[1], w_v[0]]


def _enp_eigh_samples(rng, d):
    return [Sample((_herm(rng, (3, 3), d),)),
            Sample((_herm(rng, (2, 2, 2), d),), {"UPLO": "U"}),
            Sample((_nonsymmetric(rng, (4, 4), d),), {"symmetrize_input": False}),
            Sample((make_array(rng, (2, 0, 0), d),))]  # fmt: skip


def _np_eigvalsh(x, UPLO="L", symmetrize_input=True):
    return _np_eigh(x, lower=UPLO != "U", symmetrize_input=symmetrize_input)[1]


def _enp_eigvalsh_samples(rng, d):
    return [Sample((_herm(rng, (3, 3), d),)),
            Sample((_herm(rng, (2, 4, 4), d),)),
            Sample((np.swapaxes(_nonsymmetric(rng, (3, 3), d), -1, -2).conj(),), {"UPLO": "U", "symmetrize_input": False}),
            Sample((make_array(rng, (0, 0), d),))]  # fmt: skip


def _scipy_eigh(x, **kw):
    out = esl.eigh(x, **kw)
    if kw.get("eigvals_only"):
        return [out.astype(_lapack_dtype(x.dtype))]
    w, v = out
    return [w.astype(v.dtype), _fix(v)]


def _np_scipy_eigh(x, lower=True, eigvals_only=False):
    v, w = _np_eigh(x, lower=lower)
    return [w] if eigvals_only else [w, v]


def _scipy_eigh_samples(rng, d):
    return [
        Sample((_herm(rng, (3, 3), d),)),
        Sample((_herm(rng, (2, 3, 3), d),), {"eigvals_only": True}),
        Sample((_nonsymmetric(rng, (3, 3), d),), {"lower": False}),
    ]


register(
    OpInfo("enp.linalg.svd", _enp_svd, _np_svd_full, ENP_LAPACK, _enp_svd_samples, HALF_UNSUPPORTED,
           primitives=("svd", "eigh", "sort"), out_dtype=_lapack_dtype, tol=TOL),
    OpInfo("enp.linalg.svdvals", enp.linalg.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), ENP_LAPACK,
           lambda rng, d: [Sample((_mat(rng, (3, 4), d),)), Sample((_mat(rng, (2, 3, 2), d),)),
                           Sample((make_array(rng, (2, 0, 3), d),))],
           HALF_UNSUPPORTED, primitives=("svd",), out_dtype=_real_of, tol=TOL),
    OpInfo("enp.linalg.eigh", _enp_eigh, _np_eigh_full, ENP_LAPACK, _enp_eigh_samples, HALF_UNSUPPORTED,
           primitives=("eigh",), out_dtype=_lapack_dtype, tol=TOL),
    OpInfo("enp.linalg.eigvalsh", enp.linalg.eigvalsh, _np_eigvalsh, ENP_LAPACK, _enp_eigvalsh_samples,
           HALF_UNSUPPORTED, primitives=("eigh",), out_dtype=_real_of, tol=TOL),
    OpInfo("enp.linalg.eig", lambda x: _eig_checks(x, *enp.linalg.eig(x)[:1], None, enp.linalg.eig(x)[1]),
           lambda x: _np_eig_checks(x, left=False), ENP_LAPACK, _eig_samples, HALF_UNSUPPORTED, primitives=("eig",),
           out_dtype=_complex_of, tol=TOL, transforms=frozenset({"vmap", "jit"}), nondiff=NONDIFF_EIG),
    OpInfo("enp.linalg.eigvals", lambda x: [enp.sort(enp.linalg.eigvals(x), axis=-1)],
           lambda x: [np.sort_complex(np.linalg.eigvals(x))], ENP_LAPACK, _eig_samples, HALF_UNSUPPORTED, primitives=("eig",),
           out_dtype=_complex_of, tol=TOL, transforms=frozenset({"vmap", "jit"}), nondiff=NONDIFF_EIG),
    OpInfo("scipy.linalg.eigh", _scipy_eigh, _np_scipy_eigh, ENP_LAPACK, _scipy_eigh_samples, HALF_UNSUPPORTED,
           primitives=("eigh",), out_dtype=_lapack_dtype, tol=TOL),
)  # fmt: skip

# --- enp.linalg: norms ---------------------------------------------------------------------------------

INF = math.inf
_VECTOR_ORDS = [None, INF, -INF, 0, 1, -1, 2, -2, 3, 0.5]
_MATRIX_ORDS = [None, "fro", "nuc", INF, -INF, 1, -1, 2, -2]


def _values(rng, shape, d) -> np.ndarray:
    """Random entries away from 0 (where |x| and the p-norms of p < 1 have no derivative)."""
    d = np.dtype(d)
    x = make_array(rng, shape, d, 0.5, 3)
    if d.kind in "fcV" or d == np.dtype(np.int8) or d.kind == "i":
        sign = np.where(rng.random(shape) < 0.5, -1, 1)
        x = (x.astype(np.complex128 if d.kind == "c" else np.float64) * sign).astype(d) if d.kind != "b" else x
    return x


def _norm_samples(rng, d):
    out = [Sample((_values(rng, (5,), d),)),
           Sample((_values(rng, (2, 3, 4), d),), {"keepdims": True}),
           Sample((make_array(rng, (0,), d),)),
           Sample((make_array(rng, (), d, 0.5, 3),))]  # fmt: skip
    for i, ord in enumerate(_VECTOR_ORDS):
        shape, axis = [((3, 4), 1), ((4,), None), ((2, 3, 2), -3), ((3, 2), (0,))][i % 4]
        out.append(Sample((_values(rng, shape, d),), {"ord": ord, "axis": axis, "keepdims": i % 3 == 0}))
    for i, ord in enumerate(_MATRIX_ORDS):
        shape, axis = [((3, 4), None), ((2, 3, 4), (2, 0)), ((4, 3, 2), (-2, -1)), ((3, 3), (1, 0))][i % 4]
        out.append(Sample((_mat(rng, shape, d) if d.kind in "biu" else _values(rng, shape, d),),
                          {"ord": ord, "axis": axis, "keepdims": i % 2 == 1}))  # fmt: skip
    return out


def _np_norm(x, ord=None, axis=None, keepdims=False):
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    return np.linalg.norm(x, ord, axis, keepdims)


def _vector_norm_samples(rng, d):
    return [Sample((_values(rng, (2, 3, 4), d),)),
            Sample((_values(rng, (2, 3, 4), d),), {"axis": (0, 2), "ord": 3}),
            Sample((_values(rng, (3, 4), d),), {"axis": 1, "ord": INF, "keepdims": True}),
            Sample((_values(rng, (3, 4), d),), {"axis": (-1, 0), "ord": 1}),
            Sample((_values(rng, (4,), d),), {"ord": 0}),
            Sample((_values(rng, (2, 3), d),), {"ord": -INF, "keepdims": True})]  # fmt: skip


def _np_vector_norm(x, axis=None, keepdims=False, ord=2):
    return np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


def _matrix_norm_samples(rng, d):
    return [Sample((_mat(rng, (2, 3, 4), d),)),
            Sample((_mat(rng, (3, 3), d),), {"ord": "nuc", "keepdims": True}),
            Sample((_mat(rng, (2, 4, 3), d),), {"ord": 2}),
            Sample((_mat(rng, (3, 2), d),), {"ord": -2}),
            Sample((_mat(rng, (2, 3, 3), d),), {"ord": -1}),
            Sample((_mat(rng, (3, 4), d),), {"ord": INF})]  # fmt: skip


def _nonzero_norms(samples):
    """The samples whose norm is not 0 (the 2-norm has no derivative at 0, as sqrt has none)."""
    return lambda rng, d: [s for s in samples(rng, d) if s.args[0].size]


register(
    OpInfo("enp.linalg.norm", enp.linalg.norm, _np_norm, ALL, _norm_samples, "", primitives=("svd",),
           out_dtype=_norm_dtype, tol={**TOL, np.dtype(np.float16): (4e-3, 4e-3)},
           ad_samples=_nonzero_norms(_norm_samples)),
    OpInfo("enp.linalg.vector_norm", enp.linalg.vector_norm, _np_vector_norm, ALL, _vector_norm_samples, "",
           out_dtype=_norm_dtype, tol={**TOL, np.dtype(np.float16): (4e-3, 4e-3)}),
    OpInfo("enp.linalg.matrix_norm", enp.linalg.matrix_norm,
           lambda x, keepdims=False, ord="fro": np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord), ALL,
           _matrix_norm_samples, "", primitives=("svd",), out_dtype=_norm_dtype,
           tol={**TOL, np.dtype(np.float16): (4e-3, 4e-3)}),
)  # fmt: skip

# --- enp.linalg: pinv, matrix_rank, lstsq, cond ------------------------------------------------------------


def _rank_deficient(rng, shape, d) -> np.ndarray:
    """A well-conditioned matrix whose second column is zero (rank min(M, N) - 1, exactly)."""
    x = _mat(rng, shape, d)
    x[..., 1] = 0
    return x


def _pinv_samples(rng, d):
    rows = 3 if d == np.bool_ else 4
    return [Sample((_mat(rng, (3, rows), d),)),
            Sample((_mat(rng, (2, rows, 3), d),), {"rtol": None}),
            Sample((_herm(rng, (3, 3), d),), {"hermitian": True}),
            Sample((_mat(rng, (2, 3, 3), d), np.array([1e-15, 1e-6]))),
            Sample((_rank_deficient(rng, (4, 3), d),), {"rcond": 1e-4}),
            Sample((make_array(rng, (0, 3), d),))]  # fmt: skip


def _np_pinv(x, rcond=None, hermitian=False, rtol="unset"):
    x = x.astype(np.float64) if x.dtype.kind in "biu" else x  # NumPy's rtol=None needs an inexact dtype
    return np.linalg.pinv(x, rcond, hermitian) if rtol == "unset" else np.linalg.pinv(x, hermitian=hermitian, rtol=rtol)


def _ad_full_rank(samples):
    return lambda rng, d: [s for s in samples(rng, d) if "rcond" not in s.kwargs]


def _rank_samples(rng, d):
    return [Sample((_mat(rng, (3, 4), d),)),
            Sample((_rank_deficient(rng, (2, 4, 3), d),)),
            Sample((_herm(rng, (3, 3), d),), {"hermitian": True}),
            Sample((_mat(rng, (3, 3), d),), {"tol": 0.5}),
            Sample((_mat(rng, (3, 3), d),), {"rtol": 0.9}),
            Sample((make_array(rng, (4,), d, 1, 3),)),
            Sample((np.zeros((3,), d),))]  # fmt: skip


def _lstsq(a, b, **kw):
    dtype = enp.result_type(_lapack_dtype(a.dtype), _lapack_dtype(b.dtype))
    return [o.astype(dtype) for o in enp.linalg.lstsq(a, b, **kw)]


def _np_lstsq(a, b, rcond=None):
    x, resid, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    if resid.size == 0:  # NumPy leaves out the residuals where rank < N or M <= N; ember computes them
        resid = np.sum(np.abs(b.reshape(b.shape[0], -1) - a @ x.reshape(a.shape[1], -1)) ** 2, axis=0)
    return [x, resid, rank, s]


def _lstsq_samples(rng, d):
    return [Sample((_mat(rng, (5, 3), d), _mat(rng, (5, 2), d))),
            Sample((_mat(rng, (4, 3), d), make_array(rng, (4,), d))),
            Sample((_mat(rng, (3, 4), d), _mat(rng, (3, 2), d))),
            Sample((_rank_deficient(rng, (5, 3), d), make_array(rng, (5,), d)), {"rcond": 1e-4})]  # fmt: skip


def _cond_samples(rng, d):
    return [Sample((_mat(rng, (3, 3), d), p)) for p in (None, 2, -2, "fro", "nuc", 1, -1, INF, -INF)] + [
        Sample((_mat(rng, (2, 3, 4), d),)),
        Sample((_mat(rng, (4, 2), d), -2)),
    ]


register(
    OpInfo("enp.linalg.pinv", enp.linalg.pinv, _np_pinv, ENP_LAPACK, _pinv_samples, HALF_UNSUPPORTED,
           primitives=("svd", "eigh"), out_dtype=_lapack_dtype, tol=TOL,
           ad_samples=_ad_full_rank(_pinv_samples)),
    OpInfo("enp.linalg.matrix_rank", enp.linalg.matrix_rank, np.linalg.matrix_rank, ENP_LAPACK, _rank_samples,
           HALF_UNSUPPORTED, primitives=("svd", "eigh"),
           out_dtype=lambda d: np.dtype(np.int64) if np.dtype(d) in SIXTY_FOUR_BIT else np.dtype(np.int32),
           transforms=frozenset({"vmap", "jit"}), nondiff="an integer count: no tangent space"),
    OpInfo("enp.linalg.lstsq", _lstsq, _np_lstsq, ENP_LAPACK, _lstsq_samples, HALF_UNSUPPORTED, primitives=("svd",),
           out_dtype=_lapack_dtype, tol=TOL, ad_samples=_ad_full_rank(_lstsq_samples)),
    OpInfo("enp.linalg.cond", enp.linalg.cond, np.linalg.cond, ENP_LAPACK, _cond_samples, HALF_UNSUPPORTED,
           primitives=("svd",), out_dtype=_real_of, tol=TOL),
)  # fmt: skip
