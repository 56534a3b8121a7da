"""Normalisation: ``layer_norm``, ``rms_norm``, ``group_norm``, ``batch_norm``, ``instance_norm``,
``local_response_norm``, with PyTorch's arguments.

``batch_norm`` and ``instance_norm`` are functional where PyTorch's mutate: with running statistics in
training mode they return ``(out, new_running_mean, new_running_var)`` instead of updating the buffers
in place; otherwise they return ``out`` alone.

Statistics of float16/bfloat16 inputs are computed in float32 (as PyTorch's CPU kernels do) and the
result cast back.
"""

from __future__ import annotations

from collections.abc import Sequence

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike, floating_input

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "rms_norm"]

_HALF = (enp.float16, enp.bfloat16)


def _compute_dtype(dtype) -> object:
    """The dtype statistics are computed in: float32 for the half-precision floats."""
    return enp.float32 if dtype in _HALF else dtype


def _check_param(op: str, name: str, p: ArrayLike | None, shape: tuple[int, ...], x: Array) -> Array | None:
    if p is None:
        return None
    p = enp.asarray(p)
    if p.shape != shape:
        raise ShapeError(f"{op}: {name} must have shape {shape} for an input of shape {x.shape} ({x.dtype}), "
                         f"got shape {p.shape} ({p.dtype})")  # fmt: skip
    return p


def _channel_params(op: str, x: Array, c: int, *params: ArrayLike | None) -> list[Array | None]:
    """batch_norm's and instance_norm's (running_mean, running_var, weight, bias), each None or of shape (C,)."""
    running_mean, running_var = params[:2]
    if (running_mean is None) != (running_var is None):
        raise InvalidArgumentError(f"{op}: pass both running_mean and running_var, or neither")
    names = ("running_mean", "running_var", "weight", "bias")
    return [_check_param(op, name, p, (c,), x) for name, p in zip(names, params)]


def _channel_view(p: Array, ndim: int) -> Array:
    """A per-channel vector (C,) shaped (C, 1, ..., 1) to broadcast against (N, C, *spatial)."""
    return p.reshape(p.shape + (1,) * (ndim - 2))


def _normalized_shape(op: str, normalized_shape: int | Sequence[int], x: Array) -> tuple[int, ...]:
    shape = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(n) for n in normalized_shape)
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise ShapeError(f"{op}: the input's last dimensions must equal normalized_shape={list(shape)}, got an input "
                         f"of shape {x.shape} ({x.dtype})")  # fmt: skip
    return shape


def layer_norm(input: ArrayLike, normalized_shape: int | Sequence[int], weight: ArrayLike | None = None,
               bias: ArrayLike | None = None, eps: float = 1e-5) -> Array:  # fmt: skip
    """Normalise over the last ``len(normalized_shape)`` dimensions, as ``torch.nn.functional.layer_norm``.

    ``(x - mean) / sqrt(var + eps) * weight + bias`` with the biased variance.

    Args:
        input: shape (*, *normalized_shape), floating.
        normalized_shape: the trailing shape to normalise over (an int for the last dimension).
        weight, bias: optional, of shape ``normalized_shape``.
        eps: added to the variance.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.layer_norm(enp.array([[1.0, 3.0], [2.0, 2.0]]), (2,)).round(4).tolist()
    [[-1.0, 1.0], [0.0, 0.0]]
    """
    x = floating_input("layer_norm", input)
    shape = _normalized_shape("layer_norm", normalized_shape, x)
    weight = _check_param("layer_norm", "weight", weight, shape, x)
    bias = _check_param("layer_norm", "bias", bias, shape, x)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    xc = x.astype(_compute_dtype(x.dtype))
    mean = enp.mean(xc, axis=axes, keepdims=True)
    centred = xc - mean
    var = enp.mean(centred * centred, axis=axes, keepdims=True)
    out = (centred * lax.rsqrt(var + eps)).astype(x.dtype)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input: ArrayLike, normalized_shape: int | Sequence[int], weight: ArrayLike | None = None,
             eps: float | None = None) -> Array:  # fmt: skip
    """Root-mean-square normalisation, as ``torch.nn.functional.rms_norm``: ``x / sqrt(mean(x**2) + eps) * weight``.

    Args:
        input: shape (*, *normalized_shape), floating.
        normalized_shape: the trailing shape to normalise over.
        weight: optional, of shape ``normalized_shape``.
        eps: added to the mean square; default ``finfo(input.dtype).eps`` (PyTorch's default).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.rms_norm(enp.array([2.0, 2.0, 2.0, -2.0]), (4,), eps=0.0).tolist()
    [1.0, 1.0, 1.0, -1.0]
    """
    x = floating_input("rms_norm", input)
    shape = _normalized_shape("rms_norm", normalized_shape, x)
    weight = _check_param("rms_norm", "weight", weight, shape, x)
    if eps is None:
        eps = float(enp.finfo(x.dtype).eps)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    xc = x.astype(_compute_dtype(x.dtype))
    out = (xc * lax.rsqrt(enp.mean(xc * xc, axis=axes, keepdims=True) + eps)).astype(x.dtype)
    return out if weight is None else out * weight


def _channels_first(op: str, x: Array, min_ndim: int = 2) -> int:
    if x.ndim < min_ndim:
        raise ShapeError(f"{op}: expected an input of shape (N, C, *) with at least {min_ndim} dimensions, got shape "
                         f"{x.shape} ({x.dtype})")  # fmt: skip
    return x.shape[1]


def _channel_affine(out: Array, weight: Array | None, bias: Array | None) -> Array:
    """``out * weight + bias`` with per-channel (C,) parameters broadcast along axis 1; None skips one."""
    if weight is not None:
        out = out * _channel_view(weight, out.ndim)
    if bias is not None:
        out = out + _channel_view(bias, out.ndim)
    return out


def group_norm(input: ArrayLike, num_groups: int, weight: ArrayLike | None = None, bias: ArrayLike | None = None,
               eps: float = 1e-5) -> Array:  # fmt: skip
    """Normalise each group of ``C // num_groups`` channels of each sample, as ``torch.nn.functional.group_norm``.

    Args:
        input: shape (N, C, *), floating.
        num_groups: the number of groups; must divide C.
        weight, bias: optional per-channel affine parameters, shape (C,).
        eps: added to the variance.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.group_norm(enp.array([[1.0, 3.0, 5.0, 5.0]]), 2).round(4).tolist()
    [[-1.0, 1.0, 0.0, 0.0]]
    """
    x = floating_input("group_norm", input)
    c = _channels_first("group_norm", x)
    num_groups = int(num_groups)
    if num_groups <= 0 or c % num_groups:
        raise ShapeError(f"group_norm: num_groups={num_groups} must be positive and divide the number of channels, "
                         f"got an input of shape {x.shape} ({x.dtype}) with {c} channels")  # fmt: skip
    weight = _check_param("group_norm", "weight", weight, (c,), x)
    bias = _check_param("group_norm", "bias", bias, (c,), x)
    per_group = (c // num_groups) * _prod(x.shape[2:])
    grouped = x.astype(_compute_dtype(x.dtype)).reshape((x.shape[0], num_groups, per_group))
    mean = enp.mean(grouped, axis=-1, keepdims=True)
    centred = grouped - mean
    var = enp.mean(centred * centred, axis=-1, keepdims=True)
    return _channel_affine((centred * lax.rsqrt(var + eps)).reshape(x.shape).astype(x.dtype), weight, bias)


def _prod(shape: Sequence[int]) -> int:
    out = 1
    for n in shape:
        out *= n
    return out


def _batch_moments(x: Array, axes: tuple[int, ...], axis_name) -> tuple[Array, Array, Array]:
    """Per-channel mean, biased variance and element count over ``axes`` (and over the named vmap axis)."""
    count = 1
    for a in axes:
        count *= x.shape[a]
    mean = enp.mean(x, axis=axes)
    if axis_name is not None:
        mean = lax.pmean(mean, axis_name)
        count = count * lax.psum(1, axis_name)
    centred = x - mean.reshape(mean.shape + (1,) * (x.ndim - 2))
    var = enp.mean(centred * centred, axis=axes)
    if axis_name is not None:
        var = lax.pmean(var, axis_name)
    return mean, var, count


def batch_norm(input: ArrayLike, running_mean: ArrayLike | None, running_var: ArrayLike | None,
               weight: ArrayLike | None = None, bias: ArrayLike | None = None, training: bool = False,
               momentum: float | ArrayLike = 0.1, eps: float = 1e-5, *,
               axis_name=None) -> Array | tuple[Array, Array, Array]:  # fmt: skip
    """Batch normalisation over every dimension but the channels (dimension 1), as ``torch.nn.functional.batch_norm``.

    Unlike PyTorch's, which updates ``running_mean`` / ``running_var`` in place, this function is pure:

    - ``training=True`` with running statistics: normalises with the batch statistics and returns
      ``(out, new_running_mean, new_running_var)``, where ``new = (1 - momentum) * old + momentum * batch``
      (the batch variance unbiased, as PyTorch).
    - ``training=True`` with ``running_mean=running_var=None``: batch statistics; returns ``out``.
    - ``training=False``: normalises with the running statistics (required); returns ``out``.

    Args:
        input: shape (N, C, *), floating.
        running_mean, running_var: shape (C,), or None (only in training).
        weight, bias: optional per-channel affine parameters, shape (C,).
        training: use (and, with running statistics, update) the batch statistics.
        momentum: the update factor; may be an array (``nn.BatchNorm`` passes ``1 / num_batches_tracked``
            for ``momentum=None``).
        eps: added to the variance.
        axis_name: (ember only) the name of a ``vmap`` axis: the batch statistics are averaged over it
            with ``lax.pmean``, so every vmapped member sees the statistics of the whole vmapped batch.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x = enp.array([[0.0, 1.0], [2.0, 3.0]])
    >>> out, mean, var = F.batch_norm(x, enp.zeros(2), enp.ones(2), training=True, momentum=0.5)
    >>> out.round(4).tolist(), mean.tolist(), var.tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [0.5, 1.0], [1.5, 1.5])
    """
    x = floating_input("batch_norm", input)
    c = _channels_first("batch_norm", x)
    params = _channel_params("batch_norm", x, c, running_mean, running_var, weight, bias)
    running_mean, running_var, weight, bias = params
    xc = x.astype(_compute_dtype(x.dtype))
    axes = (0, *range(2, x.ndim))
    new_stats = None
    if training and x.size == 0:
        # PyTorch: an empty batch passes through (with the affine map); the running statistics stay as they are.
        mean, var = enp.zeros((c,), xc.dtype), enp.ones((c,), xc.dtype) - eps
        new_stats = None if running_mean is None else (running_mean, running_var)
    elif training:
        mean, var, count = _batch_moments(xc, axes, axis_name)
        if isinstance(count, int) and count <= 1:
            raise ShapeError(f"batch_norm: expected more than 1 value per channel when training, got an input of shape "
                             f"{x.shape} ({x.dtype}); use a larger batch, or eval mode")  # fmt: skip
        if running_mean is not None:
            unbiased = var * (count / (count - 1))
            new_mean = (1 - momentum) * running_mean + momentum * mean.astype(running_mean.dtype)
            new_var = (1 - momentum) * running_var + momentum * unbiased.astype(running_var.dtype)
            new_stats = (new_mean.astype(running_mean.dtype), new_var.astype(running_var.dtype))
    else:
        if running_mean is None:
            raise InvalidArgumentError("batch_norm: running_mean and running_var are required when training=False; "
                                       "pass training=True to normalise with the batch statistics")  # fmt: skip
        mean, var = running_mean.astype(xc.dtype), running_var.astype(xc.dtype)
    scale = lax.rsqrt(var + eps)
    out = ((xc - _channel_view(mean, x.ndim)) * _channel_view(scale, x.ndim)).astype(x.dtype)
    out = _channel_affine(out, weight, bias)
    return out if new_stats is None else (out, *new_stats)


def instance_norm(input: ArrayLike, running_mean: ArrayLike | None = None, running_var: ArrayLike | None = None,
                  weight: ArrayLike | None = None, bias: ArrayLike | None = None, use_input_stats: bool = True,
                  momentum: float | ArrayLike = 0.1,
                  eps: float = 1e-5) -> Array | tuple[Array, Array, Array]:  # fmt: skip
    """Normalise each channel of each sample over its spatial dimensions, as ``torch.nn.functional.instance_norm``.

    Pure like ``batch_norm``: with ``use_input_stats=True`` and running statistics it returns ``(out,
    new_running_mean, new_running_var)``, the running statistics moved towards the per-instance statistics
    averaged over the batch (as PyTorch); otherwise ``out``. ``use_input_stats=False`` normalises with the
    running statistics.

    Args:
        input: shape (N, C, *spatial), floating, at least one spatial dimension.
        running_mean, running_var: shape (C,), or None.
        weight, bias: optional per-channel affine parameters, shape (C,).
        use_input_stats: normalise with each instance's statistics (else the running ones).
        momentum: the running statistics' update factor.
        eps: added to the variance.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.instance_norm(enp.array([[[1.0, 3.0], [0.0, 0.0]]])).round(4).tolist()
    [[[-1.0, 1.0], [0.0, 0.0]]]
    """
    x = floating_input("instance_norm", input)
    c = _channels_first("instance_norm", x, 3)
    params = _channel_params("instance_norm", x, c, running_mean, running_var, weight, bias)
    running_mean, running_var, weight, bias = params
    xc = x.astype(_compute_dtype(x.dtype))
    axes = tuple(range(2, x.ndim))
    spatial = (1,) * len(axes)
    new_stats = None
    if use_input_stats:
        count = 1
        for a in axes:
            count *= x.shape[a]
        mean = enp.mean(xc, axis=axes, keepdims=True)
        centred = xc - mean
        var = enp.mean(centred * centred, axis=axes, keepdims=True)
        if count == 1:
            raise ShapeError(f"instance_norm: expected more than 1 spatial element per channel when using the input's "
                             f"statistics, got an input of shape {x.shape} ({x.dtype})")  # fmt: skip
        if running_mean is not None:
            batch_mean = enp.mean(mean.reshape(mean.shape[:2]), axis=0)
            batch_var = enp.mean(var.reshape(var.shape[:2]), axis=0) * (count / (count - 1))
            new_mean = (1 - momentum) * running_mean + momentum * batch_mean.astype(running_mean.dtype)
            new_var = (1 - momentum) * running_var + momentum * batch_var.astype(running_var.dtype)
            new_stats = (new_mean.astype(running_mean.dtype), new_var.astype(running_var.dtype))
        out = centred * lax.rsqrt(var + eps)
    else:
        if running_mean is None:
            raise InvalidArgumentError("instance_norm: use_input_stats=False needs running_mean and running_var")
        mean = running_mean.astype(xc.dtype).reshape((c, *spatial))
        scale = lax.rsqrt(running_var.astype(xc.dtype) + eps).reshape((c, *spatial))
        out = (xc - mean) * scale
    out = out.astype(x.dtype)
    out = _channel_affine(out, weight, bias)
    return out if new_stats is None else (out, *new_stats)


def local_response_norm(input: ArrayLike, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Array:
    """Normalise each value by the squares of its ``size`` neighbouring channels, as
    ``torch.nn.functional.local_response_norm``: ``x / (k + alpha / size * sum(x**2 over the window)) ** beta``.

    The window along the channels is centred (``size // 2`` before, ``(size - 1) // 2`` after), zero-padded.

    Args:
        input: shape (N, C, *), at least 3 dimensions, floating.
        size: the number of neighbouring channels.
        alpha, beta, k: the formula's constants.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.local_response_norm(enp.array([[[4.0], [3.0]]]), 2, alpha=2.0, beta=0.5, k=0.0).tolist()
    [[[1.0], [0.6000000238418579]]]
    """
    x = floating_input("local_response_norm", input)
    c = _channels_first("local_response_norm", x, 3)
    size = int(size)
    if size <= 0:
        raise InvalidArgumentError(f"local_response_norm: size must be a positive int, got {size}")
    sq = (x * x).astype(_compute_dtype(x.dtype))
    padded = enp.pad(sq, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = padded[:, 0:c]
    for i in range(1, size):
        window = window + padded[:, i:i + c]
    div = (window * (alpha / size) + k) ** beta
    return (x.astype(div.dtype) / div).astype(x.dtype)
