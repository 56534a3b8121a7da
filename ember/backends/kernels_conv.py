"""Kernels of the convolution family, written once against an array module `xp` (NumPy or CuPy).

Convolution is "pad, view, multiply". The input moves to channels-last
layout and is padded once (lhs dilation is interior padding); a strided view
then exposes every output position's receptive field without copying
(``as_strided``: shape (batch, out..., window..., channels)); reshaping that
view to a matrix is the one im2col copy, and a single matmul contracts it
with the kernel. Feature or batch groups become the matmul's batch
dimension, so there is no Python loop over groups or output positions.
With one input feature per group (a first layer on grey images) the channels-last
copy would move runs of one element: kernels_conv_flat takes those instead, and
kernels_conv_grads the shapes of a backward pass (per-example and batch weight
gradients, input gradients with full padding), which im2col serves badly.

Windowed reductions pad with the monoid's identity and then combine the
strided slices of the padded operand, one per window offset (a handful for
pooling windows), elementwise; large windows reduce a strided view instead.
select_and_scatter_add picks each window's first extreme the same way and
adds the source back through the same strided slices; select_and_gather_add
(its transpose) reads a second array at the same choices.
"""

from __future__ import annotations

import functools
import itertools
import math
from types import ModuleType
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

from ember.backends.kernels_conv_flat import flat_conv
from ember.backends.kernels_conv_grads import by_input, by_window, features_first, input_first_pays, window_first_pays
from ember.backends.strided import dense_order, inverse_permutation, memory_order, move_axis, out_size, strided_view

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_F32 = np.dtype(np.float32)
_IM2COL_BLOCK_BYTES = 1 << 20  # im2col a block of about this size at a time, to multiply it while in cache
_IM2COL_MIN_ROWS = 512
_UNROLL_LIMIT = 32  # windows up to this many elements combine slices; larger ones reduce a view


def conv_kernels(xp: ModuleType) -> dict[str, Any]:
    """The kernels of ember.core.primitives.conv for array module `xp`."""
    return {
        "conv_general_dilated": numpy_conv if xp is np else lambda lhs, rhs, **p: conv_general_dilated(xp, lhs, rhs, **p),
        "reduce_window_sum": _in_memory_order(xp, lambda x, **p: reduce_window(xp, x, "sum", **p)),
        "reduce_window_max": _in_memory_order(xp, lambda x, **p: reduce_window(xp, x, "max", **p)),
        "reduce_window_min": _in_memory_order(xp, lambda x, **p: reduce_window(xp, x, "min", **p)),
        "select_and_scatter_add": _in_memory_order(xp, lambda src, x, **p: select_and_scatter_add(xp, src, x, **p)),
        "select_and_gather_add": _in_memory_order(xp, lambda t, x, **p: select_and_gather_add(xp, t, x, **p)),
    }


def numpy_conv(lhs, rhs, **params):
    """NumPy's `conv_general_dilated` kernel (generated code recognises it: see shared_patches.py)."""
    return conv_general_dilated(np, lhs, rhs, **params)


_PER_AXIS = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")


def _in_memory_order(xp, kernel):
    """A windowed kernel (reduce_window, select_and_{scatter,gather}_add) run with the axes in the order
    of its last operand's memory, when that operand is a transposed array (an NCHW view of a
    convolution's NHWC result) and the order keeps the windowed axes in theirs (so the window offsets,
    and with them the ties' winners and a sum's rounding, go in the same order): its strided slices
    then read runs of memory, and results come back as transposed views (2x2 max-pool's backward on
    (64, 16, 26, 26) NHWC memory, as in cnn_grad_b64: 3.2 -> 1.1 ms)."""
    if xp is not np:
        return kernel

    def run(*arrays, **params):
        x = arrays[-1]
        perm = None if x.flags.c_contiguous or x.ndim < 2 else c_order_of(x)
        if perm is None:
            return kernel(*arrays, **params)
        windowed = [a for a in perm if params["window_dimensions"][a] > 1]
        if windowed != sorted(windowed):
            return kernel(*arrays, **params)
        moved = {k: (tuple(v[a] for a in perm) if k in _PER_AXIS else v) for k, v in params.items()}
        out = kernel(*(a.transpose(perm) for a in arrays), **moved)
        return out.transpose(inverse_permutation(perm))

    return run


def c_order_of(x):
    """The axis order in which strided view `x` is C-contiguous (a transposed array), or None."""
    return dense_order(x.shape, x.strides, x.itemsize)


# --- padding and strided views ----------------------------------------------------------


def _dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def _spread(size: int, lo: int, hi: int, interior: int) -> tuple[slice, slice, int]:
    """How an axis lands in its padded form: (source slice, destination slice, padded size).

    Element i goes to lo + i * (interior + 1); negative lo/hi crop, so only the
    elements that land inside [0, padded size) are kept.
    """
    step = interior + 1
    padded = lo + _dilate(size, step) + hi
    first = max(0, -(lo // step))
    stop = min(size, (padded - 1 - lo) // step + 1)
    if first >= stop:
        return slice(0, 0), slice(0, 0), padded
    return slice(first, stop), slice(lo + first * step, lo + (stop - 1) * step + 1, step), padded


def pad(xp, x, value, config):
    """lax.pad in one copy: config holds (lo, hi, interior) per axis; negative lo/hi crop."""
    if all(c == (0, 0, 0) for c in config):
        return x
    spreads = [_spread(n, *c) for n, c in zip(x.shape, config)]
    out = xp.full(tuple(s[2] for s in spreads), value, dtype=x.dtype)
    out[tuple(s[1] for s in spreads)] = x[tuple(s[0] for s in spreads)]
    return out


def _unpad(xp, y, shape, config):
    """The inverse view of `pad`: the elements of padded `y` that came from an operand of `shape`."""
    if all(c == (0, 0, 0) for c in config):
        return y
    spreads = [_spread(n, *c) for n, c in zip(shape, config)]
    out = xp.zeros(shape, dtype=y.dtype)
    out[tuple(s[0] for s in spreads)] = y[tuple(s[1] for s in spreads)]
    return out


def _as_strided(xp, x, shape, strides):
    # CuPy's as_strided lives in cupy.lib.stride_tricks too, without `writeable`.
    if xp is np:
        return strided_view(x, shape, strides)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


def _window_slices(out_shape, window_dimensions, window_strides, window_dilation):
    """For each window offset (row-major), the strided slice of the padded operand it reads."""
    for offset in itertools.product(*(range(w) for w in window_dimensions)):
        yield tuple(slice(k * d, k * d + (m - 1) * s + 1, s)
                    for k, d, m, s in zip(offset, window_dilation, out_shape, window_strides))  # fmt: skip


# --- convolution ----------------------------------------------------------------------------


def conv_general_dilated(xp, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                         feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None):  # fmt: skip
    """XLA's ConvGeneralDilated as pad + strided window view + one (batched) matmul."""
    plan = _plan(lhs.shape, rhs.shape, lhs.dtype, preferred_element_type, window_strides, padding, lhs_dilation,
                 rhs_dilation, dimension_numbers, feature_group_count, batch_group_count)  # fmt: skip
    compute, out_dtype, groups = plan.compute, plan.out_dtype, plan.groups
    if xp is np and plan.way is not None:
        out = None
        if plan.way == "flat":
            out = _flat(lhs, rhs, compute, groups, batch_group_count > 1, dimension_numbers, window_strides, padding,
                        rhs_dilation)  # fmt: skip
        elif plan.way == "by_window":
            out = _by_window(lhs, rhs, compute, groups, dimension_numbers, window_strides, padding, rhs_dilation)
        elif plan.way == "by_input":
            out = _by_input(lhs, rhs, compute, dimension_numbers, padding, lhs_dilation, rhs_dilation)
        elif plan.way == "features_first":
            out = _features_first(lhs, rhs, compute, dimension_numbers, window_strides, padding, rhs_dilation)
        if out is not None:
            return as_out_dtype(out, out_dtype)
    return general_way(xp, lhs, rhs, plan)[0]


def general_way(xp, lhs, rhs, plan, keep_matrix=False):
    """The general way: (the result, and with `keep_matrix` its im2col matrix (groups, positions,
    patch), or None where it makes none in one piece)."""
    compute, out_dtype, groups = plan.compute, plan.out_dtype, plan.groups
    matrix = None
    # Groups first, channels last: (groups, N / batch groups, spatial..., C / feature groups), so that a
    # group's window (vmap's per-example weight gradient: one channel a group) is read in runs; lhs batch
    # b = g * (N / groups) + n, lhs feature c = g * (C / groups) + i.
    x = lhs.transpose(plan.lhs_perm)
    x = x[None] if groups == 1 else x.reshape(plan.grouped).transpose(plan.group_perm)
    x = x.astype(compute, copy=False)
    if plan.padding is not None:
        x = pad(xp, x, 0, plan.padding)
    x = xp.ascontiguousarray(x)  # one copy at most: a no-op after padding, or a view already in this layout
    # kernel (groups, O / groups, window..., I): out feature o = g * (O / groups) + j
    w = rhs.transpose(plan.rhs_perm).astype(compute, copy=False)
    if plan.view_shape is None:
        out = xp.zeros(plan.out_shape, dtype=compute)
    else:
        view = _as_strided(xp, x, plan.view_shape, plan.view_strides)
        kernel = w.reshape(plan.kernel_shape).transpose(0, 2, 1)  # (groups, patch, O / groups)
        if keep_matrix:
            matrix = view.reshape(groups, -1, kernel.shape[1])  # the one im2col copy, as _im2col_matmul's
            out = xp.matmul(matrix, kernel)
        else:
            out = _im2col_matmul(xp, view, kernel, len(plan.out_shape))  # (groups, positions, O / groups)
        if groups > 1:
            out = move_axis(out, 0, -2)
        out = out.reshape(plan.out_shape)
    # an NCHW result is left NHWC in memory, which the next convolution's channels-last transpose then gets
    # for free
    return as_out_dtype(out.transpose(plan.out_perm), out_dtype), matrix


def as_out_dtype(out, out_dtype):
    """A result computed in its plan's compute dtype, as `out_dtype`."""
    return out != 0 if out_dtype == np.bool_ else out.astype(out_dtype, copy=False)


def _to_out_spec(xp, out, out_spec):
    """A result laid out (N, spatial..., O) as out_spec says; left as a view (see conv_general_dilated)."""
    return out.transpose(_out_perm(out_spec))


@functools.lru_cache(maxsize=64)
def _out_perm(out_spec):
    """The transpose that takes a (N, spatial..., O) result to out_spec's layout."""
    n = len(out_spec) - 2
    perm = [0] * (n + 2)
    for axis, position in zip((0, n + 1, *range(1, n + 1)), out_spec):
        perm[position] = axis
    return tuple(perm)


class _Plan(NamedTuple):
    """What a convolution's shapes and parameters decide, worked out once per signature (`_plan`): the
    general way's transposes, padding, window view and result shape, and the NumPy way that takes it."""

    way: str | None  # NumPy's way: "flat", "by_window", "by_input", "features_first", or None (the general way)
    compute: np.dtype  # the dtype the products are computed in
    out_dtype: np.dtype
    groups: int
    lhs_perm: tuple  # lhs -> (N, spatial..., C)
    grouped: tuple | None  # its shape with the groups split out (feature groups: before moving them first)
    group_perm: tuple | None  # the transpose that moves the groups first
    padding: list | None  # lax.pad's config of (groups, N / groups, spatial..., C / groups), None if none
    rhs_perm: tuple  # rhs -> (O, window..., I)
    view_shape: tuple | None  # (groups, N / groups, out spatial..., window..., C / groups); None if empty
    view_strides: tuple | None  # its byte strides over the C-contiguous padded operand
    kernel_shape: tuple  # (groups, O / groups, patch)
    out_shape: tuple  # (N / batch groups, out spatial..., O)
    out_perm: tuple  # out_shape -> out_spec's layout


@functools.lru_cache(maxsize=1024)
def _plan(lhs_shape, rhs_shape, dtype, preferred_element_type, strides, padding, lhs_dilation, rhs_dilation,
          dimension_numbers, feature_groups, batch_groups) -> _Plan:  # fmt: skip
    """The convolution's `_Plan`, kept per signature, so that a program's repeated calls only run the
    array operations (working these out cost 9 us of a 40 us convolution in a small CNN's jitted
    per-example gradients)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    compute = _F32 if out_dtype in _LOW_PRECISION else np.dtype(np.int32) if out_dtype == np.bool_ else out_dtype
    groups = max(feature_groups, batch_groups)
    lhs_perm = (lhs_spec[0], *lhs_spec[2:], lhs_spec[1])
    x_shape = tuple(lhs_shape[a] for a in lhs_perm)  # (N, spatial..., C)
    batch, channels = x_shape[0], x_shape[-1]
    grouped = group_perm = None
    if groups == 1:
        x_shape = (1, *x_shape)
    elif batch_groups > 1:
        grouped, group_perm = (groups, batch // groups, *x_shape[1:]), tuple(range(len(x_shape) + 1))
        x_shape = grouped
    else:
        grouped = (*x_shape[:-1], groups, channels // groups)
        group_perm = (len(x_shape) - 1, *range(len(x_shape) - 1), len(x_shape))
        x_shape = tuple(grouped[a] for a in group_perm)
    config = [(0, 0, 0), (0, 0, 0), *((lo, hi, d - 1) for (lo, hi), d in zip(padding, lhs_dilation)), (0, 0, 0)]
    padded = [lo + _dilate(n, d + 1) + hi for n, (lo, hi, d) in zip(x_shape, config)]
    rhs_perm = (rhs_spec[0], *rhs_spec[2:], rhs_spec[1])
    window, out_features = tuple(rhs_shape[a] for a in rhs_spec[2:]), rhs_shape[rhs_spec[0]]
    out_batch = padded[1]
    out_sp = tuple(out_size(p, _dilate(k, r), s) for p, k, r, s in zip(padded[2:-1], window, rhs_dilation, strides))
    patch = math.prod(window) * padded[-1]
    view_shape = view_strides = None
    if out_batch * math.prod(out_sp) * out_features and patch:
        contiguous = [compute.itemsize * math.prod(padded[a + 1 :]) for a in range(len(padded))]
        s_group, s_batch, *s_sp, s_chan = contiguous
        moves = [s * st for s, st in zip(s_sp, strides)] + [s * r for s, r in zip(s_sp, rhs_dilation)]
        view_shape = (groups, out_batch, *out_sp, *window, padded[-1])
        view_strides = (s_group, s_batch, *moves, s_chan)
    way = _numpy_way(lhs_shape, rhs_shape, compute.itemsize, strides, padding, lhs_dilation, rhs_dilation,
                     dimension_numbers, feature_groups, batch_groups)  # fmt: skip
    padding_config = None if all(c == (0, 0, 0) for c in config) else config
    return _Plan(way, compute, out_dtype, groups, lhs_perm, grouped, group_perm, padding_config, rhs_perm, view_shape,
                 view_strides, (groups, out_features // groups, patch), (out_batch, *out_sp, out_features),
                 _out_perm(out_spec))  # fmt: skip


def plan_of(lhs_shape, rhs_shape, dtype, params) -> _Plan:
    """The `_Plan` of a convolution with `conv_general_dilated`'s keyword parameters `params`."""
    return _plan(lhs_shape, rhs_shape, dtype, params.get("preferred_element_type"), params["window_strides"],
                 params["padding"], params["lhs_dilation"], params["rhs_dilation"], params["dimension_numbers"],
                 params.get("feature_group_count", 1), params.get("batch_group_count", 1))  # fmt: skip


def in_one_piece(plan: _Plan) -> bool:
    """Whether the general way makes the plan's im2col matrix in one piece (see `_im2col_matmul`)."""
    return plan.view_shape is not None and math.prod(plan.view_shape) * plan.compute.itemsize <= 2 * _IM2COL_BLOCK_BYTES


def _numpy_way(lhs_shape, rhs_shape, itemsize, strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_groups, batch_groups):  # fmt: skip
    """Which NumPy way computes this convolution: "flat", "by_window", "by_input", "features_first" or
    None (the general way), from the shapes and parameters alone."""
    lhs_spec, rhs_spec, _ = dimension_numbers
    spatial = [lhs_shape[a] for a in lhs_spec[2:]]
    window = [rhs_shape[a] for a in rhs_spec[2:]]
    padded = [lo + _dilate(s, d) + hi for s, (lo, hi), d in zip(spatial, padding, lhs_dilation)]
    out_sp = [out_size(p, _dilate(k, r), st) for p, k, r, st in zip(padded, window, rhs_dilation, strides)]
    in_f, out_f = lhs_shape[lhs_spec[1]], rhs_shape[rhs_spec[0]]
    groups = max(feature_groups, batch_groups)
    batch = lhs_shape[lhs_spec[0]]
    if 0 in lhs_shape or 0 in rhs_shape or 0 in out_sp:
        return None
    if rhs_shape[rhs_spec[1]] == 1 and all(d == 1 for d in lhs_dilation):  # one in feature per group
        if all(st == 1 for st in strides) and math.prod(out_sp) >= math.prod(window):
            return "flat"
        if batch_groups == 1 and window_first_pays(groups, batch, window, out_sp, itemsize):
            return "by_window"
        return None
    if (groups == 1 and all(st == 1 for st in strides)
            and input_first_pays(batch, spatial, window, out_sp, in_f, out_f, itemsize)):  # fmt: skip
        return "by_input"
    if groups == 1 and all(d == 1 for d in lhs_dilation) and math.prod(out_sp) < math.prod(window):
        return "features_first"  # a weight gradient of a batch
    return None


def _by_window(lhs, rhs, compute, groups, dimension_numbers, strides, padding, rhs_dilation):
    """The convolution by `by_window` (one in feature per feature group, a weight gradient's shape), in
    out_spec's layout."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    # (features = groups, spatial..., batch): the batch innermost, as an NHWC operand holds it
    x = lhs.transpose((lhs_spec[1], *lhs_spec[2:], lhs_spec[0])).astype(compute, copy=False)
    if any(map(any, padding)):
        x = pad(np, x, 0, [(0, 0, 0), *((lo, hi, 0) for lo, hi in padding), (0, 0, 0)])
    w = rhs.transpose(rhs_spec).astype(compute, copy=False)  # (out features, 1, window...)
    w = w.reshape(groups, w.shape[0] // groups, *w.shape[2:])
    out = by_window(x, w, strides=strides, rhs_dilation=rhs_dilation)
    # (groups, out features / groups, out spatial..., batch) -> (batch, out spatial..., out features)
    n = out.ndim - 3
    out = out.reshape(-1, *out.shape[2:])
    return _to_out_spec(np, out.transpose(n + 1, *range(1, n + 1), 0), out_spec)


def _by_input(lhs, rhs, compute, dimension_numbers, padding, lhs_dilation, rhs_dilation):
    """The convolution by `by_input` (col2im), in out_spec's layout."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = lhs.transpose((lhs_spec[0], *lhs_spec[2:], lhs_spec[1])).astype(compute, copy=False)
    w = rhs.transpose((rhs_spec[1], rhs_spec[0], *rhs_spec[2:])).astype(compute, copy=False)
    return _to_out_spec(np, by_input(x, w, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation),
                        out_spec)  # fmt: skip


def _features_first(lhs, rhs, compute, dimension_numbers, strides, padding, rhs_dilation):
    """The convolution by `features_first` (a weight gradient of a batch), in out_spec's layout."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = lhs.transpose((lhs_spec[0], lhs_spec[1], *lhs_spec[2:])).astype(compute, copy=False)
    if any(map(any, padding)):  # padded in the order of x's memory, which the padded copy keeps
        perm = memory_order(x.strides)
        config = [(0, 0, 0), (0, 0, 0), *((lo, hi, 0) for lo, hi in padding)]
        x = pad(np, x.transpose(perm), 0, [config[a] for a in perm]).transpose(inverse_permutation(perm))
    w = rhs.transpose((rhs_spec[0], rhs_spec[1], *rhs_spec[2:])).astype(compute, copy=False)
    return _to_out_spec(np, features_first(x, w, strides=strides, rhs_dilation=rhs_dilation), out_spec)


def _flat(lhs, rhs, compute, groups, batch_groups, dimension_numbers, strides, padding, rhs_dilation):
    """The convolution by `flat_conv` (NumPy: one in feature per group), in out_spec's layout; None where
    it does not apply."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if rhs.shape[rhs_spec[1]] != 1:  # several in features per group: the general way
        return None
    x = lhs.transpose(lhs_spec).astype(compute, copy=False)  # (batch, features, spatial...)
    batch, features, spatial = x.shape[0], x.shape[1], x.shape[2:]
    if batch_groups:
        x = x.reshape(groups, batch // groups, *x.shape[1:])
    else:  # feature groups (or one group): features (group, in features)
        x = x.reshape(batch, groups, features // groups, *spatial).swapaxes(0, 1)
    w = rhs.transpose(rhs_spec).astype(compute, copy=False)  # (out features, in features, window...)
    w = w.reshape(groups, w.shape[0] // groups, *w.shape[1:])
    out = flat_conv(x, w, strides=strides, padding=padding, rhs_dilation=rhs_dilation)
    if out is None:
        return None
    # (groups, out features / groups, batch, spatial...) -> (batch, out features, spatial...) -> out_spec
    out = move_axis(out, 2, 0)
    out = out.reshape(out.shape[0], -1, *out.shape[3:])
    return out.transpose(inverse_permutation(tuple(out_spec)))


def _im2col_matmul(xp, view, kernel, lead):
    """``view.reshape(groups, positions, patch) @ kernel`` for a convolution's strided window view
    (its first `lead` axes: groups, batch, output positions) and kernel (groups, patch, features).
    Large im2col matrices (many times the input) are copied a block of about _IM2COL_BLOCK_BYTES at
    a time, which the matmul then reads from cache: ~1.7x faster than one copy through memory."""
    groups, patch, out_features = kernel.shape
    outer = view.shape[:lead]
    if xp is not np or math.prod(outer) * patch * view.itemsize <= 2 * _IM2COL_BLOCK_BYTES:
        return xp.matmul(view.reshape(groups, -1, patch), kernel)
    unit = [math.prod(outer[a + 1 :]) * patch * view.itemsize for a in range(lead)]  # one index of axis a
    # blocks of `step` indices of the outermost axis whose one index fits, for each index of those before
    # it; a block within a group keeps _IM2COL_MIN_ROWS rows at least (BLAS is slow on short matrices)
    axis = next((a for a in range(lead) if unit[a] <= _IM2COL_BLOCK_BYTES), lead - 1)
    step = max(1, _IM2COL_BLOCK_BYTES // unit[axis])
    while axis and step * math.prod(outer[axis + 1 :]) < _IM2COL_MIN_ROWS:
        step = -(-_IM2COL_MIN_ROWS // math.prod(outer[axis + 1 :]))
        if step < outer[axis]:
            break
        axis -= 1
        step = max(1, _IM2COL_BLOCK_BYTES // unit[axis])
    if axis == 0 and step >= groups:
        return xp.matmul(view.reshape(groups, -1, patch), kernel)
    out = xp.empty((*outer, out_features), dtype=view.dtype)
    for index in itertools.product(*map(range, outer[:axis])):
        for start in range(0, outer[axis], step):
            at = (*index, slice(start, start + step))
            k = kernel[at[0]]  # the block's groups, or its one group
            rows = (-1,) if axis else (k.shape[0], -1)
            xp.matmul(view[at].reshape(*rows, patch), k, out=out[at].reshape(*rows, out_features))
    return out.reshape(groups, -1, out_features)


# --- windowed reductions ---------------------------------------------------------------------


def _identity(kind: str, dtype: np.dtype):
    if kind == "sum":
        return 0
    if dtype == np.bool_:
        return kind == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


def reduce_window(xp, x, kind, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """reduce_window_{sum,max,min}: pad with the identity, then combine the window's strided slices."""
    init = _identity(kind, x.dtype)
    compute = _F32 if kind == "sum" and x.dtype in _LOW_PRECISION else x.dtype
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)]
    xp_ = pad(xp, x, init, config)
    out_shape = tuple(out_size(p, _dilate(w, d), s)
                      for p, w, d, s in zip(xp_.shape, window_dimensions, window_dilation, window_strides))  # fmt: skip
    if math.prod(out_shape) == 0:
        return xp.full(out_shape, init, dtype=x.dtype)
    if math.prod(window_dimensions) <= _UNROLL_LIMIT:
        combine = {"sum": xp.add, "max": xp.maximum, "min": xp.minimum}[kind]
        acc = None
        for sl in _window_slices(out_shape, window_dimensions, window_strides, window_dilation):
            piece = xp_[sl]
            if acc is None:
                acc = xp.array(piece, dtype=compute, copy=True)
            else:
                combine(acc, piece.astype(compute, copy=False), out=acc)
        return acc.astype(x.dtype, copy=False)
    nd = x.ndim
    view = _as_strided(xp, xp_, out_shape + tuple(window_dimensions),
                       tuple(st * s for st, s in zip(xp_.strides, window_strides))
                       + tuple(st * d for st, d in zip(xp_.strides, window_dilation)))  # fmt: skip
    axes = tuple(range(nd, 2 * nd))
    if kind == "sum":
        return xp.sum(view, axis=axes, dtype=compute).astype(x.dtype, copy=False)
    return (xp.max if kind == "max" else xp.min)(view, axis=axes)


def _select(xp, operand, out_shape, *, select_prim, window_dimensions, window_strides, padding, base_dilation,
            window_dilation):  # fmt: skip
    """Each window's choice for select_and_{scatter,gather}_add: the first max ("ge") or min ("le").

    One pass over the window offsets keeps a running choice per window (a later element wins
    only if strictly better, or if it is NaN and the choice is not). Padding and base-dilation
    holes are never chosen. Returns (pad config, window slices, choice: the chosen offset per
    window, found: whether the window holds an operand element, None when all do, and the
    padded operand's shape).
    """
    kind = "max" if select_prim == "ge" else "min"
    extremum = xp.maximum if kind == "max" else xp.minimum
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)]
    values = pad(xp, operand, _identity(kind, operand.dtype), config)  # padding never beats a real element
    valid = None if values is operand else pad(xp, xp.ones(operand.shape, dtype=bool), False, config)
    is_float = operand.dtype.kind == "f" or operand.dtype in _LOW_PRECISION
    slices = list(_window_slices(out_shape, window_dimensions, window_strides, window_dilation))
    best = xp.array(values[slices[0]], copy=True)
    choice = xp.zeros(out_shape, dtype=np.int32)
    found = None if valid is None else xp.array(valid[slices[0]], copy=True)
    for k, sl in enumerate(slices[1:], start=1):
        v = values[sl]
        take = v > best if kind == "max" else v < best
        if is_float:
            take |= xp.isnan(v) & ~xp.isnan(best)
        if found is not None:
            ok = valid[sl]
            take = (take | ~found) & ok
            found |= ok
        best = extremum(best, v)  # NaN sticks, like the choice
        xp.maximum(choice, take * np.int32(k), out=choice)  # k grows, so the last taker wins
    return config, slices, choice, found, values.shape


def select_and_scatter_add(xp, source, operand, **params):
    """Add each window's source element at the window's first max ("ge") or min ("le") operand element.

    `_select` finds every window's choice; a second pass adds the source through the same
    strided slices. A window without an operand element drops its source element. Masks are
    applied with arithmetic (max, multiply), not `where`, which is an order of magnitude slower
    on the unpredictable masks of pooling.
    """
    if _tiled(source.shape, **params):
        p = params
        return _scatter_tiles(xp, source, operand, p["select_prim"], p["window_dimensions"], p["padding"])
    config, slices, choice, found, padded_shape = _select(xp, operand, source.shape, **params)
    compute = _F32 if source.dtype in _LOW_PRECISION else source.dtype
    contribution = source.astype(compute, copy=False)
    if found is not None:
        contribution = xp.where(found, contribution, 0).astype(compute, copy=False)
    # mask * value is exact for finite values; NaN/inf sources must not leak through a 0 mask.
    finite = compute.kind in "iu" or bool(xp.isfinite(contribution).all())
    result = xp.zeros(padded_shape, dtype=compute)
    for k, sl in enumerate(slices):
        mask = choice == k
        result[sl] += mask * contribution if finite else xp.where(mask, contribution, xp.zeros((), compute))
    return _unpad(xp, result, operand.shape, config).astype(source.dtype, copy=False)


def _tiled(out_shape, *, select_prim, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """Whether the windows tile the operand: no padding (cropping is fine) or dilation, strides equal to the
    window (pooling)."""
    return (tuple(window_strides) == tuple(window_dimensions) and all(lo <= 0 and hi <= 0 for lo, hi in padding)
            and all(b == 1 for b in base_dilation) and all(d == 1 for d in window_dilation) and 0 not in out_shape)  # fmt: skip


def _scatter_tiles(xp, source, operand, select_prim, window, padding):
    """select_and_scatter_add of windows that tile the operand (each element in one window at most).

    The covered part of the operand (after the crop of negative padding) is viewed as (out_0,
    window_0, out_1, window_1, ...); each window offset is a strided slice of that view. The
    window's extreme is found first; then
    each offset, in row-major order, takes the windows where it holds the extreme (or a NaN, which
    counts as the extreme) and no earlier offset did, and writes its source there: no running
    choice, and no read-modify-write of the result (the windows do not overlap)."""
    out_shape = source.shape
    # (Ellipsis: a view, even of a 0-d result)
    crop = (*(slice(-lo, -lo + o * w) for o, w, (lo, _) in zip(out_shape, window, padding)), Ellipsis)
    tiles = tuple(v for o, w in zip(out_shape, window) for v in (o, w))
    values = operand[crop].reshape(tiles)
    offsets = [(*(i for k in offset for i in (slice(None), k)), Ellipsis)  # views, even of 0-d operands
               for offset in itertools.product(*map(range, window))]  # fmt: skip
    extremum = xp.maximum if select_prim == "ge" else xp.minimum
    best = xp.array(values[offsets[0]], copy=True)
    for at in offsets[1:]:
        extremum(best, values[at], out=best)  # a NaN propagates
    nan = (operand.dtype.kind == "f" or operand.dtype in _LOW_PRECISION) and bool(xp.isnan(best).any())
    compute = _F32 if source.dtype in _LOW_PRECISION else source.dtype
    contribution = source.astype(compute, copy=False)
    finite = compute.kind in "iu" or bool(xp.isfinite(contribution).all())
    result = xp.zeros(operand.shape, dtype=compute)
    spread = result[crop].reshape(tiles)
    free = None  # windows whose extreme no earlier offset held
    for i, at in enumerate(offsets):
        v = values[at]
        hit = v == best
        if nan:
            hit |= xp.isnan(v)
        if free is not None:
            hit &= free
        if i < len(offsets) - 1:
            free = ~hit if free is None else free & ~hit
        if finite:
            xp.multiply(hit, contribution, out=spread[at])
        else:
            spread[at] = xp.where(hit, contribution, xp.zeros((), compute))
    return result.astype(source.dtype, copy=False)


def select_and_gather_add(xp, tangents, operand, **params):
    """For each window, the element of `tangents` where the window's first max ("ge") or min ("le")
    of `operand` sits (0 for a window without an operand element): the transpose of
    select_and_scatter_add in its source, and the tangent of max/min pooling."""
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(params["padding"], params["base_dilation"])]
    padded = [_spread(n, *c)[2] for n, c in zip(operand.shape, config)]
    out_shape = tuple(out_size(p, _dilate(w, d), s) for p, w, d, s in
                      zip(padded, params["window_dimensions"], params["window_dilation"], params["window_strides"]))  # fmt: skip
    compute = _F32 if tangents.dtype in _LOW_PRECISION else tangents.dtype
    if math.prod(out_shape) == 0:
        return xp.zeros(out_shape, dtype=tangents.dtype)
    config, slices, choice, found, _ = _select(xp, operand, out_shape, **params)
    values = pad(xp, tangents.astype(compute, copy=False), 0, config)  # padding is never chosen, but reads as 0
    finite = compute.kind in "iu" or bool(xp.isfinite(values).all())
    result = xp.zeros(out_shape, dtype=compute)
    for k, sl in enumerate(slices):
        mask = choice == k
        result += mask * values[sl] if finite else xp.where(mask, values[sl], xp.zeros((), compute))
    if found is not None:
        result = xp.where(found, result, xp.zeros((), compute))
    return result.astype(tangents.dtype, copy=False)
