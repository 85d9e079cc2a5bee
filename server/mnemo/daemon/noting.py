"""Entries of the files people keep made candidates (``mnemo import --from claude-md`` …; the files
are read by the client, :mod:`mnemo.importing.notes`).

Each entry goes through the checks a remembered memory does (mnemo's own tags, control
characters, private spans, credentials): one that fails is refused, with its line, and nothing of
it is stored. The others become:

- a note episode (id from the namespace and the entry's text, so the same line imported twice, or
  found in CLAUDE.md and AGENTS.md both, is one episode; session ``import:<source>:<file>``, turn
  the line) — the memory's source, opened in context on the memory's page;
- a candidate (id from the episode's), origin ``imported``, backed by a person when a person wrote
  the file; a decision no person backs is kept as a fact. It waits in the review queue.

With a model, the writer then judges the new candidates against what mnemo knows
(:mod:`mnemo.distill.imported`). An entry whose candidate exists already is ``present``: a second
import adds nothing.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime
from pathlib import Path

from mnemo.api.notes import NoteEntry, NoteOutcome, NotesImportRequest, NotesImportResult
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.distilling import DistillLoop
from mnemo.daemon.indexing import Indexing
from mnemo.daemon.recording import Recording
from mnemo.daemon.storecalls import StoreCalls
from mnemo.distill.imported import IMPORT_SESSION
from mnemo.episodes import EpisodeIn, EpisodeKind, Role
from mnemo.memories import Memory, Origin
from mnemo.secrets import why_not_kept
from mnemo.vocabulary import MemoryStatus, MemoryType

logger = logging.getLogger(__name__)
AUTHORS = {"claude-auto-memory": "claude", "codex-memories": "codex"}


class Notes:
    def __init__(
        self,
        calls: StoreCalls,
        index: Indexing,
        recording: Recording,
        distilling: DistillLoop,
        settings: Settings,
    ) -> None:
        self._calls = calls
        self._index = index
        self._recording = recording
        self._distilling = distilling
        self._settings = settings

    async def import_notes(self, request: NotesImportRequest) -> NotesImportResult:
        is_judged = self._distilling.imports is not None
        results: dict[int, NoteOutcome] = {}
        wanted: dict[int, tuple[NoteEntry, EpisodeIn]] = {}
        first_of: dict[str, int] = {}  # episode id → the request's first entry with that text
        for at, entry in enumerate(request.entries):
            refusal = why_not_kept((name, getattr(entry, name)) for name in ("text", "why", "how"))
            if refusal:
                results[at] = NoteOutcome(
                    path=entry.path, line=entry.line, outcome="refused", message=refusal
                )
                continue
            episode = self._episode(request, entry)
            assert episode.id is not None
            if episode.id in first_of:
                same = request.entries[first_of[episode.id]]
                results[at] = NoteOutcome(
                    path=entry.path,
                    line=entry.line,
                    outcome="present",
                    memory=_memory_id(episode.id),
                    message=f"the same as {same.path}:{same.line}",
                )
                continue
            first_of[episode.id] = at
            wanted[at] = (entry, episode)
        stored = await self._recording.append([episode for _, episode in wanted.values()])
        failed = {r.id: r.error for r in stored if r.error}
        ids = {at: _memory_id(str(episode.id)) for at, (_, episode) in wanted.items()}
        store = self._calls.store
        made: list[Memory] = []

        def write() -> None:
            # The check and the write as one step: two imports of one file at once write each
            # candidate once.
            now = utc_now()
            with store.versions_lock:
                existing = store.current_versions(list(ids.values()))
                for at, (entry, episode) in wanted.items():
                    if episode.id in failed:
                        message = str(failed[episode.id])
                        results[at] = NoteOutcome(
                            path=entry.path, line=entry.line, outcome="refused", message=message
                        )
                    elif ids[at] in existing:
                        results[at] = NoteOutcome(
                            path=entry.path, line=entry.line, outcome="present", memory=ids[at]
                        )
                    else:
                        made.append(self._candidate(request, entry, str(episode.id), ids[at], is_judged, now))
                        results[at] = NoteOutcome(
                            path=entry.path, line=entry.line, outcome="new", memory=ids[at]
                        )
                if made:
                    store.put_memories(made)
                    self._index.engine.add_memories(made)

        await self._calls(write)
        if made:
            self._index.wake_embedder()
            logger.info("imported %d candidates from %s", len(made), request.source)
        judging = self._distilling.judge_imported(request.source, [m.id for m in made])
        return NotesImportResult(
            results=[results[at] for at in sorted(results)],
            judging=judging,
            session=IMPORT_SESSION.format(source=request.source),
        )

    def _episode(self, request: NotesImportRequest, entry: NoteEntry) -> EpisodeIn:
        text = "\n".join(
            [
                entry.text,
                *([f"Why: {entry.why}"] if entry.why else []),
                *([f"How: {entry.how}"] if entry.how else []),
            ]
        )
        key = f"{entry.namespace}\0{' '.join(text.lower().split())}"
        session = f"import:{request.source}:{entry.path}"
        if len(session) > 500:
            session = f"import:{request.source}:{hashlib.sha256(entry.path.encode()).hexdigest()[:32]}"
        return EpisodeIn(
            id="ep_note_" + hashlib.sha256(key.encode()).hexdigest()[:24],
            kind=EpisodeKind.NOTE,
            text=text,
            who=self._settings.person if request.person_written else AUTHORS.get(request.source, "model"),
            role=Role.USER if request.person_written else Role.ASSISTANT,
            session=session,
            turn=entry.line,
            namespace=entry.namespace,
            client=f"import:{request.source}",
            cwd=str(Path(entry.path).parent),
        )

    def _candidate(
        self,
        request: NotesImportRequest,
        entry: NoteEntry,
        episode_id: str,
        memory_id: str,
        is_judged: bool,
        now: datetime,
    ) -> Memory:
        kind = entry.type
        if kind is MemoryType.DECISION and not request.person_written:
            kind = MemoryType.FACT  # a decision no person backs is kept as a fact
        shown = _shown_path(entry.path)
        waits = "waits for a person" if is_judged else "waits for a person (not judged: no language model)"
        return Memory(
            id=memory_id,
            version=1,
            type=kind,
            status=MemoryStatus.CANDIDATE,
            namespace=entry.namespace,
            content=entry.text,
            what=entry.text,
            who="",
            when="",
            where="",
            why=entry.why,
            how=entry.how,
            entities=[],
            sources=[episode_id],
            origin=Origin.IMPORTED,
            created_at=now,
            updated_at=now,
            valid_from=now,
            status_reason=f"imported from {shown}:{entry.line}; {waits}",
            has_human_backing=request.person_written,
        )


def _memory_id(episode_id: str) -> str:
    return "mem_note_" + hashlib.sha256(episode_id.encode()).hexdigest()[:24]


def _shown_path(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home + "/") else path
