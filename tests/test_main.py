"""`python -m ember`, the environment report: every device, and for a GPU its name, memory, compute capability
and the CuPy / CUDA versions, or why there is none. The GPU lines are checked with a stand-in for CuPy's
runtime API (this machine has no GPU); the real CuPy path runs in the subprocess where CuPy is installed."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import ember
import ember.__main__ as report

ROOT = Path(__file__).parent.parent


def _cupy_state() -> str:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "missing"
    return "gpu" if ember.backends.cuda_device_count() else "no-gpu"


def test_python_m_ember_reports_every_device():
    env = {**os.environ, "EMBER_NUM_CPU_DEVICES": "2", "PYTHONPATH": str(ROOT)}
    env.pop("EMBER_PLATFORM", None)
    done = subprocess.run([sys.executable, "-m", "ember"], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for line in ("default device: cpu:0", "cpu:0   the host, NumPy", "cpu:1   the host, NumPy",
                 "2 CPU devices (EMBER_NUM_CPU_DEVICES=n makes n)", "eager cost per call"):  # fmt: skip
        assert line in out, f"{line!r} is not in the report:\n{out}"
    state = _cupy_state()
    if state == "missing":
        assert "cuda    none: CuPy is not installed; pip install 'ember[cuda]'" in out, out
    elif state == "no-gpu":
        assert "cuda    none: CuPy finds no GPU" in out and "CUDA runtime" in out, out
    else:
        assert "cuda:0  " in out and "compute capability" in out and "GiB free" in out, out


def _fake_cupy(count=1, fail_count=None, fail_mem=None, runtime_version=13000, driver_version=13020):
    """A stand-in for the few CuPy calls the report makes (cupy.cuda.runtime, cupy.cuda.Device)."""

    def get_count():
        if fail_count:
            raise RuntimeError(fail_count)
        return count

    def mem_info():
        if fail_mem:
            raise RuntimeError(fail_mem)
        return 60 * 2**30, 80 * 2**30

    def properties(i):
        return {"name": f"NVIDIA H100 80GB HBM3 #{i}".encode(), "totalGlobalMem": 80 * 2**30, "major": 9, "minor": 0}

    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    runtime = SimpleNamespace(getDeviceCount=get_count, getDeviceProperties=properties, memGetInfo=mem_info,
                              runtimeGetVersion=lambda: runtime_version,
                              driverGetVersion=lambda: driver_version)  # fmt: skip
    return SimpleNamespace(__version__="14.2.0", cuda=SimpleNamespace(runtime=runtime, Device=Device))


def test_gpu_lines_name_memory_capability_and_versions():
    assert report.cuda_report(_fake_cupy(count=2)) == [
        "cuda:0  NVIDIA H100 80GB HBM3 #0: compute capability 9.0, 80.0 GiB total, 60.0 GiB free",
        "cuda:1  NVIDIA H100 80GB HBM3 #1: compute capability 9.0, 80.0 GiB total, 60.0 GiB free",
        "CuPy 14.2.0, CUDA runtime 13.0, driver 13.2",
    ]


def test_gpu_line_without_free_memory_still_names_the_gpu():
    lines = report.cuda_report(_fake_cupy(fail_mem="cudaErrorDevicesUnavailable"))
    assert lines[0] == ("cuda:0  NVIDIA H100 80GB HBM3 #0: compute capability 9.0, 80.0 GiB total "
                        "(free memory unknown: cudaErrorDevicesUnavailable)")  # fmt: skip


@pytest.mark.parametrize("fake, reason", [
    (dict(count=0), "CuPy finds no GPU; CuPy 14.2.0, CUDA runtime 13.0, driver 13.2"),
    (dict(fail_count="cudaErrorInsufficientDriver: CUDA driver version is insufficient", driver_version=0),
     "CuPy finds no GPU (cudaErrorInsufficientDriver: CUDA driver version is insufficient); "
     "CuPy 14.2.0, CUDA runtime 13.0, driver none"),
])  # fmt: skip
def test_no_gpu_says_why(fake, reason):
    assert report.cuda_report(_fake_cupy(**fake)) == [f"cuda    none: {reason}"]


def test_no_cupy_gives_the_install_command():
    assert report.cuda_report(None) == [f"cuda    none: CuPy is not installed; {report.INSTALL_CUDA}"]
    assert report.INSTALL_CUDA.startswith("pip install 'ember[cuda]'")


def test_device_report_lists_each_cpu_device():
    before = ember.config.num_cpu_devices
    ember.config.update("num_cpu_devices", 3)
    try:
        lines = report.device_report(None)
    finally:
        ember.config.update("num_cpu_devices", before)
    assert lines[0] == "default device: cpu:0"
    assert [line.split()[0] for line in lines[1:4]] == ["cpu:0", "cpu:1", "cpu:2"]
    assert lines[4] == "3 CPU devices (EMBER_NUM_CPU_DEVICES=n makes n)"
    assert lines[5].startswith("cuda    none: CuPy is not installed")


def test_docstring_examples():
    # (tests/test_doctests.py leaves ember.__main__ out: its entry point would run on import)
    results = doctest.testmod(report, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert results.attempted >= 3 and results.failed == 0, results
