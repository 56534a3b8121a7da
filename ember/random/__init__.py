"""ember.random: explicit, splittable, counter-based random numbers (JAX's ``jax.random``).

A key is a uint32 array of shape (2,) (JAX's raw key). Every function is a
pure function of its key: the same key gives the same numbers, on every
backend and under every transform, and never the numbers of a different key.
Make keys with `key`, and new ones with `split` or `fold_in`; do not reuse a
key for two different draws.

>>> import ember.random as er
>>> k = er.key(0)
>>> k_init, k_data = er.split(k)
>>> er.normal(k_init, (2, 3)).shape
(2, 3)

Everything is built on one primitive, ``threefry2x32`` (Threefry-2x32, 20
rounds), with the bit layouts of JAX's threefry implementation, and every
sampler follows JAX's algorithm, so a key gives JAX's numbers: uniform,
normal, truncated_normal, bernoulli, randint, categorical, gumbel, choice,
permutation; exponential, laplace, logistic, cauchy, pareto, lognormal,
weibull_min, rayleigh, wald, triangular, maxwell, double_sided_maxwell,
rademacher; the gamma family (gamma, loggamma, beta, dirichlet, chisquare, t,
f, generalized_normal), differentiable in its parameters through the implicit
reparameterisation gradient; poisson, binomial, geometric; and
multivariate_normal, orthogonal and ball.
"""

from ember.random._continuous import (
    cauchy,
    double_sided_maxwell,
    exponential,
    laplace,
    logistic,
    lognormal,
    maxwell,
    pareto,
    rademacher,
    rayleigh,
    triangular,
    wald,
    weibull_min,
)
from ember.random._distributions import (
    bernoulli,
    categorical,
    gumbel,
    normal,
    randint,
    truncated_normal,
    uniform,
)
from ember.random._discrete import binomial, geometric, poisson
from ember.random._gamma import beta, chisquare, dirichlet, f, gamma, generalized_normal, loggamma, t
from ember.random._keys import PRNGKey, bits, fold_in, key, split, threefry2x32
from ember.random._multivariate import ball, multivariate_normal, orthogonal
from ember.random._sampling import choice, permutation

__all__ = [
    "PRNGKey", "bernoulli", "bits", "categorical", "choice", "fold_in", "gumbel", "key", "normal", "permutation",
    "randint", "split", "threefry2x32", "truncated_normal", "uniform",
    # continuous
    "beta", "cauchy", "chisquare", "dirichlet", "double_sided_maxwell", "exponential", "f", "gamma",
    "generalized_normal", "laplace", "loggamma", "logistic", "lognormal", "maxwell", "pareto", "rademacher",
    "rayleigh", "t", "triangular", "wald", "weibull_min",
    # discrete and multivariate
    "ball", "binomial", "geometric", "multivariate_normal", "orthogonal", "poisson",
]  # fmt: skip
