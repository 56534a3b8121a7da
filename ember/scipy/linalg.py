"""ember.scipy.linalg: SciPy's linear-algebra names over ember arrays (as jax.scipy.linalg)."""

from __future__ import annotations

from ember.numpy.linalg._spectral import scipy_eigh as eigh

__all__: list[str] = ["eigh"]
