"""What a session's start is given (mnemo.usage.start): what the workspace used, then a few others;
or, with start_memories = "all", every current memory by the person's use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mnemo.memories import Memory, Origin
from mnemo.usage.start import UNPROVEN, start_order
from mnemo.vocabulary import MemoryStatus, MemoryType

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _memory(n: int, kind: str, *, days_old: int = 0) -> Memory:
    at = NOW - timedelta(days=days_old)
    return Memory(
        id=f"mem_{n:026d}", version=1, type=MemoryType(kind), status=MemoryStatus.ACTIVE,
        namespace="workspace:/srv/app", content=f"memory {n}", what=f"memory {n}", who="", when="",
        where="", why="", how="", entities=[], sources=[], origin=Origin.EXPLICIT, created_at=at,
        updated_at=at, valid_from=at,
    )  # fmt: skip


FOUND = [
    _memory(n, kind, days_old=n)
    for n, kind in enumerate(["fact", "decision", "state", "preference", "fact", "procedure", "event"])
]


def test_what_the_workspace_used_comes_first_then_only_a_few_others() -> None:
    uses_here = {FOUND[6].id: 1, FOUND[4].id: 3}
    order = start_order(FOUND, uses=uses_here, flagged=lambda _: False, policy="used")
    assert [m.id for m in order[:2]] == [FOUND[4].id, FOUND[6].id], "most used here first"
    others = order[2:]
    assert len(others) == UNPROVEN, "then only a few never used here"
    assert [m.type for m in others] == [MemoryType.DECISION, MemoryType.PREFERENCE, MemoryType.PROCEDURE]


def test_a_new_workspace_still_gets_a_few() -> None:
    order = start_order(FOUND, uses={}, flagged=lambda _: False, policy="used")
    assert len(order) == UNPROVEN


def test_a_possibly_stale_memory_goes_behind_its_rank() -> None:
    uses_here = {FOUND[0].id: 2, FOUND[4].id: 2}
    flagged = {FOUND[0].id}
    order = start_order(FOUND, uses=uses_here, flagged=flagged.__contains__, policy="used")
    assert [m.id for m in order[:2]] == [FOUND[4].id, FOUND[0].id]


def test_all_offers_every_memory_by_the_persons_use() -> None:
    order = start_order(FOUND, uses={FOUND[5].id: 4}, flagged=lambda _: False, policy="all")
    assert len(order) == len(FOUND)
    assert order[0].id == FOUND[5].id
    assert order[1].type is MemoryType.DECISION


def test_a_suppressed_memory_leaves_its_place_to_another_not_yet_used() -> None:
    first = start_order(FOUND, uses={}, flagged=lambda _: False, policy="used")
    hidden = {first[0].id}
    then = start_order(FOUND, uses={}, flagged=lambda _: False, policy="used", suppressed=hidden)
    assert len(then) == UNPROVEN and first[0] not in then
    assert [m.id for m in then[: UNPROVEN - 1]] == [m.id for m in first[1:]]
    every = start_order(FOUND, uses={}, flagged=lambda _: False, policy="all", suppressed=hidden)
    assert len(every) == len(FOUND) - 1 and first[0] not in every
