"""Keys, splitting and raw bits: everything random starts with the threefry2x32 primitive.

A key is JAX's raw key: a uint32 array of shape (2,). The bit layouts follow
JAX's threefry implementation with ``jax_threefry_partitionable`` on (JAX's
default since 0.5): element i of an array of random bits hashes the counter
(hi, lo) = (i >> 32, i & 0xFFFFFFFF) and xors the two output words; `split`
and `fold_in` hash the counter (0, i) and keep both words. So
``fold_in(k, i) == split(k, n)[i]``, and the same key gives the same numbers
as JAX does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host, wrap
from ember.core.primitives._rules import broadcast_shapes
from ember.core.primitives.random import threefry2x32_p
from ember.errors import DTypeError, EmberOverflowError, InvalidArgumentError, ShapeError
from ember.lax import _elementwise as ew
from ember.lax import _structural as st
from ember.lax._convert import convert

KeyArray = Array
Shape = Sequence[int]
_MASK = 0xFFFFFFFF
_UINT_OF_BITS = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


# --- checks -------------------------------------------------------------------------------


def check_key(fn: str, key) -> Array:
    """`key` as an Array, after checking it is a key (uint32, shape (2,)); errors name `fn`."""
    if isinstance(key, Array) or isinstance(key, (np.ndarray, np.generic)):
        shape, dtype = key.shape, key.dtype
    else:
        raise DTypeError(
            f"ember.random.{fn}: expected a key (a uint32 array of shape (2,)), got {type(key).__name__} {key!r}; "
            f"make keys with ember.random.key(seed), e.g. ember.random.{fn}(ember.random.key(0), ...)"
        )
    if shape != (2,) or dtype != dtypes.uint32:
        hint = ""
        if dtype == dtypes.uint32 and len(shape) > 1 and shape[-1] == 2:
            hint = "; this looks like a batch of keys: map over them with ember.vmap, or index one key"
        error = DTypeError if dtype != dtypes.uint32 else ShapeError
        raise error(
            f"ember.random.{fn}: expected a key, a uint32 array of shape (2,), but got an array of shape {shape} "
            f"and dtype {dtype}; make keys with ember.random.key(seed) and new ones with "
            f"ember.random.split(key) or ember.random.fold_in(key, i){hint}"
        )
    return key if isinstance(key, Array) else from_host(key, fn)


def canonical_shape(fn: str, shape) -> tuple[int, ...]:
    """`shape` (an int or a sequence of ints) as a tuple of non-negative ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"ember.random.{fn}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ShapeError(f"ember.random.{fn}: shape {out} has a negative dimension")
    return out


def check_shape(fn: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """Parameters must broadcast to exactly the requested shape (as in JAX)."""
    if not param_shapes:
        return
    shown = ", ".join(str(s) for s in param_shapes)
    try:
        result = broadcast_shapes(f"ember.random.{fn}", shape, *param_shapes)
    except ShapeError:
        raise ShapeError(
            f"ember.random.{fn}: parameters of shapes {shown} do not broadcast to the requested shape={shape}; "
            "pass scalars, or arrays that broadcast to shape (NumPy's rule: trailing dimensions equal or 1)"
        ) from None
    if result != shape:
        raise ShapeError(
            f"ember.random.{fn}: parameters of shapes {shown} broadcast with shape={shape} to {result}, "
            f"which is not the requested shape; pass shape={result} or parameters that broadcast to {shape}"
        )


def const(value, dtype) -> Array:
    """A constant of `dtype` (not weakly typed)."""
    return wrap(np.asarray(value, dtype=dtype), False)


# --- keys -----------------------------------------------------------------------------------


def key(seed: int | Array) -> KeyArray:
    """A PRNG key made from an integer seed: a uint32 array of shape (2,).

    The words are the seed's high and low 32 bits, as in JAX: a Python int is
    read as 64 bits with ``enable_x64`` on and wraps to its low 32 bits
    otherwise (so ``key(-1)`` is ``[0, 0xFFFFFFFF]`` by default), and a 32-bit
    seed array always has high word 0. The seed may be traced.

    Args:
      seed: a Python int or a 0-d integer array.

    Returns:
      The key, a uint32 array of shape (2,).

    >>> ember.random.key(42).tolist()
    [0, 42]
    """
    if type(seed) is int:
        if not -(2**63) <= seed < 2**64:
            raise EmberOverflowError(f"ember.random.key: seed {seed} does not fit in 64 bits")
        high = (seed >> 32) & _MASK if dtypes.x64_enabled() else 0
        return const([high, seed & _MASK], dtypes.uint32)
    if isinstance(seed, (bool, float, complex, np.bool_)) or seed is None:
        raise DTypeError(f"ember.random.key: the seed must be an integer, got {type(seed).__name__} {seed!r}")
    x = seed if isinstance(seed, Array) else from_host(seed, "ember.random.key")
    if x.ndim or not dtypes.is_integer(x.dtype):
        raise DTypeError(
            f"ember.random.key: the seed must be a scalar integer, got an array of shape {x.shape} and dtype {x.dtype}; "
            "for many keys use ember.random.split(key, n)"
        )
    low = convert(x, dtypes.uint32)
    if x.dtype.itemsize == 8:
        high = convert(ew.shift_right_logical(x, 32), dtypes.uint32)
    else:
        high = const(0, dtypes.uint32)
    return st.concatenate([st.reshape(high, (1,)), st.reshape(low, (1,))], 0)


PRNGKey = key


def _words(key: Array) -> tuple[Array, Array]:
    return st.reshape(st.slice(key, (0,), (1,)), ()), st.reshape(st.slice(key, (1,), (2,)), ())


def _counters(fn: str, shape: tuple[int, ...]) -> tuple[Array, Array]:
    """JAX's 64-bit iota over `shape`, as (hi, lo) uint32 words (hi is 0 below 2**32 elements)."""
    size = math.prod(shape)
    if size >= 2**32:
        raise InvalidArgumentError(f"ember.random.{fn}: shape {shape} has {size} elements; at most 2**32 - 1 are supported")
    return const(0, dtypes.uint32), st.reshape(st.iota(dtypes.uint32, size), shape)


def _stack_words(b1: Array, b2: Array) -> Array:
    shape = (*b1.shape, 1)
    return st.concatenate([st.reshape(b1, shape), st.reshape(b2, shape)], b1.ndim)


def split(key: KeyArray, num: int | Shape = 2) -> KeyArray:
    """New keys, independent of each other and of `key`.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      num: how many keys (default 2), or a shape of keys.

    Returns:
      uint32 keys of shape (num, 2) (or ``(*num, 2)`` for a shape).

    >>> k1, k2 = ember.random.split(ember.random.key(0))
    >>> ember.random.split(ember.random.key(0), 3).shape
    (3, 2)
    """
    key = check_key("split", key)
    shape = canonical_shape("split", num)
    k1, k2 = _words(key)
    b1, b2 = threefry2x32_p.bind(k1, k2, *_counters("split", shape))
    return _stack_words(b1, b2)


def fold_in(key: KeyArray, data: int | Array) -> KeyArray:
    """A new key made from `key` and an integer, e.g. a step or a layer index.

    ``fold_in(key, i)`` equals ``split(key, n)[i]`` for every n > i, as in JAX.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      data: a Python int or 0-d integer array (traced is fine); its low 32 bits count.

    Returns:
      A uint32 key of shape (2,).

    >>> step_key = ember.random.fold_in(ember.random.key(0), 7)
    >>> step_key.shape
    (2,)
    """
    key = check_key("fold_in", key)
    if type(data) is int or isinstance(data, np.integer):
        data = int(data)
        if not -(2**31) <= data < 2**32:
            raise EmberOverflowError(f"ember.random.fold_in: data {data} does not fit in 32 bits")
        word = const(data & _MASK, dtypes.uint32)
    else:
        x = data if isinstance(data, Array) else from_host(data, "ember.random.fold_in")
        if x.ndim or not (dtypes.is_integer(x.dtype) or x.dtype == dtypes.bool_):
            raise DTypeError(
                f"ember.random.fold_in: data must be a scalar integer, got an array of shape {x.shape} and dtype {x.dtype}; "
                "to make many keys use ember.random.split(key, n)"
            )
        word = convert(x, dtypes.uint32)
    k1, k2 = _words(key)
    b1, b2 = threefry2x32_p.bind(k1, k2, const(0, dtypes.uint32), word)
    return _stack_words(b1, b2)


def threefry2x32(key: KeyArray, count: Array) -> Array:
    """The Threefry-2x32 hash of `count` under `key` (JAX's ``threefry_2x32``).

    The flattened counts are padded to even length with a zero, split into two
    halves that form the counter pairs, hashed, and put back in `count`'s shape.

    Args:
      key: a key (uint32, shape (2,)).
      count: a uint32 array of any shape.

    Returns:
      A uint32 array of `count`'s shape.

    >>> import numpy as np
    >>> ember.random.threefry2x32(ember.random.key(0), np.zeros(2, np.uint32)).tolist()
    [1797259609, 2579123966]
    """
    key = check_key("threefry2x32", key)
    x = count if isinstance(count, Array) else from_host(count, "ember.random.threefry2x32")
    if x.dtype != dtypes.uint32:
        raise DTypeError(
            f"ember.random.threefry2x32: count must be a uint32 array, got shape {x.shape} and dtype {x.dtype}; "
            "convert with lax.convert_element_type(count, 'uint32')"
        )
    flat = st.reshape(x, (x.size,))
    odd = x.size % 2
    if odd:
        flat = st.concatenate([flat, const([0], dtypes.uint32)], 0)
    half = flat.shape[0] // 2
    k1, k2 = _words(key)
    b1, b2 = threefry2x32_p.bind(k1, k2, st.slice(flat, (0,), (half,)), st.slice(flat, (half,), (2 * half,)))
    out = st.concatenate([b1, b2], 0)
    if odd:
        out = st.slice(out, (0,), (x.size,))
    return st.reshape(out, x.shape)


# --- raw bits --------------------------------------------------------------------------------


def random_bits(fn: str, key: Array, bit_width: int, shape: tuple[int, ...], at: Array | None = None) -> Array:
    """Unsigned integers of `bit_width` bits and `shape` from a checked key.

    With `at` (uint32 flat positions in an array of `shape`), only those positions' bits, in the shape
    of `at`: each position's bits depend on the key and the position alone.
    """
    k1, k2 = _words(key)
    b1, b2 = threefry2x32_p.bind(k1, k2, *(_counters(fn, shape) if at is None else (const(0, dtypes.uint32), at)))
    if bit_width == 64:
        # Both words, high first.
        hi, lo = convert(b1, dtypes.uint64), convert(b2, dtypes.uint64)
        return ew.bitwise_or(ew.shift_left(hi, const(32, dtypes.uint64)), lo)
    bits = ew.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else convert(bits, _UINT_OF_BITS[bit_width])


def bits(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Uniformly random bits: unsigned integers with every bit pattern equally likely.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: uint8, uint16, uint32 or uint64 (default uint32, or uint64 with
        ``enable_x64`` on, as in JAX; uint64 needs x64, else it means uint32).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.bits(ember.random.key(0), (3,)).tolist()
    [4070199207, 4202968722, 1427181096]
    """
    key = check_key("bits", key)
    dtype = dtypes.default_uint() if dtype is None else dtypes.canonicalize(dtype, "ember.random.bits")
    if not dtypes.is_unsigned(dtype):
        raise DTypeError(
            f"ember.random.bits: dtype must be an unsigned integer dtype (uint8, uint16, uint32, uint64), got {dtype}; "
            "for integers in a range use ember.random.randint"
        )
    shape = canonical_shape("bits", shape)
    return random_bits("bits", key, 8 * dtype.itemsize, shape)
