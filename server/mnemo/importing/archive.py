"""``mnemo import --memories FILE``: an export (:mod:`mnemo.archive`, JSONL or Markdown) restored,
ids kept.

Records are validated here, one at a time, so that a bad one is reported by its line and the rest
go on; they travel in batches (a memory's versions always in the same one), and the daemon says
what became of each memory (:mod:`mnemo.daemon.exchange`): written, present already, a conflict
(another memory of that id is stored: left as stored), or refused (a credential, a private span,
mnemo's own tag). Importing the same file twice writes nothing the second time.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from mnemo.api.exchange import EntityRecord, ExportedEpisode, ExportedMemory, ImportRequest
from mnemo.archive import read_archive
from mnemo.client.typed import DaemonClient
from mnemo.errors import InputError
from mnemo.validation import describe_validation_error

BATCH_RECORDS = 500
_MODELS: dict[str, type[BaseModel]] = {
    "memory": ExportedMemory,
    "entity": EntityRecord,
    "episode": ExportedEpisode,
}


@dataclass(slots=True)
class ArchiveReport:
    memories: int = 0  # memories (ids) in the file
    versions_written: int = 0
    written: int = 0  # memories that gained a version
    present: int = 0
    entities: int = 0  # entities that gained a name or an alias
    episodes_new: int = 0
    episodes_present: int = 0
    problems: list[str] = field(default_factory=list)  # "LINE: what", conflicts, refusals, bad lines


async def restore(
    path: Path, client: DaemonClient, on_progress: Callable[[int, int], None] | None = None
) -> ArchiveReport:
    """Restore the export at ``path``; ``on_progress(bytes read, file size)`` as it goes."""
    report = ArchiveReport()
    size = path.stat().st_size
    pending: dict[str, list[Any]] = {"memories": [], "entities": [], "episodes": []}
    lines_of: dict[str, int] = {}  # a memory's or an episode's first line, for the report

    async def send() -> None:
        request = ImportRequest(**pending)
        for kind in pending:
            pending[kind] = []
        if not (request.memories or request.entities or request.episodes):
            return
        result = await client.import_records(request)
        for memory in result.memories:
            report.versions_written += len(memory.added)
            report.written += memory.outcome == "added"
            report.present += memory.outcome == "present"
            if memory.outcome in ("conflict", "refused"):
                report.problems.append(
                    f"{lines_of[memory.id]}: {memory.id}: {memory.outcome}: {memory.message}"
                )
        report.entities += result.entities
        report.problems += [f"entities: {why}" for why in result.entities_refused]
        for episode in result.episodes:
            report.episodes_new += episode.outcome == "added"
            report.episodes_present += episode.outcome == "present"
            if episode.outcome in ("conflict", "refused"):
                report.problems.append(f"{lines_of[episode.id]}: episode {episode.id}: {episode.message}")

    with path.open("rb") as handle:
        last_id = ""
        for number, record in read_archive(_text_lines(handle, size, on_progress), str(path)):
            kind = record.pop("record")
            if kind == "mnemo-export":
                continue
            try:
                item = _MODELS[kind].model_validate(record)
            except ValidationError as exc:
                report.problems.append(f"{number}: {describe_validation_error(exc)}")
                continue
            if isinstance(item, ExportedMemory):
                if item.id != last_id and len(pending["memories"]) >= BATCH_RECORDS:
                    await send()
                if item.id not in lines_of:
                    report.memories += 1
                lines_of.setdefault(item.id, number)
                last_id = item.id
                pending["memories"].append(item)
            else:
                if isinstance(item, ExportedEpisode):
                    lines_of.setdefault(item.id, number)
                pending["entities" if isinstance(item, EntityRecord) else "episodes"].append(item)
                if len(pending["entities"]) + len(pending["episodes"]) >= BATCH_RECORDS:
                    await send()
        await send()
    return report


def _text_lines(
    handle: IO[bytes], size: int, on_progress: Callable[[int, int], None] | None
) -> Iterator[str]:
    """The file's lines as text, each with its line end ("\\r\\n" read as "\\n"; a lone "\\r" kept:
    it may be content), reporting the bytes read."""
    done = 0
    for number, raw in enumerate(handle):
        done += len(raw)
        if number == 0:
            raw = raw.removeprefix(codecs.BOM_UTF8)  # noqa: PLW2901 - a file saved "with BOM"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"line {number + 1}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        if on_progress is not None and number % 200 == 0:
            on_progress(done, size)
        yield text[:-2] + "\n" if text.endswith("\r\n") else text
    if on_progress is not None:
        on_progress(done, size)
