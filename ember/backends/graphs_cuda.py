"""CUDA graphs for compiled programs: a whole call replayed as one launch.

Status: tested on the CPU with a stand-in for CuPy's graph capture; no GPU has run it yet.

A program of many small kernels (a per-example gradient step: dozens of launches of a few µs of work
each) is bound by Python and launch overhead, not by the GPU. `Graphed` captures one call of the
compiled function on a private stream into a CUDA graph and replays the graph afterwards: the inputs
are copied into the buffers the capture read (one device-to-device copy each), the graph runs every
kernel of the program in one `cudaGraphLaunch`, and each output is copied out of the buffer the graph
writes (so results the caller keeps are never overwritten by a later replay).

The rule (`graph_worthy`), automatic: a program of at least `GRAPH_MIN_LAUNCHES` kernel launches and
no equation that runs host code (control flow, whose loop predicate and branch index are read on the
host; host callbacks; custom-rule calls) — shapes are always static in ember's programs. Set
``EMBER_CUDA_GRAPHS=0`` to turn graphs off. The first call runs plainly (CuPy compiles the kernels
then: compiling is not capturable); the second captures; a capture that fails (a kernel that syncs with
the host, e.g. a data-dependent shape) turns graphs off for the program, which then runs plainly.
Buffers the capture allocates come from a private memory pool kept with the graph, so CuPy never hands
them to anything else. One stream at a time per program (a replay and its copies go to the current
stream, in order); a graph is kept per device.

Nothing here imports the core; the CuPy module comes in as `xp`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["GRAPH_MIN_LAUNCHES", "Graphed", "graph_worthy"]

GRAPH_MIN_LAUNCHES = 4
# Primitives whose implementation runs host code between kernels (or reads device values on the host).
_HOST_PRIMITIVES = frozenset(("cond", "while", "scan", "while_lin", "while_vjp", "pure_callback", "debug_callback",
                              "custom_jvp_call", "custom_vjp_call", "io_callback"))  # fmt: skip


def graph_worthy(program: Any, launches: int | None = None) -> bool:
    """Whether `program`'s compiled calls are replayed as CUDA graphs (see the module docstring):
    enough launches (`launches`, else one per equation) and no host code.

    >>> program = ember.make_ir(lambda x: enp.tanh(x) @ x)(enp.ones((2, 2))).program
    >>> graph_worthy(program), graph_worthy(program, launches=4)
    (False, True)
    """
    if os.environ.get("EMBER_CUDA_GRAPHS", "1") == "0":
        return False
    for eqn in program.eqns:
        prim = eqn.primitive
        if prim.name in _HOST_PRIMITIVES or getattr(prim, "host_call", False):
            return False
    return (len(program.eqns) if launches is None else launches) >= GRAPH_MIN_LAUNCHES


class _Capture:
    """A captured call on one device: the graph, the buffers it reads and writes, its memory pool."""

    __slots__ = ("graph", "inputs", "outputs", "pool", "specs")

    def __init__(self, graph: Any, inputs: list[Any], outputs: list[Any], pool: Any, specs: list[tuple]):
        self.graph, self.inputs, self.outputs, self.pool, self.specs = graph, inputs, outputs, pool, specs


class Graphed:
    """`fn` (a compiled program on CuPy buffers) replayed as a CUDA graph from its second call on (see
    the module docstring); plain calls when the arguments are not all device arrays of the captured
    shapes, or once a capture failed."""

    __slots__ = ("__weakref__", "calls", "captures", "failed", "fn", "xp")

    def __init__(self, fn: Callable[..., list], xp: ModuleType):
        self.fn, self.xp = fn, xp
        self.calls: dict[int, int] = {}  # device -> plain calls so far
        self.captures: dict[int, _Capture] = {}
        self.failed: str | None = None  # why capture is off

    def __call__(self, *buffers: Any) -> list:
        xp = self.xp
        if self.failed is not None or not all(isinstance(b, xp.ndarray) for b in buffers):
            return self.fn(*buffers)
        device = buffers[0].data.device_id if buffers else xp.cuda.Device().id  # as the backend reads it
        capture = self.captures.get(device)
        specs = [(b.shape, b.dtype) for b in buffers]
        if capture is None:
            self.calls[device] = self.calls.get(device, 0) + 1
            if self.calls[device] == 1:
                return self.fn(*buffers)  # compiles the kernels for this device (and loads them): not capturable
            with xp.cuda.Device(device):
                capture = self._capture(buffers, specs)
            if capture is None:
                return self.fn(*buffers)
            self.captures[device] = capture
        elif capture.specs != specs:
            return self.fn(*buffers)
        return self._replay(capture, buffers)

    def _capture(self, buffers: Sequence[Any], specs: list[tuple]) -> _Capture | None:
        xp = self.xp
        pool = xp.cuda.MemoryPool()
        stream = xp.cuda.Stream(non_blocking=True)
        try:
            with xp.cuda.using_allocator(pool.malloc):
                inputs = [xp.empty(b.shape, b.dtype) for b in buffers]
                for dst, src in zip(inputs, buffers):
                    dst[...] = src
                stream.wait_event(xp.cuda.get_current_stream().record())
                with stream:
                    stream.begin_capture()
                    try:
                        outputs = self.fn(*inputs)
                    finally:
                        graph = stream.end_capture()
        except Exception as err:  # noqa: BLE001 - any failure to capture (a host sync): run plainly from now on
            self.failed = f"{type(err).__name__}: {err}"
            return None
        return _Capture(graph, inputs, list(outputs), pool, specs)

    def _replay(self, capture: _Capture, buffers: Sequence[Any]) -> list:
        xp = self.xp
        stream = xp.cuda.get_current_stream()
        for dst, src in zip(capture.inputs, buffers):
            if not src.nbytes:
                continue
            if src.flags.c_contiguous:
                dst.data.copy_from_device_async(src.data, src.nbytes, stream)
            else:
                dst[...] = src
        capture.graph.launch(stream)
        return [o.copy() if isinstance(o, xp.ndarray) else o for o in capture.outputs]
