"""Benchmark runner: ``python -m benchmarks.run [--quick] [--only NAME] [--json PATH]``.

Times every selected workload's implementations (NumPy baseline, ember, and
torch / jax when importable) interleaved in one run and prints, per workload,
the median per-call time of each and its ratio to NumPy:
``median of per-round ratios (ratio of minima)``. Lower is better.

On the GPU machine (Python with CuPy, JAX-CUDA and PyTorch-CUDA), from the
repository root, the issue's GPU rows with every library on the GPU:

    PYTHONPATH=. python -m benchmarks.run --suite gpu --device cuda --impls ember,ember_jit,torch,jax --out $OUT/gpu.md

(NumPy still computes each row's reference on the host, to check every
result, but is not timed unless ``--impls`` names it; ratios are then to JAX.)

Guarding what is won: ``--compare BASE.json`` runs as usual, then prints each
row's change against a run saved with ``--json`` (new/base median per call, per
implementation); ``--compare BASE.json NEW.json`` compares two saved runs
without running. A change of ember or ember_jit is a regression when the new
median exceeds the base one by more than the larger per-round spread
(max - min) / median of the two runs' measurements, and at least the noise floor
(``--noise-floor``, 5 %). The peers' changes are shown, never flagged. Rows in
one run only are listed. Exit status: 1 when an ember result is wrong or a
workload fails (whatever else), 3 when a regression is flagged, 2 on a usage
error, else 0.

The ``jit/eager`` column (rows that time both ember and ember_jit): ember_jit's
time over ember's, ``median of per-round ratios (ratio of minima)``, marked SLOW
when the median exceeds 1 + the larger spread of the two (at least the noise
floor); the line under the table lists those rows. Speed never changes the exit
status of a plain run.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from benchmarks.compare import REGRESSION_EXIT, compare_runs, load_run, report_lines
from benchmarks.registry import BASELINE, IMPLEMENTATIONS, Env, Workload, load_all, parse_device, to_numpy
from benchmarks.timing import NOISE_FLOOR, noise_threshold, paired_ratios, steady_allocator, time_interleaved

FULL = {"rounds": 9, "target_s": 0.030, "warmup": 3}
QUICK = {"rounds": 3, "target_s": 0.005, "warmup": 3}
SMOKE = {"rounds": 1, "target_s": 0.0005, "warmup": 1}  # does it run: sizes shrink too (env.smoke)
#: A workload with this tag runs only when selected by name, family or suite (too big for a default CPU run).
LARGE = "large"
#: A workload with this tag measures host-side work (a conversion from torch): not run with --device.
HOST = "host"


@dataclass
class Row:
    name: str
    family: str
    description: str
    target: float | None
    #: impl -> {"median": s, "min": s, "n": calls per measurement, "rounds": [s, ...]}
    times: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: impl -> {"median": median of per-round impl/numpy, "min": min(impl)/min(numpy)}
    ratios: dict[str, dict[str, float]] = field(default_factory=dict)
    #: impl -> "ok" | "mismatch: ..." | "error: ..."
    check: dict[str, str] = field(default_factory=dict)
    overhead_s: float = 0.0
    error: str | None = None  # setup failed
    #: what the ratios are to ("numpy", or "jax" when NumPy is not timed)
    reference: str = BASELINE
    #: bytes a call reads and writes at least, and impl -> those bytes / median time in GB/s
    bytes_moved: int | None = None
    gbps: dict[str, float] = field(default_factory=dict)
    #: ember_jit against ember, where both are timed: see `jit_vs_eager`
    jit_eager: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


class Rows(list):
    """The rows of a run, in order, with the run's header (``meta``: versions, machine, settings) as written to
    ``--json``."""

    meta: dict[str, Any]

    def __init__(self, rows: Iterable[Row] = (), meta: dict[str, Any] | None = None):
        super().__init__(rows)
        self.meta = dict(meta or {})

    def to_json(self) -> dict[str, Any]:
        """The run as ``--json`` writes it: ``{"meta": ..., "rows": [...]}``."""
        return {"meta": self.meta, "rows": [r.to_json() for r in self]}


# --------------------------------------------------------------------------- selection


def select(patterns: Iterable[str] | None, registry: dict[str, Workload] | None = None,
           suite: str | None = None) -> list[Workload]:
    """Workloads matching any pattern: an exact name, a family, or a glob on names (``eager_*``); with `suite`,
    only those tagged with it. With neither, every workload but those tagged ``large``."""
    registry = load_all() if registry is None else registry
    pats = [p for arg in (patterns or []) for p in arg.split(",") if p]
    pool = [w for w in registry.values() if suite is None or suite in w.tags]
    if not pats:
        return pool if suite is not None else [w for w in pool if LARGE not in w.tags]

    def hit(w: Workload, p: str) -> bool:
        return p == w.name or p == w.family or fnmatch.fnmatchcase(w.name, p)

    return [w for w in pool if any(hit(w, p) for p in pats)]


# --------------------------------------------------------------------------- correctness


def compare(expected: Any, got: Any, *, rtol: float, atol: float, check_dtype: bool = True) -> str | None:
    """None when ``got`` matches NumPy's ``expected`` (structure, shape, dtype, values); else why not."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"structure {type(got).__name__} != {type(expected).__name__}"
        for i, (e, g) in enumerate(zip(expected, got)):
            if (msg := compare(e, g, rtol=rtol, atol=atol, check_dtype=check_dtype)) is not None:
                return f"[{i}] {msg}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return "dict keys differ"
        for k in expected:
            if (msg := compare(expected[k], got[k], rtol=rtol, atol=atol, check_dtype=check_dtype)) is not None:
                return f"[{k!r}] {msg}"
        return None
    e, g = np.asarray(expected), np.asarray(got)
    if e.shape != g.shape:
        return f"shape {g.shape} != {e.shape}"
    if check_dtype and e.dtype != g.dtype:
        return f"dtype {g.dtype} != {e.dtype}"
    # in slices, so that a result of gigabytes (per-example gradients of a large MLP) is checked without
    # several temporaries of its size
    e, g, step = e.reshape(-1), g.reshape(-1), 1 << 22
    for i in range(0, e.size, step):
        if not np.allclose(g[i:i + step], e[i:i + step], rtol=rtol, atol=atol, equal_nan=True):
            err = max(float(np.max(np.abs(g[j:j + step].astype(np.float64) - e[j:j + step].astype(np.float64))))
                      for j in range(0, e.size, step))  # fmt: skip
            return f"values differ (max abs err {err:.3g})"
    return None


def check_impls(w: Workload, impls: dict[str, Any], env: Env | None = None) -> dict[str, str]:
    """impl -> "ok" | "mismatch: why" | "error: what it raised": each result against the workload's reference
    (NumPy's, or torch's: ``Workload.reference``), and (with `env`) on the run's device. One result at a time
    besides the reference's, so large ones are not all held at once."""
    report: dict[str, str] = {}
    ref = w.reference

    def result(name: str) -> Any:
        try:
            raw = impls[name]()
            where = None if env is None else env.misplaced(name, raw)
            return to_numpy(raw), where
        except Exception as e:  # noqa: BLE001  (reported, not fatal)
            report[name] = f"error: {type(e).__name__}: {e}".splitlines()[0][:200]
            return None, None

    base, _ = result(ref) if ref in impls else (None, None)
    for name in impls:
        if name == ref:
            report.setdefault(name, "ok")
            continue
        val, where = result(name)
        if name in report:
            continue
        if where is not None:
            report[name] = f"mismatch: {where}"
        elif ref not in impls or ref in report and report[ref] != "ok":
            report[name] = "ok"
        else:
            # peers may pick other dtypes for scalars etc.; ember must match the reference exactly
            msg = compare(base, val, rtol=w.rtol, atol=w.atol, check_dtype=(name == "ember"))
            report[name] = "ok" if msg is None else f"mismatch: {msg}"
        del val
    return {name: report[name] for name in impls}


# --------------------------------------------------------------------------- running


def run_workload(w: Workload, env: Env, *, rounds: int, target_s: float, subtract_overhead: bool = True,
                 check: bool = True, timed: Iterable[str] | None = None, reference: str = BASELINE,
                 warmup: int = 3, noise_floor: float = NOISE_FLOOR) -> Row:
    """Check and time one workload. `timed`: the implementations to time (default: every one built; the
    workload's reference, NumPy or torch, is built regardless, for the check); ratios are to `reference`;
    `noise_floor`: the least excess of ember_jit over ember that `jit_vs_eager` flags."""
    row = Row(name=w.name, family=w.family, description=w.description, target=w.target, reference=reference)
    try:
        impls = dict(w.setup(env))
    except Exception as e:  # noqa: BLE001
        row.error = f"setup failed: {type(e).__name__}: {e}".splitlines()[0][:200]
        return row
    unknown = sorted(set(impls) - set(IMPLEMENTATIONS))
    if unknown:
        row.error = f"unknown implementation(s) {unknown}: add them to registry.IMPLEMENTATIONS"
        return row
    impls = {k: v for k, v in impls.items() if env.wants(k)}
    if w.reference not in impls:
        why = env.missing.get(w.reference)
        row.error = f"workload has no {w.reference!r} implementation" + (f" (the reference: {why})" if why else "")
        return row
    # on a device, a timed call waits for the work it started (ember, torch and JAX return before it is done)
    impls = {k: _synced(env, k, f) if env.needs_sync(k) else f for k, f in impls.items()}
    if check:
        row.check = check_impls(w, impls, env)
    # an implementation that raises is reported, not timed
    wanted = set(impls if timed is None else timed)
    timed_impls = {k: f for k, f in impls.items() if k in wanted and not row.check.get(k, "ok").startswith("error")}
    try:
        timings, row.overhead_s = time_interleaved(timed_impls, rounds=rounds, target_s=target_s,
                                                   subtract_overhead=subtract_overhead, warmup=warmup)
    except Exception as e:  # noqa: BLE001  (out of GPU memory while timing, say: the other rows still run)
        row.error = f"timing failed: {type(e).__name__}: {e}".splitlines()[0][:200]
        return row
    base = timings.get(reference)
    for name, t in timings.items():
        row.times[name] = {"median": t.median, "min": t.min, "n": t.n, "rounds": t.per_call}
        if base is not None and name != reference:
            row.ratios[name] = {"median": statistics.median(paired_ratios(t, base)), "min": t.min / base.min}
    if w.bytes_moved is not None:
        row.bytes_moved = int(w.bytes_moved(env))
        row.gbps = {name: row.bytes_moved / t["median"] / 1e9 for name, t in row.times.items()}
    row.jit_eager = jit_vs_eager(row.times, noise_floor)
    return row


JIT, EAGER = "ember_jit", "ember"


def jit_vs_eager(times: dict[str, dict[str, Any]], floor: float = NOISE_FLOOR) -> dict[str, Any] | None:
    """"jit is never slower than eager" on one row: ember_jit's time over ember's (timed in the same rounds).

    Returns None unless both are in `times` (a Row's), else ``{"median": median of the per-round ratios,
    "min": ratio of the minima, "threshold": 1 + the larger per-round spread (max - min) / median of the two
    (at least 1 + floor), "slower": median > threshold}``: slower beyond the run's own noise."""
    if JIT not in times or EAGER not in times:
        return None
    jit, eager = times[JIT]["rounds"], times[EAGER]["rounds"]
    med = statistics.median(a / b for a, b in zip(jit, eager))
    threshold = 1 + noise_threshold(jit, eager, floor=floor)
    return {"median": med, "min": min(jit) / min(eager), "threshold": threshold, "slower": med > threshold}


def jit_eager_summary(rows: list[Row]) -> str | None:
    """One line on "jit is never slower than eager" over the rows that time both; None when none does."""
    both = [r for r in rows if r.jit_eager]
    if not both:
        return None
    slower = [r for r in both if r.jit_eager["slower"]]
    if not slower:
        return f"jit <= eager within noise on all {len(both)} rows that time both"
    cells = ", ".join(f"{r.name} {r.jit_eager['median']:.2f}x (noise {r.jit_eager['threshold']:.2f}x)" for r in slower)
    return f"jit slower than eager beyond noise on {len(slower)} of {len(both)} rows: {cells}"


def jit_eager_cell(r: Row) -> str:
    """``median (min)`` of ember_jit/ember, and SLOW when jit is slower beyond noise; "-" without both."""
    if not r.jit_eager:
        return "-"
    return ratio_cell(r.jit_eager) + (" SLOW" if r.jit_eager["slower"] else "")


def _synced(env: Env, impl: str, f: Any) -> Any:
    return lambda: env.sync(impl, f())


def _release(env: Env) -> None:
    """Give the GPU memory a finished workload held back to the device, so the next one (another library's
    allocator) finds it free: CuPy's pool (ember) and torch's cache; JAX frees arrays when they are dropped."""
    if env.platform != "cuda":
        return
    import gc

    gc.collect()
    if "cupy" in sys.modules:
        sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
    if env._mods.get("torch") is not None:
        env._mods["torch"].cuda.empty_cache()


def _ember_default_device(env: Env) -> Any:
    """On a device, ember's default device is that one for the run, as a user on a GPU would have it
    (``EMBER_PLATFORM=cuda``): what a workload or ember itself creates uncommitted (a scalar, a PRNG key)
    is made there, not on the host and moved on each call."""
    if env.ember_device is None:
        return contextlib.nullcontext()
    import ember

    return ember.default_device(env.ember_device)


def default_reference(timed: Iterable[str]) -> str | None:
    """What the ratios are to: NumPy when it is timed, else JAX (the GPU targets are against JAX-on-GPU), else
    torch (the tutorials suite: ember against torch.func)."""
    timed = list(timed)
    return next((ref for ref in (BASELINE, "jax", "torch") if ref in timed), None)


def run(patterns: Iterable[str] | None = None, *, quick: bool = False, impls: Iterable[str] | None = None,
        rounds: int | None = None, target_ms: float | None = None, subtract_overhead: bool = True,
        check: bool = True, json_path: str | None = None, out: TextIO | None | str = "stdout",
        device: str = "cpu", suite: str | None = None, smoke: bool = False, reference: str | None = None,
        markdown_path: str | None = None, noise_floor: float = NOISE_FLOOR) -> Rows:
    """Run the selected workloads, print the table to ``out`` (default stdout; None: silent), return the rows
    (with the run's header as ``.meta``).

    `impls` are the implementations timed (NumPy is always run, as the reference of the output check);
    `device` places every library but NumPy (see `Env`); `reference` is what the ratios are to; `noise_floor`
    is the least excess of ember_jit over ember that the ``jit/eager`` column flags."""
    if out == "stdout":
        out = sys.stdout
    cfg = dict(QUICK if quick else FULL)
    if smoke:
        cfg = dict(SMOKE)
    if rounds is not None:
        cfg["rounds"] = rounds
    if target_ms is not None:
        cfg["target_s"] = target_ms / 1e3
    timed = tuple(impls) if impls is not None else tuple(IMPLEMENTATIONS)
    workloads = select(patterns, suite=suite)
    steady_allocator()
    # every workload's reference is built for the check, timed or not
    env = Env(tuple(dict.fromkeys((BASELINE, *timed, *(w.reference for w in workloads)))), device=device, smoke=smoke)
    host_only = [w.name for w in workloads if HOST in w.tags and env.device != "cpu"]
    # a workload checked against torch (no NumPy version) needs torch: without it, it is skipped, as a peer is
    no_reference = [w.name for w in workloads if w.reference != BASELINE and not env.available(w.reference)]
    workloads = [w for w in workloads if w.name not in host_only and w.name not in no_reference]
    # import the optional peers up front so the columns are known before the first row
    present = [i for i in IMPLEMENTATIONS if i in timed and env.available(i)]
    reference = reference if reference is not None else default_reference(present)
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": env.versions(),
        "missing": {k: v for k, v in env.missing.items() if k in timed},
        "quick": quick,
        "smoke": smoke,
        "rounds": cfg["rounds"],
        "target_ms": cfg["target_s"] * 1e3,
        "subtract_overhead": subtract_overhead,
        "device": env.device,
        "where": {k: v for k, v in env.where().items() if k in present or k == BASELINE},
        "numpy_timed": BASELINE in present,
        "suite": suite,
        "reference": reference,
        "host_only": host_only,
        "no_reference": no_reference,
        "noise_floor": noise_floor,
    }
    table = _Table(present, out, reference)
    table.header(meta)
    rows = Rows(meta=meta)
    with _ember_default_device(env):
        for w in workloads:
            row = run_workload(w, env, rounds=cfg["rounds"], target_s=cfg["target_s"],
                               subtract_overhead=subtract_overhead, check=check, timed=present,
                               reference=reference or BASELINE, warmup=cfg["warmup"], noise_floor=noise_floor)
            _release(env)
            rows.append(row)
            table.row(row)
    table.footer(rows)
    if markdown_path:
        with open(markdown_path, "w") as fh:
            fh.write(markdown(meta, rows, present, reference))
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(rows.to_json(), fh, indent=1)
    return rows


# --------------------------------------------------------------------------- table


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def ratio_cell(q: dict[str, float]) -> str:
    """``median (min)``: two decimals, or two significant digits below 0.1 (a ratio of 0.004 is not 0.00)."""
    def fmt(x: float) -> str:
        return f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"

    return f"{fmt(q['median'])} ({fmt(q['min'])})"


def _short(impl: str | None) -> str:
    return "np" if impl == BASELINE else str(impl)


def target_cell(r: Row) -> str:
    """The design's target and whether ember at its best meets it: against NumPy, DESIGN.md's ember/numpy
    (``target``); against JAX, the issue's ember_jit/jax on a GPU (``jax_target``). Empty when there is none."""
    target = {BASELINE: r.target, "jax": _jax_target(r.name)}.get(r.reference)
    # The targets are for ember at its best: under jit where the workload has a jitted version.
    best = "ember_jit" if "ember_jit" in r.ratios else "ember"
    if target is None or best not in r.ratios:
        return ""
    return f"<={target:g}x " + ("ok" if r.ratios[best]["median"] <= target else "MISS")


def _jax_target(name: str) -> float | None:
    w = load_all().get(name)
    return None if w is None else w.jax_target


def time_cell(r: Row, impl: str) -> str:
    chk = r.check.get(impl, "ok")
    if chk.startswith("error"):
        return "error"
    return fmt_time(r.times.get(impl, {}).get("median")) + ("!" if chk.startswith("mismatch") else "")


def bandwidth_lines(rows: list[Row], impls: list[str], on_gpu: bool = False) -> list[str]:
    """GB/s of the rows that declare their bytes (the elementwise chain, the copy), and the best of each row
    against the copy bandwidth measured in the same run: on a GPU, the fastest device-to-device copy of the
    libraries there; on the CPU, NumPy's copy (the fastest of the others when NumPy is not timed)."""
    moved = [r for r in rows if r.gbps]
    copies = [(v, impl) for r in moved if r.family == "bandwidth" for impl, v in r.gbps.items()
              if (impl != BASELINE) == on_gpu or not on_gpu and BASELINE not in r.gbps]  # fmt: skip
    copy = max(copies) if copies else None
    lines = []
    for r in moved:
        cells = [f"{impl} {r.gbps[impl]:.3g} GB/s" + (" (host)" if on_gpu and impl == BASELINE else "")
                 for impl in impls if impl in r.gbps]  # fmt: skip
        line = f"{r.name} ({r.bytes_moved / 1e6:.3g} MB read+written per call): " + ", ".join(cells)
        fastest = max((v, impl) for impl, v in r.gbps.items() if (impl != BASELINE) == on_gpu or not on_gpu)
        if copy is not None and r.family != "bandwidth":
            line += f"; the fastest, {fastest[1]}, at {fastest[0] / copy[0]:.2f}x the copy bandwidth"
        lines.append(line)
    if copy is not None:
        lines.append(f"copy bandwidth of this run: {copy[0]:.3g} GB/s ({copy[1]}'s copy of the same bytes"
                     f"{' on the GPU' if on_gpu else ''})")
    return lines


class _Table:
    def __init__(self, impls: list[str], out: TextIO | None, reference: str | None = BASELINE):
        self.impls, self.out, self.reference = impls, out, reference
        self.on_gpu = False
        self.peers = [i for i in impls if i != reference] if reference in impls else []
        self.jit_eager = JIT in impls and EAGER in impls
        self.cols = [("workload", 26), ("op", 26)] + [(i, 9) for i in impls] + \
                    [(f"{i}/{_short(reference)}", 13) for i in self.peers] + \
                    ([("jit/eager", 16)] if self.jit_eager else []) + [("target", 11)]

    def _p(self, s: str = "") -> None:
        if self.out is not None:
            print(s, file=self.out, flush=True)

    def _line(self, cells: list[str]) -> str:
        padded = (c.ljust(w) if k < 2 else c.rjust(w) for k, (c, (_, w)) in enumerate(zip(cells, self.cols)))
        return "  ".join(padded).rstrip()

    def header(self, meta: dict[str, Any]) -> None:
        self.on_gpu = meta.get("device", "cpu").startswith("cuda")
        for line in header_lines(meta):
            self._p(f"# {line}")
        self._p(self._line([c for c, _ in self.cols]))
        self._p(self._line(["-" * w for _, w in self.cols]))

    def row(self, r: Row) -> None:
        if r.error:
            self._p(self._line([r.name, r.error]))
            return
        cells = [r.name, r.description[:26]] + [time_cell(r, i) for i in self.impls]
        for i in self.peers:
            q = r.ratios.get(i)
            cells.append(ratio_cell(q) if q else "-")
        if self.jit_eager:
            cells.append(jit_eager_cell(r))
        cells.append(target_cell(r))
        self._p(self._line(cells))

    def footer(self, rows: list[Row]) -> None:
        for line in bandwidth_lines(rows, self.impls, self.on_gpu):
            self._p(f"# {line}")
        if (line := jit_eager_summary(rows)) is not None:
            self._p(f"# {line}")
        notes = check_notes(rows)
        if notes:
            self._p(f"# {CHECK_LEGEND}:")
            for n in notes:
                self._p(f"# {n}")


def header_lines(meta: dict[str, Any]) -> list[str]:
    v = ", ".join(f"{k} {ver}" for k, ver in meta["versions"].items())
    lines = [f"ember benchmarks  {meta['when']}  python {meta['python']}, {v}; {meta['cpu_count']} cpus"]
    if meta.get("device", "cpu") != "cpu":
        where = "; ".join(f"{k} on {d}" for k, d in meta["where"].items())
        lines.append(f"device {meta['device']}: {where}"
                     + ("" if meta["numpy_timed"] else "; NumPy computes the reference of the check, untimed"))
    lines += [f"{k}: skipped, {why}" for k, why in meta["missing"].items()]
    if meta.get("host_only"):
        lines.append(f"not run on {meta['device']} (they measure host-side work): {', '.join(meta['host_only'])}")
    if meta.get("no_reference"):
        lines.append(f"skipped, their reference (torch) is not available: {', '.join(meta['no_reference'])}")
    if meta.get("smoke"):
        lines.append("smoke run: shrunken sizes, times mean nothing")
    ref = meta.get("reference", BASELINE)
    lines.append(f"{meta['rounds']} interleaved rounds of ~{meta['target_ms']:g} ms per implementation"
                 f"{', loop overhead subtracted' if meta['subtract_overhead'] else ''}."
                 + (f" Times: median per call. Ratios to {'NumPy' if ref == BASELINE else ref}: median of"
                    " per-round ratios (ratio of minima)." if ref else " Times: median per call."))
    return lines


CHECK_LEGEND = "'!' = output differs from the reference (NumPy's; torch's where there is no NumPy version), " \
               "'error' = raised (not timed)"


def check_notes(rows: list[Row]) -> list[str]:
    return [f"{r.name}: {i} {c}" for r in rows for i, c in r.check.items() if c != "ok"]


def markdown(meta: dict[str, Any], rows: list[Row], impls: list[str], reference: str | None) -> str:
    """The run as Markdown: its header as a list, one table row per workload, bandwidth and check notes."""
    peers = [i for i in impls if i != reference] if reference in impls else []
    jit_eager = JIT in impls and EAGER in impls
    head = ["workload", "op"] + [f"{i} (host)" if i == BASELINE and meta.get("device", "cpu") != "cpu" else i
                                 for i in impls] + [f"{i}/{_short(reference)}" for i in peers] + \
        (["jit/eager"] if jit_eager else []) + ["target"]  # fmt: skip
    out = [f"- {line}" for line in header_lines(meta)] + ["", "| " + " | ".join(head) + " |",
                                                              "|" + "---|" * len(head)]  # fmt: skip
    for r in rows:
        if r.error:
            out.append(f"| {r.name} | {r.error} |" + " |" * (len(head) - 2))
            continue
        cells = [r.name, r.description] + [time_cell(r, i) for i in impls]
        cells += [ratio_cell(q) if (q := r.ratios.get(i)) else "-" for i in peers]
        if jit_eager:
            cells.append(jit_eager_cell(r))
        cells.append(target_cell(r))
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    extra = [f"- {line}" for line in bandwidth_lines(rows, impls, meta.get("device", "cpu").startswith("cuda"))]
    if (line := jit_eager_summary(rows)) is not None:
        extra.append(f"- {line}")
    notes = check_notes(rows)
    if notes:
        extra += [f"- {CHECK_LEGEND}:"] + [f"  - {n}" for n in notes]
    return "\n".join(out + ([""] + extra if extra else [])) + "\n"


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"{QUICK['rounds']} rounds of ~{QUICK['target_s'] * 1e3:g} ms "
                   f"(default {FULL['rounds']} rounds of ~{FULL['target_s'] * 1e3:g} ms)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="workload name, family, or glob (eager_*); repeatable or comma-separated")
    p.add_argument("--suite", metavar="TAG", help="only the workloads tagged TAG (gpu: the GPU rows of issue 17)")
    p.add_argument("--device", default="cpu", metavar="D",
                   help="cpu (default), cpu:N (ember's inputs committed to its CPU device N), cuda or cuda:N "
                        "(ember, torch and JAX on GPU N; NumPy stays on the host)")
    p.add_argument("--json", metavar="PATH", help="also write every measurement as JSON")
    p.add_argument("--out", metavar="PATH", help="also write the table as Markdown to PATH, and (without --json) "
                   "every measurement as JSON beside it (PATH with the suffix .json)")
    p.add_argument("--impls", metavar="A,B",
                   help=f"implementations to time (default: all of {','.join(IMPLEMENTATIONS)} that import); "
                        f"{BASELINE} is run regardless, as the reference of the output check")
    p.add_argument("--ratios-to", metavar="IMPL", help=f"what the ratios are to (default {BASELINE} when it is "
                   "timed, else jax)")
    p.add_argument("--rounds", type=int, help="interleaved rounds")
    p.add_argument("--target-ms", type=float, help="duration of one measurement")
    p.add_argument("--no-subtract", action="store_true", help="keep the timing-loop overhead in the per-call times")
    p.add_argument("--no-check", action="store_true", help="skip comparing outputs with NumPy")
    p.add_argument("--smoke", action="store_true", help="small sizes and one short round: does it all run (tests)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--compare", nargs="+", metavar="JSON",
                   help="BASE.json: after the run, print each row's change against BASE.json (a run saved with "
                        "--json) and flag ember's regressions beyond noise; BASE.json NEW.json: compare two saved "
                        "runs, running nothing. Exit status 3 when a regression is flagged (1 still wins: a wrong "
                        "result)")
    p.add_argument("--noise-floor", type=float, default=NOISE_FLOOR * 100, metavar="PCT",
                   help="least change called a regression by --compare, or jit slower than eager in the jit/eager "
                        "column, in percent (default %(default)g); the threshold is the larger of this and each "
                        "run's per-round spread (max-min)/median")
    a = p.parse_args(argv)
    floor = a.noise_floor / 100
    base = None
    if a.compare:
        if len(a.compare) > 2:
            print(f"--compare takes BASE.json and at most one NEW.json, got {len(a.compare)} files", file=sys.stderr)
            return 2
        try:
            base = load_run(a.compare[0])
            new = load_run(a.compare[1]) if len(a.compare) == 2 else None
        except (OSError, ValueError) as e:
            print(f"--compare: {e}", file=sys.stderr)
            return 2
        if new is not None:
            cmp = compare_runs(base, new, floor)
            print("\n".join(report_lines(cmp, a.compare[0], a.compare[1])))
            return REGRESSION_EXIT if cmp.regressions else 0

    workloads = select(a.only, suite=a.suite)
    if not workloads:
        print(f"no workload matches {a.only or ''}{f' in suite {a.suite!r}' if a.suite else ''}; try --list",
              file=sys.stderr)
        return 2
    if a.list:
        for w in workloads:
            print(f"{w.name:26} {w.family:10} {w.description}" + (f"  [{', '.join(w.tags)}]" if w.tags else ""))
        return 0
    impls = None
    if a.impls:
        impls = [i.strip() for i in a.impls.split(",") if i.strip()]
        bad = [i for i in impls if i not in IMPLEMENTATIONS]
        if bad or not impls:
            print(f"--impls names only {tuple(IMPLEMENTATIONS)}, got {a.impls!r}", file=sys.stderr)
            return 2
    if a.ratios_to is not None and a.ratios_to not in (impls or IMPLEMENTATIONS):
        print(f"--ratios-to {a.ratios_to!r} is not among the implementations timed", file=sys.stderr)
        return 2
    if (why := device_problem(a.device)) is not None:
        print(why, file=sys.stderr)
        return 2
    json_path = a.json
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        json_path = json_path or os.path.splitext(a.out)[0] + ".json"
    rows = run(a.only, quick=a.quick, impls=impls, rounds=a.rounds, target_ms=a.target_ms,
               subtract_overhead=not a.no_subtract, check=not a.no_check, json_path=json_path, device=a.device,
               suite=a.suite, smoke=a.smoke, reference=a.ratios_to, markdown_path=a.out, noise_floor=floor)
    # correctness of ember's benchmarked code is worth a non-zero exit; speed only when asked to compare
    bad = [r for r in rows if r.error or any(c != "ok" for i, c in r.check.items() if i.startswith("ember"))]
    regressed = False
    if base is not None:
        cmp = compare_runs(base, rows.to_json(), floor)
        print("\n".join(report_lines(cmp, a.compare[0])))
        regressed = bool(cmp.regressions)
    return 1 if bad else REGRESSION_EXIT if regressed else 0


def device_problem(spec: str) -> str | None:
    """Why ``--device spec`` cannot run here, or None. A GPU asked for must be there: ember's (CuPy) at least;
    torch or JAX without one are skipped with the reason, like a peer that is not installed."""
    try:
        platform_, index = parse_device(spec)
    except ValueError as e:
        return str(e)
    if platform_ != "cuda":
        return None
    from ember import backends

    count = backends.cuda_device_count()
    if count <= index:
        state = backends.available()["cuda"]
        return (f"--device {spec}: ember finds {count} CUDA GPU(s) here (cuda: {state}). "
                "Run the GPU suite on a machine with a GPU and CuPy, or leave --device out to run on the CPU.")
    return None


if __name__ == "__main__":
    sys.exit(main())
