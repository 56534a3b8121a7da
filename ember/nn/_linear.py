"""``Linear``: the affine layer (``Bilinear``, ``Identity``, ``Flatten`` and ``Unflatten`` live beside it)."""

from __future__ import annotations

import math
from typing import Any

import ember.numpy as enp
from ember import random
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._checks import describe
from ember.nn._module import Module
from ember.nn.functional._linear import bilinear, linear

__all__ = ["Bilinear", "Flatten", "Identity", "Linear", "Unflatten"]


def uniform_init(key: Array, shape: tuple[int, ...], fan_in: int, dtype: Any = None) -> Array:
    """Uniform on [-1/sqrt(fan_in), 1/sqrt(fan_in)) (zeros for fan_in 0): PyTorch's default for the weights and
    biases of Linear, Bilinear, the convolutions and the recurrent layers."""
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return random.uniform(key, shape, dtype=dtype, minval=-bound, maxval=bound)


class Linear(Module):
    """``y = x @ weight.T + bias``, as ``torch.nn.Linear``, initialised as PyTorch does (uniform, 1/sqrt(in)).

    Args:
        in_features: size of the input's last dimension.
        out_features: size of the output's last dimension.
        bias: whether to add a learned bias.
        key: the random key for the initial weights.
        dtype: the parameters' dtype (default float32).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.Linear(3, 2, key=ember.random.key(0))
    >>> layer.weight.shape, layer(enp.ones((4, 3))).shape
    ((2, 3), (4, 2))
    """

    weight: Array
    bias: Array | None
    in_features: int
    out_features: int

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key: Array,
                 dtype: Any = None) -> None:  # fmt: skip
        self.in_features, self.out_features = int(in_features), int(out_features)
        wkey, bkey = random.split(key)
        self.weight = uniform_init(wkey, (out_features, in_features), in_features, dtype)
        self.bias = uniform_init(bkey, (out_features,), in_features, dtype) if bias else None

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        x = enp.asarray(x)
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ShapeError(f"expected an input whose last dimension is in_features={self.in_features}, got shape "
                             f"{describe(x)}")
        return linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` for each output feature, as ``torch.nn.Bilinear`` (weight (out, in1, in2)).

    Initialised as PyTorch does: weight and bias uniform on +-1/sqrt(in1_features).

    Args:
        in1_features, in2_features: sizes of the two inputs' last dimensions.
        out_features: size of the output's last dimension.
        bias: whether to add a learned bias.
        key: the random key for the initial weights.
        dtype: the parameters' dtype (default float32).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.Bilinear(3, 4, 2, key=ember.random.key(0))
    >>> layer
    Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)
    >>> layer(enp.ones((5, 3)), enp.ones((5, 4))).shape
    (5, 2)
    """

    weight: Array
    bias: Array | None
    in1_features: int
    in2_features: int
    out_features: int

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, *, key: Array,
                 dtype: Any = None) -> None:  # fmt: skip
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        wkey, bkey = random.split(key)
        self.weight = uniform_init(wkey, (out_features, in1_features, in2_features), in1_features, dtype)
        self.bias = uniform_init(bkey, (out_features,), in1_features, dtype) if bias else None

    def __call__(self, input1: Array, input2: Array, *, key: Array | None = None) -> Array:
        for name, x, size in (("input1", input1, self.in1_features), ("input2", input2, self.in2_features)):
            if getattr(x, "ndim", 0) < 1 or x.shape[-1] != size:
                raise ShapeError(f"expected {name} of shape (*, {size}), got shape {describe(x)}")
        if input1.shape[:-1] != input2.shape[:-1]:
            raise ShapeError(f"input1 of shape {input1.shape} and input2 of shape {input2.shape} must have the same "
                             "leading (batch) dimensions")
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Identity(Module):
    """Returns its input unchanged, as ``torch.nn.Identity``; its constructor takes and ignores any arguments.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Identity(54, unused="x")(enp.array([1.0, 2.0])).tolist()
    [1.0, 2.0]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return input

    def extra_repr(self) -> str:
        return ""


def _dim(dim: int, ndim: int, shape: tuple, dtype: Any) -> int:
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise ShapeError(f"dim {dim} is out of range for an input of shape {shape} ({dtype})")
    return dim % max(ndim, 1)


class Flatten(Module):
    """Flattens dimensions ``start_dim`` to ``end_dim`` into one, as ``torch.nn.Flatten``.

    Args:
        start_dim: the first dimension to flatten (default 1, keeping the batch dimension).
        end_dim: the last dimension to flatten (default -1).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Flatten()(enp.ones((32, 1, 5, 5))).shape
    (32, 25)
    >>> nn.Flatten(0, 2)(enp.ones((2, 3, 4, 5))).shape
    (24, 5)
    """

    start_dim: int
    end_dim: int

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        x = enp.asarray(input)
        if x.ndim == 0:
            return x.reshape((1,))
        start = _dim(self.start_dim, x.ndim, x.shape, x.dtype)
        end = _dim(self.end_dim, x.ndim, x.shape, x.dtype)
        if start > end:
            raise ShapeError(f"start_dim={self.start_dim} comes after end_dim={self.end_dim} for an input of "
                             f"shape {x.shape} ({x.dtype})")
        return x.reshape((*x.shape[:start], math.prod(x.shape[start:end + 1]), *x.shape[end + 1:]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dimension ``dim`` into ``unflattened_size``, as ``torch.nn.Unflatten`` (one entry may be -1).

    Args:
        dim: the dimension to split.
        unflattened_size: the new dimensions; their product must equal the size of ``dim``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Unflatten(1, (2, 5))(enp.ones((3, 10))).shape
    (3, 2, 5)
    >>> nn.Unflatten(-1, (-1, 2))(enp.ones((3, 10))).shape
    (3, 5, 2)
    """

    dim: int
    unflattened_size: tuple[int, ...]

    def __init__(self, dim: int, unflattened_size: tuple[int, ...]) -> None:
        self.dim = int(dim)
        try:
            self.unflattened_size = tuple(int(s) for s in unflattened_size)
        except TypeError:
            raise InvalidArgumentError(f"Unflatten: unflattened_size must be a tuple of ints, got "
                                       f"{unflattened_size!r}") from None
        if sum(s == -1 for s in self.unflattened_size) > 1 or any(s < -1 for s in self.unflattened_size):
            raise InvalidArgumentError(f"Unflatten: unflattened_size={self.unflattened_size} may hold one -1 and "
                                       "otherwise non-negative sizes")

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        x = enp.asarray(input)
        dim = _dim(self.dim, x.ndim, x.shape, x.dtype) if x.ndim else None
        sizes = self.unflattened_size
        known = math.prod(s for s in sizes if s != -1)
        size = x.shape[dim] if dim is not None else None
        if size is None or (size != known if -1 not in sizes else (known == 0 or size % known)):
            raise ShapeError(f"cannot split dimension {self.dim} of an input of shape {x.shape} ({x.dtype}) "
                             f"into {sizes}; the sizes' product must equal the dimension's size")
        sizes = tuple(size // known if s == -1 else s for s in sizes)
        return x.reshape((*x.shape[:dim], *sizes, *x.shape[dim + 1:]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
