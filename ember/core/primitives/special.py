"""Special functions: error functions, gamma family, incomplete gamma, zeta."""

from __future__ import annotations

import math

from ember.core.ad import defjvp
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import elementwise as _ew
from ember.core.primitives._rules import FLOATING, Elementwise
from ember.errors import EmberError

erf_p = Elementwise("erf", FLOATING)
erfc_p = Elementwise("erfc", FLOATING)
erf_inv_p = Elementwise("erf_inv", FLOATING)
lgamma_p = Elementwise("lgamma", FLOATING)
digamma_p = Elementwise("digamma", FLOATING)
# polygamma(m, x): the m-th derivative of digamma; m holds integer values in x's dtype.
polygamma_p = Elementwise("polygamma", FLOATING)
# zeta(s, q): the Hurwitz zeta function sum_k (q + k)^-s.
zeta_p = Elementwise("zeta", FLOATING)
# igamma(a, x), igammac(a, x): regularized lower and upper incomplete gamma functions.
igamma_p = Elementwise("igamma", FLOATING)
igammac_p = Elementwise("igammac", FLOATING)
# random_gamma_grad(a, x): dx/da of a Gamma(a) sample x held at its quantile (ember.random.gamma's jvp).
random_gamma_grad_p = Elementwise("random_gamma_grad", FLOATING, keeps_weak=False)  # strong, as JAX's


# --- differentiation rules ------------------------------------------------------------------
# jvp rules as in elementwise.py: one function per operand, ``(t, ans, *operands) -> contribution``
# (core/ad.py sums them and broadcasts to the output), written with primitives so that they
# compose with every transform. The conventions are JAX's (jax/_src/lax/special.py). Derivatives
# with respect to an order or shape parameter that have no primitive here (polygamma's m, zeta's
# s, igamma's and igammac's a) raise an EmberError naming the primitive and the operand, rather
# than returning a wrong zero; the other operand differentiates as usual.

_neg, _add, _sub, _mul, _const = _ew.neg_p.bind, _ew.add_p.bind, _ew.sub_p.bind, _ew.mul_p.bind, _ew._const


def _unsupported(primitive: str, operand: str, other: str, why: str):
    """The jvp rule of an operand (the first) whose derivative is not provided: it raises. Rules run
    only for operands with a nonzero tangent, so differentiating with respect to `other` works."""

    def rule(t, ans, *operands):
        raise EmberError(
            f"{primitive}: differentiation with respect to its first operand {operand} is not supported ({why}); "
            f"differentiate with respect to {other} only, holding {operand} fixed"
        )

    return rule


def _exp_neg_square(x):
    return _ew.exp_p.bind(_neg(_mul(x, x)))


def _xlogy(x, y):
    """x * log(y), taken as 0 where x == 0 (so that y^0 = 1 at y == 0)."""
    safe_y = _ew._bcast_select(_bw.eq_p.bind(x, _const(x, 0)), y, _const(y, 1))
    return _mul(x, _ew.log_p.bind(safe_y))


def _igamma_dx(t, ans, a, x):
    # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a)
    return _mul(t, _ew.exp_p.bind(_sub(_sub(_xlogy(_sub(a, _const(a, 1)), x), x), lgamma_p.bind(a))))


_NO_GRAD_A = "its derivative in a needs the igamma_grad_a series, which has no primitive here"
_ORDER = "the order m takes integer values only"

defjvp(erf_p, lambda t, ans, x: _mul(t, _mul(_const(x, 2 / math.sqrt(math.pi)), _exp_neg_square(x))))
defjvp(erfc_p, lambda t, ans, x: _mul(t, _mul(_const(x, -2 / math.sqrt(math.pi)), _exp_neg_square(x))))
defjvp(erf_inv_p, lambda t, ans, x: _mul(t, _mul(_const(x, math.sqrt(math.pi) / 2), _ew.exp_p.bind(_mul(ans, ans)))))
defjvp(lgamma_p, lambda t, ans, x: _mul(t, digamma_p.bind(x)))
defjvp(digamma_p, lambda t, ans, x: _mul(t, polygamma_p.bind(_const(x, 1), x)))
defjvp(polygamma_p, _unsupported("polygamma", "m", "x", _ORDER),
       lambda t, ans, m, x: _mul(t, polygamma_p.bind(_add(m, _const(m, 1)), x)))  # fmt: skip
# d/dq zeta(s, q) = -s zeta(s + 1, q)
defjvp(zeta_p, _unsupported("zeta", "s", "q", "it is a series in log(q + k) with no primitive here"),
       lambda t, ans, s, q: _neg(_mul(t, _mul(s, zeta_p.bind(_add(s, _const(s, 1)), q)))))  # fmt: skip
defjvp(igamma_p, _unsupported("igamma", "a", "x", _NO_GRAD_A), _igamma_dx)
defjvp(igammac_p, _unsupported("igammac", "a", "x", _NO_GRAD_A), lambda t, ans, a, x: _neg(_igamma_dx(t, ans, a, x)))


def _random_gamma_grad_jvp(t, ans, a, x):
    raise EmberError(
        "random_gamma_grad: has no derivative (as in JAX), so ember.random.gamma and the samplers built on it "
        "(loggamma, beta, dirichlet, chisquare, t, f, generalized_normal, ball) differentiate once in their "
        "parameters, not twice; for higher derivatives hold the sample fixed with lax.stop_gradient"
    )


defjvp(random_gamma_grad_p, _random_gamma_grad_jvp, _random_gamma_grad_jvp)
