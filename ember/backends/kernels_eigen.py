"""Kernels of the spectral primitives (svd, eigh, eig).

`xp.linalg` (NumPy's LAPACK wrappers) works on stacks of matrices, so one call
covers any leading (batch) axes. Where LAPACK gives up on a matrix (NumPy
raises LinAlgError for a NaN or inf in svd and eig input, or when an iteration
does not converge), that matrix's results are NaN, as JAX returns, and the
other matrices of the stack are computed as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np


def eigen_kernels(xp: ModuleType) -> dict[str, Any]:
    """The spectral kernels for array module `xp`."""
    linalg = xp.linalg
    failure = getattr(linalg, "LinAlgError", np.linalg.LinAlgError)

    def guarded(fn: Callable[[Any], list], x) -> list:
        try:
            return fn(x)
        except failure:
            return _nan_where_lapack_fails(xp, fn, x, failure)

    def svd(x, *, full_matrices: bool, compute_uv: bool):
        if not compute_uv:
            return guarded(lambda a: [linalg.svd(a, compute_uv=False)], x)

        def run(a):
            u, s, vh = linalg.svd(a, full_matrices=full_matrices, compute_uv=True)
            return [s, u, vh]

        return guarded(run, x)

    def eigh(x, *, lower: bool, eigvals_only: bool):
        uplo = "L" if lower else "U"
        if eigvals_only:
            return guarded(lambda a: [linalg.eigvalsh(a, UPLO=uplo)], x)

        def run(a):
            w, v = linalg.eigh(a, UPLO=uplo)
            return [v, w]

        return guarded(run, x)

    def eig(x, *, compute_left_eigenvectors: bool, compute_right_eigenvectors: bool):
        # NumPy returns real arrays when every eigenvalue of a real matrix is real; ember's result
        # dtype does not depend on values (JAX's rule): always complex.
        cdtype = np.result_type(x.dtype, np.complex64)
        if not (compute_left_eigenvectors or compute_right_eigenvectors):
            return guarded(lambda a: [linalg.eigvals(a).astype(cdtype, copy=False)], x)

        def run(a):
            w, vr = linalg.eig(a)
            w, vr = w.astype(cdtype, copy=False), vr.astype(cdtype, copy=False)
            out = [w]
            if compute_left_eigenvectors:
                out.append(_left_eigenvectors(xp, vr))
            if compute_right_eigenvectors:
                out.append(vr)
            return out

        return guarded(run, x)

    return {"svd": svd, "eigh": eigh, "eig": eig}


def _left_eigenvectors(xp: ModuleType, vr):
    """The left eigenvectors (y^H A = w y^H) from the right ones: the rows of inv(vr), conjugated,
    as columns normalised as LAPACK's geev does (unit norm, largest component real and positive)."""
    vl = xp.conj(xp.swapaxes(xp.linalg.inv(vr), -1, -2))
    vl = vl / xp.linalg.norm(vl, axis=-2, keepdims=True)
    big = xp.take_along_axis(vl, xp.argmax(xp.abs(vl), axis=-2)[..., None, :], axis=-2)
    phase = xp.conj(big) / xp.abs(big)
    return vl * phase


def _nan_where_lapack_fails(xp: ModuleType, fn: Callable[[Any], list], x, failure) -> list:
    """`fn` on every matrix of the stack `x`, with NaN results for those LAPACK cannot handle."""
    stack = x.reshape(-1, *x.shape[-2:])
    bad = ~xp.isfinite(stack).all(axis=(-2, -1))
    clean = xp.where(bad[:, None, None], xp.zeros((), x.dtype), stack)
    try:
        outs = fn(clean)
    except failure:  # a finite matrix LAPACK does not converge on: find it, one matrix at a time
        for i in range(stack.shape[0]):
            try:
                fn(clean[i])
            except failure:
                bad[i] = True
        outs = fn(xp.where(bad[:, None, None], xp.zeros((), x.dtype), stack))
    result = []
    for out in outs:
        out = xp.array(out)
        mask = bad.reshape(bad.shape + (1,) * (out.ndim - 1))
        result.append(xp.where(mask, xp.asarray(np.nan, dtype=out.dtype), out).reshape(*x.shape[:-2], *out.shape[1:]))
    return result
