"""Episodes sent to the daemon in a batch, and what became of each."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mnemo.episodes import AppendResult, EpisodeIn


class AppendRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episodes: list[EpisodeIn]


class AppendResponse(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    results: list[AppendResult]
