"""Rematerialization: `checkpoint` (alias `remat`) trades compute for memory in reverse mode.

Linearizing a function keeps, as residuals, every intermediate value its tangent computation needs,
until the backward pass has used them. A checkpointed function keeps only its inputs: under the JVP
trace its output tangents are one linear primitive, `remat_lin`, whose operands are the function's
primal inputs and their tangents and whose parameters hold the function. `linearize` stages that
equation (its residuals are the inputs), and its transpose re-runs ``vjp(fun, *inputs)`` in the
backward pass, so the block's intermediates live only while the block is being transposed.

Evaluated on concrete tangents (forward mode, `f_jvp` of `ember.linearize`), `remat_lin` is the jvp of
the function; differentiated further, it is differentiated through (no rematerialization at that
order). Transforms that do not differentiate run the function as written.

The mechanism is the custom_jvp call of core/primitive.py: a checkpointed function is a function
whose jvp rule is "the primal output, plus remat_lin of the tangents".
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any

from ember._traceback import api_boundary
from ember.core import dtypes
from ember.core.ad import Zero, instantiate
from ember.core.array import Array
from ember.core.primitive import Primitive, custom_jvp_call
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.errors import ArgumentTypeError, InvalidArgumentError
from ember.transforms._args import as_leaf_array
from ember.transforms.jvp import jvp_flat
from ember.transforms.linearize import linearize_flat

__all__ = ["checkpoint", "checkpoint_policies", "remat", "remat_lin_p"]


# --- policies: which intermediates may be saved ----------------------------------------------------


def nothing_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Save no intermediate of a checkpointed function: recompute them all (the default).

    >>> f = ember.checkpoint(enp.sin, policy=ember.checkpoint_policies.nothing_saveable)
    >>> ember.grad(f)(0.0).item()  # cos(0)
    1.0
    """
    return False


def everything_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Save every intermediate: no rematerialization (the function behaves as if not checkpointed).

    >>> f = ember.checkpoint(enp.sin, policy=ember.checkpoint_policies.everything_saveable)
    >>> ember.grad(f)(0.0).item()  # cos(0)
    1.0
    """
    return True


checkpoint_policies = types.SimpleNamespace(nothing_saveable=nothing_saveable, everything_saveable=everything_saveable)


# --- remat_lin: the linear primitive standing for a checkpointed function's derivative ---------------


class _RematPrimitive(Primitive):
    """Evaluated eagerly, `remat_lin` runs the function's jvp (it is not a backend kernel)."""

    __slots__ = ()

    def eager(self, args: Sequence[Array], params: dict[str, Any]) -> list[Array]:
        return _remat_lin_impl(*args, **params)


remat_lin_p = _RematPrimitive("remat_lin", multiple_results=True)
remat_lin_p.abstract_eval = lambda *avals, out_avals, **params: list(out_avals)


def _remat_lin_impl(*args: Any, fun: Callable, n_in: int, which: tuple, lin_out: tuple, out_avals: tuple, name: str):
    primals = list(args[:n_in])
    tangents: list[Any] = [Zero(p.aval) for p in primals]
    for i, t in zip(which, args[n_in:]):
        tangents[i] = t
    _, t_out = jvp_flat(fun, primals, tangents)
    return [instantiate(t_out[i]) for i in lin_out]


def _remat_lin_jvp(primals, tangents, **params):
    # A second derivative: differentiate the first one (the function's jvp) as written.
    return jvp_flat(lambda *args: _remat_lin_impl(*args, **params), primals, tangents)


def _remat_lin_transpose(cts, *args, fun, n_in, which, lin_out, out_avals, name):
    # The backward pass of the block: recompute its residuals from the saved inputs, then transpose.
    outs, _, lin = linearize_flat(fun, list(args[:n_in]))
    full: list[Any] = [Zero(o.aval) for o in outs]
    for i, ct in zip(lin_out, cts):
        full[i] = ct
    ct_in = lin.transpose(full, free_residuals=True)
    return [None] * n_in + [ct_in[i] for i in which]


remat_lin_p.jvp = _remat_lin_jvp
remat_lin_p.transpose = _remat_lin_transpose


def _remat_rule(fun: Callable, name: str) -> Callable:
    """The jvp rule of checkpointed `fun` (flat): primal outputs as usual, tangents by remat_lin."""

    def rule(primals: list, tangents: list) -> tuple[list, list]:
        outs = custom_jvp_call(fun, rule, primals)  # outer differentiation levels remat too
        which = tuple(i for i, t in enumerate(tangents) if type(t) is not Zero)
        lin_out = tuple(i for i, o in enumerate(outs) if dtypes.is_inexact(o.dtype))
        t_out: list[Any] = [Zero(o.aval) for o in outs]
        if which and lin_out:
            ys = remat_lin_p.bind(*primals, *[tangents[i] for i in which], fun=fun, n_in=len(primals), which=which,
                                  lin_out=lin_out, out_avals=tuple(outs[i].aval for i in lin_out), name=name)  # fmt: skip
            for i, y in zip(lin_out, ys):
                t_out[i] = y
        return outs, t_out

    return rule


# --- checkpoint ------------------------------------------------------------------------------------


def checkpoint(fun: Callable, policy: Callable | None = None, prevent_cse: bool = True,
               static_argnums: int | Sequence[int] = ()) -> Callable:  # fmt: skip
    """`fun`, made to recompute its intermediates in the backward pass instead of saving them.

    Under `grad`/`vjp` only the inputs of a checkpointed call are kept until the backward pass, which
    re-runs the call to get its intermediates: less memory for one more forward computation.
    Values and derivatives are unchanged; without differentiation `fun` simply runs.

    Args:
      fun: a function of arrays (pytrees of arrays).
      policy: None or ``checkpoint_policies.nothing_saveable`` (save nothing but the inputs), or
        ``checkpoint_policies.everything_saveable`` (save everything: no rematerialization).
      prevent_cse: accepted for JAX compatibility (ember does not eliminate common subexpressions
        across a checkpoint boundary).
      static_argnums: positional arguments that are static Python values rather than arrays.

    Returns:
      A function with `fun`'s signature.

    >>> block = ember.checkpoint(lambda w, x: enp.tanh(w @ enp.tanh(w @ x)))
    >>> ember.grad(lambda w, x: block(w, x).sum())(enp.eye(2), enp.ones(2)).shape
    (2, 2)
    """
    if policy is everything_saveable:
        return fun
    if policy is not None and policy is not nothing_saveable:
        raise InvalidArgumentError(f"checkpoint: policy={policy!r} is not supported; use None, "
                                   "ember.checkpoint_policies.nothing_saveable or everything_saveable")  # fmt: skip
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    name = getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    @api_boundary
    def remat_fun(*args: Any, **kwargs: Any) -> Any:
        fixed = {i % len(args) for i in static if -len(args) <= i < len(args)}
        if len(fixed) != len(static):
            raise ArgumentTypeError(f"checkpoint: static_argnums={static_argnums} refers to an argument that does not "
                                    f"exist: {name} was called with {len(args)} positional argument(s)")  # fmt: skip
        leaves, in_tree = tree_flatten(([a for i, a in enumerate(args) if i not in fixed], kwargs))
        leaves = [x if isinstance(x, Array) else as_leaf_array(x, "checkpoint") for x in leaves]
        # flat_fun lives on in the linearized program: it must not hold the (traced) arguments.
        statics, n_args = {i: args[i] for i in fixed}, len(args)
        store: dict[str, Any] = {}

        def flat_fun(*xs: Array) -> list[Array]:
            dynamic, kw = tree_unflatten(in_tree, xs)
            it = iter(dynamic)
            out = fun(*[statics[i] if i in statics else next(it) for i in range(n_args)], **kw)
            out_leaves, store["out_tree"] = tree_flatten(out)
            return [x if isinstance(x, Array) else as_leaf_array(x, "checkpoint", "an output leaf") for x in out_leaves]

        flat_fun.__name__ = flat_fun.__qualname__ = name
        outs = custom_jvp_call(flat_fun, _remat_rule(flat_fun, name), leaves)
        return tree_unflatten(store["out_tree"], outs)

    return remat_fun


remat = checkpoint


# --- batching: remat_lin under vmap --------------------------------------------------------------
# The batched primitive is remat_lin again, of the function vectorized (ember.transforms.vmap.batch_flat:
# every output with its batch axis first), so that the backward pass still re-runs the block, now on
# the whole batch. A tangent needs its primal's layout: a primal whose tangent alone is batched is
# broadcast, and tangents move to their primals' batch axes. It is an axis rule (it gets the batching
# trace, also when no operand is mapped) so that the re-run block runs on that vmap's axis again: a
# block closing over its batched values, or using collectives over it, keeps working in the backward
# pass.

from ember.core.abstract import ShapedArray
from ember.core.batching import axis_rules, bdim_to_front, move_axis, not_mapped
from ember.core.primitive import Tracer
from ember.transforms.vmap import BatchTracer, batch_flat, detached_trace


def _batch_remat_lin(trace, args, dims, *, fun, n_in, which, lin_out, out_avals, name):
    size = trace.axis_size
    primals, tangents = list(args[:n_in]), list(args[n_in:])
    pdims, tdims = list(dims[:n_in]), list(dims[n_in:])
    for k, i in enumerate(which):
        if pdims[i] is not_mapped and tdims[k] is not not_mapped:
            primals[i], pdims[i] = bdim_to_front(primals[i], not_mapped, size), 0
    for k, i in enumerate(which):
        if pdims[i] is not_mapped:
            continue
        if tdims[k] is not_mapped:
            tangents[k] = move_axis(bdim_to_front(tangents[k], not_mapped, size), 0, pdims[i])
        else:
            tangents[k] = move_axis(tangents[k], tdims[k], pdims[i])
    batched = batch_flat(fun, trace, pdims)
    avals = tuple(ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in out_avals)
    outs = remat_lin_p.bind(*primals, *tangents, fun=batched, n_in=n_in, which=which, lin_out=lin_out, out_avals=avals,
                            name=name)  # fmt: skip
    return outs, [0] * len(outs)


def _remat_lin_axis_rule(trace, args, dims, **params):
    if not any(isinstance(x, Tracer) for x in args):
        # Evaluated right away (forward mode), so nothing is saved or re-run: the block's jvp, run on
        # this trace's own values (which a block closing over batched values needs).
        lifted = [BatchTracer(trace, x, d) for x, d in zip(args, dims)]
        outs = [trace.full_raise(o) for o in _remat_lin_impl(*lifted, **params)]
        return [o.val for o in outs], [o.bdim for o in outs]
    return _batch_remat_lin(trace, args, dims, **params)


remat_lin_p.batch = lambda size, args, dims, **params: _batch_remat_lin(detached_trace(size), args, dims, **params)
axis_rules[remat_lin_p] = _remat_lin_axis_rule
