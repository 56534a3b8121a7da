"""Turning user operands into Arrays at the lax level.

lax does not promote: operands must already share a dtype. Python scalars are
the exception, as in JAX: they take the dtype of the array operands (weakly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host, wrap
from ember.core.primitives.elementwise import convert_element_type_p

_PY_SCALARS = (bool, int, float, complex)


def scalar_as(x, dtype: np.dtype, op: str) -> Array:
    """A Python scalar as a weak array of `dtype` (checking ints fit, as JAX does)."""
    if type(x) is int:
        return wrap(dtypes.python_int_as(x, dtype, op), dtype != dtypes.bool_)
    if type(x) is complex and not dtypes.is_complex(dtype):
        raise dtypes.DTypeError(f"{op}: cannot use the complex scalar {x} with a {dtype} array; convert the array first")
    if type(x) is float and not dtypes.is_inexact(dtype) and dtype != dtypes.bool_:
        return wrap(np.asarray(x, dtype=dtypes.default_float()), True)
    return wrap(np.asarray(x, dtype=dtype), dtype != dtypes.bool_)


def operands(op: str, xs: Sequence) -> list[Array]:
    """Arrays for `xs`; Python scalars adopt the dtype of the first array operand."""
    if all(isinstance(x, Array) for x in xs):
        return list(xs)
    like = next((x for x in xs if isinstance(x, Array) or type(x) not in _PY_SCALARS), None)
    if like is None:
        return [from_host(x, op) for x in xs]
    like = like if isinstance(like, Array) else from_host(like, op)
    return [x if isinstance(x, Array) else scalar_as(x, like.dtype, op) if type(x) in _PY_SCALARS else from_host(x, op) for x in xs]


def convert(x: Array, dtype: np.dtype, weak_type: bool = False) -> Array:
    """`x` as `dtype` (no-op when it already is)."""
    if x.dtype == dtype and x.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)
