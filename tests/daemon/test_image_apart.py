"""A first start over a large store: the memories' index built by a process of its own
(mnemo.index.image_build), its image read by the daemon — the same answers as an index built in
the daemon, and the daemon builds in place when that process fails."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import anyio
import numpy as np
import pytest

from mnemo.api.recall import RecallRequest
from mnemo.client.typed import DaemonClient
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.index.image_build import ImageBuild, ImageBuildError
from mnemo.index.ranking import Weights
from mnemo.store import open_store
from tests.helpers import Home, embeddings_written_at, make_memory, wait_for_vectors

QUESTIONS = ["which database holds the orders?", "who reviews pull requests?", "note number 17"]
AT = datetime(2026, 11, 2, tzinfo=UTC)
CURSOR = (1_790_000_000_000_000, "m00042", 3)
SOURCE = "chdb:///home/ana/store read by its one person"
APART = "the store, by a process of its own (then read as its image)"


def _fill(home: Home) -> None:
    """200 memories; the first two questions' vectors are those of m00042 and m00007, and
    m00199 has none yet."""
    embedder = load_embedder(home.settings)
    assert embedder is not None
    memories = [make_memory(f"m{i:05d}", f"note number {i}", AT) for i in range(200)]
    vectors = np.random.default_rng(4).standard_normal((199, embedder.dim)).astype(np.float32)
    vectors[42], vectors[7] = embedder.embed_queries(QUESTIONS[:2])
    store = open_store(home.settings.store)
    try:
        store.migrate()
        store.put_memories(memories)
        store.put_embeddings(embedder.model_id, [(m.id, 0) for m in memories[:199]], vectors)
    finally:
        store.close()


def _answers(home: Home) -> tuple[str, list[list[tuple[str, float]]]]:
    """Where the daemon's memories came from, and each question's hits with their scores."""

    async def life() -> tuple[str, list[list[tuple[str, float]]]]:
        async with DaemonClient(home.settings) as client:
            await wait_for_vectors(client)
            found = [await client.recall(RecallRequest(query=q, limit=5)) for q in QUESTIONS]
            status = await client.status()
        return status.index_memories_from, [
            [(h.memory.id, round(h.score, 6)) for h in f.memories] for f in found
        ]

    answers = anyio.run(life)
    home.mnemo("daemon", "stop")
    return answers


def test_a_first_start_built_apart_answers_as_one_built_in_the_daemon(home: Home) -> None:
    _fill(home)
    model = load_embedder(home.settings)
    assert model is not None
    source, apart = _answers(home.with_env(MNEMO_INDEX_BUILD_APART_FROM="100"))
    assert source == APART
    assert [hits[0][0] for hits in apart] == ["m00042", "m00007", "m00017"]
    log = home.settings.log_path.read_text()
    assert "index image built apart in" in log, log
    written = embeddings_written_at(home, model.model_id)
    assert ("m00199", 0) in written, "the memory without a vector was not embedded after the image"

    # The same store built in the daemon itself (no image, fewer memories than the setting).
    shutil.rmtree(home.settings.index_dir / "memories.image")
    source, in_place = _answers(home.with_env(MNEMO_INDEX_BUILD_APART_FROM="1000"))
    assert source == "the store"
    assert in_place == apart
    assert embeddings_written_at(home, model.model_id) == written, "vectors were recomputed"


def test_the_daemon_builds_in_place_when_the_process_building_apart_fails(home: Home) -> None:
    _fill(home)
    # Where the image is written first, a file: the process building apart cannot save it.
    index_dir = home.settings.index_dir
    index_dir.mkdir(parents=True, exist_ok=True)
    (index_dir / "memories.image.new").write_text("in the way")
    source, answers = _answers(home.with_env(MNEMO_INDEX_BUILD_APART_FROM="100"))
    assert source == "the store"
    assert [hits[0][0] for hits in answers] == ["m00042", "m00007", "m00017"]
    log = home.settings.log_path.read_text()
    assert "the image build exited with 1: mnemo image build:" in log
    assert "File exists" in log
    assert "the index is built in the daemon" in log


def _build_apart(directory: Path) -> ImageBuild:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    return ImageBuild(directory, SOURCE, FALLBACK_ID, Weights(), env)


def test_a_build_apart_that_fails_says_why_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "index").write_text("a file where the index directory should be")
    build = _build_apart(tmp_path / "index" / "inner")
    with pytest.raises(ImageBuildError, match=r"exited with 1: mnemo image build: .*Not a directory"):
        build.send_memories([make_memory(f"m{i:05d}", f"note {i}", AT) for i in range(10)])
        build.finish(CURSOR)


def test_a_build_apart_stopped_before_save_leaves_no_image(tmp_path: Path) -> None:
    build = _build_apart(tmp_path)
    build.send_memories([make_memory(f"m{i:05d}", f"note {i}", AT) for i in range(50)])
    build.send_vectors(
        [(f"m{i:05d}", 0) for i in range(50)],
        np.random.default_rng(1).standard_normal((50, 16)).astype(np.float32),
    )
    build.abort()
    assert not (tmp_path / "memories.image").exists()
    assert not (tmp_path / "memories.image.new").exists()
