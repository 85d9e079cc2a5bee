"""Distillation of sessions into memories, batch by batch: a crash means redo, never loss or duplicates.

A batch is a pinned stretch of one session's episodes past its cursor, in arrival order (up to
``BATCH_EPISODES`` episodes or ``BATCH_CHARS`` characters). Its life:

1. recorded as *started*, with its first and last episode, before any model call;
2. extraction (:mod:`mnemo.distill.extract`), then for each proposal the judge
   (:mod:`mnemo.distill.judge`) against up to 8 current memories near it;
3. the judge log rows, then every memory row the batch writes (new, closed, merged) in **one
   insert**, each row marked with the batch id: the commit;
4. recorded as *done*; the session's cursor is the end of its last finished batch.

A :class:`~mnemo.distill.lease.WriterLease` is renewed before each memory (and by a heartbeat),
checked before step 3 and fences its commit in the store: a writer that lost it writes nothing.

The extraction is kept in the batch row before the judge runs: a batch redone after a spent token
cap or a stop judges the same drafts without asking again; a small cap makes batches smaller.

A writer stopped anywhere redoes its *started* batches first: one whose rows are in the store is
only marked done; one whose rows are not is redone over the same episodes. An extraction the model
keeps getting wrong marks the batch *failed* (shown by `mnemo status`; its episodes stay searchable),
and the cursor moves on; a model endpoint down or a spent cap leaves it *started* for the next try.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from mnemo.clock import utc_now
from mnemo.distill.at_once import JudgementError
from mnemo.distill.decide import DecisionModel
from mnemo.distill.durable import Durability
from mnemo.distill.extract import (
    Draft,
    ExtractionError,
    drafts_from_json,
    drafts_json,
    extract,
    extraction_stretches,
    worth_extracting,
)
from mnemo.distill.gate import anchored, dropped_row, screen
from mnemo.distill.judge import THRESHOLD, Action, judge, judge_log_row
from mnemo.distill.lease import LeaseLostError, WriterLease
from mnemo.distill.llm import ChatModel
from mnemo.distill.newest import replaced_by, with_rules
from mnemo.distill.policy import Approval, is_tool_only
from mnemo.distill.rails import look_again, states_something
from mnemo.distill.repeats import fold_repeats, repeat_reason, settled_restatements
from mnemo.distill.shown import answered, transcript
from mnemo.distill.versions import closed, confidence, is_current, is_open, new_memory
from mnemo.embed import Embedder
from mnemo.episodes import Episode, Role
from mnemo.errors import ModelRefusedError, ModelTimeoutError
from mnemo.index.documents import Vector, memory_document
from mnemo.index.entities import entity_key
from mnemo.index.live import RecallEngine
from mnemo.memories import Memory
from mnemo.store import Store
from mnemo.store.distill import Batch, BatchStatus, JudgeLogRow
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
BATCH_EPISODES = 200
BATCH_CHARS = 40_000
MAX_TIMEOUTS = 3  # a batch whose model calls time out this often in a row fails


def in_order(episodes: Sequence[Episode]) -> list[Episode]:
    """A batch's episodes as the conversation went: by turn, then time."""
    return sorted(episodes, key=lambda e: (e.turn if e.turn is not None else -1, e.time, e.id))


def batch_chars(daily_token_cap: int) -> int:
    """How much of a session one batch takes: BATCH_CHARS, less under a small daily token cap, so
    that a batch's extraction (about 4 characters a token, plus the reply and the judge's
    questions) fits in one day's budget rather than never finishing."""
    if daily_token_cap <= 0:
        return BATCH_CHARS
    return max(2_000, min(BATCH_CHARS, daily_token_cap))


@dataclass
class BatchResult:
    batch: Batch
    added: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    episodes_only: int = 0
    dropped: int = 0  # drafts that are no memory (mnemo.distill.gate), or repeat another of the batch
    demoted: int = 0
    was_applied_before: bool = False
    quiet: bool = False  # the light pass found nothing durable: no extraction


class Distiller:
    """Runs batches against one store and one recall engine. Not thread-safe: one writer."""

    def __init__(
        self,
        store: Store,
        engine: RecallEngine,
        llm: ChatModel,
        decisions: DecisionModel,
        clock: Callable[[], datetime] = utc_now,
        lease: WriterLease | None = None,
        approval: Approval | None = None,
        batch_chars: int = BATCH_CHARS,
        light_pass: bool = False,
    ) -> None:
        self._store = store
        self._batch_chars = batch_chars
        self._approval = approval or Approval()
        self._engine = engine
        self._llm = llm
        self._decisions = decisions
        self._light_pass = light_pass
        self._embedder: Embedder | None = engine.embedder
        # A small model's rail: what is durable, by the classifier over the embedder's vectors.
        self._durability = Durability.for_embedder(self._embedder) if decisions.steps is not None else None
        self._clock = clock
        self._lease = lease
        self._commit = store.put_memories if lease is None else lease.commit  # fenced by the store
        self._timeouts: dict[str, int] = {}  # session → its batch's model calls timed out in a row

    def recover(self) -> list[BatchResult]:
        """Finish or redo the batches a stopped writer left started."""
        return [self._run(batch) for batch in self._store.started_batches()]

    def distil_session(self, session: str, *, again: bool = False) -> list[BatchResult]:
        """Every batch of ``session`` past its cursor, until none is left. ``again``: every batch
        from its first episode, as new batches (a better model's reading of a session distilled
        before): their memories are judged against what the store holds, so what they say again
        merges and only what they replace is closed; the session's cursor stays where it was."""
        results = []
        anew = f"again {self._clock().isoformat()}" if again else ""
        after = None if again else self._store.session_cursor(session)
        while (batch := self._next_batch(session, after, anew)) is not None:
            results.append(self._run(batch))
            after = batch.end if again else self._store.session_cursor(session)
        return results

    def _next_batch(self, session: str, after: tuple[datetime, str] | None, anew: str) -> Batch | None:
        episodes = self._store.episodes_after(session, after, BATCH_EPISODES)
        chars, taken = 0, 0
        for episode in episodes:
            chars += len(episode.text)
            if taken and chars > self._batch_chars:
                break
            taken += 1
        if not taken:
            return None
        first, last = episodes[0], episodes[taken - 1]
        key = f"{session}\0{first.id}\0{last.id}" + (f"\0{anew}" if anew else "")
        batch = Batch(
            id="batch_" + hashlib.sha256(key.encode()).hexdigest()[:24],
            session=session,
            namespace=first.namespace,
            first_received=first.received_at,
            first_episode=first.id,
            last_received=last.received_at,
            last_episode=last.id,
            episodes=taken,
            status="started",
        )
        self._store.put_batch(batch, self._clock())
        return batch

    def _run(self, batch: Batch) -> BatchResult:
        if self._store.batch_applied(batch.id):
            logger.info("batch %s was applied before the writer stopped; marking it done", batch.id)
            self._finish(batch, "done")
            return BatchResult(batch, was_applied_before=True)
        episodes = self._store.episodes_between(
            batch.session,
            (batch.first_received, batch.first_episode),
            (batch.last_received, batch.last_episode),
        )
        conversation = in_order(episodes)
        drafts = drafts_from_json(batch.extraction, batch.id) if batch.extraction else None
        try:
            if drafts is None:
                drafts = self._extract(batch, answered(conversation))
                if drafts is None:
                    self._finish(batch, "done")
                    return BatchResult(batch, quiet=True)
                # Kept before judging: a batch redone (a spent cap, a stop) does not extract twice.
                batch = replace(batch, extraction=drafts_json(drafts))
                self._store.put_batch(batch, self._clock())
            return self._judge(batch, episodes, drafts)
        except (ExtractionError, JudgementError, ModelRefusedError) as exc:
            # Asking the same again fails the same way: the batch fails with its reason (its
            # episodes stay searchable) and the writer moves on.
            logger.warning("distilling session %s failed: %s", batch.session, exc)
            self._finish(batch, "failed", error=str(exc))
            return BatchResult(batch)
        except ModelTimeoutError as exc:
            # By session: a live session's batch takes a new id as it grows.
            self._timeouts[batch.session] = timeouts = self._timeouts.get(batch.session, 0) + 1
            if timeouts < MAX_TIMEOUTS:
                raise  # the loop backs off and redoes it: the server may have been busy
            logger.warning("distilling session %s failed: %s", batch.session, exc)
            self._finish(batch, "failed", error=f"{exc} ({timeouts} times)")
            return BatchResult(batch)

    def _extract(self, batch: Batch, conversation: list[Episode]) -> list[Draft] | None:
        """The drafts of the stretches worth reading, None when none is."""
        small = self._decisions.steps is not None
        chosen = []
        for stretch in extraction_stretches(self._llm, conversation):
            if small and not states_something(stretch, self._durability):
                # A small model's rail: its extraction turns plain commands into memories ("commit
                # the changes"), and it cannot tell them apart when asked; a rule can, for no call.
                logger.info("batch %s: the person only gave plain commands in a stretch", batch.id)
                continue
            if self._light_pass and worth_extracting(self._llm, stretch) < 1 - THRESHOLD:
                # The light pass: a quiet stretch (test runs, small edits) costs one closed question.
                logger.info("batch %s: nothing durable by the light pass in a stretch", batch.id)
                continue
            chosen.append(stretch)
        if not chosen:
            return None
        drafts = [draft for stretch in chosen for draft in extract(self._llm, stretch)]
        if small:  # a small model's rail
            drafts = look_again(self._llm, conversation, drafts, self._durability)
        return drafts

    def _judge(self, batch: Batch, episodes: list[Episode], drafts: list[Draft]) -> BatchResult:
        """Each draft judged against the open memories near it, then the batch's commit."""
        result = BatchResult(batch)
        by_id = {e.id: e for e in episodes}
        pending: dict[str, Memory] = {}  # id → the version this batch will write

        def latest(memory_id: str) -> Memory | None:
            """The version this batch will write, else the indexed one."""
            return pending.get(memory_id) or self._engine.memory(memory_id)

        log: list[JudgeLogRow] = []
        vectors: dict[str, Vector] = {}
        now = self._clock()
        conversation = in_order(episodes)
        drafts, repeated = fold_repeats([anchored(d, conversation) for d in drafts])
        skipped = {seq: repeat_reason(earlier) for seq, earlier in repeated.items()}
        skipped |= settled_restatements(drafts, self._store.memories_citing(batch.namespace, list(by_id)))
        for seq, draft in enumerate(drafts):
            self._renew()
            memory = new_memory(batch, seq, draft, by_id, now)
            cited = [by_id[s] for s in draft.memory.sources]
            what = draft.memory
            screening = screen(what.what, what.type, cited, self._durability)
            if seq in skipped or not screening.keeps:
                # Not a memory (mnemo.distill.gate): it stays in the episodes; the log says why.
                reason = skipped.get(seq) or screening.reason
                log.append(
                    dropped_row(batch.id, seq, batch.session, batch.namespace, memory.id, draft, reason, now)
                )
                result.dropped += 1
                continue
            vector = None
            if self._embedder is not None:
                vector = self._embedder.embed_documents([memory_document(memory).text])[0]
            ids = self._engine.judge_candidates(
                memory.content, [e.name for e in memory.entities], batch.namespace, vector
            )
            found = (latest(i) for i in ids)
            # Candidates too: an equivalent one folds into it and counts as seen again.
            candidates = [m for m in found if m is not None and is_open(m)]
            # The judge picks the fragments of a long source itself (SOURCE_CHARS).
            source = transcript([by_id[s] for s in draft.memory.sources], tool_chars=4_000)
            # A model without log-probabilities answering unusably (JudgementError) fails the batch.
            verdict = judge(draft.memory, candidates, source, self._decisions, self._embedder)
            result.demoted += draft.demoted
            row = judge_log_row(batch.id, seq, batch.session, batch.namespace, memory.id, verdict, now)
            if verdict.action is Action.EPISODES_ONLY:
                log.append(row)
                result.episodes_only += 1
                continue
            # The newest word wins (mnemo.distill.frames): what a person's newer word replaces is
            # closed whatever the model read, and never merged into.
            said = [by_id[s].text for s in memory.sources if by_id[s].role is Role.USER]
            ruled = replaced_by(memory, candidates, said) if memory.has_human_backing else []
            log.append(with_rules(row, ruled))
            if verdict.action is Action.MERGE and verdict.merge_into not in {old.id for old, _ in ruled}:
                assert verdict.merge_into is not None
                target = latest(verdict.merge_into)
                if target is not None:
                    merged = pending[target.id] = self._merged(target, memory, now)
                    result.merged.append(target.id)
                    approved = target.status is MemoryStatus.CANDIDATE and is_current(merged)
                    replaced = latest(merged.replaces) if approved and merged.replaces else None
                    if replaced is not None and is_current(replaced):  # closed at its approval
                        reason = f"replaced by {merged.id}, {merged.status_reason}"
                        pending[replaced.id] = closed(replaced, merged, now, reason)
                        result.closed.append(replaced.id)
                continue
            memory = memory.model_copy(update={"why": verdict.memory.why, "confidence": confidence(verdict)})
            status, why = self._approval.status(
                memory,
                tool_only=is_tool_only(by_id[s].role for s in memory.sources),
                refused=draft.refused,
                unsure=screening.waits,
            )
            closing = {c.existing: c.closing for c in verdict.comparisons} | {old.id: 2.0 for old, _ in ruled}
            closed_ids = dict.fromkeys([*verdict.closes, *(old.id for old, _ in ruled)])
            closes = [old for old in map(latest, closed_ids) if old is not None and is_current(old)]
            if status is MemoryStatus.CANDIDATE and closes:
                # While it waits for a person the current memory stays current: approving it
                # closes the one it replaces (review's ``replaces``, auto-approval included; the
                # review queue shows it).
                replaced = max(closes, key=lambda m: closing.get(m.id, 0.0))  # the likeliest
                memory, closes = memory.model_copy(update={"replaces": replaced.id}), []
            memory = memory.model_copy(update={"status": status, "status_reason": why})
            pending[memory.id] = memory
            result.added.append(memory.id)
            if vector is not None:
                vectors[memory.id] = vector
            evidence = {o.id: f"by rule: {why}" for o, why in ruled}
            for old in closes:
                pending[old.id] = closed(old, memory, now, evidence.get(old.id, verdict.reason))
                result.closed.append(old.id)
        if self._lease is not None:
            self._lease.check()  # a writer that lost the lease stops before it writes
        with self._store.versions_lock:  # no review step or forget between the check and the commit
            rows = self._unmoved(list(pending.values()))
            if rows:
                entities = {entity_key(e.name): e.name for m in rows for e in m.entities}
                self._store.upsert_entities([(k, name, []) for k, name in entities.items()])
                self._commit(rows, batch=batch.id)
            # After the commit: a writer fenced out of it (LeaseLostError) leaves no judgement,
            # so the log tells the story of the commit that landed, the new holder's redo.
            self._store.put_judge_log(log)
            self._finish(batch, "done", memories=len(result.added))
            self._index(rows, vectors)
        return result

    def _unmoved(self, rows: list[Memory]) -> list[Memory]:
        """``rows`` without the new versions of memories that changed while the batch was judged
        (a person approved, rejected or edited one, or it was forgotten): theirs stands."""
        updates = [m for m in rows if m.version > 1]
        stored = self._store.current_versions([m.id for m in updates])
        moved = {m.id for m in updates if stored.get(m.id) != m.version - 1}
        for memory_id in sorted(moved):
            logger.info("memory %s changed while its batch was judged; the batch leaves it be", memory_id)
        return [m for m in rows if m.id not in moved]

    def _merged(self, target: Memory, new: Memory, now: datetime) -> Memory:
        """``target`` with ``new`` folded in: its sources added, seen once more; a candidate may
        reach review's auto-approval thresholds."""
        sources = list(dict.fromkeys([*target.sources, *new.sources]))
        merged = target.model_copy(
            update={
                "version": target.version + 1,
                "sources": sources,
                "updated_at": now,
                "seen_count": target.seen_count + 1,
                "has_human_backing": target.has_human_backing or new.has_human_backing,
            }
        )
        if target.status is not MemoryStatus.CANDIDATE:
            return merged
        # The candidate's own text stays what a person has to approve: only review's auto-approval
        # may activate it, and never when that text came from tool output alone.
        roles = (e.role for e in self._store.get_episodes(target.sources))
        status, why = self._approval.seen_again(merged, tool_only=is_tool_only(roles))
        return merged.model_copy(update={"status": status, "status_reason": why})

    def _renew(self) -> None:
        if self._lease is not None and not self._lease.acquire():
            raise LeaseLostError(f"another daemon took the writer lease from {self._lease.holder}")

    def _index(self, rows: Sequence[Memory], vectors: dict[str, Vector]) -> None:
        """Make the batch's rows recallable at once, with the new memories' vectors stored too."""
        if not rows:
            return
        new = [m for m in rows if m.version == 1]
        for changed in (m for m in rows if m.version > 1):  # closed or merged: same text, same vector
            self._engine.set_memory_status(changed)
        keys = list(vectors)
        matrix = np.stack([vectors[k] for k in keys]).astype(np.float32) if keys else None
        if self._embedder is not None and matrix is not None:
            self._store.put_embeddings(self._embedder.model_id, [(k, 0) for k in keys], matrix)
        self._engine.add_memories(new, embedded=set(keys))
        if matrix is not None:
            self._engine.memories.put_vectors(keys, matrix)

    def _finish(self, batch: Batch, status: BatchStatus, *, error: str = "", memories: int = 0) -> None:
        finished = replace(batch, status=status, error=error[:2_000], memories=memories)
        self._timeouts.pop(batch.session, None)
        self._store.put_batch(finished, self._clock())
