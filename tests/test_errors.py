"""Bad input gets a clear error, in every family of primitives and in ember.numpy.

Each case checks three things: the exception is an `ember.errors.EmberError`;
it is also the built-in exception NumPy raises for the same mistake
(`TypeError` for dtypes, `ValueError` for shapes and arguments, ...); and its
message names the operation and the shapes and/or dtypes involved, so the
reader can find the mistake without a debugger.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import errors, lax
from ember.errors import EmberError


def f32(*shape):
    return enp.ones(shape, dtype="float32")


def i32(*shape):
    return enp.ones(shape, dtype="int32")


def c64(*shape):
    return enp.ones(shape, dtype="complex64")


class Case(NamedTuple):
    name: str
    thunk: Callable[[], object]
    builtin: type[Exception]  # what NumPy would raise for the same mistake
    needles: tuple[str, ...]  # substrings the message must contain


def case(name, thunk, builtin, *needles, marks=()):
    return pytest.param(Case(name, thunk, builtin, needles), id=name, marks=marks)



CASES = [
    # --- elementwise ---------------------------------------------------------------------------
    case("add-dtype-mismatch", lambda: lax.add(f32(2, 3), i32(2, 3)), TypeError, "add", "float32", "int32", "(2, 3)"),
    case("mul-dtype-mismatch", lambda: lax.mul(f32(2), c64(2)), TypeError, "mul", "float32", "complex64"),
    case("sin-of-int", lambda: lax.sin(i32(2, 3)), TypeError, "sin", "int32", "(2, 3)", "float"),
    case("exp-of-bool", lambda: lax.exp(enp.asarray([True])), TypeError, "exp", "bool"),
    case("sub-of-bool", lambda: lax.sub(enp.asarray([True]), enp.asarray([False])), TypeError, "sub", "bool"),
    case("add-no-broadcast", lambda: lax.add(f32(2, 3), f32(4)), ValueError, "add", "(2, 3)", "(4,)", "broadcast"),
    case("mul-no-broadcast", lambda: lax.mul(f32(2, 3), f32(3, 2)), ValueError, "mul", "(2, 3)", "(3, 2)"),
    case("rem-complex", lambda: lax.rem(c64(2), c64(2)), TypeError, "rem", "complex64"),
    case("complex-of-int", lambda: lax.complex(i32(2), i32(2)), TypeError, "complex", "int32"),
    case("abs-of-unsigned", lambda: lax.abs(enp.asarray(np.array([1], np.uint8))), TypeError, "abs", "uint8"),
    case("integer-pow-negative-int", lambda: lax.integer_pow(i32(2, 3), -1), ValueError, "integer_pow", "-1", "int32"),
    case("round-method", lambda: lax.round(f32(2), 5), ValueError, "round", "5"),
    case("complex-scalar-with-int", lambda: lax.add(i32(2), 1j), TypeError, "add", "1j", "int32"),
    case("select-n-shapes", lambda: lax.select_n(True, f32(2, 3), f32(3)), ValueError, "select_n", "(2, 3)", "(3,)"),
    case("select-n-predicate-dtype", lambda: lax.select_n(f32(3), f32(3), f32(3)), TypeError, "select_n", "float32"),
    case("select-n-predicate-shape", lambda: lax.select_n(enp.asarray([True, False]), f32(2, 3), f32(2, 3)),
         ValueError, "select_n", "(2,)", "(2, 3)"),
    case("clamp-bound-shape", lambda: lax.clamp(f32(2), f32(2, 3), 1.0), ValueError, "clamp", "(2,)", "(2, 3)"),
    case("clamp-complex", lambda: lax.clamp(c64(), c64(2), c64()), TypeError, "clamp", "complex64"),
    case("bitcast-to-bool", lambda: lax.bitcast_convert_type(f32(2), "bool"), TypeError,
         "bitcast_convert_type", "bool"),
    case("bitcast-wider", lambda: lax.bitcast_convert_type(f32(2, 3), "int64"), ValueError,
         "bitcast_convert_type", "(2, 3)", "int64"),
    case("integer-pow-float-exponent", lambda: lax.integer_pow(f32(2), 1.5), TypeError, "integer_pow", "1.5"),
    # --- bitwise -------------------------------------------------------------------------------
    case("shift-left-float", lambda: lax.shift_left(f32(2, 3), f32(2, 3)), TypeError,
         "shift_left", "float32", "integer"),
    case("shift-right-float", lambda: lax.shift_right_logical(f32(2), f32(2)), TypeError,
         "shift_right_logical", "float32"),
    case("and-float", lambda: lax.bitwise_and(f32(2), f32(2)), TypeError, "and", "float32", "bool or integer"),
    case("not-complex", lambda: lax.bitwise_not(c64(2)), TypeError, "not", "complex64"),
    case("popcount-float", lambda: lax.population_count(f32(2)), TypeError, "population_count", "float32"),
    case("operator-and-float", lambda: f32(2) & f32(2), TypeError, "float32"),
    case("operator-lshift-float", lambda: f32(2) << 1, TypeError, "shift", "float32"),
    case("operator-invert-float", lambda: ~f32(2), TypeError, "float32"),
    # --- special -------------------------------------------------------------------------------
    case("erf-int", lambda: lax.erf(i32(2, 3)), TypeError, "erf", "int32", "floating"),
    case("lgamma-complex", lambda: lax.lgamma(c64(2)), TypeError, "lgamma", "complex64"),
    case("igamma-dtype-mismatch", lambda: lax.igamma(f32(2), enp.asarray(np.ones(2, np.float16))), TypeError,
         "igamma", "float32", "float16"),
    case("zeta-no-broadcast", lambda: lax.zeta(f32(2), f32(3)), ValueError, "zeta", "(2,)", "(3,)"),
    # --- comparisons ---------------------------------------------------------------------------
    case("lt-complex", lambda: lax.lt(c64(2), c64(2)), TypeError, "lt", "complex64"),
    case("ge-complex", lambda: lax.ge(c64(2), c64(2)), TypeError, "ge", "complex64"),
    case("eq-dtype-mismatch", lambda: lax.eq(f32(2), i32(2)), TypeError, "eq", "float32", "int32"),
    case("lt-no-broadcast", lambda: lax.lt(f32(2, 3), f32(2)), ValueError, "lt", "(2, 3)", "(2,)"),
    case("operator-lt-no-broadcast", lambda: f32(2, 3) < f32(2), ValueError, "(2, 3)", "(2,)"),
    # --- structural ----------------------------------------------------------------------------
    case("reshape-size", lambda: lax.reshape(f32(2, 3), (4, 2)), ValueError, "reshape", "(2, 3)", "(4, 2)", "6", "8"),
    case("reshape-negative", lambda: lax.reshape(f32(2, 3), (-1, 3)), ValueError, "reshape", "(-1, 3)"),
    case("transpose-repeated", lambda: lax.transpose(f32(2, 3), (0, 0)), ValueError, "transpose", "(0, 0)", "(2, 3)"),
    case("transpose-rank", lambda: lax.transpose(f32(2, 3), (0, 1, 2)), ValueError, "transpose", "(0, 1, 2)", "(2, 3)"),
    case("broadcast-in-dim-size", lambda: lax.broadcast_in_dim(f32(2, 3), (2, 4), (0, 1)), ValueError,
         "broadcast_in_dim", "(2, 3)", "(2, 4)", "3", "4"),
    case("broadcast-in-dim-rank", lambda: lax.broadcast_in_dim(f32(2, 3), (2, 3), (0,)), ValueError,
         "broadcast_in_dim", "(2, 3)", "(0,)"),
    case("broadcast-in-dim-order", lambda: lax.broadcast_in_dim(f32(2, 3), (3, 2, 3), (2, 0)), ValueError,
         "broadcast_in_dim", "(2, 0)"),
    case("concatenate-shapes", lambda: lax.concatenate([f32(2, 3), f32(2, 4)], 0), ValueError,
         "concatenate", "(2, 3)", "(2, 4)", "dimension 0"),
    case("concatenate-rank", lambda: lax.concatenate([f32(2, 3), f32(3)], 0), ValueError,
         "concatenate", "(2, 3)", "(3,)"),
    case("concatenate-dtypes", lambda: lax.concatenate([f32(2), i32(2)], 0), TypeError,
         "concatenate", "float32", "int32"),
    case("concatenate-none", lambda: lax.concatenate([], 0), ValueError, "concatenate"),
    case("pad-config-length", lambda: lax.pad(f32(2, 3), 0.0, [(1, 1, 0)]), ValueError, "pad", "(2, 3)", "1"),
    case("pad-negative-interior", lambda: lax.pad(f32(2, 3), 0.0, [(0, 0, -1), (0, 0, 0)]), ValueError, "pad", "-1"),
    case("pad-crops-too-much", lambda: lax.pad(f32(2, 3), 0.0, [(-3, 0, 0), (0, 0, 0)]), ValueError, "pad", "(2, 3)"),
    case("pad-value-dtype", lambda: lax.pad(f32(2, 3), i32(), [(1, 0, 0), (0, 0, 0)]), TypeError,
         "pad", "float32", "int32"),
    case("pad-value-not-scalar", lambda: lax.pad(f32(2, 3), f32(2), [(1, 0, 0), (0, 0, 0)]), ValueError, "pad", "(2,)"),
    case("pad-value-not-scalar-zero-config", lambda: lax.pad(f32(2, 3), f32(2), [(0, 0, 0), (0, 0, 0)]), ValueError,
         "pad", "(2,)"),
    case("slice-out-of-bounds", lambda: lax.slice(f32(2, 3), (0, 0), (3, 3)), ValueError, "slice", "(2, 3)", "(3, 3)"),
    case("slice-negative-start", lambda: lax.slice(f32(2, 3), (-1, 0), (2, 3)), ValueError, "slice", "(-1, 0)"),
    case("slice-zero-stride", lambda: lax.slice(f32(2, 3), (0, 0), (2, 3), (1, 0)), ValueError, "slice", "(1, 0)"),
    case("slice-rank", lambda: lax.slice(f32(2, 3), (0,), (1,)), ValueError, "slice", "(2, 3)"),
    case("squeeze-non-one", lambda: lax.squeeze(f32(2, 3), (0,)), ValueError, "squeeze", "(2, 3)", "size 2"),
    case("squeeze-bad-axis", lambda: lax.squeeze(f32(2, 3), (5,)), ValueError, "squeeze", "axis 5", "rank 2"),
    case("expand-dims-bad-axis", lambda: lax.expand_dims(f32(2, 3), (4,)), ValueError, "expand_dims", "axis 4"),
    case("rev-bad-axis", lambda: lax.rev(f32(2, 3), (3,)), ValueError, "rev", "axis 3", "rank 2"),
    case("iota-bool", lambda: lax.iota("bool", 3), ValueError, "iota", "bool"),
    case("iota-negative", lambda: lax.iota("int32", -1), ValueError, "iota", "-1"),
    case("full-non-scalar", lambda: lax.full((2,), f32(2)), ValueError, "full", "(2,)"),
    # --- reductions ----------------------------------------------------------------------------
    case("reduce-sum-bad-axis", lambda: lax.reduce_sum(f32(2, 3), (2,)), ValueError, "reduce_sum", "axis 2", "rank 2"),
    case("reduce-max-bad-axis", lambda: lax.reduce_max(f32(2, 3), (-3,)), ValueError, "reduce_max", "axis -3"),
    case("reduce-sum-bool", lambda: lax.reduce_sum(enp.asarray([True]), (0,)), TypeError, "reduce_sum", "bool"),
    case("reduce-max-complex", lambda: lax.reduce_max(c64(2), (0,)), TypeError, "reduce_max", "complex64"),
    case("reduce-and-float", lambda: lax.reduce_and(f32(2), (0,)), TypeError, "reduce_and", "float32"),
    case("argmax-empty", lambda: lax.argmax(f32(0, 3), 0, "int32"), ValueError, "argmax", "(0, 3)", "empty"),
    case("argmin-empty", lambda: lax.argmin(f32(3, 0), 1, "int32"), ValueError, "argmin", "(3, 0)"),
    case("argmax-bad-axis", lambda: lax.argmax(f32(2, 3), 2, "int32"), ValueError, "argmax", "axis 2"),
    case("argmax-index-dtype", lambda: lax.argmax(f32(2, 3), 0, "float32"), TypeError, "argmax", "float32"),
    case("argmax-complex", lambda: lax.argmax(c64(2), 0, "int32"), TypeError, "argmax", "complex64"),
    case("enp-sum-bad-axis", lambda: enp.sum(f32(2, 3), axis=2), ValueError, "sum", "axis 2", "rank 2"),
    case("enp-sum-repeated-axis", lambda: enp.sum(f32(2, 3), axis=(0, 0)), ValueError, "sum", "repeated"),
    case("enp-mean-bad-axis", lambda: enp.mean(f32(2, 3), axis=-3), ValueError, "mean", "axis -3"),
    case("enp-prod-out", lambda: enp.prod(f32(2), out=np.zeros(())), ValueError, "prod", "out"),
    case("enp-sum-where-dtype", lambda: enp.sum(f32(2, 3), where=f32(2, 3)), TypeError, "sum", "where", "float32"),
    case("enp-argmax-empty", lambda: enp.argmax(f32(0)), ValueError, "argmax", "(0,)"),
    case("enp-argmax-bad-axis", lambda: enp.argmax(f32(2, 3), axis=2), ValueError, "argmax", "axis 2"),
    case("enp-max-empty", lambda: enp.max(f32(0)), ValueError, "max", "(0,)", "initial"),
    case("enp-min-empty-axis", lambda: enp.min(f32(3, 0), axis=1), ValueError, "min", "(3, 0)"),
    case("enp-min-bad-axis", lambda: enp.min(f32(2, 3), axis=3), ValueError, "min", "axis 3"),
    # --- dot_general -----------------------------------------------------------------------------
    case("dot-general-contracting-sizes", lambda: lax.dot_general(f32(2, 3), f32(2, 3), (((1,), (0,)), ((), ()))),
         ValueError, "dot_general", "contracting", "(2, 3)", "3", "2"),
    case("dot-general-batch-sizes",
         lambda: lax.dot_general(f32(2, 3, 4), f32(3, 4, 5), (((2,), (1,)), ((0,), (0,)))),
         ValueError, "dot_general", "batch", "(2, 3, 4)", "(3, 4, 5)"),
    case("dot-general-dtypes", lambda: lax.dot_general(f32(2, 3), i32(3, 2), (((1,), (0,)), ((), ()))),
         TypeError, "dot_general", "float32", "int32"),
    case("dot-general-bad-axis", lambda: lax.dot_general(f32(2, 3), f32(2, 3), (((5,), (1,)), ((), ()))),
         ValueError, "dot_general", "axis 5"),
    case("dot-general-unpaired", lambda: lax.dot_general(f32(2, 3), f32(2, 3), (((1,), ()), ((), ()))),
         ValueError, "dot_general"),
    case("lax-dot-rank", lambda: lax.dot(f32(2, 3, 4), f32(4)), ValueError, "dot", "(2, 3, 4)"),
    # --- ember.numpy -----------------------------------------------------------------------------
    case("matmul-shapes", lambda: enp.matmul(f32(2, 3), f32(2, 3)), ValueError, "matmul", "(2, 3)", "3", "2"),
    case("matmul-vectors", lambda: enp.matmul(f32(3), f32(4)), ValueError, "matmul", "(3,)", "(4,)"),
    case("matmul-scalar", lambda: enp.matmul(f32(2, 3), 2.0), ValueError, "matmul", "()"),
    case("matmul-operator", lambda: f32(2, 3) @ f32(2, 3), ValueError, "matmul", "(2, 3)"),
    case("matmul-batch", lambda: enp.matmul(f32(2, 2, 3), f32(3, 3, 4)), ValueError, "matmul", "(2, 2, 3)", "(3, 3, 4)"),
    case("dot-shapes", lambda: enp.dot(f32(2, 3), f32(2, 3)), ValueError, "dot", "(2, 3)"),
    case("tensordot-axes", lambda: enp.tensordot(f32(2, 3), f32(2, 3), 3), ValueError, "tensordot", "(2, 3)"),
    case("reshape-impossible", lambda: enp.reshape(f32(2, 3), (4, 2)), ValueError, "reshape", "(2, 3)", "(4, 2)"),
    case("reshape-impossible-minus-one", lambda: enp.reshape(f32(2, 3), (4, -1)), ValueError,
         "reshape", "(2, 3)", "(4, -1)"),
    case("reshape-two-minus-ones", lambda: f32(2, 3).reshape(-1, -1), ValueError, "reshape", "(-1, -1)"),
    case("reshape-method", lambda: f32(2, 3).reshape(5), ValueError, "reshape", "(2, 3)", "5"),
    case("concatenate-0d", lambda: enp.concatenate([enp.asarray(1.0), enp.asarray(2.0)]), ValueError,
         "concatenate", "zero-dimensional"),
    case("concatenate-mismatch", lambda: enp.concatenate([f32(2, 3), f32(3, 2)]), ValueError,
         "concatenate", "(2, 3)", "(3, 2)"),
    case("concatenate-rank-mismatch", lambda: enp.concatenate([f32(2, 3), f32(3)]), ValueError,
         "concatenate", "(2, 3)", "(3,)"),
    case("stack-shapes", lambda: enp.stack([f32(2, 3), f32(3)]), ValueError, "stack", "(2, 3)", "(3,)"),
    case("stack-empty", lambda: enp.stack([]), ValueError, "stack"),
    case("transpose-axes", lambda: enp.transpose(f32(2, 3), (1, 1)), ValueError, "transpose", "(1, 1)", "(2, 3)"),
    case("squeeze-non-one-enp", lambda: enp.squeeze(f32(2, 3), 0), ValueError, "squeeze", "(2, 3)"),
    case("expand-dims-axis", lambda: enp.expand_dims(f32(2, 3), 5), ValueError, "expand_dims", "axis 5"),
    case("swapaxes-axis", lambda: enp.swapaxes(f32(2, 3), 0, 3), ValueError, "swapaxes", "axis 3"),
    case("moveaxis-lengths", lambda: enp.moveaxis(f32(2, 3), (0, 1), (0,)), ValueError, "moveaxis", "(0, 1)", "(0,)"),
    case("broadcast-to", lambda: enp.broadcast_to(f32(2, 3), (4, 3)), ValueError, "broadcast_to", "(2, 3)", "(4, 3)"),
    case("split-uneven", lambda: enp.split(f32(2, 3), 2, axis=1), ValueError, "split", "3", "2"),
    case("matrix-transpose-1d", lambda: f32(3).mT, ValueError, "matrix_transpose", "(3,)"),
    case("einsum-unknown-output", lambda: enp.einsum("ij,jk->il", f32(2, 3), f32(3, 2)), ValueError,
         "einsum", "ij,jk->il", "l"),
    case("einsum-size-mismatch", lambda: enp.einsum("ij,jk", f32(2, 3), f32(2, 3)), ValueError,
         "einsum", "'j'", "3", "2"),
    case("einsum-rank-mismatch", lambda: enp.einsum("ijk,jk", f32(2, 3), f32(3, 2)), ValueError,
         "einsum", "ijk", "(2, 3)"),
    case("einsum-operand-count", lambda: enp.einsum("ij,jk,kl", f32(2, 3), f32(3, 2)), ValueError, "einsum", "3", "2"),
    case("einsum-subscripts-first", lambda: enp.einsum(f32(2), "i"), ValueError, "einsum", "subscripts"),
    case("subtract-bool", lambda: enp.subtract(enp.asarray([True]), enp.asarray([False])), TypeError,
         "subtract", "bool"),
    case("negative-bool", lambda: -enp.asarray([True]), TypeError, "negative", "bool"),
    case("remainder-complex", lambda: enp.remainder(c64(2), 2), TypeError, "remainder", "complex64"),
    case("floor-divide-complex", lambda: c64(2) // 2, TypeError, "floor_divide", "complex64"),
    case("power-negative-int", lambda: enp.power(i32(2), enp.asarray([-1, 2])), ValueError, "power", "negative"),
    case("add-no-broadcast-enp", lambda: enp.add(f32(2, 3), f32(4)), ValueError, "add", "(2, 3)", "(4,)"),
    case("zeros-negative", lambda: enp.zeros(-1), ValueError, "negative", "(-1,)"),
    case("linspace-negative-num", lambda: enp.linspace(0.0, 1.0, -1), ValueError, "linspace", "-1"),
    case("where-shapes", lambda: enp.where(f32(4) > 0, f32(2, 3), 0.0), ValueError, "where", "(4,)", "(2, 3)"),
    case("where-only-x", lambda: enp.where(f32(4) > 0, f32(4)), ValueError, "where", "both x and y"),
    case("where-size-with-xy", lambda: enp.where(f32(4) > 0, 1.0, 0.0, size=2), ValueError, "where", "size="),
    case("inner-shapes", lambda: enp.inner(f32(2, 3), f32(4)), ValueError, "inner", "(2, 3)", "(4,)"),
    case("add-string-operand", lambda: enp.add(f32(2), "a"), TypeError, "add", "str"),
    case("zeros-shape-string", lambda: enp.zeros("ab"), TypeError, "zeros", "shape"),
    case("arange-string", lambda: enp.arange("a"), TypeError, "arange", "str"),
    case("convert-element-type-string-dtype", lambda: lax.convert_element_type(f32(2), "U3"), TypeError,
         "convert_element_type", "<U3"),
    # --- indexing, gather and scatter ---------------------------------------------------------------
    case("at-set-values-shape", lambda: f32(3, 4).at[0].set(f32(5)), ValueError, "at[...].set", "(5,)", "(4,)", "(3, 4)"),
    case("take-float-indices", lambda: enp.take(f32(3), f32(2)), ValueError, "take", "integers", "float32"),
    case("take-along-axis-ndim", lambda: enp.take_along_axis(f32(3, 4), np.zeros(3, int), 1), ValueError,
         "take_along_axis", "(3,)", "(3, 4)"),
    case("dynamic-slice-sizes", lambda: lax.dynamic_slice(f32(3, 4), (0, 0), (4, 1)), ValueError, "dynamic_slice",
         "(4, 1)", "(3, 4)"),
    case("dynamic-slice-index-count", lambda: lax.dynamic_slice(f32(3, 4), (0,), (1, 1)), ValueError, "dynamic_slice",
         "2 start indices", "(3, 4)"),
    case("dynamic-update-slice-shape", lambda: lax.dynamic_update_slice(f32(3, 4), f32(5), (0, 0)), ValueError,
         "dynamic_update_slice", "(5,)", "(3, 4)"),
    case("dynamic-update-slice-dtype", lambda: lax.dynamic_update_slice(f32(3, 4), i32(1, 1), (0, 0)), TypeError,
         "dynamic_update_slice", "int32", "float32"),
    case("gather-slice-too-big", lambda: lax.gather(f32(3, 4), np.zeros((2, 1), np.int32), lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 5)), ValueError, "gather", "5", "(3, 4)"),
    case("scatter-window-too-big", lambda: lax.scatter_add(f32(3, 4), np.zeros((2, 1), np.int32), f32(2, 5),
         lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))),
         ValueError, "scatter_add", "(5)", "(4)"),
    # --- sorting and scans ------------------------------------------------------------------------------
    case("sort-shapes", lambda: lax.sort((f32(3), f32(4)), num_keys=1), ValueError, "sort", "(3,)", "(4,)"),
    case("sort-num-keys", lambda: lax.sort((f32(3), f32(3)), num_keys=3), ValueError, "sort", "num_keys", "3"),
    case("top-k-too-large", lambda: lax.top_k(f32(3), 5), ValueError, "top_k", "(3,)", "5"),
    case("top-k-complex", lambda: lax.top_k(c64(3), 2), TypeError, "top_k", "complex64"),
    case("cumlogsumexp-int", lambda: lax.cumlogsumexp(i32(3)), TypeError, "cumlogsumexp", "int32"),
    case("cumsum-axis", lambda: lax.cumsum(f32(3), axis=1), ValueError, "cumsum", "axis 1", "rank 1"),
    case("partition-kth", lambda: enp.partition(f32(3), 5), ValueError, "partition", "kth=5", "3"),
    # --- random -----------------------------------------------------------------------------------------
    case("randint-float-dtype", lambda: ember.random.randint(ember.random.key(0), (2,), 0, 5, dtype="float32"),
         TypeError, "randint", "float32", "uniform"),
    case("uniform-parameter-shape", lambda: ember.random.uniform(ember.random.key(0), (2,), minval=f32(3)), ValueError,
         "uniform", "(3,)", "(2,)"),
    # --- conversion of non-numeric input ----------------------------------------------------------
    case("asarray-string", lambda: enp.asarray("abc"), TypeError, "asarray", "str", "<U3"),
    case("asarray-bytes", lambda: enp.asarray(b"ab"), TypeError, "asarray", "bytes"),
    case("asarray-list-of-strings", lambda: enp.asarray(["a", "b"]), TypeError, "asarray", "list", "<U1"),
    case("asarray-object", lambda: enp.asarray(object()), TypeError, "asarray", "object"),
    case("asarray-none", lambda: enp.asarray(None), TypeError, "asarray", "NoneType"),
    case("asarray-dict", lambda: enp.asarray({"a": 1}), TypeError, "asarray", "dict"),
    case("asarray-datetime", lambda: enp.asarray(np.datetime64("2020-01-01")), TypeError, "asarray", "datetime64"),
    case("asarray-object-array", lambda: enp.asarray(np.array([1, "a"], dtype=object)), TypeError, "asarray", "object"),
    case("asarray-ragged", lambda: enp.asarray([[1, 2], [3]]), ValueError, "asarray", "list", "inhomogeneous"),
    case("array-string", lambda: enp.array("abc"), TypeError, "str"),
    case("asarray-bad-dtype", lambda: enp.asarray([1, 2], dtype="string"), TypeError, "string", "float32"),
    case("zeros-object-dtype", lambda: enp.zeros(3, dtype=object), TypeError, "object", "supported"),
    case("astype-string", lambda: f32(2).astype("U3"), TypeError, "<U3", "supported"),
    case("lax-sin-string", lambda: lax.sin("a"), TypeError, "sin", "str"),
    case("lax-add-none", lambda: lax.add(f32(2), None), TypeError, "add", "NoneType"),
    case("full-string-fill", lambda: enp.full((2,), "a"), TypeError, "str"),
    # --- Python int overflow ------------------------------------------------------------------------
    case("int-too-large-for-int32", lambda: enp.asarray(np.array([1], np.int8)) + 2**40, OverflowError,
         "add", str(2**40), "int32", "enable_x64"),
    case("asarray-int-too-large", lambda: enp.asarray(2**31), OverflowError, "asarray", str(2**31), "int32"),
    case("lax-int-too-large", lambda: lax.mul(i32(2), -(2**33)), OverflowError, "mul", str(-(2**33))),
    # --- Array methods and conversions ----------------------------------------------------------------
    case("float-of-vector", lambda: float(f32(2)), TypeError, "float", "(2,)"),
    case("int-of-matrix", lambda: int(i32(2, 2)), TypeError, "int", "(2, 2)"),
    case("bool-of-vector", lambda: bool(f32(2)), ValueError, "(2,)", "ambiguous"),
    case("item-of-vector", lambda: f32(3).item(), ValueError, "item", "(3,)"),
    case("index-of-float", lambda: [1, 2][enp.asarray(1.0)], TypeError, "float32"),
    case("index-out-of-bounds", lambda: f32(2, 3)[5], IndexError, "index 5", "axis 0", "size 2", "(2, 3)", ".at[idx].get"),
    case("index-out-of-bounds-negative", lambda: f32(2, 3)[:, -4], IndexError, "index -4", "axis 1", "(2, 3)",
         "-3 to 2"),
    case("index-array-out-of-bounds", lambda: f32(2, 3)[enp.asarray([0, 7])], IndexError, "index 7", "(2, 3)",
         "mode='fill'"),
    case("too-many-indices", lambda: f32(2, 3)[0, 0, 0], IndexError, "too many indices", "(2, 3)"),
    case("index-with-string", lambda: f32(2, 3)["a"], IndexError, "unsupported index", "(2, 3)"),
    case("index-in-dim-out-of-bounds", lambda: lax.index_in_dim(f32(2, 3), 4, axis=1), IndexError, "index_in_dim",
         "(2, 3)"),
    case("setitem", lambda: f32(2, 3).__setitem__(0, 1.0), TypeError, "immutable", "(2, 3)", "x.at[idx].set(y)"),
    case("setitem-under-jit", lambda: ember.jit(lambda x: x.__setitem__(0, 1.0))(f32(2)), TypeError, "immutable",
         "x.at[idx].set(y)"),
    case("len-of-0d", lambda: len(enp.asarray(1.0)), TypeError, "0-d"),
    case("iter-of-0d", lambda: iter(enp.asarray(1.0)), TypeError, "0-d"),
]


@pytest.mark.parametrize("c", CASES)
def test_clear_error(c: Case):
    with pytest.raises(Exception) as info:
        c.thunk()
    err = info.value
    assert isinstance(err, EmberError), f"{type(err).__name__} is not an EmberError: {err}"
    assert isinstance(err, c.builtin), f"{type(err).__name__} is not a {c.builtin.__name__}: {err}"
    message = str(err)
    missing = [needle for needle in c.needles if needle not in message]
    assert not missing, f"message {message!r} lacks {missing}"


def test_case_names_are_unique():
    names = [p.values[0].name for p in CASES]
    assert len(names) == len(set(names))


# --- messages that also say what to do ---------------------------------------------------------------


def test_lax_dtype_mismatch_points_to_promotion_or_conversion():
    with pytest.raises(TypeError) as info:
        lax.add(f32(2, 3), i32(2, 3))
    assert "convert_element_type" in str(info.value) or "ember.numpy" in str(info.value)


def test_unsupported_dtype_points_to_astype():
    with pytest.raises(TypeError, match=r"astype"):
        lax.sin(i32(2))


def test_broadcast_error_says_the_rule():
    with pytest.raises(ValueError, match=r"equal or 1"):
        lax.add(f32(2, 3), f32(4))


def test_axis_error_says_the_valid_range():
    with pytest.raises(ValueError, match=r"-2 to 1"):
        enp.sum(f32(2, 3), axis=2)
    with pytest.raises(ValueError, match=r"0 to 1"):
        lax.dot_general(f32(2, 3), f32(3, 2), (((-1,), (0,)), ((), ())))


def test_overflow_error_points_to_x64():
    with pytest.raises(OverflowError, match=r"enable_x64"):
        enp.asarray(2**40)


def test_setitem_points_to_at():
    with pytest.raises(TypeError, match=r"x\.at\[idx\]\.set"):
        f32(2)[0] = 1.0


def test_empty_max_says_to_pass_initial():
    with pytest.raises(ValueError, match=r"initial"):
        enp.max(f32(0, 3), axis=0)
    assert enp.max(f32(0, 3), axis=0, initial=-1.0).tolist() == [-1.0, -1.0, -1.0]


# --- the exception hierarchy ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, builtin",
    [(errors.ShapeError, ValueError), (errors.DTypeError, TypeError), (errors.InvalidArgumentError, ValueError),
     (errors.EmberOverflowError, OverflowError), (errors.ConcretizationError, TypeError),
     (errors.TracerLeakError, RuntimeError), (errors.EmberIndexError, IndexError),
     (errors.ImmutableArrayError, TypeError)],
)
def test_hierarchy(cls, builtin):
    assert issubclass(cls, EmberError) and issubclass(cls, builtin)
    assert cls.__name__ in errors.__all__


def test_every_public_exception_is_an_ember_error():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), EmberError)
    assert ember.errors is errors
