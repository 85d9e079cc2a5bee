"""ClickHouseStore: episodes, memories and entities over clickhouse-connect.

One class serves both DSNs: ``chdb:///path`` opens the embedded engine in this process,
``http(s)://…`` talks to a server. Methods are synchronous and not meant to be called from two
threads at once; the daemon serialises them.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import clickhouse_connect
import numpy as np
import numpy.typing as npt
from clickhouse_connect.driver.exceptions import ClickHouseError

from mnemo.clock import as_stored, utc_now
from mnemo.config import redact_dsn
from mnemo.episodes import AppendResult, Episode
from mnemo.errors import StoreError, StoreLockedError
from mnemo.memories import Memory
from mnemo.store.curated import CuratedTables
from mnemo.store.distill import DistillTables
from mnemo.store.migrations import CREATE_VERSION_TABLE, MIGRATIONS, VERSION_TABLE
from mnemo.store.usage import UsageTables

logger = logging.getLogger(__name__)

EPISODE_COLUMNS = (
    "id", "kind", "text", "who", "role", "namespace", "session", "turn", "time", "received_at",
    "client", "workspace", "cwd", "branch", "host",
)  # fmt: skip
# Memory model field → column, where the names differ (SQL keywords and reserved-looking names).
_MEMORY_RENAMES = {"when": "when_text", "where": "where_text"}
MEMORY_FIELDS = tuple(Memory.model_fields)
MEMORY_COLUMNS = tuple(_MEMORY_RENAMES.get(f, f) for f in MEMORY_FIELDS)
_ENTITIES, _TYPE, _STATUS, _ORIGIN = (
    MEMORY_FIELDS.index(f) for f in ("entities", "type", "status", "origin")
)


def _matrix(blobs: list[bytes]) -> npt.NDArray[np.float32]:
    width = len(blobs[0])
    if any(len(b) != width for b in blobs) or width % 4:
        raise StoreError("stored embeddings of one model have different sizes; re-embed with `mnemo models`")
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width // 4).astype(np.float32)


@dataclass(frozen=True, slots=True)
class StoreCounts:
    schema_version: int
    episodes: int
    memories_by_status: dict[str, int]
    entities: int


@dataclass(frozen=True, slots=True)
class ModelUsage:
    model: str
    prompt_tokens: int
    completion_tokens: int
    calls: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


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


class _OneAtATime:
    """The client's calls, one at a time: the daemon's event loop, its embedding and the writer's
    thread all use the one connection, and a chDB session is not made for concurrent queries."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.RLock()

    def query(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._client.query(*args, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._client.command(*args, **kwargs)

    def insert(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._client.insert(*args, **kwargs)

    def close(self) -> None:
        with self._lock:
            self._client.close()


class ClickHouseStore(DistillTables, UsageTables, CuratedTables):
    """Episodes, memories and entities in ClickHouse. Construct with :func:`open_store`.
    Safe to call from several threads (calls are serialised)."""

    def __init__(self, client: Any, dsn_for_display: str) -> None:
        self._client = _OneAtATime(client)
        self.dsn_for_display = dsn_for_display
        # Held by whoever reads a memory's current version to write the next one (the writer's
        # commit, review steps, forget), so that two of them never write the same version.
        self.versions_lock = threading.RLock()

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
        """Store the episodes whose ids are not stored yet, in one insert; report which were new,
        and which ids are stored already with another text (kept as stored: episodes never
        change; whether that is an error is the caller's to say)."""
        if not episodes:
            return []
        ids = [e.id for e in episodes]
        with self._translated("checking episode ids"):
            digests: dict[str, str] = dict(
                self._client.query(
                    "SELECT id, lower(hex(SHA256(text))) FROM episodes WHERE id IN {ids:Array(String)}",
                    parameters={"ids": ids},
                ).result_rows
            )
        results, rows = [], []
        for episode in episodes:
            digest = hashlib.sha256(episode.text.encode("utf-8", "surrogatepass")).hexdigest()
            stored = digests.get(episode.id)
            if stored is None:
                digests[episode.id] = digest
                results.append(AppendResult(id=episode.id, is_new=True))
                rows.append([getattr(episode, c) for c in EPISODE_COLUMNS])
            else:
                results.append(AppendResult(id=episode.id, is_new=False, is_changed=stored != digest))
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

    # -- memories ------------------------------------------------------------------------------

    def put_memory(self, memory: Memory) -> None:
        """Insert a version of a memory (the first, or the next one: callers raise ``version``)."""
        self.put_memories([memory])

    def put_memories(self, memories: Sequence[Memory], *, batch: str = "") -> None:
        """Insert memory versions in one insert (bulk loads, benchmarks, the writer's batches:
        ``batch`` marks every row with the distillation batch that wrote it)."""
        extra = {
            "injections": 0,
            "uses": 0,
            "non_uses": 0,
            "is_suppressed": False,
            # Unused since migration 2 (vectors live in `embeddings`, per model).
            "embedding": b"",
            "distill_batch": batch,
        }
        rows = []
        for memory in memories:
            row = [getattr(memory, f) for f in MEMORY_FIELDS]
            row[_ENTITIES] = [(e.name, e.role) for e in memory.entities]
            row[_TYPE] = memory.type.value
            row[_STATUS] = memory.status.value
            row[_ORIGIN] = memory.origin.value
            rows.append(row + list(extra.values()))
        what = f"memory {memories[0].id}" if len(memories) == 1 else f"{len(memories)} memories"
        with self._translated(f"writing {what}"):
            self._client.insert("memories", rows, column_names=[*MEMORY_COLUMNS, *extra])

    def _memories(self, where: str, parameters: dict[str, Any], limit: int) -> list[Memory]:
        rows = self._current_rows("memories", MEMORY_COLUMNS, where, parameters, "updated_at DESC, id", limit)
        return [self._memory_from_row(row) for row in rows]

    @staticmethod
    def _memory_from_row(row: Sequence[Any]) -> Memory:
        values = dict(zip(MEMORY_FIELDS, row, strict=True))
        # Named tuples come back as dicts from some backends and as tuples from others; dicts
        # are validated into EntityRefs with the memory in one pass (26 µs a memory, not 32–40).
        values["entities"] = [
            e if isinstance(e, dict) else {"name": e[0], "role": e[1]} for e in values["entities"]
        ]
        return Memory.model_validate(values)

    def get_memory(self, memory_id: str) -> Memory | None:
        found = self._memories("id = {id:String}", {"id": memory_id}, 1)
        return found[0] if found else None

    def active_memories(self, namespaces: Sequence[str], limit: int) -> list[Memory]:
        """Active memories in ``namespaces``, most recently updated first."""
        where = "namespace IN {ns:Array(String)} AND status = 'active'"
        return self._memories(where, {"ns": list(namespaces)}, limit)

    def current_versions(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """The newest stored version of each of ``memory_ids`` (absent: none stored)."""
        if not memory_ids:
            return {}
        with self._translated("reading memory versions"):
            rows = self._client.query(
                "SELECT id, max(version) FROM memories WHERE id IN {ids:Array(String)} GROUP BY id",
                parameters={"ids": list(memory_ids)},
            ).result_rows
        return {str(row[0]): int(row[1]) for row in rows}

    def memories_with_status(self, status: str, namespace: str | None, limit: int) -> list[Memory]:
        """Memories whose current version has ``status`` (in ``namespace`` if given), most
        recently updated first."""
        where = ["status = {status:String}"]
        params: dict[str, Any] = {"status": status}
        if namespace is not None:
            where.append("namespace = {ns:String}")
            params["ns"] = namespace
        return self._memories(" AND ".join(where), params, limit)

    def stale_candidates(self, updated_before: datetime, limit: int) -> list[Memory]:
        """Candidates whose current version is older than ``updated_before``."""
        where = "status = 'candidate' AND updated_at < {before:DateTime64(3, 'UTC')}"
        return self._memories(where, {"before": as_stored(updated_before)}, limit)

    def memories_page(self, after: str, limit: int) -> list[Memory]:
        """Current memories with ids after ``after``, in id order (keyset pages for the index build).

        Each page is its own short query, so the store is free between pages for the writes that
        arrive while the daemon builds its index.
        """
        rows = self._current_rows(
            "memories", MEMORY_COLUMNS, "id > {after:String}", {"after": after}, "id", limit
        )
        return [self._memory_from_row(row) for row in rows]

    def episodes_page(self, after: str, limit: int) -> list[Episode]:
        """Episodes with ids after ``after``, in id order (keyset pages for the index build)."""
        return self._episodes("id > {after:String}", {"after": after}, "id", limit)

    def put_embeddings(
        self, model: str, keys: Sequence[tuple[str, int]], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Store vectors made by ``model`` for (owner, part) keys."""
        if not keys:
            return
        now = utc_now()
        rows = [
            [model, owner, part, vectors[i].astype("<f4").tobytes(), now]
            for i, (owner, part) in enumerate(keys)
        ]
        with self._translated(f"writing {len(rows)} embeddings"):
            self._client.insert(
                "embeddings", rows, column_names=["model", "owner", "part", "vector", "created_at"]
            )

    def embeddings_written_at(self, model: str) -> dict[tuple[str, int], datetime]:
        """When each (owner, part) vector of ``model`` was written (a recomputed one is newer)."""
        with self._translated("reading embeddings"):
            rows = self._client.query(
                "SELECT owner, part, created_at FROM embeddings FINAL WHERE model = {model:String}",
                parameters={"model": model},
            ).result_rows
        return {(owner, int(part)): created for owner, part, created in rows}

    def embedding_keys_page(self, model: str, after: tuple[str, int], limit: int) -> list[tuple[str, int]]:
        """(owner, part) keys after ``after`` that have a vector of ``model``, in key order."""
        sql = (
            "SELECT DISTINCT owner, part FROM embeddings WHERE model = {model:String} "
            "AND (owner, part) > ({owner:String}, {part:UInt16}) ORDER BY owner, part "
            f"LIMIT {limit:d}"
        )
        with self._translated("reading embedding keys"):
            rows = self._client.query(
                sql, parameters={"model": model, "owner": after[0], "part": after[1]}
            ).result_rows
        return [(owner, int(part)) for owner, part in rows]

    def embeddings_page(
        self, model: str, after: tuple[str, int], limit: int
    ) -> tuple[list[tuple[str, int]], npt.NDArray[np.float32]]:
        """(owner, part) keys after ``after`` and their vectors, for ``model``, in key order."""
        sql = (
            "SELECT owner, part, vector FROM embeddings FINAL WHERE model = {model:String} "
            "AND (owner, part) > ({owner:String}, {part:UInt16}) ORDER BY owner, part "
            f"LIMIT {limit:d}"
        )
        with self._translated("reading embeddings"):
            rows = self._client.query(
                sql,
                parameters={"model": model, "owner": after[0], "part": after[1]},
                column_formats={"vector": "bytes"},
            ).result_rows
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [(owner, int(part)) for owner, part, _ in rows], _matrix([blob for _, _, blob in rows])

    # -- entities ------------------------------------------------------------------------------

    def upsert_entities(self, entities: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        """Record (key, name, aliases) entities; known ones gain the aliases they lacked."""
        wanted: dict[str, tuple[str, set[str]]] = {}
        for key, name, new_aliases in entities:
            _, gathered = wanted.setdefault(key, (name, set()))
            gathered.update(a for a in new_aliases if a)
        if not wanted:
            return
        with self._translated("reading entities"):
            known = {
                row[0]: (int(row[1]), row[2], list(row[3]), row[4])
                for row in self._current_rows(
                    "entities",
                    ("id", "version", "name", "aliases", "created_at"),
                    "id IN {ids:Array(String)}",
                    {"ids": list(wanted)},
                    "id",
                    len(wanted),
                )
            }
        now = utc_now()
        rows = []
        for key, (name, aliases) in wanted.items():
            if key not in known:
                rows.append([key, 1, name, sorted(aliases), now, now])
                continue
            version, known_name, had, created_at = known[key]
            if not aliases <= set(had):
                rows.append([key, version + 1, known_name, sorted(aliases | set(had)), created_at, now])
        if rows:
            with self._translated("writing entities"):
                self._client.insert(
                    "entities",
                    rows,
                    column_names=["id", "version", "name", "aliases", "created_at", "updated_at"],
                )

    def all_entities(self) -> list[tuple[str, str, list[str]]]:
        """(key, name, aliases) of every known entity."""
        rows = self._current_rows("entities", ("id", "name", "aliases"), "1", {}, "id", 10_000_000)
        return [(row[0], row[1], list(row[2])) for row in rows]

    # -- language model spend ------------------------------------------------------------------

    def add_model_usage(
        self, at: datetime, model: str, purpose: str, prompt_tokens: int, completion_tokens: int
    ) -> None:
        at = as_stored(at)
        row = [at.date(), at, model, purpose, prompt_tokens, completion_tokens]
        with self._translated("recording model usage"):
            self._client.insert(
                "model_usage",
                [row],
                column_names=["day", "at", "model", "purpose", "prompt_tokens", "completion_tokens"],
            )

    def model_usage(self, day: date) -> list[ModelUsage]:
        """Tokens spent on ``day`` (UTC), per model."""
        sql = (
            "SELECT model, sum(prompt_tokens), sum(completion_tokens), count() FROM model_usage "
            "WHERE day = {day:Date} GROUP BY model ORDER BY model"
        )
        with self._translated("reading model usage"):
            rows = self._client.query(sql, parameters={"day": day}).result_rows
        return [ModelUsage(str(m), int(p), int(c), int(n)) for m, p, c, n in rows]

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
