"""The tree functions: flatten (the hot path) and those built on it.

``tree_unflatten``, ``tree_map``, ``tree_reduce``, ``tree_transpose``, the
``*_with_path`` variants, the ``treedef_*`` helpers and ``broadcast_prefix``.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ember.core.pytree import _registry
from ember.core.pytree._keys import KeyPath
from ember.core.pytree._registry import (
    _DICT,
    _LEAF,
    _LIST,
    _NONE,
    _NONE_SPEC,
    _TUPLE,
    _keyed_children,
    _resolve,
    _sorted_keys,
)
from ember.core.pytree._treedef import (
    _LEAF_TREEDEF,
    PyTreeDef,
    _make_treedef,
    _Mismatch,
    _new_object,
    _unflat,
    _up_to,
)

# Assigned, not imported: CPython >= 3.11 compiles ``name.method()`` on an
# imported name without LOAD_METHOD, so each tree_flatten call would build a
# bound ``_dispatch.get``.
_dispatch = _registry._dispatch

T = TypeVar("T")
IsLeafFn = Callable[[Any], bool]


# ---------------------------------------------------------------------------
# Flattening (hot path)
# ---------------------------------------------------------------------------


def _flat(kind: Any, x: Any, leaves: list, _get=_dispatch.get, _type=type,
          _map=map, _sorted=sorted, _tuple=tuple, _list=list) -> tuple:
    """Flatten node ``x`` of kind ``kind`` (not a leaf); return its spec."""
    if kind is _TUPLE or kind is _LIST:
        aux = None
        kids = x
    elif kind is _DICT:
        try:
            aux = _tuple(_sorted(x))
        except TypeError:
            aux = _tuple(_sorted_keys(x))  # raises the explanatory error
        kids = _list(_map(x.__getitem__, aux))
    elif kind is _NONE:
        return _NONE_SPEC
    else:
        kids, aux = kind.flatten(x)
        if _type(kids) is not _list and _type(kids) is not _tuple:
            kids = _list(kids)
    if len(kids) > 6:
        # Classify all children at C speed; the common all-leaves case then
        # needs no Python-level loop.
        kinds = _list(_map(_get, _map(_type, kids)))
        if kinds.count(_LEAF) == len(kids):
            leaves.extend(kids)
            return (kind, aux, (None,) * len(kids))
    # Small node, or a large one with node children: one pass; the child-spec
    # list is only materialised once a non-leaf child shows up.
    specs = None
    i = 0
    for c in kids:
        k = _get(_type(c))
        if k is None:
            k = _resolve(_type(c))
        if k is _LEAF:
            leaves.append(c)
            if specs is not None:
                specs.append(None)
        else:
            if specs is None:
                specs = [None] * i
            specs.append(_flat(k, c, leaves))
        i += 1
    return (kind, aux, (None,) * i if specs is None else _tuple(specs))


def _flat_is_leaf(x: Any, leaves: list, is_leaf: IsLeafFn, _get=_dispatch.get) -> Any:
    """Like :func:`_flat` but consults ``is_leaf`` on every subtree."""
    if is_leaf(x):
        leaves.append(x)
        return None
    t = type(x)
    kind = _get(t)
    if kind is None:
        kind = _resolve(t)
    if kind is _LEAF:
        leaves.append(x)
        return None
    if kind is _TUPLE or kind is _LIST:
        aux = None
        kids = x
    elif kind is _DICT:
        aux = tuple(_sorted_keys(x))
        kids = [x[k] for k in aux]
    elif kind is _NONE:
        return _NONE_SPEC
    else:
        kids, aux = kind.flatten(x)
    specs = []
    for c in kids:
        specs.append(_flat_is_leaf(c, leaves, is_leaf))
    return (kind, aux, tuple(specs))


def _flat_with_path(x: Any, path: tuple, out: list, is_leaf: IsLeafFn | None,
                    _get=_dispatch.get) -> Any:
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return None
    t = type(x)
    kind = _get(t)
    if kind is None:
        kind = _resolve(t)
    if kind is _LEAF:
        out.append((path, x))
        return None
    if kind is _NONE:
        return _NONE_SPEC
    pairs, aux = _keyed_children(kind, x)
    specs = []
    for key, c in pairs:
        specs.append(_flat_with_path(c, path + (key,), out, is_leaf))
    return (kind, aux, tuple(specs))


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------


def tree_flatten(tree: Any, is_leaf: IsLeafFn | None = None) -> tuple[list[Any], PyTreeDef]:
    """Flatten ``tree`` into its list of leaves and its structure.

    ``is_leaf(x) -> bool`` is called on every subtree (root included) before
    anything else; where it returns true the subtree is taken as a leaf whole.

    >>> from ember import tree
    >>> tree.flatten([1, (2, None), {'b': 3, 'a': 4}])
    ([1, 2, 4, 3], PyTreeDef([*, (*, None), {'a': *, 'b': *}]))
    >>> tree.flatten([1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple))[0]
    [1, (2, 3)]
    """
    leaves: list = []
    if is_leaf is None:
        t = type(tree)
        kind = _dispatch.get(t)
        if kind is None:
            kind = _resolve(t)
        if kind is _LEAF:
            return [tree], _LEAF_TREEDEF
        spec = _flat(kind, tree, leaves)
    else:
        spec = _flat_is_leaf(tree, leaves, is_leaf)
    td = _new_object(PyTreeDef)
    td._spec = spec
    td._num_leaves = len(leaves)
    return leaves, td


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a tree of structure ``treedef`` from ``leaves``.

    >>> from ember import tree
    >>> leaves, td = tree.flatten({'x': [1, 2], 'y': None})
    >>> tree.unflatten(td, [a * 10 for a in leaves])
    {'x': [10, 20], 'y': None}
    """
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(f"unflatten expects a PyTreeDef first, got {type(treedef).__name__}")
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: IsLeafFn | None = None) -> list[Any]:
    """The leaves of ``tree`` in flatten order.

    >>> from ember import tree
    >>> tree.leaves({'b': (1, None), 'a': [2, 3]})
    [2, 3, 1]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: IsLeafFn | None = None) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``.

    >>> from ember import tree
    >>> tree.structure((1, [2, None]))
    PyTreeDef((*, [*, None]))
    """
    return tree_flatten(tree, is_leaf)[1]


def _up_to_for_map(treedef: PyTreeDef, other: Any, i: int, fname: str) -> list:
    out: list = []
    try:
        _up_to(treedef._spec, other, out)
    except _Mismatch as e:
        raise ValueError(
            f"{fname}: rest[{i}] does not have the structure of the first tree "
            f"(which must be a prefix of it). Mismatch at {e.where()}: {e.detail}. "
            f"First tree structure: {treedef!r}") from None
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: IsLeafFn | None = None) -> Any:
    """Apply ``f`` to the leaves of ``tree`` (and matching parts of ``rest``).

    Each tree in ``rest`` must have ``tree``'s structure, or ``tree``'s structure
    as a prefix: ``f`` then receives, as its extra arguments, the whole subtrees
    of ``rest`` at each leaf position of ``tree``.  ``is_leaf`` applies to
    ``tree`` only.  A mismatch raises ``ValueError`` naming its key path.

    >>> from ember import tree
    >>> tree.map(lambda x: x * 2, {'a': 1, 'b': (2, None)})
    {'a': 2, 'b': (4, None)}
    >>> tree.map(lambda x, y: x + y, (1, 2), (10, 20))
    (11, 22)
    >>> tree.map(lambda x, y: (x, y), [1, 2], [(3, 4), {'k': 5}])
    [(1, (3, 4)), (2, {'k': 5})]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    spec = treedef._spec
    if not rest:
        new = [f(x) for x in leaves]
    else:
        columns = [leaves]
        for i, r in enumerate(rest):
            columns.append(_up_to_for_map(treedef, r, i, "tree.map"))
        new = [f(*xs) for xs in zip(*columns)]
    if spec is None:
        return new[0]
    return _unflat(spec, iter(new))


_MISSING: Any = object()  # "no initializer" marker for tree_reduce


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: Any = _MISSING,
                is_leaf: IsLeafFn | None = None) -> T:
    """Fold ``function`` over the leaves of ``tree`` (``functools.reduce``).

    >>> from ember import tree
    >>> tree.reduce(lambda a, b: a + b, {'x': 1, 'y': [2, 3]})
    6
    >>> tree.reduce(lambda a, b: a + b, (), 100)
    100
    """
    leaves = tree_flatten(tree, is_leaf)[0]
    if initializer is _MISSING:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, is_leaf: IsLeafFn | None = None) -> bool:
    """``True`` iff every leaf of ``tree`` is truthy (``True`` with no leaves).

    >>> from ember import tree
    >>> tree.all([True, (1, None)]), tree.all({'a': 0}), tree.all([])
    (True, False, True)
    """
    return builtins.all(tree_flatten(tree, is_leaf)[0])


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure ``outer(inner)`` into one of ``inner(outer)``.

    ``inner_treedef=None`` infers it from the first outer subtree.  As in JAX,
    ``pytree_to_transpose`` is flattened fully and only its leaf count is
    checked against ``outer_treedef.compose(inner_treedef)`` (``TypeError``).

    >>> from ember import tree
    >>> outer = tree.structure([0, 0, 0])
    >>> tree.transpose(outer, None, [{'a': 1, 'b': 2}, {'a': 3, 'b': 4}, {'a': 5, 'b': 6}])
    {'a': [1, 3, 5], 'b': [2, 4, 6]}
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError("transpose: cannot infer inner_treedef because "
                             f"outer_treedef {outer_treedef!r} has no leaves")
        inner_treedef = tree_structure(subtrees[0])
    inner_n = inner_treedef.num_leaves
    outer_n = outer_treedef.num_leaves
    if treedef.num_leaves != inner_n * outer_n:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(
            f"transpose: the tree to transpose has structure {treedef!r} with "
            f"{treedef.num_leaves} leaves, but outer_treedef.compose(inner_treedef) "
            f"is {expected!r} with {inner_n * outer_n} leaves")
    rows = [flat[i * inner_n:(i + 1) * inner_n] for i in range(outer_n)]
    columns = [outer_treedef.unflatten(col) for col in zip(*rows)] if outer_n else (
        [outer_treedef.unflatten([]) for _ in range(inner_n)])
    return inner_treedef.unflatten(columns)


def tree_flatten_with_path(tree: Any, is_leaf: IsLeafFn | None = None
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten` but each leaf comes with its key path.

    >>> from ember import tree
    >>> pairs, td = tree.flatten_with_path({'b': [7], 'a': None})
    >>> [(tree.keystr(p), x) for p, x in pairs]
    [("['b'][0]", 7)]
    >>> td
    PyTreeDef({'a': None, 'b': [*]})
    """
    out: list = []
    spec = _flat_with_path(tree, (), out, is_leaf)
    return out, _make_treedef(spec, len(out))


def tree_leaves_with_path(tree: Any, is_leaf: IsLeafFn | None = None
                          ) -> list[tuple[KeyPath, Any]]:
    """``[(key_path, leaf), ...]`` for ``tree``.

    >>> from ember import tree
    >>> tree.leaves_with_path((1, {'a': 2}))
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='a')), 2)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: IsLeafFn | None = None) -> Any:
    """Like :func:`tree_map` but ``f(path, x, *xs)`` also gets the key path.

    >>> from ember import tree
    >>> tree.map_with_path(lambda p, x: tree.keystr(p), {'a': 1, 'b': [2]})
    {'a': "['a']", 'b': ["['b'][0]"]}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    if not rest:
        new = [f(p, x) for p, x in pairs]
    else:
        columns = [_up_to_for_map(treedef, r, i, "tree.map_with_path")
                   for i, r in enumerate(rest)]
        new = [f(p, x, *xs) for (p, x), *xs in zip(pairs, *columns)]
    return treedef.unflatten(new)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is a single node: a leaf, ``None``, ``()``, ``{}``...

    As in JAX this is ``treedef.num_nodes == 1``.

    >>> from ember import tree
    >>> tree.treedef_is_leaf(tree.structure(1)), tree.treedef_is_leaf(tree.structure([1]))
    (True, False)
    """
    spec = treedef._spec
    return spec is None or not spec[2]


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Same as ``treedef.children()``.

    >>> from ember import tree
    >>> tree.treedef_children(tree.structure((1, 2)))
    [PyTreeDef(*), PyTreeDef(*)]
    """
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the given structures.

    >>> from ember import tree
    >>> tree.treedef_tuple([tree.structure(1), tree.structure([2, 3])])
    PyTreeDef((*, [*, *]))
    """
    tds = list(treedefs)
    for td in tds:
        if not isinstance(td, PyTreeDef):
            raise TypeError(f"treedef_tuple expects PyTreeDefs, got {type(td).__name__}")
    return _make_treedef((_TUPLE, None, tuple(td._spec for td in tds)),
                         builtins.sum(td.num_leaves for td in tds))


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: IsLeafFn | None = None) -> list[Any]:
    """Broadcast the leaves of ``prefix_tree`` over the leaves of ``full_tree``.

    ``prefix_tree``'s structure must be a prefix of ``full_tree``'s; each of its
    leaves is repeated once per leaf of the matching subtree of ``full_tree``
    (this is how ``vmap``'s ``in_axes`` apply to arguments).  ``is_leaf`` applies
    to ``prefix_tree``.

    >>> from ember import tree
    >>> broadcast = tree.broadcast_prefix
    >>> broadcast((0, None), ([1, 2], {'a': 3}), is_leaf=lambda x: x is None)
    [0, 0, None]
    """
    leaves, treedef = tree_flatten(prefix_tree, is_leaf)
    subtrees = treedef.flatten_up_to(full_tree)
    out: list = []
    for x, sub in zip(leaves, subtrees):
        out.extend([x] * tree_structure(sub).num_leaves)
    return out
