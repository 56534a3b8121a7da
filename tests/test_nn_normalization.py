"""Normalisation layers and functions against PyTorch: outputs, gradients w.r.t. the input and every
parameter, running statistics over several training steps (momentum, momentum=None), eval mode; BatchNorm
under vmap in the three modes of PyTorch's torch.func note, against loops and PyTorch; init, repr, errors."""

from __future__ import annotations

import numpy as np
import pytest
from nn_parity import assert_close, copy_weights, to_numpy

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")


def _randomize(tm, seed=0):
    """Random affine parameters (PyTorch initialises them to ones and zeros, which would hide swaps)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.rand(p.shape, generator=g) + 0.5)
    return tm


def _grads(layer, x, g, state=None):
    """Output and gradients of sum(out * g) w.r.t. the input and every parameter (by PyTorch name)."""
    names = [n for n, _ in layer.named_parameters()]
    params = dict(layer.named_parameters())

    def loss(params, x):
        out = nn.functional_call(layer, params, x, *([state] if state is not None else []))
        out = out[0] if isinstance(out, tuple) else out
        return (out * g).sum(), out

    (gp, gx), out = ember.grad(loss, argnums=(0, 1), has_aux=True)(params, enp.asarray(x))
    return out, gx, {n: gp[n] for n in names}


def _torch_grads(tm, x, g):
    tm.zero_grad(set_to_none=True)
    xt = torch.tensor(x, requires_grad=True)
    out = tm(xt)
    (out * torch.tensor(g)).sum().backward()
    return out, xt.grad, {n: p.grad for n, p in tm.named_parameters()}


def _check_step(layer, tm, x, rng, state=None):
    """One forward and backward pass of both (every normalisation keeps the input's shape)."""
    g = rng.standard_normal(x.shape).astype(np.float32)
    out, gx, gp = _grads(layer, x, g, state)
    tout, tgx, tgp = _torch_grads(tm, x, g)
    assert_close(out, tout, 1e-4, 1e-5, "output")
    assert_close(gx, tgx, 1e-4, 1e-4, "grad input")
    assert sorted(gp) == sorted(tgp)
    for n in gp:
        assert_close(gp[n], tgp[n], 1e-4, 1e-4, f"grad {n}")


# --- stateless layers ------------------------------------------------------------------------------------

STATELESS = [
    ("LayerNorm", (4,), {}, (3, 4)),
    ("LayerNorm", ((3, 4),), {"eps": 1e-3}, (2, 3, 4)),
    ("LayerNorm", (5,), {"elementwise_affine": False}, (2, 5)),
    ("LayerNorm", (5,), {"bias": False}, (3, 1, 5)),
    ("LayerNorm", (1,), {}, (4, 1)),
    ("RMSNorm", (4,), {}, (3, 4)),
    ("RMSNorm", ((2, 3),), {"eps": 1e-3}, (4, 2, 3)),
    ("RMSNorm", (5,), {"elementwise_affine": False}, (5,)),
    ("GroupNorm", (2, 6), {}, (3, 6, 5)),
    ("GroupNorm", (1, 4), {"eps": 1e-3}, (2, 4, 3, 3)),
    ("GroupNorm", (4, 4), {}, (2, 4, 2, 1, 3)),
    ("GroupNorm", (3, 3), {"affine": False}, (2, 3)),
    ("GroupNorm", (2, 4), {"bias": False}, (2, 4, 3)),
    ("LocalResponseNorm", (3,), {}, (2, 5, 4)),
    ("LocalResponseNorm", (2,), {"alpha": 0.3, "beta": 0.5, "k": 2.0}, (2, 4, 3, 3)),
    ("LocalResponseNorm", (5,), {"alpha": 1.0}, (1, 3, 2, 2, 2)),
    ("LocalResponseNorm", (1,), {}, (2, 3, 2)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", STATELESS, ids=lambda v: str(v))
def test_stateless_layers_match_torch(name, args, kwargs, shape):
    rng = np.random.default_rng(0)
    tm = _randomize(getattr(torch.nn, name)(*args, **kwargs))
    layer = copy_weights(getattr(nn, name)(*args, **kwargs), tm)
    x = rng.standard_normal(shape).astype(np.float32) * 2 + 0.5
    _check_step(layer, tm, x, rng)
    assert repr(layer) == repr(tm)


# --- BatchNorm and InstanceNorm: running statistics --------------------------------------------------------

STATEFUL = [
    ("BatchNorm1d", {}, (4, 3)),
    ("BatchNorm1d", {"momentum": 0.3}, (2, 3, 5)),
    ("BatchNorm1d", {"momentum": None}, (5, 2)),
    ("BatchNorm1d", {"affine": False, "eps": 1e-3}, (3, 2, 2)),
    ("BatchNorm1d", {"bias": False}, (3, 2)),
    ("BatchNorm2d", {}, (2, 3, 4, 3)),
    ("BatchNorm2d", {"momentum": None, "affine": False}, (3, 2, 1, 2)),
    ("BatchNorm3d", {}, (2, 2, 3, 2, 2)),
    ("BatchNorm3d", {"momentum": 0.5, "eps": 1e-2}, (1, 3, 2, 1, 2)),
    ("InstanceNorm1d", {"affine": True, "track_running_stats": True}, (2, 3, 5)),
    ("InstanceNorm1d", {"track_running_stats": True, "momentum": 0.4}, (3, 4)),
    ("InstanceNorm2d", {"affine": True, "track_running_stats": True, "momentum": None}, (2, 3, 3, 4)),
    ("InstanceNorm2d", {"affine": True, "track_running_stats": True}, (3, 2, 3)),
    ("InstanceNorm2d", {"affine": True, "bias": False, "track_running_stats": True}, (2, 3, 2, 3)),
    ("InstanceNorm3d", {"affine": True, "track_running_stats": True, "eps": 1e-3}, (2, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("name, kwargs, shape", STATEFUL, ids=lambda v: str(v))
def test_stateful_layers_match_torch_over_training_steps(name, kwargs, shape):
    rng = np.random.default_rng(1)
    unbatched = name.startswith("Instance") and len(shape) == int(name[-2]) + 1
    c = shape[0] if unbatched else shape[1]
    tm = _randomize(getattr(torch.nn, name)(c, **kwargs))
    layer, state = nn.make_with_state(getattr(nn, name))(c, **kwargs)
    layer, state = copy_weights(layer, tm, state)
    for step in range(3):
        x = (rng.standard_normal(shape) * (step + 1) + step).astype(np.float32)
        g = rng.standard_normal(shape).astype(np.float32)
        out, gx, gp = _grads(layer, x, g, state)
        new_out, state = layer(enp.asarray(x), state)
        tout, tgx, tgp = _torch_grads(tm, x, g)
        assert_close(out, tout, 1e-4, 1e-5, f"output, step {step}")
        assert_close(new_out, tout, 1e-4, 1e-5, f"output, step {step}")
        assert_close(gx, tgx, 1e-4, 1e-4, f"grad input, step {step}")
        for n in gp:
            assert_close(gp[n], tgp[n], 1e-4, 1e-4, f"grad {n}, step {step}")
        for n, b in tm.named_buffers():
            assert_close(state[n], b, 1e-5, 1e-6, f"{n} after step {step}")
    assert state["num_batches_tracked"].dtype == enp.int32
    # Eval mode: the running statistics, the state returned unchanged.
    tm.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    evaluated = layer.eval()
    out, same = evaluated(enp.asarray(x), state)
    assert same is state
    out2, gx, gp = _grads(evaluated, x, g, state)
    tout, tgx, tgp = _torch_grads(tm, x, g)
    assert_close(out, tout, 1e-4, 1e-5, "eval output")
    assert_close(gx, tgx, 1e-4, 1e-4, "eval grad input")
    for n in gp:
        assert_close(gp[n], tgp[n], 1e-4, 1e-4, f"eval grad {n}")
    assert repr(layer) == repr(tm.train())


@pytest.mark.parametrize("name, shape", [("BatchNorm1d", (4, 3)), ("BatchNorm2d", (2, 3, 2, 2)),
                                         ("InstanceNorm1d", (2, 3, 4)), ("InstanceNorm2d", (3, 2, 2))])
def test_without_running_statistics(name, shape):
    """track_running_stats=False: batch statistics in train and eval mode, no state; bn(x, state) passes the
    state through."""
    rng = np.random.default_rng(2)
    c = shape[0] if len(shape) == 3 and name == "InstanceNorm2d" else shape[1]
    affine = {"affine": True} if name.startswith("Instance") else {}
    tm = _randomize(getattr(torch.nn, name)(c, track_running_stats=False, **affine))
    layer = copy_weights(getattr(nn, name)(c, track_running_stats=False, **affine), tm)
    assert not nn.is_stateful(layer)
    for mode in (True, False):
        tm.train(mode)
        x = rng.standard_normal(shape).astype(np.float32)
        _check_step(layer.train(mode), tm, x, rng)
    other = nn.State({"x": {"a": enp.zeros(1)}})
    out, same = layer(enp.asarray(x), other)
    assert same is other


def test_empty_batch_passes_through_as_in_torch():
    tm = torch.nn.BatchNorm1d(3)
    layer, state = nn.make_with_state(nn.BatchNorm1d)(3)
    layer, state = copy_weights(layer, tm, state)
    out, state = layer(enp.ones((0, 3)), state)
    tout = tm(torch.ones(0, 3))
    assert out.shape == tuple(tout.shape) == (0, 3)
    for n, b in tm.named_buffers():
        assert_close(state[n], b, 0, 0, n)


def test_initial_state_and_parameters():
    bn, state = nn.make_with_state(nn.BatchNorm2d)(3)
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3
    assert [n for n, _ in state.named_buffers()] == [n for n, _ in torch.nn.BatchNorm2d(3).named_buffers()]
    assert state["running_mean"].tolist() == [0.0] * 3 and state["running_var"].tolist() == [1.0] * 3
    assert state["num_batches_tracked"].dtype == enp.int32 and state["num_batches_tracked"].shape == ()
    with ember.config.x64(True):
        _, state64 = nn.make_with_state(nn.BatchNorm1d)(2)
        assert state64["num_batches_tracked"].dtype == enp.int64
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.shape == (2, 3) and float(ln.weight.sum()) == 6.0 and float(enp.abs(ln.bias).sum()) == 0.0
    assert nn.InstanceNorm2d(3).weight is None and not nn.is_stateful(nn.InstanceNorm2d(3))
    assert nn.BatchNorm1d(2).weight.dtype == enp.float32
    assert [n for n, _ in nn.GroupNorm(2, 4).named_parameters()] == ["weight", "bias"]


def test_sequential_with_batchnorm_matches_torch():
    rng = np.random.default_rng(3)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6, momentum=None), torch.nn.ReLU(),
                             torch.nn.Linear(6, 2))  # fmt: skip
    ks = ember.random.split(ember.random.key(0))
    model, state = nn.make_with_state(nn.Sequential)(nn.Linear(4, 6, key=ks[0]), nn.BatchNorm1d(6, momentum=None),
                                                     nn.ReLU(), nn.Linear(6, 2, key=ks[1]))  # fmt: skip
    model, state = copy_weights(model, tm, state)
    step = ember.jit(lambda m, s, x: m(x, s))
    for _ in range(3):
        x = rng.standard_normal((5, 4)).astype(np.float32)
        out, state = step(model, state, enp.asarray(x))
        assert_close(out, tm(torch.tensor(x)), 1e-4, 1e-5)
    for n, b in tm.named_buffers():
        assert_close(state[n], b, 1e-5, 1e-6, n)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    out, _ = model.eval()(enp.asarray(x), state)
    assert_close(out, tm.eval()(torch.tensor(x)), 1e-4, 1e-5)


# --- functional batch_norm / instance_norm: the pure signature ---------------------------------------------


@pytest.mark.parametrize("training", [True, False])
def test_functional_batch_norm_returns_what_torch_writes(training):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    rm, rv = rng.standard_normal(3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32)
    w, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    want = torch.nn.functional.batch_norm(torch.tensor(x), trm, trv, torch.tensor(w), torch.tensor(b), training, 0.2)
    got = F.batch_norm(x, rm, rv, w, b, training, 0.2)
    if training:
        out, new_mean, new_var = got
        assert_close(new_mean, trm, 1e-5, 1e-6)
        assert_close(new_var, trv, 1e-5, 1e-6)
        assert rm.tolist() == to_numpy(torch.tensor(rm)).tolist()  # the inputs are untouched
    else:
        out = got
    assert_close(out, want, 1e-5, 1e-5)
    assert isinstance(F.batch_norm(x, None, None, training=True), ember.Array)


def test_functional_instance_norm_returns_what_torch_writes():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 5)).astype(np.float32)
    rm, rv = rng.standard_normal(2).astype(np.float32), rng.uniform(0.5, 2, 2).astype(np.float32)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    want = torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.3)
    out, new_mean, new_var = F.instance_norm(x, rm, rv, momentum=0.3)
    assert_close(out, want, 1e-5, 1e-5)
    assert_close(new_mean, trm, 1e-5, 1e-6)
    assert_close(new_var, trv, 1e-5, 1e-6)
    assert_close(F.instance_norm(x, rm, rv, use_input_stats=False),
                 torch.nn.functional.instance_norm(torch.tensor(x), torch.tensor(rm), torch.tensor(rv),
                                                   use_input_stats=False), 1e-5, 1e-5)  # fmt: skip


@pytest.mark.parametrize("fn, args", [("layer_norm", ((3,),)), ("rms_norm", ((3,),)), ("group_norm", (1,)),
                                      ("local_response_norm", (2,))])
def test_functional_half_precision_close_to_torch_float32(fn, args):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 3)).astype(np.float16)
    got = getattr(F, fn)(x, *args)
    assert got.dtype == enp.float16
    want = getattr(torch.nn.functional, fn)(torch.tensor(x.astype(np.float32)), *args)
    assert_close(got, want, 2e-3, 2e-3)


# --- BatchNorm under vmap: the three choices of PyTorch's torch.func note, and eval mode ---------------------


def _fresh(kwargs, c=3):
    tm = _randomize(torch.nn.BatchNorm1d(c, **kwargs))
    layer, state = nn.make_with_state(nn.BatchNorm1d)(c, **kwargs)
    return tm, *copy_weights(layer, tm, state)


def test_vmap_per_example_statistics_is_a_loop():
    """(a) vmap over the model: each member normalises its own batch and updates its own copy of the state."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)  # 4 members, each a batch of 5
    tm, bn, state = _fresh({"momentum": 0.2})
    outs, states = ember.vmap(bn, in_axes=(0, None))(enp.asarray(x), state)
    assert states["running_mean"].shape == (4, 3)
    for e in range(4):
        member, _, _ = _fresh({"momentum": 0.2})
        want = member(torch.tensor(x[e]))
        assert_close(outs[e], want, 1e-5, 1e-5)
        assert_close(states["running_mean"][e], member.running_mean, 1e-6, 1e-6)
        assert_close(states["running_var"][e], member.running_var, 1e-6, 1e-6)
        assert int(states["num_batches_tracked"][e]) == 1


@pytest.mark.parametrize("per_example", ["unbatched", "batch_of_one", "batch_of_two"])
def test_vmap_shared_statistics_equals_torch_on_the_whole_batch(per_example):
    """(b) axis_name: statistics averaged over the vmapped axis, as PyTorch's BatchNorm on the whole batch."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 3)).astype(np.float32) * 2 + 1
    g = rng.standard_normal((6, 3)).astype(np.float32)
    tm, _, _ = _fresh({})
    bn, state = nn.make_with_state(nn.BatchNorm1d)(3, axis_name="batch")
    bn, state = copy_weights(bn, tm, state)
    xs = {"unbatched": x, "batch_of_one": x[:, None], "batch_of_two": x.reshape(3, 2, 3)}[per_example]
    gs = g.reshape(xs.shape)

    def loss(params, xs):
        def one(xi, gi):
            out, new = nn.functional_call(bn, params, xi, state)
            return (out * gi).sum(), (out, new)

        losses, (out, new) = ember.vmap(one, axis_name="batch", out_axes=(0, (0, None)))(xs, enp.asarray(gs))
        return losses.sum(), (out, new)

    params = dict(bn.named_parameters())
    (gp, gx), (out, new) = ember.grad(loss, argnums=(0, 1), has_aux=True)(params, enp.asarray(xs))
    tout, tgx, tgp = _torch_grads(tm, x, g)
    assert_close(out.reshape(x.shape), tout, 1e-4, 1e-5, "output")
    assert_close(gx.reshape(x.shape), tgx, 1e-4, 1e-4, "grad input")
    for n in gp:
        assert_close(gp[n], tgp[n], 1e-4, 1e-4, f"grad {n}")
    assert_close(new["running_mean"], tm.running_mean, 1e-5, 1e-6)
    assert_close(new["running_var"], tm.running_var, 1e-5, 1e-6)


def test_vmap_shared_statistics_2d_unbatched_examples():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    tm = _randomize(torch.nn.BatchNorm2d(2))
    bn, state = nn.make_with_state(nn.BatchNorm2d)(2, axis_name="i")
    bn, state = copy_weights(bn, tm, state)
    out, new = ember.jit(ember.vmap(bn, in_axes=(0, None), out_axes=(0, None), axis_name="i"))(enp.asarray(x), state)
    assert_close(out, tm(torch.tensor(x)), 1e-4, 1e-5)
    assert_close(new["running_var"], tm.running_var, 1e-5, 1e-6)


def test_vmap_without_running_statistics_is_a_loop():
    """(c) track_running_stats=False: batch statistics per member, no state."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 4, 2, 5)).astype(np.float32)
    tm = _randomize(torch.nn.BatchNorm1d(2, track_running_stats=False))
    bn = copy_weights(nn.BatchNorm1d(2, track_running_stats=False), tm)
    outs = ember.vmap(bn)(enp.asarray(x))
    for e in range(3):
        assert_close(outs[e], tm(torch.tensor(x[e])), 1e-5, 1e-5)


def test_vmap_shared_statistics_without_running_statistics():
    """axis_name with track_running_stats=False: no state, the whole batch's statistics; outside a vmap of that
    name the axis is unbound, and the error says so."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 3, 4)).astype(np.float32)
    tm = _randomize(torch.nn.BatchNorm1d(3, track_running_stats=False))
    bn = copy_weights(nn.BatchNorm1d(3, track_running_stats=False, axis_name="b"), tm)
    out = ember.vmap(bn, axis_name="b")(enp.asarray(x)[:, None])  # each example a batch of one (1, C, L)
    assert_close(out[:, 0], tm(torch.tensor(x)), 1e-4, 1e-5)
    with pytest.raises(ember.errors.UnboundAxisNameError, match="unbound axis name 'b'"):
        bn(enp.asarray(x))


def test_vmap_eval_mode_uses_running_statistics_only():
    rng = np.random.default_rng(11)
    tm, bn, state = _fresh({})
    tm(torch.tensor(rng.standard_normal((8, 3)).astype(np.float32)))  # some running statistics
    bn, state = copy_weights(bn, tm, state)
    tm.eval()
    x = rng.standard_normal((5, 3)).astype(np.float32)
    outs, states = ember.vmap(bn.eval(), in_axes=(0, None), out_axes=(0, None))(enp.asarray(x)[:, None], state)
    assert_close(outs[:, 0], tm(torch.tensor(x)), 1e-5, 1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_array_equal(states[name], state[name])


# --- errors ---------------------------------------------------------------------------------------------


def test_errors_name_the_layer_and_the_shapes():
    model, state = nn.make_with_state(nn.Sequential)(nn.BatchNorm1d(3), nn.ReLU())
    with pytest.raises(ShapeError, match=r"model\.layers\[0\] \(BatchNorm1d\(3, eps=1e-05, \.\.\.\)\): expected 3 "
                                         r"channels \(dimension 1\), got an input of shape \(2, 4\)"):
        model(enp.ones((2, 4)), state)
    with pytest.raises(ShapeError, match=r"expected a 2D or 3D input \(N, C\) or \(N, C, L\), got shape \(3,\)"):
        nn.BatchNorm1d(3, track_running_stats=False)(enp.ones(3))
    with pytest.raises(ShapeError, match=r"expected a 4D input"):
        nn.BatchNorm2d(3, track_running_stats=False)(enp.ones((3, 2, 2)))
    with pytest.raises(InvalidArgumentError, match=r"keeps running statistics: call it as out, state = layer\(x, "
                                                   r"state\) with the state from nn.make_with_state"):
        nn.BatchNorm1d(3)(enp.ones((2, 3)))
    with pytest.raises(ShapeError, match="more than 1 value per channel when training"):
        nn.BatchNorm1d(3, track_running_stats=False)(enp.ones((1, 3)))
    with pytest.raises(InvalidArgumentError, match="num_channels=5 must be divisible by num_groups=2"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ShapeError, match=r"expected an input of shape \(N, 4, \*\), got shape \(2, 3\)"):
        nn.GroupNorm(2, 4)(enp.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"layer_norm: the input's last dimensions must equal normalized_shape=\[4\]"):
        nn.LayerNorm(4)(enp.ones((2, 3)))
    with pytest.raises(DTypeError, match=r"layer_norm: expected a floating input, got int32 of shape \(2, 4\)"):
        nn.LayerNorm(4)(enp.ones((2, 4), dtype=int))
    with pytest.raises(InvalidArgumentError, match="running_mean and running_var are required when training=False"):
        F.batch_norm(enp.ones((2, 3)), None, None)
    with pytest.raises(ShapeError, match=r"batch_norm: running_mean must have shape \(3,\)"):
        F.batch_norm(enp.ones((2, 3)), enp.zeros(4), enp.ones(4))
    with pytest.raises(ShapeError, match="instance_norm: expected more than 1 spatial element"):
        nn.InstanceNorm1d(3)(enp.ones((2, 3, 1)))
    with pytest.raises(ShapeError, match="expected 3 channels"):
        nn.InstanceNorm1d(3, affine=True)(enp.ones((2, 4, 5)))
    nn.InstanceNorm1d(3)(enp.ones((2, 4, 5)))  # PyTorch only warns: no parameter uses the channel count
