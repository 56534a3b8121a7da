"""Eager fast lanes: the commonest eager call, one concrete uncommitted CPU array of a dtype the
primitive takes as it is (or two of one dtype), goes straight to the kernel and wraps its result.

`a + b` or `enp.sin(a)` on a small array is dominated by Python: promotion, `bind`, the eager cache,
wrapping. A fast lane does what the checked path would do in that case, in a few attribute reads;
anything unusual (another dtype, a tracer, a committed array, a kernel result of another type) falls
through to the ember.numpy function, which decides. The lanes are off while ``debug_nans`` is on: its
check lives in `Primitive.bind`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.config import config
from ember.core.array import Array

__all__ = ["binary", "unary", "wrap_like"]

_new = object.__new__
_ndarray = np.ndarray
on = not config.debug_nans


def _follow_debug_nans(name: str, value: Any) -> None:
    global on
    if name == "debug_nans":
        on = not value


config.on_update(_follow_debug_nans)


def wrap_like(out: Any, weak: bool, place: Any) -> Array:
    """`out` (a fresh or view ndarray) as an Array at `place`."""
    result = _new(Array)
    result._value = out
    result._weak = weak
    result._place = place
    return result


def unary(prim: Any, slow: Callable[[Any], Array], exclude: tuple = ()) -> Callable[[Any], Array]:
    """`slow` (an ember.numpy function of one array) with the fast lane of elementwise `prim` in front."""
    kernel = prim.kernel()
    table = {d: r for d, r in prim._fast.items() if d not in exclude}  # operand dtype -> result dtype
    keeps_weak = prim.keeps_weak

    def fn(x, /):
        if type(x) is Array and on:
            v = x._value
            out_dtype = table.get(v.dtype)
            if out_dtype is not None and x._place.host:
                out = kernel(v)
                if type(out) is _ndarray and out.dtype is out_dtype:  # (0-d operands give NumPy scalars)
                    result = _new(Array)
                    result._value = out
                    result._weak = keeps_weak and x._weak
                    result._place = x._place
                    return result
        return slow(x)

    fn.__name__ = fn.__qualname__ = slow.__name__
    fn.__doc__ = slow.__doc__
    fn.__wrapped__ = slow
    return fn


def binary(prim: Any, slow: Callable[[Any, Any], Array], exclude: tuple = ()) -> Callable[[Any, Any], Array]:
    """`slow` (an ember.numpy function of two arrays) with the fast lane of elementwise `prim` in front:
    two arrays of one dtype on one place, which NumPy broadcasts as ember does. (A buffer that is not an
    ndarray gives a result that is not one either, which falls through.)"""
    kernel = prim.kernel()
    table = {d: r for d, r in prim._fast.items() if d not in exclude}
    keeps_weak = prim.keeps_weak

    def fn(x1, x2, /):
        if type(x1) is Array and type(x2) is Array and on:
            a, b = x1._value, x2._value
            out_dtype = table.get(a.dtype)
            if out_dtype is not None and b.dtype is a.dtype and x1._place is x2._place and x1._place.host:
                try:
                    out = kernel(a, b)
                except ValueError:  # shapes that do not broadcast: the checked path explains
                    return slow(x1, x2)
                if type(out) is _ndarray and out.dtype is out_dtype:
                    result = _new(Array)
                    result._value = out
                    result._weak = keeps_weak and x1._weak and x2._weak
                    result._place = x1._place
                    return result
        return slow(x1, x2)

    fn.__name__ = fn.__qualname__ = slow.__name__
    fn.__doc__ = slow.__doc__
    fn.__wrapped__ = slow
    return fn
