"""pytest configuration: the op database's entries x dtypes matrix in the summary."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    # `pytest -m full` means "everything, the extended tier included"; a plain
    # run leaves out the tests marked full.
    config._ember_full = config.option.markexpr == "full"
    if config._ember_full:
        config.option.markexpr = ""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Op-database cells answer to their family's name too (`pytest -k collective`), before -k selects.
    for item in items:
        callspec = getattr(item, "callspec", None)
        for value in callspec.params.values() if callspec is not None else ():
            for part in value if isinstance(value, tuple) else (value,):
                family = getattr(part, "family", "")
                if isinstance(family, str) and family:
                    item.extra_keyword_matches.add(family)
    if config._ember_full:
        return
    kept = [item for item in items if item.get_closest_marker("full") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("full") is not None])
        items[:] = kept


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not any("test_op_db" in str(arg) or arg in ("tests", "tests/") for arg in config.args) and config.args:
        return
    from op_db import ALL, OPS

    reasons: dict[str, str] = {}
    lines = []
    width = max(len(op.name) for op in OPS)
    header = " ".join(f"{d.name[:4]:>4s}" for d in ALL)
    for op in OPS:
        cells = []
        for dtype in ALL:
            if dtype in op.dtypes:
                cells.append("  ok")
            else:
                code = reasons.setdefault(op.unsupported, chr(ord("A") + len(reasons)))
                cells.append(f"{code:>4s}")
        lines.append(f"{op.name:<{width}s} {' '.join(cells)}")
    supported = sum(len(op.dtypes) for op in OPS)
    total = len(OPS) * len(ALL)
    write = terminalreporter.write_line
    write("")
    write(f"op database: {len(OPS)} entries x {len(ALL)} dtypes = {total} cells; "
          f"{supported} supported (checked against a reference), {total - supported} unsupported (checked to raise)")  # fmt: skip
    write(f"{'':<{width}s} {header}")
    for line in lines:
        write(line)
    for reason, code in reasons.items():
        write(f"  {code}: {reason}")
