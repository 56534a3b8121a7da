"""Compiling programs to generated NumPy code: the kernel table generated code calls, shared by `jit`
and by control flow's programs (which compile themselves once they have run a few times).

Primitives that generated code runs with a Python implementation on raw buffers instead of a backend
kernel register it in `raw_impls` (control flow in ember/lax, callbacks in ember/transforms/callback.py).
This module sits below both jit.py and the program helpers (_programs.py), so neither imports the other
for it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ember.backends import Backend, cpu
from ember.backends.codegen import Compiled, compile_program
from ember.core.devices import Place
from ember.core.primitive import Primitive, _mover, _shares_memory
from ember.core.staging import SubProgram, custom_jvp_call_p, custom_vjp_call_p

__all__ = ["active_backend", "compiled_for", "compiled_sub", "on_place", "raw_impls", "raw_kernel", "run_raw"]

# ``raw_impls[prim](*buffers, **params) -> output buffer(s)``, filled by the modules defining `prim`.
raw_impls: dict[Primitive, Callable[..., Any]] = {}


def raw_kernel(prim: Primitive) -> Callable[..., Any]:
    """The function generated code calls for `prim`: its backend kernel, or for a staged custom rule
    the compiled program of its function (the rule matters only to transforms, which never see
    generated code)."""
    impl = raw_impls.get(prim)
    if impl is not None:
        return impl
    if prim is custom_jvp_call_p or prim is custom_vjp_call_p:
        return _run_custom_call
    return cpu.kernel(prim.name)


def _run_custom_call(*buffers: Any, sub: SubProgram, **_: Any) -> list:
    return compiled_sub(sub)(*buffers)


def compiled_sub(sub: SubProgram) -> Compiled:
    if sub.compiled is None:
        sub.compiled = compile_program(sub.program, raw_kernel, sub.name)
    return sub.compiled


_running: ContextVar[Backend] = ContextVar("ember_running_backend", default=cpu)


def active_backend() -> Backend:
    """The backend whose compiled code is running (the CPU outside compiled code): control flow's raw
    implementations run their programs compiled for it and allocate their buffers with its `xp`.

    >>> active_backend().platform
    'cpu'
    """
    return _running.get()


def run_raw(prim: Primitive, buffers: list, params: dict, backend: Backend) -> Any:
    """`prim`'s raw implementation on `buffers` (on `backend`'s device), with `backend` as `active_backend()`:
    how control flow runs eagerly on the device of its operands."""
    if backend is cpu:
        return raw_impls[prim](*buffers, **params)
    token = _running.set(backend)
    try:
        return raw_impls[prim](*buffers, **params)
    finally:
        _running.reset(token)


def _running_on(compiled: Compiled, backend: Backend) -> Compiled:
    """`compiled`, whose calls run with `backend` as `active_backend()`."""
    fn = compiled.fn

    def on_backend(*buffers: Any) -> list:
        token = _running.set(backend)
        try:
            return fn(*buffers)
        finally:
            _running.reset(token)

    return Compiled(on_backend, compiled.source, compiled.filename)


def compiled_for(sub: SubProgram, backend: Backend, donated: tuple[int, ...] = ()) -> Compiled:
    """`sub` compiled by `backend` (the CPU's generated NumPy, or a GPU backend's own compiler), writing
    into the buffers of the inputs at `donated`; kept on `sub`."""
    if backend is cpu and not donated:
        return compiled_sub(sub)
    key = ("compiled", backend.platform, donated)
    if key not in sub.derived:
        if backend is cpu:
            sub.derived[key] = compile_program(sub.program, raw_kernel, sub.name, donated)
        else:
            sub.derived[key] = _running_on(backend.compile(sub.program, raw_impls, sub.name, donated), backend)
    return sub.derived[key]


def on_place(x: Any, place: Place) -> Any:
    """The buffer of concrete Array `x` on `place`'s device (moved through the host if it is elsewhere)."""
    if _shares_memory(x._place, place):
        return x._value
    return _mover(x._place, place)(x._value)
