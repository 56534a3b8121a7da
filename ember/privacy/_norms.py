"""One example's squared gradient norm for a ghost leaf, from its uses' activations and cotangents.

A use's gradient is ``Pᵀ Q`` (see `_uses`). For a leaf with uses ``u, v, ...`` sharing one frame,

    ||Σ_u P_uᵀ Q_u||² = Σ_{u,v} <P_u P_vᵀ, Q_u Q_vᵀ>        (the "ghost norm")

costs ~T² (rows + cols) and forms only T x T matrices; for T == 1 it is ``||x||² ||d||²``. The direct
side forms ``Σ_u Pᵀ Q`` (the leaf's per-example gradient, rows x cols) and squares it; `_uses` picks
the cheaper from the shapes. A lookup's ``P`` is one-hot and never formed: it stays an index vector.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import ember.numpy as enp
from ember.core.array import Array
from ember.core.ir import Eqn
from ember.privacy._uses import Use
from ember.transforms.autodiff import vjp
from ember.transforms.vmap import vmap


class OneHot(NamedTuple):
    """The (T, size) matrix whose row t is one-hot at ``index[t]`` (a zero row where not ``valid[t]``)."""

    index: Array
    valid: Array
    size: int


Factor = Array | OneHot


def factors(use: Use, eqn: Eqn, activation: Array, cotangent: Array) -> tuple[Factor, Factor]:
    """``(P, Q)`` of one use, for one example, in the leaf's frame."""
    if use.kind == "dot_general":
        p, q = _dot_factors(use, eqn, activation, cotangent)
    elif use.kind == "conv_general_dilated":
        p, q = _conv_factors(use, eqn, activation, cotangent)
    else:
        p, q = _lookup_factors(use, eqn, activation, cotangent)
    return (q, p) if use.swapped else (p, q)


def _dot_factors(use: Use, eqn: Eqn, x: Array, d: Array) -> tuple[Array, Array]:
    (lc, rc), _ = eqn.params["dimension_numbers"]
    theirs = list(rc if use.pos == 0 else lc)
    free = [a for a in range(x.ndim) if a not in theirs]
    x = enp.transpose(x, free + theirs).reshape(use.T, -1)
    n_mine = d.ndim - len(free)  # the output is (lhs free..., rhs free...)
    if use.pos == 0:
        d = enp.transpose(d, [*range(n_mine, d.ndim), *range(n_mine)])
    return x, d.reshape(use.T, -1)


def _conv_factors(use: Use, eqn: Eqn, x: Array, d: Array) -> tuple[Array, Array]:
    """Patches by a convolution with the identity kernel (output channel ``(c, window position)``),
    with the use's own strides, padding and dilations, so they line up with the output positions."""
    dn = eqn.params["dimension_numbers"]
    kernel = eqn.inputs[1].aval
    c_in, window = kernel.shape[dn.rhs_spec[1]], tuple(kernel.shape[a] for a in dn.rhs_spec[2:])
    n = c_in * int(np.prod(window, dtype=np.int64))
    eye = np.eye(n, dtype=x.dtype).reshape(n, c_in, *window)  # canonical (O, I, spatial...)
    eye = np.transpose(eye, np.argsort(dn.rhs_spec))
    patches = eqn.primitive.bind(x, enp.asarray(eye), **eqn.params)
    last = [dn.out_spec[0], *dn.out_spec[2:], dn.out_spec[1]]
    return (enp.transpose(patches, last).reshape(use.T, use.rows),
            enp.transpose(d, last).reshape(use.T, use.cols))  # fmt: skip


def _lookup_factors(use: Use, eqn: Eqn, indices: Array, d: Array) -> tuple[OneHot, Array]:
    rows = eqn.inputs[0].aval.shape[0]
    index = indices.reshape(use.T)
    if eqn.params["mode"] == "clip":
        index, valid = enp.clip(index, 0, rows - 1), enp.ones(index.shape, bool)
    else:  # out-of-range lookups fill and get no gradient
        valid = (index >= 0) & (index < rows)
    return OneHot(index, valid, rows), d.reshape(use.T, -1)


def gram(a: Factor, b: Factor) -> Array:
    """``a @ bᵀ`` (T_a x T_b) without forming a one-hot factor."""
    if isinstance(a, OneHot) and isinstance(b, OneHot):
        same = (a.index[:, None] == b.index[None, :]) & a.valid[:, None] & b.valid[None, :]
        return same
    if isinstance(a, OneHot):
        return gram(b, a).T
    if isinstance(b, OneHot):
        picked = enp.take(a, enp.clip(b.index, 0, b.size - 1), axis=1)  # [t, s] = a[t, index_s]
        return enp.where(b.valid[None, :], picked, 0)
    return enp.matmul(a, b.T)


def gram_sq(pairs: list[tuple[Factor, Factor]], dtype: Any) -> Array:
    """``Σ_{u,v} <P_u P_vᵀ, Q_u Q_vᵀ>``, each unordered pair once (and twice its cross term)."""
    total = enp.zeros((), dtype)
    for i, (p_u, q_u) in enumerate(pairs):
        for j in range(i, len(pairs)):
            p_v, q_v = pairs[j]
            term = enp.sum(gram(p_u, p_v).astype(dtype) * gram(q_u, q_v).astype(dtype))
            total = total + (term if i == j else 2 * term)
    return total


def _use_of(program_eqns: list[Eqn], use: Use) -> Any:
    """The use as a function of the leaf and the use's activation: its view chain, then its equation."""
    eqn = program_eqns[use.eqn]

    def use_of(w: Array, activation: Array) -> Array:
        for k in use.chain:
            view = program_eqns[k]
            w = view.primitive.bind(w, **view.params)
        ins = [None, None]
        ins[use.pos], ins[use.other] = w, activation
        return eqn.primitive.bind(*ins, **eqn.params)

    return use_of


def direct_grad(program_eqns: list[Eqn], leaf: Array, uses: tuple[Use, ...], activations: dict[int, Array],
                cotangents: dict[int, Array]) -> Array:  # fmt: skip
    """One example's ``Σ_u G_u``, each use's gradient pulled back through its view chain onto the leaf."""
    total = None
    for use in uses:
        use_of = _use_of(program_eqns, use)
        _, pull = vjp(lambda w, use_of=use_of, use=use: use_of(w, activations[use.eqn]), leaf)
        (g,) = pull(cotangents[use.eqn])
        total = g if total is None else total + g
    return total


def batch_grad(program_eqns: list[Eqn], leaf: Array, uses: tuple[Use, ...], activations: dict[int, Array],
               cotangents: dict[int, Array], weights: Array) -> Array:  # fmt: skip
    """``Σ_i w_i Σ_u G_u,i`` from the batched activations and cotangents: the pull-back of the use mapped
    over the batch (the leaf shared) contracts the batch axis with the others, per-example-free."""
    total = None
    for use in uses:
        use_of = vmap(_use_of(program_eqns, use), in_axes=(None, 0))
        d = cotangents[use.eqn]
        _, pull = vjp(lambda w, use_of=use_of, use=use: use_of(w, activations[use.eqn]), leaf)
        (g,) = pull(d * weights.astype(d.dtype).reshape((-1,) + (1,) * (d.ndim - 1)))
        total = g if total is None else total + g
    return total
