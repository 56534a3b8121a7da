"""op_db entries for ember.nn's losses and distances: every loss and distance in ``nn.functional`` and every
loss / distance module, against NumPy references written from PyTorch's definitions (the modules through a
pure wrapper). Integer class targets are operands that are never differentiated (the autodiff columns take
only floating arrays); the vmap column batches them too (permuting their values keeps them in range).

The samples of 0-d operands use reduction='none': that result is elementwise and weak exactly when every
operand is (JAX's rule, which the weak-type column checks); 'mean' and 'sum' reduce with enp.mean / enp.sum,
whose results are strong as jax.numpy's reductions are."""

from __future__ import annotations

import functools
import math

import numpy as np
from op_db import BF16, FLOATING, SUM_TOLERANCES, OpInfo, Sample, default_int, make_array, register

import ember.numpy as enp
from ember import nn
from ember.nn import functional as F

FLOAT_ONLY = "PyTorch's loss and distance kernels take floating inputs only: ints, bool and complex raise DTypeError"
HALF_TOL = {np.dtype(np.float16): (1e-2, 1e-2), BF16: (3e-2, 3e-2), np.dtype(np.float32): (2e-5, 2e-6)}


# --- NumPy references (float64), from PyTorch's definitions ----------------------------------------------


def _w(a):
    return None if a is None else np.asarray(a, np.float64)


def _reduce(loss, reduction):
    if reduction == "mean":
        return np.mean(loss) if loss.size else np.float64(np.nan)
    if reduction == "sum":
        return np.sum(loss)
    return loss


def _log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True) if x.size else 0.0
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def _softplus(x):
    return np.logaddexp(0.0, x)


def _nll_parts(logp, t, weight, ignore_index):
    """Per-example -logp[target] * w and w, the class axis moved last."""
    axis = 0 if logp.ndim == 1 else 1
    last = np.moveaxis(logp, axis, -1)
    valid = t != ignore_index
    tc = np.where(valid, t, 0).astype(np.int64)
    picked = np.take_along_axis(last, tc[..., None], -1)[..., 0]
    w = np.ones(logp.shape[axis]) if weight is None else _w(weight)
    tw = np.where(valid, w[tc], 0.0)
    return -picked * tw, tw


def ref_nll_loss(x, t, weight=None, ignore_index=-100, reduction="mean"):
    loss, tw = _nll_parts(x, t, weight, ignore_index)
    return np.sum(loss) / np.sum(tw) if reduction == "mean" else _reduce(loss, reduction)


def ref_cross_entropy(x, t, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    axis = 0 if x.ndim == 1 else 1
    c = x.shape[axis]
    logp = _log_softmax(x, axis)
    wb = np.ones(c) if weight is None else _w(weight)
    wb = wb.reshape((c,) + (1,) * (x.ndim - axis - 1))
    if t.dtype.kind == "f":
        p = t * (1 - label_smoothing) + label_smoothing / c
        loss = -np.sum(logp * p * wb, axis=axis)
        return np.sum(loss) / (x.size // c) if reduction == "mean" else _reduce(loss, reduction)
    nll, tw = _nll_parts(logp, t, weight, ignore_index)
    smooth = np.where(t == ignore_index, 0.0, -np.sum(logp * wb, axis=axis))
    loss = (1 - label_smoothing) * nll + label_smoothing / c * smooth
    return np.sum(loss) / np.sum(tw) if reduction == "mean" else _reduce(loss, reduction)


def _weighted(loss, weight, reduction, by_weight=True):
    if weight is None:
        return _reduce(loss, reduction)
    loss = loss * _w(weight)
    return np.sum(loss) / np.sum(_w(weight)) if reduction == "mean" and by_weight else _reduce(loss, reduction)


def ref_mse(x, t, reduction="mean", weight=None):
    return _weighted((x - t) ** 2, weight, reduction)


def ref_l1(x, t, reduction="mean", weight=None):
    return _weighted(np.abs(x - t), weight, reduction)


def ref_smooth_l1(x, t, reduction="mean", beta=1.0):
    d = np.abs(x - t)
    return _reduce(d if beta == 0 else np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta), reduction)


def ref_huber(x, t, reduction="mean", delta=1.0, weight=None):
    d = np.abs(x - t)
    return _weighted(np.where(d < delta, 0.5 * d**2, delta * (d - 0.5 * delta)), weight, reduction, by_weight=False)


def ref_bce(x, t, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    return _reduce(loss if weight is None else loss * _w(weight), reduction)


def ref_bce_logits(x, t, weight=None, reduction="mean", pos_weight=None):
    lw = 1.0 if pos_weight is None else (_w(pos_weight) - 1) * t + 1
    loss = (1 - t) * x + lw * _softplus(-x)
    return _reduce(loss if weight is None else loss * _w(weight), reduction)


def ref_kl_div(x, t, reduction="mean", log_target=False):
    if log_target:
        loss = np.exp(t) * (t - x)
    else:
        loss = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t * x
    if reduction == "batchmean":
        return np.sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction)


def ref_poisson(x, t, log_input=True, full=False, eps=1e-8, reduction="mean"):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        st = np.where(t > 1, t, 1.0)
        loss = loss + np.where(t > 1, st * np.log(st) - st + 0.5 * np.log(2 * np.pi * st), 0.0)
    return _reduce(loss, reduction)


def ref_gaussian(x, t, var, full=False, eps=1e-6, reduction="mean"):
    var = np.asarray(var, np.float64)
    if var.shape != x.shape and var.shape == x.shape[:-1]:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - t) ** 2 / var) + (0.5 * np.log(2 * np.pi) if full else 0.0)
    return _reduce(loss, reduction)


def ref_soft_margin(x, y, reduction="mean"):
    return _reduce(_softplus(-y * x), reduction)


def ref_margin_ranking(a, b, y, margin=0.0, reduction="mean"):
    return _reduce(np.maximum(0.0, -y * (a - b) + margin), reduction)


def ref_hinge(x, y, margin=1.0, reduction="mean"):
    return _reduce(np.where(y != 1, np.maximum(margin - x, 0), 0) + np.where(y != -1, x, 0), reduction)


def ref_cosine_embedding(a, b, y, margin=0.0, reduction="mean"):
    cos = np.sum(a * b, -1) / np.sqrt((np.sum(a * a, -1) + 1e-12) * (np.sum(b * b, -1) + 1e-12))
    return _reduce(np.where(y == 1, 1 - cos, 0) + np.where(y == -1, np.maximum(cos - margin, 0), 0), reduction)


def _pnorm(v, p, axis=-1, keepdims=False):
    if p == math.inf:
        return np.max(np.abs(v), axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(v != 0, axis=axis, keepdims=keepdims).astype(v.dtype)
    return np.sum(np.abs(v) ** p, axis=axis, keepdims=keepdims) ** (1 / p)


def ref_pairwise_distance(a, b, p=2.0, eps=1e-6, keepdim=False):
    d = a - b + eps
    if d.ndim == 0:
        d = d[None]
    return _pnorm(d, p, -1, keepdim)


def ref_triplet(a, pos, neg, margin=1.0, p=2, eps=1e-6, swap=False, reduction="mean"):
    dp, dn = ref_pairwise_distance(a, pos, p, eps), ref_pairwise_distance(a, neg, p, eps)
    if swap:
        dn = np.minimum(dn, ref_pairwise_distance(pos, neg, p, eps))
    return _reduce(np.maximum(margin + dp - dn, 0), reduction)


def ref_multilabel(x, t, weight=None, reduction="mean"):
    loss = t * _softplus(-x) + (1 - t) * _softplus(x)
    if weight is not None:
        loss = loss * _w(weight)
    return _reduce(loss.sum(-1) / x.shape[-1], reduction)


def ref_multi_margin(x, t, p=1, margin=1.0, weight=None, reduction="mean"):
    x2 = x.reshape(-1, x.shape[-1])
    t2 = t.reshape(-1)
    out = np.zeros(x2.shape[0])
    for n in range(x2.shape[0]):  # a loop over PyTorch's definition
        y = int(t2[n])
        for i in range(x2.shape[1]):
            if i != y:
                z = max(0.0, margin - x2[n, y] + x2[n, i]) ** p
                out[n] += z * (1.0 if weight is None else float(weight[y]))
    return _reduce((out / x.shape[-1]).reshape(t.shape), reduction)


def ref_normalize(x, p=2.0, dim=1, eps=1e-12):
    if x.ndim == 0:
        return x / max(abs(x), eps)
    return x / np.maximum(_pnorm(x, p, dim, True), eps)


def ref_cosine_similarity(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt(np.sum(a * a, dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt(np.sum(b * b, dim, keepdims=True)), eps)
    return np.sum(a / na * (b / nb), dim)


def ref_pdist(x, p=2):
    i, j = np.triu_indices(x.shape[0], 1)
    return _pnorm(x[i] - x[j], p, -1)


# --- samples --------------------------------------------------------------------------------------------


def _x(rng, shape, d, low=-3.0, high=3.0):
    return make_array(rng, shape, d, low, high)


def _classes(rng, shape, c, d, ignore=None):
    t = rng.integers(0, c, shape).astype(default_int(d))
    if ignore is not None and t.size > 1:
        t.reshape(-1)[::2] = ignore
    return t


def _signs(rng, shape, d):
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(d)


def _class_samples(rng, d, ce: bool):
    w = _x(rng, (5,), d, 0.3, 2.0)
    out = [Sample((_x(rng, (4, 5), d), _classes(rng, (4,), 5, d))),
           Sample((_x(rng, (5,), d), _classes(rng, (), 5, d)), dict(reduction="sum")),
           Sample((_x(rng, (2, 5, 3), d), _classes(rng, (2, 3), 5, d)), dict(weight=w)),
           Sample((_x(rng, (2, 5, 3, 2), d), _classes(rng, (2, 3, 2), 5, d, ignore=1)), dict(weight=w, ignore_index=1)),
           Sample((_x(rng, (3, 5), d), _classes(rng, (3,), 5, d, ignore=-1)), dict(ignore_index=-1, reduction="none")),
           Sample((_x(rng, (0, 5), d), _classes(rng, (0,), 5, d)), dict(reduction="sum"))]  # fmt: skip
    if ce:
        def probs(shape, axis):
            e = np.exp(rng.uniform(-2, 2, shape))
            return (e / e.sum(axis, keepdims=True)).astype(d)

        out += [Sample((_x(rng, (3, 5), d), _classes(rng, (3,), 5, d)), dict(label_smoothing=0.2, weight=w)),
                Sample((_x(rng, (2, 5, 3), d), _classes(rng, (2, 3), 5, d, ignore=2)),
                       dict(label_smoothing=0.1, ignore_index=2, reduction="none")),
                Sample((_x(rng, (3, 5), d), probs((3, 5), 1))),
                Sample((_x(rng, (2, 5, 3), d), probs((2, 5, 3), 1)), dict(weight=w, label_smoothing=0.3)),
                Sample((_x(rng, (5,), d), probs((5,), 0)), dict(reduction="none"))]  # fmt: skip
    return out


def _pair_samples(low=-3.0, high=3.0, t_low=-3.0, t_high=3.0, options=({},), shapes=((), (4,), (2, 3), (0, 3))):
    def make(rng, d):
        out = []
        for k, shape in enumerate(shapes):
            kwargs = dict(options[k % len(options)])
            kwargs.setdefault("reduction", ("none", "mean", "sum")[k % 3])
            out.append(Sample((_x(rng, shape, d, low, high), _x(rng, shape, d, t_low, t_high)), kwargs))
        return out

    return make


def _bce_logits_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d, 0, 1))),
            Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d, 0, 1)),
                   dict(weight=_x(rng, (4,), d, 0.2, 2), pos_weight=_x(rng, (4,), d, 0.2, 3), reduction="none")),
            Sample((_x(rng, (2, 3, 4), d), _x(rng, (2, 3, 4), d, 0, 1)),
                   dict(weight=_x(rng, (3, 1), d, 0.2, 2), pos_weight=_x(rng, (1,), d, 0.2, 3), reduction="sum")),
            Sample((_x(rng, (0, 4), d), _x(rng, (0, 4), d, 0, 1)), dict(reduction="sum"))]  # fmt: skip


def _bce_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d, 0.05, 0.95), _x(rng, (3, 4), d, 0, 1))),
            Sample((_x(rng, (3, 4), d, 0.05, 0.95), _x(rng, (3, 4), d, 0, 1)),
                   dict(weight=_x(rng, (4,), d, 0.2, 2), reduction="none")),
            Sample((_x(rng, (5,), d, 0.05, 0.95), _x(rng, (5,), d, 0, 1)), dict(reduction="sum"))]  # fmt: skip


def _bce_eager(rng, d):
    edge = np.array([0.0, 1.0, 0.0, 1.0, 0.5], d)
    return _bce_samples(rng, d) + [Sample((edge, np.array([1.0, 0.0, 0.0, 1.0, 1.0], d)), dict(reduction="none"))]


def _weighted_pair_samples(rng, d):
    return _pair_samples()(rng, d) + [Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d)),
                                             dict(weight=_x(rng, (3, 4), d, 0.2, 2), reduction=r))
                                      for r in ("mean", "sum")]  # fmt: skip


def _poisson_target(rng, shape, d):
    t = rng.uniform(0, 3, shape)
    return np.where(np.abs(t - 1) < 0.15, t + 0.3, t).astype(d)  # Stirling's term jumps at t = 1


def _poisson_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d), _poisson_target(rng, (3, 4), d))),
            Sample((_x(rng, (3, 4), d), _poisson_target(rng, (3, 4), d), True, True), dict(reduction="none")),
            Sample((_x(rng, (5,), d, 0.3, 3), _poisson_target(rng, (5,), d), False, True), dict(eps=1e-3, reduction="sum")),
            Sample((_x(rng, (5,), d, 0.3, 3), _poisson_target(rng, (5,), d), False))]  # fmt: skip


def _gaussian_samples(rng, d):
    x, t = _x(rng, (3, 4), d), _x(rng, (3, 4), d)
    return [Sample((x, t, _x(rng, (3, 4), d, 0.2, 2))),
            Sample((x, t, _x(rng, (3,), d, 0.2, 2)), dict(full=True, reduction="none")),
            Sample((x, t, _x(rng, (3, 1), d, 0.2, 2)), dict(reduction="sum")), Sample((x, t, 0.5))]  # fmt: skip


def _gaussian_eager(rng, d):
    # A variance under eps, clamped in value only: its derivative (x - t)**2 / eps**2 overflows float16, and
    # finite differences see the clamp, which the gradient passes through (test_nn_losses checks it against torch).
    return _gaussian_samples(rng, d) + [Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d), np.full((1, 4), 1e-9, d)),
                                               dict(eps=1e-3))]  # fmt: skip


def _sign_samples(rng, d, margin_key=None, labels=False):
    """labels: integer labels, for the losses that compare them with 1 and -1 (a float label moved by a finite
    difference would switch branches)."""
    out = []
    for k, shape in enumerate([(), (5,), (2, 3), (0,)]):
        kwargs = dict(reduction=("none", "mean", "sum", "sum")[k])
        if margin_key and k == 1:
            kwargs[margin_key] = 0.5
        out.append(Sample((_x(rng, shape, d), _signs(rng, shape, default_int(d) if labels else d)), kwargs))
    return out


def _ranking_samples(rng, d):
    return [Sample((_x(rng, s, d), _x(rng, s, d), _signs(rng, s, d)), kw)
            for s, kw in [((4,), {}), ((2, 3), dict(margin=0.5, reduction="none")), ((), dict(reduction="none"))]]


def _cos_emb_samples(rng, d):
    i = default_int(d)  # integer labels: see _sign_samples
    return [Sample((_x(rng, (4, 5), d), _x(rng, (4, 5), d), _signs(rng, (4,), i))),
            Sample((_x(rng, (5,), d), _x(rng, (5,), d), _signs(rng, (), i)), dict(margin=0.2, reduction="none")),
            Sample((_x(rng, (3, 5), d), _x(rng, (3, 5), d), _signs(rng, (3,), i)), dict(margin=-0.3, reduction="sum"))]


def _triplet_samples(rng, d):
    return [Sample((_x(rng, (4, 5), d), _x(rng, (4, 5), d), _x(rng, (4, 5), d))),
            Sample((_x(rng, (5,), d), _x(rng, (5,), d), _x(rng, (5,), d)), dict(margin=3.0, p=1.0, swap=True)),
            Sample((_x(rng, (3, 5), d), _x(rng, (3, 5), d), _x(rng, (3, 5), d)), dict(margin=2.0, p=3.0, reduction="none"))]


def _multilabel_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d, 0, 1))),
            Sample((_x(rng, (4,), d), _x(rng, (4,), d, 0, 1)), dict(weight=_x(rng, (4,), d, 0.2, 2), reduction="sum")),
            Sample((_x(rng, (2, 4), d), _x(rng, (2, 4), d, 0, 1)),
                   dict(weight=_x(rng, (2, 4), d, 0.2, 2), reduction="none"))]  # fmt: skip


def _multi_margin_samples(rng, d):
    return [Sample((_x(rng, (4, 5), d), _classes(rng, (4,), 5, d))),
            Sample((_x(rng, (5,), d), _classes(rng, (), 5, d)), dict(p=2, margin=0.5)),
            Sample((_x(rng, (3, 5), d), _classes(rng, (3,), 5, d)), dict(weight=_x(rng, (5,), d, 0.2, 2), reduction="none")),
            Sample((_x(rng, (3, 5), d), _classes(rng, (3,), 5, d)), dict(p=2, weight=_x(rng, (5,), d, 0.2, 2), reduction="sum"))]


def _normalize_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d),)), Sample((_x(rng, (3, 4), d),), dict(p=1.0, dim=0)),
            Sample((_x(rng, (2, 3, 4), d),), dict(p=math.inf, dim=-1)), Sample((_x(rng, (5,), d),), dict(dim=0, p=3.0)),
            Sample((_x(rng, (0, 3), d),))]  # fmt: skip


def _cos_sim_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d))), Sample((_x(rng, (3, 4), d), _x(rng, (1, 4), d))),
            Sample((_x(rng, (2, 3, 4), d), _x(rng, (3, 4), d)), dict(dim=-1)), Sample((_x(rng, (5,), d), _x(rng, (5,), d)), dict(dim=0))]


def _pairwise_samples(rng, d):
    return [Sample((_x(rng, (3, 4), d), _x(rng, (3, 4), d))), Sample((_x(rng, (3, 4), d), _x(rng, (4,), d)), dict(p=1.0)),
            Sample((_x(rng, (2, 3, 4), d), _x(rng, (3, 4), d)), dict(p=3.0, keepdim=True)),
            Sample((_x(rng, (4,), d), _x(rng, (4,), d)), dict(p=math.inf, eps=0.0))]  # fmt: skip


def _pdist_samples(rng, d):
    return [Sample((_x(rng, (4, 3), d),)), Sample((_x(rng, (5, 2), d),), dict(p=1.0)), Sample((_x(rng, (3, 4), d),), dict(p=3.0)),
            Sample((_x(rng, (4, 3), d),), dict(p=math.inf)), Sample((_x(rng, (1, 3), d),))]  # fmt: skip


# --- functional entries -----------------------------------------------------------------------------------

# name: (reference, samples, eager-only samples or None)
_FUNCTIONS = {
    "cross_entropy": (ref_cross_entropy, functools.partial(_class_samples, ce=True), None),
    "nll_loss": (ref_nll_loss, functools.partial(_class_samples, ce=False), None),
    "mse_loss": (ref_mse, _weighted_pair_samples, None),
    "l1_loss": (ref_l1, _weighted_pair_samples, None),
    "smooth_l1_loss": (ref_smooth_l1, _pair_samples(options=({}, {"beta": 0.5}, {"beta": 0.0}, {})), None),
    "huber_loss": (ref_huber, _weighted_pair_samples, None),
    "binary_cross_entropy": (ref_bce, _bce_samples, _bce_eager),
    "binary_cross_entropy_with_logits": (ref_bce_logits, _bce_logits_samples, None),
    "kl_div": (ref_kl_div, _pair_samples(t_low=0.1, t_high=1.0, options=({}, {}, {}, {"reduction": "batchmean"})), None),
    "poisson_nll_loss": (ref_poisson, _poisson_samples, None),
    "gaussian_nll_loss": (ref_gaussian, _gaussian_samples, _gaussian_eager),
    "soft_margin_loss": (ref_soft_margin, _sign_samples, None),
    "margin_ranking_loss": (ref_margin_ranking, _ranking_samples, None),
    "hinge_embedding_loss": (ref_hinge, functools.partial(_sign_samples, margin_key="margin", labels=True), None),
    "cosine_embedding_loss": (ref_cosine_embedding, _cos_emb_samples, None),
    "triplet_margin_loss": (ref_triplet, _triplet_samples, None),
    "multilabel_soft_margin_loss": (ref_multilabel, _multilabel_samples, None),
    "multi_margin_loss": (ref_multi_margin, _multi_margin_samples, None),
    "normalize": (ref_normalize, _normalize_samples, None),
    "cosine_similarity": (ref_cosine_similarity, _cos_sim_samples, None),
    "pairwise_distance": (ref_pairwise_distance, _pairwise_samples, None),
    "pdist": (ref_pdist, _pdist_samples, None),
}

for _name, (_ref, _samples, _eager) in _FUNCTIONS.items():
    register(OpInfo(f"nn.functional.{_name}", getattr(F, _name), _ref, FLOATING, _eager or _samples, FLOAT_ONLY,
                    tol={**SUM_TOLERANCES, **HALF_TOL}, ad_samples=_samples if _eager else None))  # fmt: skip


# --- module entries: pure wrappers ------------------------------------------------------------------------

# class: (functional name, the functional's keyword arguments the module takes as array fields)
_MODULES = {
    "CrossEntropyLoss": ("cross_entropy", ("weight",)), "NLLLoss": ("nll_loss", ("weight",)),
    "MSELoss": ("mse_loss", ()), "L1Loss": ("l1_loss", ()), "SmoothL1Loss": ("smooth_l1_loss", ()),
    "HuberLoss": ("huber_loss", ()), "BCELoss": ("binary_cross_entropy", ("weight",)),
    "BCEWithLogitsLoss": ("binary_cross_entropy_with_logits", ("weight", "pos_weight")),
    "KLDivLoss": ("kl_div", ()), "PoissonNLLLoss": ("poisson_nll_loss", ()),
    "GaussianNLLLoss": ("gaussian_nll_loss", ()), "SoftMarginLoss": ("soft_margin_loss", ()),
    "MarginRankingLoss": ("margin_ranking_loss", ()), "HingeEmbeddingLoss": ("hinge_embedding_loss", ()),
    "CosineEmbeddingLoss": ("cosine_embedding_loss", ()), "TripletMarginLoss": ("triplet_margin_loss", ()),
    "MultiLabelSoftMarginLoss": ("multilabel_soft_margin_loss", ("weight",)),
    "MultiMarginLoss": ("multi_margin_loss", ("weight",)), "CosineSimilarity": ("cosine_similarity", ()),
    "PairwiseDistance": ("pairwise_distance", ()),
}  # fmt: skip
# Positional options of the functional that the module takes by keyword (PoissonNLLLoss(log_input, full)).
_POSITIONAL = {"poisson_nll_loss": ("log_input", "full")}
_N_INPUTS = {"margin_ranking_loss": 3, "cosine_embedding_loss": 3, "triplet_margin_loss": 3}


@functools.cache
def _module(cls: str, config: tuple, shapes: tuple) -> nn.Module:
    """The module for one configuration, its array fields holding placeholders of the given shapes."""
    arrays = {name: enp.ones(shape) for name, shape in shapes}
    return getattr(nn, cls)(**dict(config), **arrays)


def _module_op(cls: str):
    fname, array_fields = _MODULES[cls]
    n_inputs = _N_INPUTS.get(fname, 2)

    def op(*args, **kwargs):
        inputs, extra = args[:n_inputs], args[n_inputs:]
        if fname == "gaussian_nll_loss":  # var is a call argument
            inputs, extra = args[:3], args[3:]
        kwargs.update(zip(_POSITIONAL.get(fname, ()), extra))
        params = {k: kwargs.pop(k) for k in array_fields if k in kwargs}
        shapes = tuple(sorted((k, np.shape(v)) for k, v in params.items()))
        module = _module(cls, tuple(sorted(kwargs.items())), shapes)
        return nn.functional_call(module, params, *inputs)

    return op


def _module_samples(cls: str, make):
    """The functional's samples whose options the module takes (MSELoss has no weight=)."""
    if make is None:
        return None
    fields = {f.name for f in getattr(nn, cls)._ember_fields}

    def samples(rng, d):
        return [s for s in make(rng, d) if set(s.kwargs) <= fields]

    return samples


for _cls, (_fname, _) in _MODULES.items():
    _ref, _samples, _eager = (_FUNCTIONS[_fname][0], *(_module_samples(_cls, m) for m in _FUNCTIONS[_fname][1:]))
    register(OpInfo(f"nn.{_cls}", _module_op(_cls), _ref, FLOATING, _eager or _samples, FLOAT_ONLY,
                    tol={**SUM_TOLERANCES, **HALF_TOL}, ad_samples=_samples if _eager else None))  # fmt: skip
