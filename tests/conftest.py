"""pytest configuration: `-m full`, op-database cells selectable by family name, and the op database's
summary line after the tests (its entries x dtypes table with `--op-db-table` or EMBER_OP_DB_TABLE=1)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# ember drops its own frames from the tracebacks of errors it raises (ember/_traceback.py); a failing
# test of ember itself needs them, so the suite shows them unless EMBER_TRACEBACK_FILTERING is set.
os.environ.setdefault("EMBER_TRACEBACK_FILTERING", "off")


@pytest.fixture
def four_cpus():
    """Four CPU devices (``num_cpu_devices``) for a test; afterwards the previous count and no default device."""
    import ember  # here, not above: EMBER_TRACEBACK_FILTERING is set before ember is first imported

    before = ember.config.num_cpu_devices
    ember.config.update("num_cpu_devices", 4)
    yield
    ember.config.update("default_device", None)
    ember.config.update("num_cpu_devices", before)


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


def pytest_addoption(parser):
    parser.addoption("--op-db-table", action="store_true", default=False,
                     help="after the op-database tests, print its entries x dtypes table (also: EMBER_OP_DB_TABLE=1)")


# Column headers of the op-database table: NumPy's short spellings, so every column has its own name.
_SHORT = {"bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
          "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
          "complex64": "c64", "complex128": "c128"}  # fmt: skip


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not any("test_op_db" in str(arg) or arg in ("tests", "tests/") for arg in config.args) and config.args:
        return
    from op_db import ALL, OPS

    supported = sum(len(op.dtypes) for op in OPS)
    total = len(OPS) * len(ALL)
    write = terminalreporter.write_line
    write("")
    write(f"op database: {len(OPS)} entries x {len(ALL)} dtypes = {total} cells; "
          f"{supported} supported (checked against a reference), {total - supported} unsupported (checked to raise)")  # fmt: skip
    if not (config.getoption("--op-db-table") or os.environ.get("EMBER_OP_DB_TABLE", "") not in ("", "0")):
        write("  (pytest --op-db-table, or EMBER_OP_DB_TABLE=1, prints which entry supports which dtype)")
        return
    reasons: dict[str, str] = {}
    names = [_SHORT.get(d.name, d.name) for d in ALL]
    widths = [max(len(n), 2) for n in names]
    width = max(len(op.name) for op in OPS)
    lines = []
    for op in OPS:
        cells = []
        for dtype, w in zip(ALL, widths):
            if dtype in op.dtypes:
                cells.append(f"{'ok':>{w}s}")
            else:
                code = reasons.setdefault(op.unsupported, chr(ord("A") + len(reasons)))
                cells.append(f"{code:>{w}s}")
        lines.append(f"{op.name:<{width}s} {' '.join(cells)}")
    write(f"{'':<{width}s} {' '.join(f'{n:>{w}s}' for n, w in zip(names, widths))}")
    for line in lines:
        write(line)
    write("unsupported (checked to raise an ember error), by reason:")
    for reason, code in reasons.items():
        write(f"  {code}: {reason}")
