"""The daemon process: take the daemon lock, open the store, serve HTTP on the unix socket.

Run in the foreground with ``mnemo daemon run`` (clients start it detached through
:mod:`mnemo.client.launcher`). It exits on SIGTERM/SIGINT, on ``POST /v1/shutdown``, or after
``daemon_idle_s`` with no requests and no pending work. A start that fails (store locked or
unreadable, bad settings) is written to the start-failure file for the client that launched it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import logging.handlers
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from mnemo.api.review import ReviewUrl
from mnemo.config import Settings
from mnemo.daemon.app import Activity, build_app
from mnemo.daemon.review_page import TOKEN_FILE, new_token
from mnemo.daemon.rundir import accepts_connections, ensure_private_dir, try_lock
from mnemo.daemon.runtime import Daemon
from mnemo.errors import MnemoError

logger = logging.getLogger(__name__)
LOCK_WAIT_S = 10.0
LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


class _BoundedHTTP(H11Protocol):
    """uvicorn's HTTP/1.1, with a bound on how long a request may take to arrive whole, head and
    body: ``read_timeout_s`` from the connection's opening, or from the first bytes of a request
    on a kept-alive one (pipelined behind another too). Past it the daemon answers 408 (unless it
    has started answering) and closes the connection: half a request, or a Content-Length the body
    never reaches, does not hold a connection open forever. An idle kept-alive connection is
    uvicorn's keep-alive's."""

    read_timeout_s = 30.0
    _read_timer: asyncio.TimerHandle | None = None
    _has_served = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._sync_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._sync_timer()

    def on_response_complete(self) -> None:
        self._has_served = True
        super().on_response_complete()  # may parse a pipelined request from what is buffered
        self._sync_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None
        super().connection_lost(exc)

    def _is_waiting_on_client(self) -> bool:
        """Whether a request has begun to arrive and is not whole (or none came yet at all)."""
        state, (buffered, _) = self.conn.their_state, self.conn.trailing_data
        if state is h11.SEND_BODY:
            return True
        if state is h11.IDLE:
            return bool(buffered) or not self._has_served
        return bool(buffered)  # the next request's first bytes, behind one being answered

    def _sync_timer(self) -> None:
        if not self._is_waiting_on_client():
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None
        elif self._read_timer is None:
            self._read_timer = self.loop.call_later(self.read_timeout_s, self._timed_out)

    def _timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing() or not self._is_waiting_on_client():
            return
        state = self.conn.their_state
        if state is not h11.IDLE and state is not h11.SEND_BODY and not self.cycle.response_complete:
            self._sync_timer()  # an answer is under way for the request before: let it finish first
            return
        logger.info("a request did not arrive whole within %.0f s; connection closed", self.read_timeout_s)
        if state is h11.IDLE or not self.cycle.response_started:
            message = f"the request did not arrive whole within {self.read_timeout_s:g} s"
            body = json.dumps({"error": {"type": "InputError", "message": message}}).encode()
            head = (
                "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self.transport.write(head.encode("ascii") + body)
        self.transport.close()


def _bounded_http(read_timeout_s: float) -> type[H11Protocol]:
    return type("BoundedHTTP", (_BoundedHTTP,), {"read_timeout_s": read_timeout_s})


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Exit gracefully on SIGTERM/SIGINT and return normally, so the daemon's cleanup runs.

        uvicorn's own version re-raises the captured signal after serving, which kills the
        process before the socket and pid file are removed.
        """
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def configure_file_logging(settings: Settings) -> None:
    settings.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        settings.log_path, maxBytes=10 * 1024 * 1024, backupCount=3, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(settings.log_level)


def run_daemon(settings: Settings) -> int:
    """Serve until told to stop or idle; return the process exit code."""
    ensure_private_dir(settings.run_dir)
    # A daemon that is shutting down still holds the lock for a moment; wait it out rather than
    # leave the client that started us with nothing to talk to. One that serves (or comes up
    # while we wait: two spawners raced) is left to serve: taking over once it stops would be a
    # daemon nobody asked for.
    deadline = time.monotonic() + LOCK_WAIT_S
    while (lock_fd := try_lock(settings.daemon_lock_path)) is None:
        if time.monotonic() > deadline or accepts_connections(settings.socket_path, timeout_s=0.5):
            logger.info("another daemon holds %s; exiting", settings.daemon_lock_path)
            return 0
        time.sleep(0.05)
    try:
        return _serve_holding_lock(settings)
    except Exception as exc:  # top level: tell a waiting launcher instead of letting it time out
        logger.exception("daemon failed")
        _write_start_failure(settings.start_failure_path, f"unexpected error in the daemon: {exc!r}")
        return 1
    finally:
        os.close(lock_fd)


def _serve_holding_lock(settings: Settings) -> int:
    settings.start_failure_path.unlink(missing_ok=True)
    daemon = Daemon(settings)
    logger.info(
        "daemon %d serving %s on %s", os.getpid(), settings.store_dsn_for_display, settings.socket_path
    )
    try:
        settings.pid_path.write_text(f"{os.getpid()}\n")
        settings.socket_path.unlink(missing_ok=True)  # a stale socket from a killed daemon
        activity = Activity()
        server: _Server | None = None

        def request_exit() -> None:
            if server is not None:
                server.should_exit = True

        sockets, review_url = _bind(settings)
        token = new_token(settings.run_dir) if review_url is not None else ""
        url = None if review_url is None else ReviewUrl(url=f"{review_url}#token={token}")
        app = build_app(
            daemon,
            activity=activity,
            idle_s=settings.daemon_idle_s,
            request_exit=request_exit,
            review_token=token,
            review_url=url or ReviewUrl(url="", reason="its port could not be bound (see the daemon's log)"),
        )
        server = _Server(
            uvicorn.Config(
                app=app,
                log_config=None,
                access_log=False,
                lifespan="on",
                http=_bounded_http(settings.daemon_read_timeout_s),
                timeout_graceful_shutdown=10,
                # Clients keep their connection between requests (mnemo.client.http); closing idle
                # ones after uvicorn's 5 s would race a client's next request. They close at exit.
                timeout_keep_alive=int(settings.daemon_idle_s) + 60,
            )
        )
        try:
            anyio.run(server.serve, sockets)
        except SystemExit:  # uvicorn's answer to a lifespan that failed: the daemon did not start
            if daemon.start_error is None:
                raise
    finally:
        settings.socket_path.unlink(missing_ok=True)
        (settings.run_dir / TOKEN_FILE).unlink(missing_ok=True)
        settings.pid_path.unlink(missing_ok=True)
        logger.info("daemon %d stopped", os.getpid())
    error = daemon.start_error
    if error is None:
        return 0
    if isinstance(error, MnemoError):
        logger.error("cannot start: %s", error)
        _write_start_failure(settings.start_failure_path, str(error))
    else:
        logger.error("daemon failed to start", exc_info=error)
        _write_start_failure(settings.start_failure_path, f"unexpected error in the daemon: {error!r}")
    return 1


def _bind(settings: Settings) -> tuple[list[socket.socket], str | None]:
    """The API's unix socket and the review page's TCP socket on 127.0.0.1, bound, not yet
    listening (uvicorn listens once the app has started, so clients are refused until then);
    the page's address, or None when its port could not be bound."""
    api = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    api.bind(str(settings.socket_path))
    os.chmod(settings.socket_path, 0o666)  # as uvicorn makes it: the 0700 directory is the guard
    page = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    page.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        page.bind(("127.0.0.1", settings.review_port))
    except OSError as exc:
        page.close()
        logger.warning("no review page: cannot bind 127.0.0.1:%d (%s)", settings.review_port, exc)
        return [api], None
    port = page.getsockname()[1]
    logger.info("review page on http://127.0.0.1:%d/review (mnemo review url)", port)
    return [api, page], f"http://127.0.0.1:{port}/review"


def _write_start_failure(path: Path, message: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(message + "\n", encoding="utf-8")
    tmp.replace(path)
