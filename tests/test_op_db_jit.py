"""The op database's jit columns: every entry under ember.jit against the same computation run eagerly.

- jit vs eager: the entry's function of its array arguments (positional ones, those inside list/tuple
  arguments and keyword ones), the other arguments closed over (static), jitted and run eagerly. The
  outputs have the same dtype, shape and weak type, and the same values bit for bit: NaNs in the same
  places, zeros of the same sign. Generated code calls the eager kernels, and the passes
  (core/passes.py) only drop, merge or fold work exactly, so nothing may round differently, with one
  exception: where `simplify` moves a transpose into a dot_general's dimension numbers or out of its
  result (swapping the operands), the BLAS sees other layouts and sums in another order, so there the
  values may differ to the entry's tolerance (`_rounding`; in practice the gradients of enp.matmul and
  enp.tensordot, by an ulp); likewise where it does a chain of scalings of one array that only reaches a
  dot_general on the scales (reassociated products: jacfwd's basis in a Hessian). The jitted function is called twice (the second call runs the cached
  code, which must give the same bits) and must leave its inputs unchanged.
  Entries whose result's shape depends on values (`needs_concrete`) may instead raise
  ConcretizationError (and must, for one sample at least); no other entry may;
- jit(grad) vs grad: the gradient of the weighted sum of the entry's inexact outputs (the loss of the
  grad-of-grad and vmap(grad) columns) with respect to its inexact array arguments, jitted and eagerly;
- jit(vmap) vs vmap: vmap with in_axes 0 over a batch of 3 (each array argument and two rearrangements
  of its values, as in the vmap column), jitted and eagerly; where the eager vmap raises an ember error,
  the jitted one raises the same.

CI runs float32, float64, complex64, int32 and bool (jit(grad): float32, float64 and complex64);
`pytest -m full` runs every dtype. A cell none of whose samples was checked is skipped, naming why;
a cell that finds a bug not fixed yet is a strict xfail naming it (KNOWN_BUGS).
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import (
    ALL,
    INEXACT,
    OPS,
    SIXTY_FOUR_BIT,
    array_arguments,
    array_slots,
    autodiff_cases,
    diff_function,
    outputs_of,
    random_like,
    weighted_sum,
    with_arrays,
)

import ember

CI_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.int32, np.bool_)}
CI_AD_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.complex64)}
BATCH = 3


# Cells that find a bug not fixed yet: (column, entry, dtype) -> the bug. Strict: a fixed bug fails the cell
# until its line here goes. (None now: the two found so far, complex multiplies written in place and complex
# literals losing the sign of zero, are fixed; tests/test_jit.py keeps their regression tests.)
KNOWN_BUGS: dict[tuple[str, str, str], str] = {}


def _cells(column: str, needs: set, dtypes, ci):
    cells = []
    for op in OPS:
        if not needs <= set(op.transforms):
            continue
        for dtype in dtypes:
            if dtype in op.dtypes and not ({"jvp", "vjp"} & needs and dtype in op.ad_unsupported):
                marks = [] if dtype in ci else [pytest.mark.full]
                bug = KNOWN_BUGS.get((column, op.name, dtype.name))
                if bug:
                    marks.append(pytest.mark.xfail(reason=bug, strict=True))
                cells.append(pytest.param(op, dtype, id=f"{op.name}-{dtype.name}", marks=marks))
    return cells


def _skip_unchecked(reasons: list[str]) -> None:
    """Skip, naming why, a cell none of whose samples was checked (one reason per sample, "" when checked)."""
    if all(reasons):
        pytest.skip("; ".join(dict.fromkeys(reasons)) if reasons else "the entry has no samples")


def _parts(x: np.ndarray) -> list[np.ndarray]:
    """The real numbers of `x` to compare (real and imaginary parts; bfloat16 widened exactly)."""
    if x.dtype.kind == "c":
        return [np.real(x), np.imag(x)]
    return [x.astype(np.float32) if x.dtype.kind == "V" else x]


def _assert_identical(got, want, what: str, rounding=None) -> None:
    """`got` (jitted) is `want` (eager): type, dtype, shape, weak type and every bit of the values but NaN
    payloads. `rounding(dtype)`, asked only when inexact values differ, gives the (rtol, atol) the
    difference may have and why, or None when none may be."""
    assert isinstance(got, ember.Array), f"{what}: a {type(got).__name__}, not an ember.Array"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, eagerly {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, eagerly {want.shape}"
    assert got.weak_type == want.weak_type, f"{what}: weak_type {got.weak_type}, eagerly {want.weak_type}"
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype.kind not in "fcV":
        np.testing.assert_array_equal(g, w, err_msg=what)
        return
    for gp, wp in zip(_parts(g), _parts(w)):
        nan = np.isnan(wp)
        np.testing.assert_array_equal(np.isnan(gp), nan, err_msg=f"{what}: NaNs in other places")
        same = (gp[~nan] == wp[~nan]) & (np.signbit(gp[~nan]) == np.signbit(wp[~nan]))
        if same.all():
            continue
        allowed = rounding(g.dtype) if rounding is not None else None
        if allowed is None:
            np.testing.assert_array_equal(gp[~nan], wp[~nan], err_msg=f"{what}: values differ")
            np.testing.assert_array_equal(np.signbit(gp[~nan]), np.signbit(wp[~nan]), err_msg=f"{what}: signs of zeros")
        (rtol, atol), why = allowed
        np.testing.assert_allclose(gp[~nan], wp[~nan], rtol=rtol, atol=atol, err_msg=f"{what}: values differ ({why})")


def _assert_all_identical(got, want, what: str, rounding=None) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, eagerly {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        _assert_identical(g, w, f"{what}, output {k}", rounding)


_SCALINGS = {"mul", "div", "neg", "add", "sub"}  # core/passes.py's _SCALINGS


def _rounding(op, fn, args):
    """The rounding that jit's passes may change for `fn` on `args`: simplify moves a transpose into a
    dot_general's dimension numbers, or out of its result by swapping the operands (core/passes.py), and
    the kernel then calls the BLAS on other layouts, which sum in another order; it reassociates scalings
    that only reach a dot_general. Only where the traced program holds such a pair, and to the entry's
    tolerance; None elsewhere."""

    def rounding(dtype):
        eqns = ember.make_ir(fn)(*args).program.eqns
        made_by = {id(v): e.primitive.name for e in eqns for v in e.outvars}
        producer = {id(v): e for e in eqns for v in e.outvars}

        def scaled_twice(v):  # a scaling step of a scaling step's result
            e = producer.get(id(v))
            if e is None or e.primitive.name not in _SCALINGS:
                return False
            return any(made_by.get(id(u)) in _SCALINGS for u in e.inputs)

        for e in eqns:
            name, sources = e.primitive.name, {made_by.get(id(v)) for v in e.inputs}
            if (name == "dot_general" and "transpose" in sources) or (name == "transpose" and "dot_general" in sources):
                return op.tolerance(np.dtype(dtype)), "a transpose moved into or out of a dot_general"
            if name == "dot_general" and any(scaled_twice(v) for v in e.inputs):
                return op.tolerance(np.dtype(dtype)), "scalings of a dot_general's operand reassociated"
        return None

    return rounding


def _concretization_raised(op, run) -> bool:
    """Run `run`; True when it raised ConcretizationError, which only a `needs_concrete` entry may."""
    try:
        run()
    except ember.errors.ConcretizationError:
        if op.needs_concrete:
            return True
        raise
    return False


# --- jit vs eager ----------------------------------------------------------------------------------


def _jit_vs_eager(op, sample) -> bool:
    """Check one sample; True when jit raised ConcretizationError (which only a needs_concrete entry may)."""
    slots = array_slots(sample)
    arrays = array_arguments(sample, slots)
    copies = [a.copy() for a in arrays]

    def call(*arrays):
        args, kwargs = with_arrays(sample, slots, arrays)
        return outputs_of(op.op(*args, **kwargs))

    want = call(*arrays)
    jitted = ember.jit(call)
    got = {}
    if _concretization_raised(op, lambda: got.update(first=jitted(*arrays))):
        return True  # declared: the result's shape depends on a traced value, and jit says so
    what = f"{op.name}{sample}: jit"
    rounding = _rounding(op, call, arrays)
    _assert_all_identical(got["first"], want, what, rounding)
    _assert_all_identical(jitted(*arrays), got["first"], f"{what} (cached, against the first call)")
    # The generated code's own results, before jit wraps them (converting a stray dtype): what the
    # program's avals say, as the kernels must return (eager mode checks each kernel's result instead).
    entry = jitted.lower(*arrays)._entry
    raw = entry.fn(*entry.const_buffers, *[ember.numpy.asarray(a)._value for a in arrays])
    for k, (r, aval) in enumerate(zip(raw, entry.out_avals)):
        assert np.asarray(r).dtype == aval.dtype and np.shape(r) == aval.shape, (
            f"{what}: generated code returns {np.asarray(r).dtype}{list(np.shape(r))} for output {k}, "
            f"its program says {aval.str_short()}")
    for k, (a, c) in enumerate(zip(arrays, copies)):
        assert a.tobytes() == c.tobytes(), f"{what} changed its array argument {k}"
    return False


@pytest.mark.parametrize("op, dtype", _cells("eager", {"jit"}, ALL, CI_DTYPES))
def test_jit_matches_eager(op, dtype):
    rng = np.random.default_rng([11, *map(ord, op.name + dtype.name)])
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        samples = op.samples(rng, dtype)
        raised = [_jit_vs_eager(op, sample) for sample in samples]
    assert samples, f"{op.name} has no samples for {dtype}"
    assert not op.needs_concrete or any(raised), (
        f"{op.name} declares needs_concrete ({op.needs_concrete}), but jit raised ConcretizationError for none of its samples")


# --- jit(grad) vs grad -----------------------------------------------------------------------------


def _jit_of_grad(op, sample, rng) -> str:
    fn, primals = diff_function(op, sample)
    weights = [random_like(rng, np.asarray(o)) if np.dtype(o.dtype).kind in "fcV" else None for o in fn(*primals)]
    if all(w is None for w in weights):
        return "no inexact output to take a gradient of"
    gradient = ember.grad(weighted_sum(fn, weights), argnums=tuple(range(len(primals))))
    want = gradient(*primals)
    got = {}
    if _concretization_raised(op, lambda: got.update(value=ember.jit(gradient)(*primals))):
        return ""
    _assert_all_identical(list(got["value"]), list(want), f"{op.name}{sample}: jit(grad)", _rounding(op, gradient, primals))
    return ""


@pytest.mark.parametrize("op, dtype", _cells("grad", {"jvp", "vjp", "jit"}, INEXACT, CI_AD_DTYPES))
def test_jit_of_grad_matches_grad(op, dtype):
    rng, samples = autodiff_cases(op, dtype, seed=11)
    if not samples:
        pytest.skip("no sample has an inexact array argument to differentiate")
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        reasons = [_jit_of_grad(op, sample, rng) for sample in samples]
    _skip_unchecked(reasons)


# --- jit(vmap) vs vmap -----------------------------------------------------------------------------


def _variants(rng, x: np.ndarray) -> np.ndarray:
    """`x` and BATCH - 1 rearrangements of its values, stacked on axis 0 (as in the vmap column)."""
    flat = x.reshape(-1)
    return np.stack([x] + [flat[rng.permutation(flat.size)].reshape(x.shape) for _ in range(BATCH - 1)])


def _jit_of_vmap(op, sample, rng) -> str:
    slots = array_slots(sample)
    if not slots:
        return "no array argument to map over"
    batched = [_variants(rng, a) for a in array_arguments(sample, slots)]

    def call(*arrays):
        args, kwargs = with_arrays(sample, slots, arrays)
        return outputs_of(op.op(*args, **kwargs))

    mapped = ember.vmap(call)
    what = f"{op.name}{sample}: jit(vmap)"
    try:
        want = mapped(*batched)
    except ember.errors.EmberError as err:
        # The eager vmap rejects the batch (a rearrangement is no valid input, or, declared by a needs_concrete
        # entry, a shape depends on mapped values): the jitted one must reject it alike.
        if isinstance(err, ember.errors.ConcretizationError) and not op.needs_concrete:
            raise
        with pytest.raises(type(err)):
            ember.jit(mapped)(*batched)
        return ""
    _assert_all_identical(ember.jit(mapped)(*batched), want, what, _rounding(op, mapped, batched))
    return ""


@pytest.mark.parametrize("op, dtype", _cells("vmap", {"vmap", "jit"}, ALL, CI_DTYPES))
def test_jit_of_vmap_matches_vmap(op, dtype):
    rng = np.random.default_rng([13, *map(ord, op.name + dtype.name)])
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        reasons = [_jit_of_vmap(op, sample, rng) for sample in op.samples(rng, dtype)]
    _skip_unchecked(reasons)
