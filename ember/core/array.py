"""`ember.Array`: the one array type ember returns.

A concrete Array wraps a backend buffer (a NumPy ndarray on the CPU) plus the
weak-type flag of JAX's promotion rules. Tracers (the values transforms pass
through a function) subclass Array, so ``isinstance(x, ember.Array)`` holds
inside every transform. Operators and most methods are attached by
`ember.numpy` at import, keeping the core free of the user-facing namespace.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes
from ember.core import devices as _devices
from ember.core.abstract import ShapedArray
from ember.core.devices import CPU, Device, Place
from ember.errors import (
    DeletedArrayError,
    DeviceError,
    DTypeError,
    EmberOverflowError,
    ImmutableArrayError,
    InvalidArgumentError,
    ShapeError,
)

__all__ = ["CPU", "Array", "Device", "Place", "wrap"]


_new = object.__new__


class _Donated:
    """What a donated array holds in place of its buffer: any use of it raises DeletedArrayError.

    (A sentinel rather than a missing attribute caught by ``Array.__getattr__``: a class with
    ``__getattr__`` loses Python's fast attribute reads, which every eager operation makes.)"""

    __slots__ = ()

    def _deleted(self, *args, **kwargs):
        raise DeletedArrayError(
            "this array was donated to a jitted function (donate_argnums) and deleted: that call may have "
            "written its results into the array's buffer. Use what the call returned, or leave the argument "
            "out of donate_argnums to keep using it"
        )

    __array__ = __len__ = __getitem__ = __iter__ = __bool__ = __index__ = __float__ = _deleted

    def __getattr__(self, name: str):
        if name.startswith("__"):  # (introspection: inspect.unwrap, copy, pickle's probes)
            raise AttributeError(name)
        self._deleted()


_DONATED = _Donated()


def delete(x: Array) -> None:
    """Give up `x`'s buffer (it was donated to a jitted function): using `x` from now on raises."""
    x._value = _DONATED


class Array:
    """An immutable n-dimensional array (or, inside a transform, a tracer).

    Create arrays with `ember.numpy` (``enp.asarray``, ``enp.zeros``, ...).

    >>> import ember.numpy as enp
    >>> x = enp.asarray([1.0, 2.0, 3.0])
    >>> (x * 2).tolist()
    [2.0, 4.0, 6.0]
    """

    __slots__ = ("_place", "_value", "_weak")
    __array_priority__ = 100  # NumPy defers to our reflected operators

    # --- metadata (tracers override these with their abstract value) ---------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def weak_type(self) -> bool:
        return self._weak

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self._value.shape, self._value.dtype, self._weak)

    @property
    def device(self) -> Device:
        """The device this array lives on (see `ember.device_put`).

        >>> enp.ones(2).device
        CpuDevice(id=0)
        """
        return self._place.device

    @property
    def committed(self) -> bool:
        """Whether the array was put on its device explicitly (``device_put``, ``device=``): operations
        then run there, and mixing it with an array committed elsewhere raises `DeviceError`."""
        return self._place.committed

    def devices(self) -> set[Device]:
        """The devices holding this array (one: ember does not shard arrays).

        >>> enp.ones(2).devices()
        {CpuDevice(id=0)}
        """
        return {self.device}

    def block_until_ready(self) -> Array:
        """Wait until the array's value is computed (results on a GPU arrive asynchronously); return it.

        >>> enp.ones(2).block_until_ready().tolist()
        [1.0, 1.0]
        """
        self._place.backend.synchronize(self._value)
        return self

    def is_deleted(self) -> bool:
        """Whether the array was donated to a jitted function (``donate_argnums``) and so deleted.

        >>> x = enp.ones(3)
        >>> y = ember.jit(lambda x: x * 2, donate_argnums=0)(x)
        >>> x.is_deleted()
        True
        """
        return type(self) is Array and self._value is _DONATED

    # --- conversion to Python / NumPy -----------------------------------------

    def _concrete(self, what: str) -> np.ndarray:
        """The value in host memory (a copy, for an array on a GPU)."""
        value = self._value
        return value if type(value) is np.ndarray else self._place.backend.to_host(value)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self._concrete("numpy.asarray(x)")
        if copy is False and dtype is not None and np.dtype(dtype) != value.dtype:
            raise InvalidArgumentError(
                f"numpy.asarray(x, dtype={np.dtype(dtype)}, copy=False): converting an ember {value.dtype} array "
                "needs a copy; pass copy=None or True"
            )
        if copy:
            value = value.copy()
        elif value.flags.writeable:
            value = value.view()
            value.flags.writeable = False  # ember arrays are immutable
        return value if dtype is None else value.astype(dtype, copy=bool(copy))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array's buffer, shared without a copy (flagged read-only) for consumers of
        DLPack 1.0 or later; older ones, which cannot see the flag, get a copy (``copy=False`` then raises
        BufferError). A reversed view (negative strides, from a flip) is handed out as a dense copy too.
        PyTorch (2.x) ignores the read-only flag: a tensor from ``torch.from_dlpack(x)`` can write into x's
        buffer, which ember assumes never changes; clone it (``torch.from_dlpack(x).clone()``) before writing.
        On the CPU `stream` must be None, as the array API says."""
        if type(self._value) is not np.ndarray:  # on a GPU: the backend exports the device buffer, no host copy
            return self._place.backend.export_dlpack(self._value, stream=stream, max_version=max_version,
                                                     dl_device=dl_device, copy=copy)  # fmt: skip
        value = self._concrete("__dlpack__")
        if stream is not None:
            raise BufferError(f"__dlpack__: a CPU array takes stream=None, got stream={stream!r}")
        if value.dtype.kind not in "biufc":  # bfloat16: NumPy, which exports the buffer, has no DLPack code for it
            raise BufferError(f"__dlpack__: an array of dtype {value.dtype} (shape {self.shape}) cannot be exported "
                              "through DLPack here; convert it first, e.g. x.astype('float32')")  # fmt: skip
        kwargs = {} if max_version is None else {"max_version": max_version}
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        if min(value.strides, default=0) < 0:
            # Flips and reversed slices are views with negative strides, which PyTorch's from_dlpack does not
            # refuse but aborts the whole process on; JAX hands out dense buffers only, so consumers expect those.
            if copy is False:
                raise BufferError(f"__dlpack__(copy=False): this array (shape {self.shape}) is a reversed view "
                                  f"(strides {value.strides}) that DLPack consumers such as PyTorch cannot read; "
                                  "pass copy=None to get a dense copy")  # fmt: skip
            value = np.ascontiguousarray(value)
        elif max_version is None or max_version[0] < 1:
            # Legacy DLPack cannot flag a buffer read-only: hand out a copy so ember arrays stay immutable.
            if copy is False:
                raise BufferError("__dlpack__(copy=False): DLPack before 1.0 cannot mark the buffer read-only, so "
                                  "ember shares it only with consumers passing max_version=(1, 0) or later")
            value = value.copy()
        elif value.flags.writeable:
            value = value.view()
            value.flags.writeable = False  # consumers that honour the flag (NumPy) get a read-only view
        return value.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()  # (1, 0) on the CPU, (2, GPU number) on a GPU

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface of an array on a GPU (read-only: ember arrays never change), so that
        CuPy, Numba or PyTorch read it without a copy; an AttributeError for an array on the CPU.

        >>> hasattr(enp.ones(2), "__cuda_array_interface__")
        False
        """
        value = self._value
        if type(value) is np.ndarray:
            raise AttributeError("__cuda_array_interface__: this array is on the CPU; use numpy.asarray(x) or DLPack")
        interface = dict(value.__cuda_array_interface__)
        interface["data"] = (interface["data"][0], True)
        return interface

    def item(self, *index):
        value = self._concrete("x.item()")
        if not index and value.size != 1:
            raise ShapeError(f"x.item() needs an array with one element, got shape {value.shape}; use x.tolist() or index first")
        return value.item(*index)

    def tolist(self):
        return self._concrete("x.tolist()").tolist()

    def _scalar(self, kind, what: str):
        value = self._concrete(what)
        if value.size != 1:
            raise DTypeError(f"{what} needs an array with one element, got shape {value.shape}; use x.tolist() or index first")
        return kind(value.reshape(()).item())

    def __bool__(self) -> bool:
        if self.size != 1:  # a ValueError, as in NumPy and JAX
            raise ShapeError(
                f"the truth value of an array of shape {self.shape} is ambiguous; use x.any() or x.all()"
            )
        return self._scalar(bool, "bool(x)")

    def __int__(self) -> int:
        return self._scalar(int, "int(x)")

    def __float__(self) -> float:
        return self._scalar(float, "float(x)")

    def __complex__(self) -> complex:
        return self._scalar(complex, "complex(x)")

    def __index__(self) -> int:
        if not dtypes.is_integer(self.dtype):  # bool too, as in NumPy
            raise DTypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return self._scalar(int, "operator.index(x)")

    def __len__(self) -> int:
        if self.ndim == 0:
            raise DTypeError("len() of a 0-d array; use x.shape or x.item()")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise DTypeError("iteration over a 0-d array; use x.item()")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        if self.is_deleted():
            return "Array(<deleted: donated to a jitted function>)"
        body = np.array2string(np.asarray(self._value), separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self._weak else ""
        return f"Array({body}, dtype={self.dtype}{weak})"

    def __str__(self) -> str:
        return str(np.asarray(self._value))

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    __hash__ = None  # arrays are mutable-looking values in NumPy; like JAX, they are unhashable

    def __setitem__(self, index, value):
        raise ImmutableArrayError(
            f"ember arrays are immutable, so an array of shape {self.shape} and dtype {self.dtype} does not support "
            "item assignment: instead of x[idx] = y, write x = x.at[idx].set(y) (or .add, .multiply, .min, .max)"
        )

    def __reduce__(self):
        return (_rebuild, (self._concrete("pickle"), self._weak))  # on the default device, as after a load


def _rebuild(value: np.ndarray, weak: bool) -> Array:
    return wrap(value, weak)


def wrap(value, weak: bool = False, place: Place | None = None) -> Array:
    """Wrap a backend buffer (already of an ember dtype) as an Array without copying, uncommitted on
    the default device unless `place` says where it is."""
    out = _new(Array)
    out._value = value
    out._weak = weak
    out._place = place or _devices.current.place
    return out


_PY_SCALARS = (bool, int, float, complex)


def from_host(x, op: str = "asarray") -> Array:
    """Turn a host value (Python scalar, nested list, NumPy array, anything with
    ``__array__``) into a concrete Array, copying it so that it is immutable.

    Python scalars become weakly typed arrays of the default dtype; 64-bit
    NumPy dtypes become 32-bit while x64 is off.
    """
    if isinstance(x, Array):
        return x
    if type(x) in _PY_SCALARS:
        dtype = dtypes.python_scalar_dtype(x)
        if type(x) is int:
            return wrap(dtypes.python_int_as(x, dtype, op), True)
        return wrap(np.asarray(x, dtype=dtype), type(x) is not bool)
    refuse = getattr(type(x), "__ember_refuse__", None)  # an array-like that is not one (ember.dim's DimArray)
    if refuse is not None:
        raise refuse(x, op)
    gpu = None if isinstance(x, (np.ndarray, list, tuple)) else _gpu_device(x)
    if gpu is not None:
        return _from_gpu(x, gpu, op)
    try:
        value = np.asarray(x)
    except ValueError as err:  # ragged nested lists: a ValueError, as in NumPy
        raise ShapeError(f"{op}: cannot convert {type(x).__name__} to an ember array ({err})") from None
    except TypeError as err:
        raise DTypeError(f"{op}: cannot convert {type(x).__name__} to an ember array ({err})") from None
    if value.dtype not in _ALLOWED and not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))  # byte-swapped data (files, network formats)
    if value.dtype not in _ALLOWED:
        if value.dtype == object and _holds_huge_int(value):
            raise EmberOverflowError(
                f"{op}: a Python int in this {type(x).__name__} is too large for any ember integer dtype "
                "(the widest are int64 and uint64); use floats (e.g. float(value)) or smaller integers"
            )
        if value.dtype.kind in "OUSVMm":
            raise DTypeError(
                f"{op}: cannot convert {type(x).__name__} with NumPy dtype {value.dtype} to an ember array; "
                "ember arrays hold bool, integer, floating or complex numbers"
            )
        value = value.astype(dtypes.to_dtype(value.dtype))
    dtype = dtypes.canonicalize(value.dtype)
    if dtype != value.dtype and dtypes.is_integer(dtype):
        dtypes.check_narrowed_ints(value, dtype, op)
    # Only a value NumPy built afresh from Python data may be kept as is; anything else (an ndarray,
    # a view, an object whose __array__ hands out its own buffer) is copied so later writes cannot reach it.
    fresh = isinstance(x, (list, tuple, np.generic)) and value.base is None
    value = value if fresh and dtype == value.dtype else value.astype(dtype)
    return wrap(value, False)


_ALLOWED = frozenset(dtypes.ALL)


def _gpu_device(x) -> int | None:
    """The GPU holding `x` when it is a device array (CuPy, PyTorch on CUDA, anything exporting DLPack from
    CUDA memory; -1 for one with only ``__cuda_array_interface__``), else None."""
    if hasattr(type(x), "__dlpack_device__"):
        kind, number = x.__dlpack_device__()
        return int(number) if int(kind) in (2, 13) else None  # kDLCUDA, kDLCUDAManaged
    return -1 if hasattr(x, "__cuda_array_interface__") else None


def _from_gpu(x, device_id: int, op: str) -> Array:
    """Device array `x` copied on its own GPU (never through the host), uncommitted there."""
    what = f"{op}: {type(x).__name__} is an array in GPU memory"
    try:
        backend = _devices.backends.cuda()
    except DeviceError as err:
        raise DeviceError(f"{what}, and {err}") from None
    if _devices.backends.cuda_device_count() == 0:
        raise DeviceError(f"{what}, but CuPy finds no CUDA device (no driver, or CUDA_VISIBLE_DEVICES hides them)")
    value = backend.from_gpu(x, device_id)
    if value.dtype not in _ALLOWED:
        raise DTypeError(f"{what} of dtype {value.dtype}, which ember arrays cannot hold")
    dtype = dtypes.canonicalize(value.dtype)
    if dtype != value.dtype:
        if dtypes.is_integer(dtype):
            dtypes.check_narrowed_ints(value, dtype, op)
        value = value.astype(dtype)
    return wrap(value, False, _devices.place_of(Device("cuda", value.data.device_id), False))


def _holds_huge_int(value: np.ndarray) -> bool:
    # NumPy makes an object array of a list holding an int beyond uint64's range.
    return any(type(v) is int and not -(2**63) <= v < 2**64 for v in value.flat)
