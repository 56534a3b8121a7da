"""Composition transforms against torch (clip_grad_norm_, clip_grad_value_, param groups, AveragedModel) and NumPy."""

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import optim
from ember.errors import InvalidArgumentError

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64"]


def needs(*names):
    """Skip while optim.sgd / optim.adam are not in the tree (they are written alongside)."""
    missing = [n for n in names if not hasattr(optim, n)]
    return pytest.mark.skipif(bool(missing), reason=f"optim lacks {missing}")
STEPS = 25


def x64(dtype):
    return ember.config.x64(dtype == "float64")


def tree(rng, dtype, frozen=True):
    t = {"w": rng.standard_normal((3, 4)).astype(dtype), "b": rng.standard_normal(4).astype(dtype),
         "nested": [rng.standard_normal(2).astype(dtype) * 10, rng.standard_normal(()).astype(dtype)]}
    if frozen:
        t["frozen"] = None
    return t


def to_ember(t):
    return ember.tree.map(enp.asarray, t)


def to_numpy(t):
    return ember.tree.map(np.asarray, t)


def torch_leaves(t):
    return [torch.tensor(np.array(x)) for x in ember.tree.leaves(t)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_by_global_norm_matches_torch(dtype, norm_type, max_norm):
    g = tree(np.random.default_rng(0), dtype)
    ts = torch_leaves(g)
    for t in ts:
        t.grad = t.clone()
    torch.nn.utils.clip_grad_norm_(ts, max_norm, norm_type=norm_type)
    with x64(dtype):
        opt = optim.clip_by_global_norm(max_norm, norm_type=norm_type)
        fn = ember.jit(lambda g, s: opt.update(g, s))
        state = opt.init(to_ember(g))
        for _ in range(2):
            out, state = fn(to_ember(g), state)
        assert fn.trace_count == 1
        assert out["frozen"] is None
        for got, t in zip(ember.tree.leaves(out), ts):
            assert got.dtype == dtype
            np.testing.assert_allclose(np.asarray(got), t.grad.numpy(), rtol=1e-6 if dtype == "float32" else 1e-13)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip_matches_clip_grad_value(dtype):
    g = tree(np.random.default_rng(1), dtype)
    ts = torch_leaves(g)
    for t in ts:
        t.grad = t.clone()
    torch.nn.utils.clip_grad_value_(ts, 0.7)
    with x64(dtype):
        out, _ = ember.jit(lambda g: optim.clip(0.7).update(g, None))(to_ember(g))
        assert out["frozen"] is None
        for got, t in zip(ember.tree.leaves(out), ts):
            np.testing.assert_array_equal(np.asarray(got), t.grad.numpy())


def test_scale_and_scale_by_schedule():
    opt = optim.chain(optim.scale_by_schedule(optim.step(1.0, 2, 0.5)), optim.scale(-2.0))
    params = {"a": enp.ones(2), "n": None}
    state = opt.init(params)
    fn = ember.jit(lambda g, s: opt.update(g, s, params))
    got = []
    for _ in range(6):
        u, state = fn({"a": enp.ones(2), "n": None}, state)
        got.append(float(u["a"][0]))
    assert fn.trace_count == 1
    np.testing.assert_allclose(got, [-2, -2, -1, -1, -0.5, -0.5])


def mlp_data(dtype):
    rng = np.random.default_rng(3)
    params = {"w1": rng.standard_normal((5, 8)) * 0.5, "b1": rng.standard_normal(8) * 0.1,
              "w2": rng.standard_normal((8, 2)) * 0.5, "b2": rng.standard_normal(2) * 0.1}
    x, y = rng.standard_normal((16, 5)), rng.standard_normal((16, 2))
    return {k: v.astype(dtype) for k, v in params.items()}, x.astype(dtype), y.astype(dtype)


def ember_loss(p, x, y):
    return enp.mean((enp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2)


def torch_loss(p, x, y):
    return torch.mean((torch.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2)


def run_ember(opt, params, x, y, steps=STEPS, frozen=True):
    params = to_ember(params)
    if frozen:
        params = {**params, "frozen": None}
    state = opt.init(params)

    @ember.jit
    def train_step(params, state, x, y):
        grads = ember.grad(lambda p: ember_loss(p, x, y))(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    history = []
    for _ in range(steps):
        params, state = train_step(params, state, enp.asarray(x), enp.asarray(y))
        history.append(to_numpy({k: v for k, v in params.items() if v is not None}))
    assert train_step.trace_count == 1
    if frozen:
        assert params["frozen"] is None
    return history, state


def run_torch(make_opt, params, x, y, steps=STEPS):
    tp = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in params.items()}
    opt = make_opt(tp)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        torch_loss(tp, torch.tensor(x), torch.tensor(y)).backward()
        opt.step()
        history.append({k: v.detach().numpy().copy() for k, v in tp.items()})
    return history


def assert_trajectories(ember_hist, torch_hist, dtype):
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for step, (e, t) in enumerate(zip(ember_hist, torch_hist)):
        for k in t:
            np.testing.assert_allclose(e[k], t[k], err_msg=f"step {step} {k}", **tol)


WEIGHTS = {"w1": True, "b1": False, "w2": True, "b2": False, "frozen": True}


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_weight_decay_matches_sgd_param_groups(dtype):
    params, x, y = mlp_data(dtype)
    with x64(dtype):
        opt = optim.chain(optim.add_decayed_weights(0.05, mask=WEIGHTS), optim.chain(optim.scale(-0.1)))
        hist, _ = run_ember(opt, params, x, y)
    torch_hist = run_torch(lambda p: torch.optim.SGD([{"params": [p["w1"], p["w2"]], "weight_decay": 0.05},
                                                      {"params": [p["b1"], p["b2"]]}], lr=0.1), params, x, y)
    assert_trajectories(hist, torch_hist, dtype)


def is_weight(p):
    return ember.tree.map(lambda x: x.ndim > 1, p)


@needs("sgd")
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_with_function_mask_and_sgd_momentum(dtype):
    params, x, y = mlp_data(dtype)
    with x64(dtype):
        opt = optim.chain(optim.masked(optim.add_decayed_weights(0.1), is_weight), optim.sgd(0.05, momentum=0.9))
        hist, _ = run_ember(opt, params, x, y, frozen=False)
    torch_hist = run_torch(lambda p: torch.optim.SGD([{"params": [p["w1"], p["w2"]], "weight_decay": 0.1},
                                                      {"params": [p["b1"], p["b2"]]}], lr=0.05, momentum=0.9),
                           params, x, y)  # fmt: skip
    assert_trajectories(hist, torch_hist, dtype)


LABELS = {"w1": "weights", "w2": "weights", "b1": "biases", "b2": "biases", "frozen": "weights"}


@needs("adam")
@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_transform_matches_adam_param_groups(dtype):
    params, x, y = mlp_data(dtype)
    with x64(dtype):
        opt = optim.multi_transform({"weights": optim.adam(learning_rate=1e-2, weight_decay=0.01),
                                     "biases": optim.adam(lr=3e-3, betas=(0.8, 0.99), amsgrad=True)}, LABELS)
        hist, state = run_ember(opt, params, x, y)
    assert set(state.inner_states) == {"weights", "biases"}
    torch_hist = run_torch(lambda p: torch.optim.Adam([
        {"params": [p["w1"], p["w2"]], "lr": 1e-2, "weight_decay": 0.01},
        {"params": [p["b1"], p["b2"]], "lr": 3e-3, "betas": (0.8, 0.99), "amsgrad": True}]), params, x, y)
    assert_trajectories(hist, torch_hist, dtype)


@needs("sgd")
@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_transform_sgd_groups_with_label_function(dtype):
    params, x, y = mlp_data(dtype)
    with x64(dtype):
        labels = lambda p: ember.tree.map(lambda v: "w" if v.ndim > 1 else "b", p)  # noqa: E731
        opt = optim.multi_transform({"w": optim.sgd(0.1, momentum=0.9, nesterov=True),
                                     "b": optim.chain(optim.clip(0.01), optim.scale(-0.2))}, labels)
        hist, _ = run_ember(opt, params, x, y, frozen=False)

    def torch_opt(p):
        sgd = torch.optim.SGD([p["w1"], p["w2"]], lr=0.1, momentum=0.9, nesterov=True)

        class Both:
            def zero_grad(self):
                sgd.zero_grad()
                for b in (p["b1"], p["b2"]):
                    b.grad = None

            def step(self):
                sgd.step()
                torch.nn.utils.clip_grad_value_([p["b1"], p["b2"]], 0.01)
                with torch.no_grad():
                    for b in (p["b1"], p["b2"]):
                        b -= 0.2 * b.grad

        return Both()

    assert_trajectories(hist, run_torch(torch_opt, params, x, y), dtype)


def test_multi_transform_unknown_label():
    opt = optim.multi_transform({"a": optim.scale(1.0)}, {"x": "a", "y": "b"})
    with pytest.raises(InvalidArgumentError, match="optim.multi_transform.*'b'"):
        opt.init({"x": enp.ones(1), "y": enp.ones(1)})


@pytest.mark.parametrize("debias", [True, False])
def test_ema_of_updates_matches_numpy(debias):
    rng = np.random.default_rng(4)
    gs = rng.standard_normal((STEPS, 3)).astype(np.float32)
    opt = optim.ema(0.9, debias=debias)
    state = opt.init({"g": enp.zeros(3), "n": None})
    fn = ember.jit(lambda g, s: opt.update(g, s))
    m = np.zeros(3, np.float32)  # the reference in float32 too: m's entries cross zero, where float32 cancels
    for t, g in enumerate(gs, start=1):
        out, state = fn({"g": enp.asarray(g), "n": None}, state)
        m = np.float32(1 - 0.9) * g + np.float32(0.9) * m
        expected = m / np.float32(1 - 0.9**t) if debias else m
        np.testing.assert_allclose(np.asarray(out["g"]), expected, rtol=1e-6)
    assert fn.trace_count == 1


@needs("sgd")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind,start,every", [("swa", 0, 1), ("swa", 10, 3), ("ema", 0, 1), ("ema", 5, 2)])
def test_parameter_averaging_matches_averaged_model(dtype, kind, start, every):
    params, x, y = mlp_data(dtype)
    with x64(dtype):
        inner = optim.sgd(0.1, momentum=0.5)
        opt = optim.swa(inner, start=start, every=every) if kind == "swa" else \
            optim.ema_params(inner, decay=0.9, start=start, every=every)
        hist, state = run_ember(opt, params, x, y)
        average = to_numpy(optim.averaged_params(state))
    assert average["frozen"] is None
    tp = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in params.items()}
    module = torch.nn.Module()
    for k, v in tp.items():
        module.register_parameter(k, v)
    multi_avg_fn = None if kind == "swa" else torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    averaged = torch.optim.swa_utils.AveragedModel(module, multi_avg_fn=multi_avg_fn)
    opt_t = torch.optim.SGD(list(tp.values()), lr=0.1, momentum=0.5)
    for i in range(STEPS):
        opt_t.zero_grad()
        torch_loss(tp, torch.tensor(x), torch.tensor(y)).backward()
        opt_t.step()
        if i >= start and (i - start) % every == 0:
            averaged.update_parameters(module)
    assert_trajectories(hist[-1:], [{k: v.detach().numpy() for k, v in tp.items()}], dtype)
    for k, v in averaged.module.named_parameters():
        tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(average[k], v.detach().numpy(), **tol)


def test_averaged_params_needs_one_average():
    with pytest.raises(InvalidArgumentError, match="optim.averaged_params"):
        optim.averaged_params(optim.scale(1.0).init(enp.ones(1)))


@needs("adam")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 4])
def test_multi_steps_matches_torch_accumulation(dtype, k):
    params, x, y = mlp_data(dtype)
    with x64(dtype):
        opt = optim.multi_steps(optim.adam(1e-2, weight_decay=0.01), every_k_schedule=k)
        params_e = {**to_ember(params), "frozen": None}
        state = opt.init(params_e)

        @ember.jit
        def micro(params, state, x, y):
            grads = ember.grad(lambda p: ember_loss(p, x, y))(params)
            updates, state = opt.update(grads, state, params)
            return optim.apply_updates(params, updates), state, updates

        ember_hist = []
        for step in range(STEPS):
            for j in range(k):
                sl = slice(4 * j % 16, 4 * j % 16 + 4)
                params_e, state, updates = micro(params_e, state, enp.asarray(x[sl]), enp.asarray(y[sl]))
                if j < k - 1:
                    assert all(not np.asarray(u).any() for u in ember.tree.leaves(updates))
            ember_hist.append(to_numpy({a: b for a, b in params_e.items() if b is not None}))
        assert micro.trace_count == 1
        assert int(state.gradient_step) == STEPS and int(state.mini_step) == 0
    tp = {name: torch.nn.Parameter(torch.tensor(v)) for name, v in params.items()}
    opt_t = torch.optim.Adam(list(tp.values()), lr=1e-2, weight_decay=0.01)
    torch_hist = []
    for step in range(STEPS):
        opt_t.zero_grad()
        for j in range(k):
            sl = slice(4 * j % 16, 4 * j % 16 + 4)
            (torch_loss(tp, torch.tensor(x[sl]), torch.tensor(y[sl])) / k).backward()
        opt_t.step()
        torch_hist.append({name: v.detach().numpy().copy() for name, v in tp.items()})
    assert_trajectories(ember_hist, torch_hist, dtype)


def test_multi_steps_schedule_and_sum():
    opt = optim.multi_steps(optim.scale(-1.0), every_k_schedule=lambda n: enp.where(n < 1, 2, 3),
                            use_grad_mean=False)
    state = opt.init(enp.zeros(1))
    fn = ember.jit(lambda g, s: opt.update(g, s))
    got = []
    for g in [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]:
        u, state = fn(enp.array([g]), state)
        got.append(float(u[0]))
    assert fn.trace_count == 1
    assert got == [0.0, -3.0, 0.0, 0.0, -12.0, 0.0, 0.0]


def test_zero_nans():
    opt = optim.zero_nans()
    params = {"a": enp.zeros(2), "b": enp.zeros(()), "n": None}
    state = opt.init(params)
    fn = ember.jit(lambda g, s: opt.update(g, s))
    out, state = fn({"a": enp.array([float("nan"), 2.0]), "b": enp.array(1.0), "n": None}, state)
    assert out["a"].tolist() == [0.0, 2.0] and float(out["b"]) == 1.0 and out["n"] is None
    assert bool(state.found_nan["a"]) and not bool(state.found_nan["b"])
    out, state = fn({"a": enp.array([1.0, 2.0]), "b": enp.array(float("nan")), "n": None}, state)
    assert not bool(state.found_nan["a"]) and bool(state.found_nan["b"]) and float(out["b"]) == 0.0
    assert fn.trace_count == 1


def test_vmap_over_an_ensemble():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.ema_params(optim.scale(-0.5), decay=0.5))
    stacked = {"w": enp.asarray(np.arange(6.0, dtype=np.float32).reshape(3, 2))}
    states = ember.vmap(opt.init)(stacked)
    grads = {"w": enp.asarray(np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 1.0]], np.float32))}
    updates, states = ember.vmap(opt.update)(grads, states, stacked)
    for i in range(3):
        one_u, one_s = opt.update({"w": grads["w"][i]}, opt.init({"w": stacked["w"][i]}), {"w": stacked["w"][i]})
        np.testing.assert_allclose(np.asarray(updates["w"][i]), np.asarray(one_u["w"]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(optim.averaged_params(states)["w"][i]),
                                   np.asarray(optim.averaged_params(one_s)["w"]), rtol=1e-6)


def test_errors_name_the_function():
    with pytest.raises(InvalidArgumentError, match="optim.add_decayed_weights.*params"):
        optim.add_decayed_weights(0.1).update(enp.ones(1), None)
    with pytest.raises(InvalidArgumentError, match="optim.masked.*bool"):
        optim.masked(optim.scale(1.0), {"a": "yes"}).init({"a": enp.ones(1)})
    with pytest.raises(InvalidArgumentError, match="optim.clip_by_global_norm"):
        optim.clip_by_global_norm(-1.0)
    with pytest.raises(InvalidArgumentError, match="optim.swa.*params"):
        opt = optim.swa(optim.scale(1.0))
        opt.update(enp.ones(1), opt.init(enp.ones(1)))


def test_multi_steps_forwards_the_loss_and_vmaps():
    opt = optim.multi_steps(optim.chain(optim.scale(-1.0), optim.reduce_on_plateau(factor=0.5, patience=0)), 2)
    state = opt.init(enp.zeros(1))
    fn = ember.jit(lambda g, s, v: opt.update(g, s, value=v))
    got = []
    for _ in range(6):
        u, state = fn(enp.ones(1), state, enp.asarray(1.0))
        got.append(float(u[0]))
    assert fn.trace_count == 1
    assert got == [0.0, -1.0, 0.0, -0.5, 0.0, -0.25]  # the plateau sees the loss of each inner step only
    states = ember.vmap(opt.init)(enp.zeros((3, 1)))
    grads = enp.asarray(np.arange(6.0, dtype=np.float32).reshape(3, 2, 1))
    for j in range(2):
        u, states = ember.vmap(lambda g, s: opt.update(g, s, value=1.0))(grads[:, j], states)
    np.testing.assert_allclose(np.asarray(u)[:, 0], [-0.5, -2.5, -4.5])
