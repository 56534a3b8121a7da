"""The main optimizers, each step for step with the ``torch.optim`` class of the same name.

Every optimizer is built from the same few pieces, written once below: reading hyperparameters (numbers
or schedules) at the state's step ``count``; the gradient PyTorch's step sees (negated for ``maximize``,
plus ``weight_decay * param`` for coupled weight decay); AdamW's decoupled decay; accurate bias
corrections; and ``_leafwise``, which runs an optimizer's per-leaf rule over the gradient tree, skipping
``None`` leaves, and returns the updates and the new moment trees. What is left for each optimizer is its
state NamedTuple, its argument checks (PyTorch's) and its per-leaf rule, a few lines of PyTorch's own
arithmetic.

Hyperparameters are read at ``count`` (steps done so far), as a ``torch.optim.lr_scheduler`` has the
learning rate of epoch ``count`` in effect during step ``count + 1``; bias corrections use ``count + 1``,
PyTorch's ``step``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import ember.numpy as enp
from ember.core.array import Array
from ember.core.pytree import tree_map
from ember.errors import InvalidArgumentError
from ember.optim._base import (_INF, GradientTransformation, Hyper, Params, Updates, _check, _check_betas, _is_none,
                               _need_params, _zero_count, _zeros, learning_rate_of, value_at)

__all__ = ["AdadeltaState", "AdagradState", "AdamState", "AdamaxState", "NAdamState", "RAdamState", "RMSpropState",
           "SGDState", "adadelta", "adagrad", "adam", "adamax", "adamw", "nadam", "radam", "rmsprop",
           "sgd"]  # fmt: skip


# --- shared pieces ------------------------------------------------------------------------------------


def _read(hyper: dict[str, Hyper], count: Array) -> dict[str, Any]:
    """Every hyperparameter's value at step ``count``."""
    return {name: value_at(h, count) for name, h in hyper.items()}


def _neg_log(beta: Any) -> Any:
    """``-log(beta)``: in double precision when ``beta`` is a number (PyTorch's scalar math is in Python floats)."""
    if isinstance(beta, (int, float)):
        return _INF if beta == 0 else -math.log(beta)
    return -enp.log(beta)


def _bias_correction(beta: Any, t: Array) -> Any:
    # 1 - beta**t, as -expm1(t log beta): no cancellation when beta is near 1 (beta2 = 0.999 at t = 1)
    return -enp.expm1(-t * _neg_log(beta))


def _gradient(g: Array, p: Any, wd: Any, maximize: bool, coupled: bool) -> Array:
    """The gradient PyTorch's step works with: negated to maximize, plus ``weight_decay * param`` (coupled)."""
    g = -g if maximize else g
    if coupled and p is not None:
        g = g + wd * p
    return g


def _leafwise(fn: str, rule: Callable[..., tuple], grads: Updates, params: Params, *moments: Updates,
              weight_decay: Any = 0.0, decoupled: bool = False, lr: Any = None,
              maximize: bool = False) -> tuple:  # fmt: skip
    """Apply ``rule(g, p, *moment_leaves) -> (update, *new_moment_leaves)`` to every non-``None`` gradient.

    ``g`` is already the gradient PyTorch's step sees (maximize, coupled weight decay); with decoupled
    weight decay ``-lr * weight_decay * p`` is added to each update (PyTorch's ``p *= 1 - lr * wd``).
    A moment that is ``None`` (an option turned off: amsgrad, centered, momentum) reaches the rule as
    ``None`` leaves and comes back ``None``. Returns ``(updates, *new_moments)``; a ``None`` gradient
    gives a ``None`` update and keeps its moments.
    """
    uses_decay = isinstance(weight_decay, Array) or weight_decay != 0  # a schedule's value is an Array
    nones = tree_map(lambda g: None, grads)
    if uses_decay:
        _need_params(fn, params, "weight decay")
    if params is None:
        params = nones

    def one(g: Any, p: Any, *m: Any) -> tuple:
        if g is None:
            return (None, *m)
        out = rule(_gradient(enp.asarray(g), p, weight_decay, maximize, uses_decay and not decoupled), p, *m)
        if uses_decay and decoupled and p is not None:
            out = (out[0] - lr * weight_decay * p, *out[1:])
        return out

    out = tree_map(one, grads, params, *(nones if m is None else m for m in moments), is_leaf=_is_none)
    new = [tree_map(lambda g, o, i=i: o[i], grads, out, is_leaf=_is_none) for i in range(1 + len(moments))]
    return (new[0], *(None if old is None else m for old, m in zip(moments, new[1:])))


def _adam_moments(g: Array, m: Array, v: Array, b1: Any, b2: Any) -> tuple[Array, Array]:
    """Adam's moments after gradient ``g``, as PyTorch: ``m.lerp_(g, 1 - b1)``, ``v = b2 v + (1 - b2) g^2``."""
    return m + (1 - b1) * (g - m), b2 * v + (1 - b2) * (g * g)


def _float(count: Array) -> Array:
    """The step count as a float: float32, or float64 under ``ember.config.x64``."""
    return enp.asarray(count).astype(enp.zeros(()).dtype)


# --- SGD ----------------------------------------------------------------------------------------------


class SGDState(NamedTuple):
    """``count``; ``momentum_buffer`` (zeros until the first step stores the first gradient, as PyTorch)."""

    count: Array
    momentum_buffer: Updates


def sgd(learning_rate: Hyper | None = None, momentum: Hyper = 0.0, dampening: Hyper = 0.0,
        weight_decay: Hyper = 0.0, nesterov: bool = False, *, maximize: bool = False,
        lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """Stochastic gradient descent with momentum, as ``torch.optim.SGD``.

    ``buf = momentum * buf + (1 - dampening) * g`` (the first step stores ``g``); the step is ``-lr * buf``,
    or ``-lr * (g + momentum * buf)`` with ``nesterov``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; 1e-3 by default, as torch 2.13.
      momentum: the momentum factor (0 for none).
      dampening: dampening of the momentum.
      weight_decay: L2 penalty added to the gradient.
      nesterov: Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.sgd(learning_rate=0.1, momentum=0.9)
    >>> params = enp.array([1.0, 2.0])
    >>> state = opt.init(params)
    >>> for _ in range(2):
    ...     updates, state = opt.update(2 * params, state, params)
    ...     params = optim.apply_updates(params, updates)
    >>> params.tolist()
    [0.46000000834465027, 0.9200000166893005]
    """
    lr_ = learning_rate_of("sgd", learning_rate, lr, default=1e-3)
    _check("sgd", momentum=(momentum, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True))
    numbers = not (callable(momentum) or callable(dampening))  # a schedule's values are not checked
    if nesterov and numbers and (momentum <= 0 or dampening != 0):
        raise InvalidArgumentError(f"optim.sgd: Nesterov momentum requires a momentum > 0 and zero dampening "
                                   f"(got momentum={momentum}, dampening={dampening}), as torch.optim.SGD checks")
    use_momentum = callable(momentum) or isinstance(momentum, Array) or momentum != 0

    def init(params: Params) -> SGDState:
        return SGDState(_zero_count(), _zeros(params) if use_momentum else None)

    def update(grads: Updates, state: SGDState, params: Params = None) -> tuple[Updates, SGDState]:
        h = _read(dict(lr=lr_, momentum=momentum, dampening=dampening, weight_decay=weight_decay), state.count)
        first = state.count == 0

        def rule(g: Array, p: Any, buf: Array | None) -> tuple:
            if not use_momentum:
                return -h["lr"] * g, None
            buf = enp.where(first, g, h["momentum"] * buf + (1 - h["dampening"]) * g)
            step = g + h["momentum"] * buf if nesterov else buf
            return -h["lr"] * step, buf

        updates, buf = _leafwise("sgd", rule, grads, params, state.momentum_buffer, weight_decay=h["weight_decay"],
                                 maximize=maximize)  # fmt: skip
        return updates, SGDState(state.count + 1, buf)

    return GradientTransformation(init, update)


# --- Adam, AdamW --------------------------------------------------------------------------------------


class AdamState(NamedTuple):
    """``count``; ``exp_avg`` and ``exp_avg_sq`` (PyTorch's names); ``max_exp_avg_sq`` (``None`` unless amsgrad)."""

    count: Array
    exp_avg: Updates
    exp_avg_sq: Updates
    max_exp_avg_sq: Updates


def adam(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.999), eps: Hyper = 1e-8,
         weight_decay: Hyper = 0.0, amsgrad: bool = False, *, maximize: bool = False,
         decoupled_weight_decay: bool = False, lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """Adam, as ``torch.optim.Adam``.

    ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g^2``; the step is
    ``-lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)`` (``v``'s running maximum with amsgrad),
    computed as ``-lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps sqrt(1 - beta2^t))``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 1e-3.
      betas: the decay rates of the first and second moments, each in [0, 1).
      eps: added to the denominator.
      weight_decay: L2 penalty added to the gradient (decoupled, as AdamW, with ``decoupled_weight_decay``).
      amsgrad: normalize by the running maximum of ``v`` (AMSGrad).
      maximize: ascend the objective instead of descending.
      decoupled_weight_decay: shrink the parameters by ``1 - lr * weight_decay`` instead (AdamW).

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.adam(learning_rate=0.1)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8999999761581421, -1.899999976158142]
    """
    fn = "adamw" if decoupled_weight_decay else "adam"
    lr_ = learning_rate_of(fn, learning_rate, lr, 1e-3)
    b1, b2 = _check_betas(fn, betas)
    _check(fn, eps=(eps, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True))

    def init(params: Params) -> AdamState:
        return AdamState(_zero_count(), _zeros(params), _zeros(params), _zeros(params) if amsgrad else None)

    def update(grads: Updates, state: AdamState, params: Params = None) -> tuple[Updates, AdamState]:
        h = _read(dict(lr=lr_, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay), state.count)
        t = _float(state.count + 1)
        # The bias correction of v moves onto the scalars (Kingma & Ba's "efficient version"): PyTorch's
        # sqrt(v) / sqrt(bc2) + eps, times sqrt(bc2) above and below, is sqrt(v) + eps sqrt(bc2). One pass
        # fewer over every parameter (twelve, from thirteen); the same step up to rounding.
        bc2_sqrt = enp.sqrt(_bias_correction(h["b2"], t))
        step_size = h["lr"] * bc2_sqrt / _bias_correction(h["b1"], t)
        eps_hat = h["eps"] * bc2_sqrt

        def rule(g: Array, p: Any, m: Array, v: Array, vmax: Array | None) -> tuple:
            m, v = _adam_moments(g, m, v, h["b1"], h["b2"])
            if amsgrad:
                vmax = enp.maximum(vmax, v)
            denom = enp.sqrt(vmax if amsgrad else v) + eps_hat
            return -step_size * m / denom, m, v, vmax

        updates, *moments = _leafwise(fn, rule, grads, params, *state[1:], weight_decay=h["weight_decay"],
                                      decoupled=decoupled_weight_decay, lr=h["lr"], maximize=maximize)  # fmt: skip
        return updates, AdamState(state.count + 1, *moments)

    return GradientTransformation(init, update)


def adamw(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.999), eps: Hyper = 1e-8,
          weight_decay: Hyper = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
          lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """AdamW (Adam with decoupled weight decay), as ``torch.optim.AdamW``.

    Each step first shrinks the parameters by ``1 - lr * weight_decay``, then takes Adam's step.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 1e-3.
      betas: the decay rates of the first and second moments, each in [0, 1).
      eps: added to the denominator.
      weight_decay: the decoupled weight decay (default 1e-2).
      amsgrad: normalize by the running maximum of the second moment (AMSGrad).
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation`` with an ``AdamState``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.adamw(learning_rate=0.1, weight_decay=0.5)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8500000238418579, -1.7999999523162842]
    """
    return adam(learning_rate, betas, eps, weight_decay, amsgrad, maximize=maximize, decoupled_weight_decay=True,
                lr=lr)  # fmt: skip


# --- RMSprop ------------------------------------------------------------------------------------------


class RMSpropState(NamedTuple):
    """``count``; ``square_avg``; ``grad_avg`` (``None`` unless centered); ``momentum_buffer`` (``None`` without)."""

    count: Array
    square_avg: Updates
    grad_avg: Updates
    momentum_buffer: Updates


def rmsprop(learning_rate: Hyper | None = None, alpha: Hyper = 0.99, eps: Hyper = 1e-8, weight_decay: Hyper = 0.0,
            momentum: Hyper = 0.0, centered: bool = False, *, maximize: bool = False,
            lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """RMSprop, as ``torch.optim.RMSprop``.

    ``v = alpha v + (1 - alpha) g^2``; the step is ``-lr g / (sqrt(v) + eps)`` (``v - mean(g)^2`` when centered),
    or ``-lr buf`` with ``buf = momentum buf + g / (sqrt(v) + eps)``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 1e-2.
      alpha: the smoothing constant of the squared-gradient average.
      eps: added to the denominator.
      weight_decay: L2 penalty added to the gradient.
      momentum: the momentum factor (0 for none).
      centered: normalize by an estimate of the gradient's variance.
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.rmsprop(learning_rate=0.01)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.9000000357627869, -1.899999976158142]
    """
    lr_ = learning_rate_of("rmsprop", learning_rate, lr, 1e-2)
    _check("rmsprop", eps=(eps, 0.0, _INF, True), momentum=(momentum, 0.0, _INF, True),
           weight_decay=(weight_decay, 0.0, _INF, True), alpha=(alpha, 0.0, _INF, True))  # fmt: skip
    use_momentum = callable(momentum) or isinstance(momentum, Array) or momentum > 0

    def init(params: Params) -> RMSpropState:
        return RMSpropState(_zero_count(), _zeros(params), _zeros(params) if centered else None,
                            _zeros(params) if use_momentum else None)  # fmt: skip

    def update(grads: Updates, state: RMSpropState, params: Params = None) -> tuple[Updates, RMSpropState]:
        h = _read(dict(lr=lr_, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum), state.count)

        def rule(g: Array, p: Any, v: Array, mean: Array | None, buf: Array | None) -> tuple:
            v = h["alpha"] * v + (1 - h["alpha"]) * (g * g)
            if centered:
                mean = mean + (1 - h["alpha"]) * (g - mean)
                avg = enp.sqrt(v - mean * mean) + h["eps"]
            else:
                avg = enp.sqrt(v) + h["eps"]
            if use_momentum:
                buf = h["momentum"] * buf + g / avg
                return -h["lr"] * buf, v, mean, buf
            return -h["lr"] * g / avg, v, mean, buf

        updates, *moments = _leafwise("rmsprop", rule, grads, params, *state[1:], weight_decay=h["weight_decay"],
                                      maximize=maximize)  # fmt: skip
        return updates, RMSpropState(state.count + 1, *moments)

    return GradientTransformation(init, update)


# --- Adagrad ------------------------------------------------------------------------------------------


class AdagradState(NamedTuple):
    """``count``; ``sum`` of squared gradients (starting at ``initial_accumulator_value``)."""

    count: Array
    sum: Updates


def adagrad(learning_rate: Hyper | None = None, lr_decay: Hyper = 0.0, weight_decay: Hyper = 0.0,
            initial_accumulator_value: float = 0.0, eps: Hyper = 1e-10, *, maximize: bool = False,
            lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """Adagrad, as ``torch.optim.Adagrad``.

    ``s = s + g^2``; the step is ``-lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 1e-2.
      lr_decay: the learning rate's decay per step.
      weight_decay: L2 penalty added to the gradient.
      initial_accumulator_value: the starting value of the sum of squares.
      eps: added to the denominator.
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.adagrad(learning_rate=0.5)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.5, -1.5]
    """
    lr_ = learning_rate_of("adagrad", learning_rate, lr, 1e-2)
    _check("adagrad", lr_decay=(lr_decay, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True),
           initial_accumulator_value=(initial_accumulator_value, 0.0, _INF, True),
           eps=(eps, 0.0, _INF, True))  # fmt: skip

    def init(params: Params) -> AdagradState:
        return AdagradState(_zero_count(), _zeros(params, initial_accumulator_value))

    def update(grads: Updates, state: AdagradState, params: Params = None) -> tuple[Updates, AdagradState]:
        h = _read(dict(lr=lr_, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay), state.count)
        clr = h["lr"] / (1 + _float(state.count) * h["lr_decay"])

        def rule(g: Array, p: Any, s: Array) -> tuple:
            s = s + g * g
            return -clr * g / (enp.sqrt(s) + h["eps"]), s

        updates, s = _leafwise("adagrad", rule, grads, params, state.sum, weight_decay=h["weight_decay"],
                               maximize=maximize)  # fmt: skip
        return updates, AdagradState(state.count + 1, s)

    return GradientTransformation(init, update)


# --- Adadelta -----------------------------------------------------------------------------------------


class AdadeltaState(NamedTuple):
    """``count``; ``square_avg`` of gradients and ``acc_delta`` of steps (PyTorch's names)."""

    count: Array
    square_avg: Updates
    acc_delta: Updates


def adadelta(learning_rate: Hyper | None = None, rho: Hyper = 0.9, eps: Hyper = 1e-6, weight_decay: Hyper = 0.0, *,
             maximize: bool = False, lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """Adadelta, as ``torch.optim.Adadelta``.

    ``v = rho v + (1 - rho) g^2``, ``d = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho u + (1 - rho) d^2``;
    the step is ``-lr * d``.

    Args:
      learning_rate: scales the step (or ``lr=``), a number or a schedule; default 1.0.
      rho: the decay rate of the running averages, in [0, 1].
      eps: added inside the square roots.
      weight_decay: L2 penalty added to the gradient.
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.adadelta()
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.9968377351760864, -1.9968377351760864]
    """
    lr_ = learning_rate_of("adadelta", learning_rate, lr, 1.0)
    _check("adadelta", rho=(rho, 0.0, 1.0, True), eps=(eps, 0.0, _INF, True),
           weight_decay=(weight_decay, 0.0, _INF, True))  # fmt: skip

    def init(params: Params) -> AdadeltaState:
        return AdadeltaState(_zero_count(), _zeros(params), _zeros(params))

    def update(grads: Updates, state: AdadeltaState, params: Params = None) -> tuple[Updates, AdadeltaState]:
        h = _read(dict(lr=lr_, rho=rho, eps=eps, weight_decay=weight_decay), state.count)

        def rule(g: Array, p: Any, v: Array, u: Array) -> tuple:
            v = h["rho"] * v + (1 - h["rho"]) * (g * g)
            delta = enp.sqrt(u + h["eps"]) / enp.sqrt(v + h["eps"]) * g
            u = h["rho"] * u + (1 - h["rho"]) * (delta * delta)
            return -h["lr"] * delta, v, u

        updates, v, u = _leafwise("adadelta", rule, grads, params, state.square_avg, state.acc_delta,
                                  weight_decay=h["weight_decay"], maximize=maximize)  # fmt: skip
        return updates, AdadeltaState(state.count + 1, v, u)

    return GradientTransformation(init, update)


# --- Adamax -------------------------------------------------------------------------------------------


class AdamaxState(NamedTuple):
    """``count``; ``exp_avg`` and the infinity norm ``exp_inf`` (PyTorch's names)."""

    count: Array
    exp_avg: Updates
    exp_inf: Updates


def adamax(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.999), eps: Hyper = 1e-8,
           weight_decay: Hyper = 0.0, *, maximize: bool = False,
           lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``.

    ``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 u, |g| + eps)``; the step is ``-lr / (1 - beta1^t) * m / u``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 2e-3.
      betas: the decay rates of the first moment and of the infinity norm, each in [0, 1).
      eps: added to ``|g|``.
      weight_decay: L2 penalty added to the gradient.
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.adamax(learning_rate=0.1)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8999999761581421, -1.899999976158142]
    """
    lr_ = learning_rate_of("adamax", learning_rate, lr, 2e-3)
    b1, b2 = _check_betas("adamax", betas)
    _check("adamax", eps=(eps, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True))

    def init(params: Params) -> AdamaxState:
        return AdamaxState(_zero_count(), _zeros(params), _zeros(params))

    def update(grads: Updates, state: AdamaxState, params: Params = None) -> tuple[Updates, AdamaxState]:
        h = _read(dict(lr=lr_, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay), state.count)
        clr = h["lr"] / _bias_correction(h["b1"], _float(state.count + 1))

        def rule(g: Array, p: Any, m: Array, u: Array) -> tuple:
            m = m + (1 - h["b1"]) * (g - m)
            u = enp.maximum(u * h["b2"], enp.abs(g) + h["eps"])
            return -clr * m / u, m, u

        updates, m, u = _leafwise("adamax", rule, grads, params, state.exp_avg, state.exp_inf,
                                  weight_decay=h["weight_decay"], maximize=maximize)  # fmt: skip
        return updates, AdamaxState(state.count + 1, m, u)

    return GradientTransformation(init, update)


# --- NAdam --------------------------------------------------------------------------------------------


class NAdamState(NamedTuple):
    """``count``; ``mu_product`` (the product of the momentum schedule so far); ``exp_avg``; ``exp_avg_sq``."""

    count: Array
    mu_product: Array
    exp_avg: Updates
    exp_avg_sq: Updates


def nadam(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.999), eps: Hyper = 1e-8,
          weight_decay: Hyper = 0.0, momentum_decay: Hyper = 4e-3, decoupled_weight_decay: bool = False, *,
          maximize: bool = False, lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """NAdam (Adam with Nesterov momentum), as ``torch.optim.NAdam``.

    With ``mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2)`` and ``denom = sqrt(v / (1 - beta2^t)) + eps``,
    the step is ``-lr ((1 - mu_t) / (1 - prod mu) g + mu_(t+1) / (1 - prod mu * mu_(t+1)) m) / denom``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 2e-3.
      betas: the decay rates of the first and second moments, each in [0, 1).
      eps: added to the denominator.
      weight_decay: L2 penalty added to the gradient (decoupled with ``decoupled_weight_decay``).
      momentum_decay: the momentum schedule's decay.
      decoupled_weight_decay: shrink the parameters by ``1 - lr * weight_decay`` instead (as AdamW).
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.nadam(learning_rate=0.1)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8943548202514648, -1.8943548202514648]
    """
    lr_ = learning_rate_of("nadam", learning_rate, lr, 2e-3)
    b1, b2 = _check_betas("nadam", betas)
    _check("nadam", eps=(eps, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True),
           momentum_decay=(momentum_decay, 0.0, _INF, True))  # fmt: skip

    def init(params: Params) -> NAdamState:
        return NAdamState(_zero_count(), enp.ones(()), _zeros(params), _zeros(params))

    def update(grads: Updates, state: NAdamState, params: Params = None) -> tuple[Updates, NAdamState]:
        h = _read(dict(lr=lr_, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay, psi=momentum_decay), state.count)
        t = _float(state.count + 1)
        bc2 = _bias_correction(h["b2"], t)
        mu = h["b1"] * (1.0 - 0.5 * 0.96 ** (t * h["psi"]))
        mu_next = h["b1"] * (1.0 - 0.5 * 0.96 ** ((t + 1) * h["psi"]))
        mu_product = (state.mu_product * mu).astype(state.mu_product.dtype)
        grad_coef = -h["lr"] * (1.0 - mu) / (1.0 - mu_product)
        avg_coef = -h["lr"] * mu_next / (1.0 - mu_product * mu_next)

        def rule(g: Array, p: Any, m: Array, v: Array) -> tuple:
            m, v = _adam_moments(g, m, v, h["b1"], h["b2"])
            denom = enp.sqrt(v / bc2) + h["eps"]
            return grad_coef * g / denom + avg_coef * m / denom, m, v

        updates, m, v = _leafwise("nadam", rule, grads, params, state.exp_avg, state.exp_avg_sq,
                                  weight_decay=h["weight_decay"], decoupled=decoupled_weight_decay, lr=h["lr"],
                                  maximize=maximize)  # fmt: skip
        return updates, NAdamState(state.count + 1, mu_product, m, v)

    return GradientTransformation(init, update)


# --- RAdam --------------------------------------------------------------------------------------------


class RAdamState(NamedTuple):
    """``count``; ``exp_avg``; ``exp_avg_sq``."""

    count: Array
    exp_avg: Updates
    exp_avg_sq: Updates


def _radam_rho(beta2: Any, t: Array) -> tuple[Any, Array]:
    """``rho_inf = 2 / (1 - beta2) - 1`` and ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``, accurately.

    With ``L = -log(beta2)`` and ``x = t L``, the subtracted term is ``2 t / expm1(x)``. While ``x < 0.1``
    (the first steps with beta2 near 1) it nearly cancels ``rho_inf``: there ``x / expm1(x) = 1 - x/2 +
    x^2/12 - x^4/720 + ...`` gives ``rho_t = (rho_inf - 2 / L) + t - (2 / L) (x^2/12 - x^4/720 + ...)``, with
    the constant ``rho_inf - 2 / L`` in double precision when ``beta2`` is a number.
    """
    neg_log = _neg_log(beta2)
    rho_inf = 2 / (1 - beta2) - 1
    x = t * neg_log
    xs = enp.minimum(x, 0.1)
    x2 = xs * xs
    # Bernoulli series of x/expm1(x) - 1 + x/2 (truncation error below 1e-18 relative for x < 0.1)
    series = x2 * (1 / 12 + x2 * (-1 / 720 + x2 * (1 / 30240 + x2 * (-1 / 1209600 + x2 / 47900160))))
    small = (rho_inf - 2 / neg_log) + t - (2 / neg_log) * series
    xl = enp.maximum(x, 0.1)
    large = rho_inf - 2 * t * enp.exp(-xl) / -enp.expm1(-xl)  # 2t / expm1(x), without overflow
    return rho_inf, enp.where(x < 0.1, small, large)


def radam(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.999), eps: Hyper = 1e-8,
          weight_decay: Hyper = 0.0, decoupled_weight_decay: bool = False, *, maximize: bool = False,
          lr: Hyper | None = None) -> GradientTransformation:  # fmt: skip
    """RAdam (rectified Adam), as ``torch.optim.RAdam``.

    While the variance estimate's length ``rho_t`` is at most 5 the step is ``-lr m / (1 - beta1^t)``
    (momentum only); afterwards it is Adam's, scaled by the rectification ``r_t``.

    Args:
      learning_rate: the step size (or ``lr=``), a number or a schedule; default 1e-3.
      betas: the decay rates of the first and second moments, each in [0, 1).
      eps: added to the denominator.
      weight_decay: L2 penalty added to the gradient (decoupled with ``decoupled_weight_decay``).
      decoupled_weight_decay: shrink the parameters by ``1 - lr * weight_decay`` instead (as AdamW).
      maximize: ascend the objective instead of descending.

    Returns:
      The optimizer, a ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.radam(learning_rate=0.1)
    >>> params = enp.array([1.0, -2.0])
    >>> updates, state = opt.update(2 * params, opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.800000011920929, -1.600000023841858]
    """
    lr_ = learning_rate_of("radam", learning_rate, lr, 1e-3)
    b1, b2 = _check_betas("radam", betas)
    _check("radam", eps=(eps, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True))

    def init(params: Params) -> RAdamState:
        return RAdamState(_zero_count(), _zeros(params), _zeros(params))

    def update(grads: Updates, state: RAdamState, params: Params = None) -> tuple[Updates, RAdamState]:
        h = _read(dict(lr=lr_, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay), state.count)
        t = _float(state.count + 1)
        bc1 = _bias_correction(h["b1"], t)
        bc2 = _bias_correction(h["b2"], t)
        rho_inf, rho_t = _radam_rho(h["b2"], t)
        rectify = rho_t > 5.0
        # the rectification where rho_t > 5 (then rho_inf >= rho_t > 5 too); safe values elsewhere
        rho_c = enp.where(rectify, rho_t, 6.0)
        rho_inf_c = enp.where(rectify, rho_inf, 6.0)
        rect = enp.sqrt((rho_c - 4) * (rho_c - 2) * rho_inf_c / ((rho_inf_c - 4) * (rho_inf_c - 2) * rho_c))

        def rule(g: Array, p: Any, m: Array, v: Array) -> tuple:
            m, v = _adam_moments(g, m, v, h["b1"], h["b2"])
            step = m / bc1 * h["lr"]
            adaptive = enp.sqrt(bc2) / (enp.sqrt(v) + h["eps"])
            return -enp.where(rectify, step * adaptive * rect, step), m, v

        updates, m, v = _leafwise("radam", rule, grads, params, state.exp_avg, state.exp_avg_sq,
                                  weight_decay=h["weight_decay"], decoupled=decoupled_weight_decay, lr=h["lr"],
                                  maximize=maximize)  # fmt: skip
        return updates, RAdamState(state.count + 1, m, v)

    return GradientTransformation(init, update)
