"""Linear-algebra primitives: cholesky, triangular_solve, lu, qr, each with all its rules."""

from __future__ import annotations
