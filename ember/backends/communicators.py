"""Axis names bound to the processes' communicator (`ember.distributed.initialize`).

A collective (``lax.psum(x, name)``) looks for a vmap named `name` first; when none is active and
`name` is in `bound`, the collective is an ordinary primitive whose kernel talks to the other
processes through that name's `Communicator` (MPI on the CPU, NCCL on CUDA). Nothing here imports
the core: the core reads `bound`, the kernels call the communicator.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Communicator", "bound"]


class Communicator:
    """The processes an axis name spans. `axis_size` and `level` let the core treat it as the
    outermost frame of that name: below every trace, so a vmap of the same name shadows it."""

    level = -1

    def __init__(self, axis_name: Any, rank: int, size: int):
        self.axis_name = axis_name
        self.rank = rank
        self.size = size

    @property
    def axis_size(self) -> int:
        return self.size


# axis name -> its Communicator (filled by ember.distributed.initialize)
bound: dict[Any, Communicator] = {}
