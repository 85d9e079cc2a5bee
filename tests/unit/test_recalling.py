"""Recall's order among current and closed memories (mnemo.daemon.recalling): a closed memory the
question found brings the current memory that closed it, ranked in its place."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.api.recall import MemoryHit
from mnemo.daemon.recalling import _weighed, _with_closers
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryStatus
from tests.helpers import make_memory

AT = datetime(2026, 11, 20, tzinfo=UTC)


def _closed(memory: Memory, by: Memory) -> Memory:
    return memory.model_copy(update={"status": MemoryStatus.CLOSED, "closed_by": by.id, "version": 2})


def test_a_closed_hit_brings_its_closer_first_and_a_chain_ends_at_the_current_one() -> None:
    tuesday = make_memory("mem_tuesday", "We deploy on Tuesdays", AT)
    thursday = make_memory("mem_thursday", "Deploys move to Thursday", AT)
    back = make_memory("mem_back", "Deploys are back on Tuesdays", AT)
    other = make_memory("mem_other", "Backups run nightly", AT)
    store = {m.id: m for m in (_closed(tuesday, thursday), _closed(thursday, back), back, other)}
    hits = [MemoryHit(score=0.2, memory=other), MemoryHit(score=0.9, memory=store["mem_tuesday"])]
    ordered = _weighed(_with_closers(hits, store.get))
    assert [h.memory.id for h in ordered] == ["mem_back", "mem_other", "mem_tuesday"]
    assert ordered[0].replaces == "mem_tuesday" and ordered[0].score == 0.9
    assert all(h.replaces == "" for h in ordered[1:])


def test_a_closer_already_found_is_not_added_twice_and_nothing_closed_adds_nothing() -> None:
    old = make_memory("mem_old", "The gateway is gw-eu-1", AT)
    new = make_memory("mem_new", "The gateway is gw-eu-2", AT)
    hits = [MemoryHit(score=0.5, memory=new), MemoryHit(score=0.9, memory=_closed(old, new))]
    assert _with_closers(hits, {new.id: new}.get) == hits
    assert _with_closers(hits[:1], {new.id: new}.get) == hits[:1]
    gone = [MemoryHit(score=0.9, memory=_closed(old, new))]
    assert _with_closers(gone, {}.get) == gone  # its closer is no longer in the index
