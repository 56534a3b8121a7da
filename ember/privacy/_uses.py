"""Which parameters of a traced per-example loss admit ghost norms, read from its program.

A parameter leaf is *ghost* when every use of it — possibly through a chain of ``transpose`` /
``reshape``, which only rearrange its entries — is one whose gradient is a sum of outer products
``G = Pᵀ Q`` with one row of ``P`` and of ``Q`` per position ``t`` of the use:

- ``dot_general`` with the leaf on one side and no batch dimensions: ``P = X`` (the other operand,
  its free dimensions flattened to ``T`` rows, its contracted ones to columns), ``Q = D`` (the output
  cotangent, ``T`` rows);
- ``conv_general_dilated`` with the leaf as the kernel and no feature/batch groups: ``P`` the input's
  patches (one row per output position), ``Q`` the output cotangent;
- a row lookup (``gather`` of whole rows by an integer index): ``P`` the one-hot rows of the indices.

Any other use (an elementwise op, a use inside a ``scan``/``while``/``cond`` body or a custom rule, the
leaf on both sides of one product) makes the leaf a *fallback* leaf: its per-example gradient is
materialised. The analysis is static (shapes and parameters only); `_ghost` evaluates it.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ember.core.ir import Program, Var

# Ops that pick or rearrange a leaf's entries without changing them; a use after a slice sees part of
# the leaf (the other entries' gradient is zero there).
VIEWS = ("transpose", "reshape", "squeeze", "expand_dims", "slice", "rev")  # rev: ConvTranspose's flipped kernel
PREFER: str | None = None  # "gram" or "direct" overrides the cost model (the tests check both sides)


class Use(NamedTuple):
    """One ghost use of a leaf: equation `eqn` takes the leaf's view (after the `chain` of view
    equations) as input `pos`; its gradient is ``Pᵀ Q`` with ``P`` of shape (T, rows), ``Q`` (T, cols)."""

    eqn: int
    pos: int
    chain: tuple[int, ...]
    kind: str
    T: int
    rows: int
    cols: int
    swapped: bool = False  # the use's (rows, cols) are its group's frame transposed
    group: int = 0  # uses of one group see the same entries of the leaf; groups see disjoint entries

    @property
    def other(self) -> int:
        """The input holding the per-example activation: the other factor of a product, a
        convolution's input, a lookup's indices."""
        return {"dot_general": 1 - self.pos, "conv_general_dilated": 0, "gather": 1}[self.kind]


class LeafPlan(NamedTuple):
    """How one parameter leaf's per-example squared norm is computed.

    `mode`: ``"gram"`` (``<P Pᵀ, Q Qᵀ>`` summed over pairs of uses), ``"direct"`` (``Pᵀ Q`` formed per
    example from the uses' factors, then squared) or ``"fallback"`` (the materialised per-example
    gradient)."""

    mode: str
    uses: tuple[Use, ...] = ()
    reason: str = ""


def analyse(program: Program, n_params: int) -> list[LeafPlan]:
    """A plan for each of the first `n_params` inputs of `program` (the parameter leaves)."""
    users: dict[Var, list[tuple[int, int]]] = {}
    for k, eqn in enumerate(program.eqns):
        for pos, v in enumerate(eqn.inputs):
            if isinstance(v, Var):
                users.setdefault(v, []).append((k, pos))
    outputs = {v for v in program.outvars if isinstance(v, Var)}
    return [_plan(program, leaf, users, outputs) for leaf in program.invars[:n_params]]


def _plan(program: Program, leaf: Var, users: dict, outputs: set) -> LeafPlan:
    uses: list[Use] = []
    stack: list[tuple[Var, tuple[int, ...]]] = [(leaf, ())]
    while stack:
        v, chain = stack.pop()
        if v in outputs:
            return LeafPlan("fallback", reason="returned by the loss")
        for k, pos in users.get(v, ()):
            eqn = program.eqns[k]
            name = eqn.primitive.name
            if name in VIEWS and pos == 0:
                stack.append((eqn.outvars[0], (*chain, k)))
                continue
            use = _ghost_use(eqn, k, pos, chain)
            if use is None:
                return LeafPlan("fallback", reason=f"used by {name}{_where(eqn)}{_groups(eqn)}")
            if any(u.eqn == k for u in uses):
                return LeafPlan("fallback", reason=f"on both sides of one {name}")
            uses.append(use)
    if not uses:
        return LeafPlan("fallback", reason="not used by the loss (its gradient is zero)")
    return _choose(program, leaf, sorted(uses))


def _where(eqn: Any) -> str:
    held = [k for k, v in eqn.params.items() if hasattr(v, "eqns") or hasattr(getattr(v, "program", None), "eqns")]
    return f" (inside its {held[0]})" if held else ""


def _groups(eqn: Any) -> str:
    p = eqn.params
    if eqn.primitive.name != "conv_general_dilated" or (p["feature_group_count"], p["batch_group_count"]) == (1, 1):
        return ""
    return f" with feature_group_count={p['feature_group_count']}, batch_group_count={p['batch_group_count']}"


def _ghost_use(eqn: Any, k: int, pos: int, chain: tuple[int, ...]) -> Use | None:
    name, p = eqn.primitive.name, eqn.params
    view, out = eqn.inputs[pos].aval, eqn.outvars[0].aval
    if name == "dot_general":
        (lc, rc), (lb, rb) = p["dimension_numbers"]
        if lb or rb:
            return None
        mine, theirs = (lc, rc) if pos == 0 else (rc, lc)
        other = eqn.inputs[1 - pos].aval
        free_other = [d for d in range(other.ndim) if d not in theirs]
        free_mine = [d for d in range(view.ndim) if d not in mine]
        return Use(k, pos, chain, name, _prod(other.shape[d] for d in free_other),
                   _prod(view.shape[d] for d in mine), _prod(view.shape[d] for d in free_mine))  # fmt: skip
    if name == "conv_general_dilated":
        if pos != 1 or p["feature_group_count"] != 1 or p["batch_group_count"] != 1:
            return None
        dn = p["dimension_numbers"]
        out_spatial = [out.shape[d] for d in dn.out_spec[2:]]
        kernel = [view.shape[d] for d in dn.rhs_spec[2:]]
        return Use(k, pos, chain, name, out.shape[dn.out_spec[0]] * _prod(out_spatial),
                   view.shape[dn.rhs_spec[1]] * _prod(kernel), view.shape[dn.rhs_spec[0]])  # fmt: skip
    if name == "gather" and pos == 0 and _is_row_lookup(eqn):
        indices = eqn.inputs[1].aval
        return Use(k, pos, chain, name, _prod(indices.shape[:-1]), view.shape[0], _prod(view.shape[1:]))
    return None


def _is_row_lookup(eqn: Any) -> bool:
    """``operand[idx]`` for whole rows: one index per lookup into dimension 0, every other dimension
    taken whole and placed last in the output."""
    p, operand = eqn.params, eqn.inputs[0].aval
    dn, indices, out = p["dimension_numbers"], eqn.inputs[1].aval, eqn.outvars[0].aval
    rest = operand.ndim - 1
    return (operand.ndim >= 1 and indices.ndim >= 1 and indices.shape[-1] == 1
            and tuple(dn.collapsed_slice_dims) == (0,) and tuple(dn.start_index_map) == (0,)
            and not dn.operand_batching_dims and not dn.start_indices_batching_dims
            and tuple(p["slice_sizes"]) == (1, *operand.shape[1:])
            and tuple(dn.offset_dims) == tuple(range(out.ndim - rest, out.ndim)))  # fmt: skip


def _prod(sizes: Any) -> int:
    return math.prod(int(s) for s in sizes)


# --- one frame for all uses of a leaf, and the cheaper side ----------------------------------------


def _choose(program: Program, leaf: Var, uses: list[Use]) -> LeafPlan:
    """Gram or direct for this leaf, from the static costs. The Gram form needs the uses to fall into
    groups: within one each use sees the same entries of the leaf as the same (rows, cols) matrix as the
    group's first (or its transpose), and different groups see disjoint entries (slices of the leaf,
    as attention's packed q/k/v projection), so their gradients are orthogonal."""
    compatible, grouped = True, list(uses[:1])
    if len(uses) > 1:
        frames = [_frame(program, leaf, u) for u in uses]
        heads: list[int] = [0]  # each group's first use
        for u, m in zip(uses[1:], frames[1:]):
            for g, h in enumerate(heads):
                if m.shape == frames[h].shape and np.array_equal(m, frames[h]):
                    grouped.append(u._replace(group=g))
                    break
                if m.shape == frames[h].T.shape and np.array_equal(m, frames[h].T):
                    grouped.append(u._replace(group=g, swapped=True, rows=u.cols, cols=u.rows))
                    break
            else:
                seen = np.concatenate([frames[h].ravel() for h in heads])
                if np.isin(m.ravel(), seen).any():
                    compatible = False
                    break
                heads.append(uses.index(u))
                grouped.append(u._replace(group=len(heads) - 1))
        if compatible:
            uses = grouped
    gram = sum(u.T * v.T * (u.rows + u.cols) for u in uses for v in uses if u.group == v.group)
    direct = sum(u.T * (u.cols if u.kind == "gather" else u.rows * u.cols) for u in uses) + _prod(leaf.aval.shape)
    if compatible and (PREFER == "gram" or (PREFER is None and gram <= direct)):
        return LeafPlan("gram", tuple(uses))
    return LeafPlan("direct", tuple(uses), "" if compatible else "its uses overlap in different layouts")


def _frame(program: Program, leaf: Var, use: Use) -> np.ndarray:
    """The leaf's flat positions arranged as the use's (rows, cols) matrix."""
    idx = np.arange(_prod(leaf.aval.shape), dtype=np.int64).reshape(leaf.aval.shape)
    for k in use.chain:
        idx = _view(idx, program.eqns[k])
    eqn = program.eqns[use.eqn]
    if use.kind == "dot_general":
        (lc, rc), _ = eqn.params["dimension_numbers"]
        mine = list(lc if use.pos == 0 else rc)
        order = mine + [d for d in range(idx.ndim) if d not in mine]
    elif use.kind == "conv_general_dilated":
        spec = eqn.params["dimension_numbers"].rhs_spec
        order = [spec[1], *spec[2:], spec[0]]
    else:
        order = list(range(idx.ndim))
    return np.transpose(idx, order).reshape(use.rows, use.cols)


def _view(idx: np.ndarray, eqn: Any) -> np.ndarray:
    """A view equation applied to the leaf's positions, in NumPy (the analysis runs while tracing)."""
    name, p = eqn.primitive.name, eqn.params
    if name == "transpose":
        return np.transpose(idx, p["permutation"])
    if name == "reshape":
        if p.get("dimensions") is not None:
            idx = np.transpose(idx, p["dimensions"])
        return np.reshape(idx, p["new_sizes"])
    if name == "squeeze":
        return np.squeeze(idx, tuple(p["dimensions"]))
    if name == "expand_dims":
        return np.expand_dims(idx, tuple(p["dimensions"]))
    if name == "rev":
        return np.flip(idx, tuple(p["dimensions"]))
    strides = p.get("strides") or (1,) * idx.ndim
    return idx[tuple(slice(a, b, c) for a, b, c in zip(p["start_indices"], p["limit_indices"], strides))]
