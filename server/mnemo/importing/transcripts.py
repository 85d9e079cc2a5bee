"""``mnemo import --from claude-code|codex [PATH]``: backfill from Claude Code transcripts
(``~/.claude/projects``) or Codex rollouts (``~/.codex/sessions``), read by
:mod:`mnemo.transcripts` into the turns the hooks record live — prompt, tool results (mnemo's own
excepted), final answer — with the same episode ids, so importing twice, or importing sessions
the hooks already recorded, stores nothing twice (a tool's result may read differently in the
transcript than in the hook's input: the episode the hook recorded stands). Each session's
episodes go to the namespace of the workspace its cwd is in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mnemo import transcripts
from mnemo.client.typed import DaemonClient
from mnemo.episodes import (
    EpisodeIn,
    Role,
    clip_text,
)
from mnemo.errors import InputError
from mnemo.importing.batching import DEFAULT_BATCH_LINES, EPISODE_FIELDS_BYTES, Batch, append_episodes
from mnemo.vocabulary import TRANSCRIPT_HOSTS
from mnemo.workspace import workspace_namespace


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


def _batches(episodes: list[EpisodeIn]) -> Iterator[list[EpisodeIn]]:
    batch: Batch[EpisodeIn] = Batch(DEFAULT_BATCH_LINES)
    for episode in episodes:
        size = len(episode.text.encode("utf-8", "replace")) + EPISODE_FIELDS_BYTES
        if not batch.fits(size):
            yield batch.take()
        batch.add(episode, size)
    if batch.items:
        yield batch.take()


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
    if client_kind not in TRANSCRIPT_HOSTS:
        raise InputError(f"--from must be one of {', '.join(TRANSCRIPT_HOSTS)}, not {client_kind!r}")
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
        for sent in _batches(episodes):
            for result in await append_episodes(daemon, sent):
                if result.error is not None:
                    report.errors.append(f"{file}: episode {result.id}: {result.error}")
                elif result.is_new:
                    report.new += 1
                else:
                    report.already_present += 1
        if on_progress is not None:
            on_progress(done, len(files), report)
    return report
