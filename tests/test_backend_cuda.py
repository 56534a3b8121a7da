"""The CUDA backend (ember/backends/cuda_backend.py, kernels_cuda.py).

Most of it is checked without a GPU: the table's names, the overrides that are plain `xp` code (run
with NumPy standing in for CuPy, against the CPU kernels), the threefry CUDA source (compiled as host C
by gcc and compared bit for bit with the CPU kernel and Random123's known answers; compiled by nvcc
where present), and the errors without CuPy or without a device. Tests that need a GPU skip with a
reason when there is none.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib
import pathlib
import shutil
import subprocess
import tempfile
import traceback
import types
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import backends
from ember.backends import cpu
from ember.backends import kernels_cuda as kc
from ember.backends.kernels import make_kernels
from ember.backends.kernels_random import threefry2x32
from ember.core import primitive
from ember.core.primitive import PRIMITIVES
from ember.errors import DeviceError, DeviceMemoryError

BF16 = np.dtype(ml_dtypes.bfloat16)
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]


# --- the table, without CuPy ----------------------------------------------------------------------


def test_every_primitive_with_a_cpu_kernel_has_a_cuda_kernel():
    with_cpu_kernel = {name for name in PRIMITIVES if name in cpu.kernels}
    missing = with_cpu_kernel - kc.cuda_kernel_names()
    assert not missing, f"primitives with a CPU kernel but none in the CUDA table: {sorted(missing)}"
    assert len(with_cpu_kernel) > 100


def test_cuda_only_overrides_name_real_primitives():
    assert set(kc._CUPY_ONLY) <= set(cpu.kernels)
    assert set(kc.generic_overrides(np)) <= set(cpu.kernels)


class _StandIn(types.ModuleType):
    """NumPy posing as another array module (CuPy): the shared kernels take their non-NumPy branches
    (``xp is np`` is False, ``__name__`` is not "numpy"), and sort/argsort are stable by default, as CuPy's."""

    def __init__(self) -> None:
        super().__init__("cupy_stand_in")

    def __getattr__(self, name: str):
        return getattr(np, name)

    @staticmethod
    def sort(a, axis=-1, kind=None):
        return np.sort(a, axis=axis, kind="stable")

    @staticmethod
    def argsort(a, axis=-1, kind=None):
        return np.argsort(a, axis=axis, kind="stable")


class _StandInCupy(_StandIn):
    """The stand-in as CuPy itself: `asnumpy`, and a `RawKernel` that runs the CUDA source compiled as host C."""

    @staticmethod
    def asnumpy(a):
        return np.asarray(a)

    class RawKernel:
        def __init__(self, source: str, name: str):
            assert name == "ember_threefry2x32"
            self.source = source

        def __call__(self, grid, block, args):
            assert grid[0] >= 1 and block[0] >= 1
            _threefry_library(self.source).run(*args)


STAND_IN = _StandInCupy()


class _FakeCupyx:
    """cupyx's atomics as NumPy's ufunc.at (the same sums, in order), and errstate(linalg="raise") as NumPy,
    whose linalg raises LinAlgError where cuSOLVER, told to check, raises too."""

    scatter_add = staticmethod(lambda a, slices, value: np.add.at(a, slices, value))
    scatter_min = staticmethod(lambda a, slices, value: np.minimum.at(a, slices, value))
    scatter_max = staticmethod(lambda a, slices, value: np.maximum.at(a, slices, value))

    @staticmethod
    def errstate(linalg: str):
        assert linalg == "raise"
        return contextlib.nullcontext()


@functools.cache
def stand_in_table() -> dict:
    """The whole CUDA table (kernels_cuda.make_cuda_kernels) with NumPy standing in for CuPy."""
    return kc.make_cuda_kernels(STAND_IN, cupyx=_FakeCupyx)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_div_and_rem_match_the_cpu_kernels(dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    edge = [0, 1, -1, 2, -2, 7, -7, info.min, info.max, info.min + 1, info.max - 1]
    x = np.array([v for v in edge if info.min <= v <= info.max] * 12, dtype)
    y = rng.permutation(np.array([v for v in edge if info.min <= v <= info.max] * 12, dtype))
    big = rng.integers(info.min, info.max, size=500, dtype=dtype, endpoint=True)
    small = rng.integers(max(info.min, -9), 10, size=500).astype(dtype)
    x, y = np.concatenate([x, big, big]), np.concatenate([y, small, big[::-1]])
    for name in ("div", "rem"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = cpu.kernels[name](x, y)
        got = stand_in_table()[name](x, y)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype}")
    # and against C semantics directly (Python ints): truncation toward zero, remainder with x's sign
    q, r = stand_in_table()["div"](big, small), stand_in_table()["rem"](big, small)
    for a, b, qq, rr in zip(big.tolist(), small.tolist(), q.tolist(), r.tolist()):
        if b and not (dtype.kind == "i" and a == info.min and b == -1):
            assert (qq, rr) == (int(a / b) if abs(a) < 2**52 else _c_div(a, b), a - b * _c_div(a, b))


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("source", [np.float16, BF16, np.float32, np.float64, np.complex64], ids=str)
def test_float_to_int_conversion_matches_the_cpu_kernel(source):
    rng = np.random.default_rng(1)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 127.0, 128.0, -128.0, -129.0, 255.0, 256.0,
               32767.0, 32768.0, -32769.0, 2.0**31, -(2.0**31), 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 1e30, -1e30]
    values = np.concatenate([np.array(special), rng.normal(0, 1e3, 200), rng.normal(0, 1e10, 200)])
    for n in (5, 40, len(values)):  # both sides of the CPU kernel's small-array path
        x = values[:n].astype(source)
        for target in [*INTS, np.dtype(np.bool_), np.dtype(np.float32)]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = cpu.kernels["convert_element_type"](x, new_dtype=target)
                got = stand_in_table()["convert_element_type"](x, new_dtype=target)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{x.dtype} -> {target}")


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or"])
def test_logical_reductions_of_integers_match_the_cpu_kernel(name):
    rng = np.random.default_rng(2)
    for dtype in [*INTS, np.dtype(np.bool_)]:
        for shape, axes in [((7, 5, 3), (1,)), ((7, 5, 3), (0, 2)), ((6,), (0,)), ((4, 0, 3), (1,)), ((4, 0), (0,)),
                            ((3, 9), ()), ((1,), (0,))]:  # fmt: skip
            x = rng.integers(0, 256, size=shape).astype(dtype) | (rng.random(shape) < 0.8).astype(dtype)
            want = cpu.kernels[name](x, axes=axes)
            got = stand_in_table()[name](x, axes=axes)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype} {shape} {axes}")


@pytest.mark.parametrize("op", [None, np.add, np.multiply, np.minimum, np.maximum],
                         ids=lambda o: getattr(o, "__name__", "set"))
def test_ordered_at_is_numpy_ufunc_at_with_duplicates(op):
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64, np.int32, np.uint8, np.complex64, np.bool_, BF16):
        for trial in range(4):
            shape = (5, 4)
            n = [0, 1, 30, 200][trial]
            index = (rng.integers(0, 5, n), rng.integers(0, 4, n))
            updates = (rng.normal(size=n) * 3).astype(dtype)
            if np.dtype(dtype).kind == "f" and n:
                updates[rng.integers(0, n)] = np.nan
            out = (rng.normal(size=shape) * 3).astype(dtype)
            want = out.copy()
            if op is None:
                want[index] = updates  # NumPy: the last update of a target wins
            else:
                op.at(want, index, updates)
            kc.OrderedAt(np, op, "stable").at(out, index, updates)
            np.testing.assert_array_equal(out, want, err_msg=f"{op} {dtype} n={n}")


@pytest.mark.parametrize("name", ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"])
def test_scatter_kernels_with_duplicate_indices_match_the_cpu_kernels(name):
    from ember.core.primitives.indexing import ScatterDimensionNumbers

    rng = np.random.default_rng(7)
    # rows of a (6, 3) operand, some rows hit several times, one index out of bounds (dropped)
    dn = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    indices = np.array([[1], [4], [1], [0], [1], [4], [9]], np.int32)
    for dtype in [*INTS, np.dtype(np.bool_), np.float16, BF16, np.float32, np.float64, np.complex64, np.complex128]:
        operand = (rng.normal(size=(6, 3)) * 4).astype(dtype)
        updates = (rng.normal(size=(7, 3)) * 4).astype(dtype)
        if np.dtype(dtype).kind == "c":
            updates[2, 1] = complex(np.inf, 1.0)  # an infinite real part must not turn the imaginary part to NaN
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = cpu.kernels[name](operand, indices, updates, dimension_numbers=dn, mode="fill")
            got = stand_in_table()[name](operand, indices, updates, dimension_numbers=dn, mode="fill")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {np.dtype(dtype)}")


def test_nan_where_fails_marks_failing_and_nonfinite_matrices():
    a = np.stack([np.diag([2.0, 4.0]), np.zeros((2, 2)), np.full((2, 2), np.nan), np.array([[1.0, 2.0], [3.0, 4.0]])])
    inv = kc.nan_where_fails(np, lambda m: [np.linalg.inv(m)], a.reshape(2, 2, 2, 2), np.linalg.LinAlgError)[0]
    assert inv.shape == (2, 2, 2, 2)
    inv = inv.reshape(4, 2, 2)
    np.testing.assert_allclose(inv[0], np.diag([0.5, 0.25]))
    assert np.isnan(inv[1]).all() and np.isnan(inv[2]).all()
    np.testing.assert_allclose(inv[3], np.linalg.inv(a[3]))


# Primitives whose CUDA code differs from the CPU's (an override, or a branch of the shared kernels taken
# for any array module but NumPy): their op_db entries run with the stand-in CUDA table (CuPy's own
# calls, cuFFT/cuSOLVER/atomics, played by NumPy) against the CPU table.
_DIFFERENT_ON_CUDA = set(kc.generic_overrides(np)) | set(kc._CUPY_ONLY) | {
    "sort", "top_k", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "conv_general_dilated",
    "reduce_window_sum", "reduce_window_max", "reduce_window_min", "select_and_scatter_add", "select_and_gather_add",
    "cholesky", "qr", "inv", "solve", "select_n", "gather", "scatter_add", "triangular_solve", "lu",
}


def _entries():
    import op_db

    return [op for op in op_db.OPS if set(op.primitives) & _DIFFERENT_ON_CUDA]


@pytest.fixture
def stand_in_kernels(monkeypatch):
    """ember's CPU backend running the stand-in CUDA table (every cached kernel forgotten, before and after)."""
    primitive._EAGER.clear()
    monkeypatch.setattr(cpu, "kernels", stand_in_table())
    for prim in PRIMITIVES.values():
        monkeypatch.setattr(prim, "_kernel", None)
    yield
    primitive._EAGER.clear()


def _run(op, sample):
    from op_db import outputs_of

    # Without jit: a program compiled here would keep the stand-in kernels after the test.
    with warnings.catch_warnings(), ember.disable_jit():
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.asarray(o) for o in outputs_of(op.op(*sample.args, **sample.kwargs))]


@pytest.mark.parametrize("op", _entries(), ids=lambda op: op.name)
def test_op_db_entries_agree_with_the_stand_in_table(op, stand_in_kernels, monkeypatch):
    from op_db import SIXTY_FOUR_BIT

    rng = np.random.default_rng(4)
    for dtype in op.dtypes:
        with ember.config.x64(dtype in SIXTY_FOUR_BIT):
            samples = op.samples(rng, dtype)[:6]
            got = [_run(op, s) for s in samples]
            with monkeypatch.context() as m:  # the ordinary CPU table
                m.setattr(cpu, "kernels", make_kernels(np))
                primitive._EAGER.clear()
                for prim in PRIMITIVES.values():
                    m.setattr(prim, "_kernel", None)
                want = [_run(op, s) for s in samples]
            primitive._EAGER.clear()
        for sample, g, w in zip(samples, got, want):
            for gi, wi in zip(g, w, strict=True):
                assert gi.dtype == wi.dtype and gi.shape == wi.shape, (op.name, sample)
                if gi.dtype.kind in "biu":
                    np.testing.assert_array_equal(gi, wi, err_msg=f"{op.name} {sample}")
                else:
                    rtol, atol = op.tolerance(gi.dtype)
                    np.testing.assert_allclose(gi.astype(np.complex128 if gi.dtype.kind == "c" else np.float64),
                                               wi.astype(np.complex128 if wi.dtype.kind == "c" else np.float64),
                                               rtol=max(rtol, 1e-6), atol=max(atol, 1e-6),
                                               err_msg=f"{op.name} {sample}")


# --- threefry: the CUDA source, compiled as host C -----------------------------------------------

_HARNESS = r"""
#define __global__
#define __device__ static
#define __forceinline__ inline
struct ember_dim3 { unsigned int x, y, z; };
static const struct ember_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0};
static const struct ember_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
%s
/* One "thread" whose grid-stride loop covers every counter. */
void run(const ember_u32* k0, long long s0, const ember_u32* k1, long long s1, const ember_u32* x0,
         const ember_u32* x1, ember_u32* y0, ember_u32* y1, long long n) {
    ember_threefry2x32(k0, s0, k1, s1, x0, x1, y0, y1, n);
}
"""


@functools.cache
def _threefry_library(source: str):
    """The CUDA source compiled as host C by gcc, loaded (a skip without gcc)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed: the threefry CUDA source is checked as host C")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ember-threefry-"))
    (folder / "threefry.c").write_text(_HARNESS % source.replace('extern "C"', ""))
    atexit.register(shutil.rmtree, folder, True)
    subprocess.run([gcc, "-std=c99", "-O2", "-Wall", "-shared", "-fPIC", str(folder / "threefry.c"), "-o",
                    str(folder / "threefry.so")], check=True, capture_output=True)  # fmt: skip
    lib = ctypes.CDLL(str(folder / "threefry.so"))
    u32p = np.ctypeslib.ndpointer(np.uint32, flags="C_CONTIGUOUS")
    lib.run.argtypes = [u32p, ctypes.c_longlong, u32p, ctypes.c_longlong, u32p, u32p, u32p, u32p, ctypes.c_longlong]
    lib.run.restype = None
    return lib


@pytest.fixture(scope="module")
def threefry_c():
    lib = _threefry_library(kc.THREEFRY_SOURCE)

    def run(k0, k1, x0, x1):
        shape = np.broadcast_shapes(k0.shape, k1.shape, x0.shape, x1.shape)
        xs = [np.ascontiguousarray(np.broadcast_to(x, shape), np.uint32).reshape(-1) for x in (x0, x1)]
        ks = [np.ascontiguousarray(k.reshape(1) if k.size == 1 else np.broadcast_to(k, shape), np.uint32).reshape(-1)
              for k in (k0, k1)]  # fmt: skip
        y0, y1 = np.empty(xs[0].size, np.uint32), np.empty(xs[0].size, np.uint32)
        lib.run(ks[0], int(k0.size != 1), ks[1], int(k1.size != 1), xs[0], xs[1], y0, y1, xs[0].size)
        return y0.reshape(shape), y1.reshape(shape)

    return run


def test_threefry_cuda_source_gives_random123_known_answers(threefry_c):
    # Random123's kat_vectors for threefry2x32_20 (also JAX's test_threefry_2x32): independent of ember.
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]  # fmt: skip
    for key, counter, expected in cases:
        y0, y1 = threefry_c(*(np.array([v], np.uint32) for v in (*key, *counter)))
        assert (int(y0[0]), int(y1[0])) == expected


@pytest.mark.parametrize("layout", ["scalar key", "key per counter", "one key word per counter"])
def test_threefry_cuda_source_matches_the_cpu_kernel_bit_for_bit(threefry_c, layout):
    rng = np.random.default_rng(5)
    n = 10_000
    x0, x1 = (rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(2))
    if layout == "scalar key":
        k0, k1 = (np.array(rng.integers(0, 2**32, dtype=np.uint32)) for _ in range(2))
    elif layout == "key per counter":
        k0, k1 = (rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(2))
    else:
        k0, k1 = rng.integers(0, 2**32, n, dtype=np.uint32), np.array(7, np.uint32)
    want = threefry2x32(np, k0, k1, x0, x1)
    got = threefry_c(k0, k1, x0, x1)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_threefry_cuda_source_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed (CuPy compiles the kernel with NVRTC at run time; this is a build check)")
    source = tmp_path / "threefry.cu"
    source.write_text(kc.THREEFRY_SOURCE)
    done = subprocess.run([nvcc, "--ptx", "-arch=compute_80", str(source), "-o", str(tmp_path / "threefry.ptx")],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ".entry ember_threefry2x32" in (tmp_path / "threefry.ptx").read_text()


# --- without CuPy, or without a GPU --------------------------------------------------------------


@pytest.fixture
def no_cupy(monkeypatch):
    monkeypatch.setattr(backends, "_cupy", lambda: None)
    backends.cuda.cache_clear()
    backends.cuda_device_count.cache_clear()
    yield
    backends.cuda.cache_clear()
    backends.cuda_device_count.cache_clear()


class _ForeignGpuArray:
    """An array in (pretend) GPU memory, as a PyTorch CUDA tensor shows itself through DLPack."""

    shape, dtype = (2,), np.dtype(np.float32)

    def __dlpack_device__(self):
        return (2, 0)


def test_without_cupy_cuda_names_the_install_command(no_cupy):
    assert ember.devices("cuda") == []
    assert "pip install 'ember[cuda]'" in backends.available()["cuda"]
    with pytest.raises(DeviceError, match=r"pip install 'ember\[cuda\]'"):
        ember.device_put(enp.ones(2), "cuda:0")
    with pytest.raises(DeviceError, match=r"_ForeignGpuArray is an array in GPU memory.*pip install 'ember\[cuda\]'"):
        enp.asarray(_ForeignGpuArray())


def test_a_host_callback_returning_gpu_memory_gets_a_device_error():
    class GpuResult:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False), "version": 3}

    def callback(x):
        return GpuResult()

    with pytest.raises(DeviceError, match=r"pure_callback: callback returned a GpuResult in GPU memory.*cupy.asnumpy"):
        ember.pure_callback(callback, ember.ShapeDtypeStruct((2,), np.float32), enp.ones(2))


def test_a_cuda_array_interface_without_cupy_is_a_device_error(no_cupy):
    class NumbaLike:
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False), "version": 3}

    with pytest.raises(DeviceError, match=r"asarray: NumbaLike is an array in GPU memory.*pip install"):
        enp.asarray(NumbaLike())


def test_the_backend_module_does_not_shadow_backends_cuda():
    importlib.import_module("ember.backends.cuda_backend")
    assert callable(backends.cuda) and hasattr(backends.cuda, "cache_clear")


def test_cpu_arrays_have_no_cuda_array_interface_and_a_cpu_dlpack_device():
    x = enp.arange(3.0)
    assert not hasattr(x, "__cuda_array_interface__")
    assert x.__dlpack_device__() == (1, 0)


def _cupy_or_skip():
    return pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ember[cuda]')")


def test_with_cupy_but_no_gpu():
    _cupy_or_skip()
    backends.cuda_device_count.cache_clear()
    if backends.cuda_device_count():
        pytest.skip("a GPU is present: this checks the machine without one")
    backend = backends.cuda()  # building the table touches no device
    assert backend.platform == "cuda" and set(backend.kernels) == set(kc.cuda_kernel_names())
    assert ember.devices("cuda") == []
    with pytest.raises(DeviceError, match="device cuda:0 is not present"):
        ember.device_put(enp.ones(2), "cuda:0")
    with pytest.raises(DeviceError, match="finds no CUDA device"):
        enp.asarray(_ForeignGpuArray())


class _FakeOom(MemoryError):
    def __init__(self, size: int, total: int):
        super().__init__("Out of memory")
        self._size, self._total = size, total


class _OnGpu(np.ndarray):
    """A NumPy array claiming to live on GPU `gpu` (CuPy's ``x.data.device_id``); results of NumPy
    functions on it stay on its GPU."""

    gpu = 0

    def __array_finalize__(self, obj):
        self.gpu = getattr(obj, "gpu", 0)

    @property
    def data(self):
        return types.SimpleNamespace(device_id=self.gpu)

    def get(self, stream=None, out=None):
        if out is None:
            return np.array(self)
        out[...] = self
        return out


def _on_gpu(x, gpu: int) -> _OnGpu:
    out = np.asarray(x).view(_OnGpu)
    out.gpu = gpu
    return out


def _fake_cupy(entered: list):
    current = {"id": 0}

    @contextlib.contextmanager
    def device(number):
        entered.append(number)
        before, current["id"] = current["id"], number
        try:
            yield
        finally:
            current["id"] = before

    cuda = types.SimpleNamespace(memory=types.SimpleNamespace(OutOfMemoryError=_FakeOom), Device=device,
                                 runtime=types.SimpleNamespace(getDevice=lambda: current["id"]))  # fmt: skip
    fake = _StandInCupy()
    fake.cuda, fake.ndarray = cuda, _OnGpu
    return fake, current


class _FakeGpuCupy(_StandInCupy):
    """NumPy playing CuPy with several GPUs: arrays made here land on the current (fake) device."""

    def __init__(self, cuda, current):
        super().__init__()
        self.cuda, self.ndarray, self._current = cuda, _OnGpu, current

    def _here(self, a):
        return _on_gpu(a, self._current["id"])

    def asarray(self, a, dtype=None, blocking=False):
        return self._here(np.asarray(a, dtype))

    def array(self, a, dtype=None, copy=True):
        return self._here(np.array(a, dtype, copy=copy))

    def arange(self, *args, **kwargs):
        return self._here(np.arange(*args, **kwargs))

    def ascontiguousarray(self, a, dtype=None):
        return _on_gpu(np.ascontiguousarray(a, dtype), getattr(a, "gpu", self._current["id"]))

    @staticmethod
    def broadcast_to(x, shape):
        return np.broadcast_to(x, shape, subok=True)


class _ForeignGpu:
    """A GPU array of another library (PyTorch on CUDA) on GPU 1."""

    def __init__(self, value):
        self.value = np.asarray(value)

    def __array__(self, dtype=None, copy=None):
        return self.value

    def __dlpack_device__(self):
        return (2, 1)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.value.shape, "typestr": self.value.dtype.str, "data": (0, True), "version": 3}


@pytest.fixture
def two_fake_gpus(monkeypatch):
    """ember with a CUDA backend on two fake GPUs (NumPy arrays tagged with their device)."""
    from ember.core import devices

    cuda_backend = importlib.import_module("ember.backends.cuda_backend")
    entered: list = []
    fake, current = _fake_cupy(entered)
    fake = _FakeGpuCupy(fake.cuda, current)
    fake.cuda.get_current_stream = lambda: types.SimpleNamespace(synchronize=lambda: None)
    cupyx = types.SimpleNamespace(empty_pinned=np.empty)
    backend = cuda_backend.CudaBackend(fake, kc.make_cuda_kernels(fake, cupyx=_FakeCupyx), cupyx=cupyx)
    monkeypatch.setattr(backends, "cuda", lambda: backend)
    monkeypatch.setattr(backends, "cuda_device_count", lambda: 2)
    monkeypatch.setattr(backends, "cuda_device_name", lambda i: "Fake GPU")
    monkeypatch.setattr(devices, "_PLACES", {})
    primitive._EAGER.clear()
    with ember.disable_jit():
        yield entered, current, backend
    primitive._EAGER.clear()


def test_two_fake_gpus_place_transfer_and_run_where_the_arrays_are(two_fake_gpus):
    entered, current, backend = two_fake_gpus
    gpus = ember.devices("cuda")
    assert [str(d) for d in gpus] == ["cuda:0", "cuda:1"]
    x = ember.device_put(enp.arange(4.0), "cuda:1")
    assert x.device == gpus[1] and x.committed and x._value.gpu == 1
    y = x * 2 + 1
    assert y.device == gpus[1] and y.committed and y._value.gpu == 1 and 1 in entered and current["id"] == 0
    host = np.asarray(y.block_until_ready())
    assert type(host) is np.ndarray and host.tolist() == [1.0, 3.0, 5.0, 7.0]
    big = ember.device_put(enp.ones((1 << 19,)), "cuda:1")  # 2 MiB: the pinned path
    np.testing.assert_array_equal(np.asarray(big), np.ones(1 << 19, np.float32))
    z = ember.device_put(y, "cuda:0")  # a peer copy
    assert z.device == gpus[0] and z._value.gpu == 0
    with pytest.raises(DeviceError, match="committed to different devices"):
        y + z
    with ember.default_device("cuda:1"):
        i = ember.lax.iota(np.int32, 5)  # no operand: made on the default device's GPU
    assert i.device == gpus[1] and i._value.gpu == 1 and np.asarray(i).tolist() == [0, 1, 2, 3, 4]
    f = enp.asarray(_ForeignGpu([1.0, 2.0]))  # another library's GPU array: copied on its GPU
    assert f.device == gpus[1] and not f.committed and f._value.gpu == 1 and np.asarray(f).tolist() == [1.0, 2.0]
    k = ember.random.key(0)
    bits = ember.random.bits(ember.device_put(k, "cuda:1"), (3,))  # threefry, on the (gcc-compiled) CUDA source
    assert bits.device == gpus[1]
    np.testing.assert_array_equal(np.asarray(bits), np.asarray(ember.random.bits(k, (3,))))


def test_arrays_move_between_fake_gpus_without_the_host(two_fake_gpus, monkeypatch):
    _, _, backend = two_fake_gpus
    gpus = ember.devices("cuda")
    f = enp.asarray(_ForeignGpu([1.0, 2.0]))  # uncommitted on GPU 1
    x = ember.device_put(enp.asarray([10.0, 20.0]), "cuda:0")

    def no_host_copy(buffer):
        raise AssertionError("a GPU-to-GPU move went through the host")

    with monkeypatch.context() as m:
        m.setattr(backend, "to_host", no_host_copy)
        y = f + x  # f follows the committed x to GPU 0
        assert y.device == gpus[0] and y._value.gpu == 0
        z = ember.device_put(f, "cuda:0")
        assert z._value.gpu == 0
    assert np.asarray(y).tolist() == [11.0, 22.0]


def _all_entries():
    import op_db

    return op_db.OPS


def _to_gpu(a, device):
    if isinstance(a, np.ndarray):
        return ember.device_put(a, device)
    if isinstance(a, (list, tuple)) and any(isinstance(x, np.ndarray) for x in a):
        return type(a)(_to_gpu(x, device) for x in a)
    return a


def _in_cuda_compiler(err: BaseException) -> bool:
    frames = traceback.extract_tb(err.__traceback__)
    return any(f.filename.endswith(("codegen_cuda.py", "graphs_cuda.py", "fusion_cuda.py")) or "cuda-jit" in f.filename
               for f in frames)  # fmt: skip


@pytest.mark.parametrize("op", _all_entries(), ids=lambda op: op.name)
def test_op_db_entries_run_on_a_fake_gpu(op, two_fake_gpus):
    """Every entry with its operands committed to (fake) GPU 1: results there, equal to the CPU's. This runs
    the CUDA backend's plumbing (placement, movers, the table's wrappers) for every operation; the kernels
    are NumPy, so it says nothing of CuPy's own numerics."""
    from op_db import SIXTY_FOUR_BIT, outputs_of

    gpu = ember.devices("cuda")[1]
    rng = np.random.default_rng(8)
    for dtype in op.dtypes[::4]:
        with ember.config.x64(dtype in SIXTY_FOUR_BIT), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for sample in op.samples(rng, dtype)[:2]:
                try:
                    want = [np.asarray(o) for o in outputs_of(op.op(*sample.args, **sample.kwargs))]
                except ember.errors.EmberError:
                    continue
                args = [_to_gpu(a, gpu) for a in sample.args]
                try:
                    got = outputs_of(op.op(*args, **sample.kwargs))
                except Exception as err:
                    # control flow's sub-programs: fused kernels, CUDA graphs (any other error is a failure)
                    if _in_cuda_compiler(err) and "compile with xp=cupy" in str(err):
                        pytest.skip(f"control flow runs code of the CUDA compiler, which needs CuPy ({err})")
                    raise
                moved = any(isinstance(a, ember.Array) or isinstance(a, (list, tuple)) and a and
                            isinstance(a[0], ember.Array) for a in args)  # fmt: skip
                for g, w in zip(got, want, strict=True):
                    if moved and isinstance(g, ember.Array):
                        assert g.device == gpu and g.committed, f"{op.name} {sample}: result on {g.device}"
                    g = np.asarray(g)
                    assert g.shape == w.shape and g.dtype == w.dtype, f"{op.name} {sample}"
                    if g.dtype.kind in "biu":
                        np.testing.assert_array_equal(g, w, err_msg=f"{op.name} {sample}")
                    else:
                        rtol, atol = op.tolerance(g.dtype)
                        np.testing.assert_allclose(g.astype(np.complex128), w.astype(np.complex128), rtol=rtol,
                                                   atol=atol, equal_nan=True, err_msg=f"{op.name} {sample}")


def test_kernels_run_under_their_operands_device_and_out_of_memory_is_translated():
    cuda_backend = importlib.import_module("ember.backends.cuda_backend")
    entered: list = []
    fake, current = _fake_cupy(entered)
    seen = []

    def add(x, y):
        seen.append(current["id"])
        return x + y

    def big(x):
        raise _FakeOom(5 * 2**30, 2**30)

    backend = cuda_backend.CudaBackend(fake, {"add": add, "broadcast_in_dim": big})
    assert backend.platform == "cuda" and backend.ndarray is _OnGpu
    backend.kernel("add")(_on_gpu([1.0], 0), _on_gpu([2.0], 0))
    assert entered == [] and seen == [0]  # already there: no switch
    backend.kernel("add")(_on_gpu([1.0], 1), _on_gpu([2.0], 1))
    assert entered == [1] and seen == [0, 1] and current["id"] == 0
    with pytest.raises(DeviceMemoryError, match=r"broadcast_in_dim: the GPU ran out of memory allocating 5\.0 GiB "
                                                r"\(1\.0 GiB already.*float32\[2, 2\].*chunk_size="):
        backend.kernel("broadcast_in_dim")(_on_gpu(np.zeros((2, 2), np.float32), 0))


def test_compile_runs_generated_code_under_the_inputs_device():
    codegen_cuda = pytest.importorskip("ember.backends.codegen_cuda", reason="the CUDA compiler is not there yet")
    cuda_backend = importlib.import_module("ember.backends.cuda_backend")
    entered: list = []
    fake, _ = _fake_cupy(entered)
    kernels = {name: kernel for name, kernel in make_kernels(np).items()}
    backend = cuda_backend.CudaBackend(fake, kernels)
    program = ember.make_ir(lambda a, b: enp.matmul(a, b))(enp.ones((2, 3)), enp.ones((3, 2))).program
    compiled = backend.compile(program, {}, "matmul")
    assert "def matmul" in compiled.source
    out = compiled(_on_gpu(np.ones((2, 3), np.float32), 1), _on_gpu(np.ones((3, 2), np.float32), 1))
    np.testing.assert_array_equal(np.asarray(out[0]), np.full((2, 2), 3.0, np.float32))
    assert entered and entered[0] == 1
    del codegen_cuda


def test_out_of_memory_message_names_operation_operands_size_and_fix():
    cuda_backend = importlib.import_module("ember.backends.cuda_backend")

    class Oom(MemoryError):
        _size, _total = 3 * 2**30, 70 * 2**30

    err = cuda_backend.out_of_memory("dot_general", (np.zeros((4, 8), np.float32), np.zeros((8, 2), BF16)), Oom())
    assert isinstance(err, DeviceMemoryError) and isinstance(err, MemoryError)
    message = str(err)
    parts = ("dot_general", "3.0 GiB", "70.0 GiB", "float32[4, 8]", "bfloat16[8, 2]", "chunk_size=", "smaller batch")
    for part in parts:
        assert part in message, (part, message)


# --- on a GPU ----------------------------------------------------------------------------------------


@pytest.fixture
def gpu():
    cupy = _cupy_or_skip()
    backends.cuda_device_count.cache_clear()
    if backends.cuda_device_count() == 0:
        pytest.skip("no CUDA device (CuPy finds none)")
    return cupy


@pytest.mark.parametrize("shape", [(), (3,), (1 << 19, 3)], ids=["0-d", "small", "pinned path"])
def test_transfers_round_trip(gpu, shape):
    x = np.random.default_rng(6).normal(size=shape).astype(np.float32)
    y = ember.device_put(enp.asarray(x), "cuda:0")
    assert y.device == ember.devices("cuda")[0] and y.committed
    assert isinstance(y._value, gpu.ndarray)
    back = np.asarray(y)
    assert type(back) is np.ndarray
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(np.asarray(y * 2), x * 2)


def test_cupy_arrays_come_in_without_the_host_and_out_through_dlpack(gpu):
    c = gpu.arange(6, dtype=gpu.float32).reshape(2, 3)
    x = enp.asarray(c)
    assert x.device.platform == "cuda" and not x.committed
    c[0, 0] = 100  # ember copied it: the array does not change
    assert np.asarray(x)[0, 0] == 0
    back = gpu.from_dlpack(x)
    assert back.device.id == x.device.id
    np.testing.assert_array_equal(gpu.asnumpy(back), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.__dlpack_device__()[0] == 2
    interface = x.__cuda_array_interface__
    assert interface["shape"] == (2, 3) and interface["data"][1] is True  # read-only


def test_torch_reads_gpu_arrays_through_dlpack(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch has no CUDA")
    x = ember.device_put(enp.arange(4.0), "cuda:0")
    t = torch.from_dlpack(x)
    assert t.is_cuda and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    y = enp.asarray(torch.arange(3, device="cuda", dtype=torch.float32))
    assert y.device.platform == "cuda" and np.asarray(y).tolist() == [0.0, 1.0, 2.0]


def test_out_of_memory_raises_device_memory_error(gpu):
    x = ember.device_put(enp.ones((1,), dtype=np.float32), "cuda:0")
    huge = enp.broadcast_to(x, (1 << 42,))  # a view: nothing allocated yet
    with pytest.raises(DeviceMemoryError, match=r"(?s)mul: the GPU ran out of memory allocating 16\.0 TiB.*chunk_size"):
        huge * 2


def test_kernels_run_on_their_operands_gpu(gpu):
    if backends.cuda_device_count() < 2:
        pytest.skip("needs two GPUs")
    x = ember.device_put(enp.arange(5.0), "cuda:1")
    with gpu.cuda.Device(0):
        y = x * 2 + 1
    assert y.device == ember.devices("cuda")[1] and y._value.data.device_id == 1
    np.testing.assert_array_equal(np.asarray(y), np.arange(5.0, dtype=np.float32) * 2 + 1)
    z = ember.device_put(y, "cuda:0")
    assert z._value.data.device_id == 0
