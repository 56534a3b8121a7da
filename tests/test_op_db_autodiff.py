"""The op database's autodiff columns, for every entry and inexact dtype it supports.

- jvp: ember.jvp against central finite differences computed in float64;
- vjp: the dot-product identity <ct, jvp(t)> == <vjp(ct), t> (real parts, as JAX's transposes
  are linear over the reals);
- grad of grad: the jvp of a gradient (a Hessian-vector product) against finite differences of
  the gradient, in float64.

CI runs float32, float64 and complex64; `pytest -m full` adds the other inexact dtypes.
Entries that cannot be differentiated say why (`nondiff`); points where a function is not
differentiable are kept out of the samples by the entry (`ad_samples`).
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import INEXACT, OPS, SIXTY_FOUR_BIT, upcast

import ember
import ember.numpy as enp

CI_DTYPES = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64)}
STEP = 1e-4  # of the 4-point central difference, in float64: truncation ~STEP^4, rounding ~1e-16/STEP


def _cells(column: str, dtypes):
    cells = []
    for op in OPS:
        if column not in op.transforms:
            continue
        for dtype in dtypes:
            if dtype in op.dtypes:
                marks = () if dtype in CI_DTYPES else (pytest.mark.full,)
                cells.append(pytest.param(op, dtype, id=f"{op.name}-{dtype.name}", marks=marks))
    return cells


def _is_inexact(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind in "fcV"


def _outputs(value) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _function(op, sample):
    """The entry as a function of its inexact array arguments (the others held fixed), returning a list."""
    positions = [i for i, a in enumerate(sample.args) if _is_inexact(a)]

    def fn(*diff):
        args = list(sample.args)
        for i, d in zip(positions, diff):
            args[i] = d
        return _outputs(op.op(*args, **sample.kwargs))

    return fn, [sample.args[i] for i in positions]


def _random_like(rng, x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _wide(x) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.complex128) if x.dtype.kind == "c" else x.astype(np.float64)


def _finite_difference(fn, primals, tangents) -> list[np.ndarray]:
    """d/dh fn(primals + h tangents) at h = 0, by a 4-point central difference in float64."""
    with ember.config.x64(True):
        x = [upcast(p) for p in primals]
        t = [upcast(v) for v in tangents]

        def at(h):
            return [_wide(o) for o in fn(*[xi + h * ti for xi, ti in zip(x, t)])]

        f2, f1, m1, m2 = at(2 * STEP), at(STEP), at(-STEP), at(-2 * STEP)
        return [(-a + 8 * b - 8 * c + d) / (12 * STEP) for a, b, c, d in zip(f2, f1, m1, m2)]


def _assert_close(got, want, tol, what):
    rtol, atol = tol
    got, want = _wide(got), _wide(want)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def _samples(op, dtype, seed=0):
    rng = np.random.default_rng([seed, *map(ord, op.name + dtype.name)])
    samples = [s for s in op.autodiff_samples(rng, dtype) if any(_is_inexact(a) for a in s.args)]
    return rng, samples


@pytest.mark.parametrize("op, dtype", _cells("jvp", INEXACT))
def test_jvp_matches_finite_differences(op, dtype):
    rng, samples = _samples(op, dtype)
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        for sample in samples:
            fn, primals = _function(op, sample)
            tangents = [_random_like(rng, p) for p in primals]
            outs, out_tangents = ember.jvp(fn, tuple(primals), tuple(tangents))
            eager = fn(*primals)
            want = _finite_difference(fn, primals, tangents)
            for k, (o, e, t, w) in enumerate(zip(outs, eager, out_tangents, want)):
                np.testing.assert_array_equal(np.asarray(o), np.asarray(e), err_msg=f"{op.name}{sample}: jvp's output {k} differs from eager")
                if np.dtype(o.dtype).kind not in "fcV":
                    assert np.asarray(t).dtype == ember.core.dtypes.float0, f"{op.name}{sample}: integer output {k} needs a float0 tangent"
                    continue
                _assert_close(t, w, op.autodiff_tolerance(dtype), f"{op.name}{sample}: tangent of output {k}")


@pytest.mark.parametrize("op, dtype", _cells("vjp", INEXACT))
def test_vjp_is_the_transpose_of_jvp(op, dtype):
    rng, samples = _samples(op, dtype)
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        for sample in samples:
            fn, primals = _function(op, sample)
            tangents = [_random_like(rng, p) for p in primals]
            outs, out_tangents = ember.jvp(fn, tuple(primals), tuple(tangents))
            cts = [_random_like(rng, np.asarray(o)) if np.dtype(o.dtype).kind in "fcV" else np.zeros(o.shape, o.dtype) for o in outs]
            _, f_vjp = ember.vjp(fn, *primals)
            in_cts = f_vjp(cts)
            pairs_out = [(c, t) for c, t, o in zip(cts, out_tangents, outs) if np.dtype(o.dtype).kind in "fcV"]
            lhs = sum(np.real(np.sum(_wide(c) * _wide(t))) for c, t in pairs_out)
            rhs = sum(np.real(np.sum(_wide(c) * _wide(t))) for c, t in zip(in_cts, tangents))
            scale = sum(np.sum(np.abs(_wide(c) * _wide(t))) for c, t in pairs_out) + sum(
                np.sum(np.abs(_wide(c) * _wide(t))) for c, t in zip(in_cts, tangents))
            rtol, atol = op.autodiff_tolerance(dtype)
            assert abs(lhs - rhs) <= rtol * scale + atol, f"{op.name}{sample}: <ct, jvp(t)> = {lhs} but <vjp(ct), t> = {rhs}"


@pytest.mark.parametrize("op, dtype", _cells("vjp", (np.dtype(np.float64), np.dtype(np.complex128))))
def test_grad_of_grad(op, dtype):
    rng, samples = _samples(op, dtype)
    with ember.config.x64(True):
        for sample in samples:
            fn, primals = _function(op, sample)
            weights = [_random_like(rng, np.asarray(o)) if np.dtype(o.dtype).kind in "fcV" else None for o in fn(*primals)]

            def scalar(*diff):
                total = 0.0
                for w, o in zip(weights, fn(*diff)):
                    if w is not None:
                        total = total + enp.real(enp.sum(enp.asarray(w) * o))
                return enp.asarray(total, dtype="float64")

            if all(w is None for w in weights):
                continue
            gradient = ember.grad(scalar, argnums=tuple(range(len(primals))))
            tangents = [_random_like(rng, p) for p in primals]
            _, hvp = ember.jvp(gradient, tuple(primals), tuple(tangents))
            want = _finite_difference(lambda *d: list(gradient(*d)), primals, tangents)
            for k, (h, w) in enumerate(zip(hvp, want)):
                _assert_close(h, w, (1e-4, 1e-5), f"{op.name}{sample}: Hessian-vector product for argument {k}")
