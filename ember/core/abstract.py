"""Abstract values: what a transform knows about an array without its data."""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes

_SHORT = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bfloat16": "bf16",
    "float16": "f16", "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128",
}  # fmt: skip


class ShapedArray:
    """An array's shape, dtype and weak type: everything but its values.

    >>> ShapedArray((2, 3), np.dtype("float32"))
    f32[2,3]
    """

    __slots__ = ("dtype", "shape", "weak_type")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.weak_type = weak_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def __eq__(self, other) -> bool:
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self) -> str:
        weak = "~" if self.weak_type else ""
        return f"{weak}{_SHORT.get(self.dtype.name, self.dtype.name)}[{','.join(map(str, self.shape))}]"

    __repr__ = str_short


def describe(aval: ShapedArray) -> str:
    """`float32(2, 3)`-style text for error messages."""
    weak = " (weak)" if aval.weak_type else ""
    return f"{aval.dtype}{aval.shape}{weak}"


def is_float0(aval: ShapedArray) -> bool:
    return aval.dtype == dtypes.float0
