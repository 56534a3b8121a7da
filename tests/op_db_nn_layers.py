"""op_db entries for ember.nn's containers: ``Sequential`` (numbered and named), ``ModuleList`` and
``ModuleDict``, each holding small Linear / activation layers (a nested container too), run through a
pure wrapper (the container built once, called with ``nn.functional_call`` on the sample's parameters)
against the same computation written in NumPy."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import scipy.special
from op_db import BF16, FLOATING, OpInfo, Sample, make_array, register

import ember
import ember.numpy as enp
from ember import nn

F16 = np.dtype(np.float16)
_TOL = {F16: (1e-2, 1e-2), BF16: (2e-2, 5e-2), np.dtype(np.float32): (1e-5, 1e-5)}
_COARSE = "sums of products are too coarse for finite differences; float32/64 check the rule"
_AD_HALF = {F16: f"float16 {_COARSE}", BF16: f"bfloat16 {_COARSE}"}
FLOAT_LAYERS = ("the containers hold Tanh/Sigmoid layers, which take floating inputs only: ints, bool and complex "
                "raise DTypeError there (the Linear entries cover the other dtypes)")  # fmt: skip

# A layer spec: ("Linear", in, out, bias) or the name of an activation layer.
_ACTIVATIONS = {"Tanh": np.tanh, "Sigmoid": scipy.special.expit, "Identity": lambda x: x}


class _Chain(nn.Module):
    """A user module holding a ModuleList: applies its blocks in order (PyTorch's ModuleList idiom)."""

    blocks: nn.ModuleList

    def __call__(self, x, *, key=None):
        for block in self.blocks:
            x = block(x)
        return x


class _Heads(nn.Module):
    """A user module holding a ModuleDict: every head on the same input, outputs joined on the last axis."""

    heads: nn.ModuleDict

    def __call__(self, x, *, key=None):
        return enp.concatenate([self.heads[name](x) for name in self.heads], axis=-1)


def _one(spec, key):
    if isinstance(spec, str):
        return getattr(nn, spec)()
    if spec[0] == "Seq":
        return nn.Sequential(*(_one(s, k) for s, k in zip(spec[1:], ember.random.split(key, len(spec) - 1))))
    _, n_in, n_out, bias = spec
    return nn.Linear(n_in, n_out, bias=bias, key=key)


_BUILT: dict = {}


def _container(kind: str, specs: tuple) -> nn.Module:
    """The container ``kind`` of the layers ``specs``, built once (its arrays are replaced on every call)."""
    if (kind, specs) not in _BUILT:
        layers = [_one(s, k) for s, k in zip(specs, ember.random.split(ember.random.key(0), len(specs)))]
        if kind == "Sequential":
            built = nn.Sequential(*layers)
        elif kind == "NamedSequential":
            built = nn.Sequential(OrderedDict((f"layer{i}", layer) for i, layer in enumerate(layers)))
        elif kind == "ModuleList":
            built = _Chain(nn.ModuleList(layers))
        else:
            built = _Heads(nn.ModuleDict({f"head{i}": layer for i, layer in enumerate(layers)}))
        _BUILT[kind, specs] = built
    return _BUILT[kind, specs]


def _op(kind: str):
    def op(x, *params, specs=(), named=False):
        model = _container("NamedSequential" if named else kind, specs)
        names = [name for name, _ in model.named_parameters()]
        return nn.functional_call(model, dict(zip(names, params, strict=True)), x)

    op.__name__ = f"nn.{kind}"
    return op


# --- the NumPy reference ----------------------------------------------------------------------------------


def _apply(spec, x, params):
    """``spec`` applied to ``x``, taking its parameters from the front of the list ``params``."""
    if isinstance(spec, str):
        return _ACTIVATIONS[spec](x)
    if spec[0] == "Seq":
        for inner in spec[1:]:
            x = _apply(inner, x, params)
        return x
    w = params.pop(0)
    b = params.pop(0) if spec[3] else 0.0
    return x @ w.T + b


def _ref(kind: str):
    def ref(x, *params, specs=(), named=False):
        params = list(params)
        if kind == "ModuleDict":
            return np.concatenate([_apply(s, x, params) for s in specs], axis=-1)
        for spec in specs:
            x = _apply(spec, x, params)
        return x

    return ref


def _samples(kind: str, cases):
    """cases: (input shape, layer specs[, named]); the parameters' shapes come from the built container."""

    def make(rng, d):
        out = []
        for shape, specs, *named in cases:
            params = [make_array(rng, p.shape, d, -1, 1) for _, p in _container(kind, specs).named_parameters()]
            kwargs = dict(specs=specs, named=True) if named else dict(specs=specs)  # Sequential(OrderedDict(...))
            out.append(Sample((make_array(rng, shape, d, -2, 2), *params), kwargs))
        return out

    return make


_MLP = (("Linear", 3, 4, True), "Tanh", ("Linear", 4, 2, True))
_DEEP = (("Linear", 5, 3, False), "Sigmoid", ("Seq", ("Linear", 3, 3, True), "Tanh"), "Identity",
         ("Linear", 3, 1, True))
_CHAIN_CASES = [((4, 3), _MLP), ((2, 3, 3), _MLP), ((3,), _MLP), ((0, 3), _MLP), ((2, 5), _DEEP)]
_NAMED_CASES = [((4, 3), _MLP, True), ((2, 5), _DEEP, True)]
_HEADS = (("Linear", 3, 2, True), ("Seq", ("Linear", 3, 4, False), "Tanh"), ("Linear", 3, 1, False))
_ONE_HEAD = (("Seq", ("Linear", 3, 2, True), "Sigmoid"),)
_HEAD_CASES = [((4, 3), _HEADS), ((3,), _HEADS), ((0, 3), _HEADS), ((2, 2, 3), _ONE_HEAD)]


def _entry(kind: str, name: str, cases) -> OpInfo:
    return OpInfo(name, _op(kind), _ref(kind), FLOATING, _samples(kind, cases), FLOAT_LAYERS, tol=_TOL,
                  ad_unsupported=_AD_HALF)  # fmt: skip


register(
    _entry("Sequential", "nn.Sequential", _CHAIN_CASES + _NAMED_CASES),
    _entry("ModuleList", "nn.ModuleList", _CHAIN_CASES),
    _entry("ModuleDict", "nn.ModuleDict", _HEAD_CASES),
)
