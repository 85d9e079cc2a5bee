"""The bodies of the daemon's HTTP API that are not domain models of their own.

Clients import this module, never :mod:`mnemo.daemon.service` (which pulls in the store).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.curated import BUDGET_CHARS
from mnemo.episodes import ID_PATTERN, NAME_CHARS, NAMESPACE_PATTERN, AppendResult, EpisodeIn
from mnemo.memories import MAX_MEMORY_CHARS, MAX_W_CHARS, Memory
from mnemo.vocabulary import KeepAction, KeepScope, MemoryType

MAX_REASON_CHARS = 500
MAX_BODY_BYTES = 64 * 1024 * 1024  # a request's body; past it, 413 before it is read whole
MAX_KEEP_CHARS = max(BUDGET_CHARS.values())
WORKSPACE_PATTERN = rf"^workspace:{NAME_CHARS}{{1,120}}$"


class Health(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    pid: int
    store: str
    # What the daemon's settings were resolved from (mnemo.paths.inputs_digest), and the one
    # setting a client needs of them: a client with the same digest need not load its own.
    inputs: str = ""
    request_timeout_s: float = 0.0


class ModelSpend(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    prompt_tokens: int
    completion_tokens: int
    calls: int


class ModelStatus(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint: str = Field(description="The configured endpoint, password removed ('' when none).")
    model: str
    tokens_today: int = Field(description="Tokens spent today (UTC), all models.")
    daily_cap: int = Field(description="llm_daily_token_cap (0: none).")
    resumes_at: datetime | None = Field(description="When model work resumes, if today's cap is spent.")
    by_model: list[ModelSpend]


class DistillStatus(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(description="Whether a language model is configured (llm_url).")
    running: str = Field(description="The session being distilled now ('' when none).")
    batches_done: int = Field(description="Batches finished since the daemon started.")
    memories_added: int = Field(description="Memories those batches added.")
    paused_until: datetime | None = Field(description="Model work waits until then (cap spent, or back-off).")
    last_error: str = Field(description="Why the last attempt failed ('' after a success).")
    failed_batches: int = Field(
        description="Batches whose extraction stayed unusable (stored, never retried)."
    )
    last_failure: str = Field(description="The newest failed batch's error.")


class DistillRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session: Annotated[str, Field(min_length=1, max_length=500)]


class DistillQueued(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    queued: bool
    reason: str = ""


class JudgeLogEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    batch: str
    session: str
    namespace: str
    memory: str = Field(description="The judged memory's id (stored only when the action is add or close).")
    action: str = Field(description="add, merge, close or episodes_only.")
    target: str = Field(description="The memory merged into ('' unless merge).")
    closes: list[str]
    reason: str
    detail: dict[str, object] = Field(description="The memory, each question's probabilities, the guard.")


class JudgeLog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    entries: list[JudgeLogEntry]


class Status(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    pid: int
    store: str
    started_at: datetime
    uptime_s: float
    schema_version: int
    episodes: int
    memories: dict[str, int]
    entities: int
    embedder: str = Field(description="The embedding model recall uses ('none' when none is installed).")
    index_ready: bool = Field(description="Whether the in-RAM index has been built from the store.")
    index_build_s: float | None = Field(
        default=None, description="How long the start-up index build took (None while it runs)."
    )
    vector_graphs: list[str] = Field(
        default_factory=list,
        description="Each index's vector graph at the build (adopted from the last run, built, saved).",
    )
    embedding_backlog: int = Field(description="Memories and episode passages still waiting for a vector.")
    language_model: ModelStatus
    distillation: DistillStatus


class AppendRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episodes: list[EpisodeIn]


class AppendResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    results: list[AppendResult]


class ForgetRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON_CHARS)]


class KeepRequest(BaseModel):
    """An edit of a curated set (the ``keep`` tool)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: KeepScope
    action: KeepAction
    content: Annotated[str, Field(max_length=MAX_KEEP_CHARS)] = ""
    old_text: Annotated[str, Field(max_length=MAX_KEEP_CHARS)] = ""
    workspace: Annotated[
        str | None, Field(pattern=WORKSPACE_PATTERN, description="The project's workspace:<id>.")
    ] = None


class KeptSet(BaseModel):
    """A curated set as it stands."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: KeepScope
    owner: str = Field(description="workspace:<id> for a project, person:<name> for a user.")
    entries: list[str]
    used_chars: int
    budget_chars: int
    version: int = Field(description="How many times the set was changed (0: never).")


class KeepResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    message: str = Field(description="What the edit did.")
    kept: KeptSet


class KeptSets(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    project: KeptSet | None = Field(description="The workspace's set (null when no workspace was given).")
    user: KeptSet


class KeepImportRequest(BaseModel):
    """A project set read from its file, to become the set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workspace: Annotated[str, Field(pattern=WORKSPACE_PATTERN)]
    entries: Annotated[list[Annotated[str, Field(max_length=MAX_KEEP_CHARS)]], Field(max_length=500)]


class ReviewEdit(BaseModel):
    """Changes to a memory under review; a field left out (null) stays as it is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: Annotated[str | None, Field(min_length=1, max_length=MAX_MEMORY_CHARS)] = None
    type: MemoryType | None = None
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None
    why: Annotated[str | None, Field(max_length=MAX_W_CHARS)] = None
    how: Annotated[str | None, Field(max_length=MAX_W_CHARS)] = None


class ReviewAction(BaseModel):
    """approve (with optional edits), reject (with a reason), or edit a memory under review."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    action: Literal["approve", "reject", "edit"]
    edit: ReviewEdit | None = None
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)] = ""


class ReviewQueue(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: str = Field(description="The status listed: candidate (the queue) or active (approved).")
    memories: list[Memory]
    policy: str = Field(description="approval_policy: auto or review.")


class ReviewUrl(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(description="The review page's address with this user's secret ('' when not served).")
    reason: str = Field(default="", description="Why there is no page, when url is ''.")
