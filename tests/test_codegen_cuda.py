"""The CUDA compiler (ember/backends/codegen_cuda.py, fusion_cuda.py, c_source.py).

Without a GPU: the generated source (each chain ONE kernel), and the kernels' C compiled for the host by
gcc and run through the generated Python on NumPy buffers (a stand-in for CuPy that calls the compiled
bodies), compared with `ember.jit` on the CPU — bit for bit for integer and boolean chains. With nvcc:
the same C compiled for sm_90. With CuPy and a GPU: jit on cuda against jit on cpu, and graph replay."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.backends import Backend, c_source, cpu
from ember.backends.codegen_cuda import compile_program, generate
from ember.backends.graphs_cuda import GRAPH_MIN_LAUNCHES, Graphed, graph_worthy
from ember.transforms._compile import active_backend, compiled_for, raw_kernel

RNG = np.random.default_rng(17)


# --- programs -------------------------------------------------------------------------------------------------


def chain20(x, b):
    """The issue's 20-operation chain, broadcasting a row, ended by a sum."""
    y = x * 1.5 + b
    y = enp.tanh(y) - 0.25 * y
    y = enp.exp(-y * y) + enp.abs(y)
    y = enp.sqrt(y + 1.0) * enp.sin(b) - enp.cos(y)
    y = enp.maximum(y, -0.5) / (1.0 + enp.square(y))
    y = enp.log1p(enp.abs(y)) + y
    return enp.sum(y, axis=1)


def masked(x, b):
    """Comparisons, where, converts (float -> int saturating, bool -> float), ended by a max."""
    m = (x > b) & ~(x < -1.0)
    y = enp.where(m, x * 100.0, -x).astype(enp.int32).astype(enp.float32)
    return enp.max(y + m.astype(enp.float32), axis=0)


def integers(i, j):
    """Integer division and remainder (C signs), shifts, bitwise ops: bit for bit."""
    q = lax.div(i, j) + lax.rem(i, j) * 3
    s = lax.shift_left(i, j & 7) ^ lax.shift_right_arithmetic(i, j & 31) | lax.shift_right_logical(i, 3)
    return enp.where(q > s, q, s) - (i // 5) + lax.population_count(i) + lax.clz(j)


def small_ints(u, v):
    """uint8 and int8 wrap-around, max/min, select with an integer case index."""
    w = (u * v + 200).astype(enp.int8)
    return lax.select_n((u % 3).astype(enp.int32), w, -w, enp.maximum(w, 7)), enp.sum(u.astype(enp.uint32) * 3)


def nan_extrema(x, y):
    """NaN propagation of max/min and of a max reduction; sign, round, clamp, logistic in float64."""
    z = enp.minimum(enp.maximum(x, y), 2.0) + enp.sign(x) * enp.round(y * 3.0)
    return enp.max(z, axis=1), lax.clamp(-1.0, lax.logistic(x) * 4.0 - 2.0, 1.0) + enp.isfinite(x * y)


def saturating(x):
    """float -> int32 / uint8 / int16: toward zero, saturating, NaN to 0."""
    return x.astype(enp.int32), x.astype(enp.uint8), (x * 1e-5).astype(enp.int16), x != x


def complex_chain(z, w):
    """complex64: arithmetic, exp, abs to real, ended by a sum."""
    return enp.sum(enp.abs(enp.exp(z * 0.1) * w + z)), enp.real(z * w) - enp.imag(enp.conj(z))


def two_chains(x, w):
    """Two chains around a matrix product: two kernels and one dot_general."""
    h = enp.tanh(x * 2.0 + 1.0)
    return enp.sum(enp.exp(-(h @ w)) * 0.5, axis=1)


def half_chain(x, h):
    """float16 computed in float, rounded after every equation; a float16 sum accumulates in float."""
    y = (h * 3.0 + x.astype(enp.float16)) / 7.0
    return enp.sum(enp.tanh(y), axis=0), (y > 0.5).astype(enp.float16) - lax.logistic(y)


def half_arithmetic(h, g):
    """float16 arithmetic rounded after each operation, as NumPy's: bit for bit."""
    y = (h * 3.0 + g) / 7.0 - enp.sqrt(enp.abs(h))
    z = lax.rsqrt(enp.abs(y) + 0.5) + lax.integer_pow(g, -3) * 1e-3 + lax.integer_pow(y, 5)
    return y * g + 1.0, enp.maximum(y, g).astype(enp.float32) * 0.5, z


def reductions_then_chains(x):
    """A chain after a reduction (a mean's division, a norm's sqrt) is the reduction kernel's last step."""
    return enp.mean(x, axis=1), enp.sqrt(enp.sum(x * x, axis=0)) + 1.0, enp.max(x) * 2.0 - enp.min(x)


def _floats(*shape, dtype=np.float32, nans=False):
    x = (RNG.standard_normal(shape) * 2).astype(dtype)
    if nans:
        x.ravel()[RNG.choice(x.size, max(1, x.size // 7), replace=False)] = np.nan
    return x


def _ints(*shape, dtype=np.int32, lo=-(2**31), hi=2**31 - 1):
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def _saturating_input():
    x = _floats(50) * 1e9
    x[:8] = [np.nan, np.inf, -np.inf, 2.0**31, -(2.0**31), 255.9, -0.9, 3e38]
    return (x,)


CASES = {
    "chain20": (chain20, lambda: (_floats(64, 33), _floats(33)), 1, False),
    "masked": (masked, lambda: (_floats(40, 7), _floats(7)), 1, False),
    "integers": (integers, lambda: (_ints(200), _ints(200, lo=-40, hi=40)), 1, True),
    "small_ints": (small_ints, lambda: (_ints(300, dtype=np.uint8, lo=0, hi=255), _ints(300, dtype=np.uint8, lo=0, hi=255)), 2, True),
    "nan_extrema": (nan_extrema, lambda: (_floats(9, 30, dtype=np.float64, nans=True), _floats(30, dtype=np.float64, nans=True)), 2, False),
    "saturating": (saturating, _saturating_input, 1, True),
    "complex_chain": (complex_chain, lambda: ((_floats(20) + 1j * _floats(20)).astype(np.complex64),
                                              (_floats(20) + 1j * _floats(20)).astype(np.complex64)), 2, False),
    "two_chains": (two_chains, lambda: (_floats(16, 8), _floats(8, 5)), 2, False),
    "reductions_then_chains": (reductions_then_chains, lambda: (_floats(12, 7),), 3, False),
    "half_chain": (half_chain, lambda: (_floats(8, 6), _floats(8, 6).astype(np.float16)), 2, False),
    "half_arithmetic": (half_arithmetic, lambda: (_floats(9, 5, dtype=np.float16), _floats(5, dtype=np.float16)), 1, True),
}  # fmt: skip


def _lowered(name):
    fn, make_args, _, _ = CASES[name]
    args = make_args()
    lowered = ember.jit(fn).lower(*args)
    return fn, args, lowered.ir


# --- the generated source (no CuPy, no compiler) ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_chain_is_one_kernel(name):
    _, _, ir = _lowered(name)
    gen = generate(ir.program, raw_kernel, name)
    assert len(gen.kernels) == CASES[name][2], gen.source
    for spec in gen.kernels:
        assert f"{spec.name}(" in gen.source and spec.body in gen.source  # the C is part of the source


def test_chain20_is_one_reduction_kernel_and_no_other_call():
    _, _, ir = _lowered("chain20")
    assert len([e for e in ir.program.eqns]) >= 20
    gen = generate(ir.program, raw_kernel, "chain20")
    (spec,) = gen.kernels
    assert spec.kind == "reduction" and spec.axes == (1,) and spec.summary.endswith("reduce_sum")
    body = gen.source.split("\n\n")[-1]
    assert "ops." not in body and body.count("_k0(") == 1


def test_unfused_equations_call_the_backend_kernels():
    _, _, ir = _lowered("two_chains")
    gen = generate(ir.program, raw_kernel, "two_chains")
    body = gen.source.split("\n\n")[-1]
    assert body.count("ops.dot_general(") == 1 and [k.kind for k in gen.kernels] == ["elementwise", "reduction"]


def test_a_value_a_reduction_and_a_chain_read_is_recomputed_by_the_reduction():
    def f(x):
        e = enp.exp(x)
        return enp.sum(e, axis=0), e * 2.0

    gen = generate(ember.jit(f).lower(_floats(6, 5)).ir.program, raw_kernel)
    assert sorted(k.summary for k in gen.kernels) == ["exp mul", "exp reduce_sum"] and "ops." not in gen.source


def test_smaller_operands_are_recomputed_inside_the_larger_kernel():
    # sin(b) has b's shape (5,), read only by the (4, 5) chain: it runs inside that kernel.
    program = ember.make_ir(lambda x, b: enp.tanh(x + enp.sin(b) * 2.0))(_floats(4, 5), _floats(5)).program
    gen = generate(program, raw_kernel)
    assert len(gen.kernels) == 1 and "sinf(" in gen.kernels[0].body


def test_literals_are_exact():
    assert c_source.literal(np.float32(0.1), np.float32) == "((float)0.10000000149011612)"
    assert c_source.literal(np.uint64(2**64 - 1), np.uint64) == "((unsigned long long)18446744073709551615ULL)"
    assert c_source.literal(np.nan, np.float32) == "((float)ember_nan())"
    assert c_source.literal(-(2**63), np.int64).startswith("((long long)(-9223372036854775807LL")


def test_compile_without_cupy_names_the_need():
    _, args, ir = _lowered("chain20")
    compiled = compile_program(ir.program, raw_kernel, "chain20", xp=np)
    assert "def chain20(" in compiled.source
    with pytest.raises(RuntimeError, match="xp=cupy"):
        compiled(*args)


# --- the kernels' C on the host (gcc) ---------------------------------------------------------------------------

@functools.cache
def _host_float16() -> bool:
    """Whether g++ has _Float16 (then float16 kernels run on the host as well)."""
    probe = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-x", "c++", "-"], input="_Float16 h = 1;\n",
                           capture_output=True, text=True)  # fmt: skip
    return probe.returncode == 0


_CTYPES = {**c_source.CTYPE, "float16": "_Float16"}


def _params(text):
    return [(n, np.dtype(d)) for d, n in (p.split() for p in text.split(", "))] if text else []


def _host_kernel(workdir, kind, name, inputs, outputs, body, reduce_expr=None, identity=None, reduce_type=None, post=False):
    """A CuPy-like kernel object running a generated body compiled by g++ (elementwise: k(*ins, *outs);
    reduction: k(*ins, axis=...))."""
    if "float16" in [d.name for _, d in (*inputs, *outputs)] and not _host_float16():
        pytest.skip("this g++ has no _Float16: float16 kernels are not run on the host")
    ins = [f"(({_CTYPES[d.name]}*)ins[{k}])[i]" for k, (_, d) in enumerate(inputs)]
    if kind == "elementwise":
        outs = [(f"_{n}", c_source.CTYPE[d.name], _CTYPES[d.name], k) for k, (n, d) in enumerate(outputs)]
        loop = [f"  {ct} {t};" for t, ct, _, _ in outs]
        loop += [f"  {name}_body({', '.join(ins + [t for t, *_ in outs])});"]
        loop += [f"  (({st}*)outs[{k}])[i] = {t};" for t, _, st, k in outs]
        entry = ['extern "C" void run(long n, void** ins, void** outs) {', "for (long i = 0; i < n; ++i) {", *loop, "}}"]
    else:
        acc = reduce_type.replace("thrust::complex", "std::complex")
        out_t = _CTYPES[outputs[0][1].name]
        entry = ['extern "C" void run(long m, long r, void** ins, void** outs) {',
                 f"#define REDUCE(a, b) ({reduce_expr})",
                 "for (long j = 0; j < m; ++j) {", f"  {acc} a = ({acc})({identity});",
                 "  for (long k = 0; k < r; ++k) { long i = j * r + k;",
                 f"    {acc} b = {name}_map({', '.join(ins)}); a = REDUCE(a, b); }}",
                 f"  (({out_t}*)outs[0])[j] = ({out_t})({name + '_post(a)' if post else 'a'});", "}}"]  # fmt: skip
    source = "\n".join([c_source.HOST_HEADER, c_source.PRELUDE, body, *entry]) + "\n"
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    cpp, lib = workdir / f"k{digest}.cpp", workdir / f"k{digest}.so"
    if not lib.exists():
        cpp.write_text(source)
        done = subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC", "-o", str(lib), str(cpp)],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr + source
    run = ctypes.CDLL(str(lib)).run
    in_dtypes = [d for _, d in inputs]
    out_dtypes = [d for _, d in outputs]

    def pointers(arrays):
        return (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])

    def call(*args, axis=None):
        if kind == "elementwise":
            outs = args[len(in_dtypes):]
            shape = outs[0].shape
            ins = [np.ascontiguousarray(np.broadcast_to(np.asarray(a, d), shape)) for a, d in zip(args, in_dtypes)]
            tmp = [np.empty(shape, d) for d in out_dtypes]
            run(ctypes.c_long(int(np.prod(shape))), pointers(ins), pointers(tmp))
            for o, t in zip(outs, tmp):
                o[...] = t
            return outs[0] if len(outs) == 1 else outs
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        axes = tuple(axis)
        keep = [d for d in range(len(shape)) if d not in axes]
        ins = [np.ascontiguousarray(np.broadcast_to(np.asarray(a, d), shape).transpose(*keep, *axes)) for a, d in zip(args, in_dtypes)]
        m = int(np.prod([shape[d] for d in keep]))
        r = int(np.prod([shape[d] for d in axes]))
        out = np.empty([shape[d] for d in keep], out_dtypes[0])
        run(ctypes.c_long(m), ctypes.c_long(r), pointers(ins), pointers([out]))
        return out

    return call


class _HostXp:
    """NumPy, with CuPy's kernel classes making kernels of the generated C compiled for the host."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.made = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def _body(self, preamble):
        prefix = c_source.CUDA_HEADER + c_source.PRELUDE
        assert preamble.startswith(prefix)
        return preamble[len(prefix):]

    def ElementwiseKernel(self, in_params, out_params, operation, name, preamble):  # noqa: N802 - CuPy's name
        self.made += 1
        return _host_kernel(self.workdir, "elementwise", name, _params(in_params), _params(out_params), self._body(preamble))

    def ReductionKernel(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name,  # noqa: N802
                        reduce_type, preamble):  # fmt: skip
        self.made += 1
        assert map_expr.startswith(f"{name}_map(") and post_map_expr in ("out0 = a", f"out0 = {name}_post(a)")
        return _host_kernel(self.workdir, "reduction", name, _params(in_params), _params(out_params), self._body(preamble),
                            reduce_expr, identity, reduce_type, post_map_expr != "out0 = a")  # fmt: skip


def _same(got, want, exact):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        tol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[want.dtype.itemsize] if want.dtype.kind == "f" else 1e-5 if want.dtype == np.complex64 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernels' C for the host")
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_compiled_by_gcc_match_jit_on_cpu(name, tmp_path_factory):
    fn, args, ir = _lowered(name)
    exact = CASES[name][3]
    compiled = compile_program(ir.program, raw_kernel, name, xp=_HostXp(tmp_path_factory.mktemp("kernels")))
    got = compiled(*[c._value if hasattr(c, "_value") else c for c in ir.consts], *args)
    want = ember.tree.leaves(ember.jit(fn)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, np.asarray(w), exact)


def tangled(c):
    """A mean that a norm's chain also reads: the norm's reduction recomputes the division, so the mean's
    own division cannot become its reduction's post-map step (its result is needed as such)."""
    m = enp.mean(c, axis=0)
    n = enp.sqrt(enp.sum(m * m)) + 1.0
    return m, n, enp.minimum(enp.sin(n), m)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernels' C for the host")
def test_recomputed_and_post_map_chains_together(tmp_path):
    x = _floats(4, 1)
    ir = ember.jit(tangled).lower(x).ir
    compiled = compile_program(ir.program, raw_kernel, "tangled", xp=_HostXp(tmp_path))
    for g, w in zip(compiled(*ir.consts, x), ember.jit(tangled)(x)):
        _same(g, np.asarray(w), exact=False)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernels' C for the host")
def test_results_go_into_donated_buffers_read_for_the_last_time(tmp_path):
    def update(p, g, m):  # an optimizer step: new p and m in the buffers of the old ones
        m = 0.9 * m + g
        return p - 0.1 * m, m, enp.sum(g)

    args = [_floats(6, 4), _floats(6, 4), _floats(6, 4)]
    program = ember.jit(update).lower(*args).ir.program
    compiled = compile_program(program, raw_kernel, "update", donated=(0, 2), xp=_HostXp(tmp_path))
    mine = [a.copy() for a in args]
    got = compiled(*mine)
    want = ember.jit(update)(*args)
    for g, w in zip(got, want):
        _same(g, np.asarray(w), exact=False)
    assert got[0] is mine[0] and got[1] is mine[2]  # donated p and m hold the new p and m
    # not donated, or read by an unfused kernel (here the sum of g): new buffers
    plain = compile_program(program, raw_kernel, "update", donated=(1,), xp=_HostXp(tmp_path))
    assert not any(o is a for o in plain(*args) for a in args)
    strided = [a.copy() for a in args]
    strided[0] = np.asfortranarray(strided[0])
    assert compiled(*strided)[0] is not strided[0]  # only a C-contiguous buffer is written in place


# --- control flow: sub-programs compiled by the CUDA compiler ----------------------------------------------------


class _HostCudaBackend(Backend):
    """A stand-in for the CUDA backend on the host: the CPU's kernels, this compiler, `_HostXp` kernels."""

    def __init__(self, workdir):
        super().__init__("hostcuda", _HostXp(workdir), cpu.kernels)
        self.compiled: list[str] = []

    def compile(self, program, raw_impls, name, donated=()):
        self.compiled.append(name)
        return compile_program(program, lambda prim: raw_impls.get(prim) or raw_kernel(prim), name, donated, xp=self.xp)


def looping(x, n):
    def body(c, xi):
        c = enp.tanh(c * 0.5 + xi)
        return c, c * 2.0 - 1.0

    c, ys = lax.scan(body, x[0], x)
    y = lax.cond(enp.sum(c) > n, lambda a: a * 2.0, lambda a: a - 1.0, c)
    k, z = lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1.0, enp.exp(s[1] * -0.5) + s[1]), (0.0, y))
    return enp.sum(ys, axis=0) + z * k


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the kernels' C for the host")
def test_control_flow_runs_sub_programs_compiled_by_the_running_backend(tmp_path):
    args = (_floats(6, 5), np.float32(3.0))
    backend = _HostCudaBackend(tmp_path)
    entry = ember.jit(looping).lower(*args)._entry
    compiled = compiled_for(entry.sub, backend)
    got = compiled.fn(*[c._value for c in entry.consts], *args)
    np.testing.assert_allclose(got[0], np.asarray(ember.jit(looping)(*args)), rtol=1e-5, atol=1e-6)
    # the scan body, both branches (one taken) and the loop's condition and body: by this compiler
    assert len(backend.compiled) >= 4, backend.compiled
    assert backend.xp.made >= 4
    assert active_backend() is cpu  # the scope ends with the call


# --- CUDA graphs: capture, replay, fallback (a stand-in for CuPy's stream capture) -------------------------------


class _FakeArray(np.ndarray):
    @property
    def data(self):  # CuPy's MemoryPointer, as far as its device and a device-to-device copy go
        def copy_from_device_async(src, size, stream):
            assert size == self.nbytes
            self[...] = src.array

        return SimpleNamespace(array=self, device_id=0, copy_from_device_async=copy_from_device_async)


class _FakeCupy:
    """Just enough of CuPy for graphs_cuda: "capturing" records the function's run on the capture's
    buffers; a launch runs it again on them, writing the captured outputs in place, as a graph does."""

    ndarray = _FakeArray

    def __init__(self):
        self.launches = 0
        self.capturing = None
        fake = self

        class Stream:
            def __init__(self, non_blocking=False):
                self.graph = None

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def wait_event(self, event):
                pass

            def record(self):
                return None

            def begin_capture(self):
                fake.capturing = []

            def end_capture(self):
                calls, fake.capturing = fake.capturing, None
                return SimpleNamespace(launch=lambda stream=None: fake._launch(calls))

        @contextlib.contextmanager
        def nothing(*a, **k):
            yield

        self.cuda = SimpleNamespace(Stream=Stream, MemoryPool=lambda: SimpleNamespace(malloc=None), using_allocator=nothing,
                                    Device=lambda i=0: contextlib.nullcontext(SimpleNamespace(id=0)),
                                    get_current_stream=lambda: Stream())  # fmt: skip

    def empty(self, shape, dtype):
        return np.empty(shape, dtype).view(_FakeArray)

    def _launch(self, calls):
        self.launches += 1
        for fn, ins, outs in calls:
            for o, r in zip(outs, fn(*ins)):
                o[...] = r


def test_graph_replay_equals_plain_calls_and_never_overwrites_results():
    xp = _FakeCupy()

    def program(a, b):
        outs = [np.tanh(a * 2.0 + b).view(_FakeArray), (a - b).view(_FakeArray)]
        if xp.capturing is not None:
            xp.capturing.append((program, [a, b], outs))
        return outs

    graphed = Graphed(program, xp)
    calls = [(_floats(4, 3).view(_FakeArray), _floats(3).view(_FakeArray)) for _ in range(4)]
    results = [graphed(*args) for args in calls]
    # a plain call (kernels compile), a capture (which computes nothing on a GPU) and its launch, 2 replays
    assert graphed.failed is None and len(graphed.captures) == 1 and xp.launches == 3
    for (a, b), got in zip(calls, results):  # every result is its own call's, after later replays too
        for g, w in zip(got, [np.tanh(a * 2.0 + b), a - b]):
            np.testing.assert_array_equal(g, w)


def test_a_failed_capture_falls_back_to_plain_calls():
    xp = _FakeCupy()

    def program(a):
        if xp.capturing is not None:
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: a host sync")
        return [a + 1.0]

    graphed = Graphed(program, xp)
    x = _floats(5).view(_FakeArray)
    for _ in range(3):
        np.testing.assert_array_equal(graphed(x)[0], x + 1.0)
    assert "host sync" in graphed.failed and not graphed.captures


def test_graphs_only_for_programs_without_host_code(monkeypatch):
    program = ember.make_ir(looping)(_floats(6, 5), np.float32(3.0)).program
    assert not graph_worthy(program, launches=100)  # scan, cond, while: host code between kernels
    chain = ember.make_ir(two_chains)(_floats(4, 3), _floats(3, 2)).program
    assert graph_worthy(chain, launches=GRAPH_MIN_LAUNCHES) and not graph_worthy(chain, launches=GRAPH_MIN_LAUNCHES - 1)
    monkeypatch.setenv("EMBER_CUDA_GRAPHS", "0")
    assert not graph_worthy(chain, launches=100)


# --- the kernels' C for the GPU (nvcc) --------------------------------------------------------------------------


_STORAGE = {**c_source.CTYPE, "float16": "__half", "complex64": "thrust::complex<float>", "complex128": "thrust::complex<double>"}


def _cuda_wrapper(spec, space):
    """An extern "C" __global__ function calling `spec`'s device function once per element."""
    ins = [f"const {_STORAGE[np.dtype(d).name]}* {n}" for n, d in spec.inputs]
    outs = [f"{_STORAGE[np.dtype(d).name]}* {n}" for n, d in spec.outputs]
    head = f'extern "C" __global__ void check_{space}_{spec.cname}({", ".join([*ins, *outs, "long n"])}) {{'
    lines = [head, "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;", "  if (i >= n) return;"]
    args = [f"{n}[i]" for n, _ in spec.inputs]
    if spec.kind == "elementwise":
        temps = [f"_{n}" for n, _ in spec.outputs]
        lines += [f"  {c_source.CTYPE[np.dtype(d).name]} _{n};" for n, d in spec.outputs]
        lines += [f"  {space}::{spec.cname}_body({', '.join(args + temps)});"]
        lines += [f"  {n}[i] = _{n};" for n, _ in spec.outputs]
    else:
        acc = spec.reduce_type
        result = f"{space}::{spec.cname}_post(a)" if "_post" in spec.post_map else "a"
        lines += [f"  {acc} a = ({acc})({spec.identity});", f"  {acc} b = {space}::{spec.cname}_map({', '.join(args)});",
                  f"  a = {spec.reduce_expr};", f"  out0[i] = {result};"]  # fmt: skip
    return "\n".join([*lines, "}"])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CUDA toolkit) to compile the kernels for sm_90")
def test_kernels_compile_with_nvcc(tmp_path):
    cases = CASES
    parts = ["#include <cuda_fp16.h>", "#include <thrust/complex.h>", c_source.CUDA_HEADER, c_source.PRELUDE]
    count = 0
    for name, (fn, make_args, _, _) in sorted(cases.items()):
        gen = generate(ember.jit(fn).lower(*make_args()).ir.program, raw_kernel, name)
        parts += [f"namespace {name} {{", *(spec.body for spec in gen.kernels), "}"]
        parts += [_cuda_wrapper(spec, name) for spec in gen.kernels]
        count += len(gen.kernels)
    source = tmp_path / "kernels.cu"
    source.write_text("\n".join(parts) + "\n")
    done = subprocess.run(["nvcc", "--ptx", "-arch=sm_90", "-std=c++17", "-o", str(tmp_path / "kernels.ptx"), str(source)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    ptx = (tmp_path / "kernels.ptx").read_text()
    assert ptx.count(".entry check_") == count
    # the program's float32 adds and multiplies are the explicitly rounded instructions, which ptxas
    # never contracts into an fma (fma.rn there comes from the math library's tanhf, expf, ...)
    chain = ptx.split(".entry check_chain20")[1].split(".entry")[0]
    assert "mul.rn.f32" in chain and "add.rn.f32" in chain


# --- on a GPU ------------------------------------------------------------------------------------------------


@pytest.fixture
def gpu():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed: no CUDA backend to compile for")
    if ember.backends.cuda_device_count() == 0:
        pytest.skip("no CUDA device (CuPy finds none)")
    return cupy


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_on_cuda_equals_jit_on_cpu(gpu, name):
    fn, make_args, _, exact = CASES[name]
    args = make_args()
    want = ember.tree.leaves(ember.jit(fn)(*args))
    lowered = ember.jit(fn).lower(*[ember.device_put(a, "cuda:0") for a in args])
    assert "ElementwiseKernel" in lowered.source or "ReductionKernel" in lowered.source
    got = ember.tree.leaves(ember.jit(fn)(*[ember.device_put(a, "cuda:0") for a in args]))
    for g, w in zip(got, want):
        assert g.device == ember.devices("cuda")[0]
        g, w = np.asarray(g), np.asarray(w)
        if exact and w.dtype.kind in "biu":
            _same(g, w, exact=True)
        else:  # CUDA's transcendental functions and reduction orders differ from NumPy's in the last bits
            assert g.dtype == w.dtype
            tol = 2e-3 if w.dtype == np.float16 else 2e-5
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)


def test_control_flow_on_cuda_equals_cpu(gpu):
    args = (_floats(6, 5), np.float32(3.0))
    want = np.asarray(ember.jit(looping)(*args))
    got = ember.jit(looping)(*[ember.device_put(a, "cuda:0") for a in args])
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=1e-5)


def test_graph_replay_equals_plain_execution_on_cuda(gpu):
    program = ember.jit(chain20).lower(_floats(64, 33), _floats(33)).ir.program
    kernel_for = ember.backends.cuda().kernel
    plain = compile_program(program, lambda prim: kernel_for(prim.name), "plain", xp=gpu)
    graphed = Graphed(plain.fn, gpu)
    for _ in range(4):
        x, b = gpu.asarray(_floats(64, 33)), gpu.asarray(_floats(33))
        g, p = graphed(x, b), plain(x, b)
        gpu.testing.assert_array_equal(g[0], p[0])
    assert graphed.failed is None and graphed.captures
