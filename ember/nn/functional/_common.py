"""Small pieces the functional modules share: the ``ArrayLike`` / ``IntOrTuple`` aliases and argument checks
whose error messages should read the same in every op."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Union

import numpy as np

import ember.numpy as enp
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError

# What an nn.functional function accepts where it takes an array: ember arrays, NumPy arrays, scalars.
ArrayLike = Union[Array, np.ndarray, float, int, bool]
# A size per spatial dimension, or one int for all of them (PyTorch's _size_any_t).
IntOrTuple = Union[int, Sequence[int]]


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
