"""Tree operations on modules: filters, ``partition``/``combine``, ``tree_at``, ``functional_call``,
``stack_modules``. Each is a thin operation on the module's pytree."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import ember.numpy as enp
from ember.core import dtypes
from ember.core.array import Array
from ember.core.pytree import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn._module import Module

__all__ = ["combine", "functional_call", "is_array", "is_inexact_array", "partition", "stack_modules",
           "trainable", "tree_at"]  # fmt: skip

_sentinel = object()


def is_array(x: Any) -> bool:
    """Whether ``x`` is an array (an ``ember.Array``, a tracer, or a NumPy array): a filter.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.is_array(enp.zeros(2)), nn.is_array(2.0)
    (True, False)
    """
    return isinstance(x, (Array, np.ndarray))


def is_inexact_array(x: Any) -> bool:
    """Whether ``x`` is a floating or complex array, the default filter of trainable parameters.

    >>> import ember.numpy as enp
    >>> from ember import nn
    >>> nn.is_inexact_array(enp.zeros(2)), nn.is_inexact_array(enp.arange(2))
    (True, False)
    """
    return isinstance(x, (Array, np.ndarray)) and dtypes.is_inexact(x.dtype)


def _mask(pytree: Any, filter_spec: Any, fn: str) -> tuple[list, Any, list[bool]]:
    leaves, treedef = tree_flatten(pytree)
    if callable(filter_spec) and not isinstance(filter_spec, Module):
        return leaves, treedef, [bool(filter_spec(leaf)) for leaf in leaves]
    mask = tree_leaves(filter_spec)
    if len(mask) != len(leaves) or not all(isinstance(m, (bool, np.bool_)) for m in mask):
        raise InvalidArgumentError(
            f"nn.{fn}: filter_spec must be a function of a leaf (such as nn.is_inexact_array) or a tree of bools "
            f"shaped like the model (such as nn.trainable(model, frozen=...)); got {len(mask)} filter leaves for "
            f"{len(leaves)} model leaves")
    return leaves, treedef, [bool(m) for m in mask]


def partition(pytree: Any, filter_spec: Any = is_inexact_array) -> tuple[Any, Any]:
    """Split a module (any pytree) into the leaves ``filter_spec`` selects and the rest.

    Both parts keep the tree's structure with ``None`` where the other part has the leaf;
    ``combine`` joins them. Differentiate with respect to the first part only:

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> model = nn.Linear(2, 1, key=ember.random.key(0))
    >>> params, static = nn.partition(model, nn.trainable(model, frozen=lambda m: m.bias))
    >>> params.bias is None, static.weight is None
    (True, True)
    >>> loss = lambda p, x: nn.combine(p, static)(x).sum()
    >>> ember.grad(loss)(params, enp.ones((1, 2))).weight.tolist()
    [[1.0, 1.0]]
    """
    leaves, treedef, mask = _mask(pytree, filter_spec, "partition")
    chosen = [leaf if m else None for leaf, m in zip(leaves, mask)]
    rest = [None if m else leaf for leaf, m in zip(leaves, mask)]
    return tree_unflatten(treedef, chosen), tree_unflatten(treedef, rest)


def combine(*pytrees: Any) -> Any:
    """Join trees of one structure, taking at each leaf the first that is not ``None`` (inverse of ``partition``).

    >>> from ember import nn
    >>> nn.combine({'a': 1, 'b': None}, {'a': None, 'b': 2})
    {'a': 1, 'b': 2}
    """
    if not pytrees:
        raise InvalidArgumentError("nn.combine: give at least one tree")
    is_none = lambda x: x is None  # noqa: E731
    first, treedef = tree_flatten(pytrees[0], is_leaf=is_none)
    columns = [first]
    for other in pytrees[1:]:
        leaves, other_def = tree_flatten(other, is_leaf=is_none)
        if other_def != treedef:
            raise InvalidArgumentError(f"nn.combine: the trees differ in structure: {treedef} and {other_def}; "
                                       f"combine the two parts that one nn.partition returned")
        columns.append(leaves)
    joined = [next((x for x in column if x is not None), None) for column in zip(*columns)]
    return tree_unflatten(treedef, joined)


def trainable(model: Any, frozen: Callable[[Any], Any] | None = None,
              filter_spec: Callable[[Any], bool] = is_inexact_array) -> Any:  # fmt: skip
    """A filter tree for ``partition``: True at the parameters to train, False elsewhere.

    ``frozen(model)`` selects the parts to freeze (a submodule, a leaf, or a tuple of them), as
    ``tree_at``'s ``where`` does; their leaves are False. Freezing is PyTorch's ``requires_grad_(False)``:
    ``grad`` of the ``partition``-ed parameters and every optimizer leave frozen leaves alone.

    >>> import ember
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Linear(2, 2, key=ember.random.key(0)), nn.Linear(2, 1, key=ember.random.key(1)))
    >>> spec = nn.trainable(model, frozen=lambda m: m.layers[0])
    >>> [(name, flag) for (name, _), flag in zip(model.named_parameters(), ember.tree.leaves(spec))]
    [('0.weight', False), ('0.bias', False), ('1.weight', True), ('1.bias', True)]
    """
    spec = tree_map(filter_spec, model)
    if frozen is not None:
        spec = tree_at(frozen, spec, replace_fn=lambda part: tree_map(lambda _: False, part))
    return spec


# --- tree_at ----------------------------------------------------------------------------------------


class _Leaf:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _one_level(x: Any) -> tuple[list, Any]:
    return tree_flatten(x, is_leaf=lambda y: y is not x)


def _substitute(original: Any, shadow: Any, targets: dict[int, Any], found: set[int]) -> Any:
    if id(shadow) in targets:
        found.add(id(shadow))
        return targets[id(shadow)](original)
    if isinstance(shadow, _Leaf):
        return original
    children, treedef = _one_level(original)
    if len(children) == 1 and children[0] is original:
        return original
    shadows, _ = _one_level(shadow)
    return tree_unflatten(treedef, [_substitute(c, s, targets, found) for c, s in zip(children, shadows)])


def tree_at(where: Callable[[Any], Any], pytree: Any, replace: Any = _sentinel,
            replace_fn: Callable[[Any], Any] | None = None) -> Any:  # fmt: skip
    """A copy of ``pytree`` with the part(s) ``where`` selects replaced (equinox's ``tree_at``).

    ``where(tree)`` returns a leaf or a subtree (a submodule, a list, ...) or a tuple of them;
    give ``replace`` (the new value, or a tuple of them) or ``replace_fn`` (old -> new).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> model = nn.Sequential(nn.Linear(2, 2, key=ember.random.key(0)), nn.ReLU())
    >>> model = nn.tree_at(lambda m: m.layers[1], model, nn.Tanh())
    >>> model = nn.tree_at(lambda m: m.layers[0].bias, model, enp.ones(2))
    >>> model
    Sequential(
      (0): Linear(in_features=2, out_features=2, bias=True)
      (1): Tanh()
    )
    >>> model.layers[0].bias.tolist()
    [1.0, 1.0]
    """
    if (replace is _sentinel) == (replace_fn is None):
        raise InvalidArgumentError("nn.tree_at: give exactly one of replace= and replace_fn=")
    leaves, treedef = tree_flatten(pytree)
    shadow = tree_unflatten(treedef, [_Leaf(i) for i in range(len(leaves))])
    selected = where(shadow)
    nodes = _located(shadow, selected)
    if nodes is None:
        raise InvalidArgumentError(
            "nn.tree_at: where(tree) must return leaves or subtrees of the tree (arrays, submodules, lists of "
            "them) or a tuple of them; it returned something else (a static field such as an int, or None?)")
    if replace_fn is not None:
        targets = {id(n): replace_fn for n in nodes}
    else:
        values = (replace,) if len(nodes) == 1 and nodes[0] is selected else tuple(replace)
        if len(values) != len(nodes):
            raise InvalidArgumentError(f"nn.tree_at: where selected {len(nodes)} parts but replace has {len(values)}")
        targets = {id(n): (lambda _, v=v: v) for n, v in zip(nodes, values)}
    found: set[int] = set()
    result = _substitute(pytree, shadow, targets, found)
    if len(found) != len(targets):
        raise InvalidArgumentError("nn.tree_at: some parts where(tree) selected are not in the tree")
    return result


def _located(shadow: Any, selected: Any) -> list | None:
    """The selected node(s) as a list, if each is a node of ``shadow``; None otherwise."""
    ids: set[int] = set()

    def walk(x: Any) -> None:
        ids.add(id(x))
        if isinstance(x, _Leaf):
            return
        children, _ = _one_level(x)
        if len(children) == 1 and children[0] is x:
            return
        for c in children:
            walk(c)

    walk(shadow)
    ok = lambda n: id(n) in ids and n is not None and n != ()  # noqa: E731
    if ok(selected):
        return [selected]
    if isinstance(selected, (tuple, list)) and selected and all(ok(n) for n in selected):
        return list(selected)
    return None


# --- PyTorch-style helpers ---------------------------------------------------------------------------


def functional_call(model: Module, params: Mapping[str, Any] | Sequence[Mapping[str, Any]], *args: Any,
                    **kwargs: Any) -> Any:  # fmt: skip
    """Call ``model`` with some of its arrays replaced, named as in PyTorch (``torch.func.functional_call``).

    ``params`` maps dotted names (``"0.weight"``, as ``named_parameters`` gives them) to arrays; names it
    leaves out keep the model's own values. A tuple of dicts is merged. Tied weights (one array under two
    names, as in ``Sequential(layer, layer)``) stay tied, as with torch's ``tie_weights=True``: either name
    replaces both uses, and giving the two names different arrays raises ``InvalidArgumentError``.

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> model = nn.Linear(2, 1, key=ember.random.key(0))
    >>> params = {'weight': enp.array([[1.0, 2.0]]), 'bias': enp.array([0.5])}
    >>> nn.functional_call(model, params, enp.array([1.0, 1.0])).tolist()
    [3.5]
    >>> ember.grad(lambda p: nn.functional_call(model, p, enp.ones(2)).sum())(params)['weight'].tolist()
    [[1.0, 1.0]]
    """
    if not isinstance(params, Mapping):
        merged: dict[str, Any] = {}
        for part in params:
            merged.update(part)
        params = merged
    return replace_named(model, params, "functional_call")(*args, **kwargs)


def replace_named(model: Module, params: Mapping[str, Any], fn: str) -> Module:
    """``model`` with the arrays named in ``params`` replaced (shapes checked).

    Replacement is by the old array's identity, so tied weights (one array reachable under several names, as
    in ``Sequential(layer, layer)``) stay tied, as ``torch.func.functional_call(..., tie_weights=True)``:
    giving one of the names replaces every use; giving two of them different arrays is an error.
    """
    named = model.named_parameters()
    unknown = [name for name in params if name not in dict(named)]
    if unknown:
        raise InvalidArgumentError(
            f"nn.{fn}: {type(model).__name__} has no parameter {unknown[0]!r}; its parameters are "
            f"{[n for n, _ in named]} (running statistics live in the nn.State, passed as an argument)")
    new_by_id: dict[int, tuple[str, Any]] = {}
    for name, old in named:
        if name not in params:
            continue
        new = params[name]
        if tuple(getattr(new, "shape", ())) != tuple(old.shape):
            raise ShapeError(f"nn.{fn}: {name!r} has shape {tuple(old.shape)} in the model but the replacement "
                             f"has shape {tuple(getattr(new, 'shape', ()))}; give an array of the same shape")
        first = new_by_id.setdefault(id(old), (name, new))
        if first[1] is not new:
            raise InvalidArgumentError(
                f"nn.{fn}: {first[0]!r} and {name!r} are tied (one array in the model) but were given different "
                f"values; give only one of the names, which replaces both, or the same array for each")
    leaves, treedef = tree_flatten(model)
    return tree_unflatten(treedef, [new_by_id[id(leaf)][1] if id(leaf) in new_by_id else leaf for leaf in leaves])


def stack_modules(models: Sequence[Any]) -> Any:
    """Stack models of one architecture into one whose arrays have a leading model axis (for ``vmap``).

    The equivalent of ``torch.func.stack_module_state``: ``vmap(lambda m, x: m(x), in_axes=(0, None))``
    runs every model at once. Works on any pytrees of one structure (``nn.State`` too).

    >>> import ember, ember.numpy as enp
    >>> from ember import nn
    >>> models = [nn.Linear(3, 2, key=k) for k in ember.random.split(ember.random.key(0), 4)]
    >>> ensemble = nn.stack_modules(models)
    >>> ensemble.weight.shape
    (4, 2, 3)
    >>> ember.vmap(lambda m, x: m(x), in_axes=(0, None))(ensemble, enp.ones(3)).shape
    (4, 2)
    """
    models = list(models)
    if not models:
        raise InvalidArgumentError("nn.stack_modules: give at least one model")
    first = tree_structure(models[0])
    for i, m in enumerate(models[1:], 1):
        if tree_structure(m) != first:
            raise InvalidArgumentError(
                f"nn.stack_modules: model {i} differs from model 0 in its structure or static fields "
                f"(hyperparameters, layer sizes); only models of one architecture stack")
    return tree_map(lambda *xs: enp.stack(xs), *models)
