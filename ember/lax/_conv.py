"""lax's convolutions and windowed reductions (jax.lax names and semantics).

The wrappers turn JAX's friendly forms into the primitives' normalised
parameters: padding strings ("SAME", "SAME_LOWER", "VALID") into (low, high)
pairs, dimension-number strings ("NCHW", "OIHW", "NCHW") into permutations,
and `reduce_window`'s (computation, init value) into the matching primitive.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

import numpy as np

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitive import Tracer
from ember.core.primitives import conv as cv
from ember.core.primitives.conv import ConvDimensionNumbers, dilate_dim
from ember.errors import InvalidArgumentError, ShapeError
from ember.lax import _elementwise as ew
from ember.lax import _structural as st
from ember.lax._convert import operands

__all__ = [
    "ConvDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_transpose",
    "conv_with_general_padding",
    "reduce_window",
]  # fmt: skip

ArrayLike = Array | float | int | bool | complex
Padding = str | Sequence[tuple[int, int]]
DimensionNumbers = ConvDimensionNumbers | tuple[str, str, str] | None


def _ints(op: str, name: str, values, count: int, per: str = "spatial dimension") -> tuple[int, ...]:
    try:
        out = tuple(operator.index(v) for v in values)
    except TypeError:
        raise InvalidArgumentError(f"{op}: {name} must be a sequence of ints, got {values!r}") from None
    if len(out) != count:
        raise InvalidArgumentError(f"{op}: {name}={out} has {len(out)} entries; expected {count}, one per {per}")
    return out


def _padtype_to_pads(op: str, in_shape, window_shape, window_strides, padding: str) -> tuple[tuple[int, int], ...]:
    """(low, high) pairs for a padding name, as JAX's padtype_to_pads.

    SAME / SAME_LOWER: out = ceil(in / stride), padded so that the windows fit; an odd total
    puts the extra element at the end (SAME) or the start (SAME_LOWER). VALID: no padding.
    """
    kind = padding.upper()
    if kind == "VALID":
        return ((0, 0),) * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise InvalidArgumentError(f"{op}: unknown padding {padding!r}; use 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs")
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        out = -(-size // stride)
        total = max((out - 1) * stride + window - size, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return tuple(pads)


# --- dimension numbers -------------------------------------------------------------------


def _conv_general_permutations(op: str, specs: Sequence[str]) -> ConvDimensionNumbers:
    lhs_spec, rhs_spec, out_spec = specs
    for i, (spec, (a, b)) in enumerate(zip(specs, (("N", "C"), ("O", "I"), ("N", "C")))):
        if spec.count(a) != 1 or spec.count(b) != 1:
            raise InvalidArgumentError(
                f"{op}: dimension_numbers[{i}]={spec!r} must contain {a!r} and {b!r} exactly once "
                f"(e.g. ('NCHW', 'OIHW', 'NCHW') or ('NHWC', 'HWIO', 'NHWC'))"
            )
        if len(set(spec)) != len(spec):
            raise InvalidArgumentError(f"{op}: dimension_numbers[{i}]={spec!r} repeats a character")
    spatial = [set(s) - set(pair) for s, pair in zip(specs, ("NC", "OI", "NC"))]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise InvalidArgumentError(
            f"{op}: the three dimension_numbers strings {tuple(specs)} must name the same spatial dimensions "
            f"(got {[''.join(sorted(s)) for s in spatial]})"
        )

    def perm(spec: str, pair: str) -> tuple[int, ...]:
        # Spatial dimensions are ordered as in rhs_spec (so window_strides[0] is rhs's first).
        order = [c for c in rhs_spec if c not in "OI"]
        return (spec.index(pair[0]), spec.index(pair[1]), *(spec.index(c) for c in order))

    return ConvDimensionNumbers(perm(lhs_spec, "NC"), perm(rhs_spec, "OI"), perm(out_spec, "NC"))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: DimensionNumbers) -> ConvDimensionNumbers:  # fmt: skip
    """Normalise convolution dimension numbers to a `ConvDimensionNumbers` of permutations.

    Args:
      lhs_shape, rhs_shape: the input and kernel shapes (of equal rank n + 2).
      dimension_numbers: None (``NCHW``/``OIHW``/``NCHW``-style: batch or out-feature first,
        feature second, spatial last), a `ConvDimensionNumbers`, or three strings such as
        ``("NHWC", "HWIO", "NHWC")``: 'N' batch, 'C' feature, 'O'/'I' kernel out/in feature, any
        other letters spatial dimensions, matched by letter and ordered as in the kernel's string.

    Returns:
      A `ConvDimensionNumbers`, each spec (batch/out-feature, feature/in-feature, spatial...).

    >>> lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    op = "conv_dimension_numbers"
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise ShapeError(f"convolution: lhs and rhs must have the same rank, got shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)) or len(dimension_numbers) != 3:
        raise InvalidArgumentError(f"{op}: dimension_numbers must be None, a ConvDimensionNumbers or three strings, got {dimension_numbers!r}")
    if all(isinstance(s, str) for s in dimension_numbers):
        for i, spec in enumerate(dimension_numbers):
            if len(spec) != len(lhs_shape):
                raise InvalidArgumentError(
                    f"{op}: dimension_numbers[{i}]={spec!r} has {len(spec)} characters, but the operands have rank "
                    f"{len(lhs_shape)} (lhs shape {tuple(lhs_shape)}, rhs shape {tuple(rhs_shape)})"
                )
        return _conv_general_permutations(op, dimension_numbers)
    return cv.check_dimension_numbers(op, dimension_numbers, len(lhs_shape))


# --- convolution ---------------------------------------------------------------------------


def conv_general_dilated(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int], padding: Padding,
                         lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: DimensionNumbers = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision=None, preferred_element_type=None) -> Array:  # fmt: skip
    """General n-d convolution with strides, padding, input/kernel dilation and groups (XLA's ConvGeneralDilated).

    Args:
      lhs: the input, rank n + 2; (batch, features, spatial...) under the default dimension numbers.
      rhs: the kernel, rank n + 2; (out features, in features, spatial...) by default.
      window_strides: n strides.
      padding: 'SAME', 'SAME_LOWER', 'VALID', or n (low, high) pairs (negative values crop).
      lhs_dilation: n input dilations (transposed convolution); None means 1s. Padding strings
        need lhs_dilation of 1s (use conv_transpose otherwise).
      rhs_dilation: n kernel dilations (atrous convolution); None means 1s.
      dimension_numbers: None, a ConvDimensionNumbers, or strings such as ("NHWC", "HWIO", "NHWC").
      feature_group_count: split input features into groups, each with its own kernels
        (depthwise convolution: as many groups as features).
      batch_group_count: split the batch into groups, each with its own out features.
      precision: accepted for JAX compatibility; NumPy computes at full precision.
      preferred_element_type: accumulate and return in this dtype.

    Returns:
      The convolution, laid out as dimension_numbers' out_spec says.

    Raises:
      ShapeError: where the dilated window is wider than the padded (and dilated) input along a
        spatial dimension. This differs from JAX on purpose: JAX returns an empty result (that
        dimension of size 0), which hides a misconfigured layer until a later shape error or a
        silently empty loss; ember says which dimension and how much padding is missing.

    >>> x, w = enp.ones((1, 1, 4, 4)), enp.ones((2, 1, 3, 3))
    >>> lax.conv_general_dilated(x, w, (1, 1), "SAME").shape
    (1, 2, 4, 4)
    """
    op = "conv_general_dilated"
    lhs, rhs = operands(op, (lhs, rhs))
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    n = lhs.ndim - 2
    strides = _ints(op, "window_strides", window_strides, n)
    lhs_dilation = (1,) * n if lhs_dilation is None else _ints(op, "lhs_dilation", lhs_dilation, n)
    rhs_dilation = (1,) * n if rhs_dilation is None else _ints(op, "rhs_dilation", rhs_dilation, n)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise InvalidArgumentError(
                f"{op}: padding={padding!r} is not defined with lhs_dilation={lhs_dilation}; give (low, high) pairs "
                "or use lax.conv_transpose"
            )
        window = [dilate_dim(rhs.shape[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dilation)]
        padding = _padtype_to_pads(op, [lhs.shape[d] for d in dnums.lhs_spec[2:]], window, strides, padding)
    else:
        padding = cv._pairs(op, padding, n, f"{n} spatial dimension(s)")
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type, op)
    return cv.conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
        dimension_numbers=dnums, feature_group_count=feature_group_count, batch_group_count=batch_group_count,
        precision=precision, preferred_element_type=pet,
    )


def conv(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int], padding: Padding, precision=None,
         preferred_element_type=None) -> Array:  # fmt: skip
    """Convolution of an NCHW-style input with an OIHW-style kernel (`conv_general_dilated` defaults).

    Args:
      lhs: (batch, in features, spatial...). rhs: (out features, in features, window...).
      window_strides: n strides. padding: 'SAME', 'VALID' or n (low, high) pairs.

    Returns:
      (batch, out features, out spatial...).

    >>> lax.conv(enp.ones((2, 3, 8, 8)), enp.ones((4, 3, 3, 3)), (2, 2), "VALID").shape
    (2, 4, 3, 3)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)  # fmt: skip


def conv_with_general_padding(lhs: ArrayLike, rhs: ArrayLike, window_strides: Sequence[int], padding: Padding,
                              lhs_dilation: Sequence[int] | None, rhs_dilation: Sequence[int] | None,
                              precision=None, preferred_element_type=None) -> Array:  # fmt: skip
    """`conv` with input (lhs) and kernel (rhs) dilation.

    >>> lax.conv_with_general_padding(enp.ones((1, 1, 5)), enp.ones((1, 1, 2)), (1,), [(1, 1)], (2,), (2,)).shape
    (1, 1, 9)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                                precision=precision, preferred_element_type=preferred_element_type)  # fmt: skip


def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    # The padding of the stride-s input-dilated convolution that undoes a forward conv's shape.
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else math.ceil(total / 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    else:  # the forward convolution's explicit (low, high)
        pads = (k - padding[0] - 1, k - padding[1] - 1)
        lo, total = pads[0], sum(pads)
    return lo, total - lo


_TRANSPOSE_DEFAULTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                       5: ("NHWDC", "HWDIO", "NHWDC")}  # fmt: skip


def conv_transpose(lhs: ArrayLike, rhs: ArrayLike, strides: Sequence[int], padding: Padding,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: DimensionNumbers = None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False) -> Array:  # fmt: skip
    """Transposed ("fractionally strided") convolution: a convolution of the stride-dilated input.

    Args:
      lhs, rhs: input and kernel; dimension_numbers default to TensorFlow's channels-last
        ("NHWC", "HWIO", "NHWC") for 2-d (and its 1-d/3-d analogues).
      strides: the fractional strides (the input is dilated by them).
      padding: 'SAME' or 'VALID' (the forward convolution's padding), or (low, high) pairs,
        used as given unless use_consistent_padding (then they are the forward convolution's
        pairs, as in PyTorch).
      rhs_dilation: kernel dilation. transpose_kernel: flip the window and swap the kernel's
        in/out features, which makes this the gradient of `conv_general_dilated` (Keras's
        Conv2DTranspose).

    Returns:
      The transposed convolution.

    >>> lax.conv_transpose(enp.ones((1, 4, 4, 2)), enp.ones((3, 3, 2, 5)), (2, 2), "SAME").shape
    (1, 8, 8, 5)
    """
    op = "conv_transpose"
    lhs, rhs = operands(op, (lhs, rhs))
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ShapeError(f"{op}: lhs and rhs must have the same rank, at least 2, got shapes {lhs.shape} and {rhs.shape}")
    if dimension_numbers is None:
        if lhs.ndim not in _TRANSPOSE_DEFAULTS:
            raise InvalidArgumentError(f"{op}: no default dimension_numbers for rank {lhs.ndim}; pass dimension_numbers")
        dimension_numbers = _TRANSPOSE_DEFAULTS[lhs.ndim]
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    n = lhs.ndim - 2
    strides = _ints(op, "strides", strides, n)
    rhs_dilation = (1,) * n if rhs_dilation is None else _ints(op, "rhs_dilation", rhs_dilation, n)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        window = [dilate_dim(rhs.shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dilation)]
        per_dim = [padding] * n if isinstance(padding, str) else cv._pairs(op, padding, n, f"{n} spatial dimension(s)")
        padding = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(window, strides, per_dim))
    if transpose_kernel:
        rhs = st.rev(rhs, dn.rhs_spec[2:])
        perm = list(range(rhs.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = st.transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * n, padding, strides, rhs_dilation, dn, precision=precision,
                                preferred_element_type=preferred_element_type)  # fmt: skip


# --- windowed reductions ---------------------------------------------------------------------

_MONOIDS = {"add": "sum", "sum": "sum", "max": "max", "min": "min"}
_PRIMITIVES = {"sum": cv.reduce_window_sum_p, "max": cv.reduce_window_max_p, "min": cv.reduce_window_min_p}
_COMBINE = {"sum": ew.add, "max": ew.max, "min": ew.min}


def _monoid(computation) -> str:
    if isinstance(computation, str) and computation in _MONOIDS:
        return _MONOIDS[computation]
    for kind, fn in _COMBINE.items():
        if computation is fn or computation is getattr(fn, "__wrapped__", fn):  # (lax.add is its fast lane)
            return kind
    raise InvalidArgumentError(
        f"reduce_window: computation {computation!r} is not supported; use lax.add, lax.max or lax.min "
        "(or the names 'add', 'max', 'min')"
    )


def _identity_of(kind: str, dtype: np.dtype):
    if kind == "sum":
        return 0
    if dtype == dtypes.bool_:
        return kind == "min"
    if dtypes.is_integer(dtype):
        info = np.iinfo(dtype)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


def _is_identity(init, kind: str, dtype: np.dtype) -> bool:
    if isinstance(init, Tracer):
        return False
    value = np.asarray(init._value if isinstance(init, Array) else init)
    return value.shape == () and value.item() == _identity_of(kind, dtype)


def _window_params(op: str, x: Array, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    n = x.ndim
    dims = _ints(op, "window_dimensions", window_dimensions, n, "operand dimension")
    strides = _ints(op, "window_strides", window_strides, n, "operand dimension")
    base = (1,) * n if base_dilation is None else _ints(op, "base_dilation", base_dilation, n, "operand dimension")
    wdil = (1,) * n if window_dilation is None else _ints(op, "window_dilation", window_dilation, n, "operand dimension")
    if isinstance(padding, str):
        padding = _padtype_to_pads(op, x.shape, [dilate_dim(d, r) for d, r in zip(dims, wdil)], strides, padding)
    else:
        padding = cv._pairs(op, padding, n, f"operand of rank {n}")
    return dict(window_dimensions=dims, window_strides=strides, padding=padding, base_dilation=base, window_dilation=wdil)


def reduce_window(operand: ArrayLike, init_value: ArrayLike, computation: Callable | str,
                  window_dimensions: Sequence[int], window_strides: Sequence[int], padding: Padding,
                  base_dilation: Sequence[int] | None = None, window_dilation: Sequence[int] | None = None) -> Array:  # fmt: skip
    """Reduce every window of `operand` with `computation`, starting from `init_value` (XLA's ReduceWindow).

    Pooling: ``reduce_window(x, -inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")`` is a 2x2 max-pool
    of an NCHW array; with lax.add and 0 it sums windows (divide for an average pool).

    Args:
      operand: the array.
      init_value: a scalar; padding elements take this value, and each window starts from it.
      computation: lax.add, lax.max or lax.min (or 'add', 'max', 'min').
      window_dimensions, window_strides: one per operand dimension.
      padding: 'SAME', 'SAME_LOWER', 'VALID', or (low, high) pairs.
      base_dilation: dilate the operand (holes hold init_value); window_dilation: dilate the window.

    Returns:
      One reduced value per window position.

    >>> lax.reduce_window(enp.arange(6.0), 0.0, lax.add, (3,), (1,), "VALID")
    Array([ 3.,  6.,  9., 12.], dtype=float32)
    """
    op = "reduce_window"
    kind = _monoid(computation)
    x, init = operands(op, (operand, init_value))
    if init.ndim:
        raise ShapeError(f"{op}: init_value must be a scalar, got shape {init.shape}")
    if init.dtype != x.dtype:
        raise dtypes.DTypeError(f"{op}: init_value has dtype {init.dtype} but the operand has {x.dtype}; they must match")
    params = _window_params(op, x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    prim = _PRIMITIVES[kind]
    if _is_identity(init_value, kind, x.dtype):
        return prim.bind(x, **params)
    # Any other init value: it fills the padding and holes, and joins every window once.
    n = x.ndim
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(params["padding"], params["base_dilation"])]
    padded = st.pad(x, init, config)
    out = prim.bind(padded, window_dimensions=params["window_dimensions"], window_strides=params["window_strides"],
                    padding=((0, 0),) * n, base_dilation=(1,) * n, window_dilation=params["window_dilation"])  # fmt: skip
    return _COMBINE[kind](out, init)


def _select_and_scatter_add(source: ArrayLike, operand: ArrayLike, select_prim: str, window_dimensions: Sequence[int],
                            window_strides: Sequence[int], padding: Padding, base_dilation: Sequence[int] | None = None,
                            window_dilation: Sequence[int] | None = None) -> Array:  # fmt: skip
    """Scatter-add `source` (one value per window) to each window's first max ('ge') or min ('le') of `operand`.

    The transpose of max/min pooling's window choice (private, as in JAX; reduce_window_max's
    vjp uses it).

    >>> x = enp.asarray([1.0, 3.0, 2.0, 0.0])
    >>> lax._conv._select_and_scatter_add(enp.asarray([10.0, 20.0]), x, "ge", (2,), (2,), "VALID")
    Array([ 0., 10., 20.,  0.], dtype=float32)
    """
    op = "select_and_scatter_add"
    source, x = operands(op, (source, operand))
    params = _window_params(op, x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return cv.select_and_scatter_add_p.bind(source, x, select_prim=select_prim, **params)


def _select_and_gather_add(tangents: ArrayLike, operand: ArrayLike, select_prim: str, window_dimensions: Sequence[int],
                           window_strides: Sequence[int], padding: Padding, base_dilation: Sequence[int] | None = None,
                           window_dilation: Sequence[int] | None = None) -> Array:  # fmt: skip
    """For each window, `tangents` at the window's first max ('ge') or min ('le') of `operand` (0 for a
    window of padding only): max/min pooling's tangent and the transpose of `_select_and_scatter_add`
    (private, as in JAX).

    >>> x = enp.asarray([1.0, 3.0, 2.0, 0.0])
    >>> lax._conv._select_and_gather_add(enp.asarray([10.0, 20.0, 30.0, 40.0]), x, "ge", (2,), (2,), "VALID")
    Array([20., 30.], dtype=float32)
    """
    op = "select_and_gather_add"
    tangents, x = operands(op, (tangents, operand))
    params = _window_params(op, x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return cv.select_and_gather_add_p.bind(tangents, x, select_prim=select_prim, **params)
