"""The daemon's search index: built at start, kept current, its vectors made in the background,
its image and vector lists saved at exit.

The memories come from their saved image (:mod:`mnemo.index.image`) and what the store committed
after it; with no image that checks out, a large store's memories are built into one by a process
of its own (:mod:`mnemo.daemon.image_apart`) and a small one's here. The build reads the store a
page at a time, each page with the store to itself and indexed without it, so that appends and
remembers arriving during a long build are stored at once. Once built, the index's objects are
frozen out of the cyclic collector and what the build freed is given back to the system. Every
indexed item gets a vector of the active model from :meth:`Indexing.run_embedding`, which yields
to questions: hooks wait on recall.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import logging
import time
from datetime import timedelta

import anyio
import anyio.from_thread
import anyio.to_thread
import numpy as np

from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.image_apart import build_image_apart
from mnemo.daemon.quiet import QUIET_S, QuietGate
from mnemo.daemon.storecalls import StoreCalls
from mnemo.embed import Embedder, normalised
from mnemo.episodes import Episode
from mnemo.errors import MnemoError, NotReadyError
from mnemo.index.documents import Question, memory_document, passage_key, split_key
from mnemo.index.live import RecallEngine
from mnemo.memories import Memory
from mnemo.store.embeddings import Owners

logger = logging.getLogger(__name__)
EMBED_BATCH = 16
BUSY_S = 5.0  # the background embedding embeds BUSY_BATCH at a time while the last question is this recent
BUSY_BATCH = 2
BUILD_PAGE_ROWS = 5_000
KEY_PAGE_ROWS = 50_000
CHANGES_PAGE_ROWS = 1_000
# The store's commits of the last seconds may become visible after later ones: a cursor stays this
# far behind the store's clock (mnemo.daemon.following), and what it reads again applies once.
SETTLE_US = 2_000_000
# Vectors are stamped by the writing daemon's clock: those written this long before an image was
# taken are read again at the next start, for clocks that differ between machines.
VECTORS_SKEW = timedelta(minutes=1)


def _give_back_freed_memory() -> None:
    """Return to the system what the index build allocated and freed. glibc keeps freed blocks
    inside the process (the daemon fixes its mmap threshold, :mod:`mnemo.daemon`, but blocks under
    it come from the heap), and the daemon's RSS stays near the build's peak without this. Where
    there is no malloc_trim (macOS, musl) there is nothing to do."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


class Indexing:
    def __init__(self, calls: StoreCalls, settings: Settings, embedder: Embedder | None) -> None:
        self.engine = RecallEngine(embedder, settings.index_dir)
        self._calls = calls
        self._settings = settings
        self._built = anyio.Event()
        self.build_s: float | None = None
        self.vector_lists: list[str] = []
        self._embedder_limiter = anyio.CapacityLimiter(1)
        self._backlog_added = anyio.Event()
        self.quiet = QuietGate()  # the questions' clock, which background writers wait on
        self._embedding_in_flight = 0
        self._image_writes = -1  # the engine's memory writes when the image was saved or read
        self.memories_from = ""  # once built: "the saved image (…)" or "the store"
        # What an image is of: the store, as its person reads it (an image of another is not read).
        self._source = f"{calls.store.dsn_for_display} read by {calls.store.person or 'its one person'}"

    @property
    def is_built(self) -> bool:
        return self._built.is_set()

    @property
    def backlog(self) -> int:
        """Items waiting for a vector, the batch being embedded included."""
        return self.engine.backlog + self._embedding_in_flight

    @property
    def is_busy(self) -> bool:
        return self.backlog > 0

    async def built(self) -> None:
        """Return once the start-up build is done."""
        await self._built.wait()

    async def ready(self) -> None:
        """Wait a bounded while for the start-up build; then say so rather than hang."""
        with anyio.move_on_after(min(10.0, self._settings.request_timeout_s / 2)):
            await self._built.wait()
        if not self._built.is_set():
            loaded = len(self.engine.memories)
            raise NotReadyError(
                f"the daemon is still building its search index from the store ({loaded:,} memories "
                "loaded so far); try again in a moment"
            )

    async def build(self) -> None:
        """Load everything into the engine: the memories from their saved image where there is one
        that checks out, else from an image a process of its own builds from the store's pages (a
        large store), else page by page from the store here; episodes, entities and vectors from
        the store."""
        started = time.monotonic()
        engine, embedder, calls, store = self.engine, self.engine.embedder, self._calls, self._calls.store
        if embedder is not None and embedder.cut_from is not None:
            await self._cut_stored_vectors(embedder, embedder.cut_from)
        cursor = (await calls(store.store_clock) - SETTLE_US, "", 0)  # what the build reads from now
        from_image = await self._from_image()
        apart = None if from_image else await self._built_apart(cursor)
        if apart is not None and (from_image := await self._from_image()):
            self.memories_from = "the store, by a process of its own (then read as its image)"
        embedded: set[str] = set()
        if embedder is not None:
            after_key = ("", 0)
            keys_page = functools.partial(
                store.embedding_keys_page, owners="episodes" if from_image else "all"
            )
            while keys := await calls(keys_page, embedder.model_id, after_key, KEY_PAGE_ROWS):
                # A memory's vector is (id, 0); a passage's is (episode id, n), keyed "id#n".
                embedded.update(passage_key(o, p) for o, p in keys)
                embedded.update(o for o, p in keys if p == 0)
                after_key = keys[-1]
        after = ""
        while not from_image and (memories := await calls(store.memories_page, after, BUILD_PAGE_ROWS)):
            await anyio.to_thread.run_sync(
                functools.partial(engine.add_memories, memories, embedded, bulk=True)
            )
            after = memories[-1].id
        after = ""
        while episodes := await calls(store.episodes_page, after, BUILD_PAGE_ROWS):
            await anyio.to_thread.run_sync(
                functools.partial(engine.add_episodes, episodes, embedded, bulk=True)
            )
            after = episodes[-1].id
        engine.add_entities(await calls(store.all_entities))
        if embedder is not None:
            owners: Owners = "episodes" if from_image else "all"
            async for keys, matrix in self._calls.embedding_pages(
                embedder.model_id, BUILD_PAGE_ROWS, owners=owners
            ):
                await anyio.to_thread.run_sync(engine.load_vectors, keys, matrix)
        finishing = time.monotonic()
        lists = await anyio.to_thread.run_sync(engine.finish_build, self._settings.index_dir)
        if apart is not None and from_image:  # the memories' lists were made (or adopted) apart
            lists = [apart, *lists[1:]]
        logger.info("index finished in %.1f s: %s", time.monotonic() - finishing, "; ".join(lists))
        self.vector_lists = lists
        if not from_image:
            await self._save_image(cursor)
        # The index's objects live as long as the daemon: keep the cyclic collector from walking
        # them again at every full collection (a pause proportional to the index's size).
        gc.collect()
        gc.freeze()
        _give_back_freed_memory()
        self.build_s = round(time.monotonic() - started, 3)
        if not from_image:
            self.memories_from = "the store"
        self._built.set()
        self._backlog_added.set()
        logger.info(
            "index built in %.1f s: %d memories%s, %d episode passages, %d waiting for vectors",
            time.monotonic() - started,
            len(engine.memories),
            " (from the saved image)" if from_image else "",
            len(engine.passages),
            engine.backlog,
        )
        try:  # once built: a hook gets nothing from the index until then
            await calls(store.give_back_memory)
        except MnemoError as exc:
            logger.warning("%s", exc)

    async def _from_image(self) -> bool:
        """Take the memories from their saved image, then apply what the store committed after
        it; False (nothing taken) when there is none that checks out or it does not match the
        store."""
        directory, calls, engine = self._settings.index_dir, self._calls, self.engine
        if directory is None:
            return False
        started = time.monotonic()
        loaded = await anyio.to_thread.run_sync(engine.load_image, directory, self._source)
        if loaded is None:
            return False
        cursor, saved_at = loaded
        applied = 0
        while changes := await calls(calls.store.memory_changes, cursor, CHANGES_PAGE_ROWS):
            applied += await anyio.to_thread.run_sync(self.apply_newest, [m for _, m in changes])
            cursor = changes[-1][0]
        if engine.embedder is not None:
            # Vectors written since (by another daemon, or a re-embed): taken, not recomputed.
            since = saved_at - VECTORS_SKEW
            async for keys, matrix in self._calls.embedding_pages(
                engine.embedder.model_id, BUILD_PAGE_ROWS, owners="memories", since=since
            ):
                owners = [owner for owner, _ in keys]
                await anyio.to_thread.run_sync(engine.memories.put_vectors, owners, matrix)
        held, stored = len(engine.memories), await calls(calls.store.memory_count)
        if held != stored:
            logger.warning(
                "the index image holds %d memories, the store %d: the index is built from the store",
                held,
                stored,
            )
            engine.clear_memories()
            return False
        logger.info(
            "index image read in %.1f s: %d memories, %d versions committed since applied",
            time.monotonic() - started,
            held,
            applied,
        )
        self.memories_from = f"the saved image, {applied:,} versions committed since applied"
        # Versions applied since the image was taken make it worth saving again at exit.
        self._image_writes = -1 if applied else engine.memory_writes
        return True

    async def _built_apart(self, cursor: tuple[int, str, int]) -> str | None:
        """A first start over a large store: the memories' image built by a process of its own
        (what was done with their vector lists; None if it was not)."""
        directory = self._settings.index_dir
        if directory is None:
            return None
        least = self._settings.index_build_apart_from
        return await build_image_apart(
            self._calls, self.engine, directory, self._source, cursor, pages=BUILD_PAGE_ROWS, least=least
        )

    async def _save_image(self, cursor: tuple[int, str, int]) -> None:
        """Save the memories' image (never raises: without one, the next start reads the store)."""
        directory = self._settings.index_dir
        if directory is None:
            return
        started = time.monotonic()
        writes = self.engine.memory_writes
        try:
            written = await anyio.to_thread.run_sync(self.engine.save_image, directory, self._source, cursor)
        except Exception:
            logger.exception("index image not saved")
            return
        self._image_writes = writes
        logger.info("index image saved in %.1f s: %.0f MB", time.monotonic() - started, written / 1e6)

    async def save(self) -> None:
        """At exit: save the memories' image if they changed since it was taken, and the vector
        lists that changed much since the start (never raises)."""
        if not self._built.is_set():
            return
        if self.engine.memory_writes != self._image_writes:
            try:
                cursor = (await self._calls(self._calls.store.store_clock) - SETTLE_US, "", 0)
            except MnemoError as exc:
                logger.warning("index image not saved: %s", exc)
            else:
                await self._save_image(cursor)
        started = time.monotonic()
        try:
            saved = await anyio.to_thread.run_sync(self.engine.save_lists, self._settings.index_dir)
        except Exception:
            logger.exception("vector lists not saved")
            return
        if saved:
            logger.info("vector lists saved in %.1f s: %d rows", time.monotonic() - started, saved)

    async def _cut_stored_vectors(self, embedder: Embedder, whole: str) -> None:
        """Give a model that keeps the leading dimensions of another (Matryoshka) the other's
        stored vectors, cut and re-normalised (what it computes itself), rather than re-embed the
        whole store: only while it has no vectors of its own."""
        calls, store = self._calls, self._calls.store
        if await calls(store.embedding_keys_page, embedder.model_id, ("", 0), 1):
            return
        started, count = time.monotonic(), 0
        async for keys, matrix in self._calls.embedding_pages(whole, BUILD_PAGE_ROWS):
            if matrix.shape[1] < embedder.dim:
                logger.warning("vectors of %s have %d dimensions: not cut", whole, matrix.shape[1])
                return
            cut = normalised(np.ascontiguousarray(matrix[:, : embedder.dim]))
            await calls(store.put_embeddings, embedder.model_id, keys, cut)
            count += len(keys)
        if count:
            logger.info(
                "%d vectors of %s cut to %d dimensions in %.1f s",
                count,
                whole,
                embedder.dim,
                time.monotonic() - started,
            )

    def follow_episodes(self, episodes: list[Episode]) -> int:
        """Index the episodes another daemon stored that this index lacks (those it recorded
        itself are indexed already); how many. Callable from a worker thread."""
        new = self.engine.new_episodes(episodes)
        if new:
            self.engine.add_episodes(new)
        return len(new)

    def add_episodes(self, episodes: list[Episode]) -> None:
        """Index newly stored episodes; runs on a worker thread (the embedder is woken on the loop)."""
        self.engine.add_episodes(episodes)
        anyio.from_thread.run_sync(self.wake_embedder)

    async def add_memory(self, memory: Memory, entities: list[tuple[str, str, list[str]]]) -> None:
        self.engine.add_entities(entities)
        await anyio.to_thread.run_sync(self.engine.add_memories, [memory])
        self.wake_embedder()

    def apply_newest(self, versions: list[Memory]) -> int:
        """Apply each memory's newest of ``versions`` where it is newer than the index's copy (a
        version already applied is skipped); how many were applied. Callable from a worker thread."""
        newest: dict[str, Memory] = {}
        for memory in versions:
            if memory.version > getattr(newest.get(memory.id), "version", -1):
                newest[memory.id] = memory
        applied = 0
        for memory in newest.values():
            held = self.engine.memory(memory.id)
            if held is not None and held.version >= memory.version:
                continue
            is_text_changed = held is None or memory_document(held).text != memory_document(memory).text
            self.apply(memory, is_text_changed=is_text_changed)
            applied += 1
        return applied

    def apply(self, memory: Memory, *, is_text_changed: bool) -> None:
        """Apply a new version of a stored memory to the index at once (a new text: re-indexed,
        its vector recomputed in the background, call :meth:`wake_embedder` after; otherwise its
        status and stored copy). Callable from a worker thread."""
        if is_text_changed:
            self.engine.add_memories([memory])
        else:
            self.engine.set_memory_status(memory)

    def wake_embedder(self) -> None:
        """Tell the background embedder there is new text (from the event loop's thread)."""
        self._backlog_added.set()

    def understand(self, text: str) -> Question:
        """A question analysed for the engine; it also holds the background embedding back."""
        self.quiet.asked()
        return self.engine.understand(text, utc_now())

    def question_limiter(self) -> anyio.CapacityLimiter | None:
        """A question does not wait behind a background batch when the model allows two callers."""
        embedder = self.engine.embedder
        return None if embedder is None or embedder.is_thread_safe else self._embedder_limiter

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
                # does not share the cores with the embedding of the episode it just recorded;
                # while questions keep coming, batches are small, so the next one waits less.
                while (quiet := self.quiet.quiet_for()) < QUIET_S:
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
            await self._calls(self._calls.store.put_embeddings, embedder.model_id, keys, vectors)
        except MnemoError:
            logger.exception("storing %d embeddings failed; they are recomputed at next start", len(keys))
        self.engine.put_vectors([(name, key) for name, key, _ in items], vectors)
