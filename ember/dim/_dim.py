"""`Dim` objects and `dims()`: names for axes, each with a size bound once.

A Dim is compared by identity (two dims named ``i`` in two functions are two
dims); its size is bound by the first array axis it indexes, or set by hand.
Dims are ordered by creation, which is the order a DimArray keeps them in.
"""

from __future__ import annotations

import dis
import itertools
import sys
from collections.abc import Sequence
from typing import Any

from ember import _traceback
from ember.errors import ArgumentTypeError, InvalidArgumentError, ShapeError

__all__ = ["Dim", "dims"]

_COUNTER = itertools.count()
_BOUNDARY_FILE = _traceback.__file__


class Dim:
    """A first-class dimension: index an array with it (``x[i]``) to make that axis a named one.

    Its `size` is bound by the first axis it indexes (or set once: ``i.size = 3``); binding it again
    to another size raises `ember.errors.ShapeError`. Dims compare by identity. Used as an array
    operand (``i + 1``, ``i <= j``) a dim stands for ``arange(i.size)`` along itself (functorch's
    rule 3); ``==`` stays identity, so compare indices with ``(i + 0) == j`` or ``ember.dim.where``.

    >>> i = ember.dim.Dim("i", 3)
    >>> i, i.size, i.is_bound
    (i, 3, True)
    """

    __slots__ = ("_id", "_size", "name")

    def __init__(self, name: str | None = None, size: int | None = None):
        self._id = next(_COUNTER)
        self.name = name if name is not None else f"d{self._id}"
        self._size: int | None = None
        if size is not None:
            self.size = size

    @property
    def is_bound(self) -> bool:
        """Whether this dim has a size yet."""
        return self._size is not None

    @property
    def size(self) -> int:
        """The dim's size; reading it before it is bound raises `ember.errors.ShapeError`."""
        if self._size is None:
            raise ShapeError(f"dim '{self.name}' has no size yet: bind it by indexing an array with it "
                             f"(x[{self.name}]) or set {self.name}.size = n")  # fmt: skip
        return self._size

    @size.setter
    def size(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgumentError(f"dim '{self.name}': a size must be a non-negative int, got {value!r}")
        if self._size is not None and self._size != value:
            raise ShapeError(f"dim '{self.name}' is bound to size {self._size} and cannot be bound to size {value}")
        self._size = value

    def __repr__(self) -> str:
        return self.name

    @staticmethod
    def __ember_index__(x: Any, index: Any) -> Any:
        # Called by ember.numpy's indexing when an index holds dims (ember/numpy/_indexing.py).
        from ember.dim._index import getitem

        return getitem(x, index)

    # Rule 3: a dim used as an operand is arange(size) along itself.
    def _tensor(self) -> Any:
        from ember.dim._tensor import dim_range

        return dim_range(self)

    def __add__(self, other: Any) -> Any:
        return self._tensor() + other

    def __radd__(self, other: Any) -> Any:
        return other + self._tensor()

    def __sub__(self, other: Any) -> Any:
        return self._tensor() - other

    def __rsub__(self, other: Any) -> Any:
        return other - self._tensor()

    def __mul__(self, other: Any) -> Any:
        return self._tensor() * other

    def __rmul__(self, other: Any) -> Any:
        return other * self._tensor()

    def __floordiv__(self, other: Any) -> Any:
        return self._tensor() // other

    def __mod__(self, other: Any) -> Any:
        return self._tensor() % other

    def __neg__(self) -> Any:
        return -self._tensor()

    def __lt__(self, other: Any) -> Any:
        return self._tensor() < other

    def __le__(self, other: Any) -> Any:
        return self._tensor() <= other

    def __gt__(self, other: Any) -> Any:
        return self._tensor() > other

    def __ge__(self, other: Any) -> Any:
        return self._tensor() >= other

    __hash__ = object.__hash__


def _target_names(depth: int) -> list[str] | None:
    """The names a call's result is assigned to (``i, j = dims()`` -> ['i', 'j']), read from the
    caller's bytecode, as functorch does; None when the result is not assigned to plain names."""
    frame = sys._getframe(depth + 1)
    while frame.f_code.co_filename == _BOUNDARY_FILE:  # ember.dim.dims is wrapped as a traceback boundary
        frame = frame.f_back
    after = [ins for ins in dis.get_instructions(frame.f_code) if ins.offset > frame.f_lasti]
    after = [ins for ins in after if ins.opname not in ("CACHE", "PRECALL", "EXTENDED_ARG")]
    if not after:
        return None
    stores = ("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF")
    if after[0].opname in stores:
        return [after[0].argval]
    if after[0].opname == "UNPACK_SEQUENCE":
        names = after[1 : 1 + after[0].argval]
        if len(names) == after[0].argval and all(ins.opname in stores for ins in names):
            return [ins.argval for ins in names]
    return None


def dims(n: int | None = None, sizes: Sequence[int | None] | None = None) -> Any:
    """New first-class dimensions: one `Dim` for ``n == 1``, else a tuple of them.

    Args:
      n: how many; inferred from ``sizes`` or from the assignment (``i, j = dims()``) when None.
      sizes: a size (or None: bound at first use) for each dim.

    Returns:
      A `Dim`, or a tuple of `Dim`; each is named after the variable it is assigned to
      (``d0``, ``d1``, ... when that cannot be read).

    >>> i, j = ember.dim.dims(sizes=[2, None])
    >>> i, i.size, j.is_bound
    (i, 2, False)
    >>> k = ember.dim.dims(1)
    >>> k
    k
    """
    names = _target_names(1)
    if sizes is not None:
        sizes = list(sizes)
        if n is not None and n != len(sizes):
            raise InvalidArgumentError(f"dims: n={n} but {len(sizes)} sizes were given: {sizes}")
        n = len(sizes)
    if n is None:
        if names is None:
            raise InvalidArgumentError("dims: cannot tell how many dims to make; write dims(n) or dims(sizes=[...]) "
                                       "when the result is not unpacked into names (i, j = dims())")  # fmt: skip
        n = len(names)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ArgumentTypeError(f"dims: n must be a positive int, got {n!r}")
    if names is not None and len(names) != n:
        names = None if n != 1 else names[:1]
    made = tuple(Dim(names[k] if names else None, sizes[k] if sizes else None) for k in range(n))
    return made[0] if n == 1 else made
