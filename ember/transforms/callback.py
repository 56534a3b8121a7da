"""Calling host Python from inside transforms: `pure_callback` and the callback behind `ember.debug.print`.

Two primitives hold a Python function of NumPy arrays as a parameter:

- ``pure_callback[callback, result_avals, vmap_method](*args)``: a pure host function with declared
  result shapes and dtypes. Eagerly it runs at once; under jit it is an equation whose generated
  code calls the function at run time; under vmap it runs once per example (or once on the whole
  batch, by `vmap_method`). It has no derivative: ember cannot see inside it (a custom_jvp gives it one).
- ``debug_callback[callback](*args)``: a host function with no outputs, called for its side effect
  (printing). It is effectful (`ember.core.ir.effectful`): dead-code elimination keeps it. Its jvp
  rule calls it on the primal values; under vmap it runs once per example.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray
from ember.core.array import Array, from_host, wrap
from ember.core.batching import move_axis
from ember.core.ir import effectful
from ember.core.primitive import Primitive, find_top_trace, result_place, trace_stack
from ember.core.primitives.structural import broadcast_in_dim_p, expand_dims_p
from ember.core.pytree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ember.core.staging import StagingTrace
from ember.errors import ArgumentTypeError, DeviceError, DTypeError, InvalidArgumentError, ShapeError, TransformError
from ember.transforms.jit import raw_impls

__all__ = ["debug_callback", "debug_callback_p", "pure_callback", "pure_callback_p"]

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all", "legacy_vectorized")


class _HostCall(Primitive):
    """Evaluated eagerly by calling the host function on the operands' NumPy buffers."""

    __slots__ = ()
    host_call = True  # generated code never reuses its operands' memory (backends/buffers.py)

    def eager(self, args: Sequence[Array], params: dict[str, Any]) -> list[Array]:
        place = result_place(self.name, args)  # the results go where the operands are, as a primitive's
        outs = raw_impls[self](*[a._concrete(self.name) for a in args], **params)
        backend, device_id = place.backend, place.device.id
        return [wrap(backend.from_host(o, device_id), a.weak_type, place)
                for o, a in zip(outs, params.get("result_avals", ()))]  # fmt: skip


def _read_only(buffer: Any) -> np.ndarray:
    view = np.asarray(buffer).view()
    view.flags.writeable = False
    return view


# --- pure_callback ------------------------------------------------------------------------------------


pure_callback_p = _HostCall("pure_callback", multiple_results=True)
pure_callback_p.abstract_eval = lambda *avals, callback, result_avals, vmap_method: list(result_avals)


def _pure_callback_raw(*buffers: Any, callback: Callable, result_avals: tuple, vmap_method: str) -> list:
    outs = callback(*[_read_only(b) for b in buffers])
    name = getattr(callback, "__name__", "the callback")
    return [_checked_result(o, a, i, name) for i, (o, a) in enumerate(zip(outs, result_avals))]


raw_impls[pure_callback_p] = _pure_callback_raw


def _pure_callback_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, callback: Callable, **_: Any):
    name = getattr(callback, "__name__", "the callback")
    raise TransformError(
        f"pure_callback ({name}) cannot be differentiated: ember cannot see inside a host function. To differentiate "
        "through it, wrap the call in a function decorated with ember.custom_jvp (or ember.custom_vjp) and give its "
        "derivative (which may itself use pure_callback)"
    )


def _pure_callback_batch(size: int, args: Sequence[Any], dims: Sequence[Any], *, callback: Callable,
                         result_avals: tuple, vmap_method: str):  # fmt: skip
    batched_avals = tuple(ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in result_avals)
    if vmap_method != "sequential":
        # The host function gets the whole batch (batch axis first) and returns every example's results.
        moved = []
        for a, d in zip(args, dims):
            if d is not None:
                moved.append(move_axis(a, d, 0))
            elif vmap_method == "expand_dims":
                moved.append(expand_dims_p.bind(a, dimensions=(0,)))
            elif vmap_method == "broadcast_all":
                moved.append(broadcast_in_dim_p.bind(a, shape=(size, *a.shape), broadcast_dimensions=tuple(range(1, a.ndim + 1))))
            else:
                moved.append(a)
        outs = pure_callback_p.bind(*moved, callback=callback, result_avals=batched_avals, vmap_method=vmap_method)
        return outs, [0] * len(outs)
    from ember.transforms.vmap import _index, _stack

    front = [a if d is None else move_axis(a, d, 0) for a, d in zip(args, dims)]
    per_example = []
    for i in range(size):
        example = [a if d is None else _index(a, i) for a, d in zip(front, dims)]
        per_example.append(pure_callback_p.bind(*example, callback=callback, result_avals=result_avals,
                                                vmap_method=vmap_method))  # fmt: skip
    if size == 0:
        from ember.core.ad import zeros

        return [zeros(a) for a in batched_avals], [0] * len(batched_avals)
    return [_stack([outs[k] for outs in per_example]) for k in range(len(result_avals))], [0] * len(result_avals)


pure_callback_p.jvp = _pure_callback_jvp
pure_callback_p.batch = _pure_callback_batch


def _result_aval(spec: Any, path: str) -> ShapedArray:
    if not (hasattr(spec, "shape") and hasattr(spec, "dtype")):
        raise ArgumentTypeError(f"pure_callback: result_shape_dtypes{path} is a {type(spec).__name__}; give "
                                "ember.ShapeDtypeStruct(shape, dtype) (or an array) for every result")  # fmt: skip
    return ShapedArray(tuple(int(d) for d in spec.shape), dtypes.canonicalize(spec.dtype, "pure_callback"))


def _checked_result(value: Any, aval: ShapedArray, i: int, name: str) -> np.ndarray:
    if type(value) in (bool, int, float, complex):
        value = np.asarray(value, dtype=aval.dtype)
    if hasattr(value, "__cuda_array_interface__"):  # CuPy, PyTorch on CUDA: np.asarray would refuse
        raise DeviceError(f"pure_callback: {name} returned a {type(value).__name__} in GPU memory as result {i}; a "
                          "host callback returns host data: copy it first (cupy.asnumpy(x), tensor.cpu())")  # fmt: skip
    try:
        value = np.asarray(value)
    except Exception as err:
        raise ArgumentTypeError(f"pure_callback: {name} returned a {type(value).__name__} as result {i}, which is "
                                "not an array") from err  # fmt: skip
    if value.shape != aval.shape:
        raise ShapeError(f"pure_callback: {name} returned shape {value.shape} as result {i}, but result_shape_dtypes "
                         f"declares {aval.shape}")  # fmt: skip
    if value.dtype != aval.dtype:
        # 64-bit results become 32-bit while x64 is off, as any 64-bit input does.
        if value.dtype not in dtypes.ALL or dtypes.canonicalize(value.dtype) != aval.dtype:
            raise DTypeError(f"pure_callback: {name} returned dtype {value.dtype} as result {i}, but "
                             f"result_shape_dtypes declares {aval.dtype}; convert it in the callback (e.g. .astype)")  # fmt: skip
        value = value.astype(aval.dtype)
    return value


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args: Any, vectorized: bool = False,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:  # fmt: skip
    """Call the host function ``callback(*args, **kwargs)`` on NumPy arrays, inside any transform.

    `callback` must be pure (same inputs, same outputs, no side effects that matter): under `jit`
    it runs every time the compiled function runs, and it may be skipped when its results are not
    used. It gets NumPy arrays (read-only) in the structure of `args`/`kwargs` and must return
    arrays of exactly the declared shapes and dtypes.

    Args:
      callback: a Python function of NumPy arrays.
      result_shape_dtypes: a pytree of ``ember.ShapeDtypeStruct`` (or arrays), one per result.
      *args, **kwargs: arrays (pytrees of arrays) passed to `callback`.
      vectorized: under `vmap`, call `callback` once on the whole batch (batch axis first; unbatched
        arguments passed as they are) instead of once per example (the default).
      vmap_method: JAX's finer spelling: ``"sequential"`` (one call per example),
        ``"expand_dims"`` (unbatched arguments get a leading axis of size 1), ``"broadcast_all"``
        (every argument gets the whole batch axis) or ``"legacy_vectorized"`` (= vectorized=True).

    Returns:
      The callback's results as ember arrays, in the structure of `result_shape_dtypes`.

    Not differentiable (`jvp`/`grad` raise `TransformError`): wrap the call in `ember.custom_jvp`.

    >>> ember.pure_callback(np.sin, ember.ShapeDtypeStruct((3,), "float32"), enp.zeros(3))
    Array([0., 0., 0.], dtype=float32)
    """
    if not callable(callback):
        raise ArgumentTypeError(f"pure_callback: callback must be a function, got {type(callback).__name__}")
    if vmap_method is None:
        vmap_method = "legacy_vectorized" if vectorized else "sequential"
    elif vmap_method not in VMAP_METHODS:
        raise InvalidArgumentError(f"pure_callback: vmap_method must be one of {VMAP_METHODS}, got {vmap_method!r}")
    leaves, in_tree = tree_flatten((args, kwargs))
    arrays = [x if isinstance(x, Array) else from_host(x, "pure_callback") for x in leaves]
    specs, out_tree = tree_flatten(result_shape_dtypes)
    spec_paths = [keystr(p) for p, _ in tree_flatten_with_path(result_shape_dtypes)[0]]
    result_avals = tuple(_result_aval(s, p) for s, p in zip(specs, spec_paths))
    name = getattr(callback, "__name__", "the callback")

    def flat_callback(*buffers: np.ndarray) -> list[Any]:
        a, k = tree_unflatten(in_tree, list(buffers))
        out_leaves, tree = tree_flatten(callback(*a, **k))
        if tree != out_tree:
            raise ArgumentTypeError(f"pure_callback: {name} returned a result of structure {tree}, but "
                                    f"result_shape_dtypes has structure {out_tree}")  # fmt: skip
        return out_leaves

    flat_callback.__name__ = name
    outs = pure_callback_p.bind(*arrays, callback=flat_callback, result_avals=result_avals, vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


# --- debug_callback ------------------------------------------------------------------------------------


class _DebugCallback(_HostCall):
    """An effect belongs to the innermost program being recorded (a jit's, a lax.cond branch's), even when
    its operands come from outside it (or it has none), so that it happens whenever that program runs."""

    __slots__ = ()

    def bind(self, *args: Any, **params: Any) -> list:
        stack = trace_stack()
        if stack:
            top = find_top_trace(args, stack)
            recording = next((t for t in reversed(stack) if isinstance(t, StagingTrace) and t.name is not None), None)
            if recording is not None and recording.alive and (top is None or recording.level > top.level):
                return recording.process_primitive(self, [recording.full_raise(x) for x in args], params)
        return super().bind(*args, **params)


debug_callback_p = _DebugCallback("debug_callback", multiple_results=True)
debug_callback_p.abstract_eval = lambda *avals, callback: []
effectful.add(debug_callback_p)


def _debug_callback_raw(*buffers: Any, callback: Callable) -> list:
    callback(*[_read_only(b) for b in buffers])
    return []


def _debug_callback_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, callback: Callable):
    return debug_callback_p.bind(*primals, callback=callback), []


def _debug_callback_batch(size: int, args: Sequence[Any], dims: Sequence[Any], *, callback: Callable):
    from ember.transforms.vmap import _index

    front = [a if d is None else move_axis(a, d, 0) for a, d in zip(args, dims)]
    for i in range(size):
        debug_callback_p.bind(*[a if d is None else _index(a, i) for a, d in zip(front, dims)], callback=callback)
    return [], []


raw_impls[debug_callback_p] = _debug_callback_raw
debug_callback_p.jvp = _debug_callback_jvp
debug_callback_p.batch = _debug_callback_batch


def debug_callback(callback: Callable[..., Any], *arrays: Array) -> None:
    """Call ``callback(*numpy_arrays)`` for its side effect, when the values exist: at once eagerly,
    at run time under jit, once per example under vmap (the primal values under jvp/grad).

    >>> debug_callback(lambda x: print(x), enp.arange(3))
    [0 1 2]
    """
    debug_callback_p.bind(*[x if isinstance(x, Array) else from_host(x, "debug_callback") for x in arrays], callback=callback)
