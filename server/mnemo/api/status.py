"""The daemon's health (what a client checks before it trusts the daemon) and status (``mnemo status``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class Health(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    pid: int
    store: str
    # What the daemon's settings were resolved from (mnemo.paths.inputs_digest), and the one
    # setting a client needs of them: a client with the same digest need not load its own.
    inputs: str = ""
    request_timeout_s: float = 0.0


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
    backend: str = Field(default="openai", description="llm_backend: openai, claude-code or codex.")
    tokens_today: int = Field(description="Tokens spent today (UTC), all models.")
    daily_cap: int = Field(description="llm_daily_token_cap (0: none).")
    calls_today: int = Field(default=0, description="Model calls made today (UTC), all models.")
    daily_call_cap: int = Field(default=0, description="llm_daily_call_cap in force (0: none).")
    calls_per_minute: float = Field(default=0, description="llm_calls_per_minute in force (0: no pace).")
    resumes_at: datetime | None = Field(description="When model work resumes, if a daily cap is spent.")
    by_model: list[ModelSpend]
    judging: str = Field(
        default="", description="How the judge decides: the relation's method and the calibration in force."
    )


class DistillStatus(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(description="Whether this daemon distils: a model is configured, writer not never.")
    running: str = Field(description="The session being distilled now ('' when none).")
    asked: int = Field(
        default=0,
        description="Sessions asked for (mnemo distill, the PreCompact and SessionEnd hooks) and not yet "
        "distilled, the one running included.",
    )
    batches_done: int = Field(description="Batches finished since the daemon started.")
    memories_added: int = Field(description="Memories those batches added.")
    paused_until: datetime | None = Field(description="Model work waits until then (cap spent, or back-off).")
    last_error: str = Field(description="Why the last attempt failed ('' after a success).")
    failed_batches: int = Field(
        description="Batches whose extraction stayed unusable (stored, never retried)."
    )
    last_failure: str = Field(description="The newest failed batch's error.")
    lease: str = Field(
        default="", description="Who holds the writer lease and how long it has left, by the store's clock."
    )
    context: str = Field(
        default="", description="The model's context every request is sized to, and where it came from."
    )
    speed: str = Field(default="", description="The tokens a second the model reads and writes, measured.")


class StoreFollow(BaseModel):
    """How far a daemon's index is behind a shared store (mnemo.daemon.following)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    poll_s: float = Field(description="store_poll_s: how often the daemon reads what others wrote.")
    behind_versions: int = Field(
        description="Memory versions in the store newer than the newest one indexed."
    )
    behind_s: float = Field(
        description="How much newer the store's newest version is, in the store's seconds."
    )
    applied: int = Field(description="Versions other daemons wrote that this index applied since the start.")
    episodes_applied: int = Field(
        default=0, description="Episodes other daemons recorded that this index added since the start."
    )
    last_poll_s_ago: float | None = Field(description="Seconds since the last poll (None before the first).")
    last_error: str = Field(description="Why the last poll failed ('' after a success).")


class Status(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    pid: int
    store: str
    started_at: datetime
    uptime_s: float
    schema_version: int
    person: str = Field(
        default="", description="The active person: on a shared server, the user it authenticated."
    )
    episodes: int
    memories: dict[str, int]
    entities: int
    embedder: str = Field(description="The embedding model recall uses ('none' when none is installed).")
    embedder_degraded: str = Field(
        default="",
        description="Set when the model does not compute its float model's vectors on this CPU: "
        "the check's cosines (recall finds less; docs/models.md says what to do).",
    )
    index_ready: bool = Field(description="Whether the in-RAM index has been built from the store.")
    index_build_s: float | None = Field(
        default=None, description="How long the start-up index build took (None while it runs)."
    )
    index_memories_from: str = Field(
        default="",
        description="Where the start took the memories' index from: the saved image (and how many "
        "versions committed since it were applied), the store by a process of its own (then read as "
        "its image), or the store ('' while it builds).",
    )
    vector_lists: list[str] = Field(
        default_factory=list,
        description="Each index's vector lists at the build (adopted from the last run, made, saved).",
    )
    embedding_backlog: int = Field(description="Memories and episode passages still waiting for a vector.")
    store_follow: StoreFollow | None = Field(
        default=None,
        description="On a shared server, how far the index is behind the store (None: embedded).",
    )
    language_model: ModelStatus
    distillation: DistillStatus
