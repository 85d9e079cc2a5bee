"""The bodies of the daemon's HTTP API that are not domain models of their own.

Clients import this module, never :mod:`mnemo.daemon.service` (which pulls in the store).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import ID_PATTERN, AppendResult, EpisodeIn

MAX_REASON_CHARS = 500


class Health(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    pid: int
    store: str


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
    embedding_backlog: int = Field(description="Memories and episode passages still waiting for a vector.")
    language_model: ModelStatus


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
