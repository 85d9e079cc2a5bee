"""Recall: memories that answer a question, episodes when none does, and what hooks inject.
No language model is asked; the index answers (:mod:`mnemo.index`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from mnemo.api.code import CodeCheckRequest, CodeCheckResult, CodeFlagged, CodeReading
from mnemo.api.recall import (
    EpisodeHit,
    EpisodesResult,
    MemoryHit,
    RecallEpisodeRequest,
    RecallRequest,
    RecallResult,
)
from mnemo.code import git
from mnemo.daemon.code_checks import CHECK_DEADLINE_S, CodeChecks
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.recording import Recording
from mnemo.daemon.storecalls import StoreCalls
from mnemo.distill.newest import LED_AT_MOST, earlier_note, newest_first
from mnemo.errors import NotFoundError
from mnemo.index.documents import Question, Ranked
from mnemo.memories import Memory
from mnemo.usage.suppression import leads_clearly
from mnemo.vocabulary import MemoryStatus
from mnemo.workspace import repo_root, workspace_namespace


@dataclass(frozen=True, slots=True)
class Related:
    """What the hooks may inject for a text, best first, and the one that leads clearly ("")."""

    memories: list[Memory]
    leader: str


class Recall:
    def __init__(self, calls: StoreCalls, index: Indexing, recording: Recording) -> None:
        self._calls = calls
        self._index = index
        self._recording = recording
        self.code = CodeChecks()  # which memories' code changed: ranked behind, marked

    async def check_code(self, request: CodeCheckRequest, person: str) -> CodeCheckResult:
        """The workspace's and the person's active memories against the checkout's HEAD."""
        workspace = workspace_namespace(request.cwd)
        memories = await self._calls(self._calls.store.active_memories, [workspace, person], 100_000)
        result = await self.code.check(request.cwd, memories, wait_s=CHECK_DEADLINE_S + 1, settle=True)
        by_id = {m.id: m for m in memories}
        flagged = [
            CodeFlagged(
                memory=memory_id,
                what=by_id[memory_id].what,
                kind=flag.kind,
                stale=flag.stale,
                path=flag.path,
                new_path=flag.new_path,
                commits=list(flag.commits),
                missing=list(flag.missing),
                readings=[CodeReading(value=r.value, now=r.now, line=r.line) for r in flag.readings],
                note=flag.note(),
            )
            for memory_id, flag in (result.flags.items() if result else ())
        ]
        head = result.head if result is not None else None
        if head is None:  # nothing anchored, no checkout, or a check still going on: say which HEAD
            root = repo_root(Path(request.cwd))
            head = await anyio.to_thread.run_sync(git.head, root) if root is not None else None
        return CodeCheckResult(
            workspace=workspace,
            head=head,
            checked=sum(m.code is not None for m in memories) if result is not None else 0,
            complete=result.complete if result is not None else True,
            flagged=flagged,
        )

    async def recall(self, request: RecallRequest, statuses: Sequence[str] | None = None) -> RecallResult:
        """Memories that answer the question; episodes when no memory does. ``statuses``: among
        memories of those statuses instead, and never episodes (the memory browser's filter)."""
        await self._index.ready()
        engine = self._index.engine
        namespaces = [request.namespace] if request.namespace else None
        types = [t.value for t in request.types] if request.types else None

        def find() -> tuple[Question, list[Ranked]]:
            # One worker-thread hop for analysis, embedding and ranking: hooks wait on this.
            question = self._index.understand(request.query)
            found = engine.search_memories(
                question,
                namespaces=namespaces,
                types=types,
                force_history=request.include_history,
                limit=request.limit,
                statuses=statuses,
            )
            return question, found

        question, found = await anyio.to_thread.run_sync(find, limiter=self._index.question_limiter())
        if statuses is not None or any(engine.is_related(f) for f in found):
            hits = []
            for f in found:
                memory = engine.memory(f.owner)
                if memory is not None and (statuses is None or engine.is_related(f)):
                    flag = self.code.flag(memory.id)
                    weight = self.code.weight(memory.id)
                    explain = None
                    if request.explain:
                        explain = f.components | ({"stale_weight": weight} if flag is not None else {})
                    hits.append(
                        MemoryHit(
                            score=f.score * weight,
                            memory=memory,
                            explain=explain,
                            outdated=flag.note() if flag is not None else "",
                        )
                    )
            # Asked about history, a closed memory stands just before its closer: that order stays.
            if request.include_history:
                return RecallResult(memories=hits, episodes=[])
            if statuses is None and not question.analysis.is_history:
                hits = _with_closers(hits, engine.memory)
            return RecallResult(memories=_newest_first(_weighed(hits))[: request.limit], episodes=[])
        episodes = await self._search_episodes(question, namespaces, None, request.limit, request.explain)
        return RecallResult(memories=[], episodes=episodes)

    async def related_current(
        self, text: str, namespaces: list[str], limit: int, *, floor: float = 0.0
    ) -> Related:
        """Current memories in ``namespaces`` that answer ``text``, best first (a possibly stale
        one weighed down as recall weighs it): what the hooks inject. A closed memory the text
        finds stands for the current one that closed it, never for itself. With ``floor``, only
        those scoring at least that share of the best one's score, and the newest value of any
        of them (:mod:`mnemo.distill.newest`). Empty while the start-up index is being built (a
        hook does not wait for it). ``leader``: the first one's id when it leads the other hits
        clearly (:func:`mnemo.usage.suppression.leads_clearly`)."""
        if not self._index.is_built:
            return Related([], "")
        engine = self._index.engine

        def find() -> list[Ranked]:
            question = self._index.understand(text)
            return engine.search_memories(
                question, namespaces=namespaces, types=None, force_history=False, limit=limit
            )

        found = await anyio.to_thread.run_sync(find, limiter=self._index.question_limiter())
        scored: list[tuple[Memory, float]] = []
        placed: set[str] = set()  # each memory once, where it ranks best
        for f in found:
            memory = engine.memory(f.owner) if engine.is_related(f) else None
            if memory is not None and memory.status is MemoryStatus.CLOSED:
                memory = current_of(memory, engine.memory)  # what the text found, as it stands now
            if memory is not None and memory.status is MemoryStatus.ACTIVE and memory.id not in placed:
                placed.add(memory.id)
                scored.append((memory, f.score))
        kept = self.code.weighed(scored, lambda s: s[0].id, lambda s: s[1])
        best = max((score for _, score in kept), default=0.0)
        passing = {m.id for m, score in kept if score >= floor * best}
        if len(passing) < len(kept):  # the newest value of a thing goes with any earlier one kept
            _, newest = newest_first([m for m, _ in kept][:LED_AT_MOST])
            passing |= {newest[i].id for i in list(passing) if i in newest}
        # The lead is over every hit, related or not: a question whose one related memory scores
        # three times the next hit asks for it; one that finds a single memory at all, maybe not.
        scores = sorted((f.score for f in found), reverse=True)
        first = max(kept, key=lambda s: s[1], default=None)
        leader = first[0].id if first is not None and leads_clearly(scores) and first[1] >= scores[0] else ""
        return Related([m for m, _ in kept if m.id in passing], leader)

    async def recall_episodes(self, request: RecallEpisodeRequest) -> EpisodesResult:
        await self._recording.journal_flushed()
        store = self._calls.store
        if request.id is not None:
            found = await self._calls(store.get_episodes, [request.id])
            if not found:
                raise NotFoundError(f"no episode has the id {request.id!r}")
            return EpisodesResult(episodes=[EpisodeHit(score=1.0, episode=e) for e in found])
        if request.memory is not None:
            memory = await self._calls(store.get_memory, request.memory)
            if memory is None:
                raise NotFoundError(f"no memory has the id {request.memory!r}")
            found = await self._calls(store.get_episodes, memory.sources[: request.limit])
            return EpisodesResult(episodes=[EpisodeHit(score=1.0, episode=e) for e in found])
        if request.query is not None:
            await self._index.ready()
            namespaces = [request.namespace] if request.namespace else None
            sessions = [request.session] if request.session else None
            question = await anyio.to_thread.run_sync(
                self._index.understand, request.query, limiter=self._index.question_limiter()
            )
            hits = await self._search_episodes(question, namespaces, sessions, request.limit, False)
            return EpisodesResult(episodes=hits)
        assert request.session is not None
        session = request.session
        found = await self._calls(
            lambda: store.session_episodes(
                session,
                from_turn=request.from_turn,
                to_turn=request.to_turn,
                namespace=request.namespace,
                limit=request.limit,
            )
        )
        return EpisodesResult(episodes=[EpisodeHit(score=1.0, episode=e) for e in found])

    async def _search_episodes(
        self,
        question: Question,
        namespaces: list[str] | None,
        sessions: list[str] | None,
        limit: int,
        explain: bool,
    ) -> list[EpisodeHit]:
        engine = self._index.engine
        found = await anyio.to_thread.run_sync(
            lambda: engine.search_episodes(question, namespaces=namespaces, sessions=sessions, limit=limit)
        )
        if not found:
            return []
        episodes = {
            e.id: e for e in await self._calls(self._calls.store.get_episodes, [f.owner for f in found])
        }
        return [
            EpisodeHit(score=f.score, episode=episodes[f.owner], explain=f.components if explain else None)
            for f in found
            if f.owner in episodes
        ]


def _with_closers(hits: list[MemoryHit], memory: Callable[[str], Memory | None]) -> list[MemoryHit]:
    """``hits`` with the current memory that closed each closed one, where the question did not
    find it: "What's the staging cluster called?" finds "… is called stg-east" (closed) and not
    "stg-east is now called preprod-east", which answers it now. The closer is ranked as the
    closed one was (it took its place) and said to be what replaced it."""
    found = {h.memory.id for h in hits}
    added: list[MemoryHit] = []
    for hit in hits:
        if hit.memory.status is not MemoryStatus.CLOSED:
            continue
        closer = current_of(hit.memory, memory)
        if closer is not None and closer.id not in found:
            found.add(closer.id)
            added.append(MemoryHit(score=hit.score, memory=closer, replaces=hit.memory.id))
    return added + hits if added else hits


def current_of(closed: Memory, memory: Callable[[str], Memory | None]) -> Memory | None:
    """The current memory that closed ``closed``, through a chain of closes (Tuesday → Thursday →
    back to Tuesday); None when the chain ends in no current memory."""
    closer, seen = closed, {closed.id}
    while closer.status is MemoryStatus.CLOSED and closer.closed_by and closer.closed_by not in seen:
        seen.add(closer.closed_by)
        later = memory(closer.closed_by)
        if later is None:
            return None
        closer = later
    return closer if closer.status is MemoryStatus.ACTIVE else None


def _newest_first(hits: list[MemoryHit]) -> list[MemoryHit]:
    """``hits`` with each group of current memories that state one thing at different values led
    by its newest, the others marked earlier (:mod:`mnemo.distill.frames`): until a close is
    written, the newest word comes first."""
    at = [i for i, h in enumerate(hits) if h.memory.status is MemoryStatus.ACTIVE]
    ordered, newest = newest_first([hits[i].memory for i in at])
    if not newest:
        return hits
    by_id = {hits[i].memory.id: hits[i] for i in at}
    out = list(hits)
    for i, memory in zip(at, ordered, strict=True):
        hit = by_id[memory.id]
        if memory.id in newest:
            hit = hit.model_copy(update={"earlier": earlier_note(memory, newest[memory.id])})
        out[i] = hit
    return out


def _weighed(hits: list[MemoryHit]) -> list[MemoryHit]:
    """``hits`` ordered by their weighed scores within each run of one status: closed memories
    keep their place behind current ones (or beside their closer, asked about history)."""
    out: list[MemoryHit] = []
    run: list[MemoryHit] = []
    for hit in hits:
        if run and hit.memory.status is not run[-1].memory.status:
            out += sorted(run, key=lambda h: h.score, reverse=True)
            run = []
        run.append(hit)
    return out + sorted(run, key=lambda h: h.score, reverse=True)
