"""The memory browser's questions and answers (the daemon's page, ``/review/api/…``): search with
filters, a memory's whole page, the overview."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.api.recall import MAX_QUERY_CHARS, EpisodeHit, MemoryHit
from mnemo.api.stats import Stats
from mnemo.api.status import Status
from mnemo.api.writer import JudgeLogEntry
from mnemo.episodes import Episode, Namespace, UtcDatetime
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryType

# What the status filter offers, and the statuses each stands for; "recall" is what recall
# searches: current memories, the closed ones behind them.
STATUS_FILTERS: dict[str, tuple[str, ...]] = {
    "recall": ("active", "closed"),
    "current": ("active",),
    "closed": ("closed",),
    "forgotten": ("forgotten",),
    "candidates": ("candidate",),
    "rejected": ("rejected", "archived"),
}
StatusFilter = Literal["recall", "current", "closed", "forgotten", "candidates", "rejected"]


class BrowseRequest(BaseModel):
    """A question answered by recall (or, with none, the newest memories) within the filters;
    ``since``/``until`` bound when a memory last changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] = ""
    status: StatusFilter = "recall"
    types: Annotated[list[MemoryType], Field(max_length=8)] | None = None
    namespace: Namespace | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 20


class BrowseResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["recall", "search", "list"] = Field(
        description="recall: exactly what `mnemo recall` answers; search: recall's ranking among "
        "other statuses; list: no question, newest first."
    )
    memories: list[MemoryHit]
    episodes: list[EpisodeHit] = []


class Version(BaseModel):
    """One version of a memory, and what it changed from the one before."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: Memory
    changed: list[str] = Field(description="The fields that differ from the version before.")
    by: str = Field(description="Who made it: the writer, a person, a forget, the review queue's ageing…")
    batch: str = ""
    committed_at: datetime


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    injected: int = Field(description="Blocks of the person's sessions that carried it.")
    sessions: int
    last_injected: datetime | None
    used: int
    unused: int = Field(description="Clearly unused.")
    unclear: int
    suppressed: list[str] = Field(
        default_factory=list,
        description="The workspaces where it is no longer injected (clearly unused there, not used since).",
    )


class EntityShown(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    role: str
    aliases: list[str]


class MemoryPage(BaseModel):
    """Everything mnemo knows of one memory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: Memory
    versions: list[Version]
    entities: list[EntityShown]
    closed_by: Memory | None = Field(description="The memory that closed it (its current version).")
    closes: list[Memory] = Field(description="The memories it closed.")
    decisions: list[JudgeLogEntry] = Field(
        description="The judge's decisions that judged, merged or closed it."
    )
    sources: list[Episode]
    usage: Usage
    outdated: str = Field(default="", description="Why its code may be outdated ('' when not flagged).")
    code_check: str = Field(
        default="",
        description="When its file changed and still holds everything it names: the check's note "
        "(refreshed, or followed to a new path).",
    )


class WriterState(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool
    lease: str
    last_batch: str = Field(description="The newest batch: its session, status and time ('' before any).")
    failed_batches: int
    last_failure: str
    last_error: str


class Overview(BaseModel):
    """What the overview page shows; its figures are ``mnemo stats --json``'s and ``mnemo status
    --json``'s own."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    person: str
    memories: dict[str, int] = Field(description="Memories by status.")
    namespaces: dict[str, int] = Field(description="Memories (any status) by namespace.")
    episodes: int
    stats: Stats
    status: Status
    writer: WriterState
