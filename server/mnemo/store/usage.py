"""The hooks' tables: sessions, what was injected into them, and whether it was used.

Rows are facts that are never updated in place: a session's end is a newer version of its row;
an injection or a verdict written twice (a retried hook, a redone audit) folds into one by its key.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from datetime import datetime
from typing import Any, Literal

from mnemo.clock import as_stored
from mnemo.store.connection import Tables

Verdict = Literal["used", "unused", "unclear"]


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    client: str
    person: str
    workspace: str
    cwd: str
    transcript: str
    started_at: datetime
    ended_at: datetime | None = None
    end_reason: str = ""


@dataclass(frozen=True, slots=True)
class InjectionRow:
    session: str
    block: int  # the block's number in the session, from 1
    turn: int
    memory: str  # '' for the block's frame (header and footer)
    event: str
    person: str
    tokens: int
    at: datetime


@dataclass(frozen=True, slots=True)
class VerdictRow:
    memory: str
    session: str  # a restore's row (method "restored"): the workspace it is injected in again
    turn: int
    person: str
    verdict: Verdict
    probability: float
    method: str  # "citation", "signal", "logprobs", "answer" (the decision model's), "restored"
    at: datetime


@dataclass(frozen=True, slots=True)
class SessionHistory:
    """What the store knows of a session, to pick it up again after a daemon restart."""

    turn: int
    episode_ids: list[str]
    injected: list[InjectionRow]
    last_prompt: str = ""  # the text of the prompt at ``turn``
    answered_turn: int = 0  # the last turn whose final answer is recorded (audited up to there)


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """What one person's sessions were given of a memory, and what the usage audit said of it."""

    injected: int  # blocks that carried it
    sessions: int
    last_injected: datetime | None
    used: int
    unused: int  # clearly unused
    unclear: int


_SESSION_COLUMNS = tuple(f.name for f in fields(SessionRow))
_INJECTION_COLUMNS = tuple(f.name for f in fields(InjectionRow))
_VERDICT_COLUMNS = tuple(f.name for f in fields(VerdictRow))


class UsageTables(Tables):
    def put_session(self, row: SessionRow) -> None:
        with self._db.translated("recording a session"):
            self._db.insert(
                "sessions", [[*astuple(row), time.time_ns()]], column_names=[*_SESSION_COLUMNS, "version"]
            )

    def _sessions(self, where: str, parameters: dict[str, Any], order: str) -> list[SessionRow]:
        sql = (
            f"SELECT {', '.join(_SESSION_COLUMNS)} FROM {self._db.final('sessions')} "
            f"WHERE {where} ORDER BY {order}"
        )
        with self._db.translated("reading sessions"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        found = []
        for row in rows:
            values = dict(zip(_SESSION_COLUMNS, row, strict=True))
            values["started_at"] = as_stored(values["started_at"])
            values["ended_at"] = as_stored(values["ended_at"]) if values["ended_at"] is not None else None
            found.append(SessionRow(**values))
        return found

    def session_state(self, session: str) -> tuple[SessionRow | None, SessionHistory]:
        """The session's row and history: what a daemon needs to pick a session up."""
        found = self._sessions("id = {id:String}", {"id": session}, "id")
        return (found[0] if found else None), self._session_history(session)

    def _session_history(self, session: str) -> SessionHistory:
        with self._db.translated("reading a session's history"):
            turn, ids, last_prompt, answered = self._db.query(
                "SELECT max(turn), groupUniqArray(id), argMaxIf(text, turn, kind = 'prompt'), "
                "maxIf(turn, kind = 'response') FROM episodes WHERE session = {s:String} "
                f"AND {self._db.written('episodes')}",
                parameters={"s": session},
            ).result_rows[0]
            rows = self._db.query(
                f"SELECT {', '.join(_INJECTION_COLUMNS)} FROM {self._db.final('injections')} "
                "WHERE session = {s:String} ORDER BY block, memory",
                parameters={"s": session},
            ).result_rows
        injected = [InjectionRow(**dict(zip(_INJECTION_COLUMNS, row, strict=True))) for row in rows]
        return SessionHistory(
            int(turn or 0), [str(i) for i in ids], injected, str(last_prompt or ""), int(answered or 0)
        )

    def in_session(self, episode_ids: Sequence[str], session: str) -> set[str]:
        """Which of ``episode_ids`` were recorded in ``session``."""
        if not episode_ids:
            return set()
        with self._db.translated("reading episodes' sessions"):
            rows = self._db.query(
                "SELECT DISTINCT id FROM episodes WHERE id IN {ids:Array(String)} AND session = {s:String}",
                parameters={"ids": list(episode_ids), "s": session},
            ).result_rows
        return {str(row[0]) for row in rows}

    def put_injections(self, rows: Sequence[InjectionRow]) -> None:
        if rows:
            with self._db.translated("recording an injection"):
                self._db.insert(
                    "injections", [astuple(r) for r in rows], column_names=list(_INJECTION_COLUMNS)
                )

    def put_verdicts(self, rows: Sequence[VerdictRow]) -> None:
        if rows:
            with self._db.translated("recording usage verdicts"):
                self._db.insert(
                    "usage_verdicts", [astuple(r) for r in rows], column_names=list(_VERDICT_COLUMNS)
                )

    def clearly_unused(self, person: str, *, since: datetime, times: int) -> list[tuple[str, str, int]]:
        """(memory, workspace, times) of what ``person``'s sessions of a workspace found clearly
        unused ``times`` times or more since ``since`` and since its last use there or its last
        restore (the suppression policy, :mod:`mnemo.usage.suppression`, says how many and how
        long)."""
        sql = f"""
            SELECT memory, workspace,
                   maxIf(at, verdict = 'used' OR method = 'restored') AS back,
                   arrayCount(
                       (v, t) -> v = 'unused' AND t >= {{since:DateTime64(3, 'UTC')}} AND t > back,
                       groupArray(verdict), groupArray(at)
                   ) AS unused
            FROM (
                SELECT v.memory AS memory, v.verdict AS verdict, v.method AS method, v.at AS at,
                       if(v.method = 'restored', v.session, s.workspace) AS workspace
                FROM (
                    SELECT memory, session, verdict, method, at
                    FROM {self._db.final("usage_verdicts")} WHERE person = {{p:String}}
                ) AS v
                LEFT JOIN (
                    SELECT id, workspace FROM {self._db.final("sessions")} WHERE person = {{p:String}}
                ) AS s ON v.session = s.id
            )
            WHERE workspace != ''
            GROUP BY memory, workspace
            HAVING unused >= {times:d}
        """
        with self._db.translated("reading suppressed memories"):
            rows = self._db.query(sql, parameters={"p": person, "since": as_stored(since)}).result_rows
        return [(str(m), str(w), int(n)) for m, w, _, n in rows]

    def put_restore(self, memory: str, workspace: str, person: str, at: datetime) -> None:
        """Inject ``memory`` in ``workspace`` again: its count of non-uses there starts over."""
        self.put_verdicts([VerdictRow(memory, workspace, 0, person, "unclear", 1.0, "restored", at)])

    def usage_by_day(
        self, person: str, since: datetime, until: datetime
    ) -> list[tuple[Any, int, int, int, int, int, int]]:
        """Per UTC day, for ``person``: (day, memories injected, tokens injected, sessions, used,
        clearly unused, unclear)."""
        parameters = {"since": as_stored(since), "until": as_stored(until), "person": person}
        window = (
            "person = {person:String} "
            "AND at >= {since:DateTime64(3, 'UTC')} AND at < {until:DateTime64(3, 'UTC')}"
        )
        sql = f"""
            SELECT day, sum(injected), sum(tokens), sum(sessions), sum(used), sum(unused), sum(unclear)
            FROM (
                SELECT toDate(at) AS day, countIf(memory != '') AS injected, sum(tokens) AS tokens,
                       uniqExact(session) AS sessions, 0 AS used, 0 AS unused, 0 AS unclear
                FROM {self._db.final("injections")} WHERE {window} GROUP BY day
                UNION ALL
                SELECT toDate(at) AS day, 0, 0, 0, countIf(verdict = 'used'), countIf(verdict = 'unused'),
                       countIf(verdict = 'unclear')
                FROM {self._db.final("usage_verdicts")} WHERE {window} AND method != 'restored' GROUP BY day
            ) GROUP BY day ORDER BY day
        """
        with self._db.translated("reading usage by day"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        return [(r[0], *(int(v) for v in r[1:])) for r in rows]

    def blocks_and_prompts(self, sessions: Sequence[str]) -> tuple[list[tuple[str, int]], int]:
        """Each block injected into ``sessions`` — (event, tokens) — and how many prompts the
        person typed in them."""
        if not sessions:
            return [], 0
        with self._db.translated("reading injected blocks"):
            blocks = self._db.query(
                f"SELECT any(event), sum(tokens) FROM {self._db.final('injections')} "
                "WHERE session IN {s:Array(String)} GROUP BY session, block",
                parameters={"s": list(sessions)},
            ).result_rows
            prompts = self._db.query(
                "SELECT uniqExact(session, turn) FROM episodes WHERE session IN {s:Array(String)} "
                f"AND kind = 'prompt' AND {self._db.written('episodes')}",
                parameters={"s": list(sessions)},
            ).result_rows[0][0]
        return [(str(event), int(tokens)) for event, tokens in blocks], int(prompts)

    def injected_tokens(self, sessions: Sequence[str]) -> dict[str, int]:
        """Tokens injected into each of ``sessions`` (those with none are absent)."""
        if not sessions:
            return {}
        sql = (
            f"SELECT session, sum(tokens) FROM {self._db.final('injections')} "
            "WHERE session IN {s:Array(String)} GROUP BY session"
        )
        with self._db.translated("reading injected tokens"):
            rows = self._db.query(sql, parameters={"s": list(sessions)}).result_rows
        return {str(session): int(tokens) for session, tokens in rows}

    def sessions_between(self, person: str, since: datetime, until: datetime) -> list[SessionRow]:
        """``person``'s sessions that started in [since, until)."""
        where = (
            "person = {person:String} AND started_at >= {since:DateTime64(3, 'UTC')} "
            "AND started_at < {until:DateTime64(3, 'UTC')}"
        )
        window = {"since": as_stored(since), "until": as_stored(until), "person": person}
        return self._sessions(where, window, "started_at")

    def memory_usage(self, memory_id: str, person: str) -> MemoryUsage:
        """How often ``person``'s sessions were given ``memory_id``, and the audit's verdicts."""
        parameters = {"m": memory_id, "p": person}
        with self._db.translated("reading a memory's usage"):
            injected, sessions, last = self._db.query(
                f"SELECT count(), uniqExact(session), max(at) FROM {self._db.final('injections')} "
                "WHERE memory = {m:String} AND person = {p:String}",
                parameters=parameters,
            ).result_rows[0]
            used, unused, unclear = self._db.query(
                "SELECT countIf(verdict = 'used'), countIf(verdict = 'unused'), countIf(verdict = 'unclear') "
                f"FROM {self._db.final('usage_verdicts')} "
                "WHERE memory = {m:String} AND person = {p:String} AND method != 'restored'",
                parameters=parameters,
            ).result_rows[0]
        return MemoryUsage(
            int(injected),
            int(sessions),
            as_stored(last) if injected else None,
            int(used),
            int(unused),
            int(unclear),
        )

    def uses_in(self, person: str, workspace: str, since: datetime) -> dict[str, int]:
        """How many turns of ``person``'s sessions in ``workspace`` used each memory since
        ``since`` (memories not used there are absent)."""
        sql = f"""
            SELECT memory, count() FROM {self._db.final("usage_verdicts")}
            WHERE person = {{p:String}} AND verdict = 'used' AND at >= {{since:DateTime64(3, 'UTC')}}
              AND session IN (
                  SELECT id FROM {self._db.final("sessions")}
                  WHERE person = {{p:String}} AND workspace = {{w:String}}
              )
            GROUP BY memory
        """
        parameters = {"p": person, "w": workspace, "since": as_stored(since)}
        with self._db.translated("counting memory uses in a workspace"):
            rows = self._db.query(sql, parameters=parameters).result_rows
        return {str(m): int(n) for m, n in rows}

    def use_counts(self, person: str) -> dict[str, int]:
        """How many turns used each memory, for ``person`` (memories never used are absent)."""
        sql = (
            f"SELECT memory, count() FROM {self._db.final('usage_verdicts')} "
            "WHERE person = {p:String} AND verdict = 'used' GROUP BY memory"
        )
        with self._db.translated("counting memory uses"):
            rows = self._db.query(sql, parameters={"p": person}).result_rows
        return {str(m): int(n) for m, n in rows}

    def injection_counts(self, person: str, since: datetime) -> dict[str, int]:
        """How many blocks carried each memory to ``person``'s sessions since ``since`` (memories
        not injected are absent)."""
        sql = (
            f"SELECT memory, count() FROM {self._db.final('injections')} WHERE person = {{p:String}} "
            "AND memory != '' AND at >= {since:DateTime64(3, 'UTC')} GROUP BY memory"
        )
        with self._db.translated("counting injections"):
            rows = self._db.query(sql, parameters={"p": person, "since": as_stored(since)}).result_rows
        return {str(m): int(n) for m, n in rows}
