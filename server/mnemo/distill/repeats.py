"""Drafts of one batch that say the same thing: a batch read in stretches, or looked at twice,
proposes the same memory twice; the repeat folds into the first (its sources joining it), and the
judge log says so."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from mnemo.distill.extract import Draft
from mnemo.distill.guard import compare, overlap, words


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


def _repeats(a: str, b: str) -> bool:
    if normal(a) == normal(b):
        return True
    return overlap(a, b) >= REPEAT_OVERLAP and len(words(a) ^ words(b)) <= 2 and not compare(a, b).blocks


REPEAT_OVERLAP = 0.9


def normal(text: str) -> str:
    """``text``'s words, lower-cased, one space apart: two statements equal in this say the same."""
    return " ".join(re.findall(r"\w+", text.lower()))
