"""``linear`` and ``bilinear``: the affine maps of ``nn.Linear`` and ``nn.Bilinear``."""

from __future__ import annotations

from ember.core.array import Array
from ember.nn.functional._common import ArrayLike
from ember.errors import ShapeError
import ember.numpy as enp

__all__ = ["linear"]


def linear(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None) -> Array:
    """``input @ weight.T + bias``, as ``torch.nn.functional.linear`` (weight of shape (out, in)).

    Args:
        input: shape (*, in_features).
        weight: shape (out_features, in_features) or (in_features,).
        bias: shape (out_features,) or (), optional.

    Returns:
        shape (*, out_features).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.linear(enp.array([1.0, 2.0]), enp.array([[1.0, 1.0], [0.0, 2.0]]), enp.array([0.5, 0.0])).tolist()
    [3.5, 4.0]
    """
    input, weight = enp.asarray(input), enp.asarray(weight)
    if weight.ndim not in (1, 2) or input.ndim < 1 or input.shape[-1] != weight.shape[-1]:
        raise ShapeError(
            f"linear: input of shape {input.shape} ({input.dtype}) does not fit a weight of shape {weight.shape} "
            f"({weight.dtype}); the input's last dimension must equal the weight's in_features (its last dimension)")
    out = enp.matmul(input, weight.T if weight.ndim == 2 else weight)
    return out if bias is None else out + bias
