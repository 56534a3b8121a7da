"""The eager fast lanes (ember/lax/_fastlane.py and the lanes of operators and methods) against the
general path they short-cut: for every operand they accept, the same bits, dtype, weak type and place as
binding the primitive; for everything else, the general path's result or error. The general path itself
is checked against NumPy by the op database."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.core.array import wrap
from ember.core.primitives import elementwise as ew
from ember.core.primitives import indexing as ix
from ember.numpy import _contract, _indexing, _reductions, _shape, _ufuncs

DTYPES = ["float32", "float64", "float16", "bfloat16", "complex64", "int32", "int8", "uint8", "bool"]
SHAPES = [(), (3,), (2, 3), (0, 3)]


def _arrays(dtype, shape, weak=False):
    rng = np.random.default_rng(abs(hash((dtype, shape))) % 2**32)
    values = rng.normal(size=shape) * 3
    x = enp.asarray(values.astype(enp.dtype(dtype) if dtype == "bfloat16" else dtype))
    return wrap(x._value, True) if weak else x  # (weak: as a Python scalar's result would be)


def _same(got, want):
    assert type(got) is type(want) is ember.Array
    assert (got.dtype, got.weak_type, got.shape, got.device) == (want.dtype, want.weak_type, want.shape, want.device)
    bits = lambda a: np.ascontiguousarray(np.atleast_1d(np.asarray(a))).view(np.uint8)
    np.testing.assert_array_equal(bits(got), bits(want))


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except ember.errors.EmberError as err:
        return None, type(err)


def _agree(fast, slow, *args):
    got, got_err = _outcome(fast, *args)
    want, want_err = _outcome(slow, *args)
    assert got_err == want_err, (args, got_err, want_err)
    if want is not None:
        _same(got, want)


# Python scalars: in and out of each dtype's range (int8's 300, uint8's -1), and kinds that promote
SCALARS = (2.5, -3, 127, 300, -1, 2**31, 2**63, True, 1j, float("nan"))
BINARY = ["add", "subtract", "multiply", "true_divide", "equal", "less", "greater_equal", "maximum", "bitwise_and"]
OPERATORS = {"__add__": "add", "__sub__": "subtract", "__mul__": "multiply", "__truediv__": "true_divide",
             "__eq__": "equal", "__lt__": "less", "__ge__": "greater_equal", "__and__": "bitwise_and"}  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weak", [False, True])
def test_binary_lanes_and_operators_agree_with_the_general_path(dtype, weak):
    for shape_a, shape_b in [((2, 3), (2, 3)), ((2, 3), (3,)), ((), (3,)), ((0, 3), (3,)), ((2, 3), (4,))]:
        a, b = _arrays(dtype, shape_a, weak), _arrays(dtype, shape_b)
        for name in BINARY:
            fn = getattr(_ufuncs, name)
            _agree(fn, getattr(fn, "__wrapped__", fn), a, b)
            for scalar in SCALARS:
                _agree(fn, getattr(fn, "__wrapped__", fn), a, scalar)
                _agree(fn, getattr(fn, "__wrapped__", fn), scalar, a)
        for name in ("add", "sub", "mul", "div", "max", "atan2", "eq", "lt", "bitwise_and", "pow"):  # ember.lax's
            fn = getattr(ember.lax, name)
            _agree(fn, getattr(fn, "__wrapped__", fn), a, b)
            for scalar in SCALARS:
                _agree(fn, getattr(fn, "__wrapped__", fn), a, scalar)
                _agree(fn, getattr(fn, "__wrapped__", fn), scalar, a)
        for op, name in OPERATORS.items():
            slow = getattr(_ufuncs, name).__wrapped__
            _agree(getattr(ember.Array, op), slow, a, b)
            for scalar in SCALARS:  # both sides
                _agree(getattr(ember.Array, op), lambda x, s: slow(x, s), a, scalar)
                if hasattr(ember.Array, op.replace("__", "__r", 1)):
                    _agree(getattr(ember.Array, op.replace("__", "__r", 1)), lambda x, s: slow(s, x), a, scalar)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_lanes_agree_with_the_general_path(dtype):
    for shape in SHAPES:
        x = _arrays(dtype, shape)
        for name in ("negative", "absolute", "sin", "exp", "sqrt", "tanh", "invert"):
            fn = getattr(_ufuncs, name)
            _agree(fn, fn.__wrapped__, x)
        for name in ("neg", "sin", "exp", "abs", "sqrt", "logistic", "erf", "bitwise_not", "is_finite"):  # ember.lax's
            fn = getattr(ember.lax, name)
            _agree(fn, getattr(fn, "__wrapped__", fn), x)
        _agree(ember.Array.__neg__, _ufuncs.negative.__wrapped__, x)
        _agree(_ufuncs.where, lambda c, a, b: _ufuncs._where(c, a, b, None, None), x > 0, x, -x) if dtype != "bool" else None
        for weak in (False, True):
            v = _arrays(dtype, shape, weak)
            every_axis = tuple(range(v.ndim))
            _agree(_reductions.sum, lambda v: _reductions.sum(v, keepdims=False, axis=every_axis), v)
            _agree(_reductions.max, lambda v: _reductions.max(v, keepdims=False, axis=every_axis), v)
            _agree(_reductions.min, lambda v: _reductions.min(v, keepdims=False, axis=every_axis), v)
            for exponent in (0, 1, 2, 3, -1, -2, 7):  # x ** int binds integer_pow (the lane runs its kernel)
                if dtype != "bool" and (exponent >= 0 or dtype.startswith(("float", "complex", "bfloat"))):
                    _agree(_ufuncs.power, lambda v, n: ew.integer_pow_p.bind(v, y=n), v, exponent)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "complex64"])
def test_views_agree_with_the_general_path(dtype):
    x = _arrays(dtype, (2, 3, 4))
    for index in (1, -1, 5, slice(1, None), slice(None, None, -2), (0, slice(1, 3)), (Ellipsis, None, 2), (),
                  (slice(0, 1), None, 1, Ellipsis), (7, 0), enp.asarray(1), slice(enp.asarray(1), None),
                  enp.asarray([0, -1, 1]), enp.asarray([[1], [0]], "uint8"), enp.asarray([0, 2]), enp.asarray([-3, 5]),
                  enp.asarray(-2), enp.asarray([], "int32"), enp.asarray([True, False])):  # fmt: skip
        _agree(ember.Array.__getitem__, _indexing.getitem, x, index)
    for shape in ((6, 4), (-1,), (4, -1, 2), (5, 5), (24,), ((3, 8),), ([2, 12],), (2.0, 12), (-2, -12)):
        _agree(lambda v, s: v.reshape(*s), lambda v, s: _shape.reshape(v, s[0] if len(s) == 1 else s), x, shape)
    for axes in ((), (2, 0, 1), ((1, 0, 2),), (-1, 0, 1), (0, 0, 1), (3, 0, 1)):
        _agree(lambda v, a: v.transpose(*a), lambda v, a: _shape.transpose(v, (a[0] if len(a) == 1 else a) or None), x, axes)
    _same(x.T, _shape.transpose(x))
    for shape in ((2, 3, 4), (5, 2, 3, 4), (2, 1, 4), (3, 4), 4, (2, -1, 4)):
        _agree(enp.broadcast_to, _shape._broadcast_to, x[:, :1], shape)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int32", "float16"])
def test_matmul_lane_agrees_with_the_general_path(dtype):
    general = lambda a, b: _contract.matmul(a, b, precision="default")  # (precision= skips the lane)
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                   ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)), ((2, 3), (4, 3)), ((0, 3), (3, 2))]:  # fmt: skip
        a, b = _arrays(dtype, sa), _arrays(dtype, sb)
        _agree(ember.Array.__matmul__, general, a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64", "int32", "bool"])
def test_index_update_lane_agrees_with_the_general_path(dtype):
    prims = {"set": ix.scatter_p, "add": ix.scatter_add_p, "multiply": ix.scatter_mul_p}
    for shape in ((5,), (3, 4), (), (2, 3, 4)):
        x = _arrays(dtype, shape)
        for index in (1, -1, slice(1, None), slice(None, None, -1), (Ellipsis, 0), (None,), (), (0, 0), 7, slice(7, 9)):
            for values in (2.5, 3, -7, _arrays(dtype, ()), _arrays(dtype, (2,)), _arrays("float64", ())):
                for how, prim in prims.items():
                    _agree(lambda v, i, u: getattr(v.at[i], how)(u),
                           lambda v, i, u: _indexing._update(how, v, i, u, prim, None), x, index, values)  # fmt: skip


def test_lanes_step_aside_under_debug_nans():
    x = enp.asarray([-1.0, 4.0])
    ember.config.update("debug_nans", True)
    try:
        for make_nan in (lambda: enp.sqrt(x), lambda: enp.zeros(2) / enp.zeros(2), lambda: x * np.inf * 0.0, lambda: x.at[0].multiply(np.inf) * 0.0, lambda: enp.log(x)):
            with pytest.raises(ember.errors.NaNError):
                make_nan()
    finally:
        ember.config.update("debug_nans", False)
    assert np.isnan(np.asarray(enp.sqrt(x))[0])


def test_lane_functions_are_named_and_pickle_where_users_find_them():
    for fn in (enp.sin, enp.add, enp.negative, enp.less, enp.where, enp.sum, enp.max, enp.broadcast_to, ember.lax.add):
        assert fn.__module__ in ("ember.numpy", "ember.lax") and pickle.loads(pickle.dumps(fn)) is fn


def test_a_donated_array_raises_on_every_use():
    x = enp.ones(3)
    ember.jit(lambda v: v * 2, donate_argnums=0)(x)
    uses = [lambda: x + 1.0, lambda: 1.0 + x, lambda: x + x, lambda: -x, lambda: enp.sin(x), lambda: np.asarray(x),
            lambda: x[1:], lambda: x.reshape(3, 1), lambda: x.shape, lambda: x.T, lambda: x @ x, lambda: enp.sum(x),
            lambda: x.at[0].set(1.0), lambda: enp.broadcast_to(x, (2, 3)), lambda: enp.where(x > 0, x, x),
            lambda: ember.jit(lambda v: v + 1)(x), lambda: np.add(x, 1), lambda: float(x[0])]  # fmt: skip
    for use in uses:
        with pytest.raises(ember.errors.DeletedArrayError, match="donated to a jitted function"):
            use()
    assert x.is_deleted() and "deleted" in repr(x)
