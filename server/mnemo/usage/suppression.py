"""Suppression: a memory a workspace's sessions keep getting and never use stops being injected there.

Clearly unused ``SUPPRESS_AFTER`` times within ``SUPPRESS_DAYS`` days in one workspace's sessions,
and not used there since, a memory is suppressed in that workspace for that person: the hooks no
longer inject it there — unless a prompt asks for it (:func:`asked_for`, or recall ranks it
first by far: :data:`CLEAR_LEAD`) — though recall still
finds it, and other workspaces still get it. Only clear verdicts count (:mod:`mnemo.usage.audit`):
an unclear one never suppresses. A use, or a restore (``mnemo unsuppress``, the memory browser),
starts the count over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mnemo.clock import as_stored
from mnemo.usage import signal
from mnemo.usage.audit import signal_text
from mnemo.usage.signal import TurnActs

if TYPE_CHECKING:
    from mnemo.memories import Memory
    from mnemo.store import Store

SUPPRESS_AFTER = 6
SUPPRESS_DAYS = 30
ASKED_AT = 0.5  # a prompt holding this share of a memory's distinctive content asks for it
# A prompt whose recall ranks a memory first with this many times the next one's score asks for
# it, in whatever words ("where is the Fastly shield?" for "The shield is set to FRA in the VCL").
CLEAR_LEAD = 2.0


def left_out_of_prompt(suppressed: set[str], ranked: Sequence[Memory], asked: str, lead: str) -> set[str]:
    """Of what is suppressed, what a prompt's block still leaves out: not a memory the prompt
    ``asked`` for (:func:`asked_for`), nor the one its recall ranks first by far (``lead``)."""
    if not asked:
        return suppressed
    return {
        m.id for m in ranked if m.id in suppressed and m.id != lead and not asked_for(signal_text(m), asked)
    }


def leads_clearly(scores: list[float]) -> bool:
    """Whether the first of ``scores`` (best first) leads the next by :data:`CLEAR_LEAD`. Alone,
    it leads nothing: a prompt that finds one memory may only share its subject."""
    return len(scores) >= 2 and scores[0] > 0 and scores[0] >= CLEAR_LEAD * scores[1]


@dataclass(frozen=True, slots=True, order=True)
class Suppressed:
    memory: str
    workspace: str
    unused: int  # clear non-uses there, in the window, since its last use or restore


def suppressed(store: Store, person: str, now: datetime) -> list[Suppressed]:
    """What is suppressed for ``person`` as of ``now``, in each workspace."""
    since = as_stored(now) - timedelta(days=SUPPRESS_DAYS)
    found = store.clearly_unused(person, since=since, times=SUPPRESS_AFTER)
    return sorted(Suppressed(m, w, n) for m, w, n in found)


def asked_for(memory_text: str, prompt: str) -> bool:
    """Whether a prompt asks for a memory: it holds half of the memory's distinctive content or
    more, as :mod:`mnemo.usage.signal` weighs it (its values and names weigh most) — more than a
    prompt that merely shares its subject, as most prompts that recalled it do."""
    return signal.content_score(memory_text, TurnActs("", prompt)) >= ASKED_AT
