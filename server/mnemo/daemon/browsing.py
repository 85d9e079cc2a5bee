"""The memory browser's answers (the daemon's page, :mod:`mnemo.daemon.review_page`): search,
a memory's page, the overview.

- **Search**: a question is answered by the real recall. With the default filters (the statuses
  recall searches, no time bounds) the answer is exactly ``mnemo recall``'s, score components
  included; another status ranks the memories of that status the same way; a time window keeps
  those of recall's best 50 that changed within it. No question: the newest memories within the
  filters.
- **A memory's page**: its versions (what each changed, and who: the writer, a person, a forget,
  the code check, the review queue's ageing — read from the version's batch, status and reason),
  its entities with their aliases, what closed it and what it closed, the judge's decisions about
  it, its source episodes, its usage by the person (injected, used, clearly unused, the workspaces
  where it is suppressed).
- **The overview**: ``mnemo stats --json`` and ``mnemo status --json``'s own figures, memories by
  namespace, the writer's last batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import datetime

from mnemo.api.browse import (
    STATUS_FILTERS,
    BrowseRequest,
    BrowseResult,
    EntityShown,
    MemoryPage,
    Overview,
    Usage,
    Version,
    WriterState,
)
from mnemo.api.recall import MemoryHit, RecallRequest
from mnemo.api.stats import Stats
from mnemo.api.status import Status
from mnemo.api.writer import JudgeLog
from mnemo.config import Settings
from mnemo.daemon.hook_ledger import HookLedger
from mnemo.daemon.recalling import Recall
from mnemo.daemon.storecalls import StoreCalls
from mnemo.errors import NotFoundError
from mnemo.index.entities import entity_key
from mnemo.memories import Memory, Origin
from mnemo.store.history import Listing, StoredVersion
from mnemo.vocabulary import MemoryStatus

RECALL_LIMIT = 50  # what recall answers at most; a time window filters these
_BOOKKEEPING = {"version", "updated_at"}


class Browsing:
    def __init__(
        self,
        calls: StoreCalls,
        recall: Recall,
        ledger: HookLedger,
        settings: Settings,
        status: Callable[[], Awaitable[Status]],
        judge_log: Callable[[int, str | None, str | None], Awaitable[JudgeLog]],
    ) -> None:
        self._calls = calls
        self._store = calls.store
        self._recall = recall
        self._ledger = ledger
        self._settings = settings
        self._status = status
        self._judge_log = judge_log

    async def search(self, request: BrowseRequest) -> BrowseResult:
        statuses = STATUS_FILTERS[request.status]
        is_windowed = request.since is not None or request.until is not None
        if not request.query.strip():
            listing = Listing(
                statuses,
                [t.value for t in request.types] if request.types else None,
                [request.namespace] if request.namespace else None,
                request.since,
                request.until,
            )
            found = await self._calls(self._store.list_memories, listing, request.limit)
            return BrowseResult(mode="list", memories=[MemoryHit(score=0.0, memory=m) for m in found])
        asked = RecallRequest(
            query=request.query,
            namespace=request.namespace,
            types=request.types,
            limit=RECALL_LIMIT if is_windowed else min(request.limit, RECALL_LIMIT),
            explain=True,
        )
        if request.status == "recall" and not is_windowed:
            answer = await self._recall.recall(asked)
            return BrowseResult(mode="recall", memories=answer.memories, episodes=answer.episodes)
        answer = await self._recall.recall(asked, statuses=statuses)
        kept = [h for h in answer.memories if _within(h.memory.updated_at, request.since, request.until)]
        return BrowseResult(mode="search", memories=kept[: request.limit])

    async def memory_page(self, memory_id: str) -> MemoryPage:
        store, calls = self._store, self._calls
        memory = await calls(store.get_memory, memory_id)
        if memory is None:
            raise NotFoundError(f"no memory has the id {memory_id!r}")
        stored = await calls(store.memory_versions, [memory_id])
        versions = [_version(v, stored[i - 1].memory if i else None) for i, v in enumerate(stored)]
        keys = {entity_key(e.name): e for e in memory.entities}
        aliases = {key: sorted(a) for key, _, a in await calls(store.entities, list(keys))}
        # closed_by "code:<commit>": closed by the writer's re-judge of its code, before it was removed.
        closer = memory.closed_by if memory.closed_by and not memory.closed_by.startswith("code:") else ""
        person = self._settings.namespace_of_person
        usage = await calls(store.memory_usage, memory_id, person)
        suppressed = await self._ledger.suppressed_in(memory_id, person)
        flag = self._recall.code.flag(memory_id)
        return MemoryPage(
            memory=memory,
            versions=list(reversed(versions)),  # newest first
            entities=[
                EntityShown(name=e.name, role=e.role, aliases=aliases.get(k, [])) for k, e in keys.items()
            ],
            closed_by=await calls(store.get_memory, closer) if closer else None,
            closes=await calls(store.closed_by, memory_id),
            decisions=(await self._judge_log(100, None, memory_id)).entries,
            sources=await calls(store.get_episodes, memory.sources[:50]) if memory.sources else [],
            usage=Usage(**dataclasses.asdict(usage), suppressed=suppressed),
            outdated=flag.note() if flag is not None else "",
            code_check=grade.note()
            if (grade := self._recall.code.grade(memory_id)) and not grade.stale
            else "",
        )

    async def overview(self, days: int) -> Overview:
        status = await self._status()
        stats: Stats = await self._ledger.stats(days)
        namespaces = await self._calls(self._store.memory_namespaces)
        last = await self._calls(self._store.last_batch)
        shown = ""
        if last is not None and last.updated_at is not None:
            shown = f"{last.status} {last.updated_at:%Y-%m-%d %H:%M} UTC, session {last.session}"
        distillation = status.distillation
        return Overview(
            person=self._settings.namespace_of_person,
            memories=status.memories,
            namespaces=namespaces,
            episodes=status.episodes,
            stats=stats,
            status=status,
            writer=WriterState(
                enabled=distillation.enabled,
                lease=distillation.lease,
                last_batch=shown,
                failed_batches=distillation.failed_batches,
                last_failure=distillation.last_failure,
                last_error=distillation.last_error,
            ),
        )


def _within(at: datetime, since: datetime | None, until: datetime | None) -> bool:
    return (since is None or at >= since) and (until is None or at < until)


def _version(version: StoredVersion, before: Memory | None) -> Version:
    memory = version.memory
    if before is None:
        changed: list[str] = []
    else:
        now, then = memory.model_dump(), before.model_dump()
        changed = [k for k in now if k not in _BOOKKEEPING and now[k] != then[k]]
    return Version(
        memory=memory,
        changed=changed,
        by=_by(version, before),
        batch=version.batch,
        committed_at=version.committed_at,
    )


def _by(version: StoredVersion, before: Memory | None) -> str:
    """Who made a version, as its batch, status and reason tell."""
    memory, batch = version.memory, version.batch
    if batch.startswith("code:"):
        return "the code check"
    if batch.startswith("import:"):
        return "the writer's judge, on an import"
    if batch:
        return "the writer"
    was = before.status if before is not None else None
    if memory.status is MemoryStatus.FORGOTTEN and was is not MemoryStatus.FORGOTTEN:
        return "a forget"
    if memory.status is MemoryStatus.ARCHIVED and was is MemoryStatus.CANDIDATE:
        return "the review queue's ageing" if "untouched" in memory.status_reason else "the writer"
    if memory.status_reason.startswith(("approved by ", "rejected by ")) and was is MemoryStatus.CANDIDATE:
        return memory.status_reason.split(" by ", 1)[1].split(":")[0].split(" after")[0]
    if before is None:
        return {
            Origin.EXPLICIT: "remember (an agent's tool or the CLI)",
            Origin.MANUAL: "a person, on the page",
            Origin.IMPORTED: "mnemo import --from",
            Origin.DISTILLED: "the writer",
        }[memory.origin]
    return "a person's edit"
