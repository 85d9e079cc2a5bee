"""Nearest neighbours over int8-quantised unit vectors, stored by group (namespace).

Rows are stored as int8 (``round(127·v)`` of an L2-normalised vector: a quarter of float32's
RAM, and cosine within ~1 % of it), contiguously per group: a search narrowed to a few groups
scans just their codes, exactly, without gathering rows from all over memory. Measured at a
million 768-dimension rows: a 25,000-row namespace scans in ~3 ms; gathering it first cost 3–6 ms
more, and the global graph, asked for enough neighbours to find 200 inside it, 16 ms and up.
Search is exact (SIMD int8 inner products through usearch's brute-force kernel) while the index
is small, and through an HNSW graph once it holds more than ``exact_max_rows`` rows (given the
same int8 codes: no float copy is made, and graph and scans compare the same vectors). Any other
filter narrows the rows that may be returned: few allowed rows are searched exactly; otherwise
the search over-fetches and drops what the filter forbids.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from usearch.index import Index, MetricKind, ScalarKind, search  # type: ignore[attr-defined]

EXACT_MAX_ROWS = 20_000
_SUBSET_EXACT_MAX_ROWS = 20_000
_SCAN_OR_GRAPH = 24  # see VectorIndex._scan_max_rows
_SCAN_CALLS_MAX = 4  # groups searched one by one; more are merged first
_SCALE = 127.0


def quantise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.int8]:
    """int8 codes of unit vectors (rows are re-normalised first, so any scale is accepted)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    codes: npt.NDArray[np.int8] = np.clip(np.rint(unit * _SCALE), -127, 127).astype(np.int8)
    return codes


class _Group:
    """One group's codes, contiguous, and the row each slot holds."""

    __slots__ = ("codes", "rows", "size")

    def __init__(self, dim: int) -> None:
        self.codes = np.zeros((0, dim), dtype=np.int8)
        self.rows = np.zeros(0, dtype=np.int64)
        self.size = 0

    def append(self, rows: npt.NDArray[np.int64], codes: npt.NDArray[np.int8]) -> npt.NDArray[np.int64]:
        """Store new rows' codes at the end; their slots."""
        needed = self.size + len(rows)
        if needed > len(self.rows):
            # Grow by a quarter, not double: codes are most of the index's RAM.
            capacity = max(needed, len(self.rows) + len(self.rows) // 4, 256)
            grown_codes = np.zeros((capacity, self.codes.shape[1]), dtype=np.int8)
            grown_codes[: self.size] = self.codes[: self.size]
            grown_rows = np.zeros(capacity, dtype=np.int64)
            grown_rows[: self.size] = self.rows[: self.size]
            self.codes, self.rows = grown_codes, grown_rows
        slots = np.arange(self.size, needed, dtype=np.int64)
        self.codes[slots] = codes
        self.rows[slots] = rows
        self.size = needed
        return slots


class VectorIndex:
    def __init__(self, dim: int, *, exact_max_rows: int = EXACT_MAX_ROWS) -> None:
        self.dim = dim
        self._groups: list[_Group] = []
        self._group_ids: dict[str, int] = {}
        # Per row: its group and slot there (-1: no vector), and whether it has a vector.
        self._group_of = np.zeros(0, dtype=np.int32)
        self._slot_of = np.zeros(0, dtype=np.int64)
        self._present = np.zeros(0, dtype=bool)
        self._size = 0
        self._exact_max_rows = exact_max_rows
        self._graph: Index | None = None
        self._merged: _Group | None = None  # every group's codes in one matrix (see _scan)

    @property
    def size(self) -> int:
        return self._size

    def has(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        inside = rows < self._size
        out = np.zeros(len(rows), dtype=bool)
        out[inside] = self._present[rows[inside]]
        return out

    def put(
        self, rows: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32], groups: Sequence[str]
    ) -> None:
        """Set the vectors of ``rows``, each in its group (a row keeps the group it first had)."""
        if not len(rows):
            return
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vectors have {vectors.shape[1]} dimensions, the index {self.dim}")
        if len(groups) != len(rows):
            raise ValueError(f"{len(rows)} rows but {len(groups)} groups")
        self._grow(int(rows.max()) + 1)
        self._merged = None
        rows, first = np.unique(rows, return_index=True)  # a row given twice: its first vector
        codes = quantise(vectors[first])
        was_present = self._present[rows].copy()
        for i in np.flatnonzero(was_present).tolist():  # a changed vector: replaced in place
            row = int(rows[i])
            self._groups[self._group_of[row]].codes[self._slot_of[row]] = codes[i]
        new = np.flatnonzero(~was_present)
        by_group: dict[int, list[int]] = {}
        for i in new.tolist():
            by_group.setdefault(self._group_id(groups[int(first[i])]), []).append(i)
        for group_id, positions in by_group.items():
            chosen = rows[positions]
            self._slot_of[chosen] = self._groups[group_id].append(chosen, codes[positions])
            self._group_of[chosen] = group_id
        self._present[rows] = True
        if self._graph is not None:
            if was_present.any():  # a changed vector: the graph node is replaced
                self._graph.remove(rows[was_present].astype(np.uint64))
            self._graph.add(rows.astype(np.uint64), codes)
        elif self._size > self._exact_max_rows:
            self._build_graph()

    def _scan_max_rows(self, count: int) -> int:
        """The most rows of narrowed groups scanned rather than searched through the graph, for
        ``count`` neighbours.

        Measured at a million 768-dimension rows: a scan of S rows costs ~0.1 ms per 1,000; the
        graph, asked for the ~1.2·count/share neighbours it takes to find ``count`` inside groups
        holding a share S/rows of the index, ~1 ms per 500. The two meet near
        S = sqrt(24 × count × rows): ~49,000 rows of a million for 100 neighbours.
        """
        return max(self._exact_max_rows, int(math.sqrt(_SCAN_OR_GRAPH * count * self._size)))

    def _group_id(self, group: str) -> int:
        group_id = self._group_ids.get(group)
        if group_id is None:
            group_id = self._group_ids[group] = len(self._groups)
            self._groups.append(_Group(self.dim))
        return group_id

    def _grow(self, needed: int) -> None:
        if needed > len(self._present):
            capacity = max(needed, 2 * len(self._present), 1024)
            present = np.zeros(capacity, dtype=bool)
            present[: self._size] = self._present[: self._size]
            group_of = np.full(capacity, -1, dtype=np.int32)
            group_of[: self._size] = self._group_of[: self._size]
            slot_of = np.full(capacity, -1, dtype=np.int64)
            slot_of[: self._size] = self._slot_of[: self._size]
            self._present, self._group_of, self._slot_of = present, group_of, slot_of
        self._size = max(self._size, needed)

    def _codes_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int8]:
        """The codes of ``rows`` (which must hold vectors), in their order."""
        out = np.empty((len(rows), self.dim), dtype=np.int8)
        group_of = self._group_of[rows]
        # Rows sorted by group and cut into runs: one gather per group, not one mask per group.
        order = np.argsort(group_of, kind="stable")
        sorted_groups = group_of[order]
        starts = np.flatnonzero(np.diff(sorted_groups, prepend=-2))
        slots = self._slot_of[rows[order]]
        for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(rows)], strict=True):
            at = order[start:end]
            out[at] = self._groups[int(sorted_groups[start])].codes[slots[start:end]]
        return out

    def _build_graph(self) -> None:
        graph = Index(ndim=self.dim, metric=MetricKind.Cos, dtype=ScalarKind.I8, connectivity=16)
        for group in self._groups:
            graph.add(
                group.rows[: group.size].astype(np.uint64),
                group.codes[: group.size],
            )
        self._graph = graph

    def search(
        self,
        query: npt.NDArray[np.float32],
        count: int,
        allowed: npt.NDArray[np.bool_] | None = None,
        groups: Sequence[str] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Up to ``count`` rows nearest to ``query`` (cosine, best first) among ``allowed`` rows.

        ``groups``, when given, must hold every allowed row's group: the search may then scan
        just those groups.
        """
        if self._size == 0 or count <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        code = quantise(query.reshape(1, -1))[0]
        if groups is not None:
            chosen = [self._groups[self._group_ids[g]] for g in dict.fromkeys(groups) if g in self._group_ids]
            if sum(g.size for g in chosen) <= self._scan_max_rows(count):
                return self._scan(code, count, chosen, allowed)
        if self._graph is None:
            return self._scan(code, count, self._groups, allowed)
        usable = self._present[: self._size]
        if allowed is not None:
            usable = usable & allowed[: self._size]
        n_usable = int(usable.sum())
        if n_usable == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if n_usable <= _SUBSET_EXACT_MAX_ROWS:
            rows = np.flatnonzero(usable)
            return self._best(self._codes_of(rows), rows, code, count)
        wanted = min(n_usable, count)
        # Over-fetch by the share of rows the filter forbids (plus a margin), not by a constant:
        # an HNSW search for 800 neighbours costs several times one for 240.
        share = n_usable / self._size
        fetch = min(self._size, int(count / share * 1.2) + 16)
        while True:
            found = self._graph.search(code, fetch)
            rows = found.keys.astype(np.int64)
            keep = usable[rows]
            if keep.sum() >= wanted or fetch >= self._size:
                rows, distances = rows[keep][:count], found.distances[keep][:count]
                return rows, (1.0 - distances).astype(np.float32)
            fetch = min(self._size, fetch * 4)

    def cosines(self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` to each of ``rows`` (which must hold vectors), int8 on both sides."""
        codes = self._codes_of(rows).astype(np.float32)
        code = quantise(query.reshape(1, -1))[0].astype(np.float32)
        norms = np.linalg.norm(codes, axis=1) * float(np.linalg.norm(code))
        cosines: npt.NDArray[np.float32] = (codes @ code / np.maximum(norms, 1e-12)).astype(np.float32)
        return cosines

    def _scan(
        self,
        code: npt.NDArray[np.int8],
        count: int,
        groups: Sequence[_Group],
        allowed: npt.NDArray[np.bool_] | None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Exact search of whole groups, in place, keeping only allowed rows (``allowed`` covers
        every row of the index)."""
        found_rows: list[npt.NDArray[np.int64]] = []
        found_cosines: list[npt.NDArray[np.float32]] = []
        if len(groups) > _SCAN_CALLS_MAX:
            # A search call costs ~0.1 ms before it reads a row: many small groups are copied
            # into one matrix and searched at once. All of them (an unnarrowed search of an
            # index too small for a graph, at most exact_max_rows rows) are kept until a put.
            if groups is self._groups and self._merged is not None:
                groups = [self._merged]
            else:
                merged = _Group(self.dim)
                merged.codes = np.concatenate([g.codes[: g.size] for g in groups])
                merged.rows = np.concatenate([g.rows[: g.size] for g in groups])
                merged.size = len(merged.rows)
                if groups is self._groups:
                    self._merged = merged
                groups = [merged]
        for group in groups:
            codes, rows = group.codes[: group.size], group.rows[: group.size]
            forbidden = 0
            if allowed is not None:
                keep = allowed[rows]
                forbidden = len(keep) - int(keep.sum())
                if forbidden > len(keep) // 2:  # mostly forbidden: gather what is allowed
                    codes, rows, forbidden = codes[keep], rows[keep], 0
            if not len(rows):
                continue
            # Mostly allowed: search it all, asking for enough to drop what is forbidden.
            found, cosines = self._best(codes, rows, code, count + forbidden)
            if forbidden:
                ok = allowed[found]  # type: ignore[index]
                found, cosines = found[ok][:count], cosines[ok][:count]
            found_rows.append(found)
            found_cosines.append(cosines)
        if not found_rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows, cosines = np.concatenate(found_rows), np.concatenate(found_cosines)
        order = np.argsort(-cosines, kind="stable")[:count]
        return rows[order], cosines[order]

    @staticmethod
    def _best(
        codes: npt.NDArray[np.int8], rows: npt.NDArray[np.int64], code: npt.NDArray[np.int8], count: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        count = min(count, len(rows))
        found = search(codes, code, count, MetricKind.Cos, exact=True)
        return rows[found.keys.astype(np.int64)], (1.0 - found.distances).astype(np.float32)
