"""The rails where a mistake costs most: a correction or a change is never merged into what it
corrects; a proposal the person refused waits for a person; the durable-line classifier finds the
stretches that state something without cue words — through the real embedder, the real writer and
the scripted model server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemo.config import Settings
from mnemo.distill.decide import Decision, DecisionModel
from mnemo.distill.durable import Durability, shipped_durable
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.judge import Action, Comparison, act, bars_same, guard_between
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.rails import states_something
from mnemo.distill.refusal import refuses, states_refused
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.index.live import RecallEngine
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import Home, make_memory, record_turns
from tests.llm_server import LLMServer

SMALL = "qwen2.5-coder-1.5b"
WHEN = datetime(2026, 3, 1, tzinfo=UTC)
LINES = Path(__file__).parents[1] / "data" / "durable_lines_fit.jsonl"
INTAKE = EpisodeIntake(max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor())


def _new(what: str, why: str = "") -> ExtractedMemory:
    return ExtractedMemory(type=MemoryType.FACT, what=what, why=why, sources=["ep_9"])


def _comparison(
    old: str, new: ExtractedMemory, probabilities: dict[str, float], old_why: str = ""
) -> Comparison:
    existing = make_memory("mem_old", old, WHEN).model_copy(update={"why": old_why})
    guard = guard_between(existing, new)
    best = max(probabilities, key=lambda o: probabilities[o])
    decision = Decision("relation", probabilities, probabilities, best, "steps", True)
    return Comparison(existing.id, old, decision, guard, None, bars_same(existing, new, guard))


SURE_SAME = {"same": 0.8, "updates": 0.1, "contradicts": 0.06, "unrelated": 0.04}


@pytest.mark.parametrize(
    ("old", "new", "barred_by"),
    [
        # A figure that was a typo: the correction names both numbers.
        ("The export job keeps 14 days of files", _new("It keeps 30 days; the 14 was a typo"), "wording"),
        ("Ana prefers squash merges", _new("Ana was misquoted: she prefers rebase merges"), "wording"),
        ("El timeout del cliente es 30 s", _new("En realidad el timeout es de 30 s en staging"), "wording"),
        ("Reports are generated nightly", _new("Reports are now generated hourly"), "wording"),
    ],
)  # fmt: skip
def test_a_correction_or_a_change_is_never_merged_into_what_it_corrects(
    old: str, new: ExtractedMemory, barred_by: str
) -> None:
    comparison = _comparison(old, new, SURE_SAME)
    assert any(r.startswith(barred_by) for r in comparison.barred), comparison.barred
    action, merged, _, _ = act([comparison])
    assert action is not Action.MERGE and merged is None
    assert comparison.verdict[0] != "same" and comparison.verdict[1] == max(
        p for o, p in SURE_SAME.items() if o != "same"
    )


def test_a_value_that_differs_only_in_the_why_bars_a_merge() -> None:
    new = _new("Uploads go through the ALB", why="uploads of large files need 600 s")
    comparison = _comparison("Uploads go through the ALB", new, SURE_SAME, old_why="uploads need 120 s")
    assert comparison.guard.reasons == () and comparison.barred == ("quantity: 120 s vs 600 s",)
    assert act([comparison])[0] is not Action.MERGE


def test_with_same_barred_a_likely_change_closes_and_an_unlikely_one_keeps_both() -> None:
    new = _new("Reports are now generated hourly")
    closing = _comparison(
        "Reports are generated nightly",
        new,
        {"same": 0.38, "updates": 0.33, "contradicts": 0.27, "unrelated": 0.02},
    )
    action, _, closes, _ = act([closing])
    assert action is Action.CLOSE and closes == ("mem_old",) and closing.closing == pytest.approx(0.6)
    kept = _comparison(
        "Reports are generated nightly",
        new,
        {"same": 0.6, "updates": 0.3, "contradicts": 0.02, "unrelated": 0.08},
    )
    action, _, closes, reason = act([kept])
    assert action is Action.ADD and closes == () and "kept apart" in reason and "wording" in reason
    # A paraphrase with nothing barred merges as before.
    same = _comparison(
        "Reports are generated nightly", _new("Every night the reports are generated"), SURE_SAME
    )
    assert same.barred == () and act([same])[0] is Action.MERGE


@pytest.mark.parametrize(
    ("line", "refusing"),
    [
        ("no, keep Postgres, our backups are built around it", True),
        ("nope. too much ops work", True),
        ("let's not, the team doesn't know Mongo", True),
        ("I'd rather keep what we have", True),
        ("mejor no, seguimos con MySQL", True),
        ("ni loco, eso rompe el deploy", True),
        ("ok do it", False),
        ("use Redis for the cache", False),
        ("nunca despleguéis los viernes", False),  # a rule, not an answer
    ],
)
def test_a_refusal_is_a_line_that_opens_by_refusing(line: str, refusing: bool) -> None:
    assert refuses(line) is refusing


def test_a_draft_states_the_refused_option_unless_it_records_the_refusal_or_the_alternative() -> None:
    said = [
        ("a", Role.ASSISTANT, "Shall we move the events to MongoDB?"),
        ("p", Role.USER, "no, keep Postgres, our backups are built around it"),
        ("q", Role.USER, "ok, go ahead"),
    ]
    episodes = [EpisodeIn(id=i, text=t, role=r, session="s", turn=n) for n, (i, r, t) in enumerate(said)]
    by_id = {e.id: INTAKE.accept(e) for e in episodes}
    assert states_refused("Use MongoDB for the events", ["a", "p"], by_id)
    assert states_refused("Use MongoDB for the events", ["p"], by_id)
    assert not states_refused("Keep Postgres for the events: the backups are built around it", ["p"], by_id)
    assert not states_refused("The events do not move to MongoDB", ["p"], by_id)
    assert not states_refused("Use MongoDB for the events", ["a", "p", "q"], by_id)  # a line accepts
    assert not states_refused("Use MongoDB for the events", ["a"], by_id)  # no person's line
    # The how quotes the assistant's promise; the what is still the refused option.
    assert states_refused("Use MongoDB for the events", ["p"], by_id, how="I won't touch the schema")
    assert not states_refused("Use MongoDB for the events", ["p"], by_id, how="keep Postgres: backups")


def _settings(home: Home, server: LLMServer, model: str = SMALL) -> Settings:
    return home.with_env(MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL=model, MNEMO_EMBEDDER=FALLBACK_ID).settings


def _distiller(settings: Settings, store: ClickHouseStore) -> Distiller:
    llm = LLM(settings, TokenMeter(store, 0))
    return Distiller(store, RecallEngine(load_embedder(settings)), llm, DecisionModel(llm, settings))


def _record(store: ClickHouseStore, session: str, *turns: tuple[Role, str]) -> None:
    record_turns(store, session, list(turns), WHEN, sep=".")


YES = {"yes": 0.95, "no": 0.05}


def test_a_refused_proposal_written_as_a_decision_waits_for_a_person(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    _record(
        store,
        "s1",
        (Role.ASSISTANT, "I suggest we move the order events to MongoDB: schemaless fits them."),
        (Role.USER, "no, keep Postgres, our backups are built around it"),
        (Role.ASSISTANT, "Understood, the events stay in Postgres."),
    )
    proposal = {"type": "decision", "what": "Store the order events in MongoDB", "sources": ["s1.0", "s1.1"]}
    kept = {
        "type": "decision",
        "what": "Order events stay in Postgres",
        "why": "backups are built around it",
        "sources": ["s1.1"],
    }
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": [proposal, kept]}))
    llm_server.answer(contains="Answer with one word: yes or no.", choices=YES)
    [result] = _distiller(_settings(home, llm_server), store).distil_session("s1")
    stored = {m.what: m for m in store.memories_page("", 10)}
    refused = stored["Store the order events in MongoDB"]
    assert refused.status is MemoryStatus.CANDIDATE and "refuse" in refused.status_reason
    assert stored["Order events stay in Postgres"].status is MemoryStatus.ACTIVE
    assert len(result.added) == 2


def test_the_shipped_durable_weights_load_for_the_fallback_embedder_and_rank_the_fit_lines() -> None:
    assert [w.embedder for w in shipped_durable()] == [FALLBACK_ID]
    embedder = load_embedder(Settings())
    durability = Durability.for_embedder(embedder)
    assert durability is not None
    rows = [json.loads(line) for line in LINES.read_text(encoding="utf-8").splitlines()]
    for kind in ("person", "note"):
        mine = [r for r in rows if r["kind"] == kind]
        p = durability.probabilities([r["text"] for r in mine], kind)  # type: ignore[arg-type]
        durable = [s for s, r in zip(p, mine, strict=True) if r["label"] == "durable"]
        passing = [s for s, r in zip(p, mine, strict=True) if r["label"] == "passing"]
        wins = sum(d > q for d in durable for q in passing) / (len(durable) * len(passing))
        assert wins > 0.9, (kind, wins)  # the lines it was fitted on, far from any float tie


def test_with_the_classifier_a_stretch_that_states_something_without_cue_words_is_extracted() -> None:
    durability = Durability.for_embedder(load_embedder(Settings()))
    assert durability is not None

    def stretch(*said: str) -> list:  # type: ignore[type-arg]
        episodes = [
            EpisodeIn(id=f"e{i}", text=t, role=Role.USER, session="s", turn=i) for i, t in enumerate(said)
        ]
        return [INTAKE.accept(e) for e in episodes]

    assert not states_something(stretch("run the tests", "ok push it"), durability)
    assert states_something(
        stretch("run the tests", "staging is qa-eu now, the old name confused people"), durability
    )
    assert states_something(stretch("why does checkout hang?"), durability)  # the answer may be a finding
