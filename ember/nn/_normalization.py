"""Normalisation layers: ``LayerNorm``, ``RMSNorm``, ``GroupNorm``, ``LocalResponseNorm``, ``BatchNorm1d/2d/3d``
and ``InstanceNorm1d/2d/3d``, as ``torch.nn``'s, with BatchNorm's running statistics in an explicit ``nn.State``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember.numpy as enp
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._checks import describe
from ember.nn._module import Module
from ember.nn._state import State
from ember.nn.functional._normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    rms_norm,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "LocalResponseNorm", "RMSNorm"]  # fmt: skip


def _shape_tuple(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (int(normalized_shape),)
    return tuple(int(n) for n in normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions, as ``torch.nn.LayerNorm``.

    Args:
        normalized_shape: the trailing shape to normalise over (an int for the last dimension).
        eps: added to the variance.
        elementwise_affine: learn a per-element ``weight`` (ones) and ``bias`` (zeros).
        bias: with ``elementwise_affine``, whether to learn the bias.
        dtype: the parameters' dtype.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> ln = nn.LayerNorm(2)
    >>> ln, ln(enp.array([[1.0, 3.0]])).round(4).tolist()
    (LayerNorm((2,), eps=1e-05, elementwise_affine=True, bias=True), [[-1.0, 1.0]])
    """

    weight: Array | None
    bias: Array | None
    normalized_shape: tuple[int, ...]
    eps: float
    elementwise_affine: bool

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, *, dtype: Any = None) -> None:  # fmt: skip
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = enp.ones(self.normalized_shape, dtype=dtype) if elementwise_affine else None
        self.bias = enp.zeros(self.normalized_shape, dtype=dtype) if elementwise_affine and bias else None

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")  # fmt: skip


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions, as ``torch.nn.RMSNorm``.

    Args:
        normalized_shape: the trailing shape to normalise over.
        eps: added to the mean square; ``None``: ``finfo(x.dtype).eps``.
        elementwise_affine: learn a per-element ``weight`` (ones).
        dtype: the parameters' dtype.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.RMSNorm(4)(enp.array([2.0, 2.0, 2.0, -2.0])).round(4).tolist()
    [1.0, 1.0, 1.0, -1.0]
    """

    weight: Array | None
    normalized_shape: tuple[int, ...]
    eps: float | None
    elementwise_affine: bool

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, *, dtype: Any = None) -> None:  # fmt: skip
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = enp.ones(self.normalized_shape, dtype=dtype) if elementwise_affine else None

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def _check_channels(x: Any, ranks: tuple[int, ...], unbatched: int | None, channels: int, what: str) -> int:
    """Check the rank (one of ``ranks``, or ``unbatched``) and the channel count; return the channel axis."""
    ndim = getattr(x, "ndim", 0)
    if ndim not in ranks and ndim != unbatched:
        allowed = " or ".join(f"{r}D" for r in ranks) + (f" (or {unbatched}D without the batch dimension)"
                                                         if unbatched is not None else "")  # fmt: skip
        raise ShapeError(f"expected a {allowed} input {what}, got shape {describe(x)}")
    axis = 0 if ndim == unbatched else 1
    if x.shape[axis] != channels:
        raise ShapeError(f"expected {channels} channels (dimension {axis}), got an input of shape {x.shape} "
                         f"({x.dtype})")  # fmt: skip
    return axis


class GroupNorm(Module):
    """Normalise groups of channels of each sample, as ``torch.nn.GroupNorm``.

    Args:
        num_groups: the number of groups; must divide ``num_channels``.
        num_channels: C of the (N, C, *) input.
        eps: added to the variance.
        affine: learn per-channel ``weight`` (ones) and ``bias`` (zeros).
        bias: with ``affine``, whether to learn the bias.
        dtype: the parameters' dtype.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.GroupNorm(2, 4)
    GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)
    """

    weight: Array | None
    bias: Array | None
    num_groups: int
    num_channels: int
    eps: float
    affine: bool

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *, bias: bool = True,
                 dtype: Any = None) -> None:  # fmt: skip
        if num_groups <= 0 or num_channels % num_groups:
            raise InvalidArgumentError(f"GroupNorm: num_channels={num_channels} must be divisible by "
                                       f"num_groups={num_groups}")  # fmt: skip
        self.num_groups, self.num_channels, self.eps, self.affine = int(num_groups), int(num_channels), eps, affine
        self.weight = enp.ones((num_channels,), dtype=dtype) if affine else None
        self.bias = enp.zeros((num_channels,), dtype=dtype) if affine and bias else None

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        if getattr(x, "ndim", 0) < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(f"expected an input of shape (N, {self.num_channels}, *), got shape {describe(x)}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")  # fmt: skip


class LocalResponseNorm(Module):
    """``nn.functional.local_response_norm`` as a layer, as ``torch.nn.LocalResponseNorm``.

    >>> from ember import nn
    >>> nn.LocalResponseNorm(2)
    LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)
    """

    size: int
    alpha: float
    beta: float
    k: float

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        self.size, self.alpha, self.beta, self.k = int(size), alpha, beta, k

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# --- BatchNorm and InstanceNorm: running statistics in an nn.State ----------------------------------------


class _NormBase(Module):
    """What BatchNorm and InstanceNorm share: PyTorch's ``_NormBase`` arguments, parameters and buffers."""

    weight: Array | None
    bias: Array | None
    num_features: int
    eps: float
    momentum: float | None
    affine: bool
    track_running_stats: bool
    training: bool
    state_key: str | None
    dtype: Any
    # Set by each concrete class (unannotated: class attributes, not fields): the input ranks it accepts and
    # their layouts for the error message.
    _ranks = ()
    _what = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, bias: bool = True, dtype: Any = None) -> None:  # fmt: skip
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = enp.ones((num_features,), dtype=dtype) if affine else None
        self.bias = enp.zeros((num_features,), dtype=dtype) if affine and bias else None
        self.training, self.state_key, self.dtype = True, None, None if dtype is None else enp.dtype(dtype)

    def has_state(self) -> bool:
        """Whether this layer keeps running statistics (``track_running_stats``)."""
        return self.track_running_stats

    def initial_state(self) -> dict[str, Array]:
        """PyTorch's initial buffers: ``running_mean`` zeros, ``running_var`` ones, ``num_batches_tracked`` 0.

        ``num_batches_tracked`` has ember's default integer dtype (int32; int64 under x64), where PyTorch's is int64.
        """
        return {"running_mean": enp.zeros((self.num_features,), dtype=self.dtype),
                "running_var": enp.ones((self.num_features,), dtype=self.dtype),
                "num_batches_tracked": enp.array(0)}  # fmt: skip

    def _running(self, state: State | None) -> dict[str, Array]:
        if state is None:
            raise InvalidArgumentError(
                f"{type(self).__name__}({self.extra_repr()}) keeps running statistics: call it as out, state = "
                f"layer(x, state) with the state from nn.make_with_state(...) (or build it with "
                f"track_running_stats=False)")
        if not isinstance(state, State):
            raise InvalidArgumentError(f"{type(self).__name__}: expected an nn.State as the second argument, got "
                                       f"{type(state).__name__}")  # fmt: skip
        return state.get(self)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")  # fmt: skip


class _BatchNorm(_NormBase):
    """Batch normalisation with PyTorch's running statistics, kept in an ``nn.State``.

    With ``track_running_stats=True`` (the default) the layer is stateful: build it with
    ``nn.make_with_state`` and call ``out, state = bn(x, state)``. In training mode it normalises with the
    batch statistics and returns the state with ``running_mean``, ``running_var`` (the unbiased batch
    variance) and ``num_batches_tracked`` updated (``momentum=None``: a cumulative average, factor
    ``1 / num_batches_tracked``); in eval mode (``bn.eval()``) it normalises with the running statistics
    and returns the state unchanged. With ``track_running_stats=False`` it always uses the batch
    statistics, keeps no state and is called ``out = bn(x)`` (``bn(x, state)`` returns the state unchanged).

    Under ``vmap``, the three choices of PyTorch's ``torch.func`` batch-norm note:

    1. statistics per vmapped example: ``vmap`` the stateful call (``in_axes=(0, None)``); each member
       normalises its own batch and returns its own updated state (``out_axes=0``);
    2. statistics shared over the vmapped batch: build the layer with ``axis_name="batch"`` and vmap with
       ``axis_name="batch"``: the batch statistics are averaged with ``lax.pmean`` over the vmapped axis, so
       ``vmap`` over the examples (each a batch of one, or unbatched) equals PyTorch's BatchNorm on the
       whole batch, and the updated state is the same for every member (take ``out_axes=None``);
    3. no running statistics: ``track_running_stats=False``;

    and eval mode, which uses the running statistics only and so is the same under any ``vmap``.

    With ``axis_name`` set the layer also accepts an input without the batch dimension.

    ``num_batches_tracked`` has ember's default integer dtype (int32 unless x64 is on); PyTorch's is int64.
    """

    axis_name: Any

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, bias: bool = True, axis_name: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, bias=bias, dtype=dtype)
        self.axis_name = axis_name

    def __call__(self, x: Array, state: State | None = None, *, key: Array | None = None) -> Any:
        no_batch = None if self.axis_name is None else min(self._ranks) - 1
        unbatched = _check_channels(x, self._ranks, no_batch, self.num_features, self._what) == 0
        if unbatched:
            x = x[None]
        if self.track_running_stats:
            running = self._running(state)
            if self.training:
                count = running["num_batches_tracked"] + 1
                factor = self.momentum if self.momentum is not None else 1.0 / count.astype(
                    running["running_mean"].dtype)
                out, mean, var = batch_norm(x, running["running_mean"], running["running_var"], self.weight,
                                            self.bias, True, factor, self.eps, axis_name=self.axis_name)  # fmt: skip
                state = state.set(self, {"running_mean": mean, "running_var": var, "num_batches_tracked": count})
            else:
                out = batch_norm(x, running["running_mean"], running["running_var"], self.weight, self.bias, False,
                                 0.0, self.eps)  # fmt: skip
        else:
            out = batch_norm(x, None, None, self.weight, self.bias, True, 0.0, self.eps, axis_name=self.axis_name)
        if unbatched:
            out = out[0]
        return out if state is None else (out, state)

    def extra_repr(self) -> str:
        extra = super().extra_repr()
        return extra if self.axis_name is None else f"{extra}, axis_name={self.axis_name!r}"


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of an (N, C) or (N, C, L) input, as ``torch.nn.BatchNorm1d``.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: the running statistics' update factor; ``None``: a cumulative average.
        affine: learn per-channel ``weight`` (ones) and ``bias`` (zeros).
        track_running_stats: keep running statistics in an ``nn.State`` (used in eval mode).
        bias: (keyword) with ``affine``, whether to learn the bias.
        axis_name: (ember only) a ``vmap`` axis to share the batch statistics over (see below).
        dtype: the parameters' and statistics' dtype.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> bn, state = nn.make_with_state(nn.BatchNorm1d)(2)
    >>> out, state = bn(enp.array([[0.0, 1.0], [2.0, 3.0]]), state)
    >>> out.round(4).tolist(), state["running_mean"].tolist(), int(state["num_batches_tracked"])
    ([[-1.0, -1.0], [1.0, 1.0]], [0.10000000149011612, 0.20000000298023224], 1)
    >>> out, same = bn.eval()(enp.array([[0.0, 1.0]]), state)
    >>> same is state
    True

    Statistics shared over a vmapped batch (choice 2 below) equal the layer on the whole batch:

    >>> bn, state = nn.make_with_state(nn.BatchNorm1d)(2, axis_name="batch")
    >>> x = enp.array([[0.0, 1.0], [2.0, 3.0]])
    >>> out, new = ember.vmap(bn, in_axes=(0, None), out_axes=(0, None), axis_name="batch")(x, state)
    >>> out.round(4).tolist(), new["running_mean"].tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [0.10000000149011612, 0.20000000298023224])
    """

    _ranks = (2, 3)
    _what = "(N, C) or (N, C, L)"
    __doc__ = __doc__ + "\n".join(_BatchNorm.__doc__.splitlines()[1:])


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of an (N, C, H, W) input, as ``torch.nn.BatchNorm2d``; arguments as ``BatchNorm1d``.

    >>> from ember import nn
    >>> nn.BatchNorm2d(3, momentum=None)
    BatchNorm2d(3, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)
    """

    _ranks = (4,)
    _what = "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of an (N, C, D, H, W) input, as ``torch.nn.BatchNorm3d``; arguments as ``BatchNorm1d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.BatchNorm3d(2, track_running_stats=False)(enp.ones((2, 2, 1, 1, 2))).tolist()[0][0]
    [[[0.0, 0.0]]]
    """

    _ranks = (5,)
    _what = "(N, C, D, H, W)"


class _InstanceNorm(_NormBase):
    """Instance normalisation with PyTorch's defaults ``affine=False, track_running_stats=False``.

    With ``track_running_stats=True`` the layer is stateful like BatchNorm: in training it normalises each
    instance by its own statistics and moves the running statistics towards their batch average; in eval
    mode it normalises with the running statistics. As PyTorch, ``momentum=None`` means 0 here (no update)
    and ``num_batches_tracked`` is not advanced.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, *, bias: bool = True, dtype: Any = None) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, bias=bias, dtype=dtype)

    def __call__(self, x: Array, state: State | None = None, *, key: Array | None = None) -> Any:
        ndim = getattr(x, "ndim", 0)
        if ndim not in self._ranks:
            raise ShapeError(f"expected a {self._what} input, got shape {describe(x)}")
        unbatched = ndim == min(self._ranks)
        if unbatched:
            x = x[None]
        # PyTorch only warns about a channel mismatch without affine parameters or statistics (nothing uses C).
        if (self.affine or self.track_running_stats) and x.shape[1] != self.num_features:
            raise ShapeError(f"expected {self.num_features} channels (dimension {0 if unbatched else 1}), got an "
                             f"input of shape {x.shape[1:] if unbatched else x.shape} ({x.dtype})")  # fmt: skip
        momentum = self.momentum if self.momentum is not None else 0.0
        if self.track_running_stats:
            running = self._running(state)
            mean, var = running["running_mean"], running["running_var"]
            if self.training:
                out, mean, var = instance_norm(x, mean, var, self.weight, self.bias, True, momentum, self.eps)
                state = state.set(self, {**running, "running_mean": mean, "running_var": var})
            else:
                out = instance_norm(x, mean, var, self.weight, self.bias, False, momentum, self.eps)
        else:
            out = instance_norm(x, None, None, self.weight, self.bias, True, momentum, self.eps)
        if unbatched:
            out = out[0]
        return out if state is None else (out, state)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of an (N, C, L) or (C, L) input, as ``torch.nn.InstanceNorm1d``.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: the running statistics' update factor (``None``: 0).
        affine: learn per-channel ``weight`` and ``bias`` (default False).
        track_running_stats: keep running statistics in an ``nn.State`` (default False).
        bias: (keyword) with ``affine``, whether to learn the bias.
        dtype: the parameters' and statistics' dtype.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.InstanceNorm1d(1)(enp.array([[[1.0, 3.0]]])).round(4).tolist()
    [[[-1.0, 1.0]]]
    """

    _ranks = (2, 3)
    _what = "(N, C, L) or (C, L)"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of an (N, C, H, W) or (C, H, W) input, as ``torch.nn.InstanceNorm2d``; arguments as
    ``InstanceNorm1d``.

    >>> from ember import nn
    >>> nn.InstanceNorm2d(3)
    InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
    """

    _ranks = (3, 4)
    _what = "(N, C, H, W) or (C, H, W)"


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of an (N, C, D, H, W) or (C, D, H, W) input, as ``torch.nn.InstanceNorm3d``;
    arguments as ``InstanceNorm1d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.InstanceNorm3d(2)(enp.ones((2, 1, 1, 2))).tolist()
    [[[[0.0, 0.0]]], [[[0.0, 0.0]]]]
    """

    _ranks = (4, 5)
    _what = "(N, C, D, H, W) or (C, D, H, W)"
