"""Drafts of one batch that say the same thing: a batch read in stretches, or looked at twice,
proposes the same memory twice; the repeat folds into the first (its sources joining it), and the
judge log says so. And a draft that says again what a memory read from the same episodes said,
where that memory has since been closed, forgotten or rejected: a session read anew (``mnemo
distill --again``, after a change of writer) does not bring back what a later word settled."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from mnemo.distill.extract import Draft
from mnemo.distill.guard import compare, overlap, words
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryStatus


def fold_repeats(drafts: Sequence[Draft]) -> tuple[list[Draft], dict[int, int]]:
    """``drafts`` with each one that repeats an earlier one (the same words, or most of them and no
    value apart) folded into it: its sources added to the earlier's; and {repeat's index: the
    earlier's}. A batch read in stretches, or looked at twice, proposes the same thing twice."""
    kept = list(drafts)
    repeated: dict[int, int] = {}
    for later, draft in enumerate(drafts):
        for earlier in range(later):
            if earlier in repeated or not _repeats(kept[earlier].memory.what, draft.memory.what):
                continue
            first = kept[earlier]
            sources = list(dict.fromkeys([*first.memory.sources, *draft.memory.sources]))
            kept[earlier] = replace(first, memory=first.memory.model_copy(update={"sources": sources[:64]}))
            repeated[later] = earlier
            break
    return kept, repeated


def repeat_reason(earlier: int) -> str:
    """The judge log's reason for a draft folded into the batch's draft ``earlier``."""
    return f"{REPEATS} {earlier} of the batch"


REPEATS = "repeats draft"
SETTLED = "says again what was settled:"
# The share of the shorter statement's words the two share, with no value apart: another wording
# of the same statement, read from the same episodes. Chosen, not fitted (a reworded statement
# of one subject shares most of its words; two statements of one line about different things do not).
RESTATED_OVERLAP = 0.5


def settled_restatements(drafts: Sequence[Draft], earlier: Sequence[Memory]) -> dict[int, str]:
    """{draft's index: the judge log's reason} for each draft that restates a memory of
    ``earlier`` (memories citing this batch's episodes) that is no longer open — closed by a later
    word, forgotten or rejected by a person."""
    settled = [
        m for m in earlier if m.status in (MemoryStatus.CLOSED, MemoryStatus.FORGOTTEN, MemoryStatus.REJECTED)
    ]
    found: dict[int, str] = {}
    for index, draft in enumerate(drafts):
        for memory in settled:
            if set(draft.memory.sources) & set(memory.sources) and _restates(draft.memory.what, memory.what):
                found[index] = f"{SETTLED} {memory.id} is {memory.status.value} ({memory.status_reason})"
                break
    return found


def _restates(a: str, b: str) -> bool:
    return _repeats(a, b) or (overlap(a, b) >= RESTATED_OVERLAP and not compare(a, b).blocks)


def _repeats(a: str, b: str) -> bool:
    if normal(a) == normal(b):
        return True
    return overlap(a, b) >= REPEAT_OVERLAP and len(words(a) ^ words(b)) <= 2 and not compare(a, b).blocks


REPEAT_OVERLAP = 0.9


def normal(text: str) -> str:
    """``text``'s words, lower-cased, one space apart: two statements equal in this say the same."""
    return " ".join(re.findall(r"\w+", text.lower()))
