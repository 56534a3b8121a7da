"""Convolutions with PyTorch's arguments: ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d`` over
``lax.conv_general_dilated`` (channels first: input (N, C, *spatial), weight (out, in / groups, *kernel))."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike, IntOrTuple, channels_first_rank, ntuple

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


def same_padding(kernel: Sequence[int], dilation: Sequence[int]) -> list[tuple[int, int]]:
    """PyTorch's ``padding='same'``: dilation * (k - 1) in all, the odd one at the end (even kernels)."""
    pairs = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pairs.append((total // 2, total - total // 2))
    return pairs


def _operands(op: str, n: int, input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None):
    x, w = enp.asarray(input), enp.asarray(weight)
    b = None if bias is None else enp.asarray(bias)
    for what, a in (("input", x), ("weight", w), ("bias", b)):
        if a is not None and not enp.issubdtype(a.dtype, enp.inexact):
            raise DTypeError(f"{op}: {what} has dtype {a.dtype}; convolutions take floating or complex arrays "
                             f"(as PyTorch); cast it, e.g. {what}.astype('float32')")
    dtype = enp.result_type(*(a for a in (x, w, b) if a is not None))
    x, w = x.astype(dtype), w.astype(dtype)
    b = None if b is None else b.astype(dtype)
    channels_first_rank(op, x, n)
    if w.ndim != n + 2:
        raise ShapeError(f"{op}: expected a {n + 2}-d weight, got shape {w.shape} ({w.dtype})")
    return x, w, b


def _check_groups(op: str, groups: int, w: Array, dim: int) -> int:
    groups = operator.index(groups)
    if groups < 1 or w.shape[dim] % groups:
        raise ShapeError(f"{op}: groups={groups} must be positive and divide the weight's dimension {dim}, "
                         f"got a weight of shape {w.shape} ({w.dtype})")
    return groups


def _check_bias(op: str, b: Array | None, channels: int) -> None:
    if b is not None and b.shape != (channels,):
        raise ShapeError(f"{op}: expected a bias of shape ({channels},) (one per output channel), got {b.shape} "
                         f"({b.dtype})")


def _add_bias(out: Array, b: Array | None, n: int) -> Array:
    return out if b is None else out + b.reshape((-1,) + (1,) * n)


def _conv(op: str, n: int, input, weight, bias, stride, padding, dilation, groups) -> Array:
    x, w, b = _operands(op, n, input, weight, bias)
    unbatched = x.ndim == n + 1
    if unbatched:
        x = x[None]
    stride = ntuple(op, "stride", stride, n)
    dilation = ntuple(op, "dilation", dilation, n)
    groups = _check_groups(op, groups, w, 0)
    if x.shape[1] != w.shape[1] * groups:
        raise ShapeError(f"{op}: groups={groups} and a weight of shape {w.shape} ({w.dtype}) expect an input with "
                         f"{w.shape[1] * groups} channels (dimension {0 if unbatched else 1}), got input of shape "
                         f"{x.shape[1:] if unbatched else x.shape} ({x.dtype})")
    kernel = w.shape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pairs = [(0, 0)] * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise InvalidArgumentError(f"{op}: padding='same' is not supported for strided convolutions "
                                           f"(stride={stride}); give the padding as ints")
            pairs = same_padding(kernel, dilation)
        else:
            raise InvalidArgumentError(f"{op}: padding={padding!r} must be 'valid', 'same', an int or a tuple of "
                                       f"{n} ints")
    else:
        pairs = [(p, p) for p in ntuple(op, "padding", padding, n)]
    for size, (lo, hi), k, d in zip(x.shape[2:], pairs, kernel, dilation):
        if d * (k - 1) + 1 > size + lo + hi:
            padded = tuple(s + a + c for s, (a, c) in zip(x.shape[2:], pairs))
            raise ShapeError(f"{op}: the kernel (weight of shape {w.shape}, dilation {dilation}) is larger than the "
                             f"padded input: input of shape {x.shape[1:] if unbatched else x.shape} ({x.dtype}) "
                             f"padded to spatial size {padded}; pad more or use a smaller kernel")
    _check_bias(op, b, w.shape[0])
    out = lax.conv_general_dilated(x, w, stride, pairs, rhs_dilation=dilation, feature_group_count=groups)
    out = _add_bias(out, b, n)
    return out[0] if unbatched else out


def _conv_transpose(op: str, n: int, input, weight, bias, stride, padding, output_padding, groups, dilation) -> Array:
    x, w, b = _operands(op, n, input, weight, bias)
    unbatched = x.ndim == n + 1
    if unbatched:
        x = x[None]
    stride = ntuple(op, "stride", stride, n)
    if isinstance(padding, str):
        raise InvalidArgumentError(f"{op}: padding={padding!r}: transposed convolutions take ints (as PyTorch)")
    padding = ntuple(op, "padding", padding, n)
    output_padding = ntuple(op, "output_padding", output_padding, n)
    dilation = ntuple(op, "dilation", dilation, n)
    groups = _check_groups(op, groups, w, 0)
    if x.shape[1] != w.shape[0]:
        raise ShapeError(f"{op}: a weight of shape {w.shape} ({w.dtype}) expects an input with {w.shape[0]} channels "
                         f"(dimension {0 if unbatched else 1}), got input of shape "
                         f"{x.shape[1:] if unbatched else x.shape} ({x.dtype})")
    if any(p < 0 for p in padding):
        raise InvalidArgumentError(f"{op}: padding={padding} must be non-negative")
    for s, d, p in zip(stride, dilation, output_padding):
        if p >= max(s, d) or p < 0:
            raise InvalidArgumentError(f"{op}: output_padding={output_padding} must be non-negative and smaller than "
                                       f"either stride={stride} or dilation={dilation} in each dimension")
    kernel = w.shape[2:]
    pairs = []
    for size, k, s, p, op_, d in zip(x.shape[2:], kernel, stride, padding, output_padding, dilation):
        out_size = (size - 1) * s - 2 * p + d * (k - 1) + op_ + 1
        if out_size < 1:
            given = x.shape[1:] if unbatched else x.shape
            raise ShapeError(f"{op}: input of shape {given} ({x.dtype}) with a weight of shape {w.shape}, "
                             f"stride={stride}, padding={padding}, dilation={dilation} gives an empty output "
                             f"(size {out_size}); use less padding")
        pairs.append((d * (k - 1) - p, d * (k - 1) - p + op_))
    cin, cout_g = w.shape[0], w.shape[1]
    # The transpose of a convolution: the kernel flipped, its in/out swapped within each group.
    k = w.reshape((groups, cin // groups, cout_g, *kernel))
    k = enp.swapaxes(k, 1, 2).reshape((groups * cout_g, cin // groups, *kernel))
    k = enp.flip(k, tuple(range(2, n + 2)))
    _check_bias(op, b, groups * cout_g)
    out = lax.conv_general_dilated(x, k, (1,) * n, pairs, lhs_dilation=stride, rhs_dilation=dilation,
                                   feature_group_count=groups)
    out = _add_bias(out, b, n)
    return out[0] if unbatched else out


def conv1d(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Array:
    """1-d convolution (cross-correlation), as ``torch.nn.functional.conv1d``.

    Args:
        input: (N, C_in, L) or unbatched (C_in, L).
        weight: (C_out, C_in / groups, k).
        bias: (C_out,), optional.
        stride, dilation: an int or a 1-tuple.
        padding: an int or 1-tuple (zeros on both sides), ``"valid"`` (none) or ``"same"`` (output as long
            as the input, stride 1; an even kernel pads one more at the end, as PyTorch).
        groups: split the channels into this many groups, each with its own kernels.

    Returns:
        (N, C_out, L_out), or (C_out, L_out) for an unbatched input.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv1d(enp.array([[1.0, 2.0, 3.0, 4.0]]), enp.array([[[1.0, -1.0]]])).tolist()
    [[-1.0, -1.0, -1.0]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Array:
    """2-d convolution (cross-correlation), as ``torch.nn.functional.conv2d``.

    Args:
        input: (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_out, C_in / groups, kH, kW).
        bias: (C_out,), optional.
        stride, dilation: an int or a 2-tuple.
        padding: an int or 2-tuple, ``"valid"`` or ``"same"`` (see ``conv1d``).
        groups: split the channels into this many groups (``groups == C_in``: depthwise).

    Returns:
        (N, C_out, H_out, W_out), or (C_out, H_out, W_out) for an unbatched input.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv2d(enp.ones((1, 3, 5, 5)), enp.ones((8, 3, 3, 3)), stride=2, padding=1).shape
    (1, 8, 3, 3)
    >>> F.conv2d(enp.ones((3, 5, 5)), enp.ones((3, 1, 2, 2)), padding="same", groups=3).shape
    (3, 5, 5)
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None, stride: IntOrTuple = 1,
           padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Array:
    """3-d convolution (cross-correlation), as ``torch.nn.functional.conv3d``.

    Args:
        input: (N, C_in, D, H, W) or unbatched (C_in, D, H, W).
        weight: (C_out, C_in / groups, kD, kH, kW).
        bias: (C_out,), optional.
        stride, padding, dilation, groups: as ``conv2d``, with 3-tuples.

    Returns:
        (N, C_out, D_out, H_out, W_out), or without N for an unbatched input.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv3d(enp.ones((2, 1, 4, 4, 4)), enp.ones((2, 1, 2, 2, 2))).shape
    (2, 2, 3, 3, 3)
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Array:
    """1-d transposed convolution (the gradient of ``conv1d`` w.r.t. its input), as PyTorch's.

    Args:
        input: (N, C_in, L) or unbatched (C_in, L).
        weight: (C_in, C_out / groups, k) (PyTorch's layout for transposed convolutions).
        bias: (C_out,), optional.
        stride, dilation: an int or a 1-tuple.
        padding: removes ``dilation * (k - 1) - padding`` less from each side: the forward convolution's padding.
        output_padding: extra size added at the end (smaller than stride or dilation), choosing among the
            input sizes a strided forward convolution maps to the same size.
        groups: the number of channel groups.

    Returns:
        (N, C_out, (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv_transpose1d(enp.array([[1.0, 2.0]]), enp.array([[[1.0, 1.0, 1.0]]]), stride=2).tolist()
    [[1.0, 1.0, 3.0, 2.0, 2.0]]
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Array:
    """2-d transposed convolution, as ``torch.nn.functional.conv_transpose2d`` (see ``conv_transpose1d``).

    Args:
        input: (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_in, C_out / groups, kH, kW).
        bias: (C_out,), optional.
        stride, padding, output_padding, groups, dilation: as ``conv_transpose1d``, with 2-tuples.

    Returns:
        (N, C_out, H_out, W_out), or without N for an unbatched input.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv_transpose2d(enp.ones((1, 4, 5, 5)), enp.ones((4, 2, 3, 3)), stride=2, padding=1, output_padding=1).shape
    (1, 2, 10, 10)
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input: ArrayLike, weight: ArrayLike, bias: ArrayLike | None = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Array:
    """3-d transposed convolution, as ``torch.nn.functional.conv_transpose3d`` (see ``conv_transpose1d``).

    Args:
        input: (N, C_in, D, H, W) or unbatched (C_in, D, H, W).
        weight: (C_in, C_out / groups, kD, kH, kW).
        bias: (C_out,), optional.
        stride, padding, output_padding, groups, dilation: as ``conv_transpose1d``, with 3-tuples.

    Returns:
        (N, C_out, D_out, H_out, W_out), or without N for an unbatched input.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.conv_transpose3d(enp.ones((1, 2, 2, 2, 2)), enp.ones((2, 3, 2, 2, 2)), stride=2).shape
    (1, 3, 4, 4, 4)
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
