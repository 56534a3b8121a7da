"""Dense Jacobians and Hessians: jacrev, jacfwd, hessian, and jacobian (which picks the mode).

`jacrev` is ``vmap`` of the vector-Jacobian product over the rows of an identity
(one pull-back per output element); `jacfwd` is ``vmap`` of the Jacobian-vector
product over the columns of an identity (one push-forward per input element).
Both batch the whole basis in one vectorized pass (or `chunk_size` rows at a
time), so the linearized program runs once on a stack of cotangents/tangents
instead of once per element.

Pytrees follow JAX: for ``f(x) -> y`` the Jacobian has the output's structure
on the outside and the input's inside (``jac[out_path][in_path]``, each leaf of
shape ``out_leaf.shape + in_leaf.shape``); with a tuple `argnums` the inner level
is a tuple with one entry per argument. ``hessian(f) == jacfwd(jacrev(f))``, so
its leaves are ``out.shape + in.shape + in.shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host, wrap
from ember.core.primitive import PRIMITIVES, new_trace
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.core.staging import StagingTrace
from ember.core.transfer import _put
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError
from ember.transforms.autodiff import _argnums, _as_arrays, _check_inputs, _name_like, jvp, vjp
from ember.transforms import _memory
from ember.transforms.vmap import check_chunk_size, vmap

__all__ = ["hessian", "jacfwd", "jacobian", "jacrev"]


def _partial(fun: Callable, args: tuple, nums: tuple[int, ...], kwargs: dict) -> Callable:
    """`fun` as a function of the arguments in `nums` only (the others held at their values)."""

    def partial(*diff):
        full = list(args)
        for n, d in zip(nums, diff):
            full[n] = d
        return fun(*full, **kwargs)

    return partial


def _dynamic(op: str, args: tuple, argnums) -> tuple[tuple[int, ...], tuple, Any, list[Array]]:
    """The argument numbers, the differentiated arguments (as arrays), their structure and leaves."""
    nums = _argnums(op, argnums, len(args))
    leaves, tree = tree_flatten(tuple(args[n] for n in nums))
    leaves = _as_arrays(leaves, op)
    return nums, tree_unflatten(tree, leaves), tree, leaves


def _basis(leaves: Sequence[Any], total: int) -> list[Array]:
    """The rows of a (total x total) identity cut into blocks shaped like `leaves`: block k has shape
    ``(total, *leaves[k].shape)`` and `leaves[k]`'s dtype."""
    out, start = [], 0
    for leaf in leaves:
        n = int(np.prod(leaf.shape, dtype=np.int64))
        block = np.zeros((total, n), dtype=leaf.dtype)
        block[np.arange(start, start + n), np.arange(n)] = 1
        out.append(wrap(block.reshape((total, *leaf.shape))))  # a fresh buffer: no copy needed
        start += n
    return out


def _placed(block: Any, x: Any, y: Any) -> Any:
    if type(block) is Array and block._place.committed:  # on a device already: never a silent copy
        return block
    for leaf in (x, y):
        if type(leaf) is Array and leaf._place.committed:
            return _put(block, leaf._place)  # (a traced block is returned as it is)
    if type(x) is Array and type(block) is Array and block._place is not x._place:
        return _put(block, x._place)  # an uncommitted input away from the default device (a GPU library's array)
    return block


def _size(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _cut(x: Array, axis: int, start: int, stop: int, shape: tuple[int, ...], before: bool) -> Array:
    """Elements [start, stop) of `x` along `axis` (the first or the last), reshaped to `shape` there."""
    lo, hi = [0] * x.ndim, list(x.shape)
    lo[axis], hi[axis] = start, stop
    if (start, stop) != (0, x.shape[axis]):
        x = PRIMITIVES["slice"].bind(x, start_indices=tuple(lo), limit_indices=tuple(hi), strides=None)
    new = (*shape, *x.shape[1:]) if before else (*x.shape[:-1], *shape)
    if new != x.shape:
        x = PRIMITIVES["reshape"].bind(x, new_sizes=new, dimensions=None)
    return x


class _Owner:
    """What chunk_size="auto" caches its plans under for one jacrev/jacfwd (weakly: it lives as long as
    the function the transform returned)."""

    __slots__ = ("__weakref__",)


def _for_memory(fn: Callable, op: str, fun: Callable, token: _Owner, args: tuple, kwargs: dict) -> Callable:
    """`fn` (the rows or columns vmapped) named for chunk_size="auto"'s messages, and keyed for its cache
    by the call's argument shapes (a new `fn` is made per call; its program depends on those)."""
    leaves = tree_flatten((args, kwargs))[0]
    plain = (int, float, complex, str, bool, type(None))
    shapes = tuple((tuple(x.shape), str(x.dtype), getattr(x, "weak_type", False)) if hasattr(x, "shape")
                   and hasattr(x, "dtype") else x if isinstance(x, plain) else id(x) for x in leaves)  # fmt: skip
    fn._memory_name = f"{op}({getattr(fun, '__name__', type(fun).__name__)})"
    fn._memory_owner = token
    fn._memory_key = (op, shapes)
    return fn


def _float0_zeros(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, dtypes.float0)


def _nest(out_tree, in_tree, argnums, blocks: list[list[Any]], ins: Sequence[Any] = (), outs: Sequence[Any] = ()) -> Any:
    """The Jacobian pytree: output structure outside, the differentiated arguments' inside
    (one argument's structure for an int `argnums`, a tuple of them for a tuple). A block goes to the
    device its input (else its output) is committed to, else to its input's: one computed from constants
    alone (the basis, a linear map's coefficients) would otherwise land on the default device."""
    if ins:
        blocks = [[_placed(b, x, y) for b, x in zip(row, ins)] for row, y in zip(blocks, outs)]
    inner = [tree_unflatten(in_tree, row) for row in blocks]
    if isinstance(argnums, int):
        inner = [t[0] for t in inner]
    return tree_unflatten(out_tree, inner)


# --- reverse mode --------------------------------------------------------------------------------


def _check_rev_outputs(op: str, leaves: Sequence[Array], holomorphic: bool) -> None:
    for y in leaves:
        if holomorphic:
            if not dtypes.is_complex(y.dtype):
                raise DTypeError(f"{op}(holomorphic=True): outputs must be complex, got an output of shape {y.shape} and "
                                 f"dtype {y.dtype}")  # fmt: skip
        elif not dtypes.is_floating(y.dtype):
            hint = ("; pass holomorphic=True for a holomorphic function, or use ember.vjp for other complex outputs"
                    if dtypes.is_complex(y.dtype) else "")  # fmt: skip
            raise DTypeError(f"{op}: reverse mode needs real floating-point outputs, got an output of shape {y.shape} and "
                             f"dtype {y.dtype}{hint}")  # fmt: skip


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False, chunk_size: int | str | None = None) -> Callable:  # fmt: skip
    """The Jacobian of `fun` by reverse mode: one vector-Jacobian product per output element, vectorized.

    Cheaper than `jacfwd` when the outputs are smaller than the inputs (a loss over many parameters).

    Args:
      fun: a function of arrays (pytrees of arrays) with real floating-point outputs (complex ones
        with ``holomorphic=True``).
      argnums: an int, or a tuple of ints (the Jacobian's inner level is then a tuple).
      has_aux: `fun` returns ``(output, aux)``; the result is ``(jacobian, aux)``.
      holomorphic: differentiate a complex function of complex inputs (the Jacobian is ``df/dz``).
      allow_int: integer inputs get float0 zeros instead of raising.
      chunk_size: pull back this many rows of the identity at a time (less memory, same result);
        ``"auto"``: the fewest chunks that fit ``ember.config.memory_budget`` (see `vmap`).

    Returns:
      A function with `fun`'s arguments returning the Jacobian: for each output leaf, a tree like the
      differentiated argument(s) whose leaves have shape ``out.shape + in.shape``.

    >>> W = enp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> ember.jacrev(lambda x: W @ x)(enp.ones(2))          # d(Wx)/dx = W
    Array([[1., 2.],
           [3., 4.],
           [5., 6.]], dtype=float32)
    >>> J = ember.jacrev(lambda p: {"y": p["a"] * p["b"]})({"a": enp.ones(3), "b": enp.ones(3)})
    >>> J["y"]["a"].shape                                    # output tree outside, input tree inside
    (3, 3)
    """
    op = "jacrev"
    check_chunk_size(op, chunk_size)
    token = _Owner()

    def jacfun(*args, **kwargs):
        nums, dyn, in_tree, in_leaves = _dynamic(op, args, argnums)
        _check_inputs(op, in_leaves, holomorphic, allow_int)
        partial = _partial(fun, args, nums, kwargs)
        if has_aux:
            y, pull, aux = vjp(partial, *dyn, has_aux=True)
        else:
            y, pull = vjp(partial, *dyn)
        out_leaves, out_tree = tree_flatten(y)
        _check_rev_outputs(op, out_leaves, holomorphic)
        total = sum(_size(o.shape) for o in out_leaves)
        live = [dtypes.is_inexact(x.dtype) for x in in_leaves]  # integer inputs: float0 zeros, not pulled back

        def row(*ct_leaves):
            cts = tree_flatten(pull(tree_unflatten(out_tree, list(ct_leaves))))[0]
            return [c for c, lv in zip(cts, live) if lv]

        row = _for_memory(row, op, fun, token, args, kwargs)
        basis = _basis(out_leaves, total)
        if total == 0 or not any(live):
            rows = [from_host(np.zeros((total, *x.shape), x.dtype)) for x, lv in zip(in_leaves, live) if lv]
        elif total == 1:  # one pull-back: no batch to vectorize over
            rows = [PRIMITIVES["expand_dims"].bind(c, dimensions=(0,)) for c in row(*[b[0] for b in basis])]
        else:
            rows = vmap(row, chunk_size=chunk_size)(*basis)
        rows = iter(rows)
        in_rows = [next(rows) if lv else None for lv in live]
        blocks, start = [], 0
        for o in out_leaves:
            n = _size(o.shape)
            blocks.append([_cut(r, 0, start, start + n, o.shape, before=True) if r is not None
                           else _float0_zeros((*o.shape, *x.shape)) for r, x in zip(in_rows, in_leaves)])  # fmt: skip
            start += n
        jac = _nest(out_tree, in_tree, argnums, blocks, in_leaves, out_leaves)
        return (jac, aux) if has_aux else jac

    jacfun = _name_like(jacfun, fun, op)
    return jacfun


# --- forward mode --------------------------------------------------------------------------------


def _check_fwd_inputs(op: str, leaves: Sequence[Array], holomorphic: bool) -> None:
    for x in leaves:
        if holomorphic:
            if not dtypes.is_complex(x.dtype):
                raise DTypeError(f"{op}(holomorphic=True): inputs must be complex, got an input of shape {x.shape} and "
                                 f"dtype {x.dtype}; convert it with .astype('complex64')")  # fmt: skip
        elif not dtypes.is_floating(x.dtype):
            hint = ("pass holomorphic=True for a holomorphic function, or use ember.jvp for other complex inputs"
                    if dtypes.is_complex(x.dtype) else "convert it with .astype('float32'), or use jacrev(allow_int=True)")
            raise DTypeError(f"{op}: forward mode needs real floating-point inputs, got an input of shape {x.shape} and "
                             f"dtype {x.dtype}; {hint}")  # fmt: skip


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           chunk_size: int | str | None = None) -> Callable:  # fmt: skip
    """The Jacobian of `fun` by forward mode: one Jacobian-vector product per input element, vectorized.

    Cheaper than `jacrev` when the inputs are smaller than the outputs (tall Jacobians).

    Args:
      fun: a function of real floating-point arrays (pytrees; complex with ``holomorphic=True``).
      argnums: an int, or a tuple of ints (the Jacobian's inner level is then a tuple).
      has_aux: `fun` returns ``(output, aux)``; the result is ``(jacobian, aux)``.
      holomorphic: differentiate a complex function of complex inputs.
      chunk_size: push forward this many columns of the identity at a time; ``"auto"``: the fewest
        chunks that fit ``ember.config.memory_budget`` (see `vmap`).

    Returns:
      The same structure as `jacrev`'s: output tree outside, input tree inside, leaves of shape
      ``out.shape + in.shape``. Integer outputs get float0 zeros.

    >>> ember.jacfwd(lambda x: enp.stack([x[0] * x[1], enp.sin(x[0])]))(enp.asarray([0.0, 2.0]))
    Array([[2., 0.],
           [1., 0.]], dtype=float32)
    """
    op = "jacfwd"
    check_chunk_size(op, chunk_size)
    token = _Owner()

    def jacfun(*args, **kwargs):
        nums, dyn, in_tree, in_leaves = _dynamic(op, args, argnums)
        _check_fwd_inputs(op, in_leaves, holomorphic)
        partial = _partial(fun, args, nums, kwargs)
        total = sum(_size(x.shape) for x in in_leaves)
        store: dict[str, Any] = {}

        def column(*t_leaves):
            tangents = tree_unflatten(in_tree, list(t_leaves))
            if has_aux:
                y, ty, aux = jvp(partial, tuple(dyn), tuple(tangents), has_aux=True)
                aux_leaves, store["aux_tree"] = tree_flatten(aux)
                store["aux_leaves"] = aux_leaves
                aux_arrays = [a for a in aux_leaves if isinstance(a, Array)]
            else:
                y, ty = jvp(partial, tuple(dyn), tuple(tangents))
                aux_arrays = []
            y_leaves, store["out_tree"] = tree_flatten(y)
            store["out_avals"] = [(o.shape, o.dtype) for o in y_leaves]
            ty_leaves = tree_flatten(ty)[0]
            live = [dtypes.is_inexact(o.dtype) for o in y_leaves]
            store["live"] = live
            return [t for t, lv in zip(ty_leaves, live) if lv], y_leaves, aux_arrays

        column = _for_memory(column, op, fun, token, args, kwargs)
        basis = _basis(in_leaves, total)
        if total == 0:
            _, y_leaves, aux_arrays = column(*[from_host(np.zeros(x.shape, x.dtype)) for x in in_leaves])
            cols = [from_host(np.zeros((*shape, 0), dtype)) for (shape, dtype), lv in zip(store["out_avals"], store["live"]) if lv]
        elif total == 1:
            cols, y_leaves, aux_arrays = column(*[b[0] for b in basis])
            cols = [PRIMITIVES["expand_dims"].bind(c, dimensions=(c.ndim,)) for c in cols]
        else:
            cols, y_leaves, aux_arrays = vmap(column, out_axes=(-1, None, None), chunk_size=chunk_size)(*basis)
        out_tree, live = store["out_tree"], store["live"]
        if holomorphic:
            for y in y_leaves:
                if not dtypes.is_complex(y.dtype):
                    raise DTypeError(f"{op}(holomorphic=True): outputs must be complex, got an output of shape {y.shape} "
                                     f"and dtype {y.dtype}")  # fmt: skip
        cols = iter(cols)
        blocks = []
        for y, lv in zip(y_leaves, live):
            col = next(cols) if lv else None
            row, start = [], 0
            for x in in_leaves:
                n = _size(x.shape)
                row.append(_cut(col, col.ndim - 1, start, start + n, x.shape, before=False) if col is not None
                           else _float0_zeros((*y.shape, *x.shape)))  # fmt: skip
                start += n
            blocks.append(row)
        jac = _nest(out_tree, in_tree, argnums, blocks, in_leaves, y_leaves)
        if has_aux:
            flowed = iter(aux_arrays)
            aux = tree_unflatten(store["aux_tree"], [next(flowed) if isinstance(a, Array) else a for a in store["aux_leaves"]])
            return jac, aux
        return jac

    jacfun = _name_like(jacfun, fun, op)
    return jacfun


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
            chunk_size: int | str | None = None) -> Callable:  # fmt: skip
    """The Hessian of the scalar-valued `fun`: ``jacfwd(jacrev(fun))`` (forward over reverse).

    `chunk_size` (an int, ``"auto"`` or None, as for `jacfwd`) chunks the outer forward pass: that many
    Hessian columns at a time, each a whole gradient's worth of reverse mode (the inner jacrev of a
    scalar is one pull-back, with nothing to chunk).

    For a scalar output and an argument of shape s, the Hessian has shape ``s + s``; for pytrees it
    nests like the Jacobians (``hess[in_path_1][in_path_2]`` below the output's structure), and a tuple
    `argnums` gives a tuple of tuples.

    >>> f = lambda x: enp.sum(x ** 3)
    >>> ember.hessian(f)(enp.asarray([1.0, 2.0]))            # diag(6 x)
    Array([[ 6.,  0.],
           [ 0., 12.]], dtype=float32)

    Where only the product with a vector is needed, do not build the matrix: a Hessian-vector
    product is one jvp of the gradient (forward over reverse), at the cost of about two gradients:

    >>> def hvp(f, x, v):
    ...     return ember.jvp(ember.grad(f), (x,), (v,))[1]
    >>> hvp(f, enp.asarray([1.0, 2.0]), enp.asarray([1.0, 0.0]))
    Array([6., 0.], dtype=float32)
    """
    check_chunk_size("hessian", chunk_size)
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums, has_aux=has_aux,
                  holomorphic=holomorphic, chunk_size=chunk_size)  # fmt: skip


# --- the mode chooser --------------------------------------------------------------------------------

_MODES = ("auto", "fwd", "rev")


def _output_leaves(partial: Callable, dyn: tuple, has_aux: bool) -> list[Any]:
    """The output leaves' abstract values (shape, dtype), from staging `partial` once on abstract inputs
    (no arithmetic); a function with Python control flow on its values is run once instead."""
    leaves, tree = tree_flatten(dyn)
    try:
        with new_trace(StagingTrace) as staging:
            out = partial(*tree_unflatten(tree, [staging.new_arg(x.aval) for x in leaves]))
            out = out[0] if has_aux else out
            return [o.aval if isinstance(o, Array) else from_host(o).aval for o in tree_flatten(out)[0]]
    except ConcretizationError:
        out = partial(*dyn)
        out = out[0] if has_aux else out
        return [(o if isinstance(o, Array) else from_host(o)).aval for o in tree_flatten(out)[0]]


class _Choice:
    """A mode, the sizes it was chosen from, and the reason: "forced" (mode= given), "dtype" (only one
    mode handles the dtypes) or "size" (fewer products)."""

    __slots__ = ("kind", "mode", "n_in", "n_out", "reason")

    def __init__(self, mode: str, n_in: int, n_out: int, kind: str, reason: str):
        self.mode, self.n_in, self.n_out, self.kind, self.reason = mode, n_in, n_out, kind, reason


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'s' if n != 1 else ''}"


def _elements(n: int) -> str:
    return _count(n, "element")


def _choose(mode: str, in_leaves: Sequence[Array], out_avals: Sequence[Any], holomorphic: bool) -> _Choice:
    n_in = sum(_size(x.shape) for x in in_leaves)
    n_out = sum(_size(a.shape) for a in out_avals)
    if mode != "auto":
        return _Choice(mode, n_in, n_out, "forced", f"mode={mode!r} was given")
    if not holomorphic:
        # A mode that cannot handle the dtypes is no choice: forward mode needs real inputs, reverse real outputs.
        odd_in = any(not dtypes.is_floating(x.dtype) for x in in_leaves)
        odd_out = any(not dtypes.is_floating(a.dtype) for a in out_avals)
        if odd_in and not odd_out:
            return _Choice("rev", n_in, n_out, "dtype", "forward mode needs real floating-point inputs and an input is "
                                                        "complex or integer")  # fmt: skip
        if odd_out and not odd_in:
            return _Choice("fwd", n_in, n_out, "dtype", "reverse mode needs real floating-point outputs and an output is "
                                                        "complex or integer")  # fmt: skip
    if n_in < n_out:
        return _Choice("fwd", n_in, n_out, "size",
                       f"{_count(n_in, 'Jacobian-vector product')} (one per input element) "
                       f"{'are' if n_in != 1 else 'is'} fewer than the {_count(n_out, 'vector-Jacobian product')} "
                       "(one per output element) reverse mode would need")  # fmt: skip
    if n_in > n_out:
        return _Choice("rev", n_in, n_out, "size",
                       f"{_count(n_out, 'vector-Jacobian product')} (one per output element) "
                       f"{'are' if n_out != 1 else 'is'} fewer than the {_count(n_in, 'Jacobian-vector product')} "
                       "(one per input element) forward mode would need")  # fmt: skip
    return _Choice("rev", n_in, n_out, "size",
                   f"both modes would need {_count(n_in, 'product')}, and on a tie ember picks reverse mode (as "
                   "jax.jacobian, an alias of jacrev, does)")  # fmt: skip


def jacobian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, mode: str = "auto",
             holomorphic: bool = False, chunk_size: int | str | None = None) -> Callable:  # fmt: skip
    """The Jacobian of `fun`, by forward or reverse mode, whichever needs fewer products.

    With ``mode="auto"`` (the default) each call compares the total number of input elements
    (the differentiated arguments' leaves) with the total number of output elements (found by
    staging `fun` on abstract values, without computing anything): forward mode (`jacfwd`, one
    Jacobian-vector product per input element) when the inputs are fewer, reverse mode (`jacrev`,
    one vector-Jacobian product per output element) otherwise. On a tie it picks reverse mode (as
    ``jax.jacobian``, which is jacrev, does). Where only one mode can handle the dtypes (complex inputs
    or outputs without ``holomorphic=True``), it takes that one. ``mode="fwd"`` or ``"rev"`` forces a mode.

    The result is the same either way (the structure of `jacrev`/`jacfwd`). The returned function has
    ``.explain(*args, **kwargs)``: a sentence saying which mode a call with those arguments uses and why,
    and with a `chunk_size` the chunking (with ``"auto"``, traced abstractly: the estimated peak per chunk
    against ``ember.config.memory_budget``).

    >>> jac = ember.jacobian(lambda x: enp.outer(x, x).ravel())     # 2 inputs -> 4 outputs
    >>> jac(enp.asarray([1.0, 2.0])).shape
    (4, 2)
    >>> jac.explain(enp.asarray([1.0, 2.0]))
    'jacobian uses forward mode (jacfwd): the inputs have 2 elements and the outputs 4 elements, so 2 Jacobian-vector products (one per input element) are fewer than the 4 vector-Jacobian products (one per output element) reverse mode would need'
    >>> big = ember.jacobian(lambda x: enp.tanh(enp.outer(x[:20], x)).sum(1), chunk_size="auto")
    >>> ember.config.update("memory_budget", 1_000_000)      # bytes (None: half the free memory)
    >>> print(big.explain(enp.ones(1000)))
    jacobian uses reverse mode (jacrev): ... forward mode would need; in 4 chunks of 5 rows; estimated peak 904.5 kB per chunk (+ 80.0 kB for the result) against a budget of 1.0 MB
    >>> ember.config.update("memory_budget", None)
    """
    if mode not in _MODES:
        raise InvalidArgumentError(f"jacobian: mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    op = "jacobian"
    check_chunk_size(op, chunk_size)
    forward = jacfwd(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, chunk_size=chunk_size)
    reverse = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, chunk_size=chunk_size)

    def choose(args, kwargs) -> _Choice:
        nums, dyn, _, in_leaves = _dynamic(op, args, argnums)
        return _choose(mode, in_leaves, _output_leaves(_partial(fun, args, nums, kwargs), dyn, has_aux), holomorphic)

    def jacfun(*args, **kwargs):
        if mode == "fwd":
            return forward(*args, **kwargs)
        if mode == "rev":
            return reverse(*args, **kwargs)
        return (forward if choose(args, kwargs).mode == "fwd" else reverse)(*args, **kwargs)

    def explain(*args, **kwargs) -> str:
        """Which mode a call with these arguments uses, the input and output sizes, and why."""
        c = choose(args, kwargs)
        name = "forward mode (jacfwd)" if c.mode == "fwd" else "reverse mode (jacrev)"
        sizes = f"the inputs have {_elements(c.n_in)} and the outputs {_elements(c.n_out)}"
        if c.kind == "size":
            text = f"jacobian uses {name}: {sizes}, so {c.reason}"
        else:
            text = f"jacobian uses {name} because {c.reason} ({sizes})"
        return text + _chunking(c, forward if c.mode == "fwd" else reverse, args, kwargs)

    def _chunking(c: _Choice, chosen: Callable, args: tuple, kwargs: dict) -> str:
        what = "columns" if c.mode == "fwd" else "rows"
        n = c.n_in if c.mode == "fwd" else c.n_out
        if chunk_size is None or n <= 1:
            return ""
        if chunk_size != "auto":
            k = -(-n // chunk_size)
            return f"; in {_count(k, 'chunk')} of {min(chunk_size, n)} {what} (chunk_size={chunk_size})"
        from ember.transforms.jit import make_ir  # (jit imports this module's neighbours)

        with _memory.recording() as plans:
            make_ir(chosen)(*args, **kwargs)  # abstract: decides (or finds) the plan the call would use
        return f"; {plans[-1].describe(what)}" if plans else ""

    jacfun = _name_like(jacfun, fun, op)
    jacfun.explain = explain
    jacfun.mode = mode
    return jacfun

