"""The memory versions a batch writes: a new memory from its draft, and an old one closed.

Kept apart from :mod:`mnemo.distill.writer`, which decides which of them a batch writes.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from mnemo.code.anchors import anchor_distilled
from mnemo.distill.extract import Draft
from mnemo.distill.judge import Judgement
from mnemo.episodes import Episode, Role
from mnemo.memories import EntityRef, Memory, Origin
from mnemo.store.distill import Batch
from mnemo.vocabulary import MemoryStatus


def new_memory(batch: Batch, seq: int, draft: Draft, by_id: dict[str, Episode], now: datetime) -> Memory:
    """The first version of the memory ``draft`` proposes, as batch ``batch`` writes it (its
    ``seq``-th draft)."""
    extracted = draft.memory
    sources = list(dict.fromkeys(extracted.sources))
    found = [by_id[s] for s in sources]
    # A redone batch gives its memories the same ids.
    memory_id = "mem_" + hashlib.sha256(f"{batch.id}\0{seq}".encode()).hexdigest()[:24]
    return Memory(
        id=memory_id,
        version=1,
        type=extracted.type,
        status=MemoryStatus.ACTIVE,
        namespace=batch.namespace,
        content=extracted.what,
        what=extracted.what,
        who=extracted.who,
        when=extracted.when,
        where=extracted.where,
        why=extracted.why,
        how=extracted.how,
        entities=[EntityRef(name=e.name, role=e.role) for e in extracted.entities],
        sources=sources,
        has_human_backing=any(by_id[s].role is Role.USER for s in sources),
        origin=Origin.DISTILLED,
        created_at=now,
        updated_at=now,
        valid_from=max(e.time for e in found),
        code=anchor_distilled([extracted.what, extracted.where, extracted.how], found),
    )


def closed(old: Memory, by: Memory, now: datetime, reason: str) -> Memory:
    """The next version of ``old``, closed by ``by`` from the time ``by`` holds."""
    update = {"version": old.version + 1, "status": MemoryStatus.CLOSED, "closed_by": by.id}
    update |= {"valid_to": max(by.valid_from, old.valid_from), "updated_at": now, "status_reason": reason}
    return old.model_copy(update=update)


def is_current(memory: Memory | None) -> bool:
    return memory is not None and memory.status is MemoryStatus.ACTIVE


def is_open(memory: Memory | None) -> bool:
    """Current, or a candidate still waiting for a person."""
    return memory is not None and memory.status in (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE)


def confidence(verdict: Judgement) -> float:
    """The judge's confidence in a new memory: the lower of P(useful) and P(durable)."""
    about = verdict.about_new
    asked = [about[q].probabilities.get("yes", 1.0) for q in ("useful", "durable") if q in about]
    return round(min(asked, default=1.0), 4)
