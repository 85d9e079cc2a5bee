"""The follower's cursor against a real store (embedded chDB, opened as a shared one would be):
versions are applied once, in commit order, and one the store shows late is not skipped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.config import load_settings
from mnemo.daemon import following
from mnemo.daemon.following import Follower
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.storecalls import StoreCalls
from mnemo.index.live import RecallEngine
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus
from tests.helpers import make_memory

pytestmark = pytest.mark.anyio


async def _started(store: ClickHouseStore) -> tuple[Follower, RecallEngine]:
    """A follower of ``store`` (as on a shared server) from now on, and the index it applies to."""
    calls = StoreCalls(store)
    index = Indexing(calls, load_settings({}), None)
    follower = Follower(calls, index, 1.0, enabled=True)
    await follower.start_cursor()
    return follower, index.engine


def _late_version(store: ClickHouseStore) -> None:
    """mem_a's next version (forgotten), stamped half a second before its newest: as a row the
    server took earlier but whose insert committed later."""
    store._db.command(
        "INSERT INTO memories SELECT * REPLACE (version + 1 AS version, 'forgotten' AS status, "
        "committed_at - INTERVAL 500 MILLISECOND AS committed_at) FROM memories "
        "WHERE id = 'mem_a' ORDER BY version DESC LIMIT 1"
    )


async def _one_memory_then_a_late_version(store: ClickHouseStore, follower: Follower) -> None:
    """mem_a, followed; then a late version of it, and a poll."""
    store.put_memories([make_memory("mem_a", "The gateway timeout is 600 s", datetime.now(UTC))])
    await follower.poll()
    _late_version(store)
    await follower.poll()


async def test_new_versions_are_applied_once_and_a_late_one_is_not_skipped(store: ClickHouseStore) -> None:
    follower, engine = await _started(store)
    store.put_memories([make_memory("mem_a", "The gateway timeout is 600 s", datetime.now(UTC))])
    await follower.poll()
    assert engine.memory("mem_a") is not None and follower.applied == 1
    await follower.poll()  # read again inside the settling window: nothing applied twice
    assert follower.applied == 1

    _late_version(store)
    await follower.poll()
    held = engine.memory("mem_a")
    assert held is not None and held.version == 2 and held.status is MemoryStatus.FORGOTTEN


async def test_without_the_settling_window_the_late_version_would_be_missed(
    store: ClickHouseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The window is what the test above relies on: with none, the same late row is skipped.
    monkeypatch.setattr(following, "SETTLE_US", 0)
    follower, engine = await _started(store)
    await _one_memory_then_a_late_version(store, follower)
    held = engine.memory("mem_a")
    assert held is not None and held.version == 1


async def test_a_full_page_moves_the_cursor_on_so_a_bulk_load_is_followed_whole(
    store: ClickHouseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(following, "PAGE_ROWS", 10)
    follower, _ = await _started(store)
    now = datetime.now(UTC)
    store.put_memories([make_memory(f"mem_{i:03d}", f"Setting number {i} is on", now) for i in range(35)])
    pages = 0
    while await follower.poll():
        pages += 1
        assert pages < 10
    assert follower.applied == 35 and pages == 3
    count, _ = await follower.behind() or (None, None)
    assert count == 0
