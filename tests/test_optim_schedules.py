"""Schedules against torch.optim.lr_scheduler's curves, stepped once per optimizer step, eager and under jit."""

import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import optim
from ember.errors import InvalidArgumentError

torch = pytest.importorskip("torch")

STEPS = 200


def torch_curve(make_scheduler, lr=1.0, steps=STEPS, optimizer="sgd"):
    """The learning rate used by each of ``steps`` optimizer steps (get_last_lr before each step)."""
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=lr, momentum=0.9) if optimizer == "sgd" else torch.optim.Adam([p], lr=lr)
    sched = make_scheduler(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return np.array(lrs)


def ember_curve(schedule, steps=STEPS):
    eager = np.array([float(schedule(c)) for c in range(steps)])
    jitted_fn = ember.jit(schedule)
    jitted = np.array([float(jitted_fn(enp.asarray(c, dtype=enp.int32))) for c in range(steps)])
    assert jitted_fn.trace_count == 1
    np.testing.assert_allclose(jitted, eager, rtol=1e-6, atol=1e-7)
    return eager


LRS = torch.optim.lr_scheduler
CASES = {
    "step": (lambda: optim.step(0.5, step_size=7, gamma=0.5), lambda o: LRS.StepLR(o, step_size=7, gamma=0.5)),
    "step_default_gamma": (lambda: optim.step(1.0, 30), lambda o: LRS.StepLR(o, 30)),
    "multistep": (lambda: optim.multistep(0.5, [10, 30, 30, 150], gamma=0.5),
                  lambda o: LRS.MultiStepLR(o, [10, 30, 30, 150], gamma=0.5)),
    "multistep_unsorted": (lambda: optim.multistep(1.0, [80, 20]), lambda o: LRS.MultiStepLR(o, [80, 20])),
    "exponential": (lambda: optim.exponential(0.5, gamma=0.97), lambda o: LRS.ExponentialLR(o, gamma=0.97)),
    "cosine_decay": (lambda: optim.cosine_decay(0.5, T_max=50, eta_min=0.01),
                     lambda o: LRS.CosineAnnealingLR(o, T_max=50, eta_min=0.01)),
    "cosine_decay_long": (lambda: optim.cosine_decay(1.0, T_max=200), lambda o: LRS.CosineAnnealingLR(o, T_max=200)),
    "warm_restarts": (lambda: optim.cosine_annealing_warm_restarts(0.5, T_0=17, eta_min=0.01),
                      lambda o: LRS.CosineAnnealingWarmRestarts(o, T_0=17, eta_min=0.01)),
    "warm_restarts_mult2": (lambda: optim.cosine_annealing_warm_restarts(0.5, T_0=5, T_mult=2),
                            lambda o: LRS.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2)),
    "warm_restarts_mult3": (lambda: optim.cosine_annealing_warm_restarts(1.0, T_0=3, T_mult=3, eta_min=0.1),
                            lambda o: LRS.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=3, eta_min=0.1)),
    "linear_default": (lambda: optim.linear(0.5), lambda o: LRS.LinearLR(o)),
    "linear": (lambda: optim.linear(0.5, start_factor=0.1, end_factor=0.9, total_iters=60),
               lambda o: LRS.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=60)),
    "linear_down": (lambda: optim.linear(1.0, start_factor=1.0, end_factor=0.05, total_iters=120),
                    lambda o: LRS.LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=120)),
    "polynomial_default": (lambda: optim.polynomial(0.5), lambda o: LRS.PolynomialLR(o)),
    "polynomial": (lambda: optim.polynomial(0.5, total_iters=150, power=2.5),
                   lambda o: LRS.PolynomialLR(o, total_iters=150, power=2.5)),
    "onecycle": (lambda: optim.onecycle(0.5, total_steps=STEPS), lambda o: LRS.OneCycleLR(o, 0.5, total_steps=STEPS)),
    "onecycle_linear": (lambda: optim.onecycle(0.5, total_steps=STEPS, pct_start=0.25, anneal_strategy="linear",
                                               div_factor=10.0, final_div_factor=100.0),
                        lambda o: LRS.OneCycleLR(o, 0.5, total_steps=STEPS, pct_start=0.25, anneal_strategy="linear",
                                                 div_factor=10.0, final_div_factor=100.0)),
    "onecycle_three_phase": (lambda: optim.onecycle(0.5, total_steps=STEPS, three_phase=True),
                             lambda o: LRS.OneCycleLR(o, 0.5, total_steps=STEPS, three_phase=True)),
    "onecycle_three_phase_linear": (
        lambda: optim.onecycle(0.5, total_steps=STEPS, pct_start=0.35, three_phase=True, anneal_strategy="linear"),
        lambda o: LRS.OneCycleLR(o, 0.5, total_steps=STEPS, pct_start=0.35, three_phase=True,
                                 anneal_strategy="linear")),
    "cyclic": (lambda: optim.cyclic(0.01, 0.5, step_size_up=20),
               lambda o: LRS.CyclicLR(o, 0.01, 0.5, step_size_up=20)),
    "cyclic_asym": (lambda: optim.cyclic(0.01, 0.5, step_size_up=13, step_size_down=29),
                    lambda o: LRS.CyclicLR(o, 0.01, 0.5, step_size_up=13, step_size_down=29)),
    "cyclic_triangular2": (lambda: optim.cyclic(0.01, 0.5, step_size_up=15, mode="triangular2"),
                           lambda o: LRS.CyclicLR(o, 0.01, 0.5, step_size_up=15, mode="triangular2")),
    "cyclic_exp_range": (lambda: optim.cyclic(0.01, 0.5, step_size_up=10, step_size_down=5, mode="exp_range",
                                              gamma=0.99),
                         lambda o: LRS.CyclicLR(o, 0.01, 0.5, step_size_up=10, step_size_down=5, mode="exp_range",
                                                gamma=0.99)),
    "join": (lambda: optim.join([optim.linear(0.5, start_factor=0.1, total_iters=10), optim.exponential(0.5, 0.98)],
                                boundaries=[10]),
             lambda o: LRS.SequentialLR(o, [LRS.LinearLR(o, start_factor=0.1, total_iters=10),
                                            LRS.ExponentialLR(o, gamma=0.98)], milestones=[10])),
    "join3": (lambda: optim.join([optim.constant(0.5), optim.step(0.5, 10, 0.5), optim.cosine_decay(0.5, 40)],
                                 boundaries=[5, 60]),
              lambda o: LRS.SequentialLR(o, [LRS.ConstantLR(o, factor=1.0, total_iters=1), LRS.StepLR(o, 10, 0.5),
                                             LRS.CosineAnnealingLR(o, 40)], milestones=[5, 60])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_matches_torch(name):
    ember_schedule, torch_scheduler = CASES[name]
    lr = 0.5 if name not in ("step_default_gamma", "multistep_unsorted", "cosine_decay_long", "linear_down",
                             "warm_restarts_mult3") else 1.0  # fmt: skip
    if name.startswith("cyclic"):
        lr = 0.01
    expected = torch_curve(torch_scheduler, lr=lr)
    np.testing.assert_allclose(ember_curve(ember_schedule()), expected, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["cosine_decay", "onecycle", "warm_restarts_mult2", "cyclic_exp_range"])
def test_schedule_float64(name):
    ember_schedule, torch_scheduler = CASES[name]
    expected = torch_curve(torch_scheduler, lr=0.01 if name.startswith("cyclic") else 0.5)
    with ember.config.x64(True):
        got = [ember_schedule()(enp.asarray(c, dtype=enp.int32)) for c in range(STEPS)]
        assert got[3].dtype == enp.float64
        np.testing.assert_allclose(np.array([float(g) for g in got]), expected, rtol=1e-10, atol=1e-12)


def test_constant_and_piecewise_constant():
    np.testing.assert_array_equal(ember_curve(optim.constant(0.3), 10), np.full(10, 0.3, np.float32))
    s = optim.piecewise_constant(2.0, {50: 0.5, 10: 0.1, 120: 3.0})
    expected = [2.0 * (0.1 if c >= 10 else 1) * (0.5 if c >= 50 else 1) * (3.0 if c >= 120 else 1)
                for c in range(STEPS)]
    np.testing.assert_allclose(ember_curve(s), expected, rtol=1e-6)
    assert float(optim.piecewise_constant(0.7)(5)) == pytest.approx(0.7)


@pytest.mark.parametrize("exponent", [1.0, 2.5])
def test_warmup_cosine_decay_is_optax_formula(exponent):
    init, peak, warm, decay, end = 0.01, 1.0, 25, 150, 0.05

    def optax_value(c):  # optax.warmup_cosine_decay_schedule, written out
        if c < warm:
            return init + (peak - init) * c / warm
        t = min(c - warm, decay - warm) / (decay - warm)
        alpha = end / peak
        return peak * ((1 - alpha) * (0.5 * (1 + math.cos(math.pi * t))) ** exponent + alpha)

    s = optim.warmup_cosine_decay(init, peak, warmup_steps=warm, decay_steps=decay, end_value=end, exponent=exponent)
    np.testing.assert_allclose(ember_curve(s), [optax_value(c) for c in range(STEPS)], rtol=2e-6, atol=1e-7)
    s0 = optim.warmup_cosine_decay(0.0, 1.0, warmup_steps=0, decay_steps=10)
    assert float(s0(0)) == 1.0 and float(s0(10)) == pytest.approx(0.0, abs=1e-7)


def test_join_offsets_later_schedules():
    s = optim.join([optim.constant(1.0), optim.exponential(1.0, 0.5), optim.constant(3.0)], boundaries=[3, 6])
    np.testing.assert_allclose(ember_curve(s, 9), [1, 1, 1, 1, 0.5, 0.25, 3, 3, 3])


def test_schedule_as_hyperparameter_and_vmap():
    s = optim.cosine_decay(1.0, T_max=10)
    counts = enp.arange(10, dtype=enp.int32)
    np.testing.assert_allclose(np.asarray(ember.vmap(s)(counts)), [float(s(c)) for c in range(10)], rtol=1e-6)
    assert float(optim.value_at(s, 10)) == pytest.approx(0.0, abs=1e-7)


def torch_plateau_scales(losses, **kw):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = LRS.ReduceLROnPlateau(opt, **kw)
    scales = []
    for loss in losses:
        sched.step(loss)
        scales.append(opt.param_groups[0]["lr"])
    return scales


@pytest.mark.parametrize("kw", [
    {},
    {"factor": 0.5, "patience": 2},
    {"factor": 0.5, "patience": 0, "cooldown": 3},
    {"factor": 0.3, "patience": 1, "threshold": 0.05, "threshold_mode": "abs", "min_lr": 0.01},
    {"factor": 0.5, "patience": 3, "mode": "max", "cooldown": 1},
    {"factor": 0.5, "patience": 1, "mode": "max", "threshold_mode": "abs", "threshold": 0.01, "min_lr": 0.2},
])
def test_reduce_on_plateau_matches_torch(kw):
    rng = np.random.default_rng(0)
    losses = list(np.concatenate([np.linspace(2.0, 1.0, 15), 1.0 + 0.02 * rng.standard_normal(60),
                                  np.linspace(1.0, 0.5, 10), np.full(40, 0.5)]))
    expected = torch_plateau_scales(losses, **kw)
    with ember.config.x64(True):
        opt = optim.reduce_on_plateau(**kw)
        params = {"w": enp.ones(3), "frozen": None}
        state = opt.init(params)
        step = ember.jit(lambda g, s, loss: opt.update(g, s, params, value=loss))
        for loss, scale in zip(losses, expected):
            updates, state = step({"w": enp.ones(3), "frozen": None}, state, enp.asarray(loss))
            assert float(state.scale) == pytest.approx(scale, rel=1e-12)
            np.testing.assert_allclose(np.asarray(updates["w"]), float(state.scale))
            assert updates["frozen"] is None
        assert step.trace_count == 1


def test_reduce_on_plateau_in_chain_gets_the_loss():
    opt = optim.chain(optim.scale(-1.0), optim.reduce_on_plateau(factor=0.5, patience=0))
    state = opt.init(enp.zeros(2))
    for loss in [1.0, 1.0]:
        updates, state = opt.update(enp.ones(2), state, enp.zeros(2), value=loss)
    np.testing.assert_allclose(np.asarray(updates), [-0.5, -0.5])


def test_errors_name_the_function():
    with pytest.raises(InvalidArgumentError, match="optim.reduce_on_plateau"):
        optim.reduce_on_plateau().update(enp.ones(1), optim.reduce_on_plateau().init(enp.ones(1)))
    with pytest.raises(InvalidArgumentError, match="optim.onecycle.*anneal_strategy"):
        optim.onecycle(1.0, 10, anneal_strategy="exp")
    with pytest.raises(InvalidArgumentError, match="optim.cyclic.*mode"):
        optim.cyclic(0.1, 1.0, mode="sine")
    with pytest.raises(InvalidArgumentError, match="optim.join.*boundaries"):
        optim.join([optim.constant(1.0)], boundaries=[3])
    with pytest.raises(InvalidArgumentError, match="T_mult"):
        optim.cosine_annealing_warm_restarts(1.0, T_0=3, T_mult=0)
    with pytest.raises(InvalidArgumentError, match="optim.step.*step_size"):
        optim.step(1.0, step_size=0)


@pytest.mark.skipif(not hasattr(optim, "sgd") or not hasattr(optim, "adam"), reason="optim.sgd/adam not written yet")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["step", "cosine_decay", "onecycle", "warm_restarts_mult2", "linear", "join"])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_schedule_as_learning_rate_matches_torch_scheduler(dtype, name, opt_name):
    ember_schedule, torch_scheduler = CASES[name]
    rng = np.random.default_rng(5)
    w0, x, y = (rng.standard_normal((4, 3)), rng.standard_normal((8, 4)), rng.standard_normal((8, 3)))
    w0, x, y = (a.astype(dtype) for a in (w0, x, y))
    steps = 30
    with ember.config.x64(dtype == "float64"):
        opt = optim.sgd(ember_schedule(), momentum=0.9) if opt_name == "sgd" else optim.adam(ember_schedule())
        params = {"w": enp.asarray(w0), "frozen": None}
        state = opt.init(params)

        @ember.jit
        def train_step(params, state):
            grads = ember.grad(lambda p: enp.mean((enp.asarray(x) @ p["w"] - enp.asarray(y)) ** 2))(params)
            updates, state = opt.update(grads, state, params)
            return optim.apply_updates(params, updates), state

        ember_ws = []
        for _ in range(steps):
            params, state = train_step(params, state)
            ember_ws.append(np.asarray(params["w"]))
        assert train_step.trace_count == 1
    w = torch.nn.Parameter(torch.tensor(w0))
    topt = torch.optim.SGD([w], lr=0.5, momentum=0.9) if opt_name == "sgd" else torch.optim.Adam([w], lr=0.5)
    if name == "onecycle":
        sched = LRS.OneCycleLR(topt, 0.5, total_steps=STEPS, cycle_momentum=False)
    else:
        sched = torch_scheduler(topt)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for step_i in range(steps):
        topt.zero_grad()
        torch.mean((torch.tensor(x) @ w - torch.tensor(y)) ** 2).backward()
        topt.step()
        sched.step()
        np.testing.assert_allclose(ember_ws[step_i], w.detach().numpy(), err_msg=f"step {step_i}", **tol)
