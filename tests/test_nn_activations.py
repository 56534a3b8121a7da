"""ember.nn's activations against PyTorch: values and gradients (at the kinks too, where PyTorch picks a
one-sided derivative), large inputs, special values, every option, the layers' reprs and parameters, and
the errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

from nn_parity import assert_close, copy_weights, to_numpy  # noqa: E402

# (name, keyword options): every elementwise activation with each option set the issue lists
ELEMENTWISE = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
    ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {}), ("celu", {"alpha": 2.0}), ("gelu", {}),
    ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 1.0}), ("softplus", {"beta": 0.5, "threshold": 5.0}), ("softsign", {}),
    ("sigmoid", {}), ("logsigmoid", {}), ("hardtanh", {}), ("hardtanh", {"min_val": -3.0, "max_val": 1.0}),
    ("hardsigmoid", {}), ("hardswish", {}), ("tanh", {}), ("tanhshrink", {}), ("softshrink", {}),
    ("softshrink", {"lambd": 1.0}), ("hardshrink", {}), ("hardshrink", {"lambd": 1.0}),
    ("threshold", {"threshold": 1.0, "value": -2.0}), ("threshold", {"threshold": -0.5, "value": 3.0}),
]  # fmt: skip

# Every kink of the functions above, and points around them.
KINKS = np.array([-6.0, -3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 20.0, 10.0, -0.25, 0.25, 4.5, -7.5, 7.0])


def _torch_fn(name):
    return getattr(TF, name) if hasattr(TF, name) else getattr(torch, name)


def _id(case):
    name, options = case
    return name + "".join(f"-{k}={v}" for k, v in options.items())


def _both(name, options, x, dtype=np.float32):
    """ember's and torch's value and gradient of sum(f(x) * w) at x."""
    x = np.asarray(x, dtype=dtype)
    w = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    ours = getattr(F, name)
    with ember.config.x64(dtype == np.float64):
        value = ours(enp.asarray(x), **options)
        grad = ember.grad(lambda v: enp.sum(ours(v, **options) * w))(enp.asarray(x))
    t = torch.tensor(x, requires_grad=True)
    out = _torch_fn(name)(t, **options)
    (t_grad,) = torch.autograd.grad((out * torch.tensor(w)).sum(), t)
    return value, out, grad, t_grad


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3, 4)])
def test_elementwise_matches_torch(case, shape):
    name, options = case
    x = np.random.default_rng(len(shape)).uniform(-5, 5, shape)
    value, t_value, grad, t_grad = _both(name, options, x)
    assert value.shape == tuple(t_value.shape) and value.dtype == enp.float32
    assert_close(value, t_value, what=f"{name} value")
    assert_close(grad, t_grad, what=f"{name} gradient")


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_derivative_at_the_kinks_is_torchs(case):
    name, options = case
    value, t_value, grad, t_grad = _both(name, options, KINKS, np.float64)
    assert_close(value, t_value, rtol=1e-12, atol=1e-12, what=f"{name} value at the kinks")
    tol = 1e-7 if name == "hardsigmoid" else 1e-12  # PyTorch's float64 hardsigmoid' is a float32 1/6
    assert_close(grad, t_grad, rtol=tol, atol=tol, what=f"{name} derivative at the kinks")


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_large_inputs_finite_value_and_gradient(case):
    name, options = case
    x = np.array([-1e4, -1e3, -100.0, -30.0, 30.0, 100.0, 1e3, 1e4])
    value, t_value, grad, t_grad = _both(name, options, x)
    assert np.isfinite(np.asarray(value)).all() and np.isfinite(np.asarray(grad)).all(), (value, grad)
    assert_close(value, t_value, what=f"{name} value at large inputs")
    assert_close(grad, t_grad, what=f"{name} gradient at large inputs")


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_special_values_as_torch(case):
    name, options = case
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=np.float32)
    ours = np.asarray(getattr(F, name)(enp.asarray(x), **options))
    theirs = to_numpy(_torch_fn(name)(torch.tensor(x), **options))
    if name == "gelu" and not options:
        theirs[0] = np.inf  # PyTorch's exact gelu gives nan at +inf (its erf kernel); the limit is +inf
    np.testing.assert_array_equal(ours, theirs, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_other_float_dtypes(case, dtype):
    name, options = case
    x = np.random.default_rng(1).uniform(-5, 5, (3, 4))
    value, t_value, grad, t_grad = _both(name, options, x, dtype)
    assert value.dtype == dtype
    tol = (1e-7 if name == "hardsigmoid" else 1e-12) if dtype == np.float64 else 4e-3
    assert_close(value, t_value, rtol=tol, atol=tol, what=f"{name} value")
    assert_close(grad, t_grad, rtol=tol, atol=tol, what=f"{name} gradient")


@pytest.mark.parametrize("name", ["relu", "relu6", "hardtanh", "threshold"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_integer_inputs_as_torch(name, dtype):
    unsigned = dtype == np.uint8
    x = np.array([0, 1, 3, 5, 7, 200], dtype=dtype) if unsigned else np.array([-7, -1, 0, 1, 3, 7], dtype=dtype)
    args = {"threshold": (2, 5 if unsigned else -5), "hardtanh": (0, 6) if unsigned else ()}.get(name, ())
    ours = getattr(F, name)(enp.asarray(x), *args)
    theirs = getattr(TF, name)(torch.tensor(x), *args)
    assert ours.dtype == dtype
    np.testing.assert_array_equal(np.asarray(ours), to_numpy(theirs))


# --- along a dimension -----------------------------------------------------------------------------------

SOFTMAX_CASES = [((), 0), ((5,), 0), ((5,), -1), ((2, 3), 0), ((2, 3), 1), ((2, 3, 4), -1), ((2, 3, 4), 1), ((0, 3), 1),
                 ((0, 3), 0), ((5,), None), ((2, 3), None), ((2, 3, 4), None), ((2, 3, 4, 2), None), ((), None)]  # fmt: skip


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,dim", SOFTMAX_CASES)
def test_softmax_family_matches_torch(name, shape, dim):
    x = np.random.default_rng(0).uniform(-5, 5, shape).astype(np.float32)
    w = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours = getattr(F, name)
    grad = ember.grad(lambda v: enp.sum(ours(v, dim) * w))(enp.asarray(x))
    t = torch.tensor(x, requires_grad=True)
    with pytest.warns(UserWarning) if dim is None else _no_warning():  # torch warns about the implicit dim
        out = getattr(TF, name)(t, dim)
    (t_grad,) = torch.autograd.grad((out * torch.tensor(w)).sum(), t)
    assert_close(ours(enp.asarray(x), dim), out)
    assert_close(grad, t_grad)


def test_implicit_dim_is_warn_free():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.softmax(enp.ones((2, 3)))
        nn.LogSoftmax()(enp.ones((2, 3, 4)))


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_family_is_stable_and_takes_dtype(name):
    x = np.array([[-1e4, 0.0, 1e4], [1e4, 1e4, -1e4], [3.0, -2.0, 0.5]], dtype=np.float32)
    w = np.random.default_rng(0).standard_normal(x.shape).astype(np.float32)
    ours = getattr(F, name)
    value = ours(enp.asarray(x), 1)
    grad = ember.grad(lambda v: enp.sum(ours(v, dim=1) * w))(enp.asarray(x))
    t = torch.tensor(x, requires_grad=True)
    out = getattr(TF, name)(t, 1)
    (t_grad,) = torch.autograd.grad((out * torch.tensor(w)).sum(), t)
    assert np.isfinite(np.asarray(value)).all() and np.isfinite(np.asarray(grad)).all()
    assert_close(value, out)
    assert_close(grad, t_grad)
    half = np.random.default_rng(2).uniform(-3, 3, (2, 5)).astype(np.float16)
    got = ours(enp.asarray(half), -1, dtype=enp.float32)
    want = getattr(TF, name)(torch.tensor(half), -1, dtype=torch.float32)
    assert got.dtype == enp.float32
    assert_close(got, want)
    ints = ours(enp.array([1, 2, 3]), 0, dtype=enp.float32)
    assert_close(ints, getattr(TF, name)(torch.tensor([1, 2, 3]), 0, dtype=torch.float32))


@pytest.mark.parametrize("shape,dim", [((4,), -1), ((2, 6), 1), ((4, 3), 0), ((2, 4, 3), -2), ((0, 4), -1)])
def test_glu_matches_torch(shape, dim):
    x = np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)
    w = np.random.default_rng(1).standard_normal(TF.glu(torch.tensor(x), dim).shape).astype(np.float32)
    grad = ember.grad(lambda v: enp.sum(F.glu(v, dim) * w))(enp.asarray(x))
    t = torch.tensor(x, requires_grad=True)
    out = TF.glu(t, dim)
    (t_grad,) = torch.autograd.grad((out * torch.tensor(w)).sum(), t)
    assert_close(F.glu(enp.asarray(x), dim), out)
    assert_close(grad, t_grad)


@pytest.mark.parametrize("x_shape,w_shape", [((), (1,)), ((), ()), ((5,), (1,)), ((2, 3), (3,)), ((2, 3, 4), (3,)),
                                             ((2, 3, 2, 2), (3,)), ((0, 2, 3), (2,)), ((2, 3), (1,))])  # fmt: skip
def test_prelu_matches_torch(x_shape, w_shape):
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, x_shape).astype(np.float32)
    x.reshape(-1)[:1] = 0.0  # a kink: PyTorch's derivative at 0 is the slope
    weight = rng.uniform(0, 1, w_shape).astype(np.float32)
    cot = rng.standard_normal(x_shape).astype(np.float32)
    gx, gw = ember.grad(lambda v, a: enp.sum(F.prelu(v, a) * cot), argnums=(0, 1))(enp.asarray(x), enp.asarray(weight))
    t, tw = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    out = TF.prelu(t, tw)
    t_gx, t_gw = torch.autograd.grad((out * torch.tensor(cot)).sum(), (t, tw))
    assert_close(F.prelu(enp.asarray(x), enp.asarray(weight)), out)
    assert_close(gx, t_gx)
    assert_close(gw, t_gw)


def test_one_hot_matches_torch():
    x = np.array([[0, 3], [2, 1]])
    for n in (-1, 4, 6):
        ours = F.one_hot(enp.asarray(x), n)
        np.testing.assert_array_equal(np.asarray(ours), to_numpy(TF.one_hot(torch.tensor(x), n)))
        assert enp.issubdtype(ours.dtype, enp.integer)
    assert F.one_hot(enp.asarray(2), 3).tolist() == [0, 0, 1]
    assert F.one_hot(enp.zeros((0,), dtype=enp.int32), 3).shape == (0, 3)
    assert ember.jit(lambda v: F.one_hot(v, 5))(enp.array([4, 0])).tolist() == [[0, 0, 0, 0, 1], [1, 0, 0, 0, 0]]
    assert ember.vmap(lambda v: F.one_hot(v, 3))(enp.array([2, 0])).tolist() == [[0, 0, 1], [1, 0, 0]]


# --- layers ---------------------------------------------------------------------------------------------------

LAYERS = [
    ("ReLU", ()), ("ReLU", (True,)), ("ReLU6", ()), ("ReLU6", (True,)), ("LeakyReLU", ()), ("LeakyReLU", (0.2, True)),
    ("ELU", ()), ("ELU", (2.0, True)), ("SELU", ()), ("SELU", (True,)), ("CELU", ()), ("CELU", (0.5, True)), ("GELU", ()),
    ("GELU", ("tanh",)), ("SiLU", ()), ("SiLU", (True,)), ("Mish", ()), ("Mish", (True,)), ("Softplus", ()),
    ("Softplus", (2, 10)), ("Softsign", ()), ("Sigmoid", ()), ("LogSigmoid", ()), ("Hardtanh", ()),
    ("Hardtanh", (-2, 3, True)), ("Hardsigmoid", ()), ("Hardsigmoid", (True,)), ("Hardswish", ()), ("Hardswish", (True,)),
    ("Tanh", ()), ("Tanhshrink", ()), ("Softshrink", ()), ("Softshrink", (1,)), ("Hardshrink", ()), ("Hardshrink", (2.0,)),
    ("Threshold", (0.1, 20)), ("Threshold", (1, 2, True)), ("GLU", ()), ("GLU", (1,)), ("Softmax", ()), ("Softmax", (1,)),
    ("LogSoftmax", ()), ("LogSoftmax", (-1,)), ("Softmin", ()), ("Softmin", (0,)), ("PReLU", ()), ("PReLU", (4, 0.1)),
]  # fmt: skip


def test_every_activation_layer_is_covered():
    from ember.nn import _activations

    assert sorted({name for name, _ in LAYERS}) == sorted(_activations.__all__)


@pytest.mark.filterwarnings("ignore:Implicit dimension choice")  # torch's Softmax(dim=None); ember's is warn-free
@pytest.mark.parametrize("cls,args", LAYERS, ids=lambda v: v if isinstance(v, str) else repr(v))
def test_layer_matches_torch(cls, args):
    ours, theirs = getattr(nn, cls)(*args), getattr(torch.nn, cls)(*args)
    assert repr(ours) == repr(theirs)
    ours = copy_weights(ours, theirs)  # also: the parameter names agree (PReLU's weight; none for the rest)
    x = np.random.default_rng(0).uniform(-4, 4, (2, 4, 6)).astype(np.float32)
    x_t = torch.tensor(x, requires_grad=True)
    out_t = theirs(x_t.clone())  # a clone: the in-place layers would overwrite torch's input
    cot = np.random.default_rng(1).standard_normal(tuple(out_t.shape)).astype(np.float32)
    params = dict(ours.named_parameters())

    def loss(p, v):
        return enp.sum(nn.functional_call(ours, p, v) * cot)

    gp, gx = ember.grad(loss, argnums=(0, 1))(params, enp.asarray(x))
    t_params = [p for _, p in theirs.named_parameters()]
    t_grads = torch.autograd.grad((out_t * torch.tensor(cot)).sum(), [x_t, *t_params])
    assert_close(ours(enp.asarray(x), key=ember.random.key(0)), out_t)
    assert_close(gx, t_grads[0])
    for (name, _), t_g in zip(theirs.named_parameters(), t_grads[1:]):
        assert_close(gp[name], t_g, what=name)


def test_layers_are_static_pytrees_that_jit_and_vmap():
    model = nn.Sequential(nn.LeakyReLU(0.25), nn.GELU("tanh"), nn.Softmax(dim=-1))
    assert ember.tree.leaves(model) == []
    x = enp.asarray(np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32))
    want = model(x)
    assert_close(ember.jit(lambda m, v: m(v))(model, x), to_numpy(want))
    assert_close(ember.vmap(model)(x), to_numpy(want))


def test_prelu_default_init_and_dtype():
    layer = nn.PReLU(3)
    assert layer.weight.shape == (3,) and layer.weight.dtype == enp.float32
    np.testing.assert_array_equal(np.asarray(layer.weight), to_numpy(torch.nn.PReLU(3).weight))
    assert nn.PReLU(init=0.5, dtype=enp.float16).weight.tolist() == [0.5]
    assert nn.PReLU(init=0.5, dtype=enp.float16).weight.dtype == enp.float16
    assert [name for name, _ in nn.PReLU(2).named_parameters()] == ["weight"]


# --- bad input ------------------------------------------------------------------------------------------------


def test_non_floating_inputs_raise():
    with pytest.raises(DTypeError, match=r"gelu: expected a floating input, got int32 of shape \(2,\)"):
        F.gelu(enp.array([1, 2]))
    with pytest.raises(DTypeError, match="relu: expected a floating or integer input, got bool"):
        F.relu(enp.array([True]))
    with pytest.raises(DTypeError, match="softmax: expected a floating input, got int32"):
        F.softmax(enp.array([1, 2]), 0)
    with pytest.raises(DTypeError, match="one_hot: expected an integer array of class indices, got float32"):
        F.one_hot(enp.array([1.0]))


def test_bad_options_raise():
    with pytest.raises(InvalidArgumentError, match="approximate='fast' is not one of 'none'"):
        F.gelu(enp.ones(2), approximate="fast")
    with pytest.raises(InvalidArgumentError, match="hardtanh: min_val=2.0 is greater than max_val=1.0"):
        F.hardtanh(enp.ones(2), 2.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="softshrink: lambd=-1.0 is negative"):
        F.softshrink(enp.ones(2), -1.0)
    with pytest.raises(InvalidArgumentError, match="hardshrink: lambd=-1.0 is negative"):
        F.hardshrink(enp.ones(2), -1.0)
    with pytest.raises(InvalidArgumentError, match="celu: alpha=0 divides by zero"):
        F.celu(enp.ones(2), 0)
    with pytest.raises(ShapeError, match=r"softmax: dim=2 is out of range for an input of shape \(2, 3\)"):
        F.softmax(enp.ones((2, 3)), 2)


def test_shape_errors():
    with pytest.raises(ShapeError, match=r"glu: dimension -1 of the input, of shape \(2, 3\) \(float32\), has odd size 3"):
        F.glu(enp.ones((2, 3)))
    with pytest.raises(ShapeError, match="glu: a 0-d input"):
        F.glu(enp.ones(()))
    with pytest.raises(ShapeError, match=r"prelu: a weight of 3 slopes needs an input with 3 channels in dimension 1, "
                                         r"got shape \(2, 4\)"):  # fmt: skip
        F.prelu(enp.ones((2, 4)), enp.ones(3))
    with pytest.raises(ShapeError, match="needs an input with 3 channels"):
        F.prelu(enp.ones(()), enp.ones(3))
    with pytest.raises(ShapeError, match=r"weight must be a scalar or 1-d .* got shape \(3, 1\)"):
        F.prelu(enp.ones((2, 3)), enp.ones((3, 1)))
    with pytest.raises(ShapeError, match=r"^model.layers\[1\] \(PReLU\(num_parameters=3\)\): prelu: a weight of 3"):
        nn.Sequential(nn.ReLU(), nn.PReLU(3))(enp.ones((2, 4)))


def test_one_hot_errors():
    with pytest.raises(ConcretizationError, match="num_classes=-1 infers the number of classes .* pass num_classes= explicitly"):
        ember.jit(F.one_hot)(enp.array([0, 1]))
    with pytest.raises(ConcretizationError, match="pass num_classes= explicitly"):
        ember.vmap(F.one_hot)(enp.array([0, 1]))
    with pytest.raises(InvalidArgumentError, match="class values must be smaller than num_classes=3, got 5"):
        F.one_hot(enp.array([0, 5]), 3)
    with pytest.raises(InvalidArgumentError, match="class values must be non-negative, got -1"):
        F.one_hot(enp.array([-1, 2]), 3)
    with pytest.raises(InvalidArgumentError, match="cannot infer the number of classes from an empty array"):
        F.one_hot(enp.zeros((0,), dtype=enp.int32))
    with pytest.raises(InvalidArgumentError, match="num_classes=-2"):
        F.one_hot(enp.array([0]), -2)
