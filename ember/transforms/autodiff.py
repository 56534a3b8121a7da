"""The public autodiff transforms: jvp, linearize, vjp, grad, value_and_grad, linear_transpose.

They work on pytrees of arrays (anything `ember.tree` flattens); Python scalars
and NumPy arrays are accepted where arrays are. Complex numbers follow JAX's
convention: `grad` of a real-valued function of complex inputs returns the
conjugate of the usual gradient, ``conj(df/dz)`` (so that ``x - lr * grad`` is
gradient descent when the real and imaginary parts are seen as two reals); for
complex-valued (holomorphic) functions pass ``holomorphic=True`` and get
``df/dz``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember._traceback import api_boundary
from ember.core import dtypes
from ember.core.abstract import ShapedArray
from ember.core.ad import Zero, zeros
from ember.core.array import Array, from_host, wrap
from ember.core.primitives.elementwise import convert_element_type_p
from ember.core.primitive import new_trace
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.core.staging import StagingTrace
from ember.core.transfer import _put
from ember.errors import ArgumentTypeError, DTypeError, ShapeError
from ember.transforms._args import as_leaf_array
from ember.transforms.jvp import jvp_flat
from ember.transforms.linearize import Linearized, backward_pass, linearize_flat

__all__ = ["grad", "jvp", "linear_transpose", "linearize", "value_and_grad", "vjp"]


def _as_arrays(leaves: Sequence[Any], op: str) -> list[Array]:
    return [x if isinstance(x, Array) else as_leaf_array(x, op) for x in leaves]


def _flat_fn(fn: Callable, in_tree, op: str, has_aux: bool = False):
    """`fn` as a function of flat arrays returning flat arrays; the output structure lands in `store`."""
    store: dict[str, Any] = {}

    def flat(*leaves):
        out = fn(*tree_unflatten(in_tree, leaves))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise ArgumentTypeError(f"{op}(..., has_aux=True): the function must return a pair (output, aux), got {type(out).__name__}")
            out, aux = out
            # Array leaves of aux flow out of the transform (undifferentiated); other leaves
            # (strings, ints, ...) are kept as they are.
            leaves, store["aux_tree"] = tree_flatten(aux)
            store["aux_leaves"] = leaves
            aux_leaves = [x for x in leaves if isinstance(x, Array)]
            store["n_aux"] = len(aux_leaves)
        else:
            aux_leaves = []
        out_leaves, store["out_tree"] = tree_flatten(out)
        return [*_as_arrays(out_leaves, op), *aux_leaves]

    return flat, store


def _rebuild_aux(store: dict[str, Any], arrays: Sequence[Any]) -> Any:
    flowed = iter(arrays)
    leaves = [next(flowed) if isinstance(x, Array) else x for x in store["aux_leaves"]]
    return tree_unflatten(store["aux_tree"], leaves)


def _zeros_of(aval: ShapedArray) -> Any:
    # Integer and bool values have float0 tangents/cotangents (as in JAX): a NumPy array of that dtype.
    if not dtypes.is_inexact(aval.dtype):
        return np.zeros(aval.shape, dtypes.float0)
    return zeros(aval)


def _instantiate(t: Any) -> Any:
    return _zeros_of(t.aval) if type(t) is Zero else t


def _check_tangent(op: str, what: str, primal: Array, tangent: Any) -> Any:
    if not dtypes.is_inexact(primal.dtype):
        return Zero(primal.aval)  # integer inputs have float0 tangents; whatever came, it is zero
    t = tangent if isinstance(tangent, Array) else from_host(tangent, op)
    if t.shape != primal.shape or t.dtype != primal.dtype:
        raise ShapeError(
            f"{op}: {what} has shape {t.shape} and dtype {t.dtype}, but its primal has shape {primal.shape} and dtype "
            f"{primal.dtype}; tangents must match their primals exactly"
        )
    if t.weak_type != primal.aval.weak_type:  # as JAX's tangent avals: the primal's weak type
        t = convert_element_type_p.bind(t, new_dtype=t.dtype, weak_type=primal.aval.weak_type)
    return t


# --- forward mode ------------------------------------------------------------------------------


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """Evaluate `fun` at `primals` and its directional derivative along `tangents`.

    Args:
      fun: a function of arrays (pytrees of arrays) returning arrays.
      primals, tangents: tuples (or lists) of its positional arguments and of tangents of the same
        structure, shapes and dtypes.
      has_aux: `fun` returns (output, aux); aux is returned undifferentiated.

    Returns:
      ``(primals_out, tangents_out)``, plus ``aux`` when `has_aux`.

    >>> ember.jvp(enp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ArgumentTypeError(f"jvp: primals and tangents must be tuples or lists of arguments, got {type(primals).__name__} "
                                f"and {type(tangents).__name__}; write jvp(f, (x,), (t,)) for one argument")  # fmt: skip
    if len(primals) != len(tangents):
        raise ArgumentTypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    flat_primals, in_tree = tree_flatten(tuple(primals))
    flat_tangents, tangent_tree = tree_flatten(tuple(tangents))
    if tangent_tree != in_tree:
        raise ArgumentTypeError(f"jvp: the tangents' structure {tangent_tree} differs from the primals' {in_tree}")
    flat_primals = _as_arrays(flat_primals, "jvp")
    flat_tangents = [_check_tangent("jvp", f"tangent {i}", p, t) for i, (p, t) in enumerate(zip(flat_primals, flat_tangents))]
    flat, store = _flat_fn(lambda *args: fun(*args), in_tree, "jvp", has_aux)
    outs, out_tangents = jvp_flat(flat, flat_primals, flat_tangents)
    n_aux = store.get("n_aux", 0)
    n_out = len(outs) - n_aux
    primal_out = tree_unflatten(store["out_tree"], outs[:n_out])
    tangent_out = tree_unflatten(store["out_tree"], [_instantiate(t) for t in out_tangents[:n_out]])
    if has_aux:
        return primal_out, tangent_out, _rebuild_aux(store, outs[n_out:])
    return primal_out, tangent_out


def linearize(fun: Callable, *primals: Any, has_aux: bool = False):
    """Evaluate `fun` at `primals` and return its linear approximation there as a function.

    Returns ``(primal_out, f_jvp)`` (plus ``aux``); ``f_jvp(*tangents)`` equals ``jvp(fun, primals,
    tangents)[1]`` but reuses the residuals instead of re-running `fun`.

    >>> y, f_jvp = ember.linearize(enp.sin, 0.0)
    >>> f_jvp(2.0)
    Array(2., dtype=float32, weak_type=True)
    """
    outs, aux, lin, store, in_tree = _linearize(fun, primals, "linearize", has_aux)

    @api_boundary
    def f_jvp(*tangents):
        flat_tangents, tree = tree_flatten(tuple(tangents))
        if tree != in_tree:
            raise ArgumentTypeError(f"linearize: f_jvp takes tangents shaped like the primals ({in_tree}), got {tree}")
        flat_tangents = [_check_tangent("linearize", f"tangent {i}", _aval_array(a), t)
                         for i, (a, t) in enumerate(zip(lin.in_avals, flat_tangents))]  # fmt: skip
        return tree_unflatten(store["out_tree"], [_instantiate(t) for t in lin.jvp(flat_tangents)])

    primal_out = tree_unflatten(store["out_tree"], outs)
    return (primal_out, f_jvp, _rebuild_aux(store, aux)) if has_aux else (primal_out, f_jvp)


class _aval_array:
    """Just enough of an Array (shape, dtype, aval) to check a tangent against an abstract value."""

    def __init__(self, aval: ShapedArray):
        self.aval, self.shape, self.dtype = aval, aval.shape, aval.dtype


def _linearize(fun: Callable, primals: Sequence[Any], op: str, has_aux: bool):
    flat_primals, in_tree = tree_flatten(tuple(primals))
    flat_primals = _as_arrays(flat_primals, op)
    flat, store = _flat_fn(lambda *args: fun(*args), in_tree, op, has_aux)
    outs, aux, lin = linearize_flat(flat, flat_primals, lambda: store.get("n_aux", 0))
    store["primals"] = flat_primals
    return outs, aux, lin, store, in_tree


# --- reverse mode ------------------------------------------------------------------------------


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """Evaluate `fun` at `primals` and return the function that pulls cotangents back.

    Returns ``(primal_out, f_vjp)`` (plus ``aux``); ``f_vjp(ct)`` takes a cotangent shaped like
    the output and returns a tuple with one cotangent per primal.

    >>> y, f_vjp = ember.vjp(enp.sin, 0.0)
    >>> f_vjp(1.0)
    (Array(1., dtype=float32, weak_type=True),)
    """
    outs, aux, lin, store, in_tree = _linearize(fun, primals, "vjp", has_aux)
    out_tree = store["out_tree"]

    @api_boundary
    def f_vjp(ct):
        return _pull_back("vjp", lin, out_tree, in_tree, ct, free_residuals=False, primals=store["primals"])

    primal_out = tree_unflatten(out_tree, outs)
    return (primal_out, f_vjp, _rebuild_aux(store, aux)) if has_aux else (primal_out, f_vjp)


def _pull_back(op: str, lin: Linearized, out_tree, in_tree, ct: Any, free_residuals: bool, primals: Sequence[Any]):
    flat_cts, ct_tree = tree_flatten(ct)
    if ct_tree != out_tree:
        raise ArgumentTypeError(f"{op}: the cotangent's structure {ct_tree} differs from the output's {out_tree}")
    checked = []
    for i, (aval, c) in enumerate(zip(lin.out_avals, flat_cts)):
        if not dtypes.is_inexact(aval.dtype):
            checked.append(Zero(aval))
            continue
        c = c if isinstance(c, Array) else from_host(c, op)
        if c.shape != aval.shape or c.dtype != aval.dtype:
            raise ShapeError(f"{op}: cotangent {i} has shape {c.shape} and dtype {c.dtype}, but the output has shape "
                             f"{aval.shape} and dtype {aval.dtype}; pass a cotangent like the output")  # fmt: skip
        checked.append(c)
    cts_in = lin.transpose(checked, free_residuals=free_residuals)
    return tree_unflatten(in_tree, [_where_primal_is(_instantiate(c), x) for c, x in zip(cts_in, primals, strict=True)])


def _where_primal_is(ct: Any, primal: Any) -> Any:
    # A cotangent lives where its primal does: one made from constants alone (a zero, a linear map's
    # coefficient) joins its primal's device instead of staying on the default one, committed when the
    # primal is. A cotangent committed to a device (the user's) stays there: never a silent copy.
    if type(ct) is Array and type(primal) is Array and not ct._place.committed and ct._place is not primal._place:
        return _put(ct, primal._place)
    return ct


def _argnums(op: str, argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise ArgumentTypeError(
                f"{op}: argnums={argnums!r} refers to a positional argument that does not exist: the function was "
                f"called with {nargs} positional argument(s)"
            )
    return tuple(n % nargs for n in nums)


def _check_inputs(op: str, leaves: Sequence[Array], holomorphic: bool, allow_int: bool) -> None:
    for x in leaves:
        if holomorphic:
            if not dtypes.is_complex(x.dtype):
                raise DTypeError(f"{op}(holomorphic=True): inputs must be complex, got an input of shape {x.shape} and dtype "
                                 f"{x.dtype}; convert it with .astype('complex64')")  # fmt: skip
        elif not dtypes.is_inexact(x.dtype) and not allow_int:
            raise DTypeError(f"{op}: cannot differentiate with respect to an input of shape {x.shape} and dtype {x.dtype}; "
                             "inputs must be floating point (pass allow_int=True to get float0 zeros for integer inputs)")  # fmt: skip


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False) -> Callable:  # fmt: skip
    """A function returning both `fun`'s value and its gradient with respect to `argnums`.

    `fun` must return a real scalar (a complex one with ``holomorphic=True``). With ``has_aux``,
    `fun` returns ``(value, aux)`` and the result is ``((value, aux), grad)``.

    >>> ember.value_and_grad(lambda x: (x ** 2).sum())(enp.asarray([1.0, 2.0]))
    (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
    """
    return _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "value_and_grad")


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, op: str) -> Callable:
    def wrapped(*args, **kwargs):
        nums = _argnums(op, argnums, len(args))
        diff_args = tuple(args[n] for n in nums)

        def partial(*diff):
            full = list(args)
            for n, d in zip(nums, diff):
                full[n] = d
            return fun(*full, **kwargs)

        _check_inputs(op, _as_arrays(tree_flatten(diff_args)[0], op), holomorphic, allow_int)
        outs, aux, lin, store, in_tree = _linearize(partial, diff_args, op, has_aux)
        if len(outs) != 1 or store["out_tree"].num_leaves != 1 or outs[0].shape != ():
            got = f"an output of shape {outs[0].shape}" if len(outs) == 1 else f"{len(outs)} outputs of shapes {[o.shape for o in outs]}"
            raise ArgumentTypeError(f"{op}: the function must return a scalar (shape ()), got {got}; reduce it (e.g. "
                                    ".sum()) or use ember.vjp / ember.jacrev for non-scalar outputs")  # fmt: skip
        out = outs[0]
        if holomorphic and not dtypes.is_complex(out.dtype):
            raise DTypeError(f"{op}(holomorphic=True): the output must be complex, got shape () and dtype {out.dtype}")
        if not holomorphic and not dtypes.is_floating(out.dtype):
            raise DTypeError(f"{op}: the function must return a real floating-point scalar, got shape () and dtype "
                             f"{out.dtype}" + ("; pass holomorphic=True for complex outputs" if dtypes.is_complex(out.dtype) else ""))  # fmt: skip
        one = wrap(np.ones((), out.dtype), out.weak_type)  # JAX's seed, ones_like(out): weak when out is
        grads = _pull_back(op, lin, store["out_tree"], in_tree, one, free_residuals=True, primals=store["primals"])
        grads = grads[0] if isinstance(argnums, int) else grads
        value = tree_unflatten(store["out_tree"], outs)
        return ((value, _rebuild_aux(store, aux)), grads) if has_aux else (value, grads)

    return _name_like(wrapped, fun, op)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False) -> Callable:  # fmt: skip
    """The gradient of the scalar-valued `fun` with respect to its `argnums` argument(s).

    Args:
      fun: returns a real scalar (complex with ``holomorphic=True``), or ``(scalar, aux)`` with ``has_aux``.
      argnums: an int (the gradient has that argument's structure) or a tuple of ints (a tuple of gradients).
      has_aux: `fun` returns ``(value, aux)``; the result is then ``(grad, aux)``.
      holomorphic: differentiate a complex function of complex inputs.
      allow_int: integer and bool inputs get float0 zeros instead of raising.

    >>> ember.grad(lambda x: (x ** 2).sum())(enp.asarray([1.0, 2.0]))
    Array([2., 4.], dtype=float32)
    """
    value_and_grad_fun = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, "grad")

    def wrapped(*args, **kwargs):
        if has_aux:
            (_, aux), g = value_and_grad_fun(*args, **kwargs)
            return g, aux
        return value_and_grad_fun(*args, **kwargs)[1]

    return _name_like(wrapped, fun, "grad")


def _name_like(wrapped: Callable, fun: Callable, transform: str) -> Callable:
    """`wrapped` as the public function a transform returns: a traceback boundary named after `fun`."""
    wrapped = api_boundary(wrapped)
    name = getattr(fun, "__name__", type(fun).__name__)
    wrapped.__name__ = f"{transform}({name})"
    wrapped.__qualname__ = wrapped.__name__
    wrapped.__doc__ = getattr(fun, "__doc__", None)
    wrapped.__wrapped__ = fun
    return wrapped


def linear_transpose(fun: Callable, *primals: Any) -> Callable:
    """The transpose of the linear function `fun`, whose inputs are shaped like `primals`.

    ``linear_transpose(f, x)(ct)`` returns a tuple with one cotangent per primal such that
    ``<ct, f(t)> == <result, t>`` for every t.

    >>> f_t = ember.linear_transpose(lambda x: 2.0 * x, enp.ones(3))
    >>> f_t(enp.ones(3))
    (Array([2., 2., 2.], dtype=float32),)
    """
    flat_primals, in_tree = tree_flatten(tuple(primals))
    flat_primals = _as_arrays(flat_primals, "linear_transpose")
    for x in flat_primals:
        if not dtypes.is_inexact(x.dtype):
            raise DTypeError(f"linear_transpose: inputs must be floating or complex, got shape {x.shape} and dtype {x.dtype}")
    flat, store = _flat_fn(lambda *args: fun(*args), in_tree, "linear_transpose")
    with new_trace(StagingTrace) as staging:
        outs = flat(*[staging.new_arg(x.aval) for x in flat_primals])
        program, consts = staging.build(outs)
    out_avals = [v.aval for v in program.outvars]
    out_tree = store["out_tree"]

    @api_boundary
    def transposed(ct):
        flat_cts, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise ArgumentTypeError(f"linear_transpose: the cotangent's structure {ct_tree} differs from the output's {out_tree}")
        flat_cts = _as_arrays(flat_cts, "linear_transpose")
        for i, (aval, c) in enumerate(zip(out_avals, flat_cts)):
            if c.shape != aval.shape or c.dtype != aval.dtype:
                raise ShapeError(f"linear_transpose: cotangent {i} has shape {c.shape} and dtype {c.dtype}; the output has "
                                 f"shape {aval.shape} and dtype {aval.dtype}")  # fmt: skip
        cts = backward_pass(program, list(consts), flat_cts)
        return tree_unflatten(in_tree, [_instantiate(c) for c in cts])

    return transposed
