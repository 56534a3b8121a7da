"""Privacy accounting for DP-SGD by Rényi differential privacy (RDP), and the Gaussian mechanism's noise.

One DP-SGD step releases a sum of clipped per-example gradients plus Gaussian noise of standard
deviation ``noise_multiplier * max_norm``, on a batch drawn by Poisson sampling (each example in with
probability ``sampling_rate``): the sampled Gaussian mechanism. Its RDP at each order is computed as in
Mironov, Talwar & Zhang (2019), "Rényi Differential Privacy of the Sampled Gaussian Mechanism" — exactly
for integer orders, by their convergent series for fractional ones — composed over steps (RDP adds up),
and turned into an (epsilon, delta) guarantee by the conversion of Balle et al. (2020, Theorem 21) and
Canonne, Kamath & Steinke (2020), the one Opacus, TF-Privacy and Google's ``dp_accounting`` use today:
``epsilon = rdp + log1p(-1/a) - (log(delta) + log(a)) / (a - 1)``, minimised over the orders ``a``.

The accountant is host-side bookkeeping on Python floats (it is not traced); `add_noise` is ember code
and works under `jit`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember.numpy as enp
from ember import random
from ember.core import dtypes
from ember.core.pytree import keystr, tree_flatten_with_path, tree_unflatten
from ember.errors import DTypeError, InvalidArgumentError

__all__ = ["DEFAULT_ORDERS", "RDPAccountant", "add_noise", "epsilon", "noise_multiplier_for", "rdp"]

# The union of Opacus's grid (1.1, 1.2, ..., 10.9 and 12..63) and Google dp_accounting's (1.25 ... 4.5,
# 5..63, 128, 256, 512): epsilon is a minimum over orders, so the union is never looser than either.
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    float(a) for a in sorted({1 + x / 10 for x in range(1, 100)} | {1.25, 1.75, 2.25} | set(range(11, 64))
                             | {128, 256, 512})
)

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


# --- checks ----------------------------------------------------------------------------------------


def _real(fn: str, name: str, value: Any, valid: str, ok: Callable[[float], bool]) -> float:
    """``value`` as a Python float, or an InvalidArgumentError naming ``fn``, ``name`` and the range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
            value = value.item()
        else:
            raise InvalidArgumentError(
                f"ember.privacy.{fn}: {name} must be a Python or NumPy real number {valid}, got "
                f"{type(value).__name__} {value!r}; the accountant is host-side bookkeeping: pass a float")
    value = float(value)
    if not ok(value):
        raise InvalidArgumentError(f"ember.privacy.{fn}: {name} must be {valid}, got {value!r}")
    return value


def _sampling_rate(fn: str, q: Any) -> float:
    return _real(fn, "sampling_rate", q, "in [0, 1] (batch size / dataset size)", lambda v: 0.0 <= v <= 1.0)


def _noise(fn: str, sigma: Any) -> float:
    return _real(fn, "noise_multiplier", sigma, "finite and >= 0", lambda v: 0.0 <= v < math.inf)


def _delta(fn: str, delta: Any) -> float:
    return _real(fn, "delta", delta, "in the open interval (0, 1), e.g. 1e-5 (below 1 / dataset size)",
                 lambda v: 0.0 < v < 1.0)


def _steps(fn: str, steps: Any) -> int:
    value = _real(fn, "steps", steps, "a whole number >= 0", lambda v: v >= 0 and v.is_integer())
    return int(value)


def _orders(fn: str, orders: Any) -> np.ndarray:
    if orders is None:
        return np.array(DEFAULT_ORDERS)
    values = np.asarray(orders, dtype=object)
    if values.ndim > 1 or values.size == 0:
        raise InvalidArgumentError(
            f"ember.privacy.{fn}: orders must be a number or a non-empty 1-d sequence of numbers > 1, "
            f"got {orders!r}; leave it out for DEFAULT_ORDERS")
    values = np.atleast_1d(values)
    return np.array([_real(fn, "every order", a, "finite and > 1", lambda v: 1.0 < v < math.inf) for a in values])


# --- log-space helpers -------------------------------------------------------------------------------


_erfc = np.frompyfunc(math.erfc, 1, 1)


def _log_ndtr(t: np.ndarray) -> np.ndarray:
    """log Φ(t), the standard normal CDF, elementwise, accurate in both tails."""
    out = np.empty_like(t)
    upper, lower = t > 0, t <= -30
    middle = ~(upper | lower)
    out[upper] = np.log1p(-0.5 * _erfc(t[upper] / _SQRT2).astype(float))
    out[middle] = np.log(0.5 * _erfc(-t[middle] / _SQRT2).astype(float))
    # Asymptotic series of the Mills ratio: Φ(t) = φ(t)/|t| * (1 - 1/t² + 3/t⁴ - 15/t⁶ + ...), t ≤ -30.
    t = t[lower]
    u = 1.0 / (t * t)
    series = 1 - u * (1 - 3 * u * (1 - 5 * u * (1 - 7 * u * (1 - 9 * u * (1 - 11 * u)))))
    out[lower] = -0.5 * t * t - np.log(-t) - _LOG_SQRT_2PI + np.log(series)
    return out


def _logsumexp(x: np.ndarray) -> float:
    if x.size == 0:
        return -math.inf
    top = float(x.max())
    return top if top == -math.inf else top + math.log(float(np.exp(x - top).sum()))


def _log_expm1(x: float) -> float:
    """log(exp(x) - 1) for x > 0, without overflow."""
    return x + math.log(-math.expm1(-x)) if x > 1 else math.log(math.expm1(x))


def _log_add(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    hi, lo = max(a, b), min(a, b)
    return hi + math.log1p(math.exp(lo - hi))


# --- the sampled Gaussian mechanism ------------------------------------------------------------------


def _log_a_int(q: float, sigma: float, a: int) -> float:
    """log A_a for an integer order a ≥ 2, A_a = E_{z~N(0,σ²)}[((1-q) + q exp((2z-1)/(2σ²)))^a]."""
    # The binomial expansion gives A_a = Σ_k C(a,k) q^k (1-q)^(a-k) exp((k²-k)/(2σ²)); its terms without
    # the exponential sum to 1, so A_a - 1 = Σ_{k≥2} C(a,k) q^k (1-q)^(a-k) expm1((k²-k)/(2σ²)): positive
    # terms only, and no cancellation when A_a is close to 1 (small q or large σ).
    k = np.arange(1, a + 1)
    log_binom = np.cumsum(np.log(a - k + 1.0) - np.log(k))[1:]  # log C(a, k) for k = 2..a
    k = k[1:]
    exponent = (k * k - k) / (2 * sigma * sigma)
    log_expm1 = np.array([_log_expm1(x) for x in exponent])
    log_terms = log_binom + k * math.log(q) + (a - k) * math.log1p(-q) + log_expm1
    top = log_terms.max()
    log_a_minus_1 = top + math.log(np.exp(log_terms - top).sum())
    return float(np.logaddexp(0.0, log_a_minus_1))


def _log_a_frac(q: float, sigma: float, a: float) -> float:
    """log A_a for a fractional order a > 1, by the series of Mironov, Talwar & Zhang (2019, Section 3.3)."""
    # Split the integral at z0, where q·exp((2z-1)/(2σ²)) = 1-q. Below z0 expand (1-q + q e^L)^a in powers
    # of q e^L: term i is C(a,i) q^i (1-q)^(a-i) exp((i²-i)/(2σ²)) Φ((z0-i)/σ). Above z0 expand in powers
    # of (1-q) e^-L: term i is C(a,i) (1-q)^i q^(a-i) exp((j²-j)/(2σ²)) Φ((j-z0)/σ) with j = a-i. For
    # i > a + 1 both series alternate with terms that shrink, so the error is below the first term left out.
    # At z0 the expanded ratio is 1, so the terms may shrink only like a power of i: they are summed
    # in blocks of growing size.
    log_q, log_1mq, two_var = math.log(q), math.log1p(-q), 2 * sigma * sigma
    z0 = sigma * sigma * (log_1mq - log_q) + 0.5
    log_pos, log_neg = -math.inf, -math.inf
    log_binom_start, start, size = 0.0, 0, 64  # log |C(a, start)|
    while True:
        i = np.arange(start, start + size, dtype=float)
        # log |C(a, i)| from C(a, m+1) = C(a, m) (a-m)/(m+1); C(a, i) < 0 when i - ceil(a) is odd and positive.
        ratios = np.log(np.abs(a - i)) - np.log(i + 1)
        log_binom = log_binom_start + np.concatenate(([0.0], np.cumsum(ratios[:-1])))
        negative = (i > a + 1) & ((i - math.ceil(a)) % 2 == 1)
        j = a - i
        log_s0 = log_binom + i * log_q + j * log_1mq + (i * i - i) / two_var + _log_ndtr((z0 - i) / sigma)
        log_s1 = log_binom + j * log_q + i * log_1mq + (j * j - j) / two_var + _log_ndtr((j - z0) / sigma)
        terms = np.logaddexp(log_s0, log_s1)
        log_pos = _log_add(log_pos, _logsumexp(terms[~negative]))
        log_neg = _log_add(log_neg, _logsumexp(terms[negative]))
        # Stop once the terms alternate, shrink, and are below 1e-17 of the sum (A_a ≥ 1, so of 1 at least).
        if (start + size > a + 2 and terms[-1] < log_pos - 40) or start > 2**22:
            break
        log_binom_start += float(np.sum(ratios))
        start, size = start + size, 2 * size
    return log_pos + math.log1p(-math.exp(log_neg - log_pos)) if log_neg > -math.inf else log_pos


@functools.lru_cache(maxsize=4096)
def _rdp_one(q: float, sigma: float, a: float) -> float:
    if q == 0.0:
        return 0.0
    if sigma == 0.0:
        return math.inf
    if q == 1.0:
        return a / (2 * sigma * sigma)
    log_a = _log_a_int(q, sigma, int(a)) if a.is_integer() else _log_a_frac(q, sigma, a)
    return max(log_a, 0.0) / (a - 1)


def _epsilon_from_rdp(orders: np.ndarray, rdps: np.ndarray, delta: float) -> float:
    best = math.inf
    for a, r in zip(orders.tolist(), rdps.tolist()):
        if r == math.inf:
            continue
        if delta * delta + math.expm1(-r) >= 0:
            # δ ≥ sqrt(1 - exp(-KL)) bounds the total variation (Bretagnolle-Huber; KL ≤ RDP of order a > 1),
            # so the mechanism is (0, δ)-DP.
            return 0.0
        best = min(best, r + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1))
    return max(best, 0.0)


def rdp(sampling_rate: float, noise_multiplier: float, orders: float | Sequence[float] | None = None) -> np.ndarray:
    """The Rényi DP of one step of DP-SGD (the Poisson-sampled Gaussian mechanism) at each order.

    Exact binomial expansion for integer orders, the series of Mironov, Talwar & Zhang (2019) for
    fractional ones; both in log space. Opacus' ``compute_rdp(..., steps=1, ...)``.

    Args:
      sampling_rate: the probability ``q`` that an example is in a batch (batch size / dataset size).
      noise_multiplier: the noise's standard deviation over the clipping norm (``σ``).
      orders: the orders ``a > 1`` (default `DEFAULT_ORDERS`).

    Returns:
      A float64 NumPy array, one RDP value per order (``inf`` where ``noise_multiplier`` is 0); RDP of
      several steps adds up.

    >>> from ember import privacy
    >>> privacy.rdp(1.0, 2.0, [2, 4])  # no sampling: the Gaussian mechanism's a / (2σ²)
    array([0.25, 0.5 ])
    >>> privacy.rdp(0.01, 1.0, [2, 2.5]).round(8)
    array([0.00017181, 0.00021758])
    """
    q = _sampling_rate("rdp", sampling_rate)
    sigma = _noise("rdp", noise_multiplier)
    values = _orders("rdp", orders)
    return np.array([_rdp_one(q, sigma, a) for a in values.tolist()])


def epsilon(steps: int, sampling_rate: float, noise_multiplier: float, delta: float, *,
            orders: float | Sequence[float] | None = None) -> float:
    """The epsilon of an (epsilon, delta)-DP guarantee for ``steps`` steps of DP-SGD, by Rényi DP.

    Each step adds Gaussian noise of ``noise_multiplier`` times the clipping norm to a sum of clipped
    per-example gradients, on a batch drawn by Poisson sampling at ``sampling_rate``. The RDP of `rdp`
    is composed over the steps and converted with the bound of Balle et al. (2020) used by Opacus,
    TF-Privacy and dp_accounting, minimised over ``orders``.

    Args:
      steps: how many steps (0 gives 0).
      sampling_rate: the probability that an example is in a batch, in [0, 1] (0 gives 0; 1: full batches).
      noise_multiplier: the noise's standard deviation over the clipping norm, ≥ 0 (0 gives ``inf``).
      delta: the delta of the guarantee, in (0, 1); take it below 1 / dataset size.
      orders: the Rényi orders to minimise over (default `DEFAULT_ORDERS`: Opacus's and
        dp_accounting's grids together, 1.1 to 512).

    Returns:
      epsilon, a float ≥ 0.

    >>> from ember import privacy
    >>> # MNIST with batches of 256 out of 60000, noise 1.1, 60 epochs, delta 1e-5 (TF-Privacy's tutorial)
    >>> round(privacy.epsilon(60 * (60000 // 256), 256 / 60000, 1.1, 1e-5), 4)
    2.5944
    """
    n = _steps("epsilon", steps)
    q = _sampling_rate("epsilon", sampling_rate)
    sigma = _noise("epsilon", noise_multiplier)
    d = _delta("epsilon", delta)
    values = _orders("epsilon", orders)
    if n == 0 or q == 0.0:
        return 0.0
    if sigma == 0.0:
        return math.inf
    return _epsilon_from_rdp(values, n * rdp(q, sigma, values), d)


def noise_multiplier_for(target_epsilon: float, delta: float, steps: int, sampling_rate: float, *,
                         orders: float | Sequence[float] | None = None, rtol: float = 1e-4) -> float:
    """The least noise multiplier whose `epsilon` is at most ``target_epsilon`` (Opacus' ``get_noise_multiplier``).

    Found by bisection, to a relative ``rtol``: ``epsilon(steps, sampling_rate, result, delta) <=
    target_epsilon``, while a noise ``rtol`` smaller would exceed it.

    Args:
      target_epsilon: the privacy budget, > 0.
      delta: the delta of the guarantee, in (0, 1).
      steps: how many steps of DP-SGD.
      sampling_rate: the probability that an example is in a batch, in [0, 1].
      orders: the Rényi orders (default `DEFAULT_ORDERS`).
      rtol: the relative precision of the result (default 1e-4).

    Returns:
      The noise multiplier (0.0 when ``steps`` or ``sampling_rate`` is 0: no noise is needed).

    >>> from ember import privacy
    >>> sigma = privacy.noise_multiplier_for(3.0, 1e-5, 60 * (60000 // 256), 256 / 60000)
    >>> round(sigma, 3), privacy.epsilon(60 * (60000 // 256), 256 / 60000, sigma, 1e-5) <= 3.0
    (1.014, True)
    """
    fn = "noise_multiplier_for"
    target = _real(fn, "target_epsilon", target_epsilon, "finite and > 0", lambda v: 0.0 < v < math.inf)
    d = _delta(fn, delta)
    n = _steps(fn, steps)
    q = _sampling_rate(fn, sampling_rate)
    values = _orders(fn, orders)
    rel = _real(fn, "rtol", rtol, "in (0, 1)", lambda v: 0.0 < v < 1.0)
    if n == 0 or q == 0.0:
        return 0.0

    def eps(sigma: float) -> float:
        return _epsilon_from_rdp(values, n * rdp(q, sigma, values), d)

    low, high = 0.0, 1.0  # invariant: eps(low) > target >= eps(high); eps(0) = inf
    while eps(high) > target:
        low, high = high, 2 * high
        if high > 1e12:
            raise InvalidArgumentError(
                f"ember.privacy.{fn}: no noise multiplier up to 1e12 reaches epsilon {target} at delta {d} "
                f"with orders from {values.min()} to {values.max()}; add larger orders or raise target_epsilon")
    while high - low > rel * high:
        mid = 0.5 * (low + high)
        if eps(mid) > target:
            low = mid
        else:
            high = mid
    return high


class RDPAccountant:
    """Keeps the RDP spent by DP-SGD steps whose sampling rate or noise may change (Opacus' ``RDPAccountant``).

    Steps with a constant setting need only `epsilon`; the accountant composes steps of different
    settings (a batch size or noise schedule, several training phases) and reports the epsilon so far.
    It is host-side state, updated in place by `step`.

    Args:
      orders: the Rényi orders (default `DEFAULT_ORDERS`).

    >>> from ember import privacy
    >>> accountant = privacy.RDPAccountant(orders=range(2, 33))
    >>> accountant.step(noise_multiplier=1.0, sampling_rate=1e-5, steps=10)
    >>> accountant.step(noise_multiplier=3.0, sampling_rate=1e-4, steps=4)
    >>> round(accountant.epsilon(1e-5), 3)
    0.336
    """

    def __init__(self, orders: float | Sequence[float] | None = None):
        self.orders: np.ndarray = _orders("RDPAccountant", orders)
        self.history: list[tuple[float, float, int]] = []
        self._rdp = np.zeros(len(self.orders))

    def step(self, *, noise_multiplier: float, sampling_rate: float, steps: int = 1) -> None:
        """Account for ``steps`` steps at this noise multiplier and sampling rate.

        ``history`` keeps ``(noise_multiplier, sampling_rate, steps)`` per setting; consecutive calls with
        the same setting add to its count.

        Args:
          noise_multiplier: the noise's standard deviation over the clipping norm.
          sampling_rate: the probability that an example is in a batch.
          steps: how many such steps (default 1).

        >>> from ember import privacy
        >>> accountant = privacy.RDPAccountant()
        >>> accountant.step(noise_multiplier=1.1, sampling_rate=0.01, steps=100)
        >>> accountant.history
        [(1.1, 0.01, 100)]
        """
        sigma = _noise("RDPAccountant.step", noise_multiplier)
        q = _sampling_rate("RDPAccountant.step", sampling_rate)
        n = _steps("RDPAccountant.step", steps)
        if n == 0:
            return
        if self.history and self.history[-1][:2] == (sigma, q):
            self.history[-1] = (sigma, q, self.history[-1][2] + n)
        else:
            self.history.append((sigma, q, n))
        if q > 0.0:
            self._rdp = self._rdp + n * rdp(q, sigma, self.orders)

    def epsilon(self, delta: float) -> float:
        """The epsilon of the (epsilon, delta)-DP guarantee of every step so far.

        Args:
          delta: the delta, in (0, 1).

        >>> from ember import privacy
        >>> accountant = privacy.RDPAccountant()
        >>> accountant.epsilon(1e-5)
        0.0
        """
        return _epsilon_from_rdp(self.orders, self._rdp, _delta("RDPAccountant.epsilon", delta))

    def __repr__(self) -> str:
        orders = f"{len(self.orders)} from {self.orders.min()} to {self.orders.max()}"
        return f"RDPAccountant(history={self.history}, orders={orders})"


# --- the Gaussian mechanism --------------------------------------------------------------------------


def add_noise(grads: Any, key: Any, *, noise_multiplier: Any, max_norm: Any) -> Any:
    """DP-SGD's Gaussian mechanism: ``grads`` plus N(0, (noise_multiplier * max_norm)²) on every element.

    Apply it to the sum of clipped per-example gradients (`clipped_grad`) before dividing by the batch
    size, as Opacus' optimizers and optax's ``differentially_private_aggregate`` do. Each leaf gets its
    own key (split from ``key``), so the noise is independent across leaves and elements; every leaf
    keeps its dtype. Any pytree; works under `jit` and `vmap` (traced ``noise_multiplier`` or
    ``max_norm`` included). ``None`` leaves stay ``None``.

    Args:
      grads: a pytree of floating arrays.
      key: an ``ember.random`` key; use a new one each step.
      noise_multiplier: the noise's standard deviation over ``max_norm`` (Opacus' ``noise_multiplier``).
      max_norm: the clipping norm of the per-example gradients (Opacus' ``max_grad_norm``).

    Returns:
      A pytree like ``grads``.

    >>> from ember import privacy
    >>> g = {"w": enp.zeros((2, 3)), "b": enp.zeros(3, dtype="float16")}
    >>> noisy = privacy.add_noise(g, ember.random.key(0), noise_multiplier=1.1, max_norm=1.0)
    >>> noisy["w"].shape, noisy["b"].dtype
    ((2, 3), dtype('float16'))
    """
    for name, value in (("noise_multiplier", noise_multiplier), ("max_norm", max_norm)):
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            _real("add_noise", name, value, "finite and >= 0", lambda v: 0.0 <= v < math.inf)
    leaves_with_path, treedef = tree_flatten_with_path(grads)
    if not leaves_with_path:
        return grads
    leaves = []
    for path, leaf in leaves_with_path:
        leaf = enp.asarray(leaf)
        if not dtypes.is_floating(leaf.dtype):
            raise DTypeError(
                f"ember.privacy.add_noise: gradient leaf {keystr(path) or '(the root)'} has dtype {leaf.dtype}, "
                f"shape {leaf.shape}; Gaussian noise needs floating arrays: cast it (e.g. .astype('float32')) "
                f"or leave it out of the tree (None)")
        leaves.append(leaf)
    keys = random.split(key, len(leaves))
    std = enp.multiply(noise_multiplier, max_norm)
    noisy = [(leaf + std * random.normal(keys[i], leaf.shape, leaf.dtype)).astype(leaf.dtype)
             for i, leaf in enumerate(leaves)]
    return tree_unflatten(treedef, noisy)
