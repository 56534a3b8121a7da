"""op_db entries for structured control flow (`lax.cond switch while_loop fori_loop scan map`) and
`ember.pure_callback`.

Each entry fixes the functions the construct runs (written with lax arithmetic, which every numeric
dtype has and bool does not) and leaves the data as operands: the predicate, the branch index or the
trip count too, so the vmap column batches them (a batched predicate is a select, a batched trip
count a masked loop) and the jit columns trace them (a traced fori_loop bound is a while_loop).
The references are the Python `if`s and loops these stand for, in NumPy. The transform columns then
check every construct under jvp, vjp (while_loop's too: ember differentiates it in reverse mode),
grad of grad, vmap, vmap of grad and jit. tests/test_control_flow.py checks pytrees, errors and
compositions.
"""

from __future__ import annotations

import numpy as np
from op_db import ALL, NO_BOOL, NUMERIC, OpInfo, Sample, make_array, register

import ember
from ember import lax

I32 = np.dtype(np.int32)


def _scalar(value, dtype=I32):
    return np.asarray(value, dtype=dtype)


# --- cond and switch ----------------------------------------------------------------------------------


def _cond(pred, x, y):
    return lax.cond(pred, lambda a, b: lax.add(lax.mul(a, b), a), lambda a, b: lax.sub(a, b), x, y)


def _cond_ref(pred, x, y):
    return x * y + x if pred else x - y


def _cond_samples(rng, dtype):
    out = []
    for shape, pred in (((), True), ((3,), False), ((2, 3), True), ((0, 2), False), ((1, 3), False)):
        out.append(Sample((np.asarray(pred), make_array(rng, shape, dtype), make_array(rng, shape, dtype))))
    return out


_BRANCHES = (lambda a: lax.mul(a, a), lambda a: lax.add(a, a), lambda a: lax.neg(a))
_BRANCH_REFS = (lambda a: a * a, lambda a: a + a, lambda a: -a)


def _switch(index, x):
    return lax.switch(index, _BRANCHES, x)


def _switch_ref(index, x):
    return _BRANCH_REFS[min(max(int(index), 0), 2)](x)


def _switch_samples(rng, dtype):
    return [Sample((_scalar(i), make_array(rng, s, dtype))) for i, s in ((-1, (3,)), (0, ()), (1, (2, 2)), (2, (3,)),
                                                                          (5, (0,)))]  # fmt: skip


# --- loops -------------------------------------------------------------------------------------------


def _step(v, y):
    return lax.add(lax.mul(v, y), y)


def _while(n, x, y):
    # The trip count is data: under vmap each example stops at its own n (a masked loop).
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, _step(c[1], y)), (0, x))[1]


def _loop_ref(n, x, y):
    for _ in range(int(n)):
        x = x * y + y
    return x


def _fori(n, x, y):
    # Concrete bounds make a scan; traced ones (jit, vmap) a while_loop.
    return lax.fori_loop(0, n, lambda i, v: _step(v, y), x)


def _loop_samples(rng, dtype):
    return [Sample((_scalar(n), make_array(rng, s, dtype), make_array(rng, s, dtype)))
            for n, s in ((2, (3,)), (0, (2,)), (3, ()), (1, (2, 2)), (2, (0, 3)))]  # fmt: skip


def _scan(c, xs, w, reverse=False, unroll=1):
    return lax.scan(lambda c, x: (lax.add(lax.mul(c, w), x), lax.mul(c, x)), c, xs, reverse=reverse, unroll=unroll)


def _scan_ref(c, xs, w, reverse=False, unroll=1):  # unroll changes how the loop runs, not its values
    ys = [None] * xs.shape[0]
    order = range(xs.shape[0])
    for i in reversed(order) if reverse else order:
        c, ys[i] = c * w + xs[i], c * xs[i]
    return c, np.stack(ys) if ys else np.zeros((0, *c.shape), c.dtype)


def _scan_samples(rng, dtype):
    out = []
    for k, n, reverse, unroll in (((2,), 3, False, 1), ((), 4, True, 1), ((3,), 1, False, 1), ((2,), 0, False, 2),
                                  ((1, 2), 2, True, 1), ((2,), 5, False, 2), ((), 3, True, True)):  # fmt: skip
        args = (make_array(rng, k, dtype), make_array(rng, (n, *k), dtype), make_array(rng, k, dtype))
        kwargs = {"reverse": reverse} if reverse else {}
        out.append(Sample(args, {**kwargs, "unroll": unroll} if unroll != 1 else kwargs))
    return out


def _map(xs):
    return lax.map(lambda x: lax.add(lax.mul(x, x), x), xs)


def _map_samples(rng, dtype):
    return [Sample((make_array(rng, s, dtype),)) for s in ((4,), (3, 2), (0, 2), (1,))]


# --- pure_callback --------------------------------------------------------------------------------------


def _callback(x):
    # A host function NumPy runs on every dtype: the transpose (a copy, so the result owns its memory).
    spec = ember.ShapeDtypeStruct(x.shape[::-1], x.dtype)
    return ember.pure_callback(lambda a: a.T.copy(), spec, x)


def _callback_samples(rng, dtype):
    return [Sample((make_array(rng, s, dtype),)) for s in ((), (3,), (2, 3), (0, 2), (2, 1, 3))]


register(
    OpInfo("lax.cond", _cond, _cond_ref, NUMERIC, _cond_samples, NO_BOOL, primitives=("cond",), ref_in_dtype=True),
    OpInfo("lax.switch", _switch, _switch_ref, NUMERIC, _switch_samples, NO_BOOL, primitives=("cond",),
           ref_in_dtype=True),
    OpInfo("lax.while_loop", _while, _loop_ref, ALL, _loop_samples, primitives=("while",),
           ref_in_dtype=True),
    OpInfo("lax.fori_loop", _fori, _loop_ref, ALL, _loop_samples, primitives=("scan", "while"),
           ref_in_dtype=True),
    OpInfo("lax.scan", _scan, _scan_ref, ALL, _scan_samples, primitives=("scan",), ref_in_dtype=True),
    OpInfo("lax.map", _map, lambda xs: xs * xs + xs, ALL, _map_samples, primitives=("scan",),
           ref_in_dtype=True),
    OpInfo("pure_callback", _callback, lambda x: x.T, ALL, _callback_samples, primitives=("pure_callback",),
           ref_in_dtype=True, transforms=frozenset({"vmap", "jit"}),
           nondiff="a host function has no derivative (ember.custom_jvp gives it one; test_callbacks.py)"),
)  # fmt: skip
