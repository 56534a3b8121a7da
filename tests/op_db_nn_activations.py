"""op_db entries for ember.nn's activations: every ``nn.functional`` activation and every activation layer,
against NumPy/SciPy written from PyTorch's definitions (the layers through a pure wrapper)."""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.special
from op_db import FLOATING, INTEGER, OpInfo, Sample, default_int, make_array, register

import ember.numpy as enp
from ember import nn
from ember.nn import functional as F

FLOAT_ONLY = "PyTorch's kernel takes floating inputs only: ints, bool and complex raise DTypeError"
REAL_ONLY = "bool and complex raise DTypeError (PyTorch's clamping kernel takes floats and integers, not bool)"
SHAPES = [(), (0,), (4,), (2, 3), (1, 3, 1)]
BIG = 3e4  # large enough to overflow a naive exp in every float dtype, finite in float16
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# --- NumPy references (float64), from PyTorch's definitions ----------------------------------------------


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + scipy.special.erf(x / math.sqrt(2)))


def _clip_like(x, lo, hi):
    return np.clip(x, lo, hi).astype(x.dtype)


def _glu(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * scipy.special.expit(b)


def _legacy_dim(x, dim):
    return (0 if x.ndim in (0, 1, 3) else 1) if dim is None else dim


def _softmax(x, dim=None, dtype=None):
    if x.size == 0:
        return x
    return scipy.special.softmax(x, axis=_legacy_dim(x, dim)) if x.ndim else np.ones_like(x)


def _log_softmax(x, dim=None, dtype=None):
    if x.size == 0:
        return x
    return scipy.special.log_softmax(x, axis=_legacy_dim(x, dim)) if x.ndim else np.zeros_like(x)


def _prelu(x, w):
    w = w.reshape(-1)
    w = w.reshape((w.size,) + (1,) * (x.ndim - 2)) if w.size > 1 else w.reshape(())
    return np.where(x > 0, x, w * x)


# name: (reference, kinks of the derivative to keep autodiff samples away from, option sets)
_ELEMENTWISE = {
    "relu": (lambda x: np.where(x > 0, x, 0).astype(x.dtype), (0,), [{}]),
    "relu6": (lambda x: _clip_like(x, 0, 6), (0, 6), [{}]),
    "leaky_relu": (lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x), (0,), [{}, {"negative_slope": 0.2}]),
    "elu": (_elu, (0,), [{}, {"alpha": 0.5}]),
    "selu": (lambda x: SELU_SCALE * _elu(x, SELU_ALPHA), (0,), [{}]),
    "celu": (lambda x, alpha=1.0: np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha)), (0,), [{}, {"alpha": 2.0}]),
    "gelu": (_gelu, (), [{}, {"approximate": "tanh"}]),
    "silu": (lambda x: x * scipy.special.expit(x), (), [{}]),
    "mish": (lambda x: x * np.tanh(np.logaddexp(0, x)), (), [{}]),
    "softplus": (_softplus, (0.5, 1.0), [{}, {"beta": 2.0, "threshold": 1.0}]),
    "softsign": (lambda x: x / (1 + np.abs(x)), (), [{}]),
    "sigmoid": (scipy.special.expit, (), [{}]),
    "logsigmoid": (lambda x: -np.logaddexp(0, -x), (), [{}]),
    "hardtanh": (lambda x, min_val=-1.0, max_val=1.0: _clip_like(x, min_val, max_val), (-2, -1, 1, 2), [{}, {"min_val": -2.0, "max_val": 2.0}]),
    "hardsigmoid": (lambda x: np.clip(x / 6 + 0.5, 0, 1), (-3, 3), [{}]),
    "hardswish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, (-3, 3), [{}]),
    "tanh": (np.tanh, (), [{}]),
    "tanhshrink": (lambda x: x - np.tanh(x), (), [{}]),
    "softshrink": (lambda x, lambd=0.5: np.sign(x) * np.maximum(np.abs(x) - lambd, 0), (-1, -0.5, 0.5, 1), [{}, {"lambd": 1.0}]),
    "hardshrink": (lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0), (-1, -0.5, 0.5, 1), [{}, {"lambd": 1.0}]),
    "threshold": (lambda x, threshold, value: np.where(x > threshold, x, value).astype(x.dtype), (0.5,),
                  [{"threshold": 0.5, "value": 2.0}]),
}  # fmt: skip
_INTEGER_OK = {"relu", "relu6", "hardtanh", "threshold"}
# Functions whose stable form the large-magnitude sample checks (a naive exp overflows there).
_STABLE = {"elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "sigmoid", "logsigmoid", "tanh", "tanhshrink", "softsign"}


def _away_from(x: np.ndarray, kinks) -> np.ndarray:
    """``x`` with values within 0.1 of a kink moved 0.2 away: finite differences across a kink mean nothing."""
    x64 = x.astype(np.float64)
    for k in kinks:
        near = np.abs(x64 - k) < 0.1
        x64 = np.where(near, k + 0.2 * np.where(x64 >= k, 1, -1), x64)
    return x64.astype(x.dtype)


def _unary(options, big=False, positional=()):
    def make(rng, dtype):
        out = [Sample((make_array(rng, s, dtype),), dict(opt)) for s in SHAPES for opt in options[:1]]
        out += [Sample((make_array(rng, (2, 5), dtype),), dict(opt)) for opt in options[1:]]
        if big and np.dtype(dtype).kind != "i" and np.dtype(dtype).kind != "u":
            out.append(Sample((np.array([-BIG, -100.0, -1.0, 0.0, 1.0, 100.0, BIG]).astype(dtype),), dict(options[0])))
        return out

    return make


def _unary_ad(options, kinks):
    def make(rng, dtype):
        out = [Sample((_away_from(make_array(rng, s, dtype), kinks),), dict(opt)) for s in SHAPES for opt in options[:1]]
        return out + [Sample((_away_from(make_array(rng, (2, 5), dtype), kinks),), dict(opt)) for opt in options[1:]]

    return make


for _name, (_ref, _kinks, _options) in _ELEMENTWISE.items():
    _ints = _name in _INTEGER_OK
    register(OpInfo(f"nn.functional.{_name}", getattr(F, _name), _ref, FLOATING + (INTEGER if _ints else ()),
                    _unary(_options, big=_name in _STABLE), REAL_ONLY if _ints else FLOAT_ONLY,
                    ref_in_dtype=False, ad_samples=_unary_ad(_options, _kinks)))  # fmt: skip


# --- along a dimension ------------------------------------------------------------------------------------

_SOFTMAX_CASES = [((), {"dim": 0}), ((0, 3), {"dim": 1}), ((0, 3), {"dim": 0}), ((5,), {"dim": 0}), ((2, 3), {"dim": -1}),
                  ((2, 3, 4), {"dim": 1}), ((2, 3), {}), ((2, 3, 4), {}), ((3,), {}), ((2, 2, 3, 2), {})]  # fmt: skip


def _softmax_samples(rng, dtype):
    out = [Sample((make_array(rng, s, dtype),), dict(kw)) for s, kw in _SOFTMAX_CASES]
    out.append(Sample((np.array([[-BIG, 0.0, BIG], [BIG, BIG, -BIG]]).astype(dtype),), {"dim": 1}))
    if np.dtype(dtype) in FLOATING[:3]:  # float16, bfloat16, float32 computed in float32
        out.append(Sample((make_array(rng, (2, 3), dtype),), {"dim": 1, "dtype": enp.float32}))
    return out


def _softmax_out_dtype(dtype, sample):
    return np.dtype(sample.kwargs["dtype"]) if "dtype" in sample.kwargs else dtype


def _softmax_ad(rng, dtype):
    return [Sample((make_array(rng, s, dtype),), dict(kw)) for s, kw in _SOFTMAX_CASES]


for _name, _ref in (("softmax", _softmax), ("log_softmax", _log_softmax),
                    ("softmin", lambda x, dim=None, dtype=None: _softmax(-x, dim))):  # fmt: skip
    register(OpInfo(f"nn.functional.{_name}", getattr(F, _name), _ref, FLOATING, _softmax_samples, FLOAT_ONLY,
                    out_dtype_of=_softmax_out_dtype, ad_samples=_softmax_ad, tol={np.dtype(np.float32): (1e-5, 1e-6)}))  # fmt: skip

_GLU_CASES = [((4,), {}), ((0, 4), {}), ((2, 6), {"dim": 1}), ((4, 3), {"dim": 0}), ((2, 4, 3), {"dim": -2})]


def _glu_samples(rng, dtype):
    return [Sample((make_array(rng, s, dtype),), dict(kw)) for s, kw in _GLU_CASES]


register(OpInfo("nn.functional.glu", F.glu, _glu, FLOATING, _glu_samples, FLOAT_ONLY))

# (input shape, weight shape): one slope, one per channel (dimension 1), an empty batch
_PRELU_CASES = [((), (1,)), ((4,), (1,)), ((2, 3), (3,)), ((2, 3, 4), (3,)), ((0, 2, 3), (2,)), ((2, 3), ()), ((1, 2, 2, 2), (2,))]


def _prelu_samples(rng, dtype):
    return [Sample((make_array(rng, a, dtype), make_array(rng, b, dtype, 0, 1))) for a, b in _PRELU_CASES]


def _prelu_ad(rng, dtype):
    return [Sample((_away_from(make_array(rng, a, dtype), (0,)), make_array(rng, b, dtype, 0, 1))) for a, b in _PRELU_CASES]


register(OpInfo("nn.functional.prelu", F.prelu, _prelu, FLOATING, _prelu_samples, FLOAT_ONLY, ad_samples=_prelu_ad))


def _one_hot_samples(rng, dtype):
    out = [Sample((make_array(rng, s, dtype, 0, 5),), {"num_classes": 5}) for s in ((), (4,), (2, 3), (0,))]
    return out + [Sample((make_array(rng, (3, 2), dtype, 0, 4),)), Sample((np.array([0, 2, 1], dtype=dtype),), {"num_classes": -1})]


def _one_hot(x, num_classes=-1):
    n = int(x.max()) + 1 if num_classes == -1 else num_classes
    return (x[..., None] == np.arange(n)).astype(np.int64)


register(OpInfo("nn.functional.one_hot", F.one_hot, _one_hot, INTEGER, _one_hot_samples,
                "class indices are integers: bool, floating and complex raise DTypeError",
                out_dtype=default_int, ref_in_dtype=True, transforms=frozenset({"vmap", "jit"}),
                nondiff="integer class indices in, integers out: nothing to differentiate",
                needs_concrete="the class indices with num_classes=-1: the number of classes is their max + 1"))  # fmt: skip


# --- layers: pure wrappers -------------------------------------------------------------------------------

# layer: (functional name, constructor option sets as the functional's keyword arguments, or None to build with them)
_LAYERS = {"ReLU": "relu", "ReLU6": "relu6", "LeakyReLU": "leaky_relu", "ELU": "elu", "SELU": "selu", "CELU": "celu",
           "GELU": "gelu", "SiLU": "silu", "Mish": "mish", "Softplus": "softplus", "Softsign": "softsign",
           "Sigmoid": "sigmoid", "LogSigmoid": "logsigmoid", "Hardtanh": "hardtanh", "Hardsigmoid": "hardsigmoid",
           "Hardswish": "hardswish", "Tanh": "tanh", "Tanhshrink": "tanhshrink", "Softshrink": "softshrink",
           "Hardshrink": "hardshrink", "Threshold": "threshold"}  # fmt: skip


@functools.cache
def _layer(cls: str, config: tuple) -> nn.Module:
    return getattr(nn, cls)(**dict(config))


def _layer_op(cls: str):
    def op(x, **config):
        return nn.functional_call(_layer(cls, tuple(sorted(config.items()))), {}, x)

    op.__name__ = cls
    return op


for _cls, _name in _LAYERS.items():
    _ref, _kinks, _options = _ELEMENTWISE[_name]
    _ints = _name in _INTEGER_OK
    register(OpInfo(f"nn.{_cls}", _layer_op(_cls), _ref, FLOATING + (INTEGER if _ints else ()), _unary(_options),
                    REAL_ONLY if _ints else FLOAT_ONLY, ad_samples=_unary_ad(_options, _kinks)))  # fmt: skip

for _cls, _ref in (("Softmax", _softmax), ("LogSoftmax", _log_softmax), ("Softmin", lambda x, dim=None: _softmax(-x, dim))):
    register(OpInfo(f"nn.{_cls}", _layer_op(_cls), _ref, FLOATING, _softmax_ad, FLOAT_ONLY,
                    tol={np.dtype(np.float32): (1e-5, 1e-6)}))  # fmt: skip

register(OpInfo("nn.GLU", _layer_op("GLU"), _glu, FLOATING, _glu_samples, FLOAT_ONLY))


def _prelu_layer(x, weight):
    return nn.functional_call(_layer("PReLU", (("num_parameters", weight.shape[0]),)), {"weight": weight}, x)


def _prelu_layer_samples(rng, dtype):
    return [s for s in _prelu_samples(rng, dtype) if s.args[1].ndim == 1]


def _prelu_layer_ad(rng, dtype):
    return [s for s in _prelu_ad(rng, dtype) if s.args[1].ndim == 1]


register(OpInfo("nn.PReLU", _prelu_layer, _prelu, FLOATING, _prelu_layer_samples, FLOAT_ONLY, ad_samples=_prelu_layer_ad))
