"""DP-SGD on several processes: the demo's MLP trained with the batch split across MPI processes.

    python examples/data_parallel.py                      # one process
    mpirun -n 4 python examples/data_parallel.py          # four (as root add --allow-run-as-root;
                                                          # more processes than cores: --oversubscribe)
    mpirun -n 2 python examples/data_parallel.py --quick --save params.safetensors --json run.json

Every process loads the same digits and draws the same batches (the keys are the same everywhere).
`ember.shard_map` hands each process its rows of the global batch, on which it computes the sum of
its examples' clipped gradients with `ember.privacy.clipped_grad` (ghost norms: no per-example weight
gradient is formed); `lax.psum` over the axis ``"processes"`` adds the processes' sums; then every
process adds the same Gaussian noise and takes the same Adam step, so the parameters stay identical
on every process and equal, up to the order of float32 additions, those of one process on the whole
batch. Rank 0 prints the test accuracy, the privacy spent, and the time per step split into compute
and communication.

Needs mpi4py and an MPI for more than one process (``pip install -e ".[distributed]"``; Debian:
``apt-get install openmpi-bin libopenmpi-dev``); without mpi4py it runs as one process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any

# Several processes on one machine: one BLAS thread each (as torchrun does), else their threads fight over the
# cores. Set before NumPy loads its BLAS; mpirun tells each process how many there are.
if int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", "1"))) > 1:
    for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402
from ember import lax, optim, privacy  # noqa: E402
from ember.demo import DELTA, accuracy, clipped_sum, make_model, split_data  # noqa: E402
from ember.errors import DistributedError  # noqa: E402

AXIS = "processes"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=None,
                        help="passes over the training set (default 20; 2 with --quick)")
    parser.add_argument("--batch-size", type=int, default=128,
                        help="the global batch, split evenly over the processes (default 128)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate (default 3e-3)")
    parser.add_argument("--clip", type=float, default=1.0, help="per-example gradient norm bound C (default 1.0)")
    parser.add_argument("--noise", type=float, default=1.0, help="noise multiplier: the noise's std is noise * C")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 epochs (for tests)")
    parser.add_argument("--save", type=Path, default=None, help="rank 0 saves the final parameters here")
    parser.add_argument("--json", type=Path, default=None, help="rank 0 writes the figures it prints here")
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 2 if args.quick else 20
    return args


def start_processes() -> tuple[int, int]:
    """Bind the axis name to the processes; (rank, count). Without mpi4py: one process, nothing bound."""
    try:
        ember.distributed.initialize(AXIS)
    except DistributedError as err:
        if "mpi4py" not in str(err):
            raise
        print(f"(one process: {err})")
    return ember.distributed.process_index(), ember.distributed.process_count()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    rank, count = start_processes()
    if args.batch_size % count:  # every process stops; rank 0 says why
        raise SystemExit(f"--batch-size {args.batch_size} does not split evenly over {count} processes; "
                         f"give a multiple of {count}" if rank == 0 else 2)

    key_split, key_init, key_train = ember.random.split(ember.random.key(args.seed), 3)
    data = split_data(key_split)
    n_train = data.x_train.shape[0]
    steps_per_epoch = n_train // args.batch_size
    params = make_model(key_init)
    adam = optim.adam(learning_rate=args.lr)
    state = adam.init(params)

    # Compute: this process's share of the clipped sum. shard_map gives it rows [rank * b / n, (rank + 1) * b / n)
    # of the global batch; out_axes=None returns its partial sum as it is (the psum below adds the partial sums).
    # One process without MPI needs no split.
    local = partial(clipped_sum, clip=args.clip)
    if ember.distributed.is_initialized():
        local = ember.shard_map(local, AXIS, in_axes=(None, 0, 0), out_axes=None)
        communicate = ember.jit(lambda tree: lax.psum(tree, AXIS))
    else:
        def communicate(tree):
            return tree
    local_sum = ember.jit(local)

    @ember.jit
    def update(params, state, grad_sum, key):
        # The noise is added ONCE, to the global sum, and every process draws it from the same key: every
        # process then holds the same noisy gradient, takes the same step and keeps the same parameters, and
        # the sum gets the noise of one Gaussian mechanism (std noise * clip), as on one process. Noise drawn
        # with each process's own key would make the parameters diverge; noise added before the psum would
        # add `count` draws.
        noisy = privacy.add_noise(grad_sum, key, noise_multiplier=args.noise, max_norm=args.clip)
        updates, state = adam.update(ember.tree.map(lambda g: g / args.batch_size, noisy), state, params)
        return optim.apply_updates(params, updates), state

    gradient_s, communicate_s, update_s = [], [], []
    for epoch in range(args.epochs):
        key_epoch = ember.random.fold_in(key_train, epoch)
        order = ember.random.permutation(key_epoch, n_train)  # the same on every process
        for i in range(steps_per_epoch):
            idx = order[i * args.batch_size:(i + 1) * args.batch_size]
            t0 = time.perf_counter()
            partial_sum, _ = local_sum(params, data.x_train[idx], data.y_train[idx])
            t1 = time.perf_counter()
            grad_sum = communicate(partial_sum)  # waits for the slowest process too
            t2 = time.perf_counter()
            params, state = update(params, state, grad_sum, ember.random.fold_in(key_epoch, i + 1))
            t3 = time.perf_counter()
            gradient_s.append(t1 - t0)
            communicate_s.append(t2 - t1)
            update_s.append(t3 - t2)

    steps = args.epochs * steps_per_epoch
    epsilon = privacy.epsilon(steps, args.batch_size / n_train, args.noise, DELTA)
    test_acc = accuracy(params, data.x_test, data.y_test)
    # the largest difference between the processes' parameters (max - min over the processes): 0 when in step
    spread = max(float(enp.max(lax.pmax(p, AXIS) - lax.pmin(p, AXIS))) if count > 1 else 0.0
                 for p in ember.tree.leaves(params))
    # the first step traces and compiles: left out of the per-step figures
    gradient_ms, communicate_ms, update_ms = (1e3 * statistics.median(t[1:] or t)
                                              for t in (gradient_s, communicate_s, update_s))
    result = {"processes": count, "steps": steps, "batch_size": args.batch_size, "test_accuracy": test_acc,
              "epsilon": epsilon, "delta": DELTA, "compute_ms": gradient_ms + update_ms, "gradient_ms": gradient_ms,
              "update_ms": update_ms, "communicate_ms": communicate_ms,
              "first_step_ms": 1e3 * (gradient_s[0] + communicate_s[0] + update_s[0]), "max_param_spread": spread}
    if rank == 0:
        print(f"DP-SGD on {count} process{'es' * (count > 1)}: MLP 64-128-128-10 on the 8x8 digits, batch "
              f"{args.batch_size} ({args.batch_size // count} per process), {args.epochs} epochs")
        print(f"test accuracy: {test_acc:.1%}")
        delta = f"{DELTA:.0e}".replace("e-0", "e-")  # 1e-5
        print(f"privacy: (epsilon, delta) = ({epsilon:.2f}, {delta}) after {steps} steps at sampling rate "
              f"{args.batch_size / n_train:.4f} and noise multiplier {args.noise}")
        print(f"time per step (median of {steps - 1}): {gradient_ms + update_ms + communicate_ms:.2f} ms = "
              f"{gradient_ms + update_ms:.2f} ms compute ({gradient_ms:.2f} ms this process's clipped sum, "
              f"{update_ms:.2f} ms noise and Adam, the same on every process) + {communicate_ms:.2f} ms "
              "communication (psum of the sums, waiting for the slowest process included)")
        print(f"parameters identical on every process: largest difference {spread:g}")
        if args.save is not None:
            ember.save(args.save, params)
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=1))
    return {**result, "params": params}


if __name__ == "__main__":
    main()
