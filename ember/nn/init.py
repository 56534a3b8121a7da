"""``ember.nn.init``: PyTorch's weight initialisers, as pure functions that return a new array.

Each function takes what PyTorch's takes, with ``tensor`` either an array (only its shape and dtype are
used) or a shape tuple (then ``dtype=``, default float32), and the random ones a ``key``. Nothing is
modified in place: ember arrays are immutable, so ``w = init.xavier_uniform(w, key=k)`` replaces ``w``.
PyTorch's in-place spellings (``xavier_uniform_``, ``zeros_``, ...) are aliases, so ported code runs once
its result is assigned; they too return the new array and leave their argument alone.

>>> import ember
>>> from ember.nn import init
>>> w = init.kaiming_uniform((256, 128), nonlinearity="relu", key=ember.random.key(0))
>>> w.shape, bool(abs(w).max() <= (6 / 128) ** 0.5)
((256, 128), True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

import ember.numpy as enp
from ember import random
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.scipy.special import erfinv

__all__ = ["calculate_fan_in_and_fan_out", "calculate_gain", "constant", "constant_", "dirac", "dirac_", "eye", "eye_",
           "kaiming_normal", "kaiming_normal_", "kaiming_uniform", "kaiming_uniform_", "normal", "normal_", "ones",
           "ones_", "orthogonal", "orthogonal_", "sparse", "sparse_", "trunc_normal", "trunc_normal_", "uniform",
           "uniform_", "xavier_normal", "xavier_normal_", "xavier_uniform", "xavier_uniform_", "zeros",
           "zeros_"]  # fmt: skip

# An array whose shape and dtype are used, or a shape.
TensorLike = Union[Array, np.ndarray, Sequence[int]]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "sigmoid")  # fmt: skip


def _spec(tensor: TensorLike, dtype: Any) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype to build: an array's own (``dtype=`` overrides), or a shape with ``dtype`` (float32)."""
    if isinstance(tensor, (tuple, list)):
        shape = tuple(int(d) for d in tensor)
        return shape, np.dtype(enp.float32 if dtype is None else dtype)
    if isinstance(tensor, int):
        return (tensor,), np.dtype(enp.float32 if dtype is None else dtype)
    if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
        raise InvalidArgumentError(f"nn.init: expected an array or a shape tuple, got {type(tensor).__name__}")
    return tuple(tensor.shape), np.dtype(tensor.dtype if dtype is None else dtype)


def _float_spec(op: str, tensor: TensorLike, dtype: Any) -> tuple[tuple[int, ...], np.dtype]:
    shape, dt = _spec(tensor, dtype)
    if not enp.issubdtype(dt, enp.floating):
        raise DTypeError(f"nn.init.{op}: draws random floats, but the target dtype is {dt} (shape {shape}); "
                         f"initialise a floating array (pass dtype=enp.float32) and cast afterwards")  # fmt: skip
    return shape, dt


# --- gains and fans -----------------------------------------------------------------------------------


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """PyTorch's recommended gain for a nonlinearity (the factor on the std of xavier/kaiming initialisers).

    Args:
        nonlinearity: ``"linear"``, ``"conv1d"`` ... ``"conv_transpose3d"``, ``"sigmoid"`` (1), ``"tanh"`` (5/3),
            ``"relu"`` (sqrt(2)), ``"leaky_relu"`` (sqrt(2 / (1 + slope**2))) or ``"selu"`` (3/4).
        param: the negative slope for ``"leaky_relu"`` (default 0.01).

    >>> from ember.nn import init
    >>> init.calculate_gain("tanh"), init.calculate_gain("leaky_relu", 1)
    (1.6666666666666667, 1.0)
    """
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise InvalidArgumentError(f"calculate_gain: negative_slope {param!r} is not a valid number; pass a float")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise InvalidArgumentError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; use one of "
                               f"{', '.join(_LINEAR)}, tanh, relu, leaky_relu, selu")  # fmt: skip


def calculate_fan_in_and_fan_out(tensor: TensorLike) -> tuple[int, int]:
    """``(fan_in, fan_out)`` as PyTorch counts them: ``shape[1]`` and ``shape[0]`` times the receptive field size.

    >>> from ember.nn import init
    >>> init.calculate_fan_in_and_fan_out((16, 3, 5, 5))
    (75, 400)
    """
    shape, _ = _spec(tensor, None)
    if len(shape) < 2:
        raise ShapeError(f"nn.init: fan in and fan out cannot be computed for a weight of shape {shape}, with fewer "
                         f"than 2 dimensions; use uniform/normal with an explicit bound or std")  # fmt: skip
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(op: str, shape: tuple[int, ...], mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise InvalidArgumentError(f"nn.init.{op}: mode {mode!r} is not supported; use 'fan_in' or 'fan_out'")
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    return fan_in if mode == "fan_in" else fan_out


# --- plain distributions and constants ----------------------------------------------------------------


def uniform(tensor: TensorLike, a: float = 0.0, b: float = 1.0, *, key: Array, dtype: Any = None) -> Array:
    """Values drawn from U(a, b), as ``torch.nn.init.uniform_`` (a new array).

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.uniform((1000,), -2.0, 2.0, key=ember.random.key(0))
    >>> bool((w >= -2).all() and (w < 2).all())
    True
    """
    shape, dt = _float_spec("uniform", tensor, dtype)
    return random.uniform(key, shape, dtype=dt, minval=a, maxval=b)


def normal(tensor: TensorLike, mean: float = 0.0, std: float = 1.0, *, key: Array, dtype: Any = None) -> Array:
    """Values drawn from N(mean, std**2), as ``torch.nn.init.normal_`` (a new array).

    >>> import ember
    >>> from ember.nn import init
    >>> init.normal((2, 3), 5.0, 0.1, key=ember.random.key(0)).shape
    (2, 3)
    """
    shape, dt = _float_spec("normal", tensor, dtype)
    return mean + std * random.normal(key, shape, dtype=dt)


def trunc_normal(tensor: TensorLike, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, *,
                 key: Array, dtype: Any = None) -> Array:  # fmt: skip
    """N(mean, std**2) truncated to ``[a, b]`` (absolute bounds, not std units), as ``torch.nn.init.trunc_normal_``.

    Drawn as PyTorch does, by the inverse CDF of a uniform draw, then clipped to ``[a, b]``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.trunc_normal((1000,), std=0.02, a=-0.04, b=0.04, key=ember.random.key(0))
    >>> bool((abs(w) <= 0.04).all())
    True
    """
    shape, dt = _float_spec("trunc_normal", tensor, dtype)

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = cdf((a - mean) / std), cdf((b - mean) / std)
    u = random.uniform(key, shape, dtype=dt, minval=2 * low - 1, maxval=2 * high - 1)
    return enp.clip(erfinv(u) * (std * math.sqrt(2.0)) + mean, a, b)


def constant(tensor: TensorLike, val: float, *, dtype: Any = None) -> Array:
    """An array filled with ``val``, as ``torch.nn.init.constant_``.

    >>> from ember.nn import init
    >>> init.constant((2,), 0.5).tolist()
    [0.5, 0.5]
    """
    shape, dt = _spec(tensor, dtype)
    return enp.full(shape, val, dtype=dt)


def zeros(tensor: TensorLike, *, dtype: Any = None) -> Array:
    """An array of zeros, as ``torch.nn.init.zeros_``.

    >>> from ember.nn import init
    >>> init.zeros((2,)).tolist()
    [0.0, 0.0]
    """
    return constant(tensor, 0, dtype=dtype)


def ones(tensor: TensorLike, *, dtype: Any = None) -> Array:
    """An array of ones, as ``torch.nn.init.ones_``.

    >>> from ember.nn import init
    >>> init.ones((2,)).tolist()
    [1.0, 1.0]
    """
    return constant(tensor, 1, dtype=dtype)


def eye(tensor: TensorLike, *, dtype: Any = None) -> Array:
    """The identity matrix of a 2-d shape (ones on the diagonal), as ``torch.nn.init.eye_``.

    >>> from ember.nn import init
    >>> init.eye((2, 3)).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    shape, dt = _spec(tensor, dtype)
    if len(shape) != 2:
        raise ShapeError(f"nn.init.eye: only 2-d weights are supported, got shape {shape}")
    return enp.eye(shape[0], shape[1], dtype=dt)


def dirac(tensor: TensorLike, groups: int = 1, *, dtype: Any = None) -> Array:
    """The Dirac delta for a 3-, 4- or 5-d convolution weight (the identity convolution), as ``torch.nn.init.dirac_``.

    With ``groups``, the output channels are split into that many groups and each is the identity on its
    input channels.

    >>> from ember.nn import init
    >>> init.dirac((2, 2, 3))[:, :, 1].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    shape, dt = _spec(tensor, dtype)
    if len(shape) not in (3, 4, 5):
        raise ShapeError(f"nn.init.dirac: only 3-, 4- or 5-d convolution weights are supported, got shape {shape}")
    if shape[0] % groups:
        raise ShapeError(f"nn.init.dirac: dimension 0 of shape {shape} ({shape[0]} output channels) must be "
                         f"divisible by groups={groups}")  # fmt: skip
    per_group = shape[0] // groups
    channels = np.arange(min(per_group, shape[1]))
    out_channels = (np.arange(groups)[:, None] * per_group + channels).ravel()
    in_channels = np.tile(channels, groups)
    centre = tuple(s // 2 for s in shape[2:])
    delta = np.zeros(shape, dtype=np.bool_)  # built from the shape alone: a constant
    delta[(out_channels, in_channels, *centre)] = True
    return enp.asarray(delta).astype(dt)


# --- scaled by fan ------------------------------------------------------------------------------------------


def xavier_uniform(tensor: TensorLike, gain: float = 1.0, *, key: Array, dtype: Any = None) -> Array:
    """U(-b, b) with ``b = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot), as ``torch.nn.init.xavier_uniform_``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.xavier_uniform((300, 200), key=ember.random.key(0))
    >>> bool(abs(w).max() <= (6 / 500) ** 0.5)
    True
    """
    shape, dt = _float_spec("xavier_uniform", tensor, dtype)
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return random.uniform(key, shape, dtype=dt, minval=-bound, maxval=bound)


def xavier_normal(tensor: TensorLike, gain: float = 1.0, *, key: Array, dtype: Any = None) -> Array:
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``, as ``torch.nn.init.xavier_normal_``.

    >>> import ember
    >>> from ember.nn import init
    >>> init.xavier_normal((3, 4), key=ember.random.key(0)).shape
    (3, 4)
    """
    shape, dt = _float_spec("xavier_normal", tensor, dtype)
    fan_in, fan_out = calculate_fan_in_and_fan_out(shape)
    return normal(shape, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), key=key, dtype=dt)


def _kaiming_std(op: str, shape: tuple[int, ...], a: float, mode: str, nonlinearity: str) -> float:
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(op, shape, mode))


def kaiming_uniform(tensor: TensorLike, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", *,
                    key: Array, dtype: Any = None) -> Array:  # fmt: skip
    """U(-b, b) with ``b = gain * sqrt(3 / fan)`` (He), as ``torch.nn.init.kaiming_uniform_``.

    Args:
        tensor: the weight (or its shape).
        a: the negative slope of the leaky_relu that follows (used only when ``nonlinearity="leaky_relu"``).
        mode: ``"fan_in"`` (keeps the forward pass's variance) or ``"fan_out"`` (the backward pass's).
        nonlinearity: as for :func:`calculate_gain`.
        key: the random key.
        dtype: with a shape, the dtype (default float32).

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.kaiming_uniform((8, 4, 3, 3), mode="fan_out", nonlinearity="relu", key=ember.random.key(0))
    >>> bool(abs(w).max() <= (6 / 72) ** 0.5)
    True
    """
    shape, dt = _float_spec("kaiming_uniform", tensor, dtype)
    if 0 in shape:
        return enp.zeros(shape, dtype=dt)
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform", shape, a, mode, nonlinearity)
    return random.uniform(key, shape, dtype=dt, minval=-bound, maxval=bound)


def kaiming_normal(tensor: TensorLike, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", *,
                   key: Array, dtype: Any = None) -> Array:  # fmt: skip
    """N(0, std**2) with ``std = gain / sqrt(fan)`` (He), as ``torch.nn.init.kaiming_normal_``; arguments as
    :func:`kaiming_uniform`.

    >>> import ember
    >>> from ember.nn import init
    >>> init.kaiming_normal((3, 4), key=ember.random.key(0)).shape
    (3, 4)
    """
    shape, dt = _float_spec("kaiming_normal", tensor, dtype)
    if 0 in shape:
        return enp.zeros(shape, dtype=dt)
    return normal(shape, 0.0, _kaiming_std("kaiming_normal", shape, a, mode, nonlinearity), key=key, dtype=dt)


# --- structured -----------------------------------------------------------------------------------------------


def orthogonal(tensor: TensorLike, gain: float = 1, *, key: Array, dtype: Any = None) -> Array:
    """A (semi-)orthogonal matrix, times ``gain``, as ``torch.nn.init.orthogonal_``.

    The weight is viewed as ``(shape[0], prod(shape[1:]))``; a normal matrix of that shape (transposed
    when wide) is factored by QR and ``Q``'s columns signed by ``R``'s diagonal, which makes ``Q`` uniform
    over the orthogonal matrices. Rows (or columns, whichever are fewer) are orthonormal.

    >>> import ember, ember.numpy as enp
    >>> from ember.nn import init
    >>> q = init.orthogonal((3, 5), key=ember.random.key(0))
    >>> bool(enp.allclose(q @ q.T, enp.eye(3), atol=1e-5))
    True
    """
    shape, dt = _float_spec("orthogonal", tensor, dtype)
    if len(shape) < 2:
        raise ShapeError(f"nn.init.orthogonal: only weights with 2 or more dimensions are supported, got shape {shape}")
    if 0 in shape:
        return enp.zeros(shape, dtype=dt)
    rows = shape[0]
    cols = math.prod(shape) // rows
    flat = random.normal(key, (rows, cols) if rows >= cols else (cols, rows), dtype=dt)
    q, r = enp.linalg.qr(flat)
    q = q * enp.sign(enp.diagonal(r))
    if rows < cols:
        q = q.T
    return (gain * q).reshape(shape).astype(dt)


def sparse(tensor: TensorLike, sparsity: float, std: float = 0.01, *, key: Array, dtype: Any = None) -> Array:
    """N(0, std**2) with ``ceil(sparsity * rows)`` random zeros in each column, as ``torch.nn.init.sparse_``.

    >>> import ember
    >>> from ember.nn import init
    >>> w = init.sparse((10, 4), 0.3, key=ember.random.key(0))
    >>> (w == 0).sum(axis=0).tolist()
    [3, 3, 3, 3]
    """
    shape, dt = _float_spec("sparse", tensor, dtype)
    if len(shape) != 2:
        raise ShapeError(f"nn.init.sparse: only 2-d weights are supported, got shape {shape}")
    rows = shape[0]
    num_zeros = int(math.ceil(sparsity * rows))
    values_key, order_key = random.split(key)
    values = normal(shape, 0.0, std, key=values_key, dtype=dt)
    # each row's rank within its column under random scores: a random permutation of the rows per column
    rank = enp.argsort(enp.argsort(random.uniform(order_key, shape), axis=0), axis=0)
    return enp.where(rank < num_zeros, enp.zeros_like(values), values)


# PyTorch's in-place spellings: the same functions (they return the new array; nothing is modified).
uniform_ = uniform
normal_ = normal
trunc_normal_ = trunc_normal
constant_ = constant
zeros_ = zeros
ones_ = ones
eye_ = eye
dirac_ = dirac
xavier_uniform_ = xavier_uniform
xavier_normal_ = xavier_normal
kaiming_uniform_ = kaiming_uniform
kaiming_normal_ = kaiming_normal
orthogonal_ = orthogonal
sparse_ = sparse
