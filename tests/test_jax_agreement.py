"""Where ember and JAX disagreed (issue 14, item 7), each with the rule ember now follows.

JAX is not needed to run these tests: each states JAX's rule itself (symbolic zero tangents,
saturating float-to-int casts, the dtypes of reductions, `where=` broadcasting, the derivative of
`entr`), and checks ember against that rule or against NumPy.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.scipy.special
from ember import lax

# --- symbolic zero tangents ---------------------------------------------------------------------
# An operation whose derivative is zero by definition (floor_divide, sign, ...) gives a symbolic
# zero tangent, which later rules never multiply: sqrt'(0) = inf times a zero tangent is 0, not NaN.


def _quiet(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn()


def test_floor_divide_then_std_has_zero_tangent():
    c, a, t = enp.asarray([3.0]), enp.asarray([2.0]), enp.asarray([1.0])
    y, dy = _quiet(lambda: ember.jvp(lambda a: enp.std(enp.floor_divide(c, a)), (a,), (t,)))
    assert float(y) == 0.0 and float(dy) == 0.0
    g = _quiet(lambda: ember.grad(lambda a: enp.std(enp.floor_divide(c, a)))(a))
    assert np.array_equal(np.asarray(g), [0.0]) and not np.signbit(np.asarray(g)).any()


# Each function is piecewise constant in x; sqrt(f(x) - f(1)) has value 0 at x = 1, where sqrt'
# is infinite: the derivative is 0 only if the zero tangent stays symbolic.
PIECEWISE_CONSTANT = {
    "sign": lambda x: enp.sign(x),
    "floor_divide": lambda x: enp.floor_divide(3.0, x) - 2.0,
    "divmod": lambda x: enp.divmod(3.0, x)[0] - 2.0,
    "floor": enp.floor,
    "rint": enp.rint,
    "trunc": enp.trunc,
    "integer_pow_0": lambda x: lax.integer_pow(x, 0),
    "where": lambda x: enp.where(x > 0, 1.0, 2.0),
    "copysign": lambda x: enp.copysign(1.0, x),  # a custom_jvp: defjvps skips the zero tangent of 1.0
}


@pytest.mark.parametrize("name", sorted(PIECEWISE_CONSTANT))
def test_zero_derivative_stays_symbolic(name):
    f = PIECEWISE_CONSTANT[name]
    x = enp.ones(3)

    def h(x):
        return enp.sqrt(f(x) - f(enp.ones(3)))

    _, t = _quiet(lambda: ember.jvp(h, (x,), (enp.ones(3),)))
    assert np.array_equal(np.asarray(t), np.zeros(3)), f"jvp: {t}"
    g = _quiet(lambda: ember.grad(lambda x: h(x).sum())(x))
    assert np.array_equal(np.asarray(g), np.zeros(3)), f"grad: {g}"
    for jac in (ember.jacfwd, ember.jacrev):
        j = _quiet(lambda: jac(h)(x))
        assert np.array_equal(np.asarray(j), np.zeros((3, 3))), f"{jac.__name__}: {j}"
    _, t = _quiet(lambda: ember.jvp(ember.jit(h), (x,), (enp.ones(3),)))
    assert np.array_equal(np.asarray(t), np.zeros(3)), f"jvp of jit: {t}"
    _, lin = _quiet(lambda: ember.linearize(h, x))
    assert np.array_equal(np.asarray(_quiet(lambda: lin(enp.ones(3)))), np.zeros(3))
    _, t = _quiet(lambda: ember.vmap(lambda x: ember.jvp(h, (x,), (x,)))(enp.ones((2, 3))))
    assert np.array_equal(np.asarray(t), np.zeros((2, 3))), f"vmap of jvp: {t}"


def test_a_real_infinite_derivative_is_still_inf():
    # Symbolic zeros change nothing where a tangent is really nonzero: sqrt'(0) * 1 = inf.
    _, t = _quiet(lambda: ember.jvp(lambda x: enp.sqrt(x - 1.0) * enp.floor(x), (1.0,), (1.0,)))
    assert float(t) == np.inf


# --- float -> integer casts ------------------------------------------------------------------------
# JAX's (XLA's) rule: round toward zero, then saturate at the integer type's bounds; NaN -> 0,
# +inf -> max, -inf -> min. ember applies it in the convert_element_type kernel, on every backend.

FLOATS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)]
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, -1.2, -0.7, 0.7, 1.5, 127.5, 128.0, -128.5, -129.0, 255.5, 256.0,
         32767.9, 65504.0, -65504.0, 2.0**31, -(2.0**31) - 4096, 3e9, -3e9, 2.0**63, 1e19, 2.0**64, -1e19, 3e38]  # fmt: skip


def _saturating_cast(value: float, dtype: np.dtype) -> int:
    """JAX's float -> int rule, on one Python float (already rounded to the source dtype)."""
    info = np.iinfo(dtype)
    if np.isnan(value):
        return 0
    if np.isinf(value):
        return info.max if value > 0 else info.min
    return min(max(int(value), info.min), info.max)  # int() truncates toward zero, exactly


@pytest.mark.parametrize("src", FLOATS, ids=str)
@pytest.mark.parametrize("dst", INTS, ids=str)
def test_float_to_int_saturates(src, dst):
    with ember.config.x64(True), np.errstate(all="ignore"):
        edges = np.array(EDGES, np.float64).astype(src)  # values the source type cannot hold become inf
        # one value at a time, and all of them (the kernel tests up to 32 values in Python, more with NumPy)
        for x in (*edges[:, None], edges, np.tile(edges, 3)):
            want = np.array([_saturating_cast(float(v), dst) for v in x.astype(np.float64)], dst)
            for got in (enp.asarray(x).astype(dst), lax.convert_element_type(enp.asarray(x), dst),
                        ember.jit(lambda a: a.astype(dst))(enp.asarray(x))):  # fmt: skip
                assert got.dtype == dst
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{src} -> {dst}")


def test_float_to_int_scalar_and_complex():
    assert int(enp.asarray(-1.2).astype("uint8")) == 0  # C's wrap-around gave 255
    assert int(enp.asarray(300.0).astype("uint8")) == 255
    z = enp.asarray(np.array([np.nan + 1j, -1.2 + 3j, 300 + 0j], np.complex64))
    assert np.asarray(z.astype("uint8")).tolist() == [0, 0, 255]  # the real part, then the same rule
    assert np.asarray(enp.asarray([np.nan, 0.0, -0.0, 0.1]).astype(bool)).tolist() == [True, False, False, True]


# --- reductions: result dtypes and where= broadcasting ------------------------------------------------

# JAX's table for the dtype mean/var/std compute in when the input is not inexact (dtypes.to_inexact_dtype):
# float32 up to 32-bit integers, float64 for 64-bit ones, whatever the default float is.
TO_INEXACT = {"bool": "float32", "int8": "float32", "uint8": "float32", "int16": "float32", "uint16": "float32",
              "int32": "float32", "uint32": "float32", "int64": "float64", "uint64": "float64"}  # fmt: skip


@pytest.mark.parametrize("name", ["mean", "var", "std", "nanmean"])
@pytest.mark.parametrize("src", sorted(TO_INEXACT))
def test_mean_like_dtype_under_x64(name, src):
    with ember.config.x64(True):
        x = enp.asarray(np.array([1, 0, 1], dtype=src))
        assert getattr(enp, name)(x).dtype == np.dtype(TO_INEXACT[src])


def test_var_of_bool_scalar_with_ddof_under_x64():
    with ember.config.x64(True):
        out = _quiet(lambda: enp.var(enp.asarray(True), ddof=1))
    assert out.dtype == np.float32 and np.isnan(float(out))


# JAX masks with jnp.where(where, a, identity), which broadcasts a against the mask, then reduces the
# axes `axis` names among a's own dimensions (axis=None: all of a's, counted from the front).
def _reference_masked(np_op, identity, a, mask, axis, keepdims):
    shape = np.broadcast_shapes(a.shape, mask.shape)
    full = np.where(np.broadcast_to(mask, shape), np.broadcast_to(a, shape), identity)
    axes = tuple(range(a.ndim)) if axis is None else tuple(np.atleast_1d(axis) % a.ndim)
    return np_op(full, axis=axes, keepdims=keepdims)


MASKED = {"sum": (np.sum, 0.0), "prod": (np.prod, 1.0), "max": (np.max, -np.inf), "min": (np.min, np.inf),
          "any": (np.any, False), "all": (np.all, True), "nansum": (np.sum, 0.0)}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MASKED))
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_where_mask_with_more_dimensions_broadcasts(name, axis, keepdims):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3)).astype(np.float32)
    if name in ("any", "all"):
        a = a > 0
    mask = rng.random((4, 2, 3)) > 0.3
    np_op, identity = MASKED[name]
    kwargs = {"initial": identity} if name in ("max", "min") else {}
    got = getattr(enp, name)(a, axis=axis, keepdims=keepdims, where=mask, **kwargs)
    want = _reference_masked(np_op, identity, a, mask, axis, keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_where_mask_broadcasting_in_nanmean_and_errors_elsewhere():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.nan]], np.float32)
    mask = np.array([[[True, True, False], [True, True, True]], [[False, True, True], [True, False, True]]])
    got = enp.nanmean(a, axis=1, where=mask)
    full = np.where(mask & ~np.isnan(a), a, 0.0)
    want = full.sum(axis=1) / (mask & ~np.isnan(a)).sum(axis=1)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    for name in ("mean", "var", "std"):  # JAX's mean/var/std broadcast the mask to the array only
        with pytest.raises(ember.errors.ShapeError, match=r"where= of shape \(2, 2, 3\) does not broadcast"):
            getattr(enp, name)(a, axis=1, where=mask)
    with pytest.raises(ember.errors.ShapeError, match=r"sum\(where=...\): shapes \(2, 3\) and \(5,\)"):
        enp.sum(a, where=np.ones(5, bool))
    assert enp.any(enp.ones((2, 3)), axis=1, keepdims=True, where=np.ones((4, 2, 3), bool)).shape == (4, 1, 3)


# --- the derivative of entr ----------------------------------------------------------------------
# JAX differentiates entr(x) = -x log x as -(log(x) + 1) everywhere: +inf at 0 (the slope from the
# right), NaN for x < 0 (entr is -inf there: no derivative), NaN at NaN, -inf at +inf.


def _entr_slope(v: float) -> float:
    with np.errstate(all="ignore"):
        return float(-(np.log(np.float64(v)) + 1.0))


@pytest.mark.parametrize("v", [-1.0, -1e-3, 0.0, 1e-3, 0.5, 1.0, 3.0, np.nan, np.inf])
def test_entr_derivative(v):
    entr = ember.scipy.special.entr
    want = _entr_slope(v)
    for got in (_quiet(lambda: ember.grad(entr)(v)), _quiet(lambda: ember.jvp(entr, (v,), (1.0,))[1])):
        np.testing.assert_allclose(float(got), want, rtol=1e-6)
    assert np.isnan(_entr_slope(-1.0))  # the rule's NaN for negative inputs


# --- a documented difference: convolution windows wider than the padded input -------------------


@pytest.mark.parametrize("size, rhs_dilation, padding", [(3, 2, "VALID"), (2, 1, "VALID"), (2, 1, [(-1, 0)])])
def test_conv_window_wider_than_input_raises(size, rhs_dilation, padding):
    # JAX returns an empty result here (output size max(0, ...)); ember raises, as its docstring says.
    assert "JAX returns an empty result" in lax.conv_general_dilated.__doc__
    x, w = enp.ones((1, 1, size)), enp.ones((1, 1, 3))
    with pytest.raises(ember.errors.ShapeError, match="window .* is larger than the padded input along spatial dimension 0"):
        lax.conv_general_dilated(x, w, (1,), padding, rhs_dilation=(rhs_dilation,))
    # One element more of padding and the window fits: a result of size 1 (JAX's too).
    fitting = [(0, 5 - size)] if rhs_dilation == 2 else [(0, 1)]
    assert lax.conv_general_dilated(x, w, (1,), fitting, rhs_dilation=(rhs_dilation,)).shape == (1, 1, 1)


# --- sequences of traced values ------------------------------------------------------------------


def test_asarray_of_traced_values_keeps_their_derivatives():
    # NumPy read the concrete primal values of the tracers, so these gradients were silently 0.
    assert float(ember.grad(lambda x: enp.asarray([x, x]).sum())(1.0)) == 2.0
    assert float(ember.grad(lambda x: enp.asarray([[x, 2 * x], [1.0, 2.0]]).sum())(1.0)) == 3.0
    assert float(ember.grad(lambda x: enp.array([x, x], dtype="float16").sum())(1.0)) == 2.0
    assert float(ember.grad(lambda x: enp.asarray([x, x]).at[1].multiply(2.0).sum())(1.0)) == 3.0
    np.testing.assert_array_equal(np.asarray(ember.vmap(lambda x: enp.asarray([x, 1.0]))(enp.arange(3.0))),
                                  [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])  # fmt: skip
    np.testing.assert_array_equal(np.asarray(ember.jit(lambda x: enp.asarray([x, 1.0]))(2.0)), [2.0, 1.0])


# --- weak types of results (JAX's flags, spelled out) --------------------------------------------


def _flags(x):
    return (np.dtype(x.dtype).name, bool(x.weak_type))


WEAK_CASES = {
    # a strong array stays strong whatever Python scalar it meets
    "at_multiply": (lambda: enp.ones(3).at[1].multiply(2.0), ("float32", False)),
    "at_multiply_weak": (lambda: enp.asarray(1.0).at[()].multiply(2.0), ("float32", True)),
    "einsum_scalar_operand": (lambda: enp.einsum("i,->i", enp.ones(2), 2.0), ("float32", False)),
    "einsum_python_scalars": (lambda: enp.einsum(",->", 3.0, 2.0), ("float32", True)),
    "minimum_of_at_set": (lambda: enp.minimum(enp.ones(3).at[0].set(2.0), 1.0), ("float32", False)),
    "minimum_of_weak_at_set": (lambda: enp.minimum(enp.asarray(1.0).at[()].set(2.0), 1.0), ("float32", True)),
    # comparisons follow the standard rule: weak when every operand is (int16 meets a weak float: a weak float32)
    "equal_int16_py_float": (lambda: enp.equal(enp.int16(1), 1.0), ("bool", True)),
    "equal_int16_py_int": (lambda: enp.equal(enp.int16(1), 1), ("bool", False)),
    "less_py_ints": (lambda: enp.less(1, 2), ("bool", True)),
    "isfinite_py_float": (lambda: enp.isfinite(1.0), ("bool", True)),
    # weak bools (comparisons of weak values) promote to a strong bool, as JAX's lattice joins them; alone they stay weak
    "add_weak_bools": (lambda: enp.add(enp.less(1.0, 2.0), enp.less(1, 2)), ("bool", False)),
    "equal_weak_bools": (lambda: enp.equal(enp.less(1.0, 2.0), enp.less(1, 2)), ("bool", False)),
    "logical_and_weak_bools": (lambda: enp.logical_and(enp.less(1.0, 2.0), enp.less(1, 2)), ("bool", False)),
    "logical_or_weak_floats": (lambda: enp.logical_or(1.0, 0.0), ("bool", True)),
    "logical_not_weak_bool": (lambda: enp.logical_not(enp.less(1.0, 2.0)), ("bool", True)),
    "abs_py_complex": (lambda: enp.abs(1.0j), ("float32", True)),
    "real_py_complex": (lambda: enp.real(1.0j), ("float32", True)),
    # jnp reductions return strong results
    "sum_py_float": (lambda: enp.sum(2.0), ("float32", False)),
    "max_py_float": (lambda: enp.max(2.0), ("float32", False)),
    "mean_py_float": (lambda: enp.mean(2.0), ("float32", False)),
    "var_py_float": (lambda: enp.var(2.0), ("float32", False)),
    "all_py_float": (lambda: enp.all(2.0), ("bool", False)),
    # under grad: the seed is ones_like(output), weak when the output is
    "grad_at_multiply": (lambda: ember.grad(lambda x: x.at[()].multiply(2.0))(1.0), ("float32", True)),
    "grad_einsum": (lambda: ember.grad(lambda x: enp.einsum(",->", x, 2.0))(1.0), ("float32", True)),
    "grad_minimum_at_set": (lambda: ember.grad(lambda x: enp.minimum(x.at[()].set(2.0), 1.0))(1.0), ("float32", True)),
    "value_and_grad_minimum": (lambda: ember.value_and_grad(lambda x: enp.minimum(x, 1.0))(2.0)[1], ("float32", True)),
    "grad_strong_input": (lambda: ember.grad(lambda x: x * 2.0)(enp.float32(1.0)), ("float32", False)),
    "grad_where_equal": (lambda: ember.grad(lambda x: enp.where(enp.equal(enp.int16(1), x), x, 0.0))(1.0), ("float32", True)),
    # jvp: a tangent takes its primal's weak type
    "jvp_weak_primal": (lambda: ember.jvp(lambda x: x * 2.0, (1.0,), (enp.float32(1.0),))[1], ("float32", True)),
    "jvp_strong_primal": (lambda: ember.jvp(lambda x: x * 2.0, (enp.float32(1.0),), (1.0,))[1], ("float32", False)),
    # vjp passes the given cotangent's type through
    "vjp_strong_ct": (lambda: ember.vjp(lambda x: x * 2.0, 1.0)[1](enp.float32(1.0))[0], ("float32", False)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WEAK_CASES))
def test_weak_type_as_jax(name):
    fn, want = WEAK_CASES[name]
    assert _flags(_quiet(fn)) == want


# --- .at[] updates of integer arrays with float values ----------------------------------------------
# JAX combines in the promoted dtype and casts back (toward zero); casting the values first differs.


@pytest.mark.parametrize("method, value, want", [("multiply", 2.5, 5), ("add", -0.5, 1), ("subtract", 0.5, 1),
                                                 ("add", 0.7, 2), ("set", 2.7, 2), ("min", 1.5, 1), ("max", 2.5, 2)])  # fmt: skip
def test_at_update_of_ints_combines_in_the_promoted_dtype(method, value, want):
    got = getattr(enp.asarray([1, 2]).at[1], method)(value)
    assert _flags(got) == ("int32", False)
    assert np.asarray(got).tolist() == [1, want]
    assert _flags(getattr(enp.asarray(2).at[()], method)(value)) == ("int32", True)  # a weak array stays weak
