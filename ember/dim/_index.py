"""Indexing with first-class dims: ``x[i, j]``, ``x[(i, j), k]``, ``x[i, i]``, ``w[idx[b, s], f]``.

Indexing reads left to right over the positional axes. It runs in two steps:
first the dims (and tuples/lists of dims, which split an axis) take their axes,
which only moves and reshapes the value (a dim met twice takes the diagonal);
then what is left (ints, slices, None, arrays, and DimArrays of integers) is
ordinary NumPy indexing of the remaining positional axes, batched over every
dim by `apply` — so ``w[idx[b, s]]`` is a gather under vmap.
"""

from __future__ import annotations

from typing import Any

from ember import numpy as enp
from ember.core.array import Array
from ember.dim._dim import Dim
from ember.dim._tensor import DimArray, _names, _prod, _sorted, apply
from ember.errors import EmberIndexError, InvalidArgumentError, ShapeError

__all__ = ["getitem"]


def _is_group(item: Any) -> bool:
    return isinstance(item, (tuple, list)) and len(item) > 0 and all(isinstance(d, Dim) for d in item)


def _bind_sizes(groups: list[tuple[int, tuple[Dim, ...]]], shape: tuple[int, ...]) -> dict[Dim, int]:
    """The size of every dim indexing an axis, checked against bound sizes and each other; nothing
    is bound until every check has passed."""
    new: dict[Dim, int] = {}

    def known(d: Dim) -> int | None:
        return d._size if d._size is not None else new.get(d)

    def bind(d: Dim, size: int, axis: int, what: str) -> None:
        have = known(d)
        if have is not None and have != size:
            raise ShapeError(f"dim '{d.name}' is bound to size {have}, but {what} axis {axis} of size {size} "
                             f"(indexing shape {shape})")  # fmt: skip
        new[d] = size

    for axis, group in groups:
        size = shape[axis]
        if len(group) == 1:
            bind(group[0], size, axis, "it indexes")
            continue
        names = "(" + ", ".join(d.name for d in group) + ")"
        free = [d for d in group if known(d) is None]
        fixed = _prod(known(d) for d in group if known(d) is not None)
        if len(free) > 1:
            raise ShapeError(f"cannot split axis {axis} of size {size} into dims {names}: the sizes of "
                             f"{', '.join(d.name for d in free)} are unknown (at most one may be inferred); set "
                             f"{free[0].name}.size = n first")  # fmt: skip
        if free:
            if fixed == 0 or size % fixed:
                raise ShapeError(f"cannot split axis {axis} of size {size} into dims {names}: the bound sizes "
                                 f"multiply to {fixed}, which does not divide {size}, so '{free[0].name}' has no "
                                 "size")  # fmt: skip
            bind(free[0], size // fixed, axis, "splitting")
        elif fixed != size:
            sizes = ", ".join(f"{d.name}={known(d)}" for d in group)
            raise ShapeError(f"cannot split axis {axis} of size {size} into dims {names} of sizes {sizes} (product "
                             f"{fixed})")  # fmt: skip
        for d in group:
            bind(d, known(d), axis, "splitting")  # type: ignore[arg-type]
    return new


def _expand(items: list, ndim: int) -> list:
    consumed = sum(item is not None and item is not Ellipsis for item in items)
    if sum(item is Ellipsis for item in items) > 1:
        raise EmberIndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        hint = ""
        if all(isinstance(item, Dim) for item in items) and ndim == 1:
            hint = f"; to split the one axis into dims write x[({', '.join(d.name for d in items)}),] (note the comma)"
        raise EmberIndexError(f"too many indices: {consumed} given, but the array has {ndim} positional "
                              f"axes{hint}")  # fmt: skip
    at = next((k for k, item in enumerate(items) if item is Ellipsis), None)
    if at is not None:
        return items[:at] + [slice(None)] * (ndim - consumed) + items[at + 1 :]
    return items + [slice(None)] * (ndim - consumed)


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` where `x` is an Array or DimArray and `index` may hold dims and DimArrays."""
    if isinstance(x, DimArray):
        value, dims, npos = x._value, list(x._dims), x.ndim
    elif isinstance(x, Array):
        value, dims, npos = x, [], x.ndim
    else:
        value = enp.asarray(x)
        value, dims, npos = value, [], value.ndim
    items = _expand([list(i) if _is_group(i) else i for i in (index if isinstance(index, tuple) else (index,))], npos)
    groups, rest, axis = [], [], 0
    for item in items:
        if isinstance(item, Dim) or _is_group(item):
            groups.append((axis, tuple(item) if isinstance(item, list) else (item,)))
        else:
            rest.append(item)
        if item is not None:
            axis += 1
    for d, size in _bind_sizes(groups, tuple(value.shape[:npos])).items():
        d.size = size
    if groups:
        value, dims, npos = _bind(value, dims, npos, groups)
    bound = DimArray(value, dims) if dims else value
    if all(isinstance(item, slice) and item == slice(None) for item in rest):
        return bound
    if not any(isinstance(item, DimArray) for item in rest):
        return apply(lambda v: v[tuple(rest)], bound) if dims else value[tuple(rest)]
    spots = [k for k, item in enumerate(rest) if isinstance(item, DimArray)]
    for k in spots:
        if rest[k].dtype.kind not in "iu":
            raise EmberIndexError(f"a DimArray used as an index must hold integers, got {rest[k].dtype} (dims "
                                  f"{_names(rest[k].dims)})")  # fmt: skip

    def gather(v: Any, *idx: Any) -> Any:
        full = list(rest)
        for k, i in zip(spots, idx, strict=True):
            full[k] = i
        return v[tuple(full)]

    return apply(gather, bound, *[rest[k] for k in spots])


def _bind(value: Any, dims: list[Dim], npos: int, groups: list) -> tuple[Any, list[Dim], int]:
    """The value with the grouped positional axes turned into dims: split, diagonals taken, and the
    dims moved last in creation order."""
    # Split axes first (from the last, so earlier axis numbers hold), labelling every axis.
    labels: list[Any] = [None] * npos + list(dims)
    shape = list(value.shape)
    for axis, group in reversed(groups):
        labels[axis : axis + 1] = list(group)
        shape[axis : axis + 1] = [d.size for d in group]
    if len(shape) != value.ndim:
        value = enp.reshape(value, tuple(shape))
    # A dim met twice reads the diagonal (x[i, i], or x[i] where x already has i).
    while True:
        seen: dict[Dim, int] = {}
        pair = None
        for k, label in enumerate(labels):
            if label is not None and label in seen:
                pair = (seen[label], k)
                break
            if label is not None:
                seen[label] = k
        if pair is None:
            break
        value = enp.diagonal(value, axis1=pair[0], axis2=pair[1])
        d = labels[pair[0]]
        labels = [lab for k, lab in enumerate(labels) if k not in pair] + [d]
    positional = [k for k, lab in enumerate(labels) if lab is None]
    new_dims = _sorted(lab for lab in labels if lab is not None)
    at = {lab: k for k, lab in enumerate(labels) if lab is not None}
    perm = positional + [at[d] for d in new_dims]
    if perm != list(range(len(perm))):
        value = enp.transpose(value, perm)
    if any(d.size != value.shape[len(positional) + k] for k, d in enumerate(new_dims)):
        raise InvalidArgumentError("internal error: dim sizes disagree with the value after binding")
    return value, list(new_dims), len(positional)
