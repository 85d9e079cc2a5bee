"""The daemon's distillation loop: which session to distil when, and what status says about it.

With a model configured (``llm_url``) and the ``writer`` setting not ``never``, the daemon holding
the writer lease (:mod:`mnemo.distill.lease`; on an embedded store the one daemon always holds it)
runs :class:`~mnemo.distill.writer.Distiller` on a worker thread, one session at a time, the
lease's heartbeat renewing it all the while:

- each time it gains the lease (at start on an embedded store, once the index is built), batches
  a stopped writer left started are finished or redone;
- every ``POLL_S`` seconds, sessions quiet for ``distill_idle_s`` with episodes past their cursor;
- at once, sessions asked for through :meth:`DistillLoop.request` (the API the PreCompact and
  SessionEnd hooks call);
- at once, candidates imported from the files people keep (:meth:`DistillLoop.judge_imported`,
  :mod:`mnemo.distill.imported`).

Before each session the index is refreshed from a shared store (``refresh``, the follower's
poll: :mod:`mnemo.daemon.following`), so the judge compares with what every daemon wrote.

A spent daily token or call cap pauses the loop until the next UTC day, a host's usage-limit
answer until the host says (or an hour); the batch under way is redone then, nothing is lost. An
endpoint that fails backs it off (30 s, doubling up to 15 minutes). All show in ``mnemo status``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import anyio
import anyio.to_thread

from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.distill.backends import has_model, is_host, open_model
from mnemo.distill.decide import DecisionModel
from mnemo.distill.imported import ImportJudge
from mnemo.distill.lease import NAME as LEASE_NAME
from mnemo.distill.lease import LeaseLostError, WriterLease
from mnemo.distill.meter import TokenMeter
from mnemo.distill.policy import Approval
from mnemo.distill.writer import BatchResult, Distiller, batch_chars
from mnemo.errors import MnemoError, TokenCapError
from mnemo.index.live import RecallEngine
from mnemo.store import Store

logger = logging.getLogger(__name__)
POLL_S = 5.0
BACKOFF_S = (30.0, 900.0)


@dataclass
class DistillState:
    enabled: bool
    running: str = ""  # the session being distilled
    batches_done: int = 0
    memories_added: int = 0
    paused_until: datetime | None = None
    last_error: str = ""


class DistillLoop:
    def __init__(
        self,
        store: Store,
        engine: RecallEngine,
        settings: Settings,
        meter: TokenMeter,
        refresh: Callable[[], Awaitable[object]],
    ) -> None:
        self._store = store
        self._refresh = refresh
        self._meter = meter
        self._idle = timedelta(seconds=settings.distill_idle_s)
        self.state = DistillState(enabled=has_model(settings) and settings.writer != "never")
        self._distiller: Distiller | None = None
        self.decisions: DecisionModel | None = None
        # The usage audit's (mnemo.usage.audit): not a host's CLI, where each injected memory of
        # each turn would cost a message of the person's subscription.
        self.auditing: DecisionModel | None = None
        # An embedded store opens in one process only: its daemon is the writer, no lease needed
        # (and a lease left by a killed predecessor must not hold the new daemon back).
        self._lease = None if settings.store.startswith("chdb://") else WriterLease(store)
        if has_model(settings):  # also the usage audit's when asked, whether or not this daemon distils
            llm = open_model(settings, meter)
            self.decisions = DecisionModel(llm, settings)
            asked = settings.usage_audit == "model" and not is_host(settings)
            self.auditing = self.decisions if asked else None
            if self.state.enabled:
                self._distiller = Distiller(
                    store,
                    engine,
                    llm,
                    self.decisions,
                    lease=self._lease,
                    approval=Approval.from_settings(settings),
                    batch_chars=batch_chars(settings.llm_daily_token_cap),
                    light_pass=settings.light_pass,
                )
        self._requested: dict[str, bool] = {}  # in the order asked: whether to read it anew
        self._wake = anyio.Event()
        # The writer's other judging, committed through its fence: imported candidates judged
        # against what mnemo knows (mnemo.distill.imported).
        self.imports: ImportJudge | None = None
        if self._distiller is not None and self.decisions is not None:
            commit = store.put_memories if self._lease is None else self._lease.commit
            self.imports = ImportJudge(store, engine, self.decisions, commit, utc_now)
        self._import_queue: list[tuple[str, list[str]]] = []

    def close(self) -> None:
        """At the daemon's stop: a host's CLI calls under way are stopped (their batch is redone at
        the next start); an endpoint's client is closed."""
        if self.decisions is not None:
            self.decisions.llm.close()

    def judge_imported(self, source: str, memory_ids: list[str]) -> bool:
        """Judge candidates just imported from ``source``'s files at the next pass (on the event
        loop). False when this daemon does not judge them: no model, writer = never, or another
        daemon holds the writer lease (the candidates wait unjudged, as they would without a model)."""
        is_writer = self._lease is None or self._lease.token is not None
        if self.imports is None or not memory_ids or not is_writer:
            return False
        self._import_queue.append((source, memory_ids))
        self._wake.set()
        return True

    def request(self, session: str, *, again: bool = False) -> None:
        """Distil ``session`` now rather than after it has been idle; ``again``: from its first
        episode, as new batches (:meth:`Distiller.distil_session`)."""
        self._requested[session] = self._requested.get(session, False) or again
        self._wake.set()

    @property
    def asked(self) -> int:
        """Sessions asked for and not yet distilled."""
        return len(self._requested)

    def paused_until(self) -> datetime | None:
        """Until when model work waits; None once that time has come (the pass after a pause
        runs before the state is cleared, and may take minutes)."""
        until = self.state.paused_until
        return until if until is not None and until > utc_now() else None

    @property
    def is_busy(self) -> bool:
        return bool(self.state.running)

    async def run(
        self, index_built: Callable[[], Awaitable[None]], flushed: Callable[[], Awaitable[None]]
    ) -> None:
        """Distil, forever, once ``index_built`` returns. ``flushed`` returns once the episodes
        recorded so far are in the store (a session asked for right after its last turn must be
        read with that turn)."""
        distiller = self._distiller
        if distiller is None:
            return
        await index_built()
        backoff = BACKOFF_S[0]
        held = False  # the lease, since the last pass: gaining it means recovering first
        while True:
            wait_s = POLL_S
            try:
                if self._lease is not None and not await anyio.to_thread.run_sync(self._lease.acquire):
                    held = False
                    self.state.last_error = "another daemon holds the writer lease; it distils"
                else:
                    if not held:
                        held = True
                        self._count(await anyio.to_thread.run_sync(self._working, distiller.recover))
                    await self._distil_due(distiller, flushed)
                    await self._judge_imports()
                    self.state.paused_until, self.state.last_error = None, ""
                    backoff = BACKOFF_S[0]
            except TokenCapError as exc:  # a cap, or the host's usage limit: the batch waits
                spend = await anyio.to_thread.run_sync(self._meter.today)
                self.state.paused_until = exc.resumes_at or spend.resumes_at or utc_now() + timedelta(hours=1)
                self.state.last_error = str(exc)
                logger.info("distillation paused: %s", exc)
                wait_s = max(POLL_S, (self.state.paused_until - utc_now()).total_seconds())
            except Exception as exc:  # the loop outlives a failed batch: it is redone later
                held = held and not isinstance(exc, LeaseLostError)
                self.state.last_error = str(exc) if isinstance(exc, MnemoError) else repr(exc)
                self.state.paused_until = utc_now() + timedelta(seconds=backoff)
                if isinstance(exc, MnemoError):
                    logger.warning("distillation failed, retrying in %.0f s: %s", backoff, exc)
                else:
                    logger.exception("distillation failed, retrying in %.0f s", backoff)
                wait_s, backoff = backoff, min(BACKOFF_S[1], backoff * 2)
            with anyio.move_on_after(wait_s):
                await self._wake.wait()
            self._wake = anyio.Event()

    async def _distil_due(self, distiller: Distiller, flushed: Callable[[], Awaitable[None]]) -> None:
        """Sessions asked for, then sessions quiet for distill_idle_s, one at a time."""
        idle = await anyio.to_thread.run_sync(self._store.sessions_waiting, utc_now() - self._idle)
        for session in dict.fromkeys([*self._requested, *idle]):
            await flushed()  # right before reading: a request may have come with its last episodes
            await self._refresh()  # judged against what the store holds, not what this index last saw
            self.state.running = session
            work = functools.partial(distiller.distil_session, again=self._requested.get(session, False))
            try:
                self._count(await anyio.to_thread.run_sync(self._working, work, session))
            finally:
                self.state.running = ""
            self._requested.pop(session, None)

    async def _judge_imports(self) -> None:
        queued, self._import_queue = self._import_queue, []
        for at, (source, memory_ids) in enumerate(queued):
            assert self.imports is not None
            try:
                done = await anyio.to_thread.run_sync(self._working, self.imports.judge, source, memory_ids)
            except BaseException:
                self._import_queue[:0] = queued[at:]  # judged on the next pass, once the loop recovers
                raise
            logger.info("imported from %s: %s", source, ", ".join(f"{j.memory} {j.outcome}" for j in done))

    def _working(self, work: Callable[..., list[Any]], *args: object) -> list[Any]:
        """``work`` on this worker thread, the lease renewed from another while it runs."""
        if self._lease is None:
            return work(*args)
        with self._lease.heartbeat():
            return work(*args)

    def limits_shown(self) -> tuple[str, str]:
        """The model's context and measured speed, for ``mnemo status`` ('' when no model; the
        context is asked of the server the first time)."""
        if self.decisions is None:
            return "", ""
        limits = self.decisions.llm.limits
        context = f"{limits.context_tokens:,} tokens, from {limits.context.source}"
        speed = limits.speed()
        shown = "" if speed is None else f"reads {speed[0]:.0f} tokens/s, writes {speed[1]:.1f} tokens/s"
        return context, shown

    def lease_state(self) -> str:
        """Who holds the writer lease and for how long yet, for ``mnemo status`` (a store read)."""
        if self._lease is None:
            return "this daemon (the embedded store has one writer)" if self.state.enabled else ""
        current = self._store.read_lease(LEASE_NAME)
        if current is None or current.remaining_s <= 0:
            return "nobody"
        who = "this daemon" if current.holder == self._lease.holder else current.holder
        return f"{who}, {current.remaining_s:.0f} s left (token {current.token})"

    def _count(self, results: list[BatchResult]) -> None:
        for result in results:
            self.state.batches_done += 1
            self.state.memories_added += len(result.added)
