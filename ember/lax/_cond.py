"""The `cond` primitive: run one of several closed programs, chosen by an index.

``cond[branches, linear](index, *operands)``: `index` is an int32 scalar in ``[0, len(branches))``
(lax.cond and lax.switch convert and clamp it), every branch takes all the operands (the constants
of every branch, then the user's operands) and the branches return values of identical types.
`linear` marks the operands that are tangents, for the transpose rule.

Rules:
- eager: the chosen branch, evaluated by binding; generated code (jit) runs it compiled;
- jvp: each branch linearized (`linearize_program`); a primal cond computes the outputs and the
  residuals of every branch (zeros for the branches not taken), and a linear cond maps residuals
  and tangents to output tangents. Forward mode evaluates both; `linearize` stages only the second;
- transpose: a cond of the transposed linear branches, with the same index;
- vmap: an unbatched index batches every branch; a batched index evaluates every branch and
  selects per example (`select_n`), as in JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.core.ad import UndefinedPrimal, Zero, zeros
from ember.core.array import Array
from ember.core.batching import axis_rules
from ember.core.primitive import Primitive, result_place
from ember.core.transfer import _put
from ember.core.primitives.elementwise import select_n_p
from ember.errors import TransformError
from ember.transforms._programs import (
    Fn,
    batch_program,
    close_all,
    cotangents,
    linear_positions,
    linearize_program,
    run,
    transpose_program,
)
from ember.transforms.jit import raw_impls

__all__ = ["cond_p"]


class _Cond(Primitive):
    __slots__ = ()

    def eager(self, args: Sequence[Array], params: dict[str, Any]) -> list[Array]:
        branches = params["branches"]
        place = result_place(self.name, args)  # raises for operands on two devices, naming cond
        index = min(max(int(args[0]._concrete("cond")), 0), len(branches) - 1)
        # A branch's outputs that are constants (or come from uncommitted operands) join the operands' device.
        return [o if o._place is place else _put(o, place) for o in branches[index](*args[1:])]


cond_p = _Cond("cond", multiple_results=True)
cond_p.abstract_eval = lambda index, *avals, branches, linear: list(branches[0].out_avals)


def _bind(index: Any, consts: list, args: Sequence[Any], programs: list, linear: Sequence[bool], name: str) -> list:
    fns = tuple(Fn(p, f"{name}_{i}") for i, p in enumerate(programs))
    return cond_p.bind(index, *consts, *args, branches=fns, linear=(False,) * len(consts) + tuple(linear))


def _cond_raw(index: Any, *buffers: Any, branches: tuple[Fn, ...], linear: tuple) -> list:
    return run(branches[min(max(int(index), 0), len(branches) - 1)], buffers)  # a GPU index is read on the host


raw_impls[cond_p] = _cond_raw


# --- jvp: a primal cond with residuals, then a linear cond ------------------------------------------------


def _cond_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, branches: tuple[Fn, ...], linear: tuple):
    index, args = primals[0], list(primals[1:])
    nz = [type(t) is not Zero for t in tangents[1:]]
    n_out = len(branches[0].program.outvars)
    lins = [linearize_program(b.program, nz, name="lax.cond") for b in branches]
    union = [any(lin.out_nz[k] for lin in lins) for k in range(n_out)]
    lins = [lin if lin.out_nz == union else linearize_program(b.program, nz, union, "lax.cond")
            for lin, b in zip(lins, branches)]  # fmt: skip
    res_avals = [lin.res_avals for lin in lins]

    def primal_branch(i: int):
        def fn(*a: Any) -> list[Any]:
            outs = lins[i].primal(*a)
            res = []
            for j, avals in enumerate(res_avals):
                res.extend(outs[n_out:] if j == i else [zeros(av) for av in avals])
            return [*outs[:n_out], *res]

        return fn

    programs, consts = close_all([primal_branch(i) for i in range(len(lins))], [a.aval for a in args], "lax.cond")
    outs = _bind(index, consts, args, programs, [False] * len(args), "cond_fwd")
    primal_out, res = outs[:n_out], outs[n_out:]
    if not any(union):
        return primal_out, [Zero(o.aval) for o in primal_out]

    starts = [sum(len(r) for r in res_avals[:i]) for i in range(len(lins))]
    t_args = [t for t, z in zip(tangents[1:], nz) if z]

    def lin_branch(i: int):
        def fn(*a: Any) -> list[Any]:
            return lins[i].lin(*a[starts[i] : starts[i] + lins[i].n_res], *a[len(res) :])

        return fn

    in_avals = [*[r.aval for r in res], *[t.aval for t in t_args]]
    programs, consts = close_all([lin_branch(i) for i in range(len(lins))], in_avals, "lax.cond")
    t_outs = iter(_bind(index, consts, [*res, *t_args], programs, [False] * len(res) + [True] * len(t_args), "cond_lin"))
    return primal_out, [next(t_outs) if u else Zero(o.aval) for o, u in zip(primal_out, union)]


def _cond_transpose(cts: Sequence[Any], index: Any, *args: Any, branches: tuple[Fn, ...], linear: tuple) -> list:
    if type(index) is UndefinedPrimal:
        raise TransformError("lax.cond: cannot transpose with respect to the branch index")
    lin = linear_positions(args, linear)
    known = [a for a, is_lin in zip(args, lin) if not is_lin]
    ct_nz, ct_vals = cotangents(cts)
    transposed = [transpose_program(b.program, lin, ct_nz, "lax.cond") for b in branches]
    in_avals = [*[a.aval for a in known], *[c.aval for c in ct_vals]]
    programs, consts = close_all(transposed, in_avals, "lax.cond")
    outs = iter(_bind(index, consts, [*known, *ct_vals], programs, [False] * len(known) + [True] * len(ct_vals),
                      "cond_transpose"))  # fmt: skip
    result: list[Any] = [None]
    for a, is_lin in zip(args, lin):
        ct = next(outs) if is_lin else None
        result.append(ct if type(a) is UndefinedPrimal else None)
    return result


cond_p.jvp = _cond_jvp
cond_p.transpose = _cond_transpose


# --- vmap ------------------------------------------------------------------------------------------------


def _cond_batch(trace: Any, vals: Sequence[Any], dims: Sequence[Any], *, branches: tuple[Fn, ...], linear: tuple):
    from ember.transforms.vmap import BatchTracer

    index, idim, args, adims = vals[0], dims[0], list(vals[1:]), list(dims[1:])
    if idim is not None:
        # Every example may take another branch: compute them all and select per example.
        ins = [BatchTracer(trace, v, d) for v, d in zip(args, adims)]
        outs = [[trace.full_raise(o) for o in b(*ins)] for b in branches]
        which = BatchTracer(trace, index, idim)
        selected = [trace.full_raise(select_n_p.bind(which, *cases)) for cases in zip(*outs)]
        return [o.val for o in selected], [o.bdim for o in selected]
    first = [batch_program(b.program, trace, adims, name="lax.cond") for b in branches]
    n_out = len(branches[0].program.outvars)
    union = [any(d[k] is not None for _, d in first) for k in range(n_out)]
    closed = [c if [d is not None for d in ds] == union else batch_program(b.program, trace, adims, union, "lax.cond")[0]
              for (c, ds), b in zip(first, branches)]  # fmt: skip
    programs, consts = close_all(closed, [a.aval for a in args], "lax.cond")
    outs = _bind(index, consts, args, programs, linear, "cond_batched")
    return outs, [0 if u else None for u in union]


axis_rules[cond_p] = _cond_batch
