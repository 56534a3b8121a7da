"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their one-step cells, with PyTorch's arguments,
parameter names, gate order and initialisation.

A layer runs each direction of each layer as one ``lax.scan`` over time, so it jits, vmaps and
differentiates. The input's contribution to every gate is one matmul over all time steps before the
scan; only the hidden-to-hidden product is inside the loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

import ember.numpy as enp
from ember import lax, random
from ember.core import dtypes
from ember.core.array import Array
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn._checks import describe, require_key
from ember.nn._linear import uniform_init
from ember.nn._module import Module
from ember.nn.functional._dropout import dropout

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one time step ------------------------------------------------------------------------------------


def _relu(x: Array) -> Array:
    return enp.where(x > 0, x, 0)


def _step(mode: str, x_proj: Array, h: Array, c: Array | None, w_hh_t: Array, b_hh: Array | None,
          w_hr_t: Array | None) -> tuple[Array, Array | None]:  # fmt: skip
    """One step of the recurrence given the input's projection ``x_proj`` (``x @ W_ih.T + b_ih``, and
    ``+ b_hh`` too except for GRU, whose ``b_hn`` sits inside ``r * (...)``). Returns ``(h, c)``."""
    hw = enp.matmul(h, w_hh_t)
    if mode == "GRU":
        if b_hh is not None:
            hw = hw + b_hh
        size = hw.shape[-1] // 3
        r = lax.logistic(x_proj[..., :size] + hw[..., :size])
        z = lax.logistic(x_proj[..., size:2 * size] + hw[..., size:2 * size])
        n = enp.tanh(x_proj[..., 2 * size:] + r * hw[..., 2 * size:])
        return n + z * (h - n), None  # (1 - z) * n + z * h
    gates = x_proj + hw
    if mode == "RNN_TANH":
        return enp.tanh(gates), None
    if mode == "RNN_RELU":
        return _relu(gates), None
    size = gates.shape[-1] // 4  # LSTM: input, forget, cell, output gates, in PyTorch's order
    i = lax.logistic(gates[..., :size])
    f = lax.logistic(gates[..., size:2 * size])
    g = enp.tanh(gates[..., 2 * size:3 * size])
    o = lax.logistic(gates[..., 3 * size:])
    c = f * c + i * g
    h = o * enp.tanh(c)
    if w_hr_t is not None:
        h = enp.matmul(h, w_hr_t)
    return h, c


def _input_projection(mode: str, x: Array, w_ih: Array, b_ih: Array | None, b_hh: Array | None) -> Array:
    proj = enp.matmul(x, w_ih.T)
    if b_ih is not None:
        proj = proj + b_ih
    if b_hh is not None and mode != "GRU":
        proj = proj + b_hh
    return proj


def _run_direction(mode: str, x: Array, h0: Array, c0: Array | None, w: dict, reverse: bool):
    """One direction of one layer over a time-major sequence ``x`` (L, N, I): ``(ys, h_n, c_n)``."""
    x_proj = _input_projection(mode, x, w["weight_ih"], w.get("bias_ih"), w.get("bias_hh"))
    w_hh_t = w["weight_hh"].T
    b_hh = w.get("bias_hh") if mode == "GRU" else None
    w_hr = w.get("weight_hr")
    w_hr_t = None if w_hr is None else w_hr.T

    def body(carry, xp):
        h, c = carry
        h, c = _step(mode, xp, h, c, w_hh_t, b_hh, w_hr_t)
        return (h, c), h

    (h_n, c_n), ys = lax.scan(body, (h0, c0), x_proj, reverse=reverse)
    return ys, h_n, c_n


def _check_key(name: str, key: Any, why: str) -> None:
    require_key(name, why, key)
    shape, dtype = getattr(key, "shape", None), getattr(key, "dtype", None)
    if shape != (2,) or dtype != np.uint32:
        raise InvalidArgumentError(
            f"{name}: key= must be a random key (a uint32 array of shape (2,), from ember.random.key(seed) or "
            f"ember.random.split), got {type(key).__name__} of shape {shape} and dtype {dtype}")


def _check_float(name: str, what: str, x: Array) -> None:
    if not dtypes.is_floating(x.dtype):
        raise DTypeError(f"{name}: expected a floating-point {what} (float16, bfloat16, float32 or float64), got "
                         f"shape {x.shape} and dtype {x.dtype}; convert it with x.astype('float32')")


def _init_params(shapes: list[tuple[str, tuple[int, ...]]], hidden_size: int, key: Array, dtype: Any) -> dict:
    """PyTorch's initialisation of every recurrent weight and bias: uniform on ±1/sqrt(hidden_size)."""
    keys = random.split(key, len(shapes)) if shapes else []
    return {name: uniform_init(k, shape, hidden_size, dtype) for (name, shape), k in zip(shapes, keys)}


def _check_sizes(name: str, input_size: int, hidden_size: int) -> tuple[int, int]:
    for arg, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InvalidArgumentError(f"{name}: {arg} must be a non-negative int, got {value!r}")
    if hidden_size == 0:
        raise InvalidArgumentError(f"{name}: hidden_size must be positive, got 0")
    return int(input_size), int(hidden_size)


# --- the layers -------------------------------------------------------------------------------------


class _RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: the weights, named as PyTorch names them, and the loop."""

    flat_weights: dict
    mode: str
    input_size: int
    hidden_size: int
    num_layers: int
    bias: bool
    batch_first: bool
    dropout: float
    bidirectional: bool
    proj_size: int
    training: bool

    def _setup(self, mode: str, input_size: int, hidden_size: int, num_layers: int, bias: bool, batch_first: bool,
               dropout: float, bidirectional: bool, proj_size: int, key: Array, dtype: Any) -> None:  # fmt: skip
        name = type(self).__name__
        input_size, hidden_size = _check_sizes(name, input_size, hidden_size)
        if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
            raise InvalidArgumentError(f"{name}: num_layers must be a positive int, got {num_layers!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise InvalidArgumentError(f"{name}: dropout must be a number in [0, 1] (the probability of an element "
                                       f"being zeroed), got {dropout!r}")  # fmt: skip
        if isinstance(proj_size, bool) or not isinstance(proj_size, (int, np.integer)) or proj_size < 0:
            raise InvalidArgumentError(f"{name}: proj_size must be a non-negative int, got {proj_size!r}")
        if proj_size and mode != "LSTM":
            raise InvalidArgumentError(f"{name}: proj_size is supported only by LSTM, got proj_size={proj_size}")
        if proj_size >= hidden_size:
            raise InvalidArgumentError(f"{name}: proj_size must be smaller than hidden_size, got proj_size={proj_size} "
                                       f"and hidden_size={hidden_size}")  # fmt: skip
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout is applied between recurrent layers (after all but the last), so "
                          f"dropout={dropout} with num_layers=1 does nothing", UserWarning, stacklevel=3)
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, int(num_layers)
        self.bias, self.batch_first, self.bidirectional = bool(bias), bool(batch_first), bool(bidirectional)
        self.dropout, self.proj_size = float(dropout), int(proj_size)
        self.training = True
        self.flat_weights = _init_params(self._param_shapes(), hidden_size, key, dtype)

    # --- names ---

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _out_size(self) -> int:
        return self.proj_size or self.hidden_size

    def _param_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        gates = _GATES[self.mode] * self.hidden_size
        shapes = []
        for layer in range(self.num_layers):
            layer_in = self.input_size if layer == 0 else self._out_size * self._directions
            for suffix in ("", "_reverse")[: self._directions]:
                shapes.append((f"weight_ih_l{layer}{suffix}", (gates, layer_in)))
                shapes.append((f"weight_hh_l{layer}{suffix}", (gates, self._out_size)))
                if self.bias:
                    shapes.append((f"bias_ih_l{layer}{suffix}", (gates,)))
                    shapes.append((f"bias_hh_l{layer}{suffix}", (gates,)))
                if self.proj_size:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (self.proj_size, self.hidden_size)))
        return shapes

    def named_children_items(self) -> Iterator[tuple[str, Any]]:
        for name, _ in self._param_shapes():
            yield name, self.flat_weights.get(name)

    def __getattr__(self, name: str) -> Any:
        # PyTorch's attribute access to a weight (lstm.weight_ih_l0); only reached when no field matches
        weights = self.__dict__.get("flat_weights")
        if weights is not None and name in weights:
            return weights[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _layer_weights(self, layer: int, suffix: str) -> dict:
        out = {}
        for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"):
            value = self.flat_weights.get(f"{kind}_l{layer}{suffix}")
            if value is not None:
                out[kind] = value
        return out

    # --- checks ---

    def _check_input(self, input: Any) -> tuple[Array, bool]:
        name = type(self).__name__
        x = input if isinstance(input, Array) else enp.asarray(input)
        layout = "(N, L, input_size)" if self.batch_first else "(L, N, input_size)"
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            raise ShapeError(
                f"expected an input of shape {layout} or (L, input_size) unbatched, with input_size="
                f"{self.input_size}; got shape {describe(x)}")
        _check_float(name, "input", x)
        length = x.shape[1 if self.batch_first and x.ndim == 3 else 0]
        if length == 0:
            raise ShapeError(f"expected a sequence length larger than 0 (as PyTorch), got an input of shape "
                             f"{describe(x)}")  # fmt: skip
        return x, x.ndim == 2

    def _check_state(self, what: str, value: Any, expected: tuple[int, ...], unbatched: bool, dtype: Any) -> Array:
        name = type(self).__name__
        value = value if isinstance(value, Array) else enp.asarray(value)
        if tuple(value.shape) != expected:
            batch = "" if unbatched else ", batch"
            size = "hidden_size" if what != "h_0" or not self.proj_size else "proj_size"
            raise ShapeError(
                f"expected {what} of shape {expected} (num_layers * num_directions{batch}, "
                f"{size}), got shape {describe(value)}")
        _check_float(name, what, value)
        return value.astype(dtype)

    # --- the call ---

    def _forward(self, input: Any, hx: Any, key: Array | None) -> tuple[Array, Array, Array | None]:
        name = type(self).__name__
        x, unbatched = self._check_input(input)
        if unbatched:
            x = x[:, None]
        elif self.batch_first:
            x = enp.swapaxes(x, 0, 1)
        dtype = enp.result_type(x, *[w for w in self.flat_weights.values() if w is not None])
        x = x.astype(dtype)
        n = x.shape[1]
        states = self.num_layers * self._directions
        lstm = self.mode == "LSTM"
        h_shape = (states, self._out_size) if unbatched else (states, n, self._out_size)
        c_shape = (states, self.hidden_size) if unbatched else (states, n, self.hidden_size)
        if hx is None:
            h0 = enp.zeros((states, n, self._out_size), dtype)
            c0 = enp.zeros((states, n, self.hidden_size), dtype) if lstm else None
        else:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise InvalidArgumentError(f"{name}: hx must be a pair (h_0, c_0) of arrays, got "
                                               f"{type(hx).__name__}")  # fmt: skip
                h0 = self._check_state("h_0", hx[0], h_shape, unbatched, dtype)
                c0 = self._check_state("c_0", hx[1], c_shape, unbatched, dtype)
            else:
                if isinstance(hx, (tuple, list)):
                    raise InvalidArgumentError(f"{name}: hx must be one array h_0, got a {type(hx).__name__}")
                h0, c0 = self._check_state("h_0", hx, h_shape, unbatched, dtype), None
            if unbatched:
                h0 = h0[:, None]
                c0 = None if c0 is None else c0[:, None]
        use_dropout = self.training and self.dropout > 0 and self.num_layers > 1
        if use_dropout:
            _check_key(name, key, f"dropout={self.dropout} between layers in training mode")
            keys = random.split(key, self.num_layers - 1)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(("", "_reverse")[: self._directions]):
                i = layer * self._directions + d
                ys, h, c = _run_direction(self.mode, x, h0[i], None if c0 is None else c0[i],
                                          self._layer_weights(layer, suffix), reverse=d == 1)  # fmt: skip
                outs.append(ys)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if len(outs) == 1 else enp.concatenate(outs, axis=-1)
            if use_dropout and layer < self.num_layers - 1:
                x = dropout(x, self.dropout, key=keys[layer])
        h_n = enp.stack(h_n)
        c_n = enp.stack(c_n) if lstm else None
        if unbatched:
            x, h_n = x[:, 0], h_n[:, 0]
            c_n = None if c_n is None else c_n[:, 0]
        elif self.batch_first:
            x = enp.swapaxes(x, 0, 1)
        return x, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    """An Elman RNN, as ``torch.nn.RNN``: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` per layer.

    Args:
        input_size: the size of each input step's features.
        hidden_size: the size of the hidden state.
        num_layers: stacked recurrent layers (each takes the previous one's outputs).
        nonlinearity: ``'tanh'`` or ``'relu'``.
        bias: whether to add the biases ``b_ih`` and ``b_hh``.
        batch_first: inputs and outputs are (N, L, features) instead of (L, N, features).
        dropout: the probability of dropout on each layer's outputs except the last (training mode only;
            the call then needs ``key=``).
        bidirectional: also run each layer backwards in time and concatenate the two outputs.
        key: the random key for the initial weights (all uniform on ±1/sqrt(hidden_size), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling ``rnn(input, hx=None, *, key=None)`` returns ``(output, h_n)``: output (L, N, D * hidden_size)
    (batch_first: (N, L, ...)), ``h_n`` (D * num_layers, N, hidden_size), with D = 2 if bidirectional else 1;
    an unbatched input (L, input_size) gives unbatched results. ``hx`` is the initial state, shaped as
    ``h_n`` (zeros if not given).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> rnn = nn.RNN(3, 4, num_layers=2, key=ember.random.key(0))
    >>> out, h_n = rnn(enp.ones((5, 2, 3)))
    >>> out.shape, h_n.shape
    ((5, 2, 4), (2, 2, 4))
    >>> [name for name, _ in rnn.named_parameters()][:4]
    ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    nonlinearity: str

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 *, key: Array, dtype: Any = None) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNN: unknown nonlinearity {nonlinearity!r}; select from 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        self._setup("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers, bias,
                    batch_first, dropout, bidirectional, 0, key, dtype)  # fmt: skip

    def __call__(self, input: Array, hx: Array | None = None, *, key: Array | None = None) -> tuple[Array, Array]:
        out, h_n, _ = self._forward(input, hx, key)
        return out, h_n

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity}"


class LSTM(_RNNBase):
    """A long short-term memory layer, as ``torch.nn.LSTM`` (gates input, forget, cell, output in PyTorch's order).

    Args:
        input_size: the size of each input step's features.
        hidden_size: the size of the cell state (and of the hidden state unless ``proj_size``).
        num_layers: stacked recurrent layers.
        bias: whether to add the biases ``b_ih`` and ``b_hh``.
        batch_first: inputs and outputs are (N, L, features) instead of (L, N, features).
        dropout: the probability of dropout on each layer's outputs except the last (training mode only;
            the call then needs ``key=``).
        bidirectional: also run each layer backwards in time and concatenate the two outputs.
        proj_size: if positive, the hidden state is projected to this size by ``weight_hr_l{k}``.
        key: the random key for the initial weights (all uniform on ±1/sqrt(hidden_size), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling ``lstm(input, hx=None, *, key=None)`` returns ``(output, (h_n, c_n))``: output
    (L, N, D * H_out) with H_out = proj_size or hidden_size, ``h_n`` (D * num_layers, N, H_out), ``c_n``
    (D * num_layers, N, hidden_size). ``hx = (h_0, c_0)`` shaped as ``(h_n, c_n)`` (zeros if not given).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> lstm = nn.LSTM(3, 8, bidirectional=True, proj_size=2, batch_first=True, key=ember.random.key(0))
    >>> out, (h_n, c_n) = lstm(enp.ones((4, 5, 3)))
    >>> out.shape, h_n.shape, c_n.shape
    ((4, 5, 4), (2, 4, 2), (2, 4, 8))
    >>> lstm
    LSTM(3, 8, proj_size=2, batch_first=True, bidirectional=True)
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 *, key: Array, dtype: Any = None) -> None:  # fmt: skip
        self._setup("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size,
                    key, dtype)  # fmt: skip

    def __call__(self, input: Array, hx: tuple[Array, Array] | None = None, *,
                 key: Array | None = None) -> tuple[Array, tuple[Array, Array]]:  # fmt: skip
        out, h_n, c_n = self._forward(input, hx, key)
        return out, (h_n, c_n)


class GRU(_RNNBase):
    """A gated recurrent unit layer, as ``torch.nn.GRU`` (gates reset, update, new; ``b_hn`` inside ``r * (...)``).

    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``.

    Args:
        input_size: the size of each input step's features.
        hidden_size: the size of the hidden state.
        num_layers: stacked recurrent layers.
        bias: whether to add the biases ``b_ih`` and ``b_hh``.
        batch_first: inputs and outputs are (N, L, features) instead of (L, N, features).
        dropout: the probability of dropout on each layer's outputs except the last (training mode only;
            the call then needs ``key=``).
        bidirectional: also run each layer backwards in time and concatenate the two outputs.
        key: the random key for the initial weights (all uniform on ±1/sqrt(hidden_size), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling ``gru(input, hx=None, *, key=None)`` returns ``(output, h_n)``, shaped as for ``RNN``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> gru = nn.GRU(3, 4, key=ember.random.key(0))
    >>> out, h_n = gru(enp.ones((6, 3)))  # unbatched: (L, input_size)
    >>> out.shape, h_n.shape, gru.weight_hh_l0.shape
    ((6, 4), (1, 4), (12, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 *, key: Array, dtype: Any = None) -> None:  # fmt: skip
        self._setup("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0, key,
                    dtype)  # fmt: skip

    def __call__(self, input: Array, hx: Array | None = None, *, key: Array | None = None) -> tuple[Array, Array]:
        out, h_n, _ = self._forward(input, hx, key)
        return out, h_n


# --- the cells --------------------------------------------------------------------------------------


class _CellBase(Module):
    """What the cells share: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` and the input checks."""

    weight_ih: Array
    weight_hh: Array
    bias_ih: Array | None
    bias_hh: Array | None
    input_size: int
    hidden_size: int
    bias: bool

    def _setup(self, mode: str, input_size: int, hidden_size: int, bias: bool, key: Array, dtype: Any) -> None:
        input_size, hidden_size = _check_sizes(type(self).__name__, input_size, hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bool(bias)
        gates = _GATES[mode] * hidden_size
        shapes = [("weight_ih", (gates, input_size)), ("weight_hh", (gates, hidden_size))]
        if bias:
            shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
        params = _init_params(shapes, hidden_size, key, dtype)
        self.weight_ih, self.weight_hh = params["weight_ih"], params["weight_hh"]
        self.bias_ih, self.bias_hh = params.get("bias_ih"), params.get("bias_hh")

    def _check_input(self, input: Any) -> tuple[Array, bool]:
        name = type(self).__name__
        x = input if isinstance(input, Array) else enp.asarray(input)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ShapeError(f"expected an input of shape (N, input_size) or (input_size,) unbatched, with "
                             f"input_size={self.input_size}; got shape {describe(x)}")
        _check_float(name, "input", x)
        return x, x.ndim == 1

    def _state(self, what: str, value: Any, x: Array, dtype: Any) -> Array:
        expected = (*x.shape[:-1], self.hidden_size)
        if value is None:
            return enp.zeros(expected, dtype)
        value = value if isinstance(value, Array) else enp.asarray(value)
        if tuple(value.shape) != expected:
            raise ShapeError(f"expected {what} of shape {expected} (the input's batch, hidden_size="
                             f"{self.hidden_size}), got shape {describe(value)}")  # fmt: skip
        _check_float(type(self).__name__, what, value)
        return value.astype(dtype)

    def _cell(self, mode: str, input: Any, h: Any, c: Any) -> tuple[Array, Array | None]:
        x, _ = self._check_input(input)
        params = [p for p in (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh) if p is not None]
        dtype = enp.result_type(x, *params)
        x = x.astype(dtype)
        h = self._state("hx" if mode != "LSTM" else "h_0", h, x, dtype)
        c = self._state("c_0", c, x, dtype) if mode == "LSTM" else None
        x_proj = _input_projection(mode, x, self.weight_ih, self.bias_ih, self.bias_hh)
        return _step(mode, x_proj, h, c, self.weight_hh.T, self.bias_hh if mode == "GRU" else None, None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s


class RNNCell(_CellBase):
    """One step of an Elman RNN, as ``torch.nn.RNNCell``: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        input_size: the size of the input's features.
        hidden_size: the size of the hidden state.
        bias: whether to add the biases ``bias_ih`` and ``bias_hh``.
        nonlinearity: ``'tanh'`` or ``'relu'``.
        key: the random key for the initial weights (uniform on ±1/sqrt(hidden_size), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling ``cell(input, hx=None, *, key=None)`` with input (N, input_size) or (input_size,) returns h' of shape
    (N, hidden_size) or (hidden_size,); ``hx`` defaults to zeros.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> cell = nn.RNNCell(3, 2, nonlinearity="relu", key=ember.random.key(0))
    >>> cell(enp.ones((4, 3))).shape
    (4, 2)
    >>> cell
    RNNCell(3, 2, nonlinearity=relu)
    """

    nonlinearity: str

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", *,
                 key: Array, dtype: Any = None) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise InvalidArgumentError(f"RNNCell: unknown nonlinearity {nonlinearity!r}; select from 'tanh' or 'relu'")
        self.nonlinearity = nonlinearity
        self._setup("RNN_TANH", input_size, hidden_size, bias, key, dtype)

    def __call__(self, input: Array, hx: Array | None = None, *, key: Array | None = None) -> Array:
        return self._cell("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input, hx, None)[0]


class LSTMCell(_CellBase):
    """One step of an LSTM, as ``torch.nn.LSTMCell`` (gates input, forget, cell, output).

    Args:
        input_size: the size of the input's features.
        hidden_size: the size of the hidden and cell states.
        bias: whether to add the biases ``bias_ih`` and ``bias_hh``.
        key: the random key for the initial weights (uniform on ±1/sqrt(hidden_size), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling ``cell(input, hx=None, *, key=None)`` with ``hx = (h, c)`` (zeros if not given) returns ``(h', c')``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> cell = nn.LSTMCell(3, 2, key=ember.random.key(0))
    >>> h, c = cell(enp.ones((4, 3)))
    >>> h.shape, c.shape, cell.weight_ih.shape
    ((4, 2), (4, 2), (8, 3))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, key: Array, dtype: Any = None) -> None:
        self._setup("LSTM", input_size, hidden_size, bias, key, dtype)

    def __call__(self, input: Array, hx: tuple[Array, Array] | None = None, *,
                 key: Array | None = None) -> tuple[Array, Array]:  # fmt: skip
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise InvalidArgumentError(f"LSTMCell: hx must be a pair (h, c) of arrays, got {type(hx).__name__}")
        h, c = (None, None) if hx is None else hx
        return self._cell("LSTM", input, h, c)


class GRUCell(_CellBase):
    """One step of a GRU, as ``torch.nn.GRUCell`` (gates reset, update, new; ``b_hn`` inside ``r * (...)``).

    Args:
        input_size: the size of the input's features.
        hidden_size: the size of the hidden state.
        bias: whether to add the biases ``bias_ih`` and ``bias_hh``.
        key: the random key for the initial weights (uniform on ±1/sqrt(hidden_size), as PyTorch).
        dtype: the parameters' dtype (default float32).

    Calling ``cell(input, hx=None, *, key=None)`` returns h', shaped as ``hx`` (zeros if not given).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> cell = nn.GRUCell(3, 2, bias=False, key=ember.random.key(0))
    >>> cell(enp.ones(3), enp.zeros(2)).shape
    (2,)
    >>> [name for name, _ in cell.named_parameters()]
    ['weight_ih', 'weight_hh']
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, key: Array, dtype: Any = None) -> None:
        self._setup("GRU", input_size, hidden_size, bias, key, dtype)

    def __call__(self, input: Array, hx: Array | None = None, *, key: Array | None = None) -> Array:
        return self._cell("GRU", input, hx, None)[0]
