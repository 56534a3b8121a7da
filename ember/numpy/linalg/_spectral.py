"""enp.linalg on the spectral decompositions: norms, svd, eigh, pinv, lstsq."""

from __future__ import annotations

__all__: list[str] = []
