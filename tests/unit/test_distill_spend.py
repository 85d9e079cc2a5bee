"""What the writer may spend: the daily call cap and the pace (every backend), a host's
usage-limit answer, and `mnemo writer use` writing the config file (the real store, the real
TOML file; the host CLIs themselves are in tests/e2e/test_writer_hosts.py)."""

from __future__ import annotations

import itertools
import re
import sys
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemo.config_sources import write_settings
from mnemo.distill.backends import calls_per_minute, daily_call_cap, has_model
from mnemo.distill.hostcli import HostLLM
from mnemo.distill.meter import TokenMeter
from mnemo.errors import ConfigError, TokenCapError
from mnemo.store import ClickHouseStore
from tests.helpers import Clock, Home


def test_the_call_cap_stops_the_day_and_the_next_day_resumes(store: ClickHouseStore) -> None:
    clock = Clock(datetime(2026, 3, 4, 22, 0, tzinfo=UTC))
    meter = TokenMeter(store, 0, clock, call_cap=3)
    for _ in range(3):
        meter.check()
        meter.record("haiku", "extract", 100, 10)
    with pytest.raises(
        TokenCapError, match=r"330 tokens, 3 calls of 3; .*resumes at 2026-03-05 00:00 UTC"
    ) as caught:
        meter.check()
    assert caught.value.resumes_at == datetime(2026, 3, 5, tzinfo=UTC)
    spend = meter.today()
    assert spend.calls == 3 and spend.is_capped and spend.resumes_at == datetime(2026, 3, 5, tzinfo=UTC)
    # A restarted writer reads today's calls from the store.
    with pytest.raises(TokenCapError):
        TokenMeter(store, 0, clock, call_cap=3).check()
    clock.now += timedelta(hours=2)
    meter.check()


def test_the_pace_spaces_calls_however_many_wait(store: ClickHouseStore) -> None:
    slept: list[float] = []
    meter = TokenMeter(store, 0, call_cap=0, per_minute=12, sleep=slept.append)
    for _ in range(4):
        meter.check()
    # The first call goes at once; each after it waits its turn, 5 s after the one before.
    assert slept[0] == pytest.approx(5, abs=0.5)
    assert [round(b - a) for a, b in itertools.pairwise(slept)] == [5, 5]
    unpaced: list[float] = []
    meter = TokenMeter(store, 0, per_minute=0, sleep=unpaced.append)
    for _ in range(4):
        meter.check()
    assert unpaced == []


def test_a_host_backend_has_a_subscription_sized_cap_and_pace_by_default(home: Home) -> None:
    url = home.with_env(MNEMO_LLM_URL="http://127.0.0.1:9/v1", MNEMO_LLM_MODEL="m").settings
    assert (daily_call_cap(url), calls_per_minute(url), has_model(url)) == (0, 0.0, True)
    host = home.with_env(MNEMO_LLM_BACKEND="claude-code").settings
    assert (daily_call_cap(host), calls_per_minute(host), has_model(host)) == (200, 4.0, True)
    chosen = home.with_env(
        MNEMO_LLM_BACKEND="codex", MNEMO_LLM_DAILY_CALL_CAP="0", MNEMO_LLM_CALLS_PER_MINUTE="1.5"
    ).settings
    assert (daily_call_cap(chosen), calls_per_minute(chosen)) == (0, 1.5)
    assert not has_model(home.settings)
    with pytest.raises(ConfigError, match="llm_daily_call_cap"):
        _ = home.with_env(MNEMO_LLM_DAILY_CALL_CAP="-1").settings


def test_a_hosts_usage_limit_answer_pauses_until_it_resets(home: Home) -> None:
    # sys.executable stands in for the CLI's path: nothing is run here, the answers are classified.
    llm = HostLLM(
        home.with_env(MNEMO_LLM_BACKEND="claude-code", MNEMO_LLM_HOST_COMMAND=sys.executable).settings, None
    )  # type: ignore[arg-type]
    resets = int((datetime.now(UTC) + timedelta(hours=3)).timestamp())
    limit = llm._failure(f"Claude AI usage limit reached|{resets}")
    assert isinstance(limit, TokenCapError) and limit.resumes_at == datetime.fromtimestamp(resets, UTC)
    later = llm._failure("You've hit your usage limit. Try again later.")
    assert isinstance(later, TokenCapError) and later.resumes_at is not None
    assert timedelta(minutes=55) < later.resumes_at - datetime.now(UTC) <= timedelta(hours=1)
    other = llm._failure("API Error: 500 overloaded")
    assert not isinstance(other, TokenCapError) and "failed: API Error: 500" in str(other)
    llm.close()


def test_writing_settings_keeps_the_rest_of_the_file_and_refuses_what_would_not_read(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '# mine\nllm_url = "http://x/v1"\nllm_backend = "codex"\n\n[calibration.useful]\ntemperature = 2.0\n'
    )
    write_settings(config, {"llm_backend": "claude-code", "llm_host_model": "haiku", "llm_host_url": None})
    text = config.read_text()
    assert text.startswith("# mine\nllm_url = ")
    data = tomllib.loads(text)
    assert data["llm_backend"] == "claude-code" and data["llm_host_model"] == "haiku"
    assert data["calibration"]["useful"]["temperature"] == 2.0 and "llm_host_url" not in data
    assert len(re.findall(r"^llm_backend", text, re.M)) == 1
    write_settings(config, {"llm_backend": "openai", "llm_host_model": None})
    assert tomllib.loads(config.read_text())["llm_backend"] == "openai"
    assert "llm_host_model" not in config.read_text()
    fresh = tmp_path / "new" / "config.toml"
    write_settings(fresh, {"llm_backend": "codex"})
    assert tomllib.loads(fresh.read_text()) == {"llm_backend": "codex"}
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\n")
    with pytest.raises(ConfigError, match="would not be valid TOML"):
        write_settings(broken, {"llm_backend": "codex"})
    assert broken.read_text() == "[table\n"
