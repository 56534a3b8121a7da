"""``linear`` and ``bilinear``: the affine maps of ``nn.Linear`` and ``nn.Bilinear``."""

from __future__ import annotations

from ember.core.array import Array
from ember.nn.functional._common import ArrayLike
from ember.errors import ShapeError
import ember.numpy as enp

__all__ = ["bilinear", "linear"]


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


def bilinear(input1: ArrayLike, input2: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None) -> Array:
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``, as
    ``torch.nn.functional.bilinear``.

    Args:
        input1: shape (*, in1_features).
        input2: shape (*, in2_features), the same leading dimensions as ``input1``.
        weight: shape (out_features, in1_features, in2_features).
        bias: shape (out_features,), optional.

    Returns:
        shape (*, out_features).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.bilinear(enp.array([1.0, 2.0]), enp.array([3.0]), enp.array([[[1.0], [1.0]]]), enp.array([0.5])).tolist()
    [9.5]
    """
    x1, x2, w = enp.asarray(input1), enp.asarray(input2), enp.asarray(weight)
    if (w.ndim != 3 or x1.ndim < 1 or x2.ndim < 1 or x1.shape[:-1] != x2.shape[:-1] or x1.shape[-1] != w.shape[1]
            or x2.shape[-1] != w.shape[2]):
        raise ShapeError(
            f"bilinear: input1 of shape {x1.shape} ({x1.dtype}) and input2 of shape {x2.shape} ({x2.dtype}) do not fit "
            f"a weight of shape {w.shape} ({w.dtype}); expected input1 (*, {w.shape[1] if w.ndim == 3 else 'in1'}), "
            f"input2 (*, {w.shape[2] if w.ndim == 3 else 'in2'}) with the same leading dimensions and a weight "
            "(out_features, in1_features, in2_features)")
    if bias is not None and enp.shape(bias) != (w.shape[0],):
        raise ShapeError(f"bilinear: expected a bias of shape ({w.shape[0]},) (out_features), got {enp.shape(bias)}")
    out = enp.einsum("...i,oij,...j->...o", x1, w, x2)
    return out if bias is None else out + bias
