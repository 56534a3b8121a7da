"""jit: caching and retracing, composition with the other transforms, custom rules under jit,
errors, make_ir / eval_shape / lower. References are NumPy or the same function run eagerly."""

from __future__ import annotations

import linecache
import logging

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import (
    ArgumentTypeError,
    ConcretizationError,
    DeletedArrayError,
    InvalidArgumentError,
    TracerLeakError,
)

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def mlp_loss(params, x, y):
    h = enp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    return enp.mean((logits - y) ** 2)


def _params():
    return {"w1": enp.asarray(_rand(4, 8)), "b1": enp.asarray(_rand(8)), "w2": enp.asarray(_rand(8, 3))}


# --- results ---------------------------------------------------------------------------------------------


def test_jit_matches_numpy_and_eager():
    x, y = _rand(5, 4), _rand(4, 3)

    def f(a, b):
        return enp.tanh(a @ b) * 2.0 + enp.exp(-a.sum())

    got = ember.jit(f)(enp.asarray(x), enp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), np.tanh(x @ y) * 2.0 + np.exp(-x.sum()), rtol=1e-5)
    eager = f(enp.asarray(x), enp.asarray(y))
    assert got.dtype == eager.dtype and got.shape == eager.shape and got.weak_type == eager.weak_type


def test_pytree_inputs_and_outputs_and_kwargs():
    f = ember.jit(lambda p, scale=1.0: {"sum": p["a"] + p["b"], "scaled": (p["a"] * scale,)})
    p = {"a": enp.ones(3), "b": enp.arange(3.0)}
    out = f(p, scale=enp.asarray(2.0))
    np.testing.assert_allclose(np.asarray(out["sum"]), [1, 2, 3])
    np.testing.assert_allclose(np.asarray(out["scaled"][0]), [2, 2, 2])


def test_weak_types_survive_jit():
    out = ember.jit(lambda x: x * 2)(3.0)
    assert out.weak_type and out.dtype == np.float32
    assert not ember.jit(lambda x: x * 2)(enp.float32(3.0)).weak_type


def test_python_scalars_and_numpy_arrays_are_arguments():
    f = ember.jit(lambda x, y: x + y)
    np.testing.assert_allclose(np.asarray(f(np.arange(3.0), 1)), [1, 2, 3])
    assert f(np.arange(3.0), 1).dtype == np.float32  # float64 NumPy input becomes float32 while x64 is off


# --- caching ---------------------------------------------------------------------------------------------


def test_traces_once_per_signature():
    f = ember.jit(lambda x: ember.tree.map(lambda a: a + 1.0, x))
    f(enp.ones(3))
    f(enp.zeros(3))
    assert f.trace_count == 1
    f(enp.ones(4))  # shape
    assert f.trace_count == 2
    f(enp.ones(3, dtype="int32"))  # dtype
    assert f.trace_count == 3
    f(1.0)  # weak f32[]
    f(enp.float32(1.0))  # strong f32[]
    assert f.trace_count == 5
    f([enp.ones(3)])  # pytree structure
    assert f.trace_count == 6
    np.testing.assert_allclose(np.asarray(f(enp.ones(3))), [2, 2, 2])  # never stale
    assert f.trace_count == 6


def test_static_arguments_retrace_on_a_new_value():
    f = ember.jit(lambda x, n: x * n if n > 1 else x, static_argnums=1)
    np.testing.assert_allclose(np.asarray(f(enp.ones(2), 3)), [3, 3])
    np.testing.assert_allclose(np.asarray(f(enp.ones(2), 1)), [1, 1])
    f(enp.ones(2), 3)
    assert f.trace_count == 2
    g = ember.jit(lambda x, mode: x + 1 if mode == "up" else x - 1, static_argnames="mode")
    np.testing.assert_allclose(np.asarray(g(enp.ones(2), mode="down")), [0, 0])


def test_unhashable_static_argument_is_a_clear_error():
    f = ember.jit(lambda x, dims: x.sum(dims), static_argnums=1)
    with pytest.raises(ArgumentTypeError, match=r"static argument 1 \(dims\) has the unhashable type list.*tuple"):
        f(enp.ones((2, 2)), [0])


def test_x64_mode_is_part_of_the_signature():
    f = ember.jit(lambda x: x * 1.5)
    f(np.ones(2))
    with ember.config.x64(True):
        assert f(np.ones(2)).dtype == np.float64
    assert f.trace_count == 2


def test_lru_cache_is_bounded():
    old = ember.config.jit_cache_size
    ember.config.update("jit_cache_size", 2)
    try:
        f = ember.jit(lambda x: x + 1)
        for n in (1, 2, 3, 1):
            f(enp.ones(n))
        assert f.trace_count == 4  # shape 1 was evicted by shape 3
        assert len(f._cache) == 2
    finally:
        ember.config.update("jit_cache_size", old)


def test_explain_retrace_names_the_argument(caplog):
    def g(params, x):
        return params["w"] * x

    f = ember.jit(g)
    ember.config.update("explain_retrace", True)
    try:
        with caplog.at_level(logging.WARNING, logger="ember.jit"):
            f({"w": enp.ones(3)}, enp.ones(3))
            f({"w": enp.ones(4)}, enp.ones(4))
    finally:
        ember.config.update("explain_retrace", False)
    text = caplog.text
    assert "jit(g): retracing because" in text
    assert "argument params['w'] changed from f32[3] to f32[4]" in text


# --- composition -----------------------------------------------------------------------------------------


def test_jit_of_jit_inlines():
    inner = ember.jit(lambda x: enp.sin(x) * 2.0)
    outer = ember.jit(lambda x: inner(x) + 1.0)
    x = _rand(4)
    np.testing.assert_allclose(np.asarray(outer(enp.asarray(x))), np.sin(x) * 2 + 1, rtol=1e-6)
    ir = outer.lower(enp.asarray(x)).ir
    assert "jit_call" not in str(ir) and "sin" in str(ir)


@pytest.mark.parametrize("order", ["jit_grad", "grad_jit", "jit_vmap", "vmap_jit", "jit_jvp", "jvp_jit",
                                   "jit_vmap_grad", "vmap_grad_jit", "grad_vmap_jit"])  # fmt: skip
def test_jit_composes_with_every_transform_in_any_order(order):
    params, xs, ys = _params(), enp.asarray(_rand(6, 4)), enp.asarray(_rand(6, 3))
    jit, grad, vmap = ember.jit, ember.grad, ember.vmap
    per_example = vmap(grad(mlp_loss), in_axes=(None, 0, 0))
    fns = {
        "jit_grad": (jit(grad(mlp_loss)), grad(mlp_loss), (params, xs, ys)),
        "grad_jit": (grad(jit(mlp_loss)), grad(mlp_loss), (params, xs, ys)),
        "jit_vmap": (jit(vmap(mlp_loss, in_axes=(None, 0, 0))), vmap(mlp_loss, in_axes=(None, 0, 0)), (params, xs, ys)),
        "vmap_jit": (vmap(jit(mlp_loss), in_axes=(None, 0, 0)), vmap(mlp_loss, in_axes=(None, 0, 0)), (params, xs, ys)),
        "jit_vmap_grad": (jit(per_example), per_example, (params, xs, ys)),
        "vmap_grad_jit": (vmap(grad(jit(mlp_loss)), in_axes=(None, 0, 0)), per_example, (params, xs, ys)),
        "grad_vmap_jit": (grad(lambda p: vmap(jit(mlp_loss), in_axes=(None, 0, 0))(p, xs, ys).sum()),
                          grad(lambda p: vmap(mlp_loss, in_axes=(None, 0, 0))(p, xs, ys).sum()), (params,)),
    }  # fmt: skip
    if order in ("jit_jvp", "jvp_jit"):
        tangent = ember.tree.map(enp.ones_like, params)
        inner = jit(mlp_loss) if order == "jvp_jit" else mlp_loss
        run = lambda p: ember.jvp(lambda q: inner(q, xs, ys), (p,), (tangent,))
        got = jit(run)(params) if order == "jit_jvp" else run(params)
        want = ember.jvp(lambda q: mlp_loss(q, xs, ys), (params,), (tangent,))
    else:
        fn, ref, args = fns[order]
        got, want = fn(*args), ref(*args)
    for g, w in zip(ember.tree.leaves(got), ember.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


def test_grad_of_jit_of_a_closure_over_a_differentiated_value():
    def outer(s):
        return ember.jit(lambda x: enp.sum(enp.sin(x * s)))(enp.arange(3.0))

    got = ember.grad(outer)(enp.asarray(0.7))
    want = np.sum(np.cos(np.arange(3.0) * 0.7) * np.arange(3.0))
    np.testing.assert_allclose(float(got), want, rtol=1e-5)


def test_custom_jvp_rule_is_used_through_jit():
    @ember.custom_jvp
    def f(x):
        return enp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 100.0 * t  # a deliberately different derivative

    x = enp.asarray(0.3)
    assert float(ember.grad(ember.jit(f))(x)) == pytest.approx(100.0)
    assert float(ember.jit(ember.grad(f))(x)) == pytest.approx(100.0)
    np.testing.assert_allclose(float(ember.jit(f)(x)), np.sin(0.3), rtol=1e-6)
    assert "custom_jvp_call" in str(ember.make_ir(f)(x))


def test_custom_vjp_rule_is_used_through_jit():
    @ember.custom_vjp
    def f(x):
        return x * x

    f.defvjp(lambda x: (x * x, x), lambda x, ct: (ct * 7.0,))
    x = enp.asarray(3.0)
    assert float(ember.grad(ember.jit(f))(x)) == pytest.approx(7.0)
    assert float(ember.jit(ember.grad(f))(x)) == pytest.approx(7.0)
    assert float(ember.vmap(ember.grad(ember.jit(f)))(enp.ones(3))[0]) == pytest.approx(7.0)


def test_checkpoint_under_jit():
    f = ember.checkpoint(lambda x: enp.sin(enp.sin(x)))
    x = _rand(5)
    got = ember.jit(ember.grad(lambda x: f(x).sum()))(enp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), np.cos(np.sin(x)) * np.cos(x), rtol=1e-5)
    got = ember.grad(lambda x: ember.jit(f)(x).sum())(enp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), np.cos(np.sin(x)) * np.cos(x), rtol=1e-5)


# --- errors ----------------------------------------------------------------------------------------------


def test_python_control_flow_on_a_traced_value_names_its_origin():
    def f(params, x):
        if (params["w"] * x).sum() > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError) as info:
        ember.jit(f)({"w": enp.ones(3)}, enp.ones(3))
    message = str(info.value)
    assert "jit" in message and "argument params['w']" in message and "argument x" in message
    assert "lax.cond" in message and "static_argnums" in message


def test_a_leaked_tracer_names_jit_when_used():
    leaked = []

    @ember.jit
    def f(x):
        leaked.append(x * 2.0)
        return x

    f(enp.ones(2))
    with pytest.raises(TracerLeakError, match="traced by jit"):
        leaked[0] + 1.0


def test_a_non_array_argument_says_to_make_it_static():
    with pytest.raises(ArgumentTypeError, match=r"argument mode is a str.*static_argnums"):
        ember.jit(lambda x, mode: x)(enp.ones(2), "fast")


def test_disable_jit_runs_python():
    seen = []

    @ember.jit
    def f(x):
        seen.append(type(x).__name__)
        return x + 1.0

    with ember.disable_jit():
        f(enp.ones(2))
    assert seen == ["Array"]
    f(enp.ones(2))
    assert seen == ["Array", "StagingTracer"]


# --- what jit shows ----------------------------------------------------------------------------------------


def test_make_ir_prints_like_a_jaxpr():
    text = str(ember.make_ir(lambda x, y: enp.sin(x) * y)(enp.ones(3), enp.ones(3)))
    assert text.splitlines()[0] == "{ lambda  ; a:f32[3] b:f32[3]. let"
    assert "c:f32[3] = sin a" in text and "d:f32[3] = mul c b" in text and text.endswith("in (d) }")


def test_eval_shape_does_not_compute():
    calls = []

    def f(x, y):
        calls.append(1)
        return {"out": x @ y, "n": x.sum()}

    out = ember.eval_shape(f, ember.ShapeDtypeStruct((1000, 20), "float32"), enp.ones((20, 3)))
    assert out == {"out": ember.ShapeDtypeStruct((1000, 3), "float32"), "n": ember.ShapeDtypeStruct((), "float32")}
    assert calls == [1]


def test_lowered_source_is_what_runs_and_debuggers_can_read_it():
    f = ember.jit(lambda x: enp.tanh(x) * 3.0)
    lowered = f.lower(enp.ones(3))
    assert "ops.tanh(" in lowered.source and "def program(a):" in lowered.source
    code = lowered._entry.compiled.fn.__code__
    # pdb and tracebacks read the generated source
    assert linecache.getline(code.co_filename, code.co_firstlineno).startswith("def program(a):")
    assert f.trace_count == 1
    f(enp.ones(3))
    assert f.trace_count == 1  # lower() filled the cache


# --- debug_nans ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("jitted", [False, True])
def test_debug_nans_names_the_primitive_that_made_the_nan(jitted):
    def f(x):
        return enp.log(x - 2.0) * 3.0

    f = ember.jit(f) if jitted else f
    x = enp.ones(3)
    assert np.isnan(np.asarray(f(x))).all()  # off: NaNs flow, as in NumPy
    ember.config.update("debug_nans", True)
    try:
        with pytest.raises(ember.errors.NaNError, match=r"^log produced a NaN \(debug_nans is on\) from operands \(float32\[3\]\)"):
            f(x)
        np.testing.assert_allclose(np.asarray(f(enp.full(3, 3.0))), 0.0, atol=1e-6)  # no NaN: no error
    finally:
        ember.config.update("debug_nans", False)


@pytest.mark.parametrize("make_nan", [
    lambda a, b: a - a, lambda a, b: a * 0.0, lambda a, b: enp.subtract(a, a), lambda a, b: enp.multiply(a, b),
    lambda a, b: enp.sin(a), lambda a, b: -enp.sqrt(b), lambda a, b: enp.sum(a - a), lambda a, b: a / a,
], ids=["a-a", "a*0.0", "subtract", "multiply", "sin", "sqrt", "sum", "a/a"])
def test_debug_nans_sees_the_eager_fast_lanes(make_nan):
    # Operators and ember.numpy functions on concrete arrays skip `bind` for speed; debug_nans turns that off.
    a, b = enp.full(2, np.inf), enp.asarray([0.0, -1.0])
    ember.config.update("debug_nans", True)
    try:
        with pytest.raises(ember.errors.NaNError, match=r"produced a NaN \(debug_nans is on\)"):
            make_nan(a, b)
    finally:
        ember.config.update("debug_nans", False)
    assert np.isnan(np.asarray(make_nan(a, b))).any()  # off: NaNs flow, as in NumPy


def test_vmap_of_jit_runs_a_batched_program_traced_once():
    calls = []

    @ember.jit
    def f(x, w):
        calls.append(1)
        return enp.tanh(x @ w) * 2.0

    w = _rand(4, 3)
    xs = _rand(8, 5, 4)
    for _ in range(2):
        got = ember.vmap(f, in_axes=(0, None))(enp.asarray(xs), enp.asarray(w))
        np.testing.assert_allclose(np.asarray(got), np.tanh(xs @ w) * 2.0, rtol=1e-5, atol=1e-6)
    assert f.trace_count == 1 and len(calls) == 1
    entry = next(iter(f._cache.values()))
    assert list(entry.sub.derived) == [("vmap", (0, None), 8)]  # the batched program, made once


# --- buffer reuse in generated code ----------------------------------------------------------------------


def test_generated_code_reuses_dead_buffers_in_place():
    f = ember.jit(lambda x: enp.sin(enp.tanh(x) * 1.5 + 0.5) * 2.0)
    x = _rand(1000)
    source = f.lower(enp.asarray(x)).source
    assert "out=" in source
    np.testing.assert_allclose(np.asarray(f(enp.asarray(x))), np.sin(np.tanh(x) * 1.5 + 0.5) * 2.0, rtol=1e-6)


def test_buffer_reuse_never_overwrites_a_live_view_an_input_or_an_output():
    def f(a, b):
        c = enp.tanh(a)  # fresh buffer
        d = c.reshape(4, 3)  # a view of c, live until the end
        e = enp.exp(b)  # same shape and dtype as c: must not take c's buffer
        g = (c + c.reshape(3, 4).T.reshape(12)) * 0.5  # in place over an operand viewed two ways
        return d, e * 1.0 + g, a

    a, b = _rand(12), _rand(12)
    d, eg, a_out = ember.jit(f)(enp.asarray(a), enp.asarray(b))
    c = np.tanh(a)
    np.testing.assert_allclose(np.asarray(d), c.reshape(4, 3), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(eg), np.exp(b) + (c + c.reshape(3, 4).T.reshape(12)) * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(a_out), a)


# --- loop fusion of elementwise chains on large arrays (ember/backends/fusion.py) --------------------------


def _adam_like(p, m, v, g, lr):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - lr * m / (enp.sqrt(v) + 1e-5), m, v


def _same_bits(got, want):
    for a, b in zip(ember.tree.leaves(got), ember.tree.leaves(want), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("shape, dtype", [((300, 700), np.float32), ((200_000,), np.float32), ((64, 64, 40), np.float64)])
def test_elementwise_chains_on_large_arrays_run_fused_in_blocks_with_eager_bits(shape, dtype):
    # (300, 700) float32: 93 rows a block, the last one partial; (64, 64, 40) float64: 12 rows a block
    with ember.config.x64(dtype == np.float64):
        args = [enp.asarray(_rand(*shape).astype(dtype)) for _ in range(4)]
        args[2] = enp.abs(args[2])
        lr = enp.asarray(np.asarray(1e-3, dtype))
        f = ember.jit(_adam_like)
        source = f.lower(*args, lr).source
        assert "elementwise equations fused" in source and "for _r in range(" in source
        assert args[0].dtype == dtype
        _same_bits(f(*args, lr), _adam_like(*args, lr))


def test_a_fused_group_ends_where_something_else_reads_it():
    def f(x, y):
        a = x * 2.0 + y  # fusible
        b = enp.tanh(a)  # not fusible (not correctly rounded): reads a, so a's group closes here
        c = a * y - 1.0  # a new group, reading a from memory
        return b * c + a, enp.sum(c)

    x, y = (enp.asarray(_rand(400, 600)) for _ in range(2))
    jitted = ember.jit(f)
    source = jitted.lower(x, y).source
    assert source.count("elementwise equations fused") >= 2
    assert source.index("fused") < source.index("tanh(") < source.rindex("fused")
    _same_bits(jitted(x, y), f(x, y))


def test_small_or_broadcasting_operands_are_not_fused():
    big, row = enp.asarray(_rand(400, 600)), enp.asarray(_rand(600))
    f = ember.jit(lambda x, r: (x * r + 1.0) * r - x)  # every equation broadcasts a row
    assert "fused" not in f.lower(big, row).source
    _same_bits(f(big, row), (big * row + 1.0) * row - big)
    g = ember.jit(lambda x: (x * 2.0 + 1.0) * x)
    assert "fused" not in g.lower(enp.asarray(_rand(100, 100))).source  # under two blocks: as it was


# --- buffers a program keeps or recycles between calls (ember/backends/buffers.py) ----------------------


def _address(a):
    return np.asarray(a).__array_interface__["data"][0]


def _two_layers(x, w1, w2):
    h = enp.maximum(x @ w1, 0.0)  # (256, 512) float32 intermediates: 512 KiB each
    g = enp.where(h > 1.0, h, 0.5 * h)
    return enp.tanh(g @ w2).T @ x


def test_large_intermediates_are_kept_between_calls_and_every_result_is_new():
    w1, w2 = enp.asarray(_rand(300, 512) / 20), enp.asarray(_rand(512, 300) / 20)
    f = ember.jit(_two_layers)
    xs = [enp.asarray(_rand(256, 300)) for _ in range(3)]
    source = f.lower(xs[0], w1, w2).source
    assert "_arena.take()" in source and "out=_k" in source  # kept: dot_general, maximum, select_n
    results = [f(x, w1, w2) for x in xs]  # all held: none may share memory with a later call's
    for x, got in zip(xs, results):
        _same_bits(got, _two_layers(x, w1, w2))
    assert len({_address(r) for r in results}) == 3


def test_a_returned_buffer_is_written_again_only_once_nothing_else_references_it():
    f = ember.jit(lambda x: (x * 2.0 + 1.0) * x - 0.5)  # fused on (400, 600): results are recycled
    x = enp.asarray(_rand(400, 600))
    want = np.asarray((x * 2.0 + 1.0) * x - 0.5)
    assert "_arena.recycle(" in f.lower(x).source
    first = f(x)
    held = np.asarray(f(x))  # the caller keeps a NumPy view of the second result only
    address = _address(first)
    del first  # dropped: its buffer may take the next result
    third = f(x)
    assert _address(third) == address and _address(held) != address
    fourth = f(x)  # third is held: a new buffer
    assert len({_address(third), _address(fourth), _address(held)}) == 3
    for r in (held, third, fourth):
        np.testing.assert_array_equal(np.asarray(r), want)


def test_a_host_callback_may_keep_the_buffers_it_was_given():
    seen = []

    def keep(a):
        seen.append(a)  # not a copy

    def f(x):
        y = enp.tanh(x) * 3.0  # 360 KiB that nothing but the callback reads
        ember.debug.callback(keep, y)
        return enp.sum(x * x)

    jitted = ember.jit(f)
    xs = [_rand(300, 300) for _ in range(3)]
    for x in xs:
        jitted(enp.asarray(x))
    assert len(seen) == 3
    for x, a in zip(xs, seen):
        np.testing.assert_array_equal(a, np.asarray(enp.tanh(enp.asarray(x)) * 3.0))


def test_threads_calling_one_program_each_get_their_own_buffers():
    from concurrent.futures import ThreadPoolExecutor

    w1, w2 = enp.asarray(_rand(300, 512) / 20), enp.asarray(_rand(512, 300) / 20)
    f = ember.jit(_two_layers)
    xs = [enp.asarray(_rand(256, 300)) for _ in range(16)]
    f(xs[0], w1, w2)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda x: [f(x, w1, w2) for _ in range(5)], xs))
    for x, got in zip(xs, results):
        want = _two_layers(x, w1, w2)
        for r in got:
            _same_bits(r, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_contractions_into_program_buffers_give_eager_bits(dtype):
    # Each layout of the dot_general kernel (a plain product, a transposed operand, a batch of
    # products, a batch of outer products) writing into a buffer of the program's (results of 64 KiB
    # or more; these are returned through an in-place multiply, so recycled).
    def f(a, b, c, u, v):
        return ((a @ b) * 2.0, (a.T @ c) * 2.0, enp.einsum("bij,bjk->bik", u, v) * 2.0,
                enp.einsum("bi,bj->bij", a[:, :64], c[:, :64]) * 2.0)  # fmt: skip

    def r(*shape):
        x = _rand(*shape).astype(dtype)
        return enp.asarray(x + 1j * _rand(*shape) if np.dtype(dtype).kind == "c" else x)

    with ember.config.x64(dtype == np.float64):
        args = (r(256, 128), r(128, 256), r(256, 128), r(8, 64, 128), r(8, 128, 64))
        jitted = ember.jit(f)
        lines = [line for line in jitted.lower(*args).source.splitlines() if "dot_general(" in line]
        assert len(lines) == 4 and all("out=" in line for line in lines)
        _same_bits(jitted(*args), f(*args))


# --- donate_argnums ----------------------------------------------------------------------------------------


def _momentum_step(params, m, g):
    m = {k: 0.9 * m[k] + 0.1 * g[k] for k in m}
    return {k: params[k] - 0.01 * m[k] for k in params}, m


def _state(shape=(400, 300)):
    make = lambda: {"w": enp.asarray(_rand(*shape)), "b": enp.asarray(_rand(shape[1]))}
    return make(), make(), make()


def test_donated_arguments_take_the_results_and_are_deleted():
    params, m, g = _state()
    want = _momentum_step(params, m, g)  # computed before the buffers are given up
    addresses = {_address(x) for x in (params["w"], m["w"])}
    f = ember.jit(_momentum_step, donate_argnums=(0, 1))
    got = f(params, m, g)
    _same_bits(got, want)
    assert {_address(got[0]["w"]), _address(got[1]["w"])} == addresses  # written in place
    for x in (params["w"], params["b"], m["w"], m["b"]):
        assert x.is_deleted()
    assert not g["w"].is_deleted()
    with pytest.raises(DeletedArrayError, match="donated to a jitted function.*Use what the call returned"):
        params["w"] + 1.0
    assert "deleted" in repr(m["b"])


def test_a_training_loop_with_donation_keeps_writing_the_same_buffers():
    params, m, g = _state()
    plain = ember.jit(_momentum_step)
    donating = ember.jit(_momentum_step, donate_argnums=(0, 1))
    want = (params, m)
    for _ in range(4):
        want = plain(*want, g)
    addresses = {_address(params["w"]), _address(m["w"])}
    got = (params, m)
    for _ in range(4):
        got = donating(*got, g)
        assert {_address(got[0]["w"]), _address(got[1]["w"])} == addresses
    _same_bits(got, want)


def test_a_donated_buffer_that_something_else_sees_is_copied_first():
    x = enp.asarray(_rand(400, 300))
    view = x.reshape(300, 400)  # an eager reshape shares x's buffer
    held = np.asarray(view)  # and NumPy holds a view of it too
    before = held.copy()
    y = enp.asarray(_rand(400, 300))
    seen_by_numpy = np.asarray(y)
    y_before = seen_by_numpy.copy()
    f = ember.jit(lambda a, b, c: (a * 2.0 + c, b * 3.0 - c), donate_argnums=(0, 1))
    z = enp.zeros((400, 300))  # a broadcast: read-only, no buffer of its own
    out = f(x, y, z)
    np.testing.assert_array_equal(held, before)
    np.testing.assert_array_equal(seen_by_numpy, y_before)
    np.testing.assert_array_equal(np.asarray(out[0]), before.reshape(400, 300) * np.float32(2.0))
    assert x.is_deleted() and y.is_deleted() and not view.is_deleted()
    w = enp.asarray(_rand(400, 300))
    w_value = np.asarray(w).copy()
    g = ember.jit(lambda a, b: (a * 2.0, b + 1.0), donate_argnums=0)
    two, plus = g(w, w)  # one array, donated and not: the program must not write over the other use
    np.testing.assert_array_equal(np.asarray(two), w_value * np.float32(2.0))
    np.testing.assert_array_equal(np.asarray(plus), w_value + np.float32(1.0))
    z2 = f(enp.asarray(_rand(400, 300)), enp.asarray(_rand(400, 300)), z)
    assert not z.is_deleted() and z2[0].shape == (400, 300)


def test_donation_under_a_transform_or_with_debug_nans_keeps_the_arguments():
    f = ember.jit(lambda x: enp.sum(enp.tanh(x) * x), donate_argnums=0)
    x = enp.asarray(_rand(400, 300))
    g = ember.grad(f)(x)
    np.testing.assert_allclose(np.asarray(g), np.tanh(np.asarray(x)) + np.asarray(x) / np.cosh(np.asarray(x)) ** 2, rtol=1e-5)
    ember.vmap(f)(x)
    assert not x.is_deleted()
    ember.config.update("debug_nans", True)
    try:
        f(x)
    finally:
        ember.config.update("debug_nans", False)
    assert not x.is_deleted()
    f(x)
    assert x.is_deleted()


def test_donated_and_static_arguments_must_not_overlap():
    with pytest.raises(InvalidArgumentError, match=r"jit: argument\(s\) \[1\] are both static and donated"):
        ember.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=(0, 1))


def test_lowered_source_of_a_donating_function_writes_into_the_arguments():
    params, m, g = _state()
    source = ember.jit(_momentum_step, donate_argnums=(0, 1)).lower(params, m, g).source
    plain = ember.jit(_momentum_step).lower(params, m, g).source
    assert "_arena.recycle(" in plain and "_arena.recycle(" not in source


# --- eager and jit compute the same bits (the op database's jit column checks every entry) ------------


def test_eager_matmul_of_concrete_arrays_gives_the_bits_of_jit():
    # Eager matmul's fast lane for concrete arrays used np.matmul, which sums a stack of products in
    # another order than the dot_general kernel's np.dot that jit (and every transform) runs: the last
    # bits differed (enp.matvec and enp.vecmat, which call matmul on Arrays, showed it).
    rng = np.random.default_rng(0)
    for xs, ys in [((8, 4, 16), (16, 3)), ((5, 2, 3), (3, 1)), ((4, 2, 3), (4, 3, 5)), ((3,), (3, 4))]:
        x, y = enp.asarray(rng.standard_normal(xs).astype(np.float32)), enp.asarray(rng.standard_normal(ys).astype(np.float32))
        eager, jitted = np.asarray(x @ y), np.asarray(ember.jit(enp.matmul)(x, y))
        assert eager.dtype == jitted.dtype and eager.shape == jitted.shape
        np.testing.assert_array_equal(eager, jitted, err_msg=f"{xs} @ {ys}")
    x = enp.asarray(rng.standard_normal((5, 2, 3)).astype(np.float32))
    v = enp.asarray(rng.standard_normal(3).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(enp.matvec(x, v)), np.asarray(ember.jit(enp.matvec)(x, v)))


def test_pad_takes_traced_constant_values():
    # enp.pad made constant_values concrete (np.asarray), so jit or vmap over it raised ConcretizationError.
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    pad = ember.jit(lambda x, c: enp.pad(x, ((1, 0), (0, 2)), constant_values=c))
    for c in (np.float32(7.0), np.array([1.0, 2.0], np.float32), np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)):
        want = np.pad(x, ((1, 0), (0, 2)), constant_values=c.tolist() if c.ndim else c)
        np.testing.assert_array_equal(np.asarray(pad(x, c)), want)
    batched = ember.vmap(lambda c: enp.pad(x, 1, constant_values=c))(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(batched), np.stack([np.pad(x, 1, constant_values=c) for c in (1.0, 2.0)]))
    assert float(ember.grad(lambda c: enp.pad(x, 1, constant_values=c).sum())(np.float32(0.0))) == 14.0


def test_complex_results_keep_their_bits_under_jit():
    # Written in place (out=), NumPy's complex multiply of one element skipped the FMA a fresh result
    # gets; and a complex literal written as its repr, np.complex128(-0.5j), came back with a real part
    # of -0.0. Both made jit differ from eager in the last bit or the sign of zero.
    rng = np.random.default_rng(0)
    f = lambda x, y, z: (x * y) * z
    for _ in range(20):
        x, y, z = [(rng.standard_normal(1) + 1j * rng.standard_normal(1)).astype(np.complex64) for _ in range(3)]
        args = [enp.asarray(a) for a in (x, y, z)]
        np.testing.assert_array_equal(np.asarray(ember.jit(f)(*args)), np.asarray(f(*args)))
    c = enp.asarray(np.complex64(complex(0.0, -1.0)))
    x = enp.asarray(np.array(complex(-0.0, 0.0), np.complex64))
    got, want = np.asarray(ember.jit(lambda x: x + c)(x)), np.asarray(x + c)
    assert got.tobytes() == want.tobytes(), (got, want)


def test_grad_of_jit_splits_the_program_once_into_primal_and_linear_parts():
    f = ember.jit(lambda x, n: enp.sum(enp.sin(x) ** 2) * n)
    x = _rand(7)
    for _ in range(2):
        got = ember.grad(f)(enp.asarray(x), enp.asarray(3.0))
        np.testing.assert_allclose(np.asarray(got), 3.0 * 2 * np.sin(x) * np.cos(x), rtol=1e-5, atol=1e-6)
    entry = next(iter(f._cache.values()))
    assert list(entry.sub.derived) == [("jvp", (True, False))]  # traced once, for a tangent of x only
    primal_out, tangent_out = ember.jvp(lambda x: f(x, enp.asarray(3.0)), (enp.asarray(x),), (enp.ones(7),))
    np.testing.assert_allclose(float(primal_out), float(np.sum(np.sin(x) ** 2) * 3.0), rtol=1e-5)
    np.testing.assert_allclose(float(tangent_out), float(np.sum(3.0 * 2 * np.sin(x) * np.cos(x))), rtol=1e-5)


def test_numpy_arguments_on_the_fast_lane_are_copied_and_converted():
    # A repeated call with NumPy arguments skips flattening; it must still copy (the identity returns its
    # input buffer) and convert to the signature's dtype (float64 -> float32 while x64 is off).
    ident = ember.jit(lambda a, b: (a, a + b))
    x = np.arange(4.0)  # float64
    y = np.ones(4, np.float32)
    for _ in range(3):  # the second and third calls take the fast lane
        same, total = ident(x, y)
        assert same.dtype == total.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(total), np.arange(4.0) + 1)
    x[0] = 100.0  # the caller mutates its array: the result made from it does not change
    np.testing.assert_array_equal(np.asarray(same), np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(ident(x, y)[1]), x + 1)
    assert ident.trace_count == 1
