"""Activation functions with ``torch.nn.functional``'s names, arguments and derivatives.

Where PyTorch defines a derivative at a kink (``relu'(0) = 0``, ``leaky_relu'(0) = negative_slope``,
``hardtanh'`` zero at both ends, ...) the same one-sided choice is made here, by the comparison each
``enp.where`` uses. Functions with an exponential are written so that no branch overflows, even the branch
``where`` discards: its derivative would be ``0 * inf = nan``. NaN inputs pass through as in PyTorch.
"""

from __future__ import annotations

import math

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike, floating_input
from ember.scipy.special import erf

__all__ = ["celu", "elu", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu",
           "log_softmax", "logsigmoid", "mish", "one_hot", "prelu", "relu", "relu6", "selu", "sigmoid", "silu",
           "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh", "tanhshrink", "threshold"]  # fmt: skip

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _real(op: str, x: ArrayLike) -> Array:
    """``x`` as an ember array of a real number type (integers allowed, as by PyTorch's clamping kernels)."""
    x = enp.asarray(x)
    if x.dtype == enp.bool_ or not (enp.issubdtype(x.dtype, enp.integer) or enp.issubdtype(x.dtype, enp.floating)):
        raise DTypeError(f"{op}: expected a floating or integer input, got {x.dtype} of shape {x.shape}; "
                         f"convert it first, e.g. {op}(x.astype(enp.float32))")  # fmt: skip
    return x


def _nonpositive(x: Array) -> Array:
    """``x`` where ``x <= 0`` (NaN kept), 0 elsewhere: the safe argument of an exponential branch."""
    return enp.where(x > 0, enp.zeros_like(x), x)


# --- rectifiers -----------------------------------------------------------------------------------------


def relu(input: ArrayLike, inplace: bool = False) -> Array:
    """``max(x, 0)``, as ``torch.nn.functional.relu`` (derivative 0 at 0; integer inputs allowed).

    ``inplace`` is accepted for ported code and ignored: ember arrays are immutable.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.relu(enp.array([-1.0, 0.0, 2.0])).tolist()
    [0.0, 0.0, 2.0]
    """
    x = _real("relu", input)
    return enp.where(x <= 0, enp.zeros_like(x), x)


def relu6(input: ArrayLike, inplace: bool = False) -> Array:
    """``min(max(x, 0), 6)``, as ``torch.nn.functional.relu6`` (derivative 0 at 0 and at 6).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.relu6(enp.array([-1.0, 3.0, 7.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return hardtanh(input, 0.0, 6.0)


def leaky_relu(input: ArrayLike, negative_slope: float = 0.01, inplace: bool = False) -> Array:
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise, as ``torch.nn.functional.leaky_relu``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.leaky_relu(enp.array([-2.0, 3.0]), 0.5).tolist()
    [-1.0, 3.0]
    """
    x = floating_input("leaky_relu", input)
    return enp.where(x > 0, x, x * negative_slope)


def elu(input: ArrayLike, alpha: float = 1.0, inplace: bool = False) -> Array:
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise, as ``torch.nn.functional.elu``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.elu(enp.array([-1.0, 2.0]), alpha=2.0).round(4))
    [-1.2642  2.    ]
    """
    x = floating_input("elu", input)
    return enp.where(x > 0, x, alpha * enp.expm1(_nonpositive(x)))


def selu(input: ArrayLike, inplace: bool = False) -> Array:
    """``scale * elu(x, alpha)`` with the self-normalising constants, as ``torch.nn.functional.selu``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.selu(enp.array([-1.0, 1.0])).round(4))
    [-1.1113  1.0507]
    """
    return _SELU_SCALE * elu(floating_input("selu", input), _SELU_ALPHA)


def celu(input: ArrayLike, alpha: float = 1.0, inplace: bool = False) -> Array:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``, as ``torch.nn.functional.celu``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.celu(enp.array([-1.0, 1.0]), alpha=0.5).round(4))
    [-0.4323  1.    ]
    """
    x = floating_input("celu", input)
    if alpha == 0:
        raise InvalidArgumentError("celu: alpha=0 divides by zero (the negative part is alpha * expm1(x / alpha)); "
                                   "use a nonzero alpha, or relu for the alpha -> 0 limit")  # fmt: skip
    return enp.where(x > 0, x, alpha * enp.expm1(_nonpositive(x) / alpha))


def prelu(input: ArrayLike, weight: ArrayLike) -> Array:
    """``x`` for ``x > 0``, ``weight * x`` otherwise, a slope per channel (dim 1), as ``torch.nn.functional.prelu``.

    Args:
        input: any shape but 0-d when ``weight`` has more than one element; the channels are dimension 1.
        weight: a scalar or shape ``(1,)`` (one slope for all), or ``(channels,)``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.prelu(enp.array([[-1.0, -1.0], [2.0, -4.0]]), enp.array([0.25, 0.5])).tolist()
    [[-0.25, -0.5], [2.0, -2.0]]
    """
    x, w = floating_input("prelu", input), enp.asarray(weight)
    if w.ndim > 1:
        raise ShapeError(
            f"prelu: weight must be a scalar or 1-d (one slope per channel), got shape {w.shape} ({w.dtype})")
    if w.size != 1:
        channels = x.shape[1] if x.ndim >= 2 else 1
        if x.ndim == 0 or w.size != channels:
            raise ShapeError(
                f"prelu: a weight of {w.size} slopes needs an input with {w.size} channels in dimension 1, got shape "
                f"{x.shape} ({x.dtype}); pass one slope (shape (1,)) or reshape the input to (batch, channels, ...)")
        w = w.reshape((w.size,) + (1,) * (x.ndim - 2))
    else:
        w = w.reshape(())
    return enp.where(x > 0, x, w * x)


def threshold(input: ArrayLike, threshold: float, value: float, inplace: bool = False) -> Array:
    """``x`` where ``x > threshold``, ``value`` elsewhere, as ``torch.nn.functional.threshold``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.threshold(enp.array([0.5, 1.0, 2.0]), 1.0, -3.0).tolist()
    [-3.0, -3.0, 2.0]
    """
    x = _real("threshold", input)
    return enp.where(x <= threshold, enp.full_like(x, value), x)


# --- clamped and shrinking ----------------------------------------------------------------------------


def hardtanh(input: ArrayLike, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Array:
    """``x`` clipped to ``[min_val, max_val]``, as ``torch.nn.functional.hardtanh`` (derivative 0 at both ends).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.hardtanh(enp.array([-3.0, 0.5, 3.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    x = _real("hardtanh", input)
    if min_val > max_val:
        raise InvalidArgumentError(f"hardtanh: min_val={min_val} is greater than max_val={max_val}; swap them")
    inside = (x > min_val) & (x < max_val)
    clipped = lax.stop_gradient(enp.clip(x, min_val, max_val))
    if clipped.dtype != x.dtype:  # float bounds on an integer input
        clipped = clipped.astype(x.dtype)
    return enp.where(inside, x, clipped)


def hardsigmoid(input: ArrayLike, inplace: bool = False) -> Array:
    """``relu6(x + 3) / 6``, as ``torch.nn.functional.hardsigmoid``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.hardsigmoid(enp.array([-4.0, 0.0, 1.5, 4.0])).tolist()
    [0.0, 0.5, 0.75, 1.0]
    """
    x = floating_input("hardsigmoid", input)
    return hardtanh(x + 3, 0.0, 6.0) / 6


def hardswish(input: ArrayLike, inplace: bool = False) -> Array:
    """``x * relu6(x + 3) / 6``, as ``torch.nn.functional.hardswish`` (derivative 0 at -3 and 1 at 3).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.hardswish(enp.array([-4.0, 0.0, 1.5, 4.0])).tolist()
    [-0.0, 0.0, 1.125, 4.0]
    """
    x = floating_input("hardswish", input)
    return x * hardsigmoid(x)


def _check_lambd(op: str, lambd: float) -> None:
    if lambd < 0:
        raise InvalidArgumentError(f"{op}: lambd={lambd} is negative; the shrinkage threshold must be >= 0")


def softshrink(input: ArrayLike, lambd: float = 0.5) -> Array:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between, as ``torch.nn.functional.softshrink``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.softshrink(enp.array([-2.0, 0.25, 1.0])).tolist()
    [-1.5, 0.0, 0.5]
    """
    x = floating_input("softshrink", input)
    _check_lambd("softshrink", lambd)
    return enp.where(x > lambd, x - lambd, enp.where(x < -lambd, x + lambd, x * 0))


def hardshrink(input: ArrayLike, lambd: float = 0.5) -> Array:
    """``x`` where ``|x| > lambd``, 0 elsewhere, as ``torch.nn.functional.hardshrink``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.hardshrink(enp.array([-2.0, 0.25, 1.0])).tolist()
    [-2.0, 0.0, 1.0]
    """
    x = floating_input("hardshrink", input)
    _check_lambd("hardshrink", lambd)
    return enp.where((x >= -lambd) & (x <= lambd), enp.zeros_like(x), x)


def tanhshrink(input: ArrayLike) -> Array:
    """``x - tanh(x)``, as ``torch.nn.functional.tanhshrink``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.tanhshrink(enp.array([0.0, 1.0])).round(4))
    [0.     0.2384]
    """
    x = floating_input("tanhshrink", input)
    return x - enp.tanh(x)


# --- smooth -----------------------------------------------------------------------------------------------


def sigmoid(input: ArrayLike) -> Array:
    """``1 / (1 + exp(-x))``, as ``torch.sigmoid``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.sigmoid(enp.array([0.0, 2.0])).round(4))
    [0.5    0.8808]
    """
    return lax.logistic(floating_input("sigmoid", input))


def tanh(input: ArrayLike) -> Array:
    """The hyperbolic tangent, as ``torch.tanh``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.tanh(enp.array([0.0, 1.0])).round(4))
    [0.     0.7616]
    """
    return enp.tanh(floating_input("tanh", input))


def logsigmoid(input: ArrayLike) -> Array:
    """``log(sigmoid(x))``, finite and accurate for any ``x``, as ``torch.nn.functional.logsigmoid``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.logsigmoid(enp.array([-200.0, 0.0])).round(4))
    [-200.        -0.6931]
    """
    x = floating_input("logsigmoid", input)
    neg = x < 0
    zero = enp.zeros_like(x)
    # log(sigmoid(x)) = x - log1p(exp(x)) for x < 0, -log1p(exp(-x)) otherwise: no exp overflows in either branch
    below = x - enp.log1p(enp.exp(enp.where(neg, x, zero)))
    above = -enp.log1p(enp.exp(-enp.where(neg, zero, x)))
    return enp.where(neg, below, above)


def softplus(input: ArrayLike, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold``, as ``torch.nn.functional.softplus``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.softplus(enp.array([-1.0, 0.0, 30.0])).round(4))
    [ 0.3133  0.6931 30.    ]
    """
    x = floating_input("softplus", input)
    bx = x * beta
    linear = bx > threshold
    return enp.where(linear, x, enp.log1p(enp.exp(enp.where(linear, enp.zeros_like(bx), bx))) / beta)


def softsign(input: ArrayLike) -> Array:
    """``x / (1 + |x|)``, as ``torch.nn.functional.softsign``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.softsign(enp.array([-3.0, 1.0])).tolist()
    [-0.75, 0.5]
    """
    x = floating_input("softsign", input)
    return x / (1 + enp.abs(x))


def silu(input: ArrayLike, inplace: bool = False) -> Array:
    """``x * sigmoid(x)`` (swish), as ``torch.nn.functional.silu``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.silu(enp.array([-1.0, 1.0])).round(4))
    [-0.2689  0.7311]
    """
    x = floating_input("silu", input)
    return x * lax.logistic(x)


def mish(input: ArrayLike, inplace: bool = False) -> Array:
    """``x * tanh(softplus(x))``, as ``torch.nn.functional.mish``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.mish(enp.array([-1.0, 1.0])).round(4))
    [-0.3034  0.8651]
    """
    x = floating_input("mish", input)
    return x * enp.tanh(softplus(x))


def gelu(input: ArrayLike, approximate: str = "none") -> Array:
    """``x * Phi(x)`` (Phi the standard normal CDF), or its tanh approximation, as ``torch.nn.functional.gelu``.

    Args:
        input: a floating array.
        approximate: ``"none"`` (the exact form, with erf) or ``"tanh"``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.gelu(enp.array([-1.0, 1.0])).round(4))
    [-0.1587  0.8413]
    >>> print(F.gelu(enp.array([-1.0, 1.0]), approximate="tanh").round(4))
    [-0.1588  0.8412]
    """
    x = floating_input("gelu", input)
    if approximate == "none":
        return 0.5 * x * (1 + erf(x * (1 / math.sqrt(2))))
    if approximate == "tanh":
        return 0.5 * x * (1 + enp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))
    raise InvalidArgumentError(f"gelu: approximate={approximate!r} is not one of 'none' (exact, with erf) or 'tanh'")


def glu(input: ArrayLike, dim: int = -1) -> Array:
    """``a * sigmoid(b)`` for the halves ``a, b`` of ``input`` along ``dim``, as ``torch.nn.functional.glu``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> print(F.glu(enp.array([[1.0, 2.0, 0.0, 100.0]])).round(4))
    [[0.5 2. ]]
    """
    x = floating_input("glu", input)
    if x.ndim == 0:
        raise ShapeError(
            f"glu: a 0-d input ({x.dtype}) has no dimension to halve; pass an array with at least one dimension")
    if not -x.ndim <= dim < x.ndim:
        raise ShapeError(f"glu: dim={dim} is out of range for an input of shape {x.shape} ({x.dtype})")
    if x.shape[dim] % 2:
        raise ShapeError(f"glu: dimension {dim} of the input, of shape {x.shape} ({x.dtype}), has odd size "
                         f"{x.shape[dim]}; it is halved into a value and a gate, so it must be even")  # fmt: skip
    a, b = enp.split(x, 2, axis=dim)
    return a * lax.logistic(b)


# --- normalised exponentials ------------------------------------------------------------------------------


def _softmax_input(op: str, input: ArrayLike, dim: int | None, dtype) -> tuple[Array, int]:
    x = enp.asarray(input)
    if dtype is not None:
        x = x.astype(dtype)
    x = floating_input(op, x)
    if dim is None:
        # PyTorch's legacy choice when dim is not given (torch warns; ported code relies on it)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    ndim = max(x.ndim, 1)
    if not -ndim <= dim < ndim:
        raise ShapeError(f"{op}: dim={dim} is out of range for an input of shape {x.shape} ({x.dtype}); "
                         f"use a dim in [{-ndim}, {ndim - 1}]")  # fmt: skip
    return x, dim % ndim


def _shifted(x: Array, dim: int) -> Array:
    """``x - max(x)`` along ``dim``; the max is a constant to autodiff (the result does not depend on it)."""
    if x.ndim == 0:
        return x - lax.stop_gradient(x)
    return x - lax.stop_gradient(enp.max(x, axis=dim, keepdims=True))


def softmax(input: ArrayLike, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Array:
    """``exp(x) / sum(exp(x))`` along ``dim``, as ``torch.nn.functional.softmax``.

    Args:
        input: a floating array (or any, with ``dtype=``).
        dim: the dimension that sums to 1. ``None`` takes PyTorch's legacy choice: 0 for 0-, 1- and 3-d
            input, 1 otherwise (PyTorch warns about it; pass ``dim`` explicitly).
        dtype: cast the input to this dtype first (to compute a float16 softmax in float32, say).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.softmax(enp.array([0.0, 1000.0, 1000.0]), dim=0).tolist()
    [0.0, 0.5, 0.5]
    """
    x, dim = _softmax_input("softmax", input, dim, dtype)
    if x.size == 0:
        return x
    e = enp.exp(_shifted(x, dim))
    return e / (enp.sum(e, axis=dim, keepdims=True) if x.ndim else e)


def log_softmax(input: ArrayLike, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Array:
    """``x - log(sum(exp(x)))`` along ``dim``, finite for large ``x``, as ``torch.nn.functional.log_softmax``.

    ``dim`` and ``dtype`` as for :func:`softmax`.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.log_softmax(enp.array([0.0, 1e4]), dim=0).tolist()
    [-10000.0, 0.0]
    """
    x, dim = _softmax_input("log_softmax", input, dim, dtype)
    if x.size == 0:
        return x
    s = _shifted(x, dim)
    return s - (enp.log(enp.sum(enp.exp(s), axis=dim, keepdims=True)) if x.ndim else enp.log(enp.exp(s)))


def softmin(input: ArrayLike, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Array:
    """``softmax(-x)`` along ``dim``, as ``torch.nn.functional.softmin``; ``dim`` and ``dtype`` as for :func:`softmax`.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.softmin(enp.array([0.0, 1000.0]), dim=0).tolist()
    [1.0, 0.0]
    """
    x, dim = _softmax_input("softmin", input, dim, dtype)
    return softmax(-x, dim)


# --- one_hot ----------------------------------------------------------------------------------------------


def one_hot(tensor: ArrayLike, num_classes: int = -1) -> Array:
    """Class indices to one-hot rows: ``out[..., c] = (tensor[...] == c)``, as ``torch.nn.functional.one_hot``.

    Args:
        tensor: an integer array of class indices in ``[0, num_classes)``.
        num_classes: the length of the new last dimension; ``-1`` takes ``max(tensor) + 1``, which needs the
            values, so under ``jit`` (or ``vmap``) pass it explicitly.

    Returns:
        an array of the default integer dtype with shape ``tensor.shape + (num_classes,)``. Class values
        out of range raise when they are known; under ``jit`` they give a row of zeros.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.one_hot(enp.array([0, 2])).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    x = enp.asarray(tensor)
    if x.dtype == enp.bool_ or not enp.issubdtype(x.dtype, enp.integer):
        raise DTypeError(f"one_hot: expected an integer array of class indices, got {x.dtype} of shape {x.shape}; "
                         "convert it with tensor.astype(enp.int32)")  # fmt: skip
    num_classes = int(num_classes)
    if num_classes < -1:
        raise InvalidArgumentError(f"one_hot: num_classes={num_classes}; pass a number of classes >= 0, or -1 to "
                                   "infer it from the values")  # fmt: skip
    try:
        low, high = (int(enp.min(x)), int(enp.max(x))) if x.size else (0, -1)
    except ConcretizationError:
        if num_classes == -1:
            raise ConcretizationError(
                f"one_hot: num_classes=-1 infers the number of classes from the values, but the class indices "
                f"{x.dtype}{list(x.shape)} are traced (inside jit or vmap); pass num_classes= explicitly") from None
        low, high = 0, -1
    if num_classes == -1:
        if x.size == 0:
            raise InvalidArgumentError(
                "one_hot: cannot infer the number of classes from an empty array; pass num_classes=")
        num_classes = high + 1
    if low < 0:
        raise InvalidArgumentError(f"one_hot: class values must be non-negative, got {low}")
    if high >= num_classes:
        raise InvalidArgumentError(f"one_hot: class values must be smaller than num_classes={num_classes}, got {high}")
    return (x[..., None] == enp.arange(num_classes, dtype=x.dtype)).astype(int)
