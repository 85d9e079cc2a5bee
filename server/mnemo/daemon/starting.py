"""What a session's start offers, best first (SessionStart): the workspace's and the person's
current memories, what is suppressed in the workspace left out, ordered by the start's policy
(:mod:`mnemo.usage.start`) with the checkout's possibly stale memories behind their rank."""

from __future__ import annotations

from datetime import datetime, timedelta

from mnemo.config import Settings
from mnemo.daemon.hook_ledger import HookLedger
from mnemo.daemon.recalling import Recall
from mnemo.daemon.storecalls import StoreCalls
from mnemo.memories import Memory
from mnemo.usage import start

START_CANDIDATES = 300


async def start_candidates(
    calls: StoreCalls,
    ledger: HookLedger,
    recall: Recall,
    settings: Settings,
    *,
    person: str,
    workspace: str,
    cwd: str,
    now: datetime,
) -> list[Memory]:
    """The memories a start in ``workspace`` (checked out at ``cwd``) offers, best first; the
    block's budget takes what fits."""
    store = calls.store
    found = await calls(store.active_memories, [workspace, person], START_CANDIDATES)
    policy = settings.start_memories
    if policy == "all":
        uses = await calls(store.use_counts, person)
    else:
        uses = await calls(store.uses_in, person, workspace, now - timedelta(days=start.USED_DAYS))
    hidden = await ledger.left_out(person, workspace)
    # The checkout against the memories' anchors: a possibly stale memory is marked, and goes
    # behind the others of its rank — no question to weigh it by.
    await recall.code.check(cwd, found)
    flag = recall.code.flag
    return start.start_order(
        found, uses=uses, flagged=lambda m: flag(m) is not None, policy=policy, suppressed=hidden
    )
