"""BM25's term ids, kept by a 64-bit hash of each term: no Python object per term.

A store's vocabulary grows with its identifiers — tickets, hashes, paths, numbers — a few new
terms a memory. As a dict of strings it held a string, an int and a dict entry per term, ~130
bytes; here a term is its hash in a sorted array beside its id (12 bytes), plus a small dict of
the terms added since the arrays were last merged. The hash is Python's own (SipHash, salted per
process): a saved index (:mod:`mnemo.index.image`) is read back only by a process salted
alike. Two terms whose hashes collide would share an id, and so their postings (at worst a
candidate proposed for a word it lacks); among two million terms the chance that any two collide
is about one in ten million (n² / 2⁶⁵).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_MERGE_MIN = 4_096
_MERGE_FRACTION = 0.25


class Vocabulary:
    """Term → id (0, 1, 2, … in the order terms were first seen). Not thread-safe: the index
    locks around it."""

    def __init__(self) -> None:
        self._hashes = np.zeros(0, dtype=np.int64)  # sorted
        self._ids = np.zeros(0, dtype=np.int32)  # the id of each of _hashes
        self._recent: dict[int, int] = {}  # hash → id, added since the last merge
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def get(self, term: str) -> int | None:
        """The id of ``term``, or None when it was never added."""
        key = hash(term)
        found = self._recent.get(key)
        if found is not None:
            return found
        hashes = self._hashes
        at = hashes.searchsorted(key)  # the method: half the cost of np.searchsorted on one key
        if at < len(hashes) and hashes[at] == key:
            return int(self._ids[at])
        return None

    def id_of(self, term: str) -> int:
        """The id of ``term``, given the next one if it is new."""
        found = self.get(term)
        if found is None:
            found = self._add(hash(term))
            self._merge_if_due()
        return found

    def ids_of(self, terms: Sequence[str]) -> npt.NDArray[np.int64]:
        """The id of each of ``terms`` (new ones added, in order of first appearance): a page of
        documents at once."""
        keys = np.fromiter((hash(t) for t in terms), dtype=np.int64, count=len(terms))
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        ids = np.full(len(unique), -1, dtype=np.int64)
        if len(self._hashes):
            at = np.minimum(np.searchsorted(self._hashes, unique), len(self._hashes) - 1)
            known = self._hashes[at] == unique
            ids[known] = self._ids[at[known]]
        missing = np.flatnonzero(ids < 0)
        for i in missing[np.argsort(first[missing], kind="stable")].tolist():
            key = int(unique[i])
            found = self._recent.get(key)
            ids[i] = found if found is not None else self._add(key)
        self._merge_if_due()
        out: npt.NDArray[np.int64] = ids[inverse.reshape(-1)]
        return out

    def compact(self) -> None:
        """Fold the recently added terms into the arrays (after a bulk load)."""
        if not self._recent:
            return
        hashes = np.concatenate([self._hashes, np.fromiter(self._recent.keys(), dtype=np.int64)])
        ids = np.concatenate([self._ids, np.fromiter(self._recent.values(), dtype=np.int32)])
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._ids = hashes[order], ids[order]
        self._recent = {}

    def arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """The hashes, sorted, and their ids, as saved (every term folded in first)."""
        self.compact()
        return self._hashes, self._ids

    @classmethod
    def restored(cls, hashes: npt.NDArray[np.int64], ids: npt.NDArray[np.int32]) -> Vocabulary:
        if len(hashes) != len(ids) or np.any(hashes[1:] <= hashes[:-1]):
            raise ValueError("vocabulary hashes out of order")
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= len(ids)):
            raise ValueError("vocabulary ids out of range")
        vocabulary = cls()
        vocabulary._hashes, vocabulary._ids = hashes.astype(np.int64), ids.astype(np.int32)
        vocabulary._size = len(ids)
        return vocabulary

    def _add(self, key: int) -> int:
        term_id = self._recent[key] = self._size
        self._size += 1
        return term_id

    def _merge_if_due(self) -> None:
        if len(self._recent) > max(_MERGE_MIN, _MERGE_FRACTION * len(self._hashes)):
            self.compact()
