"""op_db entries for ember.nn's normalisation, dropout and embedding: the functional ops
(``nn.functional.batch_norm``, ...) and the layers (``nn.BatchNorm2d``, ...) through pure wrappers.

The stateful layers (BatchNorm, InstanceNorm with running statistics) are wrapped as
``op(x, weight, bias, running_mean, running_var)`` building the ``nn.State`` from the arrays and returning
``(out, new_running_mean, new_running_var)`` in training (``out`` alone in eval mode), so every column
checks the running statistics as well as the output.

Dropout's random path has no independent reference (the mask is ember.random's): its entries here take
p=0, p=1 and eval mode; test_nn_dropout_embedding.py checks the training-mode statistics.

References are NumPy in float64, written from PyTorch's documented formulas.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from op_db import ALL, BF16, FLOATING, OpInfo, Sample, make_array, register

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F

F16 = np.dtype(np.float16)
_TOL = {F16: (1e-2, 1e-2), BF16: (2e-2, 5e-2), np.dtype(np.float32): (2e-5, 2e-5)}
_AD_HALF = {F16: "float16 means and variances are too coarse for finite differences; float32/64 check the rule",
            BF16: "bfloat16 means and variances are too coarse for finite differences; float32/64 check the rule"}
FLOAT_ONLY = "normalisation and dropout take floating arrays, as PyTorch (other dtypes raise DTypeError)"

# --- references -----------------------------------------------------------------------------------------


def layer_norm_ref(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + eps)
    return out * (1 if weight is None else weight) + (0 if bias is None else bias)


def rms_norm_ref(x, normalized_shape, weight=None, eps=None):
    """Called on the arrays in their own dtype: the default eps is that dtype's machine epsilon."""
    eps = float(ml_dtypes.finfo(x.dtype).eps) if eps is None else eps
    x, weight = x.astype(np.float64), None if weight is None else weight.astype(np.float64)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    out = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return out * (1 if weight is None else weight)


def _per_channel(p, ndim):
    return p.reshape((-1,) + (1,) * (ndim - 2))


def _affine(out, weight, bias):
    if weight is not None:
        out = out * _per_channel(weight, out.ndim)
    if bias is not None:
        out = out + _per_channel(bias, out.ndim)
    return out


def group_norm_ref(x, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, c // num_groups * int(np.prod(x.shape[2:])))
    out = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    return _affine(out.reshape(x.shape), weight, bias)


def batch_norm_ref(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    axes = (0, *range(2, x.ndim))
    if training:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    else:
        mean, var = running_mean, running_var
    out = _affine((x - _per_channel(mean, x.ndim)) / np.sqrt(_per_channel(var, x.ndim) + eps), weight, bias)
    if not training or running_mean is None:
        return out
    if x.size == 0:
        return out, running_mean, running_var
    n = x.size // x.shape[1]
    return (out, (1 - momentum) * running_mean + momentum * mean,
            (1 - momentum) * running_var + momentum * var * n / (n - 1))


def instance_norm_ref(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                      momentum=0.1, eps=1e-5):  # fmt: skip
    axes = tuple(range(2, x.ndim))
    if use_input_stats:
        mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    else:
        mean, var = _per_channel(running_mean, x.ndim), _per_channel(running_var, x.ndim)
    out = _affine((x - mean) / np.sqrt(var + eps), weight, bias)
    if not use_input_stats or running_mean is None:
        return out
    n = int(np.prod(x.shape[2:]))
    batch_mean = mean.reshape(x.shape[:2]).mean(0)
    batch_var = var.reshape(x.shape[:2]).mean(0) * n / (n - 1)
    return (out, (1 - momentum) * running_mean + momentum * batch_mean,
            (1 - momentum) * running_var + momentum * batch_var)


def local_response_norm_ref(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """Each channel divided by (k + alpha/size * sum of the squares of its window of channels) ** beta."""
    c = x.shape[1]
    out = np.empty_like(x)
    for ch in range(c):
        lo, hi = max(ch - size // 2, 0), min(ch + (size - 1) // 2, c - 1)
        s = (x[:, lo:hi + 1] ** 2).sum(axis=1)
        out[:, ch] = x[:, ch] / (k + alpha / size * s) ** beta
    return out


def embedding_ref(idx, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False):
    rows = weight[idx]
    if max_norm is not None:
        norm = np.linalg.norm(rows.astype(np.float64), ord=norm_type, axis=-1, keepdims=True)
        rows = np.where(norm > max_norm, rows * (max_norm / (norm + 1e-7)), rows)
    return rows


# --- samples --------------------------------------------------------------------------------------------


def _arr(rng, shape, d, lo=-2.0, hi=2.0):
    return make_array(rng, shape, d, lo, hi)


def _params(rng, c, d):
    return _arr(rng, (c,), d, 0.5, 1.5), _arr(rng, (c,), d)


def _layer_norm_samples(rng, d):
    out = []
    for shape, ns, affine in [((3, 5), (5,), True), ((2, 3, 4), (3, 4), True), ((4,), (4,), False),
                              ((0, 3), (3,), True), ((2, 1, 3), (3,), True)]:  # fmt: skip
        args = (_arr(rng, shape, d), ns)
        if affine:
            args += (_arr(rng, ns, d, 0.5, 1.5), _arr(rng, ns, d))
        out.append(Sample(args))
    out.append(Sample((_arr(rng, (2, 3), d), (3,), _arr(rng, (3,), d)), {"eps": 0.1}))
    return out


def _rms_norm_samples(rng, d):
    return [Sample((_arr(rng, (3, 5), d), (5,), _arr(rng, (5,), d))),
            Sample((_arr(rng, (2, 3, 4), d), (3, 4)), {"eps": 1e-3}),
            Sample((_arr(rng, (0, 3), d), (3,))),
            Sample((_arr(rng, (4,), d), (4,), None, 0.5))]  # fmt: skip


def _group_norm_samples(rng, d):
    return [Sample((_arr(rng, (2, 6, 3), d), 3, *_params(rng, 6, d))),
            Sample((_arr(rng, (3, 4, 2, 2), d), 2, *_params(rng, 4, d)), {"eps": 1e-3}),
            Sample((_arr(rng, (2, 4), d), 4)),
            Sample((_arr(rng, (1, 3, 5), d), 1, *_params(rng, 3, d))),
            Sample((_arr(rng, (0, 4, 3), d), 2, *_params(rng, 4, d)))]  # fmt: skip


def _stats(rng, c, d):
    return _arr(rng, (c,), d, -0.5, 0.5), _arr(rng, (c,), d, 0.5, 2.0)


def _batch_norm_samples(rng, d):
    out = []
    for shape in [(4, 3), (2, 3, 5), (2, 2, 3, 3), (3, 2, 1, 2, 2)]:
        c = shape[1]
        x = _arr(rng, shape, d)
        out.append(Sample((x, *_stats(rng, c, d), *_params(rng, c, d)), {"training": True}))
        out.append(Sample((x, *_stats(rng, c, d), *_params(rng, c, d)), {"training": False}))
    out.append(Sample((_arr(rng, (5, 2), d), None, None), {"training": True, "eps": 1e-3}))
    out.append(Sample((_arr(rng, (3, 4, 2), d), *_stats(rng, 4, d)), {"training": True, "momentum": 0.3}))
    out.append(Sample((_arr(rng, (0, 3), d), *_stats(rng, 3, d), *_params(rng, 3, d)), {"training": True}))
    return out


def _instance_norm_samples(rng, d):
    return [Sample((_arr(rng, (2, 3, 5), d),)),
            Sample((_arr(rng, (2, 3, 4, 3), d), *_stats(rng, 3, d), *_params(rng, 3, d))),
            Sample((_arr(rng, (2, 3, 4), d), *_stats(rng, 3, d), *_params(rng, 3, d)), {"use_input_stats": False}),
            Sample((_arr(rng, (1, 2, 2, 2, 2), d), None, None, *_params(rng, 2, d)), {"eps": 1e-3}),
            Sample((_arr(rng, (3, 2, 3), d), *_stats(rng, 2, d)), {"momentum": 0.5})]  # fmt: skip


def _lrn_samples(rng, d):
    return [Sample((_arr(rng, (2, 5, 3), d), 3)),
            Sample((_arr(rng, (1, 4, 2, 3), d), 2), {"alpha": 0.1, "beta": 0.5, "k": 2.0}),
            Sample((_arr(rng, (2, 3, 2, 1, 2), d), 4), {"alpha": 0.5}),
            Sample((_arr(rng, (1, 6, 2), d), 1))]  # fmt: skip


_DROPOUT_SHAPES = {"dropout": [(3, 4), (), (0, 2)], "dropout1d": [(2, 3, 4), (3, 4)],
                   "dropout2d": [(2, 3, 2, 2), (3, 2, 2)],
                   "dropout3d": [(1, 2, 2, 1, 2), (2, 2, 1, 2)], "alpha_dropout": [(3, 4), (5,)],
                   "feature_alpha_dropout": [(2, 3, 4), (3, 2)]}  # fmt: skip


def _dropout_samples(name):
    def make(rng, d):
        out = []
        for shape in _DROPOUT_SHAPES[name]:
            x = _arr(rng, shape, d)
            out += [Sample((x, 0.0, True)), Sample((x, 0.5, False)), Sample((x, 1.0, True))]
        return out

    return make


def _dropout_ref(x, p, training):
    return x * 0 if training and p == 1 else x


def _dropout_op(name):
    fn = getattr(F, name)

    def op(x, p, training):
        # A fixed key: with p=0, p=1 or training=False it decides nothing.
        return fn(x, p, training, key=ember.random.key(0))

    return op


def _index_array(rng, shape, n):
    return rng.integers(0, n, size=shape).astype(np.int32)


def _embedding_samples(rng, d):
    floating = np.dtype(d).kind == "f" or d == BF16
    w = _arr(rng, (6, 3), d)
    out = [Sample((_index_array(rng, (4,), 6), w)),
           Sample((_index_array(rng, (2, 3), 6), w), {"padding_idx": 1}),
           Sample((_index_array(rng, (), 6), w), {"padding_idx": -1}),
           Sample((_index_array(rng, (0, 2), 6), w))]  # fmt: skip
    if floating:
        big = _arr(rng, (5, 4), d, -3, 3)
        out += [Sample((_index_array(rng, (3, 2), 5), big), {"max_norm": 1.0}),
                Sample((_index_array(rng, (6,), 5), big), {"max_norm": 2.0, "norm_type": 1.0}),
                Sample((np.array([0, 1, 1, 3], np.int32), big), {"scale_grad_by_freq": True})]  # fmt: skip
    return out


def _embedding_ad_samples(rng, d):
    # padding_idx, max_norm and scale_grad_by_freq change the gradient on purpose (PyTorch's rules), so finite
    # differences of the forward do not give it; test_nn_dropout_embedding.py checks those against PyTorch.
    return [Sample((_index_array(rng, (4,), 6), _arr(rng, (6, 3), d))),
            Sample((_index_array(rng, (2, 3), 6), _arr(rng, (6, 3), d)))]  # fmt: skip


# --- layers through pure wrappers -----------------------------------------------------------------------

_BUILT: dict = {}


def _layer(name: str, args: tuple, kwargs: tuple) -> nn.Module:
    """The layer built once per configuration (stateful ones through nn.init_state, for their state key)."""
    cache_key = (name, args, kwargs)
    if cache_key not in _BUILT:
        cls = getattr(nn, name)
        extra = {"key": ember.random.key(0)} if name == "Embedding" else {}
        layer = cls(*args, **dict(kwargs), **extra)
        if nn.is_stateful(layer):
            layer = nn.init_state(layer)[0]
        _BUILT[cache_key] = layer
    return _BUILT[cache_key]


def _stateless_layer_op(name: str, param_names: tuple[str, ...] = ("weight", "bias")):
    def op(x, *params, args=(), training=True, **kwargs):
        layer = _layer(name, tuple(args), tuple(sorted(kwargs.items())))
        layer = layer if training else layer.eval()
        named = {n: p for n, p in zip(param_names, params) if p is not None}
        return nn.functional_call(layer, named, x)

    return op


def _stateful_layer_op(name: str):
    """op(x, weight, bias, running_mean, running_var, *, num_batches_tracked, training, **config)."""

    def op(x, weight=None, bias=None, running_mean=None, running_var=None, *, num_features, num_batches_tracked=0,
           training=True, **config):  # fmt: skip
        layer = _layer(name, (num_features,), tuple(sorted(config.items())))
        layer = layer if training else layer.eval()
        params = {n: p for n, p in (("weight", weight), ("bias", bias)) if p is not None}
        if running_mean is None:
            return nn.functional_call(layer, params, x)
        state = nn.State({layer.state_key: {"running_mean": running_mean, "running_var": running_var,
                                            "num_batches_tracked": enp.array(num_batches_tracked)}})  # fmt: skip
        out, state = nn.functional_call(layer, params, x, state)
        if not training:
            return out
        if name.startswith("InstanceNorm"):  # InstanceNorm does not count batches (as PyTorch)
            assert int(state["num_batches_tracked"]) == num_batches_tracked
        return out, state["running_mean"], state["running_var"]

    return op


def _stateful_layer_ref(kind: str):
    def ref(x, weight=None, bias=None, running_mean=None, running_var=None, *, num_features, num_batches_tracked=0,
            training=True, momentum=0.1, eps=1e-5, affine=True, track_running_stats=True):  # fmt: skip
        if kind.startswith("InstanceNorm") and x.ndim == int(kind[-2]) + 1:  # one sample without the batch dimension
            result = _stateful_layer_ref(kind)(x[None], weight, bias, running_mean, running_var,
                                               num_features=num_features, num_batches_tracked=num_batches_tracked,
                                               training=training, momentum=momentum, eps=eps, affine=affine,
                                               track_running_stats=track_running_stats)  # fmt: skip
            return (result[0][0], *result[1:]) if isinstance(result, tuple) else result[0]
        if kind.startswith("BatchNorm"):
            factor = 1 / (num_batches_tracked + 1) if momentum is None else momentum
            use_batch = training or running_mean is None
            return batch_norm_ref(x, running_mean, running_var, weight, bias, use_batch, factor, eps)
        factor = 0.0 if momentum is None else momentum
        use_input = training or running_mean is None
        return instance_norm_ref(x, running_mean, running_var, weight, bias, use_input, factor, eps)

    return ref


def _stateful_samples(kind: str, shapes):
    instance = kind.startswith("Instance")

    def make(rng, d):
        out = []
        for shape in shapes:
            c = shape[0] if instance and len(shape) < len(shapes[0]) else shape[1]
            x = _arr(rng, shape, d)
            p, s = _params(rng, c, d), _stats(rng, c, d)
            base = {"num_features": c}
            if instance:
                base.update(affine=True, track_running_stats=True)
            out += [Sample((x, *p, *s), {**base, "training": True}),
                    Sample((x, *p, *s), {**base, "training": False}),
                    Sample((x, *p, *s), {**base, "training": True, "momentum": None, "num_batches_tracked": 2})]
        c = shapes[0][1]
        x = _arr(rng, shapes[0], d)
        if instance:
            out.append(Sample((x,), {"num_features": c}))  # the defaults: no affine, no statistics
            out.append(Sample((x, None, None, *_stats(rng, c, d)), {"num_features": c, "affine": False,
                                                                  "track_running_stats": True, "momentum": 0.3}))
        else:
            out.append(Sample((x, *_params(rng, c, d)), {"num_features": c, "track_running_stats": False}))
            out.append(Sample((x, *_params(rng, c, d)), {"num_features": c, "track_running_stats": False,
                                                          "training": False}))
            out.append(Sample((x, None, None, *_stats(rng, c, d)), {"num_features": c, "affine": False, "eps": 1e-3,
                                                                  "momentum": 0.5}))
        return out

    return make


def _norm_layer_samples(rng, d):
    return [Sample((_arr(rng, (3, 4), d), _arr(rng, (4,), d, 0.5, 1.5), _arr(rng, (4,), d)), {"args": (4,)}),
            Sample((_arr(rng, (2, 3, 2), d), _arr(rng, (3, 2), d, 0.5, 1.5)),
                   {"args": ((3, 2),), "bias": False, "eps": 1e-3}),
            Sample((_arr(rng, (2, 5), d),), {"args": (5,), "elementwise_affine": False})]  # fmt: skip


def _rms_layer_samples(rng, d):
    return [Sample((_arr(rng, (3, 4), d), _arr(rng, (4,), d, 0.5, 1.5)), {"args": (4,)}),
            Sample((_arr(rng, (2, 3, 2), d),), {"args": ((3, 2),), "eps": 1e-3, "elementwise_affine": False})]


def _group_layer_samples(rng, d):
    return [Sample((_arr(rng, (2, 6, 3), d), *_params(rng, 6, d)), {"args": (3, 6)}),
            Sample((_arr(rng, (2, 4, 2, 2), d),), {"args": (2, 4), "affine": False, "eps": 1e-3})]


def _lrn_layer_samples(rng, d):
    return [Sample((_arr(rng, (2, 5, 3), d),), {"args": (3,)}),
            Sample((_arr(rng, (1, 4, 2, 2), d),), {"args": (2,), "alpha": 0.2, "beta": 0.5, "k": 1.5})]


def _dropout_layer_samples(shape):
    def make(rng, d):
        x = _arr(rng, shape, d)
        return [Sample((x,), {"args": (0.0,)}), Sample((x,), {"args": (0.5,), "training": False}),
                Sample((x,), {"args": (1.0,)})]  # fmt: skip

    return make


def _dropout_layer_op(name):
    def op(x, *, args, training=True):
        layer = _layer(name, tuple(args), ())
        layer = layer if training else layer.eval()
        return layer(x, key=ember.random.key(0))

    return op


def _dropout_layer_ref(x, *, args, training=True):
    return x * 0 if training and args[0] == 1.0 else x


def _embedding_layer_samples(rng, d):
    w = _arr(rng, (6, 3), d)
    out = [Sample((_index_array(rng, (2, 4), 6), w), {"args": (6, 3)}),
           Sample((_index_array(rng, (5,), 6), w), {"args": (6, 3), "padding_idx": 2})]  # fmt: skip
    if np.dtype(d).kind == "f" or d == BF16:
        out.append(Sample((_index_array(rng, (3,), 6), _arr(rng, (6, 3), d, -3, 3)), {"args": (6, 3), "max_norm": 1.5}))
    return out


def _embedding_layer_op(idx, weight, *, args, **kwargs):
    return nn.functional_call(_layer("Embedding", tuple(args), tuple(sorted(kwargs.items()))), {"weight": weight}, idx)


def _embedding_layer_ref(idx, weight, *, args, **kwargs):
    return embedding_ref(idx, weight, **kwargs)


_BN_SHAPES = {"BatchNorm1d": [(4, 3), (2, 3, 4)], "BatchNorm2d": [(2, 3, 2, 3)], "BatchNorm3d": [(2, 2, 2, 1, 3)],
              "InstanceNorm1d": [(2, 3, 4), (3, 5)], "InstanceNorm2d": [(2, 3, 2, 3), (3, 2, 2)],
              "InstanceNorm3d": [(2, 2, 2, 1, 3), (2, 1, 2, 3)]}  # fmt: skip

register(
    OpInfo("nn.functional.layer_norm", F.layer_norm, layer_norm_ref, FLOATING, _layer_norm_samples, FLOAT_ONLY,
           tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.functional.rms_norm", F.rms_norm, rms_norm_ref, FLOATING, _rms_norm_samples, FLOAT_ONLY, tol=_TOL,
           ad_unsupported=_AD_HALF, ref_in_dtype=True),
    OpInfo("nn.functional.group_norm", F.group_norm, group_norm_ref, FLOATING, _group_norm_samples, FLOAT_ONLY,
           tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.functional.batch_norm", F.batch_norm, batch_norm_ref, FLOATING, _batch_norm_samples, FLOAT_ONLY,
           tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.functional.instance_norm", F.instance_norm, instance_norm_ref, FLOATING, _instance_norm_samples,
           FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.functional.local_response_norm", F.local_response_norm, local_response_norm_ref, FLOATING,
           _lrn_samples, FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF),
    *[OpInfo(f"nn.functional.{name}", _dropout_op(name), _dropout_ref, FLOATING, _dropout_samples(name), FLOAT_ONLY,
             tol=_TOL) for name in _DROPOUT_SHAPES],
    OpInfo("nn.functional.embedding", F.embedding, embedding_ref, ALL, _embedding_samples,
           "", tol=_TOL, ad_samples=_embedding_ad_samples, ref_in_dtype=True),
    OpInfo("nn.LayerNorm", _stateless_layer_op("LayerNorm"),
           lambda x, *p, args=(), training=True, eps=1e-5, bias=True, elementwise_affine=True:
           layer_norm_ref(x, (args[0],) if isinstance(args[0], int) else args[0], *p, eps=eps),
           FLOATING, _norm_layer_samples, FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.RMSNorm", _stateless_layer_op("RMSNorm", ("weight",)),
           lambda x, *p, args=(), training=True, eps=None, elementwise_affine=True:
           rms_norm_ref(x, (args[0],) if isinstance(args[0], int) else args[0], *p, eps=eps),
           FLOATING, _rms_layer_samples, FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF, ref_in_dtype=True),
    OpInfo("nn.GroupNorm", _stateless_layer_op("GroupNorm"),
           lambda x, *p, args=(), training=True, eps=1e-5, affine=True: group_norm_ref(x, args[0], *p, eps=eps),
           FLOATING, _group_layer_samples, FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.LocalResponseNorm", _stateless_layer_op("LocalResponseNorm"),
           lambda x, args=(), training=True, **kw: local_response_norm_ref(x, args[0], **kw),
           FLOATING, _lrn_layer_samples, FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF),
    *[OpInfo(f"nn.{kind}", _stateful_layer_op(kind), _stateful_layer_ref(kind), FLOATING,
             _stateful_samples(kind, shapes), FLOAT_ONLY, tol=_TOL, ad_unsupported=_AD_HALF)
      for kind, shapes in _BN_SHAPES.items()],
    *[OpInfo(f"nn.{name}", _dropout_layer_op(name), _dropout_layer_ref, FLOATING, _dropout_layer_samples(shape),
             FLOAT_ONLY, tol=_TOL)
      for name, shape in [("Dropout", (3, 4)), ("Dropout1d", (2, 3, 4)), ("Dropout2d", (2, 3, 2, 2)),
                          ("Dropout3d", (1, 2, 2, 1, 2)), ("AlphaDropout", (3, 4)),
                          ("FeatureAlphaDropout", (2, 3, 4))]],
    OpInfo("nn.Embedding", _embedding_layer_op, _embedding_layer_ref, ALL, _embedding_layer_samples, "", tol=_TOL,
           ref_in_dtype=True, ad_samples=lambda rng, d: _embedding_layer_samples(rng, d)[:1]),
)  # fmt: skip
