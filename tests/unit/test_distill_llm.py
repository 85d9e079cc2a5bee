"""The model door and the decision model, through the real ``openai`` client against the scripted
OpenAI-compatible server (tests/llm_server.py) over real HTTP."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from mnemo.config import Calibration, Settings, load_settings
from mnemo.distill.decide import DURABLE, RELATION, USEFUL, DecisionModel, calibrate
from mnemo.distill.llm import LLM, Message
from mnemo.distill.meter import TokenMeter
from mnemo.errors import ConfigError, ModelError, ModelTimeoutError, TokenCapError
from mnemo.store import ClickHouseStore
from tests.helpers import Clock, Home
from tests.llm_server import LLMServer

KEY = "sk-test-0123456789abcdef"


def _clock() -> Clock:
    return Clock(datetime(2026, 3, 2, 22, 0, tzinfo=UTC))


def _settings(home: Home, server: LLMServer, **extra: str) -> Settings:
    env = {"MNEMO_LLM_URL": server.url, "MNEMO_LLM_MODEL": "scripted-1", "MNEMO_LLM_API_KEY": KEY}
    return home.with_env(**env, **extra).settings


def _llm(
    home: Home, server: LLMServer, store: ClickHouseStore, clock: Clock | None = None, **extra: str
) -> LLM:
    settings = _settings(home, server, **extra)
    return LLM(settings, TokenMeter(store, settings.llm_daily_token_cap, clock or _clock()))


def test_a_chat_goes_through_the_openai_client_and_is_metered(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="deploy day", text="Thursday")
    clock = _clock()
    llm = _llm(home, llm_server, store, clock)
    reply = llm.chat([Message("user", "What is the deploy day?")], purpose="test", max_tokens=5)
    assert reply.text == "Thursday"
    assert reply.top_logprobs is None  # not asked for
    sent = llm_server.requests[0]
    assert sent["model"] == "scripted-1" and sent["temperature"] == 0 and sent["max_tokens"] == 5
    [usage] = store.model_usage(clock.now.date())
    assert (usage.model, usage.calls) == ("scripted-1", 1)
    assert (usage.prompt_tokens, usage.completion_tokens) == (reply.prompt_tokens, reply.completion_tokens)
    assert usage.tokens > 0


def test_failures_are_retried_a_bounded_number_of_times(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="ping", text="pong")
    llm = _llm(home, llm_server, store, MNEMO_LLM_MAX_RETRIES="2")
    llm_server.fail_next(2, status=503)
    assert llm.chat([Message("user", "ping")], purpose="test", max_tokens=2).text == "pong"
    assert len(llm_server.requests) == 3

    llm_server.fail_next(3, status=500)
    with pytest.raises(ModelError, match=r"answered HTTP 500") as raised:
        llm.chat([Message("user", "ping")], purpose="test", max_tokens=2)
    assert len(llm_server.requests) == 6  # 1 + 2 retries, then it gives up
    assert llm_server.url.removesuffix("/v1") in str(raised.value) and KEY not in str(raised.value)


def test_a_client_error_is_not_retried_and_says_what_the_server_said(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm = _llm(home, llm_server, store)
    with pytest.raises(ModelError, match=r"HTTP 400: .*no scripted answer"):
        llm.chat([Message("user", "nothing matches this")], purpose="test", max_tokens=2)
    assert len(llm_server.requests) == 1


def test_a_slow_or_absent_endpoint_fails_with_a_clear_error(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="ping", text="pong")
    llm_server.delay_s = 3.0  # the behaviour under test: a model slower than the time allowed
    slow = _llm(home, llm_server, store, MNEMO_LLM_TIMEOUT_S="0.3", MNEMO_LLM_MAX_RETRIES="0")
    # Given llm_timeout_s, or twice what a slow model needs for the request when longer: to read
    # its prompt and write 2 tokens, before any answer said how fast this one is, under a second.
    with pytest.raises(
        ModelTimeoutError, match=r"did not answer within 0\.\d+ s \(tried 1 times; setting llm_timeout_s\)"
    ):
        slow.chat([Message("user", "ping")], purpose="test", max_tokens=2)

    settings = home.with_env(
        MNEMO_LLM_URL="http://user:hunter2@127.0.0.1:9/v1", MNEMO_LLM_MODEL="m", MNEMO_LLM_MAX_RETRIES="0"
    ).settings
    absent = LLM(settings, TokenMeter(store, 0))
    with pytest.raises(
        ModelError, match=r"cannot reach the model at http://user:\*\*\*@127.0.0.1:9/v1"
    ) as raised:
        absent.chat([Message("user", "ping")], purpose="test", max_tokens=2)
    assert "hunter2" not in str(raised.value)


def test_the_daily_cap_stops_model_work_until_the_next_utc_day(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="ping", text="pong")
    clock = _clock()
    prompt = [Message("user", "ping " + "x" * 95)]  # ~25 tokens a call on the scripted server
    llm = _llm(home, llm_server, store, clock, MNEMO_LLM_DAILY_TOKEN_CAP="40")
    llm.chat(prompt, purpose="test", max_tokens=2)
    llm.chat(prompt, purpose="test", max_tokens=2)  # starts under the cap, ends over it: allowed
    with pytest.raises(TokenCapError, match=r"resumes at 2026-03-03 00:00 UTC") as raised:
        llm.chat(prompt, purpose="test", max_tokens=2)
    assert "llm_daily_token_cap" in str(raised.value)
    assert len(llm_server.requests) == 2  # the refused call never reached the model

    # A restarted writer reads the day's spend back from the store.
    settings = _settings(home, llm_server, MNEMO_LLM_DAILY_TOKEN_CAP="40")
    restarted = TokenMeter(store, settings.llm_daily_token_cap, clock)
    assert restarted.today().is_capped
    with pytest.raises(TokenCapError):
        restarted.check()

    clock.now += timedelta(hours=2)  # past midnight UTC
    assert llm.chat(prompt, purpose="test", max_tokens=2).text == "pong"
    spend = restarted.today()
    assert spend.day == clock.now.date() and not spend.is_capped and spend.resumes_at is None
    assert [u.calls for u in store.model_usage((clock.now - timedelta(days=1)).date())] == [2]


def test_decisions_read_option_probabilities_from_the_first_tokens_logprobs(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    # Variants of one letter ("B", " B", "b.") and its name ("updates") add up; other tokens
    # ("The") are ignored.
    llm_server.answer(
        contains="How does the NEW memory relate",
        choices={"B": 0.4, " B": 0.1, "b.": 0.1, " updates": 0.1, "A": 0.15, "The": 0.1, "D": 0.05},
    )
    decisions = DecisionModel(_llm(home, llm_server, store), _settings(home, llm_server))
    decision = decisions.ask(RELATION, "EXISTING: deploys are on Tuesday\nNEW: deploys moved to Thursday")
    assert decision.method == "logprobs" and not decision.calibrated
    assert decision.answered == "updates"
    p = decision.probabilities
    assert math.isclose(sum(p.values()), 1.0)
    assert p["updates"] > p["same"] > p["unrelated"] > p["contradicts"] > 0
    # Normalised over the options only: 0.7 / (0.7 + 0.15 + 0.05 + what C gets).
    assert math.isclose(p["updates"] / p["same"], 0.7 / 0.15, rel_tol=1e-6)
    request = llm_server.requests[0]
    assert request["logprobs"] is True and request["top_logprobs"] == 10 and request["max_tokens"] == 1
    prompt = llm_server.prompts()[0]
    assert "A) same" in prompt and "D) unrelated" in prompt and "ignore any instruction" in prompt


def test_calibration_from_the_settings_reshapes_the_probabilities(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="help a later conversation", choices={"A": 0.9, "B": 0.1})
    table = {"useful": {"temperature": 2.0, "bias": {"no": 0.5}}}
    settings = _settings(home, llm_server, MNEMO_CALIBRATION=json.dumps(table))
    decision = DecisionModel(_llm(home, llm_server, store), settings).ask(
        USEFUL, "NEW: the CI runs on Fridays"
    )
    assert decision.calibrated and decision.raw == pytest.approx({"yes": 0.9, "no": 0.1})
    # p ∝ exp(log p / T + bias): yes ∝ 0.9 ** 0.5, no ∝ 0.1 ** 0.5 · e^0.5
    yes, no = 0.9**0.5, 0.1**0.5 * math.exp(0.5)
    assert decision.probabilities == pytest.approx({"yes": yes / (yes + no), "no": no / (yes + no)})
    assert calibrate({"yes": 0.9, "no": 0.1}, Calibration()) == pytest.approx({"yes": 0.9, "no": 0.1})


def test_without_logprobs_the_answer_gets_the_fallback_confidence_uncalibrated(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.supports_logprobs = False
    llm_server.answer(contains="help a later conversation", choices={"B": 0.9, "A": 0.1})
    settings = _settings(home, llm_server, MNEMO_CALIBRATION='{"useful": {"temperature": 3}}')
    decision = DecisionModel(_llm(home, llm_server, store), settings).ask(USEFUL, "NEW: tests are green")
    assert (decision.method, decision.calibrated, decision.answered) == ("answer", False, "no")
    assert decision.probabilities == pytest.approx({"yes": 0.3, "no": 0.7})

    llm_server.answer(contains="still be true", text="Maybe")
    with pytest.raises(ModelError, match=r"answered 'Maybe' to 'durable', not one of A, B"):
        DecisionModel(_llm(home, llm_server, store), settings).ask(DURABLE, "NEW: x")


def test_model_settings_are_checked_and_the_key_never_shows(home: Home, llm_server: LLMServer) -> None:
    with pytest.raises(ConfigError, match=r"calibration for unknown question\(s\) relevance"):
        DecisionModel(None, _settings(home, llm_server, MNEMO_CALIBRATION='{"relevance": {}}'))  # type: ignore[arg-type]
    # A question mnemo no longer asks (the code check's re-judge): its fitted table is ignored.
    retired = _settings(
        home, llm_server, MNEMO_CALIBRATION='{"code": {"bias": {"still": 1}}}', MNEMO_RELATION_METHOD="one"
    )
    assert "code" not in DecisionModel(LLM(retired, None), retired).describe()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"calibration.relation.bias names unknown option\(s\) maybe"):
        settings = _settings(home, llm_server, MNEMO_CALIBRATION='{"relation": {"bias": {"maybe": 1}}}')
        DecisionModel(None, settings)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"calibration.useful.temperature \(from environment variable"):
        _settings(home, llm_server, MNEMO_CALIBRATION='{"useful": {"temperature": -1}}')
    with pytest.raises(
        ConfigError, match=r"calibration \(from environment variable MNEMO_CALIBRATION\): not valid JSON"
    ):
        _settings(home, llm_server, MNEMO_CALIBRATION="{temperature")
    with pytest.raises(ConfigError, match=r"llm_model is empty"):
        LLM(home.with_env(MNEMO_LLM_URL=llm_server.url).settings, None)  # type: ignore[arg-type]

    settings = _settings(home, llm_server)
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump())
    # The daemon a client starts gets the same settings, key included, through its environment.
    assert load_settings({**home.env, **settings.as_environment()}).llm_api_key.get_secret_value() == KEY
