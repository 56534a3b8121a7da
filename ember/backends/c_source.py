"""CUDA C of elementwise primitives, with the exact semantics of ember's NumPy kernels (kernels.py).

`expression(eqn, args)` gives the C expression that computes one element of `eqn`'s result from the C
expressions `args` of its operands' elements; `PRELUDE` is the code those expressions call (helpers
written once in portable C++), preceded by `CUDA_HEADER` in a CUDA kernel or `HOST_HEADER` in the host
test harness, which compiles the same bodies with gcc. Semantics kept from the NumPy kernels:

- float32/float64 `add`/`sub`/`mul` are `__fadd_rn`-style intrinsics, which the compiler never
  contracts into a fused multiply-add (NumPy rounds every product), so results are bit for bit NumPy's
  where both are correctly rounded;
- float16 is computed in float and rounded to float16 after every equation, as NumPy does (inside
  the composite ones too: rsqrt, logistic, integer powers; float16 nextafter is left to the backend);
- `max`/`min` propagate NaN as ``np.maximum`` does; integer `div`/`rem` truncate toward zero (x / 0
  and x % 0 are 0, INT_MIN / -1 wraps); integer arithmetic wraps; float -> int converts saturate
  (NaN -> 0) as XLA; shifts out of range give 0 (arithmetic: the sign).

bfloat16 (no C type both sides agree on) and complex orderings are left to the backend's kernels.
Nothing here imports the core or CuPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["CTYPE", "CUDA_HEADER", "HOST_HEADER", "PRELUDE", "expression", "fusible", "literal",
           "reduction", "reduction_fusible"]  # fmt: skip

# The C type an element is computed in (float16 in float, rounded after each equation).
CTYPE = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long long",
    "float16": "float", "float32": "float", "float64": "double", "complex64": "ember_c64", "complex128": "ember_c128",
}  # fmt: skip
_INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
_FLOATS = {"float16", "float32", "float64"}
_COMPLEX = {"complex64", "complex128"}

CUDA_HEADER = """\
typedef thrust::complex<float> ember_c64;
typedef thrust::complex<double> ember_c128;
__device__ __forceinline__ float ember_rh(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ int ember_popc(unsigned int x) { return __popc(x); }
__device__ __forceinline__ int ember_popc(unsigned long long x) { return __popcll(x); }
__device__ __forceinline__ int ember_clz(unsigned int x) { return __clz((int)x); }
__device__ __forceinline__ int ember_clz(unsigned long long x) { return __clzll((long long)x); }
__device__ __forceinline__ double ember_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double ember_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
"""

HOST_HEADER = """\
#include <cmath>
#include <complex>
#include <limits>
#define __device__
#define __forceinline__ inline
using namespace std;
typedef std::complex<float> ember_c64;
typedef std::complex<double> ember_c128;
static volatile float ember_f32_sink;  /* a store through volatile rounds to float, as the GPU does */
static inline float __fadd_rn(float a, float b) { ember_f32_sink = a + b; return ember_f32_sink; }
static inline float __fsub_rn(float a, float b) { ember_f32_sink = a - b; return ember_f32_sink; }
static inline float __fmul_rn(float a, float b) { ember_f32_sink = a * b; return ember_f32_sink; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline int ember_popc(unsigned int x) { return __builtin_popcount(x); }
static inline int ember_popc(unsigned long long x) { return __builtin_popcountll(x); }
static inline int ember_clz(unsigned int x) { return x ? __builtin_clz(x) : 32; }
static inline int ember_clz(unsigned long long x) { return x ? __builtin_clzll(x) : 64; }
#if defined(__FLT16_MAX__)  /* the compiler's _Float16 (GCC 12 on x86-64): float16 kernels run on the host too */
static inline float ember_rh(float x) { return (float)(_Float16)x; }
#endif
static inline double ember_inf() { return std::numeric_limits<double>::infinity(); }
static inline double ember_nan() { return std::numeric_limits<double>::quiet_NaN(); }
"""

# Helpers both sides compile: wrapping integer arithmetic through unsigned types (signed overflow is
# undefined in C), NaN-propagating extrema, truncating division, saturating float -> int.
_INT_OPS = """\
__device__ __forceinline__ T ember_add(T a, T b) { return (T)((W)a + (W)b); }
__device__ __forceinline__ T ember_sub(T a, T b) { return (T)((W)a - (W)b); }
__device__ __forceinline__ T ember_mul(T a, T b) { return (T)((W)a * (W)b); }
__device__ __forceinline__ T ember_neg(T a) { return (T)((W)0 - (W)a); }
__device__ __forceinline__ T ember_div(T a, T b) { return b == 0 ? (T)0 : SIGNED && b == (T)-1 ? ember_neg(a) : (T)(a / b); }
__device__ __forceinline__ T ember_rem(T a, T b) { return b == 0 || (SIGNED && b == (T)-1) ? (T)0 : (T)(a % b); }
__device__ __forceinline__ T ember_abs(T a) { return a < 0 ? ember_neg(a) : a; }
"""
_INT_TYPES = [("signed char", "unsigned int", 1), ("short", "unsigned int", 1), ("int", "unsigned int", 1),
              ("long long", "unsigned long long", 1), ("unsigned char", "unsigned int", 0),
              ("unsigned short", "unsigned int", 0), ("unsigned int", "unsigned int", 0),
              ("unsigned long long", "unsigned long long", 0)]  # fmt: skip

PRELUDE = (
    "".join(_INT_OPS.replace("SIGNED", str(s)).replace("(T)", f"({t})").replace("T ", f"{t} ").replace("(W)", f"({w})")
            for t, w, s in _INT_TYPES)  # fmt: skip
    + """\
__device__ __forceinline__ float ember_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float ember_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float ember_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double ember_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double ember_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double ember_mul(double a, double b) { return __dmul_rn(a, b); }
template <class T> __device__ __forceinline__ T ember_add(T a, T b) { return a + b; }
template <class T> __device__ __forceinline__ T ember_sub(T a, T b) { return a - b; }
template <class T> __device__ __forceinline__ T ember_mul(T a, T b) { return a * b; }
template <class T> __device__ __forceinline__ T ember_max(T a, T b) { return (a >= b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T ember_min(T a, T b) { return (a <= b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T ember_sign(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x; }
template <class T, class F> __device__ __forceinline__ T ember_f2i(F x, double lo, double hi, T low, T high) {
  double d = (double)x;
  return (d >= lo && d < hi) ? (T)x : d > 0 ? high : d < 0 ? low : (T)0;
}
__device__ __forceinline__ float ember_logistic(float x) {
  float e = expf(-fabsf(x)); return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
__device__ __forceinline__ double ember_logistic(double x) {
  double e = exp(-fabs(x)); return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
"""
)

# Unary float functions: C name for float (f-suffixed) and double; complex takes the plain name.
_UNARY = {"exp": "exp", "exp2": "exp2", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh",
          "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
          "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "sqrt": "sqrt", "cbrt": "cbrt",
          "floor": "floor", "ceil": "ceil", "erf": "erf", "erfc": "erfc"}  # fmt: skip
_COMPLEX_UNARY = {"exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BITWISE = {"and": ("&", "&&"), "or": ("|", "||"), "xor": ("^", "!=")}
_IDENTITY = {"copy", "stop_gradient", "broadcast_in_dim"}


def _name(dtype: Any) -> str:
    return np.dtype(dtype).name


def _float_call(fn: str, dtype: str, *args: str) -> str:
    return f"{fn}{'f' if dtype in ('float16', 'float32') else ''}({', '.join(args)})"


def literal(value: Any, dtype: Any) -> str:
    """A C expression of exactly `value` as an element of `dtype`.

    >>> literal(np.float32(0.1), np.float32), literal(-2**31, np.int32), literal(float("-inf"), np.float64)
    ('((float)0.10000000149011612)', '((int)(-2147483647 - 1))', '(-ember_inf())')
    """
    name = _name(dtype)
    ctype = CTYPE[name]
    if name == "bool":
        return "true" if bool(value) else "false"
    if name in _INTS:
        v = int(value)
        if name == "int64" and v == -(2**63):
            return "((long long)(-9223372036854775807LL - 1))"
        if name == "int32" and v == -(2**31):
            return "((int)(-2147483647 - 1))"
        return f"(({ctype}){v}{'ULL' if name == 'uint64' else 'LL' if name == 'int64' else ''})"
    if name in _COMPLEX:
        part = "float32" if name == "complex64" else "float64"
        return f"{ctype}({literal(complex(value).real, part)}, {literal(complex(value).imag, part)})"
    v = float(np.asarray(value, dtype=dtype))  # the element's exact value, as a double
    if math.isnan(v):
        return f"(({ctype})ember_nan())"
    if math.isinf(v):
        return f"({'-' if v < 0 else ''}ember_inf())" if name == "float64" else f"(({ctype})({'-' if v < 0 else ''}ember_inf()))"
    return f"(({ctype}){v!r})"


def _convert(x: str, src: str, dst: str) -> str | None:
    """C of ConvertElementType (kernels.convert): complex -> real keeps the real part, -> bool is
    x != 0, float -> int saturates (NaN -> 0)."""
    if src == dst:
        return x
    if src in _COMPLEX and dst not in _COMPLEX:
        x, src = f"({x}).real()", "float32" if src == "complex64" else "float64"
    if dst == "bool":
        return f"({x} != 0)"
    if dst in _INTS and src in _FLOATS:
        info = np.iinfo(dst)
        lo, hi = float(info.min), float(info.max) + 1.0
        return f"ember_f2i<{CTYPE[dst]}>({x}, {lo!r}, {hi!r}, {literal(info.min, dst)}, {literal(info.max, dst)})"
    if dst == "float16":
        if src == "float64":
            return None  # double -> float -> half rounds twice; NumPy rounds once
        return f"ember_rh((float)({x}))"
    if dst in _COMPLEX:
        return f"{CTYPE[dst]}({x})"
    return f"(({CTYPE[dst]})({x}))"


def _integer_pow(x: str, y: int, dtype: str) -> str | None:
    """Repeated squaring as kernels.integer_pow, or `pow` for floats (as NumPy's power)."""
    one = literal(1, dtype)
    if y == 0:
        return one
    if dtype in _FLOATS and y > 0:
        return _float_call("pow", dtype, x, literal(y, dtype))
    if dtype in _COMPLEX or (dtype in _INTS and y < 0):
        return None
    # ((x*x)*x)... in the order of _repeated_squaring: acc picks up base^(2^k) for each set bit
    def mul(p: str, q: str) -> str:  # float16: every product rounded, as NumPy's float16 multiply
        return f"ember_rh(ember_mul({p}, {q}))" if dtype == "float16" else f"ember_mul({p}, {q})"

    base, n, acc = x, abs(y), None
    while n:
        if n & 1:
            acc = base if acc is None else mul(acc, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return f"({one} / {acc})" if y < 0 else acc


def _shift(name: str, x: str, y: str, dtype: str) -> str:
    bits = np.dtype(dtype).itemsize * 8
    unsigned = CTYPE["uint" + str(bits)]
    signed = CTYPE["int" + str(bits)]
    t = CTYPE[dtype]
    if name == "shift_left":
        return f"(({y}) >= 0 && ({y}) < {bits} ? ({t})(({unsigned})({x}) << ({y})) : ({t})0)"
    if name == "shift_right_logical":
        return f"(({y}) >= 0 && ({y}) < {bits} ? ({t})(({unsigned})({x}) >> ({y})) : ({t})0)"
    amount = f"(({y}) < 0 || ({y}) >= {bits} ? {bits - 1} : (int)({y}))"
    return f"({t})(({signed})({x}) >> {amount})"


def expression(eqn: Any, args: Sequence[str]) -> str | None:
    """The C expression of one element of `eqn`'s result, from its operands' element expressions
    `args` (of the C types `CTYPE` gives their dtypes); None when the primitive or its dtypes are not
    fused (the backend's kernel runs it)."""
    name = eqn.primitive.name
    ins = [_name(v.aval.dtype) for v in eqn.inputs]
    out = _name(eqn.outvars[0].aval.dtype)
    if any(d not in CTYPE for d in (*ins, out)):
        return None
    text = _expression(name, eqn.params, list(args), ins, out)
    if text is not None and out == "float16" and name not in _IDENTITY and name != "convert_element_type":
        text = f"ember_rh({text})"
    return text


def _expression(name: str, params: dict[str, Any], a: list[str], ins: list[str], out: str) -> str | None:  # noqa: C901, PLR0911, PLR0912 - one table
    d = ins[0] if ins else out
    real, ints, cplx = d in _FLOATS, d in _INTS, d in _COMPLEX
    if name in _IDENTITY:
        if name == "broadcast_in_dim":
            return None  # decided by `fusible` (only NumPy-style broadcasts are an identity)
        return a[0]
    if name == "convert_element_type":
        return _convert(a[0], d, out)
    if name in _UNARY and (real or (cplx and name in _COMPLEX_UNARY)):
        return _float_call(_UNARY[name], d, a[0]) if real else f"{_UNARY[name]}({a[0]})"
    if name in ("add", "sub", "mul"):
        if d == "bool":
            return f"({a[0]} || {a[1]})" if name == "add" else f"({a[0]} && {a[1]})" if name == "mul" else None
        return f"ember_{name}({a[0]}, {a[1]})"
    if name == "div":
        return f"ember_div({a[0]}, {a[1]})" if ints else f"({a[0]} / {a[1]})"
    if name == "rem":
        return f"ember_rem({a[0]}, {a[1]})" if ints else _float_call("fmod", d, a[0], a[1]) if real else None
    if name == "neg":
        return f"ember_neg({a[0]})" if ints else f"(-{a[0]})"
    if name == "abs":
        return f"ember_abs({a[0]})" if ints else _float_call("fabs", d, a[0]) if real else f"abs({a[0]})"
    if name == "sign":
        if d.startswith("uint"):
            return f"(({CTYPE[d]})({a[0]} != 0))"
        return f"ember_sign({a[0]})" if not cplx else None
    if name == "square":
        return f"ember_mul({a[0]}, {a[0]})"
    if name in ("max", "min"):
        return None if cplx else f"ember_{name}({a[0]}, {a[1]})"
    if name == "clamp":  # (lo, x, hi)
        return None if cplx else f"ember_min(ember_max({a[1]}, {a[0]}), {a[2]})"
    if name in _COMPARE:
        return None if cplx and name not in ("eq", "ne") else f"({a[0]} {_COMPARE[name]} {a[1]})"
    if name == "select_n":
        if ins[0] == "bool":
            return f"({a[0]} ? {a[2]} : {a[1]})" if len(a) == 3 else a[1]
        text = a[1]
        for i in range(2, len(a)):
            text = f"({a[0]} == {i - 1} ? {a[i]} : {text})"
        return text
    if name in _BITWISE:
        op, logical = _BITWISE[name]
        return f"({a[0]} {logical} {a[1]})" if d == "bool" else f"(({CTYPE[d]})({a[0]} {op} {a[1]}))" if ints else None
    if name == "not":
        return f"(!{a[0]})" if d == "bool" else f"(({CTYPE[d]})~{a[0]})" if ints else None
    if name.startswith("shift_") and ints:
        return _shift(name, a[0], a[1], d)
    if name == "population_count" and ints:
        wide = "unsigned long long" if d.endswith("64") else "unsigned int"
        return f"(({CTYPE[d]})ember_popc(({wide})({CTYPE['uint' + d.lstrip('uint')]})({a[0]})))"
    if name == "clz" and ints:
        bits = np.dtype(d).itemsize * 8
        wide, width = ("unsigned long long", 64) if bits == 64 else ("unsigned int", 32)
        u = CTYPE["uint" + str(bits)]
        return f"(({CTYPE[d]})(ember_clz(({wide})({u})({a[0]})) - {width - bits}))"
    if not (real or cplx):
        return None
    if name == "is_finite" and real:
        return f"isfinite({a[0]})"
    if name == "rsqrt" and real:
        root = _float_call("sqrt", d, a[0])
        return f"({literal(1, d)} / {f'ember_rh({root})' if d == 'float16' else root})"
    if name == "logistic" and real:
        if d == "float16":  # each step rounded to float16, as NumPy computes kernels.logistic
            e = f"ember_rh(expf(-fabsf({a[0]})))"
            return f"({a[0]} >= 0 ? ember_rh(1.0f / ember_rh(1.0f + {e})) : ember_rh({e} / ember_rh(1.0f + {e})))"
        return f"ember_logistic({a[0]})"
    if name == "round" and real:
        return _float_call("rint" if params.get("rounding_method") == 1 else "round", d, a[0])
    if name in ("pow", "atan2", "nextafter") and real:
        if name == "nextafter" and d == "float16":
            return None  # the next float16, not the next float
        return _float_call(name, d, a[0], a[1])
    if name == "integer_pow":
        return _integer_pow(a[0], int(params["y"]), d)
    if name in ("real", "imag") and cplx:
        return f"({a[0]}).{name}()"
    if name == "conj" and cplx:
        return f"conj({a[0]})"
    if name == "complex" and real:
        return f"{CTYPE[out]}({a[0]}, {a[1]})"
    return None


def fusible(eqn: Any) -> bool:
    """Whether `eqn` runs inside a generated elementwise kernel: a primitive `expression` knows, on
    dtypes it knows, whose operands broadcast NumPy-style into its one result (no array literals)."""
    if len(eqn.outvars) != 1:
        return False
    shape = eqn.outvars[0].aval.shape
    for v in eqn.inputs:
        s = v.aval.shape
        if (type(v).__name__ == "Literal" and s) or len(s) > len(shape):
            return False
        if any(x not in (1, y) for x, y in zip(s[::-1], shape[::-1])):
            return False
    if eqn.primitive.name == "broadcast_in_dim":
        (v,) = eqn.inputs
        n = len(shape)
        return _name(v.aval.dtype) in CTYPE and tuple(eqn.params["broadcast_dimensions"]) == tuple(range(n - v.aval.ndim, n))
    return expression(eqn, [f"x{i}" for i in range(len(eqn.inputs))]) is not None


# reduce primitive -> (C of combining accumulators a and b, identity of the accumulator's dtype)
_REDUCE: dict[str, tuple[str, Callable[[str], Any]]] = {
    "reduce_sum": ("ember_add(a, b)", lambda d: 0),
    "reduce_prod": ("ember_mul(a, b)", lambda d: 1),
    "reduce_max": ("ember_max(a, b)", lambda d: np.iinfo(d).min if d in _INTS else float("-inf")),
    "reduce_min": ("ember_min(a, b)", lambda d: np.iinfo(d).max if d in _INTS else float("inf")),
}


def reduction_fusible(eqn: Any) -> bool:
    """Whether `eqn` is a reduction a generated kernel can end with (sum/prod of numbers, max/min of
    real numbers; not bool)."""
    if eqn.primitive.name not in _REDUCE or len(eqn.inputs) != 1:
        return False
    d = _name(eqn.inputs[0].aval.dtype)
    if d not in CTYPE or d == "bool":
        return False
    return not (d in _COMPLEX and eqn.primitive.name in ("reduce_max", "reduce_min"))


def reduction(eqn: Any) -> tuple[str, str, str]:
    """(reduce expression, identity, accumulator C type) of a fusible reduction. float16 accumulates in
    float as XLA does (kernels._reductions); every other dtype in itself."""
    d = _name(eqn.inputs[0].aval.dtype)
    combine, identity = _REDUCE[eqn.primitive.name]
    acc = "float32" if d == "float16" else d
    return combine, literal(identity(d), acc), CTYPE[acc]
