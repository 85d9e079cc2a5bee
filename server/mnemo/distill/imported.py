"""Candidates imported from the files people keep (``mnemo import --from claude-md`` …), judged
against what mnemo already knows.

An imported entry is a candidate from the moment it is imported; with a model, the writer then
judges it as it judges a distilled memory (:func:`mnemo.distill.judge.judge`), against up to 8
current memories and candidates near it:

- **the same** as one of them: folded into it — its sources gain the file's line, it is seen once
  more — and the imported candidate is archived, its reason naming the memory;
- **updates or contradicts** some: it stays a candidate, its reason naming what it would close;
  nothing is closed by a file alone, the person decides on review;
- otherwise it stays a candidate, new to mnemo (the reason says so, and when the judge doubts it
  is worth keeping; a person wrote it down, so the person decides).

Each decision goes to the judge log (batch ``import:<source>:<first id>``, session
``import:<source>``), and the writes go through the writer's fence like its batches.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from mnemo.distill.decide import DecisionModel
from mnemo.distill.extract import ExtractedEntity, ExtractedMemory
from mnemo.distill.judge import Action, judge, judge_log_row
from mnemo.distill.shown import transcript
from mnemo.index.documents import memory_document
from mnemo.index.live import RecallEngine
from mnemo.memories import MAX_W_CHARS, Memory
from mnemo.store import Store
from mnemo.store.distill import JudgeLogRow
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
IMPORT_SESSION = "import:{source}"


@dataclass(frozen=True, slots=True)
class Judged:
    memory: str
    outcome: str  # folded | updates | new | gone (no longer a candidate when its turn came)
    target: str = ""


class ImportJudge:
    def __init__(
        self,
        store: Store,
        engine: RecallEngine,
        decisions: DecisionModel,
        commit: Callable[..., None],
        clock: Callable[[], datetime],
    ) -> None:
        self._store, self._engine, self._decisions = store, engine, decisions
        self._commit, self._clock = commit, clock

    def judge(self, source: str, memory_ids: Sequence[str]) -> list[Judged]:
        """Judge the imported candidates ``memory_ids`` (of ``source``) and write what follows."""
        if not memory_ids:
            return []
        now = self._clock()
        batch = f"import:{source}:" + hashlib.sha256("\0".join(memory_ids).encode()).hexdigest()[:16]
        session = IMPORT_SESSION.format(source=source)
        pending: dict[str, Memory] = {}  # id → the version this pass will write

        def latest(memory_id: str) -> Memory | None:
            return pending.get(memory_id) or self._engine.memory(memory_id)

        def changed(memory_id: str, **update: object) -> None:
            """The next version of ``memory_id``: one more than the indexed one, however many
            changes this pass makes to it (a candidate judged, then another folded into it)."""
            indexed, now_is = self._engine.memory(memory_id), latest(memory_id)
            assert indexed is not None and now_is is not None
            pending[memory_id] = now_is.model_copy(update={**update, "version": indexed.version + 1})

        log: list[JudgeLogRow] = []
        done: list[Judged] = []
        embedder = self._engine.embedder
        for seq, memory_id in enumerate(memory_ids):
            memory = latest(memory_id)
            if memory is None or memory.status is not MemoryStatus.CANDIDATE:
                done.append(Judged(memory_id, "gone"))
                continue
            vector = embedder.embed_documents([memory_document(memory).text])[0] if embedder else None
            near = self._engine.judge_candidates(
                memory.content, [e.name for e in memory.entities], memory.namespace, vector
            )
            found = (latest(i) for i in near if i != memory_id)
            others = [
                m
                for m in found
                if m is not None and m.status in (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE)
            ]
            draft = ExtractedMemory(
                type=memory.type,
                what=(memory.what or memory.content)[:MAX_W_CHARS],  # an entry may be longer
                why=memory.why,
                how=memory.how,
                entities=[ExtractedEntity(name=e.name, role=e.role) for e in memory.entities],
                sources=memory.sources or [memory_id],
            )
            source_text = transcript(self._store.get_episodes(memory.sources), tool_chars=4_000)
            verdict = judge(draft, others, source_text, self._decisions, embedder)
            log.append(judge_log_row(batch, seq, session, memory.namespace, memory_id, verdict, now))
            origin = memory.status_reason.split(";")[0]
            if verdict.action is Action.MERGE and verdict.merge_into is not None:
                target = latest(verdict.merge_into)
                if target is not None:
                    changed(target.id, **_folded(target, memory, now))
                    reason = f"{origin}; the same as {target.id}, which it was folded into"
                    changed(memory_id, status=MemoryStatus.ARCHIVED, updated_at=now, status_reason=reason)
                    done.append(Judged(memory_id, "folded", target.id))
                    continue
            if verdict.closes:
                reason = (
                    f"{origin}; the judge says it updates {', '.join(verdict.closes)}: approving it does not "
                    "close them — forget them on review if they no longer hold"
                )
                done.append(Judged(memory_id, "updates", verdict.closes[0]))
            else:
                doubt = (
                    f"; the judge doubts it is worth keeping ({verdict.reason})"
                    if verdict.action is Action.EPISODES_ONLY
                    else ""
                )
                reason = f"{origin}; new to mnemo{doubt}"
                done.append(Judged(memory_id, "new"))
            changed(memory_id, updated_at=now, status_reason=reason)
        self._write(pending, log, batch)
        return done

    def _write(self, pending: dict[str, Memory], log: list[JudgeLogRow], batch: str) -> None:
        with self._store.versions_lock:  # no review step or forget between the check and the commit
            stored = self._store.current_versions(list(pending))
            rows = [m for m in pending.values() if stored.get(m.id) == m.version - 1]
            for memory in pending.values():
                if memory not in rows:
                    logger.info("memory %s changed while its import was judged; left as it is", memory.id)
            self._store.put_judge_log(log)
            if rows:
                self._commit(rows, batch=batch)
                for memory in rows:
                    self._engine.set_memory_status(memory)


def _folded(target: Memory, imported: Memory, now: datetime) -> dict[str, object]:
    """What folding an imported candidate into ``target`` changes: its sources gain the
    candidate's, it is seen once more."""
    return {
        "sources": list(dict.fromkeys([*target.sources, *imported.sources])),
        "seen_count": target.seen_count + 1,
        "has_human_backing": target.has_human_backing or imported.has_human_backing,
        "updated_at": now,
    }
