"""A small model's draft that says a person's command, not what they said lasts, waits for a person."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mnemo.config import Settings
from mnemo.distill.decide import DecisionModel
from mnemo.distill.durable import Durability
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.passing import rests_on_passing, sentences
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.episodes import Episode, EpisodeIn, EpisodeIntake, Role
from mnemo.index.live import RecallEngine
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus
from tests.helpers import Home, record_turns
from tests.llm_server import LLMServer

WHEN = datetime(2026, 3, 1, tzinfo=UTC)
INTAKE = EpisodeIntake(max_chars=100_000, default_namespace="workspace:pay", redactor=SecretRedactor())
MIXED = "ok commit. pls keep commits small, one thing per commit, i review them one by one"
CRON = "while ur there check the submit cron. the file has to be on their side before 02:00 utc"


def _episodes(*said: tuple[Role, str]) -> dict[str, Episode]:
    episodes = [EpisodeIn(id=f"e{n}", text=t, role=r, session="s", turn=n) for n, (r, t) in enumerate(said)]
    return {e.id: INTAKE.accept(e) for e in episodes}


@pytest.fixture(scope="module")
def durability() -> Durability:
    found = Durability.for_embedder(load_embedder(Settings()))
    assert found is not None
    return found


def test_a_line_is_read_sentence_by_sentence() -> None:
    assert sentences("ok commit. pls keep\ncommits small!  why? no") == [
        "ok commit.",
        "pls keep",
        "commits small!",
        "why?",
        "no",
    ]


@pytest.mark.parametrize(
    ("draft", "passing"),
    [
        ("Commit changes to the project", True),  # nearest "ok commit."
        ("Keep commits small, one thing per commit", False),  # nearest the preference
        ("Check the submit cron job", True),
        ("The payout file must reach the bank before 02:00 UTC", False),
        ("Payouts go out through the bank's SFTP endpoint", False),  # shares no word: not the person's
    ],
)  # fmt: skip
def test_a_draft_rests_on_the_person_sentence_it_is_nearest(
    durability: Durability, draft: str, passing: bool
) -> None:
    by_id = _episodes((Role.USER, MIXED), (Role.USER, CRON), (Role.ASSISTANT, "Done."))
    assert rests_on_passing(draft, "", ["e0", "e1", "e2"], by_id, durability) is passing


def test_words_that_state_something_lasting_keep_a_sentence_the_classifier_doubts(
    durability: Durability,
) -> None:
    by_id = _episodes((Role.USER, "From now on we deploy the shop on Tuesdays."))
    assert not rests_on_passing("Deploy the shop on Tuesdays", "", ["e0"], by_id, durability)
    assert not rests_on_passing("Deploy the shop on Tuesdays", "", [], by_id, durability)  # cites no one


def test_a_command_that_sets_a_value_the_draft_states_lasts(durability: Durability) -> None:
    by_id = _episodes((Role.USER, "raise it to 600 then"), (Role.USER, "ok merge it"))
    assert not rests_on_passing("Raise the ALB idle timeout to 600 seconds", "", ["e0"], by_id, durability)
    assert rests_on_passing("Merge the changes", "", ["e1"], by_id, durability)


def _distiller(settings: Settings, store: ClickHouseStore) -> Distiller:
    llm = LLM(settings, TokenMeter(store, 0))
    return Distiller(store, RecallEngine(load_embedder(settings)), llm, DecisionModel(llm, settings))


@pytest.mark.parametrize(("model", "waits"), [("qwen2.5-coder-1.5b", True), ("gpt-4o", False)])
def test_a_small_model_s_drafted_command_waits_for_a_person_and_the_preference_goes_active(
    home: Home, llm_server: LLMServer, store: ClickHouseStore, model: str, waits: bool
) -> None:
    record_turns(
        store,
        "s1",
        [(Role.ASSISTANT, "Split into two commits. Push?"), (Role.USER, MIXED)],
        WHEN,
        sep=".",
    )
    chore = {"type": "decision", "what": "Commit changes to the project", "sources": ["s1.1"]}
    rule = {"type": "preference", "what": "Keep commits small, one thing per commit", "sources": ["s1.1"]}
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": [chore, rule]}))
    llm_server.answer(contains="Answer with one word: yes or no.", choices={"yes": 0.95, "no": 0.05})
    llm_server.answer(contains="Answer with one letter (A, B)", choices={"A": 0.95, "B": 0.05})
    settings = home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL=model, MNEMO_EMBEDDER=FALLBACK_ID
    ).settings
    _distiller(settings, store).distil_session("s1")
    stored = {m.what: m for m in store.memories_page("", 10)}
    chore_status = stored["Commit changes to the project"].status
    assert chore_status is (MemoryStatus.CANDIDATE if waits else MemoryStatus.ACTIVE)
    if waits:
        assert "command" in stored["Commit changes to the project"].status_reason
    assert stored["Keep commits small, one thing per commit"].status is MemoryStatus.ACTIVE
