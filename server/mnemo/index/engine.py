"""The in-RAM search index over one kind of document (memories, or episode passages).

Each document is a row. Rows carry roaring bitmaps per namespace, kind, status, person, session,
entity and entity × role, the filled W fields, a BM25 posting list and an int8 vector. A search is
a pure function of the index's state and a :class:`SearchQuery`, and its score is deterministic
and explained component by component (see :class:`Weights` and docs/recall.md):

    relevance = w_vector·vector + w_lexical·lexical
    score = relevance + w_context·context + w_entity·entity + w_asked·asked + w_date·date
            + w_history·(closed and the question asks about history)

``vector`` is the cosine to the question, min-max normalised over the candidates (over a spread
of at least 0.1 cosine); ``lexical`` the BM25 score divided by the best candidate's; ``context``
the best relevance among the turns just before and after (episodes in a session); ``entity`` the
share of the question's entities the document names; ``asked`` 1 when the document fills the W
asked; ``date`` 1 when the document's time falls in the question's dates. Unless the question
asks about history, what is no longer current (closed) ranks behind everything current,
whatever its score.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from mnemo.index.lexical import LexicalIndex
from mnemo.index.query import Asked, DateRange
from mnemo.index.snapshot import GraphSnapshot
from mnemo.index.text import terms as text_terms
from mnemo.index.vectors import VectorIndex

CURRENT = "active"
CLOSED = "closed"
CANDIDATE = "candidate"  # waits for a person: never recalled nor injected
# Each source (BM25, vector, entity) proposes this many rows (or the limit, if larger) to be
# scored. 200 → 100 changed no LoCoMo figure by more than 0.2 (tools/eval_locomo.py, every
# embedder, R@1 to R@50) and cut ranking at 100k by ~0.7 ms.
_CANDIDATES_PER_SOURCE = 100
MIN_COSINE_SPREAD = 0.1
_MAX_CACHED_MASKS = 32
_RESAVE_SHARE = 0.1  # see SearchIndex.save_graph
# From this many rows, the vector search (usearch releases the GIL) runs on a second thread while
# BM25 finds its candidates: about 2 ms less per search at a million rows on 2 cores. A question
# still being embedded (a pending vector) always goes there: the thread embeds it, then searches.
PARALLEL_MIN_ROWS = 200_000

Vector = npt.NDArray[np.float32]


@functools.cache
def _vector_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="mnemo-vectors")  # threads start on first use


def on_vector_thread(fn: Callable[[], Vector]) -> Future[Vector]:
    """Run ``fn`` (a question's embedding) on the vector thread; searches queued after it see it done."""
    return _vector_thread().submit(fn)


def resolved(vector: Vector | Future[Vector] | None) -> Vector | None:
    return None if vector is None else _ready(vector)


def _ready(vector: Vector | Future[Vector]) -> Vector:
    return vector.result() if isinstance(vector, Future) else vector


@dataclass(frozen=True, slots=True)
class Document:
    key: str
    owner: str
    text: str
    namespace: str
    kind: str
    status: str
    time: datetime
    entities: tuple[tuple[str, str], ...] = ()
    who: str = ""
    session: str = ""
    turn: int | None = None
    filled: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Weights:
    """The score's weights (docs/recall.md says how they were chosen)."""

    vector: float = 0.7
    lexical: float = 0.3
    context: float = 0.6
    entity: float = 0.15
    asked: float = 0.05
    date: float = 0.3
    history: float = 0.1


@dataclass(frozen=True, slots=True)
class SearchQuery:
    terms: Sequence[str]
    vector: Vector | Future[Vector] | None = None  # a Future: still being embedded (on_vector_thread)
    entities: Sequence[str] = ()
    asked: Asked | None = None
    dates: DateRange | None = None
    is_history: bool = False
    namespaces: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    statuses: Sequence[str] = (CURRENT,)
    sessions: Sequence[str] | None = None
    sessions_excluded: Sequence[str] = ()
    limit: int = 10


@dataclass(frozen=True, slots=True)
class Ranked:
    key: str
    owner: str
    score: float
    is_current: bool
    components: dict[str, float] = field(default_factory=dict)


def _unique_rows(parts: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """The distinct rows of ``parts``, ascending (a sort and a compare: np.unique costs 4× more)."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    rows = np.sort(np.concatenate(parts).astype(np.int64, copy=False))
    if len(rows) > 1:
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    return rows


def _union(maps: Iterable[BitMap]) -> BitMap:
    out = BitMap()
    for m in maps:
        out |= m
    return out


class SearchIndex:
    """Rows are appended; a re-put key retires its old row; status changes apply in place."""

    def __init__(self, weights: Weights | None = None) -> None:
        self.weights = weights or Weights()
        self._lock = threading.RLock()
        self._keys: list[str] = []
        self._owners: list[str] = []
        self._row_of: dict[str, int] = {}
        self._times_ms = np.zeros(0, dtype=np.int64)
        self._live = BitMap()
        self._by_namespace: dict[str, BitMap] = {}
        self._by_kind: dict[str, BitMap] = {}
        self._by_status: dict[str, BitMap] = {}
        self._by_who: dict[str, BitMap] = {}
        self._by_session: dict[str, BitMap] = {}
        self._by_entity: dict[str, BitMap] = {}
        self._by_entity_role: dict[tuple[str, str], BitMap] = {}
        self._by_filled: dict[str, BitMap] = {}
        self._status_of: list[str] = []
        self._namespace_of: list[str] = []
        # Where a row sits in a conversation (session, turn), and the rows at each place.
        self._place_of: list[tuple[str, int] | None] = []
        self._rows_at: dict[tuple[str, int], list[int]] = {}
        self._lexical = LexicalIndex()
        self._vectors: VectorIndex | None = None
        self._generation = 0  # bumped by every write; cached masks of older generations are stale
        self._masks: dict[object, tuple[int, BitMap, npt.NDArray[np.bool_]]] = {}

    # -- writing -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._live)

    def add(self, documents: Sequence[Document], *, bulk: bool = False) -> None:
        """Index documents; a key already present is replaced (its old row retires).

        ``bulk``: a page of a large load (the daemon's start), after which ``finish_bulk`` is
        called; until then its words are not searched.
        """
        if not documents:
            return
        tokenised = [text_terms(d.text) for d in documents]
        with self._lock:
            self._generation += 1
            start = len(self._keys)
            for document in documents:
                old = self._row_of.get(document.key)
                if old is not None:
                    self._retire(old)
            self._grow_times(start + len(documents))
            for offset, document in enumerate(documents):
                row = start + offset
                self._keys.append(document.key)
                self._owners.append(document.owner)
                self._status_of.append(document.status)
                self._namespace_of.append(document.namespace)
                place = (
                    (document.session, document.turn)
                    if document.session and document.turn is not None
                    else None
                )
                self._place_of.append(place)
                if place is not None:
                    self._rows_at.setdefault(place, []).append(row)
                self._row_of[document.key] = row
                self._times_ms[row] = int(document.time.timestamp() * 1000)
                self._live.add(row)
                self._by_namespace.setdefault(document.namespace, BitMap()).add(row)
                self._by_kind.setdefault(document.kind, BitMap()).add(row)
                self._by_status.setdefault(document.status, BitMap()).add(row)
                if document.who:
                    self._by_who.setdefault(document.who, BitMap()).add(row)
                if document.session:
                    self._by_session.setdefault(document.session, BitMap()).add(row)
                for entity, role in document.entities:
                    self._by_entity.setdefault(entity, BitMap()).add(row)
                    self._by_entity_role.setdefault((entity, role), BitMap()).add(row)
                for w in document.filled:
                    self._by_filled.setdefault(w, BitMap()).add(row)
            self._lexical.add(tokenised, bulk=bulk)

    def _grow_times(self, needed: int) -> None:
        if needed > len(self._times_ms):
            grown = np.zeros(max(needed, 2 * len(self._times_ms), 1024), dtype=np.int64)
            grown[: len(self._keys)] = self._times_ms[: len(self._keys)]
            self._times_ms = grown

    def _retire(self, row: int) -> None:
        self._live.discard(row)

    def set_status(self, key: str, status: str) -> bool:
        """Change a document's status in place (close, forget); False when the key is unknown."""
        with self._lock:
            row = self._row_of.get(key)
            if row is None:
                return False
            self._generation += 1
            self._by_status[self._status_of[row]].discard(row)
            self._by_status.setdefault(status, BitMap()).add(row)
            self._status_of[row] = status
            return True

    def put_vectors(
        self, keys: Sequence[str], vectors: npt.NDArray[np.float32], *, bulk: bool = False
    ) -> None:
        """Attach vectors to documents by key (unknown keys are skipped). ``bulk``: part of a large
        load, after which ``finish_bulk`` is called."""
        with self._lock:
            pairs = [(self._row_of.get(k), i) for i, k in enumerate(keys)]
            known = [(row, i) for row, i in pairs if row is not None]
            if not known:
                return
            if self._vectors is None:
                self._vectors = VectorIndex(vectors.shape[1])
            rows = np.asarray([row for row, _ in known], dtype=np.int64)
            namespaces = [self._namespace_of[row] for row, _ in known]
            self._vectors.put(rows, vectors[[i for _, i in known]], namespaces, bulk=bulk)

    def finish_bulk(self, snapshot: GraphSnapshot | None) -> str:
        """After a bulk load: its words become searchable; the vector graph ``snapshot`` holds is
        adopted where it fits, else one is built, and saved if it changed much. Says what was
        done with the graph, for the log."""
        with self._lock:
            self._lexical.finish_bulk()
            vectors = self._vectors
            if vectors is None:
                return "no vectors"
            saved = None
            if snapshot is not None and vectors.wants_graph and not vectors.has_graph:
                saved = snapshot.read(self._row_of, vectors.dim)
            outcome = vectors.settle_graph(saved)
            if snapshot is not None and self.save_graph(snapshot):
                outcome += "; saved"
            return outcome

    def save_graph(self, snapshot: GraphSnapshot) -> int:
        """Save the vector graph if more than a tenth of it changed since it was built, adopted or
        saved (the next start adds fewer changes faster than a save takes); the nodes saved."""
        with self._lock:
            vectors = self._vectors
            if vectors is None or not vectors.has_graph or vectors.unsaved <= _RESAVE_SHARE * vectors.size:
                return 0
            # A retired row (its key re-added since) keeps its old vector: its node is not named.
            keys = [key if row in self._live else "" for row, key in enumerate(self._keys)]
            return snapshot.write(vectors, keys)

    def has_key(self, key: str) -> bool:
        return key in self._row_of

    def _allowed(self, query: SearchQuery) -> BitMap:
        allowed = _union(self._by_status.get(s, BitMap()) for s in query.statuses) & self._live
        if query.namespaces is not None:
            allowed &= _union(self._by_namespace.get(n, BitMap()) for n in query.namespaces)
        if query.kinds is not None:
            allowed &= _union(self._by_kind.get(k, BitMap()) for k in query.kinds)
        if query.sessions is not None:
            allowed &= _union(self._by_session.get(s, BitMap()) for s in query.sessions)
        for session in query.sessions_excluded:
            allowed -= self._by_session.get(session, BitMap())
        return allowed

    def _allowed_with_mask(self, query: SearchQuery) -> tuple[BitMap, npt.NDArray[np.bool_]]:
        """The rows a query may return, as a bitmap and a boolean mask, cached per filter.

        Building the mask of a million rows costs milliseconds; hooks ask with the same filters
        again and again, so masks are kept until the next write changes the index.
        """
        key = (
            tuple(query.statuses),
            None if query.namespaces is None else tuple(query.namespaces),
            None if query.kinds is None else tuple(query.kinds),
            None if query.sessions is None else tuple(query.sessions),
            tuple(query.sessions_excluded),
        )
        cached = self._masks.get(key)
        if cached is not None and cached[0] == self._generation:
            return cached[1], cached[2]
        allowed = self._allowed(query)
        mask = np.zeros(len(self._keys), dtype=bool)
        mask[np.asarray(allowed.to_array(), dtype=np.int64)] = True
        if len(self._masks) >= _MAX_CACHED_MASKS:
            self._masks.clear()
        self._masks[key] = (self._generation, allowed, mask)
        return allowed, mask

    def search(self, query: SearchQuery) -> list[Ranked]:
        """The best ``query.limit`` documents, ranked by the documented score."""
        with self._lock:
            return self._search(query)

    def _search(self, query: SearchQuery) -> list[Ranked]:
        allowed, mask = self._allowed_with_mask(query)
        if not allowed:
            return []

        per_source = max(_CANDIDATES_PER_SOURCE, query.limit)
        vectors = self._vectors if query.vector is not None else None
        nearest: Future[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] | None = None
        if vectors is not None and query.vector is not None:
            pending = query.vector
            if isinstance(pending, Future) or vectors.size >= PARALLEL_MIN_ROWS:
                # Safe: writers wait for self._lock, which this thread holds until the result is in.
                # One worker, first in first out: a pending vector's embedding runs before this.
                nearest = _vector_thread().submit(
                    lambda: vectors.search(_ready(pending), per_source, mask, query.namespaces)
                )
        candidates: list[npt.NDArray[np.int64]] = [self._lexical.candidates(query.terms, mask, per_source)]

        entity_hits = BitMap()
        for entity in query.entities:
            entity_hits |= self._by_entity.get(entity, BitMap())
        entity_hits &= allowed
        if entity_hits:
            # When an entity is everywhere, the most recently indexed rows (the highest row
            # numbers: a slice of the bitmap, not a sort of all its rows).
            newest = entity_hits[-per_source:] if len(entity_hits) > per_source else entity_hits
            candidates.append(np.asarray(newest.to_array(), dtype=np.int64))
        vector = None
        if nearest is not None:
            candidates.append(nearest.result()[0])
            vector = resolved(query.vector)
        elif vectors is not None and query.vector is not None:
            vector = _ready(query.vector)
            candidates.append(vectors.search(vector, per_source, mask, query.namespaces)[0])

        rows = _unique_rows(candidates)
        if not len(rows):
            return []
        if self._rows_at:
            rows = _unique_rows([rows, self._neighbours(rows, mask)])
        return self._rank(rows, query, vectors, vector)

    def nearby(self, query: SearchQuery, per_source: int, limit: int) -> list[str]:
        """Owners near ``query`` for the judge: ``per_source`` nearest by vector, then as many by
        BM25 not already chosen, then the most recent sharing an entity, up to ``limit``."""
        with self._lock:
            allowed, mask = self._allowed_with_mask(query)
            if not allowed:
                return []
            chosen: dict[int, None] = {}

            def take(rows: Iterable[int], count: int) -> None:
                for row in rows:
                    if len(chosen) >= limit or count <= 0:
                        return
                    if row not in chosen:
                        chosen[row] = None
                        count -= 1

            vector = resolved(query.vector)
            if self._vectors is not None and vector is not None:
                rows, _ = self._vectors.search(vector, 2 * per_source, mask, query.namespaces)
                take(rows.tolist(), per_source)
            rows, scores = self._lexical.score(query.terms, mask)
            take(rows[np.argsort(-scores, kind="stable")].tolist(), per_source)
            shared = _union(self._by_entity.get(e, BitMap()) for e in query.entities) & allowed
            take(reversed(shared.to_array().tolist()), limit)
            return [self._owners[row] for row in chosen]

    def _adjacent(self, row: int) -> list[int]:
        """Rows of the turns just before and after this row's turn, in the same session."""
        place = self._place_of[row]
        if place is None:
            return []
        session, turn = place
        return self._rows_at.get((session, turn - 1), []) + self._rows_at.get((session, turn + 1), [])

    def _neighbours(self, rows: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        found = [r for row in rows.tolist() for r in self._adjacent(row) if r < len(mask) and mask[r]]
        return np.asarray(found, dtype=np.int64)

    def _rank(
        self,
        rows: npt.NDArray[np.int64],
        query: SearchQuery,
        vectors: VectorIndex | None,
        asked_vector: Vector | None,
    ) -> list[Ranked]:
        weights = self.weights
        lexical = self._lexical.score_rows(query.terms, rows)
        best = lexical.max() if len(lexical) else 0.0
        if best > 0:
            lexical /= best
        vector = np.zeros(len(rows), dtype=np.float32)
        cosine = np.zeros(len(rows), dtype=np.float32)
        if vectors is not None and asked_vector is not None:
            has = vectors.has(rows)
            if has.any():
                cosines = vectors.cosines(rows[has], asked_vector)
                cosine[has] = cosines
                # Min-max over the candidates, but over a cosine spread of at least MIN_SPREAD: with
                # few candidates whose cosines are close, a plain min-max would turn a 0.01
                # difference into the whole 0..1 range and drown every other component.
                high = float(cosines.max())
                low = min(float(cosines.min()), high - MIN_COSINE_SPREAD)
                vector[has] = (cosines - low) / (high - low)
        # A turn is more likely relevant when the turn before or after it is (a question and its
        # answer, a prompt and its response): context is the best neighbour's relevance.
        relevance = weights.vector * vector + weights.lexical * lexical
        context = np.zeros(len(rows), dtype=np.float32)
        if self._rows_at:
            position_of = {int(r): i for i, r in enumerate(rows)}
            for i, row in enumerate(rows.tolist()):
                near = [position_of[r] for r in self._adjacent(row) if r in position_of]
                if near:
                    context[i] = relevance[near].max()
        entity = np.zeros(len(rows), dtype=np.float32)
        for key in dict.fromkeys(query.entities):
            named = self._by_entity.get(key)
            if named:
                entity += np.fromiter((r in named for r in rows), dtype=np.float32, count=len(rows))
        if query.entities:
            entity /= len(dict.fromkeys(query.entities))
        asked = np.zeros(len(rows), dtype=np.float32)
        if query.asked is not None and query.asked.value in self._by_filled:
            filled = self._by_filled[query.asked.value]
            asked = np.fromiter((r in filled for r in rows), dtype=np.float32, count=len(rows))
        date = np.zeros(len(rows), dtype=np.float32)
        if query.dates is not None:
            times = self._times_ms[rows]
            start = int(query.dates.start.timestamp() * 1000)
            end = int(query.dates.end.timestamp() * 1000)
            date = ((times >= start) & (times < end)).astype(np.float32)
        is_current = np.fromiter((self._status_of[r] != CLOSED for r in rows), dtype=bool, count=len(rows))
        history = (~is_current).astype(np.float32) if query.is_history else np.zeros(len(rows), np.float32)
        score = (
            relevance
            + weights.context * context
            + weights.entity * entity
            + weights.asked * asked
            + weights.date * date
            + weights.history * history
        )
        # Current first unless history is asked; then score; then key, so ties are stable.
        tier = np.zeros(len(rows), dtype=np.int8) if query.is_history else (~is_current).astype(np.int8)
        ranked: list[Ranked] = []
        owners_seen: set[str] = set()
        for i in self._ordered(rows, tier, score, head=4 * query.limit + 16):
            owner = self._owners[rows[i]]
            if owner in owners_seen:  # another passage of the same episode ranked higher
                continue
            owners_seen.add(owner)
            if len(ranked) == query.limit:
                break
            ranked.append(
                Ranked(
                    key=self._keys[rows[i]],
                    owner=owner,
                    score=round(float(score[i]), 6),
                    is_current=bool(is_current[i]),
                    components={
                        "cosine": round(float(cosine[i]), 6),
                        "vector": round(float(vector[i]), 6),
                        "lexical": round(float(lexical[i]), 6),
                        "context": round(float(context[i]), 6),
                        "entity": round(float(entity[i]), 6),
                        "asked": float(asked[i]),
                        "date": float(date[i]),
                        "history": float(history[i]),
                    },
                )
            )
        return ranked

    def _ordered(
        self,
        rows: npt.NDArray[np.int64],
        tier: npt.NDArray[np.int8],
        score: npt.NDArray[np.float32],
        head: int,
    ) -> Iterator[int]:
        """Positions in rank order: tier, then score descending, then key (ties are stable).

        Only the first ``head`` (and whatever ties the last of them) are sorted with their keys in
        Python; the rest follow, fully sorted, only if a caller reads that far.
        """
        order = np.lexsort((-score, tier))
        if head < len(order):
            last = order[head - 1]
            tied = np.flatnonzero((tier == tier[last]) & (score == score[last]))
            first = np.union1d(order[:head], tied)
        else:
            first = order
        key = lambda i: (int(tier[i]), -float(score[i]), self._keys[rows[i]])  # noqa: E731
        yield from sorted(first.tolist(), key=key)
        if len(first) < len(order):
            done = set(first.tolist())
            yield from sorted((i for i in order.tolist() if i not in done), key=key)
