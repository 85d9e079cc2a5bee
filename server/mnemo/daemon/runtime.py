"""The daemon runtime: ``async with Daemon(settings) as daemon:`` is one daemon's whole life.

Entering opens the store, loads the embedding model, makes the services and starts their loops in
one task group: the group commit and the journal (:mod:`mnemo.daemon.recording`), the index build
then the background embedding (:mod:`mnemo.daemon.indexing`), distillation, the hooks' ledger and
usage audit, the review queue's ageing. Leaving stops them, saves the vector lists and closes the
store. The HTTP server (:mod:`mnemo.daemon.server`) and the tests start daemons this same way.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Self

import anyio
import anyio.abc
import anyio.to_thread

from mnemo import __version__
from mnemo.api.status import DistillStatus, Health, ModelSpend, ModelStatus, Status, StoreFollow
from mnemo.api.writer import DistillQueued, DistillRequest, JudgeLog, JudgeLogEntry
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.config_sources import redact_dsn
from mnemo.daemon.auditing import Auditing
from mnemo.daemon.browsing import Browsing
from mnemo.daemon.code_proposals import CodeProposals
from mnemo.daemon.distilling import DistillLoop
from mnemo.daemon.exchange import Exchange
from mnemo.daemon.following import Follower
from mnemo.daemon.hook_events import HookEvents
from mnemo.daemon.hook_ledger import HookLedger
from mnemo.daemon.hook_modes import HostModes
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.keeping import KeepSets
from mnemo.daemon.noting import Notes
from mnemo.daemon.recalling import Recall
from mnemo.daemon.recording import Recording
from mnemo.daemon.remembering import Remembering
from mnemo.daemon.reviewing import Reviews
from mnemo.daemon.storecalls import StoreCalls
from mnemo.distill.backends import calls_per_minute, daily_call_cap, has_model
from mnemo.distill.durable import describe as describe_durable
from mnemo.distill.meter import TokenMeter
from mnemo.embed import load_embedder
from mnemo.embed.fidelity import of_loaded
from mnemo.secrets import SecretRedactor
from mnemo.store import Store, open_store
from mnemo.store.server import ServerOptions
from mnemo.usage.audit import Auditor

logger = logging.getLogger(__name__)
# At exit, what the hooks recorded is stored within this long (episodes left: at the next start).
EXIT_FLUSH_S = 2.0


class Daemon:
    """The store, the index, the services and their loops. The services are there once entered."""

    def __init__(self, settings: Settings, *, clock: Callable[[], datetime] = utc_now) -> None:
        self.settings = settings
        self._clock = clock
        self._task_group: anyio.abc.TaskGroup | None = None
        self.start_error: Exception | None = None  # why entering failed (the server reports it)
        self.embedder_degraded = ""  # the fidelity check's words when the model is degraded here
        self.started_at = utc_now()
        self._started_monotonic = time.monotonic()

    async def __aenter__(self) -> Self:
        try:
            return await self._enter()
        except Exception as exc:
            self.start_error = exc
            raise

    async def _enter(self) -> Self:
        settings = self.settings
        options = ServerOptions.from_settings(settings)
        store: Store = await anyio.to_thread.run_sync(open_store, settings.store, options)
        if store.person is not None and store.person != settings.person:
            # On a server the person is the user it authenticated, whatever the client named.
            logger.info("the person is %s, the server's user (not %s)", store.person, settings.person)
            settings = self.settings = settings.model_copy(update={"person": store.person})
        try:
            embedder = await anyio.to_thread.run_sync(load_embedder, settings)
            logger.info("embedding model: %s", embedder.model_id if embedder else "none installed")
            fidelity = await anyio.to_thread.run_sync(of_loaded, embedder)
            if fidelity is not None and not fidelity.faithful:
                self.embedder_degraded = fidelity.describe()
                logger.warning("the embedding model is DEGRADED on this CPU: %s", self.embedder_degraded)
            self.store = store
            self.calls = StoreCalls(store)
            self.index = Indexing(self.calls, settings, embedder)
            # On a server, other daemons write too: the index follows what they commit.
            is_shared = not settings.store.startswith("chdb://")
            self.follower = Follower(self.calls, self.index, settings.store_poll_s, enabled=is_shared)
            self.recording = Recording(
                self.calls, settings, SecretRedactor(), self.index.add_episodes, self.index.quiet
            )
            self.recall = Recall(self.calls, self.index, self.recording)
            self.remembering = Remembering(self.calls, self.index, self.recording, settings)
            self.meter = TokenMeter(
                store,
                settings.llm_daily_token_cap,
                call_cap=daily_call_cap(settings),
                per_minute=calls_per_minute(settings),
            )
            self.distilling = DistillLoop(store, self.index.engine, settings, self.meter, self.follower.poll)
            # Where the check reads the new value, the memory with it is proposed for review.
            self.recall.code.on_stale = CodeProposals(store, self.index, self._clock).propose
            self.keep = KeepSets(store, settings, self.calls)
            auditor = Auditor(self.distilling.auditing)
            self.ledger = HookLedger(
                self.calls, settings, auditor, self.index.engine, self.index.quiet, self._clock
            )
            self.hooks = HookEvents(
                self.calls,
                settings,
                self.recording,
                self.recall,
                self.keep,
                self.ledger,
                self.distil,
                self._clock,
            )
            self.modes = HostModes()
            self.reviews = Reviews(self.calls, self.index, settings)
            self.auditing = Auditing(
                self.calls, self.index, lambda: self.index.engine, self.recall.code, settings
            )
            self.browsing = Browsing(
                self.calls, self.recall, self.ledger, settings, self.status, self.judge_log
            )
            self.exchange = Exchange(self.calls, self.index, self.recording, settings.max_episode_chars)
            self.notes = Notes(self.calls, self.index, self.recording, self.distilling, settings)
            task_group = anyio.create_task_group()
            await task_group.__aenter__()
        except BaseException:
            store.close()
            raise
        self._task_group = task_group
        task_group.start_soon(self.recording.writer.run)
        task_group.start_soon(self.recording.run_journal)
        task_group.start_soon(self.distilling.run, self.index.built, self.recording.journal_flushed)
        task_group.start_soon(self.hooks.run)
        task_group.start_soon(self.ledger.run)
        task_group.start_soon(self.reviews.run)
        task_group.start_soon(self._build_then_embed)
        task_group.start_soon(self.follower.run)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task_group, self._task_group = self._task_group, None
        if task_group is None:
            return
        try:
            self.distilling.close()
            # What the hooks recorded waits for a quiet moment (mnemo.daemon.quiet): stored now,
            # not at the next start (episodes) or never (the rows of what was injected).
            with anyio.move_on_after(EXIT_FLUSH_S, shield=True):
                async with anyio.create_task_group() as flushing:
                    flushing.start_soon(self.recording.journal_flushed)
                    flushing.start_soon(self.ledger.written)
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)
            await self.index.save()
        finally:
            # After the store calls still running (a request the server gave up waiting for keeps
            # its worker thread): they hold the calls' limiter, or the versions lock. Shielded:
            # a daemon left by cancellation closes its store all the same.
            with anyio.CancelScope(shield=True):
                await self.calls(self._close_store)

    def _close_store(self) -> None:
        with self.store.versions_lock:
            self.store.close()

    async def _build_then_embed(self) -> None:
        await self.follower.start_cursor()
        await self.index.build()
        await self.index.run_embedding()

    @property
    def is_busy(self) -> bool:
        """Work that should keep the daemon alive: pending writes, an embedding backlog, a batch
        being distilled (a session waiting for a model that is down does not keep it alive)."""
        return self.recording.is_busy or self.index.is_busy or self.distilling.is_busy

    def health(self) -> Health:
        return Health(
            version=__version__,
            pid=os.getpid(),
            store=self.store.dsn_for_display,
            inputs=self.settings.inputs_digest,
            request_timeout_s=self.settings.request_timeout_s,
        )

    async def status(self) -> Status:
        counts = await self.calls(self.store.counts)
        spend = await self.calls(self.meter.today)
        failed, last_failure = (
            await self.calls(self.store.failed_summary, self.started_at)  # an earlier daemon's are in its log
            if self.distilling.state.enabled
            else (0, "")
        )
        lease = await self.calls(self.distilling.lease_state)
        context, speed = await anyio.to_thread.run_sync(self.distilling.limits_shown)  # may ask the server
        embedder = self.index.engine.embedder
        behind = await self.follower.behind()
        return Status(
            version=__version__,
            pid=os.getpid(),
            store=self.store.dsn_for_display,
            started_at=self.started_at,
            uptime_s=round(time.monotonic() - self._started_monotonic, 3),
            schema_version=counts.schema_version,
            person=self.settings.person,
            episodes=counts.episodes,
            memories=counts.memories_by_status,
            entities=counts.entities,
            embedder=embedder.model_id if embedder else "none",
            embedder_degraded=self.embedder_degraded,
            index_ready=self.index.is_built,
            index_build_s=self.index.build_s,
            index_memories_from=self.index.memories_from,
            vector_lists=self.index.vector_lists,
            embedding_backlog=self.index.backlog,
            store_follow=None
            if behind is None
            else StoreFollow(
                poll_s=self.follower.poll_s,
                behind_versions=behind[0],
                behind_s=round(behind[1], 3),
                applied=self.follower.applied,
                episodes_applied=self.follower.episodes_applied,
                last_poll_s_ago=None
                if self.follower.last_poll is None
                else round(time.monotonic() - self.follower.last_poll, 3),
                last_error=self.follower.last_error,
            ),
            language_model=ModelStatus(
                endpoint=self._endpoint(),
                model=self._model(),
                backend=self.settings.llm_backend,
                tokens_today=spend.tokens,
                daily_cap=spend.cap,
                calls_today=spend.calls,
                daily_call_cap=spend.call_cap,
                calls_per_minute=calls_per_minute(self.settings),
                resumes_at=spend.resumes_at,
                by_model=[ModelSpend(**dataclasses.asdict(u)) for u in spend.by_model],
                judging=self._judging(),
            ),
            distillation=DistillStatus(
                **dataclasses.asdict(self.distilling.state)
                | {"paused_until": self.distilling.paused_until()},
                asked=self.distilling.asked,
                failed_batches=failed,
                last_failure=last_failure,
                lease=lease,
                context=context,
                speed=speed,
            ),
        )

    def _endpoint(self) -> str:
        """Where the writer's model is, for `mnemo status` ('' when none)."""
        decisions = self.distilling.decisions
        return decisions.llm.endpoint if decisions is not None else redact_dsn(self.settings.llm_url)

    def _model(self) -> str:
        decisions = self.distilling.decisions
        return decisions.llm.model if decisions is not None else self.settings.llm_model

    def _judging(self) -> str:
        """How the writer decides, for `mnemo status`: the relation's method and calibration, and
        for a small model which durable-line rule is in force."""
        decisions = self.distilling.decisions
        if decisions is None:
            return ""
        if decisions.steps is None:
            return decisions.describe()
        return f"{decisions.describe()}; {describe_durable(self.index.engine.embedder)}"

    def distil(self, session: str) -> DistillQueued:
        """Distil ``session`` now (the PreCompact and SessionEnd hooks ask this, and POST /v1/distill)."""
        if not self.distilling.state.enabled:
            reason = (
                "this daemon does not distil (writer = never)"
                if has_model(self.settings)
                else "no language model is configured (llm_url and llm_model, or `mnemo writer use`)"
            )
            return DistillQueued(queued=False, reason=reason)
        self.distilling.request(session)
        return DistillQueued(queued=True)

    async def distil_asked(self, asked: DistillRequest) -> DistillQueued:
        """POST /v1/distill: a session distilled up to its last episode is not queued (unless
        ``again``), and the answer says why. One whose episodes cannot all be seen yet — none
        recorded, or hook events spooled and not yet replayed — is queued: its hooks may still be
        delivering (the loop reads it once they have)."""
        session = asked.session
        if not self.distilling.state.enabled:
            return self.distil(session)
        await self.recording.journal_flushed()  # the episodes its hooks just recorded
        if not asked.again and not self.hooks.spooled():
            cursor = await self.calls(self.store.session_cursor, session)
            if cursor is not None and not await self.calls(self.store.episodes_after, session, cursor, 1):
                reason = f"session {session!r} is distilled up to its last episode; --again reads it anew"
                return DistillQueued(queued=False, reason=reason, distilled=True)
        self.distilling.request(session, again=asked.again)
        return DistillQueued(queued=True)

    async def judge_log(self, limit: int, session: str | None, memory: str | None = None) -> JudgeLog:
        rows = await self.calls(self.store.judge_log, limit, session, memory)
        return JudgeLog(
            entries=[
                JudgeLogEntry(
                    at=r.at,
                    batch=r.batch,
                    session=r.session,
                    namespace=r.namespace,
                    memory=r.memory,
                    action=r.action,
                    target=r.target,
                    closes=r.closes,
                    reason=r.reason,
                    detail=json.loads(r.detail),
                )
                for r in rows
            ]
        )
