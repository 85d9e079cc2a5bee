"""The newest word among memories, by the rules of :mod:`mnemo.distill.frames`: the current
memories a new one replaces (the writer closes them, and so does ``remember``: no model), the log
row that says so beside the model's reading, and — until a close is written — each group of one
thing at different values led by its newest, the others marked earlier (recall and the hooks).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from mnemo.distill.frames import candidate_pairs, replaces
from mnemo.memories import Memory
from mnemo.store.distill import JudgeLogRow
from mnemo.vocabulary import MemoryStatus


def _age(memory: Memory) -> tuple[datetime, datetime, str]:
    return memory.valid_from, memory.created_at, memory.id


def newest_first(memories: Sequence[Memory]) -> tuple[list[Memory], dict[str, Memory]]:
    """``memories`` (best first) with each group of one subject at different values led by its
    newest, the others just after it; and {id of an earlier one: the newest of its group}."""
    newer_of: dict[str, Memory] = {}  # each replaced memory → the newest that replaces it
    for i, j in sorted(candidate_pairs([m.what or m.content for m in memories])):
        if memories[i].namespace != memories[j].namespace:
            continue
        older, newer = sorted((memories[i], memories[j]), key=_age)
        if _age(older)[:2] == _age(newer)[:2]:
            continue  # written at one time: neither is the newer word
        later = older.id not in newer_of or _age(newer) > _age(newer_of[older.id])
        if later and replaces(newer.what or newer.content, older.what or older.content):
            newer_of[older.id] = newer
    if not newer_of:
        return list(memories), {}

    def head(memory: Memory) -> Memory:
        seen = {memory.id}
        while memory.id in newer_of and newer_of[memory.id].id not in seen:
            memory = newer_of[memory.id]
            seen.add(memory.id)
        return memory

    led = {m.id: head(m) for m in memories}
    ordered: list[Memory] = []
    placed: set[str] = set()
    for memory in memories:
        first = led[memory.id]
        if first.id in placed:
            continue
        group = [first, *(m for m in memories if led[m.id].id == first.id and m.id != first.id)]
        ordered += group
        placed |= {m.id for m in group}
    return ordered, {m.id: led[m.id] for m in memories if led[m.id].id != m.id}


LED_AT_MOST = 60  # what a hook's block can hold is far fewer; reading more costs (~0.7 ms a text, cold)


def newest_led(memories: Sequence[Memory]) -> tuple[list[Memory], dict[str, str]]:
    """:func:`newest_first` on the first ``LED_AT_MOST`` of ``memories`` (the rest after them as
    they were), with each earlier memory's :func:`earlier_note`."""
    ordered, newest = newest_first(memories[:LED_AT_MOST])
    ordered += memories[LED_AT_MOST:]
    return ordered, {
        memory_id: earlier_note(m, newest[memory_id]) for m in memories if (memory_id := m.id) in newest
    }


def replaced_by(new: Memory, current: Sequence[Memory], said: Sequence[str] = ()) -> list[tuple[Memory, str]]:
    """The memories of ``current`` (active, of ``new``'s namespace, not newer than it) that ``new``
    replaces by the rules, each with the evidence. ``said``: the person's lines ``new`` cites."""
    out = []
    for old in current:
        if old.id == new.id or old.namespace != new.namespace or old.status is not MemoryStatus.ACTIVE:
            continue
        if old.valid_from > new.valid_from:
            continue
        evidence = replaces(new.what or new.content, old.what or old.content, said)
        if evidence:
            out.append((old, evidence))
    return out


def with_rules(row: JudgeLogRow, ruled: Sequence[tuple[Memory, str]]) -> JudgeLogRow:
    """The judge log's row with what the rules closed beside the model's reading."""
    if not ruled:
        return row
    detail = json.loads(row.detail) if row.detail else {}
    detail["rules"] = [
        {"closes": old.id, "text": old.what or old.content, "evidence": why} for old, why in ruled
    ]
    closes = list(dict.fromkeys([*row.closes, *(old.id for old, _ in ruled)]))
    named = "; ".join(f"{old.id}: {why}" for old, why in ruled)
    action = "close" if row.action in ("add", "merge") else row.action
    reason = f"{row.reason}; by rule, replaces {named}"
    return replace(
        row,
        action=action,
        target="",
        closes=closes,
        reason=reason,
        detail=json.dumps(detail, ensure_ascii=False),
    )


def earlier_note(memory: Memory, newer: Memory) -> str:
    """How an earlier memory of a group is marked beside its newest: its date and the newer one."""
    return f"earlier, {memory.valid_from:%Y-%m-%d}; {newer.id} of {newer.valid_from:%Y-%m-%d} is newer"
