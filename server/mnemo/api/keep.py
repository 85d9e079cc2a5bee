"""The kept sets of ``keep``: edits, imports, and the sets as they stand."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mnemo.episodes import NAME_CHARS
from mnemo.keep import BUDGET_CHARS
from mnemo.vocabulary import KeepAction, KeepScope

MAX_KEEP_CHARS = max(BUDGET_CHARS.values())

WORKSPACE_PATTERN = rf"^workspace:{NAME_CHARS}{{1,120}}$"


class KeepRequest(BaseModel):
    """An edit of a curated set (the ``keep`` tool)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: KeepScope
    action: KeepAction
    content: Annotated[str, Field(max_length=MAX_KEEP_CHARS)] = ""
    old_text: Annotated[str, Field(max_length=MAX_KEEP_CHARS)] = ""
    workspace: Annotated[
        str | None, Field(pattern=WORKSPACE_PATTERN, description="The project's workspace:<id>.")
    ] = None


class KeptSet(BaseModel):
    """A curated set as it stands."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scope: KeepScope
    owner: str = Field(description="workspace:<id> for a project, person:<name> for a user.")
    entries: list[str]
    used_chars: int
    budget_chars: int
    version: int = Field(description="How many times the set was changed (0: never).")


class KeepResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    message: str = Field(description="What the edit did.")
    kept: KeptSet


class KeptSets(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    project: KeptSet | None = Field(description="The workspace's set (null when no workspace was given).")
    user: KeptSet


class KeepImportRequest(BaseModel):
    """A project set read from its file, to become the set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workspace: Annotated[str, Field(pattern=WORKSPACE_PATTERN)]
    entries: Annotated[list[Annotated[str, Field(max_length=MAX_KEEP_CHARS)]], Field(max_length=500)]
