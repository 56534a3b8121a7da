"""Pooling and resampling layers: ``MaxPool1d/2d/3d`` and ``MaxUnpool1d/2d/3d``, ``AvgPool1d/2d/3d``,
``LPPool1d/2d/3d``, the adaptive pools, ``Upsample`` and the pixel shuffles, with PyTorch's arguments and
``extra_repr``.

They hold no arrays; each calls its function in ``ember.nn.functional``, which checks the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core.array import Array
from ember.nn._module import Module
from ember.nn.functional import _pooling as fp
from ember.nn.functional._common import IntOrTuple, ntuple

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "PixelShuffle", "PixelUnshuffle",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
]  # fmt: skip


def _static(value: Any) -> Any:
    """Lists as tuples: hyperparameters are static, so they must be hashable."""
    return tuple(value) if isinstance(value, list) else value


class _MaxPoolNd(Module):
    kernel_size: IntOrTuple
    stride: IntOrTuple
    padding: IntOrTuple
    dilation: IntOrTuple
    return_indices: bool
    ceil_mode: bool

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 dilation: IntOrTuple = 1, return_indices: bool = False, ceil_mode: bool = False) -> None:  # fmt: skip
        self.kernel_size = _static(kernel_size)
        self.stride = _static(stride) if stride is not None else self.kernel_size
        self.padding, self.dilation = _static(padding), _static(dilation)
        self.return_indices, self.ceil_mode = bool(return_indices), bool(ceil_mode)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array | tuple[Array, Array]:
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                        self.return_indices)  # fmt: skip

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")  # fmt: skip


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling, as ``torch.nn.MaxPool1d`` (see ``nn.functional.max_pool1d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.MaxPool1d(3, stride=2, padding=1)
    >>> layer, layer(enp.ones((2, 4, 9))).shape
    (MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False), (2, 4, 5))
    """

    _fn = staticmethod(fp.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling, as ``torch.nn.MaxPool2d`` (see ``nn.functional.max_pool2d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.MaxPool2d(2)
    >>> layer, layer(enp.ones((1, 3, 5, 5))).shape
    (MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False), (1, 3, 2, 2))
    """

    _fn = staticmethod(fp.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling, as ``torch.nn.MaxPool3d`` (see ``nn.functional.max_pool3d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.MaxPool3d((1, 2, 2), ceil_mode=True)(enp.ones((2, 3, 5, 5))).shape
    (2, 3, 3, 3)
    """

    _fn = staticmethod(fp.max_pool3d)


class _MaxUnpoolNd(Module):
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0) -> None:
        name, n = type(self).__name__, self._n
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, n)
        self.stride = ntuple(name, "stride", stride if stride is not None else kernel_size, n)
        self.padding = ntuple(name, "padding", padding, n)

    def __call__(self, input: Array, indices: Array, output_size: Sequence[int] | None = None, *,
                 key: Array | None = None) -> Array:  # fmt: skip
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of ``MaxPool1d`` given its indices, as ``torch.nn.MaxUnpool1d`` (``layer(x, indices, output_size)``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> out, idx = nn.MaxPool1d(2, return_indices=True)(enp.array([[1.0, 3.0, 2.0, 0.0]]))
    >>> layer = nn.MaxUnpool1d(2)
    >>> layer, layer(out, idx).tolist()
    (MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,)), [[0.0, 3.0, 2.0, 0.0]])
    """

    _n = 1
    _fn = staticmethod(fp.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of ``MaxPool2d`` given its indices, as ``torch.nn.MaxUnpool2d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> out, idx = nn.MaxPool2d(2, return_indices=True)(enp.ones((1, 2, 5, 5)))
    >>> nn.MaxUnpool2d(2)(out, idx, output_size=(5, 5)).shape
    (1, 2, 5, 5)
    """

    _n = 2
    _fn = staticmethod(fp.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of ``MaxPool3d`` given its indices, as ``torch.nn.MaxUnpool3d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> out, idx = nn.MaxPool3d(2, return_indices=True)(enp.ones((1, 4, 4, 4)))
    >>> nn.MaxUnpool3d(2)(out, idx).shape
    (1, 4, 4, 4)
    """

    _n = 3
    _fn = staticmethod(fp.max_unpool3d)


class AvgPool1d(Module):
    """1-D average pooling, as ``torch.nn.AvgPool1d`` (see ``nn.functional.avg_pool1d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.AvgPool1d(3, stride=2)
    >>> layer, layer(enp.ones((2, 4, 9))).shape
    (AvgPool1d(kernel_size=(3,), stride=(2,), padding=(0,)), (2, 4, 4))
    """

    kernel_size: tuple[int]
    stride: tuple[int]
    padding: tuple[int]
    ceil_mode: bool
    count_include_pad: bool

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:  # fmt: skip
        # PyTorch's AvgPool1d (alone of the average pools) stores its sizes as 1-tuples, so its repr shows (3,).
        self.kernel_size = ntuple("AvgPool1d", "kernel_size", kernel_size, 1)
        self.stride = ntuple("AvgPool1d", "stride", stride if stride is not None else kernel_size, 1)
        self.padding = ntuple("AvgPool1d", "padding", padding, 1)
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return fp.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    kernel_size: IntOrTuple
    stride: IntOrTuple
    padding: IntOrTuple
    ceil_mode: bool
    count_include_pad: bool
    divisor_override: int | None

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:  # fmt: skip
        self.kernel_size = _static(kernel_size)
        self.stride = _static(stride) if stride is not None else self.kernel_size
        self.padding = _static(padding)
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.divisor_override = divisor_override

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                        self.divisor_override)  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling, as ``torch.nn.AvgPool2d`` (see ``nn.functional.avg_pool2d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.AvgPool2d(3, stride=2, padding=1)
    >>> layer, layer(enp.ones((1, 3, 6, 6))).shape
    (AvgPool2d(kernel_size=3, stride=2, padding=1), (1, 3, 3, 3))
    """

    _fn = staticmethod(fp.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling, as ``torch.nn.AvgPool3d`` (see ``nn.functional.avg_pool3d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.AvgPool3d(2, divisor_override=1)(enp.ones((1, 2, 2, 2))).tolist()
    [[[[8.0]]]]
    """

    _fn = staticmethod(fp.avg_pool3d)


class _LPPoolNd(Module):
    norm_type: float
    kernel_size: IntOrTuple
    stride: IntOrTuple | None
    ceil_mode: bool

    def __init__(self, norm_type: float, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
                 ceil_mode: bool = False) -> None:  # fmt: skip
        self.norm_type, self.kernel_size, self.stride = norm_type, _static(kernel_size), _static(stride)
        self.ceil_mode = bool(ceil_mode)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return self._fn(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")  # fmt: skip


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling, as ``torch.nn.LPPool1d`` (see ``nn.functional.lp_pool1d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.LPPool1d(2, 2)
    >>> layer, layer(enp.array([[3.0, 4.0]])).tolist()
    (LPPool1d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False), [[5.0]])
    """

    _fn = staticmethod(fp.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling, as ``torch.nn.LPPool2d`` (see ``nn.functional.lp_pool2d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.LPPool2d(1, (2, 2))(enp.ones((1, 2, 4))).tolist()
    [[[4.0, 4.0]]]
    """

    _fn = staticmethod(fp.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling, as ``torch.nn.LPPool3d`` (see ``nn.functional.lp_pool3d``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.LPPool3d(2, 2)(enp.ones((1, 1, 2, 2, 2))).shape
    (1, 1, 1, 1, 1)
    """

    _fn = staticmethod(fp.lp_pool3d)


class _AdaptiveAvgPoolNd(Module):
    output_size: int | tuple[int | None, ...]

    def __init__(self, output_size: int | Sequence[int | None]) -> None:
        self.output_size = _static(output_size)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return self._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed length, as ``torch.nn.AdaptiveAvgPool1d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.AdaptiveAvgPool1d(3)
    >>> layer, layer(enp.ones((2, 4, 10))).shape
    (AdaptiveAvgPool1d(output_size=3), (2, 4, 3))
    """

    _fn = staticmethod(fp.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (H, W), as ``torch.nn.AdaptiveAvgPool2d`` (None keeps that size).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.AdaptiveAvgPool2d((None, 1))
    >>> layer, layer(enp.ones((2, 4, 5, 7))).shape
    (AdaptiveAvgPool2d(output_size=(None, 1)), (2, 4, 5, 1))
    """

    _fn = staticmethod(fp.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (D, H, W), as ``torch.nn.AdaptiveAvgPool3d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.AdaptiveAvgPool3d(1)(enp.ones((2, 3, 4, 5))).shape
    (2, 1, 1, 1)
    """

    _fn = staticmethod(fp.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    output_size: int | tuple[int | None, ...]
    return_indices: bool

    def __init__(self, output_size: int | Sequence[int | None], return_indices: bool = False) -> None:
        self.output_size, self.return_indices = _static(output_size), bool(return_indices)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array | tuple[Array, Array]:
        return self._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed length, as ``torch.nn.AdaptiveMaxPool1d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.AdaptiveMaxPool1d(2, return_indices=True)
    >>> out, idx = layer(enp.array([[1.0, 5.0, 3.0, 4.0, 2.0]]))
    >>> layer, out.tolist(), idx.tolist()
    (AdaptiveMaxPool1d(output_size=2), [[5.0, 4.0]], [[1, 3]])
    """

    _fn = staticmethod(fp.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W), as ``torch.nn.AdaptiveMaxPool2d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.AdaptiveMaxPool2d((2, 3))(enp.ones((1, 5, 7))).shape
    (1, 2, 3)
    """

    _fn = staticmethod(fp.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W), as ``torch.nn.AdaptiveMaxPool3d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.AdaptiveMaxPool3d((1, None, 2))(enp.ones((1, 1, 3, 4, 5))).shape
    (1, 1, 1, 4, 2)
    """

    _fn = staticmethod(fp.adaptive_max_pool3d)


class Upsample(Module):
    """Resampling by a size or a scale factor, as ``torch.nn.Upsample`` (see ``nn.functional.interpolate``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.Upsample(scale_factor=2, mode="bilinear")
    >>> layer, layer(enp.ones((1, 3, 4, 5))).shape
    (Upsample(scale_factor=2.0, mode='bilinear'), (1, 3, 8, 10))
    """

    size: int | tuple[int, ...] | None
    scale_factor: float | tuple[float, ...] | None
    mode: str
    align_corners: bool | None
    recompute_scale_factor: bool | None

    def __init__(self, size: int | Sequence[int] | None = None, scale_factor: float | Sequence[float] | None = None,
                 mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:  # fmt: skip
        self.size = _static(size)
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return fp.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                              recompute_scale_factor=self.recompute_scale_factor)  # fmt: skip

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W), as ``torch.nn.UpsamplingNearest2d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.UpsamplingNearest2d(scale_factor=2)(enp.array([[[[1.0, 2.0]]]])).tolist()
    [[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]
    """

    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:  # fmt: skip
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with ``align_corners=True``, as ``torch.nn.UpsamplingBilinear2d``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.UpsamplingBilinear2d(size=(1, 3))(enp.array([[[[1.0, 2.0]]]])).tolist()
    [[[[1.0, 1.5, 2.0]]]]
    """

    def __init__(self, size: int | Sequence[int] | None = None,
                 scale_factor: float | Sequence[float] | None = None) -> None:  # fmt: skip
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r), as ``torch.nn.PixelShuffle``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.PixelShuffle(3)
    >>> layer, layer(enp.ones((1, 9, 4, 4))).shape
    (PixelShuffle(upscale_factor=3), (1, 1, 12, 12))
    """

    upscale_factor: int

    def __init__(self, upscale_factor: int) -> None:
        self.upscale_factor = int(upscale_factor)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return fp.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W), as ``torch.nn.PixelUnshuffle``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.PixelUnshuffle(2)
    >>> layer, layer(enp.ones((1, 1, 4, 6))).shape
    (PixelUnshuffle(downscale_factor=2), (1, 4, 2, 3))
    """

    downscale_factor: int

    def __init__(self, downscale_factor: int) -> None:
        self.downscale_factor = int(downscale_factor)

    def __call__(self, input: Array, *, key: Array | None = None) -> Array:
        return fp.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
