"""The fft primitive (FFT, IFFT, RFFT, IRFFT over up to 3 trailing axes) with all its rules.

``fft(x, fft_type, fft_lengths)`` transforms the last ``len(fft_lengths)`` axes
of `x`, as JAX's ``lax.fft``:

- FFT / IFFT: complex in, complex out, the trailing shape is `fft_lengths`;
  IFFT is normalised by 1/prod(fft_lengths) (NumPy's "backward" norm).
- RFFT: real in (trailing shape `fft_lengths`), complex out whose last axis
  keeps the n // 2 + 1 non-negative frequencies (n = fft_lengths[-1]).
- IRFFT: the inverse of RFFT, complex in (last axis n // 2 + 1) to real out of
  trailing shape `fft_lengths`; it reads only the real parts of the frequencies
  that are their own mirror images (zero and, for even n, n / 2).

Other norms, sizes that crop or pad, and axes elsewhere are ember.numpy.fft's
business. Every kind is linear (over the reals, for RFFT and IRFFT), so the
jvp applies the primitive to the tangent and the transposes are FFTs again.
"""

from __future__ import annotations

import enum
import functools
import math

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import COMPLEX, DTypes, check_dtype
from ember.errors import InvalidArgumentError, ShapeError

__all__ = ["FftType", "fft_p"]


class FftType(enum.IntEnum):
    """The kind of transform (JAX's ``lax.FftType``); the kernels compare with these ints."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    def __repr__(self) -> str:  # as programs print their parameters
        return f"FftType.{self.name}"


MAX_AXES = 3  # as XLA: larger transforms are several calls (ember.numpy.fft splits them)
_REAL = DTypes("float32 or float64", (dtypes.float32, dtypes.float64))

fft_p = Primitive("fft")


def as_lengths(fft_lengths) -> tuple[int, ...]:
    """`fft_lengths` as a tuple of ints (one int is one length), as lax.fft and the shape rule accept it."""
    if isinstance(fft_lengths, (int, np.integer)):
        fft_lengths = (fft_lengths,)
    try:
        return tuple(int(n) for n in fft_lengths)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"fft: fft_lengths must be a sequence of ints, got {fft_lengths!r}") from None


def _lengths(fft_lengths, x: ShapedArray) -> tuple[int, ...]:
    lengths = as_lengths(fft_lengths)
    if not 1 <= len(lengths) <= MAX_AXES:
        raise InvalidArgumentError(
            f"fft: transforms 1 to {MAX_AXES} trailing axes, got fft_lengths={lengths} for {describe(x)}; "
            f"transform more axes in several calls (ember.numpy.fft.fftn does)"
        )
    if any(n <= 0 for n in lengths):
        raise InvalidArgumentError(
            f"fft: FFT sizes must be positive, got fft_lengths={lengths} for {describe(x)}"
        )
    if x.ndim < len(lengths):
        raise ShapeError(
            f"fft: fft_lengths={lengths} transforms {len(lengths)} trailing axes, but the operand {describe(x)} "
            f"has rank {x.ndim}"
        )
    return lengths


def _fft_rule(x: ShapedArray, *, fft_type, fft_lengths) -> ShapedArray:
    if not isinstance(fft_type, FftType):
        raise InvalidArgumentError(f"fft: fft_type must be an ember.lax.FftType, got {fft_type!r}")
    lengths = _lengths(fft_lengths, x)
    d, n = len(lengths), lengths[-1]
    kind = fft_type.name
    check_dtype(f"fft ({kind})", x, _REAL if fft_type is FftType.RFFT else COMPLEX)
    expected = (*lengths[:-1], n // 2 + 1) if fft_type is FftType.IRFFT else lengths
    if x.shape[-d:] != expected:
        what = "n // 2 + 1 on the last axis" if fft_type is FftType.IRFFT else "fft_lengths"
        raise ShapeError(
            f"fft ({kind}): fft_lengths={lengths} needs trailing dimensions {expected} ({what}), but the "
            f"operand is {describe(x)}; pad or slice it first (ember.numpy.fft's n and s do)"
        )
    batch = x.shape[:-d]
    if fft_type is FftType.RFFT:
        return ShapedArray((*batch, *lengths[:-1], n // 2 + 1), dtypes.complex_dtype(x.dtype), False)
    if fft_type is FftType.IRFFT:
        return ShapedArray((*batch, *lengths), dtypes.real_dtype(x.dtype), False)
    return ShapedArray(x.shape, x.dtype, False)  # JAX's fft results are strong


fft_p.abstract_eval = _fft_rule


# --- differentiation rules ------------------------------------------------------------------
# Transposes are with respect to the real pairing <a, b> = Re(sum(a * b)) (JAX's convention for
# complex cotangents). The DFT matrix F (F[j, k] = exp(-2 pi i jk / n)) is symmetric, so FFT and
# IFFT are their own transposes. RFFT keeps rows k = 0..n//2 of F on real x; its transpose is
# ct_x[j] = Re(sum_k ct[k] exp(-2 pi i jk / n)), which IRFFT computes from conj(ct) when the
# mirrored frequencies (those IRFFT counts twice) weigh 1/2, times N = prod(fft_lengths) as IRFFT
# divides by it. IRFFT's transpose is the other way round: RFFT, conjugated, those frequencies
# weighing 2, divided by N.

from ember.core.ad import Zero, deflinear  # noqa: E402
from ember.core.array import wrap  # noqa: E402
from ember.core.primitives import elementwise as _ew  # noqa: E402


@functools.lru_cache(maxsize=32)  # Arrays are immutable; a gradient step would otherwise rebuild its mask
def _mirror_weights(n: int, dtype: np.dtype, mirrored: float, own: float):
    """Weights along the last axis of an RFFT output of n points: `own` for the frequencies that are
    their own mirror image (0, and n/2 for even n), `mirrored` for the others (counted twice by IRFFT)."""
    w = np.full(n // 2 + 1, mirrored, dtype=dtype)
    w[0] = own
    if n % 2 == 0:
        w[-1] = own
    return wrap(w, False)


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [None]
    if fft_type in (FftType.FFT, FftType.IFFT):
        return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
    size = math.prod(fft_lengths)
    if fft_type is FftType.RFFT:
        weighted = _ew.mul_p.bind(_ew.conj_p.bind(ct), _mirror_weights(fft_lengths[-1], ct.dtype, size / 2, size))
        return [fft_p.bind(weighted, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)]
    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    weights = _mirror_weights(fft_lengths[-1], spectrum.dtype, 2 / size, 1 / size)
    return [_ew.mul_p.bind(_ew.conj_p.bind(spectrum), weights)]


deflinear(fft_p, _fft_transpose)


# --- batching rule ----------------------------------------------------------------------------
# The transform acts on the trailing axes: a batch axis among them moves to the front; one before
# them stays where it is (the batch is just one more leading axis).

from ember.core.batching import move_axis  # noqa: E402


def _fft_batch(size, args, dims, *, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    if d >= x.ndim - len(fft_lengths):
        x, d = move_axis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


fft_p.batch = _fft_batch
