"""The one exception hierarchy of mnemo.

Everything mnemo raises on purpose derives from :class:`MnemoError`::

    MnemoError
    ├── ConfigError              a setting is malformed or unknown (names the key and its source)
    ├── InputError               a caller sent something we refuse (names the field)      → HTTP 422
    │   ├── TooLargeError        content over a configured size cap                        → HTTP 413
    │   ├── SecretError          content holding a credential (names its kind, never its value)
    │   └── OverBudgetError      a keep edit that would pass its set's character budget
    ├── NotAllowedError          a write the client's mode forbids (plan mode)             → HTTP 403
    ├── NotFoundError            an id that no stored row has                              → HTTP 404
    ├── NotAvailableError        a capability this version does not have yet              → HTTP 501
    ├── NotReadyError            the daemon is still building its index from the store    → HTTP 503
    ├── StoreError               the store cannot be opened or did not answer             → HTTP 503
    │   └── StoreLockedError     another process holds the embedded store's directory
    ├── DaemonError              the daemon could not be started or reached
    │   └── DaemonUnavailableError  nothing answers on the socket
    └── ModelError               the language model endpoint failed or answered unusably   → HTTP 502
        ├── ModelRefusedError    the endpoint refused this request as it is (HTTP 400, 413, 422;
        │                        ``overflow``: it passed the model's context): asking again fails too
        ├── ModelTimeoutError    no answer within the time the request was given
        └── TokenCapError        a daily cap or the host's usage limit is reached; work waits  → HTTP 429

Each edge translates: the daemon's Starlette handlers map these to HTTP statuses with a JSON body
``{"error": {"type": ..., "message": ...}}``; the daemon client maps that body back to the same
class; the MCP server turns them into the SDK's ``ToolError`` so the model reads the message; the
CLI prints the message and exits non-zero. Messages are written for the person (or model) who
has to act on them. Standard library only (the ``mnemo`` command reads answers with it);
pydantic's validation errors become InputError in :mod:`mnemo.validation`.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any


class MnemoError(Exception):
    """Base of every error mnemo raises on purpose."""

    http_status = 500


class ConfigError(MnemoError):
    """A setting is malformed, unknown, or points somewhere unusable."""

    http_status = 500


class InputError(MnemoError):
    """The caller sent input mnemo refuses; nothing was stored."""

    http_status = 422


class TooLargeError(InputError):
    """Content exceeds a configured size cap; nothing was stored."""

    http_status = 413


class SecretError(InputError):
    """Content holds what looks like a credential; nothing was stored."""


class OverBudgetError(InputError):
    """An edit would take a curated set over its character budget; nothing was changed."""


class NotAllowedError(MnemoError):
    """The client is in a mode that forbids this (a write in plan mode); nothing was changed."""

    http_status = 403


class NotFoundError(MnemoError):
    """No stored row has the requested id."""

    http_status = 404


class NotAvailableError(MnemoError):
    """The capability exists in the interface but not yet in this version."""

    http_status = 501


class StoreError(MnemoError):
    """The store could not be opened, migrated, or did not answer."""

    http_status = 503


class StoreLockedError(StoreError):
    """Another process holds the embedded store (chDB allows one process per directory)."""


class NotReadyError(MnemoError):
    """The daemon answers but is still building its in-RAM index; the request can be retried."""

    http_status = 503


class DaemonError(MnemoError):
    """The daemon could not be started, or answered with something unexpected."""

    http_status = 502


class DaemonUnavailableError(DaemonError):
    """Nothing answers on the daemon's socket."""


class ModelError(MnemoError):
    """The configured language model endpoint failed, timed out, or answered unusably."""

    http_status = 502


class ModelRefusedError(ModelError):
    """The endpoint refused this request as it is (HTTP 400, 413 or 422): asking the same again
    fails the same way, so the writer asks with less (``overflow``: the request passed the
    model's context) or fails the batch with this reason and moves on."""

    def __init__(self, message: str, *, overflow: bool = False) -> None:
        super().__init__(message)
        self.overflow = overflow


class ModelTimeoutError(ModelError):
    """The model gave no answer within the time the request was given (``llm_timeout_s``, or
    more where the model's measured speed needs more for a long request)."""


class StoppedError(ModelError):
    """The daemon is stopping: a model call under way was left unanswered, and its batch is
    redone at the next start (its extraction reused when it was kept)."""

    http_status = 503


class TokenCapError(ModelError):
    """Today's token or call cap (llm_daily_token_cap, llm_daily_call_cap) is spent, or the model's
    host answered that its usage limit is reached: model work waits until ``resumes_at`` (when
    known; else the next UTC day) and the batch is redone then."""

    http_status = 429

    def __init__(self, message: str, resumes_at: datetime | None = None) -> None:
        super().__init__(message)
        self.resumes_at = resumes_at


ERRORS_BY_NAME: dict[str, type[MnemoError]] = {
    cls.__name__: cls
    for cls in (
        MnemoError,
        ConfigError,
        InputError,
        TooLargeError,
        SecretError,
        OverBudgetError,
        NotAllowedError,
        NotFoundError,
        NotAvailableError,
        NotReadyError,
        StoreError,
        StoreLockedError,
        DaemonError,
        DaemonUnavailableError,
        ModelError,
        ModelRefusedError,
        ModelTimeoutError,
        TokenCapError,
        StoppedError,
    )
}


def error_from_answer(status: int, body: bytes) -> MnemoError:
    """The error a daemon answer of HTTP ``status`` carries, as the class the daemon raised."""
    try:
        payload: Any = json.loads(body)
        error = payload["error"]
        cls = ERRORS_BY_NAME.get(str(error["type"]), MnemoError)
        return cls(str(error["message"]))
    except (ValueError, KeyError, TypeError):
        text = body[:500].decode("utf-8", "replace")
        return DaemonError(f"the mnemo daemon answered {status}: {text}")
