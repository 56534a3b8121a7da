"""Products and contractions of ember.numpy: matmul, dot, vdot, inner, outer, tensordot, einsum, kron.

All of them lower to the one `dot_general` primitive (plus elementwise
multiplies where nothing is summed). einsum's contraction order comes from
opt_einsum, and each pairwise step becomes one dot_general.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import opt_einsum

from ember import lax
from ember.core.array import Array
from ember.core.primitives._rules import broadcast_shapes as _broadcast_shapes
from ember.core.primitives._rules import normalize_axis
from ember.errors import InvalidArgumentError, ShapeError
from ember.numpy._core import ArrayLike, promote_args
from ember.numpy._shape import broadcast_to, moveaxis, ravel, reshape
from ember.numpy._ufuncs import conjugate, multiply


def matmul(x1: ArrayLike, x2: ArrayLike, /, *, precision=None, preferred_element_type=None) -> Array:
    """Matrix product with NumPy's rules: 1-d operands are vectors, leading axes broadcast.

    >>> enp.matmul(enp.ones((2, 3)), enp.ones((3, 4))).shape
    (2, 4)
    """
    if type(x1) is Array and type(x2) is Array and precision is None and preferred_element_type is None:
        out = _matmul_fast(x1, x2)
        if out is not None:
            return out
    a, b = promote_args("matmul", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must be at least 1-d, got shapes {a.shape} and {b.shape}; use multiply for scalars")
    if a.shape[-1] != b.shape[max(b.ndim - 2, 0)]:
        raise ShapeError(
            f"matmul: contracted dimensions differ: {a.shape} @ {b.shape} "
            f"({a.shape[-1]} != {b.shape[max(b.ndim - 2, 0)]}); the last axis of x1 must match the second-to-last of x2"
        )
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    if b.ndim <= 2:  # no batch on the right: one plain contraction, whatever a's leading axes
        return lax.dot_general(a, b, (((a.ndim - 1,), (0,)), ((), ())), **kw)
    vector_a = a.ndim == 1
    x1_shape = a.shape
    if vector_a:
        a = reshape(a, (1, a.shape[0]))
    try:
        batch = _broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    except ShapeError:
        raise ShapeError(f"matmul: the batch dimensions of {x1_shape} and {b.shape} do not broadcast "
                         f"({a.shape[:-2]} vs {b.shape[:-2]}; NumPy's rule: trailing dimensions must be equal or 1)") from None
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    out = lax.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))), **kw)
    return lax.squeeze(out, (nb,)) if vector_a else out


_new = object.__new__
_F32 = np.dtype(np.float32)
_MATMUL_FAST = {np.dtype(t) for t in ("float32", "float64", "complex64", "complex128")}


def _matmul_fast(x1: Array, x2: Array) -> Array | None:
    # Two concrete CPU arrays of one float/complex dtype (no promotion, accumulation in that dtype):
    # the very NumPy calls that the dot_general kernel (backends/kernels.py) makes for the general
    # path's contraction, without binding it, so that eager results are the bits that jit and the
    # transforms compute (np.matmul on a stack rounds differently from np.dot's one product).
    # None: take the general path (promotion, broadcast batches, vectors against stacks, outer products).
    x, y = x1._value, x2._value
    dtype, place = x.dtype, x1._place
    if (y.dtype is not dtype or (dtype is not _F32 and dtype not in _MATMUL_FAST) or x2._place is not place
            or not place.host or type(x) is not np.ndarray or type(y) is not np.ndarray):
        return None
    xs, ys = x.shape, y.shape
    nx, ny = len(xs), len(ys)
    if nx == 0 or ny == 0 or xs[-1] != ys[0 if ny == 1 else -2]:
        return None
    if ny <= 2:  # the kernel's plain matrix/vector product, (..., k) as one 2-D matrix
        if nx <= 2:  # (ndarray.dot is np.dot without the __array_function__ dispatch: ~150 ns less)
            out = x.dot(y)
            if type(out) is not np.ndarray:  # vector @ vector: a NumPy scalar
                out = np.asarray(out)
        else:
            out = x.reshape(math.prod(xs[:-1]), xs[-1]).dot(y).reshape(xs[:-1] + ys[1:])
    elif xs[:-2] == ys[:-2] and xs[-1] != 1:  # one batch of matrix products
        batch, (m, k), n = xs[:-2], xs[-2:], ys[-1]
        nb = math.prod(batch)
        if nb == 1:
            out = np.matmul(x.reshape(m, k), y.reshape(k, n))
        else:
            out = np.matmul(x.reshape(nb, m, k), y.reshape(nb, k, n))
        out = out.reshape(batch + (m, n))
    else:
        return None
    result = _new(Array)
    result._value = out
    result._weak = x1._weak and x2._weak
    result._place = place
    return result


def dot(a: ArrayLike, b: ArrayLike, *, precision=None, preferred_element_type=None) -> Array:
    """NumPy's dot: scalars multiply, vectors give the inner product, else a's last axis with b's second-to-last.

    >>> enp.dot(enp.ones(3), enp.ones(3))
    Array(3., dtype=float32)
    """
    a, b = promote_args("dot", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    contract_b = max(b.ndim - 2, 0)
    if a.shape[-1] != b.shape[contract_b]:
        raise ShapeError(f"dot: shapes {a.shape} and {b.shape} not aligned ({a.shape[-1]} != {b.shape[contract_b]})")
    return lax.dot_general(a, b, (((a.ndim - 1,), (contract_b,)), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)  # fmt: skip


def vdot(a: ArrayLike, b: ArrayLike, *, precision=None, preferred_element_type=None) -> Array:
    """The dot product of the flattened arrays, conjugating the first.

    >>> enp.vdot(enp.asarray([1 + 1j]), enp.asarray([1 + 1j]))
    Array(2.+0.j, dtype=complex64)
    """
    a, b = promote_args("vdot", a, b)
    if a.size != b.size:
        raise ShapeError(f"vdot: the flattened operands differ in length: shapes {a.shape} ({a.size} elements) and {b.shape} ({b.size})")
    return dot(conjugate(ravel(a)), ravel(b), precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1) -> Array:
    """sum(conj(x1) * x2) over `axis`, broadcasting the other axes (the result keeps the promoted dtype).

    >>> enp.vecdot(enp.ones((2, 3)), enp.ones(3)).tolist()
    [3.0, 3.0]
    """
    a, b = promote_args("vecdot", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"vecdot: operands must be at least 1-d, got shapes {a.shape} and {b.shape}")
    ndim = max(a.ndim, b.ndim)
    if not -min(a.ndim, b.ndim) <= (axis - ndim if axis >= 0 else axis) < 0:
        raise InvalidArgumentError(f"vecdot: axis {axis} is out of range for shapes {a.shape} and {b.shape}")
    axis = axis - ndim if axis >= 0 else axis
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"vecdot: axis {axis} has sizes {a.shape[-1]} and {b.shape[-1]} in shapes {tuple(a.shape)} and {tuple(b.shape)} (axis moved last)")
    # (..., 1, n) @ (..., n, 1): one batched dot_general, so bool stays bool and integers keep their width.
    out = matmul(lax.expand_dims(conjugate(a), (a.ndim - 1,)), lax.expand_dims(b, (b.ndim,)))
    return lax.squeeze(out, (out.ndim - 2, out.ndim - 1))


def matvec(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """Matrix-vector product over the last axes, broadcasting the rest: (..., m, n) x (..., n) -> (..., m).

    >>> enp.matvec(enp.ones((2, 3)), enp.ones(3)).shape
    (2,)
    """
    a, b = promote_args("matvec", x1, x2)
    if a.ndim < 2 or b.ndim < 1:
        raise ShapeError(f"matvec: needs a matrix and a vector, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"matvec: the matrix's last axis ({a.shape[-1]}) must match the vector's ({b.shape[-1]}); shapes {a.shape} and {b.shape}")
    return lax.squeeze(matmul(a, b[..., None]), (-1,))


def vecmat(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """Vector-matrix product conjugating the vector: (..., n) x (..., n, m) -> (..., m).

    >>> enp.vecmat(enp.ones(2), enp.ones((2, 3))).shape
    (3,)
    """
    a, b = promote_args("vecmat", x1, x2)
    if a.ndim < 1 or b.ndim < 2:
        raise ShapeError(f"vecmat: needs a vector and a matrix, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"vecmat: the vector's last axis ({a.shape[-1]}) must match the matrix's second-to-last ({b.shape[-2]}); shapes {a.shape} and {b.shape}")
    return lax.squeeze(matmul(conjugate(a)[..., None, :], b), (-2,))


def inner(a: ArrayLike, b: ArrayLike, *, precision=None, preferred_element_type=None) -> Array:
    """Sum product over the last axes of `a` and `b`.

    >>> enp.inner(enp.ones((2, 3)), enp.ones((4, 3))).shape
    (2, 4)
    """
    a, b = promote_args("inner", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: the last axes differ in size: shapes {a.shape} and {b.shape}")
    return tensordot(a, b, ((a.ndim - 1,), (b.ndim - 1,)), precision=precision, preferred_element_type=preferred_element_type)


def outer(a: ArrayLike, b: ArrayLike, out=None) -> Array:
    """The outer product of the flattened arrays.

    >>> enp.outer(enp.ones(2), enp.ones(3)).shape
    (2, 3)
    """
    a, b = promote_args("outer", a, b)
    return multiply(reshape(ravel(a), (-1, 1)), reshape(ravel(b), (1, -1)))


def tensordot(a: ArrayLike, b: ArrayLike, axes: int | Sequence = 2, *, precision=None, preferred_element_type=None) -> Array:
    """Sum products over the last `axes` axes of a and the first of b, or over explicit axis lists.

    >>> enp.tensordot(enp.ones((2, 3, 4)), enp.ones((3, 4, 5))).shape
    (2, 5)
    """
    a, b = promote_args("tensordot", a, b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise InvalidArgumentError(f"tensordot: axes={n} out of range for shapes {a.shape} and {b.shape}")
        ax_a, ax_b = tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    else:
        try:
            ax_a, ax_b = axes
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}") from None
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise InvalidArgumentError(f"tensordot: axes {axes!r} name {len(ax_a)} axes of a but {len(ax_b)} of b")
        ax_a = tuple(normalize_axis("tensordot", int(x), a.ndim) for x in ax_a)
        ax_b = tuple(normalize_axis("tensordot", int(x), b.ndim) for x in ax_b)
    for i, j in zip(ax_a, ax_b):
        if a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: axis {i} of a (size {a.shape[i]}) and axis {j} of b (size {b.shape[j]}) differ; "
                             f"shapes {a.shape} and {b.shape}, axes={axes!r}")
    return lax.dot_general(a, b, ((ax_a, ax_b), ((), ())), precision=precision, preferred_element_type=preferred_element_type)


def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """The Kronecker product: blocks of b scaled by each element of a.

    >>> enp.kron(enp.eye(2), enp.ones((2, 2))).shape
    (4, 4)
    """
    a, b = promote_args("kron", a, b)
    nd = max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    a_spread = reshape(a, tuple(s for d in a.shape for s in (d, 1)))
    b_spread = reshape(b, tuple(s for d in b.shape for s in (1, d)))
    return reshape(multiply(a_spread, b_spread), tuple(x * y for x, y in zip(a.shape, b.shape)))


# --- einsum ----------------------------------------------------------------------------------------


def einsum(subscripts: str, *operands: ArrayLike, optimize: str | bool = "auto", precision=None,
           preferred_element_type=None) -> Array:  # fmt: skip
    """Einstein summation; the contraction order is planned by opt_einsum and each step is one dot_general.

    >>> enp.einsum("ij,jk->ik", enp.ones((2, 3)), enp.ones((3, 4))).shape
    (2, 4)
    """
    if not isinstance(subscripts, str):
        raise InvalidArgumentError("einsum: pass the subscripts string first, e.g. einsum('ij,jk->ik', a, b)")
    xs = promote_args("einsum", *operands)
    bad = sorted({c for c in subscripts if not (c.isascii() and c.isalpha()) and c not in ",.->  "})
    if bad:
        raise InvalidArgumentError(f"einsum: subscripts {subscripts!r} hold {bad}; use letters, ',', '...' and '->'")
    try:
        inputs, output, _ = opt_einsum.parser.parse_einsum_input((subscripts, *[_Shaped(x.shape) for x in xs]))
    except (ValueError, TypeError) as err:
        raise InvalidArgumentError(f"einsum: cannot parse {subscripts!r} for shapes {[x.shape for x in xs]}: {err}") from None
    names = inputs.split(",")
    if len(names) != len(xs):
        raise InvalidArgumentError(f"einsum: {subscripts!r} names {len(names)} operands but {len(xs)} were given")
    sizes: dict[str, int] = {}
    for x, term in zip(xs, names):
        if len(term) != x.ndim:
            raise ShapeError(f"einsum: term {term!r} has {len(term)} indices but its operand has shape {x.shape}")
        for c, s in zip(term, x.shape):
            if sizes.setdefault(c, s) != s and s != 1 and sizes[c] != 1:
                what = f"index {c!r}" if c in subscripts else "a broadcast (...) dimension"
                raise ShapeError(f"einsum: {what} has sizes {sizes[c]} and {s} in {subscripts!r} with shapes {[x.shape for x in xs]}")
            sizes[c] = max(sizes[c], s)
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    terms = list(zip(xs, names))
    if len(terms) > 1:
        strategy = "auto" if optimize is True or optimize == "auto" else ("greedy" if optimize is False else optimize)
        path, _ = opt_einsum.contract_path(f"{inputs}->{output}", *[x.shape for x in xs], shapes=True, optimize=strategy)
    else:
        path = [(0,)]
    for step in path:
        picked = [terms[i] for i in step]
        terms = [t for i, t in enumerate(terms) if i not in step]
        keep = set(output).union(*(t for _, t in terms))
        terms.append(_contract(picked, keep, sizes, kw))
    (x, term), = terms
    return _finish(x, term, output, sizes)


class _Shaped:
    """A stand-in with only `.shape`, so opt_einsum's parser can expand ellipses."""

    def __init__(self, shape):
        self.shape = shape


def _diagonal_and_sum(x: Array, term: str, keep: set[str], sizes) -> tuple[Array, str]:
    """Take diagonals of repeated indices and sum indices nobody else needs."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        mask = lax.eq(lax.broadcasted_iota("int32", x.shape, i), lax.broadcasted_iota("int32", x.shape, j))
        x = _sum(lax.select(mask, x, lax.full(x.shape, 0, x.dtype)), (j,))
        term = term[:j] + term[j + 1:]
    gone = [i for i, c in enumerate(term) if c not in keep]
    if gone:
        x = _sum(x, gone)
        term = "".join(c for c in term if c in keep)
    return x, term


def _sum(x: Array, axes) -> Array:
    # A bool sum of products is "any" (as dot_general's bool contraction and NumPy's einsum).
    return lax.reduce_or(x, axes) if x.dtype == np.bool_ else lax.reduce_sum(x, axes)


def _contract(picked, keep: set[str], sizes, kw) -> tuple[Array, str]:
    if len(picked) == 1:
        return _diagonal_and_sum(*picked[0], keep, sizes)
    (a, ta), (b, tb) = picked
    a, ta = _diagonal_and_sum(a, ta, keep | set(tb), sizes)
    b, tb = _diagonal_and_sum(b, tb, keep | set(ta), sizes)
    a, b = _unit_broadcast(a, ta, b, tb, sizes)
    shared = [c for c in ta if c in tb]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    dims = ((tuple(ta.index(c) for c in contract), tuple(tb.index(c) for c in contract)),
            (tuple(ta.index(c) for c in batch), tuple(tb.index(c) for c in batch)))  # fmt: skip
    out = lax.dot_general(a, b, dims, **kw)
    term = "".join(batch) + "".join(c for c in ta if c not in shared) + "".join(c for c in tb if c not in shared)
    return out, term


def _unit_broadcast(a: Array, ta: str, b: Array, tb: str, sizes) -> tuple[Array, Array]:
    # Ellipsis dimensions of size 1 broadcast against the other operand's.
    def widen(x, t):
        target = tuple(sizes[c] for c in t)
        return broadcast_to(x, target) if x.shape != target else x

    return widen(a, ta), widen(b, tb)


def _finish(x: Array, term: str, output: str, sizes) -> Array:
    x, term = _diagonal_and_sum(x, term, set(output), sizes)
    target = tuple(sizes[c] for c in term)
    if x.shape != target:
        x = broadcast_to(x, target)
    return lax.transpose(x, tuple(term.index(c) for c in output))
