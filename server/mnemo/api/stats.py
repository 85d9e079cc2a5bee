"""The body of ``GET /v1/stats``: what memory cost the sessions of a period, and what was used."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict


class StatsDay(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    day: date
    injected: int
    tokens: int
    sessions: int
    used: int
    unused: int
    unclear: int


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
    used: int
    unused: int
    unclear: int
    suppressed: list[str]
    days: list[StatsDay]

    @property
    def memory_share(self) -> float | None:
        return self.tokens_injected_read / self.tokens_read if self.tokens_read else None
