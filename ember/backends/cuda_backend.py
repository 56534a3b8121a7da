"""The CUDA backend: CuPy buffers on one or more GPUs, the kernel table of `kernels_cuda`.

Status: written and tested on the CPU only (tests/test_backend_cuda.py, with NumPy standing in for CuPy);
it has not yet run on a GPU, so what follows describes how it is built, not what was measured.

Every kernel runs under the GPU its operands live on: the table's kernels are wrapped so that a call
whose first buffer is on another device than CuPy's current one enters that device for the call (the
check is one integer comparison; the switch happens only for multi-GPU code). A kernel or a transfer
that runs out of GPU memory raises `ember.errors.DeviceMemoryError` naming the primitive, its
operands' shapes and dtypes, and the bytes asked for.

Transfers: ``to_host`` copies into pinned (page-locked) host memory for large buffers, where the DMA
engine runs at full speed, then hands out an ordinary NumPy array (pinned memory is scarce, so the
staging buffer goes back to CuPy's pool); ``from_host`` is ``cupy.asarray`` under the target device,
which stages through pinned memory itself and copies asynchronously on the current stream.

>>> from ember.backends.cuda_backend import DEVICE_MEMORY_HINT
>>> DEVICE_MEMORY_HINT.startswith("chunk_size=")
True
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ember.backends import Backend
from ember.backends.codegen import Compiled
from ember.errors import DeviceError, DeviceMemoryError

__all__ = ["DEVICE_MEMORY_HINT", "CudaBackend", "make_backend", "out_of_memory"]

# From this size device->host copies go through pinned memory (below it the staging copy costs more than
# the slower pageable DMA saves).
_PINNED_MIN = 1 << 20

DEVICE_MEMORY_HINT = ("chunk_size= on ember.vmap / ember.jacrev / ember.jacfwd (to compute in pieces), a smaller "
                      "batch, or freeing arrays you no longer need (del x)")  # fmt: skip


def make_backend(cupy: ModuleType) -> Backend:
    """The CUDA backend on CuPy module `cupy` (called by `ember.backends.cuda()`, once). Building it touches
    no GPU; kernels are compiled on first use.

    >>> callable(make_backend)
    True
    """
    from ember.backends.kernels_cuda import make_cuda_kernels

    return CudaBackend(cupy, make_cuda_kernels(cupy))


class CudaBackend(Backend):
    """The ``cuda`` platform: `xp` is CuPy, buffers are ``cupy.ndarray``s on GPU ``buffer.data.device_id``.

    >>> CudaBackend.__mro__[1].__name__
    'Backend'
    """

    def __init__(self, cupy: ModuleType, kernels: dict[str, Callable[..., Any]], cupyx: ModuleType | None = None):
        self._cupy = cupy
        self._cupyx = cupyx  # imported on first use when not given (tests give stand-ins)
        self._oom = cupy.cuda.memory.OutOfMemoryError
        self.ndarray = cupy.ndarray
        super().__init__("cuda", cupy, {name: self._on_device(name, k) for name, k in kernels.items()})

    # --- kernels ---------------------------------------------------------------------------------------

    def _on_device(self, name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
        """`kernel` (or a compiled program) run under its first operand's GPU, with out-of-memory errors
        translated."""
        cupy, ndarray, oom = self._cupy, self.ndarray, self._oom
        current = cupy.cuda.runtime.getDevice
        enter = cupy.cuda.Device

        def run(*args: Any, **params: Any) -> Any:
            device = next((a.data.device_id for a in args if isinstance(a, ndarray)), None)
            try:
                if device is None or device == current():
                    return kernel(*args, **params)
                with enter(device):
                    return kernel(*args, **params)
            except oom as err:
                raise out_of_memory(name, args, err) from err

        run.__name__ = getattr(kernel, "__name__", name)
        run.__wrapped__ = kernel
        return run

    def compile(self, program: Any, raw_impls: dict, name: str, donated: tuple[int, ...] = ()) -> Any:
        """`program` compiled for the GPU by `ember.backends.codegen_cuda` (imported on first use), run under
        its first input's GPU (its kernels and the buffers it allocates land there)."""
        try:
            from ember.backends import codegen_cuda
        except ImportError as err:
            raise DeviceError(f"jit of {name!r} on the cuda platform: the CUDA compiler "
                              f"(ember.backends.codegen_cuda) is not available ({err})") from err  # fmt: skip
        compiled = codegen_cuda.compile_program(program, self._kernel_for(raw_impls), name, donated, xp=self._cupy)
        return Compiled(self._on_device(f"jit of {name!r}", compiled.fn), compiled.source, compiled.filename)

    def _kernel_for(self, raw_impls: dict) -> Callable[[Any], Callable[..., Any]]:
        """What generated code calls for a primitive: its registered raw implementation (control flow,
        callbacks), a custom-rule call's own program compiled here (its rule matters only to transforms),
        else this backend's kernel."""

        def run_custom_call(*buffers: Any, sub: Any, **_: Any) -> Any:
            key = ("compiled", self.platform, ())
            if key not in sub.derived:
                sub.derived[key] = self.compile(sub.program, raw_impls, sub.name)
            return sub.derived[key](*buffers)

        def kernel_for(prim: Any) -> Callable[..., Any]:
            impl = raw_impls.get(prim)
            if impl is not None:
                return impl
            if prim.name in ("custom_jvp_call", "custom_vjp_call"):
                return run_custom_call
            return self.kernel(prim.name)

        return kernel_for

    # --- transfers -------------------------------------------------------------------------------------

    def to_host(self, buffer: Any) -> np.ndarray:
        """`buffer` copied into a fresh NumPy array (waits for the copy)."""
        cupy = self._cupy
        try:
            with cupy.cuda.Device(buffer.data.device_id):
                if buffer.nbytes < _PINNED_MIN:
                    return buffer.get()
                if self._cupyx is None:
                    import cupyx

                    self._cupyx = cupyx
                source = cupy.ascontiguousarray(buffer)
                pinned = self._cupyx.empty_pinned(source.shape, source.dtype)
                stream = cupy.cuda.get_current_stream()
                source.get(stream=stream, out=pinned)
                stream.synchronize()
                return np.array(pinned, copy=True)  # the pinned staging buffer goes back to CuPy's pool
        except self._oom as err:
            raise out_of_memory("to_host (copying to the host)", (buffer,), err) from err

    def from_host(self, value: Any, device_id: int = 0) -> Any:
        """Host array `value` as a buffer on GPU `device_id`, copied asynchronously on that device's
        current stream (CuPy stages it through pinned memory it keeps alive until the copy is done)."""
        cupy = self._cupy
        value = np.asarray(value)
        try:
            with cupy.cuda.Device(device_id):
                return cupy.asarray(value, blocking=False)
        except self._oom as err:
            raise out_of_memory(f"from_host (copying to cuda:{device_id})", (value,), err) from err

    def from_gpu(self, value: Any, device_id: int) -> Any:
        """A copy, on GPU `device_id`, of a device array (a CuPy array, or anything with
        ``__cuda_array_interface__`` or DLPack; `device_id` -1: the GPU it is on): no trip through the host."""
        cupy = self._cupy
        try:
            source = value if isinstance(value, self.ndarray) else _import_gpu(cupy, value)
            with cupy.cuda.Device(source.data.device_id if device_id < 0 else device_id):
                return cupy.array(source, copy=True)  # peer-to-peer when on another GPU
        except self._oom as err:
            raise out_of_memory(f"copying to cuda:{device_id}", (value,), err) from err

    def device(self, device_id: int) -> Any:
        """A context manager making GPU `device_id` CuPy's current device: where a kernel without operands
        (iota, a constant) allocates its result."""
        return self._cupy.cuda.Device(device_id)

    def synchronize(self, buffer: Any) -> None:
        """Wait for the work queued on the current stream of `buffer`'s GPU."""
        with self._cupy.cuda.Device(buffer.data.device_id):
            self._cupy.cuda.get_current_stream().synchronize()

    def export_dlpack(self, buffer: Any, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                      copy: bool | None = None) -> Any:  # fmt: skip
        """A DLPack capsule of `buffer`, shared without a copy unless `copy` (or a host `dl_device`) asks."""
        if dl_device is not None and int(dl_device[0]) == 1:  # kDLCPU: the consumer wants host memory
            if copy is False:
                raise BufferError("__dlpack__(dl_device=CPU, copy=False): this array is on a GPU; copying it to "
                                  "the host is a copy (pass copy=None or True)")  # fmt: skip
            return self.to_host(buffer).__dlpack__(max_version=max_version) if max_version else \
                self.to_host(buffer).__dlpack__()
        if copy:
            buffer = buffer.copy()
        kwargs: dict[str, Any] = {"stream": stream}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device  # another GPU: CuPy raises BufferError, as the array API says
        return buffer.__dlpack__(**kwargs)


def _import_gpu(cupy: ModuleType, value: Any) -> Any:
    """A CuPy view of a foreign GPU array (PyTorch, Numba, JAX): ``__cuda_array_interface__`` or DLPack."""
    if hasattr(value, "__cuda_array_interface__"):
        return cupy.asarray(value)
    return cupy.from_dlpack(value)


def out_of_memory(op: str, args: Any, err: BaseException) -> DeviceMemoryError:
    """The `DeviceMemoryError` for CuPy's out-of-memory error `err` in `op` on operands `args`.

    >>> class Oom(MemoryError):
    ...     _size, _total = 2**30, 2**34
    >>> str(out_of_memory("add", (np.zeros((2, 3), np.float32),), Oom()))[:60]
    'add: the GPU ran out of memory allocating 1.0 GiB (16.0 GiB '
    """
    asked, held = getattr(err, "_size", None), getattr(err, "_total", None)
    shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in args if hasattr(a, "shape") and hasattr(a, "dtype"))
    size = f" {_bytes(asked)}" if asked else ""
    already = f" ({_bytes(held)} already allocated by ember's CuPy memory pool)" if held is not None else ""
    operands = f" for operands {shapes}" if shapes else ""
    return DeviceMemoryError(f"{op}: the GPU ran out of memory allocating{size}{already}{operands}. "
                             f"To use less memory: {DEVICE_MEMORY_HINT}")  # fmt: skip


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    unit = 0
    while unit < 3 and n >= 1024 ** (unit + 2):
        unit += 1
    return f"{n / 1024 ** (unit + 1):.1f} {('KiB', 'MiB', 'GiB', 'TiB')[unit]}"
