"""The op database's autodiff columns, for every entry and inexact dtype it supports.

- jvp: ember.jvp against central finite differences computed in float64;
- vjp: the dot-product identity <ct, jvp(t)> == <vjp(ct), t> (real parts, as JAX's transposes
  are linear over the reals);
- grad of grad: the jvp of a gradient (a Hessian-vector product) against finite differences of
  the gradient, in float64.

CI runs float32, float64 and complex64; `pytest -m full` adds the other inexact dtypes.
Entries that cannot be differentiated say why (`nondiff`); points where a function is not
differentiable are kept out of the samples by the entry (`ad_samples`). The arguments differentiated
are the sample's inexact arrays: positional ones, those inside list/tuple arguments (enp.concatenate's,
lax.sort's operands) and keyword ones. A cell none of whose samples was checked (an entry without an
inexact array argument, such as lax.iota or enp.zeros) is skipped, naming why.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import (
    INEXACT,
    OPS,
    SIXTY_FOUR_BIT,
    assert_close,
    autodiff_cases,
    diff_function,
    random_like,
    skip_unchecked,
    upcast,
    weighted_sum,
    wide,
)

import ember

CI_DTYPES = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64)}
# Step of the 4-point central difference, by the precision of the function's outputs (computed from
# float64 inputs): truncation ~step^4, rounding ~eps/step. Outputs in a narrower dtype than float64
# (a `dtype=` argument) need a wider step.
STEPS = {8: 1e-6, 4: 1e-2, 2: 1e-1}


def _cells(column: str, dtypes):
    cells = []
    for op in OPS:
        if column not in op.transforms:
            continue
        for dtype in dtypes:
            if dtype in op.dtypes and dtype not in op.ad_unsupported:
                marks = () if dtype in CI_DTYPES else (pytest.mark.full,)
                cells.append(pytest.param(op, dtype, id=f"{op.name}-{dtype.name}", marks=marks))
    return cells


def _narrowest(arrays) -> int:
    """Bytes per real number of the narrowest inexact array (8 when none)."""
    widths = [np.dtype(a.dtype).itemsize // (2 if np.dtype(a.dtype).kind == "c" else 1)
              for a in arrays if np.dtype(a.dtype).kind in "fcV"]  # fmt: skip
    return min(widths, default=8)


def _finite_difference(fn, primals, tangents, width=None) -> list[np.ndarray]:
    """d/dh fn(primals + h tangents) at h = 0, by a 4-point central difference in float64;
    `width` (bytes) is the precision the function really computes in (default: its outputs')."""
    with ember.config.x64(True):
        x = [upcast(p) for p in primals]
        t = [upcast(v) for v in tangents]

        def at(h):
            return [wide(o) for o in fn(*[xi + h * ti for xi, ti in zip(x, t)])]

        step = STEPS[width or _narrowest(fn(*x))]
        f2, f1, m1, m2 = at(2 * step), at(step), at(-step), at(-2 * step)
        return [(-a + 8 * b - 8 * c + d) / (12 * step) for a, b, c, d in zip(f2, f1, m1, m2)]


def _tolerance(op, dtype, *arrays):
    """The entry's tolerance for `dtype`, or for a lower-precision output dtype when there is one
    (finite differences of a float32 output are only as good as float32)."""
    tols = [op.autodiff_tolerance(dtype)]
    for a in arrays:
        d = np.dtype(a.dtype)
        if d.kind in "fcV" and d != dtype:
            tols.append(op.autodiff_tolerance(d))
    return max(t[0] for t in tols), max(t[1] for t in tols)


def _finite_values(x) -> np.ndarray:
    """Where the function's value is finite: derivatives are checked there (nowhere else are they defined)."""
    return np.isfinite(wide(x))


@pytest.mark.parametrize("op, dtype", _cells("jvp", INEXACT))
def test_jvp_matches_finite_differences(op, dtype):
    rng, samples = autodiff_cases(op, dtype)
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        for sample in samples:
            fn, primals = diff_function(op, sample)
            tangents = [random_like(rng, p) for p in primals]
            outs, out_tangents = ember.jvp(fn, tuple(primals), tuple(tangents))
            eager = fn(*primals)
            assert len(outs) == len(eager), f"{op.name}{sample}: {len(outs)} outputs under jvp, {len(eager)} eagerly"
            want = _finite_difference(fn, primals, tangents)
            for k, (o, e, t, w) in enumerate(zip(outs, eager, out_tangents, want)):
                assert_close(o, e, op.tolerance(np.dtype(e.dtype)) if np.dtype(e.dtype).kind in "fcV" else (0, 0),
                             f"{op.name}{sample}: jvp's output {k} differs from eager")  # fmt: skip
                if np.dtype(o.dtype).kind not in "fcV":
                    assert np.asarray(t).dtype == ember.core.dtypes.float0, f"{op.name}{sample}: integer output {k} needs a float0 tangent"
                    continue
                assert_close(t, w, _tolerance(op, dtype, o), f"{op.name}{sample}: tangent of output {k}", _finite_values(e))
    skip_unchecked([""] * len(samples), samples)


@pytest.mark.parametrize("op, dtype", _cells("vjp", INEXACT))
def test_vjp_is_the_transpose_of_jvp(op, dtype):
    rng, samples = autodiff_cases(op, dtype)
    reasons = []
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        for sample in samples:
            fn, primals = diff_function(op, sample)
            tangents = [random_like(rng, p) for p in primals]
            outs, out_tangents = ember.jvp(fn, tuple(primals), tuple(tangents))
            if not all(_finite_values(o).all() for o in outs if np.dtype(o.dtype).kind in "fcV"):
                # no derivative where the value is not finite (the jvp column checks the rest)
                reasons.append("an output is not finite, where there is no derivative to transpose")
                continue
            reasons.append("")
            cts = [random_like(rng, np.asarray(o)) if np.dtype(o.dtype).kind in "fcV" else np.zeros(o.shape, o.dtype)
                   for o in outs]  # fmt: skip
            _, f_vjp = ember.vjp(fn, *primals)
            in_cts = f_vjp(cts)
            pairs_out = [(c, t) for c, t, o in zip(cts, out_tangents, outs) if np.dtype(o.dtype).kind in "fcV"]
            lhs = sum(np.real(np.sum(wide(c) * wide(t))) for c, t in pairs_out)
            rhs = sum(np.real(np.sum(wide(c) * wide(t))) for c, t in zip(in_cts, tangents))
            scale = sum(np.sum(np.abs(wide(c) * wide(t))) for c, t in pairs_out) + sum(
                np.sum(np.abs(wide(c) * wide(t))) for c, t in zip(in_cts, tangents))
            rtol, atol = _tolerance(op, dtype, *outs)
            assert abs(lhs - rhs) <= rtol * scale + atol, f"{op.name}{sample}: <ct, jvp(t)> = {lhs} but <vjp(ct), t> = {rhs}"
    skip_unchecked(reasons, samples)


@pytest.mark.parametrize("op, dtype", _cells("vjp", (np.dtype(np.float64), np.dtype(np.complex128))))
def test_grad_of_grad(op, dtype):
    rng, samples = autodiff_cases(op, dtype)
    reasons = []
    with ember.config.x64(True):
        for sample in samples:
            fn, primals = diff_function(op, sample)
            weights = [random_like(rng, np.asarray(o)) if np.dtype(o.dtype).kind in "fcV" else None for o in fn(*primals)]
            if all(w is None for w in weights):
                reasons.append("no inexact output to take a gradient of")
                continue
            reasons.append("")
            gradient = ember.grad(weighted_sum(fn, weights), argnums=tuple(range(len(primals))))
            tangents = [random_like(rng, p) for p in primals]
            _, hvp = ember.jvp(gradient, tuple(primals), tuple(tangents))
            outs = fn(*primals)
            want = _finite_difference(_as_list(gradient), primals, tangents, _narrowest(outs))
            tol = (1e-4, 1e-5) if _narrowest(outs) == 8 else _tolerance(op, dtype, *outs)
            # Finite differences of the gradient carry rounding errors relative to the gradient's size.
            size = max([1.0] + [float(np.max(np.abs(wide(g)))) for g in gradient(*primals) if np.size(g)])
            for k, (h, w) in enumerate(zip(hvp, want)):
                assert_close(h, w, tol, f"{op.name}{sample}: Hessian-vector product for argument {k}", scale=size)
    skip_unchecked(reasons, samples)


def _as_list(fn):
    return lambda *args: list(fn(*args))
