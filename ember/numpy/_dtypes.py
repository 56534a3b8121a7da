"""Dtype names and promotion queries of ember.numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember.core import dtypes as _d
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError
from ember.numpy._core import _asarray, _dtype_and_weak

__all__ = [
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "bfloat16", "complex64", "complex128", "float_", "complex_", "int_", "uint", "dtype", "generic",
    "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating", "pi", "e",
    "inf", "nan", "euler_gamma", "newaxis", "promote_types", "result_type", "issubdtype", "finfo", "iinfo",
    "can_cast", "isdtype",
]  # fmt: skip

_builtin_bool = bool


class _ScalarMeta(type):
    """The type of `enp.float32` and its siblings (as JAX's): a dtype wherever NumPy takes one
    (``np.dtype(enp.float32)``, ``x.dtype == enp.float32``), and a function that makes a 0-d ember
    Array: ``enp.float32(1.5)``. The 64-bit ones give their 32-bit counterparts while x64 is off,
    with a warning naming ``enable_x64``."""

    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other) -> _builtin_bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other) -> _builtin_bool:
        return not cls.__eq__(other)

    def __call__(cls, x=0) -> Array:
        return _asarray(x, cls.dtype, cls.__name__)

    def __instancecheck__(cls, instance) -> _builtin_bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"ember.numpy.{cls.__name__}"


def _scalar_type(name: str, np_type) -> _ScalarMeta:
    doc = f"The {np.dtype(np_type)} dtype; ``{name}(x)`` makes a 0-d (or n-d) ember Array of it."
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type), "__doc__": doc, "__module__": "ember.numpy"})


bool_ = _scalar_type("bool_", np.bool_)
bool = bool_  # noqa: A001  the array API's name for the boolean dtype (as jnp.bool)
int8, int16 = _scalar_type("int8", np.int8), _scalar_type("int16", np.int16)
int32, int64 = _scalar_type("int32", np.int32), _scalar_type("int64", np.int64)
uint8, uint16 = _scalar_type("uint8", np.uint8), _scalar_type("uint16", np.uint16)
uint32, uint64 = _scalar_type("uint32", np.uint32), _scalar_type("uint64", np.uint64)
float16, float32 = _scalar_type("float16", np.float16), _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
complex64, complex128 = _scalar_type("complex64", np.complex64), _scalar_type("complex128", np.complex128)
float_ = float64
complex_ = complex128
int_ = int64
uint = uint64
dtype = np.dtype
generic, number, integer, signedinteger, unsignedinteger = np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating
pi, e, inf, nan, euler_gamma = np.pi, np.e, np.inf, np.nan, np.euler_gamma
newaxis = None


def promote_types(a, b) -> np.dtype:
    """The dtype two dtypes promote to under JAX's lattice, without 64-bit canonicalisation.

    >>> enp.promote_types("int32", "uint32")
    dtype('int64')
    """
    return _d.promote_types(a, b)


def result_type(*args) -> np.dtype:
    """The (canonical) dtype of an operation on `args`: arrays, dtypes or Python scalars.

    >>> enp.result_type(np.float32, 2.0)
    dtype('float32')
    """
    kinds = []
    for a in args:
        if isinstance(a, (np.dtype, type)) and not (isinstance(a, type) and a in _PYTHON_TYPES) or isinstance(a, str):
            kinds.append((_d.to_dtype(a), False))
        elif isinstance(a, type):
            kinds.append((_d.python_scalar_dtype(a()), a is not _builtin_bool))
        else:
            kinds.append(_dtype_and_weak(a))
    if not kinds:
        raise ValueError("result_type: needs at least one argument")
    return _d.promote(*kinds)[0]


_BFLOAT16_PARENTS = (floating, inexact, number, generic)
_PYTHON_TYPES = (_builtin_bool, int, float, complex)


def _as_dtype(x, op: str) -> np.dtype:
    # The array API lets finfo/iinfo/can_cast take an array where a dtype goes.
    return x.dtype if isinstance(x, (Array, np.ndarray)) else _d.to_dtype(x, op)


def issubdtype(arg1, arg2) -> bool:
    """NumPy's issubdtype, knowing that bfloat16 is a floating type.

    >>> enp.issubdtype(bfloat16, floating)
    True
    """
    if np.dtype(arg1) == _d.bfloat16:
        if isinstance(arg2, type) and arg2 in _BFLOAT16_PARENTS:
            return True
        try:
            return np.dtype(arg2) == _d.bfloat16
        except TypeError:
            return False
    return np.issubdtype(arg1, arg2)


def finfo(type):  # noqa: A002  the array API's parameter name
    """Machine limits of a floating dtype (bfloat16 included), or of the parts of a complex one.

    Has the array API's fields ``bits eps max min smallest_normal dtype`` and NumPy's others.

    Args:
      type: a floating or complex dtype, or an array of one.

    Returns:
      NumPy's (ml_dtypes' for bfloat16) finfo object.

    >>> enp.finfo(float32).eps
    np.float32(1.1920929e-07)
    >>> enp.finfo(enp.zeros(2, enp.complex64)).dtype
    dtype('float32')
    """
    dtype = _as_dtype(type, "finfo")
    if not _d.is_inexact(dtype):
        raise DTypeError(f"finfo: needs a floating or complex dtype, got {dtype}; use iinfo for integers")
    return _d.finfo(_d.real_dtype(dtype))


def iinfo(type):  # noqa: A002
    """Machine limits of an integer dtype: ``bits max min dtype``.

    Args:
      type: an integer dtype, or an array of one.

    Returns:
      NumPy's iinfo object.

    >>> enp.iinfo(int8).max
    127
    """
    dtype = _as_dtype(type, "iinfo")
    if not _d.is_integer(dtype):
        raise DTypeError(f"iinfo: needs an integer dtype, got {dtype}; use finfo for floating types")
    return np.iinfo(dtype)


def can_cast(from_, to, casting: str = "safe") -> _builtin_bool:
    """Whether `from_` (a dtype or an array) converts to `to` without loss under JAX's lattice
    ("safe", the array API's rule) or under NumPy's rule for `casting`.

    >>> enp.can_cast(int8, float32)
    True
    >>> enp.can_cast(enp.zeros(2), int32)
    False
    """
    from_ = _as_dtype(from_, "can_cast")
    if casting == "safe":
        return _d.promote_types(from_, to) == _d.to_dtype(to, "can_cast")
    return _builtin_bool(np.can_cast(from_, _d.to_dtype(to, "can_cast"), casting=casting))


_KINDS = {
    "bool": _d.BOOL, "signed integer": _d.SIGNED, "unsigned integer": _d.UNSIGNED, "integral": _d.INTEGER,
    "real floating": _d.FLOATING, "complex floating": _d.COMPLEX, "numeric": _d.NUMERIC,
}  # fmt: skip


def isdtype(dtype, kind) -> _builtin_bool:
    """Array API `isdtype`: whether `dtype` is of `kind`.

    Args:
      dtype: a dtype.
      kind: 'bool', 'signed integer', 'unsigned integer', 'integral', 'real floating'
        (bfloat16 and float16 included), 'complex floating', 'numeric', a dtype, or a tuple of these.

    Returns:
      A Python bool.

    >>> enp.isdtype(float32, "real floating")
    True
    >>> enp.isdtype(enp.int8, ("integral", enp.float32))
    True
    """
    dtype = _d.to_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise InvalidArgumentError(f"isdtype: unknown kind {kind!r}; kinds are {', '.join(map(repr, _KINDS))}")
        return dtype in _KINDS[kind]
    return dtype == _d.to_dtype(kind, "isdtype")
