"""lax.linalg's spectral decompositions: svd, eigh, eig (one primitive each, as jax.lax.linalg).

No promotion: operands are float32, float64, complex64 or complex128. Leading
axes are a batch. `ember.numpy.linalg` builds NumPy's functions on these.
"""

from __future__ import annotations

import numpy as np

from ember.core.array import Array, wrap
from ember.core.primitives import eigen as eg
from ember.core.primitives import elementwise as ew
from ember.errors import InvalidArgumentError
from ember.lax._convert import operands

__all__ = ["eig", "eigh", "svd", "symmetrize"]

ArrayLike = Array | float | int | bool | complex


def _one(op: str, x) -> Array:
    return operands(op, (x,))[0]


def _unsupported(op: str, **options) -> None:
    for name, value in options.items():
        if value is not None:
            raise InvalidArgumentError(f"{op}: {name}={value!r} is not supported by ember; pass {name}=None")


def symmetrize(x: ArrayLike) -> Array:
    """(x + x^H) / 2 over the last two axes: the Hermitian part of a (stack of) square matrices.

    Args:
      x: an array of rank >= 2 (its last two axes square).

    Returns:
      The Hermitian part of `x`, same shape and dtype.

    >>> lax.linalg.symmetrize(enp.asarray([[1.0, 2.0], [0.0, 1.0]])).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    x = _one("symmetrize", x)
    eg._check_matrix("symmetrize", x.aval, square=True)
    half_ = wrap(np.asarray(0.5, dtype=x.dtype), x.weak_type)  # weak like x, as JAX's division by a Python 2
    half = ew.mul_p.bind(ew.add_p.bind(x, eg._H(x)), half_)
    return half


def svd(x: ArrayLike, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None) -> Array | tuple[Array, Array, Array]:  # fmt: skip
    """Singular value decomposition ``x = u @ diag(s) @ vh`` of the last two axes (JAX's lax.linalg.svd).

    Args:
      x: float32/float64/complex64/complex128 array of shape (..., m, n).
      full_matrices: u is (..., m, m) and vh (..., n, n); else (..., m, k) and (..., k, n), k = min(m, n).
      compute_uv: return (u, s, vh); else only s.
      subset_by_index, algorithm: JAX's options, not supported (must be None).

    Returns:
      ``(u, s, vh)``, or ``s`` without `compute_uv`; s is real, descending, of shape (..., k).
      Differentiable (with full_matrices=False, or a square matrix, when u and vh are used).

    >>> [round(v, 4) for v in lax.linalg.svd(enp.asarray([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()]
    [4.0, 3.0]
    """
    _unsupported("svd", subset_by_index=subset_by_index, algorithm=algorithm)
    out = eg.svd_p.bind(_one("svd", x), full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return out[0]
    s, u, vh = out
    return u, s, vh


def eigh(x: ArrayLike, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None) -> tuple[Array, Array]:  # fmt: skip
    """Eigendecomposition of Hermitian (real symmetric) matrices, as JAX's lax.linalg.eigh.

    Args:
      x: float32/float64/complex64/complex128 array of shape (..., n, n).
      lower: read the lower triangle (else the upper one); used when `symmetrize_input` is off.
      symmetrize_input: use the Hermitian part (x + x^H) / 2 (so its derivative sees both triangles).
      sort_eigenvalues: eigenvalues are always in ascending order (must be True).
      subset_by_index: not supported (must be None).

    Returns:
      ``(v, w)``, in JAX's order: the eigenvectors first (the columns of v, (..., n, n)), then the
      eigenvalues w, real and ascending, (..., n); ``x @ v == v * w[..., None, :]``.

    >>> v, w = lax.linalg.eigh(enp.asarray([[2.0, 1.0], [1.0, 2.0]]))
    >>> [round(e, 4) for e in w.tolist()]
    [1.0, 3.0]
    """
    _unsupported("eigh", subset_by_index=subset_by_index)
    if not sort_eigenvalues:
        raise InvalidArgumentError(
            "eigh: eigenvalues always come sorted in ember (ascending); pass sort_eigenvalues=True"
        )
    x = _one("eigh", x)
    eg._check_matrix("eigh", x.aval, square=True)
    if symmetrize_input:
        x = symmetrize(x)
    v, w = eg.eigh_p.bind(x, lower=bool(lower), eigvals_only=False)
    return v, w


def eig(x: ArrayLike, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        use_magma=None) -> list[Array]:  # fmt: skip
    """Eigendecomposition of general square matrices, as JAX's lax.linalg.eig. Forward only.

    Differentiating it raises TransformError: for Hermitian (real symmetric) input use `eigh`.

    Args:
      x: float32/float64/complex64/complex128 array of shape (..., n, n).
      compute_left_eigenvectors: also return vl, whose columns satisfy ``vl^H x = w vl^H`` (NumPy has no
        left eigenvectors: ember takes them from the inverse of vr, so they are inaccurate for nearly
        defective matrices, whose right eigenvectors are nearly dependent).
      compute_right_eigenvectors: also return vr, whose columns satisfy ``x vr = vr w``.
      use_magma: JAX's GPU option, not supported (must be None).

    Returns:
      ``[w, vl, vr]`` (those asked for, in that order), complex (complex64 for float32 input).
      Eigenvalues are in LAPACK's order (not sorted); eigenvectors have unit norm.

    >>> w = lax.linalg.eig(enp.asarray([[0.0, 1.0], [-1.0, 0.0]]), compute_left_eigenvectors=False,
    ...                    compute_right_eigenvectors=False)[0]
    >>> sorted(w.tolist(), key=lambda z: z.imag)
    [-1j, 1j]
    """
    _unsupported("eig", use_magma=use_magma)
    return eg.eig_p.bind(_one("eig", x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                         compute_right_eigenvectors=bool(compute_right_eigenvectors))  # fmt: skip
