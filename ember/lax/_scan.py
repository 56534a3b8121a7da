"""The `scan` primitive: a loop of static length over the leading axis of its `xs`.

``scan[body, n_consts, n_carry, length, reverse, unroll, linear](*consts, *init, *xs)`` returns
the final carry and the stacked per-iteration outputs `ys`; `body` maps (consts, carry, x slices)
to (carry, y slices). `linear` marks the operands that are tangents, for the transpose rule.

Rules (as in JAX):
- jvp: the body linearized; a primal scan computes the outputs and stacks the residuals of every
  iteration as extra `ys` (residuals that are constants of the scan are passed once instead), and
  a linear scan maps (residuals, tangents) to the tangents of the carry and of `ys`;
- transpose: a scan in the other direction of the transposed body, carrying the cotangents of the
  carry and accumulating those of the linear constants;
- vmap: the body batched, with the carries that become batched found by a fixed point; batched
  `xs` and `ys` have their batch axis second (the scan axis stays first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.core.abstract import ShapedArray
from ember.core.ad import UndefinedPrimal, Zero, add_tangents, instantiate, zeros
from ember.core.batching import axis_rules, bdim_to_front, move_axis
from ember.lax._while import _RunsRaw, _split
from ember.transforms._programs import (
    Fn,
    batch_fixed_point,
    batch_program,
    close,
    cotangents,
    linear_positions,
    linearize_program,
    run,
    transpose_program,
)
from ember.transforms._compile import active_backend
from ember.transforms.jit import raw_impls

__all__ = ["scan_p"]


def _scan_avals(*avals: Any, body: Fn, n_carry: int, length: int, **_: Any) -> list[ShapedArray]:
    outs = body.out_avals
    return [*outs[:n_carry], *[ShapedArray((length, *a.shape), a.dtype, a.weak_type) for a in outs[n_carry:]]]


scan_p = _RunsRaw("scan", multiple_results=True)
scan_p.abstract_eval = _scan_avals


def _bind(consts: Sequence[Any], carry: Sequence[Any], xs: Sequence[Any], body: Fn, length: int, reverse: bool,
          unroll: int, linear: Sequence[bool]) -> list[Any]:  # fmt: skip
    return scan_p.bind(*consts, *carry, *xs, body=body, n_consts=len(consts), n_carry=len(carry), length=length,
                       reverse=reverse, unroll=unroll, linear=tuple(linear))  # fmt: skip


def _scan_raw(*bufs: Any, body: Fn, n_consts: int, n_carry: int, length: int, reverse: bool, unroll: int,
              linear: tuple) -> list:  # fmt: skip
    """The loop on raw buffers: `unroll` steps a call of the body repeated that many times (one
    compiled function per `unroll` steps, optimized across them), the remaining steps one by one."""
    consts, carry, xs = _split(bufs, n_consts, n_carry)
    y_avals = body.out_avals[n_carry:]
    ys = [active_backend().xp.empty((length, *a.shape), a.dtype) for a in y_avals]  # on the running program's device
    k = min(unroll, length)
    steps = list(range(length - 1, -1, -1) if reverse else range(length))
    blocks = [steps[j : j + k] for j in range(0, length - length % k, k)] if k > 1 else []
    if blocks:
        unrolled, unrolled_consts = _unrolled(body, n_consts, n_carry, k)
        for block in blocks:
            outs = run(unrolled, [*unrolled_consts, *consts, *carry, *[x[i] for i in block for x in xs]])
            carry, outs = outs[:n_carry], outs[n_carry:]
            for j, i in enumerate(block):
                for y, o in zip(ys, outs[j * len(ys) : (j + 1) * len(ys)]):
                    y[i] = o
    for i in steps[len(blocks) * k :]:
        outs = run(body, [*consts, *carry, *[x[i] for x in xs]])
        carry = outs[:n_carry]
        for y, o in zip(ys, outs[n_carry:]):
            y[i] = o
    return [*carry, *ys]


def _unrolled(body: Fn, n_consts: int, n_carry: int, k: int) -> tuple[Fn, list[Any]]:
    """`body` k times in one program: (consts, carry, x slices of step 1, ..., of step k) -> (carry,
    y slices of step 1, ..., of step k); made once per body and k."""
    key = ("unroll", k)
    if key not in body.cache:
        n_x = len(body.in_avals) - n_consts - n_carry

        def steps(*args: Any) -> list[Any]:
            consts, carry, xs = args[:n_consts], list(args[n_consts : n_consts + n_carry]), args[n_consts + n_carry :]
            ys = []
            for j in range(k):
                outs = body(*consts, *carry, *xs[j * n_x : (j + 1) * n_x])
                carry = outs[:n_carry]
                ys += outs[n_carry:]
            return [*carry, *ys]

        in_avals = body.in_avals
        closed = close(steps, [*in_avals[: n_consts + n_carry], *in_avals[n_consts + n_carry :] * k], f"{body.name}_x{k}")
        body.cache[key] = (closed.fn(f"{body.name}_x{k}"), [c._value for c in closed.consts])
    return body.cache[key]


raw_impls[scan_p] = _scan_raw


# --- jvp: a primal scan stacking residuals, then a linear scan -------------------------------------------


def _scan_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, body: Fn, n_consts: int, n_carry: int, length: int,
              reverse: bool, unroll: int, linear: tuple):  # fmt: skip
    consts, init, xs = _split(primals, n_consts, n_carry)
    t_consts, t_init, t_xs = _split(tangents, n_consts, n_carry)
    nz_c = [type(t) is not Zero for t in t_consts]
    nz_x = [type(t) is not Zero for t in t_xs]
    nz_carry = [type(t) is not Zero for t in t_init]
    n_y = len(body.out_avals) - n_carry
    while True:  # the carries that get a tangent: those that have one, and those the body gives one
        lp = linearize_program(body.program, [*nz_c, *nz_carry, *nz_x], [*nz_carry, *[False] * n_y], "lax.scan")
        grown = [a or b for a, b in zip(nz_carry, lp.out_nz[:n_carry])]
        if grown == nz_carry:
            break
        nz_carry = grown

    # Residuals that are constants of the scan are passed once; the others are stacked as extra ys.
    const_res = [i for i in lp.res_input if i is not None and i < n_consts]
    stacked = [k for k, i in enumerate(lp.res_input) if i is None or i >= n_consts]
    n_out = n_carry + n_y

    def fwd(*a: Any) -> list[Any]:
        outs = lp.primal(*a)
        return [*outs[:n_out], *[outs[n_out + k] for k in stacked]]

    fwd_closed = close(fwd, body.in_avals, "lax.scan")
    outs = _bind([*fwd_closed.consts, *consts], init, xs, fwd_closed.fn(f"{body.name}_fwd"), length, reverse, unroll,
                 [False] * (len(fwd_closed.consts) + len(primals)))  # fmt: skip
    primal_out, res = outs[:n_out], outs[n_out:]
    if not any(lp.out_nz):
        return primal_out, [Zero(o.aval) for o in primal_out]

    t_c = [t for t, z in zip(t_consts, nz_c) if z]
    t_carry = [instantiate(t) for t, z in zip(t_init, nz_carry) if z]
    t_x = [t for t, z in zip(t_xs, nz_x) if z]
    res_avals = lp.res_avals
    n_cr, n_st, n_tc, n_tcarry = len(const_res), len(stacked), len(t_c), len(t_carry)

    def lin_body(*a: Any) -> list[Any]:
        cres, tc, tcarry, sres, tx = _split(a, n_cr, n_tc, n_tcarry, n_st)
        full: list[Any] = [None] * lp.n_res
        it_c, it_s = iter(cres), iter(sres)
        for k, i in enumerate(lp.res_input):
            full[k] = next(it_c) if i is not None and i < n_consts else next(it_s)
        return lp.lin(*full, *tc, *tcarry, *tx)

    in_avals = [*[res_avals[k] for k, i in enumerate(lp.res_input) if i is not None and i < n_consts],
                *[t.aval for t in (*t_c, *t_carry)], *[res_avals[k] for k in stacked],
                *[ShapedArray(t.aval.shape[1:], t.aval.dtype, t.aval.weak_type) for t in t_x]]  # fmt: skip
    lin_closed = close(lin_body, in_avals, "lax.scan")
    lin_consts = [*lin_closed.consts, *[consts[i] for i in const_res], *t_c]
    lin_flags = [False] * (len(lin_closed.consts) + n_cr) + [True] * (n_tc + n_tcarry) + [False] * n_st + [True] * len(t_x)
    t_outs = iter(_bind(lin_consts, t_carry, [*res, *t_x], lin_closed.fn(f"{body.name}_lin"), length, reverse, unroll,
                        lin_flags))  # fmt: skip
    out_nz = [*nz_carry, *lp.out_nz[n_carry:]]
    return primal_out, [next(t_outs) if z else Zero(o.aval) for o, z in zip(primal_out, out_nz)]


# --- transpose: a reverse scan of the transposed body ----------------------------------------------------


def _scan_transpose(cts: Sequence[Any], *args: Any, body: Fn, n_consts: int, n_carry: int, length: int, reverse: bool,
                    unroll: int, linear: tuple) -> list:  # fmt: skip
    consts, carry, xs = _split(args, n_consts, n_carry)
    lin = linear_positions(args, linear)
    lin_c, _, lin_x = _split(lin, n_consts, n_carry)
    # The carry of a linear scan is linear (a known initial value contributes nothing to transpose).
    mask = [*lin_c, *[True] * n_carry, *lin_x]
    known_c = [c for c, m in zip(consts, lin_c) if not m]
    known_x = [x for x, m in zip(xs, lin_x) if not m]
    ct_carry = [instantiate(c) for c in cts[:n_carry]]
    ys_nz, ct_ys = cotangents(cts[n_carry:])
    tb = transpose_program(body.program, mask, [*[True] * n_carry, *ys_nz], "lax.scan")
    lin_c_avals = [a.aval for a, m in zip(consts, lin_c) if m]
    n_kc, n_acc, n_kx = len(known_c), len(lin_c_avals), len(known_x)

    def t_body(*a: Any) -> list[Any]:
        kc, acc, ctc, kx, cty = _split(a, n_kc, n_acc, n_carry, n_kx)
        outs = tb(*kc, *kx, *ctc, *cty)
        ct_lc, ct_c, ct_lx = _split(outs, n_acc, n_carry)
        return [*[add_tangents(s, c) for s, c in zip(acc, ct_lc)], *ct_c, *ct_lx]

    def sliced(x: Any) -> ShapedArray:
        return ShapedArray(x.aval.shape[1:], x.aval.dtype, x.aval.weak_type)

    in_avals = [*[c.aval for c in known_c], *lin_c_avals, *[c.aval for c in ct_carry], *[sliced(x) for x in known_x],
                *[sliced(c) for c in ct_ys]]  # fmt: skip
    closed = close(t_body, in_avals, "lax.scan")
    acc0 = [zeros(a) for a in lin_c_avals]
    flags = [False] * (len(closed.consts) + n_kc) + [True] * (n_acc + n_carry) + [False] * n_kx + [True] * len(ct_ys)
    outs = _bind([*closed.consts, *known_c], [*acc0, *ct_carry], [*known_x, *ct_ys], closed.fn(f"{body.name}_transpose"),
                 length, not reverse, unroll, flags)  # fmt: skip
    ct_lc, ct_init, ct_lx = iter(outs[:n_acc]), outs[n_acc : n_acc + n_carry], iter(outs[n_acc + n_carry :])
    result: list[Any] = []
    for c, m in zip(consts, lin_c):
        ct = next(ct_lc) if m else None
        result.append(ct if type(c) is UndefinedPrimal else None)
    result += [ct if type(c) is UndefinedPrimal else None for c, ct in zip(carry, ct_init)]
    for x, m in zip(xs, lin_x):
        ct = next(ct_lx) if m else None
        result.append(ct if type(x) is UndefinedPrimal else None)
    return result


scan_p.jvp = _scan_jvp
scan_p.transpose = _scan_transpose


# --- vmap ------------------------------------------------------------------------------------------------


def _scan_batch(trace: Any, vals: Sequence[Any], dims: Sequence[Any], *, body: Fn, n_consts: int, n_carry: int,
                length: int, reverse: bool, unroll: int, linear: tuple):  # fmt: skip
    consts, init, xs = _split(vals, n_consts, n_carry)
    c_dims, carry_dims, x_dims = _split(dims, n_consts, n_carry)
    slice_dims = [None if d is None else 0 for d in x_dims]
    mapped = batch_fixed_point(body.program, trace, c_dims, [d is not None for d in carry_dims], slice_dims, "lax.scan")
    n_y = len(body.out_avals) - n_carry
    in_dims = [*c_dims, *[0 if m else None for m in mapped], *slice_dims]
    closed, out_dims = batch_program(body.program, trace, in_dims, [*mapped, *[False] * n_y], "lax.scan")
    size = trace.axis_size
    init = [bdim_to_front(v, d, size) if m else v for v, d, m in zip(init, carry_dims, mapped)]
    xs = [x if d is None else move_axis(x, d, 1) for x, d in zip(xs, x_dims)]
    outs = _bind([*closed.consts, *consts], init, xs, closed.fn(f"{body.name}_batched"), length, reverse, unroll,
                 [False] * len(closed.consts) + list(linear))  # fmt: skip
    return outs, [*[0 if m else None for m in mapped], *[None if d is None else 1 for d in out_dims[n_carry:]]]


axis_rules[scan_p] = _scan_batch
