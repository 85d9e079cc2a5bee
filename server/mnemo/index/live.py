"""The daemon's live recall engine: memories and episode passages, kept current as writes land.

Built from the store at start (memories, episodes, the active model's vectors); afterwards every
write is applied at once — a new memory is searchable by words and entities immediately and by
vector as soon as the background embedder reaches it; a close or forget changes its status in
place. Anything without a vector of the active model (new writes, or everything after a model
switch) waits in the embedding backlog, which the daemon's background embedder drains
(``take_backlog``, then ``put_vectors``).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Container, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from mnemo.episodes import Episode
from mnemo.index.documents import (
    CANDIDATE,
    CLOSED,
    CURRENT,
    Document,
    Question,
    Ranked,
    SearchQuery,
    Vector,
    episode_documents,
    memory_document,
    passage_key,
)
from mnemo.index.engine import SearchIndex, on_vector_thread
from mnemo.index.entities import EntityMatcher, entity_key
from mnemo.index.image import Cursor, IndexImage
from mnemo.index.query import analyse
from mnemo.index.ranking import Weights
from mnemo.index.shelf import Shelf
from mnemo.index.snapshot import ListsSnapshot
from mnemo.index.text import terms as text_terms
from mnemo.memories import Memory

if TYPE_CHECKING:  # not imported at run time: an image build runs with no model (image_build)
    from mnemo.embed import Embedder

logger = logging.getLogger(__name__)


# Words only (no embedding model): BM25 is all of relevance; the neighbouring turn's weight was
# chosen as each model's is (tools/fit/tune_recall_weights.py --embedder none, docs/recall.md).
WORDS_ONLY = Weights(vector=0.0, lexical=1.0, context=0.6)


def weights_for(embedder: Embedder | None) -> Weights:
    """The score's weights for the model in use (each model's were chosen by cross-validation)."""
    if embedder is None:
        return WORDS_ONLY
    return Weights(
        vector=embedder.vector_weight, lexical=1.0 - embedder.vector_weight, context=embedder.context_weight
    )


class RecallEngine:
    """Two search indexes (memories, episode passages), the entity automaton, and the embedder.

    Safe to use from several threads: the daemon's writers (appends, remembers, the distiller,
    review steps) change it from worker threads while recalls read it. Each index locks itself;
    the engine's own state is guarded by ``_lock``, held only for a few dictionary or deque steps —
    never while an index searches or the entity automaton is built — so a recall never waits for
    more than those. The automaton is immutable: a rebuilt one replaces it whole.
    """

    def __init__(
        self,
        embedder: Embedder | None,
        shelf_dir: Path | None = None,
        *,
        model: tuple[str, Weights] | None = None,
    ) -> None:
        """``shelf_dir``: where the memories' copies are kept (:mod:`mnemo.index.shelf`; the
        system's temporary directory when not given). ``model``: the model id and weights of an
        engine that builds an image for a daemon using that model, with no embedder of its own
        (:mod:`mnemo.index.image_build`); it keeps no backlog."""
        self.embedder = embedder
        self.model_id, weights = model or (
            "none" if embedder is None else embedder.model_id,
            weights_for(embedder),
        )
        # Each memory's current version, as JSON, kept by the index beside its row: recall
        # answers without a store read, which would cost more than the whole search. In a file,
        # out of RAM (mnemo.index.shelf).
        self.memories = SearchIndex(weights, Shelf(shelf_dir))
        self.passages = SearchIndex(weights)
        self._lock = threading.Lock()
        # Under _lock: every entity's surface forms, and a count of their changes.
        self._entity_forms: dict[str, set[str]] = {}
        self._forms_version = 0
        # The automaton and the forms version it was built from, swapped as one tuple; one thread
        # at a time rebuilds it (_matcher_lock), so a build never replaces a newer one.
        self._matcher: tuple[int, EntityMatcher] = (0, EntityMatcher([]))
        self._matcher_lock = threading.Lock()
        self._backlog: deque[tuple[str, str, str]] = deque()  # (index name, key, text); under _lock
        self._shelf_dir = shelf_dir

    # -- writes --------------------------------------------------------------------------------

    def add_entities(self, entities: Iterable[tuple[str, str, Sequence[str]]]) -> None:
        wanted = list(entities)
        with self._lock:
            for key, name, aliases in wanted:
                forms = self._entity_forms.setdefault(key, set())
                before = len(forms)
                forms.update([name, *aliases])
                if len(forms) != before:
                    self._forms_version += 1

    def add_memories(
        self, memories: Sequence[Memory], embedded: Container[str] = (), *, bulk: bool = False
    ) -> None:
        """Index memories; those whose key is not in ``embedded`` join the embedding backlog.
        ``bulk``: a page of the start-up load (see ``finish_build``)."""
        documents = [memory_document(m) for m in memories]
        self.memories.add(documents, bulk=bulk, copies=[memory.model_dump_json() for memory in memories])
        self.add_entities((entity_key(e.name), e.name, ()) for m in memories for e in m.entities)
        self._wait_for_vectors("memories", documents, embedded)

    def set_memory_status(self, memory: Memory) -> None:
        """Apply at once a new version whose searched text did not change (a close, a forget, a
        merge that added sources): its row and vector stay, its status and stored copy change."""
        if not self.memories.set_status(memory.id, memory.status.value, memory.model_dump_json()):
            self.add_memories([memory])

    def memory(self, memory_id: str) -> Memory | None:
        """The current version of an indexed memory."""
        stored = self.memories.copy(memory_id)
        return None if stored is None else Memory.model_validate_json(stored)

    def add_episodes(
        self, episodes: Sequence[Episode], embedded: Container[str] = (), *, bulk: bool = False
    ) -> None:
        """Index episodes' passages; those whose key is not in ``embedded`` join the backlog.
        ``bulk``: a page of the start-up load (see ``finish_build``)."""
        documents = [d for e in episodes for d in episode_documents(e)]
        self.passages.add(documents, bulk=bulk)
        self._wait_for_vectors("passages", documents, embedded)

    def new_episodes(self, episodes: Sequence[Episode]) -> list[Episode]:
        """Those of ``episodes`` not indexed yet (an episode's passages are indexed together)."""
        return [e for e in episodes if not self.passages.has(passage_key(e.id, 0))]

    def _wait_for_vectors(self, name: str, documents: Sequence[Document], embedded: Container[str]) -> None:
        """Documents not in ``embedded`` join the backlog (with no model, there is none to join:
        it would hold every text, never drained)."""
        if self.embedder is None:
            return
        waiting = [(name, d.key, d.text) for d in documents if d.key not in embedded]
        with self._lock:
            self._backlog.extend(waiting)

    def put_vectors(self, items: Sequence[tuple[str, str]], vectors: npt.NDArray[np.float32]) -> None:
        """Vectors for backlog items: (index name, key) per row of ``vectors``."""
        for name, index in self._indexes():
            rows = [i for i, (n, _) in enumerate(items) if n == name]
            if rows:
                index.put_vectors([items[i][1] for i in rows], vectors[rows])

    def load_vectors(self, keys: list[tuple[str, int]], matrix: npt.NDArray[np.float32]) -> None:
        """Vectors read from the store at start (memory ids have part 0 and no '#'): a bulk load
        (see ``finish_build``). Each index takes those of its keys and skips the others."""
        self.memories.put_vectors([owner for owner, _ in keys], matrix, bulk=True)
        self.passages.put_vectors([passage_key(o, p) for o, p in keys], matrix, bulk=True)

    def finish_build(self, directory: Path | None) -> list[str]:
        """After the start-up load (pages added with ``bulk``, then ``load_vectors``): the words
        loaded become searchable, and each index adopts its saved vector lists from
        ``directory`` where they fit, or makes new ones (and saves them there). What was done
        with the lists, per index."""
        return [f"{name}: {i.finish_bulk(self._snapshot(directory, name))}" for name, i in self._indexes()]

    def save_lists(self, directory: Path | None) -> int:
        """Save each index's vector lists that changed much since the last save; rows written."""
        saved = 0
        for name, index in self._indexes():
            snapshot = self._snapshot(directory, name)
            if snapshot is not None:
                saved += index.save_lists(snapshot)
        return saved

    def save_image(self, directory: Path, source: str, cursor: Cursor) -> int:
        """Save the memories' index, their shelf and the entity forms whole, read from ``source``
        up to its ``cursor`` (:mod:`mnemo.index.image`); the bytes written. Searches wait meanwhile."""
        with self._lock:
            forms = {key: sorted(names) for key, names in self._entity_forms.items()}
        with self.memories.lock:
            return self._image(directory, source).write(
                self.memories.saved(), self.memories.save_copies, forms, cursor
            )

    def load_image(self, directory: Path, source: str) -> tuple[Cursor, datetime] | None:
        """Take the memories' index from a saved image instead of the store (before any memory is
        added); the store cursor it was taken at and when it was saved, or None when there is none
        that checks out (a warning says why). Memories without a vector join the backlog."""
        loaded = self._image(directory, source).read()
        if loaded is None:
            return None
        try:
            shelf = Shelf.restored(self._shelf_dir, loaded.shelf_path, loaded.shelf)
            memories = SearchIndex.restored(loaded.parts, self.memories.weights, shelf)
        except (OSError, ValueError, KeyError, IndexError) as exc:
            logger.warning("index image in %s ignored (%s): built from the store", directory, exc)
            return None
        self.memories = memories
        self.add_entities((key, names[0], names[1:]) for key, names in loaded.forms.items() if names)
        keys = memories.rows_without_vectors() if self.embedder is not None else []
        documents = [memory_document(m) for key in keys if (m := self.memory(key)) is not None]
        self._wait_for_vectors("memories", documents, ())
        return loaded.cursor, loaded.saved_at

    @property
    def memory_writes(self) -> int:
        """Writes to the memories' index since it was made (see ``save_image``)."""
        return self.memories.writes

    def clear_memories(self) -> None:
        """Drop every memory (an image found not to match the store: it is built anew)."""
        self.memories = SearchIndex(self.memories.weights, Shelf(self._shelf_dir))
        with self._lock:
            self._backlog = deque(item for item in self._backlog if item[0] != "memories")

    def _image(self, directory: Path, source: str) -> IndexImage:
        return IndexImage(directory, "memories", self.model_id, source)

    def _indexes(self) -> tuple[tuple[str, SearchIndex], ...]:
        return (("memories", self.memories), ("passages", self.passages))

    def _snapshot(self, directory: Path | None, name: str) -> ListsSnapshot | None:
        if directory is None or self.model_id == "none":
            return None
        return ListsSnapshot(directory, name, self.model_id)

    @property
    def backlog(self) -> int:
        if self.embedder is None:
            return 0
        with self._lock:
            return len(self._backlog)

    def take_backlog(self, count: int) -> list[tuple[str, str, str]]:
        """Up to ``count`` (index name, key, text) items still waiting for a vector."""
        taken: list[tuple[str, str, str]] = []
        with self._lock:  # needs_vector takes no index lock: none is taken under this one
            while self._backlog and len(taken) < count:
                name, key, text = self._backlog.popleft()
                # Gone since, or given its vector meanwhile (read from the store, or by the writer).
                if (self.memories if name == "memories" else self.passages).needs_vector(key):
                    taken.append((name, key, text))
        return taken

    # -- reads ---------------------------------------------------------------------------------

    def matcher(self) -> EntityMatcher:
        """The entity automaton over every form added so far (rebuilt first if forms were added)."""
        version, matcher = self._matcher
        if version == self._forms_version:
            return matcher
        with self._matcher_lock:  # callers that find it stale wait for one build, not one each
            version, matcher = self._matcher
            with self._lock:
                if version == self._forms_version:
                    return matcher
                version = self._forms_version
                forms = [(key, tuple(names)) for key, names in self._entity_forms.items()]
            matcher = EntityMatcher(forms)  # built from the copy, with no lock held but our own
            self._matcher = (version, matcher)
            return matcher

    def understand(self, question: str, now: datetime) -> Question:
        """Analyse a question by rules, find the entities it names, and embed it."""
        embedder = self.embedder
        embedding = (
            None if embedder is None else on_vector_thread(lambda: embedder.embed_queries([question])[0])
        )
        return Question(analyse(question, now), self.matcher().find(question), embedding)

    def search_memories(
        self,
        question: Question,
        *,
        namespaces: Sequence[str] | None,
        types: Sequence[str] | None,
        force_history: bool,
        limit: int,
        current_only: bool = False,
        statuses: Sequence[str] | None = None,
    ) -> list[Ranked]:
        """Memories ranked for ``question``; closed ones behind current unless history is asked
        (or left out with ``current_only``). A question about the past gets a closed memory just
        before the one that closed it, whatever their scores. ``statuses``: among memories of
        those statuses instead (the memory browser's filter)."""
        analysis = question.analysis
        found = self.memories.search(
            SearchQuery(
                terms=analysis.terms,
                vector=question.embedding,
                entities=question.entities,
                asked=analysis.asked,
                dates=analysis.dates,
                is_history=analysis.is_history or force_history,
                namespaces=namespaces,
                kinds=types,
                statuses=statuses or ((CURRENT,) if current_only else (CURRENT, CLOSED)),
                limit=limit,
            )
        )
        return self._past_first(found) if analysis.is_history else found

    def _past_first(self, found: list[Ranked]) -> list[Ranked]:
        """Each closed memory moved just before the memory that closed it, where that one ranks
        higher: asked "what day did we deploy before?", the Tuesday that Thursday replaced is the
        answer and Thursday its context, though Thursday may well match the words better."""
        ordered = list(found)
        for hit in found:
            if hit.is_current:
                continue
            memory = self.memory(hit.key)
            keys = [h.key for h in ordered]
            if memory is not None and memory.closed_by in keys:
                at = keys.index(memory.closed_by)
                if at < keys.index(hit.key):
                    ordered.remove(hit)
                    ordered.insert(at, hit)
        return ordered

    def judge_candidates(
        self, text: str, entities: Sequence[str], namespace: str, vector: Vector | None
    ) -> list[str]:
        """Ids of up to 8 current (or candidate) memories in ``namespace`` near a new memory, for the judge:
        3 nearest by vector, 3 by BM25, the rest sharing an entity."""
        return self.memories.nearby(
            SearchQuery(
                terms=list(dict.fromkeys(text_terms(text))),
                vector=vector,
                entities=[entity_key(e) for e in entities],
                namespaces=[namespace],
                statuses=(CURRENT, CANDIDATE),  # an equivalent candidate is seen again, not doubled
            ),
            per_source=3,
            limit=8,
        )

    def search_episodes(
        self,
        question: Question,
        *,
        namespaces: Sequence[str] | None,
        sessions: Sequence[str] | None,
        limit: int,
    ) -> list[Ranked]:
        return self.passages.search(
            SearchQuery(
                terms=question.analysis.terms,
                vector=question.embedding,
                entities=question.entities,
                dates=question.analysis.dates,
                namespaces=namespaces,
                statuses=(CURRENT,),
                sessions=sessions,
                limit=limit,
            )
        )

    def is_related(self, found: Ranked) -> bool:
        """Whether a memory hit answers the question, by this engine's embedder's threshold."""
        embedder = self.embedder
        return is_related(found, embedder.related_cosine if embedder is not None else None)


def is_related(found: Ranked, related_cosine: float | None) -> bool:
    """Whether a memory hit answers enough that recall need not go down to episodes.

    ``related_cosine`` is the embedder's own threshold (None without an embedder).
    """
    c = found.components
    if c.get("lexical", 0) > 0 or c.get("entity", 0) > 0:
        return True
    return related_cosine is not None and c.get("cosine", 0) >= related_cosine
