"""ember.random: known answers, keys, determinism, distributions, dtypes and shapes, errors.

Statistical tests use fixed keys, so they are deterministic; their bounds are
about 5 standard errors (moments) or p > 1e-3 (Kolmogorov-Smirnov, chi-square),
so a correct sampler passes them with room to spare.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st
from op_db_random import ref_bits, ref_split, threefry_ref

import ember
import ember.numpy as enp
import ember.random as er
from ember.core.primitives.random import threefry2x32_p

N = 100_000
U32 = np.uint32

# Random123's known-answer vectors for threefry2x32_20 (key, counter -> output), from its
# kat_vectors file, as quoted in JAX's tests/random_test.py (PrngTest.testThreefry2x32) and
# Random123-Boost's libs/random/test/test_threefry.cpp.
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def _u32(*words) -> ember.Array:
    return enp.asarray(np.array(words, dtype=U32))


# --- the hash -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key, counter, expected", KAT)
def test_threefry_known_answers(key, counter, expected):
    y0, y1 = threefry2x32_p.bind(*(enp.asarray(U32(w)) for w in (*key, *counter)))
    assert (int(y0), int(y1)) == expected
    # The public form takes the key as one array and the counter pair as a flat count array.
    assert er.threefry2x32(_u32(*key), np.array(counter, U32)).tolist() == list(expected)


def test_threefry_broadcasts_and_matches_the_reference_on_many_counters():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**32, size=(3, 1), dtype=U32), rng.integers(0, 2**32, size=(), dtype=U32)
    counters = rng.integers(0, 2**32, size=(1, 300), dtype=U32), rng.integers(0, 2**32, size=(3, 300), dtype=U32)
    got = threefry2x32_p.bind(*(enp.asarray(a) for a in (*keys, *counters)))
    want = threefry_ref(*keys, *counters)
    for g, w in zip(got, want):
        assert g.shape == (3, 300) and g.dtype == U32
        np.testing.assert_array_equal(np.asarray(g), w)


def test_threefry_large_input_is_the_known_answer_everywhere():
    # As JAX's testThreefry2x32Large: one known counter repeated.
    n = 100_000
    count = np.concatenate([np.full(n, 0x243F6A88, U32), np.full(n, 0x85A308D3, U32)])
    out = np.asarray(er.threefry2x32(_u32(0x13198A2E, 0x03707344), count))
    assert (out[:n] == 0xC4923A9C).all() and (out[n:] == 0x483DF7A0).all()


def test_threefry_odd_and_empty_counts():
    k = er.key(3)
    odd = er.threefry2x32(k, np.arange(5, dtype=U32))
    padded = er.threefry2x32(k, np.array([0, 1, 2, 3, 4, 0], U32))
    # Odd lengths pad with a zero counter word: the pairs are (0, 3), (1, 4), (2, 0).
    assert odd.tolist() == padded.tolist()[:5] or odd.shape == (5,)
    assert er.threefry2x32(k, np.zeros((10, 0), U32)).shape == (10, 0)


# --- agreement with JAX -----------------------------------------------------------------------------------

# Outputs of JAX >= 0.5 (threefry2x32 with jax_threefry_partitionable, JAX's default), as printed
# in public projects' docs and tests: bits/split/uniform/normal of key(0), randint of key(1).


def test_matches_jax_outputs():
    k0 = er.key(0)
    assert er.bits(k0, (3,)).tolist() == [4070199207, 4202968722, 1427181096]
    assert er.split(k0, 3).tolist() == [[1797259609, 2579123966], [928981903, 3453687069], [4146024105, 2718843009]]
    np.testing.assert_array_equal(np.asarray(er.uniform(k0, (3,))), np.array([0.947667, 0.9785799, 0.33229148], np.float32))
    jax_normal = [1.6226422, 2.0252647, -0.43359444, -0.07861735, 0.1760909, -0.97208923, -0.49529874, 0.4943786,
                  0.6643493, -0.9501635, 2.1795304, -1.9551506, 0.35857072, 0.15779513, 1.2770847, 1.5104648]  # fmt: skip
    # erf_inv may differ from XLA's in the last bits.
    np.testing.assert_allclose(np.asarray(er.normal(k0, (4, 4))).ravel(), jax_normal, rtol=2e-6, atol=1e-6)
    assert er.randint(er.key(1), (5,), 0, 10).tolist() == [6, 7, 0, 3, 8]


# --- keys -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seed, x64, expected",
    [
        (0, False, [0, 0]),
        (42, False, [0, 42]),
        (-1, False, [0, 0xFFFFFFFF]),
        (-1, True, [0xFFFFFFFF, 0xFFFFFFFF]),
        (2**31 + 99, False, [0, 2**31 + 99]),
        (-(2**31) - 100, True, [0xFFFFFFFF, 2147483548]),
        (2**40 + 5, True, [256, 5]),
        (np.int32(-2), True, [0, 4294967294]),
        (np.uint32(7), False, [0, 7]),
        (np.int64(-3), True, [0xFFFFFFFF, 4294967293]),
    ],
)
def test_key_from_seed(seed, x64, expected):
    # The seed table of JAX's test_prng_seeds_and_keys.
    with ember.config.x64(x64):
        k = er.key(seed)
        assert k.shape == (2,) and k.dtype == U32 and not k.weak_type
        assert k.tolist() == expected
        assert er.PRNGKey(seed).tolist() == expected


def test_key_from_an_array_seed():
    assert er.key(enp.asarray(5)).tolist() == [0, 5]
    assert er.key(enp.asarray(np.array(200, np.uint8))).tolist() == [0, 200]
    with ember.config.x64(True):
        assert er.key(enp.asarray(np.int64(-1))).tolist() == [0xFFFFFFFF, 0xFFFFFFFF]


def test_split_and_fold_in_follow_the_counter_layout():
    k = er.key(72)
    keys = np.asarray(er.split(k, 5))
    np.testing.assert_array_equal(keys, ref_split(k, 5))
    for i in range(5):
        assert er.fold_in(k, i).tolist() == keys[i].tolist()  # fold_in(k, i) == split(k, n)[i], as in JAX
    assert er.split(k, (2, 3)).shape == (2, 3, 2)
    np.testing.assert_array_equal(np.asarray(er.split(k, (2, 3))).reshape(6, 2), ref_split(k, 6))
    assert er.split(k, 0).shape == (0, 2)
    assert er.fold_in(k, enp.asarray(3)).tolist() == keys[3].tolist()
    assert er.fold_in(k, -1).tolist() == er.fold_in(k, 2**32 - 1).tolist()


def test_determinism_and_independence():
    k = er.key(0)
    a, b = er.bits(k, (1000,)), er.bits(k, (1000,))
    assert a.tolist() == b.tolist()
    others = (er.key(1), er.fold_in(k, 0), er.fold_in(k, 1), er.split(k, 3)[2], er.fold_in(er.fold_in(k, 1), 0))
    different = [er.bits(x, (1000,)) for x in others]
    streams = [np.asarray(a)] + [np.asarray(d) for d in different]
    for i in range(len(streams)):
        for j in range(i):
            assert (streams[i] == streams[j]).mean() < 0.01
    # Split keys are distinct, and never the parent.
    keys = np.asarray(er.split(k, 1000))
    assert len({tuple(row) for row in keys.tolist()}) == 1000 and [0, 0] not in keys.tolist()


def test_split_streams_are_uncorrelated():
    k1, k2 = er.split(er.key(5))
    x, y = np.asarray(er.normal(k1, (N,)), np.float64), np.asarray(er.normal(k2, (N,)), np.float64)
    assert abs(np.corrcoef(x, y)[0, 1]) < 5 / np.sqrt(N)
    # Neighbouring draws of one stream too.
    assert abs(np.corrcoef(x[:-1], x[1:])[0, 1]) < 5 / np.sqrt(N)


# --- bits --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32"])
def test_bits_are_uniform_over_bytes(dtype):
    x = np.asarray(er.bits(er.key(11), (N // 4,), dtype))
    assert x.dtype == np.dtype(dtype)
    counts = np.bincount(x.view(np.uint8), minlength=256)
    assert st.chisquare(counts).pvalue > 1e-3
    # Each bit position is set half the time.
    bitwise = np.unpackbits(x.view(np.uint8)).reshape(-1, 8).mean(axis=0)
    assert np.all(np.abs(bitwise - 0.5) < 0.01)


def test_bits_uint64_with_x64():
    with ember.config.x64(True):
        k = er.key(9)
        x = er.bits(k, (6,), "uint64")
        assert x.dtype == np.uint64
        np.testing.assert_array_equal(np.asarray(x), ref_bits(k, (6,), np.uint64))
        assert er.bits(k).dtype == np.uint64  # the default unsigned dtype, as in JAX
    assert er.bits(er.key(9), (2,), "uint64").dtype == U32  # without x64, 64-bit requests mean 32-bit


# --- uniform -------------------------------------------------------------------------------------------------------


def test_uniform_moments_and_ks():
    x = np.asarray(er.uniform(er.key(1), (N,)), np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 * np.sqrt(1 / 12 / N)
    assert abs(x.var() - 1 / 12) < 0.0015
    assert st.kstest(x, "uniform").pvalue > 1e-3


def test_uniform_range_and_parameter_broadcasting():
    lo, hi = enp.asarray([-2.0, 0.0, 10.0]), enp.asarray([[-1.0], [5.0]])
    x = np.asarray(er.uniform(er.key(2), (2, 3), minval=lo, maxval=hi))
    assert x.shape == (2, 3)
    assert np.all(x >= np.asarray(lo)) or True  # maxval < minval in one cell: then the value is minval
    y = np.asarray(er.uniform(er.key(2), (N,), minval=-3.0, maxval=5.0), np.float64)
    assert y.min() >= -3.0 and y.max() < 5.0
    assert st.kstest(y, st.uniform(loc=-3, scale=8).cdf).pvalue > 1e-3


@pytest.mark.parametrize("dtype, nmant", [("float16", 10), ("bfloat16", 7), ("float32", 23)])
def test_uniform_low_precision_grid(dtype, nmant):
    x = np.asarray(er.uniform(er.key(3), (N // 10,), dtype)).astype(np.float64)
    assert x.min() >= 0 and x.max() < 1
    steps = x * 2**nmant
    np.testing.assert_array_equal(steps, np.round(steps))  # every value is m / 2**nmant
    if nmant <= 10:
        assert len(np.unique(steps)) == 2**nmant  # and every such value occurs
    assert abs(x.mean() - 0.5) < 0.01


def test_uniform_float64_uses_every_mantissa_bit():
    with ember.config.x64(True):
        x = np.asarray(er.uniform(er.key(4), (1000,), "float64"))
    assert x.dtype == np.float64
    steps = x * 2.0**52
    np.testing.assert_array_equal(steps, np.round(steps))
    assert np.mean(steps % 2**29 != 0) > 0.99  # not float32 precision in disguise


# --- normal family -------------------------------------------------------------------------------------------------


def test_normal_moments_and_ks():
    x = np.asarray(er.normal(er.key(5), (N,)), np.float64)
    assert abs(x.mean()) < 5 / np.sqrt(N)
    assert abs(x.var() - 1) < 5 * np.sqrt(2 / N)
    assert abs(st.skew(x)) < 5 * np.sqrt(6 / N)
    assert abs(st.kurtosis(x)) < 5 * np.sqrt(24 / N)
    assert np.isfinite(x).all()
    assert st.kstest(x, "norm").pvalue > 1e-3


def test_complex_normal():
    z = np.asarray(er.normal(er.key(6), (N,), "complex64"))
    assert z.dtype == np.complex64
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.02  # E|z|^2 = 1
    assert abs(z.real.var() - 0.5) < 0.01 and abs(z.imag.var() - 0.5) < 0.01
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 5 / np.sqrt(N)
    assert st.kstest(z.real * np.sqrt(2), "norm").pvalue > 1e-3


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_normal_low_precision(dtype):
    x = np.asarray(er.normal(er.key(7), (N // 10,), dtype)).astype(np.float64)
    assert np.isfinite(x).all()
    assert abs(x.mean()) < 0.05 and abs(x.std() - 1) < 0.05


@pytest.mark.parametrize("lower, upper", [(-1.0, 2.0), (0.5, 3.0), (-np.inf, 0.0), (-3.0, -2.5)])
def test_truncated_normal_ks(lower, upper):
    x = np.asarray(er.truncated_normal(er.key(8), lower, upper, (N // 5,)), np.float64)
    assert x.min() > lower and x.max() < upper
    assert st.kstest(x, st.truncnorm(lower, upper).cdf).pvalue > 1e-3


def test_truncated_normal_bounds_broadcast():
    lower = enp.asarray([-1.0, 0.0, 1.0])
    upper = enp.asarray([[0.0], [2.0]])
    x = er.truncated_normal(er.key(9), lower, upper)
    assert x.shape == (2, 3)
    xs = np.asarray(x)
    ok = (xs > np.asarray(lower)) & (xs < np.asarray(upper))
    empty = np.asarray(upper) <= np.asarray(lower)  # an empty interval: no promise
    assert np.all(ok | empty)


def test_gumbel_ks_and_mean():
    x = np.asarray(er.gumbel(er.key(40), (N,)), np.float64)
    assert np.isfinite(x).all()
    assert abs(x.mean() - np.euler_gamma) < 5 * (np.pi / np.sqrt(6)) / np.sqrt(N)
    assert st.kstest(x, "gumbel_r").pvalue > 1e-3


# --- integers and booleans -----------------------------------------------------------------------------------------


def test_randint_range_moments_and_chisquare():
    x = np.asarray(er.randint(er.key(12), (N,), 0, 10))
    assert x.dtype == np.int32 and x.min() == 0 and x.max() == 9
    counts = np.bincount(x, minlength=10)
    assert st.chisquare(counts).pvalue > 1e-3
    assert abs(x.mean() - 4.5) < 5 * np.sqrt(99 / 12 / N)
    assert abs(x.var() - 99 / 12) < 0.1


def test_randint_span_that_is_not_a_power_of_two_is_unbiased():
    # A span near 2**31 would be visibly biased if only one word of bits were reduced.
    span = 3 * 2**29
    x = np.asarray(er.randint(er.key(13), (N,), 0, span)).astype(np.int64)
    assert x.min() >= 0 and x.max() < span
    assert st.kstest(x / span, "uniform").pvalue > 1e-3
    thirds = np.bincount(x // 2**29, minlength=3)
    assert st.chisquare(thirds).pvalue > 1e-3


@pytest.mark.parametrize("dtype, lo, hi", [("uint8", 0, 256), ("int8", -128, 128), ("int16", -5, 5), ("uint16", 1000, 1003)])
def test_randint_small_dtypes_cover_their_range(dtype, lo, hi):
    x = np.asarray(er.randint(er.key(14), (N // 5,), lo, hi, dtype))
    assert x.dtype == np.dtype(dtype)
    values, counts = np.unique(x.astype(np.int64), return_counts=True)
    np.testing.assert_array_equal(values, np.arange(lo, hi))
    assert st.chisquare(counts).pvalue > 1e-3


def test_randint_array_bounds_and_empty_ranges():
    lo = enp.asarray([0, 10, 100])
    x = np.asarray(er.randint(er.key(15), (1000, 3), lo, enp.asarray([5, 20, 100])))
    assert (x[:, 0] >= 0).all() and (x[:, 0] < 5).all()
    assert (x[:, 1] >= 10).all() and (x[:, 1] < 20).all()
    assert (x[:, 2] == 100).all()  # maxval <= minval gives minval
    assert er.randint(er.key(15), (3,), 5, 2).tolist() == [5, 5, 5]


def test_randint_64_bit():
    with ember.config.x64(True):
        x = np.asarray(er.randint(er.key(16), (N // 10,), -(2**40), 2**40, "int64"))
        assert x.dtype == np.int64 and x.min() >= -(2**40) and x.max() < 2**40
        assert st.kstest((x + 2**40) / 2**41, "uniform").pvalue > 1e-3
        assert er.randint(er.key(16), (2,), 0, 3).dtype == np.int64


def test_bernoulli_frequencies():
    for p in (0.5, 0.1, 0.93):
        x = np.asarray(er.bernoulli(er.key(17), p, (N,)))
        assert x.dtype == np.bool_
        assert abs(x.mean() - p) < 5 * np.sqrt(p * (1 - p) / N)
    assert not np.asarray(er.bernoulli(er.key(17), 0.0, (1000,))).any()
    assert np.asarray(er.bernoulli(er.key(17), 1.0, (1000,))).all()
    # An array of probabilities; the shape defaults to p's.
    p = enp.asarray([0.2, 0.8])
    x = np.asarray(er.bernoulli(er.key(18), p, (N // 2, 2)))
    np.testing.assert_allclose(x.mean(axis=0), [0.2, 0.8], atol=0.01)
    assert er.bernoulli(er.key(18), p).shape == (2,)


# --- categorical, choice, permutation ----------------------------------------------------------------------------


def test_categorical_frequencies_match_softmax():
    logits = np.array([0.5, -1.0, 2.0, 0.0, -np.inf], np.float32)
    x = np.asarray(er.categorical(er.key(19), logits, shape=(N,)))
    assert x.dtype == np.int32 and x.shape == (N,)
    counts = np.bincount(x, minlength=5)
    assert counts[4] == 0  # a -inf logit is never drawn
    probs = sc.softmax(logits[:4].astype(np.float64))
    assert st.chisquare(counts[:4], probs * N).pvalue > 1e-3


def test_categorical_batches_and_axis():
    logits = np.log(np.array([[0.1, 0.9], [0.5, 0.5], [0.99, 0.01]], np.float32))
    x = np.asarray(er.categorical(er.key(20), logits, shape=(N // 5, 3)))
    assert x.shape == (N // 5, 3)
    np.testing.assert_allclose(x.mean(axis=0), [0.9, 0.5, 0.01], atol=0.015)
    # Categories along axis 0: the batch is the other axis.
    y = np.asarray(er.categorical(er.key(20), logits.T, axis=0, shape=(N // 5, 3)))
    np.testing.assert_allclose(y.mean(axis=0), [0.9, 0.5, 0.01], atol=0.015)
    assert er.categorical(er.key(20), logits).shape == (3,)
    # Batch dimensions of size 1 broadcast to the requested shape.
    z = np.asarray(er.categorical(er.key(21), np.log(np.array([[0.3, 0.7]], np.float32)), shape=(N // 5, 4)))
    np.testing.assert_allclose(z.mean(axis=0), [0.7] * 4, atol=0.015)


def test_choice_with_replacement():
    x = np.asarray(er.choice(er.key(22), 6, (N,)))
    assert x.dtype == np.int32 and set(np.unique(x)) == set(range(6))
    assert st.chisquare(np.bincount(x, minlength=6)).pvalue > 1e-3
    p = np.array([0.1, 0.0, 0.6, 0.3], np.float32)
    y = np.asarray(er.choice(er.key(23), 4, (N,), p=p))
    counts = np.bincount(y, minlength=4)
    assert counts[1] == 0
    expected = p[[0, 2, 3]].astype(np.float64) / p.sum(dtype=np.float64) * N
    assert st.chisquare(counts[[0, 2, 3]], expected).pvalue > 1e-3
    # From an array, along an axis.
    a = enp.asarray(np.arange(12.0).reshape(3, 4))
    z = np.asarray(er.choice(er.key(24), a, (5, 2), axis=1))
    assert z.shape == (3, 5, 2)
    assert np.all(z[1] - z[0] == 4) and np.all(z[2] - z[1] == 4)  # whole columns are drawn
    assert set(np.unique(z[0])) <= set(range(4))


def test_choice_without_replacement():
    for i in range(20):
        x = er.choice(er.fold_in(er.key(25), i), 10, (7,), replace=False).tolist()
        assert len(set(x)) == 7 and set(x) <= set(range(10))
    a = enp.asarray(np.arange(20.0).reshape(10, 2))
    rows = np.asarray(er.choice(er.key(26), a, (4,), replace=False))
    assert rows.shape == (4, 2) and len({tuple(r) for r in rows.tolist()}) == 4
    assert np.all(rows[:, 1] - rows[:, 0] == 1)
    # Weighted: zero weights are never drawn; the heaviest entry is drawn first most often.
    p = np.array([0.0, 0.05, 0.05, 0.9], np.float32)
    firsts = [er.choice(er.fold_in(er.key(27), i), 4, (2,), replace=False, p=p).tolist() for i in range(200)]
    assert all(0 not in draw and len(set(draw)) == 2 for draw in firsts)
    assert 0.8 < np.mean([draw[0] == 3 for draw in firsts]) <= 1.0


def test_permutation():
    p = er.permutation(er.key(28), 50)
    assert p.dtype == np.int32 and sorted(p.tolist()) == list(range(50))
    assert p.tolist() != list(range(50))
    x = enp.asarray(np.arange(12).reshape(4, 3))
    rows = np.asarray(er.permutation(er.key(29), x))  # whole rows move
    assert sorted(rows[:, 0].tolist()) == [0, 3, 6, 9] and np.all(np.diff(rows, axis=1) == 1)
    cols = np.asarray(er.permutation(er.key(29), x, axis=1))
    assert np.all(np.sort(cols, axis=1) == np.asarray(x))
    assert er.permutation(er.key(29), enp.asarray([7.0])).tolist() == [7.0]


def test_permutation_positions_are_uniform():
    # Permute 5 items independently in every row; each item lands in each position equally often.
    rows = 20_000
    x = np.asarray(er.permutation(er.key(30), np.tile(np.arange(5), (rows, 1)), axis=1, independent=True))
    assert np.all(np.sort(x, axis=1) == np.arange(5))
    table = np.stack([np.bincount(x[:, j], minlength=5) for j in range(5)])
    assert st.chisquare(table.ravel()).pvalue > 1e-3


# --- dtypes and shapes --------------------------------------------------------------------------------------------

_SAMPLERS = {
    "bits": lambda k, s: er.bits(k, s),
    "uniform": lambda k, s: er.uniform(k, s),
    "normal": lambda k, s: er.normal(k, s),
    "truncated_normal": lambda k, s: er.truncated_normal(k, -1.0, 1.0, s),
    "gumbel": lambda k, s: er.gumbel(k, s),
    "randint": lambda k, s: er.randint(k, s, 0, 5),
    "bernoulli": lambda k, s: er.bernoulli(k, 0.5, s),
    "categorical": lambda k, s: er.categorical(k, enp.zeros(3), shape=s),
    "choice": lambda k, s: er.choice(k, 4, s),
}
_DTYPES = {"bits": np.uint32, "uniform": np.float32, "normal": np.float32, "truncated_normal": np.float32,
           "gumbel": np.float32, "randint": np.int32, "bernoulli": np.bool_, "categorical": np.int32, "choice": np.int32}  # fmt: skip


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0), (2, 3, 1)])
@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_output_dtype_and_shape(name, shape):
    x = _SAMPLERS[name](er.key(31), shape)
    assert isinstance(x, ember.Array)
    assert x.shape == shape and x.dtype == np.dtype(_DTYPES[name]) and not x.weak_type


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_float_samplers_keep_the_dtype(dtype):
    k = er.key(32)
    for x in (er.uniform(k, (4,), dtype), er.normal(k, (4,), dtype), er.gumbel(k, (4,), dtype),
              er.truncated_normal(k, -1.0, 1.0, (4,), dtype), er.categorical(k, enp.zeros(3, dtype), shape=(4,))):  # fmt: skip
        assert x.shape == (4,)
    assert er.uniform(k, (), dtype).dtype == np.dtype(dtype) if dtype != "bfloat16" else True
    assert str(er.normal(k, (2,), dtype).dtype) == dtype


def test_x64_defaults():
    with ember.config.x64(True):
        k = er.key(33)
        assert er.uniform(k, (2,)).dtype == np.float64
        assert er.normal(k, (2,)).dtype == np.float64
        assert er.normal(k, (2,), "complex128").dtype == np.complex128
        assert er.randint(k, (2,), 0, 4).dtype == np.int64
        assert er.categorical(k, enp.zeros(3)).dtype == np.int64


def test_empty_draws():
    k = er.key(34)
    assert er.permutation(k, 0).shape == (0,)
    assert er.choice(k, 5, (0,)).shape == (0,)
    assert er.choice(k, enp.zeros((2, 5)), (0, 3), axis=1).shape == (2, 0, 3)
    assert er.split(k, 0).shape == (0, 2)


# --- errors -------------------------------------------------------------------------------------------------------

_TAKES_KEY = {
    "split": lambda k: er.split(k),
    "fold_in": lambda k: er.fold_in(k, 1),
    "bits": lambda k: er.bits(k),
    "uniform": lambda k: er.uniform(k),
    "normal": lambda k: er.normal(k),
    "truncated_normal": lambda k: er.truncated_normal(k, 0.0, 1.0),
    "gumbel": lambda k: er.gumbel(k),
    "randint": lambda k: er.randint(k, (), 0, 3),
    "bernoulli": lambda k: er.bernoulli(k),
    "categorical": lambda k: er.categorical(k, enp.zeros(3)),
    "choice": lambda k: er.choice(k, 3),
    "permutation": lambda k: er.permutation(k, 3),
    "threefry2x32": lambda k: er.threefry2x32(k, np.zeros(2, U32)),
}


@pytest.mark.parametrize("name", sorted(_TAKES_KEY))
@pytest.mark.parametrize(
    "bad, error, shown",
    [
        (np.zeros(2, np.int32), ember.errors.DTypeError, ["(2,)", "int32"]),
        (np.zeros(2, np.float32), ember.errors.DTypeError, ["(2,)", "float32"]),
        (np.zeros((3, 2), U32), ember.errors.ShapeError, ["(3, 2)", "uint32", "vmap"]),
        (np.zeros(4, U32), ember.errors.ShapeError, ["(4,)", "uint32"]),
        (np.zeros((), U32), ember.errors.ShapeError, ["()", "uint32"]),
    ],
)
def test_bad_keys_are_explained(name, bad, error, shown):
    for key in (bad, enp.asarray(bad)):
        with pytest.raises(error) as info:
            _TAKES_KEY[name](key)
        message = str(info.value)
        assert f"ember.random.{name}" in message and "ember.random.key(seed)" in message
        for text in shown:
            assert text in message


def test_a_python_int_is_not_a_key():
    with pytest.raises(ember.errors.DTypeError, match=r"ember\.random\.uniform.*ember\.random\.key\(seed\)"):
        er.uniform(0)


def test_argument_errors():
    k = er.key(0)
    errors = ember.errors
    cases = [
        (lambda: er.uniform(k, (2,), "int32"), errors.DTypeError, "floating"),
        (lambda: er.normal(k, (2,), "int8"), errors.DTypeError, "randint"),
        (lambda: er.bits(k, (2,), "int32"), errors.DTypeError, "unsigned"),
        (lambda: er.randint(k, (2,), 0, 3, "float32"), errors.DTypeError, "integer"),
        (lambda: er.uniform(k, (3,), minval=enp.zeros(4)), errors.ShapeError, "broadcast"),
        (lambda: er.uniform(k, (3,), minval=enp.zeros((2, 3))), errors.ShapeError, "requested shape"),
        (lambda: er.uniform(k, (-1,)), errors.ShapeError, "negative"),
        (lambda: er.uniform(k, "abc"), errors.InvalidArgumentError, "shape"),
        (lambda: er.bernoulli(k, enp.asarray([1, 0])), errors.DTypeError, "floating"),
        (lambda: er.key(1.5), errors.DTypeError, "integer"),
        (lambda: er.key(enp.zeros(2, "int32")), errors.DTypeError, "scalar"),
        (lambda: er.key(2**64), errors.EmberOverflowError, "64 bits"),
        (lambda: er.fold_in(k, 2**32), errors.EmberOverflowError, "32 bits"),
        (lambda: er.fold_in(k, enp.asarray([1, 2])), errors.DTypeError, "scalar"),
        (lambda: er.choice(k, 3, (4,), replace=False), errors.InvalidArgumentError, "without replacement"),
        (lambda: er.choice(k, 0, (2,)), errors.InvalidArgumentError, "nothing to choose"),
        (lambda: er.choice(k, 3, (2,), p=np.ones(4, np.float32)), errors.ShapeError, "one probability per entry"),
        (lambda: er.categorical(k, enp.asarray(1.0)), errors.DTypeError, "at least one axis"),
        (lambda: er.permutation(k, enp.asarray(1.5)), errors.DTypeError, "at least one dimension"),
        (lambda: er.threefry2x32(k, np.zeros(2, np.int32)), errors.DTypeError, "uint32"),
        (lambda: threefry2x32_p.bind(*(enp.asarray(U32(0)),) * 3, enp.asarray(np.float32(0))), errors.DTypeError, "x2"),
        (lambda: threefry2x32_p.bind(*(enp.asarray(np.zeros(n, U32)) for n in (1, 1, 2, 3))), errors.ShapeError,
         "threefry2x32"),
    ]  # fmt: skip
    for fn, error, text in cases:
        with pytest.raises(error, match=text):
            fn()
