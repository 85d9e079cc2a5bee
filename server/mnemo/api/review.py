"""The review queue: what it lists and what a person does with a candidate."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.api.memories import MAX_REASON_CHARS
from mnemo.episodes import ID_PATTERN, NAMESPACE_PATTERN
from mnemo.memories import MAX_MEMORY_CHARS, MAX_W_CHARS, Memory
from mnemo.vocabulary import MemoryType


class ReviewEdit(BaseModel):
    """Changes to a memory under review; a field left out (null) stays as it is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: Annotated[str | None, Field(min_length=1, max_length=MAX_MEMORY_CHARS)] = None
    type: MemoryType | None = None
    namespace: Annotated[str | None, Field(pattern=NAMESPACE_PATTERN)] = None
    why: Annotated[str | None, Field(max_length=MAX_W_CHARS)] = None
    how: Annotated[str | None, Field(max_length=MAX_W_CHARS)] = None


class ReviewAction(BaseModel):
    """approve (with optional edits), reject (with a reason), or edit a memory under review."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    action: Literal["approve", "reject", "edit"]
    edit: ReviewEdit | None = None
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)] = ""


class ReviewQueue(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: str = Field(description="The status listed: candidate (the queue) or active (approved).")
    memories: list[Memory]
    policy: str = Field(description="approval_policy: auto or review.")


class ReviewUrl(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(description="The review page's address with this user's secret ('' when not served).")
    reason: str = Field(default="", description="Why there is no page, when url is ''.")
