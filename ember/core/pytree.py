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

The public namespace is :mod:`ember.tree`, which re-exports this module's
functions under short names (``tree.flatten``, ``tree.map``, ...):

>>> from ember import tree
>>> leaves, treedef = tree.flatten((1, {'b': 2, 'a': [3, None]}))
>>> leaves
[1, 3, 2]
>>> treedef
PyTreeDef((*, {'a': [*, None], 'b': *}))
>>> tree.unflatten(treedef, [10, 30, 20])
(10, {'a': [30, None], 'b': 20})

Implementation notes.  A structure is stored as a nested tuple *spec*: a leaf is
``None`` and a node is ``(kind, aux_data, child_specs)`` where ``kind`` is the
node type's (unique, identity-compared) registry entry.  Equality and hashing of
:class:`PyTreeDef` therefore run as native tuple comparison / hashing.  Types
are dispatched through one dict keyed by exact type; unknown types are
classified once (namedtuple or leaf) and cached in that dict.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import functools
import itertools
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence, TypeVar

__all__ = [
    "PyTreeDef",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "KeyEntry",
    "KeyPath",
    "keystr",
    "register_node",
    "register_dataclass",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_reduce",
    "tree_all",
    "tree_transpose",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "tree_map_with_path",
    "treedef_is_leaf",
    "treedef_children",
    "treedef_tuple",
    "broadcast_prefix",
]

T = TypeVar("T")
IsLeafFn = Callable[[Any], bool]


# ---------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Key of a child of a tuple or list: ``str(SequenceKey(0)) == '[0]'``.

    >>> str(SequenceKey(2))
    '[2]'
    """

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Key of a child of a dict-like node: ``str(DictKey('a')) == "['a']"``.

    >>> str(DictKey('a'))
    "['a']"
    """

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Key of an attribute child (namedtuple field, dataclass field).

    >>> str(GetAttrKey('x'))
    '.x'
    """

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Key of the i-th child of a registered node that has no key function.

    >>> str(FlattenedIndexKey(1))
    '[<flat index 1>]'
    """

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = Any  # SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey | user keys
KeyPath = tuple  # tuple[KeyEntry, ...]


def _simple_key_str(key: Any) -> str:
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, DictKey):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return str(key.name)
    if isinstance(key, FlattenedIndexKey):
        return str(key.key)
    return str(key)


def keystr(keys: Sequence[Any], *, simple: bool = False, separator: str = "") -> str:
    """Render a key path (as produced by :func:`tree_flatten_with_path`) as text.

    With ``simple=True`` each key is rendered bare (``0``, ``a``, ``x``) and the
    keys are joined with ``separator``.

    >>> keystr((SequenceKey(0), DictKey('a'), GetAttrKey('x')))
    "[0]['a'].x"
    >>> keystr((SequenceKey(0), DictKey('a')), simple=True, separator='/')
    '0/a'
    """
    fn = _simple_key_str if simple else str
    return separator.join([fn(k) for k in keys])


# ---------------------------------------------------------------------------
# Node kinds and the type registry
# ---------------------------------------------------------------------------


class _NodeKind:
    """Registry entry for one node type (compared and hashed by identity)."""

    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys", "auto", "__weakref__")

    def __init__(
        self,
        typ: type,
        flatten: Callable | None,
        unflatten: Callable | None,
        flatten_with_keys: Callable | None = None,
        auto: bool = False,
    ):
        self.type = typ
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys
        self.auto = auto  # created automatically (namedtuple): may be overridden

    def __repr__(self) -> str:
        return f"<pytree node kind {self.type.__qualname__}>"

    def __reduce__(self):
        # Pickle by type: the unpickled treedef uses the live registry entry.
        return (_kind_for_type, (self.type,))


class _LeafMarker:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<pytree leaf>"


_LEAF: Any = _LeafMarker()  # dispatch value for leaf types

# Built-in kinds are handled inline by the hot loops (their flatten/unflatten
# fields are only used by generic code paths).
_TUPLE = _NodeKind(tuple, None, None)
_LIST = _NodeKind(list, None, None)
_DICT = _NodeKind(dict, None, None)
_NONE = _NodeKind(type(None), None, None)
_NONE_SPEC = (_NONE, None, ())

_dispatch: dict[type, Any] = {
    tuple: _TUPLE,
    list: _LIST,
    dict: _DICT,
    type(None): _NONE,
}
# Common leaf types, so their first appearance needs no classification.
for _t in (int, float, complex, bool, str, bytes, object):
    _dispatch[_t] = _LEAF
del _t
try:  # NumPy is ember's backbone, but this module does not require it.
    import numpy as _np

    for _t in (_np.ndarray, _np.float64, _np.float32, _np.float16, _np.int64,
               _np.int32, _np.int16, _np.int8, _np.uint8, _np.uint32, _np.uint64,
               _np.bool_, _np.complex64, _np.complex128):
        _dispatch[_t] = _LEAF
    del _t
except ImportError:  # pragma: no cover
    pass

_BUILTIN_TYPES = frozenset({tuple, list, dict, type(None), collections.OrderedDict,
                            collections.defaultdict})


def _is_namedtuple_type(t: type) -> bool:
    if not issubclass(t, tuple):
        return False
    fields = getattr(t, "_fields", None)
    return isinstance(fields, tuple) and builtins.all(isinstance(f, str) for f in fields)


def _make_namedtuple_kind(t: type) -> _NodeKind:
    fields = t._fields

    def flatten(x):
        return x, None

    def unflatten(aux, children):
        return t(*children)

    def flatten_with_keys(x):
        return [(GetAttrKey(f), c) for f, c in zip(fields, x)], None

    return _NodeKind(t, flatten, unflatten, flatten_with_keys, auto=True)


def _resolve(t: type) -> Any:
    """Classify a type seen for the first time and cache the answer."""
    kind = _make_namedtuple_kind(t) if _is_namedtuple_type(t) else _LEAF
    _dispatch[t] = kind
    return kind


def _kind_for_type(t: type) -> Any:
    kind = _dispatch.get(t)
    if kind is None:
        kind = _resolve(t)
    if kind is _LEAF:
        raise ValueError(f"{t} is not a registered pytree node type")
    return kind


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError as e:
        raise ValueError(
            "pytree dict keys must be sortable (mutually comparable with `<`), "
            f"but sorting the keys {_short_repr(list(d))} failed: {e}"
        ) from e


def _od_flatten(x):
    keys = tuple(x)
    return [x[k] for k in keys], keys


def _od_unflatten(keys, children):
    return collections.OrderedDict(zip(keys, children))


def _od_flatten_with_keys(x):
    keys = tuple(x)
    return [(DictKey(k), x[k]) for k in keys], keys


def _dd_flatten(x):
    keys = tuple(_sorted_keys(x))
    return [x[k] for k in keys], (x.default_factory, keys)


def _dd_unflatten(aux, children):
    return collections.defaultdict(aux[0], zip(aux[1], children))


def _dd_flatten_with_keys(x):
    keys = tuple(_sorted_keys(x))
    return [(DictKey(k), x[k]) for k in keys], (x.default_factory, keys)


_dispatch[collections.OrderedDict] = _NodeKind(
    collections.OrderedDict, _od_flatten, _od_unflatten, _od_flatten_with_keys)
_dispatch[collections.defaultdict] = _NodeKind(
    collections.defaultdict, _dd_flatten, _dd_unflatten, _dd_flatten_with_keys)


def register_node(
    cls: type,
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten: Callable[[Hashable, tuple], Any],
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]] | None = None,
) -> None:
    """Register ``cls`` as a pytree node type.

    ``flatten(obj) -> (children, aux_data)`` splits an instance into an iterable
    of children (which are themselves flattened recursively) and auxiliary
    data kept in the treedef (it must be hashable and comparable with ``==``
    for the treedef to be hashable, e.g. as a jit cache key).
    ``unflatten(aux_data, children) -> obj`` rebuilds an instance; ``children``
    is a tuple.  The optional ``flatten_with_keys(obj) -> (((key, child), ...),
    aux_data)`` supplies the keys used by :func:`tree_flatten_with_path`;
    without it, children get :class:`FlattenedIndexKey` keys.

    Dispatch is on the exact type: subclasses are not nodes unless registered.
    Registering a type twice raises ``ValueError``.

    >>> from ember import tree
    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> tree.register_node(Pair, lambda p: ((p.a, p.b), None),
    ...                    lambda aux, ch: Pair(*ch))
    >>> tree.leaves([Pair(1, (2, 3))])
    [1, 2, 3]
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_node: expected a class, got {cls!r}")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError("register_node: flatten and unflatten must be callable")
    existing = _dispatch.get(cls)
    if cls in _BUILTIN_TYPES or (isinstance(existing, _NodeKind) and not existing.auto):
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {cls}.")
    _dispatch[cls] = _NodeKind(cls, flatten, unflatten, flatten_with_keys)


_C = TypeVar("_C", bound=type)


def register_dataclass(
    cls: _C | None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> Any:
    """Register a dataclass-like class as a pytree node; usable as a decorator.

    ``data_fields`` are children (traced/batched by transforms), ``meta_fields``
    are static and stored in the treedef (they must be hashable).  When both are
    ``None`` and ``cls`` is a dataclass, they are inferred from
    :func:`dataclasses.fields`: fields whose metadata has ``static=True`` are
    meta fields, all others data fields.  ``drop_fields`` names ``init=True``
    fields deliberately left out of both lists.  Instances are rebuilt by calling
    ``cls(**fields)``.  Children are keyed by :class:`GetAttrKey`.

    >>> import dataclasses
    >>> from ember import tree
    >>> @tree.register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...     x: object
    ...     y: object
    ...     name: str = dataclasses.field(default='add', metadata=dict(static=True))
    >>> leaves, treedef = tree.flatten(Op(1, [2, 3]))
    >>> leaves
    [1, 2, 3]
    >>> treedef
    PyTreeDef(CustomNode(Op[('add',)], [*, [*, *]]))
    >>> tree.unflatten(treedef, [4, 5, 6])
    Op(x=4, y=[5, 6], name='add')
    """
    if cls is None:  # called with keyword arguments only: return a decorator
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    if not isinstance(cls, type):
        raise TypeError(f"register_dataclass: expected a class, got {cls!r}")
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be given "
                f"when either is given; got data_fields={data_fields!r}, "
                f"meta_fields={meta_fields!r}")
        if not dataclasses.is_dataclass(cls):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when "
                f"the class is not a dataclass; got {cls!r}")
        fields = [f for f in dataclasses.fields(cls) if f.init and f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    if isinstance(data_fields, str) or isinstance(meta_fields, str):
        raise TypeError("register_dataclass: data_fields and meta_fields must be "
                        "sequences of field names, not strings")
    data = tuple(data_fields)
    meta = tuple(meta_fields)
    if overlap := set(data) & set(meta):
        raise ValueError(f"register_dataclass: data_fields and meta_fields overlap: "
                         f"{sorted(overlap)}")
    if dataclasses.is_dataclass(cls):
        init = {f.name for f in dataclasses.fields(cls) if f.init} - set(drop_fields)
        given = set(data) | set(meta)
        if given != init:
            msg = ("register_dataclass: data_fields and meta_fields must list exactly "
                   "the dataclass fields with init=True (less drop_fields).")
            if missing := init - given:
                msg += f" Missing: {sorted(missing)} (add them to drop_fields to leave them out)."
            if extra := given - init:
                msg += f" Not init fields: {sorted(extra)}."
            raise ValueError(msg)

    data_keys = tuple(GetAttrKey(n) for n in data)

    def flatten(x):
        return ([getattr(x, n) for n in data], tuple([getattr(x, n) for n in meta]))

    def unflatten(aux, children):
        kwargs = dict(zip(meta, aux))
        kwargs.update(zip(data, children))
        return cls(**kwargs)

    def flatten_with_keys(x):
        return ([(k, getattr(x, n)) for k, n in zip(data_keys, data)],
                tuple([getattr(x, n) for n in meta]))

    register_node(cls, flatten, unflatten, flatten_with_keys)
    return cls


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


def _keyed_children(kind: Any, x: Any) -> tuple[list, Any]:
    """``([(key, child), ...], aux)`` for node ``x`` of kind ``kind``."""
    if kind is _TUPLE or kind is _LIST:
        return [(SequenceKey(i), c) for i, c in enumerate(x)], None
    if kind is _DICT:
        keys = tuple(_sorted_keys(x))
        return [(DictKey(k), x[k]) for k in keys], keys
    if kind is _NONE:
        return [], None
    if kind.flatten_with_keys is not None:
        pairs, aux = kind.flatten_with_keys(x)
        return list(pairs), aux
    kids, aux = kind.flatten(x)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(kids)], aux


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


def _short_repr(x: Any, limit: int = 160) -> str:
    try:
        r = repr(x)
    except Exception:  # pragma: no cover - defensive
        r = f"<{type(x).__name__} object>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


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
        return f"key path {p}" if p else "the root (empty key path)"


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

def _make_treedef(spec: Any, num_leaves: int | None = None) -> "PyTreeDef":
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
    __slots__ = ("_spec", "_num_leaves", "__weakref__")

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

    def children(self) -> list["PyTreeDef"]:
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

    def compose(self, inner: "PyTreeDef") -> "PyTreeDef":
        """The structure obtained by putting a tree of ``inner`` at every leaf.

        >>> from ember import tree
        >>> tree.structure((0, 0)).compose(tree.structure([0, None]))
        PyTreeDef(([*, None], [*, None]))
        """
        if not isinstance(inner, PyTreeDef):
            raise TypeError(f"compose expects a PyTreeDef, got {type(inner).__name__}")
        return _make_treedef(_compose(self._spec, inner._spec),
                             self.num_leaves * inner.num_leaves)

    def __eq__(self, other: Any) -> bool:
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

    def __ne__(self, other: Any) -> bool:
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

    def __copy__(self) -> "PyTreeDef":
        return self

    def __deepcopy__(self, memo: Any) -> "PyTreeDef":
        return self


_LEAF_TREEDEF = _make_treedef(None, 1)


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
