"""Explicit memory writes: remember (with a note episode as its source) and forget.

Every write reaches the index when the call returns; what could carry a credential or break
out of the injected memory frame is refused first.
"""

from __future__ import annotations

import logging

import anyio.to_thread

from mnemo.clock import utc_now
from mnemo.code.anchors import anchor
from mnemo.config import Settings
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.recording import Recording
from mnemo.daemon.storecalls import StoreCalls
from mnemo.distill.newest import replaced_by
from mnemo.distill.versions import closed
from mnemo.episodes import EpisodeIn, EpisodeKind, Role, new_id
from mnemo.errors import NotFoundError, NotReadyError
from mnemo.index.entities import entity_key
from mnemo.injected import refuse_unfit
from mnemo.memories import EntityRef, Memory, Origin, RememberRequest, forgotten
from mnemo.secrets import refuse_unkeepable
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)


class Remembering:
    def __init__(self, calls: StoreCalls, index: Indexing, recording: Recording, settings: Settings) -> None:
        self._calls = calls
        self._index = index
        self._recording = recording
        self._settings = settings

    async def remember(self, request: RememberRequest, *, manual: bool = False) -> Memory:
        """Store an explicit memory, with a note episode holding its text as its source. Refuses
        (SecretError) content holding a credential. ``manual``: a person typed it (the review
        page), so a person backs it."""
        for name in ("content", "what", "who", "when", "where", "why", "how"):
            refuse_unfit(getattr(request, name), name)
            refuse_unkeepable(getattr(request, name), name)
        for entity in request.entities:
            refuse_unfit(" ".join([entity.name, entity.role, *entity.aliases]), "entities")
            refuse_unkeepable(" ".join([entity.name, *entity.aliases]), "entities")
        namespace = request.namespace or self._settings.namespace_of_person
        note = self._recording.intake.accept(
            EpisodeIn(
                kind=EpisodeKind.NOTE,
                text=request.content,
                who="review page" if manual else "remember",
                role=Role.USER if manual else Role.ASSISTANT,
                session=request.session,
                namespace=namespace,
            )
        )
        await self._recording.writer.submit([note])
        texts = [request.content, request.what, request.where, request.how, request.why]
        code = await anyio.to_thread.run_sync(anchor, request.cwd, texts) if request.cwd else None
        now = utc_now()
        memory = Memory(
            id=new_id("mem_"),
            version=1,
            type=request.type,
            status=MemoryStatus.ACTIVE,
            namespace=namespace,
            content=request.content,
            what=request.what or request.content,
            who=request.who,
            when=request.when,
            where=request.where,
            why=request.why,
            how=request.how,
            entities=[EntityRef(name=e.name, role=e.role) for e in request.entities],
            sources=[note.id],
            origin=Origin.MANUAL if manual else Origin.EXPLICIT,
            has_human_backing=manual,
            created_at=now,
            updated_at=now,
            valid_from=now,
            code=code,
        )
        entities = [(entity_key(e.name), e.name, list(e.aliases)) for e in request.entities]
        await self._calls(self._calls.store.upsert_entities, entities)
        await self._calls(self._calls.store.put_memory, memory)
        await self._index.add_memory(memory, entities)
        try:  # the older memories are found by the index: it must hold the store's first
            await self._index.ready()
        except NotReadyError:
            logger.warning(
                "memory %s stored; what it replaces is left to the audit: index not built", memory.id
            )
            return memory
        await anyio.to_thread.run_sync(self._close_replaced, memory)
        return memory

    def _close_replaced(self, memory: Memory) -> None:
        """Close the current memories of its namespace that ``memory`` replaces by the rules
        (:mod:`mnemo.distill.frames`): the newest word wins, with no model."""
        store, engine = self._calls.store, self._index.engine
        names = [e.name for e in memory.entities]
        nearby = engine.judge_candidates(memory.content, names, memory.namespace, None)
        current = [m for m in map(engine.memory, nearby) if m is not None]
        with store.versions_lock:  # as forget and review do: read, write and index together
            for old, why in replaced_by(memory, current, [memory.content]):
                stored = store.get_memory(old.id)
                if stored is None or stored.version != old.version:
                    continue  # changed meanwhile: theirs stands
                updated = closed(stored, memory, utc_now(), f"replaced by {memory.id}, by rule: {why}")
                store.put_memory(updated)
                engine.set_memory_status(updated)

    async def forget(self, memory_id: str, reason: str) -> Memory:
        """Mark a memory forgotten (kept in the store; recall no longer returns it)."""
        refuse_unkeepable(reason, "reason")
        store, engine = self._calls.store, self._index.engine

        def step() -> Memory:  # read, write and index under the versions lock (see reviewing.py)
            with store.versions_lock:
                memory = store.get_memory(memory_id)
                if memory is None:
                    raise NotFoundError(f"no memory has the id {memory_id!r}")
                if memory.status is MemoryStatus.FORGOTTEN:
                    return memory
                updated = forgotten(memory, reason)
                store.put_memory(updated)
                engine.set_memory_status(updated)
                return updated

        return await anyio.to_thread.run_sync(step)
