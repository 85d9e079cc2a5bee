"""The store on real embedded ClickHouse (chDB) in a temporary directory."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from mnemo.episodes import EpisodeIn, EpisodeIntake
from mnemo.errors import StoreError
from mnemo.memories import EntityRef, Memory, Origin, forgotten
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore, open_store
from mnemo.store.migrations import MIGRATIONS
from mnemo.vocabulary import MemoryStatus, MemoryType

INTAKE = EpisodeIntake(max_chars=10_000, default_namespace="person:tester", redactor=SecretRedactor())


def _memory(memory_id: str, content: str, **changes: object) -> Memory:
    now = datetime.now(UTC)
    values: dict[str, object] = dict(
        id=memory_id, version=1, type=MemoryType.DECISION, status=MemoryStatus.ACTIVE,
        namespace="person:tester",
        content=content, what=content, who="Ana", when="", where="", why="", how="",
        entities=[EntityRef(name="gateway", role="subject")], sources=["ep-1"], origin=Origin.EXPLICIT,
        created_at=now, updated_at=now, valid_from=now,
    )  # fmt: skip
    values.update(changes)
    return Memory.model_validate(values)


def test_migrations_are_recorded_once_and_reopening_applies_nothing(tmp_path: Path) -> None:
    dsn = f"chdb://{tmp_path / 'store'}"
    first = open_store(dsn)
    assert first.schema_version() == MIGRATIONS[-1].version
    first.close()
    again = open_store(dsn)
    try:
        assert again.migrate() == MIGRATIONS[-1].version
        rows = again._db.query("SELECT count() FROM mnemo_schema_versions").result_rows
        assert rows == [(len(MIGRATIONS),)]
    finally:
        again.close()


def test_a_store_at_schema_13_migrates_with_its_memories_and_their_history_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store as the last release left it: migrations up to 13, a memory with two versions.
    dsn = f"chdb://{tmp_path / 'store'}"
    monkeypatch.setattr("mnemo.store.clickhouse.MIGRATIONS", MIGRATIONS[:13])
    old = open_store(dsn)
    try:
        assert old.schema_version() == 13
        for version, status in ((1, MemoryStatus.ACTIVE), (2, MemoryStatus.CLOSED)):
            row = _memory("mem-old", "Deploys go out on Tuesdays", version=version, status=status)
            columns, [values] = old._rows([row], "")  # as a release before migration 14 wrote it
            kept = [(c, v) for c, v in zip(columns, values, strict=True) if c != "replaces"]
            old._db.insert("memories", [[v for _, v in kept]], column_names=[c for c, _ in kept])
    finally:
        old.close()
    monkeypatch.setattr("mnemo.store.clickhouse.MIGRATIONS", MIGRATIONS)
    store = open_store(dsn)
    try:
        assert store.schema_version() == MIGRATIONS[-1].version == 16
        kept = store.get_memory("mem-old")
        assert kept is not None and (kept.version, kept.replaces) == (2, "")
        store.put_memory(_memory("mem-new", "Deploys go out on Thursdays", replaces="mem-old"))
        [new] = store.memory_versions(["mem-new"])
        assert new.memory.replaces == "mem-old"  # the history's copy carries the new column
        copied = store._db.query("SELECT replaces FROM memory_history WHERE id = 'mem-new'").result_rows
        assert copied == [("mem-old",)]
        assert [v.memory.version for v in store.memory_versions(["mem-old"])] == [1, 2]
    finally:
        store.close()


def test_append_reports_new_and_already_stored_ids(store: ClickHouseStore) -> None:
    one = INTAKE.accept(EpisodeIn(id="e-1", text="first", session="s", turn=0))
    two = INTAKE.accept(EpisodeIn(id="e-2", text="second", session="s", turn=1))
    assert [r.is_new for r in store.append_episodes([one, two, one])] == [True, True, False]
    assert [r.is_new for r in store.append_episodes([two])] == [False]
    assert store.counts().episodes == 2
    stored = store.session_episodes("s", from_turn=None, to_turn=None, namespace=None, limit=10)
    assert [e.id for e in stored] == ["e-1", "e-2"]
    assert stored[0].time.tzinfo is not None


def test_a_new_memory_version_replaces_the_current_state(store: ClickHouseStore) -> None:
    memory = _memory("m-1", "raise the gateway timeout to 600 s")
    store.put_memory(memory)
    store.put_memory(forgotten(memory, "wrong"))
    current = store.get_memory("m-1")
    assert current is not None and current.status is MemoryStatus.FORGOTTEN and current.version == 2
    scanned = store.memories_page("", 10)
    assert [(m.id, m.version, m.status) for m in scanned] == [("m-1", 2, MemoryStatus.FORGOTTEN)]
    assert store.counts().memories_by_status == {"forgotten": 1}


def test_every_version_of_a_memory_survives_the_merge_that_folds_memories(store: ClickHouseStore) -> None:
    """memories keeps a memory's newest version once its parts merge; memory_history keeps them all,
    whatever wrote them (an insert, the writer's fenced INSERT … SELECT)."""
    memory = _memory("m-1", "raise the gateway timeout to 600 s")
    store.put_memory(memory)
    store.put_memories([forgotten(memory, "wrong")], batch="batch_a")
    third = memory.model_copy(update={"version": 3, "status": MemoryStatus.ACTIVE, "content": "600 s, again"})
    store.write_lease("writer", "me", 1, 60.0)
    assert store.put_memories_fenced([third], batch="batch_b", lease=("writer", "me", 1))
    store._db.command("OPTIMIZE TABLE memories FINAL")
    assert store._db.query("SELECT version FROM memories WHERE id = 'm-1'").result_rows == [(3,)]
    versions = store.memory_versions(["m-1", "m-unknown"])
    assert [(v.memory.version, v.memory.status, v.batch) for v in versions] == [
        (1, MemoryStatus.ACTIVE, ""),
        (2, MemoryStatus.FORGOTTEN, "batch_a"),
        (3, MemoryStatus.ACTIVE, "batch_b"),
    ]
    assert versions[0].committed_at <= versions[1].committed_at


def test_memory_round_trips_its_entities_and_sources(store: ClickHouseStore) -> None:
    memory = _memory(
        "m-2", "cut streams", entities=[EntityRef(name="lb.tf", role="location")], sources=["a", "b"]
    )
    store.put_memory(memory)
    assert store.get_memory("m-2") == memory


def test_embeddings_are_kept_per_model_and_load_back_as_matrices(store: ClickHouseStore) -> None:
    vectors = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    keys = [("m-0", 0), ("m-1", 0), ("ep-1", 0), ("ep-1", 1), ("ep-2", 0)]
    store.put_embeddings("model-a", keys, vectors)
    store.put_embeddings("model-b", [("m-0", 0)], np.ones((1, 4), dtype=np.float32))
    store.put_embeddings("model-a", keys[:1], vectors[:1])  # re-sent: folded, not doubled
    loaded, after = {}, ("", 0)
    while True:  # pages of two, in key order
        found, matrix = store.embeddings_page("model-a", after, 2)
        if not found:
            break
        assert len(found) <= 2 and found == sorted(found)
        loaded.update(zip(found, matrix, strict=True))
        after = found[-1]
    assert sorted(loaded) == sorted(keys)
    for i, key in enumerate(keys):
        np.testing.assert_array_equal(loaded[key], vectors[i])
    only_b, matrix_b = store.embeddings_page("model-b", ("", 0), 10)
    assert only_b == [("m-0", 0)] and matrix_b.shape == (1, 4)
    assert store.embeddings_page("model-c", ("", 0), 10)[0] == []


def test_pages_of_memories_and_episodes_cover_everything_once(store: ClickHouseStore) -> None:
    for i in range(7):
        store.put_memory(_memory(f"m-{i}", f"memory {i}"))
    store.append_episodes(
        [INTAKE.accept(EpisodeIn(id=f"e-{i}", text=f"t {i}", session="s")) for i in range(5)]
    )
    seen, after = [], ""
    while page := store.memories_page(after, 3):
        seen += [m.id for m in page]
        after = page[-1].id
    assert seen == [f"m-{i}" for i in range(7)]
    seen, after = [], ""
    while episodes := store.episodes_page(after, 2):
        seen += [e.id for e in episodes]
        after = episodes[-1].id
    assert seen == [f"e-{i}" for i in range(5)]


def test_entities_gain_aliases_without_losing_the_ones_they_had(store: ClickHouseStore) -> None:
    store.upsert_entities([("postgresql", "PostgreSQL", ["pg"])])
    store.upsert_entities([("postgresql", "postgresql", ["postgres"]), ("redis", "Redis", [])])
    assert sorted(store.all_entities()) == [
        ("postgresql", "PostgreSQL", ["pg", "postgres"]),
        ("redis", "Redis", []),
    ]


def test_a_store_path_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create the store directory"):
        open_store(f"chdb://{blocker / 'store'}")


def test_an_unreachable_server_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot open the store http://127.0.0.1:9"):
        open_store("http://127.0.0.1:9/mnemo")


def test_the_embedded_store_gives_back_the_memory_its_queries_freed(store: ClickHouseStore) -> None:
    # The daemon asks after its start-up build; chDB without its jemalloc command would raise.
    store.put_memories([_memory(f"m{i:03d}", f"note {i}") for i in range(50)])
    assert len(store.memories_page("", 100)) == 50
    store.give_back_memory()
    assert store.memory_count() == 50
