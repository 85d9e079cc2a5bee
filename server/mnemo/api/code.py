"""The code check's request and answer (``mnemo check-code``, ``POST /v1/code/check``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class CodeCheckRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cwd: Annotated[str, Field(min_length=1, max_length=4_096, description="A directory in the checkout.")]


class CodeReading(BaseModel):
    """A value the memory names, and the number the line that held it holds now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: str
    now: str
    line: str  # the site and its new number as the file has them: "timeout_sec = 900"


class CodeFlagged(BaseModel):
    """A memory whose anchored code changed (or moved) since it was written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: str
    what: str
    kind: str  # refreshed | moved | changed | moved and changed | deleted
    stale: bool  # False when the file still holds all the memory names: followed, not outdated
    path: str
    new_path: str = ""
    commits: list[str] = []
    missing: list[str] = []
    readings: list[CodeReading] = []
    note: str


class CodeCheckResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    workspace: str
    head: str | None
    checked: int  # anchored memories compared with HEAD
    complete: bool  # False: git failed or the check ran out of time
    flagged: list[CodeFlagged]
