"""ember.lax.linalg: the linear-algebra primitives' wrappers (as jax.lax.linalg); no promotion."""

from __future__ import annotations

from ember.lax._eigen import eig, eigh, svd, symmetrize
from ember.lax._factor import cholesky, lu, lu_pivots_to_permutation, qr, triangular_solve

__all__ = ["cholesky", "eig", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd", "symmetrize", "triangular_solve"]
