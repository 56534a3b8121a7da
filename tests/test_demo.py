"""`python -m ember.demo` (the README's main job) runs, learns and reports; the library stays free of its extras."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parent.parent


def test_bundled_digits():
    from ember.demo import load_digits

    images, labels = load_digits()
    assert images.shape == (1797, 64) and images.dtype == np.float32
    assert images.min() == 0.0 and images.max() == 1.0
    assert labels.shape == (1797,)
    assert np.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_quick_demo(tmp_path):
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    figure = tmp_path / "figures" / "demo.png"
    run = subprocess.run([sys.executable, "-m", "ember.demo", "--quick", "--out", str(figure)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    out = run.stdout

    accuracy = re.search(r"^test accuracy: ([\d.]+)%", out, flags=re.MULTILINE)
    assert accuracy, out
    assert float(accuracy.group(1)) > 30.0, out  # chance is 10%; two noisy epochs reach about 60%

    timing = re.search(r"^time per step \(batch \d+\): ([\d.]+) ms with jit\(vmap\(grad\)\), ([\d.]+) ms with "
                       r"vmap\(grad\) without jit, ([\d.]+) ms with a Python loop of grad over the examples: "
                       r"([\d.]+)x speedup", out, flags=re.MULTILINE)
    assert timing, out
    assert all(float(v) > 0 for v in timing.groups())
    assert re.search(r"^first call of the jitted step \(trace \+ compile \+ run\): \d+ ms$", out, flags=re.MULTILINE), out

    assert f"figure saved to {figure.resolve()}" in out
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "ember_demo.png").exists()
    assert "epoch 2/2" in run.stderr  # the progress bar
    assert "has no batching rule" not in run.stderr  # vmap(grad) of the MLP runs batched, no Python-loop fallback


def test_library_does_not_import_demo_extras():
    # Every module of ember but the demo itself: none may pull in tqdm or matplotlib.
    code = (
        "import importlib, pkgutil, sys, ember\n"
        "for m in pkgutil.walk_packages(ember.__path__, 'ember.'):\n"
        "    if m.name != 'ember.demo':\n"
        "        importlib.import_module(m.name)\n"
        "import ember.demo\n"  # the demo imports them only when it runs
        "loaded = sorted(n for n in ('tqdm', 'matplotlib') if n in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr


def test_resume_continues_the_same_run(tmp_path):
    """Stopping after one epoch with --save and going on with --resume gives, bit for bit, the model of a run
    that never stopped (the checkpoint holds the model, Adam's state, the key and the epoch)."""
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    import ember
    from ember import demo

    straight = demo.main(["--quick", "--epochs", "2", "--out", str(tmp_path / "a.png")])
    checkpoint = tmp_path / "run.safetensors"
    demo.main(["--quick", "--epochs", "1", "--save", str(checkpoint), "--out", str(tmp_path / "b.png")])
    resumed = demo.main(["--quick", "--epochs", "2", "--resume", str(checkpoint), "--out", str(tmp_path / "c.png")])
    for a, b in zip(ember.tree.leaves(straight["model"]), ember.tree.leaves(resumed["model"]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert resumed["test_accuracy"] == straight["test_accuracy"]
    with pytest.raises(SystemExit, match="--seed 0"):
        demo.main(["--quick", "--epochs", "2", "--seed", "1", "--resume", str(checkpoint)])
