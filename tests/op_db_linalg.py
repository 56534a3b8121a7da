"""op_db entries for the factorisation family: lax.linalg's cholesky, triangular_solve, lu, qr (and their
primitives), enp.linalg's solves, inverses and determinants with the array API's linalg names, and
ember.scipy.linalg's factor/solve pairs, expm and block_diag.

References are NumPy's (np.linalg), SciPy's (scipy.linalg.expm, block_diag) or a few lines of NumPy
written here (a textbook LU with partial pivoting, triangular solves through explicit triangles).
Matrices that must be positive definite or well conditioned are made so inside the entry (a @ a^H + n I,
a shifted diagonal), on both sides, so that every column, whose samples are rearranged or perturbed
copies of random values, stays in the function's domain. Entries whose outputs have different dtypes
(lu's pivots, slogdet's real logabsdet of a complex matrix) are split in two.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sl
from op_db import (
    ALL,
    BF16,
    BOOL,
    INTEGER,
    SUM_TOLERANCES,
    OpInfo,
    Sample,
    make_array,
    register,
    sum_dtype,
    to_float,
    to_real,
)

import ember.numpy as enp
import ember.scipy.linalg as esl
from ember import lax

F16 = np.dtype(np.float16)
INT32 = np.dtype(np.int32)
LAPACK = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
PROMOTED = BOOL + INTEGER + LAPACK  # enp.linalg computes integers and bool in the default float dtype
NO_HALF = "LAPACK has no float16/bfloat16 (as JAX on CPU); convert to float32"
LAX_ONLY = "lax.linalg does not promote: float32, float64, complex64 and complex128 only (LAPACK's types)"
INT32_ONLY = "pivots are int32, as lax.linalg.lu returns them"
# float32 against a float64 reference: a factorisation's rounding grows with n and the condition number.
TOL = {np.dtype(np.float32): (2e-5, 2e-5), np.dtype(np.complex64): (2e-5, 2e-5),
       np.dtype(np.float64): (1e-11, 1e-12), np.dtype(np.complex128): (1e-11, 1e-12)}  # fmt: skip
SQUARE = [(3, 3), (2, 4, 4), (1, 1), (0, 2, 2)]


def _matrices(shapes):
    def make(rng, d):
        return [Sample((make_array(rng, s, d),)) for s in shapes]

    return make


# --- helpers shared by op and reference --------------------------------------------------------------


def _mh(x):
    xt = np.swapaxes(x, -1, -2) if isinstance(x, np.ndarray) else x.mT
    return xt.conj() if np.dtype(xt.dtype).kind == "c" else xt


def _spd(x):
    """A Hermitian positive-definite matrix from any square x (NumPy or ember)."""
    n = x.shape[-1]
    eye = np.eye(n) if isinstance(x, np.ndarray) else enp.eye(n, dtype=x.dtype)
    return x @ _mh(x) + n * eye


def _shifted(x, by=5.0):
    """x with `by` added to its diagonal: well conditioned for entries in [-3, 3)."""
    n = x.shape[-1]
    eye = np.eye(n) if isinstance(x, np.ndarray) else enp.eye(n, dtype=x.dtype)
    return x + by * eye


def _lu_ref(a):
    """(lu, pivots, permutation) by a textbook LU with partial pivoting (LAPACK's choice: largest |re| + |im|)."""
    a = np.array(a, dtype=np.result_type(a.dtype, np.float64))
    *batch, m, n = a.shape
    k = min(m, n)
    flat = a.reshape(int(np.prod(batch)), m, n)
    pivots = np.zeros((flat.shape[0], k), np.int32)
    perms = np.tile(np.arange(m, dtype=np.int32), (flat.shape[0], 1))
    for b, x in enumerate(flat):
        for j in range(k):
            p = j + int(np.argmax(np.abs(x[j:, j].real) + np.abs(x[j:, j].imag)))
            pivots[b, j] = p
            x[[j, p]] = x[[p, j]]
            perms[b, [j, p]] = perms[b, [p, j]]
            if x[j, j] != 0:
                x[j + 1 :, j] /= x[j, j]
            x[j + 1 :, j + 1 :] -= np.outer(x[j + 1 :, j], x[j, j + 1 :])
    return flat.reshape(a.shape), pivots.reshape(*batch, k), perms.reshape(*batch, m)


def _explicit_triangle(a, lower, unit_diagonal):
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1
    return t


# --- lax.linalg -------------------------------------------------------------------------------------------


def _tsolve_samples(rng, d):
    out = []
    for kw in ({"left_side": True, "lower": True}, {"left_side": True, "lower": False, "transpose_a": True},
               {"left_side": False, "lower": True, "conjugate_a": True, "transpose_a": True},
               {"left_side": False, "lower": False, "unit_diagonal": True}):  # fmt: skip
        left = kw["left_side"]
        out.append(Sample((make_array(rng, (2, 3, 3), d), make_array(rng, (2, 3, 2) if left else (2, 2, 3), d)), kw))
    out.append(Sample((make_array(rng, (4, 4), d), make_array(rng, (4,), d)), {"left_side": True, "lower": True}))
    out.append(Sample((make_array(rng, (0, 2, 2), d), make_array(rng, (0, 2, 1), d)), {"left_side": True}))
    return out


def _tsolve_op(a, b, **kw):
    return lax.linalg.triangular_solve(_shifted(enp.asarray(a)), b, **kw)


def _tsolve_ref(a, b, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False):
    t = _explicit_triangle(_shifted(a), lower, unit_diagonal)
    t = t.conj() if conjugate_a else t
    t = np.swapaxes(t, -1, -2) if transpose_a else t
    if b.ndim == a.ndim - 1:
        return np.linalg.solve(t, b[..., None])[..., 0] if left_side else np.linalg.solve(np.swapaxes(t, -1, -2), b[..., None])[..., 0]
    if left_side:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _rect_samples(rng, d):
    return [Sample((make_array(rng, s, d),)) for s in [(3, 3), (2, 4, 3), (3, 5), (1, 1), (0, 2, 2)]]


def _qr_samples(rng, d):
    shapes = [((3, 3), True), ((2, 4, 3), False), ((4, 2), True), ((2, 5), False), ((3, 4), True), ((0, 2, 2), False)]
    return [Sample((make_array(rng, s, d),), {"full_matrices": f}) for s, f in shapes]


def _qr_ad_samples(rng, d):  # the complete QR of a tall matrix has no unique derivative (its extra columns)
    return [s for s in _qr_samples(rng, d) if not (s.kwargs["full_matrices"] and s.args[0].shape[-2] > s.args[0].shape[-1])]


def _qr_ref(a, full_matrices=True):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return q, r


def _pivot_samples(rng, d):
    return [Sample((rng.integers(0, 4, (3,)).astype(d), 4)), Sample((rng.integers(0, 3, (2, 3)).astype(d), 3)),
            Sample((np.zeros((2, 0), d), 2))]  # fmt: skip


def _pivot_ref(pivots, size):
    flat = pivots.reshape(int(np.prod(pivots.shape[:-1])), pivots.shape[-1])
    out = np.tile(np.arange(size, dtype=np.int32), (flat.shape[0], 1))
    for row, piv in zip(out, flat):
        for i, p in enumerate(piv):
            row[[i, p]] = row[[p, i]]
    return out.reshape(*pivots.shape[:-1], size)


register(
    OpInfo("lax.linalg.cholesky", lambda a, **k: lax.linalg.cholesky(_spd(enp.asarray(a)), **k),
           lambda a, **k: np.linalg.cholesky(_spd(a)), LAPACK, _matrices(SQUARE), LAX_ONLY, primitives=("cholesky",),
           tol=TOL),
    OpInfo("lax.linalg.triangular_solve", _tsolve_op, _tsolve_ref, LAPACK, _tsolve_samples, LAX_ONLY,
           primitives=("triangular_solve",), tol=TOL),
    OpInfo("lax.linalg.lu", lambda a: lax.linalg.lu(a)[0], lambda a: _lu_ref(a)[0], LAPACK, _rect_samples, LAX_ONLY,
           primitives=("lu",), tol=TOL),
    OpInfo("lax.linalg.lu[pivots]", lambda a: lax.linalg.lu(a)[1:], lambda a: _lu_ref(a)[1:], LAPACK, _rect_samples,
           LAX_ONLY, primitives=("lu",), out_dtype=lambda d: INT32, transforms=frozenset({"vmap", "jit"}),
           nondiff="integer pivots and permutation"),
    OpInfo("lax.linalg.lu_pivots_to_permutation", lambda p, n: lax.linalg.lu_pivots_to_permutation(p, n), _pivot_ref,
           (INT32,), _pivot_samples, INT32_ONLY, primitives=("lu_pivots_to_permutation",), ref_in_dtype=True,
           transforms=frozenset({"vmap", "jit"}), nondiff="an integer permutation"),
    OpInfo("lax.linalg.qr", lambda a, **k: lax.linalg.qr(a, **k), _qr_ref, LAPACK, _qr_samples, LAX_ONLY,
           primitives=("qr",), tol=TOL, ad_samples=_qr_ad_samples),
)  # fmt: skip

# --- enp.linalg ------------------------------------------------------------------------------------------


def _invertible(rng, shape, d):
    """Random matrices that are invertible in every dtype: a dominant diagonal (bool: unit lower triangular)."""
    d = np.dtype(d)
    n = shape[-1]
    if d == np.bool_:
        return np.tril(rng.random(shape) < 0.5, -1) | np.eye(n, dtype=bool)
    if d.kind in "iu":
        x = rng.integers(0 if d.kind == "u" else -3, 4, shape)
        return (x + 12 * np.eye(n, dtype=np.int64)).astype(d)
    return (make_array(rng, shape, d) + 6 * np.eye(n)).astype(d)


def _inv_samples(rng, d):
    return [Sample((_invertible(rng, s, d),)) for s in SQUARE]


def _solve_samples(rng, d):
    pairs = [((3, 3), (3,)), ((2, 3, 3), (2, 3, 2)), ((3, 3), (2, 3, 1)), ((2, 2, 2), (2,)), ((0, 2, 2), (0, 2, 1))]
    return [Sample((_invertible(rng, a, d), make_array(rng, b, d))) for a, b in pairs]


def _pivoting(rng, shape, d):
    """Matrices that need row swaps and may have negative determinants, yet are well conditioned (float
    rounding of det stays near eps): Q diag(+-[0.5, 2]) for a random unitary Q. Integers: random entries."""
    if np.dtype(d).kind not in "fc":
        return make_array(rng, shape, d)
    z = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(d).kind == "c" else 0)
    q = np.linalg.qr(z)[0]
    scale = rng.uniform(0.5, 2.0, shape[:-1]) * rng.choice([-1.0, 1.0], shape[:-1])
    return (q * scale[..., None, :]).astype(d)


def _det_samples(rng, d):
    out = [Sample((_invertible(rng, s, d),)) for s in SQUARE]
    out.append(Sample((_pivoting(rng, (2, 3, 3), d),)))
    if np.dtype(d) != np.bool_:
        out.append(Sample((np.zeros((3, 3), d),)))  # singular: 0, and (0, -inf) for slogdet
    return out


def _det_ad_samples(rng, d):  # det is a polynomial: its derivative (the adjugate) is finite at singular matrices too
    singular = np.arange(1.0, 10.0).reshape(3, 3).astype(d)  # rank 2
    return [Sample((_invertible(rng, s, d),)) for s in SQUARE[:3]] + [Sample((_pivoting(rng, (2, 3, 3), d),)),
                                                                       Sample((singular,))]


def _slogdet_ad_samples(rng, d):  # log |det| is smooth where det != 0
    return [Sample((_invertible(rng, s, d),)) for s in SQUARE[:3]]


def _power_samples(rng, d):
    small = np.dtype(d).kind in "biu"
    make = (lambda s: make_array(rng, s, d, -2, 3)) if small else (lambda s: _invertible(rng, s, d) / 6)
    out = [Sample((make((3, 3)), 0)), Sample((make((2, 3, 3)), 1)), Sample((make((3, 3)), 3)), Sample((make((2, 2)), 2))]
    if np.dtype(d) in LAPACK:
        out.append(Sample((make((3, 3)), -2)))
    return out


def _ref_power(a, n):
    return np.linalg.matrix_power(a, n)


def _cross_samples(rng, d):
    return [Sample((make_array(rng, (3,), d), make_array(rng, (3,), d))),
            Sample((make_array(rng, (2, 3), d), make_array(rng, (3,), d))),
            Sample((make_array(rng, (3, 2), d), make_array(rng, (1, 3, 2), d)), {"axis": -2})]  # fmt: skip


def _multi_dot_samples(rng, d):
    def chain(*shapes):
        return Sample(([make_array(rng, s, d, -2, 3) for s in shapes],))

    return [chain((2, 3), (3, 4), (4, 2)), chain((3,), (3, 5), (5, 2), (2,)), chain((4, 1), (1, 3)),
            chain((2,), (2, 3), (3, 3), (3, 2))]  # fmt: skip


def _two_matrices(rng, d):
    return [Sample((_small(rng, (2, 3), d), _small(rng, (3, 4), d))), Sample((_small(rng, (2, 2, 3), d), _small(rng, (3,), d))),
            Sample((_small(rng, (0, 3), d), _small(rng, (3, 2), d)))]  # fmt: skip


def _float_of(d):
    return to_float(d) if np.dtype(d).kind in "biu" else np.dtype(d)


def _power_dtype(d, sample):
    return _float_of(d) if sample.args[1] < 0 else np.dtype(d)


def _small(rng, shape, d):
    """Entries in [-2, 3): integer matrices' products (a @ a^H + n I) stay in every integer dtype."""
    return make_array(rng, shape, d, -2, 3)


register(
    OpInfo("enp.linalg.inv", lambda a: enp.linalg.inv(a), np.linalg.inv, PROMOTED, _inv_samples, NO_HALF,
           primitives=("inv",), out_dtype=_float_of, tol=TOL),
    OpInfo("enp.linalg.solve", lambda a, b: enp.linalg.solve(a, b), np.linalg.solve, PROMOTED, _solve_samples, NO_HALF,
           primitives=("solve",), out_dtype=_float_of, tol=TOL),
    OpInfo("enp.linalg.det", lambda a: enp.linalg.det(a), np.linalg.det, PROMOTED, _det_samples, NO_HALF,
           primitives=("lu",), out_dtype=_float_of, tol=TOL, ad_samples=_det_ad_samples),
    OpInfo("enp.linalg.slogdet", lambda a: enp.linalg.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1],
           PROMOTED, _det_samples, NO_HALF, primitives=("lu",), out_dtype=lambda d: to_real(_float_of(d)), tol=TOL,
           ad_samples=_slogdet_ad_samples),
    OpInfo("enp.linalg.slogdet[sign]", lambda a: enp.linalg.slogdet(a).sign, lambda a: np.linalg.slogdet(a)[0],
           PROMOTED, _det_samples, NO_HALF, primitives=("lu",), out_dtype=_float_of, tol=TOL,
           ad_samples=_slogdet_ad_samples),
    OpInfo("enp.linalg.cholesky", lambda a, **k: enp.linalg.cholesky(_spd(enp.asarray(a)), **k),
           lambda a, upper=False: np.linalg.cholesky(_spd(a), upper=upper), PROMOTED,
           lambda rng, d: [Sample((_small(rng, s, d),), {"upper": u}) for s, u in zip(SQUARE, (False, True, False, True))],
           NO_HALF, primitives=("cholesky",), out_dtype=_float_of, tol=TOL),
    OpInfo("enp.linalg.qr", lambda a, **k: enp.linalg.qr(a, **k), lambda a, mode="reduced": np.linalg.qr(a, mode=mode),
           PROMOTED, lambda rng, d: [Sample((make_array(rng, s, d),), {"mode": m}) for s, m in
                                     [((3, 3), "reduced"), ((2, 4, 3), "reduced"), ((3, 2), "r"), ((2, 3), "complete"),
                                      ((4, 2), "complete"), ((0, 2, 2), "reduced")]],
           NO_HALF, primitives=("qr",), out_dtype=_float_of, tol=TOL,
           ad_samples=lambda rng, d: [Sample((make_array(rng, s, d),), {"mode": m}) for s, m in
                                      [((3, 3), "reduced"), ((2, 4, 3), "reduced"), ((3, 2), "r"), ((2, 3), "complete")]]),
    OpInfo("enp.linalg.matrix_power", lambda a, n: enp.linalg.matrix_power(a, n), _ref_power, ALL, _power_samples, "",
           primitives=("dot_general", "inv"), out_dtype_of=_power_dtype, tol=TOL, ad_unsupported={F16: "rounding", BF16: "rounding"}),
    OpInfo("enp.linalg.cross", lambda a, b, **k: enp.linalg.cross(a, b, **k), lambda a, b, **k: np.linalg.cross(a, b, **k),
           INTEGER + LAPACK + (F16, BF16), _cross_samples, "bool has no subtraction (NumPy's cross raises too)",
           primitives=("mul", "sub")),
    OpInfo("enp.linalg.outer", lambda a, b: enp.linalg.outer(a, b), np.outer, ALL,
           lambda rng, d: [Sample((make_array(rng, (3,), d), make_array(rng, (2,), d))),
                           Sample((make_array(rng, (0,), d), make_array(rng, (2,), d)))], "", primitives=("mul",)),
    OpInfo("enp.linalg.multi_dot", lambda xs: enp.linalg.multi_dot(xs), np.linalg.multi_dot, ALL, _multi_dot_samples,
           "", primitives=("dot_general",), tol=SUM_TOLERANCES),
    OpInfo("enp.linalg.tensordot", lambda a, b, **k: enp.linalg.tensordot(a, b, **k), np.tensordot, ALL,
           lambda rng, d: [Sample((_small(rng, (2, 3), d), _small(rng, (3, 4), d)), {"axes": 1}),
                           Sample((_small(rng, (2, 3, 4), d), _small(rng, (3, 4), d)))],
           "", primitives=("dot_general",), tol=SUM_TOLERANCES),
    OpInfo("enp.linalg.matmul", lambda a, b: enp.linalg.matmul(a, b), np.matmul, ALL, _two_matrices, "",
           primitives=("dot_general",), tol=SUM_TOLERANCES),
    OpInfo("enp.linalg.vecdot", lambda a, b, **k: enp.linalg.vecdot(a, b, **k), lambda a, b, axis=-1: np.linalg.vecdot(a, b, axis=axis),
           ALL, lambda rng, d: [Sample((_small(rng, (2, 3), d), _small(rng, (3,), d))),
                                Sample((_small(rng, (3, 2), d), _small(rng, (3, 2), d)), {"axis": 0})],
           "", primitives=("dot_general",), tol=SUM_TOLERANCES),
    OpInfo("enp.linalg.matrix_transpose", lambda a: enp.linalg.matrix_transpose(a), np.linalg.matrix_transpose, ALL,
           _matrices([(2, 3), (2, 1, 4), (0, 2)]), "", primitives=("transpose",)),
    OpInfo("enp.linalg.trace", lambda a, **k: enp.linalg.trace(a, **k), lambda a, offset=0: np.linalg.trace(a, offset=offset),
           ALL, lambda rng, d: [Sample((_small(rng, (3, 3), d),)), Sample((_small(rng, (2, 3, 4), d),), {"offset": 1})],
           "", primitives=("gather", "reduce_sum"), out_dtype=sum_dtype, tol=SUM_TOLERANCES),
    OpInfo("enp.linalg.diagonal", lambda a, **k: enp.linalg.diagonal(a, **k),
           lambda a, offset=0: np.linalg.diagonal(a, offset=offset), ALL,
           lambda rng, d: [Sample((make_array(rng, (3, 3), d),)), Sample((make_array(rng, (2, 3, 4), d),), {"offset": -1})],
           "", primitives=("gather",)),
    OpInfo("enp.linalg.tensorinv", lambda a, **k: enp.linalg.tensorinv(a, **k), lambda a, ind=2: np.linalg.tensorinv(a, ind=ind),
           PROMOTED, lambda rng, d: [Sample((_invertible(rng, (6, 6), d).reshape(6, 2, 3),), {"ind": 1}),
                                     Sample((_invertible(rng, (4, 4), d).reshape(2, 2, 2, 2),))],
           NO_HALF, primitives=("inv",), out_dtype=_float_of, tol=TOL),
    OpInfo("enp.linalg.tensorsolve", lambda a, b, **k: enp.linalg.tensorsolve(a, b, **k), np.linalg.tensorsolve, PROMOTED,
           lambda rng, d: [Sample((_invertible(rng, (6, 6), d).reshape(6, 2, 3), make_array(rng, (6,), d))),
                           Sample((_invertible(rng, (6, 6), d).reshape(2, 3, 6), make_array(rng, (2, 3), d))),
                           Sample((_invertible(rng, (6, 6), d).reshape(6, 3, 2), make_array(rng, (6,), d)), {"axes": (1,)})],
           NO_HALF, primitives=("solve",), out_dtype=_float_of, tol=TOL),
)  # fmt: skip

# --- ember.scipy.linalg -------------------------------------------------------------------------------------


def _st_samples(rng, d):
    return [Sample((_small(rng, (3, 3), d), make_array(rng, (3,), d)), {"lower": True}),
            Sample((_small(rng, (2, 3, 3), d), make_array(rng, (2, 3, 2), d)), {"trans": "T"}),
            Sample((_small(rng, (3, 3), d), make_array(rng, (3, 2), d)), {"trans": 2, "lower": True, "unit_diagonal": True}),
            Sample((_small(rng, (3, 3), d), make_array(rng, (2, 3, 1), d)), {"trans": 0})]  # fmt: skip


def _st_ref(a, b, trans=0, lower=False, unit_diagonal=False):
    t = _explicit_triangle(_shifted(a), lower, unit_diagonal)
    t = {0: t, "T": np.swapaxes(t, -1, -2), 2: _mh(t)}[trans]
    return np.linalg.solve(t, b[..., None])[..., 0] if b.ndim == 1 else np.linalg.solve(t, b)


def _cho_samples(rng, d):
    return [Sample((_small(rng, (3, 3), d), make_array(rng, (3,), d)), {"lower": True}),
            Sample((_small(rng, (2, 3, 3), d), make_array(rng, (2, 3, 2), d)), {"lower": False})]  # fmt: skip


def _lu_solve_samples(rng, d):
    return [Sample((make_array(rng, (3, 3), d), make_array(rng, (3,), d)), {"trans": 0}),
            Sample((make_array(rng, (2, 3, 3), d), make_array(rng, (2, 3, 2), d)), {"trans": 1}),
            Sample((make_array(rng, (4, 4), d), make_array(rng, (4, 2), d)), {"trans": 2})]  # fmt: skip


def _lu_solve_ref(a, b, trans=0):
    m = {0: a, 1: np.swapaxes(a, -1, -2), 2: _mh(a)}[trans]
    return np.linalg.solve(m, b[..., None])[..., 0] if b.ndim == 1 else np.linalg.solve(m, b)


def _expm_samples(rng, d):
    return [Sample((make_array(rng, (3, 3), d, -0.5, 0.5),)), Sample((make_array(rng, (2, 4, 4), d),)),
            Sample((make_array(rng, (2, 2), d, -20, 20),)), Sample((np.zeros((3, 3), d),)),
            Sample((make_array(rng, (3, 3), d),), {"upper_triangular": True}),
            Sample((make_array(rng, (0, 2, 2), d),))]  # fmt: skip


def _expm_ref(a, upper_triangular=False):
    a = np.triu(a) if upper_triangular else a
    return np.stack([sl.expm(m) for m in a.reshape(-1, *a.shape[-2:])]).reshape(a.shape) if a.size else a


def _block_samples(rng, d):
    return [Sample((make_array(rng, (2, 2), d), make_array(rng, (), d), make_array(rng, (3,), d))),
            Sample((make_array(rng, (1, 3), d), make_array(rng, (2, 0), d))), Sample((make_array(rng, (2, 3), d),))]


register(
    OpInfo("scipy.linalg.solve_triangular", lambda a, b, **k: esl.solve_triangular(_shifted(enp.asarray(a)), b, **k),
           _st_ref, PROMOTED, _st_samples, NO_HALF, primitives=("triangular_solve",), out_dtype=_float_of, tol=TOL),
    OpInfo("scipy.linalg.cho_factor", lambda a, **k: esl.cho_factor(_spd(enp.asarray(a)), **k)[0],
           lambda a, lower=False: np.linalg.cholesky(_spd(a)) if lower else _mh(np.linalg.cholesky(_spd(a))),
           PROMOTED, lambda rng, d: [Sample((_small(rng, s, d),), {"lower": lo}) for s, lo in [((3, 3), True), ((2, 4, 4), False)]],
           NO_HALF, primitives=("cholesky",), out_dtype=_float_of, tol=TOL),
    OpInfo("scipy.linalg.cho_solve", lambda a, b, lower: esl.cho_solve(esl.cho_factor(_spd(enp.asarray(a)), lower), b),
           lambda a, b, lower: np.linalg.solve(_spd(a), b[..., None])[..., 0] if b.ndim == 1 else np.linalg.solve(_spd(a), b),
           PROMOTED, _cho_samples, NO_HALF, primitives=("cholesky", "triangular_solve"), out_dtype=_float_of, tol=TOL),
    OpInfo("scipy.linalg.lu_factor", lambda a: esl.lu_factor(a)[0], lambda a: _lu_ref(a)[0], PROMOTED,
           lambda rng, d: [Sample((_invertible(rng, s, d),)) for s in SQUARE], NO_HALF, primitives=("lu",),
           out_dtype=_float_of, tol=TOL),
    OpInfo("scipy.linalg.lu_factor[piv]", lambda a: esl.lu_factor(a)[1], lambda a: _lu_ref(a)[1], PROMOTED,
           lambda rng, d: [Sample((make_array(rng, s, d),)) for s in SQUARE], NO_HALF, primitives=("lu",),
           out_dtype=lambda d: INT32, transforms=frozenset({"vmap", "jit"}), nondiff="integer pivots"),
    OpInfo("scipy.linalg.lu_solve", lambda a, b, **k: esl.lu_solve(esl.lu_factor(_shifted(enp.asarray(a))), b, **k),
           lambda a, b, trans=0: _lu_solve_ref(_shifted(a), b, trans), PROMOTED, _lu_solve_samples, NO_HALF,
           primitives=("lu", "lu_pivots_to_permutation", "triangular_solve"), out_dtype=_float_of, tol=TOL),
    # upper_triangular reads the upper triangle only where it solves: the entry keeps its input triangular.
    OpInfo("scipy.linalg.expm", lambda a, **k: esl.expm(enp.triu(a) if k.get("upper_triangular") else a, **k), _expm_ref, PROMOTED, _expm_samples, NO_HALF,
           primitives=("solve", "dot_general"), out_dtype=_float_of,
           tol={**TOL, np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.complex64): (1e-4, 1e-5)}),
    OpInfo("scipy.linalg.block_diag", lambda *xs: esl.block_diag(*xs), sl.block_diag, ALL, _block_samples, "",
           primitives=("pad", "concatenate")),
)  # fmt: skip
