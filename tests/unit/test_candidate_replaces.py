"""A memory that waits for a person closes nothing while it waits: the current memory it would
close stays current (recall and the hooks keep answering with it), and approving the candidate —
by a person, or by review's auto-approval — closes it. Found by the arena (docs/benchmarks.md): a
change cited from tool output alone closed the current memory at once and left nothing current
(tool output alone is no longer a memory at all, mnemo.distill.gate; a procedure only the agent
stated waits the same way).
Real store (chDB), the real writer and recall engine, the scripted model server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from mnemo.api.review import ReviewAction
from mnemo.config import Settings
from mnemo.daemon.runtime import Daemon
from mnemo.distill.decide import DecisionModel
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.policy import Approval
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.episodes import Role
from mnemo.index.live import RecallEngine
from mnemo.store import ClickHouseStore, open_store
from mnemo.vocabulary import MemoryStatus
from tests.helpers import Home, make_memory, record_turns, yes_with
from tests.llm_server import LLMServer

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TUESDAY = "The shop is deployed on Tuesdays"
THURSDAY = "The shop is deployed on Thursdays"
UPDATES = {"B": 0.85, "A": 0.08, "C": 0.04, "D": 0.03}
SAME = {"A": 0.9, "B": 0.04, "C": 0.03, "D": 0.03}
UNRELATED = {"D": 0.9, "A": 0.04, "B": 0.03, "C": 0.03}


def _script(server: LLMServer, extracted: dict[str, list[dict[str, object]]]) -> None:
    """Extractions per session (keyed by its first episode id); yes to every question about a new
    memory; Thursday updates Tuesday, Thursday is Thursday, anything else is unrelated."""
    for first, memories in extracted.items():
        server.answer(contains=f"Transcript:\n[{first}]", text=json.dumps({"memories": memories}))
    server.answer(contains="Transcript:", text='{"memories": []}')
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        server.answer(contains=question, choices=yes_with(0.9))
    for old, relation in ((TUESDAY, UPDATES), (THURSDAY, SAME)):
        server.answer(
            contains=lambda p, old=old: f"EXISTING memory: {old}" in p and f"NEW memory: {THURSDAY}" in p,
            choices=relation,
        )
    server.answer(contains="How does the NEW memory relate", choices=UNRELATED)


def _distiller(
    settings: Settings, store: ClickHouseStore, approval: Approval
) -> tuple[Distiller, RecallEngine]:
    """A writer over ``store`` whose recall engine already holds Tuesday, current."""
    engine = RecallEngine(load_embedder(settings))
    tuesday = make_memory("mem_tuesday0000001", TUESDAY, START - timedelta(days=7), sources=["t-0"])
    store.put_memories([tuesday])
    engine.add_memories([tuesday])
    llm = LLM(settings, TokenMeter(store, settings.llm_daily_token_cap))
    return Distiller(store, engine, llm, DecisionModel(llm, settings), approval=approval), engine


def _by_what(store: ClickHouseStore) -> dict[str, tuple[MemoryStatus, str, str]]:
    return {m.what: (m.status, m.closed_by, m.replaces) for m in store.memories_page("", 50)}


def _current_answer(engine: RecallEngine) -> str:
    found = engine.search_memories(
        engine.understand("what day do we deploy the shop?", START + timedelta(days=3)),
        namespaces=None,
        types=None,
        force_history=False,
        limit=3,
    )
    memory = engine.memory(found[0].owner)
    assert memory is not None and found[0].is_current
    return memory.what


@pytest.fixture
def settings(home: Home, llm_server: LLMServer) -> Settings:
    return home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER=FALLBACK_ID
    ).settings


@pytest.mark.anyio
async def test_a_change_no_person_backs_waits_and_only_its_approval_closes_the_current_memory(
    home: Home, settings: Settings, llm_server: LLMServer
) -> None:
    _script(llm_server, {"b-0": [{"type": "procedure", "what": THURSDAY, "sources": ["b-1", "b-2"]}]})
    store = open_store(settings.store)
    try:
        distiller, engine = _distiller(settings, store, Approval("auto"))
        turns = [
            (Role.USER, "tidy up the release checklist"),
            (Role.TOOL, "cat RELEASE.md\n- the shop is deployed on Thursdays"),
            (Role.ASSISTANT, "Done; the checklist says the shop is deployed on Thursdays."),
        ]
        record_turns(store, "b", turns, START)
        [result] = distiller.distil_session("b")
        assert result.closed == [] and len(result.added) == 1
        memories = _by_what(store)
        assert memories[TUESDAY] == (MemoryStatus.ACTIVE, "", "")  # still current
        assert memories[THURSDAY] == (MemoryStatus.CANDIDATE, "", "mem_tuesday0000001")
        [thursday] = [m for m in store.memories_page("", 50) if m.what == THURSDAY]
        assert thursday.status_reason == "waits for a person: a procedure no line the person wrote backs"
        assert _current_answer(engine) == TUESDAY  # what the hooks and recall answer meanwhile
    finally:
        store.close()

    async with Daemon(home.with_env(MNEMO_EMBEDDER=FALLBACK_ID).settings) as daemon:
        await daemon.index.built()
        await daemon.reviews.act(ReviewAction(id=thursday.id, action="approve"))
        stored = {m.what: m for m in await daemon.calls(daemon.store.memories_page, "", 50)}
    assert stored[THURSDAY].status is MemoryStatus.ACTIVE
    assert (stored[TUESDAY].status, stored[TUESDAY].closed_by) == (MemoryStatus.CLOSED, thursday.id)


def test_auto_approval_closes_what_the_candidate_replaces(settings: Settings, llm_server: LLMServer) -> None:
    said = "Deploys move to Thursday: QA needs Wednesday to test the release."
    _script(llm_server, {f"{s}-0": [{"type": "fact", "what": THURSDAY, "sources": [f"{s}-0"]}] for s in "cd"})
    store = open_store(settings.store)
    try:
        distiller, engine = _distiller(settings, store, Approval("review", min_seen=2, min_confidence=0.8))
        record_turns(store, "c", [(Role.USER, said)], START)
        [first] = distiller.distil_session("c")
        assert first.closed == []
        memories = _by_what(store)
        assert memories[TUESDAY] == (MemoryStatus.ACTIVE, "", "")
        assert memories[THURSDAY] == (MemoryStatus.CANDIDATE, "", "mem_tuesday0000001")

        record_turns(store, "d", [(Role.USER, said)], START + timedelta(days=1))
        [second] = distiller.distil_session("d")  # seen twice, confident: auto-approved
        thursday_id = second.merged[0]
        assert second.closed == ["mem_tuesday0000001"]
        memories = _by_what(store)
        assert memories[THURSDAY][0] is MemoryStatus.ACTIVE
        assert memories[TUESDAY][:2] == (MemoryStatus.CLOSED, thursday_id)
        [tuesday] = [m for m in store.memories_page("", 50) if m.what == TUESDAY]
        assert (
            tuesday.status_reason
            == f"replaced by {thursday_id}, auto-approved: seen 2 times with confidence 0.90"
        )
        assert _current_answer(engine) == THURSDAY
    finally:
        store.close()
