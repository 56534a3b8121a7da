"""A scalar operand of maximum/minimum as a filled array laid out like the other operand
(ember/backends/filled.py): the views it makes, and jit's generated code, which takes it for a large
operand (a ReLU's ``maximum(x, 0.0)``), against eager mode bit for bit, with NaN payloads, signed
zeros and infinities, in every layout, in fused loops, for float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.backends import filled
from ember.backends.filled import fill_like


def _edge_values(rng, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    specials = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, -np.nan, 0.5, -0.5], dtype)
    flat[: specials.size] = specials
    bits = flat.view(np.uint32 if dtype == np.float32 else np.uint64)
    bits[specials.size] = bits.dtype.type(0x7FC00001 if dtype == np.float32 else 0x7FF8000000000001)  # a payload
    return x


def _layouts(x):
    yield "C", x
    yield "transposed", np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    yield "gappy", np.concatenate([x, x], axis=3)[..., ::2]
    yield "reversed", np.ascontiguousarray(x[::-1])[::-1]


def test_fill_like_views_dense_layouts_and_gives_the_scalar_elsewhere():
    x = np.zeros((4, 3, 5, 6), np.float32)
    fill = filled.filled(1.5, np.float32, x.size)
    for name, a in _layouts(x):
        got = fill_like(fill, a)
        if name in ("C", "transposed"):
            assert isinstance(got, np.ndarray) and got.shape == a.shape and got.strides == a.strides
            assert not got.flags.writeable and (got == np.float32(1.5)).all()
        else:
            assert np.asarray(got).shape == () and got == np.float32(1.5)
    assert filled.filled(-0.0, np.float32, 4).tobytes() != filled.filled(0.0, np.float32, 4).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [lambda x: enp.maximum(x, 0.0), lambda x: enp.maximum(-0.0, x),
                                lambda x: enp.minimum(x, 0.25), lambda x: enp.minimum(enp.maximum(x, -1.0), 1.0) * 2.0])  # fmt: skip
def test_max_and_min_against_a_literal_have_eager_bits(fn, dtype):
    rng = np.random.default_rng(0)
    for shape, takes in (((4, 8, 10, 12), True), ((2, 3, 4, 5), False)):  # (3,840 and 120 elements)
        for name, a in _layouts(_edge_values(rng, shape, dtype)):
            x = enp.asarray(a)
            jitted = ember.jit(fn)
            assert ("_like(" in jitted.lower(x).source) == takes, name
            got, want = np.asarray(jitted(x)), np.asarray(fn(x))
            assert (
                got.dtype == want.dtype and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()
            )


def test_a_relu_in_a_fused_loop_has_eager_bits():
    # a chain of elementwise equations on a large array runs block by block (fusion.py): each block's
    # operand gets its view of the filled array
    rng = np.random.default_rng(1)
    x = enp.asarray(_edge_values(rng, (600, 256), np.float32))

    def chain(x):
        return enp.maximum(x * 1.5 - 0.25, 0.0) * 0.5 + 1.0

    jitted = ember.jit(chain)
    source = jitted.lower(x).source
    assert "for _r in range" in source and "_like(" in source
    assert np.asarray(jitted(x)).tobytes() == np.asarray(chain(x)).tobytes()
