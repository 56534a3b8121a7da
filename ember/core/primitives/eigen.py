"""Spectral primitives: svd, eigh, eig, each with all its rules."""

from __future__ import annotations
