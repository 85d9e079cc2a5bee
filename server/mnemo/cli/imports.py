"""import: memories from an export (``--memories``), episodes from a JSONL file, or from Claude
Code / Codex transcripts (all idempotent).

The one command that validates what it sends itself (pydantic, a line at a time, so that each bad
line is reported by its number) and so loads the typed client.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio

from mnemo import transcripts
from mnemo.api.notes import MAX_NOTES, NoteEntry, NoteOutcome, NotesImportRequest
from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context
from mnemo.cli.progress import ProgressBar
from mnemo.cli.render import write
from mnemo.client.typed import DaemonClient
from mnemo.errors import InputError
from mnemo.importing.archive import restore
from mnemo.importing.batching import DEFAULT_BATCH_LINES
from mnemo.importing.jsonl import import_jsonl
from mnemo.importing.notes import Entry, default_paths, read_notes
from mnemo.importing.transcripts import TranscriptReport, import_transcripts
from mnemo.vocabulary import NOTE_SOURCES

if TYPE_CHECKING:
    from mnemo.config import Settings

T = TypeVar("T")
JUDGE_POLL_S = 0.5
JUDGE_WAIT_S = 600.0  # a writer that judges nothing for this long is left to it


def _with_client(settings: Settings, work: Callable[[DaemonClient], Awaitable[T]]) -> T:
    async def run() -> T:
        async with DaemonClient(settings) as client:
            return await work(client)

    return anyio.run(run)


def cmd_import(args: argparse.Namespace, context: Context) -> int:
    settings = context.settings()
    if args.memories:
        return _import_memories(args, settings)
    if args.source in NOTE_SOURCES:
        return _import_notes(args, settings)
    if args.source != "jsonl":
        return _import_transcripts(args, settings)
    if args.file is None:
        raise InputError("give the JSONL file to import (or --from claude-code|codex)")
    batch_lines = DEFAULT_BATCH_LINES if args.batch_lines is None else args.batch_lines
    if batch_lines < 1:
        raise InputError("--batch-lines must be at least 1")
    bar = None if args.quiet else ProgressBar(sys.stderr, f"importing {args.file.name}")
    try:
        report = _with_client(
            settings,
            lambda c: import_jsonl(
                args.file, c, batch_lines=batch_lines, on_progress=bar.update if bar else None
            ),
        )
    finally:
        if bar is not None:
            bar.close()
    for error in report.bad:
        write(f"{args.file}:{error.line}: {error.message}", sys.stderr)
    if report.zoneless:
        write(
            f"{args.file}: {report.zoneless:,} lines gave a time with no zone (first: line "
            f"{report.first_zoneless}); read as UTC",
            sys.stderr,
        )
    write(
        f"{report.lines:,} lines: {report.new:,} new episodes, {report.already_present:,} already present, "
        f"{len(report.bad):,} bad lines"
    )
    return EXIT_ERROR if report.bad else EXIT_OK


def _import_memories(args: argparse.Namespace, settings: Settings) -> int:
    if args.file is None or args.source != "jsonl":
        raise InputError("--memories takes the file `mnemo export` wrote: mnemo import --memories FILE")
    if not args.file.is_file():
        raise InputError(f"{args.file}: no such file")
    bar = None if args.quiet else ProgressBar(sys.stderr, f"importing {args.file.name}")

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.show(done, total, f"{done / 1e6:,.1f} of {total / 1e6:,.1f} MB")

    try:
        report = _with_client(settings, lambda c: restore(args.file, c, progress))
    finally:
        if bar is not None:
            bar.close()
    for problem in report.problems:
        write(f"{args.file}:{problem}", sys.stderr)
    episodes = (
        f"; {report.episodes_new:,} new episodes, {report.episodes_present:,} already present"
        if report.episodes_new or report.episodes_present
        else ""
    )
    write(
        f"{report.memories:,} memories: {report.written:,} written ({report.versions_written:,} versions), "
        f"{report.present:,} already present, {len(report.problems):,} problems; "
        f"{report.entities:,} entities updated{episodes}"
    )
    return EXIT_ERROR if report.problems else EXIT_OK


def _import_notes(args: argparse.Namespace, settings: Settings) -> int:
    source = args.source
    paths = [args.file.expanduser()] if args.file else default_paths(source, Path.home(), Path.cwd())
    entries = read_notes(source, paths, settings.namespace_of_person, Path.home())
    person_written = source in ("claude-md", "agents-md")
    bar = None if args.quiet else ProgressBar(sys.stderr, f"judging what {source} holds")

    async def run(client: DaemonClient) -> tuple[list[NoteOutcome], dict[str, str]]:
        outcomes: list[NoteOutcome] = []
        judged: dict[str, str] = {}
        for at in range(0, len(entries), MAX_NOTES):
            chunk = [_entry(e) for e in entries[at : at + MAX_NOTES]]
            done = await client.import_notes(
                NotesImportRequest(source=source, person_written=person_written, entries=chunk)
            )
            outcomes += done.results
            if done.judging:
                wanted = {o.memory for o in done.results if o.outcome == "new"}
                judged.update(await _judged(client, done.session, wanted, bar))
        return outcomes, judged

    try:
        outcomes, judged = _with_client(settings, run)
    finally:
        if bar is not None:
            bar.close()
    refused = [o for o in outcomes if o.outcome == "refused"]
    for outcome in refused:
        write(f"{outcome.path}:{outcome.line}: refused: {outcome.message}", sys.stderr)
    files = len({o.path for o in outcomes})
    new = sum(o.outcome == "new" for o in outcomes)
    present = sum(o.outcome == "present" for o in outcomes)
    write(
        f"{len(outcomes):,} entries in {files:,} file{'' if files == 1 else 's'}: {new:,} new candidates, "
        f"{present:,} already "
        f"imported, {len(refused):,} refused"
    )
    if judged:
        actions = list(judged.values())
        same, updates = actions.count("merge"), actions.count("close")
        write(
            f"judged against what mnemo knows: {same:,} the same as a memory (folded into it), "
            f"{updates:,} would update one, {len(actions) - same - updates:,} new"
        )
    elif new:
        write("not judged (no language model configured, or this daemon does not write)")
    if new:
        write("they wait for you: mnemo review list (or mnemo review url --open)")
    return EXIT_ERROR if refused else EXIT_OK


def _entry(entry: Entry) -> NoteEntry:
    return NoteEntry(
        path=str(entry.path.resolve()),
        line=entry.line,
        text=entry.text,
        why=entry.why,
        how=entry.how,
        type=entry.type,
        namespace=entry.namespace,
    )


async def _judged(
    client: DaemonClient, session: str, wanted: set[str], bar: ProgressBar | None
) -> dict[str, str]:
    """Wait while the daemon's writer judges ``wanted`` (showing it), until every one is judged
    or nothing more is for JUDGE_WAIT_S; the judge's action for each judged one."""
    judged: dict[str, str] = {}
    last_change = anyio.current_time()
    while len(judged) < len(wanted) and anyio.current_time() - last_change < JUDGE_WAIT_S:
        await anyio.sleep(JUDGE_POLL_S)
        log = await client.judge_log(limit=1_000, session=session)
        before = len(judged)
        judged.update(
            {e.memory: ("close" if e.closes else e.action) for e in log.entries if e.memory in wanted}
        )
        if len(judged) > before:
            last_change = anyio.current_time()
        if bar is not None:
            bar.show(len(judged), len(wanted), f"{len(judged):,}/{len(wanted):,} judged")
    return judged


def _import_transcripts(args: argparse.Namespace, settings: Settings) -> int:
    path = args.file or transcripts.default_root(args.source)
    bar = None if args.quiet else ProgressBar(sys.stderr, f"importing {args.source} transcripts")

    def progress(done: int, total: int, report: TranscriptReport) -> None:
        if bar is not None:
            bar.show(done, total, f"{done:,}/{total:,} files  {report.new:,} new episodes")

    try:
        report = _with_client(
            settings,
            lambda c: import_transcripts(
                args.source, path, c, person=settings.person, max_chars=settings.max_episode_chars,
                on_progress=progress,
            ),
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()
    for error in report.errors:
        write(error, sys.stderr)
    write(
        f"{report.files:,} transcripts, {report.sessions:,} sessions, {report.turns:,} turns: "
        f"{report.new:,} new episodes, {report.already_present:,} already present, "
        f"{len(report.errors):,} errors"
    )
    return EXIT_ERROR if report.errors else EXIT_OK
