"""``mnemo import``: episodes from a JSONL file, or from the hosts' own transcripts.

``mnemo import FILE.jsonl``: one episode per line, idempotent by id.

Each line is a JSON object with ``id, session, time (ISO 8601), who, role, text`` and optionally
``namespace``, ``kind`` and ``turn``. Lines are validated here and sent in batches; a bad line is
reported with its number and skipped while every good line is kept. Importing the same file
again stores nothing new.

``mnemo import --from claude-code|codex [PATH]``: backfill from Claude Code transcripts
(``~/.claude/projects``) or Codex rollouts (``~/.codex/sessions``), read by
:mod:`mnemo.transcripts` into the turns the hooks record live — prompt, tool results (mnemo's own
excepted), final answer — with the same episode ids, so importing twice, or importing sessions
the hooks already recorded, stores nothing twice. Each session's episodes go to the namespace of
the workspace its cwd is in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo import transcripts
from mnemo.daemon.client import DaemonClient
from mnemo.episodes import ID_PATTERN, EpisodeIn, EpisodeKind, Namespace, Role, UtcDatetime, clip_text
from mnemo.errors import InputError, describe_validation_error
from mnemo.workspace import workspace_namespace

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


@dataclass(slots=True)
class TranscriptReport:
    files: int = 0
    sessions: int = 0
    turns: int = 0
    new: int = 0
    already_present: int = 0
    errors: list[str] = field(default_factory=list)  # "file: problem"


def transcript_episodes(transcript: transcripts.Transcript, person: str, max_chars: int) -> list[EpisodeIn]:
    """A transcript's turns as the episodes the hooks would have recorded."""
    client, session = transcript.client, transcript.session[:500]
    namespace = workspace_namespace(transcript.cwd or "/")
    workspace = namespace.removeprefix("workspace:")[:500]
    episodes = []

    def add(turn: int, part: str, text: str, role: Role, who: str, when: datetime | None) -> None:
        if text.strip():
            episodes.append(
                EpisodeIn(
                    id=transcripts.episode_id(client, session, turn, part),
                    text=clip_text(text, max_chars),
                    role=role,
                    who=who[:500],
                    session=session,
                    turn=turn,
                    time=when,
                    namespace=namespace,
                    client=client,
                    workspace=workspace,
                    cwd=transcript.cwd[:4096],
                )
            )

    for turn in transcript.turns:
        n = turn.number
        add(n, "prompt", turn.prompt, Role.USER, person, turn.time)
        for tool in turn.tools:
            if not transcripts.is_mnemo_tool(tool.name):
                text = transcripts.tool_text(tool.name, tool.input, tool.output)
                add(n, f"tool:{tool.key or len(episodes)}", text, Role.TOOL, tool.name, tool.time)
        add(n, "answer", turn.answer, Role.ASSISTANT, "assistant", turn.answer_time)
    return episodes


async def import_transcripts(
    client_kind: str,
    path: Path,
    daemon: DaemonClient,
    *,
    person: str,
    max_chars: int,
    on_progress: Callable[[int, int, TranscriptReport], None] | None = None,
) -> TranscriptReport:
    """Import every transcript at ``path``; ``on_progress(files_done, files, report)`` after each."""
    if client_kind not in transcripts.CLIENTS:
        raise InputError(f"--from must be one of {', '.join(transcripts.CLIENTS)}, not {client_kind!r}")
    if not path.exists():
        raise InputError(f"{path} does not exist (where {client_kind} keeps its transcripts: "
                         f"{transcripts.default_root(client_kind)})")  # fmt: skip
    files = transcripts.find(client_kind, path)
    report = TranscriptReport()
    for done, file in enumerate(files, 1):
        try:
            transcript = transcripts.read(client_kind, file)
        except OSError as exc:
            report.errors.append(f"{file}: cannot read it: {exc.strerror}")
            continue
        report.files += 1
        episodes = transcript_episodes(transcript, person, max_chars)
        if episodes:
            report.sessions += 1
            report.turns += len(transcript.turns)
        for start in range(0, len(episodes), DEFAULT_BATCH_LINES):
            for result in await daemon.append(episodes[start : start + DEFAULT_BATCH_LINES]):
                if result.error is not None:
                    report.errors.append(f"{file}: episode {result.id}: {result.error}")
                elif result.is_new:
                    report.new += 1
                else:
                    report.already_present += 1
        if on_progress is not None:
            on_progress(done, len(files), report)
    return report
