"""PyTorch parity of ember.nn's losses and distances: forward values and the gradients with respect to the
input and every weight (and float targets where PyTorch differentiates them) for every option combination;
stability at logits of +-1e4; the modules; the error messages for bad input; the behaviour under transforms."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import DTypeError, EmberIndexError, InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")  # torch's kl_div

from nn_parity import assert_close  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-5)


def _rng(*seed):
    return np.random.default_rng([11, *seed])


def _x(rng, shape, low=None, high=None) -> np.ndarray:
    if low is None:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.uniform(low, high, shape).astype(np.float32)


def _fd_grad(scalar, value: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central finite differences of ``scalar`` (a float64 torch computation) at ``value``: the reference for
    torch's gradients it does not implement (nll_loss / cross_entropy / multi_margin_loss w.r.t. the weight)."""
    base = value.astype(np.float64)
    grad = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        up, down = base.copy(), base.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (scalar(up) - scalar(down)) / (2 * h)
    return grad


def _torch_call(tfn, args, kwargs, replace: dict, dtype=None):
    t_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    t_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    for slot, v in replace.items():
        (t_kwargs if isinstance(slot, str) else t_args)[slot] = v
    if dtype is not None:
        t_args = [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in t_args]
        t_kwargs = {k: v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                    for k, v in t_kwargs.items()}  # fmt: skip
    return tfn(*t_args, **t_kwargs)


def _torch_grads(tfn, args, kwargs, diff, ct):
    """torch's output and its gradients of ``sum(out * ct)`` w.r.t. the slots in ``diff``; finite differences
    of torch's float64 forward for the slots torch does not differentiate."""
    leaves = {}
    for slot in diff:
        leaves[slot] = torch.tensor(kwargs[slot] if isinstance(slot, str) else args[slot]).requires_grad_(True)
    try:
        t_out = _torch_call(tfn, args, kwargs, leaves)
        auto = list(diff)
    except RuntimeError as err:
        assert "not differentiable" in str(err) or "not implemented" in str(err), err
        auto = [s for s in diff if not isinstance(s, str)]
        t_out = _torch_call(tfn, args, kwargs, {s: leaves[s] for s in auto})
    (t_out * torch.tensor(ct)).sum().backward()
    grads = {}
    for slot in diff:
        if slot in auto:
            grads[slot] = leaves[slot].grad
            continue
        point = kwargs[slot] if isinstance(slot, str) else args[slot]

        def scalar(v, slot=slot):
            out = _torch_call(tfn, args, kwargs, {slot: torch.tensor(v)}, torch.float64)
            return float((out * torch.tensor(ct, dtype=torch.float64)).sum())

        grads[slot] = _fd_grad(scalar, point)
    return t_out, grads


def _parity(name: str, args: tuple, kwargs: dict, diff: tuple = (0,), tol: dict = TOL) -> None:
    """ember's ``F.<name>`` against torch's on the same NumPy arguments: the value, and the gradient of a
    weighted sum of the outputs with respect to the arguments in ``diff`` (positions, or keyword names)."""
    tfn = getattr(TF, name)
    shape = tuple(_torch_call(tfn, args, kwargs, {}).shape)
    ct = _rng(1).standard_normal(shape).astype(np.float32)
    t_out, t_grads = _torch_grads(tfn, args, kwargs, diff, ct)

    def fn(*diffs):
        e_args, e_kwargs = list(args), dict(kwargs)
        for slot, v in zip(diff, diffs):
            (e_kwargs if isinstance(slot, str) else e_args)[slot] = v
        out = getattr(F, name)(*e_args, **e_kwargs)
        return (out * ct).sum(), out

    start = [enp.asarray(kwargs[s] if isinstance(s, str) else args[s]) for s in diff]
    (_, out), grads = ember.value_and_grad(fn, argnums=tuple(range(len(diff))), has_aux=True)(*start)
    assert out.shape == tuple(t_out.shape), (out.shape, t_out.shape)
    assert_close(out, t_out, **tol, what=f"{name} forward")
    for slot, g in zip(diff, grads):
        assert_close(g, t_grads[slot], **tol, what=f"{name} d/d {slot}")


REDUCTIONS = ("none", "mean", "sum")
CLASS_SHAPES = [((5,), ()), ((4, 5), (4,)), ((2, 5, 3), (2, 3)), ((2, 5, 3, 2), (2, 3, 2)), ((1, 1), (1,))]


# --- cross_entropy / nll_loss -----------------------------------------------------------------------


def _class_targets(rng, shape, n_classes, ignore_index):
    t = rng.integers(0, n_classes, shape).astype(np.int64)
    t = np.where(t == ignore_index, (t + 1) % n_classes, t)  # only the chosen ones ignored
    if ignore_index is not None and t.size > 1:
        t.reshape(-1)[:: 2] = ignore_index  # every other target ignored (not all: the mean would be NaN)
    return t


@pytest.mark.parametrize("shapes", CLASS_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 2, -1])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_class_indices(shapes, reduction, weighted, ignore_index, label_smoothing):
    in_shape, t_shape = shapes
    rng = _rng(len(in_shape), weighted)
    c = in_shape[0 if len(in_shape) == 1 else 1]
    x = _x(rng, in_shape)
    t = _class_targets(rng, t_shape, c, ignore_index if c > 2 or ignore_index == -1 else None)
    kwargs = dict(reduction=reduction, label_smoothing=label_smoothing)
    diff = (0,)
    if ignore_index is not None:
        kwargs["ignore_index"] = ignore_index
    if weighted:
        kwargs["weight"] = _x(rng, (c,), 0.2, 2.0)
        diff = (0, "weight")
    _parity("cross_entropy", (x, t), kwargs, diff)


@pytest.mark.parametrize("shapes", CLASS_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 2, -1])
def test_nll_loss(shapes, reduction, weighted, ignore_index):
    in_shape, t_shape = shapes
    rng = _rng(len(in_shape), weighted, 5)
    c = in_shape[0 if len(in_shape) == 1 else 1]
    x = _x(rng, in_shape)
    t = _class_targets(rng, t_shape, c, ignore_index if c > 2 or ignore_index == -1 else None)
    kwargs = dict(reduction=reduction)
    diff = (0,)
    if ignore_index is not None:
        kwargs["ignore_index"] = ignore_index
    if weighted:
        kwargs["weight"] = _x(rng, (c,), 0.2, 2.0)
        diff = (0, "weight")
    _parity("nll_loss", (x, t), kwargs, diff)


@pytest.mark.parametrize("in_shape", [(5,), (4, 5), (2, 5, 3), (2, 5, 3, 2)], ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_cross_entropy_probabilities(in_shape, reduction, weighted, label_smoothing):
    rng = _rng(len(in_shape), weighted, 9)
    axis = 0 if len(in_shape) == 1 else 1
    x = _x(rng, in_shape)
    logits = _x(rng, in_shape)
    p = (np.exp(logits) / np.exp(logits).sum(axis, keepdims=True)).astype(np.float32)
    kwargs = dict(reduction=reduction, label_smoothing=label_smoothing)
    diff = (0, 1)
    if weighted:
        kwargs["weight"] = _x(rng, (in_shape[axis],), 0.2, 2.0)
        diff = (0, 1, "weight")
    _parity("cross_entropy", (x, p), kwargs, diff)


def test_cross_entropy_all_ignored_and_empty_give_nan_as_torch():
    x = _x(_rng(0), (3, 4))
    t = np.full(3, -100)
    assert math.isnan(F.cross_entropy(x, t).item()) and math.isnan(TF.cross_entropy(torch.tensor(x), torch.tensor(t)).item())
    for target in (np.zeros((0,), np.int64), np.zeros((0, 4), np.float32)):
        ours = F.cross_entropy(np.zeros((0, 4), np.float32), target)
        assert math.isnan(ours.item()) and math.isnan(TF.cross_entropy(torch.zeros(0, 4), torch.tensor(target)).item())
        assert F.cross_entropy(np.zeros((0, 4), np.float32), target, reduction="none").shape == (0,)


# --- elementwise losses ------------------------------------------------------------------------------

SHAPES = [(), (7,), (3, 4), (2, 3, 4), (0, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, kwargs", [
    ("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", dict(beta=0.5)),
    ("smooth_l1_loss", dict(beta=0.0)), ("huber_loss", {}), ("huber_loss", dict(delta=0.3)),
    ("soft_margin_loss", {}), ("kl_div", {}), ("kl_div", dict(log_target=True)),
    ("poisson_nll_loss", {}), ("poisson_nll_loss", dict(full=True)), ("poisson_nll_loss", dict(log_input=False)),
    ("poisson_nll_loss", dict(log_input=False, full=True, eps=1e-3)),
    ("binary_cross_entropy", {}), ("binary_cross_entropy_with_logits", {}),
    ("hinge_embedding_loss", {}), ("hinge_embedding_loss", dict(margin=0.5)), ("multilabel_soft_margin_loss", {}),
])  # fmt: skip
def test_pointwise_losses(shape, reduction, name, kwargs):
    if name == "multilabel_soft_margin_loss" and len(shape) not in (1, 2):
        pytest.skip("multilabel_soft_margin_loss takes (C) or (N, C)")
    rng = _rng(len(shape), len(name))
    x = _x(rng, shape)
    t = _x(rng, shape)
    diff = (0, 1)
    if name in ("kl_div",) and not kwargs.get("log_target"):
        t = _x(rng, shape, 0.05, 1.0)
    if name == "poisson_nll_loss":
        t = _x(rng, shape, 0.0, 4.0)
        if not kwargs.get("log_input", True):
            x = _x(rng, shape, 0.1, 3.0)
        diff = (0,)
    if name == "binary_cross_entropy":
        x, t = _x(rng, shape, 0.02, 0.98), _x(rng, shape, 0.0, 1.0)
    if name in ("binary_cross_entropy_with_logits", "multilabel_soft_margin_loss"):
        t = _x(rng, shape, 0.0, 1.0)
    if name in ("soft_margin_loss", "hinge_embedding_loss"):
        t = np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)
        diff = (0,)
    if name in ("smooth_l1_loss", "huber_loss", "l1_loss"):
        x = np.asarray(x + np.sign(x - t) * 0.05, np.float32)  # away from the kinks |x - t| = 0 and = beta / delta
    _parity(name, (x, t), dict(reduction=reduction, **kwargs), diff)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_elementwise_weight(name, reduction):
    rng = _rng(3, len(name))
    x, t = _x(rng, (3, 4)), _x(rng, (3, 4))
    _parity(name, (x, t), dict(reduction=reduction, weight=_x(rng, (3, 4), 0.1, 2.0)), (0, 1, "weight"))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 1), (3, 4)], ids=str)
@pytest.mark.parametrize("pos_weight_shape", [None, (4,), (1,), (3, 4)], ids=str)
def test_bce_with_logits_weights(reduction, weight_shape, pos_weight_shape):
    rng = _rng(4)
    x, t = _x(rng, (3, 4)) * 3, _x(rng, (3, 4), 0.0, 1.0)
    kwargs, diff = dict(reduction=reduction), [0, 1]
    if weight_shape:
        kwargs["weight"] = _x(rng, weight_shape, 0.1, 2.0)
        diff.append("weight")
    if pos_weight_shape:
        kwargs["pos_weight"] = _x(rng, pos_weight_shape, 0.1, 3.0)
        diff.append("pos_weight")
    _parity("binary_cross_entropy_with_logits", (x, t), kwargs, tuple(diff))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 4)], ids=str)
def test_bce_and_multilabel_weights(reduction, weight_shape):
    rng = _rng(5)
    x, t = _x(rng, (3, 4), 0.02, 0.98), _x(rng, (3, 4), 0.0, 1.0)
    kwargs, diff = dict(reduction=reduction), (0,)
    if weight_shape:
        kwargs["weight"] = _x(rng, weight_shape, 0.1, 2.0)
        diff = (0, "weight")
    _parity("binary_cross_entropy", (x, t), kwargs, diff)
    _parity("multilabel_soft_margin_loss", (x * 4 - 2, t), kwargs, diff)


def test_bce_clamps_the_log_at_minus_100_as_torch():
    x = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    t = np.array([1.0, 0.0, 0.0, 1.0], np.float32)
    assert_close(F.binary_cross_entropy(x, t, reduction="none"),
                 TF.binary_cross_entropy(torch.tensor(x), torch.tensor(t), reduction="none"))  # fmt: skip
    assert F.binary_cross_entropy(x, t, reduction="none").tolist() == [100.0, 100.0, 0.0, 0.0]
    g = ember.grad(lambda x: F.binary_cross_entropy(x, t, reduction="sum"))(enp.asarray(x))
    tx = torch.tensor(x, requires_grad=True)
    TF.binary_cross_entropy(tx, torch.tensor(t), reduction="sum").backward()
    assert_close(g, tx.grad, rtol=1e-6, atol=0)  # torch's (x - t) / max(x (1 - x), 1e-12): +-1e12 at the edges


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)], ids=str)
def test_kl_div_reductions(reduction, shape):
    rng = _rng(6, len(shape))
    _parity("kl_div", (_x(rng, shape), _x(rng, shape, 0.05, 1.0)), dict(reduction=reduction), (0, 1))
    _parity("kl_div", (_x(rng, shape), _x(rng, shape)), dict(reduction=reduction, log_target=True), (0, 1))


def test_kl_div_zero_target_is_zero():
    x = np.array([-1.0, -2.0], np.float32)
    t = np.array([0.0, 0.5], np.float32)
    _parity("kl_div", (x, t), dict(reduction="sum"), (0,))


@pytest.mark.parametrize("var_shape", [(3, 4), (3,), (3, 1), (1, 4), "float"], ids=str)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gaussian_nll_loss(var_shape, full, reduction):
    rng = _rng(7)
    x, t = _x(rng, (3, 4)), _x(rng, (3, 4))
    if var_shape == "float":
        _parity("gaussian_nll_loss", (x, t, 0.7), dict(full=full, reduction=reduction), (0, 1))
        return
    var = _x(rng, var_shape, 0.1, 2.0)
    var.reshape(-1)[0] = 1e-8  # below eps: clamped in value, the gradient passing through as in torch
    _parity("gaussian_nll_loss", (x, t, var), dict(full=full, reduction=reduction), (0, 1, 2))


# --- margins and embeddings ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)], ids=str)
@pytest.mark.parametrize("margin", [0.0, 0.7])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(shape, margin, reduction):
    rng = _rng(8, len(shape))
    y = np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)
    _parity("margin_ranking_loss", (_x(rng, shape), _x(rng, shape), y), dict(margin=margin, reduction=reduction), (0, 1))


@pytest.mark.parametrize("shape", [(6,), (4, 6)], ids=str)
@pytest.mark.parametrize("margin", [0.0, 0.3, -0.5])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(shape, margin, reduction):
    rng = _rng(9, len(shape))
    y = np.where(rng.random(shape[:-1]) < 0.5, -1.0, 1.0).astype(np.float32)
    _parity("cosine_embedding_loss", (_x(rng, shape), _x(rng, shape), y), dict(margin=margin, reduction=reduction),
            (0, 1))  # fmt: skip


@pytest.mark.parametrize("shape", [(6,), (4, 6)], ids=str)
@pytest.mark.parametrize("p, swap, margin", [(2.0, False, 1.0), (1.0, True, 0.5), (3.0, False, 2.0), (2.0, True, 5.0)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_margin_loss(shape, p, swap, margin, reduction):
    rng = _rng(10, len(shape))
    a, pos, neg = _x(rng, shape), _x(rng, shape), _x(rng, shape)
    _parity("triplet_margin_loss", (a, pos, neg), dict(margin=margin, p=p, swap=swap, reduction=reduction), (0, 1, 2))


@pytest.mark.parametrize("shape", [(5,), (4, 5)], ids=str)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("margin", [1.0, 0.4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss(shape, p, margin, weighted, reduction):
    rng = _rng(11, len(shape))
    x = _x(rng, shape)
    t = rng.integers(0, shape[-1], shape[:-1]).astype(np.int64)
    kwargs, diff = dict(p=p, margin=margin, reduction=reduction), (0,)
    if weighted:
        kwargs["weight"] = _x(rng, (shape[-1],), 0.2, 2.0)
        diff = (0, "weight")
    _parity("multi_margin_loss", (x, t), kwargs, diff)


# --- distances ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf])
@pytest.mark.parametrize("shape, dim", [((4, 5), 1), ((4, 5), 0), ((2, 3, 4), -1), ((5,), 0)], ids=str)
def test_normalize(p, shape, dim):
    x = _x(_rng(12), shape)
    x[(0,) * len(shape)] = 0.0
    _parity("normalize", (x,), dict(p=p, dim=dim), (0,))


def test_normalize_zero_vector_gradient_matches_torch():
    _parity("normalize", (np.zeros((2, 3), np.float32),), {}, (0,))


@pytest.mark.parametrize("shapes, dim", [(((4, 5), (4, 5)), 1), (((4, 5), (1, 5)), 1), (((3, 4, 5), (4, 5)), -1),
                                         (((5,), (5,)), 0), (((4, 5), (4, 5)), 0)], ids=str)  # fmt: skip
def test_cosine_similarity(shapes, dim):
    rng = _rng(13)
    a, b = _x(rng, shapes[0]), _x(rng, shapes[1])
    a[(0,) * a.ndim] = 0.0
    _parity("cosine_similarity", (a, b), dict(dim=dim), (0, 1))


def test_cosine_similarity_of_zero_vectors_matches_torch():
    _parity("cosine_similarity", (np.zeros((2, 3), np.float32), _x(_rng(0), (2, 3))), {}, (0, 1))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((5,), (5,)), ((2, 3, 5), (3, 5))], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("eps", [1e-6, 0.0])
def test_pairwise_distance(p, shapes, keepdim, eps):
    rng = _rng(14)
    a, b = _x(rng, shapes[0]), _x(rng, shapes[1])
    _parity("pairwise_distance", (a, b), dict(p=p, keepdim=keepdim, eps=eps), (0, 1))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, 0.0, math.inf])
@pytest.mark.parametrize("shape", [(5, 3), (1, 3), (2, 1), (6, 4)], ids=str)
def test_pdist_with_equal_rows(p, shape):
    x = _x(_rng(15), shape)
    if shape[0] > 2:
        x[1] = x[2]  # zero distance: torch's gradient is 0 there, not NaN
    _parity("pdist", (x,), dict(p=p), (0,))


def test_pairwise_distance_of_equal_vectors_without_eps_has_torch_gradient():
    a = _x(_rng(16), (3, 4))
    _parity("pairwise_distance", (a, a.copy()), dict(eps=0.0), (0, 1))


# --- stability at large logits ------------------------------------------------------------------------

STABLE = [
    ("cross_entropy", lambda x: F.cross_entropy(x, enp.array([0, 2]), label_smoothing=0.1)),
    ("cross_entropy.probabilities", lambda x: F.cross_entropy(x, enp.full((2, 3), 1 / 3))),
    ("binary_cross_entropy_with_logits", lambda x: F.binary_cross_entropy_with_logits(x, enp.full((2, 3), 0.5),
                                                                                       pos_weight=enp.full(3, 2.0))),
    ("soft_margin_loss", lambda x: F.soft_margin_loss(x, enp.ones((2, 3)))),
    ("multilabel_soft_margin_loss", lambda x: F.multilabel_soft_margin_loss(x, enp.full((2, 3), 0.5))),
    ("nll_loss(log_softmax)", lambda x: F.nll_loss(x - ember.scipy.special.logsumexp(x, 1, keepdims=True),
                                                   enp.array([1, 0]))),
]  # fmt: skip


@pytest.mark.parametrize("name, fn", STABLE, ids=[s[0] for s in STABLE])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_nan_or_inf_at_large_logits(name, fn, dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4]], dtype)
    with ember.config.x64(dtype == np.float64):
        value, grad = ember.value_and_grad(fn)(enp.asarray(x))
    assert np.isfinite(value.item()), value
    assert np.isfinite(np.asarray(grad)).all(), grad
    tx = torch.tensor(x, requires_grad=True)
    if name == "cross_entropy":
        tv = TF.cross_entropy(tx, torch.tensor([0, 2]), label_smoothing=0.1)
    elif name == "binary_cross_entropy_with_logits":
        tv = TF.binary_cross_entropy_with_logits(tx, torch.full((2, 3), 0.5, dtype=tx.dtype),
                                                 pos_weight=torch.full((3,), 2.0, dtype=tx.dtype))  # fmt: skip
    else:
        return
    tv.backward()
    assert_close(value, tv, rtol=1e-6, atol=1e-3)
    assert_close(grad, tx.grad, rtol=1e-6, atol=1e-6)


# --- modules --------------------------------------------------------------------------------------------

W = np.array([0.5, 1.0, 2.0, 1.5], np.float32)
MODULE_CASES = [
    ("CrossEntropyLoss", dict(weight=W, ignore_index=1, label_smoothing=0.2), "class"),
    ("CrossEntropyLoss", dict(reduction="sum"), "class"),
    ("NLLLoss", dict(weight=W, reduction="none"), "class"),
    ("MSELoss", dict(reduction="sum"), "pair"), ("L1Loss", {}, "pair"), ("SmoothL1Loss", dict(beta=0.3), "pair"),
    ("HuberLoss", dict(delta=0.4), "pair"), ("BCELoss", dict(weight=W), "prob"),
    ("BCEWithLogitsLoss", dict(weight=W, pos_weight=W[::-1].copy()), "logit"),
    ("KLDivLoss", dict(reduction="batchmean"), "kl"), ("KLDivLoss", dict(log_target=True), "pair"),
    ("PoissonNLLLoss", dict(full=True), "poisson"), ("GaussianNLLLoss", dict(full=True), "gauss"),
    ("SoftMarginLoss", {}, "sign"), ("MarginRankingLoss", dict(margin=0.2), "rank"),
    ("HingeEmbeddingLoss", dict(margin=0.5), "sign"), ("CosineEmbeddingLoss", dict(margin=0.1), "cosemb"),
    ("TripletMarginLoss", dict(margin=0.5, p=1.0, swap=True), "triplet"), ("MultiLabelSoftMarginLoss", dict(weight=W), "logit"),
    ("MultiMarginLoss", dict(p=2, margin=0.5, weight=W), "class"), ("CosineSimilarity", dict(dim=0), "pair"),
    ("PairwiseDistance", dict(p=1.0, keepdim=True), "pair"),
]  # fmt: skip


def _module_inputs(kind, rng):
    x = _x(rng, (3, 4))
    sign = np.where(rng.random((3, 4)) < 0.5, -1.0, 1.0).astype(np.float32)
    return {
        "class": [x, rng.integers(0, 4, (3,)).astype(np.int64)], "pair": [x, _x(rng, (3, 4))],
        "prob": [_x(rng, (3, 4), 0.05, 0.95), _x(rng, (3, 4), 0, 1)], "logit": [x, _x(rng, (3, 4), 0, 1)],
        "kl": [x, _x(rng, (3, 4), 0.05, 1)], "poisson": [x, _x(rng, (3, 4), 0, 4)],
        "gauss": [x, _x(rng, (3, 4)), _x(rng, (3, 4), 0.1, 2)], "sign": [x, sign],
        "rank": [_x(rng, (3,)), _x(rng, (3,)), sign[:, 0]], "cosemb": [x, _x(rng, (3, 4)), sign[:, 0]],
        "triplet": [x, _x(rng, (3, 4)), _x(rng, (3, 4))],
    }[kind]  # fmt: skip


@pytest.mark.parametrize("cls, kwargs, kind", MODULE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(MODULE_CASES)])
def test_modules_match_torch(cls, kwargs, kind):
    rng = _rng(17, len(cls))
    inputs = _module_inputs(kind, rng)
    ours = getattr(nn, cls)(**{k: enp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    theirs = getattr(torch.nn, cls)(**{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    assert repr(ours) == repr(theirs)
    t_inputs = [torch.tensor(a, requires_grad=i == 0) for i, a in enumerate(inputs)]
    t_out = theirs(*t_inputs)
    ct = _rng(1).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.tensor(ct)).sum().backward()

    def loss(module, x):
        out = module(x, *inputs[1:])
        return (out * ct).sum(), out

    (_, out), (g_module, g_x) = ember.value_and_grad(loss, argnums=(0, 1), has_aux=True)(ours, enp.asarray(inputs[0]))
    assert_close(out, t_out, **TOL, what="forward")
    assert_close(g_x, t_inputs[0].grad, **TOL, what="d/d input")
    names = [name for name, _ in ours.named_parameters()]
    assert names == [name for name, _ in theirs.named_buffers()]  # torch holds weight / pos_weight as buffers
    for name in names:
        expected = _weight_grad(cls, kwargs, name, inputs, ct)
        assert_close(getattr(g_module, name), expected, **TOL, what=f"d/d {name}")


def _weight_grad(cls, kwargs, name, inputs, ct):
    """torch's gradient with respect to a loss module's weight buffer: torch does not track buffers, so the
    module is called with the buffer replaced by a leaf tensor (finite differences where torch has no rule)."""
    def call(value):
        t_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        theirs = getattr(torch.nn, cls)(**t_kwargs)
        setattr(theirs, name, value)
        return theirs(*[torch.tensor(a) for a in inputs])

    leaf = torch.tensor(kwargs[name]).requires_grad_(True)
    try:
        (call(leaf) * torch.tensor(ct)).sum().backward()
        return leaf.grad
    except RuntimeError as err:
        assert "not differentiable" in str(err), err

    def scalar(v):
        value = torch.tensor(v)
        t_kwargs = {k: torch.tensor(x, dtype=torch.float64) if isinstance(x, np.ndarray) else x
                    for k, x in kwargs.items()}  # fmt: skip
        theirs = getattr(torch.nn, cls)(**t_kwargs)
        setattr(theirs, name, value)
        t_in = [torch.tensor(a, dtype=torch.float64) if a.dtype == np.float32 else torch.tensor(a) for a in inputs]
        return float((theirs(*t_in) * torch.tensor(ct, dtype=torch.float64)).sum())

    return _fd_grad(scalar, kwargs[name])


def test_module_weight_is_a_leaf_and_jit_works():
    loss = nn.CrossEntropyLoss(weight=[1.0, 2.0, 3.0])
    assert isinstance(loss.weight, ember.Array)
    assert len(ember.tree.leaves(loss)) == 1
    x, t = enp.asarray(_x(_rng(2), (4, 3))), enp.array([0, 1, 2, 1])
    assert_close(ember.jit(lambda m, x: m(x, t))(loss, x), F.cross_entropy(x, t, enp.array([1.0, 2.0, 3.0])))


def test_from_torch_keeps_the_loss_options():
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0]), ignore_index=1, label_smoothing=0.1)
    ours = nn.from_torch(theirs)
    assert isinstance(ours, nn.CrossEntropyLoss)
    assert (ours.ignore_index, ours.label_smoothing, ours.reduction) == (1, 0.1, "mean")
    assert_close(ours.weight, theirs.weight)


# --- bad input --------------------------------------------------------------------------------------------


def test_bad_reduction():
    with pytest.raises(InvalidArgumentError, match=r"mse_loss: reduction='avg' is not one of 'none', 'mean', 'sum'"):
        F.mse_loss(enp.ones(3), enp.ones(3), reduction="avg")
    with pytest.raises(InvalidArgumentError, match="cross_entropy: reduction='batchmean'"):
        F.cross_entropy(enp.ones((2, 3)), enp.array([0, 1]), reduction="batchmean")
    with pytest.raises(InvalidArgumentError, match="KLDivLoss: reduction='avg'"):
        nn.KLDivLoss(reduction="avg")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss", "poisson_nll_loss"])  # fmt: skip
def test_no_silent_broadcast_of_n1_against_n(name):
    with pytest.raises(ShapeError, match=rf"{name}: target of shape \(4,\) .* does not match input of shape \(4, 1\)"):
        getattr(F, name)(enp.full((4, 1), 0.5), enp.full((4,), 0.5))


def test_module_shape_error_names_the_module():
    with pytest.raises(ShapeError, match=r"^MSELoss: mse_loss: target of shape \(3,\)"):
        nn.MSELoss()(enp.ones((3, 1)), enp.ones(3))


def test_class_target_errors():
    x = enp.zeros((3, 4))
    with pytest.raises(EmberIndexError, match=r"cross_entropy: target 7 is out of bounds for 4 classes"):
        F.cross_entropy(x, enp.array([0, 7, 1]))
    with pytest.raises(EmberIndexError, match=r"nll_loss: target -3 is out of bounds .* or equal ignore_index=-100"):
        F.nll_loss(x, enp.array([0, -3, 1]))
    with pytest.raises(EmberIndexError, match="multi_margin_loss: target 4 is out of bounds"):
        F.multi_margin_loss(x, enp.array([0, 4, 1]))
    with pytest.raises(DTypeError, match="cross_entropy: class-index targets must be integers, got float32"):
        F.cross_entropy(x, enp.array([0.0, 1.0, 2.0]))
    with pytest.raises(ShapeError, match=r"must have shape \(3,\), got \(3, 1\)"):
        F.cross_entropy(x, enp.zeros((3, 1), dtype=int))
    with pytest.raises(ShapeError, match=r"a float target holds class probabilities and must have the input's shape"):
        F.cross_entropy(x, enp.zeros((3, 3)))
    with pytest.raises(ShapeError, match=r"weight must have shape \(C,\) = \(4,\)"):
        F.cross_entropy(x, enp.array([0, 1, 2]), enp.ones(3))
    with pytest.raises(InvalidArgumentError, match="ignore_index=1 applies to class-index targets only"):
        F.cross_entropy(x, enp.zeros((3, 4)), ignore_index=1)
    with pytest.raises(InvalidArgumentError, match=r"label_smoothing must be in \[0, 1\]"):
        F.cross_entropy(x, enp.array([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ShapeError, match="must have a class dimension"):
        F.nll_loss(enp.zeros(()), enp.array(0))


def test_other_errors():
    with pytest.raises(InvalidArgumentError, match=r"binary_cross_entropy: every element of the input must be a "
                                                   r"probability in \[0, 1\]"):  # fmt: skip
        F.binary_cross_entropy(enp.array([1.5]), enp.array([1.0]))
    with pytest.raises(ShapeError, match=r"pos_weight of shape \(3,\) does not broadcast to the input's shape \(2, 4\)"):
        F.binary_cross_entropy_with_logits(enp.zeros((2, 4)), enp.zeros((2, 4)), pos_weight=enp.ones(3))
    with pytest.raises(InvalidArgumentError, match="gaussian_nll_loss: var has negative entries"):
        F.gaussian_nll_loss(enp.zeros(2), enp.zeros(2), enp.array([1.0, -1.0]))
    with pytest.raises(ShapeError, match=r"gaussian_nll_loss: var of shape \(3,\) fits neither"):
        F.gaussian_nll_loss(enp.zeros((2, 4)), enp.zeros((2, 4)), enp.ones(3))
    with pytest.raises(InvalidArgumentError, match="multi_margin_loss: p must be 1 or 2"):
        F.multi_margin_loss(enp.zeros((2, 3)), enp.array([0, 1]), p=3)
    with pytest.raises(ShapeError, match=r"pdist: expected an input of shape \(N, M\)"):
        F.pdist(enp.zeros(3))
    with pytest.raises(ShapeError, match="cosine_similarity: x1 of shape"):
        F.cosine_similarity(enp.zeros((2, 3)), enp.zeros((3, 2)))
    with pytest.raises(ShapeError, match="triplet_margin_loss: expected anchor, positive and negative of one shape"):
        F.triplet_margin_loss(enp.zeros((2, 3)), enp.zeros((2, 3)), enp.zeros((3,)))
    with pytest.raises(ShapeError, match="cosine_embedding_loss: expected input1 and input2 of one shape"):
        F.cosine_embedding_loss(enp.zeros((2, 3)), enp.zeros((2, 3)), enp.zeros((3,)))


# --- under transforms -------------------------------------------------------------------------------------


def test_out_of_range_targets_under_jit_are_treated_as_ignored():
    """Documented in the module: under jit a target outside [0, C) selects no class (no loss, no weight)."""
    x = _x(_rng(3), (3, 4))
    w = enp.array([1.0, 2.0, 3.0, 4.0])
    got = ember.jit(lambda x, t: F.cross_entropy(x, t, w))(enp.asarray(x), enp.array([0, 9, 2]))
    want = F.cross_entropy(x, enp.array([0, -100, 2]), w)
    assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_per_example_gradients_under_vmap_match_a_loop():
    rng = _rng(4)
    x, t = enp.asarray(_x(rng, (5, 3))), enp.asarray(rng.integers(0, 3, (5,)))
    w = enp.asarray(_x(rng, (3,), 0.5, 2.0))

    def loss(x, t):
        return F.cross_entropy(x, t, w, label_smoothing=0.1)

    batched = ember.vmap(ember.grad(loss))(x, t)
    for i in range(5):
        assert_close(batched[i], ember.grad(loss)(x[i], t[i]), rtol=1e-6, atol=1e-6)
