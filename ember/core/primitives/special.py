"""Special functions: error functions, gamma family, incomplete gamma, zeta."""

from __future__ import annotations

from ember.core.primitives._rules import FLOATING, Elementwise

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
