"""A small model's draft that rests on this session's work: it waits for a person.

A small model drafts chores and work logs as memories ("commit changes to the project", "Check
the submit cron job") from a person's line that mixes a command with something lasting ("ok
commit. pls keep commits small, i review them one by one"): the line backs the draft, and the
draft says only its command. So the writer reads the person's lines a draft cites sentence by
sentence, takes the sentence the draft is nearest (the most words in common for the words of
both: "commit changes to the project" is nearer "ok commit." than the preference), and asks
whether that sentence lasts: durable by the line classifier (:mod:`mnemo.distill.durable`),
using words that state something lasting ("from now on", "never", "because":
:func:`mnemo.distill.said.uses_lasting_words`), or stating a value the draft states too (a
setting changed: "raise it to 600 then"). When it does not, the draft rests on a command, and
waits in the review queue instead of going active (:mod:`mnemo.distill.policy`): delayed if it
was right, never lost. A chore that names a version ("bump axios to 1.7.2") is not caught.

A draft that shares no word with any person's sentence rests on the assistant's or the tools'
lines ("Yes, both runs completed", answering "did the nightly job run ok?"): the classifier reads
its what as a drafted note, and one that does not last ("The nightly job ran ok") waits too. (As a
veto on every draft, keeping them as episodes only, the note classifier dropped right memories a
person had stated: docs/benchmarks.md.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mnemo.distill.durable import Durability
from mnemo.distill.guard import words
from mnemo.distill.readings import facts
from mnemo.distill.said import uses_lasting_words
from mnemo.episodes import Episode, Role
from mnemo.injected import strip_injected

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentences(text: str) -> list[str]:
    """A line's sentences (split after . ! ? ; and at line breaks), blanks left out."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def rests_on_passing(
    what: str, how: str, sources: Sequence[str], by_id: Mapping[str, Episode], durability: Durability
) -> bool:
    """Whether a draft (its ``what`` and ``how``) rests on this session's work. Nearest a person's
    sentence, among those of the lines it cites (by the words they share over the words of
    both): when that sentence does not last. A sentence lasts when the classifier reads it as
    durable, when it uses lasting words, or when it states a value the draft states too ("raise
    it to 600 then", "move payout-submit to 01:50": a setting changed); ties between sentences
    count for the draft. Near no person's sentence (it rests on the assistant's or the tools'
    lines): when its what, read as a drafted note, is not durable ("The nightly job ran ok")."""
    draft = f"{what} {how}"
    said = words(draft)
    cited = [strip_injected(by_id[s].text) for s in dict.fromkeys(sources) if by_id[s].role == Role.USER]
    shares: list[tuple[float, str]] = []
    for sentence in (s for line in cited for s in sentences(line)):
        own = words(sentence)
        if own and said & own:
            shares.append((len(said & own) / len(said | own), sentence))
    if not shares:
        return not durability.durable([what], "note")[0]
    best = max(share for share, _ in shares)
    nearest = [sentence for share, sentence in shares if share == best]
    if any(uses_lasting_words(sentence) for sentence in nearest) or any(
        durability.durable(nearest, "person")
    ):
        return False
    stated = _values(draft)
    return not any(_values(sentence) & stated for sentence in nearest)


def _values(text: str) -> set[str]:
    """The numbers (as written: "600", "01:50", "1.7.2") and identifiers a text states."""
    return set(re.findall(r"\d+(?:[.:,]\d+)*", text)) | facts(text)["identifier"]
