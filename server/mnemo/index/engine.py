"""The in-RAM search index over one kind of document (memories, or episode passages).

Each document is a row (:mod:`mnemo.index.rows`: roaring bitmaps per namespace, kind, status,
person, session, entity and entity × role, the filled W fields) with a BM25 posting list
(:mod:`mnemo.index.lexical`) and an int8 vector (:mod:`mnemo.index.vectors`). A search gathers
candidates from each source — BM25, the vector search, the entities the question names, and the
turns next to those — and ranks them (:mod:`mnemo.index.ranking`); it is a pure function of the
index's state and a :class:`~mnemo.index.documents.SearchQuery`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo.index.documents import (
    Document,
    Ranked,
    SearchQuery,
    Vector,
    ready,
    resolved,
)
from mnemo.index.lexical import LexicalIndex
from mnemo.index.ranking import Weights, rank
from mnemo.index.rows import RowTable
from mnemo.index.shelf import Shelf
from mnemo.index.snapshot import ListsSnapshot
from mnemo.index.text import terms as text_terms
from mnemo.index.vectors import VectorIndex

# Each source (BM25, vector, entity) proposes this many rows (or the limit, if larger) to be
# scored: enough that no source's good answers are cut before ranking, few enough that ranking
# stays a small part of a search (tools/evals/eval_locomo.py measures both).
_CANDIDATES_PER_SOURCE = 100
_RESAVE_SHARE = 0.1  # see SearchIndex.save_lists
# From this many rows, the vector search (usearch releases the GIL) runs on a second thread while
# BM25 finds its candidates: below it, handing the search to a thread costs more than the overlap
# saves. A question still being embedded (a pending vector) always goes there: the thread embeds
# it, then searches.
PARALLEL_MIN_ROWS = 200_000


@functools.cache
def _vector_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="mnemo-vectors")  # threads start on first use


def on_vector_thread(fn: Callable[[], Vector]) -> Future[Vector]:
    """Run ``fn`` (a question's embedding) on the vector thread; searches queued after it see it done."""
    return _vector_thread().submit(fn)


def _unique_rows(parts: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """The distinct rows of ``parts``, ascending: a sort and a compare, without np.unique's extra
    passes."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    rows = np.sort(np.concatenate(parts).astype(np.int64, copy=False))
    if len(rows) > 1:
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    return rows


class SearchIndex:
    """Rows are appended; a re-put key retires its old row; status changes apply in place.
    Safe to call from several threads: a write or a search holds the index's lock.

    Given a shelf (``copies``), it keeps each document's copy (a memory's JSON) there by row:
    written with the row, replaced by a status change, dropped when the row retires."""

    def __init__(self, weights: Weights | None = None, copies: Shelf | None = None) -> None:
        self.weights = weights or Weights()
        self._lock = threading.RLock()
        self._copies = copies
        self._rows = RowTable()
        self._lexical = LexicalIndex()
        self._vectors: VectorIndex | None = None
        self.writes = 0  # adds, status changes and vectors put: what a saved image may lack

    # -- writing -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rows)

    def add(
        self, documents: Sequence[Document], *, bulk: bool = False, copies: Sequence[str] | None = None
    ) -> None:
        """Index documents; a key already present is replaced (its old row retires).

        ``bulk``: a page of a large load (the daemon's start), after which ``finish_bulk`` is
        called; until then its words are not searched. ``copies``: each document's copy, given
        exactly when the index keeps them.
        """
        self._check_copies(copies, len(documents))
        if not documents:
            return
        tokenised = [text_terms(d.text) for d in documents]
        with self._lock:
            self.writes += 1
            first = len(self._rows.keys)
            retired = self._rows.append(documents)
            self._lexical.add(tokenised, bulk=bulk)
            if self._copies is not None and copies is not None:
                self._copies.put_many(list(enumerate(copies, start=first)))
                self._copies.drop(retired.tolist())

    def set_status(self, key: str, status: str, copy: str | None = None) -> bool:
        """Change a document's status in place (close, forget), and its ``copy`` where the index
        keeps them; False when the key is unknown."""
        self._check_copies(None if copy is None else [copy], 1)
        with self._lock:
            self.writes += 1
            row = self._rows.set_status(key, status)
            if row is None:
                return False
            if self._copies is not None and copy is not None:
                self._copies.put(row, copy)
            return True

    def _check_copies(self, copies: Sequence[str] | None, count: int) -> None:
        """A write to an index that keeps copies gives each of its ``count`` documents' copy; one
        to an index that keeps none gives none."""
        wanted = None if self._copies is None else count
        if (None if copies is None else len(copies)) != wanted:
            raise ValueError("an index keeps a copy of each document, or of none")

    def copy(self, key: str) -> str | None:
        """The copy kept of a key's newest row, or None."""
        with self._lock:  # the row and its copy are written under it together
            row = self._rows.row_of(key)
            return None if row is None or self._copies is None else self._copies.get(row)

    def save_copies(self, path: Path) -> dict[str, npt.NDArray[Any]]:
        """The shelf of copies saved to ``path`` (``Shelf.save``); the caller holds ``lock``."""
        if self._copies is None:
            raise ValueError("this index keeps no copies")
        return self._copies.save(path)

    def put_vectors(
        self, keys: Sequence[str], vectors: npt.NDArray[np.float32], *, bulk: bool = False
    ) -> None:
        """Attach vectors to documents by key (unknown keys are skipped). ``bulk``: part of a large
        load, after which ``finish_bulk`` is called."""
        with self._lock:
            found = self._rows.keys.numbers(keys)
            known = np.flatnonzero(found >= 0)
            if not len(known):
                return
            self.writes += 1
            if self._vectors is None:
                self._vectors = VectorIndex(vectors.shape[1])
            rows = found[known]
            namespaces = [self._rows.namespace(row) for row in rows.tolist()]
            self._vectors.put(rows, vectors[known], namespaces, bulk=bulk)

    def finish_bulk(self, snapshot: ListsSnapshot | None) -> str:
        """After a bulk load: its words become searchable; the vector lists ``snapshot`` holds are
        adopted where they fit, else new ones are made, and saved if they changed much. Says what
        was done with the lists, for the log."""
        with self._lock:
            self._lexical.finish_bulk()
            self._rows.settle()
            if self._copies is not None:
                self._copies.settle()
            vectors = self._vectors
            if vectors is None:
                return "no vectors"
            saved = None
            if snapshot is not None and vectors.wants_lists and not vectors.has_lists:
                saved = snapshot.read(self._rows.keys.numbers, vectors.dim)
            outcome = vectors.settle_lists(saved)
            if snapshot is not None and self.save_lists(snapshot):
                outcome += "; saved"
            return outcome

    def save_lists(self, snapshot: ListsSnapshot) -> int:
        """Save the vector lists if more than a tenth of their rows changed since they were made,
        adopted or saved (the next start sorts in fewer changes faster than a save takes); the
        rows saved."""
        with self._lock:
            vectors = self._vectors
            if vectors is None or not vectors.has_lists or vectors.unsaved <= _RESAVE_SHARE * vectors.size:
                return 0
            # A retired row (its key re-added since) keeps its old vector: it is not named.
            return snapshot.write(vectors, self._rows.live_keys())

    def saved(self) -> dict[str, Any]:
        """The index's parts as saved (:mod:`mnemo.index.image`); the caller holds ``lock``."""
        rows, bitmaps, rest = self._rows.saved()
        vectors = None if self._vectors is None else self._vectors.saved()
        lexical = self._lexical.arrays()
        return {"rows": rows, "bitmaps": bitmaps, "rest": rest, "lexical": lexical, "vectors": vectors}

    @classmethod
    def restored(cls, parts: dict[str, Any], weights: Weights, copies: Shelf | None = None) -> SearchIndex:
        """The index ``saved`` gave, with the shelf of ``copies`` ``save_copies`` gave: raises
        ValueError where the parts do not fit together."""
        index = cls(weights, copies)
        index._rows = RowTable.restored(parts["rows"], parts["bitmaps"], parts["rest"])
        if copies is not None:
            live = np.asarray(index._rows.live.to_array(), dtype=np.int64)
            if len(copies) != len(live) or not copies.holds(live).all():
                raise ValueError(f"{len(live):,} rows live but {len(copies):,} copies kept, not theirs")
        index._lexical = LexicalIndex.restored(parts["lexical"])
        if index._lexical.size != len(index._rows.keys):
            raise ValueError("the words' rows differ from the rows")
        if parts["vectors"] is not None:
            index._vectors = VectorIndex.restored(*parts["vectors"])
            if index._vectors.size > len(index._rows.keys):
                raise ValueError("the vectors' rows differ from the rows")
        return index

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def rows_without_vectors(self) -> list[str]:
        """Keys of live rows with no vector (they wait for one)."""
        with self._lock:
            live = np.asarray(self._rows.live.to_array(), dtype=np.int64)
            if self._vectors is not None:
                live = live[~self._vectors.has(live)]
            return [self._rows.keys[row] for row in live.tolist()]

    def has(self, key: str) -> bool:
        """Whether ``key`` is indexed (live or retired)."""
        return self._rows.row_of(key) is not None

    def needs_vector(self, key: str) -> bool:
        """Whether ``key`` is indexed and its row has no vector yet. Takes no lock: a write
        beside it may make the answer stale, never wrong for long (a vector is then made twice)."""
        row = self._rows.row_of(key)
        vectors = self._vectors
        return row is not None and (vectors is None or not vectors.has(np.asarray([row]))[0])

    # -- searching -----------------------------------------------------------------------------

    def search(self, query: SearchQuery) -> list[Ranked]:
        """The best ``query.limit`` documents, ranked by the documented score."""
        with self._lock:
            return self._search(query)

    def _search(self, query: SearchQuery) -> list[Ranked]:
        allowed, mask = self._rows.allowed(query)
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
                    lambda: vectors.search(ready(pending), per_source, mask, query.namespaces)
                )
        candidates: list[npt.NDArray[np.int64]] = [self._lexical.candidates(query.terms, mask, per_source)]

        entity_hits = self._rows.naming(query.entities) & allowed
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
            vector = ready(query.vector)
            candidates.append(vectors.search(vector, per_source, mask, query.namespaces)[0])

        rows = _unique_rows(candidates)
        if not len(rows):
            return []
        if self._rows.rows_at:
            rows = _unique_rows([rows, self._rows.neighbours(rows, mask)])
        return rank(self._rows, self._lexical, vectors, rows, query, vector, self.weights)

    def nearby(self, query: SearchQuery, per_source: int, limit: int) -> list[str]:
        """Owners near ``query`` for the judge: ``per_source`` nearest by vector, then as many by
        BM25 not already chosen, then the most recent sharing an entity, up to ``limit``."""
        with self._lock:
            allowed, mask = self._rows.allowed(query)
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
            shared = self._rows.naming(query.entities) & allowed
            take(reversed(shared.to_array().tolist()), limit)
            return [self._rows.owner(row) for row in chosen]
