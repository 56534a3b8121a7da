"""Dtypes, JAX's type-promotion lattice, weak types and 64-bit canonicalisation.

The lattice (JAX's, not NumPy's): an edge ``a -> b`` means ``a`` promotes to
``b``; the result of combining two types is their least upper bound.

    b1 -> i*
    i* -> u8, i8          u8 -> u16, i16   u16 -> u32, i32   u32 -> u64, i64   u64 -> f*
    i8 -> i16 -> i32 -> i64 -> f*
    f* -> bf16, f16, c*   bf16 -> f32      f16 -> f32        f32 -> f64, c64   f64 -> c128
    c* -> c64 -> c128

``i*``, ``f*`` and ``c*`` are the weak types of Python ``int``, ``float`` and
``complex``: a weak value adopts the dtype of whatever strong value it meets,
so ``x_float32 * 2.0`` stays float32. A weak result takes the default dtype
(int32 / float32 / complex64, or the 64-bit ones with x64 on) and stays weak.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from ember.config import config
from ember.errors import DTypeError, EmberOverflowError

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float0 = np.dtype([("float0", np.void, 0)])  # the tangent dtype of integer inputs (as in JAX)

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

BOOL = (bool_,)
SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
INTEGER = SIGNED + UNSIGNED
FLOATING = (float16, bfloat16, float32, float64)
COMPLEX = (complex64, complex128)
INEXACT = FLOATING + COMPLEX
NUMERIC = INTEGER + INEXACT
ALL = BOOL + NUMERIC

_NAMES = {
    bool_: "b1", uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
    int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
    complex64: "c64", complex128: "c128",
}  # fmt: skip
_BY_NAME = {name: dtype for dtype, name in _NAMES.items()}
_WEAK = ("i*", "f*", "c*")

_LATTICE = {
    "b1": ["i*"],
    "i*": ["u8", "i8"],
    "u8": ["u16", "i16"], "u16": ["u32", "i32"], "u32": ["u64", "i64"], "u64": ["f*"],
    "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f*": ["bf16", "f16", "c*"],
    "bf16": ["f32"], "f16": ["f32"], "f32": ["f64", "c64"], "f64": ["c128"],
    "c*": ["c64"], "c64": ["c128"], "c128": [],
}  # fmt: skip

_TO_64 = {int32: int64, uint32: uint64, float32: float64, complex64: complex128}
_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def _upper_sets() -> dict[str, frozenset[str]]:
    uppers: dict[str, frozenset[str]] = {}

    def visit(node: str) -> frozenset[str]:
        if node not in uppers:
            uppers[node] = frozenset([node]).union(*(visit(n) for n in _LATTICE[node]))
        return uppers[node]

    for node in _LATTICE:
        visit(node)
    return uppers


def _join_table() -> dict[tuple[str, str], str]:
    uppers = _upper_sets()
    table = {}
    for a in _LATTICE:
        for b in _LATTICE:
            common = uppers[a] & uppers[b]
            least = [c for c in common if common <= uppers[c]]
            assert len(least) == 1, (a, b, least)
            table[a, b] = least[0]
    return table


_JOIN = _join_table()


# --- canonicalisation -------------------------------------------------------


def x64_enabled() -> bool:
    return config.enable_x64


def canonicalize(dtype, op: str = "dtype") -> np.dtype:
    """The dtype ember stores for `dtype`: 64-bit types become 32-bit unless x64 is on.

    >>> canonicalize(np.float64)
    dtype('float32')
    """
    dtype = to_dtype(dtype, op)
    if not config.enable_x64:
        return _TO_32.get(dtype, dtype)
    return dtype


def to_dtype(dtype, op: str = "dtype") -> np.dtype:
    """Turn anything NumPy accepts as a dtype (plus "bfloat16") into a supported np.dtype."""
    if type(dtype) is np.dtype and dtype in _NAMES:
        return dtype
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"{op}: {dtype!r} is not a dtype ember understands; use e.g. 'float32' or ember.numpy.float32") from None
    if result not in _NAMES:
        raise DTypeError(f"{op}: dtype {result} is not supported by ember; supported dtypes: {', '.join(str(d) for d in ALL)}")
    return result


def default_int() -> np.dtype:
    return int64 if config.enable_x64 else int32


def default_uint() -> np.dtype:
    return uint64 if config.enable_x64 else uint32


def default_float() -> np.dtype:
    return float64 if config.enable_x64 else float32


def default_complex() -> np.dtype:
    return complex128 if config.enable_x64 else complex64


def _default_for_weak(node: str) -> np.dtype:
    return {"i*": default_int, "f*": default_float, "c*": default_complex}[node]()


# --- kinds ------------------------------------------------------------------


def is_integer(dtype) -> bool:
    return dtype.kind in "iu"


def is_signed(dtype) -> bool:
    return dtype.kind == "i"


def is_unsigned(dtype) -> bool:
    return dtype.kind == "u"


def is_floating(dtype) -> bool:
    return dtype.kind == "f" or dtype == bfloat16


def is_complex(dtype) -> bool:
    return dtype.kind == "c"


def is_inexact(dtype) -> bool:
    return is_floating(dtype) or is_complex(dtype)


def real_dtype(dtype) -> np.dtype:
    """The real counterpart of a complex dtype (float32 for complex64); others unchanged."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype whose parts have dtype `dtype` (complex64 for float32)."""
    if dtype in (float64, complex128):
        return complex128
    return complex64


def finfo(dtype):
    """Float limits, bfloat16 included (NumPy's finfo lacks it)."""
    return ml_dtypes.finfo(dtype) if dtype == bfloat16 else np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(dtype)


# --- promotion --------------------------------------------------------------


def _node(dtype: np.dtype, weak: bool) -> str:
    if weak and dtype != bool_:
        return "c*" if dtype.kind == "c" else "f*" if is_floating(dtype) else "i*"
    return _NAMES[dtype]


@functools.lru_cache(maxsize=4096)
def _lattice_join(pairs: tuple[tuple[np.dtype, bool], ...], x64: bool) -> tuple[np.dtype, bool]:
    del x64  # part of the cache key: weak results depend on it
    dtypes = {d for d, _ in pairs}
    if len(dtypes) == 1 and not all(w for _, w in pairs):
        return canonicalize(pairs[0][0]), False
    if all(w for _, w in pairs):
        node = functools.reduce(lambda a, b: _JOIN[a, b], (_NAMES[d] for d, _ in pairs))
        return canonicalize(_BY_NAME[node]), node != _NAMES[bool_]  # JAX's lattice never makes a weak bool
    node = functools.reduce(lambda a, b: _JOIN[a, b], (_node(d, w) for d, w in pairs))
    if node in _WEAK:
        return _default_for_weak(node), True
    return canonicalize(_BY_NAME[node]), False


def promote(*pairs: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """The (dtype, weak_type) that values with these (dtype, weak_type) promote to."""
    if len(pairs) == 1:
        dtype, weak = pairs[0]
        return canonicalize(dtype), weak
    return _lattice_join(pairs, config.enable_x64)


def promote_types(a, b) -> np.dtype:
    """The lattice join of two dtypes, without 64-bit canonicalisation (as `jnp.promote_types`).

    >>> promote_types("int32", "uint32")
    dtype('int64')
    """
    node = _JOIN[_type_node(a), _type_node(b)]
    return _BY_NAME[node] if node not in _WEAK else {"i*": int64, "f*": float64, "c*": complex128}[node]


_PYTHON_TYPE_NODES = {int: "i*", float: "f*", complex: "c*"}


def _type_node(t) -> str:
    # Python's int, float and complex stand for the weak types, as in jnp.promote_types.
    if t in _PYTHON_TYPE_NODES:
        return _PYTHON_TYPE_NODES[t]
    return _NAMES[to_dtype(t)]


# --- Python scalars ---------------------------------------------------------


def python_scalar_dtype(x) -> np.dtype:
    """The default dtype of a Python scalar (bool, int, float, complex)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise DTypeError(f"{type(x).__name__} is not a Python scalar type")


def check_int_fits(value: int, op: str) -> None:
    """Raise when a Python int does not fit the default integer dtype (as JAX does).

    A value that fits is then converted to the operand's dtype with C wrapping,
    as in JAX: ``int8_array + 1000`` adds -24.
    """
    info = np.iinfo(default_int())
    if not info.min <= value <= info.max:
        if not config.enable_x64 and np.iinfo(int64).min <= value <= np.iinfo(uint64).max:
            hint = "turn on 64-bit mode (ember.config.update('enable_x64', True))"
            if 0 <= value <= np.iinfo(uint32).max:
                hint += " or ask for uint32 (ember.numpy.asarray(value, dtype='uint32'))"
        elif 0 <= value <= np.iinfo(uint64).max:
            hint = "ask for uint64 (ember.numpy.asarray(value, dtype='uint64'))"
        else:
            hint = "no ember integer dtype holds it; use a float (e.g. float(value))"
        raise EmberOverflowError(
            f"{op}: Python int {value} is too large for {default_int()} (range [{info.min}, {info.max}]); {hint}"
        )


_INT_BOUNDS = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in INTEGER}


def check_narrowed_ints(value: np.ndarray, dtype: np.dtype, op: str) -> None:
    """Raise when a 64-bit integer array holds values that its 32-bit counterpart `dtype` (x64 off) cannot,
    instead of wrapping them around silently."""
    if value.size == 0:
        return
    lo, hi = _INT_BOUNDS[dtype]
    if value.size <= 64:  # every list of ints passes here: NumPy's min and max cost ~0.8 us each, however small
        flat = value.ravel().tolist()
        low, high = min(flat), max(flat)
    else:
        low, high = value.min(), value.max()
    if low < lo or high > hi:
        bad = low if low < lo else high
        raise EmberOverflowError(
            f"{op}: a {value.dtype} array holding {bad} does not fit {dtype} (range [{lo}, {hi}]), which "
            f"is what {value.dtype} becomes while 64-bit mode is off; turn it on "
            "(ember.config.update('enable_x64', True)), or convert the values yourself first "
            "(e.g. to float32, or np.asarray(x).astype(np.int32) to wrap them around)"
        )


def python_int_as(value: int, dtype: np.dtype, op: str) -> np.ndarray:
    """A Python int as a 0-d array of `dtype`, checked against the default int and wrapped."""
    check_int_fits(value, op)
    return np.asarray(value, dtype=default_int()).astype(dtype)
