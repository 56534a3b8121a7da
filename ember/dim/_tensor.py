"""`DimArray`: an ember Array with first-class dims, and how functions meet it.

Layout: ``value`` holds the positional axes first, then one axis per dim, the
dims in creation order (`Dim._id`). Keeping the dims last makes a DimArray an
honest pytree: a transform that adds an axis in front of the value (vmap's
out_axes=0) adds a positional axis, as the user asked.

Implicit batching (functorch's rule 1) is ember's vmap: `apply` runs a
positional function under one nested `vmap` per dim of the union of its
operands' dims, in_axes at that dim's axis where an operand has it, None where
it does not. The dims of every operand are already in the union's order (both
sorted by creation), so nothing is transposed on the way in, and each vmap's
out_axes puts its dim back before the inner ones.
"""

from __future__ import annotations

import operator
import string
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember import numpy as enp
from ember._traceback import api_boundary
from ember.core.array import Array
from ember.core.pytree import register_node, tree_flatten, tree_map, tree_unflatten
from ember.dim._dim import Dim
from ember.errors import ArgumentTypeError, InvalidArgumentError, ShapeError
from ember.transforms.vmap import vmap

__all__ = ["DimArray", "apply", "dim_range", "lift", "softmax", "where"]


def _sorted(ds: Iterable[Dim]) -> tuple[Dim, ...]:
    return tuple(sorted(set(ds), key=lambda d: d._id))


def _names(ds: Sequence[Dim]) -> str:
    return "(" + ", ".join(d.name for d in ds) + ("," if len(ds) == 1 else "") + ")"


class DimArray:
    """An array with first-class dims (made by indexing with dims: ``x[i, j]``) and positional axes.

    Operators and the methods below act on the positional axes, implicitly batched over the dims
    (by ``vmap``); a dim given where an axis is expected (``.sum(k)``, ``.softmax(k)``) names the
    axis to work on. ``.order(i, j)`` turns dims back into leading positional axes. `value` holds
    the positional axes first, then the dims in creation order. A DimArray is a pytree (`value`
    the leaf, the dims static), so functions using dims inside compose with grad, vmap and jit.
    Positional ember functions refuse it (``enp.exp(x)`` raises ArgumentTypeError): use the method
    (``x.exp()``), `ember.dim.lift`, or ``x.order(...)`` first.

    >>> i, j = ember.dim.dims()
    >>> x = enp.arange(6.0).reshape(2, 3)[i, j]
    >>> x.dims, x.ndim, (x + 1.0).sum(j).order(i)
    ((i, j), 0, Array([ 6., 15.], dtype=float32))
    """

    __slots__ = ("_dims", "_value")
    __array_ufunc__ = None  # `ndarray * x` defers to x.__rmul__ rather than looping over x as an object

    def __init__(self, value: Any, dims: Sequence[Dim]):
        self._value = value
        self._dims = tuple(dims)

    # --- what it is --------------------------------------------------------------------------------

    @property
    def value(self) -> Array:
        """The underlying Array: positional axes first, then the dims in creation order."""
        return self._value

    @property
    def dims(self) -> tuple[Dim, ...]:
        """The first-class dims, in creation order."""
        return self._dims

    @property
    def shape(self) -> tuple[int, ...]:
        """The positional shape (without the dims)."""
        return tuple(self._value.shape[: self.ndim])

    @property
    def ndim(self) -> int:
        """The number of positional axes."""
        return self._value.ndim - len(self._dims)

    @property
    def dtype(self) -> Any:
        """The element dtype."""
        return self._value.dtype

    def __repr__(self) -> str:
        sizes = tuple(d.size for d in self._dims)
        return f"DimArray({self._value!r}, dims={_names(self._dims)}, sizes={sizes})"

    def __ember_refuse__(self, op: str) -> Exception:
        # Called by ember's conversion to a plain array (ember/core/array.py from_host).
        name = op.split(".")[-1]
        method = f"x.{name}()" if callable(getattr(DimArray, name, None)) else "a DimArray method (x.exp(), x.sum(dim))"
        dims = ", ".join(d.name for d in self._dims)
        return ArgumentTypeError(
            f"{op}: got a DimArray with first-class dims {_names(self._dims)} (sizes "
            f"{tuple(d.size for d in self._dims)}), but this function works on positional axes only; use {method}, "
            f"ember.dim.lift({name})(x) to batch it over the dims, or x.order({dims}) to make the dims positional")

    @staticmethod
    def __ember_index__(x: Any, index: Any) -> Any:
        from ember.dim._index import getitem

        return getitem(x, index)

    def __bool__(self) -> bool:
        raise ArgumentTypeError(f"the truth value of a DimArray with dims {_names(self._dims)} is ambiguous; reduce "
                                "it (.any(dim), .all(dim)) or use ember.dim.where")  # fmt: skip

    def _no_host_value(self, what: str) -> ArgumentTypeError:
        dims = ", ".join(d.name for d in self._dims)
        return ArgumentTypeError(f"{what}: got a DimArray with first-class dims {_names(self._dims)} (sizes "
                                 f"{tuple(d.size for d in self._dims)}); make the dims positional first: "
                                 f"x.order({dims})")  # fmt: skip

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise self._no_host_value("numpy.asarray")  # not a 0-d object array holding the DimArray

    def __float__(self) -> float:
        raise self._no_host_value("float")

    def __int__(self) -> int:
        raise self._no_host_value("int")

    def __len__(self) -> int:
        if self.ndim == 0:
            raise self._no_host_value("len (it has no positional axes)")
        return self.shape[0]

    def __iter__(self) -> Any:
        # Without it Python would iterate by x[0], x[1], ... and stop silently at the first index error.
        return (self[k] for k in range(len(self)))

    # --- indexing and ordering ---------------------------------------------------------------------

    def __getitem__(self, index: Any) -> Any:
        from ember.dim._index import getitem

        return getitem(self, index)

    def order(self, *dims: Dim | Sequence[Dim]) -> Any:
        """The given dims as leading positional axes, in that order (a tuple of dims becomes one
        flattened axis); a plain Array when no dim is left.

        >>> i, j = ember.dim.dims()
        >>> enp.ones((2, 3))[i, j].order(j, i).shape
        (3, 2)
        """
        return order(self, dims)

    # --- the generic mechanism ---------------------------------------------------------------------

    def apply(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(self, *args, **kwargs)`` on the positional axes, batched over every dim of the operands
        (``lift(fn)(self, ...)``).

        >>> i = ember.dim.dims(1)
        >>> enp.arange(3.0)[i].apply(enp.maximum, 1.0).order(i)
        Array([1., 1., 2.], dtype=float32)
        """
        return apply(fn, self, *args, **kwargs)

    def reduce(self, fn: Callable[..., Any], dim: Any = None, **kwargs: Any) -> Any:
        """``fn(value, axis=..., **kwargs)`` reducing the named dims and positional axes in `dim`
        (a Dim, an int, or a tuple of them; None: every positional axis), batched over the other dims.

        >>> i, j = ember.dim.dims()
        >>> enp.arange(6.0).reshape(2, 3)[i, j].reduce(enp.max, j).order(i)
        Array([2., 5.], dtype=float32)
        """
        return _reduce(self, fn, dim, kwargs)

    def along(self, fn: Callable[..., Any], dim: Dim, **kwargs: Any) -> DimArray:
        """``fn(value, axis=0, **kwargs)`` along dim `dim`, keeping it (softmax, cumsum, sort ...).

        >>> i = ember.dim.dims(1)
        >>> enp.arange(3.0)[i].along(enp.cumsum, i).order(i)
        Array([0., 1., 3.], dtype=float32)
        """
        return _along(self, fn, dim, kwargs)

    # --- common methods ----------------------------------------------------------------------------

    def sum(self, dim: Any = None, **kwargs: Any) -> Any:
        """Sum over `dim`: dims and/or positional axes (a Dim, an int, or a tuple of them; None: every
        positional axis). ``mean``, ``prod``, ``max``, ``min``, ``var`` and ``std`` take the same arguments.

        >>> i, j = ember.dim.dims()
        >>> enp.arange(6.0).reshape(2, 3)[i, j].sum(j).order(i)
        Array([ 3., 12.], dtype=float32)
        """
        return _reduce(self, enp.sum, dim, kwargs)

    def any(self, dim: Any = None) -> Any:
        """Whether any is true over `dim`."""
        return _reduce(self, enp.any, dim, {})

    def all(self, dim: Any = None) -> Any:
        """Whether all are true over `dim`."""
        return _reduce(self, enp.all, dim, {})

    def logsumexp(self, dim: Any = None) -> Any:
        """``log(sum(exp(x)))`` over `dim`, computed stably."""
        from ember.scipy.special import logsumexp

        return _reduce(self, logsumexp, dim, {})

    def argmax(self, dim: Dim | int) -> Any:
        """Index of the maximum along one dim or positional axis."""
        return _reduce(self, _single_axis(enp.argmax), dim, {})

    def argmin(self, dim: Dim | int) -> Any:
        """Index of the minimum along one dim or positional axis."""
        return _reduce(self, _single_axis(enp.argmin), dim, {})

    def softmax(self, dim: Dim) -> DimArray:
        """Softmax along dim `dim`: ``exp(x) / exp(x).sum(dim)``, computed stably."""
        return _along(self, _softmax, dim, {})

    def log_softmax(self, dim: Dim) -> DimArray:
        """Log-softmax along dim `dim`."""
        return _along(self, _log_softmax, dim, {})

    def cumsum(self, dim: Dim) -> DimArray:
        """Cumulative sum along dim `dim`."""
        return _along(self, enp.cumsum, dim, {})

    def astype(self, dtype: Any) -> DimArray:
        """This DimArray converted to `dtype`."""
        return apply(lambda v: v.astype(dtype), self)

    def dot(self, other: Any) -> Any:
        """``enp.dot`` of the positional axes."""
        return apply(enp.dot, self, other)

    def reshape(self, *shape: Any) -> Any:
        """The positional axes reshaped."""
        return apply(lambda v: v.reshape(*shape), self)


# Elementwise methods: one line each, all through `apply`.
_UNARY = {
    "exp": enp.exp, "log": enp.log, "log1p": enp.log1p, "expm1": enp.expm1, "sqrt": enp.sqrt, "abs": enp.abs,
    "sin": enp.sin, "cos": enp.cos, "tanh": enp.tanh, "square": enp.square, "sign": enp.sign, "floor": enp.floor,
    "ceil": enp.ceil, "round": enp.round, "conj": enp.conj,
    "relu": lambda v: enp.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + enp.exp(-v)),
}  # fmt: skip


def _unary_method(name: str, fn: Callable[..., Any]) -> Callable[[DimArray], DimArray]:
    def method(self: DimArray) -> DimArray:
        return apply(fn, self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Elementwise {name}, batched over the dims."
    return method


for _name, _fn in _UNARY.items():
    setattr(DimArray, _name, _unary_method(_name, _fn))

# Reductions over dims and positional axes: the same arguments as `DimArray.sum`.
_REDUCTIONS = {"mean": (enp.mean, "Mean"), "prod": (enp.prod, "Product"), "max": (enp.max, "Maximum"),
               "min": (enp.min, "Minimum"), "var": (enp.var, "Variance"), "std": (enp.std, "Standard deviation")}


def _reduce_method(name: str, fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    def method(self: DimArray, dim: Any = None, **kwargs: Any) -> Any:
        return _reduce(self, fn, dim, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{what} over `dim` (dims and/or positional axes, as for ``sum``)."
    return method


for _name, (_fn, _what) in _REDUCTIONS.items():
    setattr(DimArray, _name, _reduce_method(_name, _fn, _what))

_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
}  # fmt: skip
_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
            "ne": operator.ne}  # fmt: skip


def _install_operators() -> None:
    for name, op in _BINARY.items():
        setattr(DimArray, f"__{name}__", lambda self, other, op=op: apply(op, self, other))
        setattr(DimArray, f"__r{name}__", lambda self, other, op=op: apply(op, other, self))
    DimArray.__mul__ = lambda self, other: _multiply(self, other)
    DimArray.__rmul__ = lambda self, other: _multiply(other, self)
    for name, op in _COMPARE.items():
        setattr(DimArray, f"__{name}__", lambda self, other, op=op: apply(op, self, other))
    DimArray.__neg__ = lambda self: apply(operator.neg, self)
    DimArray.__abs__ = lambda self: apply(enp.abs, self)
    DimArray.__invert__ = lambda self: apply(operator.invert, self)
    DimArray.__hash__ = None  # __eq__ is elementwise


_install_operators()


def _install_boundaries() -> None:
    # As Array's operators are: an error leaving a method has ember's frames dropped (ember/_traceback.py).
    for name, value in list(vars(DimArray).items()):
        public = not name.startswith("_") or name in ("__getitem__", *(f"__{n}__" for n in (*_BINARY, *_COMPARE)),
                                                      *(f"__r{n}__" for n in _BINARY), "__neg__", "__abs__")
        if public and callable(value) and not isinstance(value, (staticmethod, property)):
            setattr(DimArray, name, api_boundary(value))


_install_boundaries()

# --- products kept for a following sum ---------------------------------------------------------------

_VALUE_SLOT = DimArray.__dict__["_value"]


class _Product(DimArray):
    """``a * b`` of two DimArrays without positional axes, evaluated only when read: a sum over dims that
    follows it (``(A[i, k] * B[k, j]).sum(k)``) becomes one contraction (``enp.einsum``, so a matrix
    product) instead of a broadcast product and a reduction, as functorch.dim does."""

    __slots__ = ("_factors",)

    def __init__(self, a: DimArray, b: DimArray):
        self._factors = (a, b)
        self._dims = _sorted(a._dims + b._dims)

    @property
    def _value(self) -> Any:  # type: ignore[override]
        try:
            return _VALUE_SLOT.__get__(self)
        except AttributeError:
            value = apply(operator.mul, *self._factors)._value
            _VALUE_SLOT.__set__(self, value)
            return value


def _multiply(a: Any, b: Any) -> Any:
    if (isinstance(a, DimArray) and isinstance(b, DimArray) and a.ndim == 0 and b.ndim == 0
            and a.dtype == b.dtype and a.dtype.kind in "fc"):  # fmt: skip
        return _Product(a, b)
    return apply(operator.mul, a, b)


def _contract(x: _Product, summed: Sequence[Dim]) -> Any:
    """``x.sum(summed)`` of a product not yet evaluated, as one einsum of its factors."""
    letters = {d: string.ascii_letters[k] for k, d in enumerate(x._dims)}
    out = [d for d in x._dims if d not in summed]
    a, b = x._factors
    spec = "".join(letters[d] for d in a._dims) + "," + "".join(letters[d] for d in b._dims) + "->"
    value = enp.einsum(spec + "".join(letters[d] for d in out), a._value, b._value)
    return DimArray(value, out) if out else value


def _flatten(x: DimArray) -> tuple[tuple[Any], tuple[Dim, ...]]:
    return (x._value,), x._dims


register_node(DimArray, _flatten, lambda ds, children: DimArray(children[0], ds))
register_node(_Product, _flatten, lambda ds, children: DimArray(children[0], ds))


# --- apply -------------------------------------------------------------------------------------------


def _is_operand(x: Any) -> bool:
    return isinstance(x, (DimArray, Dim))


def dim_range(d: Dim) -> DimArray:
    """``arange(d.size)`` along dim `d`: a dim used as an operand (functorch's rule 3).

    >>> i = ember.dim.dims(sizes=[3])
    >>> ember.dim.dim_range(i).order(i)
    Array([0, 1, 2], dtype=int32)
    """
    return DimArray(enp.arange(d.size), (d,))


def apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with every DimArray (or Dim) among the arguments (pytrees too) seen by
    `fn` as its positional part, batched over the union of their dims by nested ``vmap``; array
    results come back as DimArrays with those dims. Without dims it is a plain call.

    >>> i, j = ember.dim.dims()
    >>> ember.dim.apply(enp.add, enp.arange(2.0)[i], enp.arange(3.0)[j]).order(i, j)
    Array([[0., 1., 2.],
           [1., 2., 3.]], dtype=float32)
    """
    leaves, tree = tree_flatten((args, kwargs), is_leaf=_is_operand)
    spots = [k for k, x in enumerate(leaves) if _is_operand(x)]
    operands = [leaves[k]._tensor() if isinstance(leaves[k], Dim) else leaves[k] for k in spots]
    union = _sorted(d for x in operands for d in x._dims)

    def positional(*vals: Any) -> Any:
        filled = list(leaves)
        for k, v in zip(spots, vals, strict=True):
            filled[k] = v
        a, kw = tree_unflatten(tree, filled)
        return fn(*a, **kw)

    batched = positional
    n = len(union)
    for level in reversed(range(n)):
        d = union[level]
        # Inside the outer vmaps an operand holds its dims from `level` on, last: d's axis counts from the end.
        in_axes = tuple(-sum(e._id >= d._id for e in x._dims) if d in x._dims else None for x in operands)
        batched = vmap(batched, in_axes=in_axes, out_axes=-(n - level), axis_size=d.size)
    try:
        out = batched(*[x._value for x in operands])
    except ShapeError as err:
        # The shapes in the message carry the dims' axes (vmap's batched shapes): say which are which.
        name = getattr(fn, "__name__", "fn")
        shapes = ", ".join(str(x.shape) for x in operands)
        if not hasattr(err, "add_note"):  # Python 3.10
            raise
        err.add_note(f"in ember.dim.apply({name}): the operands' positional shapes are {shapes}, batched over "
                     f"dims {_names(union)} of sizes {tuple(d.size for d in union)}")  # fmt: skip
        raise
    if not union:
        return out
    return tree_map(lambda v: DimArray(v, union), out)


def lift(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, made to accept DimArrays: ``lift(f)(*args) == apply(f, *args)``.

    >>> i = ember.dim.dims(1)
    >>> ember.dim.lift(enp.tanh)(enp.zeros(2)[i]).order(i)
    Array([0., 0.], dtype=float32)
    """

    def lifted(*args: Any, **kwargs: Any) -> Any:
        return apply(fn, *args, **kwargs)

    lifted.__name__ = lifted.__qualname__ = f"lift({getattr(fn, '__name__', 'fn')})"
    lifted.__doc__ = getattr(fn, "__doc__", None)
    lifted.__wrapped__ = fn
    return lifted


def where(condition: Any, x: Any, y: Any) -> Any:
    """``enp.where`` batched over the dims of its operands (dims used as operands are their indices).

    >>> i, j = ember.dim.dims(sizes=[2, 2])
    >>> ember.dim.where(i <= j, 1.0, 0.0).order(i, j).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    return apply(enp.where, condition, x, y)


def softmax(x: DimArray, dim: Dim) -> DimArray:
    """Softmax of `x` along dim `dim` (``x.softmax(dim)``).

    >>> i = ember.dim.dims(1)
    >>> ember.dim.softmax(enp.zeros(4)[i], i).order(i)
    Array([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """
    if not isinstance(x, DimArray):
        raise ArgumentTypeError(f"ember.dim.softmax: expected a DimArray, got {type(x).__name__}")
    return x.softmax(dim)


# --- order, reductions over dims ---------------------------------------------------------------------


def _has(x: DimArray, d: Any, op: str) -> Dim:
    if not isinstance(d, Dim):
        raise ArgumentTypeError(f"{op}: expected a Dim, got {d!r} of type {type(d).__name__}")
    if d not in x._dims:
        raise InvalidArgumentError(f"{op}: dim '{d.name}' is not one of this DimArray's dims {_names(x._dims)}")
    return d


def order(x: DimArray, specs: Sequence[Any]) -> Any:
    groups = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in specs]
    chosen = [_has(x, d, "order") for g in groups for d in g]
    repeated = sorted({d.name for d in chosen if chosen.count(d) > 1})
    if repeated:
        raise InvalidArgumentError(f"order: dim(s) {', '.join(repeated)} given more than once")
    npos = x.ndim
    where_of = {d: npos + k for k, d in enumerate(x._dims)}
    rest = [d for d in x._dims if d not in chosen]
    perm = [where_of[d] for d in chosen] + list(range(npos)) + [where_of[d] for d in rest]
    v = enp.transpose(x._value, perm) if perm != list(range(len(perm))) else x._value
    if any(len(g) != 1 for g in groups):
        sizes = [_prod(d.size for d in g) for g in groups]
        v = enp.reshape(v, (*sizes, *v.shape[len(chosen) :]))
    return DimArray(v, rest) if rest else v


def _prod(xs: Iterable[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _split_axes(x: DimArray, dim: Any, op: str) -> tuple[list[Dim], list[int]]:
    items = list(dim) if isinstance(dim, (tuple, list)) else [dim]
    ds = [_has(x, d, op) for d in items if isinstance(d, Dim)]
    ints = [a for a in items if not isinstance(a, Dim)]
    for a in ints:
        if not isinstance(a, int) or isinstance(a, bool) or not -x.ndim <= a < x.ndim:
            raise InvalidArgumentError(f"{op}: {a!r} is neither a dim of this DimArray {_names(x._dims)} nor one of "
                                       f"its {x.ndim} positional axes")  # fmt: skip
    return ds, [a % x.ndim for a in ints]


def _reduce(x: DimArray, fn: Callable[..., Any], dim: Any, kwargs: dict) -> Any:
    name = getattr(fn, "__name__", "reduce")
    if dim is None:
        return apply(lambda v: fn(v, **kwargs), x)
    ds, ints = _split_axes(x, dim, name)
    if fn is enp.sum and not ints and not kwargs and type(x) is _Product and len(x._dims) <= 52:
        try:
            _VALUE_SLOT.__get__(x)
        except AttributeError:  # not evaluated yet: contract
            return _contract(x, ds)
    if ds and kwargs.get("keepdims"):
        raise InvalidArgumentError(f"{name}: keepdims=True cannot keep a reduced dim ({_names(ds)}); reduce "
                                   "positional axes only, or bind the result again")  # fmt: skip
    moved = order(x, ds) if ds else x
    axes = tuple(range(len(ds))) + tuple(a + len(ds) for a in ints)
    if isinstance(moved, DimArray):
        return apply(lambda v: fn(v, axis=axes, **kwargs), moved)
    return fn(moved, axis=axes, **kwargs)


def _single_axis(fn: Callable[..., Any]) -> Callable[..., Any]:
    def one(v: Any, axis: tuple[int, ...]) -> Any:
        if len(axis) != 1:
            raise InvalidArgumentError(f"{fn.__name__}: give exactly one dim or axis, got {len(axis)}")
        return fn(v, axis=axis[0])

    one.__name__ = fn.__name__
    return one


def _along(x: DimArray, fn: Callable[..., Any], dim: Any, kwargs: dict) -> DimArray:
    d = _has(x, dim, getattr(fn, "__name__", "along").lstrip("_"))
    moved = order(x, [d])
    if isinstance(moved, DimArray):
        out = apply(lambda v: fn(v, axis=0, **kwargs), moved)
    else:
        out = fn(moved, axis=0, **kwargs)
    return out[d]


def _softmax(v: Any, axis: int) -> Any:
    e = enp.exp(v - enp.max(v, axis=axis, keepdims=True))
    return e / enp.sum(e, axis=axis, keepdims=True)


def _log_softmax(v: Any, axis: int) -> Any:
    s = v - enp.max(v, axis=axis, keepdims=True)
    return s - enp.log(enp.sum(enp.exp(s), axis=axis, keepdims=True))
