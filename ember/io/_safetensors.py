"""The safetensors layout, written and read by ember itself, every field checked before it is used.

A file is an 8-byte little-endian header length ``N``, ``N`` bytes of JSON (padded with spaces to a multiple
of 8) mapping each tensor's name to ``{"dtype", "shape", "data_offsets"}`` plus an optional
``"__metadata__"`` of str to str, then the byte buffer the offsets point into (relative to its start).

ember writes the layout itself rather than through the ``safetensors`` package: the package's NumPy side has
no bfloat16, and it builds the whole file in memory before writing it. Here each array's bytes go straight
from its buffer to the file, and reading fills each array's own buffer with ``readinto``; a CRC-32 of the
whole file (header, with its checksum field zeroed, and data) is kept in the metadata, so a bit flip
anywhere in a file ember wrote is found. Files written by others (PyTorch's ``safetensors.torch.save_file``)
carry no checksum and are read with every other check.

Reading never trusts a number before checking it against the file: the header length against the file's
size (and a 100 MB cap), each tensor's byte count against its dtype and shape, the offsets against each
other (no overlap, no gap) and against the buffer's size. Memory allocated is at most the file's size.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np

from ember.errors import CheckpointError

__all__: list[str] = []

MAX_HEADER = 100 * 1024 * 1024  # as the safetensors package: a header beyond this is refused unread
MAX_NDIM = 64

DTYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"), "I16": np.dtype("<i2"), "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16), "U32": np.dtype("<u4"), "I32": np.dtype("<i4"),
    "F32": np.dtype("<f4"), "U64": np.dtype("<u8"), "I64": np.dtype("<i8"), "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"),  # read only: newer safetensors writers use it for complex64
}  # fmt: skip
CODES = {np.dtype(dt).name: code for code, dt in DTYPES.items() if code != "C64"}

CRC_KEY = "ember.crc32"
_CRC_FIELD = b'"ember.crc32":"'
_CRC_ZERO = b"00000000"


def invalid_file(source: str, message: str) -> CheckpointError:
    """The error for a file that is not a valid checkpoint, naming the file (``source``) and what is wrong."""
    return CheckpointError(f"ember.load: {source} is not a valid checkpoint: {message}")


# --- writing ---------------------------------------------------------------------------------------------


def write(f: BinaryIO, tensors: list[tuple[str, np.ndarray]], metadata: dict[str, str]) -> None:
    """Write ``tensors`` (contiguous little-endian arrays of the dtypes in ``CODES``) and ``metadata``."""
    # Widest itemsize first: every tensor's offset is then a multiple of its itemsize (the header is padded
    # to 8 bytes), as the safetensors package lays them out.
    order = sorted(tensors, key=lambda item: -item[1].dtype.itemsize)
    header: dict[str, Any] = {"__metadata__": {**metadata, CRC_KEY: _CRC_ZERO.decode()}}
    offset = 0
    for name, array in order:
        header[name] = {"dtype": CODES[array.dtype.name], "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}  # fmt: skip
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    text += b" " * (-len(text) % 8)
    prefix = struct.pack("<Q", len(text))
    start = f.tell()
    f.write(prefix)
    f.write(text)
    checksum = Checksum(zlib.crc32(prefix + text), offset)
    try:
        for _, array in order:
            if array.nbytes:
                data = _bytes(array)
                checksum.add(data)  # on a helper thread, while this one writes the same bytes
                f.write(data)
        crc = checksum.value()
    finally:
        checksum.close()
    end = f.tell()
    f.seek(start + 8 + text.index(_CRC_FIELD) + len(_CRC_FIELD))
    f.write(b"%08x" % crc)
    f.seek(end)


class Checksum:
    """The CRC-32 of a sequence of buffers. For large data it runs on one helper thread (``zlib.crc32``
    releases the GIL), in order, while the caller reads or writes the next buffer."""

    THREADED = 8 * 2**20

    def __init__(self, crc: int, total: int) -> None:
        self.crc = crc
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ember-crc32") if total >= self.THREADED else None

    def _update(self, data: Any) -> None:
        self.crc = zlib.crc32(data, self.crc)

    def add(self, data: Any) -> None:
        if self._pool is None:
            self._update(data)
        else:
            self._pool.submit(self._update, data)

    def value(self) -> int:
        self.close()
        return self.crc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _bytes(array: np.ndarray) -> memoryview:
    return memoryview(array.reshape(-1).view(np.uint8))


# --- reading ---------------------------------------------------------------------------------------------


class Entry:
    __slots__ = ("begin", "dtype", "end", "name", "shape")

    def __init__(self, name: str, dtype: np.dtype, shape: tuple[int, ...], begin: int, end: int) -> None:
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one JSON object")
        out[key] = value
    return out


def parse_json(text: bytes | str, what: str, source: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise invalid_file(source, f"its {what} nests too deeply") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise invalid_file(source, f"its {what} is not valid JSON ({error})") from None


def _int(value: Any) -> bool:
    return type(value) is int


def parse_header(prefix: bytes, size: int, source: str) -> int:
    """The header's length from the first 8 bytes, checked against the file's ``size``."""
    if len(prefix) < 8:
        raise invalid_file(source, f"it has {size} bytes, fewer than the 8 of a header length (truncated?)")
    (length,) = struct.unpack("<Q", prefix)
    if length > MAX_HEADER:
        raise invalid_file(source, f"its header claims {length} bytes, more than the {MAX_HEADER} allowed")
    if length > size - 8:
        raise invalid_file(source, f"its header claims {length} bytes but only {size - 8} follow the length "
                                   f"(truncated, or not a safetensors file)")  # fmt: skip
    return length


def parse_entries(header: Any, buffer_size: int, source: str) -> tuple[list[Entry], dict[str, str]]:
    """The tensors of a parsed header, in offset order, and its metadata; every field checked."""
    if not isinstance(header, dict):
        raise invalid_file(source, f"its header is a JSON {type(header).__name__}, not an object")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise invalid_file(source, "its __metadata__ is not an object of strings")
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        where = f"tensor {name[:100]!r}"
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise invalid_file(source, f"{where} is not an object with exactly dtype, shape and data_offsets")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(code, str) or code not in DTYPES:
            raise invalid_file(source, f"{where} has the unknown dtype {str(code)[:40]!r} (known: {', '.join(DTYPES)})")
        if (not isinstance(shape, list) or len(shape) > MAX_NDIM
                or not all(_int(d) and 0 <= d < 2**62 for d in shape)):  # fmt: skip
            raise invalid_file(source, f"{where} has the shape {str(shape)[:80]}, not a list of at most {MAX_NDIM} "
                                       "non-negative integers")  # fmt: skip
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_int(o) for o in offsets):
            raise invalid_file(source, f"{where} has data_offsets {str(offsets)[:80]}, not two integers")
        begin, end = offsets
        if not 0 <= begin <= end <= buffer_size:
            raise invalid_file(source, f"{where} has data_offsets [{begin}, {end}] outside the {buffer_size}-byte "
                                       "buffer (truncated?)")  # fmt: skip
        dtype = DTYPES[code]
        count = 1
        for d in shape:
            count *= d
        if count * dtype.itemsize != end - begin:
            raise invalid_file(source, f"{where} is {code} of shape {shape}, {count * dtype.itemsize} bytes, but its "
                                       f"data_offsets [{begin}, {end}] span {end - begin}")  # fmt: skip
        entries.append(Entry(name, dtype, tuple(shape), begin, end))
    entries.sort(key=lambda e: (e.begin, e.end))
    at = 0
    for e in entries:
        if e.begin != at:
            what = "overlaps the tensor before it" if e.begin < at else f"leaves a gap of {e.begin - at} bytes"
            raise invalid_file(source, f"tensor {e.name[:100]!r} at data_offsets [{e.begin}, {e.end}] {what}")
        at = e.end
    if at != buffer_size:
        raise invalid_file(source, f"its tensors cover {at} bytes of a {buffer_size}-byte buffer (trailing data?)")
    return entries, metadata


class Reader:
    """Checks a file's header and reads its tensors (each into its own buffer), verifying the checksum."""

    def __init__(self, read: Any, size: int, source: str) -> None:
        self.source = source
        self._read = read  # read(begin, end) -> bytes-like; or readinto(memoryview)
        prefix = read(8)
        length = parse_header(bytes(prefix), size, source)
        raw = bytes(read(length))
        if len(raw) != length:
            raise invalid_file(source, "it ended inside its header (truncated)")
        header = parse_json(raw, "header", source)
        self.entries, self.metadata = parse_entries(header, size - 8 - length, source)
        self._crc: int | None = None
        self._expected: int | None = None
        if CRC_KEY in self.metadata:
            hexa = self.metadata[CRC_KEY]
            if len(hexa) != 8 or any(c not in "0123456789abcdef" for c in hexa) or raw.count(_CRC_FIELD) != 1:
                raise invalid_file(source, f"its {CRC_KEY} checksum field is malformed")
            at = raw.index(_CRC_FIELD) + len(_CRC_FIELD)
            self._expected = int(hexa, 16)
            self._crc = zlib.crc32(bytes(prefix) + raw[:at] + _CRC_ZERO + raw[at + 8:])
        self._buffer_size = size - 8 - length

    def arrays(self, readinto: Any) -> list[tuple[Entry, np.ndarray]]:
        """Every tensor in offset order as a fresh array of its dtype and shape; the checksum verified."""
        out = []
        checksum = Checksum(self._crc, self._buffer_size) if self._crc is not None else None
        try:
            for e in self.entries:
                data = np.empty(e.end - e.begin, np.uint8)
                if data.size and readinto(memoryview(data)) != data.size:
                    raise invalid_file(self.source, f"it ended inside tensor {e.name[:100]!r} (truncated)")
                if checksum is not None and data.size:
                    checksum.add(data)  # on a helper thread, while this one reads the next tensor
                out.append((e, data.view(e.dtype).reshape(e.shape)))
            crc = checksum.value() if checksum is not None else None
        finally:
            if checksum is not None:
                checksum.close()
        if crc is not None and crc != self._expected:
            raise invalid_file(self.source, f"its checksum does not match ({crc:08x}, written {self._expected:08x}): "
                                            "the file was corrupted after it was written")  # fmt: skip
        return out


def file_size(f: BinaryIO) -> int:
    return os.fstat(f.fileno()).st_size
