"""The spectral family beyond the op database: degenerate points, bad input, result dtypes,
NumPy's special cases (NaN input, lstsq's residuals, left eigenvectors).

Values at degenerate points are derived by hand (or are those JAX 0.10 gives for the same call,
where JAX gives a number); tests/op_db_eigen.py checks the generic points against NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.scipy.linalg as esl
from ember import lax
from ember.errors import ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError, TransformError

# --- degenerate eigenvalues and singular values -----------------------------------------------------


def _finite(x) -> bool:
    return bool(np.isfinite(np.asarray(x)).all())


def test_eigenvalue_gradients_are_finite_where_eigenvalues_repeat():
    eye = enp.eye(3)
    # d/dA sum(eigvalsh(sym(A))) = I (the trace), as JAX gives.
    np.testing.assert_allclose(ember.grad(lambda a: enp.linalg.eigvalsh(a).sum())(eye), np.eye(3), atol=1e-6)
    # The largest of three equal eigenvalues: not differentiable, but finite, symmetric and of trace 1
    # (a projector onto a direction LAPACK picked; JAX gives e3 e3^T).
    g = np.asarray(ember.grad(lambda a: enp.linalg.eigvalsh(a)[-1])(eye))
    assert _finite(g) and np.allclose(g, g.T, atol=1e-6) and np.isclose(np.trace(g), 1, atol=1e-6)
    np.testing.assert_allclose(ember.grad(lambda a: esl.eigh(a, eigvals_only=True).sum())(eye), np.eye(3), atol=1e-6)


def test_singular_value_gradients_are_finite_where_singular_values_repeat():
    eye = enp.eye(3)
    np.testing.assert_allclose(ember.grad(lambda a: enp.linalg.svdvals(a).sum())(eye), np.eye(3), atol=1e-6)
    np.testing.assert_allclose(ember.grad(lambda a: enp.linalg.norm(a, "nuc"))(eye), np.eye(3), atol=1e-6)
    # The spectral norm's max splits the tie evenly, as JAX's (I / 3).
    np.testing.assert_allclose(ember.grad(lambda a: enp.linalg.norm(a, 2))(eye), np.eye(3) / 3, atol=1e-6)
    np.testing.assert_allclose(ember.grad(lambda a: enp.linalg.matrix_norm(a, ord=-2))(eye), np.eye(3) / 3, atol=1e-6)
    # All singular values zero: JAX gives I for the sum as well.
    np.testing.assert_allclose(
        ember.grad(lambda a: enp.linalg.svdvals(a).sum())(enp.zeros((2, 2))), np.eye(2), atol=1e-6
    )
    # cond = s_max / s_min at I: d/dA = e1 e1^T - e3 e3^T in LAPACK's basis; finite, traceless.
    g = np.asarray(ember.grad(enp.linalg.cond)(eye))
    assert _finite(g) and np.isclose(np.trace(g), 0, atol=1e-6)


def test_eigenvalue_jvp_at_a_repeated_eigenvalue_sums_correctly():
    # eigenvalues of I + t ones(3, 3) are 1, 1, 1 + 3t: each value's tangent depends on LAPACK's basis,
    # their sum (the trace's tangent, 3) does not.
    _, dw = ember.jvp(enp.linalg.eigvalsh, (enp.eye(3),), (enp.ones((3, 3)),))
    assert _finite(dw) and np.isclose(float(np.sum(dw)), 3.0, atol=1e-5)


def test_eigenvector_gradients_are_finite_where_eigenvalues_repeat():
    # diag(1, 1, 3): the loss uses only the eigenvector of 3, whose derivative exists; the repeated
    # pair's gap is dropped (JAX gives NaN here). Against central differences of the same loss.
    a = np.diag([1.0, 1.0, 3.0])
    b = np.array([[0.0, 0.3, 0.1], [0.3, 0.0, -0.2], [0.1, -0.2, 0.0]])

    def loss(x):
        v = enp.linalg.eigh(x)[1][:, -1]
        return (v * enp.sign(v[2])).sum() + (v * enp.sign(v[2]))[0] ** 2

    with ember.config.x64(True):
        g = np.asarray(ember.grad(loss)(a))
        assert _finite(g)
        h = 1e-6
        fd = (float(loss(a + h * b)) - float(loss(a - h * b))) / (2 * h)
        np.testing.assert_allclose(np.sum(g * b), fd, rtol=1e-5, atol=1e-8)
        assert _finite(ember.grad(lambda x: enp.linalg.eigh(x)[1].sum())(np.eye(3)))
        assert _finite(ember.grad(lambda x: enp.linalg.svd(x)[0].sum())(np.eye(3)))


def test_pinv_derivative_where_singular_values_repeat():
    # pinv = inv at I: d/dA sum(inv(A)) = -1 1^T (JAX: the same, by its own pinv rule).
    np.testing.assert_allclose(ember.grad(lambda a: enp.linalg.pinv(a).sum())(enp.eye(3)), -np.ones((3, 3)), atol=1e-6)
    # lstsq's solution goes through pinv: x = inv(A) b at A = 2 I.
    b = np.array([1.0, 2.0, 3.0], np.float32)
    g = ember.grad(lambda a: enp.linalg.lstsq(a, b)[0].sum())(2 * enp.eye(3))
    np.testing.assert_allclose(g, -np.outer(np.ones(3), b) / 4, atol=1e-6)


def test_second_derivatives_of_eigenvalues_through_a_hessian():
    # f(A) = sum(eigvalsh(A)^2) = |sym(A)|_F^2 at a point with distinct eigenvalues.
    with ember.config.x64(True):
        a = np.array([[2.0, 0.5, 0.0], [0.5, -1.0, 0.3], [0.0, 0.3, 0.5]])
        hess = np.asarray(ember.hessian(lambda x: (enp.linalg.eigvalsh(x) ** 2).sum())(a)).reshape(9, 9)
        sym = np.zeros((9, 9))  # d2/dA2 |(A + A^T) / 2|^2 = (I + swap) (as a 9 x 9 matrix)
        for i in range(3):
            for j in range(3):
                sym[3 * i + j, 3 * i + j] += 1
                sym[3 * i + j, 3 * j + i] += 1
        np.testing.assert_allclose(hess, sym, atol=1e-8)


# --- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [enp.linalg.eigh, enp.linalg.eigvalsh, enp.linalg.eig, enp.linalg.eigvals, esl.eigh,
                                lambda x: lax.linalg.eigh(x), lambda x: lax.linalg.eig(x)])  # fmt: skip
def test_non_square_input_to_eigendecompositions(fn):
    with pytest.raises(ShapeError, match=r"square.*float32\(2, 3\)"):
        fn(enp.ones((2, 3)))


@pytest.mark.parametrize("fn", [enp.linalg.svd, enp.linalg.svdvals, enp.linalg.eigh, enp.linalg.pinv, enp.linalg.cond,
                                lambda x: lax.linalg.svd(x)])  # fmt: skip
def test_wrong_rank(fn):
    with pytest.raises(ShapeError, match=r"rank >= 2.*float32\(3,\)"):
        fn(enp.ones(3))


def test_dtypes_lapack_has_no_routines_for():
    with pytest.raises(DTypeError, match=r"eigh.*float16.*float32"):
        enp.linalg.eigh(enp.ones((2, 2), dtype="float16"))
    with pytest.raises(DTypeError, match=r"svd: operand int32\(2, 2\).*ember.numpy.linalg promotes"):
        lax.linalg.svd(enp.ones((2, 2), dtype="int32"))
    with pytest.raises(DTypeError, match=r"eig.*bfloat16"):
        lax.linalg.eig(enp.ones((2, 2), dtype="bfloat16"))


def test_bad_norm_arguments():
    x = enp.ones((2, 3))
    with pytest.raises(InvalidArgumentError, match=r"norm order 'fro' for vectors"):
        enp.linalg.norm(enp.ones(3), "fro")
    with pytest.raises(InvalidArgumentError, match=r"norm order 3 for matrices"):
        enp.linalg.norm(x, 3)
    with pytest.raises(InvalidArgumentError, match=r"norm order 'bogus' for matrices"):
        enp.linalg.norm(x, "bogus", axis=(0, 1))
    with pytest.raises(InvalidArgumentError, match=r"axis 2 is out of range for an array of rank 2"):
        enp.linalg.norm(x, axis=2)
    with pytest.raises(InvalidArgumentError, match=r"duplicate axes \(1, 1\).*float32\(2, 3\)"):
        enp.linalg.norm(x, axis=(1, -1))
    with pytest.raises(InvalidArgumentError, match=r"improper number of axes \(0, 1, 2\) for float32\(2, 3, 4\)"):
        enp.linalg.norm(enp.ones((2, 3, 4)), 2)
    with pytest.raises(ArgumentTypeError, match=r"axis must be None, an int or a tuple of ints, got \[0, 1\]"):
        enp.linalg.norm(x, axis=[0, 1])
    with pytest.raises(InvalidArgumentError, match=r"ord must be None, a real number"):
        enp.linalg.norm(x, ord=1j, axis=1)
    with pytest.raises(InvalidArgumentError, match=r"vector_norm: invalid norm order 'nuc'"):
        enp.linalg.vector_norm(x, ord="nuc")
    with pytest.raises(ShapeError, match=r"matrix_norm: needs an array of rank >= 2"):
        enp.linalg.matrix_norm(enp.ones(3))


def test_other_bad_arguments():
    with pytest.raises(InvalidArgumentError, match=r"UPLO must be 'L' or 'U', got 'X'"):
        enp.linalg.eigh(enp.eye(2), UPLO="X")
    with pytest.raises(InvalidArgumentError, match=r"pinv: pass rcond or rtol, not both"):
        enp.linalg.pinv(enp.eye(2), 1e-3, rtol=1e-3)
    with pytest.raises(InvalidArgumentError, match=r"matrix_rank: pass tol or rtol, not both"):
        enp.linalg.matrix_rank(enp.eye(2), 0.1, rtol=0.1)
    with pytest.raises(ShapeError, match=r"lstsq: a float32\(3, 2\) and b float32\(4,\) differ"):
        enp.linalg.lstsq(enp.ones((3, 2)), enp.ones(4))
    with pytest.raises(ShapeError, match=r"cond: needs square matrices.*float32\(2, 3\)"):
        enp.linalg.cond(enp.ones((2, 3)), 1)
    with pytest.raises(ShapeError, match=r"cond: not defined for an empty matrix"):
        enp.linalg.cond(enp.ones((0, 0)))
    with pytest.raises(InvalidArgumentError, match=r"only the standard problem \(b=None\)"):
        esl.eigh(enp.eye(2), enp.eye(2))
    with pytest.raises(InvalidArgumentError, match=r"subset_by_index"):
        lax.linalg.eigh(enp.eye(2), subset_by_index=(0, 1))


def test_eig_is_forward_only():
    with pytest.raises(TransformError, match=r"eig: ember does not differentiate.*forward only.*eigh"):
        ember.grad(lambda a: enp.real(enp.linalg.eigvals(a)).sum())(enp.eye(2))
    with pytest.raises(TransformError, match=r"eig:.*eigvalsh"):
        ember.jvp(lambda a: enp.linalg.eig(a)[1], (enp.eye(2),), (enp.eye(2),))
    # No tangent reaches it: fine.
    ember.grad(lambda a: (a * enp.real(enp.linalg.eigvals(lax.stop_gradient(a))).sum()).sum())(enp.eye(2))


def test_full_matrices_svd_of_a_non_square_matrix_has_no_derivative():
    with pytest.raises(TransformError, match=r"svd:.*not unique.*full_matrices=False"):
        ember.grad(lambda a: enp.linalg.svd(a)[0].sum())(enp.ones((3, 2)))
    # As in JAX; the singular values alone (compute_uv=False, svdvals) and the reduced factors are differentiable.
    a = enp.asarray([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(
        ember.grad(lambda a: enp.linalg.svd(a, compute_uv=False).sum())(a), [[1, 0], [0, 1], [0, 0]]
    )
    assert _finite(ember.grad(lambda a: enp.linalg.svd(a, full_matrices=False)[0].sum())(a))


# --- results: dtypes, NaN, NumPy's special cases ---------------------------------------------------------


def test_result_dtypes():
    c = enp.ones((2, 2), dtype="complex64")
    w, v = enp.linalg.eigh(c)
    assert (w.dtype, v.dtype) == (np.float32, np.complex64)
    u, s, vh = enp.linalg.svd(c)
    assert (u.dtype, s.dtype, vh.dtype) == (np.complex64, np.float32, np.complex64)
    assert enp.linalg.eigvals(enp.eye(2)).dtype == np.complex64  # NumPy: float64 when all are real
    assert enp.linalg.eigh(enp.asarray([[1, 2], [2, 1]])).eigenvalues.dtype == np.float32  # integers promoted
    assert enp.linalg.matrix_rank(enp.eye(2)).dtype == np.int32
    assert enp.linalg.norm(enp.ones(2, dtype="float16")).dtype == np.float16
    assert enp.linalg.norm(enp.ones((2, 2), dtype="bfloat16"), 2).dtype == enp.bfloat16  # computed in float32
    v, w = lax.linalg.eigh(enp.eye(2))  # JAX's order: vectors first
    assert v.shape == (2, 2) and w.shape == (2,)


def test_nan_input_gives_nan_not_an_error():
    # NumPy raises LinAlgError for svd/eig of a matrix with NaN; ember gives NaN for that matrix (as JAX).
    x = np.stack([np.eye(2), [[1.0, np.nan], [2.0, 1.0]]]).astype(np.float32)
    s = np.asarray(enp.linalg.svdvals(x))
    np.testing.assert_allclose(s[0], [1, 1])
    assert np.isnan(s[1]).all()
    w = np.asarray(enp.linalg.eigvals(x))
    assert np.isnan(w[1]).all() and np.allclose(w[0], 1)
    assert np.isnan(np.asarray(enp.linalg.eigh(x).eigenvectors[1])).all()
    assert np.isinf(float(enp.linalg.cond(np.zeros((2, 2), np.float32))))  # singular: inf, as NumPy
    assert np.isnan(float(enp.linalg.cond(x[1])))  # NaN input stays NaN


def test_lstsq_residuals():
    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
    b = np.array([1.0, 2.0, 4.0], np.float32)
    x, res, rank, _ = enp.linalg.lstsq(a, b)
    nx, nres, nrank, _ = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, nx, rtol=1e-5)
    np.testing.assert_allclose(res, nres, rtol=1e-5)
    assert int(rank) == nrank and res.shape == (1,)
    # Rank-deficient: NumPy's residuals are empty; ember's are |b - a x|^2 unless numpy_resid=True.
    a2 = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]], np.float32)
    _, res2, rank2, _ = enp.linalg.lstsq(a2, b)
    assert int(rank2) == 1 and res2.shape == (1,) and np.isclose(float(res2[0]), 16.5, rtol=1e-5)
    assert enp.linalg.lstsq(a2, b, numpy_resid=True).residuals.shape == (0,)
    with pytest.raises(ember.errors.ConcretizationError):
        ember.jit(lambda a: enp.linalg.lstsq(a, b, numpy_resid=True))(a2)


@pytest.mark.parametrize("shape", [(2, 0, 0), (2, 0, 3), (2, 3, 0)])
@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_norms_of_empty_matrices_as_numpy(shape, ord):
    # NumPy takes the max-type norms of nothing as 0 (max(..., initial=0)); its min-type ones raise.
    x = np.zeros(shape, np.float32)
    try:
        expected = np.linalg.norm(x, ord, axis=(1, 2))
    except ValueError:
        with pytest.raises(ShapeError, match="zero-size"):
            enp.linalg.norm(x, ord, axis=(1, 2))
        return
    np.testing.assert_array_equal(enp.linalg.norm(x, ord, axis=(1, 2)), expected)
    np.testing.assert_array_equal(enp.linalg.matrix_norm(x, ord="fro" if ord is None else ord), expected)


def test_infinity_norm_of_an_empty_vector_is_zero():
    x = np.zeros((2, 0), np.float32)
    np.testing.assert_array_equal(enp.linalg.norm(x, np.inf, axis=1), np.linalg.norm(x, np.inf, axis=1))
    np.testing.assert_array_equal(enp.linalg.vector_norm(x, ord=np.inf, axis=1), [0.0, 0.0])


def test_lstsq_negative_rcond_means_machine_precision():
    # NumPy documents rcond=-1 as "machine precision" (LAPACK's gelsd); a rank-deficient a must not divide
    # by its zero singular value.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))
    b = rng.standard_normal((5, 3))
    with ember.config.x64(True):
        x, _, rank, _ = enp.linalg.lstsq(a, b, rcond=-1)
    nx, _, nrank, _ = np.linalg.lstsq(a, b, rcond=-1)
    assert int(rank) == nrank == 2
    np.testing.assert_allclose(x, nx, rtol=1e-8, atol=1e-10)


def test_left_eigenvectors():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 4))
    with ember.config.x64(True):
        w, vl, vr = lax.linalg.eig(x)
        w, vl, vr = np.asarray(w), np.asarray(vl), np.asarray(vr)
    vl_h = np.conj(np.swapaxes(vl, -1, -2))
    np.testing.assert_allclose(vl_h @ x, w[..., :, None] * vl_h, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, atol=1e-12)
    np.testing.assert_allclose(x @ vr, vr * w[..., None, :], atol=1e-12)


def test_svd_full_matrices_of_non_square_matrices():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    u, s, vh = (np.asarray(o) for o in enp.linalg.svd(x))
    assert u.shape == (2, 4, 4) and vh.shape == (2, 3, 3)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-5)
    np.testing.assert_allclose((u[..., :3] * s[..., None, :]) @ vh, x, atol=1e-5)


def test_vmap_batches_without_a_loop():
    # One eigh primitive over the batch: the traced program has a single eigh of the stacked shape.
    ir = ember.make_ir(ember.vmap(enp.linalg.eigvalsh))(np.ones((5, 3, 3), np.float32))
    text = str(ir)
    assert text.count("eigh") == 1 and "5,3,3" in text.replace(" ", "")
