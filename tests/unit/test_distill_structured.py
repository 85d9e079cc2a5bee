"""What the writer does so that a small model extracts right, through the real openai client
against the scripted server: a JSON schema asked for where the endpoint takes one (and not again
where it refuses it), and a person's question never backing a decision."""

from __future__ import annotations

import json

from mnemo.distill.extract import extract
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import BATCH_CHARS, batch_chars
from mnemo.episodes import Episode, EpisodeIn, EpisodeIntake, Role
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryType
from tests.helpers import Home
from tests.llm_server import LLMServer

INTAKE = EpisodeIntake(max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor())
REDIS = {"type": "decision", "what": "Product pages are cached in Redis", "sources": ["ep_1", "ep_2"]}


def _episodes(*lines: tuple[str, Role, str]) -> list[Episode]:
    return [
        INTAKE.accept(
            EpisodeIn(
                id=eid, text=text, role=role, who="ana" if role == Role.USER else "", session="s1", turn=i
            )
        )
        for i, (eid, role, text) in enumerate(lines)
    ]


def _llm(home: Home, server: LLMServer, store: ClickHouseStore) -> LLM:
    settings = home.with_env(MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL="scripted-1").settings
    return LLM(settings, TokenMeter(store, 0))


PROPOSED = _episodes(
    ("ep_1", Role.USER, "The product pages are slow. What could we cache them with?"),
    ("ep_2", Role.ASSISTANT, "Let's use Redis for the product page cache: it is already in the stack."),
)


def test_the_extraction_asks_for_its_json_schema_with_the_shown_ids_as_the_only_sources(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": [REDIS]}))
    extract(_llm(home, llm_server, store), PROPOSED)
    [request] = llm_server.requests
    schema = request["response_format"]["json_schema"]["schema"]
    memory = schema["properties"]["memories"]["items"]
    assert request["response_format"]["type"] == "json_schema"
    assert memory["properties"]["sources"]["items"]["enum"] == ["ep_1", "ep_2"]
    assert "decision" in memory["properties"]["type"]["enum"] and memory["additionalProperties"] is False


def test_an_endpoint_that_refuses_the_schema_is_asked_again_without_it_and_never_with_it_again(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": [REDIS]}))
    llm_server.fail_next(1, status=400)
    llm = _llm(home, llm_server, store)
    [draft] = extract(llm, PROPOSED)
    assert draft.memory.what == REDIS["what"]
    extract(llm, PROPOSED)
    assert ["response_format" in r for r in llm_server.requests] == [True, False, False]


def test_a_decision_whose_only_person_line_is_a_question_is_stored_as_a_fact(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    accepted = _episodes(*PROPOSED_LINES, ("ep_3", Role.USER, "Vale, hazlo."))
    llm_server.answer(contains="Transcript:\n[ep_1]", text=json.dumps({"memories": [REDIS]}), times=1)
    llm_server.answer(
        contains="Transcript:\n[ep_1]",
        text=json.dumps({"memories": [{**REDIS, "sources": ["ep_2", "ep_3"]}]}),
    )
    llm = _llm(home, llm_server, store)
    [asked] = extract(llm, PROPOSED)
    assert asked.memory.type == MemoryType.FACT and asked.demoted and asked.human_backed
    [decided] = extract(llm, accepted)
    assert decided.memory.type == MemoryType.DECISION and not decided.demoted


PROPOSED_LINES = (
    ("ep_1", Role.USER, "The product pages are slow. What could we cache them with?"),
    ("ep_2", Role.ASSISTANT, "Let's use Redis for the product page cache: it is already in the stack."),
)


def test_a_small_daily_cap_makes_batches_small_enough_to_finish_in_a_day() -> None:
    assert batch_chars(0) == BATCH_CHARS  # no cap
    assert batch_chars(10_000) == 10_000 < BATCH_CHARS
    assert batch_chars(100) == 2_000  # never so small that a long line cannot fit
    assert batch_chars(10**9) == BATCH_CHARS


def test_a_why_the_transcript_does_not_state_is_dropped_and_a_stated_one_kept(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    talk = _episodes(
        ("ep_1", Role.USER, "Deploys move to Thursday: QA needs Wednesday to test the release."),
        ("ep_2", Role.ASSISTANT, "Understood, deploys go out on Thursday."),
    )
    stated = {"type": "decision", "what": "Deploys are on Thursday", "why": "QA needs Wednesday to test"}
    invented = {"type": "fact", "what": "Deploys go out on Thursday", "why": "to align with the business"}
    invented["how"] = "by the customer schedule"
    llm_server.answer(
        contains="Transcript:",
        text=json.dumps({"memories": [{**stated, "sources": ["ep_1"]}, {**invented, "sources": ["ep_2"]}]}),
    )
    kept, dropped = extract(_llm(home, llm_server, store), talk)
    assert kept.memory.why == "QA needs Wednesday to test"
    assert dropped.memory.why == "" and dropped.memory.how == "" and dropped.memory.what == invented["what"]
