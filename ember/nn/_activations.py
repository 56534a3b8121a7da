"""Activation layers: ``torch.nn``'s activation modules, each a thin module over ``nn.functional``.

Every class but ``PReLU`` (which holds a learned slope) is an ``_Activation``: its fields are PyTorch's
constructor arguments, its call is ``_fn(x, **fields)``, and its repr prints the fields as PyTorch does.
``inplace=`` is accepted where PyTorch has it, for ported code, and otherwise ignored: ember arrays are
immutable, so nothing is ever modified in place.
"""

from __future__ import annotations

from typing import Any

import ember.numpy as enp
from ember.core.array import Array
from ember.nn._module import Module
from ember.nn.functional import _activations as F

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softmax",
           "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold"]  # fmt: skip


class _Activation(Module):
    """The shared body of the parameter-free activations: ``__call__`` and PyTorch's ``extra_repr``."""

    _fn = None  # the nn.functional function (unannotated: a class attribute, not a field)
    _show_inplace = True  # Hardsigmoid and Hardswish take inplace= but PyTorch does not print it
    _bare = False  # Softshrink and Hardshrink print their one argument without its name

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        return type(self)._fn(x, **self._options())

    def _options(self) -> dict[str, Any]:
        return {f.name: self.__dict__[f.name] for f in self._ember_fields if f.name != "inplace"}

    def extra_repr(self) -> str:
        options = self._options()
        parts = [repr(v) for v in options.values()] if self._bare else [f"{k}={v!r}" for k, v in options.items()]
        if self._show_inplace and self.__dict__.get("inplace"):
            parts.append("inplace=True")
        return ", ".join(parts)


class ReLU(_Activation):
    """``max(x, 0)``, as ``torch.nn.ReLU`` (see ``nn.functional.relu``).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.ReLU()(enp.array([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """

    inplace: bool = False
    _fn = staticmethod(F.relu)


class ReLU6(_Activation):
    """``min(max(x, 0), 6)``, as ``torch.nn.ReLU6``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.ReLU6()(enp.array([-1.0, 8.0])).tolist()
    [0.0, 6.0]
    """

    inplace: bool = False
    _fn = staticmethod(F.relu6)


class LeakyReLU(_Activation):
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise, as ``torch.nn.LeakyReLU``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.LeakyReLU(0.25)
    LeakyReLU(negative_slope=0.25)
    >>> nn.LeakyReLU(0.25)(enp.array([-2.0, 2.0])).tolist()
    [-0.5, 2.0]
    """

    negative_slope: float = 0.01
    inplace: bool = False
    _fn = staticmethod(F.leaky_relu)


class ELU(_Activation):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise, as ``torch.nn.ELU``.

    >>> from ember import nn
    >>> nn.ELU(alpha=2.0, inplace=True)
    ELU(alpha=2.0, inplace=True)
    """

    alpha: float = 1.0
    inplace: bool = False
    _fn = staticmethod(F.elu)


class SELU(_Activation):
    """The self-normalising ``scale * elu(x, alpha)``, as ``torch.nn.SELU``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> print(nn.SELU()(enp.array([-1.0, 1.0])).round(4))
    [-1.1113  1.0507]
    """

    inplace: bool = False
    _fn = staticmethod(F.selu)


class CELU(_Activation):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``, as ``torch.nn.CELU``.

    >>> from ember import nn
    >>> nn.CELU(0.5)
    CELU(alpha=0.5)
    """

    alpha: float = 1.0
    inplace: bool = False
    _fn = staticmethod(F.celu)


class GELU(_Activation):
    """``x * Phi(x)``, exact or with ``approximate="tanh"``, as ``torch.nn.GELU``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.GELU(approximate="tanh")
    GELU(approximate='tanh')
    >>> print(nn.GELU()(enp.array([-1.0, 1.0])).round(4))
    [-0.1587  0.8413]
    """

    approximate: str = "none"
    _fn = staticmethod(F.gelu)


class SiLU(_Activation):
    """``x * sigmoid(x)``, as ``torch.nn.SiLU``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.SiLU()(enp.array([0.0])).tolist()
    [0.0]
    """

    inplace: bool = False
    _fn = staticmethod(F.silu)


class Mish(_Activation):
    """``x * tanh(softplus(x))``, as ``torch.nn.Mish``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> print(nn.Mish()(enp.array([1.0])).round(4))
    [0.8651]
    """

    inplace: bool = False
    _fn = staticmethod(F.mish)


class Softplus(_Activation):
    """``log(1 + exp(beta * x)) / beta`` (linear above ``threshold``), as ``torch.nn.Softplus``.

    >>> from ember import nn
    >>> nn.Softplus(beta=2)
    Softplus(beta=2, threshold=20.0)
    """

    beta: float = 1.0
    threshold: float = 20.0
    _fn = staticmethod(F.softplus)


class Softsign(_Activation):
    """``x / (1 + |x|)``, as ``torch.nn.Softsign``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Softsign()(enp.array([-3.0])).tolist()
    [-0.75]
    """

    _fn = staticmethod(F.softsign)


class Sigmoid(_Activation):
    """``1 / (1 + exp(-x))``, as ``torch.nn.Sigmoid``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Sigmoid()(enp.array([0.0])).tolist()
    [0.5]
    """

    _fn = staticmethod(F.sigmoid)


class LogSigmoid(_Activation):
    """``log(sigmoid(x))``, finite for any ``x``, as ``torch.nn.LogSigmoid``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.LogSigmoid()(enp.array([-500.0])).tolist()
    [-500.0]
    """

    _fn = staticmethod(F.logsigmoid)


class Hardtanh(_Activation):
    """``x`` clipped to ``[min_val, max_val]``, as ``torch.nn.Hardtanh``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Hardtanh(-2, 3)
    Hardtanh(min_val=-2, max_val=3)
    >>> nn.Hardtanh(-2, 3)(enp.array([-5.0, 5.0])).tolist()
    [-2.0, 3.0]
    """

    min_val: float = -1.0
    max_val: float = 1.0
    inplace: bool = False
    _fn = staticmethod(F.hardtanh)


class Hardsigmoid(_Activation):
    """``relu6(x + 3) / 6``, as ``torch.nn.Hardsigmoid``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Hardsigmoid()(enp.array([0.0, 3.0])).tolist()
    [0.5, 1.0]
    """

    inplace: bool = False
    _fn = staticmethod(F.hardsigmoid)
    _show_inplace = False


class Hardswish(_Activation):
    """``x * relu6(x + 3) / 6``, as ``torch.nn.Hardswish``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Hardswish()(enp.array([1.5])).tolist()
    [1.125]
    """

    inplace: bool = False
    _fn = staticmethod(F.hardswish)
    _show_inplace = False


class Tanh(_Activation):
    """The hyperbolic tangent, as ``torch.nn.Tanh``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Tanh()(enp.array([0.0])).tolist()
    [0.0]
    """

    _fn = staticmethod(F.tanh)


class Tanhshrink(_Activation):
    """``x - tanh(x)``, as ``torch.nn.Tanhshrink``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Tanhshrink()(enp.array([0.0])).tolist()
    [0.0]
    """

    _fn = staticmethod(F.tanhshrink)


class Softshrink(_Activation):
    """``x -+ lambd`` outside ``[-lambd, lambd]``, 0 inside, as ``torch.nn.Softshrink``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Softshrink(1.0)
    Softshrink(1.0)
    >>> nn.Softshrink(1.0)(enp.array([-3.0, 0.5])).tolist()
    [-2.0, 0.0]
    """

    lambd: float = 0.5
    _fn = staticmethod(F.softshrink)
    _bare = True


class Hardshrink(_Activation):
    """``x`` outside ``[-lambd, lambd]``, 0 inside, as ``torch.nn.Hardshrink``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Hardshrink()
    Hardshrink(0.5)
    >>> nn.Hardshrink()(enp.array([-3.0, 0.5])).tolist()
    [-3.0, 0.0]
    """

    lambd: float = 0.5
    _fn = staticmethod(F.hardshrink)
    _bare = True


class Threshold(_Activation):
    """``x`` where ``x > threshold``, ``value`` elsewhere, as ``torch.nn.Threshold``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Threshold(0.5, -1.0)
    Threshold(threshold=0.5, value=-1.0)
    >>> nn.Threshold(0.5, -1.0)(enp.array([0.0, 2.0])).tolist()
    [-1.0, 2.0]
    """

    threshold: float
    value: float
    inplace: bool = False
    _fn = staticmethod(F.threshold)


class GLU(_Activation):
    """``a * sigmoid(b)`` for the halves of the input along ``dim``, as ``torch.nn.GLU``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.GLU()(enp.ones((2, 6))).shape
    (2, 3)
    """

    dim: int = -1
    _fn = staticmethod(F.glu)


class Softmax(_Activation):
    """``exp(x) / sum(exp(x))`` along ``dim``, as ``torch.nn.Softmax`` (``dim=None``: PyTorch's legacy choice).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Softmax(dim=-1)(enp.zeros((1, 4))).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """

    dim: int | None = None
    _fn = staticmethod(F.softmax)


class LogSoftmax(_Activation):
    """``x - logsumexp(x)`` along ``dim``, as ``torch.nn.LogSoftmax``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.LogSoftmax(dim=1)(enp.zeros((1, 2))).tolist()[0][0] == -float(enp.log(2.0))
    True
    """

    dim: int | None = None
    _fn = staticmethod(F.log_softmax)


class Softmin(_Activation):
    """``softmax(-x)`` along ``dim``, as ``torch.nn.Softmin``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.Softmin(dim=0)(enp.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    dim: int | None = None
    _fn = staticmethod(F.softmin)


class PReLU(Module):
    """``x`` for ``x > 0``, ``weight * x`` otherwise, with a learned slope per channel, as ``torch.nn.PReLU``.

    Args:
        num_parameters: 1 (one slope shared by every channel) or the number of channels (dimension 1 of the input).
        init: the initial slope.
        dtype: the slope's dtype (default float32).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.PReLU(3)
    >>> layer, layer.weight.tolist()
    (PReLU(num_parameters=3), [0.25, 0.25, 0.25])
    >>> layer(-enp.ones((2, 3))).tolist()
    [[-0.25, -0.25, -0.25], [-0.25, -0.25, -0.25]]
    """

    weight: Array
    num_parameters: int

    def __init__(self, num_parameters: int = 1, init: float = 0.25, *, dtype: Any = None) -> None:
        self.num_parameters = int(num_parameters)
        self.weight = enp.full((self.num_parameters,), init, dtype=enp.float32 if dtype is None else dtype)

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
