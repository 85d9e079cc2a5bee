"""Nearest neighbours over int8-quantised unit vectors, stored by group (namespace).

Rows are stored as int8 codes (:mod:`mnemo.index.codes`), contiguously per group: a search
narrowed to a few groups scans just their codes, exactly and in place, which costs less than
gathering the same rows from all over memory first. Search is exact (SIMD int8 inner products
through usearch's brute-force kernel) while the index is small; once it holds more than
``exact_max_rows`` rows, a search reads the rows of the lists of an inverted file
(:mod:`mnemo.index.inverted`) nearest to the question, exactly, from the same codes. Any other
filter narrows the rows that may be returned: few allowed rows are searched exactly; otherwise
the search reads more lists, by the share of rows the filter forbids, and drops what it forbids.

Training the lists' centroids and sorting every row into them is most of a large index's start
after its words, so a bulk load defers it (``put(..., bulk=True)``) and ``settle_lists`` then
adopts the lists saved by an earlier run (``saved_lists``) when they are given, keeping each
saved row's list where the row still holds the very codes it had (checked by fingerprint) and
sorting in what is new.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo.index.codes import CodeGroup, best, fingerprints, nearest, quantise
from mnemo.index.inverted import (
    PROBES,
    RETRAIN_GROWTH,
    InvertedLists,
    SavedLists,
    adopt,
    list_count,
    train,
    training_sample,
)

EXACT_MAX_ROWS = 20_000
_SCAN_CALLS_MAX = 4  # groups searched one by one; more are merged first
_FINGERPRINT_CHUNK_ROWS = 65_536


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
        self._count = 0  # rows with a vector
        self._exact_max_rows = exact_max_rows
        self._lists: InvertedLists | None = None
        self._merged: CodeGroup | None = None  # every group's codes in one matrix (see _scan)
        self._unsaved = 0  # rows sorted into lists since they were built, adopted or saved
        self.probes = PROBES  # lists read by an unfiltered search

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

        ``bulk``: part of a large load; lists are not made here but by ``settle_lists``.
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
        self._count += len(new)
        lists = self._lists
        if lists is not None and self._count > RETRAIN_GROWTH * lists.trained_rows and not bulk:
            self._build_lists()  # grown far past what the centroids were trained on
        elif lists is not None:
            lists.remove(rows[was_present])  # a changed vector may belong to another list now
            lists.add(rows, nearest(lists.centroids, codes))
            self._unsaved += len(rows)
        elif self.wants_lists and not bulk:
            self._build_lists()

    @property
    def wants_lists(self) -> bool:
        """Whether the index is past the size where searches go through the inverted lists."""
        return self._size > self._exact_max_rows

    @property
    def has_lists(self) -> bool:
        return self._lists is not None

    @property
    def lists_bytes(self) -> int:
        """The inverted lists' own bytes (centroids, each row's list, each list's rows); 0 without."""
        return 0 if self._lists is None else self._lists.nbytes

    @property
    def unsaved(self) -> int:
        """Rows sorted into the lists since they were built (all of them), adopted or saved."""
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

    def saved_lists(self) -> tuple[InvertedLists, npt.NDArray[np.int64]]:
        """What to save: the lists, and the rows they hold, ascending (``mark_saved`` once saved)."""
        if self._lists is None:
            raise ValueError("no lists to save")
        return self._lists, self.rows_with_vectors()

    def mark_saved(self) -> None:
        """The lists were saved whole: no row is unsaved (a save that fails leaves them all so)."""
        self._unsaved = 0

    def saved(self) -> tuple[dict[str, Any], list[str]]:
        """The index as saved (:mod:`mnemo.index.image`): each group's rows and codes end to end
        (codes as a list of parts, not copied), the lists and each row's list; the groups' names."""
        lists = self._lists
        rows = np.concatenate([g.rows[: g.size] for g in self._groups] or [np.zeros(0, np.int64)])
        arrays = {
            "size": np.asarray([self._size], dtype=np.int64),
            "group_sizes": np.asarray([g.size for g in self._groups], dtype=np.int64),
            "rows": rows,
            "codes": [g.codes[: g.size] for g in self._groups] or [np.zeros((0, self.dim), np.int8)],
            "centroids": np.zeros((0, self.dim), np.int8) if lists is None else lists.centroids,
            "trained_rows": np.asarray([0 if lists is None else lists.trained_rows], dtype=np.int64),
        }
        arrays["lists"] = np.zeros(0, np.int32) if lists is None else lists.lists_of(rows)
        return arrays, list(self._group_ids)

    @classmethod
    def restored(cls, arrays: dict[str, Any], groups: list[str], **options: int) -> VectorIndex:
        codes, rows, sizes = arrays["codes"], arrays["rows"].astype(np.int64), arrays["group_sizes"]
        codes = np.concatenate(codes) if isinstance(codes, list) else codes  # as saved, or read back
        index = cls(codes.shape[1], **options)
        index._grow(int(arrays["size"][0]))
        if len(set(groups)) != len(sizes) or not int(sizes.sum()) == len(rows) == len(codes):
            raise ValueError("vector groups' sizes differ from their rows")
        if rows.min(initial=0) < 0:
            raise ValueError("a vector names a row the index does not have")
        index._present[rows] = True  # (a row past the size raises)
        ends = np.cumsum(sizes).tolist()
        for group_id, (start, end) in enumerate(zip([0, *ends[:-1]], ends, strict=True)):
            index._groups.append(CodeGroup.holding(codes[start:end], rows[start:end]))
            index._group_of[rows[start:end]] = group_id
            index._slot_of[rows[start:end]] = np.arange(end - start)
        index._group_ids = {group: group_id for group_id, group in enumerate(groups)}
        if int(index._present.sum()) != len(rows):
            raise ValueError("a row has two vectors")
        index._count = len(rows)
        if len(arrays["centroids"]):
            index._lists = InvertedLists.restored(
                arrays["centroids"].astype(np.int8), int(arrays["trained_rows"][0]), rows, arrays["lists"]
            )
        return index

    def settle_lists(self, saved: SavedLists | None) -> str:
        """End a bulk load: its groups' spare rows given back, and the index given the lists it
        needs — saved ones adopted when they fit, else new ones. Says what was done, for the log."""
        for group in self._groups:
            group.trim()
        if self._lists is not None or not self.wants_lists:
            return "lists already made" if self._lists is not None else "no lists needed"
        if saved is not None:
            adopted = self._adopt_lists(saved)
            if adopted is not None:
                return adopted
        return self._build_lists()

    def _adopt_lists(self, saved: SavedLists) -> str | None:
        adopted = adopt(saved, self.dim, self._present[: self._size], self.fingerprints_of, self._codes_of)
        if adopted is None:
            return None
        self._lists, self._unsaved, outcome = adopted
        return outcome

    def _build_lists(self) -> str:
        rows = self.rows_with_vectors()
        count = list_count(len(rows))
        lists = InvertedLists(train(self._codes_of(training_sample(rows, count)), count), len(rows))
        for group in self._groups:
            lists.add(group.rows[: group.size], nearest(lists.centroids, group.codes[: group.size]))
        self._lists = lists
        self._unsaved = len(rows)
        return f"{lists.count:,} lists made over {len(rows):,} rows"  # every row is new to them

    def _scan_max_rows(self) -> int:
        """The most rows of narrowed groups scanned rather than searched through the lists.

        A scan reads the S rows of the groups, in place. The lists, filtered to a share S/rows of
        the index, read ``probes`` lists over that share, about probes·rows²/(lists·S) rows; the two
        meet where S = rows·√(probes/lists) (at a million rows and 16 probes, ~89,000).
        """
        if self._lists is None:
            return self._exact_max_rows
        return max(self._exact_max_rows, int(self._size * math.sqrt(self.probes / self._lists.count)))

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
        if len(self._groups) <= 1:
            return self._gathered(rows)[1]
        order, codes = self._gathered(np.arange(len(rows)), rows)
        out = np.empty_like(codes)
        out[order] = codes
        return out

    def _gathered(
        self, rows: npt.NDArray[np.int64], of: npt.NDArray[np.int64] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
        """``rows`` in an order of their own, and their codes in that order: sorted by group, one
        gather per group straight into place (a search does not care which order).
        ``of``: the rows whose codes are read, when ``rows`` are other labels for them."""
        of = rows if of is None else of
        out = np.empty((len(rows), self.dim), dtype=np.int8)
        if not len(rows):
            return rows, out
        if len(self._groups) == 1:
            np.take(self._groups[0].codes, self._slot_of[of], axis=0, out=out)
            return rows, out
        group_of = self._group_of[of]
        order = np.argsort(group_of, kind="stable")
        sorted_groups = group_of[order]
        starts = np.flatnonzero(np.diff(sorted_groups, prepend=-2)).tolist()
        slots = self._slot_of[of[order]]
        for start, end in zip(starts, [*starts[1:], len(rows)], strict=True):
            codes = self._groups[int(sorted_groups[start])].codes
            np.take(codes, slots[start:end], axis=0, out=out[start:end])
        return rows[order], out

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
            if sum(g.size for g in chosen) <= self._scan_max_rows():
                return self._scan(code, count, chosen, allowed)
        if self._lists is None:
            return self._scan(code, count, self._groups, allowed)
        usable = None if allowed is None else self._present[: self._size] & allowed[: self._size]
        n_usable = self._count if usable is None else int(usable.sum())  # a sum over every row costs
        if n_usable == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if n_usable <= self._exact_max_rows:  # few allowed rows: all read, exactly
            rows, codes = self._gathered(
                self.rows_with_vectors() if usable is None else np.flatnonzero(usable)
            )
            return self._best(codes, rows, code, count)
        wanted = min(n_usable, count)
        # Read more lists by the share of rows the filter forbids; more again if that was short.
        probes = math.ceil(self.probes * self._count / n_usable)
        while True:
            rows = self._lists.probe(code, probes)
            if usable is not None:
                rows = rows[usable[rows]]
            if len(rows) >= wanted or probes >= self._lists.count:
                rows, codes = self._gathered(rows)
                return self._best(codes, rows, code, count)
            probes *= 4

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
        # (Not while a bulk load waits for its lists: every group merged would be a copy of all.)
        if len(groups) > _SCAN_CALLS_MAX and not (groups is self._groups and self.wants_lists):
            # Each search call has a fixed cost before it reads a row: many small groups are
            # copied into one matrix and searched at once. All of them (an unnarrowed search of an
            # index too small for lists, at most exact_max_rows rows) are kept until a put.
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
        positions, cosines = best(codes, code, count)
        return rows[positions], cosines
