"""Eager fast lanes, of ember.lax's elementwise functions and of ember.numpy's: the commonest eager
call, one concrete uncommitted CPU array of a dtype the primitive takes as it is (or two of one dtype,
or one and a Python scalar), goes straight to the kernel and wraps its result.

`a + b` or `enp.sin(a)` on a small array is dominated by Python: promotion, `bind`, the eager cache,
wrapping. A fast lane does what the checked path would do in that case, in a few attribute reads;
anything unusual (another dtype, a tracer, a committed array, a kernel result of another type) falls
through to the checked function, which decides. The lanes are off while ``debug_nans`` is on: its
check lives in `Primitive.bind`.

A lane's function is also its own traceback boundary (ember/_traceback.py): the slow call sits in a
``try`` (free in Python 3.11 until something raises), so `wrap_namespace` need not put another Python
call in front of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember._traceback import filter_error
from ember.config import config
from ember.core.array import Array, wrap

__all__ = ["Narrowed", "basic_index", "binary", "index_update", "matmul_operator", "operator", "unary"]

_new = object.__new__
_ndarray = np.ndarray
_ufunc = np.ufunc
on = not config.debug_nans
# Buffers a Python float (or an int that fits int32) converts to as JAX's weak typing does: NumPy 2's
# own rule for a Python scalar meeting an array (NEP 50) is the same there, and only there.
_FLOAT_BUFFERS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.complex64, np.complex128))


# The dtype tables of the elementwise lanes, with their full contents: emptied while debug_nans is on,
# which closes those lanes without a flag for them to read on every call.
_TABLES: list[tuple[dict, dict]] = []


def _lane_table(table: dict) -> dict:
    _TABLES.append((table, dict(table)))
    if not on:
        table.clear()
    return table


def _follow_debug_nans(name: str, value: Any) -> None:
    global on
    if name == "debug_nans":
        on = not value
        for table, full in _TABLES:
            table.clear()
            if on:
                table.update(full)


config.on_update(_follow_debug_nans)


_BASIC_ITEM = frozenset((int, slice, type(None), type(Ellipsis)))


def basic_index(index: Any) -> bool:
    """Whether `index` is NumPy's basic indexing (an int, a slice, None, Ellipsis, or a tuple of them),
    which makes a view; NumPy reads slice bounds with operator.index, as ember does."""
    kind = type(index)
    if kind in _BASIC_ITEM:
        return True
    if kind is tuple:
        for item in index:
            if type(item) not in _BASIC_ITEM:
                return False
        return True
    return False


def index_update(x: Any, index: Any, values: Any, how: str) -> Array | None:
    """`x.at[index].set(values)` (how "set"), `.add` ("add") or `.multiply` ("multiply") as NumPy's
    in-place update of a copy, for a concrete CPU array, a basic index (no duplicates, and nothing out
    of bounds: NumPy raises where the general path drops) and values already of x's dtype: an Array of
    it, or a Python scalar meeting a float array (weakly typed). None: take the general path."""
    if type(x) is not Array or not on or not x._place.host or not basic_index(index):
        return None
    v = x._value
    kind = type(values)
    if kind is Array:
        if values._place is not x._place or values._value.dtype is not v.dtype:
            return None
        update = values._value
    elif (kind is float or (kind is int and -2147483648 <= values < 2147483648)) and v.dtype in _FLOAT_BUFFERS:
        update = values
    else:
        return None
    if type(v) is not _ndarray:
        return None
    out = v.copy()
    try:
        if how == "set":
            out[index] = update
        elif how == "add":
            out[index] += update
        else:
            out[index] *= update
    except Exception:  # out of bounds, values that do not broadcast, a traced bound: the general path decides
        return None
    return wrap(out, x._weak, x._place)


def _named_like(fn: Callable, slow: Callable) -> Callable:
    fn.__name__ = fn.__qualname__ = slow.__name__
    fn.__doc__ = slow.__doc__
    fn.__wrapped__ = slow
    fn.__ember_boundary__ = True  # filters its own errors (see the module's docstring)
    return fn


def unary(prim: Any, slow: Callable[[Any], Array], exclude: tuple = ()) -> Callable[[Any], Array]:
    """`slow` (an ember.numpy function of one array) with the fast lane of elementwise `prim` in front."""
    kernel = prim.kernel()
    table = {d: r for d, r in prim._fast.items() if d not in exclude}  # operand dtype -> result dtype
    trusted = type(kernel) is _ufunc  # then only the dtypes whose result NumPy's loop gives as the rule says
    if trusted:
        table = {d: r for d, r in table.items() if _ufunc_result(kernel, (d,)) is r}
    table = _lane_table(table)
    keeps_weak = prim.keeps_weak

    def fn(x, /):
        if type(x) is Array:
            v = x._value
            out_dtype = table.get(v.dtype)
            if out_dtype is not None and x._place.host:
                out = kernel(v)
                if type(out) is _ndarray and (trusted or out.dtype is out_dtype):  # (0-d operands give NumPy scalars)
                    result = _new(Array)
                    result._value = out
                    result._weak = keeps_weak and x._weak
                    result._place = x._place
                    return result
        try:
            return slow(x)
        except Exception as err:
            filter_error(err)
            raise

    return _named_like(fn, slow)


class Narrowed:
    """Primitive `prim` as a lane sees it, taking only the operand dtypes that `keep` admits (`x - y`
    refuses bool, the `/` lane takes only inexact dtypes: integers promote to float first)."""

    def __init__(self, prim: Any, keep: Callable[[np.dtype], bool]):
        self._fast = {d: r for d, r in prim._fast.items() if keep(d)}
        self.keeps_weak = prim.keeps_weak
        self.kernel = prim.kernel


def binary(prim: Any, slow: Callable[[Any, Any], Array], exclude: tuple = ()) -> Callable[[Any, Any], Array]:
    """`slow` (an ember.numpy function of two arrays) with the fast lane of elementwise `prim` in front:
    two arrays of one dtype on one place, which NumPy broadcasts as ember does. (A buffer that is not an
    ndarray gives a result that is not one either, which falls through.)"""
    kernel = prim.kernel()
    if type(kernel) is _ufunc:  # the operators' lanes, which also take Python scalars on either side
        forward, reflected = operator(Narrowed(prim, lambda d: d not in exclude), slow, lambda x2, x1: slow(x1, x2))

        def fn(x1, x2, /):
            if type(x1) is Array:
                return forward(x1, x2)
            if type(x2) is Array:
                return reflected(x2, x1)
            try:
                return slow(x1, x2)
            except Exception as err:
                filter_error(err)
                raise

        return _named_like(fn, slow)

    table = _lane_table({d: r for d, r in prim._fast.items() if d not in exclude})
    keeps_weak = prim.keeps_weak

    def fn(x1, x2, /):
        if type(x1) is Array and type(x2) is Array:
            a, b = x1._value, x2._value
            out_dtype = table.get(a.dtype)
            place = x1._place
            if out_dtype is not None and b.dtype is a.dtype and x2._place is place and place.host:
                try:
                    out = kernel(a, b)
                except ValueError:  # shapes that do not broadcast: the checked path explains
                    out = None
                if type(out) is _ndarray and out.dtype is out_dtype:
                    result = _new(Array)
                    result._value = out
                    result._weak = keeps_weak and x1._weak and x2._weak
                    result._place = place
                    return result
        try:
            return slow(x1, x2)
        except Exception as err:
            filter_error(err)
            raise

    return _named_like(fn, slow)


def _ufunc_result(kernel: Any, operands: tuple) -> np.dtype | None:
    """The dtype NumPy's ufunc `kernel` gives for operands of these dtypes (None: it has no loop)."""
    try:
        return kernel.resolve_dtypes((*operands, None))[-1]
    except (TypeError, ValueError):
        return None


def _same_dtype_results(kernel: Any, table: dict) -> dict:
    """The entries of `table` (operand dtype -> result dtype) that NumPy's ufunc `kernel` gives for two
    operands of that dtype: for those, a lane need not look at the result's dtype."""
    return {d: r for d, r in table.items() if _ufunc_result(kernel, (d, d)) is r}


def _scalar_rules(table: dict) -> dict:
    """For each operand dtype of `table`, the Python scalars that meet it as JAX's weak types do, which is
    NumPy 2's rule too (NEP 50) for these: (lowest int, highest int, whether floats may come). An int
    array takes the ints its dtype holds; a float or complex one also takes floats (and ints of int32's
    range; further out NumPy may refuse to convert)."""
    rules = {}
    for dtype in table:
        if dtype in _FLOAT_BUFFERS:
            rules[dtype] = (-(2**31), 2**31 - 1, True)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            rules[dtype] = (int(info.min), int(info.max), False)
    return rules


def operator(prim: Any, slow: Callable, slow_reflected: Callable, kernel: Any = None) -> tuple[Callable, Callable]:
    """`Array.__OP__` and `__rOP__` of elementwise `prim`: fast lanes for two arrays of one dtype on one
    place, and for an array with a Python scalar its dtype takes as it is (`_scalar_rules`: weakly
    typed, the array's dtype wins). `slow(self, other)` and `slow_reflected(self, other)` do everything
    else. `kernel` (default the primitive's) must be a NumPy ufunc for the lanes to open."""
    kernel = kernel or prim.kernel()
    table = _same_dtype_results(kernel, prim._fast) if type(kernel) is _ufunc else {}
    keeps_weak = prim.keeps_weak
    scalars = _lane_table(_scalar_rules(table))
    table = _lane_table(table)

    def forward(self, other):
        if type(self) is Array:
            x = self._value
            dtype = x.dtype
            place = self._place
            if dtype in table and place.host:
                kind = type(other)
                if kind is Array:
                    y = other._value
                    if y.dtype is dtype and other._place is place:
                        try:
                            out = kernel(x, y)
                        except ValueError:  # shapes that do not broadcast: the checked path explains
                            out = None
                        if type(out) is _ndarray:  # (0-d operands give NumPy scalars)
                            result = _new(Array)
                            result._value = out
                            result._weak = keeps_weak and self._weak and other._weak
                            result._place = place
                            return result
                elif kind is float or kind is int:
                    rule = scalars.get(dtype)
                    if rule is not None and (rule[2] if kind is float else rule[0] <= other <= rule[1]):
                        out = kernel(x, other)
                        if type(out) is _ndarray:
                            result = _new(Array)
                            result._value = out
                            result._weak = keeps_weak and self._weak
                            result._place = place
                            return result
        try:
            return slow(self, other)
        except Exception as err:  # this frame is the outermost of ember's: it filters (ember/_traceback.py)
            filter_error(err)
            raise

    def reflected(self, other):
        if type(self) is Array:
            kind = type(other)
            if kind is float or kind is int:
                x = self._value
                rule = scalars.get(x.dtype)
                if (rule is not None and (rule[2] if kind is float else rule[0] <= other <= rule[1])
                        and self._place.host):
                    out = kernel(other, x)
                    if type(out) is _ndarray:
                        result = _new(Array)
                        result._value = out
                        result._weak = keeps_weak and self._weak
                        result._place = self._place
                        return result
        try:
            return slow_reflected(self, other)
        except Exception as err:
            filter_error(err)
            raise

    return forward, reflected


def matmul_operator(fast: Callable, slow: Callable, slow_reflected: Callable) -> tuple[Callable, Callable]:
    """`Array.__matmul__` and `__rmatmul__`: `fast(a, b)` (ember.numpy's matmul lane: an Array or None)
    first for two Arrays, then `slow`."""

    def forward(self, other):
        if type(self) is Array and type(other) is Array and on:
            out = fast(self, other)
            if out is not None:
                return out
        try:
            return slow(self, other)
        except Exception as err:
            filter_error(err)
            raise

    return forward, slow_reflected
