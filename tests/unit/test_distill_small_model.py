"""A small model's rails, through the real openai client against the scripted server: for a model
family with shipped weights (Qwen2.5-Coder-1.5B) the relation is asked in steps and combined by
those weights, and every closed question is answered by word; with the light pass on, a
quiet stretch costs one question instead of an extraction. Whether the weights are *right* is
measured on a real model by tools/evals/eval_writer.py (docs/benchmarks.md); here, that they are what
the judge uses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.config import Settings
from mnemo.distill.decide import SYSTEM_WORD, DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.judge import Action, judge
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.relation import ABOUT, CHANGED, FEATURES, SAME, WORD, WRONG
from mnemo.distill.weights import shipped_weights
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.errors import ConfigError
from mnemo.index.live import RecallEngine
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryType
from tests.helpers import Home, make_memory, record_deploy_day
from tests.llm_server import LLMServer

SMALL = "qwen2.5-coder-1.5b"
YES = {"yes": 0.95, "no": 0.05}
NO = {"no": 0.95, "yes": 0.05}
LIMIT = make_memory(
    "mem_limit",
    "The public API allows 100 requests per minute",
    datetime(2026, 3, 1, tzinfo=UTC),
    sources=["ep_0"],
)


def _settings(home: Home, server: LLMServer, model: str = SMALL, **env: str) -> Settings:
    return home.with_env(
        MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL=model, MNEMO_EMBEDDER=FALLBACK_ID, **env
    ).settings


def _decisions(settings: Settings, store: ClickHouseStore) -> DecisionModel:
    return DecisionModel(LLM(settings, TokenMeter(store, 0)), settings)


def _worth_keeping(server: LLMServer) -> None:
    for text in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        server.answer(contains=text, choices=YES)


def _steps(
    server: LLMServer, *, about: dict[str, float], same: dict[str, float], word: dict[str, float]
) -> None:
    server.answer(contains=ABOUT.text, choices=about)
    server.answer(contains=SAME.text, choices=same)
    server.answer(contains=CHANGED.text, choices=NO)
    server.answer(contains=WRONG.text, choices=NO)
    server.answer(contains=WORD.text, choices=word)


def _new(what: str) -> ExtractedMemory:
    return ExtractedMemory(type=MemoryType.FACT, what=what, sources=["ep_9"])


def _judged(memory: ExtractedMemory, settings: Settings, store: ClickHouseStore) -> Action:
    return judge(memory, [LIMIT], memory.what, _decisions(settings, store), load_embedder(settings)).action


def test_a_small_model_judges_in_steps_answered_by_word_and_merges_what_they_call_the_same(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    _worth_keeping(llm_server)
    _steps(llm_server, about=YES, same=YES, word={"same": 0.9, "updates": 0.05, "contr": 0.03, "un": 0.02})
    settings = _settings(home, llm_server)
    steps = _decisions(settings, store).steps
    assert steps is not None and steps.matches(SMALL)
    action = _judged(
        _new("Clients may send at most 100 requests a minute to the public API"), settings, store
    )
    assert action is Action.MERGE
    asked = [r["messages"] for r in llm_server.requests]
    assert all(m[0]["content"] == SYSTEM_WORD for m in asked)
    assert all(
        m[-1]["content"].endswith(("Answer with one word: yes or no.", "contradicts or unrelated."))
        for m in asked
    )
    relation = [m for m in asked if "EXISTING note:" in m[-1]["content"]]
    assert len(relation) == 5  # four yes/no steps and the four-way question by word


def test_what_the_steps_call_unrelated_is_kept_beside_it(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    _worth_keeping(llm_server)
    _steps(llm_server, about=NO, same=NO, word={"un": 0.9, "same": 0.04, "updates": 0.03, "contr": 0.03})
    action = _judged(
        _new("The public API logs every request to the audit table"), _settings(home, llm_server), store
    )
    assert action is Action.ADD


def test_steps_for_a_model_without_weights_is_a_clear_error_and_one_asks_the_four_way_question(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    with pytest.raises(ConfigError, match=r"the model 'scripted-1' has no weights \(none ship for it"):
        _decisions(_settings(home, llm_server, "scripted-1", MNEMO_RELATION_METHOD="steps"), store)
    one = _decisions(_settings(home, llm_server, MNEMO_RELATION_METHOD="one"), store)
    assert one.steps is None
    assert _decisions(_settings(home, llm_server, "scripted-1"), store).steps is None  # auto


def _distiller(settings: Settings, store: ClickHouseStore) -> Distiller:
    llm = LLM(settings, TokenMeter(store, 0))
    engine = RecallEngine(load_embedder(settings))
    return Distiller(store, engine, llm, DecisionModel(llm, settings), light_pass=settings.light_pass)


def test_with_the_light_pass_a_quiet_session_costs_one_question_and_leaves_no_memory(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    settings = _settings(home, llm_server, MNEMO_LIGHT_PASS="true")
    llm_server.answer(contains="Running tests, small edits and status reports do not count", choices=NO)
    record_deploy_day(store, [2])  # "From now on we deploy the shop on Tuesdays." / "Understood …"
    [result] = _distiller(settings, store).distil_session("s2")
    assert result.quiet and result.added == [] and len(llm_server.requests) == 1
    assert store.session_cursor("s2") == result.batch.end and list(store.memories_page("", 10)) == []


def test_for_a_small_model_a_stretch_of_plain_commands_costs_no_call_and_leaves_no_memory(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    settings = _settings(home, llm_server)
    llm_server.answer(contains="Transcript:", text='{"memories": []}')
    record_deploy_day(store, [1, 2])  # "Set up the CI pipeline"; "From now on we deploy … Tuesdays."
    [quiet] = _distiller(settings, store).distil_session("s1")
    assert quiet.quiet and quiet.added == [] and llm_server.requests == []
    assert store.session_cursor("s1") == quiet.batch.end
    # What a person states is extracted as before.
    [stated] = _distiller(settings, store).distil_session("s2")
    assert not stated.quiet and any("Transcript:" in m["content"] for m in llm_server.requests[0]["messages"])
    # A larger model's extraction is not gated: it tells commands from decisions itself.
    other = _settings(home, llm_server, "scripted-1")
    record_deploy_day(store, [3])  # "Cache the product pages"
    [extracted] = _distiller(other, store).distil_session("s3")
    assert not extracted.quiet


def test_the_shipped_weights_are_for_the_features_the_judge_computes() -> None:
    assert shipped_weights()
    for weights in shipped_weights():
        assert tuple(weights.features) == FEATURES, weights.family
