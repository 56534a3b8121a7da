"""The op database's device columns: every entry run on a device other than the default one.

- cpu:1 (always, CI too): with two CPU devices (``config num_cpu_devices``), each sample's array arguments
  (positional ones, those inside list/tuple arguments and keyword ones; the other arguments as they are,
  as in the jit column) are committed to cpu:1 with `ember.device_put`, and the entry runs eagerly and
  under jit. Every result must be committed to cpu:1, and the same bits (dtype, shape and weak type
  too) as the same call on uncommitted inputs on cpu:0: the two CPU devices share NumPy, so only the
  placement differs and nothing may round differently. The jitted function traces once per place (the
  place is part of its signature). A sample without array arguments runs inside
  ``ember.default_device("cpu:1")``, and its results must be there (uncommitted: nothing committed them).
- two devices (always): an entry's array arguments committed to cpu:1 and cpu:0 raise a DeviceError naming
  both devices and `ember.device_put` (under jit always; eagerly for one sample at least).
- cuda:0 (when a GPU is present): every entry and every dtype it supports, eagerly and under jit, with
  its arrays committed to cuda:0, against the CPU's eager result: the same bits where
  `OpInfo.device_exact` says so (integer and bool results, random bits, and calls made only of
  primitives that move or select values: indexing, sorting, structural entries), within the entry's
  tolerances otherwise. Without a GPU each CUDA column is one skipped test that says why.

The cpu:1 column runs float32, bool, int32 and uint8 for every entry in CI, and the other integer dtypes
in turn (entry k of those with more integer dtypes runs the k-th of them, cyclically, of int8, int16,
int64, uint16, uint32, uint64): about 2600 cells, ~25 s on two idle cores. ``pytest
-m full`` runs every dtype of every entry.

Results made from the operands' shapes alone (a constant for the dtype, an empty operand's shortcut, index
helpers) are on the operands' device like any other; only a ``*_like`` call with another shape= makes a new
array on the default device, as in JAX (SHAPE_ONLY). Entries whose results are not yet placed where they
should be would be listed in NOT_PLACED, with why: their cells still check every value, and expect (xfail)
the placement failure until it is fixed.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import (
    INTEGER,
    OPS,
    SIXTY_FOUR_BIT,
    array_arguments,
    array_slots,
    assert_close,
    outputs_of,
    with_arrays,
)

import ember
import ember.numpy as enp

CI_DTYPES = {np.dtype(t) for t in (np.float32, np.bool_, np.int32, np.uint8)}
ROTATED = [d for d in INTEGER if d not in CI_DTYPES]  # CI runs one of these per entry, in turn


@pytest.fixture(autouse=True, scope="module")
def two_cpu_devices():
    """Two CPU devices for this module's tests (the default stays cpu:0); the previous count afterwards."""
    before = ember.config.num_cpu_devices
    ember.config.update("num_cpu_devices", 2)
    yield
    ember.config.update("num_cpu_devices", before)


# A *_like call with shape= other than the operand's makes a new array on the default device, uncommitted,
# as in JAX (whose full_like keeps the operand's device only for the operand's shape): for these entries an
# output may be there instead (it then follows committed operands into later operations).
SHAPE_ONLY = dict.fromkeys(["enp.zeros_like", "enp.ones_like", "enp.full_like", "enp.empty_like"],
                           "shape= other than the operand's: a new array, as JAX's full_like makes")

# Entries whose results are not yet on their operands' device: name -> (the dtype kinds it happens for,
# why). Their cells still check every value; the placement failure is an expected one (xfail), and a
# cell whose results are all placed fails until its line goes. None now: constants and shortcuts are made
# where their operands are (ember.numpy._core.full_for, ember.core.transfer.follow).
NOT_PLACED: dict[str, tuple[str, str]] = {}


def _known_misplacement(op, dtype) -> str:
    kinds, why = NOT_PLACED.get(op.name, ("", ""))
    return why if np.dtype(dtype).kind in kinds else ""


def _cpu_cells():
    cells, turn = [], 0
    for op in OPS:
        others = [d for d in op.dtypes if d in ROTATED]
        for dtype in op.dtypes:
            ci = dtype in CI_DTYPES or bool(others) and dtype == others[turn % len(others)]
            cells.append(pytest.param(op, dtype, id=f"{op.name}-{dtype.name}", marks=[] if ci else [pytest.mark.full]))
        turn += bool(others)
    return cells


def _call(op, sample, slots):
    """The entry as a function of the sample's array arguments (the rest held fixed), returning a list."""

    def call(*arrays):
        args, kwargs = with_arrays(sample, slots, arrays)
        return outputs_of(op.op(*args, **kwargs))

    return call


def _assert_same_bits(got, want, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, on cpu:0 {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert isinstance(g, ember.Array), f"{what}, output {k}: a {type(g).__name__}, not an ember.Array"
        assert (g.dtype, g.shape, g.weak_type) == (w.dtype, w.shape, w.weak_type), (
            f"{what}, output {k}: {g.dtype}{list(g.shape)} weak={g.weak_type}, on cpu:0 {w.dtype}{list(w.shape)} "
            f"weak={w.weak_type}")
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), f"{what}, output {k}: other bits than on cpu:0"


def _misplaced(op, outs, device, committed: bool, what: str) -> list[str]:
    """What is wrong with where `outs` are: each should be on `device`, committed or not as said (for a
    SHAPE_ONLY entry, uncommitted on the default device will do)."""
    problems = []
    for k, o in enumerate(outs):
        if (o.device, o.committed) == (device, committed):
            continue
        if op.name in SHAPE_ONLY and (o.device, o.committed) == (ember.default_device(), False):
            continue
        problems.append(f"{what}, output {k}: on {o.device} ({'committed' if o.committed else 'uncommitted'}), "
                        f"expected {device} ({'committed' if committed else 'uncommitted'})")  # fmt: skip
    return problems


def _judge_placement(op, dtype, problems: list[str]) -> None:
    """Fail on misplaced results, unless NOT_PLACED expects them (then xfail; and fail if none are left)."""
    known = _known_misplacement(op, dtype)
    if known and problems:
        pytest.xfail(f"{known} (NOT_PLACED): {problems[0]}")
    assert not known, f"{op.name} {dtype}: every result is placed now; take its line out of NOT_PLACED ({known})"
    assert not problems, "\n".join(problems)


def _jitted_or_none(op, fn, arrays):
    """`fn(*arrays)`, or None where jit raises ConcretizationError (which only a needs_concrete entry may)."""
    try:
        return fn(*arrays)
    except ember.errors.ConcretizationError:
        if op.needs_concrete:
            return None
        raise


def _on_cpu1(op, sample) -> list[str]:
    """Check one sample's values on cpu:1 against cpu:0; return what is wrong with where its results are."""
    cpu0, cpu1 = ember.devices("cpu")[:2]
    slots = array_slots(sample)
    call = _call(op, sample, slots)
    host = array_arguments(sample, slots)
    if not slots:  # nothing to commit: the default device decides
        want = call()
        with ember.default_device(cpu1):
            got = call()
            jitted = ember.jit(call)()
        what = f"{op.name}{sample} in default_device(cpu:1)"
        _assert_same_bits(got, want, what)
        _assert_same_bits(jitted, want, f"{what}: jit")
        return _misplaced(op, got, cpu1, False, what) + _misplaced(op, jitted, cpu1, False, f"{what}: jit")
    here = [enp.asarray(a) for a in host]
    there = [ember.device_put(a, cpu1) for a in host]
    want, got = call(*here), call(*there)
    what = f"{op.name}{sample} committed to cpu:1"
    _assert_same_bits(got, want, what)
    problems = _misplaced(op, want, cpu0, False, f"{op.name}{sample} uncommitted")
    problems += _misplaced(op, got, cpu1, True, what)
    jitted = ember.jit(call)
    want_jit = _jitted_or_none(op, jitted, here)
    if want_jit is None:
        return problems
    got_jit = jitted(*there)
    assert jitted.trace_count == 2, f"{what}: jit traced {jitted.trace_count} times for two places, not twice"
    _assert_same_bits(got_jit, want_jit, f"{what}: jit")
    return problems + _misplaced(op, got_jit, cpu1, True, f"{what}: jit") + _misplaced(
        op, jitted(*there), cpu1, True, f"{what}: jit (cached)")


@pytest.mark.parametrize("op, dtype", _cpu_cells())
def test_cpu1_matches_cpu0(op, dtype):
    rng = np.random.default_rng([17, *map(ord, op.name + dtype.name)])
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        samples = op.samples(rng, dtype)
        assert samples, f"{op.name} has no samples for {dtype}"
        problems = [p for sample in samples for p in _on_cpu1(op, sample)]
    _judge_placement(op, dtype, problems)


# --- arrays committed to two devices ----------------------------------------------------------------

# Entries that may take arrays committed to two devices without a DeviceError, and why: each array is handled
# on its own, or one is read on the host as a static value.
EACH_ON_ITS_OWN = {
    **dict.fromkeys(["enp.meshgrid", "enp.broadcast_arrays", "enp.atleast_1d", "enp.atleast_2d", "enp.atleast_3d"],
                    "each array is handled on its own"),
    "enp.repeat": "repeats= is read on the host",
    "enp.full_like": "a 0-d fill value is read on the host (JAX's full_like does as much)",
    "lax.fori_loop": "the bounds are read on the host",
}  # fmt: skip


def _probe_dtype(op) -> np.dtype:
    return np.dtype(np.float32) if np.dtype(np.float32) in op.dtypes else op.dtypes[0]


def _mixing_cells():
    cells = []
    for op in OPS:
        dtype = _probe_dtype(op)
        with ember.config.x64(dtype in SIXTY_FOUR_BIT):
            if any(len(array_slots(s)) >= 2 for s in op.samples(np.random.default_rng(0), dtype)):
                cells.append(pytest.param(op, id=op.name))
    return cells


def _assert_names_both(err: Exception, what: str) -> None:
    message = str(err)
    assert "cpu:0" in message and "cpu:1" in message and "ember.device_put" in message, (
        f"{what}: the DeviceError should name both devices and ember.device_put as the fix: {message}")


@pytest.mark.parametrize("op", _mixing_cells())
def test_arrays_committed_to_two_devices_raise(op):
    """The first array argument committed to cpu:1, the others to cpu:0: jit raises DeviceError naming both
    devices and `ember.device_put`, always (the call's place is decided before tracing); eagerly the entry
    raises the same, or, for a sample whose result does not combine the arrays (an empty operand taking a
    shortcut), gives cpu:0's bits. Every entry raises for one sample at least, but those in EACH_ON_ITS_OWN."""
    cpu0, cpu1 = ember.devices("cpu")[:2]
    dtype = _probe_dtype(op)
    raised = []
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        for sample in op.samples(np.random.default_rng([23, *map(ord, op.name)]), dtype):
            slots = array_slots(sample)
            if len(slots) < 2:
                continue
            call = _call(op, sample, slots)
            host = array_arguments(sample, slots)
            mixed = [ember.device_put(a, cpu1 if k == 0 else cpu0) for k, a in enumerate(host)]
            what = f"{op.name}{sample} with argument 0 on cpu:1, the rest on cpu:0"
            with pytest.raises(ember.errors.DeviceError) as err:
                ember.jit(call)(*mixed)
            _assert_names_both(err.value, f"{what}: jit")
            try:
                got = call(*mixed)
            except ember.errors.DeviceError as e:
                _assert_names_both(e, what)
                raised.append(True)
                continue
            _assert_same_bits(got, call(*[enp.asarray(a) for a in host]), what)
            raised.append(False)
    if op.name in EACH_ON_ITS_OWN:
        return
    assert any(raised), f"{op.name}: arrays committed to cpu:0 and cpu:1 raised no DeviceError for any sample"


# --- CUDA ------------------------------------------------------------------------------------------


def _no_cuda_reason() -> str:
    """Why the CUDA columns cannot run here ("" when they can)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "no CUDA device: CuPy not installed (pip install 'ember[cuda]')"
    if ember.backends.cuda_device_count() == 0:
        return "no CUDA device: CuPy finds no GPU"
    return ""


NO_CUDA = _no_cuda_reason()


def _cuda_cells():
    if NO_CUDA:  # one skipped test per column, not one per cell
        return [pytest.param(None, None, id="no-gpu", marks=pytest.mark.skip(reason=NO_CUDA))]
    return [pytest.param(op, dtype, id=f"{op.name}-{dtype.name}") for op in OPS for dtype in op.dtypes]


def _ran(call, arrays) -> set[str]:
    """The primitives `call` runs on `arrays` (traced; a nested program counts as its call primitive, and a
    call that cannot be traced, its result's shape depending on values, as an unknown one)."""
    try:
        return {e.primitive.name for e in ember.make_ir(call)(*arrays).program.eqns}
    except ember.errors.ConcretizationError:
        return {"(not traceable)"}


def _parts(x: np.ndarray) -> list[np.ndarray]:
    if x.dtype.kind == "c":
        return [np.real(x), np.imag(x)]
    return [x.astype(np.float32) if x.dtype.kind == "V" else x]  # bfloat16, widened exactly


def _assert_device_matches(op, got, want, exact: bool, what: str) -> None:
    """`got` (from another device, on the host) is `want` (the CPU's): bit for bit but NaN payloads where
    `exact`, else within the entry's tolerances for the dtype."""
    for gp, wp in zip(_parts(got), _parts(want)):
        if gp.dtype.kind not in "fc":
            np.testing.assert_array_equal(gp, wp, err_msg=what)
        elif exact:
            np.testing.assert_array_equal(np.isnan(gp), np.isnan(wp), err_msg=f"{what}: NaNs in other places")
            keep = ~np.isnan(wp)
            np.testing.assert_array_equal(gp[keep], wp[keep], err_msg=f"{what}: values differ")
            np.testing.assert_array_equal(np.signbit(gp[keep]), np.signbit(wp[keep]), err_msg=f"{what}: signs of zeros")
        else:
            inf = np.isinf(wp)
            np.testing.assert_array_equal(gp[inf], wp[inf], err_msg=f"{what}: infinities differ")
            assert_close(np.where(inf, 0, gp), np.where(inf, 0, wp), op.tolerance(want.dtype), what)


def _check_on_device(op, dtype, device, jit: bool) -> None:
    """Every sample of the cell with its arrays committed to `device`, against the CPU's eager result;
    then where the results are (`_judge_placement`)."""
    problems = []
    rng = np.random.default_rng([19, *map(ord, op.name + dtype.name)])
    to_host = ember.devices("cpu")[0]
    column = "jit" if jit else "eager"
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        for sample in op.samples(rng, dtype):
            slots = array_slots(sample)
            call = _call(op, sample, slots)
            host = [enp.asarray(a) for a in array_arguments(sample, slots)]
            want = call(*host)
            fn = ember.jit(call) if jit else call
            what = f"{op.name}{sample} on {device} ({column})"
            if slots:
                got = _jitted_or_none(op, fn, [ember.device_put(a, device) for a in host])
            else:
                with ember.default_device(device):
                    got = _jitted_or_none(op, fn, [])
            if got is None:
                continue
            problems += _misplaced(op, got, device, bool(slots), what)
            ran = _ran(call, host)
            assert len(got) == len(want), f"{what}: {len(got)} outputs, on the CPU {len(want)}"
            for k, (g, w) in enumerate(zip(got, want)):
                assert (g.dtype, g.shape, g.weak_type) == (w.dtype, w.shape, w.weak_type), (
                    f"{what}, output {k}: {g.dtype}{list(g.shape)} weak={g.weak_type}, on the CPU "
                    f"{w.dtype}{list(w.shape)} weak={w.weak_type}")
                g_host = np.asarray(ember.device_put(g.block_until_ready(), to_host))
                _assert_device_matches(op, g_host, np.asarray(w), op.device_exact(w.dtype, ran), f"{what}, output {k}")
    _judge_placement(op, dtype, problems)


@pytest.mark.parametrize("op, dtype", _cuda_cells())
def test_cuda_eager_matches_cpu(op, dtype):
    _check_on_device(op, dtype, ember.devices("cuda")[0], jit=False)


@pytest.mark.parametrize("op, dtype", _cuda_cells())
def test_cuda_jit_matches_cpu(op, dtype):
    _check_on_device(op, dtype, ember.devices("cuda")[0], jit=True)


# --- the CUDA columns' checks, run here between the two CPU devices ---------------------------------


def test_device_exact_decides_by_dtype_and_primitives():
    """Exactness on another device: integer and bool results always, inexact ones where the call only
    moves or selects values (as traced, not as the entry's coverage list says)."""
    by_name = {op.name: op for op in OPS}
    x = enp.asarray(np.linspace(-2, 2, 7, dtype=np.float32))
    assert not by_name["lax.add"].device_exact(np.float32, _ran(lambda a: [a + a], [x]))
    assert by_name["lax.add"].device_exact(np.int32, {"add"})
    assert by_name["lax.rev"].device_exact(np.float32, _ran(lambda a: [ember.lax.rev(a, (0,))], [x]))
    assert by_name["enp.sort"].device_exact(np.float32, _ran(lambda a: [enp.sort(a)], [x]))
    # enp.median's entry lists only sort; it also averages the two middle values, so it is not exact
    assert not by_name["enp.median"].device_exact(np.float32, _ran(lambda a: [enp.median(a[:6])], [x]))


@pytest.mark.parametrize("name", ["lax.add", "lax.rev", "enp.sort", "enp.argmax", "random.normal", "lax.iota"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_device_column_runs_between_cpu_devices(name, jit):
    """The CUDA columns' code, run against cpu:1 so that it is itself tested on every machine."""
    ops = [op for op in OPS if op.name == name]
    assert ops, f"no op_db entry {name}"
    _check_on_device(ops[0], np.dtype(np.float32) if np.dtype(np.float32) in ops[0].dtypes else ops[0].dtypes[0],
                     ember.devices("cpu")[1], jit)


def test_device_column_catches_a_difference():
    """The comparison is not vacuous: one ulp off fails an exact result, more than the tolerance an inexact one."""
    op = next(op for op in OPS if op.name == "lax.add")
    want = np.array([1.0, -0.0, np.nan], dtype=np.float32)
    _assert_device_matches(op, want.copy(), want, True, "same")
    with pytest.raises(AssertionError):
        _assert_device_matches(op, np.nextafter(want, np.float32(2)), want, True, "one ulp")
    with pytest.raises(AssertionError):
        _assert_device_matches(op, np.array([1.0, 0.0, np.nan], dtype=np.float32), want, True, "sign of zero")
    _assert_device_matches(op, np.nextafter(want, np.float32(2)), want, False, "one ulp, inexact")
    with pytest.raises(AssertionError):
        _assert_device_matches(op, want * 1.001, want, False, "0.1%")
