"""Backends: tables from primitive name to kernel, one per platform.

A backend is an array module (`xp`) plus ``{primitive name: kernel}``. Most
kernels are written once against `xp` in `ember.backends.kernels` and shared
by every backend; a backend overrides only what differs. Nothing here imports
the transforms or the core: the core looks kernels up by primitive name.

The CUDA backend (`cuda()`, cuda_backend.py and the *_cuda.py modules) is
written and tested on the CPU with stand-ins for CuPy, but has not yet run on
a GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ember.errors import DeviceError

__all__ = ["Backend", "available", "cpu", "cuda", "cuda_device_count", "cuda_device_name"]


class Backend:
    """A platform: its array module, buffer type and kernel table."""

    def __init__(self, platform: str, xp: ModuleType, kernels: dict[str, Callable[..., Any]]):
        self.platform = platform
        self.xp = xp
        self.ndarray = xp.ndarray
        self.kernels = kernels

    def compile(self, program: Any, raw_impls: dict, name: str, donated: tuple[int, ...] = ()) -> Any:
        """`program` (ember/core/ir.py) as a function of raw buffers; the CPU's is `codegen.compile_program`,
        called by the jit layer directly. A GPU backend overrides this with its own compiler."""
        raise NotImplementedError(f"the {self.platform} backend does not compile programs")

    def to_host(self, buffer: Any) -> Any:
        """`buffer` as a NumPy array in host memory (the buffer itself on the CPU)."""
        return buffer

    def from_host(self, value: Any, device_id: int = 0) -> Any:
        """A host NumPy array as a buffer on this platform's device `device_id` (the array itself on the CPU)."""
        return value

    def synchronize(self, buffer: Any) -> None:
        """Wait until `buffer`'s value is computed (CPU kernels finish before they return)."""

    def kernel(self, name: str) -> Callable[..., Any]:
        try:
            return self.kernels[name]
        except KeyError:
            raise NotImplementedError(f"the {self.platform} backend has no kernel for primitive {name!r}") from None

    def __repr__(self) -> str:
        return f"Backend({self.platform!r}, {self.xp.__name__} {self.xp.__version__}, {len(self.kernels)} kernels)"


def _make_cpu() -> Backend:
    import numpy

    from ember.backends.kernels import make_kernels

    return Backend("cpu", numpy, make_kernels(numpy))


cpu = _make_cpu()


INSTALL_CUDA = "pip install 'ember[cuda]' (it brings cupy-cuda13x; no compiler is needed)"


@functools.cache
def _cupy() -> ModuleType | None:
    try:
        import cupy
    except ImportError:
        return None
    return cupy


@functools.cache
def cuda() -> Backend:
    """The CUDA backend (built once, on first use); `DeviceError` with the install command without CuPy."""
    cupy = _cupy()
    if cupy is None:
        raise DeviceError(f"the cuda platform needs CuPy, which is not installed: {INSTALL_CUDA}")
    from ember.backends.cuda_backend import make_backend  # (a module named cuda would shadow this function)

    return make_backend(cupy)


@functools.cache
def cuda_device_count() -> int:
    """How many GPUs CuPy sees (0 without CuPy, or without a driver)."""
    cupy = _cupy()
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - CUDARuntimeError (no driver, no device): no GPU to use
        return 0


def cuda_device_name(device_id: int) -> str:
    """GPU `device_id`'s name, as the driver reports it."""
    props = _cupy().cuda.runtime.getDeviceProperties(device_id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def available() -> dict[str, str]:
    """Each platform ember can see, with a word on its state."""
    found = {"cpu": f"NumPy {cpu.xp.__version__}"}
    cupy = _cupy()
    if cupy is None:
        found["cuda"] = "not available (CuPy is not installed: pip install 'ember[cuda]')"
    elif cuda_device_count() == 0:
        found["cuda"] = f"not available (CuPy {cupy.__version__} is installed but finds no GPU)"
    else:
        found["cuda"] = f"CuPy {cupy.__version__}, {cuda_device_count()} GPU(s)"
    return found
