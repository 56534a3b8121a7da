"""Kernel fusion for the CUDA compiler: which equations run together in one generated kernel.

A GPU pays for every kernel launch (~5 µs from Python) and for every pass over memory, so chains of
elementwise equations run as ONE kernel that computes each element of its results from its inputs in
registers, and a chain that ends in a reduction (sum, max, min, prod) runs as one reduction kernel
whose map step is the chain. Unlike the NumPy backend's block loops (fusion.py), members may have
different shapes: an operand of a smaller shape broadcasts (NumPy-style, aligned on the right) into
the group's shape and is recomputed per element, which is what XLA's loop fusion does too.

`plan_groups` picks the groups:

1. a fusible equation (`c_source.fusible`) joins the open groups of its own shape that produced its
   operands, merging them; a group closes for new members once an equation outside it reads one of
   its values (so running the group at its last member's place computes everything before anyone
   reads it) — the rule of fusion.py;
2. a group (or lone fusible equation) all of whose values are read only by one later group of a larger
   shape they broadcast into, and none returned, moves into that group (recomputed per element);
3. sibling groups of one shape merge into one kernel with several results;
4. a fusible reduction whose operand a group hands out (read by nothing else) becomes that group's
   end; when the group hands out other values too, the reduction's kernel recomputes the equations
   its operand needs (elementwise work is cheap next to writing and reading the operand back);
5. a chain that reads nothing but a reduction's result becomes that kernel's post-map step.

Nothing here imports the core or CuPy: programs are read through their attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ember.backends.c_source import fusible, reduction_fusible
from ember.backends.fusion import same_shape_groups

__all__ = ["Group", "plan_groups"]


def _broadcasts(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    """Whether `small` broadcasts into `big` NumPy-style (aligned on the right)."""
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(small[::-1], big[::-1]))


class Group:
    """Equations run as one generated kernel, in place of equation `at` of the program. `eqns` in
    program order; `inputs`: the variables it reads from outside; `outvars`: the values it hands out
    (each of the group's `shape`); `reduction`: the reduction equation that ends `eqns`, or None (then
    the kernel is elementwise), and `post` the chain applied to each reduced value (reading nothing
    else). A reduction group hands out one value: the reduction's, or its chain's."""

    __slots__ = ("at", "eqns", "inputs", "outvars", "post", "reduction", "shape")

    def __init__(self, eqns: list[Any], inputs: list[Any], outvars: list[Any], shape: tuple[int, ...], at: int,
                 reduction: Any = None, post: list[Any] | None = None):  # fmt: skip
        self.eqns, self.inputs, self.outvars, self.shape, self.at = eqns, inputs, outvars, shape, at
        self.reduction, self.post = reduction, post or []

    def __repr__(self) -> str:
        kind = f"ending in {self.reduction.primitive.name}" if self.reduction is not None else "elementwise"
        return f"Group({len(self.eqns)} equations on {self.shape}, {kind})"


# Equations that alone are better left to the backend: a view needs no kernel, nor an identity.
_ALONE_NOT_WORTH = frozenset(("broadcast_in_dim", "stop_gradient"))


def plan_groups(program: Any, is_fusible: Callable[[Any], bool] = fusible) -> list[Any]:
    """The program's equations in order, each group (of one or more equations) replaced by one `Group`
    at the place of its last member (a reduction group: of its reduction).

    >>> f = lambda x, y: enp.sum(enp.tanh(x * 2.0 + y), axis=1)
    >>> program = ember.jit(f).lower(enp.ones((2, 3)), enp.ones(3)).ir.program
    >>> plan_groups(program)
    [Group(3 equations on (2, 3), ending in reduce_sum)]
    """
    eqns = program.eqns
    readers: dict[Any, set[int]] = {}
    for i, eqn in enumerate(eqns):
        for v in eqn.inputs:
            if type(v).__name__ == "Var":
                readers.setdefault(v, set()).add(i)
    returned = {v for v in program.outvars if type(v).__name__ == "Var"}

    # 1. same-shape groups, as fusion.py
    members = same_shape_groups(eqns, lambda eqn: eqn.outvars[0].aval.shape if is_fusible(eqn) else None)
    group_of: dict[int, int] = {}  # equation -> group id
    for gid, m in members.items():
        for i in m:
            group_of[i] = gid

    def shape_of(gid: int) -> tuple[int, ...]:
        outs = handed_out(gid)
        return outs[0].aval.shape if outs else ()

    served: dict[Any, set[int]] = {}  # variable -> readers that compute it themselves (step 4)

    def handed_out(gid: int) -> list[Any]:
        inside = set(members[gid])
        return [eqns[i].outvars[0] for i in sorted(members[gid]) if eqns[i].outvars[0] in returned
                or readers.get(eqns[i].outvars[0], set()) - inside - served.get(eqns[i].outvars[0], set())]  # fmt: skip

    # 2. small groups whose values only a larger group reads move into it (latest first: chains fold up)
    changed = True
    while changed:
        changed = False
        for gid in sorted(members, key=lambda g: -max(members[g])):
            outs = handed_out(gid)
            if not outs:
                continue
            shape = shape_of(gid)
            targets = {group_of.get(r) for v in outs for r in readers.get(v, ())}
            if len(targets) != 1 or None in targets or any(v in returned for v in outs):
                continue
            (target,) = targets
            big = shape_of(target) if handed_out(target) else eqns[max(members[target])].outvars[0].aval.shape
            if target == gid or big == shape or not _broadcasts(shape, big):
                continue
            members[target] = sorted(members[target] + members.pop(gid))
            for i in members[target]:
                group_of[i] = target
            changed = True
            break

    defined_at = {v: i for i, eqn in enumerate(eqns) for v in eqn.outvars}
    ends: dict[int, int] = {}  # group id -> index of its final reduction (step 4)
    ended: dict[int, int] = {}  # ... and back
    post_at: dict[int, int] = {}  # reduction index -> where it runs with the chain after it (step 5)
    post_of: dict[int, int] = {}  # equation of such a chain -> its reduction's index

    # 3. sibling groups of one shape merge (one launch, inputs read once): the earlier one runs at the
    # later one's place when nothing reads its values in between, or else the later one runs early, at
    # the earlier one's place, when all it reads from outside is computed by then
    place: dict[int, int] = {}  # group id -> where it runs, when not at its last member

    def runs_at(gid: int) -> int:
        if gid in ends:
            return post_at.get(ends[gid], ends[gid])
        return place.get(gid, max(members[gid]))

    def code_at(i: int) -> int:
        """Where the code of equation i runs (its group's place)."""
        if i in post_of or i in post_at:
            return post_at[post_of.get(i, i)]
        g = group_of.get(i, ended.get(i))
        return runs_at(g) if g in members else i

    order = sorted((g for g in members if g not in ends), key=runs_at)
    for k, a in enumerate(order):
        if a not in members or not handed_out(a):
            continue
        shape = shape_of(a)
        for b in order[k + 1 :]:
            if b not in members or not handed_out(b) or shape_of(b) != shape:
                continue
            start, end = runs_at(a), runs_at(b)
            both = set(members[a] + members[b])
            if end < start:
                continue
            if any(code_at(r) <= end for v in handed_out(a) for r in readers.get(v, ()) if r not in both):
                inside = {eqns[i].outvars[0] for i in both}
                outside = [v for i in members[b] for v in eqns[i].inputs if v not in inside and v in defined_at]
                if any(code_at(defined_at[v]) >= start for v in outside):
                    continue
                place[b] = start
            members[b] = sorted(members[b] + members.pop(a))
            for i in members[b]:
                group_of[i] = b
            break

    # 4. a reduction ends the group that computes its operand
    for i, eqn in enumerate(eqns):
        if i in group_of or not reduction_fusible(eqn):
            continue
        v = eqn.inputs[0]
        gid = group_of.get(defined_at.get(v, -1))
        if gid is None or gid in ends or readers[v] - set(members[gid]) != {i} or v in returned:
            continue
        outs = handed_out(gid)
        if outs == [v]:
            ends[gid] = i
        elif v in outs:  # the group hands out more: the reduction's kernel recomputes what v needs
            others = [w for w in outs if w is not v]
            mine, rest = _cone(eqns, members[gid], [v]), _cone(eqns, members[gid], others)
            new = -1 - i  # (ids of step 1 are equation indices)
            members[new], members[gid] = sorted(mine), sorted(rest)
            for k in mine - rest:
                group_of[k] = new
            served[v] = {i}  # the reduction no longer reads v from the group
            ends[new] = i

    # 5. a chain that reads nothing but a reduction's result (a mean's division, a norm's sqrt) is the
    # reduction kernel's last step, on each reduced value
    posts: dict[int, int] = {}  # reduction index -> group id of its chain (taken out of `members`)
    post_out: dict[int, Any] = {}  # ... and the chain's result
    ended.update({i: g for g, i in ends.items()})
    for i, eqn in enumerate(eqns):
        if i in group_of or not reduction_fusible(eqn) or eqn.outvars[0] in returned:
            continue
        r = eqn.outvars[0]
        chain = {group_of.get(k) for k in readers.get(r, ())}
        if len(chain) != 1 or None in chain:
            continue
        (gid,) = chain
        inside = {eqns[k].outvars[0] for k in members[gid]}
        reads = {v for k in members[gid] for v in eqns[k].inputs if type(v).__name__ == "Var" and v not in inside}
        outs = handed_out(gid)
        if gid in ends or reads != {r} or len(outs) != 1 or outs[0].aval.shape != r.aval.shape:
            continue
        if any(k in members[g] for g in members if g != gid for k in readers[r]):
            continue  # a reader recomputed in another group (step 4) needs r itself
        if i not in ended and len(members[gid]) == 1 and eqns[members[gid][0]].primitive.name in _ALONE_NOT_WORTH:
            continue
        posts[i] = gid
        post_out[i] = outs[0]
    post_members = {i: members.pop(g) for i, g in posts.items()}
    post_at.update({i: max(m) for i, m in post_members.items()})
    post_of.update({k: r for r, m in post_members.items() for k in m})

    items: list[Any] = []
    at = {runs_at(gid): gid for gid in members}
    post_runs = {where: i for i, where in post_at.items()}  # a reduction with a chain after it runs there
    reductions = set(ends.values()) | set(posts)
    for i, eqn in enumerate(eqns):
        if i in post_runs:
            r = post_runs[i]
            pre = [eqns[k] for k in sorted(members[ended[r]])] if r in ended else []
            post = [eqns[k] for k in post_members[r]]
            items.append(_group(pre, [post_out[r]], i, eqns[r], post))
        if i in at and not (at[i] in ends and ends[at[i]] in posts):
            gid = at[i]
            group = [eqns[k] for k in sorted(members[gid])]
            if gid in ends:
                items.append(_group(group, [eqn.outvars[0]], i, eqn))
            elif len(group) == 1 and group[0].primitive.name in _ALONE_NOT_WORTH:
                items.append(group[0])
            else:
                items.append(_group(group, handed_out(gid), i))
        elif i not in group_of and i not in reductions and i not in post_runs:
            items.append(eqn)
    return items


def _cone(eqns: Sequence[Any], members: list[int], roots: list[Any]) -> set[int]:
    """The members (equation indices) that compute `roots`."""
    made_by = {eqns[k].outvars[0]: k for k in members}
    need: set[int] = set()
    stack = list(roots)
    while stack:
        k = made_by.get(stack.pop())
        if k is not None and k not in need:
            need.add(k)
            stack.extend(eqns[k].inputs)
    return need


def _group(eqns: list[Any], outvars: list[Any], at: int, reduction: Any = None, post: list[Any] | None = None) -> Group:
    produced = {e.outvars[0] for e in eqns}
    inputs: list[Any] = []
    for eqn in (*eqns, *([reduction] if reduction is not None else [])):
        for v in eqn.inputs:
            if v not in produced and type(v).__name__ == "Var" and v not in inputs:
                inputs.append(v)
    if reduction is not None:
        return Group(eqns, inputs, outvars, reduction.inputs[0].aval.shape, at, reduction, post or [])
    return Group(eqns, inputs, outvars, outvars[0].aval.shape if outvars else eqns[-1].outvars[0].aval.shape, at)
