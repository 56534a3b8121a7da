"""Convolution and windowed reductions.

conv_general_dilated (XLA's ConvGeneralDilated), reduce_window_{sum,max,min}
(ReduceWindow with the monoid's identity as init value),
select_and_scatter_add (SelectAndScatter with ``add``: the transpose of a
max/min pooling's window choice, which reduce_window_max's vjp needs) and
select_and_gather_add (its transpose: max/min pooling's tangent).

Parameters are static and already normalised: tuples of ints, padding as
(low, high) pairs, dimension numbers as a `ConvDimensionNumbers` of integer
permutations. The `ember.lax` wrappers accept JAX's friendlier forms
("SAME", ("NHWC", "HWIO", "NHWC"), None).

Window arithmetic, per spatial dimension: a dilated size is
``dilate(n, d) = 0 if n == 0 else (n - 1) * d + 1``; the padded input is
``lo + dilate(size, base_dilation) + hi``; the output has
``(padded - dilate(window, window_dilation)) // stride + 1`` positions.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import ANY, NUMERIC, REAL, REAL_NUMERIC, DTypes, check_dtype, check_same_dtypes
from ember.errors import DTypeError, InvalidArgumentError, ShapeError

__all__ = [
    "ConvDimensionNumbers",
    "conv_general_dilated_p",
    "dilate_dim",
    "reduce_window_max_p",
    "reduce_window_min_p",
    "reduce_window_sum_p",
    "select_and_gather_add_p",
    "select_and_scatter_add_p",
]  # fmt: skip


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution sit.

    lhs_spec: (batch dimension, feature dimension, spatial dimensions...) of the input
    rhs_spec: (out-feature dimension, in-feature dimension, spatial dimensions...) of the kernel
    out_spec: (batch dimension, feature dimension, spatial dimensions...) of the output
    Spatial dimension i of the three specs correspond to each other.
    """

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def dilate_dim(size: int, dilation: int) -> int:
    """The size of an axis of `size` elements with `dilation - 1` holes between neighbours."""
    return 0 if size == 0 else (size - 1) * dilation + 1


# --- parameter checks ------------------------------------------------------------------


def _ints(op: str, name: str, values, count: int, minimum: int | None, why: str) -> tuple[int, ...]:
    try:
        ints = tuple(operator.index(v) for v in values)
    except TypeError:
        raise InvalidArgumentError(f"{op}: {name} must be a sequence of {count} ints ({why}), got {values!r}") from None
    if len(ints) != count:
        raise InvalidArgumentError(f"{op}: {name}={ints} has {len(ints)} entries, but {why} needs {count}")
    if minimum is not None and any(v < minimum for v in ints):
        raise InvalidArgumentError(f"{op}: every entry of {name}={ints} must be >= {minimum}")
    return ints


def _pairs(op: str, padding, count: int, why: str) -> tuple[tuple[int, int], ...]:
    try:
        pairs = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{op}: padding must be a sequence of {count} (low, high) pairs of ints ({why}), got {padding!r}; "
            "the lax wrappers also take 'SAME' or 'VALID'"
        ) from None
    if len(pairs) != count:
        raise InvalidArgumentError(f"{op}: padding={pairs} has {len(pairs)} (low, high) pairs, but {why} needs {count}")
    return pairs


def _positive_int(op: str, name: str, value) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{op}: {name} must be a positive int, got {value!r}") from None
    if value < 1:
        raise InvalidArgumentError(f"{op}: {name} must be a positive int, got {value}")
    return value


def _window_positions(op: str, axis: str, size: int, lo: int, hi: int, dilation: int,
                      window: int, stride: int, shapes: str) -> int:  # fmt: skip
    """Output positions of a window sliding along one padded, dilated axis (errors name the shapes)."""
    dilated = dilate_dim(size, dilation)
    padded = lo + dilated + hi
    if padded < 0:
        raise ShapeError(
            f"{op}: negative padding ({lo}, {hi}) removes more than the {dilated} elements of {axis} ({shapes})"
        )
    if window > padded:
        if size == 0:  # an empty input gives an empty output, as in JAX
            return 0
        raise ShapeError(
            f"{op}: the window ({window} elements wide after dilation) is larger than the padded input along {axis} "
            f"({size} elements, {dilated} after dilation, {padded} with padding ({lo}, {hi})) ({shapes}); "
            "pad more (e.g. padding='SAME'), or use a smaller window or dilation"
        )
    return (padded - window) // stride + 1


# --- conv_general_dilated ------------------------------------------------------------------

# conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
#   dimension_numbers, feature_group_count, batch_group_count, precision, preferred_element_type)
# out[n, o, y...] = sum_{i, k...} lhs~[n', g*I + i, y*stride + k*rhs_dilation] * rhs[o, i, k...]
# where lhs~ is lhs dilated by lhs_dilation and padded; g = o // (O / groups) picks the feature
# group (lhs features g*I + i) or the batch group (lhs batch n' = g * N/groups + n).
conv_general_dilated_p = Primitive("conv_general_dilated")

CONV_DTYPES = ANY


def check_dimension_numbers(op: str, dimension_numbers, ndim: int) -> ConvDimensionNumbers:
    """Validate integer dimension numbers: three permutations of range(ndim)."""
    try:
        specs = tuple(tuple(operator.index(d) for d in spec) for spec in dimension_numbers)
    except TypeError:
        raise InvalidArgumentError(
            f"{op}: dimension_numbers must be a ConvDimensionNumbers of integer specs, got {dimension_numbers!r}; "
            "lax.conv_dimension_numbers turns strings like ('NCHW', 'OIHW', 'NCHW') into one"
        ) from None
    if len(specs) != 3:
        raise InvalidArgumentError(f"{op}: dimension_numbers needs (lhs_spec, rhs_spec, out_spec), got {dimension_numbers!r}")
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), specs):
        if sorted(spec) != list(range(ndim)):
            raise InvalidArgumentError(
                f"{op}: dimension_numbers.{name}={spec} must be a permutation of range({ndim}) for operands of rank {ndim} "
                "((batch or out-feature, feature or in-feature, spatial...) dimension indices)"
            )
    return ConvDimensionNumbers(*specs)


def _check_preferred(op: str, dtype, preferred) -> object:
    if preferred is None:
        return dtype
    preferred = dtypes.to_dtype(preferred, op)

    def kind(d):
        return "b" if d == dtypes.bool_ else "i" if dtypes.is_integer(d) else "f" if dtypes.is_floating(d) else "c"

    pair = kind(dtype) + kind(preferred)
    if pair not in ("bb", "bi", "bf", "ii", "if", "ff", "cc"):
        raise DTypeError(
            f"{op}: preferred_element_type={preferred} is incompatible with operands of dtype {dtype}; the compatible "
            "(input, preferred) kinds are (integer, integer), (integer, floating), (floating, floating) and (complex, complex)"
        )
    if pair == "ii" and preferred.itemsize < dtype.itemsize:
        raise DTypeError(f"{op}: preferred_element_type={preferred} must not be narrower than the operands' dtype {dtype}")
    return preferred


def _conv_rule(lhs: ShapedArray, rhs: ShapedArray, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count=1, batch_group_count=1, precision=None,
               preferred_element_type=None) -> ShapedArray:  # fmt: skip
    op = "conv_general_dilated"
    shapes = f"lhs {describe(lhs)}, rhs {describe(rhs)}"
    dtype = check_same_dtypes(op, (lhs, rhs))
    check_dtype(op, lhs, CONV_DTYPES)
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ShapeError(
            f"{op}: lhs and rhs must have the same rank, at least 2 (batch/feature dimensions, then spatial ones), got {shapes}"
        )
    lhs_spec, rhs_spec, out_spec = check_dimension_numbers(op, dimension_numbers, lhs.ndim)
    n = lhs.ndim - 2
    why = f"{n} spatial dimension(s) of {shapes}"
    strides = _ints(op, "window_strides", window_strides, n, 1, why)
    pads = _pairs(op, padding, n, why)
    lhs_dil = _ints(op, "lhs_dilation", lhs_dilation, n, 1, why)
    rhs_dil = _ints(op, "rhs_dilation", rhs_dilation, n, 1, why)
    fgc = _positive_int(op, "feature_group_count", feature_group_count)
    bgc = _positive_int(op, "batch_group_count", batch_group_count)
    if fgc > 1 and bgc > 1:
        raise InvalidArgumentError(
            f"{op}: at most one of feature_group_count ({fgc}) and batch_group_count ({bgc}) may be greater than 1"
        )
    batch, features = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    out_features, in_features = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    where = f"({shapes}; lhs feature dimension {lhs_spec[1]}, rhs in/out-feature dimensions {rhs_spec[1]}/{rhs_spec[0]})"
    if features % fgc:
        raise ShapeError(f"{op}: feature_group_count={fgc} must divide the lhs feature size {features} {where}")
    if features // fgc != in_features:
        group = f" / feature_group_count={fgc} = {features // fgc}" if fgc > 1 else ""
        raise ShapeError(
            f"{op}: the lhs has {features} input features{group}, but the rhs in-feature size is {in_features} {where}; "
            "with feature groups the kernel's in-feature size is lhs features / feature_group_count"
        )
    for name, groups in (("feature_group_count", fgc), ("batch_group_count", bgc)):
        if out_features % groups:
            raise ShapeError(f"{op}: {name}={groups} must divide the rhs out-feature size {out_features} {where}")
    if batch % bgc:
        raise ShapeError(
            f"{op}: batch_group_count={bgc} must divide the lhs batch size {batch} ({shapes}; lhs batch dimension {lhs_spec[0]})"
        )
    spatial = []
    for i in range(n):
        size, window = lhs.shape[lhs_spec[2 + i]], rhs.shape[rhs_spec[2 + i]]
        axis = f"spatial dimension {i} (lhs dimension {lhs_spec[2 + i]}, rhs dimension {rhs_spec[2 + i]})"
        spatial.append(_window_positions(op, axis, size, *pads[i], lhs_dil[i], dilate_dim(window, rhs_dil[i]), strides[i], shapes))
    out_dtype = _check_preferred(op, dtype, preferred_element_type)
    canonical = (batch // bgc, out_features, *spatial)
    shape = [0] * lhs.ndim
    for position, size in zip(out_spec, canonical):
        shape[position] = size
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(tuple(shape), out_dtype, weak)


conv_general_dilated_p.abstract_eval = _conv_rule


# --- windowed reductions --------------------------------------------------------------------


def window_shape(op: str, x: ShapedArray, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation) -> tuple[int, ...]:  # fmt: skip
    """Check reduce_window-style parameters against operand `x`; return the output shape."""
    why = f"operand {describe(x)} of rank {x.ndim}"
    dims = _ints(op, "window_dimensions", window_dimensions, x.ndim, 1, why)
    strides = _ints(op, "window_strides", window_strides, x.ndim, 1, why)
    pads = _pairs(op, padding, x.ndim, why)
    base = _ints(op, "base_dilation", base_dilation, x.ndim, 1, why)
    wdil = _ints(op, "window_dilation", window_dilation, x.ndim, 1, why)
    shapes = f"operand {describe(x)}, window_dimensions {dims}"
    return tuple(_window_positions(op, f"dimension {i}", x.shape[i], *pads[i], base[i], dilate_dim(dims[i], wdil[i]),
                                   strides[i], shapes) for i in range(x.ndim))  # fmt: skip


def _window_reducer(name: str, allowed: DTypes) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, window_dimensions, window_strides, padding, base_dilation, window_dilation) -> ShapedArray:
        check_dtype(name, x, allowed)
        shape = window_shape(name, x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
        return ShapedArray(shape, x.dtype, x.weak_type)

    prim.abstract_eval = rule
    return prim


# reduce_window_<m>(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
# each output element reduces one window of x padded (and base-dilated) with the monoid's identity:
# 0 for sum, -inf / the dtype's minimum for max, +inf / the dtype's maximum for min.
reduce_window_sum_p = _window_reducer("reduce_window_sum", NUMERIC)
reduce_window_max_p = _window_reducer("reduce_window_max", REAL)
reduce_window_min_p = _window_reducer("reduce_window_min", REAL)

# select_and_scatter_add(source, operand, *, select_prim, window_dimensions, window_strides, padding,
#   base_dilation, window_dilation) -> array of operand's shape: for every window of operand (as in
# reduce_window), source's element for that window is added at the window's selected element, the
# first maximum ("ge") or minimum ("le") in row-major window order (a NaN counts as the extreme),
# among the elements that are not padding. The transpose of max/min pooling's jvp.
select_and_scatter_add_p = Primitive("select_and_scatter_add")
SCATTER_DTYPES = REAL_NUMERIC


def _select_and_scatter_add_rule(source: ShapedArray, operand: ShapedArray, *, select_prim, window_dimensions,
                                 window_strides, padding, base_dilation, window_dilation) -> ShapedArray:  # fmt: skip
    op = "select_and_scatter_add"
    if select_prim not in ("ge", "le"):
        raise InvalidArgumentError(f"{op}: select_prim must be 'ge' (max pooling) or 'le' (min pooling), got {select_prim!r}")
    check_same_dtypes(op, (source, operand))
    check_dtype(op, operand, SCATTER_DTYPES)
    expected = window_shape(op, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    if source.shape != expected:
        raise ShapeError(
            f"{op}: source {describe(source)} must have the shape of the windowed reduction of operand "
            f"{describe(operand)}, which is {expected} for window_dimensions {tuple(window_dimensions)}, "
            f"window_strides {tuple(window_strides)} and padding {tuple(padding)}"
        )
    return ShapedArray(operand.shape, source.dtype, source.weak_type)


select_and_scatter_add_p.abstract_eval = _select_and_scatter_add_rule


# select_and_gather_add(tangents, operand, *, select_prim, window_dimensions, window_strides, padding,
#   base_dilation, window_dilation) -> array of the windowed reduction's shape: for every window of
# operand (as in reduce_window), tangents' element at the window's selected element (the same
# choice as select_and_scatter_add's), or 0 for a window holding only padding. Linear in
# `tangents`: the tangent of max/min pooling, and the transpose of select_and_scatter_add.
select_and_gather_add_p = Primitive("select_and_gather_add")


def _select_and_gather_add_rule(tangents: ShapedArray, operand: ShapedArray, *, select_prim, window_dimensions,
                                window_strides, padding, base_dilation, window_dilation) -> ShapedArray:  # fmt: skip
    op = "select_and_gather_add"
    if select_prim not in ("ge", "le"):
        raise InvalidArgumentError(f"{op}: select_prim must be 'ge' (max pooling) or 'le' (min pooling), got {select_prim!r}")
    check_same_dtypes(op, (tangents, operand))
    check_dtype(op, operand, SCATTER_DTYPES)
    if tangents.shape != operand.shape:
        raise ShapeError(f"{op}: tangents {describe(tangents)} must have the shape of operand {describe(operand)}")
    shape = window_shape(op, operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return ShapedArray(shape, tangents.dtype, tangents.weak_type)


select_and_gather_add_p.abstract_eval = _select_and_gather_add_rule


# --- differentiation rules ------------------------------------------------------------------
# conv_general_dilated is bilinear: d conv(l, r) = conv(dl, r) + conv(l, dr); its transposes are
# convolutions of the cotangent with the other operand (JAX's _conv_general_dilated_transpose_lhs
# and _rhs): in the lhs one the kernel is flipped and strides and lhs dilation trade places; in
# the rhs one the cotangent is the kernel and strides and rhs dilation trade places. Feature and
# batch groups trade places between the two. reduce_window_sum is linear (a convolution with a
# window of ones); max/min pooling's tangent is the tangent at each window's chosen element
# (select_and_gather_add), whose transpose is select_and_scatter_add and vice versa.

from ember.core.ad import Zero, defjvp, deflinear, instantiate, is_undefined


def _p(name: str) -> Primitive:
    from ember.core.primitive import PRIMITIVES

    return PRIMITIVES[name]


def _to_dtype(x, dtype):
    if x.dtype == dtype:
        return x
    return _p("convert_element_type").bind(x, new_dtype=dtype, weak_type=False)


def _dilate_shape(shape, dilation) -> tuple[int, ...]:
    return tuple(dilate_dim(s, d) for s, d in zip(shape, dilation))


def _spec_transpose(spec) -> tuple[int, ...]:
    """Swap a spec's first two entries (batch <-> feature, out-feature <-> in-feature)."""
    return (spec[1], spec[0], *spec[2:])


def _split_axis(x, axis: int, outer: int):
    """Reshape `x`'s `axis` of size outer * inner into two axes (outer, inner) at axis, axis + 1."""
    shape = list(x.shape)
    shape[axis : axis + 1] = [outer, shape[axis] // outer]
    return _p("reshape").bind(x, new_sizes=tuple(shape), dimensions=None)


def _merge_axis(x, src: int, dst: int):
    """Fold axis `src` into axis `dst` (numbered with `src` removed), `src` as the major part."""
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    if perm != list(range(x.ndim)):
        x = _p("transpose").bind(x, permutation=tuple(perm))
    shape = list(x.shape)
    shape[dst : dst + 2] = [shape[dst] * shape[dst + 1]]
    return _p("reshape").bind(x, new_sizes=tuple(shape), dimensions=None)


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation):
    """Padding of the lhs transpose's convolution: it slides the flipped window over the
    stride-dilated cotangent so that every lhs element (lhs-dilation apart) gets one output."""
    lhs_dilated = _dilate_shape(in_shape, lhs_dilation)
    rhs_dilated = _dilate_shape(window, rhs_dilation)
    out_dilated = _dilate_shape(out_shape, strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
    after = [lhs + r - 1 - o - b for lhs, r, o, b in zip(lhs_dilated, rhs_dilated, out_dilated, before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation, rhs_dilation):
    """Padding of the rhs transpose's convolution: the stride-dilated cotangent is the window."""
    lhs_dilated = _dilate_shape(in_shape, lhs_dilation)
    rhs_dilated = _dilate_shape(window, rhs_dilation)
    out_dilated = _dilate_shape(out_shape, strides)
    return tuple((lo, o - lhs + r - lo - 1) for lhs, r, o, (lo, _) in zip(lhs_dilated, rhs_dilated, out_dilated, padding))


def _take(shape, dims) -> tuple[int, ...]:
    return tuple(shape[d] for d in dims)


def _conv_transpose_lhs(ct, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                        feature_group_count, batch_group_count, precision):  # fmt: skip
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = max(feature_group_count, batch_group_count)
    window = _take(rhs.shape, rhs_spec[2:])
    if groups > 1:
        # The kernel's out features are (group, O / groups): the group joins its in features, so
        # the transposed kernel maps O / groups features to groups * I per group.
        rhs = _merge_axis(_split_axis(rhs, rhs_spec[0], groups), rhs_spec[0], rhs_spec[1])
    pads = _vjp_lhs_padding(_take(lhs_aval.shape, lhs_spec[2:]), window, window_strides,
                            _take(ct.shape, out_spec[2:]), padding, lhs_dilation, rhs_dilation)  # fmt: skip
    flipped = _p("rev").bind(rhs, dimensions=tuple(rhs_spec[2:]))
    out = conv_general_dilated_p.bind(
        ct, flipped, window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision, preferred_element_type=None,
    )
    if batch_group_count > 1:  # the output's features are (group, I): the group goes back to the batch
        out = _merge_axis(_split_axis(out, lhs_spec[1], batch_group_count), lhs_spec[1], lhs_spec[0])
    return out


def _conv_transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                        feature_group_count, batch_group_count, precision):  # fmt: skip
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pads = _vjp_rhs_padding(_take(lhs.shape, lhs_spec[2:]), _take(rhs_aval.shape, rhs_spec[2:]), window_strides,
                            _take(ct.shape, out_spec[2:]), padding, lhs_dilation, rhs_dilation)  # fmt: skip
    # lhs's features become the batch and its batch the contracted features; the groups swap kinds
    return conv_general_dilated_p.bind(
        lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
        dimension_numbers=ConvDimensionNumbers(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                                               _spec_transpose(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count, precision=precision,
        preferred_element_type=None,
    )  # fmt: skip


def _conv_transpose(ct, lhs, rhs, *, preferred_element_type=None, **params):
    # A cotangent in preferred_element_type goes back to the operands' dtype first (as dot_general's).
    if 0 in ct.shape:  # nothing flows back (and no degenerate convolution with an empty window)
        return [Zero(lhs.aval) if is_undefined(lhs) else None, Zero(rhs.aval) if is_undefined(rhs) else None]
    ct_lhs = ct_rhs = None
    if is_undefined(lhs):  # an empty operand's cotangent is empty (and its convolution may be degenerate)
        ct_lhs = Zero(lhs.aval) if _empty(lhs.aval) else _to_dtype(
            _conv_transpose_lhs(_to_dtype(ct, rhs.dtype), lhs.aval, rhs, **params), lhs.aval.dtype)
    if is_undefined(rhs):
        ct_rhs = Zero(rhs.aval) if _empty(rhs.aval) else _to_dtype(
            _conv_transpose_rhs(_to_dtype(ct, lhs.dtype), lhs, rhs.aval, **params), rhs.aval.dtype)
    return [ct_lhs, ct_rhs]


def _empty(aval: ShapedArray) -> bool:
    return 0 in aval.shape


defjvp(conv_general_dilated_p,
       lambda t, ans, lhs, rhs, **params: conv_general_dilated_p.bind(t, rhs, **params),
       lambda t, ans, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, t, **params))  # fmt: skip
conv_general_dilated_p.transpose = _conv_transpose


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    # reduce_window_sum is a convolution with a window of ones (symmetric: no flip needed); its
    # transpose sums windows of the stride-dilated, padded cotangent, stepping by base_dilation.
    shape = x.aval.shape
    if _empty(x.aval):  # nothing to send back to (and the transposed windows would not fit)
        return [Zero(x.aval)]
    pads = _vjp_lhs_padding(shape, window_dimensions, window_strides, ct.shape, padding, base_dilation, window_dilation)
    zero = _zero_scalar(ct)
    padded = _p("pad").bind(ct, zero, padding_config=tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)))
    out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions, window_strides=base_dilation,
                                   padding=((0, 0),) * len(shape), base_dilation=(1,) * len(shape),
                                   window_dilation=window_dilation)  # fmt: skip
    return [out]


def _zero_scalar(x):
    import numpy as np

    from ember.core.array import wrap

    return wrap(np.zeros((), x.dtype), x.weak_type)


deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(prim: Primitive, select_prim: str):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, **params)
        if type(t) is Zero:
            return ans, Zero(ans.aval)
        return ans, select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)

    return jvp


reduce_window_max_p.jvp = _chooser_jvp(reduce_window_max_p, "ge")
reduce_window_min_p.jvp = _chooser_jvp(reduce_window_min_p, "le")


def _linear_in_first(prim: Primitive):
    """jvp of select_and_{scatter,gather}_add: linear in the first operand, piecewise constant in
    the operand (its choice does not move under small perturbations)."""

    def jvp(primals, tangents, **params):
        (source, operand), (t, _) = primals, tangents
        ans = prim.bind(source, operand, **params)
        if type(t) is Zero:
            return ans, Zero(ans.aval)
        return ans, prim.bind(t, operand, **params)

    return jvp


def _transpose_to(other: Primitive):
    def transpose(ct, source, operand, **params):
        assert is_undefined(source) and not is_undefined(operand), "select_and_*_add is linear in its first operand only"
        return [other.bind(instantiate(ct), operand, **params), None]

    return transpose


select_and_scatter_add_p.jvp = _linear_in_first(select_and_scatter_add_p)
select_and_scatter_add_p.transpose = _transpose_to(select_and_gather_add_p)
select_and_gather_add_p.jvp = _linear_in_first(select_and_gather_add_p)
select_and_gather_add_p.transpose = _transpose_to(select_and_scatter_add_p)


# --- batching rules ---------------------------------------------------------------------------
# conv_general_dilated (as JAX's _conv_general_dilated_batch_rule): the vmap axis is folded into
# one of the convolution's own dimensions, and split back out of the result.
#   lhs batched only: into the lhs batch dimension, so the output batch is (vmap, N). With batch
#     groups, the lhs batch is (group, N / groups) and the vmap axis goes inside the group:
#     (group, vmap, N / groups), giving an output batch of (vmap, N / groups).
#   rhs batched only (per-example kernels): into the kernel's out features, so the output features
#     are (vmap, O); with feature or batch groups, inside the group: (group, vmap, O / groups), and
#     the output features (group, vmap, O / groups) are reordered to (vmap, O).
#   both batched: every example becomes a group of its own. Without batch groups the vmap axis goes
#     into the lhs features and the kernel's out features (feature_group_count *= size); with them,
#     into the lhs batch and the kernel's out features (batch_group_count *= size). The output
#     features are (vmap, O).
# The windowed reductions and select_and_{scatter,gather}_add: the vmap axis is one more window
# dimension of size 1 (stride 1, no padding, no dilation) where it already is.

from ember.core.batching import move_axis, not_mapped


def _merge_run(x, start: int, count: int):
    """Reshape `count` adjacent axes of `x` from `start` on into one."""
    shape = list(x.shape)
    merged = 1
    for s in shape[start : start + count]:
        merged *= s
    shape[start : start + count] = [merged]
    return _p("reshape").bind(x, new_sizes=tuple(shape), dimensions=None)


def _fold_in(x, bdim: int, axis: int, groups: int = 1):
    """`x` without its batch axis (at `bdim`), which is folded into `axis` (numbered without the
    batch axis): that axis of size S becomes one of size groups * B * (S / groups), laid out as
    (group, batch, S / groups), i.e. (batch, S) when groups == 1."""
    if groups == 1:
        return _merge_axis(x, bdim, axis)
    x = _split_axis(move_axis(x, bdim, 0), axis + 1, groups)  # (B, ..., group, S / groups, ...)
    x = move_axis(x, 0, axis + 1)  # (..., group, B, S / groups, ...)
    return _merge_run(x, axis, 3)


def _fold_out(out, axis: int, size: int, groups: int = 1):
    """The inverse of `_fold_in` on a result: `axis`, laid out as (group, batch, rest), becomes a
    batch axis at `axis` followed by the (group, rest) axis. Returns (out, batch axis)."""
    if groups == 1:
        return _split_axis(out, axis, size), axis
    shape = list(out.shape)
    shape[axis : axis + 1] = [groups, size, shape[axis] // (groups * size)]
    out = move_axis(_p("reshape").bind(out, new_sizes=tuple(shape), dimensions=None), axis + 1, axis)
    return _merge_run(out, axis + 1, 2), axis


def _unbatched_aval(x, bdim):
    aval = x.aval
    if bdim is not_mapped:
        return aval
    return ShapedArray(aval.shape[:bdim] + aval.shape[bdim + 1 :], aval.dtype, aval.weak_type)


def _conv_batch(size, args, dims, *, dimension_numbers, feature_group_count=1, batch_group_count=1, **params):
    (lhs, rhs), (dl, dr) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fgc, bgc = feature_group_count, batch_group_count

    def conv(new_lhs, new_rhs, fgc, bgc):
        return conv_general_dilated_p.bind(new_lhs, new_rhs, dimension_numbers=dimension_numbers,
                                           feature_group_count=fgc, batch_group_count=bgc, **params)  # fmt: skip

    if size == 0:  # no examples: nothing to fold (a group count of 0 is no convolution), only a shape
        aval = _conv_rule(_unbatched_aval(lhs, dl), _unbatched_aval(rhs, dr), dimension_numbers=dimension_numbers,
                          feature_group_count=fgc, batch_group_count=bgc, **params)  # fmt: skip
        zero = _zero_scalar(ShapedArray((), aval.dtype, aval.weak_type))
        return _p("broadcast_in_dim").bind(zero, shape=(0, *aval.shape), broadcast_dimensions=()), 0
    if dl is not not_mapped and dr is not not_mapped:
        new_rhs = _fold_in(rhs, dr, rhs_spec[0])  # out features (example, O)
        if bgc > 1:  # lhs batch (example, group, N / groups): example-major batch groups
            out = conv(_fold_in(lhs, dl, lhs_spec[0]), new_rhs, fgc, bgc * size)
        else:  # lhs features (example, group, I): example-major feature groups
            out = conv(_fold_in(lhs, dl, lhs_spec[1]), new_rhs, fgc * size, bgc)
        return _fold_out(out, out_spec[1], size)
    if dl is not not_mapped:
        out = conv(_fold_in(lhs, dl, lhs_spec[0], bgc), rhs, fgc, bgc)
        return _fold_out(out, out_spec[0], size)
    groups = max(fgc, bgc)
    out = conv(lhs, _fold_in(rhs, dr, rhs_spec[0], groups), fgc, bgc)
    return _fold_out(out, out_spec[1], size, groups)


conv_general_dilated_p.batch = _conv_batch


def _unit_window(at: int, window_dimensions, window_strides, padding, base_dilation, window_dilation) -> dict:
    """Window parameters with a window dimension of size 1 (stride 1, no padding or dilation)
    inserted at position `at`: the batch axis, each example reduced on its own."""

    def insert(values, unit):
        values = list(values)
        values.insert(at, unit)
        return tuple(values)

    return {"window_dimensions": insert(window_dimensions, 1), "window_strides": insert(window_strides, 1),
            "padding": insert((tuple(p) for p in padding), (0, 0)), "base_dilation": insert(base_dilation, 1),
            "window_dilation": insert(window_dilation, 1)}  # fmt: skip


def _window_reducer_batch(prim: Primitive):
    def batch(size, args, dims, **params):
        (x,), (d,) = args, dims
        return prim.bind(x, **_unit_window(d, **params)), d

    prim.batch = batch


def _to_axis(x, bdim, at: int, size: int):
    """`x` with its batch axis at `at`; an unbatched `x` is broadcast along a new axis there."""
    if bdim is not_mapped:
        shape = list(x.shape)
        shape.insert(at, size)
        kept = tuple(i for i in range(x.ndim + 1) if i != at)
        return _p("broadcast_in_dim").bind(x, shape=tuple(shape), broadcast_dimensions=kept)
    return move_axis(x, bdim, at)


def _selection_batch(prim: Primitive):
    # Both operands need the batch axis (the first one's shape is fixed by the operand's): an
    # unbatched one is broadcast where the other has it. With a batched operand every example
    # chooses on its own; with an unbatched one the examples share the choice, but the primitive
    # has no way to take it once for all, so the operand is broadcast (a view in the NumPy backend).
    def batch(size, args, dims, *, select_prim, **params):
        (first, operand), (df, do) = args, dims
        at = do if do is not not_mapped else df
        first, operand = _to_axis(first, df, at, size), _to_axis(operand, do, at, size)
        return prim.bind(first, operand, select_prim=select_prim, **_unit_window(at, **params)), at

    prim.batch = batch


for _prim in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _window_reducer_batch(_prim)
for _prim in (select_and_scatter_add_p, select_and_gather_add_p):
    _selection_batch(_prim)
