"""Episodes in: accepted (bounded, secrets redacted), stored by group commit, and for hooks
journaled first.

Episode appends go through :class:`EpisodeWriter`, which folds the appends that arrive while an
insert is running into the next single insert (group commit): a burst of hook calls costs a few
inserts, not one each, and nothing is acknowledged before it is stored. A hook's episodes are
durable in the journal when :meth:`Recording.record` returns and reach the store shortly after
(:mod:`mnemo.daemon.journal`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream

from mnemo.config import Settings
from mnemo.daemon.journal import EpisodeJournal
from mnemo.daemon.quiet import QuietGate
from mnemo.daemon.rundir import ensure_private_dir
from mnemo.daemon.storecalls import StoreCalls
from mnemo.episodes import AppendResult, Episode, EpisodeIn, EpisodeIntake, Redactor
from mnemo.errors import MnemoError

logger = logging.getLogger(__name__)
T = TypeVar("T")
MAX_BATCH_EPISODES = 5_000
JOURNAL_QUEUE = 10_000  # journaled batches waiting for the store (an outage) before record waits


def with_waiting(
    receive: MemoryObjectReceiveStream[list[T]], batch: list[T], limit: int | None = None
) -> list[T]:
    """``batch`` extended with the lists already waiting in ``receive`` (until ``limit`` items):
    what arrived while the last batch was being written goes in one write."""
    while limit is None or len(batch) < limit:
        try:
            batch += receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
    return batch


@dataclass(slots=True)
class _PendingAppend:
    episodes: list[Episode]
    done: anyio.Event = field(default_factory=anyio.Event)
    results: list[AppendResult] | None = None
    error: Exception | None = None


class EpisodeWriter:
    """Group commit for episode appends; :meth:`run` runs for the daemon's whole life.
    ``on_stored`` is called on a worker thread with the episodes that were new."""

    def __init__(self, calls: StoreCalls, on_stored: Callable[[list[Episode]], None]) -> None:
        self._calls = calls
        self._on_stored = on_stored
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
            results = await self._calls(self._calls.store.append_episodes, episodes)
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
        # Acknowledged first (they are stored); indexed next, in a worker thread, since the index
        # may be busy with a page of the start-up build.
        stored = [e for e, r in zip(episodes, results, strict=True) if r.is_new]
        if stored:
            await anyio.to_thread.run_sync(self._on_stored, stored)


class Recording:
    """What reaches the daemon as episodes: appends (the API, imports) and hook turns."""

    def __init__(
        self,
        calls: StoreCalls,
        settings: Settings,
        redactor: Redactor,
        on_stored: Callable[[list[Episode]], None],
        quiet: QuietGate,
    ) -> None:
        self.intake = EpisodeIntake(
            max_chars=settings.max_episode_chars,
            default_namespace=settings.namespace_of_person,
            redactor=redactor,
        )
        self.writer = EpisodeWriter(calls, on_stored)
        ensure_private_dir(settings.run_dir)
        self.journal = EpisodeJournal(settings.run_dir / "episodes.journal")
        self._journaled_send, self._journaled_receive = anyio.create_memory_object_stream[list[Episode]](
            JOURNAL_QUEUE
        )
        self._journal_replayed = anyio.Event()
        self._committed = anyio.Event()  # set (and replaced) at each commit of journaled episodes
        self._quiet = quiet.writer()
        self._unstored: Counter[str] = Counter()  # per session, journaled episodes not in the store

    def redact(self, text: str) -> str:
        """``text`` as episodes store it: what may be shown to a model."""
        return self.intake.redact(text)

    @property
    def is_busy(self) -> bool:
        return self.writer.pending > 0

    async def append(self, incoming: Sequence[EpisodeIn]) -> list[AppendResult]:
        """Store each acceptable episode; refused ones come back with ``error`` and are not stored."""
        accepted: list[Episode] = []
        results: list[AppendResult | None] = []

        def accept() -> None:  # off the event loop: redaction reads every line
            for item in incoming:
                try:
                    accepted.append(self.intake.accept(item))
                    results.append(None)
                except MnemoError as exc:
                    results.append(AppendResult(id=item.id, is_new=False, error=str(exc)))

        await anyio.to_thread.run_sync(accept)
        stored = iter(await self.writer.submit(accepted) if accepted else [])
        return [r if r is not None else next(stored) for r in results]

    async def record(self, incoming: Sequence[EpisodeIn]) -> None:
        """Store episodes for a hook: durable in the journal on return, in the store shortly
        after. Raises on an episode the intake refuses."""

        def accept_and_journal() -> list[Episode]:
            # Off the event loop: redaction reads every line of a tool's output.
            accepted = [self.intake.accept(item) for item in incoming]
            self.journal.write(accepted)
            return accepted

        accepted = await anyio.to_thread.run_sync(accept_and_journal)
        self._unstored.update(e.session for e in accepted)
        # Journaled, so committed whatever happens to the request: a cancelled hook must not leave
        # them out of the queue (stored only at the next start, and counted unstored until then).
        with anyio.CancelScope(shield=True):
            await self._journaled_send.send(accepted)  # waits while JOURNAL_QUEUE batches queue

    async def run_journal(self) -> None:
        """Commit journaled episodes to the store (first those a stopped daemon left), forever."""
        left = await anyio.to_thread.run_sync(self.journal.replay)
        if left:
            logger.info("replaying %d journaled episodes a stopped daemon had not stored", len(left))
            self._unstored.update(e.session for e in left)  # what the commit below counts off
            await self._commit_journaled(left)
        self._journal_replayed.set()
        try:
            async with self._journaled_send, self._journaled_receive:
                async for first in self._journaled_receive:
                    await self._quiet.wait()  # durable in the journal meanwhile
                    batch = with_waiting(self._journaled_receive, list(first), MAX_BATCH_EPISODES)
                    await self._commit_journaled(batch)
        finally:
            self.journal.close()

    async def session_flushed(self, session: str) -> None:
        """:meth:`journal_flushed` for a read of one session's episodes: it waits only while some of
        them are journaled and not yet stored, or while the start's replay runs."""
        if not self._journal_replayed.is_set() or self._unstored[session]:
            await self.journal_flushed()

    async def journal_flushed(self, timeout_s: float = 5.0) -> None:
        """Wait (bounded) until every journaled episode is in the store: reads see what was recorded."""
        with anyio.move_on_after(timeout_s), self._quiet.hurried():
            await self._journal_replayed.wait()
            while self.journal.pending:
                await self._committed.wait()

    async def _commit_journaled(self, episodes: list[Episode]) -> None:
        delay = 1.0
        while True:
            try:
                await self.writer.submit(episodes)
            except Exception as exc:  # kept in the journal: retried now, replayed at the next start
                logger.warning(
                    "storing %d journaled episodes failed, retrying in %.0f s: %s", len(episodes), delay, exc
                )
                await anyio.sleep(delay)
                delay = min(60.0, delay * 2)
                continue
            self.journal.committed(len(episodes))
            self._unstored -= Counter(e.session for e in episodes)
            self._committed.set()
            self._committed = anyio.Event()
            return
