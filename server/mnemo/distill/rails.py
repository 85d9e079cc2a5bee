"""A small model's rails around the extraction: rules, no model call, that decide which stretches
are read and what a small model's extraction dropped.

- :func:`states_something`: a stretch whose person's lines are all plain commands ("run the
  tests", "commit it") holds only this session's work, and is not read: a small model's
  extraction turns such commands into memories, and cannot tell them apart when asked;
- :func:`uncovered_statements` and :func:`look_again`: a person's statement no draft covers is
  extracted on its own (a small model often keeps one memory of a stretch and drops the rest);
- :func:`preferred`: a draft citing what the person prefers is a preference.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace

from mnemo.distill.durable import Durability
from mnemo.distill.extract import Draft, ExtractionError, extract
from mnemo.distill.guard import words
from mnemo.distill.llm import ChatModel
from mnemo.distill.said import LANGUAGE_ASKED, is_question, picks_option, states_lasting_anywhere
from mnemo.episodes import Episode, Role
from mnemo.errors import ModelRefusedError, ModelTimeoutError
from mnemo.injected import strip_injected
from mnemo.vocabulary import MemoryType

logger = logging.getLogger(__name__)
_PREFERS = re.compile(
    r"\b(?:i prefer|we prefer|i'd rather|i like|prefiero|preferimos|me gusta)\b", re.IGNORECASE
)


def states_something(episodes: Sequence[Episode], durability: Durability | None = None) -> bool:
    """Whether a stretch may hold something durable: a person's line asks (the answer may be a
    finding), picks one of the options the agent proposed ("B", "A + C"), uses words that state
    something lasting or states a value ("from now on", "prefer", "because", "siempre", "immer",
    "auf Deutsch", a number, a version: :func:`states_lasting_anywhere`), or — with the
    durable-line classifier for the embedder (:mod:`mnemo.distill.durable`) — reads as durable
    without any of them ("staging is qa-eu now, the old name confused people"). A stretch whose
    person's lines are all plain commands ("run the tests", "commit it", "vale, push") holds only
    this session's work. With no person's line at all, it cannot tell: True."""
    said = [strip_injected(e.text) for e in episodes if e.role == Role.USER]
    if not said or any(
        is_question(t) or states_lasting_anywhere(t, bare_numbers=True) or picks_option(t) for t in said
    ):
        return True
    return durability is not None and any(durability.durable(said, "person"))


def uncovered_statements(
    episodes: Sequence[Episode], drafts: Sequence[Draft], durability: Durability | None = None
) -> list[Episode]:
    """The person's lines that state something lasting (words like "from now on", "prefer",
    "never", a quantity with its unit, a version; or durable by the classifier) which no draft
    covers: no draft has half of the line's words. A small model's extraction
    often keeps one memory of a stretch and drops the rest; each of these is worth a look of its
    own (:func:`extract` with ``focus``)."""
    said = [(e, strip_injected(e.text)) for e in episodes if e.role == Role.USER and not is_question(e.text)]
    lasting = [states_lasting_anywhere(text) for _, text in said]
    if durability is not None and said and not all(lasting):
        lasting = [
            a or b for a, b in zip(lasting, durability.durable([t for _, t in said], "person"), strict=True)
        ]
    return [e for (e, text), keep in zip(said, lasting, strict=True) if keep and not covers(drafts, text)]


def look_again(
    llm: ChatModel, episodes: Sequence[Episode], drafts: Sequence[Draft], durability: Durability | None = None
) -> list[Draft]:
    """A small model's drafts, and what the person stated that they dropped: each uncovered
    statement extracted on its own, unless a draft already says it; a draft citing what the
    person prefers typed a preference."""
    found: list[Draft] = []
    for line in uncovered_statements(episodes, drafts, durability):
        said = words(strip_injected(line.text))
        try:
            again = extract(llm, episodes, focus=line)
        except ExtractionError as exc:  # the drafts already made stand
            logger.warning("a second look at %s gave nothing usable: %s", line.id, exc)
            continue
        except (ModelRefusedError, ModelTimeoutError) as exc:  # so would the next looks: they stand too
            logger.warning("a second look at %s was not answered: %s", line.id, exc)
            break
        for draft in again:
            # Not from that line if it shares no word with it ("Go ahead.", the reply before it).
            if words(draft.memory.what) & said and not covers([*drafts, *found], draft.text):
                found.append(draft)
    return [preferred(d, episodes) for d in [*drafts, *found]]


def covers(drafts: Sequence[Draft], text: str) -> bool:
    """Whether a draft says much of ``text``: half of its words."""
    said = words(text)
    return not said or any(len(said & words(d.text)) >= len(said) / 2 for d in drafts)


def preferred(draft: Draft, episodes: Sequence[Episode]) -> Draft:
    """A draft citing a person's line that says what they prefer, or the language they want, is a
    preference, whatever type the model gave it ("Prefiero que los mensajes de commit vayan en
    inglés", "schreibe alles auf Deutsch")."""
    said = [strip_injected(e.text) for e in episodes if e.id in draft.memory.sources and e.role == Role.USER]
    if draft.memory.type in (MemoryType.DECISION, MemoryType.FACT) and any(
        _PREFERS.search(line) or LANGUAGE_ASKED.search(line) for line in said
    ):
        return replace(
            draft, memory=draft.memory.model_copy(update={"type": MemoryType.PREFERENCE}), demoted=False
        )
    return draft
