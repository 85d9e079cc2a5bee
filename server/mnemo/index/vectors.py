"""Nearest neighbours over int8-quantised unit vectors, stored by group (namespace).

Rows are stored as int8 codes (:mod:`mnemo.index.codes`), contiguously per group: a search
narrowed to a few groups scans just their codes, exactly and in place, which costs less than
gathering the same rows from all over memory first, or than asking the global graph for enough
neighbours to find the wanted number inside those groups. Search is exact (SIMD int8 inner
products through usearch's brute-force kernel) while the index is small, and through an HNSW
graph once it holds more than ``exact_max_rows`` rows (given the same int8 codes: no float copy
is made, and graph and scans compare the same vectors). Any other filter narrows the rows that
may be returned: few allowed rows are searched exactly; otherwise the search over-fetches and
drops what the filter forbids.

Building the graph is most of a large index's start, so a bulk load defers it
(``put(..., bulk=True)``) and ``settle_graph`` then adopts a graph saved by an earlier run
(``save_graph``) when one is given, keeping each saved node whose row still holds the very codes
it was built from (checked by fingerprint) and adding what is new.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from usearch.index import (  # type: ignore[attr-defined]
    DEFAULT_EXPANSION_SEARCH,
    Index,
    MetricKind,
    ScalarKind,
    search,
)

from mnemo.index.codes import CodeGroup, fingerprints, quantise

EXACT_MAX_ROWS = 20_000
_SUBSET_EXACT_MAX_ROWS = 20_000
_SCAN_OR_GRAPH = 24  # see VectorIndex._scan_max_rows
_SCAN_CALLS_MAX = 4  # groups searched one by one; more are merged first
# A saved graph is rebuilt rather than adopted when more than this share of its nodes is stale:
# removed nodes stay in an HNSW graph as tombstones that searches still walk.
_STALE_MAX_SHARE = 0.2
_FINGERPRINT_CHUNK_ROWS = 65_536
_RENAMED = np.uint64(1 << 62)  # labels are moved out of the rows' range before taking them

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SavedGraph:
    """A graph saved by an earlier run, and what became of its nodes: ``labels`` (the rows they
    were), ``rows`` (the row now holding each one's key, -1: none), ``fingerprints`` (of each
    one's codes when saved)."""

    path: Path
    labels: npt.NDArray[np.uint64]
    rows: npt.NDArray[np.int64]
    fingerprints: npt.NDArray[np.uint64]


class VectorIndex:
    def __init__(self, dim: int, *, exact_max_rows: int = EXACT_MAX_ROWS) -> None:
        self.dim = dim
        self._groups: list[CodeGroup] = []
        self._group_ids: dict[str, int] = {}
        # Per row: its group and slot there (-1: no vector), and whether it has a vector.
        self._group_of = np.zeros(0, dtype=np.int32)
        self._slot_of = np.zeros(0, dtype=np.int64)
        self._present = np.zeros(0, dtype=bool)
        self._size = 0
        self._exact_max_rows = exact_max_rows
        self._graph: Index | None = None
        self._merged: CodeGroup | None = None  # every group's codes in one matrix (see _scan)
        self._unsaved = 0  # graph nodes added or dropped since it was built, adopted or saved
        self._expansion: int | None = None  # the graph's search breadth; None: usearch's (64)

    @property
    def size(self) -> int:
        return self._size

    def has(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        inside = rows < self._size
        out = np.zeros(len(rows), dtype=bool)
        out[inside] = self._present[rows[inside]]
        return out

    def put(
        self,
        rows: npt.NDArray[np.int64],
        vectors: npt.NDArray[np.float32],
        groups: Sequence[str],
        *,
        bulk: bool = False,
    ) -> None:
        """Set the vectors of ``rows``, each in its group (a row keeps the group it first had).

        ``bulk``: part of a large load; a graph is not started here but by ``settle_graph``.
        """
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
            self._unsaved += len(rows)
        elif self.wants_graph and not bulk:
            self._build_graph()

    @property
    def wants_graph(self) -> bool:
        """Whether the index is past the size where searches go through a graph."""
        return self._size > self._exact_max_rows

    @property
    def has_graph(self) -> bool:
        return self._graph is not None

    @property
    def graph_bytes(self) -> int:
        """The graph's own bytes as usearch counts them (its copy of the codes, and its links); 0
        without a graph."""
        return 0 if self._graph is None else int(self._graph.memory_usage)

    @property
    def search_expansion(self) -> int | None:
        """The candidates a graph search keeps as it walks (usearch's ``expansion_search``; None: 64)."""
        return self._expansion

    @search_expansion.setter
    def search_expansion(self, value: int | None) -> None:
        self._expansion = value
        if self._graph is not None:
            self._graph.expansion_search = value or DEFAULT_EXPANSION_SEARCH  # type: ignore[misc]

    @property
    def unsaved(self) -> int:
        """Graph nodes added or dropped since the graph was built (all of them), adopted or saved."""
        return self._unsaved

    def rows_with_vectors(self) -> npt.NDArray[np.int64]:
        return np.flatnonzero(self._present[: self._size]).astype(np.int64)

    def fingerprints_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """The fingerprint of each row's codes (rows must hold vectors)."""
        out = np.empty(len(rows), dtype=np.uint64)
        for start in range(0, len(rows), _FINGERPRINT_CHUNK_ROWS):
            chunk = rows[start : start + _FINGERPRINT_CHUNK_ROWS]
            out[start : start + len(chunk)] = fingerprints(self._codes_of(chunk))
        return out

    def save_graph(self, path: Path) -> npt.NDArray[np.int64]:
        """Write the graph to ``path``; the rows it holds (its labels), ascending."""
        if self._graph is None:
            raise ValueError("no graph to save")
        self._graph.save(str(path))
        self._unsaved = 0
        return self.rows_with_vectors()

    def settle_graph(self, saved: SavedGraph | None) -> str:
        """End a bulk load: its groups' spare rows given back, and the index given the graph it
        needs — a saved one adopted when it fits, else one built. Says what was done, for the log."""
        for group in self._groups:
            group.trim()
        if self._graph is not None or not self.wants_graph:
            return "graph already built" if self._graph is not None else "no graph needed"
        if saved is not None:
            adopted = self._adopt_graph(saved)
            if adopted is not None:
                return adopted
        self._build_graph()
        return f"graph built over {self._unsaved:,} rows"  # every node is new

    def _adopt_graph(self, saved: SavedGraph) -> str | None:
        try:
            graph = Index.restore(str(saved.path))
        except Exception as exc:  # any unreadable file: build instead
            logger.warning("saved vector graph %s unreadable (%s): building a new one", saved.path, exc)
            return None
        labels, rows = saved.labels, saved.rows
        if graph is None or graph.ndim != self.dim or len(graph) != len(labels):
            logger.warning("saved vector graph %s does not fit this index: building a new one", saved.path)
            return None
        known = (rows >= 0) & (rows < self._size)
        known[known] = self._present[rows[known]]
        _, first = np.unique(np.where(known, rows, -1), return_index=True)
        known[np.setdiff1d(np.arange(len(rows)), first)] = False  # a row named twice: its first node
        fits = np.zeros(len(rows), dtype=bool)
        fits[known] = self.fingerprints_of(rows[known]) == saved.fingerprints[known]
        stale = len(rows) - int(fits.sum())
        if stale > _STALE_MAX_SHARE * len(rows):
            logger.info("saved vector graph: %d of %d nodes stale, building a new one", stale, len(rows))
            return None
        kept_labels, kept_rows = labels[fits], rows[fits]
        in_graph = np.zeros(self._size, dtype=bool)
        in_graph[kept_rows] = True
        missing = np.flatnonzero(self._present[: self._size] & ~in_graph).astype(np.int64)
        try:
            if stale:
                graph.remove(labels[~fits])
            # Labels become the rows now holding them, in two steps: old labels and rows overlap.
            graph.rename(kept_labels, kept_labels + _RENAMED)
            graph.rename(kept_labels + _RENAMED, kept_rows.astype(np.uint64))
            if len(missing):
                graph.add(missing.astype(np.uint64), self._codes_of(missing))
        except Exception as exc:  # a graph that will not take the changes: build instead
            logger.warning("saved vector graph %s not adopted (%s): building a new one", saved.path, exc)
            return None
        self._graph = graph
        self.search_expansion = self._expansion
        self._unsaved = stale + len(missing)
        return f"saved graph adopted: {len(kept_rows):,} rows kept, {stale:,} dropped, {len(missing):,} added"

    def _scan_max_rows(self, count: int) -> int:
        """The most rows of narrowed groups scanned rather than searched through the graph, for
        ``count`` neighbours.

        A scan costs in proportion to the S rows it reads; the graph, in proportion to the
        neighbours it must fetch to find ``count`` inside groups holding a share S/rows of the
        index, about count·rows/S with a margin. The two costs meet where S² is proportional to
        count·rows: ``_SCAN_OR_GRAPH`` is the graph's cost per neighbour over the scan's per row,
        margin included (tools/bench_recall.py measures both).
        """
        return max(self._exact_max_rows, int(math.sqrt(_SCAN_OR_GRAPH * count * self._size)))

    def _group_id(self, group: str) -> int:
        group_id = self._group_ids.get(group)
        if group_id is None:
            group_id = self._group_ids[group] = len(self._groups)
            self._groups.append(CodeGroup(self.dim))
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
        self.search_expansion = self._expansion
        self._unsaved = len(graph)

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
        groups: Sequence[CodeGroup],
        allowed: npt.NDArray[np.bool_] | None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Exact search of whole groups, in place, keeping only allowed rows (``allowed`` covers
        every row of the index)."""
        found_rows: list[npt.NDArray[np.int64]] = []
        found_cosines: list[npt.NDArray[np.float32]] = []
        # (Not while a bulk load waits for its graph: every group merged would be a copy of all.)
        if len(groups) > _SCAN_CALLS_MAX and not (groups is self._groups and self.wants_graph):
            # Each search call has a fixed cost before it reads a row: many small groups are
            # copied into one matrix and searched at once. All of them (an unnarrowed search of an
            # index too small for a graph, at most exact_max_rows rows) are kept until a put.
            if groups is self._groups and self._merged is not None:
                groups = [self._merged]
            else:
                merged = CodeGroup(self.dim)
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
