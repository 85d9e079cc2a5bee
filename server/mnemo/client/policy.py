"""What every client does around a request: refuse a body the daemon would refuse, read the
daemon's health, and decide whether a failed request may be sent again. Standard library only
(the command uses it)."""

from __future__ import annotations

import json

from mnemo.api import MAX_BODY_BYTES
from mnemo.client.http import ConnectionLostError, NotSentError, TransportError, UnixHTTP
from mnemo.errors import DaemonError, DaemonUnavailableError, TooLargeError

HEALTH_PATH = "/v1/health"


def within_cap(content: bytes) -> bytes:
    """``content``, or TooLargeError when it is over the daemon's cap on a body: before it is sent."""
    if len(content) > MAX_BODY_BYTES:
        raise TooLargeError(
            f"a request of {len(content):,} bytes is over the daemon's {MAX_BODY_BYTES:,} byte limit"
        )
    return content


def health_of(http: UnixHTTP, *, timeout_s: float) -> dict[str, object] | None:
    """``GET /v1/health`` through ``http``: the daemon's health, or None when nothing answers."""
    try:
        response = http.request("GET", HEALTH_PATH, timeout_s=timeout_s)
    except (TransportError, TimeoutError):
        return None
    if response.status != 200:
        return None
    try:
        health = json.loads(response.body)
    except ValueError:
        return None
    return health if isinstance(health, dict) else None


def unavailable(
    exc: NotSentError | ConnectionLostError, *, attempt: int, is_idempotent: bool
) -> DaemonError | None:
    """The error to raise for a request that failed on the way, or None to start the daemon and
    send it once more. A request never sent never reached the daemon; one whose connection was
    lost may come from a daemon that is dying (a killed process accepts on its socket until its
    last thread is gone), so only a request that is safe to repeat is sent again then."""
    is_unsent = isinstance(exc, NotSentError)
    if attempt < 2 and (is_unsent or is_idempotent):
        return None
    return DaemonUnavailableError(
        f"lost the connection to the mnemo daemon ({exc})"
        + ("" if is_unsent else "; the request may or may not have been applied")
    )


def timed_out(timeout_s: float) -> DaemonError:
    return DaemonError(
        f"the mnemo daemon did not answer within {timeout_s:.0f} s (setting request_timeout_s)"
    )
