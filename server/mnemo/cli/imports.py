"""import: memories from an export (``--memories``), episodes from a JSONL file, or from Claude
Code / Codex transcripts (all idempotent).

The one command that validates what it sends itself (pydantic, a line at a time, so that each bad
line is reported by its number) and so loads the typed client.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import anyio

from mnemo import transcripts
from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context
from mnemo.cli.progress import ProgressBar
from mnemo.cli.render import write
from mnemo.client.typed import DaemonClient
from mnemo.errors import InputError
from mnemo.importing.archive import restore
from mnemo.importing.batching import DEFAULT_BATCH_LINES
from mnemo.importing.jsonl import import_jsonl
from mnemo.importing.transcripts import TranscriptReport, import_transcripts

if TYPE_CHECKING:
    from mnemo.config import Settings

T = TypeVar("T")


def _with_client(settings: Settings, work: Callable[[DaemonClient], Awaitable[T]]) -> T:
    async def run() -> T:
        async with DaemonClient(settings) as client:
            return await work(client)

    return anyio.run(run)


def cmd_import(args: argparse.Namespace, context: Context) -> int:
    settings = context.settings()
    if args.memories:
        return _import_memories(args, settings)
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
