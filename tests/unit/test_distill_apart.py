"""A new memory never closes one it is too far apart from, whatever the relation model says."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.config import Settings
from mnemo.distill.calibrate import CountingMeter
from mnemo.distill.decide import Decision, DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.judge import Action, Comparison, act, far_apart, guard_between, relate
from mnemo.distill.llm import LLM
from mnemo.embed import Embedder, load_embedder
from mnemo.vocabulary import MemoryType
from tests.helpers import make_memory

WHEN = datetime(2026, 3, 1, tzinfo=UTC)
SURE_UPDATE = {"same": 0.02, "updates": 0.9, "contradicts": 0.03, "unrelated": 0.05}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder(Settings())  # the fallback, which has a floor


@pytest.mark.parametrize(
    ("old", "new", "apart"),
    [
        # Cosines far from the floor (0.10, 0.16 against 0.3; 0.55 to 0.60 above it).
        ("Commit changes to the project", "The payout cap is now 2500 transfers per file", True),
        ("Check the submit cron job", "Uploads go through the ALB with a 600 s idle timeout", True),
        ("Deploys go out on Tuesdays", "We deploy the shop on Thursdays from now on", False),
        ("Los mensajes de commit se escriben en español", "Commits are written in English now", False),
        # Far by embedding, but the same identifier, or half the words: never apart.
        ("Check the cron job in cronjob.yaml", "payout-submit runs at 01:50 UTC, set in cronjob.yaml", False),
        ("Check the submit cron job", "The submit job moved", False),
    ],
)  # fmt: skip
def test_two_memories_are_apart_only_when_nothing_ties_them(
    embedder: Embedder, old: str, new: str, apart: bool
) -> None:
    assert far_apart(old, new, embedder) is apart


def test_without_an_embedder_or_a_floor_for_it_nothing_is_apart() -> None:
    assert not far_apart("Commit changes to the project", "The payout cap is now 2500 per file", None)


def _comparison(memory_id: str, old: str, new: str, apart: bool) -> Comparison:
    existing = make_memory(memory_id, old, WHEN)
    memory = ExtractedMemory(type=MemoryType.FACT, what=new, sources=["ep_9"])
    decision = Decision("relation", SURE_UPDATE, SURE_UPDATE, "updates", "steps", True)
    return Comparison(existing.id, old, decision, guard_between(existing, memory), apart=apart)


def test_a_sure_update_closes_only_what_is_not_apart() -> None:
    near = _comparison(
        "mem_cap", "The payout cap is 2000 transfers per file", "The payout cap is now 2500", False
    )
    far = _comparison("mem_chore", "Commit changes to the project", "The payout cap is now 2500", True)
    action, _, closes, _ = act([near, far])
    assert action is Action.CLOSE and closes == ("mem_cap",)
    action, _, closes, _ = act([far])
    assert action is Action.ADD and closes == ()


@pytest.mark.parametrize(
    ("old", "new", "apart"),
    [
        ("Los clientes de la UE se sirven desde el datacenter de Madrid",
         "Los clientes de LATAM se sirven desde el datacenter de São Paulo", True),
        ("Staging deploys on Tuesdays", "Production deploys on Thursdays", True),
        ("On Android, push notifications go through FCM", "On iOS, push notifications go through APNs", True),
        # The newer says a change: a move across regions or environments stays the model's to read.
        ("Images are served from the EU region", "Images are now served from the US region", False),
        ("Deploys go out on Tuesdays", "Deploys go out on Thursdays", False),
    ],
)  # fmt: skip
def test_a_sure_update_never_closes_a_sibling_of_another_environment_or_family(
    old: str, new: str, apart: bool
) -> None:
    """The model's *updates* for two regions or two platforms is no close when the newer says no
    change (mnemo.distill.frames.stand_apart), whatever its probability."""
    settings = Settings(llm_url="http://127.0.0.1:9/v1", llm_model="unused")  # never asked: relation given
    decisions = DecisionModel(LLM(settings, CountingMeter()), settings)
    relation = Decision("relation", SURE_UPDATE, SURE_UPDATE, "updates", "steps", True)
    memory = ExtractedMemory(type=MemoryType.FACT, what=new, sources=["ep_9"])
    comparison = relate(memory, make_memory("mem_old", old, WHEN), decisions, None, relation)
    assert comparison.apart is apart
    action, _, closes, _ = act([comparison])
    assert (action is Action.CLOSE) is not apart and closes == (() if apart else ("mem_old",))
