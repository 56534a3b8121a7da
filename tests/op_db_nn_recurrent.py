"""op_db entries for the recurrent layers (nn.RNN, nn.LSTM, nn.GRU and their cells), through pure wrappers
(the parameters are operands), against step-by-step NumPy loops written here from PyTorch's equations.

Samples are few and small: every transform column runs a ``lax.scan`` per layer and direction.
"""

from __future__ import annotations

import numpy as np
from op_db import BF16, FLOATING, OpInfo, Sample, make_array, register

import ember
from ember import nn

_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
# A recurrence adds rounding errors up over the steps and layers (the values stay in (-1, 1)).
_TOL = {F16: (1e-2, 1e-2), BF16: (5e-2, 5e-2), F32: (1e-5, 1e-5)}
FLOAT_INPUT = "the recurrent layers take floating-point inputs and parameters only (as PyTorch's, real-valued)"


def _param_shapes(mode, input_size, hidden_size, num_layers=1, bias=True, bidirectional=False, proj_size=0, **_):
    """PyTorch's parameter names and shapes, in its order (named_parameters)."""
    gates, out = _GATES[mode] * hidden_size, proj_size or hidden_size
    directions = ("", "_reverse") if bidirectional else ("",)
    shapes = []
    for layer in range(num_layers):
        layer_in = input_size if layer == 0 else out * len(directions)
        for sfx in directions:
            shapes += [(f"weight_ih_l{layer}{sfx}", (gates, layer_in)), (f"weight_hh_l{layer}{sfx}", (gates, out))]
            if bias:
                shapes += [(f"bias_ih_l{layer}{sfx}", (gates,)), (f"bias_hh_l{layer}{sfx}", (gates,))]
            if proj_size:
                shapes.append((f"weight_hr_l{layer}{sfx}", (proj_size, hidden_size)))
    return shapes


# --- NumPy references ------------------------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_step(mode, x, h, c, w, nonlinearity="tanh"):
    """One step of PyTorch's cell equations; x (N, I), h (N, H_out), c (N, H) or None."""
    gi = x @ w["weight_ih"].T + w.get("bias_ih", 0)
    gh = h @ w["weight_hh"].T + w.get("bias_hh", 0)
    if mode == "RNN":
        pre = gi + gh
        return (np.tanh(pre) if nonlinearity == "tanh" else np.maximum(pre, 0)), None
    if mode == "GRU":
        i_r, i_z, i_n = np.split(gi, 3, axis=-1)
        h_r, h_z, h_n = np.split(gh, 3, axis=-1)
        r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
        n = np.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h, None
    i, f, g, o = np.split(gi + gh, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    if "weight_hr" in w:
        h = h @ w["weight_hr"].T
    return h, c


def _wide(a):
    """Operands inside tuples (hx, params) in float64 too: op_db upcasts only top-level arrays."""
    if isinstance(a, (tuple, list)):
        return tuple(_wide(x) for x in a)
    return None if a is None else np.asarray(a, dtype=np.float64)


def _np_layer(mode):
    def ref(x, hx, params, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
            bidirectional=False, proj_size=0, nonlinearity="tanh", eval=False):  # fmt: skip
        names = [n for n, _ in _param_shapes(mode, input_size, hidden_size, num_layers, bias, bidirectional, proj_size)]
        x, hx, params = _wide(x), _wide(hx), _wide(params)
        p = dict(zip(names, params, strict=True))
        unbatched = x.ndim == 2
        x = x[:, None] if unbatched else np.swapaxes(x, 0, 1) if batch_first else x
        dirs = 2 if bidirectional else 1
        n, out_size = x.shape[1], proj_size or hidden_size
        if hx is None:
            h0 = np.zeros((num_layers * dirs, n, out_size))
            c0 = np.zeros((num_layers * dirs, n, hidden_size))
        else:
            h0, c0 = (hx if mode == "LSTM" else (hx, None))
            if unbatched:
                h0, c0 = h0[:, None], None if c0 is None else c0[:, None]
        h_n, c_n = [], []
        for layer in range(num_layers):
            outs = []
            for d, sfx in enumerate(("", "_reverse")[:dirs]):
                w = {k: p[f"{k}_l{layer}{sfx}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
                     if f"{k}_l{layer}{sfx}" in p}  # fmt: skip
                h, c = h0[layer * dirs + d], None if c0 is None else c0[layer * dirs + d]
                ys = [None] * x.shape[0]
                for t in (range(x.shape[0]) if d == 0 else reversed(range(x.shape[0]))):
                    h, c = _np_step(mode, x[t], h, c, w, nonlinearity)
                    ys[t] = h
                outs.append(np.stack(ys))
                h_n.append(h)
                c_n.append(c)
            x = np.concatenate(outs, axis=-1)  # no dropout: the samples are eval mode or dropout=0
        h_n = np.stack(h_n)
        results = [x, h_n] + ([np.stack(c_n)] if mode == "LSTM" else [])
        if unbatched:
            return (results[0][:, 0], *[r[:, 0] for r in results[1:]])
        return (np.swapaxes(x, 0, 1) if batch_first else x, *results[1:])

    return ref


def _np_cell(mode):
    def ref(x, hx, params, input_size, hidden_size, bias=True, nonlinearity="tanh"):
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")[: 4 if bias else 2]
        x, hx, params = _wide(x), _wide(hx), _wide(params)
        w = dict(zip(names, params, strict=True))
        unbatched = x.ndim == 1
        x = x[None] if unbatched else x
        zeros = np.zeros((x.shape[0], hidden_size))
        if hx is None:
            h, c = zeros, zeros
        else:
            h, c = hx if mode == "LSTM" else (hx, None)
            h, c = (h[None], None if c is None else c[None]) if unbatched else (h, c)
        h, c = _np_step(mode, x, h, c, w, nonlinearity)
        results = (h, c) if mode == "LSTM" else (h,)
        return tuple(r[0] for r in results) if unbatched else results

    return ref


# --- the pure wrappers ------------------------------------------------------------------------------

_BUILT: dict = {}


def _built(cls: str, config: dict) -> nn.Module:
    """The layer for a static configuration, built once (its own weights are replaced on every call)."""
    key = (cls, tuple(sorted(config.items())))
    if key not in _BUILT:
        kwargs = {k: v for k, v in config.items() if k != "eval"}
        layer = getattr(nn, cls)(key=ember.random.key(0), **kwargs)
        _BUILT[key] = layer.eval() if config.get("eval") else layer
    return _BUILT[key]


def _flat(out) -> tuple:
    if isinstance(out, (tuple, list)):
        return tuple(a for item in out for a in _flat(item))
    return (out,)


def _wrapper(cls: str):
    def op(x, hx, params, **config):
        layer = _built(cls, config)
        names = [n for n, _ in layer.named_parameters()]
        return _flat(nn.functional_call(layer, dict(zip(names, params, strict=True)), x, hx))

    op.__name__ = f"nn_{cls}"
    return op


# --- samples ----------------------------------------------------------------------------------------


def _arr(rng, shape, dtype, bound=1.0):
    return make_array(rng, shape, dtype, -bound, bound)


def _layer_samples(mode, cases):
    """cases: (x shape, with hx, config); weights uniform in ±0.6 (PyTorch's ±1/sqrt(H) for small H)."""

    def make(rng, dtype):
        out = []
        for shape, with_hx, config in cases:
            config = dict(config)
            dirs = 2 if config.get("bidirectional") else 1
            states = dirs * config.get("num_layers", 1)
            batch = () if len(shape) == 2 else (shape[0] if config.get("batch_first") else shape[1],)
            hx = None
            if with_hx:
                h = _arr(rng, (states, *batch, config.get("proj_size") or config["hidden_size"]), dtype)
                hx = (h, _arr(rng, (states, *batch, config["hidden_size"]), dtype)) if mode == "LSTM" else h
            params = tuple(_arr(rng, s, dtype, 0.6) for _, s in _param_shapes(mode, **config))
            out.append(Sample((_arr(rng, shape, dtype), hx, params), config))
        return out

    return make


def _cell_samples(mode, cases):
    def make(rng, dtype):
        out = []
        for shape, with_hx, config in cases:
            hid = config["hidden_size"]
            gates = _GATES[mode] * hid
            shapes = [(gates, config["input_size"]), (gates, hid)]
            shapes += [(gates,)] * 2 if config.get("bias", True) else []
            batch = shape[:-1]
            hx = None
            if with_hx:
                hx = (_arr(rng, (*batch, hid), dtype), _arr(rng, (*batch, hid), dtype)) if mode == "LSTM" else \
                    _arr(rng, (*batch, hid), dtype)  # fmt: skip
            params = tuple(_arr(rng, s, dtype, 0.6) for s in shapes)
            out.append(Sample((_arr(rng, shape, dtype), hx, params), dict(config)))
        return out

    return make


_COMMON = [
    ((4, 2, 3), True, {"input_size": 3, "hidden_size": 3, "num_layers": 2, "bidirectional": True}),
    ((2, 3, 2), False, {"input_size": 2, "hidden_size": 2, "batch_first": True, "bias": False}),
    ((3, 2), True, {"input_size": 2, "hidden_size": 3, "num_layers": 2, "dropout": 0.5, "eval": True}),
    ((2, 0, 2), True, {"input_size": 2, "hidden_size": 2}),
]
_RNN = _COMMON[:2] + [((3, 2), True, {"input_size": 2, "hidden_size": 3, "nonlinearity": "relu", "num_layers": 2,
                                      "dropout": 0.5, "eval": True})] + _COMMON[3:]  # fmt: skip
_LSTM = [
    ((4, 2, 3), True, {"input_size": 3, "hidden_size": 3, "num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ((2, 3, 2), False, {"input_size": 2, "hidden_size": 2, "batch_first": True, "bias": False}),
    *_COMMON[2:],
]
_CELL = [((3, 2), True, {"input_size": 2, "hidden_size": 3}),
         ((2,), False, {"input_size": 2, "hidden_size": 2, "bias": False}),
         ((0, 2), True, {"input_size": 2, "hidden_size": 2})]  # fmt: skip
_RNN_CELL = [(s, h, {**c, "nonlinearity": nl}) for (s, h, c), nl in zip(_CELL, ("relu", "tanh", "relu"))]


def _entry(cls, mode, ref, samples):
    return OpInfo(f"nn.{cls}", _wrapper(cls), ref, FLOATING, samples, FLOAT_INPUT, tol=_TOL, ad_tol={})


register(
    _entry("RNN", "RNN", _np_layer("RNN"), _layer_samples("RNN", _RNN)),
    _entry("LSTM", "LSTM", _np_layer("LSTM"), _layer_samples("LSTM", _LSTM)),
    _entry("GRU", "GRU", _np_layer("GRU"), _layer_samples("GRU", _COMMON)),
    _entry("RNNCell", "RNN", _np_cell("RNN"), _cell_samples("RNN", _RNN_CELL)),
    _entry("LSTMCell", "LSTM", _np_cell("LSTM"), _cell_samples("LSTM", _CELL)),
    _entry("GRUCell", "GRU", _np_cell("GRU"), _cell_samples("GRU", _CELL)),
)
