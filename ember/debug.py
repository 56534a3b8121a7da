"""Debugging inside transforms: `ember.debug.print` and `ember.debug.callback`.

A Python ``print`` inside a jitted function runs once, while tracing, and shows tracers. These
print when the values exist: at once eagerly, every time the compiled function runs under `jit`
(with that run's values), and under `vmap` once per example.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core.array import Array
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.transforms.callback import debug_callback

__all__ = ["callback", "print"]


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the arrays' values, inside any transform.

    Arrays (pytrees of arrays) among `args`/`kwargs` are formatted as NumPy arrays; other values as
    they are. When it prints:

    - eagerly: at once;
    - under `jit`: each time the compiled function runs, with that run's values (not while tracing);
    - under `vmap`: once per example, with that example's values (arguments that are not mapped
      repeat), in example order - never the batched array;
    - under `grad`/`jvp`: the values being differentiated (primal values, not tangents); the
      backward pass prints nothing;
    - inside `lax.cond` branches and loop bodies: when that branch or iteration runs (a `cond`
      whose predicate is batched by `vmap` runs, and prints from, both branches, as in JAX).

    Args:
      fmt: a `str.format` string, e.g. ``"x = {x}, step {}"``.
      *args, **kwargs: values for the fields.
      ordered: accepted for JAX compatibility (prints always come in program order here).

    >>> ember.jit(lambda x: (ember.debug.print("x = {}", x), x * 2)[1])(enp.arange(3.0))
    x = [0. 1. 2.]
    Array([0., 2., 4.], dtype=float32)
    """
    del ordered
    leaves, tree = tree_flatten((args, kwargs))
    is_array = [isinstance(x, (Array, np.ndarray)) for x in leaves]
    static = [None if arr else x for x, arr in zip(leaves, is_array)]  # the callback must not keep tracers

    def show(*values: np.ndarray) -> None:
        it = iter(values)
        a, k = tree_unflatten(tree, [next(it) if arr else x for x, arr in zip(static, is_array)])
        builtins.print(fmt.format(*a, **k))

    debug_callback(show, *[x for x, arr in zip(leaves, is_array) if arr])


def callback(fn: Callable[..., Any], *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Call ``fn(*args, **kwargs)`` for its side effect, with the arrays as NumPy arrays, when the
    values exist (see `print` for when that is under each transform). Its result is ignored.

    >>> ember.debug.callback(lambda x: builtins.print(x.sum()), enp.ones(3))
    3.0
    """
    del ordered
    leaves, tree = tree_flatten((args, kwargs))
    is_array = [isinstance(x, (Array, np.ndarray)) for x in leaves]
    static = [None if arr else x for x, arr in zip(leaves, is_array)]

    def call(*values: np.ndarray) -> None:
        it = iter(values)
        a, k = tree_unflatten(tree, [next(it) if arr else x for x, arr in zip(static, is_array)])
        fn(*a, **k)

    call.__name__ = getattr(fn, "__name__", "callback")
    debug_callback(call, *[x for x, arr in zip(leaves, is_array) if arr])
