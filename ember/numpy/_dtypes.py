"""Dtype names and promotion queries of ember.numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember.core import dtypes as _d
from ember.numpy._core import _dtype_and_weak

__all__ = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "bfloat16", "complex64", "complex128", "float_", "complex_", "int_", "uint", "dtype", "generic",
    "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating", "pi", "e",
    "inf", "nan", "euler_gamma", "newaxis", "promote_types", "result_type", "issubdtype", "finfo", "iinfo",
    "can_cast", "isdtype",
]  # fmt: skip

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
bfloat16 = ml_dtypes.bfloat16
complex64, complex128 = np.complex64, np.complex128
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
        if isinstance(a, (np.dtype, type)) and not (isinstance(a, type) and a in (bool, int, float, complex)) or isinstance(a, str):
            kinds.append((_d.to_dtype(a), False))
        elif isinstance(a, type):
            kinds.append((_d.python_scalar_dtype(a()), a is not bool))
        else:
            kinds.append(_dtype_and_weak(a))
    if not kinds:
        raise ValueError("result_type: needs at least one argument")
    return _d.promote(*kinds)[0]


_BFLOAT16_PARENTS = (floating, inexact, number, generic)


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


def finfo(dtype):
    """Machine limits of a float dtype (bfloat16 included).

    >>> enp.finfo(float32).eps
    np.float32(1.1920929e-07)
    """
    return _d.finfo(np.dtype(dtype))


def iinfo(dtype):
    """Machine limits of an integer dtype.

    >>> enp.iinfo(int8).max
    127
    """
    return np.iinfo(dtype)


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether `from_` converts to `to` without loss under JAX's lattice ("safe") or NumPy's rule.

    >>> enp.can_cast(int8, float32)
    True
    """
    if casting == "safe":
        return _d.promote_types(from_, to) == _d.to_dtype(to)
    return np.can_cast(from_, to, casting=casting)


def isdtype(dtype, kind) -> bool:
    """Array API `isdtype`: 'bool', 'signed integer', 'unsigned integer', 'integral',
    'real floating', 'complex floating', 'numeric', or a dtype / tuple of them.

    >>> enp.isdtype(float32, "real floating")
    True
    """
    dtype = _d.to_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    groups = {
        "bool": _d.BOOL, "signed integer": _d.SIGNED, "unsigned integer": _d.UNSIGNED, "integral": _d.INTEGER,
        "real floating": _d.FLOATING, "complex floating": _d.COMPLEX, "numeric": _d.NUMERIC,
    }  # fmt: skip
    if isinstance(kind, str):
        return dtype in groups[kind]
    return dtype == _d.to_dtype(kind)
