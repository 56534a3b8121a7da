"""A convolution and its weight gradients share one im2col matrix (the NumPy backend's generated code).

The general way of a convolution (kernels_conv) copies each output position's window of its input into
an im2col matrix, rows (batch, output position), columns (window offset, in feature), and multiplies it
by the kernel. A weight gradient of that convolution contracts the same matrix with the output gradient
over the output positions:

* per example (vmap of grad: feature groups, one example each, which kernels_conv_grads.by_window
  takes): ``(out features, positions) @ (positions, window x in features)`` for each example;
* summed over a batch (kernels_conv_grads.features_first, with several in features):
  ``(out features, batch x positions) @ (batch x positions, window x in features)``.

Each of those ways copies that matrix out of the input again. In a program that holds both, the
forward convolution keeps its matrix (``w, _m0 = ops.conv_keeping_patches(...)``) and the weight
gradient multiplies it (``ops.conv_from_patches(v, ct, _m0, ...)``). That is the product its own way
computes, on the same matrix, so the bits are eager mode's; the copy and its Python calls are saved
(a small CNN's per-example second-layer weight gradient, 50 -> 37 us in its jitted program).

Only matrices the general way makes in one piece are kept (kernels_conv's `_IM2COL_BLOCK_BYTES`):
larger ones it copies block by block through the cache, and keeping them would cost memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.backends.fusion import Fused
from ember.backends.kernels_conv import as_out_dtype, general_way, in_one_piece, numpy_conv, plan_of

__all__ = ["conv_from_patches", "conv_keeping_patches", "plan_patches"]


def conv_keeping_patches(lhs, rhs, **params):
    """`conv_general_dilated` by the general way, and its im2col matrix (groups, positions, patch).

    >>> x = np.arange(16.0).reshape(1, 1, 4, 4); k = np.ones((1, 1, 3, 3))
    >>> dn = ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    >>> out, matrix = conv_keeping_patches(x, k, window_strides=(1, 1), padding=((0, 0), (0, 0)),
    ...     lhs_dilation=(1, 1), rhs_dilation=(1, 1), dimension_numbers=dn)
    >>> out[0, 0], matrix.shape
    (array([[45., 54.],
           [81., 90.]]), (1, 4, 9))
    """
    return general_way(np, lhs, rhs, plan_of(lhs.shape, rhs.shape, lhs.dtype, params), keep_matrix=True)


def conv_from_patches(lhs, rhs, matrix, *, dimension_numbers, feature_group_count=1, **params):
    """``conv_general_dilated(lhs, rhs, ...)``, a weight gradient of the convolution of `lhs` whose im2col
    matrix is `matrix` (see `plan_patches`), as the product its own way computes.

    >>> x = np.arange(16.0).reshape(1, 1, 4, 4); k = np.ones((1, 1, 3, 3))
    >>> geometry = dict(padding=((0, 0), (0, 0)), lhs_dilation=(1, 1), rhs_dilation=(1, 1))
    >>> dn = ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    >>> _, matrix = conv_keeping_patches(x, k, window_strides=(1, 1), dimension_numbers=dn, **geometry)
    >>> ct = np.ones((1, 1, 2, 2))  # the output gradient; the weight gradient swaps batch and features
    >>> swapped = ((1, 0, 2, 3), (1, 0, 2, 3), (1, 0, 2, 3))
    >>> conv_from_patches(x, ct, matrix, window_strides=(1, 1), dimension_numbers=swapped, **geometry)[0, 0]
    array([[10., 14., 18.],
           [26., 30., 34.],
           [42., 46., 50.]])
    """
    params = dict(params, dimension_numbers=dimension_numbers, feature_group_count=feature_group_count)
    plan = plan_of(lhs.shape, rhs.shape, lhs.dtype, params)
    groups, (features, *window, out_features) = feature_group_count, plan.out_shape
    r = rhs.transpose(dimension_numbers[1]).astype(plan.compute, copy=False)  # (out features, in features, ...)
    rows = r.reshape(groups, out_features // groups, -1)
    out = np.matmul(rows, matrix.reshape(groups, rows.shape[-1], -1))  # (groups, O / groups, window x features)
    # (O, window..., features) -> (features, window..., O), the (N, spatial..., O) order of out_perm's input
    n = len(window)
    out = out.reshape(out_features, *window, features).transpose(n + 1, *range(1, n + 1), 0)
    return as_out_dtype(out.transpose(plan.out_perm), plan.out_dtype)


def plan_patches(items: Sequence[Any], kernel_for: Callable[[Any], Any]) -> tuple[dict[int, int], dict[int, int]]:
    """The convolutions of a program (its items, as fusion.plan_fusion gives them) that keep their im2col
    matrix, and the weight gradients that use it: ({item index: slot}, {item index: slot}), slots
    numbered from 0."""
    forwards: dict[Any, list[tuple[int, Any]]] = {}  # lhs variable -> (index, eqn) of convolutions that may keep
    keep: dict[int, int] = {}
    use: dict[int, int] = {}
    for i, eqn in enumerate(items):
        if type(eqn) is Fused or eqn.primitive.name != "conv_general_dilated":
            continue
        if kernel_for(eqn.primitive) is not numpy_conv or type(eqn.inputs[0]).__name__ != "Var":
            continue
        lhs = eqn.inputs[0]
        j = next((j for j, f in forwards.get(lhs, ()) if _weight_gradient_of(eqn, f)), None)
        if j is not None:
            use[i] = keep.setdefault(j, len(keep))
        elif _keeps(eqn):
            forwards.setdefault(lhs, []).append((i, eqn))
    return keep, use


def _eqn_plan(eqn: Any):
    lhs, rhs = eqn.inputs
    return plan_of(lhs.aval.shape, rhs.aval.shape, lhs.aval.dtype, eqn.params)


def _keeps(eqn: Any) -> bool:
    """Whether convolution `eqn` may keep its im2col matrix: one group, no lhs dilation, taken by the
    general way in one piece."""
    p = eqn.params
    if p["feature_group_count"] != 1 or p["batch_group_count"] != 1 or any(d != 1 for d in p["lhs_dilation"]):
        return False
    plan = _eqn_plan(eqn)
    return plan.way is None and plan.out_dtype != np.bool_ and in_one_piece(plan)


def _weight_gradient_of(g: Any, f: Any) -> bool:
    """Whether convolution `g` is a weight gradient of convolution `f` (same lhs) that its own way
    computes as a product with f's im2col matrix: by_window per example, or features_first over a batch
    with several in features."""
    pf, pg = f.params, g.params
    (lf, rf, _), (lg, rg, _) = pf["dimension_numbers"], pg["dimension_numbers"]
    x, k = f.inputs
    r = g.inputs[1]
    if (pg["batch_group_count"] != 1 or tuple(lg) != (lf[1], lf[0], *lf[2:]) or r.aval.dtype != x.aval.dtype
            or pg["preferred_element_type"] != pf["preferred_element_type"]
            or tuple(pg["window_strides"]) != tuple(pf["rhs_dilation"])
            or tuple(pg["rhs_dilation"]) != tuple(pf["window_strides"])
            or tuple(map(tuple, pg["padding"])) != tuple(map(tuple, pf["padding"]))
            or any(d != 1 for d in pg["lhs_dilation"])):  # fmt: skip
        return False
    plan_f, plan_g = _eqn_plan(f), _eqn_plan(g)
    window_f = tuple(k.aval.shape[a] for a in rf[2:])
    window_g = tuple(r.aval.shape[a] for a in rg[2:])
    if window_g != plan_f.out_shape[1:-1] or plan_g.out_shape[1:-1] != window_f:
        return False
    examples, features = x.aval.shape[lf[0]], x.aval.shape[lf[1]]
    if plan_g.way == "by_window":
        return pg["feature_group_count"] == examples
    return plan_g.way == "features_first" and features > 1
