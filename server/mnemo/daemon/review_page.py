"""The review page: the daemon serves it on 127.0.0.1, for this user only.

The daemon listens on its unix socket (the API, reachable only by the user: the directory is
0700) and, for the page, on a TCP port of 127.0.0.1 (``review_port``; 0: one the system picks).
Any local user can connect to a TCP port, so everything that arrives over TCP goes through
:class:`ReviewGate`:

- only ``/review`` paths exist there (the API is never reachable over TCP);
- the ``Host`` header must name 127.0.0.1 or localhost (a page on another site cannot reach it by
  DNS rebinding);
- the page's HTML (``GET /review``) holds no data and is served to anyone local; everything else
  (``/review/api/…``) must carry the per-user secret in the ``X-Mnemo-Review`` header.
  ``mnemo review url`` prints (``--open`` opens) the page's address with ``#token=…`` (a
  fragment: no server ever receives it; ``--open`` hands the browser a private file that
  forwards there, not the address, which any local user could read on its command line); the page
  keeps the token in sessionStorage (scoped to this origin, port included — unlike a cookie,
  which every port of 127.0.0.1 would receive) and drops it from the address bar. A header is
  also what no form or cross-site request can send without a preflight the page never allows
  (no CORS), so it stands against request forgery too.

The secret is made at the daemon's start (``secrets.token_urlsafe``) and written to
``run/review.token`` (0600) for the CLI; a restarted daemon has a new one.

The page is the memory browser: one HTML document with its own script and styles (no network,
no CDN) over ``/review/api/…``, in four views:

- the overview (``mnemo stats``' and ``mnemo status``' figures, the usage chart, the writer);
- search: a question answered by the real recall, with each score's components, filtered by
  type, namespace, status and time (:mod:`mnemo.daemon.browsing`);
- a memory's page: its six W, entities, every version and who made it, what closed it and what
  it closed, the judge's decisions, its source episodes opened in context, its usage;
- the review queue: the pending candidates with edit-before-approve, approve and reject, each
  source turn shown on demand; the approved memories by namespace, editable and deletable
  (forget); a form to add a memory by hand (a person's, so it is active at once); the approval
  settings.

Keyboard: ``1`` overview, ``2`` (or ``/``) search, ``3`` review, Escape back; ``j``/``k`` move between
results or candidates; on a candidate, ``a`` approves, ``r`` rejects, ``e`` edits; Tab moves between
fields, buttons and links. Every response carries a Content-Security-Policy that lets only the
page's own script run (a nonce made per response): a stored text that escaped the page's escaping
still could not run.
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
import secrets
from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemo.api.audit import AuditApply, AuditRequest
from mnemo.api.browse import BrowseRequest
from mnemo.api.memories import ForgetRequest
from mnemo.api.review import ReviewAction
from mnemo.api.stats import UnsuppressRequest
from mnemo.daemon.messages import answer, parse, whole_number
from mnemo.daemon.runtime import Daemon
from mnemo.errors import NotFoundError
from mnemo.memories import RememberRequest
from mnemo.paths import write_private
from mnemo.vocabulary import MemoryStatus, MemoryType

logger = logging.getLogger(__name__)
SECRET_HEADER = "x-mnemo-review"
TOKEN_FILE = "review.token"


def new_token(run_dir: Path) -> str:
    """A fresh secret for this daemon's page, written for the CLI (0600)."""
    token = secrets.token_urlsafe(32)
    write_private(str(run_dir / TOKEN_FILE), token + "\n")
    return token


class ReviewGate:
    """Lets through, over TCP, only the page's paths, for a local Host, with the secret."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] == "lifespan" or (server is not None and server[1] is None):  # the unix socket
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope) if scope["type"] == "http" else (404, "not found")
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, message = refusal
        logger.info("review page: refused %s %s: %s", scope.get("method"), scope.get("path"), message)
        await Response(message + "\n", status_code=status, media_type="text/plain")(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        path: str = scope.get("path", "")
        if path != "/review" and not path.startswith("/review/api/"):
            return 404, "not found"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "").rsplit(":", 1)[0].strip("[]")
        if host not in ("127.0.0.1", "localhost"):
            return 403, "this page answers only on 127.0.0.1"
        if path == "/review":
            return None if scope.get("method") in ("GET", "HEAD") else (405, "method not allowed")
        offered = headers.get(SECRET_HEADER, "").encode("latin-1")
        if not offered or not hmac.compare_digest(offered, self._token.encode("ascii")):
            return 403, "open the review page with `mnemo review url --open` (it carries your secret)"
        return None


def routes(daemon: Daemon) -> list[Route]:
    """The page's routes (mounted in the daemon's app; reached over TCP through the gate); they
    use the daemon's services once it runs."""
    settings = daemon.settings

    async def page(request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        page = (
            _page()
            .replace("__TYPES__", json.dumps([t.value for t in MemoryType]))
            .replace("__NONCE__", nonce)
        )
        # No caching, no referrer (the address may still hold the token when the page loads).
        headers = {
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
            # Only the page's own script runs; nothing is fetched from elsewhere; never inside
            # another page's frame (the page acts on keys: a framed one could be driven).
            "Content-Security-Policy": (
                f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
                "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'"
            ),
            "X-Frame-Options": "DENY",
        }
        return HTMLResponse(page, headers=headers)

    async def search(request: Request) -> Response:
        return answer(await daemon.browsing.search(await parse(request, BrowseRequest)))

    async def memory_page(request: Request) -> Response:
        return answer(await daemon.browsing.memory_page(request.path_params["id"]))

    async def namespaces(request: Request) -> Response:
        return JSONResponse({"namespaces": await daemon.calls(daemon.store.memory_namespaces)})

    async def overview(request: Request) -> Response:
        return answer(await daemon.browsing.overview(whole_number(request, "days", 30, 3_660)))

    async def state(request: Request) -> Response:
        pending = await daemon.reviews.queue(MemoryStatus.CANDIDATE, None, 500)
        approved = await daemon.reviews.queue(MemoryStatus.ACTIVE, None, 1_000)
        return JSONResponse(
            {
                "person": settings.namespace_of_person,
                "candidates": [m.model_dump(mode="json") for m in pending.memories],
                "approved": [m.model_dump(mode="json") for m in approved.memories],
                "settings": {
                    "approval_policy": settings.approval_policy,
                    "auto_approve_min_seen": settings.auto_approve_min_seen,
                    "auto_approve_min_confidence": settings.auto_approve_min_confidence,
                    "config_file": str(settings.config_file),
                },
            }
        )

    async def act(request: Request) -> Response:
        action = await parse(request, ReviewAction)
        return answer(await daemon.reviews.act(action))

    async def forget(request: Request) -> Response:
        body = await parse(request, ForgetRequest)
        return answer(await daemon.remembering.forget(body.id, body.reason))

    async def add(request: Request) -> Response:
        remembered = await parse(request, RememberRequest)
        return answer(await daemon.remembering.remember(remembered, manual=True))

    async def audit(request: Request) -> Response:
        return answer(await daemon.auditing.report(await parse(request, AuditRequest)))

    async def audit_apply(request: Request) -> Response:
        return answer(await daemon.auditing.apply(await parse(request, AuditApply)))

    async def unsuppress(request: Request) -> Response:
        body = await parse(request, UnsuppressRequest)
        return answer(await daemon.ledger.unsuppress(body.memory, settings.namespace_of_person))

    async def episode(request: Request) -> Response:
        """The turn an episode belongs to (its episode marked), for the page to show."""
        found = await daemon.calls(daemon.store.get_episodes, [request.path_params["id"]])
        if not found:
            raise NotFoundError(f"no episode has the id {request.path_params['id']!r}")
        e = found[0]
        turn = [e]
        if e.session and e.turn is not None:
            store = daemon.store
            read = functools.partial(
                store.session_episodes, e.session, from_turn=e.turn, to_turn=e.turn, namespace=None, limit=50
            )
            turn = await daemon.calls(read)
        return JSONResponse(
            {
                "id": e.id,
                "session": e.session,
                "turn": e.turn,
                "episodes": [x.model_dump(mode="json") for x in turn],
            }
        )

    return [
        Route("/review", page, methods=["GET"]),
        Route("/review/api/state", state, methods=["GET"]),
        Route("/review/api/act", act, methods=["POST"]),
        Route("/review/api/forget", forget, methods=["POST"]),
        Route("/review/api/add", add, methods=["POST"]),
        Route("/review/api/episode/{id:path}", episode, methods=["GET"]),
        Route("/review/api/search", search, methods=["POST"]),
        Route("/review/api/memory/{id:path}", memory_page, methods=["GET"]),
        Route("/review/api/overview", overview, methods=["GET"]),
        Route("/review/api/namespaces", namespaces, methods=["GET"]),
        Route("/review/api/audit", audit, methods=["POST"]),
        Route("/review/api/audit/apply", audit_apply, methods=["POST"]),
        Route("/review/api/unsuppress", unsuppress, methods=["POST"]),
    ]


@cache
def _page() -> str:
    return (Path(__file__).parent / "review_page.html").read_text(encoding="utf-8")
