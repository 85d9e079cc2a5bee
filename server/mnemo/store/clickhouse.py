"""ClickHouseStore: episodes, memories and entities over clickhouse-connect.

One class serves both DSNs: ``chdb:///path`` opens the embedded engine in this process,
``http(s)://…`` talks to a server. Methods are synchronous and not meant to be called from two
threads at once; the daemon serialises them.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import clickhouse_connect
import numpy as np
import numpy.typing as npt
from clickhouse_connect.driver.exceptions import ClickHouseError

from mnemo.clock import utc_now
from mnemo.config import redact_dsn
from mnemo.episodes import AppendResult, Episode
from mnemo.errors import StoreError, StoreLockedError
from mnemo.memories import EntityRef, Memory, MemoryStatus
from mnemo.store.migrations import CREATE_VERSION_TABLE, MIGRATIONS, VERSION_TABLE

logger = logging.getLogger(__name__)

EPISODE_COLUMNS = (
    "id", "kind", "text", "who", "role", "namespace", "session", "turn", "time", "received_at",
    "client", "workspace", "cwd", "branch", "host",
)  # fmt: skip
# Memory model field → column, where the names differ (SQL keywords and reserved-looking names).
_MEMORY_RENAMES = {"when": "when_text", "where": "where_text"}
MEMORY_FIELDS = tuple(Memory.model_fields)
MEMORY_COLUMNS = tuple(_MEMORY_RENAMES.get(f, f) for f in MEMORY_FIELDS)
_SEARCH_TEXT_SQL = (
    "concat(content, ' ', what, ' ', who, ' ', when_text, ' ', where_text, ' ', why, ' ', how, ' ', "
    "arrayStringConcat(arrayMap(e -> e.1, entities), ' '))"
)
# Candidate rows read for exact scoring; the in-RAM engine replaces this prefilter later.
MAX_CANDIDATES = 5_000


@dataclass(frozen=True, slots=True)
class StoreCounts:
    schema_version: int
    episodes: int
    memories_by_status: dict[str, int]
    entities: int


def open_store(dsn: str) -> ClickHouseStore:
    """Open (creating when needed) and migrate the store at ``dsn``; raise StoreError if it cannot."""
    shown = redact_dsn(dsn)
    if dsn.startswith("chdb://"):
        path = Path(dsn.removeprefix("chdb://"))
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store directory {path}: {exc.strerror}") from None
        _check_not_locked(path)
    try:
        client = clickhouse_connect.get_client(dsn=dsn)
    except ClickHouseError as exc:
        raise StoreError(f"cannot open the store {shown}: {_first_line(exc)}") from None
    except OSError as exc:
        raise StoreError(f"cannot open the store {shown}: {exc}") from None
    store = ClickHouseStore(client, shown)
    store.migrate()
    return store


def _check_not_locked(path: Path) -> None:
    """Fail clearly when another process holds the embedded engine's directory.

    chDB holds an exclusive flock on ``<path>/status`` while open; asking for it ourselves first
    turns its opaque "Error initializing EmbeddedServer" into a message that names the holder.
    """
    status = path / "status"
    try:
        fd = os.open(status, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = status.read_text(errors="replace").splitlines()
        pid = next((line.split(":", 1)[1].strip() for line in holder if line.startswith("PID:")), "?")
        raise StoreLockedError(
            f"the embedded store {path} is open in another process (pid {pid}); "
            "only one process may open it — is another mnemo daemon or a chDB program running?"
        ) from None
    finally:
        os.close(fd)  # closing drops our probe lock before chDB takes its own


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class ClickHouseStore:
    """Episodes, memories and entities in ClickHouse. Construct with :func:`open_store`."""

    def __init__(self, client: Any, dsn_for_display: str) -> None:
        self._client = client
        self.dsn_for_display = dsn_for_display

    def close(self) -> None:
        self._client.close()

    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        try:
            yield
        except ClickHouseError as exc:
            logger.warning("store error while %s: %s", action, exc)
            raise StoreError(f"the store failed while {action}: {_first_line(exc)}") from None

    # -- schema --------------------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._translated("reading the schema version"):
            return int(self._client.command(f"SELECT max(version) FROM {VERSION_TABLE}") or 0)

    def migrate(self) -> int:
        """Apply the migrations above the recorded version; return the version reached."""
        with self._translated("creating the schema version table"):
            self._client.command(CREATE_VERSION_TABLE)
        current = self.schema_version()
        latest = MIGRATIONS[-1].version
        if current > latest:
            raise StoreError(
                f"the store {self.dsn_for_display} has schema version {current}, newer than this "
                f"mnemo knows ({latest}); upgrade mnemo"
            )
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            with self._translated(f"applying migration {migration.version} ({migration.name})"):
                for statement in migration.statements:
                    self._client.command(statement)
                self._client.insert(
                    VERSION_TABLE,
                    [[migration.version, migration.name, utc_now()]],
                    column_names=["version", "name", "applied_at"],
                )
            logger.info("applied migration %d: %s", migration.version, migration.name)
        return latest

    # -- episodes ------------------------------------------------------------------------------

    def append_episodes(self, episodes: Sequence[Episode]) -> list[AppendResult]:
        """Store the episodes whose ids are not stored yet, in one insert; report which were new."""
        if not episodes:
            return []
        ids = [e.id for e in episodes]
        with self._translated("checking episode ids"):
            existing = {
                row[0]
                for row in self._client.query(
                    "SELECT id FROM episodes WHERE id IN {ids:Array(String)}", parameters={"ids": ids}
                ).result_rows
            }
        results, rows, seen = [], [], set(existing)
        for episode in episodes:
            is_new = episode.id not in seen
            seen.add(episode.id)
            results.append(AppendResult(id=episode.id, is_new=is_new))
            if is_new:
                rows.append([getattr(episode, c) for c in EPISODE_COLUMNS])
        if rows:
            with self._translated(f"inserting {len(rows)} episodes"):
                self._client.insert("episodes", rows, column_names=list(EPISODE_COLUMNS))
        return results

    def _current_rows(
        self,
        table: str,
        columns: Sequence[str],
        where: str,
        parameters: dict[str, Any],
        order: str,
        limit: int,
    ) -> list[Sequence[Any]]:
        """Rows of ``table`` as of now (FINAL folds versions and re-sent duplicates)."""
        sql = f"SELECT {', '.join(columns)} FROM {table} FINAL WHERE {where} ORDER BY {order} LIMIT {limit:d}"
        with self._translated(f"reading {table}"):
            rows: list[Sequence[Any]] = self._client.query(sql, parameters=parameters).result_rows
        return rows

    def _episodes(self, where: str, parameters: dict[str, Any], order: str, limit: int) -> list[Episode]:
        rows = self._current_rows("episodes", EPISODE_COLUMNS, where, parameters, order, limit)
        return [self._episode_from_row(row) for row in rows]

    @staticmethod
    def _episode_from_row(row: Sequence[Any]) -> Episode:
        values = dict(zip(EPISODE_COLUMNS, row, strict=True))
        return Episode.model_validate(values)

    def get_episodes(self, ids: Sequence[str]) -> list[Episode]:
        return self._episodes("id IN {ids:Array(String)}", {"ids": list(ids)}, "time, id", len(ids) or 1)

    def session_episodes(
        self,
        session: str,
        *,
        from_turn: int | None,
        to_turn: int | None,
        namespace: str | None,
        limit: int,
    ) -> list[Episode]:
        where, params = ["session = {session:String}"], {"session": session}
        if from_turn is not None:
            where.append("turn >= {from_turn:UInt32}")
            params["from_turn"] = from_turn  # type: ignore[assignment]
        if to_turn is not None:
            where.append("turn <= {to_turn:UInt32}")
            params["to_turn"] = to_turn  # type: ignore[assignment]
        if namespace is not None:
            where.append("namespace = {namespace:String}")
            params["namespace"] = namespace
        return self._episodes(" AND ".join(where), params, "ifNull(turn, 0), time, id", limit)

    def episode_candidates(
        self, terms: Sequence[str], *, namespace: str | None, session: str | None
    ) -> tuple[list[Episode], int]:
        """Episodes containing any term (substring, case-insensitive), newest first, and the scope size."""
        where, params = ["1"], {}
        if namespace is not None:
            where.append("namespace = {namespace:String}")
            params["namespace"] = namespace
        if session is not None:
            where.append("session = {session:String}")
            params["session"] = session
        scope = " AND ".join(where)
        with self._translated("counting episodes"):
            total = int(
                self._client.command(f"SELECT count() FROM episodes FINAL WHERE {scope}", parameters=params)
            )
        params["terms"] = list(terms)  # type: ignore[assignment]
        found = self._episodes(
            f"{scope} AND multiSearchAnyCaseInsensitiveUTF8(text, {{terms:Array(String)}})",
            params,
            "time DESC, id",
            MAX_CANDIDATES,
        )
        return found, total

    # -- memories ------------------------------------------------------------------------------

    def put_memory(self, memory: Memory, *, embedding: bytes = b"") -> None:
        """Insert a version of a memory (the first, or the next one: callers raise ``version``)."""
        row = [getattr(memory, f) for f in MEMORY_FIELDS]
        row[MEMORY_FIELDS.index("entities")] = [(e.name, e.role) for e in memory.entities]
        row[MEMORY_FIELDS.index("type")] = memory.type.value
        row[MEMORY_FIELDS.index("status")] = memory.status.value
        row[MEMORY_FIELDS.index("origin")] = memory.origin.value
        extra = {
            "has_human_backing": False,
            "confidence": 1.0,
            "seen_count": 1,
            "injections": 0,
            "uses": 0,
            "non_uses": 0,
            "is_suppressed": False,
            "embedding": embedding,
        }
        with self._translated(f"writing memory {memory.id}"):
            self._client.insert(
                "memories", [row + list(extra.values())], column_names=[*MEMORY_COLUMNS, *extra]
            )

    def _memories(self, where: str, parameters: dict[str, Any], limit: int) -> list[Memory]:
        rows = self._current_rows("memories", MEMORY_COLUMNS, where, parameters, "updated_at DESC, id", limit)
        return [self._memory_from_row(row) for row in rows]

    @staticmethod
    def _memory_from_row(row: Sequence[Any]) -> Memory:
        values = dict(zip(MEMORY_FIELDS, row, strict=True))
        # Named tuples come back as dicts from some backends and as tuples from others.
        values["entities"] = [
            EntityRef(name=e["name"], role=e["role"])
            if isinstance(e, dict)
            else EntityRef(name=e[0], role=e[1])
            for e in values["entities"]
        ]
        return Memory.model_validate(values)

    def get_memory(self, memory_id: str) -> Memory | None:
        found = self._memories("id = {id:String}", {"id": memory_id}, 1)
        return found[0] if found else None

    def memory_candidates(
        self,
        terms: Sequence[str],
        *,
        statuses: Sequence[MemoryStatus],
        namespace: str | None,
        types: Sequence[str] | None,
    ) -> tuple[list[Memory], int]:
        """Memories in scope containing any term, and the number of memories in scope."""
        where = ["status IN {statuses:Array(String)}"]
        params: dict[str, Any] = {"statuses": [s.value for s in statuses]}
        if namespace is not None:
            where.append("namespace = {namespace:String}")
            params["namespace"] = namespace
        if types:
            where.append("type IN {types:Array(String)}")
            params["types"] = list(types)
        scope = " AND ".join(where)
        with self._translated("counting memories"):
            total = int(
                self._client.command(f"SELECT count() FROM memories FINAL WHERE {scope}", parameters=params)
            )
        params["terms"] = list(terms)
        found = self._memories(
            f"{scope} AND multiSearchAnyCaseInsensitiveUTF8({_SEARCH_TEXT_SQL}, {{terms:Array(String)}})",
            params,
            MAX_CANDIDATES,
        )
        return found, total

    def load_embeddings(self) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Ids and the (n, dim) float32 matrix of embedded active memories: one buffer copy."""
        with self._translated("loading embeddings"):
            result = self._client.query(
                "SELECT id, embedding FROM memories FINAL WHERE status = 'active' AND embedding != '' "
                "ORDER BY id",
                column_formats={"embedding": "bytes"},
            )
        ids = [row[0] for row in result.result_rows]
        blobs = [row[1] for row in result.result_rows]
        if not blobs:
            return [], np.zeros((0, 0), dtype=np.float32)
        width = len(blobs[0])
        if any(len(b) != width for b in blobs) or width % 4:
            raise StoreError("stored embeddings have inconsistent sizes; re-embed the memories")
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width // 4)
        return ids, matrix.astype(np.float32, copy=False)

    # -- entities ------------------------------------------------------------------------------

    def upsert_entities(self, names: Sequence[str]) -> None:
        """Record entity names not yet known (id: the case-folded name)."""
        wanted = {name.strip().casefold(): name.strip() for name in names if name.strip()}
        if not wanted:
            return
        with self._translated("reading entities"):
            known = {
                row[0]
                for row in self._client.query(
                    "SELECT id FROM entities WHERE id IN {ids:Array(String)}",
                    parameters={"ids": list(wanted)},
                ).result_rows
            }
        now = utc_now()
        rows = [[key, 1, name, [], now, now] for key, name in wanted.items() if key not in known]
        if rows:
            with self._translated("writing entities"):
                self._client.insert(
                    "entities",
                    rows,
                    column_names=["id", "version", "name", "aliases", "created_at", "updated_at"],
                )

    # -- status --------------------------------------------------------------------------------

    def counts(self) -> StoreCounts:
        with self._translated("counting rows"):
            episodes = int(self._client.command("SELECT count() FROM episodes FINAL"))
            by_status = self._client.query("SELECT status, count() FROM memories FINAL GROUP BY status")
            entities = int(self._client.command("SELECT count() FROM entities FINAL"))
        return StoreCounts(
            schema_version=self.schema_version(),
            episodes=episodes,
            memories_by_status={str(s): int(n) for s, n in by_status.result_rows},
            entities=entities,
        )
