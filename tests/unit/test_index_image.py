"""The memories' index saved whole and read back (mnemo.index.image): what a restart reads instead
of the store."""

from __future__ import annotations

import builtins
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from mnemo.config import load_settings
from mnemo.embed import Embedder, load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.index import keys as keys_module
from mnemo.index.documents import CLOSED, CURRENT, SearchQuery
from mnemo.index.entities import entity_key
from mnemo.index.image import IndexImage
from mnemo.index.keys import KeyTable
from mnemo.index.live import RecallEngine
from mnemo.index.text import terms
from mnemo.index.vectors import VectorIndex
from mnemo.memories import EntityRef, Memory
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import Home, make_memory

AT = datetime(2026, 11, 2, tzinfo=UTC)
DIM = 16
SERVICES = ["billing", "gateway", "search", "ledger", "mailer"]
CURSOR = (1_790_000_000_000_000, "m00042", 3)
SOURCE = "chdb:///home/ana/store read by its one person"


def _memories(count: int) -> list[Memory]:
    out = []
    for i in range(count):
        service = SERVICES[i % len(SERVICES)]
        out.append(
            make_memory(
                f"m{i:05d}",
                f"the {service} service retries job {i} with backoff ticket T-{i * 7}",
                AT,
                namespace=f"workspace:w{i % 4}",
                type=MemoryType.FACT if i % 3 else MemoryType.DECISION,
                entities=[EntityRef(name=service.title(), role="subject")],
                why=f"because run {i} timed out" if i % 2 else "",
            )
        )
    return out


def _vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


@pytest.fixture
def embedder(home: Home) -> Embedder:
    """The fallback model (it installs with mnemo): the image is of its vectors."""
    loaded = load_embedder(load_settings({**home.env, "MNEMO_EMBEDDER": FALLBACK_ID}))
    assert loaded is not None
    return loaded


def _engine(tmp_path: Path, embedder: Embedder) -> RecallEngine:
    """An engine over 300 memories: most with vectors, some closed, some whose text changed."""
    engine = RecallEngine(embedder, tmp_path / "shelf-a")
    memories = _memories(300)
    engine.add_memories(memories, embedded={m.id for m in memories[:280]})
    engine.add_entities([(entity_key("Gateway"), "Gateway", ["api gateway", "the edge"])])
    engine.memories.put_vectors(
        [m.id for m in memories[:280]], embedder.embed_documents([m.what for m in memories[:280]])
    )
    for memory in memories[10:20]:
        engine.set_memory_status(memory.model_copy(update={"status": MemoryStatus.CLOSED, "version": 2}))
    changed = [
        m.model_copy(
            update={"what": f"{m.what} moved to the queue", "content": f"{m.content} moved", "version": 3}
        )
        for m in memories[30:35]
    ]
    engine.add_memories(changed)  # new rows without vectors (waiting for one); the old ones retire
    return engine


def _queries(embedder: Embedder) -> list[SearchQuery]:
    vector = embedder.embed_queries(["which service retries its jobs?"])[0]
    return [
        SearchQuery(terms=terms("gateway retries backoff"), statuses=(CURRENT, CLOSED)),
        SearchQuery(terms=terms("job 17 ticket"), vector=vector, limit=20),
        SearchQuery(terms=[], vector=vector, namespaces=["workspace:w1"], kinds=["decision"]),
        SearchQuery(terms=terms("queue"), entities=[entity_key("Ledger")], statuses=(CLOSED,)),
    ]


def _answers(engine: RecallEngine) -> list[list[tuple[str, float]]]:
    assert engine.embedder is not None
    return [
        [(r.key, round(r.score, 6)) for r in engine.memories.search(q)] for q in _queries(engine.embedder)
    ]


def test_an_engine_read_from_its_image_answers_as_the_one_that_saved_it(
    tmp_path: Path, embedder: Embedder
) -> None:
    saved = _engine(tmp_path, embedder)
    written = saved.save_image(tmp_path / "index", SOURCE, CURSOR)
    assert written > 0

    read = RecallEngine(embedder, tmp_path / "shelf-b")
    loaded = read.load_image(tmp_path / "index", SOURCE)
    assert loaded is not None and loaded[0] == CURSOR
    assert _answers(read) == _answers(saved)
    assert all(_answers(read))  # every query finds something
    assert len(read.memories) == len(saved.memories) == 300
    for memory_id in ("m00000", "m00015", "m00031", "m00299"):
        assert read.memory(memory_id) == saved.memory(memory_id)
    assert read.memory("m00015").status == MemoryStatus.CLOSED  # type: ignore[union-attr]
    assert read.matcher().find("is the edge down?") == [entity_key("Gateway")]
    # What had no vector waits for one again: 20 never had one, 5 changed their text since.
    waiting = read.take_backlog(100)
    assert sorted(key for _, key, _ in waiting) == sorted(
        [f"m{i:05d}" for i in range(280, 300)] + [f"m{i:05d}" for i in range(30, 35)]
    )
    assert all("moved to the queue" in text for _, key, text in waiting if key < "m00035")

    # Both go on alike: a new memory, a closed one, a new text.
    for engine in (saved, read):
        engine.add_memories([make_memory("n00001", "the gateway retries use jitter now", AT)])
        engine.set_memory_status(
            _memories(1)[0].model_copy(update={"status": MemoryStatus.CLOSED, "version": 2})
        )
        engine.memories.put_vectors(
            ["n00001"], embedder.embed_documents(["the gateway retries use jitter now"])
        )
    assert _answers(read) == _answers(saved)
    assert read.memories.search(SearchQuery(terms=terms("jitter")))[0].key == "n00001"


def test_vector_lists_are_read_back_with_the_rows_they_held(tmp_path: Path) -> None:
    index = VectorIndex(DIM, exact_max_rows=50)
    rows = np.arange(0, 600, dtype=np.int64)
    index.put(rows, _vectors(600, 2), [f"g{r % 3}" for r in rows.tolist()])
    assert index.has_lists
    again = VectorIndex.restored(*index.saved(), exact_max_rows=50)
    assert again.has_lists and again.size == index.size
    for query in _vectors(5, 7):
        for groups in (None, ["g1"]):
            found, scores = index.search(query, 10, None, groups)
            found_again, scores_again = again.search(query, 10, None, groups)
            assert found.tolist() == found_again.tolist()
            assert np.array_equal(scores, scores_again)
    more = np.arange(600, 640, dtype=np.int64)  # the restored groups grow as any other
    for target in (index, again):
        target.put(more, _vectors(40, 3), ["g2"] * 40)
    query = _vectors(1, 8)[0]
    assert index.search(query, 10)[0].tolist() == again.search(query, 10)[0].tolist()


def test_keys_read_back_find_their_newest_numbers_and_tell_colliding_hashes_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_hash = builtins.hash
    monkeypatch.setattr(
        keys_module, "hash", lambda k: 42 if k in {"alpha", "beta"} else real_hash(k), raising=False
    )
    table = KeyTable()
    table.append(["alpha", "x", "beta", "y", "x", "alpha"])
    again = KeyTable.restored(*table.arrays())
    assert list(again) == list(table)
    for key in ("alpha", "beta", "x", "y", "gone"):
        assert again.get(key) == table.get(key)
    assert [again.get(k) for k in ("alpha", "beta", "x", "y")] == [5, 2, 4, 3]
    assert again.numbers(["beta", "alpha", "gone"]).tolist() == [2, 5, -1]
    assert again.append(["beta"]).tolist() == [2]  # and goes on numbering
    assert again.get("beta") == 6


def test_an_image_that_does_not_check_out_is_not_read(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "index"
    _engine(tmp_path, embedder).save_image(directory, SOURCE, CURSOR)
    manifest_path = directory / "memories.image" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())

    def refused(change: dict[str, object], why: str) -> None:
        manifest_path.write_text(json.dumps({**manifest, **change}))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert RecallEngine(embedder, tmp_path / "shelf-c").load_image(directory, SOURCE) is None
        assert why in caplog.text

    refused({"format": 99}, "format 99")
    refused({"model": "another-model"}, "made with model 'another-model'")
    refused({"source": "http://ben@team:8123/mnemo read by ben"}, "made from 'http://ben@team")
    refused({"hash_probe": 1}, "another string hash salt")
    manifest_path.write_text(json.dumps(manifest))
    codes = directory / "memories.image" / "vectors.codes.npy"
    data = bytearray(codes.read_bytes())
    data[-1] ^= 0xFF
    codes.write_bytes(bytes(data))
    refused({}, "vectors.codes.npy does not match its hash")
    assert IndexImage(directory, "memories", embedder.model_id, SOURCE).read() is None


def test_a_save_cut_short_leaves_the_image_before_it(tmp_path: Path, embedder: Embedder) -> None:
    directory = tmp_path / "index"
    engine = _engine(tmp_path, embedder)
    engine.save_image(directory, SOURCE, CURSOR)

    def full_disk(path: Path) -> dict[str, np.ndarray]:
        path.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        IndexImage(directory, "memories", embedder.model_id, SOURCE).write(
            engine.memories.saved(), full_disk, {}, (1, "", 0)
        )
    loaded = RecallEngine(embedder, tmp_path / "shelf-d").load_image(directory, SOURCE)
    assert loaded is not None and loaded[0] == CURSOR
