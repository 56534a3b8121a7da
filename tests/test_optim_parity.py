"""ember.optim's main optimizers against torch.optim, step for step.

Each case is an optimizer with one combination of its options; ember and PyTorch each take 25+ steps
from the same start, each with its own gradients, on a quadratic and on a small MLP (dict params), in
float32 and float64, and the parameters must agree after every step. Also: a whole jitted train step
traces once; ``None`` leaves are skipped; a schedule as the learning rate (``LambdaLR``); ``vmap`` over
three stacked models and their states; PyTorch's argument checks.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import optim
from ember.errors import InvalidArgumentError

torch = pytest.importorskip("torch")

STEPS = 30

# (ember factory name, torch class name, kwargs in PyTorch's spelling)
CASES = [
    ("sgd", "SGD", dict(lr=0.05)),
    ("sgd", "SGD", dict(lr=0.05, momentum=0.9)),
    ("sgd", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("sgd", "SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("sgd", "SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1, nesterov=True, maximize=True)),
    ("sgd", "SGD", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("sgd", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.05)),
    ("adam", "Adam", dict(lr=0.03)),
    ("adam", "Adam", dict(lr=0.03, amsgrad=True)),
    ("adam", "Adam", dict(lr=0.03, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adam", "Adam", dict(lr=0.03, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("adam", "Adam", dict(lr=0.03, weight_decay=0.1, decoupled_weight_decay=True)),
    ("adamw", "AdamW", dict(lr=0.03)),
    ("adamw", "AdamW", dict(lr=0.03, weight_decay=0.2, amsgrad=True)),
    ("adamw", "AdamW", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.2, maximize=True)),
    ("rmsprop", "RMSprop", dict(lr=0.01)),
    ("rmsprop", "RMSprop", dict(lr=0.01, centered=True)),
    ("rmsprop", "RMSprop", dict(lr=0.01, momentum=0.9)),
    ("rmsprop", "RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
    ("rmsprop", "RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.5, centered=True,
                                maximize=True)),
    ("adagrad", "Adagrad", dict(lr=0.1)),
    ("adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("adagrad", "Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6)),
    ("adagrad", "Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1,
                                maximize=True)),
    ("adadelta", "Adadelta", dict()),
    ("adadelta", "Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5)),
    ("adadelta", "Adadelta", dict(lr=2.0, weight_decay=0.1, maximize=True)),
    ("adamax", "Adamax", dict(lr=0.02)),
    ("adamax", "Adamax", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamax", "Adamax", dict(lr=0.02, weight_decay=0.1, maximize=True)),
    ("nadam", "NAdam", dict(lr=0.02)),
    ("nadam", "NAdam", dict(lr=0.02, momentum_decay=0.01)),
    ("nadam", "NAdam", dict(lr=0.02, weight_decay=0.1)),
    ("nadam", "NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.0)),
    ("nadam", "NAdam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, maximize=True)),
    ("radam", "RAdam", dict(lr=0.02)),
    ("radam", "RAdam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6)),
    ("radam", "RAdam", dict(lr=0.02, weight_decay=0.1)),
    ("radam", "RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("radam", "RAdam", dict(lr=0.02, betas=(0.9, 0.99))),
]
IDS = [f"{name}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for name, _, kw in CASES]


def ember_opt(name: str, kwargs: dict, lr=None):
    """ember's optimizer for PyTorch's kwargs, the learning rate as ``learning_rate=`` (``lr`` overrides it)."""
    kwargs = dict(kwargs)
    torch_lr = kwargs.pop("lr", None)
    if lr is not None or torch_lr is not None:
        kwargs["learning_rate"] = lr if lr is not None else torch_lr
    return getattr(optim, name)(**kwargs)


def torch_opt(cls: str, params, kwargs: dict):
    # foreach=False: PyTorch's per-tensor loop, the arithmetic its documentation spells out
    return getattr(torch.optim, cls)(params, **kwargs, foreach=False)


# --- problems: start values, ember loss, torch loss -----------------------------------------------------

RNG = np.random.default_rng(0)
QUAD = {"scale": RNG.uniform(0.5, 3.0, (2, 3)), "target": RNG.normal(size=(2, 3)), "w0": RNG.normal(size=(2, 3)),
        "v0": RNG.normal(size=4), "vtarget": RNG.normal(size=4)}  # fmt: skip
MLP = {"x": RNG.normal(size=(8, 3)), "y": RNG.normal(size=(8, 2)), "w1": RNG.normal(size=(3, 5)) * 0.5,
       "b1": RNG.normal(size=5) * 0.1, "w2": RNG.normal(size=(5, 2)) * 0.5, "b2": RNG.normal(size=2) * 0.1}  # fmt: skip


def start(problem: str, dtype) -> dict[str, np.ndarray]:
    if problem == "quadratic":
        return {"w": QUAD["w0"].astype(dtype), "v": QUAD["v0"].astype(dtype)}
    return {k: MLP[k].astype(dtype) for k in ("w1", "b1", "w2", "b2")}


def ember_loss(problem: str, dtype, maximize: bool = False):
    """The loss (its negative with ``maximize``: maximizing it is minimizing the loss)."""
    loss = _ember_loss(problem, dtype)
    return (lambda p: -loss(p)) if maximize else loss


def _ember_loss(problem: str, dtype):
    if problem == "quadratic":
        scale, target, vt = (enp.asarray(QUAD[k].astype(dtype)) for k in ("scale", "target", "vtarget"))
        return lambda p: 0.5 * (scale * (p["w"] - target) ** 2).sum() + ((p["v"] - vt) ** 4).sum() / 4
    x, y = enp.asarray(MLP["x"].astype(dtype)), enp.asarray(MLP["y"].astype(dtype))
    return lambda p: ((enp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2).mean()


def torch_loss(problem: str, dtype, maximize: bool = False):
    loss = _torch_loss(problem, dtype)
    return (lambda p: -loss(p)) if maximize else loss


def _torch_loss(problem: str, dtype):
    if problem == "quadratic":
        scale, target, vt = (torch.tensor(QUAD[k].astype(dtype)) for k in ("scale", "target", "vtarget"))
        return lambda p: 0.5 * (scale * (p["w"] - target) ** 2).sum() + ((p["v"] - vt) ** 4).sum() / 4
    x, y = torch.tensor(MLP["x"].astype(dtype)), torch.tensor(MLP["y"].astype(dtype))
    return lambda p: ((torch.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2).mean()


@contextlib.contextmanager
def precision(dtype):
    """float64: ember's x64 mode and torch's default dtype (NAdam keeps mu_product in it)."""
    if dtype == np.float32:
        yield
        return
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with ember.config.x64(True):
            yield
    finally:
        torch.set_default_dtype(old)


TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


def torch_trajectory(cls, kwargs, problem, dtype, start_params=None, steps=STEPS, lr_lambda=None):
    """PyTorch's parameters after each step."""
    p = {k: torch.tensor(v, requires_grad=True) for k, v in (start_params or start(problem, dtype)).items()}
    opt = torch_opt(cls, list(p.values()), kwargs)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda) if lr_lambda is not None else None
    loss = torch_loss(problem, dtype, kwargs.get("maximize", False))
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss(p).backward()
        opt.step()
        if sched is not None:
            sched.step()
        out.append({k: v.detach().numpy().copy() for k, v in p.items()})
    return out


def assert_close(ours, theirs, dtype, step):
    for k in theirs:
        np.testing.assert_allclose(np.asarray(ours[k]), theirs[k], **TOL[dtype], err_msg=f"{k} at step {step}")


# --- parity, eager ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("problem", ["quadratic", "mlp"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_parity_with_torch(case, problem, dtype):
    name, cls, kwargs = case
    with precision(dtype):
        expected = torch_trajectory(cls, kwargs, problem, dtype)
        opt = ember_opt(name, kwargs)
        params = {k: enp.asarray(v) for k, v in start(problem, dtype).items()}
        state = opt.init(params)
        grad = ember.grad(ember_loss(problem, dtype, kwargs.get("maximize", False)))
        for step, theirs in enumerate(expected, 1):
            updates, state = opt.update(grad(params), state, params)
            params = optim.apply_updates(params, updates)
            assert params["w" if problem == "quadratic" else "w1"].dtype == dtype
            assert_close(params, theirs, dtype, step)
        assert int(state.count) == STEPS


# --- under jit: one trace for the whole run -----------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit_train_step_traces_once(case, dtype):
    name, cls, kwargs = case
    problem = "mlp"
    with precision(dtype):
        expected = torch_trajectory(cls, kwargs, problem, dtype)
        opt = ember_opt(name, kwargs)
        loss = ember_loss(problem, dtype, kwargs.get("maximize", False))

        @ember.jit
        def train_step(params, state):
            updates, state = opt.update(ember.grad(loss)(params), state, params)
            return optim.apply_updates(params, updates), state

        params = {k: enp.asarray(v) for k, v in start(problem, dtype).items()}
        state = opt.init(params)
        for step, theirs in enumerate(expected, 1):
            params, state = train_step(params, state)
            assert_close(params, theirs, dtype, step)
        assert train_step.trace_count == 1


# --- a schedule as the learning rate ------------------------------------------------------------------


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_learning_rate_schedule_matches_lambda_lr(case, jit):
    name, cls, kwargs = case
    base_lr = kwargs.get("lr", 1.0)
    problem, dtype = "quadratic", np.float32
    expected = torch_trajectory(cls, kwargs, problem, dtype, lr_lambda=lambda epoch: 0.9**epoch)
    opt = ember_opt(name, kwargs, lr=lambda count: base_lr * 0.9**count)
    loss = ember_loss(problem, dtype, kwargs.get("maximize", False))

    def train_step(params, state):
        updates, state = opt.update(ember.grad(loss)(params), state, params)
        return optim.apply_updates(params, updates), state

    step_fn = ember.jit(train_step) if jit else train_step
    params = {k: enp.asarray(v) for k, v in start(problem, dtype).items()}
    state = opt.init(params)
    for step, theirs in enumerate(expected, 1):
        params, state = step_fn(params, state)
        assert_close(params, theirs, dtype, step)
    if jit:
        assert step_fn.trace_count == 1


# --- every hyperparameter a schedule -------------------------------------------------------------------

# The hyperparameters a case may give as schedules, each a function of the step count that stays in range.
SCHEDULABLE = ("lr", "momentum", "dampening", "weight_decay", "eps", "alpha", "lr_decay", "rho", "momentum_decay")


def drift(value: float):
    return lambda count: value * (1 - 0.01 * count)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_hyperparameter_schedules_match_torch_param_groups(case):
    """Every numeric hyperparameter (betas included) a schedule; PyTorch gets the same values in its param group.

    In float64, where ember's schedule values (computed from the int32 count) are PyTorch's Python floats,
    and with PyTorch's gradients given to both: shrinking betas drive the quadratic to its minimum within
    the 30 steps, where the last-bit differences of two separately computed gradients are no longer small
    next to the gradient; this test is about the hyperparameters reaching the update at the right step.
    """
    name, cls, kwargs = case
    problem, dtype = "quadratic", np.float64
    hyper = {k: v for k, v in kwargs.items() if k in SCHEDULABLE and v != 0}
    betas = kwargs.get("betas", (0.9, 0.999) if "Adam" in cls or cls in ("Adamax", "NAdam", "RAdam") else None)
    schedules = {k: drift(v) for k, v in hyper.items()}
    if betas is not None:
        schedules["betas"] = (drift(betas[0]), drift(betas[1]))

    with precision(dtype):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in start(problem, dtype).items()}
        topt = torch_opt(cls, list(p.values()), kwargs)
        tloss = torch_loss(problem, dtype, kwargs.get("maximize", False))
        opt = ember_opt(name, {**kwargs, **schedules})
        update = ember.jit(opt.update)
        params = {k: enp.asarray(v) for k, v in start(problem, dtype).items()}
        state = opt.init(params)
        for epoch in range(STEPS):
            for k, f in schedules.items():
                topt.param_groups[0][k] = (f[0](epoch), f[1](epoch)) if k == "betas" else f(epoch)
            topt.zero_grad()
            tloss(p).backward()
            grads = {k: enp.asarray(v.grad.numpy().copy()) for k, v in p.items()}
            topt.step()
            updates, state = update(grads, state, params)
            params = optim.apply_updates(params, updates)
            assert_close(params, {k: v.detach().numpy() for k, v in p.items()}, dtype, epoch + 1)
    assert update.trace_count == 1


# --- None leaves --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_none_leaves_are_skipped(case):
    """A ``None`` parameter (partitioned out) and a parameter with a ``None`` gradient (frozen) stay as they are."""
    name, cls, kwargs = case
    problem, dtype = "quadratic", np.float32
    expected = torch_trajectory(cls, kwargs, problem, dtype, steps=5)
    opt = ember_opt(name, kwargs)
    grad = ember.grad(ember_loss(problem, dtype, kwargs.get("maximize", False)))
    frozen = enp.array([1.0, 2.0])
    params = {**{k: enp.asarray(v) for k, v in start(problem, dtype).items()}, "gone": None, "frozen": frozen}
    state = opt.init(params)
    for step, theirs in enumerate(expected, 1):
        g = grad({"w": params["w"], "v": params["v"]})
        updates, state = opt.update({**g, "gone": None, "frozen": None}, state, params)
        assert updates["gone"] is None and updates["frozen"] is None
        params = optim.apply_updates(params, updates)
        assert params["gone"] is None and params["frozen"] is frozen
        assert_close(params, theirs, dtype, step)


# --- vmap over an ensemble ----------------------------------------------------------------------------


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_over_three_models(case, jit):
    name, cls, kwargs = case
    problem, dtype = "mlp", np.float32
    starts = [{k: v + 0.1 * i for k, v in start(problem, dtype).items()} for i in range(3)]
    expected = [torch_trajectory(cls, kwargs, problem, dtype, start_params=s, steps=STEPS) for s in starts]
    opt = ember_opt(name, kwargs)
    loss = ember_loss(problem, dtype, kwargs.get("maximize", False))

    def train_step(params, state):
        updates, state = opt.update(ember.grad(loss)(params), state, params)
        return optim.apply_updates(params, updates), state

    params = {k: enp.asarray(np.stack([s[k] for s in starts])) for k in starts[0]}
    state = ember.vmap(opt.init)(params)
    step_fn = ember.jit(ember.vmap(train_step)) if jit else ember.vmap(train_step)
    for step in range(STEPS):
        params, state = step_fn(params, state)
        for i in range(3):
            assert_close({k: np.asarray(v)[i] for k, v in params.items()}, expected[i][step], dtype, step + 1)
    if jit:
        assert step_fn.trace_count == 1
    assert np.asarray(state.count).tolist() == [STEPS] * 3


# --- PyTorch's argument checks ------------------------------------------------------------------------

BAD = [
    ("sgd", "SGD", dict(lr=-0.1)),
    ("sgd", "SGD", dict(lr=0.1, momentum=-0.5)),
    ("sgd", "SGD", dict(lr=0.1, weight_decay=-1.0)),
    ("sgd", "SGD", dict(lr=0.1, nesterov=True)),
    ("sgd", "SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    *[(n, c, kw) for n, c in [("adam", "Adam"), ("adamw", "AdamW"), ("adamax", "Adamax"), ("nadam", "NAdam"),
                              ("radam", "RAdam")]
      for kw in [dict(lr=-1e-3), dict(eps=-1e-8), dict(betas=(1.0, 0.999)), dict(betas=(-0.1, 0.999)),
                 dict(betas=(0.9, 1.0)), dict(betas=(0.9, -0.5)), dict(weight_decay=-0.1)]],
    ("nadam", "NAdam", dict(momentum_decay=-1.0)),
    ("rmsprop", "RMSprop", dict(lr=-0.1)),
    ("rmsprop", "RMSprop", dict(eps=-1.0)),
    ("rmsprop", "RMSprop", dict(momentum=-0.1)),
    ("rmsprop", "RMSprop", dict(weight_decay=-0.1)),
    ("rmsprop", "RMSprop", dict(alpha=-0.1)),
    ("adagrad", "Adagrad", dict(lr=-0.1)),
    ("adagrad", "Adagrad", dict(lr_decay=-0.1)),
    ("adagrad", "Adagrad", dict(weight_decay=-0.1)),
    ("adagrad", "Adagrad", dict(initial_accumulator_value=-0.1)),
    ("adagrad", "Adagrad", dict(eps=-0.1)),
    ("adadelta", "Adadelta", dict(lr=-0.1)),
    ("adadelta", "Adadelta", dict(rho=1.5)),
    ("adadelta", "Adadelta", dict(rho=-0.1)),
    ("adadelta", "Adadelta", dict(eps=-0.1)),
    ("adadelta", "Adadelta", dict(weight_decay=-0.1)),
]


@pytest.mark.parametrize("case", BAD, ids=[f"{n}-{kw}" for n, _, kw in BAD])
def test_bad_arguments_raise_as_torch_does(case):
    name, cls, kwargs = case
    with pytest.raises(ValueError):
        torch_opt(cls, [torch.zeros(2, requires_grad=True)], kwargs)
    with pytest.raises(InvalidArgumentError, match=f"optim.{name}"):
        ember_opt(name, kwargs)


def test_learning_rate_spellings():
    a = optim.adam(learning_rate=0.1)
    b = optim.adam(lr=0.1)
    p = enp.array([1.0, -2.0])
    assert a.update(p, a.init(p), p)[0].tolist() == b.update(p, b.init(p), p)[0].tolist()
    with pytest.raises(InvalidArgumentError, match="once"):
        optim.adam(learning_rate=0.1, lr=0.1)
    # Without either, the learning rate is torch's default (SGD's is 1e-3 in torch 2.13).
    default = torch.optim.SGD([torch.zeros(1, requires_grad=True)]).defaults["lr"]
    assert optim.sgd().update(p, optim.sgd().init(p))[0].tolist() == (-default * p).tolist()


def test_weight_decay_needs_params():
    opt = optim.adamw(learning_rate=0.1)
    p = enp.ones(2)
    with pytest.raises(InvalidArgumentError, match="params"):
        opt.update(p, opt.init(p))
    updates, _ = optim.adam(learning_rate=0.1).update(p, opt.init(p))  # no decay: params not needed
    assert updates.shape == (2,)


def test_states_are_namedtuples_with_int32_count():
    p = {"w": enp.ones(3)}
    for name in ("sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "adamax", "nadam", "radam"):
        state = getattr(optim, name)(learning_rate=0.1).init(p)
        assert hasattr(state, "_fields") and state.count.dtype == enp.int32 and int(state.count) == 0


@pytest.mark.parametrize("case", [("radam", "RAdam", dict(lr=0.01)), ("adam", "Adam", dict(lr=0.01)),
                                  ("nadam", "NAdam", dict(lr=0.01))], ids=["radam", "adam", "nadam"])  # fmt: skip
def test_long_run_float64(case):
    """250 steps: RAdam's rho_t past beta2 = 0.999's switch of formula (step 100), bias corrections near 1,
    NAdam's mu_product shrinking towards zero.

    Both take PyTorch's gradients: over 250 steps the last-bit differences of two separately computed
    MLP gradients grow past 1e-13 on parameters crossing zero; this test is about the long-run scalar math.
    """
    name, cls, kwargs = case
    problem, dtype = "mlp", np.float64
    with precision(dtype):
        p = {k: torch.tensor(v, requires_grad=True) for k, v in start(problem, dtype).items()}
        topt = torch_opt(cls, list(p.values()), kwargs)
        tloss = torch_loss(problem, dtype)
        opt = ember_opt(name, kwargs)
        params = {k: enp.asarray(v) for k, v in start(problem, dtype).items()}
        state = opt.init(params)
        for step in range(1, 251):
            topt.zero_grad()
            tloss(p).backward()
            grads = {k: enp.asarray(v.grad.numpy().copy()) for k, v in p.items()}
            topt.step()
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
            assert_close(params, {k: v.detach().numpy() for k, v in p.items()}, dtype, step)
