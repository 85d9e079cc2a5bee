"""BM25 over an inverted index: a compact base segment plus a small segment of recent additions.

The base is CSR arrays (per term: document rows and term frequencies), built in one vectorised
pass; documents added later go to a dictionary segment that is folded into the base when it grows
past a fraction of it. A bulk load (the daemon's start) keeps its pages' postings aside as arrays
and sorts them into the base once, at ``finish_bulk``: folded in page by page, every fold would
sort the whole index again. Removal is not handled here: the engine
masks rows out when it scores.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mnemo.index.vocabulary import Vocabulary

K1 = 1.2
B = 0.75
_MERGE_FRACTION = 0.1
# Candidate search reads at most this many postings of a term, the highest-impact ones first;
# terms in fewer documents are read whole (so small indexes are searched exactly).
POOL_PER_TERM = 5_000
DENSE_MAX_ROWS = 200_000
_MIN_MERGE_ROWS = 2_000


class LexicalIndex:
    def __init__(self) -> None:
        self._vocabulary = Vocabulary()
        self._indptr = np.zeros(1, dtype=np.int64)
        self._rows = np.zeros(0, dtype=np.int32)
        self._tfs = np.zeros(0, dtype=np.uint16)  # the base's term frequencies (capped at 65,535)
        self._recent: dict[int, list[tuple[int, int]]] = {}
        self._recent_rows = 0
        self._lengths = np.zeros(0, dtype=np.float32)
        self._size = 0
        self._total_length = 0.0
        self._df = np.zeros(0, dtype=np.int32)
        # Per common term, the rows of its POOL_PER_TERM highest-impact base postings.
        self._heads: dict[int, npt.NDArray[np.int32]] = {}
        # Per common term, the highest-impact rows of its recent postings (dropped on change).
        self._recent_heads: dict[int, npt.NDArray[np.int32]] = {}
        # Cells of candidate rows, written and read back to drop repeats (see _distinct).
        self._scratch = np.zeros(0, dtype=np.int32)
        # The recent segment's postings as arrays, made on first read after a change, so that a
        # common term's long Python list is not converted again for every question.
        self._recent_arrays: dict[int, tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]] = {}
        # A bulk load's postings (term ids, rows, tfs per page), not searchable until finish_bulk.
        self._bulk: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]] = []

    @property
    def size(self) -> int:
        return self._size

    def add(self, documents: Sequence[Sequence[str]], *, bulk: bool = False) -> None:
        """Append documents (their terms, with repeats) as the next rows.

        ``bulk``: a page of a large load; its documents are found once ``finish_bulk`` is called.
        """
        start = self._size
        lengths = np.fromiter((len(d) for d in documents), dtype=np.float32, count=len(documents))
        self._grow_lengths(start + len(documents))
        self._lengths[start : start + len(documents)] = lengths
        self._size += len(documents)
        self._total_length += float(lengths.sum())
        if start == 0 and not self._vocabulary:
            self._set_base(*self._postings(documents, 0))
            return
        if bulk:
            postings = self._postings(documents, start)
            self._bulk.append(postings)
            self._bump_df(postings[0])
            return
        term_ids: list[int] = []
        for offset, document in enumerate(documents):
            for term, tf in Counter(document).items():
                term_id = self._vocabulary.id_of(term)
                self._recent.setdefault(term_id, []).append((start + offset, tf))
                self._recent_arrays.pop(term_id, None)
                self._recent_heads.pop(term_id, None)
                term_ids.append(term_id)
        self._bump_df(np.asarray(term_ids, dtype=np.int64))
        self._recent_rows += len(documents)
        if self._recent_rows > max(_MIN_MERGE_ROWS, _MERGE_FRACTION * self._size):
            self._merge_recent()

    def _grow_lengths(self, needed: int) -> None:
        if needed > len(self._lengths):
            grown = np.zeros(max(needed, 2 * len(self._lengths), 1024), dtype=np.float32)
            grown[: self._size] = self._lengths[: self._size]
            self._lengths = grown

    def _bump_df(self, term_ids: npt.NDArray[np.int64]) -> None:
        """Count one more document for each of ``term_ids`` (one entry per document and term)."""
        if len(self._vocabulary) > len(self._df):
            grown = np.zeros(max(len(self._vocabulary), 2 * len(self._df)), dtype=np.int32)
            grown[: len(self._df)] = self._df
            self._df = grown
        np.add.at(self._df, term_ids, 1)  # touches only these terms (a bincount would walk the vocabulary)

    def _postings(
        self, documents: Sequence[Sequence[str]], start: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """(term id, row, tf) of every distinct term of each document, documents from row ``start``."""
        terms: list[str] = []
        rows: list[int] = []
        tfs: list[int] = []
        for row, document in enumerate(documents, start):
            for term, tf in Counter(document).items():
                terms.append(term)
                rows.append(row)
                tfs.append(tf)
        return (
            self._vocabulary.ids_of(terms),
            np.asarray(rows, dtype=np.int32),
            np.asarray(tfs, dtype=np.float32),
        )

    def finish_bulk(self) -> None:
        """Make a bulk load's documents searchable: its postings join the base in one sort."""
        if self._bulk:
            self._merge_recent()
        self._vocabulary.compact()

    def _set_base(
        self, term_ids: npt.NDArray[np.int64], rows: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32]
    ) -> None:
        order = np.lexsort((rows, term_ids))
        term_ids, self._rows = term_ids[order], rows[order]
        self._tfs = np.minimum(tfs[order], np.iinfo(np.uint16).max).astype(np.uint16)
        counts = np.bincount(term_ids, minlength=len(self._vocabulary))
        self._indptr = np.zeros(len(self._vocabulary) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._indptr[1:])
        self._df = counts.astype(np.int32)
        self._recent, self._recent_rows = {}, 0
        self._recent_arrays = {}
        self._recent_heads = {}
        self._make_heads()

    def _make_heads(self) -> None:
        """For terms in many documents, their postings ordered by BM25 impact (with the average
        length of now): candidate search reads only the head of these."""
        self._heads = {}
        average = self._total_length / max(self._size, 1)
        for term_id in np.flatnonzero(self._df[: len(self._indptr) - 1] > POOL_PER_TERM).tolist():
            lo, hi = int(self._indptr[term_id]), int(self._indptr[term_id + 1])
            tfs_term = self._tfs[lo:hi].astype(np.float32)
            impact = tfs_term / (tfs_term + K1 * (1 - B + B * self._lengths[self._rows[lo:hi]] / average))
            head = lo + np.argsort(-impact, kind="stable")[:POOL_PER_TERM]
            self._heads[term_id] = self._rows[head]

    def arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        """The index as saved (:mod:`mnemo.index.image`): the recent segment folded in first."""
        if self._bulk:
            raise ValueError("a bulk load is not finished")
        if self._recent:
            self._merge_recent()
        hashes, ids = self._vocabulary.arrays()
        return {
            "hashes": hashes,
            "ids": ids,
            "indptr": self._indptr,
            "rows": self._rows,
            "tfs": self._tfs,
            "lengths": self._lengths[: self._size],
        }

    @classmethod
    def restored(cls, arrays: dict[str, npt.NDArray[np.generic]]) -> LexicalIndex:
        index = cls()
        index._vocabulary = Vocabulary.restored(arrays["hashes"], arrays["ids"])  # type: ignore[arg-type]
        indptr, rows = arrays["indptr"].astype(np.int64), arrays["rows"].astype(np.int32)
        lengths = arrays["lengths"].astype(np.float32)
        terms = len(index._vocabulary)
        if len(indptr) != terms + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
            raise ValueError("postings' term offsets out of order")
        if int(indptr[-1]) != len(rows) or len(arrays["tfs"]) != len(rows):
            raise ValueError("postings' lengths differ")
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(lengths)):
            raise ValueError("a posting names a row the index does not have")
        index._indptr, index._rows, index._tfs = indptr, rows, arrays["tfs"].astype(np.uint16)
        index._lengths, index._size = lengths, len(lengths)
        index._total_length = float(lengths.sum(dtype=np.float64))
        index._df = np.diff(indptr).astype(np.int32)
        index._make_heads()
        return index

    def _merge_recent(self) -> None:
        """Fold the recent segment and any bulk pages into the base."""
        starts, ends = self._indptr[:-1], self._indptr[1:]
        base_terms = np.repeat(np.arange(len(starts), dtype=np.int64), ends - starts)
        extra_terms = [t for t, postings in self._recent.items() for _ in postings]
        extra = [p for postings in self._recent.values() for p in postings]
        parts = [
            (base_terms, self._rows, self._tfs),
            (
                np.asarray(extra_terms, dtype=np.int64),
                np.asarray([r for r, _ in extra], dtype=np.int32),
                np.asarray([tf for _, tf in extra], dtype=np.float32),
            ),
            *self._bulk,
        ]
        self._bulk = []
        self._set_base(*(np.concatenate(column) for column in zip(*parts, strict=True)))

    def _segments(self, term_id: int | None) -> list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]]:
        """A term's postings per segment, without copying the base's (rows ascending overall)."""
        if term_id is None:
            return []
        segments = []
        if term_id + 1 < len(self._indptr):
            lo, hi = self._indptr[term_id], self._indptr[term_id + 1]
            if hi > lo:
                segments.append((self._rows[lo:hi], self._tfs[lo:hi].astype(np.float32)))
        recent = self._recent_postings(term_id)
        if recent is not None:
            segments.append(recent)
        return segments

    def _recent_postings(self, term_id: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]] | None:
        cached = self._recent_arrays.get(term_id)
        if cached is None:
            recent = self._recent.get(term_id)
            if not recent:
                return None
            cached = (
                np.asarray([r for r, _ in recent], dtype=np.int32),
                np.asarray([tf for _, tf in recent], dtype=np.float32),
            )
            self._recent_arrays[term_id] = cached
        return cached

    def idf(self, term: str) -> float:
        term_id = self._vocabulary.get(term)
        df = int(self._df[term_id]) if term_id is not None and term_id < len(self._df) else 0
        return math.log(1 + (self._size - df + 0.5) / (df + 0.5))

    def score(
        self, terms: Sequence[str], allowed: npt.NDArray[np.bool_] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Rows holding any term (among ``allowed``), with their BM25 scores (k1=1.2, b=0.75).

        Scores accumulate in a dense array: within one term's postings a row appears once, so a
        fancy-indexed add is exact, and it costs far less than sorting the postings together.
        """
        if self._size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        average = self._total_length / self._size
        accumulated = np.zeros(self._size, dtype=np.float32)
        for term in dict.fromkeys(terms):
            idf = self.idf(term)
            for rows, tfs in self._segments(self._vocabulary.get(term)):
                norm = tfs + K1 * (1 - B + B * self._lengths[rows] / average)
                accumulated[rows] += idf * tfs * (K1 + 1) / norm
        if allowed is not None:
            accumulated[~allowed[: self._size]] = 0.0
        found = np.flatnonzero(accumulated)
        return found, accumulated[found]

    def candidates(
        self, terms: Sequence[str], allowed: npt.NDArray[np.bool_] | None, count: int
    ) -> npt.NDArray[np.int64]:
        """About the ``count`` best rows by BM25 among ``allowed`` (ascending), reading few postings.

        Exact up to DENSE_MAX_ROWS rows (every posting is scored; cheapest there). Beyond, the
        pool is each term's postings, or for a term in more than POOL_PER_TERM documents its
        highest-impact ones per segment; the pool is scored exactly. Not thread-safe (a scratch
        array is reused): the engine searches under its lock.
        """
        if self._size <= DENSE_MAX_ROWS:
            found, scores = self.score(terms, allowed)
            if len(found) > count:
                found = np.sort(found[np.argpartition(-scores, count)[:count]])
            return found
        pools: list[npt.NDArray[np.int32]] = []
        for term in dict.fromkeys(terms):
            term_id = self._vocabulary.get(term)
            if term_id is None:
                continue
            head = self._heads.get(term_id)
            for k, (rows, tfs) in enumerate(self._segments(term_id)):
                if k == 0 and head is not None:
                    pools.append(head)  # the base segment's head
                elif len(rows) > POOL_PER_TERM:
                    pools.append(self._recent_head(term_id, rows, tfs))
                else:
                    pools.append(rows)
        if not pools:
            return np.zeros(0, dtype=np.int64)
        pool = self._distinct(np.concatenate(pools).astype(np.int64))
        if allowed is not None:
            pool = pool[allowed[pool]]
        pool.sort()
        scores = self.score_rows(terms, pool)
        keep = scores > 0
        pool, scores = pool[keep], scores[keep]
        if len(pool) > count:
            pool = np.sort(pool[np.argpartition(-scores, count)[:count]])
        return pool

    def _recent_head(
        self, term_id: int, rows: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.int32]:
        """The POOL_PER_TERM highest-impact rows of a term's recent postings (kept until they change)."""
        cached = self._recent_heads.get(term_id)
        if cached is None:
            average = self._total_length / max(self._size, 1)
            impact = tfs / (tfs + K1 * (1 - B + B * self._lengths[rows] / average))
            cached = rows[np.argpartition(-impact, POOL_PER_TERM)[:POOL_PER_TERM]]
            self._recent_heads[term_id] = cached
        return cached

    def _distinct(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``rows`` without repeats, in no particular order, in linear time.

        Every position writes its index into a scratch cell of its row; one write per row
        survives (whichever), so exactly one position per row reads its own index back.
        """
        if len(self._scratch) < self._size:
            self._scratch = np.zeros(max(self._size, 2 * len(self._scratch)), dtype=np.int32)
        positions = np.arange(len(rows), dtype=np.int32)
        self._scratch[rows] = positions
        distinct: npt.NDArray[np.int64] = rows[self._scratch[rows] == positions]
        return distinct

    def score_rows(self, terms: Sequence[str], rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """Exact BM25 of each of ``rows`` (sorted ascending) for ``terms``."""
        out = np.zeros(len(rows), dtype=np.float32)
        if self._size == 0 or not len(rows):
            return out
        average = self._total_length / self._size
        length_norm = K1 * (1 - B + B * self._lengths[rows] / average)
        for term in dict.fromkeys(terms):
            segments = self._segments(self._vocabulary.get(term))
            if not segments:
                continue
            idf = self.idf(term)
            for posting_rows, tfs in segments:
                position = np.minimum(np.searchsorted(posting_rows, rows), len(posting_rows) - 1)
                found = posting_rows[position] == rows
                tf = np.where(found, tfs[position], 0.0).astype(np.float32)
                out += idf * tf * (K1 + 1) / (tf + length_norm)
        return out
