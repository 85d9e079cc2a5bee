"""Recall's requests and results: questions in, ranked memories (and episodes) out.

The ranking itself lives in :mod:`mnemo.index` (no LLM call); these are the models that cross
the daemon's HTTP API, the MCP tools and the CLI.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemo.episodes import ID_PATTERN, Episode, Namespace
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryType

MAX_QUERY_CHARS = 2_000


class RecallRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    namespace: Namespace | None = None
    types: Annotated[list[MemoryType], Field(max_length=8)] | None = None
    include_history: bool = Field(
        default=False, description="Rank closed (no longer true) memories as if history were asked."
    )
    limit: Annotated[int, Field(ge=1, le=50)] = 10
    explain: bool = Field(default=False, description="Return each score's components.")


class MemoryHit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    memory: Memory
    explain: dict[str, float] | None = None
    outdated: str = Field(
        default="",
        description="Set when the code this memory is about changed since it was written "
        "(e.g. 'lb.tf changed in 3f2a1c9 since'): check the code before relying on it.",
    )
    earlier: str = Field(
        default="",
        description="Set when a newer current memory states another value of the same thing "
        "(e.g. 'earlier, 2026-11-02; mem_… of 2026-11-20 is newer'): the newer one is the current word.",
    )
    replaces: str = Field(
        default="",
        description="Set when this memory was not found for the question itself but closed one that was "
        "(the id of that one, listed after it): it is what that memory says now.",
    )


class EpisodeHit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    episode: Episode
    explain: dict[str, float] | None = None


class RecallResult(BaseModel):
    """Memories that answer the question, best first; episodes only when no memory answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: list[MemoryHit]
    episodes: list[EpisodeHit] = Field(
        description="Raw episodes, searched only when no memory matched the question."
    )


class RecallEpisodeRequest(BaseModel):
    """One of: an episode id; a memory id (the episodes it comes from); a session (optionally a turn
    range); a text query (optionally in a session)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)] | None = None
    memory: Annotated[str, Field(pattern=ID_PATTERN)] | None = Field(
        default=None, description="The episodes this memory comes from (its sources)."
    )
    session: Annotated[str, Field(min_length=1, max_length=500)] | None = None
    from_turn: Annotated[int, Field(ge=0)] | None = None
    to_turn: Annotated[int, Field(ge=0)] | None = None
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    namespace: Namespace | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 20

    @model_validator(mode="after")
    def _one_way_to_select(self) -> Self:
        by_id = [name for name in ("id", "memory") if getattr(self, name) is not None]
        if len(by_id) == 2 or (by_id and (self.session or self.query)):
            raise ValueError("give one of: an episode id, a memory id, or a session and/or a query")
        if not by_id and self.session is None and self.query is None:
            raise ValueError("give an episode id, a memory id, a session, or a query")
        if (self.from_turn is not None or self.to_turn is not None) and self.session is None:
            raise ValueError("from_turn/to_turn select turns within a session: give the session too")
        if self.from_turn is not None and self.to_turn is not None and self.from_turn > self.to_turn:
            raise ValueError("from_turn must not be greater than to_turn")
        return self


class EpisodesResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episodes: list[EpisodeHit]
