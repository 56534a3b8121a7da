"""The factorisation family beyond the op database: bad input (errors naming the op, the shapes and the
dtypes), singular and non-positive-definite input (NaN/inf as documented, never an error or a hang), pivots
against SciPy's, batching without a Python loop, and derivatives where a matrix is singular."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from vmap_check import no_loop_fallback  # noqa: F401 (a fixture)

import ember
import ember.numpy as enp
import ember.scipy.linalg as esl
from ember import lax
from ember.errors import DTypeError, InvalidArgumentError, ShapeError, TransformError

# --- bad input --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [enp.linalg.inv, enp.linalg.det, enp.linalg.slogdet, enp.linalg.cholesky])
def test_non_square_matrices_are_rejected(fn):
    name = fn.__name__
    with pytest.raises(ShapeError, match=rf"{name}: needs square matrices.*float32\(2, 3\)"):
        fn(enp.ones((2, 3)))
    with pytest.raises(ShapeError, match=rf"{name}: .*got a scalar"):
        fn(enp.ones(()))
    with pytest.raises(ShapeError, match=rf"{name}: .*float32\(3,\)"):
        fn(enp.ones(3))


def test_solve_shapes():
    a = enp.ones((2, 3, 3))
    with pytest.raises(ShapeError, match=r"solve: a float32\(2, 3, 3\) is 3x3 but b's rows .* size 4 in float32\(2, 4, 1\)"):
        enp.linalg.solve(a, enp.ones((2, 4, 1)))
    with pytest.raises(ShapeError, match=r"solve: the batch axes of a float32\(2, 3, 3\) and b float32\(4, 3, 1\) do not broadcast"):
        enp.linalg.solve(a, enp.ones((4, 3, 1)))
    with pytest.raises(ShapeError, match=r"solve: b must be a vector .* scalar"):
        enp.linalg.solve(a, enp.ones(()))
    with pytest.raises(ShapeError, match=r"solve: needs square matrices.*float32\(3, 2\)"):
        enp.linalg.solve(enp.ones((3, 2)), enp.ones(3))


def test_primitive_checks_name_shapes_and_dtypes():
    with pytest.raises(DTypeError, match=r"cholesky: operand float16\(2, 2\) has dtype float16, but 'cholesky' accepts only float32, float64"):
        lax.linalg.cholesky(enp.ones((2, 2), dtype="float16"))
    with pytest.raises(DTypeError, match="lu: .*int32"):
        lax.linalg.lu(enp.ones((2, 2), dtype="int32"))
    with pytest.raises(ShapeError, match=r"triangular_solve: the batch dimensions of a float32\(2, 3, 3\) and b float32\(4, 3, 1\) differ"):
        lax.linalg.triangular_solve(enp.ones((2, 3, 3)), enp.ones((4, 3, 1)), left_side=True)
    with pytest.raises(ShapeError, match=r"triangular_solve: a float32\(3, 3\) is 3x3 but b float32\(2, 1\) has 2 rows"):
        lax.linalg.triangular_solve(enp.ones((3, 3)), enp.ones((2, 1)), left_side=True)
    with pytest.raises(ShapeError, match=r"qr: operand float32\(3,\) must have at least 2 dimensions|qr: needs"):
        lax.linalg.qr(enp.ones(3))
    with pytest.raises(InvalidArgumentError, match="triangular_solve: lower must be a bool"):
        lax.linalg.triangular_solve(enp.ones((2, 2)), enp.ones((2, 2)), lower=1)
    with pytest.raises(DTypeError, match=r"inv: operand float16\(2, 2\)"):
        enp.linalg.inv(enp.ones((2, 2), dtype="float16"))


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="qr: mode must be .*'raw' is not supported"):
        enp.linalg.qr(enp.ones((2, 2)), mode="raw")
    with pytest.raises(InvalidArgumentError, match="solve_triangular: trans must be"):
        esl.solve_triangular(enp.eye(2), enp.ones(2), trans=3)
    with pytest.raises(InvalidArgumentError, match="matrix_power: the exponent must be an integer"):
        enp.linalg.matrix_power(enp.eye(2), 1.5)
    with pytest.raises(ShapeError, match=r"outer: needs two vectors"):
        enp.linalg.outer(enp.ones((2, 2)), enp.ones(2))
    with pytest.raises(ShapeError, match=r"cross: both operands need 3-vectors"):
        enp.linalg.cross(enp.ones(2), enp.ones(2))
    with pytest.raises(ShapeError, match=r"multi_dot: arrays 0 float32\(2, 3\) and 1 float32\(2, 2\) do not chain"):
        enp.linalg.multi_dot([enp.ones((2, 3)), enp.ones((2, 2))])
    with pytest.raises(ShapeError, match=r"block_diag: blocks must have at most 2 dimensions"):
        esl.block_diag(enp.ones((1, 1, 1)))
    with pytest.raises(DTypeError, match="expm: .*float16"):
        esl.expm(enp.ones((2, 2), dtype="float16"))


def test_complete_qr_of_a_tall_matrix_has_no_derivative():
    # TransformError, as svd's full U of a non-square matrix (the same situation)
    with pytest.raises(TransformError, match="qr: the derivative of the complete QR .* not unique"):
        ember.grad(lambda a: enp.sum(enp.linalg.qr(a, mode="complete")[0]))(enp.ones((3, 2)))


# --- singular input ------------------------------------------------------------------------------------------


def test_singular_matrices_give_nan_or_inf_not_errors():
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])
    inv = np.asarray(enp.linalg.inv(singular))
    assert not np.isfinite(inv[0]).all()
    np.testing.assert_allclose(inv[1], np.linalg.inv(singular[1]), rtol=1e-6)  # the others of the stack are computed
    assert not np.isfinite(np.asarray(enp.linalg.solve(singular, np.ones((2, 2, 1))))[0]).all()
    np.testing.assert_allclose(np.asarray(enp.linalg.det(singular)), [0.0, 6.0], atol=1e-6)
    sign, logdet = enp.linalg.slogdet(np.zeros((2, 2)))
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    lu, piv = esl.lu_factor(np.zeros((3, 3)))  # finite, zeros on U's diagonal, as LAPACK's getrf
    assert np.isfinite(np.asarray(lu)).all() and np.asarray(piv).tolist() == [0, 1, 2]
    x = esl.solve_triangular(np.array([[0.0, 0.0], [1.0, 1.0]]), np.ones(2), lower=True)
    assert not np.isfinite(np.asarray(x)).all()


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan():
    stack = np.stack([np.eye(2), -np.eye(2)])
    out = np.asarray(enp.linalg.cholesky(stack))
    np.testing.assert_array_equal(out[0], np.eye(2))
    assert np.isnan(out[1]).all()


def test_cholesky_symmetrizes_or_reads_the_lower_triangle():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 4))
    spd = x @ x.transpose(0, 2, 1) + 4 * np.eye(4)
    skewed = spd + np.triu(rng.standard_normal((4, 4)), 1)  # not symmetric: the upper triangle differs
    with ember.config.x64(True):
        np.testing.assert_allclose(np.asarray(enp.linalg.cholesky(skewed)),
                                   np.linalg.cholesky((skewed + skewed.transpose(0, 2, 1)) / 2), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(enp.linalg.cholesky(skewed, symmetrize_input=False)),
                                   np.linalg.cholesky(skewed), rtol=1e-12)
        np.testing.assert_array_equal(np.asarray(enp.linalg.cholesky(spd)), np.linalg.cholesky(spd))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cholesky_derivative_of_the_lower_triangle_it_reads(dtype):
    # Without symmetrization L depends on the lower triangle only (and on the diagonal's real part):
    # its tangent is central differences of NumPy's cholesky (which reads the same), for any tangent.
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 3)) + (1j * rng.standard_normal((3, 3)) if dtype == np.complex128 else 0)
    spd = x @ x.conj().T + 3 * np.eye(3)
    a = spd + np.triu(rng.standard_normal((3, 3)), 1)  # not read
    t = rng.standard_normal((3, 3)) + (1j * rng.standard_normal((3, 3)) if dtype == np.complex128 else 0)
    h = 1e-6
    fd = (np.linalg.cholesky(a + h * t) - np.linalg.cholesky(a - h * t)) / (2 * h)
    with ember.config.x64(True):
        _, tangent = ember.jvp(lambda m: lax.linalg.cholesky(m, symmetrize_input=False), (a,), (t,))
        np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-6, atol=1e-8)
        # cho_factor reads one triangle too: its gradient has nothing in the other one
        g = np.asarray(ember.grad(lambda m: enp.real(esl.cho_factor(m, lower=False)[0]).sum())(a.T.conj().copy()))
        assert not np.tril(g, -1).any()


def test_empty_matrices():
    empty = np.zeros((0, 0))
    assert float(enp.linalg.det(empty)) == 1.0 and tuple(map(float, enp.linalg.slogdet(empty))) == (1.0, 0.0)
    assert ember.grad(enp.linalg.det)(empty).shape == (0, 0)
    assert enp.linalg.inv(np.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert enp.linalg.solve(empty, np.zeros(0)).shape == (0,)
    assert esl.expm(empty).shape == (0, 0) and esl.lu_solve(esl.lu_factor(empty), np.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(np.asarray(enp.linalg.qr(np.zeros((3, 0)), mode="complete")[0]), np.eye(3))


def test_large_stacks_do_not_hang():
    a = np.random.default_rng(0).standard_normal((64, 40, 40))
    a[::2] = 0.0
    det = np.asarray(enp.linalg.det(a))
    assert (det[::2] == 0).all()
    np.testing.assert_allclose(det[1::2], np.linalg.det(a[1::2]).astype(np.float32), rtol=1e-3)


# --- kernels against LAPACK ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(70, 70), (3, 50, 50), (40, 90), (90, 40)])
def test_lu_matches_lapack(shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    with ember.config.x64(True):
        lu, pivots, perm = (np.asarray(x) for x in lax.linalg.lu(a))
    flat_lu, flat_piv = lu.reshape(-1, *shape[-2:]), pivots.reshape(-1, pivots.shape[-1])
    for i, m in enumerate(a.reshape(-1, *shape[-2:])):
        if shape[-1] == shape[-2]:
            want_lu, want_piv = sl.lu_factor(m)
            np.testing.assert_array_equal(flat_piv[i], want_piv)
            np.testing.assert_allclose(flat_lu[i], want_lu, rtol=1e-10, atol=1e-12)
        k = min(shape[-2:])
        lower = np.tril(flat_lu[i][:, :k], -1) + np.eye(shape[-2], k)
        np.testing.assert_allclose(lower @ np.triu(flat_lu[i][:k]), m[perm.reshape(-1, shape[-2])[i]], atol=1e-12)


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")  # SciPy says the reference matrices are singular: they are
def test_lu_of_rank_deficient_matrices_matches_lapack():
    rng = np.random.default_rng(9)
    low_rank = rng.standard_normal((40, 3)) @ rng.standard_normal((3, 40))
    for m in (np.ones((3, 3)), np.arange(9.0).reshape(3, 3), low_rank, np.zeros((5, 5))):
        with ember.config.x64(True):
            lu, pivots, _ = lax.linalg.lu(m)
        want_lu, want_piv = sl.lu_factor(m)
        np.testing.assert_array_equal(np.asarray(pivots)[:3], want_piv[:3])
        np.testing.assert_allclose(np.triu(np.asarray(lu))[:3], np.triu(want_lu)[:3], atol=1e-12)
        if m.shape[0] <= 5:
            np.testing.assert_allclose(np.asarray(lu), want_lu, atol=1e-12)


def test_triangular_solve_of_a_large_ill_conditioned_matrix_is_backward_stable():
    rng = np.random.default_rng(2)
    a = np.tril(rng.standard_normal((200, 200))) + np.eye(200)  # condition number ~1e15
    b = rng.standard_normal((200, 3))
    with ember.config.x64(True):
        x = np.asarray(lax.linalg.triangular_solve(a, b, left_side=True, lower=True))
    t = np.tril(a)
    residual = np.abs(t @ x - b).max() / (np.abs(t) @ np.abs(x)).max()
    assert residual < 1e-13


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, 2])
def test_blocked_triangular_solves_against_scipy(left_side, lower, trans):
    # 70 rows: several diagonal blocks and a partial last one, forward and backward substitution, and the
    # right-side solve through its transpose (the op database's matrices fit in one block).
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 70, 70)) + 1j * rng.standard_normal((2, 70, 70)) + 20 * np.eye(70)
    b = rng.standard_normal((2, 70, 5) if left_side else (2, 5, 70)) + 0j
    transpose_a, conjugate_a = trans > 0, trans == 2
    with ember.config.x64(True):
        x = np.asarray(lax.linalg.triangular_solve(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                                   conjugate_a=conjugate_a))  # fmt: skip
    for i in range(2):
        if left_side:
            want = sl.solve_triangular(a[i], b[i], trans=trans, lower=lower)
        else:  # x op(a) = b  <=>  op(a)^T x^T = b^T, and op(a)^T is a with the other transposition
            flip = {0: 1, 1: 0, 2: None}[trans]
            if flip is None:  # x a^H = b  <=>  a x^H = b^H
                want = sl.solve_triangular(a[i], b[i].conj().T, lower=lower).conj().T
            else:
                want = sl.solve_triangular(a[i], b[i].T, trans=flip, lower=lower).T
        np.testing.assert_allclose(x[i], want, rtol=1e-12, atol=1e-14)


# --- transforms ------------------------------------------------------------------------------------------------


def test_batching_rules_do_not_loop(no_loop_fallback):  # noqa: F811
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3, 3)) + 4 * np.eye(3)
    b = rng.standard_normal((4, 3, 2))
    for fn, args in [(enp.linalg.inv, (a,)), (enp.linalg.det, (a,)), (lambda x: enp.linalg.qr(x)[1], (a,)),
                     (lambda x: enp.linalg.cholesky(x @ x.mT), (a,)), (enp.linalg.solve, (a, b)),
                     (lambda x, y: lax.linalg.triangular_solve(x, y, left_side=True, lower=True), (a, b))]:  # fmt: skip
        got = ember.vmap(fn)(*args)
        want = np.stack([np.asarray(fn(*[x[i] for x in args])) for i in range(4)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("left_side", [True, False])
def test_vmap_against_one_shared_matrix_folds_the_batch_into_the_right_hand_side(left_side):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3)) + 4 * np.eye(3)
    bs = rng.standard_normal((5, 3, 2) if left_side else (5, 2, 3))
    with ember.config.x64(True):
        fn = lambda b: lax.linalg.triangular_solve(a, b, left_side=left_side, lower=False, transpose_a=True)
        got = np.asarray(ember.vmap(fn, in_axes=0)(bs))
        want = np.stack([np.asarray(fn(b)) for b in bs])
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = np.asarray(ember.vmap(enp.linalg.solve, in_axes=(None, 0))(a, bs if left_side else bs.transpose(0, 2, 1)))
        np.testing.assert_allclose(got, np.linalg.solve(a, bs if left_side else bs.transpose(0, 2, 1)), rtol=1e-12)


def test_inverse_and_solve_gradients_to_second_order():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3)
    with ember.config.x64(True):
        g = np.asarray(ember.grad(lambda m: enp.sum(enp.linalg.inv(m)))(a))
        inv = np.linalg.inv(a)
        np.testing.assert_allclose(g, -(inv.T @ np.ones((3, 3)) @ inv.T), rtol=1e-12)
        h = np.asarray(ember.hessian(lambda v: enp.sum(enp.linalg.solve(a, v) ** 2))(b))
        np.testing.assert_allclose(h, 2 * inv.T @ inv, rtol=1e-10)
        # d/dA log|det A| = A^-T, and its derivative again through jacfwd of grad
        hess = np.asarray(ember.jacfwd(ember.grad(lambda m: enp.linalg.slogdet(m).logabsdet))(a))
        want = -np.einsum("jk,li->ijkl", inv, inv)
        np.testing.assert_allclose(hess, want, rtol=1e-8, atol=1e-10)


def test_det_gradient_of_singular_matrices_is_the_adjugate():
    # d det(A) / dA = adj(A)^T, finite for singular A (as JAX): the cofactors at rank n - 1, zero below.
    with ember.config.x64(True):
        rank2 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
        grad = ember.grad(enp.linalg.det)
        np.testing.assert_allclose(np.asarray(grad(rank2)), [[-3, 6, -3], [6, -12, 6], [-3, 6, -3]], atol=1e-12)
        np.testing.assert_array_equal(np.asarray(grad(np.ones((3, 3)))), np.zeros((3, 3)))
        np.testing.assert_allclose(np.asarray(grad(np.array([[1.0, 2.0], [2.0, 4.0]]))), [[4, -2], [-2, 1]], atol=1e-12)
        stack = np.stack([rank2, np.eye(3) * 2])
        got = np.asarray(ember.vmap(grad)(stack))
        np.testing.assert_allclose(got[1], 4 * np.eye(3), atol=1e-12)
        t = np.random.default_rng(8).standard_normal((3, 3))
        _, tangent = ember.jvp(enp.linalg.det, (rank2,), (t,))
        fd = (np.linalg.det(rank2 + 1e-6 * t) - np.linalg.det(rank2 - 1e-6 * t)) / 2e-6
        np.testing.assert_allclose(float(tangent), fd, rtol=1e-6)


def test_expm_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 3))
    t = rng.standard_normal((3, 3))
    with ember.config.x64(True):
        _, tangent = ember.jvp(esl.expm, (a,), (t,))
    eps = 1e-6
    fd = (sl.expm(a + eps * t) - sl.expm(a - eps * t)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-6, atol=1e-8)



def test_expm_of_nan_input_is_nan_and_leaves_the_other_matrices_alone():
    # A NaN matrix's scaling exponent is NaN; it used to reach int() and raise ValueError.
    big = np.array([[0.0, 40.0], [-40.0, 0.0]])  # needs squarings (its 1-norm is 40)
    stack = np.stack([np.full((2, 2), np.nan), big])
    with ember.config.x64(True):
        out = np.asarray(esl.expm(stack))
    assert np.isnan(out[0]).all()
    np.testing.assert_allclose(out[1], sl.expm(big), rtol=1e-10, atol=1e-12)

def test_jit_replays_the_kernels():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    with ember.config.x64(True):
        f = ember.jit(lambda m: (enp.linalg.det(m), enp.linalg.inv(m), lax.linalg.lu(m)[0]))
        got, eager = f(a), (enp.linalg.det(a), enp.linalg.inv(a), lax.linalg.lu(a)[0])
    # the same kernels, so the same bits as eager; and the values NumPy and SciPy (LAPACK) give
    for g, e in zip(got, eager):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    references = (np.linalg.det(a), np.linalg.inv(a), np.stack([sl.lu_factor(m)[0] for m in a]))
    for g, want in zip(got, references):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-14)
