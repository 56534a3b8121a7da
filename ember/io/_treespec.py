"""A pytree's structure as JSON: node types by their names in ember's pytree registry, leaves by tensor name.

Nodes: ``{"k": "tuple"|"list", "c": [...]}``, ``{"k": "dict"|"odict", "keys": [...], "c": [...]}``,
``{"k": "ddict", "factory": v, ...}``, ``{"k": "none"}``, ``{"k": "ntuple", "type": "mod:Qual", "fields": [...],
"c": [...]}``, ``{"k": "module", "type": ..., "dynamic": [...], "static": {field: v}, "c": [...]}`` and
``{"k": "node", "type": ..., "aux": v, "c": [...]}`` for other registered types (``nn.State``, registered
dataclasses). Leaves: ``{"k": "tensor", "name": ..., "as": "array"|"ndarray"|"scalar", "complex": bool}`` and
``{"k": "value", "name": ..., "v": v}`` for Python scalars and strings.

Values ``v`` (a module's static fields, dict keys, aux data) are JSON's null, booleans, integers, finite
floats and strings, or tagged objects: ``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": [[k, v], ...]}``,
``{"float": "nan"}``, ``{"complex": [re, im]}``, ``{"dtype": "float32"}``, ``{"builtin": "list"}`` and
``{"fn": "ember.nn.functional.relu", "plain": bool}`` (one of ember's public functions). Loading looks
types up among the registered pytree node types (and namedtuple classes of modules already imported),
functions among ember's namespaces; it never imports a module, unpickles or evaluates anything.
"""

from __future__ import annotations

import collections
import math
import sys
from typing import Any

import numpy as np

from ember.core.array import Array
from ember.core.pytree import _registry
from ember.core.pytree._keys import keystr
from ember.nn._module import Module

__all__: list[str] = []

MAX_DEPTH = 200

# The namespaces whose public functions a static field may hold (looked up in sys.modules, never imported).
NAMESPACES = ("ember.nn.functional", "ember.nn.init", "ember.nn", "ember.numpy", "ember.numpy.linalg",
              "ember.numpy.fft", "ember.lax", "ember.scipy.special", "ember.random", "ember.optim", "ember.tree",
              "ember")  # fmt: skip
_BUILTINS = {t.__name__: t for t in (list, dict, set, tuple, int, float, str, bool, complex)}


class Unsaveable(Exception):
    """A value with no JSON form (raised while encoding; ``save`` turns it into a CheckpointError)."""


def type_name(t: type) -> str:
    """A type's JSON name, ``module:qualname``."""
    return f"{t.__module__}:{t.__qualname__}"


# --- names ------------------------------------------------------------------------------------------------


def join(prefix: str, key: Any) -> str:
    """A child's path: the parent's and the child's key (bare: ``0``, ``weight``), joined by a dot."""
    part = keystr((key,), simple=True)
    return f"{prefix}.{part}" if prefix and part else prefix or part


class Namer:
    """Tensor names: the leaf's key path (``opt.mu.0.weight``), a module's leaves as named_parameters names."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def unique(self, name: str) -> str:
        if name not in self.used:
            self.used.add(name)
            return name
        i = 1
        while f"{name}#{i}" in self.used:
            i += 1
        self.used.add(f"{name}#{i}")
        return f"{name}#{i}"


def module_names(module: Module, prefix: str) -> list[str | None]:
    """The named_parameters name of each of ``module``'s leaves, in flatten order (None where it has none).

    The leaves are swapped for distinct placeholder arrays first, so that a template whose leaves are
    ``ShapeDtypeStruct``s (or tied arrays) is named as the module of arrays is."""
    from ember.core.pytree import tree_flatten

    leaves, treedef = tree_flatten(module)
    placeholders = [np.empty(0) for _ in leaves]
    try:
        named = treedef.unflatten(placeholders).named_parameters(prefix)
    except Exception:  # a user's module whose names cannot be listed: key paths are used instead
        return [None] * len(leaves)
    by_id = {}
    for name, array in named:
        by_id.setdefault(id(array), name)
    return [by_id.get(id(p)) for p in placeholders]


# --- values -----------------------------------------------------------------------------------------------


def _function_names() -> dict[int, tuple[str, bool]]:
    found: dict[int, tuple[str, bool]] = {}
    for ns in NAMESPACES:
        module = sys.modules.get(ns)
        if module is None:
            continue
        for name, value in list(vars(module).items()):
            if name.startswith("_") or not callable(value) or isinstance(value, type):
                continue
            if not str(getattr(value, "__module__", "")).startswith("ember"):
                continue
            found.setdefault(id(value), (f"{ns}.{name}", False))
            plain = getattr(value, "__wrapped__", None)
            if plain is not None and getattr(value, "__ember_boundary__", False):
                found.setdefault(id(plain), (f"{ns}.{name}", True))
    return found


def encode_value(v: Any, where: str) -> Any:
    if v is None or type(v) in (bool, int, str):
        return v
    if type(v) is float:
        return v if math.isfinite(v) else {"float": repr(v)}
    if type(v) is tuple:
        return {"tuple": [encode_value(x, where) for x in v]}
    if type(v) is list:
        return {"list": [encode_value(x, where) for x in v]}
    if type(v) is dict:
        return {"dict": [[encode_value(k, where), encode_value(x, where)] for k, x in v.items()]}
    if type(v) is complex:
        return {"complex": [encode_value(v.real, where), encode_value(v.imag, where)]}
    if isinstance(v, np.dtype):
        return {"dtype": v.name}
    if isinstance(v, type):
        if v in _BUILTINS.values():
            return {"builtin": v.__name__}
        if isinstance(_registry._dispatch.get(v), _registry._NodeKind):
            return {"type": type_name(v)}
        if issubclass(v, np.generic):
            return {"dtype": np.dtype(v).name, "scalar_type": True}
    if callable(v):
        found = _function_names().get(id(v))
        if found is not None:
            return {"fn": found[0], "plain": found[1]}
    raise Unsaveable(f"{where} holds {short(v)}, which has no JSON form (static values must be None, bools, "
                     "ints, floats, strings, dtypes, ember's own functions, or tuples/lists/dicts of them)")


def short(v: Any) -> str:
    """``v`` for an error message: a function by its name, anything else by its repr cut to 80 characters."""
    if callable(v) and hasattr(v, "__qualname__"):
        return f"the function {getattr(v, '__module__', '?')}.{v.__qualname__}"
    r = repr(v)
    return r if len(r) < 80 else r[:77] + "..."


def decode_value(v: Any, fail: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise fail("a value nests too deeply")
    if v is None or type(v) in (bool, int, str, float):
        return v
    if not isinstance(v, dict) or len(v) not in (1, 2):
        raise fail(f"the value {short(v)} is not one of ember's encoded forms")
    tag = next(iter(v))
    x = v[tag]
    if tag in ("tuple", "list") and isinstance(x, list) and len(v) == 1:
        items = [decode_value(i, fail, depth + 1) for i in x]
        return tuple(items) if tag == "tuple" else items
    if tag == "dict" and isinstance(x, list) and len(v) == 1:
        if not all(isinstance(p, list) and len(p) == 2 for p in x):
            raise fail("a dict value is not a list of [key, value] pairs")
        try:
            return {decode_value(k, fail, depth + 1): decode_value(i, fail, depth + 1) for k, i in x}
        except TypeError:
            raise fail("a dict value has an unhashable key") from None
    if tag == "float" and x in ("nan", "inf", "-inf") and len(v) == 1:
        return float(x)
    if tag == "complex" and isinstance(x, list) and len(x) == 2 and len(v) == 1:
        re, im = (decode_value(i, fail, depth + 1) for i in x)
        if type(re) is not float or type(im) is not float:
            raise fail("a complex value's parts are not floats")
        return complex(re, im)
    if tag == "dtype" and isinstance(x, str):
        dtype = _dtype(x, fail)
        if len(v) == 2:
            if v.get("scalar_type") is not True:
                raise fail(f"the value {short(v)} is not one of ember's encoded forms")
            return dtype.type
        return dtype
    if tag == "builtin" and x in _BUILTINS and len(v) == 1:
        return _BUILTINS[x]
    if tag == "type" and isinstance(x, str) and len(v) == 1:
        return find_type(x, fail)
    if tag == "fn" and isinstance(x, str) and len(v) == 2 and type(v.get("plain")) is bool:
        return find_function(x, v["plain"], fail)
    raise fail(f"the value {short(v)} is not one of ember's encoded forms")


def _dtype(name: str, fail: Any) -> np.dtype:
    from ember.core import dtypes

    for dt in dtypes.ALL:
        if np.dtype(dt).name == name:
            return np.dtype(dt)
    raise fail(f"{name[:40]!r} is not one of ember's dtypes")


def find_function(name: str, plain: bool, fail: Any) -> Any:
    ns, _, attr = name.rpartition(".")
    module = sys.modules.get(ns) if ns in NAMESPACES else None
    value = vars(module).get(attr) if module is not None and not attr.startswith("_") else None
    if value is None or not callable(value) or not str(getattr(value, "__module__", "")).startswith("ember"):
        raise fail(f"it names the function {name[:100]!r}, which is not one of ember's public functions")
    if plain and getattr(value, "__ember_boundary__", False):
        value = value.__wrapped__
    return value


def find_type(name: str, fail: Any, namedtuple_fields: list | None = None) -> type:
    """A registered pytree node type by ``module:qualname`` (the latest registered, if redefined)."""
    found = None
    for t, kind in list(_registry._dispatch.items()):
        if isinstance(kind, _registry._NodeKind) and type_name(t) == name:
            found = t
    if found is None and namedtuple_fields is not None:
        # A namedtuple (an optimizer's state) is registered when first flattened: a fresh process may not
        # have seen it yet. Look for it in its module if that is already imported (never import it).
        module_name, _, qualname = name.partition(":")
        value: Any = sys.modules.get(module_name)
        for part in qualname.split("."):
            value = vars(value).get(part) if value is not None and hasattr(value, "__dict__") else None
        if isinstance(value, type) and _registry._is_namedtuple_type(value):
            found = value
    if found is None:
        raise fail(f"it names the type {name[:200]!r}, which is not a registered pytree node type in this "
                   "process (import the module that defines it first, or load with like=template)")
    return found


# --- encoding a tree --------------------------------------------------------------------------------------


def to_array(x: Any) -> np.ndarray | None:
    """The NumPy array of a leaf that is an array (ember, NumPy, PyTorch), else None."""
    if isinstance(x, (Array, np.ndarray, np.generic)):
        return np.asarray(x)
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        torch = sys.modules["torch"]
        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            import ml_dtypes

            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return None


class Encoder:
    """Walks a tree: its structure as JSON and its arrays with their names."""

    def __init__(self, names_only: bool = False, arrays_only: bool = False) -> None:
        self.namer = Namer()
        self.tensors: list[tuple[str, np.ndarray, dict]] = []  # name, array, leaf node
        self.names: list[str] = []  # every leaf's name, in flatten order
        self.names_only = names_only  # only name the leaves (a template's): no conversion, nothing refused
        self.arrays_only = arrays_only or names_only  # collect the arrays only: no structure, no values

    def leaf(self, x: Any, path: str, names: list | None) -> dict:
        given = names.pop() if names else None
        name = self.namer.unique(given if given is not None else path)
        self.names.append(name)
        if self.names_only:
            return {}
        array = to_array(x)
        if array is None:
            if type(x) in (bool, int, float, complex, str):
                if self.arrays_only:
                    return {}
                return {"k": "value", "name": name, "v": encode_value(x, path or "the tree")}
            raise Unsaveable(f"the leaf at {path or 'the root'!r} is a {type(x).__name__}, which is neither an "
                             "array nor a Python scalar")
        node = {"k": "tensor", "name": name,
                "as": "array" if not isinstance(x, (np.ndarray, np.generic)) else
                      "scalar" if isinstance(x, np.generic) else "ndarray"}  # fmt: skip
        if array.dtype.kind == "c":
            node["complex"] = True
        self.tensors.append((name, array, node))
        return node

    def node(self, x: Any, path: str = "", names: list | None = None, depth: int = 0) -> dict:
        """``names``: inside a module, the names of its leaves still to come, in reverse flatten order."""
        if depth > MAX_DEPTH:
            raise Unsaveable(f"the tree nests deeper than {MAX_DEPTH} levels")
        t = type(x)
        kind = _registry._dispatch.get(t)
        if kind is None:
            kind = _registry._resolve(t)
        if kind is _registry._LEAF:
            return self.leaf(x, path, names)
        if kind is _registry._NONE:
            return {"k": "none"}
        if isinstance(x, Module) and names is None:
            names = module_names(x, path)[::-1]
        pairs, aux = _registry._keyed_children(kind, x)
        children = [self.node(c, join(path, k), names, depth + 1) for k, c in pairs]
        where = path or "the root"
        if kind is _registry._TUPLE or kind is _registry._LIST:
            return {"k": t.__name__, "c": children}
        if self.arrays_only:
            return {}
        if t in (dict, collections.OrderedDict, collections.defaultdict):
            keys = [encode_value(k.key, f"a key of {where}") for k, _ in pairs]
            out = {"k": {dict: "dict", collections.OrderedDict: "odict"}.get(t, "ddict"), "keys": keys, "c": children}
            if t is collections.defaultdict:
                out["factory"] = encode_value(x.default_factory, f"the default_factory of {where}")
            return out
        if kind.auto:
            return {"k": "ntuple", "type": type_name(t), "fields": list(t._fields), "c": children}
        if isinstance(x, Module):
            dynamic, static_values = aux
            static_names = [f.name for f in t._ember_fields if f.name not in dynamic]
            static = {n: encode_value(v, f"{t.__name__}.{n} (at {where})")
                      for n, v in zip(static_names, static_values)}  # fmt: skip
            return {"k": "module", "type": type_name(t), "dynamic": list(dynamic), "static": static, "c": children}
        return {"k": "node", "type": type_name(t), "aux": encode_value(aux, f"the {t.__name__} at {where}"),
                "c": children}  # fmt: skip


# --- decoding a tree --------------------------------------------------------------------------------------


class Decoder:
    """Rebuilds a tree from its JSON structure, taking each leaf from ``leaf(node)``."""

    def __init__(self, leaf: Any, fail: Any) -> None:
        self.leaf = leaf
        self.fail = fail

    def _children(self, spec: dict, depth: int) -> list:
        c = spec.get("c")
        if not isinstance(c, list):
            raise self.fail("a node of its structure has no list of children")
        return [self.node(s, depth + 1) for s in c]

    def node(self, spec: Any, depth: int = 0) -> Any:
        fail = self.fail
        if depth > MAX_DEPTH:
            raise fail(f"its structure nests deeper than {MAX_DEPTH} levels")
        if not isinstance(spec, dict) or not isinstance(spec.get("k"), str):
            raise fail(f"its structure holds {short(spec)}, which is not a node")
        k = spec["k"]
        if k in ("tensor", "value"):
            return self.leaf(spec)
        if k == "none":
            return None
        if k in ("tuple", "list"):
            kids = self._children(spec, depth)
            return tuple(kids) if k == "tuple" else kids
        if k in ("dict", "odict", "ddict"):
            kids = self._children(spec, depth)
            keys = spec.get("keys")
            if not isinstance(keys, list) or len(keys) != len(kids):
                raise fail("a dict of its structure has not one key per child")
            keys = [decode_value(key, fail) for key in keys]
            try:
                if len(set(keys)) != len(keys):
                    raise fail("a dict of its structure repeats a key")
            except TypeError:
                raise fail("a dict of its structure has an unhashable key") from None
            if k == "dict":
                return dict(zip(keys, kids))
            if k == "odict":
                return collections.OrderedDict(zip(keys, kids))
            factory = decode_value(spec.get("factory"), fail)
            if factory is not None and factory not in _BUILTINS.values():
                raise fail("a defaultdict's default_factory is not a builtin type")
            return collections.defaultdict(factory, zip(keys, kids))
        if k == "ntuple":
            kids = self._children(spec, depth)
            fields = spec.get("fields")
            if not isinstance(fields, list):
                raise fail("a namedtuple of its structure lists no fields")
            t = find_type(_str(spec.get("type"), fail), fail, namedtuple_fields=fields)
            if not _registry._is_namedtuple_type(t) or list(t._fields) != fields or len(kids) != len(fields):
                raise fail(f"{type_name(t)} does not have the fields {short(fields)} with one child each")
            return t(*kids)
        if k == "module":
            kids = self._children(spec, depth)
            t = find_type(_str(spec.get("type"), fail), fail)
            if not (isinstance(t, type) and issubclass(t, Module)):
                raise fail(f"{type_name(t)} is not an nn.Module")
            dynamic, static = spec.get("dynamic"), spec.get("static")
            fields = [f.name for f in t._ember_fields]
            if (not isinstance(dynamic, list) or not isinstance(static, dict) or len(dynamic) != len(kids)
                    or not all(isinstance(n, str) for n in dynamic)
                    or sorted(dynamic + list(static)) != sorted(fields)):  # fmt: skip
                raise fail(f"the fields it gives {t.__name__} are not the fields {fields} of the class")
            dynamic = tuple(dynamic)
            statics = tuple(decode_value(static[n], fail) for n in fields if n not in dynamic)
            return self._unflatten(t, (dynamic, statics), kids)
        if k == "node":
            kids = self._children(spec, depth)
            t = find_type(_str(spec.get("type"), fail), fail)
            return self._unflatten(t, decode_value(spec.get("aux"), fail), kids)
        raise fail(f"its structure has a node of the unknown kind {k[:40]!r}")

    def _unflatten(self, t: type, aux: Any, kids: list) -> Any:
        kind = _registry._dispatch.get(t)
        try:
            out = kind.unflatten(aux, tuple(kids))
            again, aux_again = kind.flatten(out)
            same = len(list(again)) == len(kids) and aux_again == aux
        except Exception as error:  # the class's own unflatten refused what the file gave it
            raise self.fail(f"rebuilding a {t.__name__} from it failed ({type(error).__name__}: {error})") from None
        if not same:
            raise self.fail(f"the {t.__name__} it describes does not rebuild to the same structure")
        return out


def _str(v: Any, fail: Any) -> str:
    if not isinstance(v, str):
        raise fail("a node of its structure names no type")
    return v
