"""``Embedding``: a lookup table of learned vectors, as ``torch.nn.Embedding``."""

from __future__ import annotations

from typing import Any

import ember.numpy as enp
from ember import lax, random
from ember.core.array import Array
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._checks import describe
from ember.nn._module import Module
from ember.nn.functional._embedding import embedding, normalize_padding_idx

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) looked up by integer index, as ``torch.nn.Embedding``.

    Initialised as PyTorch: standard normal, with the ``padding_idx`` row zero.

    Args:
        num_embeddings: the number of rows.
        embedding_dim: the size of each row.
        padding_idx: a row whose gradient is zero (and which starts at zero); negative counts from the end.
        max_norm: rows looked up with a larger ``norm_type``-norm are rescaled to it (see
            ``nn.functional.embedding``: ember returns the rescaled rows and does not rewrite ``weight``).
        norm_type: the p of that norm.
        scale_grad_by_freq: divide the gradient of each row by its index's count in the input.
        sparse: PyTorch's sparse gradients; not supported (must be False).
        _weight: an initial weight to use instead of a random one (then ``key`` is not needed).
        _freeze: see ``from_pretrained``'s ``freeze``.
        key: the random key for the initial weight.
        dtype: the weight's dtype.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> emb = nn.Embedding(10, 3, padding_idx=0, key=ember.random.key(0))
    >>> emb, emb(enp.array([[0, 4]])).shape, emb.weight[0].tolist()
    (Embedding(10, 3, padding_idx=0), (1, 2, 3), [0.0, 0.0, 0.0])
    """

    weight: Array
    num_embeddings: int
    embedding_dim: int
    padding_idx: int | None
    max_norm: float | None
    norm_type: float
    scale_grad_by_freq: bool
    sparse: bool
    freeze: bool

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Array | None = None, _freeze: bool = False, *,
                 key: Array | None = None, dtype: Any = None) -> None:  # fmt: skip
        if sparse:
            raise InvalidArgumentError("Embedding: sparse=True (PyTorch's sparse gradients) is not supported; "
                                       "gradients are dense, pass sparse=False")  # fmt: skip
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = normalize_padding_idx("Embedding", padding_idx, self.num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse, self.freeze = bool(scale_grad_by_freq), False, bool(_freeze)
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is not None:
            weight = enp.asarray(_weight, dtype=dtype)
            if weight.shape != shape:
                raise ShapeError(f"Embedding: _weight must have shape {shape} (num_embeddings, embedding_dim), got "
                                 f"{describe(weight)}")  # fmt: skip
            self.weight = weight
            return
        if key is None:
            raise InvalidArgumentError("Embedding: its weight is random: pass key=ember.random.key(seed) (or a "
                                       "weight with Embedding.from_pretrained)")  # fmt: skip
        weight = random.normal(key, shape, dtype=dtype)
        if self.padding_idx is not None:
            weight = weight.at[self.padding_idx].set(0)
        self.weight = weight

    @classmethod
    def from_pretrained(cls, embeddings: Array, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:  # fmt: skip
        """An Embedding holding ``embeddings`` (2-D), as ``torch.nn.Embedding.from_pretrained``.

        ``freeze=True`` (PyTorch's ``requires_grad=False``) makes the layer stop the gradient of its weight,
        so ``grad`` gives zeros for it; to also leave it out of an optimizer, ``nn.partition`` the model with
        ``nn.trainable(model, frozen=lambda m: m.weight)``.

        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> emb = nn.Embedding.from_pretrained(enp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> emb(enp.array([1])).tolist()
        [[3.0, 4.0]]
        """
        embeddings = enp.asarray(embeddings)
        if embeddings.ndim != 2:
            raise ShapeError(f"Embedding.from_pretrained: embeddings must be 2-D (num_embeddings, embedding_dim), "
                             f"got shape {describe(embeddings)}")  # fmt: skip
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)  # fmt: skip

    def __call__(self, x: Array, *, key: Array | None = None) -> Array:
        weight = lax.stop_gradient(self.weight) if self.freeze else self.weight
        return embedding(x, weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s
