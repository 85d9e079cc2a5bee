"""What the daemon does, independent of HTTP: append, remember, forget, recall, status.

Store calls are blocking; they run in worker threads, one at a time (the store is not meant for
concurrent use). Episode appends go through :class:`EpisodeWriter`, which folds the appends that
arrive while an insert is running into the next single insert (group commit): a burst of hook
calls costs a few inserts, not one each, and nothing is acknowledged before it is stored.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.to_thread

from mnemo import __version__
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.api import Health, Status
from mnemo.episodes import (
    AppendResult,
    Episode,
    EpisodeIn,
    EpisodeIntake,
    EpisodeKind,
    Redactor,
    Role,
    new_id,
)
from mnemo.errors import MnemoError, NotFoundError
from mnemo.memories import Memory, MemoryStatus, Origin, RememberRequest, forgotten, search_text
from mnemo.recall import (
    EpisodeHit,
    EpisodesResult,
    MemoryHit,
    RecallEpisodeRequest,
    RecallRequest,
    RecallResult,
    query_terms,
    rank_bm25,
)
from mnemo.store import ClickHouseStore

logger = logging.getLogger(__name__)
T = TypeVar("T")
MAX_BATCH_EPISODES = 5_000


@dataclass(slots=True)
class _PendingAppend:
    episodes: list[Episode]
    done: anyio.Event = field(default_factory=anyio.Event)
    results: list[AppendResult] | None = None
    error: Exception | None = None


class EpisodeWriter:
    """Group commit for episode appends; :meth:`run` runs for the daemon's whole life."""

    def __init__(self, store: ClickHouseStore, limiter: anyio.CapacityLimiter) -> None:
        self._store = store
        self._limiter = limiter
        self._send, self._receive = anyio.create_memory_object_stream[_PendingAppend](1_000)
        self.pending = 0

    async def submit(self, episodes: list[Episode]) -> list[AppendResult]:
        """Store ``episodes`` (skipping ids already stored); return once they are durable."""
        item = _PendingAppend(episodes)
        self.pending += 1
        try:
            await self._send.send(item)
            await item.done.wait()
        finally:
            self.pending -= 1
        if item.error is not None:
            raise item.error
        assert item.results is not None
        return item.results

    async def run(self) -> None:
        async with self._receive:
            async for first in self._receive:
                batch, size = [first], len(first.episodes)
                while size < MAX_BATCH_EPISODES:
                    try:
                        item = self._receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    batch.append(item)
                    size += len(item.episodes)
                await self._commit(batch)

    async def _commit(self, batch: list[_PendingAppend]) -> None:
        episodes = [e for item in batch for e in item.episodes]
        try:
            results = await anyio.to_thread.run_sync(
                self._store.append_episodes, episodes, limiter=self._limiter
            )
        except Exception as exc:  # the writer loop must outlive one failed insert
            if not isinstance(exc, MnemoError):
                logger.exception("appending %d episodes failed", len(episodes))
            for item in batch:
                item.error = exc
                item.done.set()
            return
        offset = 0
        for item in batch:
            item.results = results[offset : offset + len(item.episodes)]
            offset += len(item.episodes)
            item.done.set()


class MemoryService:
    """The daemon's operations over one open store."""

    def __init__(self, store: ClickHouseStore, settings: Settings, redactor: Redactor) -> None:
        self._store = store
        self._settings = settings
        self._limiter = anyio.CapacityLimiter(1)
        self._intake = EpisodeIntake(
            max_chars=settings.max_episode_chars,
            default_namespace=settings.namespace_of_person,
            redactor=redactor,
        )
        self.writer = EpisodeWriter(store, self._limiter)
        self.started_at = utc_now()
        self._started_monotonic = time.monotonic()

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def health(self) -> Health:
        return Health(version=__version__, pid=os.getpid(), store=self._store.dsn_for_display)

    async def status(self) -> Status:
        counts = await self._call(self._store.counts)
        return Status(
            version=__version__,
            pid=os.getpid(),
            store=self._store.dsn_for_display,
            started_at=self.started_at,
            uptime_s=round(time.monotonic() - self._started_monotonic, 3),
            schema_version=counts.schema_version,
            episodes=counts.episodes,
            memories=counts.memories_by_status,
            entities=counts.entities,
        )

    async def append(self, incoming: Sequence[EpisodeIn]) -> list[AppendResult]:
        """Store each acceptable episode; refused ones come back with ``error`` and are not stored."""
        accepted: list[Episode] = []
        results: list[AppendResult | None] = []
        for item in incoming:
            try:
                accepted.append(self._intake.accept(item))
                results.append(None)
            except MnemoError as exc:
                results.append(AppendResult(id=item.id, is_new=False, error=str(exc)))
        stored = iter(await self.writer.submit(accepted) if accepted else [])
        return [r if r is not None else next(stored) for r in results]

    async def remember(self, request: RememberRequest) -> Memory:
        """Store an explicit memory, with a note episode holding its text as its source."""
        namespace = request.namespace or self._settings.namespace_of_person
        note = self._intake.accept(
            EpisodeIn(
                kind=EpisodeKind.NOTE,
                text=request.content,
                who="remember",
                role=Role.ASSISTANT,
                session=request.session,
                namespace=namespace,
            )
        )
        await self.writer.submit([note])
        now = utc_now()
        memory = Memory(
            id=new_id("mem_"),
            version=1,
            type=request.type,
            status=MemoryStatus.ACTIVE,
            namespace=namespace,
            content=request.content,
            what=request.what or request.content,
            who=request.who,
            when=request.when,
            where=request.where,
            why=request.why,
            how=request.how,
            entities=request.entities,
            sources=[note.id],
            origin=Origin.EXPLICIT,
            created_at=now,
            updated_at=now,
            valid_from=now,
        )
        await self._call(self._store.upsert_entities, [e.name for e in request.entities])
        await self._call(self._store.put_memory, memory)
        return memory

    async def forget(self, memory_id: str, reason: str) -> Memory:
        """Mark a memory forgotten (kept in the store; recall no longer returns it)."""
        memory = await self._call(self._store.get_memory, memory_id)
        if memory is None:
            raise NotFoundError(f"no memory has the id {memory_id!r}")
        if memory.status is MemoryStatus.FORGOTTEN:
            return memory
        updated = forgotten(memory, reason)
        await self._call(self._store.put_memory, updated)
        return updated

    async def recall(self, request: RecallRequest) -> RecallResult:
        terms = query_terms(request.query)
        if not terms:
            return RecallResult(memories=[], episodes=[])
        statuses = [MemoryStatus.ACTIVE]
        if request.include_history:
            statuses.append(MemoryStatus.CLOSED)
        types = [t.value for t in request.types] if request.types else None
        candidates, total = await self._call(
            lambda: self._store.memory_candidates(
                terms, statuses=statuses, namespace=request.namespace, types=types
            )
        )
        ranked = rank_bm25(terms, [search_text(m) for m in candidates], corpus_size=total)
        hits = [MemoryHit(score=round(s.score, 4), memory=candidates[s.index]) for s in ranked]
        # What is no longer true ranks behind what is current (stable: keeps score order inside).
        hits.sort(key=lambda h: h.memory.status is not MemoryStatus.ACTIVE)
        if hits:
            return RecallResult(memories=hits[: request.limit], episodes=[])
        episodes = await self._search_episodes(terms, request.namespace, None, request.limit)
        return RecallResult(memories=[], episodes=episodes)

    async def recall_episodes(self, request: RecallEpisodeRequest) -> EpisodesResult:
        if request.id is not None:
            found = await self._call(self._store.get_episodes, [request.id])
            if not found:
                raise NotFoundError(f"no episode has the id {request.id!r}")
            return EpisodesResult(episodes=[EpisodeHit(score=1.0, episode=e) for e in found])
        if request.query is not None:
            terms = query_terms(request.query)
            hits = await self._search_episodes(terms, request.namespace, request.session, request.limit)
            return EpisodesResult(episodes=hits)
        assert request.session is not None
        session = request.session
        found = await self._call(
            lambda: self._store.session_episodes(
                session,
                from_turn=request.from_turn,
                to_turn=request.to_turn,
                namespace=request.namespace,
                limit=request.limit,
            )
        )
        return EpisodesResult(episodes=[EpisodeHit(score=1.0, episode=e) for e in found])

    async def _search_episodes(
        self, terms: list[str], namespace: str | None, session: str | None, limit: int
    ) -> list[EpisodeHit]:
        if not terms:
            return []
        candidates, total = await self._call(
            lambda: self._store.episode_candidates(terms, namespace=namespace, session=session)
        )
        ranked = rank_bm25(terms, [e.text for e in candidates], corpus_size=total)
        return [EpisodeHit(score=round(s.score, 4), episode=candidates[s.index]) for s in ranked[:limit]]
