"""ember.dim: the examples of functorch.dim's README against NumPy / einsum, composition with grad, vmap and
jit (against the same computation written with ember.numpy, and finite differences), and the error messages."""

from __future__ import annotations

import numpy as np
import pytest
from op_db_dim import np_attention, np_softmax

import ember
import ember.numpy as enp
from ember import dim as edim
from ember.dim import Dim, DimArray, dims
from ember.errors import ArgumentTypeError, EmberIndexError, InvalidArgumentError, ShapeError

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


# --- the README's functions, written with dims ---------------------------------------------------------


def mm(A, B):
    i, j, k = dims()
    return (A[i, k] * B[k, j]).sum(k).order(i, j)


def bmm(A, B):
    i = dims(1)
    return mm(A[i], B[i]).order(i)


def attention(K, Q, V):
    batch, channel, key, query = dims()
    k, q, v = K[batch, channel, key], Q[batch, channel, query], V[batch, channel, key]
    a = (k * q).sum(channel)
    a = edim.softmax(a * (channel.size**-0.5), key)
    return (v * a).sum(key).order(batch, channel, query)


def embedding_bag(index, weights):
    batch, sequence, features = dims()
    return weights[index[batch, sequence], features].sum(sequence).order(batch, features)


def unfold(x, kh, kw):
    """im2col of x (C, H, W): (C * kh * kw, L) columns, as torch.nn.functional.unfold (stride 1)."""
    c, i, j, di, dj = dims()
    di.size, dj.size = kh, kw
    i.size, j.size = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    return x[c, i + di, j + dj].order((c, di, dj), (i, j))


def pixel_shuffle(img, r):
    h2, w2, c, b, h, w = dims()
    h2.size = w2.size = r
    return img[b, (c, h2, w2), h, w].order(b, c, (h, h2), (w, w2))


# --- NumPy references ----------------------------------------------------------------------------------


def np_unfold(x, kh, kw):
    C, H, W = x.shape
    cols = [x[:, a : a + H - kh + 1, b : b + W - kw + 1] for a in range(kh) for b in range(kw)]
    return np.stack(cols, 1).reshape(C * kh * kw, -1)


# --- the README examples -------------------------------------------------------------------------------


def test_matrix_product():
    A, B = rand(3, 4), rand(4, 5)
    close(mm(enp.asarray(A), enp.asarray(B)), np.einsum("ik,kj->ij", A, B))


def test_batched_matrix_product_nests_dims():
    A, B = rand(2, 3, 4), rand(2, 4, 5)
    close(bmm(enp.asarray(A), enp.asarray(B)), np.einsum("bik,bkj->bij", A, B))


def test_attention_with_softmax_over_a_dim():
    K, Q, V = rand(2, 3, 4), rand(2, 3, 5), rand(2, 3, 4)
    close(attention(*map(enp.asarray, (K, Q, V))), np_attention(K, Q, V))


def test_embedding_bag_gathers_with_dims():
    index, W = np.array([[1, 0, 4, 3], [2, 2, 0, 1]]), rand(5, 2)
    close(embedding_bag(enp.asarray(index), enp.asarray(W)), W[index].sum(1))


def test_unfold_im2col_indexes_with_dim_arithmetic():
    x = rand(2, 5, 6)
    close(unfold(enp.asarray(x), 2, 3), np_unfold(x, 2, 3))


def test_softmax_over_a_dim_and_other_reductions():
    x = rand(3, 4)
    i, j = dims()
    xd = enp.asarray(x)[i, j]
    close(xd.softmax(i).order(i, j), np_softmax(x, 0))
    close(xd.log_softmax(j).order(i, j), np.log(np_softmax(x, 1)))
    close(xd.mean(j).order(i), x.mean(1))
    close(xd.max(i).order(j), x.max(0))
    close(xd.min(i).order(j), x.min(0))
    close(xd.prod(j).order(i), x.prod(1))
    close(xd.var(i).order(j), x.var(0))
    close(xd.std(j, ddof=1).order(i), x.std(1, ddof=1))
    close(xd.logsumexp(j).order(i), np.log(np.exp(x).sum(1)))
    np.testing.assert_array_equal(np.asarray(xd.argmax(i).order(j)), x.argmax(0))
    close(xd.cumsum(j).order(i, j), np.cumsum(x, 1))
    close(xd.sum((i, j)), x.sum())


def test_gram_matrix_sums_over_two_dims():
    y = rand(2, 3, 4, 5)
    b, c, c2, h, w = dims()
    yy = enp.asarray(y)
    r = (yy[b, c, h, w] * yy[b, c2, h, w]).sum((h, w)) / (h.size * w.size)
    close(r.order(b, c, c2), np.einsum("bchw,bdhw->bcd", y, y) / 20)


def test_splitting_and_flattening():
    A = rand(6, 4)
    i, j, k = dims()
    j.size = 2
    a = enp.asarray(A)[(i, j), k]
    assert (i.size, j.size, k.size) == (3, 2, 4)
    close(a.order(i, (j, k)), A.reshape(3, 2, 4).reshape(3, 8))
    close(a.order(k, j, i), A.reshape(3, 2, 4).transpose(2, 1, 0))
    p, q = dims(sizes=[None, 3])
    close(enp.arange(6.0)[[p, q]].order(q, p), np.arange(6.0).reshape(2, 3).T)  # a list splits too


def test_pixel_shuffle():
    img = rand(2, 8, 3, 5)
    want = img.reshape(2, 2, 2, 2, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
    close(pixel_shuffle(enp.asarray(img), 2), want)


def test_multi_head_attention_splits_and_flattens_heads():
    q, k, v = rand(2, 5, 6), rand(2, 4, 6), rand(2, 4, 6)

    def mha(q, k, v, heads_n):
        batch, query, key, heads, features = dims()
        heads.size = heads_n
        q, k, v = q[batch, query, [heads, features]], k[batch, key, [heads, features]], v[batch, key, [heads, features]]
        probs = ((q * k).sum(features) * features.size**-0.5).softmax(key)
        return (probs * v).sum(key).order(batch, query, [heads, features])

    qh, kh, vh = (x.reshape(2, -1, 3, 2) for x in (q, k, v))
    p = np_softmax(np.einsum("bqhf,bkhf->bhqk", qh, kh) / np.sqrt(2), 3)
    want = np.einsum("bhqk,bkhf->bqhf", p, vh).reshape(2, 5, 6)
    close(mha(*map(enp.asarray, (q, k, v)), 3), want)


def test_a_product_then_a_sum_is_one_contraction():
    A, B = rand(3, 4), rand(4, 5)
    ir = str(ember.make_ir(mm)(enp.asarray(A), enp.asarray(B)))
    assert "dot_general" in ir and "reduce_sum" not in ir and "mul" not in ir
    i, j, k = dims()
    prod = enp.asarray(A)[i, k] * enp.asarray(B)[k, j]
    close(prod.sum((i, j)).order(k), np.einsum("ik,kj->k", A, B))
    close(prod.sum((i, j, k)), np.einsum("ik,kj->", A, B))
    close(prod.exp().order(i, k, j), np.exp(A[:, :, None] * B[None]))  # read as a product when not summed
    close(prod.sum(k).order(i, j), A @ B)  # after being read, the sum reduces the stored product
    out = ember.jit(lambda a, b: a[i, k] * b[k, j])(enp.asarray(A), enp.asarray(B))  # returned unsummed: a pytree
    assert isinstance(out, DimArray) and out.dims == (i, j, k)
    close(out.order(i, j, k), A[:, None, :] * B.T[None])


def test_order_transposes_and_keeps_positional_axes():
    B = rand(3, 4, 5)
    i, j = dims()
    close(enp.asarray(B)[i, j].order(j, i), B.transpose(1, 0, 2))
    partial = enp.asarray(B)[i, j].order(j)
    assert isinstance(partial, DimArray) and partial.dims == (i,) and partial.shape == (4, 5)
    close(partial.order(i), B)


def test_indexing_mixes_dims_with_slices_ints_and_ellipsis():
    x = rand(3, 4, 5)
    i, j = dims()
    d = enp.asarray(x)[i, 1:3, ...]
    assert d.dims == (i,) and d.shape == (2, 5) and d.ndim == 2
    close(d.order(i), x[:, 1:3])
    e = enp.asarray(x)[..., j][0]
    assert e.dims == (j,) and e.shape == (4,)
    close(e.order(j), x[0].T)
    close(d[:, j].order(i, j), x[:, 1:3].transpose(0, 2, 1))


def test_diagonal_triu_and_dims_as_operands():
    x = rand(4, 4)
    i = dims(1)
    close(enp.asarray(x)[i, i].order(i), np.diag(x))
    a, b = dims(sizes=[3, 4])
    close(edim.where(a <= b, 1.0, 0.0).order(a, b), np.triu(np.ones((3, 4))))
    close((a + 10).order(a), np.arange(3) + 10)


def test_implicit_batching_of_a_positional_function():
    weights, examples = rand(5), rand(3, 5)
    batch = dims(1)

    def model(v):
        return enp.maximum(v @ enp.asarray(weights), 0.0)

    close(edim.lift(model)(enp.asarray(examples)[batch]).order(batch), np.maximum(examples @ weights, 0))
    close(enp.asarray(examples)[batch].apply(model).order(batch), np.maximum(examples @ weights, 0))
    bias = enp.asarray(rand(5))
    c = dims(1)
    r = enp.asarray(examples)[batch, c] + bias[c]
    assert r.dims == (batch, c)
    close(r.order(batch, c), examples + np.asarray(bias))


def test_dims_names_sizes_and_binding():
    i, j = dims()
    assert (repr(i), repr(j)) == ("i", "j")
    k = dims(1)
    assert isinstance(k, Dim) and k.name == "k"
    anon = dims(2)[0]
    assert isinstance(anon, Dim) and anon.name.startswith("d")
    m, n = dims(sizes=[4, None])
    assert m.size == 4 and not n.is_bound
    enp.ones(3)[n]
    assert n.size == 3
    n.size = 3  # the same size again is fine


# --- composition with grad, vmap, jit -------------------------------------------------------------------


def _fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        g[idx] = (float(f(enp.asarray(up))) - float(f(enp.asarray(down)))) / (2 * eps)
    return g


@pytest.mark.parametrize("name", ["mm", "attention", "embedding_bag"])
def test_grad_matches_ember_numpy_and_finite_differences(name):
    with ember.config.x64(True):
        if name == "mm":
            B = enp.asarray(rand(4, 5, dtype=np.float64))
            x = rand(3, 4, dtype=np.float64)

            def with_dims(A):
                return (enp.tanh(mm(A, B)) ** 2).sum()

            def plain(A):
                return (enp.tanh(A @ B) ** 2).sum()
        elif name == "attention":
            K, V = (enp.asarray(rand(2, 3, 4, dtype=np.float64)) for _ in range(2))
            x = rand(2, 3, 5, dtype=np.float64)

            def with_dims(Q):
                return (attention(K, Q, V) ** 2).sum()

            def plain(Q):
                s = enp.einsum("bck,bcq->bkq", K, Q) / np.sqrt(3)
                p = enp.exp(s - s.max(1, keepdims=True))
                p = p / p.sum(1, keepdims=True)
                return (enp.einsum("bck,bkq->bcq", V, p) ** 2).sum()
        else:
            index = enp.asarray(np.array([[1, 0, 4, 3], [2, 2, 0, 1]]))
            x = rand(5, 2, dtype=np.float64)

            def with_dims(W):
                return (enp.sin(embedding_bag(index, W)) ** 2).sum()

            def plain(W):
                return (enp.sin(W[index].sum(1)) ** 2).sum()

        g = ember.grad(with_dims)(enp.asarray(x))
        close(g, np.asarray(ember.grad(plain)(enp.asarray(x))), 1e-10)
        close(g, _fd_grad(with_dims, x), 1e-6)
        close(ember.jit(ember.grad(with_dims))(enp.asarray(x)), np.asarray(g), 1e-10)


def test_vmap_and_jit_of_functions_using_dims():
    A, B = rand(6, 3, 4), rand(4, 5)
    got = ember.vmap(mm, in_axes=(0, None))(enp.asarray(A), enp.asarray(B))
    close(got, np.einsum("nik,kj->nij", A, B))
    close(ember.jit(mm)(enp.asarray(A[0]), enp.asarray(B)), A[0] @ B)
    K, Q, V = rand(4, 2, 3, 4), rand(4, 2, 3, 5), rand(4, 2, 3, 4)
    got = ember.jit(ember.vmap(attention))(*map(enp.asarray, (K, Q, V)))
    close(got, np.stack([np_attention(K[n], Q[n], V[n]) for n in range(4)]))
    x = rand(3, 2, 5, 6)
    close(ember.vmap(lambda im: unfold(im, 2, 2))(enp.asarray(x)), np.stack([np_unfold(x[n], 2, 2) for n in range(3)]))


def test_dim_array_is_a_pytree_through_transforms():
    i = dims(1)
    x = enp.asarray(rand(3, 2))[i]  # positional (2,), dim i of size 3
    y = ember.jit(lambda d: (d * 2.0).exp())(x)
    assert isinstance(y, DimArray) and y.dims == (i,)
    close(y.order(i), np.exp(2 * np.asarray(x.order(i))))
    g = ember.grad(lambda d: (d * d).sum(i).sum())(x)
    assert isinstance(g, DimArray) and g.dims == (i,)
    close(g.order(i), 2 * np.asarray(x.order(i)))
    # vmap over a DimArray argument maps a positional axis; the dims stay dims.
    xs = enp.asarray(rand(4, 3))[:, i]  # positional (4,), dim i
    per_row = ember.vmap(lambda d: (d * d).sum(i))(xs)
    close(per_row, (np.asarray(xs.order(i)) ** 2).sum(0))
    close((np.ones(4, np.float32) * xs).order(i), np.asarray(xs.order(i)))  # a NumPy operand defers to the DimArray
    # vmap adds a positional axis: the dims stay dims.
    stacked = ember.vmap(lambda v: v[i] * 1.0)(enp.asarray(rand(4, 3)))
    assert isinstance(stacked, DimArray) and stacked.shape == (4,) and stacked.dims == (i,)


# --- bad input -------------------------------------------------------------------------------------


def test_dim_bound_to_two_sizes():
    i = dims(1)
    enp.ones(3)[i]
    with pytest.raises(ShapeError, match=r"dim 'i' is bound to size 3, but it indexes axis 0 of size 4"):
        enp.ones(4)[i]
    with pytest.raises(ShapeError, match=r"dim 'i' is bound to size 3 and cannot be bound to size 5"):
        i.size = 5
    a, b = dims()
    with pytest.raises(ShapeError, match=r"dim 'a' is bound to size 2, but it indexes axis 1 of size 3"):
        enp.ones((2, 3))[a, a]


def test_unbound_sizes_that_cannot_be_inferred():
    i, j = dims()
    with pytest.raises(ShapeError, match=r"split axis 0 of size 6 into dims \(i, j\): the sizes of i, j are unknown"):
        enp.ones(6)[(i, j),]
    assert not i.is_bound and not j.is_bound  # nothing bound by a failed indexing
    j.size = 4
    with pytest.raises(ShapeError, match=r"bound sizes multiply to 4, which does not divide 6, so 'i' has no size"):
        enp.ones(6)[(i, j),]
    k = dims(1)
    with pytest.raises(ShapeError, match=r"dim 'k' has no size yet"):
        k.size  # noqa: B018
    with pytest.raises(EmberIndexError, match=r"write x\[\(i, j\),\] \(note the comma\)"):
        enp.ones(6)[i, j]


def test_positional_shapes_that_disagree_under_dims():
    i = dims(1)
    a, b = enp.ones((2, 3))[i], enp.ones((2, 4))[i]
    with pytest.raises(ShapeError, match="do not broadcast") as err:
        a + b
    if hasattr(err.value, "add_note"):
        assert "positional shapes are (3,), (4,), batched over dims (i,) of sizes (2,)" in "".join(err.value.__notes__)


def test_dims_arguments():
    with pytest.raises(InvalidArgumentError, match=r"dims: n=3 but 2 sizes were given"):
        dims(3, sizes=[1, 2])
    with pytest.raises(InvalidArgumentError, match=r"dims: cannot tell how many dims to make"):
        print(dims())
    with pytest.raises(InvalidArgumentError, match=r"dim 'i': a size must be a non-negative int, got -1"):
        Dim("i").size = -1


def test_dim_array_reaching_a_positional_function():
    i, j = dims()
    x = enp.ones((2, 3))[i, j]
    want = r"exp: got a DimArray with first-class dims \(i, j\) \(sizes \(2, 3\)\).*use x\.exp\(\).*x\.order\(i, j\)"
    with pytest.raises(ArgumentTypeError, match=want):
        enp.exp(x)
    generic = r"got a DimArray with first-class dims \(i, j\).*use a DimArray method .*ember\.dim\.lift\("
    with pytest.raises(ArgumentTypeError, match=generic):
        enp.stack([x, x])
    with pytest.raises(ArgumentTypeError, match="truth value"):
        bool(x > 0)
    k = dims(1)
    with pytest.raises(InvalidArgumentError, match=r"order: dim 'k' is not one of this DimArray's dims \(i, j\)"):
        x.order(k)
    with pytest.raises(InvalidArgumentError, match=r"sum: dim 'k' is not one of this DimArray's dims"):
        x.sum(k)
    with pytest.raises(InvalidArgumentError, match="given more than once"):
        x.order(i, i)


def test_dim_array_refuses_host_conversion_and_iterates_positional_axes():
    i, j = dims()
    x = enp.ones((2, 3))[i, j]
    host = r"got a DimArray with first-class dims \(i, j\) \(sizes \(2, 3\)\); make the dims positional first: x\.order"
    for convert in (np.asarray, float, int, list, len):
        with pytest.raises(ArgumentTypeError, match=host):
            convert(x)
    rows = enp.asarray(np.arange(6.0).reshape(2, 3))[:, j]  # positional (2,), dim j
    assert len(rows) == 2
    close(np.stack([r.order(j) for r in rows]), np.arange(6.0).reshape(2, 3))
    index_error = r"a DimArray used as an index must hold integers, got float32 \(dims \(i,\)\)"
    with pytest.raises(EmberIndexError, match=index_error):
        enp.ones(3)[enp.zeros(2)[i]]
