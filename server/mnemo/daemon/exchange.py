"""Export and import of memories: the pages ``mnemo export`` reads, and the records ``mnemo import
--memories`` brings back (the file: :mod:`mnemo.archive`).

An import keeps ids and is idempotent. A memory's versions in the file are compared with those the
store holds, version by version:

- none stored: every version is written (the newest is the memory as it stands);
- all the versions both hold are equal: the versions the store lacks are written (a newer one
  moves the memory on; older ones complete its history), none when it lacks none;
- a version both hold differs, or the store holds the memory with none of the file's versions:
  a conflict, reported; nothing of that memory is written.

Every text field (the six W, the reason, entities, the code anchor's paths and names) is checked as
a remembered one is (mnemo's own tags, control characters, private spans, credentials): a memory
that fails is refused, whole; so is one in another person's namespace. Entities are checked the
same way. Episodes keep their ids, are capped and redacted like any episode; one stored already
with another text is a conflict and stays as stored.
"""

from __future__ import annotations

import logging
import struct
from collections import defaultdict
from collections.abc import Sequence

import anyio
import anyio.to_thread

from mnemo.api.exchange import (
    EntityRecord,
    ExportedMemory,
    ExportNamespaces,
    ExportPage,
    ExportPageRequest,
    ImportedEpisode,
    ImportedMemory,
    ImportRequest,
    ImportResult,
    Outcome,
)
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.recording import Recording
from mnemo.daemon.storecalls import StoreCalls
from mnemo.episodes import Episode
from mnemo.index.entities import entity_key
from mnemo.memories import Memory
from mnemo.secrets import why_not_kept
from mnemo.store.history import StoredVersion

logger = logging.getLogger(__name__)
_CHECKED = ("content", "what", "who", "when", "where", "why", "how", "status_reason")


class Exchange:
    def __init__(
        self, calls: StoreCalls, index: Indexing, recording: Recording, max_episode_chars: int
    ) -> None:
        self._max_episode_chars = max_episode_chars
        self._calls = calls
        self._store = calls.store
        self._index = index
        self._recording = recording

    async def namespaces(self) -> ExportNamespaces:
        await self._recording.journal_flushed()
        memories = await self._calls(self._store.memory_namespaces)
        return ExportNamespaces(memories=memories, episodes=await self._calls(self._store.episode_namespaces))

    async def page(self, request: ExportPageRequest) -> ExportPage:
        """One page of a namespace's memories (with their entities) or episodes, in id order."""
        if request.what == "episodes":
            await self._recording.journal_flushed()
            read = self._store.episodes_page
            episodes = await self._calls(read, request.after, request.limit, request.namespace)
            last = episodes[-1].id if len(episodes) == request.limit else ""
            return ExportPage(episodes=episodes, next=last)
        current = await self._calls(
            self._store.memories_page, request.after, request.limit, request.namespace
        )
        versions = await self._calls(self._store.memory_versions, [m.id for m in current])
        if not request.history:
            newest = {(m.id, m.version) for m in current}
            versions = [v for v in versions if (v.memory.id, v.memory.version) in newest]
        keys = sorted({entity_key(e.name) for v in versions for e in v.memory.entities})
        entities = await self._calls(self._store.entities, keys)
        return ExportPage(
            memories=[_exported(v) for v in versions],
            entities=[EntityRecord(key=k, name=n, aliases=a) for k, n, a in entities],
            next=current[-1].id if len(current) == request.limit else "",
        )

    async def import_records(self, request: ImportRequest) -> ImportResult:
        """Write what the store lacks of the request's memories, entities and episodes."""
        memories = await anyio.to_thread.run_sync(self._import_memories, request.memories)
        entities, refused = await anyio.to_thread.run_sync(self._import_entities, request.entities)
        episodes = await self._import_episodes(request.episodes)
        if any(m.added for m in memories):
            self._index.wake_embedder()
        return ImportResult(memories=memories, entities=entities, entities_refused=refused, episodes=episodes)

    def _import_memories(self, records: Sequence[ExportedMemory]) -> list[ImportedMemory]:
        results: dict[str, ImportedMemory] = {}
        by_id: dict[str, dict[int, ExportedMemory]] = defaultdict(dict)
        for record in records:
            by_id[record.id][record.version] = record
        # Only what could be written is checked: a version stored already as it is (a second
        # import) was checked when it was written.
        known = self._versions(list(by_id))
        for memory_id, versions in list(by_id.items()):
            fresh = (r for n, r in versions.items() if not _is_stored(r, known[memory_id].get(n)))
            refusal = next((why for record in fresh if (why := self._refusal(record))), "")
            if refusal:
                results[memory_id] = ImportedMemory(id=memory_id, outcome="refused", message=refusal)
                del by_id[memory_id]
        with self._store.versions_lock:  # no writer commit, review step or forget in between
            stored = self._versions(list(by_id))
            writes: dict[str, list[Memory]] = defaultdict(list)
            newest: list[Memory] = []
            for memory_id, versions in by_id.items():
                result = _compared(memory_id, versions, stored[memory_id])
                results[memory_id] = result
                for number in result.added:
                    writes[versions[number].batch].append(versions[number].stored())
                if result.added and max(result.added) > max(stored[memory_id], default=0):
                    newest.append(versions[max(result.added)].stored())
            for batch, rows in sorted(writes.items()):
                self._store.put_memories(rows, batch=batch)
            if newest:
                self._index.engine.add_memories(newest)
        added = sum(len(r.added) for r in results.values())
        if added:
            logger.info("import: %d memory versions written", added)
        return [results[r] for r in dict.fromkeys(r.id for r in records)]

    def _versions(self, memory_ids: list[str]) -> dict[str, dict[int, Memory]]:
        """Each memory's stored versions, by number."""
        stored: dict[str, dict[int, Memory]] = defaultdict(dict)
        for version in self._store.memory_versions(memory_ids):
            stored[version.memory.id][version.memory.version] = version.memory
        return stored

    def _refusal(self, record: ExportedMemory) -> str:
        """Why ``record`` may not be stored ('' when it may)."""
        texts = [(name, getattr(record, name)) for name in _CHECKED]
        texts += [("entities", f"{e.name} {e.role}") for e in record.entities]
        if record.code is not None:
            texts += [("code", " ".join([f.path, *f.symbols, *f.values])) for f in record.code.files]
        why = why_not_kept(texts)
        return f"version {record.version}: {why}" if why else self._not_yours(record.namespace)

    def _not_yours(self, namespace: str) -> str:
        """Why ``namespace`` is not this person's to write ('' when it is)."""
        person = self._store.person
        if person is not None and namespace.startswith("person:") and namespace != f"person:{person}":
            return f"namespace {namespace} is another person's (you are person:{person})"
        return ""

    def _import_entities(self, records: Sequence[EntityRecord]) -> tuple[int, list[str]]:
        """How many entities gained a name or an alias, and each one refused with why."""
        refused: list[str] = []
        wanted: dict[str, tuple[str, list[str]]] = {}
        for record in records:
            why = why_not_kept(("entity", text) for text in (record.name, *record.aliases))
            if why:
                refused.append(f"entity {record.key}: {why}")
                continue
            wanted[entity_key(record.name)] = (record.name, sorted(set(record.aliases)))
        if not wanted:
            return 0, refused
        known = {key: set(aliases) for key, _, aliases in self._store.entities(list(wanted))}
        changed = [k for k, (_, aliases) in wanted.items() if k not in known or not set(aliases) <= known[k]]
        entries = [(key, name, aliases) for key, (name, aliases) in wanted.items()]
        self._store.upsert_entities(entries)
        self._index.engine.add_entities(entries)
        return len(changed), refused

    async def _import_episodes(self, records: Sequence[Episode]) -> list[ImportedEpisode]:
        if not records:
            return []
        refused = {e.id: why for e in records if (why := self._episode_refusal(e))}
        redact = self._recording.redact
        redacted = await anyio.to_thread.run_sync(
            lambda: [e.model_copy(update={"text": redact(e.text)}) for e in records if e.id not in refused]
        )
        results = iter(await self._recording.writer.submit(redacted) if redacted else [])
        done = []
        for episode in records:
            if episode.id in refused:
                done.append(ImportedEpisode(id=episode.id, outcome="refused", message=refused[episode.id]))
                continue
            result = next(results)
            outcome: Outcome = "added" if result.is_new else "conflict" if result.is_changed else "present"
            message = "stored already with another text; kept as stored" if result.is_changed else ""
            done.append(ImportedEpisode(id=episode.id, outcome=outcome, message=message))
        return done

    def _episode_refusal(self, episode: Episode) -> str:
        """Why ``episode`` may not be stored ('' when it may)."""
        if len(episode.text) > self._max_episode_chars:
            return f"its text has {len(episode.text):,} characters; the cap is {self._max_episode_chars:,}"
        return self._not_yours(episode.namespace)


def _exported(version: StoredVersion) -> ExportedMemory:
    return ExportedMemory.model_validate({**version.memory.model_dump(), "batch": version.batch})


def _compared(
    memory_id: str, versions: dict[int, ExportedMemory], stored: dict[int, Memory]
) -> ImportedMemory:
    """What to write of a memory's ``versions`` given the ones the store holds (see the module)."""
    shared = sorted(set(versions) & set(stored))
    if stored and not shared:
        return ImportedMemory(
            id=memory_id,
            outcome="conflict",
            message=f"the store holds this memory at version {max(stored)}, the file at "
            f"{', '.join(map(str, sorted(versions)))}: not the same history; left as stored",
        )
    for number in shared:
        if not _is_stored(versions[number], stored[number]):
            return ImportedMemory(
                id=memory_id,
                outcome="conflict",
                message=f"version {number} is stored with other content; left as stored",
            )
    missing = sorted(set(versions) - set(stored))
    return ImportedMemory(id=memory_id, outcome="added" if missing else "present", added=missing)


def _is_stored(record: ExportedMemory, stored: Memory | None) -> bool:
    """Whether ``stored`` is ``record``'s version as the store keeps it."""
    return stored is not None and _comparable(stored) == _comparable(record.stored())


def _comparable(memory: Memory) -> dict[str, object]:
    """``memory``'s fields as the store keeps them (its confidence a 32-bit float)."""
    fields = memory.model_dump()
    fields["confidence"] = struct.unpack("f", struct.pack("f", memory.confidence))[0]
    return fields
