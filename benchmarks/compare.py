"""Compare a run with a saved one: ``python -m benchmarks.run --compare BASE.json [NEW.json]``.

Each row's change is new median / base median per implementation. A change is
beyond noise when it exceeds 1 + the larger per-round spread (max - min) / median
of the two runs' measurements of that row and implementation, and at least
1 + the floor (``--noise-floor``, 5 %): a noisy run widens its own threshold, a
single-round run (``--smoke``) is held to the floor. Only ember's columns
(``ember``, ``ember_jit``) are flagged — a regression is ember getting slower;
the peers' changes are shown beside them, since a machine that is slower
everywhere shows as every column rising. Rows or implementations present in one
run only, and rows that failed in either, are listed, not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from benchmarks.registry import IMPLEMENTATIONS
from benchmarks.timing import NOISE_FLOOR, noise_threshold

#: The implementations whose slowdown is a regression; the others are shown, never flagged.
GUARDED = ("ember", "ember_jit")
#: Exit status of ``--compare`` when a regression is flagged (1 stays "an ember result was wrong", 2 a usage error).
REGRESSION_EXIT = 3
#: The run settings that make two runs' times incomparable, or less comparable, when they differ.
_META_KEYS = ("smoke", "quick", "device", "rounds", "target_ms", "subtract_overhead", "cpu_count", "platform",
              "python", "versions")  # fmt: skip


@dataclass
class Change:
    """One row's one implementation in both runs: medians in seconds, and the noise threshold (a fraction)."""

    impl: str
    base: float
    new: float
    threshold: float

    @property
    def ratio(self) -> float:
        """new / base: above 1, slower now."""
        return self.new / self.base if self.base > 0 else float("inf")

    @property
    def verdict(self) -> str:
        """"regression" or "improvement" beyond noise for ember's implementations; "" otherwise."""
        if self.impl not in GUARDED:
            return ""
        if self.ratio > 1 + self.threshold:
            return "regression"
        if self.ratio * (1 + self.threshold) < 1:
            return "improvement"
        return ""


@dataclass
class Comparison:
    """Two runs side by side: ``changes[row][impl]`` for what both timed, and what could not be compared."""

    base_meta: dict[str, Any]
    new_meta: dict[str, Any]
    floor: float
    changes: dict[str, dict[str, Change]] = field(default_factory=dict)
    only_base: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    #: row -> why it is not compared (failed in one run or both)
    errors: dict[str, str] = field(default_factory=dict)
    #: "impl (base only)" / "impl (new only)" -> the rows where that implementation is timed in one run only
    impls_one_side: dict[str, list[str]] = field(default_factory=dict)

    @property
    def regressions(self) -> list[tuple[str, Change]]:
        return [(row, c) for row, cs in self.changes.items() for c in cs.values() if c.verdict == "regression"]

    @property
    def improvements(self) -> list[tuple[str, Change]]:
        return [(row, c) for row, cs in self.changes.items() for c in cs.values() if c.verdict == "improvement"]

    def meta_differences(self) -> list[str]:
        """The settings that differ between the runs, as ``key: base -> new`` (versions: of the packages both
        runs have; a peer left out of one run is not a difference of the machine)."""
        out = []
        for k in _META_KEYS:
            a, b = self.base_meta.get(k), self.new_meta.get(k)
            if k == "versions" and isinstance(a, dict) and isinstance(b, dict):
                out += [f"{pkg} {a[pkg]} -> {b[pkg]}" for pkg in a if pkg in b and a[pkg] != b[pkg]]
            elif a != b:
                out.append(f"{k}: {a} -> {b}")
        return out


def load_run(path: str) -> dict[str, Any]:
    """A run as ``--json`` wrote it; ValueError when the file is not one."""
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{path}: not a benchmark run written by --json (no 'rows' list)")
    return data


def compare_runs(base: dict[str, Any], new: dict[str, Any], floor: float = NOISE_FLOOR) -> Comparison:
    """Compare two runs (``{"meta": ..., "rows": [...]}`` as ``--json`` writes them), row by row, in the new
    run's order. See the module docstring for the rule."""
    cmp = Comparison(base.get("meta", {}), new.get("meta", {}), floor)
    old_rows = {r["name"]: r for r in base["rows"]}
    new_rows = {r["name"]: r for r in new["rows"]}
    cmp.only_base = [n for n in old_rows if n not in new_rows]
    cmp.only_new = [n for n in new_rows if n not in old_rows]
    for name, r in new_rows.items():
        o = old_rows.get(name)
        if o is None:
            continue
        failed = [f"{side}: {row['error']}" for side, row in (("base", o), ("new", r)) if row.get("error")]
        if failed:
            cmp.errors[name] = "; ".join(failed)
            continue
        ot, nt = o.get("times", {}), r.get("times", {})
        for which in [f"{i} (base only)" for i in ot if i not in nt] + [f"{i} (new only)" for i in nt if i not in ot]:
            cmp.impls_one_side.setdefault(which, []).append(name)
        cmp.changes[name] = {
            i: Change(i, ot[i]["median"], nt[i]["median"],
                      noise_threshold(ot[i].get("rounds", []), nt[i].get("rounds", []), floor=floor))
            for i in nt if i in ot
        }  # fmt: skip
    return cmp


def _cell(c: Change | None) -> str:
    if c is None:
        return "-"
    flag = {"regression": " REGRESSED", "improvement": " better"}.get(c.verdict, "")
    return f"{c.ratio:.2f}x{flag}"


def _fmt_s(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _described(row: str, c: Change) -> str:
    return f"{row} {c.impl} {_fmt_s(c.base)} -> {_fmt_s(c.new)} ({c.ratio:.2f}x; noise {1 + c.threshold:.2f}x)"


def report_lines(cmp: Comparison, base_name: str = "BASE", new_name: str = "this run") -> list[str]:
    """The comparison as text: a header, one line per row compared (new/base per implementation), and the
    summary lines (regressions, improvements, rows in one run only, failures, differing settings). Lines that
    are not table rows start with "# "."""
    impls = [i for i in IMPLEMENTATIONS if any(i in cs for cs in cmp.changes.values())]
    when = cmp.base_meta.get("when", "?")
    lines = [(f"# {new_name} against {base_name} ({when}): new/base median per call, lower is better; flagged on "
              f"{', '.join(GUARDED)} beyond noise: max({cmp.floor:.0%}, each run's per-round (max-min)/median)")]
    if diffs := cmp.meta_differences():
        lines.append(f"# the runs differ in {'; '.join(diffs)}")
        if any(d.startswith(("smoke:", "device:")) for d in diffs):
            lines.append("# (different sizes or devices: the changes below compare different work)")
    widths = [26] + [15] * len(impls)
    lines.append("  ".join(h.ljust(w) if k == 0 else h.rjust(w)
                           for k, (h, w) in enumerate(zip(["workload", *impls], widths))).rstrip())  # fmt: skip
    lines.append("  ".join("-" * w for w in widths))
    for name, cs in cmp.changes.items():
        cells = [name.ljust(widths[0])] + [_cell(cs.get(i)).rjust(w) for i, w in zip(impls, widths[1:])]
        lines.append("  ".join(cells).rstrip())
    regs, imps = cmp.regressions, cmp.improvements
    if regs:
        lines.append(f"# REGRESSIONS beyond noise ({len(regs)}): " + "; ".join(_described(r, c) for r, c in regs))
    else:
        lines.append(f"# no regression beyond noise on {', '.join(GUARDED)} in {len(cmp.changes)} rows compared")
    if imps:
        lines.append(f"# improvements beyond noise ({len(imps)}): " + "; ".join(_described(r, c) for r, c in imps))
    if cmp.only_base:
        lines.append(f"# only in {base_name} ({len(cmp.only_base)}): {', '.join(cmp.only_base)}")
    if cmp.only_new:
        lines.append(f"# only in {new_name} ({len(cmp.only_new)}): {', '.join(cmp.only_new)}")
    for name, why in cmp.errors.items():
        lines.append(f"# not compared, {name}: {why}")
    for which, names in cmp.impls_one_side.items():
        lines.append(f"# timed in one run only, {which}, on {len(names)} rows: {', '.join(names)}")
    return lines
