"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and ``CircularPad`` in
1, 2 and 3 dimensions, as PyTorch's, each a call of ``nn.functional.pad`` with the layer's sizes."""

from __future__ import annotations

from collections.abc import Sequence

from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._checks import describe
from ember.nn._module import Module
from ember.nn.functional._padding import pad

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]  # fmt: skip


class _Pad(Module):
    """The shared body: ``padding`` as PyTorch's tuple of 2 * dims sizes (last dimension first)."""

    padding: tuple
    value: float | None
    _dims = 1
    _mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float | None = None) -> None:
        sizes = (int(padding),) * (2 * self._dims) if isinstance(padding, int) else tuple(int(p) for p in padding)
        if len(sizes) != 2 * self._dims:
            raise InvalidArgumentError(f"{type(self).__name__}: padding must be an int or {2 * self._dims} sizes "
                                       f"(left, right{', top, bottom' if self._dims > 1 else ''}"
                                       f"{', front, back' if self._dims > 2 else ''}), got {padding!r}")
        self.padding, self.value = sizes, value

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        ndim = getattr(x, "ndim", 0)
        if ndim not in (self._dims + 1, self._dims + 2):
            raise ShapeError(f"expected a {self._dims + 1}-d (unbatched) or {self._dims + 2}-d (batched) input, got "
                             f"shape {describe(x)}")
        return pad(x, self.padding, self._mode, self.value)

    def extra_repr(self) -> str:
        return str(self.padding)


class _ConstantPad(_Pad):
    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding, float(value))

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_Pad):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)


def _pad_class(name: str, base: type, dims: int, mode: str, doc: str) -> type:
    return type(name, (base,), {"_dims": dims, "_mode": mode, "__doc__": doc, "__module__": __name__})


_DOC = """{what}, as ``torch.nn.{name}``: pads the last {dims} dimension{s} of a batched or unbatched input.

    Args:
        padding: one size for every side, or {n} sizes (last dimension first, as ``nn.functional.pad``).{value}

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.{name}({example}).shape
    {shape}
    """

_KINDS = {"ZeroPad": (_ZeroPad, "constant", "Zero padding"),
          "ConstantPad": (_ConstantPad, "constant", "Constant padding"),
          "ReflectionPad": (_Pad, "reflect", "Reflection padding (the edge not repeated)"),
          "ReplicationPad": (_Pad, "replicate", "Replication padding (the edge repeated)"),
          "CircularPad": (_Pad, "circular", "Circular padding (wrapping around)")}  # fmt: skip

for _kind, (_base, _mode, _what) in _KINDS.items():
    for _dims in (1, 2, 3):
        _name = f"{_kind}{_dims}d"
        _shape = (1, 2) + (3,) * _dims
        _args = "1, 2.0" if _kind == "ConstantPad" else "1"
        _doc = _DOC.format(what=_what, name=_name, dims=_dims, s="s" if _dims > 1 else "", n=2 * _dims,
                           value="\n        value: the fill value." if _kind == "ConstantPad" else "",
                           example=f"{_args})(enp.ones({_shape})", shape=(1, 2) + (5,) * _dims)
        globals()[_name] = _pad_class(_name, _base, _dims, _mode, _doc)
