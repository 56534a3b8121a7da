"""The op database's columns that compose vmap with autodiff, for every differentiable entry.

- vmap(grad): ``ember.vmap(ember.grad(loss, argnums))`` over a batch of 3 inputs (the sample and two
  perturbed copies of its inexact arguments, stacked on axis 0; the other array arguments held fixed
  with in_axes None) against a Python loop of ``ember.grad(loss, argnums)``, where the loss is the
  weighted sum of the entry's inexact outputs with random weights (as in the grad-of-grad column),
  once shared by the examples (in_axes None) and once one set per example (in_axes 0);
- jacrev / jacfwd: the dense Jacobian of the entry's inexact outputs (complex ones split into real and
  imaginary parts) against the one assembled column by column from ember.jvp with basis tangents, and
  for jacrev also row by row from ember.vjp with basis cotangents. Real dtypes only: jacfwd of complex
  inputs and jacrev of complex outputs need holomorphic=True, which most entries are not (the complex
  dtypes are checked by vmap(grad) and the autodiff columns).

The arguments differentiated are the sample's inexact arrays: positional ones, those inside list/tuple
arguments (enp.concatenate's, lax.sort's operands) and keyword ones; an entry with none (lax.iota,
enp.zeros, ...) is skipped, saying so, as is every cell none of whose samples was checked.

Both sides run the same derivative rules, batched on one side and one at a time on the other, so
they agree to rounding: the tolerances are by dtype, not the finite-difference ones. CI runs float32
and complex64 (the Jacobians: float32) on one sample per entry, the largest with at most 64 elements;
`pytest -m full` runs every dtype of the autodiff columns on every sample (the Jacobians on samples
with at most 64 elements in and out).
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import (
    BF16,
    FLOATING,
    INEXACT,
    OPS,
    SIXTY_FOUR_BIT,
    array_arguments,
    array_slots,
    assert_close,
    autodiff_cases,
    diff_function,
    is_inexact,
    outputs_of,
    random_like,
    skip_unchecked,
    weighted_sum,
    wide,
    with_arrays,
)

import ember
import ember.numpy as enp

CI_DTYPES = {np.dtype(np.float32), np.dtype(np.complex64)}
BATCH = 3
PERTURBATION = 1e-2  # relative: the batch stays near the sample, on the same side of the function's kinks
JACOBIAN_SIZE = 64  # elements in (and out) above which a sample is left out of the Jacobian column
# (rtol, atol relative to the result's largest magnitude): rounding only, as vmap'd rules may sum or
# contract in another order than the one-at-a-time rules, and reverse mode in another than forward.
TOLERANCES = {
    np.dtype(np.float16): (4e-3, 4e-3),
    BF16: (3e-2, 3e-2),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float64): (1e-12, 1e-12),
    np.dtype(np.complex64): (1e-5, 1e-5),
    np.dtype(np.complex128): (1e-12, 1e-12),
}


def _cells(dtypes):
    """(op, dtype, which samples): in CI one sample per entry in CI_DTYPES; the rest, and the other dtypes, in full."""
    cells = []
    for op in OPS:
        if not {"jvp", "vjp", "vmap"} <= set(op.transforms):
            continue
        for dtype in dtypes:
            if dtype in op.dtypes and dtype not in op.ad_unsupported:
                name = f"{op.name}-{dtype.name}"
                if dtype in CI_DTYPES:
                    cells.append(pytest.param(op, dtype, "ci", id=name))
                    cells.append(pytest.param(op, dtype, "rest", id=f"{name}-rest", marks=(pytest.mark.full,)))
                else:
                    cells.append(pytest.param(op, dtype, "all", id=name, marks=(pytest.mark.full,)))
    return cells


def _inexact_size(arrays) -> int:
    return sum(int(np.size(a)) for a in arrays if np.dtype(a.dtype).kind in "fcV")


def _choose(samples, size, which: str) -> list:
    """The samples of this cell: "ci" the largest with at most JACOBIAN_SIZE elements (by `size`, the first
    of equals; else the smallest), "rest" the others, "all" every one."""
    if which == "all" or not samples:
        return samples
    sizes = [size(s) for s in samples]
    small = [k for k, n in enumerate(sizes) if n <= JACOBIAN_SIZE]
    pick = max(small, key=lambda k: (sizes[k], -k)) if small else min(range(len(sizes)), key=sizes.__getitem__)
    return [samples[pick]] if which == "ci" else samples[:pick] + samples[pick + 1 :]


def _assert_same(got, want, tol, what, check_dtype=True):
    """got == want to rounding: same shape (and dtype), the same non-finite values in the same places."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert not check_dtype or got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    finite = np.isfinite(wide(want))
    np.testing.assert_array_equal(wide(got)[~finite], wide(want)[~finite], err_msg=f"{what}: non-finite values")
    assert_close(got, want, tol, what, where=finite)


# --- vmap(grad) against a loop of grad -------------------------------------------------------------


def _batch(rng, x: np.ndarray) -> np.ndarray:
    """`x` and BATCH - 1 copies scaled elementwise by 1 + PERTURBATION * noise, stacked on axis 0."""
    copies = [(wide(x) * (1 + PERTURBATION * wide(random_like(rng, x)))).astype(x.dtype) for _ in range(BATCH - 1)]
    return np.stack([x, *copies])


def _vmap_of_grad(op, sample, rng, dtype) -> str:
    """Check one sample; return why it was not checked ("" when it was)."""
    slots = array_slots(sample)  # arrays inside list/tuple arguments and keyword ones too
    arrays = array_arguments(sample, slots)
    mapped = [is_inexact(a) for a in arrays]

    def call(*arrays):
        args, kwargs = with_arrays(sample, slots, arrays)
        return outputs_of(op.op(*args, **kwargs))

    outs = call(*arrays)
    live = [k for k, o in enumerate(outs) if np.dtype(o.dtype).kind in "fcV"]
    if not live:
        return "no inexact output to take a gradient of"

    def loss(*args):
        weights = [None] * len(outs)
        for k, w in zip(live, args[len(arrays) :]):
            weights[k] = w
        return weighted_sum(call, weights)(*args[: len(arrays)])

    argnums = tuple(k for k, m in enumerate(mapped) if m)
    gradient = ember.grad(loss, argnums=argnums)
    batched = [_batch(rng, a) if m else a for a, m in zip(arrays, mapped)]
    # The weights (the cotangent) shared by the examples, or one per example: the transposes see
    # unbatched cotangents with batched residuals, and batched cotangents.
    for shared in (True, False):
        weights = [np.stack([random_like(rng, np.asarray(outs[k])) for _ in range(BATCH)]) for k in live]
        weights = [w[0] for w in weights] if shared else weights
        in_axes = tuple(0 if m else None for m in mapped) + (None if shared else 0,) * len(weights)
        try:
            got = ember.vmap(gradient, in_axes=in_axes)(*batched, *weights)
        except ember.errors.ConcretizationError:
            if op.needs_concrete:  # declared: vmap maps over a value the result's shape depends on
                return f"needs_concrete: {op.needs_concrete}"
            raise
        loop = [gradient(*[a[b] if m else a for a, m in zip(batched, mapped)],
                         *[w if shared else w[b] for w in weights]) for b in range(BATCH)]  # fmt: skip
        what = f"{op.name}{sample}: vmap(grad) with {'shared' if shared else 'per-example'} weights"
        assert len(got) == len(argnums), f"{what}: {len(got)} gradients, want {len(argnums)}"
        for k, g in enumerate(got):
            want = np.stack([np.asarray(r[k]) for r in loop])
            _assert_same(g, want, TOLERANCES[dtype], f"{what}, argument {argnums[k]}")
    return ""


@pytest.mark.parametrize("op, dtype, which", _cells(INEXACT))
def test_vmap_of_grad_matches_a_loop(op, dtype, which):
    rng, samples = autodiff_cases(op, dtype)
    chosen = _choose(samples, lambda s: _inexact_size(array_arguments(s, array_slots(s, is_inexact))), which)
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        reasons = [_vmap_of_grad(op, sample, rng, dtype) for sample in chosen]
    skip_unchecked(reasons, samples)


# --- jacrev / jacfwd against loops of jvp and vjp --------------------------------------------------


def _real_outputs(fn):
    """`fn` with its inexact outputs only, complex ones as their real and imaginary parts."""

    def real(*diff):
        outs = []
        for o in fn(*diff):
            kind = np.dtype(o.dtype).kind
            if kind == "c":
                outs += [enp.real(o), enp.imag(o)]
            elif kind in "fV":
                outs.append(o)
        return outs

    return real


def _basis(arrays, k: int, j: int) -> list[np.ndarray]:
    """Zeros shaped like `arrays`, with a one at flat position j of array k."""
    out = [np.zeros(np.shape(a), a.dtype) for a in arrays]
    out[k].reshape(-1)[j] = 1
    return out


def _jacobian_by_jvp(fn, primals, outs) -> list[list[np.ndarray]]:
    """J[k][i] of shape outs[k].shape + primals[i].shape, one column per jvp with a basis tangent."""
    jac = []
    for i, p in enumerate(primals):
        columns = [ember.jvp(fn, tuple(primals), tuple(_basis(primals, i, j)))[1] for j in range(p.size)]
        jac.append([np.stack([np.asarray(c[k]).reshape(-1) for c in columns], axis=-1).reshape(o.shape + p.shape)
                    if columns else np.zeros(o.shape + p.shape, o.dtype) for k, o in enumerate(outs)])  # fmt: skip
    return [list(row) for row in zip(*jac)]


def _jacobian_by_vjp(fn, primals, outs) -> list[list[np.ndarray]]:
    """J[k][i] of shape outs[k].shape + primals[i].shape, one row per vjp with a basis cotangent."""
    _, pull = ember.vjp(fn, *primals)
    jac = []
    for k, o in enumerate(outs):
        rows = [pull(_basis(outs, k, j)) for j in range(int(np.size(o)))]
        jac.append([np.stack([np.asarray(r[i]) for r in rows]).reshape(o.shape + p.shape)
                    if rows else np.zeros(o.shape + p.shape, p.dtype) for i, p in enumerate(primals)])  # fmt: skip
    return jac


def _coarser(*dtypes) -> tuple[float, float]:
    return max(TOLERANCES[np.dtype(d)][0] for d in dtypes), max(TOLERANCES[np.dtype(d)][1] for d in dtypes)


def _jacobians(op, sample) -> str:
    """Check one sample; return why it was not checked ("" when it was)."""
    fn, primals = diff_function(op, sample)
    fn = _real_outputs(fn)
    outs = [np.asarray(o) for o in fn(*primals)]
    if not outs:
        return "no inexact output to differentiate"
    if max(_inexact_size(primals), _inexact_size(outs)) > JACOBIAN_SIZE:
        return f"more than {JACOBIAN_SIZE} elements in or out: a Jacobian too large to assemble in a loop"
    argnums = tuple(range(len(primals)))
    by_jvp = _jacobian_by_jvp(fn, primals, outs)
    by_vjp = _jacobian_by_vjp(fn, primals, outs)
    forward = ember.jacfwd(fn, argnums=argnums)(*primals)
    reverse = ember.jacrev(fn, argnums=argnums)(*primals)
    # Forward and reverse mode agree where every output is finite; elsewhere the pull-back of a zero
    # cotangent through an infinite partial derivative is 0 * inf (the vjp column compares there only).
    finite = all(np.isfinite(wide(o)).all() for o in outs)
    for k, o in enumerate(outs):
        for i, p in enumerate(primals):
            what = f"{op.name}{sample}: d(output {k})/d(argument {i})"
            _assert_same(forward[k][i], by_jvp[k][i], TOLERANCES[o.dtype], f"{what}, jacfwd vs jvp")
            _assert_same(reverse[k][i], by_vjp[k][i], TOLERANCES[p.dtype], f"{what}, jacrev vs vjp")
            if finite:
                _assert_same(reverse[k][i], by_jvp[k][i], _coarser(o.dtype, p.dtype), f"{what}, jacrev vs jvp",
                             check_dtype=False)  # fmt: skip
    return ""


@pytest.mark.parametrize("op, dtype, which", _cells(FLOATING))
def test_jacrev_and_jacfwd_match_loops_of_jvp_and_vjp(op, dtype, which):
    _, samples = autodiff_cases(op, dtype)
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):

        def size(sample):
            fn, primals = diff_function(op, sample)
            return max(_inexact_size(primals), _inexact_size(_real_outputs(fn)(*primals)))

        reasons = [_jacobians(op, sample) for sample in _choose(samples, size, which)]
    skip_unchecked(reasons, samples)
