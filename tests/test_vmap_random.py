"""Randomness under vmap: mapping over a batch of keys gives every example the stream its own key
gives alone, bit for bit, for every function of ember.random. Keys are ordinary uint32 arrays of
shape (2,), so vmap needs nothing special: the threefry2x32 primitive and everything built on it
(sort for permutations, top_k and cumsum for choice, ...) have batching rules: a fallback to vmap's
slow loop (a missing rule) fails the test."""

from __future__ import annotations

import numpy as np
import pytest
from vmap_check import no_loop_fallback  # noqa: F401 - an autouse fixture: vmap's loop fallback fails these tests

import ember
import ember.numpy as enp
import ember.random as er

B = 4


def _keys(n=B, seed=0):
    return er.split(er.key(seed), n)


def _loop(fn, *args, in_axes=0):
    """fn applied to each example of the mapped arguments (axis 0 or None per argument), stacked."""
    axes = (in_axes,) * len(args) if isinstance(in_axes, int) or in_axes is None else in_axes
    size = next(np.shape(a)[0] for a, ax in zip(args, axes) if ax is not None)
    outs = [fn(*[a if ax is None else a[i] for a, ax in zip(args, axes)]) for i in range(size)]
    if isinstance(outs[0], (tuple, list)):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def _check(fn, *args, in_axes=0):
    got = ember.vmap(fn, in_axes=in_axes)(*args)
    want = _loop(fn, *args, in_axes=in_axes)
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    else:
        _same(got, want)
    return got


# --- keys ------------------------------------------------------------------------------------------


def test_split_and_fold_in_per_key():
    keys = _keys()
    _check(lambda k: er.split(k), keys)
    _check(lambda k: er.split(k, (2, 3)), keys)
    _check(lambda k: er.fold_in(k, 7), keys)
    # Batched data (one key), and both batched.
    data = enp.arange(B, dtype="uint32")
    _check(er.fold_in, er.key(3), data, in_axes=(None, 0))
    _check(er.fold_in, keys, data)
    # fold_in(k, i) == split(k, n)[i] also under vmap.
    _same(ember.vmap(er.fold_in, in_axes=(None, 0))(er.key(3), data), er.split(er.key(3), B))


def test_keys_from_batched_seeds():
    seeds = enp.asarray(np.array([0, 1, 2**31 - 1, 12345], np.int32))
    _check(er.key, seeds)
    _check(lambda s: er.normal(er.key(s), (3,)), seeds)


def test_raw_threefry_and_bits():
    keys = _keys()
    counts = enp.asarray(np.arange(B * 5, dtype=np.uint32).reshape(B, 5))
    _check(er.threefry2x32, keys, counts)
    _check(er.threefry2x32, er.key(1), counts, in_axes=(None, 0))
    _check(er.threefry2x32, keys, counts[0], in_axes=(0, None))
    for dtype in ("uint8", "uint16", "uint32"):
        _check(lambda k, dtype=dtype: er.bits(k, (2, 3), dtype), keys)
    with ember.config.x64(True):
        _check(lambda k: er.bits(k, (5,), "uint64"), _keys())


def test_the_primitive_broadcasts_unbatched_operands():
    from ember.core.primitives.random import threefry2x32_p

    rng = np.random.default_rng(0)
    # Per example: key words of shapes () and (1,), counters of shapes (3,) and (2, 1).
    shapes = ((), (1,), (3,), (2, 1))
    batched = [rng.integers(0, 2**32, size=(B, *s), dtype=np.uint32) for s in shapes]
    for axes in [(0, None, 0, None), (None, None, 0, None), (0, 0, None, None), (0, None, -1, 1), (None, 0, 0, 0)]:
        args = []
        for x, a in zip(batched, axes):
            args.append(enp.asarray(x[0] if a is None else np.moveaxis(x, 0, a % x.ndim)))
        got = ember.vmap(lambda *w: threefry2x32_p.bind(*w), in_axes=axes)(*args)
        examples = [[x[0] if a is None else x[i] for x, a in zip(batched, axes)] for i in range(B)]
        for k in range(2):
            want = np.stack([np.asarray(threefry2x32_p.bind(*map(enp.asarray, e))[k]) for e in examples])
            _same(got[k], want)


# --- distributions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_uniform(dtype):
    keys = _keys()
    _check(lambda k: er.uniform(k, (3, 2), dtype), keys)
    lo = enp.asarray(np.linspace(-3, 0, B).astype(np.float32))
    hi = enp.asarray(np.linspace(1, 5, B).astype(np.float32))
    # Batched bounds with one key, and everything batched.
    _check(lambda k, a, b: er.uniform(k, (3,), "float32", a, b), er.key(1), lo, hi, in_axes=(None, 0, 0))
    _check(lambda k, a, b: er.uniform(k, (3,), "float32", a, b), keys, lo, hi)


def test_normal_gumbel_truncated_normal():
    keys = _keys()
    for dtype in ("float32", "complex64"):
        _check(lambda k, dtype=dtype: er.normal(k, (5,), dtype), keys)
    _check(lambda k: er.gumbel(k, (2, 2)), keys)
    lower = enp.asarray(np.array([-1.0, -2.0, 0.0, 0.5], np.float32))
    _check(lambda k, lo: er.truncated_normal(k, lo, 2.0, (6,)), keys, lower)


def test_randint_and_bernoulli():
    keys = _keys()
    _check(lambda k: er.randint(k, (6,), 0, 10), keys)
    _check(lambda k: er.randint(k, (6,), -(2**30), 2**30), keys)
    _check(lambda k: er.randint(k, (4,), 0, 200, "uint8"), keys)
    hi = enp.asarray(np.array([1, 5, 100, 2**20], np.int32))
    _check(lambda k, h: er.randint(k, (3,), 0, h), keys, hi)
    p = enp.asarray(np.array([0.0, 0.3, 0.7, 1.0], np.float32))
    _check(lambda k, p: er.bernoulli(k, p, (8,)), keys, p)
    _check(lambda k: er.bernoulli(k, 0.5, (8,)), keys)


def test_permutation_and_choice():
    keys = _keys()
    x = enp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    _check(lambda k: er.permutation(k, 10), keys)
    _check(lambda k: er.permutation(k, x, axis=1), keys)
    _check(lambda k: er.permutation(k, x, axis=0, independent=True), keys)
    xs = enp.asarray(np.random.default_rng(1).standard_normal((B, 7)).astype(np.float32))
    _check(lambda k, v: er.permutation(k, v), keys, xs)  # both mapped
    _check(lambda k: er.choice(k, 10, (3,)), keys)
    _check(lambda k: er.choice(k, 10, (4,), replace=False), keys)
    p = enp.asarray(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    _check(lambda k: er.choice(k, 4, (5,), p=p), keys)
    _check(lambda k: er.choice(k, 4, (3,), replace=False, p=p), keys)
    ps = enp.asarray(np.random.default_rng(2).uniform(0.1, 1.0, (B, 4)).astype(np.float32))
    _check(lambda k, p: er.choice(k, 4, (5,), p=p), keys, ps)


def test_categorical():
    keys = _keys()
    logits = enp.asarray(np.random.default_rng(3).standard_normal((B, 5)).astype(np.float32))
    _check(lambda k: er.categorical(k, logits[0], shape=(6,)), keys)
    _check(lambda k, lg: er.categorical(k, lg), keys, logits)
    _check(lambda k, lg: er.categorical(k, lg, shape=(3,)), er.key(0), logits, in_axes=(None, 0))


# --- how the batch is laid out ---------------------------------------------------------------------


def test_keys_mapped_along_another_axis_and_nested():
    keys = _keys(6)
    # Keys stacked along axis 1: shape (2, B).
    by_column = ember.vmap(lambda k: er.normal(k, (3,)), in_axes=1)(keys.T)
    _same(by_column, _loop(lambda k: er.normal(k, (3,)), keys))
    # A (2, 3) grid of keys under two vmaps.
    grid = keys.reshape(2, 3, 2)
    nested = ember.vmap(ember.vmap(lambda k: er.uniform(k, (4,))))(grid)
    want = np.stack([np.stack([np.asarray(er.uniform(grid[i, j], (4,))) for j in range(3)]) for i in range(2)])
    _same(nested, want)

    # Split inside the vmap, then draw from both halves.
    def two_draws(k):
        a, b = er.split(k)
        return er.normal(a, (2,)), er.randint(b, (2,), 0, 9)

    _check(two_draws, keys)


def test_chunked_vmap_gives_the_same_streams():
    keys = _keys(7)
    f = lambda k: er.permutation(k, er.uniform(k, (5,)))
    _same(ember.vmap(f, chunk_size=3)(keys), ember.vmap(f)(keys))
    _same(ember.vmap(f)(keys), _loop(f, keys))


def test_examples_get_different_streams():
    out = np.asarray(ember.vmap(lambda k: er.uniform(k, (16,)))(_keys(8)))
    assert len({row.tobytes() for row in out}) == 8


def test_a_model_with_dropout_per_example():
    # A typical use: per-example dropout masks inside vmap(grad), keyed by fold_in of the example index.
    w = enp.asarray(np.random.default_rng(4).standard_normal((3, 3)).astype(np.float32))
    xs = enp.asarray(np.random.default_rng(5).standard_normal((B, 3)).astype(np.float32))

    def loss(w, x, i):
        keep = er.bernoulli(er.fold_in(er.key(0), i), 0.5, (3,))
        h = enp.where(keep, enp.tanh(w @ x), 0.0) / 0.5
        return (h**2).sum()

    idx = enp.arange(B)
    got = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))(w, xs, idx)
    want = np.stack([np.asarray(ember.grad(loss)(w, xs[i], idx[i])) for i in range(B)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
