"""Key paths: the keys that name a child within its node, and :func:`keystr`."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any


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
