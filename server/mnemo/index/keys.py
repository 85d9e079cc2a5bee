"""Keys by number and numbers by key, in arrays rather than Python strings and dicts.

A million keys as strings in a list, with a dict from key to number, take ~130 MB and scatter a
million small objects through the heap; here they take ~40 MB: the keys' UTF-8 bytes end to end
with each one's end offset, and for lookup each key's 64-bit hash in a sorted array beside its
number (keys added since the last sort wait in a small dict). A hash names a candidate, and the
key's bytes confirm it; the rare key whose hash another key holds is kept in a dict of its own.

Numbers are given in order and never reused; a key added again gets the next number, and lookups
find its newest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

# Keys added since the last sort are folded into the sorted arrays past this many, or a tenth of them.
_MERGE_MIN = 4_096
_MERGE_FRACTION = 0.1


_Item = TypeVar("_Item", bound=np.generic)


def grown(array: npt.NDArray[_Item], used: int, needed: int) -> npt.NDArray[_Item]:
    """``array`` with room for ``needed`` items, its first ``used`` kept (grown by half at least,
    not doubled: at a million rows the spare room is itself megabytes)."""
    if needed <= len(array):
        return array
    larger = np.zeros_like(array, shape=(max(needed, len(array) + len(array) // 2, 1024),))
    larger[:used] = array[:used]
    return larger


class KeyTable:
    """Keys numbered 0, 1, 2… in the order added. Writers lock around it; ``get`` may run beside
    one writer."""

    def __init__(self) -> None:
        self._bytes = np.zeros(0, dtype=np.uint8)
        self._ends = np.zeros(0, dtype=np.int64)  # number → end of its key in _bytes
        self._size = 0
        # Hashes sorted, and the newest number of each, swapped together (see ``get``).
        self._sorted = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))
        self._recent: dict[int, int] = {}  # hash → newest number, added since the last sort
        self._others: dict[str, int] = {}  # keys whose hash another key holds → newest number

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, number: int) -> str:
        if not 0 <= number < self._size:
            raise IndexError(number)
        start = int(self._ends[number - 1]) if number else 0
        return self._bytes[start : int(self._ends[number])].tobytes().decode()

    def __iter__(self) -> Iterator[str]:
        return (self[n] for n in range(self._size))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def append(self, keys: Sequence[str]) -> npt.NDArray[np.int64]:
        """Number ``keys`` from ``len(self)`` on; a key added before is found at its new number.
        Each key's number before this call, or before its earlier place in ``keys``; -1 if none."""
        prior_numbers = np.full(len(keys), -1, dtype=np.int64)
        if not keys:
            return prior_numbers
        encoded = [k.encode() for k in keys]
        start, used = self._size, int(self._ends[self._size - 1]) if self._size else 0
        lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
        ends = used + np.cumsum(lengths)
        self._bytes = grown(self._bytes, used, int(ends[-1]))
        self._bytes[used : int(ends[-1])] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        self._ends = grown(self._ends, start, start + len(keys))
        self._ends[start : start + len(keys)] = ends
        self._size += len(keys)
        hashes = [hash(k) for k in keys]
        held = self._held(np.asarray(hashes, dtype=np.int64))
        for offset, (key, h) in enumerate(zip(keys, hashes, strict=True)):
            prior_numbers[offset] = self._number(key, h, start + offset, int(held[offset]))
        if len(self._recent) > max(_MERGE_MIN, _MERGE_FRACTION * len(self._sorted[0])):
            self._merge()
        return prior_numbers

    def _number(self, key: str, h: int, number: int, held: int) -> int:
        """Give ``key`` (of hash ``h``) ``number``; its number before, or -1 (``held``: the sorted
        arrays' number for ``h``, -1 if none)."""
        if key in self._others:
            prior = self._others[key]
            self._others[key] = number
            return prior
        prior = self._recent.get(h, held)
        if prior >= 0 and self[prior] != key:
            self._others[key] = number  # its hash is another key's
            return -1
        self._recent[h] = number
        return prior

    def _held(self, hashes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The sorted arrays' number for each of ``hashes``, or -1."""
        sorted_hashes, numbers = self._sorted
        if not len(sorted_hashes):
            return np.full(len(hashes), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(sorted_hashes, hashes), len(sorted_hashes) - 1)
        return np.where(sorted_hashes[at] == hashes, numbers[at].astype(np.int64), -1)

    def _merge(self) -> None:
        """Fold the recent dict into the sorted arrays (a recent number replaces an older one)."""
        recent = np.fromiter(self._recent.keys(), dtype=np.int64, count=len(self._recent))
        numbers = np.fromiter(self._recent.values(), dtype=np.int32, count=len(self._recent))
        hashes = np.concatenate([self._sorted[0], recent])
        numbers = np.concatenate([self._sorted[1], numbers])
        order = np.argsort(hashes, kind="stable")  # the recent one of two equal hashes last
        hashes, numbers = hashes[order], numbers[order]
        last = np.ones(len(hashes), dtype=bool)
        last[:-1] = hashes[1:] != hashes[:-1]
        # In this order, for ``get`` without a lock: it reads _recent, then _sorted.
        self._sorted = (hashes[last], numbers[last])
        self._recent = {}

    def get(self, key: str) -> int | None:
        """The newest number of ``key``, or None. Safe beside one thread appending (a key added
        before the call is found): what it reads is replaced whole, in an order it reads back."""
        if self._others:
            number = self._others.get(key)
            if number is not None:
                return number
        h = hash(key)
        number = self._recent.get(h)
        if number is None:
            hashes, numbers = self._sorted
            at = int(hashes.searchsorted(h))  # one key: no arrays made for it
            if at == len(hashes) or hashes[at] != h:
                return None
            number = int(numbers[at])
        return number if self[number] == key else None

    def numbers(self, keys: Sequence[str]) -> npt.NDArray[np.int64]:
        """The newest number of each of ``keys``, -1 for a key never added."""
        hashes = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        found = self._held(hashes)
        for i, key in enumerate(keys):
            number = self._others.get(key) if self._others else None
            if number is None:
                number = self._recent.get(int(hashes[i]), int(found[i]))
                if number >= 0 and self[number] != key:
                    number = -1
            found[i] = number
        return found

    def arrays(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """The keys as saved (:mod:`mnemo.index.image`): their bytes, end to end, and each one's end."""
        used = int(self._ends[self._size - 1]) if self._size else 0
        return self._bytes[:used], self._ends[: self._size]

    @classmethod
    def restored(cls, data: npt.NDArray[np.uint8], ends: npt.NDArray[np.int64]) -> KeyTable:
        """The table ``arrays`` gave, its lookup made anew (hashes are this process's own)."""
        if len(ends) and (np.any(np.diff(ends) < 0) or ends[0] < 0 or int(ends[-1]) != len(data)):
            raise ValueError("key ends out of order")
        table = cls()
        table._bytes, table._ends, table._size = data.astype(np.uint8), ends.astype(np.int64), len(ends)
        keys = list(table)
        hashes = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        repeated = np.zeros(len(keys), dtype=bool)
        if len(keys) > 1:
            same = ordered[1:] == ordered[:-1]
            repeated[1:] |= same
            repeated[:-1] |= same
        single = order[~repeated]
        table._sorted = (ordered[~repeated], single.astype(np.int32))
        # A hash held more than once (a key added again, or two keys sharing it): in number order.
        for number in np.sort(order[repeated]).tolist():
            table._number(keys[number], int(hashes[number]), number, -1)
        if table._recent:
            table._merge()
        return table

    def settle(self) -> None:
        """After a large load: sort what waits in the recent dict and give back spare capacity."""
        if self._recent:
            self._merge()
        used = int(self._ends[self._size - 1]) if self._size else 0
        self._bytes = self._bytes[:used].copy()
        self._ends = self._ends[: self._size].copy()
