"""First-class dimensions, in the manner of functorch.dim: axes named by objects.

>>> from ember.dim import dims
>>> i, j, k = dims()
>>> A, B = enp.ones((2, 3)), enp.ones((3, 4))
>>> (A[i, k] * B[k, j]).sum(k).order(i, j).shape
(2, 4)

Index an array with `Dim` objects (``x[i, j]``) to get a `DimArray`: those axes
become named and every operation is implicitly batched over them (a first-class
dim is a vmap axis: functions run under nested ``ember.vmap``, one per dim).
Name a dim where an axis is expected to work over it (``.sum(k)``,
``.softmax(k)``); ``.order(i, j)`` makes dims positional again; a tuple of dims
splits an axis when indexing (``x[(i, j), k]``) and flattens dims in
``order``; a DimArray of integers used as an index gathers (``w[idx[b, s]]``).
A dim used as an operand is its own index (``i <= j``). Positional ember
functions refuse DimArrays: use the methods, `apply`/`lift`, or ``.order``.
"""

from ember.dim._dim import Dim, dims
from ember.dim._tensor import DimArray, apply, dim_range, lift, softmax, where

__all__ = ["Dim", "DimArray", "apply", "dim_range", "dims", "lift", "softmax", "where"]
