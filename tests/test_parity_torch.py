"""Parity with PyTorch (CPU): the same inputs give the same results in ember and in torch.

Inputs share one float dtype (float32, or float64 with ember's x64 mode on), so
type promotion plays no part; the reference is always PyTorch's own result.
Also checks DLPack and `__array__` interop in both directions.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

torch = pytest.importorskip("torch")

FLOATS = [pytest.param(np.float32, id="float32"), pytest.param(np.float64, id="float64")]
TORCH_DTYPE = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}

# (rtol, atol) for ordinary functions and for the special-function family.
TOL = {np.dtype(np.float32): (2e-5, 2e-6), np.dtype(np.float64): (1e-11, 1e-13)}
SPECIAL_TOL = {np.dtype(np.float32): (2e-4, 2e-5), np.dtype(np.float64): (1e-9, 1e-11)}


@pytest.fixture(params=FLOATS)
def dtype(request):
    """The float dtype under test; float64 runs with x64 on (and restores it)."""
    dt = np.dtype(request.param)
    with ember.config.x64(dt == np.float64):
        yield dt


def sample(shape, dtype, low=-2.0, high=2.0, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, size=shape).astype(dtype)


def to_torch(a: np.ndarray):
    return torch.from_numpy(np.array(a, copy=True))


def assert_matches(got, want, dtype, tol=TOL):
    """`got` (ember) equals `want` (torch) in shape, dtype and values (NaNs in the same places)."""
    assert isinstance(got, ember.Array), type(got)
    want_np = want.detach().numpy()
    assert got.shape == tuple(want.shape), (got.shape, tuple(want.shape))
    assert got.dtype == want_np.dtype, (got.dtype, want_np.dtype)
    rtol, atol = tol[np.dtype(dtype)]
    np.testing.assert_allclose(np.asarray(got), want_np, rtol=rtol, atol=atol, equal_nan=True)


# --- elementwise ---------------------------------------------------------------------------------

UNARY = [
    # name, ember function, torch function, input range, special-function tolerance?
    ("exp", enp.exp, torch.exp, (-3, 3), False),
    ("log", enp.log, torch.log, (0.05, 5), False),
    ("sin", enp.sin, torch.sin, (-4, 4), False),
    ("cos", enp.cos, torch.cos, (-4, 4), False),
    ("tanh", enp.tanh, torch.tanh, (-4, 4), False),
    ("sqrt", enp.sqrt, torch.sqrt, (0, 5), False),
    ("abs", enp.abs, torch.abs, (-3, 3), False),
    ("negative", enp.negative, torch.neg, (-3, 3), False),
    ("log1p", lax.log1p, torch.log1p, (-0.9, 3), False),
    ("expm1", lax.expm1, torch.expm1, (-3, 3), False),
    ("sigmoid", lax.logistic, torch.sigmoid, (-8, 8), False),
    ("rsqrt", lax.rsqrt, torch.rsqrt, (0.1, 5), False),
    ("sinh", lax.sinh, torch.sinh, (-3, 3), False),
    ("cosh", lax.cosh, torch.cosh, (-3, 3), False),
    ("asinh", lax.asinh, torch.asinh, (-3, 3), False),
    ("atan", lax.atan, torch.atan, (-3, 3), False),
    ("atanh", lax.atanh, torch.atanh, (-0.9, 0.9), False),
    ("floor", lax.floor, torch.floor, (-3, 3), False),
    ("ceil", lax.ceil, torch.ceil, (-3, 3), False),
    ("sign", lax.sign, torch.sign, (-3, 3), False),
    ("square", lax.square, torch.square, (-3, 3), False),
    ("erf", lax.erf, torch.erf, (-3, 3), True),
    ("erfc", lax.erfc, torch.erfc, (-3, 3), True),
    ("erf_inv", lax.erf_inv, torch.erfinv, (-0.95, 0.95), True),
    ("lgamma", lax.lgamma, torch.lgamma, (0.1, 6), True),
    ("digamma", lax.digamma, torch.digamma, (0.1, 6), True),
]


@pytest.mark.parametrize("name, ember_fn, torch_fn, domain, special", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, ember_fn, torch_fn, domain, special, dtype):
    a = sample((4, 5), dtype, *domain)
    assert_matches(ember_fn(enp.asarray(a)), torch_fn(to_torch(a)), dtype, SPECIAL_TOL if special else TOL)


def test_round_half_to_even(dtype):
    a = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6, 3.7], dtype=dtype)
    got = lax.round(enp.asarray(a), lax.RoundingMethod.TO_NEAREST_EVEN)
    assert_matches(got, torch.round(to_torch(a)), dtype)


def test_special_values(dtype):
    a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30], dtype=dtype)
    for ember_fn, torch_fn in [(enp.exp, torch.exp), (enp.tanh, torch.tanh), (lax.logistic, torch.sigmoid),
                               (enp.abs, torch.abs), (lax.expm1, torch.expm1), (enp.sqrt, torch.sqrt)]:
        assert_matches(ember_fn(enp.asarray(a)), torch_fn(to_torch(a)), dtype)
    # sign(nan) is nan in ember (as in NumPy and JAX) but 0 in PyTorch: compare the other entries.
    finite = ~np.isnan(a)
    got = np.asarray(lax.sign(enp.asarray(a)))
    np.testing.assert_array_equal(got[finite], torch.sign(to_torch(a)).numpy()[finite])
    assert np.isnan(got[~finite]).all()


BINARY = [
    ("add", enp.add, torch.add, (-3, 3), (-3, 3), False),
    ("subtract", enp.subtract, torch.sub, (-3, 3), (-3, 3), False),
    ("multiply", enp.multiply, torch.mul, (-3, 3), (-3, 3), False),
    ("true_divide", enp.true_divide, torch.div, (-3, 3), (0.5, 3), False),
    ("maximum", enp.maximum, torch.maximum, (-3, 3), (-3, 3), False),
    ("minimum", enp.minimum, torch.minimum, (-3, 3), (-3, 3), False),
    ("power", enp.power, torch.pow, (0.1, 3), (-2, 2), False),
    ("floor_divide", enp.floor_divide, torch.floor_divide, (-5, 5), (0.5, 2), False),
    ("remainder", enp.remainder, torch.remainder, (-5, 5), (0.5, 2), False),
    ("fmod", lax.rem, torch.fmod, (-5, 5), (0.5, 2), False),
    ("atan2", lax.atan2, torch.atan2, (-3, 3), (-3, 3), False),
    ("nextafter", lax.nextafter, torch.nextafter, (-3, 3), (-3, 3), False),
    ("igamma", lax.igamma, torch.special.gammainc, (0.5, 5), (0.1, 6), True),
    ("igammac", lax.igammac, torch.special.gammaincc, (0.5, 5), (0.1, 6), True),
    ("zeta", lax.zeta, torch.special.zeta, (1.5, 5), (0.5, 4), True),
]


@pytest.mark.parametrize("name, ember_fn, torch_fn, dom_a, dom_b, special", BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, ember_fn, torch_fn, dom_a, dom_b, special, dtype):
    a = sample((3, 4), dtype, *dom_a, seed=1)
    b = sample((3, 4), dtype, *dom_b, seed=2)
    if name in ("floor_divide", "remainder", "fmod"):
        b = np.where(np.arange(12).reshape(3, 4) % 2 == 0, b, -b).astype(dtype)  # both signs of divisor
    tol = SPECIAL_TOL if special else TOL
    assert_matches(ember_fn(enp.asarray(a), enp.asarray(b)), torch_fn(to_torch(a), to_torch(b)), dtype, tol)


def test_binary_broadcasting(dtype):
    a = sample((2, 1, 4), dtype, seed=3)
    b = sample((3, 1), dtype, seed=4)
    for ember_fn, torch_fn in [(enp.add, torch.add), (enp.multiply, torch.mul), (enp.maximum, torch.maximum)]:
        assert_matches(ember_fn(enp.asarray(a), enp.asarray(b)), torch_fn(to_torch(a), to_torch(b)), dtype)


def test_polygamma(dtype):
    x = sample((6,), dtype, 0.5, 5, seed=5)
    for m in (1, 2):
        got = lax.polygamma(enp.asarray(np.full(6, m, dtype=dtype)), enp.asarray(x))
        assert_matches(got, torch.polygamma(m, to_torch(x)), dtype, SPECIAL_TOL)


def test_operators(dtype):
    a = sample((3, 4), dtype, seed=6)
    b = sample((3, 4), dtype, 0.5, 2, seed=7)
    x, y = enp.asarray(a), enp.asarray(b)
    ta, tb = to_torch(a), to_torch(b)
    assert_matches(x + y * 2.0 - 1.0, ta + tb * 2.0 - 1.0, dtype)
    assert_matches(x / y, ta / tb, dtype)
    assert_matches(x // y, ta // tb, dtype)
    assert_matches(x % y, ta % tb, dtype)
    assert_matches(abs(x) ** y, abs(ta) ** tb, dtype)
    assert_matches(-x, -ta, dtype)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        got = getattr(x, op)(y)
        want = getattr(ta, op)(tb)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_where_and_clip(dtype):
    a = sample((4, 5), dtype, seed=8)
    b = sample((4, 5), dtype, seed=9)
    cond = a > b
    got = enp.where(enp.asarray(cond), enp.asarray(a), enp.asarray(b))
    assert_matches(got, torch.where(torch.from_numpy(cond), to_torch(a), to_torch(b)), dtype)
    assert_matches(enp.clip(enp.asarray(a), -0.5, 0.75), torch.clamp(to_torch(a), -0.5, 0.75), dtype)


# --- reductions ------------------------------------------------------------------------------------

AXES = [None, 0, 1, -1, (0, 2)]


def _dim(axis):
    return tuple(range(3)) if axis is None else axis


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
def test_sum_prod_mean(axis, keepdims, dtype):
    a = sample((3, 4, 5), dtype, 0.5, 1.5, seed=10)
    x, t = enp.asarray(a), to_torch(a)
    dim = _dim(axis)
    assert_matches(enp.sum(x, axis=axis, keepdims=keepdims), torch.sum(t, dim=dim, keepdim=keepdims), dtype)
    assert_matches(enp.mean(x, axis=axis, keepdims=keepdims), torch.mean(t, dim=dim, keepdim=keepdims), dtype)
    if isinstance(axis, int):  # torch.prod reduces one dimension at a time
        assert_matches(enp.prod(x, axis=axis, keepdims=keepdims), torch.prod(t, dim=axis, keepdim=keepdims), dtype)
    elif axis is None and not keepdims:
        assert_matches(enp.prod(x), torch.prod(t), dtype)


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std(axis, ddof, dtype):
    a = sample((3, 4, 5), dtype, seed=11)
    x, t = enp.asarray(a), to_torch(a)
    dim = _dim(axis)
    assert_matches(enp.var(x, axis=axis, ddof=ddof), torch.var(t, dim=dim, correction=ddof), dtype)
    assert_matches(enp.std(x, axis=axis, ddof=ddof), torch.std(t, dim=dim, correction=ddof), dtype)


def test_max_min(dtype):
    a = sample((3, 4, 5), dtype, seed=12)
    x, t = enp.asarray(a), to_torch(a)
    assert_matches(enp.max(x, axis=1), torch.amax(t, dim=1), dtype)
    assert_matches(enp.min(x, axis=(0, 2), keepdims=True), torch.amin(t, dim=(0, 2), keepdim=True), dtype)
    assert_matches(enp.max(x), torch.max(t), dtype)


def test_max_min_via_lax(dtype):
    a = sample((3, 4, 5), dtype, seed=12)
    x, t = enp.asarray(a), to_torch(a)
    assert_matches(lax.reduce_max(x, (1,)), torch.amax(t, dim=1), dtype)
    assert_matches(lax.reduce_min(x, (0, 2)), torch.amin(t, dim=(0, 2)), dtype)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin(axis, dtype):
    a = sample((4, 6), dtype, seed=13)  # continuous values: no ties
    x, t = enp.asarray(a), to_torch(a)
    for ember_fn, torch_fn in [(enp.argmax, torch.argmax), (enp.argmin, torch.argmin)]:
        got = ember_fn(x, axis=axis)
        want = torch_fn(t) if axis is None else torch_fn(t, dim=axis)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_all_any():
    a = np.array([[True, False, True], [True, True, True]])
    x, t = enp.asarray(a), torch.from_numpy(a)
    for axis in (None, 0, 1):
        for ember_fn, torch_fn in [(enp.all, torch.all), (enp.any, torch.any)]:
            got = ember_fn(x, axis=axis)
            want = torch_fn(t) if axis is None else torch_fn(t, dim=axis)
            np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_nansum_nanmean(dtype):
    a = sample((3, 4), dtype, seed=14)
    a[0, 1] = a[2, 3] = np.nan
    x, t = enp.asarray(a), to_torch(a)
    assert_matches(enp.nansum(x), torch.nansum(t), dtype)
    assert_matches(enp.nansum(x, axis=1), torch.nansum(t, dim=1), dtype)
    assert_matches(enp.nanmean(x, axis=0), torch.nanmean(t, dim=0), dtype)


# --- matmul, einsum and friends -----------------------------------------------------------------

MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((6, 3, 4), (6, 4, 2)), ((0, 4), (4, 3)), ((3, 0), (0, 2))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes, dtype):
    a = sample(shapes[0], dtype, seed=15)
    b = sample(shapes[1], dtype, seed=16)
    want = torch.matmul(to_torch(a), to_torch(b))
    assert_matches(enp.matmul(enp.asarray(a), enp.asarray(b)), want, dtype)
    assert_matches(enp.asarray(a) @ enp.asarray(b), want, dtype)


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ijk,kl->ijl", [(2, 3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("i,i,i->", [(5,), (5,), (5,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bij->bj", [(2, 3, 4)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(subscripts, shapes, dtype):
    arrays = [sample(s, dtype, seed=20 + i) for i, s in enumerate(shapes)]
    got = enp.einsum(subscripts, *[enp.asarray(a) for a in arrays])
    want = torch.einsum(subscripts, *[to_torch(a) for a in arrays])
    assert_matches(got, want, dtype)


def test_tensordot_outer_kron_inner_dot_vdot(dtype):
    a = sample((2, 3, 4), dtype, seed=30)
    b = sample((3, 4, 5), dtype, seed=31)
    ta, tb = to_torch(a), to_torch(b)
    assert_matches(enp.tensordot(enp.asarray(a), enp.asarray(b)), torch.tensordot(ta, tb), dtype)
    assert_matches(enp.tensordot(enp.asarray(a), enp.asarray(b), axes=([1], [0])),
                   torch.tensordot(ta, tb, dims=([1], [0])), dtype)
    u, v = sample((3,), dtype, seed=32), sample((4,), dtype, seed=33)
    assert_matches(enp.outer(enp.asarray(u), enp.asarray(v)), torch.outer(to_torch(u), to_torch(v)), dtype)
    m, n = sample((2, 3), dtype, seed=34), sample((3, 2), dtype, seed=35)
    assert_matches(enp.kron(enp.asarray(m), enp.asarray(n)), torch.kron(to_torch(m), to_torch(n)), dtype)
    w = sample((3,), dtype, seed=36)
    assert_matches(enp.inner(enp.asarray(u), enp.asarray(w)), torch.inner(to_torch(u), to_torch(w)), dtype)
    assert_matches(enp.dot(enp.asarray(u), enp.asarray(w)), torch.dot(to_torch(u), to_torch(w)), dtype)
    assert_matches(enp.vdot(enp.asarray(m), enp.asarray(m)), torch.sum(to_torch(m) * to_torch(m)), dtype)


def test_dot_general_batch(dtype):
    a = sample((2, 3, 4), dtype, seed=37)
    b = sample((2, 4, 5), dtype, seed=38)
    got = lax.dot_general(enp.asarray(a), enp.asarray(b), (((2,), (1,)), ((0,), (0,))))
    assert_matches(got, torch.bmm(to_torch(a), to_torch(b)), dtype)


# --- interop --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(4, dtype=np.int32), np.array([True, False]),
     np.array(2.5, dtype=np.float32), np.zeros((0, 3), np.float32), np.arange(6, dtype=np.uint8),
     np.array([1 + 2j], np.complex64), np.arange(4, dtype=np.float16)],
    ids=["f32", "i32", "bool", "0d", "empty", "u8", "c64", "f16"],
)
def test_torch_from_dlpack_of_ember(source):
    x = enp.asarray(source)
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == source.shape
    np.testing.assert_array_equal(t.numpy(), source)


def test_torch_from_dlpack_of_ember_float64():
    with ember.config.x64(True):
        x = enp.asarray(np.array([1.0, 2.0, 3.0]))
        t = torch.from_dlpack(x)
        assert t.dtype == torch.float64
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])


def test_torch_from_dlpack_of_a_transposed_result():
    x = enp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4)).T
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == (4, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T)


def test_torch_from_dlpack_of_computed_values(dtype):
    a = sample((3, 4), dtype, seed=40)
    x = enp.exp(enp.asarray(a)) * 2.0
    t = torch.from_dlpack(x)
    assert t.dtype == TORCH_DTYPE[dtype]
    np.testing.assert_allclose(t.numpy(), (torch.exp(to_torch(a)) * 2.0).numpy(), rtol=TOL[dtype][0])


@pytest.mark.parametrize(
    "tensor_dtype, x64, want",
    [(torch.float32, False, np.float32), (torch.float64, False, np.float32), (torch.float64, True, np.float64),
     (torch.int64, False, np.int32), (torch.int64, True, np.int64), (torch.int8, False, np.int8),
     (torch.bool, False, np.bool_), (torch.float16, False, np.float16), (torch.complex64, False, np.complex64)],
    ids=str,
)
def test_asarray_of_torch_tensor(tensor_dtype, x64, want):
    t = torch.tensor([1, 0, 3]).to(tensor_dtype)
    with ember.config.x64(x64):
        x = enp.asarray(t)
        assert isinstance(x, ember.Array)
        assert x.dtype == want
        np.testing.assert_array_equal(np.asarray(x), t.numpy().astype(want))


def test_asarray_of_torch_tensor_does_not_alias():
    t = torch.tensor([1.0, 2.0, 3.0])
    x = enp.asarray(t)
    t[0] = 100.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_ember_functions_accept_torch_tensors(dtype):
    a = sample((3,), dtype, seed=41)
    t = to_torch(a)
    assert_matches(enp.sin(t), torch.sin(t), dtype)
    assert_matches(enp.add(enp.asarray(a), t), t + t, dtype)
    assert_matches(enp.asarray(a) * t, t * t, dtype)


def test_round_trip_torch_ember_torch(dtype):
    t = to_torch(sample((2, 3), dtype, seed=42))
    back = torch.from_dlpack(enp.asarray(t))
    assert back.dtype == t.dtype
    assert torch.equal(back, t)


def test_enp_from_dlpack_of_torch_tensor():
    if not hasattr(enp, "from_dlpack"):
        pytest.skip("enp.from_dlpack is not implemented yet (API.md promises it)")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = enp.from_dlpack(t)
    assert isinstance(x, ember.Array) and x.dtype == np.float32 and x.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(x), t.numpy())
