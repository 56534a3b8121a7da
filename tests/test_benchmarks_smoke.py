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
