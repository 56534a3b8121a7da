"""ember.numpy.fft: NumPy's discrete Fourier transforms on the fft primitive.

Every transform is one or a few calls of the ``fft`` primitive (``lax.fft``),
which works on up to 3 trailing axes: the transformed axes are cropped or
zero-padded to the requested sizes (`n`, `s`), moved to the end, transformed,
and moved back. More than 3 axes take several calls, as in JAX. `norm` is
NumPy's ("backward", the default; "ortho"; "forward"), applied as a scale.

Inputs are promoted as in JAX: integers and bool go to the default float
dtype, float16 and bfloat16 to float32, real to complex (float32 to
complex64) where the transform takes complex input. rfft and ihfft take real
input only. Repeated axes are an error (NumPy would transform such an axis twice).
Two differences from JAX: rfft of float16/bfloat16 computes in float32 as
NumPy does (JAX raises), and with x64 on, int32 input goes to the default
float dtype as everywhere in ember.numpy (JAX computes it in complex64).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.abstract import describe as _describe
from ember.core.array import Array
from ember.core.primitives.fft import MAX_AXES, FftType
from ember.errors import DTypeError, InvalidArgumentError
from ember.lax._convert import convert as _convert
from ember.numpy._core import ArrayLike
from ember.numpy._core import asarray as _asarray
from ember.numpy._core import check_device as _check_device
from ember.numpy._core import on_device as _on_device
from ember.numpy._take import roll as _roll

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft",
           "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]  # fmt: skip

Size = int | None
_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_INVERSE = {FftType.IFFT, FftType.IRFFT}


# --- inputs ------------------------------------------------------------------------------------


def _operand(op: str, a: ArrayLike, real: bool) -> Array:
    """`a` promoted as JAX does: to complex, or (`real`) to float32/float64, rejecting complex."""
    x = _asarray(a)
    if real and dtypes.is_complex(x.dtype):
        raise DTypeError(
            f"{op}: takes real input, got {_describe(x.aval)}; pass x.real, or use ember.numpy.fft.fft for "
            "complex input"
        )
    if dtypes.is_complex(x.dtype):
        return x
    if x.dtype in (dtypes.float32, dtypes.float64):
        floating = x.dtype
    elif dtypes.is_floating(x.dtype):  # float16 and bfloat16 compute in float32
        floating = dtypes.float32
    else:  # bool and integers: the default float dtype, as JAX's promotion to inexact
        floating = dtypes.default_float()
    target = floating if real else dtypes.complex_dtype(floating)
    return _convert(x, target, x.weak_type)


def _norm(op: str, norm: str | None) -> str:
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise InvalidArgumentError(f"{op}: norm must be one of {_NORMS} or None, got {norm!r}")
    return norm


def _index(op: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{op}: {name} must be an int, got {value!r}")
    return int(value)


def _axes(op: str, x: Array, axes: Sequence[int], distinct: bool = True) -> list[int]:
    """`axes` normalised (non-negative), checked to be in range and (`distinct`) not repeated."""
    out = []
    for ax in axes:
        ax = _index(op, "an axis", ax)
        if not -x.ndim <= ax < x.ndim:
            valid = f"axes -{x.ndim} to {x.ndim - 1}" if x.ndim else "no axes (a 0-d array)"
            raise InvalidArgumentError(f"{op}: axis {ax} is out of range for {_describe(x.aval)}, which has {valid}")
        out.append(ax % x.ndim)
    if distinct and len(set(out)) != len(out):
        raise InvalidArgumentError(
            f"{op}: repeated axis in axes={tuple(axes)} for {_describe(x.aval)}; each axis may be transformed once"
        )
    return out


def _sequence(op: str, name: str, value, what: str) -> tuple:
    if isinstance(value, (str, bytes)) or np.ndim(value) != 1:
        raise InvalidArgumentError(f"{op}: {name} must be {what}, got {value!r}")
    return tuple(v.item() if isinstance(v, np.generic) else v for v in value)


def _sizes(op: str, x: Array, s: Sequence[Size] | None, axes: Sequence[int] | None,
           inverse_real: bool = False) -> tuple[list[int], list[int]]:  # fmt: skip
    """NumPy's `s` and `axes`: the normalised axes and the transform size along each (for an inverse
    real transform, the real output's sizes). `s` without `axes` means the last len(s) axes; an
    entry None takes the one-axis default, -1 the input's size."""
    s = None if s is None else _sequence(op, "s", s, "a sequence of sizes")
    if axes is None:
        axes = range(x.ndim) if s is None else range(-len(s), 0)
    else:
        axes = _sequence(op, "axes", axes, "a sequence of ints (one axis: axes=(k,), or the one-axis function)")
    if s is not None and len(s) != len(axes):
        raise InvalidArgumentError(
            f"{op}: s={tuple(s)} and axes={tuple(axes)} have different lengths; give one size per transformed axis"
        )
    axes = _axes(op, x, axes)
    sizes = []
    for k, ax in enumerate(axes):
        n = None if s is None else s[k]
        if n is not None and _index(op, "each entry of s", n) == -1:
            n = x.shape[ax]
        if n is None:
            n = 2 * (x.shape[ax] - 1) if inverse_real and k == len(axes) - 1 else x.shape[ax]
        sizes.append(_positive(op, x, int(n), ax))
    return axes, sizes


def _positive(op: str, x: Array, n: int, axis: int) -> int:
    if n <= 0:
        raise InvalidArgumentError(
            f"{op}: FFT sizes must be positive, got {n} for axis {axis} of {_describe(x.aval)}; "
            "pass n (or s) >= 1 (an empty axis has nothing to transform)"
        )
    return n


# --- the transforms ----------------------------------------------------------------------------


def _resized(x: Array, axes: Sequence[int], sizes: Sequence[int]) -> Array:
    """`x` cropped or zero-padded at the end of each of `axes` to `sizes`."""
    config = [(0, 0, 0)] * x.ndim
    for ax, n in zip(axes, sizes):
        config[ax] = (0, n - x.shape[ax], 0)
    if all(c == (0, 0, 0) for c in config):
        return x
    return lax.pad(x, 0, config)


def _at_end(x: Array, axes: Sequence[int], fft_type: FftType, lengths: Sequence[int]) -> Array:
    """One primitive call over `axes` (at most 3), moved to the end in their order and back."""
    perm = [i for i in range(x.ndim) if i not in axes] + list(axes)
    moved = perm != list(range(x.ndim))
    if moved:
        x = lax.transpose(x, perm)
    out = lax.fft(x, fft_type, tuple(lengths))
    if moved:
        out = lax.transpose(out, tuple(np.argsort(perm)))
    return out


def _complex_fft(x: Array, axes: Sequence[int], sizes: Sequence[int], fft_type: FftType) -> Array:
    for start in range(len(axes), 0, -MAX_AXES):  # a separable transform: any grouping of axes will do
        group = slice(max(start - MAX_AXES, 0), start)
        x = _at_end(x, axes[group], fft_type, sizes[group])
    return x


def _transform(op: str, x: Array, axes: list[int], sizes: list[int], fft_type: FftType, norm: str | None) -> Array:
    """The `fft_type` transform of `x` over `axes` with sizes `sizes`, under `norm`; for an inverse
    real transform `sizes` are those of the output, and the last axis is the halved one."""
    norm = _norm(op, norm)
    if not axes:
        return x
    if fft_type is FftType.IRFFT:
        x = _resized(x, axes, [*sizes[:-1], sizes[-1] // 2 + 1])
        head, tail = axes[:-MAX_AXES], axes[-MAX_AXES:]
        x = _complex_fft(x, head, sizes[: len(head)], FftType.IFFT)
        x = _at_end(x, tail, FftType.IRFFT, sizes[len(head) :])
    elif fft_type is FftType.RFFT:
        x = _resized(x, axes, sizes)
        head, tail = axes[:-MAX_AXES], axes[-MAX_AXES:]
        x = _at_end(x, tail, FftType.RFFT, sizes[len(head) :])
        x = _complex_fft(x, head, sizes[: len(head)], FftType.FFT)
    else:
        x = _complex_fft(_resized(x, axes, sizes), axes, sizes, fft_type)
    return _scaled(x, math.prod(sizes), norm, fft_type in _INVERSE)


def _scaled(x: Array, size: int, norm: str, inverse: bool) -> Array:
    # The primitive's forward transforms are unscaled and its inverses divide by the size ("backward").
    if norm == "backward":
        return x
    factor = math.sqrt(size) if norm == "ortho" else float(size)
    return lax.mul(x, factor if inverse else 1.0 / factor)


def _one_axis(op: str, a: ArrayLike, n: int | None, axis: int, norm: str | None, fft_type: FftType) -> Array:
    x = _operand(op, a, real=fft_type is FftType.RFFT)
    if n is not None:
        n = _index(op, "n", n)
        if n <= 0:  # -1 means "the input's size" only in s
            _positive(op, x, n, axis)
    axes, sizes = _sizes(op, x, None if n is None else [n], [axis], inverse_real=fft_type is FftType.IRFFT)
    return _transform(op, x, axes, sizes, fft_type, norm)


def _many_axes(op: str, a: ArrayLike, s, axes, norm: str | None, fft_type: FftType) -> Array:
    x = _operand(op, a, real=fft_type is FftType.RFFT)
    axes, sizes = _sizes(op, x, s, axes, inverse_real=fft_type is FftType.IRFFT)
    if not axes and fft_type in (FftType.RFFT, FftType.IRFFT):
        raise InvalidArgumentError(f"{op}: needs at least one axis to transform, got axes=() for {_describe(x.aval)}")
    return _transform(op, x, axes, sizes, fft_type, norm)


# --- one axis ----------------------------------------------------------------------------------


def fft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The discrete Fourier transform along one axis (NumPy's ``fft.fft``).

    Args:
      a: the input; real and integer inputs are promoted to complex.
      n: the transform size: `a` is cropped or zero-padded to it along `axis` (default: its size).
      axis: the axis to transform.
      norm: "backward" (default: no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).

    Returns:
      The complex spectrum, of size `n` along `axis`.

    >>> enp.fft.fft(enp.asarray([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j), (-2-2j)]
    """
    return _one_axis("enp.fft.fft", a, n, axis, norm, FftType.FFT)


def ifft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse discrete Fourier transform along one axis (NumPy's ``fft.ifft``).

    Args:
      a: the spectrum; real and integer inputs are promoted to complex.
      n: the transform size: `a` is cropped or zero-padded to it along `axis` (default: its size).
      axis: the axis to transform.
      norm: "backward" (default: scaled by 1/n), "ortho" (1/sqrt(n)) or "forward" (no scaling).

    Returns:
      The complex signal, of size `n` along `axis`.

    >>> enp.fft.ifft(enp.asarray([10, -2 + 2j, -2, -2 - 2j])).real.tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    return _one_axis("enp.fft.ifft", a, n, axis, norm, FftType.IFFT)


def rfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The discrete Fourier transform of real input along one axis, non-negative frequencies only.

    Args:
      a: the real input (complex input is an error).
      n: the transform size: `a` is cropped or zero-padded to it along `axis` (default: its size).
      axis: the axis to transform.
      norm: "backward" (default: no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).

    Returns:
      The complex spectrum, of size ``n // 2 + 1`` along `axis`.

    >>> enp.fft.rfft(enp.asarray([1.0, 2.0, 3.0, 4.0])).tolist()
    [(10+0j), (-2+2j), (-2+0j)]
    """
    return _one_axis("enp.fft.rfft", a, n, axis, norm, FftType.RFFT)


def irfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of `rfft`: a real signal from its non-negative frequencies.

    Args:
      a: the half spectrum; real and integer inputs are promoted to complex.
      n: the length of the output; `a` is cropped or zero-padded to ``n // 2 + 1`` along `axis`
        (default: ``2 * (m - 1)`` for `m` input frequencies).
      axis: the axis to transform.
      norm: "backward" (default: scaled by 1/n), "ortho" (1/sqrt(n)) or "forward" (no scaling).

    Returns:
      The real signal, of size `n` along `axis`.

    >>> enp.fft.irfft(enp.asarray([10, -2 + 2j, -2])).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    return _one_axis("enp.fft.irfft", a, n, axis, norm, FftType.IRFFT)


def hfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The FFT of a signal with Hermitian symmetry, given by its first half: a real spectrum.

    ``hfft(a, n) == irfft(conj(a), n) * n`` (the norms swap directions, as in NumPy).

    Args:
      a: the first half of the Hermitian-symmetric signal; real inputs are promoted to complex.
      n: the length of the output (default: ``2 * (m - 1)`` for `m` input points).
      axis: the axis to transform.
      norm: "backward" (default: no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).

    Returns:
      The real spectrum, of size `n` along `axis`.

    >>> enp.fft.hfft(enp.asarray([1.0, 2.0, 3.0])).tolist()
    [8.0, -2.0, 0.0, -2.0]
    """
    op = "enp.fft.hfft"
    x = lax.conj(_operand(op, a, real=False))
    return _one_axis(op, x, n, axis, _SWAPPED[_norm(op, norm)], FftType.IRFFT)


def ihfft(a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
    """The inverse of `hfft`: the first half of a Hermitian-symmetric signal from its real spectrum.

    ``ihfft(a, n) == conj(rfft(a, n)) / n`` (the norms swap directions, as in NumPy).

    Args:
      a: the real spectrum (complex input is an error).
      n: the transform size: `a` is cropped or zero-padded to it along `axis` (default: its size).
      axis: the axis to transform.
      norm: "backward" (default: scaled by 1/n), "ortho" (1/sqrt(n)) or "forward" (no scaling).

    Returns:
      The complex half signal, of size ``n // 2 + 1`` along `axis`.

    >>> enp.fft.ihfft(enp.asarray([8.0, -2.0, 0.0, -2.0])).tolist()
    [(1-0j), (2-0j), (3-0j)]
    """
    op = "enp.fft.ihfft"
    return lax.conj(_one_axis(op, a, n, axis, _SWAPPED[_norm(op, norm)], FftType.RFFT))


# --- several axes ------------------------------------------------------------------------------


def fftn(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Array:  # fmt: skip
    """The N-dimensional discrete Fourier transform (NumPy's ``fft.fftn``).

    Args:
      a: the input; real and integer inputs are promoted to complex.
      s: the transform size along each of `axes` (crop or zero-pad; default: the input's sizes).
      axes: the axes to transform (default: the last ``len(s)`` axes, or all when `s` is None).
      norm: "backward" (default: no scaling), "ortho" (1/sqrt(N)) or "forward" (1/N), N = prod(s).

    Returns:
      The complex spectrum.

    >>> enp.fft.fftn(enp.ones((2, 2))).tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    return _many_axes("enp.fft.fftn", a, s, axes, norm, FftType.FFT)


def ifftn(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:  # fmt: skip
    """The N-dimensional inverse discrete Fourier transform (NumPy's ``fft.ifftn``).

    Args:
      a: the spectrum; real and integer inputs are promoted to complex.
      s: the transform size along each of `axes` (crop or zero-pad; default: the input's sizes).
      axes: the axes to transform (default: the last ``len(s)`` axes, or all when `s` is None).
      norm: "backward" (default: scaled by 1/N), "ortho" (1/sqrt(N)) or "forward" (no scaling).

    Returns:
      The complex signal.

    >>> enp.fft.ifftn(enp.asarray([[4.0, 0.0], [0.0, 0.0]])).real.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _many_axes("enp.fft.ifftn", a, s, axes, norm, FftType.IFFT)


def rfftn(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Array:  # fmt: skip
    """The N-dimensional discrete Fourier transform of real input; the last axis keeps the
    non-negative frequencies only.

    Args:
      a: the real input (complex input is an error).
      s: the transform size along each of `axes` (crop or zero-pad; default: the input's sizes).
      axes: the axes to transform (default: the last ``len(s)`` axes, or all when `s` is None).
      norm: "backward" (default: no scaling), "ortho" (1/sqrt(N)) or "forward" (1/N), N = prod(s).

    Returns:
      The complex spectrum; along the last of `axes` its size is ``s[-1] // 2 + 1``.

    >>> enp.fft.rfftn(enp.ones((2, 4))).shape
    (2, 3)
    """
    return _many_axes("enp.fft.rfftn", a, s, axes, norm, FftType.RFFT)


def irfftn(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Array:  # fmt: skip
    """The inverse of `rfftn`: a real N-dimensional signal from its half spectrum.

    Args:
      a: the half spectrum; real and integer inputs are promoted to complex.
      s: the size of the output along each of `axes` (default: the input's sizes, except
        ``2 * (m - 1)`` along the last of `axes`).
      axes: the axes to transform (default: the last ``len(s)`` axes, or all when `s` is None).
      norm: "backward" (default: scaled by 1/N), "ortho" (1/sqrt(N)) or "forward" (no scaling).

    Returns:
      The real signal.

    >>> enp.fft.irfftn(enp.asarray([[8.0, 0.0, 0.0], [0.0, 0.0, 0.0]])).tolist()
    [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    return _many_axes("enp.fft.irfftn", a, s, axes, norm, FftType.IRFFT)


def fft2(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Array:  # fmt: skip
    """The two-dimensional discrete Fourier transform: `fftn` over the last two axes by default.

    Args:
      a: the input; real and integer inputs are promoted to complex.
      s: the transform size along each of `axes` (crop or zero-pad).
      axes: the two axes to transform.
      norm: "backward" (default), "ortho" or "forward", as in `fftn`.

    Returns:
      The complex spectrum.

    >>> enp.fft.fft2(enp.ones((2, 2))).tolist()
    [[(4+0j), 0j], [0j, 0j]]
    """
    return _many_axes("enp.fft.fft2", a, s, axes, norm, FftType.FFT)


def ifft2(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:  # fmt: skip
    """The two-dimensional inverse discrete Fourier transform: `ifftn` over the last two axes by default.

    Args:
      a: the spectrum; real and integer inputs are promoted to complex.
      s: the transform size along each of `axes` (crop or zero-pad).
      axes: the two axes to transform.
      norm: "backward" (default), "ortho" or "forward", as in `ifftn`.

    Returns:
      The complex signal.

    >>> enp.fft.ifft2(enp.asarray([[4.0, 0.0], [0.0, 0.0]])).real.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    return _many_axes("enp.fft.ifft2", a, s, axes, norm, FftType.IFFT)


def rfft2(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Array:  # fmt: skip
    """The two-dimensional discrete Fourier transform of real input: `rfftn` over the last two axes by default.

    Args:
      a: the real input (complex input is an error).
      s: the transform size along each of `axes` (crop or zero-pad).
      axes: the two axes to transform; the last keeps the non-negative frequencies.
      norm: "backward" (default), "ortho" or "forward", as in `rfftn`.

    Returns:
      The complex half spectrum.

    >>> enp.fft.rfft2(enp.ones((2, 4))).shape
    (2, 3)
    """
    return _many_axes("enp.fft.rfft2", a, s, axes, norm, FftType.RFFT)


def irfft2(a: ArrayLike, s: Sequence[Size] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Array:  # fmt: skip
    """The inverse of `rfft2`: `irfftn` over the last two axes by default.

    Args:
      a: the half spectrum; real and integer inputs are promoted to complex.
      s: the size of the output along each of `axes`.
      axes: the two axes to transform.
      norm: "backward" (default), "ortho" or "forward", as in `irfftn`.

    Returns:
      The real signal.

    >>> enp.fft.irfft2(enp.asarray([[8.0, 0.0, 0.0], [0.0, 0.0, 0.0]])).shape
    (2, 4)
    """
    return _many_axes("enp.fft.irfft2", a, s, axes, norm, FftType.IRFFT)


# --- frequencies and shifts --------------------------------------------------------------------


def _frequencies(op: str, k: Array, n: int, d, dtype) -> Array:
    out_dtype = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype, op)
    if not dtypes.is_floating(out_dtype):
        raise DTypeError(f"{op}: dtype must be a floating dtype (frequencies are fractions), got {out_dtype}")
    spacing = _asarray(d)
    if spacing.ndim or dtypes.is_complex(spacing.dtype):
        raise InvalidArgumentError(f"{op}: the sample spacing d must be a real scalar, got {_describe(spacing.aval)}")
    return lax.div(_convert(k, out_dtype), lax.mul(_convert(spacing, out_dtype), float(n)))


def _count(op: str, n) -> int:
    n = _index(op, "n", n)
    if n <= 0:
        raise InvalidArgumentError(f"{op}: the number of samples n must be positive, got {n}")
    return n


def fftfreq(n: int, d: ArrayLike = 1.0, *, dtype=None, device=None) -> Array:
    """The frequencies of `fft`'s output bins for `n` samples spaced `d` apart.

    Args:
      n: the number of samples (the window length).
      d: the sample spacing (a real scalar; may be traced).
      dtype: the floating dtype of the result (default: the default float dtype).
      device: None, or the device to commit the result to (the array API's keyword).

    Returns:
      ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n * d)``.

    >>> enp.fft.fftfreq(4, 0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    op = "enp.fft.fftfreq"
    place = _check_device(op, device)
    n = _count(op, n)
    k = lax.iota(dtypes.default_int(), n)
    k = lax.select(lax.lt(k, (n + 1) // 2), k, lax.sub(k, n))
    return _on_device(_frequencies(op, k, n, d, dtype), place)


def rfftfreq(n: int, d: ArrayLike = 1.0, *, dtype=None, device=None) -> Array:
    """The frequencies of `rfft`'s output bins for `n` samples spaced `d` apart.

    Args:
      n: the number of samples (the window length).
      d: the sample spacing (a real scalar; may be traced).
      dtype: the floating dtype of the result (default: the default float dtype).
      device: None, or the device to commit the result to (the array API's keyword).

    Returns:
      ``[0, 1, ..., n // 2] / (n * d)``.

    >>> enp.fft.rfftfreq(4, 0.5).tolist()
    [0.0, 0.5, 1.0]
    """
    op = "enp.fft.rfftfreq"
    place = _check_device(op, device)
    n = _count(op, n)
    return _on_device(_frequencies(op, lax.iota(dtypes.default_int(), n // 2 + 1), n, d, dtype), place)


def _shift(op: str, x: ArrayLike, axes, sign: int) -> Array:
    x = _asarray(x)
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = [axes]
    axes = _axes(op, x, axes, distinct=False)  # a repeated axis rolls twice, as NumPy's and JAX's roll do
    if not axes:
        return x
    return _roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes)


def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """Move the zero frequency to the centre: roll each of `axes` by half its size.

    Args:
      x: the spectrum (any dtype).
      axes: the axes to shift (default: all).

    Returns:
      `x` rolled by ``size // 2`` along each of `axes`.

    >>> enp.fft.fftshift(enp.fft.fftfreq(5)).tolist()
    [-0.4000000059604645, -0.20000000298023224, 0.0, 0.20000000298023224, 0.4000000059604645]
    """
    return _shift("enp.fft.fftshift", x, axes, 1)


def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of `fftshift` (the same for even sizes; for odd sizes it rolls the other way).

    Args:
      x: the centred spectrum (any dtype).
      axes: the axes to shift (default: all).

    Returns:
      `x` rolled by ``-(size // 2)`` along each of `axes`.

    >>> enp.fft.ifftshift(enp.asarray([-2, -1, 0, 1, 2])).tolist()
    [0, 1, 2, -2, -1]
    """
    return _shift("enp.fft.ifftshift", x, axes, -1)
