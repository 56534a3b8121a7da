"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map`, as in JAX.

Each construct stages its functions into closed programs (what they close over becomes operands of
the equation) and binds one higher-order primitive: `cond` (_cond.py), `while` (_while.py) or
`scan` (_scan.py). Those primitives work eagerly, under jit (generated code runs their programs
compiled), under jvp/grad (cond, scan and - unlike JAX - while_loop are reverse-differentiable) and
under vmap (a batched predicate makes a select, or a masked loop).

Operands, carries, `xs` and `ys` are pytrees. Branch outputs must agree in structure, shape and
dtype; a loop's carry must keep the structure, shapes and dtypes of its initial value. Weak types
join as in JAX: a carry that starts weakly typed (a Python scalar) takes the dtype the body gives
it, and an output is weak only where every branch (or both the initial value and the body) is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.array import Array, from_host
from ember.core.primitive import Tracer
from ember.core.primitives.bitwise import ne_p
from ember.core.primitives.elementwise import clamp_p, convert_element_type_p
from ember.core.pytree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ember.errors import ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError
from ember.lax._cond import cond_p
from ember.lax._scan import scan_p
from ember.lax._structural import concatenate
from ember.lax._while import while_p
from ember.transforms._args import is_array_like, not_an_array
from ember.transforms._programs import Closed, Fn, close, close_all

__all__ = ["cond", "fori_loop", "map", "scan", "switch", "while_loop"]

# --- flattening and checking ----------------------------------------------------------------------------


def _arrays(leaves: Sequence[Any], op: str, what: str) -> list[Array]:
    out = []
    for x in leaves:
        if isinstance(x, Array):
            out.append(x)
            continue
        if not is_array_like(x):
            raise not_an_array(x, op, f"a leaf of {what}")
        try:
            out.append(from_host(x, op))
        except Exception as err:
            raise ArgumentTypeError(f"{op}: {what} must be arrays (or pytrees of arrays), got {type(x).__name__}") from err
    return out


def _paths(tree: Any, prefix: str) -> list[str]:
    """`prefix` plus each leaf's key path, like ``output[1]['w']``."""
    example = tree_unflatten(tree, [0] * tree.num_leaves)
    return [f"{prefix}{keystr(p)}" for p, _ in tree_flatten_with_path(example)[0]]


def _show(aval: ShapedArray) -> str:
    return describe(aval)


def _flat_fun(fun: Callable, in_tree: Any, store: dict, op: str, what: str) -> Callable:
    """`fun` of a pytree, as a function of flat Arrays returning flat Arrays; its output structure
    goes to ``store["tree"]``."""

    def flat(*leaves: Any) -> list[Array]:
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        out_leaves, store["tree"] = tree_flatten(out)
        return _arrays(out_leaves, op, f"the outputs of {what}")

    return flat


def _strong(x: Array, aval: ShapedArray) -> Array:
    """`x` as `aval` says (the same values; a weak type dropped, or a weak dtype promoted)."""
    if x.aval == aval:
        return x
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _mismatch(op: str, what: str, path: str, a: ShapedArray, b: ShapedArray, name_a: str, name_b: str) -> Exception:
    cls = DTypeError if a.dtype != b.dtype else ShapeError
    return cls(f"{op}: {what}, but {path} is {_show(a)} {name_a} and {_show(b)} {name_b}")


# --- cond and switch ------------------------------------------------------------------------------------


def _scalar_index(x: Any, op: str, what: str) -> Array:
    if isinstance(x, (list, tuple)):
        raise ShapeError(f"{op}: {what} must be a scalar, got a {type(x).__name__}")
    x = x if isinstance(x, Array) else from_host(x, op)
    if x.shape != ():
        raise ShapeError(f"{op}: {what} must be a scalar (shape ()), got {_show(x.aval)}; under vmap a batched "
                         f"{what} is fine, but a non-scalar one is not (reduce it, e.g. with .any() or .all())")  # fmt: skip
    return x


def _int32(x: Array) -> Array:
    return convert_element_type_p.bind(x, new_dtype=np.dtype(np.int32), weak_type=False)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` if `pred` else ``false_fun(*operands)``, as a staged choice.

    Unlike a Python ``if``, `pred` may be a traced value (inside `jit`, or batched inside `vmap`,
    where every example takes its own branch). Both branches are traced; their outputs must have the
    same pytree structure, shapes and dtypes.

    Args:
      pred: a scalar bool (or integer: nonzero is true).
      true_fun, false_fun: functions of `operands` returning pytrees of arrays.
      *operands: pytrees of arrays passed to the branch taken.

    Returns:
      The output of the branch taken.

    >>> lax.cond(enp.asarray(2.0) > 1.0, lambda x: x * 2.0, lambda x: x - 1.0, enp.asarray(3.0))
    Array(6., dtype=float32, weak_type=True)
    """
    p = _scalar_index(pred, "lax.cond", "pred")
    if p.dtype != np.bool_:
        if not dtypes.is_integer(p.dtype):
            raise DTypeError(f"lax.cond: pred must be a boolean (or integer) scalar, got {_show(p.aval)}; compare it "
                             "first, e.g. lax.cond(x > 0, ...)")  # fmt: skip
        p = ne_p.bind(p, from_host(np.zeros((), p.dtype), "lax.cond"))
    return _switch("lax.cond", _int32(p), (false_fun, true_fun), ("false_fun", "true_fun"), operands)


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)``, with `index` clamped to ``[0, len(branches) - 1]`` (as JAX).

    Args:
      index: an integer scalar (traced values allowed, batched ones too).
      branches: functions of `operands` whose outputs have identical structure, shapes and dtypes.
      *operands: pytrees of arrays passed to the branch taken.

    Returns:
      The output of the branch taken.

    >>> lax.switch(1, [lambda x: x + 1.0, lambda x: x * 10.0], enp.asarray(2.0))
    Array(20., dtype=float32, weak_type=True)
    """
    branches = tuple(branches)
    if not branches:
        raise InvalidArgumentError("lax.switch: branches is empty; give at least one function")
    if not all(callable(b) for b in branches):
        raise ArgumentTypeError("lax.switch: every branch must be a function")
    i = _scalar_index(index, "lax.switch", "index")
    if not dtypes.is_integer(i.dtype):
        raise DTypeError(f"lax.switch: index must be an integer scalar, got {_show(i.aval)}")
    if len(branches) == 1:
        return branches[0](*operands)
    i = _int32(i)
    lo, hi = from_host(np.int32(0), "lax.switch"), from_host(np.int32(len(branches) - 1), "lax.switch")
    i = clamp_p.bind(lo, i, hi)
    names = tuple(f"branch {k}" for k in range(len(branches)))
    return _switch("lax.switch", i, branches, names, operands)


def _switch(op: str, index: Array, funs: Sequence[Callable], names: Sequence[str], operands: tuple) -> Any:
    leaves, in_tree = tree_flatten(operands)
    args = _arrays(leaves, op, "operands")
    avals = [a.aval for a in args]
    stores: list[dict] = [{} for _ in funs]
    closed = [close(_flat_fun(f, in_tree, s, op, n), avals, op) for f, s, n in zip(funs, stores, names)]
    out_tree = stores[0]["tree"]
    out_avals = [[v.aval for v in c.program.outvars[:]] for c in closed]
    for k in range(1, len(funs)):
        if stores[k]["tree"] != out_tree:
            raise ArgumentTypeError(f"{op}: {names[0]} and {names[k]} must return outputs of the same pytree "
                                    f"structure, but {names[0]} returns {out_tree} and {names[k]} returns "
                                    f"{stores[k]['tree']}")  # fmt: skip
    paths = _paths(out_tree, "output")
    joined = []
    for j, path in enumerate(paths):
        first = out_avals[0][j]
        for k in range(1, len(funs)):
            a = out_avals[k][j]
            if a.shape != first.shape or a.dtype != first.dtype:
                raise _mismatch(op, f"{names[0]} and {names[k]} must return outputs of identical shapes and dtypes",
                                path, first, a, f"from {names[0]}", f"from {names[k]}")  # fmt: skip
        joined.append(first.update(weak_type=all(out_avals[k][j].weak_type for k in range(len(funs)))))
    for k, c in enumerate(closed):
        if out_avals[k] != joined:
            closed[k] = close(lambda *a, c=c: [_strong(o, j) for o, j in zip(c(*a), joined)], avals, op)
    programs, consts = close_all(closed, avals, op)
    fns = tuple(Fn(p, f"{op.split('.')[-1]}_{i}") for i, p in enumerate(programs))
    outs = cond_p.bind(index, *consts, *args, branches=fns, linear=(False,) * (len(consts) + len(args)))
    return tree_unflatten(out_tree, outs)


# --- loops: carries -----------------------------------------------------------------------------------


def _carry(op: str, stage_body: Callable[[list[ShapedArray]], tuple[Closed, Any, list[ShapedArray]]],
           init: list[Array], in_tree: Any, what: str) -> tuple[Closed, list[Array]]:  # fmt: skip
    """Stage a loop body on the carry's avals, joining weak types as JAX does: a weakly typed initial
    value takes the dtype the body gives it (the body is traced again), and the carry is weak only
    where the body keeps it weak. `stage_body(avals)` returns (closed body, carry output tree,
    carry output avals). Returns the body (its carry outputs cast to the carry's types) and init."""
    paths = _paths(in_tree, "carry")
    for _ in range(3):
        avals = [x.aval for x in init]
        closed, out_tree, outs = stage_body(avals)
        if out_tree != in_tree:
            raise ArgumentTypeError(f"{op}: {what} must return a carry of the same pytree structure as the initial "
                                    f"value, {in_tree}, but it returns {out_tree}")  # fmt: skip
        target = []
        for path, a, b in zip(paths, avals, outs):
            if a.shape != b.shape:
                raise _mismatch(op, f"{what} must keep the carry's shapes and dtypes", path, a, b, "initially",
                                f"from {what}")  # fmt: skip
            if a.dtype == b.dtype:
                target.append(a.update(weak_type=a.weak_type and b.weak_type))
                continue
            dtype, weak = dtypes.promote((a.dtype, a.weak_type), (b.dtype, b.weak_type))
            if not a.weak_type or dtype != b.dtype:
                raise _mismatch(op, f"{what} must keep the carry's shapes and dtypes (convert the initial value, "
                                    "e.g. enp.asarray(init, dtype))", path, a, b, "initially", f"from {what}")  # fmt: skip
            target.append(ShapedArray(a.shape, dtype, weak and b.weak_type))
        if target == avals:
            if outs != avals:
                closed = _cast_carry(closed, avals, op)
            return closed, init
        init = [_strong(x, t) for x, t in zip(init, target)]
    raise AssertionError(f"{op}: internal error: the carry's types do not settle")


def _cast_carry(body: Closed, avals: list[ShapedArray], op: str) -> Closed:
    """`body` with its carry outputs (the first ones) cast to `avals` (dropping weak types the carry
    does not have); its other outputs untouched."""
    n = len(avals)
    in_avals = [v.aval for v in body.program.invars[len(body.consts) :]]

    def cast(*a: Any) -> list[Array]:
        outs = body(*a)
        return [*[_strong(o, t) for o, t in zip(outs[:n], avals)], *outs[n:]]

    return close(cast, in_avals, op)


# --- while_loop and fori_loop ----------------------------------------------------------------------------


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)``; return the final `val`.

    Equivalent to the Python loop, but staged: `cond_fun` may depend on traced values. Unlike JAX's,
    this loop is also reverse-differentiable (`grad`): each iteration's residuals are kept.

    Args:
      cond_fun: carry -> a boolean scalar.
      body_fun: carry -> carry (same pytree structure, shapes and dtypes).
      init_val: the initial carry (a pytree of arrays).

    Returns:
      The carry after the last iteration.

    >>> lax.while_loop(lambda x: x < 10.0, lambda x: x * 2.0, enp.asarray(1.0))
    Array(16., dtype=float32, weak_type=True)
    """
    op = "lax.while_loop"
    leaves, in_tree = tree_flatten(init_val)
    arg_tree = tree_flatten((init_val,))[1]  # the carry as the functions' one argument
    init = _arrays(leaves, op, "init_val")

    def stage_body(avals: list[ShapedArray]):
        store: dict = {}
        closed = close(_flat_fun(body_fun, arg_tree, store, op, "body_fun"), avals, op)
        return closed, store["tree"], [v.aval for v in closed.program.outvars]

    body, init = _carry(op, stage_body, init, in_tree, "body_fun")
    store: dict = {}
    cond_closed = close(_flat_fun(cond_fun, arg_tree, store, op, "cond_fun"), [x.aval for x in init], op)
    pred = [v.aval for v in cond_closed.program.outvars]
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
        got = ", ".join(_show(a) for a in pred) or "nothing"
        raise DTypeError(f"{op}: cond_fun must return a boolean scalar, but it returns {got}")
    outs = while_p.bind(*cond_closed.consts, *body.consts, *init, cond=cond_closed.fn("cond_fun"),
                        body=body.fn("body_fun"), n_cc=len(cond_closed.consts), n_bc=len(body.consts))  # fmt: skip
    return tree_unflatten(in_tree, outs)


def _static_int(x: Any) -> int | None:
    """`x` as a Python int when it is known while tracing (a Python or NumPy int, a concrete integer
    array of shape ()); None otherwise."""
    if isinstance(x, Tracer):
        return None
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (Array, np.ndarray)) and x.shape == () and np.dtype(x.dtype).kind in "iu":
        return int(np.asarray(x))
    return None


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``; return `val`.

    With bounds known while tracing (Python ints, concrete arrays) the loop is a `scan` of static
    length (reverse-differentiable, as in JAX); with traced bounds it is a `while_loop` (which ember
    can differentiate in reverse mode too).

    Args:
      lower, upper: integer scalars.
      body_fun: (i, val) -> val, with `i` an integer scalar of the bounds' dtype.
      init_val: the initial value (a pytree of arrays).
      unroll: with static bounds, the `scan`'s unroll (a positive int or a bool); ignored otherwise.

    Returns:
      The final value.

    >>> lax.fori_loop(0, 4, lambda i, x: x + i, enp.asarray(0.0))
    Array(6., dtype=float32, weak_type=True)
    """
    op = "lax.fori_loop"
    lo, hi = (_scalar_index(b, op, name) for b, name in ((lower, "lower"), (upper, "upper")))
    for b, name in ((lo, "lower"), (hi, "upper")):
        if not dtypes.is_integer(b.dtype):
            raise DTypeError(f"{op}: {name} must be an integer scalar, got {_show(b.aval)}")
    dtype, _ = dtypes.promote((lo.dtype, lo.weak_type), (hi.dtype, hi.weak_type))
    lo_i, hi_i = _static_int(lower), _static_int(upper)
    lo = convert_element_type_p.bind(lo, new_dtype=dtype, weak_type=False)
    if lo_i is not None and hi_i is not None:
        if unroll is not None and (not isinstance(unroll, (int, np.integer)) or (unroll < 1 and unroll is not False)):
            raise InvalidArgumentError(f"{op}: unroll must be a positive int or a bool, got {unroll!r}")

        def step(carry: tuple, _: Any) -> tuple:
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, val), _ = scan(step, (lo, init_val), None, length=max(hi_i - lo_i, 0), unroll=1 if unroll is None else unroll)
        return val
    hi = convert_element_type_p.bind(hi, new_dtype=dtype, weak_type=False)

    def body(carry: tuple) -> tuple:
        i, stop, val = carry
        return i + 1, stop, body_fun(i, val)

    return while_loop(lambda c: c[0] < c[1], body, (lo, hi, init_val))[2]


# --- scan and map ------------------------------------------------------------------------------------------


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1) -> tuple[Any, Any]:  # fmt: skip
    """Loop `f` over the leading axis of `xs`, carrying a value; stack the per-step outputs.

    Equivalent to::

        carry = init; ys = []
        for x in xs:            # reversed(xs) when reverse=True (ys stay aligned with xs)
            carry, y = f(carry, x)
            ys.append(y)
        return carry, stack(ys)

    Args:
      f: (carry, x) -> (carry, y); the carry keeps its pytree structure, shapes and dtypes.
      init: the initial carry (a pytree of arrays).
      xs: a pytree of arrays sharing their leading axis (or None, with `length`).
      length: the number of steps, when `xs` is None (else it must agree with `xs`).
      reverse: run from the last element of `xs` to the first.
      unroll: how many steps one iteration of the compiled loop runs (a positive int; True unrolls
        all of them, False is 1): fewer calls and optimization across steps, the same results.

    Returns:
      ``(final carry, ys)``, with `ys` stacked along a new leading axis.

    >>> lax.scan(lambda c, x: (c + x, c * x), enp.asarray(0.0), enp.arange(1.0, 4.0))
    (Array(6., dtype=float32), Array([0., 2., 9.], dtype=float32))
    """
    op = "lax.scan"
    if not isinstance(unroll, (int, np.integer)) or (unroll < 1 and unroll is not False):
        raise InvalidArgumentError(f"{op}: unroll must be a positive int or a bool, got {unroll!r}")
    init_leaves, carry_tree = tree_flatten(init)
    carry = _arrays(init_leaves, op, "init")
    x_leaves, x_tree = tree_flatten(xs)
    xs_flat = _arrays(x_leaves, op, "xs")
    x_paths = _paths(x_tree, "xs")
    for x, path in zip(xs_flat, x_paths):
        if x.ndim == 0:
            raise ShapeError(f"{op}: {path} is a scalar ({_show(x.aval)}); scan runs over the leading axis of every "
                             "leaf of xs, so each must have at least one dimension")  # fmt: skip
    lengths = {x.shape[0] for x in xs_flat}
    if length is not None:
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 0:
            raise InvalidArgumentError(f"{op}: length must be a non-negative int, got {length!r}")
        lengths.add(int(length))
    if len(lengths) > 1:
        found = ", ".join(f"{p} has {x.shape[0]}" for x, p in zip(xs_flat, x_paths))
        given = f"; length={length} was given" if length is not None else ""
        raise ShapeError(f"{op}: the leading axes of xs must all be the scan length, but {found}{given}")
    if not lengths:
        raise InvalidArgumentError(f"{op}: with no xs, pass length= to say how many steps to run")
    n = lengths.pop()
    slice_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs_flat]
    n_carry = len(carry)
    y_store: dict = {}

    def stage_body(avals: list[ShapedArray]):
        store: dict = {}

        def flat(*leaves: Any) -> list[Array]:
            c = tree_unflatten(carry_tree, list(leaves[:n_carry]))
            x = tree_unflatten(x_tree, list(leaves[n_carry:]))
            out = f(c, x)
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise ArgumentTypeError(f"{op}: f must return a pair (carry, y), got {type(out).__name__}")
            c_leaves, store["tree"] = tree_flatten(out[0])
            y_leaves, y_store["tree"] = tree_flatten(out[1])
            return [*_arrays(c_leaves, op, "the carry f returns"), *_arrays(y_leaves, op, "the y f returns")]

        closed = close(flat, [*avals, *slice_avals], op)
        return closed, store["tree"], [v.aval for v in closed.program.outvars[:n_carry]]

    body, carry = _carry(op, stage_body, carry, carry_tree, "f")
    unroll = max(n, 1) if unroll is True else 1 if unroll is False else int(unroll)
    outs = scan_p.bind(*body.consts, *carry, *xs_flat, body=body.fn(getattr(f, "__name__", "f")),
                       n_consts=len(body.consts), n_carry=n_carry, length=n, reverse=bool(reverse), unroll=unroll,
                       linear=(False,) * (len(body.consts) + n_carry + len(xs_flat)))  # fmt: skip
    return tree_unflatten(carry_tree, outs[:n_carry]), tree_unflatten(y_store["tree"], outs[n_carry:])


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:
    """``stack([f(x) for x in xs])`` over the leading axis of `xs` (a pytree), as a `scan`.

    Args:
      f: a function of one slice of `xs`.
      xs: a pytree of arrays sharing their leading axis.
      batch_size: apply `f` under `vmap` to this many slices at a time (fewer steps, more memory).

    Returns:
      The stacked outputs.

    >>> lax.map(lambda x: x ** 2, enp.arange(4.0))
    Array([0., 1., 4., 9.], dtype=float32)
    """
    if batch_size is None:
        return scan(lambda c, x: (c, f(x)), None, xs)[1]
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise InvalidArgumentError(f"lax.map: batch_size must be a positive int, got {batch_size!r}")
    from ember.transforms.vmap import vmap

    leaves, tree = tree_flatten(xs)
    leaves = _arrays(leaves, "lax.map", "xs")
    if not leaves:
        raise InvalidArgumentError("lax.map: xs has no arrays to map over")
    total = leaves[0].shape[0] if leaves[0].ndim else 0
    steps, rest = divmod(total, batch_size)
    parts = []
    if steps:
        main = [x[: steps * batch_size].reshape((steps, batch_size, *x.shape[1:])) for x in leaves]
        ys = scan(lambda c, x: (c, vmap(f)(x)), None, tree_unflatten(tree, main))[1]
        y_leaves, y_tree = tree_flatten(ys)
        parts.append([y.reshape((steps * batch_size, *y.shape[2:])) for y in y_leaves])
    if rest:
        ys = vmap(f)(tree_unflatten(tree, [x[steps * batch_size :] for x in leaves]))
        y_leaves, y_tree = tree_flatten(ys)
        parts.append(y_leaves)
    if len(parts) == 1:
        return tree_unflatten(y_tree, parts[0])
    return tree_unflatten(y_tree, [concatenate([a, b], 0) for a, b in zip(*parts)])

