"""enp.linalg on the factorisations: solves, inverses, determinants."""

from __future__ import annotations

__all__: list[str] = []
