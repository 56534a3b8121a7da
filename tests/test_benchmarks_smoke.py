"""Smoke test of benchmarks/: the runner runs, and every workload's ember code
computes what its hand-written NumPy baseline computes. Correctness only: no
assertion here is about speed."""

import json
import pathlib
import sys

import numpy as np
import pytest

_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `benchmarks` is a top-level package of the checkout, not installed
    sys.path.insert(0, str(_ROOT))

from benchmarks import run as brun
from benchmarks.registry import Env, load_all, to_numpy

WORKLOADS = load_all()


def test_quick_run_produces_a_row(tmp_path, capsys):
    path = tmp_path / "bench.json"
    rc = brun.main(["--quick", "--only", "eager_add", "--impls", "numpy,ember", "--rounds", "2", "--target-ms", "2",
                    "--json", str(path)])
    table = capsys.readouterr().out
    assert rc == 0, table
    assert "eager_add" in table and "ember/np" in table
    rows = json.loads(path.read_text())["rows"]
    assert [r["name"] for r in rows] == ["eager_add"]
    row = rows[0]
    assert row["error"] is None and row["check"] == {"numpy": "ok", "ember": "ok"}
    for impl in ("numpy", "ember"):
        t = row["times"][impl]
        assert t["n"] >= 1 and len(t["rounds"]) == 2
        assert t["median"] > 0 and t["min"] > 0 and all(x > 0 for x in t["rounds"])
    assert row["ratios"]["ember"]["median"] > 0 and row["ratios"]["ember"]["min"] > 0


def test_selection():
    names = [w.name for w in brun.select(["eager_add"])]
    assert names == ["eager_add"]
    assert {w.name for w in brun.select(["eager_add*"])} == {"eager_add", "eager_add_1000"}
    assert len(brun.select(["eager"])) == sum(w.family == "eager" for w in WORKLOADS.values())
    assert brun.select(["no_such_workload"]) == []


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_ember_output_matches_numpy(name):
    w = WORKLOADS[name]
    if "needs_torch" in w.tags:
        pytest.importorskip("torch")
    impls = w.setup(Env(("numpy", "ember", "ember_jit")))
    embers = sorted(set(impls) - {"numpy"})
    assert "numpy" in impls and embers and set(embers) <= {"ember", "ember_jit"}, sorted(impls)
    expected = to_numpy(impls["numpy"]())
    for impl in embers:
        got = to_numpy(impls[impl]())
        for e, g in zip(*(x if isinstance(x, (tuple, list)) else [x] for x in (expected, got)), strict=True):
            e, g = np.asarray(e), np.asarray(g)
            assert g.shape == e.shape and g.dtype == e.dtype, (impl, g.shape, g.dtype, e.shape, e.dtype)
            np.testing.assert_allclose(g, e, rtol=w.rtol, atol=w.atol, err_msg=impl)
    # and the runner's own check agrees
    assert brun.check_impls(w, impls) == dict.fromkeys(impls, "ok")


def test_wrong_or_raising_implementation_is_reported_not_timed():
    from benchmarks.registry import Workload

    def boom():
        raise NotImplementedError("no kernel")

    a = np.ones(3, np.float32)
    w = Workload("fake", lambda env: {"numpy": lambda: a + a, "ember": boom})
    row = brun.run_workload(w, Env(("numpy", "ember")), rounds=1, target_s=0.001)
    assert row.check["ember"].startswith("error: NotImplementedError") and "ember" not in row.times
    assert row.times["numpy"]["median"] > 0

    w = Workload("fake2", lambda env: {"numpy": lambda: a + a, "ember": lambda: a + 1.5})
    assert brun.check_impls(w, w.setup(None))["ember"].startswith("mismatch: values differ")
    w = Workload("fake3", lambda env: {"numpy": lambda: a + a, "ember": lambda: (a + a).astype(np.float64)})
    assert brun.check_impls(w, w.setup(None))["ember"] == "mismatch: dtype float64 != float32"
