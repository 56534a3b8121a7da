"""Kernels of the fft primitive, written once against an array module `xp` (NumPy or CuPy).

NumPy 2's pocketfft returns complex64 for float32/complex64 input, but its
forward transforms under the default norm pass the scale factor as the Python
int 1, which selects the float64 loop: the input is cast to double and the
result rounded back, at 2-3x the time of the single-precision loop (2**20
float32 points: about 60 ms against 25 ms here). Single-precision forward
transforms therefore ask for norm="forward" (a float32 factor 1/n, the float32
loop) and scale back by n, which is exact for powers of two and one more
rounding otherwise: a float32 FFT, as JAX and PyTorch compute it. The inverse
transforms already get a float32 factor. The final `astype` only matters for
an array module that widens (it copies nothing otherwise).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

# The values of ember.core.primitives.fft.FftType (the backends sit below the core).
FFT, IFFT, RFFT, IRFFT = 0, 1, 2, 3

_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}
_REAL = {c: r for r, c in _COMPLEX.items()}
_SINGLE = (np.dtype(np.float32), np.dtype(np.complex64))


def fft_kernels(xp: ModuleType) -> dict[str, Any]:
    """The fft kernels for array module `xp`."""
    one_axis = {FFT: xp.fft.fft, IFFT: xp.fft.ifft, RFFT: xp.fft.rfft}
    many_axes = {FFT: xp.fft.fftn, IFFT: xp.fft.ifftn, RFFT: xp.fft.rfftn}

    def fft(x, *, fft_type, fft_lengths):
        d = len(fft_lengths)
        if fft_type == IRFFT:
            if d == 1:
                out = xp.fft.irfft(x, n=fft_lengths[0], axis=-1)
            else:
                out = xp.fft.irfftn(x, s=fft_lengths, axes=tuple(range(-d, 0)))
            return out.astype(_REAL[x.dtype], copy=False)
        single_forward = fft_type != IFFT and x.dtype in _SINGLE
        norm = "forward" if single_forward else None
        if d == 1:
            out = one_axis[fft_type](x, axis=-1, norm=norm)
        else:
            out = many_axes[fft_type](x, axes=tuple(range(-d, 0)), norm=norm)
        if single_forward:
            out *= math.prod(fft_lengths)  # a fresh buffer: undo the 1/n of norm="forward"
        return out.astype(_COMPLEX.get(x.dtype, x.dtype), copy=False)

    return {"fft": fft}
