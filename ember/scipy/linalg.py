"""ember.scipy.linalg: SciPy's linear-algebra names over ember arrays (as jax.scipy.linalg)."""

from __future__ import annotations

__all__: list[str] = []
