"""Signals and polynomials of ember.numpy: convolve, correlate, polyval, interp, gradient, ediff1d.

convolve and correlate are one-dimensional `conv_general_dilated`s (whose
rules give them every transform); polyval is Horner's rule; interp looks its
intervals up with searchsorted; gradient is NumPy's second-order central
differences with one-sided edges. All are differentiable in their float
arguments and batch under vmap.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives._rules import normalize_axis
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, canonical_axes, full_for, promote_args, promote_inexact
from ember.numpy._shape import concatenate, ravel
from ember.numpy._statistics import known
from ember.numpy._ufuncs import conjugate, imag, isnan, logical_and, real, where

__all__ = ["convolve", "correlate", "ediff1d", "gradient", "interp", "polyval"]

_MODES = ("full", "same", "valid")


# --- convolve, correlate ---------------------------------------------------------------------------


def _as_1d(op: str, name: str, x: Array) -> Array:
    if x.ndim > 1:
        raise ShapeError(f"{op}: {name} must be 1-d, got shape {x.shape}")
    if x.size == 0:
        raise ShapeError(f"{op}: {name} cannot be empty (shape {x.shape})")
    return lax.reshape(x, (x.size,))


def _correlate(a: Array, v: Array, mode: str) -> Array:
    """out[j] = sum_i a[i + k0 + j] * v[i], the window of lags k NumPy's `mode` keeps."""
    n, m = a.shape[0], v.shape[0]
    if mode == "full":
        k0, length = -(m - 1), n + m - 1
    elif mode == "valid":
        k0, length = min(0, n - m), abs(n - m) + 1
    else:  # "same": centred on the longer input, as NumPy's correlate2 does
        k0, length = (-(m // 2), n) if n >= m else (n // 2 - m + 1, m)
    lo = -k0
    hi = length - n - lo + m - 1
    out = lax.conv_general_dilated(lax.reshape(a, (1, 1, n)), lax.reshape(v, (1, 1, m)), (1,), [(lo, hi)])
    return lax.reshape(out, (length,))


def _check_mode(op: str, mode: str) -> None:
    if mode not in _MODES:
        raise InvalidArgumentError(f"{op}: mode must be one of {_MODES}, got {mode!r}")


def correlate(a: ArrayLike, v: ArrayLike, mode: str = "valid", *, precision=None, preferred_element_type=None) -> Array:
    """The cross-correlation of two 1-d sequences: c[k] = sum_n a[n + k] * conj(v[n]).

    Args:
      a, v: 1-d arrays (0-d ones count as length 1), not empty; they promote together.
      mode: "valid" (lags where v lies inside a), "same" (as long as the longer input) or
        "full" (every overlap), as NumPy.
      precision, preferred_element_type: accepted for JAX compatibility; ignored.

    Returns:
      The correlation, 1-d, in the promoted dtype.

    >>> enp.correlate(enp.asarray([1.0, 2.0, 3.0]), enp.asarray([0.0, 1.0, 0.5]), "full").tolist()
    [0.5, 2.0, 3.5, 3.0, 0.0]
    """
    _check_mode("correlate", mode)
    x, y = promote_args("correlate", a, v)
    x, y = _as_1d("correlate", "a", x), _as_1d("correlate", "v", y)
    if dtypes.is_complex(y.dtype):
        y = conjugate(y)
    return _correlate(x, y, mode)


def convolve(a: ArrayLike, v: ArrayLike, mode: str = "full", *, precision=None, preferred_element_type=None) -> Array:
    """The discrete linear convolution of two 1-d sequences: c[k] = sum_n a[n] * v[k - n].

    Args:
      a, v: 1-d arrays (0-d ones count as length 1), not empty; they promote together.
      mode: "full" (every overlap), "same" (as long as the longer input) or "valid" (where
        the shorter lies inside the longer), as NumPy.
      precision, preferred_element_type: accepted for JAX compatibility; ignored.

    Returns:
      The convolution, 1-d, in the promoted dtype.

    >>> enp.convolve(enp.asarray([1.0, 2.0, 3.0]), enp.asarray([0.0, 1.0, 0.5])).tolist()
    [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    _check_mode("convolve", mode)
    x, y = promote_args("convolve", a, v)
    x, y = _as_1d("convolve", "a", x), _as_1d("convolve", "v", y)
    if y.shape[0] > x.shape[0]:
        x, y = y, x
    return _correlate(x, lax.rev(y, (0,)), mode)


# --- polynomials --------------------------------------------------------------------------------------


def polyval(p: ArrayLike, x: ArrayLike, *, unroll: int = 16) -> Array:
    """The polynomial with coefficients `p` (highest power first) at `x`, by Horner's rule.

    Args:
      p: a 1-d array of coefficients, p[0] * x**(N-1) + ... + p[N-1].
      x: where to evaluate (any shape).
      unroll: accepted for JAX compatibility (ember's loop is unrolled when traced).

    Returns:
      An array of x's shape in the promoted dtype of p and x (zeros for an empty p).

    >>> enp.polyval(enp.asarray([3.0, 0.0, 1.0]), enp.asarray([1.0, 2.0])).tolist()
    [4.0, 13.0]
    """
    c, t = promote_args("polyval", p, x)
    if c.ndim != 1:
        raise ShapeError(f"polyval: p must be a 1-d array of coefficients, got shape {c.shape}")
    y = full_for("polyval", t.shape, 0, t.dtype, c, t)  # an empty p's zeros: on the operands' device
    for i in range(c.shape[0]):
        y = y * t + lax.reshape(lax.slice_in_dim(c, i, i + 1), ())
    return y


# --- interp --------------------------------------------------------------------------------------------


def interp(x: ArrayLike, xp: ArrayLike, fp: ArrayLike, left: ArrayLike | None = None, right: ArrayLike | None = None,
           period: ArrayLike | None = None) -> Array:  # fmt: skip
    """Piecewise-linear interpolation of the points (xp, fp) at `x`.

    Args:
      x: where to interpolate (any shape).
      xp: the increasing 1-d sample points (not checked, as in NumPy).
      fp: the values at xp (1-d, as long as xp; may be complex).
      left, right: the values below xp[0] and above xp[-1] (default fp[0] and fp[-1]).
      period: for periodic x-coordinates: xp and x are taken modulo `period`, and left/right are
        ignored.

    Returns:
      An array of x's shape, in the inexact promotion of x, xp and fp.

    >>> enp.interp(enp.asarray([0.0, 1.5, 5.0]), enp.asarray([1.0, 2.0, 3.0]), enp.asarray([3.0, 2.0, 0.0])).tolist()
    [3.0, 2.5, 0.0]
    """
    from ember.numpy._sorting import argsort, searchsorted
    from ember.numpy._take import take
    from ember.numpy._ufuncs import clip, remainder

    xs, xps = promote_inexact("interp", x, xp)
    if dtypes.is_complex(xs.dtype):
        raise DTypeError(f"interp: x and xp must be real, got {xs.dtype}")
    (f,) = promote_inexact("interp", fp)
    if xps.ndim != 1 or f.ndim != 1:
        raise ShapeError(f"interp: xp and fp must be 1-d, got shapes {xps.shape} and {f.shape}")
    if xps.shape != f.shape:
        raise ShapeError(f"interp: fp and xp are not of the same length: {f.shape[0]} and {xps.shape[0]}")
    if xps.shape[0] == 0:
        raise ShapeError("interp: the array of sample points xp is empty")
    dtype = dtypes.promote_types(xs.dtype, f.dtype)
    if period is not None:
        per = asarray(period, xs.dtype)
        value = known(per)
        if value is not None and value == 0:
            raise InvalidArgumentError("interp: period must be a non-zero value")
        per = lax.abs(per)
        xs, xps = remainder(xs, per), remainder(xps, per)
        order = argsort(xps)
        xps, f = take(xps, order), take(f, order)
        xps = concatenate([xps[-1:] - per, xps, xps[:1] + per])
        f = concatenate([f[-1:], f, f[:1]])
        left = right = None
    f = convert(f, dtype)
    n = xps.shape[0]
    if n == 1:
        out = lax.full(xs.shape, 0, dtype) + f[0]
    else:
        i = clip(searchsorted(xps, xs, side="right"), 1, n - 1)
        x0, x1, f0, f1 = take(xps, i - 1), take(xps, i), take(f, i - 1), take(f, i)
        if dtypes.is_complex(dtype):  # NumPy interpolates the two parts apart (a NaN in one spares the other)
            parts = (_between(xs, x0, x1, part(f0), part(f1)) for part in (real, imag))
            out = lax.complex(*parts)
        else:
            out = _between(xs, x0, x1, f0, f1)
    last = xps[n - 1]
    out = where(xs == last, f[n - 1], out)  # exact at the last point, as NumPy
    out = where(xs < xps[0], f[0] if left is None else asarray(left, dtype), out)
    out = where(xs > last, f[n - 1] if right is None else asarray(right, dtype), out)
    return convert(out, dtype)


def _between(x: Array, x0: Array, x1: Array, f0: Array, f1: Array) -> Array:
    """The line through (x0, f0) and (x1, f1) at x (x0 <= x < x1 inside xp; real f). Where an infinite or
    NaN end makes it NaN, NumPy's interp takes f0 at x0, else the line from the other end, else the ends'
    common value if they are equal: through (0, 0), (1, inf), (2, 1), x = 0, 1, 1.5 give 0, inf, inf, not
    NaN. Only where NaN, so that the derivative in x at a sample point stays the slope."""
    dx = x1 - x0
    flat = dx == 0  # only outside [xp[0], xp[-1]], where left/right decide; keeps a division by 0 out of gradients
    slope = (f1 - f0) / convert(where(flat, 1, dx), f0.dtype)
    out = f0 + slope * convert(x - x0, f0.dtype)
    out = where(isnan(out), where(x == x0, f0, f1 + slope * convert(x - x1, f0.dtype)), out)
    return where(logical_and(isnan(out), logical_and(f0 == f1, x == x)), f0, out)  # a NaN x stays NaN


# --- gradient, ediff1d ----------------------------------------------------------------------------------


def _slice(x: Array, axis: int, start: int, stop: int | None) -> Array:
    n = x.shape[axis]
    stop = n if stop is None else stop
    return lax.slice_in_dim(x, start % n if start < 0 else start, stop + n if stop < 0 else stop, axis=axis)


def _along(d: Array, axis: int, ndim: int) -> Array:
    """The 1-d spacing array `d` shaped to broadcast along `axis` of an ndim-d array."""
    shape = [1] * ndim
    shape[axis] = d.shape[0]
    return lax.reshape(d, tuple(shape))


def _gradient_1(f: Array, axis: int, h, edge_order: int) -> Array:
    """df/dx along one axis; `h` is a scalar spacing (a Python number or a 0-d array) or the 1-d
    coordinate differences (length n - 1)."""
    nd = f.ndim
    uniform = not (isinstance(h, Array) and h.ndim == 1)
    s = lambda a, b: _slice(f, axis, a, b)
    if uniform:
        inner = (s(2, None) - s(0, -2)) / (2 * h)
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / h
            last = (s(-1, None) - s(-2, -1)) / h
        else:
            first = (-1.5 * s(0, 1) + 2 * s(1, 2) - 0.5 * s(2, 3)) / h
            last = (0.5 * s(-3, -2) - 2 * s(-2, -1) + 1.5 * s(-1, None)) / h
    else:
        d = lambda a, b: _along(lax.slice_in_dim(h, a, b if b >= 0 else h.shape[0] + b), axis, nd)
        dx1, dx2 = d(0, -1), d(1, h.shape[0])
        inner = (-dx2 / (dx1 * (dx1 + dx2)) * s(0, -2) + (dx2 - dx1) / (dx1 * dx2) * s(1, -1)
                 + dx1 / (dx2 * (dx1 + dx2)) * s(2, None))  # fmt: skip
        m = h.shape[0]
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / d(0, 1)
            last = (s(-1, None) - s(-2, -1)) / d(m - 1, m)
        else:
            a0, a1 = d(0, 1), d(1, 2)
            first = (-(2 * a0 + a1) / (a0 * (a0 + a1)) * s(0, 1) + (a0 + a1) / (a0 * a1) * s(1, 2)
                     - a0 / (a1 * (a0 + a1)) * s(2, 3))  # fmt: skip
            b0, b1 = d(m - 2, m - 1), d(m - 1, m)
            last = (b1 / (b0 * (b0 + b1)) * s(-3, -2) - (b0 + b1) / (b0 * b1) * s(-2, -1)
                    + (2 * b1 + b0) / (b1 * (b0 + b1)) * s(-1, None))  # fmt: skip
    return lax.concatenate([first, inner, last], axis)


def gradient(f: ArrayLike, *varargs: ArrayLike, axis: int | Sequence[int] | None = None,
             edge_order: int = 1) -> Array | tuple[Array, ...]:  # fmt: skip
    """The gradient of sampled values: second-order central differences inside, first- or
    second-order one-sided differences at the edges, as NumPy.

    Args:
      f: the samples (bool and integers become the default float).
      *varargs: the spacing: none (1 everywhere), one scalar for every axis, or one per axis, each
        a scalar step or a 1-d array of the coordinates along that axis.
      axis: the axis or axes to differentiate along (None: all).
      edge_order: 1 or 2, the accuracy at the edges; each axis needs edge_order + 1 samples.

    Returns:
      One array of f's shape per axis: a single array when one axis is asked for, else a tuple.

    >>> enp.gradient(enp.asarray([1.0, 2.0, 4.0, 7.0, 11.0])).tolist()
    [1.0, 1.5, 2.5, 3.5, 4.0]
    >>> [g.tolist() for g in enp.gradient(enp.asarray([[1.0, 2.0, 6.0], [3.0, 4.0, 5.0]]))]
    [[[2.0, 2.0, -1.0], [2.0, 2.0, -1.0]], [[1.0, 2.5, 4.0], [1.0, 1.0, 1.0]]]
    """
    (x,) = promote_inexact("gradient", f)
    if edge_order not in (1, 2):
        raise InvalidArgumentError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    axes = tuple(range(x.ndim)) if axis is None else canonical_axes("gradient", axis, x.ndim)
    if axis is not None and not isinstance(axis, (int, np.integer)):
        axes = tuple(normalize_axis("gradient", operator.index(a), x.ndim) for a in axis)
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and asarray(varargs[0]).ndim == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise InvalidArgumentError(
            f"gradient: {len(varargs)} spacings for {len(axes)} axes; pass none, one scalar, or one per axis"
        )
    out = []
    for ax, h in zip(axes, spacing):
        n = x.shape[ax]
        if n < edge_order + 1:
            raise ShapeError(f"gradient: axis {ax} of shape {x.shape} has {n} samples; edge_order={edge_order} needs "
                             f"at least {edge_order + 1}")  # fmt: skip
        if not isinstance(h, (int, float)):
            h = asarray(h)
            if h.ndim == 1:
                if h.shape[0] != n:
                    raise ShapeError(
                        f"gradient: coordinates of length {h.shape[0]} must match axis {ax} of shape {x.shape}"
                    )
                (h,) = promote_inexact("gradient", h)
                h = lax.sub(lax.slice_in_dim(h, 1, n), lax.slice_in_dim(h, 0, n - 1))
            elif h.ndim != 0:
                raise ShapeError(f"gradient: a spacing must be a scalar or 1-d coordinates, got shape {h.shape}")
            else:
                (h,) = promote_inexact("gradient", h)
            h = convert(h, dtypes.promote_types(h.dtype, x.dtype))
        out.append(_gradient_1(x, ax, h, edge_order))
    return out[0] if len(out) == 1 else tuple(out)


def ediff1d(ary: ArrayLike, to_end: ArrayLike | None = None, to_begin: ArrayLike | None = None) -> Array:
    """The differences of consecutive elements of the flattened array, with optional values before
    and after.

    Args:
      ary: the array (flattened; bool is rejected, as NumPy's subtract rejects it).
      to_end: values appended to the differences (flattened, cast to ary's dtype).
      to_begin: values put before the differences (flattened, cast to ary's dtype).

    Returns:
      A 1-d array of ary's dtype.

    >>> enp.ediff1d(enp.asarray([1, 2, 4, 7]), to_begin=-99).tolist()
    [-99, 1, 2, 3]
    """
    x = ravel(asarray(ary))
    if x.dtype == dtypes.bool_:
        raise DTypeError(
            "ediff1d: bool arrays have no subtraction (as in NumPy); use enp.diff for != or convert to int"
        )
    parts = [lax.sub(x[1:], x[:-1])]
    for value, at_end in ((to_begin, False), (to_end, True)):
        if value is None:
            continue
        v = asarray(value)
        if not dtypes.is_inexact(x.dtype) and dtypes.is_inexact(v.dtype) or (
                dtypes.is_complex(v.dtype) and not dtypes.is_complex(x.dtype)):  # fmt: skip
            raise DTypeError(f"ediff1d: {'to_end' if at_end else 'to_begin'} of dtype {v.dtype} cannot be cast safely "
                             f"to ary's dtype {x.dtype}")  # fmt: skip
        v = ravel(convert(v, x.dtype))
        parts = parts + [v] if at_end else [v] + parts
    return concatenate(parts) if len(parts) > 1 else parts[0]
