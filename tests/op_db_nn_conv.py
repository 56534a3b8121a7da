"""op_db entries for ember.nn's convolutions, padding and linear family: the functional ops
(``nn.functional.conv2d``, ...) and the layers (``nn.Conv2d``, ...) through a pure wrapper that builds
the layer once and calls it with ``nn.functional_call``.

References are NumPy: the naive convolution loop of conv_reference.py (XLA's definition, with PyTorch's
padding rules written again here), a scatter loop for the transposed convolutions (each input element
adds its kernel-weighted copy to the output: the definition, not a flipped-kernel convolution), np.pad,
np.einsum and matmul.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from conv_reference import conv_ref
from op_db import ALL, BF16, COMPLEX, FLOATING, OpInfo, Sample, make_array, register

import ember
import ember.numpy as enp
from ember import nn
from ember.nn import functional as F

F16 = np.dtype(np.float16)
_TOL = {F16: (1e-2, 1e-2), BF16: (2e-2, 5e-2), np.dtype(np.float32): (1e-5, 1e-5), np.dtype(np.complex64): (1e-5, 1e-5)}
_AD_HALF = {F16: "float16 sums of many products are too coarse for finite differences; float32/64 check the rule",
            BF16: "bfloat16 sums of many products are too coarse for finite differences; float32/64 check the rule"}
CONV_DTYPES = FLOATING + COMPLEX
NOT_INTEGER = "convolutions take floating or complex arrays, as PyTorch (bool and integer inputs raise DTypeError)"


def _tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# --- references ---------------------------------------------------------------------------------------


def _pad_ref(x, pad, mode="constant", value=None):
    """torch.nn.functional.pad: crop the negative sizes, then np.pad (last dimension first in ``pad``)."""
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])

    def crop(x):
        return x[tuple(slice(-lo if lo < 0 else 0, x.shape[d] + hi if hi < 0 else None)
                       for d, (lo, hi) in enumerate(pairs))]  # fmt: skip

    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if mode == "constant":
        return np.pad(crop(x), grow, mode="constant", constant_values=0 if value is None else value)
    if mode == "circular":  # PyTorch crops before wrapping, and pads before cropping in the other modes
        return np.pad(crop(x), grow, mode="wrap")
    return crop(np.pad(x, grow, mode={"reflect": "reflect", "replicate": "edge"}[mode]))


def _conv_ref(n):
    def ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        unbatched = x.ndim == n + 1
        x = x[None] if unbatched else x
        stride, dilation = _tup(stride, n), _tup(dilation, n)
        if padding == "valid":
            pads = [(0, 0)] * n
        elif padding == "same":  # PyTorch: dilation * (k - 1) in all, the odd one at the end
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(w.shape[2:], dilation)]
        else:
            pads = [(p, p) for p in _tup(padding, n)]
        out = conv_ref(x, w, stride, pads, rhs_dilation=dilation, feature_group_count=groups)
        if b is not None:
            out = out + b.reshape((-1,) + (1,) * n)
        return out[0] if unbatched else out

    return ref


def _conv_transpose_ref(n):
    def ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        unbatched = x.ndim == n + 1
        x = x[None] if unbatched else x
        s, p, op, d = _tup(stride, n), _tup(padding, n), _tup(output_padding, n), _tup(dilation, n)
        batch, cin, sizes, kernel = x.shape[0], x.shape[1], x.shape[2:], w.shape[2:]
        cin_g, cout_g = cin // groups, w.shape[1]
        out_sizes = [(L - 1) * s_ - 2 * p_ + d_ * (k - 1) + o + 1
                     for L, s_, p_, d_, k, o in zip(sizes, s, p, d, kernel, op)]  # fmt: skip
        # every scattered position, and room for output_padding past the last one
        full_sizes = [max((L - 1) * s_ + d_ * (k - 1) + 1, p_ + o_)
                      for L, s_, d_, k, p_, o_ in zip(sizes, s, d, kernel, p, out_sizes)]  # fmt: skip
        full = np.zeros((batch, groups * cout_g, *full_sizes), dtype=np.result_type(x, w))
        for g in range(groups):
            xs, ws = x[:, g * cin_g:(g + 1) * cin_g], w[g * cin_g:(g + 1) * cin_g]
            for i in itertools.product(*map(range, sizes)):
                for k in itertools.product(*map(range, kernel)):
                    where = tuple(i_ * s_ + k_ * d_ for i_, s_, k_, d_ in zip(i, s, k, d))
                    target = (slice(None), slice(g * cout_g, (g + 1) * cout_g), *where)
                    full[target] += xs[(Ellipsis, *i)] @ ws[(Ellipsis, *k)]
        out = full[(Ellipsis, *(slice(p_, p_ + o) for p_, o in zip(p, out_sizes)))]
        if b is not None:
            out = out + b.reshape((-1,) + (1,) * n)
        return out[0] if unbatched else out

    return ref


def _linear_ref(x, w, b=None):
    out = x @ (w.T if w.ndim == 2 else w)
    return out if b is None else out + b


def _bilinear_ref(x1, x2, w, b=None):
    out = np.einsum("...i,oij,...j->...o", x1, w, x2)
    return out if b is None else out + b


# --- functional samples ----------------------------------------------------------------------------


def _arrays(rng, d, *shapes):
    return [make_array(rng, s, d, -2, 3) for s in shapes]


# (input shape, weight shape, bias?, kwargs) per dimension count
_CONV_CASES = {
    1: [((2, 3, 7), (4, 3, 3), True, dict(stride=2, padding=1)),
        ((2, 4, 6), (4, 1, 4), False, dict(padding="same", groups=4, dilation=2)),  # depthwise, even kernel
        ((3, 5), (2, 3, 2), True, dict(padding="valid")),  # unbatched
        ((0, 2, 4), (3, 2, 3), True, {})],  # empty batch
    2: [((2, 3, 5, 6), (4, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
        ((1, 4, 5, 5), (6, 2, 2, 3), True, dict(padding="same", groups=2)),
        ((3, 4, 4), (2, 3, 3, 3), False, dict(padding=1))],
    3: [((1, 2, 4, 3, 5), (3, 2, 2, 2, 3), True, dict(stride=2, padding=(1, 0, 1))),
        ((4, 3, 3, 4), (2, 2, 2, 1, 2), False, dict(groups=2, padding="same"))],
}
# (input shape, weight shape (in, out / groups, k...), bias?, kwargs)
_TRANSPOSE_CASES = {
    1: [((2, 3, 4), (3, 2, 3), True, dict(stride=2, padding=1, output_padding=1)),
        ((4, 3), (4, 1, 2), False, dict(groups=2, dilation=2)),
        ((1, 2, 5), (2, 3, 3), True, dict(padding=3))],  # padding beyond dilation * (k - 1): crops
    2: [((1, 4, 3, 2), (4, 2, 3, 2), True, dict(stride=(2, 1), groups=2, output_padding=(1, 0))),
        ((2, 2, 3, 3), (2, 3, 2, 2), False, dict(dilation=2, stride=2, output_padding=1, padding=1))],
    3: [((1, 2, 2, 3, 2), (2, 2, 2, 1, 2), True, dict(stride=2, padding=(0, 1, 0), output_padding=(1, 0, 0)))],
}


def _conv_samples(cases):
    def make(rng, d):
        out = []
        for xs, ws, bias, kw in cases:
            arrays = _arrays(rng, d, xs, ws, *([(ws[0],)] if bias else []))
            out.append(Sample(tuple(arrays), dict(kw)))
        return out

    return make


def _transpose_samples(cases):
    def make(rng, d):
        out = []
        for xs, ws, bias, kw in cases:
            groups = kw.get("groups", 1)
            arrays = _arrays(rng, d, xs, ws, *([(ws[1] * groups,)] if bias else []))
            out.append(Sample(tuple(arrays), dict(kw)))
        return out

    return make


_PAD_CASES = [((2, 3, 5), (1, 2), "constant", 1.5), ((2, 3, 4), (1, -2, -1, 2), "constant", None),
              ((2, 3), (0, 1, 1, 0), "constant", 0), ((2, 3, 5), (3, 2), "reflect", None),
              ((3, 4, 4), (-1, 3, 2, 0), "reflect", None), ((2, 2, 3, 4), (2, 1, 0, 3), "replicate", None),
              ((1, 2, 3, 2, 3), (1, 0, 2, 1, 0, 1), "replicate", None), ((2, 3, 5), (4, -1), "circular", None),
              ((2, 1, 3, 4), (1, 3, 2, 2), "circular", None), ((0, 3, 4), (1, 1), "reflect", None)]  # fmt: skip


def _pad_samples(rng, d):
    return [Sample((make_array(rng, s, d),), dict(pad=pad, mode=mode, value=value))
            for s, pad, mode, value in _PAD_CASES
            if d.kind in "fcV" or mode != "constant" or value is None or float(value).is_integer()]  # fmt: skip


def _linear_samples(rng, d):
    return [Sample(tuple(_arrays(rng, d, (4, 3), (2, 3), (2,)))), Sample(tuple(_arrays(rng, d, (2, 3, 5), (4, 5)))),
            Sample(tuple(_arrays(rng, d, (3,), (3,), ()))), Sample(tuple(_arrays(rng, d, (0, 2), (3, 2), (3,))))]


def _bilinear_samples(rng, d):
    return [Sample(tuple(_arrays(rng, d, (4, 3), (4, 2), (5, 3, 2), (5,)))),
            Sample(tuple(_arrays(rng, d, (2, 3, 2), (2, 3, 4), (3, 2, 4)))),
            Sample(tuple(_arrays(rng, d, (1,), (2,), (2, 1, 2), (2,))))]


register(
    *[OpInfo(f"nn.functional.conv{n}d", getattr(F, f"conv{n}d"), _conv_ref(n), CONV_DTYPES,
             _conv_samples(_CONV_CASES[n]), NOT_INTEGER, tol=_TOL, ad_unsupported=_AD_HALF) for n in (1, 2, 3)],
    *[OpInfo(f"nn.functional.conv_transpose{n}d", getattr(F, f"conv_transpose{n}d"), _conv_transpose_ref(n),
             CONV_DTYPES, _transpose_samples(_TRANSPOSE_CASES[n]), NOT_INTEGER, tol=_TOL, ad_unsupported=_AD_HALF)
      for n in (1, 2, 3)],
    OpInfo("nn.functional.pad", F.pad, _pad_ref, ALL, _pad_samples, ""),
    OpInfo("nn.functional.linear", F.linear, _linear_ref, ALL, _linear_samples, "", tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.functional.bilinear", F.bilinear, _bilinear_ref, ALL, _bilinear_samples, "", tol=_TOL,
           ad_unsupported=_AD_HALF),
)  # fmt: skip

# --- layers, through a pure wrapper ----------------------------------------------------------------

_BUILT: dict = {}


def _layer(name: str, args: tuple, kwargs: tuple) -> nn.Module:
    """The layer ``nn.<name>(*args, **dict(kwargs))``, built once (its values are replaced on every call)."""
    cache_key = (name, args, kwargs)
    if cache_key not in _BUILT:
        cls = getattr(nn, name)
        keyed = name not in ("Identity", "Flatten", "Unflatten") and "Pad" not in name
        _BUILT[cache_key] = cls(*args, **dict(kwargs), **({"key": ember.random.key(0)} if keyed else {}))
    return _BUILT[cache_key]


def _layer_op(name: str, inputs: int = 1):
    """``op(*inputs, *params, args=..., kwargs=..., call=...)``: the layer called with its parameters replaced."""

    def op(*arrays, args=(), kwargs=(), call=()):
        layer = _layer(name, args, kwargs)
        names = [n for n, _ in layer.named_parameters()]
        params = dict(zip(names, arrays[inputs:], strict=True))
        return nn.functional_call(layer, params, *arrays[:inputs], **dict(call))

    op.__name__ = f"nn.{name}"
    return op


def _conv_layer_ref(n):
    conv = _conv_ref(n)

    def ref(x, w, b=None, args=(), kwargs=(), call=()):
        kw = dict(kwargs)
        mode, padding = kw.pop("padding_mode", "zeros"), kw.get("padding", 0)
        if "bias" in kw and not kw.pop("bias"):
            b = None
        if mode != "zeros":
            if padding == "valid":
                pairs = [(0, 0)] * n
            elif padding == "same":
                totals = [d * (k - 1) for k, d in zip(w.shape[2:], _tup(kw.get("dilation", 1), n))]
                pairs = [(t // 2, t - t // 2) for t in totals]
            else:
                pairs = [(p, p) for p in _tup(padding, n)]
            x = _pad_ref(x, [p for pair in reversed(pairs) for p in pair], mode)
            kw["padding"] = 0
        return conv(x, w, b, **kw)

    return ref


def _transpose_layer_ref(n):
    conv_t = _conv_transpose_ref(n)

    def ref(x, w, b=None, args=(), kwargs=(), call=()):
        kw = dict(kwargs)
        kw.pop("bias", None)
        output_size = dict(call).get("output_size")
        if output_size is not None:  # PyTorch: output_padding = output_size - the smallest size
            s, p, d = _tup(kw.get("stride", 1), n), _tup(kw.get("padding", 0), n), _tup(kw.get("dilation", 1), n)
            smallest = [(L - 1) * s_ - 2 * p_ + d_ * (k - 1) + 1
                        for L, s_, p_, d_, k in zip(x.shape[-n:], s, p, d, w.shape[2:])]  # fmt: skip
            kw["output_padding"] = tuple(o - m for o, m in zip(output_size[-n:], smallest))
        return conv_t(x, w, b, **kw)

    return ref


def _layer_samples(name, cases, inputs=1):
    """cases: (input shapes, args, kwargs, call); the parameters' shapes come from the built layer."""

    def make(rng, d):
        out = []
        for shapes, args, kwargs, call in cases:
            params = [make_array(rng, p.shape, d, -1, 1) for _, p in _layer(name, args, kwargs).named_parameters()]
            xs = [make_array(rng, s, d, -2, 3) for s in shapes]
            out.append(Sample((*xs, *params), dict(args=args, kwargs=kwargs, call=call)))
        return out

    return make


def _flatten_ref(x, args=(), kwargs=(), call=()):
    if x.ndim == 0:
        return x.reshape(1)
    start, end = (args or (1, -1))[0] % x.ndim, (args or (1, -1))[1] % x.ndim
    return x.reshape(*x.shape[:start], math.prod(x.shape[start:end + 1]), *x.shape[end + 1:])


def _unflatten_ref(x, args=(), kwargs=(), call=()):
    dim, sizes = args[0] % x.ndim, args[1]
    return x.reshape(*x.shape[:dim], *sizes, *x.shape[dim + 1:])


_CONV_LAYER_CASES = {
    1: [([(2, 3, 7)], (3, 4, 3), (("stride", 2), ("padding", 1)), ()),
        ([(2, 8)], (2, 4, 4), (("padding", "same"), ("padding_mode", "circular")), ()),
        ([(1, 4, 6)], (4, 4, 3), (("groups", 4), ("padding", 2), ("padding_mode", "reflect"), ("bias", False)), ())],
    2: [([(2, 3, 5, 6)], (3, 4, (3, 2)), (("stride", (2, 1)), ("padding", (1, 0)), ("dilation", (1, 2))), ()),
        ([(1, 4, 5, 4)], (4, 2, 2), (("padding", "same"), ("groups", 2), ("padding_mode", "replicate")), ()),
        ([(3, 4, 5)], (3, 3, 3), (("padding", 1), ("padding_mode", "reflect"), ("bias", False)), ()),
        ([(0, 3, 4, 4)], (3, 2, 3), (), ())],
    3: [([(1, 2, 4, 3, 4)], (2, 3, 2), (("stride", 2), ("padding", 1), ("padding_mode", "circular")), ()),
        ([(2, 3, 3, 4)], (2, 2, (1, 2, 3)), (("padding", "same"),), ())],
}
_TRANSPOSE_LAYER_CASES = {
    1: [([(2, 3, 4)], (3, 2, 3), (("stride", 2), ("padding", 1), ("output_padding", 1)), ()),
        ([(4, 3)], (4, 2, 2), (("groups", 2), ("dilation", 2), ("bias", False)), ())],
    2: [([(1, 4, 3, 2)], (4, 2, (3, 2)), (("stride", (2, 1)), ("groups", 2)), (("output_size", (8, 3)),)),
        ([(2, 2, 3, 3)], (2, 3, 2), (("dilation", 2), ("stride", 2), ("output_padding", 1), ("padding", 1)), ())],
    3: [([(1, 2, 2, 3, 2)], (2, 2, (2, 1, 2)), (("stride", 2), ("padding", (0, 1, 0))),
         (("output_size", (1, 2, 5, 3, 4)),))],
}

register(
    *[OpInfo(f"nn.Conv{n}d", _layer_op(f"Conv{n}d"), _conv_layer_ref(n), CONV_DTYPES,
             _layer_samples(f"Conv{n}d", _CONV_LAYER_CASES[n]), NOT_INTEGER, tol=_TOL,
             ad_unsupported=_AD_HALF) for n in (1, 2, 3)],
    *[OpInfo(f"nn.ConvTranspose{n}d", _layer_op(f"ConvTranspose{n}d"), _transpose_layer_ref(n), CONV_DTYPES,
             _layer_samples(f"ConvTranspose{n}d", _TRANSPOSE_LAYER_CASES[n]), NOT_INTEGER, tol=_TOL,
             ad_unsupported=_AD_HALF) for n in (1, 2, 3)],
    OpInfo("nn.Linear", _layer_op("Linear"),
           lambda x, w, b=None, args=(), kwargs=(), call=(): _linear_ref(x, w, b), ALL,
           _layer_samples("Linear", [([(4, 3)], (3, 2), (), ()), ([(2, 3, 5)], (5, 4), (("bias", False),), ()),
                                            ([(3,)], (3, 1), (), ()), ([(0, 2)], (2, 3), (), ())]),
           "", tol=_TOL, ad_unsupported=_AD_HALF),
    OpInfo("nn.Bilinear", _layer_op("Bilinear", 2),
           lambda x1, x2, w, b=None, args=(), kwargs=(), call=(): _bilinear_ref(x1, x2, w, b), ALL,
           _layer_samples("Bilinear", [([(4, 3), (4, 2)], (3, 2, 5), (), ()),
                                              ([(2, 3, 2), (2, 3, 4)], (2, 4, 3), (("bias", False),), ()),
                                              ([(1,), (2,)], (1, 2, 2), (), ())], 2),
           "", tol=_TOL, ad_unsupported=_AD_HALF),
    # Identity returns its argument itself, as PyTorch (a NumPy input stays NumPy): the wrapper makes it an Array.
    OpInfo("nn.Identity", lambda *a, **kw: enp.asarray(_layer_op("Identity")(*a, **kw)),
           lambda x, args=(), kwargs=(), call=(): x, ALL,
           _layer_samples("Identity", [([(2, 3)], (), (), ()), ([()], (5,), (("unused", "x"),), ())]), ""),
    OpInfo("nn.Flatten", _layer_op("Flatten"), _flatten_ref, ALL,
           _layer_samples("Flatten", [([(2, 3, 4)], (), (), ()), ([(2, 3, 4, 2)], (0, 2), (), ()),
                                      ([(0, 3, 2)], (), (), ()), ([(3, 4)], (-2, -1), (), ())]), ""),
    OpInfo("nn.Unflatten", _layer_op("Unflatten"), _unflatten_ref, ALL,
           _layer_samples("Unflatten", [([(3, 10)], (1, (2, 5)), (), ()), ([(6, 2)], (0, (3, 1, 2)), (), ()),
                                        ([(2, 12, 1)], (-2, (-1, 4)), (), ())]), ""),
)  # fmt: skip


# The padding layers: nn.functional.pad with the layer's sizes (its reference is _pad_ref).
_PAD_MODES = {"ZeroPad": "constant", "ConstantPad": "constant", "ReflectionPad": "reflect",
              "ReplicationPad": "replicate", "CircularPad": "circular"}  # fmt: skip


def _pad_layer_ref(kind, dims):
    def ref(x, args=(), kwargs=(), call=()):
        sizes = (args[0],) * (2 * dims) if isinstance(args[0], int) else args[0]
        value = args[1] if kind == "ConstantPad" else None
        return _pad_ref(x, sizes, _PAD_MODES[kind], value)

    return ref


def _pad_layer_cases(kind, dims):
    sizes = (1, 2, 0, 1, 2, 1)[: 2 * dims]
    extra = (1.5,) if kind == "ConstantPad" else ()
    batched = [(2, 3) + (4,) * dims]
    unbatched = [(3,) + (3,) * dims]
    return [(batched, (sizes, *extra), (), ()), (unbatched, (1, *extra), (), ())]


register(*[OpInfo(f"nn.{kind}{dims}d", _layer_op(f"{kind}{dims}d"), _pad_layer_ref(kind, dims),
                  ALL, _layer_samples(f"{kind}{dims}d", _pad_layer_cases(kind, dims)), "")
           for kind in _PAD_MODES for dims in (1, 2, 3)])  # fmt: skip
