"""NumPy kernels on paths that only large operands take (the op database's samples are small)."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.backends.kernels import make_kernels

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint16, np.complex64])
@pytest.mark.parametrize("shape", [(70, 90), (5000,)])
def test_select_n_on_many_elements_has_the_bits_of_numpy_where(dtype, shape):
    # from 4096 elements select_n picks bits with integer masks instead of NumPy's branchy where
    a = RNG.standard_normal(shape).astype(dtype)
    b = RNG.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind in "fc":
        a.flat[0], b.flat[1], b.flat[2] = np.nan, -0.0, np.inf
    which = RNG.random(shape) > 0.5
    want = np.where(which, a, b)
    for select in (lax.select_n, ember.jit(lax.select_n)):
        got = np.asarray(select(enp.asarray(which), enp.asarray(b), enp.asarray(a)))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_select_n_with_broadcast_constant_cases():
    # relu's derivative under jit: constants of one value broadcast to the operand's shape
    x = RNG.standard_normal((128, 512)).astype(np.float32)
    got = ember.jit(ember.grad(lambda x: enp.sum(enp.maximum(x, 0.0))))(enp.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), np.where(x > 0, 1.0, np.where(x == 0, 0.5, 0.0)))


@pytest.mark.parametrize("dtype", [np.float32, np.uint16, np.int8, np.bool_, np.complex64])
@pytest.mark.parametrize("n_cases", [2, 3])
def test_select_n_into_a_buffer_of_the_program_has_the_bits_of_numpy(dtype, n_cases):
    # results of 64 KiB or more go into a buffer jit's code allocates (backends/buffers.py): a mask
    # select by bits, or copies for one-byte elements and for more than two cases
    shape = (300, 400)
    cases = [(RNG.standard_normal(shape) * 3).astype(dtype) for _ in range(n_cases)]
    which = RNG.random(shape) > 0.5 if n_cases == 2 else RNG.integers(0, n_cases, shape).astype(np.int32)
    want = np.choose(which.astype(np.int32), cases)
    jitted = ember.jit(lambda w, *cs: lax.select_n(w, *cs))
    args = [enp.asarray(a) for a in (which, *cases)]
    assert "out=" in next(line for line in jitted.lower(*args).source.splitlines() if "select_n(" in line)
    got = np.asarray(jitted(*args))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_ufunc_over_a_transposed_operand_lets_numpy_lay_out_its_result():
    # jit's own buffers are C-ordered; under a transposed operand NumPy's layout is kept (speed)
    def f(x, y):
        return x * y + 1.0

    x = RNG.standard_normal((400, 300)).astype(np.float32)
    jitted = ember.jit(f)
    assert ".flags.c_contiguous" in jitted.lower(enp.asarray(x), enp.asarray(x)).source
    for a in (x, x.T.copy().T, np.asfortranarray(x)):
        got = jitted(enp.asarray(a), enp.asarray(x))
        assert np.asarray(got).tobytes() == (a * x + np.float32(1.0)).tobytes()


def test_a_ufunc_whose_dead_buffer_is_transposed_makes_a_c_ordered_result_beside_a_c_ordered_operand():
    # the product of a transposed intermediate (dead after it) and a C-ordered one: into the dead buffer
    # it would write across memory and the reshape after it copy the result back; a small result is new
    # instead, laid out like the C-ordered operand (large ones keep the program's buffer)
    def f(x, y):
        h = (x.T * 2.0) * y  # x.T * 2.0 is dead after the product, and transposed when x is C-ordered
        return h.reshape(-1)

    for shape in ((40, 30), (400, 300)):
        x = RNG.standard_normal(shape).astype(np.float32)
        y = RNG.standard_normal(shape[::-1]).astype(np.float32)
        jitted = ember.jit(f)
        source = jitted.lower(enp.asarray(x), enp.asarray(y)).source
        small = x.nbytes <= 64 * 1024
        assert (".flags.c_contiguous or not" in source) == small
        got = jitted(enp.asarray(x), enp.asarray(y))
        assert np.asarray(got).tobytes() == ((x.T * np.float32(2.0)) * y).reshape(-1).tobytes()
        if small:
            h = ember.jit(lambda x, y: (x.T * 2.0) * y)(enp.asarray(x), enp.asarray(y))
            assert np.asarray(h).flags.c_contiguous


def _layouts(shape, make):
    # the views vmap and jit hand a kernel: contiguous, transposed, broadcast (a vmapped constant or
    # mask), one value broadcast (relu's 0), reversed and sliced
    yield make(shape)
    yield make(shape[::-1]).transpose(2, 1, 0)
    yield make((shape[1], shape[2], shape[0])).transpose(2, 0, 1)
    yield np.broadcast_to(make((1, *shape[1:])), shape)
    yield np.broadcast_to(make((*shape[:2], 1)), shape)
    yield np.broadcast_to(make(()), shape)
    yield make(shape)[::-1]
    yield make((*shape[:2], 2 * shape[2]))[:, :, ::2]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.complex64])
def test_select_n_kernel_on_views_has_the_bits_of_numpy_where(dtype):
    shape = (6, 40, 30)  # from 4096 elements: bits picked by integer masks, passes chosen by layout
    select_n = make_kernels(np)["select_n"]

    def case(s):
        x = (RNG.standard_normal(s) * 3).astype(dtype)
        x.flat[0] = np.nan
        return x

    masks = list(_layouts(shape, lambda s: RNG.random(s) > 0.5))
    zero = np.broadcast_to(np.zeros((), dtype), shape)
    for which, a, b in itertools.product(masks, _layouts(shape, case), [*_layouts(shape, case), zero]):
        want = np.where(which, a, b)
        out = np.empty(shape, dtype)
        for got in (select_n(which, b, a), select_n(which, b, a, out=out)):
            assert got.dtype == want.dtype and np.ascontiguousarray(got).tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape, strides, padding, rhs_dilation, dimension_numbers, fgc, bgc",
    [
        ((16, 4, 20, 20), (8, 4, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), ("NCHW", "OIHW", "NCHW"), 1, 1),
        ((16, 6, 20, 20), (9, 2, 3, 3), (2, 1), [(0, 1), (2, 0)], (1, 2), ("NCHW", "OIHW", "NCHW"), 3, 1),
        ((40, 4, 18, 18), (1, 80, 16, 16), (1, 1), "VALID", (1, 1), ("CNHW", "IOHW", "CNHW"), 40, 1),
        ((12, 5, 20, 20), (6, 5, 3, 3), (1, 1), "SAME", (1, 1), ("NCHW", "OIHW", "NCHW"), 1, 3),
        ((8, 3, 30), (4, 3, 5), (1,), "SAME", (1,), ("NCH", "OIH", "NCH"), 1, 1),
        ((2, 2, 9, 9, 9), (3, 2, 2, 2, 2), (1, 1, 1), "VALID", (1, 1, 1), ("NCDHW", "OIDHW", "NCDHW"), 1, 1),
    ],
)
def test_conv_by_blocks_of_im2col_matches_one_matmul(monkeypatch, lhs_shape, rhs_shape, strides, padding,
                                                     rhs_dilation, dimension_numbers, fgc, bgc):  # fmt: skip
    # large im2col matrices are copied and multiplied a block at a time (kernels_conv._im2col_matmul);
    # with tiny blocks every split (groups, batch, output rows) runs on these small operands
    from ember.backends import kernels_conv

    lhs, rhs = RNG.standard_normal(lhs_shape).astype(np.float32), RNG.standard_normal(rhs_shape).astype(np.float32)

    def conv():
        return np.asarray(lax.conv_general_dilated(enp.asarray(lhs), enp.asarray(rhs), strides, padding,
                                                   rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                                                   feature_group_count=fgc, batch_group_count=bgc))  # fmt: skip

    want = conv()
    for block, min_rows in itertools.product((64, 2048, 50_000), (1, 40)):
        monkeypatch.setattr(kernels_conv, "_IM2COL_BLOCK_BYTES", block)
        monkeypatch.setattr(kernels_conv, "_IM2COL_MIN_ROWS", min_rows)
        # float32, summed in another order
        np.testing.assert_allclose(conv(), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("lhs_shape, rhs_shape", [((5,), (5, 3)), ((5,), (3, 5)), ((4, 5), (5, 3)), ((5, 4), (5, 3)),
                                                  ((4, 5), (3, 5)), ((5, 4), (3, 5)), ((4, 5), (5,)), ((5, 4), (5,))])  # fmt: skip
def test_dot_general_of_transposed_matrices_is_numpys_dot_of_the_views(lhs_shape, rhs_shape):
    # jit folds transposes into dot_general's dimension numbers; the kernel calls np.dot on transposed
    # views, as eager `x @ w.T` does, so that jit and eager give the same bits (into an `out=` buffer too)
    dot_general = make_kernels(np)["dot_general"]
    lhs, rhs = RNG.standard_normal(lhs_shape).astype(np.float32), RNG.standard_normal(rhs_shape).astype(np.float32)
    lc = 0 if len(lhs_shape) == 1 or lhs_shape[0] == 5 else 1
    rc = 0 if len(rhs_shape) == 1 or rhs_shape[0] == 5 else 1
    a = lhs if lc == lhs.ndim - 1 else lhs.T
    b = rhs if rc == 0 else rhs.T
    want = np.dot(a, b)
    out = np.empty(want.shape, np.float32)
    for got in (dot_general(lhs, rhs, dimension_numbers=(((lc,), (rc,)), ((), ()))),
                dot_general(lhs, rhs, dimension_numbers=(((lc,), (rc,)), ((), ())), out=out)):  # fmt: skip
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    if len(lhs_shape) == len(rhs_shape) == 2 and lc == 1 and rc == 1:  # x @ w.T, eager and jitted
        x, w = enp.asarray(lhs), enp.asarray(rhs)
        eager, jitted = x @ w.T, ember.jit(lambda x, w: x @ w.T)(x, w)
        assert np.asarray(eager).tobytes() == np.asarray(jitted).tobytes() == want.tobytes()


@pytest.mark.parametrize("rhs_shape", [(5, 3), (3, 5)])
def test_dot_general_of_a_stack_and_a_transposed_matrix_is_one_2d_dot(rhs_shape):
    # a vmapped Linear layer, x (batch, 1, in) @ w.T: one np.dot of the rows, as eager mode's lane calls it
    dot_general = make_kernels(np)["dot_general"]
    lhs = RNG.standard_normal((6, 4, 5)).astype(np.float32)
    rhs = RNG.standard_normal(rhs_shape).astype(np.float32)
    rc = 0 if rhs_shape[0] == 5 else 1
    want = np.dot(lhs.reshape(24, 5), rhs if rc == 0 else rhs.T).reshape(6, 4, 3)
    got = dot_general(lhs, rhs, dimension_numbers=(((2,), (rc,)), ((), ())))
    assert got.tobytes() == want.tobytes()
    if rc == 1:
        x, w = enp.asarray(lhs), enp.asarray(rhs)
        assert np.asarray(ember.jit(lambda x, w: x @ w.T)(x, w)).tobytes() == np.asarray(x @ w.T).tobytes() == want.tobytes()


@pytest.mark.parametrize("lhs_shape, rhs_shape", [((6, 40), (6, 3)), ((6, 3), (6, 40)), ((6, 4, 5), (6, 2, 3)),
                                                  ((1, 7), (1, 7)), ((0, 5), (0, 2)), ((64, 256), (64, 10))])  # fmt: skip
def test_dot_general_outer_products_are_products_of_the_elements(lhs_shape, rhs_shape):
    # a batch of outer products (per-example weight gradients); with any_order (jit, for a result only
    # elementwise code, reductions or the caller read) laid out with the longer free axis innermost in
    # memory, a transposed view when that is the left operand's; each element one product
    dot_general = make_kernels(np)["dot_general"]
    lhs, rhs = RNG.standard_normal(lhs_shape).astype(np.float32), RNG.standard_normal(rhs_shape).astype(np.float32)
    left = lhs.reshape(*lhs_shape, *(1,) * (len(rhs_shape) - 1))
    want = left * rhs.reshape(rhs_shape[0], *(1,) * (len(lhs_shape) - 1), *rhs_shape[1:])
    numbers = (((), ()), ((0,), (0,)))
    out = np.full(want.shape, np.nan, np.float32)
    for any_order in (False, True):
        for got in (dot_general(lhs, rhs, dimension_numbers=numbers, any_order=any_order),
                    dot_general(lhs, rhs, dimension_numbers=numbers, out=out, any_order=any_order)):  # fmt: skip
            assert got.shape == want.shape and np.ascontiguousarray(got).tobytes() == want.tobytes()
            assert got.flags.c_contiguous or any_order
    x, d = enp.asarray(lhs), enp.asarray(rhs)
    elementwise = ember.jit(lambda x, d: lax.dot_general(x, d, numbers) * 2.0 + 1.0)
    np.testing.assert_array_equal(np.asarray(elementwise(x, d)), want * np.float32(2) + np.float32(1))
    flattened = ember.jit(lambda x, d: lax.dot_general(x, d, numbers).reshape(want.shape[0], math.prod(want.shape[1:])))
    assert "any_order" not in flattened.lower(x, d).source
    assert "any_order" in elementwise.lower(x, d).source or want.size == 0  # (empty: no ufunc code)
    np.testing.assert_array_equal(np.asarray(flattened(x, d)), want.reshape(want.shape[0], math.prod(want.shape[1:])))


@pytest.mark.parametrize("name", ["reduce_window_sum", "reduce_window_max", "select_and_scatter_add",
                                  "select_and_gather_add"])  # fmt: skip
@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 1, 3, 2), (1, 0, 2, 3)])
def test_windowed_kernels_on_transposed_operands_have_the_bits_of_c_order(name, perm):
    # an operand in another memory order (an NCHW view of NHWC memory) is worked on in that order when it
    # keeps the windowed axes in theirs (else as it is): the same choices at ties, the same sums
    kernel = make_kernels(np)[name]
    shape = (3, 4, 9, 8)
    base = RNG.integers(-2, 3, [shape[i] for i in perm]).astype(np.float32)  # many ties
    operand = base.transpose(np.argsort(perm))
    assert not operand.flags.c_contiguous
    params = {"window_dimensions": (1, 1, 3, 2), "window_strides": (1, 1, 2, 2), "base_dilation": (1, 1, 1, 1),
              "padding": ((0, 0), (0, 0), (1, 1), (0, 1)), "window_dilation": (1, 1, 1, 1)}  # fmt: skip
    if name.startswith("select"):
        params["select_prim"] = "ge"
    if name == "select_and_scatter_add":
        pooled_shape = (3, 4, 5, 4)
        args = (RNG.standard_normal(pooled_shape).astype(np.float32), operand)
    elif name == "select_and_gather_add":
        args = (RNG.standard_normal(shape).astype(np.float32), operand)
    else:
        args = (operand,)
    want = kernel(*(np.ascontiguousarray(a) for a in args), **params)
    got = kernel(*args, **params)
    assert got.shape == want.shape and np.ascontiguousarray(got).tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shape", [(64, 8, 6, 6), (5, 3, 40, 7), (4, 1, 30, 9), (300, 16), (16, 300)])
def test_sums_of_short_rows_in_every_layout(shape, dtype):
    # reduce_sum across rows of at most 64 elements (a per-channel sum of NHWC memory): ones @ (outer,
    # summed, inner) where the summed axes are one block of memory, einsum elsewhere; along short rows
    # (NCHW memory): (outer, summed) @ ones; every layout and set of axes against a float64 sum, eager
    # and jit alike
    from ember.backends import kernels

    reduce_sum = make_kernels(np)["reduce_sum"]
    base = RNG.standard_normal(shape) + (1j * RNG.standard_normal(shape) if dtype == np.complex64 else 0)
    ways = set()
    for perm in itertools.permutations(range(len(shape))):
        x = np.ascontiguousarray(base.transpose(perm)).transpose(np.argsort(perm)).astype(dtype)
        for count in range(1, len(shape)):
            for axes in itertools.combinations(range(len(shape)), count):
                way = kernels._sum_way(x.shape, x.strides, x.dtype, axes) if x.size >= 1024 else ("reduce",)
                ways.add(way[0] if way[0] != "rows" else "rows along" if way[2][2] == 1 else "rows across")
                want = np.add.reduce(base, axis=axes)
                got = reduce_sum(x, axes=axes)
                assert got.shape == want.shape and got.dtype == dtype
                tol = 1e-5 if dtype != np.float64 else 1e-12
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(base.size))
    assert ({"rows along", "rows across"} <= ways) == (dtype != np.complex64) and ("einsum" in ways) == (sum(n > 1 for n in shape) > 3 or dtype == np.complex64)
    nhwc = enp.asarray(np.ascontiguousarray(base.astype(dtype).transpose(0, 2, 3, 1)) if len(shape) == 4 else base.astype(dtype))

    def per_channel(a):
        h = a.transpose(0, 3, 1, 2) if a.ndim == 4 else a.T
        return enp.sum(h * 2.0, axis=(0, 2, 3) if a.ndim == 4 else 1)

    assert np.asarray(ember.jit(per_channel)(nhwc)).tobytes() == np.asarray(per_channel(nhwc)).tobytes()
