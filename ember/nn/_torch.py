"""PyTorch interop: ``nn.from_torch`` converts a ``torch.nn`` module tree, ``nn.to_torch_state_dict`` goes back.

ember's layers take PyTorch's constructor arguments and name their parameters as PyTorch does, so one
generic rule converts almost every layer: read the constructor's arguments from the torch module's
attributes (``Conv2d.kernel_size``, ``Linear.bias is not None``, ...), build the ember layer of the same
name with them, and load the weights by name. The table ``_CONVERTERS`` lists the supported classes; a
class whose arguments are not all stored under their own names (``MultiheadAttention``'s ``bias``,
the Transformer layers') says where they are. PyTorch is imported only when these functions run.

Construction draws no random numbers: a layer with random initial weights is built abstractly
(``ember.eval_shape``) and its arrays are then the torch module's, so converting a ResNet-18 costs
about the copy of its weights.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.errors import InvalidArgumentError
from ember.nn._module import Module, rebuild
from ember.nn._state import State, init_state, is_stateful

__all__ = ["from_torch", "to_torch_state_dict"]

# Constructor arguments that change nothing in a functional forward pass (in-place updates, sparse
# gradients, fast paths): dropped whatever their value when the ember layer does not take them.
_IGNORED = frozenset({"inplace", "sparse", "enable_nested_tensor", "mask_check", "device", "dtype"})

# Constructor arguments torch does not store: deprecated aliases of what it does store (reduction, min_val).
_NOT_STORED = frozenset({"size_average", "reduce", "min_value", "max_value"})

# RNN, LSTM and GRU take ``*args, **kwargs``; their arguments are RNNBase's.
_RNN_ARGS = ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional")


def _unsupported(path: str, module: Any, why: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"nn.from_torch: cannot convert {_where(path, module)}: {why}. Rebuild it as an ember.nn.Module subclass "
        f"(a dataclass whose __call__ does what its forward does) and convert its supported children with "
        f"nn.from_torch (each torch.nn layer, Sequential, ModuleList and ModuleDict converts)")


def _where(path: str, module: Any) -> str:
    return f"{path or '<root>'} ({type(module).__name__})"


def _to_ember(tensor: Any) -> Any:
    """A torch tensor as an ember array (a copy: the torch module may change in place later)."""
    import ember.numpy as enp

    t = tensor.detach().cpu()
    if str(t.dtype) == "torch.bfloat16":
        import ml_dtypes

        return enp.asarray(t.float().numpy().astype(ml_dtypes.bfloat16))
    return enp.array(t.numpy())


# --- building one layer -------------------------------------------------------------------------------


class _Context:
    """What the conversion of one tree shares: the torch package (imported once), and the conversions made so
    far by torch module identity, so a module used twice (``Sequential(layer, layer)``) is one ember module."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.converted: dict[int, tuple[Any, Module]] = {}


def _arg_value(value: Any, default: Any, path: str, name: str, ctx: _Context) -> Any:
    """A torch attribute as the value of the constructor argument it was made from."""
    torch = ctx.torch
    if isinstance(value, torch.Tensor):
        if isinstance(default, bool):  # bias=True is stored as the bias Parameter itself
            return True
        return _to_ember(value)  # a loss's weight= / pos_weight= (a buffer)
    if value is None and isinstance(default, bool):
        return False
    if isinstance(value, torch.nn.Module):
        return _convert(value, f"{path}.{name}" if path else name, ctx)
    if isinstance(value, (list, torch.Size)):
        return tuple(value)
    return value


def _ember_class(module: Any, path: str) -> type:
    from ember import nn

    cls = getattr(nn, type(module).__name__, None)
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise _unsupported(path, module, f"ember.nn has no {type(module).__name__} layer yet")
    return cls


def _layer(args: tuple[str, ...] | None = None, **overrides: Callable[[Any], Any]) -> Callable[..., Module]:
    """The generic converter: the ember class of the same name, called with the torch module's
    constructor arguments (read from its attributes, or computed by ``overrides[name](module)``),
    then given the torch module's parameters by name."""

    def convert(module: Any, path: str, ctx: _Context) -> Module:
        cls = _ember_class(module, path)
        torch_params = _init_params(type(module), args)
        ours, takes_any, _ = _ember_params(cls)
        kwargs: dict[str, Any] = {}
        for name, default in torch_params.items():
            if name in overrides:
                value = _arg_value(overrides[name](module), default, path, name, ctx)
            elif hasattr(module, name):
                value = _arg_value(getattr(module, name), default, path, name, ctx)
            elif name in _NOT_STORED:
                continue  # its effect is in what torch stores (reduction=, min_val=)
            else:
                raise InvalidArgumentError(
                    f"nn.from_torch: {_where(path, module)} does not store its argument {name!r}; the converter "
                    f"table needs an entry saying where it is (a bug in ember.nn._torch)")
            if name in ours or takes_any:
                kwargs[name] = value
            elif name not in _IGNORED and not _same(value, default):
                raise _unsupported(path, module, f"ember.nn.{cls.__name__} does not take {name}={value!r}")
        return _build(cls, kwargs, module, path, ctx)

    return convert


@functools.lru_cache(maxsize=None)
def _ember_params(cls: type) -> tuple[Any, bool, bool]:
    """The ember constructor's parameters, whether it takes ``**kwargs``, whether it takes ``key``."""
    ours = inspect.signature(cls.__init__).parameters
    return ours, any(p.kind is p.VAR_KEYWORD for p in ours.values()), "key" in ours


@functools.lru_cache(maxsize=None)
def _init_params(torch_cls: type, args: tuple[str, ...] | None) -> dict[str, Any]:
    """The torch constructor's argument names and defaults (``inspect.Parameter.empty`` when required)."""
    if args is not None:
        base = inspect.signature(_rnn_base(torch_cls).__init__).parameters
        return {n: base[n].default if n in base else inspect.Parameter.empty for n in args}
    params = inspect.signature(torch_cls.__init__).parameters
    return {n: p.default for n, p in params.items()
            if n != "self" and not n.startswith("_") and n not in ("device", "dtype")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}  # fmt: skip


def _rnn_base(torch_cls: type) -> type:
    for base in torch_cls.__mro__:
        if base.__name__ in ("RNNBase", "RNNCellBase"):
            return base
    return torch_cls


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - arrays and odd types: not equal to a plain default
        return False


def _build(cls: type, kwargs: dict[str, Any], module: Any, path: str, ctx: _Context) -> Module:
    """``cls(**kwargs)`` with the torch module's arrays in place of its initial ones, and its training flag."""
    import ember.numpy as enp
    from ember import random
    from ember.core.pytree import tree_leaves, tree_map
    from ember.nn._tree import replace_named
    from ember.transforms import eval_shape

    arrays = {name: t for name, t in module.named_parameters()}
    arrays.update((name, t) for name, t in module.named_buffers() if name not in arrays)
    takes_key = _ember_params(cls)[2]
    layer = None
    if takes_key:
        # Built abstractly (no random numbers drawn), then zero-filled; kept only if every array is the torch one.
        try:
            shapes = eval_shape(lambda key: cls(**kwargs, key=key), random.key(0))  # key abstract too
            candidate = tree_map(lambda s: enp.zeros(s.shape, s.dtype), shapes)
            named = [n for n, _ in candidate.named_parameters()]
            if set(named) <= arrays.keys() and len(named) == len(tree_leaves(candidate)):
                layer = candidate
        except Exception:  # noqa: BLE001 - a layer whose __init__ needs concrete values: build it eagerly
            layer = None
    if layer is None:
        try:
            layer = cls(**kwargs, key=random.key(0)) if takes_key else cls(**kwargs)
        except Exception as error:
            raise _unsupported(path, module, f"ember.nn.{cls.__name__}({_show(kwargs)}) failed: {error}") from error
    names = [n for n, _ in layer.named_parameters()]
    missing = sorted(set(dict(module.named_parameters())) - set(names))
    unknown = sorted(set(names) - arrays.keys())
    if missing or unknown:
        raise InvalidArgumentError(
            f"nn.from_torch: {_where(path, module)}: the parameter names differ (torch has {missing} that ember's "
            f"{cls.__name__} lacks; ember has {unknown} that torch lacks); ember's layers must use PyTorch's names, "
            f"so this is a bug in ember.nn.{cls.__name__}")
    layer = replace_named(layer, {n: _to_ember(arrays[n]) for n in names}, "from_torch")
    return _set_training(layer, module.training)


def _show(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" if not isinstance(v, Module) else f"{k}={type(v).__name__}(...)"
                     for k, v in kwargs.items())  # fmt: skip


def _set_training(layer: Module, training: bool) -> Module:
    if "training" in layer.__dict__ and layer.__dict__["training"] != training:
        return layer.train(training) if layer._ember_dynamic else rebuild(layer, training=training)
    if layer._ember_dynamic and any("training" in m.__dict__ for m in layer.modules()[1:]):
        return layer.train(training)  # a composite (TransformerEncoderLayer): its inner Dropouts follow it
    return layer


# --- containers and composites ------------------------------------------------------------------------


def _sequential(module: Any, path: str, ctx: _Context) -> Module:
    from collections import OrderedDict

    from ember import nn

    children = [(name, _convert(child, _join(path, name), ctx)) for name, child in _children(module)]
    if all(name == str(i) for i, (name, _) in enumerate(children)):
        return nn.Sequential(*(c for _, c in children))
    return nn.Sequential(OrderedDict(children))


def _module_list(module: Any, path: str, ctx: _Context) -> Module:
    from ember import nn

    return nn.ModuleList([_convert(child, _join(path, name), ctx) for name, child in _children(module)])


def _module_dict(module: Any, path: str, ctx: _Context) -> Module:
    from ember import nn

    return nn.ModuleDict({name: _convert(child, _join(path, name), ctx) for name, child in _children(module)})


def _children(module: Any) -> list[tuple[str, Any]]:
    """Every child under every name: ``named_children()`` lists a module used twice only once, which would
    drop the second application of ``Sequential(layer, layer)``."""
    return [(name, child) for name, child in module._modules.items() if child is not None]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _activation(layer: Any) -> Any:
    """A Transformer layer's activation as its constructor takes it: ``"relu"``/``"gelu"``, or a module."""
    import torch

    act = layer.activation
    if act is torch.nn.functional.relu or type(act) is torch.nn.ReLU:
        return "relu"
    if act is torch.nn.functional.gelu or type(act) is torch.nn.GELU and act.approximate == "none":
        return "gelu"
    return act  # a torch module (converted by the generic rule) or a function (rejected by the layer)


def _transformer_layer(**extra: Callable[[Any], Any]) -> Callable[..., Module]:
    return _layer(d_model=lambda m: m.self_attn.embed_dim, nhead=lambda m: m.self_attn.num_heads,
                  dim_feedforward=lambda m: m.linear1.out_features, dropout=lambda m: m.dropout.p,
                  activation=_activation, layer_norm_eps=lambda m: m.norm1.eps,
                  batch_first=lambda m: m.self_attn.batch_first, bias=lambda m: m.linear1.bias is not None,
                  **extra)  # fmt: skip


_generic = _layer()

# torch.nn class name -> how to build the ember layer. Everything not listed is unsupported.
_CONVERTERS: dict[str, Callable[..., Module]] = {
    "Sequential": _sequential, "ModuleList": _module_list, "ModuleDict": _module_dict,
    "MultiheadAttention": _layer(bias=lambda m: m.in_proj_bias is not None or m.out_proj.bias is not None,
                                 add_bias_kv=lambda m: m.bias_k is not None),
    "TransformerEncoderLayer": _transformer_layer(), "TransformerDecoderLayer": _transformer_layer(),
    "TransformerEncoder": _layer(encoder_layer=lambda m: m.layers[0], num_layers=lambda m: len(m.layers)),
    "TransformerDecoder": _layer(decoder_layer=lambda m: m.layers[0], num_layers=lambda m: len(m.layers)),
    "PairwiseDistance": _layer(p=lambda m: m.norm),
    # bias= (torch 2.13) matters only with affine=True: without it torch holds no bias either way
    **dict.fromkeys(("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
                     "GroupNorm"), _layer(bias=lambda m: m.bias is not None or m.weight is None)),
    "RNN": _layer(args=(*_RNN_ARGS[:3], "nonlinearity", *_RNN_ARGS[3:])),
    "LSTM": _layer(args=(*_RNN_ARGS, "proj_size")), "GRU": _layer(args=_RNN_ARGS),
    **dict.fromkeys((
        "Linear Bilinear Identity Flatten Unflatten Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d "
        "ConvTranspose3d MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d LPPool1d LPPool2d "
        "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d "
        "AdaptiveMaxPool3d Embedding EmbeddingBag LayerNorm RMSNorm LocalResponseNorm "
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout RNNCell LSTMCell GRUCell "
        "ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d ReflectionPad2d "
        "ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d CircularPad1d CircularPad2d "
        "CircularPad3d PixelShuffle PixelUnshuffle Upsample UpsamplingNearest2d UpsamplingBilinear2d ChannelShuffle "
        "CosineSimilarity "
        # activations
        "ReLU ReLU6 LeakyReLU PReLU RReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Hardtanh Hardsigmoid Hardswish "
        "Hardshrink Softshrink Tanhshrink Softplus Softsign LogSigmoid Threshold GLU Softmax Softmin LogSoftmax "
        "Softmax2d "
        # losses
        "L1Loss MSELoss CrossEntropyLoss NLLLoss BCELoss BCEWithLogitsLoss KLDivLoss HuberLoss SmoothL1Loss "
        "SoftMarginLoss MultiLabelSoftMarginLoss MultiLabelMarginLoss MultiMarginLoss HingeEmbeddingLoss "
        "CosineEmbeddingLoss MarginRankingLoss TripletMarginLoss PoissonNLLLoss GaussianNLLLoss CTCLoss"
    ).split(), _generic),
}  # fmt: skip


def _converter_of(module: Any, path: str, torch: Any) -> Callable[..., Module]:
    cls = type(module)
    name = cls.__name__
    if getattr(torch.nn, name, None) is cls and name in _CONVERTERS:
        return _CONVERTERS[name]
    # A subclass of a container that keeps its forward (torchvision's Conv2dNormActivation is a Sequential).
    for base in ("Sequential", "ModuleList", "ModuleDict"):
        torch_base = getattr(torch.nn, base)
        if isinstance(module, torch_base) and cls.forward is torch_base.forward:
            return _CONVERTERS[base]
    if getattr(torch.nn, name, None) is cls:
        why = f"ember.nn has no converter for torch.nn.{name}"
    else:
        why = f"{cls.__module__}.{cls.__qualname__} is not a torch.nn layer (a module with its own forward)"
    raise _unsupported(path, module, why)


def _convert(module: Any, path: str, ctx: _Context) -> Module:
    done = ctx.converted.get(id(module))
    if done is None:  # the torch module is kept with its conversion, so its id is not reused meanwhile
        done = ctx.converted[id(module)] = (module, _converter_of(module, path, ctx.torch)(module, path, ctx))
    return done[1]


# --- public ---------------------------------------------------------------------------------------------


def from_torch(torch_module: Any) -> Module | tuple[Module, State]:
    """The ember module equal to a ``torch.nn`` module tree, with its weights, buffers and training flags.

    Every ``torch.nn`` layer that ember.nn has converts (Linear, the convolutions, pools, normalisations,
    Embedding, attention, Transformer and recurrent layers, Dropout, activation and loss modules), inside
    ``Sequential``, ``ModuleList`` and ``ModuleDict``. A custom ``torch.nn.Module`` with its own ``forward``
    does not: write it as an ``ember.nn.Module`` and convert its children.

    Args:
        torch_module: a ``torch.nn.Module`` (PyTorch is imported only here).

    Returns:
        The ember module; for a tree with buffers (BatchNorm's running statistics), ``(module, state)``
        with the buffers in the ``nn.State``, as ``nn.make_with_state`` returns.

    >>> import torch
    >>> from ember import nn
    >>> model = nn.from_torch(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()))
    >>> model
    Sequential(
      (0): Linear(in_features=3, out_features=4, bias=True)
      (1): ReLU()
    )
    >>> _, state = nn.from_torch(torch.nn.BatchNorm1d(2))
    >>> state
    State(running_mean: f32[2], running_var: f32[2], num_batches_tracked: i32[])
    """
    try:
        import torch
    except ImportError as error:
        raise InvalidArgumentError("nn.from_torch needs PyTorch: pip install torch") from error
    if not isinstance(torch_module, torch.nn.Module):
        raise InvalidArgumentError(f"nn.from_torch: expected a torch.nn.Module, got {type(torch_module).__name__}")
    model = _convert(torch_module, "", _Context(torch))
    buffers = dict(torch_module.named_buffers())
    held = {name for name, _ in model.named_parameters()}
    if not is_stateful(model):
        left = sorted(set(buffers) - held)
        if left:
            raise InvalidArgumentError(f"nn.from_torch: the torch buffers {left} have no place in the ember model "
                                       f"(it keeps no state); they would be lost")
        return model
    model, state = init_state(model)
    return model, _filled_state(state, buffers, held)


def _filled_state(state: State, buffers: dict[str, Any], held: set[str]) -> State:
    """``state`` with each buffer replaced by the torch buffer of the same name (in the state's dtypes)."""
    from collections.abc import Mapping

    names = [name for name, _ in state.named_buffers()]
    missing = [name for name in names if name not in buffers]
    left = sorted(set(buffers) - set(names) - held)
    if missing or left:
        raise InvalidArgumentError(
            f"nn.from_torch: the running statistics differ: ember's state has {missing} that torch lacks, torch has "
            f"{left} that ember's state lacks")

    def filled(name: str, value: Any) -> Any:
        # torch's dtype, as for the parameters (float32 statistics stay float32 under x64); only an integer
        # counter takes the state's integer type (int64 in torch, int32 while x64 is off)
        new = _to_ember(buffers[name])
        return new.astype(value.dtype) if new.dtype.kind in "iu" else new

    values: dict[str, Any] = {}
    for key in state.keys():
        entry = state[key]
        if isinstance(entry, Mapping):
            values[key] = {b: filled(_join(key, b), v) for b, v in entry.items()}
        else:
            values[key] = filled(key, entry)
    return State(values)


def to_torch_state_dict(model: Module, state: State | None = None) -> dict[str, Any]:
    """The ``state_dict`` of the equal torch module: ``torch_module.load_state_dict(...)`` accepts it.

    Parameters are named as ``model.named_parameters()`` names them (PyTorch's names); the buffers
    (BatchNorm's running statistics) come from ``state``, which a stateful model requires.

    Args:
        model: an ember module.
        state: its ``nn.State``, for a model with running statistics.

    Returns:
        A dict of dotted name to ``torch.Tensor`` (copies).

    >>> import torch, ember
    >>> from ember import nn
    >>> layer = nn.Linear(3, 2, key=ember.random.key(0))
    >>> torch_layer = torch.nn.Linear(3, 2)
    >>> torch_layer.load_state_dict(nn.to_torch_state_dict(layer))
    <All keys matched successfully>
    """
    try:
        import torch
    except ImportError as error:
        raise InvalidArgumentError("nn.to_torch_state_dict needs PyTorch: pip install torch") from error
    if state is None and is_stateful(model):
        raise InvalidArgumentError(
            f"nn.to_torch_state_dict: this {type(model).__name__} has running statistics (BatchNorm); pass its state: "
            f"nn.to_torch_state_dict(model, state)")
    named = [(name, value, 0) for name, value in model.named_parameters()]
    if state is not None:
        named += [(name, value, 1) for name, value in state.named_buffers()]
    # torch's order: module by module (as named_modules), each module's parameters before its buffers
    order = {name: i for i, (name, _) in enumerate(model.named_modules())}

    def owner(name: str) -> int:
        prefix = name
        while prefix:
            prefix = prefix.rpartition(".")[0]
            if prefix in order:
                return order[prefix]
        return 0

    out: dict[str, Any] = {}
    for name, value, _ in sorted(named, key=lambda item: (owner(item[0]), item[2])):
        array = np.asarray(value)
        if array.dtype.name == "bfloat16":
            out[name] = torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
        else:
            out[name] = torch.from_numpy(np.array(array, copy=True))
    return out
