"""The shape of every optimizer: a ``GradientTransformation`` (``init``, ``update``) over any pytree.

``update(grads, state, params)`` returns ``(updates, state)``: the updates are what to *add* to the
parameters (``apply_updates``), as in optax, so an SGD step's update is ``-learning_rate * grad``.
Leaves that are ``None`` (parameters ``nn.partition`` left out, frozen ones) are skipped by every
transformation, because ``None`` is an empty pytree node. A hyperparameter is a number or a schedule
(a function of the step count, ``optim.cosine_decay(...)``); the step count lives in the state.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import ember.numpy as enp
from ember.core.array import Array
from ember.core.pytree import tree_map
from ember.errors import InvalidArgumentError

__all__ = ["GradientTransformation", "Schedule", "apply_updates", "chain", "identity", "learning_rate_of",
           "value_at"]  # fmt: skip

Params = Any
Updates = Any
OptState = Any
#: A schedule: the value of a hyperparameter at a step count (an int32 array, or a Python int).
Schedule = Callable[[Any], Any]
#: A hyperparameter: a number, a schedule, or an array.
Hyper = float | Schedule | Array


class GradientTransformation(NamedTuple):
    """An optimizer or a piece of one: ``init(params) -> state``, ``update(grads, state, params) -> (updates, state)``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.sgd(learning_rate=0.1)
    >>> params = {'w': enp.array([1.0, 2.0])}
    >>> state = opt.init(params)
    >>> updates, state = opt.update({'w': enp.array([1.0, 1.0])}, state, params)
    >>> optim.apply_updates(params, updates)['w'].tolist()
    [0.8999999761581421, 1.899999976158142]
    """

    init: Callable[[Params], OptState]
    update: Callable[..., tuple[Updates, OptState]]


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none."""


def identity() -> GradientTransformation:
    """The transformation that passes updates through unchanged.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> optim.identity().update(enp.ones(2), ())[0].tolist()
    [1.0, 1.0]
    """
    return GradientTransformation(lambda params: EmptyState(), lambda updates, state, params=None: (updates, state))


def chain(*transformations: GradientTransformation) -> GradientTransformation:
    """Apply transformations in order, each to the previous one's updates (optax's ``chain``).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(learning_rate=0.5))
    >>> updates, _ = opt.update(enp.array([3.0, 4.0]), opt.init(enp.zeros(2)), enp.zeros(2))
    >>> updates.tolist()  # clipped as torch's clip_grad_norm_: by 1 / (5 + 1e-6)
    [-0.2999999523162842, -0.3999999165534973]
    """
    inits = tuple(t.init for t in transformations)
    updates_fns = tuple(t.update for t in transformations)

    def init(params: Params) -> tuple:
        return tuple(fn(params) for fn in inits)

    def update(updates: Updates, state: tuple, params: Params = None, **extra_args: Any) -> tuple[Updates, tuple]:
        if len(state) != len(updates_fns):
            raise InvalidArgumentError(f"optim.chain: the state has {len(state)} parts for {len(updates_fns)} "
                                       f"transformations; pass the state this chain's init returned")
        new_state = []
        for fn, s in zip(updates_fns, state):
            # extra keyword arguments (reduce_on_plateau's value=loss) go to the transformations taking them
            updates, s = fn(updates, s, params, **_accepted(fn, extra_args))
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def _accepted(fn: Callable, extra_args: dict) -> dict:
    """The keyword arguments among ``extra_args`` that ``fn`` takes."""
    if not extra_args:
        return extra_args
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return extra_args
    return {k: v for k, v in extra_args.items() if k in params}


def apply_updates(params: Params, updates: Updates) -> Params:
    """``params + updates`` leaf by leaf, keeping each parameter's dtype (optax's ``apply_updates``).

    ``None`` updates (frozen or partitioned-out leaves) leave their parameter unchanged.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> optim.apply_updates({'w': enp.ones(2), 'b': enp.zeros(1)}, {'w': enp.ones(2), 'b': None})['w'].tolist()
    [2.0, 2.0]
    """
    def add(p: Any, u: Any) -> Any:
        if u is None or p is None:
            return p
        p = enp.asarray(p)
        return (p + u).astype(p.dtype)

    return tree_map(add, params, updates, is_leaf=lambda x: x is None)


def value_at(hyperparameter: float | Schedule | Array, count: Any) -> Any:
    """A hyperparameter's value at step ``count``: a schedule is called, a number returned as it is.

    >>> from ember import optim
    >>> optim.value_at(0.1, 5), float(optim.value_at(optim.exponential(1.0, gamma=0.5), 2))
    (0.1, 0.25)
    """
    return hyperparameter(count) if callable(hyperparameter) else hyperparameter


def learning_rate_of(fn: str, learning_rate: float | Schedule | None, lr: float | Schedule | None,
                     default: float) -> float | Schedule:  # fmt: skip
    """The learning rate given as ``learning_rate`` (optax's and ember's name) or ``lr`` (PyTorch's), not both;
    ``default`` (the PyTorch optimizer's own) when neither is given.

    >>> from ember import optim
    >>> optim.learning_rate_of("sgd", None, 0.5, default=1e-3), optim.learning_rate_of("sgd", None, None, 1e-3)
    (0.5, 0.001)
    """
    if learning_rate is not None and lr is not None:
        raise InvalidArgumentError(f"optim.{fn}: give the learning rate once, as learning_rate= (or PyTorch's lr=), "
                                   f"not both")
    chosen = learning_rate if learning_rate is not None else lr if lr is not None else default
    if not callable(chosen) and float(chosen) < 0:
        raise InvalidArgumentError(f"optim.{fn}: invalid learning rate {chosen} (it must be >= 0)")
    return chosen


# --- private pieces shared by the optimizer and transformation modules ------------------------------------


def _is_none(x: Any) -> bool:
    """``is_leaf`` for tree walks that must see ``None`` leaves (frozen parameters, option-off moments)."""
    return x is None


def _zero_count() -> Array:
    """A state's step count before the first step: an int32 zero (an array, so ``jit`` traces it once)."""
    return enp.zeros((), dtype=enp.int32)


def _zeros(params: Params, fill: float = 0.0) -> Updates:
    """A tree like ``params`` filled with ``fill`` (``None`` leaves stay ``None``): a moment's first value."""
    return tree_map(lambda p: enp.full_like(enp.asarray(p), fill), params)


def _need_params(fn: str, params: Params, what: str = "update") -> None:
    """Refuse ``update(grads, state)`` without the parameters where ``what`` (the update, weight decay) uses them."""
    if params is None:
        raise InvalidArgumentError(f"optim.{fn}: {what} needs the parameters: opt.update(grads, state, params)")


def _check(fn: str, **ranges: tuple[Any, float, float, bool]) -> None:
    """PyTorch's argument checks: each ``name=(value, low, high, closed)`` in [low, high] (closed) or [low, high).

    A schedule or an array (possibly traced) is not checked.
    """
    for name, (value, low, high, closed) in ranges.items():
        if callable(value) or isinstance(value, Array):
            continue
        ok = low <= value <= high if closed else low <= value < high
        if not ok:
            interval = f"[{low}, {high}]" if closed else f"[{low}, {high})"
            raise InvalidArgumentError(f"optim.{fn}: invalid {name} value {value} (it must be in {interval})")


def _check_betas(fn: str, betas: tuple[Any, Any]) -> tuple[Any, Any]:
    """``betas`` as a checked pair, each in [0, 1) (PyTorch's check and wording); returns it."""
    if len(betas) != 2:
        raise InvalidArgumentError(f"optim.{fn}: betas must be a pair (beta1, beta2), got {betas!r}")
    for i, beta in enumerate(betas):
        if not (callable(beta) or isinstance(beta, Array)) and not 0.0 <= beta < 1.0:
            raise InvalidArgumentError(f"optim.{fn}: invalid beta parameter at index {i}: {beta} "
                                       f"(it must be in [0, 1))")  # fmt: skip
    return betas


_INF = math.inf
