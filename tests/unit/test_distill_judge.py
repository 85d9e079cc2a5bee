"""The judge's rules through the real decision model (openai client → scripted server)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.config import load_settings
from mnemo.distill.decide import DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.judge import SOURCE_CHARS, Action, judge, source_fragments
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.embed import Embedder, load_embedder
from mnemo.memories import Memory
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryType
from tests.helpers import Home, make_memory
from tests.llm_server import LLMServer

YES = {"A": 0.9, "B": 0.1}
NO = {"B": 0.8, "A": 0.2}
SAME = {"A": 0.9, "B": 0.04, "C": 0.03, "D": 0.03}
UPDATES = {"B": 0.85, "A": 0.08, "C": 0.04, "D": 0.03}
UNRELATED = {"D": 0.9, "A": 0.05, "B": 0.03, "C": 0.02}
UNSURE = {"B": 0.5, "A": 0.3, "D": 0.2}


def _memory(memory_id: str, what: str, why: str = "") -> Memory:
    return make_memory(memory_id, what, datetime(2026, 3, 1, tzinfo=UTC), why=why, sources=["ep_0"])


def _new(what: str, why: str = "") -> ExtractedMemory:
    return ExtractedMemory(type=MemoryType.DECISION, what=what, why=why, sources=["ep_9"])


@pytest.fixture
def decisions(home: Home, llm_server: LLMServer, store: ClickHouseStore) -> DecisionModel:
    settings = home.with_env(MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1").settings
    return DecisionModel(LLM(settings, TokenMeter(store, 0)), settings)


def _worth(server: LLMServer, *, useful: dict[str, float] = YES, why_backed: dict[str, float] = YES) -> None:
    server.answer(contains="help a later conversation", choices=useful)
    server.answer(contains="still be true in a month", choices=YES)
    server.answer(contains="back the NEW memory's why", choices=why_backed)


def _relation(server: LLMServer, existing: str, choices: dict[str, float]) -> None:
    server.answer(contains=f"EXISTING memory: {existing}", choices=choices)


TUESDAY = _memory("mem_tue", "Deploys happen on Tuesday")
CACHE = _memory("mem_cache", "The product pages are cached in Redis")


def test_an_update_closes_the_memory_it_replaces(llm_server: LLMServer, decisions: DecisionModel) -> None:
    _worth(llm_server)
    _relation(llm_server, "Deploys happen on Tuesday", UPDATES)
    _relation(llm_server, "The product pages", UNRELATED)
    new = _new("Deploys happen on Thursday", why="QA needs Wednesday to test")
    verdict = judge(
        new, [TUESDAY, CACHE], "ana: deploys move to Thursday, QA needs Wednesday to test", decisions, None
    )
    assert verdict.action == Action.CLOSE and verdict.closes == ("mem_tue",) and verdict.merge_into is None
    assert verdict.memory.why == "QA needs Wednesday to test"
    assert [c.relation.best[0] for c in verdict.comparisons] == ["updates", "unrelated"]
    assert "updates mem_tue (p 0.85)" in verdict.reason
    assert set(verdict.about_new) == {"useful", "durable", "why_backed"}


def test_the_same_memory_is_merged_into_the_most_probable_one(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    timeout = _memory("mem_600", "The gateway timeout is 600 s, set in lb.tf")
    _worth(llm_server)
    _relation(llm_server, "The gateway timeout", SAME)
    _relation(llm_server, "The product pages", UNRELATED)
    verdict = judge(
        _new("lb.tf sets the gateway timeout to 600 seconds"), [CACHE, timeout], "src", decisions, None
    )
    assert verdict.action == Action.MERGE and verdict.merge_into == "mem_600" and verdict.closes == ()


def test_the_guard_keeps_a_changed_number_apart_whatever_the_judge_says(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    old = _memory("mem_120", "The load balancer cuts streams at 120 s")
    _worth(llm_server)
    _relation(llm_server, "The load balancer", {"A": 0.97, "B": 0.03})
    verdict = judge(_new("The load balancer cuts streams at 600 s"), [old], "src", decisions, None)
    assert (
        verdict.action == Action.ADD and "kept apart from mem_120: quantity: 120 s vs 600 s" in verdict.reason
    )
    [comparison] = verdict.comparisons
    assert comparison.relation.best == ("same", pytest.approx(0.97, abs=0.01))
    assert comparison.guard.reasons == ("quantity: 120 s vs 600 s",)


def test_the_guard_reads_the_value_set_in_how_but_not_the_one_cited_in_why(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    old = make_memory(
        "mem_alb",
        "The uploads service sits behind an ALB",
        datetime(2026, 3, 1, tzinfo=UTC),
        how="idle_timeout = 120 in infra/alb.tf",
        sources=["ep_0"],
    )
    _worth(llm_server)
    _relation(llm_server, "The uploads service", {"A": 0.97, "B": 0.03})
    raised = judge(_new("The uploads ALB idle timeout is 600 s"), [old], "src", decisions, None)
    assert raised.action == Action.ADD and raised.comparisons[0].guard.reasons == ("quantity: 120 vs 600 s",)
    cited = _new("The uploads service sits behind an ALB", why="at 120 s big uploads were cut")
    assert (
        judge(
            cited, [_memory("mem_plain", "The uploads service sits behind an ALB")], "src", decisions, None
        ).action
        == Action.MERGE
    )


def test_below_the_threshold_nothing_is_merged_or_closed(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    _worth(llm_server)
    _relation(llm_server, "Deploys happen on Tuesday", UNSURE)
    verdict = judge(_new("Deploys happen on Thursday"), [TUESDAY], "src", decisions, None)
    assert verdict.action == Action.ADD and verdict.closes == () and verdict.merge_into is None
    assert verdict.comparisons[0].relation.best[1] < 0.6


def test_a_memory_not_useful_later_stays_in_the_episodes(
    llm_server: LLMServer, decisions: DecisionModel
) -> None:
    _worth(llm_server, useful=NO)
    verdict = judge(_new("The tests are green"), [TUESDAY], "assistant: all tests pass", decisions, None)
    assert verdict.action == Action.EPISODES_ONLY and verdict.comparisons == ()
    assert not any("EXISTING memory" in p for p in llm_server.prompts())  # no pair was judged


def test_a_why_the_source_does_not_back_is_dropped(llm_server: LLMServer, decisions: DecisionModel) -> None:
    _worth(llm_server, why_backed=NO)
    verdict = judge(
        _new("We use Kafka for events", why="it scales better"), [], "ana: we use Kafka", decisions, None
    )
    assert (
        verdict.action == Action.ADD
        and verdict.memory.why == ""
        and verdict.memory.what == "We use Kafka for events"
    )


def test_a_long_source_is_shown_by_its_most_similar_fragments(
    home: Home, llm_server: LLMServer, decisions: DecisionModel
) -> None:
    embedder: Embedder | None = load_embedder(
        load_settings({**home.env, "MNEMO_EMBEDDER": "use-multilingual-v3"})
    )
    assert embedder is not None
    log = " ".join(
        f"INFO worker {i} processed batch {i} of the nightly export without errors." for i in range(80)
    )
    why = (
        "The gateway timeout was raised to 600 seconds because the load balancer cut streams at 120 seconds."
    )
    source = f"{log} {why} " + " ".join(f"DEBUG heartbeat {i} ok." for i in range(40))
    assert len(source) > 4 * SOURCE_CHARS
    shown = source_fragments(
        source, "Gateway timeout raised to 600 s. Why: the load balancer cut streams at 120 s", embedder
    )
    assert why in shown and len(shown) <= SOURCE_CHARS

    _worth(llm_server)
    new = _new("The gateway timeout is 600 s", why="the load balancer cut streams at 120 s")
    judge(new, [], source, decisions, embedder)
    assert all(why in p for p in llm_server.prompts())  # what the judge read holds the why
