"""The store's one connection: clickhouse-connect calls made one at a time, errors made StoreErrors.

Every group of tables (:mod:`~mnemo.store.episodes`, :mod:`~mnemo.store.memories`, …) is a
:class:`Tables` over the same :class:`Connection`; :class:`~mnemo.store.clickhouse.ClickHouseStore`
is all of them together.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from clickhouse_connect.driver.exceptions import ClickHouseError

from mnemo.errors import NotAllowedError, StoreError
from mnemo.store.authorship import STAMPED_TABLES, written_condition

logger = logging.getLogger(__name__)
# What a person may read of a shared store's memories and episodes: every namespace but the other
# people's (person:<name>); ``{scope:String}`` is the reader's own person namespace. And of those,
# only rows their writer may write (mnemo.store.authorship): a forged row is read by no one.
_SCOPE = "(NOT startsWith(namespace, 'person:') OR namespace = {scope:String}) AND " + written_condition(
    "namespace"
)
SCOPED_TABLES = frozenset({"memories", "memory_history", "episodes"})


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def is_access_denied(text: str) -> bool:
    """Whether a server's error is a missing grant (ACCESS_DENIED, code 497)."""
    return "ACCESS_DENIED" in text or "Code: 497" in text


def explained(exc: BaseException) -> str:
    """A server's error, first line, with what to do when it is about credentials or grants."""
    text = first_line(exc)
    if "AUTHENTICATION_FAILED" in text or "Code: 516" in text:
        return f"{text} — check the user in the store DSN and store_password (or store_password_file)"
    if is_access_denied(text):
        return (
            f"{text} — your server user lacks that grant: an admin gives it with "
            "`mnemo server setup --apply` (a member's access) or runs `mnemo server init` (the schema)"
        )
    return text


class Connection:
    """A clickhouse-connect client whose calls run one at a time: the daemon's event loop, its
    embedding and the writer's thread all use the one connection, and a chDB session is not made
    for concurrent queries."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.RLock()
        # On a shared server: the person the server authenticated (its user). Reads of memories
        # and episodes then leave out the other people's namespaces, and writes to them are
        # refused. None on the embedded store, which is one person's.
        self.person: str | None = None

    def scoped(self, where: str, parameters: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """``where`` narrowed to what this connection's person may read (unchanged when none)."""
        if self.person is None:
            return where, parameters
        return f"({where}) AND {_SCOPE}", {**parameters, "scope": f"person:{self.person}"}

    def written(self, table: str) -> str:
        """The condition that leaves out ``table``'s rows written by someone who may not write
        there (``1`` on the embedded store, which is one person's)."""
        if self.person is None or table not in STAMPED_TABLES:
            return "1"
        return written_condition(STAMPED_TABLES[table])

    def newest_memories(self) -> str:
        """The condition that keeps each memory's newest version among those whose writer may
        write it, over every memory (for a count by status; a read of rows checks the rows it
        read by id instead, :meth:`current_rows`)."""
        return (
            "(id, version) IN (SELECT id, max(version) FROM memories "
            f"WHERE {self.written('memories')} GROUP BY id)"
        )

    def final(self, table: str) -> str:
        """``table FINAL``, on a shared store with the rows no one may have written left out
        before the versions fold: a forged newer version is not read, and the row reads as its
        last genuine version (PREWHERE is applied while reading, before FINAL)."""
        condition = self.written(table)
        return f"{table} FINAL" if condition == "1" else f"{table} FINAL PREWHERE {condition}"

    def check_writable(self, namespaces: Sequence[str], what: str) -> None:
        """Refuse a write into another person's namespace."""
        if self.person is None:
            return
        mine = f"person:{self.person}"
        others = sorted({n for n in namespaces if n.startswith("person:") and n != mine})
        if others:
            raise NotAllowedError(
                f"cannot write {what} to {', '.join(others)}: on this server you are {mine}, and "
                "another person's namespace is theirs alone"
            )

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

    @contextmanager
    def translated(self, action: str) -> Iterator[None]:
        """ClickHouse's errors inside the block become a StoreError saying what was being done."""
        try:
            yield
        except ClickHouseError as exc:
            logger.warning("store error while %s: %s", action, exc)
            raise StoreError(f"the store failed while {action}: {explained(exc)}") from None

    def current_rows(
        self,
        table: str,
        columns: Sequence[str],
        where: str,
        parameters: dict[str, Any],
        order: str,
        limit: int,
    ) -> list[Sequence[Any]]:
        """Rows of ``table`` as of now (FINAL folds versions and re-sent duplicates; of memories,
        each one's newest version, so ``columns`` holds id and version); of memories and
        episodes, only those this connection's person may read."""
        if table in SCOPED_TABLES:
            where, parameters = self.scoped(where, parameters)
        if table == "memories":
            return self._newest_rows(columns, where, parameters, order, limit)
        sql = (
            f"SELECT {', '.join(columns)} FROM {self.final(table)} WHERE {where} "
            f"ORDER BY {order} LIMIT {limit:d}"
        )
        with self.translated(f"reading {table}"):
            rows: list[Sequence[Any]] = self.query(sql, parameters=parameters).result_rows
        return rows

    def _newest_rows(
        self, columns: Sequence[str], where: str, parameters: dict[str, Any], order: str, limit: int
    ) -> list[Sequence[Any]]:
        """Memories matching ``where`` in their newest version: ``FINAL`` leaves each memory's
        newest row per writer, so a row is kept only when no writer wrote a newer version (asked
        by id, on the primary key, for the rows read); a page that loses rows so is followed by
        the next. Cheaper than a newest-version lookup over every memory."""
        at_id, at_version = columns.index("id"), columns.index("version")
        kept: list[Sequence[Any]] = []
        seen: set[str] = set()
        offset = 0
        while True:
            sql = (
                f"SELECT {', '.join(columns)} FROM {self.final('memories')} WHERE {where} "
                f"ORDER BY {order} LIMIT {limit:d} OFFSET {offset:d}"
            )
            with self.translated("reading memories"):
                rows: list[Sequence[Any]] = self.query(sql, parameters=parameters).result_rows
                newest = self.newest_versions(list({str(row[at_id]) for row in rows}))
            for row in rows:
                memory_id = str(row[at_id])
                if memory_id not in seen and int(row[at_version]) == newest.get(memory_id):
                    seen.add(memory_id)  # two writers may write one version number: the first
                    kept.append(row)
                    if len(kept) == limit:
                        return kept
            if len(rows) < limit:
                return kept
            offset += limit

    def newest_versions(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """The newest version of each of ``memory_ids`` a writer who may write it wrote (absent:
        none stored), on the primary key."""
        if not memory_ids:
            return {}
        rows = self.query(
            "SELECT id, max(version) FROM memories WHERE id IN {ids:Array(String)} "
            f"AND {self.written('memories')} GROUP BY id",
            parameters={"ids": list(memory_ids)},
        ).result_rows
        return {str(memory_id): int(version) for memory_id, version in rows}

    def by_namespace(self, table: str) -> dict[str, int]:
        """How many rows of ``table`` (as of now) each namespace this connection's person may read holds."""
        where, parameters = self.scoped("1", {})
        # Each id once, whatever its versions and writers (a namespace never changes): no FINAL.
        sql = f"SELECT namespace, uniqExact(id) FROM {table} WHERE {where} GROUP BY namespace ORDER BY 1"
        with self.translated(f"counting {table} by namespace"):
            rows = self.query(sql, parameters=parameters).result_rows
        return {str(namespace): int(count) for namespace, count in rows}


class Tables:
    """A group of the store's tables, over the store's one connection."""

    def __init__(self, db: Connection) -> None:
        self._db = db
