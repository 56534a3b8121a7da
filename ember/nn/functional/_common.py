"""Small pieces the functional modules share: the ``ArrayLike`` / ``IntOrTuple`` aliases and argument checks
whose error messages should read the same in every op."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Union

import numpy as np

import ember.numpy as enp
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError, ShapeError

# What an nn.functional function accepts where it takes an array: ember arrays, NumPy arrays, scalars.
ArrayLike = Union[Array, np.ndarray, float, int, bool]
# A size per spatial dimension, or one int for all of them (PyTorch's _size_any_t).
IntOrTuple = Union[int, Sequence[int]]

# The spatial dimensions of a channels-first input with 1, 2 or 3 of them, as error messages name them.
SPATIAL = {1: "L", 2: "H, W", 3: "D, H, W"}


def floating_input(op: str, input: ArrayLike) -> Array:
    """``input`` as an ember array, which must be floating (PyTorch's kernels for these ops reject integers).

    >>> import ember.numpy as enp
    >>> floating_input("relu", enp.arange(2))
    Traceback (most recent call last):
    ...
    ember.errors.DTypeError: relu: expected a floating input, got int32 of shape (2,); convert it first, e.g. ...
    """
    x = enp.asarray(input)
    if not enp.issubdtype(x.dtype, enp.floating):
        raise DTypeError(f"{op}: expected a floating input, got {x.dtype} of shape {x.shape}; "
                         f"convert it first, e.g. {op}(x.astype(enp.float32))")  # fmt: skip
    return x


def floating_operands(op: str, *xs: ArrayLike) -> list[Array]:
    """The arguments as ember arrays, for the losses and distances. The first (the input) must be floating, as
    PyTorch's kernels require; the others (targets) promote with it in the arithmetic. Complex is refused.

    >>> import ember.numpy as enp
    >>> [a.dtype.name for a in floating_operands("mse_loss", enp.zeros(2), enp.arange(2))]
    ['float32', 'int32']
    """
    arrays = [enp.asarray(x) for x in xs]
    for a in arrays:
        if np.dtype(a.dtype).kind == "c":
            raise DTypeError(f"{op}: complex inputs are not supported, got {a.dtype} of shape {a.shape}")
    floating_input(op, arrays[0])
    return arrays  # mixed dtypes promote in the arithmetic, which keeps Python scalars weak as JAX does


def ntuple(op: str, name: str, value: IntOrTuple, n: int) -> tuple[int, ...]:
    """An int or n ints as a tuple of n ints (PyTorch's ``_ntuple``); one int in a sequence is repeated.

    >>> ntuple("max_pool2d", "kernel_size", 3, 2), ntuple("conv2d", "stride", [2], 2)
    ((3, 3), (2, 2))
    """
    try:
        if isinstance(value, (list, tuple)):
            values = tuple(map(operator.index, value))
        else:
            values = (operator.index(value),) * n
    except TypeError:
        raise InvalidArgumentError(f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}") from None
    if len(values) == 1 and n > 1:
        values = values * n
    if len(values) != n:
        raise InvalidArgumentError(f"{op}: {name}={value!r} must be an int or a tuple of {n} ints")
    return values


def channels_first_rank(op: str, x: Array, n: int, hint: str = "") -> bool:
    """Check that ``x`` is (C, *spatial) or (N, C, *spatial) with ``n`` spatial dimensions; whether it is batched.

    >>> import ember.numpy as enp
    >>> channels_first_rank("max_pool2d", enp.zeros((1, 3, 4, 4)), 2)
    True
    >>> channels_first_rank("max_pool2d", enp.zeros(7), 2)
    Traceback (most recent call last):
    ...
    ember.errors.ShapeError: max_pool2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape (7,) (float32)
    """
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError(f"{op}: expected a {n + 1}-D (C, {SPATIAL[n]}) or {n + 2}-D (N, C, {SPATIAL[n]}) input, got "
                         f"shape {x.shape} ({x.dtype}){hint}")  # fmt: skip
    return x.ndim == n + 2
