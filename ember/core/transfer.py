"""Moving arrays between devices: `device_put`, and `default_device` for a block.

>>> x = ember.device_put(enp.arange(3.0), ember.devices()[0])
>>> x.device, x.committed
(CpuDevice(id=0), True)
"""

from __future__ import annotations

from typing import Any

from ember.config import config
from ember.core import devices as _devices
from ember.core.array import Array, from_host, wrap
from ember.core.devices import Device, Place
from ember.core.primitive import Tracer, _mover, result_place
from ember.core.pytree import tree_map

__all__ = ["constant", "default_device", "device_put", "devices", "follow", "operands_place"]

_UNSET = object()


def devices(platform: str | None = None) -> list[Device]:
    """The devices ember can place arrays on: the CPU devices (``config.num_cpu_devices`` of them,
    ``EMBER_NUM_CPU_DEVICES``), then the GPUs CuPy finds; `platform` (``"cpu"`` or ``"cuda"``) picks one kind.

    >>> ember.devices("cpu")
    [CpuDevice(id=0)]
    """
    return _devices.all_devices(platform)


def device_put(x: Any, device: Device | str | None = None) -> Any:
    """`x` (an array, a NumPy array, a Python value or a pytree of them) on `device`, committed there:
    operations on it run on that device, and their results stay there. Without `device`, the default
    device, uncommitted. Moving between two CPU devices copies nothing (they share host memory);
    between the host and a GPU it copies. Under a transform, a traced value is returned as it is.

    >>> y = ember.device_put({"w": enp.asarray([1.0, 2.0])}, "cpu:0")["w"]
    >>> y.device, y.committed, y.tolist()
    (CpuDevice(id=0), True, [1.0, 2.0])
    """
    place = _devices.current.place if device is None else _devices.place_of(_devices.resolve(device, "device_put"), True)
    return tree_map(lambda leaf: _put(leaf, place), x)


def _put(x: Any, place: Place) -> Any:
    if isinstance(x, Tracer):
        return x
    if not isinstance(x, Array):
        x = from_host(x, "device_put")
    if x._place is place:
        return x
    return wrap(_mover(x._place, place)(x._value), x._weak, place)  # CPU devices share host memory: no copy


def operands_place(op: str, *operands: Any) -> Place:
    """Where operation `op` on `operands` leaves its result (`result_place`: their committed device, else
    that of the first array away from the default device, else the default's), for a result made without
    reading them: from their shapes, or a constant. With a traced operand, or no array, the default
    device's: a transform places its outputs itself.

    >>> operands_place("zeros_like", ember.device_put(enp.ones(2), "cpu:0"))
    Place(cpu:0, committed)
    """
    return _concrete_place(op, operands) or _devices.current.place


def _concrete_place(op: str, operands: tuple) -> Place | None:
    arrays = [x for x in operands if isinstance(x, Array)]
    if not arrays or any(isinstance(x, Tracer) for x in arrays):
        return None
    return result_place(op, arrays)


def constant(value: Any, weak: bool, place: Place) -> Array:
    """`value` (a NumPy array of an ember dtype, usually 0-d) as an Array at `place` (copied to a GPU's memory
    there); a constant standing for operand ``x`` takes ``x._place``, so that it stays on ``x``'s device.

    >>> constant(np.zeros((), np.float32), True, ember.device_put(enp.ones(2), "cpu:0")._place).committed
    True
    """
    if place.backend is not _devices.backends.cpu:
        value = place.backend.from_host(value, place.device.id)
    return wrap(value, weak, place)


def follow(op: str, out: Any, *operands: Any) -> Any:
    """`out` (an Array, or a tuple or list of them), made without reading `operands` (an empty operand's
    shortcut, a constant for a dtype), moved to where `op` on `operands` leaves its result
    (`operands_place`): on their device, committed when they are, as JAX's ``full_like`` keeps its operand's.
    An array of `out` committed to a device already stays there.

    >>> x = ember.device_put(enp.ones(0), "cpu:0")
    >>> follow("sum", enp.zeros(0), x).committed
    True
    """
    place = _concrete_place(op, operands)
    if place is None:  # traced operands: the transform places its outputs
        return out
    if isinstance(out, (tuple, list)):
        return type(out)(_follower(o, place) for o in out)
    return _follower(out, place)


def _follower(x: Any, place: Place) -> Any:
    # Only an uncommitted array moves: one the user committed elsewhere stays there (never a silent copy).
    return _put(x, place) if type(x) is Array and not x._place.committed else x


class _DefaultDeviceBlock:
    """``with ember.default_device(d):`` — new arrays go to `d` inside the block (uncommitted)."""

    def __init__(self, device: Device | str | None):
        self._device = None if device is None else _devices.resolve(device, "ember.default_device")
        self._stack: list[Any] = []

    def __enter__(self) -> Device:
        self._stack.append(config.default_device)
        config.update("default_device", self._device)
        return _devices.default_device()

    def __exit__(self, *exc: Any) -> None:
        config.update("default_device", self._stack.pop())


def default_device(device: Device | str | None | object = _UNSET) -> Device | _DefaultDeviceBlock:
    """With no argument, the device new arrays go to; with one, a context manager making `device`
    (a `Device` or a name such as ``"cuda:0"``; None for the platform's first) the default inside its block.

    >>> ember.default_device()
    CpuDevice(id=0)
    >>> with ember.default_device("cpu:0"):
    ...     enp.zeros(2).device
    CpuDevice(id=0)
    """
    if device is _UNSET:
        return _devices.default_device()
    return _DefaultDeviceBlock(device)
