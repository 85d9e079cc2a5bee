"""Requests on stored memories that are not models of their own: forget."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import ID_PATTERN

MAX_REASON_CHARS = 500


class ForgetRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    reason: Annotated[str, Field(min_length=1, max_length=MAX_REASON_CHARS)]
