"""jit's optimization passes (ember/core/passes.py): what each pass removes or rewrites, checked on
the IR before and after, and that the optimized program still computes the same values (against
NumPy or the unoptimized program) with every variable's abstract value intact (check_program)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.core import ir, passes
from ember.core.abstract import ShapedArray
from ember.core.ir import Eqn, Literal, Program, Var, check_program, eval_program
from ember.core.passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    inline_scalar_constants,
    optimize,
    simplify,
)
from ember.core.primitive import PRIMITIVES, Primitive
from ember.core.primitives.elementwise import convert_element_type_p, exp_p, mul_p, sin_p
from ember.core.primitives.random import threefry2x32_p
from ember.core.primitives.structural import broadcast_in_dim_p, reshape_p, transpose_p
from ember.core.pytree import tree_flatten
from ember.core.staging import stage

RNG = np.random.default_rng(0)
F32 = np.dtype("float32")


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _ir(f, *args):
    closed = ember.make_ir(f)(*args)
    return closed.program, list(closed.consts)


def _prims(program: Program) -> list[str]:
    return [eqn.primitive.name for eqn in program.eqns]


def _run(program: Program, consts, *args) -> list[np.ndarray]:
    return [np.asarray(o) for o in eval_program(program, consts, [enp.asarray(a) for a in args])]


def _apply(run, program: Program, consts, *args, then_dce: bool = True):
    """`run` (a pass, or optimize) on the program, checked, with the same values as before on `args`."""
    new_program, new_consts = run(program, consts)
    if then_dce:
        new_program, new_consts = eliminate_dead_code(new_program, new_consts)
    check_program(new_program)
    assert new_program.invars == program.invars  # the signature never changes
    assert [v.aval for v in new_program.outvars] == [v.aval for v in program.outvars]
    assert len(new_program.constvars) == len(new_consts)
    if args:
        for got, want in zip(_run(new_program, new_consts, *args), _run(program, consts, *args), strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return new_program, new_consts


def _literals(program: Program) -> list[Literal]:
    return [v for eqn in program.eqns for v in eqn.inputs if type(v) is Literal]


# --- dead code -------------------------------------------------------------------------------------


def test_dead_code_drops_unused_equations_and_constants_but_keeps_inputs():
    c = enp.asarray(_rand(3))
    program, consts, _ = stage(lambda x, y: [x * 2.0, enp.sin(x) * c], [ShapedArray((3,), F32)] * 2)
    assert _prims(program) == ["mul", "sin", "mul"] and len(consts) == 2
    only_first = program._replace(outvars=program.outvars[:1])
    new, new_consts = _apply(eliminate_dead_code, only_first, consts, _rand(3), _rand(3))
    assert _prims(new) == ["mul"]
    assert len(new.invars) == 2  # y was never used, and stays
    assert [np.asarray(k).shape for k in new_consts] == [()]  # c went with sin(x) * c


def test_dead_code_keeps_an_equation_while_one_of_its_outputs_is_used():
    key = ember.random.PRNGKey(3)
    program, consts = _ir(lambda k: threefry2x32_p.bind(k[0], k[1], enp.arange(4, dtype="uint32"),
                                                        enp.zeros(4, "uint32"))[1], key)  # fmt: skip
    assert "threefry2x32" in _prims(program)
    new, _ = _apply(eliminate_dead_code, program, consts, np.asarray(key))
    assert "threefry2x32" in _prims(new)


# --- common subexpressions -----------------------------------------------------------------------------


def test_cse_merges_duplicate_subexpressions():
    def f(x, y):
        a = enp.sin(x) * y
        b = enp.sin(x) * y
        return a + b, y * enp.sin(x) + enp.exp(x), enp.exp(x)

    x, y = _rand(4), _rand(4)
    program, consts = _ir(f, x, y)
    assert _prims(program).count("sin") == 3 and _prims(program).count("mul") == 3
    new, _ = _apply(eliminate_common_subexpressions, program, consts, x, y)
    # mul is commutative: y * sin(x) is the same product as sin(x) * y
    assert sorted(_prims(new)) == ["add", "add", "exp", "mul", "sin"]
    s = np.sin(x) * y
    for got, want in zip(_run(new, consts, x, y), [s + s, s + np.exp(x), np.exp(x)]):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_cse_respects_params_operand_order_and_literal_bits():
    x = _rand(2, 3)
    program, consts = _ir(lambda x: (enp.sum(x, 0), enp.sum(x, 1), x - enp.sin(x), enp.sin(x) - x), x)
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new).count("reduce_sum") == 2  # different axes
    assert _prims(new).count("sub") == 2  # sub is not commutative
    # 0.0 and -0.0 compare equal but are different literals: no merging
    v = Var(ShapedArray((3,), F32))
    out1, out2 = Var(v.aval), Var(v.aval)
    eqns = [Eqn(mul_p, [v, Literal(np.float32(0.0), ShapedArray((), F32))], {}, [out1]),
            Eqn(mul_p, [v, Literal(np.float32(-0.0), ShapedArray((), F32))], {}, [out2])]  # fmt: skip
    program = Program([], [v], eqns, [out1, out2])
    new, _ = _apply(eliminate_common_subexpressions, program, [], -np.ones(3, np.float32))
    assert len(new.eqns) == 2


def test_cse_of_random_bits_from_the_same_key():
    # threefry2x32 is a pure function of key and counter: the same key gives the same bits, so the two
    # draws are one computation (their counters are equal constants, merged first).
    key = ember.random.PRNGKey(7)
    f = lambda k: (ember.random.uniform(k, (5,)), ember.random.uniform(k, (5,)))
    program, consts = _ir(f, key)
    assert _prims(program).count("threefry2x32") == 2
    new, new_consts = _apply(optimize, program, consts, np.asarray(key))
    assert _prims(new).count("threefry2x32") == 1
    for got, want in zip(eval_program(new, new_consts, [key]), f(key), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_cse_never_merges_calls_of_different_custom_rules():
    @ember.custom_jvp
    def f(x):
        return enp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), enp.cos(primals[0]) * tangents[0]))

    @ember.custom_jvp
    def g(x):
        return enp.sin(x)

    g.defjvp(lambda primals, tangents: (g(primals[0]), 2.0 * tangents[0]))
    x = _rand(3)
    program, consts = _ir(lambda x: f(x) + g(x), x)
    assert _prims(program).count("custom_jvp_call") == 2
    new, new_consts = _apply(optimize, program, consts, x)
    assert _prims(new).count("custom_jvp_call") == 2
    # and the rules still apply to the optimized program: d/dx (f + g) = cos x + 2
    grad = ember.grad(lambda x: enp.sum(eval_program(new, new_consts, [x])[0]))(enp.asarray(x))
    np.testing.assert_allclose(np.asarray(grad), np.cos(x) + 2.0, rtol=1e-6)


def test_params_compare_by_value_and_callables_by_identity():
    freeze = passes._freeze
    assert freeze({"a": [1, (2, 3)], "b": np.arange(3)}) == freeze({"b": np.arange(3), "a": [1, (2, 3)]})
    assert freeze((1, 2)) != freeze([1, 2])
    assert freeze(1) != freeze(True) != freeze(1.0)
    assert freeze(0.0) != freeze(-0.0)
    assert freeze(np.dtype("float32")) == freeze(np.dtype(np.float32))
    assert freeze(lambda: 0) != freeze(lambda: 0)
    fn = np.sin
    assert freeze({"f": fn}) == freeze({"f": fn})
    assert freeze(np.arange(3)) != freeze(np.arange(3.0))
    hash(freeze({"unhashable": [{1, 2}], "set": {3}}))


_effect_p = Primitive("test_passes_effect")  # a stand-in for ember.debug.print's callback
del PRIMITIVES[_effect_p.name]  # not one of ember's primitives (the op database covers those)
_effect_p.abstract_eval = lambda x: x


@pytest.fixture
def effect_calls():
    calls = []
    _effect_p._kernel = lambda x: calls.append(x) or x
    ir.effectful.add(_effect_p)
    yield calls
    ir.effectful.discard(_effect_p)


def test_effectful_equations_are_never_dropped_merged_or_folded(effect_calls):
    a, x = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), F32))
    e1, e2, e3, out = (Var(x.aval) for _ in range(4))
    eqns = [Eqn(_effect_p, [x], {}, [e1]), Eqn(_effect_p, [x], {}, [e2]), Eqn(_effect_p, [a], {}, [e3]),
            Eqn(sin_p, [x], {}, [out])]  # fmt: skip
    program = Program([a], [x], eqns, [out])
    new, consts = _apply(optimize, program, [enp.ones(3)])
    assert _prims(new) == ["test_passes_effect"] * 3 + ["sin"] and len(consts) == 1
    eval_program(new, consts, [enp.zeros(3)])
    assert len(effect_calls) == 3


# --- constants -------------------------------------------------------------------------------------


def _const_program(const_shape, make):
    """{ lambda a ; b. let c = make(a); d = mul b c in (d) } with `make` a list of equations."""
    a = Var(ShapedArray(const_shape, F32))
    eqns, c = make(a)
    b = Var(c.aval)
    d = Var(c.aval)
    return Program([a], [b], [*eqns, Eqn(mul_p, [b, c], {}, [d])], [d])


def test_constant_folding_evaluates_equations_of_constants():
    def make(a):
        e, s = Var(a.aval), Var(a.aval)
        return [Eqn(exp_p, [a], {}, [e]), Eqn(sin_p, [e], {}, [s])], s

    program = _const_program((5,), make)
    a, b = _rand(5), _rand(5)
    new, consts = _apply(fold_constants, program, [enp.asarray(a)], b)
    assert _prims(new) == ["mul"]
    assert len(consts) == 1
    np.testing.assert_allclose(np.asarray(consts[0]), np.sin(np.exp(a)), rtol=1e-6)
    np.testing.assert_allclose(_run(new, consts, b)[0], b * np.sin(np.exp(a)), rtol=1e-6)


@pytest.mark.parametrize("shape, folded", [((8,), True), ((32, 32), True), ((64, 64), False)])
def test_constant_folding_does_not_blow_scalars_up(shape, folded):
    def make(a):
        out = Var(ShapedArray(shape, F32))
        return [Eqn(broadcast_in_dim_p, [a], {"shape": shape, "broadcast_dimensions": ()}, [out])], out

    program = _const_program((), make)
    assert passes.FOLD_SIZE_LIMIT == 1024
    new, consts = _apply(fold_constants, program, [enp.asarray(np.float32(3.0))], _rand(*shape))
    assert ("broadcast_in_dim" not in _prims(new)) == folded
    assert [np.asarray(c).shape for c in consts] == [shape if folded else ()]


def test_constant_folding_of_a_big_constant_is_bounded_by_the_operand():
    big = _rand(64, 64)

    def make(a):
        out = Var(a.aval)
        return [Eqn(transpose_p, [a], {"permutation": (1, 0)}, [out])], out

    new, consts = _apply(fold_constants, _const_program((64, 64), make), [enp.asarray(big)], _rand(64, 64))
    assert _prims(new) == ["mul"]
    np.testing.assert_array_equal(np.asarray(consts[0]), big.T)


def test_constant_folding_leaves_tracer_constants_alone():
    # Constants may be an outer transform's tracers (jit inside grad); nothing computed from them is
    # evaluated early, and the program stays differentiable through them.
    def make(a):
        e = Var(a.aval)
        return [Eqn(exp_p, [a], {}, [e])], e

    program = _const_program((), make)
    x = _rand(4)
    seen = {}

    def f(c):
        new, consts = optimize(program, [c])
        check_program(new)
        seen["prims"], seen["consts"] = _prims(new), consts
        return eval_program(new, consts, [enp.asarray(x)])[0]

    c0 = np.float32(0.5)
    out, tangent = ember.jvp(f, (enp.asarray(c0),), (enp.asarray(np.float32(1.0)),))
    assert seen["prims"] == ["exp", "mul"]  # not folded, and the scalar tracer is not made a literal
    assert isinstance(seen["consts"][0], ember.Array) and not _literals(program)
    np.testing.assert_allclose(np.asarray(out), x * np.exp(c0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tangent), x * np.exp(c0), rtol=1e-6)


def test_constant_folding_then_simplification_folds_chains():
    # reshape(2 * ones) feeding a multiply: folded to a constant of twos, the reshape chain included
    ones = Var(ShapedArray((6,), F32))
    twos, shaped = Var(ones.aval), Var(ShapedArray((2, 3), F32))
    x, out = Var(shaped.aval), Var(shaped.aval)
    program = Program([ones], [x], [
        Eqn(mul_p, [ones, Literal(2.0, ShapedArray((), F32))], {}, [twos]),
        Eqn(reshape_p, [twos], {"new_sizes": (2, 3), "dimensions": None}, [shaped]),
        Eqn(mul_p, [x, shaped], {}, [out]),
    ], [out])  # fmt: skip
    new, consts = _apply(optimize, program, [enp.ones(6)], _rand(2, 3))
    assert _prims(new) == ["mul"] and np.asarray(consts[0]).tolist() == [[2.0] * 3] * 2


# --- literals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, value", [("float32", 2.0), ("float16", 2.0), ("int32", 3), ("uint8", 3)])
def test_scalar_constants_become_literals_of_the_exact_dtype(dtype, value):
    x = (RNG.random(4) * 10).astype(dtype)
    f = lambda x: x * value + enp.asarray(value, dtype)  # a weak and a strong scalar
    program, consts = _ir(f, x)
    assert len(consts) == 2
    new, new_consts = _apply(inline_scalar_constants, program, consts, x)
    assert new_consts == [] and not new.constvars
    lits = _literals(new)
    assert sorted(lit.aval.weak_type for lit in lits) == [False, True]
    for lit in lits:
        assert type(lit.value) is np.dtype(dtype).type and lit.value == value
        assert lit.array.dtype == np.dtype(dtype) and lit.array.weak_type == lit.aval.weak_type
    out = ember.jit(f)(x)
    assert out.dtype == np.dtype(dtype) and not out.weak_type
    np.testing.assert_array_equal(np.asarray(out), (x * value + np.asarray(value, dtype)).astype(dtype))
    assert f"np.{np.dtype(dtype).name}({value!r})" in ember.jit(f).lower(x).source


def test_literal_outputs_and_weak_types():
    c = enp.asarray(np.float32(1.5))
    program, consts = _ir(lambda x: (x + 1.0, c, 2.0), enp.float32(3.0))
    new, new_consts = _apply(optimize, program, consts, np.float32(3.0))
    assert not new_consts and [type(v) for v in new.outvars] == [Var, Literal, Literal]
    outs = ember.jit(lambda x: (x + 1.0, c, 2.0))(enp.float32(3.0))
    assert [np.asarray(o).tolist() for o in outs] == [4.0, 1.5, 2.0]
    assert [(o.dtype, o.weak_type) for o in outs] == [(F32, False), (F32, False), (F32, True)]


def test_literals_print_and_survive_transforms_of_the_jitted_function():
    f = ember.jit(lambda x: enp.sin(x) * 3.0)
    ir = f.lower(enp.ones(3)).ir
    assert "mul" in str(ir) and "3.0:~f32[]" in str(ir) and not ir.consts
    x = _rand(3)
    np.testing.assert_allclose(np.asarray(ember.grad(lambda x: enp.sum(f(x)))(x)), 3 * np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.vmap(f)(x)), 3 * np.sin(x), rtol=1e-6)


# --- algebraic simplification ------------------------------------------------------------------------


def test_ad_seed_multiply_disappears():
    x = _rand(5)
    program, consts = _ir(ember.grad(lambda x: enp.sum(enp.sin(x))), x)
    assert _prims(program) == ["cos", "mul"]  # the seed of ones times cos(x)
    new, new_consts = _apply(optimize, program, consts, x)
    assert _prims(new) == ["cos"] and not new_consts
    np.testing.assert_allclose(_run(new, new_consts, x)[0], np.cos(x), rtol=1e-6)
    # a scalar seed, as a literal
    program, consts = _ir(ember.grad(enp.tanh), np.float32(0.3))
    new, _ = _apply(optimize, program, consts, np.float32(0.3))
    assert _prims(new) == ["tanh", "mul", "sub"]
    np.testing.assert_allclose(_run(new, [], np.float32(0.3))[0], 1 - np.tanh(np.float32(0.3)) ** 2, rtol=1e-6)


@pytest.mark.parametrize("f, left", [
    (lambda x: x * 1.0, []),
    (lambda x: 1.0 * x, []),
    (lambda x: x / 1.0, []),
    (lambda x: x + -0.0, []),
    (lambda x: -0.0 + x, []),
    (lambda x: x + 0.0, ["add"]),  # -0.0 + 0.0 is 0.0: see test_signed_zeros_are_kept
    (lambda x: x - 0.0, []),
    (lambda x: 0.0 - x, ["sub"]),
    (lambda x: x * enp.ones(3), []),
    (lambda x: x + enp.full((2, 3), -0.0), []),
    (lambda x: x + enp.zeros((2, 3)), ["add"]),
    (lambda x: x * enp.ones((4, 2, 3)), ["mul"]),  # broadcasting changes the shape: not x
    (lambda x: x * enp.ones((2, 3), "float16").astype("float32"), []),
    (lambda x: x * enp.full((2, 3), 2.0), ["mul"]),
    (lambda x: lax.neg(lax.neg(x)), []),
    (lambda x: lax.neg(lax.neg(lax.neg(x))), ["neg"]),
])  # fmt: skip
def test_identities(f, left):
    x = _rand(2, 3)
    program, consts = _ir(f, x)
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new) == left
    np.testing.assert_allclose(_run(new, optimize(program, consts)[1], x)[0], np.asarray(f(enp.asarray(x))))


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1)


def _assert_same_bits(actual, expected):
    """Equal bit for bit (so 0.0 and -0.0 differ), with the same dtype and shape."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(_bits(actual), _bits(expected), err_msg=f"{actual!r} != {expected!r}")


def test_jit_keeps_the_sign_of_a_zero_gradient():
    # The x * 0 term's cotangent is a constant 0.0; the maximum's is -0.0 at x = 1 (the branch not
    # taken gives 0.0, negated). Eager adds them (0.0 + -0.0 = 0.0); dropping the add gave -0.0.
    g = ember.grad(lambda x: enp.maximum(0.5 - x, 0.0) + x * 0)
    for x in (1.0, 0.25, np.float32(1.0)):
        _assert_same_bits(ember.jit(g)(x), g(x))
    _assert_same_bits(ember.jit(g)(1.0), np.float32(0.0))  # JAX's value
    f = ember.grad(lambda x: enp.sum(enp.maximum(0.5 - x, 0.0) + x * 0))
    x = np.array([1.0, 0.5, 0.0, -1.0], np.float32)
    _assert_same_bits(ember.jit(f)(x), f(x))


NEG_ZERO_INPUT = np.array([-0.0, 0.0, -1.5, 2.0, np.inf, np.nan], np.float32)


@pytest.mark.parametrize("f, left", [
    # not the identity on -0.0: kept
    (lambda x: x + 0.0, ["add"]),
    (lambda x: 0.0 + x, ["add"]),
    (lambda x: x - -0.0, ["sub"]),
    (lambda x: x + enp.zeros(6), ["add"]),
    (lambda x: x + enp.zeros((), "int32").astype("float32"), ["add"]),  # an integer 0 converts to 0.0
    (lambda x: x + enp.full(6, -0.0).astype("int32").astype("float32"), ["add"]),  # so does -0.0 through int
    (lambda x: x + enp.array([-0.0, 0.0, -0.0, -0.0, -0.0, -0.0], "float32"), ["add"]),  # zeros of both signs
    (lambda x: x + lax.broadcast_in_dim(enp.float32(0.0), (6,), ()), ["add"]),
    # the identity for every x: dropped
    (lambda x: x + -0.0, []),
    (lambda x: -0.0 + x, []),
    (lambda x: x - 0.0, []),
    (lambda x: x + enp.full(6, -0.0), []),
    (lambda x: x + enp.full(6, -0.0, "float16").astype("float32"), []),  # -0.0 stays -0.0 between floats
    (lambda x: x - enp.zeros((), "int32").astype("float32"), []),
    (lambda x: x * 1.0, []),
    (lambda x: x / 1.0, []),
])  # fmt: skip
def test_signed_zeros_are_kept(f, left):
    x = NEG_ZERO_INPUT
    program, consts = _ir(f, x)
    new, new_consts = _apply(optimize, program, consts, x)
    assert _prims(new) == left
    expected = f(x)  # NumPy's float32 arithmetic (the ember constants convert to NumPy scalars/arrays)
    _assert_same_bits(_run(new, new_consts, x)[0], expected)
    _assert_same_bits(ember.jit(f)(x), expected)
    _assert_same_bits(f(enp.asarray(x)), expected)  # eager, to be sure the reference is eager's


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_signed_zeros_in_other_float_dtypes(dtype, op):
    with ember.config.x64(dtype in ("float64", "complex128")):
        _check_signed_zero(dtype, op)


def _check_signed_zero(dtype: str, op: str):
    complex_ = dtype.startswith("complex")
    values = [complex(-0.0, -0.0), complex(-0.0, 0.0), complex(0.0, -0.0), complex(0.0, 0.0), complex(1, -0.0)]
    x = np.array(values if complex_ else [v.real for v in values]).astype(enp.dtype(dtype))
    apply = {"add": lambda x, z: x + z, "sub": lambda x, z: x - z}[op]
    for zero in values[:4] if complex_ else (-0.0, 0.0):
        z = np.asarray(zero).astype(x.dtype)
        # NumPy says whether x op zero is x bit for bit on every kind of zero: then the op goes
        identity = bool(np.all(_bits(apply(x, z)) == _bits(x)))
        f = lambda x, z=enp.asarray(z): apply(x, z)  # noqa: E731
        new, _ = optimize(*_ir(f, x))
        assert (_prims(new) == []) == identity, (dtype, op, zero)
        _assert_same_bits(ember.jit(f)(x), apply(x, z))
        _assert_same_bits(f(enp.asarray(x)), apply(x, z))


def test_integer_zeros_are_dropped():
    x = np.array([-3, 0, 5], np.int32)
    for f in (lambda x: x + 0, lambda x: 0 + x, lambda x: x - 0, lambda x: x + enp.zeros(3, "int32")):
        program, consts = _ir(f, x)
        new, new_consts = _apply(optimize, program, consts, x)
        assert _prims(new) == []
        np.testing.assert_array_equal(_run(new, new_consts, x)[0], x)


def test_multiply_by_one_keeps_dtype_and_weak_type():
    # x weak, the ones strong: the product is strong, so it is not x
    weak = ShapedArray((), F32, weak_type=True)
    program, consts, _ = stage(lambda x: [mul_p.bind(x, enp.ones((), "float32"))], [weak])
    new, _ = _apply(optimize, program, consts, np.float32(2.0))
    assert _prims(new) == ["mul"] and not new.outvars[0].aval.weak_type
    # converting to the same dtype and weak type is nothing; to another weak type it is something
    avals = [ShapedArray((3,), F32)]
    program, _, _ = stage(lambda x: [convert_element_type_p.bind(x, new_dtype=F32, weak_type=False),
                                     convert_element_type_p.bind(x, new_dtype=F32, weak_type=True)], avals)  # fmt: skip
    new, _ = _apply(optimize, program, [], _rand(3))
    assert _prims(new) == ["convert_element_type"] and new.outvars[0] is new.invars[0]


def test_transpose_chains():
    x = _rand(2, 3, 4)
    program, consts = _ir(lambda x: lax.transpose(lax.transpose(x, (1, 2, 0)), (2, 0, 1)), x)
    assert _prims(program) == ["transpose", "transpose"]
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new) == [] and new.outvars[0] is new.invars[0]

    f = lambda x: lax.transpose(lax.transpose(lax.transpose(x, (1, 0, 2)), (0, 2, 1)), (2, 1, 0))
    program, consts = _ir(f, x)
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new) == ["transpose"]
    np.testing.assert_array_equal(_run(new, [], x)[0], x.transpose(1, 0, 2).transpose(0, 2, 1).transpose(2, 1, 0))
    # the identity permutation, bound directly
    program, _, _ = stage(lambda x: [transpose_p.bind(x, permutation=(0, 1, 2))], [ShapedArray(x.shape, F32)])
    assert _prims(_apply(simplify, program, [], x)[0]) == []


def test_reshape_squeeze_expand_dims_chains():
    x = _rand(2, 3, 4)
    f = lambda x: x.reshape(6, 4).reshape(2, 12)[None].squeeze(0).reshape(24)
    program, consts = _ir(f, x)
    assert len(program.eqns) == 5
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new) == ["reshape"] and new.eqns[0].params["new_sizes"] == (24,)
    np.testing.assert_array_equal(_run(new, [], x)[0], x.reshape(24))
    program, consts = _ir(lambda x: lax.squeeze(lax.expand_dims(x, (0, 2)), (0, 2)), x)
    assert _prims(_apply(optimize, program, consts, x)[0]) == []
    # reshape to its own shape; a reshape with `dimensions` (a transpose first) keeps it through the chain
    avals = [ShapedArray(x.shape, F32)]
    program, _, _ = stage(lambda x: [reshape_p.bind(x, new_sizes=(2, 3, 4), dimensions=None)], avals)
    assert _prims(_apply(optimize, program, [], x)[0]) == []
    program, consts = _ir(lambda x: lax.reshape(x, (4, 6), (2, 1, 0)).reshape(24), x)
    new, _ = _apply(optimize, program, consts, x)
    assert len(new.eqns) == 1
    np.testing.assert_array_equal(_run(new, [], x)[0], x.transpose(2, 1, 0).reshape(24))


def test_broadcast_chains():
    x = _rand(3)
    f = lambda x: lax.broadcast_in_dim(lax.broadcast_in_dim(x, (3, 1), (0,)), (2, 3, 5), (1, 2))
    program, consts = _ir(f, x)
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new) == ["broadcast_in_dim"] and new.eqns[0].params["broadcast_dimensions"] == (1,)
    np.testing.assert_array_equal(_run(new, [], x)[0], np.broadcast_to(x[None, :, None], (2, 3, 5)))
    program, _, _ = stage(lambda x: [broadcast_in_dim_p.bind(x, shape=(3,), broadcast_dimensions=(0,))],
                          [ShapedArray((3,), F32)])  # fmt: skip
    assert _prims(_apply(optimize, program, [], x)[0]) == []


@pytest.mark.parametrize("f, spec, shapes, transposes_left", [
    (lambda a, b: a @ b.T, "ij,kj->ik", [(3, 4), (5, 4)], 0),
    (lambda a, b: a.T @ b, "ji,jk->ik", [(4, 3), (4, 5)], 0),
    (lambda a, b: a.T @ b.T, "ji,kj->ik", [(4, 3), (5, 4)], 0),
    (lambda a, b: lax.transpose(a, (0, 2, 1)) @ b, "bji,bjk->bik", [(2, 4, 3), (2, 4, 5)], 0),
    (lambda a, b: a @ lax.transpose(b, (2, 1, 0)), "bij,kjb->bik", [(2, 3, 4), (5, 4, 2)], 0),
    # free dims of the transposed operand would come out in another order: the transpose stays
    (lambda a, b: lax.dot_general(lax.transpose(a, (1, 0, 2)), b, (((2,), (0,)), ((), ()))),
     "jik,kl->ijl", [(3, 2, 4), (4, 5)], 1),
])  # fmt: skip
def test_dot_general_absorbs_transposes(f, spec, shapes, transposes_left):
    a, b = (_rand(*s) for s in shapes)
    program, consts = _ir(f, a, b)
    assert "transpose" in _prims(program)
    new, _ = _apply(optimize, program, consts, a, b)
    assert _prims(new).count("transpose") == transposes_left and _prims(new).count("dot_general") == 1
    np.testing.assert_allclose(_run(new, [], a, b)[0], np.einsum(spec, a, b), rtol=1e-5, atol=1e-5)


def test_transpose_of_a_dot_general_swaps_its_operands():
    # vmap of an outer product: dot_general(a, b) with a batch dim, then a transpose to (batch, b, a)
    a, b = _rand(4, 3), _rand(4, 5)
    program, consts = _ir(lambda a, b: lax.transpose(lax.dot_general(a, b, (((), ()), ((0,), (0,)))), (0, 2, 1)), a, b)
    new, _ = _apply(optimize, program, consts, a, b)
    assert _prims(new) == ["dot_general"] and new.eqns[0].inputs == new.invars[::-1]
    np.testing.assert_allclose(_run(new, [], a, b)[0], np.einsum("bi,bj->bji", a, b), rtol=1e-6)

    # used elsewhere too: the product is not computed twice
    def both(a, b):
        d = lax.dot_general(a, b, (((), ()), ((0,), (0,))))
        return lax.transpose(d, (0, 2, 1)), d

    program, consts = _ir(both, a, b)
    assert _prims(_apply(optimize, program, consts, a, b)[0]) == ["dot_general", "transpose"]


def _eye_times(n, *factors, dtype=np.float32):
    """A function of (x, *factors) multiplying the identity (a constant) by each factor in turn."""
    eye = enp.asarray(np.eye(n, dtype=dtype))

    def diag(*fs):
        d = eye
        for f, how in zip(fs, factors):
            d = d * (f if how == "row" else f[:, None] if how == "column" else lax.broadcast_in_dim(f, (n, n), (0,)))
        return d

    return diag


@pytest.mark.parametrize("factors", [(), ("row",), ("column",), ("row", "broadcast", "column")])
@pytest.mark.parametrize("side, k, spec, x_shape", [
    (0, 0, "ij,jk->ik", (5, 3)), (0, 1, "ij,kj->ik", (3, 5)), (0, 1, "ij,kjl->ikl", (2, 5, 4)),
    (1, 1, "ki,ij->kj", (3, 5)), (1, 0, "ik,ij->kj", (5, 3)), (1, 1, "kil,ij->klj", (2, 5, 4)),
])  # fmt: skip
def test_a_product_with_a_diagonal_matrix_becomes_a_scaling(factors, side, k, spec, x_shape):
    # jacrev's basis (the identity) times the derivatives along the way, then a linear layer
    n = 5
    diag = _eye_times(n, *factors)
    contract = (((1,), (k,)) if side == 0 else ((k,), (0,)), ((), ()))

    def f(x, *fs):
        d = diag(*fs)
        return lax.dot_general(d, x, contract) if side == 0 else lax.dot_general(x, d, contract)

    x, fs = _rand(*x_shape), [_rand(n) for _ in factors]
    program, consts = _ir(f, x, *fs)
    new, new_consts = _apply(optimize, program, consts, x, *fs)
    assert "dot_general" not in _prims(new) and new_consts == []
    d = np.prod([np.ones(n, np.float32), *fs], axis=0)
    operands = (np.diag(d), x) if side == 0 else (x, np.diag(d))
    np.testing.assert_array_equal(_run(new, [], x, *fs)[0], np.einsum(spec, *operands))


def test_jacrev_of_a_linear_layer_never_multiplies_by_the_identity():
    w, x = _rand(6, 6), _rand(6)
    program, consts = _ir(ember.jacrev(lambda x: enp.tanh(enp.asarray(w) @ x)), x)
    new, _ = _apply(optimize, program, consts, x)
    assert _prims(new).count("dot_general") == 1  # the forward product only
    np.testing.assert_allclose(_run(new, _, x)[0], (1 - np.tanh(w @ x) ** 2)[:, None] * w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda n: np.eye(n, k=1, dtype=np.float32),  # not the identity
    lambda n: 2 * np.eye(n, dtype=np.float32),
])  # fmt: skip
def test_matrices_not_known_to_be_diagonal_keep_their_matmul(make):
    m, x = enp.asarray(make(4)), _rand(4, 3)
    program, consts = _ir(lambda x, v: (m * v) @ x, x, _rand(4))
    assert _prims(_apply(optimize, program, consts, x, _rand(4))[0]).count("dot_general") == 1
    program, consts = _ir(lambda x, v: (enp.asarray(np.eye(4, dtype=np.float32)) * v) @ x, x, _rand(4, 4))
    assert _prims(_apply(optimize, program, consts, x, _rand(4, 4))[0]).count("dot_general") == 1  # a full factor


def _large_outputs(program: Program, shape) -> list[str]:
    return [e.primitive.name for e in program.eqns if e.outvars[0].aval.shape == shape]


def test_scalings_on_the_way_to_a_dot_general_are_done_on_the_scales():
    # jacfwd's basis pushed through a loss: every step on the (6, 5) array scales its columns
    def f(b, d, e, x):
        a = b * d
        t = -(a * e) + a / e
        return lax.dot_general(t * d, x, (((1,), (0,)), ((), ())))

    b, d, e, x = _rand(6, 5), _rand(5), _rand(5) + 3, _rand(5, 4)
    program, consts = _ir(f, b, d, e, x)
    new, _ = _apply(optimize, program, consts, b, d, e, x)
    assert _large_outputs(new, (6, 5)) == ["mul"]
    scale = (-(d * e) + d / e) * d
    np.testing.assert_allclose(_run(new, [], b, d, e, x)[0], (b * scale) @ x, rtol=1e-5, atol=1e-6)


def test_scalings_whose_values_are_seen_keep_their_steps():
    # an output, or a use other than a contraction, sees each step's rounding: nothing is reassociated
    def f(b, d, e, x):
        t = (b * d) * e
        return lax.dot_general(t, x, (((1,), (0,)), ((), ()))), t

    def g(b, d, e, x):
        return lax.dot_general(enp.exp((b * d) * e), x, (((1,), (0,)), ((), ())))

    args = _rand(6, 5), _rand(5), _rand(5), _rand(5, 4)
    for fun in (f, g):
        program, consts = _ir(fun, *args)
        new, _ = _apply(optimize, program, consts, *args)
        assert _large_outputs(new, (6, 5)).count("mul") == 2


def test_hessian_of_a_logistic_loss_is_two_products():
    # X^T diag(s) X: the forward product, the basis scaled once, one matmul
    x, y, w = _rand(40, 30), (RNG.random(40) < 0.5).astype(np.float32), _rand(30) / 6
    ex, ey = enp.asarray(x), enp.asarray(y)
    hess = ember.hessian(lambda w: enp.mean(enp.logaddexp(0.0, ex @ w) - ey * (ex @ w)))
    program, consts = _ir(hess, w)
    new, new_consts = _apply(optimize, program, consts, w)
    assert _prims(new).count("dot_general") == 2
    assert sum(e.outvars[0].aval.size >= 30 * 40 for e in new.eqns if e.primitive.name != "dot_general") == 1
    p = 1 / (1 + np.exp(-(x @ w)))
    want = x.T @ (x * (p * (1 - p))[:, None]) / 40
    np.testing.assert_allclose(_run(new, new_consts, w)[0], want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.jit(hess)(w)), want, rtol=1e-4, atol=1e-6)


def test_hessian_of_a_vector_function_multiplies_instead_of_a_matmul_over_the_basis():
    # jacrev's identity times a batch of jacfwd tangents, contracted: tanh''(z_i) W_i W_i^T per output i
    w, b, x = _rand(4, 7) / 3, _rand(4) / 10, _rand(7)
    ew, eb = enp.asarray(w), enp.asarray(b)
    hess = ember.hessian(lambda x: enp.tanh(ew @ x + eb))
    program, consts = _ir(hess, x)
    new, new_consts = _apply(optimize, program, consts, x)
    assert _prims(new).count("dot_general") == 1  # the forward product only
    t = np.tanh(w @ x + b)
    want = (-2 * t * (1 - t * t))[:, None, None] * w[:, :, None] * w[:, None, :]
    np.testing.assert_allclose(_run(new, new_consts, x)[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.jit(hess)(x)), want, rtol=1e-5, atol=1e-6)


# --- optimize, and jit end to end ---------------------------------------------------------------------


def _mlp_loss(params, x, y):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = enp.tanh(h)
    return enp.mean((h - y) ** 2)


def _mlp(sizes=(64, 128, 128, 10), batch=128):
    params = [(enp.asarray(_rand(m, n) / np.sqrt(m)), enp.asarray(_rand(n))) for m, n in itertools.pairwise(sizes)]
    return params, enp.asarray(_rand(batch, sizes[0])), enp.asarray(_rand(batch, sizes[-1]))


def _numpy_mlp_grad(params, x, y):
    """Reverse mode by hand, for one example or a batch averaged over every element."""
    hs, h = [x], x
    ws = [np.asarray(w) for w, _ in params]
    for i, (w, b) in enumerate(params):
        h = h @ np.asarray(w) + np.asarray(b)
        if i < len(params) - 1:
            h = np.tanh(h)
        hs.append(h)
    g = 2 * (h - y) / y.size
    grads = []
    for i in reversed(range(len(params))):
        grads.append((np.outer(hs[i], g) if hs[i].ndim == 1 else hs[i].T @ g, g.sum(0) if g.ndim == 2 else g))
        g = g @ ws[i].T
        if i > 0:
            g = g * (1 - hs[i] ** 2)
    return grads[::-1]


def _unoptimized(monkeypatch):
    monkeypatch.setattr(passes, "optimize", lambda program, consts: (program, consts))


@pytest.mark.parametrize("name", ["grad", "vmap_grad", "jacobian"])
def test_jit_results_are_unchanged_by_optimization(name, monkeypatch):
    params, x, y = _mlp(sizes=(6, 8, 8, 3), batch=5)
    fun, args = {
        "grad": (ember.grad(_mlp_loss), (params, x, y)),
        "vmap_grad": (ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0)), (params, x, y)),
        "jacobian": (ember.jacrev(lambda x: enp.tanh(x @ params[0][0]) * 1.0), (x[0],)),
    }[name]
    optimized = ember.jit(fun)
    got = tree_flatten(optimized(*args))[0]
    with monkeypatch.context() as m:
        _unoptimized(m)
        plain = ember.jit(fun)
        want = tree_flatten(plain(*args))[0]
        assert len(plain.lower(*args).ir.consts) > len(optimized.lower(*args).ir.consts)  # scalars became literals
    eager = tree_flatten(fun(*args))[0]
    for g, w, e in zip(got, want, eager, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype and g.weak_type == w.weak_type
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-5, atol=1e-6)
    check_program(optimized.lower(*args).ir.program)


def test_mlp_per_example_grads_against_numpy():
    params, x, y = _mlp()
    per_example = ember.jit(ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0)))
    closed = ember.make_ir(ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0)))(params, x, y)
    program, _ = _apply(optimize, closed.program, list(closed.consts))
    assert len(program.eqns) < len(closed.eqns) and "transpose" not in _prims(program)
    assert len(program.constvars) < len(closed.program.constvars)
    got = per_example(params, x, y)
    xs, ys = np.asarray(x), np.asarray(y)
    for i in (0, 77):
        want = _numpy_mlp_grad(params, xs[i], ys[i])
        for (gw, gb), (ww, wb) in zip(got, want):
            np.testing.assert_allclose(np.asarray(gw)[i], ww, rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(np.asarray(gb)[i], wb, rtol=1e-4, atol=1e-6)
    batch = ember.jit(ember.grad(_mlp_loss))(params, x, y)
    for (gw, gb), (ww, wb) in zip(batch, _numpy_mlp_grad(params, xs, ys)):
        np.testing.assert_allclose(np.asarray(gw), ww, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(gb), wb, rtol=1e-4, atol=1e-6)


def test_optimize_reaches_a_fixed_point():
    params, x, y = _mlp(sizes=(4, 5, 3), batch=2)
    closed = ember.make_ir(ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0)))(params, x, y)
    once = optimize(closed.program, list(closed.consts))
    twice = optimize(*once)
    assert str(twice[0]) == str(once[0])
    # the input program is left as it was
    assert str(closed.program) == str(ember.make_ir(ember.vmap(ember.grad(_mlp_loss), in_axes=(None, 0, 0)))(
        params, x, y).program)  # fmt: skip


def test_literal_values_are_normalized_to_the_aval():
    lit = Literal(2, ShapedArray((), np.dtype("float16"), True))
    assert type(lit.value) is np.float16 and lit.array.dtype == np.float16 and lit.array.weak_type
    assert repr(lit) == "Literal(np.float16(2.0))"
    with pytest.raises(AssertionError):
        Literal(np.zeros(2), ShapedArray((), F32))
