"""An ONNX model's lookup tables read straight from its file, so that only the rows in use take RAM.

A transformer's token embedding table is read one row per token of a text: EmbeddingGemma's is
262,144 rows of 768 bytes, two thirds of its int8 model. Loaded by ONNX Runtime it is copied whole
into the process's heap (~200 MB that stay resident for good); mapped from the model file
(``SessionOptions.add_initializer`` with the mapped array), the system pages in the rows of the
tokens seen and can drop them again, and the heap keeps the rest of the weights only.

The tables are found by walking the model file's protobuf wire format (no ``onnx`` package at
run time): the initializers that are a ``Gather``'s data input, stored inline as ``raw_data``
with a plain numeric type. Anything else (external data, typed fields) is left to ONNX Runtime.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

import numpy as np

# Smaller tables are not worth a mapping of their own.
MIN_MAPPED_BYTES = 1 << 20

# onnx.TensorProto.DataType → numpy (little-endian, as raw_data is stored)
_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 5: "<i2", 6: "<i4", 7: "<i8", 10: "<f2", 11: "<f8"}

# Field numbers of onnx.proto
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_NODE_INPUT, _NODE_OP_TYPE = 1, 4
_TENSOR_DIMS, _TENSOR_DATA_TYPE, _TENSOR_NAME, _TENSOR_RAW_DATA = 1, 2, 8, 9
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class _Wire:
    """Reads protobuf fields from a byte buffer."""

    def __init__(self, buffer: mmap.mmap) -> None:
        self.buffer = buffer

    def varint(self, pos: int) -> tuple[int, int]:
        result = shift = 0
        while True:
            byte = self.buffer[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result, pos

    def fields(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """(field number, wire type, value or start, end) of each field in ``[start, end)``; a
        varint's value is in the third place, a length-delimited field's bytes span the last two."""
        pos = start
        while pos < end:
            key, pos = self.varint(pos)
            number, wire_type = key >> 3, key & 7
            if wire_type == _VARINT:
                value, pos = self.varint(pos)
                yield number, wire_type, value, pos
            elif wire_type == _LENGTH:
                length, pos = self.varint(pos)
                yield number, wire_type, pos, pos + length
                pos += length
            elif wire_type in (_FIXED64, _FIXED32):
                pos += 8 if wire_type == _FIXED64 else 4
            else:
                raise ValueError(f"not an ONNX model: wire type {wire_type} at byte {pos}")

    def text(self, start: int, end: int) -> str:
        return self.buffer[start:end].decode("utf-8", "replace")

    def packed(self, start: int, end: int) -> list[int]:
        values, pos = [], start
        while pos < end:
            value, pos = self.varint(pos)
            values.append(value)
        return values


def _tables(wire: _Wire, start: int, end: int) -> dict[str, tuple[int, str, tuple[int, ...]]]:
    """The graph's Gather tables stored as raw data: name → (offset in the file, dtype, shape)."""
    gathered: set[str] = set()
    raw: dict[str, tuple[int, int, str, tuple[int, ...]]] = {}
    for number, wire_type, s, e in wire.fields(start, end):
        if wire_type != _LENGTH:
            continue
        if number == _GRAPH_NODE:
            inputs, op_type = [], ""
            for n, wt, ns, ne in wire.fields(s, e):
                if n == _NODE_INPUT and wt == _LENGTH:
                    inputs.append(wire.text(ns, ne))
                elif n == _NODE_OP_TYPE and wt == _LENGTH:
                    op_type = wire.text(ns, ne)
            if op_type == "Gather" and inputs:
                gathered.add(inputs[0])
        elif number == _GRAPH_INITIALIZER:
            dims: list[int] = []
            name, data_type, data = "", 0, (0, 0)
            for n, wt, ts, te in wire.fields(s, e):
                if n == _TENSOR_DIMS:
                    dims += [ts] if wt == _VARINT else wire.packed(ts, te)
                elif n == _TENSOR_DATA_TYPE and wt == _VARINT:
                    data_type = ts
                elif n == _TENSOR_NAME and wt == _LENGTH:
                    name = wire.text(ts, te)
                elif n == _TENSOR_RAW_DATA and wt == _LENGTH:
                    data = (ts, te)
            dtype = _DTYPES.get(data_type)
            shape = tuple(dims)
            if dtype is not None and data[1] - data[0] == int(np.prod(shape)) * np.dtype(dtype).itemsize:
                raw[name] = (data[0], data[1] - data[0], dtype, shape)
    return {
        name: (offset, dtype, shape)
        for name, (offset, size, dtype, shape) in raw.items()
        if name in gathered and size >= MIN_MAPPED_BYTES
    }


def gather_tables(path: Path) -> dict[str, np.memmap]:
    """The model's large Gather tables, each mapped read-only from the file, by initializer name.

    Raises ValueError when the file is not a protobuf an ONNX model could be.
    """
    with path.open("rb") as file:
        if path.stat().st_size == 0:
            return {}
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
            wire = _Wire(buffer)
            found: dict[str, tuple[int, str, tuple[int, ...]]] = {}
            try:
                for number, wire_type, start, end in wire.fields(0, len(buffer)):
                    if number == _MODEL_GRAPH and wire_type == _LENGTH:
                        found.update(_tables(wire, start, end))
            except IndexError:
                raise ValueError(f"not an ONNX model: {path.name} ends inside a field") from None
    return {
        name: np.memmap(path, dtype=np.dtype(dtype), mode="r", offset=offset, shape=shape)
        for name, (offset, dtype, shape) in found.items()
    }
