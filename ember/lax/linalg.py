"""ember.lax.linalg: the linear-algebra primitives' wrappers (as jax.lax.linalg); no promotion."""

from __future__ import annotations

from ember.lax._eigen import eig, eigh, svd, symmetrize

__all__ = ["eig", "eigh", "svd", "symmetrize"]
