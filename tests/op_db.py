"""The op database: one entry per primitive and per public `ember.numpy` / `ember.lax` function.

An `OpInfo` says how to call the ember function, what independent reference
computes the same thing (NumPy, SciPy, or a few lines of NumPy written here),
which dtypes it supports (and, for every other dtype, why not), how to make
sample inputs (0-d, empty and broadcasting shapes included), the tolerances,
and which transforms apply. `tests/test_op_db.py` runs every entry; later
columns (jvp, vjp, vmap, jit) read the same entries.

Entries live in family modules (`op_db_*.py`) that append to `OPS`; importing
this module imports them all.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

import ember.numpy as enp

# --- dtypes -------------------------------------------------------------------------------

BOOL = (np.dtype(np.bool_),)
SIGNED = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
INTEGER = SIGNED + UNSIGNED
FLOATING = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32), np.dtype(np.float64))
COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
INEXACT = FLOATING + COMPLEX
NUMERIC = INTEGER + INEXACT
REAL = BOOL + INTEGER + FLOATING
ALL = BOOL + NUMERIC
SIXTY_FOUR_BIT = {np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.complex128)}
BF16 = np.dtype(ml_dtypes.bfloat16)

# Reasons for unsupported cells, shared so the matrix legend stays short.
NO_BOOL = "bool has no arithmetic here (as in JAX/NumPy)"
FLOAT_ONLY = "defined for floating inputs only; lax does not promote (use ember.numpy)"
INEXACT_ONLY = "defined for floating and complex inputs only; lax does not promote (use ember.numpy)"
INT_ONLY = "a bitwise operation: integers only"
BOOL_INT_ONLY = "a logical/bitwise operation: bool and integers only"
NO_COMPLEX = "complex numbers have no ordering / the function is real-valued"
COMPLEX_ONLY = "takes complex input only at the lax level"
NOT_IN_NUMPY = "NumPy itself rejects this dtype for the function"

# Default tolerances (rtol, atol) per result dtype against a float64/complex128 reference.
TOLERANCES = {
    np.dtype(np.float16): (2e-3, 2e-3),
    BF16: (1.6e-2, 1.6e-2),
    np.dtype(np.float32): (2e-6, 1e-6),
    np.dtype(np.float64): (1e-13, 1e-14),
    np.dtype(np.complex64): (2e-6, 1e-6),
    np.dtype(np.complex128): (1e-13, 1e-14),
}

# Tolerances for results that add up many terms (sums, scans, averages): float32's error grows with the count.
SUM_TOLERANCES = {np.dtype(np.float16): (1e-2, 2e-2), BF16: (2e-2, 5e-2), np.dtype(np.float32): (1e-5, 1e-5),
                  np.dtype(np.complex64): (1e-5, 1e-5)}  # fmt: skip


@dataclasses.dataclass
class Sample:
    """One call: positional args (NumPy arrays are operands, other values static) and kwargs."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        def show(a):
            if isinstance(a, np.ndarray):
                return f"{a.dtype}{a.shape}"
            if isinstance(a, (list, tuple)) and any(isinstance(x, np.ndarray) for x in a):
                items = ", ".join(show(x) for x in a)
                return f"[{items}]" if isinstance(a, list) else f"({items}{',' if len(a) == 1 else ''})"
            return repr(a)

        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        return f"Sample({', '.join(parts)})"


@dataclasses.dataclass
class OpInfo:
    """An entry of the op database.

    name: "enp.sin", "lax.add", ... (also the public name the coverage test looks for)
    op: the ember callable; ref: the reference, called on NumPy arrays upcast to
      float64/complex128 for inexact dtypes (on the original arrays otherwise)
    dtypes: the supported dtypes; every other dtype must raise an ember error,
      for the stated `unsupported` reason
    samples: (rng, dtype) -> list[Sample]
    primitives: the primitives this entry exercises (for the coverage test)
    out_dtype: dtype -> expected result dtype (canonical; default: the input dtype)
    out_dtype_of: (dtype, sample) -> expected result dtype, when a parameter decides it
    tol: {dtype: (rtol, atol)} overrides of TOLERANCES
    ref_in_dtype: call the reference on the original (not upcast) arrays
    transforms: which transform columns apply ("jvp", "vjp", "vmap", "jit")
    nondiff: why "jvp"/"vjp" do not apply (required when they are left out of `transforms`)
    ad_samples: (rng, dtype) -> samples for the autodiff columns, where the eager samples hold
      points at which the function is not differentiable (default: the eager samples with
      non-finite, huge or tiny values left out)
    ad_tol: {dtype: (rtol, atol)} overrides of AD_TOLERANCES
    ad_unsupported: {dtype: reason} dtypes the autodiff columns leave out, and why
    needs_concrete: which arguments must be concrete, because the result's shape depends on their
      values (as in JAX, vmap over them raises ConcretizationError; the vmap column checks that it does)
    family: the family module's name without `op_db_` ("lax", "collective", ...); conftest.py adds it to
      the keywords of every test cell of the entry, so ``pytest -k collective`` runs that family's cells
    exact_on_device: whether another device (CUDA) must give the CPU's results bit for bit; None: decided
      by `device_exact` per result dtype and the primitives a call runs (integer and bool results, and calls
      made only of primitives that move or select values, are exact; other inexact results are compared to
      the entry's tolerances)
    """

    name: str
    op: Callable[..., Any]
    ref: Callable[..., Any]
    dtypes: Sequence[np.dtype]
    samples: Callable[[np.random.Generator, np.dtype], list[Sample]]
    unsupported: str = ""
    primitives: tuple[str, ...] = ()
    out_dtype: Callable[[np.dtype], np.dtype] | None = None
    out_dtype_of: Callable[[np.dtype, Sample], np.dtype] | None = None
    tol: dict = dataclasses.field(default_factory=dict)
    ref_in_dtype: bool = False
    aliases: tuple[str, ...] = ()
    transforms: frozenset = frozenset({"jvp", "vjp", "vmap", "jit"})
    nondiff: str = ""
    ad_samples: Callable[[np.random.Generator, np.dtype], list[Sample]] | None = None
    ad_tol: dict = dataclasses.field(default_factory=dict)
    ad_unsupported: dict = dataclasses.field(default_factory=dict)
    needs_concrete: str = ""
    family: str = ""  # the op_db_<family>.py module that registered it (set on loading; pytest -k <family> selects it)
    exact_on_device: bool | None = None

    def __post_init__(self):
        self.dtypes = tuple(np.dtype(d) for d in self.dtypes)
        if set(self.dtypes) != set(ALL) and not self.unsupported:
            raise ValueError(f"op_db entry {self.name} leaves dtypes unsupported without a stated reason")
        if not {"jvp", "vjp"} <= set(self.transforms) and not self.nondiff:
            raise ValueError(f"op_db entry {self.name} leaves out jvp/vjp without a stated reason (nondiff=...)")

    def autodiff_samples(self, rng: np.random.Generator, dtype: np.dtype) -> list[Sample]:
        if self.ad_samples is not None:
            return self.ad_samples(rng, dtype)
        return [s for s in self.samples(rng, dtype) if all(_moderate(a) for a in (*s.args, *s.kwargs.values()))]

    def autodiff_tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        return self.ad_tol.get(dtype, AD_TOLERANCES.get(dtype, (0.0, 0.0)))


    def device_exact(self, out_dtype: np.dtype, ran: set[str]) -> bool:
        """Whether a result of `out_dtype`, from a call that ran the primitives named `ran` (as traced: the
        `primitives` field lists those an entry is meant to cover, not all it runs), must be the same bits on
        every device (tests/test_op_db_devices.py)."""
        if self.exact_on_device is not None:
            return self.exact_on_device
        return np.dtype(out_dtype).kind in "biu" or set(ran) <= MOVES_VALUES

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        return self.tol.get(dtype, TOLERANCES.get(dtype, (0.0, 0.0)))

    def expected_dtype(self, dtype: np.dtype, sample: Sample) -> np.dtype:
        if self.out_dtype_of is not None:
            return np.dtype(self.out_dtype_of(dtype, sample))
        return np.dtype(self.out_dtype(dtype)) if self.out_dtype else dtype



def _moderate(a) -> bool:
    """Finite values of moderate size (or zero): where finite differences are meaningful. Samples
    probing overflow, underflow or non-finite values test the eager column, not derivatives."""
    if isinstance(a, (list, tuple)):
        return all(_moderate(x) for x in a)
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "fcV":
        return True
    mag = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    return bool(np.isfinite(mag).all() and ((mag == 0) | ((mag >= 1e-4) & (mag <= 1e4))).all())


# Functions with jumps (rounding, remainders, exponents): random bfloat16/float16 samples land on the
# jumps (integers, powers of two) too often for finite differences; the wider dtypes check the same rule.
COARSE_GRID = {BF16: "bfloat16 samples fall on the function's jumps", np.dtype(np.float16): "float16 samples fall on the function's jumps"}

# Autodiff columns (rtol, atol) per dtype: derivatives against central finite differences
# computed in float64, and the vjp/jvp dot-product identity.
AD_TOLERANCES = {
    np.dtype(np.float16): (5e-2, 5e-2),
    BF16: (1e-1, 1e-1),
    np.dtype(np.float32): (2e-3, 2e-3),
    np.dtype(np.float64): (1e-5, 1e-6),
    np.dtype(np.complex64): (2e-3, 2e-3),
    np.dtype(np.complex128): (1e-5, 1e-6),
}


# Primitives whose results are values of their operands, moved, selected or rounded exactly by IEEE rules (no
# arithmetic a GPU may contract or order differently): an entry made only of these is exact on every device.
MOVES_VALUES = frozenset({
    "reshape", "transpose", "broadcast_in_dim", "concatenate", "pad", "slice", "dynamic_slice", "dynamic_update_slice",
    "gather", "rev", "squeeze", "expand_dims", "select_n", "copy", "iota", "stop_gradient", "sort", "top_k", "real",
    "imag", "conj", "neg", "max", "min", "reduce_max", "reduce_min", "cummax", "cummin", "clamp", "floor", "ceil",
    "round", "nextafter", "convert_element_type", "bitcast_convert_type", "reduce_precision",
    "scatter", "scatter_max", "scatter_min"})  # fmt: skip  (scatter: the last duplicate update wins, everywhere)

OPS: list[OpInfo] = []


def register(*entries: OpInfo) -> None:
    OPS.extend(entries)


# --- sample helpers ------------------------------------------------------------------------

UNARY_SHAPES = [(), (0,), (4,), (2, 3), (1, 3, 1)]
BINARY_SHAPES = [((), ()), ((4,), (4,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((0,), (0,)), ((0, 3), (1, 3)), ((), (2, 3))]


def make_array(rng: np.random.Generator, shape, dtype, low=None, high=None) -> np.ndarray:
    """Random values of `dtype` in [low, high) (sensible defaults per kind), always an ndarray."""
    return np.asarray(_random_values(rng, shape, np.dtype(dtype), low, high))


def _random_values(rng, shape, dtype, low, high):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = max(info.min, -9 if low is None else int(np.floor(low)))
        hi = min(info.max, 10 if high is None else int(np.ceil(high)))
        return rng.integers(lo, max(hi, lo + 1), size=shape, endpoint=False).astype(dtype)
    lo = -3.0 if low is None else low
    hi = 3.0 if high is None else high
    if dtype.kind == "c":
        parts = rng.uniform(lo, hi, size=(2, *shape))
        return (parts[0] + 1j * parts[1]).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def unary_samples(low=None, high=None, shapes=UNARY_SHAPES, **kwargs) -> Callable:
    def make(rng, dtype):
        return [Sample((make_array(rng, s, dtype, low, high),), dict(kwargs)) for s in shapes]

    return make


def binary_samples(low=None, high=None, shapes=BINARY_SHAPES, rhs_low=None, rhs_high=None, rhs_nonzero=False) -> Callable:
    def make(rng, dtype):
        out = []
        for s1, s2 in shapes:
            x = make_array(rng, s1, dtype, low, high)
            y = make_array(rng, s2, dtype, low if rhs_low is None else rhs_low, high if rhs_high is None else rhs_high)
            if rhs_nonzero:
                y = np.where(y == 0, np.ones_like(y), y)
            out.append(Sample((x, y)))
        return out

    return make


def with_specials(make: Callable, values=(0.0, -0.0, np.inf, -np.inf, np.nan)) -> Callable:
    """Add a sample of special float values (each against each, for binary ops) to `make`."""

    def extended(rng, dtype):
        samples = make(rng, dtype)
        if np.dtype(dtype).kind not in "fcV" and dtype != BF16:
            return samples
        n = len(samples[0].args)
        grid = np.array(list(itertools.product(values, repeat=n)), dtype=np.float64).T
        samples.append(Sample(tuple(grid[i].astype(dtype) for i in range(n))))
        return samples

    return extended


def spread(rng, shape, dtype) -> np.ndarray:
    """Distinct values at least 0.15 apart (0.25 steps with jitter below 0.1; complex: in the real parts) in
    random order, for the autodiff columns of functions that sort: a sort is differentiable only where no two
    keys are equal (a perturbation would reorder them)."""
    n = int(np.prod(shape, dtype=np.int64))
    x = ((rng.permutation(n) - n // 2) * 0.25 + rng.uniform(0, 0.1, n)).reshape(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-3, 3, shape)
    return x.astype(dtype)


def upcast(x):
    """The reference's view of an operand: float64/complex128 for inexact dtypes."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "c":
            return x.astype(np.complex128)
        if x.dtype.kind == "f" or x.dtype == BF16:
            return x.astype(np.float64)
    return x


def same(dtype):
    return dtype


def to_bool(dtype):
    return np.dtype(np.bool_)


def to_real(dtype):
    return {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}.get(dtype, dtype)


def to_float(dtype):
    """JAX's rule for transcendental functions: bool and integers go to the default float."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return np.dtype(np.float64) if dtype in SIXTY_FOUR_BIT else np.dtype(np.float32)
    return dtype


def default_int(dtype) -> np.dtype:
    """ember's default integer while `dtype` is tested (the runner turns x64 on for the 64-bit dtypes)."""
    return np.dtype(np.int64 if np.dtype(dtype) in SIXTY_FOUR_BIT else np.int32)


def default_float(dtype) -> np.dtype:
    """ember's default float while `dtype` is tested."""
    return np.dtype(np.float64 if np.dtype(dtype) in SIXTY_FOUR_BIT else np.float32)


def canonical(t, dtype) -> np.dtype:
    """`t` as ember stores it while `dtype` is tested (64-bit types need x64)."""
    t = np.dtype(t)
    if np.dtype(dtype) in SIXTY_FOUR_BIT:
        return t
    return {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
            np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.complex64)}.get(t, t)  # fmt: skip


def is_float(dtype) -> bool:
    """A real floating dtype (bfloat16 included, which NumPy reports as kind "V")."""
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == BF16


def is_inexact_dtype(dtype) -> bool:
    """A floating or complex dtype (bfloat16 included)."""
    return np.dtype(dtype).kind in "fc" or np.dtype(dtype) == BF16


def sum_dtype(dtype) -> np.dtype:
    """JAX's accumulation dtype (sum, cumsum, cumulative_sum): bool and integers narrower than the default
    integer accumulate in it (unsigned ones in the unsigned one)."""
    d = np.dtype(dtype)
    if d == np.bool_ or d in SIGNED and d.itemsize < default_int(d).itemsize:
        return default_int(d)
    if d in UNSIGNED and d.itemsize < default_int(d).itemsize:
        return np.dtype(np.uint64 if d in SIXTY_FOUR_BIT else np.uint32)
    return d


# --- autodiff helpers (test_op_db_autodiff.py and test_op_db_vmap_ad.py) ------------------


def is_inexact(a) -> bool:
    """An operand the autodiff columns differentiate: a floating or complex NumPy array."""
    return isinstance(a, np.ndarray) and a.dtype.kind in "fcV"


def outputs_of(value) -> list:
    """An entry's result as a list of outputs."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def array_slots(sample, keep=lambda a: isinstance(a, np.ndarray)) -> list[tuple]:
    """Where the sample's arrays for which `keep` holds are, in order: ``(i,)`` for positional argument i,
    ``(i, j)`` for item j of a list/tuple positional argument (enp.concatenate's arrays, lax.sort's
    operands), ``(name,)`` for a keyword argument. `with_arrays` puts other arrays in their places."""
    slots = []
    for i, a in enumerate(sample.args):
        if isinstance(a, (list, tuple)):
            slots += [(i, j) for j, x in enumerate(a) if keep(x)]
        elif keep(a):
            slots.append((i,))
    return slots + [(k,) for k, v in sample.kwargs.items() if keep(v)]


def array_arguments(sample, slots) -> list:
    """The values at `slots` (see `array_slots`)."""
    return [sample.kwargs[s[0]] if isinstance(s[0], str) else sample.args[s[0]] if len(s) == 1
            else sample.args[s[0]][s[1]] for s in slots]  # fmt: skip


def with_arrays(sample, slots, values) -> tuple[list, dict]:
    """(args, kwargs) of `sample` with `values` at `slots` (list/tuple arguments rebuilt as their own type)."""
    args, kwargs = list(sample.args), dict(sample.kwargs)
    items = {}
    for slot, v in zip(slots, values, strict=True):
        if isinstance(slot[0], str):
            kwargs[slot[0]] = v
        elif len(slot) == 1:
            args[slot[0]] = v
        else:
            items.setdefault(slot[0], list(sample.args[slot[0]]))[slot[1]] = v
    for i, member in items.items():
        args[i] = member if isinstance(sample.args[i], list) else type(sample.args[i])(member)
    return args, kwargs


def diff_function(op, sample):
    """The entry as a function of its inexact array arguments (those inside list/tuple arguments and
    keyword arguments included; the others held fixed), returning a list; and those arguments."""
    slots = array_slots(sample, is_inexact)

    def fn(*diff):
        args, kwargs = with_arrays(sample, slots, diff)
        return outputs_of(op.op(*args, **kwargs))

    return fn, array_arguments(sample, slots)


def random_like(rng, x: np.ndarray) -> np.ndarray:
    """Standard normal values shaped like `x`, in its dtype (complex for complex `x`): tangents, cotangents, weights."""
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def wide(x) -> np.ndarray:
    """`x` as float64/complex128, to compare in."""
    x = np.asarray(x)
    return x.astype(np.complex128) if x.dtype.kind == "c" else x.astype(np.float64)


def assert_close(got, want, tol, what, where=None, scale=1.0):
    """got ~ want, with atol relative to want's magnitude (or `scale`, when larger); only where `where`."""
    rtol, atol = tol
    got, want = wide(got), wide(want)
    if where is not None:
        got, want = np.where(where, got, 0), np.where(where, want, 0)
    finite = np.abs(want[np.isfinite(want)])  # inf and nan compare by value; they set no scale (atol * inf is nan)
    scale = max(scale, float(np.max(finite))) if finite.size else scale
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def autodiff_cases(op, dtype, seed=0):
    """A generator seeded by the cell, and the entry's autodiff samples that have something to differentiate."""
    rng = np.random.default_rng([seed, *map(ord, op.name + dtype.name)])
    samples = [s for s in op.autodiff_samples(rng, dtype) if array_slots(s, is_inexact)]
    return rng, samples


def skip_unchecked(reasons: list[str], samples: list) -> None:
    """Skip, naming why, a cell none of whose samples was checked (`reasons`: one per sample of the cell,
    "" for a checked one; `samples`: the samples the cell had to choose from)."""
    import pytest

    if all(reasons):
        if not samples:
            pytest.skip("no sample has an inexact array argument to differentiate")
        pytest.skip("; ".join(dict.fromkeys(reasons)) or "the entry's only sample runs in the CI cell")


def weighted_sum(fn, weights):
    """sum_k Re(sum(w_k * fn(...)_k)) over the inexact outputs: a real scalar to take gradients of."""

    def scalar(*diff):
        total = 0.0
        for w, o in zip(weights, fn(*diff)):
            if w is not None:
                total = total + enp.real(enp.sum(enp.asarray(w) * o))
        return enp.asarray(total, dtype=float)  # the widest float enabled (float64 under x64)

    return scalar


def _load_families() -> None:
    import importlib

    for module in ("op_db_lax", "op_db_indexing", "op_db_take", "op_db_enp_ufuncs", "op_db_enp_other", "op_db_sorting",
                   "op_db_random", "op_db_conv", "op_db_collective", "op_db_control_flow", "op_db_linalg", "op_db_eigen", "op_db_fft",
                   "op_db_enp_extra", "op_db_array_api", "op_db_nn_activations", "op_db_nn_losses", "op_db_nn_conv",
                   "op_db_nn_pooling", "op_db_nn_norm", "op_db_nn_attention", "op_db_nn_recurrent", "op_db_nn_layers", "op_db_dim",
                   "op_db_privacy"):
        first = len(OPS)
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
        for entry in OPS[first:]:
            entry.family = entry.family or module[len("op_db_") :]


_load_families()
