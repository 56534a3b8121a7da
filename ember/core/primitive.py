"""Primitives, the trace stack and `bind`.

A primitive is a name plus rules (shape/dtype, jvp, transpose, batching), each
registered in ``core/primitives/<family>.py``. `Primitive.bind` hands the
primitive to the innermost active transform; with none active it runs the
backend's kernel right away (eager mode) after the shape and dtype rule has
checked the operands, so errors are ember's own.

The trace stack is thread-local. Transforms push a `Trace` for their
duration; values flowing through them are `Tracer`s, which are `ember.Array`s.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ember.backends import cpu as _cpu
from ember.core import devices as _devices
from ember.core.abstract import ShapedArray
from ember.core.array import Array, wrap
from ember.config import config
from ember.errors import ConcretizationError, DeviceError, NaNError, TracerLeakError

__all__ = ["PRIMITIVES", "Primitive", "Trace", "Tracer", "custom_jvp_call", "custom_vjp_call", "new_trace", "push_trace",
           "trace_stack"]

PRIMITIVES: dict[str, Primitive] = {}


class _TraceState(threading.local):
    def __init__(self) -> None:
        self.stack: list[Trace] = []


_state = _TraceState()


def trace_stack() -> list[Trace]:
    """The active transform traces of this thread, innermost last (empty in eager mode)."""
    return _state.stack


class Primitive:
    """An operation the transforms understand, e.g. ``add`` or ``dot_general``.

    Rules (set by the family module that defines the primitive):
      abstract_eval(*avals, **params) -> ShapedArray (or a list when multiple_results)
      jvp, transpose, batch: the transform rules, filled by the transform issues.
    Kernels live in the backends, keyed by `name`.
    """

    __slots__ = ("_kernel", "abstract_eval", "batch", "inline", "jvp", "multiple_results", "name", "transpose")

    def __init__(self, name: str, multiple_results: bool = False):
        if name in PRIMITIVES:
            raise ValueError(f"a primitive named {name!r} already exists")
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval: Callable[..., Any] | None = None
        self.jvp = None
        self.transpose = None
        self.batch = None
        # For call primitives (jit's): a function of the operands that evaluates the call by binding
        # what it calls, which staging traces use to expand the call in place (jit of jit inlines).
        self.inline = None
        self._kernel = None
        PRIMITIVES[name] = self

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Array, **params: Any):
        """Apply the primitive to Arrays (positional) with static parameters (keywords)."""
        stack = _state.stack
        if not stack:
            return self.eager(args, params)
        trace = find_top_trace(args, stack)
        if trace is None:
            return self.eager(args, params)
        if not trace.alive:
            raise _leak_error(self.name, trace)
        tracers = [trace.full_raise(x) for x in args]
        return trace.process_primitive(self, tracers, params)

    def kernel(self) -> Callable[..., Any]:
        """The CPU backend's kernel for this primitive (looked up once)."""
        if self._kernel is None:
            self._kernel = _cpu.kernel(self.name)
        return self._kernel

    def eager(self, args: Sequence[Array], params: dict[str, Any]):
        """Check shapes, dtypes and devices, run the kernel on concrete values, wrap the result."""
        out_aval, place, kernel, moves = self._checked(args, params)
        if moves is not None:
            out = kernel(*[m(x._value) for m, x in zip(moves, args)], **params)
        elif len(args) == 1:  # (the commonest arities without building a list: eager dispatch is hot)
            out = kernel(args[0]._value, **params)
        elif len(args) == 2:
            out = kernel(args[0]._value, args[1]._value, **params)
        else:
            out = kernel(*[x._value for x in args], **params)
        if self.multiple_results:
            return [_wrap_checked(o, a, place) for o, a in zip(out, out_aval, strict=True)]
        return _wrap_checked(out, out_aval, place)

    def _checked(self, args: Sequence[Array], params: dict[str, Any]) -> tuple:
        # Shape rules are pure functions of the operands' (shape, dtype, weak type) and the parameters,
        # and where an operation runs is a function of its operands' places and the default device (see
        # `result_place`: uncommitted operands meet away from it), so eager mode remembers both: a repeated
        # call skips the rule's Python and the device checks. Only successes are kept; unhashable
        # parameters skip the cache.
        try:
            if len(args) == 1:
                x = args[0]
                v = x._value
                key = (self, _devices.current.place, v.shape, v.dtype, x._weak, x._place, *params.items())
            else:
                key = (self, _devices.current.place, *[(x._value.shape, x._value.dtype, x._weak, x._place) for x in args],
                       *params.items())  # fmt: skip
            return _EAGER[key]
        except KeyError:
            pass
        except TypeError:
            return (self.abstract_eval(*[x.aval for x in args], **params), *self._placement(args))
        entry = (self.abstract_eval(*[x.aval for x in args], **params), *self._placement(args))
        if len(_EAGER) >= _EAGER_MAX:
            _EAGER.clear()
        _EAGER[key] = entry
        return entry

    def _placement(self, args: Sequence[Array]) -> tuple:
        """(result place, kernel, moves): the operands' device, that platform's kernel, and for each
        operand the function bringing its buffer there (None when all are there already)."""
        place = result_place(self.name, args)
        backend = place.backend
        kernel = self.kernel() if backend is _cpu else backend.kernel(self.name)
        if not args and backend is not _cpu:  # no operand says which GPU (iota): the place's, not CuPy's current
            kernel = _on_gpu(kernel, backend, place.device.id)
        if all(_shares_memory(x._place, place) for x in args):
            return place, kernel, None
        return place, kernel, [_mover(x._place, place) for x in args]


def result_place(name: str, args: Sequence[Array]) -> Any:
    """Where an operation on `args` runs and leaves its result: the device its committed operands are
    on (committed there too), else that of an uncommitted operand away from the default device (an
    array from a GPU library meeting a Python scalar stays on its GPU), else the default device.
    Operands committed to two devices, or a device no longer present, raise `DeviceError` naming
    operation `name`."""
    default = _devices.current.place
    committed = elsewhere = None
    for x in args:
        place = x._place
        if place.committed:
            if committed is not None and place is not committed:
                raise _mixed_devices(name, args)
            committed = place
        elif elsewhere is None and place is not default:
            elsewhere = place
    place = committed or elsewhere or default
    _devices.check_present(place.device, name)
    return place


def _on_gpu(kernel: Callable[..., Any], backend: Any, device_id: int) -> Callable[..., Any]:
    def run(**params: Any) -> Any:
        with backend.device(device_id):
            return kernel(**params)

    return run


def _shares_memory(a: Any, b: Any) -> bool:
    return a.device == b.device or a.backend is b.backend is _cpu  # CPU devices share host memory


def _mover(source: Any, target: Any) -> Callable[[Any], Any]:
    """How a buffer at `source` gets to `target`'s device (an uncommitted operand joining an operation,
    `device_put`, a jitted call's argument): as it is when they share memory, else a copy."""
    if _shares_memory(source, target):
        return lambda buffer: buffer
    if source.backend is target.backend:  # two GPUs: a peer copy, not through the host
        return lambda buffer: target.backend.from_gpu(buffer, target.device.id)
    return lambda buffer: target.backend.from_host(source.backend.to_host(buffer), target.device.id)


def _mixed_devices(name: str, args: Sequence[Array]) -> DeviceError:
    committed = [f"operand {i} ({x.dtype}{list(x.shape)}) on {x._place.device}" for i, x in enumerate(args)
                 if x._place.committed]  # fmt: skip
    return DeviceError(f"{name}: the operands are committed to different devices: {', '.join(committed)}; "
                       "move them to one device first with ember.device_put(x, device)")


def _bind_checking_nans(self: Primitive, *args: Any, **params: Any):
    """`Primitive.bind` while ``debug_nans`` is on: a concrete result with a NaN, computed from operands
    without one, raises (under transforms, the check happens where concrete values are computed)."""
    out = _bind_unchecked(self, *args, **params)
    outs = out if self.multiple_results else [out]
    if any(has_nan(o) for o in outs) and not any(has_nan(x) for x in args):
        operands = ", ".join(f"{x.dtype}{list(x.shape)}" for x in args)
        raise NaNError(f"{self.name} produced a NaN (debug_nans is on) from operands ({operands}) without one; "
                       "ember.config.update('debug_nans', False) turns the check off")  # fmt: skip
    return out


def has_nan(x: Any) -> bool:
    """Whether `x` is a concrete floating/complex Array holding a NaN."""
    return type(x) is Array and x.dtype.kind in "fc" and bool(_cpu.xp.isnan(x._value).any())


_bind_unchecked = Primitive.bind


def _set_debug_nans(name: str, value: Any) -> None:
    # Swapping the method keeps the check off the hot path while the option is off.
    if name == "debug_nans":
        Primitive.bind = _bind_checking_nans if value else _bind_unchecked


config.on_update(_set_debug_nans)
_set_debug_nans("debug_nans", config.debug_nans)

_EAGER: dict[tuple, tuple] = {}  # (self, operands' metadata, params) -> (aval, place, kernel, moves)
_EAGER_MAX = 8192


def _clear_eager(name: str, value: Any) -> None:
    # A device may have gone: check places again. (The default device is in every key, so a
    # ``with ember.default_device(d):`` keeps the cache.)
    if name == "num_cpu_devices":
        _EAGER.clear()


config.on_update(_clear_eager)


def _wrap_checked(value, aval: ShapedArray, place: Any) -> Array:
    # Kernels may hand back NumPy scalars or another dtype (NumPy promotes
    # differently from JAX); the abstract value is the contract.
    if type(value) is not place.ndarray or (value.dtype is not aval.dtype and value.dtype != aval.dtype):
        value = place.backend.xp.asarray(value, dtype=aval.dtype)
    if value.shape != aval.shape:
        raise AssertionError(f"internal error: kernel returned shape {value.shape}, the shape rule says {aval.shape}")
    return wrap(value, aval.weak_type, place)


# --- traces -------------------------------------------------------------------


class Trace:
    """One active transform. Subclasses implement `pure` and `process_primitive`."""

    def __init__(self, level: int):
        self.level = level
        self.alive = True  # False once the transform has returned: its tracers must not be used

    def pure(self, value: Array) -> Tracer:
        raise NotImplementedError(f"{type(self).__name__} must define pure()")

    def process_primitive(self, primitive: Primitive, tracers: list[Tracer], params: dict[str, Any]):
        raise NotImplementedError(f"{type(self).__name__} must define process_primitive()")

    def process_custom_jvp_call(self, fun: Callable[..., list], jvp: Callable[..., tuple], tracers: list[Tracer]) -> list:
        """A call of an `ember.custom_jvp` function, flattened: ``fun(*tracers)`` returns a list of
        Arrays and ``jvp(primals, tangents)`` gives ``(primals_out, tangents_out)`` (tangents may be
        symbolic `Zero`s). The rule matters only to differentiation: by default, run `fun` (inline it)."""
        return fun(*tracers)

    def process_custom_vjp_call(self, fun: Callable[..., list], fwd: Callable[..., tuple], bwd: Callable[..., list],
                                tracers: list[Tracer], out_trees: Callable[[], tuple]) -> list:  # fmt: skip
        """A call of an `ember.custom_vjp` function, flattened: ``fwd(*primals)`` gives ``(outputs,
        residuals)`` (lists of Arrays), ``bwd(residuals, cts)`` the input cotangents and
        ``out_trees()`` the output and residual structures once `fwd` has run. By default, run `fun`."""
        return fun(*tracers)

    def full_raise(self, value: Array) -> Tracer:
        if isinstance(value, Tracer):
            if value._trace is self:
                return value
            if not value._trace.alive:
                raise _leak_error("a transform", value._trace)
            if value._trace.level < self.level:
                return self.pure(value)
            raise AssertionError(f"tracer from level {value._trace.level} met trace of level {self.level}")
        return self.pure(value)


class Tracer(Array):
    """A value flowing through a transform: an Array whose data is the trace's business."""

    __slots__ = ("_trace",)

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    @property
    def _place(self):
        # A traced value has no buffer; it stands for one on the device the transform runs on.
        return _devices.current.place

    @property
    def _value(self):
        # Reached when a tracer meets eager code: after its transform ended (a leak), or a bug.
        if not self._trace.alive:
            raise _leak_error("eager evaluation", self._trace)
        raise ConcretizationError(f"internal error: the traced value {self!r} has no concrete value")

    def _concrete(self, what: str):
        raise ConcretizationError(
            f"{what} needs a concrete value, but got a traced value {self.aval.str_short()} "
            f"inside {type(self._trace).__name__}; for data-dependent choices use ember.numpy.where or lax.cond, "
            "or make the argument static"
        )

    def __repr__(self) -> str:
        return f"Traced<{self.aval.str_short()}> by {type(self._trace).__name__}"

    __str__ = __repr__


def find_top_trace(args: Sequence[Any], stack: list[Trace]) -> Trace | None:
    """The innermost trace owning one of `args` (None when all are concrete)."""
    top = None
    for x in args:
        if isinstance(x, Tracer) and (top is None or x._trace.level > top.level):
            top = x._trace
    return top


def _dispatch_trace(args: Sequence[Any], what: str) -> Trace | None:
    stack = _state.stack
    trace = find_top_trace(args, stack) if stack else None
    if trace is not None and not trace.alive:
        raise _leak_error(what, trace)
    return trace


def custom_jvp_call(fun: Callable[..., list], jvp: Callable[..., tuple], args: Sequence[Array]) -> list:
    """`bind` for custom_jvp functions: hand the call to the innermost trace owning one of `args`
    (`Trace.process_custom_jvp_call`); with none, evaluate ``fun(*args)``.

    >>> custom_jvp_call(lambda x: [x * 2.0], None, [ember.numpy.ones(2)])
    [Array([2., 2.], dtype=float32)]
    """
    trace = _dispatch_trace(args, "a custom_jvp function")
    if trace is None:
        return fun(*args)
    return trace.process_custom_jvp_call(fun, jvp, [trace.full_raise(x) for x in args])


def custom_vjp_call(fun: Callable[..., list], fwd: Callable[..., tuple], bwd: Callable[..., list],
                    args: Sequence[Array], out_trees: Callable[[], tuple]) -> list:  # fmt: skip
    """`bind` for custom_vjp functions (see `Trace.process_custom_vjp_call`); with no trace, ``fun(*args)``.

    >>> custom_vjp_call(lambda x: [x * 2.0], None, None, [ember.numpy.ones(2)], None)
    [Array([2., 2.], dtype=float32)]
    """
    trace = _dispatch_trace(args, "a custom_vjp function")
    if trace is None:
        return fun(*args)
    return trace.process_custom_vjp_call(fun, fwd, bwd, [trace.full_raise(x) for x in args], out_trees)


def _pushed(trace: Trace) -> Iterator[Trace]:
    stack = _state.stack
    trace.level, trace.alive = len(stack) + 1, True
    stack.append(trace)
    try:
        yield trace
    finally:
        trace.alive = False
        stack.pop()


@contextlib.contextmanager
def new_trace(trace_type: type[Trace], *args: Any) -> Iterator[Trace]:
    """Push a new trace of `trace_type` for the duration of the block."""
    yield from _pushed(trace_type(len(_state.stack) + 1, *args))


@contextlib.contextmanager
def push_trace(trace: Trace) -> Iterator[Trace]:
    """Put a trace that has returned back on top of the stack for the duration of the block (a
    transform entered again to run a function one of its rules kept for later)."""
    yield from _pushed(trace)


def _leak_error(where: str, trace: Trace) -> TracerLeakError:
    transform = getattr(trace, "name", None) or type(trace).__name__
    return TracerLeakError(
        f"{where}: got a value traced by {transform}, a transform that has already returned (a leaked "
        "tracer, e.g. stored in a global or a closure during the transform); return such values from the "
        "transformed function instead of keeping them"
    )
