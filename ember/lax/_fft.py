"""lax.fft: the fft primitive with JAX's signature."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember.core.array import Array
from ember.core.primitives.fft import FftType, as_lengths, fft_p
from ember.errors import InvalidArgumentError
from ember.lax._convert import operands

__all__ = ["FftType", "fft"]


def fft(x: Array | np.ndarray, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Array:
    """A fast Fourier transform over the last ``len(fft_lengths)`` (1 to 3) axes of `x`.

    No promotion, no padding: FFT, IFFT and IRFFT take complex64/complex128,
    RFFT takes float32/float64, and the trailing axes must already have the
    transform's sizes (for IRFFT the last one is ``fft_lengths[-1] // 2 + 1``).
    IFFT and IRFFT divide by the number of points, as NumPy's default norm.
    ``ember.numpy.fft`` offers NumPy's conveniences on top.

    Args:
      x: the operand.
      fft_type: an `ember.lax.FftType` or its name ("FFT", "IFFT", "RFFT", "IRFFT"; any case).
      fft_lengths: the sizes of the transformed (trailing) axes; for IRFFT, of the real output.

    Returns:
      The transform: complex for FFT, IFFT and RFFT (RFFT's last axis keeps n // 2 + 1
      frequencies), real for IRFFT.

    >>> lax.fft(enp.asarray([1.0, 2.0, 3.0, 4.0]), "rfft", (4,)).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    (x,) = operands("fft", (x,))
    if isinstance(fft_type, str):
        try:
            fft_type = FftType[fft_type.upper()]
        except KeyError:
            valid = "use one of FFT, IFFT, RFFT, IRFFT"
            raise InvalidArgumentError(f"fft: unknown fft_type {fft_type!r}; {valid}") from None
    elif not isinstance(fft_type, FftType):
        try:
            fft_type = FftType(fft_type)
        except ValueError:
            raise InvalidArgumentError(f"fft: unknown fft_type {fft_type!r}; use an ember.lax.FftType") from None
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=as_lengths(fft_lengths))
