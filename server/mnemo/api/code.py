"""The code check's request and answer (``mnemo check-code``, ``POST /v1/code/check``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class CodeCheckRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cwd: Annotated[str, Field(min_length=1, max_length=4_096, description="A directory in the checkout.")]


class CodeFlagged(BaseModel):
    """A memory whose anchored code changed (or moved) since it was written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory: str
    what: str
    kind: str  # changed | deleted | moved | moved and changed
    stale: bool  # False for a file renamed with the same content: followed, not outdated
    path: str
    new_path: str = ""
    commits: list[str] = []
    missing: list[str] = []
    note: str


class CodeCheckResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    workspace: str
    head: str | None
    checked: int  # anchored memories compared with HEAD
    complete: bool  # False: git failed or the check ran out of time
    flagged: list[CodeFlagged]
