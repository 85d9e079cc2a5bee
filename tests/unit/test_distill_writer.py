"""Distillation end to end in one process: real store (chDB), real recall engine and fallback
embedder, the real openai client against the scripted model server.

The "deploy day" scenario: eight sessions over several days; in the second the team settles on
Tuesday deploys, in the sixth they move to Thursday and say why. After distillation and judging,
recall answers Thursday (current) and, asked about the past, Tuesday (closed by Thursday), in
English and in Spanish.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from mnemo.config import Settings
from mnemo.distill.decide import DecisionModel
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import BATCH_CHARS, Distiller, batch_chars
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.errors import TokenCapError
from mnemo.index.live import RecallEngine
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus
from tests.helpers import (
    DEPLOY_DAY_START,
    GEMMA,
    HAS_GEMMA,
    MODELS_DIR,
    SAME,
    UNRELATED,
    Clock,
    Home,
    record_deploy_day,
    script_deploy_day,
)
from tests.llm_server import LLMServer


@pytest.fixture
def settings(home: Home, llm_server: LLMServer) -> Settings:
    return home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER=FALLBACK_ID
    ).settings


def _distiller(settings: Settings, store: ClickHouseStore, engine: RecallEngine) -> Distiller:
    llm = LLM(settings, TokenMeter(store, settings.llm_daily_token_cap))
    return Distiller(store, engine, llm, DecisionModel(llm, settings))


def _top(engine: RecallEngine, question: str) -> tuple[str, bool]:
    found = engine.search_memories(
        engine.understand(question, DEPLOY_DAY_START + timedelta(days=9)),
        namespaces=None,
        types=None,
        force_history=False,
        limit=3,
    )
    memory = engine.memory(found[0].owner)
    assert memory is not None
    return memory.what, found[0].is_current


# Asked in Spanish, "¿qué día desplegamos?" ties under the fallback: its cosine to the Thursday
# memory (0.17) equals an unrelated one's; EmbeddingGemma ranks it first. The fallback's leg asks
# "¿qué día hacemos el despliegue?".
EMBEDDERS = [
    pytest.param(FALLBACK_ID, {}, "¿qué día hacemos el despliegue?", id="fallback"),
    pytest.param(
        GEMMA,
        {"MNEMO_MODELS_DIR": MODELS_DIR},
        "¿qué día desplegamos?",
        id="embeddinggemma",
        marks=pytest.mark.skipif(not HAS_GEMMA, reason="set MNEMO_TEST_MODELS_DIR"),
    ),
]


@pytest.mark.parametrize(("embedder", "env", "spanish"), EMBEDDERS)
def test_deploy_day_moves_to_thursday_and_tuesday_becomes_history(
    home: Home,
    llm_server: LLMServer,
    store: ClickHouseStore,
    embedder: str,
    env: dict[str, str],
    spanish: str,
) -> None:
    script_deploy_day(llm_server)
    settings = home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER=embedder, **env
    ).settings
    engine = RecallEngine(load_embedder(settings))
    distiller = _distiller(settings, store, engine)
    for number in range(1, 9):
        record_deploy_day(store, [number])
        results = distiller.distil_session(f"s{number}")
        assert len(results) == 1 and results[0].batch.episodes == 2

    assert _top(engine, "what day do we deploy?") == ("The shop is deployed on Thursdays", True)
    assert _top(engine, spanish) == ("The shop is deployed on Thursdays", True)
    assert _top(engine, "what day did we deploy before?") == ("The shop is deployed on Tuesdays", False)
    assert _top(engine, "¿qué día desplegábamos antes?") == ("The shop is deployed on Tuesdays", False)

    [log_thursday] = [row for row in store.judge_log(20) if row.session == "s6"]
    assert log_thursday.action == "close" and len(log_thursday.closes) == 1
    tuesday = store.get_memory(log_thursday.closes[0])
    thursday = store.get_memory(log_thursday.memory)
    assert tuesday is not None and thursday is not None
    assert tuesday.status is MemoryStatus.CLOSED and tuesday.closed_by == thursday.id
    assert tuesday.valid_to == thursday.valid_from == DEPLOY_DAY_START + timedelta(days=6)
    assert thursday.why == "QA needs Wednesday to test the release" and thursday.sources == ["s6-0"]
    detail = json.loads(log_thursday.detail)  # the judge's inputs and outputs
    [compared] = [c for c in detail["comparisons"] if c["existing"] == tuesday.id]
    assert compared["existing_text"] == "The shop is deployed on Tuesdays"
    assert compared["relation"]["probabilities"]["updates"] > 0.6 and compared["guard"] == []
    assert detail["source"].startswith("[s6-0] person (ana): Deploys move to Thursday")
    # Sessions with nothing worth keeping leave no memory, and nothing is distilled twice.
    assert distiller.distil_session("s6") == []
    assert sum(1 for _ in store.memories_page("", 100)) == 4


@pytest.mark.parametrize("thursday", [UNRELATED, SAME], ids=["judged-unrelated", "judged-same"])
def test_the_newest_word_closes_the_older_whatever_the_model_reads(
    settings: Settings, llm_server: LLMServer, store: ClickHouseStore, thursday: dict[str, float]
) -> None:
    script_deploy_day(llm_server, thursday)
    engine = RecallEngine(load_embedder(settings))
    distiller = _distiller(settings, store, engine)
    for number in range(1, 9):
        record_deploy_day(store, [number])
        distiller.distil_session(f"s{number}")

    assert _top(engine, "what day do we deploy?") == ("The shop is deployed on Thursdays", True)
    [row] = [row for row in store.judge_log(20) if row.session == "s6"]
    tuesday, thursday_memory = store.get_memory(row.closes[0]), store.get_memory(row.memory)
    assert tuesday is not None and thursday_memory is not None  # added, never merged into Tuesday
    assert tuesday.what == "The shop is deployed on Tuesdays" and tuesday.status is MemoryStatus.CLOSED
    assert tuesday.closed_by == thursday_memory.id and tuesday.status_reason.startswith("by rule:")
    assert row.action == "close" and "by rule" in row.reason
    [rule] = json.loads(row.detail)["rules"]  # the rule's evidence, beside the model's reading
    assert rule == {
        "closes": tuesday.id,
        "text": "The shop is deployed on Tuesdays",
        "evidence": "the same statement with another weekday",
    }


def test_a_writer_stopped_mid_batch_redoes_it_once(
    settings: Settings, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    script_deploy_day(llm_server)
    record_deploy_day(store, [2, 3])
    engine = RecallEngine(load_embedder(settings))
    # Stopped after recording the batch as started, before any model call: redone at start.
    distiller = _distiller(settings, store, engine)
    started = distiller._next_batch("s2", store.session_cursor("s2"), "")
    assert started is not None and [b.id for b in store.started_batches()] == [started.id]
    [redone] = _distiller(settings, store, engine).recover()
    assert redone.batch.id == started.id and len(redone.added) == 1 and not redone.was_applied_before
    assert store.started_batches() == [] and store.session_cursor("s2") == started.end

    # Stopped after the commit insert, before "done": the redo finds the rows and calls no model.
    [done] = distiller.distil_session("s3")
    calls = len(llm_server.requests)
    store.put_batch(done.batch, datetime.now(UTC))  # its "started" record, as the stop left it
    [again] = _distiller(settings, store, RecallEngine(None)).recover()
    assert again.was_applied_before and len(llm_server.requests) == calls
    memories = list(store.memories_page("", 100))
    assert len(memories) == 2 and len({m.what for m in memories}) == 2


def test_an_unusable_extraction_fails_the_batch_visibly_and_the_session_moves_on(
    settings: Settings, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="Transcript:", text="not json at all")
    record_deploy_day(store, [1])
    engine = RecallEngine(load_embedder(settings))
    [result] = _distiller(settings, store, engine).distil_session("s1")
    [failed] = store.failed_batches()
    assert failed.id == result.batch.id and "unusable after 3 attempts" in failed.error
    assert store.session_cursor("s1") == failed.end and list(store.memories_page("", 10)) == []


def test_a_tiny_daily_cap_stops_distillation_until_the_next_day(
    settings: Settings, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    script_deploy_day(llm_server)
    record_deploy_day(store, [2, 3])
    clock = Clock(datetime(2026, 3, 4, 23, 0, tzinfo=UTC))
    # On the scripted server session 2's batch costs 800 to 850 tokens, and with session 3's
    # extraction the day passes 1,600: a cap of 1,200 lets the first through and stops the second
    # after its extraction.
    meter = TokenMeter(store, 1_200, clock)
    llm = LLM(settings, meter)
    engine = RecallEngine(load_embedder(settings))
    distiller = Distiller(store, engine, llm, DecisionModel(llm, settings), clock=clock)
    assert len(distiller.distil_session("s2")[0].added) == 1
    with pytest.raises(TokenCapError, match="resumes at 2026-03-05 00:00 UTC"):
        distiller.distil_session("s3")
    [waiting] = store.started_batches()
    assert waiting.session == "s3" and len(list(store.memories_page("", 10))) == 1

    assert waiting.extraction  # kept before the judge ran: the redo does not extract again
    extractions = sum("Transcript:\n[s3-0]" in p for p in llm_server.prompts())
    clock.now += timedelta(hours=1, minutes=30)  # the next UTC day
    [resumed] = distiller.recover()
    assert resumed.batch.id == waiting.id and len(resumed.added) == 1
    assert sum("Transcript:\n[s3-0]" in p for p in llm_server.prompts()) == extractions == 1
    assert sorted(m.what for m in store.memories_page("", 10)) == [
        "Product pages are cached in Redis",
        "The shop is deployed on Tuesdays",
    ]


def test_a_small_daily_cap_makes_batches_small_enough_to_finish_in_a_day() -> None:
    assert batch_chars(0) == BATCH_CHARS  # no cap
    assert batch_chars(10_000) == 10_000 < BATCH_CHARS
    assert batch_chars(100) == 2_000  # never so small that a long line cannot fit
    assert batch_chars(10**9) == BATCH_CHARS
