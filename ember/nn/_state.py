"""`nn.State`: the running statistics of a model's stateful layers, passed in and returned explicitly.

A stateful layer (BatchNorm with ``track_running_stats=True``) holds no statistics itself: it holds a
static ``state_key``, its dotted name in the model (``"features.1"``), and reads and writes its entry
of the ``State`` it is called with. ``nn.make_with_state(Model)(...)`` builds the model, gives every
stateful layer its key and returns ``(model, state)``. Keys are names, not object identities, so two
models built the same way have the same static structure: they stack (``nn.stack_modules``), and
``jit`` reuses one trace for both.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ember.core.pytree import DictKey, register_node
from ember.errors import InvalidArgumentError
from ember.nn._module import Module, map_modules, rebuild

__all__ = ["State", "init_state", "is_stateful", "make_with_state"]


class State:
    """Immutable mapping from a stateful layer's dotted name to its state (a pytree of arrays).

    A pytree: it goes through ``jit``, ``vmap`` and ``grad`` like any other argument, and saves with
    ``ember.save``.

    >>> import ember
    >>> from ember import nn
    >>> model, state = nn.make_with_state(nn.BatchNorm1d)(3)
    >>> state["running_mean"].tolist()
    [0.0, 0.0, 0.0]
    >>> state
    State(running_mean: f32[3], running_var: f32[3], num_batches_tracked: i32[])
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_values", {k: _entry(v) for k, v in (values or {}).items()})

    def __setattr__(self, name: str, value: Any) -> None:
        raise InvalidArgumentError("nn.State is immutable: stateful layers return a new State")

    def get(self, layer: Module) -> Any:
        """The state of ``layer`` (its ``state_key`` entry).

        >>> from ember import nn
        >>> model, state = nn.make_with_state(nn.BatchNorm1d)(2)
        >>> list(state.get(model))
        ['running_mean', 'running_var', 'num_batches_tracked']
        """
        key = _key_of(layer)
        if key not in self._values:
            raise InvalidArgumentError(
                f"{type(layer).__name__} (state key {key!r}) has no entry in this nn.State (it has "
                f"{sorted(self._values)}); pass the state that nn.make_with_state returned with this model")
        return self._values[key]

    def set(self, layer: Module, value: Any) -> State:
        """A new State with ``layer``'s entry replaced by ``value`` (this one is unchanged).

        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> model, state = nn.make_with_state(nn.BatchNorm1d)(2)
        >>> new = state.set(model, {**state.get(model), "running_mean": enp.ones(2)})
        >>> new["running_mean"].tolist(), state["running_mean"].tolist()
        ([1.0, 1.0], [0.0, 0.0])
        """
        key = _key_of(layer)
        old = self._values.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping) and set(old) == set(value):
            # The entry's buffers in their first order, whatever order the layer wrote them in: the order is
            # part of the pytree structure, and a state that changed it would not match its own trace (scan carry)
            value = OrderedDict((name, value[name]) for name in old)
        values = dict(self._values)
        values[key] = value
        return State(values)

    def __getitem__(self, name: str) -> Any:
        """A buffer by its PyTorch name (``"bn.running_mean"``), or a layer's whole entry by its key."""
        if name in self._values:
            return self._values[name]
        layer, _, buffer = name.rpartition(".")
        if layer in self._values and isinstance(self._values[layer], Mapping) and buffer in self._values[layer]:
            return self._values[layer][buffer]
        raise KeyError(f"nn.State has no entry {name!r}; its buffers are {[n for n, _ in self.named_buffers()]}")

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        """Every buffer with its PyTorch name (``"bn.running_mean"``), as ``state_dict`` lists them.

        >>> from collections import OrderedDict
        >>> from ember import nn
        >>> _, state = nn.make_with_state(nn.Sequential)(OrderedDict(bn=nn.BatchNorm1d(2)))
        >>> [name for name, _ in state.named_buffers()]
        ['bn.running_mean', 'bn.running_var', 'bn.num_batches_tracked']
        """
        for key, value in self._values.items():
            if isinstance(value, Mapping):
                for name, buffer in value.items():
                    yield (f"{key}.{name}" if key else name), buffer
            else:
                yield key, value

    def keys(self) -> list[str]:
        """The stateful layers' keys (their dotted names in the model), in model order.

        >>> from ember import nn
        >>> nn.make_with_state(nn.Sequential)(nn.BatchNorm1d(2), nn.ReLU(), nn.BatchNorm1d(2))[1].keys()
        ['0', '2']
        """
        return list(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        # The same buffers (by identity, as arrays have no boolean ==) in the same structure; comparing the
        # per-layer dicts by identity made a state unequal to its own flatten/unflatten.
        from ember.core.pytree import tree_flatten

        if not isinstance(other, State):
            return False
        (mine, my_def), (theirs, their_def) = tree_flatten(self), tree_flatten(other)
        return my_def == their_def and all(a is b for a, b in zip(mine, theirs))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        from ember.nn._module import _short_value

        items = ", ".join(f"{name}: {_short_value(b).replace('float', 'f').replace('int', 'i')}"
                          for name, b in self.named_buffers())  # fmt: skip
        return f"State({items})"


def _entry(value: Any) -> Any:
    """A layer's entry as stored: a dict becomes an OrderedDict (a copy, so the State stays immutable).

    A plain dict's pytree sorts its keys, so after ``jit`` or ``tree_map`` BatchNorm's entry would list
    ``num_batches_tracked`` first; an OrderedDict keeps the order the layer gave (PyTorch's buffer order),
    eager and traced alike.
    """
    return OrderedDict(value) if isinstance(value, dict) else value


def _flatten(state: State):
    keys = tuple(state._values)
    return [state._values[k] for k in keys], keys


def _flatten_with_keys(state: State):
    keys = tuple(state._values)
    return [(DictKey(k), state._values[k]) for k in keys], keys


register_node(State, _flatten, lambda keys, children: State(dict(zip(keys, children))), _flatten_with_keys)


def _key_of(layer: Module) -> str:
    key = getattr(layer, "state_key", None)
    if key is None:
        raise InvalidArgumentError(
            f"{type(layer).__name__} has running statistics but no place in an nn.State: build the model with "
            f"nn.make_with_state(Model)(...), which returns (model, state), and call model(x, state)")
    return key


def _has_own_state(module: Module) -> bool:
    has_state = getattr(module, "has_state", None)
    return bool(has_state()) if callable(has_state) else False


def is_stateful(module: Module) -> bool:
    """Whether ``module`` or any of its submodules keeps state (BatchNorm's running statistics).

    >>> from ember import nn
    >>> nn.is_stateful(nn.BatchNorm1d(3)), nn.is_stateful(nn.BatchNorm1d(3, track_running_stats=False))
    (True, False)
    """
    return any(_has_own_state(m) for _, m in module.named_modules())


def init_state(model: Module) -> tuple[Module, State]:
    """Give every stateful layer of ``model`` its key (its dotted name) and collect their initial states.

    >>> from ember import nn
    >>> model, state = nn.init_state(nn.Sequential(nn.BatchNorm1d(2), nn.ReLU()))
    >>> model.layers[0].state_key, state.keys()
    ('0', ['0'])
    """
    names: dict[int, str] = {}
    for name, m in model.named_modules():
        if _has_own_state(m):
            # A layer used twice has one entry, under its first name (as torch's named_buffers lists it once)
            names.setdefault(id(m), name)
    values: dict[str, Any] = {}

    def assign(m: Module) -> Module:
        name = names.get(id(m))
        if name is None:
            return m
        values[name] = m.initial_state()
        return rebuild(m, state_key=name)

    model = map_modules(assign, model)
    return model, State(values)


def make_with_state(cls: Callable[..., Module]) -> Callable[..., tuple[Module, State]]:
    """``make_with_state(Model)(*args, **kwargs)`` builds the model and returns ``(model, state)``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> model, state = nn.make_with_state(nn.BatchNorm1d)(2)
    >>> out, state = model(enp.array([[0.0, 1.0], [2.0, 3.0]]), state)
    >>> out.round(4).tolist(), state["running_mean"].tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [0.10000000149011612, 0.20000000298023224])
    """

    def make(*args: Any, **kwargs: Any) -> tuple[Module, State]:
        return init_state(cls(*args, **kwargs))

    return make
