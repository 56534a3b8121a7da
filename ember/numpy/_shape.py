"""Shape and layout functions of ember.numpy."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember._traceback import filter_error
from ember.core.array import Array, wrap
from ember.core.primitives import elementwise as ew
from ember.core.primitives._rules import broadcast_shapes as _broadcast_shapes
from ember.core.primitives._rules import normalize_axis
from ember.errors import InvalidArgumentError, ShapeError
from ember.numpy._core import ArrayLike, asarray, canonical_axes, promote_args


def shape(a: ArrayLike) -> tuple[int, ...]:
    """The shape of `a`.

    >>> enp.shape([[1, 2, 3]])
    (1, 3)
    """
    return asarray(a).shape


def ndim(a: ArrayLike) -> int:
    """The number of dimensions of `a`.

    >>> enp.ndim([[1, 2]])
    2
    """
    return asarray(a).ndim


def size(a: ArrayLike, axis: int | None = None) -> int:
    """The number of elements (along `axis`, if given).

    >>> enp.size([[1, 2, 3]])
    3
    """
    x = asarray(a)
    return x.size if axis is None else x.shape[normalize_axis("size", axis, x.ndim)]


def reshape(a: ArrayLike, shape: int | Sequence[int] = None, order: str = "C", *, newshape=None,
            copy: bool | None = None) -> Array:  # fmt: skip
    """Give `a` a new shape with the same number of elements; one dimension may be -1.

    `copy` is the array API's: True returns a new array; None and False never copy (ember arrays are immutable,
    so a reshaped view is as good as a copy).

    >>> enp.reshape(enp.arange(6), (2, -1)).shape
    (2, 3)
    """
    if copy:
        return ew.copy_p.bind(reshape(a, shape, order, newshape=newshape))
    if shape is None:
        shape = newshape
    if (type(a) is Array and type(a._value) is np.ndarray and not a._place.committed and order == "C"
            and type(shape) is tuple):
        # Fast lane for a concrete CPU array: NumPy's reshape is a view; ember's checks explain failures.
        try:
            out = a._value.reshape(shape) if all(type(d) is int and d >= -1 for d in shape) else None
        except ValueError:
            out = None
        if out is not None:
            return wrap(out, a._weak, a._place)
    x = asarray(a)
    if order not in ("C", "F"):
        raise InvalidArgumentError(f"reshape: order must be 'C' or 'F', got {order!r}")
    new = _resolve_shape(x, (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    if order == "F":
        return lax.transpose(lax.reshape(lax.transpose(x, tuple(reversed(range(x.ndim)))), tuple(reversed(new))),
                             tuple(reversed(range(len(new)))))  # fmt: skip
    return lax.reshape(x, new)


def _resolve_shape(x: Array, new: tuple[int, ...]) -> tuple[int, ...]:
    new = tuple(int(d) for d in new)
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in new):
        raise ShapeError(f"reshape: invalid target shape {new} (at most one -1, no other negatives)")
    if unknown:
        known = math.prod(d for d in new if d != -1)
        if known == 0 or x.size % known:
            raise ShapeError(f"reshape: cannot reshape array of shape {x.shape} ({x.size} elements) into shape {new}")
        new = tuple(x.size // known if d == -1 else d for d in new)
    if math.prod(new) != x.size:
        raise ShapeError(f"reshape: cannot reshape array of shape {x.shape} ({x.size} elements) into shape {new}")
    return new


def ravel(a: ArrayLike, order: str = "C") -> Array:
    """A 1-d array of all elements of `a`.

    >>> enp.ravel([[1, 2], [3, 4]])
    Array([1, 2, 3, 4], dtype=int32)
    """
    return reshape(a, (-1,), order)


def transpose(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """Permute the axes of `a` (reverse them when `axes` is None).

    >>> enp.transpose(enp.zeros((2, 3))).shape
    (3, 2)
    """
    x = asarray(a)
    if axes is None:
        return lax.transpose(x, tuple(reversed(range(x.ndim))))
    axes = [normalize_axis("transpose", int(ax), x.ndim) for ax in axes]
    if sorted(axes) != list(range(x.ndim)):
        raise InvalidArgumentError(f"transpose: axes {tuple(axes)} are not a permutation of the {x.ndim} axes of shape {x.shape}")
    return lax.transpose(x, axes)


def permute_dims(a: ArrayLike, /, axes: Sequence[int]) -> Array:
    """Array API name for `transpose` with explicit axes.

    >>> enp.permute_dims(enp.zeros((2, 3)), (1, 0)).shape
    (3, 2)
    """
    return transpose(a, axes)


def matrix_transpose(x: ArrayLike, /) -> Array:
    """Swap the last two axes.

    >>> enp.matrix_transpose(enp.zeros((4, 2, 3))).shape
    (4, 3, 2)
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose: needs at least 2 dimensions, got shape {x.shape}")
    return swapaxes(x, -1, -2)


def swapaxes(a: ArrayLike, axis1: int, axis2: int) -> Array:
    """Exchange two axes.

    >>> enp.swapaxes(enp.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    x = asarray(a)
    perm = list(range(x.ndim))
    i, j = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(x, perm)


def moveaxis(a: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Array:
    """Move axes to new positions, keeping the order of the others.

    >>> enp.moveaxis(enp.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    x = asarray(a)
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise InvalidArgumentError(f"moveaxis: source {source} and destination {destination} differ in length")
    src = [normalize_axis("moveaxis", s, x.ndim) for s in src]
    dst = [normalize_axis("moveaxis", d, x.ndim) for d in dst]
    order = [i for i in range(x.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(x, order)


def expand_dims(a: ArrayLike, axis: int | Sequence[int]) -> Array:
    """Insert size-1 axes at the positions `axis` of the result.

    >>> enp.expand_dims(enp.zeros(3), 0).shape
    (1, 3)
    """
    x = asarray(a)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    ndim = x.ndim + len(axes)
    norm = [normalize_axis("expand_dims", int(ax), ndim) for ax in axes]
    if len(set(norm)) != len(norm):
        raise InvalidArgumentError(f"expand_dims: repeated axis in {tuple(axes)}")
    return lax.expand_dims(x, norm)


def squeeze(a: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """Remove size-1 axes (all of them, or those in `axis`, which must have size 1).

    >>> enp.squeeze(enp.zeros((1, 3, 1))).shape
    (3,)
    """
    x = asarray(a)
    if axis is None:
        return lax.squeeze(x, [i for i, s in enumerate(x.shape) if s == 1])
    return lax.squeeze(x, canonical_axes("squeeze", axis, x.ndim))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy's broadcasting gives `shapes`.

    >>> enp.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    return _broadcast_shapes("broadcast_shapes", *(tuple(s) for s in shapes))


def broadcast_to(array: ArrayLike, shape: int | Sequence[int]) -> Array:
    """Broadcast `array` to `shape` by NumPy's rules.

    >>> enp.broadcast_to(enp.asarray([1, 2]), (3, 2)).shape
    (3, 2)
    """
    if type(array) is Array and array._place.host:
        try:  # Fast lane: NumPy's read-only view, by the same rule; what NumPy refuses the general path explains
            out = np.broadcast_to(array._value, shape)
        except Exception:
            out = None
        if type(out) is np.ndarray:
            return wrap(out, array._weak, array._place)
    try:
        return _broadcast_to(array, shape)
    except Exception as err:  # broadcast_to is its own traceback boundary, as the lanes are (_fastlane.py)
        filter_error(err)
        raise


broadcast_to.__ember_boundary__ = True


def _broadcast_to(array: ArrayLike, shape: int | Sequence[int]) -> Array:
    x = asarray(array)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if lead < 0 or any(s not in (1, t) for s, t in zip(x.shape, shape[lead:])):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape} (trailing dimensions must be equal or 1)")
    kept = [i for i, (s, t) in enumerate(zip(x.shape, shape[lead:])) if s == t]
    squeezed = lax.squeeze(x, [i for i in range(x.ndim) if i not in kept]) if len(kept) != x.ndim else x
    return lax.broadcast_in_dim(squeezed, shape, [lead + i for i in kept])


def broadcast_arrays(*args: ArrayLike) -> list[Array]:
    """Broadcast all arguments to one shape.

    >>> [a.shape for a in enp.broadcast_arrays(enp.zeros((2, 1)), enp.zeros(3))]
    [(2, 3), (2, 3)]
    """
    xs = [asarray(a) for a in args]
    target = _broadcast_shapes("broadcast_arrays", *(x.shape for x in xs)) if xs else ()
    return [broadcast_to(x, target) for x in xs]


def atleast_1d(*arys: ArrayLike):
    """Each argument with at least one dimension.

    >>> enp.atleast_1d(1.0).shape
    (1,)
    """
    out = [asarray(a) if asarray(a).ndim >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: ArrayLike):
    """Each argument with at least two dimensions (new axes in front).

    >>> enp.atleast_2d([1.0, 2.0]).shape
    (1, 2)
    """
    out = []
    for a in arys:
        x = asarray(a)
        out.append(x if x.ndim >= 2 else reshape(x, (1,) * (2 - x.ndim) + x.shape))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys: ArrayLike):
    """Each argument with at least three dimensions, as NumPy places the new axes.

    >>> enp.atleast_3d([1.0, 2.0]).shape
    (1, 2, 1)
    """
    out = []
    for a in arys:
        x = asarray(a)
        if x.ndim == 0:
            x = reshape(x, (1, 1, 1))
        elif x.ndim == 1:
            x = reshape(x, (1, x.shape[0], 1))
        elif x.ndim == 2:
            x = reshape(x, (*x.shape, 1))
        out.append(x)
    return out[0] if len(out) == 1 else out


def concatenate(arrays: Sequence[ArrayLike], axis: int | None = 0, dtype=None) -> Array:
    """Join arrays along an existing axis (flattened first when axis is None).

    >>> enp.concatenate([enp.zeros(2), enp.ones(3)]).shape
    (5,)
    """
    if isinstance(arrays, Array):
        arrays = list(arrays)
    if not len(arrays):
        raise InvalidArgumentError("concatenate: needs at least one array")
    xs = promote_args("concatenate", *arrays)
    if dtype is not None:
        xs = [asarray(x, dtype) for x in xs]
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    if any(x.ndim == 0 for x in xs):
        raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated; use enp.stack")
    ranks = {x.ndim for x in xs}
    if len(ranks) > 1:
        raise ShapeError(f"concatenate: all arrays must have the same rank, got shapes {[x.shape for x in xs]}")
    return lax.concatenate(xs, normalize_axis("concatenate", axis, xs[0].ndim))


concat = concatenate


def stack(arrays: Sequence[ArrayLike], axis: int = 0, dtype=None) -> Array:
    """Join arrays of one shape along a new axis.

    >>> enp.stack([enp.zeros(2), enp.ones(2)]).shape
    (2, 2)
    """
    if isinstance(arrays, Array):
        arrays = list(arrays)
    if not len(arrays):
        raise InvalidArgumentError("stack: needs at least one array")
    xs = [asarray(a) for a in arrays]
    if len({x.shape for x in xs}) > 1:
        raise ShapeError(f"stack: all arrays must have the same shape, got {[x.shape for x in xs]}")
    axis = normalize_axis("stack", axis, xs[0].ndim + 1)
    return concatenate([expand_dims(x, axis) for x in xs], axis, dtype)


def hstack(tup: Sequence[ArrayLike], dtype=None) -> Array:
    """Stack horizontally (along axis 1; axis 0 for 1-d arrays).

    >>> enp.hstack([enp.zeros(2), enp.ones(3)]).shape
    (5,)
    """
    xs = atleast_1d(*tup) if len(tup) > 1 else [atleast_1d(*tup)]
    return concatenate(xs, 0 if xs[0].ndim == 1 else 1, dtype)


def vstack(tup: Sequence[ArrayLike], dtype=None) -> Array:
    """Stack vertically (along axis 0, after making arrays at least 2-d).

    >>> enp.vstack([enp.zeros(2), enp.ones(2)]).shape
    (2, 2)
    """
    xs = atleast_2d(*tup) if len(tup) > 1 else [atleast_2d(*tup)]
    return concatenate(xs, 0, dtype)


def dstack(tup: Sequence[ArrayLike], dtype=None) -> Array:
    """Stack along the third axis (after making arrays at least 3-d).

    >>> enp.dstack([enp.zeros(2), enp.ones(2)]).shape
    (1, 2, 2)
    """
    xs = atleast_3d(*tup) if len(tup) > 1 else [atleast_3d(*tup)]
    return concatenate(xs, 2, dtype)


def column_stack(tup: Sequence[ArrayLike]) -> Array:
    """Stack 1-d arrays as columns of a 2-d array.

    >>> enp.column_stack([enp.zeros(2), enp.ones(2)]).shape
    (2, 2)
    """
    xs = [asarray(a) for a in tup]
    return concatenate([reshape(x, (-1, 1)) if x.ndim < 2 else x for x in xs], 1)


def split(ary: ArrayLike, indices_or_sections, axis: int = 0) -> list[Array]:
    """Split into equal sections (an error when they are not equal) or at the given indices.

    >>> [p.shape for p in enp.split(enp.arange(6), 3)]
    [(2,), (2,), (2,)]
    """
    x = asarray(ary)
    axis = normalize_axis("split", axis, x.ndim)
    if isinstance(indices_or_sections, (int, np.integer)):
        if indices_or_sections <= 0 or x.shape[axis] % indices_or_sections:
            raise ShapeError(
                f"split: axis {axis} of size {x.shape[axis]} does not divide into {indices_or_sections} equal sections; use array_split"
            )
    return array_split(x, indices_or_sections, axis)


def array_split(ary: ArrayLike, indices_or_sections, axis: int = 0) -> list[Array]:
    """Split into sections (the first ones one longer when unequal) or at the given indices.

    >>> [p.shape for p in enp.array_split(enp.arange(5), 2)]
    [(3,), (2,)]
    """
    x = asarray(ary)
    axis = normalize_axis("array_split", axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise InvalidArgumentError(f"array_split: number of sections must be positive, got {sections}")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    pieces = []
    for lo, hi in zip(bounds, bounds[1:]):
        lo, hi, _ = slice(lo, hi).indices(n)
        pieces.append(lax.slice_in_dim(x, lo, max(lo, hi), 1, axis))
    return pieces


def _split_at(name: str, axis: int):
    def fn(ary: ArrayLike, indices_or_sections) -> list[Array]:
        x = asarray(ary)
        # hsplit splits 1-d arrays along their only axis, as NumPy does.
        along = 0 if name == "hsplit" and x.ndim == 1 else axis
        least = 1 if name == "hsplit" else max(axis + 1, 2)
        if x.ndim < least:
            raise ShapeError(f"{name}: needs an array of at least {least} dimensions, got shape {x.shape}")
        return split(x, indices_or_sections, along)

    fn.__name__ = fn.__qualname__ = name
    what = "axis 1 (axis 0 for 1-d arrays)" if name == "hsplit" else f"axis {axis}"
    fn.__doc__ = (f"`split` along {what}.\n\n    >>> [p.shape for p in enp.{name}(enp.zeros((4, 4, 4)), 2)]\n"
                  f"    {[tuple(2 if i == axis else 4 for i in range(3))] * 2}\n")
    return fn


hsplit = _split_at("hsplit", 1)
vsplit = _split_at("vsplit", 0)
dsplit = _split_at("dsplit", 2)


# --- pad ---------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")


def pad(array: ArrayLike, pad_width, mode: str = "constant", constant_values=0) -> Array:
    """Pad an array, as NumPy's pad, in modes constant, edge, reflect, symmetric, wrap (and empty, zero-filled).

    Args:
      array: the array to pad.
      pad_width: how many elements go before and after each axis: an int (all axes, both sides), a pair
        (before, after) for all axes, or one pair per axis.
      mode: "constant" fills with constant_values; "edge" repeats the edge; "reflect" mirrors without
        repeating the edge, "symmetric" with it; "wrap" continues periodically. Pads wider than the axis
        repeat the pattern, as in NumPy.
      constant_values: for mode "constant": a scalar, a (before, after) pair or one pair per axis.

    Returns:
      The padded array, of the dtype of `array`.

    >>> enp.pad(enp.asarray([1, 2, 3]), (1, 2), mode="reflect").tolist()
    [2, 1, 2, 3, 2, 1]
    """
    x = asarray(array)
    if mode not in _PAD_MODES:
        raise InvalidArgumentError(f"pad: mode {mode!r} is not supported; use one of {', '.join(_PAD_MODES)}")
    widths = _pairs("pad", "pad_width", pad_width, x.ndim, integer=True)
    if mode == "constant" and isinstance(constant_values, Array):  # possibly traced: never made concrete
        return _pad_with_array(x, widths, constant_values)
    if mode in ("constant", "empty"):
        values = _pairs("pad", "constant_values", 0 if mode == "empty" else constant_values, x.ndim)
        if len({repr(v) for pair in values for v in pair}) <= 1:  # one value: a single lax.pad
            fill = asarray(values[0][0] if values else 0, x.dtype)
            return lax.pad(x, fill, [(lo, hi, 0) for lo, hi in widths])
        for axis, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, values)):
            config = [(0, 0, 0)] * x.ndim
            config[axis] = (lo, 0, 0)
            x = lax.pad(x, asarray(v_lo, x.dtype), config)
            config[axis] = (0, hi, 0)
            x = lax.pad(x, asarray(v_hi, x.dtype), config)
        return x
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            x = _pad_axis(x, axis, lo, hi, mode)
    return x


def _pad_with_array(x: Array, widths: list[tuple], values: Array) -> Array:
    """pad's mode "constant" with constant_values an Array (under jit or another transform, a traced one):
    a scalar, a (before, after) pair or one pair per axis, as with Python values."""
    if x.ndim == 0:
        return x
    if values.ndim == 0:
        return lax.pad(x, asarray(values, x.dtype), [(lo, hi, 0) for lo, hi in widths])
    try:
        if np.broadcast_shapes(values.shape, (x.ndim, 2)) != (x.ndim, 2):
            raise ValueError
    except ValueError:
        raise ShapeError(f"pad: constant_values of shape {values.shape} does not give a (before, after) pair "
                         f"for each of {x.ndim} axes") from None  # fmt: skip
    pairs = asarray(lax.broadcast_in_dim(values, (x.ndim, 2), tuple(range(2 - values.ndim, 2))), x.dtype)
    for axis, (lo, hi) in enumerate(widths):
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (lo, 0, 0)
        x = lax.pad(x, pairs[axis, 0], config)
        config[axis] = (0, hi, 0)
        x = lax.pad(x, pairs[axis, 1], config)
    return x


def _pairs(op: str, name: str, value, ndim: int, integer: bool = False) -> list[tuple]:
    """NumPy's forms for pad widths and values: a scalar, (before, after), ((before, after),) or one pair per axis."""
    if isinstance(value, Array):
        value = np.asarray(value)
    if ndim == 0:  # nothing to pad; NumPy accepts any width here
        return []
    try:
        pairs = np.broadcast_to(np.asarray(value, dtype=object), (ndim, 2))
    except ValueError:
        shape = np.shape(np.asarray(value, dtype=object))
        raise ShapeError(f"{op}: {name} of shape {shape} does not give a (before, after) pair for each of {ndim} axes") from None
    if not integer:
        return [tuple(p) for p in pairs.tolist()]
    out = []
    for lo, hi in pairs.tolist():
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (lo, hi)):
            raise InvalidArgumentError(f"{op}: {name} must hold integers, got {value!r}")
        if lo < 0 or hi < 0:
            raise InvalidArgumentError(f"{op}: {name} must be non-negative, got {value!r}")
        out.append((int(lo), int(hi)))
    return out


def _source_index(mode: str, i: np.ndarray, n: int) -> np.ndarray:
    """Where output position i (relative to the first original element) reads from, for a pad mode."""
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return np.mod(i, n)
    if mode == "symmetric":  # period 2n: 0..n-1, n-1..0
        j = np.mod(i, 2 * n)
        return np.where(j < n, j, 2 * n - 1 - j)
    if n == 1:  # reflect of one element: NumPy repeats it
        return np.zeros_like(i)
    j = np.mod(i, 2 * (n - 1))  # reflect, period 2(n-1): 0..n-1, n-2..1
    return np.where(j < n, j, 2 * (n - 1) - j)


def _pad_axis(x: Array, axis: int, lo: int, hi: int, mode: str) -> Array:
    # The source index of every output position is static: the output is a concatenation of runs of
    # consecutive indices, each one slice (reversed for descending runs, broadcast for repeats).
    n = x.shape[axis]
    if n == 0:
        raise ShapeError(f"pad: cannot pad the empty axis {axis} of shape {x.shape} in mode {mode!r}; use mode='constant'")
    source = _source_index(mode, np.arange(-lo, n + hi), n)
    pieces, start = [], 0
    while start < len(source):
        step = int(source[start + 1] - source[start]) if start + 1 < len(source) else 1
        step = step if step in (-1, 0, 1) else 1
        stop = start + 1
        while stop < len(source) and source[stop] - source[stop - 1] == step:
            stop += 1
        pieces.append(_run(x, axis, int(source[start]), int(source[stop - 1]), stop - start, step))
        start = stop
    return lax.concatenate(pieces, axis)


def _run(x: Array, axis: int, first: int, last: int, length: int, step: int) -> Array:
    if step == 0:
        one = lax.slice_in_dim(x, first, first + 1, 1, axis)
        shape = x.shape[:axis] + (length,) + x.shape[axis + 1:]
        return lax.broadcast_in_dim(one, shape, tuple(range(x.ndim)))
    lo, hi = min(first, last), max(first, last)
    piece = lax.slice_in_dim(x, lo, hi + 1, 1, axis)
    return lax.rev(piece, (axis,)) if step < 0 else piece
