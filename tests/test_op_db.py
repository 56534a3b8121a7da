"""Runs every op-database entry against its reference, for every dtype.

Eager column: values against NumPy/SciPy (after casting), result dtypes
against the entry's rule, and every unsupported dtype must raise an
ember error. The transform columns join when the transforms do.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from op_db import ALL, OPS, SIXTY_FOUR_BIT, upcast

import ember
import ember.lax
import ember.numpy as enp
import ember.nn
import ember.scipy.special

CELLS = [(op, dtype) for op in OPS for dtype in ALL]


def _id(cell) -> str:
    op, dtype = cell
    return f"{op.name}-{dtype.name}"


def _outputs(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _compare(op, dtype, sample, got, want) -> None:
    got_list, want_list = _outputs(got), _outputs(want)
    assert len(got_list) == len(want_list), f"{op.name}: {len(got_list)} outputs, reference has {len(want_list)}"
    for g, w in zip(got_list, want_list):
        assert isinstance(g, ember.Array), f"{op.name} returned {type(g).__name__}, not an ember.Array"
        w = np.asarray(w)
        expected_dtype = op.expected_dtype(dtype, sample)
        assert g.dtype == expected_dtype, f"{op.name}{sample}: dtype {g.dtype}, expected {expected_dtype}"
        assert g.shape == w.shape, f"{op.name}{sample}: shape {g.shape}, reference {w.shape}"
        g = np.asarray(g)
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"{op.name}{sample}")
        else:
            rtol, atol = op.tolerance(g.dtype)
            g, w = g.astype(np.complex128), w.astype(np.complex128)
            # Real and imaginary parts separately: NumPy demands exact equality of complex infinities.
            for part in (np.real, np.imag):
                np.testing.assert_allclose(part(g), part(w), rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{op.name}{sample}")


@pytest.mark.parametrize("cell", CELLS, ids=_id)
def test_eager(cell):
    _check_eager(*cell, seed=0)


@pytest.mark.full
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("cell", CELLS, ids=_id)
def test_eager_more_samples(cell, seed):
    _check_eager(*cell, seed=seed)


def _check_eager(op, dtype, seed: int) -> None:
    rng = np.random.default_rng([seed, *map(ord, op.name + dtype.name)])
    with ember.config.x64(dtype in SIXTY_FOUR_BIT):
        samples = op.samples(rng, dtype)
        assert samples, f"{op.name} has no samples for {dtype}"
        for sample in samples:
            if dtype not in op.dtypes:
                with pytest.raises(ember.errors.EmberError):
                    op.op(*sample.args, **sample.kwargs)
                continue
            got = op.op(*sample.args, **sample.kwargs)
            args = sample.args if op.ref_in_dtype else tuple(upcast(a) for a in sample.args)
            # The reference is NumPy on samples chosen to include empty slices and complex values cast to
            # real dtypes: its warnings about them ("Mean of empty slice", ComplexWarning) are not ember's.
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
                want = op.ref(*args, **sample.kwargs)
            _compare(op, dtype, sample, got, want)


# --- coverage ---------------------------------------------------------------------------------

# Public names that are not array functions, and where they are tested instead.
NOT_OPS = {
    "enp": {
        "promote_types": "test_promotion.py", "result_type": "test_promotion.py", "can_cast": "test_promotion.py",
        "issubdtype": "test_promotion.py", "isdtype": "test_promotion.py", "finfo": "test_promotion.py",
        "iinfo": "test_promotion.py", "dtype": "NumPy's dtype class", "shape": "a query (test_array.py)",
        "ndim": "a query (test_array.py)", "size": "a query (test_array.py)",
        "broadcast_shapes": "a shape query (test_promotion.py broadcasting properties)",
    },
    "lax": {"RoundingMethod": "a constants class"},
    "scipy.special": {},
    "enp.linalg": {},
    "enp.fft": {},
    "scipy.linalg": {},
    "lax.linalg": {},
    "nn.functional": {},
}  # fmt: skip


def _public_functions(module, prefix: str) -> set[str]:
    names = set()
    for name in dir(module):
        value = getattr(module, name)
        if name.startswith("_") or isinstance(value, type) or not callable(value):
            continue
        if getattr(value, "__module__", "") and not value.__module__.startswith("ember"):
            continue
        names.add(name)
    return names - set(NOT_OPS[prefix])


def test_every_public_function_has_an_entry():
    covered = {op.name for op in OPS} | {f"{op.name.rsplit('.', 1)[0]}.{a}" for op in OPS for a in op.aliases}
    modules = (("enp", enp), ("lax", ember.lax), ("scipy.special", ember.scipy.special), ("enp.linalg", enp.linalg),
               ("enp.fft", enp.fft), ("scipy.linalg", ember.scipy.linalg), ("lax.linalg", ember.lax.linalg),
               ("nn.functional", ember.nn.functional))
    missing = sorted(f"{p}.{n}" for p, m in modules for n in _public_functions(m, p)
                     if f"{p}.{n}" not in covered)  # fmt: skip
    assert not missing, f"public functions without an op_db entry: {missing}"


# Public classes of ember.nn that are not layers, and where they are tested instead.
NOT_LAYERS = {"Module": "the base class (test_nn_module.py)", "State": "a container of running statistics (test_nn_state.py)",
              "FrozenModuleError": "an exception (test_nn_module.py)"}


def test_every_layer_has_an_entry():
    """Every layer class of ember.nn has an op_db entry named ``nn.<Class>`` (run through a pure wrapper)."""
    import ember.nn

    covered = {op.name for op in OPS}
    layers = {name for name in ember.nn.__all__ if isinstance(getattr(ember.nn, name), type)} - set(NOT_LAYERS)
    missing = sorted(f"nn.{name}" for name in layers if f"nn.{name}" not in covered)
    assert not missing, f"ember.nn layers without an op_db entry: {missing}"


# Primitives that only transforms emit (no user calls them), and where they are tested instead.
NOT_USER_PRIMITIVES = {
    "custom_lin": "the linear stand-in for a custom_vjp function's derivative (test_custom_rules.py)",
    "remat_lin": "the linear stand-in for a checkpointed function's derivative (test_remat.py)",
    "while_lin": "a while_loop's output tangents, from its jvp rule (test_control_flow.py; the lax.while_loop entry)",
    "while_vjp": "a while_loop's input cotangents, from while_lin's transpose (test_control_flow.py; lax.while_loop)",
    "debug_callback": "ember.debug.print's host call, which has no outputs to compare (test_callbacks.py)",
    "jit_call": "a jitted function called under another transform (test_jit.py)",
    "custom_jvp_call": "a custom_jvp function recorded by jit (test_jit.py)",
    "custom_vjp_call": "a custom_vjp function recorded by jit (test_jit.py)",
}


def test_every_primitive_has_an_entry():
    from ember.core.primitive import PRIMITIVES

    covered = {p for op in OPS for p in op.primitives} | set(NOT_USER_PRIMITIVES)
    missing = sorted(set(PRIMITIVES) - covered)
    assert not missing, f"primitives without an op_db entry: {missing}"


def test_entries_are_unique():
    names = [op.name for op in OPS]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


# Primitives that no batching trace ever receives, and why.
NOT_BATCHED = {
    "iota": "it takes no operands, so it never has a batched one",
    "custom_jvp_call": "binding it hands the call back to the transforms as a custom_jvp call",
    "custom_vjp_call": "binding it hands the call back to the transforms as a custom_vjp call",
}


def test_every_primitive_has_a_batching_rule():
    from ember.core.batching import axis_rules
    from ember.core.primitive import PRIMITIVES

    missing = sorted(name for name, p in PRIMITIVES.items()
                     if p.batch is None and p not in axis_rules and name not in NOT_BATCHED)  # fmt: skip
    assert not missing, f"primitives that vmap would run in a Python loop: {missing}"
