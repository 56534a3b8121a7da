"""examples/data_parallel.py (DP-SGD over MPI processes) runs, and several processes train as one does; the
README's section on scale runs as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpi_support import mpi_env, mpi_missing, needs_mpi

import ember

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "data_parallel.py"
QUICK_STEPS = 2 * (1438 // 128)  # --quick: 2 epochs of 11 full batches of the 1,438 training digits


def _run(tmp: Path, processes: int | None) -> tuple[str, dict, dict]:
    """Run the example with --quick (under ``mpirun -n processes``, or plainly for None); its stdout, the figures
    of its --json and the parameters of its --save."""
    saved, figures = tmp / "params.safetensors", tmp / "run.json"
    command = [sys.executable, str(EXAMPLE), "--quick", "--save", str(saved), "--json", str(figures)]
    if processes is not None:
        command = ["mpirun", "--oversubscribe", "-n", str(processes), *command]
    env = mpi_env(EMBER_COLLECTIVE_TIMEOUT="60", OMPI_MCA_rmaps_base_oversubscribe="1")
    run = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, f"{' '.join(command)}:\n{run.stdout}\n{run.stderr}"
    return run.stdout, json.loads(figures.read_text()), ember.load(saved)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("one"), None)


def test_one_process_trains_and_accounts(one_process):
    from ember import privacy

    out, figures, _ = one_process
    assert figures["processes"] == 1 and figures["steps"] == QUICK_STEPS
    accuracy = re.search(r"^test accuracy: ([\d.]+)%$", out, flags=re.MULTILINE)
    assert accuracy and float(accuracy.group(1)) > 30.0, out  # chance is 10%; two noisy epochs reach about 70%
    spent = re.search(rf"^privacy: \(epsilon, delta\) = \(([\d.]+), 1e-5\) after {QUICK_STEPS} steps at sampling rate "
                      r"0\.0890 and noise multiplier 1\.0$", out, flags=re.MULTILINE)  # fmt: skip
    assert spent, out
    accountant = privacy.RDPAccountant()  # composed step by step: another path than epsilon(steps, ...)
    accountant.step(noise_multiplier=1.0, sampling_rate=128 / 1438, steps=QUICK_STEPS)
    assert float(spent.group(1)) == round(accountant.epsilon(1e-5), 2)
    timing = re.search(r"^time per step \(median of \d+\): ([\d.]+) ms = ([\d.]+) ms compute \(([\d.]+) ms this "
                       r"process's clipped sum, ([\d.]+) ms noise and Adam, the same on every process\) \+ ([\d.]+) ms "
                       r"communication", out, flags=re.MULTILINE)  # fmt: skip
    assert timing, out
    step, compute, clipped, update, communication = map(float, timing.groups())
    assert clipped > 0 and update > 0
    assert abs(compute - clipped - update) <= 0.011 and abs(step - compute - communication) <= 0.011  # rounding
    assert "parameters identical on every process: largest difference 0" in out


def test_one_process_is_the_demos_run(one_process):
    """The example's split step (shard-local clipped sum, psum, then noise and Adam, three jitted calls) gives the
    demo's single jitted DP-SGD step run on the same batches and keys. Only the order of float32 operations may
    differ between the two programs: the tolerance is that of test_processes_train_as_one."""
    from ember import demo, optim

    _, _, saved = one_process
    key_split, key_init, key_train = ember.random.split(ember.random.key(0), 3)
    data = demo.split_data(key_split)
    params = demo.make_model(key_init)
    state = optim.adam(learning_rate=3e-3).init(params)
    for epoch in range(2):
        key_epoch = ember.random.fold_in(key_train, epoch)
        order = ember.random.permutation(key_epoch, 1438)
        for i in range(1438 // 128):
            idx = order[i * 128:(i + 1) * 128]
            params, state, _, _ = demo.jit_train_step(params, state, data.x_train[idx], data.y_train[idx],
                                                      ember.random.fold_in(key_epoch, i + 1), lr=3e-3, clip=1.0,
                                                      noise=1.0)  # fmt: skip
    for got, want in zip(ember.tree.leaves(saved), ember.tree.leaves(params), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-5)


@needs_mpi
def test_processes_train_as_one(one_process, tmp_path):
    """Two processes, each with half of every batch, end with the parameters and test accuracy of one process
    on the whole batch, and identical parameters on both.

    Tolerance: the two runs differ only in the order of float32 additions (two sums of 64 clipped gradients
    added by the psum, against one sum of 128), a relative difference of a few float32 epsilons (~1e-7) in
    each step's gradient sum. Adam divides by the root of its second moment, which the noise (std 1 per
    coordinate of the sum) keeps from being small, so each step moves the parameters differently by at most
    about lr * 1e-6 = 3e-9; over 22 steps that stays far below 1e-5 (measured: about 1e-7), while a wrong
    split (an example lost or counted twice, the noise added on each process) moves them by more than 1e-3.
    """
    one_out, one, one_params = one_process
    two_out, two, two_params = _run(tmp_path, 2)
    assert two["processes"] == 2 and two["steps"] == one["steps"]
    assert "DP-SGD on 2 processes" in two_out and "(64 per process)" in two_out
    assert two["max_param_spread"] == 0.0  # the same noise and the same step on both processes
    for got, want in zip(ember.tree.leaves(two_params), ember.tree.leaves(one_params), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-5)
    assert two["test_accuracy"] == one["test_accuracy"]
    assert two["epsilon"] == one["epsilon"]  # the privacy spent does not depend on how the batch is split


def _readme_section_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Scale: memory budgets, DP-SGD, several processes", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", section, flags=re.DOTALL | re.MULTILINE)


def test_readme_scale_section_runs(tmp_path):
    """The README's section on scale: its Python blocks run, in order, as written, in a fresh process (the
    block meant for mpirun then runs as one process: ember.distributed.initialize binds the name to it alone)."""
    blocks = _readme_section_blocks()
    assert len(blocks) >= 3, "the section shows memory budgets, DP-SGD and several processes"
    if mpi_missing() is not None:
        blocks = [b for b in blocks if "ember.distributed" not in b]
    code = "\n".join(blocks)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, f"{code}\n{run.stdout}\n{run.stderr}"
