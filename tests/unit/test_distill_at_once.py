"""The judge for models without log-probabilities: one call per new memory, with a schema, and
the same rules after it (the 0.6 rule, the guard, far-apart). Through the real openai client
against the scripted server with log-probabilities off; the host CLIs' own path is in
tests/e2e/test_writer_hosts.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mnemo.distill.at_once import JudgementError
from mnemo.distill.decide import DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.judge import Action, judge
from mnemo.distill.llm import LLM, Message
from mnemo.distill.meter import TokenMeter
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryType
from tests.helpers import Home, make_memory
from tests.llm_server import LLMServer

TUESDAY = make_memory(
    "mem_tue", "Deploys happen on Tuesday", datetime(2026, 3, 1, tzinfo=UTC), sources=["e0"]
)
CACHE = make_memory("mem_cache", "The product pages are cached in Redis", datetime(2026, 3, 1, tzinfo=UTC))
TIMEOUT = make_memory(
    "mem_120", "The gateway cuts idle connections at 120 s", datetime(2026, 3, 1, tzinfo=UTC)
)


@pytest.fixture
def decisions(home: Home, llm_server: LLMServer, store: ClickHouseStore) -> DecisionModel:
    """A model found to give no log-probabilities: its first reply without them says so."""
    llm_server.supports_logprobs = False
    llm_server.answer(contains="probe", choices={"A": 1.0}, times=1)
    settings = home.with_env(MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="no-logprobs-1").settings
    model = DecisionModel(LLM(settings, TokenMeter(store, 0)), settings)
    assert model.gives_logprobs
    model.llm.chat([Message("user", "probe")], purpose="probe", max_tokens=1, top_logprobs=5)
    assert not model.gives_logprobs
    llm_server.requests.clear()
    return model


def _new(what: str, why: str = "") -> ExtractedMemory:
    return ExtractedMemory(type=MemoryType.DECISION, what=what, why=why, sources=["ep_9"])


def _answer(server: LLMServer, answer: object) -> None:
    server.answer(contains="EXISTING memories:", text=json.dumps(answer))


def _sure(answer: str, sure: float = 0.9) -> dict[str, object]:
    return {"answer": answer, "sure": sure}


def test_one_call_judges_the_new_memory_and_every_candidate(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    _answer(
        llm_server,
        {
            "useful": _sure("yes"),
            "durable": _sure("yes"),
            "why_backed": _sure("yes"),
            "existing": [
                {"id": "E1", "relation": "updates", "sure": 0.85},
                {"id": "E2", "relation": "unrelated", "sure": 0.9},
            ],
        },
    )
    new = _new("Deploys happen on Thursday", why="QA needs Wednesday to test")
    verdict = judge(
        new, [TUESDAY, CACHE], "ana: deploys move to Thursday, QA needs Wednesday", decisions, None
    )
    assert verdict.action == Action.CLOSE and verdict.closes == ("mem_tue",)
    [request] = llm_server.requests
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["existing"]["items"]["properties"]["id"]["enum"] == ["E1", "E2"]
    prompt = request["messages"][1]["content"]
    assert (
        "[E1] Deploys happen on Tuesday" in prompt and "[E2] The product pages are cached in Redis" in prompt
    )
    comparison = verdict.comparisons[0]
    assert comparison.relation.method == "schema" and not comparison.relation.calibrated
    assert comparison.relation.probabilities["updates"] == pytest.approx(0.85)
    assert comparison.relation.probabilities["unrelated"] == pytest.approx(0.15)
    assert comparison.relation.probabilities["contradicts"] == 0


def test_a_bare_answer_gets_the_fallback_confidence_and_the_guard_still_vetoes_same(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    # As a small model writes it: no "sure", relations keyed by id.
    _answer(
        llm_server, {"useful": "yes", "durable": {"answer": "yes", "sure": 90}, "existing": {"E1": "same"}}
    )
    verdict = judge(
        _new("The gateway cuts idle connections at 600 s"), [TIMEOUT], "bo: 600 s now", decisions, None
    )
    comparison = verdict.comparisons[0]
    assert comparison.relation.probabilities["same"] == pytest.approx(decisions.fallback)
    assert verdict.about_new["durable"].probabilities["yes"] == pytest.approx(0.9)  # "sure": 90 read as 90 %
    assert comparison.barred and verdict.action != Action.MERGE


def test_below_the_rule_nothing_is_closed_and_a_left_out_candidate_is_untouched(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    _answer(
        llm_server,
        {
            "useful": _sure("yes"),
            "durable": _sure("yes"),
            "existing": [{"id": "E1", "relation": "updates", "sure": 0.55}],
        },
    )
    verdict = judge(
        _new("Deploys happen on Thursday"), [TUESDAY, CACHE], "deploys on Thursday", decisions, None
    )
    assert verdict.action == Action.ADD and verdict.closes == ()
    left_out = verdict.comparisons[1].relation.probabilities
    assert set(left_out.values()) == {0.25}


def test_not_useful_keeps_episodes_only(llm_server: LLMServer, decisions: DecisionModel) -> None:
    _answer(llm_server, {"useful": _sure("no", 0.8), "durable": _sure("no"), "existing": []})
    verdict = judge(_new("Ran the tests once"), [TUESDAY], "ran the tests", decisions, None)
    assert verdict.action == Action.EPISODES_ONLY


def test_an_unusable_answer_is_asked_again_then_fails_naming_the_problem(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    _answer(llm_server, {"useful": _sure("maybe"), "durable": _sure("yes"), "existing": []})
    with pytest.raises(
        JudgementError, match=r"unusable after 2 attempts: useful.answer: 'maybe' is not one of yes, no"
    ):
        judge(_new("Deploys happen on Thursday"), [TUESDAY], "deploys", decisions, None)
    assert len(llm_server.requests) == 2
    assert "That answer is not usable" in llm_server.requests[1]["messages"][-1]["content"]
