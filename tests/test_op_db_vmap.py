"""The op database's vmap column: every entry under vmap against a Python loop over the examples.

The batch is built from each array argument and two rearrangements of its values (so indices
stay valid and values stay in the function's domain), stacked along the mapped axis. in_axes
take the forms 0, 1 (where the rank allows), -1, and None mixed with 0. CI runs float32,
float64, complex64 and int32; `pytest -m full` runs every dtype.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import ALL, OPS, SIXTY_FOUR_BIT

import ember

CI_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.int32)}
BATCH = 3
IN_AXES = ("zero", "one", "last", "none_mix")


def _cells():
    cells = []
    for op in OPS:
        if "vmap" not in op.transforms:
            continue
        for dtype in ALL:
            if dtype in op.dtypes:
                marks = () if dtype in CI_DTYPES else (pytest.mark.full,)
                cells.append(pytest.param(op, dtype, id=f"{op.name}-{dtype.name}", marks=marks))
    return cells


def _outputs(value) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _variants(rng, x: np.ndarray) -> list[np.ndarray]:
    flat = x.reshape(-1)
    return [x] + [flat[rng.permutation(flat.size)].reshape(x.shape) for _ in range(BATCH - 1)]


def _axis_for(mode: str, position: int, ndim: int) -> int | None:
    if mode == "zero":
        return 0
    if mode == "one":
        return 1 if ndim >= 1 else 0
    if mode == "last":
        return -1
    return None if position == 0 else 0  # none_mix: the first array argument is shared


@pytest.mark.parametrize("mode", IN_AXES)
@pytest.mark.parametrize("op, dtype", _cells())
def test_vmap_matches_a_loop(op, dtype, mode):
    rng = np.random.default_rng([7, *map(ord, op.name + dtype.name + mode)])
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        samples = op.samples(rng, dtype)
        for sample in samples:
            positions = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
            if not positions:
                continue
            examples = [_variants(rng, sample.args[i]) for i in positions]
            axes = [_axis_for(mode, k, sample.args[i].ndim) for k, i in enumerate(positions)]
            if all(a is None for a in axes):
                continue

            def call(*arrays, sample=sample, positions=positions):
                args = list(sample.args)
                for i, a in zip(positions, arrays):
                    args[i] = a
                return _outputs(op.op(*args, **sample.kwargs))

            try:
                want = [call(*[ex[b] if ax is not None else ex[0] for ex, ax in zip(examples, axes)]) for b in range(BATCH)]
            except ember.errors.EmberError:
                continue  # this rearrangement is not a valid input for the op (its own checks say so)
            batched = [np.stack(ex, axis=ax) if ax is not None else ex[0] for ex, ax in zip(examples, axes)]
            try:
                got = ember.vmap(call, in_axes=tuple(axes))(*batched)
            except ember.errors.ConcretizationError:
                if op.needs_concrete:
                    continue  # declared: this sample maps over a value the result's shape depends on
                raise
            assert len(got) == len(want[0]), f"{op.name}{sample}: {len(got)} outputs under vmap, {len(want[0])} in the loop"
            for k, g in enumerate(got):
                w = np.stack([np.asarray(r[k]) for r in want])
                assert g.dtype == w.dtype, f"{op.name}{sample} in_axes={axes}: output {k} dtype {g.dtype}, loop {w.dtype}"
                assert g.shape == w.shape, f"{op.name}{sample} in_axes={axes}: output {k} shape {g.shape}, loop {w.shape}"
                g = np.asarray(g)
                if g.dtype.kind in "biu":
                    np.testing.assert_array_equal(g, w, err_msg=f"{op.name}{sample} in_axes={axes}: output {k}")
                else:
                    rtol, atol = op.tolerance(np.dtype(g.dtype))
                    wide = np.complex128 if g.dtype.kind == "c" else np.float64
                    g64, w64 = g.astype(wide), w.astype(wide)
                    for part in (np.real, np.imag):
                        np.testing.assert_allclose(part(g64), part(w64), rtol=rtol, atol=atol, equal_nan=True,
                                                   err_msg=f"{op.name}{sample} in_axes={axes}: output {k}")  # fmt: skip
