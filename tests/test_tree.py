"""Tests for ember.tree (pytrees with jax.tree / jax.tree_util semantics).

Expected values are hand-computed or taken from JAX's documented behaviour
(e.g. dict children in sorted-key order, ``None`` a node without children,
``PyTreeDef((*, {'a': *}))`` reprs, ``[0]['a'].x`` key strings).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import doctest
import pickle
import re
import typing

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember.core.pytree as pytree_mod
from ember import tree
from ember.tree import DictKey, FlattenedIndexKey, GetAttrKey, PyTreeDef, SequenceKey

# ---------------------------------------------------------------------------
# Shared node types (module level: registration is global and happens once)
# ---------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])
Other = collections.namedtuple("Other", ["x", "y"])


class TypedPoint(typing.NamedTuple):
    a: typing.Any
    b: typing.Any


class Box:
    """Registered node without key function: children (a, b), aux = tag."""

    def __init__(self, a, b, tag="box"):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return (type(other) is Box and (self.a, self.b, self.tag) == (other.a, other.b, other.tag))

    def __repr__(self):
        return f"Box({self.a!r}, {self.b!r}, tag={self.tag!r})"


UNFLATTEN_CHILDREN_TYPES = []


def _box_unflatten(tag, children):
    UNFLATTEN_CHILDREN_TYPES.append(type(children))
    a, b = children
    return Box(a, b, tag)


tree.register_node(Box, lambda b: ((b.a, b.b), b.tag), _box_unflatten)


class Keyed:
    """Registered node with flatten_with_keys."""

    def __init__(self, first, second):
        self.first, self.second = first, second

    def __eq__(self, other):
        return type(other) is Keyed and (self.first, self.second) == (other.first, other.second)


tree.register_node(
    Keyed,
    lambda k: ((k.first, k.second), None),
    lambda aux, ch: Keyed(*ch),
    flatten_with_keys=lambda k: (((GetAttrKey("first"), k.first),
                                  (GetAttrKey("second"), k.second)), None),
)


class Unhashable:
    """Registered node whose aux data is a list (unhashable)."""

    def __init__(self, x, meta):
        self.x, self.meta = x, meta


tree.register_node(Unhashable, lambda u: ((u.x,), list(u.meta)),
                   lambda aux, ch: Unhashable(ch[0], aux))


class GenChildren:
    """Registered node whose flatten returns a generator of children."""

    def __init__(self, *items):
        self.items = items


tree.register_node(GenChildren, lambda g: ((c for c in g.items), len(g.items)),
                   lambda n, ch: GenChildren(*ch))


@tree.register_dataclass
@dataclasses.dataclass
class Params:
    w: typing.Any
    b: typing.Any
    name: str = dataclasses.field(default="dense", metadata=dict(static=True))


@tree.register_dataclass
@dataclasses.dataclass(frozen=True)
class Frozen:
    value: typing.Any
    scale: float = dataclasses.field(default=1.0, metadata=dict(static=True))


@tree.register_dataclass(data_fields=["x"], meta_fields=["n"])
@dataclasses.dataclass
class Explicit:
    x: typing.Any
    n: int


class PlainAttrs:
    """Not a dataclass: registered with explicit field lists."""

    def __init__(self, x, y, mode):
        self.x, self.y, self.mode = x, y, mode


tree.register_dataclass(PlainAttrs, data_fields=["x", "y"], meta_fields=["mode"])


@dataclasses.dataclass
class WithDerived:
    x: typing.Any
    cache: typing.Any = dataclasses.field(init=False, default=None)
    scratch: typing.Any = None


tree.register_dataclass(WithDerived, drop_fields=["scratch"])


class DictSub(dict):
    pass


class ListSub(list):
    pass


# ---------------------------------------------------------------------------
# flatten / leaves / structure / unflatten for every node type
# ---------------------------------------------------------------------------


def test_leaf_values_are_leaves():
    arr = np.arange(3)
    obj = object()
    for leaf in (1, 2.5, 1j, True, "text", b"bytes", arr, np.float32(1.0), obj,
                 DictSub(a=1), ListSub([1, 2]), {1, 2}, frozenset({3})):
        leaves, td = tree.flatten(leaf)
        assert len(leaves) == 1 and leaves[0] is leaf
        assert repr(td) == "PyTreeDef(*)"
        assert td.num_leaves == 1 and td.num_nodes == 1


def test_tuple_list():
    leaves, td = tree.flatten((1, [2, 3], ()))
    assert leaves == [1, 2, 3]
    assert repr(td) == "PyTreeDef((*, [*, *], ()))"
    assert tree.unflatten(td, ["a", "b", "c"]) == ("a", ["b", "c"], ())


def test_single_element_tuple_repr():
    assert repr(tree.structure((1,))) == "PyTreeDef((*,))"
    assert repr(tree.structure([])) == "PyTreeDef([])"


def test_dict_children_in_sorted_key_order():
    d = {"b": 1, "c": 2, "a": 3}
    leaves, td = tree.flatten(d)
    assert leaves == [3, 1, 2]
    assert repr(td) == "PyTreeDef({'a': *, 'b': *, 'c': *})"
    out = tree.unflatten(td, [10, 20, 30])
    assert out == {"a": 10, "b": 20, "c": 30}
    assert list(out) == ["a", "b", "c"]  # rebuilt in sorted order, as JAX does


def test_dict_int_keys_sorted_numerically():
    assert tree.leaves({10: "ten", 2: "two", -1: "minus"}) == ["minus", "two", "ten"]


def test_unsortable_dict_keys_raise_clear_error():
    with pytest.raises(ValueError, match=r"dict keys must be sortable.*\[1, 'a'\]"):
        tree.flatten({1: "x", "a": "y"})
    with pytest.raises(ValueError, match="sortable"):
        tree.leaves([{(1,): 0, "k": 1}])
    with pytest.raises(ValueError, match="sortable"):
        tree.flatten({1: "x", "a": "y"}, is_leaf=lambda x: False)
    with pytest.raises(ValueError, match="sortable"):
        tree.flatten_with_path({1: "x", "a": "y"})


def test_none_is_a_node_without_children():
    leaves, td = tree.flatten(None)
    assert leaves == []
    assert repr(td) == "PyTreeDef(None)"
    assert td.num_leaves == 0 and td.num_nodes == 1
    assert tree.unflatten(td, []) is None
    assert tree.leaves([None, (), {}, 1]) == [1]
    assert repr(tree.structure([None, 1])) == "PyTreeDef([None, *])"


def test_none_and_leaf_structures_differ():
    assert tree.structure(None) != tree.structure(1)
    assert tree.structure([None]) != tree.structure([0])


def test_namedtuple():
    leaves, td = tree.flatten(Point(1, (2, 3)))
    assert leaves == [1, 2, 3]
    assert repr(td) == "PyTreeDef(CustomNode(namedtuple[Point], [*, (*, *)]))"
    out = tree.unflatten(td, [4, 5, 6])
    assert type(out) is Point and out == Point(4, (5, 6))


def test_typing_namedtuple():
    out = tree.map(lambda v: v * 2, TypedPoint(1, 2))
    assert type(out) is TypedPoint and out == TypedPoint(2, 4)


def test_namedtuple_classes_distinguished():
    assert tree.structure(Point(1, 2)) != tree.structure(Other(1, 2))
    assert tree.structure(Point(1, 2)) != tree.structure((1, 2))
    assert tree.structure(Point(1, 2)) == tree.structure(Point("a", "b"))


def test_ordered_dict_keeps_insertion_order():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, td = tree.flatten(od)
    assert leaves == [1, 2]
    assert repr(td) == "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"
    out = tree.unflatten(td, [3, 4])
    assert type(out) is collections.OrderedDict
    assert list(out.items()) == [("b", 3), ("a", 4)]
    # insertion order is part of the structure
    assert td != tree.structure(collections.OrderedDict([("a", 1), ("b", 2)]))
    assert td != tree.structure({"b": 1, "a": 2})


def test_defaultdict_sorted_keys_and_factory_kept():
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, td = tree.flatten(dd)
    assert leaves == [2, 1]
    assert repr(td) == ("PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], "
                        "[*, *]))")
    out = tree.unflatten(td, [5, 6])
    assert type(out) is collections.defaultdict
    assert out.default_factory is list
    assert dict(out) == {"a": 5, "b": 6}
    assert td != tree.structure(collections.defaultdict(int, {"b": 1, "a": 2}))
    assert td != tree.structure({"a": 1, "b": 2})


def test_container_subclasses_are_leaves():
    assert tree.leaves([DictSub(a=1), ListSub([1])]) == [DictSub(a=1), ListSub([1])]


def test_nested_mixture():
    t = {"layers": [Point(np.zeros(2), None), (1, {"z": 2, "y": [3]})],
         "opt": collections.OrderedDict(m=4)}
    leaves, td = tree.flatten(t)
    assert [x if not isinstance(x, np.ndarray) else "arr" for x in leaves] == [
        "arr", 1, 3, 2, 4]
    assert repr(td) == (
        "PyTreeDef({'layers': [CustomNode(namedtuple[Point], [*, None]), "
        "(*, {'y': [*], 'z': *})], 'opt': CustomNode(OrderedDict[('m',)], [*])})")
    assert td.num_leaves == 5
    # nodes: dict, list, Point, leaf, None, tuple, leaf, dict, list, leaf, leaf, OD, leaf
    assert td.num_nodes == 13
    rebuilt = tree.unflatten(td, leaves)
    assert tree.structure(rebuilt) == td
    assert all(a is b for a, b in zip(tree.leaves(rebuilt), leaves, strict=True))


def test_leaves_and_structure_helpers():
    t = {"b": (1, None), "a": [2, 3]}
    assert tree.leaves(t) == [2, 3, 1]
    assert repr(tree.structure(t)) == "PyTreeDef({'a': [*, *], 'b': (*, None)})"


def test_leaves_are_same_objects():
    a, b = np.ones(2), np.zeros(3)
    leaves = tree.leaves({"a": a, "b": [b]})
    assert leaves[0] is a and leaves[1] is b


def test_unflatten_leaf_count_errors():
    td = tree.structure((1, 2))
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 2, got 1"):
        tree.unflatten(td, [1])
    with pytest.raises(ValueError, match="Too many leaves for PyTreeDef; expected 2, got 3"):
        tree.unflatten(td, [1, 2, 3])
    with pytest.raises(ValueError, match="Too many leaves"):
        tree.unflatten(tree.structure(None), [1])


def test_unflatten_accepts_iterables_and_leaf_treedef():
    td = tree.structure({"a": 0, "b": 0})
    assert tree.unflatten(td, iter([1, 2])) == {"a": 1, "b": 2}
    assert tree.unflatten(td, (1, 2)) == {"a": 1, "b": 2}
    # a leaf treedef returns the single leaf itself, whatever it is
    assert tree.unflatten(tree.structure(0), [[1, 2]]) == [1, 2]


def test_unflatten_type_error_for_non_treedef():
    with pytest.raises(TypeError, match="PyTreeDef"):
        tree.unflatten([1, 2], [1, 2])


# ---------------------------------------------------------------------------
# is_leaf
# ---------------------------------------------------------------------------


def test_is_leaf_stops_descent():
    t = [1, (2, 3), [4, (5,)]]
    assert tree.leaves(t, is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3), 4, (5,)]
    assert repr(tree.structure(t, is_leaf=lambda x: isinstance(x, tuple))) == \
        "PyTreeDef([*, *, [*, *]])"


def test_is_leaf_applies_to_root():
    assert tree.leaves((1, 2), is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2)]


def test_is_leaf_can_make_none_a_leaf():
    leaves, td = tree.flatten([None, 1], is_leaf=lambda x: x is None)
    assert leaves == [None, 1]
    assert repr(td) == "PyTreeDef([*, *])"


def test_is_leaf_called_on_every_subtree():
    seen = []

    def spy(x):
        seen.append(x)
        return False

    t = {"a": (1, None)}
    tree.flatten(t, is_leaf=spy)
    assert seen == [t, (1, None), 1, None]


def test_is_leaf_false_everywhere_equals_default():
    t = [Point(1, {"k": (2,)}), Box(3, [4]), None]
    assert tree.flatten(t, is_leaf=lambda x: False) == tree.flatten(t)


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------


def test_treedef_equality_ignores_leaves_and_dict_order():
    assert tree.structure({"a": 1, "b": 2}) == tree.structure({"b": np.zeros(3), "a": "s"})
    assert tree.structure([1, (2,)]) == tree.structure([True, ("x",)])


def test_treedef_inequalities():
    s = tree.structure
    assert s((1, 2)) != s([1, 2])
    assert s((1, 2)) != s((1, 2, 3))
    assert s({"a": 1}) != s({"b": 1})
    assert s({"a": 1}) != s(collections.OrderedDict(a=1))
    assert s(Box(1, 2, "x")) != s(Box(1, 2, "y"))
    assert s(Box(1, 2)) == s(Box(3, 4))
    assert s(1) != 1 and not (s(1) == "PyTreeDef(*)")


def test_treedef_hash_consistent_with_eq_and_usable_as_key():
    a = tree.structure({"x": [1, 2], "y": Point(1, None)})
    b = tree.structure({"y": Point("p", None), "x": [3, 4]})
    c = tree.structure({"x": [1, 2], "y": Point(1, 2)})
    assert a == b and hash(a) == hash(b)
    assert a != c
    cache = {a: "first"}
    assert cache[b] == "first"
    assert c not in cache
    assert len({a, b, c}) == 2


def test_treedef_hash_with_custom_aux():
    assert hash(tree.structure(Box(1, 2, "t"))) == hash(tree.structure(Box(3, 4, "t")))
    assert hash(tree.structure(Params(1, 2))) == hash(tree.structure(Params(5, 6)))


def test_unhashable_aux_raises_clear_error():
    td = tree.structure([Unhashable(1, [2, 3])])
    with pytest.raises(TypeError, match=r"not hashable.*\[2, 3\].*Unhashable"):
        hash(td)
    # equality still works
    assert td == tree.structure([Unhashable(5, [2, 3])])
    assert td != tree.structure([Unhashable(5, [9])])


def test_treedef_eq_with_array_aux_raises_type_error():
    a = tree.structure(Unhashable(1, [np.zeros(2)]))
    b = tree.structure(Unhashable(1, [np.ones(2)]))
    with pytest.raises(TypeError, match="aux data must be comparable"):
        _ = a == b


def test_treedef_num_leaves_nodes():
    td = tree.structure((1, [2, None], {"a": 3}))
    assert td.num_leaves == 3
    assert td.num_nodes == 7  # tuple, leaf, list, leaf, None, dict, leaf
    assert tree.structure(()).num_nodes == 1
    assert tree.structure(()).num_leaves == 0


def test_treedef_children():
    td = tree.structure((1, [2, None], {"a": 3}))
    kids = td.children()
    assert [repr(k) for k in kids] == ["PyTreeDef(*)", "PyTreeDef([*, None])",
                                       "PyTreeDef({'a': *})"]
    assert [k.num_leaves for k in kids] == [1, 1, 1]
    assert tree.structure(1).children() == []
    assert tree.structure(None).children() == []
    assert tree.treedef_children(td) == kids


def test_treedef_node_data():
    assert tree.structure({"b": 1, "a": 2}).node_data() == (dict, ("a", "b"))
    assert tree.structure(1).node_data() is None
    assert tree.structure((1,)).node_data() == (tuple, None)
    assert tree.structure(Box(1, 2, "t")).node_data() == (Box, "t")


def test_treedef_is_immutable_and_not_constructible():
    td = tree.structure([1])
    with pytest.raises(AttributeError):
        td.num_leaves = 5
    with pytest.raises(AttributeError):
        td.something = 1
    with pytest.raises(TypeError, match="cannot be constructed"):
        PyTreeDef()


def test_treedef_str_is_repr():
    td = tree.structure((1, {"a": 2}))
    assert str(td) == repr(td) == "PyTreeDef((*, {'a': *}))"


def test_treedef_pickle_and_copy():
    td = tree.structure({"a": Point(1, [2]), "b": collections.defaultdict(int, k=1),
                         "c": Params(1, 2, "n"), "d": None})
    assert pickle.loads(pickle.dumps(td)) == td
    assert copy.copy(td) is td and copy.deepcopy(td) is td
    back = pickle.loads(pickle.dumps(td))
    assert hash(back) == hash(td)
    assert back.num_leaves == td.num_leaves == 5


def test_custom_node_repr():
    assert repr(tree.structure(Box(1, [2], "t"))) == "PyTreeDef(CustomNode(Box['t'], [*, [*]]))"
    assert repr(tree.structure(Params(1, 2))) == \
        "PyTreeDef(CustomNode(Params[('dense',)], [*, *]))"


def test_treedef_is_leaf():
    # As in JAX: num_nodes == 1 (so None and empty containers count too).
    assert tree.treedef_is_leaf(tree.structure(1))
    assert tree.treedef_is_leaf(tree.structure(None))
    assert tree.treedef_is_leaf(tree.structure(()))
    assert not tree.treedef_is_leaf(tree.structure([1]))
    assert not tree.treedef_is_leaf(tree.structure({"a": None}))


def test_treedef_tuple_and_compose():
    td = tree.treedef_tuple([tree.structure(1), tree.structure([2, 3]), tree.structure(None)])
    assert repr(td) == "PyTreeDef((*, [*, *], None))"
    assert td.num_leaves == 3
    assert td == tree.structure((0, [0, 0], None))
    composed = tree.structure((0, 0)).compose(tree.structure([0, None]))
    assert repr(composed) == "PyTreeDef(([*, None], [*, None]))"
    assert composed.num_leaves == 2
    assert composed == tree.structure(([1, None], [2, None]))
    with pytest.raises(TypeError):
        tree.structure(1).compose([1])


# ---------------------------------------------------------------------------
# flatten_up_to
# ---------------------------------------------------------------------------


def test_flatten_up_to_same_structure():
    td = tree.structure((0, {"a": 0, "b": [0]}))
    assert td.flatten_up_to((1, {"b": [3], "a": 2})) == [1, 2, 3]


def test_flatten_up_to_prefix_returns_subtrees():
    td = tree.structure((0, {"a": 0}))
    assert td.flatten_up_to((1, {"a": [2, 3]})) == [1, [2, 3]]
    assert tree.structure(0).flatten_up_to({"any": (1, 2)}) == [{"any": (1, 2)}]
    # None at a leaf position of the prefix is just a subtree
    assert tree.structure([0, 0]).flatten_up_to([None, (1,)]) == [None, (1,)]


def test_flatten_up_to_custom_and_namedtuple_nodes():
    td = tree.structure([Box(0, 0, "t"), Point(0, 0), Params(0, 0)])
    got = td.flatten_up_to([Box([1], 2, "t"), Point(3, (4,)), Params(5, {"k": 6})])
    assert got == [[1], 2, 3, (4,), 5, {"k": 6}]


@pytest.mark.parametrize("prefix, full, path, detail", [
    ((0, 0), (1, 2, 3), "the root", r"tuple arity mismatch: expected length 2, got length 3"),
    ((0, 0), [1, 2], "the root", r"expected tuple, got list"),
    ([0], (1,), "the root", r"expected list, got tuple"),
    ((0, 0), 5, "the root", r"expected tuple, got leaf of type int"),
    ({"a": 0}, {"b": 1}, "the root",
     r"dict key mismatch: expected keys \['a'\], got keys \['b'\] "
     r"\(missing \['a'\], unexpected \['b'\]\)"),
    ({"a": 0, "b": 0}, {"a": 1}, "the root", r"dict key mismatch.*missing \['b'\]"),
    (None, 1, "the root", r"expected None, got leaf of type int"),
    (Point(0, 0), (1, 2), "the root", r"expected namedtuple Point, got tuple"),
    (Point(0, 0), Other(1, 2), "the root", r"expected namedtuple Point, got namedtuple Other"),
    ((0, 0), Point(1, 2), "the root", r"expected tuple, got namedtuple Point"),
    ({"a": [0, (0, 0)]}, {"a": [1, (2,)]}, r"key path \['a'\]\[1\]",
     r"tuple arity mismatch: expected length 2, got length 1"),
    ([Point(0, (0,))], [Point(1, (2, 3))], r"key path \[0\]\.y", r"tuple arity mismatch"),
    (collections.OrderedDict(a=0, b=0), collections.OrderedDict(b=0, a=0), "the root",
     r"OrderedDict node metadata mismatch: expected \('a', 'b'\), got \('b', 'a'\)"),
    (collections.defaultdict(list, a=0), collections.defaultdict(int, a=0), "the root",
     r"defaultdict node metadata mismatch"),
    ({"a": 0}, collections.OrderedDict(a=1), "the root", r"expected dict, got OrderedDict"),
    ([Box(0, 0, "x")], [Box(0, 0, "y")], r"key path \[0\]",
     r"Box node metadata mismatch: expected 'x', got 'y'"),
    ([Box(0, (0,))], [Box(0, (1, 2))], r"key path \[0\]\[<flat index 1>\]",
     r"tuple arity mismatch"),
    (Keyed(0, [0]), Keyed(0, [1, 2]), r"key path \.second", r"list arity mismatch"),
    (Params(0, 0), Params(0, 0, "other"), "the root", r"Params node metadata mismatch"),
    ({"p": Params([0], 0)}, {"p": Params([1, 2], 0)}, r"key path \['p'\]\.w",
     r"list arity mismatch: expected length 1, got length 2"),
    (Box(0, 0), Keyed(0, 0), "the root", r"expected Box, got Keyed"),
])
def test_flatten_up_to_mismatch_names_path_and_kind(prefix, full, path, detail):
    td = tree.structure(prefix)
    with pytest.raises(ValueError) as info:
        td.flatten_up_to(full)
    msg = str(info.value)
    assert msg.startswith("pytree structure mismatch at ")
    assert re.search(path, msg), msg
    assert re.search(detail, msg), msg


def test_flatten_up_to_truncates_huge_reprs():
    td = tree.structure((0, 0))
    with pytest.raises(ValueError) as info:
        td.flatten_up_to(list(range(10_000)))
    assert len(str(info.value)) < 500


# ---------------------------------------------------------------------------
# map
# ---------------------------------------------------------------------------


def test_map_single_tree():
    assert tree.map(lambda x: x * 2, {"a": 1, "b": (2, None)}) == {"a": 2, "b": (4, None)}
    assert tree.map(lambda x: x + 1, 5) == 6
    assert tree.map(lambda x: x, None) is None
    assert tree.map(lambda x: 1 / 0, [None, (), {}]) == [None, (), {}]


def test_map_preserves_types():
    out = tree.map(str, [Point(1, 2), collections.OrderedDict(b=1, a=2), Box(1, 2, "t"),
                         Params(1, 2), collections.defaultdict(list, z=1)])
    assert out[0] == Point("1", "2") and type(out[0]) is Point
    assert list(out[1].items()) == [("b", "1"), ("a", "2")]
    assert out[2] == Box("1", "2", "t")
    assert out[3] == Params("1", "2")
    assert type(out[4]) is collections.defaultdict and out[4].default_factory is list


def test_map_several_trees():
    assert tree.map(lambda x, y: x + y, (1, 2), (10, 20)) == (11, 22)
    assert tree.map(lambda x, y, z: x * y + z, {"a": 1, "b": 2}, {"b": 3, "a": 4},
                    {"a": 100, "b": 200}) == {"a": 104, "b": 206}


def test_map_prefix_structure():
    out = tree.map(lambda x, y: (x, y), [1, 2], [(3, 4), {"k": 5}])
    assert out == [(1, (3, 4)), (2, {"k": 5})]
    out = tree.map(lambda axis, arg: axis, (0, None), ([1, 2], 3), is_leaf=lambda x: x is None)
    assert out == (0, None)


def test_map_none_in_first_tree_is_a_node():
    # JAX: None is a node with no children, so f is not called there, and the
    # other trees must have None at the same place.
    assert tree.map(lambda x, y: x + y, (None, 1), (None, 2)) == (None, 3)
    with pytest.raises(ValueError, match=r"key path \[0\]: expected None"):
        tree.map(lambda x, y: x, (None, 1), (2, 1))
    # None in a later tree at a leaf position is passed through
    assert tree.map(lambda x, y: (x, y), (1, 2), (None, 1)) == ((1, None), (2, 1))


def test_map_mismatch_error_names_argument_and_path():
    with pytest.raises(ValueError) as info:
        tree.map(lambda a, b: a, {"a": [1, (2, 3)]}, {"a": [1, (2,)]})
    msg = str(info.value)
    assert "rest[0]" in msg
    assert "key path ['a'][1]" in msg
    assert "tuple arity mismatch: expected length 2, got length 1" in msg
    with pytest.raises(ValueError, match=r"rest\[1\].*the root.*expected list, got tuple"):
        tree.map(lambda a, b, c: a, [1], [2], (3,))
    with pytest.raises(ValueError, match=r"dict key mismatch"):
        tree.map(lambda a, b: a, {"a": 1}, {"b": 1})


def test_map_is_leaf_only_applies_to_first_tree():
    out = tree.map(lambda x: len(x) if isinstance(x, tuple) else x, [1, (2, 3)],
                   is_leaf=lambda x: isinstance(x, tuple))
    assert out == [1, 2]
    out = tree.map(lambda x, y: (x, y), [(1, 2)], [[3, 4]], is_leaf=lambda x: isinstance(x, tuple))
    assert out == [((1, 2), [3, 4])]


def test_map_calls_f_in_leaf_order():
    calls = []
    tree.map(calls.append, {"b": 2, "a": [1, None], "c": Point(3, 4)})
    assert calls == [1, 2, 3, 4]


# ---------------------------------------------------------------------------
# reduce / all / transpose
# ---------------------------------------------------------------------------


def test_reduce():
    assert tree.reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]}) == 6
    assert tree.reduce(lambda a, b: a + b, (1, [2, 3]), 10) == 16
    assert tree.reduce(lambda a, b: a + b, (), 5) == 5
    assert tree.reduce(lambda a, b: a + [b], {"b": 1, "a": 2}, []) == [2, 1]
    with pytest.raises(TypeError, match="empty"):
        tree.reduce(lambda a, b: a + b, [None, ()])
    assert tree.reduce(lambda a, b: a + len(b), [(1, 2), (3,)], 0,
                       is_leaf=lambda x: isinstance(x, tuple)) == 3


def test_reduce_initializer_none_is_an_initializer():
    assert tree.reduce(lambda a, b: [a, b], [1], None) == [None, 1]


def test_all():
    assert tree.all([True, (1, None)]) is True
    assert tree.all({"a": 0}) is False
    assert tree.all([]) is True
    assert tree.all(None) is True
    assert tree.all((1, [0])) is False
    # is_leaf: the subtree [0] becomes a (truthy, non-empty list) leaf
    assert tree.all((1, [0]), is_leaf=lambda x: x == [0]) is True


def test_transpose_explicit_inner():
    outer = tree.structure([0, 0])
    inner = tree.structure((0, 0))
    assert tree.transpose(outer, inner, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])


def test_transpose_inferred_inner():
    outer = tree.structure([0, 0, 0])
    t = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    assert tree.transpose(outer, None, t) == {"a": [1, 3, 5], "b": [2, 4, 6]}


def test_transpose_dict_outer_namedtuple_inner():
    outer = tree.structure({"x": 0, "y": 0})
    out = tree.transpose(outer, None, {"x": Point(1, 2), "y": Point(3, 4)})
    assert out == Point({"x": 1, "y": 3}, {"x": 2, "y": 4})
    assert type(out) is Point


def test_transpose_mismatch():
    outer = tree.structure([0, 0])
    inner = tree.structure((0, 0))
    with pytest.raises(TypeError, match=r"5 leaves.*4 leaves"):
        tree.transpose(outer, inner, [(1, 2), (3, 4, 5)])


def test_transpose_roundtrip():
    outer = tree.structure([0, 0])
    inner = tree.structure({"a": 0, "b": 0})
    t = [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    once = tree.transpose(outer, inner, t)
    assert tree.transpose(inner, outer, once) == t


# ---------------------------------------------------------------------------
# key paths
# ---------------------------------------------------------------------------


def test_key_str_and_repr():
    assert str(SequenceKey(0)) == "[0]"
    assert str(DictKey("a")) == "['a']"
    assert str(DictKey(1)) == "[1]"
    assert str(GetAttrKey("name")) == ".name"
    assert str(FlattenedIndexKey(2)) == "[<flat index 2>]"
    assert repr(SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(DictKey("a")) == "DictKey(key='a')"
    assert repr(GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(FlattenedIndexKey(1)) == "FlattenedIndexKey(key=1)"


def test_keys_are_frozen_hashable_and_comparable():
    assert SequenceKey(1) == SequenceKey(1) and SequenceKey(1) != SequenceKey(2)
    assert hash(DictKey("a")) == hash(DictKey("a"))
    assert DictKey(0) != SequenceKey(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        SequenceKey(1).idx = 3


def test_keystr():
    path = (SequenceKey(0), DictKey("a"), GetAttrKey("x"))
    assert tree.keystr(path) == "[0]['a'].x"
    assert tree.keystr(path, simple=True, separator="/") == "0/a/x"
    assert tree.keystr(()) == ""
    assert tree.keystr((FlattenedIndexKey(3),), simple=True) == "3"


def test_keystr_jax_docs_example():
    params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
    got = [tree.keystr(p) for p, _ in tree.leaves_with_path(params)]
    assert got == ["['foo']['bar']['bat'][0]", "['foo']['bar']['bat'][1]",
                   "['foo']['bar']['baz']"]
    got = [tree.keystr(p, simple=True, separator="/") for p, _ in tree.leaves_with_path(params)]
    assert got == ["foo/bar/bat/0", "foo/bar/bat/1", "foo/bar/baz"]


def test_paths_for_every_node_type():
    t = (
        [10],
        {"k": 11},
        Point(12, None),
        collections.OrderedDict(z=13),
        collections.defaultdict(list, {"d": 14}),
        Box(15, 16),
        Keyed(17, 18),
        Params(19, 20),
    )
    pairs = tree.leaves_with_path(t)
    assert [(tree.keystr(p), x) for p, x in pairs] == [
        ("[0][0]", 10),
        ("[1]['k']", 11),
        ("[2].x", 12),
        ("[3]['z']", 13),
        ("[4]['d']", 14),
        ("[5][<flat index 0>]", 15),
        ("[5][<flat index 1>]", 16),
        ("[6].first", 17),
        ("[6].second", 18),
        ("[7].w", 19),
        ("[7].b", 20),
    ]
    assert pairs[0][0] == (SequenceKey(0), SequenceKey(0))
    assert pairs[1][0] == (SequenceKey(1), DictKey("k"))
    assert pairs[2][0] == (SequenceKey(2), GetAttrKey("x"))
    assert pairs[5][0] == (SequenceKey(5), FlattenedIndexKey(0))


def test_flatten_with_path_treedef_matches_flatten():
    t = {"b": [7], "a": None, "c": (Point(1, 2), Box(3, 4))}
    pairs, td = tree.flatten_with_path(t)
    leaves, td2 = tree.flatten(t)
    assert td == td2
    assert [x for _, x in pairs] == leaves
    assert td.num_leaves == len(pairs)


def test_flatten_with_path_root_leaf_and_is_leaf():
    assert tree.leaves_with_path(5) == [((), 5)]
    assert tree.leaves_with_path(None) == []
    pairs = tree.leaves_with_path([(1, 2), 3], is_leaf=lambda x: isinstance(x, tuple))
    assert pairs == [((SequenceKey(0),), (1, 2)), ((SequenceKey(1),), 3)]


def test_map_with_path():
    out = tree.map_with_path(lambda p, x: (tree.keystr(p), x), {"a": 1, "b": [2]})
    assert out == {"a": ("['a']", 1), "b": [("['b'][0]", 2)]}
    out = tree.map_with_path(lambda p, x, y: (tree.keystr(p), x, y), {"a": 1}, {"a": [2]})
    assert out == {"a": ("['a']", 1, [2])}
    with pytest.raises(ValueError, match=r"rest\[0\].*key path \['a'\]"):
        tree.map_with_path(lambda p, x, y: x, {"a": (1,)}, {"a": [1]})


# ---------------------------------------------------------------------------
# register_node / register_dataclass
# ---------------------------------------------------------------------------


def test_register_node_round_trip():
    t = [Box(1, (2, 3), "tag"), 4]
    leaves, td = tree.flatten(t)
    assert leaves == [1, 2, 3, 4]
    assert tree.unflatten(td, leaves) == t
    assert tree.map(lambda x: x * 10, t) == [Box(10, (20, 30), "tag"), 40]


def test_register_node_unflatten_receives_tuple_of_children():
    UNFLATTEN_CHILDREN_TYPES.clear()
    tree.map(lambda x: x, Box(1, 2))
    assert UNFLATTEN_CHILDREN_TYPES == [tuple]


def test_register_node_generator_children():
    g = GenChildren(1, [2, 3])
    leaves, td = tree.flatten(g)
    assert leaves == [1, 2, 3]
    assert td.flatten_up_to(GenChildren(1, [2, 3])) == [1, 2, 3]
    assert tree.leaves(tree.unflatten(td, [4, 5, 6]).items) == [4, 5, 6]
    assert [tree.keystr(p) for p, _ in tree.leaves_with_path(g)] == [
        "[<flat index 0>]", "[<flat index 1>][0]", "[<flat index 1>][1]"]


def test_register_node_duplicate_and_builtin_rejected():
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tree.register_node(Box, lambda b: ((), None), lambda a, c: Box(0, 0))
    for builtin in (tuple, list, dict, type(None), collections.OrderedDict,
                    collections.defaultdict):
        with pytest.raises(ValueError, match="Duplicate"):
            tree.register_node(builtin, lambda b: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="Duplicate"):
        tree.register_dataclass(Params)


def test_register_node_bad_arguments():
    with pytest.raises(TypeError, match="expected a class"):
        tree.register_node(Box(1, 2), lambda b: ((), None), lambda a, c: None)
    with pytest.raises(TypeError, match="callable"):
        tree.register_node(type("Fresh", (), {}), None, lambda a, c: None)


def test_register_node_after_type_seen_as_leaf():
    class Late:
        def __init__(self, v):
            self.v = v

    assert tree.leaves([Late(1)])[0].v == 1  # a leaf before registration
    tree.register_node(Late, lambda l: ((l.v,), None), lambda a, c: Late(*c))
    assert tree.leaves([Late(1)]) == [1]


def test_register_namedtuple_overrides_default_handling():
    NT = collections.namedtuple("NT", "p q")
    assert tree.leaves(NT(1, 2)) == [1, 2]
    tree.register_node(NT, lambda n: ((n.q,), n.p), lambda p, c: NT(p, c[0]))
    assert tree.leaves(NT(1, 2)) == [2]
    assert tree.map(lambda x: x + 1, NT(1, 2)) == NT(1, 3)


def test_registered_subclass_is_a_leaf():
    class BoxSub(Box):
        pass

    assert len(tree.leaves(BoxSub(1, 2))) == 1


def test_is_leaf_overrides_registered_node():
    b = Box(1, 2)
    assert tree.leaves([b], is_leaf=lambda x: isinstance(x, Box)) == [b]


def test_register_dataclass_inferred_fields():
    p = Params(np.ones(2), 3)
    leaves, td = tree.flatten(p)
    assert leaves[1] == 3 and leaves[0] is p.w
    assert repr(td) == "PyTreeDef(CustomNode(Params[('dense',)], [*, *]))"
    out = tree.unflatten(td, ["w", "b"])
    assert out == Params("w", "b", "dense")
    assert tree.structure(Params(1, 2, "other")) != td
    assert [tree.keystr(p) for p, _ in tree.leaves_with_path(p)] == [".w", ".b"]


def test_register_dataclass_returns_class_and_frozen_works():
    f = Frozen([1, 2], scale=2.0)
    out = tree.map(lambda x: x * 3, f)
    assert out == Frozen([3, 6], scale=2.0)
    assert tree.leaves(f) == [1, 2]


def test_register_dataclass_explicit_fields_decorator_form():
    leaves, td = tree.flatten(Explicit(x=(1, 2), n=7))
    assert leaves == [1, 2]
    assert td.node_data() == (Explicit, (7,))
    assert tree.unflatten(td, [3, 4]) == Explicit(x=(3, 4), n=7)


def test_register_dataclass_non_dataclass_with_fields():
    p = PlainAttrs(1, [2], "fast")
    leaves, td = tree.flatten(p)
    assert leaves == [1, 2]
    out = tree.unflatten(td, [5, 6])
    assert (out.x, out.y, out.mode) == (5, [6], "fast")
    assert [tree.keystr(k) for k, _ in tree.leaves_with_path(p)] == [".x", ".y[0]"]


def test_register_dataclass_init_false_and_drop_fields():
    w = WithDerived(x=[1, 2])
    w.cache = "ignored"
    w.scratch = "dropped"
    leaves, td = tree.flatten(w)
    assert leaves == [1, 2]
    out = tree.unflatten(td, [3, 4])
    assert out.x == [3, 4] and out.cache is None and out.scratch is None


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class D:
        x: int
        n: int

    with pytest.raises(TypeError, match="must both be given"):
        tree.register_dataclass(D, data_fields=["x"])
    with pytest.raises(ValueError, match=r"Missing: \['n'\]"):
        tree.register_dataclass(D, data_fields=["x"], meta_fields=[])
    with pytest.raises(ValueError, match=r"Not init fields: \['zz'\]"):
        tree.register_dataclass(D, data_fields=["x", "zz"], meta_fields=["n"])
    with pytest.raises(ValueError, match="overlap"):
        tree.register_dataclass(D, data_fields=["x", "n"], meta_fields=["n"])
    with pytest.raises(TypeError, match="not a dataclass"):
        tree.register_dataclass(type("NotDC", (), {}))
    with pytest.raises(TypeError, match="strings"):
        tree.register_dataclass(D, data_fields="x", meta_fields="n")


def test_register_dataclass_unhashable_meta():
    @dataclasses.dataclass
    class WithListMeta:
        x: typing.Any
        opts: list = dataclasses.field(default_factory=list, metadata=dict(static=True))

    tree.register_dataclass(WithListMeta)
    td = tree.structure(WithListMeta(1, ["a"]))
    with pytest.raises(TypeError, match="not hashable"):
        hash(td)


# ---------------------------------------------------------------------------
# broadcast_prefix
# ---------------------------------------------------------------------------


def test_broadcast_prefix():
    assert tree.broadcast_prefix((0, None), ([1, 2], {"a": 3}),
                                 is_leaf=lambda x: x is None) == [0, 0, None]
    assert tree.broadcast_prefix(1, {"a": [1, 2], "b": 3}) == [1, 1, 1]
    assert tree.broadcast_prefix({"a": 0, "b": 1}, {"a": (1, 2), "b": None}) == [0, 0]
    with pytest.raises(ValueError, match="structure mismatch"):
        tree.broadcast_prefix((0, 1), [1, 2])


# ---------------------------------------------------------------------------
# Deep trees
# ---------------------------------------------------------------------------


def _nest(depth, make):
    t = 0
    for _ in range(depth):
        t = make(t)
    return t


@pytest.mark.parametrize("make", [lambda t: [t], lambda t: (t, 1), lambda t: {"k": t},
                                  lambda t: Point(t, None), lambda t: Box(t, 2)])
def test_deep_trees(make):
    depth = 500
    t = _nest(depth, make)
    leaves, td = tree.flatten(t)
    assert td.num_nodes >= depth
    assert tree.unflatten(td, leaves) is not None
    assert tree.structure(tree.map(lambda x: x, t)) == td
    assert hash(td) == hash(tree.structure(_nest(depth, make)))
    assert td.flatten_up_to(t) == leaves
    assert len(tree.leaves_with_path(t)) == len(leaves)
    assert len(repr(td)) > depth


# ---------------------------------------------------------------------------
# Hypothesis properties
# ---------------------------------------------------------------------------

leaf_values = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans(),
                        st.floats(allow_nan=False, width=32))
dict_keys = st.text(alphabet="abcdef", min_size=1, max_size=2)


def _extend(children):
    return st.one_of(
        st.tuples(children, children),
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4),
        st.dictionaries(dict_keys, children, max_size=4),
        st.builds(Point, children, children),
        st.dictionaries(dict_keys, children, max_size=3).map(collections.OrderedDict),
        st.dictionaries(dict_keys, children, max_size=3).map(
            lambda d: collections.defaultdict(list, d)),
    )


trees = st.recursive(st.one_of(leaf_values, st.none()), _extend, max_leaves=25)


def _same(a, b):
    """Exact structural equality, including container types and dict order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        if isinstance(a, collections.OrderedDict) and list(a) != list(b):
            return False
        if isinstance(a, collections.defaultdict) and a.default_factory is not b.default_factory:
            return False
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=200, deadline=None)
@given(trees)
def test_prop_flatten_unflatten_roundtrip(t):
    leaves, td = tree.flatten(t)
    assert td.num_leaves == len(leaves)
    assert _same(tree.unflatten(td, leaves), t)
    assert tree.structure(tree.unflatten(td, leaves)) == td


@settings(max_examples=200, deadline=None)
@given(trees)
def test_prop_map_identity(t):
    out = tree.map(lambda x: x, t)
    assert out == t
    assert _same(out, t)


@settings(max_examples=150, deadline=None)
@given(trees)
def test_prop_structure_and_paths_consistent(t):
    leaves, td = tree.flatten(t)
    pairs, td2 = tree.flatten_with_path(t)
    assert td2 == td and hash(td2) == hash(td)
    assert [x for _, x in pairs] == leaves
    assert len({p for p, _ in pairs}) == len(pairs)  # paths are unique
    assert td.flatten_up_to(t) == leaves
    assert sum(c.num_leaves for c in td.children()) == td.num_leaves or tree.treedef_is_leaf(td)
    assert pickle.loads(pickle.dumps(td)) == td
    # replacing the leaves keeps the structure
    assert tree.structure(tree.map(lambda x: 0, t)) == td


@settings(max_examples=150, deadline=None)
@given(trees, trees)
def test_prop_equality_matches_structure(a, b):
    ta, tb = tree.structure(a), tree.structure(b)
    if ta == tb:
        assert hash(ta) == hash(tb)
        assert tree.structure(tree.map(lambda x, y: y, a, b)) == tb
    # flatten_up_to succeeds when the structures are equal or a's is a prefix
    # of b's; each piece is then a subtree of b, so their leaves make up b's.
    try:
        parts = ta.flatten_up_to(b)
    except ValueError:
        assert ta != tb
    else:
        assert len(parts) == ta.num_leaves
        assert sum(len(tree.leaves(p)) for p in parts) == tb.num_leaves


# ---------------------------------------------------------------------------
# Docstring examples
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("module", [pytree_mod, tree], ids=["core.pytree", "tree"])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_public_api_has_docstrings_and_hints():
    for name in tree.__all__:
        obj = getattr(tree, name)
        if callable(obj) and name not in ("KeyEntry", "KeyPath"):
            assert obj.__doc__ and ">>>" in obj.__doc__, name
