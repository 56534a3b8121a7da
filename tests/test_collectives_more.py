"""The collectives that exchange pieces between examples (lax.psum_scatter / reduce_scatter, ppermute, pshuffle,
all_to_all): values against NumPy loops over the examples, every mode; transposes by the dot-product test
(taken inside the vmap, where the collectives' own transpose rules run); grad, jacrev and jacfwd against
the linear maps written with NumPy; nested vmaps of two names; jit; and the error messages."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import DTypeError, InvalidArgumentError, ShapeError, UnboundAxisNameError

RNG = np.random.default_rng(19)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _named(f, name="i", **kwargs):
    return ember.vmap(f, axis_name=name, **kwargs)


# --- NumPy references: X holds every example's operand along axis 0 ------------------------------------


def np_psum_scatter(X, d=0, tiled=False):
    n, total = X.shape[0], X.sum(0)
    if tiled:
        return np.stack([np.split(total, n, axis=d)[i] for i in range(n)])
    return np.stack([np.take(total, i, axis=d) for i in range(n)])


def np_ppermute(X, perm):
    out = np.zeros_like(X)
    for src, dst in perm:
        out[dst] = X[src]
    return out


def np_all_to_all(X, a, c, tiled=False):
    n, out = X.shape[0], []
    for i in range(n):
        if tiled:
            out.append(np.concatenate([np.split(X[j], n, axis=a)[i] for j in range(n)], axis=c))
        else:
            out.append(np.stack([np.take(X[j], i, axis=a) for j in range(n)], axis=c))
    return np.stack(out)


# --- values -------------------------------------------------------------------------------------------


def test_psum_scatter_every_mode():
    n = 3
    for shape, d in (((n,), 0), ((n, 2), 0), ((2, n), 1), ((2, 4, n), -1), ((4, n, 2), 1)):
        X = _rand(n, *shape)
        _close(_named(lambda v: lax.psum_scatter(v, "i", scatter_dimension=d))(X), np_psum_scatter(X, d % len(shape)))
    for shape, d in (((2 * n,), 0), ((n, 2), 0), ((2, 3 * n), 1), ((4, 2 * n, 2), 1)):
        X = _rand(n, *shape)
        got = _named(lambda v: lax.psum_scatter(v, "i", scatter_dimension=d, tiled=True))(X)
        _close(got, np_psum_scatter(X, d, tiled=True))
    # reduce_scatter is the same function; integers add up exactly (and wrap as psum's sums do).
    ints = RNG.integers(-50, 50, (4, 4, 2)).astype(np.int32)
    np.testing.assert_array_equal(_named(lambda v: lax.reduce_scatter(v, "i"))(ints), np_psum_scatter(ints))
    # Hand-derived: three examples of [a, b, c]; example i keeps entry i of their sum [111, 222, 333].
    x = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [100.0, 200.0, 300.0]], np.float32)
    _close(_named(lambda v: lax.psum_scatter(v, "i"))(x), [111.0, 222.0, 333.0])


def test_ppermute_and_pshuffle():
    X = _rand(4, 2, 3)
    for perm in ([(0, 1), (1, 2), (2, 3), (3, 0)], [(3, 0), (0, 3)], [(1, 1)], [], [(0, 2), (1, 0), (2, 1), (3, 3)],
                 [(2, 0), (3, 1)]):  # fmt: skip
        _close(_named(lambda v: lax.ppermute(v, "i", perm))(X), np_ppermute(X, perm))
    # Hand-derived, with the zeros of the examples that receive nothing.
    got = _named(lambda v: lax.ppermute(v, "i", ((0, 3), (3, 1))))(enp.asarray([1, 2, 3, 4]))
    assert np.asarray(got).tolist() == [0, 4, 0, 1]
    flags = _named(lambda v: lax.ppermute(v, "i", [(0, 1)]))(enp.asarray([True, True]))
    assert np.asarray(flags).tolist() == [False, True]
    _close(_named(lambda v: lax.pshuffle(v, "i", [3, 2, 0, 1]))(X), X[[3, 2, 0, 1]])
    # 0-d examples, a pytree, perm given as lists or NumPy ints
    out = _named(lambda v: lax.ppermute({"a": v, "b": (v * 2,)}, "i", [[np.int64(0), 1], [1, 0]]))(enp.asarray([1.0, 2.0]))
    _close(out["a"], [2.0, 1.0])
    _close(out["b"][0], [4.0, 2.0])


def test_all_to_all_every_axis_pair():
    n = 3
    X = _rand(n, n, 2, n)  # each example (n, 2, n): split_axis 0 or 2 has the axis size
    for a, c in itertools.product((0, 2, -1), range(-3, 3)):
        got = _named(lambda v: lax.all_to_all(v, "i", a, c))(X)
        _close(got, np_all_to_all(X, a % 3, c % 3))
    Y = _rand(n, 2 * n, 2, n)
    for a, c in itertools.product((0, 2), range(3)):
        _close(_named(lambda v: lax.all_to_all(v, "i", a, c, tiled=True))(Y), np_all_to_all(Y, a, c, tiled=True))
    # Untiled over a square (N, N) per example with split 0, concat 0 is the block transpose: y_i[j] = x_j[i].
    sq = _rand(4, 4)
    _close(_named(lambda v: lax.all_to_all(v, "i", 0, 0))(sq), sq.T)
    _close(_named(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True))(sq), sq.T)
    # Shapes: np.insert(np.delete(shape, split), concat, N) untiled; split / N and concat * N tiled.
    assert _named(lambda v: lax.all_to_all(v, "i", 2, 0))(_rand(n, 5, 2, n)).shape == (n, n, 5, 2)
    assert _named(lambda v: lax.all_to_all(v, "i", 0, 2, tiled=True))(_rand(n, 2 * n, 5, 1)).shape == (n, 2, 5, n)


def test_unmapped_operands():
    c = _rand(2, 3)
    ones = enp.ones(2)
    _close(_named(lambda v: lax.psum_scatter(c, "i") + 0 * v)(ones), 2 * c)
    _close(_named(lambda v: lax.psum_scatter(c, "i", scatter_dimension=1, tiled=False) + 0 * v)(enp.ones(3)),
           np_psum_scatter(np.stack([c] * 3), 1))  # fmt: skip
    _close(_named(lambda v: lax.ppermute(c, "i", [(0, 1), (1, 0)]) + 0 * v)(ones), np.stack([c, c]))
    _close(_named(lambda v: lax.ppermute(c, "i", [(0, 1)]) + 0 * v)(ones), np.stack([np.zeros_like(c), c]))
    _close(_named(lambda v: lax.all_to_all(c, "i", 0, 1) + 0 * v)(ones), np_all_to_all(np.stack([c, c]), 0, 1))


def test_an_empty_axis():
    # Zero examples: nothing to exchange, and the shapes follow the same rules.
    assert _named(lambda v: lax.ppermute(v, "i", []))(np.ones((0, 2), np.float32)).shape == (0, 2)
    assert _named(lambda v: lax.psum_scatter(v, "i"))(np.ones((0, 0, 2), np.float32)).shape == (0, 2)
    assert _named(lambda v: lax.all_to_all(v, "i", 0, 1))(np.ones((0, 0, 2), np.float32)).shape == (0, 2, 0)


def test_nested_vmaps_with_two_names():
    X = _rand(2, 3, 3, 2)  # outer "a" of size 2, inner "b" of size 3; each example (3, 2)

    def f(v):
        return (lax.psum_scatter(v, "b"), lax.psum_scatter(v, "a", scatter_dimension=1), lax.ppermute(v, "a", [(0, 1)]),
                lax.all_to_all(v, "b", 0, 1), lax.all_to_all(v, "a", 1, 0))  # fmt: skip

    s_b, s_a, p_a, t_b, t_a = ember.vmap(ember.vmap(f, axis_name="b"), axis_name="a")(X)
    _close(s_b, np.stack([np_psum_scatter(X[k]) for k in range(2)]))
    _close(s_a, np.stack([np_psum_scatter(X[:, m], 1) for m in range(3)], axis=1))
    _close(p_a, np.stack([np_ppermute(X[:, m], [(0, 1)]) for m in range(3)], axis=1))
    _close(t_b, np.stack([np_all_to_all(X[k], 0, 1) for k in range(2)]))
    _close(t_a, np.stack([np_all_to_all(X[:, m], 1, 0) for m in range(3)], axis=1))
    # The named vmap inside an unnamed one, mapped over another axis of the input.
    Z = _rand(3, 5, 3)  # vmapped over axis 1 (no name), then axis 0 named
    got = ember.vmap(_named(lambda v: lax.all_to_all(v, "i", 0, 0)), in_axes=1)(Z)
    _close(got, np.stack([np_all_to_all(Z[:, k], 0, 0) for k in range(5)]))


def test_under_jit():
    X = _rand(4, 16, 4)
    perm = [(0, 1), (1, 2), (2, 3), (3, 0)]
    f = _named(lambda v: lax.ppermute(lax.all_to_all(lax.psum_scatter(v, "i", tiled=True) * 2, "i", 0, 1, tiled=True), "i", perm))
    want = np_ppermute(np_all_to_all(np_psum_scatter(X, 0, tiled=True) * 2, 0, 1, tiled=True), perm)
    _close(ember.jit(f)(X), want)
    _close(_named(ember.jit(lambda v: lax.ppermute(lax.psum_scatter(v, "i"), "i", perm)))(X[:, :4]),
           np_ppermute(np_psum_scatter(X[:, :4]), perm))  # fmt: skip


# --- transposes and derivatives -----------------------------------------------------------------------------

CASES = [  # (name, per-example function, per-example input shape, axis size)
    ("psum_scatter", lambda v: lax.psum_scatter(v, "i"), (4, 2), 4),
    ("psum_scatter dim 1", lambda v: lax.psum_scatter(v, "i", scatter_dimension=1), (2, 3), 3),
    ("psum_scatter tiled", lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True), (2, 6), 3),
    ("ppermute", lambda v: lax.ppermute(v, "i", [(0, 2), (2, 1), (3, 0)]), (2,), 4),
    ("pshuffle", lambda v: lax.pshuffle(v, "i", [1, 2, 0]), (2, 2), 3),
    ("all_to_all", lambda v: lax.all_to_all(v, "i", 1, 0), (2, 3), 3),
    ("all_to_all split=concat", lambda v: lax.all_to_all(v, "i", 0, 0), (3, 2), 3),
    ("all_to_all tiled", lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), (6, 2), 3),
    ("all_gather tiled (psum_scatter transpose)", lambda v: lax.all_gather(v, "i", axis=1, tiled=True), (2, 2), 3),
]


@pytest.mark.parametrize("name,f,shape,n", CASES, ids=[c[0] for c in CASES])
def test_transpose_rules_pass_the_dot_product_test(name, f, shape, n):
    # Each example pulls back its own cotangent inside the vmap, so the collective's transpose rule runs.
    x = _rand(n, *shape)
    y = _named(f)(x)
    ct = _rand(*y.shape)
    back = _named(lambda v, w: ember.vjp(f, v)[1](w)[0])(x, ct)
    assert back.shape == x.shape
    _close(np.vdot(ct, np.asarray(y)), np.vdot(np.asarray(back), x), rtol=1e-4)
    # The same through linear_transpose of the per-example function, and outside the vmap.
    lt = _named(lambda w: ember.linear_transpose(f, enp.zeros(shape))(w)[0])(ct)
    _close(lt, back)
    (outside,) = ember.vjp(_named(f), x)[1](ct)
    _close(outside, back)


def _matrix(np_f, n_in):
    """The matrix of a linear NumPy map of a flat vector, column by column."""
    return np.stack([np_f(e).ravel() for e in np.eye(n_in, dtype=np.float32)], axis=1)


@pytest.mark.parametrize("name,f,shape,n", CASES[:8], ids=[c[0] for c in CASES[:8]])
def test_jacobians_are_the_numpy_linear_maps(name, f, shape, n):
    x = _rand(n, *shape)
    refs = {"psum_scatter": lambda X: np_psum_scatter(X), "psum_scatter dim 1": lambda X: np_psum_scatter(X, 1),
            "psum_scatter tiled": lambda X: np_psum_scatter(X, 1, tiled=True),
            "ppermute": lambda X: np_ppermute(X, [(0, 2), (2, 1), (3, 0)]), "pshuffle": lambda X: X[[1, 2, 0]],
            "all_to_all": lambda X: np_all_to_all(X, 1, 0), "all_to_all split=concat": lambda X: np_all_to_all(X, 0, 0),
            "all_to_all tiled": lambda X: np_all_to_all(X, 0, 1, tiled=True)}  # fmt: skip
    want = _matrix(lambda e: refs[name](e.reshape(x.shape)), x.size)
    g = _named(f)
    flat = lambda v: g(v.reshape(x.shape)).reshape(-1)  # noqa: E731
    _close(ember.jacrev(flat)(x.reshape(-1)), want)
    _close(ember.jacfwd(flat)(x.reshape(-1)), want)
    # jvp inside the vmap: the tangent goes through the same linear map
    t = _rand(*x.shape)
    _close(_named(lambda v, s: ember.jvp(f, (v,), (s,))[1])(x, t), refs[name](t))


def test_grad_inside_the_vmap_is_the_grad_of_the_total():
    x = _rand(3, 3)
    for f in (lambda v: enp.sum(lax.psum_scatter(v, "i") ** 2) * v[0],
              lambda v: enp.sum(enp.sin(lax.ppermute(v, "i", [(0, 1), (1, 2)])) * v),
              lambda v: enp.sum(lax.all_to_all(v * v, "i", 0, 0) * enp.cos(v))):  # fmt: skip
        per = _named(ember.grad(f))(x)
        whole = ember.grad(lambda xs, f=f: _named(f)(xs).sum())(x)
        _close(per, whole, rtol=1e-4, atol=1e-4)
    # By hand: d/dx_j sum_i (S_i)^2 with S = sum_j x_j scattered (untiled) is 2 S, the same for every j.
    x4 = _rand(4, 4)
    by_hand = 2 * np.broadcast_to(x4.sum(0), (4, 4))
    _close(_named(ember.grad(lambda v: lax.psum_scatter(v, "i") ** 2))(x4), by_hand, rtol=1e-4, atol=1e-4)
    # ppermute's gradient flows back along the pairs: example 0 sends to 1, so d(y_1)/d(x_0) = 1.
    got = ember.grad(lambda v: (_named(lambda u: lax.ppermute(u, "i", [(0, 1)]))(v) * enp.asarray([5.0, 7.0])).sum())(
        enp.asarray([1.0, 2.0]))  # fmt: skip
    _close(got, [7.0, 0.0])


# --- errors ----------------------------------------------------------------------------------------------


def test_error_messages():
    ones = enp.ones((3, 3))
    for call in (lambda: lax.psum_scatter(ones, "i"), lambda: lax.reduce_scatter(ones, "i"),
                 lambda: lax.ppermute(ones, "i", [(0, 1)]), lambda: lax.pshuffle(ones, "i", [0]),
                 lambda: lax.all_to_all(ones, "i", 0, 0)):  # fmt: skip
        with pytest.raises(UnboundAxisNameError, match="unbound axis name 'i'"):
            call()
    with pytest.raises(UnboundAxisNameError, match="ppermute: unbound axis name 'j'.*'i'"):
        _named(lambda v: lax.ppermute(v, "j", []))(ones)
    with pytest.raises(InvalidArgumentError, match=r"ppermute: pair \(0, 3\) is out of range for axis 'i' of size 3"):
        _named(lambda v: lax.ppermute(v, "i", [(0, 3)]))(ones)
    with pytest.raises(InvalidArgumentError, match=r"ppermute: pairs \(0, 1\) and \(0, 2\) share their source.*size 3"):
        _named(lambda v: lax.ppermute(v, "i", [(0, 1), (0, 2)]))(ones)
    with pytest.raises(InvalidArgumentError, match=r"pairs \(0, 1\) and \(2, 1\) share their destination"):
        _named(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]))(ones)
    with pytest.raises(InvalidArgumentError, match="ppermute: each entry of perm is a .source, destination. pair"):
        _named(lambda v: lax.ppermute(v, "i", [(0, 1, 2)]))(ones)
    with pytest.raises(InvalidArgumentError, match="ppermute: the entries of perm must be ints, got 0.5"):
        _named(lambda v: lax.ppermute(v, "i", [(0.5, 1)]))(ones)
    with pytest.raises(InvalidArgumentError, match=r"pshuffle: perm \[0, 0, 1\] is not a permutation of range\(3\)"):
        _named(lambda v: lax.pshuffle(v, "i", [0, 0, 1]))(ones)
    with pytest.raises(ShapeError, match=r"psum_scatter: dimension 0 of operand float32\(2,\) has size 2, but axis 'i' has 3"):
        _named(lambda v: lax.psum_scatter(v, "i"))(enp.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"all_to_all: dimension 1 of operand float32\(3, 4\) has size 4, which does not "
                                         r"split into 3 equal blocks"):  # fmt: skip
        _named(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True))(enp.ones((3, 3, 4)))
    with pytest.raises(ShapeError, match="all_to_all: dimension 0 .* but axis 'i' has 3 examples"):
        _named(lambda v: lax.all_to_all(v, "i", 0, 0))(enp.ones((3, 2)))
    with pytest.raises(InvalidArgumentError, match=r"psum_scatter: an operand of shape \(\) \(0-d\) has no scatter_dimension"):
        _named(lambda v: lax.psum_scatter(v, "i"))(enp.ones(3))
    with pytest.raises(InvalidArgumentError, match="all_to_all: concat_axis 2 is out of range .* shape \\(3,\\) .*-1 to 0"):
        _named(lambda v: lax.all_to_all(v, "i", 0, 2))(ones)
    with pytest.raises(InvalidArgumentError, match="all_to_all: split_axis must be an int"):
        _named(lambda v: lax.all_to_all(v, "i", None, 0))(ones)
    with pytest.raises(InvalidArgumentError, match="one named axis"):
        _named(lambda v: lax.psum_scatter(v, ("i", "j")))(ones)
    with pytest.raises(InvalidArgumentError, match="axis_index_groups"):
        _named(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 1, 2]]))(ones)
    with pytest.raises(DTypeError, match="psum_scatter"):
        _named(lambda v: lax.psum_scatter(v, "i"))(enp.ones((3, 3), dtype=bool))
    for f in (lambda v: lax.psum_scatter(v, "i"), lambda v: lax.ppermute(v, "i", [(0, 1)]),
              lambda v: lax.all_to_all(v, "i", 0, 0)):  # fmt: skip
        with pytest.raises(InvalidArgumentError, match="chunk_size"):
            _named(f, chunk_size=2)(ones)
