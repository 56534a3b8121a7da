"""Testing helpers: `check_grads` checks derivatives against finite differences (as jax.test_util).

`check_jvp` compares ``ember.jvp`` with central finite differences along a random direction;
`check_vjp` checks ``ember.vjp`` by the dot-product identity ``<ct, J t> == <J^T ct, t>``, with
``J t`` from finite differences; `check_grads` runs them and, up to `order`, the same checks on
the jvp and vjp functions themselves. Finite differences run in the arguments' dtype, so use
float64 (``ember.config.x64(True)``) for tight tolerances.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.transforms.autodiff import jvp, vjp

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4

# Default (atol = rtol) per dtype, as JAX's default gradient tolerances.
_TOLERANCE = {
    np.dtype(np.float16): 1e-2,
    np.dtype(ml_dtypes.bfloat16): 1e-1,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-3,
    np.dtype(np.complex128): 1e-5,
}

Tolerance = float | dict | None


def _tolerance(tol: Tolerance, dtype: np.dtype) -> float:
    default = _TOLERANCE.get(np.dtype(dtype), 2e-3)
    if tol is None:
        return default
    if isinstance(tol, dict):
        return {np.dtype(k): v for k, v in tol.items()}.get(np.dtype(dtype), default)
    return float(tol)


def _leaves(tree: Any) -> tuple[list[Array], Any]:
    leaves, treedef = tree_flatten(tree)
    return [x if isinstance(x, Array) else from_host(x, "check_grads") for x in leaves], treedef


def _wide(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.complex128) if x.dtype.kind == "c" else x.astype(np.float64)


def _inexact(x: Array) -> bool:
    return dtypes.is_inexact(x.dtype)


def _random_like(rng: np.random.RandomState, x: Array) -> np.ndarray:
    if not _inexact(x):
        return np.zeros(x.shape, dtypes.float0)
    if dtypes.is_complex(x.dtype):
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS) -> list[np.ndarray]:
    """The directional derivative of `f` at `primals` along `tangents`, by central differences:
    ``(f(x + eps t) - f(x - eps t)) / (2 eps)``, one float64 (complex128) array per output leaf.

    >>> round(float(numerical_jvp(enp.sin, (0.0,), (1.0,))[0]), 6)
    1.0
    """
    x, tree = _leaves(tuple(primals))
    t = tree_flatten(tuple(tangents))[0]

    def shifted(sign: float) -> list[np.ndarray]:
        moved = [
            from_host((_wide(a) + sign * eps * _wide(b)).astype(a.dtype)) if _inexact(a) else a for a, b in zip(x, t)
        ]
        return [_wide(o) for o in _leaves(f(*tree_unflatten(tree, moved)))[0]]

    return [(p - m) / (2 * eps) for p, m in zip(shifted(1.0), shifted(-1.0))]


def _assert_close(got: Sequence[Any], want: Sequence[Any], atol: Tolerance, rtol: Tolerance, what: str) -> None:
    if len(got) != len(want):
        raise AssertionError(f"check_grads: {what}: {len(got)} output leaves, expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        g_arr = np.asarray(g)
        if g_arr.dtype == dtypes.float0 or not dtypes.is_inexact(g_arr.dtype):
            continue
        a, r = _tolerance(atol, g_arr.dtype), _tolerance(rtol, g_arr.dtype)
        g64, w64 = _wide(g_arr), _wide(w)
        if g64.shape != w64.shape:
            raise AssertionError(f"check_grads: {what}: output leaf {i} has shape {g64.shape}, expected {w64.shape}")
        err = np.abs(g64 - w64)
        bad = ~(err <= a + r * np.abs(w64))
        if bad.any():
            raise AssertionError(
                f"check_grads: {what} does not match (output leaf {i}, shape {g64.shape}, dtype {g_arr.dtype}): "
                f"{int(bad.sum())} of {bad.size} elements differ by more than atol={a:g} + rtol={r:g} * |expected|; "
                f"largest difference {float(err.max()):.3g}\n  got:      {np.array2string(g64.ravel()[:8], precision=6)}"
                f"\n  expected: {np.array2string(w64.ravel()[:8], precision=6)}"
            )


def check_jvp(f: Callable, args: Sequence[Any], atol: Tolerance = None, rtol: Tolerance = None, eps: float = EPS,
              err_msg: str = "JVP") -> None:  # fmt: skip
    """Check ``ember.jvp(f, args, t)`` against central finite differences for a random tangent t.

    >>> check_jvp(enp.sin, (enp.asarray([0.5, 1.0]),))
    """
    x, tree = _leaves(tuple(args))
    rng = np.random.RandomState(0)
    t = tree_unflatten(tree, [_random_like(rng, a) for a in x])
    out, t_out = jvp(f, tuple(tree_unflatten(tree, x)), tuple(t))
    _assert_close(_leaves(out)[0], _leaves(f(*tree_unflatten(tree, x)))[0], atol, rtol, f"{err_msg} (primal output)")
    _assert_close(tree_flatten(t_out)[0], numerical_jvp(f, tree_unflatten(tree, x), t, eps), atol, rtol,
                  f"{err_msg} (tangent vs finite differences, eps={eps:g})")  # fmt: skip


def _is_float0(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == dtypes.float0


def _conj(x: np.ndarray) -> np.ndarray:
    return np.conj(x) if x.dtype.kind == "c" else x


def _inner(xs: Sequence[Any], ys: Sequence[Any]) -> float:
    total = 0.0
    for a, b in zip(xs, ys):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == dtypes.float0 or b.dtype == dtypes.float0:
            continue
        total += float(np.real(np.dot(np.conj(_wide(a)).ravel(), _wide(b).ravel())))
    return total


def check_vjp(f: Callable, args: Sequence[Any], atol: Tolerance = None, rtol: Tolerance = None, eps: float = EPS,
              err_msg: str = "VJP") -> None:  # fmt: skip
    """Check ``ember.vjp(f, *args)`` by the dot-product test ``<ct, J t> == <vjp(ct), t>`` (J t by
    finite differences) for a random tangent t and cotangent ct.

    >>> check_vjp(enp.sin, (enp.asarray([0.5, 1.0]),))
    """
    x, tree = _leaves(tuple(args))
    primals = tree_unflatten(tree, x)
    out, f_vjp = vjp(f, *primals)
    out_leaves, out_tree = _leaves(out)
    _assert_close(out_leaves, _leaves(f(*primals))[0], atol, rtol, f"{err_msg} (primal output)")
    rng = np.random.RandomState(0)
    t = [_random_like(rng, a) for a in x]
    t_out = numerical_jvp(f, primals, tree_unflatten(tree, t), eps)
    ct = [_random_like(rng, o) for o in out_leaves]
    conj_ct = [_conj(c) for c in ct]
    ct_in = [_conj(np.asarray(c)) for c in tree_flatten(f_vjp(tree_unflatten(out_tree, conj_ct)))[0]]
    got, want = _inner(t, ct_in), _inner(t_out, ct)
    # The least precise dtype involved sets the tolerance.
    inexact = [np.dtype(a.dtype) for a in [*x, *out_leaves] if _inexact(a)] or [np.dtype(np.float64)]
    dtype = max(inexact, key=lambda d: _TOLERANCE.get(d, 2e-3))
    a, r = _tolerance(atol, dtype), _tolerance(rtol, dtype)
    if not abs(got - want) <= a + r * abs(want):
        raise AssertionError(f"check_grads: {err_msg} fails the dot-product test <vjp(ct), t> == <ct, J t> (J t by finite "
                             f"differences, eps={eps:g}): {got:.6g} vs {want:.6g}, difference {abs(got - want):.3g} > "
                             f"atol={a:g} + rtol={r:g} * |expected|")  # fmt: skip


def check_grads(f: Callable, args: Sequence[Any], order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol: Tolerance = None, rtol: Tolerance = None, eps: float | None = None) -> None:  # fmt: skip
    """Check `f`'s derivatives at `args` against finite differences, up to `order`.

    Args:
      f: a function of arrays (pytrees of arrays) returning arrays.
      args: its positional arguments (a tuple).
      order: 1 checks jvp and/or vjp; 2 also checks the derivatives of the jvp and vjp functions; and so on.
      modes: "fwd" (jvp against finite differences) and/or "rev" (vjp by the dot-product test).
      atol, rtol: a number, or {dtype: number}; the defaults depend on the dtype (2e-3 for float32, 1e-5 for float64).
      eps: the finite-difference step (default 1e-4).

    Raises:
      AssertionError: saying which check failed (e.g. "JVP of VJP"), where, and by how much.

    >>> check_grads(lambda x: enp.sin(x) * x, (enp.asarray([0.5, 1.0]),), order=2)
    """
    eps = EPS if eps is None else eps
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads: unknown modes {sorted(unknown)}; use 'fwd' and/or 'rev'")

    def check(fn: Callable, fn_args: tuple, k: int, label: str) -> None:
        if "fwd" in modes:
            msg = f"JVP of {label}" if label else "JVP"
            check_jvp(fn, fn_args, atol, rtol, eps, msg)
            if k > 1:
                check(functools.partial(jvp, fn), (fn_args, fn_args), k - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {label}" if label else "VJP"
            check_vjp(fn, fn_args, atol, rtol, eps, msg)
            if k > 1:

                def fn_vjp(*a):
                    out, pull = vjp(fn, *a)
                    # Integer inputs' float0 cotangents are left out: there is nothing to differentiate.
                    leaves, tree = tree_flatten(pull(out))
                    return tree_unflatten(tree, [None if _is_float0(c) else c for c in leaves])

                check(fn_vjp, fn_args, k - 1, msg)

    check(f, tuple(args), order, "")
