"""Type-promotion tests: ember must follow JAX's promotion semantics.

The expected results are NOT computed by ember: they come from the table
``PROMOTION_TABLE`` below, written out by hand from JAX's documentation, and a
few hand-written rules (64-bit canonicalisation, default dtypes of weak types).

Conventions used throughout this file
-------------------------------------
* Labels: ``b1`` bool, ``u8``..``u64`` / ``i8``..``i64`` unsigned / signed ints,
  ``bf16`` bfloat16, ``f16``..``f64`` floats, ``c64``/``c128`` complex, and the
  weak types ``i*``, ``f*``, ``c*`` of Python ``int``, ``float``, ``complex``
  (or of weakly typed arrays).  NB: the JAX docs label by *bytes* (``u1`` is
  uint8, ``c8`` is complex64); this file labels by *bits*.
* "Materialising" a lattice element gives the dtype ember stores: a weak type
  takes the default dtype (int32/float32/complex64 with x64 off,
  int64/float64/complex128 with x64 on) and a 64-bit type becomes its 32-bit
  counterpart while x64 is off.
* ``enp.promote_types`` is the raw lattice join, not canonicalised; with Python
  types it behaves like ``jnp.promote_types``: ``int``/``float``/``complex`` are
  weak (``promote_types(uint8, int) == uint8``) and a weak join comes back as
  ``np.dtype(int)``/``np.dtype(float)``/``np.dtype(complex)`` (i.e. int64,
  float64, complex128) whatever the x64 setting.
* ``enp.result_type`` and binary operations: join of the operands (Python
  scalars and weakly typed arrays are weak), then materialised; the result of
  an operation is weakly typed iff the join is a weak type.
"""

from __future__ import annotations

import functools
import itertools
import operator
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.numpy as enp
from ember.errors import EmberError

# ---------------------------------------------------------------------------
# The promotion table, transcribed by hand.
#
# Source: JAX documentation, "Type promotion semantics"
#   https://docs.jax.dev/en/latest/type_promotion.html
#   (docs/type_promotion.rst in github.com/jax-ml/jax), the "binary promotion
#   table".  Each cell is promote(row, column).  Labels were renamed from the
#   docs' byte widths to bit widths (u1->u8, u2->u16, u4->u32, u8->u64,
#   i1->i8, ..., bf->bf16, f2->f16, f4->f32, f8->f64, c8->c64, c16->c128).
#   The transcription was double-checked against the lattice drawn on the same
#   page (see DOCS_LATTICE and test_table_is_the_join_of_the_documented_lattice)
#   and against jax 0.10.2 (jnp.promote_types / dtypes.lattice_result_type with
#   jax_enable_x64=True).  Note: jax 0.10.2 with x64 *off* deviates from this
#   documented table for u32 x {i8, i16, i32} (it gives i32, avoiding an int64);
#   ember's spec (and this file) use the documented table in both modes.
# ---------------------------------------------------------------------------
# fmt: off
PROMOTION_TABLE = """
      b1   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
b1    b1   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
u8    u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 u8   f*   c*
u16   u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 u16  f*   c*
u32   u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 u32  f*   c*
u64   u64  u64  u64  u64  u64  f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 u64  f*   c*
i8    i8   i16  i32  i64  f*   i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i8   f*   c*
i16   i16  i16  i32  i64  f*   i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 i16  f*   c*
i32   i32  i32  i32  i64  f*   i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 i32  f*   c*
i64   i64  i64  i64  i64  f*   i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 i64  f*   c*
bf16  bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128 bf16 bf16 c64
f16   f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128 f16  f16  c64
f32   f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 f32  f32  c64
f64   f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 f64  f64  c128
c64   c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 c64  c64  c64
c128  c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
i*    i*   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 i*   f*   c*
f*    f*   f*   f*   f*   f*   f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 f*   f*   c*
c*    c*   c*   c*   c*   c*   c*   c*   c*   c*   c64  c64  c64  c128 c64  c128 c*   c*   c*
"""
# fmt: on

# The lattice as drawn on the same docs page (edge a -> b: a promotes to b),
# relabelled to bit widths.  Used only to cross-check the transcription above.
DOCS_LATTICE = {
    "b1": ["i*"],
    "u8": ["u16", "i16"], "u16": ["i32", "u32"], "u32": ["u64", "i64"], "u64": ["f*"],
    "i*": ["u8", "i8"], "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f*": ["c*", "f16", "bf16"], "bf16": ["f32"], "f16": ["f32"], "f32": ["c64", "f64"],
    "f64": ["c128"], "c*": ["c64"], "c64": ["c128"], "c128": [],
}  # fmt: skip


def _parse_table(text: str) -> tuple[list[str], dict[tuple[str, str], str]]:
    header, *rows = (line.split() for line in text.strip().splitlines())
    table = {}
    for row in rows:
        assert len(row) == len(header) + 1, row
        for column, cell in zip(header, row[1:]):
            table[row[0], column] = cell
    assert [row[0] for row in rows] == header
    return header, table


LABELS, JOIN = _parse_table(PROMOTION_TABLE)
WEAK = ("i*", "f*", "c*")
STRONG = [label for label in LABELS if label not in WEAK]

DTYPES = {
    "b1": np.dtype(np.bool_),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}  # fmt: skip
LABEL_OF = {dtype: label for label, dtype in DTYPES.items()}
PY_TYPE = {"i*": int, "f*": float, "c*": complex}
PY_VALUE = {"i*": 3, "f*": 1.5, "c*": 1 + 2j}
# jnp.promote_types returns np.dtype(<python type>) for a weak join.
PROMOTE_TYPES_WEAK = {"i*": np.dtype(np.int64), "f*": np.dtype(np.float64), "c*": np.dtype(np.complex128)}

TO_32 = {"i64": "i32", "u64": "u32", "f64": "f32", "c128": "c64"}
DEFAULT = {
    False: {"i*": "i32", "f*": "f32", "c*": "c64"},
    True: {"i*": "i64", "f*": "f64", "c*": "c128"},
}
X64_MODES = [pytest.param(False, id="x64off"), pytest.param(True, id="x64on")]


def join(*labels: str) -> str:
    """The lattice join of `labels`, read off the hand-written table."""
    return functools.reduce(lambda a, b: JOIN[a, b], labels)


def materialize(label: str, x64: bool) -> str:
    """The dtype label ember stores for lattice element `label`."""
    if label in WEAK:
        return DEFAULT[x64][label]
    return label if x64 else TO_32.get(label, label)


def expected(labels, x64: bool) -> tuple[np.dtype, bool]:
    """(dtype, weak_type) of combining values whose lattice elements are `labels`."""
    node = join(*labels)
    return DTYPES[materialize(node, x64)], node in WEAK


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


@pytest.fixture(params=X64_MODES)
def x64(request):
    """Run the test with x64 off and with x64 on (restored afterwards)."""
    with ember.config.x64(request.param):
        yield request.param


def _quiet(fn, *args):
    # Creating a 64-bit array with x64 off may warn (as JAX does); not under test here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def strong_array(label: str, shape=(2,)):
    """A strongly typed ember array whose requested dtype is `label`."""
    return _quiet(enp.zeros, shape, DTYPES[label])


def weak_array(label: str):
    """A weakly typed ember array of weak kind `label`, made by an operation: bool array + Python scalar."""
    return strong_array("b1") + PY_VALUE[label]


def operand_node(label: str, x64: bool) -> str:
    """The lattice element of a strong array created with dtype `label` (64-bit is canonicalised first)."""
    return label if label in WEAK else materialize(label, x64)


def pair_ids(pairs) -> list[str]:
    return ["-".join(pair) for pair in pairs]


ALL_PAIRS = list(itertools.product(LABELS, LABELS))
STRONG_PAIRS = list(itertools.product(STRONG, STRONG))
STRONG_WEAK_PAIRS = list(itertools.product(STRONG, WEAK))
WEAK_PAIRS = list(itertools.product(WEAK, WEAK))

# Ways a binary operation can be spelled; all must promote identically.
BINARY_OPS = {
    "x+y": operator.add,
    "y+x": lambda x, y: y + x,
    "x*y": operator.mul,
    "y*x": lambda x, y: y * x,
    "add(x,y)": lambda x, y: enp.add(x, y),
    "add(y,x)": lambda x, y: enp.add(y, x),
}


# ---------------------------------------------------------------------------
# Self-checks of the transcription (no ember involved)
# ---------------------------------------------------------------------------


def _upper_bounds(node: str) -> set[str]:
    out = {node}
    for parent in DOCS_LATTICE[node]:
        out |= _upper_bounds(parent)
    return out


def test_table_is_the_join_of_the_documented_lattice():
    assert sorted(DOCS_LATTICE) == sorted(LABELS)
    for a, b in ALL_PAIRS:
        common = _upper_bounds(a) & _upper_bounds(b)
        least = [c for c in common if common <= _upper_bounds(c)]
        assert least == [JOIN[a, b]], (a, b, least)


def test_table_is_symmetric():
    assert all(JOIN[a, b] == JOIN[b, a] for a, b in ALL_PAIRS)


# ---------------------------------------------------------------------------
# 1. promote_types: the full table
# ---------------------------------------------------------------------------


def _promote_types_arg(label: str):
    return PY_TYPE[label] if label in WEAK else DTYPES[label]


@pytest.mark.parametrize("a,b", ALL_PAIRS, ids=pair_ids(ALL_PAIRS))
def test_promote_types_table(a, b, x64):
    """enp.promote_types(a, b) is the table entry, with no canonicalisation in either x64 mode."""
    node = JOIN[a, b]
    want = PROMOTE_TYPES_WEAK[node] if node in WEAK else DTYPES[node]
    got = enp.promote_types(_promote_types_arg(a), _promote_types_arg(b))
    assert isinstance(got, np.dtype)
    assert got == want, f"promote_types({a}, {b}) = {got}, expected {want} ({node})"


@pytest.mark.parametrize("a,b", STRONG_PAIRS[::7], ids=pair_ids(STRONG_PAIRS[::7]))
def test_promote_types_accepts_scalar_types(a, b):
    """Scalar types (np.int8, ml_dtypes.bfloat16, ...) are accepted as well as np.dtype objects."""
    got = enp.promote_types(DTYPES[a].type, DTYPES[b].type)
    assert isinstance(got, np.dtype)
    assert got == DTYPES[JOIN[a, b]]


def test_promote_types_documented_examples():
    # Examples from the jnp.promote_types docstring and from ember's spec.
    assert enp.promote_types(np.uint8, int) == np.dtype(np.uint8)
    assert enp.promote_types(np.float16, float) == np.dtype(np.float16)
    assert enp.promote_types(np.int32, np.float32) == np.dtype(np.float32)
    assert enp.promote_types(np.int32, np.uint32) == np.dtype(np.int64)  # even with x64 off
    assert enp.promote_types(ml_dtypes.bfloat16, np.float16) == np.dtype(np.float32)


def test_scalar_type_names():
    # As in JAX, enp.float32 & co. are dtypes equal to NumPy's (calling one makes an ember Array:
    # tests/test_array_api.py).
    assert np.dtype(enp.bfloat16) == ml_dtypes.bfloat16
    assert enp.float32 == np.float32 and np.dtype(enp.float32) == np.float32
    assert enp.int8 == np.int8
    assert enp.uint64 == np.uint64
    assert enp.complex64 == np.complex64
    assert enp.bool_ == np.bool_ and enp.bool == np.bool_


# ---------------------------------------------------------------------------
# 2. result_type and eager binary operations
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("a,b", STRONG_PAIRS, ids=pair_ids(STRONG_PAIRS))
def test_result_type_dtype_pairs(a, b, x64):
    """result_type of two dtypes: table join, then canonicalised.

    NB for u64 x signed ints with x64 off: the join is f* (weak float), so this
    expects float32, as JAX's docs describe (canonicalise the result).  jax 0.10.2
    canonicalises the *inputs* first and returns int32 there; see also
    test_result_type_canonicalises_inputs_like_arrays_do.
    """
    want, _ = expected([a, b], x64)
    got = enp.result_type(DTYPES[a], DTYPES[b])
    assert isinstance(got, np.dtype)
    assert got == want, f"result_type({a}, {b}) = {got}, expected {want}"


@pytest.mark.parametrize("a,b", STRONG_PAIRS, ids=pair_ids(STRONG_PAIRS))
def test_binary_op_array_pairs(a, b, x64):
    """array(a) op array(b): 64-bit arrays are canonicalised on creation; the table join is materialised."""
    x, y = strong_array(a), strong_array(b)
    assert x.dtype == DTYPES[materialize(a, x64)] and x.weak_type is False
    nodes = [operand_node(a, x64), operand_node(b, x64)]
    want_dtype, want_weak = expected(nodes, x64)
    assert enp.result_type(x, y) == want_dtype
    for name, op in BINARY_OPS.items():
        out = op(x, y)
        assert (out.dtype, out.weak_type) == (want_dtype, want_weak), f"{name} with x:{a}, y:{b}"
        assert out.shape == (2,)


def test_uint64_with_signed_is_weak_float_x64_on():
    # u64 and signed ints meet at f*: with x64 on the result is float64 *and weakly typed* (as in JAX) ...
    with ember.config.x64(True):
        out = strong_array("u64") + strong_array("i8")
        assert (out.dtype, out.weak_type) == (np.dtype(np.float64), True)
        # ... so it then adopts the precision of a strong float it meets.
        out2 = out + strong_array("f16")
        assert (out2.dtype, out2.weak_type) == (np.dtype(np.float16), False)


@pytest.mark.parametrize("a,s", STRONG_WEAK_PAIRS, ids=pair_ids(STRONG_WEAK_PAIRS))
def test_binary_op_array_and_python_scalar(a, s, x64):
    """array(a) op Python scalar: the scalar is weak; weak result iff the join is weak (e.g. int32 + 1.0)."""
    x, scalar = strong_array(a), PY_VALUE[s]
    want_dtype, want_weak = expected([operand_node(a, x64), s], x64)
    assert enp.result_type(x, scalar) == want_dtype
    assert enp.result_type(scalar, x) == want_dtype
    for name, op in BINARY_OPS.items():
        out = op(x, scalar)
        assert (out.dtype, out.weak_type) == (want_dtype, want_weak), f"{name} with x:{a}, y:{scalar!r}"
        assert out.shape == (2,)


@pytest.mark.parametrize("a,s", STRONG_WEAK_PAIRS, ids=pair_ids(STRONG_WEAK_PAIRS))
def test_result_type_dtype_and_python_scalar(a, s, x64):
    want, _ = expected([a, s], x64)
    assert enp.result_type(DTYPES[a], PY_VALUE[s]) == want
    assert enp.result_type(PY_VALUE[s], DTYPES[a]) == want


@pytest.mark.parametrize("a,s", STRONG_WEAK_PAIRS, ids=pair_ids(STRONG_WEAK_PAIRS))
def test_binary_op_array_and_weak_array(a, s, x64):
    """A weakly typed array (made from a Python scalar by an op) promotes exactly like that Python scalar."""
    w = weak_array(s)
    assert (w.dtype, w.weak_type) == (DTYPES[DEFAULT[x64][s]], True)
    x = strong_array(a)
    want_dtype, want_weak = expected([operand_node(a, x64), s], x64)
    assert enp.result_type(x, w) == want_dtype
    for name, op in BINARY_OPS.items():
        out = op(x, w)
        assert (out.dtype, out.weak_type) == (want_dtype, want_weak), f"{name} with x:{a}, y:weak {s}"


@pytest.mark.parametrize("s,t", WEAK_PAIRS, ids=pair_ids(WEAK_PAIRS))
def test_python_scalar_pairs(s, t, x64):
    """Scalar-scalar: weak join, materialised to the default dtype, and weakly typed."""
    want_dtype, want_weak = expected([s, t], x64)
    assert want_weak
    assert enp.result_type(PY_VALUE[s], PY_VALUE[t]) == want_dtype
    out = enp.add(PY_VALUE[s], PY_VALUE[t])
    assert (out.dtype, out.weak_type) == (want_dtype, True)
    assert out.shape == ()
    # Two weak arrays give a weak result too.
    out = weak_array(s) + weak_array(t)
    assert (out.dtype, out.weak_type) == (want_dtype, True)
    # And a weak array with a Python scalar.
    out = weak_array(s) * PY_VALUE[t]
    assert (out.dtype, out.weak_type) == (want_dtype, True)


@pytest.mark.parametrize("s", WEAK, ids=str)
def test_python_scalar_alone(s, x64):
    assert enp.result_type(PY_VALUE[s]) == DTYPES[DEFAULT[x64][s]]
    assert enp.result_type(PY_TYPE[s]) == DTYPES[DEFAULT[x64][s]]


def test_python_bool_is_strong_bool(x64):
    # A Python bool is not weak: it is b1, the bottom of the lattice.
    assert enp.result_type(True) == np.dtype(np.bool_)
    out = enp.add(True, True)
    assert (out.dtype, out.weak_type) == (np.dtype(np.bool_), False)
    out = enp.add(True, 1)  # b1 v i* = i*
    assert (out.dtype, out.weak_type) == (DTYPES[DEFAULT[x64]["i*"]], True)
    out = strong_array("i8") + True
    assert (out.dtype, out.weak_type) == (np.dtype(np.int8), False)


def test_numpy_scalars_are_strong():
    # NumPy scalars are strongly typed (only Python scalars are weak).
    out = strong_array("f16") + np.float32(1)
    assert (out.dtype, out.weak_type) == (np.dtype(np.float32), False)
    out = strong_array("i8") + np.int16(1)
    assert (out.dtype, out.weak_type) == (np.dtype(np.int16), False)


def test_documented_weak_examples():
    # From ember's spec: int32-array + 1.0 is float32 and weak; float32-array + 1.0 is float32 and strong.
    out = strong_array("i32") + 1.0
    assert (out.dtype, out.weak_type) == (np.dtype(np.float32), True)
    out = strong_array("f32") + 1.0
    assert (out.dtype, out.weak_type) == (np.dtype(np.float32), False)
    out = 2 * strong_array("i8")  # JAX docs: 2 * int8 array stays int8
    assert (out.dtype, out.weak_type) == (np.dtype(np.int8), False)
    out = strong_array("bf16") * 2.0
    assert (out.dtype, out.weak_type) == (np.dtype(ml_dtypes.bfloat16), False)


def test_result_type_many_documented_examples():
    assert enp.result_type(np.dtype("int32"), np.dtype("float32")) == np.dtype(np.float32)
    assert enp.result_type(np.uint16, np.dtype("int32")) == np.dtype(np.int32)
    assert enp.result_type(1.0, np.dtype(ml_dtypes.bfloat16)) == np.dtype(ml_dtypes.bfloat16)
    with ember.config.x64(False):
        assert enp.result_type(np.dtype("float64")) == np.dtype(np.float32)
    with ember.config.x64(True):
        assert enp.result_type(np.dtype("float64")) == np.dtype(np.float64)


def test_result_type_canonicalises_inputs_like_arrays_do():
    """Where output-only and input canonicalisation disagree: u64 with a signed int, x64 off.

    Table: u64 v i8 = f* -> float32 (what JAX's docs describe and ember's spec says).
    jax 0.10.2 returns int32 here (it canonicalises u64 -> u32 first, as array creation does).
    This test pins the documented behaviour; it is the only place the two readings differ.
    """
    with ember.config.x64(False):
        for signed in ("i8", "i16", "i32", "i64"):
            assert enp.result_type(DTYPES["u64"], DTYPES[signed]) == np.dtype(np.float32), signed
            # arrays are canonicalised on creation: u32 array v i8 array = i64 -> int32
            out = strong_array("u64") + strong_array(signed)
            assert (out.dtype, out.weak_type) == (np.dtype(np.int32), False), signed


# --- x64 switching ----------------------------------------------------------

CANONICALISED_64 = [("f64", "f32"), ("i64", "i32"), ("u64", "u32"), ("c128", "c64")]


@pytest.mark.parametrize("wide,narrow", CANONICALISED_64, ids=pair_ids(CANONICALISED_64))
def test_asarray_canonicalises_64_bit_inputs(wide, narrow):
    data = np.ones((3,), DTYPES[wide])
    with ember.config.x64(False):
        assert _quiet(enp.asarray, data).dtype == DTYPES[narrow]
        assert _quiet(enp.zeros, (3,), DTYPES[wide]).dtype == DTYPES[narrow]
        assert _quiet(enp.ones, (3,), DTYPES[wide]).dtype == DTYPES[narrow]
    with ember.config.x64(True):
        assert enp.asarray(data).dtype == DTYPES[wide]
        assert enp.zeros((3,), DTYPES[wide]).dtype == DTYPES[wide]
        assert enp.ones((3,), DTYPES[wide]).dtype == DTYPES[wide]


def test_config_update_switches_x64_at_any_time():
    data = np.zeros((2,), np.float64)
    previous = ember.config.enable_x64
    try:
        ember.config.update("enable_x64", True)
        assert enp.asarray(data).dtype == np.dtype(np.float64)
        assert enp.result_type(1.0) == np.dtype(np.float64)
        ember.config.update("enable_x64", False)
        assert _quiet(enp.asarray, data).dtype == np.dtype(np.float32)
        assert enp.result_type(1.0) == np.dtype(np.float32)
        ember.config.update("enable_x64", True)
        assert enp.result_type(1) == np.dtype(np.int64)
    finally:
        ember.config.update("enable_x64", previous)


def test_x64_context_manager_restores_previous_setting():
    previous = ember.config.enable_x64
    with ember.config.x64(True):
        assert ember.config.enable_x64 is True
        with ember.config.x64(False):
            assert ember.config.enable_x64 is False
        assert ember.config.enable_x64 is True
    assert ember.config.enable_x64 == previous


# --- Python ints that do not fit --------------------------------------------
# Behaviour checked against jax 0.10.2: a Python int is first converted to the
# default int dtype (int32 with x64 off, int64 with x64 on) and must fit in it,
# else OverflowError; it is then converted to the result dtype, wrapping modulo
# 2**bits like a NumPy cast (jnp.zeros(3, int8) + 1000 -> int8 [-24, ...]).
# ember raises an EmberError that is also an OverflowError.


@pytest.mark.parametrize(
    "label,value,x64_on",
    [
        ("i32", 2**40, False),
        ("i32", 2**31, False),
        ("i32", -(2**31) - 1, False),
        ("u32", 2**32, False),
        ("i8", 2**40, False),
        ("i64", 2**63, True),
        ("i64", -(2**63) - 1, True),
    ],
)
def test_python_int_overflow_raises(label, value, x64_on):
    with ember.config.x64(x64_on):
        x = strong_array(label)
        for name, op in BINARY_OPS.items():
            with pytest.raises(OverflowError) as info:
                op(x, value)
            assert isinstance(info.value, EmberError), f"{name}: {type(info.value)}"


@pytest.mark.parametrize(
    "label,value,x64_on,want",
    [
        ("i32", 2**31 - 1, False, 2**31 - 1),  # edges of int32 are fine
        ("i32", -(2**31), False, -(2**31)),
        ("i8", 1000, False, -24),  # as JAX: fits int32, then wraps to int8 (1000 - 1024)
        ("u8", 256, False, 0),
        ("u8", -1, False, 255),
        ("i32", 2**40, True, 0),  # x64 on: fits int64, wraps to int32
    ],
)
def test_python_int_in_default_int_range_wraps_like_jax(label, value, x64_on, want):
    with ember.config.x64(x64_on):
        out = strong_array(label) + value
        assert (out.dtype, out.weak_type) == (DTYPES[label], False)
        np.testing.assert_array_equal(np.asarray(out), np.full((2,), want, DTYPES[label]))


# ---------------------------------------------------------------------------
# 3. Lattice properties (hypothesis)
# ---------------------------------------------------------------------------

PROPERTY_SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

labels_st = st.sampled_from(LABELS)  # strong dtypes and the weak kinds
strong_st = st.sampled_from(STRONG)
x64_st = st.booleans()


def _operand(label: str):
    """A value of lattice element `label`: a strong array, or a Python scalar for a weak kind."""
    return PY_VALUE[label] if label in WEAK else strong_array(label)


def _dtype_weak(value):
    return value.dtype, value.weak_type


@PROPERTY_SETTINGS
@given(a=labels_st, b=labels_st, x64_on=x64_st)
def test_property_commutative(a, b, x64_on):
    with ember.config.x64(x64_on):
        pa, pb = _promote_types_arg(a), _promote_types_arg(b)
        assert enp.promote_types(pa, pb) == enp.promote_types(pb, pa)
        x, y = _operand(a), _operand(b)
        assert enp.result_type(x, y) == enp.result_type(y, x)
        assert _dtype_weak(enp.add(x, y)) == _dtype_weak(enp.add(y, x))
        nodes = [operand_node(a, x64_on), operand_node(b, x64_on)]
        assert _dtype_weak(enp.add(x, y)) == expected(nodes, x64_on)


@PROPERTY_SETTINGS
@given(a=labels_st, b=labels_st, c=labels_st, x64_on=x64_st)
@example(a="u64", b="i8", c="f16", x64_on=True)  # (u64 v i8) = f* is weak, so it yields to f16
def test_property_associative(a, b, c, x64_on):
    """(a + b) + c and a + (b + c) agree in dtype and weak_type (weak types tracked through the ops)."""
    with ember.config.x64(x64_on):
        x, y, z = _operand(a), _operand(b), _operand(c)
        left = enp.add(enp.add(x, y), z)
        right = enp.add(x, enp.add(y, z))
        assert _dtype_weak(left) == _dtype_weak(right)
        nodes = [operand_node(label, x64_on) for label in (a, b, c)]
        assert _dtype_weak(left) == expected(nodes, x64_on)


@PROPERTY_SETTINGS
@given(a=strong_st, b=strong_st, c=strong_st)
def test_property_promote_types_associative_away_from_weak_joins(a, b, c):
    """promote_types is associative on strong dtypes as long as no partial join is weak.

    (It cannot be associative in general: promote_types(u64, i8) is float64, a strong
    dtype, whereas the lattice element u64 v i8 = f* is weak.)
    """
    if any(JOIN[p, q] in WEAK for p, q in ((a, b), (b, c), (a, c))):
        return
    pt = enp.promote_types
    assert pt(pt(DTYPES[a], DTYPES[b]), DTYPES[c]) == pt(DTYPES[a], pt(DTYPES[b], DTYPES[c]))


@PROPERTY_SETTINGS
@given(a=labels_st, x64_on=x64_st)
def test_property_idempotent(a, x64_on):
    with ember.config.x64(x64_on):
        arg = _promote_types_arg(a)
        want = PROMOTE_TYPES_WEAK[a] if a in WEAK else DTYPES[a]
        assert enp.promote_types(arg, arg) == want
        x = weak_array(a) if a in WEAK else strong_array(a)
        out = x + x
        assert _dtype_weak(out) == _dtype_weak(x)
        assert enp.result_type(x, x) == x.dtype


@PROPERTY_SETTINGS
@given(a=labels_st, x64_on=x64_st)
def test_property_bool_is_bottom(a, x64_on):
    with ember.config.x64(x64_on):
        arg = _promote_types_arg(a)
        assert enp.promote_types(np.bool_, arg) == enp.promote_types(arg, arg)
        assert enp.promote_types(arg, np.bool_) == enp.promote_types(arg, arg)
        x = weak_array(a) if a in WEAK else strong_array(a)
        b = strong_array("b1")
        assert _dtype_weak(b + x) == _dtype_weak(x)
        assert _dtype_weak(x + b) == _dtype_weak(x)
        assert enp.result_type(np.bool_, x) == x.dtype


@PROPERTY_SETTINGS
@given(a=labels_st, b=labels_st)
def test_property_join_is_an_upper_bound(a, b):
    """promote(a, b) promoted with a (or b) again gives promote(a, b)."""
    ab = JOIN[a, b]
    got = enp.promote_types(_promote_types_arg(a), _promote_types_arg(b))
    if ab not in WEAK:
        assert enp.promote_types(got, _promote_types_arg(a)) == got
        assert enp.promote_types(got, _promote_types_arg(b)) == got


@PROPERTY_SETTINGS
@given(labels=st.lists(labels_st, min_size=1, max_size=6), x64_on=x64_st)
@example(labels=["u64", "i8", "f16"], x64_on=True)
@example(labels=["i*", "i*", "u8"], x64_on=False)
def test_property_result_type_many_args_is_pairwise_fold(labels, x64_on):
    """result_type(*args) == the pairwise fold of the table == dtype of folding enp.add over the args."""
    with ember.config.x64(x64_on):
        args = [_operand(label) for label in labels]
        nodes = [operand_node(label, x64_on) for label in labels]
        want_dtype, want_weak = expected(nodes, x64_on)
        assert enp.result_type(*args) == want_dtype
        assert enp.result_type(*reversed(args)) == want_dtype
        if len(args) >= 2:
            folded = functools.reduce(enp.add, args)
            assert _dtype_weak(folded) == (want_dtype, want_weak)


@PROPERTY_SETTINGS
@given(labels=st.lists(strong_st, min_size=1, max_size=6), x64_on=x64_st)
@example(labels=["f64", "f64"], x64_on=False)  # a repeated 64-bit dtype is still canonicalised
@example(labels=["u64", "i8", "f16"], x64_on=False)
def test_property_result_type_of_dtypes_is_pairwise_fold(labels, x64_on):
    """Same with dtype arguments (not canonicalised before the join; see test_result_type_dtype_pairs)."""
    with ember.config.x64(x64_on):
        want, _ = expected(labels, x64_on)
        assert enp.result_type(*(DTYPES[label] for label in labels)) == want


# ---------------------------------------------------------------------------
# 4. Broadcasting (hypothesis)
# ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4))
@example(shapes=hnp.BroadcastableShapes(input_shapes=((), ()), result_shape=()))
@example(shapes=hnp.BroadcastableShapes(input_shapes=((), (0,)), result_shape=(0,)))
@example(shapes=hnp.BroadcastableShapes(input_shapes=((0,), (1,)), result_shape=(0,)))
@example(shapes=hnp.BroadcastableShapes(input_shapes=((3, 1), (1, 0)), result_shape=(3, 0)))
@example(shapes=hnp.BroadcastableShapes(input_shapes=((2, 0, 3), (3,)), result_shape=(2, 0, 3)))
def test_broadcast_compatible_shapes(shapes):
    s1, s2 = shapes.input_shapes
    want = np.broadcast_shapes(s1, s2)
    x, y = enp.zeros(s1), enp.zeros(s2)
    assert (x + y).shape == want
    assert enp.add(y, x).shape == want
    assert np.asarray(x + y).shape == want


@st.composite
def incompatible_shapes(draw):
    """Two shapes that cannot broadcast: some aligned axis has sizes n != m, both != 1."""
    base = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    axis = draw(st.integers(1, len(base)))  # counted from the end
    n = base[-axis]
    if n == 1:
        n = draw(st.sampled_from([0, 2, 3]))
        base = base[: len(base) - axis] + (n,) + base[len(base) - axis + 1 :]
    m = draw(st.sampled_from([d for d in (0, 2, 3, 5) if d != n]))
    # The other shape: a suffix of `base` long enough to include the axis, with broadcastable
    # changes elsewhere (some sizes set to 1), possibly with extra leading axes.
    length = draw(st.integers(axis, len(base)))
    other = list(base[len(base) - length :])
    for i in range(len(other)):
        if draw(st.booleans()):
            other[i] = 1
    other[-axis] = m
    lead = draw(st.lists(st.integers(0, 3), max_size=4 - length)) if length == len(base) else []
    s2 = tuple(lead) + tuple(other)
    if draw(st.booleans()):
        return base, s2
    return s2, base


@PROPERTY_SETTINGS
@given(shapes=incompatible_shapes())
@example(shapes=((3,), (4,)))
@example(shapes=((0,), (2,)))
@example(shapes=((2, 3), (3, 2)))
def test_broadcast_incompatible_shapes(shapes):
    s1, s2 = shapes
    with pytest.raises(ValueError):
        np.broadcast_shapes(s1, s2)  # sanity check of the strategy
    x, y = enp.zeros(s1), enp.zeros(s2)
    for op in (operator.add, enp.add):
        with pytest.raises(ValueError) as info:
            op(x, y)
        err = info.value
        assert isinstance(err, EmberError), type(err)
        msg = str(err)
        assert "add" in msg, msg
        assert str(s1) in msg and str(s2) in msg, msg
