"""Gradients through indexing: x[idx], the x.at[idx] updates, lax.gather/scatter* in every
out-of-bounds mode, and the dynamic slices.

Gradients are checked in float64 against hand-computed NumPy references (np.add.at for
duplicate indices, "the last write wins" for set, products of the other factors for multiply,
ties shared evenly for min/max); jvps against central finite differences; vjps by the identity
<ct, J t> == <J^T ct, t>; and Hessian-vector products (grad of grad) against finite
differences of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import EmberError

STEP = 1e-4
GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
SCALAR_DN = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


@pytest.fixture(autouse=True)
def _x64():
    with ember.config.x64(True):
        yield


def _rng(*key):
    return np.random.default_rng([7, *key])


def _normal(rng, shape, dtype=np.float64):
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _fd(fn, primals, tangents):
    """d/dh fn(primals + h tangents) at h = 0, by a 4-point central difference; fn returns one array."""

    def at(h):
        return np.asarray(fn(*[enp.asarray(p + h * t) for p, t in zip(primals, tangents)]))

    return (-at(2 * STEP) + 8 * at(STEP) - 8 * at(-STEP) + at(-2 * STEP)) / (12 * STEP)


def _check_jvp_and_vjp(fn, primals, rng, tol=1e-8):
    """fn's jvp against finite differences, and its vjp against its jvp (dot-product identity)."""
    tangents = [_normal(rng, p.shape, p.dtype) for p in primals]
    out, tangent_out = ember.jvp(fn, tuple(primals), tuple(tangents))
    np.testing.assert_allclose(np.asarray(out), np.asarray(fn(*map(enp.asarray, primals))), rtol=1e-15, atol=0)
    np.testing.assert_allclose(np.asarray(tangent_out), _fd(fn, primals, tangents), rtol=tol, atol=tol)
    ct = _normal(rng, np.shape(out), np.asarray(out).dtype)
    _, f_vjp = ember.vjp(fn, *primals)
    in_cts = f_vjp(ct)
    lhs = np.real(np.sum(ct * np.asarray(tangent_out)))
    rhs = sum(np.real(np.sum(np.asarray(c) * t)) for c, t in zip(in_cts, tangents))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


def _check_hvp(scalar_fn, primals, rng, tol=1e-6):
    """jvp of grad (a Hessian-vector product) against finite differences of the gradient."""
    argnums = tuple(range(len(primals)))
    gradient = ember.grad(scalar_fn, argnums=argnums)
    tangents = [_normal(rng, p.shape) for p in primals]
    _, hvp = ember.jvp(gradient, tuple(primals), tuple(tangents))
    for k in argnums:
        want = _fd(lambda *a, k=k: gradient(*a)[k], primals, tangents)
        np.testing.assert_allclose(np.asarray(hvp[k]), want, rtol=tol, atol=tol, err_msg=f"argument {k}")


# --- x[idx] ------------------------------------------------------------------------------------


def test_grad_of_getitem_with_duplicate_indices_accumulates():
    rng = _rng(1)
    x = _normal(rng, (5, 4))
    idx = np.array([0, 2, 2, 4, 2, 0])
    w = _normal(rng, (6, 4))
    g = ember.grad(lambda x: enp.sum(enp.asarray(w) * x[enp.asarray(idx)]))(x)
    want = np.zeros_like(x)
    np.add.at(want, idx, w)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)


def test_grad_of_2d_advanced_and_mixed_indexing():
    rng = _rng(2)
    x = _normal(rng, (4, 5))
    rows, cols = np.array([[1, 1], [3, 0]]), np.array([[2, 2], [4, 2]])
    w = _normal(rng, (2, 2))
    g = ember.grad(lambda x: enp.sum(enp.asarray(w) * x[enp.asarray(rows), enp.asarray(cols)]))(x)
    want = np.zeros_like(x)
    np.add.at(want, (rows, cols), w)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)

    idx = np.array([3, -1, 3])  # a negative index wraps, as in NumPy
    w2 = _normal(rng, (3, 2))
    g = ember.grad(lambda x: enp.sum(enp.asarray(w2) * x[enp.asarray(idx), 1:3]))(x)
    want = np.zeros_like(x)
    np.add.at(want, (idx[:, None], np.arange(1, 3)[None, :]), w2)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)


def test_getitem_out_of_bounds_modes():
    rng = _rng(3)
    x = _normal(rng, (5,))
    idx = np.array([1, 7, -9, 4, 1])
    w = _normal(rng, (5,))
    # clip: indices clamp (negative ones wrap first, as NumPy's), and so do their cotangents
    clipped = np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)
    np.testing.assert_array_equal(np.asarray(enp.asarray(x).at[enp.asarray(idx)].get(mode="clip")), x[clipped])
    g = ember.grad(lambda x: enp.sum(enp.asarray(w) * x.at[enp.asarray(idx)].get(mode="clip")))(x)
    want = np.zeros_like(x)
    np.add.at(want, clipped, w)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)
    # fill: out-of-bounds reads give the fill value (NaN by default); their tangent is 0, not NaN
    fn = lambda x: x.at[enp.asarray(idx)].get(mode="fill")
    t = _normal(rng, (5,))
    out, tangent = ember.jvp(fn, (x,), (t,))
    inside = np.array([True, False, False, True, True])
    assert np.isnan(np.asarray(out)[~inside]).all()
    np.testing.assert_array_equal(np.asarray(tangent), np.where(inside, t[np.where(inside, idx, 0)], 0.0))
    g = ember.grad(lambda x: enp.sum(enp.where(enp.asarray(inside), enp.asarray(w) * fn(x), 0.0)))(x)
    want = np.zeros_like(x)
    np.add.at(want, idx[inside], w[inside])
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)


# --- x.at[idx] updates -------------------------------------------------------------------------


def _last_writes(idx, n):
    """For each update j, whether it is the last one written to its position (NumPy's order)."""
    last = {}
    for j, i in enumerate(idx):
        last[i] = j
    return np.array([last[i] == j for j, i in enumerate(idx)]), np.isin(np.arange(n), idx)


def test_grad_of_at_set_with_duplicate_indices():
    rng = _rng(4)
    x, v, w = _normal(rng, (6,)), _normal(rng, (5,)), _normal(rng, (6,))
    idx = np.array([0, 2, 2, 5, 2])
    want_out = x.copy()
    want_out[idx] = v
    out = enp.asarray(x).at[enp.asarray(idx)].set(enp.asarray(v))
    np.testing.assert_array_equal(np.asarray(out), want_out)  # the last write wins, as in NumPy
    gx, gv = ember.grad(lambda x, v: enp.sum(enp.asarray(w) * x.at[enp.asarray(idx)].set(v)), argnums=(0, 1))(x, v)
    won, written = _last_writes(idx, 6)
    np.testing.assert_allclose(np.asarray(gx), np.where(written, 0.0, w), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gv), np.where(won, w[idx], 0.0), rtol=1e-15)
    _check_jvp_and_vjp(lambda x, v: x.at[enp.asarray(idx)].set(v), [x, v], rng)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_grad_of_at_add_with_duplicate_indices(dtype):
    rng = _rng(5)
    x, v = _normal(rng, (3, 4), dtype), _normal(rng, (4, 4), dtype)
    idx = np.array([2, 0, 2, 2])
    fn = lambda x, v: x.at[enp.asarray(idx)].add(v)
    _check_jvp_and_vjp(fn, [x, v], rng)
    _, f_vjp = ember.vjp(fn, x, v)
    ct = _normal(rng, (3, 4), dtype)
    gx, gv = f_vjp(ct)
    np.testing.assert_allclose(np.asarray(gx), ct, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gv), ct[idx], rtol=1e-15)


def test_grad_of_at_multiply_with_duplicates_and_zero_factors():
    rng = _rng(6)
    x = _normal(rng, (6,))
    idx = np.array([1, 1, 1, 3, 3, 4, 4, 5])
    # position 1: three nonzero factors; 3: one of two is zero; 4: both zero; 5: one factor
    v = np.array([2.0, -1.5, 0.5, 0.0, 2.5, 0.0, 0.0, 0.7])
    w = _normal(rng, (6,))
    out = enp.asarray(x).at[enp.asarray(idx)].multiply(enp.asarray(v))
    want_out = x.copy()
    np.multiply.at(want_out, idx, v)
    np.testing.assert_allclose(np.asarray(out), want_out, rtol=1e-15)
    gx, gv = ember.grad(lambda x, v: enp.sum(enp.asarray(w) * x.at[enp.asarray(idx)].multiply(v)), argnums=(0, 1))(x, v)
    want_gx = np.array([w[p] * np.prod(v[idx == p]) for p in range(6)])
    want_gv = np.array([w[p] * x[p] * np.prod(np.delete(v, j)[np.delete(idx, j) == p]) for j, p in enumerate(idx)])
    np.testing.assert_allclose(np.asarray(gx), want_gx, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(gv), want_gv, rtol=1e-14)
    assert np.asarray(gv)[3] != 0 and np.asarray(gv)[4] == 0  # the zero factor's gradient is the other's product
    # the product is a polynomial: smooth at the zeros too, so finite differences apply there
    _check_jvp_and_vjp(lambda x, v: x.at[enp.asarray(idx)].multiply(v), [x, v], rng)
    _check_hvp(lambda x, v: enp.sum(enp.asarray(w) * x.at[enp.asarray(idx)].multiply(v)), [x, v], rng)


@pytest.mark.parametrize("method", ["max", "min"])
def test_grad_of_at_max_min_shares_ties_evenly(method):
    sign = 1.0 if method == "max" else -1.0
    x = sign * np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([0, 0, 1, 2, 2])
    # position 0: two updates tie for the result; 1: the operand wins; 2: the operand and two
    # updates tie; 3: untouched
    v = sign * np.array([5.0, 5.0, 0.0, 3.0, 3.0])
    w = _normal(_rng(7), (4,))
    fn = lambda x, v: getattr(x.at[enp.asarray(idx)], method)(v)
    np.testing.assert_array_equal(np.asarray(fn(enp.asarray(x), enp.asarray(v))), sign * np.array([5.0, 2.0, 3.0, 4.0]))
    gx, gv = ember.grad(lambda x, v: enp.sum(enp.asarray(w) * fn(x, v)), argnums=(0, 1))(x, v)
    np.testing.assert_allclose(np.asarray(gx), w * np.array([0, 1, 1 / 3, 1]), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gv), np.array([w[0] / 2, w[0] / 2, 0, w[2] / 3, w[2] / 3]), rtol=1e-15)


@pytest.mark.parametrize("method", ["max", "min"])
def test_at_max_min_away_from_ties_matches_finite_differences(method):
    rng = _rng(8)
    x = rng.permutation(12).astype(np.float64)[:6]  # distinct values: no ties
    v = rng.permutation(12).astype(np.float64)[6:] + 0.5
    idx = np.array([0, 0, 2, 5, 2, 2])
    fn = lambda x, v: getattr(x.at[enp.asarray(idx)], method)(v)
    _check_jvp_and_vjp(fn, [x, v], rng)
    w = _normal(rng, (6,))
    _check_hvp(lambda x, v: enp.sum(enp.asarray(w) * fn(x, v) ** 2), [x, v], rng)


@pytest.mark.parametrize("mode", [None, "clip"])
def test_grad_of_at_updates_out_of_bounds(mode):
    rng = _rng(9)
    x, v, w = _normal(rng, (5,)), _normal(rng, (4,)), _normal(rng, (5,))
    idx = np.array([1, 7, -9, -2])  # -2 wraps to 3; 7 and -9 are dropped (default) or clamped ("clip")
    target = np.clip(np.where(idx < 0, idx + 5, idx), 0, 4)
    kept = np.array([True, False, False, True]) if mode is None else np.ones(4, bool)
    want = x.copy()
    np.add.at(want, target[kept], v[kept])
    add = lambda x, v: x.at[enp.asarray(idx)].add(v, mode=mode)
    np.testing.assert_allclose(np.asarray(add(enp.asarray(x), enp.asarray(v))), want, rtol=1e-15)
    gx, gv = ember.grad(lambda x, v: enp.sum(enp.asarray(w) * add(x, v)), argnums=(0, 1))(x, v)
    np.testing.assert_allclose(np.asarray(gx), w, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gv), np.where(kept, w[target], 0.0), rtol=1e-15)
    for method in ("set", "multiply", "max"):
        _check_jvp_and_vjp(lambda x, v, m=method: getattr(x.at[enp.asarray(idx)], m)(v, mode=mode), [x, v], rng)


# --- lax.gather / lax.scatter* ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_windows_transpose_consistently_with_the_mode(mode):
    rng = _rng(10)
    x = _normal(rng, (7, 3))
    idx = np.array([[5], [1], [-2], [4]])  # windows of 3 rows: 5 and -2 run off the operand
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    fn = lambda x: lax.gather(x, enp.asarray(idx), dn, (3, 3), mode=mode, fill_value=0.0)
    _check_jvp_and_vjp(fn, [x], rng)
    ct = _normal(rng, (4, 3, 3))
    (g,) = ember.vjp(fn, x)[1](ct)
    want = np.zeros_like(x)
    for b, start in enumerate(idx[:, 0]):
        if mode == "fill" and not 0 <= start <= 7 - 3:
            continue  # read as the fill value: nothing flows back
        s = min(max(start, 0), 7 - 3)  # clip and promise_in_bounds clamp (the NumPy backend, as JAX's CPU)
        want[s : s + 3] += ct[b]
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)
    # the default fill value (NaN) is no derivative's business
    nan_fill = lambda x: lax.gather(x, enp.asarray(idx), dn, (3, 3), mode=mode)
    tangent = ember.jvp(nan_fill, (x,), (np.ones_like(x),))[1]
    assert np.isfinite(np.asarray(tangent)).all()


def test_gather_with_batching_dims():
    rng = _rng(11)
    x = _normal(rng, (3, 5))
    idx = np.array([[4], [0], [4]])
    dn = GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,),
             start_indices_batching_dims=(0,))  # fmt: skip
    fn = lambda x: lax.gather(x, enp.asarray(idx), dn, (1, 1), mode="clip")
    np.testing.assert_array_equal(np.asarray(fn(enp.asarray(x))), x[np.arange(3), idx[:, 0]])
    _check_jvp_and_vjp(fn, [x], rng)


def test_scatter_set_with_overlapping_windows():
    rng = _rng(12)
    x, v = _normal(rng, (8,)), _normal(rng, (3, 4))
    idx = np.array([[1], [3], [2]])  # windows [1:5], [3:7], [2:6] overlap; one update wins each element
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
    fn = lambda x, v: lax.scatter(x, enp.asarray(idx), v, dn)
    out = np.asarray(fn(enp.asarray(x), enp.asarray(v)))
    # whichever update the backend wrote, each written element's derivative is that update's
    gx, gv = ember.vjp(fn, x, v)[1](np.ones(8))
    np.testing.assert_array_equal(np.asarray(gx), np.where(np.isin(np.arange(8), np.arange(1, 7)), 0.0, 1.0))
    won = np.asarray(gv).astype(bool)
    assert won.sum() == 6  # elements 1..6, each won by exactly one update
    for b in range(3):
        for k in range(4):
            if won[b, k]:
                assert out[idx[b, 0] + k] == v[b, k]
    _check_jvp_and_vjp(fn, [x, v], rng)
    shifted = enp.asarray(np.array([[6], [3], [-1]]))  # out of bounds: clamped, or dropped
    for mode in ("clip", "fill"):
        _check_jvp_and_vjp(lambda x, v, mode=mode: lax.scatter(x, shifted, v, dn, mode=mode), [x, v], rng)


def test_linear_transposes_of_scatters():
    rng = _rng(13)
    x, v, ct = _normal(rng, (5,)), _normal(rng, (3,)), _normal(rng, (5,))
    idx = np.array([[4], [0], [2]])
    unique = lambda x, v: lax.scatter(x, enp.asarray(idx), v, SCALAR_DN, unique_indices=True)
    ct_x, ct_v = ember.linear_transpose(unique, x, v)(ct)
    np.testing.assert_allclose(np.asarray(ct_x), np.where(np.isin(np.arange(5), idx), 0.0, ct), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(ct_v), ct[idx[:, 0]], rtol=1e-15)
    # without the promise, which duplicate wins is the backend's: no transpose (as in JAX); grad works
    dup = np.array([[4], [4], [2]])
    with pytest.raises(EmberError, match="unique_indices"):
        ember.linear_transpose(lambda x, v: lax.scatter(x, enp.asarray(dup), v, SCALAR_DN), x, v)(ct)
    # scatter_mul is linear in its operand
    (ct_x,) = ember.linear_transpose(lambda x: lax.scatter_mul(x, enp.asarray(dup), enp.asarray(v), SCALAR_DN), x)(ct)
    factor = np.ones(5)
    np.multiply.at(factor, dup[:, 0], v)
    np.testing.assert_allclose(np.asarray(ct_x), ct * factor, rtol=1e-15)
    # scatter_add's transpose is a gather; gather's is a scatter_add
    (ct_v,) = ember.linear_transpose(lambda v: lax.scatter_add(enp.zeros(5), enp.asarray(dup), v, SCALAR_DN), v)(ct)
    np.testing.assert_allclose(np.asarray(ct_v), ct[dup[:, 0]], rtol=1e-15)


# --- dynamic slices ----------------------------------------------------------------------------


def test_grad_of_dynamic_slice_with_clamped_starts():
    rng = _rng(14)
    x, w = _normal(rng, (6, 4)), _normal(rng, (3, 2))
    starts = (np.int32(5), np.int32(-3))  # clamped to (3, 0)
    g = ember.grad(lambda x: enp.sum(enp.asarray(w) * lax.dynamic_slice(x, starts, (3, 2))))(x)
    want = np.zeros_like(x)
    want[3:6, 0:2] = w
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-15)
    _check_jvp_and_vjp(lambda x: lax.dynamic_slice(x, starts, (3, 2)), [x], rng)


def test_grad_of_dynamic_update_slice_with_clamped_starts():
    rng = _rng(15)
    x, u, w = _normal(rng, (6, 4)), _normal(rng, (2, 3)), _normal(rng, (6, 4))
    starts = (np.int32(5), np.int32(3))  # clamped to (4, 1)
    fn = lambda x, u: lax.dynamic_update_slice(x, u, starts)
    gx, gu = ember.grad(lambda x, u: enp.sum(enp.asarray(w) * fn(x, u)), argnums=(0, 1))(x, u)
    want_gx = w.copy()
    want_gx[4:6, 1:4] = 0
    np.testing.assert_allclose(np.asarray(gx), want_gx, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gu), w[4:6, 1:4], rtol=1e-15)
    _check_jvp_and_vjp(fn, [x, u], rng)


# --- grad of grad --------------------------------------------------------------------------------


def test_hessian_of_getitem_with_duplicates():
    rng = _rng(16)
    x = _normal(rng, (5,))
    idx = np.array([0, 3, 3, 1, 3])
    hessian_diag = 6 * np.bincount(idx, minlength=5) * x  # of sum(x[idx] ** 3)
    f = lambda x: enp.sum(x[enp.asarray(idx)] ** 3)
    t = _normal(rng, (5,))
    _, hvp = ember.jvp(ember.grad(f), (x,), (t,))
    np.testing.assert_allclose(np.asarray(hvp), hessian_diag * t, rtol=1e-14)
    second = ember.grad(lambda x: enp.sum(ember.grad(f)(x)))(x)  # grad of grad, in reverse mode twice
    np.testing.assert_allclose(np.asarray(second), hessian_diag, rtol=1e-14)


def test_hessian_vector_products_of_updates_and_dynamic_slices():
    rng = _rng(17)
    x, v, w = _normal(rng, (6,)), _normal(rng, (4,)), _normal(rng, (6,))
    idx = enp.asarray(np.array([5, 1, 5, 2]))
    wa = enp.asarray(w)
    _check_hvp(lambda x, v: enp.sum(wa * enp.sin(x.at[idx].set(v * x[idx]))), [x, v], rng)
    _check_hvp(lambda x, v: enp.sum(wa * x.at[idx].add(v * v) ** 2), [x, v], rng)
    start = np.int32(3)
    _check_hvp(lambda x, v: enp.sum(lax.dynamic_update_slice(x * x, enp.exp(v), (start,))
                                    * lax.dynamic_slice(wa * x, (start,), (6,))), [x, v], rng)  # fmt: skip
