"""A memory's whole story, for the memory browser and the export: every version, what closed it,
and the current memories listed by what a person filters on.

``memories`` keeps a memory's newest version only once its parts merge (its sorting key is the id
alone); every version written since migration 13 is copied into ``memory_history`` by a view. The
versions are read from both, so those written before the migration and not merged yet are found
too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemo.clock import as_stored
from mnemo.memories import Memory
from mnemo.store.connection import Tables
from mnemo.store.memories import MEMORY_COLUMNS, memory_from_row


@dataclass(frozen=True, slots=True)
class StoredVersion:
    """One version of a memory as stored: the memory, the writer's batch that wrote it ('' when a
    person, a tool or the review queue did), and when the store committed it."""

    memory: Memory
    batch: str
    committed_at: datetime


@dataclass(frozen=True, slots=True)
class Listing:
    """Current memories by status, type, namespace and the time they were last changed (``since``
    ≤ updated_at < ``until``): the review queue, and the memory browser with no question."""

    statuses: Sequence[str]
    types: Sequence[str] | None = None
    namespaces: Sequence[str] | None = None
    since: datetime | None = None
    until: datetime | None = None


class HistoryTables(Tables):
    def memory_versions(self, memory_ids: Sequence[str]) -> list[StoredVersion]:
        """Every stored version of each of ``memory_ids``, by id then version."""
        if not memory_ids:
            return []
        columns = ", ".join([*MEMORY_COLUMNS, "distill_batch", "committed_at"])
        where, parameters = self._db.scoped("id IN {ids:Array(String)}", {"ids": list(memory_ids)})
        sql = (
            f"SELECT {columns} FROM (SELECT {columns} FROM memory_history WHERE {where} "
            f"UNION ALL SELECT {columns} FROM memories WHERE {where}) "
            "ORDER BY id, version, committed_at LIMIT 1 BY id, version"
        )
        with self._db.translated("reading memory versions"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        return [StoredVersion(memory_from_row(r[:-2]), str(r[-2]), as_stored(r[-1])) for r in rows]

    def closed_by(self, memory_id: str) -> list[Memory]:
        """The memories whose current version says ``memory_id`` closed them."""
        rows = self._db.current_rows(
            "memories", MEMORY_COLUMNS, "closed_by = {id:String}", {"id": memory_id}, "id", 1_000
        )
        return [memory_from_row(row) for row in rows]

    def memory_namespaces(self) -> dict[str, int]:
        """How many memories (current versions, any status) each namespace holds."""
        return self._db.by_namespace("memories")

    def list_memories(self, listing: Listing, limit: int) -> list[Memory]:
        """Current memories that pass ``listing``'s filters, most recently changed first."""
        where = ["status IN {statuses:Array(String)}"]
        parameters: dict[str, Any] = {"statuses": list(listing.statuses)}
        if listing.types:
            where.append("type IN {types:Array(String)}")
            parameters["types"] = list(listing.types)
        if listing.namespaces:
            where.append("namespace IN {namespaces:Array(String)}")
            parameters["namespaces"] = list(listing.namespaces)
        if listing.since is not None:
            where.append("updated_at >= {since:DateTime64(3, 'UTC')}")
            parameters["since"] = as_stored(listing.since)
        if listing.until is not None:
            where.append("updated_at < {until:DateTime64(3, 'UTC')}")
            parameters["until"] = as_stored(listing.until)
        rows = self._db.current_rows(
            "memories", MEMORY_COLUMNS, " AND ".join(where), parameters, "updated_at DESC, id", limit
        )
        return [memory_from_row(row) for row in rows]
