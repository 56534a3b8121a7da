"""The fft primitive (FFT, IFFT, RFFT, IRFFT over up to 3 trailing axes) with all its rules."""

from __future__ import annotations
