"""Collectives over named vmap axes (lax.psum pmean pmax pmin all_gather axis_index): values against
NumPy over the batch axis, nested names, unbound names, and derivatives taken inside and outside
the vmap against hand-derived ones."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import DTypeError, EmberError, InvalidArgumentError, UnboundAxisNameError

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _named(f, name="i", **kwargs):
    return ember.vmap(f, axis_name=name, **kwargs)


def _everywhere(value, n):
    return np.broadcast_to(np.asarray(value), (n, *np.shape(value)))


# --- values ---------------------------------------------------------------------------------------------


def test_reductions_match_numpy_over_the_batch_axis():
    x = _rand(5, 3)
    _close(_named(lambda v: lax.psum(v, "i"))(x), _everywhere(x.sum(0), 5))
    _close(_named(lambda v: lax.pmean(v, "i"))(x), _everywhere(x.mean(0), 5))
    _close(_named(lambda v: lax.pmax(v, "i"))(x), _everywhere(x.max(0), 5))
    _close(_named(lambda v: lax.pmin(v, "i"))(x), _everywhere(x.min(0), 5))
    # Mapped over another axis, with in_axes, and mixed with unmapped arguments.
    _close(_named(lambda v, c: v - lax.pmean(v, "i") + c, in_axes=(1, None))(x, 1.0), x.T - x.T.mean(0) + 1.0)


def test_normalizing_with_collectives():
    x = _rand(8, 4)

    def standardize(v):
        mean = lax.pmean(v, "batch")
        var = lax.pmean((v - mean) ** 2, "batch")
        return (v - mean) / enp.sqrt(var + 1e-5)

    _close(ember.vmap(standardize, axis_name="batch")(x), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-5)
    # softmax over the examples
    soft = _named(lambda v: enp.exp(v - lax.pmax(v, "i")) / lax.psum(enp.exp(v - lax.pmax(v, "i")), "i"))(x)
    e = np.exp(x - x.max(0))
    _close(soft, e / e.sum(0))


def test_all_gather_and_axis_index():
    x = _rand(4, 3)
    _close(_named(lambda v: lax.all_gather(v, "i"))(x), _everywhere(x, 4))
    _close(_named(lambda v: lax.all_gather(v, "i", axis=1))(x), _everywhere(x.T, 4))
    _close(_named(lambda v: lax.all_gather(v, "i", axis=0, tiled=True))(x), _everywhere(x.reshape(-1), 4))
    assert _named(lambda v: lax.axis_index("i"))(x).tolist() == [0, 1, 2, 3]
    assert _named(lambda v: lax.axis_index("i"))(x).dtype == np.int32
    # Each example's own row of the gathered array is itself.
    _close(_named(lambda v: lax.all_gather(v, "i")[lax.axis_index("i")])(x), x)


def test_unmapped_operands_and_the_axis_size():
    assert _named(lambda v: lax.psum(1, "i"))(enp.ones(6)).tolist() == [6] * 6
    c = _rand(3)
    _close(_named(lambda v: lax.psum(c, "i") + 0 * v)(enp.ones(4)), _everywhere(4 * c, 4))
    _close(_named(lambda v: lax.pmean(c, "i") + 0 * v)(enp.ones(4)), _everywhere(c, 4))
    _close(_named(lambda v: lax.all_gather(c, "i") + 0 * v)(enp.ones(2)), _everywhere(np.stack([c, c]), 2))
    _close(ember.vmap(lambda: lax.axis_index("i") * 2, axis_size=3, axis_name="i")(), [0, 2, 4])


def test_pytrees_and_tuples_of_names():
    x, y = _rand(3, 2), _rand(3)
    out = _named(lambda a, b: lax.psum({"a": a, "b": (b, b * 2)}, "i"))(x, y)
    _close(out["a"], _everywhere(x.sum(0), 3))
    _close(out["b"][1], _everywhere(2 * y.sum(), 3))
    z = _rand(2, 3, 4)
    both = ember.vmap(ember.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"), axis_name="i")(z)
    _close(both, np.broadcast_to(z.sum((0, 1)), z.shape))
    index = ember.vmap(ember.vmap(lambda v: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")(z)
    assert np.asarray(index).tolist() == np.arange(6).reshape(2, 3).tolist()


def test_nested_vmaps_with_different_names():
    x = _rand(2, 3, 4)

    def inner(v):
        return lax.psum(v, "outer"), lax.psum(v, "inner"), lax.pmax(v, "outer"), lax.axis_index("outer"), lax.axis_index("inner")

    a, b, c, i, j = ember.vmap(ember.vmap(inner, axis_name="inner"), axis_name="outer")(x)
    _close(a, np.broadcast_to(x.sum(0), x.shape))
    _close(b, np.broadcast_to(x.sum(1, keepdims=True), x.shape))
    _close(c, np.broadcast_to(x.max(0), x.shape))
    assert np.asarray(i).tolist() == [[0] * 3, [1] * 3]
    assert np.asarray(j).tolist() == [[0, 1, 2]] * 2
    # Mapped over other axes at each level, and three deep.
    y = _rand(4, 2, 3)
    got = ember.vmap(ember.vmap(lambda v: lax.psum(v, "a"), in_axes=1, axis_name="b"), in_axes=2, axis_name="a")(y)
    _close(got, np.broadcast_to(y.sum(2).T[None], (3, 2, 4)))
    deep = ember.vmap(ember.vmap(ember.vmap(lambda v: lax.psum(v, "m"), axis_name="n"), axis_name="m"), axis_name="k")(x)
    _close(deep, np.broadcast_to(x.sum(1, keepdims=True), x.shape))
    # The same name twice: the innermost vmap of that name wins, as in JAX.
    same = ember.vmap(ember.vmap(lambda v: lax.psum(v, "i"), axis_name="i"), axis_name="i")(x[0])
    _close(same, np.broadcast_to(x[0].sum(1, keepdims=True), x[0].shape))


def test_an_unnamed_outer_vmap_batches_a_collective():
    x = _rand(5, 3, 2)  # vmap over axis 0 (no name), collectives over axis 1 of the original
    got = ember.vmap(_named(lambda v: lax.psum(v, "i")))(x)
    _close(got, np.broadcast_to(x.sum(1, keepdims=True), x.shape))
    got = ember.vmap(_named(lambda v: lax.all_gather(v, "i", axis=1)), in_axes=2)(x)
    # outer example k holds x[:, :, k] (5 x 3); each of its 5 inner examples gathers them along axis 1
    _close(got, np.stack([np.stack([x[:, :, k].T] * 5) for k in range(2)]))


# --- errors -------------------------------------------------------------------------------------------------


def test_unbound_axis_names():
    with pytest.raises(UnboundAxisNameError, match="unbound axis name 'i'") as info:
        lax.psum(enp.ones(3), "i")
    assert isinstance(info.value, NameError) and isinstance(info.value, EmberError)
    for call in (lambda: lax.pmean(1.0, "i"), lambda: lax.pmax(1.0, "i"), lambda: lax.pmin(1.0, "i"),
                 lambda: lax.all_gather(1.0, "i"), lambda: lax.axis_index("i")):  # fmt: skip
        with pytest.raises(UnboundAxisNameError, match="unbound axis name"):
            call()
    with pytest.raises(UnboundAxisNameError, match="unbound axis name 'j'.*'i'"):
        _named(lambda v: lax.psum(v, "j"))(enp.ones(3))
    with pytest.raises(UnboundAxisNameError, match="unbound axis name"):
        ember.vmap(lambda v: lax.psum(v, None))(enp.ones(3))
    with pytest.raises(UnboundAxisNameError):  # an unnamed vmap binds no name
        ember.vmap(lambda v: lax.psum(v, "i"))(enp.ones(3))


def test_bad_operands_and_chunks():
    with pytest.raises(DTypeError, match="psum"):
        _named(lambda v: lax.psum(v, "i"))(enp.ones(3, dtype=bool))
    with pytest.raises(DTypeError, match="pmax"):
        _named(lambda v: lax.pmax(v, "i"))(enp.ones(3, dtype="complex64"))
    with pytest.raises(InvalidArgumentError, match="all_gather: axis 2 is out of range"):
        _named(lambda v: lax.all_gather(v, "i", axis=2))(enp.ones((3, 2)))
    with pytest.raises(InvalidArgumentError, match="axis_index_groups"):
        _named(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1]]))(enp.ones(2))
    with pytest.raises(InvalidArgumentError, match="chunk_size"):
        _named(lambda v: lax.psum(v, "i"), chunk_size=2)(enp.ones(5))
    # A chunk_size that covers the whole axis is no chunking.
    _close(_named(lambda v: lax.psum(v, "i"), chunk_size=5)(enp.ones(5)), [5.0] * 5)


# --- derivatives -------------------------------------------------------------------------------------------


def test_jvp_and_vjp_of_the_vmapped_function():
    x, t, ct = _rand(4, 3), _rand(4, 3), _rand(4, 3)
    f = _named(lambda v: lax.psum(v ** 2, "i"))
    _, ty = ember.jvp(f, (x,), (t,))
    _close(ty, _everywhere((2 * x * t).sum(0), 4))
    (back,) = ember.vjp(f, x)[1](ct)
    _close(back, 2 * x * ct.sum(0))
    # pmax: the tangent is the winner's
    g = _named(lambda v: lax.pmax(v, "i"))
    _, tg = ember.jvp(g, (x,), (t,))
    _close(tg, _everywhere(t[x.argmax(0), np.arange(3)], 4))
    (back,) = ember.vjp(g, x)[1](ct)
    _close(back, (x == x.max(0)) * ct.sum(0))


def test_transpose_rules_inside_the_vmap_are_the_adjoints_of_the_whole_map():
    # vjp taken per example with per-example cotangents: the cotangent of x_j is sum_i ct_i dy_i/dx_j.
    x, c = _rand(5, 3), _rand(5, 3)

    def per_example(fn):
        def pull(v, w):
            return ember.vjp(fn, v)[1](w)[0]

        return _named(pull)

    _close(per_example(lambda v: lax.psum(v, "i"))(x, c), _everywhere(c.sum(0), 5))
    _close(per_example(lambda v: lax.pmean(v, "i"))(x, c), _everywhere(c.mean(0), 5))
    _close(per_example(lambda v: lax.pmax(v, "i"))(x, c), (x == x.max(0)) * c.sum(0))
    _close(per_example(lambda v: lax.pmin(v, "i"))(x, c), (x == x.min(0)) * c.sum(0))
    gathered_ct = _rand(5, 5, 3)  # example i's cotangent for the gathered (5, 3) array
    _close(per_example(lambda v: lax.all_gather(v, "i"))(x, gathered_ct), gathered_ct.sum(0))
    tiled_ct = _rand(5, 15)
    _close(per_example(lambda v: lax.all_gather(v, "i", tiled=True))(x, tiled_ct), tiled_ct.sum(0).reshape(5, 3))


def test_grad_inside_vmap_follows_jax():
    x = _rand(4)
    # psum's transpose is psum: each example's gradient of psum(x^2) is 2 x_i times the axis size (as in JAX).
    _close(_named(ember.grad(lambda v: lax.psum(v ** 2, "i")))(x), 2 * x * 4)
    # That is the gradient of the sum over the examples: vmap(grad(f)) == grad(sum of vmap(f)).
    for f in (lambda v: (v - lax.pmean(v, "i")) ** 2,
              lambda v: enp.sin(v) * lax.psum(v, "i"),
              lambda v: lax.pmax(v * v, "i") + v,
              lambda v: enp.sum(lax.all_gather(v, "i") ** 3) * v):  # fmt: skip
        per = _named(ember.grad(f))(x)
        whole = ember.grad(lambda xs, f=f: _named(f)(xs).sum())(x)
        _close(per, whole, rtol=1e-4, atol=1e-5)
    # The mean-centred square, by hand: d/dx_i sum_k (x_k - m)^2 = 2 (x_i - m).
    _close(_named(ember.grad(lambda v: (v - lax.pmean(v, "i")) ** 2))(x), 2 * (x - x.mean()), rtol=1e-5, atol=1e-5)


def test_higher_order_and_jacobians_through_collectives():
    x = _rand(3)
    f = _named(lambda v: lax.psum(v ** 3, "i") * v)
    # y_i = S v_i with S = sum_k x_k^3: J = diag(S) + outer(x, 3 x^2)
    s = (x ** 3).sum()
    want = np.diag(np.full(3, s)) + np.outer(x, 3 * x ** 2)
    _close(ember.jacrev(f)(x), want, rtol=1e-4, atol=1e-5)
    _close(ember.jacfwd(f)(x), want, rtol=1e-4, atol=1e-5)
    # Hessian of sum_i y_i = S T with T = sum(x): d2/dx_a dx_b = 6 x_a T [a == b] + 3 x_a^2 + 3 x_b^2
    t = x.sum()
    hess = 6 * np.diag(x) * t + 3 * (x[:, None] ** 2 + x[None, :] ** 2)
    _close(ember.hessian(lambda v: f(v).sum())(x), hess, rtol=1e-4, atol=1e-4)
    # grad of grad inside the vmap
    gg = _named(ember.grad(ember.grad(lambda v: lax.psum(v ** 3, "i"))))(x)
    _close(gg, 6 * x * 3, rtol=1e-5, atol=1e-5)
    # axis_index has no derivative: it is a constant of the differentiation
    _close(_named(ember.grad(lambda v: v * lax.axis_index("i")))(x), [0.0, 1.0, 2.0])
