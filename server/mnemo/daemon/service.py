"""What the daemon does, independent of HTTP: append, remember, forget, recall, status.

Store calls are blocking; they run in worker threads, one at a time (the store is not meant for
concurrent use). Episode appends go through :class:`EpisodeWriter`, which folds the appends that
arrive while an insert is running into the next single insert (group commit): a burst of hook
calls costs a few inserts, not one each, and nothing is acknowledged before it is stored.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import gc
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import numpy as np
import numpy.typing as npt
from anyio.streams.memory import MemoryObjectReceiveStream

from mnemo import __version__
from mnemo.clock import utc_now
from mnemo.config import Settings, redact_dsn
from mnemo.daemon.api import (
    DistillQueued,
    DistillStatus,
    Health,
    JudgeLog,
    JudgeLogEntry,
    ModelSpend,
    ModelStatus,
    Status,
)
from mnemo.daemon.distilling import DistillLoop
from mnemo.daemon.journal import EpisodeJournal
from mnemo.daemon.keeping import CuratedSets
from mnemo.daemon.rundir import ensure_private_dir
from mnemo.distill.meter import TokenMeter
from mnemo.embed import Embedder
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
from mnemo.errors import MnemoError, NotFoundError, NotReadyError
from mnemo.index.engine import Ranked
from mnemo.index.entities import entity_key
from mnemo.index.live import Question, RecallEngine, passage_key, split_key
from mnemo.injected import refuse_unfit
from mnemo.memories import EntityRef, Memory, Origin, RememberRequest, forgotten
from mnemo.recall import (
    EpisodeHit,
    EpisodesResult,
    MemoryHit,
    RecallEpisodeRequest,
    RecallRequest,
    RecallResult,
)
from mnemo.secrets import refuse_secrets
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
T = TypeVar("T")
MAX_BATCH_EPISODES = 5_000
EMBED_BATCH = 16
QUIET_S = 0.3  # the background embedding waits this long after the last question
BUSY_S = 5.0  # and embeds BUSY_BATCH at a time when the last question is more recent than this
BUSY_BATCH = 2
BUILD_PAGE_ROWS = 5_000
KEY_PAGE_ROWS = 50_000


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


def _give_back_freed_memory() -> None:
    """Return to the system what the index build allocated and freed. glibc keeps freed blocks
    inside the process (its mmap threshold rises with each large block freed, so later ones come
    from the heap), and the daemon's RSS stays near the build's peak without this. Where there is
    no malloc_trim (macOS, musl) there is nothing to do."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


@dataclass(slots=True)
class _PendingAppend:
    episodes: list[Episode]
    done: anyio.Event = field(default_factory=anyio.Event)
    results: list[AppendResult] | None = None
    error: Exception | None = None


class EpisodeWriter:
    """Group commit for episode appends; :meth:`run` runs for the daemon's whole life."""

    def __init__(
        self,
        store: ClickHouseStore,
        limiter: anyio.CapacityLimiter,
        on_stored: Callable[[list[Episode]], None],
    ) -> None:
        self._store = store
        self._limiter = limiter
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
        # Acknowledged first (they are stored); indexed next, in a worker thread, since the index
        # may be busy with a page of the start-up build.
        stored = [e for e, r in zip(episodes, results, strict=True) if r.is_new]
        if stored:
            await anyio.to_thread.run_sync(self._on_stored, stored)


class MemoryService:
    """The daemon's operations over one open store."""

    def __init__(
        self, store: ClickHouseStore, settings: Settings, redactor: Redactor, embedder: Embedder | None
    ) -> None:
        self._store = store
        self._settings = settings
        self._limiter = anyio.CapacityLimiter(1)
        self.engine = RecallEngine(embedder)
        self.meter = TokenMeter(store, settings.llm_daily_token_cap)
        self.distilling = DistillLoop(store, self.engine, settings, self.meter)
        self.kept = CuratedSets(store, settings, self.call_store)
        self._index_ready = anyio.Event()
        self._index_build_s: float | None = None
        self._vector_graphs: list[str] = []
        self._embedder_limiter = anyio.CapacityLimiter(1)
        self._backlog_added = anyio.Event()
        self._intake = EpisodeIntake(
            max_chars=settings.max_episode_chars,
            default_namespace=settings.namespace_of_person,
            redactor=redactor,
        )
        self.writer = EpisodeWriter(store, self._limiter, self._index_episodes)
        ensure_private_dir(settings.run_dir)
        self.journal = EpisodeJournal(settings.run_dir / "episodes.journal")
        self._journaled_send, self._journaled_receive = anyio.create_memory_object_stream[list[Episode]](
            10_000
        )
        self._journal_replayed = anyio.Event()
        self.started_at = utc_now()
        self._last_question = 0.0
        self._embedding_in_flight = 0
        self._started_monotonic = time.monotonic()

    @property
    def store(self) -> ClickHouseStore:
        return self._store

    @property
    def settings(self) -> Settings:
        return self._settings

    def redact(self, text: str) -> str:
        """``text`` as episodes store it: what may be shown to a model."""
        return self._intake.redact(text)

    async def call_store(self, fn: Callable[..., T], *args: object) -> T:
        """Run a store call on a worker thread, one at a time (the store's client is shared)."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def health(self) -> Health:
        return Health(
            version=__version__,
            pid=os.getpid(),
            store=self._store.dsn_for_display,
            inputs=self._settings.inputs_digest,
            request_timeout_s=self._settings.request_timeout_s,
        )

    async def status(self) -> Status:
        counts = await self.call_store(self._store.counts)
        spend = await self.call_store(self.meter.today)
        failed, last_failure = (
            await self.call_store(self._store.failed_summary) if self.distilling.state.enabled else (0, "")
        )
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
            embedder=self.engine.embedder.model_id if self.engine.embedder else "none",
            index_ready=self._index_ready.is_set(),
            index_build_s=self._index_build_s,
            vector_graphs=self._vector_graphs,
            embedding_backlog=self.engine.backlog + self._embedding_in_flight,
            language_model=ModelStatus(
                endpoint=redact_dsn(self._settings.llm_url),
                model=self._settings.llm_model,
                tokens_today=spend.tokens,
                daily_cap=spend.cap,
                resumes_at=spend.resumes_at,
                by_model=[ModelSpend(**dataclasses.asdict(u)) for u in spend.by_model],
            ),
            distillation=DistillStatus(
                **dataclasses.asdict(self.distilling.state), failed_batches=failed, last_failure=last_failure
            ),
        )

    # -- distillation --------------------------------------------------------------------------

    def distil(self, session: str) -> DistillQueued:
        """Distil ``session`` now (the PreCompact and SessionEnd hooks ask this, and POST /v1/distill)."""
        if not self.distilling.state.enabled:
            return DistillQueued(queued=False, reason="no language model is configured (llm_url, llm_model)")
        self.distilling.request(session)
        return DistillQueued(queued=True)

    async def judge_log(self, limit: int, session: str | None) -> JudgeLog:
        rows = await self.call_store(self._store.judge_log, limit, session)
        return JudgeLog(
            entries=[
                JudgeLogEntry(
                    at=r.at,
                    batch=r.batch,
                    session=r.session,
                    namespace=r.namespace,
                    memory=r.memory,
                    action=r.action,
                    target=r.target,
                    closes=r.closes,
                    reason=r.reason,
                    detail=json.loads(r.detail),
                )
                for r in rows
            ]
        )

    # -- the index -----------------------------------------------------------------------------

    async def build_index(self) -> None:
        """Load everything from the store into the engine, page by page.

        Each page is read with the store to itself and indexed without it, so appends and
        remembers that arrive during a long build are stored at once, not queued behind it.
        """
        started = time.monotonic()
        engine, embedder = self.engine, self.engine.embedder
        embedded: set[str] = set()
        if embedder is not None:
            after_key = ("", 0)
            while keys := await self.call_store(
                self._store.embedding_keys_page, embedder.model_id, after_key, KEY_PAGE_ROWS
            ):
                # A memory's vector is (id, 0); a passage's is (episode id, n), keyed "id#n".
                embedded.update(passage_key(o, p) for o, p in keys)
                embedded.update(o for o, p in keys if p == 0)
                after_key = keys[-1]
        after = ""
        while memories := await self.call_store(self._store.memories_page, after, BUILD_PAGE_ROWS):
            await anyio.to_thread.run_sync(
                functools.partial(engine.add_memories, memories, embedded, bulk=True)
            )
            after = memories[-1].id
        after = ""
        while episodes := await self.call_store(self._store.episodes_page, after, BUILD_PAGE_ROWS):
            await anyio.to_thread.run_sync(
                functools.partial(engine.add_episodes, episodes, embedded, bulk=True)
            )
            after = episodes[-1].id
        engine.add_entities(await self.call_store(self._store.all_entities))
        if embedder is not None:
            async for keys, matrix in self._embedding_pages(embedder.model_id):
                await anyio.to_thread.run_sync(engine.load_vectors, keys, matrix)
        finishing = time.monotonic()
        graphs = await anyio.to_thread.run_sync(engine.finish_build, self._settings.index_dir)
        logger.info("index finished in %.1f s: %s", time.monotonic() - finishing, "; ".join(graphs))
        self._vector_graphs = graphs
        # The index's objects live as long as the daemon: keep the cyclic collector from walking
        # them again at every full collection (a pause proportional to the index's size).
        gc.collect()
        gc.freeze()
        _give_back_freed_memory()
        self._index_build_s = round(time.monotonic() - started, 3)
        self._index_ready.set()
        self._backlog_added.set()
        logger.info(
            "index built in %.1f s: %d memories, %d episode passages, %d waiting for vectors",
            time.monotonic() - started,
            len(engine.memories),
            len(engine.passages),
            engine.backlog,
        )

    async def save_index(self) -> None:
        """At exit: save the vector graphs that changed much since the start (never raises)."""
        if not self._index_ready.is_set():
            return
        started = time.monotonic()
        try:
            saved = await anyio.to_thread.run_sync(self.engine.save_graphs, self._settings.index_dir)
        except Exception:
            logger.exception("vector graphs not saved")
            return
        if saved:
            logger.info("vector graphs saved in %.1f s: %d nodes", time.monotonic() - started, saved)

    async def _embedding_pages(
        self, model: str
    ) -> AsyncIterator[tuple[list[tuple[str, int]], npt.NDArray[np.float32]]]:
        after = ("", 0)
        while True:
            keys, matrix = await self.call_store(self._store.embeddings_page, model, after, BUILD_PAGE_ROWS)
            if not keys:
                return
            yield keys, matrix
            after = keys[-1]

    async def _ready(self) -> None:
        """Wait a bounded while for the start-up index build; then say so rather than hang."""
        with anyio.move_on_after(min(10.0, self._settings.request_timeout_s / 2)):
            await self._index_ready.wait()
        if not self._index_ready.is_set():
            loaded = len(self.engine.memories)
            raise NotReadyError(
                f"the daemon is still building its search index from the store ({loaded:,} memories "
                "loaded so far); try again in a moment"
            )

    def _index_episodes(self, episodes: list[Episode]) -> None:
        """Runs in a worker thread (see EpisodeWriter); the embedder is woken on the event loop."""
        self.engine.add_episodes(episodes)
        anyio.from_thread.run_sync(self._wake_embedder)

    def _wake_embedder(self) -> None:
        self._backlog_added.set()

    async def record(self, incoming: Sequence[EpisodeIn]) -> None:
        """Store episodes for a hook: durable in the journal on return, in the store shortly after
        (:mod:`mnemo.daemon.journal`). Raises on an episode the intake refuses."""

        def accept_and_journal() -> list[Episode]:
            # Off the event loop: redaction reads every line (~1 ms per KB of dense tool output).
            accepted = [self._intake.accept(item) for item in incoming]
            self.journal.write(accepted)
            return accepted

        accepted = await anyio.to_thread.run_sync(accept_and_journal)
        await self._journaled_send.send(accepted)  # waits while 10,000 batches queue (a store outage)

    async def run_journal(self) -> None:
        """Commit journaled episodes to the store (first those a stopped daemon left), forever."""
        left = await anyio.to_thread.run_sync(self.journal.replay)
        if left:
            logger.info("replaying %d journaled episodes a stopped daemon had not stored", len(left))
            await self._commit_journaled(left)
        self._journal_replayed.set()
        try:
            async with self._journaled_send, self._journaled_receive:
                async for first in self._journaled_receive:
                    batch = with_waiting(self._journaled_receive, list(first), MAX_BATCH_EPISODES)
                    await self._commit_journaled(batch)
        finally:
            self.journal.close()

    async def journal_flushed(self, timeout_s: float = 5.0) -> None:
        """Wait (bounded) until every journaled episode is in the store: reads see what was recorded."""
        with anyio.move_on_after(timeout_s):
            await self._journal_replayed.wait()
            while self.journal.pending:
                await anyio.sleep(0.005)

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
            return

    async def run_distillation(self) -> None:
        """The writer's loop (a no-op without a model); runs for the daemon's whole life."""
        await self.distilling.run(self._index_ready, self.journal_flushed)

    async def run_embedding(self) -> None:
        """Give every indexed item a vector of the active model, in the background, forever."""
        embedder = self.engine.embedder
        if embedder is None:
            return
        while True:
            await self._backlog_added.wait()
            self._backlog_added = anyio.Event()
            while self.engine.backlog:
                # Questions first: a batch waits until no question has come for QUIET_S, so a hook
                # does not share the 2 cores with the embedding of the episode it just recorded;
                # while questions keep coming, batches are small, so the next one waits less.
                while (quiet := time.monotonic() - self._last_question) < QUIET_S:
                    await anyio.sleep(QUIET_S - quiet)
                items = self.engine.take_backlog(EMBED_BATCH if quiet >= BUSY_S else BUSY_BATCH)
                if not items:
                    break
                self._embedding_in_flight = len(items)  # still "waiting for vectors" in status
                try:
                    await self._embed(embedder, items)
                finally:
                    self._embedding_in_flight = 0

    async def _embed(self, embedder: Embedder, items: list[tuple[str, str, str]]) -> None:
        vectors = await anyio.to_thread.run_sync(
            embedder.embed_documents, [text for _, _, text in items], limiter=self._embedder_limiter
        )
        keys = [split_key(key) for _, key, _ in items]
        try:
            await self.call_store(self._store.put_embeddings, embedder.model_id, keys, vectors)
        except MnemoError:
            logger.exception("storing %d embeddings failed; they are recomputed at next start", len(keys))
        self.engine.put_vectors([(name, key) for name, key, _ in items], vectors)

    @property
    def is_busy(self) -> bool:
        """Work that should keep the daemon alive: pending writes, an embedding backlog, a batch
        being distilled (a session waiting for a model that is down does not keep it alive)."""
        busy_embedding = self.engine.backlog > 0 or self._embedding_in_flight > 0
        return self.writer.pending > 0 or busy_embedding or self.distilling.is_busy

    async def append(self, incoming: Sequence[EpisodeIn]) -> list[AppendResult]:
        """Store each acceptable episode; refused ones come back with ``error`` and are not stored."""
        accepted: list[Episode] = []
        results: list[AppendResult | None] = []

        def accept() -> None:  # off the event loop: redaction reads every line
            for item in incoming:
                try:
                    accepted.append(self._intake.accept(item))
                    results.append(None)
                except MnemoError as exc:
                    results.append(AppendResult(id=item.id, is_new=False, error=str(exc)))

        await anyio.to_thread.run_sync(accept)
        stored = iter(await self.writer.submit(accepted) if accepted else [])
        return [r if r is not None else next(stored) for r in results]

    async def remember(self, request: RememberRequest, *, manual: bool = False) -> Memory:
        """Store an explicit memory, with a note episode holding its text as its source. Refuses
        (SecretError) content holding a credential. ``manual``: a person typed it (the review
        page), so a person backs it."""
        for name in ("content", "what", "who", "when", "where", "why", "how"):
            refuse_unfit(getattr(request, name), name)
            refuse_secrets(getattr(request, name), name)
        for entity in request.entities:
            refuse_unfit(" ".join([entity.name, entity.role, *entity.aliases]), "entities")
            refuse_secrets(" ".join([entity.name, *entity.aliases]), "entities")
        namespace = request.namespace or self._settings.namespace_of_person
        note = self._intake.accept(
            EpisodeIn(
                kind=EpisodeKind.NOTE,
                text=request.content,
                who="review page" if manual else "remember",
                role=Role.USER if manual else Role.ASSISTANT,
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
            entities=[EntityRef(name=e.name, role=e.role) for e in request.entities],
            sources=[note.id],
            origin=Origin.MANUAL if manual else Origin.EXPLICIT,
            has_human_backing=manual,
            created_at=now,
            updated_at=now,
            valid_from=now,
        )
        entities = [(entity_key(e.name), e.name, list(e.aliases)) for e in request.entities]
        await self.call_store(self._store.upsert_entities, entities)
        await self.call_store(self._store.put_memory, memory)
        self.engine.add_entities(entities)
        await anyio.to_thread.run_sync(self.engine.add_memories, [memory])
        self._backlog_added.set()
        return memory

    def apply_to_index(self, memory: Memory, *, is_text_changed: bool) -> None:
        """Apply a new version of a stored memory to the index at once (a new text: re-indexed,
        its vector recomputed in the background — call :meth:`wake_embedder` after; otherwise its
        status and stored copy). Thread-safe: the engine locks itself."""
        if is_text_changed:
            self.engine.add_memories([memory])
        else:
            self.engine.set_memory_status(memory)

    def wake_embedder(self) -> None:
        """Tell the background embedder there is new text (from the event loop's thread)."""
        self._backlog_added.set()

    async def index_built(self) -> None:
        """Return once the start-up index build is done."""
        await self._index_ready.wait()

    async def forget(self, memory_id: str, reason: str) -> Memory:
        """Mark a memory forgotten (kept in the store; recall no longer returns it)."""
        refuse_secrets(reason, "reason")

        def step() -> Memory:  # read, write and index under the versions lock (see reviewing.py)
            with self._store.versions_lock:
                memory = self._store.get_memory(memory_id)
                if memory is None:
                    raise NotFoundError(f"no memory has the id {memory_id!r}")
                if memory.status is MemoryStatus.FORGOTTEN:
                    return memory
                updated = forgotten(memory, reason)
                self._store.put_memory(updated)
                self.engine.set_memory_status(updated)
                return updated

        return await anyio.to_thread.run_sync(step)

    async def recall(self, request: RecallRequest) -> RecallResult:
        """Memories that answer the question; episodes when no memory does (no LLM call)."""
        await self._ready()
        namespaces = [request.namespace] if request.namespace else None
        types = [t.value for t in request.types] if request.types else None

        def find() -> tuple[Question, list[Ranked]]:
            # One worker-thread hop for analysis, embedding and ranking: hooks wait on this.
            question = self._understand(request.query)
            found = self.engine.search_memories(
                question,
                namespaces=namespaces,
                types=types,
                force_history=request.include_history,
                limit=request.limit,
            )
            return question, found

        question, found = await anyio.to_thread.run_sync(find, limiter=self._embedding_limiter())
        if any(self.engine.is_related(f) for f in found):
            hits = []
            for f in found:
                memory = self.engine.memory(f.owner)
                if memory is not None:
                    explain = f.components if request.explain else None
                    hits.append(MemoryHit(score=f.score, memory=memory, explain=explain))
            return RecallResult(memories=hits, episodes=[])
        episodes = await self._search_episodes(question, namespaces, None, request.limit, request.explain)
        return RecallResult(memories=[], episodes=episodes)

    async def related_current(self, text: str, namespaces: list[str], limit: int) -> list[Memory]:
        """Current memories in ``namespaces`` that answer ``text``, best first: what the hooks
        inject. Empty while the start-up index is being built (a hook does not wait for it)."""
        if not self._index_ready.is_set():
            return []

        def find() -> list[Ranked]:
            question = self._understand(text)
            return self.engine.search_memories(
                question,
                namespaces=namespaces,
                types=None,
                force_history=False,
                limit=limit,
                current_only=True,
            )

        found = await anyio.to_thread.run_sync(find, limiter=self._embedding_limiter())
        memories = (self.engine.memory(f.owner) for f in found if self.engine.is_related(f))
        return [m for m in memories if m is not None]

    def _understand(self, text: str) -> Question:
        self._last_question = time.monotonic()
        return self.engine.understand(text, utc_now())

    def _embedding_limiter(self) -> anyio.CapacityLimiter | None:
        """A question does not wait behind a background batch when the model allows two callers."""
        embedder = self.engine.embedder
        return None if embedder is None or embedder.is_thread_safe else self._embedder_limiter

    async def recall_episodes(self, request: RecallEpisodeRequest) -> EpisodesResult:
        await self.journal_flushed()
        if request.id is not None:
            found = await self.call_store(self._store.get_episodes, [request.id])
            if not found:
                raise NotFoundError(f"no episode has the id {request.id!r}")
            return EpisodesResult(episodes=[EpisodeHit(score=1.0, episode=e) for e in found])
        if request.query is not None:
            await self._ready()
            namespaces = [request.namespace] if request.namespace else None
            sessions = [request.session] if request.session else None
            question = await anyio.to_thread.run_sync(
                self._understand, request.query, limiter=self._embedding_limiter()
            )
            hits = await self._search_episodes(question, namespaces, sessions, request.limit, False)
            return EpisodesResult(episodes=hits)
        assert request.session is not None
        session = request.session
        found = await self.call_store(
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
        self,
        question: Question,
        namespaces: list[str] | None,
        sessions: list[str] | None,
        limit: int,
        explain: bool,
    ) -> list[EpisodeHit]:
        found = await anyio.to_thread.run_sync(
            lambda: self.engine.search_episodes(
                question,
                namespaces=namespaces,
                sessions=sessions,
                limit=limit,
            )
        )
        if not found:
            return []
        episodes = {
            e.id: e for e in await self.call_store(self._store.get_episodes, [f.owner for f in found])
        }
        return [
            EpisodeHit(score=f.score, episode=episodes[f.owner], explain=f.components if explain else None)
            for f in found
            if f.owner in episodes
        ]
