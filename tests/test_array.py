"""`ember.Array`: immutability, conversions, interop, metadata, Python operators, x64 and weak types.

Expected values come from NumPy (the same expression on NumPy arrays) or are
written out by hand; ember's own output is never the reference.
"""

from __future__ import annotations

import copy
import operator
import pickle

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import DTypeError, EmberError

BF16 = np.dtype(ml_dtypes.bfloat16)


def arr(values, dtype) -> ember.Array:
    return enp.asarray(np.asarray(values, dtype=dtype))


def assert_same(got, want, *, dtype=None, rtol=None):
    """`got` (an ember Array) has `want`'s shape, the given dtype (default want's) and its values."""
    assert isinstance(got, ember.Array), type(got)
    want = np.asarray(want)
    expected_dtype = np.dtype(dtype) if dtype is not None else want.dtype
    assert got.dtype == expected_dtype, (got.dtype, expected_dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    got_np = np.asarray(got)
    if expected_dtype.kind in "fc" or expected_dtype == BF16:
        tol = rtol if rtol is not None else {2: 2e-3, 4: 2e-6, 8: 2e-6, 16: 1e-12}.get(expected_dtype.itemsize, 1e-6)
        if expected_dtype == BF16:
            tol = 1e-2
        np.testing.assert_allclose(got_np.astype(np.complex128 if expected_dtype.kind == "c" else np.float64),
                                   want.astype(np.complex128 if want.dtype.kind == "c" else np.float64),
                                   rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got_np, want.astype(expected_dtype))


@pytest.fixture
def x64():
    with ember.config.x64(True):
        yield


# --- identity, immutability ------------------------------------------------------------------


def test_isinstance_and_type():
    x = enp.asarray([1.0, 2.0])
    assert isinstance(x, ember.Array)
    assert isinstance(x + 1, ember.Array)
    assert isinstance(x[0], ember.Array)
    assert not isinstance(np.asarray(x), ember.Array)


def test_setitem_raises_and_points_to_at():
    x = enp.asarray([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"\.at\["):
        x[0] = 1.0
    with pytest.raises(TypeError, match="immutable"):
        x[1:] = 0.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_np_asarray_is_read_only():
    x = enp.asarray([1.0, 2.0, 3.0])
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 5.0
    assert x.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64])
def test_mutating_the_source_numpy_array_does_not_change_x(dtype):
    source = np.array([1, 0, 3], dtype=dtype)
    x = enp.asarray(source)
    source[0] = 0
    source[1] = 1
    assert x.tolist() == np.array([1, 0, 3], dtype=dtype).tolist()


def test_mutating_a_view_source_does_not_change_x():
    base = np.arange(6, dtype=np.float32)
    x = enp.asarray(base[::2])
    base[:] = -1
    assert x.tolist() == [0.0, 2.0, 4.0]


def test_mutating_an_array_like_source_does_not_change_x():
    class Holder:  # hands out its own buffer from __array__, as many array-likes do
        def __init__(self):
            self.data = np.array([1.0, 2.0, 3.0], dtype=np.float32)

        def __array__(self, dtype=None, copy=None):
            return self.data

    holder = Holder()
    x = enp.asarray(holder)
    holder.data[0] = 99.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_unhashable():
    with pytest.raises(TypeError):
        hash(enp.asarray([1.0]))


# --- __array__ -----------------------------------------------------------------------------------


def test_array_protocol_plain():
    x = enp.asarray([[1.0, 2.0], [3.0, 4.0]])
    out = np.asarray(x)
    assert type(out) is np.ndarray and out.dtype == np.float32 and out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.array(x), out)


def test_array_protocol_dtype():
    x = enp.asarray([1.5, -2.5])
    out = np.asarray(x, dtype=np.float64)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.5, -2.5])
    out = x.__array__(np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, -2])


def test_array_protocol_copy():
    x = enp.asarray([1.0, 2.0])
    owned = np.array(x, copy=True)
    assert owned.flags.writeable
    owned[0] = 10.0
    assert x.tolist() == [1.0, 2.0]
    owned = x.__array__(copy=True)
    assert owned.flags.writeable and owned.tolist() == [1.0, 2.0]
    shared = np.asarray(x, copy=False)
    assert not shared.flags.writeable and shared.tolist() == [1.0, 2.0]


def test_array_protocol_copy_false_with_a_dtype_change_raises():
    # NumPy's protocol: copy=False must not copy, so a dtype change is a ValueError.
    x = enp.asarray([1.0, 2.0])
    with pytest.raises(ValueError):
        np.asarray(x, dtype=np.float64, copy=False)


def test_numpy_functions_accept_arrays():
    x = enp.asarray([1.0, 4.0, 9.0])
    np.testing.assert_allclose(np.sqrt(np.asarray(x)), [1.0, 2.0, 3.0])
    assert float(np.sum(np.asarray(x))) == 14.0


# --- DLPack --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.complex64, np.float16])
def test_dlpack_round_trip_through_numpy(dtype):
    source = np.arange(6).reshape(2, 3).astype(dtype)
    x = enp.asarray(source)
    out = np.from_dlpack(x)
    assert out.dtype == source.dtype and out.shape == (2, 3)
    np.testing.assert_array_equal(out, source)
    back = enp.asarray(out)
    assert back.dtype == source.dtype
    np.testing.assert_array_equal(np.asarray(back), source)


def test_dlpack_export_cannot_mutate_the_array():
    x = enp.asarray([1.0, 2.0, 3.0])
    out = np.from_dlpack(x)
    if out.flags.writeable:  # a consumer that cannot see the read-only flag must get a copy
        out[0] = 42.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_dlpack_device():
    x = enp.asarray([1.0])
    device_type, device_id = x.__dlpack_device__()
    assert (int(device_type), device_id) == (1, 0)  # kDLCPU


def test_dlpack_of_a_non_contiguous_result():
    x = enp.asarray(np.arange(12.0).reshape(3, 4)).T
    np.testing.assert_array_equal(np.from_dlpack(x), np.arange(12.0, dtype=np.float32).reshape(3, 4).T)


# --- conversion to Python ------------------------------------------------------------------------


def test_item_and_tolist():
    assert enp.asarray(2.5).item() == 2.5
    assert type(enp.asarray(2.5).item()) is float
    assert type(enp.asarray(3).item()) is int
    assert type(enp.asarray(True).item()) is bool
    assert enp.asarray([[7]]).item() == 7
    assert enp.asarray([[1, 2], [3, 4]]).item(2) == 3
    assert enp.asarray([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert enp.asarray(1.5).tolist() == 1.5
    assert enp.zeros((0, 2)).tolist() == []


def test_item_of_a_non_scalar_raises():
    with pytest.raises(ValueError, match=r"\(3,\)"):
        enp.asarray([1.0, 2.0, 3.0]).item()


@pytest.mark.parametrize(
    "convert, value, want",
    [
        (float, 2.5, 2.5),
        (int, 7, 7),
        (int, -2.75, -2),
        (bool, 0.0, False),
        (bool, 3, True),
        (complex, 1 + 2j, 1 + 2j),
        (complex, 1.5, 1.5 + 0j),
        (float, [[4.0]], 4.0),
    ],
)
def test_python_scalar_conversions(convert, value, want):
    got = convert(enp.asarray(value))
    assert type(got) is convert and got == want


@pytest.mark.parametrize("convert", [float, int, complex])
def test_scalar_conversion_of_non_scalar_raises_type_error(convert):
    with pytest.raises(TypeError, match=r"\(2,\)") as info:
        convert(enp.asarray([1.0, 2.0]))
    assert isinstance(info.value, EmberError)


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2)])
def test_bool_of_non_scalar_raises_value_error(shape):
    # NumPy and JAX raise ValueError ("truth value ... is ambiguous").
    with pytest.raises(ValueError) as info:
        bool(enp.ones(shape))
    assert isinstance(info.value, EmberError)


def test_if_on_array_uses_bool():
    assert enp.asarray(1.0) if True else None
    assert not enp.asarray(0)
    assert (enp.asarray(3) > 2)


def test_index():
    seq = list(range(10))
    assert seq[enp.asarray(3)] == 3
    assert seq[arr(4, np.uint8)] == 4
    assert operator.index(arr(-2, np.int16)) == -2
    assert [0, 1, 2, 3][enp.asarray(1):enp.asarray(3)] == [1, 2]
    assert range(10)[enp.asarray(9)] == 9


@pytest.mark.parametrize("value", [1.0, True, 1 + 0j])
def test_index_of_non_integer_raises(value):
    with pytest.raises(TypeError):
        operator.index(enp.asarray(value))


def test_index_of_non_scalar_raises():
    with pytest.raises(TypeError):
        operator.index(enp.asarray([1, 2]))


def test_len_and_iter():
    x = enp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, ember.Array) and r.shape == (2,) for r in rows)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert list(enp.zeros((0, 3))) == []
    assert len(enp.zeros((0, 3))) == 0
    a, b = enp.asarray([10, 20])
    assert (int(a), int(b)) == (10, 20)


def test_len_and_iter_of_0d_raise_type_error():
    x = enp.asarray(1.0)
    with pytest.raises(TypeError):
        len(x)
    with pytest.raises(TypeError):
        iter(x)
    with pytest.raises(TypeError):
        list(x)


# --- repr / str / format -----------------------------------------------------------------------


def test_repr():
    assert repr(enp.asarray([1.0, 2.0, 3.0])) == "Array([1., 2., 3.], dtype=float32)"
    assert repr(arr([1, 2], np.int8)) == "Array([1, 2], dtype=int8)"
    assert repr(enp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(enp.asarray([True, False])) == "Array([ True, False], dtype=bool)"
    multi = repr(enp.asarray([[1, 2], [3, 4]]))
    assert multi.startswith("Array([[1, 2],") and multi.endswith("dtype=int32)")
    # Continuation lines line up under the first element, as NumPy's repr does.
    assert "\n       [3, 4]]" in multi
    assert "bfloat16" in repr(enp.asarray(np.array([1.0], dtype=BF16)))


def test_str_matches_numpy():
    for values, dtype in [([1.0, 2.5], np.float32), ([[1, 2], [3, 4]], np.int32), (1.5, np.float32), ([], np.float32)]:
        assert str(arr(values, dtype)) == str(np.asarray(values, dtype=dtype))


def test_format():
    assert f"{enp.asarray(1.5):.3f}" == "1.500"
    assert f"{enp.asarray(7):>4}" == "   7"
    assert format(enp.asarray(2.0), "") == "2.0"
    assert f"{enp.asarray([1.0, 2.0])}" == str(np.asarray([1.0, 2.0], dtype=np.float32))
    assert f"{enp.asarray(1234.5):e}" == "1.234500e+03"


# --- metadata ------------------------------------------------------------------------------------


def test_shape_dtype_ndim_size():
    x = enp.zeros((2, 3, 4))
    assert x.shape == (2, 3, 4) and type(x.shape) is tuple
    assert x.dtype == np.float32 and isinstance(x.dtype, np.dtype)
    assert x.ndim == 3 and x.size == 24
    s = enp.asarray(5)
    assert (s.shape, s.ndim, s.size) == ((), 0, 1)
    e = enp.zeros((3, 0))
    assert (e.shape, e.ndim, e.size) == ((3, 0), 2, 0)


def test_nbytes_and_itemsize():
    assert enp.zeros((2, 3)).nbytes == 24
    assert arr([1, 2, 3], np.int8).nbytes == 3
    assert arr([1, 2], np.complex64).nbytes == 16
    assert enp.zeros((0,)).nbytes == 0
    assert arr([1], np.int16).itemsize == 2


def test_transposes():
    source = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = enp.asarray(source)
    assert_same(x.T, source.T)
    assert_same(x.mT, np.swapaxes(source, -1, -2))
    assert_same(enp.asarray(source[0]).T, source[0].T)
    assert_same(enp.asarray([1.0, 2.0]).T, np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError):
        _ = enp.asarray([1.0, 2.0]).mT


def test_device():
    x = enp.asarray([1.0])
    assert x.device == ember.devices()[0]
    assert x.device.platform == "cpu"
    assert str(x.device) == "cpu:0"
    assert x.devices() == {x.device}
    assert x.block_until_ready() is x


def test_devices():
    devices = ember.devices()
    assert isinstance(devices, list) and devices
    assert all(isinstance(d, ember.Device) for d in devices)
    assert any(d.platform == "cpu" for d in devices)
    assert ember.devices("cpu") == [d for d in devices if d.platform == "cpu"]
    with pytest.raises(ember.errors.DeviceError, match="unknown platform 'no-such-platform'"):
        ember.devices("no-such-platform")


def test_array_namespace():
    x = enp.asarray([1.0])
    assert x.__array_namespace__() is enp
    assert x.__array_namespace__(api_version="2023.12") is enp


def test_weak_type():
    assert enp.asarray(1.0).weak_type is True
    assert enp.asarray(1).weak_type is True
    assert enp.asarray(True).weak_type is False
    assert enp.asarray([1.0]).weak_type is False
    assert enp.asarray(np.float32(1.0)).weak_type is False
    x = arr([1.0, 2.0], np.float32)
    assert (x * 2.0).weak_type is False
    assert (enp.asarray(2.0) * 3.0).weak_type is True


@pytest.mark.parametrize(
    "source, dtype",
    [(np.array([1.7, -1.7], np.float32), np.int32), (np.array([1, 0, 2], np.int32), np.bool_),
     (np.array([1, 2], np.int32), np.float16), (np.array([1.5, 2.5], np.float32), np.complex64),
     (np.array([3, 250], np.int32), np.uint8), (np.array([1.5], np.float32), BF16)],
)
def test_astype(source, dtype):
    got = enp.asarray(source).astype(dtype)
    assert_same(got, source.astype(dtype), dtype=dtype)
    assert got.weak_type is False


def test_astype_64_bit_follows_x64():
    x = enp.asarray([1.5])
    with pytest.warns(UserWarning, match="enable_x64"):  # as JAX: an explicit 64-bit request warns while x64 is off
        assert x.astype(np.float64).dtype == np.float32
    with ember.config.x64(True):
        assert x.astype(np.float64).dtype == np.float64
        assert x.astype("int64").dtype == np.int64


def test_real_and_imag():
    source = np.array([1 + 2j, -3.5 - 0.5j], np.complex64)
    z = enp.asarray(source)
    assert_same(z.real, source.real)
    assert_same(z.imag, source.imag)
    real = np.array([1.0, -2.0], np.float32)
    assert_same(enp.asarray(real).real, real)
    assert_same(enp.asarray(real).imag, np.zeros(2, np.float32))


def test_pickle_round_trip():
    for x in (arr([[1, 2], [3, 4]], np.int16), enp.asarray([1.5 + 2j]), enp.asarray(2.0), arr([1.0], BF16)):
        y = pickle.loads(pickle.dumps(x))
        assert isinstance(y, ember.Array)
        assert (y.shape, y.dtype, y.weak_type) == (x.shape, x.dtype, x.weak_type)
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    y = copy.deepcopy(enp.asarray([1.0, 2.0]))
    assert y.tolist() == [1.0, 2.0]
    assert copy.copy(enp.asarray([3.0])).tolist() == [3.0]


# --- x64 rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, want32, want64",
    [(np.arange(3.0), np.float32, np.float64), (np.arange(3), np.int32, np.int64),
     (np.arange(3, dtype=np.uint64), np.uint32, np.uint64),
     (np.array([1 + 1j]), np.complex64, np.complex128), (np.float64(1.5), np.float32, np.float64),
     (np.arange(3, dtype=np.int8), np.int8, np.int8), (np.arange(3, dtype=np.float16), np.float16, np.float16)],
)
def test_x64_canonicalisation_of_numpy_inputs(source, want32, want64):
    assert ember.config.enable_x64 is False
    x = enp.asarray(source)
    assert x.dtype == want32 and x.weak_type is False
    np.testing.assert_array_equal(np.asarray(x), np.asarray(source).astype(want32))
    with ember.config.x64(True):
        y = enp.asarray(source)
        assert y.dtype == want64
        np.testing.assert_array_equal(np.asarray(y), np.asarray(source))
    assert ember.config.enable_x64 is False


def test_x64_default_dtypes_of_python_scalars():
    assert enp.asarray(1.0).dtype == np.float32 and enp.asarray(1).dtype == np.int32
    assert enp.asarray(1j).dtype == np.complex64
    assert enp.asarray([1.0, 2.0]).dtype == np.float32
    with ember.config.x64(True):
        assert enp.asarray(1.0).dtype == np.float64 and enp.asarray(1).dtype == np.int64
        assert enp.asarray(1j).dtype == np.complex128
        assert enp.asarray([1, 2]).dtype == np.int64


def test_x64_config_update():
    assert ember.config.enable_x64 is False
    try:
        ember.config.update("enable_x64", True)
        assert ember.config.enable_x64 is True
        x = enp.asarray(np.array([1.0, 2.0]))
        assert x.dtype == np.float64
        assert (x * 2).dtype == np.float64
        big = enp.asarray(np.array([2**40]))
        assert big.dtype == np.int64 and big.tolist() == [2**40]
    finally:
        ember.config.update("enable_x64", False)
    assert ember.config.enable_x64 is False
    assert enp.asarray(np.array([1.0])).dtype == np.float32


def test_x64_context_restores_on_error():
    with pytest.raises(RuntimeError), ember.config.x64(True):
        raise RuntimeError("boom")
    assert ember.config.enable_x64 is False


def test_config_errors():
    with pytest.raises(AttributeError):
        ember.config.update("no_such_option", True)
    with pytest.raises(TypeError):
        ember.config.update("enable_x64", "yes")
    with pytest.raises(AttributeError):
        ember.config.enable_x64 = True


def test_x64_off_out_of_range_ints_raise_instead_of_wrapping():
    # Issue 14: int64 values outside int32's range used to wrap around silently (2**40 -> 0); values
    # in range still convert.
    source = np.array([2**31 + 1, -5], dtype=np.int64)
    with pytest.raises(ember.errors.EmberOverflowError, match="enable_x64"):
        enp.asarray(source)
    np.testing.assert_array_equal(np.asarray(enp.asarray(np.array([2**31 - 1, -5]))), [2**31 - 1, -5])


# --- weak Python scalars -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.complex64])
@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.sub, operator.truediv])
def test_python_float_keeps_inexact_dtype(dtype, op):
    x = arr([1.0, 2.0, 4.0], dtype)
    for got in (op(x, 2.0), op(2.0, x)):
        assert got.dtype == np.dtype(dtype) and got.weak_type is False
    want = op(np.asarray([1.0, 2.0, 4.0], np.float64), 2.0)
    assert_same(op(x, 2.0), want, dtype=dtype)
    assert_same(op(2.0, x), op(2.0, np.asarray([1.0, 2.0, 4.0], np.float64)), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32, np.float16, np.float32])
def test_python_int_keeps_dtype(dtype):
    source = np.array([1, 2, 3], dtype=dtype)
    x = enp.asarray(source)
    assert_same(x + 1, source + 1)
    assert_same(2 * x, 2 * source)
    assert_same(x - 1, source - 1)


def test_python_float_with_int_array_gives_default_float():
    x = arr([1, 2], np.int8)
    assert_same(x * 0.5, np.array([0.5, 1.0], np.float32))
    with ember.config.x64(True):
        assert (x * 0.5).dtype == np.float64


def test_python_bool_with_arrays():
    x = arr([1, 2], np.int8)
    assert_same(x + True, np.array([2, 3], np.int8))
    b = enp.asarray([True, False])
    assert_same(b & True, np.array([True, False]))
    assert_same(b | False, np.array([True, False]))


def test_int8_plus_1000_wraps_like_jax():
    # The project follows JAX (see tests/test_promotion.py): a Python int that fits the
    # default int dtype is accepted and then cast to int8 with wrapping (1000 -> -24).
    x = arr([1, 2], np.int8)
    assert_same(x + 1000, np.array([1 - 24, 2 - 24], np.int8))


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**40])
def test_python_int_beyond_the_default_int_raises_overflow(value):
    x = arr([1, 2], np.int8)
    for thunk in (lambda: x + value, lambda: value + x, lambda: x * value, lambda: enp.asarray(value)):
        with pytest.raises(OverflowError) as info:
            thunk()
        assert isinstance(info.value, EmberError)
        assert str(value) in str(info.value)
        assert "int32" in str(info.value)


def test_python_int_beyond_int32_is_fine_with_x64():
    with ember.config.x64(True):
        x = arr([1, 2], np.int64)
        assert (x + 2**40).tolist() == [2**40 + 1, 2**40 + 2]
        with pytest.raises(OverflowError):
            x + 2**64

@pytest.mark.parametrize("data", [[2**64], [1, 2**70], [[1], [-(2**63) - 1]]])
def test_a_list_holding_an_int_beyond_64_bits_raises_overflow(data):
    # NumPy makes an object array of such a list; the error says what is wrong, not "dtype object".
    for x64 in (False, True):
        with ember.config.x64(x64), pytest.raises(OverflowError, match="too large for any ember integer") as info:
            enp.asarray(data)
        assert isinstance(info.value, EmberError)



def test_complex_scalar_with_real_array():
    x = arr([1.0, 2.0], np.float32)
    got = x * 1j
    assert_same(got, np.array([1j, 2j], np.complex64))


# --- operators vs NumPy ----------------------------------------------------------------------


ARITH_VALUES = {
    "x": [-7, -3, 0, 1, 4, 9],
    "y": [2, -2, 3, 5, -4, 3],  # no zeros: integer division stays defined
}


def _pair(dtype):
    x = np.array(ARITH_VALUES["x"])
    y = np.array(ARITH_VALUES["y"])
    if np.dtype(dtype).kind == "u":
        x, y = np.abs(x), np.abs(y)
    if np.dtype(dtype).kind == "c":
        return (x + 0.5j * y).astype(dtype), (y - 0.25j * x).astype(dtype)
    if np.dtype(dtype).kind == "f":
        return (x * 0.75).astype(dtype), (y * 1.25).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return np.array([True, True, False, False, True, False]), np.array([True, False, True, False, False, True])
    return x.astype(dtype), y.astype(dtype)


ARITH_DTYPES = [np.int8, np.int32, np.uint8, np.uint32, np.float16, np.float32, np.complex64]


def _dtype_id(d):
    return np.dtype(d).name


@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=_dtype_id)
@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul], ids=lambda f: f.__name__)
def test_arithmetic_operators(op, dtype):
    a, b = _pair(dtype)
    assert_same(op(enp.asarray(a), enp.asarray(b)), op(a, b))


@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=_dtype_id)
def test_true_divide_operator(dtype):
    a, b = _pair(dtype)
    want = a / b
    # JAX semantics: integer / integer gives the default float dtype (float32), not NumPy's float64.
    dtype_out = want.dtype if np.dtype(dtype).kind in "fc" else np.float32
    assert_same(enp.asarray(a) / enp.asarray(b), want, dtype=dtype_out)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32, np.float16, np.float32], ids=_dtype_id)
@pytest.mark.parametrize("op", [operator.floordiv, operator.mod], ids=lambda f: f.__name__)
def test_floordiv_and_mod_operators(op, dtype):
    a, b = _pair(dtype)
    assert_same(op(enp.asarray(a), enp.asarray(b)), op(a, b))
    q, r = divmod(enp.asarray(a), enp.asarray(b))
    assert_same(q, a // b)
    assert_same(r, a % b)


def test_float_floordiv_and_mod_edge_cases():
    a = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 1.0, np.inf], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, np.inf, 2.0], np.float32)
    with np.errstate(all="ignore"):
        want_q, want_r = a // b, a % b
    got_q, got_r = enp.asarray(a) // enp.asarray(b), enp.asarray(a) % enp.asarray(b)
    np.testing.assert_array_equal(np.asarray(got_q), want_q)
    np.testing.assert_array_equal(np.asarray(got_r), want_r)
    np.testing.assert_array_equal(np.signbit(np.asarray(got_r)), np.signbit(want_r))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.float32, np.complex64], ids=_dtype_id)
def test_pow_operator(dtype):
    a, _ = _pair(dtype)
    b = np.array([0, 1, 2, 3, 2, 1]).astype(dtype)
    assert_same(enp.asarray(a) ** enp.asarray(b), a**b)
    assert_same(enp.asarray(a) ** 2, a**2)
    assert_same(enp.asarray(a) ** 0, a**0)


def test_pow_operator_float_exponents():
    a = np.array([0.5, 1.0, 2.0, 9.0], np.float32)
    assert_same(enp.asarray(a) ** 0.5, a**0.5)
    assert_same(enp.asarray(a) ** -1, a**-1.0)
    assert_same(2.0 ** enp.asarray(a), 2.0**a)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint8, np.uint16], ids=_dtype_id)
@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor], ids=lambda f: f.__name__)
def test_bitwise_operators(op, dtype):
    a, b = _pair(dtype)
    assert_same(op(enp.asarray(a), enp.asarray(b)), op(a, b))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32], ids=_dtype_id)
@pytest.mark.parametrize("op", [operator.lshift, operator.rshift], ids=lambda f: f.__name__)
def test_shift_operators(op, dtype):
    a = np.array([1, 3, -8, 100, -1, 5]).astype(dtype)
    s = np.array([0, 1, 2, 3, 1, 4]).astype(dtype)
    assert_same(op(enp.asarray(a), enp.asarray(s)), op(a, s))
    assert_same(op(enp.asarray(a), 1), op(a, 1))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint8, np.float16, np.float32, np.complex64],
                         ids=_dtype_id)
@pytest.mark.parametrize(
    "op", [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne], ids=lambda f: f.__name__
)
def test_comparison_operators(op, dtype):
    a, b = _pair(dtype)
    b = b.copy()
    b[3] = a[3]  # one tie
    assert_same(op(enp.asarray(a), enp.asarray(b)), op(a, b))
    assert_same(op(enp.asarray(a), a[3].item()), op(a, a[3]))


def test_comparisons_with_nan():
    a = np.array([1.0, np.nan, np.nan], np.float32)
    b = np.array([np.nan, 1.0, np.nan], np.float32)
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        assert_same(op(enp.asarray(a), enp.asarray(b)), op(a, b))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float16, np.float32, np.complex64], ids=_dtype_id)
def test_unary_operators(dtype):
    a, _ = _pair(dtype)
    x = enp.asarray(a)
    assert_same(-x, -a)
    assert_same(+x, +a)
    assert_same(abs(x), np.abs(a))
    if np.dtype(dtype).kind in "iu":
        assert_same(~x, ~a)


def test_unary_operators_bool_and_unsigned():
    b = np.array([True, False])
    assert_same(~enp.asarray(b), ~b)
    assert_same(abs(enp.asarray(b)), np.abs(b))
    u = np.array([0, 1, 255], np.uint8)
    assert_same(abs(enp.asarray(u)), np.abs(u))
    assert_same(~enp.asarray(u), ~u)
    assert_same(-enp.asarray(u), -u)


def test_unary_minus_and_plus_of_bool_raise_type_error():
    with pytest.raises(TypeError):
        -enp.asarray([True])
    with pytest.raises(TypeError):
        +enp.asarray([True])


def test_int_overflow_wraps_like_numpy():
    a = np.array([127, -128], np.int8)
    assert_same(enp.asarray(a) + enp.asarray(np.array([1, -1], np.int8)), np.array([-128, 127], np.int8))
    assert_same(-enp.asarray(a), -a)
    assert_same(abs(enp.asarray(a)), np.abs(a))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.complex64, np.float16], ids=_dtype_id)
def test_matmul_operator(dtype):
    rng = np.random.default_rng(0)
    a = (rng.integers(-3, 4, size=(2, 3))).astype(dtype)
    b = (rng.integers(-3, 4, size=(3, 4))).astype(dtype)
    v = (rng.integers(-3, 4, size=(3,))).astype(dtype)
    assert_same(enp.asarray(a) @ enp.asarray(b), a @ b)
    assert_same(enp.asarray(a) @ enp.asarray(v), a @ v)
    assert_same(enp.asarray(v) @ enp.asarray(b), v @ b)
    assert_same(enp.asarray(v) @ enp.asarray(v), v @ v)
    batch = (rng.integers(-3, 4, size=(5, 2, 3))).astype(dtype)
    assert_same(enp.asarray(batch) @ enp.asarray(b), batch @ b)
    assert_same(a @ enp.asarray(b), a @ b)  # NumPy array on the left


# --- reflected operators ------------------------------------------------------------------------

REFLECTED = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
]


def _applicable(op, dtype) -> bool:
    kind = np.dtype(dtype).kind
    if op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
        return kind in "iu"
    if op in (operator.floordiv, operator.mod):
        return kind != "c"
    return True


def _op_dtype_params(ops, dtypes) -> list:
    return [
        pytest.param(op, d, id=f"{op.__name__}-{np.dtype(d).name}") for op in ops for d in dtypes if _applicable(op, d)
    ]


@pytest.mark.parametrize(
    "op, dtype", _op_dtype_params(REFLECTED, [np.int8, np.int32, np.uint8, np.float32, np.complex64])
)
def test_reflected_with_python_int(op, dtype):
    _, b = _pair(dtype)
    if op is operator.pow:
        b = np.array([0, 1, 2, 3, 2, 1]).astype(dtype)
    if op in (operator.lshift, operator.rshift):
        b = np.array([0, 1, 2, 3, 1, 4]).astype(dtype)
    scalar = 3
    want = op(scalar, b)
    want_dtype = np.float32 if op is operator.truediv and np.dtype(dtype).kind in "iu" else dtype
    assert_same(op(scalar, enp.asarray(b)), want, dtype=want_dtype)
    assert_same(op(enp.asarray(b), scalar), op(b, scalar), dtype=want_dtype)


@pytest.mark.parametrize("op, dtype", _op_dtype_params(
    [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow],
    [np.float16, np.float32, np.complex64]))
def test_reflected_with_python_float(op, dtype):
    _, b = _pair(dtype)
    if op is operator.pow:
        b = np.array([0.0, 1.0, 2.0, 0.5, -1.0, 1.5]).astype(dtype)
    want = op(1.5, b)
    assert_same(op(1.5, enp.asarray(b)), want, dtype=dtype)


@pytest.mark.parametrize(
    "op, dtype", _op_dtype_params(REFLECTED, [np.int8, np.int32, np.uint8, np.float16, np.float32, np.complex64])
)
def test_reflected_with_numpy_array_on_the_left(op, dtype):
    a, b = _pair(dtype)
    if op is operator.pow:
        b = np.array([0, 1, 2, 3, 2, 1]).astype(dtype)
    if op in (operator.lshift, operator.rshift):
        b = np.array([0, 1, 2, 3, 1, 4]).astype(dtype)
    got = op(a, enp.asarray(b))
    assert isinstance(got, ember.Array)
    want = op(a, b)
    want_dtype = np.float32 if op is operator.truediv and np.dtype(dtype).kind in "iu" else dtype
    assert_same(got, want, dtype=want_dtype)


def test_reflected_comparisons_with_numpy_and_python():
    a = np.array([1, 2, 3], np.int32)
    x = enp.asarray(np.array([3, 2, 1], np.int32))
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        got = op(a, x)
        assert isinstance(got, ember.Array)
        assert_same(got, op(a, np.asarray(x)))
        assert_same(op(2, x), op(2, np.array([3, 2, 1], np.int32)))


def test_numpy_scalar_on_the_left():
    x = enp.asarray(np.array([1.0, 2.0], np.float32))
    got = np.float32(2.0) * x
    assert isinstance(got, ember.Array)
    assert_same(got, np.array([2.0, 4.0], np.float32))


def test_list_operands():
    x = enp.asarray(np.array([1.0, 2.0], np.float32))
    assert_same(x + [1.0, 1.0], np.array([2.0, 3.0], np.float32))
    assert_same([10.0, 20.0] - x, np.array([9.0, 18.0], np.float32))


def test_broadcasting_operators():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    c = np.array([[10.0], [20.0]], np.float32)
    assert_same(enp.asarray(a) + enp.asarray(b), a + b)
    assert_same(enp.asarray(b) * enp.asarray(c), b * c)
    assert_same(enp.asarray(a) - enp.asarray(np.float32(1.0)), a - 1)
    assert_same(enp.zeros((0, 3)) + enp.asarray(b), np.zeros((0, 3), np.float32) + b)


def test_mixed_dtype_operators_promote_like_jax():
    i8 = arr([1, 2], np.int8)
    u8 = arr([1, 2], np.uint8)
    f16 = arr([1, 2], np.float16)
    assert (i8 + u8).dtype == np.int16
    assert (i8 * f16).dtype == np.float16
    assert (u8 + arr([1, 2], np.int32)).dtype == np.int32
    assert (f16 + arr([1, 2], BF16)).dtype == np.float32


def test_operators_with_0d_arrays_keep_0d():
    x = enp.asarray(np.float32(3.0))
    y = x * x + 1
    assert y.shape == () and y.dtype == np.float32 and float(y) == 10.0


# --- NotImplemented for unrelated objects ------------------------------------------------------------


class _Unrelated:
    pass


@pytest.mark.parametrize(
    "other", ["a", b"a", _Unrelated(), None, {1: 2}], ids=["str", "bytes", "object", "None", "dict"]
)
@pytest.mark.parametrize(
    "op",
    [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
     operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
     operator.lt, operator.le, operator.gt, operator.ge],
    ids=lambda f: f.__name__,
)
def test_unrelated_objects_raise_type_error(op, other):
    x = enp.asarray([1, 2])
    with pytest.raises(TypeError):
        op(x, other)
    if op is operator.mod and isinstance(other, (str, bytes)):
        return  # `"a" % x` is Python's string formatting, which treats x as a mapping
    with pytest.raises(TypeError):
        op(other, x)


def test_forward_operators_return_not_implemented_for_unrelated_objects():
    x = enp.asarray([1.0])
    assert x.__add__("a") is NotImplemented
    assert x.__radd__(_Unrelated()) is NotImplemented
    assert x.__mul__(None) is NotImplemented
    assert x.__lt__(object()) is NotImplemented


def test_unrelated_object_can_take_over_with_reflected_operator():
    class Other:
        def __radd__(self, other):
            return "other.__radd__"

        def __rmatmul__(self, other):
            return "other.__rmatmul__"

    x = enp.asarray([1.0])
    assert x + Other() == "other.__radd__"
    assert x @ Other() == "other.__rmatmul__"


def test_equality_with_unrelated_objects_is_false():
    # As in JAX: == falls back to Python's identity comparison.
    x = enp.asarray([1.0])
    assert (x == "a") is False
    assert operator.ne(x, None) is True


def test_operator_errors_are_ember_errors():
    with pytest.raises(TypeError) as info:
        enp.asarray([1.5]) & enp.asarray([1.0])
    assert isinstance(info.value, DTypeError)
    with pytest.raises(ValueError) as info:
        enp.zeros((2, 3)) + enp.zeros((4,))
    assert isinstance(info.value, EmberError)
    assert "(2, 3)" in str(info.value) and "(4,)" in str(info.value)
    with pytest.raises(ValueError) as info:
        enp.zeros((2, 3)) @ enp.zeros((2, 3))
    assert isinstance(info.value, EmberError)
