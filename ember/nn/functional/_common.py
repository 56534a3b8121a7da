"""Small pieces the functional modules share: the ``ArrayLike`` alias and input checks."""

from __future__ import annotations

from typing import Union

import numpy as np

from ember.core.array import Array

# What an nn.functional function accepts where it takes an array: ember arrays, NumPy arrays, scalars.
ArrayLike = Union[Array, np.ndarray, float, int, bool]
