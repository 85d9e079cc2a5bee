"""Recall through the daemon: the live index, the installed embedder, over real HTTP on the socket."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta

import anyio
import numpy as np

from mnemo.api.recall import RecallEpisodeRequest, RecallRequest
from mnemo.client.typed import DaemonClient
from mnemo.clock import utc_now
from mnemo.embed import load_embedder
from mnemo.episodes import EpisodeIn, new_id
from mnemo.index.vectors import EXACT_MAX_ROWS
from mnemo.memories import EntityIn, EntityRef, Memory, RememberRequest
from mnemo.store import open_store
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import Home, embeddings_written_at, make_memory, store_memories, wait_for_vectors


def test_a_remembered_memory_is_recallable_at_once_and_by_meaning_once_embedded(home: Home) -> None:
    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            await client.remember(
                RememberRequest(
                    content="The nightly backup job writes to the cold storage bucket.", type=MemoryType.FACT
                )
            )
            memory = await client.remember(
                RememberRequest(
                    content="Deploys happen on Thursday afternoons.",
                    type=MemoryType.DECISION,
                    why="QA needs Wednesday to test the release candidate.",
                )
            )
            # By words, immediately: no wait for the embedder.
            found = await client.recall(RecallRequest(query="when are deploys?"))
            assert found.memories[0].memory.id == memory.id
            await wait_for_vectors(client)
            status = await client.status()
            assert status.embedder != "none"
            # By meaning: no word in common with the memory.
            found = await client.recall(
                RecallRequest(query="which weekday do we ship releases to production?")
            )
            assert found.memories[0].memory.id == memory.id

    anyio.run(scenario)


def test_forget_removes_a_memory_from_results_at_once(home: Home) -> None:
    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            memory = await client.remember(
                RememberRequest(content="The staging cluster lives in eu-west-3.", type=MemoryType.FACT)
            )
            assert [
                h.memory.id for h in (await client.recall(RecallRequest(query="staging cluster"))).memories
            ] == [memory.id]
            await client.forget(memory.id, "moved")
            result = await client.recall(RecallRequest(query="staging cluster"))
            assert memory.id not in [h.memory.id for h in result.memories]

    anyio.run(scenario)


def test_an_entity_alias_finds_its_memories(home: Home) -> None:
    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            memory = await client.remember(
                RememberRequest(
                    content="The primary database keeps two streaming replicas.",
                    type=MemoryType.FACT,
                    entities=[EntityIn(name="PostgreSQL", aliases=["pg", "postgres"])],
                )
            )
            await client.remember(RememberRequest(content="Redis keeps one replica.", type=MemoryType.FACT))
            result = await client.recall(RecallRequest(query="what do we know about pg?", explain=True))
            assert result.memories[0].memory.id == memory.id
            assert result.memories[0].explain is not None
            assert result.memories[0].explain["entity"] == 1.0

    anyio.run(scenario)


def _memory(content: str, *, status: MemoryStatus, days_ago: int, closed_by: str = "") -> Memory:
    return make_memory(
        new_id("mem_"),
        content,
        utc_now() - timedelta(days=days_ago),
        status=status,
        namespace="workspace:app",
        entities=[EntityRef(name="deploy")],
        valid_to=utc_now() if status is MemoryStatus.CLOSED else None,
        closed_by=closed_by,
    )


def test_the_index_built_at_start_ranks_closed_memories_behind_unless_history_is_asked(home: Home) -> None:
    thursday = _memory("We deploy on Thursday; QA needs Wednesday.", status=MemoryStatus.ACTIVE, days_ago=2)
    tuesday = _memory("We deploy on Tuesday.", status=MemoryStatus.CLOSED, days_ago=30, closed_by=thursday.id)
    store_memories(home, tuesday, thursday)

    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            await wait_for_vectors(client)  # the steady state: ranked with vectors too
            current = await client.recall(RecallRequest(query="what day do we deploy?"))
            assert [h.memory.id for h in current.memories] == [thursday.id, tuesday.id]
            assert current.memories[1].memory.status is MemoryStatus.CLOSED
            history = await client.recall(RecallRequest(query="what day did we deploy before?"))
            assert history.memories[0].memory.id == tuesday.id
            spanish = await client.recall(RecallRequest(query="¿qué día hacíamos deploy antes?"))
            assert spanish.memories[0].memory.id == tuesday.id
            forced = await client.recall(RecallRequest(query="deploy day", include_history=True))
            assert forced.memories[0].memory.id == tuesday.id

    anyio.run(scenario)


def test_recall_goes_down_to_episodes_and_recall_episode_searches_them_by_session(home: Home) -> None:
    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            await client.append(
                [
                    EpisodeIn(id="e1", text="The flaky test was the clock skew in CI.", session="s1", turn=1),
                    EpisodeIn(
                        id="e2", text="Clock skew again, in the staging cluster.", session="s2", turn=1
                    ),
                    EpisodeIn(id="e3", text="Lunch is at noon.", session="s2", turn=2),
                ]
            )
            result = await client.recall(RecallRequest(query="what caused the clock skew?"))
            assert result.memories == []
            assert {h.episode.id for h in result.episodes[:2]} == {"e1", "e2"}
            narrowed = await client.recall_episodes(RecallEpisodeRequest(query="clock skew", session="s2"))
            assert narrowed.episodes[0].episode.id == "e2"
            assert "e1" not in [h.episode.id for h in narrowed.episodes]

    anyio.run(scenario)


def test_a_restarted_daemon_rebuilds_the_index_and_reuses_stored_vectors(home: Home) -> None:
    async def first_life() -> str:
        async with DaemonClient(home.settings) as client:
            memory = await client.remember(
                RememberRequest(
                    content="Feature flags are read from the flags.yaml file.", type=MemoryType.FACT
                )
            )
            await client.append(
                [EpisodeIn(id="r1", text="We renamed the flags file last week.", session="r")]
            )
            await wait_for_vectors(client)
            return memory.id

    memory_id = anyio.run(first_life)
    home.mnemo("daemon", "stop")
    model = home.mnemo("status", "--json")  # starts a daemon again; stop it to read the store
    embedder = json.loads(model.stdout)["embedder"]
    home.mnemo("daemon", "stop")
    stored_before = embeddings_written_at(home, embedder)
    assert len(stored_before) == 3  # the memory, its note episode, the appended episode

    async def second_life() -> None:
        async with DaemonClient(home.settings) as client:
            await wait_for_vectors(client)
            found = await client.recall(RecallRequest(query="where do feature flags come from?"))
            assert found.memories[0].memory.id == memory_id
            episodes = await client.recall_episodes(RecallEpisodeRequest(query="renamed flags file"))
            assert episodes.episodes[0].episode.id == "r1"

    anyio.run(second_life)
    home.mnemo("daemon", "stop")
    assert embeddings_written_at(home, embedder) == stored_before, "vectors were recomputed"


def test_cli_recall_explain_shows_each_component_of_each_score(home: Home) -> None:
    home.mnemo("remember", "The gateway timeout is 600 s.", "--type", "fact", "--entity", "gateway:subject")
    shown = home.mnemo("recall", "gateway timeout", "--explain")
    line = next(line for line in shown.stdout.splitlines() if line.strip().startswith("score ="))
    for component in ("cosine", "vector", "lexical", "entity", "asked", "date", "history"):
        assert component in line
    as_json = json.loads(home.mnemo("recall", "gateway timeout", "--explain", "--json").stdout)
    assert set(as_json["memories"][0]["explain"]) >= {"vector", "lexical", "entity"}


def test_a_restarted_daemon_adopts_the_vector_lists_it_saved_and_finds_what_changed(home: Home) -> None:
    # Past the size where vector search goes through inverted lists; vectors written straight into the
    # store (random, under the installed model's id) spare embedding 20,000 texts.
    embedder = load_embedder(home.settings)
    assert embedder is not None
    count = EXACT_MAX_ROWS + 500
    at = datetime(2026, 11, 2, tzinfo=UTC)
    memories = [make_memory(f"m{i:05d}", f"note number {i}", at) for i in range(count)]
    questions = ["which database holds the orders?", "who reviews pull requests?", "how do we retry jobs?"]
    asked = embedder.embed_queries(questions)
    vectors = np.random.default_rng(3).standard_normal((count, embedder.dim)).astype(np.float32)
    vectors[7] = asked[2]  # the third question's answer, unchanged throughout
    store = open_store(home.settings.store)
    try:
        store.migrate()
        store.put_memories(memories)
        store.put_embeddings(embedder.model_id, [(m.id, 0) for m in memories], vectors)
    finally:
        store.close()

    async def life() -> tuple[list[str], list[str | None]]:
        async with DaemonClient(home.settings) as client:
            await wait_for_vectors(client)
            found = [await client.recall(RecallRequest(query=q, limit=10)) for q in questions]
            firsts = [f.memories[0].memory.id if f.memories else None for f in found]  # none: no answer
            return (await client.status()).vector_lists, firsts

    lists, first = anyio.run(life)
    assert lists[0] == f"memories: 286 lists made over {count:,} rows; saved"
    assert first[2] == "m00007"
    home.mnemo("daemon", "stop")

    # While the daemon is down, a memory gets the first question's vector, and a new one, first
    # in the store's order (every row after it moves), the second's. The next start keeps the
    # saved lists under the new rows, drops the changed row, sorts in both. (The whole index's
    # image would spare the build: it is set aside here, as one that does not check out is.)
    shutil.rmtree(home.settings.index_dir / "memories.image")
    store = open_store(home.settings.store)
    try:
        store.put_memories([make_memory("a0001", "a new note", at)])
        store.put_embeddings(embedder.model_id, [("m00042", 0), ("a0001", 0)], asked[:2])
    finally:
        store.close()
    lists, second = anyio.run(life)
    assert lists[0] == f"memories: saved lists adopted: {count - 1:,} rows kept, 1 dropped, 2 added"
    assert second == ["m00042", "a0001", "m00007"]
    assert f"memories: saved lists adopted: {count - 1:,} rows kept" in home.mnemo("status").stdout


def test_a_restarted_daemon_reads_its_saved_image_and_applies_what_the_store_got_since(home: Home) -> None:
    embedder = load_embedder(home.settings)
    assert embedder is not None
    at = datetime(2026, 11, 2, tzinfo=UTC)
    memories = [make_memory(f"m{i:05d}", f"note number {i}", at) for i in range(200)]
    questions = ["which database holds the orders?", "who reviews pull requests?"]
    asked = embedder.embed_queries(questions)
    store = open_store(home.settings.store)
    try:
        store.migrate()
        store.put_memories(memories)
        vectors = np.random.default_rng(4).standard_normal((len(memories), embedder.dim)).astype(np.float32)
        store.put_embeddings(embedder.model_id, [(m.id, 0) for m in memories], vectors)
    finally:
        store.close()

    async def life() -> tuple[str, list[str | None], str]:
        async with DaemonClient(home.settings) as client:
            await wait_for_vectors(client)
            found = [await client.recall(RecallRequest(query=q, limit=5)) for q in questions]
            closed = await client.recall(RecallRequest(query="note number 5", include_history=True))
            status = await client.status()
            return (
                status.index_memories_from,
                [f.memories[0].memory.id if f.memories else None for f in found],
                next(h.memory.status for h in closed.memories if h.memory.id == "m00005"),
            )

    assert anyio.run(life)[0] == "the store"
    home.mnemo("daemon", "stop")
    assert (home.settings.index_dir / "memories.image" / "manifest.json").exists()

    # While the daemon is down the store gets a new memory with its vector, a closed version of
    # another, and a new vector for a third: the image lacks all three.
    store = open_store(home.settings.store)
    try:
        store.put_memories([make_memory("a0001", "a new note", at)])
        store.put_memory(memories[5].model_copy(update={"status": MemoryStatus.CLOSED, "version": 2}))
        store.put_embeddings(embedder.model_id, [("a0001", 0), ("m00042", 0)], asked)
    finally:
        store.close()
    written = embeddings_written_at(home, embedder.model_id)
    source, first, status = anyio.run(life)
    assert source == "the saved image, 2 versions committed since applied"
    assert first == ["a0001", "m00042"]  # the vectors the store holds, not the image's nor new ones
    assert status == MemoryStatus.CLOSED
    home.mnemo("daemon", "stop")
    assert embeddings_written_at(home, embedder.model_id) == written, "vectors were recomputed"

    # What was applied was saved with the image at exit: nothing is applied again.
    assert anyio.run(life) == ("the saved image, 0 versions committed since applied", first, status)
