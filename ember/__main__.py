"""`python -m ember`: what ember finds on this machine and what an eager op costs.

Prints the version, the backends, each device (for a GPU: its name, compute
capability, total and free memory, and the CuPy, CUDA runtime and driver
versions; without one, why not and what to install), and eager per-op times
next to NumPy's own on tiny arrays (the overhead ember adds per call).
"""

from __future__ import annotations

import platform
import timeit
from types import ModuleType

import numpy as np

import ember
import ember.numpy as enp
from ember import backends

INSTALL_CUDA = backends.INSTALL_CUDA


def _best_of(stmt, number: int = 4000, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def eager_overhead_table() -> list[tuple[str, float, float]]:
    """(operation, ember microseconds, NumPy microseconds) on float32 arrays of shape (3,)."""
    a = np.arange(1, 4, dtype=np.float32)
    b = np.arange(4, 7, dtype=np.float32)
    x, y = enp.asarray(a), enp.asarray(b)
    cases = [
        ("a + b", lambda: x + y, lambda: a + b),
        ("a * b", lambda: x * y, lambda: a * b),
        ("a * 2.0", lambda: x * 2.0, lambda: a * np.float32(2.0)),
        ("sin(a)", lambda: enp.sin(x), lambda: np.sin(a)),
        ("sum(a)", lambda: enp.sum(x), lambda: np.sum(a)),
        ("a @ b", lambda: x @ y, lambda: a @ b),
        ("a[1:]", lambda: x[1:], lambda: a[1:]),
    ]
    rows = []
    for name, ours, theirs in cases:
        # Interleave the two so that machine noise hits both alike.
        t_ours = min(_best_of(ours, repeat=1) for _ in range(5))
        t_np = min(_best_of(theirs, repeat=1) for _ in range(5))
        rows.append((name, t_ours, t_np))
    return rows


def cuda_version(encoded: int) -> str:
    """A CUDA version as the runtime encodes it (1000 * major + 10 * minor) in words; 0 means none.

    >>> cuda_version(13020), cuda_version(12080), cuda_version(0)
    ('13.2', '12.8', 'none')
    """
    return f"{encoded // 1000}.{encoded % 1000 // 10}" if encoded else "none"


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _gpu_line(cupy: ModuleType, i: int) -> str:
    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(i)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    memory = f"{_gib(props['totalGlobalMem'])} total"
    try:
        with cupy.cuda.Device(i):
            free, total = runtime.memGetInfo()
        memory = f"{_gib(total)} total, {_gib(free)} free"
    except Exception as err:  # noqa: BLE001 - a busy or failing GPU still gets its line
        memory += f" (free memory unknown: {err})"
    return f"cuda:{i}  {name}: compute capability {props['major']}.{props['minor']}, {memory}"


def cuda_report(cupy: ModuleType | None) -> list[str]:
    """Lines on the GPUs CuPy (`cupy`, None when it is not installed) sees: one per GPU and the versions,
    or why there is none and what to do.

    >>> print(*cuda_report(None))
    cuda    none: CuPy is not installed; pip install 'ember[cuda]' (it brings cupy-cuda13x; no compiler is needed)
    """
    if cupy is None:
        return [f"cuda    none: CuPy is not installed; {INSTALL_CUDA}"]
    runtime = cupy.cuda.runtime
    versions = []
    for what, get in (("CUDA runtime", runtime.runtimeGetVersion), ("driver", runtime.driverGetVersion)):
        try:
            versions.append(f"{what} {cuda_version(int(get()))}")
        except Exception as err:  # noqa: BLE001 - reported, not raised: this is a diagnostic
            versions.append(f"{what} unknown ({err})")
    found = f"CuPy {cupy.__version__}, {', '.join(versions)}"
    try:
        count = int(runtime.getDeviceCount())
    except Exception as err:  # noqa: BLE001 - CUDARuntimeError: no driver, a driver too old, no device
        return [f"cuda    none: CuPy finds no GPU ({err}); {found}"]
    if count == 0:
        return [f"cuda    none: CuPy finds no GPU; {found}"]
    return [_gpu_line(cupy, i) for i in range(count)] + [found]


_FIND = object()


def device_report(cupy: ModuleType | None | object = _FIND) -> list[str]:
    """Lines on every device ember can use: the default one, the CPU devices, then the GPUs or why there
    are none. `cupy` is the CuPy module to ask (None: as if it were not installed); by default CuPy is
    imported, if it is installed.

    >>> for line in device_report(None): print(line)
    default device: cpu:0
    cpu:0   the host, NumPy ...
    1 CPU device (EMBER_NUM_CPU_DEVICES=n makes n)
    cuda    none: CuPy is not installed; pip install 'ember[cuda]' ...
    """
    cpus = ember.devices("cpu")
    lines = [f"default device: {ember.default_device()}"]
    lines += [f"{str(d):7s} the host, NumPy {np.__version__}" for d in cpus]
    lines.append(f"{len(cpus)} CPU device{'s' if len(cpus) > 1 else ''} (EMBER_NUM_CPU_DEVICES=n makes n)")
    return lines + cuda_report(backends._cupy() if cupy is _FIND else cupy)


def main() -> None:
    print(f"ember {ember.__version__} on Python {platform.python_version()} ({platform.machine()})")
    print("backends:")
    for name, state in backends.available().items():
        print(f"  {name:5s} {state}")
    print("devices:")
    for line in device_report():
        print(f"  {line}")
    print("\neager cost per call on float32 arrays of shape (3,), best of 5 runs:")
    print(f"  {'operation':10s} {'ember':>9s} {'NumPy':>9s} {'ratio':>7s}")
    for name, ours, theirs in eager_overhead_table():
        print(f"  {name:10s} {ours:8.2f}us {theirs:8.2f}us {ours / theirs:6.1f}x")


if __name__ == "__main__":
    main()
