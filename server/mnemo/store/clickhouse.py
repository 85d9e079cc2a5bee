"""ClickHouseStore: every table of the store, over one clickhouse-connect connection.

One class serves both DSNs: ``chdb:///path`` opens the embedded engine in this process,
``http(s)://…`` talks to a server. Methods are synchronous; calls from several threads are
serialised by the connection. Each group of tables lives in its own module (episodes, memories,
embeddings, entities, the hooks' usage tables, the writer's tables, the curated sets); this
module opens the store, migrates its schema, and holds what belongs to no one group.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import threading
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import clickhouse_connect
from clickhouse_connect.driver.exceptions import ClickHouseError

from mnemo.clock import as_stored, utc_now
from mnemo.config_sources import redact_dsn
from mnemo.episodes import NAME_CHARS
from mnemo.errors import StoreError, StoreLockedError
from mnemo.store.connection import Connection, explained
from mnemo.store.distill import DistillTables
from mnemo.store.embeddings import EmbeddingTables
from mnemo.store.entities import EntityTables
from mnemo.store.episodes import EpisodeTables
from mnemo.store.history import HistoryTables
from mnemo.store.keep import KeepTables
from mnemo.store.memories import MemoryTables
from mnemo.store.migrations import CREATE_VERSION_TABLE, MIGRATIONS, VERSION_TABLE
from mnemo.store.protocol import ModelUsage, StoreCounts
from mnemo.store.server import ServerOptions, connect, for_cluster
from mnemo.store.usage import UsageTables

logger = logging.getLogger(__name__)


def open_store(dsn: str, options: ServerOptions | None = None) -> ClickHouseStore:
    """Open (creating when needed) and migrate the store at ``dsn``; raise StoreError if it cannot.
    ``options``: a server's password and TLS settings (:mod:`mnemo.store.server`)."""
    shown = redact_dsn(dsn)
    options = options or ServerOptions()
    is_server = not dsn.startswith("chdb://")
    if not is_server:
        path = Path(dsn.removeprefix("chdb://"))
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store directory {path}: {exc.strerror}") from None
        _check_not_locked(path)
    try:
        client = connect(dsn, options) if is_server else clickhouse_connect.get_client(dsn=dsn)
    except ClickHouseError as exc:
        if is_server and ("UNKNOWN_DATABASE" in str(exc) or "Code: 81" in str(exc)):
            raise StoreError(
                f"the store {shown} names a database the server does not have: create it with "
                "`mnemo server init` (or CREATE DATABASE as an admin)"
            ) from None
        raise StoreError(f"cannot open the store {shown}: {explained(exc)}") from None
    except OSError as exc:
        raise StoreError(f"cannot open the store {shown}: {exc}") from None
    store = ClickHouseStore(client, shown, options.cluster, is_embedded=not is_server)
    store.migrate()
    if is_server:
        store.authenticate()
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


class ClickHouseStore(
    EpisodeTables,
    MemoryTables,
    HistoryTables,
    EmbeddingTables,
    EntityTables,
    DistillTables,
    UsageTables,
    KeepTables,
):
    """Episodes, memories and entities in ClickHouse. Construct with :func:`open_store`.
    Safe to call from several threads (calls are serialised)."""

    def __init__(
        self, client: Any, dsn_for_display: str, cluster: str = "", *, is_embedded: bool = False
    ) -> None:
        super().__init__(Connection(client))
        self.dsn_for_display = dsn_for_display
        self._is_embedded = is_embedded  # chDB, in this process
        self.cluster = cluster  # a replicated cluster's name: its schema changes run ON CLUSTER
        # Held by whoever reads a memory's current version to write the next one (the writer's
        # commit, review steps, forget), so that two of them never write the same version.
        self.versions_lock = threading.RLock()

    def close(self) -> None:
        self._db.close()

    def give_back_memory(self) -> None:
        """chDB's allocator (jemalloc) keeps the pages its queries freed for some seconds
        (docs/benchmarks/recall.md, "Memory at a million"); purged here at once, so that what the daemon
        holds once built is what it keeps. A server's memory is the server's own."""
        if self._is_embedded:
            with self._db.translated("giving back the embedded engine's freed memory"):
                self._db.command("SYSTEM JEMALLOC PURGE")

    @property
    def person(self) -> str | None:
        """On a shared server, the person the server authenticated; None on the embedded store."""
        return self._db.person

    def authenticate(self) -> None:
        """On a shared server, the person is the server's user for this connection, never a name
        the client picks: each person's daemon connects as their own ClickHouse user."""
        with self._db.translated("asking the server who we are"):
            user = str(self._db.command("SELECT currentUser()")).strip()
        if not re.fullmatch(f"{NAME_CHARS}{{1,64}}", user):
            raise StoreError(
                f"the server's user {user!r} cannot name a person (1 to 64 characters, no spaces)"
            )
        self._db.person = user

    # -- schema --------------------------------------------------------------------------------

    def schema_version(self) -> int:
        with self._db.translated("reading the schema version"):
            return int(self._db.command(f"SELECT max(version) FROM {VERSION_TABLE}") or 0)

    def migrate(self) -> int:
        """Apply the migrations above the recorded version; return the version reached. A schema
        already current is only read, so a server user with no right to change tables (a team's
        member) opens it; one behind is an error naming what to run when that user may not."""
        with self._db.translated("reading the schema version"):
            exists = int(self._db.command(f"EXISTS TABLE {VERSION_TABLE}") or 0)
        if not exists:
            with self._db.translated("creating the schema version table"):
                self._db.command(for_cluster(CREATE_VERSION_TABLE, self.cluster))
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
            with self._db.translated(f"applying migration {migration.version} ({migration.name})"):
                for statement in migration.statements:
                    self._db.command(for_cluster(statement, self.cluster))
                self._db.insert(
                    VERSION_TABLE,
                    [[migration.version, migration.name, utc_now()]],
                    column_names=["version", "name", "applied_at"],
                )
            logger.info("applied migration %d: %s", migration.version, migration.name)
        return latest

    # -- language model spend ------------------------------------------------------------------

    def add_model_usage(
        self, at: datetime, model: str, purpose: str, prompt_tokens: int, completion_tokens: int
    ) -> None:
        at = as_stored(at)
        row = [at.date(), at, model, purpose, prompt_tokens, completion_tokens]
        with self._db.translated("recording model usage"):
            self._db.insert(
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
        with self._db.translated("reading model usage"):
            rows = self._db.query(sql, parameters={"day": day}).result_rows
        return [ModelUsage(str(m), int(p), int(c), int(n)) for m, p, c, n in rows]

    # -- status --------------------------------------------------------------------------------

    def counts(self) -> StoreCounts:
        where, parameters = self._db.scoped("1", {})
        with self._db.translated("counting rows"):
            sql = f"SELECT count() FROM {self._db.final('episodes')} WHERE {where}"
            episodes = int(self._db.command(sql, parameters))
            by_status = self._db.query(
                f"SELECT status, uniqExact(id) FROM {self._db.final('memories')} WHERE {where} "
                f"AND {self._db.newest_memories()} GROUP BY status",
                parameters=parameters,
            )
            entities = int(self._db.command("SELECT count() FROM entities FINAL"))
        return StoreCounts(
            schema_version=self.schema_version(),
            episodes=episodes,
            memories_by_status={str(s): int(n) for s, n in by_status.result_rows},
            entities=entities,
        )


if TYPE_CHECKING:
    from mnemo.store.protocol import Store

    _IS_A_STORE: type[Store] = ClickHouseStore  # the type checker holds the class to the Protocol
