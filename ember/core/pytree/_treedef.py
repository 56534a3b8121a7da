"""PyTreeDef: the structure of a tree, and the operations on structures.

A structure is stored as a nested tuple *spec*: a leaf is ``None`` and a node is
``(kind, aux_data, child_specs)`` where ``kind`` is the node type's (unique,
identity-compared) registry entry.  Equality and hashing of :class:`PyTreeDef`
therefore run as native tuple comparison / hashing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from ember.core.pytree._keys import DictKey, FlattenedIndexKey, SequenceKey, keystr
from ember.core.pytree._registry import (
    _DICT,
    _LEAF,
    _LIST,
    _NONE,
    _TUPLE,
    _dispatch,
    _is_namedtuple_type,
    _keyed_children,
    _NodeKind,
    _short_repr,
    _sorted_keys,
)

# ---------------------------------------------------------------------------
# Unflattening
# ---------------------------------------------------------------------------


def _unflat(spec: tuple, it: Iterator[Any], _islice=itertools.islice,
            _next=next) -> Any:
    """Build the node described by ``spec``, drawing leaves from ``it``."""
    kind, aux, child_specs = spec
    n = len(child_specs)
    if n > 8 and child_specs.count(None) == n:  # many children, all leaves
        kids = list(_islice(it, n))
    else:
        kids = []
        for s in child_specs:
            kids.append(_next(it) if s is None else _unflat(s, it))
    if kind is _LIST:
        return kids
    if kind is _TUPLE:
        return tuple(kids)
    if kind is _DICT:
        return dict(zip(aux, kids))
    if kind is _NONE:
        return None
    return kind.unflatten(aux, tuple(kids))


# ---------------------------------------------------------------------------
# Helpers for structure specs
# ---------------------------------------------------------------------------


# These helpers use plain loops (not comprehensions, which cost an extra frame
# per level on Python < 3.12) so deep trees stay far from the recursion limit.


def _count_leaves(spec: Any) -> int:
    if spec is None:
        return 1
    n = 0
    for s in spec[2]:
        n += 1 if s is None else _count_leaves(s)
    return n


def _count_nodes(spec: Any) -> int:
    if spec is None:
        return 1
    n = 1
    for s in spec[2]:
        n += 1 if s is None else _count_nodes(s)
    return n


def _spec_repr(spec: Any) -> str:
    if spec is None:
        return "*"
    kind, aux, ch = spec
    parts = []
    for s in ch:
        parts.append(_spec_repr(s))
    if kind is _TUPLE:
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if kind is _LIST:
        return "[" + ", ".join(parts) + "]"
    if kind is _DICT:
        return "{" + ", ".join([f"{k!r}: {p}" for k, p in zip(aux, parts)]) + "}"
    if kind is _NONE:
        return "None"
    if kind.auto:  # namedtuple
        return f"CustomNode(namedtuple[{kind.type.__name__}], [{', '.join(parts)}])"
    return f"CustomNode({kind.type.__name__}[{aux!r}], [{', '.join(parts)}])"


def _compose(spec: Any, inner: Any) -> Any:
    if spec is None:
        return inner
    kind, aux, ch = spec
    new = []
    for s in ch:
        new.append(_compose(s, inner))
    return (kind, aux, tuple(new))


def _spec_equal_iterative(a: Any, b: Any) -> bool:
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if x is None or y is None:
            return False
        if x[0] is not y[0] or len(x[2]) != len(y[2]) or not bool(x[1] == y[1]):
            return False
        stack.extend(zip(x[2], y[2]))
    return True


def _find_unhashable(spec: Any) -> tuple[Any, Any] | None:
    if spec is None:
        return None
    kind, aux, ch = spec
    try:
        hash(aux)
    except TypeError:
        return kind, aux
    for s in ch:
        bad = _find_unhashable(s)
        if bad is not None:
            return bad
    return None


# ---------------------------------------------------------------------------
# Prefix matching (flatten_up_to) and its error messages
# ---------------------------------------------------------------------------


def _kind_name(kind: Any) -> str:
    if kind is _NONE:
        return "None"
    if kind.auto:
        return f"namedtuple {kind.type.__qualname__}"
    return kind.type.__qualname__


def _type_desc(x: Any) -> str:
    if x is None:
        return "None"
    t = type(x)
    k = _dispatch.get(t)
    if isinstance(k, _NodeKind) and k.auto:
        return f"namedtuple {t.__qualname__}"
    if k is None and _is_namedtuple_type(t):
        return f"namedtuple {t.__qualname__}"
    if k is _LEAF or k is None:
        return f"leaf of type {t.__qualname__}"
    return t.__qualname__


class _Mismatch(ValueError):
    """Internal: structure mismatch found by flatten_up_to (path built on unwind)."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail
        self.rev_path: list = []  # keys from the mismatch up to the root

    @property
    def path(self) -> tuple:
        return tuple(reversed(self.rev_path))

    def where(self) -> str:
        p = keystr(self.path)
        return f"key path {p}" if p else "the root (the whole tree)"


def _child_key(kind: Any, aux: Any, x: Any, i: int) -> Any:
    if kind is _TUPLE or kind is _LIST:
        return SequenceKey(i)
    if kind is _DICT:
        return DictKey(aux[i])
    try:
        pairs, _ = _keyed_children(kind, x)
        return pairs[i][0]
    except Exception:  # pragma: no cover - defensive
        return FlattenedIndexKey(i)


def _up_to(spec: Any, x: Any, out: list, _get=_dispatch.get) -> None:
    """Append to ``out`` the subtrees of ``x`` at the leaves of ``spec``."""
    if spec is None:
        out.append(x)
        return
    kind, aux, child_specs = spec
    t = type(x)
    n = len(child_specs)
    if kind is _TUPLE or kind is _LIST:
        if t is not kind.type:
            raise _Mismatch(f"expected {kind.type.__name__}, got {_type_desc(x)}: "
                            f"{_short_repr(x)}")
        if len(x) != n:
            raise _Mismatch(f"{kind.type.__name__} arity mismatch: expected length {n}, "
                            f"got length {len(x)}: {_short_repr(x)}")
        kids = x
    elif kind is _DICT:
        if t is not dict:
            raise _Mismatch(f"expected dict, got {_type_desc(x)}: {_short_repr(x)}")
        keys = tuple(_sorted_keys(x))
        if keys != aux:
            expected = set(aux)
            missing = [k for k in aux if k not in x]
            extra = [k for k in keys if k not in expected]
            raise _Mismatch(f"dict key mismatch: expected keys {list(aux)!r}, got keys "
                            f"{list(keys)!r} (missing {missing!r}, unexpected {extra!r})")
        kids = [x[k] for k in aux]
    elif kind is _NONE:
        if x is not None:
            raise _Mismatch(f"expected None, got {_type_desc(x)}: {_short_repr(x)}")
        return
    else:
        if t is not kind.type or _get(t) is not kind:
            raise _Mismatch(f"expected {_kind_name(kind)}, got {_type_desc(x)}: "
                            f"{_short_repr(x)}")
        kids, xaux = kind.flatten(x)
        try:
            same = bool(xaux == aux)
        except Exception:
            same = False
        if not same:
            raise _Mismatch(f"{_kind_name(kind)} node metadata mismatch: expected "
                            f"{_short_repr(aux)}, got {_short_repr(xaux)}")
        if not isinstance(kids, (list, tuple)):
            kids = list(kids)
        if len(kids) != n:
            raise _Mismatch(f"{_kind_name(kind)} node has {len(kids)} children, "
                            f"expected {n}")
    i = 0
    for s, c in zip(child_specs, kids):
        if s is None:
            out.append(c)
        else:
            try:
                _up_to(s, c, out)
            except _Mismatch as e:
                e.rev_path.append(_child_key(kind, aux, x, i))
                raise
        i += 1


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------

def _make_treedef(spec: Any, num_leaves: int | None = None) -> PyTreeDef:
    td = _new_object(PyTreeDef)
    td._spec = spec
    if num_leaves is not None:
        td._num_leaves = num_leaves
    return td


_new_object = object.__new__


class PyTreeDef:
    """The structure of a pytree: everything but the leaves.

    Immutable, hashable (when all node aux data is hashable) and compared with
    ``==``: two trees have equal treedefs iff they have the same node types,
    node aux data (dict keys, namedtuple class, registered aux, ...) and
    arrangement, whatever their leaves are.  Obtain one with
    :func:`tree_structure` / :func:`tree_flatten`; it cannot be built directly.
    Its public attributes are read-only; its private slots (``_spec``, set once
    at creation; ``_num_leaves``, a cache) must not be assigned.

    >>> from ember import tree
    >>> td = tree.structure((1, {'a': 2}))
    >>> td
    PyTreeDef((*, {'a': *}))
    >>> td.num_leaves, td.num_nodes
    (2, 4)
    >>> td == tree.structure((0.5, {'a': 'x'}))
    True
    >>> td == tree.structure((0.5, {'a': None}))
    False
    """

    # No __setattr__ override: it would slow down creation on the hot path.
    # Unknown attributes cannot be set (slots) and public ones are properties.
    __slots__ = ("__weakref__", "_num_leaves", "_spec")

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError("PyTreeDef cannot be constructed directly; use "
                        "ember.tree.structure() or ember.tree.flatten()")

    @property
    def num_leaves(self) -> int:
        """Number of leaves in trees of this structure.

        >>> from ember import tree
        >>> tree.structure([1, (2, None)]).num_leaves
        2
        """
        try:
            return self._num_leaves
        except AttributeError:
            n = self._num_leaves = _count_leaves(self._spec)
            return n

    @property
    def num_nodes(self) -> int:
        """Number of nodes, counting leaves and ``None`` nodes.

        >>> from ember import tree
        >>> tree.structure([1, (2, None)]).num_nodes
        5
        """
        return _count_nodes(self._spec)

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root node's immediate children (``[]`` for a leaf).

        >>> from ember import tree
        >>> tree.structure((1, [2, None])).children()
        [PyTreeDef(*), PyTreeDef([*, None])]
        """
        if self._spec is None:
            return []
        return [_make_treedef(s) for s in self._spec[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root node, or ``None`` for a leaf.

        >>> from ember import tree
        >>> tree.structure({'b': 1, 'a': 2}).node_data()
        (<class 'dict'>, ('a', 'b'))
        """
        if self._spec is None:
            return None
        kind, aux, _ = self._spec
        return kind.type, aux

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Build a tree of this structure from ``leaves`` (in flatten order).

        >>> from ember import tree
        >>> tree.structure({'a': 0, 'b': (0, 0)}).unflatten([1, 2, 3])
        {'a': 1, 'b': (2, 3)}
        """
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        n = self.num_leaves
        if len(leaves) != n:
            word = "few" if len(leaves) < n else "many"
            raise ValueError(f"Too {word} leaves for PyTreeDef; expected {n}, got "
                             f"{len(leaves)} (structure {self!r})")
        spec = self._spec
        if spec is None:
            return leaves[0]
        return _unflat(spec, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Flatten ``tree`` only as far as this structure goes.

        This treedef must be a *prefix* of ``tree``'s structure: the result holds,
        for every leaf position of this treedef, the whole subtree of ``tree``
        found there.  Raises ``ValueError`` naming the key path of the first
        place where the structures differ.

        >>> from ember import tree
        >>> tree.structure((0, {'a': 0})).flatten_up_to((1, {'a': [2, 3]}))
        [1, [2, 3]]
        """
        out: list = []
        try:
            _up_to(self._spec, tree, out)
        except _Mismatch as e:
            raise ValueError(f"pytree structure mismatch at {e.where()}: {e.detail}"
                             ) from None
        return out

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure obtained by putting a tree of ``inner`` at every leaf.

        >>> from ember import tree
        >>> tree.structure((0, 0)).compose(tree.structure([0, None]))
        PyTreeDef(([*, None], [*, None]))
        """
        if not isinstance(inner, PyTreeDef):
            raise TypeError(f"compose expects a PyTreeDef, got {type(inner).__name__}")
        return _make_treedef(_compose(self._spec, inner._spec),
                             self.num_leaves * inner.num_leaves)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        try:
            return bool(self._spec == other._spec)
        except RecursionError:
            # Very deep trees: native nested-tuple comparison recurses in C
            # (two levels per tree level); compare iteratively instead.
            try:
                return _spec_equal_iterative(self._spec, other._spec)
            except Exception as e:
                raise TypeError(
                    "could not compare PyTreeDefs: node aux data must be comparable "
                    f"with `==` returning a bool ({type(e).__name__}: {e})") from e
        except Exception as e:
            raise TypeError(
                "could not compare PyTreeDefs: node aux data must be comparable with "
                f"`==` returning a bool ({type(e).__name__}: {e})") from e

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        # Not cached: treedefs are usually fresh (one per flatten), and hashing
        # the nested spec tuple runs in C.
        try:
            return hash(self._spec)
        except TypeError as e:
            bad = _find_unhashable(self._spec)
            what = (f"the aux data {_short_repr(bad[1])} of a "
                    f"{bad[0].type.__qualname__} node is unhashable"
                    if bad else str(e))
            raise TypeError(
                f"PyTreeDef is not hashable: {what}. Node aux data (e.g. a "
                "register_node flatten's second result, or register_dataclass "
                "meta fields) must be hashable.") from e

    def __repr__(self) -> str:
        return f"PyTreeDef({_spec_repr(self._spec)})"

    __str__ = __repr__

    def __reduce__(self):
        return (_make_treedef, (self._spec, self.num_leaves))

    def __copy__(self) -> PyTreeDef:
        return self

    def __deepcopy__(self, memo: Any) -> PyTreeDef:
        return self


_LEAF_TREEDEF = _make_treedef(None, 1)
