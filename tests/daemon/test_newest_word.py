"""The newest word wins with no model configured (mnemo.distill.frames through the real daemon):
a change or correction remembered after the old value closes it and comes first for its
question; siblings stay current; two current memories of one thing at different values (written
before the rule, or imported) are shown newest first, the other marked earlier, in recall and in
what the hooks inject.
"""

from __future__ import annotations

from datetime import timedelta

import anyio
import pytest

from mnemo.api.recall import RecallRequest
from mnemo.client.typed import DaemonClient
from mnemo.clock import utc_now
from mnemo.memories import Memory, RememberRequest
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import (
    WORKSPACE,
    Home,
    context_of,
    event_input,
    hook,
    make_memory,
    store_memories,
    wait_for_index,
)

# (the old value, the change or correction stated after it, its question, a word only the new has)
CHANGES = [
    ("We deploy the shop on Tuesdays", "Shop deploys move to Thursday", "which day do we deploy the shop?",
     "Thursday"),
    ("The payments gateway is gw-eu-1", "The payments gateway is gw-eu-2, gw-eu-1 was a typo",
     "which payments gateway?", "gw-eu-2"),
    ("El timeout del proxy es 300 s", "Subimos el timeout del proxy de 300 a 600 s",
     "¿cuál es el timeout del proxy?", "600"),
    ("The deploy runbook is docs/runbook.md", "The deploy runbook moved to docs/ops/deploy.md",
     "where is the deploy runbook?", "docs/ops"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "question", "word"), CHANGES, ids=["day", "gateway", "es", "moved"])
def test_a_change_remembered_after_the_old_value_closes_it_and_comes_first(
    home: Home, old: str, new: str, question: str, word: str
) -> None:
    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            first = await client.remember(RememberRequest(content=old, type=MemoryType.DECISION))
            second = await client.remember(RememberRequest(content=new, type=MemoryType.DECISION))
            found = await client.recall(RecallRequest(query=question))
            assert found.memories[0].memory.id == second.id and word in found.memories[0].memory.content
            closed = await _memory(client, first.id, old)
            assert closed.status is MemoryStatus.CLOSED and closed.closed_by == second.id
            assert closed.status_reason.startswith(f"replaced by {second.id}, by rule:")

    anyio.run(scenario)


def test_a_question_that_matches_the_closed_value_gets_what_replaced_it_first(home: Home) -> None:
    """The rename shares no word with the question; the closed name does: recall puts the memory
    that closed it first (tests/unit/test_recalling.py: where the question does not find it at
    all, it is brought in), and never marks a hit as a replacement when history is asked."""

    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            old = await client.remember(
                RememberRequest(content="The staging cluster is called stg-east", type=MemoryType.FACT)
            )
            new = await client.remember(
                RememberRequest(content="stg-east is now called preprod-east", type=MemoryType.FACT)
            )
            question = "what is the name of the staging cluster?"
            found = await client.recall(RecallRequest(query=question))
            assert found.memories[0].memory.id == new.id
            assert [h.memory.id for h in found.memories].index(old.id) > 0
            before = "what was the name of the staging cluster before?"
            history = await client.recall(RecallRequest(query=before))
            assert all(h.replaces == "" for h in history.memories)

    anyio.run(scenario)


def test_a_prompt_that_finds_only_the_closed_value_gets_what_replaced_it_injected(home: Home) -> None:
    """The prompt shares its words with the closed name only: the hook injects the memory that
    closed it, never the closed one."""
    now = utc_now()
    old = make_memory(
        "m-old",
        "The staging cluster is called stg-east",
        now - timedelta(days=9),
        namespace=WORKSPACE,
        status=MemoryStatus.CLOSED,
        closed_by="m-new",
        version=2,
    )
    new = make_memory("m-new", "Use preprod-east from now on", now - timedelta(days=2), namespace=WORKSPACE)
    store_memories(home, new, old)

    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            await wait_for_index(client)

    anyio.run(scenario)
    prompt = "what is the name of the staging cluster again?"
    stdout, _ = hook(home, "UserPromptSubmit", event_input("UserPromptSubmit", prompt=prompt))
    lines = [line for line in context_of(stdout).splitlines() if line.startswith("- [")]
    assert lines and lines[0].startswith("- [m-new]")
    assert not any("stg-east" in line for line in lines)


async def _memory(client: DaemonClient, memory_id: str, text: str) -> Memory:
    """The memory ``memory_id`` as the daemon has it now, current or not (found by its text)."""
    found = await client.recall(RecallRequest(query=text, include_history=True, limit=20))
    [memory] = [h.memory for h in found.memories if h.memory.id == memory_id]
    return memory


def test_siblings_remembered_one_after_the_other_both_stay_current(home: Home) -> None:
    siblings = [
        ("Staging deploys on Mondays", "Production deploys on Thursdays"),
        ("Refresh tokens expire after 15 minutes", "Access tokens expire after 15 minutes"),
        ("API_KEY is rotated every 90 days", "DB_PASSWORD is rotated every 90 days"),
    ]

    async def scenario() -> None:
        async with DaemonClient(home.settings) as client:
            for pair in siblings:
                ids = [
                    (await client.remember(RememberRequest(content=t, type=MemoryType.FACT))).id for t in pair
                ]
                for memory_id, text in zip(ids, pair, strict=True):
                    assert (await _memory(client, memory_id, text)).status is MemoryStatus.ACTIVE

    anyio.run(scenario)


def test_two_current_values_of_one_thing_show_the_newest_first_and_the_other_as_earlier(home: Home) -> None:
    now = utc_now()
    tuesday = make_memory("m-tue", "We deploy on Tuesdays", now - timedelta(days=20), namespace=WORKSPACE)
    thursday = make_memory("m-thu", "We deploy on Thursdays", now - timedelta(days=3), namespace=WORKSPACE)
    store_memories(home, thursday, tuesday)  # written before the rule: both current, as an import leaves them

    async def scenario() -> list[tuple[str, str]]:
        async with DaemonClient(home.settings) as client:
            await wait_for_index(client)
            found = await client.recall(RecallRequest(query="which day do we deploy? tuesday"))
            return [(h.memory.id, h.earlier) for h in found.memories]

    shown = anyio.run(scenario)
    assert [memory_id for memory_id, _ in shown[:2]] == ["m-thu", "m-tue"]
    assert shown[0][1] == "" and shown[1][1].startswith(f"earlier, {tuesday.valid_from:%Y-%m-%d}; m-thu of")
    stdout, _ = hook(home, "UserPromptSubmit", event_input("UserPromptSubmit", prompt="deploy on tuesday?"))
    lines = [line for line in context_of(stdout).splitlines() if line.startswith("- [")]
    assert lines[0].startswith("- [m-thu]") and lines[1].startswith("- [m-tue]")
    assert "(earlier, " in lines[1] and "earlier" not in lines[0]
