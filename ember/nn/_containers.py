"""Containers: ``Sequential``, ``ModuleList`` and ``ModuleDict``, named as PyTorch names their children."""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ember.core.array import Array
from ember.errors import InvalidArgumentError
from ember.nn._module import Module
from ember.nn._state import State, is_stateful

__all__ = ["ModuleDict", "ModuleList", "Sequential"]

_TAKES_KEY: dict[type, bool] = {}


def takes_key(layer: Any) -> bool:
    """Whether ``layer(x, key=...)`` is accepted (every ember layer; user modules by their signature)."""
    cls = type(layer)
    found = _TAKES_KEY.get(cls)
    if found is None:
        try:
            params = inspect.signature(layer).parameters
        except (TypeError, ValueError):
            params = {}
        # Only a keyword-only `key` is a random key: MultiheadAttention's positional `key` is the keys tensor.
        key = params.get("key")
        found = _TAKES_KEY[cls] = (key is not None and key.kind is key.KEYWORD_ONLY) or any(
            p.kind is p.VAR_KEYWORD for p in params.values())
    return found


def split_key(key: Array | None, n: int, fn: str) -> list[Array | None]:
    """``n`` independent keys from ``key`` (``None``s when ``key`` is None)."""
    if key is None:
        return [None] * n
    from ember.random import _keys, split

    _keys.check_key(fn, key)
    return list(split(key, n)) if n else []


def stateful_of(module: Module) -> bool:
    """``is_stateful(module)``, cached on the instance (modules are immutable)."""
    d = module.__dict__
    found = d.get("_ember_cache_stateful")
    if found is None:
        found = d["_ember_cache_stateful"] = is_stateful(module)
    return found


class _Layers:
    """What Sequential and ModuleList share: a ``layers`` tuple to measure and iterate, and no repr of their own."""

    layers: tuple

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.layers)

    def extra_repr(self) -> str:
        return ""


class Sequential(_Layers, Module):
    """Layers applied in order, as ``torch.nn.Sequential``; children are named ``0``, ``1``, ...

    ``model(x)`` returns the output; a model with BatchNorm takes and returns its state,
    ``model(x, state) -> (out, state)``. ``key=`` is split among the layers that use one (Dropout).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> k1, k2 = ember.random.split(ember.random.key(0))
    >>> model = nn.Sequential(nn.Linear(4, 8, key=k1), nn.ReLU(), nn.Linear(8, 2, key=k2))
    >>> model(enp.ones((5, 4))).shape
    (5, 2)
    >>> model
    Sequential(
      (0): Linear(in_features=4, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=2, bias=True)
    )
    """

    layers: tuple
    names: tuple | None  # PyTorch's Sequential(OrderedDict(...)) names its children; None: 0, 1, ...

    def __init__(self, *layers: Any) -> None:
        self.names = None
        if len(layers) == 1 and isinstance(layers[0], Mapping):
            self.names = tuple(str(name) for name in layers[0])
            layers = tuple(layers[0].values())
        self.layers = tuple(layers)

    def named_children_items(self) -> Iterator[tuple[str, Any]]:
        for i, layer in enumerate(self.layers):
            yield (str(i) if self.names is None else self.names[i]), layer

    def __call__(self, x: Any, state: State | None = None, *, key: Array | None = None) -> Any:
        stateful = stateful_of(self)
        if stateful and state is None:
            raise InvalidArgumentError(
                "Sequential: this model has running statistics (BatchNorm); call it as out, state = model(x, state) "
                "with the state that nn.make_with_state(...) or nn.from_torch returned (in eval mode too: the "
                "running statistics are read from it)")
        if state is not None and not stateful:
            raise InvalidArgumentError(
                "Sequential: this model has no state (no BatchNorm with running statistics), but was called with "
                "an nn.State; call it as model(x)")
        for layer, k in zip(self.layers, split_key(key, len(self.layers), "Sequential")):
            kwargs = {"key": k} if k is not None and takes_key(layer) else {}
            if stateful and stateful_of(layer):
                x, state = layer(x, state, **kwargs)
            else:
                x = layer(x, **kwargs)
        return x if state is None else (x, state)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            if self.names is not None:
                return Sequential(dict(zip(self.names[index], self.layers[index])))
            return Sequential(*self.layers[index])
        return self.layers[index]



class ModuleList(_Layers, Module):
    """A list of modules, as ``torch.nn.ModuleList`` (indexable, iterable; children named ``0``, ``1``, ...).

    >>> import ember
    >>> from ember import nn
    >>> blocks = nn.ModuleList([nn.Linear(2, 2, key=k) for k in ember.random.split(ember.random.key(0), 3)])
    >>> len(blocks), [name for name, _ in blocks.named_parameters()][:2]
    (3, ['0.weight', '0.bias'])
    """

    layers: tuple

    def __init__(self, modules: Iterable[Any] = ()) -> None:
        self.layers = tuple(modules)

    def named_children_items(self) -> Iterator[tuple[str, Any]]:
        for i, module in enumerate(self.layers):
            yield str(i), module

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ModuleList(self.layers[index])
        return self.layers[index]


    def __repr__(self) -> str:
        # As torch.nn.ModuleList prints: a run of equal children is one line, "(0-5): 6 x Block(...)".
        if not self.layers:
            return "ModuleList()"
        runs: list[list] = []  # [first index, last index, repr]
        for i, text in enumerate(repr(m) for m in self.layers):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [f"({a}): {text}" if a == b else f"({a}-{b}): {b - a + 1} x {text}" for a, b, text in runs]
        return "ModuleList(\n  " + "\n  ".join(line.replace("\n", "\n  ") for line in lines) + "\n)"


class ModuleDict(Module):
    """Modules by name, as ``torch.nn.ModuleDict`` (children named by their keys, in insertion order).

    >>> import ember
    >>> from ember import nn
    >>> heads = nn.ModuleDict({'cls': nn.Linear(4, 3, key=ember.random.key(0)), 'act': nn.ReLU()})
    >>> list(heads), heads['cls'].out_features
    (['cls', 'act'], 3)
    """

    layers: dict

    def __init__(self, modules: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        # An OrderedDict: a plain dict's pytree sorts its keys, so tree_map / jit / eval() would reorder the children
        self.layers = OrderedDict(modules)

    def named_children_items(self) -> Iterator[tuple[str, Any]]:
        yield from self.layers.items()

    def __getitem__(self, name: str) -> Any:
        return self.layers[name]

    def __contains__(self, name: object) -> bool:
        return name in self.layers

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[str]:
        return iter(self.layers)

    def keys(self) -> list[str]:
        """The names, in insertion order (as ``torch.nn.ModuleDict.keys``)."""
        return list(self.layers)

    def values(self) -> list[Any]:
        """The modules, in insertion order."""
        return list(self.layers.values())

    def items(self) -> list[tuple[str, Any]]:
        """The (name, module) pairs, in insertion order."""
        return list(self.layers.items())

    def extra_repr(self) -> str:
        return ""
