"""What a session is given at its start, before any question: what the workspace uses.

With no question to rank by, the start's block is chosen by use. With ``start_memories = "used"``
(the default): first the memories this workspace's sessions used in the last ``USED_DAYS`` days,
most used first; then at most ``UNPROVEN`` others — decisions, preferences, procedures… first,
newest first — so that a new workspace, or a memory nobody has had a chance to use, is still
seen. With ``"all"``, as before there was a usage signal: every current memory of the workspace
and the person that fits, the most used by the person first. Either way a memory whose code may
have moved on goes behind the others of its rank.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Literal

from mnemo.memories import Memory
from mnemo.vocabulary import MemoryType

USED_DAYS = 30
UNPROVEN = 3
# At session start, with no question to rank by: what is worth having in mind first.
_FIRST_TO_LAST = ("decision", "preference", "procedure", "postmortem", "pattern", "fact", "state", "event")
START_ORDER = {MemoryType(name): rank for rank, name in enumerate(_FIRST_TO_LAST)}

Policy = Literal["used", "all"]


def start_order(
    found: list[Memory],
    *,
    uses: Mapping[str, int],
    flagged: Callable[[str], bool],
    policy: Policy,
    suppressed: Collection[str] = (),
) -> list[Memory]:
    """Of ``found`` (current memories of the workspace and the person), what the start's block
    offers, best first; the budget takes what fits. ``uses`` are what the policy ranks by: the
    workspace's uses in the last ``USED_DAYS`` days (``used``), the person's anywhere (``all``).
    What is ``suppressed`` here is left out before the others are chosen, so that another memory
    not yet used takes its place."""
    ordered = sorted((m for m in found if m.id not in suppressed), key=lambda m: m.updated_at, reverse=True)
    ordered.sort(key=lambda m: (-uses.get(m.id, 0), START_ORDER.get(m.type, 9), flagged(m.id)))
    if policy == "all":
        return ordered
    proven = [m for m in ordered if uses.get(m.id, 0)]
    unproven = [m for m in ordered if not uses.get(m.id, 0)]
    return proven + unproven[:UNPROVEN]
