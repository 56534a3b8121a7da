"""What the per-family vmap tests share: the vmap-against-a-loop check, and a fixture that makes
vmap's loop fallback fail a test (import `no_loop_fallback` into a test module to apply it there)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp


@pytest.fixture(autouse=True)
def no_loop_fallback(monkeypatch):
    """vmap's loop fallback (for a primitive without a batching rule) fails the test, every time (vmap
    itself warns once per primitive and process)."""

    def refuse(primitive):
        raise AssertionError(f"vmap fell back to a loop for primitive {primitive.name!r}: it has no batching rule")

    monkeypatch.setattr(sys.modules["ember.transforms.vmap"], "_loop_rule", refuse)


def vmap_matches_loop(f, examples, in_axes, exact=False, tol=1e-12):
    """vmap(f) over the examples (one sequence of per-example arguments each; an argument with
    in_axes None is taken from the first example) against a loop of f. Integer and bool results, and
    all results with `exact`, must be equal; others agree to `tol`."""
    ref = examples[0]
    calls = [[ex[k] if ax is not None else ref[k] for k, ax in enumerate(in_axes)] for ex in examples]
    want = [f(*[enp.asarray(a) for a in call]) for call in calls]
    args = [np.stack([ex[k] for ex in examples], axis=ax) if ax is not None else ref[k] for k, ax in enumerate(in_axes)]
    got = ember.vmap(f, in_axes=tuple(in_axes))(*[enp.asarray(a) for a in args])
    flat_got, flat_want = ember.tree.leaves(got), [ember.tree.leaves(w) for w in want]
    assert len(flat_got) == len(flat_want[0])
    for k, g in enumerate(flat_got):
        w = np.stack([np.asarray(fw[k]) for fw in flat_want])
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if exact or w.dtype.kind in "biu":
            np.testing.assert_array_equal(np.asarray(g), w)
        else:
            np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol)
