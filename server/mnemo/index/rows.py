"""A search index's rows: who each one is, and a roaring bitmap per value it can be filtered by.

Rows are appended, never moved: a document put again under its key gets a new row and its old one
retires (leaves the live bitmap); a status change moves a row between status bitmaps in place.
Filters are bitmap unions and intersections; the boolean mask of a filter (what the BM25 and
vector searches take) is cached until the next write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from mnemo.index.documents import Document, SearchQuery
from mnemo.index.keys import KeyTable, grown

# Filters' masks kept, at most this many and this many bytes in all (a mask is a byte a row: at a
# million rows, 8 filters — a hook's session asks with one, so 8 serve as many sessions at once —
# where 32 held 32 MB: docs/benchmarks/recall.md, "Memory at a million").
_MAX_CACHED_MASKS = 32
_MAX_CACHED_MASK_BYTES = 8 << 20


def _union(maps: Iterable[BitMap]) -> BitMap:
    out = BitMap()
    for m in maps:
        out |= m
    return out


def _code(value: str, values: list[str], codes: dict[str, int]) -> int:
    """The number of ``value`` in ``values`` (a status or namespace), added if new."""
    code = codes.get(value)
    if code is None:
        code = codes[value] = len(values)
        values.append(value)
    return code


class RowTable:
    """The rows of one search index. Attributes are read by the index and its ranking; they are
    written only through the methods here. Not thread-safe: the index locks around it."""

    def __init__(self) -> None:
        self.keys = KeyTable()  # row → key, key → its newest row
        # A row's owner is its key's first _owner_length characters (a memory's id is its key;
        # a passage's key is its episode's id, "#", its part), or one of _other_owners.
        self._owner_length = np.zeros(0, dtype=np.uint16)
        self._other_owners: dict[int, str] = {}
        self.times_ms = np.zeros(0, dtype=np.int64)
        self.live = BitMap()
        # Statuses and namespaces by number: a row holds the number, not a string of its own.
        self._status_codes = np.zeros(0, dtype=np.uint8)
        self._namespace_codes = np.zeros(0, dtype=np.int32)
        self._statuses: list[str] = []
        self._namespaces: list[str] = []
        self._status_code: dict[str, int] = {}
        self._namespace_code: dict[str, int] = {}
        self.by_entity: dict[str, BitMap] = {}
        self.by_filled: dict[str, BitMap] = {}
        # Where a row sits in a conversation (session, turn), and the rows at each place.
        self.place_of: dict[int, tuple[str, int]] = {}
        self.rows_at: dict[tuple[str, int], list[int]] = {}
        self._by_namespace: dict[str, BitMap] = {}
        self._by_kind: dict[str, BitMap] = {}
        self._by_status: dict[str, BitMap] = {}
        self._by_who: dict[str, BitMap] = {}
        self._by_session: dict[str, BitMap] = {}
        self._by_entity_role: dict[tuple[str, str], BitMap] = {}
        self._generation = 0  # bumped by every write; cached masks of older generations are stale
        self._masks: dict[object, tuple[int, BitMap, npt.NDArray[np.bool_]]] = {}

    def __len__(self) -> int:
        return len(self.live)

    def append(self, documents: Sequence[Document]) -> npt.NDArray[np.int64]:
        """Give each document the next row (from ``len(self.keys)`` on); a key already present
        retires its old row. The rows retired."""
        self._generation += 1
        start = len(self.keys)
        keys = [d.key for d in documents]
        old = self.keys.append(keys)
        retired = old[old >= 0]
        self.live -= BitMap(retired.tolist())
        newest = {key: offset for offset, key in enumerate(keys)}  # a key twice: its last row is live
        self._grow(start, start + len(documents))
        for offset, document in enumerate(documents):
            row = start + offset
            if document.key.startswith(document.owner) and len(document.owner) < 1 << 16:
                self._owner_length[row] = len(document.owner)
            else:
                self._other_owners[row] = document.owner
            self._status_codes[row] = _code(document.status, self._statuses, self._status_code)
            self._namespace_codes[row] = _code(document.namespace, self._namespaces, self._namespace_code)
            if document.session and document.turn is not None:
                place = (document.session, document.turn)
                self.place_of[row] = place
                self.rows_at.setdefault(place, []).append(row)
            self.times_ms[row] = int(document.time.timestamp() * 1000)
            if newest[document.key] == offset:
                self.live.add(row)
            self._by_namespace.setdefault(document.namespace, BitMap()).add(row)
            self._by_kind.setdefault(document.kind, BitMap()).add(row)
            self._by_status.setdefault(document.status, BitMap()).add(row)
            if document.who:
                self._by_who.setdefault(document.who, BitMap()).add(row)
            if document.session:
                self._by_session.setdefault(document.session, BitMap()).add(row)
            for entity, role in document.entities:
                self.by_entity.setdefault(entity, BitMap()).add(row)
                self._by_entity_role.setdefault((entity, role), BitMap()).add(row)
            for w in document.filled:
                self.by_filled.setdefault(w, BitMap()).add(row)
        return retired

    def _grow(self, used: int, needed: int) -> None:
        """Room for ``needed`` rows in the per-row arrays."""
        self.times_ms = grown(self.times_ms, used, needed)
        self._owner_length = grown(self._owner_length, used, needed)
        self._status_codes = grown(self._status_codes, used, needed)
        self._namespace_codes = grown(self._namespace_codes, used, needed)

    def status(self, row: int) -> str:
        return self._statuses[int(self._status_codes[row])]

    def has_status(self, rows: npt.NDArray[np.int64], status: str) -> npt.NDArray[np.bool_]:
        """Whether each of ``rows`` has ``status``."""
        code = self._status_code.get(status)
        if code is None:
            return np.zeros(len(rows), dtype=bool)
        found: npt.NDArray[np.bool_] = self._status_codes[rows] == code
        return found

    def namespace(self, row: int) -> str:
        return self._namespaces[int(self._namespace_codes[row])]

    def owner(self, row: int) -> str:
        other = self._other_owners.get(row) if self._other_owners else None
        return other if other is not None else self.keys[row][: self._owner_length[row]]

    def row_of(self, key: str) -> int | None:
        """The row of a key's newest version, or None."""
        return self.keys.get(key)

    def settle(self) -> None:
        """After a large load: the keys sorted for lookup, spare capacity given back."""
        self.keys.settle()

    def set_status(self, key: str, status: str) -> int | None:
        """Move a document's row to another status in place; the row, or None when the key is
        unknown."""
        row = self.keys.get(key)
        if row is None:
            return None
        self._generation += 1
        self._by_status[self.status(row)].discard(row)
        self._by_status.setdefault(status, BitMap()).add(row)
        self._status_codes[row] = _code(status, self._statuses, self._status_code)
        return row

    def saved(self) -> tuple[dict[str, npt.NDArray[Any]], dict[str, dict[Any, BitMap]], dict[str, Any]]:
        """The table as saved (:mod:`mnemo.index.image`): arrays, bitmaps by family, and the rest
        (JSON: strings by row, the statuses' and namespaces' numbers)."""
        size = len(self.keys)
        data, ends = self.keys.arrays()
        places = sorted(self.place_of.items())
        arrays: dict[str, npt.NDArray[Any]] = {
            "key_bytes": data,
            "key_ends": ends,
            "owner_length": self._owner_length[:size],
            "times_ms": self.times_ms[:size],
            "status_codes": self._status_codes[:size],
            "namespace_codes": self._namespace_codes[:size],
            "place_rows": np.asarray([row for row, _ in places], dtype=np.int64),
            "place_turns": np.asarray([turn for _, (_, turn) in places], dtype=np.int64),
        }
        bitmaps: dict[str, dict[Any, BitMap]] = {
            "live": {"": self.live},
            "entity": self.by_entity,
            "filled": self.by_filled,
            "namespace": self._by_namespace,
            "kind": self._by_kind,
            "status": self._by_status,
            "who": self._by_who,
            "session": self._by_session,
            "entity_role": self._by_entity_role,
        }
        rest: dict[str, Any] = {
            "statuses": self._statuses,
            "namespaces": self._namespaces,
            "other_owners": [[row, owner] for row, owner in sorted(self._other_owners.items())],
            "place_sessions": [session for _, (session, _) in places],
        }
        return arrays, bitmaps, rest

    @classmethod
    def restored(
        cls, arrays: dict[str, npt.NDArray[Any]], bitmaps: dict[str, dict[Any, BitMap]], rest: dict[str, Any]
    ) -> RowTable:
        """The table ``saved`` gave (checked for size; bitmaps are trusted as saved)."""
        table = cls()
        table.keys = KeyTable.restored(arrays["key_bytes"], arrays["key_ends"])
        size = len(table.keys)
        per_row = ("owner_length", "times_ms", "status_codes", "namespace_codes")
        if any(len(arrays[name]) != size for name in per_row):
            raise ValueError("rows' arrays of different lengths")
        table._owner_length = arrays["owner_length"].astype(np.uint16)
        table.times_ms = arrays["times_ms"].astype(np.int64)
        table._status_codes = arrays["status_codes"].astype(np.uint8)
        table._namespace_codes = arrays["namespace_codes"].astype(np.int32)
        table._statuses = [str(s) for s in rest["statuses"]]
        table._namespaces = [str(n) for n in rest["namespaces"]]
        if size and (
            int(table._status_codes.max()) >= len(table._statuses)
            or int(table._namespace_codes.max()) >= len(table._namespaces)
            or int(table._namespace_codes.min()) < 0
        ):
            raise ValueError("a row's status or namespace number is unknown")
        table._status_code = {s: i for i, s in enumerate(table._statuses)}
        table._namespace_code = {n: i for i, n in enumerate(table._namespaces)}
        table._other_owners = {int(row): str(owner) for row, owner in rest["other_owners"]}
        sessions = rest["place_sessions"]
        if len(sessions) != len(arrays["place_rows"]) or len(sessions) != len(arrays["place_turns"]):
            raise ValueError("rows' places of different lengths")
        for row, session, turn in zip(
            arrays["place_rows"].tolist(), sessions, arrays["place_turns"].tolist(), strict=True
        ):
            table.place_of[row] = (str(session), turn)
            table.rows_at.setdefault((str(session), turn), []).append(row)
        table.live = bitmaps["live"].get("", BitMap())
        if table.live and table.live.max() >= size:
            raise ValueError("a live row the table does not have")
        table.by_entity, table.by_filled = bitmaps["entity"], bitmaps["filled"]
        table._by_namespace, table._by_kind = bitmaps["namespace"], bitmaps["kind"]
        table._by_status, table._by_who, table._by_session = (
            bitmaps["status"],
            bitmaps["who"],
            bitmaps["session"],
        )
        table._by_entity_role = {tuple(k): m for k, m in bitmaps["entity_role"].items()}
        return table

    def live_keys(self) -> list[str]:
        """Each row's key, or "" for a retired row (its key re-added since under another row)."""
        return [key if row in self.live else "" for row, key in enumerate(self.keys)]

    def _allowed(self, query: SearchQuery) -> BitMap:
        allowed = _union(self._by_status.get(s, BitMap()) for s in query.statuses) & self.live
        if query.namespaces is not None:
            allowed &= _union(self._by_namespace.get(n, BitMap()) for n in query.namespaces)
        if query.kinds is not None:
            allowed &= _union(self._by_kind.get(k, BitMap()) for k in query.kinds)
        if query.sessions is not None:
            allowed &= _union(self._by_session.get(s, BitMap()) for s in query.sessions)
        for session in query.sessions_excluded:
            allowed -= self._by_session.get(session, BitMap())
        return allowed

    def allowed(self, query: SearchQuery) -> tuple[BitMap, npt.NDArray[np.bool_]]:
        """The rows a query may return, as a bitmap and a boolean mask, cached per filter.

        A mask is a pass over every row; hooks ask with the same filters again and again, so
        masks are kept until the next write changes the rows.
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
        mask = np.zeros(len(self.keys), dtype=bool)
        mask[np.asarray(allowed.to_array(), dtype=np.int64)] = True
        if len(self._masks) >= min(_MAX_CACHED_MASKS, max(1, _MAX_CACHED_MASK_BYTES // max(1, mask.nbytes))):
            self._masks.clear()
        self._masks[key] = (self._generation, allowed, mask)
        return allowed, mask

    def naming(self, entities: Iterable[str]) -> BitMap:
        """Rows that name any of ``entities``."""
        return _union(self.by_entity.get(e, BitMap()) for e in entities)

    def adjacent(self, row: int) -> list[int]:
        """Rows of the turns just before and after this row's turn, in the same session."""
        place = self.place_of.get(row)
        if place is None:
            return []
        session, turn = place
        return self.rows_at.get((session, turn - 1), []) + self.rows_at.get((session, turn + 1), [])

    def neighbours(self, rows: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """The allowed rows adjacent to any of ``rows``."""
        found = [r for row in rows.tolist() for r in self.adjacent(row) if r < len(mask) and mask[r]]
        return np.asarray(found, dtype=np.int64)
