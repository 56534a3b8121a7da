"""Traceback filtering: errors that reach the user's code show the user's frames, not ember's.

A shape error raised three calls deep inside a primitive's rule, under `grad` and `vmap`, would
otherwise print some fifty lines of ember's internals above the one line that matters. As JAX does,
ember's public entry points (the transforms, the functions of `ember.numpy`, `ember.lax`,
`ember.scipy` and `ember.random`, the operators of `Array`) are *boundaries*: an exception leaving
one has the frames of files inside the ember package dropped from its traceback, so what is left is
the user's code (the call into ember, and the user's functions that a transform ran). The message
already names the operation, the shapes and the dtypes.

Filtered: every `ember.errors.EmberError`, and any exception raised in the user's own code that
passes through ember (a typo in a loss function under `grad`). An exception of another type raised
inside ember is a bug in ember and keeps its whole traceback. When an ember error replaces a NumPy
exception it caught, that internal exception is not shown ("During handling of the above
exception...").

Set the environment variable ``EMBER_TRACEBACK_FILTERING=off`` (or ``0``/``false``/``no``) to see
every frame; it is read when an error happens, so it can be changed in a running session
(``os.environ["EMBER_TRACEBACK_FILTERING"] = "off"``). ember's own test suite turns it off.
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable
from typing import Any, TypeVar

from ember.errors import EmberError

__all__ = ["api_boundary", "filter_error", "filtering_enabled", "wrap_namespace"]

ENV = "EMBER_TRACEBACK_FILTERING"
_ROOT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_OFF = frozenset({"off", "0", "false", "no"})

F = TypeVar("F", bound=Callable[..., Any])


def filtering_enabled() -> bool:
    """Whether ember drops its own frames from tracebacks (EMBER_TRACEBACK_FILTERING, on by default)."""
    return os.environ.get(ENV, "on").strip().lower() not in _OFF


# Programs shipped inside the package that use ember as a user does: their frames are the user's code.
_USER_FILES = frozenset(_ROOT + name for name in ("demo.py", "__main__.py"))


def _internal(tb: types.TracebackType) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    # "<ember-jit-N-name>": the source jit generates (ember/backends/codegen.py), ember's too
    return filename.startswith(_ROOT) and filename not in _USER_FILES or filename.startswith("<ember-jit-")


def _entries(tb: types.TracebackType | None) -> list[types.TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def filter_error(err: BaseException) -> None:
    """Drop ember's frames from `err`'s traceback (in place), where that helps the reader."""
    entries = _entries(err.__traceback__)
    if not entries or not filtering_enabled():
        return
    ember_error = isinstance(err, EmberError)
    if not ember_error and _internal(entries[-1]):
        return  # raised inside ember and not one of its errors: a bug, whose every frame matters
    # The traceback starts at the boundary's frame: the callers' frames join it as the error travels on.
    kept = [tb for tb in entries if not _internal(tb)]
    if len(kept) != len(entries):
        new = None
        for tb in reversed(kept):
            new = types.TracebackType(new, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        err.__traceback__ = new
    context = err.__context__
    if ember_error and err.__cause__ is None and context is not None:
        if all(_internal(tb) for tb in _entries(context.__traceback__)):
            err.__suppress_context__ = True  # a NumPy error that ember's message replaces


def api_boundary(fun: F) -> F:
    """`fun`, with ember's frames dropped from the traceback of an error leaving it."""

    @functools.wraps(fun)
    def boundary(*args: Any, **kwargs: Any) -> Any:
        try:
            return fun(*args, **kwargs)
        except Exception as err:
            filter_error(err)
            raise

    boundary.__ember_boundary__ = True
    return boundary  # type: ignore[return-value]


# One boundary per function, shared by its aliases (enp.amax is enp.max, ember.remat is ember.checkpoint)
# and by every namespace that exports it.
_BOUNDARIES: dict[Callable[..., Any], Callable[..., Any]] = {}


def wrap_namespace(namespace: Any) -> None:
    """Make every public function of a namespace module (``ember.numpy``, ...) a boundary, in place.
    The modules that define them keep the plain functions, which ember calls internally."""
    names = vars(namespace)
    for name, value in list(names.items()):
        if (not name.startswith("_") and type(value) is types.FunctionType and "._" in value.__module__
                and getattr(value, "__ember_boundary__", False)):  # fmt: skip
            # A function that filters its own errors (the eager fast lanes, ember/lax/_fastlane.py): named
            # where users find it, as a boundary is, so that pickle finds it there.
            value.__module__ = namespace.__name__
            value.__qualname__ = value.__name__ if names.get(value.__name__) is value else name
            continue
        if (not name.startswith("_") and type(value) is types.FunctionType
                and getattr(value, "__module__", "").startswith("ember.")
                and not getattr(value, "__ember_boundary__", False)):  # fmt: skip
            boundary = _BOUNDARIES.get(value)
            if boundary is None:
                boundary = _BOUNDARIES[value] = api_boundary(value)
                # pickle finds a function by module and qualified name: name the boundary where users find it
                # (as jax.numpy.sum is named), or pickling enp.sum fails on the plain function found instead.
                boundary.__module__ = namespace.__name__
                boundary.__qualname__ = value.__name__ if names.get(value.__name__) is value else name
            setattr(namespace, name, boundary)
