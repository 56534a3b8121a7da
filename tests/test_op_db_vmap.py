"""The op database's vmap column: every entry under vmap against a Python loop over the examples.

The batch is built from each array argument (positional, inside a list/tuple argument, or keyword)
and two rearrangements of its values (so indices stay valid and values stay in the function's
domain), stacked along the mapped axis. in_axes
take the forms 0, 1 (where the rank allows), -1, and None mixed with 0. CI runs float32,
float64, complex64 and int32; `pytest -m full` runs every dtype. A cell none of whose samples was
checked (lax.iota, enp.zeros: no array argument; none_mix of a single array: nothing mapped) is
skipped, naming why.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import ALL, OPS, SIXTY_FOUR_BIT, array_arguments, array_slots, with_arrays

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
    reasons = []
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        samples = op.samples(rng, dtype)
        for sample in samples:
            slots = array_slots(sample)  # arrays inside list/tuple arguments and keyword ones too
            arrays = array_arguments(sample, slots)
            if not slots:
                reasons.append("no array argument to map over")
                continue
            examples = [_variants(rng, a) for a in arrays]
            axes = [_axis_for(mode, k, a.ndim) for k, a in enumerate(arrays)]
            if all(a is None for a in axes):
                reasons.append("in_axes None for the only array argument: nothing is mapped")
                continue

            def call(*arrays, sample=sample, slots=slots):
                args, kwargs = with_arrays(sample, slots, arrays)
                return _outputs(op.op(*args, **kwargs))

            try:
                want = [call(*[ex[b] if ax is not None else ex[0] for ex, ax in zip(examples, axes)]) for b in range(BATCH)]
            except ember.errors.EmberError:
                # this rearrangement is not a valid input for the op (its own checks say so)
                reasons.append("the rearranged values are no valid input")
                continue
            batched = [np.stack(ex, axis=ax) if ax is not None else ex[0] for ex, ax in zip(examples, axes)]
            try:
                got = ember.vmap(call, in_axes=tuple(axes))(*batched)
            except ember.errors.ConcretizationError:
                if op.needs_concrete:  # declared: this sample maps over a value the result's shape depends on
                    reasons.append(f"needs_concrete: {op.needs_concrete}")
                    continue
                raise
            reasons.append("")
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
    if all(reasons):
        pytest.skip("; ".join(dict.fromkeys(reasons)) if reasons else "the entry has no samples")
