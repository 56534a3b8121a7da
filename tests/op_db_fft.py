"""op_db entries for the fft primitive (through lax.fft) and ember.numpy.fft.

References are NumPy's numpy.fft in float64/complex128 (the inputs upcast).
lax.fft does not promote, so its entries are split by input kind: FFT, IFFT
and IRFFT take complex input ("lax.fft"), RFFT real ("lax.fft[rfft]"). The
vjp column's dot-product test is what checks the transposes, RFFT's and
IRFFT's Hermitian weighting included.

Tolerances: an FFT's rounding error is bounded relative to the norm of its
input, not to each output, so outputs that nearly cancel (a zero frequency of
a zero-mean signal) carry an absolute error of a few ulps of the input's norm
(inputs here are below 3 in magnitude, at most 24 points per transform).
"""

from __future__ import annotations

import numpy as np
from op_db import (
    ALL,
    BOOL,
    COMPLEX,
    FLOATING,
    INTEGER,
    SIXTY_FOUR_BIT,
    OpInfo,
    Sample,
    default_float,
    make_array,
    register,
)

import ember.numpy as enp
from ember import lax

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
FFT_TOL = {F32: (1e-5, 1e-5), C64: (1e-5, 1e-5), F64: (1e-12, 1e-13), C128: (1e-12, 1e-13)}
REAL = BOOL + INTEGER + FLOATING
REAL_INPUT = "takes real input only (NumPy rejects complex input too); use the complex transform"
LAX_COMPLEX = "FFT, IFFT and IRFFT take complex64/complex128 only; lax does not promote (use ember.numpy.fft)"
LAX_REAL = "RFFT takes float32/float64 only; lax does not promote (use ember.numpy.fft.rfft)"
REAL_SPACING = "the sample spacing d is a real scalar"


def _complex_of(d) -> np.dtype:
    """The complex dtype a transform of `d` computes in (x64 is on exactly for the 64-bit dtypes)."""
    return C128 if np.dtype(d) in SIXTY_FOUR_BIT else C64


def _arr(rng, shape, d):
    return make_array(rng, shape, d, -3, 3)


# --- lax.fft ----------------------------------------------------------------------------------------


def _lax_ref(x, fft_type, fft_lengths):
    axes = tuple(range(-len(fft_lengths), 0))
    if fft_type == "irfft":
        return np.fft.irfftn(x, s=fft_lengths, axes=axes)
    fn = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn}[fft_type]
    return fn(x, axes=axes)


def _lax_complex_samples(rng, d):
    cases = [("fft", (4,), (4,)), ("fft", (2, 3, 4), (3, 4)), ("fft", (2, 2, 3, 4), (2, 3, 4)), ("fft", (0, 5), (5,)),
             ("ifft", (3, 5), (5,)), ("ifft", (2, 3, 4), (2, 3, 4)), ("irfft", (3, 4), (6,)), ("irfft", (2, 3), (5,)),
             ("irfft", (2, 3, 3), (3, 4)), ("irfft", (2, 1), (1,)), ("irfft", (2, 2, 2, 3), (2, 2, 5))]  # fmt: skip
    return [Sample((_arr(rng, shape, d),), {"fft_type": kind, "fft_lengths": n}) for kind, shape, n in cases]


def _lax_real_samples(rng, d):
    cases = [((8,), (8,)), ((3, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 2, 3, 4), (2, 3, 4)), ((0, 6), (6,)), ((2, 1), (1,))]
    return [Sample((_arr(rng, shape, d),), {"fft_type": "rfft", "fft_lengths": n}) for shape, n in cases]


def _lax_complex_out(d, sample):
    return {C64: F32, C128: F64}[np.dtype(d)] if sample.kwargs["fft_type"] == "irfft" else d


register(
    OpInfo("lax.fft", lambda x, **kw: lax.fft(x, **kw), _lax_ref, COMPLEX, _lax_complex_samples, LAX_COMPLEX,
           primitives=("fft",), out_dtype_of=_lax_complex_out, tol=FFT_TOL),
    OpInfo("lax.fft[rfft]", lambda x, **kw: lax.fft(x, **kw), _lax_ref, (F32, F64), _lax_real_samples, LAX_REAL,
           primitives=("fft",), out_dtype=_complex_of, tol=FFT_TOL),
)  # fmt: skip

# --- ember.numpy.fft: the transforms ----------------------------------------------------------------


def _ref(fn, real: bool = False):
    """numpy.fft's `fn` on the input as float64 (real transforms) or complex128."""

    def ref(x, *args, **kwargs):
        return fn(np.asarray(x).astype(F64 if real else C128), *args, **kwargs)

    return ref


def _samples(cases):
    """Samples from (shape, kwargs) pairs."""

    def make(rng, d):
        return [Sample((_arr(rng, shape, d),), dict(kw)) for shape, kw in cases]

    return make


_ONE_AXIS = [((4,), {}), ((2, 5), {"n": 3, "axis": 0}), ((3, 4), {"n": 6, "norm": "ortho"}),
             ((2, 3, 4), {"axis": 1, "norm": "forward"}), ((0, 4), {})]  # fmt: skip
_INVERSE_REAL = [((4,), {}), ((3, 4), {"n": 5, "axis": 0}), ((2, 3, 4), {"axis": 1, "n": 4, "norm": "ortho"}),
                 ((2, 3), {"norm": "forward"}), ((0, 3), {})]  # fmt: skip
_MANY_AXES = [((2, 3), {}), ((2, 3, 4), {"s": (3, 5), "axes": (0, 2)}), ((2, 3, 4), {"axes": (-1, 0), "norm": "ortho"}),
              ((2, 1, 2, 3), {"norm": "forward"}), ((0, 3), {"axes": (1,)})]  # fmt: skip
_MANY_INVERSE_REAL = [((2, 3, 3), {}), ((3, 4), {"s": (4, 5), "axes": (0, 1)}), ((2, 1, 2, 3), {"norm": "ortho"}),
                      ((3, 2, 4), {"axes": (2, 0), "norm": "forward"}), ((0, 3), {"axes": (1,)})]  # fmt: skip
_TWO_AXES = [((2, 3), {}), ((2, 3, 4), {"s": (3, 2)}), ((2, 3, 4), {"axes": (0, 2), "norm": "ortho"}), ((0, 2, 3), {})]
_TWO_INVERSE_REAL = [((2, 3), {}), ((2, 3, 4), {"s": (3, 5)}), ((3, 2, 3), {"axes": (0, 2), "norm": "forward"}),
                     ((0, 2, 3), {})]  # fmt: skip


def _transform(name, cases, real_in=False, real_out=False):
    fn = getattr(enp.fft, name)
    return OpInfo(f"enp.fft.{name}", lambda x, **kw: fn(x, **kw), _ref(getattr(np.fft, name), real_in),
                  REAL if real_in else ALL, _samples(cases), REAL_INPUT if real_in else "", primitives=("fft",),
                  out_dtype=default_float if real_out else _complex_of, tol=FFT_TOL)  # fmt: skip


register(
    _transform("fft", _ONE_AXIS),
    _transform("ifft", _ONE_AXIS),
    _transform("rfft", _ONE_AXIS, real_in=True),
    _transform("irfft", _INVERSE_REAL, real_out=True),
    _transform("hfft", _INVERSE_REAL, real_out=True),
    _transform("ihfft", _ONE_AXIS, real_in=True),
    _transform("fftn", _MANY_AXES),
    _transform("ifftn", _MANY_AXES),
    _transform("rfftn", _MANY_AXES, real_in=True),
    _transform("irfftn", _MANY_INVERSE_REAL, real_out=True),
    _transform("fft2", _TWO_AXES),
    _transform("ifft2", _TWO_AXES),
    _transform("rfft2", _TWO_AXES, real_in=True),
    _transform("irfft2", _TWO_INVERSE_REAL, real_out=True),
)

# --- frequencies and shifts -------------------------------------------------------------------------


def _freq_samples(rng, d):
    spacing = make_array(rng, (), d, 1, 3)
    out = [Sample((4, spacing)), Sample((7, spacing)), Sample((1, spacing)), Sample((6, spacing), {"dtype": F32})]
    return out if np.dtype(d).kind == "c" else [*out, Sample((5,))]  # a complex d must raise in every sample


def _freq_dtype(d, sample):
    return F32 if "dtype" in sample.kwargs else default_float(d)


def _freq_ref(fn):
    def ref(n, d=1.0, dtype=None):
        return fn(n, np.asarray(d).astype(F64))

    return ref


def _shift_ref(fn):
    def ref(x, axes=None):
        return x if x.ndim == 0 else fn(x, axes)  # NumPy's roll fails on a 0-d array, which has no axes to shift

    return ref


def _shift_samples(rng, d):
    return [Sample((make_array(rng, (5,), d),)), Sample((make_array(rng, (2, 5), d),), {"axes": 1}),
            Sample((make_array(rng, (4, 3), d),), {"axes": (0, 1)}), Sample((make_array(rng, (3, 4, 2), d),), {"axes": (-1, 0)}),
            Sample((make_array(rng, (), d),)), Sample((make_array(rng, (0, 3), d),))]  # fmt: skip


register(
    OpInfo("enp.fft.fftfreq", lambda *a, **kw: enp.fft.fftfreq(*a, **kw), _freq_ref(np.fft.fftfreq), REAL,
           _freq_samples, REAL_SPACING, out_dtype_of=_freq_dtype, tol=FFT_TOL),
    OpInfo("enp.fft.rfftfreq", lambda *a, **kw: enp.fft.rfftfreq(*a, **kw), _freq_ref(np.fft.rfftfreq), REAL,
           _freq_samples, REAL_SPACING, out_dtype_of=_freq_dtype, tol=FFT_TOL),
    OpInfo("enp.fft.fftshift", lambda x, **kw: enp.fft.fftshift(x, **kw), _shift_ref(np.fft.fftshift), ALL, _shift_samples,
           ref_in_dtype=True),
    OpInfo("enp.fft.ifftshift", lambda x, **kw: enp.fft.ifftshift(x, **kw), _shift_ref(np.fft.ifftshift), ALL, _shift_samples,
           ref_in_dtype=True),
)  # fmt: skip
