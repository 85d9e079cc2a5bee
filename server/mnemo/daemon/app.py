"""The daemon's HTTP+JSON API (Starlette) over a :class:`~mnemo.daemon.runtime.Daemon`.

Routes (all JSON, all under ``/v1``)::

    GET  /v1/health                    liveness: version, pid, store
    GET  /v1/status                    version, store, pid, uptime, counts
    POST /v1/episodes                  {"episodes": [EpisodeIn…]} → {"results": [AppendResult…]}
    POST /v1/episodes/query            RecallEpisodeRequest → EpisodesResult
    POST /v1/memories                  RememberRequest → Memory
    POST /v1/memories/forget           {"id": …, "reason": …} → Memory
    POST /v1/recall                    RecallRequest → RecallResult
    POST /v1/code/check                CodeCheckRequest → CodeCheckResult (memories whose code changed)
    POST /v1/distill                   {"session": …, "again"?} → {"queued": …, "reason": …, "distilled": …}
    GET  /v1/keep?workspace=           the curated sets: the workspace's and the person's
    POST /v1/keep                      KeepRequest → KeepResult (add, replace, remove)
    POST /v1/keep/import               KeepImportRequest → KeepResult (a project set from its file)
    GET  /v1/review?status=&namespace= the review queue (candidates) or the approved memories
    GET  /v1/review/url                the review page's address with the user's secret
    POST /v1/review                    ReviewAction → Memory (approve, reject, edit)
    POST /v1/hooks/<Event>?client=     the host's hook JSON → text/plain: what the hook prints
    GET  /v1/stats?days=30             memory injected and used over the last days (mnemo stats)
    POST /v1/stats/unsuppress          UnsuppressRequest → Unsuppressed (inject a memory again)
    GET  /v1/judge-log?limit=&session=&memory= the judge's decisions, newest first
    GET  /v1/export/namespaces         what an export would hold: memories per namespace, episodes
    POST /v1/export                    ExportPageRequest → ExportPage (mnemo export, page by page)
    POST /v1/import/memories           ImportRequest → ImportResult (mnemo import --memories)
    POST /v1/import/notes              NotesImportRequest → NotesImportResult (import --from claude-md …)
    POST /v1/shutdown                  asks the daemon to exit

Errors are ``{"error": {"type": <MnemoError subclass name>, "message": …}}`` with the status the
error class names; malformed bodies are 422 ``InputError`` naming the fields, bodies over the cap
413 ``TooLargeError`` before they are read (:mod:`mnemo.daemon.messages`), requests that do not
arrive whole in time 408 (:mod:`mnemo.daemon.server`). What a client sent never gets a 5xx.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemo.api.audit import AuditApply, AuditRequest
from mnemo.api.code import CodeCheckRequest
from mnemo.api.episodes import AppendRequest, AppendResponse
from mnemo.api.exchange import ExportPageRequest, ImportRequest
from mnemo.api.keep import WORKSPACE_PATTERN, KeepImportRequest, KeepRequest
from mnemo.api.memories import ForgetRequest
from mnemo.api.notes import NotesImportRequest
from mnemo.api.recall import RecallEpisodeRequest, RecallRequest
from mnemo.api.review import ReviewAction, ReviewUrl
from mnemo.api.stats import UnsuppressRequest
from mnemo.api.writer import DistillRequest
from mnemo.daemon import review_page
from mnemo.daemon.messages import answer, matching, parse, read_body, whole_number
from mnemo.daemon.review_page import ReviewGate
from mnemo.daemon.runtime import Daemon
from mnemo.episodes import NAMESPACE_PATTERN
from mnemo.errors import InputError, MnemoError, NotAllowedError
from mnemo.jsonread import JSONInputError, read_json
from mnemo.memories import RememberRequest
from mnemo.paths import MAX_HOOK_INPUT_BYTES
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
OFF_LOOP_BYTES = 256 * 1024  # a hook input this large is read on a worker thread


class Activity:
    """Requests in flight and the time of the last one, for the idle exit."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.last_active = time.monotonic()

    def idle_for_s(self) -> float:
        return 0.0 if self.in_flight else time.monotonic() - self.last_active


class ActivityMiddleware:
    def __init__(self, app: ASGIApp, activity: Activity) -> None:
        self._app = app
        self._activity = activity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        self._activity.in_flight += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self._activity.in_flight -= 1
            self._activity.last_active = time.monotonic()


def error_response(exc: MnemoError) -> JSONResponse:
    return JSONResponse(
        {"error": {"type": type(exc).__name__, "message": str(exc)}}, status_code=exc.http_status
    )


async def _mnemo_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MnemoError)
    logger.info("%s %s → %s: %s", request.method, request.url.path, type(exc).__name__, exc)
    return error_response(exc)


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse(
        {"error": {"type": "MnemoError", "message": f"internal error in the mnemo daemon: {exc!r}"}},
        status_code=500,
    )


async def _client_gone(request: Request, exc: Exception) -> Response:
    """The client went away (or was cut off) before its request was read: nobody to answer."""
    logger.info("%s %s: the client left before its request arrived", request.method, request.url.path)
    return Response(status_code=400)


def _host_of(request: Request) -> int | None:
    """The host process a request speaks for (hooks and the MCP server send ``?host=<pid>``)."""
    try:
        return int(request.query_params["host"])
    except (KeyError, ValueError):
        return None


def build_app(
    daemon: Daemon,
    *,
    activity: Activity,
    idle_s: float,
    request_exit: Callable[[], None],
    review_token: str = "",
    review_url: ReviewUrl | None = None,
) -> ASGIApp:
    """The ASGI app; its lifespan runs the daemon (``async with daemon``) and the idle watcher.
    With ``review_token``, the review page's routes too, behind :class:`ReviewGate` (which is
    what stands between them and a TCP connection)."""

    async def health(request: Request) -> Response:
        return answer(daemon.health())

    async def status(request: Request) -> Response:
        return answer(await daemon.status())

    async def append(request: Request) -> Response:
        body = await parse(request, AppendRequest)
        return answer(AppendResponse(results=await daemon.recording.append(body.episodes)))

    async def query_episodes(request: Request) -> Response:
        return answer(await daemon.recall.recall_episodes(await parse(request, RecallEpisodeRequest)))

    def refuse_in_plan_mode(request: Request) -> None:
        if daemon.modes.is_plan_mode(_host_of(request)):
            raise NotAllowedError(
                "mnemo does not write in plan mode (the client reported it for this session): "
                "leave plan mode to store or change memories"
            )

    async def remember(request: Request) -> Response:
        refuse_in_plan_mode(request)
        return answer(await daemon.remembering.remember(await parse(request, RememberRequest)))

    async def forget(request: Request) -> Response:
        refuse_in_plan_mode(request)
        body = await parse(request, ForgetRequest)
        return answer(await daemon.remembering.forget(body.id, body.reason))

    async def check_code(request: Request) -> Response:
        checked = await parse(request, CodeCheckRequest)
        return answer(await daemon.recall.check_code(checked, daemon.settings.namespace_of_person))

    async def recall(request: Request) -> Response:
        return answer(await daemon.recall.recall(await parse(request, RecallRequest)))

    async def hook(request: Request) -> Response:
        body = await read_body(request, MAX_HOOK_INPUT_BYTES)
        read = functools.partial(read_json, body or b"{}", cut_deeper=True)  # the turn is kept, cut
        try:  # a large input (a tool's whole output) is read off the event loop
            payload = read() if len(body) < OFF_LOOP_BYTES else await anyio.to_thread.run_sync(read)
        except JSONInputError as exc:
            raise InputError(f"the hook input is not a JSON object ({exc})") from None
        if not isinstance(payload, dict):
            raise InputError("the hook input must be a JSON object")
        event = request.path_params["event"]
        host = _host_of(request)
        if host is not None:
            daemon.modes.note_mode(host, payload)
        if event == "PreToolUse":  # answered by the hook process; sent here only for its mode
            return Response("", media_type="text/plain; charset=utf-8")
        out = await daemon.hooks.handle(event, payload, request.query_params.get("client", ""))
        return Response(out, media_type="text/plain; charset=utf-8")

    async def usage_stats(request: Request) -> Response:
        return answer(await daemon.ledger.stats(whole_number(request, "days", 30, 3_660)))

    async def unsuppress(request: Request) -> Response:
        body = await parse(request, UnsuppressRequest)
        return answer(await daemon.ledger.unsuppress(body.memory, daemon.settings.namespace_of_person))

    async def distil(request: Request) -> Response:
        body = await parse(request, DistillRequest)
        return answer(await daemon.distil_asked(body))

    async def kept(request: Request) -> Response:
        workspace = matching(request, "workspace", WORKSPACE_PATTERN, "workspace:<id>")
        return answer(await daemon.keep.sets(workspace))

    async def keep(request: Request) -> Response:
        refuse_in_plan_mode(request)
        return answer(await daemon.keep.edit(await parse(request, KeepRequest)))

    async def keep_import(request: Request) -> Response:
        return answer(await daemon.keep.import_project(await parse(request, KeepImportRequest)))

    async def review_queue(request: Request) -> Response:
        try:
            status = MemoryStatus(request.query_params.get("status", "candidate"))
        except ValueError as exc:
            raise InputError(f"status: {exc}") from None
        limit = whole_number(request, "limit", 200, 1_000)
        namespace = matching(request, "namespace", NAMESPACE_PATTERN, "person:<name> or workspace:<id>")
        return answer(await daemon.reviews.queue(status, namespace, limit))

    async def review(request: Request) -> Response:
        return answer(await daemon.reviews.act(await parse(request, ReviewAction)))

    async def page_url(request: Request) -> Response:
        return answer(review_url or ReviewUrl(url="", reason="this daemon serves no review page"))

    async def judge_log(request: Request) -> Response:
        limit = whole_number(request, "limit", 20, 1_000)
        session = request.query_params.get("session") or None
        return answer(await daemon.judge_log(limit, session, request.query_params.get("memory") or None))

    async def audit(request: Request) -> Response:
        return answer(await daemon.auditing.report(await parse(request, AuditRequest)))

    async def audit_apply(request: Request) -> Response:
        return answer(await daemon.auditing.apply(await parse(request, AuditApply)))

    async def export_namespaces(request: Request) -> Response:
        return answer(await daemon.exchange.namespaces())

    async def export_page(request: Request) -> Response:
        return answer(await daemon.exchange.page(await parse(request, ExportPageRequest)))

    async def import_memories(request: Request) -> Response:
        return answer(await daemon.exchange.import_records(await parse(request, ImportRequest)))

    async def import_notes(request: Request) -> Response:
        return answer(await daemon.notes.import_notes(await parse(request, NotesImportRequest)))

    async def shutdown(request: Request) -> Response:
        logger.info("shutdown requested over the API")
        request_exit()
        return JSONResponse({"stopping": True})

    async def watch_idle() -> None:
        while True:
            await anyio.sleep(min(1.0, idle_s / 4))
            if not daemon.is_busy and activity.idle_for_s() >= idle_s:
                logger.info("idle for %.0f s with no pending work; exiting", idle_s)
                request_exit()
                return

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with daemon, anyio.create_task_group() as tg:
            tg.start_soon(watch_idle)
            yield
            tg.cancel_scope.cancel()

    handlers: dict[Any, Callable[[Request, Exception], Any]] = {
        MnemoError: _mnemo_error,
        ClientDisconnect: _client_gone,
        Exception: _unexpected_error,
    }
    app = Starlette(
        routes=[
            Route("/v1/health", health, methods=["GET"]),
            Route("/v1/status", status, methods=["GET"]),
            Route("/v1/episodes", append, methods=["POST"]),
            Route("/v1/episodes/query", query_episodes, methods=["POST"]),
            Route("/v1/memories", remember, methods=["POST"]),
            Route("/v1/memories/forget", forget, methods=["POST"]),
            Route("/v1/recall", recall, methods=["POST"]),
            Route("/v1/code/check", check_code, methods=["POST"]),
            Route("/v1/distill", distil, methods=["POST"]),
            Route("/v1/keep", kept, methods=["GET"]),
            Route("/v1/keep", keep, methods=["POST"]),
            Route("/v1/keep/import", keep_import, methods=["POST"]),
            Route("/v1/review", review_queue, methods=["GET"]),
            Route("/v1/review/url", page_url, methods=["GET"]),
            Route("/v1/review", review, methods=["POST"]),
            Route("/v1/hooks/{event}", hook, methods=["POST"]),
            Route("/v1/stats", usage_stats, methods=["GET"]),
            Route("/v1/stats/unsuppress", unsuppress, methods=["POST"]),
            Route("/v1/judge-log", judge_log, methods=["GET"]),
            Route("/v1/audit", audit, methods=["POST"]),
            Route("/v1/audit/apply", audit_apply, methods=["POST"]),
            Route("/v1/export/namespaces", export_namespaces, methods=["GET"]),
            Route("/v1/export", export_page, methods=["POST"]),
            Route("/v1/import/memories", import_memories, methods=["POST"]),
            Route("/v1/import/notes", import_notes, methods=["POST"]),
            Route("/v1/shutdown", shutdown, methods=["POST"]),
            *(review_page.routes(daemon) if review_token else []),
        ],
        exception_handlers=handlers,
        lifespan=lifespan,
    )
    return ReviewGate(ActivityMiddleware(app, activity), review_token)
