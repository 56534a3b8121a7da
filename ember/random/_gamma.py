"""The gamma family: gamma, loggamma and the samplers built on them (beta, dirichlet, chisquare, t, f,
generalized_normal).

Gamma draws follow JAX's algorithm, so a key gives JAX's numbers (up to the
last bits of erf_inv): the key is split into one key per element, and each
element runs Marsaglia and Tsang's rejection sampler (2000) in a
`lax.while_loop`, mapped over the elements with `vmap`. The loop is exact:
there is no cap on the number of rounds, and each round accepts with
probability above 0.95 (for every shape parameter), so the expected number
of rounds is below 1.06 and the chance that some element of a million needs
more than 10 is below 1e6 * 0.05**10 < 1e-6. A vmapped loop runs every
element until the last one accepts, so the first round runs over all
elements and only the few that need more run the loop (see `_accepted_v`):
the same bits, several times faster for large draws.

Gradients: the samples are reparameterised, d sample / d a being the
implicit gradient ``-(dF/da) / pdf`` of the gamma CDF F at the sample
(`lax.random_gamma_grad`, as in JAX), so `grad` flows through gamma,
loggamma and everything built on them. They differentiate once (as in JAX).
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.primitives.special import random_gamma_grad_p
from ember.errors import InvalidArgumentError, ShapeError
from ember import numpy as enp
from ember.lax import _elementwise as ew
from ember.lax import _structural as st
from ember.lax.control_flow import while_loop
from ember.random._continuous import (
    _rademacher,
    _standard_exponential,
    checked_args,
    result_shape,
    uniform_open,
)
from ember.random._discrete import _any
from ember.random._distributions import ArrayLike, _broadcast, _normal_real, _param, prepare
from ember.random._keys import KeyArray, Shape, canonical_shape, const, split
from ember.transforms.custom import custom_jvp
from ember.transforms.jit import jit
from ember.transforms.vmap import vmap

__all__ = ["beta", "chisquare", "dirichlet", "f", "gamma", "generalized_normal", "loggamma", "t"]


# --- one element: Marsaglia-Tsang ------------------------------------------------------------------


def _constants(alpha: Array) -> tuple[Array, Array, Array]:
    """Whether alpha >= 1, and Marsaglia-Tsang's d and c (alpha < 1 draws Gamma(alpha + 1), boosted after)."""
    dtype = alpha.dtype
    boost_mask = ew.ge(alpha, const(1.0, dtype))
    d = ew.sub(ew.select(boost_mask, alpha, ew.add(alpha, const(1.0, dtype))), const(1.0 / 3.0, dtype))
    return boost_mask, d, ew.div(const(1.0 / 3.0, dtype), ew.sqrt(d))


def _rejected(d: Array, x2: Array, v: Array, u: Array) -> Array:
    # Accept when u < 1 - 0.0331 x^4 (the squeeze) or log u < x^2/2 + d (1 - v + log v).
    one = const(1.0, d.dtype)
    squeeze = ew.ge(u, ew.sub(one, ew.mul(const(0.0331, d.dtype), ew.mul(x2, x2))))
    exact = ew.ge(ew.log(u), ew.add(ew.mul(x2, 0.5), ew.mul(d, ew.add(ew.sub(one, v), ew.log(v)))))
    return ew.bitwise_and(squeeze, exact)


def _next_normal(k: Array, c: Array) -> tuple[Array, Array, Array]:
    k, sub = split(k)
    x = _normal_real("gamma", sub, (), c.dtype)
    return k, x, ew.add(const(1.0, c.dtype), ew.mul(x, c))


def _propose(k: Array, c: Array, redraw: bool) -> tuple[Array, Array, Array, Array, Array]:
    """One round of the rejection loop: the next key and a proposal (x^2, v, u).

    v = (1 + c x)^3 must be positive: with `redraw` x is drawn again until 1 + c x > 0, without it the
    round keeps its first draw and the last output says whether that one was positive.
    """
    dtype = c.dtype
    k, x_key, u_key = split(k, 3)
    if redraw:
        cond = lambda s: ew.le(s[2], const(0.0, dtype))  # noqa: E731
        _, x, v = while_loop(cond, lambda s: _next_normal(s[0], c), (x_key, const(0.0, dtype), const(-1.0, dtype)))
    else:
        _, x, v = _next_normal(x_key, c)
    u = uniform_open("gamma", u_key, (), dtype, 0.0)
    return k, ew.mul(x, x), ew.mul(ew.mul(v, v), v), u, ew.gt(v, const(0.0, dtype))


def _initial(dtype: np.dtype) -> tuple[Array, Array, Array]:
    # (x^2, v, u) before the first round: rejected for every finite d, so the loop runs at least once.
    return const(0.0, dtype), const(1.0, dtype), const(2.0, dtype)


def _loop_v(key: Array, d: Array, c: Array) -> Array:
    """The accepted v of one element's rejection loop, as JAX's ``_gamma_one``."""
    state = (key, *_initial(d.dtype))
    _, _, v, _ = while_loop(lambda s: _rejected(d, *s[1:]), lambda s: _propose(s[0], c, True)[:4], state)
    return v


def _first_round(key: Array, d: Array, c: Array) -> tuple[Array, Array]:
    """The v after the loop's first round with its first normal draw, and whether the loop would go on."""
    x2, v, u = _initial(d.dtype)
    enter = _rejected(d, x2, v, u)
    _, x2, v_next, u, positive = _propose(key, c, False)
    again = ew.bitwise_or(ew.bitwise_not(positive), _rejected(d, x2, v_next, u))
    return ew.select(enter, v_next, v), ew.bitwise_and(enter, again)


def _finish(key: Array, v: Array, alpha: Array, log_space: bool) -> Array:
    """The sample d v (or its log), times u**(1/alpha) for alpha < 1."""
    dtype = alpha.dtype
    zero, one = const(0.0, dtype), const(1.0, dtype)
    boost_mask, d, _ = _constants(alpha)
    if log_space:
        log_u = ew.neg(_standard_exponential("gamma", key, (), dtype))
        log_boost = ew.select(ew.bitwise_or(boost_mask, ew.eq(log_u, zero)), zero, ew.div(log_u, alpha))
        return ew.add(ew.add(ew.log(d), ew.log(v)), log_boost)
    u = ew.sub(one, uniform_open("gamma", key, (), dtype, 0.0))
    boost = ew.select(boost_mask, one, ew.pow(u, ew.div(one, alpha)))
    return ew.mul(ew.mul(d, v), boost)


# --- every element ---------------------------------------------------------------------------------


def _accepted_v(keys: Array, d: Array, c: Array, capacity: int) -> Array:
    """The accepted v of every element's loop (keys (n, 2), d and c (n,)), the bits of ``vmap(_loop_v)``.

    Under vmap the loop runs every element until the last one accepts: for a million elements about
    5 rounds and 18 normal draws (threefry and erf_inv) over the whole array, although nearly all
    accept in the first round. So the first round runs over every element, and the few that need
    more (about 6%) run the whole loop again from their key (the same draws, so the same bits),
    `capacity` of them at a time, gathered to the front by a fixed-size `nonzero` (so that it compiles).
    """
    n = d.shape[0]
    v, pending = vmap(_first_round)(keys, d, c)

    def rerun(state):
        v, pending = state
        (idx,) = enp.nonzero(pending, size=capacity, fill_value=n)
        picked = (enp.take(x, idx, axis=0, mode="clip") for x in (keys, d, c))
        v = v.at[idx].set(vmap(_loop_v)(*picked), mode="drop")
        return v, pending.at[idx].set(False, mode="drop")

    v, _ = while_loop(lambda s: _any(s[1]), rerun, (v, pending))
    return v


def _gamma_impl(key: Array, a: Array, log_space: bool) -> Array:
    if a.size == 0:
        return const(np.zeros(a.shape, a.dtype), a.dtype)
    alpha = st.reshape(a, (a.size,))
    # One key per element, split again into the loop's key and the boost's (as JAX).
    loop_keys, boost_keys = vmap(lambda k: tuple(split(k)))(split(key, a.size))
    _, d, c = _constants(alpha)
    # About 6% of the elements need more than one round: reruns of 1/16 of the elements leave room to spare.
    v = _accepted_v(loop_keys, d, c, max(1, -(-a.size // 16)))
    return st.reshape(vmap(lambda k, v, al: _finish(k, v, al, log_space))(boost_keys, v, alpha), a.shape)


def _gamma_grad(sample: Array, a: Array, log_space: bool) -> Array:
    if not log_space:
        return random_gamma_grad_p.bind(a, sample)
    # d log x / da = (dx/da) / x; x = exp(log x) may underflow to 0: use the smallest normal instead.
    x = ew.exp(sample)
    x = ew.select(ew.eq(x, const(0.0, x.dtype)), _broadcast(const(dtypes.finfo(x.dtype).tiny, x.dtype), x.shape), x)
    return ew.div(random_gamma_grad_p.bind(a, x), x)


def _make_sampler(log_space: bool) -> custom_jvp:
    # Compiled once per shape and dtype (as JAX jits its _gamma): eagerly, the nested while loops would
    # otherwise be traced again on every call.
    compiled = jit(lambda key, a: _gamma_impl(key, a, log_space))

    @custom_jvp
    def sample(key: Array, a: Array) -> Array:
        return compiled(key, a)

    @sample.defjvp
    def _jvp(primals, tangents):
        key, a = primals
        out = sample(key, a)
        return out, ew.mul(tangents[1], _gamma_grad(out, a, log_space))

    return sample


_SAMPLERS = {False: _make_sampler(False), True: _make_sampler(True)}


def _gamma(key: Array, a: Array, shape: tuple[int, ...], log_space: bool) -> Array:
    """Gamma(a) (or log-gamma) draws of `shape` from a checked key and a parameter of the result dtype."""
    return _SAMPLERS[log_space](key, _broadcast(a, shape))


# --- public samplers ----------------------------------------------------------------------------------


def gamma(key: KeyArray, a: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Standard gamma samples (density x^(a-1) e^-x / Gamma(a) on x >= 0), differentiable in `a`.

    Divide by a rate (or multiply by a scale) for other gamma distributions.
    Marsaglia and Tsang's rejection sampler, as in JAX; its gradient in `a` is
    the implicit reparameterisation gradient (`lax.random_gamma_grad`). An `a`
    that is not positive gives NaN (as in JAX), a = 0 gives 0.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      a: the shape parameter (> 0), a scalar or an array.
      shape: the result's shape (default: `a`'s shape); `a` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> x = ember.random.gamma(ember.random.key(0), 2.0, (2000,))
    >>> round(float(x.mean()), 1)
    2.0
    >>> g = ember.grad(lambda a: ember.random.gamma(ember.random.key(0), a))(2.0)
    >>> bool(g > 0)
    True
    """
    key, dtype, shape, a = checked_args("gamma", key, dtype, shape, a)
    return _gamma(key, a, shape, False)


def loggamma(key: KeyArray, a: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """The logs of standard gamma samples, computed in log space (exact for small `a`, where gamma underflows).

    ``exp(loggamma(k, a))`` equals ``gamma(k, a)`` up to rounding, as in JAX.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      a: the shape parameter (> 0), a scalar or an array.
      shape: the result's shape (default: `a`'s shape); `a` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> bool(ember.random.loggamma(ember.random.key(0), 1e-3) < -50)
    True
    """
    key, dtype, shape, a = checked_args("loggamma", key, dtype, shape, a)
    return _gamma(key, a, shape, True)


def beta(key: KeyArray, a: ArrayLike, b: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Beta(a, b) samples: G_a / (G_a + G_b) for independent gamma draws (taken in log space).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      a: the first shape parameter (> 0), a scalar or an array.
      b: the second shape parameter (> 0), a scalar or an array.
      shape: the result's shape (default: the broadcast shape of `a` and `b`).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype` with values in [0, 1].

    >>> x = ember.random.beta(ember.random.key(0), 2.0, 5.0, (1000,))
    >>> bool((x >= 0).all() and (x <= 1).all())
    True
    """
    key, dtype, shape, a, b = checked_args("beta", key, dtype, shape, a, b)
    key_a, key_b = split(key)
    log_a = _gamma(key_a, a, shape, True)
    log_b = _gamma(key_b, b, shape, True)
    # Scale both by the larger so that the exponentials neither underflow to 0/0 nor overflow.
    top = ew.max(log_a, log_b)
    ga, gb = ew.exp(ew.sub(log_a, top)), ew.exp(ew.sub(log_b, top))
    return ew.div(ga, ew.add(ga, gb))


def dirichlet(key: KeyArray, alpha: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Dirichlet(alpha) samples: normalised gamma draws (a softmax of log-gamma draws) along the last axis.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      alpha: the concentrations (> 0), an array of shape ``(..., n)``.
      shape: the batch shape of the result (default: ``alpha.shape[:-1]``); it must
        broadcast with ``alpha.shape[:-1]``.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of ``shape + (n,)`` and `dtype` whose last axis sums to 1.

    >>> x = ember.random.dirichlet(ember.random.key(0), enp.asarray([1.0, 2.0, 3.0]), (4,))
    >>> x.shape, bool(abs(float(x.sum(-1)[0]) - 1) < 1e-5)
    ((4, 3), True)
    """
    key, dtype = prepare("dirichlet", key, dtype)
    alpha = _param("dirichlet", alpha, dtype)
    if alpha.ndim < 1:
        raise ShapeError(
            f"ember.random.dirichlet: alpha must have at least one axis (the categories), got shape {alpha.shape} "
            f"and dtype {alpha.dtype}; pass a vector, e.g. enp.asarray([1.0, 1.0, 1.0])"
        )
    batch = result_shape("dirichlet", shape, alpha.shape[:-1])
    full = (*batch, alpha.shape[-1])
    logs = _gamma(key, alpha, full, True)
    axis = len(batch)
    top = st.broadcast_in_dim(st.reduce_max(logs, (axis,)), full, tuple(range(axis)))
    # The max only guards against overflow; holding it fixed keeps the gradient exact.
    e = ew.exp(ew.sub(logs, ew.stop_gradient(top)))
    return ew.div(e, st.broadcast_in_dim(st.reduce_sum(e, (axis,)), full, tuple(range(axis))))


def chisquare(key: KeyArray, df: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Chi-square samples with `df` degrees of freedom: 2 Gamma(df / 2).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      df: the degrees of freedom (> 0), a scalar or an array.
      shape: the result's shape (default: `df`'s shape); `df` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> x = ember.random.chisquare(ember.random.key(0), 3.0, (2000,))
    >>> round(float(x.mean()))
    3
    """
    key, dtype, shape, df = checked_args("chisquare", key, dtype, shape, df)
    return _chisquare(key, df, shape)


def _chisquare(key: Array, df: Array, shape: tuple[int, ...]) -> Array:
    return ew.mul(ew.exp(_gamma(key, ew.div(df, 2.0), shape, True)), 2.0)


def t(key: KeyArray, df: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Student's t samples with `df` degrees of freedom: N sqrt((df/2) / G) with G ~ Gamma(df / 2).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      df: the degrees of freedom (> 0), a scalar or an array.
      shape: the result's shape (default: `df`'s shape); `df` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.t(ember.random.key(0), 5.0, (3,)).shape
    (3,)
    """
    key, dtype, shape, df = checked_args("t", key, dtype, shape, df)
    key_n, key_g = split(key)
    n = _normal_real("t", key_n, shape, dtype)
    half = _broadcast(ew.div(df, 2.0), shape)
    g = _gamma(key_g, half, shape, False)
    return ew.mul(n, ew.sqrt(ew.div(half, g)))


def f(key: KeyArray, dfnum: ArrayLike, dfden: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """F-distribution samples: (X / dfnum) / (Y / dfden) for independent chi-squares X, Y.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      dfnum: the numerator's degrees of freedom (> 0), a scalar or an array.
      dfden: the denominator's degrees of freedom (> 0), a scalar or an array.
      shape: the result's shape (default: the parameters' broadcast shape).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> bool((ember.random.f(ember.random.key(0), 3.0, 7.0, (10,)) > 0).all())
    True
    """
    key, dtype, shape, num, den = checked_args("f", key, dtype, shape, dfnum, dfden)
    key_den, key_num = split(key)
    x = ew.div(_chisquare(key_num, num, shape), _broadcast(num, shape))
    y = ew.div(_chisquare(key_den, den, shape), _broadcast(den, shape))
    return ew.div(x, y)


def _positive_power(fn: str, p) -> float:
    """A concrete exponent p > 0 (the generalized normal and the Lp ball need one)."""
    value = p
    if isinstance(p, Array) or isinstance(p, np.ndarray):
        arr = p if isinstance(p, Array) else from_host(p, f"ember.random.{fn}")
        if arr.shape != ():
            raise ShapeError(f"ember.random.{fn}: p must be a scalar, got shape {arr.shape} and dtype {arr.dtype}")
        value = float(np.asarray(arr))  # a traced p raises ConcretizationError, as in JAX
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"ember.random.{fn}: p must be a positive number, got {type(p).__name__} {p!r}")
    if not value > 0:
        raise InvalidArgumentError(f"ember.random.{fn}: p must be positive (the exponent of |x|^p), got p={value}")
    return float(value)


def generalized_normal(key: KeyArray, p: float, shape: int | Shape = (), dtype=None) -> Array:
    """Generalized normal samples (density proportional to exp(-|x|^p)): a random sign times G**(1/p), G ~ Gamma(1/p).

    p = 2 is a normal with variance 1/2, p = 1 a Laplace.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      p: the exponent (> 0), a concrete number.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.generalized_normal(ember.random.key(0), 1.5, (4,)).shape
    (4,)
    """
    key, dtype = prepare("generalized_normal", key, dtype)
    p = _positive_power("generalized_normal", p)
    return _generalized_normal(key, p, canonical_shape("generalized_normal", shape), dtype)


def _generalized_normal(key: Array, p: float, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    k_gamma, k_sign = split(key)
    g = _gamma(k_gamma, const(1.0 / p, dtype), shape, False)
    return ew.mul(_rademacher(k_sign, shape, dtype), ew.pow(g, const(1.0 / p, dtype)))
