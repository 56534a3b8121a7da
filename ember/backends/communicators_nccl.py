"""An axis name bound to the GPUs of the processes through NCCL (CuPy's ``cupy.cuda.nccl``).

The processes meet over MPI exactly as `MpiCommunicator`'s do (the call's description, a bounded wait,
mismatches named), and MPI broadcasts NCCL's unique id once; the data then moves GPU to GPU with
NCCL on the current stream, whose completion is polled against the same deadline (on a timeout the
NCCL communicator is aborted, so no rank hangs in it).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ember.backends.communicators import MpiCommunicator, _Poller
from ember.config import config
from ember.errors import DistributedError

__all__ = ["NcclCommunicator"]

# NCCL sums these natively; complex numbers go as pairs of reals (a sum is one of reals). The kernels
# hand float16/bfloat16 over in float32 and 8/16-bit integers in int64 (see communicators._summed).
_SUMMED = {
    "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "uint32": "NCCL_UINT32",
    "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
}  # fmt: skip
_REAL_OF = {"complex64": np.float32, "complex128": np.float64}


class NcclCommunicator(MpiCommunicator):
    """NCCL between the processes' GPUs (one GPU per process: the one current when it is made).

    >>> NcclCommunicator.__mro__[1].__name__
    'MpiCommunicator'
    """

    def __init__(self, axis_name: Any, comm: Any, mpi: Any, cupy: Any):
        super().__init__(axis_name, comm, mpi)
        self.array_module = cupy
        self.nccl = cupy.cuda.nccl
        uid = self.nccl.get_unique_id() if self.rank == 0 else None
        uid = comm.bcast(uid, root=0)
        self.nccl_comm = self.nccl.NcclCommunicator(self.size, uid, self.rank)

    def free(self) -> None:
        if self.broken is None:
            self.nccl_comm.destroy()
        super().free()

    def _stream(self) -> Any:
        return self.array_module.cuda.get_current_stream()

    def _done(self, op: str, stream: Any) -> None:
        poller, pause = _Poller(), 0.0
        while not stream.done:
            if time.monotonic() > poller.deadline:
                self.broken = f"{op} #{self.calls}: NCCL did not complete"
                self.nccl_comm.abort()
                raise DistributedError(f"{op} over {self._name()}: the ranks met but NCCL did not complete within "
                                       f"collective_timeout={config.collective_timeout:g} s; the NCCL communicator is "
                                       "aborted and the processes are no longer in step")  # fmt: skip
            pause = min(max(pause * 2, 2e-5), 2e-3)
            time.sleep(pause)

    def _summable(self, x: Any) -> tuple[Any, int, Any]:
        """(buffer NCCL sums, its NCCL type, how to bring the result back to x's dtype)."""
        name = x.dtype.name
        if name in _REAL_OF:  # a trailing axis of (real, imaginary): blocks keep their shape, 0-d works
            real = np.dtype(_REAL_OF[name])
            pairs = x[..., None].view(real)
            return pairs, getattr(self.nccl, _SUMMED[real.name]), lambda y: y.view(x.dtype)[..., 0]
        return x, getattr(self.nccl, _SUMMED[name]), lambda y: y

    def allreduce_sum(self, op: str, x: Any) -> Any:
        buf, kind, back = self._summable(x)
        out = self.array_module.empty_like(buf)
        stream = self._stream()
        self.nccl_comm.allReduce(buf.data.ptr, out.data.ptr, buf.size, kind, self.nccl.NCCL_SUM, stream.ptr)
        self._done(op, stream)
        return back(out)

    def reduce_scatter_sum(self, op: str, blocks: Any) -> Any:
        buf, kind, back = self._summable(blocks)
        out = self.array_module.empty(buf.shape[1:], buf.dtype)
        stream = self._stream()
        self.nccl_comm.reduceScatter(buf.data.ptr, out.data.ptr, out.size, kind, self.nccl.NCCL_SUM, stream.ptr)
        self._done(op, stream)
        return back(out)

    def allgather(self, op: str, x: Any) -> Any:
        out = self.array_module.empty((self.size, *x.shape), x.dtype)
        stream = self._stream()
        self.nccl_comm.allGather(x.data.ptr, out.data.ptr, x.nbytes, self.nccl.NCCL_UINT8, stream.ptr)
        self._done(op, stream)
        return out

    def alltoall(self, op: str, blocks: Any) -> Any:
        out = self.array_module.empty_like(blocks)
        stream, step = self._stream(), blocks.nbytes // max(self.size, 1)
        self.nccl.groupStart()
        for r in range(self.size):
            self.nccl_comm.send(blocks.data.ptr + r * step, step, self.nccl.NCCL_UINT8, r, stream.ptr)
            self.nccl_comm.recv(out.data.ptr + r * step, step, self.nccl.NCCL_UINT8, r, stream.ptr)
        self.nccl.groupEnd()
        self._done(op, stream)
        return out

    def permute(self, op: str, x: Any, sends: list[int], source: int | None) -> Any:
        out = self.array_module.zeros_like(x)
        stream = self._stream()
        self.nccl.groupStart()
        for r in sends:
            self.nccl_comm.send(x.data.ptr, x.nbytes, self.nccl.NCCL_UINT8, r, stream.ptr)
        if source is not None:
            self.nccl_comm.recv(out.data.ptr, x.nbytes, self.nccl.NCCL_UINT8, source, stream.ptr)
        self.nccl.groupEnd()
        self._done(op, stream)
        return out
