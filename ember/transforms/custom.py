"""Custom differentiation rules: `custom_jvp` and `custom_vjp`, with JAX's semantics.

A decorated function is a higher-order call: `custom_jvp_call` / `custom_vjp_call` (core/primitive.py)
hand it, flattened to lists of Arrays, to the innermost trace owning an argument. Transforms that do
not differentiate (eager evaluation, staging) just run the function; the JVP trace
(transforms/jvp.py) uses the rule instead:

- custom_jvp: the user's jvp rule runs on the primals and tangents (symbolic zeros instantiated, as
  in JAX). Reverse mode transposes the tangent computation that the rule emitted, so the rule must
  be linear in the tangents, as every JVP is.
- custom_vjp: `fwd` runs on the primals, and the output tangents are `custom_lin` applied to the
  input tangents: a linear primitive whose operands are the residuals and the tangents and whose
  transpose calls `bwd`. `linearize` stages it and the backward pass transposes it. Evaluating it on
  concrete tangents (forward mode, or the `f_jvp` of `ember.linearize`) raises `TransformError`:
  a custom_vjp function has no forward-mode derivative.

Higher derivatives differentiate the rules themselves (the jvp rule; fwd and bwd), as in JAX.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._traceback import api_boundary
from ember.core import dtypes
from ember.core.abstract import ShapedArray
from ember.core.ad import Zero, instantiate, zeros
from ember.core.array import Array, from_host
from ember.core.primitive import Primitive, custom_jvp_call, custom_vjp_call
from ember.core.pytree import tree_flatten, tree_map, tree_unflatten
from ember.errors import ArgumentTypeError, TransformError
from ember.transforms._args import as_leaf_array

__all__ = ["custom_jvp", "custom_lin", "custom_lin_p", "custom_vjp"]

_FORWARD_MODE = (
    "can't apply forward-mode autodiff (jvp) to a custom_vjp function ({name}): it defines only a reverse-mode rule. "
    "Use ember.grad / ember.vjp, or define its derivative with ember.custom_jvp, which serves both modes"
)


# --- calling conventions shared by both decorators -------------------------------------------------


def _signature(fun: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _resolve(signature: inspect.Signature | None, args: tuple, kwargs: dict, name: str) -> tuple:
    """`args` and `kwargs` as positional arguments, defaults filled in (as JAX does)."""
    if signature is None:
        if kwargs:
            raise ArgumentTypeError(f"{name}: keyword arguments need a function with an inspectable signature")
        return args
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as err:
        raise ArgumentTypeError(f"{name}: {err}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise ArgumentTypeError(f"{name}: keyword-only arguments {sorted(bound.kwargs)} cannot be resolved to positions; "
                                "custom_jvp/custom_vjp functions take positional arguments")  # fmt: skip
    return bound.args


def _split(args: tuple, nondiff_argnums: tuple[int, ...], name: str) -> tuple[list, tuple]:
    for i in nondiff_argnums:
        if not -len(args) <= i < len(args):
            raise ArgumentTypeError(f"{name}: nondiff_argnums={nondiff_argnums} refers to argument {i}, but the function "
                                    f"was called with {len(args)} positional argument(s)")  # fmt: skip
    static = sorted({i % len(args) for i in nondiff_argnums})
    return [args[i] for i in nondiff_argnums], tuple(a for i, a in enumerate(args) if i not in static)


def _merge(args: tuple, nondiff_argnums: tuple[int, ...], diff: Sequence) -> tuple:
    """The full argument tuple: `args` at the nondiff positions, `diff` (in order) elsewhere."""
    static = {i % len(args) for i in nondiff_argnums}
    it = iter(diff)
    return tuple(a if i in static else next(it) for i, a in enumerate(args))


def _arrays(leaves: Sequence[Any], name: str, what: str) -> list[Array]:
    try:
        return [x if isinstance(x, Array) else as_leaf_array(x, name) for x in leaves]
    except TypeError as err:
        raise ArgumentTypeError(f"{name}: {what} must be arrays (or pytrees of arrays): {err}") from None


def _user_tangent(t: Any, aval: ShapedArray) -> Any:
    """What a rule sees for a tangent: symbolic zeros become zeros (float0 ones for integer inputs)."""
    if not dtypes.is_inexact(aval.dtype):
        return np.zeros(aval.shape, dtypes.float0)
    return zeros(aval) if type(t) is Zero else t


def _rule_tangent(t: Any, aval: ShapedArray, name: str, where: str) -> Any:
    """A tangent (or cotangent) a user's rule returned, checked against its primal's abstract value."""
    if t is None or type(t) is Zero or not dtypes.is_inexact(aval.dtype):
        return Zero(aval)
    if not isinstance(t, Array):
        t = from_host(np.asarray(t, dtype=aval.dtype), name)
    if t.shape != aval.shape or t.dtype != aval.dtype:
        raise TransformError(f"{name}: {where} has shape {t.shape} and dtype {t.dtype}, but its primal has shape "
                             f"{aval.shape} and dtype {aval.dtype}; they must match exactly")  # fmt: skip
    return t


def _named(fn: Callable, name: str) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    return fn


class _Decorated:
    """What both decorators share: the wrapped function, its name and its static arguments."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(int(i) for i in nondiff_argnums)
        self._name = getattr(fun, "__name__", type(fun).__name__)
        self._signature = _signature(fun)

    def _prepare(self, args: tuple, kwargs: dict):
        args = _resolve(self._signature, args, kwargs, self._name)
        nondiff, diff = _split(args, self.nondiff_argnums, self._name)
        leaves, in_tree = tree_flatten(diff)
        leaves = _arrays(leaves, self._name, "the arguments not in nondiff_argnums")
        store: dict[str, Any] = {}

        def flat_fun(*xs):
            out = self.fun(*_merge(args, self.nondiff_argnums, tree_unflatten(in_tree, xs)))
            out_leaves, store["out_tree"] = tree_flatten(out)
            return _arrays(out_leaves, self._name, "outputs")

        return args, nondiff, diff, leaves, in_tree, store, _named(flat_fun, self._name)


# --- custom_jvp ------------------------------------------------------------------------------------


class custom_jvp(_Decorated):
    """A function with a custom JVP rule, used by every differentiation transform (forward and reverse).

    Decorate the function, then define its rule with `defjvp` (or `defjvps`). Without differentiation
    the function runs as written; under `jvp`/`grad` the rule replaces differentiating its body.
    Arguments in `nondiff_argnums` are static (Python values, callables): they are passed first to the
    rule and get no tangent.

    >>> @ember.custom_jvp
    ... def log1pexp(x):
    ...     return enp.log1p(enp.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t * (1 - 1 / (1 + enp.exp(x)))
    >>> ember.grad(log1pexp)(100.0)
    Array(1., dtype=float32, weak_type=True)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None
        self._symbolic_zeros: set[int] = set()

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``.

        `primals` and `tangents` are tuples of the differentiable arguments (pytrees allowed); the
        tangents of integer arguments are float0 zeros. Returns `jvp`, so it works as a decorator.

        >>> f = ember.custom_jvp(lambda x: enp.sin(x))
        >>> _ = f.defjvp(lambda primals, tangents: (f(*primals), enp.cos(primals[0]) * tangents[0]))
        """
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """Set the rule from one function per argument: ``jvp_i(t_i, primal_out, *primals)`` is the
        contribution of argument i's tangent (None: that argument does not change the output).

        >>> f = ember.custom_jvp(lambda x, y: enp.sin(x) * y)
        >>> f.defjvps(lambda tx, ans, x, y: enp.cos(x) * tx * y, lambda ty, ans, x, y: enp.sin(x) * ty)
        """
        if self.nondiff_argnums:
            raise ArgumentTypeError(f"{self._name}: defjvps cannot be used with nondiff_argnums; use defjvp")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            total = None
            symbolic = self._symbolic_zeros  # ids of the tangents that stand for symbolic zeros
            for rule, t in zip(jvps, tangents, strict=False):
                if rule is None or all(id(leaf) in symbolic for leaf in tree_flatten(t)[0]):
                    continue  # a zero tangent contributes nothing (and meets no infinite slope)
                part = rule(t, primal_out, *primals)
                total = part if total is None else tree_map(lambda a, b: a + b, total, part)
            if total is None:
                total = tree_map(lambda p: zeros(p.aval) if isinstance(p, Array) else 0.0 * p, primal_out)
                symbolic.update(id(leaf) for leaf in tree_flatten(total)[0])
            return primal_out, total

        self.defjvp(jvp)

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self._name
        if self.jvp is None:
            raise TransformError(f"custom_jvp function {name} has no jvp rule; define one with {name}.defjvp(...)")
        _, nondiff, _, leaves, in_tree, store, flat_fun = self._prepare(args, kwargs)

        def flat_jvp(primals: list, tangents: list) -> tuple[list, list]:
            user_tangents = [_user_tangent(t, p.aval) for t, p in zip(tangents, primals)]
            # Rules see zeros, but defjvps's rules skip those that were symbolic and hand back symbolic zeros.
            outer, self._symbolic_zeros = self._symbolic_zeros, {id(u) for u, t in zip(user_tangents, tangents) if type(t) is Zero}
            try:
                out = self.jvp(*nondiff, tree_unflatten(in_tree, primals), tree_unflatten(in_tree, user_tangents))
                symbolic = self._symbolic_zeros
            finally:
                self._symbolic_zeros = outer
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TransformError(f"{name}: the custom jvp rule must return a pair (primal_out, tangent_out), "
                                     f"got {type(out).__name__}")  # fmt: skip
            p_leaves, p_tree = tree_flatten(out[0])
            t_leaves, t_tree = tree_flatten(out[1])
            if p_tree != t_tree:
                raise TransformError(f"{name}: the custom jvp rule's primal output has structure {p_tree} but its "
                                     f"tangent output has structure {t_tree}; they must match")  # fmt: skip
            store["out_tree"] = p_tree
            p_leaves = _arrays(p_leaves, name, "the jvp rule's primal outputs")
            t_leaves = [Zero(p.aval) if id(t) in symbolic else _rule_tangent(t, p.aval, name, f"tangent output {i} of the jvp rule")
                        for i, (t, p) in enumerate(zip(t_leaves, p_leaves))]  # fmt: skip
            return p_leaves, t_leaves

        outs = custom_jvp_call(flat_fun, _named(flat_jvp, name), leaves)
        return tree_unflatten(store["out_tree"], outs)


# --- custom_vjp ------------------------------------------------------------------------------------


class custom_vjp(_Decorated):
    """A function with a custom VJP rule, used by reverse-mode differentiation (`grad`, `vjp`).

    Define the rule with ``defvjp(fwd, bwd)``. Without differentiation the function runs as written.
    Forward mode (`jvp`) is not available for it: that raises `ember.errors.TransformError`.
    Arguments in `nondiff_argnums` are static: `fwd` gets all arguments, `bwd` gets them first.

    >>> @ember.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (enp.clip(g, -1.0, 1.0),))
    >>> ember.grad(lambda x: 5.0 * clip_gradient(x))(2.0)
    Array(1., dtype=float32, weak_type=True)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the rule: ``fwd(*args) -> (out, residuals)`` (same arguments as the function; residuals
        any pytree) and ``bwd(*nondiff_args, residuals, ct_out) -> ct_args``, a tuple with one
        cotangent (pytree, or None for zero) per differentiable argument.

        >>> f = ember.custom_vjp(enp.sin)
        >>> f.defvjp(lambda x: (enp.sin(x), enp.cos(x)), lambda cos_x, g: (cos_x * g,))
        """
        self.fwd, self.bwd = fwd, bwd

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self._name
        if self.fwd is None:
            raise TransformError(f"custom_vjp function {name} has no vjp rule; define one with {name}.defvjp(fwd, bwd)")
        full_args, nondiff, diff, leaves, in_tree, store, flat_fun = self._prepare(args, kwargs)
        # flat_bwd lives on in the linearized program: it keeps structures and avals, not traced values.
        arg_trees = [tree_flatten(a)[1] for a in diff]
        in_avals = [x.aval for x in leaves]

        def flat_fwd(*primals: Array) -> tuple[list, list]:
            out = self.fwd(*_merge(full_args, self.nondiff_argnums, tree_unflatten(in_tree, primals)))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TransformError(f"{name}: fwd must return a pair (output, residuals), got {type(out).__name__}")
            out_leaves, store["out_tree"] = tree_flatten(out[0])
            res_leaves, store["res_tree"] = tree_flatten(out[1])
            # Arrays among the residuals are operands (transforms see them); other leaves stay as they are.
            store["res_static"] = [None if isinstance(r, Array) else r for r in res_leaves]
            store["res_is_array"] = [isinstance(r, Array) for r in res_leaves]
            out_leaves = _arrays(out_leaves, name, "fwd's outputs")
            store["out_avals"] = [o.aval for o in out_leaves]
            return out_leaves, [r for r in res_leaves if isinstance(r, Array)]

        def flat_bwd(res: Sequence[Array], cts: Sequence[Any]) -> list:
            it = iter(res)
            res_leaves = [next(it) if a else r for r, a in zip(store["res_static"], store["res_is_array"])]
            cts = [_user_tangent(Zero(a) if c is None else c, a) for c, a in zip(cts, store["out_avals"])]
            ct_in = self.bwd(
                *nondiff, tree_unflatten(store["res_tree"], res_leaves), tree_unflatten(store["out_tree"], cts)
            )
            return _input_cotangents(ct_in, arg_trees, in_avals, name)

        def out_trees() -> tuple:
            return store["out_tree"], store["res_tree"]

        outs = custom_vjp_call(flat_fun, _named(flat_fwd, name), _named(flat_bwd, name), leaves, out_trees)
        return tree_unflatten(store["out_tree"], outs)


def _input_cotangents(ct_in: Any, arg_trees: list, in_avals: list[ShapedArray], name: str) -> list:
    """bwd's result as one cotangent (or Zero) per flat input, checked against the inputs."""
    if not isinstance(ct_in, (tuple, list)) or len(ct_in) != len(arg_trees):
        got = (
            f"a {type(ct_in).__name__} of length {len(ct_in)}"
            if isinstance(ct_in, (tuple, list))
            else type(ct_in).__name__
        )
        raise TransformError(f"{name}: bwd must return a tuple with one cotangent per differentiable argument "
                             f"({len(arg_trees)}), got {got}")  # fmt: skip
    flat: list[Any] = []
    for i, (ct, tree) in enumerate(zip(ct_in, arg_trees)):
        if ct is None:
            flat.extend([None] * tree.num_leaves)
            continue
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != tree:
            raise TransformError(f"{name}: bwd's cotangent for argument {i} has structure {ct_tree}, but the argument "
                                 f"has structure {tree}")  # fmt: skip
        flat.extend(ct_leaves)
    return [_rule_tangent(c, a, name, f"bwd's cotangent {i}") for i, (c, a) in enumerate(zip(flat, in_avals))]


# --- custom_lin: the linear primitive standing for a custom_vjp function's derivative ---------------


class _LinearOnlyPrimitive(Primitive):
    """A primitive that only exists inside linearized programs: evaluating it is forward mode."""

    __slots__ = ()

    def eager(self, args: Sequence[Array], params: dict[str, Any]):
        raise TransformError(_FORWARD_MODE.format(name=params["name"]))


custom_lin_p = _LinearOnlyPrimitive("custom_lin", multiple_results=True)
custom_lin_p.abstract_eval = lambda *avals, out_avals, **params: list(out_avals)


def custom_lin(res: Sequence[Array], tangents: Sequence[Any], bwd: Callable, outs: Sequence[Array]) -> list:
    """The output tangents of a custom_vjp call with residuals `res`: `custom_lin_p` applied to the
    nonzero input `tangents` (Zero where an output is integer or nothing flows in).

    JVPTrace.process_custom_vjp_call calls it: ``custom_lin(res, tangents, bwd, outs)``.
    """
    which = tuple(i for i, t in enumerate(tangents) if type(t) is not Zero)
    lin_out = tuple(i for i, o in enumerate(outs) if dtypes.is_inexact(o.dtype))
    result: list[Any] = [Zero(o.aval) for o in outs]
    if not which or not lin_out:
        return result
    ys = custom_lin_p.bind(*res, *[tangents[i] for i in which], num_res=len(res), bwd=bwd, which=which,
                           lin_out=lin_out, n_out=len(outs), out_avals=tuple(outs[i].aval for i in lin_out),
                           name=bwd.__name__)  # fmt: skip
    for i, y in zip(lin_out, ys):
        result[i] = y
    return result


def _custom_lin_transpose(cts, *args, num_res, bwd, which, lin_out, n_out, out_avals, name):
    full: list[Any] = [None] * n_out
    for i, ct in zip(lin_out, cts):
        full[i] = instantiate(ct)
    ct_in = bwd(list(args[:num_res]), full)
    return [None] * num_res + [ct_in[i] for i in which]


def _custom_lin_jvp(primals, tangents, *, num_res, **params):
    # Linear in the tangent operands, but nothing is known about how it depends on the residuals.
    if any(type(t) is not Zero for t in tangents[:num_res]):
        raise TransformError(_FORWARD_MODE.format(name=params["name"]))
    out = custom_lin_p.bind(*primals, num_res=num_res, **params)
    t_out = custom_lin_p.bind(
        *primals[:num_res], *[instantiate(t) for t in tangents[num_res:]], num_res=num_res, **params
    )
    return out, t_out


custom_lin_p.transpose = _custom_lin_transpose
custom_lin_p.jvp = _custom_lin_jvp


# --- batching: custom_lin under vmap ------------------------------------------------------------
# The batched primitive is custom_lin again, with outputs batched along a new first axis and a bwd
# that runs the original one on the whole batch (ember.transforms.vmap.batched_bwd). It is an axis
# rule (it gets the batching trace, also when no operand is mapped) so that bwd runs on that vmap's
# axis again: a bwd that closes over its batched values or uses collectives over it keeps working in
# the backward pass.

from ember.core.batching import axis_rules
from ember.transforms.vmap import batched_bwd, detached_trace


def _batch_custom_lin(trace, args, dims, *, num_res, bwd, which, lin_out, n_out, out_avals, name):
    size = trace.axis_size
    res_dims = list(dims[:num_res])
    # Input i's cotangent takes the layout of its tangent operand (summed where that is unmapped).
    targets: list[Any] = [None] * (max(which) + 1)
    for k, i in enumerate(which):
        targets[i] = (dims[num_res + k], args[num_res + k].aval)
    ct_dims = [0] * n_out

    def bwd_batched(res: Sequence[Array], cts: Sequence[Any]) -> list:
        return batched_bwd(bwd, trace, res, res_dims, cts, ct_dims, targets)

    avals = tuple(ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in out_avals)
    outs = custom_lin_p.bind(*args, num_res=num_res, bwd=_named(bwd_batched, name), which=which, lin_out=lin_out,
                             n_out=n_out, out_avals=avals, name=name)  # fmt: skip
    return outs, [0] * len(outs)


custom_lin_p.batch = lambda size, args, dims, **params: _batch_custom_lin(detached_trace(size), args, dims, **params)
axis_rules[custom_lin_p] = _batch_custom_lin
