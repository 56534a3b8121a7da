"""Devices: where arrays live, and where an operation runs.

A `Device` is a platform (``cpu`` on NumPy, ``cuda`` on CuPy) and a number. Every concrete Array
carries a `Place`: its device, and whether it was *committed* there. As in JAX, an array is
committed when the user put it on a device (`ember.device_put(x, device)`, ``device=`` of a
creation function); everything else (arrays from ``enp.asarray``, constants ember makes inside
its rules) is uncommitted, lives on the default device, and follows committed operands wherever
they are. An operation on arrays committed to two devices raises `DeviceError` rather than copying
behind the user's back, and its result is committed to its operands' device.

``config.num_cpu_devices`` (``EMBER_NUM_CPU_DEVICES``) makes several CPU devices, as JAX's host
platform device count does, so that multi-device code runs and is tested without a GPU; they share
NumPy, so moving an array between them copies nothing. ``EMBER_PLATFORM=cpu|cuda`` picks the
platform of the default device.

>>> ember.devices("cpu")[0]
CpuDevice(id=0)
"""

from __future__ import annotations

import os
from typing import Any

from ember import backends
from ember.config import config
from ember.errors import DeviceError, InvalidArgumentError

__all__ = ["CPU", "Device", "Place", "all_devices", "current", "default_device", "place_of", "resolve"]

PLATFORMS = ("cpu", "cuda")


class Device:
    """A place arrays live: ``cpu:N`` (NumPy) or ``cuda:N`` (CuPy, GPU N).

    >>> d = ember.devices()[0]
    >>> d.platform, d.id, str(d)
    ('cpu', 0, 'cpu:0')
    """

    __slots__ = ("id", "platform")

    def __init__(self, platform: str, id: int = 0):
        self.platform = platform
        self.id = id

    @property
    def device_kind(self) -> str:
        """What the device is: ``"cpu"``, or the GPU's name (e.g. ``"NVIDIA H100 80GB HBM3"``)."""
        return "cpu" if self.platform == "cpu" else backends.cuda_device_name(self.id)

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __repr__(self) -> str:
        return f"{'CpuDevice' if self.platform == 'cpu' else 'CudaDevice'}(id={self.id})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform, other.id)

    def __hash__(self) -> int:
        return hash((self.platform, self.id))


CPU = Device("cpu", 0)


class Place:
    """Where a concrete array is: its device, whether it is committed there, and that platform's
    backend. Interned (`place_of`), so the eager cache compares places by identity."""

    __slots__ = ("backend", "committed", "device", "host", "ndarray")

    def __init__(self, device: Device, committed: bool):
        self.device = device
        self.committed = committed
        self.host = device.platform == "cpu" and not committed  # where the eager fast lanes run
        self.backend = backends.cpu if device.platform == "cpu" else backends.cuda()
        self.ndarray = self.backend.ndarray

    def __repr__(self) -> str:
        return f"Place({self.device}, {'committed' if self.committed else 'uncommitted'})"


_PLACES: dict[tuple[Device, bool], Place] = {}


def place_of(device: Device, committed: bool) -> Place:
    """The one `Place` of `device` with that commitment."""
    place = _PLACES.get((device, committed))
    if place is None:
        place = _PLACES[(device, committed)] = Place(device, committed)
    return place


def all_devices(platform: str | None = None) -> list[Device]:
    """The devices present, CPUs first (``config.num_cpu_devices`` of them), then the GPUs CuPy sees.
    Looking for GPUs imports CuPy (once), so asking only for ``"cpu"`` stays cheap."""
    platform = "cuda" if platform == "gpu" else platform
    if platform is not None and platform not in PLATFORMS:
        raise DeviceError(f"ember.devices: unknown platform {platform!r}; the platforms are {', '.join(PLATFORMS)}")
    found = []
    if platform in (None, "cpu"):
        found += [Device("cpu", i) if i else CPU for i in range(config.num_cpu_devices)]
    if platform in (None, "cuda"):
        found += [Device("cuda", i) for i in range(backends.cuda_device_count())]
    return found


def resolve(spec: Any, op: str) -> Device:
    """The device `spec` names: a `Device`, or a string ``"cpu"``, ``"cpu:1"``, ``"cuda"``, ``"cuda:0"``
    (``"gpu"`` is ``"cuda"``). A device that is not present raises `DeviceError` listing those that are."""
    if isinstance(spec, Device):
        device = spec
    elif isinstance(spec, str):
        platform, colon, number = spec.strip().lower().partition(":")
        platform = "cuda" if platform == "gpu" else platform
        if platform not in PLATFORMS or not (number.isdigit() or not colon):
            raise DeviceError(f"{op}: {spec!r} does not name a device; write 'cpu', 'cpu:1', 'cuda' or 'cuda:0' "
                              "(ember.devices() lists those present)")  # fmt: skip
        device = Device(platform, int(number or 0))
    else:
        raise InvalidArgumentError(f"{op}: a device is an ember.Device or a string such as 'cuda:0', got "
                                   f"{type(spec).__name__} {spec!r}")  # fmt: skip
    check_present(device, op)
    return device


def check_present(device: Device, op: str) -> None:
    """Raise `DeviceError` if `device` is not (or no longer) present."""
    if device.platform == "cpu" and device.id < config.num_cpu_devices:
        return
    if device.platform == "cuda":
        backends.cuda()  # raises, with the install command, when CuPy is missing
    present = all_devices(device.platform)
    if device in present:
        return
    hint = "; ember.config.update('num_cpu_devices', n) sets how many CPU devices there are" \
        if device.platform == "cpu" else ""
    raise DeviceError(f"{op}: device {device} is not present (the {device.platform} devices: "
                      f"{', '.join(map(str, present)) or 'none'}){hint}")


class _Current:
    """The default device's uncommitted place: what `ember.core.array.wrap` gives new arrays."""

    place: Place


current = _Current()


def _platform_default() -> Device:
    platform = os.environ.get("EMBER_PLATFORM", "").strip().lower() or "cpu"
    if platform == "gpu":
        platform = "cuda"
    if platform not in PLATFORMS:
        raise DeviceError(f"EMBER_PLATFORM={platform!r} names no platform; use 'cpu' or 'cuda'")
    if platform == "cuda":
        backends.cuda()  # without CuPy: a DeviceError with the install command
    found = all_devices(platform)
    if not found:  # CuPy is there but sees no GPU
        raise DeviceError("EMBER_PLATFORM=cuda, but CuPy finds no CUDA device; unset it to run on the CPU")
    return found[0]


def default_device() -> Device:
    """The device new arrays go to (``config.default_device``, else the first of ``EMBER_PLATFORM``)."""
    return current.place.device


def _default_place(chosen: Any, op: str) -> Place:
    """The uncommitted place of the device ``config.default_device`` names (`chosen`), or of the platform's first."""
    return place_of(_platform_default() if chosen is None else resolve(chosen, op), False)


def _on_update(name: str, value: Any) -> None:
    if name == "default_device":
        current.place = _default_place(value, "ember.default_device")
    elif name == "num_cpu_devices":
        if value < 1:
            raise InvalidArgumentError(f"ember.config: num_cpu_devices must be at least 1, got {value}")
        # the default device may have been one of the CPU devices taken away
        current.place = _default_place(config.default_device, "num_cpu_devices")


config.on_update(_on_update)
current.place = _default_place(config.default_device, "EMBER_PLATFORM")
