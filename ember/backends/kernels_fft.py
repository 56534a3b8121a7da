"""Kernels of the fft primitive, written once against an array module `xp` (NumPy or CuPy).

NumPy 2's pocketfft (and cuFFT) computes single precision in single precision,
so complex64 stays complex64 and float32 goes to complex64; the `astype` at the
end only matters for an array module that widens (it copies nothing otherwise).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

# The values of ember.core.primitives.fft.FftType (the backends sit below the core).
FFT, IFFT, RFFT, IRFFT = 0, 1, 2, 3

_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}
_REAL = {c: r for r, c in _COMPLEX.items()}


def fft_kernels(xp: ModuleType) -> dict[str, Any]:
    """The fft kernels for array module `xp`."""
    one_axis = {FFT: xp.fft.fft, IFFT: xp.fft.ifft, RFFT: xp.fft.rfft}
    many_axes = {FFT: xp.fft.fftn, IFFT: xp.fft.ifftn, RFFT: xp.fft.rfftn}

    def fft(x, *, fft_type, fft_lengths):
        if fft_type == IRFFT:
            if len(fft_lengths) == 1:
                out = xp.fft.irfft(x, n=fft_lengths[0], axis=-1)
            else:
                out = xp.fft.irfftn(x, s=fft_lengths, axes=tuple(range(-len(fft_lengths), 0)))
            dtype = _REAL[x.dtype]
        else:
            if len(fft_lengths) == 1:
                out = one_axis[fft_type](x, axis=-1)
            else:
                out = many_axes[fft_type](x, axes=tuple(range(-len(fft_lengths), 0)))
            dtype = _COMPLEX.get(x.dtype, x.dtype)
        return out.astype(dtype, copy=False)

    return {"fft": fft}
