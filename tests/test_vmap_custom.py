"""custom_jvp, custom_vjp and checkpoint under vmap, as in JAX: the rules stay custom (the jvp rule,
fwd and bwd are batched, not inlined and not looped over), in both orders of vmap and
differentiation. Every result is checked against a Python loop over the examples, and against the
deliberately wrong derivatives of the rules, which prove that the rules are what ran."""

from __future__ import annotations

import numpy as np
import pytest
from vmap_check import no_loop_fallback  # noqa: F401 - an autouse fixture: vmap's loop fallback fails these tests

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import TransformError
from ember.transforms.linearize import linearize_flat

B = 4
RNG = np.random.default_rng(0)




def _rand(*shape):
    return enp.asarray(RNG.standard_normal(shape).astype(np.float32))


def _close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _loop(fn, *args, in_axes=0):
    axes = (in_axes,) * len(args) if isinstance(in_axes, int) or in_axes is None else in_axes
    size = next(a.shape[0] for a, ax in zip(args, axes) if ax is not None)
    outs = [fn(*[a if ax is None else a[i] for a, ax in zip(args, axes)]) for i in range(size)]
    if isinstance(outs[0], (tuple, list)):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


# --- custom_jvp ------------------------------------------------------------------------------------

CALLS = {"jvp": 0, "fwd": 0, "bwd": 0}


@ember.custom_jvp
def soft(x):
    return enp.sin(x)


@soft.defjvp
def _soft_jvp(primals, tangents):
    # Deliberately not the derivative of sin: 3 x t, so that a result from differentiating the body shows.
    CALLS["jvp"] += 1
    (x,), (t,) = primals, tangents
    return soft(x), 3.0 * x * t


def test_custom_jvp_vmap_of_grad_and_grad_of_vmap():
    xs = _rand(B)
    want = 3.0 * np.asarray(xs)
    _close(ember.vmap(ember.grad(soft))(xs), want)
    _close(_loop(ember.grad(soft), xs), want)
    CALLS["jvp"] = 0
    _close(ember.grad(lambda xs: ember.vmap(soft)(xs).sum())(xs), want)
    assert CALLS["jvp"] == 1  # the rule ran once, on the whole batch: batched, not inlined nor looped
    # Forward mode too, with the batch on another axis.
    xm = _rand(3, B)
    _, t = ember.jvp(ember.vmap(soft, in_axes=1), (xm,), (enp.ones((3, B)),))
    _close(t, 3.0 * np.asarray(xm).T)
    t = ember.vmap(lambda x: ember.jvp(soft, (x,), (enp.ones(3),))[1], in_axes=1)(xm)
    _close(t, 3.0 * np.asarray(xm).T)


def test_custom_jvp_without_differentiation_runs_the_function():
    xs = _rand(B, 3)
    CALLS["jvp"] = 0
    _close(ember.vmap(soft)(xs), np.sin(np.asarray(xs)))
    _close(ember.vmap(soft, chunk_size=3)(xs), np.sin(np.asarray(xs)))
    assert CALLS["jvp"] == 0


def test_custom_jvp_with_unmapped_arguments_nondiff_args_and_pytrees():
    @ember.custom_jvp
    def scaled(p, x):
        return {"y": p["w"] * enp.tanh(x), "n": enp.asarray(2)}

    @scaled.defjvp
    def scaled_jvp(primals, tangents):
        (p, x), (tp, tx) = primals, tangents
        out = scaled(p, x)
        # Deliberate: 10 w tx (not w (1 - tanh^2) tx); the tangent of n (an integer) is ignored.
        return out, {"y": tp["w"] * enp.tanh(x) + 10.0 * p["w"] * tx, "n": enp.asarray(0)}

    w, xs = _rand(3), _rand(B, 3)

    def loss(w, x):
        return scaled({"w": w}, x)["y"].sum()

    for f in (ember.grad(loss, (0, 1)),):
        got = ember.vmap(f, in_axes=(None, 0))(w, xs)
        want = _loop(f, w, xs, in_axes=(None, 0))
        for g, h in zip(got, want, strict=True):
            _close(g, h)
        _close(got[1], 10.0 * np.broadcast_to(np.asarray(w), (B, 3)))
    # grad of vmap: the cotangent of the shared w sums over the examples.
    gw, gx = ember.grad(lambda w, xs: ember.vmap(loss, in_axes=(None, 0))(w, xs).sum(), (0, 1))(w, xs)
    _close(gw, np.tanh(np.asarray(xs)).sum(0))
    _close(gx, 10.0 * np.broadcast_to(np.asarray(w), (B, 3)))

    # nondiff_argnums: a static function argument.
    def apply(fn, x):
        return fn(x)

    apply = ember.custom_jvp(apply, nondiff_argnums=(0,))
    apply.defjvp(lambda fn, primals, tangents: (apply(fn, *primals), -1.0 * tangents[0]))
    _close(ember.grad(lambda xs: ember.vmap(lambda x: apply(enp.exp, x))(xs).sum())(xs[:, 0]), -np.ones(B))


def test_custom_jvp_closing_over_a_batched_value():
    xs, ys = _rand(B), _rand(B)

    def f(x, y):
        @ember.custom_jvp
        def g(a):
            return enp.sin(a) * y

        g.defjvp(lambda p, t: (g(p[0]), 10.0 * y * t[0]))
        return g(x)

    want = 10.0 * np.asarray(ys)
    _close(ember.grad(lambda xs: ember.vmap(f)(xs, ys).sum())(xs), want)
    _close(ember.vmap(ember.grad(f))(xs, ys), want)


def test_custom_jvp_under_nested_vmaps():
    xm = _rand(2, 3)
    want = 3.0 * np.asarray(xm)
    _close(ember.grad(lambda x: ember.vmap(ember.vmap(soft))(x).sum())(xm), want)
    _close(ember.vmap(ember.vmap(ember.grad(soft)))(xm), want)
    _close(ember.vmap(ember.grad(lambda row: ember.vmap(soft)(row).sum()))(xm), want)
    # Second order: the rule is differentiated (d/dx of 3 x t is 3).
    _close(ember.vmap(ember.grad(ember.grad(soft)))(xm[0]), np.full(3, 3.0))


# --- custom_vjp ------------------------------------------------------------------------------------


@ember.custom_vjp
def mul(x, w):
    return x * w


def _mul_fwd(x, w):
    CALLS["fwd"] += 1
    return x * w, (x, w)


def _mul_bwd(res, ct):
    # Deliberately wrong: 5 w ct for x (not w ct), 7 x ct for w (not x ct).
    CALLS["bwd"] += 1
    x, w = res
    return 5.0 * w * ct, 7.0 * x * ct


mul.defvjp(_mul_fwd, _mul_bwd)


def test_custom_vjp_runs_the_custom_bwd_under_vmap_of_grad():
    xs, ws = _rand(B, 3), _rand(B, 3)
    f = ember.grad(lambda x, w: mul(x, w).sum(), (0, 1))
    gx, gw = ember.vmap(f)(xs, ws)
    _close(gx, 5.0 * np.asarray(ws))
    _close(gw, 7.0 * np.asarray(xs))
    lx, lw = _loop(f, xs, ws)
    _close(gx, lx)
    _close(gw, lw)


def test_custom_vjp_grad_of_vmap_batches_fwd_and_bwd():
    xs, w = _rand(B, 3), _rand(3)

    def loss(xs, w):
        return ember.vmap(mul, in_axes=(0, None))(xs, w).sum()

    CALLS["fwd"] = CALLS["bwd"] = 0
    gx, gw = ember.grad(loss, (0, 1))(xs, w)
    assert (CALLS["fwd"], CALLS["bwd"]) == (1, 1)  # once each, for the whole batch
    _close(gx, 5.0 * np.broadcast_to(np.asarray(w), (B, 3)))
    # The shared w: its per-example cotangents are summed.
    _close(gw, 7.0 * np.asarray(xs).sum(0))
    per_example = _loop(ember.grad(lambda x, w: mul(x, w).sum(), (0, 1)), xs, w, in_axes=(0, None))
    _close(gx, per_example[0])
    _close(gw, per_example[1].sum(0))
    # Batch on axis 1, outputs moved.
    g = ember.grad(lambda xt: ember.vmap(mul, in_axes=(1, None), out_axes=1)(xt, w).sum())(xs.T)
    _close(g, 5.0 * np.broadcast_to(np.asarray(w), (B, 3)).T)


def test_custom_vjp_without_differentiation_and_in_forward_mode():
    xs, ws = _rand(B, 3), _rand(B, 3)
    CALLS["fwd"] = CALLS["bwd"] = 0
    _close(ember.vmap(mul)(xs, ws), np.asarray(xs) * np.asarray(ws))
    assert (CALLS["fwd"], CALLS["bwd"]) == (0, 0)
    # As without vmap, a custom_vjp function has no forward-mode derivative.
    with pytest.raises(TransformError, match="forward-mode"):
        ember.jvp(ember.vmap(mul), (xs, ws), (xs, ws))


def test_custom_vjp_bwd_with_collectives_and_closures():
    xs, ys = _rand(B), _rand(B)

    @ember.custom_vjp
    def share(x):
        return 2.0 * x

    share.defvjp(lambda x: (2.0 * x, None), lambda _, ct: (lax.psum(ct, "i"),))
    _close(ember.grad(lambda xs: ember.vmap(share, axis_name="i")(xs).sum())(xs), np.full(B, float(B)))
    _close(ember.vmap(ember.grad(share), axis_name="i")(xs), np.full(B, float(B)))

    def f(x, y):
        @ember.custom_vjp
        def g(a):
            return enp.sin(a) * y

        g.defvjp(lambda a: (g(a), None), lambda _, ct: (10.0 * y * ct,))  # bwd closes over the batched y
        return g(x)

    _close(ember.grad(lambda xs: ember.vmap(f)(xs, ys).sum())(xs), 10.0 * np.asarray(ys))
    _close(ember.vmap(ember.grad(f))(xs, ys), 10.0 * np.asarray(ys))


def test_custom_lin_batching_rule():
    # vmap of the linearized function of a custom_vjp function: a batch of custom_lin, which
    # transposes (through the batched bwd) and refuses to run forward, as unbatched.
    x, w = _rand(3), _rand(3)
    _, f_jvp = ember.linearize(lambda x: mul(x, w), x)
    ts = _rand(B, 3)
    with pytest.raises(TransformError, match="forward-mode"):
        ember.vmap(f_jvp)(ts)
    (ct,) = ember.linear_transpose(ember.vmap(f_jvp), ts)(ts)
    _close(ct, 5.0 * np.asarray(w) * np.asarray(ts))
    # jacrev: a vmap over the backward pass, with the custom bwd.
    _close(ember.jacrev(lambda x: mul(x, w))(x), np.diag(5.0 * np.asarray(w)))


# --- checkpoint --------------------------------------------------------------------------------------


def _block(w, x):
    for _ in range(3):
        x = enp.tanh(w @ x)
    return x


def test_checkpoint_vmap_of_grad_and_grad_of_vmap():
    w, xs = _rand(5, 5) / 2.0, _rand(B, 5)
    ckpt = ember.checkpoint(_block)

    def loss(blk):
        return lambda w, x: (blk(w, x) ** 2).sum()

    per_example = _loop(ember.grad(loss(_block), (0, 1)), w, xs, in_axes=(None, 0))
    got = ember.vmap(ember.grad(loss(ckpt), (0, 1)), in_axes=(None, 0))(w, xs)
    for g, h in zip(got, per_example, strict=True):
        _close(g, h, rtol=1e-5, atol=1e-5)

    def batch_loss(blk):
        return lambda w, xs: ember.vmap(loss(blk), in_axes=(None, 0))(w, xs).sum()

    gw, gx = ember.grad(batch_loss(ckpt), (0, 1))(w, xs)
    _close(gw, per_example[0].sum(0), rtol=1e-5, atol=1e-5)
    _close(gx, per_example[1], rtol=1e-5, atol=1e-5)
    # Forward mode through the batched block.
    _, t = ember.jvp(lambda xs: ember.vmap(ckpt, in_axes=(None, 0))(w, xs), (xs,), (enp.ones((B, 5)),))
    _, want = ember.jvp(lambda xs: ember.vmap(_block, in_axes=(None, 0))(w, xs), (xs,), (enp.ones((B, 5)),))
    _close(t, want, rtol=1e-5, atol=1e-5)


def test_checkpoint_under_vmap_still_saves_only_the_inputs():
    # grad of vmap: the block is one batched remat_lin, whose residuals are the block's inputs.
    w, xs = _rand(16, 16) / 4.0, _rand(8, 16)
    ckpt = ember.checkpoint(_block)

    def residuals(blk):
        fn = lambda w, xs: [ember.vmap(blk, in_axes=(None, 0))(w, xs).sum()]
        _, _, lin = linearize_flat(fn, [w, xs])
        return lin, sum(c.size * c.dtype.itemsize for c in lin.consts)

    lin, saved = residuals(ckpt)
    assert [e.primitive.name for e in lin.program.eqns].count("remat_lin") == 1
    assert saved == w.nbytes + xs.nbytes
    assert residuals(_block)[1] > 2 * saved


def test_checkpoint_closing_over_batched_values_and_collectives():
    xs, masks = _rand(B, 3), enp.asarray((RNG.uniform(size=(B, 3)) > 0.5).astype(np.float32))

    def f(x, m):
        return ember.checkpoint(lambda a: enp.sin(a) * m)(x).sum()  # the block closes over the batched mask

    want = np.cos(np.asarray(xs)) * np.asarray(masks)
    _close(ember.grad(lambda xs: ember.vmap(f)(xs, masks).sum())(xs), want)
    _close(ember.vmap(ember.grad(f))(xs, masks), want)
    _, t = ember.jvp(lambda xs: ember.vmap(f)(xs, masks), (xs,), (enp.ones((B, 3)),))
    _close(t, want.sum(1))

    centred = ember.checkpoint(lambda x: enp.sin(x - lax.pmean(x, "i")))
    plain = lambda x: enp.sin(x - lax.pmean(x, "i"))
    g = ember.grad(lambda xs: ember.vmap(centred, axis_name="i")(xs).sum())(xs[:, 0])
    _close(g, ember.grad(lambda xs: ember.vmap(plain, axis_name="i")(xs).sum())(xs[:, 0]))


def test_remat_lin_batching_rule_directly():
    # remat_lin with a batched primal and an unbatched tangent (and vice versa), called through .batch.
    from ember.transforms.remat import remat_lin_p

    fun = lambda a, b: [enp.sin(a) * b]
    xs, b = _rand(B, 3), _rand(3)
    aval = ember.core.abstract.ShapedArray((3,), np.dtype(np.float32), False)
    params = {"fun": fun, "n_in": 2, "which": (0, 1), "lin_out": (0,), "out_avals": (aval,), "name": "f"}
    t0, t1 = _rand(3), _rand(B, 3)
    (out,), dims = remat_lin_p.batch(B, [xs.T, b, t0, t1], [1, None, None, 0], **params)
    assert dims == [0]
    want = np.cos(np.asarray(xs)) * np.asarray(b) * np.asarray(t0) + np.sin(np.asarray(xs)) * np.asarray(t1)
    _close(out, want)
