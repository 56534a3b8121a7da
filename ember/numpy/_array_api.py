"""The Python array API standard (2024.12) in ember.numpy: what NumPy spells differently or lacks.

``x.__array_namespace__()`` is ``ember.numpy``, so array-API code runs on ember
arrays. ember.numpy is NumPy's namespace first (as ``jax.numpy`` is); where the
standard and NumPy disagree, ember follows NumPy, as JAX does. The differences:

- ``x.T`` reverses all axes (the standard asks for 2-d input only); ``mT`` is the
  standard's matrix transpose.
- Elementwise special values (signed zeros, infinities, NaN) are NumPy's bit for bit, for
  every elementwise function of the standard on float32/64 and complex64/128 (e.g. complex
  ``reciprocal(0j)`` is NumPy's ``nan+nanj``, not the ``1 / 0j`` of ``divide``, which is
  ``inf+nanj``); tests/test_array_api.py compares them.
- ``clip`` promotes ``x`` with ``min``/``max`` as NumPy and JAX do (the standard keeps
  ``x``'s dtype), and rejects complex input. It is ``minimum(maximum(x, min), max)`` as in JAX,
  so ``clip(-0.0, min=0.0)`` is the bound ``0.0`` where NumPy's clip keeps ``-0.0`` (the
  standard leaves signed zeros at a bound open); NaN in ``x``, ``min`` or ``max`` gives NaN, as
  the standard and NumPy say.
- ``astype`` of a complex array to a real dtype keeps the real part (NumPy's result; the
  standard says such a cast should not be permitted).
- Results of ``argmax``, ``nonzero``, ``searchsorted``, ``count_nonzero``, ``unique_*``
  indices are the default integer (int32 unless x64 is on), as in JAX; the standard's
  "default index dtype" is the same (``__array_namespace_info__().default_dtypes()``).
- Data-dependent shapes: ``nonzero``, ``unique_*``, boolean masks need concrete
  values, or a static ``size=`` under ``jit``/``vmap`` (as JAX); hence
  ``capabilities()`` reports ``"data-dependent shapes": False`` and
  ``"boolean indexing": False``, as JAX does.
- ``unique_values`` and friends return their values sorted (the standard leaves the order
  open); each NaN is its own value, as the standard and NumPy's ``unique_*`` say.
- 64-bit types exist only under x64: while it is off,
  ``__array_namespace_info__().dtypes()`` lists no float64/int64/uint64/complex128,
  and asking for one warns and gives the 32-bit type.
- In-place operators (``x += y``) rebind the name to a new array: ember arrays are
  immutable, which the standard allows.
- ``from_dlpack`` / ``__dlpack__`` share memory without copying (NumPy, PyTorch, ...);
  an array whose dtype is not canonical (float64 while x64 is off) is copied on the way in,
  and ``copy=False`` then raises. bfloat16 has no DLPack code NumPy knows, so it cannot cross.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core import devices as _devices
from ember.core.array import Array, Device, wrap
from ember.core.primitives import elementwise as ew
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, check_device, on_device, user_dtype
from ember.numpy._reductions import sum as _sum
from ember.numpy._shape import concatenate, moveaxis
from ember.numpy._sorting import cumprod, cumsum, unique
from ember.numpy._ufuncs import not_equal

__all__ = [
    "__array_api_version__", "__array_namespace_info__", "astype", "count_nonzero", "cumulative_prod",
    "cumulative_sum", "from_dlpack", "unique_all", "unique_counts", "unique_inverse", "unique_values", "unstack",
]  # fmt: skip

__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def namespace_for(api_version: str | None):
    """What ``x.__array_namespace__(api_version=...)`` returns: ember.numpy, for the versions it implements."""
    if api_version is not None and api_version not in _VERSIONS:
        raise InvalidArgumentError(
            f"__array_namespace__: api_version {api_version!r} is not supported; "
            f"ember.numpy implements {', '.join(_VERSIONS)}"
        )
    import ember.numpy

    return ember.numpy


# --- inspection ---------------------------------------------------------------------------------------


_KIND_GROUPS = {
    "bool": ("bool",), "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"), "complex floating": ("complex64", "complex128"),
}  # fmt: skip
_KIND_GROUPS["numeric"] = _KIND_GROUPS["integral"] + _KIND_GROUPS["real floating"] + _KIND_GROUPS["complex floating"]


class _Info:
    """The array API's inspection namespace of ember.numpy (``enp.__array_namespace_info__()``).

    It tells the truth about 64-bit mode: while ``enable_x64`` is off, ember has no
    float64, int64, uint64 or complex128 arrays, so ``dtypes()`` leaves them out and the
    default dtypes are the 32-bit ones.
    """

    __module__ = "ember.numpy"

    def capabilities(self) -> dict:
        """``{"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}``: masks and
        value-dependent shapes need concrete values (or size=) under transforms, as in JAX; NumPy's rank limit."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self) -> Device:
        """The device new arrays go to (``ember.default_device()``)."""
        return _devices.default_device()

    def devices(self) -> list[Device]:
        """The devices present: those of ``ember.devices()``, without importing ember's top level."""
        return _devices.all_devices()

    def default_dtypes(self, *, device: Device | None = None) -> dict[str, np.dtype]:
        """The default dtypes of `device` (or the default device): they follow ``enable_x64``."""
        check_device("default_dtypes", device)
        return {"real floating": dtypes.default_float(), "complex floating": dtypes.default_complex(),
                "integral": dtypes.default_int(), "indexing": dtypes.default_int()}  # fmt: skip

    def dtypes(self, *, device: Device | None = None, kind: str | tuple[str, ...] | None = None) -> dict[str, np.dtype]:
        """The array API dtypes ember supports now (by canonical name), of `kind` ("bool", "signed integer",
        "unsigned integer", "integral", "real floating", "complex floating", "numeric", or a tuple of them)."""
        check_device("dtypes", device)
        if kind is None:
            names = _KIND_GROUPS["bool"] + _KIND_GROUPS["numeric"]
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            for k in kinds:
                if k not in _KIND_GROUPS:
                    known = ", ".join(map(repr, _KIND_GROUPS))
                    raise InvalidArgumentError(f"dtypes: unknown kind {k!r}; kinds are {known}")
            every = _KIND_GROUPS["bool"] + _KIND_GROUPS["numeric"]
            names = tuple(n for n in every if any(n in _KIND_GROUPS[k] for k in kinds))
        supported = {}
        for name in names:
            dtype = np.dtype(name)
            if dtypes.canonicalize(dtype) == dtype:  # 64-bit types only under x64
                supported[name] = dtype
        return supported


def __array_namespace_info__() -> _Info:
    """The array API's inspection utilities: ``capabilities() default_device() devices() dtypes()
    default_dtypes()``.

    Returns:
      An object with those methods.

    >>> info = enp.__array_namespace_info__()
    >>> info.default_dtypes()["real floating"]
    dtype('float32')
    >>> "float64" in info.dtypes()
    False
    """
    return _Info()


# --- conversion -----------------------------------------------------------------------------------------


def astype(x: ArrayLike, dtype, /, *, copy: bool = True, device=None) -> Array:
    """`x` converted to `dtype`, regardless of promotion rules (the array API's ``astype``).

    Float to integer conversion truncates toward zero and saturates at the integer type's bounds (NaN
    gives 0), as JAX; complex to real keeps the real part (as NumPy), complex to bool is True where either
    part is nonzero (the standard's rule, NumPy's and jnp.astype's).

    Args:
      x: the array.
      dtype: the target dtype (64-bit types need x64; without it they give their 32-bit counterparts and warn).
      copy: whether to return a new array even when `x` already has `dtype` (False returns `x` then).
      device: None, or the device to commit the result to (as ``ember.device_put``).

    Returns:
      An array of `x`'s shape and dtype `dtype`.

    >>> enp.astype(enp.asarray([1.7, -2.5]), enp.int32)
    Array([ 1, -2], dtype=int32)
    """
    place = check_device("astype", device)
    x = asarray(x)
    target = user_dtype(dtype, "astype")
    if target == x.dtype:
        if x.weak_type:
            x = convert(x, target)  # strong, as JAX's: an explicit dtype is never weak (no data is copied)
        return on_device(ew.copy_p.bind(x) if copy else x, place)
    if target == dtypes.bool_ and dtypes.is_complex(x.dtype):
        return on_device(convert(not_equal(x, 0), target), place)  # lax's cast would test the real part alone
    return on_device(convert(x, target), place)


def from_dlpack(x, /, *, device=None, copy: bool | None = None) -> Array:
    """An ember Array sharing memory with `x`, any object with ``__dlpack__`` (a NumPy array, a PyTorch tensor,
    another ember Array).

    No copy is made when `x` is on the CPU and its dtype is one ember stores (float64 only under x64); the
    result then sees writes its owner makes to the buffer later (ember itself never writes to it).

    Args:
      x: the producer.
      device: None, or the device to commit the result to (as ``ember.device_put``).
      copy: True always copies; None copies only when needed; False raises when a copy is needed.

    Returns:
      An Array.

    >>> enp.from_dlpack(np.arange(3.0, dtype=np.float32))
    Array([0., 1., 2.], dtype=float32)
    """
    place = check_device("from_dlpack", device)
    return on_device(_from_dlpack(x, copy), place)


def _from_dlpack(x, copy: bool | None) -> Array:
    if isinstance(x, Array):
        x = convert(x, x.dtype)  # JAX's from_dlpack gives a strong array
        return ew.copy_p.bind(x) if copy else x
    if not hasattr(x, "__dlpack__"):
        raise DTypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method; use enp.asarray for other objects")
    try:
        value = np.from_dlpack(x, copy=copy)
    except (RuntimeError, TypeError, BufferError) as err:
        # The producer's own message says what to do (PyTorch: "use tensor.detach()"), except for bfloat16.
        hint = ("; bfloat16 has no DLPack code NumPy knows: convert it to float32 first"
                if "bfloat16" in str(getattr(x, "dtype", "")) else "")  # fmt: skip
        raise DTypeError(f"from_dlpack: NumPy cannot read this {type(x).__name__} through DLPack ({err}){hint}") from None
    if value.dtype not in dtypes.ALL:
        raise DTypeError(f"from_dlpack: dtype {value.dtype} is not supported by ember")
    canonical = dtypes.canonicalize(value.dtype)
    if canonical != value.dtype:
        if copy is False:
            raise InvalidArgumentError(
                f"from_dlpack(copy=False): a {value.dtype} array becomes {canonical} while 64-bit mode is off, which "
                "needs a copy; pass copy=None, or turn on ember.config.update('enable_x64', True)"
            )
        if dtypes.is_integer(canonical):
            dtypes.check_narrowed_ints(value, canonical, "from_dlpack")
        return wrap(value.astype(canonical), False)
    if value.flags.writeable:
        value = value.view()
        value.flags.writeable = False  # ember never writes to a buffer it shares
    return wrap(value, False)


# --- manipulation -----------------------------------------------------------------------------------------


def unstack(x: ArrayLike, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of `x` along `axis`, as a tuple.

    Args:
      x: an array with at least one dimension.
      axis: the axis to split along.

    Returns:
      ``x.shape[axis]`` arrays of `x`'s shape without `axis`.

    >>> enp.unstack(enp.asarray([[1, 2], [3, 4]]), axis=1)
    (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
    """
    x = asarray(x)
    if x.ndim == 0:
        raise ShapeError("unstack: needs an array with at least one dimension, got a 0-d array")
    moved = moveaxis(x, operator.index(axis), 0)
    return tuple(lax.index_in_dim(moved, i, 0, keepdims=False) for i in range(moved.shape[0]))


# --- searching and statistics -------------------------------------------------------------------------------


def count_nonzero(a: ArrayLike, axis: int | tuple[int, ...] | None = None, *, keepdims: bool = False) -> Array:
    """How many elements of `a` are not zero (complex: either part; bool: True), along `axis`.

    Args:
      a: the array.
      axis: None (all elements), an axis or a tuple of axes.
      keepdims: keep the counted axes with size one.

    Returns:
      A default-integer array (int32 unless x64 is on, as in JAX).

    >>> enp.count_nonzero(enp.asarray([[0, 1, 2], [0, 0, 3]]), axis=1)
    Array([2, 1], dtype=int32)
    """
    x = asarray(a)
    return _sum(not_equal(x, 0), axis=axis, dtype=dtypes.default_int(), keepdims=keepdims)


def _cumulative(op: str, fn, identity: int, x: ArrayLike, axis, dtype, include_initial: bool) -> Array:
    x = asarray(x)
    if x.ndim == 0:
        raise ShapeError(f"{op}: needs an array with at least one dimension, got a 0-d array")
    if axis is None:
        if x.ndim > 1:
            raise InvalidArgumentError(f"{op}: axis is required for an array of {x.ndim} dimensions (shape {x.shape})")
        axis = 0
    out = fn(x, axis=operator.index(axis), dtype=dtype)
    if not include_initial:
        return out
    axis = operator.index(axis) % x.ndim
    shape = list(out.shape)
    shape[axis] = 1
    return concatenate([lax.full(tuple(shape), identity, out.dtype), out], axis=axis)


def cumulative_sum(x: ArrayLike, /, *, axis: int | None = None, dtype=None, include_initial: bool = False) -> Array:
    """Running sums along `axis` (the array API's ``cumulative_sum``; NumPy's since 2.1).

    Args:
      x: an array with at least one dimension.
      axis: the axis; may be left out only for 1-d `x`.
      dtype: the accumulation and result dtype (default: `x`'s, widened to the default integer for bool and
        narrower integers, as ``cumsum``).
      include_initial: start with the identity (0), making `axis` one longer.

    Returns:
      The running sums.

    >>> enp.cumulative_sum(enp.asarray([1, 2, 3]), include_initial=True)
    Array([0, 1, 3, 6], dtype=int32)
    """
    return _cumulative("cumulative_sum", cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: ArrayLike, /, *, axis: int | None = None, dtype=None, include_initial: bool = False) -> Array:
    """Running products along `axis` (the array API's ``cumulative_prod``; NumPy's since 2.1).

    Args:
      x: an array with at least one dimension.
      axis: the axis; may be left out only for 1-d `x`.
      dtype: the accumulation and result dtype (as ``cumulative_sum``).
      include_initial: start with the identity (1), making `axis` one longer.

    Returns:
      The running products.

    >>> enp.cumulative_prod(enp.asarray([1.0, 2.0, 3.0]), include_initial=True)
    Array([1., 1., 2., 6.], dtype=float32)
    """
    return _cumulative("cumulative_prod", cumprod, 1, x, axis, dtype, include_initial)


# --- unique ------------------------------------------------------------------------------------------------------


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_all(x: ArrayLike, /, *, size: int | None = None, fill_value: ArrayLike | None = None) -> UniqueAllResult:
    """The sorted unique elements of `x` (flattened), the index of each one's first occurrence, the index into
    the unique values of every element of `x`, and how often each occurs.

    NaNs are each their own value (the standard's and NumPy's rule). Under ``jit``/``vmap`` pass a static
    `size`, as in JAX: the result then has exactly `size` entries, padded with `fill_value` (default: the
    smallest element), index of the smallest element and count 0.

    Args:
      x: the array.
      size: the static number of unique elements to return.
      fill_value: the padding value when there are fewer than `size` unique elements.

    Returns:
      ``(values, indices, inverse_indices, counts)``; inverse_indices has `x`'s shape.

    >>> enp.unique_all(enp.asarray([3, 1, 3])).counts
    Array([1, 2], dtype=int32)
    """
    values, index, inverse, counts = unique(x, True, True, True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueAllResult(values, index, inverse, counts)


def unique_counts(x: ArrayLike, /, *, size: int | None = None,
                  fill_value: ArrayLike | None = None) -> UniqueCountsResult:  # fmt: skip
    """The sorted unique elements of `x` and how often each occurs (see `unique_all`).

    >>> enp.unique_counts(enp.asarray([2, 2, 5]))
    UniqueCountsResult(values=Array([2, 5], dtype=int32), counts=Array([2, 1], dtype=int32))
    """
    values, counts = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: ArrayLike, /, *, size: int | None = None,
                   fill_value: ArrayLike | None = None) -> UniqueInverseResult:  # fmt: skip
    """The sorted unique elements of `x` and, for every element of `x`, the index of its unique value
    (see `unique_all`).

    >>> enp.unique_inverse(enp.asarray([[2, 5], [5, 2]])).inverse_indices
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return UniqueInverseResult(values, inverse)


def unique_values(x: ArrayLike, /, *, size: int | None = None, fill_value: ArrayLike | None = None) -> Array:
    """The sorted unique elements of `x` (flattened; see `unique_all`).

    >>> enp.unique_values(enp.asarray([3, 1, 3]), size=3, fill_value=0)
    Array([1, 3, 0], dtype=int32)
    """
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)

