"""An inverted file over int8 codes: k-means centroids, and each row in the list of its nearest.

Past a size the vector index (:mod:`mnemo.index.vectors`) stops reading every code for a question
and reads only the rows of the ``probes`` lists whose centroids are nearest to it, exactly. The
lists hold row numbers; the codes stay where the index keeps them, so the structure costs a few
bytes a row (at a million: the centroids, 1 MB, and ~16 bytes a row), where the HNSW graph it
replaced held its own copy of the codes and its links (0.8 GB at a million) and found fewer of the
exact nearest there (tools/bench_vector_search.py; docs/benchmarks.md has the figures).

Centroids are trained by spherical k-means (a few rounds over a sample of ``_SAMPLE_PER_LIST``
rows a list), with ``2·√rows`` lists, so a list holds about ``√rows/2`` rows and a question reads
``probes`` of them. Rows added later join their nearest list; once the rows have grown past
``RETRAIN_GROWTH`` times those the centroids were trained on, the index trains new ones.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from mnemo.index.codes import best, nearest, quantise

PROBES = 16  # lists read per question: bench_vector_search measures recall and time against it
RETRAIN_GROWTH = 4
_KMEANS_ROUNDS = 8
_SAMPLE_PER_LIST = 40
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
