"""Collectives across processes (ember.distributed, MPI) and the data-parallel helper ember.shard_map.

The multi-process checks run tests/distributed/worker.py under ``mpirun -n N`` (N = 1, 2, 4; one launch
each, shared by the tests below and by pytest-xdist's workers), which saves what every rank computed;
the references are computed here in one process with NumPy (the operands are rebuilt from
tests/distributed/inputs.py) and, for the training, with ember on the whole batch. They skip, saying
why, without mpi4py or mpirun.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax, optim

sys.path.insert(0, str(Path(__file__).resolve().parent / "distributed"))
import inputs  # noqa: E402
from mpi_support import mpi_env, needs_mpi

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "distributed" / "worker.py"
SIZES = (1, 2, 4)
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex  # one launch per N for all xdist workers




def _launch(n: int, out: Path) -> None:
    env = mpi_env(EMBER_COLLECTIVE_TIMEOUT="30", OMP_NUM_THREADS="1")
    command = ["mpirun", "--oversubscribe", "-n", str(n), sys.executable, str(WORKER), str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")


@pytest.fixture(scope="session")
def launched(tmp_path_factory):
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every xdist worker of this run
    cache: dict[int, tuple[list, list]] = {}

    def get(n: int) -> tuple[list[dict], list[dict]]:
        if n not in cache:
            out = shared / f"ember_distributed_{_RUN}_n{n}"
            with open(shared / f"ember_distributed_{_RUN}_n{n}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not (out / "done").exists():
                    out.mkdir(exist_ok=True)
                    _launch(n, out)
                    (out / "done").write_text("")
            arrays = [dict(inputs.loaded(k, v) for k, v in np.load(out / f"rank{r}.npz").items()) for r in range(n)]
            notes = [json.loads((out / f"rank{r}.json").read_text()) for r in range(n)]
            for r, note in enumerate(notes):
                assert "crash" not in note, f"rank {r} of {n} failed:\n{note['crash']}"
            cache[n] = arrays, notes
        return cache[n]

    return get


# --- NumPy references ----------------------------------------------------------------------------------


def _operands(n: int, dtype: str, shape: tuple) -> list[np.ndarray]:
    return [inputs.value(r, dtype, shape) for r in range(n)]


def _sum(xs: list[np.ndarray], dtype: str) -> np.ndarray:
    # Exact: the operands are small multiples of 1/4 (floats) or wrap as integers do in C.
    stacked = np.stack(xs)
    if dtype in ("float16", "bfloat16"):
        return stacked.astype(np.float64).sum(0).astype(inputs.np_dtype(dtype))
    return stacked.sum(0, dtype=stacked.dtype)


def _mean(xs: list[np.ndarray], dtype: str) -> np.ndarray:
    total, n = _sum(xs, dtype), len(xs)
    if total.dtype.kind == "i":  # truncated toward zero, as lax.div
        wide = total.astype(np.int64)
        return (np.sign(wide) * (np.abs(wide) // n)).astype(total.dtype)
    if total.dtype.kind == "u":
        return total // n
    return (total / np.asarray(n, total.dtype)).astype(total.dtype)


def _expected(n: int, rank: int, dtype: str, shape: tuple) -> dict[str, np.ndarray]:
    xs = _operands(n, dtype, shape)
    key = inputs.key(dtype, shape)
    want: dict[str, np.ndarray] = {}
    if dtype != "bool":
        want[f"psum/{key}"] = _sum(xs, dtype)
        want[f"pmean/{key}"] = _mean(xs, dtype)
    if not dtype.startswith("complex"):
        want[f"pmax/{key}"] = np.max(np.stack(xs), axis=0)
        want[f"pmin/{key}"] = np.min(np.stack(xs), axis=0)
    for axis in range(len(shape) + 1):
        want[f"all_gather/{key}/{axis}"] = np.stack(xs, axis=axis)
    if shape:
        want[f"all_gather_tiled/{key}"] = np.concatenate(xs, axis=len(shape) - 1)
        if dtype != "bool":
            block = shape[0] // n
            want[f"psum_scatter/{key}"] = _sum(xs, dtype)[rank * block : (rank + 1) * block]
    for name, perm in inputs.perms(n).items():
        sources = [src for src, dst in perm if dst == rank]
        want[f"ppermute/{name}/{key}"] = xs[sources[0]] if sources else np.zeros_like(xs[0])
    if len(shape) == 2:
        block = shape[0] // n
        want[f"all_to_all_tiled/{key}"] = np.concatenate([x[rank * block : (rank + 1) * block] for x in xs], axis=1)
    return want


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=what)


# --- the collectives' values -----------------------------------------------------------------------------


@needs_mpi
@pytest.mark.parametrize("n", SIZES)
def test_every_collective_on_every_rank_equals_numpy(launched, n):
    arrays, notes = launched(n)
    checked = 0
    for rank in range(n):
        got = arrays[rank]
        for dtype in inputs.DTYPES:
            for shape in inputs.shapes(n):
                for name, want in _expected(n, rank, dtype, shape).items():
                    _same(got[name], want, f"{name} on rank {rank} of {n}")
                    checked += 1
        x = _operands(n, "float32", (3, n, 2))
        _same(got["psum_scatter_untiled"], _sum(x, "float32")[:, rank, :], f"untiled psum_scatter, rank {rank}")
        for c in range(3):
            _same(got[f"all_to_all_untiled/{c}"], np.stack([xj[:, rank, :] for xj in x], axis=c), f"all_to_all c={c}")
        nan = [inputs.value(r, "float32", (4,)) for r in range(n)]
        for r, v in enumerate(nan):
            v[1] = np.nan if r == n - 1 else 0.0
        _same(got["pmax_nan"], np.max(np.stack(nan), 0), "pmax with a NaN on the last rank")
        assert got["axis_index"].dtype == np.int32 and int(got["axis_index"]) == rank
        assert int(got["psum_python"]) == n
        assert notes[rank]["index_count"] == [rank, n]
    assert checked > 300 * n


# --- transforms over process-level collectives ----------------------------------------------------------


@needs_mpi
@pytest.mark.parametrize("n", SIZES)
def test_grad_jvp_jit_and_vmap_of_process_collectives(launched, n):
    arrays, _ = launched(n)
    xs = _operands(n, "float32", (3,))
    ws = _operands(n, "float32", (n * 3,))
    stacked = np.stack(xs)
    hits = stacked == stacked.max(0)
    for rank, got in enumerate(arrays):
        # The gradient of the sum over the ranks of each rank's scalar, with respect to this rank's x.
        np.testing.assert_allclose(got["grad_psum"], sum(w[:3] for w in ws), rtol=1e-6)
        np.testing.assert_allclose(got["grad_all_gather"], sum(w[3 * rank : 3 * rank + 3] for w in ws), rtol=1e-6)
        np.testing.assert_allclose(got["grad_ppermute"], ws[(rank + 1) % n][:3], rtol=1e-6)
        # pmax's output is held by all n ranks; its derivative is shared among the ranks attaining the max
        np.testing.assert_allclose(got["grad_pmax"], n * hits[rank] / hits.sum(0), rtol=1e-6)
        np.testing.assert_allclose(got["grad_psum_scatter"], np.concatenate([wj[:2] for wj in ws]), rtol=1e-6)
        mine = np.stack([wi[3 * rank : 3 * rank + 3] for wi in ws])
        np.testing.assert_allclose(got["grad_all_to_all"], mine, rtol=1e-6)
        np.testing.assert_allclose(got["jvp_psum"], (2 * stacked).sum(0), rtol=1e-6)
        want = (np.sin(stacked) * 2).sum(0) + stacked.sum(0)
        np.testing.assert_allclose(got["eager"], want, rtol=1e-6)
        np.testing.assert_array_equal(got["jit"], got["eager"])
        np.testing.assert_allclose(got["jit_grad"], got["eager_grad"], rtol=1e-6)
        np.testing.assert_allclose(got["eager_grad"], n * (2 * np.cos(xs[rank]) + 1), rtol=1e-6)
        batches = np.stack(_operands(n, "float32", (5, 3)))
        np.testing.assert_allclose(got["vmap_psum"], batches.sum(0), rtol=1e-6)
        np.testing.assert_array_equal(got["vmap_all_gather"], np.stack(list(batches), axis=1))
        np.testing.assert_array_equal(got["vmap_ppermute"], batches[(rank - 1) % n])
        np.testing.assert_array_equal(got["jit_ppermute"], batches[(rank - 1) % n])
        np.testing.assert_allclose(got["vmap_named"], np.broadcast_to(batches.sum((0, 1)), (5, 3)), rtol=1e-6)


# --- errors ---------------------------------------------------------------------------------------------


@needs_mpi
@pytest.mark.parametrize("n", SIZES)
def test_errors_name_the_ranks_and_never_hang(launched, n):
    _, notes = launched(n)
    for rank, note in enumerate(notes):
        assert note["unbound"]["type"] == "UnboundAxisNameError"
        assert "'nowhere'" in note["unbound"]["message"] and "'processes'" in note["unbound"]["message"]
        assert note["twice"]["type"] == "DistributedError"
        assert "already initialized" in note["twice"]["message"] and "shutdown()" in note["twice"]["message"]
        if n == 1:  # (every batch splits into one shard)
            continue
        assert note["not_divisible"]["type"] == "InvalidArgumentError"
        message = note["not_divisible"]["message"]
        assert f"argument 0 has size {2 * n + 1}" in message and f"{n} equal shards" in message
        shapes = note["shape_mismatch"]
        assert shapes["type"] == "DistributedError", shapes
        for r in range(n):  # every rank's shape is named, on every rank
            assert f"rank {r}: collective #" in shapes["message"] and f"psum(float32[{r + 1}])" in shapes["message"]
        dtypes = note["dtype_mismatch"]
        assert dtypes["type"] == "DistributedError" and "psum(int32[2])" in dtypes["message"]
        assert "psum(float32[2])" in dtypes["message"]
        assert note["after_mismatch"] == n  # a mismatch is an error on every rank, and they stay in step
        if rank == n - 1:
            assert "timeout" not in note  # the rank that never came
            continue
        stalled = note["stalled"]
        assert stalled["type"] == "DistributedError", stalled
        assert "the ranks met but the data exchange did not complete" in stalled["message"]
        timeout = note["timeout"]
        assert timeout["type"] == "DistributedError"
        assert f"rank(s) {n - 1} did not reach collective" in timeout["message"]
        assert "collective_timeout=1 s" in timeout["message"]
        assert note["after_timeout"]["type"] == "DistributedError"
        assert "no longer in step" in note["after_timeout"]["message"]


# --- the acceptance test: data-parallel training equals one process on the whole batch ----------


@pytest.fixture(scope="module")
def single_process_training():
    ember.config.update("enable_x64", True)
    try:
        params, x, y, steps, lr = inputs.training_setup("float64")
        opt = optim.adam(learning_rate=lr)
        state = opt.init(params)
        grad_fn = ember.jit(ember.value_and_grad(inputs.mean_loss))
        for _ in range(steps):
            _, grads = grad_fn(params, x, y)
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
        trained = {name: np.asarray(p) for name, p in params.named_parameters()}
    finally:
        ember.config.update("enable_x64", False)
    params, x, y, _, _ = inputs.training_setup()
    first = ember.grad(inputs.mean_loss)(params, x, y)
    return trained, {name: np.asarray(g) for name, g in first.named_parameters()}, np.asarray(params(x))


@needs_mpi
@pytest.mark.parametrize("n", (2, 4))
def test_data_parallel_training_equals_one_process_on_the_whole_batch(launched, n, single_process_training):
    arrays, _ = launched(n)
    want, first_grad, logits = single_process_training
    for rank, got in enumerate(arrays):
        for name, value in want.items():
            # float64 (see worker.training): the averaged shard gradients differ from the whole batch's by
            # rounding (~1e-16 relative: the order of the sums differs), and so do the parameters after five
            # Adam steps (2e-16 observed with 2 and 4 processes; in float32 one weight of 16,384 differs by
            # 3e-6, where Adam's normalised step amplifies the rounding of a near-zero gradient).
            assert got[f"train/{name}"].dtype == np.float64
            where = f"{name}, rank {rank} of {n}"
            np.testing.assert_allclose(got[f"train/{name}"], value, rtol=0, atol=1e-14, err_msg=where)
            np.testing.assert_array_equal(got[f"train/{name}"], arrays[0][f"train/{name}"])  # ranks agree exactly
            # float32: one gradient of the global loss, differentiating the sharded function from outside
            np.testing.assert_allclose(got[f"outer_grad/{name}"], first_grad[name], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got["gathered_logits"], logits, rtol=1e-6, atol=1e-6)


# --- one process, no MPI: the axis name bound to nothing, shard_map over the devices ---------------------


def test_process_index_and_count_before_initialize():
    assert ember.distributed.process_index() == 0
    assert ember.distributed.process_count() == 1
    assert not ember.distributed.is_initialized()


def test_unbound_process_axis_raises_unbound_axis_name_error():
    with pytest.raises(ember.errors.UnboundAxisNameError, match="'processes'"):
        lax.psum(enp.ones(2), "processes")


def test_shard_map_over_cpu_devices_equals_the_whole_batch():
    ember.config.update("num_cpu_devices", 4)
    try:
        params, x, y, _, _ = inputs.training_setup()
        step = ember.shard_map(inputs.mean_loss_and_grads_pmean, in_axes=(None, 0, 0), out_axes=None)
        loss, grads = ember.jit(step)(params, x, y)
        want_loss, want = ember.value_and_grad(inputs.mean_loss)(params, x, y)
        np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-6)
        for (name, g), (_, w) in zip(grads.named_parameters(), want.named_parameters()):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-7, err_msg=name)
        global_loss = ember.shard_map(inputs.mean_loss_pmean, in_axes=(None, 0, 0), out_axes=None)
        outer = ember.grad(lambda p: global_loss(p, x, y))
        for (name, g), (_, w) in zip(outer(params).named_parameters(), want.named_parameters()):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-7, err_msg=name)
        logits = ember.shard_map(lambda p, x: p(x), in_axes=(None, 0))(params, x)
        np.testing.assert_allclose(np.asarray(logits), np.asarray(params(x)), rtol=1e-6, atol=1e-6)
        cols = ember.shard_map(lambda m: m * lax.axis_index("processes"), in_axes=1, out_axes=1)(enp.ones((2, 8)))
        np.testing.assert_array_equal(np.asarray(cols), np.repeat(np.arange(4.0), 2)[None].repeat(2, 0))
        with pytest.raises(ember.errors.InvalidArgumentError, match=r"argument 1 has size 6 .* 4 equal shards"):
            ember.shard_map(lambda a, b: a + b)(enp.ones(8), enp.ones(6))
        with pytest.raises(ember.errors.InvalidArgumentError, match="0-d"):
            ember.shard_map(lambda a: a.sum())(enp.ones(8))
    finally:
        ember.config.update("num_cpu_devices", 1)


def test_initialize_rejects_an_unknown_backend():
    with pytest.raises(ember.errors.InvalidArgumentError, match="'mpi', 'nccl' or None"):
        ember.distributed.initialize(backend="gloo")
    assert not ember.distributed.is_initialized()


# --- NCCL: the communicator's calls, with NumPy standing in for CuPy and a one-rank NCCL -------------------


class _DeviceArray(np.ndarray):
    """A NumPy array posing as a CuPy one: ``.data.ptr`` is its address."""

    @property
    def data(self):
        return type("Memory", (), {"ptr": self.ctypes.data, "device_id": 0})()


class _FakeCupy:
    """CuPy's calls that NcclCommunicator makes; fresh buffers hold garbage (7s), as uninitialised memory."""

    class cuda:
        class nccl:
            NCCL_SUM = "sum"
            group: list = []

            @staticmethod
            def groupStart():
                _FakeCupy.cuda.nccl.group.clear()

            @staticmethod
            def groupEnd():
                calls = _FakeCupy.cuda.nccl.group
                sends = [c for c in calls if c[0] == "send"]
                for (_, dst, nbytes, _), (_, src, _, _) in zip([c for c in calls if c[0] == "recv"], sends):
                    _memmove(dst, src, nbytes)

            @staticmethod
            def get_unique_id():
                return b"id"

            class NcclCommunicator:  # one rank: every collective copies its send buffer
                def __init__(self, size, uid, rank):
                    assert (size, uid, rank) == (1, b"id", 0)

                def allReduce(self, send, recv, count, kind, op, stream):
                    _memmove(recv, send, count * np.dtype(kind).itemsize)

                def reduceScatter(self, send, recv, count, kind, op, stream):
                    _memmove(recv, send, count * np.dtype(kind).itemsize)

                def allGather(self, send, recv, count, kind, stream):
                    _memmove(recv, send, count * np.dtype(kind).itemsize)

                def send(self, ptr, count, kind, peer, stream):
                    _FakeCupy.cuda.nccl.group.append(("send", ptr, count, peer))

                def recv(self, ptr, count, kind, peer, stream):
                    _FakeCupy.cuda.nccl.group.append(("recv", ptr, count, peer))

        @staticmethod
        def get_current_stream():
            return type("Stream", (), {"ptr": 0, "done": True})()

    @staticmethod
    def asarray(x):
        return np.asarray(x).view(_DeviceArray)

    @staticmethod
    def empty_like(x):
        return np.full_like(np.asarray(x), 7).view(_DeviceArray)

    @staticmethod
    def empty(shape, dtype):
        return np.full(shape, 7, dtype).view(_DeviceArray)

    @staticmethod
    def zeros_like(x):
        return np.zeros_like(np.asarray(x)).view(_DeviceArray)

    @staticmethod
    def asnumpy(x):
        return np.asarray(x).view(np.ndarray).copy()


for _name in ("INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT32", "FLOAT64"):
    setattr(_FakeCupy.cuda.nccl, f"NCCL_{_name}", np.dtype(_name.lower()))


def _memmove(dst: int, src: int, nbytes: int) -> None:
    import ctypes

    ctypes.memmove(dst, src, nbytes)


class _OneRankWorld:
    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def Dup(self):
        return self

    def Free(self):
        pass

    def bcast(self, value, root):
        return value


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint16", "int32", "complex64", "bool"])
def test_nccl_communicator_calls_with_a_stand_in(dtype):
    from ember.backends import communicators
    from ember.backends.communicators_nccl import NcclCommunicator

    communicators.bound["gpus"] = NcclCommunicator("gpus", _OneRankWorld(), None, _FakeCupy)
    try:
        for shape in ((2, 3), ()):
            x = inputs.value(3, dtype, shape)
            a = enp.asarray(x)
            checks = {"all_gather": (lax.all_gather(a, "gpus", axis=a.ndim), x[..., None]),
                      "ppermute": (lax.ppermute(a, "gpus", ((0, 0),)), x),
                      "ppermute to nobody": (lax.ppermute(a, "gpus", ()), np.zeros_like(x))}  # fmt: skip
            if shape:
                checks["all_gather tiled"] = (lax.all_gather(a, "gpus", tiled=True), x)
                checks["all_to_all"] = (lax.all_to_all(a, "gpus", 0, 1, tiled=True), x)
            if dtype != "bool":
                checks.update({"psum": (lax.psum(a, "gpus"), x), "pmean": (lax.pmean(a, "gpus"), x)})
            if dtype != "bool" and shape:
                checks["psum_scatter"] = (lax.psum_scatter(a, "gpus", tiled=True), x)
            if dtype != "complex64":
                checks["pmax"] = (lax.pmax(a, "gpus"), x)
            for what, (got, want) in checks.items():
                _same(np.asarray(got), want, f"{what} of {dtype}{list(shape)} through NCCL")
    finally:
        del communicators.bound["gpus"]


def test_initialize_with_nccl_and_no_gpu_says_what_is_missing():
    if ember.backends.cuda_device_count():
        pytest.skip("a GPU is present")
    with pytest.raises(ember.errors.DistributedError, match="needs CuPy and a GPU.*backend='mpi'"):
        ember.distributed.initialize(backend="nccl")
    assert not ember.distributed.is_initialized()


def _one_process(script: str) -> subprocess.CompletedProcess:
    """`script` in a fresh Python without mpirun (MPI makes it a world of one); it must succeed."""
    done = subprocess.run([sys.executable, "-c", script], env=mpi_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@needs_mpi
def test_initialize_without_mpirun_is_one_process_and_shutdown_unbinds():
    script = (
        "import ember, ember.numpy as enp\nfrom ember import lax\n"
        "ember.distributed.initialize()\n"
        "print(float(lax.psum(enp.asarray(2.0), 'processes')), ember.distributed.process_count())\n"
        "ember.distributed.shutdown()\n"
        "try:\n    lax.psum(1.0, 'processes')\nexcept ember.errors.UnboundAxisNameError:\n    print('unbound')\n"
        "ember.distributed.initialize('again')\nprint(int(lax.axis_index('again')))\n"
    )
    done = _one_process(script)
    assert done.stdout.split() == ["2.0", "1", "unbound", "0"]


@needs_mpi
def test_a_pytree_travels_as_one_collective_per_dtype():
    # Each collective across processes costs a handshake and a message: lax.pmean of a model's gradients
    # packs the leaves of one dtype (and weak type) into one buffer. Values are unchanged (1 process: the
    # identity, checked against the leaves), and the jitted program holds one pmean per group.
    script = (
        "import numpy as np, ember, ember.numpy as enp\nfrom ember import lax\n"
        "ember.distributed.initialize()\n"
        "tree = {'w': enp.ones((3, 2)), 'b': enp.arange(4.0), 'n': enp.asarray([5, 7]), 's': enp.asarray(np.float32(2.5))}\n"
        "got = lax.pmean(tree, 'processes')\n"
        "assert all(np.array_equal(np.asarray(got[k]), np.asarray(tree[k])) and got[k].dtype == tree[k].dtype\n"
        "           and got[k].shape == tree[k].shape for k in tree)\n"
        "program = ember.make_ir(lambda t: lax.pmean(t, 'processes'))(tree).program\n"
        "print(sum(e.primitive.name == 'pmean' for e in program.eqns))\n"
    )
    done = _one_process(script)
    assert done.stdout.split() == ["2"]  # float32 {w, b, s} and int32 {n}
