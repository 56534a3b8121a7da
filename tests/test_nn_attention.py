"""PyTorch parity for attention and the Transformer layers: forward outputs and the gradients with respect to every
input and every parameter, with the same weights (copied by name), in eval mode, for the options and masks of
``MultiheadAttention``, ``TransformerEncoderLayer``/``DecoderLayer`` and their stacks; default initialisation by
distribution; dropout with keys; and the errors for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nn_parity import copy_weights, to_numpy

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-4, 1e-5
GRAD_RTOL, GRAD_ATOL = 1e-4, 2e-5


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _mask_out(rng, shape):
    """A bool mask in MultiheadAttention's convention (True = masked out) that leaves column 0 to every row."""
    m = rng.random(shape) < 0.4
    m[..., 0] = False
    return m


def _close(ours, theirs, what, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(np.asarray(ours, np.float64), to_numpy(theirs).astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=what)  # fmt: skip


def check_parity(ember_module, torch_module, inputs, kwargs=None, n_diff=None, seed=0):
    """Forward and gradients of ``sum(out_i * ct_i)`` w.r.t. the first ``n_diff`` inputs and every parameter.

    ``inputs`` are NumPy arrays given positionally to both modules; ``kwargs`` (masks and flags) likewise."""
    kwargs = dict(kwargs or {})
    n_diff = len(inputs) if n_diff is None else n_diff
    model = copy_weights(ember_module, torch_module)
    torch_module.zero_grad(set_to_none=True)
    t_in = [torch.tensor(a, requires_grad=i < n_diff) for i, a in enumerate(inputs)]
    t_kw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    t_out = torch_module(*t_in, **t_kw)
    t_outs = [o for o in (t_out if isinstance(t_out, tuple) else (t_out,)) if o is not None]
    rng = np.random.default_rng(seed)
    cts = [_rand(rng, *o.shape) for o in t_outs]
    sum((o * torch.tensor(c)).sum() for o, c in zip(t_outs, cts)).backward()

    def loss(params, *diff):
        args = [*diff, *inputs[n_diff:]]
        out = nn.functional_call(model, params, *args, **kwargs)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
        return sum(enp.sum(o * c) for o, c in zip(outs, cts)), outs

    params = dict(model.named_parameters())
    value_and_grad = ember.value_and_grad(loss, argnums=tuple(range(1 + n_diff)), has_aux=True)
    (_, outs), grads = value_and_grad(params, *inputs[:n_diff])
    assert len(outs) == len(t_outs), f"{len(outs)} outputs, torch gives {len(t_outs)}"
    for i, (o, t) in enumerate(zip(outs, t_outs)):
        assert o.shape == tuple(t.shape), f"output {i}: shape {o.shape}, torch {tuple(t.shape)}"
        _close(o, t, f"output {i}")
    for i in range(n_diff):
        _close(grads[1 + i], t_in[i].grad, f"gradient w.r.t. input {i}", GRAD_RTOL, GRAD_ATOL)
    for name, p in torch_module.named_parameters():
        want = p.grad if p.grad is not None else torch.zeros_like(p)
        _close(grads[0][name], want, f"gradient w.r.t. {name}", GRAD_RTOL, GRAD_ATOL)


# --- scaled_dot_product_attention --------------------------------------------------------------------

_SDPA_CASES = {
    "plain": {},
    "bool_mask_2d": {"attn_mask": "bool"},
    "float_mask_broadcast": {"attn_mask": "float"},
    "causal": {"is_causal": True},
    "scale": {"scale": 0.37},
    "fully_masked_row": {"attn_mask": "full"},
}


@pytest.mark.parametrize("case", _SDPA_CASES)
def test_sdpa_matches_torch(case):
    rng = np.random.default_rng(1)
    q, k, v = _rand(rng, 2, 3, 4, 5), _rand(rng, 2, 3, 6, 5), _rand(rng, 2, 3, 6, 7)
    kw = dict(_SDPA_CASES[case])
    if kw.get("attn_mask") == "bool":
        kw["attn_mask"] = ~_mask_out(rng, (4, 6))
    elif kw.get("attn_mask") == "float":
        kw["attn_mask"] = _rand(rng, 3, 1, 6)
    elif kw.get("attn_mask") == "full":
        kw["attn_mask"] = ~_mask_out(rng, (2, 3, 4, 6))
        kw["attn_mask"][1, 2, 3] = False
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    t_kw = {a: torch.tensor(b) if isinstance(b, np.ndarray) else b for a, b in kw.items()}
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **t_kw)
    ct = _rand(rng, *t_out.shape)
    (t_out * torch.tensor(ct)).sum().backward()
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    _close(out, t_out, "output")
    grads = ember.grad(lambda *a: enp.sum(F.scaled_dot_product_attention(*a, **kw) * ct), argnums=(0, 1, 2))(q, k, v)
    for g, t, name in zip(grads, (tq, tk, tv), "qkv"):
        assert np.isfinite(np.asarray(g)).all()
        _close(g, t.grad, f"gradient w.r.t. {name}", GRAD_RTOL, GRAD_ATOL)
    if case == "fully_masked_row":
        assert np.all(np.asarray(out)[1, 2, 3] == 0)


def test_sdpa_gqa_unbatched_and_broadcast_match_torch():
    rng = np.random.default_rng(2)
    q, k, v = _rand(rng, 2, 4, 3, 5), _rand(rng, 2, 2, 6, 5), _rand(rng, 2, 2, 6, 3)
    want = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), enable_gqa=True)
    _close(F.scaled_dot_product_attention(q, k, v, enable_gqa=True), want, "gqa")
    q, k, v = _rand(rng, 3, 5), _rand(rng, 4, 5), _rand(rng, 4, 2)
    want = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), is_causal=True)
    _close(F.scaled_dot_product_attention(q, k, v, is_causal=True), want, "unbatched causal")


def test_sdpa_dropout_needs_a_key_and_scales_the_kept_weights():
    rng = np.random.default_rng(3)
    q, k = _rand(rng, 2, 4, 5), _rand(rng, 2, 6, 5)
    eye = np.broadcast_to(np.eye(6, dtype=np.float32), (2, 6, 6))  # value = identity: the output is the weights
    with pytest.raises(InvalidArgumentError, match="dropout_key"):
        F.scaled_dot_product_attention(q, k, eye, dropout_p=0.5)
    weights = np.asarray(F.scaled_dot_product_attention(q, k, eye))
    a = np.asarray(F.scaled_dot_product_attention(q, k, eye, dropout_p=0.5, dropout_key=ember.random.key(0)))
    b = np.asarray(F.scaled_dot_product_attention(q, k, eye, dropout_p=0.5, dropout_key=ember.random.key(0)))
    c = np.asarray(F.scaled_dot_product_attention(q, k, eye, dropout_p=0.5, dropout_key=ember.random.key(1)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    kept = a != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(a[kept], 2 * weights[kept], rtol=1e-6)
    dropped = F.scaled_dot_product_attention(q, k, eye, dropout_p=1.0, dropout_key=ember.random.key(0))
    assert np.all(np.asarray(dropped) == 0)


# --- MultiheadAttention -------------------------------------------------------------------------------

_MHA_OPTIONS = {
    "default": {},
    "kdim_vdim": {"kdim": 3, "vdim": 5},
    "add_bias_kv": {"add_bias_kv": True},
    "add_zero_attn": {"add_zero_attn": True},
    "bias_kv_and_zero_attn": {"add_bias_kv": True, "add_zero_attn": True},
    "no_bias": {"bias": False},
    "batch_first": {"batch_first": True},
}
_MHA_CALLS = {
    "no_mask": {},
    "bool_2d": {"attn_mask": "bool2"},
    "float_2d": {"attn_mask": "float2"},
    "bool_3d_per_head": {"attn_mask": "bool3", "average_attn_weights": False},
    "float_3d": {"attn_mask": "float3"},
    "key_padding_bool": {"key_padding_mask": "kpm_bool"},
    "key_padding_float": {"key_padding_mask": "kpm_float"},
    "both_masks_no_weights": {"attn_mask": "bool2", "key_padding_mask": "kpm_bool", "need_weights": False},
    "causal_hint": {"attn_mask": "causal", "is_causal": True, "need_weights": False},
    "causal_hint_with_weights": {"attn_mask": "causal", "is_causal": True, "average_attn_weights": False},
}


def _mha_inputs(rng, options, call, unbatched=False, E=8, H=2, L=4, N=3, S=5):
    call = dict(call)
    if call.get("is_causal"):
        S = L
    kdim, vdim = options.get("kdim", E), options.get("vdim", E)
    bf = options.get("batch_first", False)

    def shape(n, d):
        return (n, d) if unbatched else ((N, n, d) if bf else (n, N, d))

    masks = {"bool2": lambda: _mask_out(rng, (L, S)), "float2": lambda: _rand(rng, L, S),
             "bool3": lambda: _mask_out(rng, (H if unbatched else N * H, L, S)),
             "float3": lambda: _rand(rng, H if unbatched else N * H, L, S),
             "causal": lambda: np.triu(np.ones((L, L), bool), 1),
             "kpm_bool": lambda: _mask_out(rng, (S,) if unbatched else (N, S)),
             "kpm_float": lambda: _rand(rng, *((S,) if unbatched else (N, S)))}  # fmt: skip
    for name in ("attn_mask", "key_padding_mask"):
        if name in call:
            call[name] = masks[call[name]]()
    return [_rand(rng, *shape(L, E)), _rand(rng, *shape(S, kdim)), _rand(rng, *shape(S, vdim))], call


@pytest.mark.parametrize("call", _MHA_CALLS)
@pytest.mark.parametrize("options", _MHA_OPTIONS)
def test_multihead_attention_matches_torch(options, call):
    opts = _MHA_OPTIONS[options]
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(8, 2, **opts).eval()
    with torch.no_grad():  # non-zero biases, so that their gradients and effects are checked
        for p in t.parameters():
            p.add_(0.1 * torch.randn_like(p))
    m = nn.MultiheadAttention(8, 2, **opts, key=ember.random.key(0)).eval()
    inputs, kwargs = _mha_inputs(np.random.default_rng(4), opts, _MHA_CALLS[call])
    check_parity(m, t, inputs, kwargs)


@pytest.mark.parametrize("call", ["no_mask", "bool_3d_per_head", "key_padding_bool", "float_2d"])
@pytest.mark.parametrize("options", ["default", "kdim_vdim", "bias_kv_and_zero_attn", "batch_first"])
def test_multihead_attention_unbatched_matches_torch(options, call):
    opts = _MHA_OPTIONS[options]
    torch.manual_seed(1)
    t = torch.nn.MultiheadAttention(8, 2, **opts).eval()
    m = nn.MultiheadAttention(8, 2, **opts, key=ember.random.key(0)).eval()
    inputs, kwargs = _mha_inputs(np.random.default_rng(5), opts, _MHA_CALLS[call], unbatched=True)
    check_parity(m, t, inputs, kwargs)


def test_multihead_attention_fully_masked_query():
    """PyTorch's need_weights=False path gives zeros for a query with every key masked, its need_weights=True path
    NaN; ember gives zeros (and finite gradients) in both, as documented."""
    rng = np.random.default_rng(6)
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(8, 2).eval()
    m = copy_weights(nn.MultiheadAttention(8, 2, key=ember.random.key(0)).eval(), t)
    x = _rand(rng, 4, 3, 8)
    mask = np.zeros((4, 4), bool)
    mask[2] = True
    t_out = t(*(torch.tensor(x, requires_grad=True),) * 3, attn_mask=torch.tensor(mask), need_weights=False)[0]
    out, _ = m(x, x, x, attn_mask=mask, need_weights=False)
    _close(out, t_out, "need_weights=False")
    out, weights = m(x, x, x, attn_mask=mask)
    assert np.all(np.asarray(weights)[:, 2] == 0)
    grad = ember.grad(lambda x: enp.sum(m(x, x, x, attn_mask=mask)[0]))(x)
    assert np.isfinite(np.asarray(grad)).all()


def test_multihead_attention_default_init_by_distribution():
    E = 512
    m = nn.MultiheadAttention(E, 4, add_bias_kv=True, key=ember.random.key(0))
    w = np.asarray(m.in_proj_weight)
    bound = math.sqrt(6.0 / (3 * E + E))  # xavier_uniform_ on (3E, E)
    assert w.shape == (3 * E, E) and np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound and abs(w.mean()) < 0.01 * bound
    out_w = np.asarray(m.out_proj.weight)
    out_bound = 1 / math.sqrt(E)  # Linear's default
    assert np.abs(out_w).max() <= out_bound and abs(out_w.std() - out_bound / math.sqrt(3)) < 0.02 * out_bound
    assert np.all(np.asarray(m.in_proj_bias) == 0) and np.all(np.asarray(m.out_proj.bias) == 0)
    bk = np.concatenate([np.asarray(m.bias_k).ravel(), np.asarray(m.bias_v).ravel()])
    assert abs(bk.std() - math.sqrt(1.0 / E)) < 0.1 * math.sqrt(1.0 / E)  # xavier_normal_ of (1, 1, E)
    t = torch.nn.MultiheadAttention(E, 4, add_bias_kv=True)
    assert abs(to_numpy(t.in_proj_weight).std() - w.std()) < 0.01 * bound
    assert abs(to_numpy(t.bias_k).std() - math.sqrt(1.0 / E)) < 0.15 * math.sqrt(1.0 / E)
    sep = nn.MultiheadAttention(E, 4, kdim=128, vdim=64, key=ember.random.key(1))
    for name, fan_in in (("q_proj_weight", E), ("k_proj_weight", 128), ("v_proj_weight", 64)):
        w = np.asarray(getattr(sep, name))
        b = math.sqrt(6.0 / (E + fan_in))
        assert w.shape == (E, fan_in) and np.abs(w).max() <= b and abs(w.std() - b / math.sqrt(3)) < 0.02 * b


def test_multihead_attention_names_match_torch():
    for opts in _MHA_OPTIONS.values():
        t = torch.nn.MultiheadAttention(8, 2, **opts)
        m = nn.MultiheadAttention(8, 2, **opts, key=ember.random.key(0))
        assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]


def test_multihead_attention_dropout_in_training():
    rng = np.random.default_rng(7)
    m = nn.MultiheadAttention(8, 2, dropout=0.5, key=ember.random.key(0))
    x = _rand(rng, 4, 3, 8)
    with pytest.raises(InvalidArgumentError, match="dropout_key=ember.random.key"):
        m(x, x, x)
    a, wa = m(x, x, x, dropout_key=ember.random.key(1))
    b, _ = m(x, x, x, dropout_key=ember.random.key(1))
    c, _ = m(x, x, x, dropout_key=ember.random.key(2))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(c))
    assert (np.asarray(wa) == 0).any()
    e1, e2 = m.eval()(x, x, x), m.eval()(x, x, x)
    np.testing.assert_array_equal(np.asarray(e1[0]), np.asarray(e2[0]))


# --- Transformer layers ---------------------------------------------------------------------------

_ENC_MASKS = {
    "none": {},
    "causal": {"src_mask": "causal", "is_causal": True},
    "float_mask": {"src_mask": "float"},
    "padding": {"src_key_padding_mask": "kpm"},
    "both": {"src_mask": "bool", "src_key_padding_mask": "kpm"},
}


def _enc_inputs(rng, batch_first, masks, unbatched=False, D=8, L=5, N=3):
    shape = (L, D) if unbatched else ((N, L, D) if batch_first else (L, N, D))
    make = {"causal": lambda: np.triu(np.ones((L, L), bool), 1), "float": lambda: 0.5 * _rand(rng, L, L),
            "bool": lambda: _mask_out(rng, (L, L)),
            "kpm": lambda: _mask_out(rng, (L,) if unbatched else (N, L))}  # fmt: skip
    return [_rand(rng, *shape)], {k: make[v]() if isinstance(v, str) else v for k, v in masks.items()}


def _randomise(t):
    with torch.no_grad():  # LayerNorm and biases away from ones/zeros, so their gradients and effects are checked
        for p in t.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return t


@pytest.mark.parametrize("masks", _ENC_MASKS)
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_layer_matches_torch(norm_first, activation, batch_first, masks):
    torch.manual_seed(0)
    cfg = dict(dim_feedforward=16, activation=activation, batch_first=batch_first, norm_first=norm_first)
    t = _randomise(torch.nn.TransformerEncoderLayer(8, 2, **cfg).eval())
    m = nn.TransformerEncoderLayer(8, 2, **cfg, key=ember.random.key(0)).eval()
    inputs, kwargs = _enc_inputs(np.random.default_rng(8), batch_first, _ENC_MASKS[masks])
    check_parity(m, t, inputs, kwargs)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_layer_unbatched_no_bias_and_callable_activation_match_torch(norm_first):
    torch.manual_seed(1)
    t = _randomise(torch.nn.TransformerEncoderLayer(8, 4, 12, norm_first=norm_first, bias=False,
                                                    activation=torch.nn.functional.silu).eval())  # fmt: skip
    m = nn.TransformerEncoderLayer(8, 4, 12, norm_first=norm_first, bias=False, activation=F.silu,
                                   key=ember.random.key(0)).eval()  # fmt: skip
    inputs, kwargs = _enc_inputs(np.random.default_rng(9), False, {"src_key_padding_mask": "kpm"}, unbatched=True)
    check_parity(m, t, inputs, kwargs)
    t = _randomise(torch.nn.TransformerEncoderLayer(8, 2, 12, layer_norm_eps=1e-2, norm_first=norm_first).eval())
    m = nn.TransformerEncoderLayer(8, 2, 12, layer_norm_eps=1e-2, norm_first=norm_first, key=ember.random.key(0)).eval()
    check_parity(m, t, *_enc_inputs(np.random.default_rng(10), False, {"src_mask": "causal", "is_causal": True}))


_DEC_MASKS = {
    "none": {},
    "causal": {"tgt_mask": "causal", "tgt_is_causal": True},
    "padding": {"tgt_key_padding_mask": "kpm", "memory_key_padding_mask": "mkpm"},
    "memory_mask": {"tgt_mask": "float", "memory_mask": "mbool"},
}


def _dec_inputs(rng, batch_first, masks, unbatched=False, D=8, L=4, S=6, N=3):
    def shape(n):
        return (n, D) if unbatched else ((N, n, D) if batch_first else (n, N, D))

    make = {"causal": lambda: np.triu(np.ones((L, L), bool), 1), "float": lambda: 0.5 * _rand(rng, L, L),
            "kpm": lambda: _mask_out(rng, (L,) if unbatched else (N, L)),
            "mkpm": lambda: _mask_out(rng, (S,) if unbatched else (N, S)),
            "mbool": lambda: _mask_out(rng, (L, S))}  # fmt: skip
    return [_rand(rng, *shape(L)), _rand(rng, *shape(S))], {k: make[v]() if isinstance(v, str) else v
                                                            for k, v in masks.items()}  # fmt: skip


@pytest.mark.parametrize("masks", _DEC_MASKS)
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_decoder_layer_matches_torch(norm_first, activation, batch_first, masks):
    torch.manual_seed(0)
    cfg = dict(dim_feedforward=16, activation=activation, batch_first=batch_first, norm_first=norm_first)
    t = _randomise(torch.nn.TransformerDecoderLayer(8, 2, **cfg).eval())
    m = nn.TransformerDecoderLayer(8, 2, **cfg, key=ember.random.key(0)).eval()
    inputs, kwargs = _dec_inputs(np.random.default_rng(11), batch_first, _DEC_MASKS[masks])
    check_parity(m, t, inputs, kwargs)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_decoder_layer_unbatched_and_no_bias_match_torch(norm_first):
    torch.manual_seed(2)
    t = _randomise(torch.nn.TransformerDecoderLayer(8, 2, 12, norm_first=norm_first, bias=False).eval())
    m = nn.TransformerDecoderLayer(8, 2, 12, norm_first=norm_first, bias=False, key=ember.random.key(0)).eval()
    check_parity(m, t, *_dec_inputs(np.random.default_rng(12), False, _DEC_MASKS["padding"], unbatched=True))


@pytest.mark.parametrize("norm", [False, True], ids=["no_norm", "final_norm"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_encoder_stack_matches_torch(batch_first, norm):
    torch.manual_seed(0)
    cfg = dict(dim_feedforward=16, batch_first=batch_first)
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, **cfg), 3,
                                    norm=torch.nn.LayerNorm(8) if norm else None,
                                    enable_nested_tensor=False)  # fmt: skip
    t = _randomise(t.eval())  # each copy now different, as after training
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **cfg, key=ember.random.key(0)), 3,
                              norm=nn.LayerNorm(8) if norm else None).eval()  # fmt: skip
    inputs, kwargs = _enc_inputs(np.random.default_rng(13), batch_first, {"src_key_padding_mask": "kpm"})
    check_parity(m, t, inputs, kwargs)
    inputs, kwargs = _enc_inputs(np.random.default_rng(14), batch_first, {"src_mask": "causal", "is_causal": True})
    kwargs["mask"] = kwargs.pop("src_mask")
    check_parity(m, t, inputs, kwargs)


@pytest.mark.parametrize("norm", [False, True], ids=["no_norm", "final_norm"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_decoder_stack_matches_torch(batch_first, norm):
    torch.manual_seed(0)
    cfg = dict(dim_feedforward=16, batch_first=batch_first, norm_first=True)
    t = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, **cfg), 2,
                                    norm=torch.nn.LayerNorm(8) if norm else None)  # fmt: skip
    t = _randomise(t.eval())
    m = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, **cfg, key=ember.random.key(0)), 2,
                              norm=nn.LayerNorm(8) if norm else None).eval()  # fmt: skip
    masks = {**_DEC_MASKS["causal"], **_DEC_MASKS["padding"]}
    check_parity(m, t, *_dec_inputs(np.random.default_rng(15), batch_first, masks))


def test_transformer_names_and_init_match_torch():
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 4), 2, norm=torch.nn.LayerNorm(16),
                                    enable_nested_tensor=False)  # fmt: skip
    layer = nn.TransformerEncoderLayer(16, 4, key=ember.random.key(0))
    m = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert m.named_parameters()[0][0] == "layers.0.self_attn.in_proj_weight"
    # the copies start equal (PyTorch deep-copies the layer) but are arrays of their own
    a, b = m.layers[0].linear1.weight, m.layers[1].linear1.weight
    assert a is not b and np.array_equal(np.asarray(a), np.asarray(b))
    td = torch.nn.TransformerDecoderLayer(16, 4, bias=False)
    md = nn.TransformerDecoderLayer(16, 4, bias=False, key=ember.random.key(0))
    assert [n for n, _ in md.named_parameters()] == [n for n, _ in td.named_parameters()]
    big = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, key=ember.random.key(1))
    w1 = np.asarray(big.linear1.weight)
    assert np.abs(w1).max() <= 1 / 16 and abs(w1.std() - 1 / 16 / math.sqrt(3)) < 0.01 / 16  # Linear's default
    assert np.all(np.asarray(big.norm1.weight) == 1) and np.all(np.asarray(big.norm1.bias) == 0)
    assert repr(layer).splitlines()[:3] == [
        "TransformerEncoderLayer(", "  (self_attn): MultiheadAttention(",
        "    (out_proj): Linear(in_features=16, out_features=16, bias=True)"]


def test_transformer_dropout_needs_a_key_in_training():
    rng = np.random.default_rng(16)
    layer = nn.TransformerEncoderLayer(8, 2, 16, key=ember.random.key(0))
    x = _rand(rng, 5, 3, 8)
    with pytest.raises(InvalidArgumentError, match=r"TransformerEncoderLayer: in training mode.*key=ember.random.key"):
        layer(x)
    a, b = layer(x, key=ember.random.key(1)), layer(x, key=ember.random.key(1))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(layer(x, key=ember.random.key(2))))
    ev = layer.eval()
    np.testing.assert_array_equal(np.asarray(ev(x)), np.asarray(ev(x)))
    assert not ev.self_attn.training and not ev.dropout1.training
    no_dropout = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, key=ember.random.key(0))
    assert no_dropout(x).shape == x.shape  # nothing random: no key needed
    stack = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, key=ember.random.key(0)), 2)
    with pytest.raises(InvalidArgumentError, match="TransformerDecoder: in training mode"):
        stack(x, x)
    assert stack(x, x, key=ember.random.key(3)).shape == x.shape


def test_transformer_trains_under_jit_and_vmap():
    rng = np.random.default_rng(17)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, key=ember.random.key(0))
    x = _rand(rng, 3, 5, 8)
    loss = ember.jit(lambda m, x, k: enp.mean(m(x, key=k) ** 2))
    grads = ember.grad(loss)(layer, x, ember.random.key(1))
    assert grads.self_attn.in_proj_weight.shape == (24, 8)
    ev = layer.eval()
    per_example = ember.vmap(lambda x: ev(x))(x)  # unbatched (L, D) per example
    np.testing.assert_allclose(np.asarray(per_example), np.asarray(ev(x)), rtol=1e-5, atol=1e-6)


# --- bad input --------------------------------------------------------------------------------------


def test_bad_input_errors():
    k = ember.random.key(0)
    with pytest.raises(InvalidArgumentError, match="embed_dim .8. must be divisible by num_heads .3."):
        nn.MultiheadAttention(8, 3, key=k)
    m = nn.MultiheadAttention(8, 2, key=k)
    x = np.ones((4, 3, 8), np.float32)
    with pytest.raises(ShapeError, match=r"MultiheadAttention.*E = embed_dim = 8, got \(4, 3, 6\)"):
        m(np.ones((4, 3, 6), np.float32), x, x)
    with pytest.raises(ShapeError, match="one batch size"):
        m(x, np.ones((4, 2, 8), np.float32), np.ones((4, 2, 8), np.float32))
    with pytest.raises(InvalidArgumentError, match="is_causal=True is a hint that attn_mask is the causal mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(ShapeError, match=r"attn_mask has shape \(3, 4\); expected \(L, S\) = \(4, 4\)"):
        m(x, x, x, attn_mask=np.zeros((3, 4), bool))
    with pytest.raises(DTypeError, match="attn_mask must be a bool mask or a floating array"):
        m(x, x, x, attn_mask=np.zeros((4, 4), np.int32))
    with pytest.raises(DTypeError, match="query must be a floating array"):
        F.scaled_dot_product_attention(np.ones((2, 3), np.int32), x[0], x[0])
    with pytest.raises(InvalidArgumentError, match="either attn_mask or is_causal=True, not both"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=np.ones((3, 3), bool), is_causal=True)
    with pytest.raises(ShapeError, match=r"attn_mask of shape \(2, 2\) does not broadcast"):
        F.scaled_dot_product_attention(x, x, x, attn_mask=np.ones((2, 2), bool))
    with pytest.raises(ShapeError, match="multiple of the key's"):
        F.scaled_dot_product_attention(np.ones((3, 2, 4)), np.ones((2, 2, 4)), np.ones((2, 2, 4)), enable_gqa=True)
    with pytest.raises(InvalidArgumentError, match="activation should be 'relu' or 'gelu'"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh", key=k)
    model = nn.Sequential(nn.TransformerEncoderLayer(8, 2, 16, key=k).eval())
    path = r"model.layers\[0\] \(TransformerEncoderLayer\(\)\): expected src .*got \(4, 3, 6\)"
    with pytest.raises(ShapeError, match=path):
        model(np.ones((4, 3, 6), np.float32))
    dec = nn.TransformerDecoderLayer(8, 2, 16, key=k).eval()
    with pytest.raises(ShapeError, match="must both be batched .3-D. or both unbatched"):
        dec(x, x[:, 0])
    with pytest.raises(InvalidArgumentError, match="expected a TransformerEncoderLayer"):
        nn.TransformerEncoder(dec, 2)
