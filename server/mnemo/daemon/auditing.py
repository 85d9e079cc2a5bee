"""`mnemo audit` in the daemon: the evidence gathered from the store, the index and the code
check (:mod:`mnemo.health` finds), and each finding's action applied.

What each action writes is a new version of each memory it touches (nothing is deleted), under
the store's versions lock and into the index at once, as a review step is:

- ``archive``: an active memory is forgotten, a waiting one rejected, each with the finding's
  reason ("audit: reads as a command"); both stay in the memory's history and its episodes;
- ``merge``: the second memory's sources are added to the first (seen once more), the second
  closed by the first;
- ``close``: the older memory is closed by the newer, from the newer's time;
- ``review``: an active memory goes back to the review queue (a candidate, with the reason);
- ``forget``: forgotten, and its text is replaced in its new version by the reason, so that
  recall and the page's current view never show the credential again (the episodes were redacted
  when stored). Its earlier versions keep their text: the memory's history on the page and
  ``mnemo export --history`` still show it.

A finding is acted on only as it still stands: a memory that changed since (another status, a
newer version) is left as it is, and said so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import anyio
import numpy as np
import numpy.typing as npt

from mnemo.api.audit import ACTIONS, AuditApplied, AuditApply, AuditReport, AuditRequest, Finding
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.code_checks import CodeChecks
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.storecalls import StoreCalls
from mnemo.errors import InputError
from mnemo.health import Evidence, audit
from mnemo.index.live import RecallEngine
from mnemo.memories import Memory
from mnemo.store.history import Listing
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
MAX_MEMORIES = 20_000  # the newest open memories an audit reads
OPEN = (MemoryStatus.ACTIVE.value, MemoryStatus.CANDIDATE.value)


class Auditing:
    def __init__(
        self,
        calls: StoreCalls,
        index: Indexing,
        engine: Callable[[], RecallEngine],
        code_checks: CodeChecks,
        settings: Settings,
    ) -> None:
        self._calls = calls
        self._store = calls.store
        self._index = index
        self._engine = engine
        self._code = code_checks
        self._settings = settings

    async def report(self, request: AuditRequest, now: datetime | None = None) -> AuditReport:
        now = now or utc_now()
        findings, read = await self._find(request, now)
        scanned = len(read)
        counts: dict[str, int] = {kind: sum(f.kind == kind for f in findings) for kind in request.kinds}
        return AuditReport(scanned=scanned, days=request.days, counts=counts, findings=findings)

    async def _find(self, request: AuditRequest, now: datetime) -> tuple[list[Finding], dict[str, Memory]]:
        """The findings, and the memories they were read from (by id, as read)."""
        await self._index.built()
        namespaces = [request.namespace] if request.namespace else None
        memories = await self._calls(
            self._store.list_memories, Listing(OPEN, namespaces=namespaces), MAX_MEMORIES
        )
        person = self._settings.namespace_of_person
        ids = sorted({s for m in memories for s in m.sources})
        sources = {}
        for at in range(0, len(ids), 2_000):
            for episode in await self._calls(self._store.get_episodes, ids[at : at + 2_000]):
                sources[episode.id] = episode
        since = now - timedelta(days=request.days)
        injected = await self._calls(self._store.injection_counts, person, since)
        used = await self._calls(self._store.use_counts, person)
        engine = self._engine()
        embedder = engine.embedder

        def neighbours(memory: Memory) -> Sequence[str]:
            return engine.judge_candidates(
                memory.content, [e.name for e in memory.entities], memory.namespace, None
            )

        def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
            assert embedder is not None
            vectors = embedder.embed_documents(list(texts)).astype(np.float32)
            norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9).astype(np.float32)
            unit: npt.NDArray[np.float32] = vectors / norms
            return unit

        evidence = Evidence(
            memories=memories,
            sources=sources,
            injected=injected,
            used=used,
            code_flags=self._code.notes(memories),
            now=now,
            days=request.days,
            neighbours=neighbours,
            embed=embed if embedder is not None else None,
            by_id={m.id: m for m in memories},
        )
        findings = await anyio.to_thread.run_sync(audit, evidence, list(request.kinds))
        return findings, evidence.by_id

    async def apply(self, request: AuditApply, now: datetime | None = None) -> AuditApplied:
        """The kind's action on its findings (those about ``request.memories``, or all)."""
        if not request.confirm:
            raise InputError("confirm: a bulk change is applied only when confirmed (confirm: true)")
        now = now or utc_now()
        asked = AuditRequest(kinds=[request.kind], namespace=request.namespace, days=request.days)
        findings, read = await self._find(asked, now)
        wanted = set(request.memories)
        chosen = [f for f in findings if not wanted or f.memories[0] in wanted]
        missing = wanted - {f.memories[0] for f in chosen}
        action = ACTIONS[request.kind]

        def act() -> tuple[list[str], list[str]]:
            changed: list[str] = []
            unchanged = [f"{m}: no {request.kind} finding about it now" for m in sorted(missing)]
            with self._store.versions_lock:
                for finding in chosen:
                    current = [self._store.get_memory(m) for m in finding.memories]
                    if any(
                        m is None or m.status.value not in OPEN or m.version != read[m.id].version
                        for m in current
                    ):
                        unchanged.append(f"{finding.memories[0]}: changed since the audit read it")
                        continue
                    rows = _rows(action, [m for m in current if m is not None], finding.reason, now)
                    self._store.put_memories(rows)
                    for row in rows:
                        self._index.apply(row, is_text_changed=action == "forget")
                    changed += [r.id for r in rows]
            return changed, unchanged

        changed, unchanged = await anyio.to_thread.run_sync(act)
        logger.info(
            "audit: %s on %d %s findings (%d memories)", action, len(chosen), request.kind, len(changed)
        )
        return AuditApplied(kind=request.kind, action=action, changed=changed, unchanged=unchanged)


def _rows(action: str, memories: list[Memory], reason: str, now: datetime) -> list[Memory]:
    """The new versions ``action`` writes of a finding's memories."""

    def next_of(memory: Memory, **update: object) -> Memory:
        return memory.model_copy(update={"version": memory.version + 1, "updated_at": now, **update})

    why = f"audit: {reason}"
    first = memories[0]
    if action == "archive":
        status = MemoryStatus.FORGOTTEN if first.status is MemoryStatus.ACTIVE else MemoryStatus.REJECTED
        return [next_of(first, status=status, status_reason=why, valid_to=now)]
    if action == "forget":
        hidden = "[hidden by mnemo audit: it looked like a credential]"
        texts = {k: hidden if getattr(first, k) else "" for k in ("content", "what", "why", "how")}
        return [next_of(first, status=MemoryStatus.FORGOTTEN, status_reason=why, valid_to=now, **texts)]
    if action == "review":
        return [next_of(first, status=MemoryStatus.CANDIDATE, status_reason=why)]
    keep, other = memories[0], memories[1]
    if action == "merge":
        sources = list(dict.fromkeys([*keep.sources, *other.sources]))
        merged = next_of(keep, sources=sources, seen_count=keep.seen_count + other.seen_count,
                         has_human_backing=keep.has_human_backing or other.has_human_backing)  # fmt: skip
        closed = next_of(other, status=MemoryStatus.CLOSED, closed_by=keep.id,
                         valid_to=now, status_reason=f"audit: the same as {keep.id}")  # fmt: skip
        return [merged, closed]
    # close: the older (second) closed by the newer (first)
    closed_at = max(keep.valid_from, other.valid_from)
    return [next_of(other, status=MemoryStatus.CLOSED, closed_by=keep.id, valid_to=closed_at,
                    status_reason=f"audit: superseded by {keep.id}")]  # fmt: skip
