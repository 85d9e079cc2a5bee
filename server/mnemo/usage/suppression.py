"""Suppression: a memory a person keeps getting and never uses stops being injected for them.

Clearly unused ``SUPPRESS_AFTER`` times within ``SUPPRESS_DAYS`` days, and never used, a memory is
suppressed for that person: the hooks no longer inject it, though recall still finds
it. Only clear verdicts count (:mod:`mnemo.usage.audit`): an unclear one never suppresses.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mnemo.clock import as_stored

if TYPE_CHECKING:
    from mnemo.store import Store

SUPPRESS_AFTER = 6
SUPPRESS_DAYS = 30


def suppressed(store: Store, person: str, now: datetime) -> set[str]:
    """The memories suppressed for ``person`` as of ``now``."""
    since = as_stored(now) - timedelta(days=SUPPRESS_DAYS)
    return store.clearly_unused(person, since=since, times=SUPPRESS_AFTER)
