"""op_db entries for convolutions and windowed reductions, against the naive loops of conv_reference.py."""

from __future__ import annotations

import numpy as np
from conv_reference import (
    _wide,
    _window_elements,
    _window_setup,
    conv_ref,
    dilate,
    reduce_window_ref,
    select_and_scatter_add_ref,
)
from op_db import ALL, BF16, FLOATING, INTEGER, NO_BOOL, NO_COMPLEX, NUMERIC, REAL, OpInfo, Sample, make_array, register

from ember import lax
from ember.lax._conv import _select_and_gather_add, _select_and_scatter_add

F16 = np.dtype(np.float16)
_CONV_TOL = {F16: (1e-2, 1e-2), BF16: (2e-2, 5e-2), np.dtype(np.float32): (1e-5, 1e-5), np.dtype(np.complex64): (1e-5, 1e-5)}
_SUM_TOL = _CONV_TOL
ORDER_AND_ADD = "chooses by order (no complex) and adds the source (no bool)"


def _conv_samples(cases):
    def make(rng, d):
        return [Sample((make_array(rng, a, d, -2, 3), make_array(rng, b, d, -2, 3), *args), dict(kw)) for a, b, args, kw in cases]

    return make


_GENERAL_CASES = [
    ((2, 3, 7), (4, 3, 3), ((2,), [(1, 2)]), {"rhs_dilation": (2,)}),
    ((2, 4, 5, 6), (6, 2, 3, 2), ((1, 2), "SAME"), {"feature_group_count": 2}),
    ((2, 5, 5, 3), (3, 3, 3, 4), ((1, 1), [(1, 1), (0, -1)]), {"lhs_dilation": (2, 1), "dimension_numbers": ("NHWC", "HWIO", "NHWC")}),
    ((4, 3, 4, 4), (4, 3, 2, 2), ((1, 1), "SAME_LOWER"), {"batch_group_count": 2}),
    ((2, 2, 4, 3, 3), (2, 2, 2, 2, 1), ((1, 2, 1), [(0, 1), (1, 0), (0, 0)]), {"batch_group_count": 2}),
    ((1, 3, 6, 3), (3, 1, 3, 2), ((2, 1), "VALID"), {"feature_group_count": 3, "dimension_numbers": ("NWHC", "OIWH", "NCWH")}),
    ((0, 2, 4, 4), (3, 2, 3, 3), ((1, 1), "VALID"), {}),
    ((2, 2, 4), (0, 2, 3), ((1,), "SAME"), {}),
    ((2, 3, 1, 1), (2, 3, 1, 1), ((1, 1), "VALID"), {}),
]
_CONV_CASES = [((2, 3, 6, 5), (4, 3, 3, 2), ((2, 1), "SAME"), {}), ((1, 2, 7), (3, 2, 4), ((3,), "VALID"), {}),
               ((1, 1, 3, 3, 4), (2, 1, 2, 2, 3), ((1, 1, 1), [(1, 0), (0, 1), (2, 2)]), {})]  # fmt: skip
_GENERAL_PADDING_CASES = [((2, 2, 5, 4), (3, 2, 2, 3), ((1, 2), [(1, 1), (2, 0)], (2, 1), (1, 2)), {}),
                          ((1, 1, 4), (2, 1, 3), ((1,), "SAME", None, (2,)), {})]  # fmt: skip
_TRANSPOSE_CASES = [((1, 3, 3, 2), (3, 3, 2, 4), ((2, 2), "SAME"), {}),
                    ((2, 4, 3), (3, 2, 3), ((2,), "VALID"), {"transpose_kernel": True}),
                    ((1, 2, 3, 2), (2, 2, 2, 3), ((3, 1), [(1, 2), (0, 1)]), {"rhs_dilation": (1, 2)}),
                    ((1, 2, 4, 3), (3, 2, 3, 3), ((2, 2), [(1, 1), (0, 1)]), {"use_consistent_padding": True,
                                                                              "dimension_numbers": ("NCHW", "OIHW", "NCHW")})]  # fmt: skip
_LAYOUT_CASES = [((2, 5, 3), (3, 3, 2), ("NWC", "WIO", "NWC")), ((3, 4, 2, 5), (2, 3, 2, 3), ("CHWN", "OHWI", "NHWC")),
                 ((2, 3, 4, 2, 3), (2, 2, 1, 3, 4), ("NDHWC", "DHWIO", "NCDHW"))]  # fmt: skip


def _transpose_padding(k, s, padding):
    # jax.lax.conv_transpose's rule: the transposed convolution's (low, high) for a forward padding
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total, lo = k + s - 2 + max(k - s, 0), k - 1
    else:
        lo, total = k - padding[0] - 1, 2 * k - padding[0] - padding[1] - 2
    return lo, total - lo


def _conv_transpose_ref(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None, transpose_kernel=False,
                        use_consistent_padding=False):  # fmt: skip
    """conv_transpose by its definition: a convolution of the stride-dilated input."""
    n = lhs.ndim - 2
    dn = dimension_numbers or {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC")}[lhs.ndim]
    rhs_spatial = [i for i, c in enumerate(dn[1]) if c not in "OI"]
    rd = rhs_dilation or (1,) * n
    if use_consistent_padding or isinstance(padding, str):
        forward = [padding] * n if isinstance(padding, str) else padding
        padding = [_transpose_padding(dilate(rhs.shape[a], r), s, p) for a, r, s, p in zip(rhs_spatial, rd, strides, forward)]
    if transpose_kernel:
        rhs = np.flip(rhs, rhs_spatial).swapaxes(dn[1].index("O"), dn[1].index("I"))
    return conv_ref(lhs, rhs, (1,) * n, padding, lhs_dilation=strides, rhs_dilation=rd, dimension_numbers=dn)


register(
    OpInfo("lax.conv_general_dilated", lambda x, w, s, p, **kw: lax.conv_general_dilated(x, w, s, p, **kw), conv_ref, ALL,
           _conv_samples(_GENERAL_CASES), "", primitives=("conv_general_dilated",), tol=_CONV_TOL),
    OpInfo("lax.conv", lambda x, w, s, p: lax.conv(x, w, s, p), conv_ref, ALL, _conv_samples(_CONV_CASES), "",
           primitives=("conv_general_dilated",), tol=_CONV_TOL),
    OpInfo("lax.conv_with_general_padding", lambda x, w, s, p, ld, rd: lax.conv_with_general_padding(x, w, s, p, ld, rd),
           lambda x, w, s, p, ld, rd: conv_ref(x, w, s, p, lhs_dilation=ld, rhs_dilation=rd), ALL,
           _conv_samples(_GENERAL_PADDING_CASES), "", primitives=("conv_general_dilated",), tol=_CONV_TOL),
    OpInfo("lax.conv_transpose", lambda x, w, s, p, **kw: lax.conv_transpose(x, w, s, p, **kw), _conv_transpose_ref, ALL,
           _conv_samples(_TRANSPOSE_CASES), "", primitives=("conv_general_dilated",), tol=_CONV_TOL),
    OpInfo("lax.conv_dimension_numbers",
           lambda x, w, dn: lax.conv_general_dilated(x, w, (1,) * (x.ndim - 2), "SAME",
                                                     dimension_numbers=lax.conv_dimension_numbers(x.shape, w.shape, dn)),
           lambda x, w, dn: conv_ref(x, w, (1,) * (x.ndim - 2), "SAME", dimension_numbers=dn), ALL,
           lambda rng, d: [Sample((make_array(rng, a, d, -2, 3), make_array(rng, b, d, -2, 3), dn)) for a, b, dn in _LAYOUT_CASES],
           "", primitives=("conv_general_dilated",), tol=_CONV_TOL),
)  # fmt: skip

# --- windowed reductions ------------------------------------------------------------------------------

# (operand shape, window_dimensions, window_strides, padding, base_dilation, window_dilation)
_WINDOW_CASES = [
    ((7,), (3,), (1,), "VALID", None, None),
    ((6, 5), (2, 2), (2, 2), "VALID", None, None),
    ((2, 5, 6), (1, 3, 2), (1, 2, 1), "SAME", None, None),
    ((5, 4), (2, 3), (1, 2), [(1, 0), (2, -1)], (2, 1), (1, 2)),
    ((2, 3, 4, 3), (1, 2, 2, 2), (1, 1, 2, 1), "SAME_LOWER", None, (1, 1, 1, 2)),
    ((0, 4), (1, 2), (1, 1), "VALID", None, None),
    ((), (), (), [], None, None),
    ((3, 40), (1, 40), (1, 1), [(0, 0), (3, 3)], None, None),  # a window beyond the unrolled path
]


def _init_of(kind, d):
    if kind == "add":
        return 0
    if d == np.bool_:
        return kind == "min"
    if d.kind in "iu":
        # a NumPy scalar: Python ints must fit int32 while x64 is off, as in JAX
        return d.type(np.iinfo(d).min if kind == "max" else np.iinfo(d).max)
    return -np.inf if kind == "max" else np.inf


def _window_samples(kind, other_init):
    def make(rng, d):
        d = np.dtype(d)
        out = [Sample((make_array(rng, s, d), _init_of(kind, d), kind, *rest)) for s, *rest in _WINDOW_CASES]
        out.append(Sample((make_array(rng, (4, 5), d), other_init, kind, (2, 2), (1, 2), "SAME", (1, 2), None)))
        if d.kind == "f" or d == BF16:
            specials = np.array([0.0, np.nan, -np.inf, 1.0, np.inf, -1.0], dtype=d)
            out.append(Sample((specials, _init_of(kind, d), kind, (2,), (1,), "SAME", None, None)))
        return out

    return make


def _distinct(rng, shape, d):
    """Distinct values 1/2 apart (k/2 + 1/4: never 0 or +-1, the other init values), exact in
    bfloat16 for up to 512 elements: no ties inside a max/min window, where the derivative is
    undefined, and none within a finite-difference step of each other."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n // 2) * 0.5 + 0.25).reshape(shape).astype(d)


def _window_ad_samples(kind, other_init):
    def make(rng, d):
        d = np.dtype(d)
        out = [Sample((_distinct(rng, s, d), _init_of(kind, d), kind, *rest)) for s, *rest in _WINDOW_CASES]
        out.append(Sample((_distinct(rng, (4, 5), d), other_init, kind, (2, 2), (1, 2), "SAME", (1, 2), None)))
        return out

    return make


def _reduce_window_op(x, init, kind, dims, strides, padding, base, wdil):
    computation = {"add": lax.add, "max": lax.max, "min": lax.min}[kind]
    return lax.reduce_window(x, init, computation, dims, strides, padding, base, wdil)


register(
    OpInfo("lax.reduce_window", _reduce_window_op, reduce_window_ref, NUMERIC, _window_samples("add", 1), NO_BOOL,
           primitives=("reduce_window_sum",), tol=_SUM_TOL),
    OpInfo("lax.reduce_window(max)", _reduce_window_op, reduce_window_ref, REAL, _window_samples("max", True), NO_COMPLEX,
           primitives=("reduce_window_max",), ref_in_dtype=True, ad_samples=_window_ad_samples("max", True)),
    OpInfo("lax.reduce_window(min)", _reduce_window_op, reduce_window_ref, REAL, _window_samples("min", False), NO_COMPLEX,
           primitives=("reduce_window_min",), ref_in_dtype=True, ad_samples=_window_ad_samples("min", False)),
)  # fmt: skip


# (operand shape, window_dimensions, window_strides, padding, base_dilation, window_dilation)
_SCATTER_CASES = [
    ((6, 4), (2, 2), (2, 2), "VALID", None, None),
    ((5, 6), (3, 2), (1, 2), "SAME", None, None),
    ((2, 5, 4), (1, 3, 2), (1, 2, 1), [(0, 0), (1, 2), (-1, 1)], (1, 2, 1), (1, 1, 2)),
    ((7,), (3,), (2,), "VALID", None, (2,)),
    ((0, 3), (1, 2), (1, 1), "VALID", None, None),
]


def _selection_samples(first_shape, operand_values):
    """Samples of select_and_{scatter,gather}_add: (first operand, operand, select_prim, window params)."""

    def make(rng, d):
        d = np.dtype(d)
        out = []
        for shape, dims, strides, padding, base, wdil in _SCATTER_CASES:
            operand = operand_values(rng, shape, d)
            n = len(shape)
            out_shape = reduce_window_ref(np.zeros(shape), 0.0, "add", dims, strides, padding, base, wdil).shape
            for select in ("ge", "le"):
                first = make_array(rng, first_shape(shape, out_shape), d, -2, 3)
                out.append(Sample((first, operand, select, dims, strides, padding, base or (1,) * n, wdil or (1,) * n)))
        return out

    return make


def _few_values(rng, shape, d):
    return make_array(rng, shape, d, 0, 3)  # few distinct values for integers: ties pick the first


# Autodiff: distinct operand values, so that no choice changes under a finite-difference step.
_scatter_samples = _selection_samples(lambda shape, out_shape: out_shape, _few_values)
_scatter_ad_samples = _selection_samples(lambda shape, out_shape: out_shape, _distinct)
_gather_samples = _selection_samples(lambda shape, out_shape: shape, _few_values)
_gather_ad_samples = _selection_samples(lambda shape, out_shape: shape, _distinct)


def select_and_gather_add_ref(tangents, operand, select_prim, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):  # fmt: skip
    """Each window's tangent at its choice: the choice as select_and_scatter_add_ref makes it (the
    first strict extreme of the non-padding elements, a NaN winning), 0 for a window of padding only."""
    x, t = np.asarray(operand), _wide(np.asarray(tangents))
    better = (lambda a, b: b > a) if select_prim == "ge" else (lambda a, b: b < a)
    pads, base, wdil, out_shape = _window_setup(x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    out = np.zeros(out_shape, dtype=t.dtype)
    for pos in np.ndindex(*out_shape):
        chosen = None
        for index in _window_elements(x.shape, pos, window_dimensions, window_strides, pads, base, wdil):
            if index is None:
                continue
            if chosen is None or not np.isnan(x[chosen]) and (np.isnan(x[index]) or better(x[chosen], x[index])):
                chosen = index
        if chosen is not None:
            out[pos] = t[chosen]
    return out


register(
    OpInfo("lax._select_and_scatter_add", _select_and_scatter_add, select_and_scatter_add_ref, INTEGER + FLOATING,
           _scatter_samples, ORDER_AND_ADD, primitives=("select_and_scatter_add",), tol=_SUM_TOL,
           ad_samples=_scatter_ad_samples),
    OpInfo("lax._select_and_gather_add", _select_and_gather_add, select_and_gather_add_ref, INTEGER + FLOATING,
           _gather_samples, ORDER_AND_ADD, primitives=("select_and_gather_add",), tol=_SUM_TOL,
           ad_samples=_gather_ad_samples),
)
