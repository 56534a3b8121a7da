"""Convolutions shaped like a convolution's gradients, by a layout that suits them (NumPy).

The general kernel (kernels_conv) copies every output position's window into
an im2col matrix (positions, window x features) and multiplies it by the
kernel. Two shapes that a network's backward pass makes are badly served:

* **By window** (weight gradients, vmap's per-example ones above all): one
  in feature per group, and fewer output positions than window elements
  (the "window" is the output gradient, the output is the kernel's size).
  The general matrix then gathers runs of a window row. Here the roles of
  positions and window swap: the matrix is (window, positions x batch),
  whose rows copy runs of an output row times the batch (the operand's
  batch axis is innermost in memory when it comes from an NHWC forward
  pass), and ``kernel (features, window) @ matrix`` gives the result.
* **By input** (input gradients: "full" padding, or lhs dilation): the
  padded operand is mostly zeros, which im2col copies and multiplies. Here
  every input position is multiplied by the whole kernel once, ``(positions,
  in features) @ (in features, window x out features)``, and each window
  offset's slice of that product is added into the output at its shift
  (col2im): the work follows the input, not the zeros.

* **Features first** (weight gradients of a batch: one group, an output smaller than its window):
  the contracted "features" are the batch and the window is the output gradient's extent, and both
  operands hold the batch outermost in memory (NHWC activations and gradients). The general way moves
  the features innermost, which transposes both (a strided gather of the whole output gradient: 450
  of a 730 us first-layer weight gradient at batch 64). Here the contraction runs over (features,
  window) in that order, which the operands' memory serves as it is: the output gradient is one
  matrix view, and the im2col copy of the input reads runs of a window row (one output feature) or of
  an output row times the output features (several: the matrix is laid out (features x window,
  output), and the product is computed the other way round).

Each window's sum runs in another order than the general path's, so values
may differ from it in the last place (the gradients' tolerance, not a
forward pass's: `by_input` is only taken where im2col's matrix would be
mostly padding, which forward convolutions seldom are).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ember.backends.strided import out_size, strided_view

__all__ = ["BY_INPUT_MAX_WINDOW", "MAX_MATRIX_BYTES", "by_input", "by_window", "features_first", "input_first_pays",
           "window_first_pays"]  # fmt: skip

BY_INPUT_MAX_WINDOW = 64  # window offsets (one strided add each) up to which `by_input` may be taken
# The matrix either way makes stays below this size (in cache). Larger ones are left to the general way,
# whose im2col runs block by block through the cache: from there on it is faster (MNIST's 32 -> 64
# convolution at batch 64: by_window 15.6 ms against 12.9, by_input 29 against 21).
MAX_MATRIX_BYTES = 2 << 20


def window_first_pays(groups: int, batch: int, window, out_sp, itemsize: int) -> bool:
    """Whether `by_window` beats the general way on a feature-grouped convolution with one in feature
    per group: a weight gradient's shape (fewer output positions than window elements), whose copied
    runs (an output row times the batch) are longer than the general way's (a window row), and whose
    matrix stays within MAX_MATRIX_BYTES."""
    positions, elements = math.prod(out_sp), math.prod(window)
    return (positions < elements and out_sp[-1] * batch > window[-1]
            and groups * elements * positions * batch * itemsize <= MAX_MATRIX_BYTES)  # fmt: skip


def by_window(x, w, *, strides, rhs_dilation):
    """Feature-grouped convolution with one in feature per group, by window (see `window_first_pays`).

    x: (groups, *spatial, batch), padded (no lhs dilation); w: (groups, out features / groups,
    *window), no empty axes. Returns (groups, out features / groups, *out spatial, batch).

    >>> x = np.arange(64.0).reshape(1, 4, 4, 4); w = np.ones((1, 1, 3, 3))  # a batch of 4
    >>> by_window(x, w, strides=(1, 1), rhs_dilation=(1, 1))[0, 0, :, :, 0]
    array([[180., 216.],
           [324., 360.]])
    """
    groups, features = x.shape[0], w.shape[1]
    shape, view_strides, out_sp = _window_view(x.shape, x.strides, w.shape[2:], strides, rhs_dilation)
    cols = strided_view(x, shape, view_strides).reshape(groups, math.prod(w.shape[2:]), -1)  # the one copy
    out = np.matmul(w.reshape(groups, features, -1), cols)
    return out.reshape(groups, features, *out_sp, shape[-1])


@functools.lru_cache(maxsize=256)
def _window_view(shape, byte_strides, window, strides, rhs_dilation):
    """by_window's strided view of x (groups, *window, *out spatial, batch) and its output spatial shape,
    kept per geometry: rows of (out row x batch) runs."""
    spatial, batch = shape[1:-1], shape[-1]
    out_sp = tuple(out_size(s, (k - 1) * r + 1, st) for s, k, r, st in zip(spatial, window, rhs_dilation, strides))
    s_group, *s_sp, s_batch = byte_strides
    view_strides = (s_group, *(s * r for s, r in zip(s_sp, rhs_dilation)), *(s * st for s, st in zip(s_sp, strides)),
                    s_batch)  # fmt: skip
    return (shape[0], *window, *out_sp, batch), view_strides, out_sp


def input_first_pays(batch: int, spatial, window, out_sp, in_f: int, out_f: int, itemsize: int) -> bool:
    """Whether `by_input` beats the general way on a stride-1 convolution of one group: im2col's matrix
    (output positions x in features, a window offset) would hold at least twice the elements of the
    product by_input makes (input positions x out features, a window offset), which stays within
    MAX_MATRIX_BYTES, and the window has at most BY_INPUT_MAX_WINDOW offsets."""
    inputs, elements = math.prod(spatial), math.prod(window)
    return (elements <= BY_INPUT_MAX_WINDOW and math.prod(out_sp) * in_f >= 2 * inputs * out_f
            and batch * inputs * out_f * elements * itemsize <= MAX_MATRIX_BYTES)  # fmt: skip


def by_input(x, w, *, padding, lhs_dilation, rhs_dilation):
    """Stride-1 convolution, one group, by input (col2im).

    x: (batch, *spatial, in features); w: (in features, out features, *window); padding as (lo,
    hi) per spatial axis (negative crops), lhs_dilation spreads the input. Returns (batch, *out
    spatial, out features), a new array.

    >>> x = np.ones((1, 2, 1)); w = np.array([[[1.0, 10.0]]])
    >>> by_input(x, w, padding=((1, 1),), lhs_dilation=(1,), rhs_dilation=(1,))[0, :, 0]
    array([10., 11.,  1.])
    """
    batch, spatial, in_f = x.shape[0], x.shape[1:-1], x.shape[-1]
    out_f, window = w.shape[1], w.shape[2:]
    out_sp, adds = _col2im(spatial, window, padding, lhs_dilation, rhs_dilation)
    out = np.zeros((batch, *out_sp, out_f), dtype=np.result_type(x, w))
    if 0 in out.shape or 0 in x.shape or 0 in window:
        return out
    # every input position times every window offset's kernel: (batch, *spatial, out features, window).
    # (Window offsets innermost: NumPy adds a window offset's slice of it twice as fast as with the out
    # features innermost, where both operands of each add run in short contiguous loops.)
    product = np.matmul(x.reshape(-1, in_f), w.reshape(in_f, -1)).reshape(batch, *spatial, out_f, -1)
    for dst, src in adds:
        out[dst] += product[src]
    return out


@functools.lru_cache(maxsize=256)
def _col2im(spatial, window, padding, lhs_dilation, rhs_dilation):
    """by_input's output spatial shape, and for each window offset that lands on the output the (output,
    product) index pair of its add; kept per geometry (computing them costs more than a small network's
    adds: 18 of a 3x3 input gradient's 88 us)."""
    padded = [lo + (s - 1) * d + 1 + hi if s else lo + hi for s, (lo, hi), d in zip(spatial, padding, lhs_dilation)]
    out_sp = tuple(out_size(p, (k - 1) * r + 1, 1) for p, k, r in zip(padded, window, rhs_dilation))
    adds = []
    for k, offset in enumerate(itertools.product(*map(range, window))):
        dst, src = [slice(None)], [slice(None)]
        for size, extent, o, (lo, _), d, r in zip(spatial, out_sp, offset, padding, lhs_dilation, rhs_dilation):
            # output p reads padded position p + o * r, which holds input i where p + o * r - lo = i * d
            shift = lo - o * r
            first = shift if shift >= 0 else shift % d  # the first p >= 0 that lands on an input element
            i0 = (first - shift) // d
            count = min(size - i0, -(-(extent - first) // d)) if first < extent else 0
            if count <= 0:
                break
            dst.append(slice(first, first + (count - 1) * d + 1, d))
            src.append(slice(i0, i0 + count))
        else:
            adds.append((tuple(dst), (*src, slice(None), k)))
    return out_sp, tuple(adds)


def features_first(x, w, *, strides, rhs_dilation):
    """Convolution of one group contracted over (features, window) in that order (see the module
    docstring): the general way's product with the patch's axes in the order a weight gradient's
    operands lie in memory.

    x: (batch, features, *spatial), padded, any strides; w: (out features, features, *window). Returns
    (batch, *out spatial, out features). With one batch row the im2col matrix is (positions, features x
    window), read in runs of a window row; with several, (features x window, positions x batch), read
    in runs of an output row times the batch (innermost in an NHWC operand's memory).

    >>> x = np.arange(32.0).reshape(1, 2, 4, 4); w = np.ones((1, 2, 3, 3))
    >>> features_first(x, w, strides=(1, 1), rhs_dilation=(1, 1))[0, :, :, 0]
    array([[234., 252.],
           [306., 324.]])
    """
    batch, features, spatial = x.shape[0], x.shape[1], x.shape[2:]
    out_f, window = w.shape[0], w.shape[2:]
    out_sp = tuple(out_size(s, (k - 1) * r + 1, st) for s, k, r, st in zip(spatial, window, rhs_dilation, strides))
    s_batch, s_feature, *s_sp = x.strides
    moves = tuple(s * st for s, st in zip(s_sp, strides))
    taps = tuple(s * r for s, r in zip(s_sp, rhs_dilation))
    kernel = w.reshape(out_f, -1)  # (out features, features x window): a view of an NHWC output gradient
    if batch == 1:
        view = strided_view(x, (*out_sp, features, *window), (*moves, s_feature, *taps))
        out = np.matmul(view.reshape(math.prod(out_sp), -1), kernel.T)
        return out.reshape(1, *out_sp, out_f)
    view = strided_view(x, (features, *window, *out_sp, batch), (s_feature, *taps, *moves, s_batch))
    out = np.matmul(kernel, view.reshape(features * math.prod(window), -1))  # (out features, *out spatial, batch)
    n = len(out_sp)
    return out.reshape(out_f, *out_sp, batch).transpose(n + 1, *range(1, n + 1), 0)
