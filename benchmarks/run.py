"""Benchmark runner: ``python -m benchmarks.run [--quick] [--only NAME] [--json PATH]``.

Times every selected workload's implementations (NumPy baseline, ember, and
torch / jax when importable) interleaved in one run and prints, per workload,
the median per-call time of each and its ratio to NumPy:
``median of per-round ratios (ratio of minima)``. Lower is better.
"""

from __future__ import annotations

import argparse
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

from benchmarks.registry import BASELINE, IMPLEMENTATIONS, Env, Workload, load_all, to_numpy
from benchmarks.timing import paired_ratios, time_interleaved

FULL = {"rounds": 9, "target_s": 0.030}
QUICK = {"rounds": 3, "target_s": 0.005}


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

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


# --------------------------------------------------------------------------- selection


def select(patterns: Iterable[str] | None, registry: dict[str, Workload] | None = None) -> list[Workload]:
    """Workloads matching any pattern: an exact name, a family, or a glob on names (``eager_*``)."""
    registry = load_all() if registry is None else registry
    pats = [p for arg in (patterns or []) for p in arg.split(",") if p]
    if not pats:
        return list(registry.values())
    def hit(w: Workload, p: str) -> bool:
        return p == w.name or p == w.family or fnmatch.fnmatchcase(w.name, p)

    return [w for w in registry.values() if any(hit(w, p) for p in pats)]


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
    if not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
        err = np.max(np.abs(g.astype(np.float64) - e.astype(np.float64))) if e.size else 0.0
        return f"values differ (max abs err {err:.3g})"
    return None


def outputs(impls: dict[str, Any]) -> dict[str, Any]:
    """Each implementation's result as NumPy, or the exception it raised."""
    out: dict[str, Any] = {}
    for name, f in impls.items():
        try:
            out[name] = to_numpy(f())
        except Exception as e:  # noqa: BLE001  (reported, not fatal)
            out[name] = e
    return out


def check_impls(w: Workload, impls: dict[str, Any]) -> dict[str, str]:
    res = outputs(impls)
    base = res.get(BASELINE)
    report: dict[str, str] = {}
    for name, val in res.items():
        if isinstance(val, Exception):
            report[name] = f"error: {type(val).__name__}: {val}".splitlines()[0][:200]
        elif name == BASELINE or isinstance(base, Exception):
            report[name] = "ok"
        else:
            # peers may pick other dtypes for scalars etc.; ember must match NumPy exactly
            msg = compare(base, val, rtol=w.rtol, atol=w.atol, check_dtype=(name == "ember"))
            report[name] = "ok" if msg is None else f"mismatch: {msg}"
    return report


# --------------------------------------------------------------------------- running


def run_workload(w: Workload, env: Env, *, rounds: int, target_s: float, subtract_overhead: bool = True,
                 check: bool = True) -> Row:
    row = Row(name=w.name, family=w.family, description=w.description, target=w.target)
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
    if BASELINE not in impls:
        row.error = f"workload has no {BASELINE!r} implementation"
        return row
    if check:
        row.check = check_impls(w, impls)
    # an implementation that raises is reported, not timed
    timed = {k: f for k, f in impls.items() if not row.check.get(k, "ok").startswith("error")}
    timings, row.overhead_s = time_interleaved(timed, rounds=rounds, target_s=target_s,
                                               subtract_overhead=subtract_overhead)
    base = timings.get(BASELINE)
    for name, t in timings.items():
        row.times[name] = {"median": t.median, "min": t.min, "n": t.n, "rounds": t.per_call}
        if base is not None and name != BASELINE:
            row.ratios[name] = {"median": statistics.median(paired_ratios(t, base)), "min": t.min / base.min}
    return row


def run(patterns: Iterable[str] | None = None, *, quick: bool = False, impls: Iterable[str] | None = None,
        rounds: int | None = None, target_ms: float | None = None, subtract_overhead: bool = True,
        check: bool = True, json_path: str | None = None, out: TextIO | None | str = "stdout") -> list[Row]:
    """Run the selected workloads, print the table to ``out`` (default stdout; None: silent), return the rows."""
    if out == "stdout":
        out = sys.stdout
    cfg = dict(QUICK if quick else FULL)
    if rounds is not None:
        cfg["rounds"] = rounds
    if target_ms is not None:
        cfg["target_s"] = target_ms / 1e3
    env = Env(tuple(impls) if impls is not None else None)
    workloads = select(patterns)
    # import the optional peers up front so the columns are known before the first row
    present = [i for i in IMPLEMENTATIONS if env.available(i)]
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": env.versions(),
        "missing": dict(env.missing),
        "quick": quick,
        "rounds": cfg["rounds"],
        "target_ms": cfg["target_s"] * 1e3,
        "subtract_overhead": subtract_overhead,
    }
    table = _Table(present, out)
    table.header(meta)
    rows = []
    for w in workloads:
        row = run_workload(w, env, rounds=cfg["rounds"], target_s=cfg["target_s"],
                           subtract_overhead=subtract_overhead, check=check)
        rows.append(row)
        table.row(row)
    table.footer(rows)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"meta": meta, "rows": [r.to_json() for r in rows]}, fh, indent=1)
    return rows


# --------------------------------------------------------------------------- table


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


class _Table:
    def __init__(self, impls: list[str], out: TextIO | None):
        self.impls, self.out = impls, out
        self.peers = [i for i in impls if i != BASELINE]
        self.cols = [("workload", 18), ("op", 26)] + [(i, 9) for i in impls] + \
                    [(f"{i}/np", 13) for i in self.peers] + [("target", 11)]

    def _p(self, s: str = "") -> None:
        if self.out is not None:
            print(s, file=self.out, flush=True)

    def _line(self, cells: list[str]) -> str:
        padded = (c.ljust(w) if k < 2 else c.rjust(w) for k, (c, (_, w)) in enumerate(zip(cells, self.cols)))
        return "  ".join(padded).rstrip()

    def header(self, meta: dict[str, Any]) -> None:
        v = ", ".join(f"{k} {ver}" for k, ver in meta["versions"].items())
        self._p(f"# ember benchmarks  {meta['when']}  python {meta['python']}, {v}; {meta['cpu_count']} cpus")
        for k, why in meta["missing"].items():
            self._p(f"# {k}: skipped, {why}")
        self._p(f"# {meta['rounds']} interleaved rounds of ~{meta['target_ms']:g} ms per implementation"
                f"{', loop overhead subtracted' if meta['subtract_overhead'] else ''}."
                " Times: median per call. Ratios to NumPy: median of per-round ratios (ratio of minima).")
        self._p(self._line([c for c, _ in self.cols]))
        self._p(self._line(["-" * w for _, w in self.cols]))

    def row(self, r: Row) -> None:
        if r.error:
            self._p(self._line([r.name, r.error]))
            return
        cells = [r.name, r.description[:26]]
        for i in self.impls:
            chk = r.check.get(i, "ok")
            cells.append("error" if chk.startswith("error") else fmt_time(r.times.get(i, {}).get("median")) +
                         ("!" if chk.startswith("mismatch") else ""))
        for i in self.peers:
            q = r.ratios.get(i)
            cells.append(f"{q['median']:.2f} ({q['min']:.2f})" if q else "-")
        tgt = ""
        # The targets are for ember at its best: under jit where the workload has a jitted version.
        best = "ember_jit" if "ember_jit" in r.ratios else "ember"
        if r.target is not None and best in r.ratios:
            tgt = f"<={r.target:g}x " + ("ok" if r.ratios[best]["median"] <= r.target else "MISS")
        cells.append(tgt)
        self._p(self._line(cells))

    def footer(self, rows: list[Row]) -> None:
        notes = [f"# {r.name}: {i} {c}" for r in rows for i, c in r.check.items() if c != "ok"]
        if notes:
            self._p("# '!' = output differs from NumPy, 'error' = raised (not timed):")
            for n in notes:
                self._p(n)


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"{QUICK['rounds']} rounds of ~{QUICK['target_s'] * 1e3:g} ms "
                   f"(default {FULL['rounds']} rounds of ~{FULL['target_s'] * 1e3:g} ms)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="workload name, family, or glob (eager_*); repeatable or comma-separated")
    p.add_argument("--json", metavar="PATH", help="also write every measurement as JSON")
    p.add_argument("--impls", metavar="A,B",
                   help=f"implementations to run (default: all of {','.join(IMPLEMENTATIONS)} that import)")
    p.add_argument("--rounds", type=int, help="interleaved rounds")
    p.add_argument("--target-ms", type=float, help="duration of one measurement")
    p.add_argument("--no-subtract", action="store_true", help="keep the timing-loop overhead in the per-call times")
    p.add_argument("--no-check", action="store_true", help="skip comparing outputs with NumPy")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    a = p.parse_args(argv)

    workloads = select(a.only)
    if not workloads:
        print(f"no workload matches {a.only}; try --list", file=sys.stderr)
        return 2
    if a.list:
        for w in workloads:
            print(f"{w.name:22} {w.family:10} {w.description}")
        return 0
    impls = None
    if a.impls:
        impls = [i.strip() for i in a.impls.split(",") if i.strip()]
        bad = [i for i in impls if i not in IMPLEMENTATIONS]
        if bad or BASELINE not in impls:
            print(f"--impls must include {BASELINE!r} and name only {tuple(IMPLEMENTATIONS)}", file=sys.stderr)
            return 2
    rows = run(a.only, quick=a.quick, impls=impls, rounds=a.rounds, target_ms=a.target_ms,
               subtract_overhead=not a.no_subtract, check=not a.no_check, json_path=a.json)
    # correctness of ember's benchmarked code is worth a non-zero exit; speed never is
    bad = [r for r in rows if r.error or r.check.get("ember", "ok") != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
