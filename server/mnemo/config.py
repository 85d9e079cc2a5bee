"""Settings: read once from the TOML file and the environment into a frozen object.

Precedence: environment (``MNEMO_<NAME>``) over the config file over defaults. ``MNEMO_HOME``
chooses where everything lives; it cannot be set from the file (the file lives under it).

Layout when ``MNEMO_HOME`` is set (tests, several installs side by side)::

    $MNEMO_HOME/config.toml      settings
    $MNEMO_HOME/store/           embedded chDB data (when the store is the default chdb:// DSN)
    $MNEMO_HOME/index/           the search indexes' inverted vector lists, saved between daemon runs
    $MNEMO_HOME/run/             0700: the daemon's unix socket, pid and lock files
    $MNEMO_HOME/logs/            daemon.log

Without it, the platform's user directories are used (on Linux: ``~/.config/mnemo``,
``~/.local/share/mnemo/{store,index}``, ``~/.local/state/mnemo/{run,logs}``).

This and :mod:`mnemo.paths` (where the files live, which the hook process needs without
pydantic) are the only modules that read the environment. Every setting has a section in
``docs/settings.md`` (a test checks it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError

from mnemo import config_sources as sources_of
from mnemo.config_sources import check_settings, default_person, read_config_file, redact_dsn
from mnemo.episodes import NAME_CHARS
from mnemo.errors import ConfigError
from mnemo.paths import (
    DAEMON_LOCK_NAME,
    HOME_ENV,
    INPUTS_ENV,
    SOCKET_NAME,
    inputs_digest,
    layout,
    spawned_digest,
)

ENV_PREFIX = "MNEMO_"
# A host backend's defaults (llm_daily_call_cap, llm_calls_per_minute): a subscription's share.
HOST_DAILY_CALLS = 200
HOST_CALLS_PER_MINUTE = 4.0


class Calibration(BaseModel):
    """How one closed question's option probabilities are corrected: p ∝ exp(log p / T + bias)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=1.0, gt=0, le=100)
    bias: dict[str, float] = Field(default_factory=dict)


class Settings(BaseModel):
    """Everything configurable, validated. Field docs are mirrored in docs/settings.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # What these settings were resolved from (mnemo.paths.inputs_digest); "" when built in code.
    _inputs_digest: str = PrivateAttr(default="")

    store: str = Field(
        default="",
        description="Store DSN: chdb:///absolute/path (embedded) or http(s)://user:pass@host:port/db.",
    )
    store_password: SecretStr = Field(
        default=SecretStr(""),
        description="The server's password (best from MNEMO_STORE_PASSWORD); wins over one in the DSN.",
    )
    store_password_file: str = Field(
        default="", description="A file holding the server's password (when store_password is empty)."
    )
    store_ca_file: str = Field(default="", description="CA certificates (PEM) that verify an https server.")
    store_verify: bool = Field(default=True, description="Verify an https server's certificate.")
    store_client_cert: str = Field(default="", description="A client certificate (PEM) for an https server.")
    store_client_key: str = Field(default="", description="The client certificate's key, if not in its file.")
    person: str = Field(
        default="",
        min_length=0,
        max_length=64,
        pattern=rf"^{NAME_CHARS}+$",  # it names the namespace person:<name>
        description="The active person; memories written without a namespace go to person:<name>.",
    )
    daemon_idle_s: float = Field(
        default=900.0, gt=0, description="The daemon exits after this many seconds with no requests."
    )
    daemon_start_timeout_s: float = Field(
        default=30.0, gt=0, description="How long a client waits for a daemon it started to answer."
    )
    daemon_read_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3_600,
        description="How long the daemon waits for a request to arrive whole (head and body).",
    )
    request_timeout_s: float = Field(
        default=30.0, gt=0, description="How long a client waits for one answer from the daemon."
    )
    store_cluster: str = Field(
        default="",
        pattern=r"^([A-Za-z_][A-Za-z0-9_\-]{0,63})?$",
        description="A ClickHouse cluster: tables Replicated*, schema changes ON CLUSTER.",
    )
    store_read_your_writes: Literal["off", "quorum", "sequential"] = Field(
        default="off", description="Replica consistency: quorum inserts and sequential reads, or reads only."
    )
    store_poll_s: float = Field(
        default=1.0, ge=0, le=60, description="Seconds between reads of others' writes on a server (0: off)."
    )
    index_build_apart_from: int = Field(
        default=20_000,
        ge=0,
        description="From this many memories, a first start builds their index in a process of its own.",
    )
    max_episode_chars: int = Field(
        default=200_000, gt=0, le=50_000_000, description="Largest episode text accepted, in characters."
    )
    embedder: str = Field(
        default="auto",
        pattern=r"^(auto|[a-z0-9][a-z0-9.\-]{0,80})$",
        description="Embedding model id, or auto: the best installed model (see `mnemo models`).",
    )
    models_dir: str = Field(
        default="",
        description="Directory holding installed embedding models (default: models/ beside the store).",
    )
    gemma_query_prefix: str = Field(
        default="task: question answering | query: ",
        max_length=200,
        description="Prefix EmbeddingGemma puts before a question (its own prompt for retrieval).",
    )
    embedding_dims: Annotated[int, Field(ge=0)] | Literal["auto"] = Field(
        default="auto",
        description=(
            "Leading dimensions kept of a Matryoshka model's vectors (0: all; auto: the model's "
            "default, 512 for EmbeddingGemma)."
        ),
    )
    llm_backend: Literal["openai", "claude-code", "codex"] = Field(
        default="openai",
        description="The writer's model: an OpenAI-compatible llm_url, or a host's CLI with its login.",
    )
    llm_host_command: str = Field(
        default="",
        max_length=2_000,
        description="With a host backend: its CLI (empty: claude or codex on PATH).",
    )
    llm_host_model: str = Field(
        default="", max_length=200, description="A host's --model (empty: its default)."
    )
    llm_host_url: str = Field(
        default="", max_length=2_000, description="A base URL a host's CLI talks to instead of its login."
    )
    llm_url: str = Field(
        default="",
        max_length=2_000,
        description=(
            "OpenAI-compatible endpoint (base URL, e.g. http://localhost:11434/v1) for distilling "
            "and judging; empty: none (episodes and explicit memories work without it)."
        ),
    )
    llm_model: str = Field(default="", max_length=200, description="Model name sent to llm_url.")
    llm_api_key: SecretStr = Field(
        default=SecretStr(""),
        description="Key for llm_url (best from the environment, MNEMO_LLM_API_KEY); never logged or shown.",
    )
    llm_timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=3_600,
        description="How long a model call may take (more if its size needs it).",
    )
    llm_context_tokens: Annotated[int, Field(ge=2_048, le=10_000_000)] | Literal["auto"] = Field(
        default="auto",
        description="The model's context, requests are sized to (auto: asked of the server, else 8192).",
    )
    llm_max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries of a model call that timed out, lost its connection, or got 408/429/5xx.",
    )
    llm_daily_token_cap: int = Field(
        default=2_000_000,
        ge=0,
        description=(
            "Tokens (prompt + completion, all models) the writer may spend per UTC day; past it, "
            "work waits for the next day. 0: no cap."
        ),
    )
    llm_daily_call_cap: Annotated[int, Field(ge=0)] | Literal["auto"] = Field(
        default="auto",
        description=(
            "Model calls the writer may make per UTC day (0: no cap; auto: none for openai, "
            f"{HOST_DAILY_CALLS} for a host backend, whose subscription counts messages)."
        ),
    )
    llm_calls_per_minute: Annotated[float, Field(ge=0, le=600)] | Literal["auto"] = Field(
        default="auto",
        description=(
            "The most model calls the writer makes in a minute, however long its backlog (0: no "
            f"pace; auto: none for openai, {HOST_CALLS_PER_MINUTE:g} for a host backend)."
        ),
    )
    writer: Literal["auto", "always", "never"] = Field(
        default="auto", description="Whether this daemon distils: auto (when a model is set), always, never."
    )
    distill_idle_s: float = Field(
        default=120.0,
        gt=0,
        description="A session quiet this many seconds is distilled (also at compaction and session end).",
    )
    approval_policy: Literal["auto", "review"] = Field(
        default="auto",
        description=(
            "auto: the judge decides, but decisions, postmortems and procedures no line the person "
            "wrote backs, and anything from tool output alone, wait for a person; review: every "
            "distilled memory waits for a person (mnemo review)."
        ),
    )
    auto_approve_min_seen: int = Field(
        default=0,
        ge=0,
        description="With approval_policy review: approve a candidate seen this many times (0: never).",
    )
    auto_approve_min_confidence: float = Field(
        default=0.9,
        ge=0,
        le=1,
        description="With auto_approve_min_seen: the judge's confidence a candidate must also have.",
    )
    review_port: int = Field(
        default=0,
        ge=0,
        le=65_535,
        description="TCP port of the review page on 127.0.0.1 (0: one the system picks at each start).",
    )
    decision_fallback_confidence: float = Field(
        default=0.7,
        gt=0.5,
        lt=1,
        description=(
            "For endpoints without log-probabilities: the probability given to the option the model "
            "answered (the decision is marked uncalibrated)."
        ),
    )
    light_pass: bool = Field(
        default=False,
        description="One closed question before each extraction; skip it when nothing is durable.",
    )
    prompt_floor: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="A prompt's block: memories scoring this share of the best's or more.",
    )
    start_memories: Literal["used", "all"] = Field(
        default="used",
        description="A session's start: what the workspace used and a few (used), or all that fit.",
    )
    suppress_unused: bool = Field(default=True, description="Stop injecting what a workspace never uses.")
    usage_audit: Literal["signal", "model"] = Field(
        default="signal",
        description="Was a memory used: read from the turn (signal) or asked of llm_url (model).",
    )
    relation_method: Literal["auto", "one", "steps"] = Field(
        default="auto", description="The judge's relation: one question, in steps (small models), or auto."
    )
    calibration: dict[str, Calibration] = Field(
        default_factory=dict,
        description=(
            "Per closed question, the temperature and per-option biases fitted by "
            "tools/fit/fit_calibration.py (a TOML table; in the environment, JSON)."
        ),
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Level of the daemon's and the MCP server's logs."
    )

    # Derived locations; not settable from the file or MNEMO_<NAME> (MNEMO_HOME moves them all).
    home: Path | None = Field(default=None, exclude=True)
    config_file: Path = Field(default=Path(), exclude=True)
    run_dir: Path = Field(default=Path(), exclude=True)
    log_dir: Path = Field(default=Path(), exclude=True)
    # None: vector lists are not saved (settings made without load_settings).
    index_dir: Path | None = Field(default=None, exclude=True)

    @property
    def socket_path(self) -> Path:
        return self.run_dir / SOCKET_NAME

    @property
    def pid_path(self) -> Path:
        return self.run_dir / "daemon.pid"

    @property
    def daemon_lock_path(self) -> Path:
        """Held by the running daemon for its whole life."""
        return self.run_dir / DAEMON_LOCK_NAME

    @property
    def start_lock_path(self) -> Path:
        """Held by a client while it starts a daemon, so N clients start exactly one."""
        return self.run_dir / "start.lock"

    @property
    def start_failure_path(self) -> Path:
        """Written by a daemon that could not start, read by the client that started it."""
        return self.run_dir / "start-failure.txt"

    @property
    def log_path(self) -> Path:
        return self.log_dir / "daemon.log"

    @property
    def namespace_of_person(self) -> str:
        return f"person:{self.person}"

    @property
    def store_dsn_for_display(self) -> str:
        """The DSN with any password removed, safe for logs and status output."""
        return redact_dsn(self.store)

    def _as_text(self, key: str) -> str:
        value = getattr(self, key)
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        if key in JSON_SETTINGS:
            return json.dumps(self.model_dump(mode="json")[key])
        return str(value)

    @property
    def inputs_digest(self) -> str:
        """The digest of the config file and environment these settings were read from (the
        daemon: its spawner's), or "" for settings built in code."""
        return self._inputs_digest

    def as_environment(self) -> dict[str, str]:
        """Environment variables that make another process (the daemon) load these same settings."""
        env = {ENV_PREFIX + key.upper(): self._as_text(key) for key in SETTABLE}
        if self.home is not None:
            env[HOME_ENV] = str(self.home)
        if self._inputs_digest:
            env[INPUTS_ENV] = self._inputs_digest
        return env


# Settings that are tables in the file and JSON in the environment.
JSON_SETTINGS = frozenset({"calibration"})
_DERIVED = frozenset({"home", "config_file", "run_dir", "log_dir", "index_dir"})
SETTABLE = tuple(name for name in Settings.model_fields if name not in _DERIVED)


def load_settings(environ: Mapping[str, str] | None = None, *, is_spawned: bool = False) -> Settings:
    """Read the config file and the environment once; raise ConfigError naming what is wrong.
    ``is_spawned``: this process was started by the spawner (the daemon, or the spawner's own
    starter), whose digest of its client's inputs these settings carry (mnemo.paths)."""
    env = os.environ if environ is None else environ
    where = layout(env)
    home = Path(where.home) if where.home else None
    config_file, data_dir = Path(where.config_file), Path(where.data_dir)
    run_dir, log_dir = Path(where.run_dir), Path(where.log_dir)

    raw_config, file_values = read_config_file(config_file, SETTABLE)
    values: dict[str, Any] = dict(file_values)
    sources = dict.fromkeys(file_values, str(config_file))
    from_env, env_sources = sources_of.environment_values(env, ENV_PREFIX, SETTABLE, JSON_SETTINGS)
    values.update(from_env)
    sources.update(env_sources)

    if not values.get("store"):
        values["store"] = f"chdb://{data_dir}"
    if not values.get("models_dir"):
        values["models_dir"] = str(data_dir.parent / "models")
    if not values.get("person"):
        values["person"] = default_person(env)
    index_dir = data_dir.parent / "index"
    values.update(home=home, config_file=config_file, run_dir=run_dir, log_dir=log_dir, index_dir=index_dir)

    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else "?"
            path = ".".join(str(part) for part in error["loc"]) or "?"
            problems.append(f"{path} (from {sources.get(key, 'defaults')}): {error['msg']}")
        raise ConfigError("invalid mnemo settings: " + "; ".join(problems)) from None
    check_settings(settings, sources)
    settings._inputs_digest = (is_spawned and spawned_digest(env)) or inputs_digest(env, config=raw_config)
    return settings
