"""What the hooks leave behind them: the session and injection rows (written after the hook has
its answer), the usage audit of each finished turn, the memories suppressed for a person, and the
stats drawn from all of it (``mnemo stats``)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

import anyio
import anyio.to_thread

from mnemo.api.stats import Stats, Unsuppressed
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.quiet import QuietGate
from mnemo.daemon.recording import with_waiting
from mnemo.daemon.storecalls import StoreCalls
from mnemo.errors import NotFoundError
from mnemo.index.live import RecallEngine
from mnemo.store.usage import InjectionRow, SessionRow, VerdictRow
from mnemo.usage import stats, suppression
from mnemo.usage.audit import Auditor
from mnemo.usage.signal import TurnActs

logger = logging.getLogger(__name__)
SUPPRESSED_TTL_S = 60.0
LEDGER_QUEUE = 10_000
AUDIT_QUEUE = 1_000


@dataclass(frozen=True, slots=True)
class AuditJob:
    session: str
    person: str
    turn: int
    memories: list[str]
    acts: TurnActs  # the turn's prompt, the agent's acts and answer


class HookLedger:
    def __init__(
        self,
        calls: StoreCalls,
        settings: Settings,
        auditor: Auditor,
        engine: RecallEngine,
        quiet: QuietGate,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._calls = calls
        self.store = calls.store
        self._settings = settings
        self._auditor = auditor
        self._engine = engine
        self._quiet = quiet.writer()
        self._clock = clock
        self._suppressed: dict[str, tuple[datetime, list[suppression.Suppressed]]] = {}
        self._audit_send, self._audit_receive = anyio.create_memory_object_stream[AuditJob](AUDIT_QUEUE)
        self._ledger_send, self._ledger_receive = anyio.create_memory_object_stream[
            list[InjectionRow | SessionRow]
        ](LEDGER_QUEUE)
        self.audits_done = 0
        self._rows_queued = self._rows_done = 0
        self._unwritten: Counter[str] = Counter()  # per session, rows given to later() not yet written
        self._rows_written = anyio.Event()  # set (and replaced) at each batch written

    async def run(self) -> None:
        """Write down what was injected; audit finished turns. Both for the daemon's whole life."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write_ledger)
            tg.start_soon(self._run_audits)

    def audit_later(self, job: AuditJob) -> None:
        try:
            self._audit_send.send_nowait(job)
        except anyio.WouldBlock:
            logger.warning("usage audit queue full; turn %d of %s not audited", job.turn, job.session)

    async def _write_ledger(self) -> None:
        """Session and injection rows are written after the hook has its answer (the sessions'
        state in memory already counts them); a daemon killed in between forgets those rows only."""
        async with self._ledger_send, self._ledger_receive:
            async for rows in self._ledger_receive:
                await self._quiet.wait()  # the sessions' state in memory counts them meanwhile
                batch = with_waiting(self._ledger_receive, list(rows))
                injections = [r for r in batch if isinstance(r, InjectionRow)]
                sessions = [r for r in batch if isinstance(r, SessionRow)]
                try:
                    for row in sessions:
                        await self._calls(self.store.put_session, row)
                    await self._calls(self.store.put_injections, injections)
                except Exception:
                    logger.exception(
                        "recording %d sessions and %d injections failed", len(sessions), len(injections)
                    )
                self._rows_done += len(batch)
                self._unwritten -= Counter(_session_of(r) for r in batch)
                self._rows_written.set()
                self._rows_written = anyio.Event()

    def later(self, rows: list[InjectionRow | SessionRow]) -> None:
        """Write ``rows`` once the hook has its answer."""
        try:
            self._ledger_send.send_nowait(rows)
        except anyio.WouldBlock:
            logger.warning("the hooks' ledger is full; %d rows not recorded", len(rows))
            return
        self._rows_queued += len(rows)
        self._unwritten.update(_session_of(r) for r in rows)

    async def written(self) -> None:
        """Return once every row given to :meth:`later` so far is written (or failed to be)."""
        target = self._rows_queued
        with self._quiet.hurried():
            while self._rows_done < target:
                await self._rows_written.wait()

    async def session_written(self, session: str) -> None:
        """:meth:`written`, for a read of one session's rows: it waits only while some are unwritten."""
        if self._unwritten[session]:
            await self.written()

    async def _run_audits(self) -> None:
        """Audit finished turns, one at a time, on a worker thread (the model may be slow)."""
        async with self._audit_send, self._audit_receive:
            async for job in self._audit_receive:
                try:
                    await self._audit(job)
                except Exception:  # one failed audit must not stop the next
                    logger.exception("usage audit of session %s turn %d failed", job.session, job.turn)

    async def stats(self, days: int) -> Stats:
        """The last ``days`` UTC days, today included (:mod:`mnemo.usage.stats`)."""
        await self.written()  # the rows of what the hooks injected, waiting for a quiet moment
        now = self._clock()
        until = datetime.combine(now.date() + timedelta(days=1), time(), tzinfo=UTC)
        since = until - timedelta(days=days)
        person = self._settings.namespace_of_person
        figures = await self._calls(stats.from_store, self.store, person, since, until)
        gathered = await anyio.to_thread.run_sync(stats.gather, figures, person, since, until)
        return gathered.model_copy(update={"suppressing": self._settings.suppress_unused})

    async def suppressed_for(self, person: str, workspace: str | None = None) -> set[str]:
        """What is suppressed for ``person`` now, in ``workspace`` (None: in any). Read again at
        most every SUPPRESSED_TTL_S."""
        now = self._clock()
        cached = self._suppressed.get(person)
        if cached is None or abs((now - cached[0]).total_seconds()) >= SUPPRESSED_TTL_S:
            found = await self._calls(suppression.suppressed, self.store, person, now)
            cached = self._suppressed[person] = (now, found)
        return {s.memory for s in cached[1] if workspace is None or s.workspace == workspace}

    async def left_out(self, person: str, workspace: str) -> set[str]:
        """What the hooks do not inject in ``workspace``: what is suppressed there, unless the
        settings turn suppression off (``suppress_unused = false``)."""
        return await self.suppressed_for(person, workspace) if self._settings.suppress_unused else set()

    async def suppressed_in(self, memory: str, person: str) -> list[str]:
        """The workspaces where ``memory`` is suppressed for ``person`` now."""
        await self.suppressed_for(person)  # reads the store when the cached list is old
        return sorted(s.workspace for s in self._suppressed[person][1] if s.memory == memory)

    async def unsuppress(self, memory: str, person: str) -> Unsuppressed:
        """Inject ``memory`` again wherever it is suppressed for ``person``."""
        if await self._calls(self.store.get_memory, memory) is None:
            raise NotFoundError(f"no memory has the id {memory!r}")
        found = await self._calls(suppression.suppressed, self.store, person, self._clock())
        workspaces = sorted({s.workspace for s in found if s.memory == memory})
        for workspace in workspaces:
            await self._calls(self.store.put_restore, memory, workspace, person, self._clock())
        self._suppressed.pop(person, None)
        return Unsuppressed(memory=memory, workspaces=workspaces)

    async def _audit(self, job: AuditJob) -> None:
        rows = []
        for memory_id in job.memories:
            memory = self._engine.memory(memory_id)
            if memory is None:  # forgotten since
                continue
            judgement = await anyio.to_thread.run_sync(self._auditor.judge, memory, job.acts)
            rows.append(
                VerdictRow(
                    memory_id,
                    job.session,
                    job.turn,
                    job.person,
                    judgement.verdict,
                    judgement.probability,
                    judgement.method,
                    self._clock(),
                )
            )
        await self.written()  # what suppression counts a verdict by: its session's row, the injections
        await self._calls(self.store.put_verdicts, rows)
        self._suppressed.pop(job.person, None)
        self.audits_done += 1


def _session_of(row: InjectionRow | SessionRow) -> str:
    return row.session if isinstance(row, InjectionRow) else row.id
