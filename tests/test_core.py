"""The core machinery: the trace stack and bind, primitives, abstract values, config."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.core.abstract import ShapedArray
from ember.core.primitive import PRIMITIVES, Trace, Tracer, new_trace, trace_stack
from ember.core.primitives.elementwise import add_p, mul_p


class _RecordingTracer(Tracer):
    __slots__ = ("value",)

    def __init__(self, trace, value):
        self._trace = trace
        self.value = value

    @property
    def aval(self):
        return self.value.aval


class _RecordingTrace(Trace):
    """A toy transform: evaluates eagerly and records which primitives it saw."""

    def __init__(self, level, log):
        super().__init__(level)
        self.log = log

    def pure(self, value):
        return _RecordingTracer(self, value)

    def process_primitive(self, primitive, tracers, params):
        self.log.append(primitive.name)
        return _RecordingTracer(self, primitive.bind(*[t.value for t in tracers], **params))


def test_bind_hands_traced_values_to_their_trace():
    log = []
    x = enp.asarray([1.0, 2.0])
    with new_trace(_RecordingTrace, log) as trace:
        tx = trace.pure(x)
        out = tx * 3.0 + tx
        assert isinstance(out, ember.Array) and isinstance(out, Tracer)
        assert out.shape == (2,) and out.dtype == np.float32
        untraced = x + x  # concrete operands stay eager even inside a transform
    assert log == ["mul", "add"]
    assert type(untraced) is ember.Array
    np.testing.assert_array_equal(np.asarray(out.value), np.array([4.0, 8.0], np.float32))
    assert trace_stack() == []


def test_tracers_refuse_python_conversion_with_a_clear_error():
    with new_trace(_RecordingTrace, []) as trace:
        t = trace.pure(enp.asarray([1.0, 2.0]))
        scalar = trace.pure(enp.asarray(1.0))
        for convert, value in ((bool, scalar), (float, scalar), (np.asarray, t)):
            with pytest.raises(ember.errors.ConcretizationError, match="traced value"):
                convert(value)
        assert "Traced<f32[2]>" in repr(t)


def test_nested_traces_pick_the_innermost_owner():
    outer_log, inner_log = [], []
    x = enp.asarray(2.0)
    with new_trace(_RecordingTrace, outer_log) as outer:
        ox = outer.pure(x)
        with new_trace(_RecordingTrace, inner_log) as inner:
            ix = inner.pure(x)
            both = ix * ox  # the inner trace owns the result; the outer value is lifted
            assert both._trace is inner
            only_outer = ox + ox
            assert only_outer._trace is outer
    assert inner_log == ["mul"]
    assert outer_log == ["mul", "add"]  # the inner rule binds on the lifted outer value


def test_trace_stack_is_thread_local():
    seen = []
    with new_trace(_RecordingTrace, []):
        thread = threading.Thread(target=lambda: seen.append(len(trace_stack())))
        thread.start()
        thread.join()
        assert len(trace_stack()) == 1
    assert seen == [0]


def test_primitives_are_registered_once_by_name():
    assert PRIMITIVES["add"] is add_p and PRIMITIVES["mul"] is mul_p
    with pytest.raises(ValueError, match="already exists"):
        type(add_p)("add", add_p.allowed)


def test_shaped_array_value_semantics():
    a = ShapedArray((2, 3), np.dtype(np.float32))
    assert a == ShapedArray((2, 3), np.dtype(np.float32)) and hash(a) == hash(ShapedArray((2, 3), np.dtype(np.float32)))
    assert a != ShapedArray((2, 3), np.dtype(np.float32), weak_type=True)
    assert repr(a) == "f32[2,3]" and a.ndim == 2 and a.size == 6
    assert enp.asarray([1, 2]).aval == ShapedArray((2,), np.dtype(np.int32))


def test_config_options_and_errors():
    assert ember.config.enable_x64 is False
    with ember.config.x64(True):
        assert ember.config.enable_x64 is True
        assert enp.asarray(np.arange(3.0)).dtype == np.float64
    assert ember.config.enable_x64 is False
    with pytest.raises(AttributeError, match="no option"):
        ember.config.update("enable_x65", True)
    with pytest.raises(TypeError, match="takes a bool"):
        ember.config.update("enable_x64", "yes")
    with pytest.raises(AttributeError, match="update"):
        ember.config.enable_x64 = True


def test_errors_derive_from_ember_error_and_builtins():
    from ember import errors

    assert issubclass(errors.ShapeError, ValueError) and issubclass(errors.ShapeError, errors.EmberError)
    assert issubclass(errors.DTypeError, TypeError) and issubclass(errors.DTypeError, errors.EmberError)
    assert issubclass(errors.ConcretizationError, errors.EmberError)
    assert issubclass(errors.TracerLeakError, errors.EmberError)


def test_main_job_prints_backends_devices_and_timings():
    out = subprocess.run([sys.executable, "-m", "ember"], capture_output=True, text=True, timeout=300, check=True).stdout
    assert f"ember {ember.__version__}" in out
    assert "cpu" in out and "NumPy" in out and "default device: cpu:0" in out
    assert "a + b" in out and "x" in out.split("a + b")[1].splitlines()[0]
