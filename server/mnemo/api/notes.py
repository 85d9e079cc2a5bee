"""The files people already keep (CLAUDE.md, AGENTS.md, Claude Code's auto-memory, Codex's
memories), read into entries that become candidates in the review queue (``mnemo import --from``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import MAX_TURN, Namespace
from mnemo.memories import MAX_MEMORY_CHARS, WText
from mnemo.vocabulary import MemoryType

# mnemo.vocabulary.NOTE_SOURCES (the command offers those before it loads pydantic).
NoteSource = Literal["claude-md", "agents-md", "claude-auto-memory", "codex-memories"]
MAX_NOTES = 2_000


class NoteEntry(BaseModel):
    """One entry of a file: a bullet, a paragraph, an auto-memory topic file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Annotated[str, Field(min_length=1, max_length=4_096, description="The file it is in.")]
    line: Annotated[int, Field(ge=1, le=MAX_TURN)]
    text: Annotated[str, Field(min_length=1, max_length=MAX_MEMORY_CHARS)]
    why: WText = ""
    how: WText = ""
    type: MemoryType
    namespace: Namespace


class NotesImportRequest(BaseModel):
    """Entries of one kind of file. ``person_written``: a person wrote them (CLAUDE.md, AGENTS.md),
    so a person backs the candidates; otherwise a model did (auto-memory, Codex's memories)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: NoteSource
    person_written: bool
    entries: Annotated[list[NoteEntry], Field(max_length=MAX_NOTES)]


class NoteOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    line: int
    outcome: Literal["new", "present", "refused"]
    memory: str = Field(default="", description="The candidate's id ('' when refused).")
    message: str = ""


class NotesImportResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    results: list[NoteOutcome]
    judging: bool = Field(description="The new candidates are being judged by this daemon's writer.")
    session: str = Field(description="The judge log's session for this import (import:<source>).")
