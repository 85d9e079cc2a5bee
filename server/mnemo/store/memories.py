"""The memories table: every version of every memory, the newest being the memory as it stands."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mnemo.clock import as_stored
from mnemo.memories import CodeAnchor, Memory
from mnemo.store.connection import Tables

# A memory version's place in the store's commit order: (commit time in the store's microseconds,
# id, version).
Commit = tuple[int, str, int]
_SEQUENCE = "toUnixTimestamp64Micro(committed_at)"
# Memory model field → column, where the names differ (SQL keywords and reserved-looking names).
_MEMORY_RENAMES = {"when": "when_text", "where": "where_text"}
MEMORY_FIELDS = tuple(Memory.model_fields)
MEMORY_COLUMNS = tuple(_MEMORY_RENAMES.get(f, f) for f in MEMORY_FIELDS)
_ENTITIES, _TYPE, _STATUS, _ORIGIN, _CODE = (
    MEMORY_FIELDS.index(f) for f in ("entities", "type", "status", "origin", "code")
)


def memory_from_row(row: Sequence[Any]) -> Memory:
    values = dict(zip(MEMORY_FIELDS, row, strict=True))
    # Named tuples come back as dicts from some backends and as tuples from others; dicts let
    # pydantic validate the EntityRefs in the same pass as the memory, not one by one after it.
    values["entities"] = [
        e if isinstance(e, dict) else {"name": e[0], "role": e[1]} for e in values["entities"]
    ]
    values["code"] = CodeAnchor.model_validate_json(values["code"]) if values["code"] else None
    return Memory.model_validate(values)


class MemoryTables(Tables):
    def put_memory(self, memory: Memory) -> None:
        """Insert a version of a memory (the first, or the next one: callers raise ``version``)."""
        self.put_memories([memory])

    def put_memories(self, memories: Sequence[Memory], *, batch: str = "") -> None:
        """Insert memory versions in one insert (bulk loads, benchmarks, the writer's batches:
        ``batch`` marks every row with the distillation batch that wrote it)."""
        columns, rows = self._rows(memories, batch)
        what = f"memory {memories[0].id}" if len(memories) == 1 else f"{len(memories)} memories"
        with self._db.translated(f"writing {what}"):
            self._db.insert("memories", rows, column_names=columns)

    def put_memories_fenced(
        self, memories: Sequence[Memory], *, batch: str, lease: tuple[str, str, int]
    ) -> bool:
        """The writer's commit on a shared server, fenced by the store: the rows are staged, then
        copied into memories by one INSERT … SELECT that copies them only if the lease ``lease``
        (name, holder, token) is still that holder's and live by the store's clock when the copy
        runs. True when they were copied; False when the lease had moved on (nothing is written:
        a writer paused between its check and its commit changes nothing).

        Each commit stages under its own key, so a later commit of the same batch (the new holder
        redoing it) copies its own rows only, never what a fenced-out writer staged; and it asks
        whether rows of its own copy landed (committed since it staged), not rows of the batch
        another writer committed before it."""
        name, holder, token = lease
        attempt = f"{batch}@{holder}#{token}:{os.urandom(6).hex()}"
        columns, rows = self._rows(memories, attempt)
        listed = ", ".join(columns)
        chosen = ", ".join("{batch:String}" if c == "distill_batch" else c for c in columns)
        copy = (
            f"INSERT INTO memories ({listed}) SELECT {chosen} FROM memories_staged "
            # Only the rows this writer staged (its own stamp): none another member added under its key.
            "WHERE distill_batch = {attempt:String} AND written_by = currentUser() "
            "AND (SELECT holder = {holder:String} "
            "AND token = {token:UInt64} AND expires_at > now64(3) FROM writer_lease FINAL "
            "WHERE name = {name:String} ORDER BY version DESC LIMIT 1)"
        )
        landed = (
            "SELECT count() FROM memories WHERE distill_batch = {batch:String} AND committed_at >= "
            "(SELECT min(committed_at) FROM memories_staged WHERE distill_batch = {attempt:String})"
        )
        parameters = {"batch": batch, "attempt": attempt, "holder": holder, "token": token, "name": name}
        with self._db.translated(f"committing {len(rows)} memories of batch {batch}"):
            self._db.insert("memories_staged", rows, column_names=columns)
            self._db.command(copy, parameters)
            copied = self._db.command(landed, parameters)
        return int(copied) > 0

    def _rows(self, memories: Sequence[Memory], batch: str) -> tuple[list[str], list[list[Any]]]:
        extra = {
            "injections": 0,
            "uses": 0,
            "non_uses": 0,
            "is_suppressed": False,
            # Unused since migration 2 (vectors live in `embeddings`, per model).
            "embedding": b"",
            "distill_batch": batch,
        }
        self._db.check_writable([m.namespace for m in memories], "a memory")
        rows = []
        for memory in memories:
            row = [getattr(memory, f) for f in MEMORY_FIELDS]
            row[_ENTITIES] = [(e.name, e.role) for e in memory.entities]
            row[_TYPE] = memory.type.value
            row[_STATUS] = memory.status.value
            row[_ORIGIN] = memory.origin.value
            row[_CODE] = memory.code.model_dump_json() if memory.code is not None else ""
            rows.append(row + list(extra.values()))
        return [*MEMORY_COLUMNS, *extra], rows

    def _memories(
        self, where: str, parameters: dict[str, Any], limit: int, order: str = "updated_at DESC, id"
    ) -> list[Memory]:
        """Current memories matching ``where``, most recently updated first unless ``order`` says."""
        rows = self._db.current_rows("memories", MEMORY_COLUMNS, where, parameters, order, limit)
        return [memory_from_row(row) for row in rows]

    def get_memory(self, memory_id: str) -> Memory | None:
        found = self._memories("id = {id:String}", {"id": memory_id}, 1)
        return found[0] if found else None

    def active_memories(self, namespaces: Sequence[str], limit: int) -> list[Memory]:
        """Active memories in ``namespaces``, most recently updated first."""
        where = "namespace IN {ns:Array(String)} AND status = 'active'"
        return self._memories(where, {"ns": list(namespaces)}, limit)

    def memories_citing(self, namespace: str, episode_ids: Sequence[str], limit: int = 200) -> list[Memory]:
        """Memories of ``namespace`` in any status whose sources include one of ``episode_ids``."""
        where = "namespace = {ns:String} AND hasAny(sources, {ids:Array(String)})"
        return (
            self._memories(where, {"ns": namespace, "ids": list(episode_ids)}, limit) if episode_ids else []
        )

    def current_versions(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """The newest stored version of each of ``memory_ids`` (absent: none stored)."""
        with self._db.translated("reading memory versions"):
            return self._db.newest_versions(memory_ids)

    def stale_candidates(self, updated_before: datetime, limit: int) -> list[Memory]:
        """Candidates whose current version is older than ``updated_before``."""
        where = "status = 'candidate' AND updated_at < {before:DateTime64(3, 'UTC')}"
        return self._memories(where, {"before": as_stored(updated_before)}, limit)

    def memory_changes(self, after: Commit, limit: int) -> list[tuple[Commit, Memory]]:
        """Memory versions committed after ``after`` (every version, not only the newest), in
        commit order, at most ``limit``: what other daemons wrote, for an index to follow."""
        where, parameters = self._db.scoped(
            "(seq, id, version) > ({t:Int64}, {id:String}, {v:UInt64})",
            {"t": after[0], "id": after[1], "v": after[2]},
        )
        sql = (
            f"SELECT {', '.join(MEMORY_COLUMNS)}, {_SEQUENCE} AS seq FROM memories "
            f"WHERE {where} ORDER BY seq, id, version LIMIT {limit:d}"
        )
        with self._db.translated("reading memory changes"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        return [((int(r[-1]), str(r[0]), int(r[1])), memory_from_row(r[:-1])) for r in rows]

    def commits_after(self, sequence: int) -> tuple[int, int]:
        """Memory versions committed after ``sequence``: how many, and the newest one's sequence
        (or ``sequence``), in the store's microseconds."""
        where, parameters = self._db.scoped(
            "committed_at > fromUnixTimestamp64Micro({t:Int64}, 'UTC')", {"t": sequence}
        )
        sql = f"SELECT count(), max({_SEQUENCE}) FROM memories WHERE {where}"
        with self._db.translated("reading the newest memory commit"):
            count, newest = self._db.query(sql, parameters=parameters).result_rows[0]
        return int(count), max(int(newest), sequence) if count else sequence

    def memory_count(self) -> int:
        """How many memories there are (each once, whatever its versions)."""
        where, parameters = self._db.scoped("1", {})
        with self._db.translated("counting memories"):
            # No FINAL: ids, not versions. DISTINCT takes half the time uniqExact did at 100k
            # memories (docs/benchmarks/surfaces.md, "Reading a memory's newest version").
            sql = f"SELECT count() FROM (SELECT DISTINCT id FROM memories WHERE {where})"
            return int(self._db.command(sql, parameters))

    def store_clock(self) -> int:
        """The store's clock, in microseconds since the epoch."""
        with self._db.translated("reading the store's clock"):
            return int(self._db.command("SELECT toUnixTimestamp64Micro(now64(6))"))

    def memories_page(self, after: str, limit: int, namespace: str | None = None) -> list[Memory]:
        """Current memories with ids after ``after`` (in ``namespace`` if given), in id order:
        keyset pages for the index build and the export.

        Each page is its own short query, so the store is free between pages for the writes that
        arrive while the daemon builds its index.
        """
        if namespace is None:
            return self._memories("id > {after:String}", {"after": after}, limit, "id")
        where = "id > {after:String} AND namespace = {ns:String}"
        return self._memories(where, {"after": after, "ns": namespace}, limit, "id")
