"""Memories: distilled or explicitly remembered knowledge, stored as versioned rows.

A memory is never deleted: every change (forgotten, closed, merged) is a new version of the same
id; the store keeps the highest version as the current row.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mnemo.clock import utc_now
from mnemo.episodes import ID_PATTERN, Namespace, UtcDatetime
from mnemo.vocabulary import MemoryStatus, MemoryType

MAX_MEMORY_CHARS = 4_000
MAX_W_CHARS = 1_000
MAX_ENTITIES = 32


class Origin(StrEnum):
    EXPLICIT = "explicit"
    DISTILLED = "distilled"
    MANUAL = "manual"
    IMPORTED = "imported"  # from a file people keep: CLAUDE.md, AGENTS.md, an auto-memory


WText = Annotated[str, Field(max_length=MAX_W_CHARS)]


class EntityRef(BaseModel):
    """An entity this memory involves, with its role in it (subject, actor, location, …)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=120)]
    role: Annotated[str, Field(min_length=1, max_length=40)] = "subject"


class EntityIn(EntityRef):
    """An entity named in a remember request; its aliases are recorded for the entity."""

    aliases: Annotated[list[Annotated[str, Field(min_length=1, max_length=120)]], Field(max_length=16)] = []


class AnchoredFile(BaseModel):
    """A file a memory is about, as it was when the memory was written: its blob, and the symbols
    and values the memory names that the file held then."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Annotated[str, Field(max_length=1_000, description="Relative to the repository's root.")]
    blob: Annotated[str, Field(max_length=64)]
    symbols: Annotated[list[Annotated[str, Field(max_length=120)]], Field(max_length=8)] = []
    values: Annotated[list[Annotated[str, Field(max_length=60)]], Field(max_length=4)] = []


class CodeAnchor(BaseModel):
    """The code a memory is about: the commit checked out when it was written and the files."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    commit: Annotated[str, Field(max_length=64)]
    files: Annotated[list[AnchoredFile], Field(min_length=1, max_length=8)]


class RememberRequest(BaseModel):
    """An explicit memory to store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: Annotated[str, Field(min_length=1, max_length=MAX_MEMORY_CHARS)]
    type: MemoryType
    namespace: Namespace | None = None
    what: WText = ""
    who: WText = ""
    when: WText = ""
    where: WText = ""
    why: WText = ""
    how: WText = ""
    entities: Annotated[list[EntityIn], Field(max_length=MAX_ENTITIES)] = []
    session: Annotated[str, Field(max_length=500)] = ""
    # The caller's working directory (the CLI's, the MCP server's): in a git workspace, the memory
    # is anchored to the files it names (mnemo.code.anchors). Not a tool argument.
    cwd: Annotated[str, Field(max_length=4_096)] = ""


class Memory(BaseModel):
    """A memory as stored and returned: the six W, entities, sources, status and validity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    version: int
    type: MemoryType
    status: MemoryStatus
    namespace: str
    content: str
    what: str
    who: str
    when: str
    where: str
    why: str
    how: str
    entities: list[EntityRef]
    sources: list[str] = Field(description="Ids of the episodes this memory comes from.")
    origin: Origin
    created_at: UtcDatetime
    updated_at: UtcDatetime
    valid_from: UtcDatetime
    valid_to: UtcDatetime | None = None
    closed_by: str = ""
    status_reason: str = ""
    has_human_backing: bool = Field(
        default=False, description="A line the person wrote backs it, or a person approved it."
    )
    confidence: float = Field(default=1.0, description="The judge's (distilled memories); 1 otherwise.")
    seen_count: int = Field(default=1, description="How many equivalent candidates were folded into it.")
    code: CodeAnchor | None = Field(
        default=None, description="The files and commit it is about, when written in a git workspace."
    )
    replaces: Annotated[str, Field(pattern=rf"^$|{ID_PATTERN}")] = Field(
        default="", description="A candidate's: the memory that approving it closes (its id)."
    )


def forgotten(memory: Memory, reason: str) -> Memory:
    """The next version of ``memory``, marked forgotten (it stays stored, recall skips it)."""
    now = utc_now()
    return memory.model_copy(
        update={
            "version": memory.version + 1,
            "status": MemoryStatus.FORGOTTEN,
            "status_reason": reason,
            "updated_at": now,
            "valid_to": memory.valid_to or now,
        }
    )
