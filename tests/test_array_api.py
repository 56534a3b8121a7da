"""ember.numpy as the Python array API standard's namespace (2024.12), and ember.Array as its array.

The names come from the standard's own specification data, vendored in
tests/data/array_api_2024_12_names.txt (its header names the source files and
commits). Elementwise special values (signed zeros, infinities, NaN, the
boundaries the standard names) are checked against NumPy, which ember follows
where the standard differs (ember/numpy/_array_api.py lists the differences).
"""

from __future__ import annotations

import copy
import inspect
import itertools
import math
import operator
import pathlib
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import ConcretizationError, DTypeError, EmberError, EmberOverflowError, InvalidArgumentError
from ember.errors import DeviceError

_NAMES_FILE = pathlib.Path(__file__).parent / "data" / "array_api_2024_12_names.txt"


def _spec_names() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in _NAMES_FILE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line[1:-1], [])
        else:
            current.append(line)
    return sections


SPEC = _spec_names()


def _holder(section: str):
    return {"namespace": enp, "array": ember.Array, "info": enp.__array_namespace_info__(),
            "linalg": enp.linalg, "fft": enp.fft}[section]  # fmt: skip


# --- every name of the standard ----------------------------------------------------------------------------


def test_the_names_file_is_the_standard():
    # Spot checks that the vendored data is whole: the sections and some names of each.
    assert set(SPEC) == {"namespace", "array", "info", "linalg", "fft"}
    assert len(SPEC["namespace"]) > 150 and {"unique_all", "cumulative_prod", "nextafter", "from_dlpack"} <= set(SPEC["namespace"])
    assert {"__dlpack__", "to_device", "mT", "__rmatmul__"} <= set(SPEC["array"])
    assert len(SPEC["linalg"]) == 23 and len(SPEC["fft"]) == 14


@pytest.mark.parametrize("section", ["namespace", "array", "info", "linalg", "fft"])
def test_every_name_of_the_standard_exists(section):
    holder = _holder(section)
    missing = [name for name in SPEC[section] if not hasattr(holder, name)]
    assert not missing, f"array API 2024.12 names missing from {section}: {missing}"


def test_functions_are_callable_and_constants_are_the_standards():
    constants = {"e": math.e, "inf": math.inf, "nan": math.nan, "pi": math.pi, "newaxis": None,
                 "__array_api_version__": "2024.12"}  # fmt: skip
    dtype_names = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float32", "float64", "complex64", "complex128"}  # fmt: skip
    for name in SPEC["namespace"]:
        value = getattr(enp, name)
        if name in constants:
            want = constants[name]
            assert value is want or value == want or (want != want and value != value), name
        elif name in dtype_names:
            assert np.dtype(value) == np.dtype(name), name
        else:
            assert callable(value), name


def test_array_namespace():
    x = enp.ones(3)
    assert x.__array_namespace__() is enp
    assert x.__array_namespace__(api_version="2024.12") is enp
    assert x.__array_namespace__(api_version="2023.12") is enp
    with pytest.raises(InvalidArgumentError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")


# --- inspection: the truth about 64-bit mode ----------------------------------------------------------------------

_SIXTY_FOUR = {"float64", "int64", "uint64", "complex128"}


@pytest.mark.parametrize("x64", [False, True])
def test_namespace_info_tells_the_truth_about_x64(x64):
    info = enp.__array_namespace_info__()
    with ember.config.x64(x64):
        names = set(info.dtypes())
        assert (names & _SIXTY_FOUR == _SIXTY_FOUR) if x64 else not names & _SIXTY_FOUR
        assert names >= {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "complex64"}
        # every listed dtype really is stored as itself
        for name, dtype in info.dtypes().items():
            assert dtype == np.dtype(name)
            assert enp.zeros(2, dtype=dtype).dtype == dtype
        defaults = info.default_dtypes()
        bits = 64 if x64 else 32
        assert defaults == {"real floating": np.dtype(f"float{bits}"), "complex floating": np.dtype(f"complex{2 * bits}"),
                            "integral": np.dtype(f"int{bits}"), "indexing": np.dtype(f"int{bits}")}  # fmt: skip
        assert enp.asarray(1.0).dtype == defaults["real floating"] and enp.asarray(1).dtype == defaults["integral"]
        assert enp.argmax(enp.ones(3)).dtype == defaults["indexing"]
        assert info.default_dtypes(device=info.default_device()) == defaults


def test_namespace_info_kinds_devices_capabilities():
    info = enp.__array_namespace_info__()
    with ember.config.x64(True):
        assert list(info.dtypes(kind="real floating")) == ["float32", "float64"]
        assert list(info.dtypes(kind="bool")) == ["bool"]
        assert set(info.dtypes(kind=("signed integer", "complex floating"))) == {"int8", "int16", "int32", "int64", "complex64", "complex128"}
        assert set(info.dtypes(kind="numeric")) == set(info.dtypes()) - {"bool"}
        assert set(info.dtypes(kind="integral")) == set(info.dtypes(kind=("signed integer", "unsigned integer")))
    with pytest.raises(InvalidArgumentError, match="unknown kind"):
        info.dtypes(kind="floating")
    assert info.devices() == ember.devices() and info.default_device() in info.devices()
    assert enp.ones(2).device == info.default_device()
    caps = info.capabilities()
    assert caps == {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}
    with pytest.raises(DeviceError, match="dtypes: 'tpu:3' does not name a device"):
        info.dtypes(device="tpu:3")


# --- data type functions -----------------------------------------------------------------------------------------

_KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating", "numeric"]
_STANDARD_DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                          "uint64", "float16", "float32", "float64", "complex64", "complex128")]  # fmt: skip


def test_isdtype_agrees_with_numpy():
    for dtype, kind in itertools.product(_STANDARD_DTYPES, _KINDS + [np.dtype("float32"), ("bool", "complex floating")]):
        assert enp.isdtype(dtype, kind) == np.isdtype(dtype, kind), (dtype, kind)
    assert enp.isdtype(enp.bfloat16, "real floating") and not enp.isdtype(enp.bfloat16, "integral")  # an extension
    with pytest.raises(InvalidArgumentError, match="unknown kind"):
        enp.isdtype(enp.float32, "floating")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_finfo_has_the_standards_fields(dtype):
    got, want = enp.finfo(dtype), np.finfo(dtype)
    for field in ("bits", "eps", "max", "min", "smallest_normal", "dtype"):
        assert getattr(got, field) == getattr(want, field), field
    assert got.dtype == np.dtype(dtype.replace("complex64", "float32").replace("complex128", "float64"))
    with ember.config.x64(True):
        assert enp.finfo(enp.zeros(2, dtype)).bits == want.bits  # an array works too
    assert enp.finfo(enp.bfloat16).bits == 16 and enp.finfo(enp.bfloat16).eps == float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)
    with pytest.raises(DTypeError, match="iinfo"):
        enp.finfo("int32")


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_iinfo_has_the_standards_fields(dtype):
    got, want = enp.iinfo(dtype), np.iinfo(dtype)
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(got, field) == getattr(want, field), field
    assert enp.iinfo(enp.zeros(2, "int8")).max == 127
    with pytest.raises(DTypeError, match="finfo"):
        enp.iinfo("float32")


def test_can_cast_and_result_type_take_arrays_and_scalars():
    assert enp.can_cast(enp.zeros(2, "int8"), enp.int16) and not enp.can_cast(enp.zeros(2), enp.int32)
    assert enp.result_type(enp.zeros(2, "int8"), 1) == np.int8
    assert enp.result_type(enp.zeros(2, "float32"), 1.0, enp.int8) == np.float32


# --- dtype objects: functions that make ember arrays ----------------------------------------------------------------

_CONSTRUCTORS = ["bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "bfloat16", "float32", "float64", "complex64", "complex128", "float_", "complex_", "int_", "uint"]  # fmt: skip


@pytest.mark.parametrize("name", _CONSTRUCTORS)
def test_dtype_constructors_return_ember_arrays(name):
    scalar_type = getattr(enp, name)
    with ember.config.x64(True):
        x = scalar_type(1)
        assert isinstance(x, ember.Array) and x.shape == () and x.dtype == np.dtype(scalar_type)
        assert scalar_type([1, 0]).shape == (2,)
    # with x64 off: the 32-bit counterpart, and a warning naming enable_x64 for a 64-bit type (as JAX)
    wide = scalar_type.dtype.name in _SIXTY_FOUR
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = scalar_type(2)
    narrow = {np.dtype("int64"): np.int32, np.dtype("uint64"): np.uint32, np.dtype("float64"): np.float32,
              np.dtype("complex128"): np.complex64}.get(scalar_type.dtype, scalar_type.dtype)  # fmt: skip
    assert isinstance(y, ember.Array) and y.dtype == narrow and complex(y) == (1 if y.dtype == np.bool_ else 2)
    assert [str(w.message) for w in caught if "enable_x64" in str(w.message)] if wide else not caught
    # still a dtype wherever NumPy takes one
    assert np.dtype(scalar_type) == np.dtype(scalar_type.dtype)
    assert np.zeros(1, scalar_type).dtype == scalar_type.dtype and scalar_type == scalar_type.dtype.type
    assert isinstance(scalar_type.dtype.type(0), scalar_type)


def test_complex128_with_x64_off_is_complex64_and_warns_as_jax():
    with pytest.warns(UserWarning, match="enable_x64"):
        x = enp.complex128(-1.5)
    assert isinstance(x, ember.Array) and x.dtype == np.complex64 and complex(x) == -1.5
    with ember.config.x64(True), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enp.complex128(-1.5).dtype == np.complex128


def test_explicit_64_bit_dtype_with_x64_off_warns_once_naming_enable_x64():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's default: once per line of user code
        for _ in range(3):
            x = enp.asarray([1.0], dtype="float64")
    assert x.dtype == np.float32
    assert len(caught) == 1 and "enable_x64" in str(caught[0].message) and "float64" in str(caught[0].message)
    assert caught[0].filename == __file__  # attributed to the caller, not to ember's internals
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enp.asarray([1.0], dtype=float)  # Python's float means the default float: no warning (as JAX)
        enp.asarray(np.ones(2))  # converting a float64 NumPy array is not an explicit request
        with ember.config.x64(True):
            assert enp.asarray([1.0], dtype="float64").dtype == np.float64
    with pytest.warns(UserWarning, match="zeros: .*int64.*enable_x64"):
        enp.zeros(2, dtype=enp.int64)


# --- out-of-range integers: an error, with a hint that is right -----------------------------------------------------


def test_out_of_range_int64_array_raises_instead_of_wrapping():
    with pytest.raises(EmberOverflowError, match="enable_x64") as info:
        enp.asarray(np.array([2**40]))
    assert "pass a NumPy array" not in str(info.value)
    with pytest.raises(EmberOverflowError, match="enable_x64"):
        enp.asarray([1, 2**40])
    with pytest.raises(EmberOverflowError):
        enp.asarray(np.array([2**33], dtype=np.uint64))
    with ember.config.x64(True):
        assert int(enp.asarray(np.array([2**40]))[0]) == 2**40
    # the bounds themselves fit, one past them does not: small arrays (checked in Python) and large ones (NumPy)
    for n in (3, 100):
        for source, target in ((np.int64, np.int32), (np.uint64, np.uint32)):
            info = np.iinfo(target)
            edges = np.resize(np.array([info.min, info.max], source), n)
            assert np.asarray(enp.asarray(edges)).tolist() == edges.tolist()
            for bad in [info.max + 1] + ([info.min - 1] if info.min else []):
                with pytest.raises(EmberOverflowError, match=f"holding {bad} does not fit {np.dtype(target)}"):
                    enp.asarray(np.append(edges[:-1], np.array(bad, source)))


def test_python_int_overflow_hint_is_right():
    with pytest.raises(EmberOverflowError, match="enable_x64") as info:
        enp.asarray(2**40)
    assert "pass a NumPy array" not in str(info.value)
    # the hint for a value that fits uint32 works as it says
    with pytest.raises(EmberOverflowError, match="uint32"):
        enp.asarray(3_000_000_000)
    assert int(enp.asarray(3_000_000_000, dtype="uint32")) == 3_000_000_000
    with pytest.raises(EmberOverflowError, match="does not fit int8"):
        enp.asarray(300, dtype="int8")
    # a float dtype takes any Python int a Python float holds: rounded, or inf beyond the dtype's range
    for dtype in ("float16", "bfloat16", "float32", "complex64"):
        want = np.asarray(float(2**70)).astype(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no RuntimeWarning from ember's own cast
            got = enp.asarray(2**70, dtype=dtype)
        assert got.dtype == dtype and not got.weak_type and np.asarray(got).tolist() == want.tolist()
    with pytest.raises(EmberOverflowError, match="Python int of 401 digits is too large for float32"):
        enp.asarray(10**400, dtype="float32")


# --- astype and asarray(copy=) ------------------------------------------------------------------------------------------


def test_astype_follows_the_standard():
    x = enp.asarray([1.7, -2.5, 0.0])
    assert enp.astype(x, enp.int32).tolist() == np.astype(np.asarray(x), np.int32).tolist()
    assert enp.astype(x, "bool").tolist() == [True, True, False]
    same = enp.astype(x, enp.float32, copy=False)
    assert same is x
    fresh = enp.astype(x, enp.float32)  # copy=True is the default
    assert fresh is not x and fresh.tolist() == x.tolist()
    assert x.astype("float32") is x  # the method keeps JAX's default copy=False
    assert enp.astype(enp.asarray([1 + 2j]), enp.float32).tolist() == [1.0]  # NumPy's rule: the real part
    z = np.array([0j, 1j, 1 + 0j, -0.0 - 0j, complex(np.nan, 0)], np.complex64)
    for got in (enp.astype(enp.asarray(z), bool), enp.asarray(z).astype(bool), enp.astype(enp.asarray(1j), bool)):
        assert not got.weak_type and got.tolist() == np.asarray(z if got.ndim else 1j).astype(bool).tolist()
    assert enp.astype(x, enp.float32, device=enp.__array_namespace_info__().default_device()).dtype == np.float32
    with pytest.raises(DeviceError, match="cuda"):  # no CuPy here, or no GPU 7
        enp.astype(x, enp.float32, device="cuda:7")


def test_asarray_of_byte_swapped_numpy_data():
    # Big-endian data (files, network formats) holds the same numbers: converted to native order, as NumPy and JAX do.
    for dtype, values in ((">f4", [1.5, -2.0]), (">i8", [3, -4]), (">c8", [1 + 2j]), (">u2", [7, 65535])):
        source = np.array(values, dtype)
        got = enp.asarray(source)
        assert got.dtype == ember.core.dtypes.canonicalize(source.dtype.newbyteorder("=")) and got.tolist() == values
    with pytest.raises(InvalidArgumentError, match=r"copy=False.*dtype\('>f4'\) \(its byte order or type\)"):
        enp.asarray(np.ones(2, ">f4"), copy=False)


def test_asarray_copy_keyword():
    x = enp.asarray([1.0, 2.0])
    assert enp.asarray(x, copy=False) is x and enp.asarray(x) is x
    y = enp.asarray(x, copy=True)
    assert y is not x and y.tolist() == x.tolist()
    source = np.arange(3, dtype=np.float32)
    shared = enp.asarray(source, copy=False)
    source[0] = 7.0  # copy=False shares the buffer
    assert shared.tolist() == [7.0, 1.0, 2.0]
    copied = enp.asarray(source, copy=True)
    source[1] = 9.0
    assert copied.tolist() == [7.0, 1.0, 2.0] and enp.asarray(source).tolist() == [7.0, 9.0, 2.0]
    for needs_copy in ([1.0, 2.0], np.arange(3.0), 3.0):  # a list, a float64 array while x64 is off, a scalar
        with pytest.raises(InvalidArgumentError, match="copy"):
            enp.asarray(needs_copy, copy=False)
        with pytest.raises(ValueError):  # the standard's exception type
            enp.asarray(needs_copy, copy=False)
    with pytest.raises(InvalidArgumentError, match="copy"):
        enp.asarray(x, dtype="int32", copy=False)
    committed = enp.asarray(x, device="cpu")  # device= commits the array there (ember.device_put)
    assert committed.committed and not x.committed and enp.asarray(committed, device="cpu:0") is committed


def test_an_explicit_dtype_makes_a_weak_array_strong_whatever_copy_says():
    # As JAX's asarray/astype: the dtype was asked for, so it is not weak; copy= only decides about the buffer.
    weak = enp.asarray(2.0)
    assert weak.weak_type
    results = [enp.asarray(weak, dtype="float32", copy=c) for c in (None, False, True)]
    results += [enp.astype(weak, enp.float32, copy=c) for c in (False, True)] + [weak.astype("float32")]
    assert [r.weak_type for r in results] == [False] * 6
    assert all(r.dtype == np.float32 and float(r) == 2.0 for r in results)
    assert _address(enp.asarray(weak, dtype="float32", copy=False)) == _address(weak)  # no copy made


# --- set, statistical, searching and manipulation functions ------------------------------------------------------------


def _sorted_values(values):
    values = np.asarray(values)
    return np.sort(values)


def test_unique_functions_match_numpy():
    data = np.array([[3.0, 1.0, np.nan], [1.0, np.nan, -0.0], [0.0, 3.0, 2.0]], dtype=np.float32)
    x = enp.asarray(data)
    got = enp.unique_all(x)
    want = np.unique_all(data)
    np.testing.assert_array_equal(np.asarray(got.values), _sorted_values(want.values))
    assert got._fields == ("values", "indices", "inverse_indices", "counts")
    # NaNs are distinct: each counts once
    order = np.argsort(np.asarray(want.values), kind="stable")
    np.testing.assert_array_equal(np.asarray(got.counts), np.asarray(want.counts)[order])
    np.testing.assert_array_equal(np.asarray(got.values)[np.asarray(got.inverse_indices)][~np.isnan(data)], data[~np.isnan(data)])
    assert got.inverse_indices.shape == data.shape
    flat = data.ravel()
    np.testing.assert_array_equal(flat[np.asarray(got.indices)], np.asarray(got.values))
    counts = enp.unique_counts(x)
    np.testing.assert_array_equal(np.asarray(counts.counts), np.asarray(got.counts))
    inverse = enp.unique_inverse(x)
    np.testing.assert_array_equal(np.asarray(inverse.inverse_indices), np.asarray(got.inverse_indices))
    np.testing.assert_array_equal(np.asarray(enp.unique_values(x)), np.asarray(got.values))
    for out in (got.indices, got.inverse_indices, got.counts):
        assert out.dtype == enp.__array_namespace_info__().default_dtypes()["indexing"]


def test_unique_functions_take_a_static_size_under_jit_and_vmap():
    x = enp.asarray([3, 1, 3, 2, 1])
    fn = ember.jit(lambda v: enp.unique_all(v, size=5, fill_value=-1))
    out = fn(x)
    assert out.values.tolist() == [1, 2, 3, -1, -1] and out.counts.tolist() == [2, 1, 2, 0, 0]
    assert out.inverse_indices.tolist() == [2, 0, 2, 1, 0]
    assert ember.jit(lambda v: enp.unique_values(v, size=2))(x).tolist() == [1, 2]
    batched = ember.vmap(lambda v: enp.unique_counts(v, size=3, fill_value=0))(enp.asarray([[1, 1, 2], [5, 6, 7]]))
    assert batched.values.tolist() == [[1, 2, 0], [5, 6, 7]] and batched.counts.tolist() == [[2, 1, 0], [1, 1, 1]]
    with pytest.raises(ConcretizationError, match="size="):
        ember.jit(enp.unique_values)(x)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_functions_match_numpy(name):
    ours, theirs = getattr(enp, name), getattr(np, name)
    data = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16)
    for axis in (0, 1, -1):
        for include_initial in (False, True):
            got = ours(enp.asarray(data), axis=axis, include_initial=include_initial)
            want = theirs(data, axis=axis, include_initial=include_initial)
            np.testing.assert_array_equal(np.asarray(got), want)
            assert got.dtype == np.int32  # as cumsum: int16 accumulates in the default integer
    assert ours(enp.asarray([1.0, 2.0]), dtype=enp.float32, include_initial=True).shape == (3,)
    assert ours(enp.zeros((0,)), include_initial=True).tolist() == [0.0 if name == "cumulative_sum" else 1.0]
    with pytest.raises(InvalidArgumentError, match="axis is required"):
        ours(enp.asarray(data))
    with pytest.raises(ValueError):
        ours(enp.asarray(1.0))


def test_count_nonzero_matches_numpy():
    data = np.array([[0, 1, 2], [0, 0, 3]], dtype=np.float32)
    assert int(enp.count_nonzero(enp.asarray(data))) == np.count_nonzero(data)
    for axis in (0, 1, (0, 1), None):
        for keepdims in (False, True):
            got = enp.count_nonzero(enp.asarray(data), axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(np.asarray(got), np.count_nonzero(data, axis=axis, keepdims=keepdims))
            assert got.dtype == np.int32
    assert int(enp.count_nonzero(enp.asarray([0j, 1j, -0.0 + 0j]))) == 1
    assert int(enp.count_nonzero(enp.asarray([True, False, True]))) == 2


def test_standard_signatures_of_checked_functions():
    x = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], dtype=np.float32)
    ex = enp.asarray(x)
    # clip: keyword min/max (either may be left out), NaN in x propagates
    np.testing.assert_array_equal(np.asarray(enp.clip(ex, min=0.0)), np.clip(x, min=0.0))
    np.testing.assert_array_equal(np.asarray(enp.clip(ex, max=1.0)), np.clip(x, max=1.0))
    np.testing.assert_array_equal(np.asarray(enp.clip(ex, min=-1.0, max=1.0)), np.clip(x, min=-1.0, max=1.0))
    assert math.isnan(float(enp.clip(enp.asarray(np.nan), min=0.0, max=1.0)))
    # searchsorted: keyword side/sorter
    order = np.argsort(x[0])
    assert enp.searchsorted(enp.asarray(x[0][order]), enp.asarray([2.0]), side="right").tolist() == \
        np.searchsorted(x[0][order], [2.0], side="right").tolist()  # fmt: skip
    # take_along_axis: axis defaults to -1
    idx = np.argsort(x, axis=-1)
    np.testing.assert_array_equal(np.asarray(enp.take_along_axis(ex, enp.asarray(idx))), np.take_along_axis(x, idx, axis=-1))
    # diff: keyword axis/n/prepend/append
    np.testing.assert_array_equal(np.asarray(enp.diff(ex, axis=0, n=1)), np.diff(x, axis=0))
    np.testing.assert_array_equal(np.asarray(enp.diff(ex, axis=-1, prepend=enp.zeros((2, 1)), append=enp.ones((2, 2)))),
                                  np.diff(x, axis=-1, prepend=np.zeros((2, 1)), append=np.ones((2, 2))))  # fmt: skip
    # repeat, tile, roll, squeeze, expand_dims, moveaxis, unstack as the standard calls them
    assert enp.repeat(ex, 2, axis=0).shape == (4, 3) and enp.tile(ex, (2, 1)).shape == (4, 3)
    assert enp.roll(ex, 1, axis=1).tolist() == np.roll(x, 1, axis=1).tolist()
    assert [u.tolist() for u in enp.unstack(ex, axis=1)] == [u.tolist() for u in np.unstack(x, axis=1)]
    assert enp.squeeze(enp.zeros((1, 3)), axis=0).shape == (3,)
    assert enp.take(ex, enp.asarray([2, -1]), axis=1).tolist() == np.take(x, [2, -1], axis=1).tolist()
    assert enp.argsort(ex, axis=-1, descending=True, stable=True).tolist() == np.argsort(-x, axis=-1, stable=True).tolist()
    assert enp.sort(ex, axis=0, descending=True).tolist() == (-np.sort(-x, axis=0)).tolist()


# --- the array object ------------------------------------------------------------------------------------------------


def test_array_attributes_and_conversions():
    x = enp.arange(6.0).reshape(2, 3)
    assert x.mT.shape == (3, 2) and x.mT.tolist() == np.asarray(x).T.tolist()
    y = x.to_device(x.device)  # ember.device_put: committed there
    assert x.device == ember.devices()[0] == y.device and y.committed and y.to_device("cpu") is y
    with pytest.raises(DeviceError, match="cuda"):
        x.to_device("cuda:3")
    assert complex(enp.asarray(2.5)) == 2.5 + 0j and complex(enp.asarray(True)) == 1 + 0j
    assert complex(enp.asarray(np.inf)) == complex(np.inf, 0)
    assert operator.index(enp.asarray(3)) == 3 and [10, 20, 30][enp.asarray(1)] == 20
    with pytest.raises(TypeError):
        operator.index(enp.asarray(3.0))
    with pytest.raises(TypeError):
        float(enp.asarray(1 + 2j))
    with pytest.raises(OverflowError):
        int(enp.asarray(np.inf))
    with pytest.raises(ValueError):
        int(enp.asarray(np.nan))
    assert int(enp.asarray(-0.0)) == 0 and int(enp.asarray(-2.7)) == -2
    assert bool(enp.asarray(np.nan)) and not bool(enp.asarray(-0.0)) and bool(enp.asarray(0j + 1e-30j))
    assert 4.0 in x and 7.0 not in x
    copies = [copy.copy(x), copy.deepcopy(x), copy.deepcopy({"w": x})["w"]]
    assert all(c is not x and c.tolist() == x.tolist() and c.dtype == x.dtype for c in copies)
    assert copy.deepcopy(enp.asarray(2.0)).weak_type
    ember.jit(lambda a: a * 2, donate_argnums=0)(x)  # a copy outlives the original's donation, as in JAX
    assert x.is_deleted() and not any(c.is_deleted() for c in copies)


def test_reflected_and_in_place_operators():
    x = enp.asarray([1, 2, 3])
    assert (2 + x).tolist() == [3, 4, 5] and (2 - x).tolist() == [1, 0, -1] and (6 // x).tolist() == [6, 3, 2]
    assert (1 << x).tolist() == [2, 4, 8] and (7 & x).tolist() == [1, 2, 3] and (2**x).tolist() == [2, 4, 8]
    y = x
    y += 1  # ember arrays are immutable: the name is rebound, x is unchanged
    assert y.tolist() == [2, 3, 4] and x.tolist() == [1, 2, 3]
    m = enp.eye(2)
    assert (np.ones((2, 2), np.float32) @ m).tolist() == [[1.0, 1.0], [1.0, 1.0]]


# --- DLPack -------------------------------------------------------------------------------------------------------------


def _address(x) -> int:
    return np.asarray(x).__array_interface__["data"][0]


def test_dlpack_with_numpy_shares_memory():
    x = enp.arange(4.0)
    assert x.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(x)
    assert _address(view) == _address(x) and not view.flags.writeable  # the read-only flag keeps ember immutable
    source = np.arange(5, dtype=np.int32)
    back = enp.from_dlpack(source)
    assert isinstance(back, ember.Array) and _address(back) == source.__array_interface__["data"][0]
    source[0] = 42
    assert int(back[0]) == 42  # shared, not copied
    copied = enp.from_dlpack(source, copy=True)
    assert _address(copied) != source.__array_interface__["data"][0]
    assert np.from_dlpack(x, copy=True).flags.writeable
    with pytest.raises(InvalidArgumentError, match="copy=False"):
        enp.from_dlpack(np.arange(3.0), copy=False)  # float64 becomes float32 while x64 is off
    assert enp.from_dlpack(np.arange(3.0)).dtype == np.float32
    with ember.config.x64(True):
        f64 = np.arange(3.0)
        assert _address(enp.from_dlpack(f64, copy=False)) == f64.__array_interface__["data"][0]
    assert enp.from_dlpack(x) is x
    with pytest.raises(DTypeError, match="__dlpack__"):
        enp.from_dlpack([1, 2])


def test_dlpack_keywords():
    x = enp.arange(3.0)
    capsule = x.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
    assert type(capsule).__name__ == "PyCapsule"
    with pytest.raises(BufferError):
        x.__dlpack__(max_version=(1, 0), dl_device=(2, 0))  # no CUDA
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)  # the CPU takes stream=None only
    with pytest.raises(BufferError, match="read-only"):
        x.__dlpack__(copy=False)  # a legacy consumer would get a writable alias of an immutable array
    with pytest.raises(BufferError, match=r"dtype bfloat16 \(shape \(2,\)\) .* x.astype\('float32'\)"):
        np.from_dlpack(enp.ones(2, dtype="bfloat16"))
    with pytest.raises(DeviceError, match="cuda"):
        enp.from_dlpack(np.arange(3), device="cuda:0")


def test_dlpack_with_torch_shares_memory_both_ways():
    torch = pytest.importorskip("torch")
    x = enp.asarray([1.0, 2.0, 3.0])
    t = torch.from_dlpack(x)
    assert t.data_ptr() == _address(x) and t.tolist() == [1.0, 2.0, 3.0] and t.dtype == torch.float32
    back = enp.from_dlpack(t)
    assert _address(back) == t.data_ptr() == _address(x)
    source = torch.arange(4, dtype=torch.float32)
    shared = enp.from_dlpack(source)
    assert _address(shared) == source.data_ptr()
    source.mul_(10)  # writes by the owner show, as with any DLPack view
    assert shared.tolist() == [0.0, 10.0, 20.0, 30.0]
    assert (enp.from_dlpack(torch.ones(2, 3, dtype=torch.int64)) + 1).tolist() == [[2, 2, 2], [2, 2, 2]]
    with pytest.raises(DTypeError, match="bfloat16"):
        enp.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(DTypeError, match=r"^from_dlpack: NumPy cannot read this Tensor .*detach\(\)\)$"):
        enp.from_dlpack(torch.ones(2, requires_grad=True))  # the producer's hint, not bfloat16's
    assert torch.from_dlpack(enp.asarray([True, False])).tolist() == [True, False]


def test_dlpack_hands_out_reversed_views_as_dense_copies():
    # PyTorch aborts the interpreter (no exception) on a DLPack tensor with negative strides, and flips
    # and reversed slices are such views; every consumer gets a dense copy of them.
    for x in (enp.arange(5.0)[::-1], enp.flip(enp.arange(6.0).reshape(2, 3), 0)):
        assert min(np.asarray(x).strides) < 0
        view = np.from_dlpack(x)
        assert min(view.strides) >= 0 and view.tolist() == x.tolist()
        with pytest.raises(BufferError, match="reversed view"):
            x.__dlpack__(max_version=(1, 0), copy=False)
    torch = pytest.importorskip("torch")
    assert torch.from_dlpack(enp.arange(3.0)[::-1]).tolist() == [2.0, 1.0, 0.0]


# --- NumPy's ndarray methods ---------------------------------------------------------------------------------------------

# NumPy ndarray methods and attributes ember.Array leaves out, and why (JAX's Array leaves out the same).
NDARRAY_EXCLUDED = {
    "base": "ember arrays expose no buffer ownership (they are immutable values)",
    "ctypes": "no raw memory access; np.asarray(x) gives a read-only view",
    "data": "no raw memory access; np.asarray(x) or DLPack share the buffer",
    "flags": "memory-layout flags of a NumPy buffer; ember arrays have no user-visible layout",
    "strides": "memory layout; ember arrays have no user-visible layout",
    "byteswap": "byte order of a buffer; ember arrays are always native-endian",
    "dump": "pickle to a file; use ember.save (safetensors, no code on load)",
    "dumps": "pickle to bytes; use ember.save",
    "tofile": "raw bytes to a file; use ember.save, or np.asarray(x).tofile",
    "fill": "in place; ember arrays are immutable: use enp.full_like(x, v)",
    "put": "in place; use x.at[indices].set(values)",
    "resize": "in place; use enp.resize / x.reshape",
    "setfield": "in place, structured dtypes; ember has no structured dtypes",
    "getfield": "structured dtypes; ember has no structured dtypes (x.view covers plain reinterpretation)",
    "setflags": "memory flags of a NumPy buffer; ember arrays are immutable",
    "flat": "NumPy's flat iterator is assignable; use x.ravel()",
}


def test_ndarray_methods_are_on_ember_arrays():
    public = sorted(n for n in dir(np.ndarray) if not n.startswith("_"))
    missing = [n for n in public if not hasattr(ember.Array, n) and n not in NDARRAY_EXCLUDED]
    assert not missing, f"ndarray methods missing from ember.Array (add them or exclude them with a reason): {missing}"
    stale = [n for n in NDARRAY_EXCLUDED if n not in public or hasattr(ember.Array, n)]
    assert not stale, f"exclusions that no longer apply: {stale}"


def test_ndarray_methods_agree_with_numpy():
    data = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], dtype=np.float32)
    x = enp.asarray(data)
    cases = {
        "argsort": ((), {}), "sort": ((), {"axis": 0}), "cumsum": ((), {"axis": 1}), "cumprod": ((), {}),
        "repeat": ((2,), {"axis": 1}), "squeeze": ((), {}), "swapaxes": ((0, 1), {}), "flatten": ((), {}),
        "round": ((), {}), "clip": ((1.0, 4.0), {}), "conj": ((), {}), "diagonal": ((), {}), "trace": ((), {}),
        "take": (([0, 2],), {}), "searchsorted": ((), {}), "argpartition": ((1,), {}), "partition": ((1,), {}),
        "compress": (([True, False],), {"axis": 0}), "nonzero": ((), {}), "ravel": ((), {}), "max": ((), {"axis": 1}),
        "tobytes": ((), {}),
    }  # fmt: skip
    for name, (args, kwargs) in cases.items():
        if name == "searchsorted":
            got, want = enp.asarray(np.sort(data[0])).searchsorted(2.5), np.sort(data[0]).searchsorted(2.5)
        elif name in ("sort", "partition"):  # NumPy sorts in place; ember (as JAX) returns the result
            want = data.copy()
            getattr(want, name)(*args, **kwargs)
            got = getattr(x, name)(*args, **kwargs)
        else:
            got, want = getattr(x, name)(*args, **kwargs), getattr(data, name)(*args, **kwargs)
        if name == "argpartition":
            got, want = np.take_along_axis(data, np.asarray(got), -1)[:, 1], np.take_along_axis(data, want, -1)[:, 1]
        if name == "nonzero":
            assert [g.tolist() for g in got] == [w.tolist() for w in want], name
        elif name == "tobytes":
            assert got == want
        else:
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
    assert x.sort().tolist() == np.sort(data).tolist() and x.tolist() == data.tolist()  # x itself is unchanged
    assert float(x.ptp()) == float(np.ptp(data)) and x.ptp(axis=0).tolist() == np.ptp(data, axis=0).tolist()
    idx = enp.asarray([0, 1, 0])
    assert idx.choose([enp.arange(3), enp.arange(3) * 10]).tolist() == np.choose([0, 1, 0], [np.arange(3), np.arange(3) * 10]).tolist()
    assert x.view("int32").tolist() == data.view(np.int32).tolist()
    assert enp.asarray([1, 2], "int16").view("int32").tolist() == np.array([1, 2], np.int16).view(np.int32).tolist()
    assert enp.asarray([65537], "int32").view("int16").tolist() == np.array([65537], np.int32).view(np.int16).tolist()
    assert x.astype("int32", copy=True).tolist() == data.astype(np.int32).tolist()


# --- special values of every elementwise function ----------------------------------------------------------------------

_REAL_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 2.5, -2.5, 3.0,
                  np.pi / 2, -np.pi / 2, np.pi, 1e-30, -1e-30, 1e30, -1e30]  # fmt: skip
_PAIR_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 3.0]
_COMPLEX_PARTS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]

# The standard's elementwise functions by the inputs they take (its "Should have ... data type" line).
_BOOL_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert", "bitwise_left_shift",
                  "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "logical_not"}  # fmt: skip
_REAL_ONLY = {"atan2", "ceil", "clip", "copysign", "floor", "floor_divide", "greater", "greater_equal", "hypot", "less",
              "less_equal", "logaddexp", "maximum", "minimum", "nextafter", "remainder", "signbit", "trunc"}  # fmt: skip
_BINARY = {"add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot", "less",
           "less_equal", "logaddexp", "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder",
           "subtract"}  # fmt: skip
_ELEMENTWISE = [n for n in SPEC["namespace"] if n in set(_BOOL_INT_ONLY | _REAL_ONLY | _BINARY) or n in {
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "exp", "expm1", "imag", "isfinite",
    "isinf", "isnan", "log", "log1p", "log2", "log10", "negative", "positive", "real", "reciprocal", "round", "sign",
    "sin", "sinh", "sqrt", "square", "tan", "tanh"}]  # fmt: skip

# Functions whose finite, non-special results are computed by formulas that may round differently from
# NumPy's (ulp-level); special values (zeros, infinities, NaN, exact boundaries) are still compared exactly.
_TRANSCENDENTAL = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2", "cos", "cosh", "exp", "expm1", "log",
                   "log1p", "log2", "log10", "logaddexp", "pow", "sin", "sinh", "tan", "tanh", "hypot"}  # fmt: skip


def _numpy(name: str):
    if name == "clip":
        return lambda x: np.clip(x, -1.0, 1.0)
    return getattr(np, name)


def _ember(name: str):
    if name == "clip":
        return lambda x: enp.clip(x, min=-1.0, max=1.0)
    return getattr(enp, name)


def _grid(name: str, dtype) -> tuple[np.ndarray, ...]:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        values = np.array([complex(a, b) for a, b in itertools.product(_COMPLEX_PARTS, repeat=2)], dtype=dtype)
        if name in _BINARY:
            small = np.array([complex(a, b) for a, b in itertools.product([0.0, -0.0, np.inf, np.nan, 1.0], repeat=2)], dtype=dtype)
            a, b = zip(*itertools.product(small, repeat=2))
            return np.array(a, dtype), np.array(b, dtype)
        return (values,)
    if name in _BINARY:
        a, b = zip(*itertools.product(_PAIR_SPECIALS, repeat=2))
        return np.array(a, dtype), np.array(b, dtype)
    return (np.array(_REAL_SPECIALS, dtype),)


def _same_bits(got: np.ndarray, want: np.ndarray, name: str, inputs, loose: bool) -> None:
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, NumPy {want.dtype}"
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    for part in ((np.real, np.imag) if got.dtype.kind == "c" else (lambda v: v,)):
        g, w = part(got), part(want)
        bad = ~((g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w)))
        if loose:  # finite results away from the special points: a few ulps
            close = np.isfinite(g) & np.isfinite(w) & (w != 0) & np.isclose(g, w, rtol=8 * np.finfo(g.dtype).eps, atol=0)
            bad &= ~close
        if bad.any():
            where = np.flatnonzero(bad)[:8]
            shown = [tuple(x[i] for x in inputs) for i in where]
            raise AssertionError(f"{name}({got.dtype}) differs from NumPy at {shown}: ember {g[where]}, NumPy {w[where]}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("name", _ELEMENTWISE)
def test_special_values_match_numpy(name, dtype):
    if name in _BOOL_INT_ONLY:
        pytest.skip("a bool/integer function: no floating special values (the integer cases run below)")
    if np.dtype(dtype).kind == "c" and name in _REAL_ONLY:
        pytest.skip("the standard defines it for real-valued input only (complex has no order)")
    inputs = _grid(name, dtype)
    with ember.config.x64(dtype in ("float64", "complex128")):
        got = _ember(name)(*(enp.asarray(x) for x in inputs))
        with np.errstate(all="ignore"):
            want = np.asarray(_numpy(name)(*inputs))
    _same_bits(np.asarray(got), want, name, inputs, loose=name in _TRANSCENDENTAL)


_INT_SPECIALS = {"int8": [0, 1, -1, 7, -7, -128, 127], "uint8": [0, 1, 7, 128, 255],
                 "int32": [0, 1, -1, 31, -5, -(2**31), 2**31 - 1]}  # fmt: skip
# Integer cases of the standard's numeric functions, at the bounds of each dtype (wrap-around, division by
# zero, the most negative value): NumPy's results.
_INT_ARITHMETIC = ["abs", "add", "ceil", "equal", "floor", "floor_divide", "greater", "greater_equal", "less",
                   "less_equal", "maximum", "minimum", "multiply", "negative", "not_equal", "positive", "pow",
                   "remainder", "round", "sign", "square", "subtract", "trunc"]  # fmt: skip
_UNARY_INT = {"abs", "ceil", "floor", "negative", "positive", "round", "sign", "square", "trunc", "bitwise_invert",
              "logical_not"}  # fmt: skip


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32"])
@pytest.mark.parametrize("name", sorted(_BOOL_INT_ONLY) + _INT_ARITHMETIC)
def test_bool_and_integer_cases_match_numpy(name, dtype):
    if dtype == "bool" and name not in _BOOL_INT_ONLY | {"equal", "not_equal", "maximum", "minimum", "greater", "less"}:
        pytest.skip("NumPy has no arithmetic on bool for it (nor does ember, as JAX)")
    if dtype == "bool" and name.endswith("shift"):
        pytest.skip("the standard's shifts take integers only (NumPy gives int8 for bool, ember JAX's int32)")
    values = [False, True] if dtype == "bool" else _INT_SPECIALS[dtype]
    if name.endswith("shift"):  # shifts by 0 .. bits - 1 (larger shifts are undefined in the standard)
        pairs = [(a, b) for a in values for b in range(0, 8 * np.dtype(dtype).itemsize)]
    elif name == "pow":  # negative integer exponents are an error in NumPy and unspecified in the standard
        pairs = [(a, b) for a in values for b in (0, 1, 2, 3, 7)]
    else:
        pairs = list(itertools.product(values, repeat=2))
    a, b = (np.array(v, dtype) for v in zip(*pairs))
    inputs = (np.array(values, dtype),) if name in _UNARY_INT else (a, b)
    got = np.asarray(getattr(enp, name)(*(enp.asarray(x) for x in inputs)))
    with np.errstate(all="ignore"):
        want = np.asarray(getattr(np, name)(*inputs))
    _same_bits(got, want, name, inputs, loose=False)


def test_the_elementwise_list_is_the_standards():
    assert len(_ELEMENTWISE) == 67, sorted(set(SPEC["namespace"]) - set(_ELEMENTWISE))


def test_every_standard_function_has_a_signature_the_standard_can_call():
    # Positional-only parameters of the standard must be positional here (no required keyword-only ones).
    for name in SPEC["namespace"]:
        fn = getattr(enp, name)
        if not callable(fn) or isinstance(fn, type):
            continue
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            continue
        required_keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
        assert not required_keyword_only, (name, required_keyword_only)
    assert issubclass(EmberOverflowError, EmberError)


def test_the_standards_keyword_arguments_are_accepted():
    x = enp.ones((2, 3))
    device = x.device
    calls = [
        lambda: enp.zeros(3, dtype=enp.float32, device=device), lambda: enp.ones(3, device=device),
        lambda: enp.empty(3, device=device), lambda: enp.full(3, 1.0, device=device),
        lambda: enp.zeros_like(x, device=device), lambda: enp.ones_like(x, dtype=None, device=device),
        lambda: enp.empty_like(x, device=device), lambda: enp.full_like(x, 2.0, device=device),
        lambda: enp.arange(0, 3, 1, dtype=None, device=device),
        lambda: enp.linspace(0, 1, num=3, dtype=None, device=device, endpoint=True),
        lambda: enp.eye(2, 3, k=1, dtype=None, device=device), lambda: enp.asarray([1], dtype=None, device=device, copy=None),
        lambda: enp.std(x, axis=0, correction=1, keepdims=False), lambda: enp.var(x, correction=1.0),
        lambda: enp.reshape(x, (3, 2), copy=None), lambda: enp.reshape(x, (3, 2), copy=True),
        lambda: enp.sum(x, axis=(0, 1), dtype=None, keepdims=True), lambda: enp.argmax(x, axis=0, keepdims=True),
        lambda: enp.concat([x, x], axis=None), lambda: enp.vecdot(x, x, axis=-1), lambda: enp.tensordot(x, x.T, axes=1),
        lambda: enp.meshgrid(enp.ones(2), indexing="ij"), lambda: enp.roll(x, (1, 1), axis=(0, 1)),
        lambda: enp.permute_dims(x, axes=(1, 0)), lambda: enp.broadcast_to(x, shape=(2, 2, 3)),
        lambda: enp.sort(x, axis=-1, descending=True, stable=True), lambda: enp.take(x, enp.asarray([0]), axis=0),
        lambda: enp.searchsorted(enp.arange(3.0), enp.ones(2), side="left", sorter=None),
        lambda: enp.astype(x, enp.int8, copy=False, device=device), lambda: enp.from_dlpack(x, device=device, copy=None),
    ]  # fmt: skip
    for call in calls:
        assert isinstance(call(), (ember.Array, list, tuple))
    with pytest.raises(DeviceError, match="cuda"):
        enp.zeros(2, device="cuda:1")
    assert enp.reshape(x, (3, 2), copy=True).shape == (3, 2)


def test_choose_raise_mode_checks_indices():
    with pytest.raises(InvalidArgumentError, match="indices must be in"):
        enp.choose(enp.asarray([0, 2]), [enp.zeros(2), enp.ones(2)])
    with pytest.raises(ConcretizationError, match="mode='clip'"):
        ember.jit(lambda i: enp.choose(i, [enp.zeros(2), enp.ones(2)]))(enp.asarray([0, 1]))
    assert ember.jit(lambda i: enp.choose(i, [enp.zeros(2), enp.ones(2)], mode="clip"))(enp.asarray([0, 5])).tolist() == [0.0, 1.0]


def test_clip_special_cases_of_the_standard():
    # 2024.12: NaN in x, min or max gives NaN; NumPy agrees.
    x = np.array([1.0, -2.0, 3.0, np.nan], dtype=np.float32)
    for bounds in ({"min": np.nan}, {"max": np.nan}, {"min": np.nan, "max": 1.0}, {"min": -1.0, "max": np.nan}):
        got, want = np.asarray(enp.clip(enp.asarray(x), **bounds)), np.clip(x, **bounds)
        np.testing.assert_array_equal(got, want)
        assert np.isnan(got).all()
    bounds = (enp.asarray([0.0, np.nan, -1.0, 2.0], dtype=enp.float32), enp.asarray([1.0, 1.0, np.nan, 3.0], dtype=enp.float32))
    np.testing.assert_array_equal(np.asarray(enp.clip(enp.asarray(x), *bounds)), np.clip(x, *(np.asarray(b) for b in bounds)))
    # Signed zeros at a zero bound are left open by the standard: ember gives the bound (maximum/minimum, as
    # jnp.clip), NumPy's clip keeps x's zero (documented in ember/numpy/_array_api.py).
    assert np.signbit(np.asarray(enp.clip(enp.asarray([-0.0]), min=0.0))).tolist() == [False]


def test_searchsorted_and_take_along_axis_edge_cases():
    # searchsorted agrees with sort on NaN, infinities and signed zeros (the standard asks for consistency), as NumPy.
    x1 = np.sort(np.array([np.nan, -np.inf, -0.0, 0.0, 1.0, np.inf, 1.0], dtype=np.float32))
    x2 = np.array([np.nan, -np.inf, -0.0, 0.0, 0.5, 1.0, np.inf, 2.0], dtype=np.float32)
    for side in ("left", "right"):
        got = enp.searchsorted(enp.asarray(x1), enp.asarray(x2), side=side)
        assert got.tolist() == np.searchsorted(x1, x2, side=side).tolist(), side
    assert enp.searchsorted(enp.asarray(x1), enp.asarray(x2)).dtype == enp.__array_namespace_info__().default_dtypes()["indexing"]
    # take_along_axis: negative indices count from the end (2024.12)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    idx = np.array([[-1, 0], [-4, 3], [2, -2]])
    np.testing.assert_array_equal(np.asarray(enp.take_along_axis(enp.asarray(x), enp.asarray(idx), axis=1)),
                                  np.take_along_axis(x, idx, axis=1))  # fmt: skip
    np.testing.assert_array_equal(np.asarray(enp.take(enp.asarray(x), enp.asarray([-1, 0]), axis=0)), np.take(x, [-1, 0], axis=0))
