"""``Linear``: the affine layer (``Bilinear``, ``Identity``, ``Flatten`` and ``Unflatten`` live beside it)."""

from __future__ import annotations

import math

from ember import random
from ember.core.array import Array
from ember.errors import ShapeError
from ember.nn._module import Module
from ember.nn.functional._linear import linear

__all__ = ["Linear"]


def uniform_init(key: Array, shape: tuple[int, ...], bound: float, dtype=None) -> Array:
    """Uniform on [-bound, bound): PyTorch's default for Linear and Conv weights and biases (bound 1/sqrt(fan_in))."""
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

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key: Array, dtype=None) -> None:
        self.in_features, self.out_features = int(in_features), int(out_features)
        wkey, bkey = random.split(key)
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = uniform_init(wkey, (out_features, in_features), bound, dtype)
        self.bias = uniform_init(bkey, (out_features,), bound, dtype) if bias else None

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        if getattr(x, "ndim", 0) < 1 or x.shape[-1] != self.in_features:
            raise ShapeError(f"expected an input whose last dimension is in_features={self.in_features}, got shape "
                             f"{getattr(x, 'shape', ())} ({getattr(x, 'dtype', type(x).__name__)})")
        return linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
