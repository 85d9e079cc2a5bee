"""Proposals by rule from the code check: the memory with the value its code has now, for review.

The code check (:mod:`mnemo.daemon.code_checks`) tells this of the memories it newly finds
possibly stale at a HEAD, on its own thread. Where it read what the code says now
(``timeout_sec = 900`` where the memory's 600 stood) and nothing else the memory names is gone,
the memory with the new value is written as a candidate that ``replaces`` it
(:mod:`mnemo.code.proposal`), in batch ``code:<commit>``: a person approving it closes the old
one. Any daemon may propose — ids are derived from the change, so the same change proposes one
candidate however many checkouts see it — and a later new value updates the candidate while the
check was the last to write it; one a person edited, approved, rejected or let age out is left as
it is. The old memory is never changed here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from mnemo.code.check import CodeFlag
from mnemo.code.proposal import proposed
from mnemo.daemon.indexing import Indexing
from mnemo.errors import StoreError
from mnemo.memories import Memory
from mnemo.store import Store
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
# The batch a proposal's versions are written under (the memory browser says "the code check").
BATCH_PREFIX = "code:"


class CodeProposals:
    def __init__(self, store: Store, index: Indexing, clock: Callable[[], datetime]) -> None:
        self._store, self._index, self._clock = store, index, clock

    def propose(self, root: Path, head: str, flagged: Sequence[tuple[Memory, CodeFlag]]) -> list[Memory]:
        """Write the candidates ``flagged`` calls for (any thread); the ones written."""
        written = []
        for memory, flag in flagged:
            try:
                candidate = self._write(root, head, memory, flag)
            except StoreError as exc:  # a proposal never fails the check that found it
                logger.warning("proposing the update of memory %s failed: %s", memory.id, exc)
                continue
            if candidate is not None:
                logger.info(
                    "the code check proposes %s in place of %s: %s", candidate.id, memory.id, flag.note()
                )
                written.append(candidate)
        return written

    def _write(self, root: Path, head: str, memory: Memory, flag: CodeFlag) -> Memory | None:
        candidate = proposed(memory, flag, root, head, self._clock())
        if candidate is None:
            return None
        store = self._store
        with store.versions_lock:  # no review step or writer batch between the reads and the write
            current = store.get_memory(memory.id)
            if (
                current is None
                or current.version != memory.version
                or current.status is not MemoryStatus.ACTIVE
            ):
                return None  # changed meanwhile: its next check speaks for it
            existing = store.get_memory(candidate.id)
            if existing is not None:
                # Updated with a later value only while it is a candidate the check itself wrote
                # last: a person's edit, approval or rejection stands.
                if existing.status is not MemoryStatus.CANDIDATE or existing.what == candidate.what:
                    return None
                latest = max(store.memory_versions([candidate.id]), key=lambda v: v.memory.version)
                if not latest.batch.startswith(BATCH_PREFIX):
                    return None
                candidate = candidate.model_copy(
                    update={"version": existing.version + 1, "created_at": existing.created_at}
                )
            store.put_memories([candidate], batch=f"{BATCH_PREFIX}{head[:12]}")
            self._index.apply(candidate, is_text_changed=True)
        return candidate
