"""ember.numpy.fft: NumPy's discrete Fourier transforms on the fft primitive."""

from __future__ import annotations

__all__: list[str] = []
