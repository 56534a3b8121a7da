"""select_and_scatter_add of windows that tile the operand (max/min pooling's gradient, stride = window,
no padding: kernels_conv._scatter_tiles) against the naive loops of conv_reference.py: ties (the
first extreme takes the source), NaNs (the first NaN is the extreme), non-finite sources, operands
that the windows do not cover to the end, 0 to 3 dimensions and several dtypes."""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import select_and_scatter_add_ref

from ember.backends import kernels_conv
from ember.lax._conv import _select_and_scatter_add


@pytest.fixture
def tiled_calls(monkeypatch):
    calls = []
    real = kernels_conv._scatter_tiles

    def counting(*args, **kwargs):
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels_conv, "_scatter_tiles", counting)
    return calls


def tiled_case(seed: int):
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    window = tuple(int(v) for v in rng.integers(1, 4, size=ndim))
    # some axes longer than the windows cover (the remainder gets nothing)
    shape = tuple(w * int(rng.integers(1, 4 if ndim < 3 else 3)) + int(rng.integers(0, w)) for w in window)
    return rng, shape, window


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("select_prim", ["ge", "le"])
def test_tiled_select_and_scatter_add_matches_the_loop_reference(seed, select_prim, tiled_calls):
    rng, shape, window = tiled_case(seed)
    x = rng.integers(0, 3, size=shape).astype(np.float32)  # few distinct values: ties are common
    if seed % 3 == 0:
        x[rng.random(shape) < 0.2] = np.nan
    out_shape = tuple(s // w for s, w in zip(shape, window))
    source = rng.standard_normal(out_shape).astype(np.float32)
    if seed % 4 == 1 and source.size:
        source.flat[0] = np.inf
    # negative padding crops (ember.nn's pooling crops what the windows do not cover); the windows still tile
    pads = [(-int(rng.integers(0, 2)), 0) if s - o * w >= 1 else (0, 0) for s, o, w in zip(shape, out_shape, window)]
    want = select_and_scatter_add_ref(source, x, select_prim, window, window, pads)
    got = _select_and_scatter_add(source, x, select_prim, window, window, pads, (1,) * len(shape), (1,) * len(shape))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6, err_msg=str((shape, window)))
    assert tiled_calls


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.float16])
def test_tiled_select_and_scatter_add_dtypes(dtype, tiled_calls):
    rng = np.random.default_rng(5)
    x = rng.integers(-2, 3, size=(3, 7, 6)).astype(dtype)
    source = rng.integers(-5, 6, size=(3, 3, 3)).astype(dtype)
    want = select_and_scatter_add_ref(source, x, "ge", (1, 2, 2), (1, 2, 2), [(0, 0)] * 3)
    got = _select_and_scatter_add(source, x, "ge", (1, 2, 2), (1, 2, 2), [(0, 0)] * 3, (1, 1, 1), (1, 1, 1))
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.asarray(got), want.astype(dtype))
    assert tiled_calls


def test_a_scalar_operand(tiled_calls):
    got = _select_and_scatter_add(np.float32(3.0), np.float32(-1.0), "ge", (), (), [], (), ())
    assert float(np.asarray(got)) == 3.0
    assert tiled_calls
