"""Turning the leaves of a transform's arguments and results into arrays, with errors that say what
to do when a leaf is not an array at all (an object of a class ember cannot flatten)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ember.core.array import Array, from_host
from ember.errors import ArgumentTypeError, DTypeError

__all__ = ["as_leaf_array", "is_array_like", "not_an_array"]

_ARRAY_LIKE = (np.ndarray, np.generic, list, tuple, bool, int, float, complex)


def is_array_like(x: Any) -> bool:
    return isinstance(x, _ARRAY_LIKE) or hasattr(x, "__array__") or hasattr(x, "__dlpack__")


def not_an_array(x: Any, op: str, where: str | None = None) -> ArgumentTypeError:
    """The error for a leaf that is neither an array nor a container ember flattens: a user's class
    gets the two ways to register it, anything else (a string, a function) the ways around it."""
    kind = type(x)
    name = kind.__qualname__
    place = f"{where} is" if where else "an argument leaf is"
    head = (f"{op}: {place} a {name}, which is neither an array nor a pytree: transforms take arrays, Python scalars "
            f"and pytrees of them (tuples, lists, dicts, None, namedtuples, registered classes)")  # fmt: skip
    if kind.__module__ == "builtins":
        return ArgumentTypeError(f"{head}; close over the value instead of passing it (functools.partial), or under "
                                 "jit mark it static (static_argnums / static_argnames)")  # fmt: skip
    if dataclasses.is_dataclass(kind):
        how = (f"decorate the dataclass with @ember.tree.register_dataclass (array fields become leaves; mark the "
               f"others with dataclasses.field(metadata=dict(static=True)))")  # fmt: skip
    else:
        how = (f"register the class: ember.tree.register_node({name}, flatten, unflatten), where flatten(obj) returns "
               f"(children, aux_data) and unflatten(aux_data, children) rebuilds the object, or "
               f"ember.tree.register_dataclass({name}, data_fields=[...], meta_fields=[...])")  # fmt: skip
    return ArgumentTypeError(f"{head}; to pass a {name} through a transform, {how}")


def as_leaf_array(x: Any, op: str, where: str | None = None) -> Array:
    """The pytree leaf `x` (an argument or result of transform `op`) as an Array."""
    if isinstance(x, Array):
        return x
    try:
        return from_host(x, op)
    except DTypeError:
        if is_array_like(x):
            raise
        raise not_an_array(x, op, where) from None
