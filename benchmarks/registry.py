"""The workload registry.

A workload is a name plus a ``setup(env)`` function that builds its inputs and
returns ``{implementation: zero-argument callable}``. ``"numpy"`` (hand-written
NumPy, the baseline; or ``"torch"`` for a workload registered with
``reference="torch"``) and ``"ember"`` are required; ``"torch"`` and ``"jax"`` are
added only when ``env.torch`` / ``env.jnp`` are not None (the package imports
and was not excluded with ``--impls``). Each callable does one unit of work and
returns its result, so the runner can also check that every implementation
computes what NumPy computes. JAX callables must block on their result
(``.block_until_ready()``) so the timing includes the work.

Inputs go through ``env.put(impl, numpy_arrays)``, which puts them on the
device the run asks for (``--device``: ember on ``ember.device_put``, torch on
``torch.device("cuda")``, JAX on ``jax.devices("gpu")[0]``; NumPy stays on the
host); the runner then waits for each library's asynchronous work
(``env.sync``) and checks that every result is on that device.

Adding a workload, in any module under ``benchmarks/workloads/``::

    @workload("hessian_logistic_1000", family="hessian", target=1.5)
    def _(env):
        x = ...                                   # NumPy inputs
        impls = {"numpy": lambda: hand_written(x), "ember": lambda: ember_version(ex)}
        if env.torch is not None:
            impls["torch"] = lambda: ...
        return impls

or, when the op is spelled the same in every array namespace::

    register_same_op("eager_tanh", "xp.tanh(a)", a=np.ones(3, np.float32))
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Impls = dict[str, Callable[[], Any]]

#: Implementations the runner knows, in table order, each with the ``Env``
#: attribute that must not be None for it to run (None: always available).
#: "numpy" is the baseline. A new column (say "torch_compile": "torch") is one line here.
IMPLEMENTATIONS: dict[str, str | None] = {"numpy": None, "ember": None, "ember_jit": None, "torch": "torch", "jax": "jnp"}
BASELINE = "numpy"


@dataclass(frozen=True)
class Workload:
    name: str
    setup: Callable[[Env], Impls]
    family: str = "misc"
    description: str = ""
    #: ember/numpy ratio the design targets (shown in the table; never asserted).
    target: float | None = None
    #: tolerances for the output check against the reference (float32 defaults).
    rtol: float = 1e-5
    atol: float = 1e-6
    tags: tuple[str, ...] = field(default_factory=tuple)
    #: ember_jit/jax ratio the issue asks for on a GPU (shown when the ratios are to JAX; never asserted).
    jax_target: float | None = None
    #: bytes one call must at least read and write, as a function of the Env (sizes shrink under
    #: ``env.smoke``): the runner reports bytes / time as GB/s next to the copy bandwidth.
    bytes_moved: Callable[[Env], int] | None = None
    #: the implementation whose result the others are checked against: NumPy, or "torch" where no NumPy
    #: version is natural (the torch.func tutorials); built, though not timed, when ``--impls`` leaves it out.
    reference: str = BASELINE


#: name -> Workload, in registration order.
REGISTRY: dict[str, Workload] = {}


def register(name: str, setup: Callable[[Env], Impls], **kwargs: Any) -> Workload:
    if name in REGISTRY:
        raise ValueError(f"benchmark workload {name!r} is registered twice")
    w = Workload(name=name, setup=setup, **kwargs)
    REGISTRY[name] = w
    return w


def workload(name: str, **kwargs: Any) -> Callable[[Callable[[Env], Impls]], Callable[[Env], Impls]]:
    """Decorator form of :func:`register`; returns the setup function unchanged."""

    def deco(setup: Callable[[Env], Impls]) -> Callable[[Env], Impls]:
        register(name, setup, **kwargs)
        return setup

    return deco


class Env:
    """What a setup function may use: the optional peers, imported lazily, and the device.

    ``env.torch`` / ``env.jax`` / ``env.jnp`` are the modules, or None when the
    package is missing, excluded, or (``device="cuda"``) has no GPU. ``env.enp``
    is ``ember.numpy``. ``device`` is ``"cpu"`` (everything on the host, as
    created), ``"cpu:N"`` (ember's arrays committed to its CPU device N, which
    exercises the device path without a GPU; the peers on their CPU) or
    ``"cuda"`` / ``"cuda:N"`` (every library but NumPy on GPU N). ``smoke``
    asks the workloads that honour it for small sizes (tests, not measurements).
    """

    def __init__(self, impls: tuple[str, ...] | None = None, device: str = "cpu", smoke: bool = False):
        self.impls = tuple(impls) if impls is not None else tuple(IMPLEMENTATIONS)
        self.platform, self.index = parse_device(device)
        self.device = f"{self.platform}:{self.index}" if device.strip().lower() != "cpu" else "cpu"
        self.smoke = smoke
        self.missing: dict[str, str] = {}  # implementation -> why it is absent
        self._mods: dict[str, Any] = {}
        self._ember_device: Any = None

    def wants(self, impl: str) -> bool:
        return impl in self.impls

    def available(self, impl: str) -> bool:
        """Wanted, and its package imports (this imports it)."""
        if not self.wants(impl) or impl not in IMPLEMENTATIONS:
            return False
        req = IMPLEMENTATIONS[impl]
        return req is None or getattr(self, req) is not None

    def _load(self, impl: str, loader: Callable[[], Any]) -> Any:
        if impl not in self._mods:
            mod = None
            if not self.wants(impl):
                self.missing.setdefault(impl, "excluded")
            else:
                try:
                    mod = loader()
                except Exception as e:  # noqa: BLE001  (ImportError, no GPU, or a broken install)
                    self.missing[impl] = f"not importable ({type(e).__name__}: {e})".splitlines()[0][:120] \
                        if isinstance(e, ImportError) else f"{type(e).__name__}: {e}".splitlines()[0][:160]
            self._mods[impl] = mod
        return self._mods[impl]

    @property
    def enp(self) -> Any:
        import ember.numpy as enp

        return enp

    @property
    def torch(self) -> Any:
        def load():
            torch = importlib.import_module("torch")
            if self.platform == "cuda":
                if not torch.cuda.is_available() or torch.cuda.device_count() <= self.index:
                    raise RuntimeError(f"torch {torch.__version__} sees {torch.cuda.device_count()} CUDA device(s),"
                                       f" so not cuda:{self.index}")
                # float32 matmuls and convolutions in float32, as NumPy and ember compute them (not TF32)
                if hasattr(torch.backends.cudnn, "conv"):  # torch >= 2.9 (the old flags are deprecated)
                    torch.backends.cuda.matmul.fp32_precision = "ieee"
                    torch.backends.cudnn.fp32_precision = "ieee"  # its conv and rnn
                else:
                    torch.backends.cuda.matmul.allow_tf32 = False
                    torch.backends.cudnn.allow_tf32 = False
            return torch

        return self._load("torch", load)

    @property
    def jax(self) -> Any:
        def load():
            if self.platform == "cuda":
                # allocate as needed: CuPy (ember) and torch share the GPU with it
                os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
                jax = importlib.import_module("jax")
                gpus = jax.devices("gpu")  # raises when this jax has no GPU backend
                if len(gpus) <= self.index:
                    raise RuntimeError(f"jax sees {len(gpus)} GPU(s), so not cuda:{self.index}")
                # float32 matmuls and convolutions in float32 (JAX's GPU default is TF32)
                jax.config.update("jax_default_matmul_precision", "highest")
                return jax
            # CPU only, and before JAX picks a backend.
            os.environ.setdefault("JAX_PLATFORMS", "cpu")
            jax = importlib.import_module("jax")
            jax.config.update("jax_platforms", "cpu")
            return jax

        return self._load("jax", load)

    @property
    def jnp(self) -> Any:
        jax = self.jax
        return None if jax is None else importlib.import_module("jax.numpy")

    # --- the device ---------------------------------------------------------------------------

    @property
    def ember_device(self) -> Any:
        """The ember Device inputs are committed to; None for ``device="cpu"`` (uncommitted, as created)."""
        if self.device == "cpu":
            return None
        if self._ember_device is None:
            import ember

            if self.platform == "cpu" and ember.config.num_cpu_devices <= self.index:
                ember.config.update("num_cpu_devices", self.index + 1)
            self._ember_device = ember.devices(self.platform)[self.index]
        return self._ember_device

    @property
    def torch_device(self) -> Any:
        """torch's device for the inputs: None on the CPU (tensors as created)."""
        return None if self.platform == "cpu" else self.torch.device("cuda", self.index)

    @property
    def jax_device(self) -> Any:
        """JAX's device for the inputs: None on the CPU (arrays as created)."""
        return None if self.platform == "cpu" else self.jax.devices("gpu")[self.index]

    def put(self, impl: str, x: Any) -> Any:
        """The NumPy arrays in `x` (alone, or in lists, tuples and dicts) as `impl`'s arrays on the run's
        device; anything else passes through. "numpy" keeps them as they are (the host)."""
        if isinstance(x, (tuple, list)):
            return type(x)(self.put(impl, v) for v in x)
        if isinstance(x, dict):
            return {k: self.put(impl, v) for k, v in x.items()}
        if not isinstance(x, np.ndarray) or impl == "numpy":
            return x
        if impl in ("ember", "ember_jit"):
            if self.ember_device is None:
                return self.enp.asarray(x)
            import ember

            return ember.device_put(x, self.ember_device)
        if impl == "torch":
            t = self.torch.tensor(x)
            return t if self.torch_device is None else t.to(self.torch_device)
        if impl == "jax":
            return self.jnp.asarray(x) if self.jax_device is None else self.jax.device_put(x, self.jax_device)
        raise ValueError(impl)

    def needs_sync(self, impl: str) -> bool:
        """Whether `impl` computes asynchronously on this run's device, so a timed call must wait for it."""
        if impl in ("ember", "ember_jit"):
            return self.device != "cpu"
        return impl in ("torch", "jax") and self.platform == "cuda"

    def sync(self, impl: str, result: Any) -> Any:
        """Wait until `impl`'s `result` is computed; return it. ember: ``block_until_ready`` on every
        array; torch: ``torch.cuda.synchronize``; JAX: ``jax.block_until_ready``."""
        if impl in ("ember", "ember_jit"):
            import ember

            for leaf in ember.tree.leaves(result):
                if hasattr(leaf, "block_until_ready"):
                    leaf.block_until_ready()
        elif impl == "torch":
            self.torch.cuda.synchronize(self.torch_device)
        elif impl == "jax":
            self.jax.block_until_ready(result)
        return result

    def misplaced(self, impl: str, result: Any) -> str | None:
        """Where `impl`'s `result` is, when that is not the run's device (a workload that created its inputs
        without ``env.put``, or an op that left the device); None when it is there, or on a plain CPU run."""
        if impl in ("ember", "ember_jit") and self.ember_device is not None:
            import ember

            found = {str(leaf.device) for leaf in ember.tree.leaves(result) if hasattr(leaf, "devices")}
            want = str(self.ember_device)
        elif impl == "torch" and self.platform == "cuda":
            found = {str(leaf.device) for leaf in _leaves(result) if hasattr(leaf, "is_cuda")}
            want = str(self.torch_device)
        elif impl == "jax" and self.platform == "cuda":
            found = {str(d) for leaf in _leaves(result) if hasattr(leaf, "devices") for d in leaf.devices()}
            want = str(self.jax_device)
        else:
            return None
        wrong = sorted(found - {want})
        return f"result on {', '.join(wrong)}, not {want}" if wrong else None

    def where(self) -> dict[str, str]:
        """Each implementation's device, in words, for the report."""
        out = {"numpy": "host (NumPy always runs on the CPU)"}
        if self.ember_device is not None:
            d = self.ember_device
            out["ember"] = f"{d}" + (f" ({d.device_kind})" if d.platform == "cuda" else "")
        else:
            out["ember"] = "cpu:0"
        if self._mods.get("torch") is not None:
            torch = self._mods["torch"]
            out["torch"] = f"cuda:{self.index} ({torch.cuda.get_device_name(self.index)})" \
                if self.platform == "cuda" else "cpu"
        if self._mods.get("jax") is not None:
            out["jax"] = str(self.jax_device.device_kind if self.platform == "cuda" else "cpu")
            if self.platform == "cuda":
                out["jax"] = f"{self.jax_device} ({out['jax']})"
        return out

    def versions(self) -> dict[str, str]:
        out = {"numpy": np.__version__}
        try:
            import ember

            out["ember"] = getattr(ember, "__version__", "?")
        except Exception as e:  # noqa: BLE001  # pragma: no cover
            out["ember"] = f"unimportable: {e}"
        if self.platform == "cuda":
            import cupy

            out["cupy"] = cupy.__version__
        for impl in ("torch", "jax"):
            mod = self._mods.get(impl)
            if mod is not None:
                out[impl] = getattr(mod, "__version__", "?")
        return out


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in _leaves(v)]
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _leaves(v)]
    return [x]


def parse_device(spec: str) -> tuple[str, int]:
    """``"cpu"``, ``"cpu:1"``, ``"cuda"``, ``"cuda:0"`` (``"gpu"`` is ``"cuda"``) as (platform, index).

    >>> parse_device("cuda"), parse_device("cpu:1")
    (('cuda', 0), ('cpu', 1))
    """
    platform, _, number = spec.strip().lower().partition(":")
    platform = "cuda" if platform == "gpu" else platform
    if platform not in ("cpu", "cuda") or not (number == "" or number.isdigit()):
        raise ValueError(f"--device {spec!r}: write cpu, cpu:N, cuda or cuda:N")
    return platform, int(number or 0)


# ---------------------------------------------------------------------------
# Helpers for workloads whose op is spelled the same in NumPy, ember.numpy,
# torch and jax.numpy.


def same_op_impls(env: Env, expr: str, **arrays: Any) -> Impls:
    """Callables for every available implementation from one expression.

    ``expr`` is a Python expression over the keyword names and ``xp`` (the
    array namespace: numpy, ember.numpy, torch or jax.numpy), e.g.
    ``"xp.where(a > b, a, b)"``. It is compiled into the body of each callable,
    so a timed call is exactly the op (no extra Python call layered on it).
    NumPy arrays among ``arrays`` become each library's arrays on the run's device (``env.put``).
    """
    namespaces = {"numpy": lambda: np, "ember": lambda: env.enp, "torch": lambda: env.torch, "jax": lambda: env.jnp}
    impls: Impls = {}
    for impl, namespace in namespaces.items():
        if not env.available(impl):
            continue
        xp = namespace()
        scope = {"xp": xp, **{k: env.put(impl, v) for k, v in arrays.items()}}
        body = f"({expr}).block_until_ready()" if impl == "jax" else expr
        impls[impl] = eval(f"lambda: {body}", scope)
    return impls


def register_same_op(name: str, expr: str, *, family: str = "eager", **kwargs: Any) -> Workload:
    """Register a workload from :func:`same_op_impls`.

    Keyword arguments that are arrays or scalars become the inputs; the rest
    (``target``, ``description``, ``rtol``, ``atol``, ``tags``) go to the Workload.
    """
    wl_keys = {"description", "target", "rtol", "atol", "tags", "jax_target", "bytes_moved"}
    meta = {k: v for k, v in kwargs.items() if k in wl_keys}
    arrays = {k: v for k, v in kwargs.items() if k not in wl_keys}
    meta.setdefault("description", expr.replace("xp.", ""))
    return register(name, lambda env: same_op_impls(env, expr, **arrays), family=family, **meta)


# ---------------------------------------------------------------------------


def to_numpy(x: Any) -> Any:
    """Any implementation's result as NumPy (recursing into tuples, lists, dicts)."""
    if isinstance(x, (tuple, list)):
        return type(x)(to_numpy(v) for v in x)
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def load_all() -> dict[str, Workload]:
    """Import every module under ``benchmarks/workloads`` (which registers them)."""
    import benchmarks.workloads  # noqa: F401  (imports its submodules)

    return REGISTRY
