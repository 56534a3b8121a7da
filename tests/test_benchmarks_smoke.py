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
    if w.reference != "numpy":
        pytest.skip(f"checked against {w.reference} by test_tutorials_suite")
    if "needs_torch" in w.tags:
        pytest.importorskip("torch")
    impls = w.setup(Env(("numpy", "ember", "ember_jit"), smoke=True))  # smoke: the large workloads shrink
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


# --------------------------------------------------------------------------- devices and the GPU suite

GPU_ROWS = {"per_sample_grads_mlp", "per_sample_grads_cnn", "per_sample_grads_mlp_large", "mlp_adam_step",
            "mlp_adam_first_call", "hessian_logistic_1000", "jit_elementwise_20_1m", "copy_1m"}


@pytest.fixture
def cpu_devices_restored():
    """`--device cpu:1` raises ember's CPU device count for the run; put it back for the tests after."""
    import ember

    n = ember.config.num_cpu_devices
    yield
    ember.config.update("num_cpu_devices", n)


def test_suite_selection_and_large_workloads():
    assert {w.name for w in brun.select(None, suite="gpu")} == GPU_ROWS
    assert {w.name for w in brun.select(["per_sample"], suite="gpu")} == {n for n in GPU_ROWS if "per_sample" in n}
    # a default run leaves out what is too large for the CPU; naming it, or its suite, runs it
    assert "per_sample_grads_mlp_large" not in {w.name for w in brun.select(None)}
    assert [w.name for w in brun.select(["per_sample_grads_mlp_large"])] == ["per_sample_grads_mlp_large"]


@pytest.mark.parametrize("device", ["cpu", "cpu:1"])
def test_gpu_suite_runs_on_a_cpu_device(device, tmp_path, capsys, cpu_devices_restored):
    """The command the GPU machine runs, on the CPU at smoke sizes: every GPU row is computed right, on the
    device asked for (cpu:1 puts ember's inputs there through ember.device_put, as cuda:0 would), and the
    Markdown + JSON report has every row, the device and the bandwidth lines."""
    md = tmp_path / "gpu.md"
    rc = brun.main(["--suite", "gpu", "--device", device, "--smoke", "--impls", "numpy,ember,ember_jit",
                    "--out", str(md)])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(md.with_suffix(".json").read_text())
    assert data["meta"]["device"] == device and data["meta"]["smoke"] is True
    rows = {r["name"]: r for r in data["rows"]}
    assert set(rows) == GPU_ROWS
    for name, r in rows.items():
        assert r["error"] is None and set(r["check"].values()) == {"ok"}, (name, r["check"])
        assert r["times"]["numpy"]["median"] > 0
    for name in ("jit_elementwise_20_1m", "copy_1m"):
        assert rows[name]["bytes_moved"] == 8 * 1000  # smoke: f32[1000] read and written
        assert rows[name]["gbps"]["numpy"] == pytest.approx(8e3 / rows[name]["times"]["numpy"]["median"] / 1e9)
    text = md.read_text()
    assert text.count("\n| ") == len(GPU_ROWS) + 1  # the header row, then one per workload
    assert "copy bandwidth of this run" in text and "x the copy bandwidth" in text
    if device == "cpu:1":
        assert "ember on cpu:1" in text and "numpy on host" in text


def test_untimed_numpy_is_still_the_reference(tmp_path, capsys, cpu_devices_restored):
    path = tmp_path / "r.json"
    rc = brun.main(["--only", "per_sample_grads_mlp", "--device", "cpu:1", "--smoke", "--impls", "ember,ember_jit",
                    "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "NumPy computes the reference of the check, untimed" in out
    (row,) = json.loads(path.read_text())["rows"]
    assert set(row["times"]) == {"ember", "ember_jit"} and row["check"] == dict.fromkeys(("numpy", "ember", "ember_jit"), "ok")


def test_result_off_the_device_is_a_mismatch(cpu_devices_restored):
    """A workload that makes its ember inputs without env.put runs on cpu:0: the runner says so."""
    from benchmarks.registry import Workload

    a = np.ones(3, np.float32)
    env = Env(("numpy", "ember"), device="cpu:1")
    w = Workload("fake", lambda env: {"numpy": lambda: a + a, "ember": lambda: env.enp.asarray(a) * 2})
    assert brun.check_impls(w, w.setup(env), env)["ember"] == "mismatch: result on cpu:0, not cpu:1"
    w = Workload("fake", lambda env: {"numpy": lambda: a + a, "ember": lambda: env.put("ember", a) * 2})
    assert brun.check_impls(w, w.setup(env), env) == {"numpy": "ok", "ember": "ok"}


def test_cuda_without_a_gpu_says_so(capsys):
    from ember import backends

    if backends.cuda_device_count() > 0:
        pytest.skip("this machine has a GPU")
    assert brun.main(["--suite", "gpu", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "--device cuda: ember finds 0 CUDA GPU(s) here" in err and "leave --device out" in err
    assert brun.main(["--device", "tpu"]) == 2
    assert "--device 'tpu': write cpu, cpu:N, cuda or cuda:N" in capsys.readouterr().err


# --------------------------------------------------------------------------- the tutorials suite (issue 18)

TUTORIALS = [name for name, w in WORKLOADS.items() if "tutorials" in w.tags]


@pytest.fixture
def torch_threads_restored():
    """The tutorials run torch single-threaded; give the tests after this one torch's thread count back."""
    try:
        import torch
    except ImportError:
        yield None
        return
    n = torch.get_num_threads()
    yield torch
    torch.set_num_threads(n)


def test_tutorials_suite(torch_threads_restored):
    """Every tutorial notebook's central computation, at smoke sizes: ember eager and jit agree with the
    reference (NumPy's, or torch.func's where there is no NumPy version); without torch, with each other and
    with NumPy where there is one. Then the runner's table: ratios to torch when NumPy is not timed."""
    assert len(TUTORIALS) >= 13 and "tut_maml_meta_grad" in TUTORIALS
    assert {w.name for w in brun.select(None, suite="tutorials")} == set(TUTORIALS)
    torch = torch_threads_restored
    for name in TUTORIALS:
        w = WORKLOADS[name]
        impls = w.setup(Env(("numpy", "ember", "ember_jit") + (("torch",) if torch else ()), smoke=True))
        assert {"ember", "ember_jit"} <= set(impls), (name, sorted(impls))
        if torch is not None:
            assert brun.check_impls(w, impls) == dict.fromkeys(impls, "ok"), name
            continue
        if w.reference == "numpy":
            assert brun.check_impls(w, impls) == dict.fromkeys(impls, "ok"), name
        msg = brun.compare(to_numpy(impls["ember"]()), to_numpy(impls["ember_jit"]()), rtol=w.rtol, atol=w.atol)
        assert msg is None, (name, msg)
    if torch is None:
        rows = brun.run(["tut_hvp_fwd_over_rev", "tut_bn_pe_grads"], smoke=True, impls=["ember"], out=None)
        assert [r.name for r in rows] == ["tut_hvp_fwd_over_rev"]  # the other needs torch, its reference
        return
    rows = brun.run(["tut_hvp_fwd_over_rev", "tut_bn_pe_grads"], smoke=True, impls=["ember", "ember_jit", "torch"],
                    out=None)  # fmt: skip
    for row in rows:
        assert row.error is None and set(row.check.values()) == {"ok"}, (row.name, row.check)
        assert row.reference == "torch" and set(row.ratios) == {"ember", "ember_jit"}
    # the NumPy reference of the HVP is checked though not timed; the batch-norm CNN's reference is torch, timed
    assert set(rows[0].check) == {"numpy", "ember", "ember_jit", "torch"} and "numpy" not in rows[0].times
    assert set(rows[1].check) == {"ember", "ember_jit", "torch"}


# --------------------------------------------------------------------------- issue 20: jit vs eager, --compare

JIT_EAGER_ROWS = ("per_sample_grads_mnist_cnn", "hessian_tanh_512_32")


def test_jit_vs_eager_rows_and_column(tmp_path, capsys, torch_threads_restored):
    """The two rows of issue 20 run, at smoke sizes, and agree with the hand-written NumPy (torch's version
    too, where installed); the table has the jit/eager column and its summary line; the JSON has the ratio on
    every row that times both ember and ember_jit."""
    path, md = tmp_path / "r.json", tmp_path / "r.md"
    rc = brun.main(["--only", ",".join(JIT_EAGER_ROWS), "--smoke", "--impls", "numpy,ember,ember_jit",
                    "--json", str(path), "--out", str(md)])
    out = capsys.readouterr().out
    assert rc == 0, out
    header = next(line for line in out.splitlines() if line.startswith("workload"))
    assert "jit/eager" in header
    assert "# jit <= eager within noise on all 2 rows" in out or "# jit slower than eager beyond noise on" in out
    rows = {r["name"]: r for r in json.loads(path.read_text())["rows"]}
    assert set(rows) == set(JIT_EAGER_ROWS)
    for name, r in rows.items():
        assert r["error"] is None and r["check"] == dict.fromkeys(("numpy", "ember", "ember_jit"), "ok"), name
        je = r["jit_eager"]
        assert set(je) == {"median", "min", "threshold", "slower"} and je["median"] > 0
        # one smoke round: no spread, so the threshold is the floor
        assert je["threshold"] == pytest.approx(1.05) and je["slower"] == (je["median"] > 1.05)
    text = md.read_text()
    assert "| jit/eager |" in text and "- jit " in text
    torch = torch_threads_restored
    if torch is None:
        return
    torch.set_num_threads(1)  # as the tutorials run it: a shared machine's busy core stalls torch's pool
    for name in JIT_EAGER_ROWS:
        w = WORKLOADS[name]
        impls = {k: f for k, f in w.setup(Env(("numpy", "torch"), smoke=True)).items() if k in ("numpy", "torch")}
        assert brun.check_impls(w, impls) == {"numpy": "ok", "torch": "ok"}, name


def test_jit_vs_eager_rule():
    def times(**rounds):
        return {k: {"rounds": v, "min": min(v), "median": float(np.median(v))} for k, v in rounds.items()}

    assert brun.jit_vs_eager(times(ember=[1.0], numpy=[1.0])) is None
    je = brun.jit_vs_eager(times(ember=[1.0, 1.0, 1.0], ember_jit=[2.0, 2.1, 1.9]))
    assert je["slower"] and je["median"] == pytest.approx(2.0) and je["min"] == pytest.approx(1.9)
    assert je["threshold"] == pytest.approx(1.1)  # ember_jit's own spread, (2.1 - 1.9) / 2.0, beats the 5% floor
    assert not brun.jit_vs_eager(times(ember=[1.0] * 3, ember_jit=[1.04] * 3))["slower"]  # within the floor
    assert brun.jit_vs_eager(times(ember=[1.0] * 3, ember_jit=[1.06] * 3))["slower"]
    # a noisy eager widens the threshold: 1.3x is within eager's 40% spread
    assert not brun.jit_vs_eager(times(ember=[0.8, 1.0, 1.2], ember_jit=[1.3, 1.3, 1.3]))["slower"]
    assert brun.jit_vs_eager(times(ember=[1.0] * 3, ember_jit=[1.06] * 3), floor=0.1)["slower"] is False


def test_compare_rule():
    from benchmarks.compare import compare_runs

    def run_of(**rows):
        return {"meta": {"smoke": False}, "rows": [
            {"name": name, "error": None, "times": {impl: {"median": float(np.median(r)), "rounds": r}
                                                   for impl, r in impls.items()}}
            for name, impls in rows.items()]}  # fmt: skip

    base = run_of(a={"numpy": [1.0] * 3, "ember": [1.0, 1.1, 0.9], "ember_jit": [1.0] * 3},
                  gone={"ember": [1.0]})  # fmt: skip
    new = run_of(a={"numpy": [3.0] * 3, "ember": [1.15] * 3, "ember_jit": [1.06] * 3, "torch": [1.0]},
                 added={"ember": [1.0]})  # fmt: skip
    cmp = compare_runs(base, new)
    a = cmp.changes["a"]
    assert a["ember"].ratio == pytest.approx(1.15) and a["ember"].threshold == pytest.approx(0.2)
    assert a["ember"].verdict == ""  # within the base run's own 20% spread
    assert a["ember_jit"].verdict == "regression"  # no spread: held to the 5% floor
    assert a["numpy"].verdict == ""  # a peer (and the baseline) is shown, never flagged
    assert [(row, c.impl) for row, c in cmp.regressions] == [("a", "ember_jit")]
    assert cmp.only_base == ["gone"] and cmp.only_new == ["added"]
    assert cmp.impls_one_side == {"torch (new only)": ["a"]}
    assert compare_runs(new, base).improvements[0][1].impl == "ember_jit"
    assert compare_runs(base, new, floor=0.1).regressions == []
    new["rows"][0]["error"] = "setup failed: boom"
    cmp = compare_runs(base, new)
    assert cmp.changes == {} and cmp.errors == {"a": "new: setup failed: boom"}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One --smoke --json run of two cheap rows (one with ember_jit), as a baseline file would be written."""
    path = tmp_path_factory.mktemp("bench") / "base.json"
    rc = brun.main(["--only", "eager_add,hessian_tanh_512_32", "--smoke", "--impls", "numpy,ember,ember_jit",
                    "--json", str(path)])
    assert rc == 0
    return path


def test_compare_two_smoke_runs(smoke_run, tmp_path, capsys):
    capsys.readouterr()
    assert brun.main(["--compare", str(smoke_run), str(smoke_run)]) == 0
    out = capsys.readouterr().out
    assert "no regression beyond noise" in out and "hessian_tanh_512_32" in out and "1.00x" in out

    # a second smoke run, of other rows in part: what is in one run only is listed, not an error
    other = tmp_path / "other.json"
    assert brun.main(["--only", "eager_add_1000,hessian_tanh_512_32", "--smoke", "--impls", "numpy,ember,ember_jit",
                      "--json", str(other)]) == 0
    capsys.readouterr()
    rc = brun.main(["--compare", str(smoke_run), str(other)])
    out = capsys.readouterr().out
    assert rc in (0, 3), out  # two real runs may differ beyond a single round's floor: that is not checked here
    assert any(line.startswith("hessian_tanh_512_32") for line in out.splitlines())
    assert f"only in {smoke_run} (1): eager_add\n" in out and f"only in {other} (1): eager_add_1000\n" in out

    # the synthetic regression: one row's ember 3x slower
    data = json.loads(smoke_run.read_text())
    row = next(r for r in data["rows"] if r["name"] == "hessian_tanh_512_32")
    t = row["times"]["ember"]
    t.update(median=3 * t["median"], min=3 * t["min"], rounds=[3 * x for x in t["rounds"]])
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(data))
    rc = brun.main(["--compare", str(smoke_run), str(slow)])
    out = capsys.readouterr().out
    assert rc == 3, out
    line = next(line for line in out.splitlines() if line.startswith("hessian_tanh_512_32"))
    assert "3.00x REGRESSED" in line and "REGRESSED" not in line.replace("3.00x REGRESSED", "")
    assert "# REGRESSIONS beyond noise (1): hessian_tanh_512_32 ember" in out
    assert next(line for line in out.splitlines() if line.startswith("eager_add")).count("1.00x") == 2
    # and the other way round it is an improvement, not a failure
    assert brun.main(["--compare", str(slow), str(smoke_run)]) == 0
    assert "improvements beyond noise (1): hessian_tanh_512_32 ember" in capsys.readouterr().out


def test_compare_after_a_run(smoke_run, capsys):
    """`--compare BASE.json` with one file runs the selection, then compares it with BASE.json."""
    capsys.readouterr()
    rc = brun.main(["--only", "hessian_tanh_512_32", "--smoke", "--impls", "numpy,ember,ember_jit",
                    "--compare", str(smoke_run)])
    out = capsys.readouterr().out
    assert rc in (0, 3), out
    assert f"this run against {smoke_run}" in out and f"only in {smoke_run} (1): eager_add" in out
    assert any(line.startswith("hessian_tanh_512_32") and "x" in line for line in out.splitlines()[-6:])


def test_compare_usage_errors(smoke_run, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert brun.main(["--compare", str(smoke_run), str(bad)]) == 2
    assert "not a benchmark run" in capsys.readouterr().err
    assert brun.main(["--compare", str(tmp_path / "missing.json")]) == 2
    assert brun.main(["--compare", str(smoke_run), str(smoke_run), str(smoke_run)]) == 2


def test_committed_baseline_is_comparable(smoke_run, capsys):
    """benchmarks/baseline.json, once the lead commits it (from a quiet full run), is a run --compare reads:
    compared with a smoke run, it says the sizes differ and lists the rows the smoke run did not have."""
    path = _ROOT / "benchmarks" / "baseline.json"
    if not path.exists():
        pytest.skip("no benchmarks/baseline.json yet (see benchmarks/README.md for the command that writes it)")
    capsys.readouterr()
    rc = brun.main(["--compare", str(path), str(smoke_run)])
    out = capsys.readouterr().out
    assert rc in (0, 3), out
    assert "the runs differ in smoke: False -> True" in out
    assert {r["name"] for r in json.loads(path.read_text())["rows"]} >= {"eager_add", *JIT_EAGER_ROWS}
