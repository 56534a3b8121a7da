"""Shared shape/dtype rules and the `Elementwise` primitive class.

Elementwise primitives take operands of one dtype and NumPy-broadcastable
shapes; the result has the broadcast shape. Their eager path has a fast lane
for the common case (concrete operands of one allowed dtype) that calls the
kernel with as little Python as possible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.array import wrap
from ember.core.batching import defbroadcasting
from ember.core.primitive import Primitive
from ember.errors import DTypeError, InvalidArgumentError, ShapeError


class DTypes:
    """A named set of dtypes a primitive accepts, for rules and messages."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: Sequence[np.dtype]):
        self.name = name
        self.members = frozenset(members)

    def __contains__(self, dtype) -> bool:
        return dtype in self.members

    def __or__(self, other: DTypes) -> DTypes:
        return DTypes(f"{self.name} or {other.name}", self.members | other.members)


ANY = DTypes("any dtype", dtypes.ALL)
NUMERIC = DTypes("numeric (non-bool) dtypes", dtypes.NUMERIC)
SIGNED_OR_INEXACT = DTypes("signed integer, floating or complex dtypes", dtypes.SIGNED + dtypes.INEXACT)
INTEGER = DTypes("integer dtypes", dtypes.INTEGER)
BOOL_OR_INT = DTypes("bool or integer dtypes", dtypes.BOOL + dtypes.INTEGER)
FLOATING = DTypes("floating dtypes", dtypes.FLOATING)
INEXACT = DTypes("floating or complex dtypes", dtypes.INEXACT)
COMPLEX = DTypes("complex dtypes", dtypes.COMPLEX)
REAL = DTypes("real (non-complex) dtypes", dtypes.BOOL + dtypes.INTEGER + dtypes.FLOATING)
REAL_NUMERIC = DTypes("integer or floating dtypes", dtypes.INTEGER + dtypes.FLOATING)


def same(dtype: np.dtype) -> np.dtype:
    return dtype


def to_bool(dtype: np.dtype) -> np.dtype:
    return dtypes.bool_


def to_real(dtype: np.dtype) -> np.dtype:
    return dtypes.real_dtype(dtype)


# --- checks shared by every family ---------------------------------------------


def check_dtype(op: str, aval: ShapedArray, allowed: DTypes, what: str = "operand") -> None:
    if aval.dtype not in allowed:
        hint = "convert it with x.astype(...)" if allowed.members else ""
        raise DTypeError(f"{op}: {what} {describe(aval)} has dtype {aval.dtype}, but {op!r} accepts only {allowed.name}; {hint}")


def check_same_dtypes(op: str, avals: Sequence[ShapedArray]) -> np.dtype:
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        shown = ", ".join(describe(a) for a in avals)
        raise DTypeError(
            f"{op}: operands must share one dtype, got {shown}; ember.numpy functions promote for you, "
            f"or convert with lax.convert_element_type"
        )
    return first


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting of `shapes`, raising a ShapeError that names `op`."""
    if all(s == shapes[0] for s in shapes[1:]):
        return shapes[0]
    ndim = max(len(s) for s in shapes)
    out = []
    for axis in range(-ndim, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            shown = " and ".join(str(s) for s in shapes)
            raise ShapeError(
                f"{op}: shapes {shown} do not broadcast (dimension {axis} has sizes {sorted(sizes)}; "
                f"NumPy's rule: trailing dimensions must be equal or 1); reshape or broadcast_to first"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        valid = f"valid axes are {-ndim} to {ndim - 1}" if ndim else "a 0-d array takes only axis 0"
        raise InvalidArgumentError(f"{op}: axis {axis} is out of range for an array of rank {ndim}; {valid}")
    return axis % ndim if ndim else 0


def check_axes(op: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Validate distinct non-negative axes < ndim (primitives take normalised axes)."""
    axes = tuple(int(a) for a in axes)
    for a in axes:
        if not 0 <= a < ndim:
            valid = f"valid axes are 0 to {ndim - 1}" if ndim else "a 0-d array has no axes"
            raise InvalidArgumentError(
                f"{op}: axis {a} is out of range for an array of rank {ndim}; {valid} (primitives take non-negative axes)"
            )
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"{op}: repeated axis in {axes}; each axis may appear once")
    return axes


def check_bools(op: str, **params) -> None:
    """Flag parameters must be Python bools: a traced or array value cannot choose a kernel."""
    for name, value in params.items():
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{op}: {name} must be a bool, got {value!r}")


# --- elementwise primitives ------------------------------------------------------


class Elementwise(Primitive):
    """An elementwise primitive: one dtype in, broadcast shapes, `result(dtype)` out."""

    __slots__ = ("_fast", "allowed", "keeps_weak", "result")

    def __init__(self, name: str, allowed: DTypes, result: Callable = same, keeps_weak: bool = True):
        super().__init__(name)
        self.allowed = allowed
        self.result = result
        # JAX's rule for every standard primitive: the result is weak when all operands are, whatever
        # its dtype (a comparison of two Python floats is a weak bool, abs of a weak complex a weak float).
        self.keeps_weak = keeps_weak
        self._fast = {d: result(d) for d in allowed.members}
        self.abstract_eval = self._abstract_eval
        defbroadcasting(self)  # operands broadcast like NumPy's, so one batching rule fits them all

    def _abstract_eval(self, *avals: ShapedArray, **params) -> ShapedArray:
        dtype = check_same_dtypes(self.name, avals)
        check_dtype(self.name, avals[0], self.allowed)
        shape = broadcast_shapes(self.name, *(a.shape for a in avals))
        weak = self.keeps_weak and all(a.weak_type for a in avals)
        return ShapedArray(shape, self.result(dtype), weak)

    def eager(self, args, params):
        # Fast lane: concrete operands of one allowed dtype, no parameters;
        # NumPy broadcasts. Anything unusual takes the checked path below.
        if not params and len(args) <= 2:
            first, place = args[0]._value, args[0]._place
            out_dtype = self._fast.get(first.dtype)
            if (out_dtype is not None and type(first) is np.ndarray and not place.committed
                    and (len(args) == 1 or args[1]._place is place)):
                kernel = self._kernel or self.kernel()
                if len(args) == 1:
                    out = kernel(first)
                    weak = args[0]._weak
                elif args[1]._value.dtype is first.dtype:
                    try:
                        out = kernel(first, args[1]._value)
                    except ValueError:  # shapes that do not broadcast: the checked path explains
                        return Primitive.eager(self, args, params)
                    weak = args[0]._weak and args[1]._weak
                else:
                    return Primitive.eager(self, args, params)
                if type(out) is not np.ndarray:  # NumPy returns scalars for 0-d operands
                    out = np.asarray(out)
                if out.dtype is out_dtype:
                    return wrap(out, self.keeps_weak and weak, place)
        return Primitive.eager(self, args, params)
