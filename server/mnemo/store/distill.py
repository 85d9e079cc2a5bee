"""The writer's tables: distillation batches (with each session's cursor), the judge log, the lease.

Kept apart from the other tables because only the writer uses them. Episodes are taken in arrival
order — (received_at, id) — so an episode that arrives late with an old timestamp (an import) is
still distilled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from datetime import datetime
from typing import Any, Literal

from mnemo.clock import as_stored
from mnemo.episodes import Episode
from mnemo.store.connection import Tables
from mnemo.store.episodes import read_episodes

BatchStatus = Literal["started", "done", "failed"]
FINISHED = ("done", "failed")


@dataclass(frozen=True, slots=True)
class Batch:
    id: str
    session: str
    namespace: str
    first_received: datetime
    first_episode: str
    last_received: datetime
    last_episode: str
    episodes: int
    status: BatchStatus
    error: str = ""
    memories: int = 0
    extraction: str = ""  # the validated extraction (JSON), once the model has given it
    updated_at: datetime | None = None

    @property
    def end(self) -> tuple[datetime, str]:
        return self.last_received, self.last_episode


@dataclass(frozen=True, slots=True)
class JudgeLogRow:
    batch: str
    seq: int
    at: datetime
    session: str
    namespace: str
    memory: str
    action: str
    target: str
    closes: list[str]
    reason: str
    detail: str  # JSON: the decisions' probabilities, the guard's reasons


@dataclass(frozen=True, slots=True)
class Lease:
    holder: str
    token: int
    expires_at: datetime  # by the store's clock
    remaining_s: float  # until it expires, by the store's clock (0 or less: expired)


_BATCH_COLUMNS = tuple(f.name for f in fields(Batch))
_JUDGE_COLUMNS = tuple(f.name for f in fields(JudgeLogRow))


class DistillTables(Tables):
    def put_batch(self, batch: Batch, now: datetime) -> None:
        row = [*astuple(batch)[:-1], as_stored(now)]
        with self._db.translated("recording a distillation batch"):
            # No version: the store stamps it (migration 11), not this daemon's clock.
            self._db.insert("distill_batches", [row], column_names=list(_BATCH_COLUMNS))

    def _batches(self, where: str, parameters: dict[str, Any], order: str, limit: int) -> list[Batch]:
        sql = (
            f"SELECT {', '.join(_BATCH_COLUMNS)} FROM {self._db.final('distill_batches')} WHERE {where} "
            f"ORDER BY {order} LIMIT {limit:d}"
        )
        with self._db.translated("reading distillation batches"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        found = []
        for row in rows:
            values: dict[str, Any] = dict(zip(_BATCH_COLUMNS, row, strict=True))
            for name in ("first_received", "last_received", "updated_at"):
                values[name] = as_stored(values[name])
            found.append(Batch(**values))
        return found

    def started_batches(self) -> list[Batch]:
        """Batches begun and not finished (a writer stopped in the middle): to be redone."""
        return self._batches("status = 'started'", {}, "updated_at", 10_000)

    def last_batch(self) -> Batch | None:
        """The batch that changed last (started, done or failed), None before any."""
        found = self._batches("1", {}, "updated_at DESC", 1)
        return found[0] if found else None

    def failed_batches(self, limit: int = 20) -> list[Batch]:
        return self._batches("status = 'failed'", {}, "updated_at DESC", limit)

    def failed_summary(self, since: datetime) -> tuple[int, str]:
        """How many batches failed since ``since``, and the newest one's error."""
        sql = (
            "SELECT count(), argMax(error, updated_at) FROM "
            f"{self._db.final('distill_batches')} WHERE status = 'failed' "
            "AND updated_at >= {since:DateTime64(3, 'UTC')}"
        )
        with self._db.translated("counting failed batches"):
            count, latest = self._db.query(sql, parameters={"since": as_stored(since)}).result_rows[0]
        return int(count), str(latest)

    def session_cursor(self, session: str) -> tuple[datetime, str] | None:
        """The end of the session's last finished batch: its episodes up to there are done."""
        found = self._batches(
            "session = {session:String} AND status IN ('done', 'failed')",
            {"session": session},
            "last_received DESC, last_episode DESC",
            1,
        )
        return found[0].end if found else None

    def episodes_after(self, session: str, after: tuple[datetime, str] | None, limit: int) -> list[Episode]:
        """The session's episodes that arrived after ``after``, in arrival order."""
        where = "session = {session:String}"
        parameters: dict[str, Any] = {"session": session}
        if after is not None:
            where += " AND (received_at, id) > ({received:DateTime64(3, 'UTC')}, {id:String})"
            parameters |= {"received": after[0], "id": after[1]}
        return read_episodes(self._db, where, parameters, "received_at, id", limit)

    def episodes_between(
        self, session: str, first: tuple[datetime, str], last: tuple[datetime, str]
    ) -> list[Episode]:
        """The session's episodes from ``first`` to ``last`` (inclusive) in arrival order."""
        where = (
            "session = {session:String} "
            "AND (received_at, id) >= ({first_at:DateTime64(3, 'UTC')}, {first_id:String}) "
            "AND (received_at, id) <= ({last_at:DateTime64(3, 'UTC')}, {last_id:String})"
        )
        parameters = {
            "session": session,
            "first_at": first[0],
            "first_id": first[1],
            "last_at": last[0],
            "last_id": last[1],
        }
        return read_episodes(self._db, where, parameters, "received_at, id", 100_000)

    def sessions_waiting(self, idle_before: datetime) -> list[str]:
        """Sessions quiet since ``idle_before`` that have episodes past their cursor (of those
        this store's person may read)."""
        scoped, parameters = self._db.scoped("session != ''", {"idle_before": as_stored(idle_before)})
        sql = f"""
            SELECT e.session FROM (
                SELECT session, max((received_at, id)) AS last FROM {self._db.final("episodes")}
                WHERE {scoped} GROUP BY session
                HAVING last.1 < {{idle_before:DateTime64(3, 'UTC')}}
            ) AS e
            LEFT JOIN (
                SELECT session, max((last_received, last_episode)) AS done
                FROM {self._db.final("distill_batches")}
                WHERE status IN ('done', 'failed') GROUP BY session
            ) AS b ON e.session = b.session
            WHERE b.session = '' OR e.last > b.done
            ORDER BY e.last.1
        """
        with self._db.translated("finding sessions to distil"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        return [str(row[0]) for row in rows]

    def batch_applied(self, batch_id: str) -> bool:
        """Whether any memory row written by this batch is stored (they go in one insert)."""
        with self._db.translated("checking a distillation batch"):
            found = self._db.command(
                "SELECT count() FROM memories WHERE distill_batch = {id:String} "
                f"AND {self._db.written('memories')}",
                parameters={"id": batch_id},
            )
        return int(found) > 0

    def put_judge_log(self, rows: Sequence[JudgeLogRow]) -> None:
        if not rows:
            return
        with self._db.translated("writing the judge log"):
            self._db.insert("judge_log", [astuple(r) for r in rows], column_names=list(_JUDGE_COLUMNS))

    def judge_log(
        self, limit: int, session: str | None = None, memory: str | None = None
    ) -> list[JudgeLogRow]:
        """The judge's decisions, newest first: of ``session``'s batches, and those that judged
        ``memory``, merged into it or closed it, when given."""
        where = ["1"]
        if session:
            where.append("session = {session:String}")
        if memory:
            where.append(
                "(memory = {memory:String} OR target = {memory:String} OR has(closes, {memory:String}))"
            )
        sql = (
            f"SELECT {', '.join(_JUDGE_COLUMNS)} FROM {self._db.final('judge_log')} "
            f"WHERE {' AND '.join(where)} "
            f"ORDER BY at DESC, batch, seq DESC LIMIT {limit:d}"
        )
        parameters = {"session": session or "", "memory": memory or ""}
        with self._db.translated("reading the judge log"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        found = []
        for row in rows:
            values = dict(zip(_JUDGE_COLUMNS, row, strict=True))
            values["closes"] = list(values["closes"])
            values["at"] = as_stored(values["at"])
            found.append(JudgeLogRow(**values))
        return found

    # -- the writer lease --------------------------------------------------------------------

    def read_lease(self, name: str) -> Lease | None:
        """The lease as it stands, its time left by the store's clock (None: never claimed)."""
        sql = (
            "SELECT holder, token, expires_at, "
            "(toUnixTimestamp64Milli(expires_at) - toUnixTimestamp64Milli(now64(3))) / 1000 "
            "FROM writer_lease FINAL WHERE name = {name:String} ORDER BY version DESC LIMIT 1"
        )
        with self._db.translated("reading the writer lease"):
            rows = self._db.query(sql, parameters={"name": name}).result_rows
        if not rows:
            return None
        holder, token, expires_at, remaining = rows[0]
        return Lease(str(holder), int(token), as_stored(expires_at), float(remaining))

    def write_lease(self, name: str, holder: str, token: int, ttl_s: float) -> None:
        """Claim or renew: the expiry is the store's clock plus ``ttl_s``, the row's version the
        store's clock in nanoseconds (the newest claim wins whatever the daemons' clocks say)."""
        sql = (
            "INSERT INTO writer_lease (name, holder, token, expires_at, version) "
            "SELECT {name:String}, {holder:String}, {token:UInt64}, "
            "now64(3) + toIntervalMillisecond({ttl:UInt64}), toUnixTimestamp64Nano(now64(9))"
        )
        parameters = {"name": name, "holder": holder, "token": token, "ttl": round(ttl_s * 1000)}
        with self._db.translated("writing the writer lease"):
            self._db.command(sql, parameters)
