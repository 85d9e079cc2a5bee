"""``mnemo import FILE.jsonl``: one episode per line, idempotent by id.

Each line is a JSON object with ``id, session, time (ISO 8601), who, role, text`` and optionally
``namespace``, ``kind`` and ``turn``. Lines are validated here and sent in batches; a bad line is
reported with its number and skipped while every good line is kept. Importing the same file
again stores nothing new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo.daemon.client import DaemonClient
from mnemo.episodes import ID_PATTERN, EpisodeIn, EpisodeKind, Namespace, Role, UtcDatetime
from mnemo.errors import InputError, describe_validation_error

DEFAULT_BATCH_LINES = 1_000


class ImportLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    session: Annotated[str, Field(min_length=1, max_length=500)]
    time: UtcDatetime
    who: Annotated[str, Field(max_length=500)]
    role: Role
    text: Annotated[str, Field(min_length=1)]
    namespace: Namespace | None = None
    kind: EpisodeKind | None = None
    turn: Annotated[int, Field(ge=0)] | None = None

    def to_episode(self) -> EpisodeIn:
        return EpisodeIn(
            id=self.id,
            session=self.session,
            time=self.time,
            who=self.who,
            role=self.role,
            text=self.text,
            namespace=self.namespace,
            kind=self.kind,
            turn=self.turn,
            client="import",
        )


@dataclass(frozen=True, slots=True)
class LineError:
    line: int
    message: str


@dataclass(slots=True)
class ImportReport:
    lines: int = 0
    new: int = 0
    already_present: int = 0
    bad: list[LineError] = field(default_factory=list)


def parse_line(raw: bytes, line: int) -> EpisodeIn | LineError:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(line, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        return ImportLine.model_validate_json(text).to_episode()
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            return LineError(line, f"not a JSON object ({exc.errors()[0]['msg']})")
        return LineError(line, describe_validation_error(exc))


async def import_jsonl(
    path: Path,
    client: DaemonClient,
    *,
    batch_lines: int = DEFAULT_BATCH_LINES,
    on_progress: Callable[[int, int, int], None] | None = None,
) -> ImportReport:
    """Import ``path``; ``on_progress(lines, bytes_read, total_bytes)`` is called after each batch."""
    try:
        total_bytes = path.stat().st_size
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    report = ImportReport()
    batch: list[tuple[int, EpisodeIn]] = []
    bytes_read = 0

    async def flush() -> None:
        results = await client.append([episode for _, episode in batch])
        for (line, _), result in zip(batch, results, strict=True):
            if result.error is not None:
                report.bad.append(LineError(line, result.error))
            elif result.is_new:
                report.new += 1
            else:
                report.already_present += 1
        batch.clear()
        if on_progress is not None:
            on_progress(report.lines, bytes_read, total_bytes)

    with handle:
        for number, raw in enumerate(handle, start=1):
            bytes_read += len(raw)
            report.lines = number
            if not raw.strip():
                continue
            parsed = parse_line(raw.rstrip(b"\r\n"), number)
            if isinstance(parsed, LineError):
                report.bad.append(parsed)
            else:
                batch.append((number, parsed))
            if len(batch) >= batch_lines:
                await flush()
        if batch:
            await flush()
        elif on_progress is not None:
            on_progress(report.lines, bytes_read, total_bytes)
    report.bad.sort(key=lambda e: e.line)
    return report
