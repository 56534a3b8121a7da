"""Spectral linear algebra, eager, float64: eigh of 8 x 256 x 256 symmetric matrices, and its gradient.

* ``eigh_8x256``: eigenvalues and eigenvectors. Every implementation returns ``(w, v * v[0])``, which does
  not depend on the sign LAPACK gives each eigenvector, so the outputs can be compared. The issue's
  target is within 1.2x of NumPy (LAPACK's syevd is the limit; ember's eigh is one primitive calling
  NumPy's, after symmetrizing its input as JAX does).
* ``grad_eigh_8x256``: the gradient of ``sum(C * w) + sum(W * v**2)`` (sign-free in v) with respect to A,
  through the symmetrized input (A + A^T) / 2 in every implementation. The hand-written NumPy baseline
  is the closed form ``sym(V (diag(C) + F o V^T Vbar) V^T)`` with ``F[i, j] = 1 / (w[j] - w[i])``. The
  issue's target is a gradient within 3x of the forward; the ratio shown is to the hand-written gradient.

ember and JAX run under x64 (a context manager around each call); torch in float64.
"""

from __future__ import annotations

import numpy as np

from benchmarks.registry import workload

BATCH, N = 8, 256


def _inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((BATCH, N, N))
    a = (a + np.swapaxes(a, -1, -2)) / 2
    c = rng.standard_normal((BATCH, N))
    w = rng.standard_normal((BATCH, N, N))
    return a, c, w


def _numpy_forward(a):
    w, v = np.linalg.eigh(a)
    return w, v * v[..., :1, :]


def _numpy_grad(a, c, wt):
    w, v = np.linalg.eigh((a + np.swapaxes(a, -1, -2)) / 2)
    vbar = 2 * wt * v
    gaps = w[..., None, :] - w[..., :, None]
    eye = np.eye(N, dtype=bool)
    f = np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, gaps))
    inner = f * (np.swapaxes(v, -1, -2) @ vbar)
    inner[..., np.arange(N), np.arange(N)] += c
    abar = v @ inner @ np.swapaxes(v, -1, -2)
    return (abar + np.swapaxes(abar, -1, -2)) / 2


def _register(gradient: bool) -> None:
    title = (
        "grad of sum(C * w) + sum(W * v**2), (w, v) = eigh(A)" if gradient else "eigh(A)"
    ) + f", f64[{BATCH},{N},{N}]"

    @workload(f"{'grad_' if gradient else ''}eigh_{BATCH}x{N}", family="linalg", target=3.0 if gradient else 1.2,
              rtol=1e-6, atol=1e-8, description=title)  # fmt: skip
    def _(env):
        import ember

        enp = env.enp
        a, c, wt = _inputs()
        with ember.config.x64(True):
            ea, ec, ew = env.put("ember", (a, c, wt))

        def loss(m):
            w, v = enp.linalg.eigh(m)
            return enp.sum(ec * w) + enp.sum(ew * v * v)

        grad = ember.grad(loss)

        def run_ember():
            with ember.config.x64(True):
                if gradient:
                    return grad(ea)
                w, v = enp.linalg.eigh(ea)
                return w, v * v[..., :1, :]

        impls = {"numpy": (lambda: _numpy_grad(a, c, wt)) if gradient else (lambda: _numpy_forward(a)),
                 "ember": run_ember}  # fmt: skip
        if env.torch is not None:
            torch = env.torch
            ta, tc, tw = env.put("torch", (a, c, wt))

            def run_torch():
                if not gradient:
                    w, v = torch.linalg.eigh(ta)
                    return w, v * v[..., :1, :]
                m = ta.clone().requires_grad_(True)
                w, v = torch.linalg.eigh((m + m.mT) / 2)
                return torch.autograd.grad((tc * w).sum() + (tw * v * v).sum(), m)[0]

            impls["torch"] = run_torch
        if env.jnp is not None:
            jax, jnp = env.jax, env.jnp
            try:  # JAX >= 0.7: jax.enable_x64(True); before: jax.experimental.enable_x64()
                enable_x64 = lambda: jax.enable_x64(True)
                enable_x64()
            except (AttributeError, TypeError):
                from jax.experimental import enable_x64

            def jloss(m):
                w, v = jnp.linalg.eigh(m)
                return jnp.sum(jc * w) + jnp.sum(jw * v * v)

            def jforward(m):
                w, v = jnp.linalg.eigh(m)
                return w, v * v[..., :1, :]

            with enable_x64():
                ja, jc, jw = env.put("jax", (a, c, wt))
                jitted = jax.jit(jax.grad(jloss) if gradient else jforward)

            def run_jax():
                with enable_x64():
                    return jax.block_until_ready(jitted(ja))

            impls["jax"] = run_jax
        return impls


_register(gradient=False)
_register(gradient=True)
