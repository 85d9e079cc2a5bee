"""The async client of the daemon's HTTP API, with pydantic models in and out (mnemo-mcp, the
importer, tests and tools).

Requests go through :mod:`mnemo.client.http` in a worker thread, over pooled connections. It
starts the daemon when nothing answers (see :mod:`mnemo.client.launcher`) and retries a
request once after a connection failure — the daemon may have exited idle in between; a request
that never connected cannot have been applied, so the retry cannot duplicate anything. Error
bodies come back as the same :class:`~mnemo.errors.MnemoError` subclass the daemon raised.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Self, TypeVar
from urllib.parse import urlencode

import anyio
import anyio.to_thread
from pydantic import BaseModel, ValidationError

from mnemo.api.audit import AuditApplied, AuditApply, AuditReport, AuditRequest
from mnemo.api.episodes import AppendRequest, AppendResponse
from mnemo.api.exchange import ImportRequest, ImportResult
from mnemo.api.keep import KeepRequest, KeepResult, KeptSets
from mnemo.api.memories import ForgetRequest
from mnemo.api.notes import NotesImportRequest, NotesImportResult
from mnemo.api.recall import EpisodesResult, RecallEpisodeRequest, RecallRequest, RecallResult
from mnemo.api.review import ReviewAction, ReviewQueue, ReviewUrl
from mnemo.api.stats import Stats
from mnemo.api.status import Status
from mnemo.api.writer import DistillQueued, DistillRequest, JudgeLog
from mnemo.client.http import ConnectionLostError, NotSentError, UnixHTTP
from mnemo.client.launcher import ensure_daemon
from mnemo.client.policy import timed_out, unavailable, within_cap
from mnemo.config import Settings
from mnemo.episodes import AppendResult, EpisodeIn, new_id
from mnemo.errors import (
    DaemonError,
    error_from_answer,
)
from mnemo.memories import Memory, RememberRequest
from mnemo.validation import validated

logger = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


class DaemonClient:
    """``async with DaemonClient(settings) as client: await client.recall(...)``.

    ``host_pid``: the agent host this client works for (the MCP server's); writes carry it, so
    that the daemon refuses them while that host's hooks report plan mode."""

    def __init__(self, settings: Settings, *, host_pid: int | None = None) -> None:
        self._settings = settings
        self._http: UnixHTTP | None = None
        self._host = f"?host={host_pid}" if host_pid else ""

    async def __aenter__(self) -> Self:
        self._http = UnixHTTP(str(self._settings.socket_path))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    async def ensure_started(self) -> dict[str, object]:
        """Start the daemon if it does not answer; return its health."""
        return await anyio.to_thread.run_sync(ensure_daemon, self._settings)

    async def _request(
        self,
        method: str,
        path: str,
        body: BaseModel | None,
        result: type[M],
        *,
        is_idempotent: bool = True,
        keeps_nulls: bool = False,
    ) -> M:
        if self._http is None:
            raise RuntimeError("DaemonClient used outside `async with`")
        content = _encoded(body, keeps_nulls) if body is not None else None
        timeout_s = self._settings.request_timeout_s
        http = self._http
        for attempt in (1, 2):
            try:
                response = await anyio.to_thread.run_sync(
                    lambda: http.request(method, path, content, timeout_s=timeout_s), abandon_on_cancel=True
                )
                break
            except TimeoutError:
                raise timed_out(timeout_s) from None
            except (NotSentError, ConnectionLostError) as exc:
                error = unavailable(exc, attempt=attempt, is_idempotent=is_idempotent)
                if error is not None:
                    raise error from None
                logger.info("daemon connection failed (%s); starting it and retrying", exc)
                await self.ensure_started()
        if response.status >= 400:
            raise error_from_answer(response.status, response.body)
        try:
            return result.model_validate_json(response.body)
        except ValidationError as exc:
            raise DaemonError(f"unexpected answer from the mnemo daemon on {path}: {exc}") from None

    async def append(self, episodes: Sequence[EpisodeIn]) -> list[AppendResult]:
        # Ids are given here, not by the daemon, so that re-sending after a dropped connection
        # cannot store an episode twice.
        with_ids = [e if e.id is not None else e.model_copy(update={"id": new_id("ep_")}) for e in episodes]
        body = validated(AppendRequest, {"episodes": with_ids})
        return (await self._request("POST", "/v1/episodes", body, AppendResponse)).results

    async def remember(self, request: RememberRequest) -> Memory:
        return await self._request("POST", f"/v1/memories{self._host}", request, Memory, is_idempotent=False)

    async def forget(self, memory_id: str, reason: str) -> Memory:
        body = validated(ForgetRequest, {"id": memory_id, "reason": reason})
        return await self._request("POST", f"/v1/memories/forget{self._host}", body, Memory)

    async def recall(self, request: RecallRequest) -> RecallResult:
        return await self._request("POST", "/v1/recall", request, RecallResult)

    async def recall_episodes(self, request: RecallEpisodeRequest) -> EpisodesResult:
        return await self._request("POST", "/v1/episodes/query", request, EpisodesResult)

    async def distil(self, session: str, *, again: bool = False) -> DistillQueued:
        body = validated(DistillRequest, {"session": session, "again": again})
        return await self._request("POST", "/v1/distill", body, DistillQueued)

    async def kept(self, workspace: str | None) -> KeptSets:
        query = f"?{urlencode({'workspace': workspace})}" if workspace else ""
        return await self._request("GET", f"/v1/keep{query}", None, KeptSets)

    async def keep(self, request: KeepRequest) -> KeepResult:
        # Not idempotent: an add sent twice is harmless, a replace or remove is not.
        return await self._request("POST", f"/v1/keep{self._host}", request, KeepResult, is_idempotent=False)

    async def review_queue(
        self, status: str = "candidate", namespace: str | None = None, limit: int = 200
    ) -> ReviewQueue:
        narrowed = {"namespace": namespace} if namespace else {}
        query = urlencode({"status": status, "limit": limit, **narrowed})
        return await self._request("GET", f"/v1/review?{query}", None, ReviewQueue)

    async def review_url(self) -> ReviewUrl:
        return await self._request("GET", "/v1/review/url", None, ReviewUrl)

    async def review(self, action: ReviewAction) -> Memory:
        return await self._request("POST", "/v1/review", action, Memory, is_idempotent=False)

    async def audit(self, request: AuditRequest) -> AuditReport:
        return await self._request("POST", "/v1/audit", request, AuditReport)

    async def audit_apply(self, request: AuditApply) -> AuditApplied:
        return await self._request("POST", "/v1/audit/apply", request, AuditApplied, is_idempotent=False)

    async def judge_log(self, limit: int = 20, session: str | None = None) -> JudgeLog:
        query = urlencode({"limit": limit, **({"session": session} if session else {})})
        return await self._request("GET", f"/v1/judge-log?{query}", None, JudgeLog)

    async def import_records(self, request: ImportRequest) -> ImportResult:
        """Records of an export file (an episode's turn may be null: nulls are sent)."""
        return await self._request("POST", "/v1/import/memories", request, ImportResult, keeps_nulls=True)

    async def import_notes(self, request: NotesImportRequest) -> NotesImportResult:
        return await self._request("POST", "/v1/import/notes", request, NotesImportResult)

    async def stats(self, days: int = 30) -> Stats:
        return await self._request("GET", f"/v1/stats?days={int(days)}", None, Stats)

    async def status(self) -> Status:
        return await self._request("GET", "/v1/status", None, Status)


def _encoded(body: BaseModel, keeps_nulls: bool = False) -> bytes:
    """``body`` as the request's JSON (nulls left out, for the daemon's defaults, unless
    ``keeps_nulls``); TooLargeError past the daemon's cap, before it is sent."""
    return within_cap(body.model_dump_json(exclude_none=not keeps_nulls).encode())
