"""The writer's requests and records: distil a session now, the judge's log."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class DistillRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session: Annotated[str, Field(min_length=1, max_length=500)]
    again: bool = Field(
        default=False,
        description="Read the session anew from its first episode, as new batches (a better model's "
        "reading): what they say again merges into current memories, only what they replace is closed; "
        "what a later word closed, or a person forgot or rejected, is not added again.",
    )


class DistillQueued(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    queued: bool
    reason: str = ""
    distilled: bool = Field(
        default=False, description="Not queued because the session is distilled up to its last episode."
    )


class JudgeLogEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    batch: str
    session: str
    namespace: str
    memory: str = Field(description="The judged memory's id (stored only when the action is add or close).")
    action: str = Field(
        description="add, merge, close or episodes_only (confirmed, closed or unclear in the log's "
        "older rows of batch code:<commit>, from when the writer re-judged memories whose code changed)."
    )
    target: str = Field(description="The memory merged into ('' unless merge).")
    closes: list[str]
    reason: str
    detail: dict[str, object] = Field(description="The memory, each question's probabilities, the guard.")


class JudgeLog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    entries: list[JudgeLogEntry]
