"""op_db entries for attention and the Transformer layers, against NumPy references written here.

The references loop over the batch and the heads, one (L, S) score matrix at a time, building the masks as the
PyTorch documentation describes them. Layers run in eval mode (dropout off) through a pure wrapper: the layer is
built once and called with ``nn.functional_call`` on the sample's parameters.
"""

from __future__ import annotations

import math

import numpy as np
from op_db import BF16, FLOATING, OpInfo, Sample, make_array, register
from scipy.special import erf

import ember
from ember import nn
from ember.nn import functional as F

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
FLOAT_ONLY = "attention is defined for floating inputs only (as in PyTorch)"
_TOL = {F16: (5e-3, 5e-3), BF16: (3e-2, 3e-2), F32: (2e-5, 2e-5)}
# Layers in half precision round every projection and normalisation: a few units in the last place, added up.
_LAYER_TOL = {F16: (2e-2, 2e-2), BF16: (1e-1, 1e-1), F32: (5e-5, 5e-5)}

# --- references ------------------------------------------------------------------------------------


def _softmax(s: np.ndarray) -> np.ndarray:
    """Softmax of a row; a row with every score -inf (every key masked) gives zeros, as PyTorch's SDPA."""
    if np.all(s == -np.inf):
        return np.zeros_like(s)
    e = np.exp(s - s.max())
    return e / e.sum()


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray, scale: float) -> tuple:
    """One head: q (L, E), k (S, E), v (S, Ev), bias (L, S) added to the scores; output (L, Ev) and weights (L, S)."""
    w = np.stack([_softmax(row) for row in (q @ k.T * scale + bias)]) if len(q) else np.zeros((0, len(k)))
    return w @ v, w


def _sdpa_ref(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(E) if scale is None else scale
    if enable_gqa and q.ndim >= 3:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    bias = np.zeros((L, S))
    if is_causal:
        bias = np.where(np.arange(S)[None, :] <= np.arange(L)[:, None], 0.0, -np.inf)
    if attn_mask is not None:
        bias = bias + (np.where(attn_mask, 0.0, -np.inf) if attn_mask.dtype == bool else attn_mask)
    bias = np.broadcast_to(bias, (*batch, L, S))
    q, k, v = (np.broadcast_to(x, (*batch, *x.shape[-2:])) for x in (q, k, v))
    out = np.zeros((*batch, L, v.shape[-1]))
    for i in np.ndindex(*batch):
        out[i] = _attention(q[i], k[i], v[i], bias[i], scale)[0]
    return out


def _additive(mask):
    """A PyTorch MultiheadAttention mask as an additive one: bool ``True`` is masked out (-inf)."""
    if mask is None:
        return None
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def _mha_ref(query, key, value, p, num_heads, key_padding_mask=None, need_weights=True, attn_mask=None,
             average_attn_weights=True, is_causal=False, add_zero_attn=False, batch_first=False):  # fmt: skip
    """nn.MultiheadAttention in eval mode, from the parameters ``p`` (a dict of PyTorch's names)."""
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = query[:, None], key[:, None], value[:, None]
        key_padding_mask = None if key_padding_mask is None else key_padding_mask[None]
    elif batch_first:
        query, key, value = (x.swapaxes(0, 1) for x in (query, key, value))
    L, N, E = query.shape
    d = E // num_heads
    if "in_proj_weight" in p:
        wq, wk, wv = np.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq, bk, bv = np.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0.0, 0.0, 0.0)
    out = np.zeros((L, N, E))
    weights = np.zeros((N, num_heads, L, key.shape[0] + ("bias_k" in p) + add_zero_attn))
    use_causal = is_causal and key_padding_mask is None and not need_weights
    for n in range(N):
        Q, K, V = query[:, n] @ wq.T + bq, key[:, n] @ wk.T + bk, value[:, n] @ wv.T + bv
        extra = 0
        if "bias_k" in p:
            K, V = np.vstack([K, p["bias_k"].reshape(1, E)]), np.vstack([V, p["bias_v"].reshape(1, E)])
            extra += 1
        heads = []
        for h in range(num_heads):
            sl = slice(h * d, (h + 1) * d)
            Kh, Vh = K[:, sl], V[:, sl]
            if add_zero_attn:
                Kh, Vh = np.vstack([Kh, np.zeros((1, d))]), np.vstack([Vh, np.zeros((1, d))])
            S = len(Kh)
            bias = np.zeros((L, S))
            if use_causal:
                bias = np.where(np.arange(S)[None, :] <= np.arange(L)[:, None], 0.0, -np.inf)
            elif attn_mask is not None:
                m = _additive(attn_mask)
                m = m if m.ndim == 2 else m[n * num_heads + h]
                bias[:, : m.shape[1]] += m
            if key_padding_mask is not None:
                bias[:, : key_padding_mask.shape[1]] += _additive(key_padding_mask)[n]
            o, w = _attention(Q[:, sl], Kh, Vh, bias, 1 / math.sqrt(d))
            heads.append(o)
            weights[n, h] = w
        out[:, n] = np.hstack(heads) @ p["out_proj.weight"].T + p.get("out_proj.bias", 0.0)
    if unbatched:
        out, weights = out[:, 0], weights[0]
    elif batch_first:
        out = out.swapaxes(0, 1)
    if not need_weights:
        return out
    return out, weights.mean(axis=-3) if average_attn_weights else weights


def _layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out = (x - mean) / np.sqrt(var + eps)
    return out * w + (0.0 if b is None else b)


_ACTS = {"relu": lambda x: np.maximum(x, 0), "gelu": lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))}


def _ff(x, p, act):
    hidden = act(x @ p["linear1.weight"].T + p.get("linear1.bias", 0.0))
    return hidden @ p["linear2.weight"].T + p.get("linear2.bias", 0.0)


def _sub(p, prefix):
    return {name[len(prefix) + 1 :]: v for name, v in p.items() if name.startswith(prefix + ".")}


def _encoder_layer_ref(x, p, nhead, cfg, src_mask=None, src_key_padding_mask=None, is_causal=False):
    act = _ACTS[cfg.get("activation", "relu")]
    eps, bf = cfg.get("layer_norm_eps", 1e-5), cfg.get("batch_first", False)

    def norm(x, name):
        return _layer_norm(x, p[f"{name}.weight"], p.get(f"{name}.bias"), eps)

    def sa(x):
        return _mha_ref(x, x, x, _sub(p, "self_attn"), nhead, src_key_padding_mask, False, src_mask,
                        is_causal=is_causal, batch_first=bf)

    def ff(x):
        return _ff(x, p, act)

    if cfg.get("norm_first", False):
        x = x + sa(norm(x, "norm1"))
        return x + ff(norm(x, "norm2"))
    x = norm(x + sa(x), "norm1")
    return norm(x + ff(x), "norm2")


def _decoder_layer_ref(x, memory, p, nhead, cfg, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                       memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):  # fmt: skip
    act = _ACTS[cfg.get("activation", "relu")]
    eps, bf = cfg.get("layer_norm_eps", 1e-5), cfg.get("batch_first", False)

    def norm(x, name):
        return _layer_norm(x, p[f"{name}.weight"], p.get(f"{name}.bias"), eps)

    def sa(x):
        return _mha_ref(x, x, x, _sub(p, "self_attn"), nhead, tgt_key_padding_mask, False, tgt_mask,
                        is_causal=tgt_is_causal, batch_first=bf)  # fmt: skip

    def mha(x):
        return _mha_ref(x, memory, memory, _sub(p, "multihead_attn"), nhead, memory_key_padding_mask, False,
                        memory_mask, is_causal=memory_is_causal, batch_first=bf)

    def ff(x):
        return _ff(x, p, act)

    if cfg.get("norm_first", False):
        x = x + sa(norm(x, "norm1"))
        x = x + mha(norm(x, "norm2"))
        return x + ff(norm(x, "norm3"))
    x = norm(x + sa(x), "norm1")
    x = norm(x + mha(x), "norm2")
    return norm(x + ff(x), "norm3")


# --- wrappers ----------------------------------------------------------------------------------------

_BUILT: dict = {}


def _layer(name: str, args: tuple, kwargs: tuple) -> nn.Module:
    """``nn.<name>(*args, **kwargs)`` in eval mode, built once; the stacks wrap a layer built the same way."""
    cache_key = (name, args, kwargs)
    if cache_key not in _BUILT:
        kw = dict(kwargs)
        if name in ("TransformerEncoder", "TransformerDecoder"):
            inner = name + "Layer"
            layer = getattr(nn, inner)(*args, **{k: v for k, v in kw.items() if k not in ("num_layers", "norm")},
                                       key=ember.random.key(0))  # fmt: skip
            norm = nn.LayerNorm(args[0]) if kw.get("norm") else None
            model = getattr(nn, name)(layer, kw["num_layers"], norm=norm)
        else:
            model = getattr(nn, name)(*args, **kw, key=ember.random.key(0))
        _BUILT[cache_key] = model.eval()
    return _BUILT[cache_key]


def _names(name: str, args: tuple, kwargs: tuple) -> list[str]:
    return [n for n, _ in _layer(name, args, kwargs).named_parameters()]


def _outputs(out):
    """The layer's outputs without the ``None`` of ``need_weights=False``."""
    if isinstance(out, tuple):
        return out[0] if out[1] is None else out
    return out


def _layer_op(name: str, inputs: int):
    def op(*arrays, args=(), kwargs=(), **call):
        layer = _layer(name, args, kwargs)
        params = dict(zip(_names(name, args, kwargs), arrays[inputs:], strict=True))
        return _outputs(nn.functional_call(layer, params, *arrays[:inputs], **call))

    op.__name__ = f"nn.{name}"
    return op


def _mha_layer_ref(*arrays, args=(), kwargs=(), **call):
    names = _names("MultiheadAttention", args, kwargs)
    p = dict(zip(names, arrays[3:], strict=True))
    kw = dict(kwargs)
    return _mha_ref(*arrays[:3], p, args[1], add_zero_attn=kw.get("add_zero_attn", False),
                    batch_first=kw.get("batch_first", False), **call)  # fmt: skip


def _encoder_ref(name):
    def ref(*arrays, args=(), kwargs=(), **call):
        p = dict(zip(_names(name, args, kwargs), arrays[1:], strict=True))
        cfg = dict(kwargs)
        x = arrays[0]
        if name == "TransformerEncoderLayer":
            return _encoder_layer_ref(x, p, args[1], cfg, **call)
        call = dict(call)
        mask = call.pop("mask", None)
        for i in range(cfg["num_layers"]):
            x = _encoder_layer_ref(x, _sub(p, f"layers.{i}"), args[1], cfg, src_mask=mask, **call)
        return _layer_norm(x, p["norm.weight"], p["norm.bias"]) if cfg.get("norm") else x

    return ref


def _decoder_ref(name):
    def ref(*arrays, args=(), kwargs=(), **call):
        p = dict(zip(_names(name, args, kwargs), arrays[2:], strict=True))
        cfg = dict(kwargs)
        x, memory = arrays[:2]
        if name == "TransformerDecoderLayer":
            return _decoder_layer_ref(x, memory, p, args[1], cfg, **call)
        for i in range(cfg["num_layers"]):
            x = _decoder_layer_ref(x, memory, _sub(p, f"layers.{i}"), args[1], cfg, **call)
        return _layer_norm(x, p["norm.weight"], p["norm.bias"]) if cfg.get("norm") else x

    return ref


def _mha_functional_op(q, k, v, in_w, in_b, out_w, out_b, *extra, num_heads, bias_kv=False, **kw):
    """F.multi_head_attention_forward with packed projections; ``extra`` holds bias_k and bias_v."""
    bias_k, bias_v = extra if bias_kv else (None, None)
    return _outputs(F.multi_head_attention_forward(q, k, v, q.shape[-1], num_heads, in_w, in_b, bias_k, bias_v,
                                                   kw.pop("add_zero_attn", False), 0.0, out_w, out_b,
                                                   **kw))  # fmt: skip


def _mha_functional_ref(q, k, v, in_w, in_b, out_w, out_b, *extra, num_heads, bias_kv=False, **kw):
    p = {"in_proj_weight": in_w, "in_proj_bias": in_b, "out_proj.weight": out_w, "out_proj.bias": out_b}
    if bias_kv:
        p["bias_k"], p["bias_v"] = extra
    return _mha_ref(q, k, v, p, num_heads, **kw)


# --- samples -----------------------------------------------------------------------------------------


def _x(rng, shape, d):
    return make_array(rng, shape, d, -1.0, 1.0)


def _bool_mask(rng, shape, masked_out: bool):
    """A random bool mask that leaves every row at least one key (column 0), in either convention."""
    m = rng.random(shape) < 0.4
    m[..., 0] = False
    return m if masked_out else ~m


def _sdpa_samples(rng, d):
    s = []
    q, k, v = _x(rng, (2, 3, 4, 5), d), _x(rng, (2, 3, 6, 5), d), _x(rng, (2, 3, 6, 7), d)
    s.append(Sample((q, k, v)))
    s.append(Sample((q, k, v), {"attn_mask": _bool_mask(rng, (4, 6), False)}))
    s.append(Sample((q, k, v), {"attn_mask": _x(rng, (3, 1, 6), d)}))
    s.append(Sample((q, k, v), {"is_causal": True, "scale": 0.3}))
    full = _bool_mask(rng, (2, 1, 4, 6), False)
    full[0, 0, 1] = False  # a query with every key masked: zeros, as PyTorch
    s.append(Sample((q, k, v), {"attn_mask": full}))
    s.append(Sample((_x(rng, (3, 5), d), _x(rng, (4, 5), d), _x(rng, (4, 2), d)), {"is_causal": True}))
    s.append(Sample((q, _x(rng, (2, 1, 6, 5), d), _x(rng, (2, 1, 6, 3), d)), {"enable_gqa": True}))
    s.append(Sample((_x(rng, (4, 1, 5), d), _x(rng, (1, 3, 5), d), _x(rng, (1, 3, 2), d))))
    s.append(Sample((_x(rng, (0, 2, 3, 4), d), _x(rng, (0, 2, 5, 4), d), _x(rng, (0, 2, 5, 4), d))))
    s.append(Sample((_x(rng, (2, 3, 4), d), _x(rng, (2, 0, 4), d), _x(rng, (2, 0, 5), d))))  # no keys: zeros, as PyTorch
    return s


def _params(rng, name, args, kwargs, d):
    layer = _layer(name, args, kwargs)
    return [make_array(rng, p.shape, d, -0.5, 0.5) for _, p in layer.named_parameters()]


def _mha_samples(rng, d):
    E, H = 6, 2
    cases = [
        ((), {}),
        ((), {"attn_mask": "bool2", "key_padding_mask": "kpm_bool"}),
        ((), {"attn_mask": "float3", "need_weights": True, "average_attn_weights": False}),
        ((("batch_first", True),), {"key_padding_mask": "kpm_float", "need_weights": False}),
        ((("kdim", 3), ("vdim", 5)), {"attn_mask": "float2"}),
        ((("add_bias_kv", True), ("add_zero_attn", True)), {"attn_mask": "bool3", "key_padding_mask": "kpm_bool"}),
        ((("bias", False),), {"attn_mask": "causal", "is_causal": True, "need_weights": False}),
        ((), {"attn_mask": "causal", "is_causal": True}),
        ((("add_zero_attn", True),), {"unbatched": True, "attn_mask": "bool3", "key_padding_mask": "kpm_bool"}),
        ((("add_bias_kv", True),), {"unbatched": True, "need_weights": True, "average_attn_weights": False}),
    ]
    out = []
    for kwargs, call in cases:
        call = dict(call)
        cfg = dict(kwargs)
        L, N, S = 4, 3, 5
        unbatched = call.pop("unbatched", False)
        lead = (L,) if unbatched else ((N, L) if cfg.get("batch_first") else (L, N))
        src = (S,) if unbatched else ((N, S) if cfg.get("batch_first") else (S, N))
        q, k, v = _x(rng, (*lead, E), d), _x(rng, (*src, cfg.get("kdim", E)), d), _x(rng, (*src, cfg.get("vdim", E)), d)
        heads = H if unbatched else N * H
        masks = {"bool2": lambda: _bool_mask(rng, (L, S), True), "bool3": lambda: _bool_mask(rng, (heads, L, S), True),
                 "float2": lambda: _x(rng, (L, S), d), "float3": lambda: _x(rng, (heads, L, S), d),
                 "causal": lambda: np.triu(np.ones((L, L), bool), 1),
                 "kpm_bool": lambda: _bool_mask(rng, (S,) if unbatched else (N, S), True),
                 "kpm_float": lambda: _x(rng, (N, S), d)}  # fmt: skip
        for name in ("attn_mask", "key_padding_mask"):
            if name in call:
                call[name] = masks[call[name]]()
        if call.get("is_causal"):
            k, v = _x(rng, (*lead, E), d), _x(rng, (*lead, E), d)
        args = (E, H)
        out.append(Sample((q, k, v, *_params(rng, "MultiheadAttention", args, kwargs, d)),
                          {"args": args, "kwargs": kwargs, **call}))  # fmt: skip
    return out


def _mha_functional_samples(rng, d):
    E, H, L, N, S = 4, 2, 3, 2, 5

    def w(*shape):
        return make_array(rng, shape, d, -0.5, 0.5)

    base = (_x(rng, (L, N, E), d), _x(rng, (S, N, E), d), _x(rng, (S, N, E), d), w(3 * E, E), w(3 * E), w(E, E), w(E))
    return [
        Sample(base, {"num_heads": H}),
        Sample((*base, w(1, 1, E), w(1, 1, E)), {"num_heads": H, "bias_kv": True, "add_zero_attn": True,
                                                 "key_padding_mask": _bool_mask(rng, (N, S), True)}),
        Sample(base, {"num_heads": H, "attn_mask": _x(rng, (L, S), d), "need_weights": False}),
        Sample(base, {"num_heads": 1, "average_attn_weights": False}),
    ]


_ENC_CASES = [((), {}), ((("norm_first", True),), {"src_mask": "causal", "is_causal": True}),
              ((("activation", "gelu"), ("batch_first", True)), {"src_key_padding_mask": "kpm"}),
              ((("bias", False), ("layer_norm_eps", 1e-3)), {"src_mask": "float"}),
              ((("norm_first", True),), {"unbatched": True})]  # fmt: skip
_DEC_CASES = [((), {}), ((("norm_first", True),), {"tgt_mask": "causal", "tgt_is_causal": True,
                                                    "memory_key_padding_mask": "mkpm"}),
              ((("activation", "gelu"), ("batch_first", True)),
               {"tgt_key_padding_mask": "kpm", "memory_mask": "mfloat"}),
              ((("norm_first", True),), {"unbatched": True})]  # fmt: skip


def _transformer_samples(name, cases, decoder, stack=None):
    def make(rng, d):
        out = []
        D, H, FF, L, N, S = 6, 2, 8, 4, 2, 5
        for kwargs, call in cases:
            call, cfg = dict(call), dict(kwargs)
            if stack is not None:
                kwargs = (*kwargs, ("dim_feedforward", FF), *stack)
            else:
                kwargs = (*kwargs, ("dim_feedforward", FF))
            unbatched = call.pop("unbatched", False)
            bf = cfg.get("batch_first", False)

            def shape(n):
                return (n, D) if unbatched else ((N, n, D) if bf else (n, N, D))

            masks = {"causal": lambda: np.triu(np.ones((L, L), bool), 1), "float": lambda: _x(rng, (L, L), d),
                     "kpm": lambda: _bool_mask(rng, (N, L), True), "mkpm": lambda: _bool_mask(rng, (N, S), True),
                     "mfloat": lambda: _x(rng, (L, S), d)}  # fmt: skip
            for k in list(call):
                if isinstance(call[k], str):
                    call[k] = masks[call[k]]()
            if stack is not None and "src_mask" in call:
                call["mask"] = call.pop("src_mask")
            inputs = (_x(rng, shape(L), d), _x(rng, shape(S), d)) if decoder else (_x(rng, shape(L), d),)
            args = (D, H)
            params = _params(rng, name, args, kwargs, d)
            out.append(Sample((*inputs, *params), {"args": args, "kwargs": kwargs, **call}))
        return out

    return make


_STACK_ENC = [((), {}), ((("norm_first", True),), {"src_mask": "causal", "is_causal": True})]
_STACK_DEC = [((), {"tgt_mask": "causal", "tgt_is_causal": True}), ((("activation", "gelu"),), {})]



def _entry(name, op, ref, samples, tol=_LAYER_TOL) -> OpInfo:
    # Every sample is finite and moderate: the autodiff columns take them all (the default leaves out any
    # sample with one parameter below 1e-4 in size, which the many random parameters of a layer often have).
    return OpInfo(name, op, ref, FLOATING, samples, FLOAT_ONLY, tol=tol, ad_samples=samples)


register(
    _entry("nn.functional.scaled_dot_product_attention", F.scaled_dot_product_attention, _sdpa_ref, _sdpa_samples,
           _TOL),
    _entry("nn.functional.multi_head_attention_forward", _mha_functional_op, _mha_functional_ref,
           _mha_functional_samples),
    _entry("nn.MultiheadAttention", _layer_op("MultiheadAttention", 3), _mha_layer_ref, _mha_samples),
    _entry("nn.TransformerEncoderLayer", _layer_op("TransformerEncoderLayer", 1),
           _encoder_ref("TransformerEncoderLayer"), _transformer_samples("TransformerEncoderLayer", _ENC_CASES, False)),
    _entry("nn.TransformerDecoderLayer", _layer_op("TransformerDecoderLayer", 2),
           _decoder_ref("TransformerDecoderLayer"), _transformer_samples("TransformerDecoderLayer", _DEC_CASES, True)),
    _entry("nn.TransformerEncoder", _layer_op("TransformerEncoder", 1), _encoder_ref("TransformerEncoder"),
           _transformer_samples("TransformerEncoder", _STACK_ENC, False, (("num_layers", 2), ("norm", True)))),
    _entry("nn.TransformerDecoder", _layer_op("TransformerDecoder", 2), _decoder_ref("TransformerDecoder"),
           _transformer_samples("TransformerDecoder", _STACK_DEC, True, (("num_layers", 2), ("norm", False)))),
)
