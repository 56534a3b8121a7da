"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``, PyTorch's arguments and initialisation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ember import random
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._checks import describe
from ember.nn._linear import uniform_init
from ember.nn._module import Module
from ember.nn.functional import _conv as fconv
from ember.nn.functional._common import IntOrTuple, ntuple
from ember.nn.functional._padding import pad

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What the six convolution layers share: fields, checks and PyTorch's ``extra_repr``."""

    weight: Array
    bias: Array | None
    in_channels: int
    out_channels: int
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...] | str
    dilation: tuple[int, ...]
    output_padding: tuple[int, ...]
    groups: int
    padding_mode: str

    _n = 0
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple,
                 padding: IntOrTuple | str, dilation: IntOrTuple, groups: int, bias: bool, padding_mode: str,
                 output_padding: IntOrTuple, key: Array, dtype) -> None:  # fmt: skip
        name, n = type(self).__name__, self._n
        self.in_channels, self.out_channels, self.groups = int(in_channels), int(out_channels), int(groups)
        if self.groups <= 0:
            raise InvalidArgumentError(f"{name}: groups must be a positive integer, got {groups}")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise InvalidArgumentError(f"{name}: in_channels={in_channels} and out_channels={out_channels} must both "
                                       f"be divisible by groups={groups}")
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, n)
        self.stride = ntuple(name, "stride", stride, n)
        self.dilation = ntuple(name, "dilation", dilation, n)
        self.output_padding = ntuple(name, "output_padding", output_padding, n)
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self._transposed:
                raise InvalidArgumentError(f"{name}: padding={padding!r} must be an int or a tuple of ints"
                                           + ("" if self._transposed else ", 'valid' or 'same'"))
            if padding == "same" and any(s != 1 for s in self.stride):
                raise InvalidArgumentError(f"{name}: padding='same' is not supported for strided convolutions "
                                           f"(stride={self.stride})")
            self.padding = padding
        else:
            self.padding = ntuple(name, "padding", padding, n)
        if padding_mode not in _PADDING_MODES or (self._transposed and padding_mode != "zeros"):
            allowed = "'zeros'" if self._transposed else "'zeros', 'reflect', 'replicate' or 'circular'"
            raise InvalidArgumentError(f"{name}: padding_mode={padding_mode!r} must be {allowed}")
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        # PyTorch's fan_in is weight.shape[1] * prod(kernel) for both (out / groups for a transposed one).
        fan_in = shape[1] * math.prod(self.kernel_size)
        wkey, bkey = random.split(key)
        self.weight = uniform_init(wkey, shape, fan_in, dtype)
        self.bias = uniform_init(bkey, (self.out_channels,), fan_in, dtype) if bias else None

    def _check_input(self, x: Array) -> None:
        n = self._n
        ndim = getattr(x, "ndim", 0)
        if ndim not in (n + 1, n + 2) or x.shape[ndim - n - 1] != self.in_channels:
            spatial = ", ".join("DHW"[3 - n:]) if n > 1 else "L"
            raise ShapeError(f"expected input of shape (N, {self.in_channels}, {spatial}) or ({self.in_channels}, "
                             f"{spatial}), got shape {describe(x)}")

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", *, key: Array, dtype: Any = None) -> None:  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, 0, key, dtype)  # fmt: skip

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        self._check_input(input)
        n = self._n
        conv = (fconv.conv1d, fconv.conv2d, fconv.conv3d)[n - 1]
        if self.padding_mode == "zeros":
            return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        if self.padding == "same":
            pairs = fconv.same_padding(self.kernel_size, self.dilation)
        elif self.padding == "valid":
            pairs = [(0, 0)] * n
        else:
            pairs = [(p, p) for p in self.padding]
        pad_arg = [p for pair in reversed(pairs) for p in pair]  # PyTorch's order: last dimension first
        x = pad(input, pad_arg, mode=self.padding_mode)
        return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, padding_mode: str = "zeros", *, key: Array,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, key, dtype)  # fmt: skip

    def _output_padding(self, x: Array, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """PyTorch's ``_output_padding``: the output_padding that gives ``output_size`` (its last n entries)."""
        n = self._n
        if output_size is None:
            return self.output_padding
        output_size = tuple(int(s) for s in output_size)
        if len(output_size) == n + 2 or (len(output_size) == n + 1 and x.ndim == n + 1):
            output_size = output_size[-n:]
        if len(output_size) != n:
            raise InvalidArgumentError(f"{type(self).__name__}: output_size={output_size} must have {n} or {n + 2} "
                                       f"entries (for an input of shape {x.shape})")
        out = []
        for i, (size, want) in enumerate(zip(x.shape[-n:], output_size)):
            smallest = ((size - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1)
                        + 1)  # fmt: skip
            largest = smallest + self.stride[i] - 1
            if not smallest <= want <= largest:
                raise ShapeError(f"requested an output size of {output_size}, but valid sizes for the input of shape "
                                 f"{x.shape} range from {smallest} to {largest} in dimension {i} (for an input of "
                                 f"{x.shape[-n:]})")
            out.append(want - smallest)
        return tuple(out)

    def __call__(self, input: Array, output_size: Sequence[int] | None = None, *, key: Array | None = None) -> Array:
        self._check_input(input)
        conv = (fconv.conv_transpose1d, fconv.conv_transpose2d, fconv.conv_transpose3d)[self._n - 1]
        output_padding = self._output_padding(input, output_size)
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) or (C_in, L), as ``torch.nn.Conv1d``.

    Args:
        in_channels, out_channels: channels in and out (both divisible by ``groups``).
        kernel_size, stride, dilation: an int or a 1-tuple.
        padding: an int or 1-tuple, ``"valid"`` or ``"same"``.
        groups: the number of channel groups (``in_channels``: depthwise).
        bias: whether to add a learned bias.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        key: the random key for the initial weights (uniform, +-1/sqrt(in_channels / groups * k), as PyTorch).
        dtype: the parameters' dtype (default float32).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.Conv1d(2, 4, 3, padding="same", padding_mode="circular", key=ember.random.key(0))
    >>> layer
    Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=same, padding_mode=circular)
    >>> layer(enp.ones((5, 2, 7))).shape
    (5, 4, 7)
    """

    _n = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) or (C_in, H, W), as ``torch.nn.Conv2d``.

    Args:
        in_channels, out_channels: channels in and out (both divisible by ``groups``).
        kernel_size, stride, dilation: an int or a 2-tuple.
        padding: an int or 2-tuple, ``"valid"`` or ``"same"`` (an even kernel pads one more at the end).
        groups: the number of channel groups (``in_channels``: depthwise).
        bias: whether to add a learned bias.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        key: the random key for the initial weights (uniform, +-1/sqrt(in_channels / groups * kH * kW)).
        dtype: the parameters' dtype (default float32).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False, key=ember.random.key(0))
    >>> layer
    Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)
    >>> layer(enp.ones((8, 3, 28, 28))).shape
    (8, 16, 14, 14)
    """

    _n = 2


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) or (C_in, D, H, W), as ``torch.nn.Conv3d``.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, key,
        dtype: as ``Conv2d``, with 3-tuples.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> nn.Conv3d(1, 2, (1, 2, 3), key=ember.random.key(0))(enp.ones((1, 4, 4, 4))).shape
    (2, 4, 3, 2)
    """

    _n = 3


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution, as ``torch.nn.ConvTranspose1d`` (weight (in, out / groups, k)).

    Args:
        in_channels, out_channels: channels in and out (both divisible by ``groups``).
        kernel_size, stride, padding, output_padding, dilation: an int or a 1-tuple.
        groups: the number of channel groups.
        bias: whether to add a learned bias.
        padding_mode: ``"zeros"`` only (as PyTorch).
        key: the random key for the initial weights (uniform, +-1/sqrt(out_channels / groups * k), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling it takes ``output_size=`` (as PyTorch) to choose among the sizes a strided layer can give.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.ConvTranspose1d(2, 3, 3, stride=2, key=ember.random.key(0))
    >>> layer(enp.ones((1, 2, 4))).shape, layer(enp.ones((1, 2, 4)), output_size=[10]).shape
    ((1, 3, 9), (1, 3, 10))
    """

    _n = 1


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution, as ``torch.nn.ConvTranspose2d`` (weight (in, out / groups, kH, kW)).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias, dilation,
        padding_mode, key, dtype: as ``ConvTranspose1d``, with 2-tuples.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.ConvTranspose2d(16, 3, 3, stride=2, padding=1, output_padding=1, key=ember.random.key(0))
    >>> layer
    ConvTranspose2d(16, 3, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1))
    >>> layer(enp.ones((2, 16, 7, 7))).shape
    (2, 3, 14, 14)
    """

    _n = 2


class ConvTranspose3d(_ConvTranspose):
    """3-d transposed convolution, as ``torch.nn.ConvTranspose3d`` (weight (in, out / groups, kD, kH, kW)).

    Args:
        in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias, dilation,
        padding_mode, key, dtype: as ``ConvTranspose1d``, with 3-tuples.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> nn.ConvTranspose3d(2, 2, 2, stride=2, key=ember.random.key(0))(enp.ones((2, 3, 3, 3))).shape
    (2, 6, 6, 6)
    """

    _n = 3
