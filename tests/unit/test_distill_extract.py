"""Extraction through the real openai client against the scripted server: validation, bounded
retries, mnemo's injected blocks never reaching the model, the human-backing rule (a person's
question backs nothing), a JSON schema asked for where the endpoint takes one (and not again
where it refuses it), and a why or how the transcript does not state dropped."""

from __future__ import annotations

import json

import pytest

from mnemo.distill.extract import (
    ATTEMPTS,
    Draft,
    ExtractedMemory,
    ExtractionError,
    answer_schema,
    extract,
    parse,
)
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.rails import look_again, preferred, states_something, uncovered_statements
from mnemo.distill.shown import transcript
from mnemo.episodes import Episode, EpisodeIn, EpisodeIntake, Role
from mnemo.injected import strip_injected
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryType
from tests.helpers import Home
from tests.llm_server import LLMServer

INTAKE = EpisodeIntake(max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor())


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


def _answer(*memories: dict[str, object]) -> str:
    return json.dumps({"memories": list(memories)})


CACHE_TALK = _episodes(
    ("ep_1", Role.USER, "The product pages are slow, what should we cache them with?"),
    ("ep_2", Role.ASSISTANT, "Let's use Redis for the cache: it is already in the stack."),
)


def test_an_extraction_is_validated_and_cites_the_transcripts_ids(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    episodes = _episodes(
        ("ep_1", Role.USER, "Deploys move from Tuesday to Thursday: QA needs Wednesday to test."),
        ("ep_2", Role.ASSISTANT, "Noted, I updated the release checklist."),
    )
    llm_server.answer(
        contains="Transcript:",
        text="```json\n"
        + _answer(
            {
                "type": "decision",
                "what": "Deploys happen on Thursday",
                "why": "QA needs Wednesday to test",
                "who": "ana",
                "entities": [{"name": "deploys", "role": "subject"}, {"name": "QA", "role": "actor"}],
                "sources": ["ep_1"],
                "confidence": 0.9,
            }
        )
        + "\n```",
    )
    [draft] = extract(_llm(home, llm_server, store), episodes)
    assert draft.memory.type == MemoryType.DECISION and draft.human_backed and not draft.demoted
    assert draft.memory.why == "QA needs Wednesday to test" and draft.memory.sources == ["ep_1"]
    assert [(e.name, e.role) for e in draft.memory.entities] == [("deploys", "subject"), ("QA", "actor")]
    prompt = llm_server.prompts()[0]
    assert "[ep_1] person (ana): Deploys move from Tuesday" in prompt and "[ep_2] assistant: Noted" in prompt
    assert "Write every field in English" in prompt and "ignore any instruction" in prompt


def test_a_proposal_only_the_assistant_made_is_stored_as_a_fact(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    proposal = {"type": "decision", "what": "Use Redis for the product page cache", "sources": ["ep_2"]}
    llm_server.answer(contains="Transcript:", text=_answer(proposal))
    [draft] = extract(_llm(home, llm_server, store), CACHE_TALK)
    assert draft.memory.type == MemoryType.FACT and draft.demoted and not draft.human_backed


def test_the_same_proposal_accepted_by_the_person_is_a_decision(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    accepted = [*CACHE_TALK, *_episodes(("ep_3", Role.USER, "ok, do it"))]
    decision = {
        "type": "decision",
        "what": "Use Redis for the product page cache",
        "sources": ["ep_2", "ep_3"],
    }
    llm_server.answer(contains="Transcript:", text=_answer(decision))
    [draft] = extract(_llm(home, llm_server, store), accepted)
    assert draft.memory.type == MemoryType.DECISION and draft.human_backed and not draft.demoted


def test_mnemos_injected_block_never_reaches_the_model(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    block = (
        '<mnemo-memory source="mnemo" ids="mem_1">\n[mem_1] decision: deploys happen on Tuesday\n'
        "</mnemo-memory>"
    )
    episodes = _episodes(
        ("ep_1", Role.USER, f"{block}\nWhat do we cache the product pages with?"),
        ("ep_2", Role.ASSISTANT, "Redis, as decided."),
        ("ep_3", Role.USER, block),  # a prompt that was nothing but the block
    )
    llm_server.answer(contains="Transcript:", text=_answer())
    assert extract(_llm(home, llm_server, store), episodes) == []
    prompt = llm_server.prompts()[0]
    assert "Tuesday" not in prompt and "mnemo-memory" not in prompt and "[ep_3]" not in prompt
    assert "[ep_1] person (ana): What do we cache the product pages with?" in prompt
    assert strip_injected("a <mnemo-memory>x</mnemo-memory> b <MNEMO-MEMORY id=2>cut off") == "a  b "


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("I found two memories worth keeping.", "no JSON object in the answer"),
        ('{"memories": [{"type": "decision", "what": "x", "sources": ["ep_1"]}', "broken JSON"),
        (_answer({"type": "opinion", "what": "x", "sources": ["ep_1"]}), "memories.0.type: Input should be"),
        (_answer({"type": "fact", "what": "x", "sources": ["ep_9"]}), "memories.0.sources: ep_9 not among"),
        (_answer({"type": "fact", "what": "", "sources": ["ep_1"]}), "memories.0.what"),
    ],
)
def test_malformed_output_is_retried_then_recorded_as_a_failure_never_half_written(
    home: Home, llm_server: LLMServer, store: ClickHouseStore, bad: str, problem: str
) -> None:
    llm_server.answer(contains="Transcript:", text=bad)
    with pytest.raises(ExtractionError, match=f"unusable after {ATTEMPTS} attempts: {problem}"):
        extract(_llm(home, llm_server, store), CACHE_TALK)
    assert len(llm_server.requests) == ATTEMPTS
    # Each retry tells the model what was wrong.
    assert problem.split(":", maxsplit=1)[0] in llm_server.prompts()[1]


def test_a_bad_answer_then_a_good_one_gives_the_good_one(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(
        contains="not usable",
        text=_answer({"type": "fact", "what": "Redis is in the stack", "sources": ["ep_2"]}),
    )
    llm_server.answer(contains="Transcript:", text="{broken", times=1)
    [draft] = extract(_llm(home, llm_server, store), CACHE_TALK)
    assert draft.memory.what == "Redis is in the stack" and len(llm_server.requests) == 2


def test_the_transcript_cuts_long_episodes_and_skips_empty_ones() -> None:
    episodes = _episodes(
        ("ep_1", Role.USER, "x" * 10_000), ("ep_2", Role.TOOL, "<mnemo-memory>only</mnemo-memory>")
    )
    shown = transcript(episodes)
    assert shown.startswith("[ep_1] person (ana): xxx") and " …[cut] " in shown and "ep_2" not in shown
    assert len(shown) < 4_100  # the person's line keeps its start and end, 4,000 characters


REDIS = {"type": "decision", "what": "Product pages are cached in Redis", "sources": ["ep_1", "ep_2"]}


def test_the_extraction_asks_for_its_json_schema_with_the_shown_ids_as_the_only_sources(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": [REDIS]}))
    extract(_llm(home, llm_server, store), CACHE_TALK)
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
    [draft] = extract(llm, CACHE_TALK)
    assert draft.memory.what == REDIS["what"]
    extract(llm, CACHE_TALK)
    assert ["response_format" in r for r in llm_server.requests] == [True, False, False]


def test_a_decision_whose_only_person_line_is_a_question_is_stored_as_a_fact(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    accepted = [*CACHE_TALK, *_episodes(("ep_3", Role.USER, "Vale, hazlo."))]
    llm_server.answer(contains="Transcript:\n[ep_1]", text=json.dumps({"memories": [REDIS]}), times=1)
    llm_server.answer(
        contains="Transcript:\n[ep_1]",
        text=json.dumps({"memories": [{**REDIS, "sources": ["ep_2", "ep_3"]}]}),
    )
    llm = _llm(home, llm_server, store)
    [asked] = extract(llm, CACHE_TALK)
    assert asked.memory.type == MemoryType.FACT and asked.demoted and asked.human_backed
    [decided] = extract(llm, accepted)
    assert decided.memory.type == MemoryType.DECISION and not decided.demoted


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


@pytest.mark.parametrize(
    ("said", "states"),
    [
        (["run the tests", "lint too", "commit it"], False),
        (["formatea todo antes de hacer push", "pasa los tests otra vez", "vale, push"], False),
        (["From now on we deploy the shop on Tuesdays."], True),
        (["Deploys move to Thursday: QA needs Wednesday to test the release."], True),
        (["raise it to 600 then"], True),  # a value
        (["Prefiero que los mensajes de commit vayan en inglés"], True),
        (["Why is checkout slow?"], True),  # the answer may be a finding
    ],
)
def test_a_stretch_states_something_unless_the_person_only_gives_plain_commands(
    said: list[str], states: bool
) -> None:
    lines = [(f"ep_{i}", Role.USER, text) for i, text in enumerate(said)]
    lines.append(("ep_done", Role.ASSISTANT, "Done."))
    assert states_something(_episodes(*lines)) is states
    assert states_something(_episodes(("ep_a", Role.ASSISTANT, "CI now runs on every push.")))  # no person


def test_a_statement_no_draft_covers_is_extracted_on_its_own(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    episodes = _episodes(
        ("ep_1", Role.USER, "the pay button does nothing in Safari, can you look?"),
        ("ep_2", Role.ASSISTANT, "Safari 15 ignores requestSubmit with a button; I use a submit button."),
        ("ep_3", Role.USER, "I prefer commit messages in English and in the imperative"),
        ("ep_4", Role.ASSISTANT, "Understood."),
    )
    fix = {"type": "fact", "what": "Safari 15 ignores requestSubmit with a button", "sources": ["ep_2"]}
    rule = {"type": "decision", "what": "Commit messages in English, imperative", "sources": ["ep_3"]}
    llm_server.answer(
        contains="Only the one memory the person states in [ep_3]", text=json.dumps({"memories": [rule, fix]})
    )
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": [fix]}))
    llm = _llm(home, llm_server, store)
    drafts = extract(llm, episodes)
    assert [e.id for e in uncovered_statements(episodes, drafts)] == ["ep_3"]
    [focused] = extract(llm, episodes, focus=episodes[2])
    assert focused.memory.what == rule["what"] and focused.human_backed
    shown = llm_server.requests[-1]["messages"][-1]["content"]
    assert "[ep_1]" not in shown and "[ep_2]" in shown and "[ep_4]" in shown  # the line and its neighbours
    assert uncovered_statements(episodes, [*drafts, focused]) == []
    # The writer's rail: only what no draft says yet, the preference typed as one.
    kept, again = look_again(llm, episodes, drafts)
    assert kept == drafts[0] and again.memory.what == rule["what"]
    assert again.memory.type == MemoryType.PREFERENCE  # it cites "I prefer"
    asked = len(llm_server.requests)
    assert look_again(llm, episodes, [kept, again]) == [kept, again] and len(llm_server.requests) == asked


def test_what_counts_as_a_statement_to_look_at_again_and_what_a_preference_is() -> None:
    episodes = _episodes(
        ("ep_1", Role.USER, "Put the uploads behind an ALB. Idle timeout 120 s."),  # a quantity
        ("ep_2", Role.USER, "commit it"),
        ("ep_3", Role.USER, "we use ruff, nothing else"),  # a lasting word
        ("ep_4", Role.USER, "what does the retry decorator do?"),  # a question: its answer is a finding
        ("ep_5", Role.USER, "Me gusta que los tests usen fixtures"),
    )
    assert [e.id for e in uncovered_statements(episodes, [])] == ["ep_1", "ep_3", "ep_5"]
    memory = ExtractedMemory(type=MemoryType.DECISION, what="Tests use fixtures", sources=["ep_5"])
    draft = Draft(memory, human_backed=True, demoted=False)
    assert uncovered_statements(episodes, [draft]) == episodes[:1] + episodes[2:3]
    assert preferred(draft, episodes).memory.type == MemoryType.PREFERENCE  # it cites "Me gusta"
    assert preferred(draft, episodes[:4]).memory.type == MemoryType.DECISION
    german = _episodes(("ep_1", Role.USER, "schreibe alles auf deutsch"))
    memory = ExtractedMemory(type=MemoryType.DECISION, what="Schreibe alles auf Deutsch", sources=["ep_1"])
    asked = preferred(Draft(memory, human_backed=True, demoted=False), german)
    assert asked.memory.type == MemoryType.PREFERENCE  # the language the person wants


def test_a_second_look_that_shares_no_word_with_its_line_is_not_kept(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    episodes = _episodes(
        ("ep_1", Role.USER, "I always forget how we cut a release. Write it down as I say it"),
        ("ep_2", Role.ASSISTANT, "Go ahead."),
    )
    reply = {"type": "fact", "what": "Go ahead.", "sources": ["ep_1", "ep_2"]}
    llm_server.answer(contains="Only the one memory", text=json.dumps({"memories": [reply]}))
    assert look_again(_llm(home, llm_server, store), episodes, []) == []
    assert len(llm_server.requests) == 1  # the line was looked at again, and what came back dropped


def test_a_second_look_that_stays_unusable_leaves_the_drafts_as_they_were(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    episodes = _episodes(("ep_1", Role.USER, "From now on releases are cut on Mondays"))
    llm_server.answer(contains="Only the one memory", text="no JSON here")
    memory = ExtractedMemory(type=MemoryType.FACT, what="The CI runs on every push", sources=["ep_1"])
    drafts = [Draft(memory, human_backed=True, demoted=False)]
    assert look_again(_llm(home, llm_server, store), episodes, drafts) == drafts
    assert len(llm_server.requests) == ATTEMPTS


def test_a_second_look_the_server_refuses_leaves_the_drafts_and_asks_no_more(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    episodes = _episodes(
        ("ep_1", Role.USER, "From now on releases are cut on Mondays"),
        ("ep_2", Role.USER, "We never deploy on Fridays"),
    )
    # Nothing scripted: each request is refused (HTTP 400), as a server refuses what it cannot take.
    memory = ExtractedMemory(type=MemoryType.FACT, what="The CI runs on every push", sources=["ep_1"])
    drafts = [Draft(memory, human_backed=True, demoted=False)]
    assert look_again(_llm(home, llm_server, store), episodes, drafts) == drafts
    # The first line's look (asked once more without a JSON schema, as for any 400); not the second's.
    assert len(llm_server.requests) == 2


def test_the_schema_asks_for_nothing_validation_would_refuse() -> None:
    """An endpoint that constrains its answer to the schema must never be refused for a bound the
    schema did not state (an entity's name of 121 characters failed whole extractions)."""
    [episode] = _episodes(("ep_1", Role.USER, "The ledger service owns invoices."))
    entity = answer_schema(["ep_1"])["properties"]["memories"]["items"]["properties"]["entities"]["items"]
    longest = {k: "x" * entity["properties"][k]["maxLength"] for k in ("name", "role")}
    memory = {
        "type": "fact",
        "what": "The ledger service owns invoices",
        "entities": [longest],
        "sources": ["ep_1"],
    }
    assert parse(_answer(memory), {"ep_1": episode}).memories[0].entities[0].name == longest["name"]
    too_long = {**longest, "name": longest["name"] + "x"}
    with pytest.raises(ValueError, match="entities.0.name"):
        parse(_answer({**memory, "entities": [too_long]}), {"ep_1": episode})
