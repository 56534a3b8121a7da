"""Per-example gradient norms and clipped gradients for DP-SGD, by ghost norms where the program allows.

The per-example loss is traced once on one example (`ember.make_ir`); `_uses` reads from the program
which parameter leaves enter only through matrix products, convolution kernels and row lookups. The
program is then re-run under ``vmap(grad(...))`` with a zero *probe* added to each such use's output:
the probe's gradient is the use's output cotangent ``D``, and the use's other operand ``X`` is returned
alongside, so each example's norm follows from ``X`` and ``D`` (`_norms`) without forming that leaf's
per-example gradient. Other leaves (biases, normalisation scales, weights used inside a ``scan``) get
their per-example gradients materialised, which for those leaves is what ``vmap(grad)`` does.

`clipped_grad` reuses that same pass: with the weights ``w_i = min(1, max_norm / norm_i)``, a ghost
leaf's clipped sum ``Σ_i w_i X_iᵀ D_i`` is its uses' weight gradient with each example's cotangent
scaled by ``w_i``, contracted over the batch in one product (no per-example gradient formed); the
leaves whose per-example gradients were formed are summed with the weights. One forward and one
backward pass in all — the same result as a second backward pass of ``Σ_i w_i loss_i``, without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import ember.numpy as enp
from ember._traceback import api_boundary
from ember.core.array import Array, wrap
from ember.core.ir import Literal, Program
from ember.core.pytree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.lax import stop_gradient
from ember.privacy._norms import batch_grad, direct_grad, factors, gram_sq
from ember.privacy._uses import LeafPlan, analyse
from ember.transforms.autodiff import grad
from ember.transforms.jit import ClosedProgram, make_ir
from ember.transforms.vmap import vmap

__all__ = ["clipped_grad", "per_example_norms"]


class PerExampleNorms:
    """``per_example_norms(loss)``: call it as ``(params, batch)``; `explain` says how each leaf is done."""

    def __init__(self, loss: Callable[..., Any], op: str = "per_example_norms"):
        self.loss = loss
        self._op = op
        self.__name__ = f"{op}({getattr(loss, '__name__', type(loss).__name__)})"

    @api_boundary
    def __call__(self, params: Any, batch: Sequence[Any]) -> Array:
        batch = _check_batch(self._op, batch)
        closed, plans = self._analyse(params, batch)
        return _norms(closed, plans, params, batch)[0]

    @api_boundary
    def explain(self, params: Any, batch: Sequence[Any]) -> str:
        """One line per parameter leaf: ghost (which uses, T, Gram or direct) or fallback, and why."""
        batch = _check_batch(self._op, batch)
        closed, plans = self._analyse(params, batch)
        paths = [keystr(path) or "params" for path, _ in tree_flatten_with_path(params)[0]]
        shapes = [leaf.aval.shape for leaf in closed.program.invars]
        return "\n".join(f"{path}: {_describe(shape, plan)}" for path, shape, plan in zip(paths, shapes, plans))

    def _analyse(self, params: Any, batch: tuple[Array, ...]) -> tuple[ClosedProgram, list[LeafPlan]]:
        for path, leaf in tree_flatten_with_path(params)[0]:
            dtype = np.dtype(getattr(leaf, "dtype", None) or enp.asarray(leaf).dtype)
            if not enp.issubdtype(dtype, enp.floating):
                raise DTypeError(f"{self._op}: cannot differentiate with respect to params{keystr(path)} of shape "
                                 f"{tuple(np.shape(leaf))} and dtype {dtype}; parameters must be real floating point "
                                 "(keep other arrays out of params: close over them in the loss)")  # fmt: skip
        rows = [wrap(np.broadcast_to(np.zeros((), x.dtype), x.shape[1:]), x.weak_type) for x in batch]
        closed = make_ir(self.loss)(params, *rows)
        out = closed.out_avals
        if len(out) != 1 or out[0].shape != ():
            got = ", ".join(a.str_short() for a in out) or "nothing"
            raise ShapeError(f"{self._op}: the loss must return one real scalar per example, got {got}; reduce it "
                             "(e.g. .sum() or .mean()) over one example's outputs")  # fmt: skip
        if not enp.issubdtype(out[0].dtype, enp.floating):
            raise DTypeError(f"{self._op}: the loss must return a real floating-point scalar, got "
                             f"{out[0].str_short()}; cast it, e.g. loss(...).astype('float32')")  # fmt: skip
        return closed, analyse(closed.program, len(tree_flatten(params)[0]))


def per_example_norms(loss: Callable[..., Any]) -> PerExampleNorms:
    """The L2 norm of each example's gradient, over all of the parameters together.

    Parameters used only through matrix products (``nn.Linear``), convolution kernels (``nn.Conv*``)
    and row lookups (``nn.Embedding``) — even several times, as with tied weights — get their norms by
    the ghost-norm identity ``||XᵀD||² = <X Xᵀ, D Dᵀ>`` (or by forming ``XᵀD`` when that is cheaper:
    per layer, Gram when ``T (d_in + d_out) <= d_in d_out`` for ``T`` positions); others (biases,
    normalisation scales, weights inside a ``scan``) by their materialised per-example gradients.
    ``per_example_norms(loss).explain(params, batch)`` says which, leaf by leaf. Works under
    `ember.jit`.

    Args:
        loss: ``loss(params, *example) -> scalar``, the loss of one example; ``params`` any pytree.

    Returns:
        a function ``(params, batch) -> norms`` with ``batch`` a tuple of arrays batched along axis 0
        (one per argument of ``example``) and ``norms`` of shape ``(batch_size,)``.

    >>> def loss(w, x, y):  # grad: (w·x - y) x
    ...     return 0.5 * (enp.dot(w, x) - y) ** 2
    >>> w, x, y = enp.array([1.0, 2.0]), enp.array([[3.0, 0.0], [0.0, 1.0]]), enp.array([0.0, 0.0])
    >>> ember.privacy.per_example_norms(loss)(w, (x, y))  # |3| * 3 and |2| * 1
    Array([9., 2.], dtype=float32)
    >>> print(ember.privacy.per_example_norms(loss).explain(w, (x, y)))
    params: ghost (dot_general T=1; Gram <X Xᵀ, D Dᵀ> = ||x||² ||d||²)
    """
    return PerExampleNorms(loss)


class ClippedGrad:
    """``clipped_grad(loss, max_norm)``: call it as ``(params, batch)``."""

    def __init__(self, loss: Callable[..., Any], max_norm: Any, return_norms: bool):
        self.loss, self.max_norm, self.return_norms = loss, _check_max_norm(max_norm), return_norms
        self._norms = PerExampleNorms(loss, "clipped_grad")
        self.__name__ = f"clipped_grad({getattr(loss, '__name__', type(loss).__name__)})"

    @api_boundary
    def __call__(self, params: Any, batch: Sequence[Any]) -> Any:
        batch = _check_batch("clipped_grad", batch)
        closed, plans = self._norms._analyse(params, batch)
        norms, parts = _norms(closed, plans, params, batch, parts=True)
        safe = enp.where(norms > 0, norms, 1)
        weights = stop_gradient(enp.where(norms > self.max_norm, self.max_norm / safe, 1).astype(norms.dtype))
        grads = _clipped_sum(closed, plans, params, weights, parts)
        return (grads, norms) if self.return_norms else grads

    @api_boundary
    def explain(self, params: Any, batch: Sequence[Any]) -> str:
        """How the norms are computed, leaf by leaf (see ``per_example_norms(loss).explain``)."""
        return self._norms.explain(params, batch)


def clipped_grad(loss: Callable[..., Any], max_norm: float, *, return_norms: bool = False) -> ClippedGrad:
    """The sum over a batch of each example's gradient clipped to norm `max_norm` (DP-SGD's clipping).

    ``Σ_i grad_i * min(1, max_norm / ||grad_i||)`` (an example with a zero gradient counts with weight 1),
    computed without forming the per-example gradients of the ghost leaves (see `per_example_norms`):
    the pass that gives the norms also gives each ghost use's activations ``X`` and cotangents ``D``,
    and the leaf's clipped sum is ``Σ_i w_i X_iᵀ D_i``, one product over the batch. One forward and one
    backward pass in all. The weights are constants (not differentiated). Add the noise and divide
    by the batch size (or the expected batch size) to get DP-SGD's update. Works under `ember.jit`.

    Args:
        loss: ``loss(params, *example) -> scalar``, the loss of one example.
        max_norm: the clipping bound, > 0 (``float('inf')`` sums the unclipped gradients).
        return_norms: also return the per-example norms before clipping (one call, no extra work).

    Returns:
        a function ``(params, batch) -> grads`` (``(grads, norms)`` with `return_norms`), ``grads``
        shaped like ``params`` and ``batch`` a tuple of arrays batched along axis 0.

    >>> def loss(w, x, y):  # grad: (w·x - y) x
    ...     return 0.5 * (enp.dot(w, x) - y) ** 2
    >>> w, x, y = enp.array([1.0, 2.0]), enp.array([[3.0, 0.0], [0.0, 1.0]]), enp.array([0.0, 0.0])
    >>> g, norms = ember.privacy.clipped_grad(loss, 3.0, return_norms=True)(w, (x, y))
    >>> g, norms  # [9, 0] scaled by 3/9, plus [0, 2] as it is
    (Array([3., 2.], dtype=float32), Array([9., 2.], dtype=float32))
    """
    return ClippedGrad(loss, max_norm, return_norms)


# --- checks ----------------------------------------------------------------------------------------


def _check_batch(op: str, batch: Any) -> tuple[Array, ...]:
    if not isinstance(batch, (tuple, list)):
        shape = getattr(batch, "shape", None)
        got = type(batch).__name__ + ("" if shape is None else f" of shape {tuple(shape)}")
        raise InvalidArgumentError(f"{op}: batch must be a tuple of arrays batched along axis 0 (one per argument "
                                   f"of the loss after params), got {got}; pass (x,) for one array")  # fmt: skip
    if not batch:
        raise InvalidArgumentError(f"{op}: batch is an empty tuple; pass one array per argument of the loss "
                                   "after params")  # fmt: skip
    arrays = tuple(enp.asarray(x) for x in batch)
    shapes = ", ".join(f"batch[{i}]: {x.dtype}{list(x.shape)}" for i, x in enumerate(arrays))
    if any(x.ndim == 0 for x in arrays):
        raise ShapeError(f"{op}: every array of the batch needs a leading batch axis, got {shapes}")
    if len({x.shape[0] for x in arrays}) > 1:
        raise ShapeError(f"{op}: the arrays of the batch have different batch sizes (axis 0): {shapes}; "
                         "each must hold one row per example")  # fmt: skip
    if arrays[0].shape[0] == 0:
        raise ShapeError(f"{op}: the batch is empty ({shapes}); per-example norms need at least one example")
    return arrays


def _check_max_norm(max_norm: Any) -> Any:
    if isinstance(max_norm, Array):
        if max_norm.shape != () or max_norm.dtype.kind != "f":
            raise ShapeError(f"clipped_grad: max_norm must be a real scalar, got "
                             f"{max_norm.dtype}{list(max_norm.shape)}")  # fmt: skip
        return max_norm
    try:
        value = float(max_norm)
    except (TypeError, ValueError):
        raise DTypeError(f"clipped_grad: max_norm must be a positive number, got {max_norm!r}") from None
    if not value > 0:
        raise InvalidArgumentError(f"clipped_grad: max_norm must be > 0, got {value}; it bounds each example's "
                                   "gradient norm (float('inf') for no clipping)")  # fmt: skip
    return value


# --- the instrumented program ----------------------------------------------------------------------


class _Parts(NamedTuple):
    """What the clipped sum needs beyond the norms, each batched along axis 0: the per-example gradients
    of the leaves that have them (fallback and direct leaves, by leaf index), and the activations and
    output cotangents of the Gram leaves' uses (by equation index)."""

    grads: dict[int, Array]
    activations: dict[int, Array]
    cotangents: dict[int, Array]


def _norms(closed: ClosedProgram, plans: list[LeafPlan], params: Any, batch: tuple[Array, ...],
           parts: bool = False) -> tuple[Array, _Parts | None]:  # fmt: skip
    """Each example's gradient norm (and, with `parts`, what `_clipped_sum` needs), from one batched
    forward and backward pass of the instrumented program."""
    program = closed.program
    leaves = [enp.asarray(x) for x in tree_flatten(params)[0]]
    fallback = [i for i, p in enumerate(plans) if p.mode == "fallback"]
    ghost = [(i, p) for i, p in enumerate(plans) if p.mode in ("gram", "direct")]
    probed = {u.eqn: u for _, p in ghost for u in p.uses}
    dtype = program.outvars[0].aval.dtype

    def one_example(fixed: list[Array], diff: list[Array], example: list[Array]) -> tuple[Array, _Parts | None]:
        probes = {k: enp.zeros(program.eqns[k].outvars[0].aval.shape, program.eqns[k].outvars[0].aval.dtype)
                  for k in probed}  # fmt: skip

        def instrumented(diff: list[Array], probes: dict[int, Array]) -> tuple[Array, dict[int, Array]]:
            values = list(fixed)
            for i, x in zip(fallback, diff):
                values[i] = x
            return _run(program, closed.consts, [*values, *example], probes, probed)

        (g_fallback, cotangents), activations = grad(instrumented, argnums=(0, 1), has_aux=True)(diff, probes)
        grads = dict(zip(fallback, g_fallback))
        total = enp.zeros((), dtype)
        for i, plan in ghost:
            if plan.mode == "gram":
                for group in sorted({u.group for u in plan.uses}):
                    pairs = [factors(u, program.eqns[u.eqn], activations[u.eqn], cotangents[u.eqn])
                             for u in plan.uses if u.group == group]  # fmt: skip
                    total = total + gram_sq(pairs, dtype)
            else:
                grads[i] = direct_grad(program.eqns, fixed[i], plan.uses, activations, cotangents)
        for g in grads.values():
            total = total + enp.sum(g * g).astype(dtype)
        if not parts:
            return total, None
        gram_uses = {u.eqn for _, p in ghost if p.mode == "gram" for u in p.uses}
        return total, _Parts(grads, {k: activations[k] for k in gram_uses}, {k: cotangents[k] for k in gram_uses})

    diff = [leaves[i] for i in fallback]
    squares, rest = vmap(one_example, in_axes=(None, None, 0))(leaves, diff, list(batch))
    return enp.sqrt(enp.maximum(squares, 0)), rest


def _clipped_sum(closed: ClosedProgram, plans: list[LeafPlan], params: Any, weights: Array, parts: _Parts) -> Any:
    """``Σ_i w_i grad_i`` leaf by leaf: a weighted sum of the per-example gradients where they were formed,
    else the uses' weight gradients with each example's cotangent scaled by its weight, contracted over
    the batch in one product (nothing per example is formed)."""
    leaves, tree = tree_flatten(params)
    out = []
    for i, (leaf, plan) in enumerate(zip(leaves, plans)):
        leaf = enp.asarray(leaf)
        if i in parts.grads:
            g = parts.grads[i]
            out.append(enp.tensordot(weights.astype(g.dtype), g, axes=1))
        else:
            out.append(batch_grad(closed.program.eqns, leaf, plan.uses, parts.activations, parts.cotangents, weights))
    return tree_unflatten(tree, out)


def _run(program: Program, consts: Sequence[Any], args: Sequence[Any], probes: dict[int, Array],
         probed: dict) -> tuple[Array, dict[int, Array]]:  # fmt: skip
    """`program` evaluated by binding each primitive (as ``ir.eval_program``), with ``probes[k]`` added
    to equation k's output and that equation's activation operand returned."""
    env: dict[Any, Any] = dict(zip(program.constvars, consts, strict=True))
    env.update(zip(program.invars, args, strict=True))
    activations = {}
    for k, eqn in enumerate(program.eqns):
        ins = [v.array if type(v) is Literal else env[v] for v in eqn.inputs]
        out = eqn.primitive.bind(*ins, **eqn.params)
        if k in probes:
            activations[k] = ins[probed[k].other]
            out = out + probes[k]
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, out, strict=True))
        else:
            env[eqn.outvars[0]] = out
    (out,) = [v.array if type(v) is Literal else env[v] for v in program.outvars]
    return out, activations


def _describe(shape: tuple[int, ...], plan: LeafPlan) -> str:
    if plan.mode == "fallback":
        return f"fallback, per-example gradient materialised ({plan.reason})"
    uses = ", ".join(f"{u.kind} T={u.T}" + (" transposed" if u.swapped else "") for u in plan.uses)
    groups = len({u.group for u in plan.uses})
    if groups > 1:
        uses += f" on {groups} disjoint slices"
    if plan.mode == "gram":
        if len(plan.uses) == 1 and plan.uses[0].T == 1:
            how = "Gram <X Xᵀ, D Dᵀ> = ||x||² ||d||²"
        else:
            how = "Gram <X Xᵀ, D Dᵀ>"
    else:
        size = "x".join(map(str, shape)) or "scalar"
        how = f"direct ||Σ Xᵀ D||², {size} per example" + (f"; {plan.reason}" if plan.reason else "")
    return f"ghost ({uses}; {how})"
