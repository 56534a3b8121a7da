"""The workload registry.

A workload is a name plus a ``setup(env)`` function that builds its inputs and
returns ``{implementation: zero-argument callable}``. ``"numpy"`` (hand-written
NumPy, the baseline) and ``"ember"`` are required; ``"torch"`` and ``"jax"`` are
added only when ``env.torch`` / ``env.jnp`` are not None (the package imports
and was not excluded with ``--impls``). Each callable does one unit of work and
returns its result, so the runner can also check that every implementation
computes what NumPy computes. JAX callables must block on their result
(``.block_until_ready()``) so the timing includes the work.

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
    #: tolerances for the output check against NumPy (float32 defaults).
    rtol: float = 1e-5
    atol: float = 1e-6
    tags: tuple[str, ...] = field(default_factory=tuple)


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
    """What a setup function may use: the optional peers, imported lazily.

    ``env.torch`` / ``env.jax`` / ``env.jnp`` are the modules, or None when the
    package is missing or excluded. ``env.enp`` is ``ember.numpy``.
    """

    def __init__(self, impls: tuple[str, ...] | None = None):
        self.impls = tuple(impls) if impls is not None else tuple(IMPLEMENTATIONS)
        self.missing: dict[str, str] = {}  # implementation -> why it is absent
        self._mods: dict[str, Any] = {}

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
                except Exception as e:  # noqa: BLE001  (ImportError, or a broken install)
                    self.missing[impl] = f"not importable ({type(e).__name__}: {e})".splitlines()[0][:120]
            self._mods[impl] = mod
        return self._mods[impl]

    @property
    def enp(self) -> Any:
        import ember.numpy as enp

        return enp

    @property
    def torch(self) -> Any:
        return self._load("torch", lambda: importlib.import_module("torch"))

    @property
    def jax(self) -> Any:
        def load():
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

    def versions(self) -> dict[str, str]:
        out = {"numpy": np.__version__}
        try:
            import ember

            out["ember"] = getattr(ember, "__version__", "?")
        except Exception as e:  # noqa: BLE001  # pragma: no cover
            out["ember"] = f"unimportable: {e}"
        for impl in ("torch", "jax"):
            mod = self._mods.get(impl)
            if mod is not None:
                out[impl] = getattr(mod, "__version__", "?")
        return out


# ---------------------------------------------------------------------------
# Helpers for workloads whose op is spelled the same in NumPy, ember.numpy,
# torch and jax.numpy.


def _convert(impl: str, env: Env, x: Any) -> Any:
    if not isinstance(x, np.ndarray):
        return x  # Python scalars, shapes, ... pass through
    if impl == "numpy":
        return x
    if impl == "ember":
        return env.enp.asarray(x)
    if impl == "torch":
        return env.torch.tensor(x)
    if impl == "jax":
        return env.jnp.asarray(x)
    raise ValueError(impl)


def same_op_impls(env: Env, expr: str, **arrays: Any) -> Impls:
    """Callables for every available implementation from one expression.

    ``expr`` is a Python expression over the keyword names and ``xp`` (the
    array namespace: numpy, ember.numpy, torch or jax.numpy), e.g.
    ``"xp.where(a > b, a, b)"``. It is compiled into the body of each callable,
    so a timed call is exactly the op (no extra Python call layered on it).
    NumPy arrays among ``arrays`` are converted to each library's array type.
    """
    namespaces = {"numpy": lambda: np, "ember": lambda: env.enp, "torch": lambda: env.torch, "jax": lambda: env.jnp}
    impls: Impls = {}
    for impl, namespace in namespaces.items():
        if not env.available(impl):
            continue
        xp = namespace()
        scope = {"xp": xp, **{k: _convert(impl, env, v) for k, v in arrays.items()}}
        body = f"({expr}).block_until_ready()" if impl == "jax" else expr
        impls[impl] = eval(f"lambda: {body}", scope)
    return impls


def register_same_op(name: str, expr: str, *, family: str = "eager", **kwargs: Any) -> Workload:
    """Register a workload from :func:`same_op_impls`.

    Keyword arguments that are arrays or scalars become the inputs; the rest
    (``target``, ``description``, ``rtol``, ``atol``, ``tags``) go to the Workload.
    """
    wl_keys = {"description", "target", "rtol", "atol", "tags"}
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
