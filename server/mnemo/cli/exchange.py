"""export: every memory (with ``--with-history`` every version, with ``--with-episodes`` the
episodes too) to a JSONL or Markdown file that ``mnemo import --memories`` restores (:mod:`mnemo.archive`).

The daemon is read page by page, a namespace at a time; the file is written beside its final name
and moved there once complete, so an interrupted export leaves no half file behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from mnemo.archive import ArchiveWriter, Format, header
from mnemo.cli.context import EXIT_OK, Context
from mnemo.cli.progress import ProgressBar
from mnemo.cli.render import write
from mnemo.client.plain import PlainClient

PAGE = 500


def cmd_export(args: argparse.Namespace, context: Context) -> int:
    fmt: Format = args.format or ("markdown" if args.file.lower().endswith((".md", ".markdown")) else "jsonl")
    client = context.client
    held = client.call("GET", "/v1/export/namespaces")
    chosen = sorted(set(args.namespace))
    namespaces = chosen or sorted(held["memories"])
    episode_namespaces = chosen or sorted(held["episodes"])
    total = sum(held["memories"].get(n, 0) for n in namespaces)
    if args.with_episodes:
        total += sum(held["episodes"].get(n, 0) for n in episode_namespaces)
    bar = None if args.quiet or args.file == "-" else ProgressBar(sys.stderr, f"exporting to {args.file}")
    head = header(history=args.with_history, episodes=args.with_episodes, namespaces=chosen or None)
    counts = {"memories": 0, "versions": 0, "entities": 0, "episodes": 0}
    done = 0

    def progress(number: int) -> None:
        nonlocal done
        done += number
        if bar is not None:
            bar.show(done, total, f"{counts['memories']:,} memories  {counts['episodes']:,} episodes")

    def export(out: TextIO) -> None:
        writer = ArchiveWriter(out, fmt, head)
        entities: dict[str, dict[str, Any]] = {}
        for namespace in namespaces:
            for page in _pages(client, "memories", namespace, args.with_history):
                writer.memories(namespace, page["memories"])
                entities.update((e["key"], e) for e in page["entities"])
                memories = len({m["id"] for m in page["memories"]})
                counts["memories"] += memories
                counts["versions"] += len(page["memories"])
                progress(memories)
        writer.entities(entities[key] for key in sorted(entities))
        counts["entities"] = len(entities)
        if args.with_episodes:
            for namespace in episode_namespaces:
                for page in _pages(client, "episodes", namespace, False):
                    writer.episodes(page["episodes"])
                    counts["episodes"] += len(page["episodes"])
                    progress(len(page["episodes"]))

    try:
        if args.file == "-":
            sys.stdout.flush()
            with open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False) as out:
                export(out)  # UTF-8 whatever the locale says
        else:
            _written_whole(Path(args.file), export)
    finally:
        if bar is not None:
            bar.close()
    summary = (
        f"{counts['memories']:,} memories ({counts['versions']:,} versions), {counts['entities']:,} entities"
        + (f", {counts['episodes']:,} episodes" if args.with_episodes else "")
    )
    write(f"exported {summary} to {args.file} ({fmt})", sys.stderr if args.file == "-" else sys.stdout)
    return EXIT_OK


def _pages(client: PlainClient, what: str, namespace: str, history: bool) -> Any:
    after = ""
    while True:
        body = {"what": what, "namespace": namespace, "after": after, "limit": PAGE, "history": history}
        page = client.call("POST", "/v1/export", body)
        yield page
        after = page["next"]
        if not after:
            return


def _written_whole(path: Path, fill: Any) -> None:
    """``fill(stream)`` into a file beside ``path``, then moved to ``path`` (nothing on failure)."""
    path = path.expanduser()
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            fill(out)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
