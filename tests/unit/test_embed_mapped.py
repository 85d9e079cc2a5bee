"""A model's token table is read from its file, not copied into the heap (mnemo.embed.mapped): a
tiny ONNX graph written here byte by byte (no ``onnx`` package), run by the real ONNX Runtime."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from mnemo.embed.base import MANIFEST
from mnemo.embed.mapped import MIN_MAPPED_BYTES, gather_tables
from mnemo.embed.onnx import OnnxEmbedder

VOCABULARY = 1024
WIDTH = 256  # 1024 x 256 float32: exactly MIN_MAPPED_BYTES


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _tensor(name: str, array: np.ndarray, *, packed_dims: bool) -> bytes:
    data_type = {np.dtype(np.float32): 1, np.dtype(np.int64): 7}[array.dtype]
    dims = (
        _field(1, b"".join(_varint(d) for d in array.shape))
        if packed_dims
        else b"".join(_field(1, d) for d in array.shape)
    )
    return (
        dims
        + _field(2, data_type)
        + _field(8, name)
        + _field(9, array.astype(array.dtype.newbyteorder("<")).tobytes())
    )


def _value(name: str, elem_type: int, rank: int) -> bytes:
    shape = b"".join(_field(1, _field(2, f"d{i}")) for i in range(rank))
    return _field(1, name) + _field(2, _field(1, _field(1, elem_type) + _field(2, shape)))


def _node(op_type: str, inputs: list[str], outputs: list[str]) -> bytes:
    return (
        b"".join(_field(1, i) for i in inputs) + b"".join(_field(2, o) for o in outputs) + _field(4, op_type)
    )


def write_model(path: Path, table: np.ndarray, scale: np.ndarray) -> None:
    """input_ids → Gather(table) + Gather(small) → times scale → token vectors (mean-pooled by the
    embedder). ``small`` (zeros) is below MIN_MAPPED_BYTES; ``scale`` is not a Gather's table."""
    small = np.zeros((len(table), 1), dtype=np.float32)
    graph = (
        _field(1, _node("Gather", ["table", "input_ids"], ["big"]))
        + _field(1, _node("Gather", ["small", "input_ids"], ["little"]))
        + _field(1, _node("Add", ["big", "little"], ["summed"]))
        + _field(1, _node("Mul", ["summed", "scale"], ["token_embeddings"]))
        + _field(2, "tiny")
        + _field(5, _tensor("table", table, packed_dims=True))
        + _field(5, _tensor("small", small, packed_dims=False))
        + _field(5, _tensor("scale", scale, packed_dims=True))
        + _field(11, _value("input_ids", 7, 2))
        + _field(11, _value("attention_mask", 7, 2))
        + _field(12, _value("token_embeddings", 1, 3))
    )
    model = (
        _field(1, 8) + _field(2, "mnemo-test") + _field(7, graph) + _field(8, _field(1, "") + _field(2, 13))
    )
    path.write_bytes(model)


@pytest.fixture
def model(tmp_path: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(7)
    table = rng.normal(size=(VOCABULARY, WIDTH)).astype(np.float32)
    scale = np.full(WIDTH, 0.5, dtype=np.float32)
    directory = tmp_path / "tiny"
    directory.mkdir()
    write_model(directory / "model.onnx", table, scale)
    words = {f"w{i}": i for i in range(VOCABULARY)} | {"[UNK]": 0}
    tokenizer = Tokenizer(WordLevel(words, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(directory / "tokenizer.json"))
    files = {
        n: hashlib.sha256((directory / n).read_bytes()).hexdigest() for n in ("model.onnx", "tokenizer.json")
    }
    manifest = {"id": "tiny-mapped", "family": "test", "dim": WIDTH, "files": files}
    (directory / MANIFEST).write_text(json.dumps(manifest))
    return directory, table


def test_only_a_large_gather_table_is_mapped_and_it_is_the_files_bytes(
    model: tuple[Path, np.ndarray],
) -> None:
    directory, table = model
    found = gather_tables(directory / "model.onnx")
    assert list(found) == ["table"]  # "small" is too small to map, "scale" is no Gather's table
    mapped = found["table"]
    assert isinstance(mapped, np.memmap) and Path(str(mapped.filename)) == directory / "model.onnx"
    assert mapped.nbytes == MIN_MAPPED_BYTES and not mapped.flags.writeable
    np.testing.assert_array_equal(mapped, table)


def test_the_embedder_reads_its_table_from_the_file_and_embeds_as_before(
    model: tuple[Path, np.ndarray],
) -> None:
    directory, table = model
    files = json.loads((directory / MANIFEST).read_text())["files"]
    embedder = OnnxEmbedder(directory, files)
    assert list(embedder.mapped) == ["table"]
    vectors = embedder.embed_raw(["w1 w2 w3", "w1000"])
    expected = np.stack([table[[1, 2, 3]].mean(axis=0), table[1000]]) * 0.5
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    # The session reads the file's pages, not a copy: a row rewritten in the file is what it finds.
    mapped = embedder.mapped["table"]
    with (directory / "model.onnx").open("r+b") as file:
        file.seek(mapped.offset + 1000 * WIDTH * 4)
        file.write(np.arange(WIDTH, dtype="<f4").tobytes())
    np.testing.assert_allclose(
        embedder.embed_raw(["w1000"])[0], np.arange(WIDTH) / np.linalg.norm(np.arange(WIDTH)), rtol=1e-5
    )


def test_a_file_that_is_no_model_is_refused_plainly_and_the_embedder_leaves_it_to_onnx_runtime(
    tmp_path: Path,
) -> None:
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(_field(7, b"\x0a\xff\xff"))  # a graph whose first field runs past the end
    with pytest.raises(ValueError, match="not an ONNX model"):
        gather_tables(cut)
    empty = tmp_path / "empty.onnx"
    empty.touch()
    assert gather_tables(empty) == {}
