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
from ember.core.array import Array, wrap
from ember.core.primitives import bitwise as bw
from ember.core.primitives import elementwise as ew
from ember.errors import InvalidArgumentError, ShapeError
from ember.lax import _fastlane
from ember.numpy import _array_api, _contract, _creation, _indexing, _ndarray_extras, _reductions, _rounding
from ember.numpy import _shape
from ember.numpy import _sorting, _take, _ufuncs
from ember.numpy._core import check_device, on_device

_PY_OK = (Array, bool, int, float, complex, list, tuple)
_new = object.__new__
_ndarray = np.ndarray


def _numeric_only(prim):
    return _fastlane.Narrowed(prim, lambda d: d != dtypes.bool_)


def _inexact_only(prim):
    return _fastlane.Narrowed(prim, dtypes.is_inexact)


def _operator(fn, prim=None):
    """`a OP b` and `b OP a` for the ember.numpy function `fn` (primitive `prim` for the fast lanes)."""

    def forward(self, other):
        if not _accepts(other):
            return NotImplemented
        try:
            return fn(self, other)
        except Exception as err:  # operators are traceback boundaries (ember/_traceback.py), inline for speed
            filter_error(err)
            raise

    def reflected(self, other):
        if not _accepts(other):
            return NotImplemented
        try:
            return fn(other, self)
        except Exception as err:
            filter_error(err)
            raise

    if fn is _contract.matmul:
        return _fastlane.matmul_operator(_contract._matmul_fast, forward, reflected)
    if prim is None:
        return forward, reflected
    # true_divide's lane admits only inexact dtypes, where the primitive's kernel is NumPy's ufunc
    kernel = np.true_divide if fn is _ufuncs.true_divide else None
    return _fastlane.operator(prim, forward, reflected, kernel)


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


def _getitem(self, index):
    # Fast lane: basic indexing (ints, slices, None, ...) of a concrete CPU array is a NumPy view; views
    # of ember's buffers are safe because no one writes to them. NumPy reads a slice's bounds as ember
    # does (operator.index); whatever NumPy refuses (a bound out of range, a traced bound) goes on to
    # the general path, which explains.
    if type(self) is Array and self._place.host:  # (no NaN to make: the lane is on under debug_nans too)
        kind = type(index)
        if kind is slice or kind is int or (kind is not Array and _fastlane.basic_index(index)):
            try:
                out = self._value[index]
            except Exception:
                out = None
            if out is not None:
                result = _new(Array)
                result._value = out if type(out) is _ndarray else np.asarray(out)  # (an int of a 1-d array: a scalar)
                result._weak = self._weak
                result._place = self._place
                return result
        elif kind is Array and index._place is self._place and index._value.dtype.kind in "iu":
            # One integer array on the first axis, all in bounds (NumPy raises for others, which the
            # general path clamps): NumPy's take, which reads negative indices as ember does.
            try:
                out = self._value[index._value]
            except Exception:
                out = None
            if out is not None:  # (a 0-d index reads one element: a NumPy scalar)
                return wrap(out if type(out) is _ndarray else np.asarray(out), self._weak, self._place)
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


def _install_operators() -> None:
    for name, (fn, prim) in _BINARY.items():
        forward, reflected = _operator(fn, prim)
        setattr(Array, f"__{name}__", forward)
        setattr(Array, f"__r{name}__", reflected)
    for name, (fn, prim) in _COMPARISONS.items():
        forward, _ = _operator(fn, prim)
        setattr(Array, f"__{name}__", forward)
    # The functions themselves (fast lanes, and their own traceback boundaries), not a call in between
    Array.__neg__ = _ufuncs.negative
    Array.__pos__ = _ufuncs.positive
    Array.__abs__ = _ufuncs.absolute
    Array.__invert__ = _ufuncs.invert
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


def _reversed_axes(self) -> Array:
    """`x.T`: the axes reversed (a NumPy view for a concrete CPU array)."""
    if type(self) is Array and self._place.host:
        return wrap(self._value.T, self._weak, self._place)
    return _shape.transpose(self)


def _install_methods() -> None:
    Array.T = _property(_reversed_axes)
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
        place = self._place
        if order == "C" and type(self) is Array and place.host:
            # Fast lane: a NumPy view (safe: nobody writes to ember's buffers). NumPy reads the dims as
            # ember does (operator.index); what it refuses (a traced or float dim) the general path explains.
            try:
                out = self._value.reshape(shape)
            except Exception:
                out = None
            if type(out) is _ndarray:
                result = _new(Array)
                result._value = out
                result._weak = self._weak
                result._place = place
                return result
        return _shape.reshape(self, shape, order)

    def transpose(self, *axes) -> Array:
        """This array with axes permuted (reversed when none are given)."""
        if type(self) is Array and self._place.host:
            try:  # Fast lane: NumPy's view; what NumPy refuses (a repeated or traced axis) the general path explains
                out = self._value.transpose(*axes)
            except Exception:
                out = None
            if type(out) is _ndarray:
                return wrap(out, self._weak, self._place)
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
