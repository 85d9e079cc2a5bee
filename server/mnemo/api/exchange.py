"""Export and import of memories: the pages ``mnemo export`` reads and the records ``mnemo import
--memories`` sends back (the file itself: :mod:`mnemo.archive`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import ID_PATTERN, Episode, Namespace
from mnemo.memories import MAX_ENTITIES, MAX_MEMORY_CHARS, EntityRef, Memory

MAX_PAGE = 2_000
MAX_IMPORT_RECORDS = 5_000


_BOUNDED = Annotated[str, Field(max_length=MAX_MEMORY_CHARS)]


class ExportedMemory(Memory):
    """A memory version as exported: the memory, and the writer's batch that wrote it ('' when a
    person, a tool or the review queue did) — who changed it, kept across an export and import.
    Bounded as the writes that make memories are: a file is outside input."""

    version: Annotated[int, Field(ge=1, le=1_000_000)]
    namespace: Namespace
    content: _BOUNDED
    what: _BOUNDED
    who: _BOUNDED
    when: _BOUNDED
    where: _BOUNDED
    why: _BOUNDED
    how: _BOUNDED
    entities: Annotated[list[EntityRef], Field(max_length=MAX_ENTITIES)]
    sources: Annotated[list[Annotated[str, Field(pattern=ID_PATTERN)]], Field(max_length=1_000)]
    closed_by: Annotated[str, Field(pattern=f"^$|{ID_PATTERN}")] = ""
    status_reason: Annotated[str, Field(max_length=MAX_MEMORY_CHARS)] = ""
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    seen_count: Annotated[int, Field(ge=0, le=1_000_000_000)] = 1
    batch: Annotated[str, Field(pattern=r"^[A-Za-z0-9._:@#/\-]{0,200}$")] = ""

    def stored(self) -> Memory:
        """The memory version itself, without its batch."""
        return Memory.model_validate(self.model_dump(exclude={"batch"}))


class EntityRecord(BaseModel):
    """An entity a memory names: its folded key, its name and the other names it goes by."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: Annotated[str, Field(min_length=1, max_length=120)]
    name: Annotated[str, Field(min_length=1, max_length=120)]
    aliases: Annotated[list[Annotated[str, Field(min_length=1, max_length=120)]], Field(max_length=64)] = []


class ExportedEpisode(Episode):
    """An episode as exported, bounded as an episode a client sends is."""

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    namespace: Namespace
    text: Annotated[str, Field(min_length=1)]


class ExportPageRequest(BaseModel):
    """A page of memories (current versions, or every version with ``history``) with ids after
    ``after``, in one namespace; or a page of that namespace's episodes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    what: Literal["memories", "episodes"] = "memories"
    namespace: Namespace
    after: Annotated[str, Field(max_length=200)] = ""
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 500
    history: bool = False


class ExportPage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: list[ExportedMemory] = []
    entities: list[EntityRecord] = Field(default=[], description="The entities this page's memories name.")
    episodes: list[Episode] = []
    next: str = Field(description="The id to ask after for the next page; '' when this was the last.")


class ExportNamespaces(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: dict[str, int] = Field(description="Memories (current versions) per namespace.")
    episodes: dict[str, int] = Field(description="Episodes per namespace.")


class ImportRequest(BaseModel):
    """Records of an export file, at most :data:`MAX_IMPORT_RECORDS` a request; a memory's
    versions must come in one request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: Annotated[list[ExportedMemory], Field(max_length=MAX_IMPORT_RECORDS)] = []
    entities: Annotated[list[EntityRecord], Field(max_length=MAX_IMPORT_RECORDS)] = []
    episodes: Annotated[list[ExportedEpisode], Field(max_length=MAX_IMPORT_RECORDS)] = []


Outcome = Literal["added", "present", "conflict", "refused"]


class ImportedMemory(BaseModel):
    """What became of one memory (all its versions in the request)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    outcome: Outcome
    added: list[int] = Field(default=[], description="The versions written.")
    message: str = ""


class ImportedEpisode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    outcome: Outcome
    message: str = ""


class ImportResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: list[ImportedMemory]
    entities: int = Field(description="Entities that gained a name or alias.")
    entities_refused: list[str] = Field(default=[], description="Each entity refused, and why.")
    episodes: list[ImportedEpisode]
