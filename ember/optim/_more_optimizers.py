"""The less common optimizers: ``asgd`` and ``rprop`` (step for step with torch.optim), ``lion`` and ``lamb``.

``lion`` (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms") and ``lamb`` (You et al.,
2020, "Large Batch Optimization for Deep Learning") are not in torch.optim; they follow optax's
``optax.lion`` and ``optax.lamb``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import ember.numpy as enp
from ember.core.pytree import tree_map
from ember.errors import InvalidArgumentError
from ember.core.array import Array
from ember.optim._base import (_INF, GradientTransformation, Hyper, Params, Updates, _check, _check_betas, _is_none,
                               _need_params, _zero_count, _zeros, learning_rate_of, value_at)

__all__ = ["ASGDState", "LambState", "LionState", "RpropState", "asgd", "lamb", "lion", "rprop"]


def _map(fn: Any, tree: Any, *rest: Any) -> Any:
    """``tree_map`` over ``tree``'s leaves, skipping ``None`` (frozen) leaves.

    A ``None`` leaf of ``tree`` stays ``None``; where one of ``rest`` is ``None`` (a state leaf of a
    parameter that gets no gradient) the leaf of ``tree`` is kept, so a state keeps its structure.
    """
    def leaf(x: Any, *r: Any) -> Any:
        if x is None or any(y is None for y in r):
            return x
        return fn(x, *r)

    return tree_map(leaf, tree, *rest, is_leaf=_is_none)


# --- asgd ----------------------------------------------------------------------------------------------------


class ASGDState(NamedTuple):
    """``asgd``'s state: the step ``count``, torch's step size ``eta``, averaging weight ``mu`` and average ``ax``."""

    count: Array
    eta: Array
    mu: Array
    ax: Updates


def asgd(learning_rate: Hyper | None = None, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
         weight_decay: float = 0, *, maximize: bool = False, lr: Hyper | None = None,
         ) -> GradientTransformation:  # fmt: skip
    """Averaged stochastic gradient descent, as ``torch.optim.ASGD``.

    Each step decays the parameter by ``1 - lambd * eta`` and moves it by ``-eta * grad``; then
    ``eta = lr / (1 + lambd * lr * t) ** alpha`` and the average ``ax`` (kept in the state, as torch
    does, but not used for the update) follows the parameter with weight ``mu = 1 / max(1, t - t0)``.

    Args:
      learning_rate: the learning rate (default 1e-2); PyTorch's ``lr=`` is accepted too.
      lambd: the decay term.
      alpha: the power for the ``eta`` update.
      t0: the step at which averaging starts.
      weight_decay: L2 penalty added to the gradient.
      maximize: ascend the objective instead of descending it.

    Returns:
      A ``GradientTransformation``; its ``update`` needs ``params``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.asgd(learning_rate=0.1)
    >>> params = enp.array([1.0, 2.0])
    >>> updates, state = opt.update(enp.array([1.0, 1.0]), opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8999899625778198, 1.8999799489974976]
    """
    learning_rate = learning_rate_of("asgd", learning_rate, lr, default=1e-2)
    _check("asgd", weight_decay=(weight_decay, 0.0, _INF, True))

    def init(params: Params) -> ASGDState:
        eta = enp.asarray(value_at(learning_rate, 0), dtype=enp.asarray(1.0).dtype)
        return ASGDState(_zero_count(), eta, enp.ones((), dtype=eta.dtype), _zeros(params))

    def update(grads: Updates, state: ASGDState, params: Params = None) -> tuple[Updates, ASGDState]:
        _need_params("asgd", params)
        count = state.count + 1
        eta, mu = state.eta, state.mu

        def new_param(g: Any, p: Any) -> Any:
            g = -g if maximize else g
            if weight_decay != 0:
                g = g + weight_decay * p
            return p * (1 - lambd * eta) - eta * g

        new_params = _map(new_param, grads, params)
        updates = _map(lambda q, p: q - p, new_params, params)
        # torch copies the parameter when mu == 1 rather than moving ax all the way to it
        ax = _map(lambda a, q: enp.where(mu == 1, q, a + (q - a) * mu), state.ax, new_params)
        step = count.astype(eta.dtype)
        lr_t = value_at(learning_rate, state.count)  # the rate of the step just taken, as torch's scheduler
        new_eta = (lr_t / (1 + lambd * lr_t * step) ** alpha).astype(eta.dtype)
        new_mu = (1 / enp.maximum(step - t0, 1)).astype(mu.dtype)
        return updates, ASGDState(count, new_eta, new_mu, ax)

    return GradientTransformation(init, update)


# --- rprop ---------------------------------------------------------------------------------------------------


class RpropState(NamedTuple):
    """``rprop``'s state: the step ``count``, the previous (masked) gradient and each element's step size."""

    count: Array
    prev: Updates
    step_size: Updates


def rprop(learning_rate: float | None = None, etas: tuple[float, float] = (0.5, 1.2),
          step_sizes: tuple[float, float] = (1e-6, 50), *, maximize: bool = False, lr: float | None = None,
          ) -> GradientTransformation:  # fmt: skip
    """Resilient backpropagation, as ``torch.optim.Rprop``.

    Every element has its own step size, started at the learning rate, multiplied by ``etaplus`` when
    its gradient keeps its sign and by ``etaminus`` when the sign flips (and then that step is skipped),
    clipped to ``step_sizes``; the parameter moves by ``-sign(grad) * step_size``.

    Args:
      learning_rate: the initial step size (default 1e-2); PyTorch's ``lr=`` is accepted too.
      etas: ``(etaminus, etaplus)``, with ``0 < etaminus < 1 < etaplus``.
      step_sizes: ``(min, max)`` allowed step sizes.
      maximize: ascend the objective instead of descending it.

    Returns:
      A ``GradientTransformation``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.rprop(learning_rate=0.1)
    >>> params = enp.array([1.0, 2.0])
    >>> updates, state = opt.update(enp.array([1.0, -3.0]), opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8999999761581421, 2.0999999046325684]
    """
    learning_rate = learning_rate_of("rprop", learning_rate, lr, default=1e-2)
    if callable(learning_rate):
        raise InvalidArgumentError("optim.rprop: the learning rate is only the initial step size, so it cannot be "
                                   "a schedule; pass a number")
    etaminus, etaplus = etas
    if not 0.0 < etaminus < 1.0 < etaplus:
        raise InvalidArgumentError(f"optim.rprop: invalid etas {etas!r}: they must satisfy "
                                   f"0 < etaminus < 1 < etaplus, e.g. (0.5, 1.2)")
    step_size_min, step_size_max = step_sizes

    def init(params: Params) -> RpropState:
        return RpropState(_zero_count(), _zeros(params), _zeros(params, learning_rate))

    def update(grads: Updates, state: RpropState, params: Params = None) -> tuple[Updates, RpropState]:
        grads = _map(lambda g: -g if maximize else g, grads)
        sign = _map(lambda g, prev: enp.sign(g * prev), grads, state.prev)
        factor = _map(lambda s: enp.where(s > 0, etaplus, enp.where(s < 0, etaminus, 1.0)).astype(s.dtype), sign)
        step_size = _map(lambda size, f: enp.clip(size * f, step_size_min, step_size_max), state.step_size, factor)
        # a sign flip skips this step and forgets the gradient, so the next step does not shrink again
        grads = _map(lambda g, f: enp.where(f == etaminus, enp.zeros_like(g), g), grads, factor)
        updates = _map(lambda g, size: -enp.sign(g) * size, grads, step_size)
        prev = _map(lambda old, g: g, state.prev, grads)
        return updates, RpropState(state.count + 1, prev, step_size)

    return GradientTransformation(init, update)


# --- lion ----------------------------------------------------------------------------------------------------


class LionState(NamedTuple):
    """``lion``'s state: the step ``count`` and the momentum ``mu``."""

    count: Array
    mu: Updates


def lion(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.99),
         weight_decay: Hyper = 0.0, *, lr: Hyper | None = None) -> GradientTransformation:
    """Lion (evolved sign momentum; Chen et al., 2023), as ``optax.lion``, with decoupled weight decay.

    ``c = beta1 * m + (1 - beta1) * g``; ``p -= lr * (sign(c) + weight_decay * p)``;
    ``m = beta2 * m + (1 - beta2) * g``.

    Args:
      learning_rate: the learning rate (default 1e-4); PyTorch's ``lr=`` is accepted too.
      betas: ``(beta1, beta2)``: the interpolation for the update and the momentum's decay.
      weight_decay: decoupled weight decay, scaled by the learning rate.

    Returns:
      A ``GradientTransformation``; with weight decay its ``update`` needs ``params``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.lion(learning_rate=0.1)
    >>> params = enp.array([1.0, 2.0])
    >>> updates, state = opt.update(enp.array([0.5, -3.0]), opt.init(params), params)
    >>> optim.apply_updates(params, updates).tolist()
    [0.8999999761581421, 2.0999999046325684]
    """
    learning_rate = learning_rate_of("lion", learning_rate, lr, default=1e-4)
    beta1, beta2 = _check_betas("lion", betas)
    _check("lion", weight_decay=(weight_decay, 0.0, _INF, True))

    def init(params: Params) -> LionState:
        return LionState(_zero_count(), _zeros(params))

    def update(grads: Updates, state: LionState, params: Params = None) -> tuple[Updates, LionState]:
        count = state.count + 1
        lr_t, wd_t = value_at(learning_rate, state.count), value_at(weight_decay, state.count)
        b1, b2 = value_at(beta1, state.count), value_at(beta2, state.count)
        direction = _map(lambda g, m: enp.sign((1 - b1) * g + b1 * m), grads, state.mu)
        if callable(weight_decay) or weight_decay != 0:
            _need_params("lion", params)
            direction = _map(lambda u, p: u + wd_t * p, direction, params)
        updates = _map(lambda u: -lr_t * u, direction)
        mu = _map(lambda m, g: b2 * m + (1 - b2) * g, state.mu, grads)
        return updates, LionState(count, mu)

    return GradientTransformation(init, update)


# --- lamb ----------------------------------------------------------------------------------------------------


class LambState(NamedTuple):
    """``lamb``'s state: the step ``count`` and Adam's moments ``mu`` and ``nu``."""

    count: Array
    mu: Updates
    nu: Updates


def lamb(learning_rate: Hyper | None = None, betas: tuple[Hyper, Hyper] = (0.9, 0.999), eps: float = 1e-6,
         weight_decay: Hyper = 0.0, *, lr: Hyper | None = None) -> GradientTransformation:
    """LAMB (layer-wise adaptive moments; You et al., 2020), as ``optax.lamb``.

    Adam's bias-corrected step ``r = m_hat / (sqrt(v_hat) + eps)`` plus ``weight_decay * p`` is scaled per
    parameter array by the trust ratio ``||p|| / ||r + weight_decay * p||`` (1 when either norm is 0),
    then by ``-lr``.

    Args:
      learning_rate: the learning rate (default 1e-3); PyTorch's ``lr=`` is accepted too.
      betas: Adam's ``(beta1, beta2)``.
      eps: added to the denominator.
      weight_decay: decoupled weight decay, inside the trust ratio.

    Returns:
      A ``GradientTransformation``; its ``update`` needs ``params``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.lamb(learning_rate=0.1)
    >>> params = enp.array([3.0, 4.0])
    >>> updates, state = opt.update(enp.array([1.0, -1.0]), opt.init(params), params)
    >>> [round(x, 5) for x in optim.apply_updates(params, updates).tolist()]
    [2.64645, 4.35355]
    """
    learning_rate = learning_rate_of("lamb", learning_rate, lr, default=1e-3)
    beta1, beta2 = _check_betas("lamb", betas)
    _check("lamb", epsilon=(eps, 0.0, _INF, True), weight_decay=(weight_decay, 0.0, _INF, True))

    def init(params: Params) -> LambState:
        return LambState(_zero_count(), _zeros(params), _zeros(params))

    def update(grads: Updates, state: LambState, params: Params = None) -> tuple[Updates, LambState]:
        _need_params("lamb", params)
        count = state.count + 1
        lr_t, wd_t = value_at(learning_rate, state.count), value_at(weight_decay, state.count)
        b1, b2 = value_at(beta1, state.count), value_at(beta2, state.count)
        mu = _map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
        nu = _map(lambda v, g: b2 * v + (1 - b2) * (g * g), state.nu, grads)

        def step(m: Any, v: Any, p: Any) -> Any:
            t = count.astype(m.dtype)
            m_hat = m / (1 - b1**t)
            v_hat = v / (1 - b2**t)
            r = m_hat / (enp.sqrt(v_hat) + eps) + wd_t * p
            p_norm = enp.sqrt(enp.sum(p * p))
            r_norm = enp.sqrt(enp.sum(r * r))
            zero = (p_norm == 0) | (r_norm == 0)
            # the where keeps 0/0 out of the selected branch
            trust = enp.where(zero, 1.0, p_norm / enp.where(zero, 1.0, r_norm)).astype(m.dtype)
            return -lr_t * trust * r

        updates = _map(lambda g, m, v, p: step(m, v, p), grads, mu, nu, params)
        return updates, LambState(count, mu, nu)

    return GradientTransformation(init, update)
