"""Comparisons, logical and bitwise operations, shifts and bit counts."""

from __future__ import annotations

from ember.core.primitives._rules import ANY, BOOL_OR_INT, INTEGER, REAL, Elementwise, to_bool

eq_p = Elementwise("eq", ANY, to_bool)
ne_p = Elementwise("ne", ANY, to_bool)
lt_p = Elementwise("lt", REAL, to_bool)
le_p = Elementwise("le", REAL, to_bool)
gt_p = Elementwise("gt", REAL, to_bool)
ge_p = Elementwise("ge", REAL, to_bool)

# On bool these are logical; on integers bitwise (as in JAX).
not_p = Elementwise("not", BOOL_OR_INT)
and_p = Elementwise("and", BOOL_OR_INT)
or_p = Elementwise("or", BOOL_OR_INT)
xor_p = Elementwise("xor", BOOL_OR_INT)

# Shifts by >= the bit width give 0 (logical) or the sign fill (arithmetic), as in XLA.
shift_left_p = Elementwise("shift_left", INTEGER)
shift_right_logical_p = Elementwise("shift_right_logical", INTEGER)
shift_right_arithmetic_p = Elementwise("shift_right_arithmetic", INTEGER)
population_count_p = Elementwise("population_count", INTEGER)
clz_p = Elementwise("clz", INTEGER)

# Comparisons and bit operations give bool or integer results: their tangents are zero.
from ember.core.ad import defnondiff

defnondiff(eq_p, ne_p, lt_p, le_p, gt_p, ge_p, not_p, and_p, or_p, xor_p, shift_left_p, shift_right_logical_p,
           shift_right_arithmetic_p, population_count_p, clz_p)  # fmt: skip
