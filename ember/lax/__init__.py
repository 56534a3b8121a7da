"""ember.lax: the primitive-level namespace (one function per primitive, no promotion).

Names and semantics follow ``jax.lax``. Operands must share a dtype; Python
scalars adopt it. `ember.numpy` builds NumPy's conveniences on top.
"""

from ember.lax._elementwise import *  # noqa: F403
from ember.lax._elementwise import __all__ as _elementwise_all
from ember.lax._structural import (
    argmax,
    argmin,
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    dot,
    dot_general,
    expand_dims,
    full,
    iota,
    pad,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reshape,
    rev,
    slice,
    slice_in_dim,
    squeeze,
    transpose,
)

__all__ = [*_elementwise_all, "argmax", "argmin", "broadcast", "broadcast_in_dim", "broadcasted_iota",
           "concatenate", "dot", "dot_general", "expand_dims", "full", "iota", "pad", "reduce_and", "reduce_max",
           "reduce_min", "reduce_or", "reduce_prod", "reduce_sum", "reshape", "rev", "slice", "slice_in_dim",
           "squeeze", "transpose"]  # fmt: skip
