"""Backend-independent optimization passes on programs (jit runs them before compiling).

Each pass is a function ``(program, consts) -> (program, consts)``: it returns a new program (the
one it is given is not changed) computing the same outputs from the same inputs, with the values
of its constants. A pass keeps the inputs (the signature) and every variable's abstract value
(shape, dtype, weak type) exactly; it only removes, merges or replaces equations. Constants that
are tracers of an outer transform are never evaluated.

- `fold_constants`: an equation of constants only is run now; its outputs become constants.
- `inline_scalar_constants`: a concrete scalar constant becomes a `Literal` in the equations.
- `simplify`: algebraic rewrites (x * 1, x + (-0.0), x - 0.0, neg of neg, transpose / reshape /
  broadcast chains, a transpose into dot_general's dimension numbers, ...).
- `eliminate_common_subexpressions`: equal equations on equal operands are computed once.
- `eliminate_dead_code`: equations and constants that no output needs are dropped.

`optimize` runs them in that order until the program stops shrinking. Equations are pure unless
`ir.is_effectful` says otherwise (ember.debug.print's callback, or a program holding one): those are
never dropped, merged or folded. Random bits are pure: `threefry2x32` is a function of its key and
counter operands, so two draws from the same key and counters are one computation.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.core import dtypes
from ember.core.ir import Eqn, Literal, Program, Var, is_effectful
from ember.core.primitive import Primitive, Tracer
from ember.core.primitives.bitwise import and_p, eq_p, ne_p, or_p, xor_p
from ember.core.primitives.contraction import dot_general_p
from ember.core.primitives.elementwise import add_p, convert_element_type_p, div_p, max_p, min_p, mul_p, neg_p, sub_p
from ember.core.primitives.structural import broadcast_in_dim_p, expand_dims_p, reshape_p, squeeze_p, transpose_p

__all__ = [
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "fold_constants",
    "inline_scalar_constants",
    "optimize",
    "simplify",
]

Atom = Var | Literal
Pass = Callable[[Program, list[Any]], tuple[Program, list[Any]]]


class _Renames(dict):
    """Var -> the atom that stands for it from now on; calling it reads an operand through the map."""

    def __call__(self, v: Atom) -> Atom:
        return self.get(v, v) if type(v) is Var else v


def _renamed(eqn: Eqn, renames: _Renames) -> Eqn:
    """`eqn` reading its operands through `renames` (the same object when none is renamed)."""
    inputs = [renames(v) for v in eqn.inputs]
    return eqn if inputs == eqn.inputs else Eqn(eqn.primitive, inputs, eqn.params, eqn.outvars)


def _drop_unused_constants(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    used = {v for eqn in program.eqns for v in eqn.inputs if type(v) is Var}
    used.update(v for v in program.outvars if type(v) is Var)
    kept = [(v, c) for v, c in zip(program.constvars, consts, strict=True) if v in used]
    return program._replace(constvars=[v for v, _ in kept]), [c for _, c in kept]


def _is_concrete(value: Any) -> bool:
    return not isinstance(value, Tracer)


# --- dead code -------------------------------------------------------------------------------------


def eliminate_dead_code(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """Drop the equations no output depends on (an equation with several outputs stays whole while
    one is used; an effectful one always stays) and the constants nothing uses. The inputs stay,
    used or not: they are the signature.

    >>> # { lambda a ; b c. let d = sin b; e = mul b a in (d) }  becomes
    >>> # { lambda  ; b c. let d = sin b in (d) }
    """
    live = {v for v in program.outvars if type(v) is Var}
    kept = []
    for eqn in reversed(program.eqns):
        if any(v in live for v in eqn.outvars) or is_effectful(eqn):
            kept.append(eqn)
            live.update(v for v in eqn.inputs if type(v) is Var)
    kept.reverse()
    return _drop_unused_constants(program._replace(eqns=kept), consts)


# --- common subexpressions ---------------------------------------------------------------------------

_COMMUTATIVE = frozenset([add_p, mul_p, max_p, min_p, and_p, or_p, xor_p, eq_p, ne_p])


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a static parameter: equal stand-ins mean interchangeable values.
    Containers compare by contents and type, floats by their text (so 0.0 and -0.0 differ),
    arrays by their bytes, and functions, programs or anything unhashable by identity."""
    if isinstance(value, Program):  # a control-flow branch or body: the same program, not an equal one
        return ("identity", id(value))
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((repr(k), _freeze(v)) for k, v in value.items())))
    if isinstance(value, np.ndarray):
        return (np.ndarray, value.dtype, value.shape, value.tobytes())
    if isinstance(value, (float, complex, np.inexact)):
        return (type(value), repr(value))
    if callable(value):
        return ("identity", id(value))
    try:
        hash(value)
    except TypeError:
        return ("identity", id(value))
    return (type(value), value)


def _operand_key(v: Atom) -> Any:
    return v if type(v) is Var else ("literal", v.aval, np.asarray(v.value).tobytes())


def _eqn_key(primitive: Primitive, inputs: list[Atom], params: dict[str, Any]) -> tuple:
    operands = tuple(_operand_key(v) for v in inputs)
    if primitive in _COMMUTATIVE:  # binary, so the set of operands says which pair it is
        operands = frozenset(operands)
    return primitive, operands, _freeze(params) if params else ()


_CSE_CONST_SIZE = 4096  # constants up to this many elements are compared by value (larger ones by identity)


def eliminate_common_subexpressions(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """Compute once what several equations compute: the same primitive on the same operands (in
    either order for commutative ones such as add and mul) with equal parameters. Later copies'
    outputs are replaced by the first one's. Parameters holding functions or sub-programs (custom
    rules) are equal only when they are the same object. Small concrete constants with equal
    values (each `ember.random` call makes its own counters) become one constant first.

    >>> # c = sin b; d = sin b; e = add c d   becomes   c = sin b; e = add c c
    """
    renames = _Renames()
    first_const: dict[tuple, Var] = {}
    for v, c in zip(program.constvars, consts, strict=True):
        if _is_concrete(c) and v.aval.size <= _CSE_CONST_SIZE:
            renames[v] = first_const.setdefault((v.aval, c._value.tobytes()), v)
    first: dict[tuple, list[Var]] = {}
    eqns = []
    for eqn in program.eqns:
        eqn = _renamed(eqn, renames)
        if is_effectful(eqn):  # two prints print twice
            eqns.append(eqn)
            continue
        key = _eqn_key(eqn.primitive, eqn.inputs, eqn.params)
        earlier = first.get(key)
        if earlier is not None and all(a.aval == b.aval for a, b in zip(earlier, eqn.outvars, strict=True)):
            renames.update(zip(eqn.outvars, earlier))
            continue
        first.setdefault(key, eqn.outvars)
        eqns.append(eqn)
    return _drop_unused_constants(program._replace(eqns=eqns, outvars=[renames(v) for v in program.outvars]), consts)


# --- constants -------------------------------------------------------------------------------------

FOLD_SIZE_LIMIT = 1024  # a folded constant may exceed its largest operand only up to this many elements


def _folded(eqn: Eqn, known: dict[Var, Any]) -> list[Any] | None:
    """The values of `eqn`'s outputs when its operands are all known and folding is worth it, else None."""
    if "axis_name" in eqn.params or is_effectful(eqn):  # a collective reads the named axis of a vmap
        return None
    args = []
    for v in eqn.inputs:
        if type(v) is Literal:
            args.append(v.array)
        elif v in known:
            args.append(known[v])
        else:
            return None
    # Broadcasting a scalar into a big array costs little at run time and much memory as a constant.
    if sum(v.aval.size for v in eqn.outvars) > max([FOLD_SIZE_LIMIT, *(a.size for a in args)]):
        return None
    try:
        out = eqn.primitive.bind(*args, **eqn.params)
    except Exception:  # noqa: BLE001 - left in the program: running it raises at the same point as before
        return None
    outs = out if eqn.primitive.multiple_results else [out]
    if any(not _is_concrete(x) or x.aval != v.aval for x, v in zip(outs, eqn.outvars, strict=True)):
        return None
    return list(outs)


def fold_constants(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """Run each equation whose operands are all concrete constants or literals now (binding its
    primitive eagerly) and make its outputs constants, unless they would be much larger than its
    operands (more than `FOLD_SIZE_LIMIT` elements and more than the largest operand). Constants
    that are tracers of an outer transform are not concrete: nothing computed from them is folded.

    >>> # { lambda a:f32[3] ; b. let c = exp a; d = mul b c in (d) }  becomes
    >>> # { lambda c:f32[3] ; b. let d = mul b c in (d) }   with c = exp(a) computed once
    """
    known = {v: c for v, c in zip(program.constvars, consts, strict=True) if _is_concrete(c)}
    constvars, consts = list(program.constvars), list(consts)
    eqns = []
    for eqn in program.eqns:
        values = _folded(eqn, known)
        if values is None:
            eqns.append(eqn)
            continue
        for v, value in zip(eqn.outvars, values):  # the output variable itself becomes the constant
            known[v] = value
            constvars.append(v)
            consts.append(value)
    return _drop_unused_constants(program._replace(constvars=constvars, eqns=eqns), consts)


def inline_scalar_constants(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """Write each concrete 0-d constant into the equations that use it as a `Literal` of its exact
    dtype and weak type (``np.float32(2.0)``), and drop it from the constants.

    >>> # { lambda a:~f32[] ; b:f32[3]. let c = mul b a in (c) }  becomes
    >>> # { lambda  ; b:f32[3]. let c = mul b 2.0:~f32[] in (c) }
    """
    renames = _Renames()
    for v, c in zip(program.constvars, consts, strict=True):
        if v.aval.shape == () and v.aval.dtype != dtypes.float0 and _is_concrete(c):
            renames[v] = Literal(c._value, v.aval)
    if not renames:
        return program, list(consts)
    eqns = [_renamed(eqn, renames) for eqn in program.eqns]
    program = program._replace(eqns=eqns, outvars=[renames(v) for v in program.outvars])
    return _drop_unused_constants(program, consts)


# --- algebraic simplification ------------------------------------------------------------------------

# Operations that only move elements: an array of one repeated value stays one after them.
_LAYOUT = frozenset([broadcast_in_dim_p, reshape_p, squeeze_p, expand_dims_p, transpose_p, convert_element_type_p])
_RESHAPES = frozenset([reshape_p, squeeze_p, expand_dims_p])
_MAX_REWRITES = 8  # per equation; each rewrite makes the equation simpler, so this is never reached in practice


class _Simplifier:
    """Walks a program once, rewriting each equation with `_RULES` given what produced its operands."""

    def __init__(self, program: Program, consts: list[Any]):
        self.known = {v: c for v, c in zip(program.constvars, consts, strict=True) if _is_concrete(c)}
        self.producer: dict[Var, Eqn] = {}
        self.renames = _Renames()
        self.eqns: list[Eqn] = []
        self._uniform: dict[Var, Any] = {}
        self._diagonal: dict[Var, list[Atom] | None] = {}
        # Uses in the original program; a renamed variable's uses pass to its replacement. Dead
        # equations keep counting, so these are upper bounds: rules that need "used once" are safe.
        self.uses = Counter(v for eqn in program.eqns for v in eqn.inputs if type(v) is Var)
        self.uses.update(v for v in program.outvars if type(v) is Var)
        self.contracted = _contracted_scalings(program)

    def producer_of(self, v: Atom, *primitives: Primitive) -> Eqn | None:
        eqn = self.producer.get(v) if type(v) is Var else None
        return eqn if eqn is not None and eqn.primitive in primitives else None

    def unit_in(self, v: Atom, unit: int) -> Any:
        """When every element of `v` is known to be `unit` (0 or 1), bit for bit the same (a literal, a
        constant, or such a value broadcast, reshaped or converted): that value as a NumPy scalar of v's
        dtype, whose sign tells -0.0 from 0.0. Otherwise None."""
        converts = []
        while type(v) is Var and v not in self.known:
            eqn = self.producer.get(v)
            if eqn is None or eqn.primitive not in _LAYOUT:
                return None
            if eqn.primitive is convert_element_type_p:
                converts.append(eqn.params["new_dtype"])
            v = eqn.inputs[0]
        value = self._filled(v)
        if value is None or not bool(value == unit):
            return None
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # complex -> real drops a (zero) imaginary part
            for dtype in reversed(converts):  # as the kernels convert: int 0 -> +0.0, -0.0 -> -0.0 in any float
                value = np.asarray(value).astype(dtypes.to_dtype(dtype))[()]
        return value

    def _filled(self, v: Atom) -> Any:
        """The value every element of the constant `v` has, bit for bit (so not a mix of 0.0 and -0.0), or None."""
        if type(v) is Literal:
            if v.aval.shape == ():
                return v.value
            array = v.value
        elif v in self._uniform:
            return self._uniform[v]
        else:
            array = self.known[v]._value
        value = None
        if array.size:
            rows = np.ascontiguousarray(array).reshape(-1).view(np.uint8).reshape(array.size, -1)
            value = array.flat[0] if bool(np.all(rows == rows[0])) else None
        if type(v) is Var:
            self._uniform[v] = value
        return value

    def diagonal(self, v: Atom) -> list[Atom] | None:
        """When `v` is a square matrix known to be diagonal: the identity (a constant, such as
        jacrev's basis) times scalars and vectors, the factors whose product in this order is its
        diagonal (none for the identity); otherwise None."""
        if type(v) is not Var or v.aval.ndim != 2 or v.aval.shape[0] != v.aval.shape[1]:
            return None
        if v not in self._diagonal:
            self._diagonal[v] = self._find_diagonal(v)
        return self._diagonal[v]

    def _find_diagonal(self, v: Var) -> list[Atom] | None:
        if v in self.known:
            array = self.known[v]._value  # the diagonal first: a weight matrix fails there at once
            identity = bool(np.all(np.diagonal(array) == 1)) and np.count_nonzero(array) == len(array)
            return [] if identity else None
        eqn = self.producer_of(v, mul_p)
        if eqn is None:
            return None
        for matrix, factor in (eqn.inputs, eqn.inputs[::-1]):
            factors = self.diagonal(matrix) if matrix.aval == v.aval else None
            vector = self._vector(factor, v.aval.shape[0])
            if factors is not None and vector is not None:
                return [*factors, vector]
        return None

    def _vector(self, v: Atom, n: int) -> Atom | None:
        """`v` as a scalar or an (n,) vector when it is one, or one reshaped to a row or a column or
        broadcast along a single axis of an (n, n) matrix (multiplying a diagonal matrix by it scales
        the diagonal); otherwise None."""
        if v.aval.shape in ((), (n,)):
            return v
        eqn = self.producer_of(v, broadcast_in_dim_p, *_RESHAPES)
        if eqn is not None and eqn.inputs[0].aval.shape in ((), (n,)):
            return eqn.inputs[0]
        return None

    def emit(self, primitive: Primitive, inputs: list[Atom], **params: Any) -> Atom:
        """Add a new equation ``primitive[params](*inputs)`` (simplified like any other); its result."""
        out = Var(primitive.abstract_eval(*[v.aval for v in inputs], **params))
        self.uses.update(v for v in inputs if type(v) is Var)
        self.add(Eqn(primitive, inputs, params, [out]))
        return self.renames(out)

    def add(self, eqn: Eqn) -> None:
        eqn = _renamed(eqn, self.renames)
        for _ in range(_MAX_REWRITES):
            rule = _RULES.get(eqn.primitive)
            if rule is None:
                break
            result = rule(self, eqn)
            if type(result) is Eqn and _shape_rule_agrees(result):
                self.uses.update(v for v in result.inputs if type(v) is Var)
                eqn = result
                continue
            if result is not None and type(result) is not Eqn and result.aval == eqn.outvars[0].aval:
                out = eqn.outvars[0]
                self.renames[out] = result
                if type(result) is Var:
                    self.uses[result] += self.uses[out]
                return
            break
        self.eqns.append(eqn)
        for v in eqn.outvars:
            self.producer[v] = eqn


def _shape_rule_agrees(eqn: Eqn) -> bool:
    """A safety net for rewritten equations: the primitive's shape rule gives the declared outputs."""
    try:
        out = eqn.primitive.abstract_eval(*[v.aval for v in eqn.inputs], **eqn.params)
    except Exception:  # noqa: BLE001 - a rewrite the shape rule rejects is simply not made
        return False
    outs = out if eqn.primitive.multiple_results else [out]
    return len(outs) == len(eqn.outvars) and all(a == v.aval for a, v in zip(outs, eqn.outvars))


def simplify(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """Rewrite equations into simpler ones with the same values and the same abstract values:

    - ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x``, ``x - 0`` -> ``x`` when the result has
      x's shape, dtype and weak type (the ones or zeros: a literal, a constant filled with one value,
      or such a value broadcast; AD's seeds are these), and only where that is exact for every x:
      for floats (and each part of a complex) ``x + (-0.0)`` and ``x - 0.0``, not ``x + 0.0`` or
      ``x - (-0.0)``, which turn a -0.0 into 0.0 (so the jitted result keeps eager's sign of zero);
      any integer zero.
    - ``neg (neg x)`` -> ``x``; ``convert_element_type`` to x's own dtype and weak type -> ``x``.
    - transpose of transpose -> one transpose (the identity permutation -> ``x``); a transpose of
      a dot_general that swaps its two free-dimension blocks -> dot_general with swapped operands.
    - reshape / squeeze / expand_dims chains -> one reshape (to x's own shape -> ``x``);
      broadcast_in_dim of broadcast_in_dim -> one; broadcast_in_dim to x's shape -> ``x``.
    - dot_general of ``transpose(x)`` -> dot_general of x with its dimension numbers remapped, when
      that keeps the order of the free dimensions (so the output is the same array).

    The equations a rewrite bypasses stay for `eliminate_dead_code` (they may have other users).
    """
    s = _Simplifier(program, consts)
    for eqn in program.eqns:
        s.add(eqn)
    program = program._replace(eqns=s.eqns, outvars=[s.renames(v) for v in program.outvars])
    return _drop_unused_constants(program, consts)


def _signs(zero: Any) -> tuple[bool, ...]:
    """Whether each real component of a floating or complex zero is -0.0 (none for integers and bools)."""
    if dtypes.is_complex(zero.dtype):
        return (math.copysign(1.0, float(zero.real)) < 0, math.copysign(1.0, float(zero.imag)) < 0)
    if dtypes.is_floating(zero.dtype):
        return (math.copysign(1.0, float(zero)) < 0,)
    return ()


def _any_one(one: Any) -> bool:
    """x * 1 and x / 1 are x for every x (-0.0, infinities and NaN included)."""
    return True


def _negative_zero(zero: Any) -> bool:
    """x + zero is x for every x, -0.0 included: zero is -0.0 (each component; any integer 0)."""
    return all(_signs(zero))


def _positive_zero(zero: Any) -> bool:
    """x - zero is x for every x, -0.0 included: zero is +0.0 (each component; any integer 0)."""
    return not any(_signs(zero))


def _identity_element(unit: int, exact: Callable[[Any], bool], commutative: bool):
    """The rule for ``x op unit -> x`` (and ``unit op x -> x`` when `commutative`), made only when
    `exact` says the unit, as it is (its sign), leaves every x unchanged bit for bit."""

    def rule(s: _Simplifier, eqn: Eqn) -> Atom | None:
        x, y = eqn.inputs
        out = eqn.outvars[0].aval
        if x.aval == out and (value := s.unit_in(y, unit)) is not None and exact(value):
            return x
        if commutative and y.aval == out and (value := s.unit_in(x, unit)) is not None and exact(value):
            return y
        return None

    return rule


def _neg(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    inner = s.producer_of(eqn.inputs[0], neg_p)
    return _rescaled(s, eqn) if inner is None else inner.inputs[0]


_SCALINGS = frozenset([mul_p, div_p, neg_p, add_p, sub_p])


def _contracted_scalings(program: Program) -> set[Var]:
    """The outputs of elementwise scaling steps (`_SCALINGS`) that only ever reach a dot_general's
    operand, through other such steps: their rounding shows only through a contraction."""
    users: dict[Var, list[Eqn]] = {}
    for eqn in program.eqns:
        for v in eqn.inputs:
            if type(v) is Var:
                users.setdefault(v, []).append(eqn)
    escaping = {v for v in program.outvars if type(v) is Var}
    contracted: set[Var] = set()
    for eqn in reversed(program.eqns):
        if eqn.primitive not in _SCALINGS:
            continue
        v = eqn.outvars[0]
        if v not in escaping and all(
            u.primitive is dot_general_p or (u.primitive in _SCALINGS and u.outvars[0] in contracted)
            for u in users.get(v, ())
        ):
            contracted.add(v)
    return contracted


def _scaling(s: _Simplifier, v: Atom) -> tuple[Atom, Atom] | None:
    """``(b, d)`` when `v` is ``b * d`` with b of v's abstract value and d a smaller array that
    broadcasts over it (a scalar, a row, a column: one scale per slice of b), else None."""
    eqn = s.producer_of(v, mul_p)
    if eqn is None:
        return None
    for b, d in (eqn.inputs, eqn.inputs[::-1]):
        if b.aval == v.aval and d.aval.size < v.aval.size:
            return b, d
    return None


def _rescaled(s: _Simplifier, eqn: Eqn) -> Eqn | None:
    """A chain of elementwise steps on one large array ``b`` that each scale it by a small one, as
    ``b * d`` with the steps done on the small scales: ``-(b*d)``, ``(b*d) * e``, ``(b*d) / e`` and
    ``b*d + b*e`` (or minus) become ``b * (-d)``, ``b * (d*e)``, ``b * (d/e)``, ``b * (d+e)``. Each
    large step becomes one large multiplication, never more, and a chain of them collapses into one
    (jacfwd's basis pushed through a loss: the Hessian's ``X.T * s`` with s computed on vectors).
    Floating types only, and only for values that reach nothing but a dot_general (through such
    steps): the products are reassociated, so the contraction's result may round differently, as it
    may when the BLAS sums in another order; every other value keeps eager's bits."""
    out = eqn.outvars[0].aval
    if not (dtypes.is_floating(out.dtype) or dtypes.is_complex(out.dtype)) or eqn.outvars[0] not in s.contracted:
        return None
    if eqn.primitive is neg_p:
        pair = _scaling(s, eqn.inputs[0])
        return None if pair is None else Eqn(mul_p, [pair[0], s.emit(neg_p, [pair[1]])], {}, eqn.outvars)
    x, y = eqn.inputs
    if eqn.primitive in (mul_p, div_p):
        pair, e = _scaling(s, x), y
        if pair is None and eqn.primitive is mul_p:
            pair, e = _scaling(s, y), x
        if pair is None or pair[0].aval != out or not _smaller(out, pair[1], e):
            return None
        return Eqn(mul_p, [pair[0], s.emit(eqn.primitive, [pair[1], e])], {}, eqn.outvars)
    px, py = _scaling(s, x), _scaling(s, y)
    if px is None or py is None or px[0] is not py[0] or px[0].aval != out or not _smaller(out, px[1], py[1]):
        return None
    return Eqn(mul_p, [px[0], s.emit(eqn.primitive, [px[1], py[1]])], {}, eqn.outvars)


def _smaller(out: Any, *scales: Atom) -> bool:
    """Whether the scales combined (broadcast together) are smaller than `out`: one scale per slice."""
    return math.prod(np.broadcast_shapes(*(v.aval.shape for v in scales))) < out.size


def _first(*rules: Callable[[_Simplifier, Eqn], Atom | Eqn | None]):
    """The rule that tries `rules` in order and gives the first rewrite one makes."""

    def rule(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
        for r in rules:
            result = r(s, eqn)
            if result is not None:
                return result
        return None

    return rule


def _convert(s: _Simplifier, eqn: Eqn) -> Atom | None:
    x = eqn.inputs[0]
    return x if x.aval == eqn.outvars[0].aval else None


def _transpose(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    x, perm = eqn.inputs[0], tuple(eqn.params["permutation"])
    if perm == tuple(range(len(perm))):
        return x
    inner = s.producer_of(x, transpose_p)
    if inner is not None:  # out[i] is y's axis perm[i], which is x's axis inner_perm[perm[i]]
        inner_perm = inner.params["permutation"]
        return eqn._replace(
            inputs=inner.inputs, params={**eqn.params, "permutation": tuple(inner_perm[i] for i in perm)}
        )
    dot = s.producer_of(x, dot_general_p)
    if dot is not None and s.uses[x] == 1:
        return _swapped_dot(dot, perm, eqn.outvars)
    return None


def _swapped_dot(dot: Eqn, perm: tuple[int, ...], outvars: list[Var]) -> Eqn | None:
    """dot_general(r, l) when `perm` turns dot_general(l, r)'s (batch, l free, r free) into
    (batch, r free, l free): the product in the wanted layout, instead of a strided view of it."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.inputs
    nb, nl = len(lb), lhs.aval.ndim - len(lc) - len(lb)
    nr = rhs.aval.ndim - len(rc) - len(rb)
    if perm != (*range(nb), *range(nb + nl, nb + nl + nr), *range(nb, nb + nl)):
        return None
    return Eqn(dot_general_p, [rhs, lhs], {**dot.params, "dimension_numbers": ((rc, lc), (rb, lb))}, outvars)


def _reshape(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    x, out = eqn.inputs[0], eqn.outvars[0].aval
    dims = eqn.params.get("dimensions") if eqn.primitive is reshape_p else None
    if dims is not None and tuple(dims) != tuple(range(len(dims))):
        return None  # a transpose, then a reshape
    if x.aval.shape == out.shape:
        return x
    inner = s.producer_of(x, *_RESHAPES)
    if inner is None:
        return None
    # reshape(reshape(transpose(z, d))) is reshape(transpose(z, d)): keep the inner one's `dimensions`.
    inner_dims = inner.params.get("dimensions") if inner.primitive is reshape_p else None
    return Eqn(reshape_p, inner.inputs[:1], {"new_sizes": out.shape, "dimensions": inner_dims}, eqn.outvars)


def _broadcast(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    x, dims = eqn.inputs[0], tuple(eqn.params["broadcast_dimensions"])
    if x.aval.shape == eqn.outvars[0].aval.shape and dims == tuple(range(x.aval.ndim)):
        return x
    inner = s.producer_of(x, broadcast_in_dim_p)
    if inner is not None:  # z's axis i went to y's axis inner_dims[i], which goes to dims[inner_dims[i]]
        composed = tuple(dims[d] for d in inner.params["broadcast_dimensions"])
        return eqn._replace(inputs=inner.inputs, params={**eqn.params, "broadcast_dimensions": composed})
    return None


def _through_transpose(perm: tuple[int, ...], contract: tuple[int, ...], batch: tuple[int, ...]):
    """An operand's contracting and batch axes as axes of the transpose's input, or None when its
    free axes would come out in another order."""
    free = [perm[a] for a in range(len(perm)) if a not in contract and a not in batch]
    if free != sorted(free):
        return None
    return tuple(perm[a] for a in contract), tuple(perm[a] for a in batch)


def _dot_general(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs
    scaled = _diagonal_product(s, eqn)
    if scaled is None:
        scaled = _stacked_diagonal_product(s, eqn)
    if scaled is not None:
        return scaled
    for side, operand in enumerate(eqn.inputs):
        t = s.producer_of(operand, transpose_p)
        if t is None:
            continue
        moved = _through_transpose(tuple(t.params["permutation"]), *((lc, lb) if side == 0 else (rc, rb)))
        if moved is None:
            continue
        if side == 0:
            inputs, numbers = [t.inputs[0], rhs], ((moved[0], rc), (moved[1], rb))
        else:
            inputs, numbers = [lhs, t.inputs[0]], ((lc, moved[0]), (lb, moved[1]))
        return eqn._replace(inputs=inputs, params={**eqn.params, "dimension_numbers": numbers})
    return None


def _diagonal_product(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    """A product with a diagonal matrix diag(d) as a scaling: ``dot_general(diag(d), x)`` contracting
    x's axis k is ``d[:, None, ...] * x`` with axis k moved first, and ``dot_general(x, diag(d))`` is
    ``x * d`` with axis k moved last. n^2 multiplications instead of an n^3 matmul: the pulled-back
    identity of jacrev meets its first linear layer this way. The values are the same (each output
    is one product plus exact zeros) except where x holds an infinity or a NaN, which the matmul
    spreads along the row through 0 * inf (like the sign of zero in ``x + 0``, a trade for speed)."""
    (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs
    out = eqn.outvars[0].aval
    if lb or len(lc) != 1 or not (lhs.aval.dtype == rhs.aval.dtype == out.dtype) or out.weak_type:
        return None
    for side, (diag, x, k) in enumerate(((lhs, rhs, rc[0]), (rhs, lhs, lc[0]))):
        factors = s.diagonal(diag) if diag.aval.ndim == 2 else None
        if factors is None:
            continue
        rest = [a for a in range(x.aval.ndim) if a != k]
        perm = (k, *rest) if side == 0 else (*rest, k)
        if perm != tuple(range(x.aval.ndim)):
            x = s.emit(transpose_p, [x], permutation=perm)
        if not factors:
            return x
        d = factors[0]
        for f in factors[1:]:
            d = s.emit(mul_p, [d, f])
        if side == 0 and d.aval.ndim == 1:
            d = s.emit(reshape_p, [d], new_sizes=(d.aval.shape[0],) + (1,) * (x.aval.ndim - 1), dimensions=None)
        return Eqn(mul_p, [x, d], {}, eqn.outvars)
    return None


def _stacked_diagonal_product(s: _Simplifier, eqn: Eqn) -> Atom | Eqn | None:
    """A product with a stack of diagonal matrices ``lhs[..., i, k] = I[i, k] * q[..., 0, k]`` (the
    identity broadcast against q, which has a single row: jacrev's basis meeting a batch of jacfwd
    tangents), contracting i or k with rhs's axis c: ``out[..., i, R] = q[..., 0, i] * rhs[i, R]``,
    one multiplication per output instead of a matmul over the basis (the Hessian of ``tanh(W x)``:
    ``tanh''(z_i) W_i W_i^T``). Values as `_diagonal_product` says."""
    (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs
    out = eqn.outvars[0].aval
    nd = lhs.aval.ndim
    if lb or len(lc) != 1 or nd < 3 or lc[0] < nd - 2 or lhs.aval.shape[-2] != lhs.aval.shape[-1] or out.weak_type:
        return None
    n = lhs.aval.shape[-1]
    if not (lhs.aval.dtype == rhs.aval.dtype == out.dtype):
        return None
    mul = s.producer_of(lhs, mul_p)
    if mul is None:
        return None
    for eye, q in (mul.inputs, mul.inputs[::-1]):
        if eye.aval.shape == (n, n) and s.diagonal(eye) == [] and q.aval.shape == (*lhs.aval.shape[:-2], 1, n):
            break
    else:
        return None
    rest = [a for a in range(rhs.aval.ndim) if a != rc[0]]
    if rest != list(range(1, rhs.aval.ndim)):
        rhs = s.emit(transpose_p, [rhs], permutation=(rc[0], *rest))
    column = (*lhs.aval.shape[:-2], n, *(1,) * len(rest))
    q = s.emit(reshape_p, [q], new_sizes=column, dimensions=None)
    return Eqn(mul_p, [q, rhs], {}, eqn.outvars)


_RULES: dict[Primitive, Callable[[_Simplifier, Eqn], Atom | Eqn | None]] = {
    mul_p: _first(_identity_element(1, _any_one, commutative=True), _rescaled),
    div_p: _first(_identity_element(1, _any_one, commutative=False), _rescaled),
    add_p: _first(_identity_element(0, _negative_zero, commutative=True), _rescaled),
    sub_p: _first(_identity_element(0, _positive_zero, commutative=False), _rescaled),
    neg_p: _neg,
    convert_element_type_p: _convert,
    transpose_p: _transpose,
    reshape_p: _reshape,
    squeeze_p: _reshape,
    expand_dims_p: _reshape,
    broadcast_in_dim_p: _broadcast,
    dot_general_p: _dot_general,
}


# --- all of them ---------------------------------------------------------------------------------------

PASSES: tuple[Pass, ...] = (
    fold_constants,
    inline_scalar_constants,
    simplify,
    eliminate_common_subexpressions,
    eliminate_dead_code,
)
_MAX_ROUNDS = 4


def optimize(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """The program after every pass in `PASSES`, repeated until it stops shrinking (each round is
    linear in the program's length), with the values of its (possibly new) constants.

    >>> closed = ember.make_ir(ember.grad(lambda x: enp.sum(enp.sin(x))))(enp.ones(3))
    >>> print(closed)  # the seed (a constant of ones) times the derivative
    { lambda a:f32[3] ; b:f32[3]. let
        c:f32[3] = cos b
        d:f32[3] = mul a c
      in (d) }
    >>> print(optimize(closed.program, closed.consts)[0])
    { lambda  ; a:f32[3]. let
        b:f32[3] = cos a
      in (b) }
    """
    consts = list(consts)
    for _ in range(_MAX_ROUNDS):
        size = (len(program.eqns), len(program.constvars))
        for run in PASSES:
            program, consts = run(program, consts)
        if (len(program.eqns), len(program.constvars)) == size:
            break
    return program, consts
