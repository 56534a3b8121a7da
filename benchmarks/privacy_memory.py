"""Peak memory (and time) of DP-SGD's per-example clipped gradients, each implementation alone in a child process.

The rows of ``benchmarks/workloads/privacy.py`` (the demo's MLP at batch 1024, the small CNN at batch 256),
computed by every implementation of `privacy.IMPLS`: ember's ``clipped_grad`` (ghost norms) jitted and
eager, ember's materialised ``jit(vmap(grad))`` + clipping, NumPy by hand, ``torch.func`` and Opacus'
ghost clipping (when it imports). The harness has no memory column, hence this script:

    PYTHONPATH=. python benchmarks/privacy_memory.py [--calls 5] [--models mlp,cnn]

Each child builds its inputs, then reads its peak resident set size (VmHWM, else ``ru_maxrss``: imports and inputs),
calls the implementation ``--calls`` times and reads the peak again. The table shows the difference —
the extra memory one call needs at its peak, tracing and compiling included (the first call) — next to
the size of the per-example gradients a materialising implementation holds, and the median time of the
calls after the first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _peak_mb() -> float:
    """This process's peak resident set size: VmHWM on Linux, else ru_maxrss.

    ru_maxrss would do, but Linux carries the parent's high-water mark at fork into a child's ru_maxrss
    (through exec): a child that stays below its parent's size would read the parent's peak. VmHWM belongs
    to the process's own address space, new at exec.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    scale = 1 if sys.platform != "darwin" else 1024  # kilobytes on Linux, bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / scale


def child(name: str, model: str, calls: int) -> dict:
    from benchmarks.workloads import privacy

    kind, build = privacy.IMPLS[name]
    torch = None
    if kind in ("torch", "opacus"):
        import torch
    fn = build(torch, model, False)
    before = _peak_mb()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"before_mb": before, "peak_mb": _peak_mb(), "first_ms": 1e3 * times[0],
            "ms": 1e3 * statistics.median(times[1:] or times)}


def per_example_mb(model: str) -> float:
    """The bytes of every example's gradient of every parameter (float32), as materialising holds them."""
    from benchmarks.workloads import privacy

    params, x, _ = privacy.problem(model)
    return 4 * x.shape[0] * sum(p.size for p in params) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5, help="calls per implementation (default 5)")
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--child", nargs=2, metavar=("IMPL", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.child:
        print(json.dumps(child(*args.child, args.calls)))
        return 0

    from benchmarks.workloads import privacy

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    print(f"peak resident memory of one implementation per process (VmHWM), {args.calls} calls each; "
          f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    print(f"{'model':<22} {'implementation':<36} {'extra peak':>11} {'total peak':>11} {'first call':>11} "
          f"{'per call':>10}")
    for model in args.models.split(","):
        label = f"{model} b{privacy.MLP_BATCH if model == 'mlp' else privacy.CNN_BATCH}"
        print(f"{label:<22} (every per-example gradient: {per_example_mb(model):.1f} MB in float32)")
        for name, (kind, _) in privacy.IMPLS.items():
            if kind == "opacus" and not privacy.opacus_available():
                print(f"{'':<22} {name:<36} {'(Opacus is not importable)':>46}")
                continue
            run = subprocess.run([sys.executable, __file__, "--child", name, model, "--calls", str(args.calls)],
                                 env=env, capture_output=True, text=True, check=False)  # fmt: skip
            if run.returncode != 0:
                print(f"{'':<22} {name:<36} failed: {run.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"{'':<22} {name:<36} {r['peak_mb'] - r['before_mb']:>8.1f} MB {r['peak_mb']:>8.1f} MB "
                  f"{r['first_ms']:>8.1f} ms {r['ms']:>7.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
