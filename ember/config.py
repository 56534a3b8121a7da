"""ember's configuration: the only mutable global state in ember.

>>> import ember
>>> ember.config.enable_x64
False
>>> with ember.config.x64(True):
...     ember.numpy.zeros(2, dtype="float64").dtype
dtype('float64')
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["Config", "config"]


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """Holds ember's options; read them as attributes, set them with `update`.

    Options:
      enable_x64: allow 64-bit dtypes (default False, or ``EMBER_ENABLE_X64``).
        While off, 64-bit inputs are converted to their 32-bit counterparts.
      disable_jit: run jitted functions as plain Python (default False, or ``EMBER_DISABLE_JIT``;
        `ember.disable_jit()` sets it for a block).
      explain_retrace: log (logger ``ember.jit``, level WARNING) why a jitted function traces again:
        which argument changed, from what to what.
      jit_cache_size: how many traces each jitted function keeps (least recently used go first).
      debug_nans: raise at the first primitive that produces a NaN, naming it.
      num_cpu_devices: how many CPU devices ``ember.devices("cpu")`` lists (default 1, or
        ``EMBER_NUM_CPU_DEVICES``): several let multi-device code run, and be tested, without a GPU.
      default_device: where new arrays go: None (the first device of ``EMBER_PLATFORM``, else the CPU),
        a `Device` or its name such as ``"cpu:1"`` (`ember.default_device` sets it for a block).
      memory_budget: the bytes ``chunk_size="auto"`` may use: a chunk's peak and the whole result (default None: half of
        the memory available now, from ``/proc/meminfo`` on the CPU and the device's free memory on
        CUDA; or ``EMBER_MEMORY_BUDGET`` in bytes).
      collective_timeout: seconds a collective across processes waits for every rank to arrive before
        it raises, naming the ranks that did not (default 60, or ``EMBER_COLLECTIVE_TIMEOUT``).
    """

    _defaults: dict[str, Any] = {
        "enable_x64": _env_flag("EMBER_ENABLE_X64", False),
        "disable_jit": _env_flag("EMBER_DISABLE_JIT", False),
        "explain_retrace": False,
        "jit_cache_size": 64,
        "debug_nans": False,
        "num_cpu_devices": int(os.environ.get("EMBER_NUM_CPU_DEVICES", "1") or 1),
        "default_device": None,
        "memory_budget": int(os.environ["EMBER_MEMORY_BUDGET"]) if os.environ.get("EMBER_MEMORY_BUDGET") else None,
        "collective_timeout": float(os.environ.get("EMBER_COLLECTIVE_TIMEOUT", "60") or 60),
    }
    _any_type = frozenset({"default_device", "memory_budget"})  # checked by their own rules (devices.py's listener, below)

    def __init__(self) -> None:
        # Options are plain instance attributes: reading one is on ember's hot paths.
        self.__dict__.update(self._defaults)
        self._listeners: list = []

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"ember.config has no option {name!r}; options: {sorted(self._defaults)}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._defaults:
            raise AttributeError(f"set ember.config options with ember.config.update({name!r}, value)")
        super().__setattr__(name, value)

    def update(self, name: str, value: Any) -> None:
        """Set option `name` to `value`.

        >>> ember.config.update("enable_x64", True)
        >>> ember.config.update("enable_x64", False)
        """
        if name not in self._defaults:
            raise AttributeError(f"ember.config has no option {name!r}; options: {sorted(self._defaults)}")
        expected = type(self._defaults[name])
        if name == "memory_budget" and value is not None and (type(value) is not int or value < 1):
            raise TypeError(f"ember.config option 'memory_budget' takes a positive int (bytes) or None, got {value!r}")
        if name == "collective_timeout" and not value > 0:
            raise TypeError(f"ember.config option 'collective_timeout' takes a positive float (seconds), got {value!r}")
        if name not in self._any_type and not isinstance(value, expected):
            raise TypeError(f"ember.config option {name!r} takes a {expected.__name__}, got {value!r}")
        previous = self.__dict__[name]
        self.__dict__[name] = value
        try:
            for listener in self._listeners:
                listener(name, value)
        except Exception:
            self.__dict__[name] = previous  # a listener refused the value (e.g. a device that is not present)
            raise

    def on_update(self, listener) -> None:
        """Call ``listener(name, value)`` after every `update` (used by caches)."""
        self._listeners.append(listener)

    @contextlib.contextmanager
    def x64(self, enabled: bool = True) -> Iterator[None]:
        """Context manager that turns 64-bit mode on (or off) inside its block.

        >>> with ember.config.x64(True):
        ...     pass
        """
        with self._temporarily("enable_x64", bool(enabled)):
            yield

    @contextlib.contextmanager
    def _temporarily(self, name: str, value: Any) -> Iterator[None]:
        """Set option `name` to `value` inside the block, and back to what it was after it."""
        previous = getattr(self, name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, previous)


config = Config()
