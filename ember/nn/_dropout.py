"""Dropout layers: ``Dropout``, ``Dropout1d``, ``Dropout2d``, ``Dropout3d``, ``AlphaDropout`` and
``FeatureAlphaDropout``, as ``torch.nn``'s, taking the random ``key`` at call time.

In training mode (the default) a layer with ``0 < p < 1`` needs ``key=``; ``model.eval()`` makes it the
identity, with no key needed. ``Sequential`` splits its ``key`` among its layers.
"""

from __future__ import annotations

from ember.core.array import Array
from ember.errors import InvalidArgumentError
from ember.nn._module import Module
from ember.nn.functional._dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


class _DropoutBase(Module):
    """The shared body: PyTorch's ``p`` and ``inplace``, and a call of ``_fn(x, p, training, key=key)``."""

    p: float
    inplace: bool
    training: bool
    _fn = None  # the nn.functional function (unannotated: a class attribute, not a field)

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        if not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"{type(self).__name__}: dropout probability has to be between 0 and 1, "
                                       f"but got p={p}")  # fmt: skip
        self.p, self.inplace, self.training = float(p), bool(inplace), True

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        return type(self)._fn(x, self.p, self.training, key=key)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutBase):
    """Zero each element with probability ``p`` in training, scaling the rest by ``1 / (1 - p)``, as
    ``torch.nn.Dropout``; the identity in eval mode.

    Args:
        p: the probability of zeroing an element.
        inplace: accepted for PyTorch's signature; no effect (ember arrays are immutable).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> layer = nn.Dropout(0.5)
    >>> sorted(set(layer(enp.ones(100), key=ember.random.key(0)).tolist()))
    [0.0, 2.0]
    >>> layer.eval()(enp.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    _fn = staticmethod(dropout)


class Dropout1d(_DropoutBase):
    """Zero whole channels of an (N, C, L) or (C, L) input, as ``torch.nn.Dropout1d``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> nn.Dropout1d(0.5)(enp.ones((2, 3, 4)), key=ember.random.key(0)).shape
    (2, 3, 4)
    """

    _fn = staticmethod(dropout1d)


class Dropout2d(_DropoutBase):
    """Zero whole channels of an (N, C, H, W) or (C, H, W) input, as ``torch.nn.Dropout2d``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> nn.Dropout2d(0.5).eval()(enp.ones((1, 2, 2, 2))).shape
    (1, 2, 2, 2)
    """

    _fn = staticmethod(dropout2d)


class Dropout3d(_DropoutBase):
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input, as ``torch.nn.Dropout3d``.

    >>> from ember import nn
    >>> nn.Dropout3d(0.2)
    Dropout3d(p=0.2, inplace=False)
    """

    _fn = staticmethod(dropout3d)


class AlphaDropout(_DropoutBase):
    """Alpha dropout for SELU networks, as ``torch.nn.AlphaDropout`` (keeps zero mean and unit variance).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> nn.AlphaDropout(0.5)(enp.zeros(4), key=ember.random.key(0)).shape
    (4,)
    """

    _fn = staticmethod(alpha_dropout)


class FeatureAlphaDropout(_DropoutBase):
    """Alpha dropout of whole channels of an (N, C, *) input, as ``torch.nn.FeatureAlphaDropout``.

    >>> from ember import nn
    >>> nn.FeatureAlphaDropout(0.5)
    FeatureAlphaDropout(p=0.5, inplace=False)
    """

    _fn = staticmethod(feature_alpha_dropout)
