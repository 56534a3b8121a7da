"""Eager per-op time: one op on tiny float32 arrays, vs NumPy itself.

This measures dispatch overhead (what ember adds around the NumPy kernel), plus
two medium sizes where the kernel starts to matter. DESIGN.md target: eager
``a + b`` on shape (3,) at most 3x NumPy (aim 2x).
"""

import numpy as np

from benchmarks.registry import register_same_op

_rng = np.random.default_rng(0)


def _f32(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


a3, b3 = _f32(3), _f32(3)
a1k, b1k = _f32(1000), _f32(1000)
m256a, m256b = _f32(256, 256), _f32(256, 256)

# name, expression over xp / a / b, extra Workload fields
_TINY = [
    ("eager_add", "a + b", {"target": 3.0}),
    ("eager_mul", "a * b", {}),
    ("eager_mul_scalar", "a * 2.0", {}),
    ("eager_neg", "-a", {}),
    ("eager_sin", "xp.sin(a)", {}),
    ("eager_exp", "xp.exp(a)", {}),
    ("eager_sum", "xp.sum(a)", {}),
    ("eager_matmul", "a @ b", {}),
    ("eager_slice", "a[1:]", {}),
    ("eager_where", "xp.where(a > b, a, b)", {}),
    ("eager_reshape", "a.reshape(3, 1)", {}),
]

for _name, _expr, _meta in _TINY:
    register_same_op(_name, _expr, a=a3, b=b3, description=f"{_expr.replace('xp.', '')}  f32[3]", **_meta)

register_same_op("eager_add_1000", "a + b", a=a1k, b=b1k, description="a + b  f32[1000]")
register_same_op(
    "eager_matmul_256", "a @ b", a=m256a, b=m256b, description="a @ b  f32[256,256]", rtol=1e-4, atol=1e-4
)
