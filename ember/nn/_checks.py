"""Checks the layers share: how an input is named in an error message, and the error for a missing random key.

Each layer keeps its own check (the expected layout differs from layer to layer); these pieces make the
messages read the same everywhere.
"""

from __future__ import annotations

from typing import Any

from ember.errors import InvalidArgumentError

__all__: list[str] = []


def describe(x: Any) -> str:
    """The shape and dtype of ``x`` as error messages print them; a non-array shows ``()`` and its type.

    >>> import ember.numpy as enp
    >>> describe(enp.zeros((2, 3))), describe([1.0])
    ('(2, 3) (float32)', '() (list)')
    """
    return f"{getattr(x, 'shape', ())} ({getattr(x, 'dtype', type(x).__name__)})"


def require_key(layer: str, what: str, key: Any, *, keyword: str = "key", note: str = "", hint: str = "") -> None:
    """Raise when a layer that draws random numbers (dropout in training mode) is called without a key.

    Args:
        layer: the layer's name, which starts the message.
        what: what draws the random numbers (``"dropout=0.3 between layers in training mode"``).
        key: the key the layer was given.
        keyword: the call's keyword for the key (``MultiheadAttention`` takes ``dropout_key``).
        note: said after "a fresh key each step", inside its parentheses.
        hint: a last way out, appended to the message.

    >>> require_key("GRU", "dropout=0.3 between layers in training mode", None)
    Traceback (most recent call last):
    ...
    ember.errors.InvalidArgumentError: GRU: dropout=0.3 between layers in training mode needs a random key: pass ...
    """
    if key is None:
        raise InvalidArgumentError(
            f"{layer}: {what} needs a random key: pass {keyword}=ember.random.key(seed) (a fresh key each step{note}), "
            f"or call model.eval() for deterministic results{hint}")
