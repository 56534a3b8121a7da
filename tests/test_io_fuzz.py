"""ember.load on bad files: truncated, bit-flipped, random and crafted files each raise CheckpointError.

Every case is also held to bounded time and memory: a header claiming gigabytes is refused before anything
of that size is allocated, and no case imports a module or runs code named by the file.
"""

from __future__ import annotations

import json
import struct
import sys
import time
import tracemalloc
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import CheckpointError

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _tree():
    model, state = nn.make_with_state(nn.Sequential)(nn.Linear(2, 3, key=ember.random.key(0)), nn.BatchNorm1d(3))
    return {"model": model, "state": state, "step": 3, "z": enp.ones(2, dtype=enp.complex64),
            "flags": np.array([True, False]), "empty": np.zeros((0, 2), np.int16), "x": [1.5, "s", None]}  # fmt: skip


GOOD = ember.save_bytes(_tree())


def _bad(data: bytes, match: str | None = None, **kwargs) -> CheckpointError:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=match) as info:
            ember.load_bytes(data, **kwargs)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - start < 5
    assert peak < 20 * 2**20 + 4 * len(data), f"loading a bad file took {peak} bytes"
    return info.value


def _file(header: dict | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _ember_file(tree_spec, tensors: dict, data: bytes, extra_meta: dict | None = None) -> bytes:
    """A file with an ember structure and a valid checksum (crc32 of the file with its 8 hex digits zeroed)."""
    tree_text = tree_spec if isinstance(tree_spec, str) else json.dumps(tree_spec)
    meta = {"ember.version": "1", "ember.tree": tree_text, "ember.crc32": "00000000", **(extra_meta or {})}
    text = json.dumps({"__metadata__": meta, **tensors}, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    zeroed = _file(text, data)
    crc = b"%08x" % zlib.crc32(zeroed)
    return zeroed.replace(b'"ember.crc32":"00000000"', b'"ember.crc32":"' + crc + b'"')


def test_the_good_file_loads():
    back = ember.load_bytes(GOOD)
    assert back["step"] == 3 and back["x"] == [1.5, "s", None]


def test_every_truncation_is_refused():
    for n in range(len(GOOD)):
        with pytest.raises(CheckpointError):
            ember.load_bytes(GOOD[:n])


def test_every_single_bit_flip_of_the_header_and_a_sample_of_the_data_is_refused():
    (n,) = struct.unpack("<Q", GOOD[:8])
    positions = list(range(8 + n)) + list(range(8 + n, len(GOOD), 7))
    for i in positions:
        for bit in (0, 3, 7):
            data = bytearray(GOOD)
            data[i] ^= 1 << bit
            with pytest.raises(CheckpointError):
                ember.load_bytes(bytes(data))


@FUZZ
@given(st.data())
def test_random_corruptions_are_refused(data):
    bad = bytearray(GOOD)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(bad) - 1))
        bad[i] = data.draw(st.integers(0, 255).filter(lambda b, i=i: b != GOOD[i]))
    if bytes(bad) != GOOD:
        _bad(bytes(bad))


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_are_refused(junk):
    _bad(junk)


@FUZZ
@given(st.binary(max_size=200), st.integers(0, 2**64 - 1))
def test_random_headers_with_any_declared_length_are_refused(junk, length):
    _bad(_file(junk, length=length))


@FUZZ
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                    max_leaves=10))  # fmt: skip
def test_random_json_structures_in_the_metadata_load_or_are_refused(spec):
    try:  # a few are valid structures of no tensors ({"k": "none"}): anything but a CheckpointError fails
        ember.load_bytes(_ember_file(spec, {}, b""))
    except CheckpointError:
        pass


# --- crafted files ---------------------------------------------------------------------------------------------


def test_header_lengths_beyond_the_file_or_claiming_gigabytes():
    _bad(b"", "fewer than the 8")
    _bad(struct.pack("<Q", 100), "only 0 follow")
    _bad(struct.pack("<Q", 2**33) + b"{}", "more than the")
    _bad(struct.pack("<Q", 2**64 - 1) + b"{}", "more than the")
    _bad(_file(b"{}  ", length=1), "not valid JSON")


@pytest.mark.parametrize("header, match", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "not an object"),
    (b'{"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, "a": {}}', "appears twice"),
    (b"\xff\xfe{}", "not valid JSON"),
    (b"[" * 100000 + b"]" * 100000, "nests too deeply|not valid JSON"),
    (json.dumps({"__metadata__": {"k": 1}}).encode(), "not an object of strings"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1]}}).encode(), "exactly dtype, shape and data_offsets"),
    (json.dumps({"t": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}}).encode(), "unknown dtype 'F33'"),
    (json.dumps({"t": {"dtype": 3, "shape": [1], "data_offsets": [0, 4]}}).encode(), "unknown dtype"),
    (json.dumps({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}).encode(), "non-negative"),
    (json.dumps({"t": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}).encode(), "non-negative"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}}).encode(), "non-negative"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}}).encode(), "at most 64"),
    (json.dumps({"t": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 4]}}).encode(), "span 4"),
    (json.dumps({"t": {"dtype": "F32", "shape": [0, 2**61], "data_offsets": [0, 4]}}).encode(), "span 4"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 2**40]}}).encode(), "outside"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}).encode(), "outside"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}}).encode(), "outside"),
    (json.dumps({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}).encode(), "not two integers"),
    (json.dumps({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode(), "8 bytes"),
])  # fmt: skip
def test_crafted_headers(header, match):
    _bad(_file(header, b"\x00" * 4), match)


def test_overlapping_gapped_and_short_offsets():
    two = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
           "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}  # fmt: skip
    _bad(_file(two, b"\x00" * 12), "overlaps")
    gap = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
           "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}  # fmt: skip
    _bad(_file(gap, b"\x00" * 12), "gap")
    _bad(_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\x00" * 8), "trailing")


def test_a_foreign_file_with_odd_bool_bytes_is_refused():
    _bad(_file({"b": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02"), "other than 0 and 1")


TENSOR = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
W = np.array([1.0, 2.0], np.float32).tobytes()


def _leaf(name="w", **extra):
    return {"k": "tensor", "name": name, "as": "array", **extra}


def test_a_crafted_ember_file_with_a_valid_checksum_loads():
    assert ember.load_bytes(_ember_file(_leaf(), TENSOR, W)).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("spec, match", [
    ({"k": "ntuple", "type": "this:Nothing", "fields": ["a"], "c": [_leaf()]}, "not a registered pytree node"),
    ({"k": "node", "type": "builtins:eval", "aux": None, "c": [_leaf()]}, "not a registered pytree node"),
    ({"k": "module", "type": "os:system", "dynamic": [], "static": {}, "c": [_leaf()]}, "not a registered"),
    ({"k": "module", "type": "ember.nn._linear:Linear", "dynamic": ["weight"], "static": {}, "c": [_leaf()]},
     "not the fields"),
    ({"k": "module", "type": "ember.nn._activations:ReLU", "dynamic": [], "static": {"x": 1}, "c": [_leaf()]},
     "not the fields"),
    ({"k": "node", "type": "ember.nn._state:State", "aux": {"tuple": ["a", "b"]}, "c": [_leaf()]},
     "does not rebuild|rebuilding"),
    ({"k": "ntuple", "type": "collections:OrderedDict", "fields": ["a"], "c": [_leaf()]}, "fields|registered"),
    ({"k": "tuple", "c": [_leaf(), {"k": "value", "name": "v", "v": {"fn": "os.system", "plain": False}}]},
     "not one of ember's public functions"),
    ({"k": "tuple", "c": [_leaf(), {"k": "value", "name": "v", "v": {"fn": "ember.io._safetensors.write",
                                                                      "plain": False}}]}, "public functions"),
    ({"k": "tuple", "c": [_leaf(), {"k": "value", "name": "v", "v": {"pickle": "cos\\nsystem"}}]}, "encoded forms"),
    ({"k": "tuple", "c": [_leaf(), {"k": "value", "name": "v", "v": {"dtype": "object"}}]},
     "not one of ember's dtypes"),
    ({"k": "tuple", "c": [_leaf(), {"k": "value", "name": "v", "v": [1, 2]}]}, "encoded forms"),
    ({"k": "tuple", "c": [_leaf(), {"k": "value", "name": "v"}]}, "has no value"),
    ({"k": "tuple", "c": [_leaf(), _leaf()]}, "twice"),
    ({"k": "tuple", "c": [_leaf(), _leaf("missing")]}, "not in the file"),
    ({"k": "tuple", "c": []}, "does not place the tensors"),
    ({"k": "tuple", "c": [_leaf(as_="x")]}, "no valid kind"),
    ({"k": "dict", "keys": ["a", "a"], "c": [_leaf(), {"k": "none"}]}, "repeats a key"),
    ({"k": "dict", "keys": ["a"], "c": [_leaf(), {"k": "none"}]}, "one key per child"),
    ({"k": "dict", "keys": [{"list": []}], "c": [_leaf()]}, "unhashable"),
    ({"k": "ddict", "keys": [], "factory": {"fn": "ember.numpy.zeros", "plain": False}, "c": [_leaf()]},
     "one key per child|builtin"),
    ({"k": "weird", "c": [_leaf()]}, "unknown kind"),
    ({"k": "tuple"}, "no list of children|does not place"),
    (["not", "a", "node"], "not a node|does not place"),
])  # fmt: skip
def test_crafted_structures_are_refused_and_import_nothing(spec, match):
    spec = json.loads(json.dumps(spec).replace('"as_"', '"as"'))
    before = set(sys.modules)
    _bad(_ember_file(spec, TENSOR, W), match)
    assert set(sys.modules) == before  # nothing named by the file was imported
    assert "this" not in sys.modules


def test_a_complex_leaf_not_stored_as_float_pairs_is_refused():
    ints = {"w": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]}}
    _bad(_ember_file({"k": "tuple", "c": [_leaf(complex=True)]}, ints, W), "not stored as float pairs")


@pytest.mark.parametrize("depth", [300, 100000])
def test_deep_structures_are_refused_in_bounded_time(depth):
    leaf = json.dumps(_leaf())
    spec = '{"k":"tuple","c":[' * depth + leaf + "]}" * depth
    _bad(_ember_file(spec, TENSOR, W), "deeper|nests too deeply")
    value = '{"tuple":[' * depth + "1" + "]}" * depth
    spec = '{"k":"tuple","c":[' + leaf + ',{"k":"value","name":"v","v":' + value + "}]}"
    _bad(_ember_file(spec, TENSOR, W), "nests too deeply|deeper")


def test_ember_metadata_that_is_incomplete_or_of_another_version_is_refused():
    good = _ember_file(_leaf(), TENSOR, W)
    _bad(good.replace(b'"ember.version":"1"', b'"ember.version":"9"'), "checksum")
    _bad(_ember_file(_leaf(), TENSOR, W, {"ember.version": "9"}), "format version '9'")
    meta = {"ember.tree": json.dumps(_leaf())}
    _bad(_file({"__metadata__": meta, **TENSOR}, W), "but not all")
    _bad(good.replace(b'"ember.crc32":"', b'"ember.crc32":"x', 1)[:-1], "malformed|not valid|trailing")


def test_a_template_that_does_not_match_is_refused():
    data = ember.save_bytes({"w": enp.ones(3)})
    _bad(data, "shape", like={"w": enp.ones(4)})
    _bad(data, "dtype", like={"w": enp.ones(3, dtype=enp.int32)})
    _bad(data, "no tensor", like={"v": enp.ones(3)})


def test_the_checksum_on_its_helper_thread_finds_a_flip_too(monkeypatch, tmp_path):
    from ember.io import _safetensors

    monkeypatch.setattr(_safetensors.Checksum, "THREADED", 0)  # large files' path, on a small file
    tree = {f"w{i}": np.full((50, 3), i, np.float32) for i in range(6)}
    data = ember.save_bytes(tree)
    assert data == ember.save_bytes(tree) and all(np.array_equal(ember.load_bytes(data)[k], v) for k, v in tree.items())
    path = tmp_path / "big.safetensors"
    ember.save(path, tree)
    assert path.read_bytes() == data
    for i in range(len(data) - 1, len(data) - 3000, -97):
        bad = bytearray(data)
        bad[i] ^= 0x10
        _bad(bytes(bad), "checksum")
