"""Loss modules (``CrossEntropyLoss``, ``MSELoss``, ...) and the distance modules ``CosineSimilarity`` and
``PairwiseDistance``: ``torch.nn``'s classes, each a thin module over its ``nn.functional`` function.

Every class is a ``_Loss``: its fields are PyTorch's constructor arguments (the arguments PyTorch takes
after its deprecated ``size_average`` / ``reduce`` are keyword-only, and those two are not taken: use
``reduction``), and calling it passes the fields to the function by name. A ``weight`` or ``pos_weight``
given at construction is an array field, so it is a pytree leaf (``named_parameters`` lists it; a filter
such as ``nn.trainable`` decides whether it is trained).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ember.numpy as enp
from ember.core.array import Array
from ember.errors import InvalidArgumentError
from ember.nn._module import Module
from ember.nn.functional import _distance as D
from ember.nn.functional import _losses as F

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CosineSimilarity", "CrossEntropyLoss",
           "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PairwiseDistance", "PoissonNLLLoss",
           "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss"]  # fmt: skip

_KW = dataclasses.KW_ONLY


class _Loss(Module):
    """The shared body: ``__call__(*inputs)`` is ``_fn(*inputs, **fields)``; arrays given for ``weight`` /
    ``pos_weight`` become ember arrays and ``reduction`` is checked when the module is built."""

    _fn = None  # the nn.functional function (unannotated: a class attribute, not a field)

    def __post_init__(self) -> None:
        for name in ("weight", "pos_weight"):
            value = self.__dict__.get(name)
            if value is not None and not isinstance(value, Array):
                object.__setattr__(self, name, enp.asarray(value))
        reduction = self.__dict__.get("reduction")
        allowed = ("none", "mean", "sum", "batchmean") if isinstance(self, KLDivLoss) else ("none", "mean", "sum")
        if reduction is not None and reduction not in allowed:
            raise InvalidArgumentError(f"{type(self).__name__}: reduction={reduction!r} is not one of "
                                       f"{', '.join(map(repr, allowed))}")  # fmt: skip

    def __call__(self, *inputs: Any, key: Array | None = None) -> Array:
        options = {f.name: self.__dict__[f.name] for f in self._ember_fields}
        return type(self)._fn(*inputs, **options)

    def extra_repr(self) -> str:
        return ""  # PyTorch's loss and distance modules print no arguments: CrossEntropyLoss()


class CrossEntropyLoss(_Loss):
    """``nn.functional.cross_entropy`` as a module, as ``torch.nn.CrossEntropyLoss``: called as ``loss(input, target)``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> loss = nn.CrossEntropyLoss(weight=enp.array([1.0, 3.0]), label_smoothing=0.1)
    >>> round(loss(enp.array([[2.0, 0.0], [0.0, 2.0]]), enp.array([0, 1])).item(), 4)
    0.2269
    """

    weight: Array | None = None
    _: _KW
    ignore_index: int = -100
    reduction: str = "mean"
    label_smoothing: float = 0.0
    _fn = staticmethod(F.cross_entropy)


class NLLLoss(_Loss):
    """``nn.functional.nll_loss`` as a module, as ``torch.nn.NLLLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.NLLLoss(reduction="sum")(enp.array([[-1.0, -2.0]]), enp.array([1])).item()
    2.0
    """

    weight: Array | None = None
    _: _KW
    ignore_index: int = -100
    reduction: str = "mean"
    _fn = staticmethod(F.nll_loss)


class MSELoss(_Loss):
    """``nn.functional.mse_loss`` as a module, as ``torch.nn.MSELoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.MSELoss()(enp.array([1.0, 3.0]), enp.array([0.0, 0.0])).item()
    5.0
    """

    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.mse_loss)


class L1Loss(_Loss):
    """``nn.functional.l1_loss`` as a module, as ``torch.nn.L1Loss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.L1Loss(reduction="sum")(enp.array([1.0, -3.0]), enp.array([0.0, 0.0])).item()
    4.0
    """

    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.l1_loss)


class SmoothL1Loss(_Loss):
    """``nn.functional.smooth_l1_loss`` as a module, as ``torch.nn.SmoothL1Loss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.SmoothL1Loss(beta=2.0)(enp.array([1.0, 4.0]), enp.array([0.0, 0.0])).item()
    1.625
    """

    _: _KW
    reduction: str = "mean"
    beta: float = 1.0
    _fn = staticmethod(F.smooth_l1_loss)


class HuberLoss(_Loss):
    """``nn.functional.huber_loss`` as a module, as ``torch.nn.HuberLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.HuberLoss(delta=2.0)(enp.array([1.0, 4.0]), enp.array([0.0, 0.0])).item()
    3.25
    """

    reduction: str = "mean"
    delta: float = 1.0
    _fn = staticmethod(F.huber_loss)


class BCELoss(_Loss):
    """``nn.functional.binary_cross_entropy`` as a module, as ``torch.nn.BCELoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.BCELoss()(enp.array([0.5]), enp.array([0.0])).item()
    0.6931471824645996
    """

    weight: Array | None = None
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.binary_cross_entropy)


class BCEWithLogitsLoss(_Loss):
    """``nn.functional.binary_cross_entropy_with_logits`` as a module, as ``torch.nn.BCEWithLogitsLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> loss = nn.BCEWithLogitsLoss(pos_weight=enp.array([2.0]))
    >>> round(loss(enp.array([[0.0], [0.0]]), enp.array([[1.0], [0.0]])).item(), 4)
    1.0397
    """

    weight: Array | None = None
    _: _KW
    reduction: str = "mean"
    pos_weight: Array | None = None
    _fn = staticmethod(F.binary_cross_entropy_with_logits)


class KLDivLoss(_Loss):
    """``nn.functional.kl_div`` as a module, as ``torch.nn.KLDivLoss`` (``reduction='batchmean'`` for the true KL).

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.KLDivLoss(reduction="sum", log_target=True)(enp.array([0.0]), enp.array([0.0])).item()
    0.0
    """

    _: _KW
    reduction: str = "mean"
    log_target: bool = False
    _fn = staticmethod(F.kl_div)


class PoissonNLLLoss(_Loss):
    """``nn.functional.poisson_nll_loss`` as a module, as ``torch.nn.PoissonNLLLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.PoissonNLLLoss()(enp.array([0.0]), enp.array([1.0])).item()
    1.0
    """

    log_input: bool = True
    full: bool = False
    _: _KW
    eps: float = 1e-8
    reduction: str = "mean"
    _fn = staticmethod(F.poisson_nll_loss)


class GaussianNLLLoss(_Loss):
    """``nn.functional.gaussian_nll_loss`` as a module, as ``torch.nn.GaussianNLLLoss``: ``loss(input, target, var)``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.GaussianNLLLoss()(enp.array([2.0]), enp.array([0.0]), enp.array([1.0])).item()
    2.0
    """

    _: _KW
    full: bool = False
    eps: float = 1e-6
    reduction: str = "mean"
    _fn = staticmethod(F.gaussian_nll_loss)


class SoftMarginLoss(_Loss):
    """``nn.functional.soft_margin_loss`` as a module, as ``torch.nn.SoftMarginLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> round(nn.SoftMarginLoss()(enp.array([0.0]), enp.array([1.0])).item(), 4)
    0.6931
    """

    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.soft_margin_loss)


class MarginRankingLoss(_Loss):
    """``nn.functional.margin_ranking_loss`` as a module, as ``torch.nn.MarginRankingLoss``: ``loss(x1, x2, y)``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.MarginRankingLoss(margin=0.5)(enp.array([1.0]), enp.array([1.0]), enp.array([1.0])).item()
    0.5
    """

    margin: float = 0.0
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.margin_ranking_loss)


class HingeEmbeddingLoss(_Loss):
    """``nn.functional.hinge_embedding_loss`` as a module, as ``torch.nn.HingeEmbeddingLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.HingeEmbeddingLoss(margin=2.0)(enp.array([0.5]), enp.array([-1.0])).item()
    1.5
    """

    margin: float = 1.0
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.hinge_embedding_loss)


class CosineEmbeddingLoss(_Loss):
    """``nn.functional.cosine_embedding_loss`` as a module, as ``torch.nn.CosineEmbeddingLoss``: ``loss(x1, x2, y)``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.CosineEmbeddingLoss()(enp.array([[1.0, 0.0]]), enp.array([[0.0, 1.0]]), enp.array([1.0])).item()
    1.0
    """

    margin: float = 0.0
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.cosine_embedding_loss)


class TripletMarginLoss(_Loss):
    """``nn.functional.triplet_margin_loss`` as a module, as ``torch.nn.TripletMarginLoss``:
    ``loss(anchor, positive, negative)``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> a = enp.array([[0.0, 0.0]])
    >>> nn.TripletMarginLoss(eps=0.0)(a, enp.array([[0.0, 2.0]]), enp.array([[2.0, 0.0]])).item()
    1.0
    """

    margin: float = 1.0
    p: float = 2.0
    eps: float = 1e-6
    swap: bool = False
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.triplet_margin_loss)


class MultiLabelSoftMarginLoss(_Loss):
    """``nn.functional.multilabel_soft_margin_loss`` as a module, as ``torch.nn.MultiLabelSoftMarginLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> round(nn.MultiLabelSoftMarginLoss()(enp.array([[0.0, 0.0]]), enp.array([[1.0, 0.0]])).item(), 4)
    0.6931
    """

    weight: Array | None = None
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.multilabel_soft_margin_loss)


class MultiMarginLoss(_Loss):
    """``nn.functional.multi_margin_loss`` as a module, as ``torch.nn.MultiMarginLoss``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.MultiMarginLoss(p=2)(enp.array([[0.0, 1.0]]), enp.array([1])).item()
    0.0
    """

    p: int = 1
    margin: float = 1.0
    weight: Array | None = None
    _: _KW
    reduction: str = "mean"
    _fn = staticmethod(F.multi_margin_loss)


class CosineSimilarity(_Loss):
    """``nn.functional.cosine_similarity`` as a module, as ``torch.nn.CosineSimilarity``: ``cos(x1, x2)``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.CosineSimilarity(dim=0)(enp.array([1.0, 0.0]), enp.array([0.0, 1.0])).item()
    0.0
    """

    dim: int = 1
    eps: float = 1e-8
    _fn = staticmethod(D.cosine_similarity)


class PairwiseDistance(_Loss):
    """``nn.functional.pairwise_distance`` as a module, as ``torch.nn.PairwiseDistance``.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.PairwiseDistance(eps=0.0)(enp.array([[0.0, 0.0]]), enp.array([[3.0, 4.0]])).tolist()
    [5.0]
    """

    p: float = 2.0
    eps: float = 1e-6
    keepdim: bool = False
    _fn = staticmethod(D.pairwise_distance)
