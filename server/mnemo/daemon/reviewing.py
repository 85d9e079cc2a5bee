"""The review queue: candidates a person approves (maybe edited first), rejects, or lets age out.

State machine::

    candidate ──approve──▶ active      (a person backs it from then on; the memory it
        │                               replaces, if any, is closed by it)
        ├─────reject────▶ rejected
        └──untouched 30 days──▶ archived

Each step is a new version of the memory's row (nothing is deleted) and reaches the index at
once: an approved memory is recallable and injectable when the call returns; a candidate,
rejected or archived one never is. An edit changes the text (its vector is recomputed in the
background) and may come with the approval. Approved memories stay editable; deleting one is
``forget``.
"""

from __future__ import annotations

import logging
from datetime import datetime

import anyio

from mnemo.api.review import ReviewAction, ReviewEdit, ReviewQueue
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.storecalls import StoreCalls
from mnemo.distill.policy import ARCHIVE_AFTER
from mnemo.errors import InputError, NotFoundError
from mnemo.injected import refuse_unfit
from mnemo.memories import Memory
from mnemo.secrets import refuse_unkeepable
from mnemo.store.history import Listing
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
ARCHIVE_POLL_S = 3_600.0
REVIEWABLE = (MemoryStatus.CANDIDATE, MemoryStatus.ACTIVE)
STALE_REASON = f"untouched for {ARCHIVE_AFTER.days} days in the review queue"


class Reviews:
    def __init__(self, calls: StoreCalls, index: Indexing, settings: Settings) -> None:
        self._calls = calls
        self._index = index
        self._store = calls.store
        self._settings = settings

    async def queue(self, status: MemoryStatus, namespace: str | None, limit: int) -> ReviewQueue:
        if status not in (MemoryStatus.CANDIDATE, MemoryStatus.ACTIVE):
            raise InputError("status: the review lists candidate or active memories")
        call = self._calls
        listing = Listing((status.value,), namespaces=[namespace] if namespace is not None else None)
        found = await call(self._store.list_memories, listing, limit)
        return ReviewQueue(status=status.value, memories=found, policy=self._settings.approval_policy)

    async def act(self, action: ReviewAction, now: datetime | None = None) -> Memory:
        now = now or utc_now()
        refuse_unkeepable(action.reason, "reason")
        edits = _edits(action.edit) if action.edit is not None else {}
        person = self._settings.namespace_of_person

        def step() -> tuple[Memory, bool]:
            # One read, one write and the index, under the store's versions lock: a batch the
            # writer commits meanwhile cannot overwrite this step, nor this step that batch.
            with self._store.versions_lock:
                memory = self._store.get_memory(action.id)
                if memory is None:
                    raise NotFoundError(f"no memory has the id {action.id!r}")
                allowed = REVIEWABLE if action.action == "edit" else (MemoryStatus.CANDIDATE,)
                if memory.status not in allowed:
                    raise InputError(
                        f"memory {memory.id} is {memory.status.value}; only "
                        f"{' or '.join(s.value for s in allowed)} memories can be {action.action}d"
                        + ("" if action.action == "edit" else " (its decision is already taken)")
                    )
                current = memory.model_dump()
                is_text_changed = any(current[k] != v for k, v in edits.items())
                update: dict[str, object] = {"version": memory.version + 1, "updated_at": now, **edits}
                if "content" in edits:
                    update["what"] = edits["content"]
                if action.action == "approve":
                    reason = f"approved by {person}" + (" after an edit" if is_text_changed else "")
                    update.update(status=MemoryStatus.ACTIVE, has_human_backing=True, status_reason=reason)
                elif action.action == "reject":
                    reason = f"rejected by {person}" + (f": {action.reason}" if action.reason else "")
                    update.update(status=MemoryStatus.REJECTED, status_reason=reason, valid_to=now)
                elif not is_text_changed:
                    return memory, False  # an edit that changes nothing writes nothing
                changed = memory.model_copy(update=update)
                replaced = self._replaced(memory, changed, now) if action.action == "approve" else None
                self._store.put_memories([changed] if replaced is None else [changed, replaced])
                self._index.apply(changed, is_text_changed=is_text_changed)
                if replaced is not None:
                    self._index.apply(replaced, is_text_changed=False)
                return changed, is_text_changed

        changed, is_text_changed = await anyio.to_thread.run_sync(step)
        if is_text_changed:
            self._index.wake_embedder()
        logger.info("review: %s %s (%s)", action.action, changed.id, changed.status.value)
        return changed

    def _replaced(self, candidate: Memory, approved: Memory, now: datetime) -> Memory | None:
        """The memory the approved ``candidate`` replaces (``replaces``), closed by it. None when
        it names none; when that one is no longer active, or changed after the candidate was
        proposed (a person edited it: their version is not what was read in the code); or when it
        lives in another namespace than the candidate did (a candidate replaces only its own
        namespace's memories, whatever namespace an edit at approval gives it)."""
        if not candidate.replaces:
            return None
        old = self._store.get_memory(candidate.replaces)
        if (
            old is None
            or old.status is not MemoryStatus.ACTIVE
            or old.updated_at > candidate.created_at
            or old.namespace != candidate.namespace
        ):
            return None
        return old.model_copy(
            update={
                "version": old.version + 1,
                "status": MemoryStatus.CLOSED,
                "closed_by": approved.id,
                "valid_to": now,
                "updated_at": now,
                "status_reason": f"replaced by {approved.id}, {approved.status_reason}",
            }
        )

    async def archive_stale(self, now: datetime | None = None) -> int:
        """Archive candidates no one touched for 30 days; return how many."""
        now = now or utc_now()

        def sweep() -> int:
            archived = 0
            with self._store.versions_lock:
                while stale := self._store.stale_candidates(now - ARCHIVE_AFTER, 500):
                    for memory in stale:
                        changed = memory.model_copy(
                            update={
                                "version": memory.version + 1,
                                "status": MemoryStatus.ARCHIVED,
                                "status_reason": STALE_REASON,
                                "updated_at": now,
                            }
                        )
                        self._store.put_memory(changed)
                        self._index.apply(changed, is_text_changed=False)
                        archived += 1
            return archived

        archived = await anyio.to_thread.run_sync(sweep)
        if archived:
            logger.info("archived %d candidates untouched for %d days", archived, ARCHIVE_AFTER.days)
        return archived

    async def run(self) -> None:
        """Archive stale candidates once the index is built, then every hour, for the daemon's life."""
        await self._index.built()
        while True:
            try:
                await self.archive_stale()
            except Exception:
                logger.exception("archiving stale candidates failed")
            await anyio.sleep(ARCHIVE_POLL_S)


def _edits(edit: ReviewEdit) -> dict[str, object]:
    edits = {k: v for k, v in edit.model_dump().items() if v is not None}
    for name, value in edits.items():
        if isinstance(value, str):
            refuse_unfit(value, name)
            refuse_unkeepable(value, name)
    return edits
