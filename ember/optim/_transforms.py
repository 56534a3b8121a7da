"""Composable transformations (optax's shapes): clipping, weight decay, masks, param groups, averaging, accumulation.

Each is a ``GradientTransformation`` whose state is a NamedTuple declared right above its factory.
``None`` leaves (frozen, partitioned-out parameters) pass through every one untouched. The wrappers
(``masked``, ``multi_transform``, ``multi_steps``, ``swa``, ``ema_params``) forward extra keyword
arguments of ``update`` (``value=loss``) to the transformation they wrap.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

import ember.numpy as enp
from ember import lax
from ember.core.array import Array
from ember.core.pytree import tree_leaves, tree_map
from ember.errors import InvalidArgumentError
from ember.optim._base import (EmptyState, GradientTransformation, Params, Schedule, Updates, _accepted, _is_none,
                               _need_params, _zero_count, _zeros, apply_updates, value_at)

__all__ = ["add_decayed_weights", "averaged_params", "clip", "clip_by_global_norm", "ema", "ema_params", "masked",
           "multi_steps", "multi_transform", "scale", "scale_by_schedule", "swa", "zero_nans",
           "AveragedParamsState", "EmaState", "MaskedState", "MultiStepsState", "MultiTransformState",
           "ScaleByScheduleState", "ZeroNansState"]  # fmt: skip


def _same_dtype(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` leaf by leaf, each result cast back to its leaf's dtype (a float32 gradient stays float32)."""
    def apply(u: Any) -> Any:
        u = enp.asarray(u)
        return fn(u).astype(u.dtype)

    return apply


def scale(factor: float) -> GradientTransformation:
    """Multiply the updates by ``factor`` (``scale(-lr)`` turns gradients into an SGD step).

    Args:
      factor: the factor.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> optim.scale(-0.5).update(enp.array([1.0, 2.0]), None)[0].tolist()
    [-0.5, -1.0]
    """
    def update(updates: Updates, state: Any, params: Params = None) -> tuple[Updates, Any]:
        return tree_map(_same_dtype(lambda u: u * factor), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


class ScaleByScheduleState(NamedTuple):
    """``scale_by_schedule``'s state: the step count."""

    count: Array


def scale_by_schedule(schedule: Schedule) -> GradientTransformation:
    """Multiply the updates by ``schedule(count)``, ``count`` the number of earlier updates.

    Args:
      schedule: a function of the step count (``optim.cosine_decay(...)``).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.scale_by_schedule(optim.exponential(1.0, gamma=0.5))
    >>> state = opt.init(enp.zeros(1))
    >>> [opt.update(enp.ones(1), state)[0].tolist() for state in [state, opt.update(enp.ones(1), state)[1]]]
    [[1.0], [0.5]]
    """
    def init(params: Params) -> ScaleByScheduleState:
        return ScaleByScheduleState(_zero_count())

    def update(updates: Updates, state: ScaleByScheduleState,
               params: Params = None) -> tuple[Updates, ScaleByScheduleState]:  # fmt: skip
        factor = schedule(state.count)
        return tree_map(_same_dtype(lambda u: u * factor), updates), ScaleByScheduleState(state.count + 1)

    return GradientTransformation(init, update)


def clip(max_delta: float) -> GradientTransformation:
    """Clip each element of the updates to ``[-max_delta, max_delta]`` (``torch.nn.utils.clip_grad_value_``).

    Args:
      max_delta: the largest absolute value kept.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> optim.clip(1.0).update(enp.array([-3.0, 0.5, 2.0]), None)[0].tolist()
    [-1.0, 0.5, 1.0]
    """
    if not max_delta >= 0:
        raise InvalidArgumentError(f"optim.clip: max_delta must be >= 0, got {max_delta!r}")

    def update(updates: Updates, state: Any, params: Params = None) -> tuple[Updates, Any]:
        return tree_map(_same_dtype(lambda u: enp.clip(u, -max_delta, max_delta)), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


def _global_norm(leaves: list, norm_type: float) -> Any:
    if norm_type == float("inf"):
        return enp.max(enp.stack([enp.max(enp.abs(x)) for x in leaves]))
    if norm_type == 2.0:
        return enp.sqrt(sum(enp.sum(enp.real(x * enp.conj(x))) for x in leaves))
    return sum(enp.sum(enp.abs(x) ** norm_type) for x in leaves) ** (1.0 / norm_type)


def clip_by_global_norm(max_norm: float, norm_type: float = 2.0) -> GradientTransformation:
    """Scale the updates down when their global norm exceeds ``max_norm`` (``torch.nn.utils.clip_grad_norm_``).

    The norm is over all leaves together; the factor is PyTorch's ``min(1, max_norm / (norm + 1e-6))``.

    Args:
      max_norm: the largest global norm kept.
      norm_type: the norm's order (``2.0``, any ``p > 0``, or ``float('inf')``).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> updates, _ = optim.clip_by_global_norm(1.0).update({'a': enp.array([3.0]), 'b': enp.array([4.0])}, None)
    >>> [round(float(u[0]), 4) for u in updates.values()]
    [0.6, 0.8]
    """
    if not max_norm >= 0:
        raise InvalidArgumentError(f"optim.clip_by_global_norm: max_norm must be >= 0, got {max_norm!r}")
    if not norm_type > 0:
        raise InvalidArgumentError(f"optim.clip_by_global_norm: norm_type must be > 0, got {norm_type!r}")

    def update(updates: Updates, state: Any, params: Params = None) -> tuple[Updates, Any]:
        leaves = [enp.asarray(x) for x in tree_leaves(updates)]
        if not leaves:
            return updates, state
        norm = _global_norm(leaves, float(norm_type))
        factor = enp.minimum(max_norm / (norm + 1e-6), 1.0)
        return tree_map(_same_dtype(lambda u: u * factor), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)


def add_decayed_weights(weight_decay: float = 0.0, mask: Any = None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (L2 regularization before a step, decoupled after one).

    Args:
      weight_decay: the factor.
      mask: leave some parameters out (a pytree of bools like the parameters, or a function
        ``params -> mask``); see ``masked``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> optim.add_decayed_weights(0.5).update(enp.array([1.0]), None, enp.array([2.0]))[0].tolist()
    [2.0]
    """
    if mask is not None:
        return masked(add_decayed_weights(weight_decay), mask)

    def update(updates: Updates, state: Any, params: Params = None) -> tuple[Updates, Any]:
        _need_params("add_decayed_weights", params)
        return tree_map(lambda u, p: (u + weight_decay * p).astype(enp.asarray(u).dtype), updates, params), state

    return GradientTransformation(lambda params: EmptyState(), update)


class MaskedState(NamedTuple):
    """``masked``'s state: the inner transformation's, over the masked-in leaves (the others ``None``)."""

    inner_state: Any


def _resolve(tree_or_fn: Any, params: Any) -> Any:
    return tree_or_fn(params) if callable(tree_or_fn) else tree_or_fn


def _select(tree: Any, choices: Any, keep: Callable[[Any], bool]) -> Any:
    """``tree`` with the leaves whose choice ``keep`` rejects replaced by ``None``."""
    return tree_map(lambda x, c: x if x is not None and keep(c) else None, tree, choices, is_leaf=_is_none)


def _check_mask(fn: str, mask: Any) -> None:
    for m in tree_leaves(mask):
        if not isinstance(m, bool):
            raise InvalidArgumentError(f"optim.{fn}: a mask leaf must be a Python bool (decided before tracing), "
                                       f"got {type(m).__name__} {m!r}")


def masked(inner: GradientTransformation, mask: Any) -> GradientTransformation:
    """Apply ``inner`` to the leaves whose mask is ``True``; the others pass through unchanged (optax's).

    Args:
      inner: the transformation to apply.
      mask: a pytree of Python bools shaped like the parameters, or a function ``params -> mask`` (e.g.
        ``lambda p: ember.tree.map(lambda x: x.ndim > 1, p)``: no weight decay on biases and norms).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.masked(optim.scale(0.0), {'w': True, 'b': False})
    >>> grads = {'w': enp.ones(1), 'b': enp.ones(1)}
    >>> {k: v.tolist() for k, v in opt.update(grads, opt.init(grads), grads)[0].items()}
    {'b': [1.0], 'w': [0.0]}
    """
    def init(params: Params) -> MaskedState:
        mask_tree = _resolve(mask, params)
        _check_mask("masked", mask_tree)
        return MaskedState(inner.init(_select(params, mask_tree, bool)))

    def update(updates: Updates, state: MaskedState, params: Params = None,
               **extra_args: Any) -> tuple[Updates, MaskedState]:  # fmt: skip
        mask_tree = _resolve(mask, updates)
        _check_mask("masked", mask_tree)
        inner_params = None if params is None else _select(params, mask_tree, bool)
        inner_updates, inner_state = inner.update(_select(updates, mask_tree, bool), state.inner_state, inner_params,
                                                  **_accepted(inner.update, extra_args))
        merged = tree_map(lambda u, m, new: new if m else u, updates, mask_tree, inner_updates, is_leaf=_is_none)
        return merged, MaskedState(inner_state)

    return GradientTransformation(init, update)


class MultiTransformState(NamedTuple):
    """``multi_transform``'s state: each label's transformation's state."""

    inner_states: dict


def multi_transform(transforms: Mapping[Hashable, GradientTransformation], param_labels: Any) -> GradientTransformation:
    """A transformation per label: PyTorch's param groups, each with its own optimizer and hyperparameters.

    Args:
      transforms: ``{label: transformation}``.
      param_labels: a pytree of labels shaped like the parameters, or a function ``params -> labels``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.multi_transform({'fast': optim.scale(-1.0), 'slow': optim.scale(-0.1)},
    ...                             {'w': 'fast', 'b': 'slow'})
    >>> grads = {'w': enp.ones(1), 'b': enp.ones(1)}
    >>> {k: v.tolist() for k, v in opt.update(grads, opt.init(grads), grads)[0].items()}
    {'b': [-0.10000000149011612], 'w': [-1.0]}
    """
    transforms = dict(transforms)

    def labels_of(tree: Any, like: Any) -> Any:
        labels = _resolve(param_labels, tree)

        def check(x: Any, label: Any) -> None:
            if x is not None and label not in transforms:
                raise InvalidArgumentError(f"optim.multi_transform: the label {label!r} has no transformation; "
                                           f"the labels given are {sorted(map(repr, transforms))}")

        tree_map(check, like, labels, is_leaf=_is_none)
        return labels

    def init(params: Params) -> MultiTransformState:
        labels = labels_of(params, params)
        return MultiTransformState({k: t.init(_select(params, labels, lambda lab, k=k: lab == k))
                                    for k, t in transforms.items()})

    def update(updates: Updates, state: MultiTransformState, params: Params = None,
               **extra_args: Any) -> tuple[Updates, MultiTransformState]:  # fmt: skip
        labels = labels_of(updates, updates)
        outs, new_states = {}, {}
        for k, t in transforms.items():
            def keep(lab: Any, k: Hashable = k) -> bool:
                return lab == k

            inner_params = None if params is None else _select(params, labels, keep)
            outs[k], new_states[k] = t.update(_select(updates, labels, keep), state.inner_states[k], inner_params,
                                              **_accepted(t.update, extra_args))
        keys = list(outs)
        merged = tree_map(lambda u, lab, *per_label: None if u is None else per_label[keys.index(lab)], updates, labels,
                          *(outs[k] for k in keys), is_leaf=_is_none)
        return merged, MultiTransformState(new_states)

    return GradientTransformation(init, update)


class EmaState(NamedTuple):
    """``ema``'s state: the step count and the (not debiased) moving average of the updates."""

    count: Array
    ema: Updates


def ema(decay: float, debias: bool = True) -> GradientTransformation:
    """An exponential moving average of the updates, ``ema = decay * ema + (1 - decay) * updates`` (optax's).

    Returns the average, divided by ``1 - decay ** count`` when ``debias``. To average the
    *parameters* (``torch.optim.swa_utils.AveragedModel``) use ``ema_params`` or ``swa``.

    Args:
      decay: the weight of the past.
      debias: correct the average's bias towards its zero start.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.ema(0.5, debias=False)
    >>> opt.update(enp.array([2.0]), opt.init(enp.zeros(1)))[0].tolist()
    [1.0]
    """
    def init(params: Params) -> EmaState:
        return EmaState(_zero_count(), _zeros(params))

    def update(updates: Updates, state: EmaState, params: Params = None) -> tuple[Updates, EmaState]:
        new_ema = tree_map(lambda u, m: ((1 - decay) * u + decay * m).astype(enp.asarray(u).dtype), updates, state.ema)
        count = state.count + 1
        out = new_ema
        if debias:
            out = tree_map(lambda m: (m / (1 - decay ** (count * 1.0))).astype(m.dtype), new_ema)
        return out, EmaState(count, new_ema)

    return GradientTransformation(init, update)


class AveragedParamsState(NamedTuple):
    """``swa``'s and ``ema_params``'s state: the inner transformation's, the step count, the number of
    parameter sets averaged so far, and their average (``averaged_params(state)`` reads it)."""

    inner_state: Any
    count: Array
    n_averaged: Array
    average: Params


def _averaging(fn: str, inner: GradientTransformation, start: int, every: int,
               fold: Callable[[Any, Any, Any], Any]) -> GradientTransformation:  # fmt: skip
    if start < 0 or every < 1:
        raise InvalidArgumentError(f"optim.{fn}: need start >= 0 and every >= 1, got start={start}, every={every}")

    def init(params: Params) -> AveragedParamsState:
        average = tree_map(lambda p: enp.array(p, copy=True), params)
        return AveragedParamsState(inner.init(params), _zero_count(), _zero_count(), average)

    def update(updates: Updates, state: AveragedParamsState, params: Params = None,
               **extra_args: Any) -> tuple[Updates, AveragedParamsState]:  # fmt: skip
        _need_params(fn, params)
        updates, inner_state = inner.update(updates, state.inner_state, params, **_accepted(inner.update, extra_args))
        new_params = apply_updates(params, updates)
        take = (state.count >= start) & ((state.count - start) % every == 0)
        n = state.n_averaged

        def fold_leaf(avg: Any, p: Any) -> Any:
            p = enp.asarray(p)
            folded = enp.where(n == 0, p, fold(avg, p, n)).astype(p.dtype)
            return enp.where(take, folded, avg)

        average = tree_map(fold_leaf, state.average, new_params)
        new_state = AveragedParamsState(inner_state, state.count + 1, n + take.astype(enp.int32), average)
        return updates, new_state

    return GradientTransformation(init, update)


def swa(inner: GradientTransformation, start: int = 0, every: int = 1) -> GradientTransformation:
    """``inner``, keeping the equal-weight running mean of the parameters in the state (stochastic weight averaging).

    After the ``i``-th update (counting from 0) with ``i >= start`` and ``(i - start) % every == 0``, the
    updated parameters are folded into the average, as ``torch.optim.swa_utils.AveragedModel``'s
    ``update_parameters(model)`` after that ``optimizer.step()``. Read it with ``averaged_params(state)``;
    before the first fold it is the initial parameters.

    Args:
      inner: the optimizer.
      start: the first update whose result is averaged.
      every: average one update in ``every``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.swa(optim.scale(-1.0))
    >>> params = enp.zeros(1)
    >>> state = opt.init(params)
    >>> for _ in range(3):
    ...     updates, state = opt.update(enp.ones(1), state, params)
    ...     params = optim.apply_updates(params, updates)
    >>> params.tolist(), optim.averaged_params(state).tolist()
    ([-3.0], [-2.0])
    """
    return _averaging("swa", inner, start, every, lambda avg, p, n: avg + (p - avg) / (n + 1.0))


def ema_params(inner: GradientTransformation, decay: float = 0.999, start: int = 0,
               every: int = 1) -> GradientTransformation:  # fmt: skip
    """``inner``, keeping an exponential moving average of the parameters in the state.

    ``average = decay * average + (1 - decay) * params`` after each update taken (the first one
    copies), as ``AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))``. Read it with
    ``averaged_params(state)``. ``start`` and ``every`` as in ``swa``.

    Args:
      inner: the optimizer.
      decay: the weight of the past.
      start: the first update whose result is averaged.
      every: average one update in ``every``.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.ema_params(optim.scale(-1.0), decay=0.5)
    >>> params = enp.zeros(1)
    >>> state = opt.init(params)
    >>> for _ in range(2):
    ...     updates, state = opt.update(enp.ones(1), state, params)
    ...     params = optim.apply_updates(params, updates)
    >>> optim.averaged_params(state).tolist()
    [-1.5]
    """
    return _averaging("ema_params", inner, start, every, lambda avg, p, n: avg + (1.0 - decay) * (p - avg))


def averaged_params(state: Any) -> Any:
    """The averaged parameters kept by the ``swa`` or ``ema_params`` in an optimizer state (at any depth).

    Args:
      state: an optimizer state holding one ``AveragedParamsState`` (in a ``chain``, a mask, a group...).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.chain(optim.clip(1.0), optim.swa(optim.scale(-1.0)))
    >>> optim.averaged_params(opt.init(enp.ones(2))).tolist()
    [1.0, 1.0]
    """
    found = []

    def visit(node: Any) -> None:
        if isinstance(node, AveragedParamsState):
            found.append(node.average)
        elif isinstance(node, (tuple, list)):
            for child in node:
                visit(child)
        elif isinstance(node, Mapping):
            for child in node.values():
                visit(child)

    visit(state)
    if len(found) != 1:
        raise InvalidArgumentError(f"optim.averaged_params: the state holds {len(found)} parameter averages; it "
                                   f"needs exactly one (an optimizer built with optim.swa or optim.ema_params)")
    return found[0]


class MultiStepsState(NamedTuple):
    """``multi_steps``'s state: micro-steps since the last update, updates made, the inner state, the
    accumulated gradients."""

    mini_step: Array
    gradient_step: Array
    inner_state: Any
    acc_grads: Updates


def multi_steps(inner: GradientTransformation, every_k_schedule: int | Schedule,
                use_grad_mean: bool = True) -> GradientTransformation:  # fmt: skip
    """Gradient accumulation: ``inner`` steps once every ``k`` calls, on the mean of their gradients (optax's
    ``MultiSteps``).

    The other calls return zero updates and leave the inner state as it was. The choice is staged
    (``lax.cond``), so under ``jit`` the inner optimizer runs on the ``k``-th call only.

    Args:
      inner: the optimizer.
      every_k_schedule: ``k``, or a function of the number of inner steps made giving ``k``.
      use_grad_mean: average the accumulated gradients (``False``: sum them).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.multi_steps(optim.scale(-1.0), every_k_schedule=2)
    >>> state = opt.init(enp.zeros(1))
    >>> u1, state = opt.update(enp.array([1.0]), state)
    >>> u2, state = opt.update(enp.array([3.0]), state)
    >>> u1.tolist(), u2.tolist()
    ([0.0], [-2.0])
    """
    def init(params: Params) -> MultiStepsState:
        return MultiStepsState(_zero_count(), _zero_count(), inner.init(params), _zeros(params))

    def update(updates: Updates, state: MultiStepsState, params: Params = None,
               **extra_args: Any) -> tuple[Updates, MultiStepsState]:  # fmt: skip
        k = value_at(every_k_schedule, state.gradient_step)
        if use_grad_mean:
            acc = tree_map(lambda g, a: (a + (g - a) / (state.mini_step + 1.0)).astype(a.dtype), updates,
                           state.acc_grads)
        else:
            acc = tree_map(lambda g, a: (a + g).astype(a.dtype), updates, state.acc_grads)
        emit = state.mini_step + 1 >= k
        extra = _accepted(inner.update, extra_args)

        def step(acc: Any, inner_state: Any, params: Any, extra: dict) -> tuple[Any, Any, Any]:
            updates, inner_state = inner.update(acc, inner_state, params, **extra)
            return updates, inner_state, tree_map(enp.zeros_like, acc)

        def wait(acc: Any, inner_state: Any, params: Any, extra: dict) -> tuple[Any, Any, Any]:
            return tree_map(enp.zeros_like, acc), inner_state, acc

        # a staged choice: under jit the inner optimizer runs only on the k-th call
        out, inner_state, acc = lax.cond(emit, step, wait, acc, state.inner_state, params, extra)
        new_state = MultiStepsState(enp.where(emit, 0, state.mini_step + 1).astype(enp.int32),
                                    (state.gradient_step + emit.astype(enp.int32)).astype(enp.int32), inner_state, acc)
        return out, new_state

    return GradientTransformation(init, update)


class ZeroNansState(NamedTuple):
    """``zero_nans``'s state: per leaf, whether the last update had a NaN."""

    found_nan: Any


def zero_nans() -> GradientTransformation:
    """Replace NaNs in the updates by 0, recording per leaf in the state whether there was one (optax's).

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.zero_nans()
    >>> updates, state = opt.update(enp.array([1.0, float('nan')]), opt.init(enp.zeros(2)))
    >>> updates.tolist(), bool(state.found_nan)
    ([1.0, 0.0], True)
    """
    def init(params: Params) -> ZeroNansState:
        return ZeroNansState(tree_map(lambda p: enp.zeros((), dtype=bool), params))

    def update(updates: Updates, state: ZeroNansState, params: Params = None) -> tuple[Updates, ZeroNansState]:
        found = tree_map(lambda u: enp.any(enp.isnan(u)), updates)
        cleaned = tree_map(lambda u: enp.where(enp.isnan(u), enp.zeros_like(u), u), updates)
        return cleaned, ZeroNansState(found)

    return GradientTransformation(init, update)
