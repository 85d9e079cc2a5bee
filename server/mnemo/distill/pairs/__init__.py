"""Labelled pairs of memories that ship with mnemo, for ``mnemo writer calibrate``.

A pair is an existing memory, a new one, and how the new one relates to it (same, updates,
contradicts, unrelated), with the trap it was written around (a number, a version, an
identifier, a negation, a paraphrase) and its language, one JSON object a line: the format
``tools/evals/eval_writer.py --pairs`` reads.

Only pairs meant for fitting ship here: ``judge_pairs_fit.jsonl`` (320, ours: the shipped weights
of Qwen2.5-Coder-1.5B are fitted on them) and ``judge_pairs_authors_fit.jsonl`` (180, written by
helpers who saw none of ours: docs/benchmarks.md). The blind and test pairs stay in
``tests/data``: they measure what was fitted on these, and a pair fitted on measures nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemo.distill.extract import ExtractedMemory
from mnemo.memories import Memory, Origin
from mnemo.vocabulary import MemoryStatus, MemoryType

PAIRS_DIR = Path(__file__).parent
FIT_FILES = ("judge_pairs_fit.jsonl", "judge_pairs_authors_fit.jsonl")
# When the existing memory of every pair was written: any fixed time (the judge reads no date).
_WRITTEN = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class PairSide(BaseModel):
    """One memory of a pair: its type and what, why and how it states."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: MemoryType
    what: Annotated[str, Field(min_length=1)]
    why: str = ""
    how: str = ""


class LabelledPair(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(min_length=1)]
    lang: Literal["en", "es", "mixed"]  # mixed: a text that switches between the two
    topic: str = ""
    old: PairSide
    new: PairSide
    label: Literal["same", "updates", "contradicts", "unrelated"]
    trap: Literal["number", "version", "identifier", "negation", "paraphrase", "none"]

    def existing_memory(self) -> Memory:
        """The old side as the judge finds it: a current, distilled memory."""
        return Memory(
            id="mem_" + "0" * 24,
            version=1,
            type=self.old.type,
            status=MemoryStatus.ACTIVE,
            namespace="workspace:calibration",
            content=self.old.what,
            what=self.old.what,
            who="",
            when="",
            where="",
            why=self.old.why,
            how=self.old.how,
            entities=[],
            sources=["ep_old"],
            origin=Origin.DISTILLED,
            created_at=_WRITTEN,
            updated_at=_WRITTEN,
            valid_from=_WRITTEN,
        )

    def new_memory(self) -> ExtractedMemory:
        """The new side as the judge gets it: a memory the writer extracted."""
        new = self.new
        return ExtractedMemory(type=new.type, what=new.what, why=new.why, how=new.how, sources=["ep_new"])


@cache
def shipped_pairs() -> tuple[LabelledPair, ...]:
    """Every shipped pair, file by file, in order."""
    return tuple(
        LabelledPair.model_validate_json(line)
        for name in FIT_FILES
        for line in (PAIRS_DIR / name).read_text(encoding="utf-8").splitlines()
        if line.strip()
    )


def spread(pairs: tuple[LabelledPair, ...], limit: int) -> tuple[LabelledPair, ...]:
    """``limit`` pairs taken evenly across ``pairs`` (all of them when ``limit`` is 0 or more than
    there are): the files run topic by topic and file by file, so the first N would be one kind."""
    if limit <= 0 or limit >= len(pairs):
        return pairs
    return tuple(pairs[i * len(pairs) // limit] for i in range(limit))
