"""Binding an axis name to the processes: initialize, shutdown, process_index, process_count."""

from __future__ import annotations

from typing import Any

from ember.backends import communicators
from ember.core import devices as _devices
from ember.errors import DistributedError, InvalidArgumentError

__all__ = ["initialize", "is_initialized", "process_count", "process_index", "shutdown"]

INSTALL = ("pip install 'ember[distributed]' (mpi4py), with an MPI library installed first "
           "(Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev)")  # fmt: skip

_state: dict[str, Any] = {}  # "name": the axis name bound by initialize


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise DistributedError(f"ember.distributed needs mpi4py, which is not importable ({err}): {INSTALL}") from None
    return MPI


def initialize(axis_name: Any = "processes", *, backend: str | None = None) -> None:
    """Bind `axis_name` to all the processes started together (``mpirun -n N python script.py``).

    Collectives over `axis_name` then reduce across the processes. `backend`: ``"mpi"`` (NumPy
    buffers, through mpi4py), ``"nccl"`` (GPU buffers, CuPy's NCCL; each process takes the GPU of its
    local rank and makes it ember's default device) or None: NCCL when the default device is a GPU,
    else MPI. Run without mpirun, there is one process. Calling it twice raises `DistributedError`.

    >>> ember.distributed.initialize()  # doctest: +SKIP
    >>> lax.psum(1, "processes")         # doctest: +SKIP
    Array(4, dtype=int32, weak_type=True)
    """
    if "name" in _state:
        name = _state["name"]
        comm = communicators.bound[name]
        raise DistributedError(
            f"ember.distributed.initialize: already initialized: axis name {name!r} is bound to the {comm.size} "
            f"processes (this is rank {comm.rank}); use that name in the collectives (lax.psum(x, {name!r})), or call "
            "ember.distributed.shutdown() before initializing again"
        )
    if axis_name is None or isinstance(axis_name, (list, dict, set)):
        raise InvalidArgumentError(f"ember.distributed.initialize: axis_name must be a hashable name such as "
                                   f"'processes', got {axis_name!r}")  # fmt: skip
    if backend is None:
        backend = "nccl" if _devices.current.place.device.platform == "cuda" else "mpi"
    if backend not in ("mpi", "nccl"):
        raise InvalidArgumentError(f"ember.distributed.initialize: backend must be 'mpi', 'nccl' or None, "
                                   f"got {backend!r}")  # fmt: skip
    cupy = _cupy_with_a_gpu() if backend == "nccl" else None
    MPI = _mpi()
    world = MPI.COMM_WORLD
    if backend == "mpi":
        comm = communicators.MpiCommunicator(axis_name, world, MPI)
    else:
        comm = _nccl(axis_name, world, MPI, cupy)
    communicators.bound[axis_name] = comm
    _state["name"] = axis_name


def _cupy_with_a_gpu() -> Any:
    from ember.backends import _cupy, cuda_device_count

    cupy = _cupy()
    if cupy is None or cuda_device_count() == 0:
        raise DistributedError("ember.distributed.initialize(backend='nccl') needs CuPy and a GPU "
                               f"({'CuPy is not installed' if cupy is None else 'CuPy finds no GPU'}); "
                               "backend='mpi' runs on the CPU")  # fmt: skip
    return cupy


def _nccl(axis_name: Any, world: Any, MPI: Any, cupy: Any) -> Any:
    from ember.backends import cuda_device_count
    from ember.backends.communicators_nccl import NcclCommunicator
    from ember.config import config

    local = world.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()  # this process's index on its machine
    gpu = local % cuda_device_count()
    cupy.cuda.Device(gpu).use()
    config.update("default_device", f"cuda:{gpu}")
    return NcclCommunicator(axis_name, world, MPI, cupy)


def shutdown() -> None:
    """Unbind the axis name `initialize` bound (MPI itself stays up until the process exits); a no-op
    when nothing is bound.

    >>> ember.distributed.shutdown()
    >>> ember.distributed.is_initialized()
    False
    """
    name = _state.pop("name", None)
    if name is not None:
        communicators.bound.pop(name).free()


def is_initialized() -> bool:
    """Whether `initialize` has bound an axis name to the processes.

    >>> ember.distributed.is_initialized()
    False
    """
    return "name" in _state


def process_index() -> int:
    """This process's rank among the processes (0 before `initialize`, as in JAX).

    >>> ember.distributed.process_index()
    0
    """
    return communicators.bound[_state["name"]].rank if "name" in _state else 0


def process_count() -> int:
    """How many processes `initialize` bound (1 before it).

    >>> ember.distributed.process_count()
    1
    """
    return communicators.bound[_state["name"]].size if "name" in _state else 1
