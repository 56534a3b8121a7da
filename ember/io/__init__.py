"""Saving and loading pytrees of arrays: one file in the safetensors format, no pickle.

``ember.save(path, tree)`` writes every array of ``tree`` (a module, an optimizer state, an ``nn.State``,
nested dicts, lists, tuples and namedtuples) as a named tensor, and the tree's structure (node types by
their names in ember's pytree registry, a module's static fields as JSON) in the file's metadata.
``ember.load(path)`` rebuilds the tree; ``ember.load(path, like=template)`` puts the arrays into the
template's structure by name, checking shapes and dtypes. Tensor names are the leaves' key paths, and a
module's parameters carry PyTorch's names (``layers.0.weight``), so a saved ``to_torch_state_dict`` loads in
``safetensors.torch.load_file`` and a PyTorch safetensors file loads into an ember model by name.

Loading never runs code from the file: types are looked up among the registered pytree node types, and
every malformed or corrupted file (ember writes a checksum) raises ``ember.errors.CheckpointError``.

>>> import ember, ember.numpy as enp
>>> data = ember.save_bytes({"w": enp.ones((2, 3)), "step": 7})
>>> tree = ember.load_bytes(data)
>>> tree["w"].shape, tree["step"]
((2, 3), 7)
"""

from __future__ import annotations

import io
import json
import os
import secrets
from typing import Any, BinaryIO

import numpy as np

from ember.core import dtypes
from ember.core.array import from_host, wrap
from ember.core.pytree import tree_flatten, tree_unflatten
from ember.errors import CheckpointError
from ember.io import _safetensors as _st
from ember.io import _treespec as _ts

__all__ = ["load", "load_bytes", "save", "save_bytes"]

_TREE_KEY = "ember.tree"
_VERSION_KEY = "ember.version"
_VERSION = "1"
_NO_STRUCTURE = object()  # a file without ember's metadata (written by PyTorch, say)


# --- saving -----------------------------------------------------------------------------------------------


def _encode(tree: Any, arrays_only: bool, fn: str) -> tuple[list[tuple[str, np.ndarray]], dict[str, str]]:
    encoder = _ts.Encoder(arrays_only=arrays_only)
    try:
        spec = encoder.node(tree)
    except _ts.Unsaveable as error:
        hint = (f"; save the arrays alone with ember.{fn}(..., arrays_only=True) and load them into a template "
                "with ember.load(path, like=template)")  # fmt: skip
        raise CheckpointError(f"ember.{fn}: {error}{'' if arrays_only else hint}") from None
    except Exception as error:  # a traced value, an array that cannot be read
        raise CheckpointError(f"ember.{fn}: cannot save this tree: {type(error).__name__}: {error}") from error
    tensors = []
    for name, array, _ in encoder.tensors:
        if array.dtype.kind == "c":
            array = _contiguous(array).reshape(-1).view(array.real.dtype).reshape(*array.shape, 2)
        if array.dtype.name not in _st.CODES:
            raise CheckpointError(f"ember.{fn}: the array {name!r} has the dtype {array.dtype}, which the safetensors "
                                  "format cannot hold")  # fmt: skip
        array = _contiguous(array)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        tensors.append((name, array))
    if arrays_only:  # a dict of the arrays by name: values and the structure are left out
        nodes = sorted((name, {**node, "as": "array"}) for name, _, node in encoder.tensors)
        spec = {"k": "dict", "keys": [name for name, _ in nodes], "c": [node for _, node in nodes]}
    metadata = {_VERSION_KEY: _VERSION, _TREE_KEY: json.dumps(spec, separators=(",", ":"), allow_nan=False)}
    return tensors, metadata


def _contiguous(array: np.ndarray) -> np.ndarray:
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one)
    return array if array.flags.c_contiguous else array.copy(order="C")


def save(path: str | os.PathLike, tree: Any, *, arrays_only: bool = False) -> None:
    """Write a pytree of arrays to ``path`` as one safetensors file, atomically.

    The file is written to a temporary file in the same directory and renamed over ``path`` once complete, so
    an interrupted save never leaves a half-written file there (an earlier file at ``path`` stays as it was).

    Args:
      path: the file to write (replaced if it exists).
      tree: a pytree of arrays: an ``nn.Module``, an optimizer state, an ``nn.State``, dicts, lists, tuples,
        namedtuples, registered dataclasses; Python scalars and strings among the leaves are kept too.
      arrays_only: write the arrays by name without the tree's structure (for a tree holding a static value
        that has no JSON form, such as a lambda); load such a file with ``load(path, like=template)``.

    Raises:
      CheckpointError: the tree holds something that cannot be saved (a static field with no JSON form
        that is not one of ember's functions, a leaf that is neither an array nor a scalar).

    >>> import os, tempfile, ember, ember.numpy as enp
    >>> path = os.path.join(tempfile.mkdtemp(), "params.safetensors")
    >>> ember.save(path, {"w": enp.arange(3.0)})
    >>> ember.load(path)["w"].tolist()
    [0.0, 1.0, 2.0]
    """
    tensors, metadata = _encode(tree, arrays_only, "save")
    path = os.fspath(path)
    directory, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            _st.write(f, tensors, metadata)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save_bytes(tree: Any, *, arrays_only: bool = False) -> bytes:
    """The bytes of the file ``save`` would write for ``tree`` (see :func:`save`).

    >>> import ember, ember.numpy as enp
    >>> data = ember.save_bytes((enp.zeros(2), None))
    >>> ember.load_bytes(data)
    (Array([0., 0.], dtype=float32), None)
    """
    tensors, metadata = _encode(tree, arrays_only, "save_bytes")
    f = io.BytesIO()
    _st.write(f, tensors, metadata)
    return f.getvalue()


# --- loading ----------------------------------------------------------------------------------------------


def _as_array(array: np.ndarray, kind: str) -> Any:
    if kind == "ndarray":
        return array
    if kind == "scalar":
        return array[()]
    dtype = dtypes.canonicalize(array.dtype)
    if dtype == array.dtype:
        array.flags.writeable = False
        return wrap(array)
    return from_host(array, "ember.load")


def _read(f: BinaryIO, size: int, source: str, like: Any, strict: bool) -> Any:
    fail = lambda message: _st.invalid_file(source, message)  # noqa: E731
    reader = _st.Reader(f.read, size, source)
    arrays = {}
    for entry, array in reader.arrays(f.readinto):
        if array.dtype == np.bool_ and array.size and np.asarray(array).view(np.uint8).max() > 1:
            raise fail(f"the bool tensor {entry.name[:100]!r} holds bytes other than 0 and 1")
        arrays[entry.name] = array
    metadata = reader.metadata
    spec: Any = _NO_STRUCTURE
    if _TREE_KEY in metadata or _VERSION_KEY in metadata or _st.CRC_KEY in metadata:
        if not (_TREE_KEY in metadata and _VERSION_KEY in metadata and _st.CRC_KEY in metadata):
            raise fail(f"its metadata has some of {_TREE_KEY}, {_VERSION_KEY}, {_st.CRC_KEY} but not all")
        if metadata[_VERSION_KEY] != _VERSION:
            raise fail(f"it is of ember's format version {metadata[_VERSION_KEY][:20]!r}; this ember reads {_VERSION}")
        spec = _st.parse_json(metadata[_TREE_KEY], "tree structure", source)
    # Each leaf node of the structure, by name: tensors (with the complex flag) and Python values.
    leaves: dict[str, dict] = {}
    if spec is not _NO_STRUCTURE:
        _collect_leaves(spec, leaves, fail)
    for name, node in leaves.items():
        if node["k"] == "tensor":
            if name not in arrays:
                raise fail(f"its structure refers to the tensor {name[:100]!r}, which is not in the file")
            if node.get("complex") is True:
                a = arrays[name]
                if a.dtype not in (np.float32, np.float64) or not a.shape or a.shape[-1] != 2:
                    raise fail(f"the complex tensor {name[:100]!r} is not stored as float pairs")
                arrays[name] = a.view(np.complex64 if a.dtype == np.float32 else np.complex128)[..., 0]
    if spec is not _NO_STRUCTURE:
        unused = set(arrays) - {n for n, node in leaves.items() if node["k"] == "tensor"}
        if unused:
            raise fail(f"its structure does not place the tensors {sorted(unused)[:5]}")
    if like is not None:
        return _into(like, arrays, leaves, source, strict)
    if spec is _NO_STRUCTURE:  # a file written by another program (PyTorch): a dict of its tensors, in file order
        return {name: _as_array(array, "array") for name, array in arrays.items()}

    def leaf(node: dict) -> Any:
        if node["k"] == "value":
            return _ts.decode_value(node["v"], fail)
        return _as_array(arrays[node["name"]], node.get("as"))

    return _ts.Decoder(leaf, fail).node(spec)


def _collect_leaves(spec: Any, out: dict[str, dict], fail: Any) -> None:
    stack = [(spec, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _ts.MAX_DEPTH:
            raise fail(f"its structure nests deeper than {_ts.MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise fail(f"its structure holds {_ts.short(node)}, which is not a node")
        if node.get("k") in ("tensor", "value"):
            name = node.get("name")
            if not isinstance(name, str):
                raise fail("a leaf of its structure has no name")
            if name in out:
                raise fail(f"its structure places the leaf {name[:100]!r} twice")
            if node["k"] == "tensor" and node.get("as") not in ("array", "ndarray", "scalar"):
                raise fail(f"the leaf {name[:100]!r} of its structure has no valid kind")
            if node["k"] == "value" and "v" not in node:
                raise fail(f"the value leaf {name[:100]!r} of its structure has no value")
            out[name] = node
        elif isinstance(node.get("c"), list):
            stack.extend((c, depth + 1) for c in node["c"])


def _into(like: Any, arrays: dict[str, np.ndarray], leaves: dict[str, dict], source: str, strict: bool) -> Any:
    """The arrays placed into ``like``'s structure by name, each checked against the template's leaf."""
    template_leaves, treedef = tree_flatten(like)
    # The names of the template's leaves, in flatten order (the encoder walks the same order).
    order = _leaf_names(like)
    if len(order) != len(template_leaves):  # pragma: no cover - both walk the registry in the same order
        raise CheckpointError("ember.load: the template's leaves could not be named")
    out = []
    missing = []
    for name, t in zip(order, template_leaves):
        if name in arrays:
            a = arrays[name]
            shape, dtype = _shape_dtype(t)
            if shape is not None and tuple(a.shape) != tuple(shape):
                raise CheckpointError(f"ember.load: {source} has {name!r} of shape {tuple(a.shape)}, but the "
                                      f"template's is {tuple(shape)}")  # fmt: skip
            # An ember array takes what enp.asarray makes of the file's dtype (int64 is int32 with x64 off, as
            # PyTorch's num_batches_tracked loads into ember's).
            ember_leaf = not isinstance(t, (np.ndarray, np.generic)) and type(t) not in (bool, int, float, complex)
            file_dtype = dtypes.canonicalize(a.dtype) if ember_leaf else a.dtype
            if dtype is not None and file_dtype != np.dtype(dtype):
                raise CheckpointError(f"ember.load: {source} has {name!r} of dtype {a.dtype}, but the template's is "
                                      f"{np.dtype(dtype)}")  # fmt: skip
            if isinstance(t, np.ndarray):
                out.append(a)
            elif isinstance(t, np.generic):
                out.append(a[()])
            elif type(t) in (bool, int, float, complex):
                out.append(type(t)(a[()]))
            else:
                out.append(_as_array(a, "array"))
        elif name in leaves and leaves[name]["k"] == "value":
            out.append(_ts.decode_value(leaves[name]["v"], lambda m: _st.invalid_file(source, m)))
        else:
            missing.append(name)
            out.append(None)
    if missing:
        raise CheckpointError(f"ember.load: {source} has no tensor for the template's leaves {_first(missing, 5)} "
                              f"(it has {_first(sorted(arrays), 8)})")  # fmt: skip
    extra = sorted(set(arrays) - set(order))
    if extra and strict:
        raise CheckpointError(f"ember.load: {source} has tensors the template does not: {_first(extra, 5)}; "
                              "pass strict=False to leave them out")  # fmt: skip
    return tree_unflatten(treedef, out)


def _first(names: list[str], n: int) -> str:
    """The first ``n`` of ``names`` for an error message, `` ...`` after them if there are more."""
    return f"{names[:n]}{' ...' if len(names) > n else ''}"


def _leaf_names(tree: Any) -> list[str]:
    encoder = _ts.Encoder(names_only=True)
    encoder.node(tree)
    return encoder.names


def _shape_dtype(t: Any) -> tuple[Any, Any]:
    if type(t) in (bool, int, float, complex):
        return (), None
    return getattr(t, "shape", None), getattr(t, "dtype", None)


def load(path: str | os.PathLike, like: Any = None, *, strict: bool = True) -> Any:
    """Read a pytree written by :func:`save` (or any safetensors file) from ``path``.

    Without ``like``, the tree is rebuilt from the file's metadata (a file written by another program, such
    as PyTorch's ``safetensors.torch.save_file``, gives a dict of its tensors by name). With ``like``, the
    arrays go into the template's structure by name (a module's parameters by their PyTorch names), each
    checked against the template leaf's shape and dtype.

    The arrays come back uncommitted on the default device (``ember.default_device()``), whatever device
    they were saved from or the template's leaves are on (a file records no device); put them on one with
    ``ember.device_put(tree, device)``, or load inside ``with ember.default_device(device):``.

    Args:
      path: the file to read.
      like: a template pytree (a model, an optimizer state; its leaves arrays or ``ShapeDtypeStruct``).
      strict: with ``like``, whether tensors in the file that the template has no place for are an error.

    Raises:
      CheckpointError: the file is truncated, corrupted or crafted, names a type that is not registered,
        or does not match ``like``. Loading never runs code from the file.

    >>> import os, tempfile, ember, ember.numpy as enp
    >>> from ember import nn
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> model = nn.Linear(3, 2, key=ember.random.key(0))
    >>> ember.save(path, model)
    >>> ember.load(path)
    Linear(in_features=3, out_features=2, bias=True)
    >>> ember.load(path, like=nn.Linear(3, 2, key=ember.random.key(1))).weight.shape
    (2, 3)
    """
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise CheckpointError(f"ember.load: there is no file {path!r}") from None
    with f:
        return _read(f, _st.file_size(f), repr(path), like, strict)


def load_bytes(data: bytes | bytearray | memoryview, like: Any = None, *, strict: bool = True) -> Any:
    """Read a pytree from the bytes of a file written by :func:`save_bytes` (see :func:`load`).

    >>> import ember, ember.numpy as enp
    >>> ember.load_bytes(ember.save_bytes({"a": enp.ones(2, dtype=enp.int8)}))
    {'a': Array([1, 1], dtype=int8)}
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CheckpointError(f"ember.load_bytes: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    return _read(io.BytesIO(data), len(data), "the data", like, strict)

