"""vmap's API: axes specifications, nesting, chunks, composition with grad, the loop fallback,
and the errors for bad input. Every result is checked against a Python loop or NumPy."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.scipy.special
from ember import lax
from ember.errors import ConcretizationError, EmberError, InvalidArgumentError

RNG = np.random.default_rng(0)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


# --- axes ------------------------------------------------------------------------------------------


def test_nested_vmap_to_depth_three():
    x, y = _rand(2, 3, 4, 5), _rand(2, 3, 4, 5)
    f = ember.vmap(ember.vmap(ember.vmap(lambda a, b: a @ b)))
    _close(f(x, y), np.einsum("ijkl,ijkl->ijk", x, y))
    # Different axes at each level: map (outermost) axis 3 of x, then axis 0, then axis 1.
    g = ember.vmap(ember.vmap(ember.vmap(lambda a: a * 2.0, in_axes=1), in_axes=0), in_axes=3)
    want = np.stack([np.stack([np.stack([x[i, :, k, l] * 2 for k in range(4)]) for i in range(2)]) for l in range(5)])
    _close(g(x), want)


def test_in_axes_and_out_axes_as_pytree_prefixes():
    a, b, c = _rand(4, 3), _rand(3), _rand(3, 4)

    def f(p, q):
        return {"sum": p["a"] + p["b"], "q": q}, p["b"] * 2.0

    out = ember.vmap(f, in_axes=({"a": 0, "b": None}, 1), out_axes=({"sum": 1, "q": 0}, None))({"a": a, "b": b}, c)
    first, second = out
    _close(first["sum"], (a + b).T)
    _close(first["q"], c.T)
    _close(second, b * 2)
    # A list in_axes works like a tuple; None leaves in a tuple out_axes, too.
    pair = ember.vmap(lambda x, y: (x * y, y), in_axes=[0, None], out_axes=(0, None))(a, b)
    _close(pair[0], a * b)
    _close(pair[1], b)


def test_negative_axes():
    x = _rand(3, 4, 5)
    _close(ember.vmap(lambda v: v.sum(), in_axes=-1)(x), x.sum(axis=(0, 1)))
    _close(ember.vmap(lambda v: v * 2.0, in_axes=-2, out_axes=-1)(x), np.moveaxis(x, 1, -1) * 2)
    _close(ember.vmap(lambda v: v, in_axes=0, out_axes=-3)(x), x)


def test_axis_size_with_no_mapped_argument():
    x = _rand(3)
    out = ember.vmap(lambda v: v * 2.0, in_axes=None, axis_size=4)(x)
    _close(out, np.broadcast_to(x * 2, (4, 3)))
    _close(ember.vmap(lambda: enp.ones(2), axis_size=3)(), np.ones((3, 2)))
    _close(ember.vmap(lambda v: v + lax.axis_index("i"), in_axes=None, axis_size=3, axis_name="i")(1.0), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 100])
def test_chunk_size_gives_the_same_result(chunk):
    x, w = _rand(7, 5), _rand(5, 2)

    def f(v, m):
        return {"y": enp.tanh(v @ m), "n": enp.sum(v ** 2)}, m

    want = ember.vmap(f, in_axes=(0, None), out_axes=({"y": 1, "n": 0}, None))(x, w)
    got = ember.vmap(f, in_axes=(0, None), out_axes=({"y": 1, "n": 0}, None), chunk_size=chunk)(x, w)
    _close(got[0]["y"], want[0]["y"])
    _close(got[0]["n"], want[0]["n"])
    _close(got[1], w)
    _close(want[0]["y"], np.tanh(x @ w).T)


# --- composition with autodiff ----------------------------------------------------------------------


def _f(x, w):
    return enp.sum(enp.sin(x * w) ** 2)


def test_vmap_of_grad_and_grad_of_vmap():
    xs, w = _rand(6, 4), _rand(4)
    want = 2 * np.sin(xs * w) * np.cos(xs * w) * w  # d/dx sum(sin(x w)^2), per example
    _close(ember.vmap(ember.grad(_f), in_axes=(0, None))(xs, w), want, rtol=1e-5, atol=1e-5)
    _close(ember.grad(lambda xs: ember.vmap(_f, in_axes=(0, None))(xs, w).sum())(xs), want, rtol=1e-5, atol=1e-5)
    # The gradient with respect to the shared argument sums over the examples.
    want_w = (2 * np.sin(xs * w) * np.cos(xs * w) * xs).sum(0)
    _close(ember.grad(lambda w: ember.vmap(_f, in_axes=(0, None))(xs, w).sum())(w), want_w, rtol=1e-5, atol=1e-5)
    per_w = ember.vmap(ember.grad(_f, argnums=1), in_axes=(0, None))(xs, w)
    _close(per_w, 2 * np.sin(xs * w) * np.cos(xs * w) * xs, rtol=1e-5, atol=1e-5)


def _mlp_params(key_sizes=(64, 128, 128, 10)):
    rng = np.random.default_rng(1)
    params = []
    for n_in, n_out in itertools.pairwise(key_sizes):
        params.append({"w": (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32),
                       "b": (rng.standard_normal(n_out) * 0.1).astype(np.float32)})  # fmt: skip
    return params


def _mlp_loss(params, x, label):
    h = x
    for layer in params[:-1]:
        h = enp.tanh(h @ layer["w"] + layer["b"])
    logits = h @ params[-1]["w"] + params[-1]["b"]
    return ember.scipy.special.logsumexp(logits) - logits[label]


def test_per_sample_gradients_of_an_mlp_match_a_loop():
    params = ember.tree.map(enp.asarray, _mlp_params())
    xs = enp.asarray(_rand(16, 64))
    labels = enp.asarray(RNG.integers(0, 10, 16).astype(np.int32))
    batched = ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, labels)
    loop = [ember.grad(_mlp_loss)(params, xs[i], labels[i]) for i in range(16)]
    assert ember.tree.structure(batched) == ember.tree.structure(params)
    for path_leaves in zip(ember.tree.leaves(batched), *[ember.tree.leaves(g) for g in loop]):
        got, per_example = path_leaves[0], path_leaves[1:]
        assert got.shape == (16, *per_example[0].shape)
        _close(got, np.stack([np.asarray(g) for g in per_example]), rtol=2e-5, atol=2e-6)
    # Chunked, the same gradients.
    chunked = ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0), chunk_size=5)(params, xs, labels)
    for a, b in zip(ember.tree.leaves(chunked), ember.tree.leaves(batched)):
        _close(a, b, rtol=1e-5, atol=1e-6)  # other matmul shapes: float32 rounding differs


# --- the loop fallback --------------------------------------------------------------------------------


def test_loop_fallback_for_a_primitive_without_a_batching_rule():
    from ember.backends import cpu
    from ember.core.abstract import ShapedArray
    from ember.core.primitive import PRIMITIVES, Primitive

    name = "test_vmap_user_cube_plus_row_sum"
    prim = Primitive(name)
    try:
        # A user primitive: x**3 + the sum of x (so that the examples must not be mixed up), no batching rule.
        prim.abstract_eval = lambda x: ShapedArray(x.shape, x.dtype, x.weak_type)
        cpu.kernels[name] = lambda x: x ** 3 + x.sum()
        xs = _rand(5, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = ember.vmap(prim.bind)(enp.asarray(xs))
            again = ember.vmap(prim.bind, in_axes=1)(enp.asarray(xs.T))
        _close(out, xs ** 3 + xs.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)
        _close(again, out)
        ours = [w for w in caught if name in str(w.message)]
        assert len(ours) == 1, [str(w.message) for w in caught]
        assert "no batching rule" in str(ours[0].message)
    finally:
        del PRIMITIVES[name]  # the registry is global: the op_db coverage test must not see it
        cpu.kernels.pop(name, None)


# --- errors -------------------------------------------------------------------------------------------


def test_inconsistent_mapped_sizes_name_the_arguments_and_sizes():
    with pytest.raises(ValueError) as info:
        ember.vmap(lambda a, b: a + b)(enp.ones((3, 2)), enp.ones((5, 2)))
    assert isinstance(info.value, InvalidArgumentError)
    msg = str(info.value)
    assert "args[0]" in msg and "args[1]" in msg and "size 3" in msg and "size 5" in msg
    with pytest.raises(InvalidArgumentError, match=r"args\[0\]\['b'\].*size 2.*args\[0\]\['w'\].*size 4"):
        ember.vmap(lambda p: p["w"])({"w": enp.ones((4, 3)), "b": enp.ones(2)})
    with pytest.raises(InvalidArgumentError, match=r"size 3.*axis_size=4"):
        ember.vmap(lambda a: a, axis_size=4)(enp.ones(3))


def test_in_axes_that_do_not_match_the_arguments():
    with pytest.raises(ValueError, match=r"in_axes=\(0, 0, 0\) has 3 entries, but the function was called with 2 positional "
                                         r"argument\(s\).*the arguments are \(float32\[3\], float32\[3\]\)"):
        ember.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(enp.ones(3), enp.ones(3))
    with pytest.raises(InvalidArgumentError, match=r"in_axes \(\{'a': 0\},\).*'b'"):
        ember.vmap(lambda p: p, in_axes=({"a": 0},))({"b": enp.ones(3)})
    with pytest.raises(InvalidArgumentError, match="one entry per positional argument"):
        ember.vmap(lambda p: p, in_axes={"a": 0})({"a": enp.ones(3)})
    with pytest.raises(InvalidArgumentError, match="ints or None"):
        ember.vmap(lambda a: a, in_axes=0.5)(enp.ones(3))


def test_out_of_range_axes():
    with pytest.raises(ValueError, match=r"in_axes 2 is out of range for args\[1\] of shape \(3, 4\)"):
        ember.vmap(lambda a, b: b, in_axes=(0, 2))(enp.ones(3), enp.ones((3, 4)))
    with pytest.raises(InvalidArgumentError, match=r"in_axes -3 is out of range for args\[0\]"):
        ember.vmap(lambda a: a, in_axes=-3)(enp.ones((3, 4)))
    with pytest.raises(InvalidArgumentError, match=r"args\[0\]\['s'\], but it is a scalar"):
        ember.vmap(lambda p: p["s"])({"s": enp.ones(())})
    with pytest.raises(InvalidArgumentError, match=r"out_axes 3 is out of range for output\[1\] of rank 1"):
        ember.vmap(lambda a: (a, a), out_axes=(0, 3))(enp.ones((2, 4)))
    with pytest.raises(InvalidArgumentError, match="axis_size must be"):
        ember.vmap(lambda a: a, axis_size=-1)
    with pytest.raises(InvalidArgumentError, match="chunk_size must be"):
        ember.vmap(lambda a: a, chunk_size=0)


def test_out_axes_none_for_a_batched_output():
    with pytest.raises(ValueError, match=r"out_axes=None for output\['y'\].*3 examples") as info:
        ember.vmap(lambda a: {"x": enp.asarray(1.0), "y": a}, out_axes={"x": None, "y": None})(enp.arange(3.0))
    assert isinstance(info.value, InvalidArgumentError)
    # An output that does not depend on the mapped axis may have out_axes None.
    out = ember.vmap(lambda a, c: (a * 2, c + 1.0), in_axes=(0, None), out_axes=(0, None))(enp.arange(3.0), enp.ones(2))
    _close(out[1], [2.0, 2.0])
    with pytest.raises(InvalidArgumentError, match=r"out_axes \{'z': 0\} is not a pytree prefix of \{'x': float32\[\]\}"):
        ember.vmap(lambda a: {"x": a}, out_axes={"z": 0})(enp.arange(3.0))


def test_python_control_flow_on_a_batched_value():
    def f(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(ConcretizationError) as info:
        ember.vmap(f)(enp.ones((3, 2)))
    msg = str(info.value)
    assert "enp.where" in msg and "lax.cond" in msg and "vmap" in msg
    assert isinstance(info.value, EmberError) and isinstance(info.value, TypeError)
    with pytest.raises(ConcretizationError, match="enp.where"):
        ember.vmap(lambda x: float(x))(enp.ones(3))
    # Control flow on an unmapped value is fine.
    out = ember.vmap(lambda x, c: x * 2 if c > 0 else x, in_axes=(0, None))(enp.ones(3), enp.asarray(1.0))
    _close(out, [2.0, 2.0, 2.0])
    # The fix the message suggests works.
    _close(ember.vmap(lambda x: enp.where(x.sum() > 0, x, -x))(enp.asarray([[1.0], [-2.0]])), [[1.0], [2.0]])
