"""Randomized convolutions and windowed reductions against the naive loops of conv_reference.py.

Each case is drawn from a seeded generator: 1 to 3 spatial dimensions, feature or batch groups,
strides, input and kernel dilation, SAME/VALID/explicit (also negative) padding, and dimension
numbers given as shuffled layout strings. Integer cases are compared exactly, float64 cases tightly.
"""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import conv_ref, dilate, reduce_window_ref, select_and_scatter_add_ref

import ember
from ember import lax
from ember.errors import InvalidArgumentError, ShapeError
from ember.lax._conv import _select_and_scatter_add

SPATIAL_LETTERS = "HWD"


def _shuffled(rng, letters: str) -> str:
    return "".join(rng.permutation(list(letters)))


def _padding(rng, n, sizes, windows, names=True):
    kind = rng.integers(3) if names else 2
    if kind == 0:
        return "VALID"
    if kind == 1:
        return str(rng.choice(["SAME", "SAME_LOWER"]))
    # Explicit (low, high) pairs; a negative pad crops, as long as the window still fits.
    pads = []
    for size, window in zip(sizes, windows):
        while True:
            lo, hi = (int(v) for v in rng.integers(-1, 3, size=2))
            if size + lo + hi >= window:
                pads.append((lo, hi))
                break
    return pads


def conv_case(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))
    feature_groups, batch_groups = 1, 1
    if rng.random() < 0.6:
        if rng.random() < 0.5:
            feature_groups = int(rng.integers(2, 4))
        else:
            batch_groups = int(rng.integers(2, 4))
    in_per_group = int(rng.integers(1, 3))
    out_features = feature_groups * batch_groups * int(rng.integers(1, 3))
    batch = batch_groups * int(rng.integers(1, 3))
    max_size = 6 if n < 3 else 4
    sizes = [int(v) for v in rng.integers(1, max_size, size=n)]
    lhs_dilation = [int(v) for v in rng.integers(1, 3, size=n)]
    rhs_dilation = [int(v) for v in rng.integers(1, 3, size=n)]
    strides = [int(v) for v in rng.integers(1, 3, size=n)]
    kernel = [int(rng.integers(1, min(3, dilate(s, d)) + 1)) for s, d in zip(sizes, lhs_dilation)]
    # Keep the dilated window inside the dilated input (explicit padding is drawn to respect that).
    rhs_dilation = [r if dilate(k, r) <= dilate(s, d) else 1 for k, r, s, d in zip(kernel, rhs_dilation, sizes, lhs_dilation)]
    windows = [dilate(k, r) for k, r in zip(kernel, rhs_dilation)]
    # As in JAX, padding names are refused with input (lhs) dilation: that is lax.conv_transpose's job.
    padding = _padding(rng, n, [dilate(s, d) for s, d in zip(sizes, lhs_dilation)], windows, max(lhs_dilation) == 1)
    specs = tuple(_shuffled(rng, prefix + SPATIAL_LETTERS[:n]) for prefix in ("NC", "OI", "NC"))
    # Spatial dimensions are numbered in the order the kernel's spec names them (as in JAX):
    # strides, dilations and padding follow that order.
    spatial = [c for c in specs[1] if c not in "OI"]
    canonical_lhs = {"N": batch, "C": in_per_group * feature_groups, **dict(zip(spatial, sizes))}
    canonical_rhs = {"O": out_features, "I": in_per_group, **dict(zip(spatial, kernel))}
    lhs_shape = tuple(canonical_lhs[c] for c in specs[0])
    rhs_shape = tuple(canonical_rhs[c] for c in specs[1])
    kwargs = {"lhs_dilation": tuple(lhs_dilation), "rhs_dilation": tuple(rhs_dilation), "dimension_numbers": specs,
              "feature_group_count": feature_groups, "batch_group_count": batch_groups}  # fmt: skip
    return lhs_shape, rhs_shape, tuple(strides), padding, kwargs


@pytest.mark.parametrize("seed", range(150))
def test_random_conv_matches_the_loop_reference(seed):
    lhs_shape, rhs_shape, strides, padding, kwargs = conv_case(seed)
    rng = np.random.default_rng(1000 + seed)
    lhs = rng.integers(-4, 5, size=lhs_shape).astype(np.int32)
    rhs = rng.integers(-4, 5, size=rhs_shape).astype(np.int32)
    want = conv_ref(lhs, rhs, strides, padding, **kwargs)
    got = lax.conv_general_dilated(lhs, rhs, strides, padding, **kwargs)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.int32), err_msg=str((lhs_shape, rhs_shape, strides, padding, kwargs)))
    with ember.config.x64(True):
        lhs64, rhs64 = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)
        got64 = lax.conv_general_dilated(lhs64, rhs64, strides, padding, **kwargs)
        assert got64.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got64), conv_ref(lhs64, rhs64, strides, padding, **kwargs), rtol=1e-12, atol=1e-12)


def test_random_cases_cover_every_feature():
    cases = [conv_case(seed) for seed in range(150)]
    assert {len(c[0]) - 2 for c in cases} == {1, 2, 3}
    assert any(c[4]["feature_group_count"] > 1 for c in cases)
    assert any(c[4]["batch_group_count"] > 1 for c in cases)
    assert any(max(c[4]["lhs_dilation"]) > 1 and max(c[4]["rhs_dilation"]) > 1 for c in cases)
    assert any(max(c[2]) > 1 for c in cases)
    assert any(not isinstance(c[3], str) and min(min(p) for p in c[3]) < 0 for c in cases)
    assert {c[3] for c in cases if isinstance(c[3], str)} == {"VALID", "SAME", "SAME_LOWER"}


def window_case(seed: int, base_dilation: bool = True):
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(v) for v in rng.integers(1, 6 if ndim < 3 else 4, size=ndim))
    base = tuple(int(v) for v in rng.integers(1, 3 if base_dilation else 2, size=ndim))
    window = tuple(int(rng.integers(1, min(3, dilate(s, b)) + 1)) for s, b in zip(shape, base))
    wdil = tuple(int(rng.integers(1, 3)) if dilate(w, 2) <= dilate(s, b) else 1 for w, s, b in zip(window, shape, base))
    strides = tuple(int(v) for v in rng.integers(1, 3, size=ndim))
    padding = _padding(rng, ndim, [dilate(s, b) for s, b in zip(shape, base)], [dilate(w, d) for w, d in zip(window, wdil)])
    return shape, window, strides, padding, base, wdil


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("computation", ["add", "max", "min"])
def test_random_reduce_window_matches_the_loop_reference(seed, computation):
    shape, window, strides, padding, base, wdil = window_case(seed)
    rng = np.random.default_rng(2000 + seed)
    x = rng.integers(-50, 50, size=shape).astype(np.int32)
    identity = {"add": 0, "max": np.iinfo(np.int32).min, "min": np.iinfo(np.int32).max}[computation]
    for init in (identity, 7):  # the identity takes the primitive directly; any other value pads explicitly
        init_value = np.int32(init)
        want = reduce_window_ref(x, init_value, computation, window, strides, padding, base, wdil)
        got = lax.reduce_window(x, init_value, computation, window, strides, padding, base, wdil)
        np.testing.assert_array_equal(np.asarray(got), want.astype(np.int32),
                                      err_msg=str((shape, window, strides, padding, base, wdil, init)))  # fmt: skip


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("select_prim", ["ge", "le"])
def test_random_select_and_scatter_add_matches_the_loop_reference(seed, select_prim):
    shape, window, strides, padding, base, wdil = window_case(seed, base_dilation=False)  # as max-pool gradients
    rng = np.random.default_rng(3000 + seed)
    # Few distinct values, so ties (first one wins) are common.
    x = rng.integers(0, 3, size=shape).astype(np.float32)
    out_shape = reduce_window_ref(x, 0.0, "add", window, strides, padding, base, wdil).shape
    source = rng.standard_normal(out_shape).astype(np.float32)
    want = select_and_scatter_add_ref(source, x, select_prim, window, strides, padding, base, wdil)
    got = _select_and_scatter_add(source, x, select_prim, window, strides, padding, base, wdil)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_max_pool_of_nchw_images():
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    got = lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    np.testing.assert_array_equal(np.asarray(got), x.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)))


# --- bad input: clear errors naming the shapes ------------------------------------------------------


def _f32(*shape):
    return np.ones(shape, np.float32)


def test_mismatched_feature_groups_name_the_shapes():
    with pytest.raises(ShapeError, match=r"conv_general_dilated.*feature_group_count=2.*\(2, 4, 5, 5\).*\(6, 3, 3, 3\)"):
        lax.conv_general_dilated(_f32(2, 4, 5, 5), _f32(6, 3, 3, 3), (1, 1), "VALID", feature_group_count=2)


def test_out_features_not_divisible_by_groups():
    with pytest.raises(ShapeError, match=r"conv_general_dilated.*\(5, 2, 3, 3\)"):
        lax.conv_general_dilated(_f32(2, 4, 5, 5), _f32(5, 2, 3, 3), (1, 1), "VALID", feature_group_count=2)


def test_batch_groups_must_divide_the_batch():
    with pytest.raises(ShapeError, match=r"conv_general_dilated.*batch_group_count.*\(3, 2, 5, 5\)"):
        lax.conv_general_dilated(_f32(3, 2, 5, 5), _f32(4, 2, 3, 3), (1, 1), "VALID", batch_group_count=2)


@pytest.mark.parametrize("specs, needle", [
    (("NCHW", "OIHX", "NCHW"), "same spatial dimensions"),
    (("NCHW", "OIHW"), "three strings"),
    (("NCH", "OIH", "NCH"), "NCH"),
    (("NCHH", "OIHW", "NCHW"), "NCHH"),
])  # fmt: skip
def test_bad_dimension_numbers_are_explained(specs, needle):
    with pytest.raises(InvalidArgumentError, match=needle):
        lax.conv_general_dilated(_f32(2, 4, 5, 5), _f32(6, 4, 3, 3), (1, 1), "VALID", dimension_numbers=specs)


def test_window_larger_than_input_is_explained():
    with pytest.raises(ShapeError, match=r"window.*larger.*\(2, 4, 5, 5\).*\(6, 4, 9, 9\).*SAME"):
        lax.conv_general_dilated(_f32(2, 4, 5, 5), _f32(6, 4, 9, 9), (1, 1), "VALID")


def test_reduce_window_arguments_are_checked():
    with pytest.raises(InvalidArgumentError, match="reduce_window.*window_dimensions.*one per operand dimension"):
        lax.reduce_window(_f32(2, 4, 5, 5), 0.0, lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(InvalidArgumentError, match="reduce_window.*computation"):
        lax.reduce_window(_f32(4), 0.0, lax.mul, (2,), (1,), "VALID")
    with pytest.raises(ShapeError, match="reduce_window.*init_value.*scalar"):
        lax.reduce_window(_f32(4), np.zeros(2, np.float32), lax.add, (2,), (1,), "VALID")
