"""The ``mnemo`` command's client: JSON in and out, synchronous, and on the way to a running
daemon nothing but the standard library.

A command a person types should answer as fast as git does, so the fast path loads neither
pydantic nor the settings: it finds the daemon's socket from the environment (:mod:`mnemo.paths`),
reads its health, and goes on when the daemon's settings were resolved from the same config
file and environment as this process would resolve (the digest in :mod:`mnemo.paths`).
Otherwise (no daemon, or one started with other settings) it loads the settings and goes the way
every client does (:func:`mnemo.client.launcher.ensure_daemon`: start the daemon, check that it
serves the configured store). The daemon validates every request; its errors come back as the
:class:`~mnemo.errors.MnemoError` subclass it raised.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mnemo.client.http import ConnectionLostError, NotSentError, UnixHTTP
from mnemo.client.policy import health_of, timed_out, unavailable, within_cap
from mnemo.errors import DaemonError, InputError, error_from_answer
from mnemo.paths import Layout, inputs_digest, layout

if TYPE_CHECKING:
    from mnemo.config import Settings

HEALTH_TIMEOUT_S = 2.0


class PlainClient:
    """``client.call("POST", "/v1/recall", {"query": …})`` → the answer's JSON."""

    def __init__(self) -> None:
        self.where: Layout = layout()
        self._http = UnixHTTP(self.where.socket_path)
        self._settings: Settings | None = None
        self._timeout_s: float | None = None

    def close(self) -> None:
        self._http.close()

    def settings(self) -> Settings:
        """The full settings (loaded on first use: pydantic, the config file)."""
        if self._settings is None:
            from mnemo.config import load_settings  # noqa: PLC0415 - the slow path only

            self._settings = load_settings()
        return self._settings

    def call(self, method: str, path: str, body: object = None, *, is_idempotent: bool = True) -> Any:
        """One request; the answer's JSON, or the daemon's error raised."""
        content = None if body is None else _encoded(body)
        for attempt in (1, 2):
            timeout_s = self._connect()
            try:
                response = self._http.request(method, path, content, timeout_s=timeout_s)
                break
            except TimeoutError:
                raise timed_out(timeout_s) from None
            except (NotSentError, ConnectionLostError) as exc:  # the daemon may have exited idle
                error = unavailable(exc, attempt=attempt, is_idempotent=is_idempotent)
                if error is not None:
                    raise error from None
                self._timeout_s = None
                self._ensure_started()
        if response.status >= 400:
            raise error_from_answer(response.status, response.body)
        try:
            return json.loads(response.body)
        except ValueError:
            raise DaemonError(f"unexpected answer from the mnemo daemon on {path}: not JSON") from None

    def _connect(self) -> float:
        """The request timeout, once the daemon is known to run with this process's settings."""
        if self._timeout_s is not None:
            return self._timeout_s
        health = health_of(self._http, timeout_s=HEALTH_TIMEOUT_S)
        if health is not None and health.get("inputs") == inputs_digest():
            timeout_s = health.get("request_timeout_s")
            if isinstance(timeout_s, int | float) and timeout_s > 0:
                self._timeout_s = float(timeout_s)
                return self._timeout_s
        return self._ensure_started()

    def _ensure_started(self) -> float:
        from mnemo.client.launcher import ensure_daemon  # noqa: PLC0415 - the slow path only

        settings = self.settings()
        ensure_daemon(settings)
        self._timeout_s = settings.request_timeout_s
        return self._timeout_s


def _encoded(body: object) -> bytes:
    """``body`` as the request's JSON; TooLargeError past the daemon's cap, before it is sent."""
    try:
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: bytes the terminal's encoding did not decode
        raise InputError("the input holds text that is not valid Unicode") from None
    return within_cap(content)
