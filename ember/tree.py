"""``ember.tree``: pytree utilities with the semantics of ``jax.tree``.

A pytree is a nested structure of tuples, lists, dicts, ``None``, namedtuples,
``OrderedDict``/``defaultdict`` and registered classes; everything else is a
leaf.  See :mod:`ember.core.pytree` for the full description.

>>> from ember import tree
>>> tree.map(lambda x: x + 1, {'w': 1, 'b': (2, None)})
{'b': (3, None), 'w': 2}
>>> leaves, treedef = tree.flatten([1, {'a': 2}])
>>> leaves, treedef
([1, 2], PyTreeDef([*, {'a': *}]))
"""

from ember.core.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    PyTreeDef,
    SequenceKey,
    broadcast_prefix,
    keystr,
    register_dataclass,
    register_node,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)
from ember.core.pytree import (
    tree_all as all,
)
from ember.core.pytree import (
    tree_flatten as flatten,
)
from ember.core.pytree import (
    tree_flatten_with_path as flatten_with_path,
)
from ember.core.pytree import (
    tree_leaves as leaves,
)
from ember.core.pytree import (
    tree_leaves_with_path as leaves_with_path,
)
from ember.core.pytree import (
    tree_map as map,
)
from ember.core.pytree import (
    tree_map_with_path as map_with_path,
)
from ember.core.pytree import (
    tree_reduce as reduce,
)
from ember.core.pytree import (
    tree_structure as structure,
)
from ember.core.pytree import (
    tree_transpose as transpose,
)
from ember.core.pytree import (
    tree_unflatten as unflatten,
)

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "PyTreeDef",
    "SequenceKey",
    "all",
    "broadcast_prefix",
    "flatten",
    "flatten_with_path",
    "keystr",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "register_dataclass",
    "register_node",
    "structure",
    "transpose",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
    "unflatten",
]
