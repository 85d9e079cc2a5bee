"""The index follows the store: what other daemons write to a shared ClickHouse server reaches
this daemon's in-RAM index within about ``store_poll_s``.

Every memory version carries its commit time by the store's clock (``committed_at``, set by the
server at the insert; migration 9). Every ``store_poll_s`` seconds the follower reads the versions
committed after its cursor, a page of at most :data:`PAGE_ROWS` at a time (one page per poll,
the next right after when it was full), and applies each one newer than the index's copy: a new
memory is indexed, a new text re-indexed, a close, merge or forget changes its status in place.
A version the daemon wrote itself is already applied and is skipped. Episodes are followed the
same way, by their own commit time (migration 16) and cursor: an episode another daemon recorded
is indexed, so ``recall_episode`` finds it here too; those this daemon recorded are skipped.

An insert's rows are stamped when the server takes them and seen when the insert commits, so a
version stamped a moment before another may become visible after it. The cursor therefore never
passes the store's clock minus :data:`SETTLE_US`: the last seconds are read again at the next
poll (applying is idempotent) and a late-visible version is not skipped.

The writer asks for a poll before it judges a session (:meth:`Follower.poll`), so it judges
against what the store holds, not against what this daemon last saw. An embedded store has one
process: nothing to follow. ``mnemo status`` shows how far behind the store the index is.
"""

from __future__ import annotations

import logging
import time
from typing import TypeVar

import anyio

from mnemo.daemon.indexing import SETTLE_US, Indexing
from mnemo.daemon.storecalls import StoreCalls
from mnemo.errors import MnemoError

logger = logging.getLogger(__name__)
PAGE_ROWS = 1_000
_Cursor = TypeVar("_Cursor", tuple[int, str, int], tuple[int, str])


class Follower:
    def __init__(self, calls: StoreCalls, index: Indexing, poll_s: float, *, enabled: bool) -> None:
        self._calls = calls
        self._index = index
        self.poll_s = poll_s
        self.enabled = enabled and poll_s > 0
        self._cursor: tuple[int, str, int] = (0, "", 0)
        self._episode_cursor: tuple[int, str] = (0, "")
        self.episodes_applied = 0  # episodes other daemons recorded, indexed since the start
        self._lock = anyio.Lock()
        self.applied = 0  # versions applied since the start
        self.newest_applied = 0  # the newest commit (store µs) the index holds
        self.last_poll: float | None = None  # monotonic
        self.last_error = ""

    async def run(self) -> None:
        """Poll forever, once the index is built (the build read the store up to its start)."""
        if not self.enabled:
            return
        await self._index.built()
        while True:
            full = False
            try:
                full = await self.poll()
                self.last_error = ""
            except MnemoError as exc:
                if not self.last_error:
                    logger.warning("following the store failed: %s", exc)
                self.last_error = str(exc)
            await anyio.sleep(0 if full else self.poll_s)

    async def start_cursor(self) -> None:
        """Before the index build: versions committed from now on are followed (the build reads
        the store as it stands, the first poll what came during it)."""
        if self.enabled:
            clock = await self._calls(self._calls.store.store_clock)
            self._cursor = (clock - SETTLE_US, "", 0)
            self._episode_cursor = (clock - SETTLE_US, "")
            self.newest_applied = clock

    async def poll(self) -> bool:
        """Apply one page of the memory versions and one of the episodes the store committed
        since the last poll; True when a page was full (more is waiting)."""
        if not self.enabled:
            return False
        async with self._lock:
            memories_full = await self._memories()
            return await self._episodes() or memories_full

    async def _episodes(self) -> bool:
        store = self._calls.store
        changes = await self._calls(store.episode_changes, self._episode_cursor, PAGE_ROWS)
        if not changes:
            return False
        added = await anyio.to_thread.run_sync(self._index.follow_episodes, [e for _, e in changes])
        if added:
            self._index.wake_embedder()
        self.episodes_applied += added
        full = len(changes) == PAGE_ROWS
        settled = (await self._calls(store.store_clock) - SETTLE_US, "")
        self._episode_cursor = _moved_on(self._episode_cursor, changes[-1][0], settled, full=full)
        return full

    async def _memories(self) -> bool:
        store = self._calls.store
        changes = await self._calls(store.memory_changes, self._cursor, PAGE_ROWS)
        self.last_poll = time.monotonic()
        if not changes:
            return False
        applied = await anyio.to_thread.run_sync(self._index.apply_newest, [m for _, m in changes])
        if applied:
            self._index.wake_embedder()
        self.applied += applied
        last = changes[-1][0]
        self.newest_applied = max(self.newest_applied, last[0])
        full = len(changes) == PAGE_ROWS
        settled = (await self._calls(store.store_clock) - SETTLE_US, "", 0)
        self._cursor = _moved_on(self._cursor, last, settled, full=full)
        return full

    async def behind(self) -> tuple[int, float] | None:
        """How far the index is behind the store: versions committed after the newest one it
        applied, and their age in seconds; None when the store is not followed."""
        if not self.enabled:
            return None
        count, newest = await self._calls(self._calls.store.commits_after, self.newest_applied)
        return count, (newest - self.newest_applied) / 1e6 if count else 0.0


def _moved_on(cursor: _Cursor, last: _Cursor, settled: _Cursor, *, full: bool) -> _Cursor:
    """The cursor after a page whose last row is ``last``: a full page moves on whatever its age
    (a bulk load must make progress); otherwise the cursor stops at the settling window, read
    again next time."""
    return last if full or last < settled else max(cursor, settled)
