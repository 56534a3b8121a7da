"""The `while` primitive and its reverse-mode companions.

``while[cond, body, n_cc, n_bc](*cond_consts, *body_consts, *init)``: `cond` maps (cond_consts,
carry) to a bool scalar, `body` maps (body_consts, carry) to the next carry.

Unlike JAX, a while loop is reverse-differentiable: its trip count is known only when it runs, so
the residuals of each iteration are kept in a Python list (the *tape*) and the backward iterations
run over it in reverse. Three primitives share the work:

- ``while``: the loop. Its jvp rule gives the primal outputs (a `while`, or, on concrete values, the
  loop run at once while filling a tape) and the output tangents as `while_lin`;
- ``while_lin[...](*primals, *tangents)``: the output tangents, linear in `tangents`. Evaluated, it
  runs the tangent recurrence over the tape (or, with no tape, the loop carrying tangents); its
  transpose is `while_vjp`;
- ``while_vjp[...](*primals, *cotangents)``: the input cotangents: the loop forward keeping each
  iteration's residuals (unless the tape is already there), then the transposed linear body from
  the last iteration to the first.

Second derivatives: on concrete values `while_vjp`'s jvp unrolls the loop (so reverse-over-reverse
works too); on traced ones (under jit) it is the vjp of the loop carrying tangents, another
`while_vjp` (forward-over-reverse, e.g. `hessian`; reverse-over-reverse raises a clear error).

Under vmap a batched predicate makes a masked loop that runs until every example is done and keeps
the carries of the examples that are (as in JAX); `while_vjp` batches to that loop's vjp.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ember.core.ad import UndefinedPrimal, Zero, add_tangents, instantiate, zeros
from ember.core.array import Array
from ember.core.batching import axis_rules, bdim_to_front
from ember.core.primitive import Primitive, result_place
from ember.core.primitives.elementwise import select_n_p
from ember.core.primitives.reduction import reduce_or_p
from ember.core.primitives.structural import broadcast_in_dim_p
from ember.errors import TransformError
from ember.transforms._programs import (
    Closed,
    Fn,
    batch_fixed_point,
    batch_program,
    buffers,
    close,
    concrete,
    linearize_program,
    run,
    transpose_program,
    wrap_all,
)
from ember.transforms._compile import active_backend, on_place, run_raw
from ember.transforms.jit import raw_impls
from ember.transforms.jvp import jvp_flat

__all__ = ["while_lin_p", "while_p", "while_vjp_p"]


class _RunsRaw(Primitive):
    """Evaluated eagerly by its raw implementation (the one generated code calls)."""

    __slots__ = ()

    def eager(self, args: Sequence[Array], params: dict[str, Any]) -> list[Array]:
        place = result_place(self.name, args)  # the results stay on the operands' device, as a primitive's
        outs = run_raw(self, [on_place(a, place) for a in args], params, place.backend)
        return wrap_all(outs, self.abstract_eval(*[a.aval for a in args], **params), place)


while_p = _RunsRaw("while", multiple_results=True)
while_p.abstract_eval = lambda *avals, cond, body, n_cc, n_bc: list(body.out_avals)


def _split(seq: Sequence[Any], *sizes: int) -> list[list[Any]]:
    out, start = [], 0
    for n in sizes:
        out.append(list(seq[start : start + n]))
        start += n
    out.append(list(seq[start:]))
    return out


def _while_raw(*bufs: Any, cond: Fn, body: Fn, n_cc: int, n_bc: int) -> list:
    cc, bc, carry = _split(bufs, n_cc, n_bc)
    while run(cond, [*cc, *carry])[0]:  # on a GPU, reading the predicate copies it to the host: a sync per step
        carry = run(body, [*bc, *carry])
    return carry


raw_impls[while_p] = _while_raw


# --- what reverse mode derives from a body ---------------------------------------------------------------


class _Runnable(NamedTuple):
    """A derived program with concrete constants, run on raw buffers."""

    fn: Fn
    consts: list[Any]
    closed: Closed

    @classmethod
    def of(cls, closed: Closed, name: str) -> _Runnable:
        return cls(closed.fn(name), buffers(closed.consts), closed)

    def __call__(self, bufs: Sequence[Any]) -> list[np.ndarray]:
        return run(self.fn, [*self.consts, *bufs])


class _WhileAD:
    """A body's linearization for tangents of the body constants `nz_bc` and carries `nz_carry`:
    `fwd` (bc, carry) -> (carry, residuals); `lin` (residuals, t_bc, t_carry) -> t_carry;
    `lin_t` (residuals, ct_carry) -> (ct_bc, ct_carry); `jvp_body` (bc, t_bc, carry, t_carry) ->
    (carry, t_carry), all for the nonzero tangents only."""

    def __init__(self, body: Fn, n_bc: int, nz_bc: tuple, nz_carry: tuple):
        self.n_bc, self.nz_bc, self.nz_carry = n_bc, nz_bc, nz_carry
        self.jvp_fn: Fn | None = None  # jvp_body as a program equations hold (see _jvp_loop)
        n_carry = len(nz_carry)
        lp = linearize_program(body.program, [*nz_bc, *nz_carry], nz_carry, "lax.while_loop")
        self.n_res, self.n_carry = lp.n_res, n_carry
        self.fwd = _Runnable.of(lp.primal, f"{body.name}_fwd")
        self.lin = _Runnable.of(lp.lin, f"{body.name}_lin")
        n_lin_in = len(lp.lin.program.invars)
        n_t = sum(nz_bc) + sum(nz_carry)
        lin_mask = [False] * (n_lin_in - n_t) + [True] * n_t
        lin_t = transpose_program(lp.lin.program, lin_mask, [True] * sum(nz_carry), "lax.while_loop")
        # The transpose's known inputs are the linear program's constants, then the residuals.
        self.lin_t = _Runnable.of(Closed(lin_t.program, [*lin_t.consts, *lp.lin.consts]), f"{body.name}_transpose")
        self.res_avals = lp.res_avals
        n_t_bc = sum(nz_bc)

        def jvp_body(*a: Any) -> list[Any]:
            bc, t_bc, carry, t_carry = _split(a, n_bc, n_t_bc, n_carry)
            outs = lp.primal(*bc, *carry)
            return [*outs[:n_carry], *lp.lin(*outs[n_carry:], *t_bc, *t_carry)]

        avals = body.in_avals
        t_avals = [a for a, z in zip(avals, (*nz_bc, *nz_carry)) if z]
        self.jvp_body = close(jvp_body, [*avals[:n_bc], *t_avals[:n_t_bc], *avals[n_bc:], *t_avals[n_t_bc:]],
                              "lax.while_loop")  # fmt: skip

    def tape(self, cond: Fn, cc: Sequence[Any], bc: Sequence[Any], carry: Sequence[Any]) -> tuple[list, list]:
        """Run the loop on raw buffers keeping each iteration's residuals: (final carry, tape)."""
        steps = []
        carry = list(carry)
        while run(cond, [*cc, *carry])[0]:
            outs = self.fwd([*bc, *carry])
            carry = outs[: self.n_carry]
            steps.append(outs[self.n_carry :])
        return carry, steps


def _while_ad(body: Fn, n_bc: int, nz_bc: Sequence[bool], nz_carry: Sequence[bool]) -> _WhileAD:
    """The body's linearization, with the carries that get a tangent grown to a fixed point."""
    nz_bc, nz_carry = tuple(nz_bc), tuple(nz_carry)
    key = ("while_ad", nz_bc, nz_carry)
    if key in body.cache:
        return body.cache[key]
    carry = nz_carry
    while True:
        out_nz = linearize_program(body.program, [*nz_bc, *carry], name="lax.while_loop").out_nz
        grown = tuple(c or o for c, o in zip(carry, out_nz))
        if grown == carry:
            break
        carry = grown
    ad = body.cache.get(("while_ad", nz_bc, carry)) or _WhileAD(body, n_bc, nz_bc, carry)
    body.cache[key] = body.cache[("while_ad", nz_bc, carry)] = ad
    return ad


class Tape:
    """Residuals of each iteration of a loop run on concrete values, kept for its tangents and cotangents."""

    __slots__ = ("steps",)

    def __init__(self, steps: list | None = None):
        self.steps = steps

    def __repr__(self) -> str:
        return "<no tape>" if self.steps is None else f"<tape of {len(self.steps)} iterations>"


# --- jvp of while -------------------------------------------------------------------------------------


def _while_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, cond: Fn, body: Fn, n_cc: int, n_bc: int):
    cc, bc, init = _split(primals, n_cc, n_bc)
    _, t_bc, t_init = _split(tangents, n_cc, n_bc)
    nz_bc = [type(t) is not Zero for t in t_bc]
    nz_init = [type(t) is not Zero for t in t_init]
    params = {"cond": cond, "body": body, "n_cc": n_cc, "n_bc": n_bc}
    if not any(nz_bc) and not any(nz_init):
        outs = while_p.bind(*primals, **params)
        return outs, [Zero(o.aval) for o in outs]
    ad = _while_ad(body, n_bc, nz_bc, nz_init)
    tape = Tape()
    if concrete(primals):  # run the loop now, keeping its residuals for the tangents
        place = result_place(while_p.name, primals)
        carry, tape.steps = ad.tape(cond, buffers(cc), buffers(bc), buffers(init))
        outs = wrap_all(carry, body.out_avals, place)
    else:
        outs = while_p.bind(*primals, **params)
    t_args = [t for t, z in zip(t_bc, nz_bc) if z] + [instantiate(t) for t, z in zip(t_init, ad.nz_carry) if z]
    t_outs = iter(while_lin_p.bind(*primals, *t_args, nz_bc=ad.nz_bc, nz_carry=ad.nz_carry, tape=tape, **params))
    return outs, [next(t_outs) if z else Zero(o.aval) for o, z in zip(outs, ad.nz_carry)]


while_p.jvp = _while_jvp


# --- while_lin: the output tangents ---------------------------------------------------------------------


def _lin_avals(*avals: Any, body: Fn, nz_carry: tuple, **_: Any) -> list:
    return [a for a, z in zip(body.out_avals, nz_carry) if z]


while_lin_p = _RunsRaw("while_lin", multiple_results=True)
while_lin_p.abstract_eval = _lin_avals


def _lin_split(args: Sequence[Any], n_cc: int, n_bc: int, body: Fn, nz_bc: tuple) -> list[list[Any]]:
    """(cond consts, body consts, init, body-const tangents, carry tangents)."""
    return _split(args, n_cc, n_bc, len(body.out_avals), sum(nz_bc))


def _while_lin_raw(*bufs: Any, cond: Fn, body: Fn, n_cc: int, n_bc: int, nz_bc: tuple, nz_carry: tuple, tape: Tape):
    cc, bc, carry, t_bc, t = _lin_split(bufs, n_cc, n_bc, body, nz_bc)
    ad = _while_ad(body, n_bc, nz_bc, nz_carry)
    if tape.steps is not None:
        for res in tape.steps:
            t = ad.lin([*res, *t_bc, *t])
        return t
    jvp_body = _Runnable.of(ad.jvp_body, f"{body.name}_jvp")
    n = len(carry)
    while run(cond, [*cc, *carry])[0]:
        outs = jvp_body([*bc, *t_bc, *carry, *t])
        carry, t = outs[:n], outs[n:]
    return t


raw_impls[while_lin_p] = _while_lin_raw


def _jvp_loop(cond: Fn, body: Fn, n_cc: int, ad: _WhileAD) -> tuple[Fn, list, Fn, list]:
    """The loop carrying (carry, the tangents of `ad.nz_carry`): its cond (the original one, ignoring
    the tangents) and its body (`ad.jvp_body`), each with its constants. Cached, so that what rules
    derive from them is too."""
    key = ("jvp_cond", ad.nz_carry)
    if key not in cond.cache:
        n = len(ad.nz_carry)
        t_avals = [a for a, z in zip(body.out_avals, ad.nz_carry) if z]
        cond2 = close(lambda *a: cond(*a[: n_cc + n]), [*cond.in_avals, *t_avals], "lax.while_loop")
        cond.cache[key] = (cond2.fn(f"{cond.name}_jvp"), cond2.consts)
    if ad.jvp_fn is None:
        ad.jvp_fn = ad.jvp_body.fn(f"{body.name}_jvp")
    return (*cond.cache[key], ad.jvp_fn, ad.jvp_body.consts)


def _while_lin_as_loop(*args: Any, cond: Fn, body: Fn, n_cc: int, n_bc: int, nz_bc: tuple, nz_carry: tuple, **_: Any):
    """while_lin written as a `while` carrying (carry, tangents): what its jvp and vmap rules transform."""
    cc, bc, init, t_bc, t_carry = _lin_split(args, n_cc, n_bc, body, nz_bc)
    cond2, cond2_consts, jb, jb_consts = _jvp_loop(cond, body, n_cc, _while_ad(body, n_bc, nz_bc, nz_carry))
    outs = while_p.bind(*cond2_consts, *cc, *jb_consts, *bc, *t_bc, *init, *t_carry, cond=cond2, body=jb,
                        n_cc=len(cond2_consts) + n_cc, n_bc=len(jb_consts) + n_bc + len(t_bc))  # fmt: skip
    return outs[len(init) :]


def _while_lin_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any):
    return jvp_flat(lambda *a: _while_lin_as_loop(*a, **params), primals, tangents)


def _while_lin_transpose(cts: Sequence[Any], *args: Any, cond: Fn, body: Fn, n_cc: int, n_bc: int, nz_bc: tuple,
                         nz_carry: tuple, tape: Tape) -> list:  # fmt: skip
    n_primal = n_cc + n_bc + len(body.out_avals)
    if any(type(a) is UndefinedPrimal for a in args[:n_primal]):
        raise TransformError("lax.while_loop: internal error: while_lin is linear in its tangents only")
    cts = [instantiate(c) for c in cts]
    ct_in = while_vjp_p.bind(*args[:n_primal], *cts, cond=cond, body=body, n_cc=n_cc, n_bc=n_bc, nz_bc=nz_bc,
                             nz_carry=nz_carry, tape=tape)  # fmt: skip
    return [None] * n_primal + [ct if type(a) is UndefinedPrimal else None for a, ct in zip(args[n_primal:], ct_in)]


def _while_lin_batch(trace: Any, vals: Sequence[Any], dims: Sequence[Any], **params: Any):
    from ember.transforms.vmap import BatchTracer

    n_primal = params["n_cc"] + params["n_bc"] + len(params["body"].out_avals)
    tape, ins = params["tape"], [BatchTracer(trace, v, d) for v, d in zip(vals, dims)]
    if tape.steps is not None and all(d is None for d in dims[:n_primal]):
        # Only the tangents differ between examples: the recurrence over the tape, batched.
        _, _, _, t_bc, t = _lin_split(ins, params["n_cc"], params["n_bc"], params["body"], params["nz_bc"])
        ad = _while_ad(params["body"], params["n_bc"], params["nz_bc"], params["nz_carry"])
        for res in tape.steps:
            t = ad.lin.closed(*wrap_all(res, ad.res_avals), *t_bc, *t)
        outs = [trace.full_raise(o) for o in t]
    else:
        outs = [trace.full_raise(o) for o in _while_lin_as_loop(*ins, **params)]
    return [o.val for o in outs], [o.bdim for o in outs]


while_lin_p.jvp = _while_lin_jvp
while_lin_p.transpose = _while_lin_transpose
axis_rules[while_lin_p] = _while_lin_batch


# --- while_vjp: the input cotangents ---------------------------------------------------------------------


def _vjp_avals(*avals: Any, body: Fn, n_bc: int, nz_bc: tuple, nz_carry: tuple, **_: Any) -> list:
    ins = body.in_avals
    return [a for a, z in zip(ins, (*nz_bc, *nz_carry)) if z]


while_vjp_p = _RunsRaw("while_vjp", multiple_results=True)
while_vjp_p.abstract_eval = _vjp_avals


def _while_vjp_raw(*bufs: Any, cond: Fn, body: Fn, n_cc: int, n_bc: int, nz_bc: tuple, nz_carry: tuple, tape: Tape):
    cc, bc, init, cts = _split(bufs, n_cc, n_bc, len(body.out_avals))
    ad = _while_ad(body, n_bc, nz_bc, nz_carry)
    steps = tape.steps if tape.steps is not None else ad.tape(cond, cc, bc, init)[1]
    k = sum(nz_bc)
    xp = active_backend().xp  # the running program's device
    ct_bc = [xp.zeros(a.shape, a.dtype) for a, z in zip(body.in_avals[:n_bc], nz_bc) if z]
    ct = list(cts)
    for res in reversed(steps):
        outs = ad.lin_t([*res, *ct])
        ct_bc = [xp.add(a, b, dtype=a.dtype) for a, b in zip(ct_bc, outs[:k])]
        ct = outs[k:]
    return [*ct_bc, *ct]


raw_impls[while_vjp_p] = _while_vjp_raw


def _while_vjp_by_binding(*args: Any, cond: Fn, body: Fn, n_cc: int, n_bc: int, nz_bc: tuple, nz_carry: tuple,
                          tape: Tape) -> list:  # fmt: skip
    """while_vjp unrolled: Python control flow on concrete predicates over bound primitives, which every
    transform can take further (reverse-over-reverse included)."""
    cc, bc, carry, ct = _split(args, n_cc, n_bc, len(body.out_avals))
    ad = _while_ad(body, n_bc, nz_bc, nz_carry)
    fwd, lin_t = ad.fwd.closed, ad.lin_t.closed
    steps = []
    while bool(cond(*cc, *carry)[0]):
        outs = fwd(*bc, *carry)
        carry = outs[: ad.n_carry]
        steps.append(outs[ad.n_carry :])
    k = sum(nz_bc)
    ct_bc: list[Any] = [None] * k
    for res in reversed(steps):
        outs = lin_t(*res, *ct)
        ct_bc = [add_tangents(a, b) for a, b in zip(ct_bc, outs[:k])]
        ct = outs[k:]
    avals = [a for a, z in zip(body.in_avals[:n_bc], nz_bc) if z]
    return [zeros(a) if c is None else c for c, a in zip(ct_bc, avals)] + list(ct)


def _while_vjp_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, cond: Fn, body: Fn, n_cc: int, n_bc: int,
                   nz_bc: tuple, nz_carry: tuple, tape: Tape):  # fmt: skip
    params = {"cond": cond, "body": body, "n_cc": n_cc, "n_bc": n_bc, "nz_bc": nz_bc, "nz_carry": nz_carry}
    if concrete(primals):
        # The trip count is known: unroll, so that reverse mode can differentiate this again too.
        return jvp_flat(lambda *a: _while_vjp_by_binding(*a, tape=tape, **params), primals, tangents)
    # while_vjp(p, ct) = J(p)^T ct for the loop F. Its tangent, J^T t_ct + (d/dp J(p)^T ct) t_p, is (the
    # second derivatives being symmetric) the vjp with respect to p of G(p, t_p) = (F(p), J(p) t_p), the
    # loop carrying tangents, at cotangents (t_ct, ct): another while_vjp, which needs no trip count.
    out = while_vjp_p.bind(*primals, tape=tape, **params)
    n_carry = len(body.out_avals)
    cc, bc, init, cts = _split(primals, n_cc, n_bc, n_carry)
    _, t_bc, t_init, t_cts = _split(tangents, n_cc, n_bc, n_carry)
    ad_t = _while_ad(body, n_bc, [type(t) is not Zero for t in t_bc], [type(t) is not Zero for t in t_init])
    cond2, cond2_consts, jb, jb_consts = _jvp_loop(cond, body, n_cc, ad_t)
    tp_bc = [t for t, z in zip(t_bc, ad_t.nz_bc) if z]
    tp_carry = [instantiate(t) for t, z in zip(t_init, ad_t.nz_carry) if z]
    g_consts = [*jb_consts, *bc, *tp_bc]
    g_nz_bc = (False,) * len(jb_consts) + nz_bc + (False,) * len(tp_bc)
    g_ad = _while_ad(jb, len(g_consts), g_nz_bc, nz_carry + (True,) * len(tp_carry))
    # Cotangents of G's outputs: the carry's are the tangents of `cts`; its tangents' are `cts`.
    ct_of = dict(zip([k for k, z in enumerate(nz_carry) if z], zip(cts, t_cts)))
    avals = body.out_avals
    g_cts = [instantiate(ct_of[k][1]) if k in ct_of else zeros(avals[k])
             for k in range(n_carry) if g_ad.nz_carry[k]]  # fmt: skip
    t_positions = [k for k, z in enumerate(ad_t.nz_carry) if z]
    g_cts += [ct_of[k][0] if k in ct_of else zeros(avals[k]) for k in t_positions]
    outs = while_vjp_p.bind(*cond2_consts, *cc, *g_consts, *init, *tp_carry, *g_cts, cond=cond2, body=jb,
                            n_cc=len(cond2_consts) + n_cc, n_bc=len(g_consts), nz_bc=g_ad.nz_bc,
                            nz_carry=g_ad.nz_carry, tape=Tape())  # fmt: skip
    k_bc = sum(nz_bc)
    carry_cts = iter(outs[k_bc:])
    t_out = list(outs[:k_bc])
    for k in range(n_carry):
        ct = next(carry_cts) if g_ad.nz_carry[k] else None
        if nz_carry[k]:
            t_out.append(ct)
    return out, t_out


def _while_vjp_batch(trace: Any, vals: Sequence[Any], dims: Sequence[Any], *, cond: Fn, body: Fn, n_cc: int, n_bc: int,
                     nz_bc: tuple, nz_carry: tuple, tape: Tape):  # fmt: skip
    from ember.transforms.vmap import BatchTracer

    n_carry = len(body.out_avals)
    n_primal = n_cc + n_bc + n_carry
    size = trace.axis_size
    if tape.steps is not None and all(d is None for d in dims[:n_primal]):
        # Only the cotangents differ between examples (jacrev): the backward recurrence, batched.
        ins = [BatchTracer(trace, v, d) for v, d in zip(vals, dims)]
        ct = ins[n_primal:]
        ad = _while_ad(body, n_bc, nz_bc, nz_carry)
        lin_t, res_avals = ad.lin_t.closed, ad.res_avals
        k = sum(nz_bc)
        ct_bc: list[Any] = [None] * k
        for res in reversed(tape.steps):
            outs = lin_t(*wrap_all(res, res_avals), *ct)
            ct_bc = [add_tangents(a, b) for a, b in zip(ct_bc, outs[:k])]
            ct = outs[k:]
        avals = [a for a, z in zip(body.in_avals[:n_bc], nz_bc) if z]
        outs = [trace.full_raise(zeros(a) if c is None else c) for c, a in zip(ct_bc, avals)] + [trace.full_raise(c) for c in ct]
        return [o.val for o in outs], [o.bdim for o in outs]
    # Every example gets its own cotangents, also for shared inputs: give every operand the batch axis,
    # and take the vjp of the masked loop that runs every example at once.
    vals = [bdim_to_front(v, d, size) for v, d in zip(vals, dims)]
    cc, bc, init, cts = _split(vals, n_cc, n_bc, n_carry)
    cond2, body2, _ = _batched_loop(cond, body, n_cc, n_bc, trace, [0] * n_cc, [0] * n_bc, [True] * n_carry, masked=True)
    n_extra = len(body2.consts) + n_cc  # the masked body also takes the cond's constants
    outs = while_vjp_p.bind(*cond2.consts, *cc, *body2.consts, *cc, *bc, *init, *cts, cond=cond2.fn(f"{cond.name}_batched"),
                            body=body2.fn(f"{body.name}_masked"), n_cc=len(cond2.consts) + n_cc, n_bc=n_extra + n_bc,
                            nz_bc=(False,) * n_extra + nz_bc, nz_carry=nz_carry, tape=Tape())  # fmt: skip
    return outs, [0] * len(outs)


def _while_vjp_transpose(cts: Sequence[Any], *args: Any, **params: Any) -> list:
    raise TransformError(
        "lax.while_loop: reverse-mode differentiation of a while_loop's gradient (grad of grad) needs the loop's trip "
        "count while tracing, which jit does not know; take this derivative outside jit, use forward-over-reverse "
        "(ember.hessian, jacfwd(grad(f))), or lax.fori_loop with static bounds / lax.scan"
    )


while_vjp_p.jvp = _while_vjp_jvp
while_vjp_p.transpose = _while_vjp_transpose
axis_rules[while_vjp_p] = _while_vjp_batch


# --- vmap of while ------------------------------------------------------------------------------------


def _batched_loop(cond: Fn, body: Fn, n_cc: int, n_bc: int, trace: Any, cc_dims: Sequence[Any], bc_dims: Sequence[Any],
                  carry_mapped: Sequence[bool], masked: bool) -> tuple[Closed, Closed, list[bool]]:  # fmt: skip
    """The cond and body of a loop over batched values. Unmasked: the batched cond and body (the
    predicate is the same for every example). Masked: the predicate differs, so the loop runs while
    any example's holds, and the body keeps the carries of the examples whose predicate fails; the
    masked body takes the cond's constants before its own."""
    size = trace.axis_size
    carry_dims = [0 if m else None for m in carry_mapped]
    bcond, _ = batch_program(cond.program, trace, [*cc_dims, *carry_dims], [masked], "lax.while_loop")
    bbody, _ = batch_program(body.program, trace, [*bc_dims, *carry_dims], list(carry_mapped), "lax.while_loop")
    if not masked:
        return bcond, bbody, list(carry_mapped)
    cc_avals = [v.aval for v in bcond.program.invars[len(bcond.consts) : len(bcond.consts) + n_cc]]
    bc_avals = [v.aval for v in bbody.program.invars[len(bbody.consts) : len(bbody.consts) + n_bc]]
    carry_avals = [v.aval for v in bbody.program.invars[len(bbody.consts) + n_bc :]]

    def any_cond(*a: Any) -> list[Any]:
        return [reduce_or_p.bind(bcond(*a)[0], axes=(0,))]

    def masked_body(*a: Any) -> list[Any]:
        cc, bc, carry = _split(a, n_cc, n_bc)
        pred = bcond(*cc, *carry)[0]
        new = bbody(*bc, *carry)
        out = []
        for old, nxt in zip(carry, new):
            which = pred if nxt.ndim == 1 else broadcast_in_dim_p.bind(pred, shape=nxt.shape, broadcast_dimensions=(0,))
            out.append(select_n_p.bind(which, old, nxt))
        return out

    del size
    cond2 = close(any_cond, [*cc_avals, *carry_avals], "lax.while_loop")
    body2 = close(masked_body, [*cc_avals, *bc_avals, *carry_avals], "lax.while_loop")
    return cond2, body2, [True] * len(carry_mapped)


def _while_batch(trace: Any, vals: Sequence[Any], dims: Sequence[Any], *, cond: Fn, body: Fn, n_cc: int, n_bc: int):
    cc_dims, bc_dims, carry_dims = _split(dims, n_cc, n_bc)
    cc, bc, init = _split(vals, n_cc, n_bc)
    mapped = batch_fixed_point(body.program, trace, bc_dims, [d is not None for d in carry_dims], name="lax.while_loop")
    _, pred_dims = batch_program(cond.program, trace, [*cc_dims, *[0 if m else None for m in mapped]],
                                 name="lax.while_loop")  # fmt: skip
    masked = pred_dims[0] is not None
    if masked:
        mapped = [True] * len(mapped)
    cond2, body2, mapped = _batched_loop(cond, body, n_cc, n_bc, trace, cc_dims, bc_dims, mapped, masked)
    size = trace.axis_size
    init = [bdim_to_front(v, d, size) if m else v for v, d, m in zip(init, carry_dims, mapped)]
    body_consts = [*body2.consts, *cc, *bc] if masked else [*body2.consts, *bc]
    outs = while_p.bind(*cond2.consts, *cc, *body_consts, *init, cond=cond2.fn(f"{cond.name}_batched"),
                        body=body2.fn(f"{body.name}_batched"), n_cc=len(cond2.consts) + n_cc,
                        n_bc=len(body_consts))  # fmt: skip
    return outs, [0 if m else None for m in mapped]


axis_rules[while_p] = _while_batch
