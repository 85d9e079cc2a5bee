"""Episodes: everything that reaches mnemo, immutable once stored.

A client sends :class:`EpisodeIn`; :class:`EpisodeIntake` validates it (size cap, namespace),
passes the text through the redaction hook and gives it an id when the client did not, producing
the :class:`Episode` that is stored. Re-sending an episode with the same id stores it once.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mnemo.clock import as_stored, utc_now
from mnemo.errors import TooLargeError

# A namespace's name: no spaces and no control characters (a NUL once made a person:a\x00b).
NAME_CHARS = r"[^\s\x00-\x1f\x7f-\x9f]"
NAMESPACE_PATTERN = rf"^(person|workspace):{NAME_CHARS}{{1,120}}$"
MAX_TURN = 10_000_000
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-/]{0,199}$"
_NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)


class EpisodeKind(StrEnum):
    PROMPT = "prompt"
    RESPONSE = "response"
    TOOL_RESULT = "tool_result"
    STEP = "step"
    NOTE = "note"
    COMPACTION = "compaction"


class Role(StrEnum):
    """Who produced the episode, in conversation terms (``who`` names them)."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


KIND_BY_ROLE = {
    Role.USER: EpisodeKind.PROMPT,
    Role.ASSISTANT: EpisodeKind.RESPONSE,
    Role.TOOL: EpisodeKind.TOOL_RESULT,
    Role.SYSTEM: EpisodeKind.NOTE,
}


UtcDatetime = Annotated[datetime, AfterValidator(as_stored)]
Namespace = Annotated[str, Field(pattern=NAMESPACE_PATTERN, description="person:<name> or workspace:<id>")]
ShortText = Annotated[str, Field(max_length=500)]


class EpisodeIn(BaseModel):
    """An episode as a client sends it. Only ``text`` is required."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)] | None = Field(
        default=None, description="Client-supplied id; re-sending the same id stores one episode."
    )
    kind: EpisodeKind | None = Field(default=None, description="Defaults from role (user → prompt …).")
    text: str = Field(min_length=1)
    who: ShortText = ""
    role: Role = Role.USER
    session: ShortText = ""
    turn: int | None = Field(default=None, ge=0, le=MAX_TURN)
    time: UtcDatetime | None = None
    namespace: Namespace | None = None
    client: ShortText = ""
    workspace: ShortText = ""
    cwd: Annotated[str, Field(max_length=4096)] = ""
    branch: ShortText = ""
    host: ShortText = ""


class Episode(BaseModel):
    """A stored episode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: EpisodeKind
    text: str
    who: str
    role: Role
    namespace: str
    session: str
    turn: int | None
    time: UtcDatetime
    received_at: UtcDatetime
    client: str
    workspace: str
    cwd: str
    branch: str
    host: str


class AppendResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = Field(description="The episode's id; null when it was refused.")
    is_new: bool = Field(description="False when an episode with this id was already stored.")
    is_changed: bool = Field(
        default=False,
        description="The stored episode with this id has another text (it is kept: episodes never change).",
    )
    error: str | None = Field(default=None, description="Why this episode was refused; nothing was stored.")


class Redactor(Protocol):
    """Removes secrets from text before anything is stored or sent to a model
    (:class:`mnemo.secrets.SecretRedactor`)."""

    def redact(self, text: str) -> str: ...


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a visible note (what hooks and importers record
    of an over-long tool output, rather than lose the episode)."""
    if len(text) <= limit:
        return text
    note = f"\n[… cut by mnemo at {limit:,} characters]"
    return text[: limit - len(note)] + note


def new_id(prefix: str) -> str:
    """A time-ordered id: milliseconds since the epoch, then 40 random bits."""
    return f"{prefix}{time.time_ns() // 1_000_000:012x}{os.urandom(5).hex()}"


class EpisodeIntake:
    """Turns what clients send into episodes ready to store."""

    def __init__(self, *, max_chars: int, default_namespace: str, redactor: Redactor) -> None:
        self._max_chars = max_chars
        self._default_namespace = default_namespace
        self._redactor = redactor

    def redact(self, text: str) -> str:
        return self._redactor.redact(text)

    def accept(self, incoming: EpisodeIn) -> Episode:
        if len(incoming.text) > self._max_chars:
            raise TooLargeError(
                f"episode text has {len(incoming.text):,} characters; the cap is {self._max_chars:,} "
                "(setting max_episode_chars)"
            )
        now = utc_now()
        return Episode(
            id=incoming.id or new_id("ep_"),
            kind=incoming.kind or KIND_BY_ROLE[incoming.role],
            text=self._redactor.redact(incoming.text),
            who=incoming.who,
            role=incoming.role,
            namespace=incoming.namespace or self._default_namespace,
            session=incoming.session,
            turn=incoming.turn,
            time=incoming.time or now,
            received_at=now,
            client=incoming.client,
            workspace=incoming.workspace,
            cwd=incoming.cwd,
            branch=incoming.branch,
            host=incoming.host,
        )


def is_namespace(value: str) -> bool:
    return bool(_NAMESPACE_RE.fullmatch(value))
