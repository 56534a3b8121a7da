"""Axis names bound to the processes' communicator (`ember.distributed.initialize`), and the kernels of
the collectives across processes.

A collective (``lax.psum(x, name)``) looks for a vmap named `name` first; when none is active and
`name` is in `bound`, the collective is an ordinary primitive whose kernel (`collective_kernels`, in
every backend's table under the primitive's name) talks to the other processes through that name's
`Communicator`: MPI on the CPU (`MpiCommunicator`), NCCL on CUDA (`communicators_nccl`). Nothing here
imports the core: the core reads `bound`, the kernels call the communicator.

Every collective first *meets* the other ranks: each sends every other rank a description of the call
(which collective, its count on this communicator, the operand's dtype and shape, the parameters) and
waits, polling, at most ``ember.config.collective_timeout`` seconds for theirs. Ranks that did not
arrive are named in a `DistributedError`; ranks that arrived with another call (a different shape,
dtype or collective) make every rank raise a `DistributedError` naming what each rank called. So a
mismatch is an error on every rank, never a hang or a wrong answer. The data then moves with MPI's
nonblocking collectives, polled against the same deadline. After a timeout the processes are out of
step: the communicator refuses further collectives.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from ember.config import config
from ember.errors import DistributedError, UnboundAxisNameError

__all__ = ["Communicator", "MpiCommunicator", "bound", "collective_kernels"]

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_NOTE = 256  # bytes of a meeting note: an 8-byte call count, then the call's description (utf-8)


class Communicator:
    """The processes an axis name spans. `axis_size` and `level` let the core treat it as the
    outermost frame of that name: below every trace, so a vmap of the same name shadows it.

    Subclasses move the data: `allreduce_sum` (the elementwise sum over the ranks, same shape),
    `allgather` (every rank's buffer stacked: (size, *shape)), `reduce_scatter_sum` (of (size, *block),
    this rank's block of the sum), `alltoall` ((size, *block) out, block j to rank j; block i of the
    result from rank i) and `permute` (`sends`: ranks that get this rank's buffer; `source`: the rank
    this one receives from, or None for zeros), each after `meet`.

    >>> Communicator("processes", rank=1, size=4).axis_size
    4
    """

    level = -1

    def __init__(self, axis_name: Any, rank: int, size: int):
        self.axis_name = axis_name
        self.rank = rank
        self.size = size

    @property
    def axis_size(self) -> int:
        return self.size

    def meet(self, op: str, x: Any, params: dict[str, Any]) -> None:
        """Check that every rank is at the same collective with the same operand shape and dtype."""


# axis name -> its Communicator (filled by ember.distributed.initialize)
bound: dict[Any, Communicator] = {}


def _describe(op: str, x: Any, params: dict[str, Any]) -> str:
    shown = "".join(f", {k}={v!r}" for k, v in sorted(params.items()) if k != "axis_name")
    return f"{op}({x.dtype}[{','.join(map(str, x.shape))}]{shown})"


def _note(count: int, text: str) -> bytearray:
    raw = text.encode()
    if len(raw) > _NOTE - 8:  # a long description keeps its start and a digest of the whole
        raw = raw[: _NOTE - 8 - 41] + b"#" + hashlib.sha1(raw).hexdigest().encode()
    note = bytearray(_NOTE)
    note[:8] = int(count).to_bytes(8, "little", signed=True)
    note[8 : 8 + len(raw)] = raw
    return note


def _read_note(note: bytearray) -> tuple[int, str]:
    return int.from_bytes(note[:8], "little", signed=True), bytes(note[8:]).rstrip(b"\0").decode(errors="replace")


class _Poller:
    """Waits on MPI requests until they complete or ``config.collective_timeout`` passes: testing them
    for 0.1 ms, then yielding the CPU between tests until 2 ms, then sleeping ever longer (to 2 ms) between
    tests (ranks often share cores)."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + float(config.collective_timeout)

    def wait(self, pending: dict[Any, Any]) -> dict[Any, Any]:
        """Polls `pending` (key -> request) and returns the requests still pending at the deadline."""
        pause = 0.0
        while pending:
            for key in [k for k, req in pending.items() if req.Test()]:
                del pending[key]
            if not pending:
                break
            now = time.monotonic()
            if now > self.deadline:
                break
            waited = now - self.start
            if waited < 1e-4:  # the other ranks are usually right there: keep testing
                continue
            if waited < 0.002:
                os.sched_yield()
            else:
                pause = min(max(pause * 2, 5e-5), 2e-3)
                time.sleep(pause)
        return pending


class MpiCommunicator(Communicator):
    """An axis name bound to an MPI communicator (mpi4py's ``MPI.COMM_WORLD`` by default).

    Two duplicates of it carry the meetings and the data, so neither mixes with the user's own MPI
    messages. Buffers are NumPy arrays (a GPU buffer goes through the host).

    >>> from mpi4py import MPI  # doctest: +SKIP
    >>> MpiCommunicator("processes", MPI.COMM_WORLD, MPI).size  # doctest: +SKIP
    2
    """

    def __init__(self, axis_name: Any, comm: Any, mpi: Any):
        super().__init__(axis_name, comm.Get_rank(), comm.Get_size())
        self.mpi = mpi
        self.meeting = comm.Dup()
        self.data = comm.Dup()
        self.calls = 0
        self.broken: str | None = None
        self._orphans: list[Any] = []  # sends whose receivers never came: kept alive until exit

    def free(self) -> None:
        if self.broken is None:  # (a broken one may have requests pending: left to MPI's exit)
            self.meeting.Free()
            self.data.Free()

    def _name(self) -> str:
        return f"axis {self.axis_name!r} (rank {self.rank} of {self.size} processes)"

    def meet(self, op: str, x: Any, params: dict[str, Any]) -> None:
        if self.broken is not None:
            raise DistributedError(f"{op} over {self._name()}: an earlier collective failed ({self.broken}); the "
                                   "processes are no longer in step: stop them all and start again")  # fmt: skip
        self.calls += 1
        mine = _describe(op, x, params)
        if self.size == 1:
            return
        note = _note(self.calls, mine)
        notes = {r: bytearray(_NOTE) for r in range(self.size) if r != self.rank}
        sends = [self.meeting.Isend(note, dest=r, tag=1) for r in notes]
        receives = {r: self.meeting.Irecv(buf, source=r, tag=1) for r, buf in notes.items()}
        missing = _Poller().wait(receives)
        if missing:
            for req in missing.values():
                req.Cancel()
                req.Wait()
            self._orphans += [note, notes, sends]
            absent = sorted(missing)
            self.broken = f"{op} #{self.calls}: rank(s) {absent} did not arrive"
            arrived = sorted(set(range(self.size)) - set(absent))
            raise DistributedError(
                f"{op} over {self._name()}: rank(s) {', '.join(map(str, absent))} did not reach collective "
                f"#{self.calls} within collective_timeout={config.collective_timeout:g} s (ranks that arrived: "
                f"{arrived}); every process must call the same collectives in the same order (a rank may have "
                "stopped, or taken another branch); ember.config.update('collective_timeout', seconds) waits "
                "longer for slow ranks"
            )
        self.mpi.Request.Waitall(sends)
        calls = {self.rank: (self.calls, mine), **{r: _read_note(buf) for r, buf in notes.items()}}
        if any(c != calls[self.rank] for c in calls.values()):
            listed = "; ".join(f"rank {r}: collective #{n} {text}" for r, (n, text) in sorted(calls.items()))
            raise DistributedError(f"{op} over {self._name()}: the ranks called different collectives or operands: "
                                   f"{listed}; every process must call the same collectives in the same order, with "
                                   "operands of the same shape and dtype")  # fmt: skip

    def _finish(self, op: str, requests: list[Any]) -> None:
        left = _Poller().wait(dict(enumerate(requests)))
        if left:
            self._orphans.append(requests)  # (they hold the buffers a late rank may still write into)
            self.broken = f"{op} #{self.calls}: the data exchange did not complete"
            raise DistributedError(f"{op} over {self._name()}: the ranks met but the data exchange did not complete "
                                   f"within collective_timeout={config.collective_timeout:g} s (another rank gave up "
                                   "or stopped); the processes are no longer in step")  # fmt: skip

    # The data: host buffers, C-contiguous.

    def allreduce_sum(self, op: str, x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        self._finish(op, [self.data.Iallreduce(x, out, op=self.mpi.SUM)])
        return out

    def allgather(self, op: str, x: np.ndarray) -> np.ndarray:
        out = np.empty((self.size, *x.shape), x.dtype)
        self._finish(op, [self.data.Iallgather(_bytes(x), _bytes(out))])
        return out

    def reduce_scatter_sum(self, op: str, blocks: np.ndarray) -> np.ndarray:
        out = np.empty(blocks.shape[1:], blocks.dtype)
        self._finish(op, [self.data.Ireduce_scatter_block(blocks, out, op=self.mpi.SUM)])
        return out

    def alltoall(self, op: str, blocks: np.ndarray) -> np.ndarray:
        out = np.empty_like(blocks)
        self._finish(op, [self.data.Ialltoall(_bytes(blocks), _bytes(out))])
        return out

    def permute(self, op: str, x: np.ndarray, sends: list[int], source: int | None) -> np.ndarray:
        out = np.zeros_like(x)
        requests = [self.data.Isend(_bytes(x), dest=r, tag=2) for r in sends]
        if source is not None:
            requests.append(self.data.Irecv(_bytes(out), source=source, tag=2))
        self._finish(op, requests)
        return out


def _bytes(x: np.ndarray) -> np.ndarray:
    # Any dtype travels as its bytes (MPI has no float16/bfloat16/bool types in every implementation).
    return x.reshape(-1).view(np.uint8)


# --- the kernels -------------------------------------------------------------------------------------


def _communicator(axis_name: Any, op: str) -> Communicator:
    try:
        return bound[axis_name]
    except KeyError:
        raise UnboundAxisNameError(f"{op}: axis name {axis_name!r} is no longer bound to the processes (a function "
                                   "compiled while it was is called after ember.distributed.shutdown()); call "
                                   "ember.distributed.initialize(axis_name) again") from None  # fmt: skip


def _array_module(x: Any) -> Any:
    if isinstance(x, (np.ndarray, np.generic)):  # (compiled code may hand over NumPy scalars)
        return np
    import cupy  # a GPU buffer: only reached with CuPy installed

    return cupy


def _host_bridge(comm: Communicator, x: Any) -> tuple[Any, Callable[[Any], Any]]:
    """`x` as the communicator's kind of buffer, contiguous, and the function taking a result back."""
    xp = _array_module(x)
    wants = getattr(comm, "array_module", np)
    if wants is xp:
        return _contiguous(xp.asarray(x)), lambda y: y
    if xp is np:  # host buffer, GPU communicator
        return _contiguous(wants.asarray(x)), lambda y: wants.asnumpy(y)
    return _contiguous(xp.asnumpy(x)), lambda y: xp.asarray(y)


def _contiguous(x: Any) -> Any:
    # (not ascontiguousarray: it makes a 0-d array 1-d)
    return x if x.flags.c_contiguous else x.copy(order="C")


def _summed(comm: Communicator, op: str, x: Any, transport: Callable[[Any], Any]) -> Any:
    # float16/bfloat16 accumulate in float32 and round once (as reduce_sum, and so the vmap psum, does).
    # 8- and 16-bit integers are summed in 64 bits and wrapped back (the same bits as a wrapping sum):
    # Open MPI 4.1's AVX reductions saturate them instead (open-mpi/ompi#8045, closed as wontfix).
    if x.dtype in _LOW_PRECISION:
        return transport(x.astype(np.float32)).astype(x.dtype)
    if x.dtype.kind in "iu" and x.dtype.itemsize < 4:
        return transport(x.astype(np.int64)).astype(x.dtype)
    return transport(x)


def _kernel(op: str, body: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(*args: Any, axis_name: Any, **params: Any) -> Any:
        comm = _communicator(axis_name, op)
        if not args:
            return body(comm, **params)
        x, back = _host_bridge(comm, args[0])
        comm.meet(op, x, params)
        return back(body(comm, x, **params))

    kernel.__name__ = kernel.__qualname__ = op
    return kernel


def _psum(comm, x):
    return _summed(comm, "psum", x, lambda v: comm.allreduce_sum("psum", v))


def _pmean(comm, x):
    # As the vmap pmean: the sum, then lax.div by the count in the operand's dtype (integers truncate).
    total = _summed(comm, "pmean", x, lambda v: comm.allreduce_sum("pmean", v))
    xp = _array_module(total)
    if total.dtype.kind in "iu":
        from ember.backends.kernels import _int_div

        return _int_div(xp, total, xp.asarray(comm.size, total.dtype))
    return xp.true_divide(total, xp.asarray(comm.size, total.dtype)).astype(total.dtype)


def _chooser(op: str, reduce: str):
    # Gathered, then reduced here with NumPy in rank order: NaN propagates as in reduce_max/min (MPI's
    # MAX on floats may drop it), every dtype works (bool, float16, bfloat16), and each rank computes
    # the same bits.
    def body(comm, x):
        gathered = comm.allgather(op, x)
        return getattr(_array_module(gathered), reduce)(gathered, axis=0)

    return body


def _all_gather(comm, x, *, axis_size, axis, tiled):
    xp = _array_module(x)
    stacked = comm.allgather("all_gather", x)
    if not tiled:
        return xp.moveaxis(stacked, 0, axis)
    moved = xp.moveaxis(stacked, 0, axis)
    return moved.reshape((*x.shape[:axis], x.shape[axis] * axis_size, *x.shape[axis + 1 :]))


def _reduce_scatter(comm, x, *, axis_size, scatter_dimension, tiled):
    xp = _array_module(x)
    d = scatter_dimension
    if tiled:  # (..., N*b, ...) -> (N, ..., b, ...): block i is rows i*b to (i+1)*b
        split = x.reshape((*x.shape[:d], axis_size, x.shape[d] // axis_size, *x.shape[d + 1 :]))
        blocks = _contiguous(xp.moveaxis(split, d, 0))
    else:
        blocks = _contiguous(xp.moveaxis(x, d, 0))
    return _summed(comm, "reduce_scatter", blocks, lambda v: comm.reduce_scatter_sum("reduce_scatter", v))


def _ppermute(comm, x, *, perm):
    sends = [dst for src, dst in perm if src == comm.rank]
    sources = [src for src, dst in perm if dst == comm.rank]
    return comm.permute("ppermute", x, sends, sources[0] if sources else None)


def _all_to_all(comm, x, *, axis_size, split_axis, concat_axis, tiled):
    # Piece i of `split_axis` goes to rank i; the pieces received are laid out in the senders' order along
    # `concat_axis`: tiled, end to end along that existing axis; untiled (split_axis of size N, removed),
    # as a new axis at position `concat_axis` of the result (JAX's semantics).
    xp = _array_module(x)
    a, c = split_axis, concat_axis
    if tiled:
        x = x.reshape((*x.shape[:a], axis_size, x.shape[a] // axis_size, *x.shape[a + 1 :]))
    received = comm.alltoall("all_to_all", _contiguous(xp.moveaxis(x, a, 0)))  # (N senders, *piece)
    if not tiled:
        return xp.moveaxis(received, 0, c)
    shape = list(received.shape[1:])
    shape[c] *= axis_size
    return xp.moveaxis(received, 0, c).reshape(shape)


def _axis_index(comm):
    return np.int32(comm.rank)


def collective_kernels() -> dict[str, Callable[..., Any]]:
    """The kernels of the collectives across processes, named like their primitives.

    >>> sorted(collective_kernels())[:4]
    ['all_gather', 'all_to_all', 'axis_index', 'pmax']
    """
    return {
        "psum": _kernel("psum", _psum),
        "pmean": _kernel("pmean", _pmean),
        "pmax": _kernel("pmax", _chooser("pmax", "max")),
        "pmin": _kernel("pmin", _chooser("pmin", "min")),
        "all_gather": _kernel("all_gather", _all_gather),
        "reduce_scatter": _kernel("reduce_scatter", _reduce_scatter),
        "ppermute": _kernel("ppermute", _ppermute),
        "all_to_all": _kernel("all_to_all", _all_to_all),
        "axis_index": _kernel("axis_index", _axis_index),
    }
