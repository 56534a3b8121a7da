"""Learning-rate schedules: pure functions of the step count, on torch.optim.lr_scheduler's curves.

A schedule is ``schedule(count) -> value`` with ``count`` the number of optimizer steps taken so far
(an int32 array in an optimizer's state, or a Python int). Step ``count`` of a schedule is the learning
rate PyTorch's scheduler gives after ``count`` calls of ``scheduler.step()``, one per ``optimizer.step()``.
Every schedule is written without Python branching on ``count``, so it runs under ``jit`` and ``vmap``.
``reduce_on_plateau`` depends on the loss, not only on the step, so it is a transformation that scales
the updates, with its decisions kept in the state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import ember.numpy as enp
from ember.core.pytree import tree_map
from ember.errors import InvalidArgumentError
from ember.optim._base import GradientTransformation, Schedule

__all__ = ["constant", "cosine_annealing_warm_restarts", "cosine_decay", "cyclic", "exponential", "join", "linear",
           "multistep", "onecycle", "piecewise_constant", "polynomial", "reduce_on_plateau", "step",
           "warmup_cosine_decay", "ReduceOnPlateauState"]  # fmt: skip


def _float(count: Any) -> Any:
    """The step count as a float array of the default float dtype."""
    return enp.asarray(count) * 1.0


def _check_positive(fn: str, name: str, value: Any) -> None:
    if not value > 0:
        raise InvalidArgumentError(f"optim.{fn}: {name} must be > 0, got {value!r}")


def constant(value: float) -> Schedule:
    """The same value at every step (PyTorch's learning rate with no scheduler).

    Args:
      value: the value.

    >>> from ember import optim
    >>> float(optim.constant(0.5)(100))
    0.5
    """
    def schedule(count: Any) -> Any:
        return enp.full(enp.shape(count), value, dtype=_float(count).dtype)

    return schedule


def step(init_value: float, step_size: int, gamma: float = 0.1) -> Schedule:
    """``init_value * gamma ** (count // step_size)`` (``torch.optim.lr_scheduler.StepLR``).

    Args:
      init_value: the value at step 0 (PyTorch's ``lr``).
      step_size: steps between two decays.
      gamma: the factor of each decay.

    >>> from ember import optim
    >>> [float(optim.step(1.0, step_size=2, gamma=0.5)(c)) for c in range(5)]
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """
    _check_positive("step", "step_size", step_size)

    def schedule(count: Any) -> Any:
        return init_value * gamma ** _float(enp.floor_divide(enp.asarray(count), step_size))

    return schedule


def multistep(init_value: float, milestones: Sequence[int], gamma: float = 0.1) -> Schedule:
    """Decays by ``gamma`` at each milestone (``torch.optim.lr_scheduler.MultiStepLR``).

    A milestone given twice decays twice, as in PyTorch.

    Args:
      init_value: the value at step 0.
      milestones: the steps at which the value is multiplied by ``gamma``.
      gamma: the factor of each decay.

    >>> from ember import optim
    >>> [float(optim.multistep(1.0, milestones=[1, 3], gamma=0.5)(c)) for c in range(5)]
    [1.0, 0.5, 0.5, 0.25, 0.25]
    """
    bounds = enp.asarray(sorted(int(m) for m in milestones) or [2**31 - 1], dtype=enp.int32)

    def schedule(count: Any) -> Any:
        passed = enp.searchsorted(bounds, enp.asarray(count), side="right")
        return init_value * gamma ** _float(passed)

    return schedule


def exponential(init_value: float, gamma: float) -> Schedule:
    """``init_value * gamma ** count`` (``torch.optim.lr_scheduler.ExponentialLR``).

    Args:
      init_value: the value at step 0.
      gamma: the factor of each step.

    >>> from ember import optim
    >>> float(optim.exponential(1.0, gamma=0.5)(3))
    0.125
    """
    def schedule(count: Any) -> Any:
        return init_value * gamma ** _float(count)

    return schedule


def cosine_decay(init_value: float, T_max: int, eta_min: float = 0.0) -> Schedule:  # noqa: N803
    """Half a cosine from ``init_value`` down to ``eta_min`` over ``T_max`` steps (``CosineAnnealingLR``).

    ``eta_min + (init_value - eta_min) * (1 + cos(pi * count / T_max)) / 2``; as in PyTorch the curve
    goes on past ``T_max`` (it rises back to ``init_value`` at ``2 * T_max``).

    Args:
      init_value: the value at step 0.
      T_max: the steps of the half cosine.
      eta_min: the value at ``T_max``.

    >>> from ember import optim
    >>> [round(float(optim.cosine_decay(1.0, T_max=2)(c)), 6) for c in range(3)]
    [1.0, 0.5, 0.0]
    """
    _check_positive("cosine_decay", "T_max", T_max)

    def schedule(count: Any) -> Any:
        return eta_min + (init_value - eta_min) * (1.0 + enp.cos(math.pi * _float(count) / T_max)) / 2

    return schedule


def cosine_annealing_warm_restarts(init_value: float, T_0: int, T_mult: int = 1,  # noqa: N803
                                   eta_min: float = 0.0) -> Schedule:  # fmt: skip
    """Cosine decays restarting at ``init_value``, the ``i``-th lasting ``T_0 * T_mult ** i`` steps (SGDR).

    ``torch.optim.lr_scheduler.CosineAnnealingWarmRestarts``.

    Args:
      init_value: the value at each restart.
      T_0: the steps of the first cycle.
      T_mult: the factor by which each cycle is longer than the last (an int >= 1).
      eta_min: the lowest value.

    >>> from ember import optim
    >>> [round(float(optim.cosine_annealing_warm_restarts(1.0, T_0=2)(c)), 6) for c in range(4)]
    [1.0, 0.5, 1.0, 0.5]
    """
    if not (isinstance(T_0, int) and T_0 > 0):
        raise InvalidArgumentError(f"optim.cosine_annealing_warm_restarts: T_0 must be a positive int, got {T_0!r}")
    if not (isinstance(T_mult, int) and T_mult >= 1):
        raise InvalidArgumentError(f"optim.cosine_annealing_warm_restarts: T_mult must be an int >= 1, "
                                   f"got {T_mult!r}")
    starts, lengths = [0], [T_0]  # the cycles' first steps, as far as an int32 count reaches
    while T_mult > 1 and starts[-1] + lengths[-1] < 2**31:
        starts.append(starts[-1] + lengths[-1])
        lengths.append(lengths[-1] * T_mult)
    starts_a = enp.asarray(starts, dtype=enp.int64 if starts[-1] >= 2**31 else enp.int32)
    lengths_f = enp.asarray([float(n) for n in lengths])

    def schedule(count: Any) -> Any:
        count = enp.asarray(count)
        if T_mult == 1:
            t_cur, t_i = _float(count % T_0), float(T_0)
        else:
            cycle = enp.searchsorted(starts_a, count, side="right") - 1
            t_cur, t_i = _float(count - starts_a[cycle]), lengths_f[cycle]
        return eta_min + (init_value - eta_min) * (1.0 + enp.cos(math.pi * t_cur / t_i)) / 2

    return schedule


def warmup_cosine_decay(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                        end_value: float = 0.0, exponent: float = 1.0) -> Schedule:  # fmt: skip
    """Linear warmup from ``init_value`` to ``peak_value``, then a cosine down to ``end_value`` (optax's).

    ``decay_steps`` counts the warmup too (optax's ``warmup_cosine_decay_schedule``); after it the value
    stays at ``end_value``.

    Args:
      init_value: the value at step 0.
      peak_value: the value at ``warmup_steps``.
      warmup_steps: the steps of the linear warmup.
      decay_steps: the step at which ``end_value`` is reached.
      end_value: the final value.
      exponent: the power of the cosine factor (optax's ``exponent``).

    >>> from ember import optim
    >>> [round(float(optim.warmup_cosine_decay(0.0, 1.0, warmup_steps=2, decay_steps=4)(c)), 6) for c in range(6)]
    [0.0, 0.5, 1.0, 0.5, 0.0, 0.0]
    """
    if warmup_steps < 0 or decay_steps < warmup_steps:
        raise InvalidArgumentError(f"optim.warmup_cosine_decay: need 0 <= warmup_steps <= decay_steps, got "
                                   f"warmup_steps={warmup_steps}, decay_steps={decay_steps}")
    cos_steps = decay_steps - warmup_steps

    def schedule(count: Any) -> Any:
        c = _float(count)
        warm = init_value + (peak_value - init_value) * enp.clip(c, 0, warmup_steps) / max(warmup_steps, 1)
        t = enp.clip(c - warmup_steps, 0, cos_steps) / max(cos_steps, 1)
        decay = end_value + (peak_value - end_value) * ((1.0 + enp.cos(math.pi * t)) / 2) ** exponent
        return enp.where(c < warmup_steps, warm, decay)

    return schedule


def linear(init_value: float, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
           total_iters: int = 5) -> Schedule:  # fmt: skip
    """A linear ramp of the factor from ``start_factor`` to ``end_factor`` (``LinearLR``).

    ``init_value * (start_factor + (end_factor - start_factor) * min(count, total_iters) / total_iters)``.

    Args:
      init_value: the base value (PyTorch's ``lr``).
      start_factor: the factor at step 0.
      end_factor: the factor from step ``total_iters`` on.
      total_iters: the steps of the ramp.

    >>> from ember import optim
    >>> [float(optim.linear(1.0, start_factor=0.5, end_factor=1.0, total_iters=2)(c)) for c in range(4)]
    [0.5, 0.75, 1.0, 1.0]
    """
    if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
        raise InvalidArgumentError(f"optim.linear: need 0 < start_factor <= 1 and 0 <= end_factor <= 1 (as "
                                   f"LinearLR), got start_factor={start_factor}, end_factor={end_factor}")
    _check_positive("linear", "total_iters", total_iters)

    def schedule(count: Any) -> Any:
        frac = enp.minimum(_float(count), float(total_iters)) / total_iters
        return init_value * (start_factor + (end_factor - start_factor) * frac)

    return schedule


def polynomial(init_value: float, total_iters: int = 5, power: float = 1.0) -> Schedule:
    """``init_value * (1 - min(count, total_iters) / total_iters) ** power`` (``PolynomialLR``).

    Args:
      init_value: the value at step 0.
      total_iters: the step at which the value reaches 0.
      power: the power of the polynomial.

    >>> from ember import optim
    >>> [float(optim.polynomial(1.0, total_iters=2, power=2.0)(c)) for c in range(4)]
    [1.0, 0.25, 0.0, 0.0]
    """
    _check_positive("polynomial", "total_iters", total_iters)

    def schedule(count: Any) -> Any:
        return init_value * (1.0 - enp.minimum(_float(count), float(total_iters)) / total_iters) ** power

    return schedule


def onecycle(max_lr: float, total_steps: int, pct_start: float = 0.3, anneal_strategy: str = "cos",
             div_factor: float = 25.0, final_div_factor: float = 1e4,
             three_phase: bool = False) -> Schedule:  # fmt: skip
    """The 1cycle policy's learning rate (``torch.optim.lr_scheduler.OneCycleLR``).

    From ``max_lr / div_factor`` up to ``max_lr`` over ``pct_start * total_steps`` steps, then down to
    ``max_lr / div_factor / final_div_factor`` at ``total_steps - 1`` (``three_phase``: back to the
    initial value first, then down). The count is clamped at ``total_steps``, where PyTorch stops.

    Args:
      max_lr: the peak learning rate.
      total_steps: the steps of the cycle.
      pct_start: the fraction of the steps spent rising.
      anneal_strategy: ``'cos'`` or ``'linear'``.
      div_factor: ``max_lr / div_factor`` is the initial value.
      final_div_factor: the initial value divided by this is the final one.
      three_phase: use PyTorch's three phases instead of two.

    >>> from ember import optim
    >>> [round(float(optim.onecycle(1.0, total_steps=5, pct_start=0.4, anneal_strategy='linear',
    ...                             div_factor=2.0, final_div_factor=1.0)(c)), 4) for c in range(5)]
    [0.5, 1.0, 0.8333, 0.6667, 0.5]
    """
    if anneal_strategy not in ("cos", "linear"):
        raise InvalidArgumentError(f"optim.onecycle: anneal_strategy must be 'cos' or 'linear', "
                                   f"got {anneal_strategy!r}")
    if not 0 <= pct_start <= 1:
        raise InvalidArgumentError(f"optim.onecycle: pct_start must be in [0, 1], got {pct_start!r}")
    _check_positive("onecycle", "total_steps", total_steps)
    initial = max_lr / div_factor
    final = initial / final_div_factor
    if three_phase:
        phases = [(float(pct_start * total_steps) - 1, initial, max_lr),
                  (float(2 * pct_start * total_steps) - 2, max_lr, initial), (total_steps - 1.0, initial, final)]
    else:
        phases = [(float(pct_start * total_steps) - 1, initial, max_lr), (total_steps - 1.0, max_lr, final)]

    def anneal(start: float, end: float, pct: Any) -> Any:
        if anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (enp.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def schedule(count: Any) -> Any:
        c = enp.minimum(_float(count), float(total_steps))
        out, begin = None, 0.0
        for i, (end_step, lo, hi) in enumerate(phases):
            # PyTorch picks the first phase with count <= end_step (the last phase takes the rest)
            width = end_step - begin
            value = anneal(lo, hi, (c - begin) / (width if width != 0 else 1.0))
            out = value if out is None else enp.where(c > phases[i - 1][0], value, out)
            begin = end_step
        return out

    return schedule


def cyclic(base_lr: float, max_lr: float, step_size_up: int = 2000, step_size_down: int | None = None,
           mode: str = "triangular", gamma: float = 1.0) -> Schedule:  # fmt: skip
    """A learning rate cycling between ``base_lr`` and ``max_lr`` (``torch.optim.lr_scheduler.CyclicLR``).

    Args:
      base_lr: the low end of the cycle.
      max_lr: the high end of the cycle.
      step_size_up: steps rising in each cycle.
      step_size_down: steps falling in each cycle (default ``step_size_up``).
      mode: ``'triangular'``, ``'triangular2'`` (the amplitude halves each cycle) or ``'exp_range'``
        (the amplitude is scaled by ``gamma ** count``).
      gamma: the factor of ``'exp_range'``.

    >>> from ember import optim
    >>> [float(optim.cyclic(0.0, 1.0, step_size_up=2)(c)) for c in range(5)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    if mode not in ("triangular", "triangular2", "exp_range"):
        raise InvalidArgumentError(f"optim.cyclic: mode must be 'triangular', 'triangular2' or 'exp_range', "
                                   f"got {mode!r}")
    up = float(step_size_up)
    down = float(step_size_down) if step_size_down is not None else up
    total = up + down
    ratio = up / total

    def schedule(count: Any) -> Any:
        c = _float(count)
        cycle = enp.floor(1 + c / total)
        x = (c - (cycle - 1) * total) / total  # PyTorch's 1 + c / total - cycle, without float32's cancellation
        scale = enp.where(x <= ratio, x / ratio, (x - 1) / (ratio - 1))
        if mode == "triangular":
            amp = 1.0
        elif mode == "triangular2":
            amp = 1 / (2.0 ** (cycle - 1))
        else:
            amp = gamma**c
        return base_lr + (max_lr - base_lr) * scale * amp

    return schedule


def piecewise_constant(init_value: float, boundaries_and_scales: Mapping[int, float] | None = None) -> Schedule:
    """``init_value`` times the scale of every boundary the count has reached (optax's).

    Args:
      init_value: the value before the first boundary.
      boundaries_and_scales: ``{step: scale}``; from ``step`` on, the value is multiplied by ``scale``.

    >>> from ember import optim
    >>> [float(optim.piecewise_constant(1.0, {2: 0.5, 3: 0.5})(c)) for c in range(5)]
    [1.0, 1.0, 0.5, 0.25, 0.25]
    """
    items = sorted((int(b), float(s)) for b, s in (boundaries_and_scales or {}).items())

    def schedule(count: Any) -> Any:
        count = enp.asarray(count)
        value = enp.full(enp.shape(count), init_value, dtype=_float(count).dtype)
        for boundary, s in items:
            value = enp.where(count < boundary, value, value * s)
        return value

    return schedule


def join(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """One schedule after another: from ``boundaries[i]`` on, ``schedules[i + 1](count - boundaries[i])``.

    ``torch.optim.lr_scheduler.SequentialLR`` (its ``milestones`` are the boundaries) and optax's
    ``join_schedules``.

    Args:
      schedules: the schedules, in order.
      boundaries: ``len(schedules) - 1`` increasing steps at which the next schedule starts.

    >>> from ember import optim
    >>> s = optim.join([optim.constant(1.0), optim.exponential(0.5, gamma=0.5)], boundaries=[2])
    >>> [float(s(c)) for c in range(5)]
    [1.0, 1.0, 0.5, 0.25, 0.125]
    """
    if len(boundaries) != len(schedules) - 1:
        raise InvalidArgumentError(f"optim.join: {len(schedules)} schedules need {len(schedules) - 1} boundaries, "
                                   f"got {len(boundaries)}")
    if list(boundaries) != sorted(boundaries):
        raise InvalidArgumentError(f"optim.join: the boundaries must increase, got {list(boundaries)}")

    def schedule(count: Any) -> Any:
        count = enp.asarray(count)
        value = schedules[0](count)
        for boundary, s in zip(boundaries, schedules[1:]):
            value = enp.where(count < boundary, value, s(count - boundary))
        return value

    return schedule


class ReduceOnPlateauState(NamedTuple):
    """``reduce_on_plateau``'s state: PyTorch's ``best``, ``num_bad_epochs``, ``cooldown_counter``, and the scale."""

    best: Any
    num_bad_epochs: Any
    cooldown_counter: Any
    scale: Any
    count: Any


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, threshold: float = 1e-4,
                      threshold_mode: str = "rel", cooldown: int = 0, min_lr: float = 0.0, mode: str = "min",
                      eps: float = 1e-8) -> GradientTransformation:  # fmt: skip
    """Scale the updates down by ``factor`` when the loss stops improving (``ReduceLROnPlateau``).

    Each ``update(updates, state, params, value=loss)`` is one ``scheduler.step(loss)`` of PyTorch's: the
    same decisions (best, bad steps, patience, cooldown), applied to a scale that starts at 1 and
    multiplies the updates. Chain it after an optimizer: ``chain(sgd(learning_rate=lr),
    reduce_on_plateau())`` steps with learning rate ``lr * scale``. The scale is for the update it is
    given with (PyTorch reduces the learning rate of the next step): pass last step's loss, or read
    ``state.scale`` after the call.

    Args:
      factor: the factor of each reduction (< 1).
      patience: bad steps tolerated before a reduction.
      threshold: the least change that counts as an improvement.
      threshold_mode: ``'rel'`` (relative to the best) or ``'abs'``.
      cooldown: steps after a reduction during which bad steps are not counted.
      min_lr: the lowest scale (PyTorch's ``min_lr`` divided by the optimizer's learning rate).
      mode: ``'min'`` (a loss) or ``'max'`` (an accuracy).
      eps: a reduction smaller than this is skipped.

    >>> import ember.numpy as enp
    >>> from ember import optim
    >>> opt = optim.reduce_on_plateau(factor=0.5, patience=1)
    >>> state = opt.init(enp.zeros(1))
    >>> for loss in [1.0, 2.0, 2.0, 2.0]:
    ...     updates, state = opt.update(enp.ones(1), state, value=loss)
    >>> float(state.scale), updates.tolist()
    (0.5, [0.5])
    """
    if mode not in ("min", "max"):
        raise InvalidArgumentError(f"optim.reduce_on_plateau: mode must be 'min' or 'max', got {mode!r}")
    if threshold_mode not in ("rel", "abs"):
        raise InvalidArgumentError(f"optim.reduce_on_plateau: threshold_mode must be 'rel' or 'abs', "
                                   f"got {threshold_mode!r}")
    if not factor < 1.0:
        raise InvalidArgumentError(f"optim.reduce_on_plateau: factor must be < 1, got {factor!r}")

    def is_better(a: Any, best: Any) -> Any:
        if mode == "min":
            return a < best * (1.0 - threshold) if threshold_mode == "rel" else a < best - threshold
        return a > best * (threshold + 1.0) if threshold_mode == "rel" else a > best + threshold

    def init(params: Any) -> ReduceOnPlateauState:
        worse = math.inf if mode == "min" else -math.inf
        zero = enp.zeros((), dtype=enp.int32)
        return ReduceOnPlateauState(enp.full((), worse, dtype=enp.ones(()).dtype), zero, zero, enp.ones(()), zero)

    def update(updates: Any, state: ReduceOnPlateauState, params: Any = None, *, value: Any = None,
               **extra_args: Any) -> tuple[Any, ReduceOnPlateauState]:  # fmt: skip
        if value is None:
            raise InvalidArgumentError("optim.reduce_on_plateau: the update needs the loss: "
                                       "opt.update(grads, state, params, value=loss)")
        value = enp.asarray(value).astype(state.best.dtype)
        better = is_better(value, state.best)
        best = enp.where(better, value, state.best)
        bad = enp.where(better, 0, state.num_bad_epochs + 1)
        in_cooldown = state.cooldown_counter > 0
        cooldown_counter = enp.where(in_cooldown, state.cooldown_counter - 1, state.cooldown_counter)
        bad = enp.where(in_cooldown, 0, bad)
        reduce = bad > patience
        new_scale = enp.maximum(state.scale * factor, min_lr)
        scale = enp.where(reduce & (state.scale - new_scale > eps), new_scale, state.scale)
        cooldown_counter = enp.where(reduce, cooldown, cooldown_counter)
        bad = enp.where(reduce, 0, bad)
        new_state = ReduceOnPlateauState(best, bad.astype(enp.int32), cooldown_counter.astype(enp.int32), scale,
                                         state.count + 1)
        scaled = tree_map(lambda u: (u * scale).astype(enp.asarray(u).dtype), updates)
        return scaled, new_state

    return GradientTransformation(init, update)

