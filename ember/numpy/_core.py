"""Shared machinery of ember.numpy: conversion, dtype promotion, axis handling."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence

import numpy as np

from ember.core import dtypes
from ember.core import devices as _devices
from ember.core.array import Array, Place, from_host, wrap
from ember.core.primitive import Tracer, _shares_memory, trace_stack
from ember.core.transfer import _put, constant, operands_place
from ember.core.primitives import elementwise as ew
from ember.core.primitives import structural as st
from ember.core.primitives._rules import normalize_axis
from ember.errors import DTypeError, EmberOverflowError, InvalidArgumentError
from ember.lax._convert import convert, scalar_as

ArrayLike = Array | np.ndarray | bool | int | float | complex | Sequence

_PY_SCALARS = (bool, int, float, complex)
_BOOL = np.dtype(bool)


def asarray(a: ArrayLike, dtype=None, order: str | None = None, *, copy: bool | None = None, device=None) -> Array:
    """An ember Array from `a` (no copy when `a` already is one of `dtype`).

    Args:
      a: an Array, NumPy array, Python scalar, nested sequence, or anything with ``__array__``.
      dtype: the result dtype (64-bit types need x64; without it they give their 32-bit
        counterparts and a warning naming ``enable_x64``, as in JAX).
      order: "C", "K", "A" or None; ember arrays have no memory layout to choose.
      copy: the array API's rule: True always copies; None copies only when needed;
        False never copies and raises an InvalidArgumentError (a ValueError) when a copy is
        needed (a Python sequence, a dtype change; a NumPy array of a canonical dtype is
        shared, so writing to it afterwards shows in the ember array).
      device: None, or the device to commit the array to (``ember.devices()``; see ``ember.device_put``).

    Returns:
      An Array.

    >>> asarray([1.0, 2.0]).dtype
    dtype('float32')
    >>> x = asarray([1, 2]); asarray(x, copy=False) is x
    True
    """
    if dtype is None and copy is None and device is None and order is None and isinstance(a, Array):
        return a  # the common case, which every ember.numpy function meets: no checks to pay for
    if order not in (None, "C", "K", "A"):
        raise InvalidArgumentError(f"asarray: order must be 'C', 'K', 'A' or None, got {order!r}; ember arrays have no layout")
    place = None if device is None else check_device("asarray", device)
    if copy is False:
        out = _asarray_no_copy(a, dtype)
        if place is not None and type(out) is Array and not _shares_memory(out._place, place):
            raise InvalidArgumentError(f"asarray(copy=False, device={place.device}): the array is on {out.device}, "
                                       "and moving it there needs a copy; pass copy=None or True")  # fmt: skip
        return out if place is None else on_device(out, place)
    x = _asarray(a, dtype, "asarray")
    if copy and x is a:
        x = ew.copy_p.bind(x)
    return x if place is None else on_device(x, place)


def _asarray_no_copy(a, dtype) -> Array:
    target = None if dtype is None else user_dtype(dtype, "asarray")
    if isinstance(a, Array):
        if target is not None and target != a.dtype:
            raise InvalidArgumentError(
                f"asarray(copy=False): converting a {a.dtype} array to {target} needs a copy; pass copy=None or True"
            )
        return a if target is None else convert(a, target)  # an explicit dtype makes a weak array strong, no copy
    if isinstance(a, np.ndarray) and a.dtype in dtypes.ALL:
        canonical = dtypes.canonicalize(a.dtype)
        if (target is None or target == canonical) and canonical == a.dtype:
            view = a.view()
            view.flags.writeable = False  # ember never writes to it; the owner still may
            return wrap(view, False)
        why = f"converting its {a.dtype} to {target or canonical}"
    elif isinstance(a, np.ndarray):
        why = f"converting its dtype {a.dtype!r} (its byte order or type) to one ember stores"
    else:
        why = f"building an array from a {type(a).__name__}"
    raise InvalidArgumentError(f"asarray(copy=False): {why} needs a copy; pass copy=None or True")


def _asarray(a, dtype, op: str) -> Array:
    if dtype is not None and type(a) is int:
        return _python_int(a, user_dtype(dtype, op), op)
    if isinstance(a, (list, tuple)) and trace_stack() and _holds_tracer(a):
        # Stacked with primitives so that transforms see the traced elements: NumPy would read only
        # their concrete primal values, and gradients through asarray([x, x]) were silently 0.
        from ember.numpy._shape import stack  # _shape imports this module

        x = stack([_asarray(e, None, op) for e in a])
        return convert(x, user_dtype(dtype, op)) if dtype is not None else x
    x = from_host(a, op) if not isinstance(a, Array) else a
    if dtype is not None:
        x = convert(x, user_dtype(dtype, op))
    return x


def _holds_tracer(a) -> bool:
    return any(isinstance(e, Tracer) or isinstance(e, (list, tuple)) and _holds_tracer(e) for e in a)


def _python_int(value: int, dtype: np.dtype, op: str) -> Array:
    # With an explicit dtype a Python int must fit that dtype (not the default int): uint32(3_000_000_000) is fine.
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise EmberOverflowError(
                f"{op}: Python int {value} does not fit {dtype} (range [{info.min}, {info.max}]); "
                "pick a wider integer dtype or a float dtype"
            )
        return wrap(np.asarray(value, dtype=dtype), False)
    if dtype == dtypes.bool_:
        return wrap(np.asarray(bool(value)), False)
    # Through a Python float: NumPy keeps an int beyond 64 bits as an object array, which bfloat16 cannot take.
    try:
        scalar = complex(value) if dtypes.is_complex(dtype) else float(value)
    except OverflowError:
        raise EmberOverflowError(f"{op}: a Python int of {len(str(abs(value)))} digits is too large for {dtype} "
                                 "(or any float dtype); use a smaller value, or float('inf') if that is meant") from None  # fmt: skip
    with np.errstate(over="ignore"):  # beyond float16's range is inf, as a float32 beyond its own
        return wrap(np.asarray(scalar).astype(dtype), False)


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_dtype(dtype, op: str | None = None) -> np.dtype:
    """A dtype a user asked for, canonicalised; asking for a 64-bit type while x64 is off warns,
    naming ``enable_x64`` (as JAX does). Python's bool/int/float/complex mean the default types."""
    requested = dtypes.to_dtype(dtype, op or "dtype")
    canonical = dtypes.canonicalize(requested)
    if canonical != requested and not (isinstance(dtype, type) and dtype in _PY_SCALARS):
        level, entry = _user_frame()
        warnings.warn(
            f"{op or entry}: explicitly requested dtype {requested} is not available while 64-bit mode is off, and "
            f"is truncated to {canonical}; to use 64-bit types, turn on ember.config.update('enable_x64', True) "
            "(or set EMBER_ENABLE_X64=1)",
            UserWarning,
            stacklevel=level,
        )
    return canonical


def _user_frame() -> tuple[int, str]:
    """The stacklevel (for warnings.warn called by our caller) of the first frame outside ember, so Python's
    default filter shows a warning once per line of user code; and the name of the ember function it called."""
    frame, level, entry = sys._getframe(2), 2, "dtype"
    while frame is not None and frame.f_code.co_filename.startswith(_EMBER_DIR):
        if frame.f_code.co_name != "boundary":  # ember._traceback's wrapper of public functions
            entry = frame.f_code.co_name
        frame, level = frame.f_back, level + 1
    return level, entry


def check_device(op: str, device) -> Place | None:
    """Where `op` puts its result: None (no `device` given: where it would be anyway), or the committed
    place of `device` (a `Device` or a name such as ``"cpu:1"``); one that is not present raises DeviceError.

    >>> check_device("zeros", "cpu:0")
    Place(cpu:0, committed)
    """
    if device is None:
        return None
    return _devices.place_of(_devices.resolve(device, op), True)


def on_device(x, place: Place | None):
    """`x` (an Array or a tuple of them) committed to `place`, as ``device_put``; None leaves it as it is."""
    if place is None:
        return x
    if isinstance(x, tuple):
        return tuple(_put(v, place) for v in x)
    return _put(x, place)


def full_for(op: str, shape: tuple[int, ...], value, dtype, *operands, weak: bool = False) -> Array:
    """An array of `shape` filled with `value` (of `dtype`): a result of `op` that does not read `operands`
    (isnan of integers, an empty operand's shortcut), made where `op` on them leaves its result
    (``ember.core.transfer.operands_place``): on their device, committed when they are. The scalar goes
    there and is broadcast there, so nothing of `shape` crosses between host and GPU.

    >>> full_for("isnan", (2,), False, bool, ember.device_put(enp.arange(2), "cpu:0")).committed
    True
    """
    place = operands[0]._place if len(operands) == 1 else operands_place(op, *operands)
    c = constant(np.asarray(value, dtype), weak, place)
    return st.broadcast_in_dim_p.bind(c, shape=tuple(shape), broadcast_dimensions=()) if shape != () else c


def _dtype_and_weak(x, op: str = "asarray") -> tuple[np.dtype, bool]:
    if isinstance(x, Array):
        return x.dtype, x.weak_type
    if type(x) in _PY_SCALARS:
        return dtypes.python_scalar_dtype(x), type(x) is not bool
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.to_dtype(x.dtype), False
    return from_host(x, op).dtype, False


def promote_args(op: str, *args) -> list[Array]:
    """Convert `args` to Arrays of their promoted dtype (JAX's lattice); shapes broadcast later."""
    if len(args) == 2:
        fast = _promote_pair_fast(op, *args)
        if fast is not None:
            return fast
    elif len(args) == 1 and isinstance(args[0], Array):
        return [args[0]]
    kinds = [_dtype_and_weak(x, op) for x in args]
    dtype, weak = dtypes.promote(*kinds)
    return [_to(op, x, dtype, weak) for x in args]


def _promote_pair_fast(op: str, x, y) -> list[Array] | None:
    # The common cases: two arrays of one dtype, or an array and a Python
    # scalar of a kind that does not change the array's dtype.
    if isinstance(x, Array):
        if isinstance(y, Array):
            weak = x.weak_type  # two weak bools join to a strong bool (the lattice's rule): left to the slow path
            return [x, y] if x.dtype is y.dtype and weak is y.weak_type and not (weak and x.dtype is _BOOL) else None
        if type(y) in _PY_SCALARS and _KEEPS_DTYPE[type(y)](x.dtype):
            return [x, scalar_as(y, x.dtype, op)]
    elif isinstance(y, Array) and type(x) in _PY_SCALARS and _KEEPS_DTYPE[type(x)](y.dtype):
        return [scalar_as(x, y.dtype, op), y]
    return None


_KEEPS_DTYPE = {
    bool: lambda d: True,
    int: lambda d: d.kind in "iufc" or d == dtypes.bfloat16,
    float: lambda d: d.kind in "fc" or d == dtypes.bfloat16,
    complex: lambda d: d.kind == "c",
}


def _to(op: str, x, dtype: np.dtype, weak: bool) -> Array:
    if type(x) in _PY_SCALARS:
        return scalar_as(x, dtype, op)
    return convert(_asarray(x, None, op), dtype, weak)


def promote_inexact(op: str, *args) -> list[Array]:
    """Promote, then move integer and bool results to the default float dtype (as NumPy's true_divide)."""
    if len(args) == 1 and isinstance(args[0], Array) and args[0].dtype.kind in "fcV":
        return [args[0]]  # already inexact (V: bfloat16)
    xs = promote_args(op, *args)
    if not dtypes.is_inexact(xs[0].dtype):
        target = dtypes.default_float()
        xs = [convert(x, target, x.weak_type) for x in xs]
    return xs


def check_arraylike(op: str, *args) -> None:
    for x in args:
        if isinstance(x, (str, bytes)) or x is None:
            raise DTypeError(f"{op}: expected an array or number, got {type(x).__name__} {x!r}")


def canonical_axes(op: str, axis, ndim: int) -> tuple[int, ...]:
    """`axis` (None, int or sequence) as a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        return (normalize_axis(op, int(axis), ndim),)
    axes = [normalize_axis(op, int(a), ndim) for a in axis]
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"{op}: repeated axis in axis={tuple(axis)}")
    return tuple(sorted(axes))


def dtype_arg(dtype, op: str | None = None) -> np.dtype | None:
    """A user's `dtype` argument, canonicalised (warning when x64 is off and it asks for 64 bits), or None."""
    return None if dtype is None else user_dtype(dtype, op)
