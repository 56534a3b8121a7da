"""Data-parallel scaling of DP-SGD: ``examples/data_parallel.py`` on 1, 2 and 4 MPI processes.

    PYTHONPATH=. python benchmarks/data_parallel_scaling.py [--processes 1,2,4] [--batch-sizes 128,1024]

For each batch size and process count, runs the example under ``mpirun -n N --oversubscribe`` for about
``--steps`` steps and prints rank 0's median time per step, split into compute (this process's share of
the ghost-clipped gradient sum, which shrinks with more processes, then the noise and the Adam step, which every
process repeats on the whole gradient) and communication (the ``psum`` of the
processes' sums: MPI's allreduce of the 26,122 float32 gradients, plus the time spent waiting for the
slowest process), the speedup over one process, and whether the parameters stayed identical across
processes. Every run has one BLAS thread per process (``OPENBLAS_NUM_THREADS=1``, one process included),
so the processes, not BLAS's threads, share the cores; more processes than cores time-share them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "data_parallel.py"
N_TRAIN = 1438  # the training split of the 1,797 digits


def run(processes: int, batch_size: int, steps: int) -> dict:
    epochs = math.ceil(steps / (N_TRAIN // batch_size))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        command = ["mpirun", "--oversubscribe", "-n", str(processes), sys.executable, str(EXAMPLE),
                   "--epochs", str(epochs), "--batch-size", str(batch_size), "--json", str(out)]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--batch-sizes", default="128,1024")
    parser.add_argument("--steps", type=int, default=40, help="about this many steps per run (whole epochs)")
    args = parser.parse_args(argv)
    if shutil.which("mpirun") is None:
        raise SystemExit("mpirun is not on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)")
    print(f"DP-SGD of the demo MLP (examples/data_parallel.py), {os.cpu_count()} cpus, one BLAS thread per process; "
          "rank 0's median per step")
    print(f"{'batch':>6} {'processes':>9} {'per process':>11} {'step':>9} {'compute':>9} {'(clipped sum':>12} "
          f"{'+ update)':>10} {'communication':>13} {'speedup':>8} {'accuracy':>8} {'in step':>7}")
    for batch in map(int, args.batch_sizes.split(",")):
        base = None
        for n in map(int, args.processes.split(",")):
            r = run(n, batch, args.steps)
            step = r["compute_ms"] + r["communicate_ms"]
            base = base or step
            print(f"{batch:>6} {n:>9} {batch // n:>11} {step:>6.2f} ms {r['compute_ms']:>6.2f} ms "
                  f"{r['gradient_ms']:>9.2f} ms {r['update_ms']:>7.2f} ms {r['communicate_ms']:>10.2f} ms {base / step:>7.2f}x {r['test_accuracy']:>8.1%} "
                  f"{'yes' if r['max_param_spread'] == 0 else 'NO':>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
