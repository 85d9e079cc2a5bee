"""The body of ``GET /v1/stats``: what memory cost the sessions of a period, and what was used."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import ID_PATTERN


class StatsDay(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    day: date
    injected: int
    tokens: int
    sessions: int
    used: int
    unused: int
    unclear: int


class SuppressedMemory(BaseModel):
    """A memory no longer injected in a workspace's sessions: clearly unused there, not used since."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: str
    workspace: str
    unused: int


class UnsuppressRequest(BaseModel):
    """``POST /v1/stats/unsuppress``: inject a memory again wherever it is suppressed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: Annotated[str, Field(pattern=ID_PATTERN)]


class Unsuppressed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: str
    workspaces: list[str]  # where it was suppressed and is injected again


class Stats(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    since: datetime
    until: datetime
    person: str
    sessions: int
    memories_injected: int
    tokens_injected: int
    sessions_read: int  # sessions whose transcript was found
    tokens_read: int  # input tokens of those sessions' model calls
    tokens_injected_read: int  # tokens injected into those sessions
    prompts: int  # typed by the person in these sessions
    prompts_injected: int  # of them, prompts that got a block of memory
    prompt_block_tokens: int  # the median block's tokens, for a prompt
    start_blocks: int  # blocks injected at a session's start (the curated sets' own included)
    start_block_tokens: int  # the median block's tokens, at a session's start
    used: int
    unused: int
    unclear: int
    suppressed: list[SuppressedMemory]
    suppressing: bool = True  # false: suppress_unused is off, what is listed is injected all the same
    days: list[StatsDay]

    @property
    def memory_share(self) -> float | None:
        return self.tokens_injected_read / self.tokens_read if self.tokens_read else None
