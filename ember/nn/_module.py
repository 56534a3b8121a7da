"""`nn.Module`: frozen dataclasses that are pytrees, with PyTorch's names for what they hold.

A subclass declares its fields with annotations, like a dataclass. It may write its own ``__init__``
(assigning ``self.weight = ...`` as in PyTorch); once ``__init__`` returns, the instance is frozen.
Which fields are pytree children is decided per instance when it is built: a field holding an array,
a module, or a container of them is a child; anything else (ints, tuples of ints, strings, functions)
is static and lives in the treedef, so transforms never trace it. ``nn.field(static=True)`` makes a
field static whatever it holds. Unflattening keeps the choice, so a tree whose array leaves were
replaced by ``None`` (see ``nn.partition``) has the same static part as the original.

Calling a module is pure. Each subclass's ``__call__`` is wrapped once, at class creation, so that a
shape error raised inside a layer names the layer by its path in the outermost model called
(``model.layers[2] (Conv2d(3, 16, ...))``).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ember.core.array import Array
from ember.core.pytree import GetAttrKey, register_node, tree_leaves, tree_map
from ember.errors import EmberError, InvalidArgumentError, ShapeError

__all__ = ["FrozenModuleError", "Module", "field", "static_field"]


class FrozenModuleError(EmberError, AttributeError):
    """Assignment to a field of a built module, which is immutable (an ``AttributeError``).

    >>> import ember
    >>> from ember import nn
    >>> layer = nn.Linear(2, 1, key=ember.random.key(0))
    >>> try:
    ...     layer.bias = None
    ... except nn.FrozenModuleError as error:
    ...     print(str(error)[:48])
    cannot set Linear.bias: modules are immutable on
    """


def field(*, static: bool = False, **kwargs: Any) -> Any:
    """A module field, as ``dataclasses.field``; ``static=True`` keeps it out of the pytree's leaves.

    >>> from ember import nn
    >>> class Scale(nn.Module):
    ...     factor: float = nn.field(static=True, default=2.0)
    ...     def __call__(self, x):
    ...         return x * self.factor
    >>> Scale()(3.0)
    6.0
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = static
    return dataclasses.field(metadata=metadata, **kwargs)


def static_field(**kwargs: Any) -> Any:
    """``nn.field(static=True, ...)``: a field that is never a pytree leaf (hyperparameters, flags).

    >>> from ember import nn, tree
    >>> class Tag(nn.Module):
    ...     name: str = nn.static_field(default="a")
    >>> tree.leaves(Tag())
    []
    """
    return field(static=True, **kwargs)


# --- which fields are children ----------------------------------------------------------------------


def _holds_data(value: Any) -> bool:
    """Whether a field's value is (or contains) an array or a module: then it is a pytree child."""
    if isinstance(value, (Module, Array, np.ndarray)):
        return True
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)) or callable(value):
        return False
    return any(isinstance(leaf, (Module, Array, np.ndarray))
               for leaf in tree_leaves(value, is_leaf=lambda x: isinstance(x, Module)))  # fmt: skip


class _ModuleMeta(type):
    """Runs the class's ``__init__``, then freezes the instance and records its children."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        self = super().__call__(*args, **kwargs)
        d = self.__dict__
        for f in cls._ember_fields:
            if f.name in d:
                continue
            if f.default is not dataclasses.MISSING:
                d[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                d[f.name] = f.default_factory()
            else:
                raise InvalidArgumentError(
                    f"{cls.__name__}.__init__ did not set the field {f.name!r}; assign self.{f.name} = ... in "
                    f"__init__ or give the field a default")
        d["_ember_dynamic"] = tuple(f.name for f in cls._ember_fields
                                    if not f.metadata.get("static", False) and _holds_data(d[f.name]))  # fmt: skip
        for name in d["_ember_dynamic"]:
            d[name] = _insertion_ordered(d[name])
        return self


def _insertion_ordered(value: Any) -> Any:
    """A plain dict child as an OrderedDict: a dict's pytree sorts its keys, so ``jit``, ``tree_map`` or
    ``eval()`` would reorder its entries (and ``named_parameters``); an OrderedDict keeps insertion order."""
    return OrderedDict(value) if type(value) is dict else value


# The modules being called on this thread, outermost first: a shape error names its layer's path.
_calls = threading.local()


def _wrap_call(call: Callable) -> Callable:
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        stack = _calls.__dict__.setdefault("stack", [])
        stack.append(self)
        try:
            return call(self, *args, **kwargs)
        except ShapeError as error:
            if not hasattr(error, "_ember_modules"):
                error._ember_modules = list(stack)
            if len(stack) == 1:
                raise _with_path(error) from None
            raise
        except TypeError as error:
            from ember.nn._state import State, is_stateful

            if any(isinstance(a, State) for a in args) and not is_stateful(self):
                raise InvalidArgumentError(
                    f"{type(self).__name__} has no state (no BatchNorm with running statistics), but was called "
                    f"with an nn.State; call it as model(x) and keep the state for the model that has it") from error
            raise
        finally:
            stack.pop()

    __call__.__wrapped__ = call
    __call__.__doc__ = call.__doc__
    __call__.__qualname__ = call.__qualname__
    return __call__


def _with_path(error: ShapeError) -> ShapeError:
    """The error again, its message prefixed with the path of the layer that raised it."""
    modules = error._ember_modules
    if len(modules) < 2:
        where = f"{type(modules[0]).__name__}"
    else:
        path = "model"
        for parent, child in zip(modules, modules[1:]):
            path += _child_accessor(parent, child)
        where = f"{path} ({short_repr(modules[-1])})"
    new = type(error)(f"{where}: {error}")
    new._ember_modules = modules
    return new


def _child_accessor(parent: Module, child: Module) -> str:
    """How to reach ``child`` from ``parent`` (``.layers[2]``), found by identity."""

    def search(value: Any, accessor: str) -> str | None:
        if value is child:
            return accessor
        if isinstance(value, (list, tuple)):
            items = enumerate(value)
        elif isinstance(value, dict):
            items = value.items()
        else:
            return None
        for key, item in items:
            found = search(item, f"{accessor}[{key!r}]")
            if found is not None:
                return found
        return None

    for name in parent._ember_dynamic:
        found = search(parent.__dict__[name], f".{name}")
        if found is not None:
            return found
    return f".<{type(child).__name__}>"


def short_repr(module: Module) -> str:
    """``Conv2d(3, 16, ...)``: the layer's name with the start of its ``extra_repr``."""
    extra = module.extra_repr()
    parts = extra.split(", ")
    if len(parts) > 2:
        extra = ", ".join(parts[:2]) + ", ..."
    return f"{type(module).__name__}({extra})"


# --- flatten / unflatten ------------------------------------------------------------------------------


def _register(cls: type) -> None:
    names = tuple(f.name for f in cls._ember_fields)
    static_names: dict[tuple, tuple] = {}

    def statics(dynamic: tuple) -> tuple:
        found = static_names.get(dynamic)
        if found is None:
            found = static_names[dynamic] = tuple(n for n in names if n not in dynamic)
        return found

    def flatten(m):
        d = m.__dict__
        dynamic = d["_ember_dynamic"]
        return [d[n] for n in dynamic], (dynamic, tuple([d[n] for n in statics(dynamic)]))

    def flatten_with_keys(m):
        d = m.__dict__
        dynamic = d["_ember_dynamic"]
        return [(GetAttrKey(n), d[n]) for n in dynamic], (dynamic, tuple([d[n] for n in statics(dynamic)]))

    def unflatten(aux, children):
        dynamic, static_values = aux
        m = object.__new__(cls)
        d = m.__dict__
        d.update(zip(dynamic, children))
        d.update(zip(statics(dynamic), static_values))
        d["_ember_dynamic"] = dynamic
        return m

    register_node(cls, flatten, unflatten, flatten_with_keys)


def rebuild(module: Module, **changes: Any) -> Module:
    """A copy of ``module`` with some fields changed, bypassing ``__init__`` (children recomputed)."""
    cls = type(module)
    m = object.__new__(cls)
    d = m.__dict__
    d.update(module.__dict__)
    d.update({name: _insertion_ordered(value) for name, value in changes.items()})
    d["_ember_dynamic"] = tuple(f.name for f in cls._ember_fields
                                if not f.metadata.get("static", False)
                                and (f.name in module._ember_dynamic or _holds_data(d[f.name])))  # fmt: skip
    for key in [k for k in d if k.startswith("_ember_cache")]:
        del d[key]
    return m


class Module(metaclass=_ModuleMeta):
    """Base class of ember's neural-network modules: an immutable dataclass that is a pytree.

    Subclasses declare fields with annotations; array (and submodule) fields are leaves, everything
    else is static. ``__call__`` is pure: a module never changes; ``nn.tree_at`` makes a changed copy.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> class Affine(nn.Module):
    ...     weight: ember.Array
    ...     bias: ember.Array
    ...     def __call__(self, x):
    ...         return x * self.weight + self.bias
    >>> m = Affine(enp.ones(2), enp.zeros(2))
    >>> m(enp.array([1.0, 2.0])).tolist()
    [1.0, 2.0]
    >>> [name for name, _ in m.named_parameters()]
    ['weight', 'bias']
    """

    _ember_fields: tuple = ()
    _ember_dynamic: tuple = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A hand-written __init__ (here or inherited) is kept: a generated one would replace it silently.
        written = next((c.__dict__["__init__"] for c in cls.__mro__
                        if c not in (Module, object) and "__init__" in c.__dict__), None)  # fmt: skip
        hand_written = written is not None and not getattr(written, "_ember_generated", False)
        dataclasses.dataclass(cls, init=not hand_written, repr=False, eq=False)
        if not hand_written and "__init__" in cls.__dict__:
            cls.__init__._ember_generated = True
        cls._ember_fields = tuple(dataclasses.fields(cls))
        if "__call__" in cls.__dict__:
            cls.__call__ = _wrap_call(cls.__dict__["__call__"])
        _register(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_ember_dynamic" in self.__dict__:
            raise FrozenModuleError(
                f"cannot set {type(self).__name__}.{name}: modules are immutable once built; make a changed copy "
                f"with nn.tree_at(lambda m: m.{name}, module, new_value)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenModuleError(f"cannot delete {type(self).__name__}.{name}: modules are immutable once built")

    # --- names ---------------------------------------------------------------------------------------

    def named_children_items(self) -> Iterator[tuple[str, Any]]:
        """The (PyTorch name, value) pairs of this module's children: its non-static fields by default.

        Containers (``Sequential``, ``ModuleList``, ``ModuleDict``) and layers whose PyTorch parameter names
        differ from their fields (``LSTM``'s ``weight_ih_l0``) override this.

        >>> import ember
        >>> from ember import nn
        >>> [name for name, _ in nn.Linear(2, 1, key=ember.random.key(0)).named_children_items()]
        ['weight', 'bias']
        >>> [name for name, _ in nn.Sequential(nn.ReLU(), nn.Tanh()).named_children_items()]
        ['0', '1']
        """
        for name in self._ember_dynamic:
            yield name, self.__dict__[name]

    def named_parameters(self, prefix: str = "") -> list[tuple[str, Array]]:
        """Every array in the module with its PyTorch-style dotted name (``layers.0.weight``).

        >>> import ember
        >>> from ember import nn
        >>> model = nn.Sequential(nn.Linear(3, 4, key=ember.random.key(0)), nn.ReLU())
        >>> [(name, p.shape) for name, p in model.named_parameters()]
        [('0.weight', (4, 3)), ('0.bias', (4,))]
        """
        out: list[tuple[str, Array]] = []
        _collect(self, prefix, out)
        return out

    def parameters(self) -> list[Array]:
        """Every array in the module, in the order of ``named_parameters()``.

        >>> import ember
        >>> from ember import nn
        >>> sum(p.size for p in nn.Linear(3, 4, key=ember.random.key(0)).parameters())
        16
        """
        return [p for _, p in self.named_parameters()]

    def named_modules(self, prefix: str = "") -> list[tuple[str, Module]]:
        """This module and every submodule with its dotted name (``""`` for this one), as in PyTorch.

        >>> import ember
        >>> from ember import nn
        >>> model = nn.Sequential(nn.Linear(3, 4, key=ember.random.key(0)), nn.ReLU())
        >>> [(name, type(m).__name__) for name, m in model.named_modules()]
        [('', 'Sequential'), ('0', 'Linear'), ('1', 'ReLU')]
        """
        out: list[tuple[str, Module]] = [(prefix, self)]
        for name, value in self.named_children_items():
            for sub_name, sub in _named_submodules(value, _join(prefix, name)):
                out.extend(sub.named_modules(sub_name))
        return out

    def modules(self) -> list[Module]:
        """This module and every submodule, as PyTorch's ``modules()``.

        >>> from ember import nn
        >>> [type(m).__name__ for m in nn.Sequential(nn.ReLU(), nn.Tanh()).modules()]
        ['Sequential', 'ReLU', 'Tanh']
        """
        return [m for _, m in self.named_modules()]

    # --- modes ----------------------------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """A copy with every layer that has a ``training`` flag set to ``mode`` (Dropout, BatchNorm, ...).

        >>> import ember
        >>> from ember import nn
        >>> nn.Sequential(nn.Dropout(0.5)).eval().layers[0].training
        False
        """
        def set_mode(m: Module) -> Module:
            if "training" in m.__dict__ and m.__dict__["training"] != mode:
                return rebuild(m, training=mode)
            return m

        return map_modules(set_mode, self)

    def eval(self) -> Module:
        """``train(False)``: the copy for inference (Dropout off, BatchNorm uses its running statistics).

        >>> import ember
        >>> from ember import nn
        >>> nn.Dropout(0.5).eval()
        Dropout(p=0.5, inplace=False)
        """
        return self.train(False)

    # --- printing -------------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The text inside the parentheses of this layer's repr (as PyTorch's ``extra_repr``).

        By default every field that is not a submodule or a container, as ``name=value`` (arrays as
        ``float32[2, 3]``); layers override it to print what PyTorch prints.

        >>> import ember.numpy as enp
        >>> from ember import nn
        >>> class Scale(nn.Module):
        ...     weight: enp.ndarray
        ...     factor: float = 2.0
        >>> Scale(enp.ones(3)).extra_repr()
        'weight=float32[3], factor=2.0'
        """
        parts = []
        for f in self._ember_fields:
            value = self.__dict__[f.name]
            if isinstance(value, (Module, list, tuple, dict)) and f.name in self._ember_dynamic:
                continue
            parts.append(f"{f.name}={_short_value(value)}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        children = [(name, value) for name, value in self.named_children_items()
                    for name, value in _named_submodules(value, name)]  # fmt: skip
        extra = self.extra_repr()
        if not children:
            return f"{type(self).__name__}({extra})"
        lines = [f"{type(self).__name__}(" + (extra if extra else "")]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


def _short_value(value: Any) -> str:
    if isinstance(value, (Array, np.ndarray)):
        return f"{np.dtype(value.dtype).name}{list(value.shape)}"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def _join(prefix: str, name: Any) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _named_submodules(value: Any, prefix: str) -> Iterator[tuple[str, Module]]:
    """The modules in a child value (a module, or lists/tuples/dicts of them) with their dotted names."""
    if isinstance(value, Module):
        yield prefix, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _named_submodules(item, _join(prefix, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _named_submodules(item, _join(prefix, key))


def _collect(value: Any, prefix: str, out: list) -> None:
    if isinstance(value, Module):
        for name, child in value.named_children_items():
            _collect(child, _join(prefix, name), out)
    elif isinstance(value, (Array, np.ndarray)):
        out.append((prefix, value))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect(item, _join(prefix, i), out)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, _join(prefix, key), out)
    elif value is not None:
        for leaf in tree_leaves(value):
            if isinstance(leaf, (Array, np.ndarray)):
                out.append((prefix, leaf))


def map_modules(fn: Callable[[Module], Module], tree: Any) -> Any:
    """Apply ``fn`` to every module in ``tree``, innermost first, rebuilding the tree around the results."""

    def visit(x: Any) -> Any:
        if not isinstance(x, Module):
            return x
        d = x.__dict__
        changes = {name: map_modules(fn, d[name]) for name in x._ember_dynamic}
        changed = any(not _same_nodes(changes[name], d[name]) for name in changes)
        return fn(rebuild(x, **changes) if changed else x)

    return tree_map(visit, tree, is_leaf=lambda x: isinstance(x, Module))


def _same_nodes(new: Any, old: Any) -> bool:
    """Whether ``new`` holds the very modules and arrays of ``old`` (tree_map rebuilds tuples and dicts even
    when nothing in them changed; rebuilding the module then would drop its caches for nothing)."""
    if new is old:
        return True
    is_module = lambda x: isinstance(x, Module)  # noqa: E731
    new_leaves, old_leaves = tree_leaves(new, is_leaf=is_module), tree_leaves(old, is_leaf=is_module)
    return len(new_leaves) == len(old_leaves) and all(a is b for a, b in zip(new_leaves, old_leaves))
