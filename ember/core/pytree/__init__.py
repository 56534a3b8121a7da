"""Pytrees: nested containers of arrays, flattened to leaves and a structure.

A *pytree* is a nested structure of containers (the *nodes*) whose non-container
contents are the *leaves*.  Every ember transform (``jit``, ``grad``, ``vmap``,
...) accepts and returns pytrees: it flattens its arguments into a flat list of
leaves plus a :class:`PyTreeDef` describing the structure, works on the leaves,
and rebuilds the output with :meth:`PyTreeDef.unflatten`.

The semantics follow ``jax.tree`` / ``jax.tree_util``:

* Built-in nodes: ``tuple``, ``list``, ``dict`` (children in sorted-key order),
  ``None`` (a node with no children, hence no leaves), namedtuples (children in
  ``_fields`` order), :class:`collections.OrderedDict` (insertion order) and
  :class:`collections.defaultdict` (sorted keys; ``default_factory`` kept in the
  structure).
* Classes registered with :func:`register_node` or :func:`register_dataclass`.
* Everything else is a leaf: NumPy arrays, Python scalars, strings, arbitrary
  objects, and *subclasses* of the container types above (except namedtuples),
  since dispatch is on the exact type.

The public namespace is :mod:`ember.tree`, which re-exports this package's
functions under short names (``tree.flatten``, ``tree.map``, ...):

>>> from ember import tree
>>> leaves, treedef = tree.flatten((1, {'b': 2, 'a': [3, None]}))
>>> leaves
[1, 3, 2]
>>> treedef
PyTreeDef((*, {'a': [*, None], 'b': *}))
>>> tree.unflatten(treedef, [10, 30, 20])
(10, {'a': [30, None], 'b': 20})

Modules: ``_keys`` (key paths), ``_registry`` (node types and their dispatch),
``_treedef`` (:class:`PyTreeDef`), ``_functions`` (flatten and the functions
built on it).
"""

from ember.core.pytree._functions import (
    broadcast_prefix,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)
from ember.core.pytree._keys import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    keystr,
)

# ``_kind_for_type`` and ``_make_treedef`` too: treedefs pickled before this
# module became a package refer to them as ``ember.core.pytree.<name>``.
from ember.core.pytree._registry import _kind_for_type, register_dataclass, register_node
from ember.core.pytree._treedef import PyTreeDef, _make_treedef

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "PyTreeDef",
    "SequenceKey",
    "broadcast_prefix",
    "keystr",
    "register_dataclass",
    "register_node",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]
