"""``mnemo import FILE.jsonl``: one episode per line, idempotent by id.

Each line is a JSON object with ``id, session, time (ISO 8601), who, role, text`` and optionally
``namespace``, ``kind`` and ``turn``; a time without a zone is read as UTC (and the lines that
had none are counted for the summary). Lines are validated here and sent in batches of at most
1,000 lines and 16 MB; a bad line is reported with its number and skipped while every good line
is kept. Importing the same file again stores nothing new; a line whose id is stored already with
another text is reported (episodes never change: the stored one stands). A UTF-8 byte-order mark
is skipped. The file is read twice: first to number the lines that give no turn
(:func:`number_turns`), then to send them.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from mnemo.api.recall import RecallEpisodeRequest
from mnemo.client.typed import DaemonClient
from mnemo.episodes import (
    ID_PATTERN,
    MAX_TURN,
    EpisodeIn,
    EpisodeKind,
    Namespace,
    Role,
)
from mnemo.errors import InputError
from mnemo.importing.batching import DEFAULT_BATCH_LINES, EPISODE_FIELDS_BYTES, Batch, append_episodes
from mnemo.validation import describe_validation_error, validated_json

CHANGED = "stored already with another text; episodes never change, so this line was not stored"
_NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")


def _iso_time(value: object) -> object:
    # pydantic reads a number, or a string of digits, as seconds since 1970.
    if not isinstance(value, str) or _NUMBER.fullmatch(value.strip()):
        raise ValueError("give an ISO 8601 date-time, e.g. 2026-05-01T10:00:00Z")
    return value


class ImportLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", coerce_numbers_to_str=True)

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    session: Annotated[str, Field(min_length=1, max_length=500)]
    time: Annotated[datetime, BeforeValidator(_iso_time)]  # naive: read as UTC, and counted
    who: Annotated[str, Field(max_length=500)]
    role: Role
    text: Annotated[str, Field(min_length=1)]
    namespace: Namespace | None = None
    kind: EpisodeKind | None = None
    turn: Annotated[int, Field(ge=0, le=MAX_TURN)] | None = None

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
    zoneless: int = 0  # lines whose time had no zone (read as UTC)
    first_zoneless: int = 0  # the first of them


def parse_line(raw: bytes, line: int) -> tuple[EpisodeIn, bool] | LineError:
    """A line as the episode it gives, and whether its time had no zone; or why it gives none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(line, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        parsed = validated_json(ImportLine, text)
        return parsed.to_episode(), parsed.time.tzinfo is None
    except InputError as exc:
        return LineError(line, str(exc))
    except ValidationError as exc:  # what only the episode checks (a time out of range in UTC)
        return LineError(line, describe_validation_error(exc))


def _read_lines(handle: IO[bytes]) -> Iterator[tuple[int, int, tuple[EpisodeIn, bool] | LineError | None]]:
    """Each line of ``handle``: its number, its size in bytes, and what :func:`parse_line` makes of
    it (None for a blank line)."""
    for number, raw in enumerate(handle, start=1):
        size = len(raw)
        if number == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)  # noqa: PLW2901 - a file saved "with BOM"
        yield number, size, parse_line(raw.rstrip(b"\r\n"), number) if raw.strip() else None


@dataclass(slots=True)
class _SessionLines:
    """One session as a file gives it: its highest turn, and the lines that give none."""

    highest_turn: int = -1
    unnumbered: list[tuple[datetime, int, str]] = field(default_factory=list)  # (time, line, id)


async def number_turns(
    lines: Iterable[tuple[int, int, tuple[EpisodeIn, bool] | LineError | None]], client: DaemonClient
) -> dict[str, int]:
    """The turn of each episode (by id) whose line gives none.

    Recall reads a session's turn numbers (an episode's neighbouring turns lend it relevance), so a
    conversation imported without them gets them here: a session's unnumbered lines take the turns
    after the highest it has, in the file or already stored, in order of time and then of line.
    Numbered lines keep theirs, and so never collide with these. Only an id's first line counts
    (its repeats are the same episode, and take its turn). The store enters only through its
    highest turn: a re-import, whose ids are all stored, stores nothing whatever turns it is given.
    """
    sessions: dict[str, _SessionLines] = {}
    seen: set[str] = set()
    for number, _, parsed in lines:
        if parsed is None or isinstance(parsed, LineError):
            continue
        episode = parsed[0]
        assert episode.id is not None and episode.time is not None  # an import line gives both
        session = sessions.setdefault(episode.session, _SessionLines())
        if episode.turn is not None:
            session.highest_turn = max(session.highest_turn, episode.turn)
        elif episode.id not in seen:
            seen.add(episode.id)
            session.unnumbered.append((episode.time, number, episode.id))
    turns: dict[str, int] = {}
    for name, session in sessions.items():
        if session.unnumbered:
            stored = await _highest_stored_turn(client, name, session.highest_turn + 1)
            first = max(session.highest_turn, -1 if stored is None else stored) + 1
            for rank, (_, _, episode_id) in enumerate(sorted(session.unnumbered)):
                turns[episode_id] = first + rank
    return turns


async def _highest_stored_turn(client: DaemonClient, session: str, at_least: int) -> int | None:
    """The highest turn of ``session`` in the store, if one is ``at_least`` or more.

    The daemon answers "the lowest stored turn from N", so this doubles N past the highest, then
    halves the gap: about 2·log2(turns) small requests, one when nothing is stored.
    """

    async def lowest_from(turn: int) -> int | None:
        if turn > MAX_TURN:
            return None
        request = RecallEpisodeRequest(session=session, from_turn=turn, limit=1)
        found = (await client.recall_episodes(request)).episodes
        return found[0].episode.turn if found else None

    low = await lowest_from(at_least)  # a stored turn; nothing is stored from ``high`` on
    if low is None:
        return None
    high, step = None, 1
    while high is None:
        above = await lowest_from(low + step)
        if above is None:
            high = low + step
        else:
            low, step = above, 2 * step
    while high - low > 1:
        middle = (low + high) // 2
        above = await lowest_from(middle)
        if above is None:
            high = middle
        else:
            low = above
    return low


async def import_jsonl(
    path: Path,
    client: DaemonClient,
    *,
    batch_lines: int = DEFAULT_BATCH_LINES,
    on_progress: Callable[[int, int, int], None] | None = None,
) -> ImportReport:
    """Import ``path``; ``on_progress(lines, bytes_read, total_bytes)`` is called after each batch.

    Lines that give no turn are numbered first (:func:`number_turns`); a pipe is read into memory
    for that, since it cannot be read twice.
    """
    try:
        total_bytes = path.stat().st_size
        handle: IO[bytes] = path.open("rb")
        if not handle.seekable():
            with handle:
                handle = io.BytesIO(handle.read())
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    report = ImportReport()
    batch: Batch[tuple[int, EpisodeIn]] = Batch(batch_lines)
    bytes_read = 0

    async def flush() -> None:
        sent = batch.take()
        for (line, _), result in zip(sent, await append_episodes(client, [e for _, e in sent]), strict=True):
            if result.error is not None:
                report.bad.append(LineError(line, result.error))
            elif result.is_changed:  # a file's id names one episode: another text is a mistake
                report.bad.append(LineError(line, f"id {result.id!r} is {CHANGED}"))
            elif result.is_new:
                report.new += 1
            else:
                report.already_present += 1
        if on_progress is not None:
            on_progress(report.lines, bytes_read, total_bytes)

    with handle:
        turns = await number_turns(_read_lines(handle), client)
        handle.seek(0)
        for number, line_bytes, parsed in _read_lines(handle):
            bytes_read += line_bytes
            report.lines = number
            if parsed is None:
                continue
            if isinstance(parsed, LineError):
                report.bad.append(parsed)
                continue
            episode, is_zoneless = parsed
            if is_zoneless:
                report.zoneless += 1
                report.first_zoneless = report.first_zoneless or number
            if episode.turn is None:
                turn = turns.get(episode.id or "")
                if turn is None:  # the file grew, or changed, since its turns were numbered
                    report.bad.append(LineError(number, "this line changed during the import; import again"))
                    continue
                if turn > MAX_TURN:
                    report.bad.append(LineError(number, f"no turn is left for this line: its session has "
                                                        f"turns up to {MAX_TURN:,}"))  # fmt: skip
                    continue
                episode = episode.model_copy(update={"turn": turn})
            size = line_bytes + EPISODE_FIELDS_BYTES
            if not batch.fits(size):
                await flush()
            batch.add((number, episode), size)
        if batch.items:
            await flush()
        elif on_progress is not None:
            on_progress(report.lines, bytes_read, total_bytes)
    report.bad.sort(key=lambda e: e.line)
    return report
