"""Collectives across processes: MPI (mpi4py) on the CPU, NCCL (CuPy) on CUDA.

``ember.distributed.initialize()`` binds an axis name (``"processes"`` by default) to every process
started together, so the collectives of ``ember.lax`` (psum, pmean, pmax, pmin, all_gather,
reduce_scatter, ppermute, all_to_all, axis_index) with that name reduce across the processes,
outside any vmap and under grad, jit and vmap with their usual rules. ``ember.shard_map`` splits a
batch over the processes (or, without them, over the default platform's devices in one process).

A data-parallel training script, ``train.py``, run as ``mpirun -n 4 python train.py`` (as root, add
``--allow-run-as-root``; more processes than cores, ``--oversubscribe``)::

    import ember
    from ember import lax

    ember.distributed.initialize()            # axis "processes": rank process_index() of process_count()

    def grads(params, x, y):                  # x, y: this process's shard of the batch
        loss, g = ember.value_and_grad(mean_loss)(params, x, y)
        return lax.pmean((loss, g), "processes")   # averaged over the processes: the same on every one

    step = ember.jit(ember.shard_map(grads, in_axes=(None, 0, 0), out_axes=None))
    loss, g = step(params, x_batch, y_batch)  # the whole batch, the same on every process

Every process must call the same collectives in the same order on operands of the same shape and
dtype; each collective first checks that they do (within ``ember.config.collective_timeout``
seconds) and raises `ember.errors.DistributedError` naming the ranks otherwise.

Needs ``pip install 'ember[distributed]'`` (mpi4py) and an MPI (Debian: ``apt-get install
openmpi-bin libopenmpi-dev``).
"""

from ember.distributed._processes import *  # noqa: F403
from ember.distributed._processes import __all__ as _processes_all
from ember.distributed._shard_map import *  # noqa: F403
from ember.distributed._shard_map import __all__ as _shard_map_all

__all__ = [*_processes_all, *_shard_map_all]
