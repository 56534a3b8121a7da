"""Run by tests/test_distributed.py under ``mpirun -n N python tests/distributed/worker.py OUT_DIR``
(not a test module itself): every rank computes the collectives across the processes on inputs the test
can rebuild (`inputs.py`), checks errors, trains the demo MLP data-parallel, and saves what it got to
OUT_DIR/rank{r}.npz (arrays) and OUT_DIR/rank{r}.json (error messages, flags). The test compares them
with NumPy references computed in one process."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import inputs  # noqa: E402

import ember  # noqa: E402
import ember.numpy as enp  # noqa: E402
from ember import lax  # noqa: E402

AXIS = "processes"


def error_of(fn):
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - recorded for the test to check its type and message
        return {"type": type(err).__name__, "message": str(err)}
    return None


def collectives(rank: int, n: int, arrays: dict, notes: dict) -> None:
    ember.config.update("enable_x64", True)  # float64 and int64 as they are
    try:
        _collectives(rank, n, arrays, notes)
    finally:
        ember.config.update("enable_x64", False)


def _collectives(rank: int, n: int, arrays: dict, notes: dict) -> None:
    for dtype in inputs.DTYPES:
        for shape in inputs.shapes(n):
            x = enp.asarray(inputs.value(rank, dtype, shape))
            key = inputs.key(dtype, shape)
            if dtype != "bool":
                arrays[f"psum/{key}"] = np.asarray(lax.psum(x, AXIS))
                arrays[f"pmean/{key}"] = np.asarray(lax.pmean(x, AXIS))
            if not dtype.startswith("complex"):
                arrays[f"pmax/{key}"] = np.asarray(lax.pmax(x, AXIS))
                arrays[f"pmin/{key}"] = np.asarray(lax.pmin(x, AXIS))
            for axis in range(len(shape) + 1):
                arrays[f"all_gather/{key}/{axis}"] = np.asarray(lax.all_gather(x, AXIS, axis=axis))
            if shape:
                arrays[f"all_gather_tiled/{key}"] = np.asarray(lax.all_gather(x, AXIS, axis=len(shape) - 1, tiled=True))
            for name, perm in inputs.perms(n).items():
                arrays[f"ppermute/{name}/{key}"] = np.asarray(lax.ppermute(x, AXIS, perm))
            if shape and dtype != "bool":
                arrays[f"psum_scatter/{key}"] = np.asarray(lax.psum_scatter(x, AXIS, scatter_dimension=0, tiled=True))
            if len(shape) == 2:
                arrays[f"all_to_all_tiled/{key}"] = np.asarray(lax.all_to_all(x, AXIS, 0, 1, tiled=True))
    # untiled reduce_scatter and all_to_all: an axis of size n
    x = enp.asarray(inputs.value(rank, "float32", (3, n, 2)))
    arrays["psum_scatter_untiled"] = np.asarray(lax.psum_scatter(x, AXIS, scatter_dimension=1))
    for c in range(3):
        arrays[f"all_to_all_untiled/{c}"] = np.asarray(lax.all_to_all(x, AXIS, 1, c))
    nan = enp.asarray(inputs.value(rank, "float32", (4,))).at[1].set(np.nan if rank == n - 1 else 0.0)
    arrays["pmax_nan"] = np.asarray(lax.pmax(nan, AXIS))
    arrays["axis_index"] = np.asarray(lax.axis_index(AXIS))
    arrays["psum_python"] = np.asarray(lax.psum(1, AXIS))
    notes["index_count"] = [ember.distributed.process_index(), ember.distributed.process_count()]


def transforms(rank: int, n: int, arrays: dict) -> None:
    x = enp.asarray(inputs.value(rank, "float32", (3,)))
    w = enp.asarray(inputs.value(rank, "float32", (n * 3,)))
    # grad: d/dx_r of sum_j f_j(sum_k x_k) etc. (JAX's conventions: psum transposes to psum)
    arrays["grad_psum"] = np.asarray(ember.grad(lambda x: (lax.psum(x, AXIS) * w[:3]).sum())(x))
    arrays["grad_all_gather"] = np.asarray(ember.grad(lambda x: (lax.all_gather(x, AXIS, tiled=True) * w).sum())(x))
    ring = tuple((i, (i + 1) % n) for i in range(n))
    arrays["grad_ppermute"] = np.asarray(ember.grad(lambda x: (lax.ppermute(x, AXIS, ring) * w[:3]).sum())(x))
    arrays["grad_psum_scatter"] = np.asarray(
        ember.grad(lambda v: (lax.psum_scatter(v, AXIS, tiled=True) * w[:2]).sum())(enp.tile(x[:2], n))
    )
    arrays["grad_all_to_all"] = np.asarray(
        ember.grad(lambda m: (lax.all_to_all(m, AXIS, 0, 1, tiled=True) * w.reshape(1, -1)).sum())(enp.ones((n, 3)))
    )
    arrays["grad_pmax"] = np.asarray(ember.grad(lambda x: lax.pmax(x, AXIS).sum())(x))
    arrays["jvp_psum"] = np.asarray(ember.jvp(lambda x: lax.psum(x * x, AXIS), (x,), (enp.ones(3),))[1])

    def f(x):
        return lax.psum(enp.sin(x) * 2.0, AXIS) + lax.all_gather(x, AXIS).sum(0)

    arrays["eager"] = np.asarray(f(x))
    arrays["jit"] = np.asarray(ember.jit(f)(x))
    arrays["jit_grad"] = np.asarray(ember.jit(ember.grad(lambda x: f(x).sum()))(x))
    arrays["eager_grad"] = np.asarray(ember.grad(lambda x: f(x).sum())(x))
    batch = enp.asarray(inputs.value(rank, "float32", (5, 3)))
    arrays["vmap_psum"] = np.asarray(ember.vmap(lambda row: lax.psum(row, AXIS))(batch))
    arrays["vmap_all_gather"] = np.asarray(ember.vmap(lambda row: lax.all_gather(row, AXIS))(batch))
    arrays["vmap_ppermute"] = np.asarray(ember.vmap(lambda row: lax.ppermute(row, AXIS, ring))(batch))
    arrays["jit_ppermute"] = np.asarray(ember.jit(lambda b: lax.ppermute(b, AXIS, ring))(batch))
    # a process-level psum inside a vmap of another name that reduces over its own axis too
    arrays["vmap_named"] = np.asarray(ember.vmap(lambda row: lax.psum(lax.psum(row, "b"), AXIS), axis_name="b")(batch))


def training(rank: int, n: int, arrays: dict, notes: dict) -> None:
    from ember import optim

    # The acceptance run in float64: the shards' averaged gradients then differ from the whole batch's
    # by ~1e-16 relative, too little for Adam's normalised steps to amplify into a visible difference.
    ember.config.update("enable_x64", True)
    try:
        params, x, y, steps, lr = inputs.training_setup("float64")
        step = ember.jit(ember.shard_map(inputs.mean_loss_and_grads_pmean, in_axes=(None, 0, 0), out_axes=None))
        opt = optim.adam(learning_rate=lr)
        state = opt.init(params)
        for _ in range(steps):
            _, grads = step(params, x, y)
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
        for name, p in params.named_parameters():
            arrays[f"train/{name}"] = np.asarray(p)
    finally:
        ember.config.update("enable_x64", False)
    params0, x, y, _, _ = inputs.training_setup()
    # the gradient of the global loss, differentiating the sharded function from outside
    outer = ember.grad(lambda p: ember.shard_map(inputs.mean_loss_pmean, in_axes=(None, 0, 0), out_axes=None)(p, x, y))
    for name, g in outer(params0).named_parameters():
        arrays[f"outer_grad/{name}"] = np.asarray(g)
    # per-example outputs gathered back to the whole batch
    arrays["gathered_logits"] = np.asarray(ember.shard_map(lambda p, x: p(x), in_axes=(None, 0))(params0, x))
    notes["not_divisible"] = error_of(lambda: ember.shard_map(lambda x: x)(enp.ones(n * 2 + 1)))


def errors(rank: int, n: int, notes: dict) -> None:
    notes["unbound"] = error_of(lambda: lax.psum(1.0, "nowhere"))
    notes["twice"] = error_of(lambda: ember.distributed.initialize())
    if n == 1:
        return
    ember.config.update("collective_timeout", 5.0)
    notes["shape_mismatch"] = error_of(lambda: lax.psum(enp.ones(rank + 1), AXIS))
    notes["dtype_mismatch"] = error_of(lambda: lax.psum(enp.ones(2, dtype="float32" if rank else "int32"), AXIS))
    notes["after_mismatch"] = np.asarray(lax.psum(1.0, AXIS)).tolist()  # still in step after both raised
    ember.config.update("collective_timeout", 1.0)
    # On a second communicator, the last rank meets the others but never sends its data.
    from mpi4py import MPI

    from ember.backends import communicators

    communicators.bound["second"] = communicators.MpiCommunicator("second", MPI.COMM_WORLD, MPI)
    if rank == n - 1:
        communicators.bound["second"].meet("psum", np.ones(2, np.float32), {})
    else:
        notes["stalled"] = error_of(lambda: lax.psum(enp.ones(2), "second"))
    if rank != n - 1:  # the last rank never arrives
        notes["timeout"] = error_of(lambda: lax.psum(enp.ones(2), AXIS))
        notes["after_timeout"] = error_of(lambda: lax.psum(enp.ones(2), AXIS))


def main() -> None:
    out = Path(sys.argv[1])
    ember.distributed.initialize(AXIS)
    rank, n = ember.distributed.process_index(), ember.distributed.process_count()
    arrays: dict = {}
    notes: dict = {}
    try:
        collectives(rank, n, arrays, notes)
        transforms(rank, n, arrays)
        training(rank, n, arrays, notes)
        errors(rank, n, notes)
    except Exception:  # noqa: BLE001 - handed to the test, which shows it
        notes["crash"] = traceback.format_exc()
    np.savez(out / f"rank{rank}.npz", **dict(inputs.storable(k, v) for k, v in arrays.items()))
    (out / f"rank{rank}.json").write_text(json.dumps(notes))


if __name__ == "__main__":
    main()
