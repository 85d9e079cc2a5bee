"""`mnemo audit`: the health of a store — its findings, and the action each calls for."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import ID_PATTERN, NAMESPACE_PATTERN

FindingKind = Literal["junk", "duplicate", "superseded", "code", "unused", "credential"]
FINDING_KINDS: tuple[FindingKind, ...] = ("junk", "duplicate", "superseded", "code", "unused", "credential")
AuditActionName = Literal["archive", "merge", "close", "review", "forget"]
# What each kind of finding calls for (the action applied in bulk).
ACTIONS: dict[str, AuditActionName] = {
    "junk": "archive",  # stays in the episodes and the memory's history; recall no longer finds it
    "duplicate": "merge",  # the second folds into the first: its sources added, it is closed
    "superseded": "close",  # the older is closed by the newer, as the judge would have
    "code": "review",  # a person reads it against the code (the memory browser)
    "unused": "archive",
    "credential": "forget",  # its text hidden in the new version; earlier versions keep it
}


class AuditRequest(BaseModel):
    """What to look at: these kinds, in one namespace or all, unused counted over ``days``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kinds: list[FindingKind] = Field(default_factory=lambda: list(FINDING_KINDS))
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None
    days: Annotated[int, Field(ge=1, le=3_660)] = 30


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FindingKind
    memories: list[str] = Field(description="The memory it is about; for a pair, the one kept first.")
    texts: list[str] = Field(description="Each memory's statement, as the finding shows it.")
    statuses: list[str] = Field(description="Each memory's status (active or candidate).")
    namespace: str
    reason: str = Field(description="Why it is a finding, in words a person can check.")
    action: AuditActionName = Field(description="What the finding calls for.")


class AuditReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scanned: int = Field(description="Open memories (active or waiting) looked at.")
    days: int
    counts: dict[str, int] = Field(description="Findings by kind.")
    findings: list[Finding]


class AuditApply(BaseModel):
    """Apply a kind's action to its findings: those about ``memories`` (the first id of each), or
    all of that kind when empty. ``confirm`` must be true: a bulk change is never a default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FindingKind
    memories: Annotated[list[Annotated[str, Field(pattern=ID_PATTERN)]], Field(max_length=10_000)] = []
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None
    days: Annotated[int, Field(ge=1, le=3_660)] = 30
    confirm: bool = False


class AuditApplied(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FindingKind
    action: AuditActionName
    changed: list[str] = Field(description="Memories the action changed.")
    unchanged: list[str] = Field(description="Findings left as they were, and why (id: reason).")
