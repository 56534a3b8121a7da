"""Loss functions with ``torch.nn.functional``'s names, arguments, defaults and numbers.

Arguments that PyTorch takes positionally before its deprecated ``size_average`` / ``reduce`` are
positional here too; everything after them is keyword-only (``reduction=``, ``ignore_index=``, ...), so a
call written for PyTorch either means the same here or fails loudly. ``size_average`` and ``reduce`` are
not accepted: use ``reduction``.

Shapes are checked, not broadcast: where PyTorch warns and broadcasts a target of shape (N, 1) against an
input of shape (N,), these raise ``ShapeError``.

Integer class targets (``cross_entropy``, ``nll_loss``, ``multi_margin_loss``) are checked eagerly: a concrete
target outside ``[0, C)`` (and not ``ignore_index``) raises ``EmberIndexError``, as PyTorch's "Target 7 is out
of bounds". Under ``jit`` / ``vmap`` the values are not known; there a target outside ``[0, C)`` selects no class:
for ``nll_loss`` / ``cross_entropy`` it adds nothing to the loss and no weight to the mean's denominator (it is
treated like ``ignore_index``), except for the ``label_smoothing`` term, which still counts it; for
``multi_margin_loss`` its target score reads as 0 and its class weight as 0.
"""

from __future__ import annotations

import math

import numpy as np

import ember.numpy as enp
from ember import lax
from ember.transforms.custom import custom_jvp
from ember.core.array import Array
from ember.errors import ConcretizationError, DTypeError, EmberIndexError, InvalidArgumentError, ShapeError
from ember.nn.functional._common import ArrayLike, floating_operands
from ember.nn.functional._distance import pairwise_distance

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
           "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss",
           "mse_loss", "multi_margin_loss", "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss",
           "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss"]  # fmt: skip

_REDUCTIONS = ("none", "mean", "sum")


# --- shared pieces ----------------------------------------------------------------------------------


def _check_reduction(op: str, reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
    if reduction not in allowed:
        raise InvalidArgumentError(f"{op}: reduction={reduction!r} is not one of {', '.join(map(repr, allowed))}")


def _reduce(loss: Array, reduction: str) -> Array:
    if reduction == "mean":
        return enp.mean(loss)
    if reduction == "sum":
        return enp.sum(loss)
    return loss


def _same_shape(op: str, names: tuple[str, ...], *arrays: Array) -> None:
    """Every array has the first one's shape; PyTorch broadcasts some of these with a warning, ember refuses."""
    for name, a in zip(names[1:], arrays[1:]):
        if a.shape != arrays[0].shape:
            raise ShapeError(
                f"{op}: {name} of shape {a.shape} ({a.dtype}) does not match {names[0]} of shape {arrays[0].shape} "
                f"({arrays[0].dtype}); losses do not broadcast (a (N, 1) target against an (N,) input would pair every "
                f"input with every target): reshape one of them to the other's shape")


def _operands(op: str, reduction: str, names: tuple[str, ...], *values: ArrayLike,
              allowed: tuple[str, ...] = _REDUCTIONS) -> list[Array]:  # fmt: skip
    """The checks an elementwise loss starts with: a known ``reduction``, a floating input (``floating_operands``) and
    arrays of one shape (``_same_shape``); the arrays as ember arrays."""
    _check_reduction(op, reduction, allowed)
    arrays = floating_operands(op, *values)
    _same_shape(op, names, *arrays)
    return arrays


def _like(op: str, name: str, value: ArrayLike, x: Array) -> Array:
    """A weight or variance as an array of the input's dtype."""
    v = enp.asarray(value)
    if np.dtype(v.dtype).kind == "c":
        raise DTypeError(f"{op}: {name} must be real, got {v.dtype}")
    return v.astype(x.dtype)


def _elementwise_weight(op: str, weight: ArrayLike | None, input: Array) -> Array | None:
    """A ``weight`` that must have the input's shape exactly (mse_loss, l1_loss, huber_loss)."""
    if weight is None:
        return None
    w = _like(op, "weight", weight, input)
    if w.shape != input.shape:
        raise ShapeError(f"{op}: weight of shape {w.shape} must have the input's shape {input.shape}")
    return w


def _broadcast_weight(op: str, name: str, weight: ArrayLike | None, x: Array) -> Array | None:
    """A ``weight`` / ``pos_weight`` that broadcasts to the input's shape (BCE losses)."""
    if weight is None:
        return None
    w, shape = _like(op, name, weight, x), x.shape
    try:
        if np.broadcast_shapes(w.shape, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise ShapeError(f"{op}: {name} of shape {w.shape} does not broadcast to the input's shape {shape}") from None
    return w


def _weighted(loss: Array, weight: Array | None, reduction: str, mean_by_weight: bool = True) -> Array:
    """PyTorch's elementwise weight: its mean divides by the weights' sum for mse_loss and l1_loss, by the
    number of elements for huber_loss."""
    if weight is None:
        return _reduce(loss, reduction)
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return enp.sum(loss) / enp.sum(weight)
    return _reduce(loss, reduction)


def _concrete(x: Array) -> np.ndarray | None:
    """The values of ``x`` when they are known (eagerly), else None (under jit / vmap)."""
    try:
        return np.asarray(x._concrete("a loss's target check"))
    except ConcretizationError:
        return None


def _class_target(op: str, target: ArrayLike, n_classes: int, ignore_index: int | None) -> Array:
    """An integer class target, its values checked when they are concrete."""
    t = enp.asarray(target)
    if t.dtype == np.bool_ or not enp.issubdtype(t.dtype, enp.integer):
        raise DTypeError(f"{op}: class-index targets must be integers, got {t.dtype} of shape {t.shape}; "
                         "pass class indices as an integer array (cross_entropy also takes class probabilities: a "
                         "float target of the input's shape)")  # fmt: skip
    values = _concrete(t)
    if values is not None and values.size:
        bad = (values < 0) | (values >= n_classes)
        if ignore_index is not None:
            bad &= values != ignore_index
        if bad.any():
            raise EmberIndexError(f"{op}: target {int(values[bad].flat[0])} is out of bounds for {n_classes} classes "
                                  f"(targets must lie in [0, {n_classes})"
                                  + (f" or equal ignore_index={ignore_index})" if ignore_index is not None else ")"))
    return t


def _log_softmax(x: Array, axis: int) -> Array:
    shifted = x - lax.stop_gradient(enp.max(x, axis=axis, keepdims=True)) if x.shape[axis] else x
    return shifted - enp.log(enp.sum(enp.exp(shifted), axis=axis, keepdims=True))


def _softplus(x: Array) -> Array:
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log1p(exp(-|x|))``."""
    return enp.maximum(x, 0) + enp.log1p(enp.exp(-enp.abs(x)))


def _class_shape_check(op: str, x: Array, t: Array) -> int:
    """The class axis of an (C), (N, C) or (N, C, d1, ..., dk) input whose class-index target is (), (N) or
    (N, d1, ..., dk)."""
    if x.ndim == 0:
        raise ShapeError(f"{op}: the input must have a class dimension: shape (C), (N, C) or (N, C, d1, ..., dk), "
                         f"got a 0-d input ({x.dtype})")  # fmt: skip
    axis = 0 if x.ndim == 1 else 1
    want = x.shape[:axis] + x.shape[axis + 1 :]
    if t.shape != want:
        raise ShapeError(f"{op}: a class-index target for an input of shape {x.shape} must have shape {want}, got "
                         f"{t.shape} ({t.dtype})")  # fmt: skip
    return axis


def _class_weight(op: str, weight: ArrayLike | None, n_classes: int, x: Array, axis: int) -> Array | None:
    """``weight`` of shape (C,), reshaped to broadcast along the input's class axis."""
    if weight is None:
        return None
    w = _like(op, "weight", weight, x)
    if w.shape != (n_classes,):
        raise ShapeError(f"{op}: weight must have shape (C,) = ({n_classes},), one entry per class, got {w.shape}")
    return enp.reshape(w, (n_classes,) + (1,) * (x.ndim - axis - 1))


def _pick(x: Array, t: Array, axis: int, weight: Array | None, ignore_index: int | None) -> tuple[Array, Array]:
    """``x[target]`` along the class axis and the weight of each target (0 where ignored or out of range), by a
    one-hot mask, which works unchanged under every transform."""
    classes = enp.reshape(enp.arange(x.shape[axis], dtype=t.dtype), (x.shape[axis],) + (1,) * (x.ndim - axis - 1))
    mask = enp.expand_dims(t, axis) == classes
    if ignore_index is not None:
        mask = mask & enp.expand_dims(t != ignore_index, axis)
    picked = enp.sum(enp.where(mask, x, enp.zeros_like(x)), axis=axis)
    w = mask.astype(x.dtype) if weight is None else enp.where(mask, enp.broadcast_to(weight, x.shape), 0.0)
    return picked, enp.sum(w, axis=axis)


# --- classification ----------------------------------------------------------------------------------


def nll_loss(input: ArrayLike, target: ArrayLike, weight: ArrayLike | None = None, *, ignore_index: int = -100,
             reduction: str = "mean") -> Array:  # fmt: skip
    """The negative log-likelihood of class ``target`` under log-probabilities ``input``, as
    ``torch.nn.functional.nll_loss``.

    ``loss_i = -weight[t_i] * input[i, t_i]`` (0 where ``t_i == ignore_index``); ``'mean'`` divides the sum by
    the sum of ``weight[t_i]`` over the targets not ignored (NaN when all are ignored, as in PyTorch).

    Args:
        input: log-probabilities of shape (C), (N, C) or (N, C, d1, ..., dk).
        target: integer class indices of shape (), (N) or (N, d1, ..., dk).
        weight: per-class weights of shape (C,).
        ignore_index: a target value that contributes nothing (loss or weight).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    Returns:
        the loss: the target's shape with ``'none'``, else a scalar.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> round(F.nll_loss(enp.log(enp.array([[0.5, 0.5], [0.25, 0.75]])), enp.array([0, 1])).item(), 4)
    0.4904
    """
    _check_reduction("nll_loss", reduction)
    (x,) = floating_operands("nll_loss", input)
    axis = _class_shape_check("nll_loss", x, enp.asarray(target))
    n_classes = x.shape[axis]
    t = _class_target("nll_loss", target, n_classes, ignore_index)
    w = _class_weight("nll_loss", weight, n_classes, x, axis)
    picked, tw = _pick(x, t, axis, w, ignore_index)
    loss = -picked * tw if w is not None else -picked
    if reduction == "mean":
        return enp.sum(loss) / enp.sum(tw)
    return _reduce(loss, reduction)


def cross_entropy(input: ArrayLike, target: ArrayLike, weight: ArrayLike | None = None, *, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Array:  # fmt: skip
    """Softmax cross-entropy between logits and class indices or class probabilities, as
    ``torch.nn.functional.cross_entropy``.

    With an integer target it is ``nll_loss(log_softmax(input), target, weight, ...)``; with
    ``label_smoothing = e`` it adds ``e / C`` times the (weighted) sum of ``-log_softmax`` over the classes and
    scales the nll term by ``1 - e``; ``'mean'`` divides both by the sum of the targets' weights (not ignored).
    A float target of the input's shape holds class probabilities: ``-sum_c weight_c * p_c * log_softmax_c``,
    with the smoothed probabilities ``p (1 - e) + e / C``; ``'mean'`` divides by the number of examples.

    Args:
        input: logits of shape (C), (N, C) or (N, C, d1, ..., dk).
        target: integer class indices of shape (), (N) or (N, d1, ..., dk), or float probabilities of the input's
            shape.
        weight: per-class weights of shape (C,).
        ignore_index: a class-index target value that contributes nothing (not allowed with probabilities).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        label_smoothing: in [0, 1]: the share of the target spread evenly over the classes.

    Returns:
        the loss: the batch shape with ``'none'``, else a scalar.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> round(F.cross_entropy(enp.array([[2.0, 0.0], [0.0, 2.0]]), enp.array([0, 0])).item(), 4)
    1.1269
    """
    _check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise InvalidArgumentError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    (x,) = floating_operands("cross_entropy", input)
    if x.ndim == 0:
        raise ShapeError(f"cross_entropy: the input must have a class dimension: shape (C), (N, C) or "
                         f"(N, C, d1, ..., dk), got a 0-d input ({x.dtype})")  # fmt: skip
    axis = 0 if x.ndim == 1 else 1
    n_classes = x.shape[axis]
    w = _class_weight("cross_entropy", weight, n_classes, x, axis)
    t = enp.asarray(target)
    logp = _log_softmax(x, axis)
    if t.shape == x.shape and enp.issubdtype(t.dtype, enp.floating):
        if ignore_index >= 0:
            raise InvalidArgumentError(f"cross_entropy: ignore_index={ignore_index} applies to class-index targets "
                                       "only, not to class probabilities (a float target of the input's shape)")
        p = t.astype(x.dtype)
        if label_smoothing > 0:
            p = p * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * p if w is None else logp * p * w
        loss = -enp.sum(terms, axis=axis)
        if reduction == "mean":
            return enp.sum(loss) / (x.size // n_classes) if x.size else enp.sum(loss) * math.nan
        return _reduce(loss, reduction)
    if enp.issubdtype(t.dtype, enp.floating) and t.shape != x.shape[:axis] + x.shape[axis + 1 :]:
        raise ShapeError(f"cross_entropy: a float target holds class probabilities and must have the input's shape "
                         f"{x.shape}, got {t.shape} ({t.dtype}); pass class indices as integers")  # fmt: skip
    _class_shape_check("cross_entropy", x, t)
    t = _class_target("cross_entropy", t, n_classes, ignore_index)
    picked, tw = _pick(logp, t, axis, w, ignore_index)
    nll = -picked * tw if w is not None else -picked
    if label_smoothing > 0:
        smooth = -enp.sum(logp if w is None else logp * w, axis=axis)
        smooth = enp.where(t == ignore_index, enp.zeros_like(smooth), smooth)
        loss = (1 - label_smoothing) * nll + (label_smoothing / n_classes) * smooth
    else:
        loss = nll
    if reduction == "mean":
        return enp.sum(loss) / enp.sum(tw)
    return _reduce(loss, reduction)


def _clamped_logs(x: Array) -> tuple[Array, Array]:
    """``max(log(x), -100)`` and ``max(log(1 - x), -100)``, as PyTorch clamps them (finite at x = 0 and 1)."""
    log_x = enp.where(x > 0, enp.maximum(enp.log(enp.where(x > 0, x, 1.0)), -100.0), -100.0)
    log_1mx = enp.where(x < 1, enp.maximum(enp.log1p(-enp.where(x < 1, x, 0.0)), -100.0), -100.0)
    return log_x, log_1mx


@custom_jvp
def _bce(x: Array, t: Array) -> Array:
    log_x, log_1mx = _clamped_logs(x)
    return -(t * log_x + (1 - t) * log_1mx)


@_bce.defjvp
def _bce_jvp(primals, tangents):
    # PyTorch's derivative: (x - t) / max(x (1 - x), 1e-12) in x (finite, +-1e12 at x = 0 and 1, where the
    # clamped logs are flat), and log(1 - x) - log(x) (clamped as the value) in t.
    (x, t), (x_dot, t_dot) = primals, tangents
    log_x, log_1mx = _clamped_logs(x)
    out = -(t * log_x + (1 - t) * log_1mx)
    return out, x_dot * ((x - t) / enp.maximum(x * (1 - x), 1e-12)) + t_dot * (log_1mx - log_x)


def binary_cross_entropy(input: ArrayLike, target: ArrayLike, weight: ArrayLike | None = None, *,
                         reduction: str = "mean") -> Array:  # fmt: skip
    """``-weight * (t log(x) + (1 - t) log(1 - x))`` for probabilities ``x``, as
    ``torch.nn.functional.binary_cross_entropy`` (each log clamped below at -100, so x = 0 or 1 stays finite).

    Prefer ``binary_cross_entropy_with_logits`` on logits: it is stable where ``x`` rounds to 0 or 1.

    Args:
        input: probabilities in [0, 1] (checked when concrete).
        target: the input's shape.
        weight: broadcasts to the input's shape.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> round(F.binary_cross_entropy(enp.array([0.5, 0.9]), enp.array([1.0, 1.0])).item(), 4)
    0.3993
    """
    x, t = _operands("binary_cross_entropy", reduction, ("input", "target"), input, target)
    w = _broadcast_weight("binary_cross_entropy", "weight", weight, x)
    values = _concrete(x)
    if values is not None and ((values < 0) | (values > 1)).any():
        raise InvalidArgumentError("binary_cross_entropy: every element of the input must be a probability in [0, 1]; "
                                   "for logits use binary_cross_entropy_with_logits")
    return _weighted(_bce(x, t), w, reduction, mean_by_weight=False)


def binary_cross_entropy_with_logits(input: ArrayLike, target: ArrayLike, weight: ArrayLike | None = None, *,
                                     reduction: str = "mean",
                                     pos_weight: ArrayLike | None = None) -> Array:  # fmt: skip
    """Sigmoid cross-entropy on logits, as ``torch.nn.functional.binary_cross_entropy_with_logits``:
    ``weight * ((1 - t) x + (1 + (pos_weight - 1) t) softplus(-x))``, stable for any logit.

    Args:
        input: logits.
        target: the input's shape, values in [0, 1].
        weight: broadcasts to the input's shape.
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.
        pos_weight: the weight of positive examples, broadcast along the trailing (class) axes, e.g. shape (C,).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> round(F.binary_cross_entropy_with_logits(enp.array([0.0, 1e4]), enp.array([1.0, 1.0])).item(), 4)
    0.3466
    """
    x, t = _operands("binary_cross_entropy_with_logits", reduction, ("input", "target"), input, target)
    w = _broadcast_weight("binary_cross_entropy_with_logits", "weight", weight, x)
    pw = _broadcast_weight("binary_cross_entropy_with_logits", "pos_weight", pos_weight, x)
    log_weight = 1.0 if pw is None else (pw - 1) * t + 1
    return _weighted((1 - t) * x + log_weight * _softplus(-x), w, reduction, mean_by_weight=False)


def kl_div(input: ArrayLike, target: ArrayLike, *, reduction: str = "mean", log_target: bool = False) -> Array:
    """The pointwise KL divergence ``t (log t - x)`` for log-probabilities ``x``, as ``torch.nn.functional.kl_div``.

    With ``log_target`` the target holds log-probabilities: ``exp(t) (t - x)``. ``'batchmean'`` divides the sum
    by the batch size (the first dimension), which is the KL divergence's definition; ``'mean'`` divides by
    the number of elements (PyTorch's default, kept for parity).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> p = enp.array([[0.5, 0.5]])
    >>> round(F.kl_div(enp.log(enp.array([[0.25, 0.75]])), p, reduction="batchmean").item(), 4)
    0.1438
    """
    x, t = _operands("kl_div", reduction, ("input", "target"), input, target, allowed=(*_REDUCTIONS, "batchmean"))
    if log_target:
        loss = enp.exp(t) * (t - x)
    else:
        positive = t > 0
        loss = t * enp.log(enp.where(positive, t, 1.0)) - t * x  # xlogy(t, t): 0 at t = 0
    if reduction == "batchmean":
        total = enp.sum(loss)
        return total / x.shape[0] if x.ndim else total
    return _reduce(loss, reduction)


# --- regression --------------------------------------------------------------------------------------


def mse_loss(input: ArrayLike, target: ArrayLike, *, reduction: str = "mean", weight: ArrayLike | None = None) -> Array:
    """``(input - target)**2``, as ``torch.nn.functional.mse_loss`` (with ``weight``: ``'mean'`` divides by its sum).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.mse_loss(enp.array([1.0, 2.0]), enp.array([0.0, 0.0])).item()
    2.5
    """
    x, t = _operands("mse_loss", reduction, ("input", "target"), input, target)
    return _weighted((x - t) ** 2, _elementwise_weight("mse_loss", weight, x), reduction)


def l1_loss(input: ArrayLike, target: ArrayLike, *, reduction: str = "mean", weight: ArrayLike | None = None) -> Array:
    """``|input - target|``, as ``torch.nn.functional.l1_loss`` (with ``weight``: ``'mean'`` divides by its sum).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.l1_loss(enp.array([1.0, -2.0]), enp.array([0.0, 0.0])).item()
    1.5
    """
    x, t = _operands("l1_loss", reduction, ("input", "target"), input, target)
    return _weighted(enp.abs(x - t), _elementwise_weight("l1_loss", weight, x), reduction)


def smooth_l1_loss(input: ArrayLike, target: ArrayLike, *, reduction: str = "mean", beta: float = 1.0) -> Array:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (``d = input - target``), as
    ``torch.nn.functional.smooth_l1_loss``; ``beta = 0`` is the L1 loss.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.smooth_l1_loss(enp.array([0.5, 3.0]), enp.array([0.0, 0.0]), reduction="none").tolist()
    [0.125, 2.5]
    """
    x, t = _operands("smooth_l1_loss", reduction, ("input", "target"), input, target)
    if beta < 0:
        raise InvalidArgumentError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = enp.abs(x - t)
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(enp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(input: ArrayLike, target: ArrayLike, *, reduction: str = "mean", delta: float = 1.0,
               weight: ArrayLike | None = None) -> Array:  # fmt: skip
    """``0.5 d**2`` where ``|d| <= delta``, else ``delta (|d| - delta / 2)``, as ``torch.nn.functional.huber_loss``
    (with ``weight``: ``'mean'`` is the mean of the weighted losses, as PyTorch's, not divided by the weights' sum).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.huber_loss(enp.array([0.5, 3.0]), enp.array([0.0, 0.0]), reduction="none", delta=2.0).tolist()
    [0.125, 4.0]
    """
    x, t = _operands("huber_loss", reduction, ("input", "target"), input, target)
    if delta <= 0:
        raise InvalidArgumentError(f"huber_loss: delta must be positive, got {delta}")
    d = enp.abs(x - t)
    loss = enp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _weighted(loss, _elementwise_weight("huber_loss", weight, x), reduction, mean_by_weight=False)


def poisson_nll_loss(input: ArrayLike, target: ArrayLike, log_input: bool = True, full: bool = False, *,
                     eps: float = 1e-8, reduction: str = "mean") -> Array:  # fmt: skip
    """The Poisson negative log-likelihood, as ``torch.nn.functional.poisson_nll_loss``: ``exp(x) - t x`` for a
    log-rate ``x`` (``log_input``), else ``x - t log(x + eps)``; ``full`` adds Stirling's term
    ``t log t - t + log(2 pi t) / 2`` where ``t > 1``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.poisson_nll_loss(enp.array([0.0]), enp.array([2.0])).item()
    1.0
    """
    x, t = _operands("poisson_nll_loss", reduction, ("input", "target"), input, target)
    loss = enp.exp(x) - t * x if log_input else x - t * enp.log(x + eps)
    if full:
        big = t > 1
        safe_t = enp.where(big, t, 1.0)
        stirling = safe_t * enp.log(safe_t) - safe_t + 0.5 * enp.log(2 * math.pi * safe_t)
        loss = loss + enp.where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: ArrayLike, target: ArrayLike, var: ArrayLike | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Array:  # fmt: skip
    """The Gaussian negative log-likelihood ``(log(var) + (x - t)**2 / var) / 2``, as
    ``torch.nn.functional.gaussian_nll_loss``.

    ``var`` has the input's shape, or one dimension fewer (one variance per vector), or the input's rank with one
    dimension of size 1; it is clamped below at ``eps`` in value only (the gradient passes through, as PyTorch's
    ``no_grad`` clamp). ``full`` adds ``log(2 pi) / 2``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.gaussian_nll_loss(enp.array([1.0]), enp.array([0.0]), enp.array([1.0])).item()
    0.5
    """
    x, t = _operands("gaussian_nll_loss", reduction, ("input", "target"), input, target)
    if isinstance(var, (int, float)):
        if var < 0:
            raise InvalidArgumentError(f"gaussian_nll_loss: var must be non-negative, got {var}")
        v = enp.full(x.shape, var, dtype=x.dtype)
    else:
        v = _like("gaussian_nll_loss", "var", var, x)
        values = _concrete(v)
        if values is not None and (values < 0).any():
            raise InvalidArgumentError("gaussian_nll_loss: var has negative entries; variances must be non-negative")
        if v.shape != x.shape:
            if v.shape == x.shape[:-1]:
                v = enp.expand_dims(v, -1)
            elif not (v.ndim == x.ndim and sum(b for a, b in zip(x.shape, v.shape) if a != b) == 1):
                raise ShapeError(f"gaussian_nll_loss: var of shape {v.shape} fits neither the input's shape {x.shape}, "
                                 f"nor {x.shape[:-1]} (one variance per vector), nor the input's shape with one "
                                 "dimension of size 1")  # fmt: skip
    v = v + lax.stop_gradient(enp.maximum(v, eps) - v)
    loss = 0.5 * (enp.log(v) + (x - t) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# --- margins and embeddings --------------------------------------------------------------------------


def soft_margin_loss(input: ArrayLike, target: ArrayLike, *, reduction: str = "mean") -> Array:
    """``log(1 + exp(-y x))`` for labels ``y`` in {-1, 1}, as ``torch.nn.functional.soft_margin_loss`` (stable form).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> round(F.soft_margin_loss(enp.array([0.0, 1e4]), enp.array([1.0, 1.0])).item(), 4)
    0.3466
    """
    x, y = _operands("soft_margin_loss", reduction, ("input", "target"), input, target)
    return _reduce(_softplus(-y * x), reduction)


def margin_ranking_loss(input1: ArrayLike, input2: ArrayLike, target: ArrayLike, margin: float = 0.0, *,
                        reduction: str = "mean") -> Array:  # fmt: skip
    """``max(0, -y (x1 - x2) + margin)``, as ``torch.nn.functional.margin_ranking_loss``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x1, x2 = enp.array([1.0, 0.0]), enp.array([0.0, 1.0])
    >>> F.margin_ranking_loss(x1, x2, enp.array([1.0, 1.0]), reduction="none").tolist()
    [0.0, 1.0]
    """
    a, b, y = _operands("margin_ranking_loss", reduction, ("input1", "input2", "target"), input1, input2, target)
    return _reduce(enp.maximum(-y * (a - b) + margin, 0.0), reduction)


def hinge_embedding_loss(input: ArrayLike, target: ArrayLike, margin: float = 1.0, *, reduction: str = "mean") -> Array:
    """``x`` where ``y = 1`` and ``max(0, margin - x)`` where ``y = -1``, as
    ``torch.nn.functional.hinge_embedding_loss``
    (a label that is neither gets both terms, as in PyTorch).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.hinge_embedding_loss(enp.array([0.3, 0.3]), enp.array([1.0, -1.0]), reduction="none").tolist()
    [0.30000001192092896, 0.699999988079071]
    """
    x, y = _operands("hinge_embedding_loss", reduction, ("input", "target"), input, target)
    # max(margin, x) - x rather than max(margin - x, 0): equal values, and a gradient that is +0 (ct - ct), not
    # -(ct * 0) = -0, where the hinge is flat, so jit (which drops the other branch's zeros) agrees in sign.
    hinge = enp.maximum(x, margin) - x
    return _reduce(enp.where(y == 1, x, enp.where(y == -1, hinge, x + hinge)), reduction)


def cosine_embedding_loss(input1: ArrayLike, input2: ArrayLike, target: ArrayLike, margin: float = 0.0, *,
                          reduction: str = "mean") -> Array:  # fmt: skip
    """``1 - cos(x1, x2)`` where ``y = 1`` and ``max(0, cos(x1, x2) - margin)`` where ``y = -1``, as
    ``torch.nn.functional.cosine_embedding_loss`` (vectors along the last axis of (D) or (N, D) inputs).

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> x = enp.array([[1.0, 0.0], [1.0, 0.0]])
    >>> F.cosine_embedding_loss(x, x, enp.array([1.0, -1.0]), reduction="none").tolist()
    [0.0, 1.0]
    """
    _check_reduction("cosine_embedding_loss", reduction)
    a, b, y = floating_operands("cosine_embedding_loss", input1, input2, target)
    if a.ndim not in (1, 2) or b.shape != a.shape or y.shape != a.shape[:-1]:
        raise ShapeError(f"cosine_embedding_loss: expected input1 and input2 of one shape (D) or (N, D) and a target "
                         f"of shape () or (N), got {a.shape}, {b.shape} and {y.shape}")  # fmt: skip
    axis = a.ndim - 1
    # PyTorch's form: the squared norms get 1e-12 so that a zero vector gives cos = 0, not 0/0.
    denom = enp.sqrt((enp.sum(a * a, axis=axis) + 1e-12) * (enp.sum(b * b, axis=axis) + 1e-12))
    cos = enp.sum(a * b, axis=axis) / denom
    zeros = enp.zeros_like(cos)
    loss = enp.where(y == 1, 1 - cos, zeros) + enp.where(y == -1, enp.maximum(cos - margin, 0.0), zeros)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: ArrayLike, positive: ArrayLike, negative: ArrayLike, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, *,
                        reduction: str = "mean") -> Array:  # fmt: skip
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d = pairwise_distance(., ., p, eps)``, as
    ``torch.nn.functional.triplet_margin_loss``; ``swap`` uses ``min(d(a, n), d(p, n))`` for the negative distance.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> a = enp.array([[0.0, 0.0]])
    >>> round(F.triplet_margin_loss(a, enp.array([[1.0, 0.0]]), enp.array([[0.0, 1.5]]), eps=0.0).item(), 4)
    0.5
    """
    _check_reduction("triplet_margin_loss", reduction)
    if margin <= 0:
        raise InvalidArgumentError(f"triplet_margin_loss: margin must be positive, got {margin}")
    a, pos, neg = floating_operands("triplet_margin_loss", anchor, positive, negative)
    if a.ndim not in (1, 2) or pos.shape != a.shape or neg.shape != a.shape:
        raise ShapeError(f"triplet_margin_loss: expected anchor, positive and negative of one shape (D) or (N, D), "
                         f"got {a.shape}, {pos.shape} and {neg.shape}")  # fmt: skip
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = enp.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    return _reduce(enp.maximum(margin + d_pos - d_neg, 0.0), reduction)


def multilabel_soft_margin_loss(input: ArrayLike, target: ArrayLike, weight: ArrayLike | None = None, *,
                                reduction: str = "mean") -> Array:  # fmt: skip
    """The mean over classes of ``-(t log sigmoid(x) + (1 - t) log sigmoid(-x))`` (times ``weight``), as
    ``torch.nn.functional.multilabel_soft_margin_loss``; the classes lie along the last axis.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> round(F.multilabel_soft_margin_loss(enp.array([[0.0, 1e4]]), enp.array([[1.0, 1.0]])).item(), 4)
    0.3466
    """
    x, t = _operands("multilabel_soft_margin_loss", reduction, ("input", "target"), input, target)
    if x.ndim == 0:
        raise ShapeError("multilabel_soft_margin_loss: the input must have a class dimension (C) or (N, C), got a "
                         "0-d input")
    w = _broadcast_weight("multilabel_soft_margin_loss", "weight", weight, x)
    loss = t * _softplus(-x) + (1 - t) * _softplus(x)
    if w is not None:
        loss = loss * w
    return _reduce(enp.sum(loss, axis=-1) / x.shape[-1], reduction)


def multi_margin_loss(input: ArrayLike, target: ArrayLike, p: int = 1, margin: float = 1.0,
                      weight: ArrayLike | None = None, *, reduction: str = "mean") -> Array:  # fmt: skip
    """The multi-class hinge loss ``sum_{i != y} weight[y] max(0, margin - x[y] + x[i])**p / C``, as
    ``torch.nn.functional.multi_margin_loss`` (``p`` is 1 or 2).

    Args:
        input: scores of shape (C) or (N, C).
        target: integer classes of shape () or (N).
        p: 1 or 2.
        margin: the margin.
        weight: per-class weights of shape (C,).
        reduction: ``'none'``, ``'mean'`` or ``'sum'``.

    >>> import ember.numpy as enp
    >>> from ember.nn import functional as F
    >>> F.multi_margin_loss(enp.array([[0.1, 0.2, 0.4, 0.8]]), enp.array([3])).item()
    0.32499998807907104
    """
    _check_reduction("multi_margin_loss", reduction)
    if p not in (1, 2):
        raise InvalidArgumentError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    (x,) = floating_operands("multi_margin_loss", input)
    if x.ndim not in (1, 2):
        raise ShapeError(f"multi_margin_loss: expected an input of shape (C) or (N, C), got {x.shape} ({x.dtype})")
    n_classes = x.shape[-1]
    t = _class_target("multi_margin_loss", target, n_classes, None)
    if t.shape != x.shape[:-1]:
        raise ShapeError(f"multi_margin_loss: the target for an input of shape {x.shape} must have shape "
                         f"{x.shape[:-1]}, got {t.shape}")  # fmt: skip
    axis = x.ndim - 1
    w = _class_weight("multi_margin_loss", weight, n_classes, x, axis)
    picked, tw = _pick(x, t, axis, w, None)
    z = enp.maximum(margin - enp.expand_dims(picked, axis) + x, 0.0)
    if p == 2:
        z = z * z
    others = enp.expand_dims(t, axis) != enp.arange(n_classes, dtype=t.dtype)
    loss = enp.sum(enp.where(others, z, 0.0), axis=axis) / n_classes
    if w is not None:
        loss = loss * tw
    return _reduce(loss, reduction)

