"""Convolution of single-feature images as one GEMM over "flat" windows (NumPy).

The general kernel (kernels_conv) moves the channels last and copies every
output position's window (channels innermost) into an im2col matrix; with
one input feature (a network's first layer on grey images, vmap's
per-example weight gradient of it) that copy moves runs of one element and
costs several times the matmul. Here the spatial block of an image is one
flat axis instead: a window offset (k_0, ..., k_{n-1}) is a single shift, the
sum of ``k_d * dilation_d * fs_d`` with ``fs_d`` the flat stride of axis d,
and output position q reads the image at ``shift(q) + shift(k)``. Laid out
with the image's own row lengths, the output positions of the whole batch are
one contiguous run (each row's last ``S_d - Out_d`` positions and the last
rows of each image are computed and cropped away), so the im2col matrix is
one copied run per window offset. The matmul is ``(positions, window) @
(window, features)`` on transposed views, the product the general path
computes with its operands laid out the same way, so each window's sum runs
in the same order: the bits are the general path's except in rows that the
BLAS blocks differently (the flat way computes a few more positions, then
crops them), where they may differ in the last place. ``kernel @ cols`` would
be faster still but rounds every value differently, and a pre-activation near
zero may then change sign: a ReLU's choice, and a per-example gradient with it.
The result is (batch, spatial..., features) in memory, as the general path's.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ember.backends.strided import strided_view

__all__ = ["flat_conv"]


def _contiguous_spatial(shape, byte_strides, itemsize: int, first: int) -> bool:
    """Whether the axes from `first` on are row-major contiguous (one flat axis)."""
    expected = itemsize
    for size, stride in zip(reversed(shape[first:]), reversed(byte_strides[first:])):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def flat_conv(x, w, *, strides, padding, rhs_dilation):
    """A grouped convolution of canonical operands with one in feature per group, or None where the
    flat way does not apply (several in features, a stride, an output smaller than the window).

    x: (groups, batch, 1, *spatial), w: (groups, out features, 1, *window), both in the compute
    dtype; no lhs dilation (negative padding crops). Returns (groups, out features, batch, *out
    spatial), a view.

    >>> import numpy as np
    >>> x = np.arange(25.0).reshape(1, 1, 1, 5, 5); w = np.ones((1, 1, 1, 2, 2))
    >>> flat_conv(x, w, strides=(1, 1), padding=((0, 0), (0, 0)), rhs_dilation=(1, 1))[0, 0, 0, 0]
    array([12., 16., 20., 24.])
    """
    plan = _plan(x.shape, x.strides, x.itemsize, w.shape, strides, padding, rhs_dilation)
    if plan is None:
        return None
    if plan.pad:
        x = _pad(x, padding)
    elif plan.copy:
        x = np.ascontiguousarray(x)
    groups, out_f = w.shape[:2]
    kernel = w.reshape(groups, out_f, -1)
    cols = np.empty(plan.cols_shape, dtype=x.dtype)
    run = plan.run
    cols[..., :run] = strided_view(x, (*plan.cols_shape[:-1], run), plan.view_strides)
    cols[..., run:] = 0  # positions after the last output: finite, so that they stay in the cropped columns
    # (positions, window) @ (window, features), the operands laid out as the general path's (module docstring)
    out = np.matmul(cols.reshape(groups, kernel.shape[2], -1).swapaxes(1, 2), kernel.swapaxes(1, 2))
    return out.reshape(plan.out_shape)[plan.crop].transpose(plan.out_perm)


class _Plan(NamedTuple):
    """What the flat way does with operands of these shapes and strides, worked out once (`_plan`)."""

    pad: bool  # pad the spatial axes (a new array)
    copy: bool  # copy x to make its spatial axes one flat axis
    cols_shape: tuple  # (groups, *window, batch x plane) or (groups, *window, batch, row): the im2col matrix
    run: int  # the copied run of positions (the rest of each row of cols is zeroed)
    view_strides: tuple  # the byte strides of x's view that fills cols[..., :run]
    out_shape: tuple  # the product (groups, batch, *layout, out features)
    crop: tuple  # its output positions
    out_perm: tuple  # -> (groups, out features, batch, *out spatial)


@functools.lru_cache(maxsize=256)
def _plan(shape, byte_strides, itemsize, w_shape, strides, padding, rhs_dilation):
    """flat_conv's `_Plan` for x of `shape` and `byte_strides` and w of `w_shape`, or None where the flat
    way does not apply; kept per signature (working it out cost as much as a small layer's copy and
    matmul: 13 of 27 us)."""
    window = w_shape[3:]
    if shape[2] != 1 or any(s != 1 for s in strides) or 0 in shape or 0 in w_shape:
        return None
    dilated = [(k - 1) * r + 1 for k, r in zip(window, rhs_dilation)]
    sp = [s + lo + hi for s, (lo, hi) in zip(shape[3:], padding)]
    out_sp = [s - d + 1 for s, d in zip(sp, dilated)]
    if min(out_sp) < 1 or math.prod(out_sp) < math.prod(window):  # a weight gradient: the general way
        return None
    pad = any(p != (0, 0) for p in padding)
    copy = not pad and not _contiguous_spatial(shape, byte_strides, itemsize, 3)
    if pad or copy:  # a new C-contiguous array
        byte_strides = tuple(itemsize * math.prod((*shape[:3], *sp)[a + 1 :]) for a in range(len(shape)))
    groups, batch = shape[:2]
    out_f = w_shape[1]
    flat = [math.prod(sp[d + 1 :]) for d in range(len(sp))]
    plane = math.prod(sp)
    run = sum((o - 1) * f for o, f in zip(out_sp, flat)) + 1  # flat positions that hold an image's outputs
    s_group, s_batch = byte_strides[:2]
    offsets = tuple(r * f * itemsize for r, f in zip(rhs_dilation, flat))
    if batch == 1 or s_batch == plane * itemsize:  # images one after another: one run over the whole batch
        run += (batch - 1) * plane
        positions, view_strides, layout = (batch * plane,), (itemsize,), sp
    else:  # a run per image, laid out with its row lengths
        row = out_sp[0] * flat[0]
        positions, view_strides, layout = (batch, row), (s_batch, itemsize), (out_sp[0], *sp[1:])
    n = len(out_sp)
    return _Plan(pad=pad, copy=copy, cols_shape=(groups, *window, *positions), run=run,
                 view_strides=(s_group, *offsets, *view_strides), out_shape=(groups, batch, *layout, out_f),
                 crop=(slice(None), slice(None), *(slice(0, o) for o in out_sp), slice(None)),
                 out_perm=(0, n + 2, 1, *range(2, n + 2)))  # fmt: skip


def _pad(x, padding):
    """Zero padding of the spatial axes (negative padding crops), as one new array."""
    crop = tuple(slice(max(0, -lo), x.shape[3 + i] - max(0, -hi)) for i, (lo, hi) in enumerate(padding))
    x = x[(slice(None),) * 3 + crop]
    shape = x.shape[:3] + tuple(s + max(0, lo) + max(0, hi) for s, (lo, hi) in zip(x.shape[3:], padding))
    out = np.zeros(shape, dtype=x.dtype)
    out[(slice(None),) * 3 + tuple(slice(max(0, lo), max(0, lo) + s) for s, (lo, _) in zip(x.shape[3:], padding))] = x
    return out
