"""Naive loop references for convolution and windowed reductions.

Explicit Python loops over every output position and every window element:
slow, written from the definitions (XLA's operation semantics) rather than
from ember's kernels, and independent of ember (dimension-number strings and
padding names are parsed here again). Keep the sizes small.

Arithmetic runs in a wide dtype (int64, float64, complex128); results come
back in it, and the op database casts (integers wrap, as in XLA).
"""

from __future__ import annotations

import numpy as np

__all__ = ["conv_ref", "dilate", "reduce_window_ref", "same_padding", "select_and_scatter_add_ref"]


def dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def _wide(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "biu":
        return x.astype(np.int64)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x.astype(np.float64)


def same_padding(sizes, windows, strides, lower: bool = False):
    """(low, high) per dimension so that out = ceil(size / stride) (TensorFlow's SAME)."""
    pads = []
    for size, window, stride in zip(sizes, windows, strides):
        out = -(-size // stride)
        total = max(0, (out - 1) * stride + window - size)
        pads.append((total - total // 2, total // 2) if lower else (total // 2, total - total // 2))
    return pads


def _padding(padding, sizes, windows, strides):
    if isinstance(padding, str):
        if padding == "VALID":
            return [(0, 0)] * len(sizes)
        return same_padding(sizes, windows, strides, lower=padding == "SAME_LOWER")
    return [tuple(p) for p in padding]


def _permutations(dimension_numbers, ndim):
    """(lhs, rhs, out) permutations to canonical (N, C, spatial...) / (O, I, spatial...)."""
    if dimension_numbers is None:
        return [tuple(range(ndim))] * 3
    if all(isinstance(s, str) for s in dimension_numbers):
        lhs, rhs, out = dimension_numbers
        spatial = [c for c in rhs if c not in "OI"]
        return [(s.index(a), s.index(b), *(s.index(c) for c in spatial)) for s, (a, b) in ((lhs, "NC"), (rhs, "OI"), (out, "NC"))]
    return [tuple(spec) for spec in dimension_numbers]


def conv_ref(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
             feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None):  # fmt: skip
    """XLA's ConvGeneralDilated by definition:

    out[n, o, y] = sum over i, k of lhs_padded_dilated[b, g_f * I + i, y * stride + k * rhs_dilation] * rhs[o, i, k]
    with g_f = o // (O / feature_group_count) and b = g_b * (N / batch_group_count) + n,
    g_b = o // (O / batch_group_count).
    """
    lhs_perm, rhs_perm, out_perm = _permutations(dimension_numbers, lhs.ndim)
    x, w = _wide(np.transpose(lhs, lhs_perm)), _wide(np.transpose(rhs, rhs_perm))
    n = x.ndim - 2
    ld = lhs_dilation or (1,) * n
    rd = rhs_dilation or (1,) * n
    sizes, window = x.shape[2:], w.shape[2:]
    pads = _padding(padding, sizes, [dilate(k, r) for k, r in zip(window, rd)], window_strides)
    batch, out_features, in_features = x.shape[0], w.shape[0], w.shape[1]
    out_batch = batch // batch_group_count
    out_sp = []
    for i in range(n):
        padded = pads[i][0] + dilate(sizes[i], ld[i]) + pads[i][1]
        out_sp.append(max(0, (padded - dilate(window[i], rd[i])) // window_strides[i] + 1))
    out = np.zeros((out_batch, out_features, *out_sp), dtype=np.result_type(x.dtype, w.dtype))
    per_feature_group = out_features // feature_group_count
    per_batch_group = out_features // batch_group_count
    for nb in range(out_batch):
        for o in range(out_features):
            g = o // per_feature_group
            b = (o // per_batch_group) * out_batch + nb
            channels = slice(g * in_features, (g + 1) * in_features)
            for pos in np.ndindex(*out_sp):
                total = out.dtype.type(0)
                for k in np.ndindex(*window):
                    index = []
                    for i in range(n):
                        p = pos[i] * window_strides[i] + k[i] * rd[i] - pads[i][0]  # coordinate in the dilated input
                        if p < 0 or p % ld[i] or p // ld[i] >= sizes[i]:
                            break
                        index.append(p // ld[i])
                    else:
                        total += np.sum(x[(b, channels, *index)] * w[(o, slice(None), *k)])
                out[(nb, o, *pos)] = total
    return np.transpose(out, np.argsort(out_perm))


_COMBINE = {"add": lambda a, b: a + b, "max": np.maximum, "min": np.minimum}


def _name(computation) -> str:
    name = computation if isinstance(computation, str) else computation.__name__
    return {"sum": "add"}.get(name, name)


def _window_elements(shape, pos, window_dimensions, window_strides, pads, base, wdil):
    """For one output position, each window element in row-major order: operand index or None (padding)."""
    for k in np.ndindex(*window_dimensions):
        index = []
        for i in range(len(shape)):
            p = pos[i] * window_strides[i] + k[i] * wdil[i] - pads[i][0]
            if p < 0 or p % base[i] or p // base[i] >= shape[i]:
                index = None
                break
            index.append(p // base[i])
        yield None if index is None else tuple(index)


def _window_setup(x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    nd = x.ndim
    base = base_dilation or (1,) * nd
    wdil = window_dilation or (1,) * nd
    pads = _padding(padding, x.shape, [dilate(w, d) for w, d in zip(window_dimensions, wdil)], window_strides)
    out_shape = []
    for i in range(nd):
        padded = pads[i][0] + dilate(x.shape[i], base[i]) + pads[i][1]
        out_shape.append(max(0, (padded - dilate(window_dimensions[i], wdil[i])) // window_strides[i] + 1))
    return pads, base, wdil, tuple(out_shape)


def reduce_window_ref(operand, init_value, computation, window_dimensions, window_strides, padding,
                      base_dilation=None, window_dilation=None):  # fmt: skip
    """XLA's ReduceWindow: each window of the padded, base-dilated operand (holes and padding hold
    init_value) folded with `computation` starting from init_value."""
    name = _name(computation)
    x = _wide(np.asarray(operand)) if name == "add" else np.asarray(operand)  # max/min are exact in any dtype
    combine = _COMBINE[name]
    pads, base, wdil, out_shape = _window_setup(x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    init = np.asarray(init_value).astype(x.dtype)
    out = np.empty(out_shape, dtype=x.dtype)
    for pos in np.ndindex(*out_shape):
        acc = init
        for index in _window_elements(x.shape, pos, window_dimensions, window_strides, pads, base, wdil):
            acc = combine(acc, init if index is None else x[index])
        out[pos] = acc
    return out


def select_and_scatter_add_ref(source, operand, select_prim, window_dimensions, window_strides, padding,
                               base_dilation=None, window_dilation=None):  # fmt: skip
    """SelectAndScatter with add: scan each window's non-padding elements in row-major order, keep
    the current choice unless the next one is strictly greater ('ge'; smaller for 'le') or the
    choice is not NaN and the next one is; add the window's source value at the final choice."""
    x, src = np.asarray(operand), _wide(np.asarray(source))
    better = (lambda a, b: b > a) if select_prim == "ge" else (lambda a, b: b < a)
    pads, base, wdil, out_shape = _window_setup(x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    assert tuple(src.shape) == out_shape, (src.shape, out_shape)
    out = np.zeros(x.shape, dtype=src.dtype)
    for pos in np.ndindex(*out_shape):
        chosen = None
        for index in _window_elements(x.shape, pos, window_dimensions, window_strides, pads, base, wdil):
            if index is None:
                continue
            if chosen is None or not np.isnan(x[chosen]) and (np.isnan(x[index]) or better(x[chosen], x[index])):
                chosen = index
        if chosen is not None:
            out[chosen] += src[pos]
    return out
