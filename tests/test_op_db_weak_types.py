"""The weak-type column of the op database: every entry's result `weak_type` against JAX's rule.

JAX's rule, written out here (no JAX needed): a result is weakly typed exactly when every array
operand is -- the rule of lax's standard primitives -- with the exceptions listed below, each as
JAX has it (read from JAX 0.10's weak-type rules and checked by running the op database's samples
on JAX). Bool arrays and NumPy scalars are never weak.

For each entry, the test calls the function with its sample's array operands all weak (as Python
scalars are) and all strong, and compares the result's weak flags with the rule. `lax` entries use
every sample; the `ember.numpy`/`scipy` entries use the samples whose array operands are 0-d, which
is where weak values come from (Python scalars): JAX itself treats weak arrays of higher rank
inconsistently across its jitted `jax.numpy` functions.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_db import OPS

import ember
from ember.core.array import wrap

# --- JAX's rule ---------------------------------------------------------------------------------

# Results that are never weak, whatever the operands: an explicit or computed dtype (convert, full,
# iota-like creation, linspace), integer results of searches and counts, reductions of jax.numpy
# (JAX converts their result to the strong result dtype), and functions JAX writes with strong
# constants (log2 divides by a strong log(2), ...).
STRONG = {
    "lax.argmax", "lax.argmin", "lax.axis_index", "lax.bitcast_convert_type", "lax.convert_element_type", "lax.full",
    "lax.reduce_and", "lax.reduce_or", "lax.fft", "lax.fft[rfft]", "lax.random_gamma_grad", "lax.linalg.cholesky",
    "lax.linalg.eigh", "lax.linalg.svd", "lax.linalg.triangular_solve", "pure_callback",
    "enp.all", "enp.allclose", "enp.angle", "enp.any", "enp.argmax", "enp.argmin", "enp.argsort", "enp.argwhere",
    "enp.argwhere[size]", "enp.array_equal", "enp.array_equiv", "enp.astype", "enp.average", "enp.bincount",
    "enp.bincount[weights]", "enp.bitwise_count", "enp.choose", "enp.corrcoef", "enp.count_nonzero", "enp.cov",
    "enp.cumprod", "enp.cumsum", "enp.cumulative_prod", "enp.cumulative_sum", "enp.diag_indices_from",
    "enp.diagflat", "enp.digitize", "enp.flatnonzero", "enp.frexp", "enp.frexp.exponent", "enp.from_dlpack",
    "enp.geomspace", "enp.histogram", "enp.histogram[weights]", "enp.histogram_bin_edges", "enp.isclose", "enp.isin",
    "enp.isinf", "enp.isneginf", "enp.isposinf", "enp.ldexp", "enp.lexsort", "enp.linspace", "enp.log10", "enp.log2",
    "enp.logspace", "enp.max", "enp.mean", "enp.median", "enp.min", "enp.nan_to_num", "enp.nancumprod",
    "enp.nancumsum", "enp.nanmean", "enp.nanmedian", "enp.nanpercentile", "enp.nanquantile",
    "enp.nanquantile[weights]", "enp.nansum", "enp.nonzero", "enp.percentile", "enp.polyval", "enp.prod", "enp.ptp",
    "enp.quantile", "enp.quantile[weights]", "enp.ravel_multi_index", "enp.searchsorted", "enp.signbit",
    "enp.spacing", "enp.std", "enp.sum", "enp.trace", "enp.tril_indices_from", "enp.triu_indices_from",
    "enp.unique[extras]", "enp.unique_all", "enp.unique_counts", "enp.unique_inverse", "enp.var", "enp.where.indices",
    "enp.fft.fft", "enp.fft.fft2", "enp.fft.fftfreq", "enp.fft.fftn", "enp.fft.hfft", "enp.fft.ifft", "enp.fft.ifft2",
    "enp.fft.ifftn", "enp.fft.ihfft", "enp.fft.irfft", "enp.fft.irfft2", "enp.fft.irfftn", "enp.fft.rfft",
    "enp.fft.rfft2", "enp.fft.rfftfreq", "enp.fft.rfftn",
    "enp.linalg.cholesky", "enp.linalg.cross", "enp.linalg.eigh", "enp.linalg.inv", "enp.linalg.lstsq",
    "enp.linalg.matrix_norm", "enp.linalg.matrix_rank", "enp.linalg.norm", "enp.linalg.pinv", "enp.linalg.svd",
    "enp.linalg.tensorinv", "enp.linalg.trace", "enp.linalg.vector_norm",
    "scipy.linalg.block_diag", "scipy.linalg.cho_factor", "scipy.linalg.cho_solve", "scipy.linalg.eigh",
    "scipy.linalg.expm", "scipy.linalg.lu_solve", "scipy.linalg.solve_triangular", "scipy.special.logsumexp",
    "nn.functional.one_hot",  # as jax.nn.one_hot: an asked-for integer dtype
}  # fmt: skip

# Selections: weak when every case is, whatever the (first) predicate operand (JAX's select rule).
CASES_ONLY = {"lax.select_n", "lax.select", "lax.cond", "enp.where"}

# The standard rule counting NumPy-scalar start indices as (strong) operands: JAX's
# dynamic_update_slice takes every operand into account.
WITH_SCALAR_OPERANDS = {"lax.dynamic_update_slice", "lax.dynamic_update_slice_in_dim", "lax.dynamic_update_index_in_dim"}

# Creation functions whose result is weak only when no dtype is given (JAX's full/full_like: an asked-for
# dtype is strong, whatever the fill value or model array).
STRONG_WITH_DTYPE = {"enp.full", "enp.full_like", "enp.zeros_like", "enp.ones_like", "enp.empty_like"}

# Per-output flags when every array operand is weak (JAX's eig: weak eigenvalues, strong eigenvectors).
PER_OUTPUT = {"lax.linalg.eig": (True, False, False), "enp.linalg.eig": (True, False, False)}


def jax_weak_flags(name: str, operands_weak: list[bool], has_scalar_operand: bool, n_out: int,
                   has_dtype: bool = False) -> list[bool]:  # fmt: skip
    """JAX's weak flags of the `n_out` results of entry `name`, given which array operands are weak."""
    if name in STRONG or name in STRONG_WITH_DTYPE and has_dtype:
        return [False] * n_out
    if name in PER_OUTPUT and operands_weak and all(operands_weak):
        return list(PER_OUTPUT[name])
    counted = operands_weak[1:] if name in CASES_ONLY else operands_weak
    weak = bool(counted) and all(counted) and not (name in WITH_SCALAR_OPERANDS and has_scalar_operand)
    return [weak] * n_out


# --- where ember does not follow it yet -----------------------------------------------------------
# Each is a strict xfail: the cell fails loudly once the function follows JAX, so the entry leaves
# this list. The owner is the module whose constants or conversions decide the flag.
KNOWN_DIFFERENCES: dict[str, str] = {}

# --- the column -----------------------------------------------------------------------------------

_WEAKABLE = "fiuc"  # bool is never weak


def _dtype_for(op):
    for name in ("float32", "int32", "complex64", "bool"):
        if np.dtype(name) in op.dtypes:
            return np.dtype(name)
    return None


def _array_operands(sample) -> list[np.ndarray]:
    found = []

    def walk(v):
        if isinstance(v, np.ndarray):
            found.append(v)
        elif type(v) in (list, tuple):  # not a NamedTuple of static parameters
            for x in v:
                walk(x)

    for a in (*sample.args, *sample.kwargs.values()):
        walk(a)
    return found


def _has_scalar_operand(sample) -> bool:
    def walk(v):
        return isinstance(v, np.generic) or type(v) in (list, tuple) and any(walk(x) for x in v)

    return any(walk(a) for a in (*sample.args, *sample.kwargs.values()))


def _with_weakness(v, weak: bool):
    if isinstance(v, np.ndarray):
        return wrap(np.asarray(v), weak and v.dtype.kind in _WEAKABLE)
    if type(v) in (list, tuple) and any(isinstance(x, (np.ndarray, list, tuple)) for x in v):
        return type(v)(_with_weakness(x, weak) for x in v)
    return v


def _flags(result) -> list[bool]:
    if isinstance(result, (list, tuple)):
        return [f for r in result for f in _flags(r)]
    return [bool(result.weak_type)] if isinstance(result, ember.Array) else []


def _samples(op):
    dtype = _dtype_for(op)
    if dtype is None:
        return []
    rng = np.random.default_rng([0, *map(ord, op.name)])
    samples = op.samples(rng, dtype)
    if not op.name.startswith("lax."):
        samples = [s for s in samples if (ops := _array_operands(s)) and all(a.ndim == 0 for a in ops)]
    return samples[:4]


def _params():
    for op in OPS:
        marks = [pytest.mark.xfail(reason=KNOWN_DIFFERENCES[op.name], strict=True)] if op.name in KNOWN_DIFFERENCES else []
        yield pytest.param(op, id=op.name, marks=marks)


@pytest.mark.parametrize("op", list(_params()))
def test_weak_type_follows_jax(op):
    samples = _samples(op)
    if not samples:
        pytest.skip("no sample whose array operands could be weak (lax: any; elsewhere: 0-d)")
    checked = 0
    for sample in samples:
        operands = _array_operands(sample)
        for weak in (True, False):
            args = tuple(_with_weakness(a, weak) for a in sample.args)
            kwargs = {k: _with_weakness(v, weak) for k, v in sample.kwargs.items()}
            with np.errstate(all="ignore"):
                try:
                    got = _flags(op.op(*args, **kwargs))
                except ember.errors.EmberError:
                    continue  # a sample meant to raise (the eager column checks the message)
            kinds = [weak and a.dtype.kind in _WEAKABLE for a in operands]
            has_dtype = any(isinstance(v, np.dtype) for v in (*sample.args, *sample.kwargs.values()))
            want = jax_weak_flags(op.name, kinds, _has_scalar_operand(sample), len(got), has_dtype)
            assert got == want, f"{op.name}{sample} with {'weak' if weak else 'strong'} operands: weak_type {got}, JAX's rule {want}"
            checked += 1
    if not checked:
        pytest.skip("every sample raises")
