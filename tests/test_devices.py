"""Several CPU devices (``num_cpu_devices``): the device API, committed vs uncommitted arrays, results
staying on their operands' device through every layer (ember.numpy, lax, transforms, random), clear
DeviceErrors for mixed devices and for devices that went away. References: NumPy, and the same
computation on cpu:0 (the devices share NumPy, so values must be bit-identical)."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import backends, lax
from ember.errors import DeviceError, InvalidArgumentError


pytestmark = pytest.mark.usefixtures("four_cpus")  # conftest.py


def D(i: int) -> ember.Device:
    return ember.devices("cpu")[i]


def on(x, i: int):
    return ember.device_put(x, f"cpu:{i}")


def assert_on(tree, i: int, committed: bool = True) -> None:
    leaves = [leaf for leaf in ember.tree.leaves(tree) if isinstance(leaf, ember.Array)]
    assert leaves
    for leaf in leaves:
        assert (leaf.device, leaf.committed) == (D(i), committed), (leaf, leaf.device, leaf.committed)


def X(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- the API -------------------------------------------------------------------------------------------------


def test_devices_lists_the_cpus_and_no_gpu():
    assert [str(d) for d in ember.devices()] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"][: len(ember.devices("cpu"))] + [
        str(d) for d in ember.devices("cuda")]  # fmt: skip
    assert [str(d) for d in ember.devices("cpu")] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    assert ember.devices("gpu") == ember.devices("cuda")
    with pytest.raises(DeviceError, match=r"ember.devices: unknown platform 'tpu'; the platforms are cpu, cuda"):
        ember.devices("tpu")


@pytest.mark.skipif(backends.cuda_device_count() > 0, reason="this machine has a GPU")
def test_no_gpu_gives_no_devices_and_put_raises():
    assert ember.devices("gpu") == [] and ember.devices("cuda") == []
    with pytest.raises(DeviceError) as err:
        ember.device_put(enp.ones(2), "cuda:0")
    if backends._cupy() is None:
        assert "pip install 'ember[cuda]'" in str(err.value)
    else:
        assert "device_put: device cuda:0 is not present (the cuda devices: none)" in str(err.value)
    with pytest.raises(DeviceError):
        enp.zeros(2, device="gpu")


def test_device_object():
    d1 = D(1)
    assert repr(d1) == "CpuDevice(id=1)" and str(d1) == "cpu:1"
    assert d1 == ember.Device("cpu", 1) and d1 != D(0) and d1 != "cpu:1"
    assert hash(d1) == hash(ember.Device("cpu", 1)) and len({D(0), D(1), ember.Device("cpu", 1)}) == 2
    assert (d1.platform, d1.id, d1.device_kind) == ("cpu", 1, "cpu")


@pytest.mark.parametrize("spec, expected", [("cpu", 0), ("CPU:1", 1), (" cpu:3 ", 3), ("cpu:2", 2)])
def test_device_strings(spec, expected):
    assert ember.device_put(enp.ones(2), spec).device == D(expected)


@pytest.mark.parametrize("spec", ["cpu:", "cpu:-1", "tpu", "cpu:1:2", "cpu:x", ""])
def test_bad_device_strings(spec):
    with pytest.raises(DeviceError, match=re.escape(f"device_put: {spec!r} does not name a device; write 'cpu', "
                                                    "'cpu:1', 'cuda' or 'cuda:0'")):  # fmt: skip
        ember.device_put(enp.ones(2), spec)


def test_device_of_another_type():
    with pytest.raises(InvalidArgumentError, match="device_put: a device is an ember.Device or a string such as "
                                                   "'cuda:0', got int 1"):  # fmt: skip
        ember.device_put(enp.ones(2), 1)


def test_absent_cpu_device():
    with pytest.raises(DeviceError, match=re.escape("device_put: device cpu:9 is not present (the cpu devices: "
                                                    "cpu:0, cpu:1, cpu:2, cpu:3); ember.config.update("
                                                    "'num_cpu_devices', n)")):  # fmt: skip
        ember.device_put(enp.ones(2), "cpu:9")


def test_default_device_blocks_nest_and_restore():
    assert ember.default_device() == D(0)
    with ember.default_device("cpu:2") as d:
        assert d == D(2) and ember.default_device() == D(2)
        assert_on(enp.ones(2), 2, committed=False)
        with ember.default_device(D(3)):
            assert_on(enp.asarray([1.0]), 3, committed=False)
        assert ember.default_device() == D(2)
        with pytest.raises(ZeroDivisionError):
            with ember.default_device("cpu:1"):
                1 / 0
        assert ember.default_device() == D(2)
    assert ember.default_device() == D(0) and ember.config.default_device is None
    assert_on(enp.ones(2), 0, committed=False)


def test_default_device_none_is_the_platforms_first_and_blocks_keep_the_eager_cache():
    from ember.core.primitive import _EAGER

    x = enp.ones(2)
    with ember.default_device("cpu:2"):
        with ember.default_device(None) as d:
            assert d == D(0)
            assert_on(enp.zeros(2), 0, committed=False)
        assert_on(enp.zeros(2), 2, committed=False)
        assert_on(x + x, 0, committed=False)  # an operation runs where its operands are
    enp.sin(x)
    keys = set(_EAGER)
    assert keys
    with ember.default_device("cpu:1"):
        pass
    assert keys <= set(_EAGER)  # a default_device block does not empty the eager cache


def test_default_device_rejects_absent_device_and_keeps_the_option():
    with pytest.raises(DeviceError, match="ember.default_device: device cpu:9 is not present"):
        ember.config.update("default_device", "cpu:9")
    assert ember.config.default_device is None and ember.default_device() == D(0)
    with pytest.raises(DeviceError, match="ember.default_device: device cpu:7 is not present"):
        ember.default_device("cpu:7")


def test_array_device_attributes():
    x = enp.arange(3.0)
    assert (x.device, x.committed, x.devices()) == (D(0), False, {D(0)})
    y = on(x, 2)
    assert (y.device, y.committed, y.devices()) == (D(2), True, {D(2)})
    assert y.block_until_ready() is y
    assert (x.device, x.committed) == (D(0), False)  # the original is untouched
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_device_put_of_pytrees_numpy_and_scalars():
    tree = {"a": np.arange(3, dtype=np.float32), "b": [1.5, 2], "c": True}
    out = ember.device_put(tree, "cpu:1")
    assert_on(out, 1)
    assert out["a"].dtype == np.float32 and np.asarray(out["a"]).tolist() == [0.0, 1.0, 2.0]
    assert out["b"][0].weak_type and out["b"][0].dtype == np.float32  # Python scalars stay weakly typed
    assert out["b"][1].weak_type and out["b"][1].dtype == np.int32
    assert not out["c"].weak_type and out["c"].dtype == np.bool_
    assert (out["b"][0] + enp.ones(2, dtype="float16")).dtype == np.float16  # weak: the half wins


def test_device_put_none_is_the_default_device_uncommitted():
    x = on(enp.ones(2), 3)
    assert_on(ember.device_put(x), 0, committed=False)
    with ember.default_device("cpu:2"):
        assert_on(ember.device_put(x, None), 2, committed=False)
    y = on(x, 3)
    assert y is x  # already there


def test_device_put_returns_tracers_as_they_are():
    seen = []

    def f(x):
        y = ember.device_put(x, "cpu:1")
        seen.append(y is x)
        return (y * 2).sum()

    ember.jit(f)(enp.ones(3))
    ember.grad(f)(enp.ones(3))
    ember.vmap(f)(enp.ones((2, 3)))
    assert seen == [True, True, True]


# --- creation functions with device= ---------------------------------------------------------------------


CREATE = {
    "zeros": lambda d: enp.zeros((2, 3), device=d),
    "ones": lambda d: enp.ones(3, dtype="int32", device=d),
    "empty": lambda d: enp.empty(2, device=d),
    "full": lambda d: enp.full((2,), 7.0, device=d),
    "zeros_like": lambda d: enp.zeros_like(enp.ones(2), device=d),
    "ones_like": lambda d: enp.ones_like(enp.ones(2), device=d),
    "empty_like": lambda d: enp.empty_like(enp.ones(2), device=d),
    "full_like": lambda d: enp.full_like(enp.ones(2), 3, device=d),
    "arange": lambda d: enp.arange(5, device=d),
    "linspace": lambda d: enp.linspace(0.0, 1.0, 5, device=d),
    "eye": lambda d: enp.eye(3, device=d),
    "asarray": lambda d: enp.asarray([1.0, 2.0], device=d),
    "array": lambda d: enp.array([[1, 2]], ndmin=3, device=d),
    "asarray_array": lambda d: enp.asarray(enp.ones(2), device=d),
    "astype": lambda d: enp.astype(enp.ones(2), "int32", device=d),
    "astype_method": lambda d: enp.ones(2).astype("int32", device=d),
    "from_dlpack": lambda d: enp.from_dlpack(np.arange(3.0), device=d),
    "fftfreq": lambda d: enp.fft.fftfreq(4, device=d),
    "rfftfreq": lambda d: enp.fft.rfftfreq(4, device=d),
    "to_device": lambda d: enp.ones(2).to_device(d),
}


@pytest.mark.parametrize("name", sorted(CREATE))
def test_creation_with_device_commits_there(name):
    reference = np.asarray(CREATE[name](None))
    for spec in ("cpu:2", D(2)):
        out = CREATE[name](spec)
        assert_on(out, 2)
        np.testing.assert_array_equal(np.asarray(out), reference)
        assert out.dtype == reference.dtype


@pytest.mark.parametrize("name", sorted(CREATE))
def test_creation_on_an_absent_device_raises(name):
    with pytest.raises(DeviceError, match=r"device cpu:5 is not present \(the cpu devices: cpu:0, cpu:1, cpu:2, cpu:3\)"):
        CREATE[name]("cpu:5")


def test_asarray_without_copy_between_cpu_devices_shares_the_buffer():
    source = np.arange(3.0, dtype=np.float32)
    x = enp.asarray(source, copy=False, device="cpu:2")
    assert_on(x, 2)
    source[0] = 7.0  # the CPU devices share host memory: no copy was needed
    assert np.asarray(x).tolist() == [7.0, 1.0, 2.0]
    assert_on(enp.asarray(x, copy=False, device="cpu:1"), 1)


def test_creation_without_device_is_uncommitted_on_the_default():
    with ember.default_device("cpu:1"):
        for name in ("zeros", "arange", "asarray", "eye", "fftfreq"):
            assert_on(CREATE[name](None), 1, committed=False)


def test_like_functions_follow_a_committed_operand():
    x = on(enp.ones((2, 2)), 3)
    for like in (enp.zeros_like, enp.ones_like, enp.empty_like):
        assert_on(like(x), 3)
    assert_on(enp.full_like(x, 2.0), 3)
    assert_on(enp.zeros_like(enp.ones(2)), 0, committed=False)


def test_to_device_is_device_put():
    x = on(enp.arange(3), 1)
    y = x.to_device("cpu:2")
    assert_on(y, 2)
    assert x.to_device(D(1)) is x
    with pytest.raises(DeviceError, match="to_device: device cpu:8 is not present"):
        x.to_device("cpu:8")


# --- results stay on the operands' device -----------------------------------------------------------------


A = X(3, 3)
B = X(3, 3, seed=1)

FUNCTIONS = {
    "add": lambda a, b: a + b,
    "scalar": lambda a, b: a * 2.5 - 1,
    "exp": lambda a, b: enp.exp(a),
    "outer": lambda a, b: enp.outer(a[0], b[0]),
    "sum": lambda a, b: a.sum(axis=0),
    "mean": lambda a, b: enp.mean(a),
    "argmax": lambda a, b: enp.argmax(a, axis=1),
    "cumsum": lambda a, b: enp.cumsum(a),
    "getitem": lambda a, b: a[1:, ::-1],
    "take": lambda a, b: a[enp.asarray([2, 0])],
    "bool_index": lambda a, b: a[np.asarray(A) > 0],
    "at_set": lambda a, b: a.at[0, 1].set(5.0),
    "at_add_array": lambda a, b: a.at[:, 0].add(b[0]),
    "sort": lambda a, b: enp.sort(a, axis=0),
    "argsort": lambda a, b: enp.argsort(a),
    "unique": lambda a, b: enp.unique(enp.round(a)),
    "matmul": lambda a, b: a @ b,
    "inv": lambda a, b: enp.linalg.inv(a),
    "solve": lambda a, b: enp.linalg.solve(a, b),
    "svd": lambda a, b: enp.linalg.svd(a),
    "eigh": lambda a, b: enp.linalg.eigh(a + a.T),
    "det": lambda a, b: enp.linalg.det(a),
    "fft": lambda a, b: enp.fft.fft(a),
    "irfft": lambda a, b: enp.fft.irfft(a),
    "einsum": lambda a, b: enp.einsum("ij,jk->ik", a, b),
    "where": lambda a, b: enp.where(a > 0, a, 0.0),
    "where_one_arg": lambda a, b: enp.where(a > 0),
    "concatenate": lambda a, b: enp.concatenate([a, b, enp.ones((1, 3))]),
    "stack": lambda a, b: enp.stack([a, np.ones((3, 3), np.float32)]),
    "clip": lambda a, b: enp.clip(a, -0.5, 0.5),
    "reshape": lambda a, b: a.reshape(9),
    "transpose": lambda a, b: a.T,
    "pad": lambda a, b: enp.pad(a, 1),
    "tile": lambda a, b: enp.tile(a, 2),
    "tril": lambda a, b: enp.tril(a),
    "meshgrid": lambda a, b: enp.meshgrid(a[0], a[1] + b[0]),
    "histogram": lambda a, b: enp.histogram(a, bins=3),
    "isclose": lambda a, b: enp.isclose(a, b),
    "conv": lambda a, b: enp.convolve(a[0], b[0]),
    "cond": lambda a, b: lax.cond(True, lambda u: u * 2, lambda u: u, a),
    "switch": lambda a, b: lax.switch(1, [lambda u: u, lambda u: -u], a),
    "scan": lambda a, b: lax.scan(lambda c, r: (c + r, c * 2), enp.zeros(3), a),
    "while_loop": lambda a, b: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, a)),
    "fori_loop": lambda a, b: lax.fori_loop(0, 3, lambda i, c: c * 2 + i, a),
    "map": lambda a, b: lax.map(lambda r: r.sum(), a),
    "grad": lambda a, b: ember.grad(lambda u: (u**2 * b).sum())(a),
    "value_and_grad": lambda a, b: ember.value_and_grad(lambda u: enp.sin(u).sum())(a),
    "vjp": lambda a, b: ember.vjp(lambda u: enp.tanh(u) * b, a)[1](b),
    "jvp": lambda a, b: ember.jvp(lambda u: u * u, (a,), (b,)),
    "linearize": lambda a, b: ember.linearize(lambda u: enp.sin(u), a)[1](b),
    "vmap": lambda a, b: ember.vmap(lambda r: r @ b)(a),
    "jacrev": lambda a, b: ember.jacrev(lambda u: enp.sin(u) * 2)(a[0]),
    "jacfwd": lambda a, b: ember.jacfwd(lambda u: enp.sin(u) * 2)(a[0]),
    "hessian": lambda a, b: ember.hessian(lambda u: (u**3).sum())(a[0]),
    "checkpoint": lambda a, b: ember.grad(lambda u: ember.checkpoint(lambda v: enp.sin(v).sum())(u))(a),
    "grad_scan": lambda a, b: ember.grad(lambda u: lax.scan(lambda c, r: (c * r, c), enp.ones(3), u)[0].sum())(a),
    "grad_while": lambda a, b: ember.grad(
        lambda u: lax.fori_loop(0, 3, lambda i, c: enp.sin(c), u).sum())(a),  # fmt: skip
    "grad_cond": lambda a, b: ember.grad(lambda u: lax.cond(True, lambda v: (v**2).sum(), lambda v: v.sum(), u))(a),
    "pure_callback": lambda a, b: ember.pure_callback(lambda u: np.asarray(u) * 2,
                                                      ember.ShapeDtypeStruct((3, 3), np.float32), a),  # fmt: skip
    "jit": lambda a, b: ember.jit(lambda u, v: (u @ v, enp.ones(2), 3.0 * u.sum()))(a, b),
    "jit_closure": lambda a, b: ember.jit(lambda u: u + enp.asarray(np.ones(3, np.float32)))(a),
    "linear_transpose": lambda a, b: ember.linear_transpose(lambda u: 2.0 * u, b)(a),
    "remat": lambda a, b: ember.grad(lambda u: ember.remat(lambda v: (v * enp.cos(v)).sum())(u))(a),
    "stop_gradient": lambda a, b: ember.grad(lambda u: (lax.stop_gradient(u) * u).sum())(a),
    "lax.dynamic_slice": lambda a, b: lax.dynamic_slice(a, (1, 0), (2, 2)),
    "lax.dynamic_update_slice": lambda a, b: lax.dynamic_update_slice(a, b[:1], (2, 0)),
    "lax.sort_multi": lambda a, b: lax.sort((a[0], b[0]), num_keys=1),
    "lax.top_k": lambda a, b: lax.top_k(a, 2),
    "lax.reduce_window": lambda a, b: lax.reduce_window(a, 0.0, lax.add, (2, 2), (1, 1), "VALID"),
    "lax.conv": lambda a, b: lax.conv(a[None, None], b[None, None, :2, :2], (1, 1), "SAME"),
    "lax.cumsum": lambda a, b: lax.cumsum(a, axis=1),
    "psum_in_vmap": lambda a, b: ember.vmap(lambda r: lax.psum(r, "i"), axis_name="i")(a),
    "fftn": lambda a, b: enp.fft.fftn(a),
    "scipy.special": lambda a, b: ember.scipy.special.logsumexp(a, axis=0),
    "scipy.linalg": lambda a, b: ember.scipy.linalg.cho_solve(ember.scipy.linalg.cho_factor(a @ a.T + 3 * enp.eye(3)), b),
    "debug.callback": lambda a, b: (ember.debug.callback(lambda u: None, a), a * 1)[1],
    "argwhere": lambda a, b: enp.argwhere(a > 0),
    "repeat": lambda a, b: enp.repeat(a, 2, axis=0),
    "nan_ops": lambda a, b: (enp.nanmean(a), enp.nanmedian(a, axis=0), enp.nancumsum(a)),
    "percentile": lambda a, b: enp.percentile(a, 30.0, axis=0),
    "interp": lambda a, b: enp.interp(a[0], enp.sort(b[0]), b[1]),
    "searchsorted": lambda a, b: enp.searchsorted(enp.sort(a[0]), b[0]),
    "polyval": lambda a, b: enp.polyval(a[0], b),
}


def _custom_jvp_fn():
    @ember.custom_jvp
    def f(x):
        return enp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return enp.sin(x), enp.cos(x) * t

    return f


def _custom_vjp_fn():
    @ember.custom_vjp
    def f(x):
        return enp.sin(x)

    f.defvjp(lambda x: (enp.sin(x), enp.cos(x)), lambda c, g: (c * g,))
    return f


FUNCTIONS["custom_jvp"] = lambda a, b: (_custom_jvp_fn()(a), ember.grad(lambda u: _custom_jvp_fn()(u).sum())(a))
FUNCTIONS["custom_vjp"] = lambda a, b: (_custom_vjp_fn()(a), ember.grad(lambda u: _custom_vjp_fn()(u).sum())(a))


def _assert_same(out, ref) -> None:
    outs, refs = ember.tree.leaves(out), ember.tree.leaves(ref)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_array_equal(np.asarray(o), np.asarray(r))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_results_stay_on_the_committed_operand_device(name):
    f = FUNCTIONS[name]
    reference = f(enp.asarray(A), enp.asarray(B))  # uncommitted on cpu:0: the reference values
    assert_on(reference, 0, committed=False)
    out = f(on(A, 2), on(B, 2))
    assert_on(out, 2)
    _assert_same(out, reference)
    out = f(on(A, 1), enp.asarray(B))  # one committed operand pulls the uncommitted one
    assert_on(out, 1)
    _assert_same(out, reference)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_uncommitted_results_follow_the_default_device(name):
    with ember.default_device("cpu:3"):
        out = FUNCTIONS[name](enp.asarray(A), enp.asarray(B))
    assert_on(out, 3, committed=False)


def test_results_of_uncommitted_operands_on_another_device_stay_there():
    x = ember.device_put(on(A, 2), None)  # uncommitted, on cpu:0
    with ember.default_device("cpu:1"):
        y = enp.asarray(A)  # uncommitted on cpu:1
    assert_on(y + 1, 1, committed=False)
    assert_on(y + x, 1, committed=False)


def test_where_uncommitted_operands_meet_depends_on_the_default_device_not_on_the_eager_cache():
    x = enp.asarray(A)  # uncommitted on cpu:0
    with ember.default_device("cpu:1"):
        y = enp.asarray(A)  # uncommitted on cpu:1
    assert_on(x + y, 1, committed=False)  # the operand away from the default (cpu:0) decides
    with ember.default_device("cpu:1"):
        assert_on(x * y, 0, committed=False)  # not cached before: decided afresh
        assert_on(x + y, 0, committed=False)  # cached under cpu:0's default: must agree with x * y


INDEPENDENT = {  # derivatives made from constants alone (zeros, a linear map's coefficients, the basis)
    "grad_of_a_constant": lambda x: ember.grad(lambda u: enp.ones(3).sum())(x),
    "grad_float0": lambda x: ember.grad(lambda u, n: u.sum() * n, argnums=(0, 1), allow_int=True)(x, on(enp.asarray(2), 1)),
    "vjp_of_a_constant": lambda x: ember.vjp(lambda u: enp.ones(3), x)[1](enp.ones(3)),
    "vjp_linear": lambda x: ember.vjp(lambda u: 2.0 * u, x)[1](enp.ones_like(enp.asarray(A))),
    "jacrev_linear": lambda x: ember.jacrev(lambda u: u * 2)(x[0]),
    "jacfwd_linear": lambda x: ember.jacfwd(lambda u: u * 2)(x[0]),
    "jacrev_empty": lambda x: ember.jacrev(lambda u: u[:0])(x[0]),
    "jacfwd_empty": lambda x: ember.jacfwd(lambda u: u.sum())(x[0, :0]),
    "hessian_quadratic": lambda x: ember.hessian(lambda u: (u**2).sum())(x[0]),
}


@pytest.mark.parametrize("name", sorted(INDEPENDENT))
def test_derivatives_made_from_constants_join_the_committed_input(name):
    reference = INDEPENDENT[name](enp.asarray(A))
    out = INDEPENDENT[name](on(A, 1))
    assert_on(out, 1)
    _assert_same(out, reference)


FROM_SHAPES = {  # results that read no value of their operands: a constant for the dtype, an empty operand's shortcut
    "isnan_of_ints": lambda x: enp.isnan(x.astype("int32")),
    "imag_of_floats": lambda x: enp.imag(x),
    "unique_of_nothing": lambda x: enp.unique(x[:0], return_counts=True),
    "isin_of_nothing": lambda x: enp.isin(x, x[:0]),
    "tril_indices_from": lambda x: enp.tril_indices_from(x),
    "matrix_power_0": lambda x: enp.linalg.matrix_power(x, 0),
    "vmap_axis_index": lambda x: ember.vmap(lambda r: lax.axis_index("i"), axis_name="i")(x),
}


@pytest.mark.parametrize("name", sorted(FROM_SHAPES))
def test_results_made_from_shapes_stay_on_the_operands_device(name):
    reference = FROM_SHAPES[name](enp.asarray(A))
    out = FROM_SHAPES[name](on(A, 1))
    assert_on(out, 1)
    _assert_same(out, reference)
    with ember.default_device("cpu:2"):
        x = enp.asarray(A)  # uncommitted, on cpu:2
    assert_on(FROM_SHAPES[name](x), 2, committed=False)


def test_derivatives_of_uncommitted_inputs_away_from_the_default_stay_on_their_device():
    # As an array from a GPU library (uncommitted on its GPU): its gradient is not computed on the default device.
    with ember.default_device("cpu:1"):
        x = enp.asarray(A[0])
    assert_on(ember.grad(lambda u: (2.0 * u).sum())(x), 1, committed=False)
    assert_on(ember.grad(lambda u: enp.ones(3).sum())(x), 1, committed=False)
    assert_on(ember.vjp(lambda u: u * 2, x)[1](enp.ones(3)), 1, committed=False)
    assert_on(ember.jacrev(lambda u: u * 2)(x), 1, committed=False)
    assert_on(ember.jacfwd(lambda u: u * 2)(x), 1, committed=False)


def test_arrays_committed_elsewhere_are_never_moved_to_the_inputs_device():
    # A cotangent or a vmap output the user committed to another device stays there: only arrays made
    # from constants (uncommitted) join the inputs' device.
    x, c = on(A[0], 1), on(A[0], 2)
    assert_on(ember.vjp(lambda u: u * 2, x)[1](c), 2)
    assert_on(ember.vmap(lambda r: c)(on(A, 1)), 2)
    assert_on(ember.jacrev(lambda u: c)(x), 1)  # a zero made from constants: the input's device


def test_results_made_from_shapes_of_operands_on_two_devices_raise():
    with pytest.raises(DeviceError, match=r"^isin: .*on cpu:1.*on cpu:3.*ember\.device_put"):
        enp.isin(on(A, 1), on(B[:0], 3))


# --- random -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sampler", ["normal", "uniform", "bits", "split", "randint", "permutation", "categorical"])
def test_random_on_a_committed_key(sampler):
    call = {
        "normal": lambda k: ember.random.normal(k, (4,)),
        "uniform": lambda k: ember.random.uniform(k, (2, 3)),
        "bits": lambda k: ember.random.bits(k, (5,)),
        "split": lambda k: ember.random.split(k, 3),
        "randint": lambda k: ember.random.randint(k, (4,), 0, 10),
        "permutation": lambda k: ember.random.permutation(k, 6),
        "categorical": lambda k: ember.random.categorical(k, enp.zeros((2, 4))),
    }[sampler]
    key = ember.random.key(7)
    reference = call(key)
    out = call(ember.device_put(key, "cpu:1"))
    assert_on(out, 1)
    _assert_same(out, reference)  # the same bits on every device


def test_random_key_on_a_device_and_its_samples():
    key = ember.device_put(ember.random.key(0), "cpu:3")
    assert key.device == D(3) and key.committed
    k1, k2 = ember.random.split(key)
    assert_on([ember.random.normal(k1, (2,)), ember.random.uniform(k2, (2,))], 3)


# --- jit -----------------------------------------------------------------------------------------------------


def test_jit_traces_once_per_device_and_commits_outputs():
    f = ember.jit(lambda x: x * 2 + 1)
    x = np.arange(3.0, dtype=np.float32)
    assert_on(f(enp.asarray(x)), 0, committed=False)
    assert f.trace_count == 1
    for i in (1, 2, 1, 2):
        out = f(on(x, i))
        assert_on(out, i)
        np.testing.assert_array_equal(np.asarray(out), x * 2 + 1)
    assert f.trace_count == 3 and len(f._cache) == 3
    with ember.default_device("cpu:3"):
        assert_on(f(enp.asarray(x)), 3, committed=False)
    assert f.trace_count == 4


def test_jit_explain_retrace_names_the_device(caplog):
    f = ember.jit(lambda x: x + 1)
    ember.config.update("explain_retrace", True)
    try:
        f(on(enp.ones(2), 1))
        with caplog.at_level("WARNING"):
            f(on(enp.ones(2), 2))
    finally:
        ember.config.update("explain_retrace", False)
    assert "retracing because the device changed from cpu:1 (committed) to cpu:2 (committed)" in caplog.text


def test_jit_of_mixed_committed_devices_raises():
    f = ember.jit(lambda x, y: x + y)
    with pytest.raises(DeviceError) as err:
        f(on(enp.ones(2), 1), on(enp.ones(2), 2))
    message = str(err.value)
    assert "cpu:1" in message and "cpu:2" in message and "ember.device_put" in message
    assert message == ("jit(<lambda>): the arguments are committed to different devices: argument x (float32[2]) on "
                       "cpu:1, argument y (float32[2]) on cpu:2; move them to one device first with "
                       "ember.device_put(x, device)")


def test_jit_of_a_function_closing_over_a_committed_array():
    c = on(enp.asarray([1.0, 2.0, 3.0]), 2)
    f = ember.jit(lambda u: u + c)
    for _ in range(2):  # the traced call, then the fast lane
        out = f(enp.ones(3))
        assert_on(out, 2)
        assert np.asarray(out).tolist() == [2.0, 3.0, 4.0]
    assert_on(ember.jit(lambda: c * 2)(), 2)
    assert_on(f(on(enp.ones(3), 2)), 2)
    with pytest.raises(DeviceError, match=re.escape("jit(<lambda>): the function closes over an array (float32[3]) "
                                                    "committed to cpu:2, but its arguments are committed to cpu:1; "
                                                    "move them to one device first with ember.device_put(x, device)")):  # fmt: skip
        f(on(enp.ones(3), 1))


def test_jit_inside_grad_and_vmap_on_a_device():
    f = ember.jit(lambda x: enp.sin(x) * x)
    x = on(A, 2)
    assert_on(ember.grad(lambda u: f(u).sum())(x), 2)
    assert_on(ember.vmap(f)(x), 2)


def test_jit_with_donation_on_a_device():
    f = ember.jit(lambda x: x * 2, donate_argnums=0)
    x = on(enp.ones(3), 2)
    y = f(x)
    assert_on(y, 2)
    assert x.is_deleted()


# --- mixed committed devices -----------------------------------------------------------------------------------


MIXED = {
    "add": (lambda a, b: a + b, "add"),
    "matmul": (lambda a, b: a @ b, "dot_general"),
    "concatenate": (lambda a, b: enp.concatenate([a, b]), "concatenate"),
    "where": (lambda a, b: enp.where(a > 0, a, b), "select_n"),
    "at_set": (lambda a, b: a.at[0].set(b[0]), "scatter"),
    "cond": (lambda a, b: lax.cond(True, lambda u, v: u + v, lambda u, v: u, a, b), "cond"),
    "scan": (lambda a, b: lax.scan(lambda c, r: (c + r, c), a[0], b), "scan"),
    "while_loop": (lambda a, b: lax.while_loop(lambda c: c[0].sum() < 0, lambda c: c, (a, b)), "while"),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_committed_devices_raise_naming_both(name):
    f, op = MIXED[name]
    with pytest.raises(DeviceError) as err:
        f(on(A, 1), on(B, 3))
    message = str(err.value)
    assert message.startswith(f"{op}: the operands are committed to different devices: "), message
    assert "on cpu:1" in message and "on cpu:3" in message
    assert message.endswith("move them to one device first with ember.device_put(x, device)")


def test_mixed_devices_under_grad_raise():
    with pytest.raises(DeviceError, match="cpu:1.*cpu:2"):
        ember.grad(lambda u, v: (u * v).sum())(on(A, 1), on(B, 2))


# --- devices that went away ---------------------------------------------------------------------------------


def test_a_device_that_went_away_raises_on_use():
    x = on(A, 3)
    f = ember.jit(lambda u: u * 2)
    f(x)
    f(x)  # the jit fast lane has it now
    ember.config.update("num_cpu_devices", 2)
    for use in (lambda: x + 1, lambda: enp.sin(x), lambda: f(x), lambda: ember.jit(lambda u: u - 1)(x),
                lambda: lax.fori_loop(0, 2, lambda i, c: c + 1, x), lambda: ember.grad(lambda u: u.sum())(x)):  # fmt: skip
        with pytest.raises(DeviceError, match=r"device cpu:3 is not present \(the cpu devices: cpu:0, cpu:1\)"):
            use()
    assert np.asarray(x).tolist() == A.tolist()  # reading it back still works: the data is on the host
    ember.config.update("num_cpu_devices", 4)
    assert_on(x + 1, 3)


def test_lowering_num_cpu_devices_below_the_default_device_is_refused():
    ember.config.update("default_device", "cpu:3")
    with pytest.raises(DeviceError, match="device cpu:3 is not present"):
        ember.config.update("num_cpu_devices", 2)
    assert ember.config.num_cpu_devices == 4 and ember.default_device() == D(3)


# --- pickle and io ------------------------------------------------------------------------------------------------


def test_pickle_comes_back_on_the_default_device_uncommitted():
    x = on(enp.asarray([1.0, 2.0]), 2)
    with ember.default_device("cpu:1"):
        y = pickle.loads(pickle.dumps(x))
    assert_on(y, 1, committed=False)
    assert np.asarray(y).tolist() == [1.0, 2.0]


def test_save_load_come_back_on_the_default_device(tmp_path):
    tree = {"w": on(enp.asarray(A), 2), "b": on(enp.arange(3), 3)}
    ember.save(tmp_path / "t.safetensors", tree)
    back = ember.load(tmp_path / "t.safetensors")
    assert_on(back, 0, committed=False)
    with ember.default_device("cpu:1"):
        back = ember.load(tmp_path / "t.safetensors", tree)
    assert_on(back, 1, committed=False)
    _assert_same(back, {"w": enp.asarray(A), "b": enp.arange(3)})
    moved = ember.device_put(back, "cpu:2")  # how to put a checkpoint on a device
    assert_on(moved, 2)


def test_ember_platform_cuda_without_cupy_says_how_to_install(tmp_path):
    # A stand-in `cupy` that fails to import, first on the path: as on a machine without CuPy.
    (tmp_path / "cupy.py").write_text("raise ImportError('no CuPy here')\n")
    env = {**os.environ, "EMBER_PLATFORM": "cuda", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    run = subprocess.run([sys.executable, "-c", "import ember"], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "DeviceError: the cuda platform needs CuPy, which is not installed: pip install 'ember[cuda]'" in run.stderr
