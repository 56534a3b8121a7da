"""The CUDA backend's kernel table: the shared kernels on CuPy, plus overrides where CuPy differs.

An audit of the shared kernels (kernels*.py, special.py) for code that is NumPy-only or slow on a GPU
found these, each overridden here:

- ``rem`` and ``div`` of integers: CuPy's integer ``fmod`` goes through ``double`` (wrong beyond 2**53);
  both are written exactly in integer arithmetic, x / 0 and x % 0 giving 0 as the CPU kernels do.
- ``convert_element_type`` float -> int: the CPU kernel decides "all in range" on the host (``tolist``,
  ``bool(x.min() >= lo)``): a device sync per cast. Here the saturating select always runs, no sync.
- ``reduce_and``/``reduce_or`` of integers: ``ufunc.reduce`` over several axes, which CuPy does not
  promise; a pairwise tree of elementwise ``&``/``|`` (log2 n steps) instead.
- ``scatter*``: ``ufunc.at`` and fancy assignment, whose order among duplicate indices CuPy leaves
  undefined. ``scatter`` keeps the last update of each target (as NumPy); ``scatter_add`` uses CUDA
  atomics (`cupyx.scatter_add`; floating sums then round in an unspecified order, as XLA's on a GPU);
  ``scatter_mul``/``min``/``max`` apply duplicates in rounds, in update order (`OrderedAt`): exactly
  NumPy's result (integer min/max use atomics, where the order cannot matter).
- ``threefry2x32``: a CUDA kernel (`THREEFRY_SOURCE`) giving the CPU kernel's bits, one thread a counter.
- ``fft``: the CPU kernel's ``norm="forward"`` detour works around NumPy's float64 loop; cuFFT needs none.
- ``cholesky``, ``inv``, ``solve``, ``svd``, ``eigh``: cuSOLVER returns garbage, not NaN, for a matrix it
  cannot factor unless told to check; here each runs under ``cupyx.errstate(linalg="raise")`` and a
  failing matrix of a stack gets NaN results, as on the CPU (non-finite input matrices too).
- ``eig``: runs on the host (NumPy's LAPACK geev): cuSOLVER's Xgeev orders eigenvalues differently from
  LAPACK ("no guarantee of the order", CuPy's docs), and ember's eig must agree with the CPU backend
  (JAX, too, computes eig on the host). An explicit round trip, never a silently different answer.

Kept as they are (xp-generic and correct on CuPy): convolution (im2col through a strided view, then one
cuBLAS matmul; CuPy 14 has no cuDNN module to call), windowed reductions, sort/argsort/top_k
(CuPy's sort is stable, NaN last), gather, LU and triangular solve (blocked, matmul-based), special
functions (ember's own float64 series, as on the CPU; cupyx.scipy.special waits until its edge cases
are checked against ember's on a GPU), dynamic slices (their start indices are read on the host: one
sync each, as JAX's eager dispatch).
The CPU jit's buffers.py (NumPy ``out=`` buffers) is CPU code generation, not a kernel.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from ember.backends import kernels_eigen, kernels_indexing
from ember.backends.kernels import _INT_RANGE, _LOW_PRECISION, convert, make_kernels
from ember.backends.kernels_fft import FFT, IFFT, IRFFT, RFFT

__all__ = ["THREEFRY_SOURCE", "OrderedAt", "cuda_kernel_names", "generic_overrides", "make_cuda_kernels",
           "nan_where_fails"]

# Threefry-2x32-20 (Random123; the schedule of kernels_random.threefry2x32), one thread per counter pair,
# grid-stride. A key pointer with step 0 is one key for every counter.
THREEFRY_SOURCE = r"""
typedef unsigned int ember_u32;

__device__ __forceinline__ ember_u32 ember_rotl32(ember_u32 v, int r) {
    return (v << r) | (v >> (32 - r));
}

__device__ __forceinline__ void ember_threefry2x32_20(ember_u32 k0, ember_u32 k1, ember_u32* x0, ember_u32* x1) {
    const ember_u32 ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
    const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    ember_u32 a = *x0 + ks[0];
    ember_u32 b = *x1 + ks[1];
    for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 4; ++j) {
            a += b;
            b = ember_rotl32(b, rot[i & 1][j]) ^ a;
        }
        a += ks[(i + 1) % 3];
        b += ks[(i + 2) % 3] + (ember_u32)(i + 1);
    }
    *x0 = a;
    *x1 = b;
}

extern "C" __global__ void ember_threefry2x32(const ember_u32* k0, long long k0_step, const ember_u32* k1,
                                              long long k1_step, const ember_u32* x0, const ember_u32* x1,
                                              ember_u32* y0, ember_u32* y1, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        ember_u32 a = x0[i];
        ember_u32 b = x1[i];
        ember_threefry2x32_20(k0[i * k0_step], k1[i * k1_step], &a, &b);
        y0[i] = a;
        y1[i] = b;
    }
}
"""

_THREADS = 256
_MAX_BLOCKS = 65535 * 4  # grid-stride beyond this; plenty of blocks to fill any GPU


def make_cuda_kernels(cupy: ModuleType, cupyx: ModuleType | None = None) -> dict[str, Any]:
    """The CUDA kernel table: `make_kernels(cupy)` with this module's overrides (no device is touched).
    `cupyx` is CuPy's companion module (imported when not given; tests pass stand-ins for both).

    >>> names = cuda_kernel_names()  # the same names, found without CuPy
    >>> "threefry2x32" in names and "scatter_add" in names
    True
    """
    k = make_kernels(cupy)
    k.update(generic_overrides(cupy))
    if cupyx is None:
        import cupyx
    k.update(_cupy_overrides(cupy, cupyx, dict(k)))
    return k


def cuda_kernel_names() -> frozenset[str]:
    """The primitive names the CUDA table has kernels for, computed without CuPy (NumPy standing in).

    >>> "conv_general_dilated" in cuda_kernel_names()
    True
    """
    return frozenset(make_kernels(np)) | frozenset(generic_overrides(np)) | frozenset(_CUPY_ONLY)


# --- overrides written against xp (tested with NumPy standing in) -----------------------------


def generic_overrides(xp: ModuleType) -> dict[str, Any]:
    """The overrides that are plain `xp` code: integer div/rem, sync-free float->int casts, logical
    reductions of integers, and scatter/scatter_mul/min/max in update order.

    >>> k = generic_overrides(np)
    >>> k["rem"](np.array([7, -7], np.int64), np.array([2, 0], np.int64)).tolist()
    [1, 0]
    """
    stable = "stable" if xp is np else None  # CuPy's argsort (kind=None) is stable

    def div(x, y):
        return _int_div(xp, x, y) if x.dtype.kind in "iu" else xp.true_divide(x, y)

    def rem(x, y):
        return _int_rem(xp, x, y) if x.dtype.kind in "iu" else xp.fmod(x, y)

    def logical(op, identity_bits):
        def kernel(x, *, axes):
            axes = tuple(axes)
            if x.dtype == np.bool_:
                return (xp.all if op is xp.bitwise_and else xp.any)(x, axis=axes)
            return _pairwise_reduce(xp, op, x, axes, identity_bits(x.dtype))

        return kernel

    def scatter(op):
        def kernel(operand, indices, updates, *, dimension_numbers, mode, **_: Any):
            return kernels_indexing.scatter_kernel(xp, OrderedAt(xp, op, stable), operand, indices, updates,
                                                   dimension_numbers, mode)  # fmt: skip

        return kernel

    return {
        "div": div,
        "rem": rem,
        "convert_element_type": lambda x, *, new_dtype, weak_type=False: _convert(xp, x, new_dtype),
        "reduce_and": logical(xp.bitwise_and, _all_bits),
        "reduce_or": logical(xp.bitwise_or, lambda dtype: 0),
        "scatter": scatter(None),
        "scatter_mul": scatter(xp.multiply),
        "scatter_min": scatter(xp.minimum),
        "scatter_max": scatter(xp.maximum),
    }


def _int_div(xp: ModuleType, x, y):
    """lax.div of integers: truncating toward zero, x / 0 = 0 (the CPU kernel's), exactly in integers."""
    zero = y == 0
    safe = xp.where(zero, xp.ones((), y.dtype), y)
    with np.errstate(over="ignore"):  # INT_MIN // -1 wraps, as in C (NumPy warns; CuPy has no errstate)
        q = xp.floor_divide(x, safe)
        if x.dtype.kind == "i":
            r = x - q * safe
            q = xp.where((r != 0) & ((x < 0) != (safe < 0)), q + 1, q)
    return xp.where(zero, xp.zeros((), x.dtype), q).astype(x.dtype, copy=False)


def _int_rem(xp: ModuleType, x, y):
    """lax.rem of integers: the sign of x (C's %), x % 0 = 0 (NumPy's fmod), exactly in integers."""
    zero = y == 0
    safe = xp.where(zero, xp.ones((), y.dtype), y)
    r = x - _int_div(xp, x, safe) * safe  # wraps like C for INT_MIN % -1 (= 0)
    return xp.where(zero, xp.zeros((), x.dtype), r).astype(x.dtype, copy=False)


def _convert(xp: ModuleType, x, dtype):
    """kernels.convert without host decisions: float -> int always takes the saturating select (the CPU's
    kernel first asks the device whether every value is in range, a synchronizing read)."""
    dtype = np.dtype(dtype)
    if not (dtype.kind in "iu" and (x.dtype.kind == "f" or x.dtype in _LOW_PRECISION)):
        return convert(xp, x, dtype)
    if x.dtype in _LOW_PRECISION:
        x = x.astype(np.float32)  # exact; every bound is a power of two
    lo, hi = _INT_RANGE[dtype]
    inside = (x >= lo) & (x < hi)  # False for NaN
    out = xp.where(inside, x, 0).astype(dtype)  # no out-of-range value reaches the (undefined) C cast
    info = np.iinfo(dtype)
    outside = xp.where(x > 0, dtype.type(info.max), xp.where(x < 0, dtype.type(info.min), dtype.type(0)))
    return xp.where(inside, out, outside.astype(dtype, copy=False))


def _all_bits(dtype: np.dtype) -> int:
    return int(np.iinfo(dtype).max) if dtype.kind == "u" else -1


def _pairwise_reduce(xp: ModuleType, op, x, axes: tuple[int, ...], identity):
    """`op` (associative and commutative) over `axes` as a tree of halvings: ceil(log2 n) elementwise
    steps. An empty reduction gives `identity`."""
    keep = [i for i in range(x.ndim) if i not in axes]
    out_shape = tuple(x.shape[i] for i in keep)
    n = math.prod(x.shape[i] for i in axes)
    if n == 0 or math.prod(out_shape) == 0:
        return xp.full(out_shape, identity, dtype=x.dtype)
    work = xp.transpose(x, keep + list(axes)).reshape(*out_shape, n)
    while work.shape[-1] > 1:
        if work.shape[-1] % 2:
            work = xp.concatenate([work, xp.full((*out_shape, 1), identity, dtype=x.dtype)], axis=-1)
        work = op(work[..., 0::2], work[..., 1::2])
    return work.reshape(out_shape)


class OrderedAt:
    """``op.at(out, index, updates)`` (or plain assignment, `op` None) with duplicate indices applied in
    the order of the updates, as NumPy's ``ufunc.at`` and fancy assignment do: the updates are sorted by
    their (flat) target, stably, and applied in rounds, round r touching each target's r-th update
    only, so no round writes a target twice. Assignment keeps the last update of each target.

    >>> out = np.zeros(3)
    >>> OrderedAt(np, np.add, "stable").at(out, (np.array([2, 0, 2]),), np.array([1.0, 2.0, 3.0]))
    >>> out.tolist()
    [2.0, 0.0, 4.0]
    """

    def __init__(self, xp: ModuleType, op: Any, stable_kind: str | None):
        self.xp, self.op, self.stable_kind = xp, op, stable_kind

    def at(self, out, index: tuple, updates) -> None:
        xp = self.xp
        flat = out.reshape(-1)  # `out` is the kernel's fresh C-contiguous copy: a view
        if updates.size == 0:
            return
        target = _flat_index(xp, out.shape, index, updates.size)
        values = updates.reshape(-1)
        order = xp.argsort(target, kind=self.stable_kind)
        target, values = target[order], values[order]
        if self.op is None:
            last = xp.concatenate([target[1:] != target[:-1], xp.ones(1, dtype=bool)])
            flat[target[last]] = values[last]
            return
        rank = xp.arange(target.size) - xp.searchsorted(target, target, side="left")
        for r in range(int(rank.max()) + 1):
            pick = rank == r
            where = target[pick]
            flat[where] = self.op(flat[where], values[pick])


def _flat_index(xp: ModuleType, shape: tuple[int, ...], index: tuple, size: int):
    """The row-major flat position of each update's target (the index arrays share the updates' shape)."""
    flat = xp.zeros(size, dtype=np.int64)
    stride = 1
    for n, a in zip(reversed(shape), reversed(index)):
        flat += a.reshape(-1).astype(np.int64) * stride
        stride *= n
    return flat


# --- overrides that need CuPy itself ------------------------------------------------------------

_CUPY_ONLY = ("threefry2x32", "fft", "scatter_add", "cholesky", "inv", "solve", "svd", "eigh", "eig")
_ATOMIC_ADD = {np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int32, np.uint32, np.uint64)}
_ATOMIC_MINMAX = {np.dtype(t) for t in (np.int32, np.uint32, np.uint64)}


def _cupy_overrides(cupy: ModuleType, cupyx: ModuleType, shared: dict[str, Any]) -> dict[str, Any]:
    k = {"threefry2x32": _threefry(cupy), "fft": _fft(cupy), "scatter_add": _scatter_atomic(cupy, cupyx, "add")}
    k["scatter_min"] = _scatter_atomic(cupy, cupyx, "min")
    k["scatter_max"] = _scatter_atomic(cupy, cupyx, "max")
    k.update(_linalg(cupy, cupyx, shared))
    return k


def _threefry(cupy: ModuleType):
    kernel = cupy.RawKernel(THREEFRY_SOURCE, "ember_threefry2x32")  # compiled (NVRTC) on first launch
    u32 = np.uint32

    def threefry2x32(key1, key2, x1, x2):
        shape = np.broadcast_shapes(key1.shape, key2.shape, x1.shape, x2.shape)
        n = math.prod(shape)
        y1, y2 = cupy.empty(shape, u32), cupy.empty(shape, u32)
        if n == 0:
            return y1, y2
        xs = [cupy.ascontiguousarray(cupy.broadcast_to(x, shape), dtype=u32) for x in (x1, x2)]
        keys, steps = [], []
        for key in (key1, key2):
            one = key.size == 1
            keys.append(cupy.ascontiguousarray(key.reshape(1) if one else cupy.broadcast_to(key, shape), dtype=u32))
            steps.append(np.int64(0 if one else 1))
        blocks = min((n + _THREADS - 1) // _THREADS, _MAX_BLOCKS)
        kernel((blocks,), (_THREADS,), (keys[0], steps[0], keys[1], steps[1], xs[0], xs[1], y1, y2, np.int64(n)))
        return y1, y2

    return threefry2x32


def _fft(cupy: ModuleType):
    one_axis = {FFT: cupy.fft.fft, IFFT: cupy.fft.ifft, RFFT: cupy.fft.rfft}
    many_axes = {FFT: cupy.fft.fftn, IFFT: cupy.fft.ifftn, RFFT: cupy.fft.rfftn}
    real_of = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
    complex_of = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}

    def fft(x, *, fft_type, fft_lengths):
        d = len(fft_lengths)
        if fft_type == IRFFT:
            out = cupy.fft.irfft(x, n=fft_lengths[0], axis=-1) if d == 1 else \
                cupy.fft.irfftn(x, s=fft_lengths, axes=tuple(range(-d, 0)))
            return out.astype(real_of[x.dtype], copy=False)
        out = one_axis[fft_type](x, axis=-1) if d == 1 else many_axes[fft_type](x, axes=tuple(range(-d, 0)))
        return out.astype(complex_of.get(x.dtype, x.dtype), copy=False)

    return fft


def _scatter_atomic(cupy: ModuleType, cupyx: ModuleType, kind: str):
    """scatter_add (and integer scatter_min/max) with CUDA atomics; the other dtypes in update order."""
    atomic = {"add": cupyx.scatter_add, "min": cupyx.scatter_min, "max": cupyx.scatter_max}[kind]
    ufunc = {"add": cupy.add, "min": cupy.minimum, "max": cupy.maximum}[kind]
    ordered = OrderedAt(cupy, ufunc, None)
    fast = _ATOMIC_ADD if kind == "add" else _ATOMIC_MINMAX

    class AtomicAt:
        @staticmethod
        def at(out, index, updates):
            dtype = out.dtype
            if dtype in fast:
                atomic(out, index, updates)
            elif kind == "add" and dtype == np.int64:  # two's complement: the same bits as uint64 sums
                atomic(out.view(np.uint64), index, cupy.ascontiguousarray(updates).view(np.uint64))
            elif kind == "add" and dtype.kind == "c":  # real and imaginary parts add independently
                parts = [cupy.ascontiguousarray(p(out)) for p in (cupy.real, cupy.imag)]
                for part, fn in zip(parts, (cupy.real, cupy.imag)):
                    atomic(part, index, cupy.ascontiguousarray(fn(updates)))
                out.real, out.imag = parts  # (not parts[0] + 1j * parts[1]: 1j * inf is nan + inf j)
            elif kind == "add" and (dtype == np.bool_ or (dtype.kind in "iu" and dtype.itemsize < 4)):
                wide = out.astype(np.int32 if dtype.kind == "i" or dtype == np.bool_ else np.uint32)
                atomic(wide, index, updates.astype(wide.dtype))  # mod 2**32 sums wrap like the narrow type's
                out[...] = (wide != 0) if dtype == np.bool_ else wide.astype(dtype)
            else:
                ordered.at(out, index, updates)

    def kernel(operand, indices, updates, *, dimension_numbers, mode, **_: Any):  # (sortedness/uniqueness hints)
        return kernels_indexing.scatter_kernel(cupy, AtomicAt, operand, indices, updates, dimension_numbers, mode)

    return kernel


def _linalg(cupy: ModuleType, cupyx: ModuleType, shared: dict[str, Any]) -> dict[str, Any]:
    """cuSOLVER with failures checked: NaN results for a matrix it cannot handle, as on the CPU."""
    failure = np.linalg.LinAlgError

    def guarded(fn, x):
        with cupyx.errstate(linalg="raise"):
            if bool(cupy.isfinite(x).all()):
                try:
                    return fn(x)
                except failure:
                    pass
            return nan_where_fails(cupy, fn, x, failure)

    cholesky, inv, svd, eigh = shared["cholesky"], shared["inv"], shared["svd"], shared["eigh"]

    def solve(a, b):
        if not (a.size and b.size):
            return cupy.zeros(b.shape, b.dtype)
        with cupyx.errstate(linalg="raise"):
            try:
                return cupy.linalg.solve(a, b)
            except failure:
                pass
            # Which matrices are singular: each alone (only after a failure), then solve with those
            # replaced by the identity and their results set to NaN.
            stack = a.reshape(-1, *a.shape[-2:])
            bad = cupy.zeros(stack.shape[0], dtype=bool)
            for i in range(stack.shape[0]):
                try:
                    cupy.linalg.inv(stack[i])
                except failure:
                    bad[i] = True
        mask = bad.reshape(*a.shape[:-2], 1, 1)
        eye = cupy.eye(a.shape[-1], dtype=a.dtype)
        out = cupy.linalg.solve(cupy.where(mask, eye, a), b)
        return cupy.where(mask, cupy.asarray(np.nan, dtype=out.dtype), out)

    cpu_eig = kernels_eigen.eigen_kernels(np)["eig"]

    def eig(x, **params):
        # On the host, deliberately: see the module docstring (cuSOLVER's geev order differs from LAPACK's).
        return [cupy.asarray(o) for o in cpu_eig(cupy.asnumpy(x), **params)]

    return {
        "cholesky": lambda a, *, symmetrize_input: guarded(
            lambda m: [cholesky(m, symmetrize_input=symmetrize_input)], a)[0],
        "inv": lambda a: guarded(lambda m: [inv(m)], a)[0],
        "solve": solve,
        "svd": lambda x, **p: guarded(lambda m: svd(m, **p), x),
        "eigh": lambda x, **p: guarded(lambda m: eigh(m, **p), x),
        "eig": eig,
    }


def nan_where_fails(xp: ModuleType, fn, x, failure: type[Exception]) -> list:
    """`fn` (returning a list of stacks) on the stack of matrices `x`, with NaN results for each matrix
    that is not finite or that `fn` fails on (raising `failure`); those are replaced by the identity,
    which every factorization accepts, so one call computes the rest. Matrices are tried one by one
    only after the whole stack failed.

    >>> out = nan_where_fails(np, lambda m: [np.linalg.inv(m)], np.array([[[2.0]], [[0.0]]]), np.linalg.LinAlgError)
    >>> out[0].ravel().tolist()
    [0.5, nan]
    """
    stack = x.reshape(-1, *x.shape[-2:])
    bad = ~xp.isfinite(stack).all(axis=(-2, -1))
    eye = xp.eye(*x.shape[-2:], dtype=x.dtype)
    try:
        outs = fn(xp.where(bad[:, None, None], eye, stack))
    except failure:
        for i in range(stack.shape[0]):
            try:
                fn(xp.where(bad[i], eye, stack[i])[None])
            except failure:
                bad[i] = True
        outs = fn(xp.where(bad[:, None, None], eye, stack))
    result = []
    for out in outs:
        mask = bad.reshape(bad.shape + (1,) * (out.ndim - 1))
        nan = xp.asarray(np.nan, dtype=out.dtype)
        result.append(xp.where(mask, nan, out).reshape(*x.shape[:-2], *out.shape[1:]))
    return result
