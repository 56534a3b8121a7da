"""vmap through indexing: gather, the scatter family and the dynamic slices, each against a Python
loop over the examples.

Every case runs with the batch axis of each argument in several places (first, second, last,
or not mapped), so the batching rules meet the operand batched only, the indices batched only,
and both. Any fallback to ember's loop rule (a primitive without a batching rule) warns, and the
warning is an error here. Out-of-bounds modes (clip, fill, drop) must act per example exactly as
in the example's own call; duplicate indices must resolve (set) or accumulate (add, multiply,
min, max) as they do there. vmap of grad, grad of vmap and nested vmaps are covered too.
"""

from __future__ import annotations

import numpy as np
import pytest
from vmap_check import vmap_matches_loop

import ember
import ember.numpy as enp
from ember import lax
from ember.core.primitives import indexing as ix

pytestmark = pytest.mark.filterwarnings("error::UserWarning")

B = 4
GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
SCALAR_DN = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


@pytest.fixture(autouse=True)
def _x64():
    with ember.config.x64(True):
        yield


def _rng(*key):
    return np.random.default_rng([11, *map(ord, "".join(map(str, key)))])


def _examples(make, n=B):
    """n examples from `make(b)`; arguments that in_axes leaves unmapped take example 0's."""
    return [make(b) for b in range(n)]


def _shared(examples, in_axes):
    """The examples with unmapped arguments replaced by example 0's (what vmap sees)."""
    return [[a if ax is not None else examples[0][k] for k, (a, ax) in enumerate(zip(ex, in_axes))] for ex in examples]


def _run(f, make, in_axes, exact=False):
    vmap_matches_loop(f, _shared(_examples(make), in_axes), in_axes, exact)


def test_every_indexing_primitive_has_a_batching_rule():
    for prim in (ix.gather_p, ix.scatter_p, ix.scatter_add_p, ix.scatter_mul_p, ix.scatter_min_p, ix.scatter_max_p,
                 ix.dynamic_slice_p, ix.dynamic_update_slice_p):  # fmt: skip
        assert prim.batch is not None, prim.name


# --- x[idx]: per-example indices ----------------------------------------------------------------

AXES_2 = [(None, 0), (None, 1), (None, -1), (0, None), (1, None), (-1, None), (0, 0), (1, 0), (0, -1), (-1, 1)]


@pytest.mark.parametrize("in_axes", AXES_2, ids=str)
def test_getitem_per_example_indices(in_axes):
    rng = _rng("getitem", in_axes)

    def make(b):
        return [rng.standard_normal((5, 6)), rng.integers(-5, 5, size=(3, 2))]

    _run(lambda x, i: x[i], make, in_axes)
    _run(lambda x, i: x[i, 1:5:2], make, in_axes)
    _run(lambda x, i: x[:, i % 6], make, in_axes)
    _run(lambda x, i: x[i, i % 6], make, in_axes)


@pytest.mark.parametrize("in_axes", AXES_2, ids=str)
def test_getitem_separated_advanced_indices(in_axes):
    rng = _rng("separated", in_axes)

    def make(b):
        return [rng.standard_normal((4, 3, 5)), rng.integers(0, 4, size=(2,))]

    _run(lambda x, i: x[i, :, i + 1], make, in_axes)
    _run(lambda x, i: x[..., i], make, in_axes)


@pytest.mark.parametrize("in_axes", AXES_2, ids=str)
def test_take_and_take_along_axis(in_axes):
    rng = _rng("take", in_axes)

    def make(b):
        return [rng.standard_normal((4, 5)), rng.integers(0, 4, size=(4, 5))]

    _run(lambda x, i: enp.take_along_axis(x, i, axis=0), make, in_axes)
    _run(lambda x, i: enp.take(x, i[0], axis=1), make, in_axes)


# --- x.at[idx].op(values): duplicates, per example ------------------------------------------------

AXES_3 = [(0, 0, 0), (None, 0, 0), (0, None, 0), (0, 0, None), (None, None, 0), (None, 0, None), (0, None, None),
          (1, -1, 1), (-1, 0, None)]  # fmt: skip


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("in_axes", AXES_3, ids=str)
def test_at_update_with_duplicate_indices(method, in_axes):
    rng = _rng("at", method, in_axes)

    def make(b):
        # 6 indices into 4 rows: every example has duplicates, different ones
        return [rng.standard_normal((4, 3)), rng.integers(-4, 4, size=(6,)), rng.standard_normal((6, 3))]

    def f(x, i, v):
        return getattr(x.at[i], method)(v)

    _run(f, make, in_axes, exact=method in ("set", "min", "max"))


@pytest.mark.parametrize("in_axes", AXES_3, ids=str)
def test_at_set_integer_values_last_write_wins(in_axes):
    rng = _rng("set-int", in_axes)

    def make(b):
        return [rng.integers(0, 100, size=(5,)).astype(np.int32), rng.integers(0, 3, size=(8,)),
                rng.integers(100, 200, size=(8,)).astype(np.int32)]  # fmt: skip

    _run(lambda x, i, v: x.at[i].set(v), make, in_axes, exact=True)
    _run(lambda x, i, v: x.at[i].add(v), make, in_axes, exact=True)


# --- out-of-bounds modes, per example ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("in_axes", AXES_2, ids=str)
def test_get_out_of_bounds_modes(mode, in_axes):
    rng = _rng("get-oob", mode, in_axes)

    def make(b):
        # some examples in bounds, some not (different indices out of bounds per example)
        return [rng.standard_normal((5, 3)), rng.integers(-8, 9, size=(4,)) + (7 if b == 2 else 0)]

    _run(lambda x, i: x.at[i].get(mode=mode, fill_value=-7.0), make, in_axes, exact=True)
    if mode == "fill":
        _run(lambda x, i: x.at[i].get(mode=mode), make, in_axes, exact=True)  # the default fill: NaN


@pytest.mark.parametrize("mode", ["clip", "drop"])
@pytest.mark.parametrize("method", ["set", "add", "max"])
@pytest.mark.parametrize("in_axes", AXES_3, ids=str)
def test_update_out_of_bounds_modes(mode, method, in_axes):
    rng = _rng("at-oob", mode, method, in_axes)

    def make(b):
        return [rng.standard_normal((5,)), rng.integers(-9, 10, size=(6,)), rng.standard_normal((6,))]

    _run(lambda x, i, v: getattr(x.at[i], method)(v, mode=mode), make, in_axes, exact=method != "add")


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("in_axes", AXES_2, ids=str)
def test_lax_gather_windows_per_example(mode, in_axes):
    # Windows of 2x3 out of a 5x6 operand: clip moves each example's window inside, fill replaces the
    # whole window of an example whose start does not fit (promise_in_bounds clamps on this backend).
    rng = _rng("gather-win", mode, in_axes)
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))

    def make(b):
        return [rng.standard_normal((5, 6)), rng.integers(-2, 6, size=(3, 2))]

    _run(lambda x, i: lax.gather(x, i, dn, (2, 3), mode=mode, fill_value=0.5), make, in_axes, exact=True)
    dn2 = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    _run(lambda x, i: lax.gather(x, i[:, :1], dn2, (1, 4), mode=mode), make, in_axes, exact=True)


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("prim", ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("in_axes", AXES_3, ids=str)
def test_lax_scatter_windows_per_example(mode, prim, in_axes):
    rng = _rng("scatter-win", mode, prim, in_axes)
    dn = SDN(update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1))

    def make(b):
        return [rng.standard_normal((5, 6)), rng.integers(-2, 6, size=(3, 2)), rng.standard_normal((3, 2, 3))]

    fn = getattr(lax, prim)
    _run(lambda x, i, u: fn(x, i, u, dn, mode=mode), make, in_axes, exact=prim != "scatter_add" and prim != "scatter_mul")


# --- the dynamic slices: per-example offsets --------------------------------------------------------

AXES_DS = [(None, 0, 0), (None, 0, None), (None, None, -1), (0, None, None), (1, None, None), (0, 0, 0), (-1, 0, None),
           (0, None, 0)]  # fmt: skip


@pytest.mark.parametrize("in_axes", AXES_DS, ids=str)
def test_dynamic_slice_per_example_offsets(in_axes):
    rng = _rng("ds", in_axes)

    def make(b):
        # starts beyond either end too: clamped so the slice fits, per example
        return [rng.standard_normal((5, 7)), np.asarray(rng.integers(-3, 8), np.int32), np.asarray(rng.integers(-3, 9))]

    _run(lambda x, s, t: lax.dynamic_slice(x, (s, t), (2, 3)), make, in_axes, exact=True)
    _run(lambda x, s, t: lax.dynamic_slice(x, (s, 1), (3, 7)), make, in_axes, exact=True)
    _run(lambda x, s, t: lax.dynamic_index_in_dim(x, t, axis=1, keepdims=False), make, in_axes, exact=True)
    _run(lambda x, s, t: lax.dynamic_slice_in_dim(x, s, 0, axis=0), make, in_axes, exact=True)  # empty slices


AXES_DUS = [(None, None, 0, 0), (0, None, 0, None), (None, 0, None, 0), (0, 0, None, None), (None, 0, None, None),
            (1, -1, 0, 0), (0, 0, 0, 0), (-1, None, None, 0)]  # fmt: skip


@pytest.mark.parametrize("in_axes", AXES_DUS, ids=str)
def test_dynamic_update_slice_per_example_offsets(in_axes):
    rng = _rng("dus", in_axes)

    def make(b):
        return [rng.standard_normal((5, 7)), rng.standard_normal((2, 3)), np.asarray(rng.integers(-3, 8), np.int32),
                np.asarray(rng.integers(-3, 9))]  # fmt: skip

    _run(lambda x, u, s, t: lax.dynamic_update_slice(x, u, (s, t)), make, in_axes, exact=True)
    _run(lambda x, u, s, t: lax.dynamic_update_index_in_dim(x, u[0, :], s, 0)[:, :3], make, in_axes, exact=True)


def test_dynamic_slice_of_a_scalar_operand():
    xs = enp.arange(4.0)
    np.testing.assert_array_equal(np.asarray(ember.vmap(lambda x: lax.dynamic_slice(x, (), ()))(xs)), np.arange(4.0))
    out = ember.vmap(lambda x, u: lax.dynamic_update_slice(x, u, ()))(xs, xs + 1)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) + 1)


# --- composition: nested vmap, vmap of grad, grad of vmap -------------------------------------------


def test_nested_vmap_gather_and_scatter():
    rng = _rng("nested")
    x = rng.standard_normal((3, 4, 6))
    i = rng.integers(-6, 6, size=(3, 4, 5))
    v = rng.standard_normal((4, 5))

    def f(x, i, v):
        return x[i] * 2 + x.at[i].add(v)[i % 3] - x.at[i % 4].set(v).sum()

    got = ember.vmap(ember.vmap(f, in_axes=(0, 0, 0)), in_axes=(0, 0, None))(enp.asarray(x), enp.asarray(i), enp.asarray(v))
    want = np.stack([np.stack([np.asarray(f(enp.asarray(x[a, b]), enp.asarray(i[a, b]), enp.asarray(v[b])))
                               for b in range(4)]) for a in range(3)])  # fmt: skip
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    # the inner vmap over the indices only, the outer over both: batching dimensions already present
    j = i % 4
    got = ember.vmap(ember.vmap(lambda x, i: x[i], in_axes=(None, 0)), in_axes=(0, 0))(enp.asarray(x), enp.asarray(j))
    want = np.stack([np.stack([x[a][j[a, b]] for b in range(4)]) for a in range(3)])
    np.testing.assert_array_equal(np.asarray(got), want)
    got = ember.vmap(ember.vmap(lambda x, s: lax.dynamic_slice(x, (s[0],), (2,)), in_axes=(0, 0)), in_axes=(0, None))(
        enp.asarray(x), enp.asarray(i[0]))  # fmt: skip
    starts = np.clip(i[0, :, 0], 0, 4)
    want = np.stack([np.stack([x[a, b, starts[b]:starts[b] + 2] for b in range(4)]) for a in range(3)])
    np.testing.assert_array_equal(np.asarray(got), want)


def _loss(x, i, s):
    y = x[i] * x[i % 3]  # gather with duplicates
    z = x.at[i].add(y)  # scatter_add with duplicates
    w = z.at[i % 2].multiply(1.5).at[i].max(y).at[(i + 1) % 5].set(y**2)  # scatter_mul, scatter_max, scatter
    d = lax.dynamic_slice(w, (s, 0), (2, 3))
    u = lax.dynamic_update_slice(w, d * 3.0, (s + 1, 0))
    return (enp.sin(u).sum() + (d * d).sum() + x.at[i].get(mode="fill", fill_value=0.0).sum())


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, None), (None, 0, 0), (None, None, 0), (1, 0, None)], ids=str)
def test_vmap_of_grad(in_axes):
    rng = _rng("vmap-grad", in_axes)

    def make(b):
        return [rng.standard_normal((5, 3)), rng.integers(-5, 5, size=(7,)), np.asarray(rng.integers(-1, 6))]

    g = ember.grad(_loss)
    _run(g, make, in_axes)
    _run(ember.grad(lambda x, i, s: _loss(x, i, s) ** 2), make, in_axes)


def test_grad_of_vmap_and_jvp_of_vmap():
    rng = _rng("grad-vmap")
    xs = rng.standard_normal((B, 5, 3))
    idx = rng.integers(-5, 5, size=(B, 7))
    starts = rng.integers(-1, 6, size=(B,))

    def total(xs):
        return ember.vmap(_loss)(xs, enp.asarray(idx), enp.asarray(starts)).sum()

    got = ember.grad(total)(enp.asarray(xs))
    want = np.stack([np.asarray(ember.grad(_loss)(enp.asarray(xs[b]), enp.asarray(idx[b]), enp.asarray(starts[b])))
                     for b in range(B)])  # fmt: skip
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    t = rng.standard_normal(xs.shape)
    _, tangent = ember.jvp(total, (enp.asarray(xs),), (enp.asarray(t),))
    np.testing.assert_allclose(float(tangent), float((want * t).sum()), rtol=1e-10)


def test_per_sample_gradients_of_an_embedding_lookup():
    # The typical use: per-example gradients of a loss that looks rows up in a shared table.
    rng = _rng("embedding")
    table = rng.standard_normal((10, 4))
    tokens = rng.integers(0, 10, size=(B, 6))  # repeated tokens within examples
    targets = rng.standard_normal((B, 4))

    def loss(table, tok, target):
        return ((table[tok].mean(axis=0) - target) ** 2).sum()

    got = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))(enp.asarray(table), enp.asarray(tokens), enp.asarray(targets))
    for b in range(B):
        want = ember.grad(loss)(enp.asarray(table), enp.asarray(tokens[b]), enp.asarray(targets[b]))
        np.testing.assert_allclose(np.asarray(got[b]), np.asarray(want), rtol=1e-12, atol=1e-12)
