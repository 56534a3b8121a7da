"""Structured control flow (`lax.cond switch while_loop fori_loop scan map`) against plain Python.

Every construct is compared with the Python it stands for (an `if`, a loop over NumPy-backed
values), eagerly and under jit, grad (against the gradient of the unrolled Python loop, which
ember differentiates op by op, and finite differences), jvp, vmap (against a loop over examples),
and their compositions: vmap of grad, grad of jit, jit of grad. Error messages are checked for
the op, the branch and the mismatching shapes or dtypes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import grad, jit, jvp, lax, vmap
from ember.errors import (
    ArgumentTypeError,
    ConcretizationError,
    DTypeError,
    EmberError,
    InvalidArgumentError,
    ShapeError,
    TransformError,
)
from ember.test_util import check_grads

RNG = np.random.default_rng(0)


def _arr(*shape, scale=1.0):
    return enp.asarray((RNG.standard_normal(shape) * scale).astype(np.float32))


def close(got, want, tol=1e-5):
    got_leaves, got_tree = ember.tree.flatten(got)
    want_leaves, want_tree = ember.tree.flatten(want)
    assert got_tree == want_tree, (got_tree, want_tree)
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def loop_over(f, *batched):
    """vmap's reference: f on each example, stacked."""
    outs = [f(*[b[i] for b in batched]) for i in range(batched[0].shape[0])]
    return ember.tree.map(lambda *xs: enp.stack(xs), *outs)


# --- cond --------------------------------------------------------------------------------------------


def f_cond(x, w):
    return lax.cond(x.sum() > 0, lambda a, b: {"y": enp.sin(a) * b, "z": a.sum()},
                    lambda a, b: {"y": a - b ** 2, "z": a.prod()}, x, w)  # fmt: skip


def ref_cond(x, w):
    if float(x.sum()) > 0:
        return {"y": enp.sin(x) * w, "z": x.sum()}
    return {"y": x - w**2, "z": x.prod()}


def loss(f):
    def scalar(*a):
        o = f(*a)
        return (o["y"] ** 2).sum() + o["z"]

    return scalar


X, W = _arr(3), _arr(3)
CASES = [(X, W), (-X * enp.sign(X.sum()), W), (X * enp.sign(X.sum()), W)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_cond_matches_python_if(case):
    x, w = CASES[case]
    close(f_cond(x, w), ref_cond(x, w))
    close(jit(f_cond)(x, w), ref_cond(x, w))
    close(jvp(f_cond, (x, w), (w, x)), jvp(ref_cond, (x, w), (w, x)))
    g = grad(loss(f_cond), argnums=(0, 1))
    want = grad(loss(ref_cond), argnums=(0, 1))(x, w)
    close(g(x, w), want)
    close(jit(g)(x, w), want)
    close(grad(jit(loss(f_cond)), argnums=(0, 1))(x, w), want)


def test_cond_finite_differences():
    with ember.config.x64(True):
        x, w = enp.asarray(np.asarray(X, np.float64)), enp.asarray(np.asarray(W, np.float64))
        check_grads(lambda x, w: f_cond(x, w)["y"], (x, w), order=2)
        check_grads(lambda x, w: f_cond(-x, w)["y"], (x, w), order=2)


def test_cond_vmap_batched_predicate_selects_per_example():
    xs = enp.stack([X, -X, X * 2, -X * 3])
    close(vmap(f_cond, (0, None))(xs, W), loop_over(lambda x: ref_cond(x, W), xs))
    g = grad(loss(f_cond))
    close(vmap(g, (0, None))(xs, W), loop_over(lambda x: grad(loss(ref_cond))(x, W), xs))
    close(jit(vmap(g, (0, None)))(xs, W), loop_over(lambda x: grad(loss(ref_cond))(x, W), xs))
    close(grad(lambda xs: vmap(loss(f_cond), (0, None))(xs, W).sum())(xs),
          loop_over(lambda x: grad(loss(ref_cond))(x, W), xs))  # fmt: skip


def test_cond_vmap_unbatched_predicate():
    ws = enp.stack([W, W * 2, -W])
    close(vmap(f_cond, (None, 0))(X, ws), loop_over(lambda w: ref_cond(X, w), ws))
    close(vmap(grad(loss(f_cond), argnums=1), (None, 0))(X, ws), loop_over(lambda w: grad(loss(ref_cond), argnums=1)(X, w), ws))


def test_cond_pred_forms():
    assert float(lax.cond(True, lambda: 1.0, lambda: 2.0)) == 1.0
    assert float(lax.cond(np.bool_(False), lambda: 1.0, lambda: 2.0)) == 2.0
    assert float(lax.cond(enp.asarray(3), lambda x: x + 1, lambda x: x - 1, 1.0)) == 2.0  # nonzero int is true
    assert float(lax.cond(0, lambda x: x + 1, lambda x: x - 1, 1.0)) == 0.0


def test_cond_joins_weak_types():
    both_weak = lax.cond(True, lambda: 1.0, lambda: 2.0)
    assert both_weak.weak_type and both_weak.dtype == np.float32
    one_strong = lax.cond(True, lambda: 1.0, lambda: enp.float32(2.0))
    assert not one_strong.weak_type and one_strong.dtype == np.float32
    assert float(one_strong) == 1.0


def test_cond_closes_over_values_being_differentiated():
    def f(w):
        return lax.cond(w.sum() > 0, lambda x: x * w, lambda x: x + w, X).sum()

    def ref(w):
        return (X * w).sum() if float(w.sum()) > 0 else (X + w).sum()

    for w in (W, -W):
        close(grad(f)(w), grad(ref)(w))
        close(jit(grad(f))(w), grad(ref)(w))


def test_cond_branch_mismatch_errors_name_op_branches_and_types():
    x = enp.ones(3)
    with pytest.raises(ShapeError, match=r"lax\.cond: false_fun and true_fun .* output is float32\(3,\) from "
                                         r"false_fun and float32\(4,\) from true_fun"):  # fmt: skip
        lax.cond(True, lambda x: enp.ones(4), lambda x: x, x)
    with pytest.raises(DTypeError, match=r"lax\.cond: .*int32\(3,\) from false_fun and float32\(3,\) from true_fun"):
        lax.cond(True, lambda x: x, lambda x: x.astype("int32"), x)
    with pytest.raises(ArgumentTypeError, match=r"lax\.cond: .*same pytree structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, x)
    with pytest.raises(ShapeError, match=r"output\['a'\]"):
        lax.cond(True, lambda x: {"a": x}, lambda x: {"a": x[:2]}, x)
    assert issubclass(ShapeError, EmberError)


def test_cond_predicate_errors():
    with pytest.raises(ShapeError, match=r"lax\.cond: pred must be a scalar.*bool\(3,\)"):
        lax.cond(enp.ones(3) > 0, lambda: 1.0, lambda: 2.0)
    with pytest.raises(DTypeError, match=r"lax\.cond: pred must be a boolean.*float32"):
        lax.cond(enp.float32(1.0), lambda: 1.0, lambda: 2.0)
    with pytest.raises(ShapeError, match=r"lax\.cond: pred must be a scalar"):
        jit(lambda x: lax.cond(x > 0, lambda: 1.0, lambda: 2.0))(enp.ones(2))


def test_python_if_on_traced_value_under_jit_points_to_lax_cond():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(ConcretizationError) as info:
        jit(f)(enp.ones(3))
    message = str(info.value)
    assert "lax.cond" in message and "argument x" in message
    # The fix the message suggests works:
    g = jit(lambda x: lax.cond(x.sum() > 0, lambda x: x, lambda x: -x, x))
    close(g(-enp.ones(3)), enp.ones(3))


def test_python_if_inside_a_branch_is_a_clear_error():
    with pytest.raises(ConcretizationError, match="lax.cond"):
        lax.cond(True, lambda x: x if x.sum() > 0 else -x, lambda x: x, enp.ones(2))


# --- switch ------------------------------------------------------------------------------------------


BRANCHES = [lambda x: enp.sin(x), lambda x: x**2, lambda x: -x * 3.0]


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch_matches_python_indexing_with_clamping(index):
    want_fn = BRANCHES[min(max(index, 0), 2)]
    close(lax.switch(index, BRANCHES, X), want_fn(X))
    close(jit(lambda i, x: lax.switch(i, BRANCHES, x))(index, X), want_fn(X))
    close(grad(lambda x: lax.switch(index, BRANCHES, x).sum())(X), grad(lambda x: want_fn(x).sum())(X))


def test_switch_vmap_batched_index():
    idx = enp.asarray([2, 0, 1, 5, -1])
    xs = enp.stack([X * (k + 1) for k in range(5)])
    want = enp.stack([BRANCHES[min(max(int(i), 0), 2)](x) for i, x in zip(idx, xs)])
    close(vmap(lambda i, x: lax.switch(i, BRANCHES, x))(idx, xs), want)
    g = vmap(grad(lambda x, i: lax.switch(i, BRANCHES, x).sum()))(xs, idx)
    close(g, enp.stack([grad(lambda x, i=i: BRANCHES[min(max(int(i), 0), 2)](x).sum())(x) for i, x in zip(idx, xs)]))


def test_switch_errors():
    with pytest.raises(ShapeError, match=r"lax\.switch: branch 0 and branch 2 .*float32\(3,\) from branch 0 and "
                                         r"float32\(2,\) from branch 2"):  # fmt: skip
        lax.switch(1, [lambda x: x, lambda x: x, lambda x: x[:2]], X)
    with pytest.raises(DTypeError, match=r"lax\.switch: index must be an integer"):
        lax.switch(1.0, BRANCHES, X)
    with pytest.raises(EmberError, match="empty"):
        lax.switch(0, [], X)


# --- while_loop -----------------------------------------------------------------------------------------


def body(c, w):
    i, v = c
    return i + 1, enp.sin(v * w) ** 2 + v + 0.25


def f_while(x, w):
    return lax.while_loop(lambda c: c[1].sum() < 6.0, lambda c: body(c, w), (0, x))


def ref_while(x, w):
    c = (0, x)
    while float(c[1].sum()) < 6.0:
        c = body(c, w)
    return c


def while_loss(f):
    return lambda x, w: (f(x, w)[1] ** 2).sum()


XW = enp.asarray([0.3, 0.5, -0.2]), enp.asarray(1.3)


def test_while_matches_python_loop():
    x, w = XW
    got, want = f_while(x, w), ref_while(x, w)
    assert int(got[0]) == want[0] >= 3
    close(got[1], want[1])
    close(jit(f_while)(x, w)[1], want[1])
    close(jvp(lambda x, w: f_while(x, w)[1], (x, w), (x, w)), jvp(lambda x, w: ref_while(x, w)[1], (x, w), (x, w)))


def test_while_reverse_mode_matches_unrolled_loop():
    x, w = XW
    g = grad(while_loss(f_while), argnums=(0, 1))
    want = grad(while_loss(ref_while), argnums=(0, 1))(x, w)
    close(g(x, w), want)
    close(jit(g)(x, w), want)  # trip count known only at run time
    close(grad(jit(while_loss(f_while)), argnums=(0, 1))(x, w), want)
    close(ember.jacrev(lambda x: f_while(x, w)[1])(x), ember.jacfwd(lambda x: ref_while(x, w)[1])(x))
    close(ember.hessian(lambda x: while_loss(f_while)(x, w))(x), ember.hessian(lambda x: while_loss(ref_while)(x, w))(x))


def test_while_finite_differences():
    with ember.config.x64(True):
        x, w = enp.asarray([0.3, 0.5, -0.2]), enp.asarray(1.3)
        check_grads(lambda x, w: f_while(x, w)[1], (x, w), order=2, rtol=1e-4, atol=1e-4)


def test_while_vmap_batched_predicate_runs_until_all_done():
    x, w = XW
    xs = enp.stack([x, x + 1.0, x * 0.5, x + 2.5])
    got = vmap(f_while, (0, None))(xs, w)
    want = loop_over(lambda x: ref_while(x, w), xs)
    assert got[0].tolist() == [int(i) for i in want[0]]  # each example stopped at its own step
    close(got[1], want[1])
    g = grad(while_loss(f_while))
    want_g = loop_over(lambda x: grad(while_loss(ref_while))(x, w), xs)
    close(vmap(g, (0, None))(xs, w), want_g)
    close(jit(vmap(g, (0, None)))(xs, w), want_g)
    close(grad(lambda xs: vmap(while_loss(f_while), (0, None))(xs, w).sum())(xs), want_g)
    ws = enp.asarray([1.3, 0.7, 2.0])
    close(vmap(grad(while_loss(f_while), argnums=1), (None, 0))(x, ws),
          loop_over(lambda w: grad(while_loss(ref_while), argnums=1)(x, w), ws))  # fmt: skip


def test_while_second_order_under_jit():
    x, w = XW
    want = ember.hessian(lambda x, w: while_loss(ref_while)(x, w), argnums=(0, 1))(x, w)
    # Forward over reverse needs no trip count while tracing:
    close(jit(ember.hessian(lambda x, w: while_loss(f_while)(x, w), argnums=(0, 1)))(x, w), want, 1e-4)
    xs = enp.stack([x, x * 2])
    close(vmap(jit(ember.hessian(lambda x: while_loss(f_while)(x, w))))(xs),
          loop_over(ember.hessian(lambda x: while_loss(ref_while)(x, w)), xs), 1e-4)  # fmt: skip
    # Reverse over reverse does: a clear error under jit (it works eagerly, see above).
    with pytest.raises(TransformError, match="grad of grad.*outside jit"):
        jit(grad(lambda x: grad(while_loss(f_while))(x, w).sum()))(x)


def test_while_errors():
    with pytest.raises(DTypeError, match=r"lax\.while_loop: cond_fun must return a boolean scalar.*float32"):
        lax.while_loop(lambda c: c, lambda c: c, 1.0)
    with pytest.raises(ShapeError, match=r"lax\.while_loop: body_fun must keep the carry's shapes and dtypes.*"
                                         r"carry\[1\] is float32\(3,\) initially and float32\(4,\) from body_fun"):  # fmt: skip
        lax.while_loop(lambda c: False, lambda c: (c[0], enp.ones(4)), (1.0, enp.ones(3)))
    with pytest.raises(ArgumentTypeError, match=r"lax\.while_loop: body_fun must return a carry of the same pytree"):
        lax.while_loop(lambda c: False, lambda c: (c, c), enp.ones(3))
    with pytest.raises(DTypeError, match=r"carry is int32\(\) initially and float32\(\) \(weak\) from body_fun"):
        lax.while_loop(lambda c: c < 3, lambda c: c * 1.5, enp.int32(0))


def test_while_weak_carry_takes_the_body_dtype():
    out = lax.while_loop(lambda c: c < 10, lambda c: c * 2.5, 1)  # a weak int carry becomes float
    assert out.dtype == np.float32 and float(out) == 15.625
    out = lax.while_loop(lambda c: c < 10.0, lambda c: c + enp.float32(3.0), 0.0)
    assert out.dtype == np.float32 and not out.weak_type and float(out) == 12.0


# --- fori_loop ------------------------------------------------------------------------------------------


def fori_body(i, v):
    return enp.sin(v) * i + v


def ref_fori(lo, hi, v):
    for i in range(lo, hi):
        v = fori_body(enp.int32(i), v)
    return v


@pytest.mark.parametrize("bounds", [(0, 5), (2, 6), (3, 3), (5, 2)])
def test_fori_loop_static_and_traced_bounds(bounds):
    lo, hi = bounds
    x = XW[0]
    want = ref_fori(lo, hi, x)
    close(lax.fori_loop(lo, hi, fori_body, x), want)
    close(lax.fori_loop(enp.asarray(lo), enp.asarray(hi), fori_body, x), want)
    traced = jit(lambda lo, hi, x: lax.fori_loop(lo, hi, fori_body, x))
    close(traced(lo, hi, x), want)
    want_g = grad(lambda x: ref_fori(lo, hi, x).sum())(x)
    close(grad(lambda x: lax.fori_loop(lo, hi, fori_body, x).sum())(x), want_g)
    close(jit(grad(lambda x, hi: lax.fori_loop(lo, hi, fori_body, x).sum()))(x, hi), want_g)  # a while_loop
    assert "scan" in str(ember.make_ir(lambda x: lax.fori_loop(lo, hi, fori_body, x))(x))
    assert "while" in str(ember.make_ir(lambda x, hi: lax.fori_loop(lo, hi, fori_body, x))(x, hi))


def test_fori_loop_index_dtype_and_pytree_carry():
    seen = []

    def step(i, c):
        seen.append(i.dtype)
        return {"a": c["a"] + i, "b": c["b"] * 2.0}

    out = lax.fori_loop(0, 3, step, {"a": enp.int32(0), "b": enp.ones(2)})
    assert int(out["a"]) == 3 and out["b"].tolist() == [8.0, 8.0]
    assert seen and all(d == np.int32 for d in seen)


# --- scan -----------------------------------------------------------------------------------------------


def scan_body(c, xy):
    x, y = xy["x"], xy["y"]
    h = enp.tanh(c["h"] * c["w"] + x)
    return {"h": h, "w": c["w"]}, (h.sum() * y, h)


def f_scan(h, w, xs, ys, reverse=False):
    return lax.scan(scan_body, {"h": h, "w": w}, {"x": xs, "y": ys}, reverse=reverse)


def ref_scan(h, w, xs, ys, reverse=False):
    c, outs = {"h": h, "w": w}, []
    order = range(xs.shape[0])
    for i in reversed(order) if reverse else order:
        c, o = scan_body(c, {"x": xs[i], "y": ys[i]})
        outs.append(o)
    outs = outs[::-1] if reverse else outs
    return c, ember.tree.map(lambda *a: enp.stack(a), *outs)


def scan_loss(f, reverse):
    def scalar(*a):
        c, ys = f(*a, reverse=reverse)
        return (c["h"] ** 2).sum() + (ys[0] ** 2).sum() + ys[1].sum()

    return scalar


SCAN_ARGS = (_arr(2), _arr(2), _arr(5, 2), _arr(5))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_python_loop(reverse):
    args = SCAN_ARGS
    want = ref_scan(*args, reverse=reverse)
    close(f_scan(*args, reverse=reverse), want)
    close(jit(f_scan, static_argnums=4)(*args, reverse), want)
    tangents = tuple(a * 0.5 + 1.0 for a in args)
    close(jvp(lambda *a: f_scan(*a, reverse=reverse), args, tangents), jvp(lambda *a: ref_scan(*a, reverse=reverse), args, tangents))
    g = grad(scan_loss(f_scan, reverse), argnums=(0, 1, 2, 3))
    want_g = grad(scan_loss(ref_scan, reverse), argnums=(0, 1, 2, 3))(*args)
    close(g(*args), want_g)
    close(jit(g)(*args), want_g)
    close(grad(jit(scan_loss(f_scan, reverse)), argnums=(0, 1, 2, 3))(*args), want_g)
    close(ember.hessian(scan_loss(f_scan, reverse))(*args), ember.hessian(scan_loss(ref_scan, reverse))(*args))


def test_scan_finite_differences():
    with ember.config.x64(True):
        args = tuple(enp.asarray(np.asarray(a, np.float64)) for a in SCAN_ARGS)
        check_grads(lambda *a: f_scan(*a)[1], args, order=2)


@pytest.mark.parametrize("axes", [(0, None, None, None), (None, 0, None, None), (None, None, 1, 0), (0, 0, 0, 0)])
def test_scan_vmap(axes):
    args = SCAN_ARGS
    batched = [a if ax is None else enp.stack([a * (k + 1) for k in range(3)], axis=ax) for a, ax in zip(args, axes)]

    def example(k):
        return [a if ax is None else enp.take(b, k, axis=ax) for a, b, ax in zip(args, batched, axes)]

    want = [ref_scan(*example(k)) for k in range(3)]
    got = vmap(f_scan, axes)(*batched)
    for k in range(3):
        close(ember.tree.map(lambda x, k=k: x[k], got), want[k])
    g = grad(scan_loss(f_scan, False), argnums=(0, 1))
    got_g = vmap(g, axes)(*batched)
    for k in range(3):
        close(ember.tree.map(lambda x, k=k: x[k], got_g), grad(scan_loss(ref_scan, False), argnums=(0, 1))(*example(k)))


@pytest.mark.parametrize("unroll", [2, 3, 5, 9, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_unroll_runs_several_steps_a_call_with_the_same_bits(unroll, reverse):
    # length 5: unroll 2 and 3 leave a remainder run step by step; 9 and True run all five in one call
    args = SCAN_ARGS

    def f(*a, reverse=reverse, unroll=unroll):
        return lax.scan(scan_body, {"h": a[0], "w": a[1]}, {"x": a[2], "y": a[3]}, reverse=reverse, unroll=unroll)

    for call in (f, jit(f)):
        for _ in range(6):  # past the calls that run the body uncompiled
            got, want = call(*args), f(*args, unroll=1)
        for a, b in zip(ember.tree.leaves(got), ember.tree.leaves(want), strict=True):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    g = grad(scan_loss(f, reverse), argnums=(0, 1, 2, 3))
    close(jit(g)(*args), grad(scan_loss(ref_scan, reverse), argnums=(0, 1, 2, 3))(*args))


def test_scan_unroll_must_be_a_positive_int_or_a_bool():
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(InvalidArgumentError, match=r"lax\.scan: unroll must be a positive int or a bool"):
            lax.scan(lambda c, x: (c, x), 0.0, enp.ones(3), unroll=bad)
        with pytest.raises(InvalidArgumentError, match=r"lax\.fori_loop: unroll must be a positive int or a bool"):
            lax.fori_loop(0, 3, lambda i, x: x, 0.0, unroll=bad)
    for unroll in (True, False, 2):
        assert float(lax.fori_loop(1, 6, lambda i, x: x * i, enp.asarray(1.0), unroll=unroll)) == 120.0


def test_scan_without_xs_and_length():
    c, ys = lax.scan(lambda c, _: (c * 2.0, c), enp.asarray(1.0), None, length=4)
    assert float(c) == 16.0 and ys.tolist() == [1.0, 2.0, 4.0, 8.0]
    c, ys = lax.scan(lambda c, x: (c, None), 0.0, enp.ones((0, 3)))
    assert ys is None and float(c) == 0.0


def test_scan_errors():
    with pytest.raises(ShapeError, match=r"lax\.scan: the leading axes of xs must all be the scan length.*"
                                         r"xs\[0\] has 3, xs\[1\] has 4"):  # fmt: skip
        lax.scan(lambda c, x: (c, x), 0.0, (enp.ones(3), enp.ones(4)))
    with pytest.raises(ShapeError, match=r"lax\.scan: f must keep the carry's shapes.*float32\(2,\) from f"):
        lax.scan(lambda c, x: (enp.ones(2), x), enp.ones(3), enp.ones(3))
    with pytest.raises(EmberError, match="length="):
        lax.scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(ArgumentTypeError, match=r"pair \(carry, y\)"):
        lax.scan(lambda c, x: c, 0.0, enp.ones(3))
    with pytest.raises(ShapeError, match="is a scalar"):
        lax.scan(lambda c, x: (c, x), 0.0, enp.float32(1.0))


def test_map():
    xs = _arr(7, 3)
    want = enp.stack([enp.sin(x).sum() * x for x in xs])
    close(lax.map(lambda x: enp.sin(x).sum() * x, xs), want)
    close(lax.map(lambda x: enp.sin(x).sum() * x, xs, batch_size=3), want)
    close(jit(lambda xs: lax.map(lambda x: enp.sin(x).sum() * x, xs))(xs), want)
    close(grad(lambda xs: lax.map(lambda x: enp.sin(x).sum() * x, xs).sum())(xs),
          grad(lambda xs: enp.stack([enp.sin(x).sum() * x for x in xs]).sum())(xs))  # fmt: skip
    out = lax.map(lambda p: {"s": p[0] + p[1]}, (xs, xs))
    close(out, {"s": xs * 2})


# --- composition ----------------------------------------------------------------------------------------


def test_nested_control_flow():
    def f(x):
        def outer(c):
            i, v = c
            v = lax.cond(i % 2 == 0, lambda v: lax.scan(lambda h, _: (enp.sin(h) + h, None), v, None, length=2)[0],
                         lambda v: v * 1.1, v)  # fmt: skip
            return i + 1, v

        return lax.while_loop(lambda c: c[0] < 4, outer, (0, x))[1]

    def ref(x):
        v = x
        for i in range(4):
            if i % 2 == 0:
                for _ in range(2):
                    v = enp.sin(v) + v
            else:
                v = v * 1.1
        return v

    x = XW[0]
    close(f(x), ref(x))
    close(jit(f)(x), ref(x))
    close(grad(lambda x: f(x).sum())(x), grad(lambda x: ref(x).sum())(x))
    close(jit(grad(lambda x: f(x).sum()))(x), grad(lambda x: ref(x).sum())(x))
    xs = enp.stack([x, x * 2])
    close(vmap(grad(lambda x: f(x).sum()))(xs), loop_over(grad(lambda x: ref(x).sum()), xs))


def test_make_ir_shows_one_equation_per_construct():
    ir = ember.make_ir(lambda x: lax.cond(x.sum() > 0, lambda x: x, lambda x: -x, x))(X)
    assert re.search(r"= cond\[", str(ir))
    ir = ember.make_ir(lambda x: lax.scan(lambda c, x: (c + x, c), 0.0, x))(X)
    assert re.search(r"= scan\[", str(ir))


def test_jit_reuses_the_compiled_loop():
    f = jit(lambda x, n: lax.fori_loop(0, n, lambda i, v: v + i, x))
    assert float(f(enp.float32(0.0), 4)) == 6.0
    assert float(f(enp.float32(1.0), 5)) == 11.0
    assert f.trace_count == 1


def test_linear_transpose_of_scan():
    xs = _arr(4, 2)
    f = lambda xs: lax.scan(lambda c, x: (c + x * 2.0, c), enp.zeros(2), xs)
    ct = (_arr(2), _arr(4, 2))
    (got,) = ember.linear_transpose(f, xs)(ct)
    _, vjp_fn = ember.vjp(f, xs)
    close(got, vjp_fn(ct)[0])
