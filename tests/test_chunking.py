"""chunk_size="auto" (issue #19): the peak-memory estimate against peaks counted by hand, the choice of
chunks against a brute-force search, results against NumPy / hand-derived Jacobians and Hessians, the
errors, and a child process whose peak resident memory shows a Jacobian ~12x the budget computed under it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import InvalidArgumentError, MemoryBudgetError
from ember.transforms import _memory

RNG = np.random.default_rng(19)
CHILD = os.path.join(os.path.dirname(__file__), "data", "chunking_child.py")


@pytest.fixture
def budget():
    """Set ember.config.memory_budget for the test (bytes), and restore it after."""
    previous = ember.config.memory_budget

    def set_budget(n):
        ember.config.update("memory_budget", n)

    yield set_budget
    ember.config.update("memory_budget", previous)


def _close(got, want, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _plans(fn, *args):
    """The result of fn(*args) and the chunk plans it decided."""
    with _memory.recording() as plans:
        out = fn(*args)
    return out, plans


# --- the estimate against peaks counted by hand ------------------------------------------------------


def _peak(f, *args):
    return _memory.peak_bytes(ember.make_ir(f)(*args).program)


def test_peak_of_a_chain_of_elementwise_ops():
    # a:4000 live; sin b:+4000; exp c:+4000 (b dies: 8000); cos d:+4000 (12000); mul e:+4000 = 16000.
    assert _peak(lambda x: enp.exp(enp.sin(x)) * enp.cos(x), enp.ones(1000)) == 16000
    # A value read late stays live: x, sin x, sin(sin x), then the sum reads x again.
    assert _peak(lambda x: enp.sin(enp.sin(x)) + x, enp.ones(1000)) == 12000


def test_views_take_no_memory_and_copies_do():
    x = enp.ones((100, 50))  # 20000 bytes
    # reshape of a contiguous array: a view (NumPy), so only sin's result is new.
    assert _peak(lambda x: enp.sin(x.reshape(-1)), x) == 40000
    # transpose is a view, but reshaping it copies: x, the copy, sin's result.
    assert _peak(lambda x: enp.sin(x.T.reshape(-1)), x) == 60000
    # broadcast_to is a view of a contiguous operand: x (4000) and sin's (100, 1000) result.
    assert _peak(lambda v: enp.sin(enp.broadcast_to(v, (100, 1000))), enp.ones(1000)) == 4000 + 400000


def test_a_held_program_counts_its_own_peak_while_it_runs():
    # The body: carry 4000, sin +4000, cos +4000, mul +4000 = 16000. Outside: x and the scan's result
    # (8000) live while the body runs.
    def f(x):
        return lax.scan(lambda c, _: (enp.sin(c) * enp.cos(c), None), x, None, length=3)[0]

    assert _peak(f, enp.ones(1000)) == 8000 + 16000


def test_the_estimate_is_affine_in_the_chunk_for_a_batched_chain():
    v = ember.vmap(lambda r: enp.exp(enp.sin(r)) * enp.cos(r))
    peaks = [_peak(v, enp.ones((c, 250))) for c in (1, 2, 5)]
    assert peaks == [4 * 1000 * c for c in (1, 2, 5)]


# --- choosing chunks -----------------------------------------------------------------------------------


def test_plan_is_the_fewest_chunks_that_fit_against_brute_force():
    rng = random.Random(0)
    for _ in range(500):
        size, a, b = rng.randint(2, 40), rng.randint(0, 100), rng.randint(1, 50)
        knee, extra, out = rng.randint(1, size), rng.randint(0, 50), rng.randint(0, 4)

        def chunk_peak(c):  # convex in c, as a liveness peak is
            return a + b * c + max(0, c - knee) * extra, out * c

        budget = rng.randint(1, 3000)
        fits = [n for n in range(1, size + 1)
                if (chunk_peak(size)[0] if n == 1 else chunk_peak(-(-size // n))[0] + out * size) <= budget]
        if not fits:
            with pytest.raises(MemoryBudgetError):
                _memory.plan_chunks("f", size, chunk_peak, budget)
            continue
        plan = _memory.plan_chunks("f", size, chunk_peak, budget)
        assert plan.n_chunks == min(fits)
        assert sum(plan.sizes) == size and max(plan.sizes) - min(plan.sizes) <= plan.chunk - 1
        assert plan.peak == chunk_peak(plan.chunk)[0]


def test_chunk_count_is_monotone_in_the_budget(budget):
    f = ember.vmap(lambda r: enp.tanh(enp.outer(r, r)).sum(), chunk_size="auto")
    xs = enp.ones((40, 50))
    counts = []
    for b in (30_000, 60_000, 120_000, 240_000, 480_000, 10**9):
        budget(b)
        plan = f.plan(xs)
        assert plan.peak + (plan.result if plan.n_chunks > 1 else 0) <= b
        counts.append(plan.n_chunks)
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1] == 1


def test_the_decision_is_cached_per_function_and_shapes(budget, monkeypatch):
    budget(50_000)
    calls = []
    real = _memory.trace_peak
    monkeypatch.setattr(_memory, "trace_peak", lambda *a: calls.append(1) or real(*a))
    f = ember.vmap(lambda r: enp.tanh(enp.outer(r, r)).sum(), chunk_size="auto")
    xs = enp.asarray(RNG.standard_normal((20, 30)).astype(np.float32))
    f(xs)
    traced = len(calls)
    assert traced >= 2
    f(xs)
    assert len(calls) == traced  # same function, shapes and budget: no tracing
    f(enp.ones((21, 30)))
    assert len(calls) > traced  # another batch size: decided again
    jac = ember.jacrev(lambda x: enp.tanh(enp.outer(x, x)).sum(1), chunk_size="auto")
    jac(xs[0])
    traced = len(calls)
    jac(xs[1])
    assert len(calls) == traced


def test_a_cached_plan_keeps_neither_the_function_nor_its_arrays_alive(budget):
    import gc
    import weakref

    budget(50_000)
    big = enp.ones((30, 30))
    f = lambda r: enp.tanh(enp.outer(r, r) * big).sum()  # noqa: E731
    ember.vmap(f, chunk_size="auto")(enp.ones((20, 30)))
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None


def test_default_budget_is_half_the_available_memory(budget):
    budget(None)
    with open("/proc/meminfo") as f:
        available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    got = _memory.memory_budget([enp.ones(3)])
    assert abs(got - available // 2) < 0.05 * available  # (memory moves a little between the two reads)


def test_default_budget_on_a_gpu_is_half_its_free_memory(monkeypatch):
    # No GPU here: a stand-in for CuPy with the two calls the budget makes (Device as a context, memGetInfo).
    import contextlib
    import types

    import ember.backends

    seen = []
    runtime = types.SimpleNamespace(memGetInfo=lambda: (6_000_000_000, 80_000_000_000))
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=runtime, Device=lambda i: seen.append(i) or contextlib.nullcontext()))  # fmt: skip
    monkeypatch.setattr(ember.backends, "_cupy", lambda: fake)
    assert _memory.default_budget("cuda", 1) == 3_000_000_000 and seen == [1]


# --- results -----------------------------------------------------------------------------------------


def test_vmap_auto_matches_numpy_in_several_chunks(budget):
    budget(60_000)
    xs = RNG.standard_normal((30, 40)).astype(np.float32)
    w = RNG.standard_normal(40).astype(np.float32)

    def f(r, w):
        return {"s": enp.tanh(enp.outer(r, w)).sum(0), "n": enp.sum(r * r)}

    v = ember.vmap(f, in_axes=(0, None), out_axes={"s": 1, "n": 0}, chunk_size="auto")
    out, plans = _plans(v, enp.asarray(xs), enp.asarray(w))
    assert plans[-1].n_chunks > 2
    _close(out["s"], np.stack([np.tanh(np.outer(r, w)).sum(0) for r in xs], axis=1), rtol=1e-5, atol=1e-5)
    _close(out["n"], (xs * xs).sum(1), rtol=1e-5)
    plain = ember.vmap(f, in_axes=(0, None), out_axes={"s": 1, "n": 0})(enp.asarray(xs), enp.asarray(w))
    _close(out["s"], plain["s"], rtol=0, atol=0)


def _f(x):
    return enp.tanh(enp.outer(x[:20], x)).sum(1)  # R^n -> R^20


def _jac_f(x):
    """Hand-derived: y_i = sum_j tanh(x_i x_j); dy_i/dx_j = x_i t_ij (+ sum_k x_k t_ik where j == i)."""
    x = np.asarray(x, np.float64)
    t = 1 - np.tanh(np.outer(x[:20], x)) ** 2
    J = x[:20, None] * t
    J[np.arange(20), np.arange(20)] += (x[None, :] * t).sum(1)
    return J


@pytest.mark.parametrize("name", ["jacrev", "jacfwd", "jacobian", "jit_jacrev"])
def test_jacobians_auto_match_the_hand_derived_jacobian(budget, name):
    budget(40_000)
    make = {"jacrev": ember.jacrev, "jacfwd": ember.jacfwd, "jacobian": ember.jacobian,
            "jit_jacrev": lambda f, **kw: ember.jit(ember.jacrev(f, **kw))}[name]
    x = enp.asarray(RNG.standard_normal(30).astype(np.float32) * 0.5)
    got, plans = _plans(make(_f, chunk_size="auto"), x)
    assert plans and plans[-1].n_chunks > 1
    _close(got, _jac_f(x), rtol=1e-4, atol=1e-5)
    _close(got, make(_f)(x), rtol=1e-6, atol=1e-7)


def test_hessian_auto_matches_finite_differences_of_the_gradient(budget):
    budget(60_000)
    g = lambda x: enp.sum(enp.tanh(enp.outer(x, x)))  # noqa: E731
    with ember.config.x64(True):
        x = enp.asarray(RNG.standard_normal(25) * 0.5, dtype="float64")
        H, plans = _plans(ember.hessian(g, chunk_size="auto"), x)
        assert plans[-1].n_chunks > 1
        grad = ember.grad(g)
        eps = 1e-6
        fd = np.stack([(np.asarray(grad(x + eps * e)) - np.asarray(grad(x - eps * e))) / (2 * eps)
                       for e in np.eye(25)], axis=1)  # fmt: skip
        _close(H, fd, rtol=1e-6, atol=1e-6)
        _close(H, ember.hessian(g)(x), rtol=1e-12, atol=1e-12)


def test_auto_composes_with_jit_grad_and_an_empty_batch(budget):
    budget(30_000)
    v = ember.vmap(lambda r: enp.tanh(enp.outer(r, r)).sum(), chunk_size="auto")
    xs = enp.asarray(RNG.standard_normal((16, 30)).astype(np.float32))
    want = np.tanh(np.einsum("bi,bj->bij", np.asarray(xs), np.asarray(xs))).sum((1, 2))
    assert v.plan(xs).n_chunks > 1
    _close(ember.jit(v)(xs), want, rtol=1e-5)
    gx = ember.grad(lambda xs: v(xs).sum())(xs)
    _close(gx, ember.grad(lambda xs: ember.vmap(lambda r: enp.tanh(enp.outer(r, r)).sum())(xs).sum())(xs), rtol=1e-5)
    assert v(enp.ones((0, 30))).shape == (0,)


def test_python_control_flow_on_an_unmapped_argument_still_works(budget):
    budget(10_000)
    f = ember.vmap(lambda x, n: enp.outer(x, x).sum() * n if n > 0 else -enp.outer(x, x).sum(), in_axes=(0, None),
                   chunk_size="auto")  # fmt: skip
    xs = RNG.standard_normal((40, 30)).astype(np.float32)
    s = np.einsum("bi,bj->b", xs, xs)
    assert f.plan(enp.asarray(xs), enp.asarray(2.0)).n_chunks > 1
    _close(f(enp.asarray(xs), enp.asarray(2.0)), 2 * s, rtol=1e-5, atol=1e-4)
    _close(f(enp.asarray(xs), enp.asarray(-1.0)), -s, rtol=1e-5, atol=1e-4)


def test_collectives_work_when_auto_needs_one_chunk_and_refuse_when_it_splits(budget):
    pm = ember.vmap(lambda r: enp.outer(r, r).sum() - lax.pmean(enp.outer(r, r).sum(), "i"), axis_name="i",
                    chunk_size="auto")  # fmt: skip
    xs = RNG.standard_normal((40, 50)).astype(np.float32)
    s = np.einsum("bi,bj->b", xs, xs)
    budget(10**6)  # the whole batch fits: one chunk, no refusal
    assert pm.plan(enp.asarray(xs)).n_chunks == 1
    _close(pm(enp.asarray(xs)), s - s.mean(), rtol=1e-4, atol=1e-3)
    budget(30_000)  # one example's outer product is 10 kB: chunks, and pmean would see one at a time
    assert pm.plan(enp.asarray(xs)).n_chunks > 1
    with pytest.raises(InvalidArgumentError, match=r"pmean over axis 'i'.*chunk"):
        pm(enp.asarray(xs))


# --- errors and explanations --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["big", 0, -2, 1.5, True, "Auto"])
def test_bad_chunk_size_is_refused_with_the_choices(bad):
    for op, make in [("vmap", ember.vmap), ("jacrev", ember.jacrev), ("jacfwd", ember.jacfwd),
                     ("hessian", ember.hessian), ("jacobian", ember.jacobian)]:  # fmt: skip
        expected = rf"{op}: chunk_size must be a positive int, \"auto\".*or None.*got {bad!r}"
        with pytest.raises(InvalidArgumentError, match=expected):
            make(enp.sin, chunk_size=bad)


def test_one_example_over_the_budget_says_what_to_do(budget):
    budget(10_000)
    v = ember.vmap(lambda r: enp.outer(r, r).sum(), chunk_size="auto")
    with pytest.raises(MemoryBudgetError) as err:
        v(enp.ones((8, 100)))  # one example: its outer product alone is 40 kB
    text = str(err.value)
    for part in ("vmap(<lambda>)", "one example", "40.4 kB", "10.0 kB", "10000 bytes", "memory_budget"):
        assert part in text
    assert isinstance(err.value, MemoryError)


def test_a_result_over_the_budget_says_chunking_cannot_help(budget):
    budget(200_000)
    v = ember.vmap(lambda r: enp.outer(r, r), chunk_size="auto")  # 40 kB per example, 320 kB for all 8
    with pytest.raises(MemoryBudgetError, match=r"vmap\(<lambda>\).*the result of all 8 examples is 320\.0 kB.*"
                                                r"200\.0 kB.*chunking cannot make the result smaller"):
        v(enp.ones((8, 100)))


def test_jacobian_explain_says_the_chunking_and_the_peak(budget):
    budget(100_000)
    x = enp.ones(30)
    jac = ember.jacobian(_f, chunk_size="auto")
    text = jac.explain(x)
    _, plans = _plans(jac, x)  # the call uses the plan explain decided
    p = plans[-1]
    assert text.startswith("jacobian uses reverse mode (jacrev)")
    assert f"in {p.n_chunks} chunks of {p.chunk} rows" in text
    assert f"estimated peak {_memory.format_bytes(p.peak)} per chunk" in text and "against a budget of 100.0 kB" in text
    assert ember.jacobian(_f, chunk_size=6).explain(x).endswith("; in 4 chunks of 6 rows (chunk_size=6)")
    assert "chunk" not in ember.jacobian(_f).explain(x)


# --- peak resident memory of a child process ------------------------------------------------------------


def _child(mode, budget, m=100, n=7500):
    # glibc's malloc raises its mmap threshold after freeing a large block, and then serves large arrays
    # from the heap, whose freed pages it keeps: RSS then counts memory no array holds (measured: up to
    # ~4 MB over on a 50 MB run). A fixed threshold makes every large array its own mapping, returned when
    # freed, so RSS follows the live arrays the estimate counts.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    out = subprocess.run([sys.executable, CHILD, mode, str(budget), str(m), str(n)], capture_output=True,
                         text=True, env=env, timeout=120, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_jacobian_12x_the_budget_completes_under_it():
    budget = 50_000_000
    got = _child("auto", budget)
    assert got["whole_estimate"] >= 10 * budget  # unchunked, it would need ~600 MB
    assert got["err"] < 1e-6 * got["scale"]  # (a row against the derivative by hand; float32 sums of 7500 terms)
    # 2 MB for the interpreter: tracer and program objects, the eager cache, NumPy's small-array pools.
    assert got["extra_peak"] <= budget + 2_000_000, got


@pytest.mark.full
def test_the_same_jacobian_unchunked_exceeds_the_budget_tenfold():
    got = _child("whole", 50_000_000)
    assert got["extra_peak"] >= 10 * 50_000_000
    assert abs(got["extra_peak"] - got["whole_estimate"]) < 0.1 * got["whole_estimate"]  # the estimate is close
