"""Discrete distributions: poisson, binomial and geometric (JAX's algorithms).

The samplers run in a `lax.while_loop` over the whole array, as JAX's: each
round draws for every element, and the loop ends when every element is done.
The loops are exact (no cap on the rounds, so no failure probability), batch
under `vmap` (per-example keys: a masked loop until every example is done)
and compile under `jit` with the same bits as eagerly. The rounds are few
whatever the parameters: Knuth's Poisson sampler (lam < 10) needs lam + 1
rounds on average and binomial inversion (n * min(p, 1-p) <= 10) about
n * min(p, 1-p) + 1; Hormann's PTRS (lam >= 10) and BTRS (binomial,
n * min(p, 1-p) > 10) accept each element with probability at least 0.7 per
round (measured: PTRS 0.75 at lam = 10 rising to 0.89, BTRS 0.72 just above
the switch rising to 0.88), so n elements are all done after about
log(n) / log(1/0.3) rounds, e.g. 12 for a million.

Where the samples allow, less than JAX is computed (the same bits): of the
two samplers of each distribution only those some element needs run
(`_either`), and the counting loops (Knuth, inversion) run their late rounds
on the pending elements only (`_count_draws`). The rejection loops cannot:
as in JAX an element takes the candidate of the last round that accepted it,
so every element draws until the last one is done.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.errors import DTypeError
from ember import numpy as enp
from ember.lax import _elementwise as ew
from ember.lax import _structural as st
from ember.lax._convert import convert
from ember.lax.control_flow import cond, while_loop
from ember.numpy._core import full_for
from ember.transforms.jit import jit
from ember.random._continuous import result_shape, uniform_open
from ember.random._distributions import ArrayLike, _broadcast, _param, prepare
from ember.random._keys import KeyArray, Shape, check_key, const, split

__all__ = ["binomial", "geometric", "poisson"]


def _int_dtype(fn: str, dtype) -> np.dtype:
    dtype = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype, f"ember.random.{fn}")
    if not dtypes.is_integer(dtype):
        raise DTypeError(f"ember.random.{fn}: dtype must be an integer dtype, got {dtype}; {fn} draws counts")
    return dtype


def _real_param(fn: str, x, name: str) -> Array:
    x = x if isinstance(x, Array) else from_host(x, f"ember.random.{fn}")
    if dtypes.is_complex(x.dtype) or x.dtype == dtypes.bool_:
        raise DTypeError(f"ember.random.{fn}: {name} must be real, got shape {x.shape} and dtype {x.dtype}")
    return x


def _any(x: Array) -> Array:
    return st.reduce_or(x, tuple(range(x.ndim))) if x.ndim else x


def _either(pred: Array, on_true, on_false, dtype: np.dtype, *operands: Array) -> Array:
    """``select(pred, on_true(*operands), on_false(*operands))``, running each sampler only if some element takes it.

    JAX runs both samplers over every element and selects: the same samples, but poisson(3.0) would run
    PTRS rounds that no element uses. Each sampler has its own cond against zeros, since under vmap a
    cond runs all its branches and a three-way switch (one, the other, both) would run each sampler
    twice. The branches take their inputs as operands: values they closed over would be computed
    outside the cond.
    """
    zeros = lambda *_: const(np.zeros(pred.shape, dtype), dtype)  # noqa: E731
    taken = cond(_any(pred), on_true, zeros, *operands)
    other = cond(_any(ew.bitwise_not(pred)), on_false, zeros, *operands)
    return ew.select(pred, taken, other)


def _transformed_rejection(fn: str, key: Array, like: Array, v_r: Array, propose) -> Array:
    """Hormann's transformed rejection rounds (PTRS and BTRS), until every element has accepted once.

    Each round draws u in [-1/2, 1/2) and v in [0, 1) for every element; a candidate is accepted by
    the quick test (|u| <= 0.43 and v <= v_r) or by `propose(u, v, us)`, which returns the candidates
    and the exact test (us = 1/2 - |u|). As in JAX, an element takes the candidate of the last round
    that accepted it; a NaN parameter counts as accepted from the start.
    """
    dtype = like.dtype

    def body(state):
        k_out, accepted, rng = state
        rng, k0, k1 = split(rng, 3)
        u = ew.sub(uniform_open(fn, k0, like.shape, dtype, 0.0), 0.5)
        v = uniform_open(fn, k1, like.shape, dtype, 0.0)
        us = ew.sub(const(0.5, dtype), ew.abs(u))
        k, exact = propose(u, v, us)
        accept = ew.bitwise_or(ew.bitwise_and(ew.ge(us, 0.07), ew.le(v, v_r)), exact)
        return ew.select(accept, k, k_out), ew.bitwise_or(accepted, accept), rng

    init = (ew.sub(ew.mul(like, 0.0), 1.0), ew.ne(like, like), key)
    k, _, _ = while_loop(lambda s: _any(ew.bitwise_not(s[1])), body, init)
    return k


def _count_draws(fn: str, key: Array, count: Array, total: Array, params: tuple[Array, ...], pending, step,
                 sub_first: bool) -> Array:  # fmt: skip
    """The counts after JAX's counting loop (Knuth's Poisson sampler, binomial inversion).

    Each round splits the key (into the next key and the round's, in `sub_first` order), adds one to
    the count of each element with ``pending(total, *params)`` and sets every total to
    ``step(u, total, *params)`` for a fresh uniform u; the loop ends when no element is pending. An
    element that is done stays done, but JAX's loop draws for every element until the last one is
    done (17 rounds for poisson(3.0) over a million elements, most of them done after 5). So the
    rounds run over every element while more than 1/16 of them are pending, then over the pending
    ones only, gathered by a fixed-size `nonzero` and drawn at their own positions (a position's bits
    depend on the key and the position alone): the same counts.
    """
    shape, n = count.shape, count.size
    capacity = max(1, -(-n // 16))
    count, total = st.reshape(count, (n,)), st.reshape(total, (n,))
    params = tuple(st.reshape(p, (n,)) for p in params)
    one = const(1, count.dtype)

    def round_(count, total, rng, params, going, at=None):
        first, second = split(rng)
        rng, sub = (second, first) if sub_first else (first, second)
        u = uniform_open(fn, sub, (n,), total.dtype, 0.0, at=at)
        return ew.select(going, ew.add(count, one), count), step(u, total, *params), rng

    def many(state):
        return ew.gt(st.reduce_sum(convert(pending(state[1], *params), np.int32), (0,)), const(capacity, np.int32))

    count, total, key = while_loop(many, lambda s: round_(*s, params, pending(s[1], *params)), (count, total, key))
    # The pending elements (at most `capacity`) to the front; the slots past them (idx = n) stay idle.
    (idx,) = enp.nonzero(pending(total, *params), size=capacity, fill_value=n)
    valid = ew.lt(idx, const(n, idx.dtype))
    sub_count, sub_total, *sub_params = (enp.take(x, idx, mode="clip") for x in (count, total, *params))
    at = convert(idx, np.uint32)

    def going(state):
        return ew.bitwise_and(valid, pending(state[1], *sub_params))

    sub_count, _, _ = while_loop(lambda s: _any(going(s)), lambda s: round_(*s, sub_params, going(s), at),
                                 (sub_count, sub_total, key))  # fmt: skip
    return st.reshape(count.at[idx].set(sub_count, mode="drop"), shape)


# --- poisson ------------------------------------------------------------------------------------------


def poisson(key: KeyArray, lam: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Poisson samples with rate `lam` (computed in float32, as in JAX).

    Knuth's multiplication method for lam < 10, Hormann's transformed rejection
    (PTRS, 1993) above, as in JAX, TensorFlow and NumPy. lam = 0 gives 0; a
    negative or NaN lam gives -1 (as in JAX).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      lam: the rate (>= 0), a scalar or an array.
      shape: the result's shape (default: `lam`'s shape); `lam` must broadcast to it.
      dtype: an integer dtype (default int32, int64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> x = ember.random.poisson(ember.random.key(0), 3.0, (2000,))
    >>> x.dtype, round(float(x.mean()))
    (dtype('int32'), 3)
    """
    key = check_key("poisson", key)
    dtype = _int_dtype("poisson", dtype)
    lam = convert(_real_param("poisson", lam, "lam"), dtypes.float32)
    shape = result_shape("poisson", shape, lam.shape)
    lam = _broadcast(lam, shape)
    if lam.size == 0:
        return full_for("poisson", shape, 0, dtype, key, lam)
    return _poisson(key, lam, dtype)


@partial(jit, static_argnums=(2,))  # compiled once per signature: eagerly the loops would be traced on every call
def _poisson(key: Array, lam: Array, dtype: np.dtype) -> Array:
    shape = lam.shape
    use_knuth = ew.bitwise_or(ew.ne(lam, lam), ew.lt(lam, 10.0))
    lam_knuth = ew.select(use_knuth, lam, ew.mul(lam, 0.0))
    lam_reject = ew.select(use_knuth, _broadcast(const(1e5, lam.dtype), shape), lam)
    knuth = lambda k, lam_k, _: _poisson_knuth(k, lam_k, dtype)  # noqa: E731
    reject = lambda k, _, lam_r: _poisson_rejection(k, lam_r, dtype)  # noqa: E731
    out = _either(use_knuth, knuth, reject, dtype, key, lam_knuth, lam_reject)
    return ew.select(ew.eq(lam, 0.0), ew.mul(out, const(0, dtype)), out)


def _poisson_knuth(key: Array, lam: Array, dtype: np.dtype) -> Array:
    # Count uniforms until their product drops below e^-lam.
    zeros = const(np.zeros(lam.shape, dtype), dtype)
    pending = lambda log_prod, lam: ew.gt(log_prod, ew.neg(lam))  # noqa: E731
    step = lambda u, log_prod, _: ew.add(log_prod, ew.log(u))  # noqa: E731
    k = _count_draws("poisson", key, zeros, ew.mul(lam, 0.0), (lam,), pending, step, sub_first=False)
    return ew.sub(k, const(1, dtype))


def _poisson_rejection(key: Array, lam: Array, dtype: np.dtype) -> Array:
    # Hormann (1993), "The transformed rejection method for generating Poisson random variables".
    log_lam = ew.log(lam)
    b = ew.add(ew.mul(ew.sqrt(lam), 2.53), 0.931)
    a = ew.add(ew.mul(b, 0.02483), -0.059)
    inv_alpha = ew.add(ew.div(const(1.1328, lam.dtype), ew.sub(b, 3.4)), 1.1239)
    v_r = ew.sub(const(0.9277, lam.dtype), ew.div(const(3.6224, lam.dtype), ew.sub(b, 2.0)))

    def propose(u, v, us):
        k = ew.floor(ew.add(ew.add(ew.mul(ew.add(ew.div(ew.mul(a, 2.0), us), b), u), lam), 0.43))
        s = ew.log(ew.div(ew.mul(v, inv_alpha), ew.add(ew.div(a, ew.mul(us, us)), b)))
        t = ew.sub(ew.add(ew.neg(lam), ew.mul(k, log_lam)), ew.lgamma(ew.add(k, 1.0)))
        reject = ew.bitwise_or(ew.lt(k, 0.0), ew.bitwise_and(ew.lt(us, 0.013), ew.gt(v, us)))
        return k, ew.bitwise_and(ew.bitwise_not(reject), ew.le(s, t))

    k = _transformed_rejection("poisson", key, lam, v_r, propose)
    return convert(k, dtype)


# --- binomial -----------------------------------------------------------------------------------------

# log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2] for k = 0..9 (Kachitvichyanukul and Schmeiser).
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)  # fmt: skip


def _stirling_tail(k: Array) -> Array:
    # The table below 10, the series 1/12 - 1/(360 m^2) + 1/(1260 m^4) over m = k + 1 above. (JAX evaluates
    # the series at min(k, 9), which makes its BTRS bound slightly off for k > 9.)
    index = convert(ew.clamp(0.0, k, 9.0), np.int32)
    table = enp.take(const(_STIRLING_TAIL, k.dtype), index, mode="clip")
    m = ew.add(k, 1.0)
    m2 = ew.mul(m, m)
    inner = ew.sub(const(1.0 / 360, k.dtype), ew.div(const(1.0 / 1260, k.dtype), m2))
    series = ew.div(ew.sub(const(1.0 / 12, k.dtype), ew.div(inner, m2)), m)
    return ew.select(ew.le(k, 9.0), table, series)


def binomial(key: KeyArray, n: ArrayLike, p: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Binomial samples: the number of successes in `n` trials of probability `p` (as floats, as in JAX).

    Inversion (summing geometric waiting times) where n * min(p, 1-p) <= 10,
    Hormann's BTRS transformed rejection (1993) above, as in JAX and
    TensorFlow. A non-integer n is floored; NaN or negative n, and p outside
    [0, 1] or NaN, give NaN; n = inf gives inf.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      n: the number of trials, a scalar or an array.
      p: the success probability, a scalar or an array.
      shape: the result's shape (default: the broadcast shape of `n` and `p`).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype` holding whole numbers in [0, n].

    >>> x = ember.random.binomial(ember.random.key(0), 20, 0.25, (2000,))
    >>> round(float(x.mean()))
    5
    """
    key, dtype = prepare("binomial", key, dtype)
    count = _param("binomial", _real_param("binomial", n, "n"), dtype)
    prob = _param("binomial", _real_param("binomial", p, "p"), dtype)
    shape = result_shape("binomial", shape, count.shape, prob.shape)
    if 0 in shape:
        return const(np.zeros(shape, dtype), dtype)
    return _binomial(key, _broadcast(count, shape), _broadcast(prob, shape))


@jit  # compiled once per signature, as _poisson
def _binomial(key: Array, count: Array, prob: Array) -> Array:
    shape, dtype = count.shape, count.dtype
    full = lambda v: _broadcast(const(v, dtype), shape)  # noqa: E731
    p_lt_half = ew.lt(prob, 0.5)
    q = ew.select(p_lt_half, prob, ew.sub(1.0, prob))
    count_bad = ew.bitwise_or(ew.ne(count, count), ew.lt(count, 0.0))
    count_inf = ew.eq(ew.abs(count), np.inf)
    q_nan, q_neg = ew.ne(q, q), ew.lt(q, 0.0)
    q = ew.select(ew.bitwise_or(q_nan, q_neg), full(0.01), q)
    use_inversion = ew.bitwise_or(count_bad, ew.le(ew.mul(count, q), 10.0))
    count = ew.floor(count)
    # Invalid elements run either loop with harmless values (their result is replaced below).
    count_inv = ew.select(ew.bitwise_or(use_inversion, count_bad), ew.select(count_bad, full(0.0), count), full(0.0))
    count_btrs = ew.select(ew.bitwise_or(use_inversion, count_inf), full(1e4), count)
    q_btrs = ew.select(use_inversion, full(0.5), q)
    inversion = lambda k, n_inv, q, *_: _binomial_inversion(k, n_inv, q)  # noqa: E731
    btrs = lambda k, _, __, n_btrs, q_btrs: _btrs(k, n_btrs, q_btrs)  # noqa: E731
    samples = _either(use_inversion, inversion, btrs, dtype, key, count_inv, q, count_btrs, q_btrs)
    invalid = ew.bitwise_or(ew.bitwise_or(q_neg, q_nan), count_bad)
    samples = ew.select(invalid, full(np.nan), samples)
    samples = ew.select(ew.bitwise_and(count_inf, ew.bitwise_not(invalid)), full(np.inf), samples)
    keep = ew.bitwise_or(ew.bitwise_or(p_lt_half, invalid), count_inf)
    return ew.select(keep, samples, ew.sub(count, samples))


def _binomial_inversion(key: Array, count: Array, prob: Array) -> Array:
    # The number of geometric waiting times (trials up to a success) that fit in `count` trials.
    zeros = ew.mul(prob, 0.0)
    pending = lambda total, count, _: ew.le(total, count)  # noqa: E731
    step = lambda u, total, _, log1mp: ew.add(total, ew.ceil(ew.div(ew.log(u), log1mp)))  # noqa: E731
    num = _count_draws("binomial", key, zeros, zeros, (count, ew.log1p(ew.neg(prob))), pending, step, sub_first=True)
    return ew.sub(num, 1.0)


def _btrs(key: Array, count: Array, prob: Array) -> Array:
    # Hormann (1993), "The generation of binomial random variates".
    stddev = ew.sqrt(ew.mul(ew.mul(count, prob), ew.sub(1.0, prob)))
    b = ew.add(ew.mul(stddev, 2.53), 1.15)
    a = ew.add(ew.add(ew.mul(b, 0.0248), -0.0873), ew.mul(prob, 0.01))
    c = ew.add(ew.mul(count, prob), 0.5)
    v_r = ew.sub(const(0.92, prob.dtype), ew.div(const(4.2, prob.dtype), b))
    r = ew.div(prob, ew.sub(1.0, prob))
    alpha = ew.mul(ew.add(ew.div(const(5.1, prob.dtype), b), 2.83), stddev)
    m = ew.floor(ew.mul(ew.add(count, 1.0), prob))
    log = ew.log

    def propose(u, v, us):
        k = ew.floor(ew.add(ew.mul(ew.add(ew.div(ew.mul(a, 2.0), us), b), u), c))
        reject = ew.bitwise_or(ew.lt(k, 0.0), ew.gt(k, count))
        v = log(ew.div(ew.mul(v, alpha), ew.add(ew.div(a, ew.mul(us, us)), b)))
        # The bound matters only for k in [0, n] (others are rejected); clamping keeps its logs real.
        k_in = ew.clamp(0.0, k, count)
        n_m1, n_k1 = ew.add(ew.sub(count, m), 1.0), ew.add(ew.sub(count, k_in), 1.0)
        bound = ew.add(
            ew.add(ew.mul(ew.add(m, 0.5), log(ew.div(ew.add(m, 1.0), ew.mul(r, n_m1)))),
                   ew.mul(ew.add(count, 1.0), log(ew.div(n_m1, n_k1)))),
            ew.mul(ew.add(k_in, 0.5), log(ew.div(ew.mul(r, n_k1), ew.add(k_in, 1.0)))))  # fmt: skip
        tails = ew.sub(ew.add(_stirling_tail(m), _stirling_tail(ew.sub(count, m))),
                       ew.add(_stirling_tail(k_in), _stirling_tail(ew.sub(count, k_in))))  # fmt: skip
        return k, ew.bitwise_and(ew.bitwise_not(reject), ew.le(v, ew.add(bound, tails)))

    return _transformed_rejection("binomial", key, prob, v_r, propose)


# --- geometric ----------------------------------------------------------------------------------------


def geometric(key: KeyArray, p: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Geometric samples: the number of trials up to and including the first success (1, 2, ...).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      p: the success probability of each trial, in (0, 1], a scalar or an array.
      shape: the result's shape (default: `p`'s shape); `p` must broadcast to it.
      dtype: an integer dtype (default int32, int64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype` with values >= 1.

    >>> x = ember.random.geometric(ember.random.key(0), 0.25, (2000,))
    >>> int(x.min()), round(float(x.mean()))
    (1, 4)
    """
    key = check_key("geometric", key)
    dtype = _int_dtype("geometric", dtype)
    p = _real_param("geometric", p, "p")
    p = convert(p, p.dtype if dtypes.is_floating(p.dtype) else dtypes.default_float())
    shape = result_shape("geometric", shape, p.shape)
    u = uniform_open("geometric", key, shape, p.dtype, 0.0)
    # u = 0 (probability 2**-nmant) would give log 0 = -inf, an infinite count (NaN for p = 1) that JAX
    # converts to the dtype's limit; ember draws it as u = 1, i.e. a first-trial success.
    u = ew.select(ew.eq(u, 0.0), _broadcast(const(1.0, p.dtype), shape), u)
    g = ew.add(ew.floor(ew.div(ew.log(u), _broadcast(ew.log1p(ew.neg(p)), shape))), 1.0)
    return convert(g, dtype)
