"""Host callbacks: `ember.pure_callback` and `ember.debug.print` / `ember.debug.callback`.

pure_callback is checked against calling the NumPy function directly, eagerly and under jit
(where it runs at run time), vmap (once per example, or once per batch when vectorized) and
custom_jvp (its only way to a derivative). debug.print is checked through what it prints
(pytest's capsys): when (eagerly, at each run of a jitted function, per example under vmap, in
the branch or iteration that runs) and with which values.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import ShapeDtypeStruct, grad, jit, lax, vmap
from ember.core.ir import effectful, is_effectful
from ember.errors import ArgumentTypeError, DTypeError, ShapeError, TransformError
from ember.transforms.callback import debug_callback_p

X = enp.asarray([0.5, -1.0, 2.0])
F32_3 = ShapeDtypeStruct((3,), "float32")


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


# --- pure_callback ----------------------------------------------------------------------------------


def test_pure_callback_eager_and_jit_runs_the_host_function_at_run_time():
    calls = []

    def host(x):
        calls.append(x.copy())
        assert isinstance(x, np.ndarray) and not x.flags.writeable
        return np.sin(x)

    f = jit(lambda x: ember.pure_callback(host, F32_3, x) * 2.0)
    np.testing.assert_allclose(ember.pure_callback(host, F32_3, X), np.sin(np.asarray(X)), rtol=1e-6)
    np.testing.assert_allclose(f(X), 2 * np.sin(np.asarray(X)), rtol=1e-6)
    np.testing.assert_allclose(f(X + 1.0), 2 * np.sin(np.asarray(X) + 1.0), rtol=1e-6)
    assert len(calls) == 3 and f.trace_count == 1
    np.testing.assert_allclose(calls[-1], np.asarray(X) + 1.0)
    assert "pure_callback" in f.lower(X).source


def test_pure_callback_pytrees_and_kwargs():
    def host(pair, scale):
        a, b = pair
        return {"sum": a + b, "scaled": (a * scale).astype(np.int32)}

    spec = {"sum": F32_3, "scaled": ShapeDtypeStruct((3,), np.int32)}
    out = ember.pure_callback(host, spec, (X, X), scale=enp.float32(3.0))
    np.testing.assert_allclose(out["sum"], 2 * np.asarray(X))
    assert out["scaled"].dtype == np.int32 and out["scaled"].tolist() == [1, -3, 6]


def test_pure_callback_under_vmap():
    calls = []

    def host(x):
        calls.append(x.shape)
        return np.cos(x)

    xs = enp.stack([X, X * 2, X * 3, X * 4])
    want = np.cos(np.asarray(xs))
    np.testing.assert_allclose(vmap(lambda x: ember.pure_callback(host, F32_3, x))(xs), want, rtol=1e-6)
    assert calls == [(3,)] * 4  # one call per example
    calls.clear()
    np.testing.assert_allclose(vmap(lambda x: ember.pure_callback(host, F32_3, x, vectorized=True))(xs), want, rtol=1e-6)
    assert calls == [(4, 3)]  # one call on the whole batch
    calls.clear()
    got = jit(vmap(lambda x: ember.pure_callback(host, F32_3, x, vectorized=True), in_axes=1))(xs.T)
    np.testing.assert_allclose(got, want, rtol=1e-6)

    def shapes(a, b):
        calls.append((a.shape, b.shape))
        return a + b

    calls.clear()
    for method, want_b in (("expand_dims", (1, 3)), ("broadcast_all", (4, 3)), ("sequential", (3,))):
        out = vmap(lambda a, b, m=method: ember.pure_callback(shapes, F32_3, a, b, vmap_method=m), (0, None))(xs, X)
        np.testing.assert_allclose(out, np.asarray(xs) + np.asarray(X))
        assert calls[-1][1] == want_b
    assert float(vmap(lambda x: ember.pure_callback(np.sum, ShapeDtypeStruct((), "float32"), x))(enp.ones((0, 3))).size) == 0


def test_pure_callback_inside_control_flow():
    calls = []

    def host(v):
        calls.append(float(v))
        return np.float32(v * 2)

    spec = ShapeDtypeStruct((), "float32")
    out = jit(lambda x: lax.fori_loop(0, 3, lambda i, v: ember.pure_callback(host, spec, v), x))(enp.float32(1.0))
    assert float(out) == 8.0 and calls == [1.0, 2.0, 4.0]


def test_pure_callback_is_not_differentiable_but_custom_jvp_makes_it_so():
    f = lambda x: ember.pure_callback(np.sin, F32_3, x)
    with pytest.raises(TransformError, match=r"pure_callback \(sin\) cannot be differentiated.*custom_jvp"):
        grad(lambda x: f(x).sum())(X)
    with pytest.raises(TransformError, match="custom_jvp"):
        ember.jvp(f, (X,), (X,))

    @ember.custom_jvp
    def host_sin(x):
        return ember.pure_callback(np.sin, F32_3, x)

    host_sin.defjvp(lambda p, t: (host_sin(p[0]), ember.pure_callback(np.cos, F32_3, p[0]) * t[0]))
    np.testing.assert_allclose(grad(lambda x: host_sin(x).sum())(X), np.cos(np.asarray(X)), rtol=1e-6)
    np.testing.assert_allclose(jit(grad(lambda x: host_sin(x).sum()))(X), np.cos(np.asarray(X)), rtol=1e-6)
    np.testing.assert_allclose(vmap(grad(lambda x: host_sin(x).sum()))(enp.stack([X, X])), np.cos(np.stack([X, X])),
                               rtol=1e-6)  # fmt: skip


def test_pure_callback_result_errors():
    with pytest.raises(ShapeError, match=r"pure_callback: .* returned shape \(2,\) as result 0, but result_shape_dtypes "
                                         r"declares \(3,\)"):  # fmt: skip
        ember.pure_callback(lambda x: x[:2], F32_3, X)
    with pytest.raises(DTypeError, match=r"returned dtype int32 as result 0, but result_shape_dtypes declares float32"):
        ember.pure_callback(lambda x: x.astype(np.int32), F32_3, X)
    with pytest.raises(ArgumentTypeError, match="structure"):
        ember.pure_callback(lambda x: (x, x), F32_3, X)
    with pytest.raises(ArgumentTypeError, match="ShapeDtypeStruct"):
        ember.pure_callback(np.sin, "float32", X)
    # A 64-bit result while x64 is off becomes 32-bit, as any 64-bit input does.
    out = ember.pure_callback(lambda x: x.astype(np.float64), ShapeDtypeStruct((3,), np.float64), X)
    assert out.dtype == np.float32


# --- debug.print ------------------------------------------------------------------------------------


def test_debug_print_eager(capsys):
    ember.debug.print("x = {}, y = {y:.2f}, n = {n}", X, y=enp.float32(1.234), n=7)
    assert lines(capsys) == ["x = [ 0.5 -1.   2. ], y = 1.23, n = 7"]


def test_debug_print_under_jit_prints_run_time_values_at_each_run(capsys):
    @jit
    def f(x):
        ember.debug.print("x = {}", x)
        ember.debug.print("x * 2 = {}", x * 2)  # nothing uses its result: dead-code elimination must keep it
        return x + 1

    f(enp.arange(2.0))
    f(enp.arange(2.0) + 10)
    assert lines(capsys) == ["x = [0. 1.]", "x * 2 = [0. 2.]", "x = [10. 11.]", "x * 2 = [20. 22.]"]
    assert f.trace_count == 1
    assert f.lower(enp.arange(2.0)).source.count("debug_callback") == 2


def test_debug_print_without_arguments_inside_jit_prints_at_run_time(capsys):
    f = jit(lambda x: (ember.debug.print("step"), x * 2)[1])
    f(X)
    f(X)
    assert lines(capsys) == ["step", "step"]


def test_debug_print_under_vmap_prints_each_example(capsys):
    xs = enp.arange(6.0).reshape(3, 2)
    vmap(lambda x, s: ember.debug.print("x = {} s = {}", x, s), (0, None))(xs, enp.float32(9.0))
    want = ["x = [0. 1.] s = 9.0", "x = [2. 3.] s = 9.0", "x = [4. 5.] s = 9.0"]
    assert lines(capsys) == want
    jit(vmap(lambda x, s: ember.debug.print("x = {} s = {}", x, s), (0, None)))(xs, enp.float32(9.0))
    assert lines(capsys) == want
    vmap(jit(lambda x, s: ember.debug.print("x = {} s = {}", x, s)), (0, None))(xs, enp.float32(9.0))
    assert lines(capsys) == want


def test_debug_print_under_grad_prints_primal_values(capsys):
    def f(x):
        ember.debug.print("x = {}", x)
        return (x**2).sum()

    g = grad(f)(enp.asarray([1.0, 2.0]))
    assert g.tolist() == [2.0, 4.0]
    assert lines(capsys) == ["x = [1. 2.]"]
    jit(grad(f))(enp.asarray([3.0, 4.0]))
    assert lines(capsys) == ["x = [3. 4.]"]


def test_debug_print_in_control_flow_prints_what_runs(capsys):
    def branches(x):
        return lax.cond(x.sum() > 0, lambda x: (ember.debug.print("true {}", x), x)[1],
                        lambda x: (ember.debug.print("false {}", x), -x)[1], x)  # fmt: skip

    branches(enp.ones(2))
    jit(branches)(-enp.ones(2))
    assert lines(capsys) == ["true [1. 1.]", "false [-1. -1.]"]
    jit(lambda x: lax.fori_loop(0, 3, lambda i, v: (ember.debug.print("i={} v={}", i, v), v * 2)[1], x))(enp.float32(1))
    assert lines(capsys) == ["i=0 v=1.0", "i=1 v=2.0", "i=2 v=4.0"]
    lax.while_loop(lambda v: v < 3, lambda v: (ember.debug.print("v={}", v), v + 1)[1], 0)
    assert lines(capsys) == ["v=0", "v=1", "v=2"]
    lax.scan(lambda c, x: (ember.debug.print("c={} x={}", c, x), (c + x, None))[1], 0.0, enp.arange(2.0))
    assert lines(capsys) == ["c=0.0 x=0.0", "c=0.0 x=1.0"]
    # A batched predicate runs both branches, as in JAX.
    vmap(branches)(enp.asarray([[1.0, 1.0], [-1.0, -1.0]]))
    out = lines(capsys)
    assert "true [1. 1.]" in out and "false [-1. -1.]" in out


def test_debug_callback_and_effects():
    seen = []
    jit(lambda x: ember.debug.callback(lambda v, k: seen.append((v.tolist(), k)), x, k="tag"))(enp.arange(2))
    assert seen == [([0, 1], "tag")]
    assert debug_callback_p in effectful
    ir = ember.make_ir(lambda x: lax.cond(x > 0, lambda: ember.debug.print("hi"), lambda: None))(enp.float32(1.0))
    assert any(is_effectful(e) for e in ir.eqns)


def test_debug_print_in_branches_under_grad_prints_once_per_run(capsys):
    def f(x):
        return lax.cond(x > 0, lambda x: (ember.debug.print("pos"), x * x)[1],
                        lambda x: (ember.debug.print("neg {}", x), -x)[1], x)  # fmt: skip

    assert float(grad(f)(enp.float32(2.0))) == 4.0
    assert lines(capsys) == ["pos"]
    g = jit(grad(f))
    g(enp.float32(2.0))
    g(enp.float32(-3.0))
    assert lines(capsys) == ["pos", "neg -3.0"]
    grad(lambda x: lax.scan(lambda c, _: ((ember.debug.print("step"), c * c)[1], None), x, None, length=2)[0])(
        enp.float32(1.5)
    )
    assert lines(capsys) == ["step", "step"]
