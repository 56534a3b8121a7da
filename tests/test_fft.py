"""The fft primitive and ember.numpy.fft beyond the op database: bad input, the kernel's precision,
the transposes against explicit matrices, second-order derivatives, batching without a loop, and the
number of primitive calls a transform takes."""

from __future__ import annotations

import numpy as np
import pytest
from vmap_check import no_loop_fallback  # noqa: F401  (autouse: vmap's loop fallback fails a test)

import ember
import ember.numpy as enp
from ember import lax
from ember.backends import cpu
from ember.core.primitives.fft import FftType
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.test_util import check_grads

RNG = np.random.default_rng(0)


def _real(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _complex(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, match", [
    (lambda: enp.fft.fft(np.ones(4, np.complex64), n=0), r"enp\.fft\.fft: FFT sizes must be positive, got 0 .*complex64\(4,\)"),
    (lambda: enp.fft.rfft(np.ones(4, np.float32), n=-1), r"enp\.fft\.rfft: FFT sizes must be positive, got -1 .*float32\(4,\)"),
    (lambda: enp.fft.fft(np.ones((0,), np.float32)), r"enp\.fft\.fft: FFT sizes must be positive, got 0 .*complex64\(0,\)"),
    (lambda: enp.fft.irfft(np.ones((3, 1), np.complex64)), r"enp\.fft\.irfft: FFT sizes must be positive, got 0 for axis 1 .*complex64\(3, 1\)"),
    (lambda: enp.fft.fftn(np.ones((2, 3)), s=(2, 0)), r"enp\.fft\.fftn: FFT sizes must be positive, got 0 for axis 1"),
    (lambda: enp.fft.fftfreq(0), r"enp\.fft\.fftfreq: the number of samples n must be positive"),
    (lambda: lax.fft(np.ones(4, np.complex64), "fft", (0,)), r"fft: FFT sizes must be positive, got fft_lengths=\(0,\) for complex64\(4,\)"),
])  # fmt: skip
def test_fft_sizes_must_be_positive(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


@pytest.mark.parametrize("call, match", [
    (lambda: enp.fft.fft(np.ones((2, 3)), axis=2), r"enp\.fft\.fft: axis 2 is out of range for complex64\(2, 3\), which has axes -2 to 1"),
    (lambda: enp.fft.rfft(np.ones((2, 3)), axis=-3), r"enp\.fft\.rfft: axis -3 is out of range for float32\(2, 3\)"),
    (lambda: enp.fft.fft(np.ones(())), r"enp\.fft\.fft: axis -1 is out of range for complex64\(\), which has no axes"),
    (lambda: enp.fft.fftn(np.ones((2, 3)), axes=(0, -2)), r"enp\.fft\.fftn: repeated axis in axes=\(0, -2\) for complex64\(2, 3\)"),
    (lambda: enp.fft.rfft2(np.ones((2, 3)), axes=(1, 1)), r"enp\.fft\.rfft2: repeated axis in axes=\(1, 1\) for float32\(2, 3\)"),
    (lambda: enp.fft.fftn(np.ones((2, 3)), s=(2, 3), axes=(0,)), r"enp\.fft\.fftn: s=\(2, 3\) and axes=\(0,\) have different lengths"),
    (lambda: enp.fft.irfftn(np.ones((2, 3)), s=(4,), axes=(0, 1)), r"enp\.fft\.irfftn: s=\(4,\) and axes=\(0, 1\) have different lengths"),
    (lambda: enp.fft.fftn(np.ones((2, 3)), axes=1), r"enp\.fft\.fftn: axes must be a sequence of ints .*got 1"),
    (lambda: enp.fft.rfftn(np.ones((2, 3)), s=3), r"enp\.fft\.rfftn: s must be a sequence of sizes, got 3"),
    (lambda: enp.fft.fft(np.ones(4), norm="unitary"), r"enp\.fft\.fft: norm must be one of \('backward', 'ortho', 'forward'\)"),
    (lambda: enp.fft.fft(np.ones(4), n=2.5), r"enp\.fft\.fft: n must be an int, got 2\.5"),
    (lambda: enp.fft.rfftn(np.ones(3), axes=()), r"enp\.fft\.rfftn: needs at least one axis"),
    (lambda: enp.fft.fftfreq(4, np.ones(2)), r"enp\.fft\.fftfreq: the sample spacing d must be a real scalar, got float32\(2,\)"),
    (lambda: enp.fft.rfftfreq(4, device=3), r"enp\.fft\.rfftfreq: a device is an ember\.Device or a string .*got int 3"),
    (lambda: lax.fft(np.ones((2, 2, 2, 2), np.complex64), "fft", (2, 2, 2, 2)),
     r"fft: transforms 1 to 3 trailing axes, got fft_lengths=\(2, 2, 2, 2\) for complex64\(2, 2, 2, 2\)"),
    (lambda: lax.fft(np.ones(4, np.complex64), "dct", (4,)), r"fft: unknown fft_type 'dct'"),
])  # fmt: skip
def test_bad_arguments(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


@pytest.mark.parametrize("call, error, match", [
    (lambda: lax.fft(np.ones(4, np.float32), "fft", (4,)), DTypeError,
     r"fft \(FFT\): operand float32\(4,\) has dtype float32, but 'fft \(FFT\)' accepts only complex dtypes"),
    (lambda: lax.fft(np.ones(4, np.complex64), "rfft", (4,)), DTypeError,
     r"fft \(RFFT\): operand complex64\(4,\) has dtype complex64, but 'fft \(RFFT\)' accepts only float32 or float64"),
    (lambda: lax.fft(np.ones(4, np.float16), "rfft", (4,)), DTypeError, r"accepts only float32 or float64"),
    (lambda: lax.fft(np.ones(3, np.float32), "irfft", (4,)), DTypeError, r"fft \(IRFFT\): operand float32\(3,\)"),
    (lambda: enp.fft.rfft(np.ones(4, np.complex64)), DTypeError, r"enp\.fft\.rfft: takes real input, got complex64\(4,\)"),
    (lambda: enp.fft.ihfft(np.ones(4, np.complex64)), DTypeError, r"enp\.fft\.ihfft: takes real input"),
    (lambda: enp.fft.fftfreq(4, dtype="int32"), DTypeError, r"enp\.fft\.fftfreq: dtype must be a floating dtype"),
    (lambda: lax.fft(np.ones((2, 5), np.complex64), "fft", (4,)), ShapeError,
     r"fft \(FFT\): fft_lengths=\(4,\) needs trailing dimensions \(4,\) .* but the operand is complex64\(2, 5\)"),
    (lambda: lax.fft(np.ones((2, 4), np.complex64), "irfft", (4,)), ShapeError,
     r"fft \(IRFFT\): fft_lengths=\(4,\) needs trailing dimensions \(3,\) \(n // 2 \+ 1 on the last axis\)"),
    (lambda: lax.fft(np.ones(4, np.complex64), "fft", (2, 2)), ShapeError, r"fft: fft_lengths=\(2, 2\) .* has rank 1"),
])  # fmt: skip
def test_bad_dtypes_and_shapes(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the kernel -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fft_type, x, lengths, dtype", [
    (FftType.FFT, _complex(3, 8, dtype=np.complex64), (8,), np.complex64),
    (FftType.IFFT, _complex(2, 3, 4, dtype=np.complex64), (3, 4), np.complex64),
    (FftType.RFFT, _real(3, 8, dtype=np.float32), (8,), np.complex64),
    (FftType.IRFFT, _complex(3, 5, dtype=np.complex64), (8,), np.float32),
    (FftType.RFFT, _real(2, 3, 4, dtype=np.float64), (2, 3, 4), np.complex128),
])  # fmt: skip
def test_kernel_keeps_single_precision(fft_type, x, lengths, dtype):
    out = cpu.kernel("fft")(x, fft_type=fft_type, fft_lengths=lengths)
    assert out.dtype == dtype  # computed in that precision: the primitive's wrapper never converts it
    axes = tuple(range(-len(lengths), 0))
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    want = {FftType.FFT: lambda: np.fft.fftn(wide, axes=axes), FftType.IFFT: lambda: np.fft.ifftn(wide, axes=axes),
            FftType.RFFT: lambda: np.fft.rfftn(wide, axes=axes),
            FftType.IRFFT: lambda: np.fft.irfftn(wide, s=lengths, axes=axes)}[fft_type]()  # fmt: skip
    rtol = 1e-5 if np.dtype(dtype) in (np.dtype(np.complex64), np.dtype(np.float32)) else 1e-12
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * np.abs(want).max())


# --- transposes against explicit matrices ------------------------------------------------------------


def _matrix(fn, n_in: int, complex_in: bool) -> np.ndarray:
    """The matrix of a linear map over the reals: columns are fn of the real (and imaginary) unit vectors,
    outputs split into real and imaginary parts."""
    cols = []
    for k in range(n_in * (2 if complex_in else 1)):
        e = np.zeros(n_in * (2 if complex_in else 1))
        e[k] = 1.0
        x = e[:n_in] + 1j * e[n_in:] if complex_in else e
        y = np.asarray(fn(x)).reshape(-1)
        cols.append(np.concatenate([y.real, y.imag]) if np.iscomplexobj(y) else y)
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("fft_type, lengths", [
    ("fft", (5,)), ("ifft", (2, 3)), ("rfft", (6,)), ("rfft", (5,)), ("rfft", (2, 4)), ("rfft", (3, 2, 3)),
    ("irfft", (6,)), ("irfft", (5,)), ("irfft", (3, 4)), ("irfft", (2, 3, 3)),
])  # fmt: skip
def test_transpose_is_the_real_transpose_of_the_matrix(fft_type, lengths):
    # JAX's convention: with <a, b> = Re(sum(a * b)), the transpose T of a linear f has
    # <T(ct), x> = <ct, f(x)>; splitting complex numbers into (re, im) makes that the matrix
    # transpose, with the imaginary rows of the cotangent side negated.
    n = lengths[-1]
    in_shape = (*lengths[:-1], n // 2 + 1) if fft_type == "irfft" else lengths
    complex_in = fft_type != "rfft"
    with ember.config.x64(True):
        f = lambda x: lax.fft(enp.asarray(x.reshape(in_shape)), fft_type, lengths)  # noqa: E731
        probe = np.zeros(in_shape, np.complex128 if complex_in else np.float64)
        out = f(probe)
        transpose = ember.linear_transpose(f, enp.asarray(probe))
        forward = _matrix(lambda x: np.asarray(f(x)), int(np.prod(in_shape)), complex_in)
        complex_out = np.iscomplexobj(np.asarray(out))
        backward = _matrix(lambda c: np.asarray(transpose(enp.asarray(c.reshape(out.shape)))[0]), out.size, complex_out)
    # Re(ct * y) = ct.re y.re - ct.im y.im: the pairing's sign on imaginary parts, on either side
    sign_out = np.concatenate([np.ones(out.size), -np.ones(out.size)]) if complex_out else np.ones(out.size)
    size_in = int(np.prod(in_shape))
    sign_in = np.concatenate([np.ones(size_in), -np.ones(size_in)]) if complex_in else np.ones(size_in)
    np.testing.assert_allclose(sign_in[:, None] * backward, (sign_out[:, None] * forward).T, atol=1e-12)


# --- derivatives ----------------------------------------------------------------------------------


def test_hessian_of_the_power_spectrum():
    # f(x) = sum_k |rfft(x)_k|^2 over the half spectrum = x^T (2 Re(A^H A) / 2) x, A = rfft's matrix
    n = 7
    a = np.fft.rfft(np.eye(n), axis=0)
    want = 2 * np.real(a.conj().T @ a)
    with ember.config.x64(True):
        f = lambda x: enp.sum(enp.abs(enp.fft.rfft(x)) ** 2)  # noqa: E731
        x = enp.asarray(_real(n))
        np.testing.assert_allclose(ember.hessian(f)(x), want, atol=1e-10)
        np.testing.assert_allclose(ember.jacrev(ember.jacrev(f))(x), want, atol=1e-10)


@pytest.mark.parametrize("fn, x", [
    (lambda x: enp.sum(enp.sin(enp.fft.irfft(enp.fft.rfft(x, n=9) * 1.5, n=7).real)), _real(2, 6)),
    (lambda x: enp.sum(enp.tanh(enp.abs(enp.fft.fftn(x, axes=(0, 2), norm="ortho")))), _complex(3, 2, 4)),
    (lambda x: enp.sum(enp.cos(enp.fft.hfft(x, n=6, norm="forward"))), _complex(2, 4)),
    (lambda x: enp.sum(enp.abs(enp.fft.ihfft(x, axis=0)) ** 3), _real(5, 2)),
    (lambda x: enp.sum(enp.sin(enp.fft.irfftn(x, s=(3, 2, 4), norm="ortho"))), _complex(2, 3, 2, 3)),
])  # fmt: skip
def test_second_order_derivatives(fn, x):
    with ember.config.x64(True):
        check_grads(fn, (enp.asarray(x),), order=2, modes=("fwd", "rev"))


def test_rfft_transpose_under_jit_and_vmap_of_grad():
    f = lambda x: enp.sum(enp.fft.rfft(x).real * enp.arange(5.0))  # noqa: E731
    x = _real(4, 8, dtype=np.float32)
    # d/dx_j sum_k k Re(X_k) = sum_k k cos(2 pi jk / 8)
    j, k = np.arange(8)[:, None], np.arange(5)[None, :]
    want = np.sum(k * np.cos(2 * np.pi * j * k / 8), axis=1)
    got = ember.jit(ember.vmap(ember.grad(f)))(enp.asarray(x))
    np.testing.assert_allclose(got, np.broadcast_to(want, (4, 8)), atol=1e-5)


# --- batching and the primitive calls -------------------------------------------------------------


@pytest.mark.parametrize("in_axis", [0, 1, 2, -1])
@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
def test_vmap_over_any_axis(fft_type, in_axis):
    lengths = (3, 4)
    shape = (2, 3, 3) if fft_type == "irfft" else (2, 3, 4)
    x = _real(*shape, 5) if fft_type == "rfft" else _complex(*shape, 5)
    x = np.moveaxis(x, -1, in_axis)
    f = lambda v: lax.fft(v, fft_type, lengths)  # noqa: E731
    with ember.config.x64(True):
        got = ember.vmap(f, in_axes=in_axis)(enp.asarray(x))
        want = np.stack([np.asarray(f(enp.asarray(np.take(x, b, axis=in_axis)))) for b in range(5)])
    np.testing.assert_allclose(got, want, atol=1e-12)


def _fft_equations(fn, *args) -> list:
    program = ember.make_ir(fn)(*args)
    return [e for e in program.eqns if e.primitive.name == "fft"]


def test_at_most_three_axes_per_primitive_call():
    x = enp.asarray(_complex(2, 2, 2, 2, 2, dtype=np.complex64))
    assert len(_fft_equations(enp.fft.fftn, x)) == 2  # 5 axes: 3 + 2
    assert len(_fft_equations(enp.fft.fft2, x)) == 1
    r = enp.asarray(_real(2, 2, 2, 2, dtype=np.float32))
    kinds = [e.params["fft_type"] for e in _fft_equations(enp.fft.rfftn, r)]
    assert kinds == [FftType.RFFT, FftType.FFT]  # the halved axis first, then the fourth axis
    kinds = [e.params["fft_type"] for e in _fft_equations(enp.fft.irfftn, x)]
    assert kinds == [FftType.IFFT, FftType.IRFFT]


def test_complex64_stays_complex64_and_x64_gives_complex128():
    assert enp.fft.fft(np.ones(4, np.float32)).dtype == np.complex64
    assert enp.fft.fft(np.arange(4)).dtype == np.complex64
    assert enp.fft.rfft(np.ones(4, np.float16)).dtype == np.complex64
    assert enp.fft.irfft(np.ones(3, np.complex64)).dtype == np.float32
    with ember.config.x64(True):
        assert enp.fft.fft(np.ones(4)).dtype == np.complex128
        assert enp.fft.fft(np.ones(4, np.float32)).dtype == np.complex64
        assert enp.fft.irfft(np.ones(3, np.complex128)).dtype == np.float64


@pytest.mark.parametrize("fn", ["fftshift", "ifftshift"])
def test_shift_along_a_repeated_axis_rolls_twice(fn):
    # NumPy's fftshift rolls with np.roll, which adds the shifts of a repeated axis (so does JAX's)
    x = np.arange(15).reshape(5, 3)
    for axes in [(0, 0), (1, -1, 0)]:
        np.testing.assert_array_equal(getattr(enp.fft, fn)(x, axes=axes), getattr(np.fft, fn)(x, axes=axes))


def test_s_without_axes_takes_the_last_axes_and_none_or_minus_one_sizes():
    x = _complex(2, 3, 4, dtype=np.complex64)
    np.testing.assert_allclose(enp.fft.fftn(x, s=np.array([5, 2]), axes=np.array([0, 2])),
                               np.fft.fftn(x, s=(5, 2), axes=(0, 2)), rtol=1e-5, atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(enp.fft.fftn(x, s=(5, 2)), np.fft.fftn(x, s=(5, 2), axes=(1, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(enp.fft.fftn(x, s=(None, 6), axes=(0, 2)), np.fft.fftn(x, s=(2, 6), axes=(0, 2)),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(enp.fft.irfftn(x, s=(-1, None), axes=(0, 2)), np.fft.irfftn(x, s=(2, 6), axes=(0, 2)),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
