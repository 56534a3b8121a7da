"""Node kinds and the type registry: which types are pytree nodes, and how to split them.

Types are dispatched through one dict, ``_dispatch``, keyed by exact type; a type
seen for the first time is classified (namedtuple or leaf) and cached there.
The built-in kinds (tuple, list, dict, None) carry no flatten functions: the hot
loops handle them inline.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from ember.core.pytree._keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey


class _NodeKind:
    """Registry entry for one node type (compared and hashed by identity)."""

    __slots__ = ("__weakref__", "auto", "flatten", "flatten_with_keys", "type", "unflatten")

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


def _short_repr(x: Any, limit: int = 160) -> str:
    try:
        r = repr(x)
    except Exception:  # pragma: no cover - defensive
        r = f"<{type(x).__name__} object>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


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
