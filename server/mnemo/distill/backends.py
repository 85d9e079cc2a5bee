"""Which model the writer talks to (``llm_backend``), and what it says about it.

``openai``: any OpenAI-compatible endpoint (``llm_url``: a local llama.cpp or Ollama server, vLLM,
a hosted API), through :mod:`mnemo.distill.llm`. ``claude-code`` and ``codex``: the host's own
CLI, headless, with the person's own login (:mod:`mnemo.distill.hostcli`). Every backend goes
through the same meter: the daily token and call caps and the pace
(:mod:`mnemo.distill.meter`).
"""

from __future__ import annotations

from mnemo.config import HOST_CALLS_PER_MINUTE, HOST_DAILY_CALLS, Settings
from mnemo.distill.llm import LLM, ChatModel
from mnemo.distill.meter import TokenMeter

BACKENDS = ("openai", "claude-code", "codex")


def open_model(settings: Settings, meter: TokenMeter) -> ChatModel:
    """The configured model; ConfigError when it cannot be (no endpoint, no CLI on PATH)."""
    if settings.llm_backend == "openai":
        return LLM(settings, meter)
    from mnemo.distill.hostcli import HostLLM  # noqa: PLC0415 - only with a host backend

    return HostLLM(settings, meter)


def is_host(settings: Settings) -> bool:
    return settings.llm_backend != "openai"


def has_model(settings: Settings) -> bool:
    """Whether a writer's model is configured: an endpoint, or a host's CLI."""
    return bool(settings.llm_url) or is_host(settings)


def daily_call_cap(settings: Settings) -> int:
    """llm_daily_call_cap in force (auto: none for an endpoint, a subscription's share for a host)."""
    if settings.llm_daily_call_cap == "auto":
        return HOST_DAILY_CALLS if is_host(settings) else 0
    return settings.llm_daily_call_cap


def calls_per_minute(settings: Settings) -> float:
    """llm_calls_per_minute in force (auto: no pace for an endpoint, a bounded one for a host)."""
    if settings.llm_calls_per_minute == "auto":
        return HOST_CALLS_PER_MINUTE if is_host(settings) else 0.0
    return settings.llm_calls_per_minute
