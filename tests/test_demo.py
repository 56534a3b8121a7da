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

    spent = re.search(r"^privacy: \(epsilon, delta\) = \(([\d.]+), 1e-5\) after (\d+) steps at sampling rate "
                      r"([\d.]+) and noise multiplier 1\.0$", out, flags=re.MULTILINE)
    assert spent, out
    steps, rate = int(spent.group(2)), float(spent.group(3))
    assert steps == 2 * (1438 // 128) and rate == round(128 / 1438, 4)  # 2 epochs of 11 full batches
    # the accountant step by step (another path through the RDP composition) gives the printed epsilon
    from ember import privacy

    accountant = privacy.RDPAccountant()
    for _ in range(steps):
        accountant.step(noise_multiplier=1.0, sampling_rate=128 / 1438)
    assert float(spent.group(1)) == round(accountant.epsilon(1e-5), 2), out

    timing = re.search(r"^time per step \(batch \d+\): ([\d.]+) ms with clipped_grad \(ghost norms\), ([\d.]+) ms "
                       r"with jit\(vmap\(grad\)\) \+ clipping \(materialised\), ([\d.]+) ms with a Python loop of grad "
                       r"over the examples: ([\d.]+)x speedup", out, flags=re.MULTILINE)
    assert timing, out
    assert all(float(v) > 0 for v in timing.groups())
    alone = re.search(r"^  the clipped gradient sum alone: ([\d.]+) ms with ghost norms, ([\d.]+) ms materialised, "
                      r"([\d.]+) ms with the loop: ([\d.]+)x speedup$", out, flags=re.MULTILINE)
    assert alone and all(float(v) > 0 for v in alone.groups()), out
    first_call = r"^first call of the jitted step \(trace \+ compile \+ run\): \d+ ms$"
    assert re.search(first_call, out, flags=re.MULTILINE), out

    assert f"figure saved to {figure.resolve()}" in out
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "ember_demo.png").exists()
    assert "epoch 2/2" in run.stderr  # the progress bar
    assert "has no batching rule" not in run.stderr  # vmap(grad) of the MLP runs batched, no Python-loop fallback


def test_three_clippings_agree():
    """The demo's clipped gradient sum by ghost norms (ember.privacy.clipped_grad, under jit), by materialised
    vmap(grad) and by a Python loop of grad agree; the norms and the clipped sum are checked in NumPy against
    the loop's per-example gradients."""
    import ember
    from ember import demo

    data = demo.split_data(ember.random.key(3))
    params = demo.make_model(ember.random.key(4))
    x, y = data.x_train[:8], data.y_train[:8]
    clip = 2.9
    one = ember.grad(demo.loss)
    per_example = [[np.asarray(g, np.float64) for g in ember.tree.leaves(one(params, x[i], y[i]))] for i in range(8)]
    norms = np.array([np.sqrt(sum(np.sum(g * g) for g in grads)) for grads in per_example])
    assert norms.min() < clip < norms.max()  # some examples are clipped, some are not
    scale = np.minimum(1.0, clip / norms)
    expected = [sum(scale[i] * per_example[i][k] for i in range(8)) for k in range(len(per_example[0]))]
    ghost = ember.jit(demo.clipped_sum, static_argnames="clip")
    for clipped_sum in (ghost, demo.materialised_clipped_sum, demo.looped_clipped_sum):
        grads, got_norms = clipped_sum(params, x, y, clip=clip)
        np.testing.assert_allclose(np.asarray(got_norms), norms, rtol=1e-5)
        for got, want in zip(ember.tree.leaves(grads), expected, strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-6)  # float32 sums of 8 terms


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
