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

import math

import numpy as np

from ember.backends.strided import move_axis, strided_view

__all__ = ["flat_conv"]


def _contiguous_spatial(x, first: int) -> bool:
    """Whether the axes of `x` from `first` on are row-major contiguous (one flat axis)."""
    expected = x.itemsize
    for size, stride in zip(reversed(x.shape[first:]), reversed(x.strides[first:])):
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
    window = w.shape[3:]
    if x.shape[2] != 1 or any(s != 1 for s in strides) or 0 in x.shape or 0 in w.shape:
        return None
    dilated = [(k - 1) * r + 1 for k, r in zip(window, rhs_dilation)]
    sp = [s + lo + hi for s, (lo, hi) in zip(x.shape[3:], padding)]
    out_sp = [s - d + 1 for s, d in zip(sp, dilated)]
    if min(out_sp) < 1 or math.prod(out_sp) < math.prod(window):  # a weight gradient: the general way
        return None
    if any(p != (0, 0) for p in padding):
        x = _pad(x, padding)
    elif not _contiguous_spatial(x, 3):
        x = np.ascontiguousarray(x)
    return _by_output(x, w, sp, out_sp, rhs_dilation)


def _pad(x, padding):
    """Zero padding of the spatial axes (negative padding crops), as one new array."""
    crop = tuple(slice(max(0, -lo), x.shape[3 + i] - max(0, -hi)) for i, (lo, hi) in enumerate(padding))
    x = x[(slice(None),) * 3 + crop]
    shape = x.shape[:3] + tuple(s + max(0, lo) + max(0, hi) for s, (lo, hi) in zip(x.shape[3:], padding))
    out = np.zeros(shape, dtype=x.dtype)
    out[(slice(None),) * 3 + tuple(slice(max(0, lo), max(0, lo) + s) for s, (lo, _) in zip(x.shape[3:], padding))] = x
    return out


def _by_output(x, w, sp, out_sp, rhs_dilation):
    groups, batch = x.shape[:2]
    out_f, window = w.shape[1], w.shape[3:]
    item = x.itemsize
    flat = [math.prod(sp[d + 1 :]) for d in range(len(sp))]
    plane = math.prod(sp)
    run = sum((o - 1) * f for o, f in zip(out_sp, flat)) + 1  # flat positions that hold an image's outputs
    s_group, s_batch = x.strides[:2]
    offsets = tuple(r * f * item for r, f in zip(rhs_dilation, flat))
    kernel = w.reshape(groups, out_f, math.prod(window))
    if batch == 1 or s_batch == plane * item:  # images one after another: one run over the whole batch
        run += (batch - 1) * plane
        shape, view_strides, layout = (batch * plane,), (item,), sp
    else:  # a run per image, laid out with its row lengths
        row = out_sp[0] * flat[0]
        shape, view_strides, layout = (batch, row), (s_batch, item), (out_sp[0], *sp[1:])
        plane = row
    cols = np.empty((groups, *window, *shape), dtype=x.dtype)
    view = strided_view(x, (groups, *window, *shape[:-1], run), (s_group, *offsets, *view_strides))
    cols[..., :run] = view
    cols[..., run:] = 0  # positions after the last output: finite, so that they stay in the cropped columns
    # (positions, window) @ (window, features), the operands laid out as the general path's (module docstring)
    out = np.matmul(cols.reshape(groups, kernel.shape[2], batch * plane).swapaxes(1, 2), kernel.swapaxes(1, 2))
    out = out.reshape(groups, batch, *layout, out_f)
    out = out[(slice(None), slice(None), *(slice(0, o) for o in out_sp), slice(None))]
    return move_axis(out, -1, 1)
