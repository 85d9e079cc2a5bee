"""An inverted file over int8 codes: k-means centroids, and each row in the list of its nearest.

Past a size the vector index (:mod:`mnemo.index.vectors`) stops reading every code for a question
and reads only the rows of the ``probes`` lists whose centroids are nearest to it, exactly. The
lists hold row numbers; the codes stay where the index keeps them, so the structure costs a few
bytes a row (at a million: the centroids, 1 MB, and ~16 bytes a row), where the HNSW graph it
replaced held its own copy of the codes and its links (0.8 GB at a million) and found fewer of the
exact nearest there (tools/bench/bench_vector_search.py; docs/benchmarks.md has the figures).

Centroids are trained by spherical k-means (a few rounds over a sample of ``_SAMPLE_PER_LIST``
rows a list), with ``2·√rows`` lists, so a list holds about ``√rows/2`` rows and a question reads
``probes`` of them. Rows added later join their nearest list; once the rows have grown past
``RETRAIN_GROWTH`` times those the centroids were trained on, the index trains new ones.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mnemo.index.codes import best, nearest, quantise

logger = logging.getLogger(__name__)

PROBES = 16  # lists read per question: bench_vector_search measures recall and time against it
RETRAIN_GROWTH = 4
_KMEANS_ROUNDS = 8
_SAMPLE_PER_LIST = 40
# Saved lists are trained anew rather than adopted when more than this share of their rows
# changed: the centroids would describe vectors that are mostly gone.
_STALE_MAX_SHARE = 0.2
_CHUNK_ROWS = 16_384  # rows turned to float at once: bounds the transient RAM


def list_count(rows: int) -> int:
    """How many lists an inverted file over ``rows`` rows has."""
    return max(1, int(2 * math.sqrt(rows)))


def training_sample(rows: npt.NDArray[np.int64], lists: int) -> npt.NDArray[np.int64]:
    """The rows k-means trains ``lists`` centroids on (the same ones for the same rows), ascending."""
    rng = np.random.default_rng(0)
    return np.sort(rng.choice(rows, min(len(rows), _SAMPLE_PER_LIST * lists), replace=False))


def train(sample: npt.NDArray[np.int8], lists: int, seed: int = 0) -> npt.NDArray[np.int8]:
    """``lists`` centroids (as int8 codes) for ``sample``'s rows, by spherical k-means."""
    lists = min(lists, len(sample))
    rng = np.random.default_rng(seed)
    centroids = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(_KMEANS_ROUNDS):
        members = nearest(centroids, sample)
        order = np.argsort(members, kind="stable")
        sums = np.zeros((lists, sample.shape[1]), dtype=np.float64)
        for start in range(0, len(order), _CHUNK_ROWS):
            at = order[start : start + _CHUNK_ROWS]
            owners = members[at]
            cuts = np.flatnonzero(np.diff(owners, prepend=-1))
            sums[owners[cuts]] += np.add.reduceat(sample[at].astype(np.float32), cuts, axis=0)
        filled = np.bincount(members, minlength=lists) > 0  # an empty list keeps its centroid
        centroids[filled] = quantise(sums[filled].astype(np.float32))
    return centroids


@dataclass(frozen=True, slots=True)
class SavedLists:
    """Lists saved by an earlier run, and what became of their rows: ``centroids`` and
    ``trained_rows`` (see :class:`~mnemo.index.inverted.InvertedLists`); per saved row, ``rows``
    (the row now holding its key, -1: none), ``fingerprints`` (of its codes when saved) and
    ``lists`` (its list)."""

    centroids: npt.NDArray[np.int8]
    trained_rows: int
    rows: npt.NDArray[np.int64]
    fingerprints: npt.NDArray[np.uint64]
    lists: npt.NDArray[np.int32]


class InvertedLists:
    """Centroids, each row's list, and each list's rows (in no order)."""

    __slots__ = ("_list_of", "_members", "_sizes", "centroids", "trained_rows")

    def __init__(self, centroids: npt.NDArray[np.int8], trained_rows: int) -> None:
        self.centroids = centroids
        self.trained_rows = trained_rows  # the rows the centroids were trained over
        self._list_of = np.zeros(0, dtype=np.int32)  # per row: its list, -1: none
        self._members: list[npt.NDArray[np.int64]] = [
            np.zeros(0, dtype=np.int64) for _ in range(len(centroids))
        ]
        self._sizes = np.zeros(len(centroids), dtype=np.int64)

    @classmethod
    def restored(
        cls,
        centroids: npt.NDArray[np.int8],
        trained_rows: int,
        rows: npt.NDArray[np.int64],
        lists: npt.NDArray[np.integer],
    ) -> InvertedLists:
        """Lists holding each of ``rows`` in its list of ``lists`` (as saved: checked for range)."""
        if len(lists) != len(rows) or lists.min(initial=0) < 0 or lists.max(initial=0) >= len(centroids):
            raise ValueError("a row's vector list is unknown")
        restored = cls(centroids, trained_rows)
        restored.add(rows, lists.astype(np.int32))
        return restored

    @property
    def count(self) -> int:
        return len(self.centroids)

    @property
    def nbytes(self) -> int:
        members = sum(m.nbytes for m in self._members)
        return int(self.centroids.nbytes + self._list_of.nbytes + members + self._sizes.nbytes)

    def lists_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        """The list of each of ``rows`` (each must be in one)."""
        return self._list_of[rows]

    def add(self, rows: npt.NDArray[np.int64], lists: npt.NDArray[np.int32]) -> None:
        """Put ``rows`` (in none yet, each once) in ``lists``."""
        if not len(rows):
            return
        needed = int(rows.max()) + 1
        if needed > len(self._list_of):
            grown = np.full(
                max(needed, len(self._list_of) + len(self._list_of) // 4, 1024), -1, dtype=np.int32
            )
            grown[: len(self._list_of)] = self._list_of
            self._list_of = grown
        self._list_of[rows] = lists
        order = np.argsort(lists, kind="stable")
        sorted_lists = lists[order]
        starts = np.flatnonzero(np.diff(sorted_lists, prepend=-1))
        for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(rows)], strict=True):
            self._append(int(sorted_lists[start]), rows[order[start:end]])

    def _append(self, list_id: int, rows: npt.NDArray[np.int64]) -> None:
        size, members = int(self._sizes[list_id]), self._members[list_id]
        needed = size + len(rows)
        if needed > len(members):
            grown = np.zeros(max(needed, len(members) + len(members) // 2, 16), dtype=np.int64)
            grown[:size] = members[:size]
            members = self._members[list_id] = grown
        members[size:needed] = rows
        self._sizes[list_id] = needed

    def remove(self, rows: npt.NDArray[np.int64]) -> None:
        """Take ``rows`` (each in a list) out of their lists."""
        for row in rows.tolist():
            list_id = int(self._list_of[row])
            size, members = int(self._sizes[list_id]), self._members[list_id]
            at = int(np.flatnonzero(members[:size] == row)[0])
            members[at] = members[size - 1]
            self._sizes[list_id] = size - 1
            self._list_of[row] = -1

    def probe(self, code: npt.NDArray[np.int8], probes: int) -> npt.NDArray[np.int64]:
        """The rows of the ``probes`` lists nearest to ``code``."""
        near, _ = best(self.centroids, code, probes)
        return np.concatenate([self._members[i][: self._sizes[i]] for i in near.tolist()])


def adopt(
    saved: SavedLists,
    dim: int,
    present: npt.NDArray[np.bool_],
    fingerprints_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.uint64]],
    codes_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int8]],
) -> tuple[InvertedLists, int, str] | None:
    """Saved lists for an index whose rows with a vector are ``present``: each saved row kept in
    its list where it holds the codes it had (``fingerprints_of``), the others sorted in anew
    (``codes_of``). The lists, the rows sorted in since they were saved, and what was done; None
    when they do not fit or too many rows changed (new ones are then made)."""
    rows, count = saved.rows, int(present.sum())
    if saved.centroids.ndim != 2 or saved.centroids.shape[1] != dim or not len(saved.centroids):
        logger.warning("saved vector lists do not fit this index: new ones are made")
        return None
    if count > RETRAIN_GROWTH * saved.trained_rows:
        logger.info(
            "saved vector lists trained over %d rows, %d now: new ones are made", saved.trained_rows, count
        )
        return None
    known = (rows >= 0) & (rows < len(present)) & (saved.lists >= 0) & (saved.lists < len(saved.centroids))
    known[known] = present[rows[known]]
    _, first = np.unique(np.where(known, rows, -1), return_index=True)
    known[np.setdiff1d(np.arange(len(rows)), first)] = False  # a row named twice: its first entry
    fits = np.zeros(len(rows), dtype=bool)
    fits[known] = fingerprints_of(rows[known]) == saved.fingerprints[known]
    stale = len(rows) - int(fits.sum())
    if stale > _STALE_MAX_SHARE * len(rows):
        logger.info("saved vector lists: %d of %d rows stale, new ones are made", stale, len(rows))
        return None
    lists = InvertedLists(saved.centroids, saved.trained_rows)
    kept_rows = rows[fits]
    lists.add(kept_rows, saved.lists[fits])
    in_lists = np.zeros(len(present), dtype=bool)
    in_lists[kept_rows] = True
    missing = np.flatnonzero(present & ~in_lists).astype(np.int64)
    lists.add(missing, nearest(lists.centroids, codes_of(missing)))
    outcome = f"saved lists adopted: {len(kept_rows):,} rows kept, {stale:,} dropped, {len(missing):,} added"
    return lists, stale + len(missing), outcome
