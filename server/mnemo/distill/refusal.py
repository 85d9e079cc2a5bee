"""A person's line that refuses a proposal, and a draft that states the refused option.

The extraction must not store a proposal as a decision when the person answered no ("I suggest
MongoDB for the events" / "no, keep Postgres, our backups are built around it"): a small model
often writes "Use MongoDB for the events" and cites the refusal as its backing. A line refuses when
it opens with a refusal, in English or Spanish ("no", "nope", "let's not", "rather not", "mejor
no", "ni loco", "para nada"). A draft citing only such lines still records the person when it
states the refusal itself (a negation: "not MongoDB") or shares a word the person added to the
proposal (their alternative, their reason: "keep", "postgres", "backups"); otherwise it states the
refused option, and waits for a person (:mod:`mnemo.distill.policy`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mnemo.distill.guard import has_negation, words
from mnemo.episodes import Episode, Role
from mnemo.injected import strip_injected

_REFUSAL = re.compile(
    r"^\W*(?:no(?:pe)?\b|nah\b|nay\b|not (?:now|yet|really|that|this)\b|let'?s not\b|rather not\b|"
    r"i'?d rather (?:not|keep|stay|stick)\b|please don'?t\b|don'?t\b|do not\b|we won'?t\b|"
    r"(?:keep|stay with|stick with) (?:the current|what we have|it as is)\b|veto\b|"
    r"mejor no\b|ni (?:loco|de broma|ahí|ahi|en pedo)\b|para nada\b|nel\b|que no\b|tampoco\b|"
    r"olv[ií]d(?:a|ate|alo)\b|dejalo\b|déjalo\b)",
    re.IGNORECASE,
)


def refuses(text: str) -> bool:
    """Whether a person's line opens by refusing what was proposed to them."""
    return _REFUSAL.match(text) is not None


def states_refused(what: str, sources: Sequence[str], by_id: Mapping[str, Episode], *, how: str = "") -> bool:
    """Whether a draft (its ``what`` and ``how``), citing ``sources`` among the stretch's
    episodes ``by_id`` (in their order), states an option the person refused: every person's
    line it cites refuses, its what has no negation (a how that quotes the assistant's "I won't
    touch the transport" does not make "Drop the SFTP upload" a refusal), and neither has any
    of the words the person added to the line they answered."""
    order = list(by_id)
    cited = [by_id[s] for s in dict.fromkeys(sources) if by_id[s].role == Role.USER]
    if not cited or not all(refuses(strip_injected(e.text)) for e in cited) or has_negation(what):
        return False
    said = words(f"{what} {how}")
    for line in cited:
        at = order.index(line.id)
        answered = strip_injected(by_id[order[at - 1]].text) if at > 0 else ""
        if said & (words(strip_injected(line.text)) - words(answered)):
            return False
    return True
