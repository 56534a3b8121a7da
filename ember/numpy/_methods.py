"""Operators and methods of `ember.Array`, attached here so the core stays free of ember.numpy.

Binary operators have a fast lane for the commonest eager case, two concrete
arrays of one dtype and weak type, which goes straight to the primitive's
eager evaluation; everything else goes through the ember.numpy function.
"""

from __future__ import annotations

import numpy as np

from ember import lax
from ember._traceback import filter_error
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import bitwise as bw
from ember.core.primitives import elementwise as ew
from ember.errors import InvalidArgumentError, ShapeError
from ember.numpy import _array_api, _contract, _creation, _fastlane, _indexing, _ndarray_extras, _reductions, _rounding
from ember.numpy import _shape
from ember.numpy import _sorting, _take, _ufuncs
from ember.numpy._core import check_device, on_device

_PY_OK = (Array, bool, int, float, complex, list, tuple)
_new = object.__new__
_ndarray = np.ndarray


class _Restricted:
    """A view of a primitive whose fast lane admits fewer dtypes than the primitive
    (`x - y` rejects bool, `x / y` of integers promotes to float first)."""

    def __init__(self, prim, keep):
        self._prim = prim
        self._fast = {d: r for d, r in prim._fast.items() if keep(d)}
        self.keeps_weak = prim.keeps_weak

    @property
    def _kernel(self):
        return self._prim._kernel

    def kernel(self):
        return self._prim.kernel()


def _numeric_only(prim):
    return _Restricted(prim, lambda d: d != dtypes.bool_)


def _inexact_only(prim):
    return _Restricted(prim, dtypes.is_inexact)


def _operator(fn, prim=None):
    """`a OP b` and `b OP a` for the ember.numpy function `fn` (primitive `prim` for the fast lane)."""
    fast = prim._fast if prim is not None else {}

    def run_fast(self, x, y, weak):  # (self's place is the result's: callers check the other's is the same)
        # The kernel on raw buffers; None when anything is unusual (then `fn` decides).
        try:
            out = (prim._kernel or prim.kernel())(x, y)
        except (ValueError, OverflowError):  # shapes that do not broadcast, ...: `fn` explains
            return None
        if type(out) is _ndarray and out.dtype is fast.get(self._value.dtype):
            result = _new(Array)
            result._value = out
            result._weak = prim.keeps_weak and weak
            result._place = self._place
            return result
        return None

    def forward(self, other):
        # Fast lanes, inlined because `a + b` on tiny arrays is dominated by
        # Python overhead: two concrete CPU arrays of one dtype the primitive
        # accepts, or one such array and a Python float (or small int) on a
        # float array, which NumPy 2 treats as weakly typed, as JAX does.
        if type(self) is Array and prim is not None and not self._place.committed and _fastlane.on:  # (committed: checked path)
            x = self._value
            if type(other) is Array:
                y = other._value
                if (y.dtype is x.dtype and x.dtype in fast and type(x) is _ndarray and type(y) is _ndarray
                        and self._place is other._place):
                    out = run_fast(self, x, y, self._weak and other._weak)
                    if out is not None:
                        return out
            elif _scalar_keeps_dtype(other, x) and x.dtype in fast:
                out = run_fast(self, x, x.dtype.type(other), self._weak)
                if out is not None:
                    return out
        if not _accepts(other):
            return NotImplemented
        try:
            return fn(self, other)
        except Exception as err:  # operators are traceback boundaries (ember/_traceback.py), inline for speed
            filter_error(err)
            raise

    def reflected(self, other):
        if (type(self) is Array and prim is not None and not self._place.committed and _fastlane.on
                and _scalar_keeps_dtype(other, self._value) and self._value.dtype in fast):
            out = run_fast(self, self._value.dtype.type(other), self._value, self._weak)
            if out is not None:
                return out
        if not _accepts(other):
            return NotImplemented
        try:
            return fn(other, self)
        except Exception as err:
            filter_error(err)
            raise

    return forward, reflected


_FLOAT_BUFFERS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.complex64, np.complex128))


def _scalar_keeps_dtype(other, x) -> bool:
    """A Python float, or an int that fits int32, meeting a float/complex NumPy buffer
    (then the scalar converts to the buffer's dtype exactly as JAX's weak typing does)."""
    kind = type(other)
    if kind is float or (kind is int and -(2**31) <= other < 2**31):
        return type(x) is _ndarray and x.dtype in _FLOAT_BUFFERS
    return False


_BINARY = {
    "add": (_ufuncs.add, ew.add_p),
    "sub": (_ufuncs.subtract, _numeric_only(ew.sub_p)),
    "mul": (_ufuncs.multiply, ew.mul_p),
    "truediv": (_ufuncs.true_divide, _inexact_only(ew.div_p)),
    "floordiv": (_ufuncs.floor_divide, None),
    "mod": (_ufuncs.remainder, None),
    "divmod": (_ufuncs.divmod, None),
    "pow": (_ufuncs.power, None),
    "matmul": (_contract.matmul, None),
    "and": (_ufuncs.bitwise_and, bw.and_p),
    "or": (_ufuncs.bitwise_or, bw.or_p),
    "xor": (_ufuncs.bitwise_xor, bw.xor_p),
    "lshift": (_ufuncs.left_shift, None),
    "rshift": (_ufuncs.right_shift, None),
}

_COMPARISONS = {
    "eq": (_ufuncs.equal, bw.eq_p),
    "ne": (_ufuncs.not_equal, bw.ne_p),
    "lt": (_ufuncs.less, bw.lt_p),
    "le": (_ufuncs.less_equal, bw.le_p),
    "gt": (_ufuncs.greater, bw.gt_p),
    "ge": (_ufuncs.greater_equal, bw.ge_p),
}


def _accepts(other) -> bool:
    return isinstance(other, _PY_OK) or hasattr(other, "__array__")


_BASIC_ITEM = (int, slice, type(None), type(Ellipsis))


def _getitem(self, index):
    # Fast lane: basic indexing (ints, slices of ints, None, ...) of a concrete CPU array is a
    # NumPy view; views of ember's buffers are safe because no one writes to them.
    if type(self) is Array and self._place.host:  # (no NaN to make: the lane is on under debug_nans too)
        kind = type(index)
        if kind is slice:
            start, stop, step = index.start, index.stop, index.step
            plain = ((start is None or type(start) is int) and (stop is None or type(stop) is int)
                     and (step is None or type(step) is int))  # fmt: skip
        else:
            plain = kind is int or (kind is tuple and all(type(i) in _BASIC_ITEM for i in index) and _plain_slices(index))
        if plain:
            try:
                out = self._value[index]
            except IndexError:
                pass  # out of bounds: the general path raises ember's message
            else:
                result = _new(Array)
                result._value = out if type(out) is _ndarray else np.asarray(out)
                result._weak = self._weak
                result._place = self._place
                return result
    try:
        hook = _index_hook(index)
        if hook is not None:
            return hook(self, index)
        return _indexing.getitem(self, index)
    except Exception as err:
        filter_error(err)
        raise


def _index_hook(index):
    """The indexing rule that an index's items bring along (ember.dim's dims, a layer above), or None."""
    for item in index if type(index) is tuple else (index,):
        if type(item) in (tuple, list) and item:
            item = item[0]
        hook = getattr(type(item), "__ember_index__", None)
        if hook is not None:
            return hook
    return None


def _plain_slices(items) -> bool:
    for i in items:
        if type(i) is slice and not _plain_slice(i):
            return False
    return True


def _plain_slice(i: slice) -> bool:
    start, stop, step = i.start, i.stop, i.step
    return ((start is None or type(start) is int) and (stop is None or type(stop) is int)
            and (step is None or type(step) is int))  # fmt: skip


def _install_operators() -> None:
    for name, (fn, prim) in _BINARY.items():
        forward, reflected = _operator(fn, prim)
        setattr(Array, f"__{name}__", forward)
        setattr(Array, f"__r{name}__", reflected)
    for name, (fn, prim) in _COMPARISONS.items():
        forward, _ = _operator(fn, prim)
        setattr(Array, f"__{name}__", forward)
    Array.__neg__ = lambda self: _ufuncs.negative(self)
    Array.__pos__ = lambda self: _ufuncs.positive(self)
    Array.__abs__ = lambda self: _ufuncs.absolute(self)
    Array.__invert__ = lambda self: _ufuncs.invert(self)
    Array.__getitem__ = _getitem
    Array.at = property(_indexing._IndexUpdateHelper, doc="Functional updates: x.at[idx].set(v), .add, .multiply, .min, .max, .get")
    Array.__array_namespace__ = _array_namespace
    Array.__contains__ = lambda self, value: bool(_reductions.any(_ufuncs.equal(self, value)))
    # Real copies, as JAX's: a copy must outlive the original's donation to a jitted function (donate_argnums).
    Array.__copy__ = lambda self: ew.copy_p.bind(self)
    Array.__deepcopy__ = lambda self, memo: ew.copy_p.bind(self)


def _array_namespace(self, /, *, api_version: str | None = None):
    """The array API namespace of ember arrays: ``ember.numpy`` (api_version None or 2021.12 to 2024.12)."""
    return _array_api.namespace_for(api_version)


def _property(fn):
    return property(fn, doc=fn.__doc__)


def _install_methods() -> None:
    Array.T = _property(lambda self: _shape.transpose(self))
    Array.mT = _property(lambda self: _shape.matrix_transpose(self))
    Array.real = _property(lambda self: _ufuncs.real(self))
    Array.imag = _property(lambda self: _ufuncs.imag(self))
    Array.itemsize = _property(lambda self: self.dtype.itemsize)
    Array.nbytes = _property(lambda self: self.size * self.dtype.itemsize)

    def astype(self, dtype, copy: bool = False, device=None) -> Array:
        """This array converted to `dtype` (JAX's defaults: no copy when the dtype already matches)."""
        return _array_api.astype(self, dtype, copy=copy, device=device)

    def reshape(self, *shape, order: str = "C") -> Array:
        """This array with a new shape; `x.reshape(2, 3)` and `x.reshape((2, 3))` both work."""
        if len(shape) == 1 and type(shape[0]) is not int:
            shape = shape[0]
        if type(self) is Array and self._place.host and order == "C" and type(shape) is tuple:
            # Fast lane: a NumPy view (safe: nobody writes to ember's buffers); NumPy's errors fall through.
            out = None
            for d in shape:
                if type(d) is not int:
                    break
            else:
                try:
                    out = self._value.reshape(shape)
                except ValueError:
                    pass
            if type(out) is _ndarray:
                result = _new(Array)
                result._value = out
                result._weak = self._weak
                result._place = self._place
                return result
        return _shape.reshape(self, shape, order)

    def transpose(self, *axes) -> Array:
        """This array with axes permuted (reversed when none are given)."""
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return _shape.transpose(self, axes or None)

    Array.astype = astype
    Array.reshape = reshape
    Array.transpose = transpose
    Array.ravel = lambda self, order="C": _shape.ravel(self, order)
    Array.flatten = Array.ravel
    Array.squeeze = lambda self, axis=None: _shape.squeeze(self, axis)
    Array.swapaxes = lambda self, a, b: _shape.swapaxes(self, a, b)
    Array.conj = Array.conjugate = lambda self: _ufuncs.conjugate(self)
    Array.dot = lambda self, b: _contract.dot(self, b)
    Array.clip = lambda self, min=None, max=None: _ufuncs.clip(self, min, max)
    Array.copy = lambda self: _creation.copy(self)
    Array.to_device = _to_device
    Array.view = _view
    Array.tobytes = lambda self, order="C": np.asarray(self).tobytes(order)
    Array.compress = lambda self, condition, axis=None, **kw: _ndarray_extras.compress(condition, self, axis, **kw)
    for module, names in _FORWARDED:
        for name in names:
            setattr(Array, name, _forward(name, getattr(module, name)))


# Methods that are the ember.numpy function of the same name applied to the array (as JAX's); sort and
# partition return new arrays, as in JAX (NumPy's sort in place).
_FORWARDED = (
    (_reductions, ("sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all", "any", "nansum",
                   "nanmean")),
    (_sorting, ("sort", "argsort", "partition", "argpartition", "cumsum", "cumprod", "searchsorted")),
    (_take, ("take", "diagonal", "trace", "nonzero", "repeat")),
    (_rounding, ("round",)),
    (_ndarray_extras, ("ptp", "choose")),
)


def _forward(name: str, fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`ember.numpy.{name}` of this array."
    return method


def _to_device(self, device, /, *, stream=None) -> Array:
    """This array committed to `device` (the array API's ``to_device``): ``ember.device_put(x, device)``."""
    if stream is not None:
        raise InvalidArgumentError("to_device: stream must be None")
    return on_device(self, check_device("to_device", device))


def _view(self, dtype=None, type=None) -> Array:
    """The same bits seen as `dtype` (as ``lax.bitcast_convert_type`` for equal item sizes; NumPy's
    reshaping of the last axis for different ones, as JAX's ``view``)."""
    if type is not None:
        raise InvalidArgumentError("view: type= is not supported; ember has one array type")
    if dtype is None:
        return self
    target = dtypes.to_dtype(dtype, "view")
    source = self.dtype
    if target.itemsize == source.itemsize or self.ndim == 0:
        if target.itemsize != source.itemsize:
            raise ShapeError(f"view: a 0-d {source} array cannot be viewed as {target} (item sizes differ)")
        return lax.bitcast_convert_type(self, target)
    if self.shape[-1] * source.itemsize % target.itemsize:
        raise ShapeError(f"view: the last axis of {self.shape} ({source}) does not divide into {target} items")
    if target.itemsize < source.itemsize:  # each item splits into a new trailing axis, merged into the last
        out = lax.bitcast_convert_type(self, target)
        return _shape.reshape(out, (*self.shape[:-1], -1))
    ratio = target.itemsize // source.itemsize
    grouped = _shape.reshape(self, (*self.shape[:-1], self.shape[-1] // ratio, ratio))
    return lax.bitcast_convert_type(grouped, target)


def install() -> None:
    _install_operators()
    _install_methods()
