"""The closed sets of words every layer shares: memory types and statuses, keep scopes and
actions, the hosts whose transcripts mnemo reads.

Standard library only: the ``mnemo`` command offers them as choices before it knows whether it
will need anything heavier.
"""

from __future__ import annotations

from enum import StrEnum


class MemoryType(StrEnum):
    FACT = "fact"
    EVENT = "event"
    STATE = "state"
    DECISION = "decision"
    PREFERENCE = "preference"
    PROCEDURE = "procedure"
    PATTERN = "pattern"
    POSTMORTEM = "postmortem"


class MemoryStatus(StrEnum):
    CANDIDATE = "candidate"
    ACTIVE = "active"
    REJECTED = "rejected"
    ARCHIVED = "archived"
    CLOSED = "closed"
    FORGOTTEN = "forgotten"


class KeepScope(StrEnum):
    PROJECT = "project"
    USER = "user"


class KeepAction(StrEnum):
    ADD = "add"
    REPLACE = "replace"
    REMOVE = "remove"


# Where a project's kept set lives in its repository (mnemo keep export / import).
KEEP_FILE_PATH = ".mnemo/MEMORY.md"
# The hosts whose transcripts mnemo reads (mnemo import --from).
TRANSCRIPT_HOSTS = ("claude-code", "codex")
# The files people keep that mnemo imports as candidates (mnemo import --from).
NOTE_SOURCES = ("claude-md", "agents-md", "claude-auto-memory", "codex-memories")
