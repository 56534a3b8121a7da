"""asgd, rprop (vs torch.optim), lion, lamb (vs NumPy references written from the papers) and lbfgs (vs torch)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import optim
from ember.errors import InvalidArgumentError

STEPS = 30


# --- problems: a quadratic and a small MLP, written once for enp, torch and NumPy --------------------------


def _quadratic_init(rng: np.random.Generator) -> dict:
    return {"w": rng.normal(size=5), "m": rng.normal(size=(3, 4))}


_SCALES = np.linspace(0.5, 2.0, 5)
_CENTRE = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def _quadratic_loss(p: dict, xp) -> object:
    return (0.5 * xp.asarray(_SCALES, dtype=p["w"].dtype) * p["w"] ** 2).sum() + \
        ((p["m"] - xp.asarray(_CENTRE, dtype=p["m"].dtype)) ** 2).sum()


def _quadratic_grad(p: dict) -> dict:
    return {"w": _SCALES * p["w"], "m": 2 * (p["m"] - _CENTRE)}


_X = np.random.default_rng(7).normal(size=(8, 3))
_T = np.random.default_rng(8).normal(size=(8, 2))


def _mlp_init(rng: np.random.Generator) -> dict:
    return {"w1": rng.normal(size=(3, 6)) * 0.5, "b1": rng.normal(size=6) * 0.1,
            "w2": rng.normal(size=(6, 2)) * 0.5, "b2": np.zeros(2)}


def _mlp_loss(p: dict, xp) -> object:
    x, t = xp.asarray(_X, dtype=p["w1"].dtype), xp.asarray(_T, dtype=p["w1"].dtype)
    y = xp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return ((y - t) ** 2).mean()


def _mlp_grad(p: dict) -> dict:
    h = np.tanh(_X @ p["w1"] + p["b1"])
    dy = 2 * (h @ p["w2"] + p["b2"] - _T) / _T.size
    dz = (dy @ p["w2"].T) * (1 - h**2)
    return {"w1": _X.T @ dz, "b1": dz.sum(0), "w2": h.T @ dy, "b2": dy.sum(0)}


PROBLEMS = {"quadratic": (_quadratic_init, _quadratic_loss, _quadratic_grad),
            "mlp": (_mlp_init, _mlp_loss, _mlp_grad)}
DTYPES = ["float32", "float64"]
TOL = {"float32": {"rtol": 2e-5, "atol": 2e-6}, "float64": {"rtol": 1e-11, "atol": 1e-13}}


def _ember_run(opt: optim.GradientTransformation, problem: str, dtype: str, steps: int = STEPS,
               maximize: bool = False) -> list:
    """The parameters after each of ``steps`` steps, gradients by ember.grad.

    With ``maximize`` the objective is the negated loss, so that ascending it is the same well-posed problem.
    """
    init, loss, _ = PROBLEMS[problem]
    loss = _negated(loss) if maximize else loss
    with ember.config.x64(dtype == "float64"):
        params = {k: enp.asarray(v, dtype=dtype) for k, v in init(np.random.default_rng(0)).items()}
        state = opt.init(params)
        grad = ember.grad(lambda p: loss(p, enp))
        history = []
        for _ in range(steps):
            updates, state = opt.update(grad(params), state, params)
            params = optim.apply_updates(params, updates)
            assert all(v.dtype == np.dtype(dtype) for v in params.values())
            history.append({k: np.asarray(v) for k, v in params.items()})
    return history


def _negated(loss):
    return lambda p, xp: -loss(p, xp)


def _torch_run(make, problem: str, dtype: str, steps: int = STEPS, maximize: bool = False) -> list:
    torch = pytest.importorskip("torch")
    init, loss, _ = PROBLEMS[problem]
    loss = _negated(loss) if maximize else loss
    old_default = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))  # torch keeps its scalar state (ASGD's eta, mu) in this dtype
    try:
        params = {k: torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=True)
                  for k, v in init(np.random.default_rng(0)).items()}
        opt = make(list(params.values()))
        history = []
        for _ in range(steps):
            opt.zero_grad()
            loss(params, torch).backward()
            opt.step()
            history.append({k: v.detach().numpy().copy() for k, v in params.items()})
    finally:
        torch.set_default_dtype(old_default)
    return history


def _numpy_run(step, state, problem: str, dtype: str, steps: int = STEPS) -> list:
    """A NumPy reference optimizer: ``step(params, grads, state, t) -> (params, state)`` per array, in float64."""
    init, _, grad = PROBLEMS[problem]
    params = {k: v.astype(dtype).astype(np.float64) for k, v in init(np.random.default_rng(0)).items()}
    states = {k: state(v) for k, v in params.items()}
    history = []
    for t in range(1, steps + 1):
        grads = grad(params)
        for k in params:
            params[k], states[k] = step(params[k], grads[k], states[k], t)
        history.append({k: v.copy() for k, v in params.items()})
    return history


def _assert_histories(ours: list, ref: list, dtype: str, tol: dict | None = None) -> None:
    for i, (a, b) in enumerate(zip(ours, ref, strict=True)):
        for k in b:
            np.testing.assert_allclose(a[k], b[k], **(tol or TOL[dtype]), err_msg=f"step {i + 1}, {k}")


# --- asgd and rprop vs torch.optim ---------------------------------------------------------------------------


ASGD_OPTIONS = [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, maximize=True),
                dict(lr=0.1, lambd=0.05, alpha=0.5, t0=10, weight_decay=0.01),
                dict(lr=0.1, lambd=0.05, t0=5, maximize=True, weight_decay=0.1)]


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", ASGD_OPTIONS, ids=str)
def test_asgd_matches_torch(problem, dtype, options):
    torch = pytest.importorskip("torch")
    maximize = options.get("maximize", False)
    ref = _torch_run(lambda ps: torch.optim.ASGD(ps, **options), problem, dtype, maximize=maximize)
    ours = _ember_run(optim.asgd(**options), problem, dtype, maximize=maximize)
    _assert_histories(ours, ref, dtype)


def test_asgd_state_follows_torch():
    torch = pytest.importorskip("torch")
    options = dict(lr=0.1, lambd=0.05, alpha=0.5, t0=3)
    p = torch.tensor(np.linspace(-1, 1, 4), dtype=torch.float32, requires_grad=True)
    topt = torch.optim.ASGD([p], **options)
    opt = optim.asgd(**options)
    params = enp.asarray(np.linspace(-1, 1, 4), dtype="float32")
    state = opt.init(params)
    for _ in range(8):
        topt.zero_grad()
        (p**2).sum().backward()
        topt.step()
        updates, state = opt.update(2 * params, state, params)
        params = optim.apply_updates(params, updates)
        tstate = topt.state[p]
        assert int(state.count) == int(tstate["step"])
        np.testing.assert_allclose(float(state.eta), float(tstate["eta"]), rtol=1e-6)
        np.testing.assert_allclose(float(state.mu), float(tstate["mu"]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(state.ax), tstate["ax"].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_asgd_schedule_matches_torch_exponential_lr(dtype):
    """A schedule as learning rate is torch's ASGD stepped with ExponentialLR after every step."""
    torch = pytest.importorskip("torch")

    class Scheduled:
        def __init__(self, params):
            self.opt = torch.optim.ASGD(params, lr=0.1, lambd=0.05, t0=4)
            self.scheduler = torch.optim.lr_scheduler.ExponentialLR(self.opt, gamma=0.9)

        def zero_grad(self):
            self.opt.zero_grad()

        def step(self):
            self.opt.step()
            self.scheduler.step()

    ref = _torch_run(Scheduled, "mlp", dtype)
    ours = _ember_run(optim.asgd(learning_rate=optim.exponential(0.1, gamma=0.9), lambd=0.05, t0=4), "mlp", dtype)
    _assert_histories(ours, ref, dtype)


RPROP_OPTIONS = [dict(), dict(lr=0.05), dict(lr=0.05, maximize=True), dict(lr=0.02, etas=(0.3, 1.5)),
                 dict(lr=0.05, etas=(0.4, 1.1), step_sizes=(1e-3, 0.2))]


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", RPROP_OPTIONS, ids=str)
def test_rprop_matches_torch(problem, dtype, options):
    torch = pytest.importorskip("torch")
    maximize = options.get("maximize", False)
    ref = _torch_run(lambda ps: torch.optim.Rprop(ps, **options), problem, dtype, maximize=maximize)
    ours = _ember_run(optim.rprop(**options), problem, dtype, maximize=maximize)
    _assert_histories(ours, ref, dtype)


# --- lion and lamb vs NumPy references ----------------------------------------------------------------------


def _lion_reference(lr, betas=(0.9, 0.99), weight_decay=0.0):
    """Chen et al. 2023, Algorithm 2 (decoupled weight decay)."""
    beta1, beta2 = betas

    def step(p, g, m, t):
        c = beta1 * m + (1 - beta1) * g
        p = p - lr * (np.sign(c) + weight_decay * p)
        return p, beta2 * m + (1 - beta2) * g

    return step, np.zeros_like


def _lamb_reference(lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
    """You et al. 2020, Algorithm 2 (LAMB) with phi the identity and a trust ratio of 1 at zero norms, as optax."""
    beta1, beta2 = betas

    def step(p, g, mv, t):
        m, v = mv
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        r = (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps) + weight_decay * p
        p_norm, r_norm = np.linalg.norm(p), np.linalg.norm(r)
        trust = p_norm / r_norm if p_norm > 0 and r_norm > 0 else 1.0
        return p - lr * trust * r, (m, v)

    return step, lambda p: (np.zeros_like(p), np.zeros_like(p))


LION_OPTIONS = [dict(lr=1e-3), dict(lr=3e-3, betas=(0.8, 0.95)), dict(lr=2e-3, weight_decay=0.5),
                dict(lr=1e-3, betas=(0.95, 0.98), weight_decay=0.1)]
LAMB_OPTIONS = [dict(lr=1e-2), dict(lr=2e-2, betas=(0.8, 0.99)), dict(lr=1e-2, weight_decay=0.1),
                dict(lr=5e-3, betas=(0.9, 0.9), eps=1e-3, weight_decay=0.01)]


def _ours(make, options):
    options = dict(options)
    return make(learning_rate=options.pop("lr"), **options)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", LION_OPTIONS, ids=str)
def test_lion_matches_reference(problem, dtype, options):
    step, state = _lion_reference(**options)
    ref = _numpy_run(step, state, problem, dtype)
    ours = _ember_run(_ours(optim.lion, options), problem, dtype)
    # float32: a sign update moves by exactly lr, so only the rounding of p accumulates
    _assert_histories(ours, ref, dtype, {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else None)


@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", LAMB_OPTIONS, ids=str)
def test_lamb_matches_reference(problem, dtype, options):
    step, state = _lamb_reference(**options)
    ref = _numpy_run(step, state, problem, dtype)
    ours = _ember_run(_ours(optim.lamb, options), problem, dtype)
    _assert_histories(ours, ref, dtype, {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else None)


def test_lamb_zero_parameter_uses_trust_ratio_one():
    opt = optim.lamb(learning_rate=0.1)
    params = {"z": enp.zeros(3), "w": enp.array([3.0, 4.0])}
    updates, _ = opt.update({"z": enp.array([1.0, -2.0, 0.0]), "w": enp.zeros(2)}, opt.init(params), params)
    assert np.all(np.isfinite(np.asarray(updates["z"]))) and np.all(np.isfinite(np.asarray(updates["w"])))
    # first step: m_hat / sqrt(v_hat) = sign(g) (up to eps), trust ratio 1 for the zero parameter
    np.testing.assert_allclose(np.asarray(updates["z"]), [-0.1, 0.1, 0.0], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(updates["w"]), [0.0, 0.0])


def test_lion_schedule_matches_reference():
    schedule = optim.exponential(1e-2, gamma=0.9)
    opt = optim.lion(learning_rate=schedule)
    params = enp.asarray(np.linspace(-1, 1, 5), dtype="float32")
    state = opt.init(params)
    ref = np.linspace(-1, 1, 5).astype(np.float32).astype(np.float64)
    m = np.zeros(5)
    for t in range(25):
        updates, state = opt.update(2 * params, state, params)
        params = optim.apply_updates(params, updates)
        g = 2 * ref
        ref = ref - 1e-2 * 0.9**t * np.sign(0.9 * m + 0.1 * g)
        m = 0.99 * m + 0.01 * g
        np.testing.assert_allclose(np.asarray(params), ref, rtol=1e-5, atol=1e-6)


# --- every optimizer: jit, vmap-free pytrees with None leaves, bad arguments --------------------------------


ALL = {"asgd": lambda: optim.asgd(learning_rate=0.05, weight_decay=0.1, t0=2),
       "rprop": lambda: optim.rprop(learning_rate=0.05),
       "lion": lambda: optim.lion(learning_rate=1e-2, weight_decay=0.1),
       "lamb": lambda: optim.lamb(learning_rate=1e-2, weight_decay=0.1)}


@pytest.mark.parametrize("name", ALL)
def test_jit_whole_step_traces_once(name):
    opt = ALL[name]()

    def step(params, state):
        grads = ember.grad(lambda p: _mlp_loss(p, enp))(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    jitted = ember.jit(step)
    params = {k: enp.asarray(v, dtype="float32") for k, v in _mlp_init(np.random.default_rng(0)).items()}
    state = opt.init(params)
    eager_params, eager_state = params, state
    for _ in range(5):
        params, state = jitted(params, state)
        eager_params, eager_state = step(eager_params, eager_state)
    assert jitted.trace_count == 1
    for k in params:
        np.testing.assert_allclose(np.asarray(params[k]), np.asarray(eager_params[k]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_none_leaves_are_skipped(name):
    opt = ALL[name]()
    w0 = enp.asarray(np.linspace(-1, 1, 4), dtype="float32")
    frozen = enp.asarray([5.0, 6.0])
    params = {"w": w0, "frozen": frozen}
    alone = {"w": w0}
    state, state_alone = opt.init(params), opt.init(alone)
    for _ in range(3):
        updates, state = opt.update({"w": 2 * params["w"], "frozen": None}, state, params)
        assert updates["frozen"] is None
        assert ember.tree.structure(state) == ember.tree.structure(opt.init(params))  # the state keeps its shape
        params = optim.apply_updates(params, updates)
        updates, state_alone = opt.update({"w": 2 * alone["w"]}, state_alone, alone)
        alone = optim.apply_updates(alone, updates)
    np.testing.assert_array_equal(np.asarray(params["frozen"]), [5.0, 6.0])
    np.testing.assert_allclose(np.asarray(params["w"]), np.asarray(alone["w"]), rtol=1e-6)


@pytest.mark.parametrize("name", ALL)
def test_state_is_a_namedtuple_with_an_int32_count(name):
    state = ALL[name]().init({"w": enp.ones(2)})
    assert hasattr(state, "_fields") and state.count.dtype == np.int32 and int(state.count) == 0


@pytest.mark.parametrize("make, message", [
    (lambda: optim.asgd(learning_rate=-1.0), "asgd: invalid learning rate -1.0"),
    (lambda: optim.asgd(learning_rate=0.1, lr=0.1), "asgd: give the learning rate once"),
    (lambda: optim.asgd(weight_decay=-0.5), "asgd: invalid weight_decay value -0.5"),
    (lambda: optim.rprop(etas=(1.5, 1.2)), "rprop: invalid etas"),
    (lambda: optim.rprop(etas=(0.5, 0.9)), "rprop: invalid etas"),
    (lambda: optim.rprop(learning_rate=lambda c: 0.1), "rprop: the learning rate is only the initial step size"),
    (lambda: optim.lion(betas=(1.0, 0.99)), "lion: invalid beta parameter at index 0: 1.0"),
    (lambda: optim.lion(betas=(0.9,)), "lion: betas must be a pair"),
    (lambda: optim.lion(weight_decay=-1), "lion: invalid weight_decay value -1"),
    (lambda: optim.lamb(eps=-1e-8), "lamb: invalid epsilon value"),
    (lambda: optim.lamb(betas=(0.9, -0.1)), "lamb: invalid beta parameter at index 1"),
])
def test_bad_arguments(make, message):
    with pytest.raises(InvalidArgumentError, match=message.replace("(", r"\(")):
        make()


@pytest.mark.parametrize("name", ["asgd", "lamb", "lion"])
def test_update_without_params_is_an_error(name):
    opt = ALL[name]()
    with pytest.raises(InvalidArgumentError, match=f"optim.{name}: update needs the parameters"):
        opt.update(enp.ones(2), opt.init(enp.ones(2)))


def test_lr_alias_is_learning_rate():
    params = enp.asarray([1.0, -2.0])
    for make in (optim.asgd, optim.rprop, optim.lion, optim.lamb):
        a, b = make(lr=0.1), make(learning_rate=0.1)
        ua, _ = a.update(enp.asarray([0.5, 0.5]), a.init(params), params)
        ub, _ = b.update(enp.asarray([0.5, 0.5]), b.init(params), params)
        np.testing.assert_array_equal(np.asarray(ua), np.asarray(ub))


def test_options_grid_runs_under_jit():
    """Every flag combination of asgd and rprop traces once and stays finite."""
    params = {"w": enp.asarray(np.linspace(-1, 1, 4), dtype="float32")}
    for maximize, wd in itertools.product([False, True], [0.0, 0.1]):
        for opt in (optim.asgd(learning_rate=0.01, weight_decay=wd, maximize=maximize),
                    optim.rprop(learning_rate=0.01, maximize=maximize)):
            step = ember.jit(lambda p, s, opt=opt: opt.update({"w": 2 * p["w"]}, s, p))
            state = opt.init(params)
            for _ in range(3):
                updates, state = step(params, state)
            assert step.trace_count == 1 and np.all(np.isfinite(np.asarray(updates["w"])))


@pytest.mark.parametrize("name", ALL)
def test_vmap_over_stacked_params_and_states(name):
    opt = ALL[name]()
    stacked = enp.asarray(np.random.default_rng(3).normal(size=(3, 4)), dtype="float32")

    def run(w):
        state = opt.init(w)
        for _ in range(4):
            updates, state = opt.update(2 * w + 0.1, state, w)
            w = optim.apply_updates(w, updates)
        return w, state

    batched, batched_state = ember.vmap(run)(stacked)
    for i in range(3):
        w, state = run(stacked[i])
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(w), rtol=1e-6, atol=1e-7)
        assert int(batched_state.count[i]) == 4


# --- lbfgs vs torch.optim.LBFGS on the Rosenbrock function --------------------------------------------------


def _rosenbrock(x):
    return ((1 - x[:-1]) ** 2).sum() + (100 * (x[1:] - x[:-1] ** 2) ** 2).sum()


def _lbfgs_runs(n: int, dtype: str, steps: int, **options) -> tuple[list, list]:
    """(ours, torch's) parameters, loss returned, func_evals and n_iter after each step() from the same start."""
    torch = pytest.importorskip("torch")
    x0 = np.linspace(-1.5, 1.2, n)
    xt = torch.tensor(x0, dtype=getattr(torch, dtype), requires_grad=True)
    topt = torch.optim.LBFGS([xt], **options)

    def closure():
        topt.zero_grad()
        loss = _rosenbrock(xt)
        loss.backward()
        return loss

    ref = []
    for _ in range(steps):
        loss = float(topt.step(closure).detach())
        ref.append((xt.detach().numpy().copy(), loss, topt.state[xt]["func_evals"], topt.state[xt]["n_iter"]))
    ours = []
    with ember.config.x64(dtype == "float64"):
        opt = optim.lbfgs(**options)
        # split over two leaves, with a frozen None leaf, to check the flattening
        params = {"head": enp.asarray(x0[:1], dtype=dtype), "tail": enp.asarray(x0[1:], dtype=dtype), "frozen": None}
        state = opt.init(params)

        def fun(p):
            return _rosenbrock(enp.concatenate([p["head"], p["tail"]]))

        for _ in range(steps):
            params, state, loss = opt.step(fun, params, state)
            assert params["frozen"] is None and params["tail"].dtype == np.dtype(dtype)
            x = np.concatenate([np.asarray(params["head"]), np.asarray(params["tail"])])
            ours.append((x, float(loss), state.func_evals, state.n_iter))
    return ours, ref


LBFGS_OPTIONS = [dict(lr=0.1), dict(lr=0.5, history_size=10), dict(line_search_fn="strong_wolfe"),
                 dict(lr=0.5, history_size=10, line_search_fn="strong_wolfe"),
                 dict(line_search_fn="strong_wolfe", max_iter=7, history_size=3),
                 dict(lr=0.2, max_iter=10, max_eval=8, tolerance_change=1e-6)]


@pytest.mark.parametrize("n", [2, 10])
@pytest.mark.parametrize("options", LBFGS_OPTIONS, ids=str)
def test_lbfgs_matches_torch_float64(n, options):
    ours, ref = _lbfgs_runs(n, "float64", 5, **options)
    for i, ((x, loss, evals, iters), (tx, tloss, tevals, titers)) in enumerate(zip(ours, ref)):
        assert (evals, iters) == (tevals, titers), f"step {i + 1}"
        np.testing.assert_allclose(x, tx, rtol=1e-8, atol=1e-10, err_msg=f"step {i + 1}")
        # the loss at parameters agreeing to 1e-8 differs by up to |grad| * 1e-8 (the gradient reaches ~1e2 here)
        np.testing.assert_allclose(loss, tloss, rtol=1e-7, atol=1e-9, err_msg=f"step {i + 1}")


@pytest.mark.parametrize("n", [2, 10])
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_matches_torch_float32(n, line_search_fn):
    # float32 iterates agree for the first iterations; later, one-ulp differences in the two-loop recursion
    # (torch fuses q - al * y) are amplified by Rosenbrock's valley, so only the first step and the minimum
    # both reach are compared
    ours, ref = _lbfgs_runs(n, "float32", 1, max_iter=2, line_search_fn=line_search_fn)
    np.testing.assert_allclose(ours[0][0], ref[0][0], rtol=1e-5, atol=1e-6)
    ours, ref = _lbfgs_runs(n, "float32", 6, line_search_fn=line_search_fn)
    np.testing.assert_allclose(ours[-1][0], ref[-1][0], atol=1e-3)
    np.testing.assert_allclose(ours[-1][0], np.ones(n), atol=1e-3)


def test_lbfgs_at_the_minimum_returns_at_once():
    opt = optim.lbfgs()
    params = enp.ones(3)
    state = opt.init(params)
    new, state, loss = opt.step(_rosenbrock, params, state)
    np.testing.assert_array_equal(np.asarray(new), np.ones(3))
    assert float(loss) == 0.0 and state.func_evals == 1 and state.n_iter == 0


def test_lbfgs_history_is_bounded():
    opt = optim.lbfgs(history_size=3, line_search_fn="strong_wolfe")
    params = enp.asarray(np.linspace(-1.5, 1.2, 10))
    state = opt.init(params)
    _, state, _ = opt.step(_rosenbrock, params, state)
    assert len(state.old_dirs) == len(state.old_stps) == len(state.ro) == 3


@pytest.mark.parametrize("make, error, message", [
    (lambda: optim.lbfgs(line_search_fn="backtracking"), InvalidArgumentError, "line_search_fn must be None or"),
    (lambda: optim.lbfgs(learning_rate=-1.0), InvalidArgumentError, "lbfgs: invalid learning rate -1.0"),
    (lambda: optim.lbfgs(max_iter=0), InvalidArgumentError, "lbfgs: max_iter must be a positive integer"),
    (lambda: optim.lbfgs(history_size=2.5), InvalidArgumentError, "lbfgs: history_size must be a positive"),
    (lambda: optim.lbfgs(max_eval=0), InvalidArgumentError, "lbfgs: max_eval must be a positive integer"),
    (lambda: optim.lbfgs(learning_rate=lambda c: 1.0), InvalidArgumentError, "lbfgs: the learning rate must be"),
    (lambda: optim.lbfgs().init(enp.asarray([1, 2])), InvalidArgumentError, "real floating arrays, got a int32"),
    (lambda: optim.lbfgs().step(_rosenbrock, enp.ones(2), {}), ember.errors.ArgumentTypeError, "LBFGSState"),
    (lambda: optim.lbfgs().step(enp.ones(2), enp.ones(2), None), ember.errors.ArgumentTypeError,
     "needs the objective first"),
])
def test_lbfgs_bad_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()
